"""`make demo`: build a matmul kernel AST by hand with tinyc, show it with the bounds of its index
expressions, check it against the same AST built by tinygrad 0.12.0, and time UOp creation in both.

(The compile-and-run pipeline arrives with later issues; this is the UOp core's part of the job.)
"""
import time
from tinyc import UOp, Ops, dtypes, AxisType, KernelInfo

N = 16

def matmul_ast(U, O, dt, AT, KI, n=N):
  """C[i, j] = sum_k A[i, k] * B[k, j], written the way tinygrad 0.12.0's scheduler writes kernel ASTs."""
  c, a, b = (U(O.DEFINE_GLOBAL, dt.float.ptr(n * n), arg=i) for i in range(3))
  size = U.const(dt.index, n)
  i, j, k = U.range(size, 1, AT.LOOP), U.range(size, 2, AT.LOOP), U.range(size, 0, AT.REDUCE)
  a_k = a.index(i * size + k)
  b_k = b.index(k * size + j)
  acc = (a_k * b_k).reduce(k, arg=O.ADD)
  store = c.index(i * size + j, ptr=True).store(acc)
  return U.sink(store.end(i, j), arg=KI(name=f"matmul{n}", axis_types=(AT.LOOP, AT.LOOP, AT.REDUCE)))

def show_index_bounds(ast):
  print("index expressions and their bounds (vmin..vmax):")
  for u in ast.toposort():
    if u.op is Ops.INDEX:
      idx = u.src[1]
      print(f"  buffer {u.src[0].arg}: {idx.op} over {len([x for x in idx.toposort() if x.op is Ops.RANGE])} ranges"
            f"  -> [{idx.vmin}, {idx.vmax}]  (buffer holds {u.src[0].dtype.size})")

def time_per_call(fn, n):
  best = float("inf")
  for _ in range(5):
    t0 = time.perf_counter(); fn(n); best = min(best, time.perf_counter() - t0)
  return best / n

def creation_speed():
  try:
    from tinygrad.uop.ops import UOp as TgUOp, AxisType as TgAxisType, KernelInfo as TgKernelInfo
    from tinygrad.uop import Ops as TgOps
    from tinygrad.dtype import dtypes as tg_dtypes
  except ImportError:
    print("tinygrad is not installed: skipping the comparison (make demo installs it)")
    return
  from tinyc.tinygrad import from_tinygrad
  tg_ast = matmul_ast(TgUOp, TgOps, tg_dtypes, TgAxisType, TgKernelInfo)
  tc_ast = matmul_ast(UOp, Ops, dtypes, AxisType, KernelInfo)
  same = from_tinygrad(tg_ast) is tc_ast and repr(tg_ast) == repr(tc_ast) and tg_ast.key == tc_ast.key
  print(f"same AST as tinygrad 0.12.0 builds (identity through the bridge, repr, key): {same}")
  if not same: raise SystemExit("demo: tinyc and tinygrad disagree on the matmul AST")
  print("UOp creation, per call (best of 5):")
  for label, tc, tg in (("new nodes: a chain x = x + 1", UOp, TgUOp),):
    def chain(U, dt):
      def run(n):
        x = U.variable("x", 0, 10)
        for _ in range(n): x = x + 1
      return run
    t_tc, t_tg = time_per_call(chain(tc, dtypes), 2000), time_per_call(chain(tg, tg_dtypes), 2000)
    print(f"  {label:34s} tinyc {t_tc*1e9:8.0f} ns   tinygrad {t_tg*1e9:8.0f} ns   {t_tg/t_tc:6.1f}x")
  t_tc = time_per_call(lambda n: [matmul_ast(UOp, Ops, dtypes, AxisType, KernelInfo, 8 + i) for i in range(n)], 200)
  t_tg = time_per_call(lambda n: [matmul_ast(TgUOp, TgOps, tg_dtypes, TgAxisType, TgKernelInfo, 8 + i) for i in range(n)], 200)
  print(f"  {'a whole matmul AST (new sizes)':34s} tinyc {t_tc*1e6:8.1f} us   tinygrad {t_tg*1e6:8.1f} us   {t_tg/t_tc:6.1f}x")

def simplify_speed():
  """simplify() of index expressions like the ones codegen folds, in both libraries: same result, and the time"""
  try:
    from tinygrad.uop.ops import UOp as TgUOp
    from tinygrad.dtype import dtypes as tg_dtypes
  except ImportError: return
  from tinyc.tinygrad import from_tinygrad
  def exprs(U, dt):
    r = [U.range(U.const(dt.index, n), i) for i, n in enumerate((16, 4, 8))]
    g = U.variable("gidx", 0, 31)
    return [((g * 16 + r[0]) % 16 + (g * 16 + r[0]) // 16 * 16) * 4 + r[1], (r[0] * 4 + r[1]) // 4 + (r[2] * 2) % 16 // 2,
            ((r[0] + 1) * 8 + r[2]) // 8 - 1, ((g < 16) & (r[1] < 4)).where(g * 64 + r[0] * 4 + r[1], 0)]
  tc, tg = exprs(UOp, dtypes), exprs(TgUOp, tg_dtypes)
  same = all(from_tinygrad(t.simplify()) is c.simplify() for t, c in zip(tg, tc))
  t_tc = time_per_call(lambda n: [e.simplify() for _ in range(n) for e in exprs(UOp, dtypes)], 50)
  t_tg = time_per_call(lambda n: [e.simplify() for _ in range(n) for e in exprs(TgUOp, tg_dtypes)], 50)
  print(f"simplify() of 4 index expressions (built fresh each time): same result as tinygrad: {same}")
  print(f"  {'build + simplify':34s} tinyc {t_tc*1e6:8.1f} us   tinygrad {t_tg*1e6:8.1f} us   {t_tg/t_tc:6.1f}x")
  for t, c in zip(tg, tc): print(f"  {t.render(simplify=False)[:60]:60s} -> {c.simplify().render(simplify=False)}")

def main():
  t0 = time.perf_counter()
  ast = matmul_ast(UOp, Ops, dtypes, AxisType, KernelInfo)
  t_build = time.perf_counter() - t0
  print(ast)
  print(f"\n{len(ast.toposort())} nodes, built in {t_build*1e6:.0f} us; key {ast.key.hex()[:16]}...")
  show_index_bounds(ast)
  creation_speed()
  simplify_speed()

if __name__ == "__main__":
  main()
