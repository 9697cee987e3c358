"""tinygrad/uop/decompositions.py in C (csrc/uop/decompositions.c) against tinygrad 0.12.0.

(1) every builder on UOps of each dtype (scalar and vector floats, plus dtypes tinygrad rejects, where the same
    exception must come back) gives the very graph tinygrad builds; magicgu and fast_idiv agree on random cases.
(2) get_late_rewrite_patterns for the op sets of tinygrad's Clang, CUDA and PTX renderers and the empty set, both
    ways of force_transcendental: symbolic_simple + the patterns rewrite random expressions to tinygrad's result.
(3) the "decompositions" pass of tinygrad's full_rewrite_to_sink, captured over the kernel corpus with the Clang
    renderer, gives tinygrad's output through tinyc's rule set."""
import functools, random
import pytest
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad
from passes import capture_passes
from tinygrad.uop.ops import UOp, Ops, graph_rewrite as tg_graph_rewrite
from tinygrad.dtype import dtypes
from tinygrad.device import is_dtype_supported as tg_is_dtype_supported
from tinygrad.uop.symbolic import symbolic_simple as tg_symbolic_simple
from tinygrad.renderer.cstyle import ClangRenderer, CUDARenderer
from tinygrad.renderer.ptx import PTXRenderer
import tinygrad.uop.decompositions as D
from tinygrad.helpers import polyN as tg_polyN
from corpus import kernel_asts

RULES = _C.native_rules()
FLOATS = [dtypes.float16, dtypes.float32, dtypes.float64]
TC_DT = {dt: getattr(tinyc.dtypes, n) for n in ("float16", "float32", "float64", "bfloat16", "int16", "int32", "int64", "uint64")
         for dt in [getattr(dtypes, n)]}

def tc_op(o): return tinyc.Ops(o.value)

def inputs(dt):
  """a DEFINE_VAR and a LOAD of dtype dt (tinygrad UOps)"""
  var = UOp(Ops.DEFINE_VAR, dt, arg=("a", -10, 10) if dtypes.is_int(dt) else ("a", -10.0, 10.0))
  buf = UOp(Ops.DEFINE_GLOBAL, dt.ptr(), arg=0)
  return [var, UOp(Ops.LOAD, dt, (UOp(Ops.INDEX, dt.ptr(), (buf, UOp.const(dtypes.index, 3))),))]

def conv(a): return from_tinygrad(a) if isinstance(a, UOp) else a

def agree(tg_fn, tc_fn, *args) -> bool:
  """the same graph (or tuple of graphs, or the same exception type) from both"""
  try: want = tg_fn(*args)
  except Exception as e: want = e
  try: got = tc_fn(*[conv(a) for a in args])
  except Exception as e: got = e
  if isinstance(want, Exception): return type(got) is type(want)
  if isinstance(want, tuple): return isinstance(got, tuple) and len(got) == len(want) and all(from_tinygrad(w) is g for w, g in zip(want, got))
  if want is None: return got is None
  return from_tinygrad(want) is got

# dtypes the builders are tried on: the three transcendental floats as scalars and vectors, and two that tinygrad refuses
BUILDER_DTYPES = FLOATS + [d.vec(4) for d in FLOATS] + [dtypes.float32.vec(2), dtypes.bfloat16, dtypes.int32]
INT_DTYPES = [dtypes.int16, dtypes.int32, dtypes.int64, dtypes.int32.vec(4), dtypes.int64.vec(2)]

# ---------------------------------------------------------------- (1) builders

@pytest.mark.parametrize("name", ["xexp2", "xlog2", "xsin", "rintk", "ilogb2k", "frexp", "payne_hanek_reduction", "cody_waite_reduction",
                                  "sin_poly"])
def test_unary_builders(name):
  cases = [(dt, x) for dt in BUILDER_DTYPES for x in inputs(dt)]
  same = sum(agree(getattr(D, name), getattr(_C, name), x) for dt, x in cases)
  print(f"{name}: {same}/{len(cases)}")
  assert same == len(cases)

def test_xsin_fast_and_switch_over():
  cases = [(x, fast, so) for dt in FLOATS + [dtypes.float32.vec(4)] for x in inputs(dt) for fast in (False, True) for so in (30.0, 5, 1e3)]
  same = sum(agree(lambda d: D.xsin(d, fast, so), lambda d: _C.xsin(d, fast=fast, switch_over=so), x) for x, fast, so in cases)
  print(f"xsin(fast, switch_over): {same}/{len(cases)}")
  assert same == len(cases)

