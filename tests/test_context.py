"""tinyc.helpers' getenv, ContextVar and Context against tinygrad 0.12.0's (tinygrad/helpers.py), and the switches tinyc's
C code reads: a Context is seen by the next get_program / simplify() in the same process, as a tinygrad Context is by
tinygrad, and the value is back after the block (also after an exception). follow_tinygrad makes tinygrad's own
Context reach tinyc."""
import json, os, subprocess, sys, threading, uuid
import pytest
from tinygrad import Tensor
from tinygrad.codegen import get_program as tg_get_program
from tinygrad.renderer.cstyle import ClangRenderer as TgClangRenderer
from tinygrad.uop.ops import UOp as TgUOp, Ops as TgOps
import tinygrad.helpers as tgh
import tinygrad.uop.divandmod as tg_divandmod
import tinyc
from tinyc import _C
from tinyc import helpers as tch
from tinyc.codegen import get_program
from tinyc.tinygrad import from_tinygrad
from test_divandmod import gen_expr
from uop_oracle import TC, TG

HERE = os.path.dirname(os.path.abspath(__file__))
TG_REN, TC_REN = TgClangRenderer(), tinyc.ClangRenderer()

def kernels(build):
  sched, _ = build().schedule_with_vars()
  return [si.ast for si in sched if si.ast.op is TgOps.SINK]

AST_CACHE = {}
def asts():
  """a matmul, a softmax and an elementwise sin/sqrt: kernels whose program NOOPT / DEVECTORIZE change"""
  if not AST_CACHE:
    Tensor.manual_seed(0)
    AST_CACHE["asts"] = kernels(lambda: Tensor.rand(16, 32) @ Tensor.rand(32, 8)) + \
      kernels(lambda: Tensor.rand(16, 32).softmax(-1)) + kernels(lambda: Tensor.rand(8, 16).sin().sqrt())
  return AST_CACHE["asts"]

def src(p): return p.src.replace(p.function_name, "K")

def outcome(fn):
  try: return ("ok", fn())
  except Exception as e: return ("err", type(e).__name__, str(e))

# ---- the switches, seen by the next call ----

@pytest.mark.parametrize("switch", [{"NOOPT": 1}, {"DEVECTORIZE": 0}, {"DEVECTORIZE": 2}, {"NOOPT": 1, "DEVECTORIZE": 0}])
def test_context_changes_get_program(switch):
  changed = 0
  for ast in asts():
    default = src(get_program(from_tinygrad(ast), TC_REN))
    with tgh.Context(**switch): tg = src(tg_get_program(ast, TG_REN))
    with tch.Context(**switch): tc = src(get_program(from_tinygrad(ast), TC_REN))
    assert tc == tg
    changed += tc != default
    assert src(get_program(from_tinygrad(ast), TC_REN)) == default   # restored after the block
  assert changed   # the switch matters on these kernels

def test_correct_divmod_folding_changes_simplify():
  differ = 0
  try:
    for seed in range(300):
      tg, tc = gen_expr(TG, seed), gen_expr(TC, seed)
      results = []
      for flag in (0, 1):
        tg_divandmod.fold_divmod_general.cache_clear()   # tinygrad caches the fold: a new flag needs a fresh cache
        with tgh.Context(CORRECT_DIVMOD_FOLDING=flag): want = outcome(tg.simplify)
        with tch.Context(CORRECT_DIVMOD_FOLDING=flag): got = outcome(tc.simplify)
        if want[0] == "ok": assert got[0] == "ok" and got[1] is from_tinygrad(want[1]), (seed, flag)
        else: assert got[:2] == want[:2], (seed, flag)
        results.append(got)
      differ += results[0] != results[1]
  finally: tg_divandmod.fold_divmod_general.cache_clear()
  assert differ >= 2 and not tch.CORRECT_DIVMOD_FOLDING

def bad_const_ast():
  """an elementwise kernel whose float CONST holds an int: kernel_spec refuses it, the rest of codegen does not care. The
  int is one no float equals: UOps are interned by (op, dtype, src, arg) and 3 == 3.0, so a small int would come back as a
  live float CONST of another test's graph"""
  ast = kernels(lambda: Tensor.rand(16, 32).relu() + 1.0)[-1]
  one = next(u for u in ast.toposort() if u.op is TgOps.CONST and u.arg == 1.0)
  return ast.substitute({one: TgUOp(TgOps.CONST, one.dtype, arg=2**53 + 1)})

