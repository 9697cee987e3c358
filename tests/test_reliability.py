"""What tinyc promises about bad input, memory, faults and threads (README, "Guarantees"), beyond the fuzzers:

- a malformed graph raises the exception type tinygrad raises on it (differential, where tinygrad raises), never
  crashes; where tinygrad answers, tinyc answers or raises a clear IndexError/TypeError;
- repeating every public operation, its errors included, leaves the live UOp count and the process's memory flat;
- a missing, failing or hanging compiler and an unwritable or corrupt cache give clear errors or are survived;
- threads calling into tinyc at once get what serial calls get;
- objects that can hold Python references in a cycle are collected."""
import gc, os, pickle, re, subprocess, sys, textwrap, threading, pathlib
import pytest
import tinyc
from tinyc import UOp, Ops, dtypes, AxisType, KernelInfo, Opt, OptOps, PatternMatcher, UPat, graph_rewrite, _C
from tinyc.codegen import get_program
import tinygrad.uop.ops as tg_ops
from tinygrad.dtype import dtypes as tg_dtypes
from tinygrad.codegen.late.expander import expander as tg_expander
from tinygrad.uop.symbolic import symbolic as tg_symbolic
import corpus
from tinyc.tinygrad import from_tinygrad
from sanitizer import rss, RSS_SLACK

ROOT = pathlib.Path(__file__).resolve().parent.parent
def MATMUL():
  """the corpus's 16x32 @ 32x8 matmul, as a tinyc AST"""
  return from_tinygrad(dict(corpus.kernel_asts())["matmul/3"])

# ---- malformed graphs: the exception tinygrad raises, or a clear one ----

def _malformed_cases(UOp, Ops, dtypes, expander, symbolic, graph_rewrite):
  x, f = UOp.variable("x", 0, 10), UOp.const(dtypes.float, 1.0)
  unroll = lambda arg, n=1: UOp(Ops.UNROLL, dtypes.float, (UOp.const(dtypes.float.vec(n), 1.0),), arg=arg)
  return {
    "add_one_src_simplify": lambda: UOp(Ops.ADD, dtypes.index, (x,)).simplify(),
    "add_one_src_vmin": lambda: UOp(Ops.ADD, dtypes.index, (x,)).vmin,
    "add_one_src_render": lambda: UOp(Ops.ADD, dtypes.index, (x,)).render(),
    "max_one_src_render": lambda: UOp(Ops.MAX, dtypes.index, (x,)).render(),
    "where_two_src_render": lambda: UOp(Ops.WHERE, dtypes.index, (x < 3, x)).render(),
    "mulacc_two_src_render": lambda: UOp(Ops.MULACC, dtypes.index, (x, x)).render(),
    "bind_one_src_render": lambda: UOp(Ops.BIND, dtypes.index, (x,)).render(),
    "cmplt_one_src_simplify": lambda: UOp(Ops.CMPLT, dtypes.bool, (x,)).simplify(),
    "gep_over_unroll_of_size_0": lambda: graph_rewrite(UOp(Ops.GEP, dtypes.float, (unroll(((0, 0),)),), arg=(0,)), expander),
    "gep_int_arg_expander": lambda: graph_rewrite(UOp(Ops.GEP, dtypes.float, (unroll(((0, 2),), 2),), arg=0), expander),
    "gep_int_arg_render": lambda: UOp(Ops.GEP, dtypes.float, (f.broadcast(2),), arg=0).render(),
    "add_three_src_symbolic": lambda: graph_rewrite(UOp(Ops.ADD, dtypes.index, (x, x, x)), symbolic),
    "sin_no_src_simplify": lambda: (UOp(Ops.SIN, dtypes.float, ()) + f).simplify(),
    "range_str_arg_vmax": lambda: UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, 4),), arg="r").vmax,
    "define_var_no_bounds_vmax": lambda: UOp(Ops.DEFINE_VAR, dtypes.index, arg=("n",)).vmax,
    "special_no_src_render": lambda: (UOp(Ops.SPECIAL, dtypes.index, (), arg="gidx0") + 1).render(),
  }

def _outcome(fn):
  try: fn()
  except Exception as e: return type(e)
  return None

