"""One fuzzer in its own process, so that a crash is reported instead of killing pytest (see fuzzers.py).

  python tests/fuzz_child.py <fuzzer> <cases> <seed> <log>      run <cases> hypothesis examples, each logged to <log>
                                                                 before it runs; prints "cases: N" at the end
  python tests/fuzz_child.py --replay <fuzzer> '<case>'          run one logged case again

The exit status is 0 when every case gave a result or an ordinary exception, 1 when one met a FuzzBug (hypothesis
prints the case), and the signal's when native code crashed (the log's last line is the case)."""
import ast, faulthandler, os, resource, sys, time
faulthandler.enable()
# Some bytes make CPython itself ask for tens of GiB (a corrupt pickle's memo index): a cap on the address space turns
# that into the MemoryError it is. Not under AddressSanitizer, which reserves its shadow memory up front and returns
# NULL (MemoryError) for such allocations itself (allocator_may_return_null).
if "asan" not in os.environ.get("LD_PRELOAD", ""): resource.setrlimit(resource.RLIMIT_AS, (8 << 30, resource.RLIM_INFINITY))
from sanitizer import import_quietly
import_quietly("numpy")
import fuzzers
from hypothesis import given, settings, seed as hyp_seed, HealthCheck, Phase

def run(name, n, seed, log):
  strategy, run_case = fuzzers.FUZZERS[name]
  fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
  count = [0]
  @hyp_seed(seed)
  @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate, Phase.shrink],
            suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
  @given(strategy)
  def one(case):
    os.write(fd, (repr(case) + "\n").encode())   # unbuffered: the line is on disk before the case can crash
    count[0] += 1
    run_case(case)
  t0 = time.perf_counter()
  one()
  print(f"cases: {count[0]} in {time.perf_counter() - t0:.1f} s", flush=True)

if __name__ == "__main__":
  if sys.argv[1] == "--replay":
    fuzzers.FUZZERS[sys.argv[2]][1](ast.literal_eval(sys.argv[3]))
    print("no crash, no bug")
  else: run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
