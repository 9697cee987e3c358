/* tinygrad/runtime/ops_cpu.py in C: the CPU device, a row of the device table. Its allocator hands out zeroed, 64-byte
 * aligned host memory (its own host view); its program loads the shared object ClangCompiler made straight from memory
 * (memfd_create + dlopen of /proc/self/fd/N: no file is left behind), or links the relocatable object CPULLVMCompiler made
 * with LLVM's ORC JIT (support/compiler_llvm.c; the ELF header's e_type tells which), and calls the kernel in tinygrad's
 * CPU calling convention:
 *   void kernel(T0 *data0, T1 *data1, ..., int var0, int var1, ..., int core_id)
 * (buffers in DEFINE_GLOBAL order, then the variables in order, then the thread index; ClangRenderer writes this
 * signature). A launch with global_size[0] = n runs the kernel on n threads, core_id 0..n-1, as tinygrad's
 * CPUComputeQueue does; the GIL is released while it runs, and it has finished when launch returns. */
#include "../device.h"
#include "../renderers/renderer.h"
#include "support/compiler_llvm.h"
#include <elf.h>
#include <stddef.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

/* ---- allocator: small buffers from the heap, big ones (>= 1 MiB) straight from mmap (both zeroed) ---- */

#define CPU_MMAP_MIN (1 << 20)

static void *cpu_alloc(void *dev, size_t nbytes) {
  UNUSED(dev);
  void *p;
  if (nbytes >= CPU_MMAP_MIN) {
    p = mmap(NULL, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) p = NULL;
  } else {
    size_t rounded = (nbytes + 63) & ~(size_t)63;
    if ((p = aligned_alloc(64, rounded))) memset(p, 0, rounded);
  }
  if (!p) PyErr_Format(PyExc_MemoryError, "could not allocate %zu bytes on CPU", nbytes);
  return p;
}

static void cpu_free(void *dev, void *buf, size_t nbytes) {
  UNUSED(dev);
  if (nbytes >= CPU_MMAP_MIN) munmap(buf, nbytes);
  else free(buf);
}

static int cpu_copyin(void *dev, void *buf, const void *src, size_t nbytes) { UNUSED(dev); memmove(buf, src, nbytes); return 0; }
static int cpu_copyout(void *dev, void *dst, void *buf, size_t nbytes) { UNUSED(dev); memmove(dst, buf, nbytes); return 0; }
static void *cpu_host_view(void *dev, void *buf) { UNUSED(dev); return buf; }

/* ---- program ---- */

typedef struct {
  PyObject *name;       /* the function's name */
  void *handle;         /* dlopen handle */
  void *fxn;            /* the kernel */
  int fd;               /* the memfd the object was loaded from, open while loaded (its /proc path names it) */
  LLVMLoaded *jit;      /* or: the relocatable object LLVM's JIT linked (CPULLVMCompiler's lib) */
} CPUProgram;

static void cpu_unload(void *p) {
  CPUProgram *prg = p;
  if (prg->handle) dlclose(prg->handle);
  llvm_object_free(prg->jit);
  if (prg->fd >= 0) close(prg->fd);   /* after dlclose: while the object is loaded its fd number (its name) stays taken */
  Py_XDECREF(prg->name);
  PyMem_Free(prg);
}

/* write lib to a new memfd; the fd, or -1 with errno */
static int memfd_with(const char *lib, size_t len) {
  int fd = memfd_create("tinyc-kernel", MFD_CLOEXEC);
  for (size_t off = 0; fd >= 0 && off < len;) {
    ssize_t w = write(fd, lib + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) { int e = w < 0 ? errno : EIO; close(fd); errno = e; return -1; }
    off += (size_t)w;
  }
  return fd;
}

/* the ELF header's e_type (ET_DYN: a shared object from clang + ld, ET_REL: an object from LLVM), read unaligned; the
 * caller checked the length and the magic */
static unsigned elf_type(const char *lib) {
  uint16_t t;
  memcpy(&t, lib + offsetof(Elf64_Ehdr, e_type), sizeof(t));
  return t;
}

