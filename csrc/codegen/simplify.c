/* tinygrad/codegen/simplify.py as native rules: pm_flatten_range, pm_split_ranges, pm_simplify_ranges,
 * pm_split_store, and the reduce simplifications pm_reduce_unparented, pm_reduce_collapse,
 * pm_reduce_load_collapse, pm_reduce_simplify and pm_load_collapse. Where tinygrad calls UOp methods
 * (toposort with a gate, ranges, replace, reduce, cast, ...) the rules call tinyc's same-named methods. */
#include "../uop/native.h"

/* ---- small Python-level helpers (results pooled, NULL propagates) ---- */

static PyObject *keep(PyObject *o) { return pool_keep(o); }

/* u.replace(src=src, arg=arg) */
static UOp *replace_src_arg(UOp *u, PyObject *src, PyObject *arg) {
  if (!u || !src || !arg) return NULL;
  PyObject *meth = getattr_literal((PyObject *)u, "replace");
  if (!meth) return NULL;
  PyObject *kw = Py_BuildValue("{sOsO}", "src", src, "arg", arg);
  PyObject *empty = PyTuple_New(0);
  PyObject *res = (kw && empty) ? PyObject_Call(meth, empty, kw) : NULL;
  Py_DECREF(meth); Py_XDECREF(kw); Py_XDECREF(empty);
  return KEEP(res);
}

/* axis[0:-1] + (extra, axis[-1]) for a RANGE's arg */
static PyObject *split_axis_arg(PyObject *arg, long long extra) {
  Py_ssize_t n = PyTuple_GET_SIZE(arg);
  PyObject *head = PyTuple_GetSlice(arg, 0, n - 1);
  PyObject *tail = Py_BuildValue("(LO)", extra, PyTuple_GET_ITEM(arg, n - 1));
  PyObject *res = (head && tail) ? PySequence_Concat(head, tail) : NULL;
  Py_XDECREF(head); Py_XDECREF(tail);
  return keep(res);
}

/* ---- pm_flatten_range ---- */

/* the ranges a REDUCE/STORE/END ends become every RANGE in their graph, in toposort order */
RULE(flatten_range, r) {
  int off = uop_range_start(r->op);
  if (off < 0 || (int)r->nsrc <= off) return NULL;
  UOp *sink = u_new(OP_SINK, scalar_dtypes[DT_VOID], r->src + off, (int)r->nsrc - off, Py_None);
  if (!sink) return NULL;
  PyObject *topo = keep(uop_toposort_list(sink, NULL));
  if (!topo) return NULL;
  Py_ssize_t n = PyList_GET_SIZE(topo), k = off;
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)(off + n + 1));
  if (!src) { PyErr_NoMemory(); return NULL; }
  for (int i = 0; i < off; i++) src[i] = r->src[i];
  for (Py_ssize_t i = 0; i < n; i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(topo, i);
    if (x->op == OP_RANGE) src[k++] = x;
  }
  UOp *res = u_replace_src(r, src, (int)k);
  PyMem_Free(src);
  return res;
}

static const RuleDef pm_flatten_range_defs[] = {
  R("UPat((Ops.REDUCE, Ops.STORE, Ops.END), name='r')", flatten_range),
};

/* ---- pm_split_ranges (ctx: dict range -> modulus or None) ---- */

/* remember a constant-sized range taken modulo a constant that divides its size */
RULE(mark_range_mod, r, c) {
  int has = PyDict_Contains(ctx, (PyObject *)r);
  if (has != 0) return NULL;
  UOp *size = r->src[0];
  if (size->op != OP_CONST) return NULL;
  PyObject *q = keep(uop_divides(size, c->arg));
  if (!q || q == Py_None) return NULL;
  PyDict_SetItem(ctx, (PyObject *)r, (PyObject *)c);   /* an error here is seen by the engine */
  return NULL;
}

/* ranges that index an image are never split */
RULE(dont_sub_ranges_for_image, x) {
  if (x->nsrc < 1 || x->src[0]->nsrc < 1) return NULL;
  if (!dtype_is_image(x->src[0]->src[0]->dtype)) return NULL;
  PyObject *rngs = keep(getattr_literal((PyObject *)x->src[0], "ranges"));
  if (!rngs) return NULL;
  Py_ssize_t pos = 0; PyObject *k, *v;
  while (PyDict_Next(rngs, &pos, &k, &v)) if (PyDict_SetItem(ctx, k, Py_None) < 0) return NULL;
  return NULL;
}

