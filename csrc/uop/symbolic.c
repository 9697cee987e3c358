/* placeholder: filled by the port of tinygrad/uop/symbolic.py */
#include "native.h"

int tinyc_init_symbolic(PyObject *m) {
  UNUSED(m);
  return 0;
}
