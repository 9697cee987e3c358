"""End to end through tinyc's own pipeline: a tinygrad kernel AST -> tinyc.codegen.get_program with the CPU device's
renderer (render + clang compile, the SQLite compile cache) -> tinyc.CompiledRunner -> results, against tinygrad 0.12.0
doing the same with its own get_program and CompiledRunner on its CPU device.

1. every AST of the corpus, with no opts and with tinygrad's heuristic opts: the same C text (kernel name counter
   stripped) and the same outputs on the same random inputs (ints and bools exactly, floats within dtype tolerance);
2. ProgramSpecs and CompiledRunners pickle across processes (spawn) and run there without any compiler;
   a pool of workers compiles, the parent only runs;
3. the compile cache seen through get_program from separate processes: hits, CACHELEVEL=0, a corrupted file;
4. bad input raises a clear Python exception, never crashes; repeated runs leave memory flat."""
import gc, multiprocessing, os, pickle, random, sqlite3, subprocess, sys, time, tracemalloc
from dataclasses import replace
import numpy as np
import pytest
import tinyc
from tinyc import Buffer, CompiledRunner, CompileError, dtypes
from tinyc.codegen import get_program
from tinyc.tinygrad import from_tinygrad
from tinygrad import Device as TGDevice
from tinygrad.codegen import get_program as tg_get_program
from tinygrad.device import Buffer as TGBuffer
from tinygrad.dtype import _to_np_dtype, dtypes as tgdtypes
from tinygrad.engine.realize import CompiledRunner as TGCompiledRunner
from tinygrad.helpers import Context
from tinygrad.renderer.cstyle import ClangRenderer as TGClangRenderer
from corpus import kernel_asts
from test_runtime import globals_of, random_bytes, as_array
from test_codegen import strip_counter, tc_opts

stats = tinyc._C.compile_stats
VAR_VALS = {"n": 10}
MODES = ("noopt", "opts")
# relative/absolute tolerance per float dtype (the same C compiled by the same clang: differences are not expected, but
# a float result is only promised up to its precision)
TOL = {np.dtype(np.float16): (1e-3, 1e-3), np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-12)}

@pytest.fixture(autouse=True, scope="module")
def cache_db(tmp_path_factory):
  """every test of this file compiles into its own cache file"""
  path = str(tmp_path_factory.mktemp("tinyc_cache") / "cache.db")
  old = os.environ.get("TINYC_CACHEDB")
  os.environ["TINYC_CACHEDB"] = path
  yield path
  if old is None: del os.environ["TINYC_CACHEDB"]
  else: os.environ["TINYC_CACHEDB"] = old

def is_bfloat16_kernel(ast) -> bool:
  return any(u.dtype.base.scalar() == tgdtypes.bfloat16 for u in ast.toposort())

def tinygrad_program(ast, mode):
  """tinygrad's compiled program on its CPU device (its ClangJITRenderer compiles: p.lib) and the opts it applied"""
  if mode == "noopt":
    with Context(NOOPT=1): return tg_get_program(ast, TGDevice["CPU"].renderer)
  return tg_get_program(ast, TGDevice["CPU"].renderer)

def heuristic_opts(ast):
  """the opts tinygrad's hand-coded heuristics choose, read from a renderer that does not compile"""
  return tc_opts(tg_get_program(ast, TGClangRenderer()).applied_opts)

def tinyc_program(ast, mode):
  return get_program(from_tinygrad(ast), tinyc.Device["CPU"].renderer, opts=None if mode == "noopt" else heuristic_opts(ast))

def inputs_for(p, seed=0):
  """{global index: random bytes} for every buffer of tinygrad's program p"""
  rng, gl = np.random.default_rng(seed), globals_of(p)
  return {g: random_bytes(gl[g][0], gl[g][1], rng) for g in p.globals}

def make_bufs(cls, p, init):
  gl = globals_of(p)
  return [cls("CPU", gl[g][1], gl[g][0]).allocate().copyin(memoryview(bytearray(init[g]))) for g in p.globals]

def outputs(p, bufs):
  return {g: bytes(bufs[i].as_buffer()) for i, g in enumerate(p.globals) if g in p.outs}

def run_tinygrad(p, init):
  bufs = make_bufs(TGBuffer, p, init)
  TGCompiledRunner(p)(bufs, VAR_VALS if p.vars else None, wait=True)
  return outputs(p, bufs)

def run_tinyc(runner, tgp, init):
  """run a tinyc runner on buffers laid out as tinygrad's program tgp says"""
  bufs = make_bufs(Buffer, tgp, init)
  t = runner(bufs, VAR_VALS if runner.p.vars else None, wait=True)
  assert isinstance(t, float) and t >= 0
  return outputs(tgp, bufs)

