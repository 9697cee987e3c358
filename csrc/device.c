/* tinygrad/device.py in C: Buffer (with the buffer protocol and zero-copy NumPy views where the memory is
 * host-visible), Allocator, Compiler (compile / compile_cached over the disk cache / disassemble), CompileError, the
 * base of every runtime (Program), Compiled with tinygrad's choice of a renderer/compiler pair, the device table
 * (Device[name], Device.DEFAULT) and is_dtype_supported. The devices themselves are rows of the table, one file each in
 * devices/ (ops_cpu.c, ops_null.c); everything here reaches them through their DeviceDef. */
#include "device.h"
#include "devices/ops_python.h"
#include "helpers/diskcache.h"
#include "uop/decompositions.h"
#include <structmember.h>
#include <time.h>
#include <string.h>
#include <sys/utsname.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

Py_ssize_t stat_compiles, stat_cache_hits, stat_cache_misses, stat_programs_loaded;
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
 * Allocator: the Python face of a device's AllocatorVT
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
    PyObject *name = getattr_literal(o, "name");
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
  if (preallocate && !self->buf) {
    PyObject *r = buffer_allocate(self);
    if (!r) { Py_DECREF(self); return NULL; }
    Py_DECREF(r);
  }
  return (PyObject *)self;
}

/* an empty buffer still gets one byte, so that every allocated buffer has a handle */
static size_t buffer_alloc_size(BufferObject *self) { return buffer_nbytes(self) ? buffer_nbytes(self) : 1; }

/* the allocator's copies between the host and an allocated buffer: 0, or -1 with an exception */
static int copy_in(BufferObject *b, const void *src, size_t n) { return b->allocator->vt->copyin(b->allocator->dev, b->buf, src, n); }
static int copy_out(BufferObject *b, void *dst, size_t n) { return b->allocator->vt->copyout(b->allocator->dev, dst, b->buf, n); }

static void buffer_free_memory(BufferObject *self) {
  if (self->buf) self->allocator->vt->free(self->allocator->dev, self->buf, buffer_alloc_size(self));
  self->buf = NULL;
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
  if (self->buf) return PyErr_Format(PyExc_RuntimeError, "can't allocate already allocated buffer");
  PyObject *dev = device_get(self->device);
  if (!dev) return NULL;
  AllocatorObject *alloc = (AllocatorObject *)((CompiledObject *)dev)->allocator;
  void *buf = alloc->vt->alloc(alloc->dev, buffer_alloc_size(self));
  if (buf) self->buf = buf, self->allocator = (AllocatorObject *)Py_NewRef(alloc);
  Py_DECREF(dev);
  return buf ? Py_NewRef(self) : NULL;
}

static PyObject *Buffer_ensure_allocated(BufferObject *self, PyObject *unused) {
  UNUSED(unused);
  if (self->buf) return Py_NewRef(self);
  return buffer_allocate(self);
}

static PyObject *Buffer_is_allocated(BufferObject *self, PyObject *unused) { UNUSED(unused); return PyBool_FromLong(self->buf != NULL); }

static PyObject *Buffer_deallocate(BufferObject *self, PyObject *unused) {
  UNUSED(unused);
  if (!self->buf) return PyErr_Format(PyExc_RuntimeError, "buffer must be allocated to deallocate");
  if (self->exports > 0)
    return PyErr_Format(PyExc_BufferError, "can't deallocate a buffer with %zd live views (memoryview/numpy) or running kernels", self->exports);
  buffer_free_memory(self);
  Py_RETURN_NONE;
}

static int require_allocated(BufferObject *self, const char *what) {
  if (self->buf) return 0;
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
  else if (require_allocated(self, "copyin to") == 0 &&
           copy_in(self, view.buf, (size_t)view.len) == 0)
    ret = Py_NewRef(self);
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
  else if (require_allocated(self, "copyout") == 0 &&
           copy_out(self, view.buf, (size_t)view.len) == 0)
    ret = Py_NewRef(dst);
  PyBuffer_Release(&view);
  return ret;
}

static bool host_visible(BufferObject *self) { return self->allocator->vt->host_view != NULL; }

/* as_buffer(allow_zero_copy=False, force_zero_copy=False): a byte memoryview; zero copy only when asked (it aliases the
 * memory) and the memory is host-visible, else a copy (tinygrad: force_zero_copy on a device without one fails) */
static PyObject *Buffer_as_buffer(BufferObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"allow_zero_copy", "force_zero_copy", NULL};
  int allow = 0, force = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|pp:as_buffer", kwlist, &allow, &force)) return NULL;
  if (require_allocated(self, "as_buffer an") < 0) return NULL;
  if ((allow || force) && host_visible(self)) {
    PyObject *mv = PyMemoryView_FromObject((PyObject *)self);
    if (!mv) return NULL;
    PyObject *ret = PyObject_CallMethod(mv, "cast", "s", "B");
    Py_DECREF(mv);
    return ret;
  }
  if (force) return PyErr_Format(PyExc_AssertionError, "force zero copy was passed, but copy is required (%S memory is not host-visible)", self->device);
  PyObject *ba = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)buffer_nbytes(self));
  if (!ba) return NULL;
  PyObject *ret = NULL;
  memset(PyByteArray_AS_STRING(ba), 0, buffer_nbytes(self));   /* tinygrad's bytearray(nbytes): a device may copy nothing out */
  if (copy_out(self, PyByteArray_AS_STRING(ba), buffer_nbytes(self)) == 0)
    ret = PyMemoryView_FromObject(ba);
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
  PyObject *base = PyMemoryView_FromObject((PyObject *)self);   /* BufferError where the memory is not host-visible */
  if (!base) return NULL;
  npy_intp dims[1] = {self->size};
  PyObject *arr = PyArray_SimpleNewFromData(1, dims, typenum, PyMemoryView_GET_BUFFER(base)->buf);
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
    BufferObject *b = (BufferObject *)buf;
    PyObject *r = buffer_allocate(b);
    if (r) {
      Py_DECREF(r);
      if (copy_in(b, PyArray_DATA(arr), (size_t)PyArray_NBYTES(arr)) == 0) ret = Py_NewRef(buf);
    }
    Py_DECREF(buf);
  }
  Py_DECREF(arr);
  return ret;
}

