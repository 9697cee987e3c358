/* Python enums made from C name lists (declared in enum.h). */
#include "enum.h"

PyObject *tinyc_make_enum(const char *base, const char *clsname, const char *const *names) {
  PyObject *enum_mod = PyImport_ImportModule("enum");
  if (!enum_mod) return NULL;
  PyObject *cls = NULL, *pairs = PyList_New(0);
  if (!pairs) goto done;
  for (long i = 0; names[i]; i++) {
    PyObject *pair = Py_BuildValue("(sl)", names[i], i + 1);
    if (!pair || PyList_Append(pairs, pair) < 0) { Py_XDECREF(pair); goto done; }
    Py_DECREF(pair);
  }
  PyObject *enum_base = PyObject_GetAttrString(enum_mod, base);
  if (!enum_base) goto done;
  PyObject *args = Py_BuildValue("(sO)", clsname, pairs), *kwargs = Py_BuildValue("{ss}", "module", "tinyc");
  if (args && kwargs) cls = PyObject_Call(enum_base, args, kwargs);
  Py_XDECREF(args); Py_XDECREF(kwargs); Py_DECREF(enum_base);
done:
  Py_XDECREF(pairs); Py_DECREF(enum_mod);
  return cls;
}
