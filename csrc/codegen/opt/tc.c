/* tinygrad/codegen/opt/tc.py in C: TensorCore and the tensor-core tables of each GPU family.
 *
 * A TensorCore keeps its seven fields as the Python objects it was given (so repr, ==, hash, pickling and
 * dataclasses.replace are the frozen dataclass's) and C copies of the numbers and opts, which the Scheduler reads.
 * Construction checks the types first (TypeError/ValueError, so native code never reads a field it has not checked),
 * then what tinygrad's __post_init__ asserts, in its order and with its messages (AssertionError).
 * The tables are data: one row per tensor core (shape, dtypes, the list it belongs to), shapes written as strings. */
#include "tc.h"
#include "../../helpers/dataclass.h"
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

/* ---- checking the fields ---- */

static int type_error(const char *what) { PyErr_Format(PyExc_TypeError, "TensorCore: %s", what); return -1; }

/* a tuple of n ints, copied to out */
static int int_tuple(PyObject *o, Py_ssize_t n, long *out, const char *what) {
  if (!PyTuple_CheckExact(o) || PyTuple_GET_SIZE(o) != n) return type_error(what);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *v = PyTuple_GET_ITEM(o, i);
    if (!PyLong_CheckExact(v)) return type_error(what);
    if ((out[i] = PyLong_AsLong(v)) == -1 && PyErr_Occurred()) return -1;
  }
  return 0;
}

/* opts: a tuple of "u0", "u1", "l0", "l1" (the kind of split and the dim it splits) */
static int parse_opts(TensorCoreObject *tc) {
  if (!PyTuple_CheckExact(tc->opts)) return type_error("opts must be a tuple of str");
  Py_ssize_t n = PyTuple_GET_SIZE(tc->opts);
  if (n > TC_MAX_OPTS) { PyErr_Format(PyExc_ValueError, "TensorCore: more than %d opts", TC_MAX_OPTS); return -1; }
  tc->nopts = (int)n, tc->nlocal = tc->nupcast = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = PyTuple_GET_ITEM(tc->opts, i);
    if (!PyUnicode_CheckExact(o)) return type_error("opts must be a tuple of str");
    Py_UCS4 k = PyUnicode_GET_LENGTH(o) == 2 ? PyUnicode_READ_CHAR(o, 0) : 0, d = k ? PyUnicode_READ_CHAR(o, 1) : 0;
    if ((k != 'u' && k != 'l') || (d != '0' && d != '1')) {
      PyErr_Format(PyExc_ValueError, "TensorCore: an opt is u0, u1, l0 or l1, not %R", o);
      return -1;
    }
    tc->opt_kind[i] = (char)k, tc->opt_dim[i] = (int)(d - '0');
    if (k == 'l') tc->nlocal++; else tc->nupcast++;
  }
  return 0;
}

/* swizzle: a tuple of swizzles, each a tuple of parts, each a tuple of non-empty axis names */
static int check_swizzle(PyObject *sw) {
  const char *what = "swizzle must be a tuple of tuples of tuples of non-empty str";
  if (!PyTuple_CheckExact(sw)) return type_error(what);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(sw); i++) {
    PyObject *s = PyTuple_GET_ITEM(sw, i);
    if (!PyTuple_CheckExact(s)) return type_error(what);
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(s); j++) {
      PyObject *part = PyTuple_GET_ITEM(s, j);
      if (!PyTuple_CheckExact(part)) return type_error(what);
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(part); k++) {
        PyObject *nm = PyTuple_GET_ITEM(part, k);
        if (!PyUnicode_CheckExact(nm) || PyUnicode_GET_LENGTH(nm) == 0) return type_error(what);
      }
    }
  }
  return 0;
}

static int check_types(TensorCoreObject *tc) {
  if (int_tuple(tc->dims, 3, tc->dim, "dims must be a tuple of 3 ints") < 0) return -1;
  if (!PyLong_CheckExact(tc->threads)) return type_error("threads must be an int");
  if ((tc->nthreads = PyLong_AsLong(tc->threads)) == -1 && PyErr_Occurred()) return -1;
  if (int_tuple(tc->elements_per_thread, 3, tc->ept, "elements_per_thread must be a tuple of 3 ints") < 0) return -1;
  if (!DType_Check(tc->dtype_in) || !DType_Check(tc->dtype_out)) return type_error("dtype_in and dtype_out must be DTypes");
  if (parse_opts(tc) < 0 || check_swizzle(tc->swizzle) < 0) return -1;
  /* get_reduce_axes: int(math.log2(dims[2])) axes of 2 */
  if (tc->dim[2] <= 0) { PyErr_SetString(PyExc_ValueError, "math domain error"); return -1; }
  tc->nreduce = (int)log2((double)tc->dim[2]);
  return 0;
}

