/* tinygrad/dtype.py in C: DType, PtrDType, the dtypes namespace, AddrSpace, Invalid, type promotion,
 * and the value truncations (fp16, bf16, fp8, C integer wraparound). */
#include "dtype.h"
#include "helpers/enum.h"
#include "helpers/dataclass.h"
#include "helpers.h"
#include <math.h>
#include <string.h>
#include <limits.h>

DType *scalar_dtypes[DT_COUNT];
PyObject *Invalid;
PyObject *addrspace_members[4];
PyObject *dtypes_class;

static PyObject *dcache;          /* constructor-args tuple -> DType: interns every dtype and keeps it alive */
static PyObject *canonical_nan;   /* math.nan: one nan object, so identity-based equality of consts holds */
static PyObject *min_values[DT_COUNT + 1], *max_values[DT_COUNT + 1];  /* by id; DT_COUNT = not a number type */
static PyObject *dtypes_dict;     /* tinygrad's DTYPES_DICT */
static PyObject *inverse_dict;    /* tinygrad's INVERSE_DTYPES_DICT */
static PyObject *str_default_float, *str_default_int;

/* ---------------------------------------------------------------- scalar tables */

typedef struct {
  int priority, bitsize;
  const char *name;        /* the C name tinygrad stores in DType.name */
  char fmt;
  const char *short_name;  /* tinygrad's INVERSE_DTYPES_DICT[name]: used by repr and vector names */
} ScalarInfo;

static const ScalarInfo scalar_info[DT_COUNT] = {
  [DT_VOID] = {-1, 0, "void", 0, "void"},             [DT_INDEX] = {-1, 800, "index", 0, "index"},
  [DT_BOOL] = {0, 1, "bool", '?', "bool"},            [DT_INT8] = {1, 8, "signed char", 'b', "char"},
  [DT_UINT8] = {2, 8, "unsigned char", 'B', "uchar"}, [DT_INT16] = {3, 16, "short", 'h', "short"},
  [DT_UINT16] = {4, 16, "unsigned short", 'H', "ushort"}, [DT_INT32] = {5, 32, "int", 'i', "int"},
  [DT_UINT32] = {6, 32, "unsigned int", 'I', "uint"}, [DT_INT64] = {7, 64, "long", 'q', "long"},
  [DT_UINT64] = {8, 64, "unsigned long", 'Q', "ulong"},
  [DT_FP8E4M3] = {9, 8, "float8_e4m3", 0, "fp8e4m3"}, [DT_FP8E5M2] = {10, 8, "float8_e5m2", 0, "fp8e5m2"},
  [DT_FLOAT16] = {11, 16, "half", 'e', "half"},       [DT_BFLOAT16] = {12, 16, "__bf16", 0, "bfloat16"},
  [DT_FLOAT32] = {13, 32, "float", 'f', "float"},     [DT_FLOAT64] = {14, 64, "double", 'd', "double"},
};

/* dtypes' attribute names in tinygrad's class-body order; DTYPES_DICT is these minus void and index */
static const struct { const char *attr; DTypeId id; } dtype_attrs[] = {
  {"void", DT_VOID}, {"index", DT_INDEX}, {"bool", DT_BOOL}, {"int8", DT_INT8}, {"uint8", DT_UINT8},
  {"int16", DT_INT16}, {"uint16", DT_UINT16}, {"int32", DT_INT32}, {"uint32", DT_UINT32}, {"int64", DT_INT64},
  {"uint64", DT_UINT64}, {"fp8e4m3", DT_FP8E4M3}, {"fp8e5m2", DT_FP8E5M2}, {"float16", DT_FLOAT16},
  {"bfloat16", DT_BFLOAT16}, {"float32", DT_FLOAT32}, {"float64", DT_FLOAT64},
  {"half", DT_FLOAT16}, {"float", DT_FLOAT32}, {"double", DT_FLOAT64}, {"uchar", DT_UINT8}, {"ushort", DT_UINT16},
  {"uint", DT_UINT32}, {"ulong", DT_UINT64}, {"char", DT_INT8}, {"short", DT_INT16}, {"int", DT_INT32},
  {"long", DT_INT64},
};

#define BIT(ID) (1u << DT_##ID)
static const uint32_t FP8_SET = BIT(FP8E4M3) | BIT(FP8E5M2);
static const uint32_t FLOAT_SET = BIT(FP8E4M3) | BIT(FP8E5M2) | BIT(FLOAT16) | BIT(BFLOAT16) | BIT(FLOAT32) | BIT(FLOAT64);
static const uint32_t UINT_SET = BIT(UINT8) | BIT(UINT16) | BIT(UINT32) | BIT(UINT64);
static const uint32_t SINT_SET = BIT(INT8) | BIT(INT16) | BIT(INT32) | BIT(INT64);
static const uint32_t INDEX_LIKE_SET = BIT(UINT8) | BIT(UINT16) | BIT(UINT32) | BIT(UINT64) | BIT(INT8) | BIT(INT16) |
                                       BIT(INT32) | BIT(INT64) | BIT(INDEX);

/* tinygrad's promo_lattice: each scalar's direct parents */
static const uint32_t promo_parents[DT_COUNT] = {
  [DT_BOOL] = BIT(INT8) | BIT(UINT8), [DT_INT8] = BIT(INT16), [DT_INT16] = BIT(INT32), [DT_INT32] = BIT(INT64),
  [DT_INT64] = FP8_SET, [DT_UINT8] = BIT(INT16) | BIT(UINT16), [DT_UINT16] = BIT(INT32) | BIT(UINT32),
  [DT_UINT32] = BIT(INT64) | BIT(UINT64), [DT_UINT64] = FP8_SET,
  [DT_FP8E5M2] = BIT(FLOAT16) | BIT(BFLOAT16), [DT_FP8E4M3] = BIT(FLOAT16) | BIT(BFLOAT16),
  [DT_FLOAT16] = BIT(FLOAT32), [DT_BFLOAT16] = BIT(FLOAT32), [DT_FLOAT32] = BIT(FLOAT64),
};
static const uint32_t LATTICE_SET = ~(BIT(VOID) | BIT(INDEX)) & ((1u << DT_COUNT) - 1);
static uint32_t promo_ancestors[DT_COUNT];  /* _get_recursive_parents as bit sets, filled at init */

/* can_lossless_cast: for each target dt1, the set of sources dt0 whose values it keeps */
static const uint32_t lossless_from[DT_COUNT] = {
  [DT_INDEX] = UINT_SET | SINT_SET,
  [DT_FLOAT64] = BIT(FLOAT32) | BIT(FLOAT16) | BIT(BFLOAT16) | FP8_SET | BIT(UINT32) | BIT(UINT16) | BIT(UINT8) |
                 BIT(INT32) | BIT(INT16) | BIT(INT8),
  [DT_FLOAT32] = BIT(FLOAT16) | BIT(BFLOAT16) | FP8_SET | BIT(UINT16) | BIT(UINT8) | BIT(INT16) | BIT(INT8),
  [DT_FLOAT16] = FP8_SET | BIT(UINT8) | BIT(INT8),
  [DT_UINT64] = BIT(UINT32) | BIT(UINT16) | BIT(UINT8), [DT_UINT32] = BIT(UINT16) | BIT(UINT8),
  [DT_UINT16] = BIT(UINT8),
  [DT_INT64] = BIT(UINT32) | BIT(UINT16) | BIT(UINT8) | BIT(INT32) | BIT(INT16) | BIT(INT8),
  [DT_INT32] = BIT(UINT16) | BIT(UINT8) | BIT(INT16) | BIT(INT8), [DT_INT16] = BIT(UINT8) | BIT(INT8),
};

static const char *const addrspace_names[4] = {NULL, "GLOBAL", "LOCAL", "REG"};

/* id of dt when dt *is* one of the standard scalars (tinygrad's dict/tuple lookups use identity), else -1 */
static inline int exact_id(DType *dt) {
  return (dt->id < DT_COUNT && scalar_dtypes[dt->id] == dt) ? (int)dt->id : -1;
}
static inline bool id_in(DType *dt, uint32_t set) { return dt->id < DT_COUNT && ((set >> dt->id) & 1); }

bool dtype_is_float(DType *dt) { return id_in(dt, FLOAT_SET) || dtype_is_image(dt); }   /* images hold floats */
bool dtype_is_int(DType *dt) { return id_in(dt, INDEX_LIKE_SET); }
bool dtype_is_unsigned(DType *dt) { return id_in(dt, UINT_SET); }
bool dtype_is_bool(DType *dt) { return dt->id == DT_BOOL; }

/* INVERSE_DTYPES_DICT[name] as a C string; KeyError for a name no standard dtype has */
static const char *short_name_of(PyObject *name) {
  for (int i = 0; i < DT_COUNT; i++)
    if (PyUnicode_CompareWithASCIIString(name, scalar_info[i].name) == 0) return scalar_info[i].short_name;
  PyErr_SetObject(PyExc_KeyError, name);
  return NULL;
}

static DType *check_dtype(PyObject *o, const char *what) {
  if (DType_Check(o)) return (DType *)o;
  PyErr_Format(PyExc_TypeError, "%s must be a DType, not %.100s", what, Py_TYPE(o)->tp_name);
  return NULL;
}

/* ---------------------------------------------------------------- interning */

typedef struct {
  int priority, bitsize, count;
  char fmt;
  PyObject *name;
  DType *scalar;
  bool is_ptr;
  DType *base;
  AddrSpaceId addrspace;
  int v;
  Py_ssize_t size;
  PyObject *shape;      /* an ImageDType's (a tuple of ints), else NULL */
  Py_ssize_t pitch;
} DTypeSpec;

static PyObject *fmt_object(char fmt) {
  if (!fmt) Py_RETURN_NONE;
  return PyUnicode_FromOrdinal((unsigned char)fmt);
}

