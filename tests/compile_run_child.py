"""What test_compile_run.py runs in spawned processes. Kept apart from the test module so that a child imports only
tinyc (not tinygrad, the corpus or pytest): a child starts fast, and anything it compiles is tinyc's doing."""
import os, pickle
import tinyc
from tinyc.codegen import get_program

def run_pickled(spec_blob: bytes, runner_blob: bytes, inits: list):
  """load a pickled ProgramSpec (through a new CompiledRunner) and a pickled CompiledRunner, run both on the inputs
  [(bytes, tinyc dtype)]; their buffers after the run, the compile stats before and after, this process's id"""
  before = tinyc._C.compile_stats()
  spec, runner = pickle.loads(spec_blob), pickle.loads(runner_blob)
  out = []
  for r in (tinyc.CompiledRunner(spec), runner):
    bufs = [tinyc.Buffer("CPU", len(raw) // dt.itemsize, dt).allocate().copyin(memoryview(bytearray(raw))) for raw, dt in inits]
    r(bufs, {"n": 10} if r.p.vars else None)
    out.append([bytes(b.as_buffer()) for b in bufs])
  return out, before, tinyc._C.compile_stats(), os.getpid()

def compile_ast(ast, opts):
  """a pool worker: tinyc's get_program on a (pickled) tinyc AST; the spec and a loaded runner go back pickled"""
  p = get_program(ast, tinyc.Device["CPU"].renderer, opts=opts)
  return p, tinyc.CompiledRunner(p), os.getpid()

def get_programs(asts, opts, cachedb, cachelevel):
  """get_program on each AST with this cache file and CACHELEVEL: the stats it took and the libs (each one loads)"""
  os.environ["TINYC_CACHEDB"], os.environ["CACHELEVEL"] = cachedb, cachelevel
  s0 = tinyc._C.compile_stats()
  specs = [get_program(a, tinyc.Device["CPU"].renderer, opts=o) for a, o in zip(asts, opts)]
  s1 = tinyc._C.compile_stats()
  for p in specs: tinyc.CompiledRunner(p)
  return {k: s1[k] - s0[k] for k in s1}, [p.lib for p in specs]
