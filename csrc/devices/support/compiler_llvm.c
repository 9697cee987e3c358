/* tinygrad/runtime/support/compiler_cpu.py's LLVMCompiler and CPULLVMCompiler in C, through the LLVM C API: the IR text
 * is parsed, verified, optimized with the new pass manager (default<O2> with loop unrolling, loop and SLP vectorization and
 * verify-each, as tinygrad sets them; LLVMOPT="" gives default<O0>) and emitted as a relocatable object to memory, for the
 * target x86_64-none-unknown-elf (aarch64 on arm), PIC. `lib` is that object: tinygrad runs its own ELF loader on it,
 * tinyc keeps the object and links it in process with ORC (llvm_object_load, what ops_cpu.c calls for an ET_REL lib).
 *
 * Threads: an LLVMContext and a TargetMachine may be used by one thread at a time, so each compiling thread owns its own
 * (thread-local, made on its first compile, disposed when the thread exits). The GIL is released for the whole compile,
 * so BEAM's compile threads run LLVM in parallel. A context keeps every type and constant it has seen, so it is replaced
 * after CONTEXT_USES compiles: memory stays flat however many kernels a thread compiles. */
#include "compiler_llvm.h"
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#ifdef TINYC_HAVE_LLVM
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#endif

static Py_ssize_t stat_llvm_compiles;   /* compile_stats()["llvm_compiles"] */

/* An LLVMCompiler: the target CPU and its features, given at construction (CPULLVMCompiler: the host's). */
typedef struct {
  CompilerObject base;
  char *cpu, *feats;   /* malloc'd */
  bool opt;            /* LLVMOPT at construction, as tinygrad reads it: default<O2>, else default<O0> */
} LLVMCompilerObject;

/* tinygrad's bool(getenv("LLVMOPT", "1")): only an empty value turns it off */
static bool llvmopt(void) {
  const char *v = getenv("LLVMOPT");
  return !v || *v;
}


#ifdef TINYC_HAVE_LLVM

#if defined(__aarch64__)
static const char TRIPLE[] = "aarch64-none-unknown-elf";
#else
static const char TRIPLE[] = "x86_64-none-unknown-elf";
#endif
#define CONTEXT_USES 64

static pthread_once_t llvm_once = PTHREAD_ONCE_INIT;
static bool llvm_ready;
static void llvm_init_once(void) {
  llvm_ready = !LLVMInitializeNativeTarget() && !LLVMInitializeNativeAsmParser() && !LLVMInitializeNativeAsmPrinter();
}
static int llvm_init(void) {
  pthread_once(&llvm_once, llvm_init_once);
  if (!llvm_ready) PyErr_SetString(PyExc_RuntimeError, "LLVM has no target for this machine");
  return llvm_ready ? 0 : -1;
}

/* a malloc'd copy of an LLVM message, the message disposed */
static char *take_message(char *msg) {
  char *ret = strdup(msg ? msg : "(no message)");
  if (msg) LLVMDisposeMessage(msg);
  return ret;
}
/* an LLVMErrorRef's message, the error consumed (its text is LLVM's to free: LLVMDisposeErrorMessage, not free) */
static char *take_error(LLVMErrorRef err) {
  char *msg = LLVMGetErrorMessage(err), *ret = strdup(msg ? msg : "(no message)");
  if (msg) LLVMDisposeErrorMessage(msg);
  return ret;
}

/* ---- the compiling thread's own LLVM state ---- */

typedef struct {
  LLVMContextRef ctx;
  int uses;
  LLVMTargetMachineRef tm;
  char *tm_cpu, *tm_feats;       /* what tm was made for */
  LLVMPassBuilderOptionsRef pbo;
} ThreadLLVM;

static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;

static void drop_tm(ThreadLLVM *t) {
  if (t->tm) LLVMDisposeTargetMachine(t->tm);
  free(t->tm_cpu); free(t->tm_feats);
  t->tm = NULL, t->tm_cpu = t->tm_feats = NULL;
}
static void thread_llvm_free(void *p) {
  ThreadLLVM *t = p;
  drop_tm(t);
  if (t->ctx) LLVMContextDispose(t->ctx);
  if (t->pbo) LLVMDisposePassBuilderOptions(t->pbo);
  free(t);
}
static void make_thread_key(void) { pthread_key_create(&thread_key, thread_llvm_free); }

