"""The PYTHON device (csrc/devices/ops_python.c) against tinygrad 0.12.0's (tinygrad/runtime/ops_python.py).

1. the interpreter: tinygrad's own program for a corpus kernel (its PythonRenderer's pickled uops, ops and dtypes mapped to
   tinyc's) run by tinyc's PythonProgram gives what tinygrad's PythonProgram gives on the same buffers (ints and bools
   exactly, floats allclose) -- with the heuristics' opts (locals, GROUP reduces with barriers, upcasts);
2. end to end: tinyc's get_program with Device["PYTHON"].renderer and the opts tinygrad applied, run by CompiledRunner;
3. EMULATE=CUDA / AMD / METAL / INTEL / ...: a matmul with a tensor-core opt (WMMA emulated with that device's lane layout);
4. bad programs and buffers raise tinygrad's exception types, never crash;
5. every ALU op and cast on each dtype, lane by lane, the very bytes tinygrad's emulator stores.
The whole corpus against tinygrad's slow emulator takes minutes: the tests take a broad subset, bench/python_device.py
the whole corpus."""
import base64, pickle, sys, time
import numpy as np
import pytest
import tinyc
from tinyc import Buffer, CompiledRunner, Device, PythonProgram, PythonRenderer, PythonCompiler
from tinyc.codegen import get_program
from tinyc.tinygrad import from_tinygrad, _to_tc_arg, _to_tc_dtype
from tinygrad import Tensor, dtypes as tgdtypes
from tinygrad.codegen import get_program as tg_get_program
from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps
from tinygrad.helpers import Context
from tinygrad.uop.ops import Ops as TgOps
from tinygrad.runtime.ops_python import PythonRenderer as TgPythonRenderer, PythonProgram as TgPythonProgram, \
  PythonCompiler as TgPythonCompiler
from corpus import kernel_asts
from test_runtime import globals_of, random_bytes, as_array
from test_codegen import tc_opts
from test_compile_run import same_outputs   # outputs compared as the clang corpus runs compare them

VAR_VALS = {"n": 10}
# the kernels of the tests: a broad subset of the corpus (locals and barriers, regs, loops, gates, vectors, every dtype, vars,
# bitcasts, the transcendental ops) that tinygrad's slow emulator runs in seconds; bench/python_device.py runs the whole corpus
SUBSET = ("matmul/0", "matmul/3", "matvec/4", "conv2d/4", "conv1d/3", "conv1d/4", "maxpool/2", "avgpool/2", "softmax/2", "softmax/4", "log_softmax/3",
          "log_softmax/4", "layernorm/3", "attention/9", "sum/2", "max/2", "argmax/3", "cumsum/2", "mean_var/2", "gather/2",
          "gather_dim/2", "shrink_flip/2", "expand_add/4", "cast_half/2", "cast_bfloat16/2", "cast_int8/2", "cast_uint32/2",
          "cast_float64/2", "exp_log/4", "sin_sqrt/4", "pow/1", "pow/4", "where_cmp/6", "int_math/0", "bool_ops/6", "relu_chain/2",
          "symbolic_sum/2", "symbolic_elementwise/2", "arange_reduce/0", "transpose_contig/2")

def tg_program(ast, opts=None, emulate=""):
  """tinygrad's PYTHON program for ast (its heuristics when opts is None)"""
  with Context(EMULATE=emulate):
    ren = TgPythonRenderer()
    return tg_get_program(ast, ren, opts=opts)

def tinyc_lib(tg_lib: bytes) -> bytes:
  """tinygrad's pickled uop list with tinyc's Ops, dtypes and args: the same program for tinyc's PythonProgram"""
  lops = pickle.loads(tg_lib)
  return pickle.dumps([(tinyc.Ops(op.value), _to_tc_dtype(dt), list(srcs), _to_tc_arg(arg)) for op, dt, srcs, arg in lops])

def inputs_for(p, seed=0):
  rng, gl = np.random.default_rng(seed), globals_of(p)
  return {g: random_bytes(gl[g][0], gl[g][1], rng) for g in p.globals}

def dims(p):
  gs, ls = p.launch_dims(VAR_VALS)
  return tuple(gs) + (1,) * (3 - len(gs)), tuple(ls) + (1,) * (3 - len(ls)) if ls else (1, 1, 1)

def vals_of(p): return tuple(VAR_VALS[v.arg[0]] for v in p.vars)

