"""tinygrad/codegen/late/linearizer.py (linearize, CFGContext.edges, pm_add_control_flow, pm_split_ends) and
tinygrad/codegen/__init__.py's line_rewrite with pm_linearize_cleanups and do_linearize, native in tinyc, against tinygrad 0.12.0.

The corpus is the kernels of real tinygrad programs on device CPU, lowered by tinygrad's full_rewrite_to_sink with
the Clang renderer (once with the hand-coded optimizations, once with none); each final sink goes through both
linearizers and the lists must hold the very same nodes (through the bridge) in the same order."""
import functools, random
import pytest
from tinygrad import Tensor, Variable, dtypes as tg_dtypes
import tinygrad.codegen as tg_codegen
from tinygrad.codegen import line_rewrite as tg_line_rewrite, pm_linearize_cleanups as tg_cleanups, do_linearize as tg_do_linearize
from tinygrad.codegen.late.linearizer import linearize as tg_linearize, CFGContext, pm_add_control_flow, pm_split_ends
from tinygrad.uop.ops import graph_rewrite as tg_graph_rewrite
from tinygrad.codegen.opt import Opt, OptOps
from tinygrad.renderer.cstyle import ClangRenderer
from tinygrad.uop.ops import AxisType, KernelInfo, Ops as TgOps, UOp as TgUOp, UPat as TgUPat, PatternMatcher as TgPatternMatcher
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad

RULES = _C.native_rules()
CLEANUPS = RULES["pm_linearize_cleanups"]

