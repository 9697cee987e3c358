/* tinygrad/runtime/support/compiler_cpu.py's clang compiler in C: ClangCompiler runs clang ($CC overrides) on the
 * kernel's C source and returns a shared object's bytes (tinygrad's ClangJITCompiler links its own ELF loader; tinyc
 * lets the system's loader map the .so from memory, see ../ops_cpu.c). Same flags as tinygrad where they mean the same
 * (-O2 -fPIC -ffreestanding -fno-math-errno -nostdlib -fno-ident, -march=native / -mcpu=native), plus -shared.
 * The subprocess runs without the GIL; a failure raises tinyc.CompileError carrying clang's output. */
#include "../../device.h"
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <poll.h>
#include <signal.h>
#include <time.h>

extern char **environ;

static Py_ssize_t stat_clang_runs;   /* compile_stats()["clang_runs"] */

/* A growable byte string for captured output. */
typedef struct { char *data; size_t len, cap; } Bytes;
static int bytes_append(Bytes *b, const char *p, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d, b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0;
  return 0;
}

/* Run argv (argv[0] looked up in PATH) with `in` as stdin, stdout and stderr captured together into *out, for at most
 * timeout_s seconds (then it is killed). Returns the exit status (128+signal when killed), or -1 with errno when it
 * could not run or timed out (ETIMEDOUT). Needs no GIL. */
static int run_capture(char *const argv[], const char *in, size_t inlen, Bytes *out, long timeout_s) {
  int infd = memfd_create("tinyc-stdin", MFD_CLOEXEC), pipefd[2] = {-1, -1}, status = -1, err = 0;
  if (infd < 0 || pipe2(pipefd, O_CLOEXEC) < 0) { err = errno; goto done; }
  for (size_t off = 0; off < inlen;) {
    ssize_t w = write(infd, in + off, inlen - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) { err = errno; goto done; }
    off += (size_t)w;
  }
  if (lseek(infd, 0, SEEK_SET) < 0) { err = errno; goto done; }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, infd, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  posix_spawnattr_t attr;   /* its own process group, so a timeout kills what it started too */
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(pipefd[1]); pipefd[1] = -1;
  if (rc != 0) { err = rc; goto done; }
  char buf[8192];
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double deadline = (double)now.tv_sec + (double)now.tv_nsec * 1e-9 + (double)timeout_s;
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    double left = deadline - ((double)now.tv_sec + (double)now.tv_nsec * 1e-9);
    struct pollfd pfd = {pipefd[0], POLLIN, 0};
    int ready = left > 0 ? poll(&pfd, 1, left > 1e6 ? -1 : (int)(left * 1000) + 1) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) { kill(-pid, SIGKILL); err = ETIMEDOUT; break; }   /* waited for below, so no zombie is left */
    ssize_t r = read(pipefd[0], buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (bytes_append(out, buf, (size_t)r) < 0) { err = ENOMEM; break; }
  }
  int ws;
  while (waitpid(pid, &ws, 0) < 0) if (errno != EINTR) { err = errno; goto done; }
  status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
  if (err) status = -1;
done:
  if (infd >= 0) close(infd);
  if (pipefd[0] >= 0) close(pipefd[0]);
  if (pipefd[1] >= 0) close(pipefd[1]);
  if (status < 0) errno = err;
  return status;
}

/* read a whole file into *out; 0 or -1 with errno */
static int read_file(const char *path, Bytes *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[65536];
  int rc = 0;
  for (;;) {
    ssize_t r = read(fd, buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) { rc = -1; break; }
    if (r == 0) break;
    if (bytes_append(out, buf, (size_t)r) < 0) { errno = ENOMEM; rc = -1; break; }
  }
  close(fd);
  return rc;
}

/* a fresh empty file for an output: <TMPDIR or /tmp>/tinyc-XXXXXX<suffix>; fills path, returns 0 or -1 */
static int temp_path(char *path, size_t n, const char *suffix) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  if ((size_t)snprintf(path, n, "%s/tinyc-XXXXXX%s", dir, suffix) >= n) { path[0] = 0; errno = ENAMETOOLONG; return -1; }
  int fd = mkstemps(path, (int)strlen(suffix));
  if (fd < 0) { path[0] = 0; return -1; }
  close(fd);
  return 0;
}

/* tinygrad's choice of -march / -mcpu by machine: on arm -mcpu=native means "tune and use this cpu" */
static const char *arch_flag(void) {
  static char flag[64];
  if (!flag[0]) {
    struct utsname u;
    const char *m = uname(&u) == 0 ? u.machine : "x86_64";
    snprintf(flag, sizeof(flag), "%s", strcmp(m, "x86_64") == 0 || strcmp(m, "AMD64") == 0 ? "-march=native" :
                                       strcmp(m, "riscv64") == 0 ? "-march=rv64g" : "-mcpu=native");
  }
  return flag;
}

