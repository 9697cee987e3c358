/* tinygrad/mixin/math.py: UOp arithmetic with constant promotion. A Python number next to a UOp
 * becomes a const of the UOp's dtype (ufix), then the op is an ALU node (alu). */
#include "../uop/uop.h"

int uop_bool(UOp *self);
PyObject *uop_int(UOp *self);
PyObject *uop_float(UOp *self);

static bool is_operand(PyObject *x) {
  return UOp_Check(x) || PyLong_Check(x) || PyFloat_Check(x) || PyTuple_Check(x);
}

static UOp *alu2(Op op, UOp *a, UOp *b) {
  UOp *src[2] = {a, b};
  return uop_alu(op, src, 2);
}

/* _binop: self.alu(op, ufix(x)), or ufix(x).alu(op, self) when reversed */
static PyObject *binop(Op op, UOp *self, PyObject *x, bool reverse) {
  UOp *other = uop_ufix(self, x);
  if (!other) return NULL;
  UOp *ret = reverse ? alu2(op, other, self) : alu2(op, self, other);
  Py_DECREF(other);
  return (PyObject *)ret;
}

/* (self, x, reverse) from a number-protocol call, where either side may be the UOp */
#define ORIENT(a, b)                                                   \
  if (!is_operand(UOp_Check(a) ? (b) : (a))) Py_RETURN_NOTIMPLEMENTED; \
  bool reverse = !UOp_Check(a);                                        \
  UOp *self = (UOp *)(reverse ? (b) : (a));                            \
  PyObject *x = reverse ? (a) : (b);

static PyObject *check_int_or_bool(UOp *self) {
  if (!dtype_is_bool(self->dtype) && !dtype_is_int(self->dtype))
    return PyErr_Format(PyExc_RuntimeError, "%R is not supported", (PyObject *)self->dtype);
  return Py_None;
}

static PyObject *logical_not(UOp *self) { return binop(OP_CMPNE, self, Py_True, false); }

static PyObject *neg(UOp *self) {
  if (dtype_scalar(self->dtype) == DTYPE(BOOL)) return logical_not(self);
  PyObject *m1 = PyLong_FromLong(-1), *ret = m1 ? binop(OP_MUL, self, m1, false) : NULL;
  Py_XDECREF(m1);
  return ret;
}

/* -x for a number or a UOp */
static PyObject *negate(PyObject *x) { return UOp_Check(x) ? neg((UOp *)x) : PyNumber_Negative(x); }

static PyObject *sub(UOp *self, PyObject *x, bool reverse) {
  if (reverse) {   /* x - self = ufix(x) + (-self) */
    PyObject *ns = neg(self);
    UOp *ux = ns ? uop_ufix(self, x) : NULL;
    PyObject *ret = ux ? (PyObject *)alu2(OP_ADD, ux, (UOp *)ns) : NULL;
    Py_XDECREF(ns); Py_XDECREF(ux);
    return ret;
  }
  PyObject *nx = negate(x), *ret = nx ? binop(OP_ADD, self, nx, false) : NULL;
  Py_XDECREF(nx);
  return ret;
}

