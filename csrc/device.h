/* tinygrad/device.py in C: Buffer, Allocator, Compiler, Compiled (a device) and the Device registry.
 * ops_cpu.c adds the CPU device (its allocator, program and Compiled), compiler_cpu.c the ClangCompiler,
 * engine/realize.c CompiledRunner. */
#ifndef TINYC_DEVICE_H
#define TINYC_DEVICE_H
#include "tinyc.h"
#include "dtype.h"

/* An allocator: raw memory for Buffers, through C function pointers (no Python in the hot path). */
typedef struct {
  PyObject_HEAD
  PyObject *device;                            /* str: the device name it serves */
  void *(*alloc)(size_t nbytes);               /* NULL with errno set on failure */
  void (*free)(void *ptr, size_t nbytes);
} AllocatorObject;
extern PyTypeObject Allocator_Type;

/* tinygrad's Buffer (base buffers only: no views, no options). */
typedef struct {
  PyObject_HEAD
  PyObject *device;          /* str, canonical device name */
  Py_ssize_t size;           /* elements */
  DType *dtype;              /* scalar dtype, interned (borrowed) */
  AllocatorObject *allocator;/* set once allocated */
  char *ptr;                 /* NULL until allocated */
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

/* tinygrad's Compiled: one device with its allocator, renderer, compiler and runtime (the program type). */
typedef struct {
  PyObject_HEAD
  PyObject *device, *allocator, *renderer, *compiler, *runtime;
  PyObject *dict;
} CompiledObject;
extern PyTypeObject Compiled_Type;

/* Device[name]: the (cached) Compiled for a device name; new reference, NULL with an exception for unknown names. */
PyObject *device_get(PyObject *name);
/* Device.canonicalize(name): "cpu" -> "CPU", "CPU:0" -> "CPU"; new reference. */
PyObject *device_canonicalize(PyObject *name);

/* Counters behind _C.compile_stats(). */
extern Py_ssize_t stat_compiles, stat_cache_hits, stat_cache_misses, stat_clang_runs, stat_programs_loaded;

/* Made by ops_cpu.c: the CPU device (a new Compiled), and its allocator; by compiler_cpu.c: a new ClangCompiler. */
PyObject *cpu_device_new(void);
PyObject *clang_compiler_new(void);

/* The CPU program (ops_cpu.c): a shared object loaded from memory and its kernel function. */
typedef struct {
  PyObject_HEAD
  PyObject *name;       /* the function's name */
  void *handle;         /* dlopen handle */
  void *fxn;            /* the kernel */
  int fd;               /* the memfd the object was loaded from, open while loaded (its /proc path names it) */
} CPUProgramObject;
extern PyTypeObject CPUProgram_Type;
#define CPU_MAX_KERNEL_ARGS 64
/* Run prg on bufs (allocated) and vals, on `threads` threads (core_id 0..threads-1), without the GIL.
 * Returns 0 (the run's seconds in *elapsed) or -1 with an exception. Checks only what C needs (counts, ranges). */
int cpu_program_launch(CPUProgramObject *prg, BufferObject *const *bufs, Py_ssize_t nbufs, const int64_t *vals, Py_ssize_t nvals,
                       Py_ssize_t threads, double *elapsed);

/* monotonic seconds */
double device_now(void);


#endif