def test_binary_builders():
  n = same = 0
  for dt in BUILDER_DTYPES:
    for x in inputs(dt):
      for y in inputs(dt):
        for name in ("xpow", "ldexp3k", "sin_poly_small", "sin_poly_large"):
          n += 1; same += agree(getattr(D, name), getattr(_C, name), x, y)
      for idt in INT_DTYPES:
        for q in inputs(idt):
          for name in ("ldexp2k", "sin_poly_small", "sin_poly_large"):
            n += 1; same += agree(getattr(D, name), getattr(_C, name), x, q)
      n += 2
      same += agree(D._lazy_map_numbers, _C._lazy_map_numbers, x, *inputs(dt), *inputs(dt)[:1], x)
      same += agree(lambda v: D.trig_poly(v, [1.0, -2, 0.5], [3.0, 4.25]), lambda v: _C.trig_poly(v, [1.0, -2, 0.5], [3.0, 4.25]), x)
  print(f"binary builders: {same}/{n}")
  assert same == n

def test_pow2if_and_bit_helpers():
  n = same = 0
  for idt in INT_DTYPES + [dtypes.float32]:
    for q in inputs(idt):
      for fdt in (dtypes.float16, dtypes.float32, dtypes.float64):
        n += 1; same += agree(D.pow2if, lambda a, f: _C.pow2if(a, TC_DT[f]), q, fdt)
  for dt in (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.bfloat16, dtypes.float32.vec(4), dtypes.int32, dtypes.uint64):
    for name in ("mantissa_bits", "exponent_bias", "exponent_mask"):
      n += 1
      try: want = getattr(D, name)(dt)
      except Exception as e: want = type(e)
      try: got = getattr(_C, name)(from_tinygrad(UOp.const(dt, 0)).dtype)
      except Exception as e: got = type(e)
      same += want == got
  print(f"pow2if and bit helpers: {same}/{n}")
  assert same == n

def test_polyN():
  for x in inputs(dtypes.float32) + [2.0, 3]:
    for p in ([1.0], [1.0, 2, -3.5], [0.25, -1, 2, 1e-3, 7]):
      want = tg_polyN(x, p)
      got = _C.polyN(conv(x), p)
      assert (from_tinygrad(want) is got) if isinstance(x, UOp) else (want == got and type(want) is type(got))

def test_threefry2x32():
  n = same = 0
  for dt in (dtypes.uint64, dtypes.uint64.vec(2), dtypes.int32, dtypes.float32):
    for x in inputs(dt):
      for k in inputs(dt):
        n += 1; same += agree(D.threefry2x32, _C.threefry2x32, x, k)
  print(f"threefry2x32: {same}/{n}")
  assert same == n

def test_magicgu():
  rng = random.Random(0)
  pairs = [(vmax, d) for vmax in range(0, 70) for d in range(1, 40)]
  for _ in range(3000):
    pairs.append((rng.choice([rng.randint(0, 1000), rng.randint(0, 2**31), rng.randint(0, 2**63), rng.randint(0, 2**64)]),
                  rng.choice([rng.randint(1, 20), rng.randint(1, 2**16), rng.randint(1, 2**40), 2**rng.randint(0, 40)])))
  same = sum(D.magicgu(v, d) == _C.magicgu(v, d) for v, d in pairs)
  print(f"magicgu: {same}/{len(pairs)}")
  assert same == len(pairs)

IDIV_DTYPES = [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64]

def random_int_uop(rng, dt):
  """a variable of dt with random bounds (possibly beyond dt's range), sometimes scaled and shifted"""
  lo_dt, hi_dt = dtypes.min(dt), dtypes.max(dt)
  span = rng.choice([100, 2**15, 2**31, 2**63])
  lo = max(lo_dt, rng.randint(-span, span)) if rng.random() < 0.8 else rng.randint(lo_dt - 10, lo_dt + 10)
  hi = min(hi_dt, lo + rng.randint(0, span)) if rng.random() < 0.8 else rng.randint(hi_dt - 10, hi_dt + 10)
  x = UOp.variable(f"v{rng.randint(0, 3)}", lo, max(lo, hi), dt)
  if rng.random() < 0.3: x = x * rng.randint(1, 9) + rng.randint(-5, 5)
  return x

