"""tinygrad/codegen/late/expander.py (pm_pre_expander, expander) native in tinyc, against tinygrad 0.12.0.

The corpus is the input of full_rewrite_to_sink's "expander" pass for real kernels on device CPU with the Clang
renderer (tinygrad's own optimizations, none, and forced UPCAST/UNROLL/GROUP opts where tinygrad accepts them).
tinyc runs the same concatenation sym+pm_pre_expander+expander on the converted input and must produce the very
node tinygrad produced (through the bridge). A second corpus lowers half-precision kernels for the CUDA renderer
(never run) so tensor cores give WMMA; small hand-built graphs cover the rules real kernels do not reach.
CPU kernels never carry GROUP_REDUCE ranges (the Clang renderer has no locals), so pm_group_for_reduce is checked on the
reduce kernels of the shared corpus lowered for the CUDA renderer with GROUP/GROUPTOP (and LOCAL) opts."""
import functools
from tinygrad import Tensor, Variable, dtypes as tg_dtypes
import tinygrad.codegen as tg_codegen
from tinygrad.codegen.opt import Opt, OptOps
from tinygrad.renderer.cstyle import ClangRenderer, CUDARenderer
from tinygrad.uop.ops import graph_rewrite as tg_graph_rewrite, KernelInfo, Ops as TgOps, AxisType as TgAxisType, UOp as TgUOp
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad
from passes import capture_passes

RULES = _C.native_rules()
EXPANDER_PASS = RULES["sym"] + RULES["pm_pre_expander"] + RULES["pm_group_for_reduce"] + RULES["expander"]

UPCAST, UNROLL = (Opt(OptOps.UPCAST, 0, 4),), (Opt(OptOps.UNROLL, 0, 4),)
GROUPS = ((Opt(OptOps.GROUP, 0, 4),), (Opt(OptOps.GROUPTOP, 0, 4),))

