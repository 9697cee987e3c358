/* tinygrad/uop/decompositions.py: the transcendental builders, fast integer division, threefry and the
 * late rewrite patterns that decompose ops a renderer lacks. */
#ifndef TINYC_DECOMPOSITIONS_H
#define TINYC_DECOMPOSITIONS_H
#include "upat.h"

/* tinygrad's get_late_rewrite_patterns(ops, force_transcendental): ops_tuple is a tuple (or any sequence) of
 * Ops members. Returns a BORROWED reference: the matcher lives in a per-(ops, force) cache for the life of
 * the module (tinygrad's functools.cache), so callers need not (but may) Py_INCREF it. NULL with an exception
 * on bad input. */
PatternMatcher *get_late_rewrite_patterns(PyObject *ops_tuple, bool force);

/* tinygrad/device.py's is_dtype_supported(dtype, device), which fast_idiv asks before widening: the device layer
 * (device.c) sets it at init, so this layer never calls up into that one. device None means Device.DEFAULT.
 * 1/0, -1 on error. Until set it answers 0: never widen to a dtype nobody vouched for. */
extern int (*uop_is_dtype_supported)(DType *dt, PyObject *device);

/* The builders, as in tinygrad; inside a rule (see native.h) they return borrowed pooled UOps, NULL on error.
 * fast_idiv returns NULL without an exception for tinygrad's None. */
UOp *xexp2(UOp *d);
UOp *xlog2(UOp *d);
UOp *xsin(UOp *d, bool fast, PyObject *switch_over);
UOp *xpow(UOp *base, UOp *exponent);
UOp *fast_idiv(PyObject *device, UOp *x, PyObject *d, bool dont_cast);
UOp *threefry2x32(UOp *x, UOp *key);

int tinyc_init_decompositions(PyObject *m);

#endif