/* ---- __post_init__'s assertions ---- */

static int assert_fail(const char *fmt, ...) {
  va_list va;
  va_start(va, fmt);
  PyObject *msg = PyUnicode_FromFormatV(fmt, va);
  va_end(va);
  if (msg) { PyErr_SetObject(PyExc_AssertionError, msg); Py_DECREF(msg); }
  return -1;
}

/* the opts (as the str objects given) that split dim d: tinygrad's gd list */
static PyObject *opts_of_dim(TensorCoreObject *tc, int d) {
  PyObject *ret = PyList_New(0);
  for (int i = 0; ret && i < tc->nopts; i++)
    if (tc->opt_dim[i] == d && PyList_Append(ret, PyTuple_GET_ITEM(tc->opts, i)) < 0) Py_CLEAR(ret);
  return ret;
}

static int check_dims(TensorCoreObject *tc) {
  long nm, l2 = 1L << tc->nlocal, u2 = 1L << tc->nupcast;
  if (__builtin_mul_overflow(tc->dim[0], tc->dim[1], &nm) || nm != l2 * u2)
    return assert_fail("N(%ld) x M(%ld) != local(%ld) x upcast(%ld) with opts(%R)", tc->dim[0], tc->dim[1], l2, u2, tc->opts);
  if (l2 != tc->nthreads) return assert_fail("%ld threads construct the warp but found %ld in %R", tc->nthreads, l2, tc->opts);
  if (u2 != tc->ept[2])
    return assert_fail("%ld elements from C are processed per thread but found %ld in %R", tc->ept[2], u2, tc->opts);
  for (int d = 0; d < 2; d++) {
    PyObject *gd = opts_of_dim(tc, d);
    if (!gd) return -1;
    int bad = tc->dim[d] != 1L << PyList_GET_SIZE(gd);
    if (bad) assert_fail("opts wrong on dims[%d], %ld vs %R", d, tc->dim[d], gd);
    Py_DECREF(gd);
    if (bad) return -1;
  }
  return 0;
}

static Py_ssize_t part_len(PyObject *sw, int s, int part) { return PyTuple_GET_SIZE(PyTuple_GET_ITEM(PyTuple_GET_ITEM(sw, s), part)); }

static int check_swizzle_sizes(TensorCoreObject *tc) {
  PyObject *sw = tc->swizzle;
  if (PyTuple_GET_SIZE(sw) < 2) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); return -1; }
  if (PyTuple_GET_SIZE(PyTuple_GET_ITEM(sw, 0)) != 3 || PyTuple_GET_SIZE(PyTuple_GET_ITEM(sw, 1)) != 3)
    return assert_fail("swizzle has wrong part count");
  static const char *const what[3] = {"local swizzle size is wrong", "upcast swizzle size is wrong", "reduce swizzle size is wrong"};
  const int want[3] = {tc->nlocal, tc->nupcast, tc->nreduce};
  for (int p = 0; p < 3; p++)
    if (part_len(sw, 0, p) != want[p] || part_len(sw, 1, p) != want[p]) return assert_fail("%s", what[p]);
  return 0;
}

/* the names of the axes a swizzle remaps, in order: l0.. u0.. r0.. */
static PyObject *forward_names(TensorCoreObject *tc) {
  const int n[3] = {tc->nlocal, tc->nupcast, tc->nreduce};
  const char letter[3] = {'l', 'u', 'r'};
  PyObject *ret = PyList_New(0);
  for (int p = 0; ret && p < 3; p++)
    for (int i = 0; ret && i < n[p]; i++) {
      PyObject *s = PyUnicode_FromFormat("%c%d", letter[p], i);
      if (!s || PyList_Append(ret, s) < 0) Py_CLEAR(ret);
      Py_XDECREF(s);
    }
  return ret;
}

/* _remaps: for each swizzle, dict(zip(forward names, its parts concatenated)) */
static PyObject *build_remaps(TensorCoreObject *tc) {
  PyObject *fwd = forward_names(tc), *ret = fwd ? PyList_New(0) : NULL;
  for (Py_ssize_t s = 0; ret && s < PyTuple_GET_SIZE(tc->swizzle); s++) {
    PyObject *sw = PyTuple_GET_ITEM(tc->swizzle, s), *d = PyDict_New();
    Py_ssize_t k = 0;
    for (Py_ssize_t p = 0; d && p < PyTuple_GET_SIZE(sw); p++) {
      PyObject *part = PyTuple_GET_ITEM(sw, p);
      for (Py_ssize_t j = 0; d && j < PyTuple_GET_SIZE(part) && k < PyList_GET_SIZE(fwd); j++, k++)
        if (PyDict_SetItem(d, PyList_GET_ITEM(fwd, k), PyTuple_GET_ITEM(part, j)) < 0) Py_CLEAR(d);
    }
    if (!d || PyList_Append(ret, d) < 0) Py_CLEAR(ret);
    Py_XDECREF(d);
  }
  Py_XDECREF(fwd);
  return ret;
}

