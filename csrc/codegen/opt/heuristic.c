/* tinygrad/codegen/opt/heuristic.py in C: hand_coded_optimizations, the opts a kernel gets when none are given.
 *
 * The steps run in tinygrad's order, one function each: tensor cores (on a copy, kept when they apply), matvec,
 * GROUPTOP, masked upcasts, the upcast choice loop, unroll, the default upcast, locals and threads. The Scheduler is
 * read and changed through postrange.h; shapes stay Python objects (ints, or UOps where symbolic) and are compared
 * through the object API, so an odd kernel fails the way tinygrad's Python does. Only KernelOptError is swallowed,
 * and only where tinygrad catches it. */
#include "heuristic.h"
#include "postrange.h"
#include "opt.h"

/* tinygrad's ContextVars (from the environment at import, then as Context sets them): TC (USE_TC), TC_SELECT, TC_OPT, AMX, NOLOCALS */
static long use_tc = 1, tc_select = -1, tc_opt = 0, amx = 0, nolocals = 0;
/* tinygrad reads these with its cached getenv on the first heuristic call: so here, once, on first use */
static long mv_blocksize = 4, mv_threads_per_row = 8, mv_rows_per_thread = 4, mv_on = 1;
static bool mv_read;

/* ---- small helpers over Python objects (new references unless said; NULL or -1 with an exception) ---- */

static int read_mv_env(void) {
  if (mv_read) return 0;
  if (env_int("MV_BLOCKSIZE", &mv_blocksize) < 0 || env_int("MV_THREADS_PER_ROW", &mv_threads_per_row) < 0 ||
      env_int("MV_ROWS_PER_THREAD", &mv_rows_per_thread) < 0 || env_int("MV", &mv_on) < 0) return -1;
  mv_read = true;
  return 0;
}

/* list[i], borrowed, with the IndexError Python raises */
static PyObject *item(PyObject *list, Py_ssize_t i) {
  if (!list || !PyList_Check(list)) { if (list) PyErr_SetString(PyExc_TypeError, "expected a list"); return NULL; }
  if (i < 0 || i >= PyList_GET_SIZE(list)) { PyErr_SetString(PyExc_IndexError, "list index out of range"); return NULL; }
  return PyList_GET_ITEM(list, i);
}
/* list[i] as an index (the axes lists hold ints), i < 0 counting from the end; -1 with an exception on error */
static Py_ssize_t item_index(PyObject *list, Py_ssize_t i) {
  PyObject *v = item(list, i < 0 && list && PyList_Check(list) ? i + PyList_GET_SIZE(list) : i);
  return v ? PyLong_AsSsize_t(v) : -1;
}
/* u.src[i] of a UOp, borrowed, checked */
static UOp *src_at(PyObject *u, uint32_t i) {
  if (!UOp_Check(u)) { PyErr_Format(PyExc_TypeError, "expected a UOp, not %.100s", Py_TYPE(u)->tp_name); return NULL; }
  if (i >= ((UOp *)u)->nsrc) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); return NULL; }
  return ((UOp *)u)->src[i];
}

/* a <op> b for a Python object and a C long, as a truth value: 1, 0 or -1 */
static int cmp_long(PyObject *a, long b, int op) {
  PyObject *bo = PyLong_FromLong(b);
  int ret = bo ? PyObject_RichCompareBool(a, bo, op) : -1;
  Py_XDECREF(bo);
  return ret;
}
/* a % b == 0 */
static int mod_zero(PyObject *a, long b) {
  PyObject *bo = PyLong_FromLong(b), *r = bo ? PyNumber_Remainder(a, bo) : NULL;
  int ret = r ? cmp_long(r, 0, Py_EQ) : -1;
  Py_XDECREF(bo); Py_XDECREF(r);
  return ret;
}
/* prod(shape[i] for i in axes), from 1 as tinygrad's prod; axes NULL means every entry */
static PyObject *prod_at(PyObject *shape, PyObject *axes) {
  if (!shape) return NULL;
  Py_ssize_t n = axes ? PyList_GET_SIZE(axes) : PyList_GET_SIZE(shape);
  PyObject *acc = PyLong_FromLong(1);
  for (Py_ssize_t i = 0; acc && i < n; i++) {
    Py_ssize_t a = axes ? item_index(axes, i) : i;
    PyObject *v = a < 0 && PyErr_Occurred() ? NULL : item(shape, a);
    Py_SETREF(acc, v ? PyNumber_Multiply(acc, v) : NULL);
  }
  return acc;
}

/* tinygrad's resolve(x, default): a bool as it is; a bool UOp is its value when its range is one value, else dflt.
 * Steals x (the comparison that made it). */
static int resolve(PyObject *x, int dflt) {
  if (!x) return -1;
  int ret = -1;
  if (!UOp_Check(x)) ret = PyObject_IsTrue(x);
  else if (((UOp *)x)->dtype != DTYPE(BOOL)) PyErr_SetString(PyExc_AssertionError, "UOp in resolve must be bool");
  else {
    UOp *sx = uop_simplify((UOp *)x);
    PyObject *lo, *hi;
    if (sx && uop_min_max(sx, &lo, &hi) == 0) {
      int eq = PyObject_RichCompareBool(lo, hi, Py_EQ);
      ret = eq < 0 ? -1 : eq ? PyObject_IsTrue(lo) : dflt;
    }
    Py_XDECREF(sx);
  }
  Py_DECREF(x);
  return ret;
}

/* a renderer attribute's truth: 1, 0 or -1 (name: a string literal, getattr_literal) */
static int ren_truth(PyObject *ren, const char *name) {
  PyObject *v = getattr_literal(ren, name);
  int ret = v ? PyObject_IsTrue(v) : -1;
  Py_XDECREF(v);
  return ret;
}

static Py_ssize_t len_axes_of(PyObject *k, unsigned mask) {
  PyObject *a = scheduler_axes_of(k, mask);
  Py_ssize_t n = a ? PyList_GET_SIZE(a) : -1;
  Py_XDECREF(a);
  return n;
}

