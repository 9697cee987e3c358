"""tinygrad API parity (issue 13, part 1): names tinygrad-style code imports, at tinygrad's module paths, and the small
differences it trips on. Each test computes its expectation with tinygrad 0.12.0 (the oracle) in the same test: the same
result, or the same exception type."""
import dataclasses, importlib, os
import numpy as np
import pytest
import tinyc
from tinyc.tinygrad import from_tinygrad
import tinygrad
from tinygrad import Tensor
from tinygrad.dtype import dtypes as tg_dtypes, AddrSpace as TgAddrSpace
from tinygrad.uop.ops import UOp as TgUOp, Ops as TgOps, UPat as TgUPat, PatternMatcher as TgPatternMatcher
from tinyc import UOp, Ops, UPat, PatternMatcher, dtypes, AddrSpace

TC = (UOp, Ops, dtypes, AddrSpace)
TG = (TgUOp, TgOps, tg_dtypes, TgAddrSpace)

def outcome(f, lib):
  """repr of f(lib), or the exception's type name: what a test compares between tinyc and tinygrad"""
  try: return repr(f(*lib))
  except Exception as e: return type(e).__name__

def same(f):
  ours, theirs = outcome(f, TC), outcome(f, TG)
  assert ours == theirs
  return ours

# ---- dataclasses ----

def test_dataclass_replace_opt_and_program_spec():
  from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps
  from tinygrad.renderer import ProgramSpec as TgProgramSpec
  assert repr(dataclasses.replace(tinyc.Opt(tinyc.OptOps.UPCAST, 1, 4), arg=2)) == \
    repr(dataclasses.replace(TgOpt(TgOptOps.UPCAST, 1, 4), arg=2))
  sink = lambda U, O, d, A: U(O.SINK, d.void, (U.const(d.int, 3),))  # noqa: E731
  ours = dataclasses.replace(tinyc.ProgramSpec("k", "src", "CPU", sink(*TC)), device="NULL")
  theirs = dataclasses.replace(TgProgramSpec("k", "src", "CPU", sink(*TG)), device="NULL")
  assert ours.device == theirs.device == "NULL" and repr(ours) == repr(theirs)

def _fields(cls):
  """each field as (name, default or ('factory', a new value) or '-'), as dataclasses.fields lists them"""
  def default(f):
    if f.default is not dataclasses.MISSING: return repr(f.default)
    return ("factory", repr(f.default_factory())) if f.default_factory is not dataclasses.MISSING else "-"
  return [(f.name, default(f), f.init, f.repr, f.compare, f.kw_only) for f in dataclasses.fields(cls)]

def test_dataclass_fields_and_defaults():
  from tinygrad.renderer import ProgramSpec, Estimates
  from tinygrad.codegen.opt import Opt
  from tinygrad.codegen.opt.tc import TensorCore
  from tinygrad.uop.ops import KernelInfo
  from tinygrad.schedule.indexing import BufferizeOpts
  from tinygrad.dtype import DType, PtrDType
  from tinyc.engine.realize import ExecItem
  from tinygrad.engine.realize import ExecItem as TgExecItem
  pairs = [(ProgramSpec, tinyc.ProgramSpec), (Estimates, tinyc.Estimates), (Opt, tinyc.Opt), (KernelInfo, tinyc.KernelInfo),
           (BufferizeOpts, tinyc.BufferizeOpts), (TensorCore, tinyc.TensorCore), (DType, tinyc.DType), (PtrDType, tinyc.PtrDType),
           (TgUOp, UOp), (TgExecItem, ExecItem)]
  for theirs, ours in pairs:
    assert dataclasses.is_dataclass(ours), ours
    assert _fields(ours) == _fields(theirs), ours
    assert ours.__match_args__ == theirs.__match_args__, ours
    for param in ("eq", "frozen", "order"):
      assert getattr(ours.__dataclass_params__, param) == getattr(theirs.__dataclass_params__, param), (ours, param)

def test_dataclass_view_of_uop_and_dtype():
  # UOp and DType are @dataclass(eq=False) in tinygrad: replace and asdict work through their fields; == stays identity
  assert same(lambda U, O, d, A: dataclasses.replace(U.const(d.int, 3), arg=4))
  assert same(lambda U, O, d, A: dataclasses.astuple(U.const(d.int, 3)))
  assert same(lambda U, O, d, A: dataclasses.asdict(d.float.ptr(16)))
  assert same(lambda U, O, d, A: (d.float == d.float, d.float == d.int, hash(d.float) == hash(d.float)))

