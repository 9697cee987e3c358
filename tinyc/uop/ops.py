"""tinyc.uop.ops mirrors tinygrad.uop.ops: the UOp, UPat, PatternMatcher, graph_rewrite and helpers."""
from tinyc._C import (UOp, UPat, PatternMatcher, graph_rewrite, BottomUpGate, AxisType, KernelInfo, Ops, GroupOp,
                      resolve, smax, smin, ssimplify, sym_infer, exec_alu)
from tinyc._C import native_rules as _native_rules

def __getattr__(name):
  # rule sets that live in ops.py in tinygrad (renderer, pm_lower_index_dtype, _substitute, ...)
  if (pm := _native_rules().get(name)) is not None: return pm
  raise AttributeError(f"module 'tinyc.uop.ops' has no attribute {name!r}")

# tinygrad's other names in uop/ops.py: graph_rewrite_map (native), Variable (the UOp type itself there), and the
# tracing hooks. tinyc keeps no match statistics or VIZ traces, so a tracked matcher is a plain one and a tracked
# function runs as it is.
import functools as _functools
from tinyc._C import graph_rewrite_map
Variable = UOp

# tinygrad's TrackedPatternMatcher counts matches for TRACK_MATCH_STATS (and becomes its PatternMatcher then): untracked here
TrackedPatternMatcher = PatternMatcher

def track_rewrites(name=True, replay=False):
  """tinygrad's decorator that opens a VIZ trace group per call; tinyc traces nothing, so it calls func as it is."""
  def _decorator(func):
    @_functools.wraps(func)
    def __wrapper(*args, **kwargs): return func(*args, **kwargs)
    return __wrapper
  return _decorator