/* tinygrad's pass builder options (unrolling, loop and SLP vectorization), less its verify-each: the module is verified
 * once, before the passes (verify()); re-verifying after every one of O2's passes checks LLVM's passes, not our IR,
 * and cost a fifth of the compile. The object is the same. */
static LLVMPassBuilderOptionsRef make_pbo(void) {
  LLVMPassBuilderOptionsRef pbo = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopUnrolling(pbo, 1);
  LLVMPassBuilderOptionsSetLoopVectorization(pbo, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(pbo, 1);
  return pbo;
}

/* this thread's state with a context and a target machine for (cpu, feats); NULL with *err set. No GIL needed. */
static ThreadLLVM *thread_llvm(const char *cpu, const char *feats, char **err) {
  pthread_once(&thread_key_once, make_thread_key);
  ThreadLLVM *t = pthread_getspecific(thread_key);
  if (!t) {
    if (!(t = calloc(1, sizeof(*t))) || pthread_setspecific(thread_key, t) != 0) { free(t); *err = strdup("out of memory"); return NULL; }
    t->pbo = make_pbo();
  }
  if (t->ctx && t->uses >= CONTEXT_USES) LLVMContextDispose(t->ctx), t->ctx = NULL;
  if (!t->ctx) t->ctx = LLVMContextCreate(), t->uses = 0;
  if (!t->tm || strcmp(t->tm_cpu, cpu) != 0 || strcmp(t->tm_feats, feats) != 0) {
    drop_tm(t);
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(TRIPLE, &target, &msg)) { *err = take_message(msg); return NULL; }
    t->tm = LLVMCreateTargetMachine(target, TRIPLE, cpu, feats, LLVMCodeGenLevelDefault, LLVMRelocPIC, LLVMCodeModelDefault);
    t->tm_cpu = strdup(cpu), t->tm_feats = strdup(feats);
    if (!t->tm || !t->tm_cpu || !t->tm_feats) { drop_tm(t); *err = strdup("could not make an LLVM target machine"); return NULL; }
  }
  t->uses++;
  return t;
}

/* ---- compiling ---- */

/* LLVM's error diagnostics of one compile, newline separated (tinygrad keeps the LLVMDSError ones) */
typedef struct { char *text; size_t len; } Diag;
static void on_diagnostic(LLVMDiagnosticInfoRef info, void *arg) {
  Diag *d = arg;
  if (LLVMGetDiagInfoSeverity(info) != LLVMDSError) return;
  char *msg = LLVMGetDiagInfoDescription(info);
  size_t n = msg ? strlen(msg) : 0;
  char *grown = realloc(d->text, d->len + n + 2);
  if (grown) {
    d->text = grown;
    if (d->len) d->text[d->len++] = '\n';
    memcpy(d->text + d->len, msg ? msg : "", n);
    d->text[d->len += n] = 0;
  }
  if (msg) LLVMDisposeMessage(msg);
}

/* the verifier's complaint (malloc'd), NULL for a valid module */
static char *verify(LLVMModuleRef mod) {
  char *msg = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) return take_message(msg);
  if (msg) LLVMDisposeMessage(msg);
  return NULL;
}

