"""The device table: CPU and NULL open through one registry and are driven through their C tables (allocator, program,
synchronize, renderer/compiler pairs); Device.DEFAULT and is_dtype_supported are chosen from the environment as
tinygrad 0.12.0 chooses them, checked in fresh processes against tinygrad run in the same environment."""
import json, os, pickle, subprocess, sys
import numpy as np
import pytest
import tinyc
from tinyc import UOp, Ops, AxisType, Buffer, Device, CompiledRunner, dtypes
from tinyc.codegen import get_program
from tinygrad.device import Device as TGDevice
from tinygrad.runtime.ops_null import NullRenderer as TGNullRenderer
from tinygrad.renderer.cstyle import CStyleLanguage as TGCStyleLanguage

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def add_mul_ast(n=16):
  """out[i] = a[i] * b[i] + 1"""
  glb = lambda i: UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(n), arg=i)
  out, a, b = glb(0), glb(1), glb(2)
  i = UOp.range(UOp.const(dtypes.index, n), 0, AxisType.LOOP)
  return UOp.sink(out.index(i, ptr=True).store(a.index(i) * b.index(i) + 1.0).end(i))

def test_cpu_and_null_open_through_the_table():
  cpu, null = Device["CPU"], Device["NULL"]
  assert type(cpu) is tinyc.CPUDevice and type(null) is tinyc.NullDevice and Device["null"] is null and Device["NULL:0"] is null
  assert cpu.device == "CPU" and null.device == "NULL" and {"CPU", "NULL"} <= set(Device)
  assert cpu.renderer is cpu.renderer and cpu.renderer.compiler is cpu.compiler and isinstance(cpu.compiler, tinyc.ClangCompiler)
  # NULL: tinygrad's CompilerPair(NullRenderer, Compiler): a renderer without a compiler, the base Compiler beside it
  tg = TGDevice["NULL"]
  assert type(null.renderer) is tinyc.NullRenderer and null.renderer.compiler is None is tg.renderer.compiler
  assert type(null.compiler) is tinyc.Compiler and type(tg.compiler).__name__ == "Compiler" and null.compiler is null.compiler
  assert null.compiler.compile("int x;") == tg.compiler.compile("int x;") == b"int x;" and null.compiler.cachekey is None
  assert null.runtime is tinyc.NullProgram and cpu.runtime is tinyc.CPUProgram
  assert isinstance(null.allocator, tinyc.Allocator) and null.allocator.device == "NULL"
  assert null.synchronize() is None and cpu.synchronize() is None

def test_null_renderer_settings_are_tinygrads():
  r = tinyc.NullRenderer()
  for attr in ("device", "has_local", "float4", "barrier"): assert getattr(r, attr) == getattr(TGNullRenderer, attr), attr
  # code_for_op is its base's plus THREEFRY and MAX, as tinygrad's (whose base is CStyleLanguage)
  extra = lambda ops, base: sorted(o.name for o in ops if o not in base)
  assert extra(r.code_for_op, tinyc.CStyleLanguage.code_for_op) == extra(TGNullRenderer.code_for_op, TGCStyleLanguage.code_for_op) == ["MAX", "THREEFRY"]
  from tinygrad.uop.ops import Ops as TGOps
  from tinygrad import dtypes as tgdtypes
  for op in ("MAX", "THREEFRY"):
    assert r.code_for_op[getattr(Ops, op)]("a", "b", dtypes.uint) == TGNullRenderer.code_for_op[getattr(TGOps, op)]("a", "b", tgdtypes.uint)
  assert pickle.loads(pickle.dumps(r)).device == "NULL"

def test_null_program_runs_and_does_nothing():
  p = get_program(add_mul_ast(), Device["NULL"].renderer)
  assert p.device == "NULL" and p.lib is None                          # no compiler in the renderer: no BINARY
  s0 = tinyc._C.compile_stats()
  r = CompiledRunner(p)
  s1 = tinyc._C.compile_stats()
  assert r.p.lib == p.src.encode() and s1["clang_runs"] == s0["clang_runs"] and s1["programs_loaded"] == s0["programs_loaded"] + 1
  bufs = [Buffer("NULL", 16, dtypes.float).allocate().copyin(memoryview(np.full(16, k, np.float32))) for k in (5, 2, 3)]
  assert r(bufs, wait=True) == 1e-3                                     # tinygrad's NullProgram's time
  assert r(bufs) is None and r.first_run is False
  for b in bufs:                                                       # nothing ran, nothing is held: copyout leaves dst as it was
    dst = bytearray(b"\xab" * 64)
    b.copyout(memoryview(dst))
    assert dst == bytearray(b"\xab" * 64)
  prg = tinyc.NullProgram("anything", b"not even code")
  assert prg(*bufs, global_size=(4, 1, 1), local_size=(2, 1, 1), vals=(1,), wait=True) == 1e-3 and repr(prg) == "<NullProgram anything>"
  r2 = pickle.loads(pickle.dumps(r))
  assert r2(bufs, wait=True) == 1e-3 and r2.p.lib == r.p.lib

