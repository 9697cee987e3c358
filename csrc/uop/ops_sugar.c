/* tinygrad/uop/ops.py, "uop syntactic sugar": the constructors kernel ASTs are built with
 * (const, range, special, sink, index, load, store, end, after, cast, gep, vectorize, ...). */
#include "uop.h"

/* ---- C constructors ---- */

UOp *uop_const(DType *dtype, PyObject *b) {
  if (UOp_Check(b)) {   /* a UOp passes through; a BIND gives its variable */
    UOp *u = (UOp *)b;
    if (u->op == OP_BIND && u->nsrc == 2) u = u->src[0];
    return (UOp *)Py_NewRef(u);
  }
  Op op = OP_CONST;
  if (PyTuple_Check(b)) {
    Py_ssize_t n = PyTuple_GET_SIZE(b);
    if (n == 0) return (UOp *)PyErr_Format(PyExc_ValueError, "can't create const from empty tuple");
    bool same = true;
    for (Py_ssize_t i = 1; i < n && same; i++) {
      int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(b, 0), PyTuple_GET_ITEM(b, i), Py_EQ);
      if (eq < 0) return NULL;
      same = eq;
    }
    if (same) b = PyTuple_GET_ITEM(b, 0);   /* no VCONST needed when all lanes agree */
    else op = OP_VCONST;
  }
  PyObject *arg = dtype_as_const(b, dtype);
  if (!arg) return NULL;
  UOp *ret = uop_new0(op, dtype, arg);
  Py_DECREF(arg);
  return ret;
}

UOp *uop_const_int(DType *dtype, long long v) {
  PyObject *b = PyLong_FromLongLong(v);
  UOp *ret = b ? uop_const(dtype, b) : NULL;
  Py_XDECREF(b);
  return ret;
}

/* const with an optional DEVICE source, as UOp.const(dtype, b, device=...) */
static UOp *const_on_device(DType *dtype, PyObject *b, PyObject *device) {
  UOp *c = uop_const(dtype, b);
  if (!c || device == Py_None || UOp_Check(b)) return c;
  UOp *dev = uop_new0(OP_DEVICE, DTYPE(VOID), device);
  UOp *ret = dev ? uop_new1(c->op, c->dtype, dev, c->arg) : NULL;
  Py_DECREF(c); Py_XDECREF(dev);
  return ret;
}

UOp *uop_const_like(UOp *self, PyObject *b) {
  PyObject *device = uop_device(self);
  if (!device) return NULL;
  UOp *ret = const_on_device(self->dtype, b, device);
  Py_DECREF(device);
  return ret;
}

UOp *uop_alu(Op op, UOp *const *src, Py_ssize_t nsrc) {
  DType *dt = src[nsrc - 1]->dtype;
  if (IN_GROUP(op, Comparison)) dt = dt->count > 1 ? dtype_vec(DTYPE(BOOL), dt->count) : DTYPE(BOOL);
  return dt ? uop_new(op, dt, src, nsrc, NULL, NULL) : NULL;
}

/* ---- argument helpers ---- */

/* Take `dtype`, `arg` and `tag` out of a kwargs dict (tinygrad passes **kwargs on to UOp());
 * anything else is an error naming the method. */
typedef struct { DType *dtype; PyObject *arg, *tag; } NodeKw;