/* The object of one compile: 0 with *obj (malloc'd) and *len, else -1 with *err (malloc'd) saying what failed. No GIL. */
static int compile_ir(const char *cpu, const char *feats, bool opt, const char *src, size_t srclen, char **obj, size_t *len, char **err) {
  ThreadLLVM *t = thread_llvm(cpu, feats, err);
  if (!t) return -1;
  Diag diag = {NULL, 0};
  LLVMContextSetDiagnosticHandler(t->ctx, on_diagnostic, &diag);
  LLVMMemoryBufferRef srcbuf = LLVMCreateMemoryBufferWithMemoryRangeCopy(src, srclen, "src");
  LLVMModuleRef mod = NULL;
  LLVMMemoryBufferRef objbuf = NULL;
  char *msg = NULL;
  LLVMErrorRef e = NULL;
  int rc = -1;
  if (LLVMParseIRInContext(t->ctx, srcbuf, &mod, &msg)) *err = take_message(msg);   /* srcbuf is the parser's now */
  else if ((*err = verify(mod))) {}
  else if ((e = LLVMRunPasses(mod, opt ? "default<O2>" : "default<O0>", t->tm, t->pbo))) *err = take_error(e);
  else if (LLVMTargetMachineEmitToMemoryBuffer(t->tm, mod, LLVMObjectFile, (msg = NULL, &msg), &objbuf)) *err = take_message(msg);
  else if (diag.len) *err = strdup(diag.text);
  else if (!(*obj = malloc((*len = LLVMGetBufferSize(objbuf)) + 1))) *err = strdup("out of memory");
  else memcpy(*obj, LLVMGetBufferStart(objbuf), *len), rc = 0;
  if (rc < 0 && diag.len && *err && !strstr(*err, diag.text)) {   /* the diagnostics say more than "parse failed" */
    char *both = malloc(strlen(*err) + diag.len + 2);
    if (both) { sprintf(both, "%s\n%s", *err, diag.text); free(*err); *err = both; }
  }
  if (objbuf) LLVMDisposeMemoryBuffer(objbuf);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextSetDiagnosticHandler(t->ctx, NULL, NULL);
  free(diag.text);
  return rc;
}

/* compile(src) -> the relocatable object's bytes */
static PyObject *LLVMCompiler_compile(PyObject *self, PyObject *src) {
  LLVMCompilerObject *c = (LLVMCompilerObject *)self;
  if (!PyUnicode_Check(src)) return PyErr_Format(PyExc_TypeError, "compile needs the LLVM IR as str, got %.100s", Py_TYPE(src)->tp_name);
  if (!c->cpu || !c->feats) return PyErr_Format(PyExc_RuntimeError, "%.100s was not initialized", Py_TYPE(self)->tp_name);
  Py_ssize_t srclen;
  const char *s = PyUnicode_AsUTF8AndSize(src, &srclen);
  if (!s) return NULL;
  /* copies: the str and this compiler could change owner while the GIL is released */
  char *code = malloc((size_t)srclen + 1), *cpu = strdup(c->cpu), *feats = strdup(c->feats), *obj = NULL, *err = NULL;
  if (!code || !cpu || !feats) { free(code); free(cpu); free(feats); return PyErr_NoMemory(); }
  memcpy(code, s, (size_t)srclen + 1);
  bool opt = c->opt;
  size_t len = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = compile_ir(cpu, feats, opt, code, (size_t)srclen, &obj, &len, &err);
  Py_END_ALLOW_THREADS
  free(code); free(cpu); free(feats);
  stat_llvm_compiles++;
  PyObject *ret = rc == 0 ? PyBytes_FromStringAndSize(obj, (Py_ssize_t)len)
                          : PyErr_Format(CompileError, "LLVM failed to compile: %s", err ? err : "out of memory");
  free(obj); free(err);
  return ret;
}

/* the host's CPU name and features, as malloc'd strings */
static int host_cpu(char **cpu, char **feats) {
  *cpu = take_message(LLVMGetHostCPUName());
  *feats = take_message(LLVMGetHostCPUFeatures());
  return *cpu && *feats ? 0 : -1;
}

/* ---- loading: one LLJIT per program ---- */

struct LLVMLoaded { LLVMOrcLLJITRef jit; char *session_error; };

/* materialization errors go to the session, not to the lookup's caller alone: keep the first one for the message */
static void on_session_error(void *ctx, LLVMErrorRef e) {
  LLVMLoaded *obj = ctx;
  char *msg = take_error(e);
  if (!obj->session_error) obj->session_error = msg;
  else free(msg);
}

void llvm_object_free(LLVMLoaded *obj) {
  if (!obj) return;
  if (obj->jit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(obj->jit);
    if (e) LLVMConsumeError(e);
  }
  free(obj->session_error);
  free(obj);
}

