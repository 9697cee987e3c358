"""End to end through tinyc's own pipeline: a tinygrad kernel AST -> tinyc.codegen.get_program with the CPU device's
renderer (render + clang compile, the SQLite compile cache) -> tinyc.CompiledRunner -> results, against tinygrad 0.12.0
doing the same with its own get_program and CompiledRunner on its CPU device.

1. every AST of the corpus, with no opts and with tinygrad's heuristic opts: the same C text (kernel name counter
   stripped) and the same outputs on the same random inputs (ints and bools exactly, floats within dtype tolerance);
2. ProgramSpecs and CompiledRunners pickle across processes (spawn) and run there without any compiler;
   a pool of workers compiles, the parent only runs;
3. the compile cache seen through get_program from separate processes: hits, CACHELEVEL=0, a corrupted file;
4. bad input raises a clear Python exception, never crashes; repeated runs leave memory flat."""
import gc, json, multiprocessing, os, pickle, re, sqlite3, subprocess, sys, time, tracemalloc
from dataclasses import replace
import numpy as np
import pytest
import tinyc
from tinyc import Buffer, CompiledRunner, CompileError, dtypes
from tinyc.codegen import get_program
from tinyc.tinygrad import from_tinygrad
from tinygrad import Device as TGDevice
from tinygrad.codegen import get_program as tg_get_program
from tinygrad.device import Buffer as TGBuffer
from tinygrad.dtype import _to_np_dtype, dtypes as tgdtypes
from tinygrad.engine.realize import CompiledRunner as TGCompiledRunner
from tinygrad.helpers import Context
from tinygrad.renderer.cstyle import ClangRenderer as TGClangRenderer
from corpus import kernel_asts
import compile_run_child as child
from test_runtime import globals_of, random_bytes, as_array
from test_codegen import strip_counter, tc_opts

stats = tinyc._C.compile_stats
VAR_VALS = {"n": 10}
MODES = ("noopt", "opts")
# relative/absolute tolerance per float dtype (the same C compiled by the same clang: differences are not expected, but
# a float result is only promised up to its precision)
TOL = {np.dtype(np.float16): (1e-3, 1e-3), np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-12)}

pytestmark = pytest.mark.usefixtures("cache_db")   # every test of this file compiles into its own cache file (conftest.py)

def plain_name(name: str) -> str:
  """a kernel name without tinygrad's process counter: it ends in colored(num, "BLACK"), num "nN" or "" the first time"""
  return re.sub(r"\x1b\[90m(n\d+)?\x1b\[0m$", "", name)

def is_bfloat16_kernel(ast) -> bool:
  return any(u.dtype.base.scalar() == tgdtypes.bfloat16 for u in ast.toposort())

def tinygrad_program(ast, mode):
  """tinygrad's compiled program on its CPU device (its ClangJITRenderer compiles: p.lib) and the opts it applied"""
  if mode == "noopt":
    with Context(NOOPT=1): return tg_get_program(ast, TGDevice["CPU"].renderer)
  return tg_get_program(ast, TGDevice["CPU"].renderer)

def heuristic_opts(ast):
  """the opts tinygrad's hand-coded heuristics choose, read from a renderer that does not compile"""
  return tc_opts(tg_get_program(ast, TGClangRenderer()).applied_opts)

def tinyc_program(ast, mode, tg=None):
  """tinyc's compiled program; with opts, those tinygrad applied to its program tg (when it has one)"""
  opts = [] if mode == "noopt" else tc_opts(tg.applied_opts) if tg is not None else heuristic_opts(ast)
  return get_program(from_tinygrad(ast), tinyc.Device["CPU"].renderer, opts=opts)

def inputs_for(p, seed=0):
  """{global index: random bytes} for every buffer of tinygrad's program p"""
  rng, gl = np.random.default_rng(seed), globals_of(p)
  return {g: random_bytes(gl[g][0], gl[g][1], rng) for g in p.globals}

def make_bufs(cls, p, init):
  gl = globals_of(p)
  return [cls("CPU", gl[g][1], gl[g][0]).allocate().copyin(memoryview(bytearray(init[g]))) for g in p.globals]

