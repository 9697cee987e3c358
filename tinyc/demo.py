"""`make demo` (python -m tinyc demo): tinyc's main job, end to end, without tinygrad.

Kernel ASTs for a matmul, a softmax (three kernels, as tinygrad's scheduler splits it), a reduction and an
elementwise chain are built by hand with tinyc's UOps, written the way tinygrad 0.12.0's scheduler writes them.
Each goes through the C pipeline (rewrite, linearize, render), is compiled by clang, run on the CPU on random
inputs and checked against numpy; the time of every stage is printed. Then a compiled runner is pickled and
run from the bytes alone, without a compiler."""
import pickle, time
import numpy as np
from tinyc import UOp, Ops, dtypes, AxisType, Opt, OptOps, KernelInfo, Device, Buffer, CompiledRunner, ProgramSpec
from tinyc import _C

def glb(i, n): return UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(n), arg=i)
def idx(n): return UOp.const(dtypes.index, n)

def matmul(n, m, k):
  """C[i, j] = sum_r A[i, r] * B[r, j]"""
  c, a, b = glb(0, n * m), glb(1, n * k), glb(2, k * m)
  i, j, r = UOp.range(idx(n), 1, AxisType.LOOP), UOp.range(idx(m), 2, AxisType.LOOP), UOp.range(idx(k), 0, AxisType.REDUCE)
  acc = (a.index(i * idx(k) + r) * b.index(r * idx(m) + j)).reduce(r, arg=Ops.ADD)
  return UOp.sink(c.index(i * idx(m) + j, ptr=True).store(acc).end(i, j))

def row_reduce(n, m, op):
  """out[i] = reduce_j x[i, j] with op (ADD or MAX)"""
  out, x = glb(0, n), glb(1, n * m)
  i, j = UOp.range(idx(n), 1, AxisType.LOOP), UOp.range(idx(m), 0, AxisType.REDUCE)
  return UOp.sink(out.index(i, ptr=True).store(x.index(i * idx(m) + j).reduce(j, arg=op)).end(i))

LOG2_E = 1.4426950408889634

def softmax(n, m):
  """three kernels: row max; row sum of exp(x - max); exp(x - max) / sum"""
  out, x, mx = glb(0, n), glb(1, n * m), glb(2, n)
  i, j = UOp.range(idx(n), 1, AxisType.LOOP), UOp.range(idx(m), 0, AxisType.REDUCE)
  shifted = lambda at: ((x.index(at) + mx.index(i) * -1.0) * LOG2_E).exp2()
  total = UOp.sink(out.index(i, ptr=True).store(shifted(i * idx(m) + j).reduce(j, arg=Ops.ADD)).end(i))
  out2, sm = glb(0, n * m), glb(3, n)
  i2, j2 = UOp.range(idx(n), 0, AxisType.LOOP), UOp.range(idx(m), 1, AxisType.LOOP)
  at = i2 * idx(m) + j2
  e = ((x.index(at) + mx.index(i2) * -1.0) * LOG2_E).exp2()
  norm = UOp.sink(out2.index(at, ptr=True).store(e * sm.index(i2).reciprocal()).end(i2, j2))
  return row_reduce(n, m, Ops.MAX), total, norm

def elementwise(n):
  """out = relu(a * b + 1) / (1 + exp(-a)) with a where on the sign of b"""
  out, a, b = glb(0, n), glb(1, n), glb(2, n)
  i = UOp.range(idx(n), 0, AxisType.LOOP)
  va, vb = a.index(i), b.index(i)
  sig = ((va * -LOG2_E).exp2() + 1.0).reciprocal()
  val = (vb < 0.5).where((va * vb + 1.0).maximum(0.0), va.sqrt()) * sig
  return UOp.sink(out.index(i, ptr=True).store(val).end(i))

STAGES = ("rewrite", "linearize", "render", "compile", "run")

def timed(times, stage, fn, *args):
  t0 = time.perf_counter(); ret = fn(*args); times[stage] = times.get(stage, 0.0) + time.perf_counter() - t0
  return ret

