"""The native symbolic rule sets (tinygrad/uop/symbolic.py, phases 1 and 2: propagate_invalid, symbolic_simple,
gep_pushing, commutative, symbolic) against tinygrad 0.12.0's, the oracle.

Every graph is built twice by the same calls, once with tinyc and once with tinygrad; both are rewritten with the
set of the same name and the tinyc result must be the very node the tinygrad result converts to."""
import random
from types import SimpleNamespace
import pytest
import tinyc
from tinyc.tinygrad import from_tinygrad
from tinygrad.uop.ops import graph_rewrite as tg_graph_rewrite, PatternMatcher as TgPatternMatcher
from tinygrad.uop import symbolic as tg_symbolic
from uop_oracle import TC, TG, outcome, assert_same_outcome

SETS = ("propagate_invalid", "symbolic_simple", "gep_pushing", "commutative", "symbolic")

def tg_set(name): return getattr(tg_symbolic, name)
def tc_set(name): return tinyc._C.native_rules()[name]

def check_rewrite(t, o, name, bottom_up=False):
  """graph_rewrite with the set `name` gives the same node (or the same kind of error) on both sides."""
  assert from_tinygrad(t) is o
  theirs = outcome(tg_graph_rewrite, t, tg_set(name), None, bottom_up)
  ours = outcome(tinyc.graph_rewrite, o, tc_set(name), None, bottom_up)
  assert_same_outcome(ours, theirs, f"graph_rewrite({name}, bottom_up={bottom_up})")
  return theirs

def test_sets_have_tinygrads_rule_counts():
  for name in SETS: assert tc_set(name).nrules == len(tg_set(name).patterns), name

# ---------------------------------------------------------------------------------------------------
# random expressions

KINDS = ("index", "int", "bool", "float")

