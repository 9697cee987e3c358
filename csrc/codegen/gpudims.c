/* tinygrad/codegen/gpudims.py: replace the GLOBAL/THREAD and LOCAL/WARP/GROUP_REDUCE ranges of a kernel
 * with SPECIAL index uops (gidx*, lidx*, idx*), fitting the dims into the renderer's global_max/local_max
 * by merging neighbours or splitting one dim across several hardware dims.
 * Every Python object made here goes to the rule pool (borrowed), so nothing is released by hand. */
#include <math.h>
#include "../uop/native.h"

#define KEEPO(o) pool_keep((PyObject *)(o))

/* ---- dims as plain integers ---- */

typedef struct { int n; long long v[8]; } Dims;

/* dims as C integers; 0 when some dim is symbolic (or too many), -1 on error */
static int dims_from_tuple(PyObject *t, Dims *d) {
  Py_ssize_t n = PyTuple_GET_SIZE(t);
  if (n > 8) return 0;
  d->n = (int)n;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *x = PyTuple_GET_ITEM(t, i);
    if (!PyLong_Check(x) || PyBool_Check(x)) return 0;
    int overflow = 0;
    d->v[i] = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (overflow || (d->v[i] == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
  }
  return 1;
}

static PyObject *dims_to_tuple(const Dims *d) {
  PyObject *t = KEEPO(PyTuple_New(d->n));
  for (int i = 0; t && i < d->n; i++) {
    PyObject *x = PyLong_FromLongLong(d->v[i]);
    if (!x) return NULL;
    PyTuple_SET_ITEM(t, i, x);
  }
  return t;
}

static bool dims_equal(const Dims *a, const Dims *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++) if (a->v[i] != b->v[i]) return false;
  return true;
}

/* max sizes as C integers (tinygrad's are plain ints); -1 on error */
static int maxes_from_tuple(PyObject *t, Dims *m) {
  PyObject *seq = KEEPO(PySequence_Tuple(t));
  if (!seq) return -1;
  if (dims_from_tuple(seq, m) != 1) { PyErr_SetString(PyExc_TypeError, "max sizes must be ints"); return -1; }
  return 0;
}

/* some dim (paired with a max size) is over its max */
static bool any_over(const Dims *d, const Dims *m) {
  for (int i = 0; i < d->n && i < m->n; i++) if (d->v[i] > m->v[i]) return true;
  return false;
}

/* _group_dims: merge neighbouring dims (first fitting pair) until the dims fit; false when they cannot */
static bool group_dims(Dims *d, const Dims *m) {
  while (d->n > m->n || any_over(d, m)) {
    int i = 0;
    for (; i < m->n; i++)
      if (i < d->n - 1 && d->v[i] * d->v[i + 1] <= m->v[i]) break;
    if (i == m->n) return false;
    d->v[i] *= d->v[i + 1];
    for (int j = i + 1; j < d->n - 1; j++) d->v[j] = d->v[j + 1];
    d->n--;
  }
  return true;
}

/* the smallest divisor of x in [2, ceil(sqrt(x))], or 1 */
static long long small_divisor(long long x) {
  long long hi = (long long)ceil(sqrt((double)x));
  for (long long k = 2; k <= hi; k++) if (x % k == 0) return k;
  return 1;
}

/* _split_dims: move factors of an oversized dim into the next one (cyclically) until all fit */
static int split_dims(Dims *d, const Dims *m) {
  if (!any_over(d, m)) return 0;
  Dims in = *d;
  while (d->n < 3) d->v[d->n++] = 1;
  for (int i = 0; i < d->n; i++) {
    if (i >= m->n) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); return -1; }
    while (d->v[i] > m->v[i]) {
      long long div = small_divisor(d->v[i]);
      if (div == 1) {
        PyErr_Format(PyExc_RuntimeError, "cannot limit dim dims=%R, max_sizes=%R", dims_to_tuple(&in), dims_to_tuple(m));
        return -1;
      }
      int next = (i + 1) % d->n;
      d->v[i] /= div;
      d->v[next] *= div;
    }
  }
  if (d->n >= 3 && d->v[2] == 1) d->n = 2;
  return 0;
}

