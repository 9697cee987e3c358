/* placeholder: filled by the port of tinygrad/codegen/simplify.py */
#include "../uop/native.h"

int tinyc_init_codegen_simplify(PyObject *m) {
  UNUSED(m);
  return 0;
}
