"""tinyc's dtype module against tinygrad 0.12.0's tinygrad/dtype.py, which is the oracle."""
import itertools, math, pickle, copy
import pytest
import tinygrad.dtype as T
from tinyc import _C as C

SCALARS = ["void", "index", "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "fp8e4m3", "fp8e5m2", "float16", "bfloat16", "float32", "float64"]
ALIASES = {"half": "float16", "float": "float32", "double": "float64", "uchar": "uint8", "ushort": "uint16",
           "uint": "uint32", "ulong": "uint64", "char": "int8", "short": "int16", "int": "int32", "long": "int64"}
GROUPS = ["fp8s", "floats", "uints", "sints", "ints", "index_like", "all"]

def both(name): return getattr(C.dtypes, name), getattr(T.dtypes, name)
def ours(t):
  """Our dtype for a tinygrad one, found by evaluating tinygrad's repr in our namespace."""
  return eval(repr(t), {"dtypes": C.dtypes, "AddrSpace": C.AddrSpace})

def derived(dt):
  """Vectors and pointers of a tinygrad scalar (the ones tinygrad can make)."""
  out = [dt, dt.vec(4), dt.ptr(), dt.ptr(16, T.AddrSpace.LOCAL), dt.ptr(8, T.AddrSpace.REG), dt.ptr(32).vec(2)]
  if dt is not T.dtypes.void: out += [dt.vec(2).ptr(3), dt.vec(4).ptr(3).vec(2), dt.vec(0)]
  return out

T_ALL = [d for n in SCALARS for d in derived(getattr(T.dtypes, n))]

def outcome(fn, *args):
  """(True, result) or (False, exception type); tinygrad's asserts count as our ValueError."""
  try: return True, fn(*args)
  except AssertionError: return False, ValueError
  except Exception as e: return False, type(e)

def same_value(a, b):
  if isinstance(a, tuple): return isinstance(b, tuple) and len(a) == len(b) and all(map(same_value, a, b))
  if a is C.Invalid: return b is T.Invalid
  if isinstance(a, float) and math.isnan(a): return isinstance(b, float) and math.isnan(b)
  return type(a) is type(b) and a == b and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))

def same_outcome(ours_fn, tg_fn, *args_pair):
  o, t = outcome(ours_fn, *args_pair[0]), outcome(tg_fn, *args_pair[1])
  assert o[0] == t[0], (args_pair[1], o, t)
  if o[0]: assert same_value(o[1], t[1]), (args_pair[1], o[1], t[1])
  else: assert issubclass(o[1], t[1]) or o[1] is t[1], (args_pair[1], o[1], t[1])

# ---- the dtypes themselves

@pytest.mark.parametrize("t", T_ALL, ids=repr)
def test_fields_match(t):
  o = ours(t)
  assert repr(o) == repr(t)
  assert isinstance(o, C.DType) and isinstance(o, C.PtrDType) == isinstance(t, T.PtrDType)
  for f in ("priority", "bitsize", "name", "fmt", "count", "itemsize", "vcount", "min", "max"):
    assert same_value(getattr(o, f), getattr(t, f)), f
  assert repr(o.base) == repr(t.base) and repr(o.scalar()) == repr(t.scalar())
  assert repr(o._scalar) == repr(t._scalar)
  for f in ("is_float", "is_int", "is_unsigned", "is_bool"):
    assert getattr(C.dtypes, f)(o) == getattr(T.dtypes, f)(t), f
  assert same_value(C.dtypes.min(o), T.dtypes.min(t)) and same_value(C.dtypes.max(o), T.dtypes.max(t))
  if isinstance(t, T.PtrDType):
    assert repr(o._base) == repr(t._base) and o.addrspace.name == t.addrspace.name
    assert (o.v, o.size) == (t.v, t.size)
  same_outcome(lambda d: d.nbytes(), lambda d: d.nbytes(), (o,), (t,))

def test_names_and_aliases():
  for n in SCALARS + list(ALIASES): assert repr(getattr(C.dtypes, n)) == repr(getattr(T.dtypes, n))
  for a, n in ALIASES.items(): assert getattr(C.dtypes, a) is getattr(C.dtypes, n)
  for n in GROUPS: assert repr(getattr(C.dtypes, n)) == repr(getattr(T.dtypes, n)), n
  assert C.dtypes.default_float is C.dtypes.float32 and C.dtypes.default_int is C.dtypes.int32
  assert {k: repr(v) for k, v in C.dtypes.fields().items()} == {k: repr(v) for k, v in T.dtypes.fields().items()}
  assert list(C.dtypes.fields()) == list(T.dtypes.fields())
  assert C.INVERSE_DTYPES_DICT == T.INVERSE_DTYPES_DICT

