/* tinygrad/engine/realize.py in C: CompiledRunner (realize.c). */
#ifndef TINYC_ENGINE_REALIZE_H
#define TINYC_ENGINE_REALIZE_H
#include "../device.h"

extern PyTypeObject CompiledRunner_Type;   /* CompiledRunner(p): BEAM times candidates with it */
int tinyc_init_realize(PyObject *m);

#endif
