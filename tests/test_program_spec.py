"""tinygrad/renderer/__init__.py's Estimates and ProgramSpec, as tinyc's C types, against tinygrad 0.12.0.

tinygrad's get_program ends in ProgramSpec.from_uop(prg); a spy captures prg (and tinygrad's spec) for every kernel of
the shared corpus, lowered with the Clang renderer, the OpenCL renderer (locals) and OpenCL without locals (global
ids), and a few kernels with the CPU device's renderer that compiles (a BINARY source, threads). tinyc's from_uop of
the bridged prg must give tinygrad's spec field by field (UOps through the bridge, by identity), and the same
estimates, function name, applied opts and launch dims."""
import dataclasses, functools, pickle, random
import pytest
import tinyc
from tinyc.tinygrad import from_tinygrad, to_tinygrad, _to_tc_arg
from tinygrad import Device
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps
from tinygrad.renderer import ProgramSpec as TgProgramSpec, Estimates as TgEstimates
from tinygrad.renderer.cstyle import ClangRenderer, OpenCLRenderer
from tinygrad.uop.ops import UOp as TgUOp, Ops as TgOps, KernelInfo as TgKernelInfo
from tinygrad.dtype import dtypes as tg_dtypes
from corpus import kernel_asts

def _capture(renderer, asts, opts=None):
  """[(kernel name, tinygrad's PROGRAM UOp, tinygrad's ProgramSpec)] from get_program over asts"""
  out, orig = [], TgProgramSpec.__dict__["from_uop"]
  def spy(prg):
    ret = orig.__func__(prg)
    out.append((current, prg, ret))
    return ret
  TgProgramSpec.from_uop = staticmethod(spy)
  try:
    for current, ast in asts:
      try: get_program(ast if opts is None else ast.replace(arg=None), renderer, opts)
      except Exception: continue   # an opt that does not apply to this kernel
  finally: TgProgramSpec.from_uop = orig
  return out

@functools.cache
def captured(kind):
  asts = kernel_asts()
  if kind == "clang": return _capture(ClangRenderer(), asts)
  if kind == "cl": return _capture(OpenCLRenderer(), asts)
  if kind == "cl_nolocals": return _capture(OpenCLRenderer(), asts, [TgOpt(TgOptOps.NOLOCALS)])
  if kind == "cpu_compiled": return _capture(Device["CPU"].renderer, [a for a in asts if a[0].split("/")[0] in
                                                                      ("matmul", "sum", "symbolic_sum", "softmax")])
  raise ValueError(kind)

KINDS = ["clang", "cl", "cl_nolocals", "cpu_compiled"]

def conv(x):
  """a tinygrad value as tinyc's: UOps through the bridge, lists/tuples item by item"""
  if isinstance(x, TgUOp): return from_tinygrad(x)
  if isinstance(x, list): return [conv(v) for v in x]
  if isinstance(x, tuple): return tuple(conv(v) for v in x)
  if isinstance(x, TgOpt): return tinyc.Opt(tinyc.OptOps(x.op.value), x.axis, x.arg)
  if isinstance(x, TgEstimates): return tinyc.Estimates(conv(x.ops), conv(x.lds), conv(x.mem))
  return _to_tc_arg(x)   # dtypes (OpenCL's aux), enums, ...

def same(a, b):
  """equal, UOps by identity (tinyc UOps are hash-consed; their == builds a CMPEQ)"""
  if isinstance(a, tinyc.UOp) or isinstance(b, tinyc.UOp): return a is b
  if isinstance(a, (list, tuple)): return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
  if isinstance(a, tinyc.Estimates): return isinstance(b, tinyc.Estimates) and all(same(getattr(a, f), getattr(b, f)) for f in ("ops", "lds", "mem"))
  return type(a) is type(b) and a == b