def gen_expr(n, seed, depths=(3, 4, 4, 5)):
  """A random expression of any kind, from the calls rng picks (never from the graph, so both namespaces make
  the same calls). Divisors are kept positive: tinygrad's div_and_mod_symbolic loops forever on some divisors
  whose range holds 0."""
  rng = random.Random(seed)
  U, d = n.UOp, n.dtypes
  dt = {"index": d.index, "int": d.int, "bool": d.bool, "float": d.float}
  lows = [rng.randint(-10, 5) for _ in range(3)]
  var = {"index": [U.variable(f"a{i}", lo, lo + rng.randint(0, 20)) for i, lo in enumerate(lows)],
         "int": [U.variable("i0", rng.randint(-8, 0), rng.randint(1, 30), d.int), U.variable("i1", 0, rng.randint(1, 100), d.int)],
         "bool": [U.variable("b0", False, True, d.bool), U.variable("b1", False, True, d.bool)],
         "float": [U.variable("f0", -2.5, 4.0, d.float), U.variable("f1", 0.5, 8.0, d.float)]}
  rng_idx = U.range(rng.randint(1, 16), rng.randint(0, 2))
  var["index"] += [rng_idx, U.special(rng.randint(1, 32), "gidx0")]
  positive = {"index": [U.variable("p0", rng.randint(1, 4), rng.randint(5, 40)), rng_idx + 1, U.const(d.index, rng.choice([2, 3, 4, 8]))],
              "int": [U.variable("p1", rng.randint(1, 4), rng.randint(5, 40), d.int), U.const(d.int, rng.choice([2, 3, 5]))]}

  def const(k):
    if k == "bool": return U.const(d.bool, rng.random() < 0.5)
    if k == "float": return U.const(d.float, rng.choice([0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5]))
    return U.const(dt[k], rng.choice([0, 1, -1, 2, 3, 4, 5, 7, 8, 16, -3, -4, rng.randint(-40, 40)]))
  def leaf(k): return const(k) if rng.random() < 0.35 else rng.choice(var[k])
  def small(): return rng.choice([0, 1, -1, 2, 3, 4, -2, 5, 8, 16])

  def integer(k, depth):
    a, r = build(k, depth), rng.random()
    if r < 0.12: return a + rng.choice([0, 1, -1, 3, -5])
    if r < 0.22: return a + build(k, depth)
    if r < 0.30: return a * small()
    if r < 0.34: return a * build(k, depth)
    if r < 0.42: return a // rng.choice([1, -1, 2, 3, 4, 8, 16, 5])
    if r < 0.50: return a % rng.choice([1, 2, 3, 4, 8, 16, 5])
    if r < 0.54: return a // rng.choice(positive[k])
    if r < 0.58: return a % rng.choice(positive[k])
    if r < 0.62: return a.maximum(build(k, depth) if rng.random() < 0.7 else small())
    if r < 0.65: return -a
    if r < 0.68: return a - build(k, depth)
    if r < 0.73: return build("bool", depth).where(a, build(k, depth) if rng.random() < 0.7 else small())
    if r < 0.76: return build("int" if k == "index" else "index", depth).cast(dt[k])
    if r < 0.78: return build("bool", depth).cast(dt[k])
    if r < 0.82:
      b, op = build(k, depth) if rng.random() < 0.5 else rng.choice([0, 1, 3, 7, 15, -1]), rng.randrange(5)
      return a & b if op == 0 else a | b if op == 1 else a ^ b if op == 2 else a << rng.randint(0, 3) if op == 3 else a >> rng.randint(0, 3)
    if r < 0.87:
      cnt = rng.choice([2, 3, 4])
      v, s = a.vectorize(*[build(k, depth) for _ in range(cnt - 1)]), rng.random()
      if s < 0.3: v = v + U.const(v.dtype, rng.randint(-3, 3))
      elif s < 0.5: v = v * v.const_like(tuple(rng.randint(-3, 3) for _ in range(cnt)))
      elif s < 0.65: v = v.maximum(v.const_like(1))
      if rng.random() < 0.3: return v.gep(tuple(rng.randrange(cnt) for _ in range(2))).gep(rng.randrange(2))
      return v.gep(rng.randrange(cnt))
    if r < 0.93 and k == "index":   # an invalid gate, then math on it
      g = build("bool", depth).where(a, U.invalid())
      s = rng.random()
      if s < 0.5: return g + (build(k, depth) if rng.random() < 0.5 else small())
      if s < 0.7: return g * small()
      if s < 0.8: return g.cast(d.int).cast(d.index)
      return g
    x, y = a.cast(d.long), build(k, depth).cast(d.long)
    return (x + y if rng.random() < 0.5 else x * y).cast(dt[k])

  def boolean(depth):
    k, r = rng.choice(["index", "index", "int", "float"]), rng.random()
    if r < 0.30: return build(k, depth) < (build(k, depth) if rng.random() < 0.5 else rng.choice([0, 1, 2, 5, -3, 10]))
    if r < 0.42: return build(k, depth).ne(build(k, depth) if rng.random() < 0.5 else rng.choice([0, 1, 3]))
    if r < 0.52: return build("bool", depth) & build("bool", depth)
    if r < 0.62: return build("bool", depth) | build("bool", depth)
    if r < 0.67: return build("bool", depth) ^ build("bool", depth)
    if r < 0.77: return build("bool", depth).logical_not()
    if r < 0.82: return build("bool", depth).where(build("bool", depth), build("bool", depth))
    if r < 0.88: return (build("index", depth) < rng.randint(-2, 3)).ne(True)
    if r < 0.94: return build("bool", depth) * build("bool", depth) if rng.random() < 0.5 else build("bool", depth) + build("bool", depth)
    return build(k, depth).eq(build(k, depth))

  def floating(depth):
    r = rng.random()
    if r < 0.15: return build("float", depth) + build("float", depth)
    if r < 0.30: return build("float", depth) * rng.choice([0, 1, 2.0, -1, 0.5])
    if r < 0.40: return build("float", depth) / build("float", depth)
    if r < 0.48: return build("float", depth).maximum(build("float", depth))
    if r < 0.55: return build("float", depth).reciprocal()
    if r < 0.61: return build("float", depth).sqrt() if rng.random() < 0.5 else build("float", depth).exp2()
    if r < 0.70: return build("float", depth).pow(rng.choice([0, 1, 2, 3, -1, -2, 0.5, 1.5, 2.5, 0.3]))
    if r < 0.74: return U.const(d.float, rng.choice([2.0, 1.0, 0.5])).pow(build("float", depth))
    if r < 0.84: return build(rng.choice(["index", "int", "bool"]), depth).cast(d.float)
    if r < 0.92: return build("bool", depth).where(build("float", depth), build("float", depth))
    return -build("float", depth)

  def build(k, depth):
    if depth <= 0 or rng.random() < 0.2: return leaf(k)
    return boolean(depth - 1) if k == "bool" else floating(depth - 1) if k == "float" else integer(k, depth - 1)
  return build(rng.choice(KINDS), rng.choice(depths))