/* get_contraction for integer shapes: new dim i holds old dims [starts[i], ends[i]); the last runs to the end */
static bool contraction(const Dims *old, const Dims *new, int *starts, int *ends) {
  long long acc_new = 1;
  int prev = 0;
  for (int i = 0; i < new->n; i++) {
    acc_new *= new->v[i];
    int split = -1;
    if (acc_new == 1) split = 0;
    else {
      long long acc_old = 1;
      for (int j = 0; j < old->n && split < 0; j++) { acc_old *= old->v[j]; if (acc_old == acc_new) split = j + 1; }
      if (split < 0) return false;
    }
    starts[i] = prev;
    ends[i] = split;
    prev = split;
  }
  if (new->n > 0) ends[new->n - 1] = old->n;
  return true;
}

/* ---- the SPECIAL index uops ---- */

/* sint_to_uop: an int becomes an index const, a UOp is cast to index */
static UOp *sint_to_index(PyObject *s) {
  if (UOp_Check(s)) return u_cast((UOp *)s, DTYPE(INDEX));
  return u_const(DTYPE(INDEX), s);
}

static UOp *special(const char *prefix, int i, PyObject *size) {
  PyObject *name = KEEPO(PyUnicode_FromFormat("%s%d", prefix, i));
  UOp *sz = sint_to_index(size);
  if (!name || !sz) return NULL;
  return u_new(OP_SPECIAL, DTYPE(INDEX), &sz, 1, name);
}

static UOp *mul_add(UOp *a, long long k, UOp *b) { return u_add(u_binop(OP_MUL, a, n_int(k)), b); }

/* map the hardware idxs back to the original dims (tinygrad's branches after making raw_idxs) */
static int unfold_idxs(PyObject *out, UOp **raw, const Dims *lim, const Dims *dims) {
  UOp *r[3] = {NULL, NULL, NULL};
  int n = 0;
  if (lim->n < dims->n) {
    int starts[8], ends[8];
    if (!contraction(dims, lim, starts, ends)) {
      PyErr_SetString(PyExc_RuntimeError, "get_contraction should not be None");
      return -1;
    }
    for (int g = 0; g < lim->n; g++) {
      UOp *idx = raw[g];
      for (int c = starts[g]; c < ends[g] - 1; c++) {
        if (PyList_Append(out, (PyObject *)u_modi(idx, dims->v[c])) < 0) return -1;
        idx = u_idivi(idx, dims->v[c]);
      }
      if (!idx || PyList_Append(out, (PyObject *)idx) < 0) return -1;
    }
    return 0;
  }
  if (lim->n > dims->n) {
    if (dims->n == 1) {
      UOp *ab = mul_add(raw[0], lim->v[1], raw[1]);
      r[n++] = lim->n == 2 ? ab : mul_add(ab, lim->v[2], raw[2]);
    } else { r[n++] = mul_add(raw[0], lim->v[1], raw[1]); r[n++] = raw[2]; }
  } else if (dims->n == 2) {
    UOp *flat = mul_add(raw[0], lim->v[1], raw[1]);
    r[n++] = u_idivi(flat, dims->v[1]);
    r[n++] = u_modi(flat, dims->v[1]);
  } else {
    UOp *flat = u_add(u_add(u_binop(OP_MUL, raw[0], n_int(lim->v[1] * lim->v[2])), u_muli(raw[1], lim->v[2])), raw[2]);
    r[n++] = u_idivi(flat, dims->v[2] * dims->v[1]);
    r[n++] = u_modi(u_idivi(flat, dims->v[2]), dims->v[1]);
    r[n++] = u_modi(flat, dims->v[2]);
  }
  for (int i = 0; i < n; i++) if (!r[i] || PyList_Append(out, (PyObject *)r[i]) < 0) return -1;
  return 0;
}

