/* tinygrad/uop/ops.py's KernelInfo, the arg of a kernel's SINK, and helpers.to_function_name.
 * Kept out of the UOp file so that file stays about UOp. */
#include "kernel_info.h"
#include "../helpers/dataclass.h"

static PyObject *default_name;   /* "test", tinygrad's default */

/* ---- to_function_name ---- */

static bool is_name_char(Py_UCS4 c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* tinygrad's ansistrip removes matches of '\x1b\[(K|.*?m)': the index after the escape starting
 * at i, or -1 when none starts there. ('.' does not match a newline.) */
static Py_ssize_t ansi_escape_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t i) {
  if (PyUnicode_READ(kind, data, i) != 0x1b || i + 1 >= n || PyUnicode_READ(kind, data, i + 1) != '[') return -1;
  Py_ssize_t j = i + 2;
  if (j < n && PyUnicode_READ(kind, data, j) == 'K') return j + 1;
  for (; j < n; j++) {
    Py_UCS4 c = PyUnicode_READ(kind, data, j);
    if (c == 'm') return j + 1;
    if (c == '\n') return -1;
  }
  return -1;
}

PyObject *tinyc_to_function_name(PyObject *s) {
  if (!PyUnicode_Check(s)) {
    PyErr_Format(PyExc_TypeError, "to_function_name: expected str, not %.100s", Py_TYPE(s)->tp_name);
    return NULL;
  }
  Py_ssize_t n = PyUnicode_GET_LENGTH(s);
  int kind = PyUnicode_KIND(s);
  const void *data = PyUnicode_DATA(s);
  /* each char becomes at most 6 hex digits (U+10FFFF) */
  if (n > (PY_SSIZE_T_MAX - 1) / 6) return PyErr_NoMemory();
  char *buf = PyMem_Malloc(n * 6 + 1), *out = buf;
  if (!buf) return PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < n;) {
    Py_ssize_t end = ansi_escape_end(kind, data, n, i);
    if (end >= 0) { i = end; continue; }
    Py_UCS4 c = PyUnicode_READ(kind, data, i++);
    if (is_name_char(c)) *out++ = (char)c;
    else out += sprintf(out, "%02X", (unsigned)c);
  }
  PyObject *ret = PyUnicode_FromStringAndSize(buf, out - buf);
  PyMem_Free(buf);
  return ret;
}

/* ---- KernelInfo ---- */

static int kernel_info_check_types(PyObject *name, PyObject *axis_types, PyObject *dont_use_locals,
                                   PyObject *applied_opts, PyObject *opts_to_apply) {
  const char *bad = !PyUnicode_Check(name) ? "name must be str"
    : !PyTuple_Check(axis_types) ? "axis_types must be a tuple"
    : !PyBool_Check(dont_use_locals) ? "dont_use_locals must be a bool"
    : !PyTuple_Check(applied_opts) ? "applied_opts must be a tuple"
    : (opts_to_apply != Py_None && !PyTuple_Check(opts_to_apply)) ? "opts_to_apply must be a tuple or None" : NULL;
  if (!bad) return 0;
  PyErr_Format(PyExc_TypeError, "KernelInfo: %s", bad);
  return -1;
}

static PyObject *KernelInfo_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "axis_types", "dont_use_locals", "applied_opts", "opts_to_apply", NULL};
  PyObject *empty = PyTuple_New(0);
  if (!empty) return NULL;
  PyObject *name = default_name, *axis_types = empty, *dont_use_locals = Py_False, *applied_opts = empty;
  PyObject *opts_to_apply = Py_None;
  KernelInfoObject *self = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOO:KernelInfo", kwlist, &name, &axis_types, &dont_use_locals,
                                   &applied_opts, &opts_to_apply)) goto done;
  if (kernel_info_check_types(name, axis_types, dont_use_locals, applied_opts, opts_to_apply) < 0) goto done;
  if (!(self = PyObject_GC_New(KernelInfoObject, type))) goto done;
  self->name = Py_NewRef(name);
  self->axis_types = Py_NewRef(axis_types);
  self->dont_use_locals = Py_NewRef(dont_use_locals);
  self->applied_opts = Py_NewRef(applied_opts);
  self->opts_to_apply = Py_NewRef(opts_to_apply);
  self->function_name = NULL;
  self->hash = -1;
  PyObject_GC_Track(self);
done:
  Py_DECREF(empty);
  return (PyObject *)self;
}

static int KernelInfo_traverse(KernelInfoObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->name); Py_VISIT(self->axis_types); Py_VISIT(self->dont_use_locals); Py_VISIT(self->applied_opts);
  Py_VISIT(self->opts_to_apply);
  return 0;
}

/* No tp_clear: like a tuple, an immutable object can not be the only link of a cycle to break. */
static void KernelInfo_dealloc(KernelInfoObject *self) {
  PyObject_GC_UnTrack(self);
  Py_XDECREF(self->name); Py_XDECREF(self->axis_types); Py_XDECREF(self->dont_use_locals); Py_XDECREF(self->applied_opts);
  Py_XDECREF(self->opts_to_apply); Py_XDECREF(self->function_name);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *KernelInfo_get_function_name(KernelInfoObject *self, void *closure) {
  UNUSED(closure);
  if (!self->function_name && !(self->function_name = tinyc_to_function_name(self->name))) return NULL;
  return Py_NewRef(self->function_name);
}

static PyGetSetDef KernelInfo_getset[] = {
  {"function_name", (getter)KernelInfo_get_function_name, NULL, "to_function_name(self.name)", NULL},
  {NULL, NULL, NULL, NULL, NULL}
};

/* tinygrad's @dataclass(frozen=True), with its defaults */
static PyObject *make_default_name(void) { return Py_NewRef(default_name); }   /* "test", interned at init */
static const DataclassField kernel_info_fields[] = {
  DATACLASS_FIELD_DEFAULT(KernelInfoObject, name, NULL, make_default_name),
  DATACLASS_FIELD_DEFAULT(KernelInfoObject, axis_types, NULL, dataclass_empty_tuple),
  DATACLASS_FIELD_DEFAULT(KernelInfoObject, dont_use_locals, NULL, dataclass_false),
  DATACLASS_FIELD_DEFAULT(KernelInfoObject, applied_opts, NULL, dataclass_empty_tuple),
  DATACLASS_FIELD_DEFAULT(KernelInfoObject, opts_to_apply, NULL, dataclass_none), {NULL}};
static const Dataclass kernel_info_dataclass = {kernel_info_fields, .frozen = true, .hash_cache = offsetof(KernelInfoObject, hash)};

PyTypeObject KernelInfo_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.KernelInfo",
  .tp_doc = "KernelInfo(name='test', axis_types=(), dont_use_locals=False, applied_opts=(), opts_to_apply=None):\n"
            "what a kernel's SINK knows about the kernel, a frozen dataclass as tinygrad's.",
  .tp_basicsize = sizeof(KernelInfoObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
  .tp_new = KernelInfo_tp_new,
  .tp_dealloc = (destructor)KernelInfo_dealloc,
  .tp_traverse = (traverseproc)KernelInfo_traverse,
  .tp_getset = KernelInfo_getset,
};

int tinyc_init_kernel_info(PyObject *m) {
  if (!default_name && !(default_name = PyUnicode_InternFromString("test"))) return -1;
  if (dataclass_ready(&KernelInfo_Type, &kernel_info_dataclass) < 0) return -1;
  return tinyc_add(m, "KernelInfo", (PyObject *)&KernelInfo_Type);
}
