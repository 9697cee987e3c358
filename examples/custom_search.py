"""A search of your own in ten lines, on tinyc's building blocks: random search over tinygrad's actions, timed by a
timer of your own (here: the median of five runs, where BEAM takes the best of three).

  python examples/custom_search.py [--size 128] [--tries 40] [--seed 0]
"""
import argparse, pathlib, random, statistics, sys
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import tinyc, tinyc.codegen
from tinyc import search, KernelOptError
from tinyc.demo import matmul

def median_timer(p, rawbufs):
  return statistics.median(search.time_program(p, rawbufs, cnt=5))

def random_search(k, rawbufs, tries, rng, depth=4):
  """apply up to `depth` random actions to copies of k; keep the fastest program"""
  best, best_t = k, median_timer(tinyc.codegen.get_program(k.copy().get_optimized_ast(name_override="test"), k.ren), rawbufs)
  for _ in range(tries):
    s = k.copy()
    for a in rng.sample(search.actions, depth):
      try: s.apply_opt(a)
      except KernelOptError: pass   # an action that does not apply is skipped, as BEAM skips it
    t = median_timer(tinyc.codegen.get_program(s.copy().get_optimized_ast(name_override="test"), s.ren), rawbufs)
    if t < best_t: best, best_t = s, t
  return best, best_t

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--size", type=int, default=128)
  ap.add_argument("--tries", type=int, default=40)
  ap.add_argument("--seed", type=int, default=0)
  args = ap.parse_args()
  ast, ren = matmul(args.size, args.size, args.size), tinyc.Device["CPU"].renderer
  k = tinyc.Scheduler(ast, ren)
  k.convert_loop_to_global()
  bufs = search.bufs_from_ast(ast, "CPU")
  for b in bufs: b.ensure_allocated()
  best, t = random_search(k, bufs, args.tries, random.Random(args.seed))
  print(f"random search, {args.tries} tries: {t*1e3:.3f} ms with {best.applied_opts}")
  beam = search.beam_search(k, bufs, 2, disable_cache=True, timer=median_timer)
  pb = tinyc.codegen.get_program(ast, ren, opts=beam.applied_opts)
  print(f"BEAM=2 with the same timer:  {median_timer(pb, bufs)*1e3:.3f} ms with {beam.applied_opts}")

if __name__ == "__main__":
  main()
