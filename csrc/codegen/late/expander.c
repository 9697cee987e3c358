/* tinygrad/codegen/late/expander.py in C: UPCAST/UNROLL ranges become UNROLL nodes (pm_pre_expander), and
 * `expander` pushes UNROLLs through the graph, turning scalar work into vector work and CONTRACTs back into
 * GEPs. An UNROLL arg is a tuple of (axis, size) pairs; a flat vector index walks them with the last pair
 * varying fastest. pm_group_for_reduce splits a reduce over GROUP_REDUCE ranges through a local buffer. */
#include <limits.h>
#include "../../uop/native.h"
#include "../../schedule/indexing.h"

/* g.replace(arg=arg): a RANGE with a new arg, pooled */
static UOp *u_make_range(UOp *g, PyObject *arg) {
  return arg ? KEEP(uop_new(g->op, g->dtype, g->src, g->nsrc, arg, uop_tag(g))) : NULL;
}

#define MAX_AXES 64
#define MAX_LANES (1L << 24)   /* the most lanes an expansion may have: the product of its axis sizes */

typedef struct { long axis, size; } Axis;

static PyObject *axis_upcast, *axis_unroll;   /* AxisType.UPCAST / AxisType.UNROLL (owned) */

/* ---- (axis, size) tuples ---- */

/* Read a tuple of (axis, size) pairs into out; returns the count, -1 on error. */
static int read_axes(PyObject *args, Axis *out, int max) {
  if (!PyTuple_Check(args)) { PyErr_SetString(PyExc_TypeError, "expander: axis arg is not a tuple"); return -1; }
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n > max) { PyErr_SetString(PyExc_ValueError, "expander: too many axes"); return -1; }
  long lanes = 1;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *p = PyTuple_GET_ITEM(args, i);
    if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 2) { PyErr_SetString(PyExc_TypeError, "expander: axis is not a pair"); return -1; }
    out[i].axis = PyLong_AsLong(PyTuple_GET_ITEM(p, 0));
    out[i].size = PyLong_AsLong(PyTuple_GET_ITEM(p, 1));
    if (PyErr_Occurred()) return -1;
    if (out[i].size < 1) {   /* tinygrad divides by the product of the sizes */
      PyErr_Format(out[i].size ? PyExc_ValueError : PyExc_ZeroDivisionError, "expander: axis %ld has size %ld", out[i].axis, out[i].size);
      return -1;
    }
    lanes *= out[i].size;   /* bounded at each step, so it never overflows */
    if (lanes > MAX_LANES) { PyErr_Format(PyExc_OverflowError, "expander: more than %ld lanes", MAX_LANES); return -1; }
  }
  return (int)n;
}

/* A tuple of (axis, size) pairs, pooled. */
static PyObject *axes_tuple(const Axis *a, int n) {
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) {
    PyObject *p = Py_BuildValue("(ll)", a[i].axis, a[i].size);
    if (!p) { Py_CLEAR(t); break; }
    PyTuple_SET_ITEM(t, i, p);
  }
  return pool_keep(t);
}

static long axes_prod(const Axis *a, int n) { long p = 1; for (int i = 0; i < n; i++) p *= a[i].size; return p; }

static bool axes_contains(const Axis *a, int n, Axis x) {
  for (int i = 0; i < n; i++) if (a[i].axis == x.axis && a[i].size == x.size) return true;
  return false;
}

/* A tuple of Python ints, pooled. */
static PyObject *int_tuple(const long *v, long n) {
  PyObject *t = PyTuple_New(n);
  for (long i = 0; t && i < n; i++) {
    PyObject *x = PyLong_FromLong(v[i]);
    if (!x) { Py_CLEAR(t); break; }
    PyTuple_SET_ITEM(t, i, x);
  }
  return pool_keep(t);
}

/* ---- choices and flat indices (_choices_from_args, _expand_arg_to_idx) ---- */

/* A choice: the value picked for each axis; like a dict built from pairs, a later entry for an axis wins. */
typedef struct { long axis[2 * MAX_AXES + 1], val[2 * MAX_AXES + 1]; int n; } Choice;

/* Value of `axis` in the choice: the last entry wins; excluded axes read 0. -1 with KeyError when absent. */
static long choice_get(const Choice *c, long axis, const long *exclude, int nexclude) {
  for (int i = 0; i < nexclude; i++) if (exclude[i] == axis) return 0;
  for (int i = c->n - 1; i >= 0; i--) if (c->axis[i] == axis) return c->val[i];
  PyErr_Format(PyExc_KeyError, "%ld", axis);
  return -1;
}