def run_tinygrad(p, init):
  """tinygrad's PythonProgram on memoryviews: ({output global: bytes}, seconds)"""
  gs, ls = dims(p)
  bufs = [memoryview(bytearray(init[g])) for g in p.globals]
  t = TgPythonProgram(p.function_name, TgPythonCompiler().compile(p.src))(*bufs, global_size=gs, local_size=ls, vals=vals_of(p))
  return {g: bytes(bufs[i]) for i, g in enumerate(p.globals) if g in p.outs}, t

def tinyc_bufs(p, init):
  gl = globals_of(p)
  return [Buffer("PYTHON", gl[g][1], _to_tc_dtype(gl[g][0])).allocate().copyin(memoryview(bytearray(init[g]))) for g in p.globals]

def run_tinyc_interp(p, init):
  """tinyc's PythonProgram on tinygrad's program p: ({output global: bytes}, seconds)"""
  gs, ls = dims(p)
  bufs = tinyc_bufs(p, init)
  prg = PythonProgram(p.function_name, tinyc_lib(TgPythonCompiler().compile(p.src)))
  t = prg(*bufs, global_size=gs, local_size=ls, vals=vals_of(p), wait=True)
  return {g: bytes(bufs[i].as_buffer()) for i, g in enumerate(p.globals) if g in p.outs}, t

def subset_kernels():
  return [(n, a) for n, a in kernel_asts() if n in SUBSET]

# ---- 1. the interpreter on tinygrad's own programs ----

@pytest.fixture(scope="module")
def programs():
  """(name, ast, tinygrad's program with its heuristics' opts) of the test kernels"""
  return [(n, a, tg_program(a)) for n, a in subset_kernels()]

def test_interpreter_gives_tinygrads_results(programs):
  assert len(programs) == len(SUBSET)
  failed, bitwise, t_tg, t_tc = [], 0, 0.0, 0.0
  for name, _, p in programs:
    init = inputs_for(p)
    (theirs, ttg), (ours, ttc) = run_tinygrad(p, init), run_tinyc_interp(p, init)
    t_tg, t_tc = t_tg + ttg, t_tc + ttc
    if (err := same_outputs(p, ours, theirs)): failed.append((name, err))
    bitwise += ours == theirs
  print(f"\nPYTHON interpreter == tinygrad's on {len(programs) - len(failed)}/{len(programs)} kernels, bit for bit {bitwise}; "
        f"tinygrad {t_tg:.2f}s, tinyc {t_tc:.4f}s", end="")
  assert not failed, failed
  assert bitwise == len(programs)   # same Python semantics, op by op: the very bytes

def test_kernels_cover_locals_barriers_and_the_ops(programs):
  """the subset exercises what the device must run: locals + barriers (GROUP reduces), regs, loops, gates, vectors, bitcasts"""
  seen = {u.op for _, _, p in programs for u in p.uops}
  need = {TgOps.DEFINE_LOCAL, TgOps.BARRIER, TgOps.DEFINE_REG, TgOps.RANGE, TgOps.END, TgOps.IF, TgOps.SPECIAL, TgOps.VECTORIZE,
          TgOps.GEP, TgOps.BITCAST, TgOps.CAST, TgOps.WHERE, TgOps.MULACC, TgOps.DEFINE_VAR, TgOps.EXP2, TgOps.LOG2, TgOps.SIN,
          TgOps.SQRT, TgOps.RECIPROCAL, TgOps.IDIV, TgOps.MAX}
  assert need <= seen, need - seen
  assert any(p.local_size and np.prod(p.local_size) > 1 for *_, p in programs)

# ---- 2. end to end through tinyc's pipeline ----

def test_get_program_and_compiled_runner_on_python_device(programs):
  dev = Device["PYTHON"]
  assert isinstance(dev, tinyc.PythonDevice) and isinstance(dev.renderer, PythonRenderer) and isinstance(dev.compiler, PythonCompiler)
  assert dev.renderer.device == "PYTHON" and dev.runtime is PythonProgram
  failed = []
  for name, ast, tgp in programs:
    p = get_program(from_tinygrad(ast), dev.renderer, opts=tc_opts(tgp.applied_opts))
    assert p.lib is None and [list(d or []) for d in p.launch_dims(VAR_VALS)] == [list(d or []) for d in tgp.launch_dims(VAR_VALS)], name
    init = inputs_for(tgp)
    bufs = tinyc_bufs(tgp, init)
    CompiledRunner(p)(bufs, VAR_VALS if p.vars else None, wait=True)
    ours = {g: bytes(bufs[i].as_buffer()) for i, g in enumerate(tgp.globals) if g in tgp.outs}
    if (err := same_outputs(tgp, ours, run_tinygrad(tgp, init)[0])): failed.append((name, err))
  assert not failed, failed

