/* tinygrad/dtype.py in C: DType, PtrDType, the dtypes namespace, AddrSpace and Invalid.
 * Every DType is interned when made and lives until the interpreter ends, so C code holds
 * DType pointers borrowed, without reference counting. */
#ifndef TINYC_DTYPE_H
#define TINYC_DTYPE_H
#include "tinyc.h"

/* The scalar dtypes, in tinygrad's declaration order. */
#define SCALAR_DTYPES(X) \
  X(VOID, void) X(INDEX, index) X(BOOL, bool) X(INT8, int8) X(UINT8, uint8) X(INT16, int16) \
  X(UINT16, uint16) X(INT32, int32) X(UINT32, uint32) X(INT64, int64) X(UINT64, uint64) \
  X(FP8E4M3, fp8e4m3) X(FP8E5M2, fp8e5m2) X(FLOAT16, float16) X(BFLOAT16, bfloat16) \
  X(FLOAT32, float32) X(FLOAT64, float64)

typedef enum {
#define X(ID, name) DT_##ID,
  SCALAR_DTYPES(X)
#undef X
  DT_COUNT
} DTypeId;

typedef enum { ADDRSPACE_GLOBAL = 1, ADDRSPACE_LOCAL = 2, ADDRSPACE_REG = 3 } AddrSpaceId;

typedef struct DType {
  PyObject_HEAD
  int priority;
  int bitsize;
  int count;                 /* vector width (1 for scalars and pointers to scalars) */
  char fmt;                  /* struct format char, 0 when tinygrad's fmt is None */
  DTypeId id;                /* id of scalar() */
  PyObject *name;            /* str, e.g. "float", "float4" */
  struct DType *scalar_;     /* tinygrad's _scalar: NULL for a scalar */
  PyObject *vec_cache;       /* dict int -> DType, made on first vec() */
  PyObject *repr_cache;      /* repr(), made on first use: keys and printing ask for it per node */
  struct { Py_ssize_t size; AddrSpaceId addrspace; struct DType *ptr; } ptr_cache[4];   /* recent ptr() answers (borrowed):
                              * codegen asks for the same pointers over and over, and the interning key is a tuple */
  /* PtrDType only (is_ptr); a non-pointer dtype holds base = itself, GLOBAL, v 1, size -1 (never garbage): */
  bool is_ptr;
  struct DType *base;        /* the pointee dtype */
  AddrSpaceId addrspace;
  int v;                     /* pointer vector width */
  Py_ssize_t size;           /* -1 for unlimited */
  /* ImageDType only (a PtrDType whose type is ImageDType_Type); NULL / -1 on every other dtype: */
  PyObject *shape;           /* tuple of ints: the image's shape, (height, width, 4) */
  Py_ssize_t pitch;          /* tinygrad's _pitch: -1 for the computed one */
} DType;

/* Note on `id`: it is DT_COUNT when scalar() is not one of the standard scalar dtypes: for every
 * PtrDType (tinygrad's scalar() of a pointer is a pointer) and for hand-made DType(...)s. So never index
 * scalar_dtypes[] with it unchecked; dtype_is_float & co. handle it (false, like tinygrad). */

extern PyTypeObject DType_Type;
extern PyTypeObject PtrDType_Type;
extern PyTypeObject ImageDType_Type;
extern DType *scalar_dtypes[DT_COUNT];   /* borrowed, immortal */
extern PyObject *Invalid;                /* the Invalid singleton (borrowed) */
extern PyObject *addrspace_members[4];   /* AddrSpace enum members by AddrSpaceId (index 0 unused) */

#define DType_Check(o) PyObject_TypeCheck((o), &DType_Type)
#define DTYPE(ID) (scalar_dtypes[DT_##ID])

static inline DType *dtype_scalar(DType *dt) { return dt->scalar_ ? dt->scalar_ : dt; }
/* tinygrad's vcount: v for pointers, count otherwise */
static inline int dtype_vcount(DType *dt) { return dt->is_ptr ? dt->v : dt->count; }
static inline DType *dtype_base(DType *dt) { return dt->is_ptr ? dt->base : dt; }
static inline int dtype_itemsize(DType *dt) { return (dt->bitsize + 7) / 8; }
/* isinstance(dt, ImageDType) */
static inline bool dtype_is_image(DType *dt) { return dt->shape != NULL; }

bool dtype_is_float(DType *dt);
bool dtype_is_int(DType *dt);      /* ints and index */
bool dtype_is_unsigned(DType *dt);
bool dtype_is_bool(DType *dt);

/* Constructors; return borrowed interned dtypes, NULL with an exception set on error. */
DType *dtype_vec(DType *dt, int sz);
DType *dtype_ptr(DType *dt, Py_ssize_t size, AddrSpaceId addrspace);
/* dtypes.imagef(shape, pitch) (half: dtypes.imageh); shape a tuple of ints */
DType *dtype_image(bool half, PyObject *shape, Py_ssize_t pitch);
/* *out = image dt's shape[i]: 0, or -1 with IndexError (no such dim) / TypeError (not an image) */
int dtype_image_dim(DType *dt, Py_ssize_t i, Py_ssize_t *out);

/* New references to Python numbers, as tinygrad's dtypes.min / dtypes.max. */
PyObject *dtype_min(DType *dt);
PyObject *dtype_max(DType *dt);
/* tinygrad's dtypes.as_const(val, dtype): new reference, NULL on error. */
PyObject *dtype_as_const(PyObject *val, DType *dt);
/* tinygrad's truncate[dtype](val), identity for dtypes without a truncation: new reference. */
PyObject *dtype_truncate(DType *dt, PyObject *val);
/* tinygrad's dtypes.from_py(x): borrowed. */
DType *dtype_from_py(PyObject *x);
/* tinygrad's least_upper_dtype(*ds): borrowed. */
DType *dtype_least_upper(DType *const *ds, Py_ssize_t n);

/* The tinyc.dtypes class (a plain Python class, so default_float/default_int stay assignable). */
extern PyObject *dtypes_class;
/* dtypes.default_float / dtypes.default_int as currently set: borrowed. */
DType *dtype_default_float(void);
DType *dtype_default_int(void);
/* least_upper_float, sum_acc_dtype, to_dtype (DType or str name): borrowed, NULL with an exception. */
DType *dtype_least_upper_float(DType *dt);
DType *dtype_sum_acc(DType *dt);
DType *dtype_to_dtype(PyObject *x);
/* can_lossless_cast(dt0, dt1): dt1 keeps every value of dt0. */
bool dtype_can_lossless_cast(DType *dt0, DType *dt1);

int tinyc_init_dtype(PyObject *m);

#endif