static PyObject *Buffer_reduce(BufferObject *self, PyObject *unused) {
  UNUSED(unused);
  PyObject *init = Py_None;
  if (self->buf) {
    if (!(init = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)buffer_nbytes(self)))) return NULL;
    memset(PyBytes_AS_STRING(init), 0, buffer_nbytes(self));   /* a device may copy nothing out */
    if (copy_out(self, PyBytes_AS_STRING(init), buffer_nbytes(self)) < 0) {
      Py_DECREF(init);
      return NULL;
    }
  }
  PyObject *ret = Py_BuildValue("(O(OnOOOO))", (PyObject *)Py_TYPE(self), self->device, self->size, (PyObject *)self->dtype, Py_None, Py_None, init);
  if (init != Py_None) Py_DECREF(init);
  return ret;
}

static PyObject *Buffer_repr(BufferObject *self) {
  return PyUnicode_FromFormat("<buf real:%s device:%S size:%zd dtype:%R>", self->buf ? "True" : "False", self->device, self->size,
                              (PyObject *)self->dtype);
}

static PyObject *Buffer_get_nbytes(BufferObject *self, void *c) { UNUSED(c); return PyLong_FromSize_t(buffer_nbytes(self)); }
static PyObject *Buffer_get_dtype(BufferObject *self, void *c) { UNUSED(c); return Py_NewRef((PyObject *)self->dtype); }
static PyObject *Buffer_get_ptr(BufferObject *self, void *c) {
  UNUSED(c);
  if (require_allocated(self, "take the address of an") < 0) return NULL;
  return PyLong_FromVoidPtr(self->buf);
}
static PyObject *Buffer_get_base(BufferObject *self, void *c) { UNUSED(c); return Py_NewRef(self); }
static PyObject *Buffer_get_offset(BufferObject *self, void *c) { UNUSED(c); UNUSED(self); return PyLong_FromLong(0); }

/* buffer protocol: 1-D, typed by the dtype's struct format (raw bytes for dtypes without one), writable; over the host
 * view of the memory, so only where it is host-visible */
static int Buffer_getbuffer(BufferObject *self, Py_buffer *view, int flags) {
  view->obj = NULL;
  if (!self->buf) {
    PyErr_Format(PyExc_BufferError, "buffer is not allocated (%S, size %zd, dtype %R)", self->device, self->size, (PyObject *)self->dtype);
    return -1;
  }
  void *host = host_visible(self) ? self->allocator->vt->host_view(self->allocator->dev, self->buf) : NULL;
  if (!host) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_BufferError, "%S memory is not host-visible: no zero-copy view or numpy() of it (copy it with copyout or as_buffer)",
                   self->device);
    return -1;
  }
  bool typed = self->dtype->fmt != 0;
  view->buf = host;
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
  {"_ptr", (getter)Buffer_get_ptr, NULL, "the allocator's handle: the memory's address where it is host memory", NULL},
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

static EnvVar ccache = {"CCACHE", 1, 1, false};   /* tinygrad's CCACHE ContextVar; the environment's at each Compiler() until set */

static int Compiler_init(CompilerObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"cachekey", NULL};
  PyObject *key = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:Compiler", kwlist, &key)) return -1;
  if (key != Py_None && !PyUnicode_Check(key)) {
    PyErr_Format(PyExc_TypeError, "Compiler cachekey must be str or None, got %.100s", Py_TYPE(key)->tp_name);
    return -1;
  }
  /* tinygrad: the cache key only counts when CCACHE (default on) */
  Py_XSETREF(self->cachekey, Py_NewRef(envvar_value(&ccache) != 0 ? key : Py_None));
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

/* names interned once: a name made at each call would fill the interpreter's attribute cache with dead names */
static PyObject *str_upper;

/* ================================================================================================
 * Program: the base of every runtime type (tinyc.CPUProgram, tinyc.NullProgram)
 * ================================================================================================ */

