"""OptOps, Opt, KernelOptError/check and KernelInfo against tinygrad 0.12.0 as the oracle."""
import dataclasses, itertools, operator, pickle, random
import pytest
import tinyc
from tinyc import _C
from tinygrad.codegen.opt import OptOps as TgOptOps, Opt as TgOpt
from tinygrad.uop.ops import KernelInfo as TgKernelInfo
from tinygrad.helpers import to_function_name

OptOps, Opt, KernelInfo = _C.OptOps, _C.Opt, _C.KernelInfo

@pytest.fixture
def exported(monkeypatch):
  # pickle finds classes by their module, "tinyc"; make sure it exports them even before tinyc/__init__.py does
  for name in ("OptOps", "Opt", "KernelInfo", "KernelOptError"):
    if getattr(tinyc, name, None) is not getattr(_C, name): monkeypatch.setattr(tinyc, name, getattr(_C, name), raising=False)

def both(op_name, *args, **kw):
  """The same Opt built in tinyc and in tinygrad."""
  return Opt(OptOps[op_name], *args, **kw), TgOpt(TgOptOps[op_name], *args, **kw)

def tg_of(x):
  """The tinygrad equivalent of a tinyc value (Opts and tuples of them converted, the rest as is)."""
  if isinstance(x, Opt): return TgOpt(TgOptOps[x.op.name], x.axis, x.arg)
  if isinstance(x, tuple): return tuple(tg_of(y) for y in x)
  return x

OPT_CASES = [("UPCAST", 0, 4), ("TC", 0, (-1, 0, 1)), ("NOLOCALS",), ("LOCAL", 3), ("SWAP", 1, 2), ("PADTO", 2, 32),
             ("GROUPTOP", 0, 256), ("UNROLL", 1, 0), ("THREAD", 2, 64), ("GROUP", 0, 16), ("UPCAST", 10**30, 2**70)]

# ---- OptOps ----

def test_optops_members():
  assert [(m.name, m.value) for m in OptOps] == [(m.name, m.value) for m in TgOptOps]
  assert OptOps.__module__ == "tinyc" and OptOps.__name__ == "OptOps"
  assert str(OptOps.UPCAST) == str(TgOptOps.UPCAST) and repr(OptOps.UPCAST) == repr(TgOptOps.UPCAST)

def test_optops_order():
  for a, b in itertools.product(list(OptOps), repeat=2):
    ta, tb = TgOptOps[a.name], TgOptOps[b.name]
    assert (a < b, a > b) == (ta < tb, ta > tb)
  assert sorted(reversed(list(OptOps))) == list(OptOps)
  assert OptOps.UPCAST.__lt__(OptOps.LOCAL) is True

def test_optops_lt_against_other():
  with pytest.raises(AttributeError): OptOps.UPCAST < 3  # noqa: B015  (tinygrad: int has no .value)
  with pytest.raises(AttributeError): TgOptOps.UPCAST < 3  # noqa: B015

# ---- Opt ----

@pytest.mark.parametrize("case", OPT_CASES)
def test_opt_repr(case):
  ours, theirs = both(*case)
  assert repr(ours) == repr(theirs) and str(ours) == str(theirs)

def test_opt_keywords_and_defaults():
  o = Opt(op=OptOps.LOCAL, arg=8)
  assert (o.op, o.axis, o.arg) == (OptOps.LOCAL, None, 8)
  assert Opt(OptOps.LOCAL, 1, 8) == Opt(arg=8, axis=1, op=OptOps.LOCAL)
  assert Opt.__match_args__ == ("op", "axis", "arg")
  with pytest.raises(TypeError): Opt()
  with pytest.raises(TypeError): Opt(OptOps.LOCAL, 1, 2, 3)
  with pytest.raises(TypeError): Opt(OptOps.LOCAL, axis=1, bogus=2)