static PyObject *or_none(DType *dt) { return dt ? (PyObject *)dt : Py_None; }

/* The intern key: tinygrad's constructor args, with a pointer's size always present. */
static PyObject *spec_key(const DTypeSpec *s) {
  PyObject *fmt = fmt_object(s->fmt), *key;
  if (!fmt) return NULL;
  if (s->shape)
    key = Py_BuildValue("(iiOOiOOOinOn)", s->priority, s->bitsize, s->name, fmt, s->count, or_none(s->scalar),
                        (PyObject *)s->base, addrspace_members[s->addrspace], s->v, s->size, s->shape, s->pitch);
  else if (s->is_ptr)
    key = Py_BuildValue("(iiOOiOOOin)", s->priority, s->bitsize, s->name, fmt, s->count, or_none(s->scalar),
                        (PyObject *)s->base, addrspace_members[s->addrspace], s->v, s->size);
  else
    key = Py_BuildValue("(iiOOiO)", s->priority, s->bitsize, s->name, fmt, s->count, or_none(s->scalar));
  Py_DECREF(fmt);
  return key;
}

static DType *new_dtype(const DTypeSpec *s, PyObject *key) {
  PyTypeObject *tp = s->shape ? &ImageDType_Type : s->is_ptr ? &PtrDType_Type : &DType_Type;
  DType *dt = (DType *)tp->tp_alloc(tp, 0);
  if (!dt) return NULL;
  dt->priority = s->priority; dt->bitsize = s->bitsize; dt->count = s->count; dt->fmt = s->fmt;
  dt->name = Py_NewRef(s->name);
  dt->scalar_ = s->scalar; Py_XINCREF(s->scalar);
  /* a fresh scalar is a hand-made one; init overwrites the id of the standard scalars */
  dt->id = (!s->is_ptr && s->scalar) ? s->scalar->id : DT_COUNT;
  dt->is_ptr = s->is_ptr;
  if (s->is_ptr) {
    dt->base = (DType *)Py_NewRef((PyObject *)s->base);
    dt->addrspace = s->addrspace; dt->v = s->v; dt->size = s->size;
  } else {   /* the pointer fields hold harmless values on every dtype, so C that reads one unchecked reads no garbage */
    dt->base = dt;   /* borrowed: not a reference to itself */
    dt->addrspace = ADDRSPACE_GLOBAL; dt->v = 1; dt->size = -1;
  }
  dt->shape = s->shape; Py_XINCREF(s->shape);
  dt->pitch = s->shape ? s->pitch : -1;
  int rc = PyDict_SetItem(dcache, key, (PyObject *)dt);
  Py_DECREF(dt);  /* dcache owns it from now on */
  return rc < 0 ? NULL : dt;
}

/* The dtype with these fields: the existing one when made before. Borrowed. */
static DType *intern_dtype(const DTypeSpec *s) {
  PyObject *key = spec_key(s);
  if (!key) return NULL;
  DType *dt = (DType *)PyDict_GetItemWithError(dcache, key);
  if (!dt && !PyErr_Occurred()) dt = new_dtype(s, key);
  Py_DECREF(key);
  return dt;
}

static DTypeSpec spec_of(DType *dt) {
  DTypeSpec s = {dt->priority, dt->bitsize, dt->count, dt->fmt, dt->name, dt->scalar_,
                 dt->is_ptr, dt->base, dt->addrspace, dt->v, dt->size, dt->shape, dt->pitch};
  return s;
}

/* ImageDType.ptr: an image is its own pointer, and only global */
static DType *image_ptr(DType *dt, AddrSpaceId addrspace) {
  if (addrspace != ADDRSPACE_GLOBAL) { PyErr_SetString(PyExc_AssertionError, "images can't be local"); return NULL; }
  return dt;
}

/* the vector of a non-pointer dtype: named like "float4" */
static DType *make_vector(DType *dt, int sz) {
  const char *short_name = short_name_of(dt->name);
  if (!short_name) return NULL;
  if ((long long)dt->bitsize * sz > INT_MAX) {
    PyErr_Format(PyExc_OverflowError, "vector of %d elements is too wide", sz);
    return NULL;
  }
  PyObject *name = PyUnicode_FromFormat("%s%d", short_name, sz);
  if (!name) return NULL;
  DTypeSpec s = {dt->priority, dt->bitsize * sz, sz, 0, name, dt, false, NULL, 0, 0, 0};
  DType *ret = intern_dtype(&s);
  Py_DECREF(name);
  return ret;
}

DType *dtype_vec(DType *dt, int sz) {
  if (sz < 0) { PyErr_Format(PyExc_ValueError, "vector size must be >= 0, not %d", sz); return NULL; }
  if (dtype_vcount(dt) != 1) {
    PyErr_Format(PyExc_ValueError, dt->is_ptr ? "can't vectorize ptr %R with size %d" : "can't vectorize %R with size %d",
                 (PyObject *)dt, sz);
    return NULL;
  }
  if (sz == 1 || dt == DTYPE(VOID)) return dt;  /* void doesn't vectorize, vec(1) is the scalar */
  if (!dt->vec_cache && !(dt->vec_cache = PyDict_New())) return NULL;
  PyObject *key = PyLong_FromLong(sz);
  if (!key) return NULL;
  DType *ret = (DType *)PyDict_GetItemWithError(dt->vec_cache, key);
  if (!ret && !PyErr_Occurred()) {
    if (dt->is_ptr) {
      DTypeSpec s = spec_of(dt);
      s.scalar = dt; s.v = sz;
      s.pitch = -1;   /* tinygrad's vec of an image does not pass its _pitch on */
      ret = intern_dtype(&s);
    } else {
      ret = make_vector(dt, sz);
    }
    if (ret && PyDict_SetItem(dt->vec_cache, key, (PyObject *)ret) < 0) ret = NULL;
  }
  Py_DECREF(key);
  return ret;
}

DType *dtype_ptr(DType *dt, Py_ssize_t size, AddrSpaceId addrspace) {
  if (dtype_is_image(dt)) return image_ptr(dt, addrspace);
  if (dt->is_ptr) { PyErr_SetString(PyExc_RuntimeError, "can't make a pointer from a pointer"); return NULL; }
  if (addrspace < ADDRSPACE_GLOBAL || addrspace > ADDRSPACE_REG) {
    PyErr_Format(PyExc_ValueError, "bad address space %d", (int)addrspace);
    return NULL;
  }
  int slot = (int)(((size_t)size ^ (size_t)addrspace) & 3);
  if (dt->ptr_cache[slot].ptr && dt->ptr_cache[slot].size == size && dt->ptr_cache[slot].addrspace == addrspace)
    return dt->ptr_cache[slot].ptr;
  DTypeSpec s = {dt->priority, dt->bitsize, dt->count, dt->fmt, dt->name, NULL, true, dt, addrspace, 1, size};
  DType *ret = intern_dtype(&s);
  if (ret) dt->ptr_cache[slot].size = size, dt->ptr_cache[slot].addrspace = addrspace, dt->ptr_cache[slot].ptr = ret;
  return ret;
}

/* ---------------------------------------------------------------- DType Python type */

static AddrSpaceId addrspace_from(PyObject *o) {
  for (int i = ADDRSPACE_GLOBAL; i <= ADDRSPACE_REG; i++)
    if (o == addrspace_members[i]) return (AddrSpaceId)i;
  PyErr_Format(PyExc_TypeError, "addrspace must be an AddrSpace member, not %.100s", Py_TYPE(o)->tp_name);
  return 0;
}

/* fmt argument: None or a one-character ASCII str */
static int parse_fmt(PyObject *o, char *fmt) {
  if (o == Py_None) { *fmt = 0; return 0; }
  if (!PyUnicode_Check(o)) {
    PyErr_Format(PyExc_TypeError, "fmt must be a str or None, not %.100s", Py_TYPE(o)->tp_name);
    return -1;
  }
  if (PyUnicode_GET_LENGTH(o) != 1 || PyUnicode_READ_CHAR(o, 0) >= 128 || PyUnicode_READ_CHAR(o, 0) == 0) {
    PyErr_Format(PyExc_ValueError, "fmt must be one struct format character, not %R", o);
    return -1;
  }
  *fmt = (char)PyUnicode_READ_CHAR(o, 0);
  return 0;
}

static int parse_scalar(PyObject *o, DType **out) {
  if (o == Py_None) { *out = NULL; return 0; }
  return (*out = check_dtype(o, "_scalar")) ? 0 : -1;
}

static PyObject *DType_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"priority", "bitsize", "name", "fmt", "count", "_scalar", NULL};
  UNUSED(type);
  DTypeSpec s = {0};
  PyObject *fmt, *scalar;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "iiUOiO:DType", kwlist, &s.priority, &s.bitsize, &s.name, &fmt,
                                   &s.count, &scalar))
    return NULL;
  if (parse_fmt(fmt, &s.fmt) < 0 || parse_scalar(scalar, &s.scalar) < 0) return NULL;
  return Py_XNewRef((PyObject *)intern_dtype(&s));
}

static PyObject *PtrDType_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"priority", "bitsize", "name", "fmt", "count", "_scalar", "_base", "addrspace", "v",
                           "size", NULL};
  UNUSED(type);
  DTypeSpec s = {.is_ptr = true, .size = -1};
  PyObject *fmt, *scalar, *base, *addrspace;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "iiUOiOOOi|n:PtrDType", kwlist, &s.priority, &s.bitsize, &s.name,
                                   &fmt, &s.count, &scalar, &base, &addrspace, &s.v, &s.size))
    return NULL;
  if (parse_fmt(fmt, &s.fmt) < 0 || parse_scalar(scalar, &s.scalar) < 0) return NULL;
  if (!(s.base = check_dtype(base, "_base")) || !(s.addrspace = addrspace_from(addrspace))) return NULL;
  return Py_XNewRef((PyObject *)intern_dtype(&s));
}