/* k.apply_opt(Opt(op, axis, arg)); axis/arg borrowed, NULL for None. The apply_opt result. */
static PyObject *apply(PyObject *k, OptOpsId op, PyObject *axis, PyObject *arg) {
  PyObject *opt = opt_new(optops_members[op], axis, arg);
  PyObject *ret = opt ? scheduler_apply_opt(k, opt, 1) : NULL;
  Py_XDECREF(opt);
  return ret;
}
static int apply_ll(PyObject *k, OptOpsId op, Py_ssize_t axis, long arg) {
  PyObject *a = PyLong_FromSsize_t(axis), *b = a ? PyLong_FromLong(arg) : NULL, *r = b ? apply(k, op, a, b) : NULL;
  Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(r);
  return r ? 0 : -1;
}
/* an apply that tinygrad wraps in `try: ... except KernelOptError: pass`: 1 applied, 0 refused, -1 another error */
static int swallow_opt_error(int status) {
  if (status == 0) return 1;
  if (!PyErr_ExceptionMatches(KernelOptError)) return -1;
  PyErr_Clear();
  return 0;
}
static int try_apply_ll(PyObject *k, OptOpsId op, Py_ssize_t axis, long arg) { return swallow_opt_error(apply_ll(k, op, axis, arg)); }

/* ---- tensor cores ---- */

/* the first of sizes (zero-ended) that divides rng.src[0], 0 when none does */
static long first_divisor(PyObject *rng, const long *sizes) {
  UOp *s0 = src_at(rng, 0);
  if (!s0) return -1;
  for (; *sizes; sizes++) {
    PyObject *sz = PyLong_FromLong(*sizes), *q = sz ? uop_divides(s0, sz) : NULL;
    Py_XDECREF(sz);
    if (!q) return -1;
    int found = q != Py_None;
    Py_DECREF(q);
    if (found) return *sizes;
  }
  return 0;
}

/* the axis of rng in tk.rngs (ValueError when it is not there, as list.index) */
static Py_ssize_t rng_index(PyObject *tk, PyObject *rng) {
  PyObject *rngs = scheduler_rngs(tk);
  Py_ssize_t i = rngs ? PySequence_Index(rngs, rng) : -1;
  Py_XDECREF(rngs);
  return i;
}

/* after TC: upcast the N then the M range by the first of 5,4,3,2 that divides it, then make N local by 4 or 2.
 * rngs is what the TC apply_opt returned (the N, M and K ranges); each upcast replaces its entry. */
static int tc_upcast_and_local(PyObject *tk, PyObject *tc_rngs) {
  static const long up_sizes[] = {5, 4, 3, 2, 0}, local_sizes[] = {4, 2, 0};
  PyObject *rngs = PySequence_List(tc_rngs);
  if (!rngs) return -1;
  for (int tc_dim = 1; tc_dim >= 0; tc_dim--) {
    PyObject *r = item(rngs, tc_dim);
    long sz = r ? first_divisor(r, up_sizes) : -1;
    Py_ssize_t axis = sz > 0 ? rng_index(tk, r) : 0;
    if (sz < 0 || axis < 0) goto fail;
    if (!sz) continue;
    PyObject *a = PyLong_FromSsize_t(axis), *b = a ? PyLong_FromLong(sz) : NULL, *res = b ? apply(tk, OPTOPS_UPCAST, a, b) : NULL;
    PyObject *replaced = res ? PySequence_GetItem(res, 0) : NULL;
    Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(res);
    if (!replaced || PyList_SetItem(rngs, tc_dim, replaced) < 0) goto fail;
  }
  PyObject *n = item(rngs, 0);
  long sz = n ? first_divisor(n, local_sizes) : -1;
  Py_ssize_t axis = sz > 0 ? rng_index(tk, n) : 0;
  if (sz < 0 || axis < 0 || (sz && apply_ll(tk, OPTOPS_LOCAL, axis, sz) < 0)) goto fail;
  Py_DECREF(rngs);
  return 0;
fail:
  Py_DECREF(rngs);
  return -1;
}

/* TC first, on a copy: 1 with *out the copy when the tensor cores applied (and AMX is off), 0 to go on */
static int try_tensor_cores(PyObject *k, PyObject **out) {
  if (use_tc <= 0) return 0;
  Py_ssize_t nred = len_axes_of(k, AXIS_BIT(GROUP_REDUCE) | AXIS_BIT(REDUCE));
  if (nred < 0) return -1;
  if (!(nred == 1 || tc_opt >= 1)) return 0;
  PyObject *tk = scheduler_copy(k), *zero = tk ? PyLong_FromLong(0) : NULL;
  PyObject *arg = zero ? Py_BuildValue("(lll)", tc_select, tc_opt, use_tc) : NULL;
  PyObject *rngs = arg ? apply(tk, OPTOPS_TC, zero, arg) : NULL;
  int good = rngs ? 1 : arg ? swallow_opt_error(-1) : -1;   /* only apply_opt's KernelOptError means "no TC" */
  Py_XDECREF(zero); Py_XDECREF(arg);
  /* with AMX the hand-coded TC opts are skipped, and so is the TC kernel: upcasting would make it slower */
  if (good <= 0 || amx) { Py_XDECREF(tk); Py_XDECREF(rngs); return good < 0 ? -1 : 0; }
  int err = rngs != Py_None && tc_upcast_and_local(tk, rngs) < 0;
  Py_DECREF(rngs);
  if (err) { Py_DECREF(tk); return -1; }
  *out = tk;
  return 1;
}

/* ---- matvec ---- */

/* is every range of idx0 a range of idx1 */
static int ranges_within(UOp *idx0, UOp *idx1) {
  PtrMap memo = {0};
  PyObject *r0 = uop_ranges(idx0, &memo), *r1 = r0 ? uop_ranges(idx1, &memo) : NULL, *key, *val;
  Py_ssize_t pos = 0;
  int ret = r1 ? 1 : -1;
  while (ret == 1 && PyDict_Next(r0, &pos, &key, &val)) ret = PyDict_Contains(r1, key);
  uop_ranges_memo_free(&memo);
  return ret;
}

