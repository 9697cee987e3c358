/* The movement-op part of tinygrad/uop/ops.py: the shape a movement op gives (_shape's movement cases),
 * marg (a movement op's argument read back from its sources), _mop (building one, checked through its
 * shape), forced_reshape, pad, base and rtag. The user-facing reshape/expand/permute/... are in
 * csrc/mixin/movement.c. Where tinygrad compares or multiplies sints, these use Python's operators, so
 * ints and symbolic UOps behave as in tinygrad (UOp != gives a CMPNE node whose truth is evaluated). */
#include "uop.h"
#include "ops_movement.h"

static PyObject *fn_resolve, *fn_ssimplify, *fn_zip, *fn_sorted;   /* owned */

/* ---- small Python-level helpers (new references, NULL propagates) ---- */

/* resolve(a <cmp> b) as a C truth value: 1, 0, -1 on error */
static int resolve_cmp(PyObject *a, PyObject *b, int cmp) {
  PyObject *c = PyObject_RichCompare(a, b, cmp);
  if (!c) return -1;
  PyObject *r = PyObject_CallOneArg(fn_resolve, c);
  Py_DECREF(c);
  if (!r) return -1;
  int t = PyObject_IsTrue(r);
  Py_DECREF(r);
  return t;
}

/* bool(a <cmp> b), as Python's `if a <cmp> b` */
static int truth_cmp(PyObject *a, PyObject *b, int cmp) {
  PyObject *c = PyObject_RichCompare(a, b, cmp);
  if (!c) return -1;
  int t = PyObject_IsTrue(c);
  Py_DECREF(c);
  return t;
}

static PyObject *ssimplify(PyObject *x) {
  if (!x) return NULL;
  PyObject *r = PyObject_CallOneArg(fn_ssimplify, x);
  Py_DECREF(x);
  return r;
}

/* ---- marg ---- */

/* like gep, but may give back an int (tinygrad's sgep) */
static PyObject *sgep(UOp *u, Py_ssize_t i) {
  switch (u->op) {
  case OP_CONST: return Py_NewRef(u->arg);
  case OP_VCONST: return PySequence_GetItem(u->arg, i);
  case OP_VECTORIZE:
    if (i >= u->nsrc) return PyErr_Format(PyExc_IndexError, "tuple index out of range");
    return Py_NewRef(u->src[i]->op == OP_CONST ? u->src[i]->arg : (PyObject *)u->src[i]);
  default: return PyErr_Format(PyExc_RuntimeError, "no sgep on %U", ops_str[u->op]);
  }
}

static UOp *mop_src(UOp *u, int i) {
  if (i >= (int)u->nsrc) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); return NULL; }
  return u->src[i];
}

PyObject *uop_marg(UOp *u) {
  switch (u->op) {
  case OP_RESHAPE: case OP_EXPAND: {
    UOp *s = mop_src(u, 1);
    if (!s) return NULL;
    PyObject *t = PyTuple_New(s->dtype->count);
    for (int i = 0; t && i < s->dtype->count; i++) {
      PyObject *v = sgep(s, i);
      if (!v) { Py_CLEAR(t); break; }
      PyTuple_SET_ITEM(t, i, v);
    }
    return t;
  }
  case OP_PAD: case OP_SHRINK: {
    UOp *s1 = mop_src(u, 1), *s2 = s1 ? mop_src(u, 2) : NULL;
    if (!s2) return NULL;
    PyObject *t = PyTuple_New(s1->dtype->count);
    for (int i = 0; t && i < s1->dtype->count; i++) {
      PyObject *a = sgep(s1, i), *b = a ? sgep(s2, i) : NULL, *p = b ? PyTuple_Pack(2, a, b) : NULL;
      Py_XDECREF(a); Py_XDECREF(b);
      if (!p) { Py_CLEAR(t); break; }
      PyTuple_SET_ITEM(t, i, p);
    }
    return t;
  }
  case OP_PERMUTE: case OP_FLIP: return Py_NewRef(u->arg);
  default: return PyErr_Format(PyExc_RuntimeError, "%U is not a MovementOp", ops_str[u->op]);
  }
}

/* ---- the shape of a movement op (and the other ops whose shape comes from an arg) ---- */

