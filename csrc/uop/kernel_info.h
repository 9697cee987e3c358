/* tinygrad/uop/ops.py's KernelInfo, the arg of a kernel's SINK, and helpers.to_function_name (kernel_info.c). */
#ifndef TINYC_KERNEL_INFO_H
#define TINYC_KERNEL_INFO_H
#include "../tinyc.h"

/* KernelInfo(name="test", axis_types=(), dont_use_locals=False, applied_opts=(), opts_to_apply=None): a frozen dataclass.
 * The opts are Opt objects held as Python objects: the uop layer needs nothing of codegen/opt. */
typedef struct {
  PyObject_HEAD
  PyObject *name;            /* str */
  PyObject *axis_types;      /* tuple of AxisType */
  PyObject *dont_use_locals; /* bool */
  PyObject *applied_opts;    /* tuple */
  PyObject *opts_to_apply;   /* tuple or None */
  PyObject *function_name;   /* cached to_function_name(name), NULL until first asked */
  Py_hash_t hash;            /* cached hash of the field tuple, -1 until computed (helpers/dataclass.c) */
} KernelInfoObject;

extern PyTypeObject KernelInfo_Type;
#define KernelInfo_Check(o) (Py_TYPE(o) == &KernelInfo_Type)

/* tinygrad's helpers.to_function_name(s): ANSI escapes removed, then every char outside
 * [A-Za-z0-9_] written as its code point in (at least two) upper-case hex digits. New ref. */
PyObject *tinyc_to_function_name(PyObject *s);

int tinyc_init_kernel_info(PyObject *m);

#endif
