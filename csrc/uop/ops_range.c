/* tinygrad/uop/ops.py, "uop symbolic stuff" and "uop Variable stuff": vmin/vmax range analysis,
 * const_factor/divides/pop_const/gcd, variables and bind/unbind, sym_infer.
 * Bounds are Python numbers (ints are unbounded: an index's range is +-2**799), computed once per
 * node, cached in its UOpExtra, and computed bottom-up without recursion. */
#include "ops_movement.h"
#include "form.h"
#include "../helpers.h"

/* ---- Python-number helpers with Python's semantics (min/max keep the first extreme) ---- */

static int lt(PyObject *a, PyObject *b) { return compare_bool(a, b, Py_LT); }

/* min/max over n values: new reference */
static PyObject *py_min(PyObject *const *v, int n) {
  PyObject *best = v[0];
  for (int i = 1; i < n; i++) {
    int r = lt(v[i], best);
    if (r < 0) return NULL;
    if (r) best = v[i];
  }
  return Py_NewRef(best);
}
static PyObject *py_max(PyObject *const *v, int n) {
  PyObject *best = v[0];
  for (int i = 1; i < n; i++) {
    int r = lt(best, v[i]);
    if (r < 0) return NULL;
    if (r) best = v[i];
  }
  return Py_NewRef(best);
}

static PyObject *small_int(long v) { return PyLong_FromLong(v); }

/* tinygrad's cdiv: division truncating toward zero (0 when dividing by zero) */
PyObject *py_cdiv(PyObject *x, PyObject *y) {
  int yzero = PyObject_Not(y);
  if (yzero < 0) return NULL;
  if (yzero) return small_int(0);
  PyObject *ax = PyNumber_Absolute(x), *ay = PyNumber_Absolute(y), *q = NULL, *prod = NULL, *zero = small_int(0), *ret = NULL;
  if (!ax || !ay || !zero || !(q = PyNumber_FloorDivide(ax, ay)) || !(prod = PyNumber_Multiply(x, y))) goto end;
  int neg = lt(prod, zero);
  if (neg < 0) goto end;
  ret = neg ? PyNumber_Negative(q) : Py_NewRef(q);
end:
  Py_XDECREF(ax); Py_XDECREF(ay); Py_XDECREF(q); Py_XDECREF(prod); Py_XDECREF(zero);
  return ret;
}
/* tinygrad's cmod: x - cdiv(x, y)*y */
PyObject *py_cmod(PyObject *x, PyObject *y) {
  PyObject *q = py_cdiv(x, y), *qy = q ? PyNumber_Multiply(q, y) : NULL, *ret = qy ? PyNumber_Subtract(x, qy) : NULL;
  Py_XDECREF(q); Py_XDECREF(qy);
  return ret;
}

/* ---- the bound rules, one function per group of ops, mirroring tinygrad's _min_max ---- */

typedef struct { PyObject *lo, *hi; } Bounds;   /* owned references */

static void bounds_clear(Bounds *b) { Py_CLEAR(b->lo); Py_CLEAR(b->hi); }
static int bounds_set(Bounds *out, PyObject *lo, PyObject *hi) {   /* steals both */
  if (!lo || !hi) { Py_XDECREF(lo); Py_XDECREF(hi); return -1; }
  out->lo = lo, out->hi = hi;
  return 1;
}
static Bounds cached(UOp *u) { return (Bounds){u->extra->vmin, u->extra->vmax}; }   /* borrowed */

/* The four products/quotients of the corners, then their min and max. */
static int corners(Bounds *out, PyObject *(*f)(PyObject *, PyObject *), Bounds a, Bounds b) {
  PyObject *v[4] = {f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)};
  int rc = -1;
  if (v[0] && v[1] && v[2] && v[3]) rc = bounds_set(out, py_min(v, 4), py_max(v, 4));
  for (int i = 0; i < 4; i++) Py_XDECREF(v[i]);
  return rc;
}

static int all_exact_int(PyObject *a, PyObject *b, PyObject *c) { return PyLong_Check(a) && PyLong_Check(b) && PyLong_Check(c); }

/* MOD's bounds: returns 1 set, 0 no rule applies, -1 error */
static int mod_bounds(Bounds *out, Bounds a, Bounds b) {
  PyObject *zero = small_int(0), *one = small_int(1);
  int rc = -1, eq, pos;
  if ((eq = compare_bool(b.lo, b.hi, Py_EQ)) < 0 || (pos = lt(zero, b.hi)) < 0) goto end;
  if (eq && pos) {   /* a constant positive modulus c */
    PyObject *c = b.lo, *negc = PyNumber_Negative(c), *cm1 = PyNumber_Subtract(c, one), *lo = NULL, *hi = NULL;
    int a_lo_pos = lt(zero, a.lo), a_lo_nonpos_gt = -1, a_hi_neg = lt(a.hi, zero), a_hi_lt_c = -1;
    if (negc && cm1 && a_lo_pos >= 0 && a_hi_neg >= 0) {
      /* lo: 0 if a.lo > 0 else a.lo if 0 >= a.lo > -c else -(c-1) */
      int le0 = compare_bool(a.lo, zero, Py_LE), gtn = lt(negc, a.lo);
      a_lo_nonpos_gt = (le0 < 0 || gtn < 0) ? -1 : le0 && gtn;
      int ge0 = compare_bool(a.hi, zero, Py_GE), ltc = lt(a.hi, c);
      a_hi_lt_c = (ge0 < 0 || ltc < 0) ? -1 : ge0 && ltc;
      if (a_lo_nonpos_gt >= 0 && a_hi_lt_c >= 0) {
        lo = a_lo_pos ? Py_NewRef(zero) : a_lo_nonpos_gt ? Py_NewRef(a.lo) : PyNumber_Negative(cm1);
        hi = a_hi_neg ? Py_NewRef(zero) : a_hi_lt_c ? Py_NewRef(a.hi) : Py_NewRef(cm1);
        rc = bounds_set(out, lo, hi);
      }
    }
    Py_XDECREF(negc); Py_XDECREF(cm1);
    goto end;
  }
  int bpos = lt(zero, b.lo), bneg = lt(b.hi, zero);
  if (bpos < 0 || bneg < 0) goto end;
  if (!bpos && !bneg) { rc = 0; goto end; }
  /* the largest |remainder| is m = |b|max - 1; the sign follows the dividend */
  PyObject *absb = bpos ? Py_NewRef(b.hi) : PyNumber_Negative(b.lo), *m = absb ? PyNumber_Subtract(absb, one) : NULL;
  Py_XDECREF(absb);
  if (!m) goto end;
  int nonneg = compare_bool(a.lo, zero, Py_GE), nonpos = compare_bool(a.hi, zero, Py_LE);
  if (nonneg >= 0 && nonpos >= 0) {
    if (nonneg) rc = bounds_set(out, Py_NewRef(zero), Py_NewRef(m));
    else if (nonpos) rc = bounds_set(out, PyNumber_Negative(m), Py_NewRef(zero));
    else rc = bounds_set(out, PyNumber_Negative(m), Py_NewRef(m));
  }
  Py_DECREF(m);
end:
  Py_XDECREF(zero); Py_XDECREF(one);
  return rc;
}

static wide wmin(wide a, wide b) { return b < a ? b : a; }
static wide wmax(wide a, wide b) { return b > a ? b : a; }
/* one corner of MUL's or IDIV's bounds: a product, or tinygrad's cdiv (C division truncates toward zero; b != 0) */
static wide corner(Op op, wide a, wide b) { return op == OP_MUL ? a * b : a / b; }

/* The arithmetic and comparison rules below on bounds that are all 64-bit ints, in C: the values Python's numbers give
 * (index bounds almost always fit). 1 set, 0 to go on with Python's numbers (a bound that does not fit, another op). */
static int small_binary_bounds(UOp *u, Bounds a, Bounds b, Bounds *out) {
  long long al, ah, bl, bh;
  if (!as_int64(a.lo, &al) || !as_int64(a.hi, &ah) || !as_int64(b.lo, &bl) || !as_int64(b.hi, &bh)) return 0;
  wide lo, hi, v[4];
  switch (u->op) {
  case OP_ADD: lo = (wide)al + bl, hi = (wide)ah + bh; break;
  case OP_SUB: lo = (wide)al - bh, hi = (wide)ah - bl; break;
  case OP_MAX: lo = wmax(al, bl), hi = wmax(ah, bh); break;
  case OP_MUL: case OP_IDIV:
    if (u->op == OP_IDIV && (wide)bl * bh <= 0) return 0;   /* no rule: Python's path answers the dtype's range */
    v[0] = corner(u->op, al, bl), v[1] = corner(u->op, al, bh), v[2] = corner(u->op, ah, bl), v[3] = corner(u->op, ah, bh);
    lo = wmin(wmin(v[0], v[1]), wmin(v[2], v[3])), hi = wmax(wmax(v[0], v[1]), wmax(v[2], v[3]));
    break;
  case OP_CMPLT: return bounds_set(out, PyBool_FromLong(ah < bl), PyBool_FromLong(al < bh));
  case OP_CMPNE: return bounds_set(out, PyBool_FromLong(ah < bl || bh < al), PyBool_FromLong(!(al == ah && ah == bl && bl == bh)));
  default: return 0;
  }
  if (lo < LLONG_MIN || lo > LLONG_MAX || hi < LLONG_MIN || hi > LLONG_MAX) return 0;
  return bounds_set(out, PyLong_FromLongLong((long long)lo), PyLong_FromLongLong((long long)hi));
}

