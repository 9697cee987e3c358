"""tinyc's CStyleLanguage (csrc/renderers/cstyle.c): one render loop reading a language's settings, each overridable from
Python, against tinygrad 0.12.0's.

The same Python subclasses are written once over either library (`variants`): subclasses of ClangRenderer and of
CStyleLanguage that set kernel_typedef (with a {launch_bounds} format), buffer prefixes, type_map, infinity/nan,
code_for_op lambdas, extra_args, code_for_workitem, float4/float4_style, gep_arr_threshold, instance attributes, or
override render_dtype, render_cast, render_kernel, ClangRenderer's render_vector_prefix/_render_entry, or extend
string_rewrite with Python rules. Over the corpus kernels (tests/corpus.py), each tinyc subclass must render what the
same tinygrad subclass renders: (a) render() of tinygrad's linearized uops, (b) tinyc's get_program with tinygrad's opts.
A kernel tinygrad cannot render (CStyleLanguage's float4 is None) must raise the same exception in tinyc."""
import collections, functools, gc, pickle, types, weakref
import pytest
from tinygrad.codegen import get_program as tg_get_program
from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps, KernelOptError as TgKernelOptError
from tinygrad.dtype import dtypes as tg_dtypes
from tinygrad.renderer import cstyle as tg_cstyle
from tinygrad.uop.ops import Ops as TgOps, UOp as TgUOp, UPat as TgUPat, PatternMatcher as TgPatternMatcher, graph_rewrite as tg_graph_rewrite
import tinyc
from tinyc import _C
from tinyc.codegen import get_program
from tinyc.renderer import cstyle
from tinyc.tinygrad import from_tinygrad, to_tinygrad
from test_codegen import strip_counter, tc_opts
import corpus

def variants(L):
  """the same subclasses of L.ClangRenderer / L.CStyleLanguage, by name; L holds one library's names"""
  Ops, dtypes, UPat = L.Ops, L.dtypes, L.UPat
  class KernelTypedef(L.ClangRenderer): kernel_typedef = "static void"
  class LaunchBounds(L.ClangRenderer): kernel_typedef = "void /* {launch_bounds} threads */"
  class Buffers(L.ClangRenderer): buffer_prefix, buffer_suffix, arg_int_prefix = "/* global */ ", " __restrict__", "int"
  class TypeMap(L.ClangRenderer): type_map = {dtypes.bool: "bool", dtypes.half: "_Float16", dtypes.float: "my float", dtypes.int: "int32_t"}
  class InfNan(L.ClangRenderer): infinity, nan = "INF", "NANF"
  class ExtraArgs(L.ClangRenderer): extra_args = ["int core_id", "void *scratch"]
  class Float4(L.ClangRenderer): float4, float4_style = "(vector float4)", ("{ ", " }")
  class Gep(L.ClangRenderer): gep_arr_threshold = 4
  class CodeForOp(L.ClangRenderer):   # the same keys: the pipeline does not change
    code_for_op = {**L.ClangRenderer.code_for_op, Ops.ADD: lambda a, b, dtype: f"add({a}, {b})",
                   Ops.SQRT: lambda x, dtype: f"sqrt_{dtype.name}({x})"}
  class Workitem(L.ClangRenderer): code_for_workitem = {"g": lambda x: f"core_id /* dim {x} */"}
  class RenderDtype(L.ClangRenderer):
    def render_dtype(self, dt, mutable=True): return "T_" + super().render_dtype(dt, mutable)
  class RenderCast(L.ClangRenderer):
    def render_cast(self, dt, val): return f"CAST({self.render_dtype(dt)}, {val})"
  class RenderKernel(L.ClangRenderer):
    def render_kernel(self, function_name, kernel, bufs, uops, prefix=None):
      return f"// {len(kernel)} lines\n" + super().render_kernel(function_name, kernel, bufs, uops, ["#define KERNEL 1"])
  class StringRewrite(L.ClangRenderer):
    string_rewrite = L.PatternMatcher([
      (UPat(Ops.CONST, dtypes.float, name="x"), lambda ctx, x: f"{x.arg}F"),
      (UPat(Ops.RANGE, name="x"), lambda ctx, x: f"for (int {ctx[x]} = 0; {ctx[x]} < {ctx[x.src[0]]}; ++{ctx[x]}) {{")]) + L.base_rewrite
  class ClangMethods(L.ClangRenderer):
    def render_vector_prefix(self, dt): return "/* vector */ " + super().render_vector_prefix(dt)
    def _render_entry(self, function_name, bufs): return f"/* entry of {function_name}: {len(bufs)} arguments */"
  class Instance(L.ClangRenderer):
    def __init__(self): self.nan, self.extra_args, self.gep_arr_threshold = "NAN_I", ["int core_id", "int n_cores"], 2
  # settings the pipeline reads too: each kernel goes through the pipeline with the subclass itself
  class CodeForOpKeys(L.ClangRenderer):   # MAX and EXP2 are rendered, not decomposed
    code_for_op = {**L.ClangRenderer.code_for_op, Ops.MAX: lambda a, b, dtype: f"max({a},{b})",
                   Ops.EXP2: lambda x, dtype: f"__builtin_exp2f({x})"}
  workitems = {"g": lambda x: f"gid({x})", "l": lambda x: f"lid({x})", "i": lambda x: f"(gid({x})*lsz({x})+lid({x}))"}
  class Plain(L.CStyleLanguage): code_for_workitem = workitems   # CStyleLanguage's own defaults: sqrt, exp2, INFINITY, float4 None
  class Gpu(L.CStyleLanguage):
    kernel_typedef = "__kernel void __attribute__((reqd_work_group_size({launch_bounds}, 1, 1)))"
    buffer_prefix, smem_prefix, smem_align = "__global ", "__local ", "__attribute__ ((aligned (16))) "
    barrier, float4, code_for_workitem = "barrier(CLK_LOCAL_MEM_FENCE);", "(float4)", workitems
    type_map = {dtypes.uint8: "uchar", dtypes.uint32: "uint", dtypes.uint64: "ulong", dtypes.bfloat16: "ushort"}
  class GpuNoCastPrefix(Gpu): smem_prefix_for_cast, gep_arr_threshold = False, 0
  return {k: v for k, v in locals().items() if isinstance(v, type) and issubclass(v, L.CStyleLanguage)}

