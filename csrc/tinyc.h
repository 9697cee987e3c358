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

/* tinygrad's getenv / ContextVar for int settings (helpers/getenv.c).
 * env_int: read at import, as a ContextVar: int(os.getenv(name)); *value is left as it is (the default) when
 * unset; a value int() refuses is its ValueError (-1); huge values clamp to LONG_MIN/LONG_MAX (sign and truth kept).
 * env_flag: the same read as a bool (tinygrad's `if FLAG:`).
 * env_long: read at call time, forgiving: strtol of the value (its leading digits), dflt when unset or empty. */
int env_int(const char *name, long *value);
int env_flag(const char *name, bool *flag);
long env_long(const char *name, long dflt);

/* The device side's initialisers, called from module.c. TODO(lead): they belong in device.h and an engine header, which
 * this branch does not touch (tests/test_layers.py allows them here until they move). */
int tinyc_init_device(PyObject *m);
int tinyc_init_compiler_cpu(PyObject *m);
int tinyc_init_ops_cpu(PyObject *m);
int tinyc_init_realize(PyObject *m);

#endif
