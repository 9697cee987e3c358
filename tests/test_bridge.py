"""The tinygrad bridge (tinyc.tinygrad.install): unmodified tinygrad 0.12.0 programs compile through tinyc.

Each program runs twice in fresh processes with the same seeds, once with tinygrad alone (the oracle) and once with
the bridge installed; their outputs must be equal bit for bit and every kernel's source identical (nN name counters
stripped). The bridge's routed/fallback counts are printed (pytest -s shows them) and must have no fallback."""
import json, os, re, subprocess, sys, textwrap, threading
import numpy as np
import pytest
import tinygrad  # the oracle: missing, the suite fails here
from tinygrad import Tensor
from tinygrad.helpers import Context
import tinygrad.codegen, tinygrad.engine.realize, tinygrad.codegen.opt.search, tinygrad.tensor
import tinyc
import tinyc.tinygrad as bridge

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The child: runs the named programs, spying on every CompiledRunner tinygrad builds (its ProgramSpec), and prints one
# JSON line: each program's outputs (hex of the numpy bytes) and kernels (function name, source), and the bridge's stats.
CHILD = r'''
import json, sys
BRIDGE, NAMES = sys.argv[1] == "1", sys.argv[2].split(",")
if BRIDGE:
  import tinyc.tinygrad as bridge
  bridge.install()
import tinygrad.engine.realize as realize
from tinygrad import Tensor, TinyJit, Variable, nn
from tinygrad.nn.optim import SGD
kernels, specs, built = [], [], []
def spec_fields(p):
  """the ProgramSpec's fields from its uops on (the bridge reads them in C), and whether each var is the very node in the
  uops"""
  uops = p.uops or []
  return [repr(x) for x in (p.global_size, p.local_size, [v.arg for v in p.vars], p.globals, p.outs, p.ins, p.aux,
                            [(u.op.value, str(u.dtype)) for u in uops], p.estimates)] + [all(any(v is u for u in uops) for v in p.vars)]
_init = realize.CompiledRunner.__init__
def spy(self, p, *args, **kw):
  kernels.append((p.function_name, p.src))
  specs.append(spec_fields(p))
  _init(self, p, *args, **kw)
realize.CompiledRunner.__init__ = spy
_get_program = realize.get_program
def get_program_spy(ast, renderer, opts=None):
  built.append((ast, renderer, ret := _get_program(ast, renderer, opts)))
  return ret
realize.get_program = get_program_spy

def mlp():
  Tensor.manual_seed(0)
  l1, l2 = nn.Linear(12, 16), nn.Linear(16, 4)
  opt = SGD([l1.weight, l1.bias, l2.weight, l2.bias], lr=0.1)
  x, y = Tensor.randn(8, 12), Tensor([0, 1, 2, 3, 0, 1, 2, 3])
  with Tensor.train():
    opt.zero_grad()
    loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y)
    loss.backward()
    opt.step()
  return [loss, l1.weight, l2.bias]

def cnn():
  Tensor.manual_seed(1)
  conv, x = nn.Conv2d(2, 4, 3), Tensor.randn(2, 2, 6, 6, requires_grad=True)
  conv.weight.requires_grad = True
  out = conv(x).relu().max_pool2d((2, 2)).mean()
  out.backward()
  return [out, x.grad, conv.weight.grad]

def attention():
  Tensor.manual_seed(2)
  q, k, v = Tensor.randn(1, 2, 4, 8), Tensor.randn(1, 2, 4, 8), Tensor.randn(1, 2, 4, 8)
  return [q.scaled_dot_product_attention(k, v), q.scaled_dot_product_attention(k, v, is_causal=True)]

def jit():
  @TinyJit
  def f(x, w): return (x @ w).relu().sum(1)
  Tensor.manual_seed(3)
  w = Tensor.randn(6, 5).realize()
  return [f(Tensor.randn(4, 6).realize(), w) for _ in range(4)]

def symbolic():
  Tensor.manual_seed(4)
  a = Tensor.rand(10, 4).realize()
  return [a.shrink(((0, Variable("i", 1, 10).bind(n)), None)).sum(0) for n in (3, 7)]

def beam():
  # exact sums (integers): any order of the reduce BEAM picks gives the same bits
  a = Tensor([[float(i * 8 + j) for j in range(8)] for i in range(8)])
  return [(a * 2 + 1).sum(1)]

def searched_by_tinygrad():
  """Under BEAM the search's choice depends on timings: tinygrad's get_program, given the opts the bridge's search chose,
  must render the bridge's source."""
  from tinygrad.codegen import get_program
  return [(p.src, get_program(ast, ren, list(p.applied_opts)).src) for ast, ren, p in built if ast.arg is None]

out = {}
for name in NAMES:
  kernels.clear()
  specs.clear()
  vals = globals()[name]()
  out[name] = {"outputs": [v.numpy().tobytes().hex() for v in vals], "kernels": [k for k in kernels if k[0] != "test"],
               "specs": [f for k, f in zip(kernels, specs) if k[0] != "test"]}
if BRIDGE:
  out["stats"] = bridge.stats()
  if "beam" in NAMES:
    bridge.uninstall()
    out["searched"] = searched_by_tinygrad()
print("RESULT " + json.dumps(out))
'''