/* at the sink, split each marked range r (size s, modulus v) into r_outer(s//v)*v + r_inner(v) */
RULE(do_substitute, x) {
  PyObject *subs = keep(PyDict_New());
  if (!subs) return NULL;
  Py_ssize_t pos = 0; PyObject *ko, *vo;
  while (PyDict_Next(ctx, &pos, &ko, &vo)) {
    if (vo == Py_None) continue;
    UOp *k = (UOp *)ko, *v = (UOp *)vo;
    UOp *outer_size = u_idiv(k->src[0], v);
    if (!outer_size) return NULL;
    PyObject *outer_src = keep(PyTuple_Pack(1, (PyObject *)outer_size));
    PyObject *inner_src = keep(PyTuple_Pack(1, (PyObject *)v));
    UOp *outer = replace_src_arg(k, outer_src, split_axis_arg(k->arg, 0));
    UOp *inner = replace_src_arg(k, inner_src, split_axis_arg(k->arg, 1));
    UOp *val = u_add(u_mul(outer, v), inner);
    if (!val || PyDict_SetItem(subs, ko, (PyObject *)val) < 0) return NULL;
  }
  if (PyDict_GET_SIZE(subs) == 0) return NULL;
  UOp *ret = u_simplify(u_substitute(x, subs));
  if (ret) PyDict_Clear(ctx);
  return ret;
}

static const RuleDef pm_split_ranges_defs[] = {
  R("UPat(Ops.RANGE, name='r') % UPat.cvar('c')", mark_range_mod),
  R("UPat(Ops.STORE, name='x')", dont_sub_ranges_for_image),
  R("UPat(Ops.SINK, name='x')", do_substitute),
};

/* ---- pm_simplify_ranges ---- */

static PatternMatcher *merge_check_pm;   /* _substitute+symbolic+pm_flatten_range */

/* the number of IDIV and MOD nodes in x's graph, -1 on error */
static Py_ssize_t count_divmod(UOp *x) {
  PyObject *topo = keep(uop_toposort_list(x, NULL));
  if (!topo) return -1;
  Py_ssize_t n = 0;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topo); i++) {
    Op op = ((UOp *)PyList_GET_ITEM(topo, i))->op;
    if (op == OP_IDIV || op == OP_MOD) n++;
  }
  return n;
}

/* the ranges u ends (tinygrad's ended_ranges), as a new list */
static int append_ended_ranges(UOp *u, PyObject *out) {
  int off = uop_range_start(u->op);
  if (off >= 0) {
    for (int i = off; i < (int)u->nsrc; i++) if (PyList_Append(out, (PyObject *)u->src[i]) < 0) return -1;
  } else if (u->op == OP_AFTER) {
    for (int i = 1; i < (int)u->nsrc; i++) if (append_ended_ranges(u->src[i], out) < 0) return -1;
  }
  return 0;
}

/* whether r0 and r1 are in the same set of REDUCEs (each reduce's ranges hold both or neither) */
static int same_reduces(PyObject *reduce_ranges, UOp *r0, UOp *r1) {
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(reduce_ranges); i++) {
    PyObject *rngs = PyList_GET_ITEM(reduce_ranges, i);
    int a = PySequence_Contains(rngs, (PyObject *)r0), b = PySequence_Contains(rngs, (PyObject *)r1);
    if (a < 0 || b < 0) return -1;
    if (a != b) return 0;
  }
  return 1;
}

/* try merging r0 and r1 into one range of size s0*s1; keep it when it does not add divisions */
static UOp *try_merge(UOp *u, UOp *r0, UOp *r1) {
  UOp *s0 = u_src(r0, 0), *s1 = u_src(r1, 0);
  UOp *prod = u_mul(s0, s1);
  if (!prod) return NULL;
  UOp *new_range = u_replace_src(r0, &prod, 1);
  PyObject *subs = keep(PyDict_New());
  if (!new_range || !subs) return NULL;
  if (PyDict_SetItem(subs, (PyObject *)r0, (PyObject *)u_idiv(new_range, s1)) < 0) return NULL;
  if (PyDict_SetItem(subs, (PyObject *)r1, (PyObject *)u_mod(new_range, s1)) < 0) return NULL;
  UOp *nidx = KEEP(graph_rewrite(u, merge_check_pm, subs, false, NULL));
  if (!nidx) return NULL;
  Py_ssize_t a = count_divmod(nidx), b = count_divmod(u);
  if (a < 0 || b < 0) return NULL;
  return a <= b ? nidx : u;
}

