"""Movement ops on UOps, BufferizeOpts, apply_movement_op and the rule sets of tinygrad/schedule/rangeify.py that codegen
uses (pm_mops, pm_flatten_bufferize, to_bufferview, rangeify_codegen, pm_add_buffers_local, pm_syntactic_sugar), native in
tinyc, against tinygrad 0.12.0.

Kernel ASTs of the CPU corpus carry no movement ops and no GROUP_REDUCE, so:
- movement ops are built as random chains on both sides from the same seeded choices (same nodes, shapes, errors);
- pm_mops/pm_syntactic_sugar run on hand-built graphs where movement ops sit under INDEX, AFTER and END;
- "add local buffers" is captured from tinygrad lowering the corpus's reduce kernels for a renderer with locals (CUDA,
  never run) with GROUP/GROUPTOP/LOCAL opts, which make pm_group_for_reduce produce local BUFFERIZEs."""
import functools, itertools, pickle, random
import pytest
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad, to_tinygrad
from passes import capture_passes
import tinygrad.codegen as tg_codegen
from tinygrad.codegen.opt import Opt, OptOps
from tinygrad.renderer.cstyle import CUDARenderer
from tinygrad.uop.ops import graph_rewrite as tg_graph_rewrite, KernelInfo, UOp as TgUOp, Ops as TgOps, AxisType as TgAxisType
from tinygrad.dtype import dtypes as tg_dtypes, AddrSpace as TgAddrSpace
from tinygrad.schedule.indexing import BufferizeOpts as TgBufferizeOpts, apply_movement_op as tg_apply_movement_op
from tinygrad.schedule import rangeify as tg_rangeify
from corpus import kernel_asts

RULES = _C.native_rules()
TG = dict(UOp=TgUOp, Ops=TgOps, dtypes=tg_dtypes, AxisType=TgAxisType, AddrSpace=TgAddrSpace, BufferizeOpts=TgBufferizeOpts)
TC = dict(UOp=tinyc.UOp, Ops=tinyc.Ops, dtypes=tinyc.dtypes, AxisType=tinyc.AxisType, AddrSpace=tinyc.AddrSpace,
          BufferizeOpts=tinyc.BufferizeOpts)

def outcome(f, *args):
  """(result, None) or (None, exception) of f(*args)"""
  try: return f(*args), None
  except Exception as e: return None, e

def same_outcome(tg, tc, what="", same_message=True):
  """tinygrad's and tinyc's outcomes agree: the same node (through the bridge) or value, or the same exception (and
  message, where it names no UOp)"""
  (r1, e1), (r2, e2) = tg, tc
  assert (e1 is None) == (e2 is None), f"{what}: tinygrad {e1!r}, tinyc {e2!r}"
  if e1 is not None:
    assert type(e1) is type(e2), f"{what}: {e1!r} vs {e2!r}"
    if same_message and "UOp(" not in str(e1): assert str(e1) == str(e2), what
    return False
  if isinstance(r1, TgUOp): assert from_tinygrad(r1) is r2, what
  else: assert to_tc_value(r1) == r2, what
  return True

def to_tc_value(v):
  if isinstance(v, TgUOp): return from_tinygrad(v)
  if isinstance(v, (tuple, list)): return type(v)(to_tc_value(x) for x in v)
  return v

# ---- movement ops: random chains built the same way on both sides ----