/* self / x = self * ufix(x).reciprocal(); reversed, ufix(x) * self.reciprocal() */
static PyObject *true_div(UOp *self, PyObject *x, bool reverse) {
  UOp *ux = uop_ufix(self, x), *recip = NULL;
  PyObject *ret = NULL;
  if (!ux) return NULL;
  if (reverse) {
    if ((recip = uop_new1(OP_RECIPROCAL, self->dtype, self, NULL))) ret = PyNumber_Multiply((PyObject *)ux, (PyObject *)recip);
  } else if ((recip = uop_new1(OP_RECIPROCAL, ux->dtype, ux, NULL))) {
    ret = PyNumber_Multiply((PyObject *)self, (PyObject *)recip);
  }
  Py_DECREF(ux); Py_XDECREF(recip);
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
static PyObject *nb_negative(PyObject *a) { return neg((UOp *)a); }
static PyObject *nb_power(PyObject *a, PyObject *b, PyObject *mod) {
  if (!UOp_Check(a) || mod != Py_None || !is_operand(b)) Py_RETURN_NOTIMPLEMENTED;   /* no __rpow__, as tinygrad */
  return binop(OP_POW, (UOp *)a, b, false);
}
static int nb_bool(PyObject *a) { return uop_bool((UOp *)a); }
static PyObject *nb_int(PyObject *a) { return uop_int((UOp *)a); }
static PyObject *nb_float(PyObject *a) { return uop_float((UOp *)a); }

PyNumberMethods uop_as_number = {
  .nb_add = nb_add, .nb_subtract = nb_sub, .nb_multiply = nb_mul, .nb_remainder = nb_mod, .nb_power = nb_power,
  .nb_negative = nb_negative, .nb_bool = nb_bool, .nb_lshift = nb_lshift, .nb_rshift = nb_rshift, .nb_and = nb_and,
  .nb_xor = nb_xor, .nb_or = nb_or, .nb_int = nb_int, .nb_float = nb_float, .nb_floor_divide = nb_floordiv,
  .nb_true_divide = nb_truediv,
};

/* __eq__ stays identity (UOps are dict keys); the other comparisons build nodes. */
PyObject *uop_richcompare(PyObject *a, PyObject *b, int cmp) {
  if (cmp == Py_EQ) {
    if (a == b) Py_RETURN_TRUE;
    Py_RETURN_NOTIMPLEMENTED;
  }
  if (!UOp_Check(a) || !is_operand(b)) Py_RETURN_NOTIMPLEMENTED;
  UOp *self = (UOp *)a, *flipped;
  PyObject *ret;
  switch (cmp) {
  case Py_LT: return binop(OP_CMPLT, self, b, false);
  case Py_GT: return binop(OP_CMPLT, self, b, true);
  case Py_NE: return binop(OP_CMPNE, self, b, false);
  case Py_GE: flipped = (UOp *)binop(OP_CMPLT, self, b, false); break;   /* not (self < x) */
  default: flipped = (UOp *)binop(OP_CMPLT, self, b, true); break;       /* LE: not (self > x) */
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
  static PyObject *m_##name(UOp *self, PyObject *args, PyObject *kw) {        \
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

static PyObject *m_sub(UOp *self, PyObject *args, PyObject *kw) {
  PyObject *x;
  int reverse;
  return parse_x_reverse(args, kw, "O|p:sub", &x, &reverse) ? sub(self, x, reverse) : NULL;
}
static PyObject *m_div(UOp *self, PyObject *args, PyObject *kw) {
  PyObject *x;
  int reverse;
  return parse_x_reverse(args, kw, "O|p:div", &x, &reverse) ? true_div(self, x, reverse) : NULL;
}

static PyObject *m_ne(UOp *self, PyObject *x) { return binop(OP_CMPNE, self, x, false); }
static PyObject *m_eq(UOp *self, PyObject *x) {
  PyObject *ne = binop(OP_CMPNE, self, x, false), *ret = ne ? logical_not((UOp *)ne) : NULL;
  Py_XDECREF(ne);
  return ret;
}
static PyObject *m_maximum(UOp *self, PyObject *x) { return binop(OP_MAX, self, x, false); }
/* minimum(x) = -(-self).maximum(-x) */
static PyObject *m_minimum(UOp *self, PyObject *x) {
  PyObject *ns = neg(self), *nx = ns ? negate(x) : NULL, *mx = nx ? binop(OP_MAX, (UOp *)ns, nx, false) : NULL;
  PyObject *ret = mx ? neg((UOp *)mx) : NULL;
  Py_XDECREF(ns); Py_XDECREF(nx); Py_XDECREF(mx);
  return ret;
}
static PyObject *m_pow(UOp *self, PyObject *x) { return binop(OP_POW, self, x, false); }
static PyObject *m_threefry(UOp *self, PyObject *seed) {
  if (!UOp_Check(seed)) return PyErr_Format(PyExc_TypeError, "threefry seed must be a UOp");
  return (PyObject *)alu2(OP_THREEFRY, self, (UOp *)seed);
}

/* where(x, y): the UOp among x, y fixes the const's dtype */
static PyObject *m_where(UOp *self, PyObject *args) {
  PyObject *x, *y;
  if (!PyArg_ParseTuple(args, "OO:where", &x, &y)) return NULL;
  UOp *a, *b;
  if (UOp_Check(x)) a = (UOp *)Py_NewRef(x), b = uop_ufix((UOp *)x, y);
  else if (UOp_Check(y)) a = uop_ufix((UOp *)y, x), b = (UOp *)Py_NewRef(y);
  else return PyErr_Format(PyExc_RuntimeError, "where needs at least one UOp arg");
  PyObject *ret = NULL;
  if (a && b) {
    UOp *src[3] = {self, a, b};
    ret = (PyObject *)uop_alu(OP_WHERE, src, 3);
  }
  Py_XDECREF(a); Py_XDECREF(b);
  return ret;
}

#define UNARY(name, OP) \
  static PyObject *m_##name(UOp *self, PyObject *unused) { UNUSED(unused); return (PyObject *)uop_alu(OP, &self, 1); }
UNARY(reciprocal, OP_RECIPROCAL)
UNARY(trunc, OP_TRUNC)
UNARY(sqrt, OP_SQRT)
UNARY(sin, OP_SIN)
UNARY(log2, OP_LOG2)
UNARY(exp2, OP_EXP2)

static PyObject *m_neg(UOp *self, PyObject *unused) { UNUSED(unused); return neg(self); }
static PyObject *m_logical_not(UOp *self, PyObject *unused) { UNUSED(unused); return logical_not(self); }
static PyObject *m_square(UOp *self, PyObject *unused) { UNUSED(unused); return PyNumber_Multiply((PyObject *)self, (PyObject *)self); }
static PyObject *m_ufix(UOp *self, PyObject *x) { return (PyObject *)uop_ufix(self, x); }

#define KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
PyMethodDef uop_math_methods[] = {
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