static int parse_node_kw(PyObject *kw, const char *method, NodeKw *out) {
  if (!kw) return 0;
  Py_ssize_t pos = 0;
  PyObject *key, *val;
  while (PyDict_Next(kw, &pos, &key, &val)) {
    if (PyUnicode_CompareWithASCIIString(key, "dtype") == 0) {
      if (!DType_Check(val)) { PyErr_Format(PyExc_TypeError, "%s: dtype must be a DType, not %.100s", method, Py_TYPE(val)->tp_name); return -1; }
      out->dtype = (DType *)val;
    } else if (PyUnicode_CompareWithASCIIString(key, "arg") == 0) out->arg = val;
    else if (PyUnicode_CompareWithASCIIString(key, "tag") == 0) out->tag = val;
    else { PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", method, key); return -1; }
  }
  return 0;
}

/* self followed by the UOps of args (None entries dropped when skip_none), into a fresh array */
static Py_ssize_t collect_src(UOp *self, PyObject *args, Py_ssize_t start, bool skip_none, UOp ***out) {
  Py_ssize_t n = PyTuple_GET_SIZE(args), k = 0;
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)(n + 1));
  if (!src) { PyErr_NoMemory(); return -1; }
  if (self) src[k++] = self;
  for (Py_ssize_t i = start; i < n; i++) {
    PyObject *o = PyTuple_GET_ITEM(args, i);
    if (skip_none && o == Py_None) continue;
    if (!UOp_Check(o)) {
      PyErr_Format(PyExc_TypeError, "expected a UOp source, got %.100s", Py_TYPE(o)->tp_name);
      PyMem_Free(src);
      return -1;
    }
    src[k++] = (UOp *)o;
  }
  *out = src;
  return k;
}

/* UOp(op, kw.dtype or dtype, (self,)+args, **kw) */
static PyObject *make_with_args(Op op, DType *dtype, UOp *self, PyObject *args, PyObject *kw, bool skip_none, const char *name) {
  NodeKw nk = {dtype, NULL, NULL};
  if (parse_node_kw(kw, name, &nk) < 0) return NULL;
  UOp **src;
  Py_ssize_t n = collect_src(self, args, 0, skip_none, &src);
  if (n < 0) return NULL;
  PyObject *ret = (PyObject *)uop_new(op, nk.dtype, src, n, nk.arg, nk.tag);
  PyMem_Free(src);
  return ret;
}

static DType *as_dtype(PyObject *o, const char *what) {
  if (DType_Check(o)) return (DType *)o;
  PyErr_Format(PyExc_TypeError, "%s must be a DType, not %.100s", what, Py_TYPE(o)->tp_name);
  return NULL;
}

/* sint_to_uop: an int becomes a const of dtype, a UOp is cast to dtype */
static UOp *sint_to_uop(PyObject *x, DType *dtype) {
  if (UOp_Check(x)) {
    UOp *u = (UOp *)x;
    if (u->dtype == dtype) return (UOp *)Py_NewRef(u);
    return uop_new1(OP_CAST, dtype, u, NULL);
  }
  if (!PyLong_Check(x)) return (UOp *)PyErr_Format(PyExc_TypeError, "expected an int or a UOp, got %.100s", Py_TYPE(x)->tp_name);
  return uop_const(dtype, x);
}

/* ---- Python methods ---- */

static PyObject *UOp_const(PyObject *cls, PyObject *args, PyObject *kw) {
  UNUSED(cls);
  static char *kwlist[] = {"dtype", "b", "device", "shape", "unique", NULL};
  PyObject *dtype, *b, *device = Py_None, *shape = Py_None, *unique = Py_False;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOO:const", kwlist, &dtype, &b, &device, &shape, &unique)) return NULL;
  DType *dt = as_dtype(dtype, "const dtype");
  if (!dt) return NULL;
  if (shape != Py_None) return PyErr_Format(PyExc_NotImplementedError, "UOp.const with a shape (tensor graphs) is not supported");
  return (PyObject *)const_on_device(dt, b, device);
}

static PyObject *UOp_const_like(UOp *self, PyObject *b) { return (PyObject *)uop_const_like(self, b); }

static PyObject *UOp_variable(PyObject *cls, PyObject *args, PyObject *kw) {
  UNUSED(cls);
  static char *kwlist[] = {"name", "min_val", "max_val", "dtype", NULL};
  PyObject *name, *lo, *hi, *dtype = (PyObject *)DTYPE(INDEX);
  if (!PyArg_ParseTupleAndKeywords(args, kw, "UOO|O:variable", kwlist, &name, &lo, &hi, &dtype)) return NULL;
  DType *dt = as_dtype(dtype, "variable dtype");
  if (!dt) return NULL;
  if (UOp_Check(lo) || UOp_Check(hi)) return PyErr_Format(PyExc_TypeError, "can't create Variable %U with UOp bounds", name);
  PyObject *arg = PyTuple_Pack(3, name, lo, hi);
  PyObject *ret = arg ? (PyObject *)uop_new0(OP_DEFINE_VAR, dt, arg) : NULL;
  Py_XDECREF(arg);
  return ret;
}

