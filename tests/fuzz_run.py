"""Runs the fuzzers of fuzzers.py in child processes and reports what they found (see fuzz_child.py).

  python tests/fuzz_run.py [--cases N] [--seconds S] [--chunk C] [fuzzer ...]     the long mode behind `make fuzz`

runs chunks of C cases with fresh seeds, round robin over the fuzzers, until N cases ran or S seconds passed, goes on
after a crash, and prints the cases run, the crashes and a reproducer for each. test_fuzz.py runs a fixed number of
seeded cases of each fuzzer in CI through the same run_child."""
import argparse, dataclasses, os, pathlib, re, subprocess, sys, tempfile, time

TESTS = pathlib.Path(__file__).resolve().parent
FUZZERS = ["uop", "rules", "upat", "pipeline", "pickle", "buffers"]

@dataclasses.dataclass
class Outcome:
  fuzzer: str
  seed: int
  cases: int            # cases the child started (the log's lines)
  ok: bool
  report: str           # what went wrong, with the case and the command that replays it; "" when ok

def child_env() -> dict:
  """the environment of a child: it imports the tinyc this process imported (the normal or the sanitizer build)"""
  import tinyc
  root = str(pathlib.Path(tinyc.__file__).resolve().parent.parent)
  return {**os.environ, "PYTHONPATH": os.pathsep.join([root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}

def run_child(fuzzer: str, cases: int, seed: int, timeout: float = 1800) -> Outcome:
  """run `cases` cases of one fuzzer with one seed in a child process"""
  with tempfile.TemporaryDirectory(prefix="tinyc-fuzz-") as tmp:
    log = os.path.join(tmp, "cases.log")
    cmd = [sys.executable, str(TESTS / "fuzz_child.py"), fuzzer, str(cases), str(seed), log]
    try:
      res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env())
      rc, out = res.returncode, (res.stdout + res.stderr)[-6000:]
    except subprocess.TimeoutExpired:
      rc, out = None, f"(no result after {timeout} s: a case hangs)"
    lines = open(log).read().splitlines() if os.path.exists(log) else []
  if rc == 0: return Outcome(fuzzer, seed, len(lines), True, "")
  if rc == 1: how = "a case raised an exception that means a bug in native code (hypothesis's falsifying case is below)"
  elif rc is None: how = "the child hung"
  else: how = f"the child died (exit status {rc}{', signal ' + str(-rc) if rc < 0 else ''})"
  last = lines[-1] if lines else "(no case started)"
  report = (f"fuzzer {fuzzer!r}, seed {seed}: {how} after {len(lines)} cases\nlast case: {last}\n"
            f"replay: {sys.executable} {TESTS / 'fuzz_child.py'} --replay {fuzzer} \"{last}\"\n--- child output ---\n{out}")
  return Outcome(fuzzer, seed, len(lines), False, report)

def failure_site(report: str) -> str:
  """where a failure happened, to count distinct sites: the innermost tinyc C frame of a sanitizer's report, else the
  innermost Python frame of the child's traceback"""
  native = re.findall(r"#\d+ 0x[0-9a-f]+ in (\S+) \S*(csrc/[^\s:]+:\d+)", report)
  if native: return f"{native[0][1]} {native[0][0]}"
  frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', report)
  return f"{pathlib.Path(frames[0][0]).name}:{frames[0][1]} {frames[0][2]}" if frames else report.splitlines()[0]

def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--cases", type=int, default=1_000_000)
  ap.add_argument("--seconds", type=float, default=float("inf"))
  ap.add_argument("--chunk", type=int, default=5000)
  ap.add_argument("fuzzers", nargs="*", default=FUZZERS)
  args = ap.parse_args()
  t0, total, seed, failures = time.time(), 0, int(time.time()), []
  while total < args.cases and time.time() - t0 < args.seconds:
    for f in args.fuzzers:
      o = run_child(f, min(args.chunk, args.cases - total), seed)
      total += o.cases
      print(f"{f:9s} seed {seed}: {o.cases} cases, {'ok' if o.ok else 'FAILED'}   ({total} in all, {time.time() - t0:.0f} s)", flush=True)
      if not o.ok: failures.append(o)
      if total >= args.cases or time.time() - t0 >= args.seconds: break
    seed += 1
  print(f"\n{total} cases run in {time.time() - t0:.0f} s, {len(failures)} failed chunks, "
        f"{len({failure_site(o.report) for o in failures})} distinct failure sites")
  for o in failures: print("\n" + o.report)
  sys.exit(1 if failures else 0)

if __name__ == "__main__": main()
