/* placeholder: filled by the port of tinygrad/codegen/late/devectorizer.py */
#include "../../uop/native.h"

int tinyc_init_devectorizer(PyObject *m) {
  UNUSED(m);
  return 0;
}
