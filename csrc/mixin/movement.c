/* tinygrad/mixin/movement.py: reshape, expand (_broadcast_to), shrink, permute and flip, which check and normalise
 * their arguments the way the mixin does and build the op with the type's _mop (for UOps csrc/uop/ops_movement.c);
 * plus ndim, numel and _resolve_dim. Sizes are sints compared with Python's operators, as the mixin does. */
#include "movement.h"

static MovementMixin impl;

void movement_mixin_init(const MovementMixin *i) { impl = *i; }

/* tinygrad's helpers.prod: 1 * x0 * x1 ... */
PyObject *sint_prod(PyObject *seq) {
  PyObject *acc = PyLong_FromLong(1), *it = acc ? PyObject_GetIter(seq) : NULL, *x;
  if (!it) { Py_XDECREF(acc); return NULL; }
  while (acc && (x = PyIter_Next(it))) {
    Py_SETREF(acc, PyNumber_Multiply(acc, x));
    Py_DECREF(x);
  }
  Py_DECREF(it);
  if (PyErr_Occurred()) Py_CLEAR(acc);
  return acc;
}

/* helpers.argfix: (shape,) or (*shape) as one tuple; the mixin's methods need at least the first argument */
static PyObject *argfix_named(PyObject *args, const char *method, const char *param) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n == 0) return PyErr_Format(PyExc_TypeError, "MovementMixin.%s() missing 1 required positional argument: '%s'", method, param);
  if (n && (PyTuple_CheckExact(PyTuple_GET_ITEM(args, 0)) || PyList_CheckExact(PyTuple_GET_ITEM(args, 0)))) {
    if (n != 1) return PyErr_Format(PyExc_ValueError, "bad arg %S", args);
    return PySequence_Tuple(PyTuple_GET_ITEM(args, 0));
  }
  return Py_NewRef(args);
}

static Py_ssize_t ndim(PyObject *self) {
  PyObject *s = impl.shape(self);
  if (!s) return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(s);
  Py_DECREF(s);
  return n;
}

static int eq_int(PyObject *a, long v) {
  PyObject *o = PyLong_FromLong(v);
  int r = o ? PyObject_RichCompareBool(a, o, Py_EQ) : -1;
  Py_XDECREF(o);
  return r;
}

/* self if ret's shape equals self's, else ret (steals ret) */
static PyObject *noop_if_same_shape(PyObject *self, PyObject *ret) {
  if (!ret) return NULL;
  PyObject *rs = impl.shape(ret), *ss = rs ? impl.shape(self) : NULL;
  int eq = ss ? PyObject_RichCompareBool(rs, ss, Py_EQ) : -1;
  Py_XDECREF(rs); Py_XDECREF(ss);
  if (eq < 0) { Py_DECREF(ret); return NULL; }
  if (eq) { Py_DECREF(ret); return Py_NewRef(self); }
  return ret;
}

/* _resolve_dim(dim, extra): a dim in range as a non-negative index */
static PyObject *resolve_dim(PyObject *self, PyObject *dim, bool extra) {
  Py_ssize_t nd = ndim(self);
  if (nd < 0) return NULL;
  long total = (long)nd + extra, hi = total > 1 ? total : 1;
  PyObject *lo_o = PyLong_FromLong(-hi), *hi_o = PyLong_FromLong(hi - 1);
  int ok = lo_o && hi_o ? PyObject_RichCompareBool(lo_o, dim, Py_LE) : -1;
  if (ok > 0) ok = PyObject_RichCompareBool(dim, hi_o, Py_LE);
  PyObject *ret = NULL;
  if (ok == 0) PyErr_Format(PyExc_IndexError, "dim=%R out of range [%ld, %ld]", dim, -hi, hi - 1);
  else if (ok > 0) {
    PyObject *zero = PyLong_FromLong(0);
    int neg = zero ? PyObject_RichCompareBool(dim, zero, Py_LT) : -1;
    Py_XDECREF(zero);
    if (neg > 0) {
      PyObject *t = PyLong_FromLong(total);
      ret = t ? PyNumber_Add(dim, t) : NULL;
      Py_XDECREF(t);
    } else if (neg == 0) ret = Py_NewRef(dim);
  }
  Py_XDECREF(lo_o); Py_XDECREF(hi_o);
  return ret;
}

static PyObject *mixin_resolve_dim(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"dim", "extra", NULL};
  PyObject *dim;
  int extra = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$p:_resolve_dim", kwlist, &dim, &extra)) return NULL;
  return resolve_dim(self, dim, extra);
}

