"""tinygrad/codegen/opt/tc.py (TensorCore and its tables) and the Scheduler's TC opt, native in tinyc, against tinygrad 0.12.0.

Every tensor core of every table must equal tinygrad's (fields, str, the axis helpers, the swizzle permutations), and a
bad construction must fail with tinygrad's AssertionError. The TC opt is applied to the kernels tinygrad's apply_opts
gets (captured inside full_rewrite_to_sink, as tests/test_postrange.py does) for the shared corpus and for matmuls of
half, bfloat16 and float (shapes the tensor cores divide and shapes they do not, which only tc_opt=2 pads), on
tinygrad's CUDA (sm_75/80/89), AMD (RDNA3/RDNA4/CDNA3/CDNA4, and HIP) and Metal renderers (constructed only; Metal's
tensor cores set by hand, as on arm64); tinyc gets a renderer with the same attributes and the tensor cores of its own
tables. Both must agree on the outcome (KernelOptError from both with the same message, or the same AST, applied opts,
returned ranges and tensor core), and for the kernels the opt applies to, on the linear uops after full_rewrite_to_sink."""
import dataclasses, functools, pickle
import pytest
import tinyc
from tinyc import _C
from tinyc.codegen.opt import tc as ctc
from tinyc.tinygrad import from_tinygrad, _to_tc_arg
import tinygrad.codegen as tg_codegen
from tinygrad import Tensor, dtypes as tg_dtypes
from tinygrad.codegen.opt import tc as ttc, Opt as TgOpt, OptOps as TgOptOps, KernelOptError as TgKernelOptError
from tinygrad.codegen.opt.postrange import Scheduler as TgScheduler
from tinygrad.codegen.late.linearizer import linearize as tg_linearize
from tinygrad.renderer.cstyle import CUDARenderer, AMDHIPRenderer, HIPRenderer, MetalRenderer
from tinygrad.uop.ops import Ops as TgOps, KernelInfo as TgKernelInfo
from corpus import kernel_asts
from passes import capture_apply_opts_inputs

TABLES = ["cuda_81616", "cuda_81632_f8", "cuda_8168_f16", "cuda_8168_tf32", "cuda_sm75", "cuda_sm80", "cuda_sm89", "amd_rdna3",
          "amd_rdna4", "amd_cdna_161616", "amd_cdna_161632", "amd_cdna_1616128", "amd_cdna3", "amd_cdna4", "metal", "amx", "intel"]

# ---- the tables ----

def test_every_table_name_is_there():
  tg_lists = {k for k, v in vars(ttc).items() if isinstance(v, list) and v and isinstance(v[0], ttc.TensorCore)}
  assert tg_lists == set(TABLES)
  assert ctc.cuda_tc_opts == ttc.cuda_tc_opts and ctc.TensorCore is tinyc.TensorCore
  assert ctc.cuda_sm75 is ctc.cuda_8168_f16   # an alias in tinygrad too
  assert all(a is b for a, b in zip(ctc.amd_cdna3, ctc.amd_cdna_161632[:2] + ctc.amd_cdna_161616))

def dt_name(dt): return dt.name

def same_tc(t, c) -> bool:
  bss = t.base_shape_str()
  return (t.dims == c.dims and t.threads == c.threads and t.elements_per_thread == c.elements_per_thread and t.opts == c.opts
          and t.swizzle == c.swizzle and dt_name(t.dtype_in) == dt_name(c.dtype_in) and dt_name(t.dtype_out) == dt_name(c.dtype_out)
          and str(t) == str(c) and bss == c.base_shape_str() and t.permutes_for_shape_str(bss) == c.permutes_for_shape_str(bss)
          and t.get_reduce_axes() == c.get_reduce_axes() and t.get_upcast_axes() == c.get_upcast_axes()
          and t.get_local_axes() == c.get_local_axes() and t.base_upcast_axes() == c.base_upcast_axes() and t._remaps() == c._remaps()
          and t.permutes_for_shape_str(bss[::-1]) == c.permutes_for_shape_str(bss[::-1]))

@pytest.mark.parametrize("name", TABLES)
def test_table_equals_tinygrad(name):
  t, c = getattr(ttc, name), getattr(ctc, name)
  assert len(t) == len(c) and all(same_tc(a, b) for a, b in zip(t, c))

