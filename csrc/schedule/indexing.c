/* The parts of tinygrad/schedule/indexing.py that codegen needs: BufferizeOpts (the arg of a BUFFERIZE)
 * and apply_movement_op, which says what a movement op does to the index ranges under it. */
#include "../uop/native.h"
#include "../uop/ops_movement.h"
#include "indexing.h"
#include "../helpers/dataclass.h"

/* ---- BufferizeOpts: a frozen dataclass (device, addrspace=AddrSpace.GLOBAL, removable=True) ---- */

static PyObject *BufferizeOpts_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"device", "addrspace", "removable", NULL};
  PyObject *device, *addrspace = addrspace_members[ADDRSPACE_GLOBAL], *removable = Py_True;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:BufferizeOpts", kwlist, &device, &addrspace, &removable)) return NULL;
  BufferizeOpts *self = (BufferizeOpts *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->device = Py_NewRef(device);
  self->addrspace = Py_NewRef(addrspace);
  self->removable = Py_NewRef(removable);
  return (PyObject *)self;
}

PyObject *bufferize_opts_new(PyObject *device, AddrSpaceId addrspace, bool removable) {
  BufferizeOpts *self = PyObject_New(BufferizeOpts, &BufferizeOpts_Type);
  if (!self) return NULL;
  self->device = Py_NewRef(device);
  self->addrspace = Py_NewRef(addrspace_members[addrspace]);
  self->removable = Py_NewRef(removable ? Py_True : Py_False);
  return (PyObject *)self;
}

static void BufferizeOpts_dealloc(BufferizeOpts *self) {
  Py_XDECREF(self->device); Py_XDECREF(self->addrspace); Py_XDECREF(self->removable);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* tinygrad's @dataclass(frozen=True), with its defaults */
static PyObject *default_addrspace(void) { return Py_NewRef(addrspace_members[ADDRSPACE_GLOBAL]); }
static const DataclassField bufferize_opts_fields[] = {
  DATACLASS_FIELD(BufferizeOpts, device, "the device (the local buffer's id on AddrSpace.LOCAL)"),
  DATACLASS_FIELD_DEFAULT(BufferizeOpts, addrspace, NULL, default_addrspace),
  DATACLASS_FIELD_DEFAULT(BufferizeOpts, removable, NULL, dataclass_true), {NULL}};
static const Dataclass bufferize_opts_dataclass = {bufferize_opts_fields, .frozen = true};

PyTypeObject BufferizeOpts_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.BufferizeOpts",
  .tp_basicsize = sizeof(BufferizeOpts),
  .tp_dealloc = (destructor)BufferizeOpts_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "BufferizeOpts(device, addrspace=AddrSpace.GLOBAL, removable=True): how a BUFFERIZE is realized",
  .tp_new = BufferizeOpts_new,
};

/* ---- apply_movement_op ---- */

static PatternMatcher *pm_pad, *pm_reshape;   /* symbolic+pm_simplify_valid(+pm_drop_and_clauses), made on first use */

static int make_pms(void) {
  if (pm_pad) return 0;
  PatternMatcher *sym = native_get("symbolic"), *valid = native_get("pm_simplify_valid"), *drop = native_get("pm_drop_and_clauses");
  if (!sym || !valid || !drop) { PyErr_SetString(PyExc_RuntimeError, "apply_movement_op: symbolic rule sets are not registered"); return -1; }
  PatternMatcher *a = pm_concat(sym, valid), *b = a ? pm_concat(a, drop) : NULL;
  if (!b) { Py_XDECREF(a); return -1; }
  pm_pad = a; pm_reshape = b;
  return 0;
}

static Py_ssize_t min3(Py_ssize_t a, Py_ssize_t b, Py_ssize_t c) { return a < b ? (a < c ? a : c) : (b < c ? b : c); }

static int is_zero(PyObject *x) {
  PyObject *z = PyLong_FromLong(0);
  int r = z ? PyObject_RichCompareBool(x, z, Py_EQ) : -1;
  Py_XDECREF(z);
  return r;
}