/* link lib into obj->jit and look fname up: NULL, or the error text (malloc'd). No GIL. */
static char *link_object(LLVMLoaded *obj, const char *fname, const char *lib, size_t len, void **fxn) {
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&obj->jit, NULL);
  if (e) return obj->jit = NULL, take_error(e);
  LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(obj->jit), on_session_error, obj);
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(obj->jit);
  /* the process's own symbols, for what LLVM lowers to a call (compiler-rt helpers, libm) */
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  if (!(e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(obj->jit), NULL, NULL)))
    LLVMOrcJITDylibAddGenerator(jd, gen);
  else LLVMConsumeError(e);
  if ((e = LLVMOrcLLJITAddObjectFile(obj->jit, jd, LLVMCreateMemoryBufferWithMemoryRangeCopy(lib, len, "kernel")))) return take_error(e);
  LLVMOrcExecutorAddress addr = 0;
  if ((e = LLVMOrcLLJITLookup(obj->jit, &addr, fname))) {
    char *msg = take_error(e);
    if (obj->session_error && msg) {   /* the link's own error first: the lookup only says it failed */
      char *both = malloc(strlen(obj->session_error) + strlen(msg) + 3);
      if (both) sprintf(both, "%s; %s", obj->session_error, msg), free(msg), msg = both;
    }
    return msg;
  }
  *fxn = (void *)(uintptr_t)addr;
  return addr ? NULL : strdup("the symbol's address is 0");
}

LLVMLoaded *llvm_object_load(PyObject *name, const char *fname, const char *lib, size_t len, void **fxn) {
  if (llvm_init() < 0) return NULL;
  LLVMLoaded *obj = calloc(1, sizeof(*obj));
  if (!obj) return (LLVMLoaded *)PyErr_NoMemory();
  char *err;
  Py_BEGIN_ALLOW_THREADS
  err = link_object(obj, fname, lib, len, fxn);
  Py_END_ALLOW_THREADS
  if (!err) return obj;
  PyErr_Format(PyExc_RuntimeError, "can't load program %R: LLVM's JIT linker failed: %s", name, err);
  free(err);
  llvm_object_free(obj);
  return NULL;
}

#else  /* no LLVM */

static const char no_llvm[] = "tinyc was built without LLVM (llvm-config-19 or $LLVM_CONFIG was not found): "
                              "install llvm-19-dev (make deps) and rebuild";

/* constructing a compiler is where a build without LLVM says so */
static int llvm_init(void) {
  PyErr_SetString(PyExc_RuntimeError, no_llvm);
  return -1;
}
static int host_cpu(char **cpu, char **feats) {
  *cpu = *feats = NULL;
  return -1;
}
static PyObject *LLVMCompiler_compile(PyObject *self, PyObject *src) {
  UNUSED(self); UNUSED(src);
  PyErr_SetString(PyExc_RuntimeError, no_llvm);
  return NULL;
}
void llvm_object_free(LLVMLoaded *obj) { UNUSED(obj); }
LLVMLoaded *llvm_object_load(PyObject *name, const char *fname, const char *lib, size_t len, void **fxn) {
  UNUSED(fname); UNUSED(lib); UNUSED(len); UNUSED(fxn);
  PyErr_Format(PyExc_RuntimeError, "can't load program %R, a relocatable object: %s", name, no_llvm);
  return NULL;
}
#endif

/* ---- the Python types ---- */

/* the base Compiler's init with the cache key: cache_key if given, else tinygrad's compile_llvm_{cpu}_{feats}_jit[_opt] */
static int init_with_key(LLVMCompilerObject *self, PyObject *cache_key) {
  self->opt = llvmopt();
  PyObject *key = cache_key && cache_key != Py_None ? Py_NewRef(cache_key)
                : PyUnicode_FromFormat("compile_llvm_%s_%s_jit%s", self->cpu, self->feats, self->opt ? "_opt" : "");
  PyObject *a = key ? PyTuple_Pack(1, key) : NULL;
  int rc = a ? Compiler_Type.tp_init((PyObject *)self, a, NULL) : -1;
  Py_XDECREF(key); Py_XDECREF(a);
  return rc;
}

static int set_target(LLVMCompilerObject *self, char *cpu, char *feats) {
  free(self->cpu); free(self->feats);
  self->cpu = cpu, self->feats = feats;
  if (cpu && feats) return 0;
  PyErr_NoMemory();
  return -1;
}