def check_random(name, seeds, bottom_up=False):
  """Rewrite gen_expr(seed) for every seed; returns how many came out identical (all must)."""
  same = 0
  for s in seeds:
    check_rewrite(gen_expr(TG, s), gen_expr(TC, s), name, bottom_up)
    same += 1
  return same

@pytest.mark.parametrize("part", range(4))
def test_random_symbolic(part):
  assert check_random("symbolic", range(part * 600, (part + 1) * 600)) == 600

@pytest.mark.parametrize("bottom_up", [False, True])
def test_random_symbolic_simple(bottom_up):
  assert check_random("symbolic_simple", range(10000, 11200), bottom_up) == 1200

@pytest.mark.parametrize("name", ["propagate_invalid", "gep_pushing", "commutative"])
def test_random_other_sets(name):
  assert check_random(name, range(20000, 20600)) == 600

def test_simplify_uses_symbolic():
  for s in range(30000, 30200):
    t, o = gen_expr(TG, s), gen_expr(TC, s)
    assert_same_outcome(outcome(o.simplify), outcome(t.simplify), f"simplify of seed {s}")

# ---------------------------------------------------------------------------------------------------
# targeted cases: each builds the input of one rule (named by what it folds), in tinygrad's order

def leaves(n):
  U, d, Ops = n.UOp, n.dtypes, n.Ops
  buf = U(Ops.DEFINE_GLOBAL, d.float.ptr(), arg=0)
  return SimpleNamespace(
    U=U, d=d, Ops=Ops, buf=buf, gate=U.variable("x", 0, 10) < 5,
    x=U.variable("x", 0, 10), y=U.variable("y", -5, 5), z=U.variable("z", 0, 3), w=U.variable("w", -20, 10),
    e=U.variable("e", 1, 16), i=U.variable("i", -8, 30, d.int), j=U.variable("j", 0, 100, d.int),
    i8=U.variable("i8", -5, 5, d.int8), l=U.variable("l", -100, 100, d.long), l2=U.variable("l2", 0, 9, d.long),
    u64=U.variable("u64", 0, 2**40, d.uint64), u32=U.variable("u32", 0, 2**20, d.uint32),
    b=U.variable("b", False, True, d.bool), b2=U.variable("b2", False, True, d.bool), b3=U.variable("b3", False, True, d.bool),
    f=U.variable("f", -2.5, 4.0, d.float), g=U.variable("g", 0.5, 8.0, d.float), h=U.variable("h", 1.0, 2.0, d.float),
    r=U.range(8, 0), vec=U.variable("x", 0, 10).vectorize(U.variable("y", -5, 5), U.variable("z", 0, 3), U.variable("w", -20, 10)))

def invalid_gate(v): return v.gate.where(v.x, v.U.invalid())
def vec4(v): return v.vec + v.U.const(v.d.index.vec(4), (1, 2, 3, 4))   # a 4-lane ALU (not a VECTORIZE)
def wmma(v):
  d = v.d
  axes = (((1, 2), (2, 2)), ((3, 2), (4, 2)), ((5, 2), (6, 2)))
  arg = ("WMMA_8_16_8_half_float", (8, 16, 8), d.half, d.float, "CUDA", 32, axes, ())
  return v.U(v.Ops.WMMA, d.float.vec(8), (v.f.broadcast(8), v.g.broadcast(8), v.h.broadcast(8)), arg)