/* Flat index of a choice into a vector laid out by `args` (last pair fastest). */
static long expand_arg_to_idx(const Axis *args, int n, const Choice *c, const long *exclude, int nexclude) {
  long idx = 0, mul = 1;
  for (int i = n - 1; i >= 0; i--) {
    long v = choice_get(c, args[i].axis, exclude, nexclude);
    if (v < 0) return -1;
    idx += v * mul;
    mul *= args[i].size;
  }
  return idx;
}

/* Choice number k of itertools.product over `args` (last pair fastest), appended after c->n entries. */
static void choice_append(Choice *c, const Axis *args, int n, long k) {
  int base = c->n;
  for (int i = n - 1; i >= 0; i--) {
    c->axis[base + i] = args[i].axis;
    c->val[base + i] = k % args[i].size;
    k /= args[i].size;
  }
  c->n = base + n;
}

/* _swizzle_args: for each choice of cargs, its index into a vector laid out by eargs. Caller frees. */
static long *swizzle_args(const Axis *cargs, int nc, const Axis *eargs, int ne, const long *exclude, int nexclude) {
  long total = axes_prod(cargs, nc);
  long *out = PyMem_Malloc(sizeof(long) * (total ? total : 1));
  if (!out) { PyErr_NoMemory(); return NULL; }
  for (long k = 0; k < total; k++) {
    Choice c = {.n = 0};
    choice_append(&c, cargs, nc, k);
    if ((out[k] = expand_arg_to_idx(eargs, ne, &c, exclude, nexclude)) < 0) { PyMem_Free(out); return NULL; }
  }
  return out;
}

/* ---- small UOp helpers ---- */

/* dt.vec(n) as the DType method (handles void and pointers the way tinygrad does); dtypes live on */
static DType *dt_vec(DType *dt, long n) {
  if (n > INT_MAX || n < INT_MIN) return (DType *)PyErr_Format(PyExc_OverflowError, "vec size %ld is too large", n);
  return dtype_vec(dt, (int)n);
}
/* dt.scalar().vec(n) */
static DType *scalar_vec(DType *dt, long n) { return dt_vec(dtype_scalar(dt), n); }

/* UOp(op, dt, src, arg, tag) with a tag */
static UOp *u_new_tagged(Op op, DType *dt, UOp *const *src, int n, PyObject *arg, PyObject *tag) {
  for (int i = 0; i < n; i++) if (!src[i]) return NULL;
  return dt && arg ? KEEP(uop_new(op, dt, src, n, arg, tag)) : NULL;
}

/* x.after(*srcs) (op AFTER, x's dtype) or x.end(*srcs) (op END, void; x itself when there is nothing to end) */
static UOp *u_with_srcs(Op op, UOp *x, UOp *const *srcs, int n) {
  if (op == OP_END && n == 0) return x;
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)(n + 1));
  if (!src) return (UOp *)PyErr_NoMemory();
  src[0] = x;
  memcpy(src + 1, srcs, sizeof(UOp *) * (size_t)n);
  UOp *r = u_new(op, op == OP_END ? DTYPE(VOID) : x->dtype, src, n + 1, NULL);
  PyMem_Free(src);
  return r;
}

/* The concatenated args of the UNROLLs among srcs, as a pooled tuple. */
static PyObject *concat_args(UOp *const *srcs, int n) {
  PyObject *acc = pool_keep(PyTuple_New(0));
  for (int i = 0; acc && i < n; i++) if (srcs[i]->op == OP_UNROLL) acc = pool_keep(PySequence_Concat(acc, srcs[i]->arg));
  return acc;
}

/* ---- pm_pre_expander ---- */