def test_vector_names():
  for n in SCALARS[1:]:
    o, t = both(n)
    for sz in (0, 2, 3, 4, 8, 16): assert o.vec(sz).name == t.vec(sz).name
  assert C.dtypes.void.vec(4) is C.dtypes.void and C.dtypes.float.vec(1) is C.dtypes.float
  p = C.dtypes.float.ptr(8)
  assert p.vec(1) is p and p.vec(4).scalar() is p and p.vec(4).name == "float"

def test_addrspace():
  assert [m.name for m in C.AddrSpace] == [m.name for m in T.AddrSpace]
  assert [m.value for m in C.AddrSpace] == [1, 2, 3]
  for o, t in zip(C.AddrSpace, T.AddrSpace): assert repr(o) == repr(t) and str(o) == str(t)

def test_interning():
  f = C.dtypes.float
  assert f.vec(4) is f.vec(4) and f.ptr(3) is f.ptr(3) and f.ptr(3, C.AddrSpace.LOCAL) is not f.ptr(3)
  assert f.vec(4).ptr(2).vec(3) is f.vec(4).ptr(2).vec(3)
  assert C.DType(13, 32, "float", "f", 1, None) is f
  assert C.DType.new(13, 32, "float", "f") is f
  assert C.DType(13, 128, "float4", None, 4, f) is f.vec(4)
  assert C.PtrDType(13, 32, "float", "f", 1, None, f, C.AddrSpace.GLOBAL, 1, 7) is f.ptr(7)
  assert C.PtrDType(13, 32, "float", "f", 1, None, f, C.AddrSpace.GLOBAL, 1) is f.ptr()
  custom = C.DType.new(13, 32, "float", "i")
  assert custom is not f and custom is C.DType.new(13, 32, "float", "i") and repr(custom) == "dtypes.float"
  assert not C.dtypes.is_float(custom)  # like tinygrad: not *the* float

def test_ptr_answers_recent_pointers_from_a_cache():
  """ptr() keeps its recent answers per dtype (a few slots, sizes and address spaces sharing them): every answer is
  still the one interned pointer of that (size, address space), whatever was asked in between"""
  spaces = list(C.AddrSpace)
  asks = [(size, space) for size in (-1, 0, 1, 2, 3, 4, 5, 7, 8, 64, 2**40) for space in spaces]
  for base in (C.dtypes.float, C.dtypes.int, C.dtypes.float.vec(4)):
    first = {a: base.ptr(a[0], a[1]) for a in asks}
    assert len({id(p) for p in first.values()}) == len(asks)
    for size, space in asks * 2 + asks[::-1]:
      p = base.ptr(size, space)
      assert p is first[(size, space)] and p.size == size and p.addrspace is space and p.base is base
      assert p is C.PtrDType(base.priority, base.bitsize, base.name, base.fmt, base.count, None, base, space, 1, size)

def test_hash_and_identity_eq():
  ds = [ours(t) for t in T_ALL]
  assert len({id(d) for d in ds}) == len({d: None for d in ds})
  assert C.dtypes.float != C.dtypes.float.vec(1).ptr()
  assert hash(C.dtypes.float) == hash(C.dtypes.float)
  with pytest.raises(AttributeError): C.dtypes.float.priority = 3

@pytest.mark.parametrize("t", T_ALL, ids=repr)
def test_pickle_identity(t):
  o = ours(t)
  assert pickle.loads(pickle.dumps(o)) is o
  assert copy.deepcopy(o) is o and copy.copy(o) is o

def test_ordering():
  ts = [getattr(T.dtypes, n) for n in SCALARS] + [T.dtypes.float.vec(4), T.dtypes.float.vec(2), T.dtypes.int.vec(3)]
  assert [repr(d) for d in sorted(map(ours, ts))] == [repr(d) for d in sorted(ts)]
  for a, b in itertools.product(ts, repeat=2):
    assert (ours(a) < ours(b)) == (a < b) and (ours(a) > ours(b)) == (a > b)
  assert repr(max(map(ours, ts))) == repr(max(ts))
  with pytest.raises(TypeError): C.dtypes.float <= C.dtypes.half
  with pytest.raises(TypeError): C.dtypes.float < 3