/* Binary ops on non-float dtypes; 1 set, 0 no rule, -1 error */
static int binary_bounds(UOp *u, Bounds *out) {
  Bounds a = cached(u->src[0]), b = cached(u->src[1]);
  PyObject *zero = NULL;
  int rc = small_binary_bounds(u, a, b, out), t1, t2;
  if (rc) return rc;
  switch (u->op) {
  case OP_ADD: return bounds_set(out, PyNumber_Add(a.lo, b.lo), PyNumber_Add(a.hi, b.hi));
  case OP_SUB: return bounds_set(out, PyNumber_Subtract(a.lo, b.hi), PyNumber_Subtract(a.hi, b.lo));
  case OP_AND:
    if (dtype_is_int(u->dtype)) {   /* x & c with c >= 0 and x >= 0 lies in [0, min(x.max, c)] */
      if (!(zero = small_int(0))) return -1;
      int eq = compare_bool(b.lo, b.hi, Py_EQ), cpos = compare_bool(b.hi, zero, Py_GE),
          xpos = compare_bool(a.lo, zero, Py_GE);
      if (eq < 0 || cpos < 0 || xpos < 0) { Py_DECREF(zero); return -1; }
      if (eq && cpos && xpos) {
        PyObject *lo_pair[2] = {zero, a.lo}, *hi_pair[2] = {a.hi, b.hi};
        rc = bounds_set(out, py_min(lo_pair, 2), py_min(hi_pair, 2));
        Py_DECREF(zero);
        return rc;
      }
      Py_DECREF(zero);
    }
    break;
  case OP_MUL: return corners(out, PyNumber_Multiply, a, b);
  case OP_SHL: case OP_SHR:
    if ((t1 = compare_bool(b.lo, b.hi, Py_EQ)) < 0) return -1;
    if (t1 && all_exact_int(a.lo, a.hi, b.lo)) {
      PyObject *(*shift)(PyObject *, PyObject *) = u->op == OP_SHL ? PyNumber_Lshift : PyNumber_Rshift;
      return bounds_set(out, shift(a.lo, b.lo), shift(a.hi, b.lo));
    }
    break;
  case OP_MOD:
    if ((rc = mod_bounds(out, a, b)) != 0) return rc;
    break;
  case OP_IDIV: {
    if (!all_exact_int(a.lo, a.hi, b.lo) || !PyLong_Check(b.hi)) {
      PyErr_Format(PyExc_ValueError, "IDIV bounds need ints, got %R..%R // %R..%R", a.lo, a.hi, b.lo, b.hi);
      return -1;
    }
    PyObject *p = PyNumber_Multiply(b.lo, b.hi);
    if (!p || !(zero = small_int(0))) { Py_XDECREF(p); return -1; }
    int pos = lt(zero, p);
    Py_DECREF(p); Py_DECREF(zero);
    if (pos < 0) return -1;
    if (pos) return corners(out, py_cdiv, a, b);
    break;
  }
  case OP_MAX: {
    PyObject *lo_pair[2] = {a.lo, b.lo}, *hi_pair[2] = {a.hi, b.hi};
    return bounds_set(out, py_max(lo_pair, 2), py_max(hi_pair, 2));
  }
  case OP_CMPLT:
    if ((t1 = lt(a.hi, b.lo)) < 0 || (t2 = lt(a.lo, b.hi)) < 0) return -1;
    return bounds_set(out, PyBool_FromLong(t1), PyBool_FromLong(t2));
  case OP_CMPNE: {
    int d1 = lt(a.hi, b.lo), d2 = lt(b.hi, a.lo);
    int e1 = compare_bool(a.lo, a.hi, Py_EQ), e2 = compare_bool(a.hi, b.lo, Py_EQ),
        e3 = compare_bool(b.lo, b.hi, Py_EQ);
    if (d1 < 0 || d2 < 0 || e1 < 0 || e2 < 0 || e3 < 0) return -1;
    return bounds_set(out, PyBool_FromLong(d1 || d2), PyBool_FromLong(!(e1 && e2 && e3)));
  }
  default: break;
  }
  if (u->dtype == DTYPE(BOOL) && (u->op == OP_OR || u->op == OP_AND)) {
    /* Python's `x or y` / `x and y` on the bounds */
    int ta = PyObject_IsTrue(a.lo), tb = PyObject_IsTrue(a.hi);
    if (ta < 0 || tb < 0) return -1;
    if (u->op == OP_OR) return bounds_set(out, Py_NewRef(ta ? a.lo : b.lo), Py_NewRef(tb ? a.hi : b.hi));
    return bounds_set(out, Py_NewRef(ta ? b.lo : a.lo), Py_NewRef(tb ? b.hi : a.hi));
  }
  return 0;
}

static int cast_bounds(UOp *u, Bounds *out) {
  Bounds s = cached(u->src[0]);
  PyObject *dmin = dtype_min(u->dtype), *dmax = dtype_max(u->dtype);
  int rc = -1;
  if (dmin && dmax) {
    PyObject *lo_pair[2] = {dmin, s.lo}, *hi_pair[2] = {s.hi, dmax};
    rc = bounds_set(out, py_max(lo_pair, 2), py_min(hi_pair, 2));
  }
  Py_XDECREF(dmin); Py_XDECREF(dmax);
  return rc;
}

static int vector_bounds(UOp *u, Bounds *out) {   /* UNROLL, VECTORIZE: over all sources */
  PyObject **lo = PyMem_Malloc(sizeof(PyObject *) * u->nsrc * 2);
  if (!lo) { PyErr_NoMemory(); return -1; }
  PyObject **hi = lo + u->nsrc;
  for (int i = 0; i < u->nsrc; i++) lo[i] = u->src[i]->extra->vmin, hi[i] = u->src[i]->extra->vmax;
  int rc = bounds_set(out, py_min(lo, u->nsrc), py_max(hi, u->nsrc));
  PyMem_Free(lo);
  return rc;
}

static bool tuple_has_invalid(PyObject *t) {
  if (!PyTuple_Check(t)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++)
    if (PyTuple_GET_ITEM(t, i) == Invalid) return true;
  return false;
}

/* Which sources' bounds a node's rule reads: the walk below computes only those. */
static bool needs_src_bounds(UOp *u) {
  if (IN_GROUP(u->op, Binary) && !dtype_is_float(u->dtype)) return true;
  if (u->op == OP_WHERE) return dtype_is_int(u->dtype);
  switch (u->op) {
  case OP_RANGE: case OP_SPECIAL: case OP_BIND: case OP_UNROLL: case OP_VECTORIZE: case OP_GEP: return true;
  case OP_CAST: return u->dtype == dtype_scalar(u->dtype) && (dtype_is_float(u->dtype) || u->dtype == DTYPE(INDEX) ||
                                                                (dtype_is_int(u->dtype) && !dtype_is_unsigned(u->dtype)));
  default: return false;
  }
}
static int first_needed_src(UOp *u) { return u->op == OP_WHERE ? 1 : 0; }

