/* tinygrad/codegen/opt/search.py in C (search.c): BEAM search, get_kernel_actions, bufs_from_ast, time_program. It sits
 * above the engine (it times candidates with CompiledRunner), as tinygrad's search.py imports engine.realize. */
#ifndef TINYC_SEARCH_H
#define TINYC_SEARCH_H
#include "../../uop/uop.h"

/* a Buffer for every DEFINE_GLOBAL of the kernel, in arg order. New reference. */
PyObject *bufs_from_ast(UOp *ast, PyObject *device);
/* the program's times over cnt runs (a list of floats); early_stop NAN: none; max_global_size <= 0: no test size */
PyObject *time_program(PyObject *p, PyObject *rawbufs, PyObject *var_vals, long cnt, double early_stop, int allow_test_size,
                       long max_global_size);
int tinyc_init_search(PyObject *m);

#endif
