/* placeholder: filled by the port of tinygrad/uop/renderer.py */
#include "native.h"

int tinyc_init_renderer(PyObject *m) {
  UNUSED(m);
  return 0;
}
