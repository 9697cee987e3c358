/* tinygrad/renderer/__init__.py's Renderer: the settings every code generator has (class attributes the
 * pipeline reads: device, has_local, global_max, code_for_op, extra_matcher, compiler, ...), render/aux
 * (NotImplementedError here), pickling as its class, and self[key] for the texts of the render in progress.
 *
 * Instances are GC-tracked: a renderer's __dict__ holds whatever Python code stores on it (a compiler, a
 * cache, itself), and `r` holds the texts of a render in progress. */
#include "renderer.h"
#include <stddef.h>

PyObject *renderer_text_of(PyObject *ctx, UOp *u) {
  if (!Renderer_Check(ctx)) return PyErr_Format(PyExc_TypeError, "a string rule's ctx must be a Renderer, not %.100s", Py_TYPE(ctx)->tp_name);
  return renderer_text((RendererObject *)ctx, u);
}

static int Renderer_traverse(RendererObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->dict);
  Py_VISIT(self->r);
  return 0;
}

static int Renderer_clear(RendererObject *self) {
  Py_CLEAR(self->dict);
  Py_CLEAR(self->r);
  return 0;
}

static void Renderer_dealloc(RendererObject *self) {
  PyObject_GC_UnTrack(self);
  if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
  Renderer_clear(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* self[key]: the text rendered for a node during a render (tinygrad's self.r[key]) */
static PyObject *Renderer_getitem(RendererObject *self, PyObject *key) {
  if (!self->r) return PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute 'r'", Py_TYPE(self)->tp_name);
  return PyObject_GetItem(self->r, key);
}
static PyMappingMethods Renderer_as_mapping = {NULL, (binaryfunc)Renderer_getitem, NULL};

static PyObject *Renderer_render(PyObject *self, PyObject *uops) {
  UNUSED(self); UNUSED(uops);
  PyErr_SetString(PyExc_NotImplementedError, "needs a renderer");
  return NULL;
}
static PyObject *Renderer_aux(PyObject *self, PyObject *uops) {
  UNUSED(self); UNUSED(uops);
  PyErr_SetString(PyExc_NotImplementedError, "needs aux");
  return NULL;
}
/* a renderer pickles as its class: (cls, ()) */
static PyObject *Renderer_reduce(PyObject *self, PyObject *unused) {
  UNUSED(unused);
  return Py_BuildValue("(O())", (PyObject *)Py_TYPE(self));
}

static PyMethodDef Renderer_methods[] = {
  {"render", Renderer_render, METH_O, "render(uops) -> the kernel's source"},
  {"aux", Renderer_aux, METH_O, "additional program info"},
  {"__reduce__", Renderer_reduce, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef Renderer_getset[] = {
  {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject Renderer_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.Renderer",
  .tp_basicsize = sizeof(RendererObject),
  .tp_dealloc = (destructor)Renderer_dealloc,
  .tp_as_mapping = &Renderer_as_mapping,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
  .tp_doc = "tinygrad's Renderer: the settings of a code generator and render(uops) -> source",
  .tp_traverse = (traverseproc)Renderer_traverse,
  .tp_clear = (inquiry)Renderer_clear,
  .tp_weaklistoffset = offsetof(RendererObject, weakreflist),
  .tp_methods = Renderer_methods,
  .tp_getset = Renderer_getset,
  .tp_dictoffset = offsetof(RendererObject, dict),
  .tp_new = PyType_GenericNew,
};

/* ---- class attributes ---- */

int renderer_set_attr(PyTypeObject *t, const char *name, PyObject *v) {
  int rc = v ? PyDict_SetItemString(t->tp_dict, name, v) : -1;
  Py_XDECREF(v);
  return rc;
}

PyObject *renderer_int_tuple3(long a, long b, long c) { return Py_BuildValue("(lll)", a, b, c); }

static int init_renderer_attrs(PyTypeObject *t) {
  return renderer_set_attr(t, "device", PyUnicode_FromString("")) < 0 || renderer_set_attr(t, "suffix", PyUnicode_FromString("")) < 0 ||
    renderer_set_attr(t, "supports_float4", Py_NewRef(Py_True)) < 0 || renderer_set_attr(t, "has_local", Py_NewRef(Py_True)) < 0 ||
    renderer_set_attr(t, "has_threads", Py_NewRef(Py_False)) < 0 || renderer_set_attr(t, "has_shared", Py_NewRef(Py_True)) < 0 ||
    renderer_set_attr(t, "has_aux", Py_NewRef(Py_False)) < 0 ||
    renderer_set_attr(t, "global_max", renderer_int_tuple3(0x8FFFFFFF, 0x8FFFFFFF, 0x8FFFFFFF)) < 0 ||
    renderer_set_attr(t, "local_max", renderer_int_tuple3(0x8FFFFFFF, 0x8FFFFFFF, 0x8FFFFFFF)) < 0 ||
    renderer_set_attr(t, "shared_max", PyLong_FromLong(32768)) < 0 || renderer_set_attr(t, "tensor_cores", PyTuple_New(0)) < 0 ||
    renderer_set_attr(t, "pre_matcher", Py_NewRef(Py_None)) < 0 || renderer_set_attr(t, "extra_matcher", Py_NewRef(Py_None)) < 0 ||
    renderer_set_attr(t, "code_for_op", PyDict_New()) < 0 || renderer_set_attr(t, "compiler", Py_NewRef(Py_None)) < 0 ? -1 : 0;
}

int tinyc_init_renderer_base(PyObject *m) {
  if (PyType_Ready(&Renderer_Type) < 0 || init_renderer_attrs(&Renderer_Type) < 0) return -1;
  PyType_Modified(&Renderer_Type);
  return tinyc_add(m, "Renderer", (PyObject *)&Renderer_Type);
}
