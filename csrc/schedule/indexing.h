/* tinygrad/schedule/indexing.py in C: BufferizeOpts and apply_movement_op. */
#ifndef TINYC_INDEXING_H
#define TINYC_INDEXING_H
#include "../uop/uop.h"

typedef struct {
  PyObject_HEAD
  PyObject *device;      /* str, tuple of str, int (a local buffer's id) or None */
  PyObject *addrspace;   /* an AddrSpace member */
  PyObject *removable;   /* bool */
} BufferizeOpts;

extern PyTypeObject BufferizeOpts_Type;
#define BufferizeOpts_Check(o) (Py_TYPE(o) == &BufferizeOpts_Type)
/* BufferizeOpts(device, addrspace, removable): new reference */
PyObject *bufferize_opts_new(PyObject *device, AddrSpaceId addrspace, bool removable);
/* apply_movement_op(op, in_shape, arg, rngs): the tuple of ranges under the op (new reference) */
PyObject *apply_movement_op(Op op, PyObject *in_shape, PyObject *arg, PyObject *rngs);

int tinyc_init_indexing(PyObject *m);
int tinyc_init_rangeify(PyObject *m);   /* rangeify.c, the other file of schedule/: its rule sets */
#endif