TG = variants(types.SimpleNamespace(ClangRenderer=tg_cstyle.ClangRenderer, CStyleLanguage=tg_cstyle.CStyleLanguage, Ops=TgOps,
                                    dtypes=tg_dtypes, UPat=TgUPat, PatternMatcher=TgPatternMatcher, base_rewrite=tg_cstyle.base_rewrite))
TC = variants(types.SimpleNamespace(ClangRenderer=cstyle.ClangRenderer, CStyleLanguage=cstyle.CStyleLanguage, Ops=tinyc.Ops,
                                    dtypes=tinyc.dtypes, UPat=tinyc.UPat, PatternMatcher=tinyc.PatternMatcher, base_rewrite=cstyle.base_rewrite))
# the variants whose settings only rendering reads share tinygrad's ClangRenderer programs (heuristic opts); Workitem's need THREAD
RENDER_ONLY = ("KernelTypedef", "LaunchBounds", "Buffers", "TypeMap", "InfNan", "ExtraArgs", "Float4", "Gep", "CodeForOp", "RenderDtype",
               "RenderCast", "RenderKernel", "StringRewrite", "ClangMethods", "Instance")
THREADED = ("Workitem", "LaunchBounds", "Instance")
OWN_PIPELINE = {"CodeForOpKeys": None, "Plain": [], "Gpu": None, "GpuNoCastPrefix": None}   # opts: None is tinygrad's heuristics

def outcome(fn):
  """fn()'s text, or ("raises", the name of the exception it raised)"""
  try: return fn()
  except Exception as e: return ("raises", type(e).__name__)

def tc_uops(tg_uops):
  """tinyc's nodes for a linear list of tinygrad's, converted as one graph"""
  return list(from_tinygrad(TgUOp(TgOps.SINK, tg_dtypes.void, tuple(tg_uops))).src)