static void Program_dealloc(ProgramObject *self) {
  if (self->handle) self->device->def->program.free(self->handle);
  Py_XDECREF(self->name); Py_XDECREF(self->device);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

PyObject *program_new(PyTypeObject *type, const char *device, PyObject *args, PyObject *kw) {
  if (kw && PyDict_GET_SIZE(kw)) return PyErr_Format(PyExc_TypeError, "%s takes no keyword arguments", type->tp_name);
  if (PyTuple_GET_SIZE(args) < 2) return PyErr_Format(PyExc_TypeError, "%s(name, lib) needs a name and the library's bytes", type->tp_name);
  PyObject *name = PyTuple_GET_ITEM(args, 0), *libobj = PyTuple_GET_ITEM(args, 1);   /* the rest (p.aux) is not used */
  if (!PyUnicode_Check(name)) return PyErr_Format(PyExc_TypeError, "%s name must be str, got %.100s", type->tp_name, Py_TYPE(name)->tp_name);
  Py_buffer lib;
  if (PyObject_GetBuffer(libobj, &lib, PyBUF_SIMPLE) < 0) return NULL;
  PyObject *devname = PyUnicode_FromString(device), *dev = devname ? device_get(devname) : NULL;
  Py_XDECREF(devname);
  ProgramObject *self = dev ? (ProgramObject *)type->tp_alloc(type, 0) : NULL;
  if (self) {
    self->name = Py_NewRef(name), self->device = (CompiledObject *)Py_NewRef(dev);
    self->handle = self->device->def->program.load(self->device->dev, name, lib.buf, (size_t)lib.len);
    if (!self->handle) Py_CLEAR(self);
    else stat_programs_loaded++;
  }
  Py_XDECREF(dev);
  PyBuffer_Release(&lib);
  return (PyObject *)self;
}

double program_launch(ProgramObject *prg, BufferObject *const *bufs, Py_ssize_t nbufs, const size_t global[3], const size_t *local,
                      const int64_t *vals, Py_ssize_t nvals, bool wait) {
  if (nbufs > LAUNCH_MAX_ARGS || nvals > LAUNCH_MAX_ARGS) {
    PyErr_Format(PyExc_ValueError, "%S: %zd buffers and %zd vars, more than a launch passes (%d each)", prg->name, nbufs, nvals, LAUNCH_MAX_ARGS);
    return -1;
  }
  void *handles[LAUNCH_MAX_ARGS];
  handles[0] = NULL;   /* nbufs may be 0 */
  for (Py_ssize_t i = 0; i < nbufs; i++) {
    if (!bufs[i]->buf) { PyErr_Format(PyExc_RuntimeError, "%S: buffer %zd is not allocated", prg->name, i); return -1; }
    if ((PyObject *)bufs[i]->allocator != prg->device->allocator) {
      PyErr_Format(PyExc_ValueError, "%S: buffer %zd is on %S, the program runs on %S", prg->name, i, bufs[i]->device, prg->device->device);
      return -1;
    }
    handles[i] = bufs[i]->buf;
  }
  for (Py_ssize_t i = 0; i < nbufs; i++) bufs[i]->exports++;   /* no deallocate() while the kernel runs (it may release the GIL) */
  double t = prg->device->def->program.launch(prg->handle, handles, nbufs, global, local, vals, nvals, wait);
  for (Py_ssize_t i = 0; i < nbufs; i++) bufs[i]->exports--;
  return t;
}

/* the int of a var value, in the int32 range the kernel's `const int` parameters hold */
static int var_value(PyObject *o, int64_t *out, PyObject *who, Py_ssize_t i) {
  if (!PyLong_Check(o)) { PyErr_Format(PyExc_TypeError, "%S: var value %zd must be int, got %.100s", who, i, Py_TYPE(o)->tp_name); return -1; }
  int overflow;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (overflow || v < INT32_MIN || v > INT32_MAX) { PyErr_Format(PyExc_OverflowError, "%S: var value %zd (%R) does not fit an int32", who, i, o); return -1; }
  *out = v;
  return 0;
}

int launch_size(PyObject *seq, size_t out[3], PyObject *who, const char *what) {
  PyObject *t = PySequence_Tuple(seq);
  if (!t) return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(t);
  if (n > 3) { PyErr_Format(PyExc_ValueError, "%S: %s has %zd dims, a launch takes at most 3", who, what, n); Py_DECREF(t); return -1; }
  for (Py_ssize_t i = 0; i < 3; i++) {
    Py_ssize_t v = i < n ? PyLong_AsSsize_t(PyTuple_GET_ITEM(t, i)) : 1;
    if (v == -1 && PyErr_Occurred()) { Py_DECREF(t); return -1; }
    if (v < 0) { PyErr_Format(PyExc_ValueError, "%S: %s[%zd] must be >= 0, got %zd", who, what, i, v); Py_DECREF(t); return -1; }
    out[i] = (size_t)v;
  }
  Py_DECREF(t);
  return 0;
}

/* prg(*bufs, global_size=(1,1,1), local_size=None, vals=(), wait=False) -> seconds when wait, else None */
static PyObject *Program_call(ProgramObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"global_size", "local_size", "vals", "wait", NULL};
  PyObject *gs = Py_None, *ls = Py_None, *vals = Py_None;
  int wait = 0;
  PyObject *empty = PyTuple_New(0);
  if (!empty) return NULL;
  int ok = PyArg_ParseTupleAndKeywords(empty, kw, "|OOOp:Program", kwlist, &gs, &ls, &vals, &wait);
  Py_DECREF(empty);
  if (!ok) return NULL;
  Py_ssize_t nbufs = PyTuple_GET_SIZE(args), nvals = 0;
  if (nbufs > LAUNCH_MAX_ARGS) return PyErr_Format(PyExc_ValueError, "%S: too many buffers (%zd)", self->name, nbufs);
  for (Py_ssize_t i = 0; i < nbufs; i++)
    if (!Buffer_Check(PyTuple_GET_ITEM(args, i)))
      return PyErr_Format(PyExc_TypeError, "%S: argument %zd must be a tinyc.Buffer, got %.100s", self->name, i, Py_TYPE(PyTuple_GET_ITEM(args, i))->tp_name);
  int64_t ivals[LAUNCH_MAX_ARGS];
  if (vals != Py_None) {
    PyObject *seq = PySequence_Fast(vals, "vals must be a sequence of ints");
    if (!seq) return NULL;
    nvals = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < nvals && i < LAUNCH_MAX_ARGS; i++)
      if (var_value(PySequence_Fast_GET_ITEM(seq, i), &ivals[i], self->name, i) < 0) { Py_DECREF(seq); return NULL; }
    Py_DECREF(seq);
  }
  size_t global[3] = {1, 1, 1}, local[3];
  if ((gs != Py_None && launch_size(gs, global, self->name, "global_size") < 0) ||
      (ls != Py_None && launch_size(ls, local, self->name, "local_size") < 0)) return NULL;
  double t = program_launch(self, (BufferObject *const *)&PyTuple_GET_ITEM(args, 0), nbufs, global, ls != Py_None ? local : NULL, ivals,
                            nvals, wait);
  if (t < 0) return NULL;
  if (wait) return PyFloat_FromDouble(t);
  Py_RETURN_NONE;
}

static PyObject *Program_repr(ProgramObject *self) {
  const char *dot = strrchr(Py_TYPE(self)->tp_name, '.');
  return PyUnicode_FromFormat("<%s %S>", dot ? dot + 1 : Py_TYPE(self)->tp_name, self->name);
}
static PyMemberDef Program_members[] = {
  {"name", T_OBJECT, offsetof(ProgramObject, name), READONLY, NULL},
  {"device", T_OBJECT, offsetof(ProgramObject, device), READONLY, "the device it was loaded on"},
  {NULL, 0, 0, 0, NULL},
};
PyTypeObject Program_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.Program",
  .tp_basicsize = sizeof(ProgramObject),
  .tp_dealloc = (destructor)Program_dealloc,
  .tp_repr = (reprfunc)Program_repr,
  .tp_call = (ternaryfunc)Program_call,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "a program loaded on a device (the base of each device's runtime): prg(*bufs, global_size=, local_size=, vals=, wait=)",
  .tp_members = Program_members,
};

