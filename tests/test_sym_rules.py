"""Phase 3 of tinygrad/uop/symbolic.py (csrc/uop/symbolic_sym.c) against tinygrad 0.12.0: pm_simplify_valid,
pm_drop_and_clauses, pm_move_where_on_load and sym, plus the UOp.ranges helper they use.

Every case builds the same graph with tinyc's and with tinygrad's types (one builder, two namespaces), rewrites
it with the rule set of the same name on each side and requires from_tinygrad(tinygrad's result) is tinyc's result
(or both sides raise). Expected values come from the oracle only."""
import functools, operator, os, random, subprocess, sys
from types import SimpleNamespace
import pytest
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad
from tinygrad.uop.ops import UOp as TgUOp, Ops as TgOps, AxisType as TgAxisType, graph_rewrite as tg_graph_rewrite
from tinygrad.dtype import dtypes as tg_dtypes
import tinygrad.uop.symbolic as tg_symbolic

TC = SimpleNamespace(UOp=tinyc.UOp, Ops=tinyc.Ops, dtypes=tinyc.dtypes, AxisType=tinyc.AxisType, rewrite=tinyc.graph_rewrite,
                     rules=lambda name: _C.native_rules()[name])
TG = SimpleNamespace(UOp=TgUOp, Ops=TgOps, dtypes=tg_dtypes, AxisType=TgAxisType, rewrite=tg_graph_rewrite,
                     rules=lambda name: getattr(tg_symbolic, name))

OWN_SETS = ("pm_simplify_valid", "pm_drop_and_clauses", "pm_move_where_on_load")

def rewritten(ns, build, name):
  """('ok', graph_rewrite(build(ns), rule set `name`)) or ('err', exception type)"""
  try: return ("ok", ns.rewrite(build(ns), ns.rules(name)))
  except RecursionError: raise
  except Exception as e: return ("err", type(e))

def same_rewrite(build, name) -> tuple[bool, bool]:
  """(tinyc matches tinygrad, tinygrad changed the graph)"""
  tg, tc = rewritten(TG, build, name), rewritten(TC, build, name)
  if tg[0] == "err": return tc[0] == "err", True
  changed = tg[1] is not build(TG)
  return tc[0] == "ok" and from_tinygrad(tg[1]) is tc[1], changed

def assert_same_rewrite(build, name):
  tg, tc = rewritten(TG, build, name), rewritten(TC, build, name)
  if tg[0] == "err":
    assert tc[0] == "err", f"{name}: tinygrad raised {tg[1].__name__}, tinyc gave\n{tc[1]}"
    return
  assert tc[0] == "ok", f"{name}: tinyc raised {tc[1].__name__}, tinygrad gave\n{tg[1]}"
  assert from_tinygrad(tg[1]) is tc[1], f"{name}: expected\n{tg[1]}\ngot\n{tc[1]}"

# ---- the random graphs ----