/* The bounds of one node whose needed sources are already cached. */
static int node_bounds(UOp *u, Bounds *out) {
  int rc;
  if (IN_GROUP(u->op, Binary) && !dtype_is_float(u->dtype) && u->nsrc >= 2 && (rc = binary_bounds(u, out)) != 0) return rc;
  switch (u->op) {
  case OP_WHERE:
    if (dtype_is_int(u->dtype) && u->nsrc == 3) {
      PyObject *lo_pair[2] = {u->src[1]->extra->vmin, u->src[2]->extra->vmin}, *hi_pair[2] = {u->src[1]->extra->vmax, u->src[2]->extra->vmax};
      return bounds_set(out, py_min(lo_pair, 2), py_max(hi_pair, 2));
    }
    break;
  case OP_DEFINE_VAR:
    if (PyObject_IsTrue(u->arg) == 1 && PyTuple_Check(u->arg) && PyTuple_GET_SIZE(u->arg) >= 3)
      return bounds_set(out, Py_NewRef(PyTuple_GET_ITEM(u->arg, 1)), Py_NewRef(PyTuple_GET_ITEM(u->arg, 2)));
    break;
  case OP_RANGE: case OP_SPECIAL:
    if (u->nsrc >= 1) {   /* 0 .. (end-1).vmax, end-1 being an ADD of the end and -1 */
      if (dtype_is_float(u->src[0]->dtype)) return bounds_set(out, small_int(0), dtype_max(u->src[0]->dtype));
      PyObject *m1 = small_int(-1), *c = m1 ? dtype_as_const(m1, u->src[0]->dtype) : NULL;
      PyObject *hi = c ? PyNumber_Add(u->src[0]->extra->vmax, c) : NULL;
      Py_XDECREF(m1); Py_XDECREF(c);
      return bounds_set(out, small_int(0), hi);
    }
    break;
  case OP_BIND: case OP_GEP:
    if (u->nsrc >= 1) return bounds_set(out, Py_NewRef(u->src[0]->extra->vmin), Py_NewRef(u->src[0]->extra->vmax));
    break;
  case OP_UNROLL: case OP_VECTORIZE:
    if (u->nsrc >= 1) return vector_bounds(u, out);
    break;
  case OP_CONST:
    if (u->arg != Invalid) return bounds_set(out, Py_NewRef(u->arg), Py_NewRef(u->arg));
    break;
  case OP_VCONST:
    if (PyTuple_Check(u->arg) && PyTuple_GET_SIZE(u->arg) && !tuple_has_invalid(u->arg)) {
      PyObject **items = &PyTuple_GET_ITEM(u->arg, 0);
      int n = (int)PyTuple_GET_SIZE(u->arg);
      return bounds_set(out, py_min(items, n), py_max(items, n));
    }
    break;
  case OP_CAST:
    if (needs_src_bounds(u) && u->nsrc >= 1) return cast_bounds(u, out);
    break;
  default: break;
  }
  return bounds_set(out, dtype_min(u->dtype), dtype_max(u->dtype));
}

static bool has_bounds(UOp *u) { return u->extra && u->extra->vmin; }

/* Post-order walk over the nodes whose bounds are missing, following only needed sources. */
int uop_min_max(UOp *root, PyObject **vmin, PyObject **vmax) {
  if (!has_bounds(root)) {
    if (uop_check_form(root, "vmin/vmax") < 0) return -1;
    PtrVec stack = {0};
    if (ptrvec_push(&stack, root) < 0) return -1;
    while (stack.len) {
      UOp *u = stack.items[stack.len - 1];
      if (has_bounds(u)) { stack.len--; continue; }
      bool ready = true;
      if (needs_src_bounds(u)) {
        for (int i = first_needed_src(u); i < u->nsrc; i++) {
          if (has_bounds(u->src[i])) continue;
          ready = false;
          if (ptrvec_push(&stack, u->src[i]) < 0) { ptrvec_free(&stack); return -1; }
        }
      }
      if (!ready) continue;
      stack.len--;
      Bounds b = {NULL, NULL};
      if (node_bounds(u, &b) < 0 || !uop_extra(u)) { bounds_clear(&b); ptrvec_free(&stack); return -1; }
      u->extra->vmin = b.lo, u->extra->vmax = b.hi;
    }
    ptrvec_free(&stack);
  }
  *vmin = root->extra->vmin, *vmax = root->extra->vmax;
  return 0;
}

/* ---- Python surface: vmin, vmax, _min_max ---- */

static PyObject *UOp_vmin(UOp *self, void *c) {
  UNUSED(c);
  PyObject *lo, *hi;
  return uop_min_max(self, &lo, &hi) < 0 ? NULL : Py_NewRef(lo);
}
static PyObject *UOp_vmax(UOp *self, void *c) {
  UNUSED(c);
  PyObject *lo, *hi;
  return uop_min_max(self, &lo, &hi) < 0 ? NULL : Py_NewRef(hi);
}
static PyObject *UOp_min_max_(UOp *self, void *c) {
  UNUSED(c);
  PyObject *lo, *hi;
  return uop_min_max(self, &lo, &hi) < 0 ? NULL : PyTuple_Pack(2, lo, hi);
}

/* ---- const_factor, divides, pop_const, gcd ---- */

static PyObject *math_gcd;   /* math.gcd, fetched at init */

PyObject *uop_const_factor(UOp *u) {
  switch (u->op) {
  case OP_CONST: return Py_NewRef(u->arg);
  case OP_VCONST: return PyObject_Call(math_gcd, u->arg, NULL);
  case OP_ADD: {
    if (Py_EnterRecursiveCall(" in const_factor")) return NULL;
    PyObject *a = uop_const_factor(u->src[0]), *b = a ? uop_const_factor(u->src[1]) : NULL, *ret = NULL;
    Py_LeaveRecursiveCall();
    if (a && b) ret = PyObject_CallFunctionObjArgs(math_gcd, a, b, NULL);
    Py_XDECREF(a); Py_XDECREF(b);
    return ret;
  }
  case OP_MUL:
    if (u->src[0]->op == OP_CONST) return Py_NewRef(u->src[0]->arg);
    if (u->src[1]->op == OP_CONST) return Py_NewRef(u->src[1]->arg);
    return PyLong_FromLong(1);
  default: return PyLong_FromLong(1);
  }
}

PyObject *uop_divides(UOp *u, PyObject *v) {
  PyObject *onev = PyLong_FromLong(1);
  int is_one = onev ? compare_bool(v, onev, Py_EQ) : -1;
  Py_XDECREF(onev);
  if (is_one < 0) return NULL;
  if (is_one) return Py_NewRef(u);
  switch (u->op) {
  case OP_CONST: {
    PyObject *r = PyNumber_Remainder(u->arg, v), *ret = NULL;
    if (!r) return NULL;
    int zero = PyObject_Not(r);
    Py_DECREF(r);
    if (zero < 0) return NULL;
    if (!zero) Py_RETURN_NONE;
    PyObject *q = PyNumber_FloorDivide(u->arg, v);
    if (q) ret = (PyObject *)uop_const_like(u, q);
    Py_XDECREF(q);
    return ret;
  }
  case OP_VCONST: {
    Py_ssize_t n = PyTuple_GET_SIZE(u->arg);
    PyObject *qs = PyTuple_New(n), *ret = NULL;
    for (Py_ssize_t i = 0; qs && i < n; i++) {
      PyObject *r = PyNumber_Remainder(PyTuple_GET_ITEM(u->arg, i), v);
      int zero = r ? PyObject_Not(r) : -1;
      Py_XDECREF(r);
      if (zero <= 0) { Py_DECREF(qs); if (zero < 0) return NULL; Py_RETURN_NONE; }
      PyObject *q = PyNumber_FloorDivide(PyTuple_GET_ITEM(u->arg, i), v);
      if (!q) { Py_DECREF(qs); return NULL; }
      PyTuple_SET_ITEM(qs, i, q);
    }
    if (qs) ret = (PyObject *)uop_const_like(u, qs);
    Py_XDECREF(qs);
    return ret;
  }
  case OP_ADD: case OP_MUL: {
    if (Py_EnterRecursiveCall(" in divides")) return NULL;
    PyObject *d0 = uop_divides(u->src[0], v), *ret = NULL;
    if (u->op == OP_ADD) {
      PyObject *d1 = d0 && d0 != Py_None ? uop_divides(u->src[1], v) : NULL;
      if (d0 == Py_None || d1 == Py_None) ret = Py_NewRef(Py_None);
      else if (d1) ret = PyNumber_Add(d0, d1);
      Py_XDECREF(d1);
    } else if (d0 && d0 != Py_None) {
      ret = PyNumber_Multiply(d0, (PyObject *)u->src[1]);
    } else if (d0) {
      PyObject *d1 = uop_divides(u->src[1], v);
      ret = d1 && d1 != Py_None ? PyNumber_Multiply((PyObject *)u->src[0], d1) : Py_XNewRef(d1);
      Py_XDECREF(d1);
    }
    Py_LeaveRecursiveCall();
    Py_XDECREF(d0);
    return ret;
  }
  default: Py_RETURN_NONE;
  }
}

static PyObject *UOp_const_factor(UOp *self, PyObject *unused) {
  UNUSED(unused);
  return uop_check_form(self, "const_factor") < 0 ? NULL : uop_const_factor(self);
}
static PyObject *UOp_divides(UOp *self, PyObject *v) { return uop_check_form(self, "divides") < 0 ? NULL : uop_divides(self, v); }

