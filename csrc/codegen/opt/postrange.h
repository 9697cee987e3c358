/* tinygrad/codegen/opt/postrange.py in C: the Scheduler (a kernel AST's axes and the opts that reshape
 * them), apply_opts and make_images. */
#ifndef TINYC_POSTRANGE_H
#define TINYC_POSTRANGE_H
#include "../../uop/uop.h"

/* tinygrad's apply_opts(ast, ren): the kernel with its opts applied (opts_to_apply when the KernelInfo
 * has them, else none: BEAM and the hand-coded heuristics are not here yet) and its name given.
 * ren is a renderer object whose attributes (has_local, shared_max, ...) are read. New reference. */
UOp *postrange_apply_opts(UOp *ast, PyObject *ren);

/* The Scheduler as C calls, for search.c. Each checks s is a Scheduler that is initialised (TypeError/RuntimeError). */
int scheduler_check(PyObject *s);
PyObject *scheduler_copy(PyObject *s);                                  /* s.copy() */
PyObject *scheduler_apply_opt(PyObject *s, PyObject *opt);              /* s.apply_opt(opt) */
int scheduler_real_axis(PyObject *s, PyObject *opt, Py_ssize_t *out);   /* s.real_axis(opt.op, opt.axis): 0 or -1 */
PyObject *scheduler_full_shape(PyObject *s);                            /* a new list */
PyObject *scheduler_axis_types(PyObject *s);                            /* a new list */
PyObject *scheduler_get_optimized_ast(PyObject *s, const char *name_override);   /* NULL name: tinygrad's own */
/* borrowed: the current AST, the renderer, the list of applied opts (valid after scheduler_check) */
PyObject *scheduler_ast(PyObject *s);
PyObject *scheduler_ren(PyObject *s);
PyObject *scheduler_applied_opts(PyObject *s);

/* apply_opts under BEAM>=1: set by search.c, which sits above this layer (tinygrad's apply_opts imports search inside
 * the function). Gets the Scheduler, the AST and the renderer, and BEAM's amount; returns the chosen Scheduler. */
extern PyObject *(*postrange_beam_hook)(PyObject *k, UOp *ast, PyObject *ren, long amt);

int tinyc_init_postrange(PyObject *m);

#endif