Case = collections.namedtuple("Case", "variant kernel ast program uops expected")

@functools.cache
def cases():
  """every (variant, kernel): tinygrad's program (and its uops as tinyc's) that the variant renders, and what the tinygrad
  subclass renders from them"""
  out = []
  def add(variants, kernel, ast, p):
    uops = tc_uops(p.uops)
    out.extend(Case(v, kernel, ast, p, uops, outcome(lambda: TG[v]().render(p.uops))) for v in variants)
  for i, (kernel, ast) in enumerate(corpus.kernel_asts()):
    add(RENDER_ONLY, kernel, ast, tg_get_program(ast, tg_cstyle.ClangRenderer()))
    if i % 3 == 0:
      try: add(THREADED, kernel, ast, tg_get_program(ast, tg_cstyle.ClangRenderer(), opts=[TgOpt(TgOptOps.THREAD, 0, 2)]))
      except TgKernelOptError: pass
    if i % 3 == 1:
      for v, opts in OWN_PIPELINE.items(): add((v,), kernel, ast, tg_get_program(ast, TG[v](), opts=opts))
  return out

def report(label, results):
  by_variant = collections.defaultdict(lambda: [0, 0])
  for case, same in results:
    by_variant[case.variant][0] += same
    by_variant[case.variant][1] += 1
  same, n = sum(s for s, _ in by_variant.values()), sum(k for _, k in by_variant.values())
  print(f"\n{label}: {same}/{n} = {same / n:.1%} identical over {len(by_variant)} subclasses")
  for v, (s, k) in by_variant.items():
    if s != k: print(f"  {v}: {s}/{k}")
  return same, n

def test_cases_cover_the_settings():
  cs = cases()
  rendered = [c.expected for c in cs if isinstance(c.expected, str)]
  counts = collections.Counter(c.variant for c in cs)
  assert all(counts[v] >= 10 for v in TG), counts
  for text in ("restrict", "__builtin_inff()", "NANF", "(vector float4){ ", "__local ", "barrier(CLK", "reqd_work_group_size(16", "lid(",
               "core_id /* dim 0 */", "T_T_float*", "CAST(", "#define KERNEL", "F;", "++Lidx", "/* vector */", "/* entry of", "add(",
               "sqrt_float", "max(", "__builtin_exp2f(", "exp2(", "NAN_I", "int n_cores", ".y", "[1]", "uint "):
    assert any(text in s for s in rendered), text

def test_render_identity():
  results = [(c, outcome(lambda: TC[c.variant]().render(c.uops)) == c.expected) for c in cases()]
  same, n = report("render() of tinygrad's uops", results)
  assert same == n

def test_get_program_identity():
  def src(p): return p.src.replace(p.function_name, strip_counter(p.function_name))
  results = []
  for c in cases():
    expected = c.expected.replace(c.program.function_name, strip_counter(c.program.function_name)) if isinstance(c.expected, str) else c.expected
    got = outcome(lambda: src(get_program(from_tinygrad(c.ast), TC[c.variant](), opts=tc_opts(c.program.applied_opts))))
    results.append((c, got == expected))
  same, n = report("get_program(...).src", results)
  assert same == n