/* identity_element(op, dtype): 0 for ADD, 1 for MUL, dtype.min for MAX */
static PyObject *identity_element(int op, DType *dt) {
  PyObject *v = op == OP_ADD ? PyLong_FromLong(0) : op == OP_MUL ? PyLong_FromLong(1) : op == OP_MAX ? dtype_min(dt) : NULL;
  if (!v) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_KeyError, "no identity element for %S", ops_members[op]);
  PyObject *ret = dtype_as_const(v, dt);
  Py_DECREF(v);
  return ret;
}

/* u.pop_const(op): (x, c) when u is op(x, CONST c), else (u, op's identity); a new tuple */
static PyObject *pop_const(UOp *u, int op) {
  if (u->op == op && u->nsrc == 2 && u->src[1]->op == OP_CONST) return PyTuple_Pack(2, (PyObject *)u->src[0], u->src[1]->arg);
  PyObject *id = identity_element(op, u->dtype);
  return id ? Py_BuildValue("(ON)", (PyObject *)u, id) : NULL;
}

static PyObject *UOp_pop_const(UOp *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"op", NULL};
  PyObject *op_obj = ops_members[OP_ADD];
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:pop_const", kwlist, &op_obj)) return NULL;
  int op = op_from_object(op_obj);
  return op < 0 ? NULL : pop_const(self, op);
}

/* ---- divide_exact ---- */

/* The factors of fac's MUL chain less those of div's, each kept as often as it is left over, in the order a
 * collections.Counter of fac's factors lists them (first seen first, repeats together); 1 when div has a factor fac lacks
 * (a negative count), 0 when every factor is covered, -1 on error. `out` gets borrowed pointers. */
static int factors_left(UOp *fac, UOp *div, PtrVec *out) {
  PtrVec have = {0}, take = {0};
  int rc = uop_split_uop(fac, OP_MUL, &have) < 0 || uop_split_uop(div, OP_MUL, &take) < 0 ? -1 : 0;
  long *count = rc == 0 ? PyMem_Calloc((size_t)have.len + 1, sizeof(long)) : NULL;
  if (rc == 0 && !count) rc = -1, PyErr_NoMemory();
  /* count[i]: how often have.items[i] occurs, kept at its first occurrence (later ones count 0) */
  for (Py_ssize_t i = 0; count && i < have.len; i++) {
    Py_ssize_t first = 0;
    while (have.items[first] != have.items[i]) first++;
    count[first]++;
  }
  for (Py_ssize_t k = 0; count && rc == 0 && k < take.len; k++) {
    Py_ssize_t first = 0;
    while (first < have.len && have.items[first] != take.items[k]) first++;
    if (first == have.len || --count[first] < 0) rc = 1;
  }
  for (Py_ssize_t i = 0; count && rc == 0 && i < have.len; i++)
    for (long c = 0; rc == 0 && c < count[i]; c++) rc = ptrvec_push(out, have.items[i]) < 0 ? (PyErr_NoMemory(), -1) : 0;
  PyMem_Free(count); ptrvec_free(&have); ptrvec_free(&take);
  return rc;
}

/* math.prod(factors + [last]): 1 * f0 * f1 * ... * last through the number protocol, as Python multiplies them */
static PyObject *prod_with(const PtrVec *factors, PyObject *last) {
  PyObject *acc = PyLong_FromLong(1);
  for (Py_ssize_t i = 0; acc && i <= factors->len; i++) Py_SETREF(acc, PyNumber_Multiply(acc, i < factors->len ? factors->items[i] : last));
  return acc;
}

/* MUL: (fac * const) / (div_fac * div_const) when div_fac's factors are among fac's and div_const divides const */
static PyObject *divide_exact_mul(UOp *u, UOp *v) {
  PyObject *a = pop_const(u, OP_MUL), *b = a ? pop_const(v, OP_MUL) : NULL, *rem = NULL, *zero = PyLong_FromLong(0), *ret = NULL;
  PtrVec left = {0};
  int divisible = b && zero && (rem = PyNumber_Remainder(PyTuple_GET_ITEM(a, 1), PyTuple_GET_ITEM(b, 1))) ?
                  compare_bool(rem, zero, Py_EQ) : -1;
  int missing = divisible > 0 ? factors_left((UOp *)PyTuple_GET_ITEM(a, 0), (UOp *)PyTuple_GET_ITEM(b, 0), &left) : 0;
  if (divisible == 0 || missing == 1) ret = Py_NewRef(Py_None);
  else if (divisible > 0 && missing == 0) {
    PyObject *q = PyNumber_FloorDivide(PyTuple_GET_ITEM(a, 1), PyTuple_GET_ITEM(b, 1));
    PyObject *c = q ? (PyObject *)uop_const_like(u, q) : NULL;
    if (c) ret = prod_with(&left, c);
    Py_XDECREF(q); Py_XDECREF(c);
  }
  ptrvec_free(&left);
  Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(rem); Py_XDECREF(zero);
  return ret;
}

/* tinygrad's u.divide_exact(v): u / v when it is sure v divides u exactly (a constant, each term of a sum, the
 * factors of a product), else None */
static PyObject *divide_exact(UOp *u, PyObject *v) {
  if ((PyObject *)u == v) {
    PyObject *one = PyLong_FromLong(1), *ret = one ? (PyObject *)uop_const_like(u, one) : NULL;
    Py_XDECREF(one);
    return ret;
  }
  if (!UOp_Check(v)) return PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute 'op'", Py_TYPE(v)->tp_name);
  if (uop_check_form((UOp *)v, "divide_exact") < 0) return NULL;
  if (((UOp *)v)->op == OP_CONST) return uop_divides(u, ((UOp *)v)->arg);
  if (u->op == OP_MUL) return divide_exact_mul(u, (UOp *)v);
  if (u->op != OP_ADD) Py_RETURN_NONE;
  if (Py_EnterRecursiveCall(" in divide_exact")) return NULL;
  PyObject *s0 = divide_exact(u->src[0], v), *s1 = s0 && s0 != Py_None ? divide_exact(u->src[1], v) : NULL, *ret = NULL;
  Py_LeaveRecursiveCall();
  if (s0 == Py_None || s1 == Py_None) ret = Py_NewRef(Py_None);
  else if (s1) ret = PyNumber_Add(s0, s1);
  Py_XDECREF(s0); Py_XDECREF(s1);
  return ret;
}
static PyObject *UOp_divide_exact(UOp *self, PyObject *v) { return uop_check_form(self, "divide_exact") < 0 ? NULL : divide_exact(self, v); }

int uop_split_uop(UOp *u, Op sep, PtrVec *out) {
  PtrVec stack = {0};
  int rc = ptrvec_push(&stack, u);
  while (rc == 0 && stack.len) {
    UOp *x = ptrvec_pop(&stack);
    if (x->op != sep) { rc = ptrvec_push(out, x); continue; }
    for (int i = x->nsrc - 1; i >= 0 && rc == 0; i--) rc = ptrvec_push(&stack, x->src[i]);
  }
  ptrvec_free(&stack);
  if (rc < 0) PyErr_NoMemory();
  return rc;
}

PyObject *uop_split_uop_list(UOp *u, Op sep) {
  PtrVec leaves = {0};
  PyObject *list = uop_split_uop(u, sep, &leaves) < 0 ? NULL : PyList_New(leaves.len);
  for (Py_ssize_t i = 0; list && i < leaves.len; i++) PyList_SET_ITEM(list, i, Py_NewRef((PyObject *)leaves.items[i]));
  ptrvec_free(&leaves);
  return list;
}

static PyObject *UOp_split_uop(UOp *self, PyObject *sep_obj) {
  int sep = op_from_object(sep_obj);
  PyObject *list = sep < 0 ? NULL : uop_split_uop_list(self, sep);
  if (!list) return NULL;
  PyObject *it = PyObject_GetIter(list);
  Py_DECREF(list);
  return it;
}

/* Counter of the MUL-leaves of a term: an insertion-ordered dict node -> count */
static PyObject *mul_leaf_counts(PyObject *term) {
  if (!UOp_Check(term)) return PyErr_Format(PyExc_TypeError, "gcd: a term did not divide by its const factor");
  PyObject *leaves = uop_split_uop_list((UOp *)term, OP_MUL), *counts = PyDict_New();
  if (!leaves || !counts) goto fail;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(leaves); i++) {
    PyObject *leaf = PyList_GET_ITEM(leaves, i), *c = PyDict_GetItemWithError(counts, leaf);
    if (!c && PyErr_Occurred()) goto fail;
    PyObject *n = PyLong_FromLong(c ? PyLong_AsLong(c) + 1 : 1);
    if (!n || PyDict_SetItem(counts, leaf, n) < 0) { Py_XDECREF(n); goto fail; }
    Py_DECREF(n);
  }
  Py_DECREF(leaves);
  return counts;