def outputs(p, bufs):
  return {g: bytes(bufs[i].as_buffer()) for i, g in enumerate(p.globals) if g in p.outs}

def run_tinygrad(p, init):
  bufs = make_bufs(TGBuffer, p, init)
  TGCompiledRunner(p)(bufs, VAR_VALS if p.vars else None, wait=True)
  return outputs(p, bufs)

def run_tinyc(runner, tgp, init):
  """run a tinyc runner on buffers laid out as tinygrad's program tgp says"""
  bufs = make_bufs(Buffer, tgp, init)
  t = runner(bufs, VAR_VALS if runner.p.vars else None, wait=True)
  assert isinstance(t, float) and t >= 0
  return outputs(tgp, bufs)

def same_outputs(tgp, ours, theirs, what=""):
  """None when equal (ints/bools exactly, floats within their dtype's tolerance), else a description"""
  gl = globals_of(tgp)
  if ours.keys() != theirs.keys(): return f"{what}: outputs {sorted(ours)} != {sorted(theirs)}"
  for g in ours:
    a, b = as_array(ours[g], gl[g][0]), as_array(theirs[g], gl[g][0])
    if a.dtype.kind == "f":
      rtol, atol = TOL[a.dtype]
      if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True): return f"{what}: buffer {g} differs (max {np.nanmax(np.abs(a - b))})"
    elif ours[g] != theirs[g]: return f"{what}: buffer {g} differs"
  return None

@pytest.fixture(scope="module")
def corpus_runs():
  """for each (kernel, mode): (ast, tinygrad's program or its exception, tinyc's program or its exception, seconds tinyc took)"""
  out, t_tg = {}, 0.0
  for name, ast in kernel_asts():
    for mode in MODES:
      t0 = time.perf_counter()
      try: tg = tinygrad_program(ast, mode)
      except Exception as e: tg = e
      t1 = time.perf_counter()
      try: tc = tinyc_program(ast, mode, None if isinstance(tg, Exception) else tg)
      except Exception as e: tc = e
      out[(name, mode)], t_tg = (ast, tg, tc, time.perf_counter() - t1), t_tg + t1 - t0
  print(f"\ntinygrad get_program (its compile cache warm) {t_tg:.1f}s", end="")
  return out

# ---- 1. the corpus, compiled and run by tinyc, against tinygrad ----