/* the fitted dims (a tuple) for dims under max_sizes (None: no limit); symbolic dims pass unchanged */
static PyObject *limit_dims(PyObject *dims, PyObject *max_sizes, Dims *d, Dims *lim, int *ints) {
  if ((*ints = dims_from_tuple(dims, d)) < 0) return NULL;
  if (max_sizes == Py_None) return dims;
  Dims m;
  if (maxes_from_tuple(max_sizes, &m) < 0) return NULL;
  if (!*ints) {
    /* tinygrad only checks the dims fit; a symbolic dim that does not fit cannot be split */
    Py_ssize_t n = PyTuple_GET_SIZE(dims);
    if (n > m.n) { PyErr_Format(PyExc_RuntimeError, "cannot limit dim dims=%R, max_sizes=%R", dims, max_sizes); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
      PyObject *mi = n_int(m.v[i]);
      PyObject *le = KEEPO(PyObject_RichCompare(PyTuple_GET_ITEM(dims, i), mi, Py_LE));
      int ok = le ? PyObject_IsTrue(le) : -1;
      if (ok < 0) return NULL;
      if (!ok) { PyErr_Format(PyExc_RuntimeError, "cannot limit symbolic dim dims=%R", dims); return NULL; }
    }
    return dims;
  }
  *lim = *d;
  if (!group_dims(lim, &m) || lim->n == 0) *lim = *d;   /* an empty grouping reads as failed, as in tinygrad */
  if (lim->n > m.n) { PyErr_Format(PyExc_RuntimeError, "cannot limit dim dims=%R, max_sizes=%R", dims, max_sizes); return NULL; }
  if (dims_equal(lim, d) && split_dims(lim, &m) < 0) return NULL;
  return dims_to_tuple(lim);
}

/* get_grouped_dims(prefix, dims, max_sizes): appends the index uops for dims (in order) to out */
static int grouped_dims_into(PyObject *out, const char *prefix, PyObject *dims, PyObject *max_sizes) {
  Dims d, lim;
  int ints;
  PyObject *limited = limit_dims(dims, max_sizes, &d, &lim, &ints);
  if (!limited) return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(limited);
  UOp *raw[8];
  for (Py_ssize_t i = 0; i < n; i++)
    if (!(raw[i] = special(prefix, (int)i, PyTuple_GET_ITEM(limited, i)))) return -1;
  if (ints && max_sizes != Py_None && !dims_equal(&lim, &d)) return unfold_idxs(out, raw, &lim, &d);
  for (Py_ssize_t i = 0; i < n; i++) if (PyList_Append(out, (PyObject *)raw[i]) < 0) return -1;
  return 0;
}

static PyObject *reversed_tuple(PyObject *t) {
  Py_ssize_t n = PyTuple_GET_SIZE(t);
  PyObject *r = KEEPO(PyTuple_New(n));
  for (Py_ssize_t i = 0; r && i < n; i++) {
    PyObject *x = PyTuple_GET_ITEM(t, n - 1 - i);
    Py_INCREF(x);
    PyTuple_SET_ITEM(r, i, x);
  }
  return r;
}

/* get_grouped_dims with reverse: group the reversed dims, then reverse the idxs back. New list, pooled. */
static PyObject *get_grouped_dims(const char *prefix, PyObject *dims, PyObject *max_sizes, bool reverse) {
  PyObject *out = KEEPO(PyList_New(0));
  PyObject *t = KEEPO(PySequence_Tuple(dims));
  if (!out || !t) return NULL;
  if (reverse && !(t = reversed_tuple(t))) return NULL;
  if (grouped_dims_into(out, prefix, t, max_sizes) < 0) return NULL;
  if (reverse && PyList_Reverse(out) < 0) return NULL;
  return out;
}

/* ---- add_gpudims ---- */

/* UOp.buf_target: the buffer a load/store/index reaches through its first sources */
static UOp *buf_target(UOp *u) {
  for (;;) {
    switch (u->op) {
      case OP_DEFINE_GLOBAL: case OP_DEFINE_LOCAL: case OP_DEFINE_REG: return u;
      case OP_AFTER: case OP_INDEX: case OP_STORE: case OP_LOAD: case OP_VECTORIZE: u = u->src[0]; break;
      default: PyErr_Format(PyExc_RuntimeError, "buf_target called on non load/index/store %s", op_names[u->op]); return NULL;
    }
  }
}

static PyObject *axis_key(UOp *rng) {   /* r.arg[0:-1] */
  return KEEPO(PySequence_GetSlice(rng->arg, 0, PySequence_Size(rng->arg) - 1));
}

static int axis_type_of(UOp *rng) {     /* r.arg[-1] as an AxisTypeId */
  PyObject *last = KEEPO(PySequence_GetItem(rng->arg, PySequence_Size(rng->arg) - 1));
  for (int a = 1; last && a < AXIS_COUNT; a++) if (last == axistype_members[a]) return a;
  return last ? AXIS_NONE : -1;
}

