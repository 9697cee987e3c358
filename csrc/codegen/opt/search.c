/* tinygrad/codegen/opt/search.py in C: BEAM search over a kernel's opts.
 *
 * The algorithm is tinygrad 0.12.0's: each step expands every kernel of the beam by every action that applies, builds
 * the candidates, drops the ones whose binary was already seen or that compute 1000x more than the cheapest, times the
 * rest and keeps the `amt` fastest, until a step improves the best time by less than BEAM_MIN_PROGRESS.
 *
 * Where tinyc differs is how a step's candidates are built. Codegen makes Python objects (UOps), so it runs here, in
 * the calling thread, under the GIL; each candidate's source goes to a pool of native threads (PARALLEL, default the
 * core count) that compile while the next candidates are generated. The compiler releases the GIL while clang runs, so
 * the pool's threads take it only to start and finish a compile. Timing waits until the step's compiles are done, so
 * no compile competes with a timed kernel for the cores. With `executor=` (any concurrent.futures.Executor, or a
 * dask.distributed Client) whole candidates are built elsewhere and come back as ProgramSpecs with their lib.
 *
 * tinygrad's search.py imports engine.realize (CompiledRunner) and device (Buffer), so this file sits above the engine
 * layer (tests/test_layers.py); apply_opts reaches it through postrange_beam_hook, as tinygrad's apply_opts imports
 * search inside the function. */
#include "search.h"
#include "postrange.h"
#include "opt.h"
#include "../codegen.h"
#include "../../device.h"
#include "../../engine/realize.h"
#include "../../helpers/diskcache.h"
#include <math.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static PyObject *actions;            /* tinyc.search.actions: tinygrad's list, built at import from the same switches */
static long beam_debug, debug_level;  /* BEAM_DEBUG (getenv, at import), DEBUG (a ContextVar) as tinygrad reads them */
static EnvVar ignore_beam_cache = {"IGNORE_BEAM_CACHE", 0, 0, false};   /* a ContextVar; the environment's at each search */
static PyObject *pickle_dumps, *pickle_loads;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double env_double(const char *name, double dflt) {
  const char *v = getenv(name);
  return v && *v ? strtod(v, NULL) : dflt;
}

/* ================================================================================================
 * actions: tinygrad's list, in its order
 * ================================================================================================ */

static int add_action(PyObject *list, OptOpsId op, PyObject *axis, PyObject *arg) {
  PyObject *o = opt_new(optops_members[op], axis, arg);
  int rc = o ? PyList_Append(list, o) : -1;
  Py_XDECREF(o);
  return rc;
}

/* Opt(op, axis, amt) for amt in amts for axis in range(naxes) */
static int add_grid(PyObject *list, OptOpsId op, const long *amts, int namts, int naxes) {
  for (int a = 0; a < namts; a++)
    for (int axis = 0; axis < naxes; axis++) {
      PyObject *ax = PyLong_FromLong(axis), *amt = PyLong_FromLong(amts[a]);
      int rc = ax && amt ? add_action(list, op, ax, amt) : -1;
      Py_XDECREF(ax); Py_XDECREF(amt);
      if (rc < 0) return -1;
    }
  return 0;
}

/* Opt(op, axis, arg) with int parts */
static int add_one(PyObject *list, OptOpsId op, long axis, PyObject *arg) {
  PyObject *ax = PyLong_FromLong(axis);
  int rc = ax && arg ? add_action(list, op, ax, arg) : -1;
  Py_XDECREF(ax); Py_XDECREF(arg);
  return rc;
}

static PyObject *build_actions(void) {
  static const long upcast[] = {0, 2, 3, 4, 5, 7}, unroll[] = {0, 4, 7}, local[] = {2, 3, 4, 8, 13, 16, 29},
                    grouptop[] = {13, 16, 28, 29, 32, 49, 64, 256}, group[] = {0, 4, 8, 16}, padto[] = {32},
                    thread[] = {2, 3, 4, 5, 8, 12, 16, 24, 32, 64};
  long use_tc = env_long("TC", 1), tc_opt = env_long("TC_OPT", 2);
  PyObject *l = PyList_New(0);
  if (!l || add_grid(l, OPTOPS_UPCAST, upcast, 6, 8) < 0 || add_grid(l, OPTOPS_UNROLL, unroll, 3, 5) < 0 ||
      add_grid(l, OPTOPS_LOCAL, local, 7, 6) < 0 || add_grid(l, OPTOPS_GROUPTOP, grouptop, 8, 3) < 0 ||
      add_grid(l, OPTOPS_GROUP, group, 4, 3) < 0 || (env_long("BEAM_PADTO", 0) && add_grid(l, OPTOPS_PADTO, padto, 1, 7) < 0) ||
      add_one(l, OPTOPS_LOCAL, 0, PyLong_FromLong(32)) < 0 || add_one(l, OPTOPS_LOCAL, 6, PyLong_FromLong(2)) < 0 ||
      add_one(l, OPTOPS_TC, 0, Py_BuildValue("(lll)", -1L, 0L, use_tc)) < 0)
    goto fail;
  for (long axis = 0; axis < 9; axis++)   /* covers resnet's kernels: 3 global x 3 reduce axes */
    if (add_one(l, OPTOPS_TC, axis, Py_BuildValue("(lll)", -1L, tc_opt, use_tc)) < 0) goto fail;
  for (long a0 = 0; a0 < 5; a0++)
    for (long a1 = a0 + 1; a1 < 5; a1++)
      if (add_one(l, OPTOPS_SWAP, a0, PyLong_FromLong(a1)) < 0) goto fail;
  if (add_grid(l, OPTOPS_THREAD, thread, 10, 3) < 0 || (env_long("NOLOCALS", 0) && add_action(l, OPTOPS_NOLOCALS, NULL, NULL) < 0)) goto fail;
  return l;
fail:
  Py_XDECREF(l);
  return NULL;
}

/* ================================================================================================
 * get_kernel_actions
 * ================================================================================================ */

/* Is the error KernelOptError? Then it is cleared (the action does not apply) and 1 returned. */
static int cleared_opt_error(void) {
  if (!PyErr_ExceptionMatches(KernelOptError)) return 0;
  PyErr_Clear();
  return 1;
}

/* Skip an action on an axis the kernel does not have, or one that splits an axis by its whole size when the
 * action of amount 0 on it (which does the same) is in the list: 1 skip, 0 keep, -1 error. */
static int skip_action(PyObject *s, OptObject *a, PyObject *acts) {
  if (a->axis == Py_None || a->op_id == OPTOPS_TC) return 0;
  Py_ssize_t ax;
  if (scheduler_real_axis(s, (PyObject *)a, &ax) < 0) return cleared_opt_error() ? 1 : -1;
  PyObject *shape = scheduler_full_shape(s);
  if (!shape) return -1;
  int skip = ax >= PyList_GET_SIZE(shape);
  if (!skip && ax >= 0) {
    int same = PyObject_RichCompareBool(PyList_GET_ITEM(shape, ax), a->arg, Py_EQ);
    PyObject *z = same > 0 ? PyLong_FromLong(0) : NULL, *zero = z ? opt_new(a->op, a->axis, z) : NULL;
    Py_XDECREF(z);
    skip = same < 0 ? -1 : same == 0 ? 0 : zero ? PySequence_Contains(acts, zero) : -1;
    Py_XDECREF(zero);
  }
  Py_DECREF(shape);
  return skip;
}

/* the product of the sizes of the axes whose type is in mask (symbolic sizes multiply as UOps) */
static PyObject *axes_product(PyObject *shape, PyObject *types, const AxisTypeId *want, int nwant) {
  PyObject *acc = PyLong_FromLong(1);
  for (Py_ssize_t i = 0; acc && i < PyList_GET_SIZE(shape) && i < PyList_GET_SIZE(types); i++)
    for (int w = 0; w < nwant; w++)
      if (PyList_GET_ITEM(types, i) == axistype_members[want[w]]) { Py_SETREF(acc, PyNumber_Multiply(acc, PyList_GET_ITEM(shape, i))); break; }
  return acc;
}

