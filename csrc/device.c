/* tinygrad/device.py in C: Buffer (with the buffer protocol and zero-copy NumPy views), Allocator, Compiler
 * (compile / compile_cached over the disk cache / disassemble), CompileError, Compiled (a device) and the Device
 * registry. The CPU device itself lives in runtime/ops_cpu.c, its compiler in runtime/support/compiler_cpu.c. */
#include "device.h"
#include "helpers/diskcache.h"
#include <structmember.h>
#include <time.h>
#include <string.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

Py_ssize_t stat_compiles, stat_cache_hits, stat_cache_misses, stat_clang_runs, stat_programs_loaded;
PyObject *CompileError;

double device_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* NumPy's C API is imported on first use, so tinyc imports without NumPy installed. */
static int numpy_ready(void) {
  static bool ready = false;
  if (!ready) { if (_import_array() < 0) return -1; ready = true; }
  return 0;
}

/* ================================================================================================
 * Allocator: the Python face of a C allocator (its methods are the C function pointers)
 * ================================================================================================ */

static void Allocator_dealloc(AllocatorObject *self) {
  Py_XDECREF(self->device);
  Py_TYPE(self)->tp_free((PyObject *)self);
}
static PyObject *Allocator_repr(AllocatorObject *self) { return PyUnicode_FromFormat("<%s for %S>", Py_TYPE(self)->tp_name, self->device); }
static PyMemberDef Allocator_members[] = {
  {"device", T_OBJECT, offsetof(AllocatorObject, device), READONLY, "the device this allocator serves"},
  {NULL, 0, 0, 0, NULL},
};
PyTypeObject Allocator_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.Allocator",
  .tp_basicsize = sizeof(AllocatorObject),
  .tp_dealloc = (destructor)Allocator_dealloc,
  .tp_repr = (reprfunc)Allocator_repr,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "tinygrad's Allocator: device memory for Buffers (made by the device, not by Python)",
  .tp_members = Allocator_members,
};

/* ================================================================================================
 * Buffer
 * ================================================================================================ */

/* the buffer protocol's format string of a dtype: its struct char, "B" (raw bytes) for dtypes without one */
static const char *dtype_format(DType *dt) {
  static char fmts[256][2];
  unsigned char c = (unsigned char)dt->fmt;
  if (!c) return "B";
  fmts[c][0] = (char)c;
  return fmts[c];
}

/* the scalar dtype whose name (as tinygrad spells it: "float", "unsigned int", "__bf16") is `name`; borrowed or NULL */
static DType *scalar_dtype_named(PyObject *name) {
  for (int i = 0; i < DT_COUNT; i++)
    if (scalar_dtypes[i] && PyUnicode_Compare(scalar_dtypes[i]->name, name) == 0) return scalar_dtypes[i];
  PyErr_Clear();
  return NULL;
}

/* The dtype argument of Buffer(...): a tinyc DType, a dtype name, or another library's dtype (tinygrad's) matched by
 * name; scalar and with a size. Borrowed. */
static DType *buffer_dtype_arg(PyObject *o) {
  DType *dt = DType_Check(o) ? (DType *)o : NULL;
  if (!dt && PyUnicode_Check(o)) {
    if (!(dt = scalar_dtype_named(o)) && !(dt = dtype_to_dtype(o))) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "Buffer dtype %R is not a dtype name", o);
      return NULL;
    }
  } else if (!dt) {
    if (PyObject_HasAttrString(o, "addrspace")) {   /* another library's PtrDType: not a buffer's dtype */
      PyErr_Format(PyExc_TypeError, "Buffer dtype must be a scalar dtype with a size, got a pointer dtype %R", o);
      return NULL;
    }
    PyObject *name = PyObject_GetAttrString(o, "name");
    if (!name || !PyUnicode_Check(name) || !(dt = scalar_dtype_named(name))) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "Buffer dtype must be a DType, got %.100s %R", Py_TYPE(o)->tp_name, name ? name : Py_None);
      Py_XDECREF(name);
      return NULL;
    }
    Py_DECREF(name);
  }
  if (!dt) return NULL;
  if (dt->is_ptr || dt->count != 1 || dt->id == DT_VOID || dt->id == DT_INDEX || dtype_itemsize(dt) == 0) {
    PyErr_Format(PyExc_TypeError, "Buffer dtype must be a scalar dtype with a size, got %R", (PyObject *)dt);
    return NULL;
  }
  return dt;
}

static PyObject *Buffer_copyin(BufferObject *self, PyObject *src);
static PyObject *buffer_allocate(BufferObject *self);