class Builder:
  """Random graphs of the kinds phase 3 rewrites; the same seed makes the same graph in either namespace."""
  def __init__(self, ns, seed):
    self.ns, self.rng = ns, random.Random(seed)
    U, dt, rng = ns.UOp, ns.dtypes, self.rng
    self.U, self.dt = U, dt
    self.ranges = [U.range(rng.randint(2, 12), i) for i in range(3)]
    self.rred = U.range(rng.randint(2, 6), 3, ns.AxisType.REDUCE)
    self.vars = [U.variable("a", 0, 8), U.variable("b", 1, 5)]
    self.buf = U(ns.Ops.DEFINE_GLOBAL, dt.float.ptr(), arg=0)
    self.ibuf = U(ns.Ops.DEFINE_GLOBAL, dt.int.ptr(), arg=1)
    self.fvars = [U.variable("f", -2.0, 3.0, dt.float), U.variable("g", 0.5, 4.0, dt.float)]

  def leaf(self): return self.rng.choice(self.ranges + self.vars + [self.rred])

  def idx(self, depth=2):
    rng = self.rng
    if depth == 0 or rng.random() < 0.3: return self.leaf()
    k = rng.randrange(5)
    if k == 0: return self.idx(depth - 1) + self.idx(depth - 1)
    if k == 1: return self.idx(depth - 1) * rng.randint(1, 5)
    if k == 2: return self.idx(depth - 1) // rng.randint(2, 4)
    if k == 3: return self.idx(depth - 1) % rng.randint(2, 4)
    return self.idx(depth - 1) + rng.randint(-2, 6)

  def clause(self):
    rng = self.rng
    k = rng.randrange(6)
    if k == 0: return self.idx() < rng.randint(-1, 24)
    if k == 1: return (self.idx() < rng.randint(-1, 24)).ne(True)
    if k == 2: return self.idx(1) < self.idx(1)
    if k == 3: return self.leaf() < rng.randint(0, 10)
    if k == 4: return (functools.reduce(operator.add, rng.sample(self.ranges + self.vars, rng.randint(2, 3))) < 1).ne(True)  # a simplex
    return self.ibuf.index(self.leaf()) < rng.randint(0, 4)   # a data dependent clause

  def cond(self):
    clauses = [self.clause() for _ in range(self.rng.randint(1, 4))]
    if self.rng.random() < 0.2: clauses.append(self.rng.choice(clauses))
    return functools.reduce(operator.and_, clauses)

  def gated(self): return self.cond().where(self.idx(), self.U.invalid())
  def some_idx(self): return self.gated() if self.rng.random() < 0.6 else self.idx()

  def fval(self):
    rng, U, dt = self.rng, self.U, self.dt
    k = rng.randrange(4)
    if k == 0: return rng.choice(self.fvars)
    if k == 1: return U.const(dt.float, rng.choice([2.0, -1.5, 0.0, 3.0]))
    if k == 2: return self.buf.index(self.some_idx())
    return self.idx(1).cast(dt.float)

  # each kind is a whole expression
  def gated_index(self): return self.gated()
  def valid_only(self): return self.cond()

  def where_load(self):
    ld = self.buf.index(self.some_idx())
    return self.cond().where(ld, 0) if self.rng.random() < 0.5 else self.cond().where(0, ld)

  def store(self):
    rng, U, dt = self.rng, self.U, self.dt
    i = self.buf.index(self.some_idx())
    k = rng.randrange(4)
    if k == 0: return i.store(i.load())
    if k == 1: return i.store(self.cond().where(self.fval(), i.load()))
    if k == 2: return self.buf.index(U.invalid()).store(self.fval())
    return self.buf.index(U.invalid()).load() + self.fval()

  def reduce(self):
    rng, dt, r = self.rng, self.dt, self.rred
    if rng.random() < 0.3:
      chain = functools.reduce(operator.mul, [self.idx(1), r, self.leaf(), rng.randint(1, 4)][:rng.randint(2, 4)])
    else:
      factors = [rng.choice([self.fvars[0], self.fvars[1], r.cast(dt.float), self.buf.index(r + self.leaf()), self.fval()])
                 for _ in range(rng.randint(2, 4))]
      chain = functools.reduce(operator.mul, factors)
    if chain.op is not self.ns.Ops.MUL: chain = chain * 2
    extra = (r,) if rng.random() < 0.7 else (r, rng.choice(self.ranges))
    return chain.reduce(*extra, arg=rng.choice([self.ns.Ops.ADD, self.ns.Ops.MAX, self.ns.Ops.MUL]))

  def sink(self):
    rng, U, dt, Ops = self.rng, self.U, self.dt, self.ns.Ops
    parts = [self.store() for _ in range(rng.randint(1, 3))]
    extra = [U(Ops.NOOP), U(Ops.SINK, dt.void, (self.store(),)), U(Ops.GROUP, dt.void, (self.store(),)),
             U(Ops.VECTORIZE, dt.float.vec(2), (self.fval(), self.fval())), U(Ops.END, dt.void, (U(Ops.NOOP), rng.choice(self.ranges)))]
    parts += rng.sample(extra, rng.randint(0, 3))
    rng.shuffle(parts)
    return U(rng.choice([Ops.SINK, Ops.GROUP]), dt.void, tuple(parts))

  def power(self):
    rng, U, dt, Ops = self.rng, self.U, self.dt, self.ns.Ops
    base = rng.choice(self.fvars + [self.fval()])
    if rng.random() < 0.2: return base.alu(Ops.POW, rng.choice(self.fvars))
    return base.alu(Ops.POW, U.const(dt.float, rng.choice([0.0, 1.0, 2.0, 3.0, 4.0, 0.5, 1.5, 2.5, -1.0, -2.0, -0.5, 0.3])))

  def misc(self):
    rng, U, dt, Ops = self.rng, self.U, self.dt, self.ns.Ops
    x, y = self.fvars
    k = rng.randrange(10)
    if k == 0:
      n = rng.randint(2, 4)
      a, b = U(Ops.VECTORIZE, dt.float.vec(n), (x,) * n), U(Ops.VECTORIZE, dt.float.vec(n), (y,) * n)
      return rng.choice([a + b, a * b, a < b, a.maximum(b)])
    if k == 1: return self.idx().ne(0)
    if k == 2: return self.cond().where(self.idx(1), self.idx(1)).cast(rng.choice([dt.float, dt.int]))
    if k == 3: return (x * x).reciprocal()
    if k == 4: return (x * x * x).reciprocal()
    if k == 5: return (x * rng.choice([2.0, -4.0])).reciprocal()
    if k == 6: return x * (1 + x).reciprocal()
    if k == 7: return x * ((1 + x).reciprocal() * y) if rng.random() < 0.5 else x * ((1 + x).reciprocal() + y)
    if k == 8: return (self.idx() + self.idx()) * -1
    return (self.idx() + self.idx()) * rng.randint(2, 5)