/* UOp.unique(arg=None): a UNIQUE numbered arg, or by the next number of this process's count (tinygrad's unique_num) */
static unsigned long long unique_num;
static UOp *uop_unique(PyObject *arg) {
  PyObject *num = arg != Py_None ? Py_NewRef(arg) : PyLong_FromUnsignedLongLong(unique_num++);
  UOp *ret = num ? uop_new0(OP_UNIQUE, DTYPE(VOID), num) : NULL;
  Py_XDECREF(num);
  return ret;
}
static PyObject *UOp_unique(PyObject *cls, PyObject *args, PyObject *kw) {
  UNUSED(cls);
  static char *kwlist[] = {"arg", NULL};
  PyObject *arg = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:unique", kwlist, &arg)) return NULL;
  return (PyObject *)uop_unique(arg);
}

/* UOp.new_buffer(device, size, dtype, num=None): BUFFER(UNIQUE(num), DEVICE(device)) of size elements */
static PyObject *UOp_new_buffer(PyObject *cls, PyObject *args, PyObject *kw) {
  UNUSED(cls);
  static char *kwlist[] = {"device", "size", "dtype", "num", NULL};
  PyObject *device, *size, *dtype, *num = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:new_buffer", kwlist, &device, &size, &dtype, &num)) return NULL;
  DType *dt = as_dtype(dtype, "new_buffer dtype");
  UOp *unique = dt ? uop_unique(num) : NULL, *dev = unique ? uop_new0(OP_DEVICE, DTYPE(VOID), device) : NULL;
  PyObject *ret = dev ? (PyObject *)uop_new2(OP_BUFFER, dt, unique, dev, size) : NULL;
  Py_XDECREF(unique); Py_XDECREF(dev);
  return ret;
}

/* UOp.placeholder(shape, dtype, slot, addrspace=AddrSpace.GLOBAL): the DEFINE_GLOBAL/LOCAL/REG of slot, a pointer to
 * prod(shape) elements, reshaped to shape when it has more than one dimension */
static PyObject *UOp_placeholder(PyObject *cls, PyObject *args, PyObject *kw) {
  UNUSED(cls);
  static char *kwlist[] = {"shape", "dtype", "slot", "addrspace", NULL};
  static const Op define_of[] = {[ADDRSPACE_GLOBAL] = OP_DEFINE_GLOBAL, [ADDRSPACE_LOCAL] = OP_DEFINE_LOCAL, [ADDRSPACE_REG] = OP_DEFINE_REG};
  PyObject *shape, *dtype, *slot, *addrspace = addrspace_members[ADDRSPACE_GLOBAL];
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:placeholder", kwlist, &shape, &dtype, &slot, &addrspace)) return NULL;
  int space = ADDRSPACE_GLOBAL;
  while (space <= ADDRSPACE_REG && addrspace_members[space] != addrspace) space++;
  if (space > ADDRSPACE_REG) { PyErr_SetObject(PyExc_KeyError, addrspace); return NULL; }
  PyObject *seq = PySequence_Fast(shape, "placeholder shape must be a sequence"), *size = seq ? PyLong_FromLong(1) : NULL;
  for (Py_ssize_t i = 0; size && i < PySequence_Fast_GET_SIZE(seq); i++) Py_SETREF(size, PyNumber_Multiply(size, PySequence_Fast_GET_ITEM(seq, i)));
  PyObject *ptr = size ? PyObject_CallMethod(dtype, "ptr", "OO", size, addrspace) : NULL, *ret = NULL;
  if (ptr && !DType_Check(ptr)) PyErr_Format(PyExc_TypeError, "placeholder: %R.ptr() is no DType", dtype);
  else if (ptr) ret = (PyObject *)uop_new0(define_of[space], (DType *)ptr, slot);
  if (ret && PySequence_Fast_GET_SIZE(seq) > 1) Py_SETREF(ret, PyObject_CallMethod(ret, "reshape", "(O)", shape));
  Py_XDECREF(seq); Py_XDECREF(size); Py_XDECREF(ptr);
  return ret;
}

