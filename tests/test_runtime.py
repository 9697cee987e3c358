"""The CPU device side: Buffer, Device, Compiler/ClangCompiler with the SQLite compile cache, CPUProgram, CompiledRunner.

Kernels of the shared corpus are rendered by tinygrad (get_program with its ClangRenderer), then run twice on the same
random inputs: by tinyc (tinyc.CompiledRunner: tinyc's clang compile, memfd+dlopen load, launch) and by tinygrad's own
CompiledRunner on its CPU device (the oracle). Outputs must match: exactly for ints and bools, closely for floats."""
import gc, multiprocessing, os, pickle, sqlite3, tracemalloc, uuid
import numpy as np
import pytest
import tinyc
from tinyc import Buffer, Device, CompiledRunner, CompileError, dtypes
from tinygrad.codegen import get_program
from tinygrad.renderer.cstyle import ClangRenderer as TGClangRenderer
from tinygrad.device import Buffer as TGBuffer
from tinygrad.engine.realize import CompiledRunner as TGCompiledRunner
from tinygrad.dtype import _to_np_dtype, dtypes as tgdtypes
from tinygrad.uop.ops import Ops
from corpus import kernel_asts
from sanitizer import rss, RSS_SLACK

stats = tinyc._C.compile_stats

# one kernel per kind: threefry (uint), reduces, 2 threads (matmul_big/4), casts to every output dtype, ints, bools,
# symbolic vars, transcendental and gated loads (no bfloat16 kernel: clang 14 has no __bf16 on x86, for tinygrad neither)
KERNELS = ["matmul/1", "matmul/3", "matmul_big/4", "conv2d_stride_pad/4", "softmax/4", "argmax/3", "cumsum/2", "gather/2",
           "cast_half/2", "cast_int8/2", "cast_uint32/2", "cast_float64/2", "int_math/0", "bool_ops/6",
           "arange_reduce/0", "symbolic_sum/2", "symbolic_elementwise/2", "exp_log/4", "where_cmp/6"]
VAR_VALS = {"n": 10}

pytestmark = pytest.mark.usefixtures("cache_db")   # every test of this file compiles into its own cache file (conftest.py)

@pytest.fixture(scope="module")
def programs():
  asts = dict(kernel_asts())
  return {name: get_program(asts[name], TGClangRenderer()) for name in KERNELS}

def globals_of(p):
  """DEFINE_GLOBAL arg -> (tinygrad dtype, size)"""
  return {u.arg: (u.dtype.base, u.dtype.size) for u in p.uops if u.op is Ops.DEFINE_GLOBAL}

