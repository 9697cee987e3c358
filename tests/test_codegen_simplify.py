"""tinygrad/codegen/simplify.py (pm_flatten_range, pm_split_ranges, pm_simplify_ranges, pm_split_store), native in
tinyc, against tinygrad 0.12.0.

The corpus is the kernels of real tinygrad programs on device CPU, lowered by tinygrad's full_rewrite_to_sink with the
Clang renderer (with tinygrad's own optimizations and with none). A spy on tinygrad.codegen.graph_rewrite records the
input, context and output of each pass below; tinyc runs the same pass with its native rule sets on the converted
input and must return the very node tinygrad returned (through the bridge)."""
import functools
from tinygrad import Tensor
from tinygrad.uop.ops import graph_rewrite as tg_graph_rewrite
from tinygrad.renderer.cstyle import ClangRenderer
from tinyc import _C
from tinyc.tinygrad import from_tinygrad
from passes import capture_passes
from test_linearizer import programs as linearizer_programs, kernel_asts as linearizer_kernel_asts

RULES = _C.native_rules()

# pass name -> the tinyc rule set tinygrad's full_rewrite_to_sink uses for it
PASSES = {
  "load collapse": RULES["pm_load_collapse"],
  "split ranges": RULES["pm_split_ranges"] + RULES["pm_flatten_range"],
  "initial symbolic": RULES["sym"] + RULES["pm_flatten_range"],
  "simplify ranges": RULES["pm_simplify_ranges"],
  "cut store ranges": RULES["pm_split_store"],
}

def programs():
  """the linearizer's corpus, plus kernels that exercise range splitting and load/reduce collapse"""
  yield from linearizer_programs()
  yield "reshape_mod", (Tensor.rand(12, 10).reshape(4, 3, 10).permute(1, 0, 2).contiguous() + 1), None
  yield "flat_transpose", Tensor.rand(12).reshape(3, 4).permute(1, 0).reshape(12) + 1, None
  yield "flat_transpose_2d", Tensor.rand(6, 10).reshape(3, 20).permute(1, 0).reshape(60).contiguous() * 2, None
  yield "gather", Tensor.rand(20, 4)[Tensor([3, 1, 7])], None
  yield "gather_2d", Tensor.rand(6, 5, 3)[Tensor([[0, 5], [2, 1]]), Tensor([4, 0])], None
  yield "embedding", Tensor.rand(10, 4)[Tensor([[1, 2, 9], [0, 0, 3]])].sum(-1), None
  yield "one_hot", Tensor([1, 3, 0, 2]).one_hot(5).float() * 2, None
  yield "take_along", Tensor.rand(4, 7).gather(1, Tensor([[0, 6], [1, 1], [5, 2], [3, 3]])), None
  yield "arange_sum", Tensor.arange(20).reshape(4, 5).sum(1) + Tensor.arange(4), None

def kernel_asts(): return linearizer_kernel_asts(programs)

@functools.cache
def captured():
  """[(kernel name, pass name, input sink, ctx, output sink)] for the passes of PASSES"""
  got = capture_passes(kernel_asts(), ClangRenderer(), PASSES)
  return [(k, name, inp, ctx, out) for name, cases in got.items() for k, inp, ctx, out in cases]

def convert_ctx(ctx):
  if isinstance(ctx, dict): return {from_tinygrad(k): None if v is None else from_tinygrad(v) for k, v in ctx.items()}
  return ctx

def check_pass(pass_name):
  cases = [c for c in captured() if c[1] == pass_name]
  same, changed, bad = 0, 0, []
  for kname, _, sink, ctx, ret in cases:
    tc_out = _C.graph_rewrite(from_tinygrad(sink), PASSES[pass_name], convert_ctx(ctx))
    changed += ret is not sink
    if from_tinygrad(ret) is tc_out: same += 1
    else: bad.append(kname)
  print(f"{pass_name}: {same}/{len(cases)} identical ({changed} changed by the pass)")
  return cases, same, changed, bad

