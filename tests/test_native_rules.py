"""The native rule DSL and UPat's `/` and logical_not.

A native rule names the captures it reads (RULE(name, x, y)); building its table checks, at import, that the
pattern binds each of them on every match. tinyc._C._rule_table builds a one-rule table (a rule reading x and y)
on a pattern of the test's, through the same pm_from_defs the rule files use. UPat `/` and logical_not are
compared with tinygrad's: both libraries' patterns must find the same matches on the same graphs."""
import math
import pytest
import tinyc
from tinyc import _C, UOp, Ops, dtypes
from tinyc.tinygrad import from_tinygrad
import tinygrad.uop.ops as tg_ops
from tinygrad.uop import Ops as TgOps
from tinygrad.dtype import dtypes as tg_dtypes

# ---- the capture check ----

@pytest.mark.parametrize("pattern", [
  "UPat.var('x') + UPat.var('y')",
  "UPat.var('x').or_casted() + UPat.var('y')",                                       # bound in both alternatives
  "UPat(Ops.SINK, src=(UPat.any(UPat.var('x') + UPat.var('y'), UPat.var('y') * UPat.var('x')),))",
  "UPat(Ops.VECTORIZE, src=(UPat.var('x'), UPat.var('y')))",
  "[UPat.var('x').alu(op, UPat.var('y')) for op in (Ops.ADD, Ops.MUL)]",             # a list: every pattern checked
])
def test_table_builds_when_every_read_is_bound(pattern):
  pm = _C._rule_table(pattern)
  a, b = UOp.variable("a", 0, 4), UOp.variable("b", 0, 4)
  assert pm.nrules >= 1 and pm.rewrite(a * b) in (None, a + b)

@pytest.mark.parametrize("pattern", [
  "UPat.var('x') + 1",                                                                # y never bound
  "UPat(Ops.SINK, src=(UPat.any(UPat.var('x') + UPat.var('y'), UPat.var('x') * 2),))",   # y bound in one alternative only
  "UPat(Ops.VECTORIZE, src=UPat.var('y')) + UPat.var('x')",                           # y only under a repeated source
  "[UPat.var('x') + UPat.var('y'), UPat.var('x') * 2]",                               # one pattern of the list lacks y
])
def test_unbound_read_fails_naming_rule_and_pattern(pattern):
  with pytest.raises(RuntimeError) as e:
    _C._rule_table(pattern)
  msg = str(e.value)
  assert "test_add_x_y" in msg and "'y'" in msg and "UPat.var('x')" in msg

def test_maybe_capture_may_be_unbound_but_must_be_named():
  pm = _C._rule_table("UPat(Ops.VECTORIZE, src=UPat.var('y'), name='x')", True)
  with pytest.raises(TypeError, match="missing 1 required positional argument: 'y'"):
    pm.rewrite(UOp(Ops.VECTORIZE, dtypes.void, ()))   # tinygrad's lambda would miss its y here
  with pytest.raises(RuntimeError, match="test_add_x_maybe_y reads the capture 'y', which its pattern .* never binds"):
    _C._rule_table("UPat.var('x') + 1", True)

def test_every_native_table_passed_the_check():
  # importing tinyc built every native table through the check; they are all there
  assert {"symbolic", "sym", "pm_render", "pm_reduce", "div_and_mod_symbolic"} <= set(_C.native_rules())

# ---- UPat / and logical_not against tinygrad ----

def _patterns(UPat, dt):
  return [
    UPat.var("x") / UPat.var("y"),
    UPat.var("x") / UPat.var("x"),
    UPat.cvar("x", arg=0) / 0,
    (UPat.var("x") * 0) / 0,
    (UPat.var("x") * UPat.var("x2")) / UPat.var("x2"),
    (UPat.var("x") / UPat.var("x2")) / UPat.var("x3"),
    UPat.var("x") / 2.0,
    2.0 / UPat.var("x"),
    UPat.var("x", dtype=dt.bool).logical_not(),
    UPat.var("x", dtype=dt.bool).logical_not().logical_not(),
    (UPat.var("x") < UPat.var("y")).logical_not(),
    UPat.var("x").ne(UPat.var("y")).logical_not(),
  ]

def _graphs():
  U, d = tg_ops.UOp, tg_dtypes
  a, b, c = (U.variable(n, 0, 10, d.int).cast(d.float) for n in "abc")
  p, q = U.variable("p", 0, 10) < 5, U.variable("q", 0, 10) < 7
  zero = U.const(d.float, 0.0)
  return [a / b, a / a, zero / 0.0, (a * 0) / 0.0, (a * b) / b, (a / b) / c, a / 2.0, 2.0 / a, a * 3.0,
          p.logical_not(), p.logical_not().logical_not(), (p & q).logical_not(), p.ne(q).logical_not(), (a < b).logical_not()]

def _as_tinyc(matches):
  return [{k: from_tinygrad(v) for k, v in m.items()} for m in matches]

def test_div_and_logical_not_match_what_tinygrad_matches():
  tg_pats, tc_pats = _patterns(tg_ops.UPat, tg_dtypes), _patterns(tinyc.UPat, tinyc.dtypes)
  matched = 0
  for g in _graphs():
    for node in g.toposort():
      for tgp, tcp in zip(tg_pats, tc_pats):
        want = _as_tinyc(tgp.match(node, {}))
        assert tcp.match(from_tinygrad(node), {}) == want, (node, tgp)
        matched += bool(want)
  assert matched >= 14   # every pattern form above matches somewhere

def test_div_builds_tinygrads_pattern_shape():
  UPat = tinyc.UPat
  p = UPat.var("x") / UPat.var("y")
  assert p.op == (Ops.MUL,) and p._in_src[1].op == (Ops.RECIPROCAL,)
  r = 2 / UPat.var("x")
  assert r.op == (Ops.MUL,) and r._in_src[0].op == (Ops.CONST,) and r._in_src[0].arg == 2 and r._in_src[1].op == (Ops.RECIPROCAL,)
  n = UPat.var("x").logical_not()
  assert n.op == (Ops.CMPNE,) and n._in_src[1].arg is True
  with pytest.raises(TypeError):
    UPat.var("x") / UOp.const(dtypes.int, 1)
  assert math.isnan(tinyc.graph_rewrite(UOp.const(dtypes.float, 0.0) / 0.0, _C.native_rules()["symbolic"]).arg)
