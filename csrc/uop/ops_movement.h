/* Movement ops on UOps (ops_movement.c) and the shape a UOp has (ops_range.c). */
#ifndef TINYC_OPS_MOVEMENT_H
#define TINYC_OPS_MOVEMENT_H
#include "uop.h"
#include "../mixin/movement.h"

/* tinygrad's u._shape (a tuple or None) and u.shape (raises RuntimeError on None); new references */
PyObject *uop_shape_opt(UOp *u);
PyObject *uop_shape_req(UOp *u);
/* The shape of a movement op (and MULTI, REDUCE_AXIS, WMMA, BUFFERIZE, BUFFER_VIEW, ENCDEC, KERNEL) from the
 * shape ps of its first source: 1 and *out set, 0 when u is none of these, -1 with an exception. */
int movement_shape(UOp *u, PyObject *ps, PyObject **out);
/* u.marg: a movement op's argument (new reference) */
PyObject *uop_marg(UOp *u);
/* u._mop(op, arg, same_shape_noop): new reference */
UOp *uop_mop(UOp *self, Op op, PyObject *arg, bool same_shape_noop);

extern PyMethodDef uop_movement_methods[];
extern PyGetSetDef uop_movement_getset[];
int tinyc_init_uop_movement(PyObject *m);

#endif
