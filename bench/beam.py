"""BEAM search: tinyc against tinygrad 0.12.0 on the CPU, side by side in one process, caches off.

  python bench/beam.py [--n 512] [--amt 2] [--parallel N]

Both search BEAM=amt over the same kernel (an n x n x n float32 matmul, tinygrad's AST, converted for tinyc). For each:
search wall time, split into codegen, compile and timing (tinyc: codegen in this thread while the compile threads run,
then the wait for the rest of the compiles; tinygrad: its serial _try_compile, codegen and compile, and _time_program),
the candidates built and timed, and the found kernel's run time and GFLOP/s against numpy's matmul. The found kernels
are both rendered and run by tinyc (the sources are byte-identical to tinygrad's), so the run times compare the opts.
"""
import argparse, os, pathlib, sys, time
os.environ["CACHELEVEL"] = "0"          # no compile cache and no BEAM cache, in both (read at import)
os.environ["IGNORE_BEAM_CACHE"] = "1"
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]
import tinyc, tinyc.codegen
from tinyc import search
from tinyc.tinygrad import from_tinygrad, _to_tc_arg
from tinygrad import Tensor
from tinygrad.device import Device as TgDevice
import tinygrad.codegen.opt.search as tg_search
from tinygrad.codegen.opt.postrange import Scheduler as TgScheduler, bufs_from_ast as tg_bufs_from_ast

def matmul_ast(n):
  a, b = Tensor.empty(n, n), Tensor.empty(n, n)
  return (a @ b).schedule()[-1].ast

def tinygrad_search(ast, amt):
  spent = {"build": 0.0, "compile": 0.0, "timing": 0.0, "built": 0, "timed": 0}
  try_compile, time_program = tg_search._try_compile, tg_search._time_program
  def timed_compile(x, compiler):
    st = time.perf_counter()
    i, ret = try_compile(x, compiler)
    spent["build"] += time.perf_counter() - st
    if ret is not None: spent["built"] += 1
    return i, ret
  def timed_run(*args, **kw):
    st = time.perf_counter()
    try: return time_program(*args, **kw)
    finally: spent["timing"], spent["timed"] = spent["timing"] + time.perf_counter() - st, spent["timed"] + 1
  # a renderer with a compiler (ClangJITRenderer): get_program compiles (compile_cached) inside _try_compile; one without
  # (LLVMRenderer, CPU_LLVM=1): _try_compile calls the device compiler's compile
  dev = TgDevice["CPU"]
  compiler, method = (dev.renderer.compiler, "compile_cached") if dev.renderer.compiler is not None else (dev.compiler, "compile")
  compile_fn = getattr(compiler, method)
  def timed_cc(src):
    st = time.perf_counter()
    try: return compile_fn(src)
    finally: spent["compile"] += time.perf_counter() - st
  setattr(compiler, method, timed_cc)
  tg_search._try_compile, tg_search._time_program = timed_compile, timed_run
  try:
    k = TgScheduler(ast, TgDevice["CPU"].renderer)
    k.convert_loop_to_global()
    st = time.perf_counter()
    best = tg_search.beam_search(k, tg_bufs_from_ast(ast, "CPU"), amt, disable_cache=True)
    spent["seconds"] = time.perf_counter() - st
  finally:
    tg_search._try_compile, tg_search._time_program = try_compile, time_program
    delattr(compiler, method)
  spent["codegen"] = spent["build"] - spent["compile"]
  return _to_tc_arg(tuple(best.applied_opts)), spent

def tinyc_search(ast, amt):
  k = tinyc.Scheduler(ast, tinyc.Device["CPU"].renderer)
  k.convert_loop_to_global()
  st = time.perf_counter()
  best = search.beam_search(k, search.bufs_from_ast(ast, "CPU"), amt, disable_cache=True)
  wall = time.perf_counter() - st
  return tuple(best.applied_opts), {**search.beam_stats(), "seconds": wall}

def run_time(ast, opts, reps=20):
  p = tinyc.codegen.get_program(ast, tinyc.Device["CPU"].renderer, opts=list(opts))
  bufs = search.bufs_from_ast(ast, "CPU")
  for b in bufs: b.ensure_allocated()
  return min(min(search.time_program(p, bufs, cnt=reps, allow_test_size=False)) for _ in range(3))

