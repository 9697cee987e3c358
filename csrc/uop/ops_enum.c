/* tinygrad/uop/__init__.py: the Ops enum and GroupOp, plus AxisType (tinygrad keeps it in uop/ops.py).
 * Everything is generated from the one list in ops_list.h. */
#include "ops_enum.h"
#include "../helpers/enum.h"
#include "../helpers.h"

const char *const op_names[OP_COUNT] = {
  NULL,
#define X(name) #name,
  OPS_LIST(X)
#undef X
};
PyObject *ops_members[OP_COUNT];

/* each op's bit + 1; 0 (every op not named) is the last bit, which they share */
const uint8_t op_bit_of[OP_COUNT] = {
  [OP_DEFINE_GLOBAL] = 1, [OP_DEFINE_VAR] = 2, [OP_SPECIAL] = 3, [OP_DEFINE_LOCAL] = 4, [OP_DEFINE_REG] = 5,
  [OP_PROGRAM] = 6, [OP_LINEAR] = 6, [OP_SOURCE] = 6, [OP_BINARY] = 6, [OP_SINK] = 7, [OP_AFTER] = 8, [OP_GROUP] = 9,
  [OP_GEP] = 10, [OP_VECTORIZE] = 11, [OP_INDEX] = 12, [OP_LOAD] = 13, [OP_STORE] = 14, [OP_WMMA] = 15, [OP_CAST] = 16,
  [OP_BITCAST] = 17, [OP_EXP2] = 18, [OP_LOG2] = 18, [OP_SIN] = 18, [OP_SQRT] = 18, [OP_RECIPROCAL] = 18, [OP_NEG] = 18,
  [OP_TRUNC] = 18, [OP_ADD] = 19, [OP_SUB] = 19, [OP_MUL] = 19, [OP_MULACC] = 19, [OP_SHL] = 20, [OP_SHR] = 20,
  [OP_XOR] = 20, [OP_OR] = 20, [OP_AND] = 20, [OP_THREEFRY] = 20, [OP_IDIV] = 21, [OP_MOD] = 21, [OP_FDIV] = 21,
  [OP_POW] = 21, [OP_MAX] = 21, [OP_CMPLT] = 22, [OP_CMPNE] = 22, [OP_CMPEQ] = 22, [OP_WHERE] = 23, [OP_BARRIER] = 24,
  [OP_IF] = 24, [OP_ENDIF] = 24, [OP_RANGE] = 25, [OP_END] = 26, [OP_CONST] = 27, [OP_VCONST] = 27, [OP_CUSTOM] = 28,
  [OP_CUSTOMI] = 28, [OP_REDUCE] = 29, [OP_REDUCE_AXIS] = 29, [OP_ALLREDUCE] = 29, [OP_UNROLL] = 30, [OP_CONTRACT] = 30,
  [OP_CAT] = 31, [OP_PTRCAT] = 31,
};
PyObject *ops_str[OP_COUNT];
PyObject *Ops_Type;
PyObject *axistype_members[AXIS_COUNT];
OpSet group_ops[GROUP_COUNT];

/* GroupOp's groups, as tinygrad lists them. Derived groups (ALU, Elementwise, All) are unions. */
#define END_OPS OP_NONE
static const Op group_unary[] = {OP_EXP2, OP_LOG2, OP_SIN, OP_SQRT, OP_RECIPROCAL, OP_NEG, OP_TRUNC, END_OPS};
static const Op group_binary[] = {OP_ADD, OP_MUL, OP_IDIV, OP_MAX, OP_MOD, OP_CMPLT, OP_CMPNE, OP_CMPEQ, OP_XOR, OP_SHL,
                                  OP_SHR, OP_OR, OP_AND, OP_THREEFRY, OP_SUB, OP_FDIV, OP_POW, END_OPS};