static PyObject *reduce_ranges_of(UOp *u) {
  PyObject *topo = keep(uop_toposort_list(u, NULL));
  PyObject *out = keep(PyList_New(0));
  if (!topo || !out) return NULL;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topo); i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(topo, i);
    if (x->op != OP_REDUCE) continue;
    PyObject *r = keep(getattr_literal((PyObject *)x, "ranges"));
    if (!r || PyList_Append(out, r) < 0) return NULL;
  }
  return out;
}

/* merge pairs of same-type ranges an END (adjacent pairs) or a REDUCE (all ordered pairs) ends */
RULE(simplify_merge_adjacent, u) {
  PyObject *reduce_ranges = reduce_ranges_of(u);
  PyObject *ended = keep(PyList_New(0));
  if (!reduce_ranges || !ended || append_ended_ranges(u, ended) < 0) return NULL;
  Py_ssize_t n = PyList_GET_SIZE(ended);
  bool adjacent = u->op == OP_END;
  for (Py_ssize_t i = 0; i < n; i++) {
    for (Py_ssize_t j = adjacent ? i + 1 : 0; j < n && (!adjacent || j == i + 1); j++) {
      if (i == j) continue;
      UOp *r0 = (UOp *)PyList_GET_ITEM(ended, i), *r1 = (UOp *)PyList_GET_ITEM(ended, j);
      /* r0.arg[-1] == r1.arg[-1]: what a node ended here carries need not be a RANGE's tuple, so Python's indexing */
      PyObject *t0 = keep(PySequence_GetItem(r0->arg, -1)), *t1 = t0 ? keep(PySequence_GetItem(r1->arg, -1)) : NULL;
      int eq = t1 ? PyObject_RichCompareBool(t0, t1, Py_EQ) : -1;
      if (eq < 0) return NULL;
      if (!eq) continue;
      int same = same_reduces(reduce_ranges, r0, r1);
      if (same < 0) return NULL;
      if (same && !(u = try_merge(u, r0, r1))) return NULL;
    }
  }
  return u;
}

static const RuleDef pm_simplify_ranges_defs[] = {
  R("UPat((Ops.END, Ops.REDUCE), name='u')", simplify_merge_adjacent),
};

/* ---- pm_split_store (ctx: the device string) ---- */

/* the constants r is compared below (r < c) among the consumers of r in store's graph: tinygrad reads them from
 * store.get_consumer_map()[r], whose consumers come in toposort order, so one walk finds the same ones in the same order
 * without building the map; KeyError(r), as that lookup raises, when r is not in the graph */
static PyObject *range_cuts(UOp *store, UOp *r) {
  PyObject *topo = keep(uop_toposort_list(store, NULL)), *cuts = topo ? keep(PyList_New(0)) : NULL;
  if (!cuts) return NULL;
  bool found = false;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topo); i++) {
    UOp *u = (UOp *)PyList_GET_ITEM(topo, i);
    found |= u == r;
    if (u->op == OP_CMPLT && u->nsrc >= 2 && u->src[0] == r && u->src[1]->op == OP_CONST && PyList_Append(cuts, u->src[1]->arg) < 0)
      return NULL;
  }
  if (!found) { PyErr_SetObject(PyExc_KeyError, (PyObject *)r); return NULL; }
  return cuts;
}

/* sorted(dedup([0] + cuts + [end])): the bounds of the pieces */
static PyObject *piece_bounds(PyObject *cuts, PyObject *end) {
  PyObject *seen = keep(PyDict_New());
  if (!seen || PyDict_SetItem(seen, n_int(0), Py_None) < 0) return NULL;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(cuts); i++) if (PyDict_SetItem(seen, PyList_GET_ITEM(cuts, i), Py_None) < 0) return NULL;
  if (PyDict_SetItem(seen, end, Py_None) < 0) return NULL;
  PyObject *bounds = keep(PySequence_List(seen));
  return (bounds && PyList_Sort(bounds) == 0) ? bounds : NULL;
}

