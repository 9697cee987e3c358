"""BEAM search (tinygrad/codegen/opt/search.py, native in tinyc as csrc/codegen/opt/search.c) against tinygrad 0.12.0.

The building blocks are compared with tinygrad's directly: the action list (also under its environment switches),
get_kernel_actions over the corpus on a renderer without and with locals, bufs_from_ast and get_test_global_size.
The search itself is compared with tinygrad's under one deterministic timer (a function of the rendered source, which
both render byte for byte), so the two must walk the same beam to the same opts; then it runs for real on the CPU."""
import concurrent.futures as cf, hashlib, multiprocessing, os, subprocess, sys, textwrap, threading, time
import pytest
import tinyc, tinyc.codegen
from tinyc import Device, Scheduler, Opt, OptOps, dtypes
from tinyc import search
from tinyc.demo import matmul
from tinyc.tinygrad import from_tinygrad, _to_tc_arg
import tinygrad.codegen.opt.search as tg_search
from tinygrad.codegen.opt.postrange import Scheduler as TgScheduler
from tinygrad.device import Device as TgDevice
from tinygrad.helpers import Context
import test_postrange as tp

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def scheduler(ast, ren=None):
  k = Scheduler(ast, ren or Device["CPU"].renderer)
  k.convert_loop_to_global()
  return k

def fake_seconds(src: str) -> float:
  """a timing that depends only on the program's source: the same for tinyc and tinygrad"""
  return (int(hashlib.sha256(src.encode()).hexdigest()[:8], 16) % 100000 + 1) * 1e-8

def live_threads() -> int:
  return len(os.listdir("/proc/self/task"))

def threads_after_joins(before: int, within: float = 5.0) -> int:
  """the thread count once joined threads are gone: pthread_join returns when the kernel clears the thread's id,
  a moment before /proc stops listing it, so a joined thread may still show for a few ms (more under ASan). A thread
  that was not joined and still runs (a compile left behind) keeps the count up for the whole wait."""
  deadline = time.monotonic() + within
  while live_threads() != before and time.monotonic() < deadline: time.sleep(0.01)
  return live_threads()

# ---- the building blocks ----

def test_actions_are_tinygrads():
  assert len(search.actions) == len(tg_search.actions) == 193
  assert list(search.actions) == [_to_tc_arg(a) for a in tg_search.actions]

