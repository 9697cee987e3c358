/* tinygrad/codegen/opt/postrange.py in C: the Scheduler (a kernel AST's axes and the opts that reshape
 * them), apply_opts and make_images. */
#ifndef TINYC_POSTRANGE_H
#define TINYC_POSTRANGE_H
#include "../../uop/uop.h"

/* tinygrad's apply_opts(ast, ren): the kernel with its opts applied (opts_to_apply when the KernelInfo
 * has them, else BEAM's search when BEAM>=1, else the hand-coded heuristics unless NOOPT) and its name given.
 * ren is a renderer object whose attributes (has_local, shared_max, ...) are read. New reference. */
UOp *postrange_apply_opts(UOp *ast, PyObject *ren);
/* tinygrad's make_images(ast, ren): with IMAGE=1 and a QCOM/CL renderer, the small float buffers made float4 images (and
 * the stores that cannot write whole texels put back). New reference. */
UOp *postrange_make_images(UOp *ast, PyObject *ren);

/* The Scheduler for C callers (heuristic.c, search): k must be a tinyc.Scheduler (TypeError otherwise).
 * The same functions its Python methods and properties call; new references unless said, NULL on error. */
#define AXIS_BIT(name) (1u << AXIS_##name)     /* a set of axis types for the *_mask arguments */
int scheduler_check(PyObject *o);
PyObject *scheduler_copy(PyObject *k);
PyObject *scheduler_apply_opt(PyObject *k, PyObject *opt, int append_opt);   /* k.apply_opt(opt, append_opt) */
PyObject *scheduler_ast(PyObject *k);            /* borrowed */
PyObject *scheduler_ren(PyObject *k);            /* borrowed */
PyObject *scheduler_applied_opts(PyObject *k);   /* borrowed: the list itself */
PyObject *scheduler_rngs(PyObject *k);
PyObject *scheduler_full_shape(PyObject *k);
PyObject *scheduler_output_shape(PyObject *k);
PyObject *scheduler_axes_of(PyObject *k, unsigned mask);
PyObject *scheduler_ranges_of(PyObject *k, unsigned mask);
PyObject *scheduler_int_dims(PyObject *k, unsigned mask);    /* upcastable_dims / unrollable_dims by their masks */
PyObject *scheduler_prod_axes(PyObject *k, unsigned mask);   /* prod(full_shape[a] for a in axes_of(mask)) */
PyObject *scheduler_reduceop(PyObject *k);
PyObject *scheduler_bufs(PyObject *k);
/* and for search.c */
int scheduler_real_axis(PyObject *k, PyObject *opt, Py_ssize_t *out);   /* k.real_axis(opt.op, opt.axis): 0 or -1 */
PyObject *scheduler_axis_types(PyObject *k);
PyObject *scheduler_get_optimized_ast(PyObject *k, const char *name_override);   /* NULL name: tinygrad's own */

/* apply_opts under BEAM>=1: set by search.c, which sits above this layer (tinygrad's apply_opts imports search inside
 * the function). Gets the Scheduler, the AST and the renderer, and BEAM's amount; returns the chosen Scheduler. */
extern PyObject *(*postrange_beam_hook)(PyObject *k, UOp *ast, PyObject *ren, long amt);

int tinyc_init_postrange(PyObject *m);

#endif
