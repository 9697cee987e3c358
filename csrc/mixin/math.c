/* tinygrad/mixin/math.py: arithmetic with constant promotion. A Python number next to a mixin object becomes a
 * const like it (ufix), then the op is an ALU node (alu); both through the interface of math.h. */
#include "math.h"

static MathMixin impl;

void math_mixin_init(const MathMixin *i) { impl = *i; }

static bool is_mixin(PyObject *x) { return Py_TYPE(x) == impl.type; }

/* the type's name without its module, for messages: "UOp" */
static const char *type_name(void) {
  const char *dot = strrchr(impl.type->tp_name, '.');
  return dot ? dot + 1 : impl.type->tp_name;
}

static bool is_operand(PyObject *x) {
  return is_mixin(x) || PyLong_Check(x) || PyFloat_Check(x) || PyTuple_Check(x);
}

/* ufix: x if it is a mixin object, else self.const_like(x). New reference. */
static PyObject *ufix(PyObject *self, PyObject *x) { return is_mixin(x) ? Py_NewRef(x) : impl.const_like(self, x); }

static PyObject *alu2(Op op, PyObject *a, PyObject *b) {
  PyObject *src[2] = {a, b};
  return impl.alu(op, src, 2);
}

/* _binop: self.alu(op, ufix(x)), or ufix(x).alu(op, self) when reversed */
static PyObject *binop(Op op, PyObject *self, PyObject *x, bool reverse) {
  PyObject *other = ufix(self, x);
  if (!other) return NULL;
  PyObject *ret = reverse ? alu2(op, other, self) : alu2(op, self, other);
  Py_DECREF(other);
  return ret;
}

/* (self, x, reverse) from a number-protocol call, where either side may be the mixin object */
#define ORIENT(a, b)                                                  \
  if (!is_operand(is_mixin(a) ? (b) : (a))) Py_RETURN_NOTIMPLEMENTED; \
  bool reverse = !is_mixin(a);                                        \
  PyObject *self = reverse ? (b) : (a);                               \
  PyObject *x = reverse ? (a) : (b);

static PyObject *check_int_or_bool(PyObject *self) {
  DType *dt = impl.dtype(self);
  if (!dtype_is_bool(dt) && !dtype_is_int(dt)) return PyErr_Format(PyExc_RuntimeError, "%R is not supported", (PyObject *)dt);
  return Py_None;
}

static PyObject *logical_not(PyObject *self) { return binop(OP_CMPNE, self, Py_True, false); }

static PyObject *neg(PyObject *self) {
  if (dtype_scalar(impl.dtype(self)) == DTYPE(BOOL)) return logical_not(self);
  PyObject *m1 = PyLong_FromLong(-1), *ret = m1 ? binop(OP_MUL, self, m1, false) : NULL;
  Py_XDECREF(m1);
  return ret;
}

/* -x for a number or a mixin object */
static PyObject *negate(PyObject *x) { return is_mixin(x) ? neg(x) : PyNumber_Negative(x); }

static PyObject *sub(PyObject *self, PyObject *x, bool reverse) {
  if (reverse) {   /* x - self = ufix(x) + (-self) */
    PyObject *ns = neg(self), *ux = ns ? ufix(self, x) : NULL;
    PyObject *ret = ux ? alu2(OP_ADD, ux, ns) : NULL;
    Py_XDECREF(ns); Py_XDECREF(ux);
    return ret;
  }
  PyObject *nx = negate(x), *ret = nx ? binop(OP_ADD, self, nx, false) : NULL;
  Py_XDECREF(nx);
  return ret;
}

/* self / x = self * ufix(x).reciprocal(); reversed, ufix(x) * self.reciprocal() */
static PyObject *true_div(PyObject *self, PyObject *x, bool reverse) {
  PyObject *ux = ufix(self, x), *recip = ux ? impl.alu(OP_RECIPROCAL, reverse ? &self : &ux, 1) : NULL;
  PyObject *ret = recip ? PyNumber_Multiply(reverse ? ux : self, recip) : NULL;
  Py_XDECREF(ux); Py_XDECREF(recip);
  return ret;
}

/* ---- number protocol ---- */

#define BINARY_SLOT(name, OP)                      \
  static PyObject *nb_##name(PyObject *a, PyObject *b) { \
    ORIENT(a, b);                                  \
    return binop(OP, self, x, reverse);            \
  }
BINARY_SLOT(add, OP_ADD)
BINARY_SLOT(mul, OP_MUL)
BINARY_SLOT(floordiv, OP_IDIV)
BINARY_SLOT(mod, OP_MOD)
BINARY_SLOT(lshift, OP_SHL)
BINARY_SLOT(rshift, OP_SHR)