static int name_in(PyObject *names, PyObject *x) { return PySequence_Contains(names, x); }

/* the zero-stride axes of dim d as u<n>/l<n> names (n counting each kind over all opts) */
static PyObject *zero_stride_names(TensorCoreObject *tc, int d) {
  PyObject *ret = PyList_New(0);
  int un = 0, ln = 0;
  for (int i = 0; ret && i < tc->nopts; i++) {
    char k = tc->opt_kind[i];
    if (tc->opt_dim[i] == d) {
      PyObject *s = PyUnicode_FromFormat("%c%d", k, k == 'u' ? un : ln);
      if (!s || PyList_Append(ret, s) < 0) Py_CLEAR(ret);
      Py_XDECREF(s);
    }
    if (k == 'u') un++; else ln++;
  }
  return ret;
}

/* elements_per_thread[s] is 2 ** (the upcast and reduce axes of swizzle s that are neither zero-stride nor local) */
static int check_elements_per_thread(TensorCoreObject *tc) {
  for (int s = 0; s < 2; s++) {
    PyObject *sw = PyTuple_GET_ITEM(tc->swizzle, s), *zero = zero_stride_names(tc, s), *up = zero ? PyList_New(0) : NULL;
    for (int p = 1; up && p < 3; p++) {
      PyObject *part = PyTuple_GET_ITEM(sw, p);
      for (Py_ssize_t j = 0; up && j < PyTuple_GET_SIZE(part); j++) {
        PyObject *x = PyTuple_GET_ITEM(part, j);
        int in = name_in(zero, x);
        if (in < 0 || (!in && PyUnicode_READ_CHAR(x, 0) != 'l' && PyList_Append(up, x) < 0)) Py_CLEAR(up);
      }
    }
    int bad = up && PyList_GET_SIZE(up) < 63 ? tc->ept[s] != 1L << PyList_GET_SIZE(up) : 1;
    if (up && bad) assert_fail("mismatch in elements_per_thread[%d], %R vs %ld", s, up, tc->ept[s]);
    Py_XDECREF(zero); Py_XDECREF(up);
    if (!up || bad) return -1;
  }
  return 0;
}

static int post_init(TensorCoreObject *tc) {
  if (check_dims(tc) < 0 || check_swizzle_sizes(tc) < 0 || !(tc->remaps = build_remaps(tc))) return -1;
  Py_ssize_t want = tc->nlocal + tc->nupcast + tc->nreduce;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tc->remaps); i++)
    if (PyDict_GET_SIZE(PyList_GET_ITEM(tc->remaps, i)) != want) return assert_fail("remaps are the wrong size");
  return check_elements_per_thread(tc);
}

/* ---- the type ---- */

static void TensorCore_dealloc(TensorCoreObject *tc) {
  Py_XDECREF(tc->dims); Py_XDECREF(tc->threads); Py_XDECREF(tc->elements_per_thread); Py_XDECREF(tc->dtype_in);
  Py_XDECREF(tc->dtype_out); Py_XDECREF(tc->opts); Py_XDECREF(tc->swizzle); Py_XDECREF(tc->remaps);
  Py_TYPE(tc)->tp_free((PyObject *)tc);
}

/* The fields hold only exact ints, strs, tuples of them and DTypes (checked: no subclass that could carry a
 * reference back), so a TensorCore is never part of a cycle and needs no GC tracking. */
static PyObject *tc_new(PyObject *dims, PyObject *threads, PyObject *ept, PyObject *din, PyObject *dout, PyObject *opts, PyObject *sw) {
  TensorCoreObject *tc = PyObject_New(TensorCoreObject, &TensorCore_Type);
  if (!tc) return NULL;
  tc->dims = Py_NewRef(dims), tc->threads = Py_NewRef(threads), tc->elements_per_thread = Py_NewRef(ept);
  tc->dtype_in = Py_NewRef(din), tc->dtype_out = Py_NewRef(dout), tc->opts = Py_NewRef(opts), tc->swizzle = Py_NewRef(sw);
  tc->remaps = NULL, tc->hash = -1;
  if (check_types(tc) < 0 || post_init(tc) < 0) { Py_DECREF(tc); return NULL; }
  return (PyObject *)tc;
}

