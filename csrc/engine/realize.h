/* tinygrad/engine/realize.py in C: CompiledRunner (realize.c). */
#ifndef TINYC_ENGINE_REALIZE_H
#define TINYC_ENGINE_REALIZE_H
#include "../device.h"

int tinyc_init_realize(PyObject *m);

#endif