def test_opt_eq_hash():
  for case in OPT_CASES:
    ours, theirs = both(*case)
    again, _ = both(*case)
    assert ours == again and not (ours != again) and hash(ours) == hash(again)
    # an Enum hashes by name, so the hashes agree with tinygrad's within a process
    assert hash(ours) == hash(theirs)
  assert Opt(OptOps.UPCAST, 0, 4) != Opt(OptOps.UPCAST, 0, 2)
  assert Opt(OptOps.UPCAST, 0, 4) != Opt(OptOps.UNROLL, 0, 4)
  assert Opt(OptOps.UPCAST, 0, 4) != (OptOps.UPCAST, 0, 4)
  assert Opt(OptOps.UPCAST, 0, 4) != both("UPCAST", 0, 4)[1]
  assert len({Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.UPCAST, 1, 4)}) == 2

def test_opt_sort_matches_tinygrad():
  rng = random.Random(0)
  names = [m.name for m in OptOps]
  cases = [(rng.choice(names), rng.randrange(4), rng.choice([0, 2, 4, 16])) for _ in range(300)]
  ours = sorted(Opt(OptOps[n], a, g) for n, a, g in cases)
  theirs = sorted(TgOpt(TgOptOps[n], a, g) for n, a, g in cases)
  assert [repr(o) for o in ours] == [repr(o) for o in theirs]

def test_opt_compare_ops_match_tinygrad():
  cases = [("UPCAST", 0, 4), ("UPCAST", 0, 2), ("UPCAST", 1, 2), ("LOCAL", 0, 2), ("TC", 0, (-1, 0, 1)), ("TC", 0, (-1, 2, 1))]
  def outcome(cmp, x, y):
    try: return cmp(x, y)
    except TypeError: return TypeError  # e.g. <= of different ops: OptOps has only __lt__, in tinygrad too
  for ca, cb in itertools.product(cases, repeat=2):
    (a, ta), (b, tb) = both(*ca), both(*cb)
    for cmp in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
      assert outcome(cmp, a, b) == outcome(cmp, ta, tb), (cmp, ca, cb)

def test_opt_compare_errors_like_tinygrad():
  # None against int in the tuple comparison, and an Opt against a non-Opt, are TypeErrors in both
  for mk, op in ((Opt, OptOps), (TgOpt, TgOptOps)):
    with pytest.raises(TypeError): mk(op.UPCAST, None) < mk(op.UPCAST, 0)  # noqa: B015
    with pytest.raises(TypeError): mk(op.UPCAST, 0) < (op.UPCAST, 0, None)  # noqa: B015

@pytest.mark.parametrize("proto", range(pickle.HIGHEST_PROTOCOL + 1))
def test_opt_pickle(exported, proto):
  for case in OPT_CASES:
    o = both(*case)[0]
    back = pickle.loads(pickle.dumps(o, proto))
    assert back == o and type(back) is Opt and back.op is o.op and hash(back) == hash(o)

def test_opt_frozen():
  o = Opt(OptOps.UPCAST, 0, 4)
  for name in ("op", "axis", "arg", "other"):
    with pytest.raises(dataclasses.FrozenInstanceError): setattr(o, name, 1)
    with pytest.raises(AttributeError): delattr(o, name)
  with pytest.raises(dataclasses.FrozenInstanceError): setattr(TgOpt(TgOptOps.UPCAST, 0, 4), "axis", 1)
  assert o == Opt(OptOps.UPCAST, 0, 4)

@pytest.mark.parametrize("args, field", [
  (("UPCAST", 0, 4), "op"), ((TgOptOps.UPCAST, 0, 4), "op"), ((None,), "op"), ((2, 0, 4), "op"),
  ((OptOps.UPCAST, "0", 4), "axis"), ((OptOps.UPCAST, 1.0, 4), "axis"), ((OptOps.UPCAST, (0,), 4), "axis"),
  ((OptOps.UPCAST, 0, [1, 2]), "arg"), ((OptOps.UPCAST, 0, "4"), "arg"), ((OptOps.UPCAST, 0, 4.0), "arg")])