def programs():
  """(name, tensor, list of opts to force, or None for tinygrad's own choice)"""
  a, b = Tensor.rand(16, 32), Tensor.rand(32, 8)
  yield "matmul", a @ b, [None, UPCAST, UNROLL, UPCAST + UNROLL, *GROUPS]
  yield "sum", a.sum(axis=1), [None, UPCAST, UNROLL, *GROUPS]
  yield "max", a.max(), [None, UNROLL, *GROUPS]
  yield "argmax", a.argmax(axis=0), [None, UPCAST, UNROLL]
  yield "cumsum", Tensor.rand(33).cumsum(), [None, UNROLL]
  yield "softmax", a.softmax(-1), [None, UPCAST, UNROLL]
  yield "conv2d", Tensor.rand(1, 3, 8, 8).conv2d(Tensor.rand(4, 3, 3, 3)), [None, UPCAST, UNROLL, (Opt(OptOps.UNROLL, 1, 3),)]
  yield "exp_where_casts", (a.exp() > 1).where(a, a.cast(tg_dtypes.half).cast(tg_dtypes.float) * 2), [None, UPCAST]
  yield "int_math", (Tensor.arange(40).reshape(5, 8) * 3 // 2 % 7).cast(tg_dtypes.int8), [None, UPCAST]
  yield "pad_permute", a.pad(((1, 2), (0, 3))).permute(1, 0) + 1, [None, UPCAST]
  yield "symbolic", Tensor.rand(32, 8)[:Variable("n", 1, 32).bind(10)].sum(0), [None, UPCAST]
  yield "padto", (Tensor.rand(33, 17) + 1).contiguous(), [(Opt(OptOps.PADTO, 0, 32), Opt(OptOps.UPCAST, 0, 4))]

def gpu_programs():
  """kernels lowered for a CUDA renderer (it is never run): tensor cores give WMMA, whose expansion zeroes axes"""
  a, b = Tensor.rand(64, 64, dtype=tg_dtypes.half), Tensor.rand(64, 64, dtype=tg_dtypes.half)
  yield "tc_matmul", a @ b, [None, (Opt(OptOps.TC, 0, (-1, 0, 1)),)]
  yield "gpu_sum", a.sum(1), [(Opt(OptOps.UPCAST, 0, 4),), (Opt(OptOps.UNROLL, 0, 4),)]   # default opts would GROUPTOP

def kernel_asts(programs=programs):
  for name, t, opt_lists in programs():
    for si in t.schedule_with_vars()[0]:
      if si.ast.op is not TgOps.SINK: continue
      for opts in opt_lists:
        if opts is None: yield name, si.ast.replace(arg=KernelInfo()) if si.ast.arg is None else si.ast
        else: yield f"{name}/{','.join(f'{o.op.name}{o.axis}:{o.arg}' for o in opts)}", si.ast.replace(arg=KernelInfo(opts_to_apply=opts))
      yield name + "/noopt", si.ast.replace(arg=KernelInfo(opts_to_apply=()))

@functools.cache
def captured(gpu=False):
  """(kernel name, input sink, output sink) of every "expander" pass of the corpus"""
  ren = CUDARenderer("sm_80") if gpu else ClangRenderer()
  cases = capture_passes(kernel_asts(gpu_programs if gpu else programs), ren, ("expander",))["expander"]
  return [(k, inp, out) for k, inp, _, out in cases]

def axis_types(sink): return {u.arg[-1] for u in sink.toposort() if u.op is TgOps.RANGE}

def test_corpus_expands():
  cases = captured()
  assert len(cases) >= 40
  # the corpus exercises expansion: UPCAST and UNROLL ranges both occur, and no GROUP_REDUCE (the Clang renderer refuses GROUP)
  kinds = set().union(*(axis_types(s) for _, s, _ in cases))
  assert {TgAxisType.UPCAST, TgAxisType.UNROLL} <= kinds and TgAxisType.GROUP_REDUCE not in kinds
  assert sum(inp is not outp for _, inp, outp in cases) >= 20

def mismatches(cases):
  return [name for name, inp, outp in cases if from_tinygrad(outp) is not _C.graph_rewrite(from_tinygrad(inp), EXPANDER_PASS)]

def test_expander_identity():
  cases = captured()
  bad = mismatches(cases)
  print(f"\nexpander identity (CPU): {len(cases) - len(bad)}/{len(cases)}; mismatches: {bad}")
  assert not bad

def test_expander_identity_wmma():
  cases = captured(gpu=True)
  assert len(cases) >= 6 and not any(TgAxisType.GROUP_REDUCE in axis_types(s) for _, s, _ in cases)
  assert any(u.op is TgOps.WMMA for _, _, outp in cases for u in outp.toposort())
  bad = mismatches(cases)
  print(f"\nexpander identity (CUDA renderer, tensor cores): {len(cases) - len(bad)}/{len(cases)}; mismatches: {bad}")
  assert not bad

# ---- rules the kernel corpus does not reach (STORE with range sources, broadcasts under AFTER/END, BUFFERIZE of UNROLLs) ----
def synthetic(UOp, Ops, dtypes, AxisType):
  """small graphs for the rules real CPU kernels never fire, built with either library's API"""
  f4 = dtypes.float.vec(4)
  def unroll(axis, n, dt=dtypes.index): return UOp(Ops.UNROLL, dt, (UOp.const(dt.vec(n), tuple(range(n))),), ((axis, n),))
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(64), (), 0)
  r0 = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, 16),), (0, AxisType.LOOP))
  r_up = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, 4),), (1, AxisType.UPCAST))
  x = UOp(Ops.DEFINE_VAR, dtypes.float, (), ("x", 0, 9))
  idx = UOp(Ops.INDEX, dtypes.float.ptr(64), (buf, r0))
  yield "store_range_unroll", UOp(Ops.STORE, dtypes.void, (idx, x, r_up))
  yield "store_two_unrolls", UOp(Ops.STORE, dtypes.void, (idx, x, unroll(3, 2), r0, unroll(4, 2)))
  yield "after_broadcast", UOp(Ops.AFTER, f4, (UOp(Ops.VECTORIZE, f4, (x,) * 4), r0))
  yield "end_broadcast", UOp(Ops.END, f4, (UOp(Ops.VECTORIZE, f4, (x,) * 4), r0))
  yield "bufferize_unrolls", UOp(Ops.BUFFERIZE, dtypes.float, (unroll(5, 4, dtypes.float), unroll(5, 4)), None)
  yield "contract_partial", UOp(Ops.CONTRACT, dtypes.float.vec(2), (UOp(Ops.UNROLL, dtypes.float, (UOp.const(dtypes.float.vec(8), tuple(range(8))),), ((1, 2), (2, 2), (3, 2))),), ((2, 2),))
  yield "contract_no_unroll", UOp(Ops.CONTRACT, dtypes.float.vec(3), (x,), ((7, 3),))
  yield "mixed_unroll_add", unroll(1, 2, dtypes.float) + unroll(2, 3, dtypes.float) * x
  yield "gep_of_unroll", UOp(Ops.GEP, dtypes.float, (UOp(Ops.UNROLL, dtypes.float.vec(2), (UOp.const(dtypes.float.vec(8), tuple(range(8))),), ((1, 4),)),), (1,))