static PyObject *Buffer_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"device", "size", "dtype", "opaque", "options", "initial_value", "uop_refcount", "base", "offset",
                           "preallocate", NULL};
  PyObject *device, *dtype, *opaque = Py_None, *options = Py_None, *initial = Py_None, *base = Py_None;
  Py_ssize_t size, refcount = 0, offset = 0;
  int preallocate = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "UnO|OOOnOnp:Buffer", kwlist, &device, &size, &dtype, &opaque, &options, &initial,
                                   &refcount, &base, &offset, &preallocate)) return NULL;
  if (size < 0) return PyErr_Format(PyExc_ValueError, "Buffer size must be >= 0, got %zd", size);
  if (opaque != Py_None || options != Py_None) return PyErr_Format(PyExc_NotImplementedError, "Buffer opaque/options are not supported");
  if (base != Py_None || offset != 0) return PyErr_Format(PyExc_NotImplementedError, "Buffer views (base/offset) are not supported");
  DType *dt = buffer_dtype_arg(dtype);
  if (!dt) return NULL;
  if ((size_t)size > (SIZE_MAX >> 4) / (size_t)dtype_itemsize(dt)) return PyErr_Format(PyExc_ValueError, "Buffer size %zd is too large", size);
  PyObject *canon = device_canonicalize(device);
  if (!canon) return NULL;
  BufferObject *self = (BufferObject *)type->tp_alloc(type, 0);
  if (!self) { Py_DECREF(canon); return NULL; }
  self->device = canon, self->size = size, self->dtype = dt;
  if (initial != Py_None) {
    PyObject *r = buffer_allocate(self);
    if (r) { Py_DECREF(r); r = Buffer_copyin(self, initial); }
    if (!r) { Py_DECREF(self); return NULL; }
    Py_DECREF(r);
  }
  if (preallocate && !self->ptr) {
    PyObject *r = buffer_allocate(self);
    if (!r) { Py_DECREF(self); return NULL; }
    Py_DECREF(r);
  }
  return (PyObject *)self;
}

static void buffer_free_memory(BufferObject *self) {
  if (self->ptr) self->allocator->free(self->ptr, buffer_nbytes(self) ? buffer_nbytes(self) : 1);
  self->ptr = NULL;
  Py_CLEAR(self->allocator);
}

static void Buffer_dealloc(BufferObject *self) {
  if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
  buffer_free_memory(self);
  Py_XDECREF(self->device);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Buffer_allocate(BufferObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"opaque", "external_ptr", NULL};
  PyObject *opaque = Py_None, *ext = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:allocate", kwlist, &opaque, &ext)) return NULL;
  if (opaque != Py_None || ext != Py_None) return PyErr_Format(PyExc_NotImplementedError, "allocate with opaque/external_ptr is not supported");
  return buffer_allocate(self);
}

static PyObject *buffer_allocate(BufferObject *self) {
  if (self->ptr) return PyErr_Format(PyExc_RuntimeError, "can't allocate already allocated buffer");
  PyObject *dev = device_get(self->device);
  if (!dev) return NULL;
  PyObject *alloc = ((CompiledObject *)dev)->allocator;
  if (!alloc || !PyObject_TypeCheck(alloc, &Allocator_Type)) {
    Py_DECREF(dev);
    return PyErr_Format(PyExc_RuntimeError, "device %S has no allocator", self->device);
  }
  size_t n = buffer_nbytes(self);
  void *p = ((AllocatorObject *)alloc)->alloc(n ? n : 1);
  if (!p) { Py_DECREF(dev); return PyErr_Format(PyExc_MemoryError, "could not allocate %zu bytes on %S", n, self->device); }
  self->ptr = p, self->allocator = (AllocatorObject *)Py_NewRef(alloc);
  Py_DECREF(dev);
  return Py_NewRef(self);
}

static PyObject *Buffer_ensure_allocated(BufferObject *self, PyObject *unused) {
  UNUSED(unused);
  if (self->ptr) return Py_NewRef(self);
  return buffer_allocate(self);
}

static PyObject *Buffer_is_allocated(BufferObject *self, PyObject *unused) { UNUSED(unused); return PyBool_FromLong(self->ptr != NULL); }

static PyObject *Buffer_deallocate(BufferObject *self, PyObject *unused) {
  UNUSED(unused);
  if (!self->ptr) return PyErr_Format(PyExc_RuntimeError, "buffer must be allocated to deallocate");
  if (self->exports > 0)
    return PyErr_Format(PyExc_BufferError, "can't deallocate a buffer with %zd live views (memoryview/numpy) or running kernels", self->exports);
  buffer_free_memory(self);
  Py_RETURN_NONE;
}

static int require_allocated(BufferObject *self, const char *what) {
  if (self->ptr) return 0;
  PyErr_Format(PyExc_RuntimeError, "can't %s unallocated buffer (%S, size %zd, dtype %R)", what, self->device, self->size,
               (PyObject *)self->dtype);
  return -1;
}