/* UOp.range(end, axis_id, axis_type=AxisType.LOOP, *arg, dtype=dtypes.index, src=(), **kwargs) */
static PyObject *UOp_range(PyObject *cls, PyObject *args, PyObject *kw) {
  UNUSED(cls);
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n < 2) return PyErr_Format(PyExc_TypeError, "range() needs end and axis_id");
  PyObject *axis_type = n > 2 ? PyTuple_GET_ITEM(args, 2) : axistype_members[AXIS_LOOP];
  NodeKw nk = {DTYPE(INDEX), NULL, NULL};
  PyObject *extra_src = NULL;
  if (kw) {
    PyObject *kwcopy = PyDict_Copy(kw);
    if (!kwcopy) return NULL;
    extra_src = PyDict_GetItemString(kwcopy, "src");
    Py_XINCREF(extra_src);
    if (extra_src) PyDict_DelItemString(kwcopy, "src");
    PyObject *at = PyDict_GetItemString(kwcopy, "axis_type");
    if (at) { axis_type = at; }
    int rc = parse_node_kw(at ? NULL : kwcopy, "range", &nk);
    if (at) { PyDict_DelItemString(kwcopy, "axis_type"); rc = parse_node_kw(kwcopy, "range", &nk); }
    Py_DECREF(kwcopy);
    if (rc < 0) { Py_XDECREF(extra_src); return NULL; }
  }
  PyObject *arg = PyTuple_New(2 + (n > 3 ? n - 3 : 0)), *ret = NULL;
  UOp *end = NULL, **src = NULL;
  if (!arg) goto done;
  PyTuple_SET_ITEM(arg, 0, Py_NewRef(PyTuple_GET_ITEM(args, 1)));
  PyTuple_SET_ITEM(arg, 1, Py_NewRef(axis_type));
  for (Py_ssize_t i = 3; i < n; i++) PyTuple_SET_ITEM(arg, i - 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
  if (!(end = sint_to_uop(PyTuple_GET_ITEM(args, 0), nk.dtype))) goto done;
  Py_ssize_t nsrc = 1;
  if (extra_src) {
    PyObject *t = PySequence_Tuple(extra_src);
    if (!t) goto done;
    nsrc = collect_src(end, t, 0, false, &src);
    Py_DECREF(t);
    if (nsrc < 0) goto done;
  }
  ret = (PyObject *)uop_new(OP_RANGE, nk.dtype, src ? src : &end, nsrc, arg, nk.tag);
done:
  PyMem_Free(src);
  Py_XDECREF(arg); Py_XDECREF(end); Py_XDECREF(extra_src);
  return ret;
}

static PyObject *UOp_special(PyObject *cls, PyObject *args, PyObject *kw) {
  UNUSED(cls);
  static char *kwlist[] = {"end", "name", "dtype", NULL};
  PyObject *end, *name, *dtype = (PyObject *)DTYPE(INDEX);
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:special", kwlist, &end, &name, &dtype)) return NULL;
  DType *dt = as_dtype(dtype, "special dtype");
  UOp *e = dt ? sint_to_uop(end, dt) : NULL;
  PyObject *ret = e ? (PyObject *)uop_new1(OP_SPECIAL, dt, e, name) : NULL;
  Py_XDECREF(e);
  return ret;
}

/* sink/group take their first UOp as self when called on an instance, and none when called on
 * the class, like a plain Python function (see FreeMethod below). */