def random_op(rng: random.Random, shape: tuple, sym_ok: bool):
  """(method name, args) of a random movement op for a tensor of this shape, sometimes invalid"""
  bad = rng.random() < 0.15
  n = len(shape)
  ints = all(isinstance(s, int) for s in shape)
  kind = rng.choice(["reshape", "permute", "expand", "shrink", "pad", "flip", "forced_reshape"] if n else ["reshape", "expand", "pad"])
  if kind == "reshape":
    if not ints: return "reshape", (tuple(shape) + (1,),) if not bad else ((2, 3),)
    total = 1
    for s in shape: total *= s
    dims, left = [], total
    for p in (2, 3, 5, 2, 3):
      if left % p == 0 and rng.random() < 0.5: dims.append(p); left //= p
    dims.append(left)
    rng.shuffle(dims)
    if rng.random() < 0.2: dims[rng.randrange(len(dims))] = -1
    if bad: dims.append(rng.choice([2, 7]))
    return "reshape", tuple(dims) if rng.random() < 0.5 else (tuple(dims),)
  if kind == "permute":
    order = list(range(n)); rng.shuffle(order)
    if bad: order[0] = order[-1] if n > 1 else 5
    if rng.random() < 0.3: order = [o - n for o in order]
    return "permute", tuple(order)
  if kind == "expand":
    new = [rng.choice([2, 3, 4]) if s == 1 else (s if rng.random() < 0.7 else -1) for s in shape]
    if rng.random() < 0.3: new = [rng.choice([2, 3])] + new
    if bad: new = new + [7]
    return "expand", (tuple(new),)
  if kind == "shrink":
    arg = []
    for s in shape:
      if not isinstance(s, int) or rng.random() < 0.3: arg.append(None); continue
      b = rng.randrange(s) if s else 0; e = rng.randrange(b + 1, s + 1) if s else 0
      arg.append((b, e))
    if bad: arg[0] = (0, 99) if rng.random() < 0.5 else (1, 0)
    return "shrink", (tuple(arg),)
  if kind == "pad":
    arg = tuple((rng.randrange(3), rng.randrange(3)) for _ in shape)
    if bad: arg = arg + ((1, 1),)
    return "pad", (arg,)
  if kind == "flip":
    axes = [i for i in range(n) if rng.random() < 0.5]
    if bad: axes = axes + axes[:1] if axes else [n + 3]
    return "flip", tuple(axes)
  return "forced_reshape", (tuple(shape),)

def chain(ns, seed, steps=6, sym=False):
  """a random movement chain on a buffer (tinygrad's or tinyc's API in ns): list of (op name, outcome)"""
  UOp, Ops, dtypes = ns["UOp"], ns["Ops"], ns["dtypes"]
  rng = random.Random(seed)
  x = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(120), (), 0).reshape(2, 3, 4, 5)
  if sym:
    v = UOp.variable("n", 1, 4)
    x = x.shrink(((0, 2), (0, 3), (0, v), None))
  out = []
  for _ in range(steps):
    shape = x.shape
    name, args = random_op(rng, shape, sym)
    res, err = outcome(lambda: getattr(x, name)(*args))
    out.append((name, args, res, err))
    if err is None: x = res
  return out

@pytest.mark.parametrize("sym", [False, True])
def test_random_movement_chains(sym):
  ok = n = 0
  for seed in range(150 if not sym else 60):
    for (name, args, r1, e1), (_, _, r2, e2) in zip(chain(TG, seed, sym=sym), chain(TC, seed, sym=sym)):
      n += 1
      if same_outcome((r1, e1), (r2, e2), f"seed {seed}: {name}{args}"):
        ok += 1
        assert to_tc_value(r1.shape) == r2.shape and to_tc_value(r1._shape) == r2._shape
        assert from_tinygrad(r1.base) is r2.base and r1.ndim == r2.ndim
        if r1.op in {TgOps.RESHAPE, TgOps.EXPAND, TgOps.PAD, TgOps.SHRINK, TgOps.PERMUTE, TgOps.FLIP}: assert to_tc_value(r1.marg) == r2.marg
  print(f"movement chains{' (symbolic)' if sym else ''}: {ok}/{n} built, the rest the same exception")
  assert ok > n // 2