fail:
  Py_XDECREF(leaves); Py_XDECREF(counts);
  return NULL;
}

/* UOp.gcd's parts: the gcd of the terms' const factors and the MUL-leaves every term shares (Counter &: an insertion-
 * ordered dict leaf -> count, in the first term's order), and the first term; new references, -1 on error */
static int gcd_parts(PyObject *args, PyObject **factor_gcd, PyObject **common, PyObject **first_term) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n == 0) { PyErr_Format(PyExc_TypeError, "gcd needs at least one UOp"); return -1; }
  PyObject *factors = PyTuple_New(n);
  *factor_gcd = *common = *first_term = NULL;
  if (!factors) return -1;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *u = PyTuple_GET_ITEM(args, i);
    if (!UOp_Check(u)) { PyErr_Format(PyExc_TypeError, "gcd takes UOps"); goto fail; }
    if (uop_check_form((UOp *)u, "gcd") < 0) goto fail;
    PyObject *f = uop_const_factor((UOp *)u), *term = f ? uop_divides((UOp *)u, f) : NULL;
    if (!term) { Py_XDECREF(f); goto fail; }
    PyTuple_SET_ITEM(factors, i, f);
    PyObject *counts = mul_leaf_counts(term);
    if (i == 0) *first_term = Py_NewRef(term);
    Py_DECREF(term);
    if (!counts) goto fail;
    if (!*common) { *common = counts; continue; }
    PyObject *keys = PyDict_Keys(*common);   /* intersect: keep keys of the first, min count */
    for (Py_ssize_t k = 0; keys && k < PyList_GET_SIZE(keys); k++) {
      PyObject *key = PyList_GET_ITEM(keys, k), *other = PyDict_GetItem(counts, key);
      long a = PyLong_AsLong(PyDict_GetItem(*common, key)), b = other ? PyLong_AsLong(other) : 0, m = a < b ? a : b;
      PyObject *mv = PyLong_FromLong(m);
      if (!mv || (m > 0 ? PyDict_SetItem(*common, key, mv) : PyDict_DelItem(*common, key)) < 0) { Py_XDECREF(mv); Py_CLEAR(keys); break; }
      Py_DECREF(mv);
    }
    Py_DECREF(counts);
    if (!keys) goto fail;
    Py_DECREF(keys);
  }
  if (!(*factor_gcd = PyObject_Call(math_gcd, factors, NULL))) goto fail;
  Py_DECREF(factors);
  return 0;
fail:
  Py_DECREF(factors); Py_CLEAR(*common); Py_CLEAR(*first_term);
  return -1;
}

/* the common factor from gcd's parts: shared MUL-leaves times the gcd of the const factors, multiplied up from 1 as
 * math.prod does (so the const ends up at the top); steals the parts */
static PyObject *gcd_product(PyObject *g, PyObject *common, PyObject *first_term) {
  PyObject *cst = (PyObject *)uop_const_like((UOp *)first_term, g), *ret = cst ? PyLong_FromLong(1) : NULL;
  Py_ssize_t pos = 0;
  PyObject *key, *cnt;
  while (ret && PyDict_Next(common, &pos, &key, &cnt))
    for (long c = PyLong_AsLong(cnt); ret && c > 0; c--) Py_SETREF(ret, PyNumber_Multiply(ret, key));
  if (ret) Py_SETREF(ret, PyNumber_Multiply(ret, cst));
  Py_XDECREF(cst); Py_DECREF(g); Py_DECREF(common); Py_DECREF(first_term);
  return ret;
}

PyObject *uop_gcd(PyObject *args) {
  PyObject *g, *common, *first_term;
  return gcd_parts(args, &g, &common, &first_term) < 0 ? NULL : gcd_product(g, common, first_term);
}

PyObject *uop_gcd_unless_one(PyObject *args) {
  PyObject *g, *common, *first_term;
  if (gcd_parts(args, &g, &common, &first_term) < 0) return NULL;
  int overflow = 0;
  if (PyDict_GET_SIZE(common) == 0 && PyLong_CheckExact(g) && PyLong_AsLongAndOverflow(g, &overflow) == 1 && !overflow) {
    Py_DECREF(g); Py_DECREF(common); Py_DECREF(first_term);
    Py_RETURN_NONE;
  }
  return gcd_product(g, common, first_term);
}
static PyObject *UOp_gcd(PyObject *cls, PyObject *args) { UNUSED(cls); return uop_gcd(args); }

/* sum/prod: fold with + (| for bool) or * (& for bool), starting from self */
static PyObject *fold(UOp *self, PyObject *args, binaryfunc f) {
  PyObject *acc = Py_NewRef(self);
  for (Py_ssize_t i = 0; acc && i < PyTuple_GET_SIZE(args); i++) Py_SETREF(acc, f(acc, PyTuple_GET_ITEM(args, i)));
  return acc;
}
static PyObject *UOp_sum(UOp *self, PyObject *args) { return fold(self, args, self->dtype == DTYPE(BOOL) ? PyNumber_Or : PyNumber_Add); }
static PyObject *UOp_prod(UOp *self, PyObject *args) { return fold(self, args, self->dtype == DTYPE(BOOL) ? PyNumber_And : PyNumber_Multiply); }

static PyObject *UOp_is_increasing(UOp *self, PyObject *unused) {
  UNUSED(unused);
  if (uop_check_form(self, "is_increasing") < 0) return NULL;
  UOp *u = self;
  while (1) {   /* ADD recurses on both sides, MUL/IDIV by a nonnegative const on the left */
    if (IN_GROUP(u->op, Irreducible)) Py_RETURN_TRUE;
    if (u->op == OP_ADD) {
      if (Py_EnterRecursiveCall(" in is_increasing")) return NULL;   /* a deep left spine: RecursionError, as tinygrad */
      PyObject *left = UOp_is_increasing(u->src[0], NULL);
      Py_LeaveRecursiveCall();
      if (left != Py_True) return left;
      Py_DECREF(left);
      u = u->src[1];
      continue;
    }
    if ((u->op == OP_MUL || u->op == OP_IDIV) && u->src[1]->op == OP_CONST) {
      PyObject *zero = PyLong_FromLong(0);
      int nonneg = zero ? compare_bool(u->src[1]->arg, zero, Py_GE) : -1;
      Py_XDECREF(zero);
      if (nonneg < 0) return NULL;
      if (nonneg) { u = u->src[0]; continue; }
    }
    Py_RETURN_FALSE;
  }
}

int uop_overflows(UOp *u, DType *dtype) {
  PyObject *lo, *hi, *dmin = dtype_min(dtype), *dmax = dtype_max(dtype);
  int rc = (dmin && dmax && uop_min_max(u, &lo, &hi) == 0) ? 0 : -1, a = 0, b = 0;
  if (rc == 0 && ((a = lt(lo, dmin)) < 0 || (!a && (b = lt(dmax, hi)) < 0))) rc = -1;
  Py_XDECREF(dmin); Py_XDECREF(dmax);
  return rc < 0 ? -1 : a || b;
}
static PyObject *UOp_overflows(UOp *self, PyObject *dtype) {
  if (!DType_Check(dtype)) return PyErr_Format(PyExc_TypeError, "overflows needs a DType");
  int r = uop_overflows(self, (DType *)dtype);
  return r < 0 ? NULL : PyBool_FromLong(r);
}

/* ---- variables ---- */

static PyObject *UOp_expr(UOp *self, void *c) {
  UNUSED(c);
  if (self->op != OP_DEFINE_VAR || !PyTuple_Check(self->arg)) return PyErr_Format(PyExc_ValueError, "op is %S, need DEFINE_VAR", ops_members[self->op]);
  return Py_NewRef(PyTuple_GET_ITEM(self->arg, 0));
}

UOp *uop_bind(UOp *self, PyObject *val) {
  if (self->op != OP_DEFINE_VAR || !PyTuple_Check(self->arg) || PyTuple_GET_SIZE(self->arg) < 3)
    return (UOp *)PyErr_Format(PyExc_ValueError, "op is %S, need DEFINE_VAR", ops_members[self->op]);
  UOp *uval = PyLong_Check(val) ? uop_const_like(self, val) : UOp_Check(val) ? (UOp *)Py_NewRef(val) : NULL;
  if (!uval) return PyErr_Occurred() ? NULL : (UOp *)PyErr_Format(PyExc_TypeError, "bind needs an int or a UOp");
  PyObject *lo, *hi;
  UOp *ret = NULL;
  if (uop_min_max(uval, &lo, &hi) == 0) {
    int ok_lo = compare_bool(PyTuple_GET_ITEM(self->arg, 1), lo, Py_LE);
    int ok_hi = ok_lo > 0 ? compare_bool(hi, PyTuple_GET_ITEM(self->arg, 2), Py_LE) : ok_lo;
    if (ok_hi == 0)
      PyErr_Format(PyExc_ValueError, "bind %R not in range [%R, %R]", val, PyTuple_GET_ITEM(self->arg, 1), PyTuple_GET_ITEM(self->arg, 2));
    else if (ok_hi > 0) ret = uop_new2(OP_BIND, self->dtype, self, uval, NULL);
  }
  Py_DECREF(uval);
  return ret;
}
static PyObject *UOp_bind(UOp *self, PyObject *val) { return (PyObject *)uop_bind(self, val); }

