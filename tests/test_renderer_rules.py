"""The rule sets at the end of tinygrad/uop/ops.py, native in tinyc, against tinygrad 0.12.0:
renderer / renderer_infer (UOp.render), pm_lower_index_dtype (+ _index_to_concrete_int), _remove_all_tags, pm_unbind
(+ UOp.unbind_all).

Every graph is built twice by the same function with the same seed, once per namespace; results are compared as
values (strings) or as graphs (identity through the bridge)."""
import random
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad
import tinygrad.uop.ops as tg_ops
from uop_oracle import TC, TG, outcome, assert_same_outcome

RULES = _C.native_rules()

def tg_rules(name): return getattr(tg_ops, name)

# ---- random index / bool expressions, built the same way in both namespaces ----

NAMES = ["a", "b", "n_1"]
SPECIALS = ["gidx0", "lidx1"]

def range_node(rng, ns):
  """a RANGE with one to three axis ids (negative ones too) and an AxisType"""
  U, dt = ns.UOp, ns.dtypes
  ids = tuple(rng.choice([0, 1, 2, 5, 12, -1, -3]) for _ in range(rng.choice([1, 1, 1, 2, 3])))
  axis = rng.choice([ns.AxisType.LOOP, ns.AxisType.REDUCE, ns.AxisType.GLOBAL, ns.AxisType.UPCAST])
  return U(ns.Ops.RANGE, dt.index, (U.const(dt.index, rng.randint(1, 16)),), ids + (axis,))

def index_leaf(rng, ns):
  U, dt = ns.UOp, ns.dtypes
  r = rng.random()
  if r < 0.25: return U.variable(rng.choice(NAMES), rng.randint(-4, 0), rng.randint(1, 16))
  if r < 0.4: return range_node(rng, ns)
  if r < 0.5: return U.special(rng.randint(1, 64), rng.choice(SPECIALS))
  if r < 0.6: return U.variable("bound", 0, 20).bind(rng.randint(0, 20))
  if r < 0.65: return U.const(dt.index, rng.choice([2**31, -2**31 - 1, 2**40]))
  return U.const(dt.index, rng.randint(-20, 20))

def bool_expr(rng, ns, depth, tame=False):
  if depth <= 0 or rng.random() < 0.15:
    return ns.UOp.const(ns.dtypes.bool, rng.random() < 0.5) if rng.random() < 0.2 else index_expr(rng, ns, 0, tame) < rng.randint(-3, 9)
  r = rng.random()
  a = index_expr(rng, ns, depth - 1, tame)
  if r < 0.3: return a < index_expr(rng, ns, depth - 1, tame)
  if r < 0.5: return a.ne(rng.randint(-2, 5))
  if r < 0.65: return bool_expr(rng, ns, depth - 1, tame) & bool_expr(rng, ns, depth - 1, tame)
  if r < 0.8: return bool_expr(rng, ns, depth - 1, tame) | bool_expr(rng, ns, depth - 1, tame)
  if r < 0.9: return bool_expr(rng, ns, depth - 1, tame).logical_not()
  return bool_expr(rng, ns, depth - 1, tame) ^ bool_expr(rng, ns, depth - 1, tame)

INDEX_OPS = ["add", "add", "sub", "mul", "mul", "div", "mod", "max", "where", "neg", "shl", "shr", "and", "rconst"]

def index_expr(rng, ns, depth, tame=False):
  """tame: divisors are positive constants (tinygrad's symbolic does not always finish on symbolic divisors)"""
  if depth <= 0 or rng.random() < 0.2: return index_leaf(rng, ns)
  a, b = index_expr(rng, ns, depth - 1, tame), index_expr(rng, ns, depth - 1, tame)
  op = rng.choice(INDEX_OPS)
  if op == "add": return a + b
  if op == "sub": return a - b
  if op == "mul": return a * (b if rng.random() < 0.5 else rng.randint(-4, 8))
  if op == "div": return a // (b if rng.random() < 0.3 and not tame else rng.randint(1, 9))
  if op == "mod": return a % (b if rng.random() < 0.3 and not tame else rng.randint(1, 9))
  if op == "max": return a.maximum(b)
  if op == "where": return bool_expr(rng, ns, depth - 1, tame).where(a, b)
  if op == "neg": return -a
  if op == "shl": return a << rng.randint(0, 3)
  if op == "shr": return a >> rng.randint(0, 3)
  if op == "and": return a & rng.randint(1, 15)
  return rng.randint(-5, 5) + a   # a constant on the left