def movement_cases(ns):
  """fixed movement ops and errors, including the raw UOp constructors"""
  UOp, Ops, dtypes = ns["UOp"], ns["Ops"], ns["dtypes"]
  b = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(24), (), 0)
  x = b.reshape(2, 3, 4)
  yield "reshape_none", lambda: x.reshape(None, 12)
  yield "reshape_two_minus", lambda: x.reshape(-1, -1)
  yield "reshape_bad", lambda: x.reshape(5, 5)
  yield "reshape_noop", lambda: x.reshape(2, 3, 4)
  yield "reshape_list", lambda: x.reshape([4, 6])
  yield "reshape_badarg", lambda: x.reshape((4, 6), 1)
  yield "forced_reshape_noop", lambda: x.forced_reshape((2, 3, 4))
  yield "forced_reshape_bad", lambda: x.forced_reshape((2, 3))
  yield "expand_fewer", lambda: x.expand(4)
  yield "expand_bad", lambda: x.expand(2, 5, 4)
  yield "expand_minus", lambda: x.reshape(2, 1, 12).expand(-1, 6, -1)
  yield "permute_noop", lambda: x.permute(0, 1, 2)
  yield "permute_list", lambda: x.permute([2, 1, 0])
  yield "permute_bad", lambda: x.permute(0, 1)
  yield "permute_range", lambda: x.permute(0, 1, 7)
  yield "flip_bool", lambda: x.flip(True)
  yield "flip_twice", lambda: x.flip(0, 0)
  yield "flip_none", lambda: x.flip(())
  yield "shrink_len", lambda: x.shrink(((0, 1),))
  yield "shrink_noop", lambda: x.shrink((None, None, None))
  yield "pad_noop", lambda: x.pad(((0, 0), (0, 0), (0, 0)))
  yield "pad_neg", lambda: x.pad(((0, -1), (0, 0), (0, 0)))
  yield "pad_len", lambda: x.pad(((0, 1),))
  yield "mop_not_movement", lambda: x._mop(Ops.ADD, (1,))
  yield "mop_reshape", lambda: x._mop(Ops.RESHAPE, (6, 4), True)
  yield "mop_pad_noop", lambda: x._mop(Ops.PAD, ((0, 0), (0, 0), (0, 0)), same_shape_noop=True)
  yield "marg_not_movement", lambda: b.marg
  yield "rtag", lambda: x.rtag()
  yield "rtag_value", lambda: x.rtag((1, 2))
  yield "base", lambda: x.permute(2, 1, 0).flip(0).base
  yield "resolve_dim", lambda: x._resolve_dim(-1)
  yield "resolve_dim_extra", lambda: x._resolve_dim(3, extra=True)
  yield "resolve_dim_bad", lambda: x._resolve_dim(3)
  yield "numel", lambda: x.numel()
  yield "shape_of_shapeless", lambda: UOp.const(dtypes.int, 3).reshape(1)
  yield "reshape_from_nothing", lambda: UOp(Ops.RESHAPE, dtypes.float, (UOp.const(dtypes.float, 1.0), UOp.const(dtypes.index.vec(2), (2, 3)))).shape
  yield "raw_bad_reshape", lambda: UOp(Ops.RESHAPE, dtypes.float, (b, UOp.const(dtypes.index.vec(2), (5, 5)))).shape
  yield "raw_neg_reshape", lambda: UOp(Ops.RESHAPE, dtypes.float, (b, UOp.const(dtypes.index.vec(2), (-4, -6)))).shape
  yield "raw_bad_expand", lambda: UOp(Ops.EXPAND, dtypes.float, (b, UOp.const(dtypes.index.vec(2), (5, 5)))).shape
  yield "raw_bad_permute", lambda: UOp(Ops.PERMUTE, dtypes.float, (x,), (0, 0, 1)).shape
  yield "raw_bad_flip", lambda: UOp(Ops.FLIP, dtypes.float, (x,), (1, 0, 0)).shape
  yield "raw_movement_no_shape", lambda: UOp(Ops.PERMUTE, dtypes.float, (UOp.const(dtypes.float, 1.0),), (0,)).shape
  yield "raw_bad_shrink", lambda: UOp(Ops.SHRINK, dtypes.float, (b, UOp.const(dtypes.index, 3), UOp.const(dtypes.index, 1))).shape
  yield "raw_bad_pad", lambda: UOp(Ops.PAD, dtypes.float, (b, UOp.const(dtypes.index, -3), UOp.const(dtypes.index, 1))).shape
  yield "reduce_axis_shape", lambda: UOp(Ops.REDUCE_AXIS, dtypes.float, (x,), (Ops.ADD, (0, 2))).shape
  yield "reduce_axis_bad", lambda: UOp(Ops.REDUCE_AXIS, dtypes.float, (x,), (Ops.ADD, (0, 3))).shape
  r = UOp.range(4, 0)
  yield "bufferize_shape", lambda: UOp(Ops.BUFFERIZE, dtypes.float, (b, r, UOp.range(6, 1)), ns["BufferizeOpts"]("CPU")).shape
  yield "buffer_view_shape", lambda: UOp(Ops.BUFFER_VIEW, dtypes.float, (b,), (10, 2)).shape
  v = UOp.variable("n", 1, 8)
  yield "sym_reshape", lambda: x.reshape(2, 12).shrink(((0, 2), (0, v))).reshape(v, 2)
  yield "sym_expand", lambda: x.reshape(2, 1, 12).expand(2, v, 12)
  yield "sym_pad", lambda: x.pad(((0, v), (1, 1), (0, 0)))
  s = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(1), (), 1).reshape(())
  yield "scalar_expand", lambda: s.expand(3)
  yield "scalar_ops", lambda: (s.expand(()), s.permute(()), s.flip(()), s.reshape(1, 1))
  yield "scalar_shrink~", lambda: s.shrink(())   # a list arg: unhashable on both sides, in the UOp constructor's words
  yield "scalar_pad", lambda: s.pad(())
  yield "reshape_float", lambda: x.reshape(24.0)
  yield "pad_str", lambda: x.pad((("a", "b"), (0, 0), (0, 0)))