/* prod(tc.dims)//tc.threads of the kernel's tensor core, 1 without one */
static PyObject *tc_upcast(PyObject *s2) {
  PyObject *tc = getattr_literal(s2, "tensor_core");
  if (!tc) { if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL; PyErr_Clear(); return PyLong_FromLong(1); }
  int truth = PyObject_IsTrue(tc);
  PyObject *ret = NULL, *dims = NULL, *threads = NULL;
  if (truth == 0) ret = PyLong_FromLong(1);
  else if (truth > 0 && (dims = getattr_literal(tc, "dims")) && (threads = getattr_literal(tc, "threads"))) {
    PyObject *seq = PySequence_Fast(dims, "TensorCore.dims must be a sequence"), *p = seq ? PyLong_FromLong(1) : NULL;
    for (Py_ssize_t i = 0; p && i < PySequence_Fast_GET_SIZE(seq); i++) Py_SETREF(p, PyNumber_Multiply(p, PySequence_Fast_GET_ITEM(seq, i)));
    ret = p ? PyNumber_FloorDivide(p, threads) : NULL;
    Py_XDECREF(p); Py_XDECREF(seq);
  }
  Py_XDECREF(tc); Py_XDECREF(dims); Py_XDECREF(threads);
  return ret;
}

/* Within BEAM_UPCAST_MAX / BEAM_LOCAL_MAX? 1 yes, 0 no, -1 error. */
static int within_limits(PyObject *s2, PyObject *max_up, PyObject *max_lcl) {
  static const AxisTypeId up_axes[] = {AXIS_UPCAST, AXIS_UNROLL}, lcl_axes[] = {AXIS_WARP, AXIS_LOCAL, AXIS_GROUP_REDUCE};
  PyObject *shape = scheduler_full_shape(s2), *types = shape ? scheduler_axis_types(s2) : NULL;
  PyObject *up = types ? axes_product(shape, types, up_axes, 2) : NULL, *lcl = up ? axes_product(shape, types, lcl_axes, 3) : NULL;
  PyObject *tcu = lcl ? tc_upcast(s2) : NULL, *per = tcu ? PyNumber_FloorDivide(up, tcu) : NULL;
  int over_up = per ? PyObject_RichCompareBool(per, max_up, Py_GT) : -1;
  int over_lcl = over_up == 0 ? PyObject_RichCompareBool(lcl, max_lcl, Py_GT) : over_up;
  if (over_up > 0 || over_lcl > 0) {
    if (env_long("BEAM_LOG_SURPASS_MAX", 0)) PySys_FormatStdout("too many upcast/local. up//tc_up=%S, max_up=%S, lcl=%S, max_lcl=%S\n", per, max_up, lcl, max_lcl);
  }
  Py_XDECREF(shape); Py_XDECREF(types); Py_XDECREF(up); Py_XDECREF(lcl); Py_XDECREF(tcu); Py_XDECREF(per);
  if (over_up < 0 || over_lcl < 0) return -1;
  return !(over_up || over_lcl);
}

/* tinygrad's get_kernel_actions: {0: s (with include_0), i+1: s with actions[i] applied} for every action that applies */
static PyObject *kernel_actions(PyObject *s, int include_0, PyObject *max_up, PyObject *acts) {
  PyObject *acted = PyDict_New(), *seq = acted ? PySequence_Fast(acts, "actions must be a sequence of Opt") : NULL;
  PyObject *up = max_up != Py_None ? Py_NewRef(max_up) : PyLong_FromLong(env_long("BEAM_UPCAST_MAX", 256));
  PyObject *lcl = PyLong_FromLong(env_long("BEAM_LOCAL_MAX", 1024)), *zero = PyLong_FromLong(0);
  if (!seq || !up || !lcl || !zero || (include_0 && PyDict_SetItem(acted, zero, s) < 0)) goto fail;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *a = PySequence_Fast_GET_ITEM(seq, i);
    if (!Opt_Check(a)) { PyErr_Format(PyExc_TypeError, "actions[%zd] is %.100s, not an Opt", i, Py_TYPE(a)->tp_name); goto fail; }
    int skip = skip_action(s, (OptObject *)a, seq);
    if (skip < 0) goto fail;
    if (skip) continue;
    PyObject *s2 = scheduler_copy(s), *r = s2 ? scheduler_apply_opt(s2, a, 1) : NULL;
    int keep = r ? within_limits(s2, up, lcl) : cleared_opt_error() ? 0 : -1;
    PyObject *key = keep > 0 ? PyLong_FromSsize_t(i + 1) : NULL;
    if (keep > 0 && (!key || PyDict_SetItem(acted, key, s2) < 0)) keep = -1;
    Py_XDECREF(r); Py_XDECREF(s2); Py_XDECREF(key);
    if (keep < 0) goto fail;
  }
  Py_DECREF(seq); Py_DECREF(up); Py_DECREF(lcl); Py_DECREF(zero);
  return acted;
fail:
  Py_XDECREF(acted); Py_XDECREF(seq); Py_XDECREF(up); Py_XDECREF(lcl); Py_XDECREF(zero);
  return NULL;
}

/* ================================================================================================
 * buffers and timing
 * ================================================================================================ */

typedef struct { long long arg; UOp *g; } Global;

static int global_cmp(const void *a, const void *b) {
  const Global *x = a, *y = b;
  return (x->arg > y->arg) - (x->arg < y->arg);
}

/* a Buffer on `device` of each global's size and base dtype */
static PyObject *buffers_of(const Global *gs, Py_ssize_t n, PyObject *device) {
  PyObject *ret = PyList_New(n);
  for (Py_ssize_t i = 0; ret && i < n; i++) {
    Py_ssize_t size = gs[i].g->dtype->size;
    if (size < 0) { PyErr_Format(PyExc_ValueError, "DEFINE_GLOBAL %S has no size: BEAM cannot make its buffer", gs[i].g->arg); Py_CLEAR(ret); break; }
    PyObject *b = PyObject_CallFunction((PyObject *)&Buffer_Type, "OnO", device, size, (PyObject *)dtype_base(gs[i].g->dtype));
    if (!b) { Py_CLEAR(ret); break; }
    PyList_SET_ITEM(ret, i, b);
  }
  return ret;
}

/* tinygrad's bufs_from_ast: a Buffer on `device` for every DEFINE_GLOBAL of the kernel, in the order of their args */
PyObject *bufs_from_ast(UOp *ast, PyObject *device) {
  PyObject *topo = uop_toposort_list(ast, NULL), *ret = NULL;
  if (!topo) return NULL;
  Global *gs = PyMem_Calloc((size_t)PyList_GET_SIZE(topo) + 1, sizeof(Global));
  Py_ssize_t n = 0;
  if (!gs) { Py_DECREF(topo); return PyErr_NoMemory(); }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topo); i++) {
    UOp *u = (UOp *)PyList_GET_ITEM(topo, i);
    if (u->op != OP_DEFINE_GLOBAL) continue;
    if (!PyLong_Check(u->arg) || !u->dtype->is_ptr) { PyErr_SetString(PyExc_TypeError, "a DEFINE_GLOBAL needs an int arg and a pointer dtype"); goto done; }
    gs[n] = (Global){PyLong_AsLongLong(u->arg), u};
    if (gs[n++].arg == -1 && PyErr_Occurred()) goto done;
  }
  qsort(gs, (size_t)n, sizeof(Global), global_cmp);
  ret = buffers_of(gs, n, device);
done:
  PyMem_Free(gs);
  Py_DECREF(topo);
  return ret;
}

/* tinygrad's get_test_global_size: halve the last dims over 16 until the launch is at most max_global_size threads.
 * Returns the new list and sets *factor to how many times fewer threads run. */
static PyObject *test_global_size(PyObject *global_size, long max_global_size, PyObject *var_vals, double *factor) {
  PyObject *seq = PySequence_Fast(global_size, "global_size must be a sequence");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  long long dims[8];
  if (n > 8) { Py_DECREF(seq); return PyErr_Format(PyExc_ValueError, "global_size has %zd dims", n); }
  double input = 1;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *v = PySequence_Fast_GET_ITEM(seq, i);
    PyObject *iv = UOp_Check(v) ? uop_sym_infer((UOp *)v, var_vals) : Py_NewRef(v);
    dims[i] = iv ? PyLong_AsLongLong(iv) : -1;
    Py_XDECREF(iv);
    if (dims[i] == -1 && PyErr_Occurred()) { Py_DECREF(seq); return NULL; }
    input *= (double)dims[i];
  }
  Py_DECREF(seq);
  for (;;) {
    double total = 1;
    for (Py_ssize_t i = 0; i < n; i++) total *= (double)dims[i];
    Py_ssize_t j = n - 1;
    while (j >= 0 && dims[j] <= 16) j--;
    /* done when small enough, or when every dim is at most 16 (tinygrad would loop forever there) */
    if (total <= (double)max_global_size || j < 0) { *factor = total > 0 ? input / total : 1; break; }
    dims[j] /= 2;
  }
  PyObject *ret = PyList_New(n);
  for (Py_ssize_t i = 0; ret && i < n; i++) {
    PyObject *v = PyLong_FromLongLong(dims[i]);
    if (!v) { Py_CLEAR(ret); break; }
    PyList_SET_ITEM(ret, i, v);
  }
  return ret;
}