def strip_counter(name: str) -> str: return re.sub(r"n\d+$", "", name)

def normalized(kernels):
  """(name, source) with tinygrad's nN counter (it numbers kernels whose names repeat) stripped from both."""
  return [(strip_counter(n), s.replace(n, strip_counter(n))) for n, s in kernels]

def norm_src(p) -> str: return normalized([(p.function_name, p.src)])[0][1]

def start_child(tmp_path, bridge_on: bool, names, **env):
  script = tmp_path / "child.py"
  script.write_text(CHILD)
  e = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **env}
  return subprocess.Popen([sys.executable, str(script), "1" if bridge_on else "0", ",".join(names)], env=e,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

def child_result(p) -> dict:
  out, err = p.communicate(timeout=600)
  assert p.returncode == 0, err[-3000:]
  return json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])

PROGRAMS = ["mlp", "cnn", "attention", "jit", "symbolic"]

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  """tinygrad alone and with the bridge, the two processes side by side (one core each)."""
  tmp = tmp_path_factory.mktemp("bridge")
  ps = [start_child(tmp, False, PROGRAMS), start_child(tmp, True, PROGRAMS)]
  tg, tc = (child_result(p) for p in ps)
  print(f"\nbridge: routed {tc['stats']['routed']}, fallback {tc['stats']['fallback']}, {tc['stats']['seconds']:.3f} s in tinyc")
  return tg, tc

@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_tinygrad(runs, name):
  tg, tc = runs
  assert len(tc[name]["kernels"]) > 0
  assert normalized(tc[name]["kernels"]) == normalized(tg[name]["kernels"])
  assert tc[name]["specs"] == tg[name]["specs"] and all(f[-1] for f in tc[name]["specs"])
  assert tc[name]["outputs"] == tg[name]["outputs"]

def test_every_kernel_routed_none_fell_back(runs):
  tg, tc = runs
  assert tc["stats"]["fallback"] == {}
  assert tc["stats"]["routed"] == sum(len(tg[n]["kernels"]) for n in PROGRAMS)
  assert tc["stats"]["seconds"] > 0

def test_beam(tmp_path):
  env = {"BEAM": "1", "IGNORE_BEAM_CACHE": "1"}
  ps = [start_child(tmp_path, False, ["beam"], **env), start_child(tmp_path, True, ["beam"], **env)]
  tg, tc = (child_result(p) for p in ps)
  print(f"\nbridge under BEAM=1: routed {tc['stats']['routed']}, fallback {tc['stats']['fallback']}")
  assert tc["beam"]["outputs"] == tg["beam"]["outputs"]
  assert tc["stats"] == {**tc["stats"], "routed": 1, "fallback": {}}
  assert len(tc["searched"]) == 1 and all(a == b for a, b in tc["searched"])

def test_llvm_renderer(tmp_path):
  if not tinyc._C.HAVE_LLVM: pytest.fail("tinyc was built without LLVM (make deps installs llvm-19-dev)")
  ps = [start_child(tmp_path, False, ["symbolic"], CPU_LLVM="1"), start_child(tmp_path, True, ["symbolic"], CPU_LLVM="1")]
  tg, tc = (child_result(p) for p in ps)
  print(f"\nbridge with CPU_LLVM=1: routed {tc['stats']['routed']}, fallback {tc['stats']['fallback']}")
  assert normalized(tc["symbolic"]["kernels"]) == normalized(tg["symbolic"]["kernels"])
  assert all("define" in src and "{" in src for _, src in tc["symbolic"]["kernels"]), "not LLVM IR"
  assert tc["symbolic"]["outputs"] == tg["symbolic"]["outputs"]
  assert tc["stats"]["fallback"] == {} and tc["stats"]["routed"] == len(tg["symbolic"]["kernels"])