def compile_kernel(ast, dev, times, opts=()):
  """AST -> ProgramSpec with lib, one stage at a time (tinyc.codegen.get_program does the same in one call)"""
  ren = dev.renderer
  ast = ast.replace(arg=KernelInfo(opts_to_apply=tuple(opts)))
  sink = timed(times, "rewrite", _C.full_rewrite_to_sink, ast, ren)
  prg = timed(times, "linearize", _C.do_linearize, UOp(Ops.PROGRAM, src=(sink, UOp(Ops.DEVICE, arg=dev.device))), sink)
  src = timed(times, "render", ren.render, list(prg.src[-1].src))
  lib = timed(times, "compile", dev.compiler.compile_cached, src)
  return ProgramSpec.from_uop(UOp(Ops.PROGRAM, src=(*prg.src, UOp(Ops.SOURCE, arg=src), UOp(Ops.BINARY, arg=lib))))

def run(p, arrays, times):
  """run the program on numpy arrays (in the order of the kernel's buffers); returns buffer 0"""
  bufs = [Buffer.from_numpy(a) for a in arrays]
  times["run"] = times.get("run", 0.0) + CompiledRunner(p)(bufs, {}, True)
  return bufs[0].numpy()

def main():
  dev = Device["CPU"]
  rng = np.random.default_rng(0)
  f32 = lambda *s: rng.random(s, dtype=np.float32)
  zeros = lambda n: np.zeros(n, np.float32)
  rows = []   # (name, {stage: seconds}, result, expected)
  A, B = f32(64, 48), f32(48, 32)
  for opts in ((), (Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.UNROLL, 0, 4))):
    t = {}
    p = compile_kernel(matmul(64, 32, 48), dev, t, opts)
    rows.append((f"matmul 64x48@48x32{' +opts' if opts else ''}", t, run(p, [zeros(64 * 32), A, B], t).reshape(64, 32), A @ B))
  X, t = f32(16, 100), {}
  p = compile_kernel(row_reduce(16, 100, Ops.ADD), dev, t)
  rows.append(("row sum 16x100", t, run(p, [zeros(16), X], t), X.sum(1)))
  t = {}
  k_max, k_sum, k_norm = (compile_kernel(k, dev, t) for k in softmax(16, 100))
  mx = run(k_max, [zeros(16), X], t)
  sm = run(k_sum, [zeros(16), X, mx], t)
  ref = np.exp(X - X.max(1, keepdims=True))
  rows.append(("softmax 16x100 (3 kernels)", t, run(k_norm, [zeros(1600), X, mx, sm], t).reshape(16, 100), ref / ref.sum(1, keepdims=True)))
  a, b, t = f32(1000), f32(1000), {}
  p = compile_kernel(elementwise(1000), dev, t)
  ref = np.where(b < 0.5, np.maximum(a * b + 1, 0), np.sqrt(a)) / (1 + np.exp(-a))
  rows.append(("elementwise chain 1000", t, run(p, [zeros(1000), a, b], t), ref))

  print("tinyc demo: kernel ASTs built by hand -> C pipeline -> clang -> run on the CPU -> checked against numpy")
  print(f"  {'kernel':28s}{'max err':>10s}  " + "".join(f"{s + ' ms':>13s}" for s in STAGES))
  ok = True
  for name, t, got, want in rows:
    err = float(np.max(np.abs(got - want)))
    ok &= err < 1e-4
    print(f"  {name:28s}{err:>10.1e}  " + "".join(f"{t.get(s, 0.0) * 1e3:>13.3f}" for s in STAGES) + ("" if err < 1e-4 else "  WRONG"))
  st = _C.compile_stats()
  print(f"compile cache: {st['cache_hits']} hits, {st['cache_misses']} misses, {st['clang_runs']} clang runs "
        f"(a second `make demo` compiles nothing: the SQLite cache has the libraries)")
  # a compiled runner pickles with its machine code: the bytes alone run it, no compiler involved
  blob = pickle.dumps(CompiledRunner(p))
  before = _C.compile_stats()["compiles"]
  bufs = [Buffer.from_numpy(x) for x in (zeros(1000), a, b)]
  pickle.loads(blob)(bufs, {}, True)
  same = bool(np.allclose(bufs[0].numpy(), ref, atol=1e-4)) and _C.compile_stats()["compiles"] == before
  print(f"a pickled CompiledRunner ({len(blob)} bytes) ran from its bytes, without compiling: {same}")
  if not (ok and same): raise SystemExit("demo: a kernel gave a wrong result")

if __name__ == "__main__":
  main()
