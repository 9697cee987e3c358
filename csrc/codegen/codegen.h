/* tinygrad/codegen/__init__.py (codegen.c): the pipeline from a kernel AST to a program. It sits above the renderers
 * (get_program renders and builds the ProgramSpec), as tinygrad's does; the pass files it calls are below them
 * (passes.h). Each returns a new reference, or NULL with an exception set. */
#ifndef TINYC_CODEGEN_H
#define TINYC_CODEGEN_H
#include "passes.h"

UOp *full_rewrite_to_sink(UOp *sink, PyObject *ren, bool optimize);
PyObject *get_program(UOp *ast, PyObject *ren, PyObject *opts);   /* a ProgramSpec */
PyObject *get_program_uncompiled(UOp *ast, PyObject *ren);        /* the same up to its source: lib None */
int tinyc_init_codegen(PyObject *m);

#endif
