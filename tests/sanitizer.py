"""Under the AddressSanitizer build (make test's second pass, make asan-test) leak detection is on for the whole process.
Third-party libraries keep what they allocate once while they import (NumPy's ufunc tables, for one) without a pointer
LeakSanitizer can see; they are imported here with leak detection paused, so that what it reports is tinyc's.
So is pytest's collection (conftest.py): CPython's compiler leaves one tuple unreachable while
it imports test modules. CPython's tracemalloc records are named in tests/lsan.supp."""
import ctypes, os

SANITIZED = "asan" in os.environ.get("LD_PRELOAD", "")
# ASan keeps freed blocks in its quarantine (quarantine_size_mb=16, Makefile) before reusing them, so the resident set
# of a sanitized process grows by up to that much with nothing leaked: bounds on RSS growth allow for it
RSS_SLACK = 24 * 2**20 if SANITIZED else 0
PAGE = os.sysconf("SC_PAGE_SIZE")

def rss() -> int:
  """the process's resident set, in bytes"""
  with open("/proc/self/statm") as f: return int(f.read().split()[1]) * PAGE

import contextlib

@contextlib.contextmanager
def leaks_unchecked():
  """allocations made inside are left out of leak detection (a no-op without the sanitizer)"""
  if not SANITIZED:
    yield
    return
  lsan = ctypes.CDLL(None)   # the preloaded runtime's __lsan_disable / __lsan_enable
  lsan.__lsan_disable()
  try: yield
  finally: lsan.__lsan_enable()

def import_quietly(*modules: str):
  with leaks_unchecked():
    for m in modules: __import__(m)