def run_identity(pass_name, min_changed):
  cases, same, changed, bad = check_pass(pass_name)
  assert len(cases) >= 20 and changed >= min_changed
  assert not bad, f"{pass_name} differs on {bad}"

def test_load_collapse_identity(): run_identity("load collapse", 1)
def test_split_ranges_identity(): run_identity("split ranges", 1)
def test_initial_symbolic_identity(): run_identity("initial symbolic", 5)
def test_simplify_ranges_identity(): run_identity("simplify ranges", 1)
def test_cut_store_ranges_identity(): run_identity("cut store ranges", 1)

def test_cut_store_range_cuts_and_missing_range():
  """the cuts are the constants the range is compared below, duplicates and order as tinygrad's consumer map gives them;
  an END whose range is not under its store raises tinygrad's KeyError (its consumer map has no entry for the range)"""
  import pytest
  from tinygrad.uop.ops import UOp, Ops
  from tinygrad.dtype import dtypes
  from tinygrad.codegen.simplify import pm_split_store as tg_split_store
  buf, r, other = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(16), arg=0), UOp.range(16, 0), UOp.range(16, 1)
  f = lambda v: UOp.const(dtypes.float, v)
  value = (r < 12).where(f(1.0), f(2.0)) + (r < 4).where(f(3.0), f(0.0)) + (r < 12).where(f(5.0), f(6.0))
  cut = UOp(Ops.END, src=(buf.index(r).store(value), r))
  ret = tg_graph_rewrite(cut, tg_split_store, ctx="CPU")
  assert ret.op is Ops.GROUP and len(ret.src) == 3   # [0, 4), [4, 12), [12, 16)
  assert _C.graph_rewrite(from_tinygrad(cut), RULES["pm_split_store"], "CPU") is from_tinygrad(ret)
  unused = UOp(Ops.END, src=(buf.index(other).store(f(1.0)), r))
  with pytest.raises(KeyError): tg_graph_rewrite(unused, tg_split_store, ctx="CPU")
  with pytest.raises(KeyError): _C.graph_rewrite(from_tinygrad(unused), RULES["pm_split_store"], "CPU")

# ---- pm_reduce_simplify / pm_reduce_collapse: the rangeify pass "symbolic+reduce_collapse+debuf" ----

@functools.cache
def rangeify_inputs():
  """[(program name, tensor graph)] that tinygrad's rangeify hands to its reduce-collapse pass"""
  import tinygrad.schedule.rangeify as tg_rangeify
  from tinygrad.engine.schedule import schedule_cache
  out, real, cached = [], tg_rangeify.graph_rewrite, dict(schedule_cache)
  schedule_cache.clear()   # a cached schedule skips rangeify
  def spy(sink, pm, *args, name=None, **kwargs):
    if name == "symbolic+reduce_collapse+debuf": out.append((pname, sink))
    return real(sink, pm, *args, name=name, **kwargs)
  tg_rangeify.graph_rewrite = spy
  try:
    for pname, t, _ in programs(): t.schedule_with_vars()   # noqa: B007 (the spy reads pname)
  finally:
    tg_rangeify.graph_rewrite = real
    schedule_cache.update(cached)
  return out

def test_reduce_simplify_identity():
  from tinygrad.uop.symbolic import symbolic as tg_symbolic
  from tinygrad.codegen.simplify import pm_reduce_simplify as tg_reduce_simplify
  cases = rangeify_inputs()
  tg_pm, tc_pm = tg_symbolic + tg_reduce_simplify, RULES["symbolic"] + RULES["pm_reduce_simplify"]
  same, changed, bad = 0, 0, []
  for pname, sink in cases:
    ret = tg_graph_rewrite(sink, tg_pm)
    changed += ret is not tg_graph_rewrite(sink, tg_symbolic)   # the reduce rules did something
    if from_tinygrad(ret) is _C.graph_rewrite(from_tinygrad(sink), tc_pm): same += 1
    else: bad.append(pname)
  print(f"symbolic+pm_reduce_simplify: {same}/{len(cases)} identical ({changed} where the reduce rules fire)")
  assert len(cases) >= 10 and changed >= 1 and not bad, bad
