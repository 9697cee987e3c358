/* tinygrad/runtime/ops_cpu.py in C: the CPU device. Its allocator hands out zeroed, 64-byte aligned host memory; its
 * program loads the shared object ClangCompiler made straight from memory (memfd_create + dlopen of
 * /proc/self/fd/N: no file is left behind) and calls the kernel in tinygrad's CPU calling convention:
 *   void kernel(T0 *data0, T1 *data1, ..., int var0, int var1, ..., int core_id)
 * (buffers in DEFINE_GLOBAL order, then the variables in order, then the thread index; ClangRenderer writes this
 * signature). A launch with global_size[0] = n runs the kernel on n threads, core_id 0..n-1, as tinygrad's
 * CPUComputeQueue does; the GIL is released while it runs. */
#include "../device.h"
#include "../renderers/renderer.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <structmember.h>

/* ---- allocator: small buffers from the heap, big ones (>= 1 MiB) straight from mmap (both zeroed) ---- */

#define CPU_MMAP_MIN (1 << 20)

static void *cpu_alloc(size_t nbytes) {
  if (nbytes >= CPU_MMAP_MIN) {
    void *p = mmap(NULL, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
  }
  size_t rounded = (nbytes + 63) & ~(size_t)63;
  void *p = aligned_alloc(64, rounded);
  if (p) memset(p, 0, rounded);
  return p;
}

static void cpu_free(void *ptr, size_t nbytes) {
  if (nbytes >= CPU_MMAP_MIN) munmap(ptr, nbytes);
  else free(ptr);
}

/* ---- program ---- */

static void CPUProgram_dealloc(CPUProgramObject *self) {
  if (self->handle) dlclose(self->handle);
  if (self->fd >= 0) close(self->fd);   /* after dlclose: while the object is loaded its fd number (its name) stays taken */
  Py_XDECREF(self->name);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* CPUProgram(name, lib, *aux): load lib (a shared object's bytes) and find the function `name` in it */
static PyObject *CPUProgram_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  if (kw && PyDict_GET_SIZE(kw)) return PyErr_Format(PyExc_TypeError, "CPUProgram takes no keyword arguments");
  if (PyTuple_GET_SIZE(args) < 2) return PyErr_Format(PyExc_TypeError, "CPUProgram(name, lib) needs a name and the library's bytes");
  PyObject *name = PyTuple_GET_ITEM(args, 0), *libobj = PyTuple_GET_ITEM(args, 1);
  if (!PyUnicode_Check(name)) return PyErr_Format(PyExc_TypeError, "CPUProgram name must be str, got %.100s", Py_TYPE(name)->tp_name);
  const char *fname = PyUnicode_AsUTF8(name);
  if (!fname) return NULL;
  Py_buffer lib;
  if (PyObject_GetBuffer(libobj, &lib, PyBUF_SIMPLE) < 0) return NULL;
  if (lib.len < 64 || memcmp(lib.buf, "\x7f" "ELF", 4) != 0) {
    PyBuffer_Release(&lib);
    return PyErr_Format(PyExc_RuntimeError, "can't load program %R: lib is not an ELF shared object (%zd bytes)", name, lib.len);
  }
  CPUProgramObject *self = (CPUProgramObject *)type->tp_alloc(type, 0);
  if (!self) { PyBuffer_Release(&lib); return NULL; }
  self->fd = -1, self->name = Py_NewRef(name);
  int fd = memfd_create("tinyc-kernel", MFD_CLOEXEC);
  bool written = fd >= 0;
  for (Py_ssize_t off = 0; written && off < lib.len;) {
    ssize_t w = write(fd, (char *)lib.buf + off, (size_t)(lib.len - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) written = false;
    else off += w;
  }
  PyBuffer_Release(&lib);
  if (!written) {
    if (fd >= 0) close(fd);
    Py_DECREF(self);
    return PyErr_Format(PyExc_OSError, "can't load program %R: memfd: %s", name, strerror(errno));
  }
  self->fd = fd;
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  self->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!self->handle) {
    const char *e = dlerror();
    PyErr_Format(PyExc_RuntimeError, "can't load program %R: %s", name, e ? e : "dlopen failed");
    Py_DECREF(self);
    return NULL;
  }
  dlerror();
  self->fxn = dlsym(self->handle, fname);
  if (!self->fxn) {
    PyErr_Format(PyExc_RuntimeError, "can't load program %R: the library has no function %R", name, name);
    Py_DECREF(self);
    return NULL;
  }
  stat_programs_loaded++;
  return (PyObject *)self;
}

/* Every kernel is called through one pointer type with CPU_MAX_KERNEL_ARGS integer-class arguments. On the
 * System V x86-64 and AAPCS64 ABIs pointers and ints travel in the same 64-bit slots (registers, then 8-byte stack
 * slots) and the caller owns the stack arguments, so a kernel taking fewer arguments reads exactly its own and
 * ignores the rest; an int parameter reads the low 32 bits of its slot. */
#define U8 uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t
typedef void (*kernel_fn)(U8, U8, U8, U8, U8, U8, U8, U8);
#undef U8
#define A8(i) a[i], a[i + 1], a[i + 2], a[i + 3], a[i + 4], a[i + 5], a[i + 6], a[i + 7]
static void call_kernel(void *fxn, const uint64_t *a) {
  kernel_fn f;
  memcpy(&f, &fxn, sizeof(f));
  f(A8(0), A8(8), A8(16), A8(24), A8(32), A8(40), A8(48), A8(56));
}
#undef A8

typedef struct { void *fxn; uint64_t args[CPU_MAX_KERNEL_ARGS]; } ThreadCall;
static void *thread_main(void *p) { ThreadCall *c = p; call_kernel(c->fxn, c->args); return NULL; }

int cpu_program_launch(CPUProgramObject *prg, BufferObject *const *bufs, Py_ssize_t nbufs, const int64_t *vals, Py_ssize_t nvals,
                       Py_ssize_t threads, double *elapsed) {
  if (nbufs + nvals + 1 > CPU_MAX_KERNEL_ARGS) {
    PyErr_Format(PyExc_ValueError, "%S takes %zd buffers and %zd vars: more than the %d arguments a CPU launch supports", prg->name,
                 nbufs, nvals, CPU_MAX_KERNEL_ARGS - 1);
    return -1;
  }
  if (threads < 1 || threads > 4096) {
    PyErr_Format(PyExc_ValueError, "%S: global_size[0] is the CPU thread count and must be in 1..4096, got %zd", prg->name, threads);
    return -1;
  }
  for (Py_ssize_t i = 0; i < nbufs; i++) {
    if (!bufs[i]->ptr) { PyErr_Format(PyExc_RuntimeError, "%S: buffer %zd is not allocated", prg->name, i); return -1; }
    if (bufs[i]->allocator->free != cpu_free) { PyErr_Format(PyExc_ValueError, "%S: buffer %zd is on %S, not CPU", prg->name, i, bufs[i]->device); return -1; }
  }
  ThreadCall *calls = PyMem_RawCalloc((size_t)threads, sizeof(ThreadCall));
  pthread_t *tids = PyMem_RawCalloc((size_t)threads, sizeof(pthread_t));
  if (!calls || !tids) { PyMem_RawFree(calls); PyMem_RawFree(tids); PyErr_NoMemory(); return -1; }
  for (Py_ssize_t t = 0; t < threads; t++) {
    calls[t].fxn = prg->fxn;
    for (Py_ssize_t i = 0; i < nbufs; i++) calls[t].args[i] = (uint64_t)(uintptr_t)bufs[i]->ptr;
    for (Py_ssize_t i = 0; i < nvals; i++) calls[t].args[nbufs + i] = (uint64_t)vals[i];
    calls[t].args[nbufs + nvals] = (uint64_t)t;
  }
  for (Py_ssize_t i = 0; i < nbufs; i++) bufs[i]->exports++;   /* no deallocate() while the kernel runs */
  double t0, t1;
  Py_BEGIN_ALLOW_THREADS
  t0 = device_now();
  bool *started = threads > 1 ? calloc((size_t)threads, sizeof(bool)) : NULL;
  for (Py_ssize_t t = 1; t < threads; t++)   /* a thread that can't start runs inline below */
    if (started) started[t] = pthread_create(&tids[t], NULL, thread_main, &calls[t]) == 0;
  call_kernel(calls[0].fxn, calls[0].args);
  for (Py_ssize_t t = 1; t < threads; t++) {
    if (started && started[t]) pthread_join(tids[t], NULL);
    else call_kernel(calls[t].fxn, calls[t].args);
  }
  free(started);
  t1 = device_now();
  Py_END_ALLOW_THREADS
  for (Py_ssize_t i = 0; i < nbufs; i++) bufs[i]->exports--;
  PyMem_RawFree(calls); PyMem_RawFree(tids);
  if (elapsed) *elapsed = t1 - t0;
  return 0;
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

/* prg(*bufs, global_size=(1,1,1), local_size=None, vals=(), wait=False) -> seconds when wait, else None */
static PyObject *CPUProgram_call(CPUProgramObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"global_size", "local_size", "vals", "wait", NULL};
  PyObject *gs = Py_None, *ls = Py_None, *vals = NULL;
  int wait = 0;
  PyObject *empty = PyTuple_New(0);
  if (!empty) return NULL;
  int ok = PyArg_ParseTupleAndKeywords(empty, kw, "|OOOp:CPUProgram", kwlist, &gs, &ls, &vals, &wait);
  Py_DECREF(empty);
  if (!ok) return NULL;
  UNUSED(ls);
  Py_ssize_t nbufs = PyTuple_GET_SIZE(args), nvals = 0, threads = 1;
  if (nbufs > CPU_MAX_KERNEL_ARGS) return PyErr_Format(PyExc_ValueError, "%S: too many buffers (%zd)", self->name, nbufs);
  BufferObject *bufs[CPU_MAX_KERNEL_ARGS];
  int64_t ivals[CPU_MAX_KERNEL_ARGS];
  for (Py_ssize_t i = 0; i < nbufs; i++) {
    PyObject *b = PyTuple_GET_ITEM(args, i);
    if (!Buffer_Check(b)) return PyErr_Format(PyExc_TypeError, "%S: argument %zd must be a tinyc.Buffer, got %.100s", self->name, i, Py_TYPE(b)->tp_name);
    bufs[i] = (BufferObject *)b;
  }
  if (vals && vals != Py_None) {
    PyObject *seq = PySequence_Fast(vals, "vals must be a sequence of ints");
    if (!seq) return NULL;
    nvals = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < nvals && i < CPU_MAX_KERNEL_ARGS; i++)
      if (var_value(PySequence_Fast_GET_ITEM(seq, i), &ivals[i], self->name, i) < 0) { Py_DECREF(seq); return NULL; }
    Py_DECREF(seq);
  }
  if (gs != Py_None) {
    PyObject *g0 = PySequence_GetItem(gs, 0);
    if (!g0) return NULL;
    threads = PyLong_AsSsize_t(g0);
    Py_DECREF(g0);
    if (threads == -1 && PyErr_Occurred()) return NULL;
  }
  double t;
  if (cpu_program_launch(self, bufs, nbufs, ivals, nvals, threads, &t) < 0) return NULL;
  if (wait) return PyFloat_FromDouble(t);
  Py_RETURN_NONE;
}

static PyObject *CPUProgram_repr(CPUProgramObject *self) { return PyUnicode_FromFormat("<CPUProgram %S>", self->name); }
static PyMemberDef CPUProgram_members[] = {
  {"name", T_OBJECT, offsetof(CPUProgramObject, name), READONLY, NULL},
  {NULL, 0, 0, 0, NULL},
};

PyTypeObject CPUProgram_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.CPUProgram",
  .tp_basicsize = sizeof(CPUProgramObject),
  .tp_dealloc = (destructor)CPUProgram_dealloc,
  .tp_repr = (reprfunc)CPUProgram_repr,
  .tp_call = (ternaryfunc)CPUProgram_call,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "tinygrad's CPUProgram(name, lib): the kernel `name` of a shared object, loaded from memory; "
            "prg(*bufs, global_size=, local_size=, vals=, wait=)",
  .tp_members = CPUProgram_members,
  .tp_new = CPUProgram_new,
};