/* An UPCAST or UNROLL range becomes UNROLL of the vector const (0, 1, ..., size-1) over its axis. */
RULE(range_to_unroll, r) {
  if (!PyTuple_Check(r->arg) || PyTuple_GET_SIZE(r->arg) < 2) return NULL;
  PyObject *kind = PyTuple_GET_ITEM(r->arg, 1);
  if (kind != axis_upcast && kind != axis_unroll) return NULL;
  PyObject *s = n_add(vmax(r), n_int(1));
  if (!s) return NULL;
  long size = PyLong_AsLong(s);
  if (size < 0 && PyErr_Occurred()) return NULL;
  long *vals = PyMem_Malloc(sizeof(long) * (size ? size : 1));
  if (!vals) { PyErr_NoMemory(); return NULL; }
  for (long i = 0; i < size; i++) vals[i] = i;
  PyObject *range = int_tuple(vals, size);
  PyMem_Free(vals);
  UOp *c = u_const(dt_vec(r->dtype, size), range);
  PyObject *arg = pool_keep(Py_BuildValue("((Ol))", PyTuple_GET_ITEM(r->arg, 0), size));
  return arg ? u_new(OP_UNROLL, r->dtype, &c, 1, arg) : NULL;
}

/* fix_reduce_unroll: the UNROLLs among a REDUCE's ranges become a CONTRACT (tag 1) of its value. */
RULE(fix_reduce_unroll, x) {
  UOp **srcs = pool_alloc(sizeof(UOp *) * x->nsrc), **unrolls = pool_alloc(sizeof(UOp *) * x->nsrc);
  if (!srcs || !unrolls) return NULL;
  int nr = 1, nu = 0, nexpand = 0;
  for (int i = 1; i < (int)x->nsrc; i++) {
    UOp *s = x->src[i];
    if (s->op == OP_RANGE) srcs[nr++] = s;
    else {
      nexpand++;
      if (s->op == OP_CONST) continue;
      if (s->op != OP_UNROLL) { PyErr_SetString(PyExc_AssertionError, "not all UNROLLS in reduce"); return NULL; }
      unrolls[nu++] = s;
    }
  }
  if (nexpand == 0) return NULL;
  srcs[0] = x->src[0];
  PyObject *axes = concat_args(unrolls, nu);
  if (!axes) return NULL;
  if (PyTuple_GET_SIZE(axes)) {
    Axis a[MAX_AXES];
    int na = read_axes(axes, a, MAX_AXES);
    if (na < 0) return NULL;
    PyObject *one = pool_keep(PyLong_FromLong(1));
    srcs[0] = u_new_tagged(OP_CONTRACT, dt_vec(x->dtype, axes_prod(a, na)), &x->src[0], 1, axes, one);
  }
  return u_replace_src(x, srcs, nr);
}

/* fix_store_unroll: UNROLLs among a STORE's ranges leave the STORE and wrap it in a void CONTRACT (tag 1). */
RULE(fix_store_unroll, x) {
  UOp **srcs = pool_alloc(sizeof(UOp *) * x->nsrc), **unrolls = pool_alloc(sizeof(UOp *) * x->nsrc);
  if (!srcs || !unrolls) return NULL;
  int nr = 0, nu = 0;
  for (int i = 0; i < (int)x->nsrc; i++) {
    if (i >= 2 && x->src[i]->op == OP_UNROLL) unrolls[nu++] = x->src[i];
    else srcs[nr++] = x->src[i];
  }
  if (nu == 0) return NULL;
  UOp *store = u_replace_src(x, srcs, nr);
  PyObject *one = pool_keep(PyLong_FromLong(1));
  return u_new_tagged(OP_CONTRACT, scalar_dtypes[DT_VOID], &store, 1, concat_args(unrolls, nu), one);
}

static const RuleDef pm_pre_expander_defs[] = {
  R("UPat(Ops.RANGE, name='r')", range_to_unroll),
  R("UPat(Ops.REDUCE, name='x')", fix_reduce_unroll),
  R("UPat(Ops.STORE, name='x')", fix_store_unroll),
};

/* ---- expander ---- */

/* AFTER of a broadcast is the broadcast of the AFTER. */
RULE_MAYBE(push_broadcast_after, (a, b), x) {
  return u_broadcast(u_with_srcs(OP_AFTER, x, a->src + 1, (int)a->nsrc - 1), b->nsrc);
}

/* END of a broadcast is the broadcast of the END. */
RULE_MAYBE(push_broadcast_end, (a, b), x) {
  return u_broadcast(u_with_srcs(OP_END, x, a->src + 1, (int)a->nsrc - 1), b->nsrc);
}