static const Op group_ternary[] = {OP_WHERE, OP_MULACC, END_OPS};
static const Op group_defines[] = {OP_DEFINE_GLOBAL, OP_DEFINE_LOCAL, OP_DEFINE_REG, END_OPS};
static const Op group_irreducible[] = {OP_CONST, OP_DEFINE_VAR, OP_SPECIAL, OP_RANGE, END_OPS};
static const Op group_movement[] = {OP_RESHAPE, OP_EXPAND, OP_PERMUTE, OP_PAD, OP_SHRINK, OP_FLIP, END_OPS};
static const Op group_buffer[] = {OP_LOAD, OP_STORE, OP_CONST, OP_DEFINE_VAR, END_OPS};
static const Op group_commutative[] = {OP_ADD, OP_MUL, OP_MAX, OP_CMPNE, OP_CMPEQ, OP_XOR, OP_AND, OP_OR, END_OPS};
static const Op group_associative[] = {OP_ADD, OP_MUL, OP_AND, OP_OR, OP_MAX, END_OPS};
static const Op group_idempotent[] = {OP_OR, OP_AND, OP_MAX, END_OPS};
static const Op group_comparison[] = {OP_CMPLT, OP_CMPNE, OP_CMPEQ, END_OPS};
static const Op group_unsafepad[] = {OP_RECIPROCAL, OP_LOG2, OP_EXP2, OP_IDIV, OP_POW, END_OPS};
static const Op group_elementwise_extra[] = {OP_CAST, OP_BITCAST, END_OPS};

static const char *const group_names[GROUP_COUNT] = {"Unary", "Binary", "Ternary", "ALU", "Elementwise", "Defines",
  "Irreducible", "Movement", "Buffer", "Commutative", "Associative", "Idempotent", "Comparison", "UnsafePad", "All"};

static OpSet opset_of(const Op *ops) {
  OpSet s = {{0, 0}};
  for (; *ops != END_OPS; ops++) opset_add(&s, *ops);
  return s;
}
static OpSet opset_union(OpSet a, OpSet b) { return (OpSet){{a.bits[0] | b.bits[0], a.bits[1] | b.bits[1]}}; }

static void fill_groups(void) {
  group_ops[GROUP_Unary] = opset_of(group_unary);
  group_ops[GROUP_Binary] = opset_of(group_binary);
  group_ops[GROUP_Ternary] = opset_of(group_ternary);
  group_ops[GROUP_ALU] = opset_union(opset_union(group_ops[GROUP_Unary], group_ops[GROUP_Binary]), group_ops[GROUP_Ternary]);
  group_ops[GROUP_Elementwise] = opset_union(group_ops[GROUP_ALU], opset_of(group_elementwise_extra));
  group_ops[GROUP_Defines] = opset_of(group_defines);
  group_ops[GROUP_Irreducible] = opset_of(group_irreducible);
  group_ops[GROUP_Movement] = opset_of(group_movement);
  group_ops[GROUP_Buffer] = opset_of(group_buffer);
  group_ops[GROUP_Commutative] = opset_of(group_commutative);
  group_ops[GROUP_Associative] = opset_of(group_associative);
  group_ops[GROUP_Idempotent] = opset_of(group_idempotent);
  group_ops[GROUP_Comparison] = opset_of(group_comparison);
  group_ops[GROUP_UnsafePad] = opset_of(group_unsafepad);
  for (int op = 1; op < OP_COUNT; op++) opset_add(&group_ops[GROUP_All], op);
}

int op_from_object(PyObject *o) {
  if (Py_IS_TYPE(o, (PyTypeObject *)Ops_Type)) return (int)PyLong_AsLong(o);
  if (!PyLong_Check(o) || PyBool_Check(o)) {
    PyErr_Format(PyExc_TypeError, "op must be an Ops member, not %.100s", Py_TYPE(o)->tp_name);
    return -1;
  }
  long v = PyLong_AsLong(o);
  if (v < 1 || v >= OP_COUNT) {
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
    PyErr_Clear();   /* an int too big for a long is just another unknown value */
    PyErr_Format(PyExc_ValueError, "%R is not a valid Ops value (1..%d)", o, OP_COUNT - 1);
    return -1;
  }
  return (int)v;
}