/* tinygrad's _time_program: the kernel run cnt times (stopping early once it is slower than early_stop), each time
 * scaled up by the threads the test size left out. [inf]*cnt when the program cannot be loaded (AssertionError). */
PyObject *time_program(PyObject *p, PyObject *rawbufs, PyObject *var_vals, long cnt, double early_stop, int allow_test_size,
                       long max_global_size) {
  double factor = 1;
  PyObject *tms = PyList_New(0), *gs = NULL, *car = NULL, *globals = NULL, *bufs = NULL, *call_args = NULL, *kw = NULL;
  Py_INCREF(p);
  if (!tms) goto fail;
  if (allow_test_size && max_global_size > 0) {
    PyObject *size = getattr_literal(p, "global_size");
    gs = size ? test_global_size(size, max_global_size, var_vals, &factor) : NULL;
    Py_XDECREF(size);
    if (!gs) goto fail;
    Py_SETREF(p, spec_replace(p, "global_size", gs));
    if (!p) goto fail;
  }
  if (!(car = PyObject_CallOneArg((PyObject *)&CompiledRunner_Type, p))) {
    if (!PyErr_ExceptionMatches(PyExc_AssertionError)) goto fail;
    PyErr_Clear();
    for (long i = 0; i < cnt; i++) {
      PyObject *v = PyFloat_FromDouble(INFINITY);
      if (!v || PyList_Append(tms, v) < 0) { Py_XDECREF(v); goto fail; }
      Py_DECREF(v);
    }
    goto done;
  }
  PyObject *carp = getattr_literal(car, "p");
  globals = carp ? getattr_literal(carp, "globals") : NULL;
  Py_XDECREF(carp);
  PyObject *gseq = globals ? PySequence_Fast(globals, "ProgramSpec.globals must be a sequence") : NULL;
  if (!gseq || !(bufs = PyList_New(PySequence_Fast_GET_SIZE(gseq)))) { Py_XDECREF(gseq); goto fail; }
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(gseq); i++) {
    PyObject *b = PyObject_GetItem(rawbufs, PySequence_Fast_GET_ITEM(gseq, i));
    if (!b) { Py_DECREF(gseq); goto fail; }
    PyList_SET_ITEM(bufs, i, b);
  }
  Py_DECREF(gseq);
  if (!(call_args = PyTuple_Pack(2, bufs, var_vals)) || !(kw = Py_BuildValue("{sO}", "wait", Py_True))) goto fail;
  double best = INFINITY;
  for (long i = 0; i < cnt; i++) {
    PyObject *t = PyObject_Call(car, call_args, kw);
    double secs = t ? PyFloat_AsDouble(t) : -1;
    Py_XDECREF(t);
    if (secs == -1 && PyErr_Occurred()) goto fail;
    PyObject *v = PyFloat_FromDouble(secs * factor);
    if (!v || PyList_Append(tms, v) < 0) { Py_XDECREF(v); goto fail; }
    Py_DECREF(v);
    if (secs * factor < best) best = secs * factor;
    if (!isnan(early_stop) && early_stop < best) break;
  }
done:
  Py_XDECREF(gs); Py_XDECREF(car); Py_XDECREF(globals); Py_XDECREF(bufs); Py_XDECREF(call_args); Py_XDECREF(kw); Py_XDECREF(p);
  return tms;
fail:
  Py_CLEAR(tms);
  goto done;
}

/* ================================================================================================
 * The compile pool: native threads that compile the sources codegen hands them
 * ================================================================================================ */

typedef enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE } JobState;

typedef struct Job {
  struct Job *next_queued, *next_all;
  PyObject *compiler, *src;     /* owned; touched only with the GIL held */
  PyObject *lib;                /* the result, or NULL with exc set */
  PyObject *exc;                /* the exception the compile raised */
  double started, seconds;      /* when the compile started, and how long it took */
  JobState state;
} Job;

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t queued, finished;
  Job *head, *tail, *all;
  pthread_t *threads;
  int nthreads;
  bool stopping;
} Pool;

/* the pending exception, normalized, with its traceback; cleared */
static PyObject *fetch_exception(void) {
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  PyErr_NormalizeException(&t, &v, &tb);
  if (v && tb) PyException_SetTraceback(v, tb);
  Py_XDECREF(t); Py_XDECREF(tb);
  return v;
}

/* raise a saved exception again */
static void raise_saved(PyObject *exc) {
  PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), Py_NewRef(exc), PyException_GetTraceback(exc));
}

/* compile the job's source (GIL held): lib, or exc */
static void run_job(Job *job) {
  job->lib = PyObject_CallMethod(job->compiler, "compile_cached", "O", job->src);
  job->seconds = now() - job->started;
  if (!job->lib) job->exc = fetch_exception();
}

/* The thread that codegens (under the GIL) hands out the work: its compiles queue behind its codegen, so on a machine
 * with as many compiles as cores it must not wait for a core. The compile threads, and the compilers they start (a child
 * inherits its thread's nice value), run a few nice levels lower; nothing changes when a core is free. */
#define POOL_NICENESS 5
static void lower_thread_priority(void) {
  pid_t tid = (pid_t)syscall(SYS_gettid);
  errno = 0;
  int nice_now = getpriority(PRIO_PROCESS, (id_t)tid);
  if (errno == 0) (void)setpriority(PRIO_PROCESS, (id_t)tid, nice_now + POOL_NICENESS);   /* best effort */
}

static void *pool_worker(void *arg) {
  Pool *pool = arg;
  lower_thread_priority();
  for (;;) {
    pthread_mutex_lock(&pool->lock);
    while (!pool->head && !pool->stopping) pthread_cond_wait(&pool->queued, &pool->lock);
    Job *job = pool->head;
    if (!job) { pthread_mutex_unlock(&pool->lock); return NULL; }   /* stopping, nothing left */
    if (!(pool->head = job->next_queued)) pool->tail = NULL;
    job->state = JOB_RUNNING;
    job->started = now();
    pthread_mutex_unlock(&pool->lock);
    /* the GIL only to start and finish: the compiler releases it while its subprocess runs */
    PyGILState_STATE g = PyGILState_Ensure();
    run_job(job);
    PyGILState_Release(g);
    pthread_mutex_lock(&pool->lock);
    job->state = JOB_DONE;
    pthread_cond_broadcast(&pool->finished);
    pthread_mutex_unlock(&pool->lock);
  }
}

/* a pool of n threads; n == 0 makes none (compiles then run in the calling thread). -1 with an exception. */
static int pool_start(Pool *pool, int n) {
  *pool = (Pool){.nthreads = 0};
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->queued, NULL);
  pthread_cond_init(&pool->finished, NULL);
  if (n <= 0) return 0;
  if (!(pool->threads = calloc((size_t)n, sizeof(pthread_t)))) { PyErr_NoMemory(); return -1; }
  for (; pool->nthreads < n; pool->nthreads++)
    if (pthread_create(&pool->threads[pool->nthreads], NULL, pool_worker, pool) != 0) break;
  if (pool->nthreads == 0) { PyErr_SetString(PyExc_RuntimeError, "BEAM could not start a compile thread"); return -1; }
  return 0;
}

/* Stop the threads: queued jobs are dropped, running ones finish (the GIL is released while waiting for them). Then
 * every job is freed. Keeps a pending exception. */
static void pool_stop(Pool *pool) {
  pthread_mutex_lock(&pool->lock);
  pool->stopping = true;
  pool->head = pool->tail = NULL;
  pthread_cond_broadcast(&pool->queued);
  pthread_mutex_unlock(&pool->lock);
  Py_BEGIN_ALLOW_THREADS
  for (int i = 0; i < pool->nthreads; i++) pthread_join(pool->threads[i], NULL);
  Py_END_ALLOW_THREADS
  free(pool->threads);
  for (Job *j = pool->all, *next; j; j = next) {
    next = j->next_all;
    Py_XDECREF(j->compiler); Py_XDECREF(j->src); Py_XDECREF(j->lib); Py_XDECREF(j->exc);
    free(j);
  }
  pthread_mutex_destroy(&pool->lock);
  pthread_cond_destroy(&pool->queued);
  pthread_cond_destroy(&pool->finished);
}