def render_expr(rng, ns, depth, tame=False):
  """anything the renderer has a rule for: index and bool expressions, casts, vectors, loads, floats"""
  U, Ops, dt = ns.UOp, ns.Ops, ns.dtypes
  r = rng.random()
  x = index_expr(rng, ns, depth, tame)
  if r < 0.45: return x
  if r < 0.6: return bool_expr(rng, ns, depth, tame)
  if r < 0.65: return x.cast(rng.choice([dt.int, dt.long, dt.uint, dt.int.vec(2)]))
  if r < 0.7: return x.cast(dt.float) * rng.choice([0.5, -1.25, 3.0]) + 1
  if r < 0.74: return x.cast(dt.float).reciprocal()
  if r < 0.77: return U(Ops.MULACC, dt.index, (x, index_expr(rng, ns, depth - 1, tame), index_leaf(rng, ns)))
  if r < 0.8: return x.alu(Ops.NEG)
  if r < 0.83: return x.vectorize(*[x] * rng.randint(0, 3))
  if r < 0.88: return x.vectorize(*[index_expr(rng, ns, depth - 1, tame) for _ in range(rng.randint(1, 3))])
  if r < 0.92: return U(Ops.DEFINE_GLOBAL, dt.float.ptr(64), arg=0).index(*[index_expr(rng, ns, depth - 1, tame) for _ in range(rng.randint(1, 3))])
  if r < 0.94: return U(Ops.UNROLL, dt.index, (x,), ((0, 4),))
  if r < 0.96: return x.alu(rng.choice([Ops.CMPEQ, Ops.XOR, Ops.OR]), index_leaf(rng, ns))
  if r < 0.98: return x.cast(dt.float).bitcast(dt.uint)
  return U.vectorize(x, index_leaf(rng, ns)).gep(1)

def build(fn, seed, *args):
  """the same random graph in both namespaces, checked equal through the bridge"""
  t, c = fn(random.Random(seed), TG, *args), fn(random.Random(seed), TC, *args)
  assert from_tinygrad(t) is c, seed
  return t, c

# ---- renderer / renderer_infer ----

def check_render(n, tame=False, **kw):
  """render(**kw) of n random graphs; kw's pm names a rule set"""
  pm = kw.pop("pm", None)
  tkw, ckw = dict(kw, pm=tg_rules(pm)) if pm else kw, dict(kw, pm=RULES[pm]) if pm else kw
  rendered = 0
  for seed in range(n):
    t, c = build(render_expr, seed, random.Random(seed).randint(1, 5), tame)
    to, co = outcome(lambda: t.render(**tkw)), outcome(lambda: c.render(**ckw))
    assert_same_outcome(co, to, f"seed {seed}: {t.render(simplify=False) if to[0] == 'ok' else ''}")
    rendered += to[0] == "ok"
  return rendered

def test_render_without_simplify():
  assert check_render(1500, simplify=False) >= 1000

def test_render_infer_without_simplify():
  assert check_render(1200, simplify=False, pm="renderer_infer") >= 1000

def test_render_simplified():
  assert "symbolic" in RULES, "render() simplifies with the native symbolic rule set"
  assert check_render(1200, tame=True) >= 1000

def test_render_simplified_infer():
  assert check_render(300, tame=True, pm="renderer_infer") >= 250

def test_renderer_rule_by_rule():
  """pm.rewrite of each node with a partial ctx, as UOp.render drives it"""
  for seed in range(200):
    t, c = build(render_expr, seed, 3)
    tctx, cctx = {}, {}
    for tn, cn in zip(t.toposort(), c.toposort()):
      to, co = outcome(tg_ops.renderer.rewrite, tn, tctx), outcome(RULES["renderer"].rewrite, cn, cctx)
      assert_same_outcome(co, to, f"seed {seed}")
      if to[0] == "err": break
      tctx[tn], cctx[cn] = to[1], co[1]

def test_renderer_sets_are_ordered_like_tinygrad():
  for name in ("renderer", "renderer_infer"):
    assert [op_names(p.op) for p, _ in RULES[name].patterns] == [op_names(p.op) for p, _ in tg_rules(name).patterns]

def op_names(ops): return None if ops is None else sorted(o.name for o in ops)

# ---- pm_lower_index_dtype ----

def lowering_graph(rng, ns, depth):
  """a kernel-like sink: index expressions used as INDEX addresses (some gated by a where with Invalid), a
  vector of indices, and index values as sink sources"""
  U, Ops, dt = ns.UOp, ns.Ops, ns.dtypes
  buf = U(Ops.DEFINE_GLOBAL, dt.float.ptr(1 << 12), arg=0)
  srcs = []
  for _ in range(rng.randint(1, 3)):
    r, idx = rng.random(), index_expr(rng, ns, depth)
    if r < 0.3: srcs.append(buf.index(idx, ptr=True).load())
    elif r < 0.55: srcs.append(buf.index(bool_expr(rng, ns, depth - 1).where(idx, U.invalid()), ptr=True).load())
    elif r < 0.7: srcs.append(idx.vectorize(*[index_expr(rng, ns, depth - 1) for _ in range(rng.randint(1, 3))]))
    elif r < 0.8: srcs.append(bool_expr(rng, ns, depth))
    else: srcs.append(idx)
  return U.sink(*srcs) if rng.random() < 0.8 else U(Ops.NOOP, dt.void, tuple(srcs))