def test_dataclass():
  tc = ctc.cuda_sm80[0]
  assert dataclasses.is_dataclass(tc) and [f.name for f in dataclasses.fields(tc)] == [f.name for f in dataclasses.fields(ttc.cuda_sm80[0])]
  assert dataclasses.replace(tc, dtype_out=tinyc.dtypes.half) == ctc.cuda_sm80[2] and hash(tc) == hash(dataclasses.replace(tc))
  assert pickle.loads(pickle.dumps(tc)) == tc and tc != ctc.cuda_sm80[1] and len(set(ctc.cuda_sm89)) == len(ctc.cuda_sm89)
  assert repr(tc).replace("dtypes.", "") == repr(ttc.cuda_sm80[0]).replace("dtypes.", "")
  with pytest.raises(dataclasses.FrozenInstanceError): tc.threads = 2

def tc_kwargs(tc, dtypes_ns):
  return dict(dims=tc.dims, threads=tc.threads, elements_per_thread=tc.elements_per_thread, dtype_in=getattr(dtypes_ns, tc.dtype_in.name),
              dtype_out=getattr(dtypes_ns, tc.dtype_out.name), opts=tc.opts, swizzle=tc.swizzle)

BAD = [dict(dims=(8, 16, 8)), dict(dims=(16, 8, 16)), dict(dims=(4, 16, 16)), dict(threads=16), dict(elements_per_thread=(8, 4, 8)),
       dict(elements_per_thread=(4, 4, 4)), dict(elements_per_thread=(8, 8, 4)), dict(opts=("u0", "l0", "l0", "l1", "l1", "u1", "u1")),
       dict(swizzle=((("r1",),) * 3, (("r1",),) * 3)), dict(swizzle=((("r1", "r2", "l2", "l3", "l4"), ("u1", "r3")),) * 2),
       dict(swizzle=((("r1", "r2", "l2", "l3", "l4"), ("u1",), ("l0", "l1", "u0", "r0")),) * 2),
       dict(swizzle=((("r1", "r2", "l2", "l3", "l4"), ("u1", "r3"), ("l0", "l1", "u0")),) * 2),
       dict(swizzle=((("r1", "r1", "l2", "l3", "l4"), ("u1", "r3"), ("l0", "l1", "u0", "r0")),) * 2),
       dict(swizzle=((("r1", "r2", "l2", "l3", "l4"), ("u1", "r3"), ("l0", "l1", "u0", "r0")),
                     (("r1", "r2", "l2", "l3", "l4"), ("u1", "r3"), ("l0", "l1", "u0", "r0"))))]

@pytest.mark.parametrize("change", range(len(BAD)))
def test_bad_construction_asserts_as_tinygrad(change):
  base = ttc.cuda_sm80[0]
  with pytest.raises(AssertionError) as te: ttc.TensorCore(**{**tc_kwargs(base, tg_dtypes), **BAD[change]})
  with pytest.raises(AssertionError) as ce: tinyc.TensorCore(**{**tc_kwargs(base, tinyc.dtypes), **BAD[change]})
  assert str(te.value) == str(ce.value)

def test_bad_construction_types():
  good = tc_kwargs(ctc.cuda_sm80[0], tinyc.dtypes)
  for change in (dict(dims=(8, 16)), dict(dims="816"), dict(threads=32.0), dict(dtype_in="half"), dict(opts=("x0",)), dict(opts=[1]),
                 dict(swizzle=(1, 2)), dict(swizzle=(((1,),),)), dict(dims=(8, 16, 0)), dict(opts=("u0",) * 40), dict(dims=(8, 16, 2**80))):
    with pytest.raises((TypeError, ValueError, OverflowError)): tinyc.TensorCore(**{**good, **change})
  with pytest.raises(IndexError): tinyc.TensorCore(**{**good, "swizzle": good["swizzle"][:1]})
  with pytest.raises(TypeError): tinyc.TensorCore(*list(good.values())[:6])

# ---- the Scheduler's TC opt ----


def amd_renderer(arch): return AMDHIPRenderer(arch)
def metal_renderer():
  r = MetalRenderer()
  r.tensor_cores = ttc.metal   # tinygrad gives Metal its tensor cores on arm64 only
  return r

