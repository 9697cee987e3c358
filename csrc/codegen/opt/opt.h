/* tinygrad/codegen/opt/__init__.py in C: OptOps, Opt, KernelOptError and check;
 * plus KernelInfo (tinygrad keeps it in uop/ops.py; here it lives in uop/kernel_info.c). */
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
  Py_hash_t hash;        /* cached hash((op, axis, arg)), -1 until computed */
} OptObject;

extern PyTypeObject Opt_Type;
#define Opt_Check(o) (Py_TYPE(o) == &Opt_Type)
/* A new Opt from borrowed parts (axis/arg NULL mean None); NULL with TypeError on bad types. */
PyObject *opt_new(PyObject *op, PyObject *axis, PyObject *arg);

/* KernelInfo(name="test", axis_types=(), dont_use_locals=False, applied_opts=(), opts_to_apply=None). */
typedef struct {
  PyObject_HEAD
  PyObject *name;            /* str */
  PyObject *axis_types;      /* tuple of AxisType */
  PyObject *applied_opts;    /* tuple */
  PyObject *opts_to_apply;   /* tuple or None */
  char dont_use_locals;      /* bool (char for the T_BOOL member) */
  PyObject *function_name;   /* cached to_function_name(name), NULL until first asked */
  Py_hash_t hash;            /* cached hash of the field tuple, -1 until computed */
} KernelInfoObject;

extern PyTypeObject KernelInfo_Type;
#define KernelInfo_Check(o) (Py_TYPE(o) == &KernelInfo_Type)

/* tinygrad's helpers.to_function_name(s): ANSI escapes removed, then every char outside
 * [A-Za-z0-9_] written as its code point in (at least two) upper-case hex digits. New ref. */
PyObject *tinyc_to_function_name(PyObject *s);

/* Helpers shared by the frozen dataclass types. tp_setattro raising dataclasses.FrozenInstanceError: */
int tinyc_frozen_setattr(PyObject *self, PyObject *name, PyObject *value);
/* replace(**kw) as dataclasses.replace: the type called with the fields of self updated by kw. */
PyObject *tinyc_replace_fields(PyObject *self, PyObject *args, PyObject *kw, const char *const *fields);
/* type.__match_args__ = fields (after PyType_Ready). */
int tinyc_set_match_args(PyTypeObject *type, const char *const *fields);

int tinyc_init_kernel_info(PyObject *m);

#endif