def test_dataclass_match_args():
  def kind(o):
    match o:
      case tinyc.Opt(op, axis, arg): return ("opt", str(op), axis, arg)
      case tinyc.Estimates(ops, lds, mem): return ("estimates", ops, lds, mem)
    return None
  from tinygrad.codegen.opt import Opt as TgOpt
  def tg_kind(o):
    match o:
      case TgOpt(op, axis, arg): return ("opt", str(op), axis, arg)
    return None
  assert kind(tinyc.Opt(tinyc.OptOps.LOCAL, 0, 4)) == tg_kind(TgOpt(tinygrad.codegen.opt.OptOps.LOCAL, 0, 4))
  assert kind(tinyc.Estimates(1, 2, 3)) == ("estimates", 1, 2, 3)

# ---- names at tinygrad's module paths ----

NAMES = {
  "": ["Variable", "UOp", "dtypes"],
  "uop.ops": ["graph_rewrite_map", "track_rewrites", "TrackedPatternMatcher", "Variable", "exec_alu", "UOp", "UPat", "PatternMatcher",
              "graph_rewrite"],
  "uop.symbolic": ["simplify_valid", "symbolic", "sym", "symbolic_simple"],
  "uop.decompositions": ["xexp2", "xlog2", "xpow", "xsin", "frexp", "rintk", "pow2if", "trig_poly", "payne_hanek_reduction",
                         "cody_waite_reduction", "TRANSCENDENTAL_DTYPES", "fast_idiv", "magicgu", "get_late_rewrite_patterns"],
  "renderer.cstyle": ["CStyleLanguage", "ClangRenderer"],
  "engine.realize": ["Runner", "get_runner", "ExecItem", "CompiledRunner", "method_cache"],
  "device": ["Device", "Buffer", "Allocator", "Compiler", "CompileError", "Compiled", "is_dtype_supported", "ALL_DEVICES"],
}

@pytest.mark.parametrize("module", sorted(NAMES))
def test_names_at_tinygrad_paths(module):
  theirs = importlib.import_module("tinygrad" + (f".{module}" if module else ""))
  ours = importlib.import_module("tinyc" + (f".{module}" if module else ""))
  for name in NAMES[module]:
    assert hasattr(theirs, name), name   # the list is tinygrad's names
    assert hasattr(ours, name), f"tinyc.{module}.{name}"

def test_variable():
  assert repr(tinyc.Variable("a", 0, 10)) == repr(tinygrad.Variable("a", 0, 10))
  from tinyc.uop.ops import Variable
  from tinygrad.uop.ops import Variable as TgVariable
  assert (Variable is UOp) == (TgVariable is TgUOp) == True  # noqa: E712

def _rules(lib):
  U, O, d, A = lib
  UP, PM = (UPat, PatternMatcher) if U is UOp else (TgUPat, TgPatternMatcher)
  return PM([(UP.var("x") + 0, lambda x: x), (UP.var("x") * 1, lambda x: x),
             (UP(O.ADD, src=(UP.cvar("a"), UP.cvar("b")), name="r"), lambda r, a, b: r.const_like(a.arg + b.arg))])

def _graph(lib):
  U, O, d, A = lib
  x = U.variable("x", 0, 10)
  a = (x * 1 + 0) * 2
  return U.sink(a + (U.const(d.index, 2) + 3), a)

def _rewrite_map(lib, **kw):
  from tinyc.uop.ops import graph_rewrite_map
  from tinygrad.uop.ops import graph_rewrite_map as tg_graph_rewrite_map
  fn = graph_rewrite_map if lib[0] is UOp else tg_graph_rewrite_map
  return [(repr(k), repr(v)) for k, v in fn(_graph(lib), _rules(lib), **kw).items()]

@pytest.mark.parametrize("bottom_up", [False, True])
def test_graph_rewrite_map(bottom_up):
  ours, theirs = _rewrite_map(TC, bottom_up=bottom_up), _rewrite_map(TG, bottom_up=bottom_up)
  assert ours == theirs and len(ours) > 5

def test_graph_rewrite_map_input_map():
  def run(lib):
    U, O, d, A = lib
    g = _graph(lib)
    extra = {U.variable("y", 0, 4): g.src[1], U.variable("z", 0, 4): U.const(d.int, 7)}
    return _rewrite_map(lib, input_map=extra)
  assert run(TC) == run(TG)

def test_graph_rewrite_map_bad_input():
  from tinyc.uop.ops import graph_rewrite_map
  from tinygrad.uop.ops import graph_rewrite_map as tg_graph_rewrite_map
  with pytest.raises(AttributeError): tg_graph_rewrite_map(3, _rules(TG))
  with pytest.raises(AttributeError): graph_rewrite_map(3, _rules(TC))

