/* The form table of every op (see form.h): the fewest and most sources it takes, and the kind of its arg. The
 * bounds are those of tinygrad 0.12.0's spec (uop/spec.py) and of its constructors (ops.py: end, range, gep...),
 * as loose as anything tinygrad builds needs, as tight as the C code that reads the node relies on. */
#include "form.h"

typedef enum {
  ARG_ANY,        /* not read by native code as a particular kind */
  ARG_INT,        /* DEFINE_GLOBAL / DEFINE_REG: the buffer number */
  ARG_STR,        /* SPECIAL's name, SOURCE's text */
  ARG_BYTES,      /* BINARY's lib */
  ARG_NUMBER,     /* CONST: bool, int, float or Invalid */
  ARG_TUPLE,      /* VCONST's values, RANGE's (axis ids..., AxisType, extras...): read by position only where checked */
  ARG_INTS,       /* GEP: a tuple of lane indices */
  ARG_VAR,        /* DEFINE_VAR: (name, min, max) */
  ARG_AXES,       /* UNROLL / CONTRACT: ((axis, size), ...) */
  ARG_OP,         /* REDUCE: an Ops member */
  ARG_REDUCE,     /* REDUCE_AXIS: (Ops member, axes tuple) */
  ARG_WMMA,       /* WMMA: its 8-tuple */
  ARG_DEVICE,     /* DEVICE: a str or a tuple of strs */
  ARG_KINDS
} ArgKind;

#define MANY UOP_MAX_SRC
typedef struct { int min, max; ArgKind arg; } OpForm;

#define UNARY {1, 1, ARG_ANY}
#define BINARY {2, 2, ARG_ANY}
#define TERNARY {3, 3, ARG_ANY}
static const OpForm forms[OP_COUNT] = {
  [OP_DEFINE_GLOBAL] = {0, 0, ARG_INT}, [OP_DEFINE_LOCAL] = {0, 0, ARG_ANY}, [OP_DEFINE_REG] = {0, 0, ARG_INT},
  [OP_DEFINE_VAR] = {0, 0, ARG_VAR}, [OP_BIND] = {1, 2, ARG_ANY}, [OP_SPECIAL] = {1, 1, ARG_STR},
  [OP_SOURCE] = {0, 0, ARG_STR}, [OP_BINARY] = {0, 0, ARG_BYTES}, [OP_DEVICE] = {0, 0, ARG_DEVICE},
  [OP_AFTER] = {1, MANY, ARG_ANY}, [OP_GEP] = {1, 1, ARG_INTS},
  [OP_INDEX] = {1, MANY, ARG_ANY}, [OP_LOAD] = {1, MANY, ARG_ANY}, [OP_STORE] = {2, MANY, ARG_ANY}, [OP_WMMA] = {3, 3, ARG_WMMA},
  [OP_CAST] = UNARY, [OP_BITCAST] = UNARY,
  [OP_EXP2] = UNARY, [OP_LOG2] = UNARY, [OP_SIN] = UNARY, [OP_SQRT] = UNARY, [OP_RECIPROCAL] = UNARY, [OP_NEG] = UNARY,
  [OP_TRUNC] = UNARY,
  [OP_ADD] = BINARY, [OP_MUL] = BINARY, [OP_SHL] = BINARY, [OP_SHR] = BINARY, [OP_IDIV] = BINARY, [OP_MAX] = BINARY,
  [OP_MOD] = BINARY, [OP_CMPLT] = BINARY, [OP_CMPNE] = BINARY, [OP_CMPEQ] = BINARY, [OP_XOR] = BINARY, [OP_OR] = BINARY,
  [OP_AND] = BINARY, [OP_THREEFRY] = BINARY, [OP_SUB] = BINARY, [OP_FDIV] = BINARY, [OP_POW] = BINARY,
  [OP_WHERE] = TERNARY, [OP_MULACC] = TERNARY,
  [OP_RANGE] = {1, MANY, ARG_TUPLE}, [OP_IF] = {1, MANY, ARG_ANY}, [OP_END] = {2, MANY, ARG_ANY}, [OP_ENDIF] = {1, 1, ARG_ANY},
  [OP_VCONST] = {0, MANY, ARG_TUPLE}, [OP_CONST] = {0, MANY, ARG_NUMBER},
  [OP_UNROLL] = {1, 1, ARG_AXES}, [OP_CONTRACT] = {1, 1, ARG_AXES},
  [OP_REDUCE_AXIS] = {1, 1, ARG_REDUCE}, [OP_REDUCE] = {1, MANY, ARG_OP}, [OP_BUFFERIZE] = {1, MANY, ARG_ANY},
  [OP_RESHAPE] = {1, MANY, ARG_ANY}, [OP_PERMUTE] = {1, MANY, ARG_ANY}, [OP_EXPAND] = {1, MANY, ARG_ANY},
  [OP_PAD] = {1, MANY, ARG_ANY}, [OP_SHRINK] = {1, MANY, ARG_ANY}, [OP_FLIP] = {1, MANY, ARG_ANY},
  [OP_CONTIGUOUS] = {1, MANY, ARG_ANY}, [OP_DETACH] = {1, MANY, ARG_ANY}, [OP_CONTIGUOUS_BACKWARD] = {1, MANY, ARG_ANY},
  [OP_COPY] = {1, MANY, ARG_ANY},
};
/* every op the table leaves out takes any number of sources and any arg */
static OpForm form_of(Op op) {
  OpForm f = forms[op];
  return f.min || f.max || f.arg ? f : (OpForm){0, MANY, ARG_ANY};
}