static PyObject *UOp_sink(PyObject *unused, PyObject *args, PyObject *kw) {
  UNUSED(unused);
  return make_with_args(OP_SINK, DTYPE(VOID), NULL, args, kw, true, "sink");
}
static PyObject *UOp_group(PyObject *unused, PyObject *args, PyObject *kw) {
  UNUSED(unused);
  if (PyTuple_GET_SIZE(args) == 1 && UOp_Check(PyTuple_GET_ITEM(args, 0))) return Py_NewRef(PyTuple_GET_ITEM(args, 0));
  return make_with_args(OP_GROUP, DTYPE(VOID), NULL, args, kw, true, "group");
}

static PyObject *UOp_vectorize(UOp *self, PyObject *args, PyObject *kw) {
  DType *dt = dtype_vec(self->dtype, (int)PyTuple_GET_SIZE(args) + 1);
  return dt ? make_with_args(OP_VECTORIZE, dt, self, args, kw, false, "vectorize") : NULL;
}

/* index(*srcs, ptr=False, **kwargs): dtype self.dtype when ptr else self.dtype.base; None srcs dropped */
static PyObject *UOp_index(UOp *self, PyObject *args, PyObject *kw) {
  bool ptr = false;
  PyObject *rest = NULL;
  if (kw && PyDict_GetItemString(kw, "ptr")) {
    int t = PyObject_IsTrue(PyDict_GetItemString(kw, "ptr"));
    if (t < 0 || !(rest = PyDict_Copy(kw)) || PyDict_DelItemString(rest, "ptr") < 0) { Py_XDECREF(rest); return NULL; }
    ptr = t;
  }
  PyObject *ret = make_with_args(OP_INDEX, ptr ? self->dtype : dtype_base(self->dtype), self, args, rest ? rest : kw, true, "index");
  Py_XDECREF(rest);
  return ret;
}

static PyObject *UOp_load(UOp *self, PyObject *args, PyObject *kw) {
  return make_with_args(OP_LOAD, dtype_base(self->dtype), self, args, kw, false, "load");
}

/* store(src, **kwargs): a non-UOp value becomes a const of self's dtype */
static PyObject *UOp_store(UOp *self, PyObject *args, PyObject *kw) {
  if (PyTuple_GET_SIZE(args) != 1) return PyErr_Format(PyExc_TypeError, "store() takes one value");
  PyObject *val = PyTuple_GET_ITEM(args, 0);
  UOp *v = UOp_Check(val) ? (UOp *)Py_NewRef(val) : uop_const(self->dtype, val);
  if (!v) return NULL;
  PyObject *one = PyTuple_Pack(1, (PyObject *)v);
  PyObject *ret = one ? make_with_args(OP_STORE, DTYPE(VOID), self, one, kw, false, "store") : NULL;
  Py_XDECREF(one); Py_DECREF(v);
  return ret;
}

static PyObject *UOp_end(UOp *self, PyObject *args) {
  if (PyTuple_GET_SIZE(args) == 0) return Py_NewRef(self);
  return make_with_args(OP_END, DTYPE(VOID), self, args, NULL, false, "end");
}
static PyObject *UOp_after(UOp *self, PyObject *args, PyObject *kw) {
  return make_with_args(OP_AFTER, self->dtype, self, args, kw, false, "after");
}
static PyObject *UOp_barrier(UOp *self, PyObject *args) {
  return make_with_args(OP_BARRIER, DTYPE(VOID), self, args, NULL, false, "barrier");
}
static PyObject *UOp_assign(UOp *self, PyObject *x) {
  if (!UOp_Check(x)) return PyErr_Format(PyExc_TypeError, "assign needs a UOp");
  return (PyObject *)uop_new2(OP_ASSIGN, self->dtype, self, (UOp *)x, NULL);
}
static PyObject *UOp_detach(UOp *self, PyObject *unused) {
  UNUSED(unused);
  return (PyObject *)uop_new1(OP_DETACH, self->dtype, self, NULL);
}
static PyObject *UOp_reduce_m(UOp *self, PyObject *args, PyObject *kw) {
  return make_with_args(OP_REDUCE, self->dtype, self, args, kw, false, "reduce");
}