/* copyin(mv): the bytes of any C-contiguous buffer of exactly nbytes */
static PyObject *Buffer_copyin(BufferObject *self, PyObject *src) {
  Py_buffer view;
  if (PyObject_GetBuffer(src, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
  PyObject *ret = NULL;
  if ((size_t)view.len != buffer_nbytes(self))
    PyErr_Format(PyExc_ValueError, "size mismatch, len(mv)=%zd != nbytes=%zu (dtype=%R size=%zd)", view.len, buffer_nbytes(self),
                 (PyObject *)self->dtype, self->size);
  else if (require_allocated(self, "copyin to") == 0) {
    if (view.len) memmove(self->ptr, view.buf, (size_t)view.len);
    ret = Py_NewRef(self);
  }
  PyBuffer_Release(&view);
  return ret;
}

/* copyout(mv): into any writable C-contiguous buffer of exactly nbytes; returns mv */
static PyObject *Buffer_copyout(BufferObject *self, PyObject *dst) {
  Py_buffer view;
  if (PyObject_GetBuffer(dst, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return NULL;
  PyObject *ret = NULL;
  if ((size_t)view.len != buffer_nbytes(self))
    PyErr_Format(PyExc_ValueError, "size mismatch, len(mv)=%zd != nbytes=%zu (dtype=%R size=%zd)", view.len, buffer_nbytes(self),
                 (PyObject *)self->dtype, self->size);
  else if (require_allocated(self, "copyout") == 0) {
    if (view.len) memmove(view.buf, self->ptr, (size_t)view.len);
    ret = Py_NewRef(dst);
  }
  PyBuffer_Release(&view);
  return ret;
}

/* as_buffer(allow_zero_copy=False, force_zero_copy=False): a byte memoryview; zero copy only when asked (it aliases the memory) */
static PyObject *Buffer_as_buffer(BufferObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"allow_zero_copy", "force_zero_copy", NULL};
  int allow = 0, force = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|pp:as_buffer", kwlist, &allow, &force)) return NULL;
  if (require_allocated(self, "as_buffer an") < 0) return NULL;
  if (allow || force) {
    PyObject *mv = PyMemoryView_FromObject((PyObject *)self);
    if (!mv) return NULL;
    PyObject *ret = PyObject_CallMethod(mv, "cast", "s", "B");
    Py_DECREF(mv);
    return ret;
  }
  PyObject *ba = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)buffer_nbytes(self));
  if (!ba) return NULL;
  if (buffer_nbytes(self)) memcpy(PyByteArray_AS_STRING(ba), self->ptr, buffer_nbytes(self));
  PyObject *ret = PyMemoryView_FromObject(ba);
  Py_DECREF(ba);
  return ret;
}

static int npy_typenum(DType *dt) {
  switch (dt->id) {
    case DT_BOOL: return NPY_BOOL;
    case DT_INT8: return NPY_INT8;     case DT_UINT8: return NPY_UINT8;
    case DT_INT16: return NPY_INT16;   case DT_UINT16: return NPY_UINT16;
    case DT_INT32: return NPY_INT32;   case DT_UINT32: return NPY_UINT32;
    case DT_INT64: return NPY_INT64;   case DT_UINT64: return NPY_UINT64;
    case DT_FLOAT16: return NPY_FLOAT16; case DT_FLOAT32: return NPY_FLOAT32; case DT_FLOAT64: return NPY_FLOAT64;
    default: return -1;
  }
}

/* numpy(): a 1-D array over the buffer's memory (zero copy). Its base is a memoryview of the buffer, so the
 * buffer outlives the array and refuses deallocate() while it lives. */
static PyObject *Buffer_numpy(BufferObject *self, PyObject *unused) {
  UNUSED(unused);
  int typenum = npy_typenum(self->dtype);
  if (typenum < 0) return PyErr_Format(PyExc_TypeError, "no numpy dtype for %R", (PyObject *)self->dtype);
  if (require_allocated(self, "numpy an") < 0 || numpy_ready() < 0) return NULL;
  PyObject *base = PyMemoryView_FromObject((PyObject *)self);
  if (!base) return NULL;
  npy_intp dims[1] = {self->size};
  PyObject *arr = PyArray_SimpleNewFromData(1, dims, typenum, self->ptr);
  if (!arr) { Py_DECREF(base); return NULL; }
  if (PyArray_SetBaseObject((PyArrayObject *)arr, base) < 0) { Py_DECREF(arr); return NULL; }  /* steals base, also on failure */
  return arr;
}

/* tinyc dtype of a NumPy dtype (by kind and size); NULL with TypeError naming it */
static DType *dtype_of_numpy(PyArray_Descr *d) {
  int sz = (int)PyDataType_ELSIZE(d);
  DTypeId id = DT_COUNT;
  switch (d->kind) {
    case 'b': if (sz == 1) id = DT_BOOL; break;
    case 'i': id = sz == 1 ? DT_INT8 : sz == 2 ? DT_INT16 : sz == 4 ? DT_INT32 : sz == 8 ? DT_INT64 : DT_COUNT; break;
    case 'u': id = sz == 1 ? DT_UINT8 : sz == 2 ? DT_UINT16 : sz == 4 ? DT_UINT32 : sz == 8 ? DT_UINT64 : DT_COUNT; break;
    case 'f': id = sz == 2 ? DT_FLOAT16 : sz == 4 ? DT_FLOAT32 : sz == 8 ? DT_FLOAT64 : DT_COUNT; break;
    default: break;
  }
  if (id == DT_COUNT) { PyErr_Format(PyExc_TypeError, "no tinyc dtype for numpy dtype %R", (PyObject *)d); return NULL; }
  return scalar_dtypes[id];
}

/* Buffer.from_numpy(arr, device="CPU"): a new allocated buffer holding a copy of arr (flattened, C order) */
static PyObject *Buffer_from_numpy(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"arr", "device", NULL};
  PyObject *obj, *device = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|U:from_numpy", kwlist, &obj, &device)) return NULL;
  if (numpy_ready() < 0) return NULL;
  if (!PyArray_Check(obj)) return PyErr_Format(PyExc_TypeError, "from_numpy needs a numpy.ndarray, got %.100s", Py_TYPE(obj)->tp_name);
  DType *dt = dtype_of_numpy(PyArray_DESCR((PyArrayObject *)obj));
  if (!dt) return NULL;
  PyArrayObject *arr = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED, NULL);
  if (!arr) return NULL;
  PyObject *buf = device ? PyObject_CallFunction(cls, "OnO", device, (Py_ssize_t)PyArray_SIZE(arr), (PyObject *)dt)
                        : PyObject_CallFunction(cls, "snO", "CPU", (Py_ssize_t)PyArray_SIZE(arr), (PyObject *)dt);
  PyObject *ret = NULL;
  if (buf) {
    PyObject *r = buffer_allocate((BufferObject *)buf);
    if (r) {
      Py_DECREF(r);
      size_t nb = (size_t)PyArray_NBYTES(arr);
      if (nb) memcpy(((BufferObject *)buf)->ptr, PyArray_DATA(arr), nb);
      ret = Py_NewRef(buf);
    }
    Py_DECREF(buf);
  }
  Py_DECREF(arr);
  return ret;
}