/* (ss, e) of one arg pair */
static int arg_pair(PyObject *arg, Py_ssize_t i, PyObject **s, PyObject **e) {
  PyObject *p = PyTuple_GET_ITEM(arg, i);
  if (!PyTuple_Check(p) || PyTuple_GET_SIZE(p) != 2) { PyErr_SetString(PyExc_ValueError, "apply_movement_op: expected (begin, end) pairs"); return -1; }
  *s = PyTuple_GET_ITEM(p, 0); *e = PyTuple_GET_ITEM(p, 1);
  return 0;
}

/* one padded axis: r if nothing is padded, else valid(s <= r < sh+s) ? r-s : Invalid */
static PyObject *pad_axis(PyObject *r, PyObject *sh, PyObject *s, PyObject *e) {
  int z1 = is_zero(s), z2 = z1 > 0 ? is_zero(e) : 0;
  if (z1 < 0 || z2 < 0) return NULL;
  if (z1 && z2) return Py_NewRef(r);
  PyObject *ge = PyObject_RichCompare(r, s, Py_GE), *end = ge ? PyNumber_Add(sh, s) : NULL;
  PyObject *lt = end ? PyObject_RichCompare(r, end, Py_LT) : NULL, *cond = lt ? PyNumber_And(ge, lt) : NULL, *ret = NULL;
  Py_XDECREF(ge); Py_XDECREF(end); Py_XDECREF(lt);
  if (!cond) return NULL;
  if (!UOp_Check(cond)) { Py_DECREF(cond); return PyErr_Format(PyExc_TypeError, "apply_movement_op: PAD needs UOp ranges"); }
  UOp *valid = graph_rewrite((UOp *)cond, pm_pad, Py_None, false, NULL);
  Py_DECREF(cond);
  PyObject *sub = valid ? PyNumber_Subtract(r, s) : NULL;
  PyObject *inv = sub ? (PyObject *)uop_invalid(1) : NULL;
  if (inv) ret = PyObject_CallMethod((PyObject *)valid, "where", "OO", sub, inv);
  Py_XDECREF(valid); Py_XDECREF(sub); Py_XDECREF(inv);
  return ret;
}

/* _apply_reshape: the input axes as functions of the output axes urngs, through one flat index */
static UOp *apply_reshape(PyObject *in_shape, PyObject *out_shape, UOp *urngs) {
  Py_ssize_t n = PyTuple_GET_SIZE(out_shape) < urngs->nsrc ? PyTuple_GET_SIZE(out_shape) : urngs->nsrc;
  PyObject *acc = PyLong_FromLong(1), *combined = (PyObject *)uop_const_int(DTYPE(INDEX), 0);
  for (Py_ssize_t i = n - 1; acc && combined && i >= 0; i--) {
    PyObject *term = PyNumber_Multiply(acc, (PyObject *)urngs->src[i]);
    Py_SETREF(acc, PyNumber_Multiply(acc, PyTuple_GET_ITEM(out_shape, i)));
    if (!term) { Py_CLEAR(combined); break; }
    Py_SETREF(combined, PyNumber_Add(combined, term));
    Py_DECREF(term);
  }
  Py_XDECREF(acc);
  if (!combined) return NULL;
  /* sum() starts from the const 0 and adds the terms in the order they were made (innermost first) */
  Py_ssize_t k = PyTuple_GET_SIZE(in_shape);
  UOp **outs = PyMem_Calloc((size_t)(k ? k : 1), sizeof(UOp *));
  UOp *ret = NULL;
  if (!outs) { Py_DECREF(combined); PyErr_NoMemory(); return NULL; }
  Py_ssize_t i = k - 1;
  for (; i >= 0; i--) {
    PyObject *s = PyTuple_GET_ITEM(in_shape, i), *m = PyNumber_Remainder(combined, s);
    if (!m || !UOp_Check(m)) { if (m) PyErr_SetString(PyExc_TypeError, "apply_movement_op: RESHAPE needs UOp ranges"); Py_XDECREF(m); break; }
    outs[i] = (UOp *)m;
    Py_SETREF(combined, PyNumber_FloorDivide(combined, s));
    if (!combined) break;
  }
  if (i < 0) {
    UOp *sink = uop_new(OP_SINK, DTYPE(VOID), outs, k, NULL, NULL);
    if (sink) ret = graph_rewrite(sink, pm_reshape, Py_None, false, NULL);
    Py_XDECREF(sink);
  }
  for (Py_ssize_t j = 0; j < k; j++) Py_XDECREF(outs[j]);
  PyMem_Free(outs);
  Py_XDECREF(combined);
  return ret;
}

