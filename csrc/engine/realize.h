/* tinygrad/engine/realize.py in C: CompiledRunner (realize.c). */
#ifndef TINYC_ENGINE_REALIZE_H
#define TINYC_ENGINE_REALIZE_H
#include "../device.h"

extern PyTypeObject CompiledRunner_Type;   /* CompiledRunner(p): BEAM times candidates with it */
/* p (a ProgramSpec, or a dataclass like it) with one field replaced; a new reference */
PyObject *spec_replace(PyObject *p, const char *field, PyObject *value);
int tinyc_init_realize(PyObject *m);

#endif