def test_spec_switch():
  ast = bad_const_ast()
  seen = {}
  for spec in (0, 1):
    with tgh.Context(SPEC=spec): want = outcome(lambda: src(tg_get_program(ast, TG_REN)))
    with tch.Context(SPEC=spec): got = outcome(lambda: src(get_program(from_tinygrad(ast), TC_REN)))
    assert got[:2] == want[:2]
    if want[0] == "ok": assert got[1] == want[1]
    seen[spec] = got[0]
  assert seen == {0: "ok", 1: "err"}
  assert outcome(lambda: get_program(from_tinygrad(ast), TC_REN))[1] == "RuntimeError"   # SPEC=1 again after the block

def test_c_side_follows_every_native_key():
  """every key tinyc reads in C is a ContextVar, and a Context writes the integer C reads"""
  assert {"SPEC", "NOOPT", "BEAM", "DEVECTORIZE", "TRANSCENDENTAL", "CORRECT_DIVMOD_FOLDING", "IMAGE", "IGNORE_OOB", "DEBUG",
          "CACHELEVEL", "TC", "TC_OPT", "TC_SELECT", "AMX", "NOLOCALS", "CPU_LLVM", "TUPLE_ORDER", "ALLOW_TF32"} <= set(_C._ctxvar_keys())
  assert {"EMULATE", "CPU_CC"} == set(_C._ctxvar_text_keys())   # the string switches: C reads them as text
  for key in _C._ctxvar_keys():
    var, before, seven = tch.ContextVar._cache[key], _C._ctxvar_get(key), "7" if key in _C._ctxvar_text_keys() else 7
    with tch.Context(**{key: seven}): assert _C._ctxvar_get(key) == seven and var.value == seven and var == seven
    assert _C._ctxvar_get(key) == before and var.value == before
  assert tch.USE_TC is tch.ContextVar._cache["TC"]   # tinygrad's attribute name for the key TC

def test_string_switches_and_compiler_pairs_follow_a_context():
  """EMULATE is read when a PythonRenderer is made, CPU_CC / CPU_LLVM each time a device's renderer is asked for, as
  tinygrad reads them: inside a Context, tinyc makes what tinygrad makes; each compiler pair is made once"""
  from tinygrad import Device as TgDevice
  from tinygrad.runtime.ops_python import PythonRenderer as TgPythonRenderer
  for emulate in ("AMD", "CUDA", "METAL"):
    with tgh.Context(EMULATE=emulate): want = TgPythonRenderer()
    with tch.Context(EMULATE=emulate): got = tinyc.PythonRenderer()
    assert got.device == want.device != "PYTHON" and len(got.tensor_cores) == len(want.tensor_cores)
  assert tinyc.PythonRenderer().device == "PYTHON" and tch.EMULATE.value == ""
  with pytest.raises(TypeError, match="string switch"), tch.Context(EMULATE=1): pass
  with pytest.raises(RuntimeError, match="can't EMULATE device: NOPE"), tch.Context(EMULATE="NOPE"): tinyc.PythonRenderer()
  assert tch.EMULATE.value == "" and tinyc.PythonRenderer().device == "PYTHON"
  made = {}
  for ctx in ({}, {"CPU_LLVM": 1}, {"CPU_CC": "LLVM"}, {"CPU_CC": "CLANGJIT"}, {"CPU_LLVM": 1}):
    with tgh.Context(**ctx): want = type(TgDevice["CPU"].renderer).__name__
    with tch.Context(**ctx): got = tinyc.Device["CPU"].renderer
    assert type(got).__name__ == want, ctx
    assert made.setdefault(want, got) is got   # the pair made the first time
  with tch.Context(CPU_CC="LVP"), pytest.raises(KeyError, match="CPU_CC=LVP names no compiler of CPU"): tinyc.Device["CPU"].renderer
  assert type(tinyc.Device["CPU"].renderer).__name__ == "ClangJITRenderer"

# ---- restoring, nesting, exceptions, threads ----

def scenario(h):
  """what a library's Context does to a value: nesting, an exception, a decorator, `as`, a re-entered object"""
  var, seen = h.ContextVar._cache["NOOPT"], []
  with h.Context(NOOPT=1) as got:
    seen += [got, var.value]
    with h.Context(NOOPT=2): seen.append(var.value)
    seen.append(var.value)
  seen.append(var.value)
  try:
    with h.Context(NOOPT=3): raise ValueError("inside")
  except ValueError: seen.append(var.value)
  @h.Context(NOOPT=4)
  def decorated(): return var.value
  seen += [decorated(), var.value]
  try:
    with h.Context(NOT_A_CONTEXTVAR=1, NOOPT=5): pass   # first: tinygrad sets the keys before it, and leaves them set
  except KeyError as e: seen.append(("KeyError", str(e)))
  seen.append(var.value)
  return seen