static PyObject *DType_static_new(PyObject *unused, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"priority", "bitsize", "name", "fmt", NULL};
  UNUSED(unused);
  DTypeSpec s = {.count = 1};
  PyObject *fmt;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "iiUO:new", kwlist, &s.priority, &s.bitsize, &s.name, &fmt))
    return NULL;
  if (parse_fmt(fmt, &s.fmt) < 0) return NULL;
  return Py_XNewRef((PyObject *)intern_dtype(&s));
}

static void DType_dealloc(DType *self) {
  Py_XDECREF(self->name);
  Py_XDECREF(self->shape);
  Py_XDECREF(self->scalar_);
  if (self->is_ptr) Py_XDECREF(self->base);
  Py_XDECREF(self->vec_cache);
  Py_XDECREF(self->repr_cache);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *scalar_repr(DType *dt) {
  const char *short_name = short_name_of(dtype_scalar(dt)->name);
  if (!short_name) return NULL;
  if (dt->count != 1) return PyUnicode_FromFormat("dtypes.%s.vec(%d)", short_name, dt->count);
  return PyUnicode_FromFormat("dtypes.%s", short_name);
}

static PyObject *ptr_repr(DType *dt) {
  PyObject *base = PyObject_Repr((PyObject *)dt->base);
  if (!base) return NULL;
  PyObject *ret;
  if (dt->addrspace == ADDRSPACE_GLOBAL) ret = PyUnicode_FromFormat("%U.ptr(%zd)", base, dt->size);
  else ret = PyUnicode_FromFormat("%U.ptr(%zd, AddrSpace.%s)", base, dt->size, addrspace_names[dt->addrspace]);
  Py_DECREF(base);
  if (ret && dt->v != 1) Py_SETREF(ret, PyUnicode_FromFormat("%U.vec(%d)", ret, dt->v));
  return ret;
}

/* "dtypes.imagef((1, 2, 4))", then ".vec(v)" */
static PyObject *image_repr(DType *dt) {
  PyObject *ret = PyUnicode_FromFormat("dtypes.%U(%R)", dt->name, dt->shape);
  if (ret && dt->v != 1) Py_SETREF(ret, PyUnicode_FromFormat("%U.vec(%d)", ret, dt->v));
  return ret;
}

static PyObject *DType_repr(DType *self) {
  if (!self->repr_cache) self->repr_cache = dtype_is_image(self) ? image_repr(self) : self->is_ptr ? ptr_repr(self) : scalar_repr(self);
  return Py_XNewRef(self->repr_cache);
}

/* Python's default hash for objects: identity, as the interned dtypes compare by identity */
static Py_hash_t identity_hash(PyObject *o) {
  size_t y = (size_t)o;
  y = (y >> 4) | (y << (8 * sizeof(void *) - 4));
  Py_hash_t h = (Py_hash_t)y;
  return h == -1 ? -2 : h;
}

/* tinygrad's __lt__: (priority, bitsize, name, fmt, count) tuple order. 1/0, -1 on error. */
static int dtype_lt(DType *a, DType *b) {
  if (a->priority != b->priority) return a->priority < b->priority;
  if (a->bitsize != b->bitsize) return a->bitsize < b->bitsize;
  int c = PyUnicode_Compare(a->name, b->name);
  if (c == -1 && PyErr_Occurred()) return -1;
  if (c != 0) return c < 0;
  if (a->fmt != b->fmt) {
    if (!a->fmt || !b->fmt) {  /* None < str, as a tuple comparison would */
      PyErr_Format(PyExc_TypeError, "'<' not supported between instances of '%s' and '%s'",
                   a->fmt ? "str" : "NoneType", b->fmt ? "str" : "NoneType");
      return -1;
    }
    return (unsigned char)a->fmt < (unsigned char)b->fmt;
  }
  return a->count < b->count;
}

static PyObject *DType_richcompare(PyObject *self, PyObject *other, int op) {
  if (!DType_Check(other) || (op != Py_LT && op != Py_GT)) Py_RETURN_NOTIMPLEMENTED;  /* ==: identity */
  int r = op == Py_LT ? dtype_lt((DType *)self, (DType *)other) : dtype_lt((DType *)other, (DType *)self);
  if (r < 0) return NULL;
  return PyBool_FromLong(r);
}

static PyObject *DType_vec(DType *self, PyObject *arg) {
  if (!PyLong_Check(arg))
    return PyErr_Format(PyExc_TypeError, "vec size must be an int, not %.100s", Py_TYPE(arg)->tp_name);
  long sz = PyLong_AsLong(arg);
  if (sz == -1 && PyErr_Occurred()) return NULL;
  if (sz > INT_MAX || sz < INT_MIN) return PyErr_Format(PyExc_OverflowError, "vec size %ld is too large", sz);
  return Py_XNewRef((PyObject *)dtype_vec(self, (int)sz));
}

static PyObject *DType_ptr(DType *self, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"size", "addrspace", NULL};
  Py_ssize_t size = -1;
  PyObject *addrspace = addrspace_members[ADDRSPACE_GLOBAL];
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|nO:ptr", kwlist, &size, &addrspace)) return NULL;
  if (self->is_ptr && !dtype_is_image(self)) { PyErr_SetString(PyExc_RuntimeError, "can't make a pointer from a pointer"); return NULL; }
  AddrSpaceId as = addrspace_from(addrspace);
  if (!as) return NULL;
  return Py_XNewRef((PyObject *)dtype_ptr(self, size, as));
}

static PyObject *DType_scalar(DType *self, PyObject *unused) {
  UNUSED(unused);
  return Py_NewRef((PyObject *)dtype_scalar(self));
}

static PyObject *DType_nbytes(DType *self, PyObject *unused) {
  UNUSED(unused);
  if (!self->is_ptr) { PyErr_SetString(PyExc_RuntimeError, "only ptr types have nbytes"); return NULL; }
  if (self->size == -1) {
    PyErr_SetString(PyExc_RuntimeError, "can't get nbytes of a pointer with unlimited size");
    return NULL;
  }
  PyObject *size = PyLong_FromSsize_t(self->size), *itemsize = PyLong_FromLong(dtype_itemsize(self)), *ret = NULL;
  if (size && itemsize) ret = PyNumber_Multiply(size, itemsize);
  Py_XDECREF(size); Py_XDECREF(itemsize);
  return ret;
}

/* pickles as the constructor call, which the intern table answers with the same object */
static PyObject *DType_reduce(DType *self, PyObject *unused) {
  UNUSED(unused);
  PyObject *fmt = fmt_object(self->fmt), *ret;
  if (!fmt) return NULL;
  if (dtype_is_image(self))
    ret = Py_BuildValue("(O(iiOOiOOOinOn))", (PyObject *)&ImageDType_Type, self->priority, self->bitsize, self->name, fmt,
                        self->count, or_none(self->scalar_), (PyObject *)self->base, addrspace_members[self->addrspace],
                        self->v, self->size, self->shape, self->pitch);
  else if (self->is_ptr)
    ret = Py_BuildValue("(O(iiOOiOOOin))", (PyObject *)&PtrDType_Type, self->priority, self->bitsize, self->name, fmt,
                        self->count, or_none(self->scalar_), (PyObject *)self->base, addrspace_members[self->addrspace],
                        self->v, self->size);
  else
    ret = Py_BuildValue("(O(iiOOiO))", (PyObject *)&DType_Type, self->priority, self->bitsize, self->name, fmt,
                        self->count, or_none(self->scalar_));
  Py_DECREF(fmt);
  return ret;
}

static PyObject *get_priority(DType *self, void *c) { UNUSED(c); return PyLong_FromLong(self->priority); }
static PyObject *get_bitsize(DType *self, void *c) { UNUSED(c); return PyLong_FromLong(self->bitsize); }
static PyObject *get_count(DType *self, void *c) { UNUSED(c); return PyLong_FromLong(self->count); }
static PyObject *get_name(DType *self, void *c) { UNUSED(c); return Py_NewRef(self->name); }
static PyObject *get_fmt(DType *self, void *c) { UNUSED(c); return fmt_object(self->fmt); }
static PyObject *get_scalar(DType *self, void *c) { UNUSED(c); return Py_NewRef(or_none(self->scalar_)); }
static PyObject *get_itemsize(DType *self, void *c) { UNUSED(c); return PyLong_FromLong(dtype_itemsize(self)); }
static PyObject *get_base(DType *self, void *c) { UNUSED(c); return Py_NewRef((PyObject *)dtype_base(self)); }
static PyObject *get_vcount(DType *self, void *c) { UNUSED(c); return PyLong_FromLong(dtype_vcount(self)); }
static PyObject *get_min(DType *self, void *c) { UNUSED(c); return dtype_min(self); }
static PyObject *get_max(DType *self, void *c) { UNUSED(c); return dtype_max(self); }
static PyObject *get_ptr_base(DType *self, void *c) { UNUSED(c); return Py_NewRef((PyObject *)self->base); }
static PyObject *get_addrspace(DType *self, void *c) { UNUSED(c); return Py_NewRef(addrspace_members[self->addrspace]); }
static PyObject *get_v(DType *self, void *c) { UNUSED(c); return PyLong_FromLong(self->v); }
static PyObject *get_size(DType *self, void *c) { UNUSED(c); return PyLong_FromSsize_t(self->size); }

#define GETTER(name, fn) {name, (getter)fn, NULL, NULL, NULL}
static PyGetSetDef DType_getset[] = {
  GETTER("priority", get_priority), GETTER("bitsize", get_bitsize), GETTER("name", get_name),
  GETTER("fmt", get_fmt), GETTER("count", get_count), GETTER("_scalar", get_scalar),
  GETTER("itemsize", get_itemsize), GETTER("base", get_base), GETTER("vcount", get_vcount),
  GETTER("min", get_min), GETTER("max", get_max), {NULL}
};
static PyGetSetDef PtrDType_getset[] = {
  GETTER("_base", get_ptr_base), GETTER("addrspace", get_addrspace), GETTER("v", get_v), GETTER("size", get_size),
  {NULL}
};

