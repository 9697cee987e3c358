"""tinygrad/codegen/gpudims.py (pm_add_gpudims, get_grouped_dims), native in tinyc, against tinygrad 0.12.0.

The "add gpudims" pass of full_rewrite_to_sink is captured from real kernels on two renderers: the Clang renderer
(SPECIALs come from THREAD opts) and tinygrad's CUDA renderer (constructed only: GPU renderers are not ported, so
our rules get a stand-in ctx with the same attributes). get_grouped_dims is compared on many shapes."""
import functools, itertools, random
from tinygrad import Tensor, Variable
import tinygrad.codegen as tg_codegen
from tinygrad.codegen.gpudims import get_grouped_dims as tg_get_grouped_dims
from tinygrad.codegen.opt import Opt, OptOps
from tinygrad.renderer.cstyle import ClangRenderer, CUDARenderer
from tinygrad.uop.ops import graph_rewrite as tg_graph_rewrite, KernelInfo, Ops as TgOps
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad

PM = _C.native_rules()["pm_add_gpudims"]

class StandInRenderer:
  """the attributes add_gpudims reads, copied from a tinygrad renderer"""
  def __init__(self, ren):
    for k in ("global_max", "local_max", "has_local", "has_threads", "has_shared", "device"): setattr(self, k, getattr(ren, k))

def programs():
  """(name, tensor, list of opt lists: None is tinygrad's own choice)"""
  a, b = Tensor.rand(16, 32), Tensor.rand(32, 8)
  T, L, G, GT = OptOps.THREAD, OptOps.LOCAL, OptOps.GROUP, OptOps.GROUPTOP
  yield "matmul", a @ b, [None, [Opt(T, 0, 2)], [Opt(L, 0, 4)], [Opt(L, 0, 4), Opt(L, 1, 2)], [Opt(G, 0, 4)]]
  yield "sum", a.sum(axis=1), [None, [Opt(T, 0, 2)], [Opt(G, 0, 8)], [Opt(GT, 0, 16)], [Opt(L, 0, 16)]]
  yield "max", a.max(), [None, [Opt(G, 0, 16)], [Opt(GT, 0, 32)]]
  yield "argmax", a.argmax(axis=0), [None, [Opt(T, 0, 2)], [Opt(L, 0, 8)]]
  yield "cumsum", Tensor.rand(33).cumsum(), [None]
  yield "softmax", a.softmax(-1), [None, [Opt(T, 0, 2)], [Opt(L, 0, 4)]]
  yield "conv2d", Tensor.rand(1, 3, 8, 8).conv2d(Tensor.rand(4, 3, 3, 3)), [None, [Opt(T, 0, 2)], [Opt(L, 0, 2), Opt(L, 1, 2)]]
  yield "big_1d", Tensor.rand(70000, 3).sum(1), [None, [], [Opt(T, 0, 2)]]
  yield "huge_2d", Tensor.rand(3, 70001).contiguous(), [[]]
  yield "many_dims", Tensor.rand(2, 3, 4, 5, 6).permute(4, 3, 2, 1, 0).contiguous(), [None, [], [Opt(L, 0, 2)]]
  yield "exp_where", (a.exp() > 1).where(a, a * 2), [None, [Opt(T, 0, 2)], [Opt(L, 1, 8)]]
  yield "pad_permute", a.pad(((1, 2), (0, 3))).permute(1, 0) + 1, [None, [Opt(T, 0, 2)]]
  yield "symbolic", Tensor.rand(32, 8)[:Variable("n", 1, 32).bind(10)].sum(0), [None, [Opt(L, 0, 8)]]

def kernel_asts():
  for name, t, opt_lists in programs():
    for si in t.schedule_with_vars()[0]:
      if si.ast.op is not TgOps.SINK: continue
      for opts in opt_lists:
        ast = si.ast.replace(arg=KernelInfo(opts_to_apply=tuple(opts))) if opts is not None else si.ast.replace(arg=KernelInfo())
        yield f"{name}/{opts}", ast

def captured(ren):
  """(name, input sink, output sink) of tinygrad's "add gpudims" step for every kernel that lowers on ren"""
  out, seen = [], {}
  def spy(sink, pm, *args, name=None, **kwargs):
    ret = tg_graph_rewrite(sink, pm, *args, name=name, **kwargs)
    if name == "add gpudims": seen["io"] = (sink, ret, kwargs.get("ctx"))
    return ret
  tg_codegen.graph_rewrite = spy
  try:
    for name, ast in kernel_asts():
      seen.clear()
      try: tg_codegen.full_rewrite_to_sink(ast, ren, optimize=True)
      except Exception: continue   # an opt this kernel or renderer does not take
      if "io" in seen:
        assert seen["io"][2] is ren
        out.append((name, *seen["io"][:2]))
  finally: tg_codegen.graph_rewrite = tg_graph_rewrite
  return out