/* ================================================================================================
 * Compiled (a device) and tinygrad's choice of its renderer/compiler pair
 * ================================================================================================ */

static void Compiled_dealloc(CompiledObject *self) {
  PyObject_GC_UnTrack(self);
  Py_CLEAR(self->device); Py_CLEAR(self->allocator); Py_CLEAR(self->renderer); Py_CLEAR(self->compiler); Py_CLEAR(self->runtime);
  Py_CLEAR(self->made); Py_CLEAR(self->dict);
  Py_TYPE(self)->tp_free((PyObject *)self);
}
static int Compiled_traverse(CompiledObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->allocator); Py_VISIT(self->renderer); Py_VISIT(self->compiler); Py_VISIT(self->runtime); Py_VISIT(self->made);
  Py_VISIT(self->dict);
  return 0;
}
static int Compiled_clear(CompiledObject *self) {
  Py_CLEAR(self->renderer); Py_CLEAR(self->compiler); Py_CLEAR(self->made); Py_CLEAR(self->dict);
  return 0;
}

/* a ctrl var's value as tinygrad's int ContextVars read it; unset reads as 0 (the default of every pair's switch) */
static int ctrl_value(const char *var, long *v) {
  *v = 0;
  return ctxvar_read(var, v);   /* a Context's value where one set it */
}

/* tinygrad's forced pairs, as a bit set (a set has at most 32 pairs): the pair the set's ctrl var names (CPU_CC=LLVM), else every pair whose own
 * switch is 1; more than one is an error */
static int forced_pairs(CompiledObject *self, const CompilerSet *cs, unsigned *forced) {
  *forced = 0;
  const char *want = cs->ctrl_var ? ctxvar_text_value(cs->ctrl_var) : NULL;
  if (want && *want) {
    char names[256] = "";
    for (int i = 0; i < cs->npairs; i++) {
      if (strcmp(cs->pairs[i].name, want) == 0) { *forced = 1u << i; return 0; }
      snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "", cs->pairs[i].name);
    }
    PyObject *key = PyUnicode_FromFormat("%s=%s names no compiler of %U (it has: %s)", cs->ctrl_var, want, self->device, names);
    if (key) { PyErr_SetObject(PyExc_KeyError, key); Py_DECREF(key); }   /* tinygrad: the KeyError of its comp_sets lookup */
    return -1;
  }
  int n = 0;
  for (int i = 0; i < cs->npairs; i++) {
    long v;
    if (!cs->pairs[i].ctrl_var) continue;
    if (ctrl_value(cs->pairs[i].ctrl_var, &v) < 0) return -1;
    if (v == 1) *forced |= 1u << i, n++;
  }
  if (n > 1) { PyErr_Format(PyExc_RuntimeError, "%U: multiple compilers set in env", self->device); return -1; }
  return 0;
}

/* every pair, less those whose own switch is 0 */
static int enabled_pairs(const CompilerSet *cs, unsigned *enabled) {
  *enabled = 0;
  for (int i = 0; i < cs->npairs; i++) {
    long v = 1;
    if (cs->pairs[i].ctrl_var && ctrl_value(cs->pairs[i].ctrl_var, &v) < 0) return -1;
    if (v != 0) *enabled |= 1u << i;
  }
  return 0;
}

/* the exception being raised, taken (its traceback attached); NULL when none */
static PyObject *take_exception(void) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value && tb) PyException_SetTraceback(value, tb);
  Py_XDECREF(type); Py_XDECREF(tb);
  return value;
}

/* the device's pair from now on: a (renderer, compiler) tuple of self->made */
static void choose(CompiledObject *self, PyObject *made_pair) {
  Py_XSETREF(self->renderer, Py_NewRef(PyTuple_GET_ITEM(made_pair, 0)));
  Py_XSETREF(self->compiler, Py_NewRef(PyTuple_GET_ITEM(made_pair, 1)));
}

/* tinygrad's select_first_inited with its cache: the first candidate made before, or the first whose renderer (and
 * compiler) construct; else an ExceptionGroup of why each failed */
static int first_inited(CompiledObject *self, const CompilerSet *cs, unsigned candidates) {
  if (!self->made) {
    if (!(self->made = PyList_New(cs->npairs))) return -1;
    for (int i = 0; i < cs->npairs; i++) PyList_SET_ITEM(self->made, i, Py_NewRef(Py_None));
  }
  PyObject *errors = PyList_New(0);
  if (!errors) return -1;
  for (int i = 0; i < cs->npairs; i++) {
    if (!(candidates & (1u << i))) continue;
    PyObject *hit = PyList_GET_ITEM(self->made, i);
    if (hit != Py_None) { choose(self, hit); Py_DECREF(errors); return 0; }
    const CompilerPair *pair = &cs->pairs[i];
    PyObject *r = pair->renderer(), *c = r && pair->compiler ? pair->compiler() : NULL;
    if (r && (c || !pair->compiler)) {
      PyObject *made_pair = PyTuple_Pack(2, r, c ? c : Py_None);
      Py_DECREF(r); Py_XDECREF(c);
      if (made_pair) { PyList_SetItem(self->made, i, made_pair); choose(self, made_pair); }   /* the list takes it */
      Py_DECREF(errors);
      return made_pair ? 0 : -1;
    }
    Py_XDECREF(r);
    PyObject *e = take_exception();
    if (!e || PyList_Append(errors, e) < 0) { Py_XDECREF(e); Py_DECREF(errors); return -1; }
    Py_DECREF(e);
  }
  PyObject *group = PyDict_GetItemString(PyEval_GetBuiltins(), "ExceptionGroup");   /* Python >= 3.11 */
  if (group && PyList_GET_SIZE(errors)) {
    PyObject *msg = PyUnicode_FromFormat("No compiler for %U is available", self->device);
    PyObject *eg = msg ? PyObject_CallFunctionObjArgs(group, msg, errors, NULL) : NULL;
    if (eg) PyErr_SetObject((PyObject *)Py_TYPE(eg), eg);
    Py_XDECREF(msg); Py_XDECREF(eg);
  } else PyErr_Format(PyExc_RuntimeError, "No compiler for %U is available", self->device);
  Py_DECREF(errors);
  return -1;
}