def test_null_buffer_holds_nothing():
  b = Buffer("NULL", 8, dtypes.int32)
  assert not b.is_allocated() and b.allocate() is b and b.is_allocated() and b.allocator is Device["NULL"].allocator
  assert b.copyin(memoryview(np.arange(8, dtype=np.int32))) is b
  assert bytes(b.as_buffer()) == bytes(32) == bytes(b.as_buffer(allow_zero_copy=True))   # a copy of nothing: zeros
  with pytest.raises(AssertionError, match="force zero copy"): b.as_buffer(force_zero_copy=True)
  with pytest.raises(BufferError, match="NULL memory is not host-visible"): b.numpy()
  with pytest.raises(BufferError, match="not host-visible"): memoryview(b)
  with pytest.raises(BufferError): np.frombuffer(b, np.int32)
  c = pickle.loads(pickle.dumps(b))
  assert c.device == "NULL" and c.is_allocated() and bytes(c.as_buffer()) == bytes(32)
  assert Buffer("NULL", 0, dtypes.float).allocate().is_allocated()
  assert Buffer.from_numpy(np.ones(3, np.float32), device="NULL").device == "NULL"
  b.deallocate()
  assert not b.is_allocated()
  with pytest.raises(RuntimeError, match="unallocated"): b.copyin(memoryview(bytearray(32)))

def test_copies_of_wrong_size_dtype_or_device_raise():
  for dev in ("CPU", "NULL"):
    b = Buffer(dev, 4, dtypes.float).allocate()
    with pytest.raises(ValueError, match="size mismatch"): b.copyin(memoryview(bytearray(12)))
    with pytest.raises(ValueError, match="size mismatch"): b.copyout(memoryview(bytearray(20)))
    with pytest.raises(BufferError, match="not writable"): b.copyout(b"\0" * 16)
  cpu_r = CompiledRunner(get_program(add_mul_ast(), Device["CPU"].renderer))
  null_r = CompiledRunner(get_program(add_mul_ast(), Device["NULL"].renderer))
  on = lambda dev, dt=dtypes.float: [Buffer(dev, 16, dt).allocate() for _ in range(3)]
  assert cpu_r(on("CPU"), wait=True) >= 0 and null_r(on("NULL"), wait=True) == 1e-3
  with pytest.raises(ValueError, match=r"rawbufs\[0\] is on device NULL, the kernel runs on CPU"): cpu_r(on("NULL"))
  with pytest.raises(ValueError, match=r"rawbufs\[0\] is on device CPU, the kernel runs on NULL"): null_r(on("CPU"))
  with pytest.raises(TypeError, match=r"rawbufs\[0\] has dtype int"): null_r(on("NULL", dtypes.int32))
  with pytest.raises(ValueError, match=r"rawbufs\[0\] has size 8"): null_r([Buffer("NULL", 8, dtypes.float).allocate()] + on("NULL")[1:])
  # the programs themselves refuse another device's buffers (a CPU kernel must never see a NULL token as memory)
  with pytest.raises(ValueError, match="buffer 1 is on NULL, the program runs on CPU"): cpu_r._prg(*on("CPU")[:1], *on("NULL")[:2])
  with pytest.raises(ValueError, match="buffer 0 is on CPU, the program runs on NULL"): null_r._prg(*on("CPU"))
  with pytest.raises(ValueError, match="is on CPU:1"): cpu_r._prg(Buffer("CPU:1", 16, dtypes.float).allocate(), *on("CPU")[1:])
  with pytest.raises(ValueError, match="global_size"): null_r._prg(*on("NULL"), global_size=(1, 2, 3, 4))
  with pytest.raises(ValueError, match="local_size"): null_r._prg(*on("NULL"), local_size=(-1,))