static PyMethodDef DType_methods[] = {
  {"vec", (PyCFunction)DType_vec, METH_O, "vec(sz): the vector of sz of this dtype (a pointer: sz pointers)"},
  {"ptr", (PyCFunction)(void (*)(void))DType_ptr, METH_VARARGS | METH_KEYWORDS,
   "ptr(size=-1, addrspace=AddrSpace.GLOBAL): a pointer to this dtype"},
  {"scalar", (PyCFunction)DType_scalar, METH_NOARGS, "the element dtype of a vector, else self"},
  {"nbytes", (PyCFunction)DType_nbytes, METH_NOARGS, "bytes a sized pointer points to"},
  {"new", (PyCFunction)(void (*)(void))DType_static_new, METH_VARARGS | METH_KEYWORDS | METH_STATIC,
   "new(priority, bitsize, name, fmt): a scalar dtype"},
  {"__reduce__", (PyCFunction)DType_reduce, METH_NOARGS, NULL},
  {NULL}
};

PyTypeObject DType_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.DType",
  .tp_basicsize = sizeof(DType),
  .tp_dealloc = (destructor)DType_dealloc,
  .tp_repr = (reprfunc)DType_repr,
  .tp_hash = identity_hash,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "DType(priority, bitsize, name, fmt, count, _scalar): an interned data type, as tinygrad's",
  .tp_richcompare = DType_richcompare,
  .tp_methods = DType_methods,
  .tp_getset = DType_getset,
  .tp_new = DType_new,
};

PyTypeObject PtrDType_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.PtrDType",
  .tp_basicsize = sizeof(DType),
  .tp_dealloc = (destructor)DType_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "PtrDType(priority, bitsize, name, fmt, count, _scalar, _base, addrspace, v, size=-1): a pointer dtype",
  .tp_getset = PtrDType_getset,
  .tp_base = &DType_Type,
  .tp_new = PtrDType_new,
};

/* ---------------------------------------------------------------- ImageDType */

/* shape as an image's: a tuple of ints (tinygrad hashes it into the intern key and takes its prod); TypeError otherwise */
static int check_image_shape(PyObject *shape) {
  if (!PyTuple_Check(shape)) {
    PyErr_Format(PyExc_TypeError, "an image shape must be a tuple of ints, not %.100s", Py_TYPE(shape)->tp_name);
    return -1;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++)
    if (!PyLong_Check(PyTuple_GET_ITEM(shape, i))) {
      PyErr_Format(PyExc_TypeError, "an image shape must be a tuple of ints, item %zd is %.100s", i, Py_TYPE(PyTuple_GET_ITEM(shape, i))->tp_name);
      return -1;
    }
  return 0;
}

static PyObject *ImageDType_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"priority", "bitsize", "name", "fmt", "count", "_scalar", "_base", "addrspace", "v",
                           "size", "shape", "_pitch", NULL};
  UNUSED(type);
  PyObject *empty = PyTuple_New(0);
  if (!empty) return NULL;
  DTypeSpec s = {.is_ptr = true, .size = -1, .shape = empty, .pitch = -1};
  PyObject *fmt, *scalar, *base, *addrspace, *ret = NULL;
  if (PyArg_ParseTupleAndKeywords(args, kwds, "iiUOiOOOi|nOn:ImageDType", kwlist, &s.priority, &s.bitsize, &s.name,
                                  &fmt, &s.count, &scalar, &base, &addrspace, &s.v, &s.size, &s.shape, &s.pitch) &&
      parse_fmt(fmt, &s.fmt) == 0 && parse_scalar(scalar, &s.scalar) == 0 && check_image_shape(s.shape) == 0 &&
      (s.base = check_dtype(base, "_base")) && (s.addrspace = addrspace_from(addrspace)))
    ret = Py_XNewRef((PyObject *)intern_dtype(&s));
  Py_DECREF(empty);
  return ret;
}

/* prod(shape) as a Py_ssize_t: OverflowError past it */
static int shape_prod(PyObject *shape, Py_ssize_t *out) {
  PyObject *acc = PyLong_FromLong(1);
  for (Py_ssize_t i = 0; acc && i < PyTuple_GET_SIZE(shape); i++) Py_SETREF(acc, PyNumber_Multiply(acc, PyTuple_GET_ITEM(shape, i)));
  *out = acc ? PyLong_AsSsize_t(acc) : -1;
  Py_XDECREF(acc);
  return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

DType *dtype_image(bool half, PyObject *shape, Py_ssize_t pitch) {
  Py_ssize_t size;
  if (check_image_shape(shape) < 0 || shape_prod(shape, &size) < 0) return NULL;
  PyObject *name = PyUnicode_FromString(half ? "imageh" : "imagef");
  if (!name) return NULL;
  DTypeSpec s = {100, half ? 16 : 32, 1, half ? 'e' : 'f', name, NULL, true, DTYPE(FLOAT32), ADDRSPACE_GLOBAL, 1, size, shape, pitch};
  DType *ret = intern_dtype(&s);
  Py_DECREF(name);
  return ret;
}

int dtype_image_dim(DType *dt, Py_ssize_t i, Py_ssize_t *out) {
  if (!dtype_is_image(dt)) { PyErr_Format(PyExc_TypeError, "%R is not an ImageDType", (PyObject *)dt); return -1; }
  if (i < 0 || i >= PyTuple_GET_SIZE(dt->shape)) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); return -1; }
  *out = PyLong_AsSsize_t(PyTuple_GET_ITEM(dt->shape, i));
  return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* Python's floor division and tinygrad's round_up / next_power2 on C integers */
static long long floordiv(long long a, long long b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
static long long round_up_ll(long long num, long long amt) { return floordiv(num + amt - 1, amt) * amt; }
static long long next_power2_ll(long long x) {
  if (x == 0) return 1;
  unsigned long long m = x - 1 < 0 ? (unsigned long long)-(x - 1) : (unsigned long long)(x - 1);
  int bits = 0;
  while (m) { bits++; m >>= 1; }
  return bits >= 62 ? LLONG_MAX : 1LL << bits;
}

/* ImageDType.pitch: the explicit one, else the row pitch in bytes the Qualcomm driver aligns an image of this shape to */
static PyObject *image_pitch(DType *dt) {
  if (dt->pitch != -1) return PyLong_FromSsize_t(dt->pitch);
  Py_ssize_t w, h;
  if (dtype_image_dim(dt, 1, &w) < 0 || dtype_image_dim(dt, 0, &h) < 0) return NULL;
  if (w > (1LL << 40) || w < -(1LL << 40)) return PyErr_Format(PyExc_OverflowError, "image width %zd is too large", w);
  int itemsize = dtype_itemsize(dt), itemsize_log = (int)log2((double)itemsize);
  if (itemsize_log < 1 || itemsize_log > 8) return PyErr_Format(PyExc_ValueError, "no image pitch for itemsize %d", itemsize);
  long long imgw = w, imgh = h, pitchalign = imgh > 1 ? 11 - (long long)log2((double)imgh) : 6;
  if (pitchalign < 6) pitchalign = 6;
  long long align_up = 1;
  if (pitchalign == 6) {
    align_up = (8 / itemsize_log + 1) - floordiv(imgh, 32);
    if (align_up < 1) align_up = 1;
  } else if (pitchalign - itemsize_log - 2 >= 0) {
    align_up = 1LL << (pitchalign - itemsize_log - 2);
  } else {
    return PyErr_Format(PyExc_ValueError, "no image pitch for itemsize %d", itemsize);
  }
  long long granularity = itemsize == 4 ? 128 : 256, np2 = next_power2_ll(imgw), ru = round_up_ll(imgw, granularity);
  long long pitch_add = ((np2 < ru ? np2 : ru) - align_up + 1 <= imgw && imgw > granularity / 2) ? 1LL << pitchalign : 0;
  return PyLong_FromLongLong(round_up_ll(imgw * 4 * itemsize, 1LL << pitchalign) + pitch_add);
}

static PyObject *get_shape(DType *self, void *c) { UNUSED(c); return Py_NewRef(self->shape); }
static PyObject *get_pitch_field(DType *self, void *c) { UNUSED(c); return PyLong_FromSsize_t(self->pitch); }
static PyObject *get_pitch(DType *self, void *c) { UNUSED(c); return image_pitch(self); }

static PyGetSetDef ImageDType_getset[] = {
  GETTER("shape", get_shape), GETTER("_pitch", get_pitch_field), GETTER("pitch", get_pitch), {NULL}
};

PyTypeObject ImageDType_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.ImageDType",
  .tp_basicsize = sizeof(DType),
  .tp_dealloc = (destructor)DType_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "ImageDType(priority, bitsize, name, fmt, count, _scalar, _base, addrspace, v, size=-1, shape=(), _pitch=-1): "
            "an OpenCL/QCOM image, a pointer to float4 texels",
  .tp_getset = ImageDType_getset,
  .tp_base = &PtrDType_Type,
  .tp_new = ImageDType_new,
};

/* dtypes.imagef(shp, pitch=-1) and dtypes.imageh(shp, pitch=-1) */
static PyObject *py_image(PyObject *args, PyObject *kwds, bool half) {
  static char *kwlist[] = {"shp", "pitch", NULL};
  PyObject *shape;
  Py_ssize_t pitch = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, half ? "O|n:imageh" : "O|n:imagef", kwlist, &shape, &pitch)) return NULL;
  return Py_XNewRef((PyObject *)dtype_image(half, shape, pitch));
}
static PyObject *py_imagef(PyObject *m, PyObject *args, PyObject *kwds) { UNUSED(m); return py_image(args, kwds, false); }
static PyObject *py_imageh(PyObject *m, PyObject *args, PyObject *kwds) { UNUSED(m); return py_image(args, kwds, true); }

