/* tinygrad/mixin/math.py's MathMixin: arithmetic with constant promotion for a type that provides alu and const_like.
 * As in tinygrad the mixin sits below UOp: it knows UOp only through this interface, which uop/ops.c fills in at
 * init; it needs of uop/ only the Ops list (tinygrad's mixin imports tinygrad.uop.Ops). */
#ifndef TINYC_MIXIN_MATH_H
#define TINYC_MIXIN_MATH_H
#include "../dtype.h"
#include "../uop/ops_enum.h"

/* What the mixin requires of its type ("required to implement" in tinygrad, plus the dtype it reads). */
typedef struct {
  PyTypeObject *type;                                             /* isinstance(x, MathMixin): exactly this type */
  PyObject *(*alu)(Op op, PyObject *const *src, Py_ssize_t n);    /* src[0].alu(op, *src[1:]), all of `type`: new ref */
  PyObject *(*const_like)(PyObject *self, PyObject *b);           /* self.const_like(b): new reference */
  DType *(*dtype)(PyObject *self);                                /* self.dtype, borrowed */
} MathMixin;

/* Register the type (once, before it is used). */
void math_mixin_init(const MathMixin *impl);

/* What the type takes in: the number-protocol operators (the type adds its own __bool__/__int__/__float__ to a copy),
 * the comparisons (== stays identity; <, >, !=, <=, >= build nodes) and the named methods (add, mul, ..., ufix). */
extern const PyNumberMethods math_mixin_as_number;
PyObject *math_mixin_richcompare(PyObject *a, PyObject *b, int cmp);
extern PyMethodDef math_mixin_methods[];

#endif