PyObject *uop_unbind(UOp *self) {
  if (self->op != OP_BIND || self->nsrc != 2 || self->src[0]->op != OP_DEFINE_VAR || self->src[1]->op != OP_CONST)
    return PyErr_Format(PyExc_ValueError, "can't unbind %S", ops_members[self->op]);
  return PyTuple_Pack(2, (PyObject *)self->src[0], self->src[1]->arg);
}
static PyObject *UOp_unbind(UOp *self, PyObject *unused) { UNUSED(unused); return uop_unbind(self); }
static PyObject *UOp_val(UOp *self, void *c) {
  UNUSED(c);
  PyObject *t = uop_unbind(self), *ret = t ? Py_NewRef(PyTuple_GET_ITEM(t, 1)) : NULL;
  Py_XDECREF(t);
  return ret;
}

/* vars(): the bound variables (BINDs) and the unbound DEFINE_VARs */
static PyObject *UOp_vars(UOp *self, PyObject *unused) {
  UNUSED(unused);
  PyObject *order = uop_toposort_list(self, NULL), *ret = PySet_New(NULL), *bound_base = PySet_New(NULL);
  if (!order || !ret || !bound_base) goto fail;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order); i++) {
    UOp *u = (UOp *)PyList_GET_ITEM(order, i);
    if (u->op == OP_BIND && u->nsrc >= 1 && u->src[0]->op == OP_DEFINE_VAR)
      if (PySet_Add(ret, (PyObject *)u) < 0 || PySet_Add(bound_base, (PyObject *)u->src[0]) < 0) goto fail;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order); i++) {
    PyObject *u = PyList_GET_ITEM(order, i);
    if (((UOp *)u)->op == OP_DEFINE_VAR && PySet_Contains(bound_base, u) == 0 && PySet_Add(ret, u) < 0) goto fail;
  }
  Py_DECREF(order); Py_DECREF(bound_base);
  return ret;
fail:
  Py_XDECREF(order); Py_XDECREF(ret); Py_XDECREF(bound_base);
  return NULL;
}

/* variables(): the DEFINE_VARs, sorted by their arg */
static PyObject *UOp_variables(UOp *self, PyObject *unused) {
  UNUSED(unused);
  PyObject *vars = UOp_vars(self, NULL), *uniq = vars ? PySet_New(NULL) : NULL, *list = NULL;
  PyObject *it = uniq ? PyObject_GetIter(vars) : NULL, *v;
  while (it && (v = PyIter_Next(it))) {
    PyObject *var = ((UOp *)v)->op == OP_DEFINE_VAR ? v : (PyObject *)((UOp *)v)->src[0];
    int rc = PySet_Add(uniq, var);
    Py_DECREF(v);
    if (rc < 0) break;
  }
  if (it && !PyErr_Occurred() && (list = PySequence_List(uniq))) {
    /* sort by arg: decorate with (arg, index) pairs, sort, undecorate */
    Py_ssize_t n = PyList_GET_SIZE(list);
    PyObject *dec = PyList_New(n);
    for (Py_ssize_t i = 0; dec && i < n; i++)
      PyList_SET_ITEM(dec, i, Py_BuildValue("(On)", ((UOp *)PyList_GET_ITEM(list, i))->arg, i));
    if (dec && PyList_Sort(dec) == 0) {
      PyObject *sorted = PyList_New(n);
      for (Py_ssize_t i = 0; sorted && i < n; i++) {
        Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(PyList_GET_ITEM(dec, i), 1));
        PyList_SET_ITEM(sorted, i, Py_NewRef(PyList_GET_ITEM(list, k)));
      }
      Py_SETREF(list, sorted);
    } else Py_CLEAR(list);
    Py_XDECREF(dec);
  }
  Py_XDECREF(it); Py_XDECREF(uniq); Py_XDECREF(vars);
  return list;
}

/* ---- evaluation ---- */

/* One node's value from its sources' values (Python numbers), as tinygrad's renderer_infer would
 * compute it: cdiv/cmod for IDIV/MOD, Python operators otherwise. New reference. */
static PyObject *eval_node(UOp *u, PyObject **v, PyObject *var_vals) {
  switch (u->op) {
  case OP_CONST: return Py_NewRef(u->arg);
  case OP_DEFINE_VAR: {
    PyObject *name = PyTuple_Check(u->arg) ? PyTuple_GET_ITEM(u->arg, 0) : u->arg, *val = PyDict_GetItemWithError(var_vals, name);
    if (!val && !PyErr_Occurred()) PyErr_Format(PyExc_KeyError, "sym_infer: no value for variable %R", name);
    return Py_XNewRef(val);
  }
  case OP_BIND: return Py_NewRef(v[0]);
  case OP_ADD: return PyNumber_Add(v[0], v[1]);
  case OP_SUB: return PyNumber_Subtract(v[0], v[1]);
  case OP_MUL: return PyNumber_Multiply(v[0], v[1]);
  case OP_IDIV: return py_cdiv(v[0], v[1]);
  case OP_MOD: return py_cmod(v[0], v[1]);
  case OP_MAX: return py_max(v, 2);
  case OP_CMPLT: return PyObject_RichCompare(v[0], v[1], Py_LT);
  case OP_CMPNE: return PyObject_RichCompare(v[0], v[1], Py_NE);
  case OP_CMPEQ: return PyObject_RichCompare(v[0], v[1], Py_EQ);
  case OP_AND: return PyNumber_And(v[0], v[1]);
  case OP_OR: return PyNumber_Or(v[0], v[1]);
  case OP_XOR: return PyNumber_Xor(v[0], v[1]);
  case OP_SHL: return PyNumber_Lshift(v[0], v[1]);
  case OP_SHR: return PyNumber_Rshift(v[0], v[1]);
  case OP_NEG: return PyNumber_Negative(v[0]);
  case OP_WHERE: {
    int t = PyObject_IsTrue(v[0]);
    return t < 0 ? NULL : Py_NewRef(t ? v[1] : v[2]);
  }
  case OP_CAST:
    if (dtype_is_bool(u->dtype)) return PyBool_FromLong(PyObject_IsTrue(v[0]));
    return dtype_is_float(u->dtype) ? PyNumber_Float(v[0]) : PyNumber_Long(v[0]);
  default: return PyErr_Format(PyExc_ValueError, "sym_infer can't evaluate %S", ops_members[u->op]);
  }
}

static PyObject *uop_eval(UOp *self, PyObject *var_vals) {
  if (uop_check_form(self, "sym_infer") < 0) return NULL;
  PtrVec order = {0};   /* owns the values */
  PtrMap values = {0};
  PyObject *ret = NULL, *args[3] = {NULL, NULL, NULL};
  PyObject *order_list = uop_toposort_list(self, NULL);
  if (!order_list) return NULL;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order_list); i++) {
    UOp *u = (UOp *)PyList_GET_ITEM(order_list, i);
    int n = u->nsrc < 3 ? u->nsrc : 3;
    for (int s = 0; s < n; s++) args[s] = ptrmap_get(&values, u->src[s]);
    PyObject *val = eval_node(u, args, var_vals);
    if (!val || ptrmap_set(&values, u, val) < 0 || ptrvec_push(&order, val) < 0) { Py_XDECREF(val); goto end; }
  }
  ret = Py_NewRef(ptrmap_get(&values, self));
end:
  for (Py_ssize_t i = 0; i < order.len; i++) Py_DECREF((PyObject *)order.items[i]);
  ptrvec_free(&order); ptrmap_free(&values);
  Py_DECREF(order_list);
  return ret;
}

PyObject *uop_sym_infer(UOp *self, PyObject *var_vals) {
  if (!PyDict_Check(var_vals)) return PyErr_Format(PyExc_TypeError, "sym_infer needs a dict of variable values");
  return uop_eval(self, var_vals);
}
static PyObject *UOp_sym_infer(UOp *self, PyObject *var_vals) { return uop_sym_infer(self, var_vals); }