static PyObject *reshape_rngs(PyObject *in_shape, PyObject *arg, PyObject *rngs) {
  Py_ssize_t n = PyTuple_GET_SIZE(rngs);
  for (Py_ssize_t i = 0; i < n; i++)
    if (!UOp_Check(PyTuple_GET_ITEM(rngs, i))) return PyErr_Format(PyExc_TypeError, "apply_movement_op: ranges must be UOps");
  UOp *sink = uop_new(OP_SINK, DTYPE(VOID), (UOp *const *)&PyTuple_GET_ITEM(rngs, 0), n, NULL, NULL);
  if (!sink) return NULL;
  PtrMap memo = {0};
  PyObject *ranges = uop_ranges(sink, &memo), *sub = ranges ? PyDict_New() : NULL, *inv = sub ? PyDict_New() : NULL, *ret = NULL;
  PyObject *key, *val;
  Py_ssize_t pos = 0, i = 0;
  while (inv && PyDict_Next(ranges, &pos, &key, &val)) {   /* each range becomes a PLACEHOLDER range of the same size */
    UOp *r = (UOp *)key;
    PyObject *rarg = Py_BuildValue("(nO)", i++, axistype_members[AXIS_PLACEHOLDER]);
    UOp *ph = rarg && r->nsrc ? uop_new(OP_RANGE, DTYPE(INDEX), r->src, 1, rarg, NULL) : NULL;
    Py_XDECREF(rarg);
    if (!ph || PyDict_SetItem(sub, key, (PyObject *)ph) < 0 || PyDict_SetItem(inv, (PyObject *)ph, key) < 0) {
      if (!ph && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "RANGE without a size");
      Py_XDECREF(ph); Py_CLEAR(inv); break;
    }
    Py_DECREF(ph);
  }
  uop_ranges_memo_free(&memo);
  PyObject *subbed = inv ? (PyObject *)uop_substitute(sink, sub) : NULL;
  UOp *res = subbed ? apply_reshape(in_shape, arg, (UOp *)subbed) : NULL;
  PyObject *back = res ? (PyObject *)uop_substitute(res, inv) : NULL;
  if (back) ret = getattr_literal(back, "src");
  Py_DECREF(sink); Py_XDECREF(sub); Py_XDECREF(inv); Py_XDECREF(subbed); Py_XDECREF(res); Py_XDECREF(back);
  return ret;
}