def test_render_is_tinygrads_list():
  """the source is base64(pickle([(op, dtype, srcs, arg)])) of the linear uops, SPECIAL without sources, as tinygrad's"""
  name, ast = next((n, a) for n, a in kernel_asts() if n.startswith("sum/"))
  tgp = tg_program(ast)
  p = get_program(from_tinygrad(ast), PythonRenderer(), opts=tc_opts(tgp.applied_opts))
  ours, theirs = pickle.loads(base64.b64decode(p.src)), pickle.loads(TgPythonCompiler().compile(tgp.src))
  assert [(op.name, str(dt), srcs) for op, dt, srcs, _ in ours] == [(op.name, str(dt), srcs) for op, dt, srcs, _ in theirs]
  assert all(srcs == [] for op, _, srcs, _ in ours if op is tinyc.Ops.SPECIAL)
  assert PythonCompiler().compile(p.src) == base64.b64decode(p.src)

# ---- 3. tensor cores under EMULATE ----

def matmul_ast(dt, n=16):
  """the matmul of two n x n float buffers cast to dt, stored as float (tinygrad's emulator has no half buffers before
  Python 3.12: the halves live in registers)"""
  Tensor.manual_seed(0)
  sched, _ = (Tensor.rand(n, n).cast(dt) @ Tensor.rand(n, n).cast(dt)).cast(tgdtypes.float).schedule_with_vars()
  return [si.ast for si in sched if si.ast.op is TgOps.SINK][-1]

@pytest.mark.parametrize("emulate,dt,n", [("CUDA", tgdtypes.half, 16), ("AMD", tgdtypes.half, 16), ("METAL", tgdtypes.float, 16),
                                          ("INTEL", tgdtypes.half, 16), ("AMD_RDNA4", tgdtypes.half, 16), ("AMD_MFMA", tgdtypes.half, 16),
                                          ("CUDA_SM89", tgdtypes.fp8e4m3, 32), ("CUDA_SM75", tgdtypes.half, 16), ("AMX", tgdtypes.float, 16)])
def test_tensor_core_matmul_under_emulate(emulate, dt, n, monkeypatch):
  ast = matmul_ast(dt, n)
  opts = [TgOpt(TgOptOps.TC, 0, (-1, 0, 1))]
  tgp = tg_program(ast, opts=opts, emulate=emulate)
  assert any(u.op is TgOps.WMMA for u in tgp.uops)
  init = inputs_for(tgp)
  theirs, _ = run_tinygrad(tgp, init)
  ours, _ = run_tinyc_interp(tgp, init)
  assert ours == theirs
  monkeypatch.setenv("EMULATE", emulate)
  ren = PythonRenderer()
  assert ren.device == ("CPU" if emulate == "AMX" else emulate.split("_")[0]) and len(ren.tensor_cores) > 0
  p = get_program(from_tinygrad(ast), ren, opts=tc_opts(opts))
  assert any(u.op is tinyc.Ops.WMMA for u in p.uops)
  bufs = tinyc_bufs(tgp, init)
  assert p.device == ren.device   # as tinygrad's: the program is the emulated device's; the PYTHON device runs it
  CompiledRunner(p.replace(device="PYTHON"))(bufs, wait=True)
  e2e = {g: bytes(bufs[i].as_buffer()) for i, g in enumerate(tgp.globals) if g in tgp.outs}
  assert (err := same_outputs(tgp, e2e, theirs)) is None, err

def test_emulate_settings_as_tinygrad(monkeypatch):
  for emulate in ("METAL", "AMD", "AMD_MFMA", "AMD_RDNA4", "CUDA", "CUDA_SM75", "CUDA_SM89", "INTEL", "AMX"):
    monkeypatch.setenv("EMULATE", emulate)
    with Context(EMULATE=emulate): tg = TgPythonRenderer()
    ours = PythonRenderer()
    assert ours.device == tg.device and ours.suffix == tg.suffix
    assert [str(t) for t in ours.tensor_cores] == [str(t).replace("dtypes.", "dtypes.") for t in tg.tensor_cores] or \
      [(t.dims, t.threads) for t in ours.tensor_cores] == [(t.dims, t.threads) for t in tg.tensor_cores]
  monkeypatch.setenv("EMULATE", "NOPE")
  with pytest.raises(RuntimeError, match="can't EMULATE device: NOPE"): PythonRenderer()
  with Context(EMULATE="NOPE"), pytest.raises(RuntimeError, match="can't EMULATE device: NOPE"): TgPythonRenderer()
  monkeypatch.delenv("EMULATE")
  assert PythonRenderer().device == "PYTHON" and PythonRenderer().tensor_cores == ()

