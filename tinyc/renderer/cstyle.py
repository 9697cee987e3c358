"""tinyc.renderer.cstyle mirrors tinygrad.renderer.cstyle: CStyleLanguage (one native render loop reading a language's
settings, each overridable from a Python subclass), ClangRenderer, ClangJITRenderer, and the rule sets by tinygrad's names."""
from tinyc._C import CStyleLanguage, ClangRenderer, ClangJITRenderer, create_non_native_float_pats
from tinyc.uop._rules import rule_sets

globals().update(rule_sets(__name__, ("base_rewrite", "extra_pm", "pm_manual_bf16_cast")))

__all__ = ["CStyleLanguage", "ClangRenderer", "ClangJITRenderer", "create_non_native_float_pats", "base_rewrite", "extra_pm",
           "pm_manual_bf16_cast"]

from tinyc._C import OpenCLRenderer  # OpenCL C for the CL device, with tinygrad's image rules (image2d_t, read_imagef, write_imagef)
__all__ += ["OpenCLRenderer"]