def test_fast_idiv():
  rng = random.Random(1)
  n = same = nones = 0
  for _ in range(1500):
    dt = rng.choice(IDIV_DTYPES)
    x = random_int_uop(rng, dt)
    d = rng.choice([rng.randint(1, 20), rng.randint(1, 1000), 2**rng.randint(0, 20) * rng.choice([1, 3, 7, 11]), rng.randint(1, 2**31),
                    rng.randint(-5, 0)])
    device, dont_cast = rng.choice(["CPU", "CUDA", "WEBGPU", "METAL", "NULL"]), rng.random() < 0.2
    n += 1
    same += agree(lambda x: D.fast_idiv(device, x, d, dont_cast), lambda x: _C.fast_idiv(device, x, d, dont_cast), x)
    try: nones += D.fast_idiv(device, x, d, dont_cast) is None
    except AssertionError: pass
  print(f"fast_idiv: {same}/{n} ({nones} None)")
  assert same == n and nones > 0

def test_is_dtype_supported():
  devices = ["CPU", "CUDA", "NV", "AMD", "METAL", "CL", "QCOM", "WEBGPU", "PYTHON", "NULL"]
  cases = [(dt, dev) for dt in dtypes.all for dev in devices if not (dev == "AMD" and dt in dtypes.fp8s)]   # AMD fp8 opens the device
  same = sum(tg_is_dtype_supported(dt, dev) == _C.is_dtype_supported(from_tinygrad(UOp.const(dt, 0)).dtype if dt != dtypes.index
                                                                     else tinyc.dtypes.index, dev) for dt, dev in cases)
  print(f"is_dtype_supported: {same}/{len(cases)}")
  assert same == len(cases)

def test_transcendental_dtypes():
  assert [str(d) for d in _C.TRANSCENDENTAL_DTYPES] == [str(from_tinygrad(UOp.const(d, 0)).dtype) for d in D.TRANSCENDENTAL_DTYPES]

def test_bad_input_raises():
  with pytest.raises(TypeError): _C.xexp2(1.0)
  with pytest.raises(TypeError): _C.get_late_rewrite_patterns(("not an op",), False)
  with pytest.raises(AssertionError): _C.xsin(from_tinygrad(inputs(dtypes.int32)[0]))

# ---------------------------------------------------------------- (2) get_late_rewrite_patterns on random expressions

OP_SETS = {
  "clang": (tuple(ClangRenderer().code_for_op.keys()), "CPU"),
  "cuda": (tuple(CUDARenderer("sm_80").code_for_op.keys()), "CUDA"),
  "ptx": (tuple(PTXRenderer("sm_80").code_for_op.keys()), "CUDA"),
  "empty": ((), "CPU"),
  "clang_webgpu": (tuple(ClangRenderer().code_for_op.keys()), "WEBGPU"),
}
EXPR_INTS = [dtypes.int32, dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.int8, dtypes.uint64, dtypes.index]
EXPR_FLOATS = [dtypes.float32, dtypes.float16, dtypes.float64, dtypes.bfloat16, dtypes.float32.vec(2)]