RENDERERS = {"sm_75": lambda: CUDARenderer("sm_75"), "sm_80": lambda: CUDARenderer("sm_80"), "sm_89": lambda: CUDARenderer("sm_89"),
             "rdna3": lambda: amd_renderer("gfx1100"), "rdna4": lambda: amd_renderer("gfx1201"), "cdna3": lambda: amd_renderer("gfx942"),
             "cdna4": lambda: amd_renderer("gfx950"), "hip_rdna3": lambda: HIPRenderer("gfx1100"), "metal": metal_renderer}

@functools.cache
def tg_renderer(name): return RENDERERS[name]()

@functools.cache
def tc_of_tinyc():
  """tinygrad TensorCore (as a hashable key) -> the same tinyc TensorCore"""
  key = lambda t: (str(t), t.dims, t.threads, t.elements_per_thread, t.opts, t.swizzle)
  return {key(c): c for n in TABLES for c in getattr(ctc, n)}, key

def tinyc_extra_matcher(tg_ren):
  """the rule sets of tinygrad's extra_matcher that change these kernels' uops, built with tinyc's API"""
  from tinyc import UPat, PatternMatcher, Ops, dtypes, GroupOp, UOp
  rules = _C.native_rules()
  if tg_ren.device not in ("AMD", "HIP"): return rules["extra_pm"]   # CUDA's and Metal's other rules touch only fp8 / bf16 math
  dts = (dtypes.bfloat16, dtypes.fp8e4m3, dtypes.fp8e5m2)
  def cast_float_to_bf16(x):
    x = x.bitcast(dtypes.uint)
    x = ((-x & 0x7f800000) != 0).where(x + ((x >> 16) & 1) + 0x7fff, ((x & 0xffff) != 0).where((x | 0x10000), x))
    return (x >> 16).cast(dtypes.ushort).bitcast(dtypes.bfloat16)
  non_native = PatternMatcher([
    (UPat(Ops.WHERE, src=(UPat.var("b"), UPat.var("x", dtype=dts), UPat.var("y", dtype=dts))),
     lambda b, x, y: UOp(Ops.WHERE, dtype=dtypes.float, src=(b, x.cast(dtypes.float), y.cast(dtypes.float))).cast(x.dtype)),
    (UPat(GroupOp.ALU, dtype=dts, name="x"), lambda x: UOp(x.op, dtypes.float, tuple(vv.cast(dtypes.float) for vv in x.src), x.arg).cast(x.dtype)),
    (UPat(GroupOp.ALU, dtypes.bool, name="alu", src=(UPat.var("x", dtype=dts), UPat.var("y", dtype=dts))),
     lambda alu, x, y: UOp(alu.op, dtypes.bool, (x.cast(dtypes.float), y.cast(dtypes.float)), alu.arg)),
    (UPat(Ops.CAST, dts, (UPat.var("x"),), name="y"), lambda x, y: x.cast(dtypes.float).cast(y.dtype) if x.dtype != dtypes.float else None),
    (UPat(Ops.CAST, name="x", src=(UPat.var("y", dts),)), lambda x, y: y.cast(dtypes.float).cast(x.dtype) if x.dtype != dtypes.float else None)])
  amd = PatternMatcher([(UPat.cvar("x", dtypes.bfloat16), lambda x: cast_float_to_bf16(UOp.const(dtypes.float, x.arg)))])
  return non_native + amd + rules["pm_manual_bf16_cast"] + rules["extra_pm"]

@functools.cache
def tc_renderer_like(name):
  """a tinyc Renderer with what the pipeline reads from tinygrad's renderer `name`, and tinyc's own tensor cores"""
  tg_ren, r = tg_renderer(name), tinyc.Renderer()
  for a in ("device", "has_local", "has_threads", "has_shared", "global_max", "local_max", "shared_max"): setattr(r, a, getattr(tg_ren, a))
  table, key = tc_of_tinyc()
  r.tensor_cores = [table[key(t)] for t in tg_ren.tensor_cores]
  r.code_for_op = {getattr(tinyc.Ops, k.name): v for k, v in tg_ren.code_for_op.items()}
  r.extra_matcher = tinyc_extra_matcher(tg_ren)
  return r