/* ---- the device ---- */

static PyTypeObject CPUDevice_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.CPUDevice",
  .tp_basicsize = sizeof(CompiledObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "tinygrad's CPUDevice: ClangRenderer + ClangCompiler, host memory, programs loaded from memory",
  .tp_base = &Compiled_Type,
};

PyObject *cpu_device_new(void) {
  CompiledObject *dev = PyObject_GC_New(CompiledObject, &CPUDevice_Type);
  if (!dev) return NULL;
  dev->device = dev->allocator = dev->renderer = dev->compiler = dev->runtime = dev->dict = NULL;
  PyObject_GC_Track(dev);
  AllocatorObject *alloc = PyObject_New(AllocatorObject, &Allocator_Type);
  if (!alloc) goto fail;
  alloc->device = PyUnicode_FromString("CPU"), alloc->alloc = cpu_alloc, alloc->free = cpu_free;
  dev->allocator = (PyObject *)alloc;
  if (!alloc->device || !(dev->device = PyUnicode_FromString("CPU"))) goto fail;
  if (!(dev->compiler = clang_compiler_new())) goto fail;
  /* tinygrad's "optional compiler in Renderer": the renderer carries the compiler get_program uses */
  if (!(dev->renderer = PyObject_CallNoArgs((PyObject *)&ClangRenderer_Type)) ||
      PyObject_SetAttrString(dev->renderer, "compiler", dev->compiler) < 0) goto fail;
  dev->runtime = Py_NewRef((PyObject *)&CPUProgram_Type);
  return (PyObject *)dev;
fail:
  Py_DECREF(dev);
  return NULL;
}

int tinyc_init_ops_cpu(PyObject *m) {
  if (PyType_Ready(&CPUProgram_Type) < 0 || PyType_Ready(&CPUDevice_Type) < 0) return -1;
  return tinyc_add(m, "CPUProgram", (PyObject *)&CPUProgram_Type) < 0 || tinyc_add(m, "CPUDevice", (PyObject *)&CPUDevice_Type) < 0 ? -1 : 0;
}