/* tinygrad's Compiled._select_compiler_pair, at each use of renderer or compiler: the ctrl vars as a Context has them
 * now (with Context(CPU_LLVM=1): Device["CPU"].renderer is the LLVM renderer), each pair made once */
static int select_compiler_pair(CompiledObject *self) {
  const CompilerSet *cs = &self->def->compilers;
  unsigned forced, enabled;
  if (forced_pairs(self, cs, &forced) < 0) return -1;
  if (!forced && enabled_pairs(cs, &enabled) < 0) return -1;
  return first_inited(self, cs, forced ? forced : enabled);
}

static PyObject *Compiled_get_renderer(CompiledObject *self, void *c) {
  UNUSED(c);
  return select_compiler_pair(self) < 0 ? NULL : Py_NewRef(self->renderer);
}

/* the renderer's compiler, else the pair's (tinygrad: renderer.compiler or the pair's compiler) */
static PyObject *Compiled_get_compiler(CompiledObject *self, void *c) {
  UNUSED(c);
  if (select_compiler_pair(self) < 0) return NULL;
  PyObject *rc = getattr_literal(self->renderer, "compiler");
  int truth = rc ? PyObject_IsTrue(rc) : -1;
  if (truth > 0) return rc;
  Py_XDECREF(rc);
  if (truth < 0) return NULL;
  if (self->compiler != Py_None) return Py_NewRef(self->compiler);
  return PyErr_Format(PyExc_RuntimeError, "no compiler for %U", self->device);
}

static PyObject *Compiled_synchronize(CompiledObject *self, PyObject *unused) {
  UNUSED(unused);
  if (self->def->synchronize(self->dev) < 0) return NULL;
  Py_RETURN_NONE;
}
static PyObject *Compiled_repr(CompiledObject *self) { return PyUnicode_FromFormat("<%s %S>", Py_TYPE(self)->tp_name, self->device); }

static PyMethodDef Compiled_methods[] = {
  {"synchronize", (PyCFunction)Compiled_synchronize, METH_NOARGS, "wait for the device's work to finish"},
  {NULL, NULL, 0, NULL},
};
static PyMemberDef Compiled_members[] = {
  {"device", T_OBJECT, offsetof(CompiledObject, device), READONLY, NULL},
  {"allocator", T_OBJECT, offsetof(CompiledObject, allocator), READONLY, NULL},
  {"runtime", T_OBJECT, offsetof(CompiledObject, runtime), READONLY, "runtime(name, lib) -> a program"},
  {NULL, 0, 0, 0, NULL},
};
static PyGetSetDef Compiled_getset[] = {
  {"renderer", (getter)Compiled_get_renderer, NULL, "the renderer of the chosen pair (CompilerSet order, the ctrl vars)", NULL},
  {"compiler", (getter)Compiled_get_compiler, NULL, "the renderer's compiler, else the chosen pair's", NULL},
  {NULL, NULL, NULL, NULL, NULL},
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
  .tp_getset = Compiled_getset,
  .tp_dictoffset = offsetof(CompiledObject, dict),
};

/* ================================================================================================
 * The device table, Device[name] and Device.DEFAULT
 * ================================================================================================ */

/* one row per device tinyc has, each opened by its file in devices/ */
static const struct { const char *name; DeviceOpen open; } device_table[] = {
  {"CPU", cpu_open},
  {"NULL", null_open},
  {"PYTHON", python_open},
};
#define N_DEVICES (sizeof(device_table) / sizeof(device_table[0]))

/* the device names tinygrad's runtime has (its ops_*.py, less DISK, TINYFS and NPY): their environment variables select
 * Device.DEFAULT even where tinyc cannot open them */
static const char *const tinygrad_devices[] = {"AMD", "CL", "CPU", "CUDA", "DSP", "HIP", "METAL", "NULL", "NV", "PYTHON", "QCOM", "WEBGPU"};
/* tinygrad's ALL_DEVICES: the order Device.DEFAULT tries them in when no variable selects one */
static const char *const all_devices[] = {"METAL", "AMD", "NV", "CUDA", "QCOM", "CL", "CPU", "DSP", "WEBGPU"};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static PyObject *opened_devices;   /* dict canonical name -> Compiled */

PyObject *device_canonicalize(PyObject *name) {
  if (!PyUnicode_Check(name)) return PyErr_Format(PyExc_TypeError, "device names are str, got %.100s", Py_TYPE(name)->tp_name);
  /* tinygrad: the part before ':' upper-cased, ":0" dropped */
  Py_ssize_t n = PyUnicode_GetLength(name), colon = PyUnicode_FindChar(name, ':', 0, n, 1);
  if (colon == -2) return NULL;
  PyObject *head = PyUnicode_Substring(name, 0, colon < 0 ? n : colon);
  if (!head) return NULL;
  PyObject *upper = PyObject_CallMethodNoArgs(head, str_upper);
  Py_DECREF(head);
  if (!upper || colon < 0) return upper;
  PyObject *tail = PyUnicode_Substring(name, colon, n);
  if (!tail) { Py_DECREF(upper); return NULL; }
  PyObject *ret = PyUnicode_CompareWithASCIIString(tail, ":0") == 0 ? Py_NewRef(upper) : PyUnicode_Concat(upper, tail);
  Py_DECREF(upper); Py_DECREF(tail);
  return ret;
}

