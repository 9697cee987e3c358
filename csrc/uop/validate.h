/* tinygrad/uop/validate.py's z3 proof of an index's bounds (validate.c): the part of validate_index that runs once
 * the quick checks of spec.c (Invalid, IGNORE_OOB, unsized buffers, vmin/vmax, pointer tricks) have not decided. */
#ifndef TINYC_UOP_VALIDATE_H
#define TINYC_UOP_VALIDATE_H
#include "uop.h"

/* Whether the access idx into a buffer of `size` elements, under gate (NULL: always taken), stays in 0..size-1 for
 * every value of the ranges, specials, variables and loads it reads: 1 it does (z3 proves it), 0 it may not (tinygrad's
 * report printed to stdout, as tinygrad prints it), -1 with an exception: the ImportError tinygrad raises without z3
 * when tinyc was built without libz3, or the error tinygrad meets translating a malformed graph. One z3 context a
 * call, freed before returning: calls in several threads share nothing; the solver runs without the GIL. */
int validate_index_z3(UOp *idx, UOp *gate, Py_ssize_t size);

#endif