static PyObject *TensorCore_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  UNUSED(type);
  static char *kwlist[] = {"dims", "threads", "elements_per_thread", "dtype_in", "dtype_out", "opts", "swizzle", NULL};
  PyObject *f[7];
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOO:TensorCore", kwlist, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6])) return NULL;
  return tc_new(f[0], f[1], f[2], f[3], f[4], f[5], f[6]);
}

/* ---- the methods ---- */

PyObject *tc_str(TensorCoreObject *tc) {
  return PyUnicode_FromFormat("WMMA_%ld_%ld_%ld_%U_%U", tc->dim[0], tc->dim[1], tc->dim[2],
                              ((DType *)tc->dtype_in)->name, ((DType *)tc->dtype_out)->name);
}

/* [f"{c}{i}" for i in range(n)] appended to list */
static int append_names(PyObject *list, char c, int n) {
  for (int i = 0; i < n; i++) {
    PyObject *s = PyUnicode_FromFormat("%c%d", c, i);
    int err = !s || PyList_Append(list, s) < 0;
    Py_XDECREF(s);
    if (err) return -1;
  }
  return 0;
}

PyObject *tc_base_shape_str(TensorCoreObject *tc) {
  PyObject *ret = PyList_New(0);
  int cnt[2] = {0, 0};   /* u, l */
  for (int i = 0; ret && i < tc->nopts; i++) {
    int k = tc->opt_kind[i] == 'l';
    PyObject *s = PyUnicode_FromFormat("%c%d", tc->opt_kind[i], cnt[k]++);
    if (!s || PyList_Append(ret, s) < 0) Py_CLEAR(ret);
    Py_XDECREF(s);
  }
  /* the reduce axes come last: the UNROLLs are done after the opts */
  if (ret && append_names(ret, 'r', tc->nreduce) < 0) Py_CLEAR(ret);
  return ret;
}

PyObject *tc_base_upcast_axes(TensorCoreObject *tc) {
  PyObject *ret = PyList_New(0);
  if (ret && (append_names(ret, 'r', tc->nreduce) < 0 || append_names(ret, 'u', tc->nupcast) < 0 || PyList_Reverse(ret) < 0)) Py_CLEAR(ret);
  return ret;
}

/* one remap applied to shape_str: the index (in shape_str) of the name each name maps to, or its own index */
static PyObject *permute_one(PyObject *remap, PyObject *shape_str, PyObject *seq) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject *ret = PyTuple_New(n);
  for (Py_ssize_t i = 0; ret && i < n; i++) {
    PyObject *to = PyDict_GetItemWithError(remap, PySequence_Fast_GET_ITEM(seq, i));
    /* shape_str.index: a missing name is its ValueError, as in tinygrad (the Scheduler turns it into KernelOptError) */
    PyObject *v = to ? PyObject_CallMethod(shape_str, "index", "O", to) : PyErr_Occurred() ? NULL : PyLong_FromSsize_t(i);
    if (!v) Py_CLEAR(ret);
    else PyTuple_SET_ITEM(ret, i, v);
  }
  return ret;
}

PyObject *tc_permutes_for_shape_str(TensorCoreObject *tc, PyObject *shape_str) {
  PyObject *seq = PySequence_Fast(shape_str, "permutes_for_shape_str needs a sequence of axis names");
  if (!seq) return NULL;
  PyObject *a = permute_one(PyList_GET_ITEM(tc->remaps, 0), shape_str, seq);
  PyObject *b = a ? permute_one(PyList_GET_ITEM(tc->remaps, 1), shape_str, seq) : NULL, *ret = b ? PyTuple_Pack(2, a, b) : NULL;
  Py_DECREF(seq); Py_XDECREF(a); Py_XDECREF(b);
  return ret;
}

static PyObject *TensorCore_permutes_for_shape_str(PyObject *self, PyObject *shape_str) {
  return tc_permutes_for_shape_str((TensorCoreObject *)self, shape_str);
}

static PyObject *TensorCore_get_reduce_axes(PyObject *self, PyObject *unused) {
  UNUSED(unused);
  TensorCoreObject *tc = (TensorCoreObject *)self;
  PyObject *ret = PyList_New(tc->nreduce);
  for (int i = 0; ret && i < tc->nreduce; i++) {
    PyObject *t = Py_BuildValue("(ii)", i, 2);
    if (!t) Py_CLEAR(ret);
    else PyList_SET_ITEM(ret, i, t);
  }
  return ret;
}

