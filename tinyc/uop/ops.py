"""tinyc.uop.ops mirrors tinygrad.uop.ops: the UOp, UPat, PatternMatcher, graph_rewrite and helpers."""
from tinyc._C import (UOp, UPat, PatternMatcher, graph_rewrite, BottomUpGate, AxisType, KernelInfo, Ops, GroupOp,
                      resolve, smax, smin, ssimplify, sym_infer, exec_alu)
from tinyc._C import native_rules as _native_rules

def __getattr__(name):
  # rule sets that live in ops.py in tinygrad (renderer, pm_lower_index_dtype, _substitute, ...)
  if (pm := _native_rules().get(name)) is not None: return pm
  raise AttributeError(f"module 'tinyc.uop.ops' has no attribute {name!r}")