def test_unknown_devices_name_themselves():
  with pytest.raises(RuntimeError, match=r"unknown device 'NOPE' \(tinyc has: CPU, NULL, PYTHON\)"): Device["NOPE"]
  with pytest.raises(RuntimeError, match="tinyc has no CUDA device"): Device["cuda:1"]
  with pytest.raises(RuntimeError, match="METAL"): Buffer("METAL", 4, dtypes.float).allocate()
  assert Device.canonicalize(None) == Device.DEFAULT and Device.default is Device[Device.DEFAULT]

def test_repeated_calls_leave_memory_flat():
  import gc, tracemalloc
  null_r = CompiledRunner(get_program(add_mul_ast(), Device["NULL"].renderer))
  cpu_r = CompiledRunner(get_program(add_mul_ast(), Device["CPU"].renderer))
  nb, cb = [Buffer("NULL", 16, dtypes.float).allocate() for _ in range(3)], [Buffer("CPU", 16, dtypes.float).allocate() for _ in range(3)]
  data = memoryview(bytearray(64))
  def work():
    null_r(nb, wait=True); cpu_r(cb)
    b = Buffer("NULL", 16, dtypes.float).allocate().copyin(data)
    b.copyout(data); b.as_buffer()
    tinyc.NullProgram("k", b"x")(*nb, global_size=(2, 1, 1), wait=True)
    Device["NULL"].renderer; Device["NULL"].compiler; Device["CPU"].compiler; Device.DEFAULT
    tinyc._C.is_dtype_supported(dtypes.half)
    for bad in (lambda: cpu_r(nb), lambda: null_r(cb), lambda: b.numpy(), lambda: Device["NOPE"], lambda: cpu_r._prg(*nb),
                lambda: b.as_buffer(force_zero_copy=True)):
      try: bad()
      except (ValueError, BufferError, RuntimeError, AssertionError): pass
  for _ in range(1500): work()   # long enough for the interpreter's free lists to settle (they grow a while under PYTHONMALLOC=malloc)
  gc.collect()
  tracemalloc.start()
  snap = tracemalloc.take_snapshot()
  for _ in range(1500): work()
  gc.collect()
  grown = sum(st.size_diff for st in tracemalloc.take_snapshot().compare_to(snap, "filename"))
  tracemalloc.stop()
  assert grown < 64 * 1024, f"python memory grew by {grown} bytes"

# ---- Device.DEFAULT, is_dtype_supported and the compiler pairs, in fresh processes (the environment is read once) ----

DEVICE_VARS = ["AMD", "CL", "CPU", "CUDA", "DSP", "HIP", "METAL", "NULL", "NV", "PYTHON", "QCOM", "WEBGPU", "DISK", "NPY", "TINYFS",
               "DEV", "CPU_CC", "CPU_LLVM", "CPU_LVP", "EMULATE"]
DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64",
          "fp8e4m3", "fp8e5m2", "index"]

CHILD = """
import json, os, sys
out = {}
def attempt(key, fn):
  try: out[key] = fn()
  except Exception as e: out[key] = ["raised", type(e).__name__, str(e)]
import tinyc
from tinyc.device import Device, is_dtype_supported
attempt("default", lambda: Device.DEFAULT)
dev = os.environ.get("DEV")
os.environ["DEV"] = "PYTHON"                      # read once: a later change is not seen
attempt("default_again", lambda: Device.DEFAULT)
if dev is None: del os.environ["DEV"]
else: os.environ["DEV"] = dev
attempt("env_cpu", lambda: os.environ.get("CPU"))
attempt("opened", lambda: Device.default.device)
attempt("supported", lambda: [is_dtype_supported(getattr(tinyc.dtypes, n)) for n in DTYPES])
attempt("cpu_renderer", lambda: type(Device["CPU"].renderer).__name__)
attempt("null", lambda: type(Device["NULL"].renderer).__name__)
if ORACLE:
  from tinygrad.device import Device as TGDevice, is_dtype_supported as tg_supported
  from tinygrad import dtypes as tgdtypes
  attempt("tg_default", lambda: TGDevice.DEFAULT)
  attempt("tg_supported", lambda: [tg_supported(getattr(tgdtypes, n)) for n in DTYPES])
print(json.dumps(out))
"""

def in_child(oracle=True, **env):
  base = {k: v for k, v in os.environ.items() if k not in DEVICE_VARS}
  base["PYTHONPATH"] = ROOT + os.pathsep + base.get("PYTHONPATH", "")
  code = f"DTYPES = {DTYPES!r}\nORACLE = {oracle!r}\n" + CHILD
  res = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, timeout=300)
  assert res.returncode == 0, res.stderr
  return json.loads(res.stdout.strip().splitlines()[-1])

