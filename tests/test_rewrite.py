"""The rewrite engine: UPat, PatternMatcher and graph_rewrite against tinygrad 0.12.0.

Rule sets here are Python, written the way tinygrad's rule files are, built once with tinyc's types and once with
tinygrad's; both rewrite the same graphs and the results must be the same graphs (identity through the bridge)."""
import gc, random
import pytest
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad
import tinygrad.uop.ops as tg_ops
from tinygrad.uop import Ops as TgOps, GroupOp as TgGroupOp
from tinygrad.dtype import dtypes as tg_dtypes

class NS:
  def __init__(self, UOp, UPat, PatternMatcher, graph_rewrite, Ops, GroupOp, dtypes, BottomUpGate):
    self.UOp, self.UPat, self.PatternMatcher, self.graph_rewrite = UOp, UPat, PatternMatcher, graph_rewrite
    self.Ops, self.GroupOp, self.dtypes, self.BottomUpGate = Ops, GroupOp, dtypes, BottomUpGate

TC = NS(tinyc.UOp, tinyc.UPat, tinyc.PatternMatcher, tinyc.graph_rewrite, tinyc.Ops, tinyc.GroupOp, tinyc.dtypes, tinyc.BottomUpGate)
TG = NS(tg_ops.UOp, tg_ops.UPat, tg_ops.PatternMatcher, tg_ops.graph_rewrite, TgOps, TgGroupOp, tg_dtypes, tg_ops.BottomUpGate)

# ---- rule sets, tinygrad style ----

