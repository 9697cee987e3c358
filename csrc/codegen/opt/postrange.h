/* tinygrad/codegen/opt/postrange.py in C: the Scheduler (a kernel AST's axes and the opts that reshape
 * them), apply_opts and make_images. */
#ifndef TINYC_POSTRANGE_H
#define TINYC_POSTRANGE_H
#include "../../uop/uop.h"

/* tinygrad's apply_opts(ast, ren): the kernel with its opts applied (opts_to_apply when the KernelInfo
 * has them, else none: BEAM and the hand-coded heuristics are not here yet) and its name given.
 * ren is a renderer object whose attributes (has_local, shared_max, ...) are read. New reference. */
UOp *postrange_apply_opts(UOp *ast, PyObject *ren);

int tinyc_init_postrange(PyObject *m);

#endif