#define BITWISE_SLOT(name, OP)                           \
  static PyObject *nb_##name(PyObject *a, PyObject *b) { \
    ORIENT(a, b);                                        \
    if (!check_int_or_bool(self)) return NULL;           \
    return binop(OP, self, x, reverse);                  \
  }
BITWISE_SLOT(and, OP_AND)
BITWISE_SLOT(or, OP_OR)
BITWISE_SLOT(xor, OP_XOR)

static PyObject *nb_sub(PyObject *a, PyObject *b) { ORIENT(a, b); return sub(self, x, reverse); }
static PyObject *nb_truediv(PyObject *a, PyObject *b) { ORIENT(a, b); return true_div(self, x, reverse); }
static PyObject *nb_negative(PyObject *a) { return neg(a); }
static PyObject *nb_power(PyObject *a, PyObject *b, PyObject *mod) {
  if (!is_mixin(a) || mod != Py_None || !is_operand(b)) Py_RETURN_NOTIMPLEMENTED;   /* no __rpow__, as tinygrad */
  return binop(OP_POW, a, b, false);
}

const PyNumberMethods math_mixin_as_number = {
  .nb_add = nb_add, .nb_subtract = nb_sub, .nb_multiply = nb_mul, .nb_remainder = nb_mod, .nb_power = nb_power,
  .nb_negative = nb_negative, .nb_lshift = nb_lshift, .nb_rshift = nb_rshift, .nb_and = nb_and, .nb_xor = nb_xor,
  .nb_or = nb_or, .nb_floor_divide = nb_floordiv, .nb_true_divide = nb_truediv,
};

/* __eq__ stays identity (UOps are dict keys); the other comparisons build nodes. */
PyObject *math_mixin_richcompare(PyObject *a, PyObject *b, int cmp) {
  if (cmp == Py_EQ) {
    if (a == b) Py_RETURN_TRUE;
    Py_RETURN_NOTIMPLEMENTED;
  }
  if (!is_mixin(a) || !is_operand(b)) Py_RETURN_NOTIMPLEMENTED;
  PyObject *self = a, *flipped, *ret;
  switch (cmp) {
  case Py_LT: return binop(OP_CMPLT, self, b, false);
  case Py_GT: return binop(OP_CMPLT, self, b, true);
  case Py_NE: return binop(OP_CMPNE, self, b, false);
  case Py_GE: flipped = binop(OP_CMPLT, self, b, false); break;   /* not (self < x) */
  default: flipped = binop(OP_CMPLT, self, b, true); break;       /* LE: not (self > x) */
  }
  if (!flipped) return NULL;
  ret = logical_not(flipped);
  Py_DECREF(flipped);
  return ret;
}

/* ---- named methods (add, mul, ..., with reverse=False) ---- */

static int parse_x_reverse(PyObject *args, PyObject *kw, const char *fmt, PyObject **x, int *reverse) {
  static char *kwlist[] = {"x", "reverse", NULL};
  *reverse = 0;
  return PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, x, reverse);
}