/* piece i of the cut: store with r -> new_r+start, ended by new_r = UOp.range(end-start, *axis_i) */
static UOp *store_piece(UOp *store, UOp *r, Py_ssize_t i, PyObject *start, PyObject *end) {
  PyObject *axis = split_axis_arg(r->arg, i), *size = n_sub(end, start);
  PyObject *range_fn = keep(PyObject_GetAttrString((PyObject *)Py_TYPE(r), "range"));
  PyObject *args = (axis && size) ? keep(PySequence_Concat(keep(PyTuple_Pack(1, size)), axis)) : NULL;
  UOp *new_r = (range_fn && args) ? KEEP(PyObject_CallObject(range_fn, args)) : NULL;
  PyObject *subs = keep(PyDict_New());
  UOp *moved = u_binop(OP_ADD, new_r, start);
  if (!subs || !moved || PyDict_SetItem(subs, (PyObject *)r, (PyObject *)moved) < 0) return NULL;
  UOp *src[2] = {u_substitute(store, subs), new_r};
  return src[0] ? u_new(OP_END, scalar_dtypes[DT_VOID], src, 2, Py_None) : NULL;
}

/* on CPU, cut a stored range at each constant it is compared below, one END per piece (grouped) */
RULE(cut_store_range, st, r) {
  UOp *store = st;
  if (r->src[0]->op != OP_CONST) return NULL;
  if (!PyUnicode_Check(ctx) || PyUnicode_CompareWithASCIIString(ctx, "CPU") != 0) return NULL;
  PyObject *cuts = range_cuts(store, r);
  if (!cuts || PyList_GET_SIZE(cuts) == 0) return NULL;
  PyObject *bounds = piece_bounds(cuts, r->src[0]->arg);
  if (!bounds) return NULL;
  Py_ssize_t n = PyList_GET_SIZE(bounds) - 1;
  UOp **ends = PyMem_Malloc(sizeof(UOp *) * (size_t)n);
  if (!ends) { PyErr_NoMemory(); return NULL; }
  UOp *ret = NULL;
  for (Py_ssize_t i = 0; i < n; i++) {
    if (!(ends[i] = store_piece(store, r, i, PyList_GET_ITEM(bounds, i), PyList_GET_ITEM(bounds, i + 1)))) goto done;
  }
  ret = n == 1 ? ends[0] : u_new(OP_GROUP, scalar_dtypes[DT_VOID], ends, (int)n, Py_None);
done:
  PyMem_Free(ends);
  return ret;
}

static const RuleDef pm_split_store_defs[] = {
  R("UPat(Ops.END, src=(UPat(Ops.STORE, name='st'), UPat.var('r')))", cut_store_range),
};

/* ---- reduce simplification: pm_reduce_unparented, pm_reduce_collapse, pm_reduce_load_collapse,
 *      pm_reduce_simplify, pm_load_collapse ---- */

static PatternMatcher *reduce_collapse_pm, *reduce_load_collapse_pm;
static PyObject *range_gate_maker;   /* lambda r: (lambda x: r in x.ranges) */
static PyObject *OPS_ADD, *OPS_MUL, *OPS_MAX;   /* the Ops members a REDUCE's arg is compared with */