def test_movement_cases_and_errors():
  for (name, f1), (_, f2) in zip(movement_cases(TG), movement_cases(TC)):
    same_outcome(outcome(f1), outcome(f2), name, same_message=not name.endswith("~"))

# ---- BufferizeOpts ----

def test_bufferize_opts():
  for args, kw in [(("CPU",), {}), ((3, "LOCAL"), {"removable": False}), ((None,), {"addrspace": "LOCAL"}), ((("CPU", "CPU:1"),), {})]:
    tg_kw = {k: TgAddrSpace[v] if k == "addrspace" else v for k, v in kw.items()}
    tc_kw = {k: tinyc.AddrSpace[v] if k == "addrspace" else v for k, v in kw.items()}
    tg_args = tuple(TgAddrSpace[a] if a == "LOCAL" else a for a in args)
    tc_args = tuple(tinyc.AddrSpace[a] if a == "LOCAL" else a for a in args)
    a, b = TgBufferizeOpts(*tg_args, **tg_kw), tinyc.BufferizeOpts(*tc_args, **tc_kw)
    assert repr(a) == repr(b) and str(a) == str(b)
    assert b == tinyc.BufferizeOpts(*tc_args, **tc_kw) and hash(b) == hash(tinyc.BufferizeOpts(*tc_args, **tc_kw))
    assert pickle.loads(pickle.dumps(b)) == b
    assert (b.device, b.addrspace.name, b.removable) == (a.device, a.addrspace.name, a.removable)
    u = TgUOp(TgOps.BUFFERIZE, tg_dtypes.float, (TgUOp.range(4, 0),), a)
    assert from_tinygrad(u).arg == b and to_tinygrad(from_tinygrad(u)) is u and from_tinygrad(u).key == u.key
  b = tinyc.BufferizeOpts("CPU")
  assert b != tinyc.BufferizeOpts("CPU", removable=False) and b != ("CPU", tinyc.AddrSpace.GLOBAL, True)
  for make in (lambda B: setattr(B("CPU"), "device", "GPU"), lambda B: B(), lambda B: B("CPU", x=1), lambda B: B(1, 2, 3, 4)):
    e1, e2 = outcome(make, TgBufferizeOpts)[1], outcome(make, tinyc.BufferizeOpts)[1]
    assert e1 is not None and type(e1) is type(e2)

# ---- apply_movement_op ----