def test_synthetic_rules():
  tg_cases = list(synthetic(TgUOp, TgOps, tg_dtypes, TgAxisType))
  tc_cases = list(synthetic(tinyc.UOp, tinyc.Ops, tinyc.dtypes, tinyc.AxisType))
  tg_pass = tg_codegen.sym + tg_codegen.pm_pre_expander + tg_codegen.pm_group_for_reduce + tg_codegen.expander
  for (name, tg_u), (_, tc_u) in zip(tg_cases, tc_cases):
    assert from_tinygrad(tg_u) is tc_u, name
    want = tg_graph_rewrite(tg_u, tg_pass)
    assert want is not tg_u, name
    assert from_tinygrad(want) is _C.graph_rewrite(tc_u, EXPANDER_PASS), name

# ---- pm_group_for_reduce: the shared corpus's reduce kernels for a renderer with locals, with GROUP opts ----
GROUP_OPTS = [(Opt(OptOps.GROUP, 0, 4),), (Opt(OptOps.GROUPTOP, 0, 16),), (Opt(OptOps.LOCAL, 0, 4), Opt(OptOps.GROUP, 0, 4)),
              (Opt(OptOps.GROUPTOP, 0, 8), Opt(OptOps.LOCAL, 0, 2), Opt(OptOps.UPCAST, 0, 2))]

@functools.cache
def captured_group():
  """(kernel name, input, output) of the "expander" pass of corpus reduce kernels lowered for CUDA with GROUP opts"""
  from corpus import kernel_asts as corpus_asts
  kernels = [(f"{kname}/{','.join(f'{o.op.name}{o.axis}:{o.arg}' for o in opts)}", ast.replace(arg=KernelInfo(opts_to_apply=opts)))
             for kname, ast in corpus_asts() if any(u.op is TgOps.REDUCE for u in ast.toposort()) for opts in GROUP_OPTS]
  return [(k, inp, out) for k, inp, _, out in capture_passes(kernels, CUDARenderer("sm_80"), ("expander",))["expander"]]

def test_group_for_reduce_identity():
  cases = captured_group()
  grouped = [c for c in cases if TgAxisType.GROUP_REDUCE in axis_types(c[1])]
  with_locals = [c for c in grouped if TgAxisType.LOCAL in axis_types(c[1])]
  assert len(grouped) >= 40 and len(with_locals) >= 10
  assert all(any(u.op is TgOps.BUFFERIZE for u in outp.toposort()) for _, _, outp in grouped)
  bad = mismatches(cases)
  print(f"\nexpander identity with pm_group_for_reduce (CUDA renderer, GROUP opts): {len(cases) - len(bad)}/{len(cases)} "
        f"({len(grouped)} with GROUP_REDUCE, {len(with_locals)} also LOCAL); mismatches: {bad}")
  assert not bad

def test_group_for_reduce_alone():
  """pm_group_for_reduce by itself: a REDUCE without GROUP_REDUCE ranges is left alone; with them, tinygrad's node"""
  pm = RULES["pm_group_for_reduce"]
  for _, inp, _ in captured_group()[:30]:
    want = tg_graph_rewrite(inp, tg_codegen.pm_group_for_reduce)
    assert from_tinygrad(want) is _C.graph_rewrite(from_tinygrad(inp), pm)