PyObject *UOp_cast(UOp *self, PyObject *dtype) {
  DType *dt = as_dtype(dtype, "cast dtype");
  if (!dt) return NULL;
  /* a scalar target widens to self's vector width */
  if (dt->count == 1 && dt->count != self->dtype->count && !(dt = dtype_vec(dt, self->dtype->count))) return NULL;
  if (self->dtype == dt) return Py_NewRef(self);
  return (PyObject *)uop_new1(OP_CAST, dt, self, NULL);
}
static PyObject *UOp_bitcast(UOp *self, PyObject *dtype) {
  DType *dt = as_dtype(dtype, "bitcast dtype");
  return dt ? (PyObject *)uop_new1(OP_BITCAST, dt, self, NULL) : NULL;
}

/* the arg (k,) of a GEP of one lane: a 1-tuple made once for the lanes of the widest vectors (a GEP per lane is the
 * commonest node devectorizing makes), else a new one */
static PyObject *lane_arg(PyObject *k_obj, Py_ssize_t k) {
  static PyObject *lanes[64];
  if (k < 0 || k >= 64) return PyTuple_Pack(1, k_obj);
  if (!lanes[k] && !(lanes[k] = PyTuple_Pack(1, k_obj))) return NULL;
  return Py_NewRef(lanes[k]);
}

PyObject *UOp_gep(UOp *self, PyObject *i) {
  if (PyTuple_Check(i) && PyTuple_GET_SIZE(i) == 1) i = PyTuple_GET_ITEM(i, 0);
  if (PyLong_Check(i)) {
    Py_ssize_t k = PyLong_AsSsize_t(i);
    if (k == -1 && PyErr_Occurred()) return NULL;
    /* shortcuts tinygrad takes instead of making a GEP to fold later */
    if (self->op == OP_VECTORIZE) {   /* self.src[i]: a negative i counts from the end */
      if (k < -(Py_ssize_t)self->nsrc || k >= self->nsrc) return PyErr_Format(PyExc_IndexError, "gep %zd out of range", k);
      return Py_NewRef(self->src[k < 0 ? k + self->nsrc : k]);
    }
    if (self->op == OP_VCONST) {
      PyObject *lane = PySequence_GetItem(self->arg, k);
      PyObject *ret = lane ? (PyObject *)uop_const(dtype_scalar(self->dtype), lane) : NULL;
      Py_XDECREF(lane);
      return ret;
    }
    if (self->op == OP_CONST) return (PyObject *)uop_const(dtype_scalar(self->dtype), self->arg);
    PyObject *t = PyLong_CheckExact(i) ? lane_arg(i, k) : PyTuple_Pack(1, i);
    if (!t) return NULL;
    PyObject *ret = (PyObject *)uop_new1(OP_GEP, dtype_scalar(self->dtype), self, t);
    Py_DECREF(t);
    return ret;
  }
  if (!PyTuple_Check(i)) return PyErr_Format(PyExc_TypeError, "gep index must be an int or a tuple of ints");
  Py_ssize_t n = PyTuple_GET_SIZE(i);
  DType *dt = n > 1 ? dtype_vec(dtype_scalar(self->dtype), (int)n) : dtype_scalar(self->dtype);
  return dt ? (PyObject *)uop_new1(OP_GEP, dt, self, i) : NULL;
}

static PyObject *UOp_broadcast(UOp *self, PyObject *count_obj) {
  long count = PyLong_AsLong(count_obj);
  if (count == -1 && PyErr_Occurred()) return NULL;
  return uop_broadcast(self, count);
}
PyObject *uop_broadcast(UOp *self, long count) {
  if (dtype_vcount(self->dtype) != 1) return PyErr_Format(PyExc_ValueError, "broadcast of a vector %R", (PyObject *)self->dtype);
  if (count == 1) return Py_NewRef(self);
  if (count < 1 || count > UOP_MAX_SRC) return PyErr_Format(PyExc_ValueError, "bad broadcast count %ld", count);
  DType *dt = dtype_vec(self->dtype, (int)count);
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)count);
  if (!dt || !src) { PyMem_Free(src); return dt ? PyErr_NoMemory() : NULL; }
  for (long i = 0; i < count; i++) src[i] = self;
  PyObject *ret = (PyObject *)uop_new(OP_VECTORIZE, dt, src, count, NULL, NULL);
  PyMem_Free(src);
  return ret;
}