BINARY = ["ADD", "MUL", "SHL", "SHR", "IDIV", "MAX", "MOD", "XOR", "OR", "AND", "THREEFRY", "SUB", "FDIV", "POW"]
CMP = ["CMPLT", "CMPNE", "CMPEQ"]
CASES = [
  # propagate_invalid
  ("invalid gate cast", lambda v: invalid_gate(v).cast(v.d.int)),
  *((f"invalid gate {op}", lambda v, op=op: invalid_gate(v).alu(v.Ops[op], v.y)) for op in BINARY),
  *((f"invalid gate {op}", lambda v, op=op: invalid_gate(v).alu(v.Ops[op], v.y)) for op in CMP),
  *((f"Invalid {op}", lambda v, op=op: v.U.invalid().alu(v.Ops[op], v.y)) for op in BINARY),
  # symbolic_simple: self folding
  ("x+0", lambda v: v.x + 0), ("x*1", lambda v: v.x * 1), ("x^0", lambda v: v.i ^ 0), ("x//x", lambda v: v.x // v.x),
  ("x//1", lambda v: v.x // 1), ("x//-1", lambda v: v.x // -1), ("(x%y)%y", lambda v: (v.x % v.e) % v.e),
  ("x%c+(x//c)*c", lambda v: v.x % 3 + (v.x // 3) * 3),
  ("(x//a)%c+(x//b)*c", lambda v: (v.x // 2) % 3 + (v.x // 6) * 3),
  ("(x//a)%c+(x//b)*c mismatch", lambda v: (v.x // 2) % 3 + (v.x // 5) * 3),
  ("(x//c1)*c3+x%c1*c2", lambda v: (v.x // 3) * 12 + (v.x % 3) * 4),
  ("y+(x//c)*c+x%c", lambda v: (v.y + (v.x // 3) * 3) + v.x % 3),
  ("y+x%c+(x//c)*c", lambda v: (v.y + v.x % 3) + (v.x // 3) * 3),
  ("y+(x//c1)*c3+x%c1*c2", lambda v: (v.y + (v.x // 3) * 12) + (v.x % 3) * 4),
  ("y+x%c1*c2+(x//c1)*c3", lambda v: (v.y + (v.x % 3) * 4) + (v.x // 3) * 12),
  ("b&True", lambda v: v.b & True), ("b&False", lambda v: v.b & False),
  ("b|True", lambda v: v.b | True), ("b|False", lambda v: v.b | False),
  ("b&b", lambda v: v.b & v.b), ("max(x,x)", lambda v: v.x.maximum(v.x)),
  ("not not b", lambda v: v.b.logical_not().logical_not()),
  ("b?True:False", lambda v: v.b.where(v.U.const(v.d.bool, True), v.U.const(v.d.bool, False))),
  ("b?False:True", lambda v: v.b.where(v.U.const(v.d.bool, False), v.U.const(v.d.bool, True))),
  ("trunc(int)", lambda v: v.i.trunc()),
  # zero folding
  ("x<x", lambda v: v.x < v.x), ("x%x", lambda v: v.x % v.x), ("x^x", lambda v: v.i ^ v.i), ("x!=x", lambda v: v.i.ne(v.i)),
  ("vec x<x", lambda v: vec4(v) < vec4(v)),
  # constant folding
  ("sqrt(4.0)", lambda v: v.U.const(v.d.float, 4.0).sqrt()), ("recip(0.0)", lambda v: v.U.const(v.d.float, 0.0).reciprocal()),
  ("neg vconst", lambda v: -v.U.const(v.d.int.vec(2), (3, -4))),
  ("3+4", lambda v: v.U.const(v.d.int, 3) + 4), ("int overflow", lambda v: v.U.const(v.d.int, 2**30) * 4),
  ("7//-2", lambda v: v.U.const(v.d.index, 7) // -2), ("vconst max", lambda v: v.U.const(v.d.int.vec(2), (1, 5)).maximum(3)),
  ("const where", lambda v: v.U.const(v.d.bool, False).where(v.U.const(v.d.int, 1), v.U.const(v.d.int, 2))),
  ("Invalid+1", lambda v: v.U.invalid() + v.U.const(v.d.index, 1)),
  # bool MUL/ADD/MAX
  ("b*b2", lambda v: v.b * v.b2), ("b+b2", lambda v: v.b + v.b2), ("max(b,b2)", lambda v: v.b.maximum(v.b2)),
  # div rules
  ("0/0", lambda v: v.U.const(v.d.float, 0.0) / 0), ("(x*0)/0", lambda v: (v.f * 0) / 0),
  ("x/x", lambda v: v.f / v.f), ("(x*x2)/x2", lambda v: (v.f * v.g) / v.g),
  # x*0
  ("x*0", lambda v: v.f * 0), ("inf*0", lambda v: v.U.const(v.d.float, float("inf")) * 0), ("index*0", lambda v: v.x * 0),
  # cast/bitcast
  ("cast const", lambda v: v.U.const(v.d.int, 3).cast(v.d.float)), ("cast vconst", lambda v: v.U.const(v.d.int.vec(2), (3, 4)).cast(v.d.float.vec(2))),
  ("cast to own dtype", lambda v: v.U(v.Ops.CAST, v.d.int, (v.i,))), ("bitcast to own dtype", lambda v: v.i.bitcast(v.d.int)),
  ("bitcast const", lambda v: v.U.const(v.d.float, 1.0).bitcast(v.d.int)),
  ("bitcast vconst", lambda v: v.U.const(v.d.float.vec(2), (1.0, -2.0)).bitcast(v.d.uint.vec(2))),
  ("bitcast size mismatch", lambda v: v.U.const(v.d.float, 1.0).bitcast(v.d.long)),
  ("bitcast no fmt", lambda v: v.U.const(v.d.int, 3).bitcast(v.d.index)),
  ("int8->int->int8", lambda v: v.i8.cast(v.d.int).cast(v.d.int8)),
  # pow
  *((f"f**{e}", lambda v, e=e: v.f.pow(e)) for e in (2, 3, -1, -2, 0, 0.5, 1.5, 2.5, 0.3)),
  *((f"{c}**f", lambda v, c=c: v.U.const(v.d.float, c).pow(v.f)) for c in (1.0, 2.0, 0.5, -2.0)),
  # threefry
  ("(u64&0xFFFFFFFF).cast(u32)", lambda v: (v.u64 & 0xFFFFFFFF).cast(v.d.uint32)),
  ("low word of mul", lambda v: ((v.u64 * (1 << 32)) | v.u32.cast(v.d.uint64)).cast(v.d.uint32)),
  ("high word of mul", lambda v: ((v.u64 * (1 << 32)) | v.u32.cast(v.d.uint64)) // (1 << 32)),
  ("low word of shl", lambda v: ((v.u64 << 32) | v.u32.cast(v.d.uint64)).cast(v.d.uint32)),
  ("high word of shl", lambda v: ((v.u64 << 32) | v.u32.cast(v.d.uint64)) >> 32),
  # simple where folding
  ("c?v:v", lambda v: v.b.where(v.x, v.x)), ("True?x:y", lambda v: v.U.const(v.d.bool, True).where(v.x, v.y)),
  ("False?x:y", lambda v: v.U.const(v.d.bool, False).where(v.x, v.y)),
  ("a?(b?c:d):d", lambda v: v.b.where(v.b2.where(v.x, v.y), v.y)),
  # gep_pushing
  ("gep of gep", lambda v: vec4(v).gep((3, 2, 1)).gep((0, 2))),
  # lanes the generic pick takes (Python's indexing): from the end, past the end (IndexError), a bool
  ("gep of gep, lane from the end", lambda v: vec4(v).gep((3, 2, 1)).gep(-1)),
  ("gep of gep, lane past the end", lambda v: v.U(v.Ops.GEP, v.d.index, (vec4(v).gep((3, 2)),), (5,))),
  ("gep of gep, bool lane", lambda v: v.U(v.Ops.GEP, v.d.index, (vec4(v).gep((3, 2)),), (True,))),
  ("gep of vconst, lane from the end", lambda v: v.U(v.Ops.GEP, v.d.index, (v.U.const(v.d.index.vec(3), (1, 2, 3)),), (-2,))),
  ("gep of vectorize", lambda v: v.vec.gep((2, 0))), ("gep1 of vectorize", lambda v: v.U(v.Ops.GEP, v.d.index, (v.vec,), (1,))),
  ("gep of const", lambda v: v.U(v.Ops.GEP, v.d.index, (v.U.const(v.d.index, 3),), (0,))),
  ("gep of vconst", lambda v: v.U.const(v.d.index.vec(3), (1, 2, 3)).gep((2, 0))),
  ("gep of void", lambda v: v.U(v.Ops.GEP, v.d.void, (v.U(v.Ops.NOOP),), (0,))),
  ("gep in order", lambda v: vec4(v).gep((0, 1, 2, 3))),
  ("gep through alu", lambda v: vec4(v).gep((1, 3))), ("gep through cast", lambda v: vec4(v).cast(v.d.int.vec(4)).gep((2, 1))),
  ("cat", lambda v: v.U(v.Ops.CAT, v.d.index.vec(6), (vec4(v), v.x.vectorize(v.y)))),
  ("vectorize of geps", lambda v: vec4(v).gep(2).vectorize(vec4(v).gep(0), vec4(v).gep(3))),
  ("gep of wmma", lambda v: wmma(v).gep((4, 5, 6, 7))), ("gep of wmma, two blocks", lambda v: wmma(v).gep((4, 5, 6, 7, 0, 1, 2, 3))), ("gep of wmma, not whole blocks", lambda v: wmma(v).gep((4, 6))),
  # commutative
  ("const+x", lambda v: v.U.const(v.d.index, 3) + v.x), ("y+x", lambda v: v.y + v.x), ("x+y", lambda v: v.x + v.y),
  ("(x+z)*(x+y)", lambda v: (v.x + v.z) * (v.x + v.y)), ("max(r,e)", lambda v: v.r.maximum(v.e)),
  ("order by dtype", lambda v: v.U.const(v.d.float, 1.0).cast(v.d.index) + v.U.const(v.d.int, 1).cast(v.d.index)),
  ("order by dtype, kept", lambda v: v.U.const(v.d.int, 1).cast(v.d.index) + v.U.const(v.d.float, 1.0).cast(v.d.index)),
  ("order bool before int", lambda v: v.U.const(v.d.int, 1).cast(v.d.index) * v.U.const(v.d.bool, True).cast(v.d.index)),
  ("order ignores tags", lambda v: v.x.replace(tag=1) + v.x), ("order ignores deep tags", lambda v: (v.y + 1).replace(tag="t") * (v.y + 1)),
  ("order of Invalid", lambda v: v.U.invalid() + v.U.const(v.d.index, 1)),
  # symbolic: boolean algebra, combining terms
  ("b|!b", lambda v: v.b | v.b.logical_not()),
  ("x*2+x*3", lambda v: v.x * 2 + v.x * 3), ("(y+x*2)+x*3", lambda v: (v.y + v.x * 2) + v.x * 3),
  ("x+x*3", lambda v: v.x + v.x * 3), ("(y+x)+x*3", lambda v: (v.y + v.x) + v.x * 3), ("(y+x*3)+x", lambda v: (v.j + v.i * 3) + v.i),
  ("x+x", lambda v: v.x + v.x), ("(y+x)+x", lambda v: (v.j + v.i) + v.i), ("(y+x)+x index", lambda v: (v.y + v.x) + v.x),
  ("(f/g)/h", lambda v: (v.f / v.g) / v.h), ("(f/g)/g", lambda v: (v.f / v.g) / v.g),
  ("-(x+3)", lambda v: -(v.x + 3)), ("3*(x+2)", lambda v: v.U.const(v.d.index, 3) * (v.x + 2)), ("(x+2)*3", lambda v: (v.x + 2) * 3),
  # where folding
  ("!b?x:y", lambda v: v.b.logical_not().where(v.x, v.y)), ("!b?x:Invalid", lambda v: v.b.logical_not().where(v.x, v.U.invalid())),
  ("same gates alu", lambda v: v.b.where(1, v.x) * v.b.where(2, v.y)),
  ("same gates add", lambda v: (v.z + v.b.where(v.x, 1)) + v.b.where(v.y, 2)),
  ("same gates, no const pair", lambda v: v.b.where(v.x, v.z) + v.b.where(v.y, v.w)),
  # single value, max folding
  ("x//20", lambda v: v.x // 20), ("var 3..3", lambda v: v.U.variable("k", 3, 3) + v.x), ("range(1)", lambda v: v.U.range(1, 3)),
  ("max(x,x+20)", lambda v: v.x.maximum(v.x + 20)), ("max(x,-5)", lambda v: v.x.maximum(-5)),
  # two stage ALU folding
  ("(x+2)+3", lambda v: (v.x + 2) + 3), ("(x*2)*3", lambda v: (v.x * 2) * 3), ("(i&7)&3", lambda v: (v.i & 7) & 3),
  ("(i|1)|2", lambda v: (v.i | 1) | 2), ("max(max(x,2),3)", lambda v: v.x.maximum(2).maximum(3)),
  ("3+x<10", lambda v: (v.U.const(v.d.index, 3) + v.w) < 10), ("(x//2)//3", lambda v: (v.w // 2) // 3),
  # lt
  ("3*x<10", lambda v: (v.w * 3) < 10), ("-3*x<-5", lambda v: (v.w * -3) < -5), ("-1*x<-5", lambda v: (v.w * -1) < -5),
  ("x//3<2", lambda v: (v.w // 3) < 2), ("x//3<-1", lambda v: (v.w // 3) < -1),
  # consts to the end
  ("(x+3)+y", lambda v: (v.i + 3) + v.j), ("(x*3)*y", lambda v: (v.i * 3) * v.j), ("(x+3)+y index", lambda v: (v.x + 3) + v.y),
  # generic lt folding, negations, simplex
  ("lt folding", lambda v: (v.w * 4 + v.y * 8 + v.z) < 12), ("lt folding, no gcd", lambda v: (v.w * 4 + v.y * 6 + v.x) < 12),
  ("-x<-y", lambda v: (v.x * -1) < (v.y * -1)),
  ("simplex", lambda v: ((v.x * 2 + v.r * 3) < 1).ne(True)), ("not a simplex", lambda v: ((v.x * 2 + v.y) < 1).ne(True)),
  # ranges
  ("r%end", lambda v: v.U.range(v.e, 1) % v.e), ("r//end", lambda v: v.U.range(v.e, 1) // v.e),
  # cast/long folding
  ("int8->int->long", lambda v: v.i8.cast(v.d.int).cast(v.d.long)), ("fitting cast", lambda v: v.j.cast(v.d.int8).cast(v.d.long)),
  ("overflowing cast", lambda v: (v.j * 1000).cast(v.d.int8).cast(v.d.long)),
  ("long math", lambda v: v.l + v.l2), ("long compare", lambda v: v.l < v.l2), ("long math overflow", lambda v: v.l * (2**40)),
  ("(x+3).cast(int)", lambda v: (v.w + 3).cast(v.d.int)),
  # AFTER, VECTORIZE/CONST
  ("after flatten", lambda v: v.buf.after(v.U(v.Ops.NOOP, src=(v.buf.index(v.x).store(1.0), v.r)), v.r)),
  ("after alone", lambda v: v.buf.after()),
  ("vectorize consts", lambda v: v.U.const(v.d.index, 1).vectorize(v.U.const(v.d.index, 2), v.U.const(v.d.index, 1))),
]

@pytest.mark.parametrize("label,build", CASES, ids=[c[0] for c in CASES])
def test_targeted(label, build):
  t, o = build(leaves(TG)), build(leaves(TC))
  assert from_tinygrad(t) is o, label
  for name in SETS:
    # one step at the root picks the same rule, then the whole rewrite agrees
    assert_same_outcome(outcome(tc_set(name).rewrite, o), outcome(tg_set(name).rewrite, t), f"{label}: {name}.rewrite")
    check_rewrite(t, o, name)
  check_rewrite(t, o, "symbolic_simple", bottom_up=True)

def first_rule(pms, u):
  """Index of the rule of a matcher (as one-rule matchers) that rewrites u at the root first, or None."""
  for i, pm in enumerate(pms):
    try:
      if pm.rewrite(u) is not None: return i
    except Exception: return i
  return None

def test_every_rule_has_a_targeted_case():
  """Each rule of symbolic (but div_and_mod_symbolic's, tested with that set) is the first to fire on some case."""
  rules = [TgPatternMatcher([p]) for p in tg_symbolic.symbolic.patterns]
  end_of_own = len(rules) - len(tg_symbolic.gep_pushing.patterns)
  divmod = range(end_of_own - len(tg_symbolic.div_and_mod_symbolic.patterns), end_of_own)
  fired = {first_rule(rules, build(leaves(TG))) for _, build in CASES}
  missing = [(i, rules[i].patterns[0][0].location) for i in range(len(rules)) if i not in fired and i not in divmod]
  assert not missing, missing

# ---------------------------------------------------------------------------------------------------
# the tuplize order of commutative, on ties deep in the graph

def test_commutative_order_deep():
  """Two long chains that differ only at their leaves: the order is decided 2000 nodes down."""
  import sys
  def build(n):
    a, b = n.UOp.variable("a", 0, 10), n.UOp.variable("b", 0, 10)
    for k in range(1000): a, b = a * 2 + k, b * 2 + k
    return b + a, a + b
  limit = sys.getrecursionlimit()
  sys.setrecursionlimit(max(limit, 20000))   # tinygrad's tuplize recurses once per level
  try:
    for t, o in zip(build(TG), build(TC)): check_rewrite(t, o, "commutative")
  finally: sys.setrecursionlimit(limit)
