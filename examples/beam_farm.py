"""A compile farm for BEAM: the candidates of every kernel of a small model are built (codegen and compile) on a
dask.distributed cluster, and this process times them. Workers return ProgramSpecs with their compiled lib, which
unpickle here without compiling again.

  python examples/beam_farm.py                      # a LocalCluster of 2 workers on this machine
  python examples/beam_farm.py tcp://host:8786      # an existing cluster's scheduler
  python examples/beam_farm.py --workers 4 --amt 2 --size 64
"""
import argparse, pathlib, sys, time
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import numpy as np
import tinyc, tinyc.codegen
from tinyc import search
from tinyc import Ops
from tinyc.demo import matmul, row_reduce, elementwise, run

def model(n):
  """the kernels of a tiny MLP layer: h = x @ w, then a row sum and an elementwise chain on it"""
  return [("matmul", matmul(n, n, n)), ("row sum", row_reduce(n, n, Ops.ADD)), ("elementwise", elementwise(n * n))]

def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("scheduler", nargs="?", help="a dask scheduler address; default: start a LocalCluster")
  ap.add_argument("--workers", type=int, default=2)
  ap.add_argument("--amt", type=int, default=2)
  ap.add_argument("--size", type=int, default=32)
  args = ap.parse_args()
  from dask.distributed import Client, LocalCluster
  cluster = None if args.scheduler else LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                                     dashboard_address=None)
  ren = tinyc.Device["CPU"].renderer
  with Client(args.scheduler or cluster) as client:
    print(f"cluster: {len(client.scheduler_info()['workers'])} workers")
    for name, ast in model(args.size):
      k = tinyc.Scheduler(ast, ren)
      k.convert_loop_to_global()
      st = time.perf_counter()
      best = search.beam_search(k, search.bufs_from_ast(ast, "CPU"), args.amt, disable_cache=True, executor=client)
      stats = search.beam_stats()
      p = tinyc.codegen.get_program(ast, ren, opts=best.applied_opts)
      print(f"{name:12s} {time.perf_counter() - st:6.2f} s, {stats['built']} built on the cluster, {stats['timed']} timed here: "
            f"{best.applied_opts}")
      check(name, ast, p, args.size)
  if cluster is not None: cluster.close()

def check(name, ast, p, n):
  """run the chosen program against numpy"""
  rng = np.random.default_rng(0)
  bufs = search.bufs_from_ast(ast, "CPU")
  ins = [rng.standard_normal(b.size, dtype=np.float32) for b in bufs[1:]]
  out = run(p, [np.zeros(bufs[0].size, np.float32), *ins], {})
  want = {"matmul": lambda: (ins[0].reshape(n, n) @ ins[1].reshape(n, n)).ravel(),
          "row sum": lambda: ins[0].reshape(n, n).sum(axis=1)}.get(name)
  if want is not None:
    err = float(np.abs(out.ravel() - want()).max())
    assert err < 1e-3, f"{name}: max abs error {err}"
    print(f"{'':12s} checked against numpy: max abs error {err:.2e}")

if __name__ == "__main__":
  main()