static PyObject *value_error(const char *fmt, ...) {
  va_list va;
  va_start(va, fmt);
  PyErr_FormatV(PyExc_ValueError, fmt, va);
  va_end(va);
  return NULL;
}

/* RESHAPE: sizes are non-negative and their product does not change */
static PyObject *reshape_shape(UOp *u, PyObject *ps, PyObject *marg) {
  PyObject *zero = PyLong_FromLong(0);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(marg); i++) {
    int t = truth_cmp(PyTuple_GET_ITEM(marg, i), zero, Py_GE);
    if (t < 0) { Py_DECREF(zero); return NULL; }
    if (!t) { Py_DECREF(zero); return value_error("shape can't contain negative numbers %S", marg); }
  }
  Py_DECREF(zero);
  PyObject *a = sint_prod(ps), *b = a ? sint_prod(marg) : NULL;
  int ne = b ? truth_cmp(a, b, Py_NE) : -1;
  Py_XDECREF(a); Py_XDECREF(b);
  if (ne < 0) return NULL;
  if (ne) return value_error("bad reshape: %S -> %S", ps, marg);
  UNUSED(u);
  return Py_NewRef(marg);
}

static PyObject *expand_shape(PyObject *ps, PyObject *marg) {
  bool bad = PyTuple_GET_SIZE(ps) != PyTuple_GET_SIZE(marg);
  PyObject *one = PyLong_FromLong(1), *zero = PyLong_FromLong(0);
  for (Py_ssize_t i = 0; !bad && i < PyTuple_GET_SIZE(ps); i++) {
    PyObject *s = PyTuple_GET_ITEM(ps, i), *ns = PyTuple_GET_ITEM(marg, i);
    int t = truth_cmp(s, ns, Py_EQ);
    if (t == 0) { t = truth_cmp(s, one, Py_EQ); if (t > 0) t = truth_cmp(ns, zero, Py_GE); }
    if (t < 0) { Py_DECREF(one); Py_DECREF(zero); return NULL; }
    bad = !t;
  }
  Py_DECREF(one); Py_DECREF(zero);
  if (bad) return value_error("bad expand: %S -> %S", ps, marg);
  return Py_NewRef(marg);
}