/* end_unrolls: an END over UNROLLs ends them by contracting its value over their axes. */
RULE(end_unrolls, u) {
  UOp **srcs = pool_alloc(sizeof(UOp *) * u->nsrc), **unrolls = pool_alloc(sizeof(UOp *) * u->nsrc);
  if (!srcs || !unrolls) return NULL;
  int nr = 1, nu = 0;
  for (int i = 1; i < (int)u->nsrc; i++) {
    if (u->src[i]->op == OP_UNROLL) unrolls[nu++] = u->src[i];
    else srcs[nr++] = u->src[i];
  }
  if (nu == 0) return NULL;
  srcs[0] = u_new(OP_CONTRACT, scalar_dtypes[DT_VOID], &u->src[0], 1, concat_args(unrolls, nu));
  return u_replace_src(u, srcs, nr);
}

/* A BUFFERIZE of UNROLLs contracts each source over the range UNROLL's axes. */
RULE(bufferize_contract, x) {
  UOp **srcs = pool_alloc(sizeof(UOp *) * x->nsrc);
  if (!srcs) return NULL;
  UOp *rng = x->src[1];
  for (int i = 0; i < (int)x->nsrc; i++) {
    UOp *s = x->src[i];
    srcs[i] = u_new(OP_CONTRACT, dt_vec(s->dtype, rng->src[0]->dtype->count), &s, 1, rng->arg);
  }
  return u_replace_src(x, srcs, x->nsrc);
}

/* UNROLL of UNROLL is one UNROLL over the inner axes then the outer ones. */
RULE(double_expand, outer, inner) {
  PyObject *arg = pool_keep(PySequence_Concat(inner->arg, outer->arg));
  return u_new(OP_UNROLL, outer->dtype, &inner->src[0], 1, arg);
}

/* The axes WMMA zeroes when swizzling: its reduce axes and its upcast axes, deduplicated in order. */
static int wmma_exclude(UOp *root, long *out, int max) {
  int n = 0;
  PyObject *arg = root->arg;
  Py_ssize_t na = PyTuple_GET_SIZE(arg);
  PyObject *reduce_axes = PyTuple_GET_ITEM(arg, na - 1), *upcast_axes = PyTuple_GET_ITEM(arg, na - 2);
  long cand[4 * MAX_AXES];
  int nc = 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(reduce_axes) && nc < 4 * MAX_AXES; i++)
    cand[nc++] = PyLong_AsLong(PyTuple_GET_ITEM(reduce_axes, i));
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(upcast_axes); i++) {
    PyObject *group = PyTuple_GET_ITEM(upcast_axes, i);
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(group) && nc < 4 * MAX_AXES; j++)
      cand[nc++] = PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(group, j), 0));
  }
  if (PyErr_Occurred()) return -1;
  for (int i = 0; i < nc; i++) {
    bool seen = false;
    for (int j = 0; j < n; j++) seen |= out[j] == cand[i];
    if (!seen && n < max) out[n++] = cand[i];
  }
  return n;
}

static int cmp_axis(const void *a, const void *b) {
  const Axis *x = a, *y = b;
  if (x->axis != y->axis) return x->axis < y->axis ? -1 : 1;
  return x->size < y->size ? -1 : x->size > y->size;
}

/* The axes of the expansion: the shared UNROLL arg, or every axis sorted, deduplicated, less the excluded. */
static PyObject *expansion_axes(UOp *root, const long *exclude, int nexclude) {
  UOp *first = NULL;
  bool same = true;
  for (int i = 0; i < (int)root->nsrc; i++) {
    UOp *s = root->src[i];
    if (s->op != OP_UNROLL) continue;
    if (!first) first = s;
    else {
      int eq = PyObject_RichCompareBool(first->arg, s->arg, Py_EQ);
      if (eq < 0) return NULL;
      same &= eq == 1;
    }
  }
  if (same && nexclude == 0) return first->arg;
  Axis all[4 * MAX_AXES];
  int n = 0;
  for (int i = 0; i < (int)root->nsrc; i++) {
    if (root->src[i]->op != OP_UNROLL) continue;
    int k = read_axes(root->src[i]->arg, all + n, 4 * MAX_AXES - n);
    if (k < 0) return NULL;
    n += k;
  }
  qsort(all, n, sizeof(Axis), cmp_axis);
  Axis keep[4 * MAX_AXES];
  int nk = 0;
  for (int i = 0; i < n; i++) {
    if (i > 0 && cmp_axis(&all[i], &all[i - 1]) == 0) continue;
    bool excluded = false;
    for (int j = 0; j < nexclude; j++) excluded |= exclude[j] == all[i].axis;
    if (!excluded) keep[nk++] = all[i];
  }
  return axes_tuple(keep, nk);
}