@pytest.mark.parametrize("env", [{"BEAM_PADTO": "1"}, {"NOLOCALS": "1"}, {"TC": "0", "TC_OPT": "1"}])
def test_actions_follow_the_environment(env):
  code = textwrap.dedent("""
    import sys; sys.path.append(sys.argv[1])
    from tinyc import search
    from tinyc.tinygrad import _to_tc_arg
    import tinygrad.codegen.opt.search as tg
    assert list(search.actions) == [_to_tc_arg(a) for a in tg.actions], "differs"
    print(len(search.actions))
  """)
  r = subprocess.run([sys.executable, "-c", code, REPO], env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  assert int(r.stdout) != 193 or env.get("TC") == "0"

@pytest.mark.parametrize("ren_name", ["clang", "cuda"])
def test_get_kernel_actions_identity(ren_name):
  """the same actions apply, and give the same kernel, as tinygrad's, for every corpus kernel"""
  ok = n = 0
  for kname, ast in tp.captured(ren_name):
    tk, ck = tp.schedulers(ast, ren_name)
    ta, ca = tg_search.get_kernel_actions(tk), search.get_kernel_actions(ck)
    n += 1
    ok += sorted(ta) == sorted(ca) and all(from_tinygrad(ta[i].ast) is ca[i].ast and
                                           _to_tc_arg(tuple(ta[i].applied_opts)) == tuple(ca[i].applied_opts) for i in ta)
  print(f"get_kernel_actions ({ren_name}): {ok}/{n} identical")
  assert n >= 100 and ok == n

@pytest.mark.parametrize("name", ["sm_80", "rdna3", "metal"])
def test_get_kernel_actions_identity_with_tensor_cores(name):
  """on renderers with tensor cores (tinygrad's CUDA, AMD and Metal as the oracle), the TC actions apply as in tinygrad"""
  import test_tc as ttc
  ok = n = with_tc = 0
  for kname, ast in ttc.matmuls(ttc.device_of(name)):
    tk, ck = ttc.schedulers(ast, name)
    ta, ca = tg_search.get_kernel_actions(tk), search.get_kernel_actions(ck)
    n += 1
    with_tc += any(getattr(s, "tensor_core", None) is not None for s in ta.values())
    ok += sorted(ta) == sorted(ca) and all(ttc.same_state(ta[i], ca[i]) for i in ta)
  print(f"get_kernel_actions ({name}, tensor cores): {ok}/{n} identical, {with_tc} with a tensor core applied")
  assert n >= 10 and with_tc >= 3 and ok == n

def test_get_kernel_actions_arguments():
  kname, ast = tp.captured("clang")[0]
  tk, ck = tp.schedulers(ast, "clang")
  for kw in ({"include_0": False}, {"max_up": 4}, {"include_0": False, "max_up": 1}):
    assert sorted(tg_search.get_kernel_actions(tk, **kw)) == sorted(search.get_kernel_actions(ck, **kw))
  assert search.get_kernel_actions(ck)[0] is ck
  mine = search.get_kernel_actions(ck, actions=[Opt(OptOps.UPCAST, 0, 4)], include_0=False)
  assert set(mine) <= {1} and all(s.applied_opts == [Opt(OptOps.UPCAST, 0, 4)] for s in mine.values())

def test_bufs_from_ast_is_tinygrads():
  for kname, ast in tp.captured("clang")[:40]:
    mine = search.bufs_from_ast(from_tinygrad(ast), "CPU")
    theirs = tg_search.bufs_from_ast(ast, "CPU") if hasattr(tg_search, "bufs_from_ast") else None
    if theirs is None:
      from tinygrad.codegen.opt.postrange import bufs_from_ast as tg_bufs
      theirs = tg_bufs(ast, "CPU")
    assert [(b.size, b.dtype.name) for b in mine] == [(b.size, b.dtype.name) for b in theirs]
    assert all(b.device == "CPU" for b in mine)

@pytest.mark.parametrize("gs", [[1024, 1024, 1], [65536, 2, 1], [17, 17, 17], [4096, 1, 1], [16, 16, 16], [300, 300, 3]])
def test_get_test_global_size_is_tinygrads(gs):
  assert search.get_test_global_size(gs, 65536, {}) == tuple(tg_search.get_test_global_size(gs, 65536, {}))

def test_get_test_global_size_ends_where_tinygrad_would_loop():
  """tinygrad halves only dims over 16, so it loops forever on [16]*5 over 65536 threads: tinyc stops there"""
  assert search.get_test_global_size([16] * 5, 65536, {}) == ([16] * 5, 1.0)

def test_time_program_runs_the_kernel():
  ast = matmul(32, 32, 32)
  p = tinyc.codegen.get_program(ast, Device["CPU"].renderer, opts=[])
  bufs = search.bufs_from_ast(ast, "CPU")
  for b in bufs: b.ensure_allocated()
  tms = search.time_program(p, bufs, cnt=5)
  assert len(tms) == 5 and all(0 < t < 1 for t in tms)
  assert len(search.time_program(p, bufs, cnt=5, early_stop=0.0)) == 1   # slower than early_stop after the first run

# ---- the search against tinygrad's, under one deterministic timer ----

def tinygrad_beam(ast, amt, monkeypatch):
  monkeypatch.setattr(tg_search, "_time_program", lambda p, lib, var_vals, rawbufs, **kw: [fake_seconds(p.src)])
  k = TgScheduler(ast, TgDevice["CPU"].renderer)
  k.convert_loop_to_global()
  with Context(IGNORE_BEAM_CACHE=1, CACHELEVEL=0):
    return tg_search.beam_search(k, tg_search.bufs_from_ast(ast, "CPU") if hasattr(tg_search, "bufs_from_ast") else
                                 __import__("tinygrad.codegen.opt.postrange", fromlist=["x"]).bufs_from_ast(ast, "CPU"), amt,
                                 disable_cache=True)

@pytest.mark.parametrize("which", [0, 1])
def test_beam_walks_tinygrads_beam(which, monkeypatch):
  from tinygrad.uop.ops import Ops as TgOps
  picks = [(n, a) for n, a in tp.captured("clang") if any(u.op is TgOps.REDUCE for u in a.toposort())]
  kname, ast = picks[which]
  theirs = tinygrad_beam(ast, 2, monkeypatch)
  ck = scheduler(from_tinygrad(ast))
  mine = search.beam_search(ck, search.bufs_from_ast(ck.ast, "CPU"), 2, disable_cache=True, timer=lambda p, rb: fake_seconds(p.src))
  assert tuple(mine.applied_opts) == _to_tc_arg(tuple(theirs.applied_opts)), kname

# ---- the search for real ----

@pytest.fixture(scope="module")
def mm256():
  return matmul(256, 256, 256)

def test_beam_keeps_the_fastest_candidate_it_timed(mm256, cache_db):
  # real timings (the speed of what BEAM finds is bench/beam.py's, not a timed test's): whatever the machine's noise,
  # the kernel BEAM returns is the one it measured fastest, less than BEAM_MIN_PROGRESS (10 ns) aside
  ren = Device["CPU"].renderer
  bufs = search.bufs_from_ast(mm256, "CPU")
  timed = []
  def timer(p, rb):
    timed.append((p.src, min(search.time_program(p, rb, cnt=3))))
    return timed[-1][1]
  best = search.beam_search(scheduler(mm256, ren), bufs, 3, disable_cache=True, timer=timer)
  srcs = [src for src, _ in timed]
  assert len(timed) > 3 and len(set(srcs)) == len(srcs)   # each distinct program is timed once
  p = tinyc.codegen.get_program(mm256, ren, opts=best.applied_opts)
  chosen = dict(timed)[p.src.replace(p.function_name, "test")]   # BEAM renders its candidates as "test", as tinygrad's
  assert chosen <= min(t for _, t in timed) + 1e-8

def test_second_search_hits_the_cache(cache_db):
  ast = matmul(48, 48, 48)
  calls = []
  def timer(p, rb):
    calls.append(p.src)
    return fake_seconds(p.src)
  first = search.beam_search(scheduler(ast), search.bufs_from_ast(ast, "CPU"), 2, timer=timer)
  n = len(calls)
  second = search.beam_search(scheduler(ast), search.bufs_from_ast(ast, "CPU"), 2, timer=timer)
  assert n > 0 and len(calls) == n and second.applied_opts == first.applied_opts and second is not first
  search.beam_search(scheduler(ast), search.bufs_from_ast(ast, "CPU"), 2, timer=timer, disable_cache=True)
  assert len(calls) > n

def test_custom_actions_timer_and_on_step():
  ast = matmul(32, 32, 32)
  mine = [Opt(OptOps.UPCAST, 0, 2), Opt(OptOps.UPCAST, 1, 2), Opt(OptOps.UNROLL, 0, 4)]
  seen, steps = [], []
  def timer(p, rawbufs):
    assert isinstance(p.lib, bytes) and len(rawbufs) == 3
    seen.append(p.src)
    return fake_seconds(p.src)
  def on_step(step, ranked):
    steps.append(step)
    assert [t for _, t in ranked] == sorted(t for _, t in ranked)
    assert all(set(s.applied_opts) <= set(mine) for s, _ in ranked)
    return step == 2
  best = search.beam_search(scheduler(ast), search.bufs_from_ast(ast, "CPU"), 3, disable_cache=True, actions=mine, timer=timer,
                            on_step=on_step)
  assert steps == [1, 2] and seen and set(best.applied_opts) <= set(mine)

def test_executor_builds_the_same_search():
  """candidates built by an executor's workers (ProgramSpecs with their lib) give the search the local one gives"""
  ast = matmul(32, 32, 32)
  args = (search.bufs_from_ast(ast, "CPU"), 2)
  kw = dict(disable_cache=True, timer=lambda p, rb: fake_seconds(p.src))
  local = search.beam_search(scheduler(ast), *args, **kw)
  with cf.ThreadPoolExecutor(2) as ex:
    threaded = search.beam_search(scheduler(ast), *args, executor=ex, **kw)
  with cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
    processes = search.beam_search(scheduler(ast), *args, executor=ex, **kw)
  assert local.applied_opts == threaded.applied_opts == processes.applied_opts

def test_parallel_compiles_give_the_serial_result(monkeypatch):
  ast = matmul(32, 32, 32)
  kw = dict(disable_cache=True, timer=lambda p, rb: fake_seconds(p.src))
  monkeypatch.setenv("PARALLEL", "0")
  serial = search.beam_search(scheduler(ast), search.bufs_from_ast(ast, "CPU"), 2, **kw)
  monkeypatch.setenv("PARALLEL", "4")
  parallel = search.beam_search(scheduler(ast), search.bufs_from_ast(ast, "CPU"), 2, **kw)
  assert serial.applied_opts == parallel.applied_opts

def test_apply_opts_runs_beam_under_BEAM():
  code = textwrap.dedent("""
    import sys; sys.path.append(sys.argv[1])
    import tinyc, tinyc.codegen
    from tinyc.demo import matmul
    p = tinyc.codegen.get_program(matmul(32, 32, 32), tinyc.Device["CPU"].renderer)
    print(len(p.applied_opts))
  """)
  env = {**os.environ, "BEAM": "1", "IGNORE_BEAM_CACHE": "1", "DEBUG": "2"}
  r = subprocess.run([sys.executable, "-c", code, REPO], env=env, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr
  assert int(r.stdout.split()[-1]) >= 1 and "BEAM step 1:" in r.stderr
  r = subprocess.run([sys.executable, "-c", code, REPO], env={**env, "DEBUG": "0"}, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0 and "BEAM" not in r.stderr   # not a terminal, no DEBUG: silent

# ---- bad input ----

class _FailingCompiler:
  """compiles every other source, the rest fail with CompileError; one sleeps past BEAM_TIMEOUT_SEC"""
  def __init__(self, sleep_on=None):
    self.real, self.n, self.sleep_on = tinyc.ClangCompiler(), 0, sleep_on
  def compile_cached(self, src):
    self.n += 1
    if self.sleep_on is not None and self.n == self.sleep_on: time.sleep(3)
    if self.n % 2 == 0: raise tinyc.CompileError("no")
    return self.real.compile(src)

def failing_renderer(**kw):
  ren = tinyc.ClangJITRenderer()
  ren.compiler = _FailingCompiler(**kw)
  return ren

def test_failing_compiles_are_dropped():
  ast = matmul(32, 32, 32)
  ren = failing_renderer()
  best = search.beam_search(scheduler(ast, ren), search.bufs_from_ast(ast, "CPU"), 2, disable_cache=True)
  assert isinstance(best, Scheduler) and ren.compiler.n > 2

def test_a_compile_that_times_out_is_dropped(monkeypatch):
  monkeypatch.setenv("BEAM_TIMEOUT_SEC", "1")
  monkeypatch.setenv("PARALLEL", "2")
  ast = matmul(32, 32, 32)
  ren = failing_renderer(sleep_on=1)
  st = time.perf_counter()
  best = search.beam_search(scheduler(ast, ren), search.bufs_from_ast(ast, "CPU"), 1, disable_cache=True)
  assert isinstance(best, Scheduler) and time.perf_counter() - st < 60

@pytest.mark.parametrize("exc", [ValueError, KeyboardInterrupt])
def test_a_timer_that_raises_stops_the_search(exc):
  ast = matmul(32, 32, 32)
  before = live_threads()
  def timer(p, rb): raise exc("stop")
  with pytest.raises(exc, match="stop"):
    search.beam_search(scheduler(ast), search.bufs_from_ast(ast, "CPU"), 2, disable_cache=True, timer=timer)
  assert threads_after_joins(before) == before   # the compile threads are joined

def test_ctrl_c_stops_the_search_cleanly():
  """SIGINT while the compile threads run: KeyboardInterrupt in the caller, the threads joined, no hang"""
  code = textwrap.dedent("""
    import os, signal, sys, threading, time; sys.path.append(sys.argv[1])
    import tinyc
    from tinyc import search
    from tinyc.demo import matmul
    ast = matmul(64, 64, 64)
    k = tinyc.Scheduler(ast, tinyc.Device["CPU"].renderer); k.convert_loop_to_global()
    threads = lambda: len(os.listdir("/proc/self/task"))
    before = threads()
    signal.signal(signal.SIGINT, signal.default_int_handler)   # Ctrl-C raises here even when the caller's SIGINT is ignored
    t = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    t.start()
    try: search.beam_search(k, search.bufs_from_ast(ast, "CPU"), 4, disable_cache=True)
    except KeyboardInterrupt:
      t.join()
      deadline = time.monotonic() + 5   # joined threads leave /proc a moment after the join returns
      while threads() != before and time.monotonic() < deadline: time.sleep(0.01)
      print("interrupted", threads() - before)
  """)
  env = {**os.environ, "CACHELEVEL": "0", "PARALLEL": "2"}
  r = subprocess.run([sys.executable, "-c", code, REPO], env=env, capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  assert r.stdout.split() == ["interrupted", "0"]

def test_an_on_step_that_raises_stops_the_search():
  ast = matmul(32, 32, 32)
  def on_step(step, ranked): raise RuntimeError("enough")
  with pytest.raises(RuntimeError, match="enough"):
    search.beam_search(scheduler(ast), search.bufs_from_ast(ast, "CPU"), 2, disable_cache=True, on_step=on_step,
                       timer=lambda p, rb: fake_seconds(p.src))

class _LosingExecutor:
  """a thread pool that loses every third candidate, as an executor whose worker died"""
  def __init__(self): self.pool, self.n = cf.ThreadPoolExecutor(2), 0
  def submit(self, fn, *args):
    self.n += 1
    if self.n % 3 == 0:
      f = cf.Future()
      f.set_exception(cf.process.BrokenProcessPool("worker died"))
      return f
    return self.pool.submit(fn, *args)

def test_an_executor_that_loses_workers_loses_only_their_candidates():
  ast = matmul(32, 32, 32)
  ex = _LosingExecutor()
  timed = []
  best = search.beam_search(scheduler(ast), search.bufs_from_ast(ast, "CPU"), 2, disable_cache=True, executor=ex,
                            timer=lambda p, rb: timed.append(1) or fake_seconds(p.src))
  ex.pool.shutdown()
  assert isinstance(best, Scheduler) and 0 < len(timed) < ex.n

def test_bad_arguments_raise():
  ast = matmul(16, 16, 16)
  bufs = search.bufs_from_ast(ast, "CPU")
  with pytest.raises(TypeError): search.beam_search("not a scheduler", bufs, 2)
  with pytest.raises(ValueError): search.beam_search(scheduler(ast), bufs, 0)
  with pytest.raises(TypeError): search.beam_search(scheduler(ast), bufs, 2, actions=[1, 2])
  with pytest.raises(TypeError): search.beam_search(scheduler(ast), bufs, 2, timer=3)
  with pytest.raises(TypeError): search.get_kernel_actions(None)
  with pytest.raises(TypeError): search.bufs_from_ast(3, "CPU")
  with pytest.raises(ValueError): search.get_test_global_size([4], 0, {})
  with pytest.raises(ValueError): search.time_program(tinyc.codegen.get_program(ast, Device["CPU"].renderer, opts=[]), bufs, cnt=0)

def test_memory_stays_flat():
  from sanitizer import rss, RSS_SLACK
  ast = matmul(16, 16, 16)
  kw = dict(disable_cache=True, timer=lambda p, rb: fake_seconds(p.src), actions=search.actions[:20])
  for _ in range(3): search.beam_search(scheduler(ast), search.bufs_from_ast(ast, "CPU"), 2, **kw)
  before = rss()
  for _ in range(15): search.beam_search(scheduler(ast), search.bufs_from_ast(ast, "CPU"), 2, **kw)
  assert rss() - before < 4_000_000 + RSS_SLACK

# ---- the examples ----

def run_example(name, *args, timeout=300):
  r = subprocess.run([sys.executable, os.path.join(REPO, "examples", name), *args], capture_output=True, text=True, timeout=timeout,
                     env={**os.environ, "PYTHONPATH": os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")])})
  assert r.returncode == 0, r.stdout + r.stderr
  return r.stdout

def test_beam_farm_on_a_local_cluster():
  """the compile farm: candidates built on a 2-worker dask LocalCluster, timed here, the results checked with numpy"""
  out = run_example("beam_farm.py", "--workers", "2", "--amt", "1", "--size", "16")
  assert "cluster: 2 workers" in out and out.count("built on the cluster") == 3 and out.count("checked against numpy") == 2

def test_custom_search_example():
  out = run_example("custom_search.py", "--size", "32", "--tries", "3")
  assert "random search, 3 tries" in out and "BEAM=2 with the same timer" in out