/* Queue a compile of src; without threads it runs here and now. NULL with an exception (only MemoryError). */
static Job *pool_submit(Pool *pool, PyObject *compiler, PyObject *src) {
  Job *job = calloc(1, sizeof(Job));
  if (!job) return (Job *)PyErr_NoMemory();
  job->compiler = Py_NewRef(compiler);
  job->src = Py_NewRef(src);
  job->next_all = pool->all;
  pool->all = job;
  if (pool->nthreads == 0) {
    job->started = now();
    run_job(job);
    job->state = JOB_DONE;
    return job;
  }
  pthread_mutex_lock(&pool->lock);
  if (pool->tail) pool->tail->next_queued = job; else pool->head = job;
  pool->tail = job;
  pthread_cond_signal(&pool->queued);
  pthread_mutex_unlock(&pool->lock);
  /* let a thread that waits for the GIL take it now, not after the switch interval */
  Py_BEGIN_ALLOW_THREADS
  Py_END_ALLOW_THREADS
  return job;
}

/* Wait (GIL released) until the job is done, or until it has compiled for longer than timeout seconds (a queued job
 * waits for its turn), checking for Ctrl-C every 50 ms. 1 done, 0 timed out, -1 with an exception (KeyboardInterrupt). */
static int pool_wait(Pool *pool, Job *job, double timeout) {
  for (;;) {
    JobState state;
    double started;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&pool->lock);
    if (job->state != JOB_DONE) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      long ns = ts.tv_nsec + 50000000L;
      ts.tv_sec += ns / 1000000000L;
      ts.tv_nsec = ns % 1000000000L;
      pthread_cond_timedwait(&pool->finished, &pool->lock, &ts);
    }
    state = job->state;
    started = job->started;
    pthread_mutex_unlock(&pool->lock);
    Py_END_ALLOW_THREADS
    if (state == JOB_DONE) return 1;
    if (PyErr_CheckSignals() < 0) return -1;
    if (state == JOB_RUNNING && now() - started > timeout) return 0;
  }
}

/* ================================================================================================
 * One step's candidates: built here (codegen + the pool) or by an executor
 * ================================================================================================ */

typedef struct {
  PyObject *sched;     /* the candidate Scheduler (borrowed from the step's list) */
  PyObject *spec;      /* its ProgramSpec, NULL when dropped */
  PyObject *lib;       /* its binary once built */
  PyObject *future;    /* the executor's future */
  Job *job;            /* the pool's compile */
  double compile_s;
} Candidate;

/* what a search spent, for beam_stats(): seconds in codegen (this thread), waiting for the step's builds after codegen,
 * compiling (summed over the threads), timing; steps, candidates in all steps, built and timed */
typedef struct {
  double codegen_s, wait_s, compile_s, timing_s;
  Py_ssize_t steps, total_cands, total_built, total_timed;
} BeamStats;

typedef struct {
  PyObject *ren, *compiler, *device, *executor, *timer, *on_step, *rawbufs, *var_vals;
  int amt, allow_test_size;
  double timeout;      /* BEAM_TIMEOUT_SEC */
  long uops_max;       /* BEAM_UOPS_MAX */
  bool strict;         /* BEAM_STRICT_MODE: a candidate's error stops the search */
  bool progress;       /* the progress line on stderr */
  double t0;
  Py_ssize_t step, built, timed, ncand;
  double best;
  Pool pool;
  BeamStats stats;
} Search;

static BeamStats last_stats;   /* the last search's, for beam_stats() */

static void time_to_str(double s, char *out, size_t n) {
  if (isinf(s)) snprintf(out, n, "inf");
  else if (s < 1e-3) snprintf(out, n, "%.2fus", s * 1e6);
  else if (s < 1) snprintf(out, n, "%.2fms", s * 1e3);
  else snprintf(out, n, "%.2fs", s);
}

static void show_progress(Search *S, bool end_of_step) {
  if (!S->progress) return;
  char best[32];
  time_to_str(S->best, best, sizeof(best));
  PySys_WriteStderr("\r\033[KBEAM step %zd: %zd/%zd built, %zd timed, best %s, %.2fs%s", S->step, S->built, S->ncand, S->timed, best,
                    now() - S->t0, end_of_step && (debug_level >= 2 || beam_debug) ? "\n" : "");
}

/* A candidate that cannot be built is dropped, as tinygrad drops it (its reason printed under BEAM_DEBUG). Ctrl-C, and
 * any error under BEAM_STRICT_MODE, stop the search instead: -1 then, else 0. */
static int drop(Search *S, Candidate *c, const char *why) {
  if (PyErr_Occurred() && (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) || PyErr_ExceptionMatches(PyExc_SystemExit) || S->strict)) return -1;
  PyObject *exc = PyErr_Occurred() ? fetch_exception() : NULL;
  if (beam_debug) {
    PyObject *opts = getattr_literal(c->sched, "applied_opts");
    if (!opts) PyErr_Clear();
    PySys_FormatStderr("\nBEAM dropped %S: %s%s%S\n", opts ? opts : Py_None, why, exc ? ": " : "", exc ? exc : Py_None);
    Py_XDECREF(opts);
  }
  Py_XDECREF(exc);
  Py_CLEAR(c->spec);
  Py_CLEAR(c->lib);
  return 0;
}

/* The uops limit (BEAM_UOPS_MAX): 1 within it, 0 over (dropped), -1 error. */
static int uops_within_max(Search *S, Candidate *c) {
  if (S->uops_max <= 0) return 1;
  PyObject *uops = getattr_literal(c->spec, "uops");
  Py_ssize_t n = !uops ? -1 : uops == Py_None ? 0 : PyObject_Length(uops);
  Py_XDECREF(uops);
  if (n < 0) return drop(S, c, "its uops could not be read") < 0 ? -1 : 0;
  if (n < S->uops_max) return 1;
  if (env_long("BEAM_LOG_SURPASS_MAX", 0)) PySys_FormatStdout("too many uops. len(p.uops)=%zd, uops_max=%ld\n", n, S->uops_max);
  return drop(S, c, "too many uops") < 0 ? -1 : 0;
}

static PyObject *optimized_test_ast(PyObject *sched) {
  PyObject *cp = scheduler_copy(sched), *ast = cp ? scheduler_get_optimized_ast(cp, "test") : NULL;
  Py_XDECREF(cp);
  return ast;
}

/* codegen here; the compile queued on the pool (or taken from the spec, when the renderer compiled it) */
static int build_local(Search *S, Candidate *c) {
  PyObject *ast = optimized_test_ast(c->sched);
  c->spec = ast ? get_program_uncompiled((UOp *)ast, S->ren) : NULL;
  Py_XDECREF(ast);
  if (!c->spec) return drop(S, c, "codegen failed");
  int ok = uops_within_max(S, c);
  if (ok <= 0) return ok;
  PyObject *src = getattr_literal(c->spec, "src");
  if (!src) return drop(S, c, "it has no source");
  c->job = pool_submit(&S->pool, S->compiler, src);
  Py_DECREF(src);
  return c->job ? 0 : -1;
}

/* the finished compile of a local candidate */
static int collect_local(Search *S, Candidate *c) {
  if (!c->spec || !c->job) return 0;
  int done = pool_wait(&S->pool, c->job, S->timeout);
  if (done < 0) return -1;
  if (!done) return drop(S, c, "its compile timed out (BEAM_TIMEOUT_SEC)");
  if (!c->job->lib) {
    raise_saved(c->job->exc);
    return drop(S, c, "its compile failed");
  }
  c->compile_s = c->job->seconds;
  PyObject *spec = spec_replace(c->spec, "lib", c->job->lib);
  if (!spec) return drop(S, c, "its ProgramSpec could not take the lib");
  Py_SETREF(c->spec, spec);
  c->lib = Py_NewRef(c->job->lib);
  S->built++;
  show_progress(S, false);
  return 0;
}

static int submit_remote(Search *S, Candidate *c, PyObject *build_fn) {
  PyObject *ast = optimized_test_ast(c->sched);
  c->future = ast ? PyObject_CallMethod(S->executor, "submit", "OOO", build_fn, ast, S->device) : NULL;
  Py_XDECREF(ast);
  if (!c->future) return drop(S, c, "the executor did not take it");
  c->spec = Py_NewRef(Py_None);   /* a placeholder until the result comes */
  return 0;
}