# ---- 4. bad programs and buffers ----

D = tinyc.dtypes

def prog(lops): return PythonProgram("k", pickle.dumps(lops))

def store_kernel(n=4, idx_const=None):
  """out[gidx0] = gidx0 (or out[idx_const] = 1.0), on a float buffer"""
  O = tinyc.Ops
  if idx_const is not None:
    return [(O.DEFINE_GLOBAL, D.float.ptr(n), [], 0), (O.CONST, D.int, [], idx_const), (O.CONST, D.float, [], 1.0),
            (O.INDEX, D.float.ptr(n), [0, 1], None), (O.STORE, D.void, [3, 2], None), (O.SINK, D.void, [4], None)]
  return [(O.DEFINE_GLOBAL, D.float.ptr(n), [], 0), (O.SPECIAL, D.int, [], "gidx0"), (O.CAST, D.float, [1], None),
          (O.INDEX, D.float.ptr(n), [0, 1], None), (O.STORE, D.void, [3, 2], None), (O.SINK, D.void, [4], None)]

def test_a_hand_written_program_runs():
  b = Buffer("PYTHON", 4, D.float).allocate()
  prog(store_kernel())(b, global_size=(4, 1, 1))
  assert np.frombuffer(b.as_buffer(), np.float32).tolist() == [0, 1, 2, 3]

def test_out_of_range_access_raises_index_error():
  b = Buffer("PYTHON", 4, D.float).allocate()
  with pytest.raises(IndexError, match="store out of bounds, size is 4, access is 4"): prog(store_kernel())(b, global_size=(5, 1, 1))
  with pytest.raises(IndexError, match="store out of bounds, size is 4, access is -1"): prog(store_kernel(idx_const=-1))(b)
  small = Buffer("PYTHON", 2, D.float).allocate()   # the buffer, not the dtype, bounds the access
  with pytest.raises(IndexError, match="size is 2"): prog(store_kernel(4))(small, global_size=(3, 1, 1))
  O = tinyc.Ops
  load = [(O.DEFINE_GLOBAL, D.float.ptr(4), [], 0), (O.CONST, D.int, [], 1 << 40), (O.INDEX, D.float.ptr(4), [0, 1], None),
          (O.LOAD, D.float, [2], None), (O.INDEX, D.float.ptr(4), [0, 1], None), (O.SINK, D.void, [], None)]
  with pytest.raises(IndexError, match="load out of bounds"): prog(load)(b)

def test_missing_buffers_and_vars_raise():
  with pytest.raises(IndexError, match="pop from empty list"): prog(store_kernel())()
  with pytest.raises(ValueError): prog(store_kernel())(Buffer("CPU", 4, D.float).allocate())   # another device's buffer
  with pytest.raises(ValueError, match="local size"): prog(store_kernel())(Buffer("PYTHON", 4, D.float).allocate(), local_size=(0, 1, 1))