static PyObject *Buffer_reduce(BufferObject *self, PyObject *unused) {
  UNUSED(unused);
  PyObject *init = Py_None;
  if (self->ptr && !(init = PyBytes_FromStringAndSize(self->ptr, (Py_ssize_t)buffer_nbytes(self)))) return NULL;
  PyObject *ret = Py_BuildValue("(O(OnOOOO))", (PyObject *)Py_TYPE(self), self->device, self->size, (PyObject *)self->dtype, Py_None, Py_None, init);
  if (init != Py_None) Py_DECREF(init);
  return ret;
}

static PyObject *Buffer_repr(BufferObject *self) {
  return PyUnicode_FromFormat("<buf real:%s device:%S size:%zd dtype:%R>", self->ptr ? "True" : "False", self->device, self->size,
                              (PyObject *)self->dtype);
}

static PyObject *Buffer_get_nbytes(BufferObject *self, void *c) { UNUSED(c); return PyLong_FromSize_t(buffer_nbytes(self)); }
static PyObject *Buffer_get_dtype(BufferObject *self, void *c) { UNUSED(c); return Py_NewRef((PyObject *)self->dtype); }
static PyObject *Buffer_get_ptr(BufferObject *self, void *c) {
  UNUSED(c);
  if (require_allocated(self, "take the address of an") < 0) return NULL;
  return PyLong_FromVoidPtr(self->ptr);
}
static PyObject *Buffer_get_base(BufferObject *self, void *c) { UNUSED(c); return Py_NewRef(self); }
static PyObject *Buffer_get_offset(BufferObject *self, void *c) { UNUSED(c); UNUSED(self); return PyLong_FromLong(0); }

