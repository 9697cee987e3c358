"""Under the AddressSanitizer build (make test's second pass, make asan-test) leak detection is on for the whole process.
Third-party libraries keep what they allocate once while they import (NumPy's ufunc tables, for one) without a pointer
LeakSanitizer can see; they are imported here with leak detection paused, so that what it reports is tinyc's."""
import ctypes, os

def import_quietly(*modules: str):
  if "asan" not in os.environ.get("LD_PRELOAD", ""):
    for m in modules: __import__(m)
    return
  lsan = ctypes.CDLL(None)   # the preloaded runtime's __lsan_disable / __lsan_enable
  lsan.__lsan_disable()
  try:
    for m in modules: __import__(m)
  finally: lsan.__lsan_enable()