/* the opts of one kind, as the str objects given */
static PyObject *opts_of_kind(TensorCoreObject *tc, char k) {
  PyObject *ret = PyList_New(0);
  for (int i = 0; ret && i < tc->nopts; i++)
    if (tc->opt_kind[i] == k && PyList_Append(ret, PyTuple_GET_ITEM(tc->opts, i)) < 0) Py_CLEAR(ret);
  return ret;
}
static PyObject *TensorCore_get_upcast_axes(PyObject *self, PyObject *unused) { UNUSED(unused); return opts_of_kind((TensorCoreObject *)self, 'u'); }
static PyObject *TensorCore_get_local_axes(PyObject *self, PyObject *unused) { UNUSED(unused); return opts_of_kind((TensorCoreObject *)self, 'l'); }
static PyObject *TensorCore_base_shape_str(PyObject *self, PyObject *unused) { UNUSED(unused); return tc_base_shape_str((TensorCoreObject *)self); }
static PyObject *TensorCore_base_upcast_axes(PyObject *self, PyObject *unused) { UNUSED(unused); return tc_base_upcast_axes((TensorCoreObject *)self); }

/* _remaps(): copies, so a caller can not change what permutes_for_shape_str reads */
static PyObject *TensorCore_remaps(PyObject *self, PyObject *unused) {
  UNUSED(unused);
  PyObject *src = ((TensorCoreObject *)self)->remaps, *ret = PyList_New(PyList_GET_SIZE(src));
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(src); i++) {
    PyObject *d = PyDict_Copy(PyList_GET_ITEM(src, i));
    if (!d) Py_CLEAR(ret);
    else PyList_SET_ITEM(ret, i, d);
  }
  return ret;
}

static PyObject *TensorCore_str(PyObject *self) { return tc_str((TensorCoreObject *)self); }

static PyMethodDef TensorCore_methods[] = {
  {"get_reduce_axes", TensorCore_get_reduce_axes, METH_NOARGS, "[(i, 2) for each of the log2(K) reduce axes]"},
  {"get_upcast_axes", TensorCore_get_upcast_axes, METH_NOARGS, "the u opts"},
  {"get_local_axes", TensorCore_get_local_axes, METH_NOARGS, "the l opts"},
  {"base_shape_str", TensorCore_base_shape_str, METH_NOARGS, "the axis names the opts and reduce unrolls make"},
  {"base_upcast_axes", TensorCore_base_upcast_axes, METH_NOARGS, "the reduce then upcast names, reversed"},
  {"permutes_for_shape_str", TensorCore_permutes_for_shape_str, METH_O, "the permutations of the two swizzles on shape_str"},
  {"_remaps", TensorCore_remaps, METH_NOARGS, "one dict per swizzle: axis name -> the name it takes"},
  {NULL, NULL, 0, NULL}
};

static const DataclassField tc_fields[] = {
  DATACLASS_FIELD(TensorCoreObject, dims, "(N, M, K)"), DATACLASS_FIELD(TensorCoreObject, threads, "the threads of the warp"),
  DATACLASS_FIELD(TensorCoreObject, elements_per_thread, "elements per thread of A, B and C"),
  DATACLASS_FIELD(TensorCoreObject, dtype_in, "the dtype of A and B"), DATACLASS_FIELD(TensorCoreObject, dtype_out, "the dtype of C and D"),
  DATACLASS_FIELD(TensorCoreObject, opts, "the u<dim>/l<dim> splits, in order"),
  DATACLASS_FIELD(TensorCoreObject, swizzle, "(local, upcast, reduce) axis names for A and for B"), {NULL, 0, NULL}};
static const Dataclass tc_dataclass = {tc_fields, .frozen = true, .hash_cache = offsetof(TensorCoreObject, hash)};

PyTypeObject TensorCore_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.TensorCore",
  .tp_doc = "TensorCore(dims, threads, elements_per_thread, dtype_in, dtype_out, opts, swizzle): D = A*B + C on one warp, "
            "a frozen dataclass as tinygrad's.",
  .tp_basicsize = sizeof(TensorCoreObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_new = TensorCore_tp_new,
  .tp_dealloc = (destructor)TensorCore_dealloc,
  .tp_str = TensorCore_str,
  .tp_methods = TensorCore_methods,
};

/* ---- the tables ---- */

/* A shape: opts and the two swizzles as space-separated names, parts split by '|'. */
typedef struct { long dims[3], threads, ept[3]; const char *opts, *swizzle[2]; } TCShape;

#define CUDA_OPTS "u0 l0 l0 l1 l1 l1 u1"   /* shared by the M=16 N=8 shapes (tinygrad's cuda_tc_opts) */
static const TCShape CUDA_81616 = {{8, 16, 16}, 32, {8, 4, 4}, CUDA_OPTS,
  {"r1 r2 l2 l3 l4 | u1 r3 | l0 l1 u0 r0", "r1 r2 u0 l0 l1 | r0 r3 | l2 l3 l4 u1"}};