def programs():
  """(name, tensor, opts to apply or None for tinygrad's own choice)"""
  a, b = Tensor.rand(16, 32), Tensor.rand(32, 8)
  yield "matmul", a @ b, None
  yield "sum", a.sum(axis=1), None
  yield "max", a.max(), None
  yield "argmax", a.argmax(axis=0), None
  yield "cumsum", Tensor.rand(33).cumsum(), None
  yield "softmax", a.softmax(-1), None
  yield "conv2d", Tensor.rand(1, 3, 8, 8).conv2d(Tensor.rand(4, 3, 3, 3)), None
  yield "exp_where_casts", (a.exp() > 1).where(a, a.cast(tg_dtypes.half).cast(tg_dtypes.float) * 2), None
  yield "int_math", (Tensor.arange(40).reshape(5, 8) * 3 // 2 % 7).cast(tg_dtypes.int8), None
  yield "pad_permute", a.pad(((1, 2), (0, 3))).permute(1, 0) + 1, None
  yield "symbolic", Tensor.rand(32, 8)[:Variable("n", 1, 32).bind(10)].sum(0), None
  yield "padto_gated_store", (Tensor.rand(33, 17) + 1).contiguous(), (Opt(OptOps.PADTO, 0, 32),)

def kernel_asts(programs=programs):
  """each SINK kernel of the programs, with its forced opts, or with tinygrad's own choice and with none"""
  for name, t, opts in programs():
    for si in t.schedule_with_vars()[0]:
      if si.ast.op is not TgOps.SINK: continue
      if opts is not None: yield name, si.ast.replace(arg=KernelInfo(opts_to_apply=opts))
      else:
        yield name, si.ast.replace(arg=KernelInfo()) if si.ast.arg is None else si.ast
        yield name + "/noopt", si.ast.replace(arg=KernelInfo(opts_to_apply=()))

@functools.cache
def lowered():
  """(name, {stage: sink}) for every kernel of the corpus that lowers: the final sink, and the inputs of the
  "final rewrite" (where pm_split_ends runs) and "add control flow" steps of full_rewrite_to_sink"""
  ren, out, seen = ClangRenderer(), [], {}
  def spy(sink, pm, *args, name=None, **kwargs):
    if name in ("final rewrite", "add control flow"): seen[name] = sink
    return tg_graph_rewrite(sink, pm, *args, name=name, **kwargs)
  tg_codegen.graph_rewrite = spy
  try:
    for name, ast in kernel_asts():
      seen.clear()
      try: final = tg_codegen.full_rewrite_to_sink(ast, ren, optimize=ast.tag is None)
      except Exception: continue   # an opt that does not apply to this kernel
      out.append((name, {"final": final, **seen}))
  finally: tg_codegen.graph_rewrite = tg_graph_rewrite
  return out

def final_sinks(): return [(name, stages["final"]) for name, stages in lowered()]

def same_nodes(tg_list, tc_list):
  return len(tg_list) == len(tc_list) and all(from_tinygrad(x) is y for x, y in zip(tg_list, tc_list))

def test_corpus_is_broad():
  names = {n.split("/")[0] for n, _ in final_sinks()}
  assert len(final_sinks()) >= 40 and {n for n, _, _ in programs()} <= names

def test_linearize_identity():
  ok = [same_nodes(tg_linearize(sink), _C.linearize(from_tinygrad(sink))) for _, sink in final_sinks()]
  print(f"\nlinearize identity: {sum(ok)}/{len(ok)} = {sum(ok)/len(ok):.1%}")
  assert sum(ok) / len(ok) >= 0.95

def test_linearize_with_cleanups_identity():
  """do_linearize's list: linearize, then the line rules (gated stores wrapped in IF/ENDIF)"""
  ok, with_if = [], 0
  for _, sink in final_sinks():
    tg = tg_line_rewrite(tg_linearize(sink), tg_cleanups)
    tc = _C.line_rewrite(_C.linearize(from_tinygrad(sink)), CLEANUPS)
    with_if += any(u.op is TgOps.IF for u in tg)
    ok.append(same_nodes(tg, tc))
  print(f"\nlinearize + cleanups identity: {sum(ok)}/{len(ok)} = {sum(ok)/len(ok):.1%}, {with_if} kernels with IF")
  assert with_if >= 1 and sum(ok) / len(ok) >= 0.95

def test_do_linearize():
  """PROGRAM(sink, DEVICE) gains LINEAR(lines), the lines checked against program_spec"""
  for _, sink in final_sinks():
    prg = TgUOp(TgOps.PROGRAM, src=(sink, TgUOp(TgOps.DEVICE, arg="CPU")))
    assert from_tinygrad(tg_do_linearize(prg, sink)) is _C.do_linearize(from_tinygrad(prg), from_tinygrad(sink))

def test_run_counts_past_int64():
  """run counts past 2**63 (two nested ranges of 2**40) next to small ones: the order is tinygrad's, Python's numbers
  compared where C's do not fit"""
  dg = TgUOp(TgOps.DEFINE_GLOBAL, tg_dtypes.float.ptr(2**62), arg=0)
  big0, big1, small = TgUOp.range(2**40, 0), TgUOp.range(2**40, 1), TgUOp.range(7, 2)
  wide = dg.index(big0 * 3 + big1).store(TgUOp.const(tg_dtypes.float, 1.0)).end(big1, big0)
  narrow = dg.index(small + 5).store(TgUOp.const(tg_dtypes.float, 2.0)).end(small)
  for sink in (TgUOp.sink(wide, narrow), TgUOp.sink(narrow, wide)):
    assert same_nodes(tg_linearize(sink), _C.linearize(from_tinygrad(sink)))

def test_nan_consts_order_as_python_compares_them():
  """a NaN const is neither less nor more than any other const, so the sort's order is the one Python's list.sort
  reaches asking its questions: NaNs (each its own float object, or one shared) among other consts, in stores and
  in products whose tuplizes differ only there, in many arrangements"""
  rng = random.Random(0)
  dg = TgUOp(TgOps.DEFINE_GLOBAL, tg_dtypes.float.ptr(16), arg=0)
  idx = dg.index(TgUOp.const(tg_dtypes.int, 3))
  shared_nan = float("nan")
  values = [float("nan"), -150.0, float("nan"), 3.0, float("inf"), shared_nan, 0.5, shared_nan, -0.0]
  for _ in range(30):
    rng.shuffle(values)
    consts = [TgUOp.const(tg_dtypes.float, v) for v in values]
    stores = [idx.store(c) for c in consts] + [idx.store(idx.load() * c) for c in consts[:4]]
    sink = TgUOp.sink(*rng.sample(stores, len(stores)))
    assert same_nodes(tg_linearize(sink), _C.linearize(from_tinygrad(sink)))

def random_store_graph(rng):
  """stores into globals whose ptr dtypes differ only in size (neither is less than the other, nor ==), at index chains
  up to 40 ops deep, of values that mix NaN and other consts with loads"""
  globs = [TgUOp(TgOps.DEFINE_GLOBAL, tg_dtypes.float.ptr(rng.choice([16, 32, 64])), arg=i) for i in range(3)]
  values = [float("nan"), 1.0, 2.0, -0.0, 0.5]
  stores = []
  for _ in range(rng.randint(2, 6)):
    g, x = rng.choice(globs), TgUOp.const(tg_dtypes.int, rng.randint(0, 3))
    for _ in range(rng.randint(0, 40)): x = x + rng.randint(0, 2) if rng.random() < 0.7 else x * 2
    v = TgUOp.const(tg_dtypes.float, rng.choice(values))
    for _ in range(rng.randint(0, 30)):
      v = v + TgUOp.const(tg_dtypes.float, rng.choice(values)) if rng.random() < 0.6 else v * g.index(x).load()
    stores.append(g.index(x).store(v))
  return TgUOp.sink(*rng.sample(stores, len(stores)))

def test_tuplize_order_on_random_deep_graphs():
  """the sort's answers where tinygrad's order is not consistent (heads that are neither less nor ==, NaN), on deep
  graphs: the same list as tinygrad's on every graph"""
  rng = random.Random(1)
  for _ in range(200):
    sink = random_store_graph(rng)
    assert same_nodes(tg_linearize(sink), _C.linearize(from_tinygrad(sink)))

def test_stores_that_first_differ_past_the_token_prefixes():
  """two stores whose index chains (80 adds) differ only in the const at the bottom: their order is decided past any
  fixed-length prefix of their tuplizes, in both orders of the sink's sources"""
  g = TgUOp(TgOps.DEFINE_GLOBAL, tg_dtypes.int.ptr(64), arg=0)
  def chain(c):
    x = TgUOp.const(tg_dtypes.int, c)
    for _ in range(80): x = x + 1
    return x
  for c0, c1 in ((0, 1), (1, 0), (2, 1)):
    a, b = g.index(chain(c0)).store(TgUOp.const(tg_dtypes.int, 5)), g.index(chain(c1)).store(TgUOp.const(tg_dtypes.int, 5))
    for sink in (TgUOp.sink(a, b), TgUOp.sink(b, a)):
      assert same_nodes(tg_linearize(sink), _C.linearize(from_tinygrad(sink)))

def test_linearize_is_a_toposort_of_every_node():
  for _, sink in final_sinks()[:10]:
    tc_sink = from_tinygrad(sink)
    lst = _C.linearize(tc_sink)
    assert set(lst) == set(tc_sink.toposort()) and len(lst) == len(set(lst)) and lst[-1] is tc_sink
    seen = set()
    for u in lst:
      assert all(s in seen for s in u.src)
      seen.add(u)

def test_if_in_graph_is_an_error():
  for ns in (tinyc, None):
    void, b = (tinyc.dtypes.void, tinyc.dtypes.bool) if ns else (tg_dtypes.void, tg_dtypes.bool)
    U, Ops = (tinyc.UOp, tinyc.Ops) if ns else (TgUOp, TgOps)
    gate = U.const(b, True)
    mif = U(Ops.IF, void, (gate,))
    with pytest.raises(RuntimeError, match="if not allowed in graph"):
      (_C.line_rewrite if ns else tg_line_rewrite)([gate, mif], CLEANUPS if ns else tg_cleanups)

def line_rules(ns, U, P, PM):
  """a Python line rule: every ADD is emitted twice and stands for its doubled self"""
  return PM([(P(ns.ADD, name="x"), lambda x: (x * 2, [x, x]))])

def test_line_rewrite_with_python_rules():
  def build(U, Ops, dt):
    a = U.variable("a", 0, 10)
    s = (a + 1) * (a + 1) + 3
    return list(s.toposort())
  tg = tg_line_rewrite(build(TgUOp, TgOps, tg_dtypes), line_rules(TgOps, TgUOp, TgUPat, TgPatternMatcher))
  tc = _C.line_rewrite(build(tinyc.UOp, tinyc.Ops, tinyc.dtypes), line_rules(tinyc.Ops, tinyc.UOp, tinyc.UPat, tinyc.PatternMatcher))
  assert same_nodes(tg, tc) and len(tc) > 5

def test_line_rewrite_needs_sources_first():
  a = tinyc.UOp.variable("a", 0, 10)
  with pytest.raises(KeyError):
    _C.line_rewrite([a + 1], CLEANUPS)

def test_cfg_edges_and_add_control_flow():
  ok, with_edges = [], 0
  for _, stages in lowered():
    pre = stages["add control flow"]
    edges_tg, edges_tc = CFGContext(pre).edges, _C.cfg_edges(from_tinygrad(pre))
    with_edges += len(edges_tg) > 1
    same_edges = [(from_tinygrad(k), from_tinygrad(v)) for k, v in edges_tg.items()] == list(edges_tc.items())
    ours = tinyc.graph_rewrite(from_tinygrad(pre), RULES["pm_add_control_flow"], ctx=edges_tc, bottom_up=True)
    direct = _C.add_control_flow(from_tinygrad(pre), edges_tc)   # the pipeline's pass: the walk without the engine
    ok.append(same_edges and ours is from_tinygrad(stages["final"]) and direct is ours)
  print(f"\nCFGContext edges + pm_add_control_flow identity: {sum(ok)}/{len(ok)}, {with_edges} kernels with 2+ edges")
  assert with_edges >= 1 and all(ok)

def test_add_control_flow_on_edges_the_pipeline_never_makes():
  """The pass as the pipeline runs it (the direct bottom-up walk substitute shares) on hand-made edges: against
  tinygrad's bottom-up graph_rewrite with pm_add_control_flow where tinygrad answers (a RANGE after another's END; one
  whose bound reads a named RANGE, and then is named again as remade, which the engine rewrites again), and against
  tinyc's engine with the same rule where tinygrad does not: edges that close a loop (tinygrad loops forever), an edge
  that is not a UOp or is malformed (the same error)."""
  import types
  buf = TgUOp(TgOps.DEFINE_GLOBAL, tg_dtypes.float.ptr(64), arg=0)
  r0, r2 = TgUOp.range(4, 0), TgUOp.range(3, 2)
  r1 = TgUOp(TgOps.RANGE, tg_dtypes.index, (r0 + 1,), (1, AxisType.LOOP))
  e0, e1, e2 = (TgUOp(TgOps.END, src=(buf.index(r + off).store(r.cast(tg_dtypes.float)), r)) for r, off in ((r0, 0), (r1, 8), (r2, 40)))
  sink = TgUOp.sink(e0, e1, e2)
  r1_remade = r1.replace(src=(r0.replace(src=r0.src + (e2,)) + 1,))   # r1 made again on r0 after e2
  def outcome(f):
    try: return f()
    except Exception as e: return type(e)
  def ours(edges): return outcome(lambda: _C.add_control_flow(from_tinygrad(sink), {from_tinygrad(k): from_tinygrad(v) for k, v in edges.items()}))
  for edges in ({r1: e0}, {r0: e2}, {r0: e2, r1_remade: e2}):
    want = tg_graph_rewrite(sink, pm_add_control_flow, ctx=types.SimpleNamespace(edges=edges), bottom_up=True)
    assert want is not sink and ours(edges) is from_tinygrad(want)
  U, dt, tc_sink = tinyc.UOp, tinyc.dtypes, from_tinygrad(sink)
  t0 = from_tinygrad(r0)
  malformed = [U(tinyc.Ops.END, src=()), U(tinyc.Ops.GEP, dt.float, (t0,), arg="x"), U(tinyc.Ops.ADD, dt.index, (t0,))]
  for edges in [{r0: e1, r1: e0}, {r0: e0}]:
    tc_edges = {from_tinygrad(k): from_tinygrad(v) for k, v in edges.items()}
    want = outcome(lambda: tinyc.graph_rewrite(tc_sink, RULES["pm_add_control_flow"], ctx=tc_edges, bottom_up=True))
    assert ours(edges) is want is RuntimeError
  for end in ["not a UOp"] + malformed:
    want = outcome(lambda: tinyc.graph_rewrite(tc_sink, RULES["pm_add_control_flow"], ctx={t0: end}, bottom_up=True))
    assert outcome(lambda: _C.add_control_flow(tc_sink, {t0: end})) is want
  assert [outcome(lambda: _C.add_control_flow(tc_sink, {t0: end})) for end in ["not a UOp"] + malformed] == [TypeError, IndexError, TypeError, IndexError]

def cfg_outcome(make_edges):
  try: return "edges", list(make_edges().items())
  except AssertionError: return "assert", None

@pytest.mark.parametrize("reads_other_range", [False, True])
@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_cfg_edges_of_sibling_loops(order, reads_other_range):
  """two loops closed by the SINK, the first storing a value that may read the second's range: tinygrad asserts when the
  loop put first already depends on the range of the one it would have to follow; tinyc answers the same (edges or the
  AssertionError), reading the ranges below a node from its deps rather than its backward slice"""
  buf = TgUOp(TgOps.DEFINE_GLOBAL, tg_dtypes.float.ptr(64), arg=0)
  r = [TgUOp.range(4, i) for i in range(2)]
  val = (r[0] + r[1] if reads_other_range else r[0]).cast(tg_dtypes.float)
  ends = [TgUOp(TgOps.END, src=(buf.index(r[0]).store(val), r[0])),
          TgUOp(TgOps.END, src=(buf.index(r[1] + 4).store(r[1].cast(tg_dtypes.float)), r[1]))]
  sink = TgUOp.sink(*[ends[i] for i in order])
  kind, tg = cfg_outcome(lambda: CFGContext(sink).edges)
  assert (kind, tg and [(from_tinygrad(k), from_tinygrad(v)) for k, v in tg]) == cfg_outcome(lambda: _C.cfg_edges(from_tinygrad(sink)))
  assert kind == ("assert" if order == (0, 1) and reads_other_range else "edges")

def test_split_ends():
  ok, split = [], 0
  for _, stages in lowered():
    before = stages["final rewrite"]
    tg, tc = tg_graph_rewrite(before, pm_split_ends), tinyc.graph_rewrite(from_tinygrad(before), RULES["pm_split_ends"])
    split += tg is not before
    ok.append(from_tinygrad(tg) is tc)
  print(f"\npm_split_ends identity: {sum(ok)}/{len(ok)}, {split} kernels changed")
  assert split >= 1 and all(ok)