/* the math mixin's methods (maximum, minimum) on UOps, by name, pooled; NULL propagates */
static UOp *call1(UOp *o, const char *name, PyObject *a) {
  return (o && a) ? KEEP(PyObject_CallMethodOneArg((PyObject *)o, keep(PyUnicode_FromString(name)), a)) : NULL;
}
static UOp *py_sub(UOp *a, UOp *b) { return (a && b) ? KEEP(PyNumber_Subtract((PyObject *)a, (PyObject *)b)) : NULL; }
static UOp *py_mul(UOp *a, UOp *b) { return (a && b) ? KEEP(PyNumber_Multiply((PyObject *)a, (PyObject *)b)) : NULL; }
static UOp *py_cmp(UOp *a, PyObject *b, int op) { return (a && b) ? KEEP(PyObject_RichCompare((PyObject *)a, b, op)) : NULL; }
static UOp *cast_to(UOp *a, UOp *like) { return like ? u_cast(a, like->dtype) : NULL; }
static UOp *where0(UOp *c, UOp *t) {   /* c.where(t, 0) */
  return (c && t) ? KEEP(PyObject_CallMethod((PyObject *)c, "where", "OO", (PyObject *)t, n_int(0))) : NULL;
}
/* x.reduce(*srcs, arg=Ops.ADD) */
static UOp *reduce_add(UOp *x, UOp *const *srcs, int n) {
  if (!x) return NULL;
  PyObject *args = keep(PyTuple_New(n)), *meth = keep(getattr_literal((PyObject *)x, "reduce"));
  PyObject *kw = keep(Py_BuildValue("{sO}", "arg", OPS_ADD));
  if (!args || !meth || !kw) return NULL;
  for (int i = 0; i < n; i++) { Py_INCREF(srcs[i]); PyTuple_SET_ITEM(args, i, (PyObject *)srcs[i]); }
  return KEEP(PyObject_Call(meth, args, kw));
}

static bool has_op_in_slice(UOp *u, Op op) {
  PyObject *topo = keep(uop_toposort_list(u, NULL));
  if (!topo) return false;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topo); i++) if (((UOp *)PyList_GET_ITEM(topo, i))->op == op) return true;
  return false;
}
static bool no_range(UOp *u) { return !has_op_in_slice(u, OP_RANGE); }
static bool no_load(UOp *u) { return !has_op_in_slice(u, OP_INDEX); }

/* drop the ranges of a REDUCE its source does not use: ADD multiplies by their sizes, MUL raises to them */
RULE(reduce_unparented, red) {
  PyObject *rop = red->arg;
  bool is_add = rop == OPS_ADD, is_mul = rop == OPS_MUL;
  if (!is_add && !is_mul && rop != OPS_MAX) return NULL;
  PyObject *used = keep(getattr_literal((PyObject *)red->src[0], "ranges"));
  if (!used) return NULL;
  UOp **parented = PyMem_Malloc(sizeof(UOp *) * red->nsrc), **unparented = PyMem_Malloc(sizeof(UOp *) * red->nsrc);
  int np = 0, nu = 0;
  UOp *ret = NULL;
  if (!parented || !unparented) { PyErr_NoMemory(); goto done; }
  parented[np++] = red->src[0];
  for (int i = 1; i < (int)red->nsrc; i++) {
    int in = PyDict_Contains(used, (PyObject *)red->src[i]);
    if (in < 0) goto done;
    if (in) parented[np++] = red->src[i]; else unparented[nu++] = red->src[i];
  }
  if (nu == 0) goto done;
  ret = (np > 1 || red->dtype != red->src[0]->dtype) ? u_replace_src(red, parented, np) : red->src[0];
  for (int i = 0; i < nu && ret && (is_add || is_mul); i++) {
    UOp *size = u_broadcast(u_cast(u_src(unparented[i], 0), dtype_scalar(ret->dtype)), ret->dtype->count);
    if (!size) { ret = NULL; break; }
    ret = KEEP(is_add ? PyNumber_Multiply((PyObject *)ret, (PyObject *)size) : PyNumber_Power((PyObject *)ret, (PyObject *)size, Py_None));
  }
done:
  PyMem_Free(parented); PyMem_Free(unparented);
  return ret;
}