/* ---------------------------------------------------------------- Invalid */

static PyObject *InvalidType_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  UNUSED(type);
  if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds))) {
    PyErr_SetString(PyExc_TypeError, "InvalidType() takes no arguments");
    return NULL;
  }
  return Py_NewRef(Invalid);
}

/* tinygrad hashes Invalid as id(self) */
static Py_hash_t InvalidType_hash(PyObject *self) {
  PyObject *id = PyLong_FromVoidPtr(self);
  if (!id) return -1;
  Py_hash_t h = PyObject_Hash(id);
  Py_DECREF(id);
  return h;
}

static PyObject *InvalidType_repr(PyObject *self) { UNUSED(self); return PyUnicode_FromString("Invalid"); }

static PyObject *InvalidType_richcompare(PyObject *self, PyObject *other, int op) {
  switch (op) {
    case Py_EQ: return PyBool_FromLong(self == other);
    case Py_NE: return PyBool_FromLong(self != other);
    case Py_LT: case Py_GT: return PyBool_FromLong(self != other);  /* tinygrad: `self is not other` */
    default: Py_RETURN_NOTIMPLEMENTED;
  }
}

static PyObject *InvalidType_reduce(PyObject *self, PyObject *unused) {
  UNUSED(unused);
  return Py_BuildValue("(O())", (PyObject *)Py_TYPE(self));
}

static PyMethodDef InvalidType_methods[] = {{"__reduce__", InvalidType_reduce, METH_NOARGS, NULL}, {NULL}};

static PyTypeObject InvalidType_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.InvalidType",
  .tp_basicsize = sizeof(PyObject),
  .tp_repr = InvalidType_repr,
  .tp_hash = InvalidType_hash,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "the type of Invalid, a singleton marking an invalid index",
  .tp_richcompare = InvalidType_richcompare,
  .tp_methods = InvalidType_methods,
  .tp_new = InvalidType_new,
};

/* ---------------------------------------------------------------- values */

PyObject *dtype_min(DType *dt) { return Py_NewRef(min_values[dt->id]); }
PyObject *dtype_max(DType *dt) { return Py_NewRef(max_values[dt->id]); }

static PyObject *tuple_as_const(PyObject *val, DType *dt) {
  Py_ssize_t n = PyTuple_GET_SIZE(val);
  if (n != dt->count) return PyErr_Format(PyExc_ValueError, "mismatch %R %R", val, (PyObject *)dt);
  if (Py_EnterRecursiveCall(" in as_const")) return NULL;
  PyObject *ret = PyTuple_New(n);
  for (Py_ssize_t i = 0; ret && i < n; i++) {
    PyObject *x = dtype_as_const(PyTuple_GET_ITEM(val, i), dt);
    if (!x) Py_CLEAR(ret);
    else PyTuple_SET_ITEM(ret, i, x);
  }
  Py_LeaveRecursiveCall();
  return ret;
}

PyObject *dtype_as_const(PyObject *val, DType *dt) {
  if (PyTuple_Check(val)) return tuple_as_const(val, dt);
  if (val == Invalid) return Py_NewRef(val);
  if (PyFloat_Check(val) && isnan(PyFloat_AS_DOUBLE(val))) val = canonical_nan;
  if (dtype_is_int(dt)) return PyNumber_Long(val);
  if (dtype_is_float(dt)) return PyNumber_Float(val);
  int truth = PyObject_IsTrue(val);
  return truth < 0 ? NULL : PyBool_FromLong(truth);
}

#if PY_VERSION_HEX >= 0x030B0000
#define PACK2(x, p) PyFloat_Pack2((x), (char *)(p), 1)
#define UNPACK2(p) PyFloat_Unpack2((const char *)(p), 1)
#else
#define PACK2(x, p) _PyFloat_Pack2((x), (p), 1)
#define UNPACK2(p) _PyFloat_Unpack2((p), 1)
#endif

/* round to half precision (round-half-even), overflowing to a signed inf */
static PyObject *fp16_round(double x) {
  unsigned char buf[2];
  if (PACK2(x, buf) < 0) {
    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
    PyErr_Clear();
    return PyFloat_FromDouble(copysign(INFINITY, x));
  }
  double r = UNPACK2(buf);
  return (r == -1.0 && PyErr_Occurred()) ? NULL : PyFloat_FromDouble(r);
}

static double half_bits_to_double(uint16_t bits) {
  unsigned char buf[2] = {(unsigned char)(bits & 0xFF), (unsigned char)(bits >> 8)};
  return UNPACK2(buf);
}

/* bfloat16 rounding of a finite double, through float32 as tinygrad's struct round trip */
static double bf16_round(double x) {
  float f = (float)x;
  uint32_t u;
  memcpy(&u, &f, 4);
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  memcpy(&f, &u, 4);
  return f;
}

typedef struct {
  int exp_bias, sig_bits;
  uint64_t mantissa_mask, mindenorm_o2, overflow_threshold, maxnorm, minnorm;
} Fp8Config;
static const Fp8Config fp8e4m3_config = {7, 4, 0x7, 0x3F50000000000000ull, 0x407D000000000000ull, 0x7E,
                                         0x3F90000000000000ull};
static const Fp8Config fp8e5m2_config = {15, 3, 0x3, 0x3EE0000000000000ull, 0x40EE000000000000ull - 1, 0x7B,
                                         0x3F10000000000000ull};

/* double -> fp8 bits, rounding to nearest even, saturating finite values (the CUDA cuda_fp8.hpp scheme) */
static int fp8_from_double(double x, bool e4m3) {
  if (e4m3 && !isfinite(x)) return signbit(x) ? 0xff : 0x7f;  /* e4m3 has no inf: NaN */
  if (!e4m3 && isinf(x)) return signbit(x) ? 0xfc : 0x7c;
  const Fp8Config *c = e4m3 ? &fp8e4m3_config : &fp8e5m2_config;
  uint64_t xbits;
  memcpy(&xbits, &x, 8);
  const uint64_t half_ulp = 1ull << (53 - c->sig_bits - 1);
  uint64_t sign = ((xbits >> 63) & 1) << 7, absx = xbits & 0x7FFFFFFFFFFFFFFFull;
  int64_t exp = (int64_t)((xbits >> 52) & 0x7FF) - 1023 + c->exp_bias;
  uint64_t mantissa = (xbits >> (53 - c->sig_bits)) & c->mantissa_mask, res;
  if (absx <= c->mindenorm_o2) {
    res = 0;
  } else if (absx > 0x7FF0000000000000ull) {
    res = e4m3 ? 0x7F : (0x7E | mantissa);
  } else if (absx > c->overflow_threshold) {
    res = c->maxnorm;
  } else if (absx >= c->minnorm) {  /* normal: exp >= 1 here */
    res = ((uint64_t)exp << (c->sig_bits - 1)) | mantissa;
    uint64_t round_bits = xbits & ((half_ulp << 1) - 1);
    if (round_bits > half_ulp || (round_bits == half_ulp && (mantissa & 1))) res++;
  } else {  /* denormal: 1 <= shift <= 4 here */
    int shift = (int)(1 - exp);
    mantissa |= 1ull << (c->sig_bits - 1);
    res = mantissa >> shift;
    uint64_t round_bits = (xbits | (1ull << 52)) & ((half_ulp << (shift + 1)) - 1);
    if (round_bits > (half_ulp << shift) || (round_bits == (half_ulp << shift) && (res & 1))) res++;
  }
  return (int)(res | sign);
}

/* fp8 bits -> double, by widening to half precision */
static double fp8_to_double(unsigned x, bool e4m3) {
  uint32_t ur = x << 8;
  if (!e4m3) return half_bits_to_double((ur & 0x7FFF) > 0x7C00 ? 0x7FFF : (uint16_t)ur);
  uint32_t sign = ur & 0x8000, exponent = ((ur & 0x7800) >> 1) + 0x2000, mantissa = (ur & 0x0700) >> 1;
  if ((x & 0x7F) == 0x7F) return half_bits_to_double(0x7FFF);
  if (exponent == 0x2000) {  /* fp8 denormal: normalise into half's range */
    if (mantissa) {
      mantissa <<= 1;
      while (!(mantissa & 0x0400)) { mantissa <<= 1; exponent -= 0x0400; }
      mantissa &= 0x03FF;
    } else {
      exponent = 0;
    }
  }
  return half_bits_to_double((uint16_t)(sign | exponent | mantissa));
}

