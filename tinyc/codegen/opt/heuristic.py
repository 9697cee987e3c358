"""tinyc.codegen.opt.heuristic mirrors tinygrad.codegen.opt.heuristic: hand_coded_optimizations, native."""
from tinyc._C import hand_coded_optimizations

__all__ = ["hand_coded_optimizations"]