/* x+y < c -> x < c-y when y and c are outside every range */
RULE(lift_add_lt, y, c, x) {
  if (!no_range(y) || !no_range(c)) return NULL;
  return py_cmp(x, (PyObject *)py_sub(cast_to(c, y), y), Py_LT);
}
/* x*y < c -> x < ceil(c/y) for a positive int y outside every range */
RULE(lift_mul_lt, y, c, x) {
  if (!no_range(y) || !no_range(c) || !dtype_is_int(y->dtype) || !N_TRUE(n_gti(vmin(y), 0))) return NULL;
  UOp *sum = KEEP(PyNumber_Add((PyObject *)c, (PyObject *)y));
  UOp *up = sum ? KEEP(PyNumber_Subtract((PyObject *)sum, n_int(1))) : NULL;
  return py_cmp(x, (PyObject *)KEEP(up ? PyNumber_FloorDivide((PyObject *)up, (PyObject *)y) : NULL), Py_LT);
}
/* sum over r of (r<cut ? 0 : val) -> clamp(size-cut) * val */
RULE(fold_range_below, cut, val, r) {
  if (!no_range(val)) return NULL;
  UOp *size = r->src[0];
  UOp *n = call1(call1(py_sub(size, cut), "maximum", n_int(0)), "minimum", (PyObject *)size);
  return py_mul(cast_to(n, val), val);
}
/* sum over r of (lower<=r<upper ? val : 0) -> clamp(min(upper,size)-max(lower,0)) * val */
RULE(fold_range_between, upper, lower, val, r) {
  if (!no_range(val)) return NULL;
  UOp *size = r->src[0];
  UOp *span = py_sub(call1(upper, "minimum", (PyObject *)size), call1(lower, "maximum", n_int(0)));
  UOp *n = call1(call1(span, "maximum", n_int(0)), "minimum", (PyObject *)size);
  return py_mul(cast_to(n, val), val);
}
/* sum over r of (r<cut ? val : 0) -> clamp(cut) * val */
RULE(fold_range_above, cut, val, r) {
  if (!no_range(val)) return NULL;
  UOp *n = call1(call1(cut, "maximum", n_int(0)), "minimum", (PyObject *)r->src[0]);
  return py_mul(cast_to(n, val), val);
}
/* a sum of x+y reduces each term */
RULE(split_reduce_add, r, x, y) {
  UOp *a = reduce_add(x, r->src + 1, (int)r->nsrc - 1), *b = reduce_add(y, r->src + 1, (int)r->nsrc - 1);
  return (a && b) ? KEEP(PyNumber_Add((PyObject *)a, (PyObject *)b)) : NULL;
}
/* sum of ((var & y) ? c : 0) -> sum of (y ? c : 0) times var */
RULE(lift_var_and, r, y, c, x) {
  return py_mul(reduce_add(where0(y, c), r->src + 1, (int)r->nsrc - 1), cast_to(x, c));
}
/* x * bool.cast() -> gate ? x : 0 */
RULE(mul_casted_bool, gate, x) { return where0(gate, x); }

/* x+y != c -> x != c-y when y and c are outside every range */
RULE(lift_add_ne, y, c, x) {
  if (!no_range(y) || !no_range(c)) return NULL;
  return py_cmp(x, (PyObject *)py_sub(cast_to(c, y), y), Py_NE);
}
/* sum over r of (idx != r ? 0 : expr) -> expr at r=idx, when idx is in bounds */
RULE(collapse_gated_index, expr, r, idx) {
  UOp *i = cast_to(idx, r);
  UOp *v = u_and(py_cmp(i, n_int(0), Py_GE), py_cmp(i, (PyObject *)r->src[0], Py_LT));
  PyObject *subs = keep(PyDict_New());
  UOp *valid = u_valid(i, v);
  if (!subs || !valid || PyDict_SetItem(subs, (PyObject *)r, (PyObject *)valid) < 0) return NULL;
  return where0(v, u_substitute(expr, subs));
}

/* the sources feeding the nodes of `included` from outside become DEFINE_VARs with their bounds */
static PyObject *outside_inputs(PyObject *included, PyObject *included_set) {
  PyObject *replaces = keep(PyDict_New());
  if (!replaces) return NULL;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(included); i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(included, i);
    for (int j = 0; j < (int)x->nsrc; j++) {
      UOp *s = x->src[j];
      int in = PyDict_Contains(included_set, (PyObject *)s), seen = PyDict_Contains(replaces, (PyObject *)s);
      if (in < 0 || seen < 0) return NULL;
      if (in || seen || s->op == OP_CONST || s->op == OP_VCONST || s->op == OP_DEFINE_GLOBAL || s->op == OP_DEFINE_LOCAL ||
          s->op == OP_DEFINE_VAR) continue;
      PyObject *arg = keep(Py_BuildValue("(NOO)", PyUnicode_FromFormat("in%zd", PyDict_GET_SIZE(replaces)), vmin(s), vmax(s)));
      UOp *var = arg ? u_new(OP_DEFINE_VAR, s->dtype, NULL, 0, arg) : NULL;
      if (!var || PyDict_SetItem(replaces, (PyObject *)s, (PyObject *)var) < 0) return NULL;
    }
  }
  return replaces;
}