static PyObject *mixin_ndim(PyObject *self, void *c) {
  UNUSED(c);
  Py_ssize_t n = ndim(self);
  return n < 0 ? NULL : PyLong_FromSsize_t(n);
}

static PyObject *mixin_numel(PyObject *self, PyObject *unused) {
  UNUSED(unused);
  PyObject *s = impl.shape(self), *r = s ? sint_prod(s) : NULL;
  Py_XDECREF(s);
  return r;
}

/* reshape(shape, *args): None keeps an axis, one -1 is inferred, the size must not change */
static PyObject *mixin_reshape(PyObject *self, PyObject *args) {
  PyObject *fixed = argfix_named(args, "reshape", "shape");
  if (!fixed) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(fixed);
  PyObject *shape = NULL, *new_shape = PyTuple_New(n), *ret = NULL, *a = NULL, *b = NULL;
  if (!new_shape) goto end;
  long minus = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *s = PyTuple_GET_ITEM(fixed, i);
    if (s == Py_None) {
      if (!shape && !(shape = impl.shape(self))) goto end;
      if (i >= PyTuple_GET_SIZE(shape)) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); goto end; }
      s = PyTuple_GET_ITEM(shape, i);
    }
    PyTuple_SET_ITEM(new_shape, i, Py_NewRef(s));
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    int e = eq_int(PyTuple_GET_ITEM(new_shape, i), -1);
    if (e < 0) goto end;
    minus += e;
  }
  if (minus > 1) { PyErr_Format(PyExc_RuntimeError, "only one dimension can be inferred using -1, getting %S", new_shape); goto end; }
  if (!shape && !(shape = impl.shape(self))) goto end;
  if (minus) {   /* -prod(shape) // prod(new_shape) */
    PyObject *ps = sint_prod(shape), *nps = ps ? PyNumber_Negative(ps) : NULL, *pn = nps ? sint_prod(new_shape) : NULL;
    PyObject *inferred = pn ? PyNumber_FloorDivide(nps, pn) : NULL;
    Py_XDECREF(ps); Py_XDECREF(nps); Py_XDECREF(pn);
    if (!inferred) goto end;
    for (Py_ssize_t i = 0; i < n; i++)
      if (eq_int(PyTuple_GET_ITEM(new_shape, i), -1) > 0) {
        Py_SETREF(((PyTupleObject *)new_shape)->ob_item[i], Py_NewRef(inferred));
      }
    Py_DECREF(inferred);
  }
  a = sint_prod(shape); b = a ? sint_prod(new_shape) : NULL;
  PyObject *ne_o = b ? PyObject_RichCompare(a, b, Py_NE) : NULL;
  int ne = ne_o ? PyObject_IsTrue(ne_o) : -1;
  Py_XDECREF(ne_o);
  if (ne < 0) goto end;
  if (ne) { PyErr_Format(PyExc_ValueError, "size mismatch, can't reshape (%S) -> (%S)", shape, new_shape); goto end; }
  ret = noop_if_same_shape(self, impl.mop(self, OP_RESHAPE, new_shape));
end:
  Py_DECREF(fixed); Py_XDECREF(shape); Py_XDECREF(new_shape); Py_XDECREF(a); Py_XDECREF(b);
  return ret;
}

/* _align_left(a, b) for two shapes: ones in front of the shorter */
static PyObject *align_left(PyObject *s, Py_ssize_t n) {
  Py_ssize_t k = PyTuple_GET_SIZE(s);
  PyObject *t = PyTuple_New(n);
  for (Py_ssize_t i = 0; t && i < n; i++)
    PyTuple_SET_ITEM(t, i, i < n - k ? PyLong_FromLong(1) : Py_NewRef(PyTuple_GET_ITEM(s, i - (n - k))));
  return t;
}