/* _eval: the single value of the simplified node, when its bounds meet */
static PyObject *eval_single(UOp *self, bool (*dtype_ok)(DType *), PyTypeObject *want, const char *what) {
  if (!dtype_ok(self->dtype)) return PyErr_Format(PyExc_TypeError, "eval with wrong dtype: %s of %R", what, (PyObject *)self->dtype);
  UOp *s = uop_simplify(self);
  PyObject *lo, *hi, *ret = NULL;
  if (!s || uop_min_max(s, &lo, &hi) < 0) goto end;
  int eq = compare_bool(lo, hi, Py_EQ);
  if (eq < 0) goto end;
  if (!eq) {   /* the message names the simplified node, rendered */
    PyObject *r = uop_render(s, true);
    if (r) { PyErr_Format(PyExc_ValueError, "eval failed to be a single number, range is %S to %S in %S", lo, hi, r); Py_DECREF(r); }
  }
  else if (!PyObject_TypeCheck(lo, want)) PyErr_Format(PyExc_TypeError, "vmin is wrong type %.100s", Py_TYPE(lo)->tp_name);
  else ret = Py_NewRef(lo);
end:
  Py_XDECREF(s);
  return ret;
}
static bool is_bool_dtype(DType *dt) { return dt == DTYPE(BOOL); }
static bool is_int_dtype(DType *dt) { return dtype_is_int(dt) && dt != DTYPE(INDEX) && dt->count == 1; }
static bool is_float_dtype(DType *dt) { return dtype_is_float(dt) && dt->count == 1; }

int uop_bool(UOp *self) {
  PyObject *v = eval_single(self, is_bool_dtype, &PyBool_Type, "bool");
  int t = v ? PyObject_IsTrue(v) : -1;
  Py_XDECREF(v);
  return t;
}
PyObject *uop_int(UOp *self) { return eval_single(self, is_int_dtype, &PyLong_Type, "int"); }
PyObject *uop_float(UOp *self) { return eval_single(self, is_float_dtype, &PyFloat_Type, "float"); }

static PyObject *UOp_sintify(UOp *self, PyObject *unused) {
  UNUSED(unused);
  return Py_NewRef(self->op == OP_CONST ? self->arg : (PyObject *)self);
}

/* ---------------------------------------------------------------------------------------------- */
/* UOp.ranges (tinygrad/uop/ops.py _ranges / ranges / ended_ranges), memoized per call            */
/* ---------------------------------------------------------------------------------------------- */

/* range_start: the first source that is an ended range, -1 for ops that end none */
int uop_range_start(Op op) {
  switch (op) {
  case OP_BUFFERIZE: case OP_REDUCE: case OP_END: return 1;
  case OP_STORE: return 2;
  case OP_WMMA: return 3;
  default: return -1;
  }
}

/* u.ended_ranges, appended to out (AFTER collects those of its sources after the first) */
static int ended_ranges(UOp *u, PtrVec *out) {
  PtrVec stack = {0};
  int rc = ptrvec_push(&stack, u);
  while (rc == 0 && stack.len) {
    UOp *n = ptrvec_pop(&stack);
    int start = uop_range_start(n->op);
    if (start >= 0) {
      for (int k = start; k < n->nsrc && rc == 0; k++) rc = ptrvec_push(out, n->src[k]);
    } else if (n->op == OP_AFTER) {
      for (int k = n->nsrc - 1; k >= 1 && rc == 0; k--) rc = ptrvec_push(&stack, n->src[k]);
    }
  }
  ptrvec_free(&stack);
  return rc;
}

/* The memo maps a node to its `ranges` dict (owned). */
void uop_ranges_memo_free(PtrMap *memo) {
  for (size_t k = 0; k < memo->cap; k++)
    if (memo->keys[k]) Py_XDECREF((PyObject *)memo->vals[k]);
  ptrmap_free(memo);
}

static int del_if_present(PyObject *d, PyObject *key) {
  int has = PyDict_Contains(d, key);
  return has <= 0 ? has : PyDict_DelItem(d, key);
}

/* u.ranges, given that every source's ranges are in the memo (uop_ranges is below): the union of the sources' ranges, less
 * the ranges u ends (a RANGE itself, or all the ranges of anything else), and u first if a RANGE. */
static PyObject *node_ranges(UOp *u, PtrMap *memo) {
  PyObject *ret = PyDict_New();
  PtrVec ended = {0};
  for (int k = 0; ret && k < u->nsrc; k++)
    if (PyDict_Update(ret, ptrmap_get(memo, u->src[k])) < 0) Py_CLEAR(ret);
  if (ret && ended_ranges(u, &ended) < 0) Py_CLEAR(ret);
  for (Py_ssize_t k = 0; ret && k < ended.len; k++) {
    UOp *er = ended.items[k];
    if (er->op == OP_RANGE) {
      if (del_if_present(ret, (PyObject *)er) < 0) Py_CLEAR(ret);
      continue;
    }
    PyObject *inner = uop_ranges(er, memo), *key, *val;
    Py_ssize_t pos = 0;
    if (!inner) Py_CLEAR(ret);
    while (ret && PyDict_Next(inner, &pos, &key, &val))
      if (del_if_present(ret, key) < 0) Py_CLEAR(ret);
  }
  ptrvec_free(&ended);
  if (ret && u->op == OP_RANGE) {   /* {self: None} | self._ranges */
    PyObject *with_self = PyDict_New();
    if (!with_self || PyDict_SetItem(with_self, (PyObject *)u, Py_None) < 0 || PyDict_Update(with_self, ret) < 0) Py_CLEAR(with_self);
    Py_SETREF(ret, with_self);
  }
  return ret;
}

/* root.ranges (borrowed from the memo): a post-order walk over the nodes not yet memoized */
PyObject *uop_ranges(UOp *root, PtrMap *memo) {
  if (uop_check_form(root, "ranges") < 0) return NULL;
  PyObject *done = ptrmap_get(memo, root);
  if (done) return done;
  PtrVec stack = {0};
  int rc = ptrvec_push(&stack, root);
  while (rc == 0 && stack.len) {
    uintptr_t entry = (uintptr_t)ptrvec_pop(&stack);
    UOp *node = (UOp *)(entry & ~(uintptr_t)1);
    if (ptrmap_has(memo, node)) continue;
    if (!(entry & 1)) {   /* first visit: the sources first */
      rc = ptrvec_push(&stack, (void *)((uintptr_t)node | 1));
      for (int k = node->nsrc - 1; k >= 0 && rc == 0; k--)
        if (!ptrmap_has(memo, node->src[k])) rc = ptrvec_push(&stack, node->src[k]);
      continue;
    }
    PyObject *r = node_ranges(node, memo);
    if (!r || ptrmap_set(memo, node, r) < 0) { Py_XDECREF(r); rc = -1; }
  }
  ptrvec_free(&stack);
  return rc == 0 ? ptrmap_get(memo, root) : NULL;
}

/* u.ranges as a dict; tinyc._C.uop_ranges(u) and the UOp.ranges property */
PyObject *py_uop_ranges(PyObject *mod, PyObject *u) {
  UNUSED(mod);
  if (!UOp_Check(u)) return PyErr_Format(PyExc_TypeError, "uop_ranges needs a UOp");
  PtrMap memo = {0};
  PyObject *r = uop_ranges((UOp *)u, &memo), *ret = r ? PyDict_Copy(r) : NULL;
  uop_ranges_memo_free(&memo);
  return ret;
}
static PyObject *UOp_ranges(UOp *self, void *c) { UNUSED(c); return py_uop_ranges(NULL, (PyObject *)self); }

static PyObject *UOp_shape_(UOp *self, void *c);
static PyObject *UOp_shape(UOp *self, void *c);