/* how long a compiler may run: TINYC_COMPILE_TIMEOUT seconds, 300 by default (a hung compiler must not hang the caller) */
static long compile_timeout(void) { return env_long("TINYC_COMPILE_TIMEOUT", 300); }

static const char *cc_name(void) {
  const char *cc = getenv("CC");
  return cc && *cc ? cc : "clang";
}

/* Compiler.__init__(cachekey) with this compiler's default key; fmt names the type in argument errors ("|O:Name") */
static int init_with_default_key(CompilerObject *self, PyObject *args, PyObject *kw, const char *fmt, const char *dflt) {
  static char *kwlist[] = {"cachekey", NULL};
  PyObject *key = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &key)) return -1;
  PyObject *a = key ? PyTuple_Pack(1, key) : Py_BuildValue("(s)", dflt);
  if (!a) return -1;
  int rc = Compiler_Type.tp_init((PyObject *)self, a, NULL);
  Py_DECREF(a);
  return rc;
}

static int ClangCompiler_init(CompilerObject *self, PyObject *args, PyObject *kw) {
  return init_with_default_key(self, args, kw, "|O:ClangCompiler", "compile_clang_so");
}

/* tinygrad's --target for ClangJITCompiler's objects: <machine>-none-unknown-elf (freestanding: no libc, no loader) */
static const char *target_flag(void) {
  static char flag[96];
  if (!flag[0]) {
    struct utsname u;
    snprintf(flag, sizeof(flag), "--target=%s-none-unknown-elf", uname(&u) == 0 ? u.machine : "x86_64");
  }
  return flag;
}

/* clang's output for src: the relocatable object (link false, tinygrad ClangJITCompiler's clang step, byte for byte) or
 * that object linked by ld -shared (link true). NULL with CompileError carrying the failing tool's output. */
static PyObject *clang_build(PyObject *src, bool link) {
  if (!PyUnicode_Check(src)) return PyErr_Format(PyExc_TypeError, "compile needs the C source as str, got %.100s", Py_TYPE(src)->tp_name);
  Py_ssize_t srclen;
  const char *s = PyUnicode_AsUTF8AndSize(src, &srclen);
  if (!s) return NULL;
  char *code = malloc((size_t)srclen + 1);   /* the str could change owner while the GIL is released: compile a copy */
  if (!code) return PyErr_NoMemory();
  memcpy(code, s, (size_t)srclen + 1);
  char cc[1024], obj_path[4096] = "", out_path[4096] = "";
  snprintf(cc, sizeof(cc), "%s", cc_name());
  Bytes log = {0}, lib = {0};
  int status = -1, err = 0;
  long timeout_s = compile_timeout();
  bool made_tmp;
  const char *what = link ? "shared object" : "object";
  Py_BEGIN_ALLOW_THREADS
  made_tmp = temp_path(obj_path, sizeof(obj_path), ".o") == 0 && (!link || temp_path(out_path, sizeof(out_path), ".so") == 0);
  if (!made_tmp) err = errno;
  else {
    /* a shared object is linked with ld directly: the clang driver's own link step costs more than the compile */
    char *so_argv[] = {cc, "-c", (char *)arch_flag(), "-O2", "-fPIC", "-ffreestanding", "-fno-math-errno", "-nostdlib", "-fno-ident",
                       "-x", "c", "-", "-o", obj_path, NULL};
    char *obj_argv[] = {cc, "-c", (char *)arch_flag(), (char *)target_flag(), "-O2", "-fPIC", "-ffreestanding", "-fno-math-errno",
                        "-nostdlib", "-fno-ident", "-x", "c", "-", "-o", obj_path, NULL};
    char *link_argv[] = {"ld", "-shared", "-o", out_path, obj_path, NULL};
    status = run_capture(link ? so_argv : obj_argv, code, (size_t)srclen, &log, timeout_s);
    if (status == 0 && link) {
      free(log.data); log = (Bytes){0};
      snprintf(cc, sizeof(cc), "ld");   /* name the linker in errors from here on */
      status = run_capture(link_argv, "", 0, &log, timeout_s);
    }
    if (status < 0) err = errno;
    else if (status == 0 && read_file(link ? out_path : obj_path, &lib) < 0) err = errno, status = -1;
  }
  if (obj_path[0]) unlink(obj_path);
  if (out_path[0]) unlink(out_path);
  Py_END_ALLOW_THREADS
  free(code);
  stat_clang_runs++;
  PyObject *ret = NULL;
  if (!made_tmp) PyErr_Format(CompileError, "could not make a temporary file for %s's output: %s", cc, strerror(err));
  else if (status < 0 && err == ETIMEDOUT) PyErr_Format(CompileError, "%s did not finish in %ld s (TINYC_COMPILE_TIMEOUT) and was killed:\n%s", cc, timeout_s, log.data ? log.data : "");
  else if (status < 0) PyErr_Format(CompileError, "could not run %s: %s", cc, strerror(err));
  else if (status != 0) PyErr_Format(CompileError, "%s failed (exit status %d):\n%s", cc, status, log.data ? log.data : "");
  else if (lib.len == 0) PyErr_Format(CompileError, "%s produced an empty %s:\n%s", cc, what, log.data ? log.data : "");
  else ret = PyBytes_FromStringAndSize(lib.data, (Py_ssize_t)lib.len);
  free(log.data); free(lib.data);
  return ret;
}