SCRIPT = '''
import sys
from tinygrad import Tensor
print("argv", sys.argv[1:], __name__)
print((Tensor([1.0, 2.0, 3.0]) * 2 + 1).tolist())
import tinygrad.engine.realize as realize
print("routed" if realize.get_program.__module__ == "tinyc.tinygrad" else "tinygrad's own")
'''

def test_launcher_prints_what_the_script_prints(tmp_path):
  (script := tmp_path / "script.py").write_text(SCRIPT)
  env = {**os.environ, "PYTHONPATH": ROOT}
  ps = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for cmd in ([sys.executable, str(script), "x", "--y"], [sys.executable, "-m", "tinyc", "run", str(script), "x", "--y"])]
  (plain, plain_err), (run, run_err) = (p.communicate(timeout=300) for p in ps)
  assert ps[0].returncode == 0 and ps[1].returncode == 0, plain_err + run_err
  assert plain.replace("tinygrad's own", "routed") == run and "routed" in run
  bad = subprocess.run([sys.executable, "-m", "tinyc", "run"], env=env, capture_output=True, text=True, timeout=300)
  assert bad.returncode != 0 and "usage" in bad.stderr

# ---- in this process ----

BOUND = [(tinygrad.codegen, "get_program"), (tinygrad.engine.realize, "get_program"), (tinygrad.codegen.opt.search, "get_program"),
         (tinygrad.engine.realize, "run_schedule"), (tinygrad.tensor, "run_schedule")]

def small_program(k: float):
  return ((Tensor.arange(24).reshape(4, 6).float() * k + 1).exp2().sum(1) / k).numpy()

def test_install_uninstall_reinstall():
  originals = [getattr(m, n) for m, n in BOUND]
  expected = small_program(0.5)
  for _ in range(2):
    bridge.install()
    bridge.install()   # a second install is a no-op, not a wrapper of the wrapper
    assert all(getattr(m, n).__module__ == "tinyc.tinygrad" for m, n in BOUND)
    before = bridge.stats()["routed"]
    np.testing.assert_array_equal(small_program(0.5), expected)
    assert bridge.stats()["routed"] >= before
    bridge.uninstall()
    assert [getattr(m, n) for m, n in BOUND] == originals
    np.testing.assert_array_equal(small_program(0.5), expected)
  with bridge.installed():
    assert bridge.is_installed()
    np.testing.assert_array_equal(small_program(0.5), expected)
  assert not bridge.is_installed() and [getattr(m, n) for m, n in BOUND] == originals

def test_two_threads_give_the_serial_results():
  ks = [1.5, 2.5, 3.5, 4.5]
  with Context(DEBUG=0):
    serial = {k: small_program(k) for k in ks}
    got, errors = {}, []
    def work(mine):
      try:
        for k in mine: got[k] = small_program(k)
      except Exception as e: errors.append(e)
    with bridge.installed():
      ts = [threading.Thread(target=work, args=(ks[i::2],)) for i in range(2)]
      for t in ts: t.start()
      for t in ts: t.join()
  assert not errors, errors
  for k in ks: np.testing.assert_array_equal(got[k], serial[k])

def test_unknown_renderer_falls_back_counted_and_printed(capsys):
  from tinygrad.renderer.cstyle import ClangJITRenderer
  from tinygrad.device import Device
  class OtherRenderer(ClangJITRenderer): pass
  sink = kernel_ast()
  bridge.reset_stats()
  with bridge.installed(), Context(DEBUG=2):
    p = tinygrad.codegen.get_program(sink, OtherRenderer())
  want = tinygrad.codegen.get_program(sink, Device["CPU"].renderer)
  assert norm_src(p) == norm_src(want) and p.lib is not None
  st = bridge.stats()
  assert st["routed"] == 0 and st["fallback"] == {"tinyc has no renderer for OtherRenderer": 1}
  assert "tinyc has no renderer for OtherRenderer" in capsys.readouterr().out

