"""div_and_mod_symbolic (tinygrad/uop/divandmod.py, native in csrc/uop/divandmod.c) against tinygrad 0.12.0.

The same random index expressions (// and % by positive and negative constants and by bounded variables, nested,
over variables and ranges, some of them negative) are built in both libraries and rewritten with each side's
div_and_mod_symbolic; the results must be the very same graph. Alone the rule set does not terminate on some
graphs (tinygrad relies on the rest of `symbolic` folding constants and zero-width ranges), so both sides run it
after the same few folding rules, written here in Python. Targeted cases pin each sub-rule of
fold_divmod_general: the oracle's own return line tells which one fired."""
import collections, gc, os, random, subprocess, sys
import pytest
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad
from tinyc.uop.ops import exec_alu as tc_exec_alu
import tinygrad.uop.divandmod as tg_divandmod
from tinygrad.uop.ops import PatternMatcher as TgPatternMatcher, UPat as TgUPat, graph_rewrite as tg_graph_rewrite, exec_alu as tg_exec_alu
from uop_oracle import TC, TG

TG_DM = tg_divandmod.div_and_mod_symbolic
TC_DM = _C.native_rules()["div_and_mod_symbolic"]

# ---- the folding rules both sides run first (module-level functions: tinygrad's matcher rejects closures) ----

def _keep(x): return x
def _zero(x): return x.const_like(0)
def _single(x): return x.const_like(x.vmin) if x.vmin == x.vmax else None
def _tg_fold(a): return a.const_like(tg_exec_alu(a.op, a.dtype, [s.arg for s in a.src], False))
def _tc_fold(a): return a.const_like(tc_exec_alu(a.op, a.dtype, [s.arg for s in a.src], False))

def folding(PatternMatcher, UPat, ns, fold):
  Ops, GroupOp = ns.Ops, ns.GroupOp
  return PatternMatcher([
    (UPat.var("x") + 0, _keep), (UPat.var("x") * 1, _keep), (UPat.var("x") * 0, _zero),
    (UPat(GroupOp.ALU, name="a", src=UPat(Ops.CONST)), fold),
    (UPat(GroupOp.ALU | {Ops.DEFINE_VAR, Ops.SPECIAL}, name="x"), _single),
    (UPat(Ops.RANGE, src=(UPat(Ops.CONST),), name="x"), _single)])

TG_PM = folding(TgPatternMatcher, TgUPat, TG, _tg_fold) + TG_DM
TC_PM = folding(tinyc.PatternMatcher, tinyc.UPat, TC, _tc_fold) + TC_DM

def rewrite_outcome(ns, u, pm):
  rewrite = tg_graph_rewrite if ns is TG else tinyc.graph_rewrite
  try: return ("ok", rewrite(u, pm))
  except Exception as e: return ("err", type(e), str(e))

def same_outcome(tc, tg):
  if tg[0] == "ok": return tc[0] == "ok" and from_tinygrad(tg[1]) is tc[1]
  return tc[0] == "err" and tc[1] is tg[1]

# ---- random index expressions ----

def leaves(ns, scale=1):
  """scale widens the bounds of a, c, n and t (b stays small: denominators b+6 and b-7 must not reach 0)"""
  U = ns.UOp
  return [U.variable("a", 0, 7 * scale), U.variable("b", -5, 5), U.variable("c", -9 * scale, -1), U.variable("n", 1, 16 * scale),
          U.variable("t", 3, 4 * scale), U.range(8, 0), U.range(5, 1), U.range(12, 2), U.range(2, 3)]