/* LLVMCompiler(processor, feats, cache_key=None) */
static int LLVMCompiler_init(LLVMCompilerObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"processor", "feats", "cache_key", NULL};
  const char *cpu, *feats;
  PyObject *key = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|O:LLVMCompiler", kwlist, &cpu, &feats, &key)) return -1;
  if (llvm_init() < 0 || set_target(self, strdup(cpu), strdup(feats)) < 0) return -1;
  return init_with_key(self, key);
}

/* CPULLVMCompiler(cache_key=None): the host's CPU and features */
static int CPULLVMCompiler_init(LLVMCompilerObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"cache_key", NULL};
  PyObject *key = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:CPULLVMCompiler", kwlist, &key)) return -1;
  char *cpu, *feats;
  if (llvm_init() < 0) return -1;
  host_cpu(&cpu, &feats);
  if (set_target(self, cpu, feats) < 0) return -1;
  return init_with_key(self, key);
}

static void LLVMCompiler_dealloc(LLVMCompilerObject *self) {
  free(self->cpu); free(self->feats);
  self->cpu = self->feats = NULL;
  Compiler_Type.tp_dealloc((PyObject *)self);
}

static PyObject *LLVMCompiler_get_cpu(LLVMCompilerObject *self, void *c) {
  UNUSED(c);
  return self->cpu ? PyUnicode_FromString(self->cpu) : Py_NewRef(Py_None);
}
static PyObject *LLVMCompiler_get_feats(LLVMCompilerObject *self, void *c) {
  UNUSED(c);
  return self->feats ? PyUnicode_FromString(self->feats) : Py_NewRef(Py_None);
}

static PyMethodDef LLVMCompiler_methods[] = {
  {"compile", LLVMCompiler_compile, METH_O, "compile(src) -> the bytes of a relocatable object LLVM made from the IR"},
  {NULL, NULL, 0, NULL},
};
static PyGetSetDef LLVMCompiler_getset[] = {
  {"processor", (getter)LLVMCompiler_get_cpu, NULL, "the target CPU", NULL},
  {"feats", (getter)LLVMCompiler_get_feats, NULL, "the target features", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LLVMCompiler_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.LLVMCompiler",
  .tp_basicsize = sizeof(LLVMCompilerObject),
  .tp_dealloc = (destructor)LLVMCompiler_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,   /* GC inherited from Compiler */
  .tp_doc = "tinygrad's LLVMCompiler(processor, feats, cache_key=None): LLVM IR -> a relocatable object, in process",
  .tp_methods = LLVMCompiler_methods,
  .tp_getset = LLVMCompiler_getset,
  .tp_base = &Compiler_Type,
  .tp_init = (initproc)LLVMCompiler_init,
};

static PyTypeObject CPULLVMCompiler_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.CPULLVMCompiler",
  .tp_basicsize = sizeof(LLVMCompilerObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,   /* GC inherited from Compiler */
  .tp_doc = "tinygrad's CPULLVMCompiler(cache_key=None): an LLVMCompiler for the host's CPU and features",
  .tp_base = &LLVMCompiler_Type,
  .tp_init = (initproc)CPULLVMCompiler_init,
};

PyObject *cpu_llvm_compiler_new(void) { return PyObject_CallNoArgs((PyObject *)&CPULLVMCompiler_Type); }

int tinyc_init_compiler_llvm(PyObject *m) {
  if (PyType_Ready(&LLVMCompiler_Type) < 0 || PyType_Ready(&CPULLVMCompiler_Type) < 0) return -1;
  if (compile_stats_add("llvm_compiles", &stat_llvm_compiles) < 0) return -1;
  if (PyModule_AddIntConstant(m, "HAVE_LLVM",
#ifdef TINYC_HAVE_LLVM
                              1
#else
                              0
#endif
                              ) < 0)
    return -1;
  return tinyc_add(m, "LLVMCompiler", (PyObject *)&LLVMCompiler_Type) < 0 ||
    tinyc_add(m, "CPULLVMCompiler", (PyObject *)&CPULLVMCompiler_Type) < 0 ? -1 : 0;
}
