/* tinygrad/codegen/opt/tc.py in C: the TensorCore description (a frozen dataclass) and the tables of the tensor
 * cores each GPU family has (cuda_sm80, amd_rdna3, metal, ...). */
#ifndef TINYC_TC_H
#define TINYC_TC_H
#include "../../tinyc.h"
#include "../../dtype.h"

#define TC_MAX_OPTS 32   /* opts beyond this many would shift 2**n past a long; no real tensor core comes close */

/* TensorCore(dims, threads, elements_per_thread, dtype_in, dtype_out, opts, swizzle): D = A*B + C with A (M x K),
 * B (K x N); dims is (N, M, K). The fields keep the objects given (checked at construction); the C copies below are
 * what native code reads. */
typedef struct {
  PyObject_HEAD
  PyObject *dims, *threads, *elements_per_thread, *dtype_in, *dtype_out, *opts, *swizzle;   /* the dataclass fields */
  long dim[3], nthreads, ept[3];
  int nopts, nlocal, nupcast, nreduce;
  char opt_kind[TC_MAX_OPTS];   /* 'u' (upcast) or 'l' (local) */
  int opt_dim[TC_MAX_OPTS];     /* the dim (0 for N, 1 for M) each opt splits */
  PyObject *remaps;             /* tinygrad's _remaps(): a list of one dict per swizzle, built once */
  Py_hash_t hash;               /* cached field-tuple hash, -1 until computed */
} TensorCoreObject;

extern PyTypeObject TensorCore_Type;
#define TensorCore_Check(o) (Py_TYPE(o) == &TensorCore_Type)

/* str(tc): "WMMA_<N>_<M>_<K>_<dtype_in>_<dtype_out>". New reference. */
PyObject *tc_str(TensorCoreObject *tc);
/* base_shape_str(): the opts as u0/l0/... names, then r0.. for the reduce axes. New list. */
PyObject *tc_base_shape_str(TensorCoreObject *tc);
/* base_upcast_axes(): r0.. then u0.., reversed. New list. */
PyObject *tc_base_upcast_axes(TensorCoreObject *tc);
/* permutes_for_shape_str(shape_str): a 2-tuple of index tuples; ValueError when a remapped name is missing. */
PyObject *tc_permutes_for_shape_str(TensorCoreObject *tc, PyObject *shape_str);

int tinyc_init_tc(PyObject *m);

#endif
