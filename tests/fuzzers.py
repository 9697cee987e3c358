"""The fuzzers of tinyc's native code: hypothesis strategies of cases and the code that runs one case.

The property is the one tinyc promises: any input gives a correct result or a Python exception, never a crash. A
crash cannot be caught in the process it kills, so each fuzzer runs in a child process (fuzz_child.py) that logs every
case before running it; the parent (test_fuzz.py, `make fuzz`) reports the last case of a child that died, with the
command that replays it. A case is a plain Python literal (ints, strs, tuples, lists, dicts), so it is its own
reproducer: `python tests/fuzz_child.py --replay <fuzzer> '<case>'`.

Besides crashes a case fails on an exception that means a bug in native code rather than bad input: SystemError
(a C function returned NULL without an exception, or a result with one set) and tinyc's internal asserts."""
import math, pickle, random, sys, pathlib
from hypothesis import strategies as st

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import tinyc
from tinyc import UOp, Ops, dtypes, AxisType, Opt, OptOps, UPat, PatternMatcher, graph_rewrite, KernelInfo
from tinyc import _C

class FuzzBug(AssertionError):
  """an outcome that is a bug of tinyc's, not an answer to bad input"""

def expect_no_bug(fn, *args, **kwargs):
  """fn's result, or None when it raised an ordinary exception; FuzzBug for the exceptions that mean a native bug"""
  try: return fn(*args, **kwargs)
  except SystemError as e: raise FuzzBug(f"{type(e).__name__}: {e}") from e
  except RecursionError as e: raise FuzzBug(f"{type(e).__name__}: {e}") from e   # the cases are small: a native loop
  except Exception: return None

# ---------------------------------------------------------------------------------------------------------------
# pools the cases index into (a case holds indices, so it prints and replays as a literal)
# ---------------------------------------------------------------------------------------------------------------

OPS = list(Ops)
SCALARS = [dtypes.void, dtypes.index, dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32,
           dtypes.uint32, dtypes.int64, dtypes.uint64, dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
           dtypes.fp8e4m3, dtypes.fp8e5m2]
DTYPES = SCALARS + [dtypes.float.vec(4), dtypes.int.vec(2), dtypes.float.vec(0), dtypes.int.vec(1024), dtypes.bool.vec(3), dtypes.half.vec(8), dtypes.index.vec(2),
                    dtypes.float.ptr(16), dtypes.float.ptr(-1), dtypes.int.ptr(0), dtypes.float.vec(4).ptr(8),
                    dtypes.float.ptr(4, tinyc.AddrSpace.LOCAL), dtypes.float.ptr(4, tinyc.AddrSpace.REG), dtypes.half.ptr(3)]
JUNK_DTYPES = [None, "float", 3, object(), dtypes]   # not dtypes at all: the constructor must refuse them

class RaisingHash:
  def __hash__(self): raise ValueError("no hash")
class RaisingEq:
  def __eq__(self, o): raise ValueError("no eq")
  def __hash__(self): return 7
class Weird:
  def __index__(self): return 10**30
  def __int__(self): return -1
  def __repr__(self): return "Weird()"

def _args():
  return [None, 0, 1, -1, 2, 3, 7, 16, 2**31, 2**63, 2**64 + 1, -2**63, 10**40, 0.0, -0.0, 0.5, 1e300, math.inf, -math.inf, math.nan,
          True, False, "", "x", "g", "l", "i", "gidx0", "{0}+{1}", "{9}", b"", b"\x7fELF", (), (0,), (1,), (-1,), (0, 1), (5,), (2**40,),
          (0, 0), ((0, 0),), ((0, 4),), ((1, 2), (0, 3)), ((0, -1),), ((0, 2**40),), (0, AxisType.LOOP), (1, AxisType.REDUCE),
          (0, 1, AxisType.UPCAST), (AxisType.LOOP,), (-3, AxisType.GLOBAL), ("a", AxisType.LOOP), (0, "LOOP"),
          ("n", 0, 10), ("n", 5, 2), ("n", 0.5, 1e9), ("n",), (1, 2, 3), Ops.ADD, Ops.MAX, Ops.STORE, (Ops.ADD, (0,)),
          (Ops.MUL, (0, 1)), (Ops.ADD, "x"), AxisType.LOOP, tinyc.Invalid, (1.0, 2.0, 3.0, 4.0), (tinyc.Invalid, 1),
          ("WMMA_8_8_8", (8, 8, 8), dtypes.half, dtypes.float, "CUDA", 32, (), ()), tuple(range(8)), [1, 2], {"a": 1},
          KernelInfo(), KernelInfo(name="k", axis_types=(AxisType.LOOP,)), RaisingHash(), RaisingEq(), Weird(), object()]