/* buffer protocol: 1-D, typed by the dtype's struct format (raw bytes for dtypes without one), writable */
static int Buffer_getbuffer(BufferObject *self, Py_buffer *view, int flags) {
  if (!self->ptr) {
    PyErr_Format(PyExc_BufferError, "buffer is not allocated (%S, size %zd, dtype %R)", self->device, self->size, (PyObject *)self->dtype);
    view->obj = NULL;
    return -1;
  }
  bool typed = self->dtype->fmt != 0;
  view->buf = self->ptr;
  view->obj = Py_NewRef(self);
  view->len = (Py_ssize_t)buffer_nbytes(self);
  view->readonly = 0;
  view->itemsize = typed ? dtype_itemsize(self->dtype) : 1;
  view->format = (flags & PyBUF_FORMAT) ? (char *)dtype_format(self->dtype) : NULL;
  view->ndim = 1;
  /* shape and strides live in the view's internal slot: [count, itemsize] */
  Py_ssize_t *meta = PyMem_Malloc(2 * sizeof(Py_ssize_t));
  if (!meta) { Py_CLEAR(view->obj); PyErr_NoMemory(); return -1; }
  meta[0] = typed ? self->size : view->len, meta[1] = view->itemsize;
  view->internal = meta;
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? &meta[0] : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? &meta[1] : NULL;
  view->suboffsets = NULL;
  self->exports++;
  return 0;
}
static void Buffer_releasebuffer(BufferObject *self, Py_buffer *view) {
  PyMem_Free(view->internal);
  view->internal = NULL;
  self->exports--;
}
static PyBufferProcs Buffer_as_buffer_procs = {(getbufferproc)Buffer_getbuffer, (releasebufferproc)Buffer_releasebuffer};

static PyMethodDef Buffer_methods[] = {
  {"allocate", (PyCFunction)(void (*)(void))Buffer_allocate, METH_VARARGS | METH_KEYWORDS, "allocate() -> self"},
  {"ensure_allocated", (PyCFunction)Buffer_ensure_allocated, METH_NOARGS, "allocate unless allocated -> self"},
  {"is_allocated", (PyCFunction)Buffer_is_allocated, METH_NOARGS, NULL},
  {"is_initialized", (PyCFunction)Buffer_is_allocated, METH_NOARGS, NULL},
  {"deallocate", (PyCFunction)Buffer_deallocate, METH_NOARGS, "free the memory (refused while views of it live)"},
  {"copyin", (PyCFunction)Buffer_copyin, METH_O, "copyin(mv) -> self: mv must hold exactly nbytes"},
  {"copyout", (PyCFunction)Buffer_copyout, METH_O, "copyout(mv) -> mv: mv must be writable and exactly nbytes"},
  {"as_buffer", (PyCFunction)(void (*)(void))Buffer_as_buffer, METH_VARARGS | METH_KEYWORDS, "a byte memoryview (a copy unless zero copy is allowed)"},
  {"numpy", (PyCFunction)Buffer_numpy, METH_NOARGS, "a numpy array over the buffer's memory (zero copy)"},
  {"from_numpy", (PyCFunction)(void (*)(void))Buffer_from_numpy, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
   "Buffer.from_numpy(arr, device='CPU'): a new buffer with a copy of arr"},
  {"__reduce__", (PyCFunction)Buffer_reduce, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL},
};
static PyMemberDef Buffer_members[] = {
  {"device", T_OBJECT, offsetof(BufferObject, device), READONLY, NULL},
  {"size", T_PYSSIZET, offsetof(BufferObject, size), READONLY, NULL},
  {"allocator", T_OBJECT, offsetof(BufferObject, allocator), READONLY, NULL},
  {NULL, 0, 0, 0, NULL},
};
static PyGetSetDef Buffer_getset[] = {
  {"nbytes", (getter)Buffer_get_nbytes, NULL, NULL, NULL},
  {"dtype", (getter)Buffer_get_dtype, NULL, NULL, NULL},
  {"base", (getter)Buffer_get_base, NULL, NULL, NULL},
  {"offset", (getter)Buffer_get_offset, NULL, NULL, NULL},
  {"_ptr", (getter)Buffer_get_ptr, NULL, "the memory's address", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};
PyTypeObject Buffer_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.Buffer",
  .tp_basicsize = sizeof(BufferObject),
  .tp_dealloc = (destructor)Buffer_dealloc,
  .tp_repr = (reprfunc)Buffer_repr,
  .tp_as_buffer = &Buffer_as_buffer_procs,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "tinygrad's Buffer(device, size, dtype): memory on a device, allocated on allocate()",
  .tp_weaklistoffset = offsetof(BufferObject, weakreflist),
  .tp_methods = Buffer_methods,
  .tp_members = Buffer_members,
  .tp_getset = Buffer_getset,
  .tp_new = Buffer_new,
};

/* ================================================================================================
 * Compiler
 * ================================================================================================ */