def raised(v, kind, *words): return isinstance(v, list) and v[:2] == ["raised", kind] and all(w in v[2] for w in words)

@pytest.mark.parametrize("env, default", [({"DEV": "null"}, "NULL"), ({"DEV": "CPU"}, "CPU"), ({"CPU": "1"}, "CPU"), ({"NULL": "1"}, "NULL"),
                                          ({"NULL": "1", "DEV": "null"}, "NULL"), ({"CPU": "1", "CUDA": "2"}, "CPU")])
def test_default_from_the_environment(env, default):
  r = in_child(**env)
  assert r["default"] == r["default_again"] == r["tg_default"] == default and r["opened"] == default
  assert r["supported"] == r["tg_supported"]
  assert r["cpu_renderer"] == "ClangJITRenderer" and r["null"] == "NullRenderer"

@pytest.mark.parametrize("env, names", [({"CPU": "1", "NULL": "1"}, ("CPU", "NULL")), ({"DEV": "CPU", "NULL": "1"}, ("CPU", "NULL")),
                                        ({"CUDA": "1", "METAL": "1"}, ("CUDA", "METAL"))])
def test_two_devices_set_is_an_assertion(env, names):
  r = in_child(**env)
  for key in ("default", "supported", "tg_default", "tg_supported"):
    assert raised(r[key], "AssertionError", "multiple devices set in env", *names), (key, r[key])

@pytest.mark.parametrize("dev", ["CUDA", "METAL", "HIP"])
def test_device_that_cannot_open(dev):
  """tinygrad's name selects the default even where tinyc can't open it; opening it is a clear error naming it"""
  r = in_child(**{dev: "1"})
  assert r["default"] == r["tg_default"] == dev and r["supported"] == r["tg_supported"]
  assert raised(r["opened"], "RuntimeError", f"tinyc has no {dev} device", "CPU, NULL, PYTHON")

def test_unknown_dev_name():
  r = in_child(DEV="nope")
  assert r["default"] == r["tg_default"] == "NOPE" and r["supported"] == r["tg_supported"]
  assert raised(r["opened"], "RuntimeError", "unknown device 'NOPE'")

def test_default_is_the_first_device_that_opens():
  """no variable: the first of tinygrad's ALL_DEVICES that opens (CPU here), written back to os.environ as tinygrad does"""
  r = in_child()
  assert r["default"] == r["default_again"] == r["opened"] == "CPU" and r["env_cpu"] == "1"
  assert r["tg_default"] == "CPU" and r["supported"] == r["tg_supported"]

def test_compiler_pair_choice():
  """CPU_CC names a pair of the CPU's CompilerSet by tinygrad's name (CPU_LLVM=1 forces its pair); one tinyc has not
  (LVP) is tinygrad's KeyError"""
  assert in_child(oracle=False, CPU_CC="CLANGJIT")["cpu_renderer"] == "ClangJITRenderer"
  assert in_child(oracle=False, CPU_CC="LLVM")["cpu_renderer"] == "LLVMRenderer"
  assert in_child(oracle=False, CPU_LLVM="1")["cpu_renderer"] == "LLVMRenderer"
  assert raised(in_child(oracle=False, CPU_CC="LVP")["cpu_renderer"], "KeyError", "CPU_CC=LVP", "CPU", "CLANGJIT, LLVM")
  assert in_child(oracle=False, CPU_LLVM="0")["cpu_renderer"] == "ClangJITRenderer"
  assert raised(in_child(oracle=False, EMULATE="AMD")["null"], "RuntimeError", "EMULATE", "AMD")

def test_null_renders_the_corpus_as_tinygrads_null_renderer():
  """NullRenderer is a CStyleLanguage (settings on the one render loop): every corpus kernel renders as tinygrad's"""
  import corpus
  from tinyc.tinygrad import from_tinygrad
  from tinygrad.codegen import get_program as tg_get_program
  from tinygrad.helpers import Context
  from tinygrad.runtime.ops_null import NullRenderer as TGNullRenderer
  import re
  unnumbered = lambda src: re.sub(r"void (\w+?)(n\d+)?\(", r"void \1(", src)   # the repeat count a kernel name gets in each library
  asts = corpus.kernel_asts()
  with Context(NOOPT=1): want = [unnumbered(tg_get_program(ast, TGNullRenderer()).src) for _, ast in asts]
  got = [unnumbered(get_program(from_tinygrad(ast), Device["NULL"].renderer, opts=[]).src) for _, ast in asts]   # opts=[]: NOOPT
  assert sum(g == w for g, w in zip(got, want)) == len(asts) == 115