# ---- promotion

def test_least_upper_dtype_pairs():
  ts = [getattr(T.dtypes, n) for n in SCALARS] + [T.dtypes.float.vec(4), T.dtypes.int8.vec(2), T.dtypes.float.ptr()]
  for a, b in itertools.product(ts, repeat=2):
    same_outcome(lambda x, y: repr(C.least_upper_dtype(x, y)), lambda x, y: repr(T.least_upper_dtype(x, y)),
                 (ours(a), ours(b)), (a, b))
  lattice = [getattr(T.dtypes, n) for n in SCALARS[2:]]
  for ds in itertools.combinations(lattice, 3):
    assert repr(C.least_upper_dtype(*map(ours, ds))) == repr(T.least_upper_dtype(*ds))
  for d in lattice: assert repr(C.least_upper_dtype(ours(d))) == repr(T.least_upper_dtype(d))

def test_least_upper_float_and_sum_acc():
  for t in [getattr(T.dtypes, n) for n in SCALARS] + [T.dtypes.half.vec(2), T.dtypes.int.vec(2)]:
    same_outcome(lambda d: repr(C.least_upper_float(d)), lambda d: repr(T.least_upper_float(d)), (ours(t),), (t,))
    same_outcome(lambda d: repr(C.sum_acc_dtype(d)), lambda d: repr(T.sum_acc_dtype(d)), (ours(t),), (t,))

def test_can_lossless_cast_pairs():
  ts = [getattr(T.dtypes, n) for n in SCALARS] + [T.dtypes.float.vec(2), T.dtypes.int8.ptr()]
  for a, b in itertools.product(ts, repeat=2):
    assert C.can_lossless_cast(ours(a), ours(b)) == T.can_lossless_cast(a, b), (a, b)

def test_to_dtype():
  for n in SCALARS + list(ALIASES) + ["FLOAT", "Half"]:
    assert repr(C.to_dtype(n)) == repr(T.to_dtype(n))
  assert C.to_dtype(C.dtypes.half.vec(2)) is C.dtypes.half.vec(2)
  with pytest.raises(AttributeError): C.to_dtype("nope")
  with pytest.raises(ValueError): C.to_dtype("fp8s")
  with pytest.raises(TypeError): C.to_dtype(3)

# ---- values

VALUES = [0, 1, -1, 7, 255, 256, -129, 2**31, 2**63, -2**63 - 1, 2**70, True, False, 0.0, -0.0, 0.5, 1.5, 2.5, -3.7,
          1e-8, 3.14159, 65504.0, 65519.99, 65520.0, 1e6, 3.4e38, 1e300, -1e300, 448.0, 464.0, 57344.0, 61440.0,
          0.0009765625, 2**-10 * 1.5, 2**-17, 2**-16, 1e-40, math.inf, -math.inf, math.nan, -math.nan]

@pytest.mark.parametrize("name", SCALARS)
def test_as_const(name):
  o, t = both(name)
  for dt_o, dt_t in ((o, t), (o.vec(2), t.vec(2)) if name != "void" else (o, t)):
    for v in VALUES + [T.Invalid]:
      vo = C.Invalid if v is T.Invalid else v
      same_outcome(C.dtypes.as_const, T.dtypes.as_const, (vo, dt_o), (v, dt_t))
    for v in [(1, 2), (1.5, math.nan), (1, 2, 3)]:
      same_outcome(C.dtypes.as_const, T.dtypes.as_const, (v, dt_o), (v, dt_t))

def test_as_const_nan_is_math_nan():
  assert C.dtypes.as_const(float("nan"), C.dtypes.float) is math.nan
  assert C.dtypes.as_const((float("nan"),) * 2, C.dtypes.half.vec(2))[1] is math.nan
  assert C.dtypes.as_const(C.Invalid, C.dtypes.int) is C.Invalid
  with pytest.raises(ValueError): C.dtypes.as_const((1, 2), C.dtypes.float)

@pytest.mark.parametrize("name", SCALARS)
def test_truncate(name):
  o, t = both(name)
  tfn = T.truncate.get(t, lambda x: x)
  for v in VALUES:
    same_outcome(C.truncate_value, lambda d, x: tfn(x), (o, v), (t, v))

def test_truncate_vector_is_identity():
  assert C.truncate_value(C.dtypes.float.vec(2), 1e300) == 1e300

