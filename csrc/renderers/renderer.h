/* tinygrad/renderer/__init__.py's Renderer and renderer/cstyle.py's ClangRenderer, as C types.
 * A renderer turns a linearized list of UOps into the source text of one kernel. */
#ifndef TINYC_RENDERER_H
#define TINYC_RENDERER_H
#include "../uop/native.h"

/* An instance: a __dict__ for attributes set on it, and `r`, the dict node -> text of the render in
 * progress (tinygrad's self.r; the rules read it through ctx[x]). */
typedef struct {
  PyObject_HEAD
  PyObject *dict;
  PyObject *r;
} RendererObject;

extern PyTypeObject Renderer_Type;
extern PyTypeObject ClangRenderer_Type;

/* program_spec.c: ProgramSpec.from_uop(prg), a new ProgramSpec (TypeError/AssertionError on a non-PROGRAM) */
PyObject *program_spec_from_uop(PyObject *prg);

int tinyc_init_cstyle(PyObject *m);

#endif