def test_apply_movement_op_random():
  rng, n = random.Random(1), 0
  for _ in range(200):
    shape = tuple(rng.choice([1, 2, 3, 4, 6]) for _ in range(rng.randrange(1, 4)))
    rngs = tuple(TgUOp.range(s if rng.random() < 0.8 else s + 2, i) for i, s in enumerate(shape))
    op = rng.choice([TgOps.SHRINK, TgOps.PERMUTE, TgOps.FLIP, TgOps.EXPAND, TgOps.PAD, TgOps.RESHAPE])
    if op is TgOps.SHRINK: in_shape, arg = tuple(s + 2 for s in shape), tuple((b := rng.randrange(3), b + s) for s in shape)
    elif op is TgOps.PERMUTE: arg = tuple(rng.sample(range(len(shape)), len(shape))); in_shape = tuple(shape[i] for i in arg)
    elif op is TgOps.FLIP: in_shape, arg = shape, tuple(rng.random() < 0.5 for _ in shape)
    elif op is TgOps.EXPAND: in_shape, arg = tuple(1 if rng.random() < 0.5 else s for s in shape), shape
    elif op is TgOps.PAD:
      arg = tuple((rng.randrange(2), rng.randrange(2)) for _ in shape)
      in_shape = tuple(max(1, s - b - e) for s, (b, e) in zip(shape, arg))
    else:
      total = 1
      for s in shape: total *= s
      in_shape, arg = rng.choice([(total,), (total, 1), shape[::-1]]), shape
      if in_shape == shape[::-1] and len(shape) > 1: in_shape = (total // shape[-1], shape[-1])
    tg = outcome(tg_apply_movement_op, op, in_shape, arg, rngs)
    tc = outcome(_C.apply_movement_op, tinyc.Ops(op.value), in_shape, arg, tuple(from_tinygrad(r) for r in rngs))
    n += same_outcome(tg, tc, f"{op} {in_shape} {arg}")
  print(f"apply_movement_op: {n}/200 identical")
  assert n == 200
  assert isinstance(outcome(_C.apply_movement_op, tinyc.Ops.ADD, (1,), (1,), ())[1], RuntimeError)

# ---- pm_mops and pm_syntactic_sugar on hand-built graphs ----

EARLY = RULES["pm_mops"] + RULES["pm_syntactic_sugar"]
TG_EARLY = tg_rangeify.pm_mops + tg_codegen.pm_syntactic_sugar

def mops_graphs(ns, seed, sym=False):
  """a random movement chain on a buffer, read through INDEX with ranges, under AFTER and END, and a nested INDEX"""
  UOp, Ops, dtypes = ns["UOp"], ns["Ops"], ns["dtypes"]
  x = None
  for name, args, res, err in chain(ns, seed, steps=5, sym=sym):
    if err is None and res is not None: x = res
  if x is None or x.op not in {Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP}: return None
  rngs = [UOp.range(s, i) for i, s in enumerate(x.shape)]
  buf = x.base
  val = x.index(*rngs)
  st = buf.index(UOp.range(120, 9), ptr=True).store(UOp.const(dtypes.float, 1.0))
  after = UOp(Ops.AFTER, x.dtype, (x, st))
  end = UOp(Ops.END, dtypes.void, (x, rngs[0])) if rngs else st
  nested = UOp(Ops.INDEX, dtypes.float, (UOp(Ops.INDEX, buf.dtype, (buf, UOp.range(10, 7))), UOp.range(12, 8)))
  return UOp.sink(val, after.index(*rngs), end, nested)

@pytest.mark.parametrize("sym", [False, True])
def test_pm_mops_random_graphs(sym):
  n = ok = 0
  for seed in range(120 if not sym else 40):
    g1, g2 = mops_graphs(TG, seed, sym), mops_graphs(TC, seed, sym)
    if g1 is None: assert g2 is None; continue
    assert from_tinygrad(g1) is g2
    for bottom_up in (True, False):
      n += 1
      want = outcome(tg_graph_rewrite, g1, TG_EARLY, None, bottom_up)
      if want[0] is not None:
        assert not any(u.op in {TgOps.RESHAPE, TgOps.PERMUTE, TgOps.EXPAND, TgOps.PAD, TgOps.SHRINK, TgOps.FLIP} for u in want[0].toposort())
      ok += same_outcome(want, outcome(_C.graph_rewrite, g2, EARLY, None, bottom_up), f"seed {seed}")
  print(f"pm_mops+pm_syntactic_sugar on random movement graphs{' (symbolic)' if sym else ''}: {ok}/{n} identical")
  assert ok == n and n >= (60 if sym else 200)

def sugar_cases(ns):
  UOp, Ops, dtypes = ns["UOp"], ns["Ops"], ns["dtypes"]
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(64), (), 0)
  r1, r2 = UOp.range(8, 0), UOp.range(8, 1)
  yield UOp(Ops.INDEX, dtypes.float, (UOp(Ops.INDEX, buf.dtype, (buf, r1)), r2))                       # concatenated
  yield UOp(Ops.INDEX, buf.dtype, (UOp(Ops.INDEX, buf.dtype, (buf, r1)), r2))                          # ptr outside: kept
  yield UOp(Ops.INDEX, dtypes.float, (UOp(Ops.INDEX, dtypes.float, (buf, r1)), r2))                    # value inside: kept
  yield UOp(Ops.INDEX, dtypes.float, (UOp(Ops.INDEX, buf.dtype, (buf, r1), arg="x"), r2, r1), arg=1)   # extra sources, arg kept

def test_pm_syntactic_sugar():
  for g1, g2 in zip(sugar_cases(TG), sugar_cases(TC)):
    assert from_tinygrad(g1) is g2
    assert from_tinygrad(tg_graph_rewrite(g1, tg_codegen.pm_syntactic_sugar)) is _C.graph_rewrite(g2, RULES["pm_syntactic_sugar"])

# ---- BUFFERIZE rules on hand-built graphs ----