/* a candidate built by the executor: its worker returns the ProgramSpec with its lib */
static int collect_remote(Search *S, Candidate *c) {
  if (!c->future) return 0;
  double st = now();
  PyObject *spec = PyObject_CallMethod(c->future, "result", "d", S->timeout);
  Py_CLEAR(c->spec);
  if (!spec) return drop(S, c, "its build failed or timed out on the executor");
  c->spec = spec;
  c->compile_s = now() - st;
  int ok = uops_within_max(S, c);
  if (ok <= 0) return ok;
  c->lib = getattr_literal(spec, "lib");
  if (!c->lib || !PyBytes_Check(c->lib)) { if (c->lib) Py_CLEAR(c->lib); return drop(S, c, "the executor returned no lib"); }
  S->built++;
  show_progress(S, false);
  return 0;
}

static void cancel_futures(Candidate *cs, Py_ssize_t n) {
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  for (Py_ssize_t i = 0; i < n; i++) {
    if (!cs[i].future) continue;
    PyObject *r = PyObject_CallMethod(cs[i].future, "cancel", NULL);
    if (!r) PyErr_Clear();
    Py_XDECREF(r);
  }
  PyErr_Restore(t, v, tb);
}

static void free_candidates(Candidate *cs, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; i++) { Py_XDECREF(cs[i].spec); Py_XDECREF(cs[i].lib); Py_XDECREF(cs[i].future); }
  PyMem_Free(cs);
}

static PyObject *beam_build_fn;   /* _C._beam_build, what an executor's workers run */

/* build every candidate of the step: 0, or -1 with an exception (the search stops) */
static int build_step(Search *S, Candidate *cs, Py_ssize_t n) {
  double st = now();
  for (Py_ssize_t i = 0; i < n; i++)
    if ((S->executor != Py_None ? submit_remote(S, &cs[i], beam_build_fn) : build_local(S, &cs[i])) < 0) goto fail;
  double mid = now();
  for (Py_ssize_t i = 0; i < n; i++) {
    if ((S->executor != Py_None ? collect_remote(S, &cs[i]) : collect_local(S, &cs[i])) < 0) goto fail;
    S->stats.compile_s += cs[i].lib ? cs[i].compile_s : 0;
  }
  S->stats.codegen_s += mid - st;
  S->stats.wait_s += now() - mid;
  S->stats.total_cands += n;
  S->stats.total_built += S->built;
  return 0;
fail:
  cancel_futures(cs, n);
  return -1;
}

/* ================================================================================================
 * Timing a step's candidates and ranking them
 * ================================================================================================ */

/* sym_infer(p.estimates.ops, var_vals) as a double */
static int compute_ops(PyObject *spec, PyObject *var_vals, double *out) {
  PyObject *est = getattr_literal(spec, "estimates"), *ops = est ? getattr_literal(est, "ops") : NULL;
  PyObject *v = !ops ? NULL : UOp_Check(ops) ? uop_sym_infer((UOp *)ops, var_vals) : Py_NewRef(ops);
  *out = v ? PyFloat_AsDouble(v) : -1;
  Py_XDECREF(est); Py_XDECREF(ops); Py_XDECREF(v);
  return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* the best of the timings: the user's timer (seconds, or inf), or time_program's three runs */
static int time_candidate(Search *S, Candidate *c, double early_stop, double *out) {
  if (S->timer != Py_None) {
    PyObject *r = PyObject_CallFunctionObjArgs(S->timer, c->spec, S->rawbufs, NULL);
    *out = r ? PyFloat_AsDouble(r) : -1;
    Py_XDECREF(r);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;   /* a timer that raises stops the search */
  }
  PyObject *tms = time_program(c->spec, S->rawbufs, S->var_vals, 3, early_stop, S->allow_test_size, 65536);
  if (!tms) {
    bool runtime = PyErr_ExceptionMatches(PyExc_RuntimeError);
    if (beam_debug) {
      PyObject *exc = fetch_exception(), *opts = getattr_literal(c->sched, "applied_opts");
      if (!opts) PyErr_Clear();
      PySys_FormatStderr("\nBEAM failed for opts: %S\n%S\n", opts ? opts : Py_None, exc ? exc : Py_None);
      if (exc) raise_saved(exc);
      Py_XDECREF(exc); Py_XDECREF(opts);
    }
    if (!runtime) return -1;
    PyErr_Clear();
    *out = NAN;   /* dropped: it failed to run */
    return 0;
  }
  *out = INFINITY;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tms); i++) {
    double t = PyFloat_AsDouble(PyList_GET_ITEM(tms, i));
    if (t < *out) *out = t;
  }
  Py_DECREF(tms);
  return 0;
}

typedef struct { double tm; Py_ssize_t order; PyObject *sched; } Ranked;

static int ranked_cmp(const void *a, const void *b) {
  const Ranked *x = a, *y = b;
  if (x->tm != y->tm) return x->tm < y->tm ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;   /* stable, as Python's sorted */
}

/* dedup by lib, drop 1000x the least compute, time the rest: out[] gets the timed ones, sorted; their count or -1 */
static Py_ssize_t time_step(Search *S, Candidate *cs, Py_ssize_t n, PyObject *seen_libs, double early_stop, Ranked *out) {
  double least = INFINITY;
  Py_ssize_t k = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    Candidate *c = &cs[i];
    if (!c->lib) continue;
    int seen = PySet_Contains(seen_libs, c->lib);
    if (seen) { if (seen < 0) return -1; continue; }
    double ops;
    if (compute_ops(c->spec, S->var_vals, &ops) < 0) return -1;
    if (ops < least) least = ops;
    if (least * 1000 < ops) {
      if (env_long("BEAM_LOG_SURPASS_MAX", 0)) PySys_WriteStdout("too much compute. %g when least is %g\n", ops, least);
      continue;
    }
    if (PySet_Add(seen_libs, c->lib) < 0) return -1;
    double tm;
    if (time_candidate(S, c, early_stop, &tm) < 0) return -1;
    if (isnan(tm)) continue;
    out[k++] = (Ranked){tm, i, c->sched};
    S->timed++;
    if (tm < S->best) S->best = tm;
    if (beam_debug > 1) {
      char ct[32], rt[32];
      time_to_str(c->compile_s, ct, sizeof(ct));
      time_to_str(tm, rt, sizeof(rt));
      PySys_WriteStderr("\n%7.2fs: %5zd %12s compile/%12s run  %4zd/%4zd\n", now() - S->t0, i, ct, rt, k, n);
    }
    show_progress(S, false);
  }
  qsort(out, (size_t)k, sizeof(Ranked), ranked_cmp);
  return k;
}

/* [(Scheduler, seconds)] of the first n ranked */
static PyObject *ranked_list(const Ranked *r, Py_ssize_t n) {
  PyObject *l = PyList_New(n);
  for (Py_ssize_t i = 0; l && i < n; i++) {
    PyObject *t = Py_BuildValue("(Od)", r[i].sched, r[i].tm);
    if (!t) { Py_CLEAR(l); break; }
    PyList_SET_ITEM(l, i, t);
  }
  return l;
}

/* ================================================================================================
 * beam_search
 * ================================================================================================ */

/* the cache key, tinygrad's fields: ast key, amt, allow_test_size, device, suffix */
static PyObject *cache_key(PyObject *s, int amt, int allow_test_size) {
  PyObject *ast = scheduler_ast(s), *ren = scheduler_ren(s);
  PyObject *key = getattr_literal(ast, "key"), *dev = getattr_literal(ren, "device");
  PyObject *suffix = dev ? getattr_literal(ren, "suffix") : NULL;
  if (!suffix && dev && PyErr_ExceptionMatches(PyExc_AttributeError)) { PyErr_Clear(); suffix = PyUnicode_FromString(""); }
  PyObject *ret = key && suffix ? PyUnicode_FromFormat("ast=%R amt=%d allow_test_size=%s device=%S suffix=%S", key, amt,
                                                       allow_test_size ? "True" : "False", dev, suffix) : NULL;
  Py_XDECREF(key); Py_XDECREF(dev); Py_XDECREF(suffix);
  return ret;
}

/* the cached opts applied to a copy of s; Py_None (new ref) on a miss */
static PyObject *from_cache(PyObject *s, PyObject *key) {
  Py_ssize_t klen;
  const char *k = PyUnicode_AsUTF8AndSize(key, &klen);
  PyObject *val = k ? diskcache_get("beam_search", k, klen) : NULL;
  if (!val || val == Py_None) return val;
  PyObject *opts = PyObject_CallOneArg(pickle_loads, val), *seq = opts ? PySequence_Fast(opts, "the cached opts are not a sequence") : NULL;
  Py_DECREF(val);
  Py_XDECREF(opts);
  if (!seq) { PyErr_Clear(); Py_RETURN_NONE; }   /* an entry that does not unpickle is a miss */
  PyObject *ret = scheduler_copy(s), *applied = ret ? scheduler_applied_opts(ret) : NULL;
  for (Py_ssize_t i = applied ? PyList_GET_SIZE(applied) : 0; ret && i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *r = scheduler_apply_opt(ret, PySequence_Fast_GET_ITEM(seq, i), 1);
    if (!r) Py_CLEAR(ret);
    Py_XDECREF(r);
  }
  Py_DECREF(seq);
  return ret;
}