static bool all_ints(PyObject *t, Py_ssize_t from, Py_ssize_t to) {
  for (Py_ssize_t i = from; i < to; i++) if (!PyLong_Check(PyTuple_GET_ITEM(t, i))) return false;
  return true;
}
static bool is_op_member(PyObject *o) { return PyObject_TypeCheck(o, (PyTypeObject *)Ops_Type); }
static bool is_axes(PyObject *a) {
  if (!PyTuple_Check(a)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++) {
    PyObject *pair = PyTuple_GET_ITEM(a, i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !all_ints(pair, 0, 2)) return false;
  }
  return true;
}
static bool is_device_name(PyObject *a) {
  if (PyUnicode_Check(a)) return true;
  if (!PyTuple_Check(a)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++) if (!PyUnicode_Check(PyTuple_GET_ITEM(a, i))) return false;
  return true;
}

static bool arg_ok(ArgKind kind, PyObject *a) {
  Py_ssize_t n = PyTuple_Check(a) ? PyTuple_GET_SIZE(a) : -1;
  switch (kind) {
  case ARG_ANY: return true;
  case ARG_INT: return PyLong_Check(a);
  case ARG_STR: return PyUnicode_Check(a);
  case ARG_BYTES: return PyBytes_Check(a);
  case ARG_NUMBER: return PyLong_Check(a) || PyFloat_Check(a) || a == Invalid;   /* bool is an int */
  case ARG_TUPLE: return n >= 0;
  case ARG_INTS: return n >= 0 && all_ints(a, 0, n);
  case ARG_VAR: return n == 3 && PyUnicode_Check(PyTuple_GET_ITEM(a, 0));
  case ARG_AXES: return is_axes(a);
  case ARG_OP: return is_op_member(a);
  case ARG_REDUCE: return n >= 2 && is_op_member(PyTuple_GET_ITEM(a, 0)) && PyTuple_Check(PyTuple_GET_ITEM(a, 1));
  case ARG_WMMA: return n == 8;
  case ARG_DEVICE: return is_device_name(a);
  case ARG_KINDS: break;
  }
  return false;
}