static PyObject *broadcast_to(PyObject *self, PyObject *new_shape) {
  PyObject *shape = impl.shape(self), *aligned = NULL, *ret = NULL;
  PyObject *reshaped = NULL;
  if (!shape) return NULL;
  int eq = PyObject_RichCompareBool(shape, new_shape, Py_EQ);
  if (eq) { ret = eq < 0 ? NULL : Py_NewRef(self); goto end; }
  Py_ssize_t n = PyTuple_GET_SIZE(new_shape);
  if (PyTuple_GET_SIZE(shape) > n) {
    PyErr_Format(PyExc_ValueError, "cannot broadcast tensor to fewer dimensions. shape=%S to new_shape=%S", shape, new_shape);
    goto end;
  }
  if (!(aligned = align_left(shape, n))) goto end;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *s = PyTuple_GET_ITEM(aligned, i);
    int ok = PyObject_RichCompareBool(s, PyTuple_GET_ITEM(new_shape, i), Py_EQ);
    if (ok == 0) ok = eq_int(s, 1);
    if (ok < 0) goto end;
    if (!ok) { PyErr_Format(PyExc_ValueError, "cannot broadcast %S to new_shape=%S", shape, new_shape); goto end; }
  }
  PyObject *rargs = PyTuple_Pack(1, aligned);
  reshaped = rargs ? mixin_reshape(self, rargs) : NULL;
  Py_XDECREF(rargs);
  if (!reshaped) goto end;
  PyObject *ex = impl.mop(reshaped, OP_EXPAND, new_shape);
  if (ex) {
    ret = noop_if_same_shape(reshaped, ex);
  }
end:
  Py_XDECREF(shape); Py_XDECREF(aligned); Py_XDECREF(reshaped);
  return ret;
}

static PyObject *mixin_broadcast_to(PyObject *self, PyObject *new_shape) {
  PyObject *t = PySequence_Tuple(new_shape), *r = t ? broadcast_to(self, t) : NULL;
  Py_XDECREF(t);
  return r;
}

/* expand(shape, *args): -1 or None keeps an axis; fewer axes are aligned to the right */
static PyObject *mixin_expand(PyObject *self, PyObject *args) {
  PyObject *fixed = argfix_named(args, "expand", "shape"), *shape = fixed ? impl.shape(self) : NULL, *ret = NULL;
  if (!shape) { Py_XDECREF(fixed); return NULL; }
  Py_ssize_t n = PyTuple_GET_SIZE(shape) > PyTuple_GET_SIZE(fixed) ? PyTuple_GET_SIZE(shape) : PyTuple_GET_SIZE(fixed);
  PyObject *from = align_left(shape, n), *to = from ? align_left(fixed, n) : NULL, *new_shape = to ? PyTuple_New(n) : NULL;
  for (Py_ssize_t i = 0; new_shape && i < n; i++) {
    PyObject *t = PyTuple_GET_ITEM(to, i);
    int keep = t == Py_None ? 1 : eq_int(t, -1);
    if (keep < 0) { Py_CLEAR(new_shape); break; }
    PyTuple_SET_ITEM(new_shape, i, Py_NewRef(keep ? PyTuple_GET_ITEM(from, i) : t));
  }
  if (new_shape) ret = broadcast_to(self, new_shape);
  Py_DECREF(fixed); Py_DECREF(shape); Py_XDECREF(from); Py_XDECREF(to); Py_XDECREF(new_shape);
  return ret;
}

/* shrink(((begin, end) or None, ...)): one entry per axis */
static PyObject *mixin_shrink(PyObject *self, PyObject *arg) {
  PyObject *shape = impl.shape(self);
  if (!shape) return NULL;
  Py_ssize_t len = PySequence_Length(arg), nd = PyTuple_GET_SIZE(shape);
  PyObject *lst = NULL, *ret = NULL;
  if (len < 0) goto end;
  if (nd != len) { PyErr_Format(PyExc_ValueError, "self.ndim=%zd != len(arg)=%zd", nd, len); goto end; }
  if (!(lst = PyList_New(len))) goto end;
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject *x = PySequence_GetItem(arg, i);
    if (!x) goto end;
    if (x == Py_None) {
      Py_DECREF(x);
      PyObject *zero = PyLong_FromLong(0);
      x = zero ? PyTuple_Pack(2, zero, PyTuple_GET_ITEM(shape, i)) : NULL;
      Py_XDECREF(zero);
      if (!x) goto end;
    }
    PyList_SET_ITEM(lst, i, x);
  }
  ret = noop_if_same_shape(self, impl.mop(self, OP_SHRINK, lst));
end:
  Py_DECREF(shape); Py_XDECREF(lst);
  return ret;
}

/* the _resolve_dim of every item of argfix(args) */
static PyObject *resolved_dims(PyObject *self, PyObject *args, const char *method, const char *param) {
  PyObject *fixed = argfix_named(args, method, param);
  if (!fixed) return NULL;
  PyObject *t = PyTuple_New(PyTuple_GET_SIZE(fixed));
  for (Py_ssize_t i = 0; t && i < PyTuple_GET_SIZE(fixed); i++) {
    PyObject *d = resolve_dim(self, PyTuple_GET_ITEM(fixed, i), false);
    if (!d) { Py_CLEAR(t); break; }
    PyTuple_SET_ITEM(t, i, d);
  }
  Py_DECREF(fixed);
  return t;
}

