"""The "C dataclass" helper (csrc/helpers/dataclass.c) on every type made with it, against tinygrad 0.12.0's dataclasses of
the same values: repr, eq/hash, order, frozen assignment, pickling, replace (the method and dataclasses.replace), and the
dataclasses module's view (is_dataclass, fields, asdict, astuple, the parameters)."""
import dataclasses, pickle
import pytest
import tinyc
from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps
from tinygrad.dtype import AddrSpace as TgAddrSpace, dtypes as tg_dtypes
from tinygrad.renderer import Estimates as TgEstimates, ProgramSpec as TgProgramSpec
from tinygrad.schedule.indexing import BufferizeOpts as TgBufferizeOpts
from tinygrad.uop.ops import KernelInfo as TgKernelInfo, UOp as TgUOp, Ops as TgOps

def sink(lib):
  """the same small AST in tinyc and in tinygrad (their reprs agree byte for byte)"""
  UOp, Ops, dtypes = lib
  return UOp(Ops.SINK, dtypes.void, (UOp.const(dtypes.int, 3),))

# (tinyc object, the tinygrad object of the same values, a field to change and its new value)
CASES = {
  "Opt": lambda: (tinyc.Opt(tinyc.OptOps.UPCAST, 1, 4), TgOpt(TgOptOps.UPCAST, 1, 4), "axis", 2),
  "KernelInfo": lambda: (tinyc.KernelInfo("r_4", (tinyc.AxisType.LOOP,), True, (tinyc.Opt(tinyc.OptOps.LOCAL, 0, 2),)),
                         TgKernelInfo("r_4", (tinyc.AxisType.LOOP,), True, (TgOpt(TgOptOps.LOCAL, 0, 2),)), "name", "e_1"),
  "Estimates": lambda: (tinyc.Estimates(6, 24, 48), TgEstimates(6, 24, 48), "mem", 12),
  "BufferizeOpts": lambda: (tinyc.BufferizeOpts("CPU", tinyc.AddrSpace.LOCAL, False),
                            TgBufferizeOpts("CPU", TgAddrSpace.LOCAL, False), "removable", True),
  "ProgramSpec": lambda: (tinyc.ProgramSpec("k", "src", "CPU", sink((tinyc.UOp, tinyc.Ops, tinyc.dtypes)), global_size=[4, 1, 1]),
                          TgProgramSpec("k", "src", "CPU", sink((TgUOp, TgOps, tg_dtypes)), global_size=[4, 1, 1]), "lib", b"\x7fELF"),
}
FROZEN = {"Opt", "KernelInfo", "Estimates", "BufferizeOpts"}

@pytest.fixture(params=sorted(CASES))
def case(request): return (request.param, *CASES[request.param]())

def test_repr_as_tinygrad(case):
  name, ours, theirs, field, value = case
  assert repr(ours) == repr(theirs)
  assert repr(ours.replace(**{field: value})) == repr(dataclasses.replace(theirs, **{field: value}))

def test_dataclasses_module_view(case):
  name, ours, theirs, _, _ = case
  assert dataclasses.is_dataclass(ours) and dataclasses.is_dataclass(type(ours))
  assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(theirs)]
  assert type(ours).__match_args__ == type(theirs).__match_args__
  for param in ("eq", "order", "frozen"):
    assert getattr(type(ours).__dataclass_params__, param) == getattr(type(theirs).__dataclass_params__, param), param
  assert dataclasses.astuple(ours) == dataclasses.astuple(ours.replace())   # recursive: an Opt inside becomes a tuple
  assert list(dataclasses.asdict(ours)) == list(dataclasses.asdict(theirs))
  assert dataclasses.asdict(tinyc.KernelInfo(applied_opts=(tinyc.Opt(tinyc.OptOps.LOCAL, 0, 2),)))["applied_opts"] == \
    ({"op": tinyc.OptOps.LOCAL, "axis": 0, "arg": 2},)

def test_eq_hash(case):
  name, ours, theirs, field, value = case
  again = ours.replace()
  assert again is not ours and again == ours and not (again != ours)
  changed = ours.replace(**{field: value})
  assert changed != ours and not (changed == ours)
  assert ours != theirs and ours != dataclasses.astuple(ours)   # another class: NotImplemented both ways, so unequal
  if name in FROZEN:
    assert hash(again) == hash(ours) == hash(dataclasses.astuple(ours))
    assert hash(ours) == hash(theirs) or name == "KernelInfo"   # AxisType members hash by identity in tinygrad
    assert len({ours, again, changed}) == 2
  else:
    with pytest.raises(TypeError): hash(ours)