/* is rng one of the terms of idx's sum */
static int is_add_term(UOp *idx, PyObject *rng) {
  PtrVec terms = {0};
  int ret = uop_split_uop(idx, OP_ADD, &terms) < 0 ? -1 : 0;
  for (Py_ssize_t i = 0; ret == 0 && i < terms.len; i++) ret = terms.items[i] == (void *)rng;
  ptrvec_free(&terms);
  return ret;
}

/* the reduce is a SUM of a MUL of two loads, the first indexed by the first reduce range, and the ranges of the first
 * index all in the second: 1 with *first the first reduce range (new reference), 0 when it is no matvec */
static int matvec_shape(PyObject *k, PyObject **first) {
  PyObject *red = scheduler_reduceop(k), *fs = NULL, *ren = scheduler_ren(k), *red_arg0 = NULL, *reds = NULL;
  UOp *idx0 = NULL, *idx1 = NULL;
  int ret = -1;
  if (!red || !ren) goto done;
  if (red == Py_None) { ret = 0; goto done; }
  if (!(red_arg0 = PySequence_GetItem(((UOp *)red)->arg, 0))) goto done;
  if (red_arg0 != ops_members[OP_ADD]) { ret = 0; goto done; }
  if (!(fs = scheduler_full_shape(k))) goto done;
  int ok = PyList_GET_SIZE(fs) >= 2 ? ren_truth(ren, "has_shared") : 0;
  UOp *mul = ok > 0 ? src_at(red, 0) : NULL;
  if (ok <= 0 || !mul) { ret = ok <= 0 ? ok : -1; goto done; }
  if (mul->op != OP_MUL) { ret = 0; goto done; }
  UOp *in0 = src_at((PyObject *)mul, 0), *in1 = in0 ? src_at((PyObject *)mul, 1) : NULL;
  if (!in1) goto done;
  if (in0->op != OP_INDEX || in1->op != OP_INDEX) { ret = 0; goto done; }
  UOp *i0 = src_at((PyObject *)in0, 1), *i1 = i0 ? src_at((PyObject *)in1, 1) : NULL;
  if (!i1 || !(idx0 = uop_get_idx(i0)) || !(idx1 = uop_get_idx(i1)) || !(reds = scheduler_ranges_of(k, AXIS_BIT(REDUCE)))) goto done;
  if (!PyList_GET_SIZE(reds)) { ret = 0; goto done; }
  PyObject *fr = PyList_GET_ITEM(reds, 0);
  int term = is_add_term(idx0, fr), within = term > 0 ? ranges_within(idx0, idx1) : term;
  ret = within;
  if (within > 0) *first = Py_NewRef(fr);
done:
  Py_XDECREF(red); Py_XDECREF(fs); Py_XDECREF(red_arg0); Py_XDECREF(reds); Py_XDECREF(idx0); Py_XDECREF(idx1);
  return ret;
}

/* GROUP the reduce by MV_THREADS_PER_ROW (when it may), LOCAL and UPCAST the first global axis they fit */
static int matvec_on(PyObject *k, PyObject *first) {
  PyObject *globals = scheduler_axes_of(k, AXIS_BIT(GLOBAL)), *tpr = globals ? PyLong_FromLong(mv_threads_per_row) : NULL;
  int ret = tpr ? 0 : -1;
  for (Py_ssize_t i = 0; ret == 0 && i < PyList_GET_SIZE(globals); i++) {
    Py_ssize_t g = item_index(globals, i);
    UOp *s0 = g < 0 ? NULL : src_at(first, 0);
    PyObject *q = s0 ? uop_divides(s0, tpr) : NULL, *fs = q && q != Py_None ? scheduler_full_shape(k) : NULL;
    PyObject *sz = fs ? item(fs, g) : NULL;
    int fits = !q ? -1 : q == Py_None ? 0 : sz ? mod_zero(sz, mv_blocksize * mv_rows_per_thread) : -1;
    Py_XDECREF(q); Py_XDECREF(fs);
    if (fits <= 0) { ret = fits; continue; }
    /* tinygrad prints the MATVEC choice at DEBUG>=3; tinyc prints nothing */
    if ((mv_threads_per_row > 1 && try_apply_ll(k, OPTOPS_GROUP, 0, mv_threads_per_row) < 0) ||
        (mv_blocksize > 1 && apply_ll(k, OPTOPS_LOCAL, g, mv_blocksize) < 0) ||
        (mv_rows_per_thread > 1 && apply_ll(k, OPTOPS_UPCAST, g, mv_rows_per_thread) < 0)) ret = -1;
    else ret = 1;
  }
  Py_XDECREF(globals); Py_XDECREF(tpr);
  return ret;
}

/* matvec: 1 when it applied (the heuristics stop there), 0 when the kernel is no matvec */
static int matvec(PyObject *k) {
  PyObject *ren = scheduler_ren(k), *first = NULL;
  int has_local = ren ? ren_truth(ren, "has_local") : -1;
  if (has_local <= 0) return has_local;
  if (mv_on == 0 || !(mv_blocksize > 1 || mv_threads_per_row > 1 || mv_rows_per_thread > 1)) return 0;
  int shape = matvec_shape(k, &first);
  if (shape <= 0) return shape;
  int ret = matvec_on(k, first);
  Py_DECREF(first);
  return ret;
}

/* ---- GROUPTOP, masked upcasts ---- */

/* prod of the output shape over the upcastable dims (the work of one reduce row) */
static PyObject *upcastable_output_prod(PyObject *k) {
  PyObject *os = scheduler_output_shape(k), *dims = os ? scheduler_int_dims(k, AXIS_BIT(GLOBAL) | AXIS_BIT(LOCAL) | AXIS_BIT(LOOP)) : NULL;
  PyObject *ret = dims ? prod_at(os, dims) : NULL;
  Py_XDECREF(os); Py_XDECREF(dims);
  return ret;
}