def test_restore_as_tinygrad():
  assert scenario(tch) == scenario(tgh) == [None, 1, 2, 1, 0, 0, 4, 0, ("KeyError", "'NOT_A_CONTEXTVAR'"), 0]
  assert tch.NOOPT.value == 0

def test_refused_values_change_nothing():
  """the C integers take ints: another type is a TypeError (tinygrad's first comparison would raise it) and no key
  of that Context is set; a key tinygrad does not know is its KeyError, and nothing is set either"""
  for bad in ({"NOOPT": 1, "BEAM": "2"}, {"NOOPT": 1, "SPEC": 1.5}, {"NOOPT": 1, "DEBUG": None}):
    with pytest.raises(TypeError):
      with tch.Context(**bad): pass
    assert tch.NOOPT.value == 0 and tch.BEAM.value == 0
  with pytest.raises(KeyError):
    with tch.Context(NOOPT=1, NOPE=1): pass
  assert tch.NOOPT.value == 0
  with pytest.raises(TypeError): _C._ctxvar_set("NOOPT", "x")
  with pytest.raises(KeyError): _C._ctxvar_get("NOPE")
  with pytest.raises(TypeError): _C._ctxvar_get(1)
  with tch.Context(NOOPT=True, BEAM=10**30): assert tch.NOOPT.value is True and _C._ctxvar_get("BEAM") == 10**30   # the object set
  ctx = tch.Context(NOOPT=1)
  with ctx:
    with ctx: assert tch.NOOPT.value == 1
    assert tch.NOOPT.value == 1
  assert tch.NOOPT.value == 0   # a re-entered Context restores each level

def threads(h, probe):
  """a Context entered in another thread, seen from this one (tinygrad's values are process-wide)"""
  entered, release, seen = threading.Event(), threading.Event(), []
  def worker():
    with h.Context(NOOPT=1):
      entered.set()
      release.wait(30)
  t = threading.Thread(target=worker)
  t.start()
  assert entered.wait(30)
  seen.append(probe())
  release.set()
  t.join()
  seen.append(probe())
  return seen

def test_threads_share_the_context():
  ast = asts()[0]
  with tgh.Context(NOOPT=1): noopt = src(tg_get_program(ast, TG_REN))
  default = src(tg_get_program(ast, TG_REN))
  assert threads(tgh, lambda: src(tg_get_program(ast, TG_REN))) == [noopt, default]
  assert threads(tch, lambda: src(get_program(from_tinygrad(ast), TC_REN))) == [noopt, default]
  assert threads(tch, lambda: tch.NOOPT.value) == threads(tgh, lambda: tgh.NOOPT.value) == [1, 0]

# ---- ContextVar and getenv ----

def test_contextvar_semantics_as_tinygrad():
  for h in (tgh, tch):
    key = f"TINYC_CTX_{uuid.uuid4().hex}"
    v = h.ContextVar(key, 3)
    with pytest.raises(RuntimeError, match="attempt to recreate ContextVar"): h.ContextVar(key, 3)
    assert (bool(v), v == 3, v >= 3, v > 2, v < 4, v > 3) == (True, True, True, True, True, False)
    with pytest.raises(TypeError): v <= 3   # tinygrad defines no __le__
    with pytest.raises(TypeError): hash(v)  # nor __hash__
    with h.Context(**{key: 0}): assert not v and v.value == 0
    assert v.value == 3 and h.ContextVar._cache[key] is v
  tg_vars = {name: v.key for name, v in vars(tgh).items() if isinstance(v, tgh.ContextVar)}   # tinygrad.helpers' own
  assert len(tg_vars) >= 50 and {name: getattr(tch, name).key for name in tg_vars} == tg_vars
  with pytest.raises(RuntimeError): tch.ContextVar("NOOPT", 0)   # the native keys exist already

def test_getenv_as_tinygrad(monkeypatch):
  def both(key, *default):
    a, b = outcome(lambda: tgh.getenv(key, *default)), outcome(lambda: tch.getenv(key, *default))
    assert a[:2] == b[:2] and (a[0] == "err" or type(a[1]) is type(b[1])), (key, default, a, b)
    return b[1]
  k = lambda: f"TINYC_GETENV_{uuid.uuid4().hex}"
  unset = k()
  assert [both(unset), both(unset, "x"), both(unset, 1.5), both(unset, True)] == [0, "x", 1.5, True]
  for raw, defaults in (("7", (0, "", 1.0)), (" 12", (0,)), ("0", (True, "")), ("abc", (0, 2.0, "")), ("", (0, False))):
    key = k()
    monkeypatch.setenv(key, raw)
    for d in defaults: both(key, d)
  key = k()
  monkeypatch.setenv(key, "5")
  assert both(key) == 5
  monkeypatch.setenv(key, "6")
  assert both(key) == 5   # cached, as tinygrad's functools.cache
  tch.getenv.cache_clear(); tgh.getenv.cache_clear()
  assert both(key) == 6
  assert both(k(), []) == "TypeError"   # an unhashable default: functools.cache's TypeError