def bufferize_cases(ns):
  UOp, Ops, dtypes, AxisType, AddrSpace, BO = ns["UOp"], ns["Ops"], ns["dtypes"], ns["AxisType"], ns["AddrSpace"], ns["BufferizeOpts"]
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(64), (), 0)
  r0, r1 = UOp.range(4, 0), UOp.range(6, 1)
  val = buf.index(r0 * 6 + r1)
  yield "two_ranges", UOp(Ops.BUFFERIZE, dtypes.float, (val, r0, r1), BO("CPU"))
  yield "tagged", UOp(Ops.BUFFERIZE, dtypes.float, (val, r0), BO("CPU"), tag=(1,))
  v = UOp.variable("n", 1, 6)
  rs = UOp.range(v, 2)
  yield "symbolic", UOp(Ops.BUFFERIZE, dtypes.float, (buf.index(rs), r0, rs), BO("CPU"))
  yield "local", UOp(Ops.BUFFERIZE, dtypes.float, (val, r0, r1), BO(0, AddrSpace.LOCAL)).index(r1, r0)
  yield "global_single", UOp(Ops.BUFFERIZE, dtypes.float, (val, r0 * 6 + r1), BO("CPU")).index(r0 * 6 + r1)
  outer = UOp.range(3, 5, AxisType.OUTER)
  red = UOp(Ops.REDUCE, dtypes.float, (buf.index(r0 + outer), outer), Ops.ADD)
  yield "outer_reduce", UOp(Ops.BUFFERIZE, dtypes.float, (red, r0), BO("CPU"), tag=(2,))
  tgt = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(24), (), 1)
  mops = tgt.reshape(4, 6).permute(1, 0)
  assign = UOp(Ops.ASSIGN, dtypes.float, (tgt.index(r0 * 6 + r1), val, mops))
  yield "assign", UOp(Ops.BUFFERIZE, dtypes.float, (assign, r0, r1), BO("CPU"))
  yield "assign_bad", UOp(Ops.BUFFERIZE, dtypes.float, (UOp(Ops.ASSIGN, dtypes.float, (buf, val, mops)), r0), BO("CPU"))
  yield "contiguous_no_device", UOp(Ops.BUFFERIZE, dtypes.float, (UOp(Ops.CONTIGUOUS, dtypes.float, (val,)), r0), BO(None, AddrSpace.LOCAL))
  yield "contiguous_cpu", UOp(Ops.BUFFERIZE, dtypes.float, (UOp(Ops.CONTIGUOUS, dtypes.float, (val,)), r0), BO("CPU"))
  disk = UOp(Ops.BUFFER, dtypes.uint8, (UOp(Ops.UNIQUE, arg=0), UOp(Ops.DEVICE, arg="DISK:/tmp/x")), 64)
  dval = UOp(Ops.BITCAST, dtypes.uint8, (disk.index(r0 + 8),))
  yield "bitcast_disk", UOp(Ops.BUFFERIZE, dtypes.uint8, (dval, r0), BO("DISK:/tmp/x"))
  yield "bufferview_skip", UOp(Ops.BUFFER_VIEW, dtypes.uint8, (UOp(Ops.CONTIGUOUS, dtypes.uint8, (disk,)),), (8, 0))
  yield "zero_sized", UOp(Ops.BUFFERIZE, dtypes.float, (val, UOp.range(0, 3)), BO("CPU"))
  yield "not_bufferize_opts", UOp(Ops.BUFFERIZE, dtypes.float, (val, r0), None)

BUFFERIZE_PASSES = [("pm_flatten_bufferize", tg_rangeify.pm_flatten_bufferize), ("to_bufferview", tg_rangeify.to_bufferview),
                    ("pm_add_buffers_local", tg_rangeify.pm_add_buffers_local)]

def test_bufferize_rules():
  n = ok = 0
  for (name, g1), (_, g2) in zip(bufferize_cases(TG), bufferize_cases(TC)):
    assert from_tinygrad(g1) is g2, name
    for pname, tg_pm in BUFFERIZE_PASSES:
      n += 1
      tg = outcome(lambda: tg_graph_rewrite(g1, tg_pm, ctx=itertools.count(0)))
      tc = outcome(lambda: _C.graph_rewrite(g2, RULES[pname], ctx=itertools.count(0)))
      ok += same_outcome(tg, tc, f"{pname} on {name}")
  print(f"BUFFERIZE rules on hand-built graphs: {ok}/{n} built identically, the rest the same exception")
  assert ok >= n // 2

def test_counter_ctx():
  """ctx is advanced with next(): numbering goes on from where the counter stands; a non-iterator is a TypeError"""
  g = list(bufferize_cases(TC))[3][1]
  out = _C.graph_rewrite(g, RULES["pm_add_buffers_local"], ctx=itertools.count(5))
  assert [u.arg for u in out.toposort() if u.op is tinyc.Ops.DEFINE_LOCAL] == [5]
  with pytest.raises(TypeError): _C.graph_rewrite(g, RULES["pm_add_buffers_local"], ctx=[0])