def test_opt_bad_types(args, field):
  with pytest.raises(TypeError, match=field): Opt(*args)

def test_opt_replace():
  o = Opt(OptOps.UPCAST, 0, 4)
  assert o.replace(axis=2) == Opt(OptOps.UPCAST, 2, 4) and o.replace() == o
  assert o.__replace__(op=OptOps.LOCAL, arg=None) == Opt(OptOps.LOCAL, 0, None)
  assert o == Opt(OptOps.UPCAST, 0, 4)
  with pytest.raises(TypeError, match="axis"): o.replace(axis="x")
  with pytest.raises(TypeError): o.replace(bogus=1)
  with pytest.raises(TypeError): o.replace(OptOps.LOCAL)

# ---- KernelOptError, check ----

def test_kernel_opt_error_and_check():
  assert issubclass(_C.KernelOptError, Exception) and _C.KernelOptError.__module__ == "tinyc"
  assert _C.KernelOptError.__name__ == "KernelOptError"
  assert _C.check(True) is None and _C.check(1, "fine") is None
  with pytest.raises(_C.KernelOptError) as e: _C.check(False, "no room")
  assert e.value.args == ("no room",)
  with pytest.raises(_C.KernelOptError) as e: _C.check(0)
  assert e.value.args == ("",)
  with pytest.raises(_C.KernelOptError) as e: _C.check([], msg=(1, 2))
  assert e.value.args == ((1, 2),)
  with pytest.raises(TypeError): _C.check()

def test_check_propagates_truth_error():
  class Bad:
    def __bool__(self): raise ValueError("no truth")
  with pytest.raises(ValueError): _C.check(Bad())

# ---- KernelInfo ----

KI_CASES = [{}, {"name": "r_4_4"}, {"name": "it's \"quoted\"\n"}, {"dont_use_locals": True},
            {"axis_types": (1, 2)}, {"applied_opts": (Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.LOCAL, 1, 2))},
            {"opts_to_apply": ()}, {"opts_to_apply": (Opt(OptOps.TC, 0, (-1, 0, 1)),)},
            {"name": "E_\x1b[34m4\x1b[0m", "axis_types": (), "dont_use_locals": False, "applied_opts": (Opt(OptOps.NOLOCALS),),
             "opts_to_apply": None}]

def ki_both(kw):
  return KernelInfo(**kw), TgKernelInfo(**{k: tg_of(v) for k, v in kw.items()})

@pytest.mark.parametrize("kw", KI_CASES)
def test_kernel_info_repr_fields(kw):
  ours, theirs = ki_both(kw)
  assert repr(ours) == repr(theirs)
  for f in ("name", "axis_types", "dont_use_locals", "applied_opts", "opts_to_apply"):
    assert tg_of(getattr(ours, f)) == getattr(theirs, f)
  assert ours.function_name == theirs.function_name

def test_kernel_info_defaults_positional():
  k = KernelInfo()
  assert (k.name, k.axis_types, k.dont_use_locals, k.applied_opts, k.opts_to_apply) == ("test", (), False, (), None)
  assert type(k.dont_use_locals) is bool
  assert KernelInfo("k", (1,), True, (), None) == KernelInfo(name="k", axis_types=(1,), dont_use_locals=True)
  assert KernelInfo.__match_args__ == ("name", "axis_types", "dont_use_locals", "applied_opts", "opts_to_apply")
  with pytest.raises(TypeError): KernelInfo("a", (), False, (), None, 6)
  with pytest.raises(TypeError): KernelInfo(bogus=1)