def test_cstyle_language_defaults_are_tinygrads():
  tg, tc = tg_cstyle.CStyleLanguage(), cstyle.CStyleLanguage()
  for attr in ("kernel_typedef", "buffer_prefix", "buffer_suffix", "smem_align", "smem_prefix", "smem_prefix_for_cast", "arg_int_prefix",
               "barrier", "extra_args", "float4", "float4_style", "gep_arr_threshold", "infinity", "nan", "device", "has_local", "global_max"):
    assert getattr(tg, attr) == getattr(tc, attr), attr
  assert tc.code_for_workitem == {} and tc.type_map == {}
  assert [k.name for k in tg.code_for_op] == [k.name for k in tc.code_for_op]
  for k, fn in tc.code_for_op.items():
    args = ["a", "b", "c"][:{"WHERE": 3}.get(k.name, 1 if k.name in ("SQRT", "RECIPROCAL", "NEG", "EXP2", "LOG2", "SIN", "TRUNC") else 2)]
    assert tg.code_for_op[TgOps[k.name]](*args, tg_dtypes.float) == fn(*args, tinyc.dtypes.float)
  assert tc.extra_matcher is cstyle.extra_pm and tc.string_rewrite is cstyle.base_rewrite
  assert cstyle.ClangRenderer.code_for_workitem["g"]("0") == "core_id"
  assert tinyc.CStyleLanguage is cstyle.CStyleLanguage and tinyc.ClangJITRenderer is cstyle.ClangJITRenderer
  from tinyc.renderer import Renderer
  assert Renderer is tinyc.Renderer and issubclass(cstyle.ClangRenderer, cstyle.CStyleLanguage)
  for dt in ("bool", "half", "float", "uint8", "bfloat16"):
    for v in (1, 4):
      tg_dt, tc_dt = (getattr(tg_dtypes, dt).vec(v), getattr(tinyc.dtypes, dt).vec(v)) if v > 1 else (getattr(tg_dtypes, dt), getattr(tinyc.dtypes, dt))
      assert tg.render_dtype(tg_dt) == tc.render_dtype(tc_dt) and tg.render_cast(tg_dt, "x") == tc.render_cast(tc_dt, "x")
      from tinygrad.dtype import AddrSpace as TgAddrSpace
      assert tg.render_dtype(tg_dt.ptr(4, TgAddrSpace.LOCAL)) == tc.render_dtype(tc_dt.ptr(4, tinyc.AddrSpace.LOCAL))

def test_rules_outside_a_render():
  """base_rewrite reads the settings of whatever renderer is its ctx, in a render or not"""
  for v in ("InfNan", "RenderCast", "Gpu"):
    for val in (float("inf"), float("-inf"), float("nan"), 1.5):
      tg_u, tc_u = TgUOp.const(tg_dtypes.half, val), tinyc.UOp.const(tinyc.dtypes.half, val)
      assert tg_cstyle.base_rewrite.rewrite(tg_u, ctx=TG[v]()) == cstyle.base_rewrite.rewrite(tc_u, ctx=TC[v]())

def test_extra_matchers():
  """create_non_native_float_pats and pm_manual_bf16_cast rewrite as tinygrad's"""
  from test_cstyle import _extra_matcher_cases
  for names, casting in ((("half",), True), (("bfloat16", "half"), False), (("bfloat16",), True)):
    tg_pm = tg_cstyle.create_non_native_float_pats(tuple(getattr(tg_dtypes, n) for n in names), casting) + tg_cstyle.pm_manual_bf16_cast
    tc_pm = cstyle.create_non_native_float_pats(tuple(getattr(tinyc.dtypes, n) for n in names), casting) + cstyle.pm_manual_bf16_cast
    for tg_u, tc_u in zip(_extra_matcher_cases(TgUOp, TgOps, tg_dtypes), _extra_matcher_cases(tinyc.UOp, tinyc.Ops, tinyc.dtypes)):
      assert from_tinygrad(tg_graph_rewrite(tg_u.sink(), tg_pm)) is tinyc.graph_rewrite(tc_u.sink(), tc_pm), str(tg_u)
  with pytest.raises(TypeError): cstyle.create_non_native_float_pats(("half",))

def test_clang_jit_renderer():
  r = cstyle.ClangJITRenderer()
  assert isinstance(r.compiler, tinyc.ClangCompiler) and r.compiler is not cstyle.ClangJITRenderer().compiler
  assert cstyle.ClangRenderer().compiler is None and r.device == "CPU"
  back = pickle.loads(pickle.dumps(r))
  assert type(back) is cstyle.ClangJITRenderer and isinstance(back.compiler, tinyc.ClangCompiler)
  name, ast = corpus.kernel_asts()[0]
  p, plain = get_program(from_tinygrad(ast), r), get_program(from_tinygrad(ast), cstyle.ClangRenderer())
  assert p.lib is not None and plain.lib is None
  assert p.src.replace(p.function_name, "K") == plain.src.replace(plain.function_name, "K")
  with pytest.raises(TypeError): cstyle.ClangJITRenderer(1)