/* a small output grouped: GROUPTOP 16 on the first of reduce axes 0, 1, 2 that takes it */
static int grouptop(PyObject *k) {
  PyObject *p = upcastable_output_prod(k), *lim = p ? PyLong_FromLong(nolocals ? 240 : 2048) : NULL;
  int small = resolve(lim ? PyObject_RichCompare(p, lim, Py_LE) : NULL, 0);
  Py_XDECREF(p); Py_XDECREF(lim);
  for (int axis = 0; small > 0 && axis < 3; axis++) {
    int r = try_apply_ll(k, OPTOPS_GROUPTOP, axis, 16);
    if (r != 0) return r < 0 ? -1 : 0;
  }
  return small < 0 ? -1 : 0;
}

/* is rng inside the condition of some WHERE of the kernel (a masked axis, e.g. from Tensor.stack) */
static int is_masked(PyObject *bs, PyObject *rng) {
  PyObject *key, *val;
  Py_ssize_t pos = 0;
  while (PyDict_Next(bs, &pos, &key, &val)) {
    if (!UOp_Check(key) || ((UOp *)key)->op != OP_WHERE) continue;
    UOp *cond = src_at(key, 0);
    PyObject *cbs = cond ? uop_backward_slice(cond) : NULL;
    int in = cbs ? PyDict_Contains(cbs, rng) : -1;
    if (in) return in;
  }
  return 0;
}

/* upcast (fully) the small masked axes, up to 7*7 elements together, the last first so the earlier axes keep their index */
static int masked_upcasts(PyObject *k) {
  PyObject *dims = scheduler_int_dims(k, AXIS_BIT(GLOBAL) | AXIS_BIT(LOCAL) | AXIS_BIT(LOOP)), *fs = dims ? scheduler_full_shape(k) : NULL;
  PyObject *rngs = fs ? scheduler_rngs(k) : NULL, *bs = rngs ? uop_backward_slice((UOp *)scheduler_ast(k)) : NULL;
  PyObject *to_upcast = bs ? PyList_New(0) : NULL;
  int ret = to_upcast ? 0 : -1;
  for (Py_ssize_t i = 0; ret == 0 && i < PyList_GET_SIZE(dims); i++) {
    PyObject *axis = PyList_GET_ITEM(dims, i), *rng = item(rngs, PyLong_AsSsize_t(axis)), *sz = rng ? item(fs, PyLong_AsSsize_t(axis)) : NULL;
    int masked = sz ? is_masked(bs, rng) : -1, small = masked >= 0 ? cmp_long(sz, 7, Py_LE) : -1;
    PyObject *p = small > 0 && masked > 0 ? prod_at(fs, to_upcast) : NULL, *pp = p ? PyNumber_Multiply(p, sz) : NULL;
    int fits = small <= 0 || !masked ? 0 : pp ? cmp_long(pp, 49, Py_LE) : -1;
    Py_XDECREF(p); Py_XDECREF(pp);
    if (masked < 0 || small < 0 || fits < 0 || (fits > 0 && PyList_Append(to_upcast, axis) < 0)) ret = -1;
  }
  for (Py_ssize_t i = to_upcast ? PyList_GET_SIZE(to_upcast) - 1 : -1; ret == 0 && i >= 0; i--)
    ret = apply_ll(k, OPTOPS_UPCAST, PyLong_AsSsize_t(PyList_GET_ITEM(to_upcast, i)), 0);
  Py_XDECREF(dims); Py_XDECREF(fs); Py_XDECREF(rngs); Py_XDECREF(to_upcast);
  return ret;
}

/* ---- the upcast choice loop ---- */

/* the index of each buffer (b.src[1].get_idx()) and its backward slice, for the loops that test ranges in them */
typedef struct { Py_ssize_t n; UOp **idx; PyObject **bs; } BufIdx;

static void bufidx_free(BufIdx *b) {
  for (Py_ssize_t i = 0; i < b->n; i++) Py_XDECREF(b->idx[i]);
  PyMem_Free(b->idx); PyMem_Free(b->bs);
  b->n = 0, b->idx = NULL, b->bs = NULL;
}
static int bufidx_init(BufIdx *b, PyObject *k) {
  PyObject *bufs = scheduler_bufs(k);
  b->n = 0, b->idx = NULL, b->bs = NULL;
  if (!bufs) return -1;
  Py_ssize_t n = PyList_GET_SIZE(bufs);
  b->idx = PyMem_Calloc((size_t)n + 1, sizeof(UOp *)), b->bs = PyMem_Calloc((size_t)n + 1, sizeof(PyObject *));
  int ret = b->idx && b->bs ? 0 : (PyErr_NoMemory(), -1);
  for (Py_ssize_t i = 0; ret == 0 && i < n; i++) {
    UOp *s1 = src_at(PyList_GET_ITEM(bufs, i), 1);
    b->n = i + 1;
    if (!s1 || !(b->idx[i] = uop_get_idx(s1)) || !(b->bs[i] = uop_backward_slice(b->idx[i]))) ret = -1;
  }
  Py_DECREF(bufs);
  if (ret < 0) bufidx_free(b);
  return ret;
}

/* does some buffer not use rng while using every upcast/unroll range already there (an upcast it would reuse) */
static int some_buf_broadcasts(BufIdx *b, PyObject *rng, PyObject *up_rngs) {
  for (Py_ssize_t i = 0; i < b->n; i++) {
    int in = PyDict_Contains(b->bs[i], rng), all = 1;
    if (in < 0) return -1;
    if (in) continue;
    for (Py_ssize_t j = 0; all == 1 && j < PyList_GET_SIZE(up_rngs); j++) all = PyDict_Contains(b->bs[i], PyList_GET_ITEM(up_rngs, j));
    if (all) return all;
  }
  return 0;
}

