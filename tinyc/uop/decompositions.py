"""tinyc.uop.decompositions mirrors tinygrad.uop.decompositions: the transcendental decompositions (xexp2, xlog2, xsin,
xpow and their helpers), fast integer division and threefry, native in tinyc._C (csrc/uop/decompositions.c)."""
from tinyc._C import (TRANSCENDENTAL_DTYPES, mantissa_bits, exponent_bias, exponent_mask, rintk, pow2if, ilogb2k, ldexp3k, ldexp2k,
                      frexp, payne_hanek_reduction, cody_waite_reduction, trig_poly, sin_poly, sin_poly_small, sin_poly_large, xsin,
                      xexp2, xlog2, xpow, magicgu, fast_idiv, threefry2x32, get_late_rewrite_patterns, polyN, _lazy_map_numbers)

__all__ = ["TRANSCENDENTAL_DTYPES", "mantissa_bits", "exponent_bias", "exponent_mask", "rintk", "pow2if", "ilogb2k", "ldexp3k",
           "ldexp2k", "frexp", "payne_hanek_reduction", "cody_waite_reduction", "trig_poly", "sin_poly", "sin_poly_small",
           "sin_poly_large", "xsin", "xexp2", "xlog2", "xpow", "magicgu", "fast_idiv", "threefry2x32", "get_late_rewrite_patterns",
           "polyN"]