def matmul_programs():
  """(name, tensor): matmuls the tensor cores divide and ones they do not (padded by tc_opt=2 only)"""
  Tensor.manual_seed(0)
  for dt in (tg_dtypes.half, tg_dtypes.bfloat16, tg_dtypes.float):
    for m, n, k in ((64, 64, 64), (32, 16, 48), (40, 24, 56), (2, 64, 33)):
      yield f"mm_{dt.name}_{m}x{n}x{k}", Tensor.rand(m, k, dtype=dt) @ Tensor.rand(k, n, dtype=dt)
    yield f"mm_{dt.name}_acc_out", Tensor.rand(32, 32, dtype=dt).matmul(Tensor.rand(32, 32, dtype=dt), dtype=dt)
  yield "batched_half", Tensor.rand(2, 16, 32, dtype=tg_dtypes.half) @ Tensor.rand(2, 32, 16, dtype=tg_dtypes.half)

def device_of(name): return tg_renderer(name).device

@functools.cache
def captured(device):
  """[(kernel name, the tinygrad AST apply_opts gets)] for the matmuls and the corpus, on a renderer of `device`"""
  ren = tg_renderer({"CUDA": "sm_80", "AMD": "rdna3", "HIP": "hip_rdna3", "METAL": "metal"}[device])
  # the matmul kernel of each program (the others make its random inputs)
  progs = [(n, si.ast) for n, t in matmul_programs() for si in t.schedule_with_vars()[0]
           if si.ast.op is TgOps.SINK and any(u.op in (TgOps.REDUCE_AXIS, TgOps.REDUCE) for u in si.ast.toposort())]
  return capture_apply_opts_inputs(progs + list(kernel_asts()), ren)

def matmuls(device): return [(k, a) for k, a in captured(device) if k.startswith(("mm_", "batched_half"))]

def schedulers(ast, name):
  tk, ck = TgScheduler(ast, tg_renderer(name)), tinyc.Scheduler(from_tinygrad(ast), tc_renderer_like(name))
  tk.convert_loop_to_global()
  ck.convert_loop_to_global()
  return tk, ck

def same_tensor_core(tk, ck):
  t, c = getattr(tk, "tensor_core", None), ck.tensor_core
  return (t is None and c is None) or (t is not None and c is not None and same_tc(t, c))

def same_state(tk, ck):
  return (from_tinygrad(tk.ast) is ck.ast and _to_tc_arg(tuple(tk.applied_opts)) == tuple(ck.applied_opts) and same_tensor_core(tk, ck)
          and tk.shape_str() == ck.shape_str())

def run_both(tk, ck, opt):
  """(same outcome, applied)"""
  try: rt, et = tk.apply_opt(opt), None
  except Exception as e: rt, et = None, e
  try: rc, ec = ck.apply_opt(_to_tc_arg(opt)), None
  except Exception as e: rc, ec = None, e
  if et is not None or ec is not None:
    if isinstance(et, TgKernelOptError): same = isinstance(ec, tinyc.KernelOptError) and str(et) == str(ec)
    else: same = et is not None and ec is not None and type(et).__name__ == type(ec).__name__
    if not same: print("differs:", opt, repr(et), repr(ec))
    return same and same_state(tk, ck), False
  same = ((rt is None and rc is None) or (type(rt) is type(rc) and [from_tinygrad(x) for x in rt] == list(rc))) and same_state(tk, ck)
  if same and opt.op is TgOptOps.TC:   # and the optimized AST, named from its axes (the WARP's, the TC's locals and upcasts)
    TgScheduler.kernel_cnt.clear()
    tinyc.Scheduler.kernel_cnt.clear()
    same = from_tinygrad(tk.copy().get_optimized_ast()) is ck.copy().get_optimized_ast()
  if not same: print("differs (applied):", opt)
  return same, True

def tc_opts_to_try(kname, ntc):
  """(axis, arg) pairs: on matmuls every tc_opt/use_tc on the first two axis choices, each tensor core alone, and
  axes 2..8 (past the choices of most kernels); on the corpus, one arg"""
  if not kname.startswith(("mm_", "batched_half")): return [(0, (-1, 2, 1))]
  full = [(-1, o, u) for o in (0, 1, 2) for u in (1, 2)] + [(s, 2, 1) for s in range(ntc)]
  return [(axis, arg) for axis in (0, 1) for arg in full] + [(axis, (-1, 2, 1)) for axis in range(2, 9)]