ENV_SCRIPT = """
import json, sys
import tinyc.helpers as tch, tinygrad.helpers as tgh
keys = sorted(k for k in tgh.ContextVar._cache if k in tch.ContextVar._cache and k != "CPU_COUNT")
print(json.dumps({k: [tgh.ContextVar._cache[k].value, tch.ContextVar._cache[k].value] for k in keys}))
"""

def run_env(env):
  full = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(HERE), os.environ.get("PYTHONPATH", "")]), **env}
  return subprocess.run([sys.executable, "-c", ENV_SCRIPT], env=full, capture_output=True, text=True, timeout=120)

def test_initial_values_from_the_environment():
  res = run_env({"NOOPT": "1", "SPEC": "0", "DEVECTORIZE": "2", "CACHELEVEL": "1", "TC_OPT": " 2", "IGNORE_OOB": "0",
                 "CORRECT_DIVMOD_FOLDING": "1", "BEAM": "0", "TUPLE_ORDER": "3", "JIT": "0"})
  assert res.returncode == 0, res.stderr
  values = json.loads(res.stdout)
  assert len(values) >= 40 and values["NOOPT"] == [1, 1] and values["TUPLE_ORDER"] == [3, 3]
  assert all(a == b for a, b in values.values()), {k: v for k, v in values.items() if v[0] != v[1]}
  bad = run_env({"NOOPT": "one"})   # int() refuses it: tinygrad's import fails, and so does tinyc's
  assert bad.returncode != 0 and "ValueError" in bad.stderr

def test_environment_switches_still_read_live(monkeypatch):
  """CACHELEVEL, CCACHE, IGNORE_BEAM_CACHE: tinyc read these from the environment at each use before ContextVars existed
  (its tests set them with os.environ); they keep doing so until a Context sets them, and again after it exits"""
  monkeypatch.setenv("CACHELEVEL", "0")
  assert tch.CACHELEVEL.value == 0
  with tch.Context(CACHELEVEL=1):
    monkeypatch.setenv("CACHELEVEL", "2")
    assert tch.CACHELEVEL.value == 1
  assert tch.CACHELEVEL.value == 2
  monkeypatch.delenv("CACHELEVEL")
  assert tch.CACHELEVEL.value == 2 and _C._ctxvar_state("CACHELEVEL") is None

# ---- follow_tinygrad ----

def test_follow_tinygrad():
  ast = asts()[0]
  with tgh.Context(NOOPT=1): noopt = src(tg_get_program(ast, TG_REN))
  default = src(get_program(from_tinygrad(ast), TC_REN))
  assert "value" not in tgh.ContextVar.__dict__
  try:
    tch.follow_tinygrad(True)
    tch.follow_tinygrad(True)   # twice is once
    with tgh.Context(NOOPT=1, DEVECTORIZE=1):
      assert tch.NOOPT.value == 1 and src(get_program(from_tinygrad(ast), TC_REN)) == noopt
      assert tgh.NOOPT.value == 1 and src(tg_get_program(ast, TG_REN)) == noopt   # tinygrad itself as before
    assert tch.NOOPT.value == 0 and src(get_program(from_tinygrad(ast), TC_REN)) == default
    tgh.SPEC.value = 0
    assert tch.SPEC.value == 0
    tgh.SPEC.value = 1
    assert tch.SPEC.value == 1 and tgh.SPEC.value == 1
    tgh.AMD_CC.value = "X"   # a key tinyc keeps in Python
    assert tch.AMD_CC.value == "X"
    tgh.AMD_CC.value = ""
  finally:
    tch.follow_tinygrad(False)
  assert "value" not in tgh.ContextVar.__dict__ and tgh.NOOPT.__dict__["value"] == 0
  with tgh.Context(NOOPT=1): assert tch.NOOPT.value == 0 and tgh.NOOPT.value == 1
  tch.follow_tinygrad(False)   # when not following: nothing to undo

def test_follow_tinygrad_starts_from_tinygrads_values():
  try:
    with tgh.Context(DEVECTORIZE=0):
      tch.follow_tinygrad(True)
      assert tch.DEVECTORIZE.value == 0
    assert tch.DEVECTORIZE.value == 1
  finally:
    tch.follow_tinygrad(False)
    _C._ctxvar_set("DEVECTORIZE", None)   # unset again