/* C integer conversion of a Python int (ctypes' c_intN(x).value): wraps around */
static PyObject *int_wrap(DTypeId id, PyObject *val) {
  if (PyFloat_Check(val)) return PyErr_Format(PyExc_TypeError, "int expected instead of float");
  unsigned long long u = PyLong_AsUnsignedLongLongMask(val);
  if (u == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
  switch (id) {
    case DT_INT8: return PyLong_FromLong((int8_t)u);
    case DT_UINT8: return PyLong_FromLong((uint8_t)u);
    case DT_INT16: return PyLong_FromLong((int16_t)u);
    case DT_UINT16: return PyLong_FromLong((uint16_t)u);
    case DT_INT32: return PyLong_FromLong((int32_t)u);
    case DT_UINT32: return PyLong_FromUnsignedLong((uint32_t)u);
    case DT_INT64: return PyLong_FromLongLong((int64_t)u);
    default: return PyLong_FromUnsignedLongLong(u);
  }
}

static PyObject *truncate_float(DTypeId id, PyObject *val) {
  PyObject *f = PyNumber_Float(val);  /* tinygrad converts with float() first for fp16/bf16 */
  if (!f) return NULL;
  double x = PyFloat_AS_DOUBLE(f);
  Py_DECREF(f);
  switch (id) {
    case DT_FLOAT16: return fp16_round(x);
    case DT_BFLOAT16: return PyFloat_FromDouble(isfinite(x) ? bf16_round(x) : x);
    case DT_FLOAT32: return PyFloat_FromDouble((float)x);
    default: return PyFloat_FromDouble(x);
  }
}

static PyObject *truncate_fp8(DTypeId id, PyObject *val) {
  double x = PyFloat_AsDouble(val);
  if (x == -1.0 && PyErr_Occurred()) return NULL;
  bool e4m3 = id == DT_FP8E4M3;
  double r = fp8_to_double((unsigned)fp8_from_double(x, e4m3), e4m3);
  return (r == -1.0 && PyErr_Occurred()) ? NULL : PyFloat_FromDouble(r);
}

PyObject *dtype_truncate(DType *dt, PyObject *val) {
  int id = exact_id(dt);
  switch (id) {
    case DT_BOOL: {
      int truth = PyObject_IsTrue(val);
      return truth < 0 ? NULL : PyBool_FromLong(truth);
    }
    case DT_FLOAT16: case DT_BFLOAT16: case DT_FLOAT32: case DT_FLOAT64: return truncate_float((DTypeId)id, val);
    case DT_FP8E4M3: case DT_FP8E5M2: return truncate_fp8((DTypeId)id, val);
    case DT_INT8: case DT_UINT8: case DT_INT16: case DT_UINT16: case DT_INT32: case DT_UINT32: case DT_INT64:
    case DT_UINT64: return int_wrap((DTypeId)id, val);
    default: return Py_NewRef(val);  /* index, void, vectors, pointers: no truncation */
  }
}

/* ---------------------------------------------------------------- promotion and inference */

static DType *class_dtype_attr(PyObject *attr, DTypeId fallback) {
  PyObject *o = PyObject_GetAttr(dtypes_class, attr);
  if (!o) { PyErr_Clear(); return scalar_dtypes[fallback]; }
  DType *ret = DType_Check(o) ? (DType *)o : scalar_dtypes[fallback];
  Py_DECREF(o);  /* dtypes are immortal in dcache: borrowed is safe */
  return ret;
}
DType *dtype_default_float(void) { return class_dtype_attr(str_default_float, DT_FLOAT32); }
DType *dtype_default_int(void) { return class_dtype_attr(str_default_int, DT_INT32); }

static DType *from_py_rec(PyObject *x, DType *dflt_float, DType *dflt_int) {
  if (PyFloat_CheckExact(x)) return dflt_float;
  if (PyLong_CheckExact(x)) return dflt_int;
  if (PyBool_Check(x)) return DTYPE(BOOL);
  if (!PyList_CheckExact(x) && !PyTuple_CheckExact(x)) {
    PyErr_Format(PyExc_RuntimeError, "Could not infer dtype of %R with type %R", x, (PyObject *)Py_TYPE(x));
    return NULL;
  }
  PyObject *seq = PySequence_Fast(x, "");
  if (!seq) return NULL;
  DType *best = PySequence_Fast_GET_SIZE(seq) ? NULL : dflt_float;
  if (Py_EnterRecursiveCall(" in from_py")) { Py_DECREF(seq); return NULL; }
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    DType *d = from_py_rec(PySequence_Fast_GET_ITEM(seq, i), dflt_float, dflt_int);
    int gt = (d && best) ? dtype_lt(best, d) : 1;  /* max(): keep the first of equals */
    if (!d || gt < 0) { best = NULL; break; }
    if (gt) best = d;
  }
  Py_LeaveRecursiveCall();
  Py_DECREF(seq);
  return best;
}

DType *dtype_from_py(PyObject *x) { return from_py_rec(x, dtype_default_float(), dtype_default_int()); }

DType *dtype_least_upper(DType *const *ds, Py_ssize_t n) {
  if (n == 0) { PyErr_SetString(PyExc_TypeError, "least_upper_dtype needs at least one dtype"); return NULL; }
  for (Py_ssize_t i = 0; i < n; i++) if (dtype_is_image(ds[i])) return ds[i];   /* an image wins, as in tinygrad */
  uint32_t common = LATTICE_SET;
  for (Py_ssize_t i = 0; i < n; i++) {
    DType *s = dtype_scalar(ds[i]);
    int id = exact_id(s);
    if (id < 0 || !((LATTICE_SET >> id) & 1)) { PyErr_SetObject(PyExc_KeyError, (PyObject *)s); return NULL; }
    common &= promo_ancestors[id];
  }
  /* lattice ids ascend with priority, so the smallest dtype of the set is its lowest bit (float64 is in every set) */
  for (int id = 0; id < DT_COUNT; id++)
    if ((common >> id) & 1) return scalar_dtypes[id];
  PyErr_SetString(PyExc_RuntimeError, "promotion lattice has no common parent");
  return NULL;
}

static DType *least_upper2(DType *a, DType *b) {
  DType *ds[2] = {a, b};
  return dtype_least_upper(ds, 2);
}

DType *dtype_least_upper_float(DType *dt) {
  return dtype_is_float(dt) ? dt : least_upper2(dt, dtype_default_float());
}

bool dtype_can_lossless_cast(DType *dt0, DType *dt1) {
  if (dt0 == dt1 || dt0 == DTYPE(BOOL)) return true;
  int id0 = exact_id(dt0), id1 = exact_id(dt1);
  return id0 >= 0 && id1 >= 0 && ((lossless_from[id1] >> id0) & 1);
}

DType *dtype_to_dtype(PyObject *x) {
  if (DType_Check(x)) return (DType *)x;
  if (!PyUnicode_Check(x)) {
    PyErr_Format(PyExc_TypeError, "to_dtype needs a DType or str, not %.100s", Py_TYPE(x)->tp_name);
    return NULL;
  }
  PyObject *lower = PyObject_CallMethod(x, "lower", NULL);
  if (!lower) return NULL;
  PyObject *o = PyObject_GetAttr(dtypes_class, lower);
  Py_DECREF(lower);
  if (!o) return NULL;
  bool is_dtype = DType_Check(o);
  Py_DECREF(o);  /* dtypes are immortal in dcache: borrowed is safe */
  if (!is_dtype) { PyErr_Format(PyExc_ValueError, "%R does not name a dtype", x); return NULL; }
  return (DType *)o;
}

DType *dtype_sum_acc(DType *dt) {
  if (dtype_is_unsigned(dt)) return least_upper2(dt, DTYPE(UINT32));
  if (dtype_is_int(dt) || dt == DTYPE(BOOL)) return least_upper2(dt, DTYPE(INT32));
  const char *env = getenv("SUM_DTYPE");
  PyObject *name = PyUnicode_FromString(env ? env : "float32");
  if (!name) return NULL;
  DType *acc = dtype_to_dtype(name);
  Py_DECREF(name);
  return acc ? least_upper2(dt, acc) : NULL;
}

/* ---------------------------------------------------------------- Python functions */

static bool check_nargs(const char *fn, Py_ssize_t n, Py_ssize_t want) {
  if (n == want) return true;
  PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", fn, want, n);
  return false;
}

#define RETURN_DTYPE(expr) do { DType *r_ = (expr); return Py_XNewRef((PyObject *)r_); } while (0)

static PyObject *py_is_float(PyObject *m, PyObject *x) {
  UNUSED(m); DType *d = check_dtype(x, "dtype");
  return d ? PyBool_FromLong(dtype_is_float(d)) : NULL;
}
static PyObject *py_is_int(PyObject *m, PyObject *x) {
  UNUSED(m); DType *d = check_dtype(x, "dtype");
  return d ? PyBool_FromLong(dtype_is_int(d)) : NULL;
}
static PyObject *py_is_unsigned(PyObject *m, PyObject *x) {
  UNUSED(m); DType *d = check_dtype(x, "dtype");
  return d ? PyBool_FromLong(dtype_is_unsigned(d)) : NULL;
}
static PyObject *py_is_bool(PyObject *m, PyObject *x) {
  UNUSED(m); DType *d = check_dtype(x, "dtype");
  return d ? PyBool_FromLong(dtype_is_bool(d)) : NULL;
}
static PyObject *py_from_py(PyObject *m, PyObject *x) { UNUSED(m); RETURN_DTYPE(dtype_from_py(x)); }
static PyObject *py_min(PyObject *m, PyObject *x) {
  UNUSED(m); DType *d = check_dtype(x, "dtype");
  return d ? dtype_min(d) : NULL;
}
static PyObject *py_max(PyObject *m, PyObject *x) {
  UNUSED(m); DType *d = check_dtype(x, "dtype");
  return d ? dtype_max(d) : NULL;
}

static PyObject *py_as_const(PyObject *m, PyObject *const *args, Py_ssize_t n) {
  UNUSED(m);
  if (!check_nargs("as_const", n, 2)) return NULL;
  DType *d = check_dtype(args[1], "dtype");
  return d ? dtype_as_const(args[0], d) : NULL;
}

static PyObject *py_finfo(PyObject *m, PyObject *x) {
  UNUSED(m);
  DType *d = check_dtype(x, "dtype");
  if (!d) return NULL;
  if (!dtype_is_float(d)) return PyErr_Format(PyExc_ValueError, "%R is not a floating point type", x);
  static const int exp_mant[DT_COUNT][2] = {[DT_FLOAT16] = {5, 10}, [DT_BFLOAT16] = {8, 7}, [DT_FLOAT32] = {8, 23},
    [DT_FLOAT64] = {11, 52}, [DT_FP8E5M2] = {5, 2}, [DT_FP8E4M3] = {4, 3}};
  int id = exact_id(d);
  if (id < 0) { PyErr_SetObject(PyExc_KeyError, x); return NULL; }  /* vectors are not in tinygrad's table */
  return Py_BuildValue("(ii)", exp_mant[id][0], exp_mant[id][1]);
}

