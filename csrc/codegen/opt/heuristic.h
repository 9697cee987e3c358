/* tinygrad/codegen/opt/heuristic.py in C: hand_coded_optimizations, the default choice of opts. */
#ifndef TINYC_HEURISTIC_H
#define TINYC_HEURISTIC_H
#include "../../tinyc.h"

/* hand_coded_optimizations(k): a new Scheduler (k itself is not changed) with tinygrad's hand-coded opts applied.
 * k must be a tinyc.Scheduler (TypeError otherwise). New reference, NULL on error. */
PyObject *hand_coded_optimizations(PyObject *k);

int tinyc_init_heuristic(PyObject *m);

#endif