static bool is_global_axis(int a) { return a == AXIS_GLOBAL || a == AXIS_THREAD; }
static bool is_local_axis(int a) { return a == AXIS_WARP || a == AXIS_LOCAL || a == AXIS_GROUP_REDUCE; }

/* sorted keys of the ranges whose axis type passes keep */
static PyObject *sorted_dims(PyObject *all_ranges, bool (*keep)(int)) {
  PyObject *out = KEEPO(PyList_New(0)), *k, *v;
  Py_ssize_t pos = 0;
  while (out && PyDict_Next(all_ranges, &pos, &k, &v)) {
    int a = axis_type_of((UOp *)v);
    if (a < 0) return NULL;
    if (keep(a) && PyList_Append(out, k) < 0) return NULL;
  }
  return out && PyList_Sort(out) == 0 ? out : NULL;
}

/* the ssimplify'd sizes of the ranges with these keys, as a tuple */
static PyObject *shape_of(PyObject *all_ranges, PyObject *keys) {
  Py_ssize_t n = PyList_GET_SIZE(keys);
  PyObject *t = KEEPO(PyTuple_New(n));
  for (Py_ssize_t i = 0; t && i < n; i++) {
    UOp *r = (UOp *)PyDict_GetItem(all_ranges, PyList_GET_ITEM(keys, i));
    PyObject *s = uop_ssimplify(r->src[0]);
    if (!s) return NULL;
    PyTuple_SET_ITEM(t, i, s);
  }
  return t;
}

/* name: a string literal (getattr_literal) */
static PyObject *ctx_attr(PyObject *ctx, const char *name) { return KEEPO(getattr_literal(ctx, name)); }

/* the index uops for global dims then local dims (or idx* only when the kernel does not use locals) */
static PyObject *kernel_idxs(PyObject *ctx, UOp *s, PyObject *all_ranges, PyObject *gdims, PyObject *ldims) {
  PyObject *dul = KEEPO(getattr_literal(s->arg, "dont_use_locals"));
  int no_locals = dul ? PyObject_IsTrue(dul) : -1;
  if (no_locals < 0) return NULL;
  PyObject *gshape = shape_of(all_ranges, gdims), *gmax = ctx_attr(ctx, "global_max");
  if (!gshape || !gmax) return NULL;
  if (no_locals) {
    if (PyList_GET_SIZE(ldims)) { PyErr_SetString(PyExc_AssertionError, "can't use locals if there's no local dims"); return NULL; }
    return get_grouped_dims("idx", gshape, gmax, true);
  }
  PyObject *lshape = shape_of(all_ranges, ldims), *lmax = ctx_attr(ctx, "local_max");
  PyObject *g = get_grouped_dims("gidx", gshape, gmax, true);
  PyObject *l = lshape && lmax && g ? get_grouped_dims("lidx", lshape, lmax, false) : NULL;
  return l ? KEEPO(PySequence_Concat(g, l)) : NULL;
}

/* a global store that does not index with every local range only stores where those ranges are 0 */
static int mask_missing_locals(PyObject *subs, UOp *store, PyObject *all_ranges, PyObject *ldims) {
  UOp *bt = buf_target(store);
  if (!bt) return -1;
  if (!bt->dtype->is_ptr || bt->dtype->addrspace != ADDRSPACE_GLOBAL) return 0;
  UOp *idx = store->src[0];
  PyObject *ranges = KEEPO(getattr_literal((PyObject *)idx, "ranges"));
  if (!ranges) return -1;
  UOp *mask = NULL;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ldims); i++) {
    PyObject *r = PyDict_GetItem(all_ranges, PyList_GET_ITEM(ldims, i));
    int in = PySequence_Contains(ranges, r);
    if (in < 0) return -1;
    if (in) continue;
    UOp *is0 = KEEP(PyObject_CallMethod(r, "eq", "i", 0));
    mask = mask ? u_and(mask, is0) : is0;
    if (!mask) return -1;
  }
  if (!mask) return 0;
  if (idx->nsrc != 2) { PyErr_SetString(PyExc_AssertionError, "index has 2 sources"); return -1; }
  UOp *wide = u_broadcast(mask, idx->src[1]->dtype->count);
  UOp *valid = wide ? KEEP(PyObject_CallMethod((PyObject *)wide, "where", "OO", idx->src[1], Invalid)) : NULL;
  UOp *src[2] = {idx->src[0], valid};
  UOp *nidx = valid ? u_replace_src(idx, src, 2) : NULL;
  return nidx ? PyDict_SetItem(subs, (PyObject *)idx, (PyObject *)nidx) : -1;
}