static PyObject *py_fields(PyObject *m, PyObject *unused) { UNUSED(m); UNUSED(unused); return Py_NewRef(dtypes_dict); }

static PyObject *py_least_upper_dtype(PyObject *m, PyObject *const *args, Py_ssize_t n) {
  UNUSED(m);
  DType *small[8] = {NULL}, **ds = n <= 8 ? small : PyMem_Malloc(sizeof(DType *) * (size_t)n);
  if (!ds) return PyErr_NoMemory();
  DType *ret = NULL;
  Py_ssize_t i = 0;
  for (; i < n && (ds[i] = check_dtype(args[i], "least_upper_dtype argument")); i++) {}
  if (i == n) ret = dtype_least_upper(ds, n);
  if (ds != small) PyMem_Free(ds);
  return Py_XNewRef((PyObject *)ret);
}

static PyObject *py_least_upper_float(PyObject *m, PyObject *x) {
  UNUSED(m); DType *d = check_dtype(x, "dtype");
  RETURN_DTYPE(d ? dtype_least_upper_float(d) : NULL);
}
static PyObject *py_to_dtype(PyObject *m, PyObject *x) { UNUSED(m); RETURN_DTYPE(dtype_to_dtype(x)); }
static PyObject *py_sum_acc_dtype(PyObject *m, PyObject *x) {
  UNUSED(m); DType *d = check_dtype(x, "dtype");
  RETURN_DTYPE(d ? dtype_sum_acc(d) : NULL);
}

static PyObject *py_can_lossless_cast(PyObject *m, PyObject *const *args, Py_ssize_t n) {
  UNUSED(m);
  if (!check_nargs("can_lossless_cast", n, 2)) return NULL;
  DType *a = check_dtype(args[0], "dt0"), *b = a ? check_dtype(args[1], "dt1") : NULL;
  return b ? PyBool_FromLong(dtype_can_lossless_cast(a, b)) : NULL;
}

static PyObject *py_truncate_value(PyObject *m, PyObject *const *args, Py_ssize_t n) {
  UNUSED(m);
  if (!check_nargs("truncate_value", n, 2)) return NULL;
  DType *d = check_dtype(args[0], "dtype");
  return d ? dtype_truncate(d, args[1]) : NULL;
}

static PyObject *py_float_to_fp16(PyObject *m, PyObject *x) { UNUSED(m); return truncate_float(DT_FLOAT16, x); }

static PyObject *py_float_to_bf16(PyObject *m, PyObject *x) {
  UNUSED(m);
  double d = PyFloat_AsDouble(x);
  if (d == -1.0 && PyErr_Occurred()) return NULL;
  return isfinite(d) ? PyFloat_FromDouble(bf16_round(d)) : Py_NewRef(x);
}

/* the fp8 dtype argument: e4m3 -> 1, e5m2 -> 0, else -1 with ValueError */
static int fp8_kind(PyObject *o) {
  DType *d = check_dtype(o, "dtype");
  if (!d) return -1;
  if (d == DTYPE(FP8E4M3) || d == DTYPE(FP8E5M2)) return d == DTYPE(FP8E4M3);
  PyErr_Format(PyExc_ValueError, "Only for fp8s, not %R", o);
  return -1;
}

static PyObject *py_float_to_fp8(PyObject *m, PyObject *const *args, Py_ssize_t n) {
  UNUSED(m);
  if (!check_nargs("float_to_fp8", n, 2)) return NULL;
  int e4m3 = fp8_kind(args[1]);
  if (e4m3 < 0) return NULL;
  double x = PyFloat_AsDouble(args[0]);
  if (x == -1.0 && PyErr_Occurred()) return NULL;
  return PyLong_FromLong(fp8_from_double(x, e4m3));
}

static PyObject *py_fp8_to_float(PyObject *m, PyObject *const *args, Py_ssize_t n) {
  UNUSED(m);
  if (!check_nargs("fp8_to_float", n, 2)) return NULL;
  int e4m3 = fp8_kind(args[1]);
  if (e4m3 < 0) return NULL;
  if (!PyLong_Check(args[0])) return PyErr_Format(PyExc_TypeError, "fp8 bits must be an int, not %.100s",
                                                  Py_TYPE(args[0])->tp_name);
  long x = PyLong_AsLong(args[0]);
  if (x == -1 && PyErr_Occurred()) return NULL;
  if (x < 0 || x > 0xFF) return PyErr_Format(PyExc_ValueError, "fp8 bits must be in 0..255, not %ld", x);
  double r = fp8_to_double((unsigned)x, e4m3);
  return (r == -1.0 && PyErr_Occurred()) ? NULL : PyFloat_FromDouble(r);
}

#define FASTCALL(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL
static PyMethodDef dtypes_methods[] = {
  {"is_float", py_is_float, METH_O, "is_float(dtype): a floating point dtype (or vector of one)"},
  {"is_int", py_is_int, METH_O, "is_int(dtype): an integer dtype or index (or vector of one)"},
  {"is_unsigned", py_is_unsigned, METH_O, "is_unsigned(dtype)"},
  {"is_bool", py_is_bool, METH_O, "is_bool(dtype)"},
  {"from_py", py_from_py, METH_O, "from_py(x): the dtype inferred for a Python value"},
  {"as_const", FASTCALL(py_as_const), "as_const(val, dtype): val as dtype's Python number type"},
  {"min", py_min, METH_O, "min(dtype): the smallest value"},
  {"max", py_max, METH_O, "max(dtype): the largest value"},
  {"finfo", py_finfo, METH_O, "finfo(dtype): (exponent bits, mantissa bits)"},
  {"fields", py_fields, METH_NOARGS, "fields(): name -> dtype (DTYPES_DICT)"},
  {"imagef", (PyCFunction)(void (*)(void))py_imagef, METH_VARARGS | METH_KEYWORDS, "imagef(shp, pitch=-1): a float32 image"},
  {"imageh", (PyCFunction)(void (*)(void))py_imageh, METH_VARARGS | METH_KEYWORDS, "imageh(shp, pitch=-1): a float16 image"},
  {NULL}
};

static PyMethodDef module_functions[] = {
  {"least_upper_dtype", FASTCALL(py_least_upper_dtype), "least_upper_dtype(*ds): the promoted dtype"},
  {"least_upper_float", py_least_upper_float, METH_O, "least_upper_float(dt)"},
  {"to_dtype", py_to_dtype, METH_O, "to_dtype(x): a DType, or the dtypes attribute a str names"},
  {"can_lossless_cast", FASTCALL(py_can_lossless_cast), "can_lossless_cast(dt0, dt1): dt1 keeps every dt0 value"},
  {"sum_acc_dtype", py_sum_acc_dtype, METH_O, "sum_acc_dtype(dt): the accumulator dtype of a sum"},
  {"truncate_value", FASTCALL(py_truncate_value), "truncate_value(dtype, x): tinygrad's truncate[dtype](x)"},
  {"float_to_fp16", py_float_to_fp16, METH_O, "float_to_fp16(x)"},
  {"float_to_bf16", py_float_to_bf16, METH_O, "float_to_bf16(x)"},
  {"float_to_fp8", FASTCALL(py_float_to_fp8), "float_to_fp8(x, dtype): fp8 bits as an int"},
  {"fp8_to_float", FASTCALL(py_fp8_to_float), "fp8_to_float(x, dtype): the value of fp8 bits"},
  {NULL}
};

/* ---------------------------------------------------------------- init */

static int make_addrspace(void) {
  static const char *const names[] = {"GLOBAL", "LOCAL", "REG", NULL};
  PyObject *cls = tinyc_make_enum("Enum", "AddrSpace", names);
  if (!cls) return -1;
  /* tinygrad's AddrSpace reprs as its str, "AddrSpace.LOCAL" */
  PyObject *str = getattr_literal(cls, "__str__");
  int rc = str ? PyObject_SetAttrString(cls, "__repr__", str) : -1;
  Py_XDECREF(str);
  for (int i = ADDRSPACE_GLOBAL; rc == 0 && i <= ADDRSPACE_REG; i++)
    if (!(addrspace_members[i] = PyObject_GetAttrString(cls, names[i - 1]))) rc = -1;  /* kept forever */
  Py_DECREF(cls);  /* members hold their class */
  return rc;
}

static int make_scalars(void) {
  for (int i = 0; i < DT_COUNT; i++) {
    PyObject *name = PyUnicode_FromString(scalar_info[i].name);
    if (!name) return -1;
    DTypeSpec s = {scalar_info[i].priority, scalar_info[i].bitsize, 1, scalar_info[i].fmt, name, NULL,
                   false, NULL, 0, 0, 0};
    scalar_dtypes[i] = intern_dtype(&s);
    Py_DECREF(name);
    if (!scalar_dtypes[i]) return -1;
    scalar_dtypes[i]->id = (DTypeId)i;
  }
  /* parents have higher ids, so one downward pass closes the lattice */
  for (int i = DT_COUNT - 1; i >= 0; i--) {
    if (!((LATTICE_SET >> i) & 1)) continue;
    promo_ancestors[i] = 1u << i;
    for (int p = 0; p < DT_COUNT; p++)
      if ((promo_parents[i] >> p) & 1) promo_ancestors[i] |= promo_ancestors[p];
  }
  return 0;
}

static PyObject *int_power_of_two(int bits) {
  PyObject *one = PyLong_FromLong(1), *shift = PyLong_FromLong(bits), *ret = NULL;
  if (one && shift) ret = PyNumber_Lshift(one, shift);
  Py_XDECREF(one); Py_XDECREF(shift);
  return ret;
}