class ExprGen:
  def __init__(self, seed): self.rng = random.Random(seed)
  def const(self, dt):
    r = self.rng
    v = r.choice([0, 1, -1, 2, 3, 4, 7, 8, 16, 100, 1024, -8, r.randint(-50, 50)])
    if dtypes.is_unsigned(dt) and v < 0: v = -v
    return UOp.const(dt, v)
  def leaf_int(self, dt):
    r = self.rng
    if r.random() < 0.2: return self.const(dt)
    lo = r.choice([0, 0, -10, -100, 1, r.randint(-1000, 1000)])
    if dtypes.is_unsigned(dt): lo = abs(lo)
    return UOp.variable(f"i{r.randint(0, 2)}", lo, lo + r.choice([1, 7, 15, 100, 4000, 2**20]), dt)
  def int_expr(self, dt, depth):
    r = self.rng
    if depth <= 0 or r.random() < 0.2: return self.leaf_int(dt)
    a, k = self.int_expr(dt, depth - 1), r.randint(0, 11)
    if k == 0: return a + self.int_expr(dt, depth - 1)
    if k == 1: return a * r.choice([2, 4, 8, 3, 5, -1, 1024, 7])
    if k == 2: return a * self.int_expr(dt, depth - 1)
    if k == 3: return a // r.choice([2, 4, 8, 16, 1024, 3, 5, 7, 10, 12, 100, 1000003] + ([-4, -3] if r.random() < 0.1 else []))
    if k == 4: return a % r.choice([2, 4, 8, 16, 3, 5, 7, 10, 12, 100])
    if k == 5: return a % self.int_expr(dt, depth - 1)
    if k == 6: return a.maximum(self.int_expr(dt, depth - 1))
    if k == 7: return self.bool_expr(dt, depth - 1).where(a, self.int_expr(dt, depth - 1))
    if k == 8: return a * -1 + self.int_expr(dt, depth - 1)
    if k == 9: return a + self.int_expr(dt, depth - 1) * -1
    if k == 10: return a * self.int_expr(dt, depth - 1) + self.int_expr(dt, depth - 1)
    return a // self.int_expr(dt, depth - 1)
  def bool_expr(self, dt, depth):
    r = self.rng
    a, b, k = self.int_expr(dt, depth), self.int_expr(dt, depth), r.randint(0, 8)
    if k == 0: return a < b
    if k == 1: return (a < r.randint(-5, 20)).logical_not()
    if k == 2: return (UOp.const(dt, r.randint(0, 20)) < a).logical_not()
    if k == 3: return a.ne(b).logical_not()
    if k == 4: return (a < b).logical_not() & (b < a).logical_not()
    if k == 5: c = r.randint(0, 10); return (UOp.const(dt, c - 1) < a) & (a < UOp.const(dt, c + 1))
    if k == 6: return a * -1 < b * r.choice([2, 3, -2])
    if k == 7: return a * -1 < r.randint(-5, 5)
    return a.ne(b)
  def float_expr(self, dt, depth):
    r = self.rng
    if depth <= 0 or r.random() < 0.15:
      return UOp.const(dt, r.choice([0.5, 1.0, 2.0, -3.0])) if r.random() < 0.2 else UOp.variable(f"f{r.randint(0, 1)}", -2.0, 9.0, dt.scalar()).broadcast(dt.count)
    a, k = self.float_expr(dt, depth - 1), r.randint(0, 10)
    if k == 0: return a.exp2()
    if k == 1: return a.log2()
    if k == 2: return a.sin()
    if k == 3: return a.sqrt()
    if k == 4: return a.reciprocal()
    if k == 5: return a * self.float_expr(dt, depth - 1).reciprocal()
    if k == 6: return a * self.float_expr(dt, depth - 1) + self.float_expr(dt, depth - 1)
    if k == 7: return a.maximum(self.float_expr(dt, depth - 1))
    if k == 8: return a * -1 + self.float_expr(dt, depth - 1)
    if k == 9: return (a < self.float_expr(dt, depth - 1)).where(a, a * 2.0)
    return a + self.float_expr(dt, depth - 1)
  def expr(self):
    r = self.rng
    k = r.randint(0, 9)
    if k <= 4: return self.int_expr(r.choice(EXPR_INTS), r.randint(1, 3))
    if k <= 6: return self.bool_expr(r.choice(EXPR_INTS), r.randint(0, 2)).where(UOp.const(dtypes.int32, 1), UOp.const(dtypes.int32, 0))
    if k <= 8: return self.float_expr(r.choice(EXPR_FLOATS), r.randint(1, 2))
    return self.int_expr(dtypes.uint64, 1).threefry(self.leaf_int(dtypes.uint64))

def rewrite_both(expr, ops, force, device):
  """(tinygrad's result or exception, tinyc's result or exception)"""
  try: want = tg_graph_rewrite(expr, tg_symbolic_simple + D.get_late_rewrite_patterns(ops, force), ctx=device)
  except Exception as e: want = e
  try: got = _C.graph_rewrite(from_tinygrad(expr), RULES["symbolic_simple"] + _C.get_late_rewrite_patterns(tuple(tc_op(o) for o in ops), force),
                              ctx=device)
  except Exception as e: got = e
  return want, got

@functools.cache
def random_exprs(n=260):
  gen = ExprGen(7)
  return [UOp.sink(gen.expr(), gen.expr()) for _ in range(n)]

