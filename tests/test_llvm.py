"""LLVM: tinyc's LLVMRenderer (csrc/renderers/llvmir.c), CPULLVMCompiler (the LLVM C API, in process) and the CPU device's
loading of relocatable objects (ORC LLJIT), against tinygrad 0.12.0.

1. over the corpus, with no opts and with tinygrad's heuristic opts: the LLVM IR is byte-identical to tinygrad's
   LLVMRenderer (the kernel name's process counter stripped); every kernel compiled in process and run gives the results
   of the clang build of the same AST;
2. compiling in threads: two threads give the bytes of serial compiles; a thread whose compiles fail does not disturb one
   whose compiles succeed;
3. errors: bad IR raises CompileError with LLVM's message; a truncated or garbage object raises on load;
4. a pickled ProgramSpec / CompiledRunner carrying an LLVM object runs in a spawned process with 0 compiles there;
5. selection as tinygrad's (CPU_LLVM=1, CPU_CC=LLVM; clang by default) and the renderer's settings; memory stays flat."""
import gc, multiprocessing, os, pickle, subprocess, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
import numpy as np
import pytest
import tinyc
from tinyc import Buffer, CompiledRunner, CompileError
from tinyc.codegen import get_program
from tinyc.tinygrad import from_tinygrad
from tinygrad.codegen import get_program as tg_get_program
from tinygrad.renderer.llvmir import LLVMRenderer as TgLLVMRenderer
from tinygrad.helpers import Context
from tinygrad.dtype import dtypes as tgdtypes
from corpus import kernel_asts
from sanitizer import rss, RSS_SLACK
from test_codegen import strip_counter, tc_opts
from test_runtime import globals_of, random_bytes, as_array
import compile_run_child as child

pytestmark = pytest.mark.usefixtures("cache_db")   # this file's own compile cache: its compiles are its own
stats = tinyc._C.compile_stats
MODES = ("noopt", "opts")
VAR_VALS = {"n": 10}
# LLVM compiles with tinygrad's fast-math flags (contract, afn, ...), clang without: floats agree to about their precision
TOL = {np.dtype(np.float16): (1e-2, 1e-2), np.dtype(np.float32): (1e-4, 1e-5), np.dtype(np.float64): (1e-9, 1e-9)}

def plain(src: str, fname: str) -> str: return src.replace(fname, strip_counter(fname))

@pytest.fixture(scope="module")
def programs():
  """{(kernel, mode): (ast, tinygrad's LLVMRenderer program, tinyc's LLVM program compiled in process, or its exception)}"""
  tg_ren, ren, out, t_tc = TgLLVMRenderer(), tinyc.LLVMRenderer(), {}, 0.0
  for name, ast in kernel_asts():
    for mode in MODES:
      with Context(NOOPT=int(mode == "noopt")): tg = tg_get_program(ast, tg_ren)
      t0 = time.perf_counter()
      try: tc = get_program(from_tinygrad(ast), ren, opts=[] if mode == "noopt" else tc_opts(tg.applied_opts))
      except Exception as e: tc = e
      out[(name, mode)], t_tc = (ast, tg, tc), t_tc + time.perf_counter() - t0
  print(f"\ntinyc get_program + LLVM compile of {len(out)} programs: {t_tc:.1f}s", end="")
  return out

# ---- 1. the corpus ----

def test_ir_is_tinygrads(programs):
  same = {m: 0 for m in MODES}
  for (name, mode), (_, tg, tc) in programs.items():
    assert not isinstance(tc, Exception), (name, mode, tc)
    if plain(tc.src, tc.function_name) == plain(tg.src, tg.function_name): same[mode] += 1
  n = len(kernel_asts())
  for m in MODES: print(f"\nLLVM IR identical to tinygrad's LLVMRenderer ({m}): {same[m]}/{n} = {same[m] / n:.1%}", end="")
  assert all(v == n for v in same.values())

def buffers(tgp, init):
  gl = globals_of(tgp)
  return [Buffer("CPU", gl[g][1], gl[g][0]).allocate().copyin(memoryview(bytearray(init[g]))) for g in tgp.globals]