/* An UNROLL source seen through the expansion's axes: itself when they match, else a swizzling GEP. */
static UOp *swizzled_source(UOp *src, PyObject *expand_args, const Axis *ea, int nea, const long *exclude, int nexclude) {
  int eq = PyObject_RichCompareBool(expand_args, src->arg, Py_EQ);
  if (eq < 0) return NULL;
  if (eq) return src->src[0];
  Axis sa[MAX_AXES];
  int nsa = read_axes(src->arg, sa, MAX_AXES);
  if (nsa < 0) return NULL;
  long *lst = swizzle_args(ea, nea, sa, nsa, exclude, nexclude);
  if (!lst) return NULL;
  long n = axes_prod(ea, nea), cnt = src->dtype->count;
  long *idx = PyMem_Malloc(sizeof(long) * (n * cnt + 1));
  if (!idx) { PyMem_Free(lst); PyErr_NoMemory(); return NULL; }
  for (long i = 0; i < n; i++) for (long j = 0; j < cnt; j++) idx[i * cnt + j] = cnt > 1 ? lst[i] * cnt + j : lst[i];
  PyObject *t = int_tuple(idx, n * cnt);
  PyMem_Free(lst);
  PyMem_Free(idx);
  return u_gep(src->src[0], t);
}

/* A source that is not an UNROLL, seen through an expansion of expand_sz lanes. */
static UOp *widened_source(UOp *root, int i, long expand_sz) {
  UOp *src = root->src[i];
  int start = uop_range_start(root->op);
  if (start >= 0 && i >= start) return src;
  if (root->op == OP_INDEX && i >= 1 && !root->dtype->is_ptr) return src;
  if (src->dtype->count > 1) {
    UOp **reps = pool_alloc(sizeof(UOp *) * (size_t)expand_sz);
    if (!reps) return NULL;
    for (long k = 0; k < expand_sz; k++) reps[k] = src;
    return u_new(OP_CAT, scalar_vec(src->dtype, expand_sz * src->dtype->count), reps, (int)expand_sz, Py_None);
  }
  return u_broadcast(src, expand_sz);
}

/* do_expand: an op over UNROLLs runs once on vectors of all the lanes, and is wrapped in one UNROLL. */
RULE(do_expand, root) {
  bool any = false;
  for (int i = 0; i < (int)root->nsrc; i++) any |= root->src[i]->op == OP_UNROLL;
  if (!any) return NULL;
  long exclude[4 * MAX_AXES];
  int nexclude = root->op == OP_WMMA ? wmma_exclude(root, exclude, 4 * MAX_AXES) : 0;
  if (nexclude < 0) return NULL;
  PyObject *expand_args = expansion_axes(root, exclude, nexclude);
  if (!expand_args) return NULL;
  Axis ea[4 * MAX_AXES];
  int nea = read_axes(expand_args, ea, 4 * MAX_AXES);
  if (nea < 0) return NULL;
  long expand_sz = axes_prod(ea, nea);
  UOp **srcs = pool_alloc(sizeof(UOp *) * root->nsrc);
  if (!srcs) return NULL;
  for (int i = 0; i < (int)root->nsrc; i++) {
    UOp *s = root->src[i];
    srcs[i] = s->op == OP_UNROLL ? swizzled_source(s, expand_args, ea, nea, exclude, nexclude) : widened_source(root, i, expand_sz);
    if (!srcs[i]) return NULL;
  }
  PyObject *arg = root->arg;
  if (root->op == OP_GEP) {
    if (root->dtype->count != 1) { PyErr_SetString(PyExc_AssertionError, "expanding a GEP of a vector"); return NULL; }
    if (!PyTuple_GET_SIZE(root->arg)) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); return NULL; }
    long start = PyLong_AsLong(PyTuple_GET_ITEM(root->arg, 0)), cnt = srcs[0]->dtype->count, step = cnt / expand_sz;
    if (PyErr_Occurred()) return NULL;
    if (step == 0) { PyErr_SetString(PyExc_ValueError, "range() arg 3 must not be zero"); return NULL; }
    if (start < -MAX_LANES) { PyErr_Format(PyExc_OverflowError, "expander: GEP lane %ld", start); return NULL; }
    long n = start < cnt ? (cnt - start + step - 1) / step : 0, *lanes = pool_alloc(sizeof(long) * (size_t)n);   /* range(start, cnt, step) */
    if (!lanes) return NULL;
    for (long i = 0; i < n; i++) lanes[i] = start + i * step;
    arg = int_tuple(lanes, n);
  }
  UOp *wide = u_new(root->op, scalar_vec(root->dtype, root->dtype->count * expand_sz), srcs, root->nsrc, arg);
  return u_new(OP_UNROLL, root->dtype, &wide, 1, expand_args);
}