static const TCShape CUDA_81632_F8 = {{8, 16, 32}, 32, {16, 8, 4}, CUDA_OPTS,
  {"r2 r3 l2 l3 l4 | u1 r4 | l0 l1 u0 r0 r1", "r2 r3 u0 l0 l1 | r1 r4 | l2 l3 l4 u1 r0"}};
static const TCShape CUDA_8168_F16 = {{8, 16, 8}, 32, {4, 2, 4}, CUDA_OPTS,
  {"r1 r2 l2 l3 l4 | r0 u1 | l0 l1 u0", "r1 r2 u0 l0 l1 | u1 r0 | l2 l3 l4"}};
static const TCShape CUDA_8168_TF32 = {{8, 16, 8}, 32, {4, 2, 4}, CUDA_OPTS,
  {"r0 r1 l2 l3 l4 | u1 r2 | l0 l1 u0", "r0 r1 u0 l0 l1 | u1 r2 | l2 l3 l4"}};
static const TCShape AMD_RDNA3 = {{16, 16, 16}, 32, {16, 16, 8}, "l0 l0 l0 l0 l1 u1 u1 u1",
  {"l4 u0 u1 u2 l0 | r1 r2 r3 | l1 l2 l3 r0", "l0 l1 l2 l3 l4 | r1 r2 r3 | u0 u1 u2 r0"}};
static const TCShape AMD_RDNA4 = {{16, 16, 16}, 32, {8, 8, 8}, "l0 l0 l0 l0 u1 u1 u1 l1",
  {"u0 u1 u2 l4 r2 | r0 r1 r3 | l0 l1 l2 l3", "l0 l1 l2 l3 r2 | r0 r1 r3 | l4 u0 u1 u2"}};
#define CDNA_OPTS "l0 l0 l0 l0 u1 u1 l1 l1"
static const TCShape AMD_CDNA_161616 = {{16, 16, 16}, 64, {4, 4, 4}, CDNA_OPTS,
  {"u0 u1 l4 l5 r2 r3 | r0 r1 | l0 l1 l2 l3", "l0 l1 l2 l3 r2 r3 | r0 r1 | l4 l5 u0 u1"}};
static const TCShape AMD_CDNA_161632 = {{16, 16, 32}, 64, {8, 8, 4}, CDNA_OPTS,
  {"u0 u1 l4 l5 r3 r4 | r0 r1 | l0 l1 l2 l3 r2", "l0 l1 l2 l3 r3 r4 | r0 r1 | l4 l5 u0 u1 r2"}};
static const TCShape AMD_CDNA_1616128 = {{16, 16, 128}, 64, {32, 32, 4}, CDNA_OPTS,
  {"u0 u1 l4 l5 r5 r6 | r0 r1 | l0 l1 l2 l3 r2 r3 r4", "l0 l1 l2 l3 r5 r6 | r0 r1 | l4 l5 u0 u1 r2 r3 r4"}};
static const TCShape METAL = {{8, 8, 8}, 32, {2, 2, 2}, "u0 l0 l1 l1 l0 l1",
  {"r1 l1 l2 r2 l4 | r0 | u0 l0 l3", "l0 r0 r1 l3 r2 | u0 | l1 l2 l4"}};
/* AMX: sz = 64 // itemsize of float */
static const TCShape AMX_F32 = {{16, 16, 1}, 1, {16, 16, 256}, "u0 u0 u0 u0 u1 u1 u1 u1",
  {" | u0 u1 u2 u3 u4 u5 u6 u7 | ", " | u4 u5 u6 u7 u0 u1 u2 u3 | "}};
static const TCShape INTEL = {{8, 8, 16}, 8, {16, 16, 8}, "l0 l0 l0 u1 u1 u1",
  {"r1 r2 r3 | u0 u1 u2 | l0 l1 l2 r0", "l0 l1 l2 | r1 r2 r3 | u0 u1 u2 r0"}};

