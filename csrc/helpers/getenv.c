/* tinygrad/helpers.py's getenv and ContextVar, for the int settings tinyc reads (declared in tinyc.h). */
#include "../tinyc.h"
#include <limits.h>
#include <stdlib.h>

int env_int(const char *name, long *value) {
  const char *env = getenv(name);
  if (!env) return 0;
  PyObject *s = PyUnicode_FromString(env), *v = s ? PyNumber_Long(s) : NULL;   /* Python's int(): " 1", "+1", "1_0" */
  int overflow = 0;
  long x = v ? PyLong_AsLongAndOverflow(v, &overflow) : -1;
  Py_XDECREF(s); Py_XDECREF(v);
  if (x == -1 && PyErr_Occurred()) return -1;
  *value = overflow > 0 ? LONG_MAX : overflow < 0 ? LONG_MIN : x;
  return 0;
}

int env_flag(const char *name, bool *flag) {
  long v = *flag;
  if (env_int(name, &v) < 0) return -1;
  *flag = v != 0;
  return 0;
}

long env_long(const char *name, long dflt) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : dflt;
}