def test_kernel_info_eq_hash():
  for kw in KI_CASES:
    ours, theirs = ki_both(kw)
    assert ours == KernelInfo(**kw) and hash(ours) == hash(KernelInfo(**kw)) and hash(ours) == hash(theirs)
  assert KernelInfo() != KernelInfo(name="x") and KernelInfo() != KernelInfo(dont_use_locals=True)
  assert KernelInfo(opts_to_apply=()) != KernelInfo()
  assert KernelInfo() != TgKernelInfo() and KernelInfo() != ("test", (), False, (), None)
  with pytest.raises(TypeError): KernelInfo() < KernelInfo()  # noqa: B015  (no order, as the dataclass)
  assert len({KernelInfo(), KernelInfo(), KernelInfo(name="x")}) == 2

@pytest.mark.parametrize("name", [
  "test", "r_4_4n1", "", "a b.c-d/e", "E_\x1b[34m4\x1b[0m_3", "\x1b[K", "\x1b[Kx m", "\x1b[", "\x1b[31", "\x1bx",
  "\x1b[3\n1m", "x\x1b[1;2mm", "\x1b[\x1b[1mx", "\x1b[m", "ünï☺", "emoji 🙂", "\x00\x7f\x80", "\x1b\x1b[0m", "𝔁_0"])
def test_function_name_matches_tinygrad(name):
  assert KernelInfo(name=name).function_name == to_function_name(name)

@pytest.mark.parametrize("proto", range(pickle.HIGHEST_PROTOCOL + 1))
def test_kernel_info_pickle(exported, proto):
  for kw in KI_CASES:
    k = KernelInfo(**kw)
    back = pickle.loads(pickle.dumps(k, proto))
    assert back == k and type(back) is KernelInfo and repr(back) == repr(k) and hash(back) == hash(k)

def test_kernel_info_frozen():
  k = KernelInfo()
  for name in ("name", "axis_types", "dont_use_locals", "applied_opts", "opts_to_apply", "function_name", "other"):
    with pytest.raises(dataclasses.FrozenInstanceError): setattr(k, name, "x")
    with pytest.raises(AttributeError): delattr(k, name)
  assert k == KernelInfo()

@pytest.mark.parametrize("kw, field", [
  ({"name": 1}, "name"), ({"name": b"x"}, "name"), ({"name": None}, "name"),
  ({"axis_types": [1]}, "axis_types"), ({"axis_types": None}, "axis_types"),
  ({"dont_use_locals": 1}, "dont_use_locals"), ({"dont_use_locals": None}, "dont_use_locals"),
  ({"applied_opts": [Opt(OptOps.NOLOCALS)]}, "applied_opts"), ({"applied_opts": None}, "applied_opts"),
  ({"opts_to_apply": [Opt(OptOps.NOLOCALS)]}, "opts_to_apply"), ({"opts_to_apply": 0}, "opts_to_apply")])
def test_kernel_info_bad_types(kw, field):
  with pytest.raises(TypeError, match=field): KernelInfo(**kw)

def test_kernel_info_replace():
  k = KernelInfo(name="a", applied_opts=(Opt(OptOps.UPCAST, 0, 4),))
  r = k.replace(name="b", dont_use_locals=True)
  assert r == KernelInfo(name="b", dont_use_locals=True, applied_opts=(Opt(OptOps.UPCAST, 0, 4),))
  assert r.function_name == "b" and k.function_name == "a"
  assert k.__replace__(opts_to_apply=()) == KernelInfo(name="a", applied_opts=k.applied_opts, opts_to_apply=())
  with pytest.raises(TypeError, match="opts_to_apply"): k.replace(opts_to_apply=[])
  with pytest.raises(TypeError): k.replace(bogus=1)
  with pytest.raises(TypeError): k.replace("b")

def test_kernel_info_recursive_repr():
  # a list inside a field can hold the KernelInfo itself; the dataclass's repr prints "..." there
  lst = []
  k, tk = KernelInfo(axis_types=(lst,)), TgKernelInfo(axis_types=(lst,))
  lst.append(k)
  r = repr(k)
  lst[0] = tk
  assert r == repr(tk)