static PyObject *permute_shape(PyObject *ps, PyObject *marg) {
  PyObject *srt = PyObject_CallOneArg(fn_sorted, marg);
  if (!srt) return NULL;
  PyObject *rng = PyList_New(PyTuple_GET_SIZE(ps));
  for (Py_ssize_t i = 0; rng && i < PyTuple_GET_SIZE(ps); i++) PyList_SET_ITEM(rng, i, PyLong_FromSsize_t(i));
  int ne = rng ? PyObject_RichCompareBool(srt, rng, Py_NE) : -1;
  Py_DECREF(srt); Py_XDECREF(rng);
  if (ne < 0) return NULL;
  if (ne) return value_error("invalid permutation %S of len %zd", marg, PyTuple_GET_SIZE(ps));
  Py_ssize_t n = PySequence_Length(marg);
  PyObject *t = n >= 0 ? PyTuple_New(n) : NULL;
  for (Py_ssize_t i = 0; t && i < n; i++) {
    PyObject *k = PySequence_GetItem(marg, i), *v = k ? PyObject_GetItem(ps, k) : NULL;
    Py_XDECREF(k);
    if (!v) { Py_CLEAR(t); break; }
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

/* unpack a (b, e) pair of marg */
static int pair(PyObject *p, PyObject **b, PyObject **e) {
  if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 2) { PyErr_SetString(PyExc_ValueError, "expected a (begin, end) pair"); return -1; }
  *b = PyTuple_GET_ITEM(p, 0); *e = PyTuple_GET_ITEM(p, 1);
  return 0;
}

static PyObject *pad_shape(PyObject *ps, PyObject *marg) {
  bool bad = PyTuple_GET_SIZE(ps) != PyTuple_GET_SIZE(marg);
  PyObject *zero = PyLong_FromLong(0), *b = NULL, *e = NULL;
  for (Py_ssize_t i = 0; !bad && i < PyTuple_GET_SIZE(marg); i++) {
    if (pair(PyTuple_GET_ITEM(marg, i), &b, &e) < 0) { Py_DECREF(zero); return NULL; }
    int t = resolve_cmp(b, zero, Py_GE);
    if (t > 0) t = resolve_cmp(e, zero, Py_GE);
    if (t < 0) { Py_DECREF(zero); return NULL; }
    bad = !t;
  }
  Py_DECREF(zero);
  if (bad) return value_error("invalid pad %S", marg);
  PyObject *t = PyTuple_New(PyTuple_GET_SIZE(ps));
  for (Py_ssize_t i = 0; t && i < PyTuple_GET_SIZE(ps); i++) {
    pair(PyTuple_GET_ITEM(marg, i), &b, &e);
    PyObject *sb = PyNumber_Add(PyTuple_GET_ITEM(ps, i), b), *v = sb ? ssimplify(PyNumber_Add(sb, e)) : NULL;
    Py_XDECREF(sb);
    if (!v) { Py_CLEAR(t); break; }
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

static PyObject *shrink_shape(PyObject *ps, PyObject *marg) {
  bool bad = PyTuple_GET_SIZE(ps) != PyTuple_GET_SIZE(marg);
  PyObject *zero = PyLong_FromLong(0), *b = NULL, *e = NULL;
  for (Py_ssize_t i = 0; !bad && i < PyTuple_GET_SIZE(marg); i++) {
    if (pair(PyTuple_GET_ITEM(marg, i), &b, &e) < 0) { Py_DECREF(zero); return NULL; }
    int t = resolve_cmp(zero, b, Py_LE);
    if (t > 0) t = resolve_cmp(b, e, Py_LE);
    if (t > 0) t = resolve_cmp(e, PyTuple_GET_ITEM(ps, i), Py_LE);
    if (t < 0) { Py_DECREF(zero); return NULL; }
    bad = !t;
  }
  Py_DECREF(zero);
  if (bad) return value_error("invalid shrink %S for %S", marg, ps);
  PyObject *t = PyTuple_New(PyTuple_GET_SIZE(marg));
  for (Py_ssize_t i = 0; t && i < PyTuple_GET_SIZE(marg); i++) {
    pair(PyTuple_GET_ITEM(marg, i), &b, &e);
    PyObject *v = ssimplify(PyNumber_Subtract(e, b));
    if (!v) { Py_CLEAR(t); break; }
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

static PyObject *flip_shape(PyObject *ps, PyObject *marg) {
  bool bad = !PyTuple_Check(marg) || PyTuple_GET_SIZE(ps) != PyTuple_GET_SIZE(marg);
  for (Py_ssize_t i = 0; !bad && i < PyTuple_GET_SIZE(marg); i++) bad = !PyBool_Check(PyTuple_GET_ITEM(marg, i));
  if (bad) return value_error("bad flip on %S, %S", ps, marg);
  return Py_NewRef(ps);
}

static PyObject *axis_shape(UOp *u, PyObject *ps) {
  Py_ssize_t at = u->op == OP_REDUCE_AXIS ? 1 : 7;
  PyObject *axis = PyTuple_Check(u->arg) && PyTuple_GET_SIZE(u->arg) > at ? PyTuple_GET_ITEM(u->arg, at) : NULL;
  if (!axis) return PyErr_Format(PyExc_IndexError, "tuple index out of range");
  bool bad = !PyTuple_Check(axis);
  for (Py_ssize_t i = 0; !bad && i < PyTuple_GET_SIZE(axis); i++) {
    PyObject *x = PyTuple_GET_ITEM(axis, i);
    if (!PyLong_Check(x)) { bad = true; break; }
    long long v = PyLong_AsLongLong(x);
    if (v == -1 && PyErr_Occurred()) return NULL;
    bad = v < 0 || v >= PyTuple_GET_SIZE(ps);
  }
  if (bad) return value_error("invalid type for axis: %S", axis);
  PyObject *t = PyTuple_New(PyTuple_GET_SIZE(ps));
  for (Py_ssize_t i = 0; t && i < PyTuple_GET_SIZE(ps); i++) {
    PyObject *io = PyLong_FromSsize_t(i);
    int in = io ? PySequence_Contains(axis, io) : -1;
    Py_XDECREF(io);
    if (in < 0) { Py_CLEAR(t); break; }
    PyTuple_SET_ITEM(t, i, in ? PyLong_FromLong(1) : Py_NewRef(PyTuple_GET_ITEM(ps, i)));
  }
  return t;
}

static PyObject *multi_shape(UOp *u, PyObject *ps) {
  PyObject *dev = uop_device(u);
  if (!dev) return NULL;
  Py_ssize_t ndev = PySequence_Length(dev);
  Py_DECREF(dev);
  if (ndev < 0) return NULL;
  PyObject *t = PyTuple_New(PyTuple_GET_SIZE(ps));
  for (Py_ssize_t i = 0; t && i < PyTuple_GET_SIZE(ps); i++) {
    PyObject *io = PyLong_FromSsize_t(i), *s = PyTuple_GET_ITEM(ps, i), *v;
    int eq = io ? PyObject_RichCompareBool(io, u->arg, Py_EQ) : -1;
    Py_XDECREF(io);
    if (eq < 0) { Py_CLEAR(t); break; }
    if (eq) {
      PyObject *n = PyLong_FromSsize_t(ndev);
      v = n ? PyNumber_Multiply(s, n) : NULL;
      Py_XDECREF(n);
    } else v = Py_NewRef(s);
    if (!v) { Py_CLEAR(t); break; }
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

/* BUFFERIZE: the size of each range it closes */
static PyObject *bufferize_shape(UOp *u) {
  PyObject *t = PyTuple_New(u->nsrc ? u->nsrc - 1 : 0);
  for (int i = 1; t && i < (int)u->nsrc; i++) {
    PyObject *mn, *mx;
    if (uop_min_max(u->src[i], &mn, &mx) < 0) { Py_CLEAR(t); break; }
    PyObject *one = PyLong_FromLong(1), *s = one ? PyNumber_Add(mx, one) : NULL, *v = s ? PyNumber_Long(s) : NULL;
    Py_XDECREF(one); Py_XDECREF(s);
    if (!v) { Py_CLEAR(t); break; }
    PyTuple_SET_ITEM(t, i - 1, v);
  }
  return t;
}

/* a shape read from an arg (ENCDEC's, a KERNEL's ast): every user of a shape indexes it as a tuple, so anything else (a
 * str, a list, a number: tinygrad would index or measure it as it is, or raise) is refused here with a TypeError */
static int shape_from_arg(UOp *u, PyObject *shape, PyObject **out) {
  if (!shape) return -1;
  if (shape == Py_None || PyTuple_Check(shape)) { *out = shape; return 1; }
  PyErr_Format(PyExc_TypeError, "the shape of a %U must be a tuple, not %.100s", ops_str[u->op], Py_TYPE(shape)->tp_name);
  Py_DECREF(shape);
  return -1;
}

int movement_shape(UOp *u, PyObject *ps, PyObject **out) {
  *out = NULL;
  switch (u->op) {
  case OP_BUFFER_VIEW: case OP_ENCDEC: {
    PyObject *a = PySequence_GetItem(u->arg, 0);
    if (!a || u->op == OP_ENCDEC) return shape_from_arg(u, a, out);
    *out = PyTuple_Pack(1, a);
    Py_DECREF(a);
    return *out ? 1 : -1;
  }
  case OP_BUFFERIZE: return (*out = bufferize_shape(u)) ? 1 : -1;
  case OP_KERNEL: {
    PyObject *ast = getattr_literal(u->arg, "ast"), *shape = ast ? getattr_literal(ast, "_shape") : NULL;
    Py_XDECREF(ast);
    return shape_from_arg(u, shape, out);
  }
  default: break;
  }
  if (!IN_GROUP(u->op, Movement) && u->op != OP_MULTI && u->op != OP_REDUCE_AXIS && u->op != OP_WMMA) return 0;
  if (ps == Py_None) {
    if (u->op == OP_RESHAPE) return (*out = uop_marg(u)) ? 1 : -1;
    if (u->op == OP_WMMA) { *out = Py_NewRef(Py_None); return 1; }
    PyErr_Format(PyExc_RuntimeError, "movement op %U requires shape", ops_str[u->op]);
    return -1;
  }
  if (u->op == OP_MULTI) return (*out = multi_shape(u, ps)) ? 1 : -1;
  if (u->op == OP_REDUCE_AXIS || u->op == OP_WMMA) return (*out = axis_shape(u, ps)) ? 1 : -1;
  PyObject *marg = uop_marg(u);
  if (!marg) return -1;
  if (!PyTuple_Check(marg)) { Py_DECREF(marg); PyErr_Format(PyExc_TypeError, "%U arg must be a tuple", ops_str[u->op]); return -1; }
  switch (u->op) {
  case OP_RESHAPE: *out = reshape_shape(u, ps, marg); break;
  case OP_EXPAND: *out = expand_shape(ps, marg); break;
  case OP_PERMUTE: *out = permute_shape(ps, marg); break;
  case OP_PAD: *out = pad_shape(ps, marg); break;
  case OP_SHRINK: *out = shrink_shape(ps, marg); break;
  default: *out = flip_shape(ps, marg); break;
  }
  Py_DECREF(marg);
  return *out ? 1 : -1;
}

/* ---- _mop ---- */

/* one movement-op argument as a UOp: VECTORIZE of nothing, a (v)const of ints, or a VECTORIZE of sints */
static UOp *sint_vec(PyObject *arg) {
  PyObject *seq = PySequence_Tuple(arg);
  if (!seq) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  DType *idx = DTYPE(INDEX);
  UOp *ret = NULL;
  bool all_int = true;
  for (Py_ssize_t i = 0; i < n; i++) all_int &= PyLong_Check(PyTuple_GET_ITEM(seq, i));
  if (n == 0) ret = uop_new(OP_VECTORIZE, dtype_vec(idx, 0), NULL, 0, NULL, NULL);
  else if (all_int) ret = uop_const(n == 1 ? idx : dtype_vec(idx, (int)n), n == 1 ? PyTuple_GET_ITEM(seq, 0) : seq);
  else {
    UOp **src = PyMem_Calloc((size_t)n, sizeof(UOp *));
    Py_ssize_t k = 0;
    for (; src && k < n; k++) {
      PyObject *x = PyTuple_GET_ITEM(seq, k);
      if (PyLong_Check(x)) src[k] = uop_const(idx, x);
      else if (UOp_Check(x)) src[k] = (UOp *)Py_NewRef(x);
      else {   /* tinygrad fails on it as a UOp source, with this error */
        PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute 'src'", Py_TYPE(x)->tp_name);
        break;
      }
      if (!src[k]) break;
    }
    if (!src) PyErr_NoMemory();
    else if (k == n) ret = uop_new(OP_VECTORIZE, dtype_vec(idx, (int)n), src, n, NULL, NULL);
    for (Py_ssize_t i = 0; src && i < k; i++) Py_XDECREF(src[i]);
    PyMem_Free(src);
  }
  Py_DECREF(seq);
  return ret;
}

UOp *uop_mop(UOp *self, Op op, PyObject *arg, bool same_shape_noop) {
  PyObject *src_args = NULL;
  switch (op) {
  case OP_RESHAPE: case OP_EXPAND: src_args = PyTuple_Pack(1, arg); break;
  case OP_PAD: case OP_SHRINK: {
    PyObject *args = PySequence_Tuple(arg), *z = args ? PyObject_Call(fn_zip, args, NULL) : NULL;
    src_args = z ? PySequence_Tuple(z) : NULL;
    Py_XDECREF(args); Py_XDECREF(z);
    break;
  }
  case OP_PERMUTE: case OP_FLIP: src_args = PyTuple_New(0); break;
  default:
    PyErr_Format(PyExc_RuntimeError, "%U is not a MovementOp", op > 0 && op < OP_COUNT ? ops_str[op] : Py_None);
    return NULL;
  }
  if (!src_args) return NULL;
  UOp *ret = NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(src_args);
  if (n == 0) ret = uop_new(op, self->dtype, &self, 1, arg, NULL);
  else {
    UOp *usrcs[8] = {0};
    Py_ssize_t k = 0;
    if (n > 8) PyErr_SetString(PyExc_ValueError, "too many movement op arguments");
    else for (; k < n; k++) if (!(usrcs[k] = sint_vec(PyTuple_GET_ITEM(src_args, k)))) break;
    if (k == n) {
      UOp *sink = uop_new(OP_SINK, DTYPE(VOID), usrcs, n, NULL, NULL), *simp = sink ? uop_simplify(sink) : NULL;
      if (simp) {
        UOp *src[9] = {self};
        for (int i = 0; i < (int)simp->nsrc && i < 8; i++) src[i + 1] = simp->src[i];
        ret = uop_new(op, self->dtype, src, 1 + (simp->nsrc < 8 ? simp->nsrc : 8), NULL, NULL);
      }
      Py_XDECREF(sink); Py_XDECREF(simp);
    }
    for (Py_ssize_t i = 0; i < k; i++) Py_XDECREF(usrcs[i]);
  }
  Py_DECREF(src_args);
  if (!ret) return NULL;
  /* every movement op is checked through its shape */
  PyObject *rs = uop_shape_req(ret), *ss = rs ? uop_shape_req(self) : NULL;
  int eq = ss ? PyObject_RichCompareBool(rs, ss, Py_EQ) : -1;
  Py_XDECREF(rs); Py_XDECREF(ss);
  if (eq < 0) { Py_DECREF(ret); return NULL; }
  if (eq && same_shape_noop) { Py_DECREF(ret); return (UOp *)Py_NewRef(self); }
  return ret;
}

/* ---- Python methods ---- */

static PyObject *UOp_marg(UOp *self, void *c) { UNUSED(c); return uop_marg(self); }

static PyObject *UOp_base(UOp *self, void *c) {
  UNUSED(c);
  UOp *u = self;
  while (IN_GROUP(u->op, Movement) || u->op == OP_MULTI) {
    if (!u->nsrc) return PyErr_Format(PyExc_IndexError, "tuple index out of range");
    u = u->src[0];
  }
  return Py_NewRef((PyObject *)u);
}

static PyObject *UOp_mop(UOp *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"op", "arg", "same_shape_noop", NULL};
  PyObject *op_obj, *arg;
  int noop = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|p:_mop", kwlist, &op_obj, &arg, &noop)) return NULL;
  int op = op_from_object(op_obj);
  if (op < 0) return NULL;
  return (PyObject *)uop_mop(self, (Op)op, arg, noop);
}

static PyObject *UOp_forced_reshape(UOp *self, PyObject *arg) { return (PyObject *)uop_mop(self, OP_RESHAPE, arg, false); }
static PyObject *UOp_pad(UOp *self, PyObject *arg) { return (PyObject *)uop_mop(self, OP_PAD, arg, true); }

static PyObject *UOp_rtag(UOp *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"tag", NULL};
  PyObject *tag = Py_True;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:rtag", kwlist, &tag)) return NULL;
  return (PyObject *)uop_new(self->op, self->dtype, self->src, self->nsrc, self->arg, tag);
}

PyMethodDef uop_movement_methods[] = {
  {"_mop", (PyCFunction)(void (*)(void))UOp_mop, METH_VARARGS | METH_KEYWORDS, "_mop(op, arg, same_shape_noop=False): a movement op on self"},
  {"forced_reshape", (PyCFunction)UOp_forced_reshape, METH_O, "a RESHAPE even when the shape does not change"},
  {"pad", (PyCFunction)UOp_pad, METH_O, "pad(((begin, end), ...)): a PAD, self when the shape does not change"},
  {"rtag", (PyCFunction)(void (*)(void))UOp_rtag, METH_VARARGS | METH_KEYWORDS, "self with the tag replaced"},
  {NULL, NULL, 0, NULL},
};

PyGetSetDef uop_movement_getset[] = {
  {"marg", (getter)UOp_marg, NULL, "a movement op's argument", NULL},
  {"base", (getter)UOp_base, NULL, "the node under the movement ops", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

int tinyc_init_uop_movement(PyObject *m) {
  fn_resolve = getattr_literal(m, "resolve");
  fn_ssimplify = getattr_literal(m, "ssimplify");
  PyObject *bi = PyImport_ImportModule("builtins");
  if (bi) { fn_zip = getattr_literal(bi, "zip"); fn_sorted = getattr_literal(bi, "sorted"); Py_DECREF(bi); }
  return fn_resolve && fn_ssimplify && fn_zip && fn_sorted ? 0 : -1;
}
