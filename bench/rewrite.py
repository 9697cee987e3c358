"""The rewrite engine: tinyc against tinygrad 0.12.0, side by side in one process. Prints times and ratios.

  python bench/rewrite.py [--quick]

1. graph_rewrite(x, symbolic) on large random index expressions (tinyc's rules are native C).
2. A Python-callback PatternMatcher (the same rules, Python in both) on a 10k-node graph.
3. simplify() per expression, on many small random expressions.
Each expression is built fresh in both libraries before it is timed, so no rewrite result is cached; rows 1 and 3 take
the best of 3 fresh builds, each with its own variable names (the machine's speed drifts between runs).
"""
import gc, random, sys, time, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import tinyc
from tinyc.tinygrad import from_tinygrad
import tinygrad.uop.ops as tg_ops
from tinygrad.uop.symbolic import symbolic as tg_symbolic
from tinygrad.dtype import dtypes as tg_dtypes

QUICK = "--quick" in sys.argv
LIBS = {"tinyc": (tinyc.UOp, tinyc.dtypes, tinyc.UPat, tinyc.PatternMatcher, tinyc.graph_rewrite, tinyc.Ops),
        "tinygrad": (tg_ops.UOp, tg_dtypes, tg_ops.UPat, tg_ops.PatternMatcher, tg_ops.graph_rewrite, tg_ops.Ops)}

def random_expr(rng, U, dt, size, salt, keep_all=False):
  """An index expression of about `size` operations over bounded variables and ranges."""
  leaves = [U.variable(f"v{salt}_{i}", rng.randint(-4, 0), rng.randint(1, 64)) for i in range(6)]
  leaves += [U.range(rng.randint(2, 32), i) for i in range(4)]
  pool = list(leaves)
  for _ in range(size):
    a, b = rng.choice(pool), rng.choice(pool)
    k = rng.random()
    if k < 0.3: x = a + b
    elif k < 0.5: x = a * rng.randint(-3, 8)
    elif k < 0.62: x = a // rng.randint(1, 9)
    elif k < 0.74: x = a % rng.randint(1, 9)
    elif k < 0.84: x = a.maximum(b)
    elif k < 0.92: x = (a < b).where(a, b + 1)
    else: x = a + rng.randint(-5, 5)
    pool.append(x)
  return U.sink(*(pool if keep_all else pool[-8:]))

def timed(fn, repeat=1):
  """best wall time of fn() over `repeat` runs, and its last result"""
  best, out = float("inf"), None
  for _ in range(repeat):
    gc.collect(); gc.disable()
    try:
      del out
      t0 = time.perf_counter(); out = fn(); best = min(best, time.perf_counter() - t0)
    finally: gc.enable()
  return best, out

def fresh_best(build, run, repeat):
  """best time of run(build(i)) over i < `repeat`, each build with its own variable names: both libraries hash-cons and
  tinygrad keeps some answers in functools caches, so a graph built again would be the graph already rewritten"""
  best = float("inf")
  for i in range(repeat):
    x = build(i)
    t, out = timed(lambda: run(x))
    best = min(best, t)
    del x
    if i < repeat - 1: del out
  return best, out

def bench_symbolic(n_exprs, size, repeat):
  total = {"tinyc": 0.0, "tinygrad": 0.0}
  same = 0
  for k in range(n_exprs):
    res = {}
    for name, (U, dt, *_rest, graph_rewrite, _ops) in LIBS.items():
      pm = tg_symbolic if name == "tinygrad" else tinyc.uop.symbolic.symbolic
      t, res[name] = fresh_best(lambda i: random_expr(random.Random(k), U, dt, size, salt=f"s{k}_{i}"), lambda x: graph_rewrite(x, pm), repeat)
      total[name] += t
    same += from_tinygrad(res["tinygrad"]) is res["tinyc"]
  return total, same

def python_rules(UPat, PatternMatcher, Ops):
  return PatternMatcher([
    (UPat.var("x") + 0, lambda x: x),
    (UPat.var("x") * 1, lambda x: x),
    (UPat(Ops.ADD, src=(UPat.cvar("a", vec=False), UPat.cvar("b", vec=False))), lambda a, b: a.const_like(a.arg + b.arg)),
    ((UPat.var("x") + UPat.cvar("c1")) + UPat.cvar("c2"), lambda x, c1, c2: x + (c1.arg + c2.arg)),
    (UPat(Ops.MAX, src=(UPat.var("x"), UPat.var("x"))), lambda x: x),
    (UPat.var("x") // 1, lambda x: x),
  ])

def bench_python_rules(size):
  times, outs = {}, {}
  for name, (U, dt, UPat, PatternMatcher, graph_rewrite, Ops) in LIBS.items():
    pm = python_rules(UPat, PatternMatcher, Ops)
    x = random_expr(random.Random(7), U, dt, size, salt="py", keep_all=True)
    nodes = len(x.toposort())
    times[name], outs[name] = timed(lambda: graph_rewrite(x, pm), repeat=3)
  return times, nodes, from_tinygrad(outs["tinygrad"]) is outs["tinyc"]

def bench_simplify(n, repeat):
  times = {}
  for name, (U, dt, *_rest) in LIBS.items():
    times[name], _ = fresh_best(lambda i: [random_expr(random.Random(1000 + k), U, dt, 6, salt=f"q{k}_{i}") for k in range(n)],
                                lambda exprs: [e.simplify() for e in exprs], repeat)
  return times

def main():
  import tinyc.uop.symbolic  # noqa: F401  (the native rule sets; an ImportError names a missing one)
  n_exprs, size, big, repeat = (5, 300, 1000, 1) if QUICK else (20, 1500, 5000, 3)
  print(f"{'benchmark':58s} {'tinyc':>11s} {'tinygrad':>11s} {'ratio':>8s}")
  total, same = bench_symbolic(n_exprs, size, repeat)
  print(f"{f'graph_rewrite(x, symbolic), {n_exprs} exprs of {size} ops':58s} {total['tinyc']*1e3:9.2f}ms "
        f"{total['tinygrad']*1e3:9.2f}ms {total['tinygrad']/total['tinyc']:7.1f}x   (same result: {same}/{n_exprs})")
  t, nodes, ok = bench_python_rules(big)
  print(f"{f'Python-callback PatternMatcher, {nodes}-node graph':58s} {t['tinyc']*1e3:9.2f}ms {t['tinygrad']*1e3:9.2f}ms "
        f"{t['tinygrad']/t['tinyc']:7.1f}x   (same result: {ok})")
  n = 100 if QUICK else 500
  t = bench_simplify(n, repeat)
  print(f"{f'simplify(), per expression ({n} small exprs)':58s} {t['tinyc']/n*1e6:9.1f}us {t['tinygrad']/n*1e6:9.1f}us "
        f"{t['tinygrad']/t['tinyc']:7.1f}x")

if __name__ == "__main__":
  main()
