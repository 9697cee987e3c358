/* tinygrad/runtime/ops_null.py in C: the NULL device, a row of the device table. Its buffers hold nothing (tinygrad's
 * NullAllocator: alloc hands out a token, copies do nothing, and there is no host view), its programs run nothing and
 * take a millisecond (NullProgram), and its renderer renders without compiling: get_program stops at the source, and
 * the base Compiler turns the source into the program's bytes. So codegen and BEAM's bookkeeping run end to end without
 * running a kernel. */
#include "../device.h"
#include "../renderers/renderer.h"

/* ---- allocator: buffers that hold nothing ---- */

static char null_token;   /* the handle of every NULL buffer and program: there is nothing behind it */

static void *null_alloc(void *dev, size_t nbytes) { UNUSED(dev); UNUSED(nbytes); return &null_token; }
static void null_free(void *dev, void *buf, size_t nbytes) { UNUSED(dev); UNUSED(buf); UNUSED(nbytes); }
static int null_copyin(void *dev, void *buf, const void *src, size_t nbytes) { UNUSED(dev); UNUSED(buf); UNUSED(src); UNUSED(nbytes); return 0; }
static int null_copyout(void *dev, void *dst, void *buf, size_t nbytes) { UNUSED(dev); UNUSED(dst); UNUSED(buf); UNUSED(nbytes); return 0; }

/* ---- programs that do nothing ---- */

static void *null_load(void *dev, PyObject *name, const char *lib, size_t len) { UNUSED(dev); UNUSED(name); UNUSED(lib); UNUSED(len); return &null_token; }
static double null_launch(void *prg, void *const *bufs, Py_ssize_t nbufs, const size_t global[3], const size_t *local, const int64_t *vals,
                          Py_ssize_t nvals, bool wait) {
  UNUSED(prg); UNUSED(bufs); UNUSED(nbufs); UNUSED(global); UNUSED(local); UNUSED(vals); UNUSED(nvals); UNUSED(wait);
  return 1e-3;   /* tinygrad's NullProgram's time */
}
static void null_unload(void *prg) { UNUSED(prg); }
static int null_synchronize(void *dev) { UNUSED(dev); return 0; }

static PyObject *NullProgram_new(PyTypeObject *type, PyObject *args, PyObject *kw) { return program_new(type, "NULL", args, kw); }

static PyTypeObject NullProgram_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.NullProgram",
  .tp_basicsize = sizeof(ProgramObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "tinygrad's NullProgram(name, lib): runs nothing; prg(*bufs, ...) takes 1e-3 s",
  .tp_base = &Program_Type,
  .tp_new = NullProgram_new,
};

/* ---- the renderer ---- */

/* tinygrad's NullRenderer: a CStyleLanguage with a few settings of its own (set at init); its instances are
 * CStyleLanguage's (the basic size is inherited) */
static PyTypeObject NullRenderer_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.NullRenderer",
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,   /* GC support (traverse, clear) is inherited too */
  .tp_doc = "tinygrad's NullRenderer: C-style source for the NULL device, which compiles and runs nothing",
  .tp_base = &CStyleLanguage_Type,
};

/* its two code_for_op entries beyond its base's: (a, b, dtype) -> "threefry(a,b)" / "max(a,b)"; self is the name */
static PyObject *call_text(PyObject *self, PyObject *args) {
  PyObject *a, *b, *dtype;
  if (!PyArg_ParseTuple(args, "OOO:code_for_op", &a, &b, &dtype)) return NULL;
  return PyUnicode_FromFormat("%U(%S,%S)", self, a, b);
}
static PyMethodDef call_text_def = {"code_for_op", call_text, METH_VARARGS, "the text of a call of the op's function on two operands"};