/* alu(op, *src, **kwargs): dtype of the last operand, bool for comparisons */
static PyObject *UOp_alu_m(UOp *self, PyObject *args, PyObject *kw) {
  if (PyTuple_GET_SIZE(args) < 1) return PyErr_Format(PyExc_TypeError, "alu() needs an op");
  int op = op_from_object(PyTuple_GET_ITEM(args, 0));
  if (op < 0) return NULL;
  NodeKw nk = {NULL, NULL, NULL};
  if (parse_node_kw(kw, "alu", &nk) < 0) return NULL;
  UOp **src;
  Py_ssize_t n = collect_src(self, args, 1, false, &src);
  if (n < 0) return NULL;
  DType *dt = src[n - 1]->dtype;
  if (IN_GROUP(op, Comparison)) dt = dt->count > 1 ? dtype_vec(DTYPE(BOOL), dt->count) : DTYPE(BOOL);
  PyObject *ret = dt ? (PyObject *)uop_new(op, nk.dtype ? nk.dtype : dt, src, n, nk.arg, nk.tag) : NULL;
  PyMem_Free(src);
  return ret;
}

UOp *uop_invalid(int count) {
  DType *dt = dtype_vec(DTYPE(INDEX), count);
  return dt ? uop_new0(OP_CONST, dt, Invalid) : NULL;
}
static PyObject *UOp_invalid(PyObject *cls, PyObject *args, PyObject *kw) {
  UNUSED(cls);
  static char *kwlist[] = {"count", NULL};
  int count = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|i:invalid", kwlist, &count)) return NULL;
  return (PyObject *)uop_invalid(count);
}

/* self if cond is already a gate, else cond.where(self, invalid) */
UOp *uop_valid(UOp *self, UOp *cond) {
  if (cond->op == OP_WHERE && PyObject_IsTrue(cond->arg) == 1) return (UOp *)Py_NewRef(self);
  UOp *inv = uop_invalid(self->dtype->count), *ret = inv ? uop_new3(OP_WHERE, inv->dtype, cond, self, inv, NULL) : NULL;
  Py_XDECREF(inv);
  return ret;
}
static PyObject *UOp_valid(UOp *self, PyObject *cond) {
  if (!UOp_Check(cond)) return PyErr_Format(PyExc_TypeError, "valid() needs a UOp condition");
  return (PyObject *)uop_valid(self, (UOp *)cond);
}

static bool is_invalid_gate(UOp *u) { return u->op == OP_WHERE && u->src[2]->op == OP_CONST && u->src[2]->arg == Invalid; }

UOp *uop_get_idx(UOp *self) {
  if (dtype_scalar(self->dtype) != DTYPE(INDEX)) return (UOp *)PyErr_Format(PyExc_ValueError, "Can only call get_idx on index dtype");
  return (UOp *)Py_NewRef(is_invalid_gate(self) ? self->src[1] : self);
}
UOp *uop_get_valid(UOp *self) {
  if (dtype_scalar(self->dtype) != DTYPE(INDEX)) return (UOp *)PyErr_Format(PyExc_ValueError, "Can only call get_valid on index dtype");
  if (is_invalid_gate(self)) return (UOp *)Py_NewRef(self->src[0]);
  return uop_const(DTYPE(BOOL), self->arg != Invalid ? Py_True : Py_False);
}
static PyObject *UOp_get_idx(UOp *self, PyObject *unused) { UNUSED(unused); return (PyObject *)uop_get_idx(self); }
static PyObject *UOp_get_valid(UOp *self, PyObject *unused) { UNUSED(unused); return (PyObject *)uop_get_valid(self); }