def same_outputs(tgp, ours, theirs, what=""):
  """None when equal (ints/bools exactly, floats within their dtype's tolerance), else a description"""
  gl = globals_of(tgp)
  if ours.keys() != theirs.keys(): return f"{what}: outputs {sorted(ours)} != {sorted(theirs)}"
  for g in ours:
    a, b = as_array(ours[g], gl[g][0]), as_array(theirs[g], gl[g][0])
    if a.dtype.kind == "f":
      rtol, atol = TOL[a.dtype]
      if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True): return f"{what}: buffer {g} differs (max {np.nanmax(np.abs(a - b))})"
    elif ours[g] != theirs[g]: return f"{what}: buffer {g} differs"
  return None

@pytest.fixture(scope="module")
def corpus_runs():
  """for each (kernel, mode): (tinygrad's program or its exception, tinyc's program or its exception, seconds tinyc took)"""
  out = {}
  for name, ast in kernel_asts():
    for mode in MODES:
      try: tg = tinygrad_program(ast, mode)
      except Exception as e: tg = e
      t0 = time.perf_counter()
      try: tc = tinyc_program(ast, mode)
      except Exception as e: tc = e
      out[(name, mode)] = (ast, tg, tc, time.perf_counter() - t0)
  return out

# ---- 1. the corpus, compiled and run by tinyc, against tinygrad ----

def test_corpus_compiles_and_runs_as_tinygrad(corpus_runs):
  t0, s0 = time.perf_counter(), stats()
  ok, failed, bf16 = {m: 0 for m in MODES}, [], []
  for (name, mode), (ast, tg, tc, _) in corpus_runs.items():
    if isinstance(tg, Exception) or isinstance(tc, Exception):
      # the only kernels that cannot compile: bfloat16 ones (clang 14 has no __bf16 on x86), for tinygrad as for tinyc
      assert is_bfloat16_kernel(ast), (name, mode, tg, tc)
      assert isinstance(tg, Exception) and isinstance(tc, CompileError) and "__bf16" in str(tc), (name, mode, tg, tc)
      bf16.append((name, mode))
      continue
    assert tc.lib is not None and tc.lib[:4] == b"\x7fELF" and tg.lib is not None
    assert tc.globals == tg.globals and tc.outs == tg.outs and tc.ins == tg.ins and len(tc.vars) == len(tg.vars)
    init = inputs_for(tg)
    err = same_outputs(tg, run_tinyc(CompiledRunner(tc), tg, init), run_tinygrad(tg, init), f"{name} {mode}")
    if err: failed.append(err)
    else: ok[mode] += 1
  n = len(kernel_asts())
  for m in MODES: print(f"\ncorpus run by tinyc == tinygrad ({m}): {ok[m]}/{n}", end="")
  compile_time = sum(t for *_, t in corpus_runs.values())
  print(f"\nbfloat16 kernels that compile for neither: {len(bf16)} {sorted(set(k for k, _ in bf16))}; "
        f"tinyc get_program+compile {compile_time:.1f}s, runs {time.perf_counter() - t0:.1f}s")
  assert not failed, failed
  assert stats()["compiles"] == s0["compiles"]            # the runners loaded the programs' libs, compiled nothing
  assert len(bf16) == sum(is_bfloat16_kernel(a) for _, a in kernel_asts()) * len(MODES) and len(bf16) <= 4
  assert all(ok[m] + len(bf16) // len(MODES) == n for m in MODES)

def test_corpus_source_is_tinygrads(corpus_runs):
  """the C text compiled is tinygrad's, up to the process counter tinygrad appends to a name it has seen before"""
  same = {m: 0 for m in MODES}
  for (name, mode), (ast, tg, tc, _) in corpus_runs.items():
    if isinstance(tc, Exception):   # a bfloat16 kernel: render it with renderers that do not compile, both sides
      assert isinstance(tg, Exception) and is_bfloat16_kernel(ast)
      with Context(NOOPT=int(mode == "noopt")): tg = tg_get_program(ast, TGClangRenderer())
      tc = get_program(from_tinygrad(ast), tinyc.ClangRenderer(), opts=None if mode == "noopt" else tc_opts(tg.applied_opts))
    assert strip_counter(tc.function_name) == strip_counter(tg.function_name), name
    assert strip_counter(tc.name) == strip_counter(tg.name), name
    assert tc.src.replace(tc.function_name, strip_counter(tc.function_name)) == \
           tg.src.replace(tg.function_name, strip_counter(tg.function_name)), (name, mode)
    same[mode] += 1
  for m in MODES: print(f"\ntinyc p.src == tinygrad p.src ({m}): {same[m]}/{len(kernel_asts())}", end="")
  assert all(v == len(kernel_asts()) for v in same.values())