def codegen_cases(ns):
  UOp, Ops, dtypes, AddrSpace = ns["UOp"], ns["Ops"], ns["dtypes"], ns["AddrSpace"]
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(64), (), 0)
  r0 = UOp.range(4, 0)
  yield "noop", UOp(Ops.NOOP, dtypes.float, (buf.index(r0),)) + 1
  yield "store_arg", UOp(Ops.STORE, dtypes.void, (buf.index(r0, ptr=True), UOp.const(dtypes.float, 2.0)), arg="x")
  yield "contiguous", UOp(Ops.CONTIGUOUS, dtypes.float, (buf.index(r0),))
  lp = dtypes.float.ptr(16, AddrSpace.LOCAL)
  loc = UOp(Ops.DEFINE_LOCAL, lp, (), 0)
  st = UOp(Ops.BARRIER, dtypes.void, (buf.index(r0, ptr=True).store(UOp.const(dtypes.float, 1.0)),))
  aft = UOp(Ops.AFTER, lp, (loc, st))
  bc = UOp(Ops.VECTORIZE, lp.vec(2), (aft, aft))
  yield "broadcast_after_index", UOp(Ops.INDEX, dtypes.float.vec(2), (bc, UOp(Ops.VECTORIZE, dtypes.index.vec(2), (r0, r0 + 1))))
  yield "broadcast_after_ptr", UOp(Ops.INDEX, lp.vec(2), (bc, r0))
  yield "gep_vector_after", UOp(Ops.INDEX, dtypes.float, (UOp(Ops.GEP, lp, (UOp(Ops.AFTER, lp.vec(2), (bc, st)),), (1,)), r0))
  yield "gep_after_index", UOp(Ops.INDEX, dtypes.float, (UOp(Ops.GEP, lp, (aft,), (0,)), r0))

def test_rangeify_codegen_rules():
  changed = 0
  for (name, g1), (_, g2) in zip(codegen_cases(TG), codegen_cases(TC)):
    assert from_tinygrad(g1) is g2, name
    changed += tg_graph_rewrite(g1, tg_rangeify.rangeify_codegen, ctx=itertools.count(0)) is not g1
    same_outcome(outcome(lambda: tg_graph_rewrite(g1, tg_rangeify.rangeify_codegen, ctx=itertools.count(0))),
                 outcome(lambda: _C.graph_rewrite(g2, RULES["rangeify_codegen"], ctx=itertools.count(0))), name)
  assert changed >= 5

def test_get_contiguous_sets_opts():
  class Ctx: opts = None
  opts = (tinyc.Opt(tinyc.OptOps.UPCAST, 0, 4),)
  x = tinyc.UOp(tinyc.Ops.DEFINE_VAR, tinyc.dtypes.float, (), ("x", 0, 1))
  ctx = Ctx()
  assert _C.graph_rewrite(tinyc.UOp(tinyc.Ops.CONTIGUOUS, tinyc.dtypes.float, (x,), opts), RULES["rangeify_codegen"], ctx=ctx) is x
  assert ctx.opts == opts

# ---- passes captured from tinygrad lowering the corpus for a renderer with locals ----

GROUP_OPTS = [(Opt(OptOps.GROUP, 0, 4),), (Opt(OptOps.GROUPTOP, 0, 16),), (Opt(OptOps.LOCAL, 0, 4), Opt(OptOps.GROUP, 0, 4)),
              (Opt(OptOps.GROUPTOP, 0, 8), Opt(OptOps.LOCAL, 0, 2), Opt(OptOps.UPCAST, 0, 2)), None]

@functools.cache
def captured_local():
  """{pass name: [(kernel name, input, output)]} of the passes below, from the corpus's reduce kernels with GROUP opts"""
  kernels = [(f"{kname}/{opts}", ast.replace(arg=KernelInfo(opts_to_apply=opts)) if opts is not None else ast)
             for kname, ast in kernel_asts() if any(u.op is TgOps.REDUCE for u in ast.toposort()) for opts in GROUP_OPTS]
  got = capture_passes(kernels, CUDARenderer("sm_80"), ("early movement ops", "expander", "add local buffers"))
  return {name: [(k, inp, out) for k, inp, _, out in cases] for name, cases in got.items()}

def test_add_local_buffers_identity():
  cases = captured_local()["add local buffers"]
  with_local = sum(any(u.op is TgOps.BUFFERIZE for u in inp.toposort()) for _, inp, _ in cases)
  assert len(cases) >= 50 and with_local >= 40
  pm = RULES["pm_add_buffers_local"] + RULES["rangeify_codegen"]
  bad = [k for k, inp, outp in cases if from_tinygrad(outp) is not _C.graph_rewrite(from_tinygrad(inp), pm, ctx=itertools.count(0))]
  print(f"\nadd local buffers identity (CUDA renderer, GROUP opts): {len(cases) - len(bad)}/{len(cases)} ({with_local} with local BUFFERIZE); {bad}")
  assert not bad