PyGetSetDef uop_range_getset[] = {
  {"vmin", (getter)UOp_vmin, NULL, "lower bound of the value", NULL},
  {"vmax", (getter)UOp_vmax, NULL, "upper bound of the value", NULL},
  {"_min_max", (getter)UOp_min_max_, NULL, NULL, NULL},
  {"expr", (getter)UOp_expr, NULL, "a variable's name", NULL},
  {"val", (getter)UOp_val, NULL, "a bound variable's value", NULL},
  {"_shape", (getter)UOp_shape_, NULL, "the shape, or None", NULL},
  {"shape", (getter)UOp_shape, NULL, "the shape", NULL},
  {"ranges", (getter)UOp_ranges, NULL, "the RANGEs this node is inside of", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

PyMethodDef uop_range_methods[] = {
  {"const_factor", (PyCFunction)UOp_const_factor, METH_NOARGS, "largest known int that divides self"},
  {"divides", (PyCFunction)UOp_divides, METH_O, NULL},
  {"pop_const", (PyCFunction)(void (*)(void))UOp_pop_const, METH_VARARGS | METH_KEYWORDS, NULL},
  {"divide_exact", (PyCFunction)UOp_divide_exact, METH_O, "u.divide_exact(v): u / v when v surely divides u, else None"},
  {"gcd", (PyCFunction)UOp_gcd, METH_VARARGS | METH_STATIC, NULL},
  {"split_uop", (PyCFunction)UOp_split_uop, METH_O, NULL},
  {"sum", (PyCFunction)UOp_sum, METH_VARARGS, NULL},
  {"prod", (PyCFunction)UOp_prod, METH_VARARGS, NULL},
  {"is_increasing", (PyCFunction)UOp_is_increasing, METH_NOARGS, NULL},
  {"overflows", (PyCFunction)UOp_overflows, METH_O, NULL},
  {"bind", (PyCFunction)UOp_bind, METH_O, NULL},
  {"unbind", (PyCFunction)UOp_unbind, METH_NOARGS, NULL},
  {"vars", (PyCFunction)UOp_vars, METH_NOARGS, NULL},
  {"variables", (PyCFunction)UOp_variables, METH_NOARGS, NULL},
  {"sym_infer", (PyCFunction)UOp_sym_infer, METH_O, NULL},
  {"sintify", (PyCFunction)UOp_sintify, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL},
};

static PyMethodDef range_functions[] = {
  {"uop_ranges", py_uop_ranges, METH_O, "uop_ranges(u): tinygrad's u.ranges (the RANGEs u is inside of)"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_uop_range(PyObject *m) {
  if (PyModule_AddFunctions(m, range_functions) < 0) return -1;
  PyObject *math = PyImport_ImportModule("math");
  if (!math) return -1;
  math_gcd = getattr_literal(math, "gcd");
  Py_DECREF(math);
  return math_gcd ? 0 : -1;
}

/* ---- shape (tinygrad's _shape); the movement ops' cases are in ops_movement.c ---- */

/* One node's shape from its sources' shapes (borrowed from the map; Py_None for no shape). New ref. */
static PyObject *node_shape(UOp *u, PtrMap *shapes) {
  switch (u->op) {
  case OP_INDEX: {   /* a pointer index not indexing every axis keeps the rest */
    PyObject *s0 = ptrmap_get(shapes, u->src[0]);
    if (!u->dtype->is_ptr || s0 == Py_None || u->nsrc - 1 == PyTuple_GET_SIZE(s0)) Py_RETURN_NONE;
    return PyTuple_GetSlice(s0, u->nsrc - 1, PyTuple_GET_SIZE(s0));
  }
  case OP_CONST: case OP_DEFINE_VAR: case OP_BIND: {
    PyObject *dev = uop_device(u);
    if (!dev) return NULL;
    int none = dev == Py_None;
    Py_DECREF(dev);
    return none ? Py_NewRef(Py_None) : PyTuple_New(0);
  }
  case OP_BUFFER: return PyTuple_Pack(1, u->arg);
  case OP_DEFINE_GLOBAL: case OP_DEFINE_LOCAL: case OP_DEFINE_REG:
    if (!u->dtype->is_ptr) return PyErr_Format(PyExc_RuntimeError, "ptrdtype called on UOp with type %R", (PyObject *)u->dtype);
    return Py_BuildValue("(n)", u->dtype->size);
  case OP_REDUCE: case OP_MSTACK: case OP_MSELECT: case OP_DETACH: case OP_CONTIGUOUS: case OP_CONTIGUOUS_BACKWARD:
  case OP_AFTER: case OP_END:
    return Py_NewRef(u->nsrc ? (PyObject *)ptrmap_get(shapes, u->src[0]) : Py_None);
  case OP_BITCAST: {   /* a bitcast to a different itemsize rescales the last axis */
    PyObject *s0 = u->nsrc ? ptrmap_get(shapes, u->src[0]) : Py_None;
    int out_sz = dtype_itemsize(u->dtype), in_sz = u->nsrc ? dtype_itemsize(u->src[0]->dtype) : out_sz;
    if (s0 == Py_None || out_sz == in_sz || !PyTuple_GET_SIZE(s0)) return Py_NewRef(s0);
    Py_ssize_t n = PyTuple_GET_SIZE(s0);
    PyObject *last = PyTuple_GET_ITEM(s0, n - 1), *in = PyLong_FromLong(in_sz), *out = PyLong_FromLong(out_sz);
    PyObject *scaled = in ? PyNumber_Multiply(last, in) : NULL, *div = scaled && out ? PyNumber_FloorDivide(scaled, out) : NULL;
    PyObject *ret = div ? PyTuple_GetSlice(s0, 0, n - 1) : NULL, *tail = div ? PyTuple_Pack(1, div) : NULL;
    if (ret && tail) Py_SETREF(ret, PySequence_Concat(ret, tail));
    else Py_CLEAR(ret);
    Py_XDECREF(in); Py_XDECREF(out); Py_XDECREF(scaled); Py_XDECREF(div); Py_XDECREF(tail);
    return ret;
  }
  default: break;
  }
  PyObject *mshape;
  int mv = movement_shape(u, u->nsrc ? ptrmap_get(shapes, u->src[0]) : Py_None, &mshape);
  if (mv != 0) return mv < 0 ? NULL : mshape;
  bool elementwise = IN_GROUP(u->op, ALU) || u->op == OP_CAST || u->op == OP_COPY || u->op == OP_ASSIGN || u->op == OP_NOOP ||
                     u->op == OP_GROUP || u->op == OP_SINK || u->op == OP_ALLREDUCE || u->op == OP_STORE;
  if (!elementwise) {
    static const Op shapeless[] = {OP_UNIQUE, OP_LUNIQUE, OP_DEVICE, OP_RANGE, OP_LOAD, OP_IF, OP_BARRIER, OP_CUSTOM, OP_CUSTOMI,
      OP_VECTORIZE, OP_VCONST, OP_GEP, OP_SPECIAL, OP_UNROLL, OP_CONTRACT, OP_CUSTOM_KERNEL, OP_LINEAR, OP_PROGRAM, OP_SOURCE, OP_BINARY};
    for (size_t i = 0; i < sizeof(shapeless) / sizeof(shapeless[0]); i++)
      if (u->op == shapeless[i]) Py_RETURN_NONE;
    return PyErr_Format(PyExc_NotImplementedError, "no shape handling for %U with %R", ops_str[u->op], (PyObject *)u->dtype);
  }
  /* elementwise: every source with a shape has the same one (ASSIGN looks at its first two) */
  PyObject *shape = Py_None;
  int n = u->op == OP_ASSIGN && u->nsrc > 2 ? 2 : u->nsrc;
  for (int i = 0; i < n; i++) {
    PyObject *s = ptrmap_get(shapes, u->src[i]);
    if (s == Py_None) continue;
    if (shape == Py_None) { shape = s; continue; }
    int eq = compare_bool(shape, s, Py_EQ);
    if (eq <= 0) return eq < 0 ? NULL : PyErr_Format(PyExc_RuntimeError, "shape mismatch at %U: %R and %R", ops_str[u->op], shape, s);
  }
  return Py_NewRef(shape);
}

/* _shape: bottom up over the backward slice */
static PyObject *UOp_shape_(UOp *self, void *c) {
  UNUSED(c);
  if (uop_check_form(self, "shape") < 0) return NULL;
  PyObject *order = uop_toposort_list(self, NULL), *ret = NULL;
  PtrMap shapes = {0};
  for (Py_ssize_t i = 0; order && i < PyList_GET_SIZE(order); i++) {
    UOp *u = (UOp *)PyList_GET_ITEM(order, i);
    PyObject *s = node_shape(u, &shapes);
    if (!s || ptrmap_set(&shapes, u, s) < 0) { Py_XDECREF(s); goto end; }
  }
  if (order) ret = Py_NewRef((PyObject *)ptrmap_get(&shapes, self));
end:
  for (size_t i = 0; i < shapes.cap; i++) if (shapes.keys[i]) Py_DECREF((PyObject *)shapes.vals[i]);
  ptrmap_free(&shapes);
  Py_XDECREF(order);
  return ret;
}

PyObject *uop_shape_opt(UOp *u) { return UOp_shape_(u, NULL); }
PyObject *uop_shape_req(UOp *u) { return UOp_shape(u, NULL); }

static PyObject *UOp_shape(UOp *self, void *c) {
  PyObject *s = UOp_shape_(self, c);
  if (s != Py_None) return s;
  Py_DECREF(s);
  return PyErr_Format(PyExc_RuntimeError, "shape requested, but %U doesn't have a shape", ops_str[self->op]);
}
