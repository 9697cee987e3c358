/* tinygrad/codegen/opt/__init__.py in C: OptOps, Opt, KernelOptError and check. */
#include "opt.h"
#include "../../helpers/dataclass.h"
#include "../../helpers/enum.h"
#include "../../helpers.h"
#include <limits.h>

PyObject *optops_members[OPTOPS_COUNT];
PyObject *OptOps_Type;
PyObject *KernelOptError;

static const char *const optops_names[] = {
#define X(name) #name,
  OPTOPS_LIST(X)
#undef X
  NULL
};

int optops_id(PyObject *o) {
  for (int i = 1; i < OPTOPS_COUNT; i++)
    if (optops_members[i] == o) return i;
  return 0;
}

/* ---- OptOps ---- */

/* tinygrad's OptOps.__lt__: `self.value < x.value`. */
static PyObject *optops_lt(PyObject *self, PyObject *other) {
  int a = optops_id(self), b = optops_id(other);
  if (a && b) return PyBool_FromLong(a < b);
  PyObject *ret = NULL, *va = getattr_literal(self, "value");
  PyObject *vb = va ? getattr_literal(other, "value") : NULL;
  if (vb) ret = PyObject_RichCompare(va, vb, Py_LT);
  Py_XDECREF(va); Py_XDECREF(vb);
  return ret;
}

static PyMethodDef optops_lt_def = {"__lt__", optops_lt, METH_O, "Order OptOps by value, as tinygrad."};

static int init_optops(PyObject *m) {
  OptOps_Type = tinyc_make_enum("Enum", "OptOps", optops_names);
  if (!OptOps_Type) return -1;
  for (int i = 1; i < OPTOPS_COUNT; i++) {
    PyObject *member = PyObject_GetAttrString(OptOps_Type, optops_names[i - 1]);
    if (!member) return -1;
    optops_members[i] = member;   /* borrowed: the class keeps its members alive */
    Py_DECREF(member);
  }
  /* a method descriptor (not a bare builtin) so that it binds to the member like a def would */
  PyObject *lt = PyDescr_NewMethod((PyTypeObject *)OptOps_Type, &optops_lt_def);
  if (!lt) return -1;
  int err = PyObject_SetAttrString(OptOps_Type, "__lt__", lt);
  Py_DECREF(lt);
  return err < 0 ? -1 : tinyc_add(m, "OptOps", OptOps_Type);
}

/* ---- Opt ---- */

/* The value of an int as a long, saturated: the Python object stays exact, C code gets a bound. */
static long saturated_long(PyObject *o) {
  int overflow = 0;
  long v = PyLong_AsLongAndOverflow(o, &overflow);
  return overflow > 0 ? LONG_MAX : overflow < 0 ? LONG_MIN : v;
}

static int opt_check_types(PyObject *op, PyObject *axis, PyObject *arg) {
  if (!optops_id(op)) {
    PyErr_Format(PyExc_TypeError, "Opt: op must be an OptOps member, not %.100s", Py_TYPE(op)->tp_name);
    return -1;
  }
  if (axis != Py_None && !PyLong_Check(axis)) {
    PyErr_Format(PyExc_TypeError, "Opt: axis must be int or None, not %.100s", Py_TYPE(axis)->tp_name);
    return -1;
  }
  if (arg != Py_None && !PyLong_Check(arg) && !PyTuple_Check(arg)) {
    PyErr_Format(PyExc_TypeError, "Opt: arg must be int, tuple or None, not %.100s", Py_TYPE(arg)->tp_name);
    return -1;
  }
  return 0;
}

