"""tinygrad/codegen/late/devectorizer.py's rule sets, native in tinyc, against tinygrad 0.12.0.

Each pass of full_rewrite_to_sink that uses these rule sets is captured from tinygrad lowering real kernels on device
CPU with the Clang renderer (the corpus of test_linearizer: tinygrad's own opts and none); the captured input goes
through tinyc's graph_rewrite with the native sets concatenated the way tinygrad concatenates them, and the output
must be the very node tinygrad produced (through the bridge)."""
import contextlib, functools
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad
from tinygrad.helpers import DEVECTORIZE, Context
from tinygrad.renderer.cstyle import ClangRenderer
from tinygrad.uop.ops import graph_rewrite as tg_graph_rewrite
from tinygrad.codegen.late.devectorizer import pm_render as tg_pm_render
from test_linearizer import kernel_asts
from passes import capture_passes
from uop_oracle import TC, TG
from tinygrad.codegen.late import devectorizer as tg_dev

RULES = _C.native_rules()

@functools.cache
def captured(devectorize=None):
  """{pass name: [(kernel name, input sink, output sink)]} for the passes below, from every kernel that lowers;
  devectorize: lower under Context(DEVECTORIZE=devectorize) (None: tinygrad's own setting)"""
  names = ("** add loads (code)", "devectorize", "lower all index dtypes", "remove_reduce", "final rewrite")
  with Context(DEVECTORIZE=devectorize) if devectorize is not None else contextlib.nullcontext():
    got = capture_passes(kernel_asts(), ClangRenderer(), names)
  return {name: [(k, inp, out) for k, inp, _, out in cases] for name, cases in got.items()}

def identity_rate(pass_name, pm, make_ctx=lambda: None, devectorize=None):
  """how many captured runs of the pass give tinygrad's very output; make_ctx gives each run its fresh ctx"""
  cases = captured(devectorize)[pass_name]
  same = [kname for kname, inp, tg_out in cases if from_tinygrad(tg_out) is _C.graph_rewrite(from_tinygrad(inp), pm, ctx=make_ctx())]
  print(f"{pass_name}: {len(same)}/{len(cases)} identical")
  return len(same), len(cases)

def test_corpus_reaches_the_passes():
  assert len(captured()["** add loads (code)"]) >= 20

def test_add_loads_identity():
  same, total = identity_rate("** add loads (code)", RULES["pm_add_loads"])
  assert same == total

def devectorize_pass_rules(devectorize):
  """the rule sets of the "devectorize" pass, concatenated as tinygrad does for a DEVECTORIZE setting"""
  sym, fold, correct, indexing = RULES["sym"], RULES["load_store_folding"], RULES["correct_load_store"], RULES["load_store_indexing"]
  if devectorize >= 2: return sym + fold + indexing
  if devectorize: return sym + RULES["devectorize"] + fold + correct + indexing
  return sym + fold + correct + indexing

def test_devectorize_identity():
  """tinygrad's own DEVECTORIZE setting (read as tinygrad reads it) and its other two choices"""
  for setting in (None, 0, 1, 2):
    value = DEVECTORIZE.value if setting is None else setting
    same, total = identity_rate("devectorize", devectorize_pass_rules(value), make_ctx=tinyc.ClangRenderer, devectorize=setting)
    assert same == total

def test_lower_index_dtype_with_load_store_indexing_identity():
  """pm_lower_index_dtype+load_store_indexing: the simplify_valid_load rules see gated and int64 indexes"""
  same, total = identity_rate("lower all index dtypes", RULES["pm_lower_index_dtype"] + RULES["load_store_indexing"], make_ctx=lambda: "CPU")
  assert total >= 20 and same == total

def test_simplify_valid_load_fires():
  """the gated-index rule changes some captured index of the corpus, as tinygrad's does"""
  changed = [k for k, inp, out in captured()["lower all index dtypes"] if "Invalid" in str(inp)]
  assert changed, "no gated index in the corpus"

def test_remove_reduce_identity():
  same, total = identity_rate("remove_reduce", RULES["pm_reduce"] + RULES["gep_pushing"], make_ctx=_C.ReduceContext)
  assert same == total