/* One tensor core per row, in each list's order. */
typedef struct { const char *list; const TCShape *shape; DTypeId in, out; } TCRow;
static const TCRow tc_rows[] = {
  {"cuda_81616", &CUDA_81616, DT_FLOAT16, DT_FLOAT32}, {"cuda_81616", &CUDA_81616, DT_BFLOAT16, DT_FLOAT32},
  {"cuda_81616", &CUDA_81616, DT_FLOAT16, DT_FLOAT16},
  {"cuda_81632_f8", &CUDA_81632_F8, DT_FP8E4M3, DT_FLOAT32}, {"cuda_81632_f8", &CUDA_81632_F8, DT_FP8E5M2, DT_FLOAT32},
  {"cuda_8168_f16", &CUDA_8168_F16, DT_FLOAT16, DT_FLOAT32}, {"cuda_8168_f16", &CUDA_8168_F16, DT_FLOAT16, DT_FLOAT16},
  {"cuda_8168_tf32", &CUDA_8168_TF32, DT_FLOAT32, DT_FLOAT32},
  {"amd_rdna3", &AMD_RDNA3, DT_FLOAT16, DT_FLOAT32}, {"amd_rdna3", &AMD_RDNA3, DT_FLOAT16, DT_FLOAT16},
  {"amd_rdna3", &AMD_RDNA3, DT_BFLOAT16, DT_FLOAT32},
  {"amd_rdna4", &AMD_RDNA4, DT_FLOAT16, DT_FLOAT32}, {"amd_rdna4", &AMD_RDNA4, DT_FLOAT16, DT_FLOAT16},
  {"amd_rdna4", &AMD_RDNA4, DT_BFLOAT16, DT_FLOAT32}, {"amd_rdna4", &AMD_RDNA4, DT_BFLOAT16, DT_BFLOAT16},
  {"amd_cdna_161616", &AMD_CDNA_161616, DT_FLOAT16, DT_FLOAT32}, {"amd_cdna_161616", &AMD_CDNA_161616, DT_BFLOAT16, DT_FLOAT32},
  {"amd_cdna_161632", &AMD_CDNA_161632, DT_FP8E5M2, DT_FLOAT32}, {"amd_cdna_161632", &AMD_CDNA_161632, DT_FP8E4M3, DT_FLOAT32},
  {"amd_cdna_161632", &AMD_CDNA_161632, DT_FLOAT16, DT_FLOAT32}, {"amd_cdna_161632", &AMD_CDNA_161632, DT_BFLOAT16, DT_FLOAT32},
  {"amd_cdna_1616128", &AMD_CDNA_1616128, DT_FP8E5M2, DT_FLOAT32}, {"amd_cdna_1616128", &AMD_CDNA_1616128, DT_FP8E4M3, DT_FLOAT32},
  {"metal", &METAL, DT_FLOAT32, DT_FLOAT32}, {"metal", &METAL, DT_FLOAT16, DT_FLOAT32}, {"metal", &METAL, DT_FLOAT16, DT_FLOAT16},
  {"metal", &METAL, DT_BFLOAT16, DT_FLOAT32}, {"metal", &METAL, DT_BFLOAT16, DT_BFLOAT16},
  {"amx", &AMX_F32, DT_FLOAT32, DT_FLOAT32},
  {"intel", &INTEL, DT_FLOAT16, DT_FLOAT32},
};

/* The lists made of other lists: names joined in order; "name:n" takes the first n; "=name" is the same list object. */
static const struct { const char *name, *parts; } tc_lists[] = {
  {"cuda_sm75", "=cuda_8168_f16"},
  {"cuda_sm80", "cuda_81616 cuda_8168_f16 cuda_8168_tf32"},
  {"cuda_sm89", "cuda_sm80 cuda_81632_f8"},
  {"amd_cdna3", "amd_cdna_161632:2 amd_cdna_161616"},
  {"amd_cdna4", "amd_cdna_1616128 amd_cdna_161632 amd_cdna_161616"},
};

/* "a b c" -> ("a", "b", "c") */
static PyObject *split_names(const char *s) {
  PyObject *str = PyUnicode_FromString(s), *parts = str ? PyUnicode_Split(str, NULL, -1) : NULL, *ret = parts ? PyList_AsTuple(parts) : NULL;
  Py_XDECREF(str); Py_XDECREF(parts);
  return ret;
}

/* "l0 l1 | u0 | r0" -> (("l0", "l1"), ("u0",), ("r0",)) */
static PyObject *parse_swizzle(const char *s) {
  PyObject *str = PyUnicode_FromString(s), *bar = PyUnicode_FromString("|");
  PyObject *parts = str && bar ? PyUnicode_Split(str, bar, -1) : NULL, *ret = parts ? PyTuple_New(PyList_GET_SIZE(parts)) : NULL;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(parts); i++) {
    PyObject *p = PyUnicode_AsUTF8String(PyList_GET_ITEM(parts, i)), *t = p ? split_names(PyBytes_AS_STRING(p)) : NULL;
    Py_XDECREF(p);
    if (!t) Py_CLEAR(ret);
    else PyTuple_SET_ITEM(ret, i, t);
  }
  Py_XDECREF(str); Py_XDECREF(bar); Py_XDECREF(parts);
  return ret;
}