static int Compiler_init(CompilerObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"cachekey", NULL};
  PyObject *key = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:Compiler", kwlist, &key)) return -1;
  if (key != Py_None && !PyUnicode_Check(key)) {
    PyErr_Format(PyExc_TypeError, "Compiler cachekey must be str or None, got %.100s", Py_TYPE(key)->tp_name);
    return -1;
  }
  /* tinygrad: the cache key only counts when CCACHE (default on) */
  Py_XSETREF(self->cachekey, Py_NewRef(env_long("CCACHE", 1) != 0 ? key : Py_None));
  return 0;
}

static void Compiler_dealloc(CompilerObject *self) {
  PyObject_GC_UnTrack(self);
  Py_CLEAR(self->cachekey); Py_CLEAR(self->dict);
  Py_TYPE(self)->tp_free((PyObject *)self);
}
static int Compiler_traverse(CompilerObject *self, visitproc visit, void *arg) { Py_VISIT(self->dict); return 0; }
static int Compiler_clear(CompilerObject *self) { Py_CLEAR(self->dict); return 0; }

/* the empty compiler: the source's bytes are the program */
static PyObject *Compiler_compile(PyObject *self, PyObject *src) {
  UNUSED(self);
  if (!PyUnicode_Check(src)) return PyErr_Format(PyExc_TypeError, "compile needs the source as str, got %.100s", Py_TYPE(src)->tp_name);
  return PyUnicode_AsUTF8String(src);
}

/* compile_cached(src): the disk cache's value for (cachekey, src), else compile(src) and store it */
static PyObject *Compiler_compile_cached(CompilerObject *self, PyObject *src) {
  if (!PyUnicode_Check(src)) return PyErr_Format(PyExc_TypeError, "compile_cached needs the source as str, got %.100s", Py_TYPE(src)->tp_name);
  Py_ssize_t srclen;
  const char *s = PyUnicode_AsUTF8AndSize(src, &srclen);
  if (!s) return NULL;
  const char *table = NULL;
  if (self->cachekey && self->cachekey != Py_None && !(table = PyUnicode_AsUTF8(self->cachekey))) return NULL;
  if (table) {
    PyObject *hit = diskcache_get(table, s, srclen);
    if (!hit) return NULL;
    if (hit != Py_None) { stat_cache_hits++; return hit; }
    Py_DECREF(hit);
    if (diskcache_level() >= 1) stat_cache_misses++;
  }
  if (env_long("ASSERT_COMPILE", 0) != 0) return PyErr_Format(PyExc_RuntimeError, "tried to compile with ASSERT_COMPILE set\n%U", src);
  PyObject *lib = PyObject_CallMethod((PyObject *)self, "compile", "O", src);
  if (!lib) return NULL;
  if (!PyBytes_Check(lib)) {
    PyErr_Format(PyExc_TypeError, "%.100s.compile returned %.100s, not bytes", Py_TYPE(self)->tp_name, Py_TYPE(lib)->tp_name);
    Py_DECREF(lib);
    return NULL;
  }
  stat_compiles++;
  if (table) diskcache_put(table, s, srclen, PyBytes_AS_STRING(lib), PyBytes_GET_SIZE(lib));
  return lib;
}

static PyObject *Compiler_disassemble(PyObject *self, PyObject *lib) { UNUSED(self); UNUSED(lib); Py_RETURN_NONE; }

static PyMethodDef Compiler_methods[] = {
  {"compile", Compiler_compile, METH_O, "compile(src) -> bytes (the base compiler returns the source's bytes)"},
  {"compile_cached", (PyCFunction)Compiler_compile_cached, METH_O, "compile(src) through the disk cache keyed by (cachekey, src)"},
  {"disassemble", Compiler_disassemble, METH_O, "disassemble(lib)"},
  {NULL, NULL, 0, NULL},
};
static PyMemberDef Compiler_members[] = {
  {"cachekey", T_OBJECT, offsetof(CompilerObject, cachekey), 0, "the disk cache table, or None for no caching"},
  {NULL, 0, 0, 0, NULL},
};
PyTypeObject Compiler_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.Compiler",
  .tp_basicsize = sizeof(CompilerObject),
  .tp_dealloc = (destructor)Compiler_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
  .tp_doc = "tinygrad's Compiler(cachekey=None): compile(src) -> bytes, compile_cached(src) through the disk cache",
  .tp_traverse = (traverseproc)Compiler_traverse,
  .tp_clear = (inquiry)Compiler_clear,
  .tp_methods = Compiler_methods,
  .tp_members = Compiler_members,
  .tp_dictoffset = offsetof(CompilerObject, dict),
  .tp_init = (initproc)Compiler_init,
  .tp_new = PyType_GenericNew,
};