def some_var_vals(tg_spec):
  return {v.arg[0]: (v.arg[1] + v.arg[2]) // 2 + 1 for v in tg_spec.vars}

def mismatches(tg, tc):
  """the names of the fields/properties where tinyc's spec differs from tinygrad's"""
  bad = [f.name for f in dataclasses.fields(TgProgramSpec) if f.name != "uops" and not same(conv(getattr(tg, f.name)), getattr(tc, f.name))]
  # uops: tinygrad's list as one LINEAR through the bridge (one conversion), item by item
  if not (tc.uops is None if tg.uops is None else same(list(from_tinygrad(TgUOp(TgOps.LINEAR, src=tuple(tg.uops))).src), tc.uops)):
    bad.append("uops")
  if not same(conv(tg.estimates), tc.estimates): bad.append("estimates")
  if tg.uops is not None and not same(conv(TgEstimates.from_uops(tg.uops)), tinyc.Estimates.from_uops(tc.uops)): bad.append("from_uops")
  if tg.function_name != tc.function_name: bad.append("function_name")
  if not same(conv(tg.applied_opts), tc.applied_opts): bad.append("applied_opts")
  vv = some_var_vals(tg)
  if not same(conv(tg.launch_dims(vv)), tc.launch_dims(vv)): bad.append("launch_dims")
  return bad

@pytest.mark.parametrize("kind", KINDS)
def test_from_uop_matches_tinygrad(kind):
  cases = captured(kind)
  assert len(cases) >= (4 if kind == "cpu_compiled" else 40)
  bad = {}
  for name, prg, tg in cases:
    if (m := mismatches(tg, tinyc.ProgramSpec.from_uop(from_tinygrad(prg)))): bad[name] = m
  print(f"ProgramSpec.from_uop ({kind}): {len(cases) - len(bad)}/{len(cases)} identical")
  assert not bad, bad

def test_corpus_covers_the_cases():
  specs = [tg for kind in KINDS for _, _, tg in captured(kind)]
  assert any(tg.local_size is None for tg in specs)                                  # a global-id SPECIAL
  assert any(tg.local_size is not None and tg.local_size != [1, 1, 1] for tg in specs)  # local sizes
  assert any(tg.lib is not None for tg in specs)                                     # a BINARY source
  assert any(tg.vars for tg in specs)
  assert any(isinstance(tg.estimates.ops, TgUOp) for tg in specs)                    # symbolic estimates
  assert any(isinstance(s, TgUOp) for tg in specs for s in tg.global_size)           # a symbolic launch size
  assert any(tg.outs and tg.ins for tg in specs)

def test_repr_as_tinygrad():
  n = ok = 0
  for kind in KINDS:
    for _, prg, tg in [c for c in captured(kind) if len(c[2].uops) <= 120][:8]:   # (a uop's repr spells out its whole graph)
      tc = tinyc.ProgramSpec.from_uop(from_tinygrad(prg))
      n, ok = n + 1, ok + (repr(tc) == repr(tg) and repr(tc.estimates) == repr(tg.estimates))
  print(f"ProgramSpec repr: {ok}/{n} identical")
  assert ok == n

def test_binary_source_gives_lib():
  _, prg, _ = captured("cl")[0]
  prg = prg.replace(src=prg.src + (TgUOp(TgOps.BINARY, arg=b"\x7fELF\x00\xff lib"),))
  tg, tc = TgProgramSpec.from_uop(prg), tinyc.ProgramSpec.from_uop(from_tinygrad(prg))
  assert tc.lib == tg.lib == b"\x7fELF\x00\xff lib" and not mismatches(tg, tc)
  # the bridge carries SOURCE's str and BINARY's bytes both ways
  assert to_tinygrad(from_tinygrad(prg)) is prg and from_tinygrad(prg).src[3].arg == prg.src[3].arg

def test_aux_from_program_arg():
  _, prg, _ = captured("clang")[0]
  prg = prg.replace(arg=(("x", 1), 2))
  tg, tc = TgProgramSpec.from_uop(prg), tinyc.ProgramSpec.from_uop(from_tinygrad(prg))
  assert tc.aux == tg.aux == [("x", 1), 2] and not mismatches(tg, tc)

def test_from_uop_bad_input_raises_as_tinygrad():
  _, prg, _ = captured("clang")[0]
  for bad in (prg.src[0], prg.replace(src=prg.src[:2])):
    with pytest.raises(Exception) as tg_err: TgProgramSpec.from_uop(bad)
    with pytest.raises(type(tg_err.value)): tinyc.ProgramSpec.from_uop(from_tinygrad(bad))
  with pytest.raises(TypeError): tinyc.ProgramSpec.from_uop("PROGRAM")

# ---- ProgramSpec as a dataclass ----

def a_spec(kind="cl", i=0):
  _, prg, tg = captured(kind)[i]
  return tg, tinyc.ProgramSpec.from_uop(from_tinygrad(prg))

def test_construction_defaults_as_tinygrad():
  tg_ast, tc_ast = TgUOp.sink(arg=TgKernelInfo()), tinyc.UOp.sink(arg=tinyc.KernelInfo())
  tg, tc = TgProgramSpec("E_4", "src", "CPU", tg_ast), tinyc.ProgramSpec("E_4", "src", "CPU", tc_ast)
  assert not mismatches(tg, tc)
  assert tc.estimates == tinyc.Estimates() and tc.applied_opts is None and tc.launch_dims({}) == ([1, 1, 1], None)
  # default lists are fresh per instance, as default_factory
  tc2 = tinyc.ProgramSpec(name="E_4", src="src", device="CPU", ast=tc_ast)
  tc2.global_size[0] = 7
  assert tc.global_size == [1, 1, 1] and tc != tc2
  tc2.global_size[0] = 1
  assert tc == tc2
  with pytest.raises(TypeError): hash(tc)
  assert repr(tc) == repr(tg)
  with pytest.raises(TypeError): tinyc.ProgramSpec("E_4", "src", "CPU")
  with pytest.raises(TypeError): tinyc.ProgramSpec("E_4", "src", "CPU", tc_ast, lib="not bytes")
  with pytest.raises(TypeError): tinyc.ProgramSpec("E_4", "src", "CPU", tc_ast, uops=[1, 2])

def test_function_name_as_tinygrad():
  tc_ast = tinyc.UOp.sink(arg=tinyc.KernelInfo())
  for name in ("r_16_4\x1b[31m_3\x1b[0m", "E_\x1b[K4n1", "x.y-z", "ünï", "a b"):
    tg = TgProgramSpec(name, "", "CPU", TgUOp.sink(arg=TgKernelInfo()))
    assert tinyc.ProgramSpec(name, "", "CPU", tc_ast).function_name == tg.function_name

def test_replace():
  tg, tc = a_spec()
  new = tc.replace(lib=b"123", global_size=[4, 2, 1])
  tg_new = dataclasses.replace(tg, lib=b"123", global_size=[4, 2, 1])
  assert not mismatches(tg_new, new) and not mismatches(tg, tc)
  assert new is not tc and new != tc and tc.replace() == tc
  with pytest.raises(TypeError): tc.replace(nonsense=1)
  with pytest.raises(TypeError): tc.replace(lib=5)

def test_fields_are_mutable_and_checked():
  _, tc = a_spec()
  tc.lib = b"abc"
  assert tc.lib == b"abc"
  with pytest.raises(TypeError): tc.ast = 3
  with pytest.raises(AttributeError): del tc.name

def has_nan(u):
  return any(x.op is tinyc.Ops.CONST and isinstance(x.arg, float) and x.arg != x.arg for x in u.toposort())

@pytest.mark.parametrize("kind", ["cl", "cpu_compiled"])
def test_pickle_round_trip(kind):
  for _, prg, tg in captured(kind)[:12]:
    tc = tinyc.ProgramSpec.from_uop(from_tinygrad(prg))
    back = pickle.loads(pickle.dumps(tc))
    # a CONST whose arg is a NaN comes back as another node (nan != nan, in tinygrad's interning too): compare by key
    assert back.ast.key == tc.ast.key and [u.key for u in back.uops] == [u.key for u in tc.uops]
    assert all(same(getattr(back, f), getattr(tc, f)) for f in ("name", "src", "device", "lib", "aux", "global_size", "local_size",
                                                                 "vars", "globals", "outs", "ins"))
    if not has_nan(tc.ast): assert back == tc and not mismatches(tg, back) and back.ast is tc.ast

def test_corrupt_pickles_raise():
  _, tc = a_spec("cpu_compiled")
  data = pickle.dumps(tc)
  for n in range(0, len(data), max(1, len(data) // 200)):
    with pytest.raises(Exception): pickle.loads(data[:n])
  rng, outcomes = random.Random(0), {}
  for _ in range(300):
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)): b[rng.randrange(len(b))] = rng.randrange(256)
    try: pickle.loads(bytes(b)); outcomes["loaded"] = outcomes.get("loaded", 0) + 1
    except Exception as e: outcomes[type(e).__name__] = outcomes.get(type(e).__name__, 0) + 1
  print("corrupted pickles:", outcomes)
  # well-formed pickles whose fields have the wrong types
  for bad in ((tinyc.ProgramSpec, ("n", "s", "CPU", tc.ast, None, 12)), (tinyc.ProgramSpec, ("n", "s", "CPU", "ast")),
              (tinyc.ProgramSpec, ("n", "s", "CPU", tc.ast, [tc.ast, "x"])), (tinyc.ProgramSpec, (1, 2, 3, 4))):
    class Evil:
      def __reduce__(self, bad=bad): return bad
    with pytest.raises(TypeError): pickle.loads(pickle.dumps(Evil()))

# ---- Estimates ----

def test_estimates_dataclass_as_tinygrad():
  for a, b in (((), ()), ((1, 2, 3), (4, 5, 6)), ((0, 7), (9,))):
    tg, tc = TgEstimates(*a) + TgEstimates(*b), tinyc.Estimates(*a) + tinyc.Estimates(*b)
    assert (tc.ops, tc.lds, tc.mem) == (tg.ops, tg.lds, tg.mem) and repr(tc) == repr(tg)
    assert tc == tinyc.Estimates(*dataclasses.astuple(tg)) and hash(tc) == hash(tinyc.Estimates(tg.ops, tg.lds, tg.mem))
    assert pickle.loads(pickle.dumps(tc)) == tc
  assert tinyc.Estimates(ops=1, mem=2) == tinyc.Estimates(1, 0, 2) != tinyc.Estimates(1, 0, 3)
  with pytest.raises(dataclasses.FrozenInstanceError): tinyc.Estimates().ops = 1
  with pytest.raises(TypeError): tinyc.Estimates() + 1

def test_estimates_symbolic_add_and_simplify():
  tv = TgUOp.variable("n", 1, 32)
  tg = (TgEstimates(tv * 4, 2, 3) + TgEstimates(tv * 2 + 0, tv, 1))
  tc = tinyc.Estimates(*conv((tv * 4, 2, 3))) + tinyc.Estimates(*conv((tv * 2 + 0, tv, 1)))
  assert same(conv(tg), tc) and same(conv(tg.simplify()), tc.simplify())
  back = pickle.loads(pickle.dumps(tc))
  assert back.ops is tc.ops and back.lds is tc.lds

def test_estimates_from_uops_ignore_indexing_both_ways():
  n, ok = 0, 0
  for kind in ("clang", "cl"):
    for _, _, tg in captured(kind):
      tc_uops = list(from_tinygrad(TgUOp(TgOps.LINEAR, src=tuple(tg.uops))).src)
      for ii in (False, True):
        n += 1
        ok += same(conv(TgEstimates.from_uops(tg.uops, ignore_indexing=ii)), tinyc.Estimates.from_uops(tc_uops, ignore_indexing=ii))
  print(f"Estimates.from_uops: {ok}/{n} identical")
  assert ok == n

def test_estimates_from_uops_bad_input():
  with pytest.raises(TypeError): tinyc.Estimates.from_uops([1, 2])
  with pytest.raises(TypeError): tinyc.Estimates.from_uops(5)
  end = tinyc.UOp(tinyc.Ops.END, tinyc.dtypes.void, ())
  with pytest.raises(IndexError): tinyc.Estimates.from_uops([end])
  with pytest.raises(IndexError): tinyc.Estimates.from_uops([tinyc.UOp(tinyc.Ops.LOAD, tinyc.dtypes.float, ())])
  assert tinyc.Estimates.from_uops([]) == tinyc.Estimates()

def test_estimates_counts_past_64_bits_and_symbolic_as_tinygrad():
  """the counts are C integers while they fit: a product past 2**63, a symbolic range inside and after int ones, and
  a huge count under a symbolic one give tinygrad's Python numbers"""
  buf = TgUOp(TgOps.DEFINE_GLOBAL, tg_dtypes.float.ptr(16), (), 0)
  v = TgUOp.variable("n", 1, 2**40)
  def kernel(*bounds):
    rngs = [TgUOp.range(b, i) for i, b in enumerate(bounds)]
    x = TgUOp.const(tg_dtypes.float, 1.0)
    for r in rngs: x = x + r.cast(tg_dtypes.float)
    st = buf.index(rngs[-1]).store(x)
    ends = [TgUOp(TgOps.END, tg_dtypes.void, (st, r)) for r in reversed(rngs)]
    return list(dict.fromkeys([buf] + [u for r in rngs for u in r.toposort()] + list(x.toposort()) + list(st.toposort()) + ends))
  for bounds in ((2**40, 2**40), (2**62, 4, 3), (7, v, 2**40), (v, 2**50, 2**30), (2**31, 2**31, v)):
    uops = kernel(*bounds)
    tc_uops = list(from_tinygrad(TgUOp(TgOps.LINEAR, src=tuple(uops))).src)
    for ii in (False, True):
      assert same(conv(TgEstimates.from_uops(uops, ignore_indexing=ii)), tinyc.Estimates.from_uops(tc_uops, ignore_indexing=ii)), bounds

def test_estimates_wmma_as_tinygrad():
  tg_a = TgUOp.variable("a", 0, 3, tg_dtypes.float).cast(tg_dtypes.float.vec(8))
  tg_w = TgUOp(TgOps.WMMA, tg_dtypes.float.vec(8), (tg_a, tg_a, tg_a), ("WMMA_8_16_16", (8, 16, 16), tg_dtypes.half, tg_dtypes.float, "CUDA", 32, (), ()))
  rng = TgUOp.range(4, 0)
  uops = [rng, tg_w, TgUOp(TgOps.END, tg_dtypes.void, (tg_w, rng))]
  tc_uops = list(from_tinygrad(TgUOp(TgOps.LINEAR, src=tuple(uops))).src)
  assert same(conv(TgEstimates.from_uops(uops)), tinyc.Estimates.from_uops(tc_uops))