PyObject *opt_new(PyObject *op, PyObject *axis, PyObject *arg) {
  if (!axis) axis = Py_None;
  if (!arg) arg = Py_None;
  if (opt_check_types(op, axis, arg) < 0) return NULL;
  OptObject *self = PyObject_GC_New(OptObject, &Opt_Type);
  if (!self) return NULL;
  self->op = Py_NewRef(op);
  self->axis = Py_NewRef(axis);
  self->arg = Py_NewRef(arg);
  self->op_id = (OptOpsId)optops_id(op);
  self->has_axis = axis != Py_None;
  self->axis_val = self->has_axis ? saturated_long(axis) : 0;
  self->has_int_arg = PyLong_Check(arg);
  self->arg_val = self->has_int_arg ? saturated_long(arg) : 0;
  self->hash = -1;
  PyObject_GC_Track(self);
  return (PyObject *)self;
}

static PyObject *Opt_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  UNUSED(type);
  static char *kwlist[] = {"op", "axis", "arg", NULL};
  PyObject *op, *axis = Py_None, *arg = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:Opt", kwlist, &op, &axis, &arg)) return NULL;
  return opt_new(op, axis, arg);
}

static int Opt_traverse(OptObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->op); Py_VISIT(self->axis); Py_VISIT(self->arg);
  return 0;
}

/* No tp_clear: like a tuple, an immutable object can not be the only link of a cycle to break. */
static void Opt_dealloc(OptObject *self) {
  PyObject_GC_UnTrack(self);
  Py_XDECREF(self->op); Py_XDECREF(self->axis); Py_XDECREF(self->arg);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* tinygrad's @dataclass(frozen=True, order=True), with its own __repr__ (which formats with str(), not repr()) */
static const DataclassField opt_fields[] = {
  DATACLASS_FIELD(OptObject, op, NULL), DATACLASS_FIELD_DEFAULT(OptObject, axis, NULL, dataclass_none),
  DATACLASS_FIELD_DEFAULT(OptObject, arg, NULL, dataclass_none), {NULL}};
static const Dataclass opt_dataclass = {opt_fields, .frozen = true, .order = true, .str_repr = true,
                                        .hash_cache = offsetof(OptObject, hash)};

PyTypeObject Opt_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.Opt",
  .tp_doc = "Opt(op, axis=None, arg=None): one kernel optimization, a frozen ordered dataclass as tinygrad's.",
  .tp_basicsize = sizeof(OptObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
  .tp_new = Opt_tp_new,
  .tp_dealloc = (destructor)Opt_dealloc,
  .tp_traverse = (traverseproc)Opt_traverse,
};

/* ---- KernelOptError, check ---- */

static PyObject *check(PyObject *self, PyObject *args, PyObject *kw) {
  UNUSED(self);
  static char *kwlist[] = {"cond", "msg", NULL};
  PyObject *cond, *msg = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:check", kwlist, &cond, &msg)) return NULL;
  int truth = PyObject_IsTrue(cond);
  if (truth < 0) return NULL;
  if (truth) Py_RETURN_NONE;
  /* made here rather than by PyErr_SetObject, which would unpack a tuple msg into args */
  PyObject *exc = msg ? PyObject_CallOneArg(KernelOptError, msg) : PyObject_CallFunction(KernelOptError, "s", "");
  if (exc) { PyErr_SetObject(KernelOptError, exc); Py_DECREF(exc); }
  return NULL;
}

static PyMethodDef opt_functions[] = {
  {"check", (PyCFunction)(void (*)(void))check, METH_VARARGS | METH_KEYWORDS,
   "check(cond, msg=''): raise KernelOptError(msg) unless cond."},
  {NULL, NULL, 0, NULL}
};

static int init_errors(PyObject *m) {
  KernelOptError = PyErr_NewExceptionWithDoc("tinyc.KernelOptError",
      "An optimization that can not be applied to a kernel.", NULL, NULL);
  if (!KernelOptError || tinyc_add(m, "KernelOptError", KernelOptError) < 0) return -1;
  return PyModule_AddFunctions(m, opt_functions);
}

int tinyc_init_opt(PyObject *m) {
  if (init_errors(m) < 0 || init_optops(m) < 0) return -1;
  if (dataclass_ready(&Opt_Type, &opt_dataclass) < 0) return -1;
  return tinyc_add(m, "Opt", (PyObject *)&Opt_Type);
}