@pytest.mark.parametrize("lops,exc", [
  (b"not a pickle", Exception),
  ([1, 2, 3], TypeError),
  ([(tinyc.Ops.CONST, "float", [], 1.0)], TypeError),                                  # dtype not a DType
  ([(tinyc.Ops.CONST, D.float, [0], 1.0)], AssertionError),                             # a source that is not earlier
  ([(tinyc.Ops.CONST, D.float, [], 1.0), (tinyc.Ops.ADD, D.float, [0], None)], AssertionError),   # ADD with one source
  ([(tinyc.Ops.CONST, D.float, [], 1.0), (tinyc.Ops.ADD, D.int, [0, 0], None)], AssertionError),  # dtype mismatch
  ([(tinyc.Ops.CONST, D.float, [], 1.0), (tinyc.Ops.LOAD, D.float, [0], None)], AssertionError),  # LOAD of a value
  ([(tinyc.Ops.CONST, D.float, [], 1.0), (tinyc.Ops.STORE, D.void, [0, 0], None)], AssertionError),
  ([(tinyc.Ops.DEFINE_GLOBAL, D.float, [], 0)], AssertionError),                         # DEFINE_GLOBAL not a pointer
  ([(tinyc.Ops.SPECIAL, D.int, [], "xidx9")], AssertionError),
  ([(tinyc.Ops.CONST, D.float.vec(2), [], (1.0, 2.0)), (tinyc.Ops.GEP, D.float, [0], (5,))], IndexError),
  ([(tinyc.Ops.CONST, D.float, [], 1.0), (tinyc.Ops.GEP, D.float, [0], (0, 1))], ValueError),
  ([(tinyc.Ops.CONST, D.float, [], 1.0), (tinyc.Ops.END, D.void, [0, 0], None)], AssertionError),  # END of no RANGE
  ([(tinyc.Ops.CONST, D.float, [], 1.0), (tinyc.Ops.THREEFRY, D.float, [0, 0], None)], KeyError),
  ([(tinyc.Ops.CONST, D.float, [], 1.0), (tinyc.Ops.XOR, D.float, [0, 0], None)], TypeError),
  ([(tinyc.Ops.CONST, D.int, [], 1.0)], TypeError),
  ([(tinyc.Ops.CONST, D.float, [], 1.0), (tinyc.Ops.BITCAST, D.half, [0], None)], ValueError),
  ([(tinyc.Ops.CONST, D.float.vec(4), [], (1.0,) * 4), (tinyc.Ops.WMMA, D.float.vec(4), [0, 0, 0], ("x", (8, 16, 8), D.half, D.float, "NOPE", 32, (), ()))],
   NotImplementedError),
  ([(tinyc.Ops.CUSTOM, D.float, [], "x")], AssertionError),
])
def test_bad_programs_raise_never_crash(lops, exc):
  with pytest.raises(exc): PythonProgram("k", lops if isinstance(lops, bytes) else pickle.dumps(lops))

def test_runtime_errors_of_python_semantics():
  O = tinyc.Ops
  def one(op, dt, a, b=None):
    lops = [(O.CONST, dt, [], a)] + ([(O.CONST, dt, [], b)] if b is not None else [])
    lops.append((op, dt, [0, 1] if b is not None else [0], None))
    return prog(lops)
  with pytest.raises(ValueError, match="negative shift count"): one(O.SHL, D.int, 1, -1)()
  with pytest.raises(OverflowError): one(O.POW, D.double, 10.0, 400.0)()
  with pytest.raises(ValueError, match="NaN"): prog([(O.CONST, D.float, [], float("nan")), (O.CAST, D.int, [0], None)])()
  with pytest.raises(OverflowError, match="infinity"): prog([(O.CONST, D.float, [], float("inf")), (O.CAST, D.int, [0], None)])()

def test_wmma_with_too_few_warp_threads_raises():
  """a CUDA WMMA needs 32 threads: tinygrad's assert, not a read past the warp"""
  ast = matmul_ast(tgdtypes.half)
  tgp = tg_program(ast, opts=[TgOpt(TgOptOps.TC, 0, (-1, 0, 1))], emulate="CUDA")
  init = inputs_for(tgp)
  gs, _ = dims(tgp)
  prg = PythonProgram(tgp.function_name, tinyc_lib(TgPythonCompiler().compile(tgp.src)))
  with pytest.raises(AssertionError, match="warp threads"): prg(*tinyc_bufs(tgp, init), global_size=gs, local_size=(2, 1, 1))

def test_memory_flat():
  import tracemalloc, gc
  b = Buffer("PYTHON", 4, D.float).allocate()
  lib = pickle.dumps(store_kernel())
  def work():
    for _ in range(200):
      PythonProgram("k", lib)(b, global_size=(4, 1, 1))
      try: PythonProgram("k", lib)(b, global_size=(9, 1, 1))
      except IndexError: pass
      try: PythonProgram("k", pickle.dumps([(tinyc.Ops.CONST, D.float, [0], 1.0)]))
      except AssertionError: pass
  work(); gc.collect()
  tracemalloc.start(); s0 = tracemalloc.get_traced_memory()[0]
  work(); gc.collect()
  grown = tracemalloc.get_traced_memory()[0] - s0
  tracemalloc.stop()
  assert grown < 64 * 1024, grown