/* how much the buffers move along rng: (number of buffers using it, sum of its constant strides) */
static PyObject *strides_of(BufIdx *b, PyObject *rng) {
  long num = 0;
  PyObject *sum = PyLong_FromLong(0);
  for (Py_ssize_t i = 0; sum && i < b->n; i++) {
    int in = PyDict_Contains(b->bs[i], rng);
    PtrVec terms = {0};
    if (in < 0 || uop_split_uop(b->idx[i], OP_ADD, &terms) < 0) { Py_CLEAR(sum); ptrvec_free(&terms); break; }
    num += in;
    for (Py_ssize_t j = 0; sum && j < terms.len; j++) {
      UOp *c = terms.items[j];
      PyObject *add = NULL;
      if ((PyObject *)c == rng) add = PyLong_FromLong(1);
      else if (c->op == OP_MUL && c->nsrc >= 2) {
        if ((PyObject *)c->src[0] == rng && c->src[1]->op == OP_CONST) add = c->src[1]->arg;
        if ((PyObject *)c->src[1] == rng && c->src[0]->op == OP_CONST) add = c->src[0]->arg;
        if (add) Py_INCREF(add);
      }
      if (add) { Py_SETREF(sum, PyNumber_Add(sum, add)); Py_DECREF(add); }
    }
    ptrvec_free(&terms);
  }
  PyObject *ret = sum ? Py_BuildValue("(lO)", num, sum) : NULL;
  Py_XDECREF(sum);
  return ret;
}

/* the candidates (num_strides, sum_strides, axis, amount) of one round: axes not upcast yet that the amount divides and
 * that some buffer broadcasts along */
static PyObject *upcast_choices(PyObject *k, PyObject *upcasted, bool is_dsp) {
  static const long dsp_amounts[] = {128}, amounts[] = {3, 4};
  PyObject *dims = scheduler_int_dims(k, AXIS_BIT(GLOBAL) | AXIS_BIT(LOCAL) | AXIS_BIT(LOOP)), *fs = dims ? scheduler_full_shape(k) : NULL;
  PyObject *rngs = fs ? scheduler_rngs(k) : NULL, *up = rngs ? scheduler_ranges_of(k, AXIS_BIT(UPCAST) | AXIS_BIT(UNROLL)) : NULL;
  PyObject *ret = up ? PyList_New(0) : NULL;
  BufIdx b = {0, NULL, NULL};
  if (ret && bufidx_init(&b, k) < 0) Py_CLEAR(ret);
  const long *am = is_dsp ? dsp_amounts : amounts;
  Py_ssize_t nam = is_dsp ? (PySet_GET_SIZE(upcasted) ? 0 : 1) : 2;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(dims); i++) {
    PyObject *axis = PyList_GET_ITEM(dims, i);
    for (Py_ssize_t j = 0; ret && j < nam; j++) {
      int done = PySet_Contains(upcasted, axis);
      PyObject *sz = done == 0 ? item(fs, PyLong_AsSsize_t(axis)) : NULL, *rng = sz ? item(rngs, PyLong_AsSsize_t(axis)) : NULL;
      int divides = rng ? mod_zero(sz, am[j]) : -1, bcast = divides > 0 ? some_buf_broadcasts(&b, rng, up) : divides;
      if (done > 0) continue;
      if (done < 0 || bcast < 0) { Py_CLEAR(ret); break; }
      if (!bcast) continue;
      PyObject *st = strides_of(&b, rng), *c = st ? Py_BuildValue("(OOOl)", PyTuple_GET_ITEM(st, 0), PyTuple_GET_ITEM(st, 1), axis, am[j]) : NULL;
      if (!c || PyList_Append(ret, c) < 0) Py_CLEAR(ret);
      Py_XDECREF(st); Py_XDECREF(c);
    }
  }
  bufidx_free(&b);
  Py_XDECREF(dims); Py_XDECREF(fs); Py_XDECREF(rngs); Py_XDECREF(up);
  return ret;
}

/* while the output is big and the upcasts small, upcast the axis the buffers move least along */
static int more_upcasts(PyObject *k) {
  PyObject *ren = scheduler_ren(k), *dev = ren && ren != Py_None ? getattr_literal(ren, "device") : NULL;
  int is_dsp = !ren ? -1 : ren == Py_None ? 0 : dev ? (PyUnicode_Check(dev) && PyUnicode_CompareWithASCIIString(dev, "DSP") == 0) : -1;
  Py_XDECREF(dev);
  PyObject *upcasted = is_dsp >= 0 ? PySet_New(NULL) : NULL;
  int ret = upcasted ? 0 : -1;
  while (ret == 0) {
    PyObject *p = upcastable_output_prod(k), *lim = p ? PyLong_FromLong(1024) : NULL;
    int big = resolve(lim ? PyObject_RichCompare(p, lim, Py_GE) : NULL, 1);
    Py_XDECREF(p); Py_XDECREF(lim);
    PyObject *us = big > 0 ? scheduler_prod_axes(k, AXIS_BIT(UPCAST) | AXIS_BIT(UNROLL)) : NULL;
    int go = big <= 0 ? big : us ? cmp_long(us, 32, Py_LT) : -1;
    Py_XDECREF(us);
    if (go <= 0) { ret = go; break; }
    PyObject *choices = upcast_choices(k, upcasted, is_dsp);
    if (!choices || PyList_Sort(choices) < 0) { Py_XDECREF(choices); ret = -1; break; }
    if (!PyList_GET_SIZE(choices)) { Py_DECREF(choices); break; }
    /* tinygrad prints the choices at DEBUG>=4; tinyc prints nothing */
    PyObject *best = PyList_GET_ITEM(choices, 0), *axis = PyTuple_GET_ITEM(best, 2);
    PyObject *r = apply(k, OPTOPS_UPCAST, axis, PyTuple_GET_ITEM(best, 3));
    if (!r || PySet_Add(upcasted, axis) < 0) ret = -1;
    Py_XDECREF(r); Py_DECREF(choices);
  }
  Py_XDECREF(upcasted);
  return ret;
}

