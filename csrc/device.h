/* tinygrad/device.py in C: Buffer, Allocator, Compiler, Compiled (a device), the device table with Device.DEFAULT,
 * and is_dtype_supported. A device is one row of the table: one file in devices/ fills a DeviceDef (its allocator, its
 * programs, synchronize, its renderer/compiler pairs) and device.c, CompiledRunner and Buffer call it through these
 * function pointers, never testing which device it is. */
#ifndef TINYC_DEVICE_H
#define TINYC_DEVICE_H
#include "tinyc.h"
#include "dtype.h"

/* ================================================================================================
 * What a device provides. Every function is called with the GIL held (it may release it while it waits) and
 * reports a failure as a Python exception. `dev` is the state its row's open made for the device (NULL if none).
 * ================================================================================================ */

/* Device memory. A buffer is an opaque handle, never NULL. */
typedef struct {
  void *(*alloc)(void *dev, size_t nbytes);                              /* NULL with an exception */
  void (*free)(void *dev, void *buf, size_t nbytes);
  int (*copyin)(void *dev, void *buf, const void *src, size_t nbytes);   /* host -> device: 0, or -1 with an exception */
  int (*copyout)(void *dev, void *dst, void *buf, size_t nbytes);        /* device -> host */
  /* the buffer's memory as a pointer the host may read and write; NULL (the slot) where it is not host-visible */
  void *(*host_view)(void *dev, void *buf);
} AllocatorVT;

/* the most buffers, and the most vars, one launch passes (a device may take fewer) */
#define LAUNCH_MAX_ARGS 128

/* Programs: a compiled library loaded, launched and freed. */
typedef struct {
  void *(*load)(void *dev, PyObject *name, const char *lib, size_t len);   /* a handle, or NULL with an exception */
  /* Run the kernel on bufs (buffer handles of this device) and vals, with global[3] and local[3] (NULL: none). Returns
   * its seconds (a device that does not time it when !wait may return 0), or -1 with an exception. */
  double (*launch)(void *prg, void *const *bufs, Py_ssize_t nbufs, const size_t global[3], const size_t *local,
                   const int64_t *vals, Py_ssize_t nvals, bool wait);
  void (*free)(void *prg);
} ProgramVT;

/* tinygrad's CompilerPair: a renderer and the compiler it pairs with. */
typedef struct {
  const char *name;               /* its name for the set's ctrl var (tinygrad's Compiled._compiler_name): CPU_CC=CLANGJIT */
  PyObject *(*renderer)(void);    /* a new renderer */
  PyObject *(*compiler)(void);    /* a new compiler; NULL: the renderer carries its own (tinygrad's None) */
  const char *ctrl_var;           /* the pair's own switch (CPU_LLVM): =1 forces it, unset or 0 drops it; NULL: none */
} CompilerPair;

/* tinygrad's CompilerSet: the pairs in order of preference, and the ctrl var (CPU_CC) that names one */
typedef struct {
  const CompilerPair *pairs;
  int npairs;
  const char *ctrl_var;
} CompilerSet;

/* One device: what its row's open returns. */
typedef struct {
  PyTypeObject *type;             /* its Compiled subtype (tinyc.CPUDevice) */
  PyTypeObject *program_type;     /* its runtime, a Program subtype: Device[name].runtime(name, lib) loads a program */
  AllocatorVT allocator;
  ProgramVT program;
  int (*synchronize)(void *dev);  /* wait until the device's work is done: 0, or -1 with an exception */
  CompilerSet compilers;
} DeviceDef;

/* A row's open: the DeviceDef for `device` (canonical: "CPU", "CUDA:1"), *dev set to its state; NULL with a RuntimeError
 * naming the device where it cannot be opened here. Each is one file of devices/. */
typedef const DeviceDef *(*DeviceOpen)(PyObject *device, void **dev);
const DeviceDef *cpu_open(PyObject *device, void **dev);
const DeviceDef *null_open(PyObject *device, void **dev);

/* ================================================================================================
 * The Python types
 * ================================================================================================ */

/* An allocator: the Python face of a device's AllocatorVT. Opened devices live as long as the process, so `dev` does. */
typedef struct {
  PyObject_HEAD
  PyObject *device;          /* str: the device name it serves */
  const AllocatorVT *vt;
  void *dev;
} AllocatorObject;
extern PyTypeObject Allocator_Type;