/* a non-reduce GLOBAL/LOCAL-kind range becomes its index uop */
static int replace_range(PyObject *subs, UOp *r, PyObject *all_dims, PyObject *idxs) {
  Py_ssize_t ii = PySequence_Index(all_dims, axis_key(r));
  if (ii < 0) { if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1; PyErr_Clear(); return 0; }
  PyObject *a1 = KEEPO(PySequence_GetItem(r->arg, 1));
  if (!a1) return -1;
  if (a1 == axistype_members[AXIS_REDUCE]) return 0;
  PyObject *to = PySequence_GetItem(idxs, ii);
  if (!to) return -1;
  int rc = PyDict_SetItem(subs, (PyObject *)r, to);
  Py_DECREF(to);
  return rc;
}

/* add_gpudims: the kernel sink with its global/local ranges replaced by SPECIALs */
RULE(add_gpudims, s) {
  if (s->arg == Py_None) return NULL;
  PyObject *topo = KEEPO(uop_toposort_list(s, NULL)), *all_ranges = KEEPO(PyDict_New());
  if (!topo || !all_ranges) return NULL;
  Py_ssize_t n = PyList_GET_SIZE(topo);
  for (Py_ssize_t i = 0; i < n; i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(topo, i);
    if (x->op == OP_SPECIAL) return NULL;
    if (x->op == OP_RANGE && PyDict_SetItem(all_ranges, axis_key(x), (PyObject *)x) < 0) return NULL;
  }
  PyObject *gdims = sorted_dims(all_ranges, is_global_axis), *ldims = sorted_dims(all_ranges, is_local_axis);
  if (!gdims || !ldims) return NULL;
  if (!PyList_GET_SIZE(gdims) && !PyList_GET_SIZE(ldims)) return NULL;
  PyObject *idxs = kernel_idxs(ctx, s, all_ranges, gdims, ldims);
  PyObject *all_dims = idxs ? KEEPO(PySequence_Concat(gdims, ldims)) : NULL, *subs = KEEPO(PyDict_New());
  if (!all_dims || !subs) return NULL;
  for (Py_ssize_t i = 0; i < n; i++) {
    UOp *r = (UOp *)PyList_GET_ITEM(topo, i);
    if (r->op == OP_STORE && mask_missing_locals(subs, r, all_ranges, ldims) < 0) return NULL;
    if (r->op == OP_RANGE && replace_range(subs, r, all_dims, idxs) < 0) return NULL;
  }
  return u_substitute(s, subs);
}

static const RuleDef pm_add_gpudims_defs[] = {
  /* the kernel's SINK gets its SPECIAL indexes (this pass runs last) */
  R("UPat(Ops.SINK, name='s')", add_gpudims),
};

/* tinyc._C.get_grouped_dims(prefix, dims, max_sizes, reverse=False) */
static PyObject *py_get_grouped_dims(PyObject *self, PyObject *args, PyObject *kw) {
  UNUSED(self);
  static char *names[] = {"prefix", "dims", "max_sizes", "reverse", NULL};
  const char *prefix;
  PyObject *dims, *max_sizes;
  int reverse = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "sOO|p", names, &prefix, &dims, &max_sizes, &reverse)) return NULL;
  Py_ssize_t mark = pool_mark();
  PyObject *out = get_grouped_dims(prefix, dims, max_sizes, reverse);
  Py_XINCREF(out);
  pool_release(mark);
  return out;
}

static PyMethodDef get_grouped_dims_def = {
  "get_grouped_dims", (PyCFunction)(void (*)(void))py_get_grouped_dims, METH_VARARGS | METH_KEYWORDS,
  "get_grouped_dims(prefix, dims, max_sizes, reverse=False): SPECIAL index uops for dims fitted to max_sizes"};

int tinyc_init_gpudims(PyObject *m) {
  PyObject *fn = PyCFunction_NewEx(&get_grouped_dims_def, NULL, NULL);
  if (!fn || PyModule_AddObject(m, "get_grouped_dims", fn) < 0) { Py_XDECREF(fn); return -1; }
  return native_register("pm_add_gpudims", pm_from_defs(pm_add_gpudims_defs, N(pm_add_gpudims_defs)));
}