static int add_call_text(PyObject *code_for_op, Op op, const char *fn) {
  PyObject *name = PyUnicode_FromString(fn), *f = name ? PyCFunction_New(&call_text_def, name) : NULL;
  int rc = f ? PyDict_SetItem(code_for_op, ops_members[op], f) : -1;
  Py_XDECREF(name); Py_XDECREF(f);
  return rc;
}

/* code_for_op = {**base.code_for_op, THREEFRY: threefry(a,b), MAX: max(a,b)} */
static PyObject *null_code_for_op(void) {
  PyObject *base = getattr_literal((PyObject *)NullRenderer_Type.tp_base, "code_for_op"), *d = base ? PyDict_Copy(base) : NULL;
  Py_XDECREF(base);
  if (d && (add_call_text(d, OP_THREEFRY, "threefry") < 0 || add_call_text(d, OP_MAX, "max") < 0)) Py_CLEAR(d);
  return d;
}

static int set_class_attr(PyTypeObject *t, const char *name, PyObject *v) {
  int rc = v ? PyDict_SetItemString(t->tp_dict, name, v) : -1;
  Py_XDECREF(v);
  return rc;
}

static int init_null_renderer(void) {
  PyTypeObject *t = &NullRenderer_Type;
  if (PyType_Ready(t) < 0 || set_class_attr(t, "device", PyUnicode_FromString("NULL")) < 0 ||
      set_class_attr(t, "has_local", Py_NewRef(Py_False)) < 0 || set_class_attr(t, "float4", PyUnicode_FromString("float4")) < 0 ||
      set_class_attr(t, "barrier", PyUnicode_FromString("// BARRIER")) < 0 || set_class_attr(t, "code_for_op", null_code_for_op()) < 0) return -1;
  PyType_Modified(t);
  return 0;
}

/* ---- the device ---- */

static PyTypeObject NullDevice_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.NullDevice",
  .tp_basicsize = sizeof(CompiledObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "tinygrad's NullDevice: NullRenderer + the base Compiler, buffers that hold nothing, programs that do nothing",
  .tp_base = &Compiled_Type,
};

static PyObject *null_renderer(void) { return PyObject_CallNoArgs((PyObject *)&NullRenderer_Type); }
static PyObject *base_compiler(void) { return PyObject_CallNoArgs((PyObject *)&Compiler_Type); }

/* tinygrad's CompilerSet of NULL, less the pairs tinyc does not have (IR3Renderer under NULL_IR3, NAKRenderer under
 * NULL_NAK) */
static const CompilerPair null_pairs[] = {
  {"NULL", null_renderer, base_compiler, NULL},
};

static const DeviceDef null_device = {
  .type = &NullDevice_Type,
  .program_type = &NullProgram_Type,
  .allocator = {null_alloc, null_free, null_copyin, null_copyout, NULL},
  .program = {null_load, null_launch, null_unload},
  .synchronize = null_synchronize,
  .compilers = {null_pairs, sizeof(null_pairs) / sizeof(null_pairs[0]), NULL},
};

/* tinygrad's EMULATE=AMD / AMD_RDNA4 renders for an AMD target here; tinyc has no AMD renderer yet */
const DeviceDef *null_open(PyObject *device, void **dev) {
  const char *emulate = ctxvar_text_value("EMULATE");
  if (emulate && *emulate) {
    PyErr_Format(PyExc_RuntimeError, "can't open %S: can't EMULATE device: %s", device, emulate);
    return NULL;
  }
  *dev = NULL;
  return &null_device;
}

int tinyc_init_ops_null(PyObject *m) {
  if (PyType_Ready(&NullProgram_Type) < 0 || PyType_Ready(&NullDevice_Type) < 0 || init_null_renderer() < 0) return -1;
  return tinyc_add(m, "NullProgram", (PyObject *)&NullProgram_Type) < 0 || tinyc_add(m, "NullDevice", (PyObject *)&NullDevice_Type) < 0 ||
    tinyc_add(m, "NullRenderer", (PyObject *)&NullRenderer_Type) < 0 ? -1 : 0;
}