static int to_cache(PyObject *key, PyObject *best) {
  PyObject *opts = scheduler_applied_opts(best), *t = opts ? PyList_AsTuple(opts) : NULL, *val = t ? PyObject_CallOneArg(pickle_dumps, t) : NULL;
  Py_ssize_t klen;
  const char *k = val ? PyUnicode_AsUTF8AndSize(key, &klen) : NULL;
  int rc = k ? diskcache_put("beam_search", k, klen, PyBytes_AS_STRING(val), PyBytes_GET_SIZE(val)) : -1;
  Py_XDECREF(t); Py_XDECREF(val);
  return rc;
}

/* {expr: (vmin+vmax)//2} of the kernel's variables: the values BEAM times symbolic kernels with */
static PyObject *middle_var_vals(PyObject *ast) {
  PyObject *topo = uop_toposort_list((UOp *)ast, NULL), *d = topo ? PyDict_New() : NULL;
  for (Py_ssize_t i = 0; d && i < PyList_GET_SIZE(topo); i++) {
    UOp *u = (UOp *)PyList_GET_ITEM(topo, i);
    if (u->op != OP_DEFINE_VAR) continue;
    PyObject *lo, *hi;
    if (!PyTuple_Check(u->arg) || PyTuple_GET_SIZE(u->arg) < 1 || uop_min_max(u, &lo, &hi) < 0) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a DEFINE_VAR needs a (name, min, max) arg");
      Py_CLEAR(d);
      break;
    }
    PyObject *sum = PyNumber_Add(lo, hi), *two = PyLong_FromLong(2), *mid = sum && two ? PyNumber_FloorDivide(sum, two) : NULL;
    PyObject *imid = mid ? PyNumber_Long(mid) : NULL;
    if (!imid || PyDict_SetItem(d, PyTuple_GET_ITEM(u->arg, 0), imid) < 0) Py_CLEAR(d);
    Py_XDECREF(sum); Py_XDECREF(two); Py_XDECREF(mid); Py_XDECREF(imid);
  }
  Py_XDECREF(topo);
  return d;
}

static int ensure_allocated(PyObject *rawbufs) {
  PyObject *seq = PySequence_Fast(rawbufs, "rawbufs must be a sequence of Buffers");
  for (Py_ssize_t i = 0; seq && i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *b = PySequence_Fast_GET_ITEM(seq, i);
    if (b == Py_None) continue;
    PyObject *r = PyObject_CallMethod(b, "ensure_allocated", NULL);
    if (!r) Py_CLEAR(seq);
    Py_XDECREF(r);
  }
  if (!seq) return -1;
  Py_DECREF(seq);
  return 0;
}

/* the step's candidates: every action that applies to every kernel of the beam */
static PyObject *expand_beam(PyObject *beam, PyObject *acts) {
  PyObject *cands = PyList_New(0);
  for (Py_ssize_t b = 0; cands && b < PyList_GET_SIZE(beam); b++) {
    PyObject *acted = kernel_actions(PyTuple_GET_ITEM(PyList_GET_ITEM(beam, b), 0), 0, Py_None, acts), *vals = acted ? PyDict_Values(acted) : NULL;
    if (!vals || PyList_SetSlice(cands, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, vals) < 0) Py_CLEAR(cands);
    Py_XDECREF(acted); Py_XDECREF(vals);
  }
  return cands;
}

static double beam_best(PyObject *beam) { return PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(PyList_GET_ITEM(beam, 0), 1)); }

/* one step: build, time, rank; the beam moves on, or *exiting is set. 0, or -1 with an exception. */
static int beam_step(Search *S, PyObject **beam, PyObject *acts, PyObject *seen_libs, bool *exiting) {
  PyObject *cands = expand_beam(*beam, acts);
  if (!cands) return -1;
  Py_ssize_t n = PyList_GET_SIZE(cands);
  Candidate *cs = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Candidate));
  Ranked *ranked = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Ranked));
  int rc = -1;
  if (!cs || !ranked) { PyErr_NoMemory(); goto done; }
  for (Py_ssize_t i = 0; i < n; i++) cs[i].sched = PyList_GET_ITEM(cands, i);
  S->step++; S->ncand = n; S->built = S->timed = 0;
  show_progress(S, false);
  if (build_step(S, cs, n) < 0) goto done;
  double min_progress = env_double("BEAM_MIN_PROGRESS", 0.01) / 1e6, best = beam_best(*beam);
  double st = now();
  Py_ssize_t k = time_step(S, cs, n, seen_libs, best * 3, ranked);
  S->stats.timing_s += now() - st;
  if (k < 0) goto done;
  S->stats.total_timed += k;
  *exiting = k == 0 || ranked[0].tm < min_progress || best - ranked[0].tm < min_progress;
  PyObject *next = NULL;
  if (!*exiting) next = ranked_list(ranked, k < S->amt ? k : S->amt);
  else if (k > 0 && ranked[0].tm < best) next = ranked_list(ranked, 1);
  if (next) Py_SETREF(*beam, next);
  else if (PyErr_Occurred()) goto done;
  show_progress(S, true);
  if (S->on_step != Py_None) {
    PyObject *all = ranked_list(ranked, k), *r = all ? PyObject_CallFunction(S->on_step, "nO", S->step, all) : NULL;
    int stop = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(all); Py_XDECREF(r);
    if (stop < 0) goto done;   /* a callback that raises stops the search with its exception */
    if (stop) *exiting = true;
  }
  rc = 0;
done:
  if (cs) free_candidates(cs, n);
  PyMem_Free(ranked);
  Py_DECREF(cands);
  return rc;
}

/* the compiler candidates are built with: the renderer's own, else its device's */
static PyObject *search_compiler(PyObject *ren, PyObject *device) {
  PyObject *c = getattr_literal(ren, "compiler");
  if (!c) { if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL; PyErr_Clear(); }
  else if (c != Py_None) return c;
  Py_XDECREF(c);
  PyObject *dev = device_get(device);
  c = dev ? getattr_literal(dev, "compiler") : NULL;
  Py_XDECREF(dev);
  return c;
}

static int search_threads(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return (int)env_long("PARALLEL", cores > 0 ? cores : 1);
}

static bool stderr_is_tty(void) {
  PyObject *err = PySys_GetObject("stderr"), *r = err && err != Py_None ? PyObject_CallMethod(err, "isatty", NULL) : NULL;
  int tty = r ? PyObject_IsTrue(r) : 0;
  Py_XDECREF(r);
  if (PyErr_Occurred()) PyErr_Clear();
  return tty > 0;
}

typedef struct { PyObject *acts, *timer, *on_step, *executor; } Hooks;

static PyObject *beam_search(PyObject *s, PyObject *rawbufs, int amt, int allow_test_size, int disable_cache, const Hooks *h) {
  if (!scheduler_applied_opts(s)) return NULL;   /* a ready Scheduler, else TypeError/RuntimeError */
  if (amt < 1) return PyErr_Format(PyExc_ValueError, "beam_search needs amt >= 1, got %d", amt);
  PyObject *key = cache_key(s, amt, allow_test_size);
  if (!key) return NULL;
  if (!disable_cache && diskcache_level() >= 1) {
    PyObject *hit = from_cache(s, key);
    if (hit != Py_None) { Py_DECREF(key); return hit; }
    Py_DECREF(hit);
  }
  Search S = {.ren = scheduler_ren(s), .executor = h->executor, .timer = h->timer, .on_step = h->on_step, .rawbufs = rawbufs,
              .amt = amt, .allow_test_size = allow_test_size, .timeout = env_double("BEAM_TIMEOUT_SEC", 10),
              .uops_max = env_long("BEAM_UOPS_MAX", 3000), .strict = env_long("BEAM_STRICT_MODE", 0) != 0,
              .progress = stderr_is_tty() || debug_level >= 2 || beam_debug, .t0 = now(), .best = INFINITY};
  PyObject *ret = NULL, *beam = NULL, *seen = PySet_New(NULL);
  bool pool_up = false, exiting = false;
  if (!seen || !(S.device = getattr_literal(S.ren, "device")) || !(S.var_vals = middle_var_vals(scheduler_ast(s))) ||
      ensure_allocated(rawbufs) < 0)
    goto done;
  if (h->executor == Py_None) {
    if (!(S.compiler = search_compiler(S.ren, S.device))) goto done;
    pool_up = true;   /* pool_stop undoes a pool_start that failed half way, too */
    if (pool_start(&S.pool, search_threads()) < 0) goto done;
  }
  if (!(beam = Py_BuildValue("[(Od)]", s, INFINITY))) goto done;
  while (!exiting) if (beam_step(&S, &beam, h->acts, seen, &exiting) < 0) goto done;
  ret = Py_NewRef(PyTuple_GET_ITEM(PyList_GET_ITEM(beam, 0), 0));
  if (S.progress && !(debug_level >= 2 || beam_debug)) PySys_WriteStderr("\r\033[K");
  if (diskcache_level() >= 1 && to_cache(key, ret) < 0) Py_CLEAR(ret);
  if (beam_debug) {
    char t[32];
    time_to_str(beam_best(beam), t, sizeof(t));
    PyObject *opts = ret ? scheduler_applied_opts(ret) : NULL;
    if (opts) PySys_FormatStdout("BEAM_SEARCH: final tm=%s, applied_opts=%S\n", t, opts);
  }
done:
  if (pool_up) pool_stop(&S.pool);
  S.stats.steps = S.step;
  last_stats = S.stats;
  Py_XDECREF(key); Py_XDECREF(seen); Py_XDECREF(beam); Py_XDECREF(S.device); Py_XDECREF(S.var_vals); Py_XDECREF(S.compiler);
  return ret;
}