def test_a_kernel_tinyc_raises_on_falls_back(monkeypatch):
  from tinygrad.device import Device
  def broken(*args, **kw): raise ValueError("tinyc cannot build this one\nsecond line")
  monkeypatch.setattr(tinyc.codegen, "program_uop", broken)
  sink = kernel_ast()
  bridge.reset_stats()
  with bridge.installed(), Context(DEBUG=0):
    p = tinygrad.codegen.get_program(sink, Device["CPU"].renderer)
  assert norm_src(p) == norm_src(bridge._tg_get_program(sink, Device["CPU"].renderer))
  assert bridge.stats()["fallback"] == {"ValueError: tinyc cannot build this one": 1}

def test_routed_spec_is_tinygrads():
  """get_program routed: every ProgramSpec field tinygrad fills, equal to tinygrad's; the lib is one its runtime runs."""
  from tinygrad.device import Device
  sink, ren = kernel_ast(), Device["CPU"].renderer
  want = bridge._tg_get_program(sink, ren)
  with bridge.installed(): got = tinygrad.codegen.get_program(sink, ren)
  fields = lambda p: (strip_counter(p.function_name), norm_src(p), p.device,
                      p.global_size, p.local_size, [v.arg for v in p.vars], p.globals, p.outs, p.ins, len(p.uops), p.applied_opts,
                      p.estimates.ops, p.estimates.mem, p.estimates.lds)
  assert fields(got) == fields(want)
  assert type(got.ast) is type(want.ast) and got.ast.op is want.ast.op
  assert got.lib == want.lib   # the flat image tinygrad's ClangJITCompiler makes: code only, no names

def test_routed_spec_estimates_counted_by_tinyc(monkeypatch):
  """A routed kernel is built and run without tinygrad counting its estimates from the uops in Python (tinyc counted
  them in C): equal to tinygrad's count, kept by the dataclasses.replace tinygrad's get_runner makes, and counted by
  tinygrad again once the uops are replaced."""
  import dataclasses
  from tinygrad.device import Device
  from tinygrad.renderer import Estimates
  from tinygrad.engine.realize import CompiledRunner
  sink, ren = kernel_ast(), Device["CPU"].renderer
  with bridge.installed(): got = tinygrad.codegen.get_program(sink, ren)
  want = Estimates.from_uops(got.uops, ignore_indexing=True)
  def no_python_count(*a, **kw): raise AssertionError("tinygrad counted the estimates")
  monkeypatch.setattr(Estimates, "from_uops", staticmethod(no_python_count))
  runner = CompiledRunner(dataclasses.replace(got, device="CPU"))
  assert runner.estimates == got.estimates == want and want.ops > 0
  monkeypatch.undo()
  assert dataclasses.replace(got, uops=list(got.uops[:-3])).estimates != want   # other uops: tinygrad counts them

def test_routed_spec_equals_and_pickles_as_tinygrads():
  """The routed ProgramSpec compares equal to a tinygrad ProgramSpec of the same fields, and pickles as one: tinyc is
  not needed to load it."""
  import dataclasses, pickle
  from tinygrad.device import Device
  from tinygrad.renderer import ProgramSpec
  sink, ren = kernel_ast(), Device["CPU"].renderer
  with bridge.installed(): got = tinygrad.codegen.get_program(sink, ren)
  plain = ProgramSpec(**{f.name: getattr(got, f.name) for f in dataclasses.fields(ProgramSpec)})
  assert got == plain and plain == got and got != dataclasses.replace(plain, name="other")
  data = pickle.dumps(got)
  assert b"tinyc" not in data
  back = pickle.loads(data)
  assert type(back) is ProgramSpec and type(back.uops) is list and back == plain
  assert [u.op for u in back.uops] == [u.op for u in got.uops] and back.estimates == got.estimates

def kernel_ast():
  """The AST of the one kernel of a small program, as tinygrad's scheduler makes it."""
  sched = (Tensor.arange(16).float().reshape(4, 4) * 3 + 1).sum(1).schedule()
  return next(ei.ast for ei in sched if ei.ast.op.name == "SINK")

# ---- CompilePool: search.c's compile threads, for Python ----

SRC = "void f%d(float* restrict a) { a[0] = %d.0f; }"

def test_compile_pool_gives_the_serial_libs():
  c = tinyc.ClangCompiler()
  serial = [c.compile(SRC % (i, i)) for i in range(4)]
  with tinyc._C.CompilePool(2) as pool:
    assert pool.threads == 2
    jobs = [pool.submit(c, SRC % (i, i)) for i in range(4)]
    assert [pool.result(j) for j in reversed(jobs)] == serial[::-1]
    assert pool.result(jobs[0]) == serial[0]   # twice is fine
  with tinyc._C.CompilePool(0) as pool: assert pool.result(pool.submit(c, SRC % (0, 0))) == serial[0]