def run(runner, tgp, init):
  bufs = buffers(tgp, init)
  runner(bufs, VAR_VALS if runner.p.vars else None, wait=True)
  return {g: bytes(bufs[i].as_buffer()) for i, g in enumerate(tgp.globals) if g in tgp.outs}

def differs(tgp, ours, theirs, low_precision=False):
  """None when equal: ints and bools exactly, floats within their dtype's tolerance (half's where the kernel computes in
  half or bfloat16: under fast math LLVM may skip a rounding to half that the C code makes)"""
  gl = globals_of(tgp)
  for g in ours:
    a, b = as_array(ours[g], gl[g][0]), as_array(theirs[g], gl[g][0])
    if a.dtype.kind == "f":
      rtol, atol = TOL[np.dtype(np.float16)] if low_precision else TOL[a.dtype]
      if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True): return f"buffer {g}: max diff {np.nanmax(np.abs(a - b))}"
    elif ours[g] != theirs[g]: return f"buffer {g} differs"
  return None

def has_dtype(ast, dt): return any(u.dtype.base.scalar() == dt for u in ast.toposort())

def test_corpus_runs_as_the_clang_build(programs):
  """every program compiled in process runs; its outputs equal the clang build's of the same AST (no opts). clang has no
  __bf16 here, so a bfloat16 kernel's two LLVM builds (no opts, tinygrad's opts) are compared with each other."""
  clang, checked, failed, t0 = tinyc.ClangJITRenderer(), 0, [], time.perf_counter()
  s0 = stats()
  for name, ast in kernel_asts():
    (_, tg, noopt), (_, _, opt) = programs[(name, "noopt")], programs[(name, "opts")]
    assert noopt.lib[:4] == b"\x7fELF" and noopt.lib[16] == 1, name   # ET_REL: a relocatable object
    init = {g: random_bytes(dt, size, np.random.default_rng(1)) for g, (dt, size) in globals_of(tg).items()}
    ours = [run(CompiledRunner(p), tg, init) for p in (noopt, opt)]
    bf16 = has_dtype(ast, tgdtypes.bfloat16)
    ref = ours[1] if bf16 else run(CompiledRunner(get_program(from_tinygrad(ast), clang, opts=[])), tg, init)
    for mode, out in zip(MODES, ours):
      if (err := differs(tg, out, ref, bf16 or has_dtype(ast, tgdtypes.float16))): failed.append((name, mode, err))
    checked += 1
  print(f"\ncorpus compiled by LLVM in process and run == the clang build: {checked - len(failed)}/{checked} kernels x 2 modes, "
        f"{time.perf_counter() - t0:.1f}s (llvm compiles {stats()['llvm_compiles'] - s0['llvm_compiles']})", end="")
  assert not failed, failed

# ---- 2. threads ----

def corpus_ir(programs, n):
  return [tc.src for (_, mode), (_, _, tc) in list(programs.items())[:2 * n] if mode == "opts"]

@pytest.fixture(scope="module")
def rendered():
  """{mode: [(LLVM IR, function name)]} of the corpus' first 100 kernels, rendered by tinyc alone (no compile, no
  tinygrad: test_ir_is_tinygrads holds them to tinygrad's): the sources of the thread, load and memory tests, cheap
  enough for the sanitizer pass"""
  ren, out = tinyc.LLVMRenderer(), {m: [] for m in MODES}
  ren.compiler = None
  for _, ast in kernel_asts()[:100]:
    for mode in MODES:
      p = get_program(from_tinygrad(ast), ren, opts=[] if mode == "noopt" else None)
      out[mode].append((p.src, p.function_name))
  return out

