/* placeholder: filled by the port of tinygrad/uop/divandmod.py */
#include "native.h"

int tinyc_init_divandmod(PyObject *m) {
  UNUSED(m);
  return 0;
}