@functools.cache
def clang_cases(): return captured(ClangRenderer())
@functools.cache
def cuda_cases(): return captured(CUDARenderer("sm_80"))

def count_specials(sink): return sum(u.op is TgOps.SPECIAL for u in sink.toposort())

def identity_rate(cases, ctx):
  same = [from_tinygrad(tg_out) is tinyc.graph_rewrite(from_tinygrad(tg_in), PM, ctx=ctx, name="add gpudims")
          for _, tg_in, tg_out in cases]
  print(f"add gpudims identity: {sum(same)}/{len(same)}")
  return same

def test_clang_add_gpudims_identity():
  cases = clang_cases()
  assert len(cases) >= 20 and sum(count_specials(o) > 0 for _, _, o in cases) >= 5
  assert all(identity_rate(cases, tinyc.ClangRenderer()))

def test_cuda_add_gpudims_identity_with_stand_in_ctx():
  cases = cuda_cases()
  assert len(cases) >= 25
  specials = [count_specials(o) for _, _, o in cases]
  assert sum(s > 0 for s in specials) >= 20
  assert any("lidx" in u.arg for _, _, o in cases for u in o.toposort() if u.op is TgOps.SPECIAL)
  assert all(identity_rate(cases, StandInRenderer(CUDARenderer("sm_80"))))

def test_stand_in_ctx_without_locals():
  """dont_use_locals kernels get idx* SPECIALs; a ctx with no maxes keeps the dims as they are"""
  class NoMax(StandInRenderer):
    global_max = local_max = None
    def __init__(self): pass
  class TgNoMax: global_max = local_max = None
  from tinygrad.codegen.gpudims import pm_add_gpudims as tg_pm
  n = 0
  for _, tg_in, _ in cuda_cases():
    for ki in (tg_in.arg, tg_in.arg.__class__(**{**tg_in.arg.__dict__, "dont_use_locals": True})):
      src = tg_in.replace(arg=ki)
      try: tg_out = tg_graph_rewrite(src, tg_pm, ctx=TgNoMax())
      except AssertionError: continue
      assert from_tinygrad(tg_out) is tinyc.graph_rewrite(from_tinygrad(src), PM, ctx=NoMax())
      n += 1
  assert n >= 25

# ---- get_grouped_dims ----

def outcome(fn):
  try: return ("ok", fn())
  except (RuntimeError, IndexError, ValueError) as e: return (type(e).__name__,)

def same_grouped_dims(prefix, dims, max_sizes, reverse):
  tg = outcome(lambda: tg_get_grouped_dims(prefix, dims, max_sizes, reverse=reverse))
  tc = outcome(lambda: _C.get_grouped_dims(prefix, dims, max_sizes, reverse=reverse))
  assert tg[0] == tc[0], (dims, max_sizes, tg, tc)
  if tg[0] == "ok": assert [from_tinygrad(u) for u in tg[1]] == tc[1], (dims, max_sizes)
  return tg[0] == "ok"

MAXES = [(2147483647, 65535, 65535), (1024, 1024, 64), (16, 16, 16), (8, 4, 2), (2, 0, 0), (5, 7, 11), (64,), (32, 32), None]
SIZES = [1, 2, 3, 4, 6, 7, 8, 12, 16, 17, 30, 32, 64, 97, 100, 128, 1024, 1025, 4096, 65536, 70000, 2**20]

def test_get_grouped_dims_many_shapes():
  rng = random.Random(0)
  oks = 0
  shapes = [()] + [(s,) for s in SIZES] + [tuple(rng.choice(SIZES[:12]) for _ in range(rng.randint(2, 5))) for _ in range(150)]
  shapes += [tuple(rng.choice(SIZES) for _ in range(rng.randint(1, 3))) for _ in range(100)]
  for dims, max_sizes, reverse, prefix in itertools.product(shapes, MAXES, (False, True), ("gidx",)):
    oks += same_grouped_dims(prefix, dims, max_sizes, reverse)
  assert oks > 1000

def test_get_grouped_dims_symbolic():
  import tinygrad
  for lo, hi in ((1, 10), (1, 100000)):
    tg_v, tc_v = tinygrad.UOp.variable("n", lo, hi), tinyc.UOp.variable("n", lo, hi)
    for maxes in ((65535, 65535, 65535), (16, 16, 16), None):
      for rest in ((), (4,), (4, 8)):
        tg = outcome(lambda: tg_get_grouped_dims("lidx", (tg_v,) + rest, maxes))
        tc = outcome(lambda: _C.get_grouped_dims("lidx", (tc_v,) + rest, maxes))
        assert tg[0] == tc[0]
        if tg[0] == "ok": assert [from_tinygrad(u) for u in tg[1]] == tc[1]
