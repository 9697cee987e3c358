"""tinyc's ClangRenderer (csrc/renderers/cstyle.c) against tinygrad 0.12.0's on real kernels.

Kernels come from tinygrad Tensor programs on device CPU: schedule -> ASTs -> get_program with tinygrad's
ClangRenderer gives the linearized uops. Both renderers render the same uops (tinyc's after a node-by-node
from_tinygrad) and the sources must be byte-identical."""
import unittest
from tinygrad import Tensor, Variable, dtypes as tg_dtypes
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import Opt, OptOps, KernelOptError
from tinygrad.renderer.cstyle import ClangRenderer as TgClangRenderer
from tinygrad.renderer import Renderer as TgRenderer
from tinygrad.uop.ops import Ops as TgOps
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad

def _programs():
  """(name, lazy tensor) pairs covering the ops a CPU kernel renders."""
  e = lambda *s, dtype=tg_dtypes.float32: Tensor.empty(*s, dtype=dtype, device="CPU")
  a, b, m, w = e(16, 32), e(16, 32), e(32, 8), e(4, 3, 3, 3)
  i, j = e(64, dtype=tg_dtypes.int32), e(64, dtype=tg_dtypes.int32)
  n = Variable("n", 1, 16).bind(5)
  return [
    ("matmul", a @ m), ("sum", a.sum()), ("sum_axis", a.sum(axis=1)), ("max", a.max(axis=0)), ("exp", a.exp()), ("log", a.log()),
    ("sin", a.sin()), ("sqrt", a.sqrt()), ("where", (a < b).where(a, b)), ("eq", (a == b)), ("ne", (a != b).where(1.0, 0.0)),
    ("half", a.cast(tg_dtypes.half) * 2), ("int8", a.cast(tg_dtypes.int8) + 1), ("uint32", a.cast(tg_dtypes.uint32) * 3),
    ("float64", a.cast(tg_dtypes.float64).sqrt()), ("bfloat16", a.cast(tg_dtypes.bfloat16) + 1), ("bool", (a > 0).cast(tg_dtypes.int32)),
    ("uint8", a.cast(tg_dtypes.uint8) + 7), ("int64", a.cast(tg_dtypes.int64) * 3), ("uint64", a.cast(tg_dtypes.uint64) + 5),
    ("int16", a.cast(tg_dtypes.int16) - 2), ("uint16", a.cast(tg_dtypes.uint16) + 2), ("half_sum", a.cast(tg_dtypes.half).sum(1)),
    ("pad", a.pad(((1, 1), (2, 0))) + 1), ("permute", a.permute(1, 0).contiguous()), ("conv2d", e(1, 3, 8, 8).conv2d(w)),
    ("softmax", a.softmax()), ("cumsum", a.cumsum(axis=1)), ("argmax", a.argmax(axis=1)), ("idiv_mod", (i // 3) + (i % 5)),
    ("bits", (i.cast(tg_dtypes.uint32) << 2) ^ (j.cast(tg_dtypes.uint32) >> 1) | (i & j).cast(tg_dtypes.uint32)), ("neg_recip", (-a).reciprocal()), ("trunc", a.trunc()), ("relu", a.relu()),
    ("inf", a.maximum(float("inf"))), ("ninf", a.maximum(float("-inf"))), ("nan", (a * float("nan"))), ("clip", a.clip(-1, 1)),
    ("symbolic", e(16, 4)[:n].sum(1)), ("symbolic_mul", e(16)[:n] * 2), ("gelu", a.gelu()), ("mean_var", a.var(axis=1)),
    ("arange", Tensor.arange(37, device="CPU") * 2), ("big", e(256, 256) + e(256, 256)),
  ]

def _kernels():
  ret = []
  for name, t in _programs():
    for k, si in enumerate(t.schedule_with_vars()[0]):
      if si.ast.op is TgOps.SINK: ret.append((f"{name}_{k}", si.ast))
  return ret

KERNELS = _kernels()

def _tinyc_uops(tg_uops): return [from_tinygrad(u) for u in tg_uops]

class TestClangRenderer(unittest.TestCase):
  def _identity(self, opts, label=None):
    same, diffs, total = 0, [], 0
    for name, ast in KERNELS:
      try: p = get_program(ast, TgClangRenderer(), opts=opts)
      except KernelOptError:
        if opts is None or opts == []: raise
        continue   # the hand-picked opts do not apply to this kernel
      total += 1
      expected = TgClangRenderer().render(p.uops)
      got = _C.ClangRenderer().render(_tinyc_uops(p.uops))
      if got == expected: same += 1
      else: diffs.append((name, expected, got))
    rate = same / total
    print(f"\nClangRenderer identity ({label or ('default opts' if opts is None else 'no opts')}): {same}/{total} = {rate:.1%}")
    for name, expected, got in diffs[:3]: print(f"--- {name}\n{expected}\n+++ tinyc\n{got}")
    self.assertGreaterEqual(rate, 0.95)
    return rate

  def test_identity_default_opts(self): self.assertEqual(self._identity(None), 1.0)
  def test_identity_no_opts(self): self.assertEqual(self._identity([]), 1.0)
  def test_identity_hand_opts(self):
    """THREAD (SPECIAL core_id), UPCAST and UNROLL (vectors, register accumulators) where they apply."""
    for opts in ([Opt(OptOps.THREAD, 0, 2)], [Opt(OptOps.UPCAST, 0, 4)], [Opt(OptOps.UNROLL, 0, 4)], [Opt(OptOps.THREAD, 0, 2), Opt(OptOps.UPCAST, 0, 2)]):
      self.assertEqual(self._identity(opts, str(opts)), 1.0)

  def test_private_pieces(self):
    """_render's (name, lines, bufs) and render_dtype/render_cast agree with tinygrad's."""
    name, ast = KERNELS[0]
    p = get_program(ast, TgClangRenderer())
    tg_name, tg_lines, tg_bufs = TgClangRenderer()._render(p.uops)
    tc_name, tc_lines, tc_bufs = _C.ClangRenderer()._render(_tinyc_uops(p.uops))
    self.assertEqual((tg_name, tg_lines), (tc_name, tc_lines))
    self.assertEqual([(n, m) for n, (_, m) in tg_bufs], [(n, m) for n, (_, m) in tc_bufs])
    tg, tc = TgClangRenderer(), _C.ClangRenderer()
    for dt in ("bool", "half", "float", "int8", "uint64", "bfloat16", "double"):
      for v in (1, 4):
        tg_dt, tc_dt = getattr(tg_dtypes, dt).vec(v) if v > 1 else getattr(tg_dtypes, dt), None
        tc_dt = getattr(tinyc.dtypes, dt).vec(v) if v > 1 else getattr(tinyc.dtypes, dt)
        self.assertEqual(tg.render_dtype(tg_dt), tc.render_dtype(tc_dt))
        self.assertEqual(tg.render_dtype(tg_dt.ptr()), tc.render_dtype(tc_dt.ptr()))
        self.assertEqual(tg.render_cast(tg_dt, "x"), tc.render_cast(tc_dt, "x"))
        if v > 1: self.assertEqual(tg.render_vector_prefix(tg_dt), tc.render_vector_prefix(tc_dt))

  def test_attributes(self):
    tg, tc = TgClangRenderer(), _C.ClangRenderer()
    for attr in ("device", "suffix", "has_local", "has_threads", "has_shared", "has_aux", "global_max", "local_max", "shared_max",
                 "supports_float4", "kernel_typedef", "buffer_prefix", "buffer_suffix", "smem_align", "smem_prefix", "arg_int_prefix",
                 "barrier", "extra_args", "float4", "float4_style", "gep_arr_threshold", "infinity", "nan"):
      self.assertEqual(getattr(tg, attr), getattr(tc, attr), attr)
    self.assertEqual(tuple(tg.tensor_cores), tc.tensor_cores)
    self.assertIsNone(tc.pre_matcher)
    self.assertIsNone(tc.compiler)
    self.assertEqual([k.name for k in tg.code_for_op], [k.name for k in tc.code_for_op])
    for k, fn in tc.code_for_op.items():
      nargs = {TgOps.WHERE.name: 3, "SQRT": 1, "NEG": 1, "TRUNC": 1}.get(k.name, 2)
      for dt in ("float32", "float64"):
        args = ["a", "b", "c"][:nargs]
        self.assertEqual(tg.code_for_op[TgOps[k.name]](*args, getattr(tg_dtypes, dt)), fn(*args, getattr(tinyc.dtypes, dt)))
    base = _C.Renderer()
    for attr in ("device", "suffix", "has_local", "has_threads", "has_shared", "global_max", "local_max", "shared_max", "supports_float4",
                 "pre_matcher", "extra_matcher", "compiler", "code_for_op"):
      self.assertEqual(getattr(TgRenderer(), attr), getattr(base, attr), attr)
    self.assertIsInstance(tc, _C.Renderer)
    self.assertIs(tinyc.ClangRenderer, _C.ClangRenderer)
    self.assertIs(tinyc.Renderer, _C.Renderer)
    with self.assertRaises(NotImplementedError): base.render([])

  def test_handmade(self):
    uops = _handmade_uops()
    expected = TgClangRenderer().render(uops)
    self.assertEqual(expected, _C.ClangRenderer().render(_tinyc_uops(uops)))

  def test_alu_chains(self):
    """chains of one associative op drop the inner parens where what is inside is balanced: operands that are not ASCII
    (a variable's name), inline CUSTOMI texts whose parens do not balance, float64 and ternary codes, as tinygrad renders them"""
    from tinygrad.uop.ops import UOp, Ops, KernelInfo
    from tinygrad.dtype import dtypes
    buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(4), (), 0)
    order = [buf]
    def mk(op, dtype, src=(), arg=None):
      u = UOp(op, dtype, tuple(src), arg)
      for s in u.toposort():
        if s not in order: order.append(s)
      return u
    names = ["ñu", "x", "δ"]
    vs = [mk(Ops.DEFINE_VAR, dtypes.int, (), (n, 0, 9)) for n in names]
    odd = [mk(Ops.CUSTOMI, dtypes.int, (vs[1],), t) for t in ("({0}))+((1", "(({0})", "({0})")]
    stores = []
    for k, ops in enumerate(([Ops.ADD] * 4, [Ops.MUL, Ops.MUL, Ops.ADD], [Ops.XOR, Ops.OR, Ops.OR], [Ops.AND] * 3)):
      x = vs[k % 3]
      for op, y in zip(ops, odd + vs):
        if op is not Ops.AND: x = mk(op, dtypes.int, (x, y))
        else:
          lhs = x if x.dtype == dtypes.bool else mk(Ops.CMPLT, dtypes.bool, (x, y))
          x = mk(op, dtypes.bool, (lhs, mk(Ops.CMPNE, dtypes.bool, (y, vs[0]))))
      d = mk(Ops.CAST, dtypes.double, (mk(Ops.CAST, dtypes.float, (x,)),))
      d3 = mk(Ops.ADD, dtypes.double, (mk(Ops.ADD, dtypes.double, (d, d)), d))   # a float64 chain, then sqrt's float64 code
      val = mk(Ops.CAST, dtypes.float, (mk(Ops.SQRT, dtypes.double, (d3,)),))
      val = mk(Ops.WHERE, dtypes.float, (mk(Ops.CMPLT, dtypes.bool, (vs[2], vs[0])), val, val))
      stores.append(mk(Ops.STORE, dtypes.void, (mk(Ops.INDEX, dtypes.float.ptr(4), (buf, mk(Ops.CONST, dtypes.int, (), k))), val)))
    mk(Ops.SINK, dtypes.void, tuple(stores), KernelInfo(name="chains"))
    expected = TgClangRenderer().render(order)
    self.assertIn("δ", expected)
    self.assertEqual(expected, _C.ClangRenderer().render(_tinyc_uops(order)))

  def test_extra_matcher(self):
    """tinyc's ClangRenderer.extra_matcher rewrites each graph to the very graph tinygrad's does."""
    from tinygrad.uop.ops import UOp as TgUOp, graph_rewrite as tg_graph_rewrite
    from tinygrad.dtype import dtypes as tg_dt
    tg_cases = _extra_matcher_cases(TgUOp, TgOps, tg_dt)
    tc_cases = _extra_matcher_cases(tinyc.UOp, tinyc.Ops, tinyc.dtypes)
    changed = 0
    for tg_u, tc_u in zip(tg_cases, tc_cases):
      self.assertIs(from_tinygrad(tg_u), tc_u)
      tg_out = tg_graph_rewrite(tg_u.sink(), TgClangRenderer.extra_matcher)
      tc_out = tinyc.graph_rewrite(tc_u.sink(), _C.ClangRenderer.extra_matcher)
      self.assertIs(from_tinygrad(tg_out), tc_out, str(tg_u))
      changed += tg_out is not tg_u.sink()
    self.assertGreaterEqual(changed, len(tg_cases) - 2)

  def test_bad_input(self):
    """An op the renderer has no code for, a non-UOp and a stray UNROLL are clear exceptions, not crashes."""
    U, D, O = tinyc.UOp, tinyc.dtypes, tinyc.Ops
    buf = U(O.DEFINE_GLOBAL, D.float.ptr(4), (), 0)
    x = U(O.CONST, D.float, (), 2.0)
    exp = U(O.EXP2, D.float, (x,))
    st = U(O.STORE, D.void, (U(O.INDEX, D.float.ptr(4), (buf, U(O.CONST, D.int, (), 0))), exp))
    with self.assertRaises(KeyError): _C.ClangRenderer().render([buf, x, exp, st])
    with self.assertRaises(TypeError): _C.ClangRenderer().render([buf, "nope"])
    unroll = U(O.UNROLL, D.float, (x,), ())
    with self.assertRaises(AssertionError): _C.ClangRenderer().render([x, unroll])
    with self.assertRaises(KeyError): _C.ClangRenderer().render([exp])   # a source that was never rendered

def _handmade_uops():
  """A linear list (creation order) with the ops real CPU kernels rarely show: IF/ENDIF, SPECIAL, gated loads,
  shared memory, BARRIER, CUSTOM/CUSTOMI, bitcasts, vector casts, GEP, and constants of every dtype and kind."""
  from tinygrad.uop.ops import UOp, Ops, KernelInfo
  from tinygrad.dtype import dtypes, AddrSpace
  order = []
  def mk(op, dtype, src=(), arg=None):
    u = UOp(op, dtype, tuple(src), arg)
    if u not in order: order.append(u)
    return u
  buf, ibuf = mk(Ops.DEFINE_GLOBAL, dtypes.float.ptr(16), (), 0), mk(Ops.DEFINE_GLOBAL, dtypes.int.ptr(16), (), 1)
  n = mk(Ops.DEFINE_VAR, dtypes.int, (), ("n", 1, 8))
  gid = mk(Ops.SPECIAL, dtypes.int, (mk(Ops.CONST, dtypes.int, (), 4),), "gidx0")
  cond = mk(Ops.CMPLT, dtypes.bool, (gid, n))
  stores = []
  def store(val, i):
    idx = mk(Ops.INDEX, dtypes.float.ptr(16), (buf, mk(Ops.CONST, dtypes.int, (), i)))
    stores.append(mk(Ops.STORE, dtypes.void, (idx, val if val.dtype == dtypes.float else mk(Ops.CAST, dtypes.float, (val,)))))
  gidx = mk(Ops.INDEX, dtypes.float.ptr(16), (buf, gid, cond))
  gated = mk(Ops.LOAD, dtypes.float, (gidx, mk(Ops.CONST, dtypes.float, (), 0.0)))
  plain = mk(Ops.LOAD, dtypes.float, (mk(Ops.INDEX, dtypes.float.ptr(16), (buf, mk(Ops.ADD, dtypes.int, (gid, n)))),))
  ifu = mk(Ops.IF, dtypes.void, (cond,))
  mk(Ops.DEFINE_LOCAL, dtypes.float.ptr(8, AddrSpace.LOCAL), (), "temp0")
  mk(Ops.BARRIER, dtypes.void)
  store(mk(Ops.CUSTOM, dtypes.float, (gated, plain), "fmaxf({0}, {1})"), 0)
  store(mk(Ops.CUSTOMI, dtypes.float, (plain,), "({0}*2)"), 1)
  store(mk(Ops.BITCAST, dtypes.float, (mk(Ops.LOAD, dtypes.int, (mk(Ops.INDEX, dtypes.int.ptr(16), (ibuf, gid)),)),)), 2)
  vec = mk(Ops.VECTORIZE, dtypes.float.vec(4), (gated, plain, gated, plain))
  ivec = mk(Ops.CAST, dtypes.int.vec(4), (vec,))
  store(mk(Ops.GEP, dtypes.int, (ivec,), (2,)), 3)
  store(mk(Ops.GEP, dtypes.float, (vec,), (1,)), 4)
  consts = [(dtypes.float, float("inf")), (dtypes.half, float("-inf")), (dtypes.float, float("nan")), (dtypes.double, float("nan")),
            (dtypes.half, 1.5), (dtypes.bfloat16, 2.0), (dtypes.double, 0.25), (dtypes.bool, True), (dtypes.bool, False),
            (dtypes.int8, -3), (dtypes.int16, 7), (dtypes.uint8, 200), (dtypes.uint16, 9), (dtypes.uint32, -1), (dtypes.uint64, -2),
            (dtypes.int64, 1 << 40), (dtypes.int, -5), (dtypes.fp8e4m3, 1.0)]
  for k, (dt, v) in enumerate(consts): store(mk(Ops.ADD, dt, (mk(Ops.CONST, dt, (), v), mk(Ops.CONST, dt, (), v))), 5 + k % 10)
  acc = mk(Ops.DEFINE_REG, dtypes.float.ptr(1, AddrSpace.REG), (), 0)
  racc = mk(Ops.INDEX, dtypes.float.ptr(1, AddrSpace.REG), (acc, mk(Ops.CONST, dtypes.int, (), 0)))
  mk(Ops.STORE, dtypes.void, (racc, mk(Ops.SQRT, dtypes.double, (mk(Ops.CAST, dtypes.double, (plain,)),))))
  store(mk(Ops.LOAD, dtypes.float, (racc,)), 15)
  store(mk(Ops.WHERE, dtypes.float, (cond, mk(Ops.NEG, dtypes.float, (plain,)), mk(Ops.TRUNC, dtypes.float, (gated,)))), 15)
  mk(Ops.ENDIF, dtypes.void, (ifu,))
  mk(Ops.SINK, dtypes.void, tuple(stores), KernelInfo(name="handmade"))
  return order

def _extra_matcher_cases(UOp, Ops, dtypes):
  """Graphs for ClangRenderer.extra_matcher, built with the same calls on either side."""
  var = lambda name, dt: UOp(Ops.DEFINE_VAR, dt, (), (name, 0, 10))
  vec = lambda name, dt, n=4: UOp(Ops.VECTORIZE, dt.vec(n), tuple(var(f"{name}{i}", dt) for i in range(n)))
  d, bf, f, h, i = var("d", dtypes.float64), var("bf", dtypes.bfloat16), var("f", dtypes.float), var("h", dtypes.half), var("i", dtypes.int)
  bf2, f4, i4 = var("bf2", dtypes.bfloat16), vec("f4", dtypes.float), vec("i4", dtypes.int)
  return [
    d.cast(dtypes.half), d.cast(dtypes.bfloat16), bf.cast(dtypes.half), vec("d4", dtypes.float64).cast(dtypes.half.vec(4)),
    UOp(Ops.SQRT, f4.dtype, (f4,)), UOp(Ops.TRUNC, f4.dtype, (f4,)), UOp(Ops.SQRT, dtypes.float, (f,)),
    (f < 2.0).where(bf, bf2), bf + bf2, bf * bf2 - bf, bf < bf2, bf.cast(dtypes.int), i.cast(dtypes.bfloat16), bf.cast(dtypes.float),
    f.cast(dtypes.bfloat16), h.cast(dtypes.bfloat16), (f4 < f4).where(f4, f4), (i4 < i4).cast(dtypes.float.vec(4)),
    (f4 != f4), UOp(Ops.CAST, dtypes.bool.vec(4), (i4,)), UOp(Ops.BITCAST, dtypes.int.vec(4), (f4,)) + i4, vec("bf4", dtypes.bfloat16) * 2,
  ]

if __name__ == "__main__":
  unittest.main()