def gen_expr(ns, seed, scale=1):
  """A random IDIV/MOD expression; the same seed makes the same calls in either namespace."""
  rng = random.Random(seed)
  L = leaves(ns, scale)
  a, b, c, n, t, r0, r1, r2, r3 = L
  def leaf():
    u = rng.choice(L)
    return u * rng.choice([2, 3, 4, 6, 8, 12, 16, -1, -2, -3]) if rng.random() < 0.35 else u
  def denom():   # never a range through 0: a lone div_and_mod_symbolic loops on x//(0..k) for x <= 0
    r = rng.random()
    if r < 0.6: return rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24])
    if r < 0.7: return rng.choice([-1, -2, -3, -4, -6])
    if r < 0.85: return rng.choice([n, c, b + 6, b - 7, t])
    if r < 0.93: return rng.choice([n, r0, r2, a]) + rng.choice([1, 2])
    return n * rng.choice([2, 3, 4])
  def linear():
    e = leaf()
    for _ in range(rng.randrange(0, 3)): e = e + leaf()
    return e + rng.choice([1, 2, 3, 5, 7, 11, 13, 24, -1, -3, -8]) if rng.random() < 0.5 else e
  def expr(depth):
    if depth == 0: return linear()
    k = rng.random()
    if k < 0.3: return expr(depth - 1) // denom()
    if k < 0.55: return expr(depth - 1) % denom()
    if k < 0.65:   # an inner mod by a multiple of the outer one
      m = rng.choice([2, 3, 4])
      return (expr(depth - 1) % (m * rng.choice([1, 2, 3])) + leaf()) % m
    if k < 0.8: return expr(depth - 1) + expr(depth - 1)
    if k < 0.9: return expr(depth - 1) * rng.choice([2, 3, 4, -1, -2])
    return (expr(depth - 1) + rng.choice([1, 4, 6, 9, -5])) // denom()
  e = expr(rng.randrange(1, 4))
  if e.op not in (ns.Ops.IDIV, ns.Ops.MOD): e = e // denom() if rng.random() < 0.5 else e % denom()
  return e

def differential(seeds, scale=1):
  """(identical, changed, mismatching seeds) over the seeds."""
  same, changed, bad = 0, 0, []
  for seed in seeds:
    tg, tc = gen_expr(TG, seed, scale), gen_expr(TC, seed, scale)
    assert from_tinygrad(tg) is tc, seed
    o_tg, o_tc = rewrite_outcome(TG, tg, TG_PM), rewrite_outcome(TC, tc, TC_PM)
    if same_outcome(o_tc, o_tg): same += 1
    else: bad.append(seed)
    changed += o_tg[0] == "ok" and o_tg[1] is not tg
  return same, changed, bad

N_RANDOM = 3000

def test_random_expressions():
  same, changed, bad = differential(range(N_RANDOM))
  assert not bad, f"{len(bad)} of {N_RANDOM} differ, seeds {bad[:20]}"
  assert changed > N_RANDOM // 2   # most expressions do get folded

@pytest.mark.parametrize("scale", [2**28, 2**58, 2**61, 2**70])
def test_bounds_near_and_past_64_bits(scale):
  """the folder asks cancel, congruence and gcd in C integers where every number fits in 64 bits, and in Python's numbers
  where one does not: bounds around 2**63 take both paths (and sums and products that overflow 64 bits)"""
  same, changed, bad = differential(range(250), scale)
  assert not bad, f"{len(bad)} of 250 differ at scale {scale}, seeds {bad[:20]}"
  assert changed > 50

FLAG_SCRIPT = """
import sys
sys.path[:0] = [{repo!r}, {tests!r}]
from test_divandmod import differential
same, changed, bad = differential(range({n}))
print(same, changed, bad)
sys.exit(1 if bad else 0)
"""

def test_correct_divmod_folding_env():
  """CORRECT_DIVMOD_FOLDING=1 (read from the environment at import, like tinygrad's ContextVar) in a fresh process."""
  here = os.path.dirname(os.path.abspath(__file__))
  script = FLAG_SCRIPT.format(repo=os.path.dirname(here), tests=here, n=1500)
  res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, CORRECT_DIVMOD_FOLDING="1"))
  assert res.returncode == 0, res.stdout + res.stderr

def test_flag_changes_results():
  """the flag matters on these seeds: tinygrad with the flag flipped disagrees with tinyc (read at import)"""
  from tinygrad.helpers import Context, CORRECT_DIVMOD_FOLDING
  with Context(CORRECT_DIVMOD_FOLDING=0 if CORRECT_DIVMOD_FOLDING else 1):
    tg_divandmod.fold_divmod_general.cache_clear()
    _, _, bad = differential(range(1000))
  tg_divandmod.fold_divmod_general.cache_clear()
  assert bad

# ---- one case per rule ----

FOLD_CODE = tg_divandmod.fold_divmod_general.__wrapped__.__code__
FOLD_SOURCE = open(tg_divandmod.__file__).read().splitlines()