@pytest.mark.parametrize("name", list(RENDERERS))
def test_tc_opt_identity(name):
  """TC opts on every matmul and corpus kernel: the same outcome in both Schedulers"""
  ok = n = applied = 0
  ntc = len(tg_renderer(name).tensor_cores)
  for kname, ast in captured(device_of(name)):
    for axis, arg in tc_opts_to_try(kname, ntc):
      tk, ck = schedulers(ast, name)
      same, app = run_both(tk, ck, TgOpt(TgOptOps.TC, axis, arg))
      n += 1
      ok += same
      applied += app
      if not same: print("  in", kname, name)
  print(f"\nTC opt ({name}): {ok}/{n} same = {ok/n:.1%}, {applied} applied")
  assert ok == n and applied >= 6

def linear(sink_fn, ast, ren, lin):
  return lin(sink_fn(ast, ren))

def lin_identity(name, kname, ast, arg):
  from tinyc.codegen import full_rewrite_to_sink
  ast = ast.replace(arg=TgKernelInfo(opts_to_apply=(TgOpt(TgOptOps.TC, 0, arg),)))
  try: tg = tg_linearize(tg_codegen.full_rewrite_to_sink(ast, tg_renderer(name)))
  except TgKernelOptError: return None
  tc = _C.linearize(full_rewrite_to_sink(from_tinygrad(ast), tc_renderer_like(name)))
  if len(tg) != len(tc) or not all(from_tinygrad(a) is b for a, b in zip(tg[:-1], tc[:-1])): return False
  return tc[-1].src == tuple(from_tinygrad(x) for x in tg[-1].src) and any(u.op is tinyc.Ops.WMMA for u in tc)

@pytest.mark.parametrize("name", list(RENDERERS))
def test_tc_linear_uops_identity(name):
  """the matmuls the TC opt applies to, lowered all the way: the same linear uops (with their WMMA)"""
  ok = n = 0
  for kname, ast in matmuls(device_of(name)):
    for arg in ((-1, 0, 1), (-1, 2, 1)):
      r = lin_identity(name, kname, ast, arg)
      if r is None: continue
      n += 1
      ok += r
      if not r: print("linear uops differ:", kname, arg)
      if arg[1] == 0: break   # tc_opt 2 pads where 0 does not: only tried where 0 fails
  print(f"\nTC linear uops ({name}): {ok}/{n} same = {ok/max(n,1):.1%}")
  assert ok == n and n >= 2

def test_tensor_core_attribute_and_copy():
  kname, ast = matmuls("CUDA")[0]
  tk, ck = schedulers(ast, "sm_80")
  assert ck.tensor_core is None and ck.copy().tensor_core is None
  axes = ck.apply_opt(tinyc.Opt(tinyc.OptOps.TC, 0, (-1, 0, 1)))
  tk.apply_opt(TgOpt(TgOptOps.TC, 0, (-1, 0, 1)))
  assert type(axes) is list and len(axes) == 3 and ck.tensor_core in ctc.cuda_sm80 and ck.copy().tensor_core is ck.tensor_core
  assert any(u.op is tinyc.Ops.WMMA for u in ck.ast.toposort()) and same_state(tk.copy(), ck.copy())
  # the opts after it (GROUP refuses tensor cores, TC must come first), and the optimized AST with its name
  for opt in (TgOpt(TgOptOps.GROUP, 0, 2), TgOpt(TgOptOps.TC, 0, (-1, 0, 1)), TgOpt(TgOptOps.UPCAST, 0, 2), TgOpt(TgOptOps.LOCAL, 0, 2)):
    assert run_both(tk, ck, opt)[0]
  TgScheduler.kernel_cnt.clear()
  tinyc.Scheduler.kernel_cnt.clear()
  assert from_tinygrad(tk.get_optimized_ast()) is ck.get_optimized_ast()

def test_bad_args_as_tinygrad():
  """malformed TC args and axes: the same KernelOptError (or error type) from both"""
  kname, ast = matmuls("CUDA")[0]
  for axis, arg in [(0, (3, 0, 1)), (0, (99, 0, 1)), (0, (-2, 0, 1)), (0, (0, 3, 1)), (0, (0, -1, 1)), (0, (0, 0, 0)), (0, (0, 0, 3)),
                    (0, (0, 0)), (0, (0, 0, 1, 1)), (None, (0, 0, 1)), (0, 1), (0, None), (-1, (0, 0, 1)), (-5, (0, 0, 1)),
                    (99, (-1, 2, 1)), (0, (2, 0, 1)), (0, (True, 0, 1))]:
    tk, ck = schedulers(ast, "sm_80")
    assert run_both(tk, ck, TgOpt(TgOptOps.TC, axis, arg))[0], (axis, arg)
  tk, ck = schedulers(ast, "sm_80")   # TC after another opt
  assert run_both(tk, ck, TgOpt(TgOptOps.UPCAST, 0, 2))[0] and run_both(tk, ck, TgOpt(TgOptOps.TC, 0, (-1, 0, 1)))[0]