bool uop_form_ok(Op op, Py_ssize_t nsrc, PyObject *arg) {
  if (op <= OP_NONE || op >= OP_COUNT) return false;
  OpForm f = form_of(op);
  return nsrc >= f.min && nsrc <= f.max && arg_ok(f.arg, arg);
}

static const char *const arg_kind_text[ARG_KINDS] = {
  [ARG_ANY] = "anything", [ARG_INT] = "an int", [ARG_STR] = "a str", [ARG_BYTES] = "bytes",
  [ARG_NUMBER] = "a bool, int, float or Invalid", [ARG_TUPLE] = "a tuple", [ARG_INTS] = "a tuple of ints",
[ARG_VAR] = "a tuple (name: str, min, max)",
  [ARG_AXES] = "a tuple of (axis, size) int pairs", [ARG_OP] = "an Ops member", [ARG_REDUCE] = "a tuple (Ops member, axes tuple)",
  [ARG_WMMA] = "a tuple of 8", [ARG_DEVICE] = "a str or a tuple of strs",
};

/* the fewest items of the tuple args whose items native code reads by position */
static const Py_ssize_t arg_tuple_len[ARG_KINDS] = {[ARG_VAR] = 3, [ARG_REDUCE] = 2, [ARG_WMMA] = 8};

/* the exception for one malformed node: the kind tinygrad's Python would raise reading it */
static int raise_malformed(UOp *u, const char *who) {
  Op op = (Op)u->op;
  OpForm f = form_of(op);
  const char *sep = who ? ": " : "";
  if (!who) who = "";
  if ((int)u->nsrc < f.min)
    PyErr_Format(PyExc_IndexError, "%s%sOps.%s needs at least %d source%s, this one has %d (dtype %R, arg %R)", who, sep, op_names[op],
                 f.min, f.min == 1 ? "" : "s", (int)u->nsrc, (PyObject *)u->dtype, u->arg);
  else if ((int)u->nsrc > f.max)
    PyErr_Format(PyExc_TypeError, "%s%sOps.%s takes at most %d source%s, this one has %d (dtype %R, arg %R)", who, sep, op_names[op],
                 f.max, f.max == 1 ? "" : "s", (int)u->nsrc, (PyObject *)u->dtype, u->arg);
  else   /* a tuple arg too short is Python's IndexError on reading it, any other wrong arg its TypeError */
    PyErr_Format(PyTuple_Check(u->arg) && PyTuple_GET_SIZE(u->arg) < arg_tuple_len[f.arg] ? PyExc_IndexError : PyExc_TypeError,
                 "%s%sthe arg of Ops.%s must be %s, got %.100s %R", who, sep, op_names[op], arg_kind_text[f.arg],
                 Py_TYPE(u->arg)->tp_name, u->arg);
  return -1;
}

int uop_require_form(UOp *root, const char *who) {
  if (!(root->flags & UOP_FLAG_MALFORMED)) return 0;
  /* the malformed node whose sources are all well formed: follow flagged sources down (first flagged source first,
   * as a toposort would reach it) */
  for (UOp *u = root;;) {
    UOp *next = NULL;
    for (int i = 0; i < (int)u->nsrc && !next; i++) if (u->src[i]->flags & UOP_FLAG_MALFORMED) next = u->src[i];
    if (!next) return raise_malformed(u, who);
    u = next;
  }
}

int uops_check_form(PyObject *seq, const char *who) {
  PyObject *fast = PySequence_Fast(seq, "expected a sequence of UOps");
  if (!fast) return -1;
  int rc = 0;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast) && rc == 0; i++) {
    PyObject *u = PySequence_Fast_GET_ITEM(fast, i);
    if (!UOp_Check(u)) rc = -1, PyErr_Format(PyExc_TypeError, "%s needs tinyc UOps, item %zd is %.100s", who, i, Py_TYPE(u)->tp_name);
    else rc = uop_check_form((UOp *)u, who);
  }
  Py_DECREF(fast);
  return rc;
}