KINDS = ("gated_index", "valid_only", "where_load", "store", "reduce", "sink", "power", "misc")
SETS_FOR_KIND = {"gated_index": OWN_SETS, "valid_only": ("pm_simplify_valid",), "where_load": OWN_SETS}

def random_case(seed):
  kind = KINDS[seed % len(KINDS)]
  return kind, lambda ns: getattr(Builder(ns, seed), kind)()

N_RANDOM = 560

def test_random_own_rule_sets():
  """pm_simplify_valid, pm_drop_and_clauses, pm_move_where_on_load on the graphs they are for"""
  results = []
  for seed in range(N_RANDOM):
    kind, build = random_case(seed)
    for name in SETS_FOR_KIND.get(kind, ()): results.append((seed, name, *same_rewrite(build, name)))
  bad = [(seed, name) for seed, name, ok, _ in results if not ok]
  changed = sum(1 for *_, ch in results if ch)
  print(f"own rule sets: {len(results) - len(bad)}/{len(results)} identical, {changed} rewritten by tinygrad")
  assert not bad, bad[:20]
  assert changed > len(results) // 4   # the graphs exercise the rules

def test_random_sym():
  results = [(seed, *same_rewrite(random_case(seed)[1], "sym")) for seed in range(N_RANDOM)]
  bad = [seed for seed, ok, _ in results if not ok]
  changed = sum(1 for *_, ch in results if ch)
  print(f"sym: {len(results) - len(bad)}/{len(results)} identical, {changed} rewritten by tinygrad")
  assert not bad, bad[:20]
  assert changed > len(results) // 2

# ---- targeted cases, one or more per rule ----

def _r(ns, end, i, t=None): return ns.UOp.range(end, i) if t is None else ns.UOp.range(end, i, t)
def _buf(ns, dt=None, arg=0): return ns.UOp(ns.Ops.DEFINE_GLOBAL, (dt or ns.dtypes.float).ptr(), arg=arg)

def _simplex_vec(ns, lane1):
  """(r0 + r1 >= 1) & VECTORIZE(r0 + a + r1 < 1, lane1): the first lane has no r0 + r1 node for the whole-clause candidate"""
  r0, r1, a = _r(ns, 4, 0), _r(ns, 8, 1), ns.UOp.variable("a", 0, 8)
  return ((r0 + r1) < 1).ne(True) & ns.UOp(ns.Ops.VECTORIZE, ns.dtypes.bool.vec(2), ((r0 + a + r1) < 1, lane1))