PyObject *apply_movement_op(Op op, PyObject *in_shape_o, PyObject *arg_o, PyObject *rngs_o) {
  if (op != OP_SHRINK && op != OP_PERMUTE && op != OP_FLIP && op != OP_EXPAND && op != OP_PAD && op != OP_RESHAPE)
    return PyErr_Format(PyExc_RuntimeError, "%U is not a MovementOp", op > 0 && op < OP_COUNT ? ops_str[op] : Py_None);
  if (make_pms() < 0) return NULL;
  PyObject *in_shape = PySequence_Tuple(in_shape_o), *arg = in_shape ? PySequence_Tuple(arg_o) : NULL;
  PyObject *rngs = arg ? PySequence_Tuple(rngs_o) : NULL, *ret = NULL;
  if (!rngs) goto end;
  Py_ssize_t nr = PyTuple_GET_SIZE(rngs), na = PyTuple_GET_SIZE(arg), ns = PyTuple_GET_SIZE(in_shape);
  if (op == OP_RESHAPE) { ret = reshape_rngs(in_shape, arg, rngs); goto end; }
  if (op == OP_PERMUTE) {   /* rngs[p] for p in argsort(arg) */
    PyObject *order = PyList_New(na);
    for (Py_ssize_t i = 0; order && i < na; i++) {
      PyObject *p = Py_BuildValue("(On)", PyTuple_GET_ITEM(arg, i), i);
      if (!p) { Py_CLEAR(order); break; }
      PyList_SET_ITEM(order, i, p);
    }
    if (!order || PyList_Sort(order) < 0) { Py_XDECREF(order); goto end; }
    ret = PyTuple_New(na);
    for (Py_ssize_t i = 0; ret && i < na; i++) {
      Py_ssize_t p = PyLong_AsSsize_t(PyTuple_GET_ITEM(PyList_GET_ITEM(order, i), 1));
      if (p >= nr) { Py_CLEAR(ret); PyErr_SetString(PyExc_IndexError, "tuple index out of range"); break; }
      PyTuple_SET_ITEM(ret, i, Py_NewRef(PyTuple_GET_ITEM(rngs, p)));
    }
    Py_DECREF(order);
    goto end;
  }
  Py_ssize_t n = op == OP_SHRINK ? (nr < na ? nr : na) : min3(nr, na, ns);
  ret = PyTuple_New(n);
  for (Py_ssize_t i = 0; ret && i < n; i++) {
    PyObject *a = PyTuple_GET_ITEM(rngs, i), *x = PyTuple_GET_ITEM(arg, i), *v = NULL, *s, *e;
    switch (op) {
    case OP_SHRINK: {   /* a + ss, a when ss == 0 */
      if (arg_pair(arg, i, &s, &e) < 0) break;
      int z = is_zero(s);
      v = z < 0 ? NULL : z ? Py_NewRef(a) : PyNumber_Add(a, s);
      break;
    }
    case OP_FLIP: {   /* (s-1) - a where flipped */
      int f = PyObject_IsTrue(x);
      if (f <= 0) { v = f < 0 ? NULL : Py_NewRef(a); break; }
      PyObject *one = PyLong_FromLong(1), *sm1 = one ? PyNumber_Subtract(PyTuple_GET_ITEM(in_shape, i), one) : NULL;
      v = sm1 ? PyNumber_Subtract(sm1, a) : NULL;
      Py_XDECREF(one); Py_XDECREF(sm1);
      break;
    }
    case OP_EXPAND: {   /* an expanded axis reads index 0 */
      int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(in_shape, i), x, Py_EQ);
      if (same < 0) break;
      if (same) v = Py_NewRef(a);
      else if (!UOp_Check(a)) PyErr_SetString(PyExc_TypeError, "apply_movement_op: EXPAND needs UOp ranges");
      else { PyObject *z = PyLong_FromLong(0); v = z ? (PyObject *)uop_const_like((UOp *)a, z) : NULL; Py_XDECREF(z); }
      break;
    }
    default:   /* PAD */
      if (arg_pair(arg, i, &s, &e) < 0) break;
      v = pad_axis(a, PyTuple_GET_ITEM(in_shape, i), s, e);
      break;
    }
    if (!v) { Py_CLEAR(ret); break; }
    PyTuple_SET_ITEM(ret, i, v);
  }
end:
  Py_XDECREF(in_shape); Py_XDECREF(arg); Py_XDECREF(rngs);
  return ret;
}

static PyObject *py_apply_movement_op(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *op_o, *in_shape, *arg, *rngs;
  if (!PyArg_ParseTuple(args, "OOOO:apply_movement_op", &op_o, &in_shape, &arg, &rngs)) return NULL;
  int op = op_from_object(op_o);
  return op < 0 ? NULL : apply_movement_op((Op)op, in_shape, arg, rngs);
}

static PyMethodDef indexing_functions[] = {
  {"apply_movement_op", py_apply_movement_op, METH_VARARGS,
   "apply_movement_op(op, in_shape, arg, rngs): the ranges under a movement op, as tinygrad's schedule/indexing.py"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_indexing(PyObject *m) {
  if (dataclass_ready(&BufferizeOpts_Type, &bufferize_opts_dataclass) < 0) return -1;
  if (tinyc_add(m, "BufferizeOpts", (PyObject *)&BufferizeOpts_Type) < 0) return -1;
  return PyModule_AddFunctions(m, indexing_functions);
}