def test_malformed_graphs_raise_as_tinygrad():
  tg = _malformed_cases(tg_ops.UOp, tg_ops.Ops, tg_dtypes, tg_expander, tg_symbolic, tg_ops.graph_rewrite)
  tc = _malformed_cases(UOp, Ops, dtypes, _C.native_rules()["expander"], _C.native_rules()["symbolic"], graph_rewrite)
  raised = 0
  for name in tg:
    want, got = _outcome(tg[name]), _outcome(tc[name])
    if want is not None:
      raised += 1
      assert got is not None and issubclass(got, want), f"{name}: tinygrad raises {want.__name__}, tinyc {got}"
    else: assert got in (None, IndexError, TypeError), f"{name}: tinygrad answers, tinyc raises {got}"
  assert raised >= 10

def test_a_shape_from_an_arg_that_is_no_tuple_is_refused():
  """ENCDEC's shape is its arg[0], which may be anything: tinygrad indexes it as it is (a str shape 'l' segfaulted the
  movement methods, found by the uop fuzzer); tinyc refuses a shape that is not a tuple with a TypeError everywhere"""
  for arg in ("l", ("ab", 1), (range(3), 0), (5,)):
    u = UOp(Ops.ENCDEC, dtypes.void, (), arg)
    for call in (lambda: u.shape, lambda: u.ndim, lambda: u.numel(), lambda: u.expand(-1), lambda: u.expand((4,)), lambda: u.reshape((2, 2)),
                 lambda: u.pad(((0, 1),)), lambda: u.shrink(((0, 1),)), lambda: u.flip((0,)), lambda: u.permute((1, 0)),
                 lambda: u.bitcast(dtypes.int).shape, lambda: u.reshape(2, 1).shape):
      with pytest.raises(TypeError, match="the shape of a Ops.ENCDEC must be a tuple"): call()
  assert UOp(Ops.ENCDEC, dtypes.void, (), ((2, 3), 1)).expand(2, 3).shape == (2, 3)   # a tuple shape works as before

def test_malformed_node_is_named_in_the_error():
  bad = UOp(Ops.ADD, dtypes.index, (UOp.variable("x", 0, 10),))
  with pytest.raises(IndexError, match="Ops.ADD needs at least 2 sources"): (bad * 2).simplify()
  with pytest.raises(TypeError, match="the arg of Ops.GEP"): UOp(Ops.GEP, dtypes.int, (UOp.const(dtypes.int.vec(2), 1),), arg=1).render()

def test_malformed_kernels_raise_in_every_pass():
  """a corpus kernel with one node broken: every entry point refuses it with the same clear error"""
  from tinyc.codegen import full_rewrite_to_sink, linearize
  ast = from_tinygrad(corpus.kernel_asts()[0][1])
  add = next(u for u in ast.toposort() if u.op is Ops.ADD)
  bad = ast.substitute({add: add.replace(src=add.src[:1])})
  ren = tinyc.ClangRenderer()
  for call in (lambda: get_program(bad, ren), lambda: full_rewrite_to_sink(bad, ren), lambda: tinyc.Scheduler(bad, ren),
               lambda: linearize(bad), lambda: bad.simplify(), lambda: graph_rewrite(bad, _C.native_rules()["symbolic"])):
    with pytest.raises(IndexError, match="Ops.ADD needs at least 2 sources"): call()

def test_specs_still_judge_malformed_nodes_one_by_one():
  """the spec rule sets check form themselves (as tinygrad's do): a SINK over a malformed node passes shared_spec,
  the node itself fails it"""
  bad = UOp(Ops.DEFINE_VAR, dtypes.int, arg=None)
  assert _C.native_rules()["shared_spec"].rewrite(UOp.sink(bad)) is True
  with pytest.raises(TypeError): _C.type_verify([bad], _C.native_rules()["shared_spec"])

# ---- memory: every public operation, repeated, leaves nothing behind ----

def buffers_for(p, fill=0):
  """allocated buffers for a program's DEFINE_GLOBALs, in order"""
  import numpy as np
  gl = sorted((u for u in p.uops if u.op is Ops.DEFINE_GLOBAL), key=lambda u: u.arg)
  return [tinyc.Buffer.from_numpy(np.full(u.dtype.size, fill, dtype=np.dtype(u.dtype.base.fmt))) for u in gl]
@pytest.fixture(scope="module")
def kernel():
  ast = MATMUL()
  p = get_program(ast, tinyc.Device["CPU"].renderer)    # compiled once: the loop below hits the cache
  return ast, p