def test_objects_are_tinygrads(programs):
  """the object of tinygrad's CPULLVMCompiler (before its own ELF loader) for the same IR, byte for byte: tinyc's pass
  pipeline is tinygrad's (same passes, options, target machine; verified once instead of after each pass)"""
  from tinygrad.runtime.support.compiler_cpu import CPULLVMCompiler as TgCPULLVMCompiler
  srcs, comp, tg = corpus_ir(programs, 40), tinyc.CPULLVMCompiler(), TgCPULLVMCompiler()
  tg.jit = False   # its compile returns the relocatable object then, as tinyc's lib
  same = sum(comp.compile(s) == tg.compile(s) for s in srcs)
  print(f"\n{same}/{len(srcs)} LLVM objects identical to tinygrad's")
  assert same == len(srcs)

def test_two_threads_compile_the_bytes_of_serial(rendered):
  srcs, comp = [src for src, _ in rendered["opts"][:24]], tinyc.CPULLVMCompiler()
  serial = [comp.compile(s) for s in srcs]
  with ThreadPoolExecutor(2) as ex: parallel = list(ex.map(comp.compile, srcs + srcs[::-1]))
  assert parallel == serial + serial[::-1]

def test_a_failing_thread_does_not_disturb_another(rendered):
  srcs, comp, errors = [src for src, _ in rendered["opts"][:16]], tinyc.CPULLVMCompiler(), []
  serial = [comp.compile(s) for s in srcs]
  def bad():
    for i in range(len(srcs)):
      try: comp.compile(srcs[i].replace("ret void", "ret i32 %nope"))
      except CompileError as e: errors.append(str(e))
  t = threading.Thread(target=bad)
  t.start()
  good = [comp.compile(s) for s in srcs]
  t.join()
  assert good == serial and len(errors) == len(srcs) and all("nope" in e or "ret" in e for e in errors)

# ---- 3. errors ----

def test_bad_ir_raises_compile_error_with_llvms_message():
  comp = tinyc.CPULLVMCompiler()
  with pytest.raises(CompileError, match="expected top-level entity"): comp.compile("this is not IR")
  with pytest.raises(CompileError, match="use of undefined value '%x'"): comp.compile("define void @f() {\n  store i32 %x, ptr null\n  ret void\n}")
  with pytest.raises(TypeError): comp.compile(b"bytes")
  assert comp.compile("define void @f() {\n  ret void\n}")[:4] == b"\x7fELF"   # the thread's state is fine after errors