# ---- 5. the ALU and casts, op by op, against tinygrad's emulator ----

from tinygrad.dtype import dtypes as tgd

INTS = {tgd.int8: [0, 1, -1, 7, -128, 127, 100, -100], tgd.uint8: [0, 1, 255, 128, 7, 200, 3, 100],
        tgd.int32: [0, 1, -1, 2**31 - 1, -2**31, 123456789, -98765, 7], tgd.uint32: [0, 1, 2**32 - 1, 2**31, 3, 1000000007, 65536, 9],
        tgd.int64: [0, 1, -1, 2**63 - 1, -2**63, 2**40 + 3, -(2**35), 11], tgd.uint64: [0, 1, 2**64 - 1, 2**63, 5, 2**40, 77, 3]}
FLOATS = [0.0, -0.0, 1.5, -2.25, 3.0e10, -7.5e-5, float("inf"), float("nan"), 65504.0, 1e-8, 0.3, -100.0]
INT_OPS = [TgOps.ADD, TgOps.SUB, TgOps.MUL, TgOps.IDIV, TgOps.MOD, TgOps.XOR, TgOps.AND, TgOps.OR, TgOps.MAX, TgOps.CMPLT, TgOps.CMPNE,
           TgOps.CMPEQ, TgOps.SHL, TgOps.SHR]
FLOAT_OPS = [TgOps.ADD, TgOps.SUB, TgOps.MUL, TgOps.MAX, TgOps.CMPLT, TgOps.CMPNE, TgOps.CMPEQ, TgOps.MULACC, TgOps.NEG, TgOps.EXP2,
             TgOps.LOG2, TgOps.SQRT, TgOps.RECIPROCAL, TgOps.SIN, TgOps.IDIV, TgOps.MOD]

def lanes_program(op, dt, pairs, out_dt, cast_to=None):
  """out[k] = op(a_k, b_k[, c_k]) (cast to cast_to first when given) for each k, as tinygrad's (op, dtype, srcs, arg) list"""
  n = len(pairs)
  lops = [(TgOps.DEFINE_GLOBAL, out_dt.ptr(n), [], 0)]
  def add(*e): lops.append(e); return len(lops) - 1
  res_dt = tgd.bool if op in (TgOps.CMPLT, TgOps.CMPNE, TgOps.CMPEQ) else dt
  for k, args in enumerate(pairs):
    srcs = [add(TgOps.CONST, dt, [], a) for a in args]
    v = add(op, res_dt, srcs, None) if op is not TgOps.CAST else add(TgOps.CAST, cast_to, srcs, None)
    if (cast_to or res_dt) != out_dt: v = add(TgOps.CAST, out_dt, [v], None)
    i = add(TgOps.INDEX, out_dt.ptr(n), [0, add(TgOps.CONST, tgd.int, [], k)], None)
    add(TgOps.STORE, tgd.void, [i, v], None)
  return pickle.dumps(lops), out_dt, n

def run_lanes(lib, out_dt, n):
  """(tinygrad's output bytes or its exception type, tinyc's)"""
  res = []
  for make in (lambda: (TgPythonProgram("k", lib), memoryview(bytearray(n * out_dt.itemsize)), None),
               lambda: (PythonProgram("k", tinyc_lib(lib)), None, Buffer("PYTHON", n, _to_tc_dtype(out_dt)).allocate())):
    prg, mv, buf = make()
    try:
      prg(mv if buf is None else buf)
      res.append(bytes(mv) if buf is None else bytes(buf.as_buffer()))
    except Exception as e: res.append(type(e))
  return res

def arity(op): return 1 if op in (TgOps.NEG, TgOps.EXP2, TgOps.LOG2, TgOps.SQRT, TgOps.RECIPROCAL, TgOps.SIN) else 3 if op is TgOps.MULACC else 2

def test_int_alu_as_tinygrad():
  rng = np.random.default_rng(1)
  for dt, vs in INTS.items():
    for op in INT_OPS:
      pairs = [(a, b) for a in vs for b in vs]
      if op in (TgOps.SHL, TgOps.SHR): pairs = [(a, int(s)) for a in vs for s in (0, 1, 3, 7, 31, 33, 63, 64, 70) if s <= max(vs)]
      pairs = [pairs[i] for i in rng.permutation(len(pairs))[:40]]
      theirs, ours = run_lanes(*lanes_program(op, dt, pairs, dt if op not in (TgOps.CMPLT, TgOps.CMPNE, TgOps.CMPEQ) else tgd.bool))
      assert ours == theirs, (op, dt, pairs)

