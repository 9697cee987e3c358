"""Refcount balance and memory: building and dropping many UOps, and repeated calls, leave nothing behind."""
import gc, sys, tracemalloc
import tinyc
from tinyc import UOp, Ops, dtypes, AxisType
from sanitizer import rss, RSS_SLACK

count = tinyc._C._intern_count

def build_chunk(n: int, salt: int) -> int:
  """n fresh nodes (n/2 consts, n/2 ADDs in a chain, with bounds and keys computed), dropped on return."""
  x = UOp.variable(f"mem{salt}", 0, 10)
  for i in range(n // 2): x = x + (salt * n + i)
  assert x.vmax - x.vmin == 10 and len(x.key) == 32
  return count()

def test_million_nodes_flat():
  gc.collect()
  base = count()
  build_chunk(100_000, 0)                  # warm-up: the intern table and allocator pools reach their size
  assert count() == base
  after_warmup = rss()
  peak = 0
  for r in range(1, 10):                   # 9 more rounds: 1M nodes in all
    assert build_chunk(100_000, r) >= base + 100_000
    assert count() == base
    peak = max(peak, rss())
  assert peak - after_warmup < 20 * 2**20 + RSS_SLACK, f"RSS grew by {(peak - after_warmup) / 2**20:.1f} MB"

def _graph():
  a, b = UOp.variable("mg_a", 0, 9), UOp.variable("mg_b", -4, 4)
  r = UOp.range(16, 0, AxisType.REDUCE)
  g = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(64), arg=0)
  idx = (a * 4 + r) % 64
  val = g.index(idx.valid(b < 2)).load() * 2.0
  return UOp.sink(g.index(a).store(val.reduce(r, arg=Ops.ADD)).end(r), (a // 3).maximum(b) << 1, (a < b).where(a, b) ^ 5)

def _workload(u: UOp, i: int):
  repr(u); u.key; u.toposort(); u.backward_slice; u.get_consumer_map()
  for s in u.toposort(): s.vmin, s.vmax, s._min_max
  u.replace(arg=i); u.replace(tag=("t", i)); u.src[1].replace(src=u.src[1].src[::-1])
  a = u.src[1].src[0]
  a + i; i - a; a * 2.5; a // 3; a % (i + 1); -a; a < i; i > a; a.eq(i); a.minimum(i); a.maximum(a); (a < 3).where(a, i)
  a.cast(dtypes.float); a.vectorize(a, a).gep((0, 2)); a.bind(0) if a.op is Ops.DEFINE_VAR else None
  a.pop_const(); a.const_factor(); a.divides(2); list(a.split_uop(Ops.ADD)); u.vars(); u.variables()
  pickle_round = UOp(*u.__reduce__()[1])
  assert pickle_round is u
  try: UOp(Ops.ADD, dtypes.int, (a, "x"))
  except TypeError: pass
  try: UOp(Ops.CONST, dtypes.int, arg=[i])
  except TypeError: pass
  try: u.src[1].src[0].bind(10**6)
  except (ValueError, AssertionError): pass
  try: a.vectorize(a).gep(5)
  except IndexError: pass

def test_repeated_calls_do_not_grow():
  gc.collect()
  g = _graph()
  base = count()
  n = 300
  for i in range(n): _workload(g, i)       # warm-up: caches (vmin, key) filled
  gc.collect()
  tracemalloc.start()
  try:
    sizes = []
    for _ in range(3):
      for i in range(n): _workload(g, i)
      gc.collect()
      sizes.append(tracemalloc.get_traced_memory()[0])
  finally:
    tracemalloc.stop()
  assert count() == base
  # a leak of one small object per call would add >= n * 16 bytes a round
  assert sizes[2] - sizes[1] < n * 8, sizes
  assert sizes[1] - sizes[0] < n * 8, sizes

def test_repeated_calls_rss_flat():
  g = _graph()
  rounds = []
  for _ in range(3):
    for i in range(1500): _workload(g, i)
    gc.collect()
    rounds.append(rss())
  assert rounds[2] <= rounds[1] + 2 * 2**20 + RSS_SLACK, rounds

def test_refcounts_balanced():
  arg, tag, name = ("rc_arg", 1), ("rc_tag",), "rc_var"
  a = UOp.variable(name, 0, 100)
  objs = [a, arg, tag, name, Ops.ADD, dtypes.int]
  before = [sys.getrefcount(o) for o in objs]
  for i in range(2000):
    u = UOp(Ops.CUSTOM, dtypes.int, (a, a), arg, tag)
    v = (a + i) * a
    v.vmin, v.key, repr(v), v.toposort(), u.replace(tag=None), u.replace(arg=(arg, i))
    try: UOp(Ops.ADD, dtypes.int, (a, i))
    except TypeError: pass
    try: UOp(Ops.CUSTOM, dtypes.int, (a,), [arg])
    except TypeError: pass
    try: UOp(Ops.CUSTOM, "int", (a,), arg, tag)
    except TypeError: pass
    del u, v
  gc.collect()
  assert [sys.getrefcount(o) for o in objs] == before

def test_dealloc_of_deep_chains_repeatedly():
  gc.collect()
  base = count()
  sizes = []
  for r in range(5):
    x = UOp.variable("dc", 0, 1)
    for i in range(60_000): x = (x * 2 + r) % 97 if i & 1 else x - 1   # bounds stay small
    assert -96 <= x.vmin <= x.vmax <= 96 and len(x.key) == 32   # the last op is a MOD by 97
    del x
    assert count() == base
    sizes.append(rss())
  assert max(sizes[1:]) - sizes[0] < 20 * 2**20 + RSS_SLACK, sizes