def fold_return_line(u):
  """Rewrite u once with tinygrad's rule set; the source line where the outermost fold_divmod_general returned."""
  tg_divandmod.fold_divmod_general.cache_clear()
  returns = []
  def profile(frame, event, arg):
    if event == "return" and frame.f_code is FOLD_CODE: returns.append(frame.f_lineno)
  sys.setprofile(profile)
  try: TG_DM.rewrite(u)
  finally: sys.setprofile(None)
  return FOLD_SOURCE[returns[-1] - 1] if returns else None

SUB_RULES = {   # sub-rule -> (what its return line of fold_divmod_general contains, an expression it folds)
  "cancel_divmod_div": ("d.const_like(q)", lambda L: L.r0 // 8),
  "cancel_divmod_mod": ("x - q*y", lambda L: (L.r0 + 8) % 16),
  "cancel_divmod_variable": ("d.const_like(q)", lambda L: (L.r3 + 1) // L.t),
  "remove_nested_mod": ("new_x % y", lambda L: (L.r0 % 4 + L.r1) % 2),
  "fold_binary_numerator_div": ("(y2-y1)*(v-v.vmin) + y1", lambda L: (L.t * 3) // 4),
  "fold_binary_numerator_mod": ("(y2-y1)*(v-v.vmin) + y1", lambda L: (L.r3 * 3 + 5) % 4),
  "fold_divmod_congruence_mod": ("rem - rem.vmin//c*c", lambda L: (L.r1 * 9 + 2) % 8),
  "fold_divmod_congruence_div": ("sum((f-r)//c", lambda L: (L.r1 * 9 + 2) // 8),
  "fold_divmod_congruence_negative_factor": ("rem - rem.vmin//c*c", lambda L: (L.r1 * -5 + 30) % 6),
  "gcd_with_remainder_mod": ("ret*gcd + const%gcd.arg", lambda L: (L.r0 * 4 + L.r1 * 2 + 7) % 6),
  "gcd_with_remainder_div": ("ret*gcd + const%gcd.arg", lambda L: (L.r0 * 4 + L.r1 * 2 + 5) // 6),
  "nest_div_by_smallest_factor": ("newxs // (c // div)", lambda L: (L.r0 * 4 + L.r2) // 8),
  "divide_by_gcd_div": ("ret*gcd if d.op", lambda L: (L.r0 * L.n) // L.n),
  "divide_by_gcd_mod": ("ret*gcd if d.op", lambda L: (L.r0 * L.n * 2 + L.n * 6) % (L.n * 4)),
  "factor_remainder_div": ("new_x//y+sum(quo)", lambda L: (L.n * L.r0 + L.r1) // L.n),
  "factor_remainder_mod": ("new_x%y if d.op", lambda L: (L.r0 * 5 + L.r1) % 4),
}

class Leaves:
  def __init__(self, ns): self.a, self.b, self.c, self.n, self.t, self.r0, self.r1, self.r2, self.r3 = leaves(ns)

@pytest.mark.parametrize("name", list(SUB_RULES))
def test_fold_divmod_sub_rule(name):
  marker, make = SUB_RULES[name]
  tg, tc = make(Leaves(TG)), make(Leaves(TC))
  line = fold_return_line(tg)
  assert line is not None and marker in line, f"{name}: the oracle returned at {line!r}"
  tg_divandmod.fold_divmod_general.cache_clear()
  expected, got = TG_DM.rewrite(tg), TC_DM.rewrite(tc)
  assert expected is not None and from_tinygrad(expected) is got
  assert same_outcome(rewrite_outcome(TC, tc, TC_PM), rewrite_outcome(TG, tg, TG_PM))

FAST_RULES = {   # index in tinygrad's list -> an expression only it rewrites first
  0: lambda L: (L.r0 // 2 + 3) // 4,           # (x//c+a)//d -> (x+a*c)//(c*d)
  1: lambda L: L.r0 // L.c,                      # x//d, d < 0
  2: lambda L: L.c // 3,                         # x//d, x <= 0
  3: lambda L: (L.r0 + 7) // 4,                  # (x+c)//d -> (x+c%d)//d + c//d
  4: lambda L: (L.r0 * -1 + 9) // 4,             # (x+c)//d with x <= 0 <= x+c
  5: lambda L: (L.r0 * 6 + L.r1) // 3,           # fold_divmod_general
  6: lambda L: L.c % 4,                          # x%d, x <= 0
  7: lambda L: L.r0 % L.c,                       # x%d, d < 0
}

def first_rule(pm, u):
  """the index of the first rule of pm whose callable rewrites u"""
  for i, (pat, fn) in enumerate(pm.patterns):
    for m in pat.match(u, {}):
      if (r := fn(**m)) is not None and r is not u: return i
  return None

@pytest.mark.parametrize("index", list(FAST_RULES))
def test_rule(index):
  tg, tc = FAST_RULES[index](Leaves(TG)), FAST_RULES[index](Leaves(TC))
  tg_divandmod.fold_divmod_general.cache_clear()
  assert first_rule(TG_DM, tg) == index
  expected, got = TG_DM.rewrite(tg), TC_DM.rewrite(tc)
  assert from_tinygrad(expected) is got
  assert same_outcome(rewrite_outcome(TC, tc, TC_PM), rewrite_outcome(TG, tg, TG_PM))

@pytest.mark.parametrize("op", ["//", "%"])
def test_division_by_zero(op):
  """a denominator whose range is exactly 0 raises ZeroDivisionError with tinygrad's message"""
  def make(ns):
    U = ns.UOp
    x, z = U.range(8, 0), U.variable("z", 0, 0)
    return x // z if op == "//" else x % z
  tg, tc = make(TG), make(TC)
  with pytest.raises(ZeroDivisionError) as e_tg: TG_DM.rewrite(tg)
  with pytest.raises(ZeroDivisionError) as e_tc: TC_DM.rewrite(tc)
  assert str(e_tc.value) == str(e_tg.value)
  assert str(e_tc.value).startswith("Division by zero" if op == "//" else "Mod by zero")

def test_const_zero_term_raises_like_tinygrad():
  """a CONST 0 among the terms has const factor 0: tinygrad's divides(0) raises, and so do we"""
  def make(ns): return (ns.UOp.const(ns.dtypes.index, 0) + ns.UOp.range(8, 0) + 5) % 3
  o_tg, o_tc = rewrite_outcome(TG, make(TG), TG_DM), rewrite_outcome(TC, make(TC), TC_DM)
  assert o_tg[0] == "err" and same_outcome(o_tc, o_tg)

def test_no_leak():
  """rewriting again creates no lasting nodes"""
  seeds = range(200)
  def run():
    for s in seeds: tinyc.graph_rewrite(gen_expr(TC, s), TC_PM)
  run(); gc.collect()
  before = _C._intern_count()
  run(); gc.collect()
  assert _C._intern_count() == before

# ---- the memo of fold_divmod_general's None answers (tinygrad's functools.cache) ----

def test_fold_memo_gives_the_uncached_answer():
  """A node fold_divmod_general leaves alone remembers it (per CORRECT_DIVMOD_FOLDING value): the same live nodes
  rewritten again, the switch flipped between rounds, give tinygrad's answer each time, as fresh nodes do"""
  from tinyc import helpers as tch
  from tinygrad import helpers as tgh
  flag_mattered = 0
  try:
    for seed in range(400):
      tg, tc = gen_expr(TG, seed), gen_expr(TC, seed)   # tc stays alive through the rounds, its nodes' memo with it
      got = []
      for flag in (1, 0, 1, 0):
        tg_divandmod.fold_divmod_general.cache_clear()   # tinygrad's cache ignores the switch's later changes
        with tgh.Context(CORRECT_DIVMOD_FOLDING=flag): want = rewrite_outcome(TG, tg, TG_PM)
        with tch.Context(CORRECT_DIVMOD_FOLDING=flag): got.append(rewrite_outcome(TC, tc, TC_PM))
        assert same_outcome(got[-1], want), (seed, flag)
      flag_mattered += got[0] != got[1]
  finally: tg_divandmod.fold_divmod_general.cache_clear()
  assert flag_mattered >= 2   # the rounds did test the two memo bits apart

def test_fold_memo_keeps_no_node_alive():
  """the memo is a bit on the node: rewriting live nodes again and dropping them leaves no node behind"""
  def run():
    exprs = [gen_expr(TC, s) for s in range(200)]
    for _ in range(3): outs = [tinyc.graph_rewrite(e, TC_PM) for e in exprs]
    del exprs, outs
  run(); gc.collect()
  before = _C._intern_count()
  for _ in range(3): run()
  gc.collect()
  assert _C._intern_count() == before