#define VARKW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
PyMethodDef uop_sugar_methods[] = {
  {"const", VARKW(UOp_const) | METH_STATIC, "UOp.const(dtype, b, device=None)"},
  {"const_like", (PyCFunction)UOp_const_like, METH_O, NULL},
  {"variable", VARKW(UOp_variable) | METH_STATIC, "UOp.variable(name, min_val, max_val, dtype=dtypes.index)"},
  {"unique", VARKW(UOp_unique) | METH_STATIC, "UOp.unique(arg=None)"},
  {"new_buffer", VARKW(UOp_new_buffer) | METH_STATIC, "UOp.new_buffer(device, size, dtype, num=None)"},
  {"placeholder", VARKW(UOp_placeholder) | METH_STATIC, "UOp.placeholder(shape, dtype, slot, addrspace=AddrSpace.GLOBAL)"},
  {"range", VARKW(UOp_range) | METH_STATIC, "UOp.range(end, axis_id, axis_type=AxisType.LOOP, *arg, dtype=, src=)"},
  {"special", VARKW(UOp_special) | METH_STATIC, NULL},
  {"invalid", VARKW(UOp_invalid) | METH_STATIC, NULL},
  {"vectorize", VARKW(UOp_vectorize), NULL},
  {"index", VARKW(UOp_index), NULL},
  {"load", VARKW(UOp_load), NULL},
  {"store", VARKW(UOp_store), NULL},
  {"end", (PyCFunction)UOp_end, METH_VARARGS, NULL},
  {"after", VARKW(UOp_after), NULL},
  {"barrier", (PyCFunction)UOp_barrier, METH_VARARGS, NULL},
  {"assign", (PyCFunction)UOp_assign, METH_O, NULL},
  {"detach", (PyCFunction)UOp_detach, METH_NOARGS, NULL},
  {"reduce", VARKW(UOp_reduce_m), NULL},
  {"cast", (PyCFunction)UOp_cast, METH_O, NULL},
  {"bitcast", (PyCFunction)UOp_bitcast, METH_O, NULL},
  {"gep", (PyCFunction)UOp_gep, METH_O, NULL},
  {"broadcast", (PyCFunction)UOp_broadcast, METH_O, NULL},
  {"alu", VARKW(UOp_alu_m), NULL},
  {"valid", (PyCFunction)UOp_valid, METH_O, NULL},
  {"get_idx", (PyCFunction)UOp_get_idx, METH_NOARGS, NULL},
  {"get_valid", (PyCFunction)UOp_get_valid, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL},
};

/* ---- FreeMethod: a function that binds to an instance but not to the class, like a Python
 * function stored on a class. UOp.sink(a, b) and a.sink(b) both make SINK(a, b). ---- */

typedef struct { PyObject_HEAD PyObject *func; } FreeMethod;

static PyObject *FreeMethod_get(PyObject *self, PyObject *obj, PyObject *type) {
  UNUSED(type);
  PyObject *func = ((FreeMethod *)self)->func;
  if (!obj || obj == Py_None) return Py_NewRef(func);
  return PyMethod_New(func, obj);
}

static PyTypeObject FreeMethod_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.FreeMethod",
  .tp_basicsize = sizeof(FreeMethod),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_descr_get = FreeMethod_get,
};

static PyMethodDef free_methods[] = {
  {"sink", VARKW(UOp_sink), "UOp.sink(*srcs): a SINK of the non-None sources"},
  {"group", VARKW(UOp_group), "UOp.group(*srcs): a GROUP, or the one source"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_uop_sugar(PyObject *m) {
  UNUSED(m);
  if (PyType_Ready(&FreeMethod_Type) < 0) return -1;
  for (PyMethodDef *d = free_methods; d->ml_name; d++) {
    FreeMethod *fm = PyObject_New(FreeMethod, &FreeMethod_Type);
    if (!fm) return -1;
    if (!(fm->func = PyCFunction_New(d, NULL))) { Py_DECREF(fm); return -1; }
    int rc = PyDict_SetItemString(UOp_Type.tp_dict, d->ml_name, (PyObject *)fm);
    Py_DECREF(fm);
    if (rc < 0) return -1;
  }
  PyType_Modified(&UOp_Type);
  return 0;
}