/* "CPU, NULL": the names of the table's rows, into out */
static void device_names(char *out, size_t n) {
  out[0] = 0;
  for (size_t i = 0; i < N_DEVICES; i++) snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? ", " : "", device_table[i].name);
}

static bool is_tinygrad_device(const char *name) {
  for (size_t i = 0; i < N_OF(tinygrad_devices); i++) if (strcmp(tinygrad_devices[i], name) == 0) return true;
  return false;
}

/* open the device `canon` through its row: a new Compiled of the row's type, with its allocator and runtime */
static PyObject *device_open(PyObject *canon) {
  const char *name = PyUnicode_AsUTF8(canon);
  if (!name) return NULL;
  size_t len = strcspn(name, ":");
  for (size_t i = 0; i < N_DEVICES; i++) {
    if (strlen(device_table[i].name) != len || strncmp(device_table[i].name, name, len) != 0) continue;
    void *state = NULL;
    const DeviceDef *def = device_table[i].open(canon, &state);
    if (!def) return NULL;
    CompiledObject *dev = (CompiledObject *)def->type->tp_alloc(def->type, 0);
    AllocatorObject *alloc = dev ? PyObject_New(AllocatorObject, &Allocator_Type) : NULL;
    if (!alloc) { Py_XDECREF(dev); return NULL; }
    alloc->device = Py_NewRef(canon), alloc->vt = &def->allocator, alloc->dev = state;
    dev->device = Py_NewRef(canon), dev->allocator = (PyObject *)alloc, dev->runtime = Py_NewRef((PyObject *)def->program_type);
    dev->def = def, dev->dev = state;
    return (PyObject *)dev;
  }
  char head[64], have[256];
  snprintf(head, sizeof(head), "%.*s", (int)(len < sizeof(head) ? len : sizeof(head) - 1), name);
  device_names(have, sizeof(have));
  if (is_tinygrad_device(head)) PyErr_Format(PyExc_RuntimeError, "can't open device %R: tinyc has no %s device (it has: %s)", canon, head, have);
  else PyErr_Format(PyExc_RuntimeError, "unknown device %R (tinyc has: %s)", canon, have);
  return NULL;
}

PyObject *device_get(PyObject *name) {
  PyObject *canon = device_canonicalize(name);
  if (!canon) return NULL;
  PyObject *dev = PyDict_GetItemWithError(opened_devices, canon);
  if (dev) { Py_DECREF(canon); return Py_NewRef(dev); }
  if (!PyErr_Occurred() && (dev = device_open(canon)) && PyDict_SetItem(opened_devices, canon, dev) < 0) Py_CLEAR(dev);
  Py_DECREF(canon);
  return dev;
}

/* os.environ[name] = "1": tinygrad writes the default it found back, for the processes this one spawns */
static int environ_set_one(PyObject *name) {
  PyObject *os = PyImport_ImportModule("os"), *env = os ? getattr_literal(os, "environ") : NULL, *one = PyUnicode_FromString("1");
  int rc = env && one ? PyObject_SetItem(env, name, one) : -1;
  Py_XDECREF(os); Py_XDECREF(env); Py_XDECREF(one);
  return rc;
}

/* the first device of tinygrad's ALL_DEVICES that opens (tinygrad's get_available_devices); new reference */
static PyObject *first_available_device(void) {
  for (size_t i = 0; i < N_OF(all_devices); i++) {
    PyObject *name = PyUnicode_FromString(all_devices[i]), *dev = name ? device_get(name) : NULL;
    Py_XDECREF(name);
    if (dev) {
      PyObject *ret = Py_NewRef(((CompiledObject *)dev)->device);
      Py_DECREF(dev);
      return ret;
    }
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;   /* tinygrad suppresses Exception only */
    PyErr_Clear();
  }
  return PyErr_Format(PyExc_RuntimeError, "no usable devices");
}

/* the devices the environment selects: DEV (upper-cased), then every tinygrad device name whose variable is 1 */
static PyObject *devices_from_env(void) {
  PyObject *from_env = PyList_New(0);
  if (!from_env) return NULL;
  const char *dev = getenv("DEV");
  if (dev && *dev) {
    PyObject *s = PyUnicode_FromString(dev), *u = s ? PyObject_CallMethodNoArgs(s, str_upper) : NULL;
    int rc = u ? PyList_Append(from_env, u) : -1;
    Py_XDECREF(s); Py_XDECREF(u);
    if (rc < 0) { Py_DECREF(from_env); return NULL; }
  }
  for (size_t i = 0; i < N_OF(tinygrad_devices); i++) {
    long v = 0;
    if (env_int(tinygrad_devices[i], &v) < 0) { Py_DECREF(from_env); return NULL; }
    if (v != 1) continue;
    PyObject *s = PyUnicode_FromString(tinygrad_devices[i]);
    int seen = s ? PySequence_Contains(from_env, s) : -1;
    if (seen < 0 || (!seen && PyList_Append(from_env, s) < 0)) { Py_XDECREF(s); Py_DECREF(from_env); return NULL; }
    Py_DECREF(s);
  }
  return from_env;
}

static PyObject *default_device;   /* Device.DEFAULT, once found */

/* Device.DEFAULT as tinygrad's cached_property finds it: the one device the environment selects, else the first that
 * opens (written back to os.environ). New reference. */
static PyObject *device_default(void) {
  if (default_device) return Py_NewRef(default_device);
  PyObject *from_env = devices_from_env();
  if (!from_env) return NULL;
  Py_ssize_t n = PyList_GET_SIZE(from_env);
  if (n > 1) PyErr_Format(PyExc_AssertionError, "multiple devices set in env: %R", from_env);
  else if (n == 1) default_device = Py_NewRef(PyList_GET_ITEM(from_env, 0));
  else if ((default_device = first_available_device()) && environ_set_one(default_device) < 0) Py_CLEAR(default_device);
  Py_DECREF(from_env);
  return Py_XNewRef(default_device);
}

/* tinyc.Device: Device["CPU"], Device.DEFAULT, Device.default, Device.canonicalize(name) */
typedef struct { PyObject_HEAD PyObject *dict; } DeviceRegistryObject;