def test_truncated_or_garbage_object_raises_on_load(rendered):
  src, fname = rendered["noopt"][0]
  lib = tinyc.CPULLVMCompiler().compile(src)
  for cut in (0, 4, 63, 64, 200, len(lib) // 2, len(lib) - 1):
    with pytest.raises(RuntimeError): tinyc.CPUProgram(fname, lib[:cut])
  with pytest.raises(RuntimeError): tinyc.CPUProgram(fname, lib[:64] + bytes(len(lib) - 64))
  with pytest.raises(RuntimeError, match="not found"): tinyc.CPUProgram("no_such_kernel", lib)
  assert tinyc.CPUProgram(fname, lib) is not None

# ---- 4. across processes ----

def test_pickled_llvm_runner_runs_in_spawned_process_without_compiling(programs, monkeypatch):
  _, tg, tc = programs[("matmul/3", "opts")]
  runner = CompiledRunner(tc)
  init = {g: random_bytes(dt, size, np.random.default_rng(3)) for g, (dt, size) in globals_of(tg).items()}
  ours = run(runner, tg, init)
  inits = [(init[g], Buffer("CPU", 1, globals_of(tg)[g][0]).dtype) for g in tg.globals]
  monkeypatch.setenv("ASSERT_COMPILE", "1")
  with multiprocessing.get_context("spawn").Pool(1) as pool:
    outs, before, after, pid = pool.apply(child.run_pickled, (pickle.dumps(tc), pickle.dumps(runner), inits))
  assert pid != os.getpid() and after["compiles"] == after["llvm_compiles"] == after["clang_runs"] == 0
  assert after["programs_loaded"] - before["programs_loaded"] == 2
  for out in outs: assert {g: out[i] for i, g in enumerate(tg.globals) if g in tg.outs} == ours

# ---- 5. selection, settings, memory ----

def device_pair(**env):
  code = "import tinyc; d = tinyc.Device['CPU']; print(type(d.renderer).__name__, type(d.compiler).__name__, d.compiler.cachekey)"
  e = {k: v for k, v in os.environ.items() if k not in ("CPU_LLVM", "CPU_CC")}
  out = subprocess.run([sys.executable, "-c", code], env={**e, **env}, capture_output=True, text=True, check=True).stdout
  return out.split()

def test_selection_as_tinygrad():
  assert device_pair()[:2] == ["ClangJITRenderer", "ClangCompiler"]
  for env in ({"CPU_LLVM": "1"}, {"CPU_CC": "LLVM"}):
    ren, comp, key = device_pair(**env)
    assert (ren, comp) == ("LLVMRenderer", "CPULLVMCompiler") and key.startswith("compile_llvm_"), env
  assert device_pair(CPU_LLVM="0")[0] == "ClangJITRenderer"

END_TO_END = """
import sys; sys.path.insert(0, sys.argv[1])
import corpus, tinyc
from tinyc.tinygrad import from_tinygrad
from tinyc.codegen import get_program
p = get_program(from_tinygrad(dict(corpus.kernel_asts())["matmul/3"]), tinyc.Device["CPU"].renderer)
tinyc.CompiledRunner(p)
print(p.lib[16], tinyc._C.compile_stats()["llvm_compiles"], tinyc._C.compile_stats()["clang_runs"])
"""

def test_cpu_llvm_compiles_and_loads_through_the_device(tmp_path):
  env = {**os.environ, "CPU_LLVM": "1", "TINYC_CACHEDB": str(tmp_path / "cache.db")}
  out = subprocess.run([sys.executable, "-c", END_TO_END, os.path.dirname(__file__)], env=env, capture_output=True, text=True, check=True)
  assert out.stdout.split() == ["1", "1", "0"]   # ET_REL, one LLVM compile, no clang

def test_renderer_settings_are_tinygrads():
  tg, tc = TgLLVMRenderer(), tinyc.LLVMRenderer()
  for attr in ("device", "supports_float4", "has_local", "has_threads", "global_max", "abi"):
    assert getattr(tg, attr) == getattr(tc, attr), attr
  assert [o.name for o in tg.code_for_op] == [o.name for o in tc.code_for_op]
  assert isinstance(tc.compiler, tinyc.CPULLVMCompiler) and issubclass(tinyc.CPULLVMCompiler, tinyc.LLVMCompiler)
  comp = tinyc.CPULLVMCompiler()
  assert comp.cachekey == f"compile_llvm_{comp.processor}_{comp.feats}_jit_opt"
  assert pickle.loads(pickle.dumps(tc)).render([]) == tc.render([]) == TgLLVMRenderer().render([])
  with pytest.raises(TypeError): tc.render([1, 2])
  with pytest.raises(TypeError): tc.render(None)
  from tinyc.renderer.llvmir import LLVMRenderer
  assert LLVMRenderer is tinyc.LLVMRenderer
  class Win(tinyc.LLVMRenderer): abi = "win64cc"
  class TgWin(TgLLVMRenderer): abi = "win64cc"
  assert Win().render([]) == TgWin().render([]) and "define win64cc void" in Win().render([])
  class Bad(tinyc.LLVMRenderer): abi = 3
  with pytest.raises(TypeError): Bad().render([])

def test_malformed_uops_raise_never_crash():
  """what tinygrad's LLVMRenderer cannot render raises (its KeyErrors and unmatched patterns as RuntimeError here)"""
  from tinyc import UOp, Ops, dtypes
  ren, i32, f32 = tinyc.LLVMRenderer(), dtypes.int32, dtypes.float32
  g = UOp(Ops.DEFINE_GLOBAL, f32.ptr(16), (), 0)
  c, x = UOp.const(i32, 1), UOp.const(f32, 2.0)
  bad = [
    [c, UOp(Ops.ADD, i32, (c,))],                                     # a binary op with one source
    [g, UOp(Ops.GEP, f32, (g,), "not a tuple")],                       # a GEP whose arg is not a tuple
    [g, UOp(Ops.INDEX, f32, (g, c))],                                 # an INDEX that is no pointer
    [g, c, UOp(Ops.STORE, dtypes.void, (g,))],                        # a STORE without its value
    [c, UOp(Ops.RANGE, i32, (c,), "bad")],                            # a RANGE whose arg is not its ids
    [x, UOp(Ops.MAX, f32, (x, x))],                                   # MAX: not in tinygrad's op tables
    [c, UOp(Ops.FDIV, i32, (c, c))],                                  # FDIV of ints: no entry either
    [UOp(Ops.ADD, i32, (c, c))],                                      # a source never rendered
    [UOp(Ops.DEFINE_VAR, i32, (), "n")],                              # a DEFINE_VAR whose arg is not (name, lo, hi)
    [UOp(Ops.DEFINE_GLOBAL, dtypes.index.ptr(4), (), 0)],             # index: LLVM has no type for it
    [x, UOp(Ops.WMMA, f32, (x, x, x), ())],                           # AMX: not rendered by tinyc
  ]
  for uops in bad:
    with pytest.raises((RuntimeError, TypeError, NotImplementedError)): ren.render(uops)
  inf = ren.render([g, UOp.const(f32, float("inf")), UOp.const(f32, float("nan"))])
  assert inf == TgLLVMRenderer().render([]).replace("@test()", "@test(float* noalias align 32 %data0)")

CONSTS = [(dt, v) for dt in ("float32", "float16", "float64", "bfloat16")
          for v in (0.1, -2.5, 1e-5, 3.0, 65504.0, 1e39, float("inf"), float("-inf"), float("nan"))] + \
         [("int32", -7), ("int64", -2**40), ("uint32", 2**32 - 1), ("uint8", 255), ("int8", -128), ("bool", True), ("bool", False)]

@pytest.mark.parametrize("dt,v", CONSTS)
def test_constants_render_as_tinygrads(dt, v):
  """lconst: truncated float reprs, inf/nan as the hex of the double, ints and bools as ints; in stores, vectors, casts.
  (No -0.0: a UOp const of -0.0 is the interned 0.0 node, in tinygrad as in tinyc, once 0.0 has been made.)"""
  from tinyc import UOp, Ops, dtypes
  from tinyc.tinygrad import to_tinygrad
  d = getattr(dtypes, dt)
  g = UOp(Ops.DEFINE_GLOBAL, d.ptr(16), (), 0)
  c, k = UOp.const(dtypes.int32, 0), UOp.const(d, v)
  vec = UOp(Ops.VECTORIZE, d.vec(4), (k, k, k, k))
  uops = [g, c, k, UOp(Ops.INDEX, d.ptr(16), (g, c)), vec]
  uops += [UOp(Ops.STORE, dtypes.void, (uops[3], k)), UOp(Ops.CAST, dtypes.bool, (k,)), UOp(Ops.CAST, dtypes.float32, (k,))]
  uops += [UOp(Ops.STORE, dtypes.void, (UOp(Ops.CAST, d.vec(4).ptr(4), (uops[3],)), vec))]
  uops.insert(-1, uops[-1].src[0])
  assert tinyc.LLVMRenderer().render(uops) == TgLLVMRenderer().render([to_tinygrad(u) for u in uops])

def test_compiling_and_loading_leaves_memory_flat(rendered):
  """200 compiles + loads to warm up (contexts are replaced every 64 compiles of a thread), then 200 more: RSS flat"""
  items = rendered["noopt"]
  comp = tinyc.CPULLVMCompiler()
  def rounds(n):
    for i in range(n):
      src, fname = items[i % len(items)]
      prg = tinyc.CPUProgram(fname, comp.compile(src))
      del prg
  rounds(200)
  gc.collect()
  before = rss()
  rounds(200)
  gc.collect()
  grew = rss() - before
  print(f"\n200 LLVM compiles + JIT loads after warm-up: RSS grew {grew / 2**20:.1f} MiB", end="")
  assert grew < 4 * 2**20 + RSS_SLACK