def _every_operation(ast, p, i):
  """one round of each public operation (fresh nodes each round), and one of each error"""
  import numpy as np
  a = UOp.variable(f"leak{i % 7}", 0, 100)
  e = (a * (i % 5 + 2) + 3) // 2 + (a < 50).where(a, i % 3)
  e.simplify(); e.render(); e.vmin; e.vmax; e.key; e.toposort(); pickle.loads(pickle.dumps(e))
  pm = PatternMatcher([(UPat.var("x") // 1, lambda x: x), (UPat.var("x") + 3, lambda x: None)]) + _C.native_rules()["symbolic"]
  graph_rewrite(e, pm, ctx={})
  try: graph_rewrite(e, pm, bottom_up=True)
  except RuntimeError: pass   # some of these loop bottom up, in tinygrad too ("infinite loop in fixed_point_rewrite")
  q = get_program(ast, tinyc.Device["CPU"].renderer, opts=[Opt(OptOps.UPCAST, 0, 4)] if i % 2 else None)   # a cache hit
  r = pickle.loads(pickle.dumps(tinyc.CompiledRunner(p)))
  bufs = buffers_for(p)
  r(bufs, {}, wait=True); bufs[0].numpy().sum(); bufs[0].copyin(bufs[0].numpy().copy().data)
  pickle.loads(pickle.dumps(q))
  errors = [lambda: UOp(Ops.ADD, dtypes.int, (a.cast(dtypes.int),)).simplify(),
            lambda: tinyc.Scheduler(ast, tinyc.ClangRenderer()).apply_opt(Opt(OptOps.UPCAST, 9, 4)),
            lambda: tinyc.ClangCompiler().compile("this is not C"), lambda: bufs[0].copyin(b"123"),
            lambda: pickle.loads(pickle.dumps(p)[:-9]), lambda: r(bufs[:1], {}), lambda: UOp(Ops.ADD, dtypes.int, (a, "x"))]
  for err in errors:
    try: err()
    except Exception: pass
    else: raise AssertionError("expected an error")

def test_repeating_every_operation_leaves_memory_flat(kernel):
  ast, p = kernel
  for i in range(40): _every_operation(ast, p, i)     # warm-up: caches, free lists, the intern table reach their size
  gc.collect()
  nodes, mem = _C._intern_count(), rss()
  for i in range(400): _every_operation(ast, p, i)
  gc.collect()
  grown = (rss() - mem) / 2**20
  print(f"\n400 rounds of every operation: live UOps {nodes} -> {_C._intern_count()}, RSS +{grown:.2f} MB")
  assert _C._intern_count() == nodes
  assert grown < 8 + RSS_SLACK / 2**20, f"RSS grew by {grown:.1f} MB"

# ---- faults: compilers that are missing, fail or hang; caches that cannot be written or are corrupt ----

FAULT_SCRIPT = textwrap.dedent("""
  import sys, tinyc
  from tinyc import UOp, Ops, dtypes, AxisType, KernelInfo
  from tinyc.codegen import get_program
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(16), arg=0)
  r = UOp.range(16, 0, AxisType.LOOP)
  ast = UOp.sink(buf.index(r, ptr=True).store(UOp.const(dtypes.float, float(sys.argv[1]))).end(r), arg=KernelInfo(name="fill"))
  try:
    p = get_program(ast, tinyc.Device["CPU"].renderer)
    b = tinyc.Buffer("CPU", 16, dtypes.float).allocate()
    tinyc.CompiledRunner(p)([b], {}, wait=True)
    print("ran", b.as_buffer().cast("f")[3], tinyc._C.compile_stats()["cache_hits"])
  except Exception as e: print(type(e).__name__ + ":", e)
""")

def _run_fault(tmp_path, value="2.0", **env):
  full = {**os.environ, "TINYC_CACHEDB": str(tmp_path / "cache.db"), **env}
  res = subprocess.run([sys.executable, "-c", FAULT_SCRIPT, value], env=full, capture_output=True, text=True, timeout=120)
  assert res.returncode == 0, res.stderr
  return res.stdout.strip()

def test_missing_compiler(tmp_path):
  assert _run_fault(tmp_path, CC="/nonexistent/clang").startswith("CompileError: could not run /nonexistent/clang")
  empty = tmp_path / "bin"; empty.mkdir()
  env = {k: v for k, v in os.environ.items() if k != "CC"}
  res = subprocess.run([sys.executable, "-c", FAULT_SCRIPT, "1.0"], env={**env, "PATH": str(empty), "TINYC_CACHEDB": str(tmp_path / "c.db")},
                       capture_output=True, text=True, timeout=120)
  assert res.stdout.strip().startswith("CompileError: could not run clang"), res.stdout + res.stderr

def test_failing_compiler_shows_its_log(tmp_path):
  cc = tmp_path / "badcc"
  cc.write_text("#!/bin/sh\necho 'fatal: the compiler says no' >&2\nexit 3\n"); cc.chmod(0o755)
  out = _run_fault(tmp_path, CC=str(cc))
  assert out.startswith("CompileError:") and "exit status 3" in out and "the compiler says no" in out

def test_hanging_compiler_is_killed(tmp_path):
  cc = tmp_path / "hangcc"
  cc.write_text("#!/bin/sh\nsleep 60\n"); cc.chmod(0o755)
  import time
  t0 = time.time()
  out = _run_fault(tmp_path, CC=str(cc), TINYC_COMPILE_TIMEOUT="1")
  assert out.startswith("CompileError:") and "did not finish in 1 s" in out
  assert time.time() - t0 < 30

def test_unwritable_cache_still_compiles(tmp_path):
  assert _run_fault(tmp_path, TINYC_CACHEDB="/proc/no/such/dir/cache.db") == "ran 2.0 0"

def test_corrupt_cache_and_wal_are_not_trusted(tmp_path):
  """garbage in the database, its write-ahead log or both: the right program runs (rows are checksummed), and with
  nothing intact it is compiled again"""
  assert _run_fault(tmp_path, "5.0") == "ran 5.0 0"
  assert _run_fault(tmp_path, "5.0") == "ran 5.0 1"                      # the cache works
  for names in (["cache.db-wal"], ["cache.db"], ["cache.db", "cache.db-wal"]):
    for name in names: (tmp_path / name).write_bytes(os.urandom(20000))
    assert _run_fault(tmp_path, "5.0").startswith("ran 5.0 "), names
  for name in ("cache.db", "cache.db-wal", "cache.db-shm"): (tmp_path / name).write_bytes(os.urandom(20000))
  assert _run_fault(tmp_path, "5.0") == "ran 5.0 0"                      # nothing intact: compiled again

def test_loaded_programs_survive_a_corrupted_cache(tmp_path, monkeypatch):
  monkeypatch.setenv("TINYC_CACHEDB", str(tmp_path / "cache.db"))
  ast = MATMUL()
  runner = tinyc.CompiledRunner(get_program(ast, tinyc.Device["CPU"].renderer))
  (tmp_path / "cache.db").write_bytes(os.urandom(5000))
  first = buffers_for(runner.p, fill=2)
  assert runner(first, {}, wait=True) >= 0                                        # still runs
  again = tinyc.CompiledRunner(get_program(ast, tinyc.Device["CPU"].renderer))     # and the cache is rebuilt
  second = buffers_for(again.p, fill=2)
  again(second, {}, wait=True)
  assert (first[0].numpy() == second[0].numpy()).all() and first[0].numpy()[0] == 4 * 32

def test_a_device_that_is_not_here_is_named():
  """tinygrad knows CUDA, tinyc has no CUDA device yet: a clear RuntimeError naming it, not a crash or a fallback"""
  res = subprocess.run([sys.executable, "-c", "import tinyc\ntry: tinyc.Device['CUDA']\nexcept RuntimeError as e: print(e)"],
                       env={**os.environ, "CUDA": "1"}, capture_output=True, text=True, timeout=120)
  assert "CUDA" in res.stdout and "tinyc has" in res.stdout, res.stdout + res.stderr

# ---- threads ----

def test_threads_get_the_programs_of_serial_runs():
  asts = [from_tinygrad(a) for _, a in corpus.kernel_asts()[:24]]
  opts = [None, [Opt(OptOps.UPCAST, 0, 4)]]
  def src(a, o):   # without the count tinygrad appends to a function name seen before (Scheduler.kernel_cnt: "E_4n3")
    try: return re.sub(r"void (\w+?)(n\d+)?\(", r"void \1(", get_program(a, tinyc.ClangRenderer(), opts=o).src)
    except tinyc.KernelOptError as e: return f"KernelOptError: {e}"
  serial = {(i, j): src(a, o) for i, a in enumerate(asts) for j, o in enumerate(opts)}
  got, errors = [], []
  def work(t):
    try:
      for k in range(len(asts) * 2):
        i, j = (k + 5 * t) % len(asts), (k // len(asts) + t) % 2
        got.append((i, j, src(asts[i], opts[j])))
    except Exception as e: errors.append(e)
  old = sys.getswitchinterval()
  sys.setswitchinterval(1e-5)
  try:
    ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in ts: t.start()
    for t in ts: t.join()
  finally: sys.setswitchinterval(old)
  assert not errors, errors
  assert len(got) == 4 * len(asts) * 2 and all(text == serial[(i, j)] for i, j, text in got)

def test_threads_interleaving_inside_rewrites():
  """Python rules give up the GIL in the middle of a rewrite, so the rewrites of several threads interleave inside
  graph_rewrite and inside native rules; each gets the serial answer"""
  def slow(x):
    sum(range(50))   # enough bytecode for a thread switch
    return None
  pm = PatternMatcher([(UPat(Ops.ADD, name="x"), slow)]) + _C.native_rules()["symbolic"]
  exprs = [(UOp.variable(f"t{i}", 0, 50) * (i + 2) + 3 * i) // (i + 1) % 7 + (UOp.variable("u", 0, 9) < i).where(UOp.variable("u", 0, 9), 2)
           for i in range(30)]
  serial = [graph_rewrite(e, pm) for e in exprs]
  got, errors = [], []
  def work():
    try:
      for _ in range(5): got.append([graph_rewrite(e, pm) for e in exprs])
    except Exception as e: errors.append(e)
  old = sys.getswitchinterval()
  sys.setswitchinterval(1e-6)
  try:
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts: t.start()
    for t in ts: t.join()
  finally: sys.setswitchinterval(old)
  assert not errors, errors
  assert len(got) == 20 and all(g == serial for g in got)

def test_threads_compile_and_run_at_once(tmp_path, monkeypatch):
  monkeypatch.setenv("TINYC_CACHEDB", str(tmp_path / "cache.db"))
  import numpy as np
  ast = MATMUL()
  p = get_program(ast, tinyc.Device["CPU"].renderer)
  outs, errors = [], []
  def work(t):
    try:
      runner = tinyc.CompiledRunner(p)
      bufs = buffers_for(p, fill=t + 1)
      for _ in range(20): runner(bufs, {}, wait=True)
      outs.append((t, bufs[0].numpy().copy()))
    except Exception as e: errors.append(e)
  ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
  for t in ts: t.start()
  for t in ts: t.join()
  assert not errors, errors
  for t, out in outs: np.testing.assert_allclose(out, np.full(16 * 8, 32.0 * (t + 1) ** 2, np.float32))   # 16x32 @ 32x8 of t+1

# ---- reference cycles through tinyc objects are collected ----

class Flag:
  dropped = 0
  def __del__(self): Flag.dropped += 1

def _cyclic_objects():
  ast = from_tinygrad(corpus.kernel_asts()[0][1])
  p = get_program(ast, tinyc.Device["CPU"].renderer)
  def with_dict(o): o.me, o.flag = o, Flag(); return o
  def spec_cycle():
    q = p.replace(aux=[]); q.aux.extend([q, Flag()]); return q
  class Box: pass
  def upat_cycle():
    box = Box(); box.pat, box.flag = UPat(Ops.CONST, arg=box), Flag()
  def matcher_cycle():   # a rule that refers to the matcher it ends up in, shared with a native set
    held = {"flag": Flag()}
    held["pm"] = PatternMatcher([(UPat.var("x") * 1, lambda x: held["pm"] and x)]) + _C.native_rules()["symbolic"]
  return [upat_cycle, matcher_cycle, lambda: with_dict(tinyc.Compiler()), lambda: with_dict(tinyc.ClangCompiler()), lambda: with_dict(tinyc.CompiledRunner(p)),
          lambda: with_dict(tinyc.Scheduler(ast, tinyc.ClangRenderer())), spec_cycle]

def test_reference_cycles_are_collected():
  for make in _cyclic_objects():
    gc.collect()
    before = Flag.dropped
    make()
    gc.collect()
    assert Flag.dropped == before + 1, make
