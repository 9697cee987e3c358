/* tinygrad/codegen/opt/__init__.py in C: OptOps, Opt, KernelOptError and check. */
#ifndef TINYC_OPT_H
#define TINYC_OPT_H
#include "../../tinyc.h"

/* OptOps, values from 1 in tinygrad's order (index 0 unused, as the other enums). */
#define OPTOPS_LIST(X) X(TC) X(UPCAST) X(UNROLL) X(LOCAL) X(THREAD) X(GROUP) X(GROUPTOP) X(NOLOCALS) \
  X(PADTO) X(SWAP)
typedef enum {
  OPTOPS_NONE = 0,
#define X(name) OPTOPS_##name,
  OPTOPS_LIST(X)
#undef X
  OPTOPS_COUNT
} OptOpsId;

extern PyObject *optops_members[OPTOPS_COUNT];   /* the tinyc.OptOps members by OptOpsId, borrowed */
extern PyObject *OptOps_Type;                    /* the tinyc.OptOps Enum class, borrowed */
extern PyObject *KernelOptError;                 /* the tinyc.KernelOptError exception class, borrowed */

/* The OptOpsId of an OptOps member, 0 (no exception set) for anything else. */
int optops_id(PyObject *o);

/* Opt(op, axis=None, arg=None): a frozen, ordered dataclass. */
typedef struct {
  PyObject_HEAD
  PyObject *op;          /* an OptOps member */
  PyObject *axis;        /* int or None */
  PyObject *arg;         /* int, tuple or None */
  OptOpsId op_id;
  bool has_axis;         /* axis is an int; axis_val is it, saturated to the range of long */
  long axis_val;
  bool has_int_arg;      /* arg is an int; arg_val is it, saturated likewise */
  long arg_val;
  Py_hash_t hash;        /* cached hash((op, axis, arg)), -1 until computed (helpers/dataclass.c) */
} OptObject;

extern PyTypeObject Opt_Type;
#define Opt_Check(o) (Py_TYPE(o) == &Opt_Type)
/* A new Opt from borrowed parts (axis/arg NULL mean None); NULL with TypeError on bad types. */
PyObject *opt_new(PyObject *op, PyObject *axis, PyObject *arg);

int tinyc_init_opt(PyObject *m);

#endif