def test_compile_pool_runs_its_compiles_nicer():
  """the pool's threads, and the compilers they start, run 5 nice levels below the thread that generates code, so that
  thread (whose work the compiles wait on) is not slowed when every core compiles"""
  class NiceProbe:
    def compile_cached(self, src):
      child = subprocess.run(["sh", "-c", "cut -d' ' -f19 /proc/self/stat"], capture_output=True, text=True, check=True)
      return os.getpriority(os.PRIO_PROCESS, threading.get_native_id()), int(child.stdout)
  mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
  with tinyc._C.CompilePool(1) as pool: assert pool.result(pool.submit(NiceProbe(), "x")) == (min(mine + 5, 19),) * 2
  assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine

def test_compile_pool_bad_input():
  c = tinyc.ClangCompiler()
  with pytest.raises(ValueError): tinyc._C.CompilePool(-1)
  with pytest.raises(ValueError): tinyc._C.CompilePool(100000)
  with pytest.raises(TypeError): tinyc._C.CompilePool("2")
  pool = tinyc._C.CompilePool(1)
  with pytest.raises(TypeError): pool.submit(c, b"bytes are not source")
  with pytest.raises(TypeError): pool.submit(c)
  with pytest.raises(IndexError): pool.result(0)
  with pytest.raises(TypeError): pool.result("0")
  bad = pool.submit(c, "this is not C")
  with pytest.raises(tinyc.CompileError, match="clang"): pool.result(bad)
  with pytest.raises(AttributeError): pool.result(pool.submit(object(), "x"))   # no compile_cached
  pool.close()
  pool.close()
  with pytest.raises(RuntimeError, match="closed"): pool.submit(c, SRC % (0, 0))
  with pytest.raises(RuntimeError, match="closed"): pool.result(0)
  with pytest.raises(RuntimeError, match="closed"): tinyc._C.CompilePool.__new__(tinyc._C.CompilePool).result(0)
  dropped = tinyc._C.CompilePool(1)
  for i in range(3): dropped.submit(c, SRC % (i, i))
  del dropped   # queued jobs dropped, the running one finished, threads joined

def test_graph_conversion_bad_input_and_memory():
  """the graph conversion's C loop (_C._rebuild_graph) raises on what it cannot convert and leaves nothing behind"""
  import gc
  from tinyc.tinygrad import from_tinygrad, to_tinygrad, _TO_TG
  x = tinyc.UOp.variable("a", 0, 9) * 3 + 1
  rebuild = lambda nodes, make=_TO_TG.make: tinyc._C._rebuild_graph(nodes, make, {}, _TO_TG.convert_op, {}, _TO_TG.convert_dtype,
                                                                     _TO_TG.convert_arg, frozenset((int, type(None))))
  nodes = list(x.toposort())
  assert from_tinygrad(rebuild(nodes)) is x
  with pytest.raises(KeyError, match="toposort"): rebuild(nodes[::-1])
  with pytest.raises(ValueError): rebuild([])
  with pytest.raises(AttributeError): rebuild([object()])
  with pytest.raises(TypeError): rebuild(tuple(nodes))
  with pytest.raises(TypeError): rebuild(nodes, make=None)
  with pytest.raises(TypeError): tinyc._C._rebuild_graph(nodes, _TO_TG.make, {}, None, {}, None, None, frozenset())
  def round_trip():
    for k in range(50): assert from_tinygrad(to_tinygrad(x + k)) is x + k
  round_trip(); gc.collect()
  before = tinyc._C._intern_count()
  round_trip(); gc.collect()
  assert tinyc._C._intern_count() == before