def folding_rules(ns):
  UPat, Ops = ns.UPat, ns.Ops
  return ns.PatternMatcher([
    (UPat.var("x") + 0, lambda x: x),
    (UPat.var("x") * 1, lambda x: x),
    (UPat.var("x") * 0, lambda x: x.const_like(0)),
    (UPat(Ops.ADD, src=(UPat.cvar("a", vec=False), UPat.cvar("b", vec=False)), name="root"), lambda root, a, b: root.const_like(a.arg + b.arg)),
    (UPat(Ops.MUL, src=(UPat.cvar("a", vec=False), UPat.cvar("b", vec=False))), lambda a, b: a.const_like(a.arg * b.arg)),
    ((UPat.var("x") + UPat.cvar("c1")) + UPat.cvar("c2"), lambda x, c1, c2: x + (c1.arg + c2.arg)),
    (UPat.var("x") // 1, lambda x: x),
    (UPat(ns.GroupOp.Idempotent, src=(UPat.var("x"), UPat.var("x"))), lambda x: x),
    (UPat(Ops.ADD, src=(UPat.var("x"), UPat.var("x"))), lambda x: x * 2),
    ((UPat.var("x") % UPat.cvar("c")) + (UPat.var("x") // UPat.cvar("c")) * UPat.cvar("c"), lambda x, c: x),
    ((UPat.var("x") < UPat.var("x")).named("r"), lambda r, x: r.const_like(False)),
  ])

def ctx_rules(ns):
  """rules that read and write ctx, and one that matches any op of a group with a shared source"""
  UPat, Ops = ns.UPat, ns.Ops
  def count(ctx, x):
    ctx.append(x.op.value)
    return None
  return ns.PatternMatcher([
    (UPat(Ops.MAX, name="x"), count),
    (UPat(Ops.MUL, src=[UPat.var("y"), UPat.cvar("c", vec=False)], name="m"), lambda ctx, m, y, c: y * (c.arg + len(ctx)) if c.arg == 3 else None),
    (UPat((Ops.IDIV, Ops.MOD), src=(UPat.var("x"), UPat(Ops.DEFINE_VAR, name="v")), name="d"), lambda d, x, v: x.alu(d.op, v.const_like(7))),
    (UPat(Ops.ADD, src=UPat(Ops.DEFINE_VAR), name="a"), lambda a: a.src[0] * 2),
    (UPat(Ops.WHERE, src=(UPat.any(UPat(Ops.CMPLT, name="c"), UPat(Ops.CMPNE, name="c")), UPat.var("t"), UPat.var("f"))),
     lambda c, t, f: (c.src[0].maximum(c.src[1]) < 100).where(f, t) if c.src[0].op.name != "MAX" else None),
  ])

def random_expr(rng, ns, depth):
  U, dt = ns.UOp, ns.dtypes
  if depth == 0 or rng.random() < 0.2:
    r = rng.random()
    if r < 0.35: return U.variable(rng.choice("abcd"), rng.randint(-3, 0), rng.randint(1, 12))
    if r < 0.5: return U.range(rng.randint(1, 9), rng.randint(0, 3))
    return U.const(dt.index, rng.randint(-2, 4))
  a, b = random_expr(rng, ns, depth - 1), random_expr(rng, ns, depth - 1)
  op = rng.choice(["add", "add", "mul", "mul", "max", "div", "mod", "lt", "ne"])
  if op == "add": return a + b
  if op == "mul": return a * b
  if op == "max": return a.maximum(b)
  if op == "div": return a // rng.randint(1, 4)
  if op == "mod": return a % rng.randint(1, 4)
  cmp = (a < b) if op == "lt" else (a != b)
  return cmp.where(a, b)

def both(seed, depth=5):
  t, c = random_expr(random.Random(seed), TG, depth), random_expr(random.Random(seed), TC, depth)
  assert from_tinygrad(t) is c
  return t, c

@pytest.mark.parametrize("make", [folding_rules, ctx_rules])
@pytest.mark.parametrize("bottom_up", [False, True])
def test_python_rules_match_tinygrad(make, bottom_up):
  tpm, cpm = make(TG), make(TC)
  for seed in range(300):
    t, c = both(seed)
    tctx, cctx = [], []
    rt = TG.graph_rewrite(t, tpm, ctx=tctx, bottom_up=bottom_up)
    rc = TC.graph_rewrite(c, cpm, ctx=cctx, bottom_up=bottom_up)
    assert from_tinygrad(rt) is rc, (seed, rt, rc)
    assert tctx == cctx

def kernel_of(ns, expr, seed):
  """a store of a load, both indexed by expr (and a second expression), under a SINK: INDEX and STORE at the top, big
  subgraphs of index arithmetic below them"""
  U, dt = ns.UOp, ns.dtypes
  a, b = (U(ns.Ops.DEFINE_GLOBAL, dt.float.ptr(64), arg=i) for i in range(2))
  other = random_expr(random.Random(seed + 10_000), ns, 4)
  return U.sink(b.index(other).store(a.index(expr) + 1.0))

@pytest.mark.parametrize("rules", ["pm_add_loads", "symbolic_simple"])
def test_c_rules_leave_subgraphs_where_none_can_fire(rules):
  """A rewrite by C rules with no ctx does not walk a subgraph that holds none of its rule set's root ops (nothing can
  fire there): the answer stays tinygrad's, on graphs where most of the nodes are such subgraphs"""
  from tinygrad.codegen.late.devectorizer import pm_add_loads
  from tinygrad.uop.symbolic import symbolic_simple
  tpm, cpm = {"pm_add_loads": pm_add_loads, "symbolic_simple": symbolic_simple}[rules], _C.native_rules()[rules]
  for seed in range(200):
    t, c = both(seed)
    tk, ck = kernel_of(TG, t, seed), kernel_of(TC, c, seed)
    assert from_tinygrad(tk) is ck
    assert from_tinygrad(TG.graph_rewrite(tk, tpm)) is TC.graph_rewrite(ck, cpm), seed
    assert from_tinygrad(TG.graph_rewrite(tk, tpm, bottom_up=True)) is TC.graph_rewrite(ck, cpm, bottom_up=True), seed

INNER = {}   # UOp type -> the inner rewrite's (graph_rewrite, matcher); tinygrad's matchers take no closures

def fold_inside(ctx, m, x, y):
  ctx.append(len(ctx))
  rewrite, pm = INNER[type(m)]
  nx = rewrite(x, pm)
  return None if nx is x else nx * y

def nested_rules(ns):
  """a rule that rewrites each MUL's operand with a rewrite of its own (nested in the outer one), counting in ctx"""
  INNER[ns.UOp] = (ns.graph_rewrite, folding_rules(ns))
  return ns.PatternMatcher([(ns.UPat(ns.Ops.MUL, src=(ns.UPat.var("x"), ns.UPat.var("y")), name="m"), fold_inside)])

def test_nested_rewrites_outnumbering_the_rewrite_ids():
  """A node keeps which rewrite last met it in 8 bits, so the ids wrap around: an outer rewrite whose rule starts
  hundreds of nested ones (more than there are ids) still gives tinygrad's graph and calls"""
  tpm, cpm = nested_rules(TG), nested_rules(TC)
  most = 0
  for seed in range(8):
    ts, cs = zip(*(both(seed * 1000 + k, depth=6) for k in range(100)))
    t, c = TG.UOp.sink(*ts), TC.UOp.sink(*cs)
    tctx, cctx = [], []
    assert from_tinygrad(TG.graph_rewrite(t, tpm, ctx=tctx)) is TC.graph_rewrite(c, cpm, ctx=cctx), seed
    assert tctx == cctx
    most = max(most, len(cctx))
  assert most > 300, most   # more nested rewrites inside one outer rewrite than there are ids

def chain(ns, n):
  """((x*1 + 1)*1 + 2)*1 + 0 ... n levels deep over a variable"""
  x = ns.UOp.variable("x", 0, 10)
  for i in range(n): x = x * 1 + i % 3
  return x

def test_rewrites_of_alternating_sizes_as_tinygrad():
  """each rewrite starts from the stack and entry array the last one left (rewrite.c keeps one spare of each): big and
  small rewrites in turn still give tinygrad's graphs"""
  from tinygrad.uop.symbolic import symbolic_simple
  cpm = _C.native_rules()["symbolic_simple"]
  for n in (10, 20000, 3, 20000, 50):
    t, c = chain(TG, n), chain(TC, n)
    assert from_tinygrad(t) is c
    assert from_tinygrad(TG.graph_rewrite(t, symbolic_simple)) is TC.graph_rewrite(c, cpm), n

def test_pm_and_bpm_together():
  tpm, cpm = folding_rules(TG), folding_rules(TC)
  tb, cb = ctx_rules(TG), ctx_rules(TC)
  for seed in range(200):
    t, c = both(seed)
    tctx, cctx = [], []
    rt = TG.graph_rewrite(t, tpm, ctx=tctx, bpm=tb)
    rc = TC.graph_rewrite(c, cpm, ctx=cctx, bpm=cb)
    assert from_tinygrad(rt) is rc, seed
    assert tctx == cctx

def test_rewrite_single_node_and_add_order():
  for a, b in ((folding_rules, ctx_rules), (ctx_rules, folding_rules)):
    tpm, cpm = a(TG) + b(TG), a(TC) + b(TC)
    for seed in range(200):
      t, c = both(seed, 3)
      for tn, cn in zip(t.toposort(), c.toposort()):
        tr, cr = tpm.rewrite(tn, ctx=[]), cpm.rewrite(cn, ctx=[])
        assert (tr is None and cr is None) or from_tinygrad(tr) is cr

def shape_rules(ns):
  """rules a node's shape (its op, source count and sources' ops) admits or rules out before matching: the ops of the
  first sources, a strict and an open length, two root ops with a permuted source list, a rule for any length"""
  UPat, Ops = ns.UPat, ns.Ops
  return ns.PatternMatcher([
    (UPat(Ops.ADD, src=(UPat(Ops.CONST, name="c"), UPat.var("x"))), lambda c, x: x if c.arg == 0 else None),
    (UPat(Ops.ADD, src=(UPat.var("x"), UPat(Ops.DEFINE_VAR)), allow_any_len=True, name="a"), lambda a, x: x if len(a.src) == 3 else None),
    (UPat((Ops.MAX, Ops.ADD), src=[UPat(Ops.RANGE, name="x"), UPat.var("y")]), lambda x, y: x),
    (UPat(Ops.ADD, src=[UPat(Ops.MUL, name="m"), UPat.var("z")]), lambda m, z: m),
    (UPat(Ops.ADD, name="r"), lambda r: r.src[-1] if len(r.src) in (1, 3) or len(r.src) > 4 else None),
  ])

def node_of_shape(ns, ops, leaves):
  """an ADD whose sources are leaves of the given ops"""
  return ns.UOp(ns.Ops.ADD, ns.dtypes.int, tuple(leaves[o] for o in ops))

def test_rules_are_tried_per_shape_as_tinygrad():
  """each node is rewritten twice (its shape met, then known) by tinygrad's rules and tinyc's: the same answer both
  times, for nodes of 0 to 6 sources"""
  tpm, cpm = shape_rules(TG), shape_rules(TC)
  rng = random.Random(1)
  picks = ["CONST", "DEFINE_VAR", "RANGE", "MUL", "ADD", "MAX", "SPECIAL"]
  tleaves = {o: TG.UOp(getattr(TG.Ops, o), TG.dtypes.int, arg=0) for o in picks}
  cleaves = {o: TC.UOp(getattr(TC.Ops, o), TC.dtypes.int, arg=0) for o in picks}
  for seed in range(120):
    t, c = both(seed, 3)
    ops = [rng.choice(picks) for _ in range(rng.randint(0, 6))]
    pairs = list(zip(t.toposort(), c.toposort())) + [(node_of_shape(TG, ops, tleaves), node_of_shape(TC, ops, cleaves))]
    for tn, cn in pairs * 2:
      tr, cr = tpm.rewrite(tn), cpm.rewrite(cn)
      assert (tr is None and cr is None) or from_tinygrad(tr) is cr, (tn, tr, cr)

def test_a_matcher_meeting_more_shapes_than_it_keeps():
  """past the shapes a matcher keeps (2**16), a node's rules are found by scanning: 41**3 shapes of three sources,
  each answered as tinygrad answers; what the matcher keeps of a shape holds no node (every one made is freed)"""
  tpm, cpm = shape_rules(TG), shape_rules(TC)
  names = [o.name for o in TC.Ops][:41]
  tleaves = {o: TG.UOp(getattr(TG.Ops, o), TG.dtypes.int, arg=0) for o in names}
  cleaves = {o: TC.UOp(getattr(TC.Ops, o), TC.dtypes.int, arg=0) for o in names}
  live = _C._intern_count()
  fired = 0
  for a in names:
    for b in names:
      for c in names:
        tr, cr = tpm.rewrite(node_of_shape(TG, (a, b, c), tleaves)), cpm.rewrite(node_of_shape(TC, (a, b, c), cleaves))
        assert (tr is None and cr is None) or from_tinygrad(tr) is cr
        fired += cr is not None
  assert fired > 41**3 // 2
  del tr, cr
  gc.collect()
  assert _C._intern_count() == live

def same_capture_rules(ns):
  """rules whose pattern names one capture twice: at two depths (the deeper place met first), at one depth (in two
  orders), under UPat.any (bound in one alternative only) and in a repeated source (bound once per source)"""
  UPat, Ops = ns.UPat, ns.Ops
  return ns.PatternMatcher([
    ((UPat.var("y") + UPat.var("x")) + UPat.var("x"), lambda y, x: y + x * 2),
    (UPat.var("x") + UPat.var("x") * UPat.cvar("c"), lambda x, c: x * (c.arg + 1)),
    ((UPat.var("x") // UPat.cvar("c")) * UPat.cvar("c") + UPat.var("x") % UPat.cvar("c"), lambda x, c: x),
    (UPat(Ops.MAX, src=(UPat.var("x"), UPat.any(UPat.var("x") * 3, UPat.var("z")))), lambda x, **kw: x * 5),
    (UPat(Ops.MUL, src=UPat.var("x")), lambda x: x + 7),
    (UPat(Ops.MAX, src=(UPat.var("x"), UPat.var("x"))), lambda x: x),
    (UPat.var("x") * UPat.cvar("c1") + UPat.var("x") * UPat.cvar("c2"), lambda x, c1, c2: x * (c1.arg + c2.arg)),
  ])

def same_leaf_expr(rng, ns, depth):
  """an expression over two variables and two constants, so that one node often sits at two places"""
  U, dt = ns.UOp, ns.dtypes
  if depth == 0 or rng.random() < 0.15:
    return [U.variable("a", 0, 5), U.variable("b", 0, 5), U.const(dt.index, 2), U.const(dt.index, 3)][rng.randint(0, 3)]
  a = same_leaf_expr(rng, ns, depth - 1)
  b = a if rng.random() < 0.3 else same_leaf_expr(rng, ns, depth - 1)
  op = rng.choice(["add", "add", "mul", "div", "mod", "max", "split"])
  if op == "split": return (a // 2) * 2 + a % 2
  if op == "add": return a + b
  if op == "mul": return a * b
  if op == "div": return a // 2
  if op == "mod": return a % 2
  return a.maximum(b)

def test_same_capture_rules_as_tinygrad():
  """upat.c skips a rule when no node of the graph sits at both places of a name, or when no node 2 or 3 levels down has
  an op the pattern needs there ((x//c)*c: an IDIV two levels down); the rules that do match fire as in tinygrad, node
  by node and over whole rewrites"""
  tpm, cpm = same_capture_rules(TG), same_capture_rules(TC)
  changed = 0
  for seed in range(400):
    t, c = same_leaf_expr(random.Random(seed), TG, 5), same_leaf_expr(random.Random(seed), TC, 5)
    assert from_tinygrad(t) is c
    for tn, cn in zip(t.toposort(), c.toposort()):
      tr, cr = tpm.rewrite(tn), cpm.rewrite(cn)
      assert (tr is None and cr is None) or from_tinygrad(tr) is cr, (tn, tr, cr)
    rt = TG.graph_rewrite(t, tpm)
    assert from_tinygrad(rt) is TC.graph_rewrite(c, cpm), seed
    changed += rt is not t
  assert changed > 200   # the rules fire: most graphs hold one of the patterns

def test_match_enumerates_like_tinygrad():
  def pats(ns):
    UPat, Ops = ns.UPat, ns.Ops
    return [UPat(Ops.ADD, src=[UPat.var("x"), UPat.var("y")]), UPat(Ops.ADD, src=[UPat.var("x"), UPat.var("x")]),
            UPat.any(UPat(Ops.ADD, name="a"), UPat(Ops.MUL, name="a"), UPat(name="b")),
            UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("t"), UPat.var("f"))), UPat(src=UPat.var("s")),
            UPat(Ops.ADD, src=(UPat.var("x"),), allow_any_len=True), UPat(dtype=(ns.dtypes.index, ns.dtypes.bool), name="d"),
            UPat(Ops.CONST, arg=2, name="two"), UPat((Ops.ADD, Ops.MUL), src=[UPat.cvar("c"), UPat.var("v")], name="r")]
  tp, cp = pats(TG), pats(TC)
  for seed in range(100):
    t, c = both(seed, 3)
    for tn, cn in zip(t.toposort(), c.toposort()):
      for a, b in zip(tp, cp):
        tm, cm = a.match(tn, {}), b.match(cn, {})
        assert len(tm) == len(cm)
        for d1, d2 in zip(tm, cm):
          assert sorted(d1) == sorted(d2) and all(from_tinygrad(d1[k]) is d2[k] for k in d1)

def test_early_reject_like_tinygrad():
  def pat(ns):
    UPat, Ops = ns.UPat, ns.Ops
    return UPat(Ops.ADD, src=(UPat(Ops.MUL), UPat(Ops.CONST), UPat()), allow_any_len=True)
  assert {o.value for o in pat(TG).early_reject} == {o.value for o in pat(TC).early_reject}

def stop_tg(x): raise tg_ops.BottomUpGate()
def stop_tc(x): raise tinyc.BottomUpGate()

def test_bottom_up_gate():
  def gated(ns):   # (tinygrad's matchers take no closures: the raising functions are module level)
    return ns.PatternMatcher([(ns.UPat(ns.Ops.MAX, name="x"), stop_tg if ns is TG else stop_tc), (ns.UPat.var("x") * 1, lambda x: x)])
  for seed in range(100):
    t, c = both(seed)
    assert from_tinygrad(TG.graph_rewrite(t, gated(TG), bottom_up=True)) is TC.graph_rewrite(c, gated(TC), bottom_up=True)

# ---- errors ----

def test_rule_loop_raises():
  a, b = tinyc.UOp.variable("a", 0, 5), tinyc.UOp.variable("b", 0, 5)
  flip = tinyc.PatternMatcher([(tinyc.UPat(tinyc.Ops.ADD, name="x"), lambda x: x.src[1] + x.src[0])])
  with pytest.raises(RuntimeError):
    tinyc.graph_rewrite(a + b, flip)
  with pytest.raises(RuntimeError, match="fixed_point"):
    tinyc.graph_rewrite(a + b, flip, bottom_up=True)

def test_growing_rewrite_raises_not_hangs():
  grow = tinyc.PatternMatcher([(tinyc.UPat(tinyc.Ops.DEFINE_VAR, name="x"), lambda x: tinyc.UOp.variable("v", 0, x.arg[2] + 1))])
  with pytest.raises(RuntimeError):
    tinyc.graph_rewrite(tinyc.UOp.variable("v", 0, 1), grow)

def test_exception_in_rule_has_location():
  def boom(x): raise KeyError("boom")
  pm = tinyc.PatternMatcher([(tinyc.UPat(tinyc.Ops.ADD, name="x"), boom)])
  with pytest.raises(KeyError) as e:
    tinyc.graph_rewrite(tinyc.UOp.variable("a", 0, 5) + 1, pm)
  assert any("test_rewrite.py" in n for n in getattr(e.value, "__notes__", []))

def test_non_uop_result_is_type_error():
  pm = tinyc.PatternMatcher([(tinyc.UPat(tinyc.Ops.ADD, name="x"), lambda x: "not a uop")])
  with pytest.raises(TypeError, match="not a UOp"):
    tinyc.graph_rewrite(tinyc.UOp.variable("a", 0, 5) + 1, pm)
  assert pm.rewrite(tinyc.UOp.variable("a", 0, 5) + 1) == "not a uop"   # pm.rewrite itself passes anything on

@pytest.mark.parametrize("bad", [lambda: tinyc.PatternMatcher([1]), lambda: tinyc.PatternMatcher([(tinyc.UPat(), lambda: None)]),
                                 lambda: tinyc.UPat(op=3), lambda: tinyc.UPat(dtype="float"), lambda: tinyc.UPat(src=5),
                                 lambda: tinyc.UPat(name="ctx"), lambda: tinyc.graph_rewrite(1, tinyc.PatternMatcher([])),
                                 lambda: tinyc.graph_rewrite(tinyc.UOp.variable("a", 0, 1), None)])
def test_bad_input_raises(bad):
  with pytest.raises((TypeError, ValueError)):
    bad()

# ---- scale ----

def test_deep_chain_rewrites_without_recursion_limit():
  x = tinyc.UOp.variable("deep", 0, 1)
  for i in range(100_000): x = (x + 0) if i % 2 else (x * 1 + 1)
  out = tinyc.graph_rewrite(x, folding_rules(TC))
  assert out.op is tinyc.Ops.ADD and len(out.toposort()) < len(x.toposort())

def test_repeated_rewrites_leave_memory_flat():
  pm = folding_rules(TC)
  exprs = [both(seed)[1] for seed in range(50)]
  def round_():
    for c in exprs: tinyc.graph_rewrite(c, pm, bottom_up=False)
  round_(); gc.collect()
  base = _C._intern_count()
  for _ in range(5): round_()
  gc.collect()
  assert _C._intern_count() == base

# ---- substitute ----

def substitution_map(rng, t):
  """a tinygrad substitution map for graph t with no loop, or None: keys from t, each mapped to a later key (a chain) or
  to a fresh expression (sharing t's leaves, holding no key); and, for a node whose source is replaced, its rebuilt
  form mapped on"""
  nodes = list(t.toposort())
  keys = rng.sample(nodes, rng.randint(1, min(6, len(nodes))))
  fresh = lambda: random_expr(rng, TG, rng.randint(0, 3))
  tmap = {}
  for i, k in enumerate(keys):
    later = keys[i + 1:]
    tmap[k] = rng.choice(later) if later and rng.random() < 0.4 else fresh()
  def end(u, seen=()):
    while u in tmap and u not in seen: u, seen = tmap[u], seen + (u,)
    return u
  if any(end(k) in tmap for k in tmap): return None   # a fresh expression that is a key closed a chain into a loop
  parents = [p for p in nodes if p.src and p.src[0] in tmap and p not in tmap]
  if parents and rng.random() < 0.5:   # a rebuilt node that is a key itself
    p = rng.choice(parents)
    tmap[p.replace(src=(end(p.src[0]),) + p.src[1:])] = fresh()
  if any(k in v.toposort() for v in tmap.values() if v not in tmap for k in tmap): return None   # it might loop
  return tmap

def test_substitute_answers_as_tinygrad():
  """substitute (a walk in C) answers tinygrad's bottom-up _substitute rewrite: fresh values, chains of keys, rebuilt
  nodes that are keys; nothing it made outlives the answer"""
  rng, done = random.Random(7), 0
  live = _C._intern_count()
  for seed in range(400):
    t, c = both(seed, 4)
    tmap = substitution_map(rng, t)
    if tmap is None: continue
    cmap = {from_tinygrad(k): from_tinygrad(v) for k, v in tmap.items()}
    assert from_tinygrad(t.substitute(tmap)) is c.substitute(cmap), (seed, tmap)
    done += 1
  assert done > 150
  del t, c, tmap, cmap
  gc.collect()
  assert _C._intern_count() == live

def test_substitute_walk_is_the_engines_rewrite():
  """substitute's direct walk (it never visits a subgraph holding none of the keys' ops, and answers a rebuilt node the
  map leaves without walking it again) gives what the engine's bottom-up _substitute rewrite gives (substitute with an
  empty extra_pm), also when a key is not a UOp (then it cannot skip by op)"""
  rng, no_rules, done = random.Random(9), TC.PatternMatcher([]), 0
  for seed in range(300):
    t, c = both(seed, 4)
    if (tmap := substitution_map(rng, t)) is None: continue
    cmap = {from_tinygrad(k): from_tinygrad(v) for k, v in tmap.items()}
    assert c.substitute(cmap) is c.substitute(cmap, extra_pm=no_rules), seed
    assert c.substitute({**cmap, "not a node": c}) is c.substitute(cmap), seed
    done += 1
  assert done > 100

def test_substitute_with_extra_rules_as_tinygrad():
  """with extra_pm, substitute is the bottom-up rewrite by extra_pm + _substitute, as tinygrad's"""
  extra = lambda ns: ns.PatternMatcher([(ns.UPat(ns.Ops.MAX, name="m"), lambda m: m.src[0]), (ns.UPat.var("x") * 1, lambda x: x)])
  tpm, cpm, rng, done = extra(TG), extra(TC), random.Random(8), 0
  for seed in range(200):
    t, c = both(seed, 4)
    if (tmap := substitution_map(rng, t)) is None: continue
    cmap = {from_tinygrad(k): from_tinygrad(v) for k, v in tmap.items()}
    assert from_tinygrad(t.substitute(tmap, extra_pm=tpm)) is c.substitute(cmap, extra_pm=cpm), seed
    done += 1
  assert done > 75
  with pytest.raises(TypeError, match="extra_pm"): c.substitute(cmap, extra_pm=3)

def test_substitute_loops_and_bad_values_raise():
  x, y = TC.UOp.variable("x", 0, 9), TC.UOp.variable("y", 0, 9)
  with pytest.raises(RuntimeError, match="infinite loop in fixed_point_rewrite"): (x + y).substitute({x: y, y: x})
  with pytest.raises(RuntimeError, match="infinite loop in fixed_point_rewrite"):   # as tinygrad
    tx, ty = TG.UOp.variable("x", 0, 9), TG.UOp.variable("y", 0, 9)
    (tx + ty).substitute({tx: ty, ty: tx})
  with pytest.raises(RuntimeError, match="loop"): (x + 1).substitute({x: x * 2})   # tinygrad never returns here
  with pytest.raises(TypeError, match="must be UOps"): (x + 1).substitute({x: 3})
  assert (x + 1).substitute({y: x}) is x + 1