NUMPY_TIME = """
import sys, time, numpy as np
n = int(sys.argv[1])
a, b = np.random.rand(n, n).astype(np.float32), np.random.rand(n, n).astype(np.float32)
best = float("inf")
for _ in range(20):
  st = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - st)
print(best)
"""

def numpy_time(n):
  """numpy's matmul, best of its default BLAS threads and one thread (BLAS's threads can oversubscribe a small machine)"""
  import subprocess
  runs = [subprocess.run([sys.executable, "-c", NUMPY_TIME, str(n)], env={**os.environ, **env}, capture_output=True, text=True,
                         check=True).stdout for env in ({}, {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})]
  return min(float(r) for r in runs)

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--n", type=int, default=512)
  ap.add_argument("--amt", type=int, default=2)
  ap.add_argument("--parallel", type=int, default=None, help="tinyc's compile threads (PARALLEL; default: the cores)")
  args = ap.parse_args()
  if args.parallel is not None: os.environ["PARALLEL"] = str(args.parallel)
  tg_ast = matmul_ast(args.n)
  tc_ast = from_tinygrad(tg_ast)
  print(f"BEAM={args.amt} on a {args.n}x{args.n}x{args.n} float32 matmul, CPU, caches off, {os.cpu_count()} cores, "
        f"tinyc PARALLEL={os.environ.get('PARALLEL', os.cpu_count())}, tinygrad serial (its CPU default)")
  tg_opts, tg = tinygrad_search(tg_ast, args.amt)
  tc_opts, tc = tinyc_search(tc_ast, args.amt)
  flops = 2 * args.n ** 3
  hand = tuple(tinyc.hand_coded_optimizations(tinyc.Scheduler(tc_ast, tinyc.Device["CPU"].renderer)).applied_opts)
  t_tg, t_tc, t_hand, t_np = run_time(tc_ast, tg_opts), run_time(tc_ast, tc_opts), run_time(tc_ast, hand), numpy_time(args.n)
  print(f"{'':10s} {'search s':>9s} {'codegen':>8s} {'compile':>8s} {'wait':>8s} {'timing':>8s} {'built':>6s} {'timed':>6s} "
        f"{'kernel ms':>10s} {'GFLOP/s':>8s}")
  print(f"{'tinygrad':10s} {tg['seconds']:9.2f} {tg['codegen']:8.2f} {tg['compile']:8.2f} {'-':>8s} {tg['timing']:8.2f} "
        f"{tg['built']:6d} {tg['timed']:6d} {t_tg*1e3:10.3f} {flops/t_tg/1e9:8.1f}")
  print(f"{'tinyc':10s} {tc['seconds']:9.2f} {tc['codegen']:8.2f} {tc['compile']:8.2f} {tc['build_wait']:8.2f} {tc['timing']:8.2f} "
        f"{tc['built']:6d} {tc['timed']:6d} {t_tc*1e3:10.3f} {flops/t_tc/1e9:8.1f}")
  print(f"{'heuristic':10s} {'':9s} {'':8s} {'':8s} {'':8s} {'':8s} {'':6s} {'':6s} {t_hand*1e3:10.3f} {flops/t_hand/1e9:8.1f}")
  print(f"{'numpy':10s} {'':9s} {'':8s} {'':8s} {'':8s} {'':8s} {'':6s} {'':6s} {t_np*1e3:10.3f} {flops/t_np/1e9:8.1f}")
  print(f"search: tinyc {tg['seconds']/tc['seconds']:.1f}x faster than tinygrad; found kernel: tinyc's runs in "
        f"{t_tc/t_tg:.2f}x tinygrad's time (compilers: tinyc {type(tinyc.Device['CPU'].compiler).__name__}, "
        f"tinygrad {type(TgDevice['CPU'].compiler).__name__}); against the hand-coded heuristics: {t_tc/t_hand:.2f}x their time")
  print(f"opts  tinygrad {list(tg_opts)}\n      tinyc    {list(tc_opts)}\n      heuristic {list(hand)}")

if __name__ == "__main__":
  main()