ARGS = _args()

def build_graph(nodes):
  """the UOps of a node list [(op, dtype, srcs, arg)]: each src indexes an earlier node, or is -1 for 'no such node';
  a node whose constructor raises is left out (its users see None and are skipped too)"""
  made = []
  for op_i, dt_i, srcs, arg_i in nodes:
    src = [made[s % len(made)] for s in srcs if s >= 0 and made] if made else []
    if any(s is None for s in src): made.append(None); continue
    dt = (DTYPES + JUNK_DTYPES)[dt_i % (len(DTYPES) + len(JUNK_DTYPES))]
    made.append(expect_no_bug(UOp, OPS[op_i % len(OPS)], dt, tuple(src), ARGS[arg_i % len(ARGS)]))
  return [u for u in made if u is not None]

node_st = st.tuples(st.integers(0, len(OPS) - 1), st.integers(0, len(DTYPES) + len(JUNK_DTYPES) - 1),
                    st.lists(st.integers(-1, 12), max_size=4), st.integers(0, len(ARGS) - 1))
graph_st = st.lists(node_st, min_size=1, max_size=12)

# ---------------------------------------------------------------------------------------------------------------
# uop: random UOp(...) calls, then every method on the results
# ---------------------------------------------------------------------------------------------------------------

def _uop_calls():
  """(name, call(u, other)) for every public thing a UOp offers, with arguments of several kinds"""
  calls = [("repr", repr), ("str", str), ("hash", hash), ("key", lambda u, o: u.key), ("toposort", lambda u, o: u.toposort()),
           ("pickle", lambda u, o: pickle.loads(pickle.dumps(u))), ("eq", lambda u, o: u == o), ("lt", lambda u, o: u < o),
           ("substitute", lambda u, o: u.substitute({o: u})), ("replace_src", lambda u, o: u.replace(src=(o,))),
           ("graph_rewrite_symbolic", lambda u, o: graph_rewrite(u, _C.native_rules()["symbolic"])),
           ("sym_infer", lambda u, o: u.sym_infer({"n": 3})), ("add_int", lambda u, o: u + 3), ("mul_float", lambda u, o: u * 0.5),
           ("floordiv", lambda u, o: u // o), ("mod0", lambda u, o: u % 0), ("div0", lambda u, o: u // 0), ("neg", lambda u, o: -u),
           ("shl", lambda u, o: u << 70), ("where", lambda u, o: u.where(o, u)), ("index", lambda u, o: u.index(o)),
           ("index_ptr", lambda u, o: u.index(o, ptr=True)), ("load", lambda u, o: u.load()), ("store", lambda u, o: u.store(o)),
           ("gep0", lambda u, o: u.gep(0)), ("gep_big", lambda u, o: u.gep(100)), ("gep_tuple", lambda u, o: u.gep((0, 1))),
           ("cast", lambda u, o: u.cast(dtypes.float)), ("bitcast", lambda u, o: u.bitcast(dtypes.int)),
           ("vectorize", lambda u, o: u.vectorize(o)), ("broadcast", lambda u, o: u.broadcast(4)), ("end", lambda u, o: u.end(o)),
           ("reduce", lambda u, o: u.reduce(o, arg=Ops.ADD)), ("const_like", lambda u, o: u.const_like(1)),
           ("divides", lambda u, o: u.divides(2)), ("divides0", lambda u, o: u.divides(0)), ("split_uop", lambda u, o: u.split_uop(Ops.ADD)),
           ("reshape", lambda u, o: u.reshape((2, 2))), ("permute", lambda u, o: u.permute((1, 0))), ("pad", lambda u, o: u.pad(((0, 1),))),
           ("shrink", lambda u, o: u.shrink(((0, 1),))), ("expand", lambda u, o: u.expand((4,))), ("flip", lambda u, o: u.flip((0,)))]
  names = [m for m in dir(UOp) if not m.startswith("__")]
  for m in names:   # every attribute, read; every method, called with no argument and with one of each kind
    calls.append((m, lambda u, o, m=m: getattr(u, m)))
    calls.append((m + "()", lambda u, o, m=m: getattr(u, m)()))
    calls.append((m + "(o)", lambda u, o, m=m: getattr(u, m)(o)))
    calls.append((m + "(2)", lambda u, o, m=m: getattr(u, m)(2)))
    calls.append((m + "(-1)", lambda u, o, m=m: getattr(u, m)(-1)))
  return calls
UOP_CALLS = _uop_calls()
SKIP_CALLS = {"range(2)", "range(-1)", "range(o)", "special(2)", "special(-1)", "variable(2)", "variable(-1)"}   # static constructors

uop_case = st.fixed_dictionaries({"nodes": graph_st, "calls": st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
                                                                        min_size=1, max_size=8)})