/* ================================================================================================
 * Compiled (a device) and the Device registry
 * ================================================================================================ */

static void Compiled_dealloc(CompiledObject *self) {
  PyObject_GC_UnTrack(self);
  Py_CLEAR(self->device); Py_CLEAR(self->allocator); Py_CLEAR(self->renderer); Py_CLEAR(self->compiler); Py_CLEAR(self->runtime);
  Py_CLEAR(self->dict);
  Py_TYPE(self)->tp_free((PyObject *)self);
}
static int Compiled_traverse(CompiledObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->allocator); Py_VISIT(self->renderer); Py_VISIT(self->compiler); Py_VISIT(self->runtime); Py_VISIT(self->dict);
  return 0;
}
static int Compiled_clear(CompiledObject *self) {
  Py_CLEAR(self->allocator); Py_CLEAR(self->renderer); Py_CLEAR(self->compiler); Py_CLEAR(self->runtime); Py_CLEAR(self->dict);
  return 0;
}
/* every CPU launch runs to completion before it returns: nothing to wait for */
static PyObject *Compiled_synchronize(PyObject *self, PyObject *unused) { UNUSED(self); UNUSED(unused); Py_RETURN_NONE; }
static PyObject *Compiled_repr(CompiledObject *self) { return PyUnicode_FromFormat("<%s %S>", Py_TYPE(self)->tp_name, self->device); }

static PyMethodDef Compiled_methods[] = {
  {"synchronize", Compiled_synchronize, METH_NOARGS, "wait for the device's work to finish"},
  {NULL, NULL, 0, NULL},
};
static PyMemberDef Compiled_members[] = {
  {"device", T_OBJECT, offsetof(CompiledObject, device), READONLY, NULL},
  {"allocator", T_OBJECT, offsetof(CompiledObject, allocator), READONLY, NULL},
  {"renderer", T_OBJECT, offsetof(CompiledObject, renderer), READONLY, NULL},
  {"compiler", T_OBJECT, offsetof(CompiledObject, compiler), READONLY, NULL},
  {"runtime", T_OBJECT, offsetof(CompiledObject, runtime), READONLY, "runtime(name, lib) -> a program"},
  {NULL, 0, 0, 0, NULL},
};
PyTypeObject Compiled_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.Compiled",
  .tp_basicsize = sizeof(CompiledObject),
  .tp_dealloc = (destructor)Compiled_dealloc,
  .tp_repr = (reprfunc)Compiled_repr,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
  .tp_doc = "tinygrad's Compiled: a device with its allocator, renderer, compiler and runtime (get one as Device[name])",
  .tp_traverse = (traverseproc)Compiled_traverse,
  .tp_clear = (inquiry)Compiled_clear,
  .tp_methods = Compiled_methods,
  .tp_members = Compiled_members,
  .tp_dictoffset = offsetof(CompiledObject, dict),
};

static PyObject *opened_devices;   /* dict canonical name -> Compiled */

PyObject *device_canonicalize(PyObject *name) {
  if (!PyUnicode_Check(name)) return PyErr_Format(PyExc_TypeError, "device names are str, got %.100s", Py_TYPE(name)->tp_name);
  /* tinygrad: the part before ':' upper-cased, ":0" dropped */
  Py_ssize_t n = PyUnicode_GetLength(name), colon = PyUnicode_FindChar(name, ':', 0, n, 1);
  if (colon == -2) return NULL;
  PyObject *head = PyUnicode_Substring(name, 0, colon < 0 ? n : colon);
  if (!head) return NULL;
  PyObject *upper = PyObject_CallMethod(head, "upper", NULL);
  Py_DECREF(head);
  if (!upper || colon < 0) return upper;
  PyObject *tail = PyUnicode_Substring(name, colon, n);
  if (!tail) { Py_DECREF(upper); return NULL; }
  PyObject *ret = PyUnicode_CompareWithASCIIString(tail, ":0") == 0 ? Py_NewRef(upper) : PyUnicode_Concat(upper, tail);
  Py_DECREF(upper); Py_DECREF(tail);
  return ret;
}

PyObject *device_get(PyObject *name) {
  PyObject *canon = device_canonicalize(name);
  if (!canon) return NULL;
  PyObject *dev = PyDict_GetItemWithError(opened_devices, canon);
  if (dev) { Py_DECREF(canon); return Py_NewRef(dev); }
  if (PyErr_Occurred()) { Py_DECREF(canon); return NULL; }
  if (PyUnicode_CompareWithASCIIString(canon, "CPU") == 0) dev = cpu_device_new();
  else PyErr_Format(PyExc_RuntimeError, "unknown device %R (tinyc has: CPU)", name);
  if (dev && PyDict_SetItem(opened_devices, canon, dev) < 0) Py_CLEAR(dev);
  Py_DECREF(canon);
  return dev;
}