#define NAMED_BINOP(name, OP, check)                                          \
  static PyObject *m_##name(PyObject *self, PyObject *args, PyObject *kw) {   \
    PyObject *x;                                                              \
    int reverse;                                                              \
    if (!parse_x_reverse(args, kw, "O|p:" #name, &x, &reverse)) return NULL;  \
    if (check && !check_int_or_bool(self)) return NULL;                       \
    return binop(OP, self, x, reverse);                                       \
  }
NAMED_BINOP(add, OP_ADD, 0)
NAMED_BINOP(mul, OP_MUL, 0)
NAMED_BINOP(idiv, OP_IDIV, 0)
NAMED_BINOP(mod, OP_MOD, 0)
NAMED_BINOP(lshift, OP_SHL, 0)
NAMED_BINOP(rshift, OP_SHR, 0)
NAMED_BINOP(bitwise_and, OP_AND, 1)
NAMED_BINOP(bitwise_or, OP_OR, 1)
NAMED_BINOP(bitwise_xor, OP_XOR, 1)

static PyObject *m_sub(PyObject *self, PyObject *args, PyObject *kw) {
  PyObject *x;
  int reverse;
  return parse_x_reverse(args, kw, "O|p:sub", &x, &reverse) ? sub(self, x, reverse) : NULL;
}
static PyObject *m_div(PyObject *self, PyObject *args, PyObject *kw) {
  PyObject *x;
  int reverse;
  return parse_x_reverse(args, kw, "O|p:div", &x, &reverse) ? true_div(self, x, reverse) : NULL;
}

static PyObject *m_ne(PyObject *self, PyObject *x) { return binop(OP_CMPNE, self, x, false); }
static PyObject *m_eq(PyObject *self, PyObject *x) {
  PyObject *ne = binop(OP_CMPNE, self, x, false), *ret = ne ? logical_not(ne) : NULL;
  Py_XDECREF(ne);
  return ret;
}
static PyObject *m_maximum(PyObject *self, PyObject *x) { return binop(OP_MAX, self, x, false); }
/* minimum(x) = -(-self).maximum(-x) */
static PyObject *m_minimum(PyObject *self, PyObject *x) {
  PyObject *ns = neg(self), *nx = ns ? negate(x) : NULL, *mx = nx ? binop(OP_MAX, ns, nx, false) : NULL;
  PyObject *ret = mx ? neg(mx) : NULL;
  Py_XDECREF(ns); Py_XDECREF(nx); Py_XDECREF(mx);
  return ret;
}
static PyObject *m_pow(PyObject *self, PyObject *x) { return binop(OP_POW, self, x, false); }
static PyObject *m_threefry(PyObject *self, PyObject *seed) {
  if (!is_mixin(seed)) return PyErr_Format(PyExc_TypeError, "threefry seed must be a %s", type_name());
  return alu2(OP_THREEFRY, self, seed);
}

/* where(x, y): the mixin object among x, y fixes the const's dtype */
static PyObject *m_where(PyObject *self, PyObject *args) {
  PyObject *x, *y;
  if (!PyArg_ParseTuple(args, "OO:where", &x, &y)) return NULL;
  PyObject *a, *b, *ret = NULL;
  if (is_mixin(x)) a = Py_NewRef(x), b = ufix(x, y);
  else if (is_mixin(y)) a = ufix(y, x), b = Py_NewRef(y);
  else return PyErr_Format(PyExc_RuntimeError, "where needs at least one %s arg", type_name());
  if (a && b) {
    PyObject *src[3] = {self, a, b};
    ret = impl.alu(OP_WHERE, src, 3);
  }
  Py_XDECREF(a); Py_XDECREF(b);
  return ret;
}

#define UNARY(name, OP) \
  static PyObject *m_##name(PyObject *self, PyObject *unused) { UNUSED(unused); return impl.alu(OP, &self, 1); }
UNARY(reciprocal, OP_RECIPROCAL)
UNARY(trunc, OP_TRUNC)
UNARY(sqrt, OP_SQRT)
UNARY(sin, OP_SIN)
UNARY(log2, OP_LOG2)
UNARY(exp2, OP_EXP2)

static PyObject *m_neg(PyObject *self, PyObject *unused) { UNUSED(unused); return neg(self); }
static PyObject *m_logical_not(PyObject *self, PyObject *unused) { UNUSED(unused); return logical_not(self); }
static PyObject *m_square(PyObject *self, PyObject *unused) { UNUSED(unused); return PyNumber_Multiply(self, self); }
static PyObject *m_ufix(PyObject *self, PyObject *x) { return ufix(self, x); }

#define KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
PyMethodDef math_mixin_methods[] = {
  {"add", KW(m_add), NULL}, {"mul", KW(m_mul), NULL}, {"sub", KW(m_sub), NULL}, {"div", KW(m_div), NULL},
  {"idiv", KW(m_idiv), NULL}, {"mod", KW(m_mod), NULL}, {"lshift", KW(m_lshift), NULL}, {"rshift", KW(m_rshift), NULL},
  {"bitwise_and", KW(m_bitwise_and), NULL}, {"bitwise_or", KW(m_bitwise_or), NULL}, {"bitwise_xor", KW(m_bitwise_xor), NULL},
  {"ne", (PyCFunction)m_ne, METH_O, NULL}, {"eq", (PyCFunction)m_eq, METH_O, NULL},
  {"maximum", (PyCFunction)m_maximum, METH_O, NULL}, {"minimum", (PyCFunction)m_minimum, METH_O, NULL},
  {"pow", (PyCFunction)m_pow, METH_O, NULL}, {"threefry", (PyCFunction)m_threefry, METH_O, NULL},
  {"where", (PyCFunction)m_where, METH_VARARGS, NULL},
  {"reciprocal", (PyCFunction)m_reciprocal, METH_NOARGS, NULL}, {"trunc", (PyCFunction)m_trunc, METH_NOARGS, NULL},
  {"sqrt", (PyCFunction)m_sqrt, METH_NOARGS, NULL}, {"sin", (PyCFunction)m_sin, METH_NOARGS, NULL},
  {"log2", (PyCFunction)m_log2, METH_NOARGS, NULL}, {"exp2", (PyCFunction)m_exp2, METH_NOARGS, NULL},
  {"neg", (PyCFunction)m_neg, METH_NOARGS, NULL}, {"logical_not", (PyCFunction)m_logical_not, METH_NOARGS, NULL},
  {"square", (PyCFunction)m_square, METH_NOARGS, NULL}, {"ufix", (PyCFunction)m_ufix, METH_O, NULL},
  {NULL, NULL, 0, NULL},
};