def run_uop(case):
  us = build_graph(case["nodes"])
  if not us: return
  for pick, call_i in case["calls"]:
    name, call = UOP_CALLS[call_i % len(UOP_CALLS)]
    if name in SKIP_CALLS: continue
    u, o = us[pick % len(us)], us[(pick // 7) % len(us)]
    expect_no_bug(call, u, o)

# ---------------------------------------------------------------------------------------------------------------
# rules: graph_rewrite of random graphs with every native rule set, with ctxs of every kind
# ---------------------------------------------------------------------------------------------------------------

RULE_SETS = sorted(_C.native_rules())
def _ctxs(): return [None, {}, [], tinyc.ClangRenderer(), "ctx", 3, {"x": 1}, object()]

rules_case = st.fixed_dictionaries({"nodes": graph_st, "sets": st.lists(st.integers(0, 10**6), min_size=1, max_size=3),
                                    "ctx": st.integers(0, 7), "bottom_up": st.booleans()})

def run_rules(case):
  us = build_graph(case["nodes"])
  if not us: return
  ctxs, sink = _ctxs(), expect_no_bug(UOp.sink, *us[-3:])
  for s in case["sets"]:
    pm = _C.native_rules()[RULE_SETS[s % len(RULE_SETS)]]
    for root in (us[-1], sink):
      if root is None: continue
      ctx = ctxs[case["ctx"]]
      expect_no_bug(graph_rewrite, root, pm, ctx=ctx, bottom_up=case["bottom_up"])
      expect_no_bug(pm.rewrite, root, ctx)
  expect_no_bug(_C.type_verify, us, _C.native_rules()["full_spec"])
  edges = {us[s % len(us)]: us[(s * 7 + 3) % len(us)] for s in case["sets"]}   # the control flow pass, on edges of any node
  for root in (r for r in (us[-1], sink) if r is not None):
    expect_no_bug(_C.add_control_flow, root, edges)
    expect_no_bug(_C.add_control_flow, root, expect_no_bug(_C.cfg_edges, root) or {})

# ---------------------------------------------------------------------------------------------------------------
# upat: UPats and PatternMatchers from random pieces, Python rules that raise, return junk or loop
# ---------------------------------------------------------------------------------------------------------------

NAMES = ["x", "y", "z", "c", "a", "b", "idx", "zz"]
def build_upat(spec):
  """a UPat from a flat preorder list of pieces (kind, op, dtype, name, number of sources, arg, flags), each piece's
  sources the pieces after it (at most two levels deep); the list is consumed from its end"""
  def take(depth):
    kind, op_i, dt_i, name_i, nsub, arg_i, flags = spec.pop() if spec else (0, -1, -1, -1, 0, -1, 0)
    ops = None if op_i < 0 else (OPS[op_i % len(OPS)] if op_i % 3 else tuple(OPS[(op_i + k) % len(OPS)] for k in range(3)))
    dt = None if dt_i < 0 else DTYPES[dt_i % len(DTYPES)]
    name = None if name_i < 0 else NAMES[name_i % len(NAMES)]
    sub = [take(depth + 1) for _ in range(nsub if depth < 2 else 0)]
    src = None if not sub else (tuple(sub) if flags % 3 == 0 else (list(sub) if flags % 3 == 1 else sub[0]))
    arg = None if arg_i < 0 else ARGS[arg_i % len(ARGS)]
    if kind == 0: return UPat(ops, dt, src, arg, name, allow_any_len=bool(flags & 4))
    if kind == 1: return UPat.var(name or "x", dt)
    if kind == 2: return UPat.cvar(name or "c", dt)
    if kind == 3: return UPat.any(*sub) if sub else UPat(name=name)
    return UPat(ops, name=name).or_casted() if ops is not None else UPat.var("x").named(name or "n")
  spec = list(reversed(spec))
  return take(0)

upat_spec = st.lists(st.tuples(st.integers(0, 4), st.integers(-1, 200), st.integers(-1, 40), st.integers(-1, 8), st.integers(0, 3),
                               st.integers(-1, 80), st.integers(0, 7)), min_size=1, max_size=7)

class LoopBack:
  """a rule that rewrites back and forth between two nodes: graph_rewrite must stop with an exception"""
  def __init__(self): self.flip = False
  def __call__(self, **kw):
    x = next((v for v in kw.values() if isinstance(v, UOp)), None)
    if x is None: return None
    return x + 0 if x.op is not Ops.ADD else x.src[0]

def rule_fn(kind):
  if kind == 0: return lambda **kw: None
  if kind == 1: return lambda **kw: 1 / 0
  if kind == 2: return lambda **kw: "junk"
  if kind == 3: return lambda **kw: 42
  if kind == 4: return LoopBack()
  if kind == 5: return lambda ctx, **kw: ctx
  if kind == 6: return lambda **kw: next(iter(kw.values()), None)
  return lambda **kw: UOp.const(dtypes.int, len(kw))

upat_case = st.fixed_dictionaries({"pats": st.lists(st.tuples(upat_spec, st.integers(0, 7)), min_size=1, max_size=4),
                                   "native": st.integers(-1, 10**6), "nodes": graph_st, "native_first": st.booleans()})

def run_upat(case):
  rules = []
  for spec, fn_kind in case["pats"]:
    p = expect_no_bug(build_upat, spec)
    if p is not None: rules.append((p, rule_fn(fn_kind)))
  pm = expect_no_bug(PatternMatcher, rules)
  if pm is None: return
  if case["native"] >= 0:
    native = _C.native_rules()[RULE_SETS[case["native"] % len(RULE_SETS)]]
    pm = native + pm if case["native_first"] else pm + native
  us = build_graph(case["nodes"])
  for u in us[-2:]:
    expect_no_bug(graph_rewrite, u, pm, ctx={})
    expect_no_bug(graph_rewrite, u, pm, ctx={}, bottom_up=True)
    expect_no_bug(pm.rewrite, u, {})
    for p, _ in rules: expect_no_bug(p.match, u, {})

# ---------------------------------------------------------------------------------------------------------------
# pipeline: get_program, full_rewrite_to_sink, the Scheduler with random opts, linearize and render on mutated kernels
# ---------------------------------------------------------------------------------------------------------------

_corpus = None
def corpus_asts():
  """the corpus kernels as tinyc ASTs (tests/corpus.py), built once per process"""
  global _corpus
  if _corpus is None:
    import corpus
    from tinyc.tinygrad import from_tinygrad
    _corpus = [from_tinygrad(a) for _, a in corpus.kernel_asts()]
  return _corpus

def mutate(ast, muts):
  """ast with each mutation (node pick, kind, value pick) applied in turn to a node of its toposort"""
  for pick, kind, val in muts:
    nodes = list(ast.toposort())
    tgt, other = nodes[pick % len(nodes)], nodes[val % len(nodes)]
    src = list(tgt.src)
    if kind == 0 and src: src.pop(val % len(src))                           # drop a source
    elif kind == 1: src.append(other)                                        # add a source
    elif kind == 2 and src: src[val % len(src)] = other                      # swap a source
    elif kind == 3: src = src[::-1]                                          # reorder the sources
    if kind <= 3: new = expect_no_bug(tgt.replace, src=tuple(src))
    elif kind == 4: new = expect_no_bug(tgt.replace, dtype=DTYPES[val % len(DTYPES)])   # swap the dtype
    elif kind == 5: new = expect_no_bug(tgt.replace, op=OPS[val % len(OPS)])           # swap the op
    else: new = expect_no_bug(tgt.replace, arg=ARGS[val % len(ARGS)])                    # swap the arg
    if new is None: return None
    ast = expect_no_bug(ast.substitute, {tgt: new})
    if ast is None: return None
  return ast

def random_opts(vals):
  args = [None, 0, 1, 2, 3, 4, 8, 16, -1, 2**40, (1, 2, 3), (-1, 0, 1), (-1, 2, 1), (0, 2, 2)]   # the last three: TC args
  return [Opt(list(OptOps)[v % len(OptOps)], (v // 16) % 5 - 1, args[(v // 80) % len(args)]) for v in vals]

class PythonLanguage(tinyc.CStyleLanguage):
  """a renderer written in Python, as users write backends: settings and a code_for_op lambda on the native loop"""
  kernel_typedef, buffer_prefix, has_local, float4 = "__kernel void", "__global ", False, "(float4)"
  code_for_workitem = {"g": lambda x: f"gid({x})"}
  code_for_op = {**tinyc.CStyleLanguage.code_for_op, Ops.MAX: lambda a, b, dtype: f"max({a},{b})"}
def TensorCoreRenderer():
  """a renderer with tensor cores (tinyc's tables): TC opts build WMMAs on the corpus's float matmuls (Metal's, AMX's)"""
  from tinyc.codegen.opt import tc
  r = tinyc.Renderer()
  r.device, r.tensor_cores = "METAL", tc.metal + tc.amx + tc.cuda_sm80
  return r
RENDERERS = [tinyc.ClangRenderer, lambda: tinyc.Device["NULL"].renderer, PythonLanguage, tinyc.CStyleLanguage, TensorCoreRenderer]

pipeline_case = st.fixed_dictionaries({"kernel": st.integers(0, 10**6),
                                       "muts": st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 6), st.integers(0, 10**6)),
                                                        max_size=3),
                                       "action": st.integers(0, 5), "opts": st.lists(st.integers(0, 10**6), max_size=4)})

def run_pipeline(case):
  from tinyc.codegen import get_program, full_rewrite_to_sink, linearize
  asts = corpus_asts()
  ast = mutate(asts[case["kernel"] % len(asts)], case["muts"])
  if ast is None: return
  ren, act, opts = RENDERERS[case["kernel"] % len(RENDERERS)](), case["action"], random_opts(case["opts"])
  if act == 0: expect_no_bug(get_program, ast, ren)
  elif act == 1: expect_no_bug(get_program, ast, ren, opts=opts)
  elif act == 2:
    k = expect_no_bug(tinyc.Scheduler, ast, ren)
    if k is None: return
    expect_no_bug(tinyc.hand_coded_optimizations, k)
    for o in opts: expect_no_bug(k.apply_opt, o)
    expect_no_bug(tinyc.hand_coded_optimizations, k)
    for attr in ("full_shape", "shape_len", "axis_types", "colors", "colored_shape", "rngs", "upcasted", "group_for_reduces"):
      expect_no_bug(getattr, k, attr)
    expect_no_bug(k.get_optimized_ast)
    expect_no_bug(k.copy)
  elif act == 3: expect_no_bug(full_rewrite_to_sink, ast, ren)
  elif act == 4:   # linearize and render a sink that was lowered, then mutated
    sink = expect_no_bug(full_rewrite_to_sink, asts[case["kernel"] % len(asts)], ren)
    sink = mutate(sink, case["muts"]) if sink is not None else None
    uops = expect_no_bug(linearize, sink) if sink is not None else None
    if uops is not None: expect_no_bug(ren.render, uops)
  else:
    for u in list(ast.toposort())[:40]: expect_no_bug(u.simplify), expect_no_bug(u.render), expect_no_bug(lambda: (u.vmin, u.vmax))

# ---------------------------------------------------------------------------------------------------------------
# pickles: truncated and bit-flipped pickles of UOps, ProgramSpecs and CompiledRunners
# ---------------------------------------------------------------------------------------------------------------

_blobs = None
def pickle_blobs():
  global _blobs
  if _blobs is None:
    from tinyc.codegen import get_program
    asts = corpus_asts()
    p = get_program(asts[0], tinyc.Device["CPU"].renderer)
    _blobs = [pickle.dumps(asts[0]), pickle.dumps(asts[7]), pickle.dumps(p), pickle.dumps(tinyc.CompiledRunner(p)),
              pickle.dumps(tinyc.Opt(OptOps.UPCAST, 0, 4)), pickle.dumps(KernelInfo(name="k")), pickle.dumps(p.estimates)]
  return _blobs

pickle_case = st.fixed_dictionaries({"blob": st.integers(0, 6), "how": st.integers(0, 3), "at": st.integers(0, 10**7),
                                     "byte": st.integers(0, 255)})

def run_pickle(case):
  blob = bytearray(pickle_blobs()[case["blob"]])
  at = case["at"] % len(blob)
  if case["how"] == 0: blob = blob[:at]                                        # truncated
  elif case["how"] == 1: blob[at] ^= 1 << (case["byte"] % 8)                   # one bit flipped
  elif case["how"] == 2: blob[at] = case["byte"]                               # one byte replaced
  else: blob[at:at] = bytes([case["byte"]])                                    # one byte inserted
  obj = expect_no_bug(pickle.loads, bytes(blob))
  if isinstance(obj, UOp): expect_no_bug(lambda: (repr(obj), obj.key, obj.toposort(), obj.simplify()))
  elif obj is not None: expect_no_bug(repr, obj)

# ---------------------------------------------------------------------------------------------------------------
# buffers: Buffer and CompiledRunner calls with wrong sizes, dtypes, devices and values
# ---------------------------------------------------------------------------------------------------------------

_runner = None
def sample_runner():
  global _runner
  if _runner is None:
    from tinyc.codegen import get_program
    _runner = tinyc.CompiledRunner(get_program(corpus_asts()[0], tinyc.Device["CPU"].renderer))
  return _runner

BUF_SIZES = [0, 1, 3, 16, 128, 512, -1, 2**62, 2**40]
def _sources():
  import numpy as np
  return [b"", b"abcd", bytearray(64), memoryview(bytearray(512)), memoryview(bytearray(512))[::2], "text", 3, None,
          np.zeros(16, np.float32), np.zeros((4, 4), np.float64), np.zeros(128, np.float32)[::2], np.zeros(0), array_of(512)]
def array_of(n):
  import array
  return array.array("f", [0.0] * n)

buffer_case = st.fixed_dictionaries({"bufs": st.lists(st.tuples(st.integers(0, 4), st.integers(0, len(BUF_SIZES) - 1),
                                                                st.integers(0, len(DTYPES) + len(JUNK_DTYPES) - 1)),
                                                      min_size=1, max_size=4),
                                     "ops": st.lists(st.tuples(st.integers(0, 6), st.integers(0, 100)), max_size=6)})

def run_buffers(case):
  devices = ["CPU", "cpu", "NULL", "NOPE", 3]
  bufs = [expect_no_bug(tinyc.Buffer, devices[d], BUF_SIZES[s], (DTYPES + JUNK_DTYPES)[t]) for d, s, t in case["bufs"]]
  bufs = [b for b in bufs if b is not None]
  srcs = _sources()
  for kind, v in case["ops"]:
    b = bufs[v % len(bufs)] if bufs else None
    if kind == 0 and b is not None: expect_no_bug(b.allocate)
    elif kind == 1 and b is not None: expect_no_bug(b.copyin, srcs[v % len(srcs)])
    elif kind == 2 and b is not None: expect_no_bug(b.copyout, srcs[v % len(srcs)])
    elif kind == 3 and b is not None: expect_no_bug(lambda: b.numpy().sum())
    elif kind == 4 and b is not None: expect_no_bug(b.deallocate)
    elif kind == 5: expect_no_bug(sample_runner(), bufs[: v % 4], {"n": v} if v % 2 else None, wait=True)
    elif kind == 6 and b is not None: expect_no_bug(lambda: bytes(b.as_buffer(allow_zero_copy=bool(v % 2)))[:4])

FUZZERS = {"uop": (uop_case, run_uop), "rules": (rules_case, run_rules), "upat": (upat_case, run_upat),
           "pipeline": (pipeline_case, run_pipeline), "pickle": (pickle_case, run_pickle), "buffers": (buffer_case, run_buffers)}