/* Make an enum whose str(), repr() and format() all give "Cls.NAME", as tinygrad's FastEnum/AxisType. */
static PyObject *make_named_enum(const char *base, const char *clsname, const char *const *names) {
  PyObject *cls = tinyc_make_enum(base, clsname, names);
  if (!cls) return NULL;
  PyObject *enum_mod = PyImport_ImportModule("enum"), *enum_cls = enum_mod ? getattr_literal(enum_mod, "Enum") : NULL;
  PyObject *str = enum_cls ? getattr_literal(enum_cls, "__str__") : NULL;
  PyObject *fmt = enum_cls ? getattr_literal(enum_cls, "__format__") : NULL;
  int rc = str && fmt && PyObject_SetAttrString(cls, "__str__", str) == 0 && PyObject_SetAttrString(cls, "__repr__", str) == 0 &&
           PyObject_SetAttrString(cls, "__format__", fmt) == 0 ? 0 : -1;
  Py_XDECREF(enum_mod); Py_XDECREF(enum_cls); Py_XDECREF(str); Py_XDECREF(fmt);
  if (rc < 0) Py_CLEAR(cls);
  return cls;
}

/* Fill members[1..n] from an enum class by value (borrowed: the class keeps them alive). */
static int collect_members(PyObject *cls, PyObject **members, int n) {
  for (int v = 1; v < n; v++) {
    PyObject *member = PyObject_CallFunction(cls, "i", v);
    if (!member) return -1;
    members[v] = member;
    Py_DECREF(member);
  }
  return 0;
}

static PyObject *make_group_op_class(void) {
  PyObject *dict = PyDict_New();
  if (!dict) return NULL;
  for (int g = 0; g < GROUP_COUNT; g++) {
    PyObject *set = PySet_New(NULL);
    if (!set) goto fail;
    for (int op = 1; op < OP_COUNT; op++)
      if (opset_has(group_ops[g], op) && PySet_Add(set, ops_members[op]) < 0) { Py_DECREF(set); goto fail; }
    int rc = PyDict_SetItemString(dict, group_names[g], set);
    Py_DECREF(set);
    if (rc < 0) goto fail;
  }
  PyObject *module_name = PyUnicode_FromString("tinyc");
  int rc = module_name ? PyDict_SetItemString(dict, "__module__", module_name) : -1;
  Py_XDECREF(module_name);
  if (rc < 0) goto fail;
  PyObject *cls = PyObject_CallFunction((PyObject *)&PyType_Type, "s()O", "GroupOp", dict);
  Py_DECREF(dict);
  return cls;
fail:
  Py_DECREF(dict);
  return NULL;
}

int tinyc_init_ops_enum(PyObject *m) {
  fill_groups();
  const char *const *names = op_names + 1;  /* the list without the OP_NONE slot, NULL-terminated below */
  const char *list[OP_COUNT];
  for (int i = 0; i < OP_COUNT - 1; i++) list[i] = names[i];
  list[OP_COUNT - 1] = NULL;
  if (!(Ops_Type = make_named_enum("IntEnum", "Ops", list))) return -1;
  if (collect_members(Ops_Type, ops_members, OP_COUNT) < 0 || tinyc_add(m, "Ops", Ops_Type) < 0) return -1;
  for (int op = 1; op < OP_COUNT; op++)
    if (!(ops_str[op] = PyUnicode_FromFormat("Ops.%s", op_names[op]))) return -1;

  static const char *const axis_names[] = {
#define X(name) #name,
    AXIS_TYPES(X)
#undef X
    NULL};
  PyObject *axis_cls = make_named_enum("Enum", "AxisType", axis_names);
  if (!axis_cls || collect_members(axis_cls, axistype_members, AXIS_COUNT) < 0 || tinyc_add(m, "AxisType", axis_cls) < 0) return -1;

  PyObject *group_cls = make_group_op_class();
  if (!group_cls) return -1;
  int rc = tinyc_add(m, "GroupOp", group_cls);
  Py_DECREF(group_cls);
  return rc;
}
