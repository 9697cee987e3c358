"""Shared helpers for the UOp tests: the two namespaces (tinyc and tinygrad 0.12.0, the oracle) and the
comparisons. A test builds the same thing with both namespaces through one function `fn(ns)` and compares."""
import math
from types import SimpleNamespace
import tinyc
from tinyc.tinygrad import from_tinygrad, to_tinygrad, _to_tc_arg
from tinygrad.uop.ops import UOp as TgUOp, AxisType as TgAxisType, KernelInfo as TgKernelInfo
from tinygrad.uop import Ops as TgOps, GroupOp as TgGroupOp
from tinygrad.dtype import dtypes as tg_dtypes, Invalid as TgInvalid, AddrSpace as TgAddrSpace
from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps

TC = SimpleNamespace(name="tinyc", UOp=tinyc.UOp, Ops=tinyc.Ops, GroupOp=tinyc.GroupOp, dtypes=tinyc.dtypes, AxisType=tinyc.AxisType,
                     Invalid=tinyc.Invalid, KernelInfo=tinyc.KernelInfo, Opt=tinyc.Opt, OptOps=tinyc.OptOps, AddrSpace=tinyc.AddrSpace)
TG = SimpleNamespace(name="tinygrad", UOp=TgUOp, Ops=TgOps, GroupOp=TgGroupOp, dtypes=tg_dtypes, AxisType=TgAxisType,
                     Invalid=TgInvalid, KernelInfo=TgKernelInfo, Opt=TgOpt, OptOps=TgOptOps, AddrSpace=TgAddrSpace)

# tinygrad asserts where tinyc raises a proper exception
ASSERT_LIKE = (AssertionError, ValueError, TypeError, RuntimeError, IndexError)

def outcome(fn, *args):
  """('ok', value) or ('err', exception type). RecursionError is never an expected outcome here."""
  try: return ("ok", fn(*args))
  except RecursionError: raise
  except Exception as e: return ("err", type(e))

def to_tc(t):
  """tinyc's equivalent of a tinygrad value."""
  if isinstance(t, TgUOp): return from_tinygrad(t)
  if type(t) in (tuple, list): return type(t)(to_tc(x) for x in t)
  if isinstance(t, (set, frozenset)): return type(t)(to_tc(x) for x in t)
  if isinstance(t, dict): return {to_tc(k): to_tc(v) for k, v in t.items()}
  if is_iterator(t): return iter([to_tc(x) for x in t])
  return _to_tc_arg(t)

def is_iterator(x): return hasattr(x, "__next__") and not isinstance(x, (str, bytes))

def assert_same(o, e, path="result"):
  """o (tinyc's) equals e (already converted with to_tc) exactly: UOps by identity, numbers by type and value."""
  if is_iterator(o) or is_iterator(e):
    assert is_iterator(o) and is_iterator(e), (path, o, e)
    o, e = list(o), list(e)
  if isinstance(e, tinyc.UOp):
    assert o is e, f"{path}: got\n{o!r}\nexpected\n{e!r}"
    return
  assert type(o) is type(e), (path, type(o), type(e), o, e)
  if isinstance(e, (tuple, list)):
    assert len(o) == len(e), (path, o, e)
    for i, (a, b) in enumerate(zip(o, e)): assert_same(a, b, f"{path}[{i}]")
  elif isinstance(e, dict):
    assert list(o) == list(e) and all(a is b for a, b in zip(o, e)), (path, o, e)
    for k in e: assert_same(o[k], e[k], f"{path}[{k!r}]")
  elif isinstance(e, float):
    assert (math.isnan(o) and math.isnan(e)) or (o == e and math.copysign(1, o) == math.copysign(1, e)), (path, o, e)
  else:
    assert o == e, (path, o, e)

def assert_same_outcome(o, t, path="result"):
  """o, t: outcomes of the same call in tinyc and tinygrad."""
  if t[0] == "err":
    assert o[0] == "err", f"{path}: tinygrad raised {t[1].__name__}, tinyc returned {o[1]!r}"
    allowed = ASSERT_LIKE if t[1] is AssertionError else t[1]
    assert issubclass(o[1], allowed), f"{path}: tinygrad raised {t[1].__name__}, tinyc raised {o[1].__name__}"
  else:
    assert o[0] == "ok", f"{path}: tinyc raised {o[1].__name__}, tinygrad returned {t[1]!r}"
    assert_same(o[1], to_tc(t[1]), path)

def node_fields(u): return (u.op.name, repr(u.dtype), repr(u.arg), repr(u.tag), len(u.src))

def check_graph(o, t, minmax=True, bridge=True):
  """tinyc graph o is tinygrad graph t: same repr, key, toposort, and vmin/vmax on every node."""
  assert repr(o) == repr(t)
  assert o.key == t.key
  otopo, ttopo = list(o.toposort()), list(t.toposort())
  assert [node_fields(u) for u in otopo] == [node_fields(u) for u in ttopo]
  # the same nodes in the same order: the i-th source of each node is the same toposort position
  opos, tpos = {u: i for i, u in enumerate(otopo)}, {u: i for i, u in enumerate(ttopo)}
  assert [[opos[s] for s in u.src] for u in otopo] == [[tpos[s] for s in u.src] for u in ttopo]
  if bridge:
    assert from_tinygrad(t) is o
    assert to_tinygrad(o) is t
  if minmax:
    for i, (a, b) in enumerate(zip(otopo, ttopo)):
      oo, tt = outcome(lambda: a._min_max), outcome(lambda: b._min_max)
      assert_same_outcome(oo, tt, f"_min_max of node {i} {node_fields(b)}")

def check_both(fn, minmax=True):
  """Run fn with both namespaces; compare the outcomes (and graphs, when the result is a UOp)."""
  o, t = outcome(fn, TC), outcome(fn, TG)
  assert_same_outcome(o, t)
  if t[0] == "ok" and isinstance(t[1], TgUOp): check_graph(o[1], t[1], minmax=minmax)
  return o, t
