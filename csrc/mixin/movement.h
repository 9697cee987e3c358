/* tinygrad/mixin/movement.py's MovementMixin: reshape, expand, shrink, permute, flip, ndim, numel for a type that
 * provides shape and _mop. Below UOp, as math.h: uop/ops.c fills in the interface at init. */
#ifndef TINYC_MIXIN_MOVEMENT_H
#define TINYC_MIXIN_MOVEMENT_H
#include "../uop/ops_enum.h"

/* What the mixin requires of its type (tinygrad's "required to implement"). */
typedef struct {
  PyObject *(*shape)(PyObject *self);                       /* self.shape: a tuple (RuntimeError when none); new ref */
  PyObject *(*mop)(PyObject *self, Op op, PyObject *arg);   /* self._mop(op, arg): new reference */
} MovementMixin;

/* Register the type's implementation (once, before it is used). */
void movement_mixin_init(const MovementMixin *impl);

/* What the type takes in: the methods and properties. */
extern PyMethodDef movement_mixin_methods[];
extern PyGetSetDef movement_mixin_getset[];

/* tinygrad's helpers.prod over sints (ints or UOps, multiplied with Python's *): new reference */
PyObject *sint_prod(PyObject *seq);

#endif
