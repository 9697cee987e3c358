/* tinygrad/renderer/__init__.py's Estimates and ProgramSpec (program_spec.c). ProgramSpec.from_uop's C entry,
 * program_spec_from_uop, is declared in renderer.h for now (another branch owns that file). */
#ifndef TINYC_PROGRAM_SPEC_H
#define TINYC_PROGRAM_SPEC_H
#include "../tinyc.h"

int tinyc_init_program_spec(PyObject *m);

#endif