@pytest.mark.parametrize("setname", list(OP_SETS))
@pytest.mark.parametrize("force", [False, True])
def test_late_rewrite_random(setname, force):
  ops, device = OP_SETS[setname]
  exprs = random_exprs() if not force else random_exprs()[::3]
  same = errs = 0
  for e in exprs:
    want, got = rewrite_both(e, ops, force, device)
    if isinstance(want, Exception): errs += 1; same += type(got) is type(want)
    else: same += (not isinstance(got, Exception)) and from_tinygrad(want) is got
  print(f"late rewrite {setname} force={force}: {same}/{len(exprs)} identical ({errs} raise in tinygrad)")
  assert same == len(exprs)

def test_late_rewrite_cache_and_order():
  ops = tuple(tc_op(o) for o in ClangRenderer().code_for_op.keys())
  pm = _C.get_late_rewrite_patterns(ops, False)
  assert _C.get_late_rewrite_patterns(ops, False) is pm and _C.get_late_rewrite_patterns(list(ops), False) is pm
  assert _C.get_late_rewrite_patterns(ops, True) is not pm
  for setname, (tg_ops, _) in OP_SETS.items():
    for force in (False, True):
      assert len(_C.get_late_rewrite_patterns(tuple(tc_op(o) for o in tg_ops), force).patterns) == \
             len(D.get_late_rewrite_patterns(tg_ops, force).patterns), setname

# ---------------------------------------------------------------- (3) the corpus "decompositions" pass

@functools.cache
def captured_decompositions():
  """[(kernel name, input, output)] of every "decompositions" pass tinygrad runs lowering the corpus with ClangRenderer"""
  return [(k, inp, out) for k, inp, _, out in capture_passes(kernel_asts(), ClangRenderer(), ("decompositions",))["decompositions"]]

def test_corpus_decompositions_pass():
  tc_ops = tuple(tinyc.ClangRenderer().code_for_op.keys())
  assert tc_ops == tuple(tc_op(o) for o in ClangRenderer().code_for_op.keys())
  pm = RULES["symbolic_simple"] + _C.get_late_rewrite_patterns(tc_ops, False)
  cases = captured_decompositions()
  same = [k for k, inp, out in cases if _C.graph_rewrite(from_tinygrad(inp), pm, ctx="CPU") is from_tinygrad(out)]
  print(f"decompositions pass (corpus, Clang): {len(same)}/{len(cases)} identical")
  assert len(cases) >= 50 and len(same) == len(cases)

# ---------------------------------------------------------------- switches and reference counts

def test_disable_fast_idiv_env():
  """DISABLE_FAST_IDIV=1, read at import by both: the same rule count and the same rewrites"""
  import subprocess, sys, os
  code = ("import sys; sys.path.insert(0, 'tests'); import test_decompositions as t; "
          "ops = t.OP_SETS['clang'][0]; "
          "assert len(t._C.get_late_rewrite_patterns(tuple(t.tc_op(o) for o in ops), False).patterns) == len(t.D.get_late_rewrite_patterns(ops, False).patterns); "
          "res = [t.rewrite_both(e, ops, False, 'CPU') for e in t.random_exprs()[:60]]; "
          "ok = sum((type(w) is type(g)) if isinstance(w, Exception) else (t.from_tinygrad(w) is g) for w, g in res); "
          "print(ok, len(res)); assert ok == len(res)")
  env = dict(os.environ, DISABLE_FAST_IDIV="1")
  r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(__file__)))
  print(f"DISABLE_FAST_IDIV=1: {r.stdout.strip()} identical")
  assert r.returncode == 0, r.stderr[-2000:]

def test_builders_leave_nothing_behind():
  import gc
  x = from_tinygrad(inputs(dtypes.float32)[0])
  q = from_tinygrad(inputs(dtypes.int32)[0])
  i = from_tinygrad(UOp.variable("leak_i", 0, 1000, dtypes.int32))
  def work():
    for fast in (False, True): _C.xsin(x, fast=fast)
    _C.xexp2(x); _C.xlog2(x); _C.xpow(x, x); _C.frexp(x); _C.payne_hanek_reduction(x); _C.ldexp2k(x, q)
    _C.fast_idiv("CPU", i, 7); _C.fast_idiv("CPU", i, 12, True); _C.threefry2x32(x.cast(tinyc.dtypes.uint64), x.cast(tinyc.dtypes.uint64))
    for bad in (lambda: _C.xexp2(q), lambda: _C.fast_idiv("CPU", i, -3), lambda: _C.magicgu(5, 0)):
      with pytest.raises(Exception): bad()
  work(); gc.collect()
  base = _C._intern_count()
  for _ in range(20): work()
  gc.collect()
  assert _C._intern_count() == base