/* dtypes.min/max depend only on the scalar id, so they are made once */
static int make_limits(void) {
  for (int i = 0; i <= DT_COUNT; i++) {
    uint32_t bit = i < DT_COUNT ? 1u << i : 0;
    if (bit & INDEX_LIKE_SET) {
      bool is_unsigned = bit & UINT_SET;
      PyObject *span = int_power_of_two(scalar_info[i].bitsize - (is_unsigned ? 0 : 1)), *one = PyLong_FromLong(1);
      if (span && one) {
        min_values[i] = is_unsigned ? PyLong_FromLong(0) : PyNumber_Negative(span);
        max_values[i] = PyNumber_Subtract(span, one);
      }
      Py_XDECREF(span); Py_XDECREF(one);
    } else if (bit & FLOAT_SET) {
      min_values[i] = PyFloat_FromDouble(-INFINITY);
      max_values[i] = PyFloat_FromDouble(INFINITY);
    } else {
      min_values[i] = Py_NewRef(Py_False);
      max_values[i] = Py_NewRef(Py_True);
    }
    if (!min_values[i] || !max_values[i]) return -1;
  }
  return 0;
}

static PyObject *dtype_tuple(const DTypeId *ids, int n) {
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) PyTuple_SET_ITEM(t, i, Py_NewRef((PyObject *)scalar_dtypes[ids[i]]));
  return t;
}

static int set_tuple(PyObject *ns, const char *name, const DTypeId *ids, int n) {
  PyObject *t = dtype_tuple(ids, n);
  int rc = t ? PyDict_SetItemString(ns, name, t) : -1;
  Py_XDECREF(t);
  return rc;
}

static int add_dtype_groups(PyObject *ns) {
  static const DTypeId fp8s[] = {DT_FP8E4M3, DT_FP8E5M2};
  static const DTypeId floats[] = {DT_FP8E4M3, DT_FP8E5M2, DT_FLOAT16, DT_BFLOAT16, DT_FLOAT32, DT_FLOAT64};
  static const DTypeId uints[] = {DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64};
  static const DTypeId sints[] = {DT_INT8, DT_INT16, DT_INT32, DT_INT64};
  static const DTypeId ints[] = {DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64, DT_INT8, DT_INT16, DT_INT32, DT_INT64};
  static const DTypeId index_like[] = {DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64, DT_INT8, DT_INT16, DT_INT32,
                                       DT_INT64, DT_INDEX};
  static const DTypeId all[] = {DT_FP8E4M3, DT_FP8E5M2, DT_FLOAT16, DT_BFLOAT16, DT_FLOAT32, DT_FLOAT64, DT_UINT8,
                                DT_UINT16, DT_UINT32, DT_UINT64, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_BOOL,
                                DT_INDEX};
#define GROUP(name) set_tuple(ns, #name, name, (int)(sizeof(name) / sizeof(name[0])))
  return (GROUP(fp8s) < 0 || GROUP(floats) < 0 || GROUP(uints) < 0 || GROUP(sints) < 0 || GROUP(ints) < 0 ||
          GROUP(index_like) < 0 || GROUP(all) < 0) ? -1 : 0;
#undef GROUP
}

/* the static methods, the dtypes (with aliases), defaults and groups; also fills DTYPES_DICT */
static int fill_dtypes_namespace(PyObject *ns) {
  for (PyMethodDef *def = dtypes_methods; def->ml_name; def++) {
    PyObject *fn = PyCFunction_New(def, NULL), *sm = fn ? PyStaticMethod_New(fn) : NULL;
    int rc = sm ? PyDict_SetItemString(ns, def->ml_name, sm) : -1;
    Py_XDECREF(fn); Py_XDECREF(sm);
    if (rc < 0) return -1;
  }
  for (size_t i = 0; i < sizeof(dtype_attrs) / sizeof(dtype_attrs[0]); i++) {
    PyObject *dt = (PyObject *)scalar_dtypes[dtype_attrs[i].id];
    if (PyDict_SetItemString(ns, dtype_attrs[i].attr, dt) < 0) return -1;
    if (dtype_attrs[i].id != DT_VOID && dtype_attrs[i].id != DT_INDEX &&
        PyDict_SetItemString(dtypes_dict, dtype_attrs[i].attr, dt) < 0) return -1;
  }
  if (PyDict_SetItem(ns, str_default_float, (PyObject *)DTYPE(FLOAT32)) < 0 ||
      PyDict_SetItem(ns, str_default_int, (PyObject *)DTYPE(INT32)) < 0)
    return -1;
  return add_dtype_groups(ns);
}

static int make_dtypes_class(void) {
  PyObject *ns = PyDict_New();
  if (!ns || !(dtypes_dict = PyDict_New()) || !(inverse_dict = PyDict_New())) { Py_XDECREF(ns); return -1; }
  PyObject *module_name = PyUnicode_FromString("tinyc");
  int rc = module_name ? PyDict_SetItemString(ns, "__module__", module_name) : -1;
  Py_XDECREF(module_name);
  if (rc == 0) rc = fill_dtypes_namespace(ns);
  if (rc == 0) {
    PyObject *doc = PyUnicode_FromString("tinygrad's dtypes namespace: the scalar dtypes and helpers on them");
    rc = doc ? PyDict_SetItemString(ns, "__doc__", doc) : -1;
    Py_XDECREF(doc);
  }
  if (rc == 0) dtypes_class = PyObject_CallFunction((PyObject *)&PyType_Type, "s()O", "dtypes", ns);
  Py_DECREF(ns);
  if (!dtypes_class) return -1;
  for (int i = 0; i < DT_COUNT; i++) {  /* INVERSE_DTYPES_DICT: C name -> short name */
    PyObject *short_name = PyUnicode_FromString(scalar_info[i].short_name);
    rc = short_name ? PyDict_SetItem(inverse_dict, scalar_dtypes[i]->name, short_name) : -1;
    Py_XDECREF(short_name);
    if (rc < 0) return -1;
  }
  return 0;
}

/* DEFAULT_FLOAT=half etc. picks dtypes.default_float at import, as tinygrad does */
static int apply_default_float_env(void) {
  const char *env = getenv("DEFAULT_FLOAT");
  if (!env || !*env) return 0;
  PyObject *name = PyUnicode_FromString(env);
  DType *dt = name ? dtype_to_dtype(name) : NULL;
  Py_XDECREF(name);
  if (!dt) return -1;
  if (!dtype_is_float(dt)) { PyErr_Format(PyExc_ValueError, "%s is not a float dtype", env); return -1; }
  return PyObject_SetAttr(dtypes_class, str_default_float, (PyObject *)dt);
}

static int init_once(void) {
  PyObject *math = PyImport_ImportModule("math");
  if (!math) return -1;
  canonical_nan = getattr_literal(math, "nan");
  Py_DECREF(math);
  if (!canonical_nan) return -1;
  if (!(str_default_float = PyUnicode_InternFromString("default_float")) ||
      !(str_default_int = PyUnicode_InternFromString("default_int")))
    return -1;
  if (make_addrspace() < 0) return -1;
  if (PyType_Ready(&DType_Type) < 0 || PyType_Ready(&PtrDType_Type) < 0 || PyType_Ready(&ImageDType_Type) < 0 ||
      PyType_Ready(&InvalidType_Type) < 0)
    return -1;
  if (!(Invalid = PyType_GenericAlloc(&InvalidType_Type, 0))) return -1;
  if (!(dcache = PyDict_New()) || make_scalars() < 0 || make_limits() < 0) return -1;
  if (make_dtypes_class() < 0) return -1;
  return apply_default_float_env();
}

/* tinygrad declares DType and PtrDType @dataclass(frozen=True, eq=False): dataclasses.fields and asdict see their fields */
static PyObject *default_ptr_size(void) { return PyLong_FromLong(-1); }
#define DTYPE_FIELDS DATACLASS_NAMED("priority", NULL), DATACLASS_NAMED("bitsize", NULL), DATACLASS_NAMED("name", NULL), \
                     DATACLASS_NAMED("fmt", NULL), DATACLASS_NAMED("count", NULL), DATACLASS_NAMED("_scalar", NULL)
static const DataclassField dtype_fields[] = {DTYPE_FIELDS, {NULL}};
static const DataclassField ptrdtype_fields[] = {DTYPE_FIELDS, DATACLASS_NAMED("_base", NULL), DATACLASS_NAMED("addrspace", NULL),
                                                 DATACLASS_NAMED("v", NULL), DATACLASS_NAMED("size", default_ptr_size), {NULL}};
#undef DTYPE_FIELDS
static const Dataclass dtype_dataclass = {dtype_fields, .frozen = true, .identity_eq = true};
static const Dataclass ptrdtype_dataclass = {ptrdtype_fields, .frozen = true, .identity_eq = true};

int tinyc_init_dtype(PyObject *m) {
  static bool ready = false;
  if (!ready) {
    if (init_once() < 0) return -1;
    if (dataclass_describe(&DType_Type, &dtype_dataclass) < 0 || dataclass_describe(&PtrDType_Type, &ptrdtype_dataclass) < 0) return -1;
    ready = true;
  }
  PyObject *addrspace_cls = getattr_literal(addrspace_members[ADDRSPACE_GLOBAL], "__class__");
  if (!addrspace_cls) return -1;
  int rc = tinyc_add(m, "AddrSpace", addrspace_cls);
  Py_DECREF(addrspace_cls);
  if (rc < 0 || tinyc_add(m, "DType", (PyObject *)&DType_Type) < 0 ||
      tinyc_add(m, "PtrDType", (PyObject *)&PtrDType_Type) < 0 ||
      tinyc_add(m, "ImageDType", (PyObject *)&ImageDType_Type) < 0 ||
      tinyc_add(m, "InvalidType", (PyObject *)&InvalidType_Type) < 0 || tinyc_add(m, "Invalid", Invalid) < 0 ||
      tinyc_add(m, "dtypes", dtypes_class) < 0 || tinyc_add(m, "DTYPES_DICT", dtypes_dict) < 0 ||
      tinyc_add(m, "INVERSE_DTYPES_DICT", inverse_dict) < 0)
    return -1;
  return PyModule_AddFunctions(m, module_functions);
}