def test_track_rewrites_and_tracked_matcher():
  from tinyc.uop.ops import track_rewrites, TrackedPatternMatcher, graph_rewrite
  from tinygrad.uop.ops import track_rewrites as tg_track, TrackedPatternMatcher as TgTracked, graph_rewrite as tg_graph_rewrite
  def body(lib, pm_type, rewrite):
    U, O, d, A = lib
    UP = UPat if U is UOp else TgUPat
    pm = pm_type([(UP.var("x") * 1, lambda x: x)])
    return repr(rewrite(U.variable("a", 0, 3) * 1 + 2, pm))
  ours = track_rewrites(name=lambda *args, ret: "k")(body)(TC, TrackedPatternMatcher, graph_rewrite)
  theirs = tg_track(name=lambda *args, ret: "k")(body)(TG, TgTracked, tg_graph_rewrite)
  assert ours == theirs

def test_simplify_valid():
  from tinyc.uop.symbolic import simplify_valid
  from tinygrad.uop.symbolic import simplify_valid as tg_simplify_valid
  def cases(lib):
    U, O, d, A = lib
    x, y = U.variable("x", 0, 20), U.variable("y", 0, 20)
    return [(x < 10) & (x < 5), (x < 10) & (x >= 3) & (x < 10), (x < 4) & ((x * 2 + y) < 12), (x < 3) & (y < 3), x < 7,
            ((x + y) < 4) & (x < 2), ((x // 4) < 2) & (x < 5)]
  for ours, theirs in zip(cases(TC), cases(TG)):
    assert repr(simplify_valid(ours)) == repr(tg_simplify_valid(theirs)), theirs
  with pytest.raises(AttributeError): tg_simplify_valid(3)
  with pytest.raises(AttributeError): simplify_valid(3)

DIVIDE_EXACT = [("x*4+y*8", "2"), ("x*4+y*8", "x"), ("x*y*6", "x*y"), ("x*y*y*4", "y*y"), ("x*y*y*4", "y*y*y"), ("x*x", "x"),
                ("x+y", "x"), ("x*3+y*6", "3"), ("x*3+y*5", "3"), ("x*y*2", "y*4"), ("x", "x"), ("x*6", "x*4"), ("x*4", "x*2"),
                ("(x+1)*(y+2)*3", "(y+2)"), ("x*4", "z")]

@pytest.mark.parametrize("expr,div", DIVIDE_EXACT)
def test_divide_exact(expr, div):
  def f(U, O, d, A):
    x, y, z = U.variable("x", 0, 10), U.variable("y", 0, 10), U.variable("z", 1, 10)
    v = eval(div, {"x": x, "y": y, "z": z})
    return eval(expr, {"x": x, "y": y}).divide_exact(U.const(d.index, v) if isinstance(v, int) else v)
  same(f)

def test_divide_exact_bad_input():
  assert same(lambda U, O, d, A: U.variable("x", 0, 10).divide_exact(3)) == "AttributeError"
  assert same(lambda U, O, d, A: (U.variable("x", 0, 10) * 2).divide_exact(U.const(d.index, 0))) == "ZeroDivisionError"

def test_new_buffer_and_unique():
  same(lambda U, O, d, A: U.new_buffer("CPU", 16, d.float, num=3))
  same(lambda U, O, d, A: U.new_buffer(("CPU", "CPU:1"), 4, d.int, 7))
  same(lambda U, O, d, A: U.unique(5))
  a, b = UOp.new_buffer("CPU", 4, dtypes.float), UOp.new_buffer("CPU", 4, dtypes.float)   # each its own UNIQUE, as tinygrad's
  ta, tb = TgUOp.new_buffer("CPU", 4, tg_dtypes.float), TgUOp.new_buffer("CPU", 4, tg_dtypes.float)
  assert (a is b) == (ta is tb) == False and a.src[0].arg + 1 == b.src[0].arg  # noqa: E712
  # tinygrad makes a node with a str for a dtype; tinyc's nodes hold DTypes only (native code reads them)
  with pytest.raises(TypeError): UOp.new_buffer("CPU", 4, "float")

@pytest.mark.parametrize("shape,dtype,slot,space", [((16,), "float", 0, "GLOBAL"), ((4, 4), "float", 2, "GLOBAL"), ((8,), "int", 1, "LOCAL"),
                                                    ((2, 3, 4), "half", 0, "REG"), ((1,), "bool", 3, "LOCAL")])
def test_placeholder(shape, dtype, slot, space):
  same(lambda U, O, d, A: U.placeholder(shape, getattr(d, dtype), slot, getattr(A, space)))

def test_placeholder_bad_addrspace():
  assert same(lambda U, O, d, A: U.placeholder((4,), d.float, 0, 5)) == "KeyError"

def test_decompositions_match():
  import tinyc.uop.decompositions as ours
  import tinygrad.uop.decompositions as theirs
  def graphs(mod, lib):
    U, O, d, A = lib
    x = U.variable("x", 0, 10).cast(d.float)
    return [mod.xexp2(x), mod.xlog2(x), mod.xpow(x, x), mod.frexp(x), mod.rintk(x), mod.pow2if(x.cast(d.int), d.float),
            mod.trig_poly(x, [1.0, 2.0], [3.0, 4.0]), mod.payne_hanek_reduction(x), mod.cody_waite_reduction(x)]
  for a, b in zip(graphs(ours, TC), graphs(theirs, TG)):
    assert repr(a) == repr(b)
  assert repr(ours.TRANSCENDENTAL_DTYPES) == repr(theirs.TRANSCENDENTAL_DTYPES)

def test_is_dtype_supported():
  from tinyc.device import is_dtype_supported
  from tinygrad.device import is_dtype_supported as tg_is_dtype_supported
  for name in ("float", "half", "bfloat16", "double", "int8", "uint64", "fp8e4m3", "bool"):
    assert is_dtype_supported(getattr(dtypes, name), "CPU") == tg_is_dtype_supported(getattr(tg_dtypes, name), "CPU"), name

# ---- tinyc.engine.realize ----

def _kernel():
  """tinygrad's kernel of x * 2 + 1 on 16 floats (its schedule's SINK), and the result tinygrad computes"""
  x = np.arange(16, dtype=np.float32)
  ast = [si.ast for si in (Tensor(x) * 2 + 1).schedule() if si.ast.op is TgOps.SINK][-1]
  return x, ast, (Tensor(x) * 2 + 1).numpy()

def test_runner_base():
  from tinyc.engine.realize import Runner, CompiledRunner
  from tinygrad.engine.realize import Runner as TgRunner
  for base in (Runner, TgRunner):
    class Echo(base):
      def __call__(self, rawbufs, var_vals, wait=False): return (len(rawbufs), var_vals)
    r = Echo("echo", "CPU")
    assert (r.first_run, r.display_name, r.device, r.exec([1, 2])) == (True, "echo", "CPU", (2, {}))
    assert r.estimates.ops == 0
    with pytest.raises(NotImplementedError): base("x", "CPU")([], {})
  assert issubclass(CompiledRunner, Runner)

def test_get_runner_and_exec_item():
  from tinyc.engine.realize import get_runner, ExecItem, CompiledRunner
  x, tg_ast, expected = _kernel()
  ast = from_tinygrad(tg_ast)
  r = get_runner("CPU", ast)
  assert isinstance(r, CompiledRunner) and get_runner("CPU", ast) is r and r.p.device == "CPU"
  out, inp = tinyc.Buffer("CPU", 16, dtypes.float).allocate(), tinyc.Buffer("CPU", 16, dtypes.float).allocate()
  inp.copyin(memoryview(x.tobytes()))
  ei = ExecItem(ast, [out, inp])
  assert ei.prg is None and ei.lower().prg is r
  assert ei.run() is None and r.first_run is False
  np.testing.assert_array_equal(np.frombuffer(out.as_buffer(), dtype=np.float32), expected)

def test_exec_item_not_a_kernel():
  from tinyc.engine.realize import ExecItem
  with pytest.raises(NotImplementedError): ExecItem(UOp(Ops.COPY, dtypes.float, ())).lower()

# ---- small differences ----

@pytest.mark.parametrize("truncate", [True, False])
def test_exec_alu_truncate_output_keyword(truncate):
  from tinyc.uop.ops import exec_alu
  from tinygrad.uop.ops import exec_alu as tg_exec_alu
  for op, dt, operands in [("ADD", "int8", (100, 100)), ("MUL", "uint8", (20, 20)), ("ADD", "float", (1.5, 2.25))]:
    ours = exec_alu(getattr(Ops, op), getattr(dtypes, dt), operands, truncate_output=truncate)
    assert ours == tg_exec_alu(getattr(TgOps, op), getattr(tg_dtypes, dt), operands, truncate_output=truncate)

def test_uop_replace_unknown_field():
  assert same(lambda U, O, d, A: U.const(d.int, 1).replace(bogus=1, arg=2)) == "AssertionError"
  assert same(lambda U, O, d, A: U.const(d.int, 1).replace(arg=2))
  assert same(lambda U, O, d, A: U.const(d.int, 1).replace(dtypes=d.float)) == "AssertionError"

def test_native_rule_location():
  from tinyc.uop.symbolic import symbolic
  from tinygrad.uop.symbolic import symbolic as tg_symbolic
  tg_file, tg_line = tg_symbolic.patterns[0][0].location
  assert os.path.isfile(tg_file) and isinstance(tg_line, int)
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  for pat, _ in symbolic.patterns:
    file, line = pat.location
    assert file.endswith(".c") and isinstance(line, int) and line > 0
    path = os.path.join(root, file)
    if os.path.isfile(path):   # a source checkout: the line is the rule's table entry
      with open(path) as f: assert "R(" in f.read().splitlines()[line - 1], (file, line)