/* ---- unroll, the default upcast ---- */

/* the last reduce axis unrolled when small (a second one too when both are tiny), else split by 4 */
static int unroll_body(PyObject *k) {
  PyObject *ud = scheduler_int_dims(k, AXIS_BIT(GROUP_REDUCE) | AXIS_BIT(REDUCE)), *us = NULL, *fs = NULL;
  int ret = -1;
  if (!ud) return -1;
  if (!PyList_GET_SIZE(ud)) { ret = 0; goto done; }
  if (!(us = scheduler_prod_axes(k, AXIS_BIT(UPCAST) | AXIS_BIT(UNROLL)))) goto done;
  int small = cmp_long(us, 4, Py_LE);
  Py_ssize_t nunroll = small == 0 ? len_axes_of(k, AXIS_BIT(UNROLL)) : 0;
  int under = small < 0 || nunroll < 0 ? -1 : (small || !nunroll) ? cmp_long(us, 64, Py_LT) : 0;
  if (under <= 0) { ret = under; goto done; }
  Py_ssize_t n = PyList_GET_SIZE(ud);
  PyObject *s = (fs = scheduler_full_shape(k)) ? item(fs, item_index(ud, n - 1)) : NULL;
  int le32 = s ? cmp_long(s, 32, Py_LE) : -1;
  if (le32 < 0) goto done;
  if (!le32) {
    int m4 = mod_zero(s, 4);
    ret = m4 < 0 ? -1 : m4 ? apply_ll(k, OPTOPS_UNROLL, n - 1, 4) : 0;
    goto done;
  }
  Py_INCREF(s);   /* s is the size before the unroll; fs is read again after it */
  int err = apply_ll(k, OPTOPS_UNROLL, n - 1, 0);
  Py_SETREF(ud, err ? NULL : scheduler_int_dims(k, AXIS_BIT(GROUP_REDUCE) | AXIS_BIT(REDUCE)));
  int tiny = ud && PyList_GET_SIZE(ud) ? cmp_long(s, 3, Py_LE) : ud ? 0 : -1;
  Py_DECREF(s);
  if (tiny > 0) {
    n = PyList_GET_SIZE(ud);
    Py_SETREF(fs, scheduler_full_shape(k));
    PyObject *s2 = fs ? item(fs, item_index(ud, n - 1)) : NULL;
    tiny = s2 ? cmp_long(s2, 3, Py_LE) : -1;
    if (tiny > 0) tiny = apply_ll(k, OPTOPS_UNROLL, n - 1, 0) < 0 ? -1 : 0;
  }
  ret = tiny < 0 ? -1 : 0;
done:
  Py_XDECREF(ud); Py_XDECREF(us); Py_XDECREF(fs);
  return ret;
}
/* this can fail on multireduce with mismatching dimensions; tinygrad lets a KernelOptError go */
static int unroll(PyObject *k) { return swallow_opt_error(unroll_body(k)) < 0 ? -1 : 0; }

/* nothing upcast yet: upcast the last upcastable axis by 4 when it divides */
static int default_upcast(PyObject *k) {
  Py_ssize_t nup = len_axes_of(k, AXIS_BIT(UPCAST) | AXIS_BIT(UNROLL));
  if (nup != 0) return nup < 0 ? -1 : 0;
  PyObject *dims = scheduler_int_dims(k, AXIS_BIT(GLOBAL) | AXIS_BIT(LOCAL) | AXIS_BIT(LOOP)), *fs = dims ? scheduler_full_shape(k) : NULL;
  int ret = fs ? 0 : -1;
  if (fs && PyList_GET_SIZE(dims)) {
    Py_ssize_t last = item_index(dims, -1);
    PyObject *sz = last < 0 ? NULL : item(fs, last);
    int m4 = sz ? mod_zero(sz, 4) : -1;
    ret = m4 < 0 ? -1 : m4 ? apply_ll(k, OPTOPS_UPCAST, last, 4) : 0;
  }
  Py_XDECREF(dims); Py_XDECREF(fs);
  return ret;
}

/* ---- locals, threads ---- */

typedef struct { int expand; Py_ssize_t axis; long sz; } LocalPick;

/* the constant-sized GLOBAL/LOOP axes, each marked when some buffer does not use it (an expand axis, local first) */
static Py_ssize_t local_ranking(PyObject *k, LocalPick *out, Py_ssize_t cap) {
  PyObject *axes = scheduler_axes_of(k, AXIS_BIT(GLOBAL) | AXIS_BIT(LOOP)), *rngs = axes ? scheduler_rngs(k) : NULL;
  BufIdx b = {0, NULL, NULL};
  Py_ssize_t n = rngs && bufidx_init(&b, k) == 0 ? 0 : -1;
  for (Py_ssize_t i = 0; n >= 0 && i < PyList_GET_SIZE(axes) && n < cap; i++) {
    Py_ssize_t a = item_index(axes, i);
    PyObject *rng = a < 0 ? NULL : item(rngs, a);
    UOp *s0 = rng ? src_at(rng, 0) : NULL;
    if (!s0) { n = -1; break; }
    if (s0->op != OP_CONST) continue;
    int expand = 0;
    for (Py_ssize_t j = 0; expand == 0 && j < b.n; j++) { int in = PyDict_Contains(b.bs[j], rng); expand = in < 0 ? -1 : !in; }
    if (expand < 0) { n = -1; break; }
    out[n++] = (LocalPick){expand, a, 0};
  }
  bufidx_free(&b);
  Py_XDECREF(axes); Py_XDECREF(rngs);
  return n;
}

/* sort by expand then axis, both descending (tinygrad's key (-expand, -axis)); insertion sort keeps it stable */
static void sort_ranking(LocalPick *p, Py_ssize_t n) {
  for (Py_ssize_t i = 1; i < n; i++)
    for (Py_ssize_t j = i; j > 0 && (p[j].expand > p[j - 1].expand || (p[j].expand == p[j - 1].expand && p[j].axis > p[j - 1].axis)); j--) {
      LocalPick t = p[j]; p[j] = p[j - 1]; p[j - 1] = t;
    }
}