def test_reduce_context_counts_accumulators():
  ctx = _C.ReduceContext()
  inp = next(inp for kname, inp, _ in captured()["remove_reduce"] if kname == "matmul/noopt" and "Ops.REDUCE" in str(inp))
  _C.graph_rewrite(from_tinygrad(inp), RULES["pm_reduce"] + RULES["gep_pushing"], ctx=ctx)
  assert ctx.acc_num == 1 and _C.ReduceContext(acc_num=3).acc_num == 3

def test_pm_render_identity():
  """pm_render alone, tinygrad's and ours, on the inputs of the "final rewrite" pass (where tinygrad uses it),
  lowered with tinygrad's DEVECTORIZE and with 0 (which leaves vectors for pm_render)"""
  for setting in (None, 0):
    cases = [inp for _, inp, _ in captured(setting)["final rewrite"]]
    expected = [tg_graph_rewrite(inp, tg_pm_render) for inp in cases]
    same = sum(from_tinygrad(tg) is _C.graph_rewrite(from_tinygrad(inp), RULES["pm_render"]) for inp, tg in zip(cases, expected))
    changed = sum(tg is not inp for inp, tg in zip(cases, expected))
    print(f"pm_render on final rewrite inputs (DEVECTORIZE={setting}): {same}/{len(cases)} identical, {changed} rewritten")
    assert same == len(cases)

def wmma_graph(ns, count):
  """a WMMA of three float vectors of count lanes, each of its calls making 4 lanes (no CPU kernel has one)"""
  U, Ops, dt = ns.UOp, ns.Ops, ns.dtypes
  srcs = tuple(U(Ops.DEFINE_VAR, dt.float.vec(count), arg=(name, 0, 1)) for name in "abc")
  upcast = ((2, 2), (3, 2))
  arg = ("WMMA_8_8_8_half_float", (8, 8, 8), dt.half, dt.float, "CPU", 1, (upcast, upcast, upcast), ())
  return U(Ops.WMMA, dt.float.vec(count), srcs, arg) + U.const(dt.float.vec(count), 1.0)

def test_no_vectorized_wmma_and_accumulate():
  for count in (4, 8, 16):
    tg, tc = wmma_graph(TG, count), wmma_graph(TC, count)
    assert from_tinygrad(tg_graph_rewrite(tg, tg_dev.devectorize)) is _C.graph_rewrite(tc, RULES["devectorize"], ctx=tinyc.ClangRenderer())
    assert from_tinygrad(tg_graph_rewrite(tg, tg_dev.pm_reduce, ctx=tg_dev.ReduceContext())) is \
      _C.graph_rewrite(tc, RULES["pm_reduce"], ctx=_C.ReduceContext())

def expanded_index(ns, lanes):
  """VECTORIZE of pointer INDEXes into one buffer, as expand_index makes them: lanes are (root variable or None, offset)"""
  buf = ns.UOp(ns.Ops.DEFINE_GLOBAL, ns.dtypes.float.ptr(64), arg=0)
  roots = {name: ns.UOp.variable(name, 0, 16) for name in "ab"}
  def idx(root, off): return ns.UOp.const(ns.dtypes.index, off) if root is None else roots[root] + off
  return ns.UOp(ns.Ops.VECTORIZE, buf.dtype, tuple(buf.index(idx(r, o), ptr=True) for r, o in lanes))

def test_fold_expanded_index_groups_offsets_as_tinygrad():
  """runs of consecutive offsets per root become vector pointers: offsets shuffled, repeated, with gaps, negative, under
  two roots and none, and past C's integers (2**63: the grouping done on Python numbers)"""
  big = 2**63
  cases = [[("a", o) for o in (0, 1, 2, 3)], [("a", o) for o in (5, 3, 4, 4, 9, 0, 1, 10)],
           [("a", 0), ("b", 0), ("a", 1), ("b", 2), ("a", 2), ("b", 1)], [(None, o) for o in (7, 8, 6, 8)],
           [("a", o) for o in (-3, -1, -2, 4)], [("a", big + 1), ("a", big), ("a", big + 2), ("a", 3), ("b", 2**62 + 1)]]
  for lanes in cases:
    tg, tc = expanded_index(TG, lanes), expanded_index(TC, lanes)
    out = _C.graph_rewrite(tc, RULES["load_store_folding"])
    assert out is not tc and from_tinygrad(tg_graph_rewrite(tg, tg_dev.load_store_folding)) is out