/* apply_opts under BEAM>=1: the search on buffers made from the AST (postrange_beam_hook) */
static PyObject *apply_opts_beam(PyObject *k, UOp *ast, PyObject *ren, long amt) {
  PyObject *device = getattr_literal(ren, "device"), *bufs = device ? bufs_from_ast(ast, device) : NULL, *ret = NULL;
  Hooks h = {actions, Py_None, Py_None, Py_None};
  if (bufs) ret = beam_search(k, bufs, (int)amt, env_long("BEAM_ESTIMATE", 1) != 0, envvar_value(&ignore_beam_cache) != 0, &h);
  Py_XDECREF(device); Py_XDECREF(bufs);
  return ret;
}

/* ================================================================================================
 * Python
 * ================================================================================================ */

/* CompilePool: the compile pool for Python. The tinygrad bridge (tinyc/tinygrad.py) compiles the upcoming kernels of a
 * schedule on it while their codegen goes on in the calling thread, as BEAM does for its candidates. Jobs are numbered
 * in submit order; result(i) waits for job i with the GIL released. The pool holds only compilers, sources and libs,
 * none of which refers back to it, so it is not GC-tracked. */
typedef struct {
  PyObject_HEAD
  Pool pool;
  Job **jobs;
  Py_ssize_t njobs, cap;
  int waiters;   /* result() calls waiting without the GIL: close() must not free their jobs */
  bool open;
} CompilePoolObject;

static int CompilePool_init(CompilePoolObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"threads", NULL};
  PyObject *threads = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:CompilePool", kwlist, &threads)) return -1;
  if (self->open) { PyErr_SetString(PyExc_RuntimeError, "CompilePool is already started"); return -1; }
  long n = threads == Py_None ? search_threads() : PyLong_AsLong(threads);
  if (n == -1 && PyErr_Occurred()) return -1;
  if (n < 0 || n > 1024) { PyErr_Format(PyExc_ValueError, "CompilePool needs 0 to 1024 threads, got %ld", n); return -1; }
  self->open = true;   /* pool_stop undoes a pool_start that failed half way */
  return pool_start(&self->pool, (int)n);
}

static void compile_pool_close(CompilePoolObject *self) {
  if (!self->open) return;
  self->open = false;
  pool_stop(&self->pool);
  PyMem_Free(self->jobs);
  self->jobs = NULL;
  self->njobs = self->cap = 0;
}

static void CompilePool_dealloc(CompilePoolObject *self) {
  compile_pool_close(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int compile_pool_check_open(CompilePoolObject *self) {
  if (self->open) return 0;
  PyErr_SetString(PyExc_RuntimeError, "the CompilePool is closed");
  return -1;
}

/* submit(compiler, src) -> job number: compiler.compile_cached(src) on a pool thread */
static PyObject *CompilePool_submit(CompilePoolObject *self, PyObject *args) {
  PyObject *compiler, *src;
  if (!PyArg_ParseTuple(args, "OU:submit", &compiler, &src) || compile_pool_check_open(self) < 0) return NULL;
  if (self->njobs == self->cap) {
    Py_ssize_t cap = self->cap ? self->cap * 2 : 16;
    Job **jobs = PyMem_Realloc(self->jobs, (size_t)cap * sizeof(Job *));
    if (!jobs) return PyErr_NoMemory();
    self->jobs = jobs, self->cap = cap;
  }
  Job *job = pool_submit(&self->pool, compiler, src);
  if (!job) return NULL;
  self->jobs[self->njobs] = job;
  return PyLong_FromSsize_t(self->njobs++);
}

/* result(i) -> the lib of job i, waiting for it; raises what its compile raised */
static PyObject *CompilePool_result(CompilePoolObject *self, PyObject *arg) {
  Py_ssize_t i = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
  if (i == -1 && PyErr_Occurred()) return NULL;
  if (compile_pool_check_open(self) < 0) return NULL;
  if (i < 0 || i >= self->njobs) return PyErr_Format(PyExc_IndexError, "no compile job %zd (the pool has %zd)", i, self->njobs);
  Job *job = self->jobs[i];
  self->waiters++;
  int done = pool_wait(&self->pool, job, INFINITY);
  self->waiters--;
  if (done < 0) return NULL;
  if (!job->lib) { raise_saved(job->exc); return NULL; }
  return Py_NewRef(job->lib);
}

static PyObject *CompilePool_close(CompilePoolObject *self, PyObject *unused) {
  UNUSED(unused);
  if (self->waiters) return PyErr_Format(PyExc_RuntimeError, "the CompilePool cannot close while %d result() calls wait", self->waiters);
  compile_pool_close(self);
  Py_RETURN_NONE;
}

static PyObject *CompilePool_enter(PyObject *self, PyObject *unused) { UNUSED(unused); return Py_NewRef(self); }
static PyObject *CompilePool_exit(CompilePoolObject *self, PyObject *args) { UNUSED(args); return CompilePool_close(self, NULL); }

static PyObject *CompilePool_get_threads(CompilePoolObject *self, void *closure) {
  UNUSED(closure);
  return PyLong_FromLong(self->open ? self->pool.nthreads : 0);
}

static PyMethodDef CompilePool_methods[] = {
  {"submit", (PyCFunction)CompilePool_submit, METH_VARARGS, "submit(compiler, src) -> int: queue compiler.compile_cached(src)"},
  {"result", (PyCFunction)CompilePool_result, METH_O, "result(i) -> bytes: job i's lib (waits, GIL released); raises its error"},
  {"close", (PyCFunction)CompilePool_close, METH_NOARGS, "close(): drop queued jobs, let running ones finish, stop the threads"},
  {"__enter__", CompilePool_enter, METH_NOARGS, NULL},
  {"__exit__", (PyCFunction)CompilePool_exit, METH_VARARGS, NULL},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef CompilePool_getset[] = {
  {"threads", (getter)CompilePool_get_threads, NULL, "the pool's threads (0 when closed, or when compiles run in submit)", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CompilePool_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.CompilePool",
  .tp_basicsize = sizeof(CompilePoolObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "CompilePool(threads=PARALLEL): BEAM's native compile threads; submit(compiler, src), result(i), close()",
  .tp_new = PyType_GenericNew,
  .tp_init = (initproc)CompilePool_init,
  .tp_dealloc = (destructor)CompilePool_dealloc,
  .tp_methods = CompilePool_methods,
  .tp_getset = CompilePool_getset,
};


static PyObject *py_get_kernel_actions(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"s", "include_0", "max_up", "actions", NULL};
  PyObject *s, *max_up = Py_None, *acts = actions;
  int include_0 = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pOO:get_kernel_actions", kwlist, &s, &include_0, &max_up, &acts)) return NULL;
  if (!scheduler_applied_opts(s)) return NULL;   /* a ready Scheduler, else TypeError/RuntimeError */
  return kernel_actions(s, include_0, max_up, acts == Py_None ? actions : acts);
}

static PyObject *py_bufs_from_ast(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *ast, *device;
  if (!PyArg_ParseTuple(args, "O!U:bufs_from_ast", &UOp_Type, &ast, &device)) return NULL;
  return bufs_from_ast((UOp *)ast, device);
}

static PyObject *py_get_test_global_size(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *gs, *var_vals;
  long max_global_size;
  if (!PyArg_ParseTuple(args, "OlO!:get_test_global_size", &gs, &max_global_size, &PyDict_Type, &var_vals)) return NULL;
  if (max_global_size < 1) return PyErr_Format(PyExc_ValueError, "max_global_size must be positive, got %ld", max_global_size);
  double factor;
  PyObject *sizes = test_global_size(gs, max_global_size, var_vals, &factor);
  PyObject *ret = sizes ? Py_BuildValue("(Od)", sizes, factor) : NULL;
  Py_XDECREF(sizes);
  return ret;
}

static PyObject *py_time_program(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"p", "rawbufs", "var_vals", "cnt", "early_stop", "allow_test_size", "max_global_size", NULL};
  PyObject *p, *rawbufs, *var_vals = Py_None, *early = Py_None, *maxgs = Py_None;
  long cnt = 3;
  int allow_test_size = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OlOpO:time_program", kwlist, &p, &rawbufs, &var_vals, &cnt, &early, &allow_test_size, &maxgs)) return NULL;
  double early_stop = early == Py_None ? NAN : PyFloat_AsDouble(early);
  long max_global_size = maxgs == Py_None ? 65536 : PyLong_AsLong(maxgs);
  if ((early_stop == -1 || max_global_size == -1) && PyErr_Occurred()) return NULL;
  if (cnt < 1) return PyErr_Format(PyExc_ValueError, "time_program needs cnt >= 1, got %ld", cnt);
  PyObject *vv = var_vals == Py_None ? PyDict_New() : Py_NewRef(var_vals);
  PyObject *ret = vv ? time_program(p, rawbufs, vv, cnt, early_stop, allow_test_size, max_global_size) : NULL;
  Py_XDECREF(vv);
  return ret;
}

static int check_actions(PyObject *acts) {
  PyObject *seq = PySequence_Fast(acts, "actions must be a sequence of Opt");
  for (Py_ssize_t i = 0; seq && i < PySequence_Fast_GET_SIZE(seq); i++)
    if (!Opt_Check(PySequence_Fast_GET_ITEM(seq, i))) {
      PyErr_Format(PyExc_TypeError, "actions[%zd] is %.100s, not an Opt", i, Py_TYPE(PySequence_Fast_GET_ITEM(seq, i))->tp_name);
      Py_CLEAR(seq);
    }
  if (!seq) return -1;
  Py_DECREF(seq);
  return 0;
}

static PyObject *py_beam_search(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"s", "rawbufs", "amt", "allow_test_size", "disable_cache", "actions", "timer", "on_step", "executor", NULL};
  PyObject *s, *rawbufs, *disable = Py_None;
  int amt, allow_test_size = 1;
  Hooks h = {Py_None, Py_None, Py_None, Py_None};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOi|pO$OOOO:beam_search", kwlist, &s, &rawbufs, &amt, &allow_test_size, &disable,
                                   &h.acts, &h.timer, &h.on_step, &h.executor)) return NULL;
  int disable_cache = disable == Py_None ? envvar_value(&ignore_beam_cache) != 0 : PyObject_IsTrue(disable);
  if (disable_cache < 0) return NULL;
  if ((h.timer != Py_None && !PyCallable_Check(h.timer)) || (h.on_step != Py_None && !PyCallable_Check(h.on_step)))
    return PyErr_Format(PyExc_TypeError, "beam_search's timer and on_step must be callables");
  if (h.acts == Py_None) h.acts = actions;
  else if (check_actions(h.acts) < 0) return NULL;   /* before the cache is asked, so a bad list never passes */
  return beam_search(s, rawbufs, amt, allow_test_size, disable_cache, &h);
}