/* do_contract: CONTRACT gathers the lanes of its axes into vectors; without an UNROLL it just repeats. */
RULE(do_contract, con) {
  UOp *ex = con->src[0];
  if (ex->op != OP_UNROLL) {
    long n = con->dtype->count;
    UOp **reps = pool_alloc(sizeof(UOp *) * (size_t)n);
    if (!reps) return NULL;
    for (long k = 0; k < n; k++) reps[k] = ex;
    return u_new(OP_VECTORIZE, con->dtype, reps, (int)n, Py_None);
  }
  Axis exa[MAX_AXES], cona[MAX_AXES], rest[MAX_AXES];
  int nex = read_axes(ex->arg, exa, MAX_AXES), ncon = read_axes(con->arg, cona, MAX_AXES), nrest = 0;
  if (nex < 0 || ncon < 0) return NULL;
  if (con->dtype != scalar_dtypes[DT_VOID] && con->dtype->count != axes_prod(cona, ncon)) {
    PyErr_SetString(PyExc_AssertionError, "dtype is wrong");
    return NULL;
  }
  for (int i = 0; i < nex; i++) if (!axes_contains(cona, ncon, exa[i])) rest[nrest++] = exa[i];
  long nouter = axes_prod(rest, nrest), ninner = axes_prod(cona, ncon);
  long *idxs = PyMem_Malloc(sizeof(long) * (nouter * ninner + 1));
  if (!idxs) { PyErr_NoMemory(); return NULL; }
  for (long o = 0; o < nouter; o++) for (long k = 0; k < ninner; k++) {
    Choice c = {.n = 0};
    choice_append(&c, rest, nrest, o);
    choice_append(&c, cona, ncon, k);
    if ((idxs[o * ninner + k] = expand_arg_to_idx(exa, nex, &c, NULL, 0)) < 0) { PyMem_Free(idxs); return NULL; }
  }
  PyObject *t = int_tuple(idxs, nouter * ninner);
  PyMem_Free(idxs);
  UOp *g = u_gep(ex->src[0], t);
  return u_new(OP_UNROLL, con->dtype, &g, 1, axes_tuple(rest, nrest));
}

/* An UNROLL over no axes is its source. */
RULE(empty_unroll, x) { return x; }

static const RuleDef expander_defs[] = {
  R("UPat.var('x').broadcast(name='b').after(name='a', allow_any_len=True)", push_broadcast_after),
  R("UPat.var('x').broadcast(name='b').end(name='a', allow_any_len=True)", push_broadcast_end),
  R("UPat(Ops.END, name='u')", end_unrolls),
  R("UPat(Ops.BUFFERIZE, src=(UPat(Ops.UNROLL), UPat(Ops.UNROLL)), name='x')", bufferize_contract),
  R("UPat(Ops.UNROLL, name='outer', src=(UPat(Ops.UNROLL, name='inner'),))", double_expand),
  R("UPat((*GroupOp.ALU, Ops.CAST, Ops.BITCAST, Ops.GEP, Ops.WMMA, Ops.LOAD, Ops.STORE, Ops.INDEX, Ops.BUFFERIZE,"
   " Ops.VECTORIZE, Ops.REDUCE, Ops.END, Ops.AFTER), name='root', custom_early_reject=set([Ops.UNROLL]))", do_expand),
  R("UPat(Ops.CONTRACT, name='con')", do_contract),
  R("UPat(Ops.UNROLL, src=(UPat.var('x'),), arg=())", empty_unroll),
};

/* ---- pm_group_for_reduce ---- */

static PyObject *axis_group_reduce, *axis_local, *axis_reduce;   /* owned */

static bool is_axis_range(UOp *u, PyObject *axis) {
  return u->op == OP_RANGE && PyTuple_Check(u->arg) && PyTuple_GET_SIZE(u->arg) > 1 && PyTuple_GET_ITEM(u->arg, 1) == axis;
}