/* remove the ranges of a sum by rewriting the part that depends on each with pm; NULL when a range survives */
static UOp *reduce_collapse_with(UOp *red, UOp *u, PatternMatcher *pm) {
  for (int k = 1; k < (int)red->nsrc; k++) {
    UOp *r = red->src[k];
    PyObject *gate = keep(PyObject_CallOneArg(range_gate_maker, (PyObject *)r));
    PyObject *included = gate ? keep(uop_toposort_list(u, gate)) : NULL;
    PyObject *included_set = included ? keep(PyDict_New()) : NULL;
    for (Py_ssize_t i = 0; included_set && i < PyList_GET_SIZE(included); i++)
      if (PyDict_SetItem(included_set, PyList_GET_ITEM(included, i), Py_None) < 0) return NULL;
    if (!included_set) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(included);
    for (Py_ssize_t i = 0; i < n; i++) {
      Op op = ((UOp *)PyList_GET_ITEM(included, i))->op;
      if (op == OP_STORE || op == OP_REDUCE) return NULL;
    }
    PyObject *replaces = outside_inputs(included, included_set);
    if (!replaces) return NULL;
    if (n) u = (UOp *)PyList_GET_ITEM(included, n - 1);   /* tinygrad's loop variable shadows u */
    UOp *fxn = reduce_add(u_substitute(u, replaces), &r, 1);
    UOp *sink = fxn ? KEEP(graph_rewrite(fxn, pm, Py_None, false, NULL)) : NULL;
    if (!sink || !no_range(sink)) return NULL;
    PyObject *back = keep(PyDict_New());
    Py_ssize_t pos = 0; PyObject *key, *val;
    if (!back) return NULL;
    while (PyDict_Next(replaces, &pos, &key, &val)) if (PyDict_SetItem(back, val, key) < 0) return NULL;
    u = u_substitute(sink, back);
    if (!u) return NULL;
  }
  return u;
}
RULE(reduce_collapse, red, u) { return reduce_collapse_with(red, u, reduce_collapse_pm);
}
RULE(reduce_load_collapse, red, u) { return reduce_collapse_with(red, u, reduce_load_collapse_pm);
}
/* x+y < c -> x < c-y when only x reads memory (undoes the lift above on loaded indices) */
RULE(unlift_loaded_lt, y, c, x) {
  if (!no_load(y) || !no_load(c) || no_load(x)) return NULL;
  return py_cmp(x, (PyObject *)py_sub(c, y), Py_LT);
}

static const RuleDef pm_reduce_unparented_defs[] = {
  R("UPat(Ops.REDUCE, name='red')", reduce_unparented),
};
static const RuleDef reduce_collapse_defs[] = {
  R("(UPat.var('x') + UPat.var('y')).or_casted() < UPat.var('c')", lift_add_lt),
  R("(UPat.var('x') * UPat.var('y')) < UPat.var('c')", lift_mul_lt),
  R("(UPat(Ops.RANGE, name='r') < UPat.var('cut')).where(0, UPat.var('val')).reduce(UPat.var('r'), arg=Ops.ADD)", fold_range_below),
  R("((UPat.var('r') < UPat.var('lower')).logical_not() & (UPat(Ops.RANGE, name='r') < UPat.var('upper')))"
   ".where(UPat.var('val'), 0).reduce(UPat.var('r'), arg=Ops.ADD)", fold_range_between),
  R("(UPat(Ops.RANGE, name='r') < UPat.var('cut')).where(UPat.var('val'), 0).reduce(UPat.var('r'), arg=Ops.ADD)", fold_range_above),
  R("(UPat.var('x') + UPat.var('y')).reduce(arg=Ops.ADD, allow_any_len=True, name='r')", split_reduce_add),
  R("(UPat(Ops.DEFINE_VAR, name='x') & UPat.var('y')).where(UPat.var('c'), 0).reduce(arg=Ops.ADD, allow_any_len=True, name='r')", lift_var_and),
  R("UPat.var('x') * UPat.var('gate', dtype=dtypes.bool).cast()", mul_casted_bool),
};
static const RuleDef reduce_load_collapse_defs[] = {
  R("(UPat.var('x') + UPat.var('y')).or_casted() != UPat.var('c')", lift_add_ne),
  R("(UPat.var('idx') != UPat(Ops.RANGE, name='r').or_casted()).where(0, UPat.var('expr')).reduce(UPat.var('r'), arg=Ops.ADD)", collapse_gated_index),
};
static const RuleDef reduce_simplify_defs[] = {
  R("UPat(Ops.REDUCE, src=(UPat.var('u'),), allow_any_len=True, arg=Ops.ADD, name='red')", reduce_collapse),
};
static const RuleDef load_collapse_defs[] = {
  R("UPat(Ops.REDUCE, arg=Ops.ADD, src=(UPat.var('u'), UPat()), name='red')", reduce_load_collapse),
  R("(UPat.var('x', dtypes.index) + UPat.var('y')) < UPat.var('c')", unlift_loaded_lt),
};