def test_early_movement_ops_identity():
  cases = captured_local()["early movement ops"]
  bad = [k for k, inp, outp in cases if from_tinygrad(outp) is not _C.graph_rewrite(from_tinygrad(inp), EARLY, bottom_up=True)]
  print(f"\nearly movement ops identity (corpus): {len(cases) - len(bad)}/{len(cases)}")
  assert len(cases) >= 50 and not bad

# ---- memory: repeated calls, errors included, leave nothing behind ----

def _mem_workload(cases, graphs, i):
  for _, f in cases: outcome(f)
  for name, g in graphs:
    for pname, _ in BUFFERIZE_PASSES: outcome(_C.graph_rewrite, g, RULES[pname], itertools.count(i))
    outcome(_C.graph_rewrite, g, EARLY)
  b = tinyc.BufferizeOpts(i, tinyc.AddrSpace.LOCAL); hash(b); repr(b); pickle.loads(pickle.dumps(b))
  r = tinyc.UOp.range(6, 0)
  for op, arg in [(tinyc.Ops.RESHAPE, (2, 3)), (tinyc.Ops.PAD, ((1, 1),)), (tinyc.Ops.FLIP, (True,)), (tinyc.Ops.ADD, ())]:
    outcome(_C.apply_movement_op, op, (6,), arg, (r,))

def test_memory_flat():
  import gc, tracemalloc
  cases, graphs = list(movement_cases(TC)), list(bufferize_cases(TC)) + [(n, tinyc.UOp.sink(g)) for n, g in codegen_cases(TC)]
  for i in range(30): _mem_workload(cases, graphs, i)
  gc.collect()
  base = _C._intern_count()
  tracemalloc.start()
  try:
    # warm up while tracing: the interpreter's free lists turn over from blocks made before tracing to traced ones,
    # which reads as growth (less each round) until they have
    for i in range(120): _mem_workload(cases, graphs, i % 30)
    gc.collect()
    sizes = []
    for _ in range(3):
      for i in range(30): _mem_workload(cases, graphs, i)
      gc.collect()
      sizes.append(tracemalloc.get_traced_memory()[0])
  finally: tracemalloc.stop()
  assert _C._intern_count() == base
  # each round makes ~3000 calls; a leak of one small object per call would add > 80 KB a round (caches settle below that)
  assert sizes[2] - sizes[1] < 32 * 1024 and sizes[1] - sizes[0] < 32 * 1024, sizes

def test_refcounts_balanced():
  import gc, sys
  dev, space, shape, pad = "rc_dev", tinyc.AddrSpace.LOCAL, (4, 6), ((1, 2), (0, 3))
  x = tinyc.UOp(tinyc.Ops.DEFINE_GLOBAL, tinyc.dtypes.float.ptr(24), (), 0)
  r = (tinyc.UOp.range(4, 0), tinyc.UOp.range(6, 1))
  objs = [dev, space, shape, pad, x, *r]
  before = None
  for i in range(501):
    if i == 1: gc.collect(); before = [sys.getrefcount(o) for o in objs]   # after one warm-up round (dtype caches)
    b = tinyc.BufferizeOpts(dev, space); hash(b); repr(b); b == tinyc.BufferizeOpts(dev)
    y = x.reshape(shape); y.pad(pad); y.marg; y._mop(tinyc.Ops.PAD, pad); x.forced_reshape(shape).base
    outcome(lambda: x.reshape(shape, 1)); outcome(lambda: y._mop(tinyc.Ops.ADD, pad)); outcome(lambda: y.pad(((0, -1), (0, 0))))
    _C.apply_movement_op(tinyc.Ops.PAD, shape, pad, r); _C.apply_movement_op(tinyc.Ops.RESHAPE, shape, (24,), (tinyc.UOp.range(24, 0),))
    u = tinyc.UOp(tinyc.Ops.BUFFERIZE, tinyc.dtypes.float, (x.index(r[0] * 6 + r[1]), *r), b)
    _C.graph_rewrite(u.index(*r), RULES["pm_add_buffers_local"], ctx=itertools.count(0))
    del b, y, u
  gc.collect()
  assert [sys.getrefcount(o) for o in objs] == before