/* load lib (a shared object's or a relocatable object's bytes) and find the function `name` in it */
static void *cpu_load(void *dev, PyObject *name, const char *lib, size_t len) {
  UNUSED(dev);
  const char *fname = PyUnicode_AsUTF8(name);
  if (!fname) return NULL;
  if (len < sizeof(Elf64_Ehdr) || memcmp(lib, ELFMAG, SELFMAG) != 0 || lib[EI_CLASS] != ELFCLASS64)
    return PyErr_Format(PyExc_RuntimeError, "can't load program %R: lib is not an ELF shared or relocatable object of a 64-bit "
                        "machine (%zu bytes)", name, len);
  CPUProgram *prg = PyMem_Calloc(1, sizeof(CPUProgram));
  if (!prg) return PyErr_NoMemory();
  prg->name = Py_NewRef(name);
  prg->fd = -1;
  if (elf_type(lib) == ET_REL) {   /* linked in process by LLVM's JIT linker: no file, no dlopen */
    if (!(prg->jit = llvm_object_load(name, fname, lib, len, &prg->fxn))) { cpu_unload(prg); return NULL; }
    return prg;
  }
  if ((prg->fd = memfd_with(lib, len)) < 0) {
    PyErr_Format(PyExc_OSError, "can't load program %R: memfd: %s", name, strerror(errno));
    cpu_unload(prg);
    return NULL;
  }
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", prg->fd);
  if (!(prg->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
    const char *e = dlerror();
    PyErr_Format(PyExc_RuntimeError, "can't load program %R: %s", name, e ? e : "dlopen failed");
    cpu_unload(prg);
    return NULL;
  }
  dlerror();
  if (!(prg->fxn = dlsym(prg->handle, fname))) {
    PyErr_Format(PyExc_RuntimeError, "can't load program %R: the library has no function %R", name, name);
    cpu_unload(prg);
    return NULL;
  }
  return prg;
}

/* Every kernel is called through one pointer type with CPU_MAX_KERNEL_ARGS integer-class arguments. On the
 * System V x86-64 and AAPCS64 ABIs pointers and ints travel in the same 64-bit slots (registers, then 8-byte stack
 * slots) and the caller owns the stack arguments, so a kernel taking fewer arguments reads exactly its own and
 * ignores the rest; an int parameter reads the low 32 bits of its slot. */
#define CPU_MAX_KERNEL_ARGS 64
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

/* run the kernel on global[0] threads, without the GIL; the CPU has no local size. Checks only what C needs (counts). */
static double cpu_launch(void *p, void *const *bufs, Py_ssize_t nbufs, const size_t global[3], const size_t *local, const int64_t *vals,
                         Py_ssize_t nvals, bool wait) {
  UNUSED(local); UNUSED(wait);
  CPUProgram *prg = p;
  size_t threads = global[0];
  if (nbufs + nvals + 1 > CPU_MAX_KERNEL_ARGS) {
    PyErr_Format(PyExc_ValueError, "%S takes %zd buffers and %zd vars: more than the %d arguments a CPU launch supports", prg->name,
                 nbufs, nvals, CPU_MAX_KERNEL_ARGS - 1);
    return -1;
  }
  if (threads < 1 || threads > 4096) {
    PyErr_Format(PyExc_ValueError, "%S: global_size[0] is the CPU thread count and must be in 1..4096, got %zu", prg->name, threads);
    return -1;
  }
  ThreadCall *calls = PyMem_RawCalloc(threads, sizeof(ThreadCall));
  pthread_t *tids = PyMem_RawCalloc(threads, sizeof(pthread_t));
  if (!calls || !tids) { PyMem_RawFree(calls); PyMem_RawFree(tids); PyErr_NoMemory(); return -1; }
  for (size_t t = 0; t < threads; t++) {
    calls[t].fxn = prg->fxn;
    for (Py_ssize_t i = 0; i < nbufs; i++) calls[t].args[i] = (uint64_t)(uintptr_t)bufs[i];
    for (Py_ssize_t i = 0; i < nvals; i++) calls[t].args[nbufs + i] = (uint64_t)vals[i];
    calls[t].args[nbufs + nvals] = (uint64_t)t;
  }
  double t0, t1;
  Py_BEGIN_ALLOW_THREADS
  t0 = device_now();
  bool *started = threads > 1 ? calloc(threads, sizeof(bool)) : NULL;
  for (size_t t = 1; t < threads; t++)   /* a thread that can't start runs inline below */
    if (started) started[t] = pthread_create(&tids[t], NULL, thread_main, &calls[t]) == 0;
  call_kernel(calls[0].fxn, calls[0].args);
  for (size_t t = 1; t < threads; t++) {
    if (started && started[t]) pthread_join(tids[t], NULL);
    else call_kernel(calls[t].fxn, calls[t].args);
  }
  free(started);
  t1 = device_now();
  Py_END_ALLOW_THREADS
  PyMem_RawFree(calls); PyMem_RawFree(tids);
  return t1 - t0;
}

/* every launch has finished when it returns: nothing to wait for */
static int cpu_synchronize(void *dev) { UNUSED(dev); return 0; }

static PyObject *CPUProgram_new(PyTypeObject *type, PyObject *args, PyObject *kw) { return program_new(type, "CPU", args, kw); }

static PyTypeObject CPUProgram_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.CPUProgram",
  .tp_basicsize = sizeof(ProgramObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "tinygrad's CPUProgram(name, lib): the kernel `name` of a shared object, loaded from memory; "
            "prg(*bufs, global_size=, local_size=, vals=, wait=)",
  .tp_base = &Program_Type,
  .tp_new = CPUProgram_new,
};

/* ---- the device ---- */

static PyTypeObject CPUDevice_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.CPUDevice",
  .tp_basicsize = sizeof(CompiledObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "tinygrad's CPUDevice: ClangJITRenderer (clang) or, under CPU_LLVM=1, LLVMRenderer + CPULLVMCompiler; host memory, "
            "programs loaded from memory",
  .tp_base = &Compiled_Type,
};

/* tinygrad's ClangJITRenderer: a ClangRenderer that carries its compiler. (tinyc.ClangJITRenderer lands in another
 * branch; then this is PyObject_CallNoArgs of it.) */
/* tinygrad's ClangJITRenderer: a ClangRenderer that makes its own ClangCompiler (the "optional compiler in Renderer") */
static PyObject *clang_jit_renderer(void) { return PyObject_CallNoArgs((PyObject *)&ClangJITRenderer_Type); }

/* tinygrad's LLVMRenderer + CPULLVMCompiler (the renderer carries one too, as tinyc's renderers that compile do) */
static PyObject *llvm_renderer(void) { return PyObject_CallNoArgs((PyObject *)&LLVMRenderer_Type); }

/* tinygrad's CompilerSet of the CPU in its order (CPU_CC=CLANGJIT / LLVM; CPU_LLVM=1), less LVPRenderer (CPU_LVP) */
static const CompilerPair cpu_pairs[] = {
  {"CLANGJIT", clang_jit_renderer, NULL, NULL},
  {"LLVM", llvm_renderer, cpu_llvm_compiler_new, "CPU_LLVM"},
};

static const DeviceDef cpu_device = {
  .type = &CPUDevice_Type,
  .program_type = &CPUProgram_Type,
  .allocator = {cpu_alloc, cpu_free, cpu_copyin, cpu_copyout, cpu_host_view},
  .program = {cpu_load, cpu_launch, cpu_unload},
  .synchronize = cpu_synchronize,
  .compilers = {cpu_pairs, sizeof(cpu_pairs) / sizeof(cpu_pairs[0]), "CPU_CC"},
};

/* every CPU name ("CPU", "CPU:1") is the one host: nothing to open */
const DeviceDef *cpu_open(PyObject *device, void **dev) {
  UNUSED(device);
  *dev = NULL;
  return &cpu_device;
}

int tinyc_init_ops_cpu(PyObject *m) {
  if (PyType_Ready(&CPUProgram_Type) < 0 || PyType_Ready(&CPUDevice_Type) < 0 || ctxvar_text("CPU_CC") < 0) return -1;
  return tinyc_add(m, "CPUProgram", (PyObject *)&CPUProgram_Type) < 0 || tinyc_add(m, "CPUDevice", (PyObject *)&CPUDevice_Type) < 0 ? -1 : 0;
}
