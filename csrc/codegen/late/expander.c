/* placeholder: filled by the port of tinygrad/codegen/late/expander.py */
#include "../../uop/native.h"

int tinyc_init_expander(PyObject *m) {
  UNUSED(m);
  return 0;
}
