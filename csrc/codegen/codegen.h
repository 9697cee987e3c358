/* Entry points the codegen pipeline (codegen.c, tinygrad/codegen/__init__.py) calls in the files of
 * its passes. Each returns a new reference, or NULL with an exception set. */
#ifndef TINYC_CODEGEN_H
#define TINYC_CODEGEN_H
#include "../uop/native.h"
#include "../uop/decompositions.h"
#include "opt/postrange.h"

/* late/linearizer.c */
PyObject *cfg_edges(UOp *sink);                 /* CFGContext(sink).edges: the ctx of pm_add_control_flow */
UOp *do_linearize(UOp *prg, UOp *sink);         /* prg + LINEAR(linearized, cleaned-up lines) */
/* late/devectorizer.c */
PyObject *reduce_context_new(void);             /* ReduceContext(): the ctx of pm_reduce */

/* codegen.c */
UOp *full_rewrite_to_sink(UOp *sink, PyObject *ren, bool optimize);
PyObject *get_program(UOp *ast, PyObject *ren, PyObject *opts);   /* a ProgramSpec */

/* each pass file's init, registering its rule sets */
int tinyc_init_codegen_simplify(PyObject *m);   /* simplify.c */
int tinyc_init_expander(PyObject *m);           /* late/expander.c */
int tinyc_init_devectorizer(PyObject *m);       /* late/devectorizer.c */
int tinyc_init_gpudims(PyObject *m);            /* gpudims.c */
int tinyc_init_linearizer(PyObject *m);         /* late/linearizer.c */
int tinyc_init_codegen(PyObject *m);            /* codegen.c */

#endif