/* give each ranked axis the largest local size that divides it and keeps the product <= 128; those that get one */
static Py_ssize_t pick_local_sizes(PyObject *k, LocalPick *p, Py_ssize_t n) {
  static const long sizes[] = {32, 16, 8, 4, 3, 2};
  PyObject *fs = scheduler_full_shape(k);
  if (!fs) return -1;
  long local_size = 1;
  Py_ssize_t m = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *sz = item(fs, p[i].axis);
    if (!sz) { m = -1; break; }
    long pick = 0;
    for (int s = p[i].axis == 0 ? 0 : 1; !pick && s < 6; s++) {
      int d = mod_zero(sz, sizes[s]);
      if (d < 0) { Py_DECREF(fs); return -1; }
      if (d && local_size * sizes[s] <= 128) pick = sizes[s];
    }
    if (pick) { p[m] = p[i]; p[m++].sz = pick; local_size *= pick; }
  }
  Py_DECREF(fs);
  return m;
}

/* LOCAL the first three picks in axis order, each axis index moved down by the axes earlier LOCALs used up */
static int apply_locals(PyObject *k, LocalPick *p, Py_ssize_t m) {
  if (m > 3) m = 3;
  for (Py_ssize_t i = 1; i < m; i++)
    for (Py_ssize_t j = i; j > 0 && (p[j].axis < p[j - 1].axis || (p[j].axis == p[j - 1].axis && p[j].sz < p[j - 1].sz)); j--) {
      LocalPick t = p[j]; p[j] = p[j - 1]; p[j - 1] = t;
    }
  Py_ssize_t deleted = 0;
  for (Py_ssize_t i = 0; i < m; i++) {
    Py_ssize_t axis = p[i].axis - deleted;
    PyObject *fs = scheduler_full_shape(k), *sz = fs ? item(fs, axis) : NULL;
    int will_delete = sz ? cmp_long(sz, p[i].sz, Py_EQ) : -1;
    Py_XDECREF(fs);
    if (will_delete < 0 || apply_ll(k, OPTOPS_LOCAL, axis, p[i].sz) < 0) return -1;
    deleted += will_delete;
  }
  return 0;
}

static int locals(PyObject *k) {
  PyObject *ren = scheduler_ren(k);
  int has_local = ren ? ren_truth(ren, "has_local") : -1;
  if (has_local <= 0) return has_local;
  if (nolocals) {
    PyObject *r = apply(k, OPTOPS_NOLOCALS, NULL, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
  }
  Py_ssize_t cap = len_axes_of(k, AXIS_BIT(GLOBAL) | AXIS_BIT(LOOP));
  if (cap < 0) return -1;
  LocalPick *p = PyMem_Calloc((size_t)cap + 1, sizeof(LocalPick));
  if (!p) { PyErr_NoMemory(); return -1; }
  Py_ssize_t n = local_ranking(k, p, cap), m = n < 0 ? -1 : (sort_ranking(p, n), pick_local_sizes(k, p, n));
  int ret = m < 0 ? -1 : apply_locals(k, p, m);
  PyMem_Free(p);
  return ret;
}

/* is the last applied opt a THREAD */
static int last_is_thread(PyObject *k) {
  PyObject *ao = scheduler_applied_opts(k);
  if (!ao) return -1;
  if (!PyList_GET_SIZE(ao)) return 0;
  PyObject *op = getattr_literal(PyList_GET_ITEM(ao, PyList_GET_SIZE(ao) - 1), "op");
  int ret = op ? op == optops_members[OPTOPS_THREAD] : -1;
  Py_XDECREF(op);
  return ret;
}

/* threads for the first LOOP axis each count divides, the largest count first, about 128K ops per thread at least */
static int threads_for(PyObject *k, long threads) {
  PyObject *fs = scheduler_full_shape(k), *loops = fs ? scheduler_axes_of(k, AXIS_BIT(LOOP)) : NULL;
  int ret = loops ? 0 : -1;
  for (Py_ssize_t i = 0; ret == 0 && i < PyList_GET_SIZE(loops); i++) {
    Py_ssize_t a = item_index(loops, i);
    PyObject *sz = a < 0 ? NULL : item(fs, a);
    int d = sz ? mod_zero(sz, threads) : -1;
    if (d < 0) ret = -1;
    else if (d) { ret = try_apply_ll(k, OPTOPS_THREAD, a, threads) < 0 ? -1 : 0; break; }
  }
  Py_XDECREF(fs); Py_XDECREF(loops);
  return ret;
}

static int threads(PyObject *k) {
  static const long counts[] = {32, 16, 12, 8, 6, 5, 4, 3, 2};
  PyObject *ren = scheduler_ren(k);
  int ht = ren ? ren_truth(ren, "has_threads") : -1;
  if (ht <= 0) return ht;
  PyObject *gm = getattr_literal(ren, "global_max");
  if (!gm || gm == Py_None) { Py_XDECREF(gm); return gm ? 0 : -1; }
  int ret = 0;
  for (size_t i = 0; ret == 0 && i < sizeof counts / sizeof *counts; i++) {
    PyObject *g0 = PySequence_GetItem(gm, 0), *t = g0 ? PyLong_FromLong(counts[i]) : NULL;
    int over = t ? PyObject_RichCompareBool(t, g0, Py_GT) : -1;
    PyObject *fs = over == 0 ? scheduler_full_shape(k) : NULL, *p = fs ? prod_at(fs, NULL) : NULL;
    PyObject *unit = p ? PyLong_FromLong(128L << 10) : NULL, *q = unit ? PyNumber_FloorDivide(p, unit) : NULL;
    int few = over != 0 ? over : resolve(q ? PyObject_RichCompare(q, t, Py_LT) : NULL, 1);
    Py_XDECREF(g0); Py_XDECREF(t); Py_XDECREF(fs); Py_XDECREF(p); Py_XDECREF(unit); Py_XDECREF(q);
    if (few != 0) { ret = few < 0 ? -1 : 0; continue; }
    int last = threads_for(k, counts[i]) < 0 ? -1 : last_is_thread(k);
    if (last) { ret = last < 0 ? -1 : 0; break; }
  }
  Py_DECREF(gm);
  return ret;
}

/* ---- float4 images ---- */

/* the axis of the first unit-stride range of an image buffer's index whose size is a multiple of 4 (a term of the
 * index's sum): 1 with *axis, 0 when there is none */
static int image_unit_stride_axis(PyObject *k, PyObject *buf, Py_ssize_t *axis) {
  UOp *s1 = src_at(buf, 1), *idx = s1 ? uop_get_idx(s1) : NULL;
  PtrVec terms = {0};
  int ret = idx && uop_split_uop(idx, OP_ADD, &terms) == 0 ? 0 : -1;
  for (Py_ssize_t i = 0; ret == 0 && i < terms.len; i++) {
    UOp *c = terms.items[i];
    PyObject *lo, *hi;
    if (c->op != OP_RANGE) continue;
    if (uop_min_max(c, &lo, &hi) < 0) { ret = -1; break; }
    PyObject *one = PyLong_FromLong(1), *size = one ? PyNumber_Add(hi, one) : NULL;   /* the range's size */
    int mul4 = size ? mod_zero(size, 4) : -1;
    Py_XDECREF(one); Py_XDECREF(size);
    if (mul4 < 0) { ret = -1; break; }
    if (mul4 && (*axis = rng_index(k, (PyObject *)c)) >= 0) ret = 1;
    else if (mul4) ret = -1;
  }
  ptrvec_free(&terms);
  Py_XDECREF(idx);
  return ret;
}

/* list.index(v) for a list of ints, -1 when v is not in it (no exception) */
static Py_ssize_t int_position(PyObject *list, Py_ssize_t v) {
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++)
    if (PyLong_AsSsize_t(PyList_GET_ITEM(list, i)) == v) return i;
  return -1;
}

