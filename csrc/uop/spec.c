/* placeholder: filled by the port of tinygrad/uop/spec.py */
#include "native.h"

int tinyc_init_spec(PyObject *m) {
  UNUSED(m);
  return 0;
}