/* register a + defs (a borrowed); returns the new set borrowed (the registry owns it) */
static PatternMatcher *register_concat(const char *name, PatternMatcher *a, const RuleDef *defs, int n, PatternMatcher *tail) {
  PatternMatcher *b = pm_from_defs(defs, n);
  PatternMatcher *ab = b ? pm_concat(a, b) : NULL;
  Py_XDECREF(b);
  PatternMatcher *all = (ab && tail) ? pm_concat(ab, tail) : ab;
  if (tail) Py_XDECREF(ab);
  if (!all || native_register(name, all) < 0) return NULL;
  return native_get(name);
}

static int init_reduce_sets(void) {
  range_gate_maker = native_eval("lambda r: (lambda x: r in x.ranges)");
  OPS_ADD = native_eval("Ops.ADD"); OPS_MUL = native_eval("Ops.MUL"); OPS_MAX = native_eval("Ops.MAX");
  if (!range_gate_maker || !OPS_ADD || !OPS_MUL || !OPS_MAX) return -1;
  PatternMatcher *unparented = pm_from_defs(pm_reduce_unparented_defs, N(pm_reduce_unparented_defs));
  if (!unparented || native_register("pm_reduce_unparented", unparented) < 0) return -1;
  reduce_collapse_pm = register_concat("pm_reduce_collapse", unparented, reduce_collapse_defs, N(reduce_collapse_defs),
                                       native_get("symbolic"));
  if (!reduce_collapse_pm) return -1;
  reduce_load_collapse_pm = register_concat("pm_reduce_load_collapse", reduce_collapse_pm, reduce_load_collapse_defs,
                                            N(reduce_load_collapse_defs), NULL);
  if (!reduce_load_collapse_pm) return -1;
  if (!register_concat("pm_reduce_simplify", unparented, reduce_simplify_defs, N(reduce_simplify_defs), NULL)) return -1;
  PatternMatcher *lc = pm_from_defs(load_collapse_defs, N(load_collapse_defs));
  return (!lc || native_register("pm_load_collapse", lc) < 0) ? -1 : 0;
}

int tinyc_init_codegen_simplify(PyObject *m) {
  UNUSED(m);
  PatternMatcher *flatten = pm_from_defs(pm_flatten_range_defs, N(pm_flatten_range_defs));
  if (!flatten) return -1;
  Py_INCREF(flatten);
  if (native_register("pm_flatten_range", flatten) < 0) return -1;
  PatternMatcher *sub_sym = pm_concat(native_get("_substitute"), native_get("symbolic"));
  merge_check_pm = sub_sym ? pm_concat(sub_sym, flatten) : NULL;   /* kept for the module's life */
  Py_XDECREF(sub_sym);
  if (!merge_check_pm) return -1;
  PatternMatcher *split = pm_from_defs(pm_split_ranges_defs, N(pm_split_ranges_defs));
  if (!split || native_register("pm_split_ranges", split) < 0) return -1;
  PatternMatcher *simp = pm_from_defs(pm_simplify_ranges_defs, N(pm_simplify_ranges_defs));
  if (!simp || native_register("pm_simplify_ranges", simp) < 0) return -1;
  PatternMatcher *cut = pm_from_defs(pm_split_store_defs, N(pm_split_store_defs));
  PatternMatcher *store = cut ? pm_concat(flatten, cut) : NULL;
  Py_XDECREF(cut);
  Py_DECREF(flatten);
  if (!store || native_register("pm_split_store", store) < 0) return -1;
  return init_reduce_sets();
}