def test_enum_members_in_args_are_swapped_in_c():
  """an arg of plain values and enum members (a RANGE's (axis, AxisType), nested tuples) is converted by C's members
  table exactly as the Python converter converts it, both ways; a table that lacks a member, or is malformed, raises"""
  from tinygrad.uop.ops import AxisType as TgAxisType
  from tinyc.tinygrad import from_tinygrad, to_tinygrad, _TO_TG, _TO_TC, _PLAIN_ARGS
  args = [(3, tinyc.AxisType.LOOP), (0, (1, tinyc.AxisType.REDUCE), tinyc.AxisType.UPCAST), tinyc.Ops.ADD, (tinyc.AddrSpace.LOCAL,),
          (1, 2), ((tinyc.OptOps.UPCAST, 0, 4),), (None, "x", 1.5, True)]
  for arg in args:
    u = tinyc.UOp(tinyc.Ops.NOOP, tinyc.dtypes.void, (), arg)
    t = to_tinygrad(u)
    assert t.arg == _TO_TG.convert_arg(arg) and type(t.arg) is type(_TO_TG.convert_arg(arg))
    assert from_tinygrad(t) is u and from_tinygrad(t).arg == _TO_TC.convert_arg(t.arg)
  nodes = [tinyc.UOp(tinyc.Ops.NOOP, tinyc.dtypes.void, (), (1, tinyc.AxisType.LOOP))]
  rebuild = lambda members: tinyc._C._rebuild_graph(nodes, _TO_TG.make, {}, _TO_TG.convert_op, {}, _TO_TG.convert_dtype,
                                                    _TO_TG.convert_arg, _PLAIN_ARGS, None, members)
  assert rebuild(_TO_TG.members).arg == (1, TgAxisType.LOOP)
  assert rebuild({}).arg == (1, TgAxisType.LOOP)   # no table: the Python converter
  for bad in ({tinyc.AxisType: ()}, {tinyc.AxisType: "x"}, {tinyc.AxisType: ((tinyc.AxisType.LOOP,),)}):
    with pytest.raises(TypeError, match="members"): rebuild(bad)
  with pytest.raises(TypeError): rebuild([])

def test_consed_conversion_is_tinygrads_constructor(monkeypatch):
  """to_tinygrad makes tinygrad's nodes in C, hash-consed in UOpMetaClass.ucache as tinygrad's constructor does them:
  tinygrad's UOp(...) of a made node's fields returns that very node, nodes tinygrad has are reused, dead nodes leave the
  cache; under SPEC>1 or a replaced constructor the constructor makes them"""
  import gc
  from tinygrad.uop.ops import UOp as TgUOp, UOpMetaClass
  from tinygrad.helpers import Context
  from tinyc.tinygrad import from_tinygrad, to_tinygrad, _tg_consed
  assert _tg_consed() is not None
  g = TgUOp.variable("consed_tg", 1, 9) * 2 + 7   # made by tinygrad: converting back finds it
  assert to_tinygrad(from_tinygrad(g)) is g
  gc.collect()
  before = len(UOpMetaClass.ucache)
  t = to_tinygrad(tinyc.UOp.variable("consed_probe", 0, 7) * 5 + 3)
  assert all(TgUOp(n.op, n.dtype, n.src, n.arg, n.tag) is n for n in t.toposort())
  del t
  gc.collect()
  assert len(UOpMetaClass.ucache) == before
  with Context(SPEC=2): assert _tg_consed() is None
  calls, constructor = [], UOpMetaClass.__call__
  def spy(cls, *a, **kw):
    calls.append(a[0])
    return constructor(cls, *a, **kw)
  monkeypatch.setattr(UOpMetaClass, "__call__", spy)
  assert _tg_consed() is None
  x = tinyc.UOp.variable("consed_spy", 0, 3) + 1
  assert from_tinygrad(to_tinygrad(x)) is x and len(calls) >= 3

def test_consed_bad_input():
  """_rebuild_graph's consed=(class, cache) is checked before it makes a node"""
  from tinygrad.uop.ops import UOp as TgUOp
  from tinyc.tinygrad import _TO_TG, _PLAIN_ARGS, to_tinygrad
  nodes = list((tinyc.UOp.variable("consed_bad", 0, 9) * 3).toposort())
  rebuild = lambda consed: tinyc._C._rebuild_graph(nodes, TgUOp, {}, _TO_TG.convert_op, {}, _TO_TG.convert_dtype, _TO_TG.convert_arg,
                                                   _PLAIN_ARGS, consed)
  class NoWeakref:
    __slots__ = ("op", "dtype", "src", "arg", "tag")
  class NoSlots: pass
  for bad in ("x", (TgUOp,), (TgUOp, []), ([], {}), (NoSlots, {}), (NoWeakref, {}), (object, {})):
    with pytest.raises(TypeError): rebuild(bad)
  first = to_tinygrad(nodes[0])   # the first node's key, in a cache that holds no weak reference for it
  with pytest.raises(TypeError, match="weak"): rebuild((TgUOp, {(first.op, first.dtype, first.src, first.arg, first.tag): "x"}))
