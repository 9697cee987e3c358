/* tinygrad/renderer/__init__.py's Renderer (renderer.c) and the renderer types built on it (cstyle.c's
 * CStyleLanguage, ClangRenderer, ClangJITRenderer). A renderer turns a linearized list of UOps into the
 * source text of one kernel. */
#ifndef TINYC_RENDERER_H
#define TINYC_RENDERER_H
#include "../uop/native.h"

/* An instance: a __dict__ for attributes set on it, and `r`, the dict node -> text of the render in
 * progress (tinygrad's self.r; the rules read it through ctx[x]), NULL outside one. */
typedef struct {
  PyObject_HEAD
  PyObject *dict;
  PyObject *r;
  PyObject *weakreflist;
} RendererObject;

extern PyTypeObject Renderer_Type;
#define Renderer_Check(o) PyObject_TypeCheck((o), &Renderer_Type)

/* ren[u]: the text rendered for node u in the render in progress on ren (borrowed); KeyError when u was not
 * rendered (or no render is in progress). */
static inline PyObject *renderer_text(RendererObject *ren, UOp *u) {
  PyObject *t = ren->r ? PyDict_GetItemWithError(ren->r, (PyObject *)u) : NULL;
  if (!t && !PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, (PyObject *)u);
  return t;
}
/* ctx[u], a TypeError when ctx is not a Renderer */
PyObject *renderer_text_of(PyObject *ctx, UOp *u);

/* Set one class attribute of a renderer type (before PyType_Modified), stealing v; -1 on error (v NULL too). */
int renderer_set_attr(PyTypeObject *t, const char *name, PyObject *v);
/* (a, b, c) as a tuple of ints: global_max, local_max. New reference. */
PyObject *renderer_int_tuple3(long a, long b, long c);

/* cstyle.c */
extern PyTypeObject CStyleLanguage_Type;
extern PyTypeObject ClangRenderer_Type;
extern PyTypeObject ClangJITRenderer_Type;
extern PyTypeObject OpenCLRenderer_Type;

/* llvmir.c: tinygrad's LLVMRenderer (after cstyle: its extra_matcher is built from cstyle's rule sets) */
extern PyTypeObject LLVMRenderer_Type;
int tinyc_init_llvmir(PyObject *m);

/* program_spec.c: ProgramSpec.from_uop(prg), a new ProgramSpec (TypeError/AssertionError on a non-PROGRAM) */
PyObject *program_spec_from_uop(PyObject *prg);

int tinyc_init_renderer_base(PyObject *m);
int tinyc_init_cstyle(PyObject *m);

#endif