def test_bad_input():
  kname, ast = matmuls("CUDA")[0]
  c_ast = from_tinygrad(ast)
  TC = lambda arg, axis=0: tinyc.Opt(tinyc.OptOps.TC, axis, arg)
  def sched(tcs):
    r = tinyc.Renderer()
    r.device, r.tensor_cores = "CUDA", tcs
    return tinyc.Scheduler(c_ast, r)
  for garbage in ([1, 2], ["x"], [None], (ctc.cuda_sm80[0], object())):
    with pytest.raises(TypeError): sched(garbage).apply_opt(TC((-1, 0, 1)))
  with pytest.raises(TypeError): sched(5).apply_opt(TC((-1, 0, 1)))
  for arg in ((3, 0, 1), (-2, 0, 1), (0, 3, 1), (0, -1, 1), (0, 0, 0), (0, 0, 3), (0, 0), (0, 0, 1, 1)):
    with pytest.raises(tinyc.KernelOptError): sched(ctc.cuda_sm75).apply_opt(TC(arg))
  with pytest.raises(tinyc.KernelOptError, match="must have an axis"): sched(ctc.cuda_sm75).apply_opt(TC((0, 0, 1), None))
  with pytest.raises(tinyc.KernelOptError, match="valid arg"): sched(ctc.cuda_sm75).apply_opt(tinyc.Opt(tinyc.OptOps.TC, 0, 1))
  with pytest.raises(TypeError): sched(ctc.cuda_sm75).apply_opt(TC((0.5, 0, 1)))
  with pytest.raises(IndexError): sched(ctc.cuda_sm75).apply_opt(TC((0, 0, 1), -5))
  assert sched(ctc.cuda_sm75).apply_opt(TC((0, 0, 1), -1)) is not None   # Python's negative index into the choices
  with pytest.raises(tinyc.KernelOptError, match="no tensor core"): sched(ctc.cuda_sm75).apply_opt(TC((-1, 0, 1), 99))

def test_memory_flat():
  import gc, sys
  cases = [from_tinygrad(a) for _, a in matmuls("CUDA")[:6]]
  ren = tc_renderer_like("sm_80")
  def work():
    for ast in cases:
      for arg in ((-1, 0, 1), (-1, 2, 1), (-1, 2, 2), (0, 0, 1)):
        for axis in (0, 1):
          k = tinyc.Scheduler(ast, ren)
          k.convert_loop_to_global()
          try: k.apply_opt(tinyc.Opt(tinyc.OptOps.TC, axis, arg))
          except tinyc.KernelOptError: pass
          k.copy()
  work()
  gc.collect()
  base, refs = _C._intern_count(), sys.gettotalrefcount() if hasattr(sys, "gettotalrefcount") else 0
  for _ in range(3): work()
  gc.collect()
  assert _C._intern_count() == base
  if refs: assert sys.gettotalrefcount() - refs < 100

TF32_SCRIPT = """
import sys; sys.path.insert(0, {tests!r})
import test_tc
from tinygrad.codegen.opt import Opt, OptOps
ast = next(a for k, a in test_tc.matmuls("CUDA") if k == "mm_float_64x64x64")
tk, ck = test_tc.schedulers(ast, "sm_80")
same, applied = test_tc.run_both(tk, ck, Opt(OptOps.TC, 0, (-1, 0, 1)))
print(same, applied, str(ck.tensor_core))
"""

def test_allow_tf32():
  """float inputs take CUDA's TF32 tensor core only with ALLOW_TF32=1 (read at import, in both)"""
  import os, subprocess, sys
  script = TF32_SCRIPT.format(tests=os.path.dirname(__file__))
  out = subprocess.run([sys.executable, "-c", script], env={**os.environ, "ALLOW_TF32": "1"}, capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr
  assert out.stdout.split()[-3:] == ["True", "True", "WMMA_8_16_8_float_float"], out.stdout