/* tinygrad's Buffer (base buffers only: no views, no options). */
typedef struct {
  PyObject_HEAD
  PyObject *device;          /* str, canonical device name */
  Py_ssize_t size;           /* elements */
  DType *dtype;              /* scalar dtype, interned (borrowed) */
  AllocatorObject *allocator;/* set once allocated */
  void *buf;                 /* the allocator's handle; NULL until allocated */
  Py_ssize_t exports;        /* live buffer-protocol views and running kernels: while > 0 the memory stays */
  PyObject *weakreflist;
} BufferObject;
extern PyTypeObject Buffer_Type;
#define Buffer_Check(o) PyObject_TypeCheck((o), &Buffer_Type)
static inline size_t buffer_nbytes(BufferObject *b) { return (size_t)b->size * (size_t)dtype_itemsize(b->dtype); }

/* tinygrad's Compiler: cachekey (str or None) names the compile cache's table. */
typedef struct {
  PyObject_HEAD
  PyObject *cachekey;
  PyObject *dict;
} CompilerObject;
extern PyTypeObject Compiler_Type;
extern PyObject *CompileError;   /* tinyc.CompileError, a RuntimeError */

/* tinygrad's Compiled: one opened device. renderer/compiler are chosen from def->compilers at each use, as the ctrl vars
 * say then; each pair is made once (tinygrad's cached_pair). */
typedef struct {
  PyObject_HEAD
  PyObject *device, *allocator, *runtime;
  PyObject *renderer, *compiler;   /* the pair chosen last (compiler None when the renderer carries it); NULL until chosen */
  PyObject *made;                  /* list, one entry per pair of def->compilers: (renderer, compiler) once made, else None */
  PyObject *dict;
  const DeviceDef *def;
  void *dev;
} CompiledObject;
extern PyTypeObject Compiled_Type;

/* A loaded program: the base of every device's runtime type (tinyc.CPUProgram). prg(*bufs, global_size=, local_size=,
 * vals=, wait=) -> seconds when wait. */
typedef struct {
  PyObject_HEAD
  PyObject *name;
  CompiledObject *device;
  void *handle;
} ProgramObject;
extern PyTypeObject Program_Type;
#define Program_Check(o) PyObject_TypeCheck((o), &Program_Type)
/* a runtime type's tp_new: Program(name, lib, *aux) loads lib on `device` */
PyObject *program_new(PyTypeObject *type, const char *device, PyObject *args, PyObject *kw);
/* Launch prg on Buffers of its device (checked: allocated, on prg's device), keeping them allocated while it runs.
 * The seconds, or -1 with an exception. */
double program_launch(ProgramObject *prg, BufferObject *const *bufs, Py_ssize_t nbufs, const size_t global[3], const size_t *local,
                      const int64_t *vals, Py_ssize_t nvals, bool wait);

/* a launch's global_size or local_size (a sequence of up to 3 ints >= 0, missing ones 1) into out; 0, or -1 with an
 * exception naming `who` */
int launch_size(PyObject *seq, size_t out[3], PyObject *who, const char *what);

/* Device[name]: the (cached) Compiled for a device name; new reference, NULL with an exception for names no row opens. */
PyObject *device_get(PyObject *name);
/* Device.canonicalize(name): "cpu" -> "CPU", "CPU:0" -> "CPU"; new reference. */
PyObject *device_canonicalize(PyObject *name);

/* Counters behind _C.compile_stats(). A compiler adds its own (clang_runs) with compile_stats_add at init. */
extern Py_ssize_t stat_compiles, stat_cache_hits, stat_cache_misses, stat_programs_loaded;
int compile_stats_add(const char *name, Py_ssize_t *counter);

/* monotonic seconds */
double device_now(void);

/* the device side's initialisers, called from module.c: the device table, the CPU device and its compiler, NULL */
int tinyc_init_device(PyObject *m);
int tinyc_init_compiler_cpu(PyObject *m);
int tinyc_init_ops_cpu(PyObject *m);
int tinyc_init_ops_null(PyObject *m);

#endif