static PyObject *tc_from_row(const TCRow *r) {
  const TCShape *sh = r->shape;
  PyObject *dims = Py_BuildValue("(lll)", sh->dims[0], sh->dims[1], sh->dims[2]), *threads = PyLong_FromLong(sh->threads);
  PyObject *ept = Py_BuildValue("(lll)", sh->ept[0], sh->ept[1], sh->ept[2]), *opts = split_names(sh->opts);
  PyObject *s0 = parse_swizzle(sh->swizzle[0]), *s1 = parse_swizzle(sh->swizzle[1]), *sw = s0 && s1 ? PyTuple_Pack(2, s0, s1) : NULL;
  PyObject *ret = dims && threads && ept && opts && sw ?
    tc_new(dims, threads, ept, (PyObject *)scalar_dtypes[r->in], (PyObject *)scalar_dtypes[r->out], opts, sw) : NULL;
  Py_XDECREF(dims); Py_XDECREF(threads); Py_XDECREF(ept); Py_XDECREF(opts); Py_XDECREF(s0); Py_XDECREF(s1); Py_XDECREF(sw);
  return ret;
}

/* the list named `name` in the tables module, made when first asked for */
static PyObject *table_list(PyObject *tables, const char *name) {
  PyObject *l = PyObject_GetAttrString(tables, name);
  if (l || !PyErr_ExceptionMatches(PyExc_AttributeError)) return l;
  PyErr_Clear();
  if (!(l = PyList_New(0)) || PyModule_AddObjectRef(tables, name, l) < 0) Py_CLEAR(l);
  return l;
}

static int add_rows(PyObject *tables) {
  for (size_t i = 0; i < sizeof tc_rows / sizeof tc_rows[0]; i++) {
    PyObject *l = table_list(tables, tc_rows[i].list), *tc = l ? tc_from_row(&tc_rows[i]) : NULL;
    int err = !tc || PyList_Append(l, tc) < 0;
    Py_XDECREF(l); Py_XDECREF(tc);
    if (err) return -1;
  }
  return 0;
}

/* one part of a composed list: "name" or "name:n" appended to out */
static int add_part(PyObject *tables, PyObject *out, PyObject *part) {
  PyObject *colon = PyUnicode_FromString(":"), *nm = colon ? PyUnicode_Split(part, colon, 1) : NULL, *src = NULL;
  Py_XDECREF(colon);
  if (!nm) return -1;
  const char *name = PyUnicode_AsUTF8(PyList_GET_ITEM(nm, 0));
  Py_ssize_t n = PY_SSIZE_T_MAX;
  if (PyList_GET_SIZE(nm) == 2) n = atol(PyUnicode_AsUTF8(PyList_GET_ITEM(nm, 1)));
  int err = !name || !(src = PyObject_GetAttrString(tables, name));
  if (!err) {
    PyObject *slice = PyList_GetSlice(src, 0, n);
    err = !slice || PyList_SetSlice(out, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, slice) < 0;
    Py_XDECREF(slice);
  }
  Py_DECREF(nm); Py_XDECREF(src);
  return err ? -1 : 0;
}

static int add_composed(PyObject *tables) {
  for (size_t i = 0; i < sizeof tc_lists / sizeof tc_lists[0]; i++) {
    const char *p = tc_lists[i].parts;
    if (*p == '=') {   /* an alias, as `cuda_sm75 = cuda_8168_f16` */
      PyObject *same = PyObject_GetAttrString(tables, p + 1);
      if (!same || PyModule_AddObject(tables, tc_lists[i].name, same) < 0) { Py_XDECREF(same); return -1; }
      continue;
    }
    PyObject *parts = split_names(p), *out = parts ? PyList_New(0) : NULL;
    int err = !out;
    for (Py_ssize_t j = 0; !err && j < PyTuple_GET_SIZE(parts); j++) err = add_part(tables, out, PyTuple_GET_ITEM(parts, j)) < 0;
    if (!err) err = PyModule_AddObjectRef(tables, tc_lists[i].name, out) < 0;
    Py_XDECREF(parts); Py_XDECREF(out);
    if (err) return -1;
  }
  return 0;
}

int tinyc_init_tc(PyObject *m) {
  if (dataclass_ready(&TensorCore_Type, &tc_dataclass) < 0 || tinyc_add(m, "TensorCore", (PyObject *)&TensorCore_Type) < 0) return -1;
  /* the tables live in their own module object, tinyc._C.tc, re-exported by tinyc/codegen/opt/tc.py */
  PyObject *tables = PyModule_New("tinyc._C.tc"), *cuda_opts = split_names(CUDA_OPTS);
  int err = !tables || !cuda_opts || PyModule_AddObjectRef(tables, "cuda_tc_opts", cuda_opts) < 0 ||
            PyModule_AddObjectRef(tables, "TensorCore", (PyObject *)&TensorCore_Type) < 0 ||
            add_rows(tables) < 0 || add_composed(tables) < 0 || tinyc_add(m, "tc", tables) < 0;
  Py_XDECREF(tables); Py_XDECREF(cuda_opts);
  return err ? -1 : 0;
}
