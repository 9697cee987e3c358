/* The entry points of the pass files that the pipeline (codegen.c) calls, and their inits. Each returns a new
 * reference, or NULL with an exception set. */
#ifndef TINYC_CODEGEN_PASSES_H
#define TINYC_CODEGEN_PASSES_H
#include "../uop/native.h"
#include "../uop/decompositions.h"
#include "opt/postrange.h"

/* late/linearizer.c */
PyObject *cfg_edges(UOp *sink);                 /* CFGContext(sink).edges: the ctx of pm_add_control_flow */
UOp *add_control_flow(UOp *sink, PyObject *edges);   /* graph_rewrite(sink, pm_add_control_flow, edges, bottom_up) */
UOp *do_linearize(UOp *prg, UOp *sink);         /* prg + LINEAR(linearized, cleaned-up lines) */
/* late/devectorizer.c */
PyObject *reduce_context_new(void);             /* ReduceContext(): the ctx of pm_reduce */

/* each pass file's init, registering its rule sets */
int tinyc_init_codegen_simplify(PyObject *m);   /* simplify.c */
int tinyc_init_expander(PyObject *m);           /* late/expander.c */
int tinyc_init_devectorizer(PyObject *m);       /* late/devectorizer.c */
int tinyc_init_gpudims(PyObject *m);            /* gpudims.c */
int tinyc_init_linearizer(PyObject *m);         /* late/linearizer.c */

#endif