def random_bytes(dt, size, rng) -> bytes:
  if dt == tgdtypes.bfloat16: return (rng.random(size, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
  npdt = np.dtype(_to_np_dtype(dt))
  if npdt.kind == "f": return rng.random(size).astype(npdt).tobytes()
  if npdt.kind == "b": return (rng.random(size) < 0.5).tobytes()
  lo, hi = (0, 50) if npdt.kind == "u" else (-20, 20)
  return rng.integers(lo, hi, size).astype(npdt).tobytes()

def as_array(raw: bytes, dt):
  if dt == tgdtypes.bfloat16: return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
  return np.frombuffer(raw, _to_np_dtype(dt))

def run_both(p, seed=0):
  """(tinyc outputs, tinygrad outputs) for the kernel on the same random buffers: {global index: bytes}"""
  rng = np.random.default_rng(seed)
  gl = globals_of(p)
  init = {g: random_bytes(gl[g][0], gl[g][1], rng) for g in p.globals}
  ours = [Buffer("CPU", gl[g][1], gl[g][0]).allocate().copyin(memoryview(bytearray(init[g]))) for g in p.globals]
  theirs = [TGBuffer("CPU", gl[g][1], gl[g][0]).allocate().copyin(memoryview(bytearray(init[g]))) for g in p.globals]
  t = CompiledRunner(p)(ours, VAR_VALS if p.vars else None, wait=True)
  assert isinstance(t, float) and t >= 0
  TGCompiledRunner(p)(theirs, VAR_VALS if p.vars else None, wait=True)
  return ({g: bytes(ours[i].as_buffer()) for i, g in enumerate(p.globals) if g in p.outs},
          {g: bytes(theirs[i].as_buffer()) for i, g in enumerate(p.globals) if g in p.outs})

def test_corpus_kernels_match_tinygrad(programs):
  ok = 0
  for name, p in programs.items():
    ours, theirs = run_both(p)
    gl = globals_of(p)
    for g in ours:
      a, b = as_array(ours[g], gl[g][0]), as_array(theirs[g], gl[g][0])
      if np.dtype(a.dtype).kind == "f": np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=name)
      else: assert ours[g] == theirs[g], name
    ok += 1
  print(f"corpus kernels equal to tinygrad's on CPU: {ok}/{len(programs)}")
  assert ok == len(programs)

def test_device():
  dev = Device["CPU"]
  assert Device["cpu"] is dev and Device["CPU:0"] is dev and Device.DEFAULT == "CPU"
  assert isinstance(dev.renderer, tinyc.ClangRenderer) and dev.renderer.compiler is dev.compiler
  assert isinstance(dev.compiler, tinyc.ClangCompiler) and isinstance(dev.compiler, tinyc.Compiler)
  assert dev.runtime is tinyc.CPUProgram and isinstance(dev.allocator, tinyc.Allocator)
  assert dev.synchronize() is None
  with pytest.raises(RuntimeError, match="NOPE"): Device["NOPE"]

def test_renderer_signature_matches(programs):
  """tinyc's ClangRenderer writes the calling convention the CPU runtime assumes: buffers, then vars, then core_id"""
  from tinyc.tinygrad import from_tinygrad
  same = [name for name, p in programs.items() if tinyc.ClangRenderer().render([from_tinygrad(u) for u in p.uops]) == p.src]
  print(f"tinyc ClangRenderer text == tinygrad's for the runtime kernels: {len(same)}/{len(programs)}")
  assert len(same) == len(programs)

def test_buffer():
  b = Buffer("CPU", 6, dtypes.int32)
  assert not b.is_allocated() and b.size == 6 and b.nbytes == 24 and b.dtype is dtypes.int32 and b.device == "CPU"
  assert b.ensure_allocated() is b and b.is_allocated()
  b.copyin(memoryview(np.arange(6, dtype=np.int32)))
  arr = b.numpy()
  assert arr.dtype == np.int32 and arr.tolist() == list(range(6))
  arr[0] = 42                                              # zero copy: the array is the buffer's memory
  assert b.as_buffer().cast("i")[0] == 42 and memoryview(b).cast("B").cast("i")[0] == 42
  assert np.frombuffer(b, np.int32)[0] == 42               # the buffer protocol
  out = bytearray(24)
  assert b.copyout(memoryview(out)) is not None and np.frombuffer(out, np.int32)[0] == 42
  with pytest.raises(BufferError): b.deallocate()          # the numpy view keeps the memory
  del arr
  gc.collect()
  c = Buffer.from_numpy(np.linspace(0, 1, 7, dtype=np.float64))
  assert c.dtype is dtypes.float64 and c.size == 7 and np.allclose(c.numpy(), np.linspace(0, 1, 7))
  d = pickle.loads(pickle.dumps(c))
  assert d.numpy().tolist() == c.numpy().tolist() and d.dtype is c.dtype
  assert Buffer("CPU", 3, dtypes.half).allocate().numpy().dtype == np.float16
  b.deallocate()
  assert not b.is_allocated()

def test_buffer_bad_input():
  with pytest.raises(ValueError, match="-1"): Buffer("CPU", -1, dtypes.float)
  with pytest.raises((TypeError, ValueError)): Buffer("CPU", 4, "notadtype")
  with pytest.raises(TypeError, match="scalar"): Buffer("CPU", 4, dtypes.float.ptr(4))
  with pytest.raises(TypeError, match="scalar"): Buffer("CPU", 4, dtypes.float.vec(4))
  with pytest.raises(TypeError, match="pointer"): Buffer("CPU", 4, tgdtypes.float.ptr(4))
  assert Buffer("CPU", 4, tgdtypes.uint32).dtype is dtypes.uint32
  with pytest.raises(TypeError): Buffer(1, 4, dtypes.float)
  b = Buffer("CPU", 4, dtypes.float)
  with pytest.raises(RuntimeError, match="unallocated"): b.copyin(memoryview(bytearray(16)))
  with pytest.raises(BufferError): memoryview(b)
  b.allocate()
  with pytest.raises(RuntimeError, match="already allocated"): b.allocate()
  with pytest.raises(ValueError, match="len\\(mv\\)=12 != nbytes=16"): b.copyin(memoryview(bytearray(12)))
  with pytest.raises(ValueError, match="size mismatch"): b.copyout(memoryview(bytearray(20)))
  with pytest.raises(BufferError, match="not writable"): b.copyout(b"\0" * 16)
  with pytest.raises(TypeError, match="bfloat16|__bf16"): Buffer("CPU", 2, dtypes.bfloat16).allocate().numpy()
  with pytest.raises(TypeError, match="complex"): Buffer.from_numpy(np.zeros(3, np.complex64))
  with pytest.raises(RuntimeError, match="unknown device"): Buffer("GPU9", 4, dtypes.float).allocate()

def test_compile_errors():
  comp = Device["CPU"].compiler
  with pytest.raises(CompileError, match="error") as e: comp.compile("void f(int core_id) { undeclared_thing += 1; }")
  assert isinstance(e.value, RuntimeError) and "undeclared_thing" in str(e.value)
  with pytest.raises(TypeError): comp.compile(b"bytes")
  with pytest.raises(TypeError): comp.compile_cached(None)
  old = os.environ.get("CC")
  os.environ["CC"] = "/nonexistent/clang"
  try:
    with pytest.raises(CompileError, match="could not run /nonexistent/clang"): tinyc.ClangCompiler().compile("void f(void) {}")
  finally:
    if old is None: del os.environ["CC"]
    else: os.environ["CC"] = old
  assert tinyc.Compiler().compile("abc") == b"abc" and tinyc.Compiler("k").cachekey == "k"

def test_clang_object_compiler_is_tinygrads_clang_step():
  """ClangObjectCompiler runs tinygrad ClangJITCompiler's clang command: its object, through tinygrad's jit_loader, is
  the lib tinygrad's compiler returns, for every kernel of the list; a failure raises CompileError with clang's log"""
  from tinygrad.runtime.support.compiler_cpu import ClangJITCompiler
  from tinygrad.runtime.support.elf import jit_loader
  asts, comp, tg = dict(kernel_asts()), tinyc.ClangObjectCompiler(), ClangJITCompiler()
  assert comp.cachekey == "compile_clang_obj" and tinyc.ClangObjectCompiler("k").cachekey == "k"
  for name in KERNELS[:6]:
    src = get_program(asts[name], TGClangRenderer()).src
    obj = comp.compile(src)
    assert obj[:4] == b"\x7fELF" and jit_loader(obj) == tg.compile(src), name
  with pytest.raises(CompileError, match="undeclared_thing"): comp.compile("void f(void) { undeclared_thing += 1; }")
  with pytest.raises(TypeError, match="as str"): comp.compile(b"void f(void) {}")

def test_program_bad_input():
  lib = Device["CPU"].compiler.compile("void k(float *a, int core_id) { a[core_id] = 1.0f; }")
  assert "<k>" in Device["CPU"].compiler.disassemble(lib)
  with pytest.raises(RuntimeError, match="not an ELF"): tinyc.CPUProgram("k", b"\x00" * 100)
  with pytest.raises(RuntimeError, match="can't load"): tinyc.CPUProgram("k", lib[:200])       # a truncated object
  with pytest.raises(RuntimeError, match="no function 'nope'"): tinyc.CPUProgram("nope", lib)
  prg = tinyc.CPUProgram("k", lib)
  a = Buffer("CPU", 4, dtypes.float).allocate()
  prg(a, global_size=(4, 1, 1))
  assert a.numpy().tolist() == [1.0] * 4                    # one thread per core_id
  with pytest.raises(TypeError, match="Buffer"): prg(123)
  with pytest.raises(RuntimeError, match="not allocated"): prg(Buffer("CPU", 4, dtypes.float))
  with pytest.raises(OverflowError): prg(a, vals=(2**40,))
  with pytest.raises(ValueError, match="global_size"): prg(a, global_size=(0, 1, 1))

def test_runner_bad_input(programs):
  p = programs["symbolic_sum/2"]                           # r_2_4_n(float out[8], float in[256], int n)
  r = CompiledRunner(p)
  assert r.p.lib is not None and r.name == p.name and r.device == "CPU" and r.estimates == p.estimates
  out, inp = Buffer("CPU", 8, dtypes.float).allocate(), Buffer("CPU", 256, dtypes.float).allocate()
  assert r([out, inp], {"n": 3}) is None
  with pytest.raises(ValueError, match="takes 2 buffers, got 1"): r([out], {"n": 3})
  with pytest.raises(ValueError, match="takes 2 buffers, got 3"): r([out, inp, inp], {"n": 3})
  with pytest.raises(TypeError, match="rawbufs\\[1\\] must be a tinyc.Buffer"): r([out, 5], {"n": 3})
  with pytest.raises(TypeError, match="rawbufs\\[1\\] has dtype int"): r([out, Buffer("CPU", 256, dtypes.int32).allocate()], {"n": 3})
  with pytest.raises(ValueError, match="rawbufs\\[1\\] has size 255"): r([out, Buffer("CPU", 255, dtypes.float).allocate()], {"n": 3})
  with pytest.raises(ValueError, match="rawbufs\\[0\\] is on device CPU:1"): r([Buffer("CPU:1", 8, dtypes.float), inp], {"n": 3})
  with pytest.raises(RuntimeError, match="rawbufs\\[0\\] is not allocated"): r([Buffer("CPU", 8, dtypes.float), inp], {"n": 3})
  with pytest.raises(KeyError, match="'n'"): r([out, inp])
  with pytest.raises(KeyError, match="'n'"): r([out, inp], {"m": 3})
  with pytest.raises(ValueError, match="outside its range"): r([out, inp], {"n": 33})
  with pytest.raises(TypeError, match="must be int"): r([out, inp], {"n": 3.0})
  from dataclasses import replace
  with pytest.raises(RuntimeError, match="can't load"): CompiledRunner(replace(p, lib=b"\x7fELF" + b"\x00" * 100))
  with pytest.raises(RuntimeError, match="unknown device"): CompiledRunner(replace(p, device="NOPE"))

class SpecLike:
  """a stand-in for tinyc's own ProgramSpec: tinyc UOps, a replace() method, no dataclass"""
  def __init__(self, **kw): self.__dict__.update(kw)
  def replace(self, **kw): return SpecLike(**{**self.__dict__, **kw})
  def launch_dims(self, var_vals): return [tinyc.sym_infer(g, var_vals) for g in self.global_size], None

def test_runner_reads_spec_through_attributes(programs):
  from tinyc.tinygrad import from_tinygrad
  p = programs["symbolic_sum/2"]
  uops = [from_tinygrad(u) for u in p.uops]
  spec = SpecLike(name=p.name, src=p.src, device="CPU", ast=from_tinygrad(p.ast), uops=uops, lib=None, aux=[],
                  global_size=[1, 1, 1], local_size=None, vars=[u for u in uops if u.op is tinyc.Ops.DEFINE_VAR],
                  globals=p.globals, outs=p.outs, ins=p.ins, estimates=None, function_name=p.function_name)
  r = CompiledRunner(spec)
  assert spec.lib is None and isinstance(r.p, SpecLike) and r.p.lib is not None
  out, inp = Buffer("CPU", 8, dtypes.float).allocate(), Buffer.from_numpy(np.arange(256, dtype=np.float32))
  r([out, inp], {"n": 2})
  assert out.numpy().tolist() == (np.arange(256, dtype=np.float32).reshape(32, 8)[:2].sum(0)).tolist()
  with pytest.raises(TypeError, match="has dtype int"): r([out, Buffer("CPU", 256, dtypes.int32).allocate()], {"n": 2})

# ---- fresh processes (spawn): pickled runners load without compiling; the cache is shared between processes ----

def _child_run_pickled(blob: bytes, inputs: dict, cachedb: str):
  os.environ["TINYC_CACHEDB"], os.environ["ASSERT_COMPILE"] = cachedb, "1"
  import tinyc, pickle
  before = tinyc._C.compile_stats()
  runner = pickle.loads(blob)
  bufs = [tinyc.Buffer("CPU", len(raw) // isz, dt).allocate().copyin(memoryview(raw)) for raw, isz, dt in inputs]
  runner(bufs, {"n": 10} if runner.p.vars else None)
  return [bytes(b.as_buffer()) for b in bufs], before, tinyc._C.compile_stats()

def _child_compile(src: str, cachedb: str, cachelevel: str):
  os.environ["TINYC_CACHEDB"], os.environ["CACHELEVEL"] = cachedb, cachelevel
  import tinyc
  lib = tinyc.Device["CPU"].compiler.compile_cached(src)
  tinyc.CPUProgram("k", lib)
  return tinyc._C.compile_stats()

def in_fresh_process(fn, *args):
  with multiprocessing.get_context("spawn").Pool(1) as pool: return pool.apply(fn, args)

def test_pickled_runner_runs_in_fresh_process_without_compiling(programs, cache_db):
  p = programs["symbolic_sum/2"]
  runner = CompiledRunner(p)
  rng = np.random.default_rng(1)
  gl = globals_of(p)
  raws = [random_bytes(gl[g][0], gl[g][1], rng) for g in p.globals]
  bufs = [Buffer("CPU", gl[g][1], gl[g][0]).allocate().copyin(memoryview(raws[i])) for i, g in enumerate(p.globals)]
  runner(bufs, VAR_VALS)
  inputs = [(raw, gl[g][0].itemsize, gl[g][0].name) for raw, g in zip(raws, p.globals)]
  outs, before, after = in_fresh_process(_child_run_pickled, pickle.dumps(runner), inputs, cache_db + ".unused")
  assert outs == [bytes(b.as_buffer()) for b in bufs]
  assert after["compiles"] == before["compiles"] == 0 and after["clang_runs"] == 0 and after["programs_loaded"] == 1

def test_cache_shared_between_processes(tmp_path):
  db, src = str(tmp_path / "shared.db"), f"/* {uuid.uuid4()} */ void k(int core_id) {{}}"
  first = in_fresh_process(_child_compile, src, db, "2")
  second = in_fresh_process(_child_compile, src, db, "2")
  assert (first["compiles"], first["cache_hits"]) == (1, 0)
  assert (second["compiles"], second["cache_hits"]) == (0, 1)
  off = in_fresh_process(_child_compile, src, db, "0")     # CACHELEVEL=0: the cache is neither read nor written
  assert (off["compiles"], off["cache_hits"]) == (1, 0)

def test_cachelevel_zero_bypasses(monkeypatch):
  comp, src = Device["CPU"].compiler, f"/* {uuid.uuid4()} */ void k(int core_id) {{}}"
  monkeypatch.setenv("CACHELEVEL", "0")
  s0 = stats()
  comp.compile_cached(src); comp.compile_cached(src)
  s1 = stats()
  assert s1["compiles"] - s0["compiles"] == 2 and s1["cache_hits"] == s0["cache_hits"]
  assert tinyc._C.diskcache_get(comp.cachekey, src) is None
  monkeypatch.setenv("CACHELEVEL", "2")
  assert tinyc._C.diskcache_get(comp.cachekey, src) is None   # nothing was stored while off

def test_corrupted_cache_file_is_rebuilt(tmp_path, monkeypatch):
  comp, src = Device["CPU"].compiler, f"/* {uuid.uuid4()} */ void k(int core_id) {{}}"
  db = tmp_path / "corrupt.db"
  db.write_bytes(os.urandom(8192))                          # not a database
  monkeypatch.setenv("TINYC_CACHEDB", str(db))
  s0 = stats()
  lib = comp.compile_cached(src)
  tinyc.CPUProgram("k", lib)
  assert stats()["compiles"] == s0["compiles"] + 1
  with sqlite3.connect(str(db)) as conn:                    # rebuilt as a real database holding the entry
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] >= 1
  assert comp.compile_cached(src) == lib and stats()["cache_hits"] == s0["cache_hits"] + 1

def test_corrupted_row_is_recompiled(tmp_path, monkeypatch):
  comp, src = Device["CPU"].compiler, f"/* {uuid.uuid4()} */ void k(int core_id) {{}}"
  db = tmp_path / "rows.db"
  monkeypatch.setenv("TINYC_CACHEDB", str(db))
  lib = comp.compile_cached(src)
  with sqlite3.connect(str(db)) as conn:                    # flip bytes of the stored value, not its checksum
    (table,) = conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchone()
    conn.execute(f'UPDATE "{table}" SET val = ? WHERE key = ?', (b"\x7fELF" + b"\xff" * 64, src.encode()))
  s0 = stats()
  assert comp.compile_cached(src) == lib
  assert stats()["compiles"] == s0["compiles"] + 1 and stats()["cache_hits"] == s0["cache_hits"]
  assert comp.compile_cached(src) == lib and stats()["cache_hits"] == s0["cache_hits"] + 1

def test_cache_reads_many_tables_and_files(tmp_path, monkeypatch):
  """a cache hit reuses its table's prepared query (a few tables kept, the oldest replaced): reading more tables than
  are kept, a table made after a miss, a damaged row, and a second file each give what was stored, or a miss"""
  get, put = tinyc._C.diskcache_get, tinyc._C.diskcache_put
  monkeypatch.setenv("TINYC_CACHEDB", str(tmp_path / "a.db"))
  tables = [f"t{i}" for i in range(7)]
  assert get("late", "k") is None                           # no such table yet: a miss
  put("late", "k", b"made after the miss")
  assert get("late", "k") == b"made after the miss"
  for _ in range(3):
    for i, t in enumerate(tables):
      if get(t, "k") is None: put(t, "k", bytes([i]) * 1000)
      assert get(t, "k") == bytes([i]) * 1000 and get(t, "other") is None
  with sqlite3.connect(str(tmp_path / "a.db")) as conn:     # a value damaged on disk reads as a miss, and is dropped
    (table,) = conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 't3!_%' ESCAPE '!'").fetchone()
    conn.execute(f'UPDATE "{table}" SET val = ? WHERE key = ?', (b"\0" * 1000, b"k"))
  assert get("t3", "k") is None and get("t0", "k") == bytes([0]) * 1000
  with sqlite3.connect(str(tmp_path / "a.db")) as conn:
    assert conn.execute(f'SELECT count(*) FROM "{table}"').fetchone() == (0,)
  monkeypatch.setenv("TINYC_CACHEDB", str(tmp_path / "b.db"))   # another file: the kept queries were the first's
  assert all(get(t, "k") is None for t in tables)
  put("t0", "k", b"b")
  assert get("t0", "k") == b"b"
  monkeypatch.setenv("TINYC_CACHEDB", str(tmp_path / "a.db"))
  assert get("t0", "k") == bytes([0]) * 1000 and get("t3", "k") is None

def test_repeated_calls_leave_memory_flat(programs):
  p, ps = programs["softmax/4"], programs["symbolic_sum/2"]
  runner, srunner = CompiledRunner(p), CompiledRunner(ps)
  gl = globals_of(p)
  bufs = [Buffer("CPU", gl[g][1], gl[g][0]).allocate() for g in p.globals]
  sbufs = [Buffer("CPU", 8, dtypes.float).allocate(), Buffer("CPU", 256, dtypes.float).allocate()]
  ibuf = Buffer("CPU", 256, dtypes.int32).allocate()
  lib = runner.p.lib
  def work():
    runner(bufs, wait=True)
    srunner(sbufs, {"n": 7})
    b = Buffer("CPU", 1000, dtypes.float).allocate()
    b.numpy()[:] = 1.0
    b.as_buffer(); b.copyin(memoryview(bytearray(4000)))
    for bad in (lambda: runner(bufs[:1]), lambda: srunner(sbufs), lambda: srunner([sbufs[0], ibuf], {"n": 1}),
                lambda: srunner(sbufs, {"n": 99}), lambda: b.copyin(memoryview(bytearray(3)))):
      try: bad()
      except (ValueError, TypeError, KeyError): pass
  def fds(): return len(os.listdir("/proc/self/fd"))
  for _ in range(200): work()
  for _ in range(20): tinyc.CPUProgram(runner.p.function_name, lib)
  gc.collect()
  tracemalloc.start()
  snap0, fd0, rss0 = tracemalloc.take_snapshot(), fds(), rss()
  for _ in range(3000): work()
  for _ in range(200): tinyc.CPUProgram(runner.p.function_name, lib)   # load / unload: no fd or mapping left behind
  gc.collect()
  grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(snap0, "filename"))
  tracemalloc.stop()
  assert grown < 64 * 1024, f"python memory grew by {grown} bytes"
  assert fds() == fd0
  assert rss() - rss0 < 8 * 2**20 + RSS_SLACK, f"RSS grew by {(rss() - rss0) / 2**20:.1f} MB"