/* image buffers load and store float4 texels: upcast (or else unroll) by 4 the axis that walks one, before any local */
static int upcast_images(PyObject *k) {
  PyObject *bufs = scheduler_bufs(k);
  int ret = bufs ? 0 : -1;
  for (Py_ssize_t i = 0; ret == 0 && i < PyList_GET_SIZE(bufs); i++) {
    UOp *b = src_at(PyList_GET_ITEM(bufs, i), 0);
    if (!b) { ret = -1; break; }
    if (!dtype_is_image(b->dtype)) continue;
    PyObject *now = scheduler_bufs(k), *cur = now ? item(now, i) : NULL;   /* the opts so far changed the kernel's buffers */
    Py_ssize_t axis = 0;
    int found = cur ? image_unit_stride_axis(k, cur, &axis) : -1;
    Py_XDECREF(now);
    if (found <= 0) { ret = found; continue; }
    PyObject *up = scheduler_int_dims(k, AXIS_BIT(GLOBAL) | AXIS_BIT(LOCAL) | AXIS_BIT(LOOP));
    PyObject *un = up ? scheduler_int_dims(k, AXIS_BIT(GROUP_REDUCE) | AXIS_BIT(REDUCE)) : NULL;
    Py_ssize_t pos = un ? int_position(un, axis) : -1;
    if (!un) ret = -1;
    else if (int_position(up, axis) >= 0) ret = apply_ll(k, OPTOPS_UPCAST, axis, 4);
    else if (pos >= 0) ret = apply_ll(k, OPTOPS_UNROLL, pos, 4);
    Py_XDECREF(up); Py_XDECREF(un);
  }
  Py_XDECREF(bufs);
  return ret;
}

/* ---- hand_coded_optimizations ---- */

PyObject *hand_coded_optimizations(PyObject *k0) {
  if (!scheduler_check(k0)) return PyErr_Format(PyExc_TypeError, "hand_coded_optimizations needs a tinyc.Scheduler, not %.100s", Py_TYPE(k0)->tp_name);
  PyObject *tk = NULL;
  int tc = read_mv_env() < 0 ? -1 : try_tensor_cores(k0, &tk);
  if (tc) return tc < 0 ? NULL : tk;
  PyObject *k = scheduler_copy(k0);   /* the input is not changed */
  if (!k) return NULL;
  if (upcast_images(k) < 0) goto fail;
  int mv = matvec(k);
  if (mv) { if (mv > 0) return k; goto fail; }
  if (grouptop(k) < 0) goto fail;
  Py_ssize_t grouped = len_axes_of(k, AXIS_BIT(GROUP_REDUCE));
  if (grouped) { if (grouped > 0) return k; goto fail; }   /* no more opts once grouping */
  if (masked_upcasts(k) < 0 || more_upcasts(k) < 0 || unroll(k) < 0 || default_upcast(k) < 0 || locals(k) < 0 || threads(k) < 0) goto fail;
  return k;
fail:
  Py_DECREF(k);
  return NULL;
}

static PyObject *py_hand_coded_optimizations(PyObject *mod, PyObject *k) { UNUSED(mod); return hand_coded_optimizations(k); }

static PyMethodDef heuristic_functions[] = {
  {"hand_coded_optimizations", py_hand_coded_optimizations, METH_O,
   "hand_coded_optimizations(k: Scheduler) -> Scheduler: a copy of k with tinygrad's hand-coded opts applied"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_heuristic(PyObject *m) {
  if (ctxvar_int("TC", &use_tc) < 0 || ctxvar_int("TC_SELECT", &tc_select) < 0 || ctxvar_int("TC_OPT", &tc_opt) < 0 ||
      ctxvar_int("AMX", &amx) < 0 || ctxvar_int("NOLOCALS", &nolocals) < 0) return -1;
  return PyModule_AddFunctions(m, heuristic_functions);
}