static PyObject *Registry_getitem(PyObject *self, PyObject *key) { UNUSED(self); return device_get(key); }
static PyMappingMethods Registry_as_mapping = {NULL, Registry_getitem, NULL};
static PyObject *Registry_canonicalize(PyObject *self, PyObject *name) {
  UNUSED(self);
  if (name != Py_None) return device_canonicalize(name);
  PyObject *dflt = device_default(), *ret = dflt ? device_canonicalize(dflt) : NULL;
  Py_XDECREF(dflt);
  return ret;
}
static PyObject *Registry_get_DEFAULT(PyObject *self, void *c) { UNUSED(self); UNUSED(c); return device_default(); }
static PyObject *Registry_get_default(PyObject *self, void *c) {
  UNUSED(self); UNUSED(c);
  PyObject *name = device_default(), *dev = name ? device_get(name) : NULL;
  Py_XDECREF(name);
  return dev;
}
static void Registry_dealloc(DeviceRegistryObject *self) { Py_XDECREF(self->dict); Py_TYPE(self)->tp_free((PyObject *)self); }
static PyObject *Registry_iter(PyObject *self) {
  UNUSED(self);
  return PyObject_GetIter(opened_devices);
}
static PyMethodDef Registry_methods[] = {
  {"canonicalize", Registry_canonicalize, METH_O, "canonicalize(name): 'cpu' -> 'CPU', 'CPU:0' -> 'CPU', None -> Device.DEFAULT"},
  {NULL, NULL, 0, NULL},
};
static PyGetSetDef Registry_getset[] = {
  {"DEFAULT", (getter)Registry_get_DEFAULT, NULL, "the default device: $DEV, else the one device set to 1 in the environment, else the first that opens", NULL},
  {"default", (getter)Registry_get_default, NULL, "Device[Device.DEFAULT]", NULL},
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

/* ================================================================================================
 * is_dtype_supported
 * ================================================================================================ */

/* tinygrad's switches, read once at import as its ContextVars are */
static bool env_CI, env_OSX, env_CPU_LVP, env_CPU_LLVM, env_CUDA_PTX, env_NV_PTX, env_NV_NAK, env_NULL_IR3;
static bool machine_bf16;   /* platform.machine() in {"arm", "arm64", "aarch64", "x86_64", "amd64"} */

static bool str_in(const char *s, const char *const *set) {
  for (int i = 0; set[i]; i++) if (strcmp(s, set[i]) == 0) return true;
  return false;
}

/* Device["AMD"].target in {(9,4,2), (9,5,0)}: the AMD targets with fp8 (opening the device, as tinygrad does) */
static int amd_has_fp8(void) {
  PyObject *name = PyUnicode_FromString("AMD"), *dev = name ? device_get(name) : NULL, *target = dev ? getattr_literal(dev, "target") : NULL;
  PyObject *ok = target ? Py_BuildValue("{(iii)O(iii)O}", 9, 4, 2, Py_None, 9, 5, 0, Py_None) : NULL;
  int ret = ok ? PySequence_Contains(ok, target) : -1;
  Py_XDECREF(name); Py_XDECREF(dev); Py_XDECREF(target); Py_XDECREF(ok);
  return ret;
}

static int is_dtype_supported(DType *dt, PyObject *device) {
  if (dt == DTYPE(INDEX)) return 0;
  PyObject *devobj = device && device != Py_None ? Py_NewRef(device) : device_default();
  if (!devobj) return -1;
  /* a device that is not a str equals none of the names (tinygrad compares with ==) */
  const char *dev = PyUnicode_Check(devobj) ? PyUnicode_AsUTF8(devobj) : "";
  int ret = 1;
  if (!dev) ret = -1;
  else if (dt == DTYPE(BFLOAT16)) {
    if (!strcmp(dev, "METAL")) ret = !env_CI;
    else if (!strcmp(dev, "CUDA")) ret = !env_CI && !env_CUDA_PTX;
    else if (!strcmp(dev, "NV")) ret = !env_CI && !env_NV_PTX && !env_NV_NAK;
    else if (!strcmp(dev, "CPU")) ret = !env_CI && machine_bf16 && !env_CPU_LVP;
    else ret = str_in(dev, (const char *const[]){"AMD", "CL", "PYTHON", "NULL", NULL});
  } else if (dt == DTYPE(FP8E4M3) || dt == DTYPE(FP8E5M2)) {
    if (!strcmp(dev, "CUDA")) ret = !env_CI && !env_CUDA_PTX;
    else if (!strcmp(dev, "NV")) ret = !env_CI && !env_NV_PTX && !env_NV_NAK;
    else if (!strcmp(dev, "AMD")) ret = env_CI ? 0 : amd_has_fp8();
    else ret = str_in(dev, (const char *const[]){"PYTHON", "NULL", NULL});
  } else if (!strcmp(dev, "WEBGPU")) {
    ret = dt == DTYPE(BOOL) || dt == DTYPE(INT8) || dt == DTYPE(UINT8) || dt == DTYPE(INT16) || dt == DTYPE(UINT16) ||
          dt == DTYPE(FLOAT32) || dt == DTYPE(INT32) || dt == DTYPE(UINT32) || dt == DTYPE(FLOAT16);
  } else if (dt == DTYPE(FLOAT16) && !strcmp(dev, "CL")) ret = !env_CI && !env_OSX;
  else if (dt == DTYPE(FLOAT16) && !strcmp(dev, "QCOM")) ret = 0;   /* its compiler is flaky with half */
  else if (dt == DTYPE(FLOAT16) && (!strcmp(dev, "CUDA") || !strcmp(dev, "NV"))) ret = !env_CI;
  else if (dt == DTYPE(FLOAT16) && !strcmp(dev, "CPU") && env_CPU_LLVM) ret = env_OSX;
  else if (dt == DTYPE(FLOAT16) && !strcmp(dev, "PYTHON")) ret = PY_VERSION_HEX >= 0x030C0000;
  else if (dt == DTYPE(FLOAT64)) ret = strcmp(dev, "METAL") && strcmp(dev, "QCOM") && !(env_OSX && !strcmp(dev, "CL")) && !env_NULL_IR3;
  Py_DECREF(devobj);
  return ret;
}

static int init_dtype_switches(void) {
  struct utsname un;
  machine_bf16 = uname(&un) == 0 && str_in(un.machine, (const char *const[]){"arm", "arm64", "aarch64", "x86_64", "amd64", NULL});
  const char *ci = getenv("CI");
  env_CI = ci && *ci;
#ifdef __APPLE__
  env_OSX = true;
#endif
  return ctxvar_flag("CPU_LVP", &env_CPU_LVP) < 0 || ctxvar_flag("CPU_LLVM", &env_CPU_LLVM) < 0 || ctxvar_flag("CUDA_PTX", &env_CUDA_PTX) < 0 ||
         ctxvar_flag("NV_PTX", &env_NV_PTX) < 0 || ctxvar_flag("NV_NAK", &env_NV_NAK) < 0 || ctxvar_flag("NULL_IR3", &env_NULL_IR3) < 0 ? -1 : 0;
}

static PyObject *py_is_dtype_supported(PyObject *self, PyObject *args, PyObject *kw) {
  UNUSED(self);
  static char *kwlist[] = {"dtype", "device", NULL};
  PyObject *dt, *device = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|O:is_dtype_supported", kwlist, &DType_Type, &dt, &device)) return NULL;
  int r = is_dtype_supported((DType *)dt, device);
  return r < 0 ? NULL : PyBool_FromLong(r);
}

/* ================================================================================================
 * compile_stats and init
 * ================================================================================================ */

static struct { const char *name; Py_ssize_t *counter; } stats[8];
static int nstats;

int compile_stats_add(const char *name, Py_ssize_t *counter) {
  if (nstats == (int)N_OF(stats)) { PyErr_Format(PyExc_RuntimeError, "compile_stats has no room for %s", name); return -1; }
  stats[nstats].name = name, stats[nstats].counter = counter, nstats++;
  return 0;
}

/* _C.compile_stats(reset=False) -> dict of the counters since import (or the last reset) */
static PyObject *py_compile_stats(PyObject *self, PyObject *args, PyObject *kw) {
  UNUSED(self);
  static char *kwlist[] = {"reset", NULL};
  int reset = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:compile_stats", kwlist, &reset)) return NULL;
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < nstats; i++) {
    PyObject *v = PyLong_FromSsize_t(*stats[i].counter);
    if (!v || PyDict_SetItemString(d, stats[i].name, v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  for (int i = 0; d && reset && i < nstats; i++) *stats[i].counter = 0;
  return d;
}

static PyMethodDef device_functions[] = {
  {"compile_stats", (PyCFunction)(void (*)(void))py_compile_stats, METH_VARARGS | METH_KEYWORDS,
   "compile_stats(reset=False) -> {compiles, cache_hits, cache_misses, programs_loaded, and each compiler's own (clang_runs)}"},
  {"is_dtype_supported", (PyCFunction)(void (*)(void))py_is_dtype_supported, METH_VARARGS | METH_KEYWORDS,
   "is_dtype_supported(dtype, device=None): tinygrad's table; device None is Device.DEFAULT"},
  {NULL, NULL, 0, NULL},
};

static int add_names(PyObject *m, const char *attr, const char *const *names, size_t n) {
  PyObject *l = PyList_New(0);
  for (size_t i = 0; l && i < n; i++) {
    PyObject *s = PyUnicode_FromString(names[i]);
    if (!s || PyList_Append(l, s) < 0) Py_CLEAR(l);
    Py_XDECREF(s);
  }
  int rc = l ? tinyc_add(m, attr, l) : -1;
  Py_XDECREF(l);
  return rc;
}

int tinyc_init_device(PyObject *m) {
  if (PyType_Ready(&Allocator_Type) < 0 || PyType_Ready(&Buffer_Type) < 0 || PyType_Ready(&Compiler_Type) < 0 ||
      PyType_Ready(&Program_Type) < 0 || PyType_Ready(&Compiled_Type) < 0 || PyType_Ready(&DeviceRegistry_Type) < 0) return -1;
  if (!(opened_devices = PyDict_New()) || !(str_upper = PyUnicode_InternFromString("upper")) ||
      init_dtype_switches() < 0 ||
      ctxvar_env(&ccache) < 0) return -1;
  uop_is_dtype_supported = is_dtype_supported;   /* the uop layer asks through this; it can't call up into the device layer */
  if (compile_stats_add("compiles", &stat_compiles) < 0 || compile_stats_add("cache_hits", &stat_cache_hits) < 0 ||
      compile_stats_add("cache_misses", &stat_cache_misses) < 0 || compile_stats_add("programs_loaded", &stat_programs_loaded) < 0) return -1;
  if (!CompileError && !(CompileError = PyErr_NewExceptionWithDoc("tinyc.CompileError", "a compiler failed; the message holds its log",
                                                                    PyExc_RuntimeError, NULL))) return -1;
  PyObject *registry = PyType_GenericAlloc(&DeviceRegistry_Type, 0);
  if (!registry) return -1;
  int rc = tinyc_add(m, "Device", registry);
  Py_DECREF(registry);
  return rc < 0 || tinyc_add(m, "Allocator", (PyObject *)&Allocator_Type) < 0 || tinyc_add(m, "Buffer", (PyObject *)&Buffer_Type) < 0 ||
    tinyc_add(m, "Compiler", (PyObject *)&Compiler_Type) < 0 || tinyc_add(m, "Compiled", (PyObject *)&Compiled_Type) < 0 ||
    tinyc_add(m, "Program", (PyObject *)&Program_Type) < 0 || tinyc_add(m, "CompileError", CompileError) < 0 ||
    add_names(m, "ALL_DEVICES", all_devices, N_OF(all_devices)) < 0 || PyModule_AddFunctions(m, device_functions) < 0 ? -1 : 0;
}
