/* tinygrad/runtime/ops_python.py in C: the PYTHON device (PythonRenderer, PythonCompiler, PythonAllocator,
 * PythonProgram), a row of the device table. */
#ifndef TINYC_OPS_PYTHON_H
#define TINYC_OPS_PYTHON_H
#include "../device.h"

const DeviceDef *python_open(PyObject *device, void **dev);
int tinyc_init_ops_python(PyObject *m);

#endif
