"""tinyc's UOp graphs against tinygrad 0.12.0's, differentially: kernel ASTs of real tinygrad programs converted
through the bridge, random expression graphs built by the same calls in both libraries, and key stability."""
import functools, os, random, subprocess, sys
import pytest
import tinygrad
from tinygrad import Tensor, Device, dtypes as tg_dtypes, Variable
from tinygrad.uop.ops import UOp as TgUOp, KernelInfo as TgKernelInfo, AxisType as TgAxisType
from tinygrad.uop import Ops as TgOps
from tinygrad.codegen import full_rewrite_to_sink, do_linearize, do_render
from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps
import tinyc
from tinyc.tinygrad import from_tinygrad, to_tinygrad
from uop_oracle import TC, TG, check_graph, assert_same, assert_same_outcome, outcome
from tinyc.tinygrad import _to_tg_arg as to_tinygrad_arg

# ---------------------------------------------------------------------------------------------------
# (a) kernel ASTs from real tinygrad programs

E = functools.partial(Tensor.empty, device="CPU")   # CPU whatever Device.DEFAULT is
def _symbolic(): return (E(10, 4)[:Variable("i", 1, 10).bind(3)] * 2).sum(1).contiguous()

PROGRAMS = {
  "matmul": lambda: E(4, 8) @ E(8, 3),
  "batched_matmul": lambda: E(2, 4, 8) @ E(2, 8, 3),
  "conv2d": lambda: E(1, 3, 8, 8).conv2d(E(4, 3, 3, 3), padding=1),
  "softmax": lambda: E(4, 16).softmax(-1),
  "sum": lambda: E(4, 16).sum(axis=1),
  "max": lambda: E(4, 16).max(),
  "argmax": lambda: E(4, 16).argmax(axis=1),
  "cumsum": lambda: E(4, 16).cumsum(axis=1),
  "layernorm": lambda: E(4, 16).layernorm(),
  "elementwise": lambda: (E(16).exp() + E(16).log() * E(16).sin() - E(16).sqrt()) / 3,
  "cast_half": lambda: E(16).cast(tg_dtypes.half) + 1,
  "cast_int8": lambda: E(16).cast(tg_dtypes.int8) * 3,
  "movement": lambda: E(4, 6).pad(((1, 1), (0, 2))).shrink(((1, 5), (2, 8))).flip(0).permute(1, 0) + 1,
  "symbolic": _symbolic,
  "rand": lambda: Tensor.rand(4, 4, device="CPU"),
  "int_ops": lambda: (E(16, dtype=tg_dtypes.int) // 3 % 5) & 7 ^ 2,
  "where_relu": lambda: (E(16) > 0).where(E(16), 0).relu(),
  "bool_ops": lambda: (E(16, dtype=tg_dtypes.int) == 3) | (E(16, dtype=tg_dtypes.int) < 2),
}

_ast_cache: dict = {}
def program_asts(name):
  """The kernel ASTs of one program: as scheduled, and after codegen (full sink, then PROGRAM with LINEAR and SOURCE)."""
  if name not in _ast_cache:
    sched, _ = PROGRAMS[name]().schedule_with_vars()
    asts = [si.ast for si in sched]
    ren, lowered = Device["CPU"].renderer, []
    for ast in asts:
      if ast.op is not TgOps.SINK: continue
      full = full_rewrite_to_sink(ast.replace(arg=TgKernelInfo()) if ast.arg is None else ast, ren)
      prg = do_linearize(TgUOp(TgOps.PROGRAM, src=(full, TgUOp(TgOps.DEVICE, arg=ren.device))), full)
      lowered += [full, do_render(ren, prg, prg.src[2])]
    _ast_cache[name] = (asts, lowered)
  return _ast_cache[name]

@pytest.mark.parametrize("name", list(PROGRAMS))
def test_scheduled_ast(name):
  asts, _ = program_asts(name)
  assert len(asts) >= 1
  for ast in asts: check_graph(from_tinygrad(ast), ast)

@pytest.mark.parametrize("name", list(PROGRAMS))
def test_shapes_of_scheduled_ast(name):
  # _shape on every node of a real kernel AST, as tinygrad computes it
  for ast in program_asts(name)[0]:
    for t in ast.toposort():
      c = from_tinygrad(t)
      assert c._shape == t._shape, (t.op, t._shape, c._shape)
      if t._shape is not None: assert c.shape == t.shape

@pytest.mark.parametrize("name", list(PROGRAMS))
def test_lowered_ast(name):
  _, lowered = program_asts(name)
  assert len(lowered) >= 2
  for ast in lowered: check_graph(from_tinygrad(ast), ast)

KERNEL_INFOS = [
  lambda: TgKernelInfo(name="k", axis_types=(TgAxisType.LOOP,), applied_opts=(TgOpt(TgOptOps.UPCAST, 0, 4),)),
  lambda: TgKernelInfo(name="r_4_3", axis_types=(TgAxisType.GLOBAL, TgAxisType.REDUCE), dont_use_locals=True,
                       opts_to_apply=(TgOpt(TgOptOps.LOCAL, 0, 2), TgOpt(TgOptOps.TC, 0, (-1, 0, 1)))),
  lambda: TgKernelInfo(),
]

@pytest.mark.parametrize("ki", range(len(KERNEL_INFOS)))
def test_ast_with_kernel_info(ki):
  for name in ("matmul", "softmax", "symbolic"):
    for ast in program_asts(name)[0]:
      tagged = ast.replace(arg=KERNEL_INFOS[ki]())
      ours = from_tinygrad(tagged)
      check_graph(ours, tagged)
      assert type(ours.arg) is tinyc.KernelInfo and repr(ours.arg) == repr(tagged.arg)
      assert ours.replace(arg=None) is from_tinygrad(ast)

def test_ast_methods_on_real_kernels():
  """The walks and helpers give the same answers on real ASTs."""
  for name in ("conv2d", "symbolic", "argmax"):
    for ast in program_asts(name)[0] + program_asts(name)[1][:1]:
      ours = from_tinygrad(ast)
      assert_same(list(ours.backward_slice), [from_tinygrad(u) for u in ast.backward_slice])
      assert_same(list(ours.backward_slice_with_self), [from_tinygrad(u) for u in ast.backward_slice_with_self])
      assert_same(ours.vars(), {from_tinygrad(u) for u in ast.vars()})
      assert_same(ours.variables(), [from_tinygrad(u) for u in ast.variables()])
      cm, tcm = ours.get_consumer_map(), ast.get_consumer_map()
      assert list(cm) == [from_tinygrad(u) for u in tcm]
      assert all(list(cm[from_tinygrad(k)]) == [from_tinygrad(u) for u in v] for k, v in tcm.items())
      for op in (TgOps.RANGE, TgOps.REDUCE, TgOps.WHERE, TgOps.DEFINE_VAR):
        assert ours.op_in_backward_slice_with_self(tinyc.Ops(op.value)) == ast.op_in_backward_slice_with_self(op)
      gate = lambda u: u.op.name != "INDEX"
      assert [from_tinygrad(u) for u in ast.toposort(gate)] == list(ours.toposort(gate))

# ---------------------------------------------------------------------------------------------------
# (b) random graphs: the same random calls build a tinyc graph and a tinygrad graph

INT_DTYPES = ("index", "int", "long")

def gen_graph(n, seed, steps=30):
  """A random expression graph (a SINK of everything built) from namespace n = (UOp, dtypes, Ops, AxisType).
  Every choice comes from rng and from pool sizes, never from the graph, so both namespaces make the same calls."""
  rng = random.Random(seed)
  U, d = n.UOp, n.dtypes
  ints = {k: [] for k in INT_DTYPES}   # int-valued expressions per dtype
  pos = {k: [] for k in INT_DTYPES}    # ... known positive by construction (divisors)
  bools, floats, vecs, other = [], [], [], []
  axis_types = [n.AxisType.LOOP, n.AxisType.REDUCE, n.AxisType.GLOBAL, n.AxisType.UPCAST]
  for k in INT_DTYPES:
    dt = getattr(d, k)
    for i in range(rng.randint(1, 2)):
      lo = rng.randint(-20, 10)
      hi = lo + rng.randint(0, 30)
      v = U.variable(f"{k}_v{i}", lo, hi, dt)
      ints[k].append(v)
      if rng.random() < 0.3: ints[k].append(v.bind(rng.randint(lo, hi)))
    p = U.variable(f"{k}_p", rng.randint(1, 4), rng.randint(5, 40), dt)
    r = U.range(rng.randint(1, 16), rng.randint(0, 4), rng.choice(axis_types), dtype=dt)
    ints[k] += [p, r, U.const(dt, rng.randint(-50, 50))]
    pos[k] += [p, r + 1, U.const(dt, rng.randint(1, 9))]
  ints["index"].append(U.special(rng.randint(1, 64), f"gidx{rng.randint(0, 2)}"))
  bools.append(U.variable("b", False, True, d.bool))
  floats.append(U.variable("f", -2.5, 4.0, d.float))
  pick = rng.choice

  def int_operand(k):
    r = rng.random()
    if r < 0.25: return rng.randint(-12, 12)
    if r < 0.3: return rng.choice([True, False])
    return pick(ints[k])

  for _ in range(steps):
    kind = rng.random()
    k = pick(INT_DTYPES)
    a = pick(ints[k])
    if kind < 0.30:
      op, b = rng.randrange(7), int_operand(k)
      swap = rng.random() < 0.3
      x, y = (b, a) if swap and not isinstance(b, n.UOp) else (a, b)
      if op == 0: out = x + y
      elif op == 1: out = x - y
      elif op == 2: out = x * y
      elif op == 3: out = a.maximum(b)
      elif op == 4: out = a.minimum(b)
      elif op == 5: out = -a
      else: out = a.sum(pick(ints[k]), b) if rng.random() < 0.5 else a.prod(b)
      ints[k].append(out)
    elif kind < 0.45:
      r = rng.random()
      div = pick(pos[k]) if r < 0.5 else rng.choice([1, 2, 3, 4, 7, 16, -3]) if r < 0.8 else -pick(pos[k])
      out = (a // div) if rng.random() < 0.5 else (a % div)
      if rng.random() < 0.2: out = a % pick(ints[k])     # a modulus whose range may hold 0 (no IDIV assert here)
      ints[k].append(out)
    elif kind < 0.52:
      s = rng.randint(0, 4)
      ints[k].append(a << s if rng.random() < 0.5 else a >> s)
      if rng.random() < 0.3: ints[k].append(a >> U.const(a.dtype, s))
    elif kind < 0.62:
      b = int_operand(k)
      op = rng.randrange(6)
      if op == 0: out = a < b
      elif op == 1: out = a > b
      elif op == 2: out = a <= b
      elif op == 3: out = a >= b
      elif op == 4: out = a != b
      else: out = a.eq(b)
      bools.append(out)
    elif kind < 0.72:
      x, y = pick(bools), pick(bools) if rng.random() < 0.7 else rng.choice([True, False])
      op = rng.randrange(5)
      bools.append(x & y if op == 0 else x | y if op == 1 else x ^ y if op == 2 else x.logical_not() if op == 3 else -x)
    elif kind < 0.78:
      b = int_operand(k)
      op = rng.randrange(3)
      ints[k].append(a & b if op == 0 else a | b if op == 1 else a ^ b)
      if rng.random() < 0.5: ints[k].append(a & rng.randint(0, 15))
    elif kind < 0.86:
      c = pick(bools)
      r = rng.random()
      ints[k].append(c.where(a, pick(ints[k])) if r < 0.6 else c.where(a, rng.randint(-5, 5)) if r < 0.8 else c.where(rng.randint(-5, 5), a))
    elif kind < 0.93:
      r = rng.random()
      if r < 0.4: ints[(k2 := pick(INT_DTYPES))].append(a.cast(getattr(d, k2)))
      elif r < 0.55: bools.append(a.cast(d.bool))
      elif r < 0.65: ints[k].append(pick(bools).cast(a.dtype))
      elif r < 0.8: other.append(a.cast(rng.choice([d.int8, d.uint8, d.uint32, d.int16, d.half])))
      else:
        f = a.cast(d.float) * rng.choice([1.5, -2, 0.25]) + pick(floats)
        floats.append(f)
        if rng.random() < 0.5: bools.append(f < rng.choice([0.0, 1, 2.5]))
        if rng.random() < 0.5: other.append(f.cast(d.int))
    else:
      cnt = rng.choice([2, 3])
      v = a.vectorize(*[pick(ints[k]) for _ in range(cnt - 1)])
      r = rng.random()
      if r < 0.25: w = v + v.const_like(tuple(rng.randint(-3, 3) for _ in range(cnt)))
      elif r < 0.5: w = v * U.const(v.dtype, rng.randint(-3, 3))
      elif r < 0.75: w = v.maximum(a.broadcast(cnt))
      else: w = (v < a.broadcast(cnt)).where(v, a.broadcast(cnt))
      vecs += [v, w, w.gep(rng.randrange(cnt)), w.gep(tuple(rng.randrange(cnt) for _ in range(2)))]
      ints[k] += [v.gep(rng.randrange(cnt)), w.gep(rng.randrange(cnt))]
      if rng.random() < 0.3: bools.append(v.ne(w).gep(0))
  return U.sink(*[x for pool in list(ints.values()) + [bools, floats, vecs, other] for x in pool])

SEEDS = range(8)
GRAPHS_PER_SEED = 40

@pytest.mark.parametrize("seed", SEEDS)
def test_random_graphs(seed):
  for i in range(GRAPHS_PER_SEED):
    s = seed * 1000 + i
    ours, theirs = gen_graph(TC, s), gen_graph(TG, s)
    check_graph(ours, theirs)
    assert from_tinygrad(theirs) is ours

def test_random_graphs_vars_and_helpers():
  for s in range(20):
    ours, theirs = gen_graph(TC, s, steps=15), gen_graph(TG, s, steps=15)
    assert_same(ours.vars(), {from_tinygrad(u) for u in theirs.vars()})
    assert_same(ours.variables(), [from_tinygrad(u) for u in theirs.variables()])
    for i, (a, b) in enumerate(zip(ours.src, theirs.src)):
      for meth, args in (("const_factor", ()), ("is_increasing", ()), ("pop_const", ()), ("pop_const", (TC.Ops.MUL,)),
                         ("divides", (2,)), ("divides", (3,)), ("overflows", (TC.dtypes.int8,)), ("split_uop", (TC.Ops.ADD,))):
        targs = tuple(to_tinygrad_arg(x) for x in args)
        assert_same_outcome(outcome(lambda: getattr(a, meth)(*args)), outcome(lambda: getattr(b, meth)(*targs)), f"src[{i}].{meth}{args}")

# ops sym_infer evaluates without simplifying; tinygrad simplifies first, which these never need
EVAL_OPS = {"CONST", "DEFINE_VAR", "BIND", "ADD", "SUB", "MUL", "IDIV", "MOD", "MAX", "CMPLT", "CMPNE", "CMPEQ", "AND", "OR", "XOR",
            "SHL", "SHR", "NEG", "WHERE", "CAST"}

def test_random_graphs_sym_infer():
  compared = 0
  for s in range(120):
    ours, theirs = gen_graph(TC, s, steps=12), gen_graph(TG, s, steps=12)
    rng = random.Random(s)
    vals = {u.arg[0]: type(u.arg[1])(rng.randint(u.arg[1], u.arg[2])) if not isinstance(u.arg[1], float) else u.arg[2]
            for u in theirs.toposort() if u.op is TgOps.DEFINE_VAR}
    for a, b in zip(ours.src, theirs.src):
      if b.dtype.count > 1 or any(u.op.name not in EVAL_OPS for u in b.toposort()): continue
      t = outcome(lambda: b.sym_infer(vals))
      if t[0] == "err" and t[1] is NameError: continue   # tinygrad renders casts to long/index as names it can't evaluate
      assert_same_outcome(outcome(lambda: a.sym_infer(vals)), t, f"seed {s}: {b.render(simplify=False)} with {vals}")
      compared += 1
  assert compared > 1000

# ---------------------------------------------------------------------------------------------------
# (c) key is the same in every process (and equal to tinygrad's)

KEY_SCRIPT = """
import sys
sys.path[:0] = [{repo!r}, {tests!r}]
from uop_oracle import TC
from test_uop_tinygrad import gen_graph
for s in {seeds!r}: print(gen_graph(TC, s).key.hex())
"""

def test_key_stable_across_processes():
  seeds = [3, 1001, 7007]
  here = os.path.dirname(os.path.abspath(__file__))
  script = KEY_SCRIPT.format(repo=os.path.dirname(here), tests=here, seeds=seeds)
  outs = []
  for hashseed in ("0", "12345"):
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    outs.append(res.stdout.split())
  mine = [gen_graph(TC, s).key.hex() for s in seeds]
  theirs = [gen_graph(TG, s).key.hex() for s in seeds]
  assert outs[0] == outs[1] == mine == theirs


EDGES = [-(2**64), -(2**63) - 1, -(2**63), -(2**63) + 1, -(2**62), -7, -1, 0, 1, 3, 2**31, 2**62, 2**63 - 1, 2**63, 2**64 + 5]
@pytest.mark.parametrize("op", ["+", "sub", "*", "max", "//", "<", "!="])
def test_bounds_at_the_64_bit_edges(op):
  """vmin/vmax of a binary op are computed in C when every bound fits in 64 bits and with Python's numbers when one does
  not: around the edges both must give tinygrad's values (and value types)"""
  rng = random.Random(op)
  def build(ns, lo0, hi0, lo1, hi1):
    x, y = ns.UOp.variable("x", lo0, hi0), ns.UOp.variable("y", lo1, hi1)
    return {"+": lambda: x + y, "sub": lambda: x.alu(ns.Ops.SUB, y), "*": lambda: x * y, "max": lambda: x.maximum(y), "//": lambda: x // y,
            "<": lambda: x < y, "!=": lambda: x.ne(y)}[op]()
  for _ in range(300):
    lo0, hi0 = sorted(rng.sample(EDGES, 2)); lo1, hi1 = sorted(rng.sample(EDGES, 2))
    tg, tc = build(TG, lo0, hi0, lo1, hi1), build(TC, lo0, hi0, lo1, hi1)
    got, want = outcome(lambda: (tc.vmin, tc.vmax)), outcome(lambda: (tg.vmin, tg.vmax))
    assert got == want and (got[0] == "err" or [type(v) for v in got[1]] == [type(v) for v in want[1]]), (op, lo0, hi0, lo1, hi1, got, want)
