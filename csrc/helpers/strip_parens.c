/* tinygrad/helpers.py's strip_parens and _is_balanced, for both renderers' text (declared in tinyc.h). */
#include "../tinyc.h"

/* s[start:end] never closes more parens than it opened, and closes all it opened; the text is nearly always
 * ASCII, scanned as bytes */
static bool is_balanced(PyObject *s, Py_ssize_t start, Py_ssize_t end) {
  int kind = PyUnicode_KIND(s);
  const void *data = PyUnicode_DATA(s);
  Py_ssize_t depth = 0;
  if (kind == PyUnicode_1BYTE_KIND) {
    const unsigned char *c = data;
    for (Py_ssize_t i = start; i < end && depth >= 0; i++) depth += (c[i] == '(') - (c[i] == ')');
    return depth == 0;
  }
  for (Py_ssize_t i = start; i < end && depth >= 0; i++) {
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    depth += (c == '(') - (c == ')');
  }
  return depth == 0;
}

bool parens_strippable(PyObject *s) {
  Py_ssize_t n = PyUnicode_GET_LENGTH(s);
  return n >= 2 && PyUnicode_READ_CHAR(s, 0) == '(' && PyUnicode_READ_CHAR(s, n - 1) == ')' && is_balanced(s, 1, n - 1);
}

PyObject *strip_parens(PyObject *s) {
  if (!s) return NULL;
  if (!PyUnicode_Check(s)) return PyErr_Format(PyExc_TypeError, "strip_parens needs a str, not %.100s", Py_TYPE(s)->tp_name);
  return parens_strippable(s) ? PyUnicode_Substring(s, 1, PyUnicode_GET_LENGTH(s) - 1) : Py_NewRef(s);
}