def check_rewrite(name, pairs, ctx=None):
  for i, (t, c) in enumerate(pairs):
    tctx, cctx = ctx() if ctx else None, ctx() if ctx else None
    to = outcome(tg_ops.graph_rewrite, t, tg_rules(name), tctx)
    co = outcome(tinyc.graph_rewrite, c, RULES[name], cctx)
    assert_same_outcome(co, to, f"{name} graph {i}")
    if ctx: assert_same_outcome(("ok", cctx), ("ok", tctx), f"{name} graph {i} ctx")

def test_lower_index_dtype_random_graphs():
  check_rewrite("pm_lower_index_dtype", (build(lowering_graph, seed, random.Random(seed).randint(1, 4)) for seed in range(500)))

def test_index_to_concrete_int():
  for seed in range(300):
    t, c = build(index_expr, seed, 3)
    assert_same_outcome(outcome(_C._index_to_concrete_int, c), outcome(tg_ops._index_to_concrete_int, t), f"seed {seed}")

_kernels: list = []
def real_kernels():
  """the graphs tinygrad's codegen hands to pm_lower_index_dtype, for a few real kernels"""
  if _kernels: return _kernels
  import tinygrad.codegen as cg
  from tinygrad import Tensor
  from tinygrad.renderer.cstyle import ClangRenderer
  orig = cg.graph_rewrite
  def spy(sink, pm, *args, name=None, **kw):
    if name == "lower all index dtypes": _kernels.append(sink)
    return orig(sink, pm, *args, name=name, **kw)
  cg.graph_rewrite = spy
  try:
    a, b, n = Tensor.empty(4, 6), Tensor.empty(6, 5), tg_ops.UOp.variable("n", 1, 10).bind(3)
    for out in (a @ b, a.sum(1), (a.permute(1, 0) + 1).pad(((1, 2), (0, 1))), a.reshape(24)[3:17:2].exp(),
                Tensor.empty(n, 4).sum(0), a.max(0) - a.mean(), Tensor.empty(1, 3, 8, 8).conv2d(Tensor.empty(2, 3, 3, 3), padding=1)):
      for si in out.schedule_with_vars()[0]:
        if si.ast.op is tg_ops.Ops.SINK: cg.full_rewrite_to_sink(si.ast, ClangRenderer())
  finally: cg.graph_rewrite = orig
  return _kernels

def test_lower_index_dtype_real_kernels():
  assert len(real_kernels()) >= 7
  check_rewrite("pm_lower_index_dtype", ((t, from_tinygrad(t)) for t in real_kernels()))

def test_render_real_kernel_indices():
  count = 0
  for k in real_kernels():
    for t in k.toposort():
      if t.op is tg_ops.Ops.INDEX:
        c = from_tinygrad(t)
        assert c.render(simplify=False) == t.render(simplify=False)
        assert c.render(simplify=False, pm=RULES["renderer_infer"]) == t.render(simplify=False, pm=tg_ops.renderer_infer)
        count += 1
  assert count >= 20

# ---- _remove_all_tags ----

def tagged_graph(rng, ns, depth):
  """an index expression with tags on some nodes"""
  def tag_some(u):
    return ns.UOp.sink(*[s.replace(tag=rng.choice([1, (2,), "t", True])) if rng.random() < 0.4 else s for s in u.src])
  x = index_expr(rng, ns, depth)
  return tag_some(ns.UOp.sink(x, *x.src, *(s for y in x.src for s in y.src))).replace(tag=rng.choice([None, 7]))

def test_remove_all_tags():
  check_rewrite("_remove_all_tags", (build(tagged_graph, seed, 3) for seed in range(200)))
  check_rewrite("_remove_all_tags", ((t, from_tinygrad(t)) for t in real_kernels()))

# ---- pm_unbind / unbind_all ----

def bound_graph(rng, ns, depth):
  """an index expression with several bound variables (a variable bound twice to different values too)"""
  U = ns.UOp
  x = index_expr(rng, ns, depth)
  for name in rng.sample(["i", "j", "k"], rng.randint(1, 3)):
    x = x + U.variable(name, 0, 9).bind(rng.randint(0, 9)) * rng.randint(1, 4)
  return x

def test_pm_unbind():
  check_rewrite("pm_unbind", (build(bound_graph, seed, 3) for seed in range(300)), ctx=dict)

def test_unbind_all():
  for seed in range(300):
    t, c = build(bound_graph, seed, 3)
    assert_same_outcome(outcome(c.unbind_all), outcome(t.unbind_all), f"seed {seed}")