/* A REDUCE over GROUP_REDUCE ranges reduces its other ranges first, stores the partial results to a local
 * buffer indexed by the kernel's LOCAL ranges and the group ranges, and reduces that buffer over new
 * REDUCE ranges (numbered +100). The if/barrier around the final reduce come in the gpudims step. */
RULE(fix_group_for_reduce, x) {
  int n = (int)x->nsrc - 1, ng = 0, nr = 0;
  for (int i = 1; i <= n; i++) ng += is_axis_range(x->src[i], axis_group_reduce);
  if (ng == 0) return NULL;
  PyObject *topo = pool_keep(uop_toposort_list(x, NULL));
  if (!topo) return NULL;
  Py_ssize_t nt = PyList_GET_SIZE(topo), nl = 0;
  UOp **buf = PyMem_Malloc(sizeof(UOp *) * (size_t)(nt + 2 * n + 2));
  if (!buf) { PyErr_NoMemory(); return NULL; }
  UOp **red_src = buf, **bsrc = buf + n + 1;   /* REDUCE of the rest; BUFFERIZE / INDEX sources */
  red_src[nr++] = x->src[0];
  for (int i = 1; i <= n; i++) if (!is_axis_range(x->src[i], axis_group_reduce)) red_src[nr++] = x->src[i];
  UOp *ret = u_replace_src(x, red_src, nr);
  bsrc[0] = ret;
  for (Py_ssize_t i = 0; i < nt; i++) {
    UOp *u = (UOp *)PyList_GET_ITEM(topo, i);
    if (is_axis_range(u, axis_local)) bsrc[1 + nl++] = u;
  }
  UOp **loops = red_src + 1;   /* reuse: the new REDUCE ranges */
  int k = 0;
  UOp *first = NULL;
  for (int i = 1; i <= n; i++) {
    UOp *g = x->src[i];
    if (!is_axis_range(g, axis_group_reduce)) continue;
    if (!first) first = g;
    bsrc[1 + nl + k] = g;
    PyObject *a = pool_keep(Py_BuildValue("(NO)", PyNumber_Add(PyTuple_GET_ITEM(g->arg, 0), n_int(100)), axis_reduce));
    loops[k++] = a ? u_make_range(g, a) : NULL;
  }
  UOp *res = NULL;
  PyObject *opts = pool_keep(bufferize_opts_new(PyTuple_GET_ITEM(first->arg, 0), ADDRSPACE_LOCAL, true));
  UOp *bz = ret && opts ? u_new(OP_BUFFERIZE, ret->dtype, bsrc, 1 + (int)nl + k, opts) : NULL;
  if (bz) {
    bsrc[0] = bz;
    for (int i = 0; i < k; i++) bsrc[1 + nl + i] = loops[i];
    UOp *ix = u_new(OP_INDEX, bz->dtype, bsrc, 1 + (int)nl + k, Py_None);
    if (ix) {
      UOp **rsrc = bsrc;   /* REDUCE(ix, *loops) */
      rsrc[0] = ix;
      for (int i = 0; i < k; i++) rsrc[1 + i] = loops[i];
      res = u_new(OP_REDUCE, ix->dtype, rsrc, 1 + k, x->arg);
    }
  }
  PyMem_Free(buf);
  return res;
}

static const RuleDef pm_group_for_reduce_defs[] = {
  R("UPat(Ops.REDUCE, name='x')", fix_group_for_reduce),
};

int tinyc_init_expander(PyObject *m) {
  UNUSED(m);
  axis_upcast = native_eval("AxisType.UPCAST");
  axis_unroll = native_eval("AxisType.UNROLL");
  if (!axis_upcast || !axis_unroll) return -1;
  axis_group_reduce = native_eval("AxisType.GROUP_REDUCE");
  axis_local = native_eval("AxisType.LOCAL");
  axis_reduce = native_eval("AxisType.REDUCE");
  if (!axis_group_reduce || !axis_local || !axis_reduce) return -1;
  if (native_register("pm_pre_expander", pm_from_defs(pm_pre_expander_defs, N(pm_pre_expander_defs))) < 0) return -1;
  if (native_register("pm_group_for_reduce", pm_from_defs(pm_group_for_reduce_defs, N(pm_group_for_reduce_defs))) < 0) return -1;
  return native_register("expander", pm_from_defs(expander_defs, N(expander_defs)));
}