TARGETED = {
  # parse_valid's two forms and uop_given_valid's bounds
  "gate_upper": ("pm_simplify_valid", lambda ns: ((_r(ns, 10, 0) < 4)).where(_r(ns, 10, 0) // 4, ns.UOp.invalid())),
  "gate_lower": ("pm_simplify_valid", lambda ns: (_r(ns, 10, 0) < 5).ne(True).where((_r(ns, 10, 0) + 3) // 8, ns.UOp.invalid())),
  "gate_both": ("pm_simplify_valid", lambda ns: ((_r(ns, 16, 0) < 8).ne(True) & (_r(ns, 16, 0) < 12))
                .where((_r(ns, 16, 0) % 8) + (_r(ns, 16, 0) // 8) * 8, ns.UOp.invalid())),
  "gate_var_bound": ("pm_simplify_valid", lambda ns: (ns.UOp.variable("a", 0, 20) < ns.UOp.variable("b", 1, 6))
                     .where(ns.UOp.variable("a", 0, 20) // 8, ns.UOp.invalid())),
  # the simplex X0 + X1 >= 1
  "simplex": ("pm_simplify_valid", lambda ns: ((_r(ns, 4, 0) + _r(ns, 4, 1)) < 1).ne(True)
              .where((_r(ns, 4, 0) + _r(ns, 4, 1) + 3) // 4, ns.UOp.invalid())),
  # simplify_valid: dedup, priority order, clause simplified by the others, skipped with an INDEX, an int AND
  "valid_dedup": ("pm_simplify_valid", lambda ns: (_r(ns, 8, 0) < 3) & (_r(ns, 8, 1) < 5) & (_r(ns, 8, 0) < 3)),
  "valid_implied": ("pm_simplify_valid", lambda ns: (_r(ns, 8, 0) < 3) & ((_r(ns, 8, 0) + _r(ns, 8, 1) * 8) < 30)),
  "valid_priority": ("pm_simplify_valid", lambda ns: ((_r(ns, 8, 0) * 2 + 1) < 9) & ((_r(ns, 8, 0) * 2 + 1) // 2 < 3)),
  "valid_index": ("pm_simplify_valid", lambda ns: (_buf(ns, ns.dtypes.int).index(_r(ns, 8, 0)) < 3) & (_r(ns, 8, 0) < 3)),
  "int_and_dedup": ("pm_simplify_valid", lambda ns: ns.UOp.variable("a", 0, 8) & ns.UOp.variable("a", 0, 8) & ns.UOp.variable("b", 0, 8)),
  # uop_given_valid on a 2-wide VECTORIZE: the simplex branches agree on one lane only; or one branch folds to a VCONST
  "valid_vectorize_lanes": ("pm_simplify_valid", lambda ns: _simplex_vec(ns, (_r(ns, 4, 0) < 1) | (ns.UOp.variable("a", 0, 8) < 2))),
  "valid_vectorize_vconst": ("pm_simplify_valid", lambda ns: _simplex_vec(ns, (_r(ns, 4, 0) < 1) & (_r(ns, 8, 1) < 5))),
  # drop_and_clauses: a clause on a range the index does not use is dropped
  "drop_clause": ("pm_drop_and_clauses", lambda ns: ((_r(ns, 8, 0) < 5) & (_r(ns, 8, 1) < 3)).where(_r(ns, 8, 0) * 2, ns.UOp.invalid())),
  "keep_clauses": ("pm_drop_and_clauses", lambda ns: ((_r(ns, 8, 0) < 5) & (_r(ns, 8, 1) < 3))
                   .where(_r(ns, 8, 0) + _r(ns, 8, 1), ns.UOp.invalid())),
  # where_on_load: moved clauses, duplicated clauses, a clause on another range, a data dependent clause, the else form
  "where_load_move": ("pm_move_where_on_load", lambda ns: (_r(ns, 8, 0) < 5).where(_buf(ns).index(_r(ns, 8, 0)), 0)),
  "where_load_dup": ("pm_move_where_on_load", lambda ns: ((_r(ns, 8, 0) < 5) & (_r(ns, 8, 1) < 2))
                     .where(_buf(ns).index(((_r(ns, 8, 0) < 5)).where(_r(ns, 8, 0), ns.UOp.invalid())), 0)),
  "where_load_other_range": ("pm_move_where_on_load", lambda ns: (_r(ns, 8, 1) < 5).where(_buf(ns).index(_r(ns, 8, 0)), 0)),
  "where_load_data_dep": ("pm_move_where_on_load", lambda ns: (_buf(ns, ns.dtypes.int, 1).index(_r(ns, 8, 0)) < 5)
                          .where(_buf(ns).index(_r(ns, 8, 0)), 0)),
  "where_load_else": ("pm_move_where_on_load", lambda ns: (_r(ns, 8, 0) < 5).where(0, _buf(ns).index(_r(ns, 8, 0)))),
  # sym's own rules
  "alu_broadcasts": ("sym", lambda ns: ns.UOp(ns.Ops.VECTORIZE, ns.dtypes.float.vec(4), (ns.UOp.variable("f", 0.0, 1.0, ns.dtypes.float),) * 4)
                     * ns.UOp(ns.Ops.VECTORIZE, ns.dtypes.float.vec(4), (ns.UOp.variable("g", 0.0, 1.0, ns.dtypes.float),) * 4)),
  "ne_zero": ("sym", lambda ns: ns.UOp.variable("a", -3, 8, ns.dtypes.int).ne(0)),
  "cast_where": ("sym", lambda ns: (_r(ns, 8, 0) < 3).where(ns.UOp.variable("a", -3, 8, ns.dtypes.int), 7).cast(ns.dtypes.float)),
  "pow_var": ("sym", lambda ns: ns.UOp.variable("f", -2.0, 2.0, ns.dtypes.float).alu(ns.Ops.POW, ns.UOp.variable("g", -1.0, 3.0, ns.dtypes.float))),
  "pow_half": ("sym", lambda ns: ns.UOp.variable("f", 0.0, 2.0, ns.dtypes.float).alu(ns.Ops.POW, ns.UOp.const(ns.dtypes.float, 2.5))),
  "pow_neg": ("sym", lambda ns: ns.UOp.variable("f", 0.5, 2.0, ns.dtypes.float).alu(ns.Ops.POW, ns.UOp.const(ns.dtypes.float, -3.0))),
  "store_own_load": ("sym", lambda ns: _buf(ns).index(_r(ns, 8, 0)).store(_buf(ns).index(_r(ns, 8, 0)).load())),
  "store_gated": ("sym", lambda ns: _buf(ns).index(_r(ns, 8, 0)).store((_r(ns, 8, 0) < 3)
                  .where(ns.UOp.const(ns.dtypes.float, 1.0), _buf(ns).index(_r(ns, 8, 0)).load()))),
  "store_invalid": ("sym", lambda ns: _buf(ns).index(ns.UOp.invalid()).store(ns.UOp.const(ns.dtypes.float, 1.0))),
  "load_invalid": ("sym", lambda ns: _buf(ns).index(ns.UOp.invalid()).load()),
  "recip_square": ("sym", lambda ns: (ns.UOp.variable("f", 1.0, 2.0, ns.dtypes.float) * ns.UOp.variable("f", 1.0, 2.0, ns.dtypes.float)).reciprocal()),
  "recip_cube": ("sym", lambda ns: (ns.UOp.variable("f", 1.0, 2.0, ns.dtypes.float) * ns.UOp.variable("f", 1.0, 2.0, ns.dtypes.float)
                 * ns.UOp.variable("f", 1.0, 2.0, ns.dtypes.float)).reciprocal()),
  "recip_const": ("sym", lambda ns: (ns.UOp.variable("f", 1.0, 2.0, ns.dtypes.float) * 3.0).reciprocal()),
  "x_over_1px": ("sym", lambda ns: ns.UOp.variable("f", 1.0, 2.0, ns.dtypes.float) * (1 + ns.UOp.variable("f", 1.0, 2.0, ns.dtypes.float)).reciprocal()),
  "reduce_const": ("sym", lambda ns: ((_r(ns, 4, 0, ns.AxisType.REDUCE).cast(ns.dtypes.float) + 1.0) * 3.0).reduce(_r(ns, 4, 0, ns.AxisType.REDUCE), arg=ns.Ops.ADD)),
  "reduce_chain": ("sym", lambda ns: (ns.UOp.variable("f", 1.0, 2.0, ns.dtypes.float) * _buf(ns).index(_r(ns, 4, 0, ns.AxisType.REDUCE))
                   * ns.UOp.variable("g", 1.0, 2.0, ns.dtypes.float)).reduce(_r(ns, 4, 0, ns.AxisType.REDUCE), arg=ns.Ops.ADD)),
  "reduce_chain_max": ("sym", lambda ns: (ns.UOp.variable("f", -1.0, 2.0, ns.dtypes.float) * _buf(ns).index(_r(ns, 4, 0, ns.AxisType.REDUCE))
                       * ns.UOp.variable("g", 1.0, 2.0, ns.dtypes.float)).reduce(_r(ns, 4, 0, ns.AxisType.REDUCE), arg=ns.Ops.MAX)),
  "group_of_one": ("sym", lambda ns: ns.UOp(ns.Ops.GROUP, ns.dtypes.void, (_buf(ns).index(_r(ns, 8, 0)).store(1.0),))),
  "sink_flatten": ("sym", lambda ns: ns.UOp.sink(_buf(ns).index(_r(ns, 8, 0)).store(1.0), ns.UOp(ns.Ops.NOOP),
                                                 ns.UOp.sink(_buf(ns).index(_r(ns, 8, 1)).store(2.0)))),
  "end_noop": ("sym", lambda ns: ns.UOp(ns.Ops.END, ns.dtypes.void, (ns.UOp(ns.Ops.NOOP), _r(ns, 8, 0)))),
  "negate_sum": ("sym", lambda ns: (ns.UOp.variable("f", 1.0, 2.0, ns.dtypes.float) + ns.UOp.variable("g", 1.0, 2.0, ns.dtypes.float)) * -1),
  "distribute": ("sym", lambda ns: (_r(ns, 8, 0) + ns.UOp.variable("a", 0, 8)) * 3),
}

@pytest.mark.parametrize("case", sorted(TARGETED))
def test_targeted(case):
  name, build = TARGETED[case]
  assert_same_rewrite(build, name)
  if name != "sym": assert_same_rewrite(build, "sym")

# ---- UOp.ranges ----

def ranges_graph(ns):
  U, Ops, dt = ns.UOp, ns.Ops, ns.dtypes
  r1, r2, r3 = U.range(10, 0), U.range(4, 1), U.range(3, 2, ns.AxisType.REDUCE)
  buf = _buf(ns)
  red = (buf.index(r1 * 4 + r2 + r3) * 2).reduce(r3, arg=Ops.ADD)
  end = buf.index(r1 * 4 + r2).store(red).end(r1)
  after = buf.after(end)
  return U.sink(after.index(r2).store(1.0).end(r2), end, U(Ops.BUFFERIZE, dt.float, (red + 1, r2), arg=None))

def test_ranges_match_tinygrad():
  tg = ranges_graph(TG)
  assert ranges_graph(TC) is from_tinygrad(tg)
  for u in tg.toposort():
    assert list(_C.uop_ranges(from_tinygrad(u))) == [from_tinygrad(r) for r in u.ranges], u.op

# ---- IMAGE: read from the environment at import, as tinygrad's ContextVar ----

IMAGE_SCRIPT = """
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad
from tinygrad.uop.ops import UOp, graph_rewrite
import tinygrad.uop.symbolic as S
r = UOp.range(16, 0)
g = (r < 5).where((r + 3) // 8, UOp.invalid())   # simplifies to 0 without IMAGE
print(from_tinygrad(graph_rewrite(g, S.pm_simplify_valid)) is tinyc.graph_rewrite(from_tinygrad(g), _C.native_rules()["pm_simplify_valid"]),
      graph_rewrite(g, S.pm_simplify_valid) is g)
"""

def test_image_env_skips_div_mod():
  env = dict(os.environ, IMAGE="1", PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(tinyc.__file__)), os.environ.get("PYTHONPATH", "")]))
  out = subprocess.run([sys.executable, "-c", IMAGE_SCRIPT], env=env, capture_output=True, text=True, check=True).stdout.split()
  assert out == ["True", "True"], out