static PyObject *range_list(Py_ssize_t n) {
  PyObject *l = PyList_New(n);
  for (Py_ssize_t i = 0; l && i < n; i++) PyList_SET_ITEM(l, i, PyLong_FromSsize_t(i));
  return l;
}

/* permute(order, *args): self when order is the identity */
static PyObject *mixin_permute(PyObject *self, PyObject *args) {
  PyObject *order = resolved_dims(self, args, "permute", "order");
  if (!order) return NULL;
  Py_ssize_t nd = ndim(self);
  PyObject *srt = nd >= 0 ? PySequence_List(order) : NULL, *rng = srt ? range_list(nd) : NULL, *ret = NULL;
  if (!rng || PyList_Sort(srt) < 0) goto end;
  int ne = PyObject_RichCompareBool(srt, rng, Py_NE);
  if (ne < 0) goto end;
  if (ne) { PyErr_Format(PyExc_RuntimeError, "order is not a valid permutation, getting %S", order); goto end; }
  PyObject *rt = PyList_AsTuple(rng);
  int same = rt ? PyObject_RichCompareBool(order, rt, Py_EQ) : -1;
  Py_XDECREF(rt);
  if (same < 0) goto end;
  ret = same ? Py_NewRef(self) : impl.mop(self, OP_PERMUTE, order);
end:
  Py_DECREF(order); Py_XDECREF(srt); Py_XDECREF(rng);
  return ret;
}

/* flip(axis, *args): self when no axis is flipped */
static PyObject *mixin_flip(PyObject *self, PyObject *args) {
  PyObject *axis = resolved_dims(self, args, "flip", "axis"), *flip = NULL, *ret = NULL;
  if (!axis) return NULL;
  Py_ssize_t nd = ndim(self), n = PyTuple_GET_SIZE(axis);
  if (nd < 0) goto end;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *x = PyTuple_GET_ITEM(axis, i);
    long long v = PyLong_Check(x) && !PyBool_Check(x) ? PyLong_AsLongLong(x) : -1;
    if (v == -1 && PyErr_Occurred()) goto end;
    if (v < 0 || v >= nd) { PyErr_Format(PyExc_AssertionError, "flip args must be axis ints %S", axis); goto end; }
  }
  for (Py_ssize_t i = 0; i < n; i++)
    for (Py_ssize_t j = 0; j < i; j++) {
      int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(axis, i), PyTuple_GET_ITEM(axis, j), Py_EQ);
      if (eq < 0) goto end;
      if (eq) { PyErr_Format(PyExc_RuntimeError, "dim can appear at most once, getting %S", axis); goto end; }
    }
  if (!(flip = PyTuple_New(nd))) goto end;
  bool any = false;
  for (Py_ssize_t i = 0; i < nd; i++) {
    PyObject *io = PyLong_FromSsize_t(i);
    int in = io ? PySequence_Contains(axis, io) : -1;
    Py_XDECREF(io);
    if (in < 0) goto end;
    any |= in;
    PyTuple_SET_ITEM(flip, i, Py_NewRef(in ? Py_True : Py_False));
  }
  ret = any ? impl.mop(self, OP_FLIP, flip) : Py_NewRef(self);
end:
  Py_DECREF(axis); Py_XDECREF(flip);
  return ret;
}

PyMethodDef movement_mixin_methods[] = {
  {"reshape", (PyCFunction)mixin_reshape, METH_VARARGS, "reshape(shape, *args)"},
  {"expand", (PyCFunction)mixin_expand, METH_VARARGS, "expand(shape, *args)"},
  {"_broadcast_to", (PyCFunction)mixin_broadcast_to, METH_O, NULL},
  {"shrink", (PyCFunction)mixin_shrink, METH_O, "shrink(((begin, end) or None, ...))"},
  {"permute", (PyCFunction)mixin_permute, METH_VARARGS, "permute(order, *args)"},
  {"flip", (PyCFunction)mixin_flip, METH_VARARGS, "flip(axis, *args)"},
  {"numel", (PyCFunction)mixin_numel, METH_NOARGS, NULL},
  {"_resolve_dim", (PyCFunction)(void (*)(void))mixin_resolve_dim, METH_VARARGS | METH_KEYWORDS, NULL},
  {NULL, NULL, 0, NULL},
};

PyGetSetDef movement_mixin_getset[] = {
  {"ndim", (getter)mixin_ndim, NULL, "len(self.shape)", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};