@pytest.mark.parametrize("dt", [tgd.float, tgd.double, tgd.half, tgd.bfloat16])
def test_float_alu_as_tinygrad(dt):
  rng = np.random.default_rng(2)
  out = tgd.float if dt in (tgd.half, tgd.bfloat16) else dt   # no half buffers in tinygrad's emulator before Python 3.12
  for op in FLOAT_OPS:
    vals = [tgd.as_const(v, dt) for v in FLOATS]
    pairs = [tuple(vals[int(i)] for i in rng.integers(0, len(vals), arity(op))) for _ in range(30)]
    theirs, ours = run_lanes(*lanes_program(op, dt, pairs, out if op not in (TgOps.CMPLT, TgOps.CMPNE, TgOps.CMPEQ) else tgd.bool))
    assert ours == theirs, (op, dt, pairs)

def test_casts_as_tinygrad():
  fin = [0.0, -0.0, 1.5, -2.75, 300.7, -129.9, 3.0e9, -5.0e18, 1e30, 65519.0, 70000.0, 1e-40]
  for src in (tgd.float, tgd.double):
    for dst in (tgd.int8, tgd.uint8, tgd.int32, tgd.uint32, tgd.int64, tgd.uint64, tgd.bool, tgd.half, tgd.float, tgd.double, tgd.bfloat16):
      out = tgd.float if dst in (tgd.half, tgd.bfloat16) else dst
      vals = [tgd.as_const(v, src) for v in fin + ([float("nan"), float("inf")] if dst in (tgd.half, tgd.bool, tgd.double, tgd.bfloat16) else [])]
      theirs, ours = run_lanes(*lanes_program(TgOps.CAST, src, [(v,) for v in vals], out, cast_to=dst))
      assert ours == theirs, (src, dst)
  for src, vs in INTS.items():
    for dst in (tgd.int8, tgd.uint16, tgd.int32, tgd.uint64, tgd.float, tgd.double, tgd.bool):
      theirs, ours = run_lanes(*lanes_program(TgOps.CAST, src, [(v,) for v in vs], dst, cast_to=dst))
      assert ours == theirs, (src, dst)
  for v in (float("nan"), float("inf")):   # int(nan) / int(inf): the same exception on both sides
    theirs, ours = run_lanes(*lanes_program(TgOps.CAST, tgd.float, [(v,)], tgd.int32, cast_to=tgd.int32))
    assert ours == theirs and theirs in (ValueError, OverflowError)

def test_mutated_programs_raise_or_run_never_crash():
  """a real program (a GROUP reduce with locals, regs, a loop, gates) with one entry mutated: a source, the op, the dtype or
  the arg. Each loads and runs on the real buffers or raises; none reads or writes past what it checked."""
  name, ast = next((n, a) for n, a in kernel_asts() if n == "sum/2")
  p = tg_program(ast)
  base = pickle.loads(tinyc_lib(TgPythonCompiler().compile(p.src)))
  init, (gs, ls) = inputs_for(p), dims(p)
  rng = np.random.default_rng(3)
  ops = list(tinyc.Ops)
  dts = [D.float, D.int, D.bool, D.uint8, D.half, D.float.vec(4), D.float.ptr(16), D.int.ptr(4), D.float.ptr(1, tinyc.AddrSpace.REG), D.void]
  args = [None, 0, 1, 3, -1, 2.5, "gidx0", "lidx0", (0,), (1, 2), True]
  outcomes = {"ran": 0, "raised": 0}
  for _ in range(400):
    lops = [list(e) for e in base]
    e, what = lops[int(rng.integers(len(lops)))], int(rng.integers(4))
    if what == 0 and e[2]: e[2][int(rng.integers(len(e[2])))] = int(rng.integers(len(lops)))
    elif what == 1: e[0] = ops[int(rng.integers(len(ops)))]
    elif what == 2: e[1] = dts[int(rng.integers(len(dts)))]
    else: e[3] = args[int(rng.integers(len(args)))]
    try:
      PythonProgram("k", pickle.dumps([tuple(x) for x in lops]))(*tinyc_bufs(p, init), global_size=gs, local_size=ls)
      outcomes["ran"] += 1
    except Exception: outcomes["raised"] += 1
  assert outcomes["ran"] > 0 and outcomes["raised"] > 0, outcomes