@pytest.mark.parametrize("cls", [cstyle.ClangRenderer, cstyle.CStyleLanguage, cstyle.ClangJITRenderer, tinyc.Renderer, TC["Gpu"]])
def test_renderer_cycles_are_collected(cls):
  deleted = []
  class Stored:
    def __del__(self): deleted.append(True)
  r = cls()
  assert gc.is_tracked(r)
  r.me, r.stored = r, Stored()
  ref = weakref.ref(r)
  del r
  gc.collect()
  assert ref() is None and deleted == [True]

def test_bad_input():
  U, D, O = tinyc.UOp, tinyc.dtypes, tinyc.Ops
  x = U(O.DEFINE_VAR, D.float, (), ("x", 0, 1))
  add = U(O.ADD, D.float, (x, x))
  for ctx in (object(), 3, {x: "x"}, None):
    with pytest.raises(TypeError): cstyle.base_rewrite.rewrite(add, ctx=ctx)
  with pytest.raises(TypeError): cstyle.base_rewrite.rewrite(U.const(D.half, float("inf")), ctx=tinyc.Renderer())
  buf, zero = U(O.DEFINE_GLOBAL, D.float.ptr(4), (), 0), U.const(D.int, 0)
  idx = U(O.INDEX, D.float.ptr(4), (buf, zero))
  store = U(O.STORE, D.void, (idx, add))
  uops = [buf, x, zero, idx, add, store, U(O.SINK, D.void, (store,))]
  class Raises(cstyle.ClangRenderer): code_for_op = {**cstyle.ClangRenderer.code_for_op, O.ADD: lambda a, b, dtype: 1 / 0}
  with pytest.raises(ZeroDivisionError): Raises().render(uops)
  class NotStr(cstyle.ClangRenderer):
    def render_dtype(self, dt, mutable=True): return 7
  with pytest.raises(TypeError, match="render_dtype"): NotStr().render(uops)
  class BadSetting(cstyle.ClangRenderer): kernel_typedef = 3
  with pytest.raises(TypeError, match="kernel_typedef"): BadSetting().render(uops)
  class BadRewrite(cstyle.ClangRenderer): string_rewrite = "not a matcher"
  with pytest.raises(TypeError, match="string_rewrite"): BadRewrite().render(uops)
  with pytest.raises(TypeError): cstyle.ClangRenderer.code_for_op[O.ADD]("a", D.float)   # one operand short
  with pytest.raises(KeyError): cstyle.ClangRenderer().render([U(O.EXP2, D.float, (x,))])   # x was never rendered
  vec = [x, U(O.VECTORIZE, D.float.vec(2), (x, x))]   # CStyleLanguage's float4 is None
  assert outcome(lambda: TC["Plain"]().render(vec)) == outcome(lambda: TG["Plain"]().render([to_tinygrad(u) for u in vec])) == ("raises", "AttributeError")
  assert cstyle.ClangRenderer().render(uops) == _C.ClangRenderer().render(uops)

def test_a_native_class_follows_its_mutable_settings():
  """a plain ClangRenderer reads its class's settings at each render, so a changed type_map or extra_args shows, as in tinygrad"""
  U, D, O = tinyc.UOp, tinyc.dtypes, tinyc.Ops
  buf, zero = U(O.DEFINE_GLOBAL, D.float.ptr(4), (), 0), U.const(D.int, 0)
  idx = U(O.INDEX, D.float.ptr(4), (buf, zero))
  load = U(O.LOAD, D.float, (idx,))
  square = U(O.MUL, D.float, (load, load))
  store = U(O.STORE, D.void, (idx, square))
  uops = [buf, zero, idx, load, square, store, U(O.SINK, D.void, (store,))]
  cls = cstyle.ClangRenderer
  try:
    cls.type_map[D.float] = "f32"
    cls.extra_args.append("int n_cores")
    assert cls().render(uops).splitlines()[1] == "void test(f32* restrict data0_4, int core_id, int n_cores) {"
  finally:
    del cls.type_map[D.float]
    cls.extra_args.remove("int n_cores")
  assert cls().render(uops).splitlines()[1] == "void test(float* restrict data0_4, int core_id) {"