/* tinyc.Device: Device["CPU"], Device.DEFAULT, Device.canonicalize(name) */
typedef struct { PyObject_HEAD PyObject *dict; } DeviceRegistryObject;

static PyObject *Registry_getitem(PyObject *self, PyObject *key) { UNUSED(self); return device_get(key); }
static PyMappingMethods Registry_as_mapping = {NULL, Registry_getitem, NULL};
static PyObject *Registry_canonicalize(PyObject *self, PyObject *name) { UNUSED(self); return device_canonicalize(name); }
static PyObject *Registry_get_default(PyObject *self, void *c) {
  UNUSED(self); UNUSED(c);
  const char *dev = getenv("DEV");
  if (dev && *dev) { PyObject *s = PyUnicode_FromString(dev), *r = s ? device_canonicalize(s) : NULL; Py_XDECREF(s); return r; }
  return PyUnicode_FromString("CPU");
}
static void Registry_dealloc(DeviceRegistryObject *self) { Py_XDECREF(self->dict); Py_TYPE(self)->tp_free((PyObject *)self); }
static PyObject *Registry_iter(PyObject *self) {
  UNUSED(self);
  return PyObject_GetIter(opened_devices);
}
static PyMethodDef Registry_methods[] = {
  {"canonicalize", Registry_canonicalize, METH_O, "canonicalize(name): 'cpu' -> 'CPU', 'CPU:0' -> 'CPU'"},
  {NULL, NULL, 0, NULL},
};
static PyGetSetDef Registry_getset[] = {
  {"DEFAULT", (getter)Registry_get_default, NULL, "the default device: $DEV, else CPU", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};
static PyTypeObject DeviceRegistry_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc._Device",
  .tp_basicsize = sizeof(DeviceRegistryObject),
  .tp_dealloc = (destructor)Registry_dealloc,
  .tp_as_mapping = &Registry_as_mapping,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "tinygrad's Device: Device[name] opens (once) and returns a device",
  .tp_iter = Registry_iter,
  .tp_methods = Registry_methods,
  .tp_getset = Registry_getset,
  .tp_dictoffset = offsetof(DeviceRegistryObject, dict),
};

/* _C.compile_stats(reset=False) -> dict of the counters since import (or the last reset) */
static PyObject *py_compile_stats(PyObject *self, PyObject *args, PyObject *kw) {
  UNUSED(self);
  static char *kwlist[] = {"reset", NULL};
  int reset = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:compile_stats", kwlist, &reset)) return NULL;
  PyObject *d = Py_BuildValue("{snsnsnsnsn}", "compiles", stat_compiles, "cache_hits", stat_cache_hits, "cache_misses", stat_cache_misses,
                              "clang_runs", stat_clang_runs, "programs_loaded", stat_programs_loaded);
  if (d && reset) stat_compiles = stat_cache_hits = stat_cache_misses = stat_clang_runs = stat_programs_loaded = 0;
  return d;
}

static PyMethodDef device_functions[] = {
  {"compile_stats", (PyCFunction)(void (*)(void))py_compile_stats, METH_VARARGS | METH_KEYWORDS,
   "compile_stats(reset=False) -> {compiles, cache_hits, cache_misses, clang_runs, programs_loaded}"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_device(PyObject *m) {
  if (PyType_Ready(&Allocator_Type) < 0 || PyType_Ready(&Buffer_Type) < 0 || PyType_Ready(&Compiler_Type) < 0 ||
      PyType_Ready(&Compiled_Type) < 0 || PyType_Ready(&DeviceRegistry_Type) < 0) return -1;
  if (!(opened_devices = PyDict_New())) return -1;
  if (!CompileError && !(CompileError = PyErr_NewExceptionWithDoc("tinyc.CompileError", "a compiler failed; the message holds its log",
                                                                    PyExc_RuntimeError, NULL))) return -1;
  PyObject *registry = PyType_GenericAlloc(&DeviceRegistry_Type, 0);
  if (!registry) return -1;
  int rc = tinyc_add(m, "Device", registry);
  Py_DECREF(registry);
  return rc < 0 || tinyc_add(m, "Allocator", (PyObject *)&Allocator_Type) < 0 || tinyc_add(m, "Buffer", (PyObject *)&Buffer_Type) < 0 ||
    tinyc_add(m, "Compiler", (PyObject *)&Compiler_Type) < 0 || tinyc_add(m, "Compiled", (PyObject *)&Compiled_Type) < 0 ||
    tinyc_add(m, "CompileError", CompileError) < 0 || PyModule_AddFunctions(m, device_functions) < 0 ? -1 : 0;
}
