/* Shared by every C file of tinyc: the Python headers and the few helpers all files use. */
#ifndef TINYC_H
#define TINYC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdbool.h>

#define UNUSED(x) ((void)(x))

/* Add an object to a module under its name; steals nothing, returns -1 on error. */
static inline int tinyc_add(PyObject *module, const char *name, PyObject *obj) {
  Py_INCREF(obj);
  if (PyModule_AddObject(module, name, obj) < 0) { Py_DECREF(obj); return -1; }
  return 0;
}

/* Build an enum.Enum / enum.IntEnum subclass from a NULL-terminated list of names, values from 1.
 * `base` is "Enum" or "IntEnum"; the class is placed in module `tinyc` for pickling. Returns a new ref. */
PyObject *tinyc_make_enum(const char *base, const char *clsname, const char *const *names);

/* tinygrad's getenv / ContextVar for int settings (helpers/getenv.c).
 * env_int: read at import, as a ContextVar: int(os.getenv(name)); *value is left as it is (the default) when
 * unset; a value int() refuses is its ValueError (-1); huge values clamp to LONG_MIN/LONG_MAX (sign and truth kept).
 * env_flag: the same read as a bool (tinygrad's `if FLAG:`).
 * env_long: read at call time, forgiving: strtol of the value (its leading digits), dflt when unset or empty. */
int env_int(const char *name, long *value);
int env_flag(const char *name, bool *flag);
long env_long(const char *name, long dflt);

/* Initialisers of each part, called from PyInit__C in module.c. */
int tinyc_init_dtype(PyObject *m);
int tinyc_init_ops_enum(PyObject *m);
int tinyc_init_uop(PyObject *m);
int tinyc_init_upat(PyObject *m);
int tinyc_init_native(PyObject *m);
int tinyc_init_opt(PyObject *m);
int tinyc_init_eval(PyObject *m);
int tinyc_init_divandmod(PyObject *m);
int tinyc_init_symbolic(PyObject *m);
int tinyc_init_symbolic_sym(PyObject *m);
int tinyc_init_renderer(PyObject *m);
int tinyc_init_spec(PyObject *m);
int tinyc_init_renderer_base(PyObject *m);
int tinyc_init_cstyle(PyObject *m);
int tinyc_init_codegen_simplify(PyObject *m);
int tinyc_init_expander(PyObject *m);
int tinyc_init_devectorizer(PyObject *m);
int tinyc_init_gpudims(PyObject *m);
int tinyc_init_linearizer(PyObject *m);
int tinyc_init_decompositions(PyObject *m);
/* the device side (device.h): Buffer, Device, Compiler, the CPU runtime, the disk cache, CompiledRunner */
int tinyc_init_device(PyObject *m);
int tinyc_init_diskcache(PyObject *m);
int tinyc_init_compiler_cpu(PyObject *m);
int tinyc_init_ops_cpu(PyObject *m);
int tinyc_init_realize(PyObject *m);
int tinyc_init_program_spec(PyObject *m);
int tinyc_init_postrange(PyObject *m);
int tinyc_init_codegen(PyObject *m);

#endif
