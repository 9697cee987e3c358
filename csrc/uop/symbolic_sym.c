/* placeholder: filled by the port of phase 3 of tinygrad/uop/symbolic.py (sym, simplify_valid) */
#include "native.h"

int tinyc_init_symbolic_sym(PyObject *m) {
  UNUSED(m);
  return 0;
}