static PyObject *py_beam_stats(PyObject *mod, PyObject *unused) {
  UNUSED(mod); UNUSED(unused);
  const BeamStats *b = &last_stats;
  return Py_BuildValue("{sdsdsdsdsdsnsnsnsn}", "seconds", b->codegen_s + b->wait_s + b->timing_s, "codegen", b->codegen_s,
                       "build_wait", b->wait_s, "compile", b->compile_s, "timing", b->timing_s, "steps", b->steps,
                       "candidates", b->total_cands, "built", b->total_built, "timed", b->total_timed);
}

/* what an executor's worker runs for a candidate: its ProgramSpec, compiled, on the worker's own device */
static PyObject *py_beam_build(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *ast, *device;
  if (!PyArg_ParseTuple(args, "O!U:_beam_build", &UOp_Type, &ast, &device)) return NULL;
  PyObject *dev = device_get(device), *ren = dev ? getattr_literal(dev, "renderer") : NULL;
  PyObject *spec = ren ? get_program_uncompiled((UOp *)ast, ren) : NULL, *lib = spec ? getattr_literal(spec, "lib") : NULL;
  PyObject *ret = NULL;
  if (lib && lib != Py_None) ret = Py_NewRef(spec);
  else if (lib) {
    PyObject *compiler = search_compiler(ren, device), *src = compiler ? getattr_literal(spec, "src") : NULL;
    PyObject *built = src ? PyObject_CallMethod(compiler, "compile_cached", "O", src) : NULL;
    ret = built ? spec_replace(spec, "lib", built) : NULL;
    Py_XDECREF(compiler); Py_XDECREF(src); Py_XDECREF(built);
  }
  Py_XDECREF(dev); Py_XDECREF(ren); Py_XDECREF(spec); Py_XDECREF(lib);
  return ret;
}

static PyMethodDef search_functions[] = {
  {"get_kernel_actions", (PyCFunction)(void (*)(void))py_get_kernel_actions, METH_VARARGS | METH_KEYWORDS,
   "get_kernel_actions(s, include_0=True, max_up=None, actions=None) -> {i: Scheduler}: every action that applies, as tinygrad's"},
  {"bufs_from_ast", py_bufs_from_ast, METH_VARARGS, "bufs_from_ast(ast, device) -> [Buffer]: one per DEFINE_GLOBAL, in arg order"},
  {"get_test_global_size", py_get_test_global_size, METH_VARARGS,
   "get_test_global_size(global_size, max_global_size, var_vals) -> (sizes, factor): the smaller launch BEAM times"},
  {"time_program", (PyCFunction)(void (*)(void))py_time_program, METH_VARARGS | METH_KEYWORDS,
   "time_program(p, rawbufs, var_vals=None, cnt=3, early_stop=None, allow_test_size=True, max_global_size=65536) -> [seconds]"},
  {"beam_search", (PyCFunction)(void (*)(void))py_beam_search, METH_VARARGS | METH_KEYWORDS,
   "beam_search(s, rawbufs, amt, allow_test_size=True, disable_cache=IGNORE_BEAM_CACHE, *, actions=None, timer=None, on_step=None,\n"
   "executor=None) -> Scheduler: tinygrad's BEAM search; timer(p, rawbufs) -> seconds, on_step(step, ranked) -> True stops,\n"
   "executor: a concurrent.futures.Executor (or dask Client) that builds candidates"},
  {"beam_stats", py_beam_stats, METH_NOARGS,
   "beam_stats() -> dict: the last search's seconds (codegen, build_wait after codegen, compile summed over threads,\n"
   "timing) and counts (steps, candidates, built, timed)"},
  {"_beam_build", py_beam_build, METH_VARARGS, "_beam_build(ast, device) -> ProgramSpec with lib: an executor worker's build of a candidate"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_search(PyObject *m) {
  PyObject *pickle = PyImport_ImportModule("pickle");
  pickle_dumps = pickle ? getattr_literal(pickle, "dumps") : NULL;
  pickle_loads = pickle ? getattr_literal(pickle, "loads") : NULL;
  Py_XDECREF(pickle);
  beam_debug = env_long("BEAM_DEBUG", 0);
  if (ctxvar_int("DEBUG", &debug_level) < 0 || ctxvar_env(&ignore_beam_cache) < 0) return -1;
  if (!pickle_dumps || !pickle_loads || !(actions = build_actions()) || PyModule_AddFunctions(m, search_functions) < 0 ||
      PyModule_AddObjectRef(m, "actions", actions) < 0 || !(beam_build_fn = getattr_literal(m, "_beam_build")))
    return -1;
  postrange_beam_hook = apply_opts_beam;
  if (PyType_Ready(&CompilePool_Type) < 0) return -1;
  return tinyc_add(m, "CompilePool", (PyObject *)&CompilePool_Type);
}
