"""UOp core: tinyc against tinygrad 0.12.0, side by side in one process. Prints times and ratios.

  python bench/uop.py [--quick]

Measures: creating new nodes, creating an existing node (a cache hit), toposort of a 4000-node graph,
`key` and `vmin/vmax` on fresh graphs (both libraries cache them per node), and bytes per node.
"""
import gc, random, sys, time, tracemalloc, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import tinyc
from tinygrad.uop.ops import UOp as TgUOp
from tinygrad.uop import Ops as TgOps
from tinygrad.dtype import dtypes as tg_dtypes

LIBS = {"tinyc": (tinyc.UOp, tinyc.Ops, tinyc.dtypes), "tinygrad": (TgUOp, TgOps, tg_dtypes)}
QUICK = "--quick" in sys.argv

def best_of(fn, repeat=5):
  """Best wall time of fn() over a few runs (fn may return a value to keep alive until timing ends)."""
  best = float("inf")
  gc.collect()
  for _ in range(repeat):
    t0 = time.perf_counter(); keep = fn(); t1 = time.perf_counter()
    del keep
    best = min(best, t1 - t0)
  return best

def index_graph(lib, n, tag=""):
  """A kernel-like index expression DAG of n expression nodes: ranges, strides, adds, mods, divs, maxes.
  Each node combines random earlier ones, so the graph is wide (tinygrad's recursive `key` stays in its limit)."""
  U, O, dt = lib
  rng = random.Random(0)
  pool = [U.range(U.const(dt.index, 16 + i), i) for i in range(8)] + [U.variable("n" + tag, 1, 1024)]
  nodes = []
  for i in range(n):
    a, b = rng.choice(pool[-64:]), rng.choice(pool)
    k = i % 4
    x = a * (i % 7 + 2) + b if k == 0 else (a + b) % (i % 13 + 2) if k == 1 else (a // (i % 5 + 2)).maximum(b) if k == 2 else a + i
    pool.append(x)
    nodes.append(x)
  return U.sink(*nodes[-16:]), nodes

def bench_create(lib, n, reps=50):
  """Per node: a chain of n new nodes made and dropped (kernel-sized, so it stays in cache), then the
  same chain made again while alive (every node a cache hit); once with UOp(...) and once with operators."""
  U, O, dt = lib
  ADD, index, c = O.ADD, dt.index, U.const(dt.index, 1)
  def ctor():
    x = U.variable("a", 0, 10)
    for _ in range(n): x = U(ADD, index, (x, c))
    return x
  def ops():
    x = U.variable("a", 0, 10)
    for _ in range(n): x = x + 1
    return x
  out = []
  for make in (ctor, ops):
    t_new = min(best_of(make, reps) for _ in range(3))
    keep = make()
    t_hit = min(best_of(make, reps) for _ in range(3))
    del keep
    out += [t_new / n, t_hit / n]
  return out

def bench_toposort(lib, n):
  sink, nodes = index_graph(lib, n)
  size = len(sink.toposort())
  return best_of(lambda: sink.toposort()), size

def bench_fresh(lib, n, measure, reps=5):
  """Time `measure(sink)` on graphs built fresh each time (cached properties start empty)."""
  best = float("inf")
  for k in range(reps):
    sink, nodes = index_graph(lib, n, tag=f"_{measure.__name__}{k}")
    gc.collect()
    t0 = time.perf_counter(); measure(sink, nodes); best = min(best, time.perf_counter() - t0)
  return best

def toposort(sink, nodes): return sink.toposort()
def keys(sink, nodes): return sink.key
def bounds(sink, nodes): return [(x.vmin, x.vmax) for x in nodes]

def bytes_per_node(lib, n=100_000):
  U, O, dt = lib
  c = U.const(dt.index, 1)
  out = [None] * n
  gc.collect(); tracemalloc.start()
  before = tracemalloc.get_traced_memory()[0]
  x = U.variable("mem", 0, 10)
  for i in range(n):
    x = U(O.ADD, dt.index, (x, c))
    out[i] = x
  after = tracemalloc.get_traced_memory()[0]
  tracemalloc.stop()
  return (after - before) / n

def main():
  n_create, n_graph = (2000, 1000) if QUICK else (2000, 4000)
  rows = []
  res = {name: bench_create(lib, n_create) for name, lib in LIBS.items()}
  for i, label in enumerate(("UOp(...), new node", "UOp(...), cache hit", "x + 1, new node", "x + 1, cache hit")):
    rows.append((f"creation: {label}", res["tinyc"][i], res["tinygrad"][i], "us/node"))
  topo = {name: bench_toposort(lib, n_graph) for name, lib in LIBS.items()}
  size = topo["tinyc"][1]
  for label, fn in (("toposort, first call", toposort), ("key", keys), ("vmin/vmax of every node", bounds)):
    t = {name: bench_fresh(lib, n_graph, fn) for name, lib in LIBS.items()}
    rows.append((f"{label}, fresh {size}-node graph", t["tinyc"], t["tinygrad"], "us"))
  rows.append((f"toposort, again (tinyc caches the slice)", topo["tinyc"][0], topo["tinygrad"][0], "us"))
  print(f"{'benchmark':50s} {'tinyc':>12s} {'tinygrad':>12s} {'ratio':>8s}")
  for label, a, b, unit in rows:
    print(f"{label:50s} {a*1e6:10.3f}{unit[:2]:>2s} {b*1e6:10.3f}{unit[:2]:>2s} {b/a:7.1f}x")
  mem = {name: bytes_per_node(lib) for name, lib in LIBS.items()}
  print(f"{'bytes per node (ADD with 2 sources, incl. table)':50s} {mem['tinyc']:10.1f} B {mem['tinygrad']:10.1f} B {mem['tinygrad']/mem['tinyc']:7.1f}x")

if __name__ == "__main__":
  main()