/* compile(src) -> the shared object's bytes */
static PyObject *ClangCompiler_compile(PyObject *self, PyObject *src) { UNUSED(self); return clang_build(src, true); }

/* disassemble(lib) -> objdump's text of the shared object */
static PyObject *ClangCompiler_disassemble(PyObject *self, PyObject *arg) {
  UNUSED(self);
  Py_buffer lib;
  if (PyObject_GetBuffer(arg, &lib, PyBUF_SIMPLE) < 0) return NULL;
  char path[4096];
  Bytes text = {0};
  int status = -1, err = 0;
  Py_BEGIN_ALLOW_THREADS
  if (temp_path(path, sizeof(path), ".so") < 0) err = errno;
  else {
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, lib.buf, (size_t)lib.len) == lib.len;
    if (fd >= 0) close(fd);
    if (!ok) err = errno ? errno : EIO;
    else {
      char *argv[] = {"objdump", "-d", path, NULL};
      status = run_capture(argv, "", 0, &text, compile_timeout());
      if (status < 0) err = errno;
    }
    unlink(path);
  }
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&lib);
  PyObject *ret = NULL;
  if (status < 0) PyErr_Format(PyExc_RuntimeError, "could not run objdump: %s", strerror(err));
  else if (status != 0) PyErr_Format(PyExc_RuntimeError, "objdump failed (exit status %d):\n%s", status, text.data ? text.data : "");
  else ret = PyUnicode_DecodeUTF8(text.data ? text.data : "", (Py_ssize_t)text.len, "replace");
  free(text.data);
  return ret;
}

static PyMethodDef ClangCompiler_methods[] = {
  {"compile", ClangCompiler_compile, METH_O, "compile(src) -> bytes of a shared object built by clang ($CC)"},
  {"disassemble", ClangCompiler_disassemble, METH_O, "disassemble(lib) -> objdump -d's text"},
  {NULL, NULL, 0, NULL},
};

static PyTypeObject ClangCompiler_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.ClangCompiler",
  .tp_basicsize = sizeof(CompilerObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "tinygrad's clang compiler for the CPU: C source -> a shared object's bytes (cachekey 'compile_clang_so')",
  .tp_methods = ClangCompiler_methods,
  .tp_base = &Compiler_Type,
  .tp_init = (initproc)ClangCompiler_init,
};

/* ClangObjectCompiler: the clang step of tinygrad's ClangJITCompiler alone (the same command, so the same bytes), for
 * whoever loads objects itself: tinygrad's jit_loader (the bridge) or LLVM's JIT linker. */
static int ClangObjectCompiler_init(CompilerObject *self, PyObject *args, PyObject *kw) {
  return init_with_default_key(self, args, kw, "|O:ClangObjectCompiler", "compile_clang_obj");
}

/* compile(src) -> the relocatable object's bytes */
static PyObject *ClangObjectCompiler_compile(PyObject *self, PyObject *src) { UNUSED(self); return clang_build(src, false); }

static PyMethodDef ClangObjectCompiler_methods[] = {
  {"compile", ClangObjectCompiler_compile, METH_O, "compile(src) -> bytes of the relocatable object tinygrad's ClangJITCompiler "
   "has clang ($CC) make before its jit_loader"},
  {NULL, NULL, 0, NULL},
};

static PyTypeObject ClangObjectCompiler_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.ClangObjectCompiler",
  .tp_basicsize = sizeof(CompilerObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "clang for the CPU as tinygrad's ClangJITCompiler runs it: C source -> a relocatable object's bytes "
            "(cachekey 'compile_clang_obj')",
  .tp_methods = ClangObjectCompiler_methods,
  .tp_base = &Compiler_Type,
  .tp_init = (initproc)ClangObjectCompiler_init,
};

int tinyc_init_compiler_cpu(PyObject *m) {
  if (PyType_Ready(&ClangCompiler_Type) < 0 || PyType_Ready(&ClangObjectCompiler_Type) < 0 ||
      compile_stats_add("clang_runs", &stat_clang_runs) < 0) return -1;
  if (tinyc_add(m, "ClangObjectCompiler", (PyObject *)&ClangObjectCompiler_Type) < 0) return -1;
  return tinyc_add(m, "ClangCompiler", (PyObject *)&ClangCompiler_Type);
}
