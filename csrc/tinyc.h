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


#endif
