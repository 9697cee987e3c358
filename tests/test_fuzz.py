"""The fuzzers in CI: a fixed number of seeded, deterministic cases of each (fuzzers.py), each fuzzer in a child
process so that a crash fails this test with the case and the command that replays it instead of killing pytest.
Every case must give a result or an ordinary Python exception: no crash, no SystemError, no runaway recursion.

TINYC_FUZZ_SCALE scales the case counts (20,000 in all at 1; make test runs the suite at 0.4, 8,000 cases, and again
under AddressSanitizer + UBSan at 0.08, 1,600); `make fuzz` is the long mode (fuzz_run.py)."""
import os
import pytest
from fuzz_run import run_child

SCALE = float(os.environ.get("TINYC_FUZZ_SCALE", "1"))
CASES = {"uop": 6000, "rules": 5000, "upat": 2000, "pipeline": 4000, "pickle": 2000, "buffers": 1000}   # 20,000
SEED = 20261202

@pytest.mark.parametrize("fuzzer", list(CASES))
def test_fuzzer(fuzzer):
  n = max(1, int(CASES[fuzzer] * SCALE))
  outcome = run_child(fuzzer, n, SEED)
  assert outcome.ok, outcome.report
  assert outcome.cases == n, f"{fuzzer}: {outcome.cases} of {n} cases ran"