def test_corpus_compiles_and_runs_as_tinygrad(corpus_runs):
  t0, s0 = time.perf_counter(), stats()
  ok, failed, bf16, bitwise = {m: 0 for m in MODES}, [], [], 0
  for (name, mode), (ast, tg, tc, _) in corpus_runs.items():
    if isinstance(tg, Exception) or isinstance(tc, Exception):
      # the only kernels that cannot compile: bfloat16 ones (clang 14 has no __bf16 on x86), for tinygrad as for tinyc
      assert is_bfloat16_kernel(ast), (name, mode, tg, tc)
      assert isinstance(tg, Exception) and isinstance(tc, CompileError) and "__bf16" in str(tc), (name, mode, tg, tc)
      bf16.append((name, mode))
      continue
    assert tc.lib is not None and tc.lib[:4] == b"\x7fELF" and tg.lib is not None
    assert tc.globals == tg.globals and tc.outs == tg.outs and tc.ins == tg.ins and len(tc.vars) == len(tg.vars)
    init = inputs_for(tg)
    ours, theirs = run_tinyc(CompiledRunner(tc), tg, init), run_tinygrad(tg, init)
    err = same_outputs(tg, ours, theirs, f"{name} {mode}")
    if err: failed.append(err)
    else: ok[mode], bitwise = ok[mode] + 1, bitwise + (ours == theirs)
  n = len(kernel_asts())
  for m in MODES: print(f"\ncorpus run by tinyc == tinygrad ({m}): {ok[m]}/{n}", end="")
  print(f"\nof them bit for bit the same: {bitwise}/{sum(ok.values())}", end="")
  compile_time = sum(t for *_, t in corpus_runs.values())
  print(f"\nbfloat16 kernels that compile for neither: {len(bf16)} {sorted(set(k for k, _ in bf16))}; "
        f"tinyc get_program+compile (cold cache) {compile_time:.1f}s, runs {time.perf_counter() - t0:.1f}s")
  assert not failed, failed
  assert stats()["compiles"] == s0["compiles"]            # the runners loaded the programs' libs, compiled nothing
  assert len(bf16) == sum(is_bfloat16_kernel(a) for _, a in kernel_asts()) * len(MODES) and len(bf16) <= 4
  assert all(ok[m] + len(bf16) // len(MODES) == n for m in MODES)

def test_corpus_source_is_tinygrads(corpus_runs):
  """the C text compiled is tinygrad's, up to the process counter tinygrad appends to a name it has seen before"""
  same = {m: 0 for m in MODES}
  for (name, mode), (ast, tg, tc, _) in corpus_runs.items():
    if isinstance(tc, Exception):   # a bfloat16 kernel: render it with renderers that do not compile, both sides
      assert isinstance(tg, Exception) and is_bfloat16_kernel(ast)
      with Context(NOOPT=int(mode == "noopt")): tg = tg_get_program(ast, TGClangRenderer())
      tc = get_program(from_tinygrad(ast), tinyc.ClangRenderer(), opts=[] if mode == "noopt" else tc_opts(tg.applied_opts))
    assert strip_counter(tc.function_name) == strip_counter(tg.function_name), name
    assert plain_name(tc.name) == plain_name(tg.name), name
    assert tc.src.replace(tc.function_name, strip_counter(tc.function_name)) == \
           tg.src.replace(tg.function_name, strip_counter(tg.function_name)), (name, mode)
    same[mode] += 1
  for m in MODES: print(f"\ntinyc p.src == tinygrad p.src ({m}): {same[m]}/{len(kernel_asts())}", end="")
  assert all(v == len(kernel_asts()) for v in same.values())

# ---- 2. pickled programs and runners across processes (spawn) ----

# one kernel per kind: reduces, threads, casts, ints, bools, symbolic vars, transcendentals, gated loads
BATCH = ["matmul/3", "matmul_big/4", "softmax/4", "argmax/3", "cast_int8/2", "bool_ops/6", "symbolic_sum/2", "exp_log/4"]

def spawn_pool(n=1):
  return multiprocessing.get_context("spawn").Pool(n)

def no_compiler_env(monkeypatch):
  """a spawned child inherits these: any compile there would fail loudly"""
  monkeypatch.setenv("ASSERT_COMPILE", "1")
  monkeypatch.setenv("CC", "/nonexistent/clang")

def test_pickled_spec_and_runner_run_in_fresh_process(corpus_runs, monkeypatch):
  names = ["symbolic_sum/2", "matmul_big/4", "cast_int8/2"]
  jobs = []
  for name in names:
    _, tg, tc, _ = corpus_runs[(name, "noopt")]
    runner, init = CompiledRunner(tc), inputs_for(tg, seed=3)
    ours = run_tinyc(runner, tg, init)
    gl = globals_of(tg)
    inits = [(init[g], Buffer("CPU", 1, gl[g][0]).dtype) for g in tg.globals]   # as tinyc dtypes
    jobs.append((name, tg, ours, pickle.dumps(tc), pickle.dumps(runner), inits))
  no_compiler_env(monkeypatch)
  with spawn_pool() as pool:
    results = [pool.apply(child.run_pickled, (sb, rb, inits)) for _, _, _, sb, rb, inits in jobs]
  for (name, tg, ours, *_), (outs, before, after, pid) in zip(jobs, results):
    assert pid != os.getpid()
    for out in outs:   # the spec's and the runner's runs, equal to the parent's run (and so to tinygrad's)
      assert {g: out[i] for i, g in enumerate(tg.globals) if g in tg.outs} == ours, name
  first, last = results[0][1], results[-1][2]
  assert first["compiles"] == 0 and last["compiles"] == last["clang_runs"] == last["cache_hits"] == 0
  assert last["programs_loaded"] == 2 * len(names)
  print(f"\npickled ProgramSpec + CompiledRunner run in a spawned process: {len(names)}/{len(names)}, compiles there: 0")

def test_worker_pool_compiles_parent_runs(corpus_runs, tmp_path, monkeypatch):
  work = []
  for name in BATCH:
    for mode in MODES:
      ast, tg, _, _ = corpus_runs[(name, mode)]
      work.append((name, mode, tg, from_tinygrad(ast), [] if mode == "noopt" else tc_opts(tg.applied_opts)))
  monkeypatch.setenv("TINYC_CACHEDB", str(tmp_path / "pool.db"))   # the workers start with a cold cache
  t0, s0 = time.perf_counter(), stats()
  with spawn_pool(2) as pool:
    results = pool.starmap(child.compile_ast, [(ast, opts) for *_, ast, opts in work])
  assert len({pid for *_, pid in results}) == 2 and os.getpid() not in {pid for *_, pid in results}
  ok = 0
  for (name, mode, tg, ast, _), (spec, runner, _) in zip(work, results):
    assert isinstance(spec, tinyc.ProgramSpec) and isinstance(runner, CompiledRunner) and plain_name(spec.name) == plain_name(tg.name)
    assert spec == runner.p and spec.lib[:4] == b"\x7fELF"
    init = inputs_for(tg, seed=5)
    theirs = run_tinygrad(tg, init)
    for r in (runner, CompiledRunner(spec)):
      err = same_outputs(tg, run_tinyc(r, tg, init), theirs, f"{name} {mode}")
      assert err is None, err
    ok += 1
  s1 = stats()
  assert s1["compiles"] == s0["compiles"] and s1["clang_runs"] == s0["clang_runs"] and s1["cache_hits"] == s0["cache_hits"]
  print(f"\nworker pool (spawn, 2) compiled, the parent ran: {ok}/{len(work)} equal to tinygrad, "
        f"parent compiles: 0, {time.perf_counter() - t0:.1f}s")

# ---- 3. the compile cache through get_program, between processes ----

def test_cache_between_processes_through_get_program(corpus_runs, tmp_path):
  asts = [from_tinygrad(corpus_runs[(n, "noopt")][0]) for n in BATCH]
  opts, n = [None] * len(asts), len(asts)
  db = str(tmp_path / "shared.db")
  def in_child(cachelevel="2", path=db):
    with spawn_pool() as pool: return pool.apply(child.get_programs, (asts, opts, path, cachelevel))
  first, libs = in_child()
  assert (first["compiles"], first["clang_runs"], first["cache_hits"]) == (n, n, 0)
  second, libs2 = in_child()
  assert (second["compiles"], second["clang_runs"], second["cache_hits"]) == (0, 0, n) and libs2 == libs
  off, libs3 = in_child("0")   # CACHELEVEL=0: compiled again, the cache neither read nor written
  assert (off["clang_runs"], off["cache_hits"]) == (n, 0) and libs3 == libs
  # a corrupted cache file is not trusted: the programs are compiled again and the file rebuilt
  for path in (db, db + "-wal"):   # (the children end without a checkpoint: the rows are still in the WAL)
    if os.path.exists(path):
      with open(path, "r+b") as f: f.write(os.urandom(os.path.getsize(path)))
  rebuilt, libs4 = in_child()
  assert (rebuilt["clang_runs"], rebuilt["cache_hits"]) == (n, 0)
  again, libs5 = in_child()
  assert (again["clang_runs"], again["cache_hits"]) == (0, n) and libs5 == libs4
  # corrupted rows (the stored lib's bytes changed, not its checksum) read as misses and are compiled again
  with sqlite3.connect(db) as conn:
    (table,) = conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchone()
    conn.execute(f'UPDATE "{table}" SET val = ? || substr(val, 9)', (b"\x7fELF\xff\xff\xff\xff",))
  rows, libs6 = in_child()
  assert (rows["clang_runs"], rows["cache_hits"]) == (n, 0) and all(l[:4] == b"\x7fELF" for l in libs6)
  print(f"\ncache through get_program, {n} kernels per process: cold {first['clang_runs']} clang runs; warm "
        f"{second['cache_hits']} hits/0 runs; CACHELEVEL=0 {off['clang_runs']} runs; corrupt file {rebuilt['clang_runs']} runs "
        f"then {again['cache_hits']} hits; corrupt rows {rows['clang_runs']} runs")

# ---- 4. bad input through the public API: a Python exception that names the problem, the process lives on ----

@pytest.fixture(scope="module")
def sym_runner(corpus_runs):
  """symbolic_sum/2 compiled by tinyc: r_..._n(float out[8], float in[256], int n), and buffers that fit it"""
  _, tg, tc, _ = corpus_runs[("symbolic_sum/2", "noopt")]
  gl = globals_of(tg)
  assert [gl[g] for g in tg.globals] == [(tgdtypes.float, 8), (tgdtypes.float, 256)] and len(tc.vars) == 1
  return CompiledRunner(tc), Buffer("CPU", 8, dtypes.float).allocate(), Buffer.from_numpy(np.arange(256, dtype=np.float32))

def test_bad_buffers_and_vars(sym_runner):
  r, out, inp = sym_runner
  r([out, inp], {"n": 4})
  good = out.numpy().copy()
  assert good.tolist() == np.arange(256, dtype=np.float32).reshape(32, 8)[:4].sum(0).tolist()
  with pytest.raises(ValueError, match=r"rawbufs\[1\] has size 255"): r([out, Buffer("CPU", 255, dtypes.float).allocate()], {"n": 4})
  with pytest.raises(TypeError, match=r"rawbufs\[1\] has dtype int"): r([out, Buffer("CPU", 256, dtypes.int32).allocate()], {"n": 4})
  with pytest.raises(ValueError, match=r"rawbufs\[0\] is on device CPU:1"): r([Buffer("CPU:1", 8, dtypes.float), inp], {"n": 4})
  with pytest.raises(ValueError, match="takes 2 buffers, got 1"): r([out], {"n": 4})
  with pytest.raises(ValueError, match="takes 2 buffers, got 0"): r([], {"n": 4})
  with pytest.raises(TypeError, match=r"rawbufs\[1\] must be a tinyc.Buffer"): r([out, np.zeros(256, np.float32)], {"n": 4})
  with pytest.raises(RuntimeError, match=r"rawbufs\[1\] is not allocated"): r([out, Buffer("CPU", 256, dtypes.float)], {"n": 4})
  with pytest.raises(KeyError, match="'n'"): r([out, inp])
  with pytest.raises(KeyError, match="'n'"): r([out, inp], {"m": 4})
  with pytest.raises(ValueError, match="outside its range"): r([out, inp], {"n": 1000})
  r([out, inp], {"n": 4})                                  # still alive, still right
  assert out.numpy().tolist() == good.tolist()

def test_failing_compile_and_bad_libs(sym_runner):
  r, out, inp = sym_runner
  comp = tinyc.Device["CPU"].compiler
  with pytest.raises(CompileError, match="error") as e: comp.compile("void k(int core_id) { this is not C; }")
  assert isinstance(e.value, RuntimeError) and "undeclared identifier 'this'" in str(e.value)   # clang's own message
  # a spec without lib is compiled by the runner: clang's error comes back as a CompileError
  with pytest.raises(CompileError, match="undeclared_thing"): CompiledRunner(r.p.replace(lib=None, src="void k(int core_id) { undeclared_thing++; }"))
  for bad, msg in ((b"garbage", "not an ELF"), (b"", "not an ELF|empty"), (r.p.lib[:300], "can't load"), (b"\x7fELF" + b"\0" * 60, "can't load")):
    with pytest.raises(RuntimeError, match=msg): CompiledRunner(r.p.replace(lib=bad))
  with pytest.raises(RuntimeError, match="no function 'nope'"): CompiledRunner(r.p.replace(name="nope"))
  with pytest.raises(TypeError): CompiledRunner(r.p.replace(lib="a str"))
  with pytest.raises(RuntimeError, match="unknown device"): CompiledRunner(r.p.replace(device="NOPE"))
  r([out, inp], {"n": 2})
  assert out.numpy().tolist() == np.arange(256, dtype=np.float32).reshape(32, 8)[:2].sum(0).tolist()

# the corruption runs in a child interpreter: a crash there is a failed test, not a dead test run
FUZZ = r"""
import pickle, sys, json, collections
import tinyc
blob, payload_at, payload_len = pickle.load(open(sys.argv[1], "rb"))
orig = pickle.loads(blob)
spec = orig if isinstance(orig, tinyc.ProgramSpec) else orig.p
frame = [i for i in range(len(blob)) if not payload_at <= i < payload_at + payload_len]
positions = sorted(set(frame) | set(range(payload_at, payload_at + payload_len, 7)))
out = collections.Counter()
def attempt(data):
  try: x = pickle.loads(data)
  except Exception as e: out[type(e).__name__] += 1; return
  if (x.p if isinstance(x, tinyc.CompiledRunner) else x) != spec: out["loaded something else"] += 1; return
  tinyc.CompiledRunner(x if isinstance(x, tinyc.ProgramSpec) else x.p)
  out["loaded unchanged"] += 1
for i in positions:
  b = bytearray(blob); b[i] ^= 0xff
  attempt(bytes(b))
for n in range(0, len(blob), max(1, len(blob) // 150)): attempt(blob[:n])
print(json.dumps([len(positions), out]))
"""

def test_corrupt_pickles_raise_never_crash(sym_runner, tmp_path):
  r = sym_runner[0]
  for what, obj in (("ProgramSpec", r.p), ("CompiledRunner", r)):
    blob = pickle.dumps(obj)
    assert pickle.loads(blob).__class__ is obj.__class__
    with pytest.raises((pickle.UnpicklingError, EOFError, ValueError)): pickle.loads(blob[:len(blob) // 2])
    flipped = bytearray(blob); flipped[len(blob) - 500] ^= 0x40                       # inside the lib's bytes
    with pytest.raises(ValueError, match="corrupt ProgramSpec pickle"): pickle.loads(bytes(flipped))
    at = blob.index(pickle.dumps(tuple(getattr(r.p, f) for f in ("name", "src", "device", "ast", "uops", "lib", "aux", "global_size",
                                                                 "local_size", "vars", "globals", "outs", "ins"))))
    path = tmp_path / f"{what}.pkl"
    path.write_bytes(pickle.dumps((blob, at, len(blob) - at - 100)))
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", FUZZ, str(path)], capture_output=True, text=True, timeout=120,
                         cwd=os.path.dirname(os.path.dirname(tinyc.__file__)))
    assert res.returncode == 0, f"{what}: the child died ({res.returncode}): {res.stderr[-2000:]}"
    n, out = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"\ncorrupt {what} pickles ({len(blob)} bytes, {n} flipped bytes, 150 truncations, {time.perf_counter() - t0:.1f}s): {out}")
    assert "loaded something else" not in out
    assert out.get("loaded unchanged", 0) <= 4           # only flips pickle ignores (a memo slot number)
    assert out.get("ValueError", 0) > n // 2              # the checksum catches the payload's damage

def test_repeated_runs_leave_memory_flat(sym_runner, corpus_runs):
  r, out, inp = sym_runner
  _, tg, tc, _ = corpus_runs[("softmax/4", "opts")]
  r2 = CompiledRunner(tc)
  bufs = make_bufs(Buffer, tg, inputs_for(tg))
  small = Buffer("CPU", 255, dtypes.float).allocate()
  def work():
    r([out, inp], {"n": 5})
    r2(bufs)
    for bad in (lambda: r([out]), lambda: r([out, inp]), lambda: r([out, small], {"n": 5}), lambda: r([out, inp], {"n": 99})):
      try: bad()
      except (ValueError, KeyError): pass
  def rss():
    with open("/proc/self/statm") as f: return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
  for _ in range(200): work()
  gc.collect()
  tracemalloc.start()
  snap0, rss0, t0 = tracemalloc.take_snapshot(), rss(), time.perf_counter()
  for _ in range(2000): work()
  gc.collect()
  grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(snap0, "filename"))
  tracemalloc.stop()
  print(f"\n2000 x (2 runs + 4 rejected calls): {time.perf_counter() - t0:.2f}s, python memory {grown:+d} B, RSS {(rss() - rss0) / 2**20:+.2f} MB")
  assert grown < 64 * 1024, f"python memory grew by {grown} bytes"
  assert rss() - rss0 < 4 * 2**20, f"RSS grew by {(rss() - rss0) / 2**20:.1f} MB"
  assert out.numpy().tolist() == np.arange(256, dtype=np.float32).reshape(32, 8)[:5].sum(0).tolist()