def test_order():
  a, b = tinyc.Opt(tinyc.OptOps.UPCAST, 0, 2), tinyc.Opt(tinyc.OptOps.UPCAST, 0, 4)
  assert a < b and a <= b and b > a and b >= a and not (a > b) and a <= a.replace()
  for ours in (tinyc.KernelInfo(), tinyc.Estimates(), tinyc.BufferizeOpts("CPU")):   # no order=True: no <
    with pytest.raises(TypeError): ours < ours  # noqa: B015

def test_replace(case):
  name, ours, theirs, field, value = case
  new = ours.replace(**{field: value})
  assert getattr(new, field) == value and getattr(ours, field) != value
  assert dataclasses.replace(ours, **{field: value}) == new == ours.__replace__(**{field: value})
  assert type(new) is type(ours)

def test_replace_bad_names(case):
  name, ours, theirs, field, value = case
  with pytest.raises(TypeError): dataclasses.replace(theirs, bogus=1)
  with pytest.raises(TypeError, match="bogus"): ours.replace(bogus=1)
  with pytest.raises(TypeError): dataclasses.replace(ours, bogus=1)
  with pytest.raises(TypeError): ours.replace(value)   # fields only by name

def test_frozen(case):
  name, ours, theirs, field, value = case
  if name not in FROZEN:
    setattr(ours, field, value)   # a plain dataclass: assignable
    assert getattr(ours, field) == value
    return
  for target in (ours, theirs):
    with pytest.raises(dataclasses.FrozenInstanceError, match=field): setattr(target, field, value)
    with pytest.raises(dataclasses.FrozenInstanceError): delattr(target, field)
  assert getattr(ours, field) != value

def test_pickle(case):
  name, ours, theirs, field, value = case
  for proto in range(pickle.HIGHEST_PROTOCOL + 1):
    back = pickle.loads(pickle.dumps(ours, proto))
    assert type(back) is type(ours) and back == ours and repr(back) == repr(ours)

def test_recursive_repr():
  lst = []
  ours, theirs = tinyc.Estimates(lst), TgEstimates(lst)
  lst.append(ours)
  r = repr(ours)
  lst[0] = theirs
  assert r == repr(theirs) == "Estimates(ops=[...], lds=0, mem=0)"

def _defaults(obj):
  """each field's name and default as dataclasses.fields gives it: repr of the default, ("factory", a made value), or "-" """
  def default(f):
    if f.default is not dataclasses.MISSING: return repr(f.default)
    return ("factory", repr(f.default_factory())) if f.default_factory is not dataclasses.MISSING else "-"
  return [(f.name, default(f), f.init, f.repr, f.compare, f.hash, f.kw_only) for f in dataclasses.fields(obj)]

def test_field_defaults(case):
  name, ours, theirs, _, _ = case
  assert _defaults(ours) == _defaults(theirs)

def test_default_factory_makes_a_new_value():
  aux = {f.name: f for f in dataclasses.fields(tinyc.ProgramSpec)}["global_size"]
  a, b = aux.default_factory(), aux.default_factory()
  assert a == b == [1, 1, 1] and a is not b
  a.append(2)
  assert aux.default_factory() == [1, 1, 1]

# types tinygrad declares @dataclass(eq=False) and tinyc describes only (dataclass_describe): their own slots, tinygrad's fields
DESCRIBED = {"UOp": lambda: (tinyc.UOp.const(tinyc.dtypes.int, 3), TgUOp.const(tg_dtypes.int, 3), "arg", 4),
             "DType": lambda: (tinyc.dtypes.float, tg_dtypes.float, None, None),
             "PtrDType": lambda: (tinyc.dtypes.float.ptr(16), tg_dtypes.float.ptr(16), None, None)}

@pytest.mark.parametrize("name", sorted(DESCRIBED))
def test_described_types(name):
  ours, theirs, field, value = DESCRIBED[name]()
  assert dataclasses.is_dataclass(ours) and type(ours).__match_args__ == type(theirs).__match_args__
  assert _defaults(ours) == _defaults(theirs)
  for param in ("eq", "order", "frozen"):
    assert getattr(type(ours).__dataclass_params__, param) == getattr(type(theirs).__dataclass_params__, param), param
  assert repr(dataclasses.asdict(ours)) == repr(dataclasses.asdict(theirs))
  assert repr(dataclasses.astuple(ours)) == repr(dataclasses.astuple(theirs))
  assert (ours == ours, hash(ours) == hash(ours)) == (theirs == theirs, hash(theirs) == hash(theirs)) == (True, True)
  if field: assert repr(dataclasses.replace(ours, **{field: value})) == repr(dataclasses.replace(theirs, **{field: value}))