def test_fp16_bf16():
  for v in VALUES + [i / 7 for i in range(-100, 100)] + [2.0**e for e in range(-30, 20)]:
    assert same_value(C.float_to_fp16(v), T.float_to_fp16(v)), v
    if isinstance(v, float): assert same_value(C.float_to_bf16(v), T.float_to_bf16(v)), v
  assert C.float_to_fp16("1.5") == 1.5

def test_fp8_all_bit_patterns():
  for o, t in (both("fp8e4m3"), both("fp8e5m2")):
    for b in range(256):
      assert same_value(C.fp8_to_float(b, o), T.fp8_to_float(b, t)), b
      x = T.fp8_to_float(b, t)
      assert C.float_to_fp8(x, o) == T.float_to_fp8(x, t), (b, x)

def test_fp8_rounding():
  vals = VALUES[13:] + [i / 64 for i in range(-2000, 2000, 7)] + [2.0**e * 1.0625 for e in range(-20, 17)]
  for o, t in (both("fp8e4m3"), both("fp8e5m2")):
    for v in vals: assert C.float_to_fp8(v, o) == T.float_to_fp8(v, t), v

def test_from_py():
  for v in [1, 1.5, True, [], (), [1, 2.0], [True, False], [[1], [2, [3.5]]], (1, True), [True, 1]]:
    assert repr(C.dtypes.from_py(v)) == repr(T.dtypes.from_py(v)), v
  for v in ["x", None, 1j, {1}]:
    with pytest.raises(RuntimeError): C.dtypes.from_py(v)

def test_finfo():
  for t in [getattr(T.dtypes, n) for n in SCALARS] + [T.dtypes.float.vec(2)]:
    same_outcome(C.dtypes.finfo, T.dtypes.finfo, (ours(t),), (t,))

# ---- Invalid

def test_invalid():
  I = C.Invalid
  assert repr(I) == "Invalid" and C.InvalidType() is I and pickle.loads(pickle.dumps(I)) is I
  assert I == I and not (I != I) and I != 3 and not (I == 3)
  assert (I < I, I > I, I < 3, I > 3, 3 < I, 3 > I) == (False, False, True, True, True, True)
  assert hash(I) == hash(id(I))
  assert copy.deepcopy(I) is I
  with pytest.raises(TypeError): C.InvalidType(1)

# ---- errors

def test_bad_inputs():
  f = C.dtypes.float
  with pytest.raises(ValueError): f.vec(4).vec(2)
  with pytest.raises(ValueError): f.ptr().vec(2).vec(2)
  with pytest.raises(ValueError): f.vec(-1)
  with pytest.raises(TypeError): f.vec(2.0)
  with pytest.raises(RuntimeError): f.ptr().ptr()
  with pytest.raises(RuntimeError): f.nbytes()
  with pytest.raises(RuntimeError): f.ptr().nbytes()
  assert f.vec(4).ptr(3).nbytes() == 48
  with pytest.raises(TypeError): f.ptr(addrspace=2)
  with pytest.raises(TypeError): f.ptr("3")
  with pytest.raises(TypeError): C.DType(1, 2, 3, None, 1, None)
  with pytest.raises(ValueError): C.DType(1, 2, "x", "ab", 1, None)
  with pytest.raises(TypeError): C.DType(1, 2, "x", None, 1, 5)
  with pytest.raises(TypeError): C.PtrDType(13, 32, "float", "f", 1, None, 5, C.AddrSpace.GLOBAL, 1)
  with pytest.raises(TypeError): C.least_upper_dtype()
  with pytest.raises(TypeError): C.least_upper_dtype(f, "float")
  with pytest.raises(KeyError): C.least_upper_dtype(f, C.dtypes.index)
  with pytest.raises(TypeError): C.dtypes.is_float("float")
  with pytest.raises(TypeError): C.dtypes.as_const(1)
  with pytest.raises(TypeError): C.truncate_value(C.dtypes.int8, 1.5)
  with pytest.raises(ValueError): C.truncate_value(C.dtypes.half, "x")
  with pytest.raises(TypeError): C.truncate_value(C.dtypes.half, None)
  with pytest.raises(ValueError): C.float_to_fp8(1.0, f)
  with pytest.raises(ValueError): C.fp8_to_float(1, C.dtypes.half)
  with pytest.raises(ValueError): C.fp8_to_float(256, C.dtypes.fp8e4m3)
  with pytest.raises(TypeError): C.can_lossless_cast(f, None)
  with pytest.raises(KeyError): repr(C.DType.new(5, 32, "custom", "i"))
