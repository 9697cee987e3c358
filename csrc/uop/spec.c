/* tinygrad/uop/spec.py (and validate_index of tinygrad/uop/validate.py): the spec checkers. Every
 * spec is a rule set whose rules answer True (the node is allowed), False (it is not) or None (this
 * rule has no opinion, ask the next one); type_verify walks a graph and raises on the first node no
 * rule accepts. A rule answers True/False by returning Py_True/Py_False in place of a UOp: the
 * engine hands pm.rewrite whatever object the rule gives.
 *
 * validate_index follows tinygrad: with IGNORE_OOB (tinygrad's default, read from the environment
 * once, as tinygrad's ContextVar is) every index passes; without it an index passes on its range
 * bounds or when it goes through a BITCAST / a cast of a pointer, and any other index is left to
 * z3's proof (validate.c), which raises the ImportError tinygrad raises when tinyc has no z3. */
#include "native.h"
#include "validate.h"
#include <stdlib.h>

#define SPEC_TRUE ((UOp *)Py_True)
#define SPEC_FALSE ((UOp *)Py_False)

static PyObject *reduce_axis_ops;   /* {Ops.ADD, Ops.MUL, Ops.MAX} */
static PyObject *axistype_class;    /* AxisType (borrowed) */
static bool ignore_oob = true;   /* tinygrad's IGNORE_OOB (default 1), a ContextVar */

/* ---- small helpers ---- */

/* a condition that may have failed (-1) as a rule answer */
static UOp *verdict(int r) { return r < 0 ? NULL : r ? SPEC_TRUE : SPEC_FALSE; }

/* obj[i] as Python subscripts it: new reference */
static PyObject *item_at(PyObject *obj, long i) {
  PyObject *key = PyLong_FromLong(i), *ret = key ? PyObject_GetItem(obj, key) : NULL;
  Py_XDECREF(key);
  return ret;
}

/* x.src[i], raising IndexError where Python would */
static UOp *src_at(UOp *x, int i) {
  if (i < x->nsrc) return x->src[i];
  PyErr_SetString(PyExc_IndexError, "tuple index out of range");
  return NULL;
}

/* every source from `start` on has dtype index */
static bool srcs_are_index_from(UOp *x, int start) {
  for (int i = start; i < x->nsrc; i++) if (x->src[i]->dtype != DTYPE(INDEX)) return false;
  return true;
}

/* every source has the given dtype */
static bool srcs_have_dtype(UOp *x, DType *dt) {
  for (int i = 0; i < x->nsrc; i++) if (x->src[i]->dtype != dt) return false;
  return true;
}

/* isinstance(v, int) for v = obj[i]: 1, 0, or -1 on error */
static int item_is_int(PyObject *obj, long i) {
  PyObject *v = item_at(obj, i);
  if (!v) return -1;
  int r = PyLong_Check(v);
  Py_DECREF(v);
  return r;
}

/* type(v) is type(dtypes.as_const(v, dt)) */
static int const_has_dtype_type(PyObject *v, DType *dt) {
  PyObject *c = dtype_as_const(v, dt);
  if (!c) return -1;
  int r = Py_TYPE(c) == Py_TYPE(v);
  Py_DECREF(c);
  return r;
}

/* isinstance(v, tuple) and len(v) == n, or >= n when at_least */
static bool is_tuple_of_len(PyObject *v, Py_ssize_t n, bool at_least) {
  return PyTuple_Check(v) && (at_least ? PyTuple_GET_SIZE(v) >= n : PyTuple_GET_SIZE(v) == n);
}

/* x.device as the UOp property gives it: new reference */
static PyObject *device_of(UOp *x) { return getattr_literal((PyObject *)x, "device"); }

/* prod(y[1] for y in arg) == count: the axes of an UNROLL/CONTRACT arg multiply to count */
static int axes_multiply_to(PyObject *arg, int count) {
  PyObject *it = PyObject_GetIter(arg), *acc = PyLong_FromLong(1), *y;
  if (!it || !acc) { Py_XDECREF(it); Py_XDECREF(acc); return -1; }
  while (acc && (y = PyIter_Next(it))) {
    PyObject *size = item_at(y, 1);
    Py_DECREF(y);
    Py_SETREF(acc, size ? PyNumber_Multiply(acc, size) : NULL);
    Py_XDECREF(size);
  }
  Py_DECREF(it);
  if (!acc || PyErr_Occurred()) { Py_XDECREF(acc); return -1; }
  PyObject *want = PyLong_FromLong(count);
  int r = want ? PyObject_RichCompareBool(want, acc, Py_EQ) : -1;
  Py_XDECREF(want); Py_DECREF(acc);
  return r;
}

/* ---- answers shared by many rules ---- */

RULE(accept) { return SPEC_TRUE; }
RULE(reject) { return SPEC_FALSE; }

/* ---- validate_index ---- */

/* an index through a BITCAST or a cast of a pointer (WEBGPU, PTX) is taken on trust */
static int has_pointer_trick(UOp *u) {
  PyObject *order = uop_toposort_list(u, NULL);
  if (!order) return -1;
  int found = 0;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order) && !found; i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(order, i);
    found = x->op == OP_BITCAST || (x->op == OP_CAST && x->nsrc && x->src[0]->dtype->is_ptr);
  }
  Py_DECREF(order);
  return found;
}

/* 1: the access idx into buf (under gate, may be NULL) is in bounds, 0: it is not, -1: error */
static int validate_index(UOp *buf, UOp *idx, UOp *gate) {
  if (idx->op == OP_CONST && idx->arg == Invalid) return 1;
  if (ignore_oob) return 1;
  if (!buf->dtype->is_ptr) {
    PyErr_Format(PyExc_RuntimeError, "ptrdtype called on UOp with type %R", (PyObject *)buf->dtype);
    return -1;
  }
  Py_ssize_t size = buf->dtype->size;
  if (size == -1) return 1;
  PyObject *lo = vmin(idx), *hi = vmax(idx), *sz = pool_keep(PyLong_FromSsize_t(size));
  int lo_ok = n_le(n_int(0), lo), hi_ok = lo_ok > 0 ? n_lt(hi, sz) : 0;
  if (lo_ok < 0 || hi_ok < 0) return -1;
  if (lo_ok && hi_ok) return 1;
  int trick = has_pointer_trick(idx);
  if (!trick && gate) trick = has_pointer_trick(gate);
  if (trick) return trick;
  return validate_index_z3(idx, gate, size);
}

RULE(index_in_bounds, buf, idx) { return verdict(validate_index(buf, idx, NULL)); }
RULE(gated_index_in_bounds, buf, idx, gate) { return verdict(validate_index(buf, idx, gate)); }

/* ---- shared_spec: nodes allowed anywhere ---- */

/* a CONST's value has the Python type its dtype makes */
RULE(const_value_typed, x) { return verdict(const_has_dtype_type(x->arg, x->dtype)); }

/* a DEFINE_VAR's bounds are ints */
RULE(define_var_int_bounds, x) {
  int r = item_is_int(x->arg, 1);
  return verdict(r > 0 ? item_is_int(x->arg, 2) : r);
}

/* WHERE picks between two values of its own dtype */
RULE(where_dtypes, w, x, y) { return verdict(w->dtype == x->dtype && x->dtype == y->dtype); }

/* a comparison compares operands of one base dtype */
RULE(compare_dtypes, x, y) { return verdict(dtype_base(x->dtype) == dtype_base(y->dtype)); }

/* a shift keeps its operand's dtype; the distance is that dtype or uint */
RULE(shift_dtypes, a, x, y) {
  return verdict(a->dtype == x->dtype && (y->dtype == x->dtype || y->dtype == DTYPE(UINT32)));
}

/* integer division and modulo only on ints (others fall to the ALU rule) */
RULE(int_division, x) { return dtype_is_int(x->dtype) ? NULL : SPEC_FALSE; }

/* an ALU's sources share its base dtype */
RULE(alu_dtypes, x) {
  for (int i = 0; i < x->nsrc; i++) if (dtype_base(x->dtype) != dtype_base(x->src[i]->dtype)) return SPEC_FALSE;
  return SPEC_TRUE;
}

/* CAST/BITCAST carry no arg */
RULE(cast_without_arg, x) { return verdict(x->arg == Py_None); }

/* a RANGE has its bound's dtype and an arg (ints..., AxisType) */
RULE(range_arg, rng, x) {
  PyObject *arg = rng->arg;
  if (rng->dtype != x->dtype || !is_tuple_of_len(arg, 2, true)) return SPEC_FALSE;
  Py_ssize_t n = PyTuple_GET_SIZE(arg);
  for (Py_ssize_t i = 0; i < n - 1; i++) if (!PyLong_Check(PyTuple_GET_ITEM(arg, i))) return SPEC_FALSE;
  return verdict(PyObject_IsInstance(PyTuple_GET_ITEM(arg, n - 1), axistype_class));
}

/* an INDEX's indices are index-typed; otherwise no opinion */
RULE(index_srcs, x) { return srcs_are_index_from(x, 1) ? SPEC_TRUE : NULL; }

static const RuleDef shared_spec_defs[] = {
  R("UPat(Ops.SINK, dtypes.void)", accept),
  R("UPat(Ops.CONST, src=(), name='x')", const_value_typed),
  R("UPat(Ops.DEFINE_VAR, name='x')", define_var_int_bounds),
  R("UPat(Ops.WHERE, name='w', src=(UPat(dtype=dtypes.bool), UPat.var('x'), UPat.var('y')))", where_dtypes),
  R("UPat((Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ), dtype=dtypes.bool, src=(UPat.var('x'), UPat.var('y')))", compare_dtypes),
  R("UPat((Ops.SHL, Ops.SHR), src=(UPat.var('x'), UPat.var('y')), name='a')", shift_dtypes),
  R("UPat((Ops.IDIV, Ops.MOD), name='x')", int_division),
  R("UPat(GroupOp.ALU, name='x')", alu_dtypes),
  R("UPat((Ops.BITCAST, Ops.CAST), src=(UPat(),), name='x')", cast_without_arg),
  R("UPat(Ops.RANGE, src=(UPat.var('x'),), allow_any_len=True, name='rng')", range_arg),
  R("UPat(Ops.INDEX, src=(UPat(),), allow_any_len=True, name='x')", index_srcs),
  R("UPat(Ops.END, src=(UPat(), UPat(Ops.RANGE)))", accept),
};

/* ---- movement_ops: the tensor graph's movement ops and their inputs ---- */

/* PERMUTE/FLIP take a tuple arg */
RULE(movement_tuple_arg, mv) { return verdict(PyTuple_Check(mv->arg)); }

static const RuleDef movement_ops_defs[] = {
  R("UPat((Ops.RESHAPE, Ops.EXPAND), name='mv', src=(UPat.var('x'), UPat(dtype=dtypes.index)))", accept),
  R("UPat((Ops.PAD, Ops.SHRINK), name='mv', src=(UPat.var('x'), UPat(dtype=dtypes.index), UPat(dtype=dtypes.index)))", accept),
  R("UPat((Ops.PERMUTE, Ops.FLIP), name='mv', src=(UPat.var('x'),))", movement_tuple_arg),
  R("UPat((Ops.VECTORIZE, Ops.VCONST), dtype=dtypes.index)", accept),
  R("UPat({Ops.ADD, Ops.MUL, Ops.IDIV}, dtype=dtypes.index)", accept),
  R("UPat(Ops.AFTER, src=(UPat(GroupOp.Movement.union({Ops.MULTI, Ops.CONTIGUOUS})),), allow_any_len=True)", accept),
  R("UPat(Ops.CUSTOM_KERNEL)", accept),
};

/* ---- _tensor_spec: the tensor graph ---- */

/* a DEVICE names one device or a tuple of them */
RULE(device_names, d) {
  PyObject *arg = d->arg;
  if (PyUnicode_Check(arg)) return SPEC_TRUE;
  if (!PyTuple_Check(arg)) return SPEC_FALSE;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(arg); i++) if (!PyUnicode_Check(PyTuple_GET_ITEM(arg, i))) return SPEC_FALSE;
  return SPEC_TRUE;
}

/* a BUFFER's arg is its size (its dtype is always a DType here: tinyc has no ImageDType) */
RULE(buffer_size_arg, buf) { return verdict(PyLong_Check(buf->arg) && DType_Check(buf->dtype)); }

/* a BUFFER_VIEW's arg is (size, offset), ints or UOps */
RULE(buffer_view_arg, buf_view) {
  PyObject *arg = buf_view->arg;
  if (!is_tuple_of_len(arg, 2, false)) return SPEC_FALSE;
  for (int i = 0; i < 2; i++) {
    PyObject *v = PyTuple_GET_ITEM(arg, i);
    if (!PyLong_Check(v) && !UOp_Check(v)) return SPEC_FALSE;
  }
  return SPEC_TRUE;
}

/* ASSIGN(target, value, *earlier assigns) */
RULE(assign_srcs, x) {
  if (x->nsrc < 2) return SPEC_FALSE;
  for (int i = 2; i < x->nsrc; i++) if (x->src[i]->op != OP_ASSIGN) return SPEC_FALSE;
  return SPEC_TRUE;
}

/* MSELECT picks one device of a multi-device source */
RULE(mselect_in_range, x) {
  UOp *s = src_at(x, 0);
  PyObject *dev = s ? device_of(s) : NULL;
  if (!dev) return NULL;
  int r = 0;
  if (PyTuple_Check(dev)) {
    PyObject *n = PyLong_FromSsize_t(PyTuple_GET_SIZE(dev));
    r = n ? PyObject_RichCompareBool(x->arg, n, Py_LT) : -1;
    Py_XDECREF(n);
  }
  Py_DECREF(dev);
  return verdict(r);
}

/* MSTACK stacks single-device sources */
RULE(mstack_single_devices, x) {
  for (int i = 0; i < x->nsrc; i++) {
    PyObject *dev = device_of(x->src[i]);
    if (!dev) return NULL;
    bool ok = PyUnicode_Check(dev);
    Py_DECREF(dev);
    if (!ok) return SPEC_FALSE;
  }
  return SPEC_TRUE;
}

/* DETACH/CONTIGUOUS/CONTIGUOUS_BACKWARD keep their source's dtype */
RULE(same_dtype_as_src, root, x) { return verdict(root->dtype == x->dtype); }

/* CONTIGUOUS keeps its dtype; the extra sources are RANGEs */
RULE(contiguous_ranges, root, x) {
  if (root->dtype != x->dtype) return SPEC_FALSE;
  for (int i = 1; i < root->nsrc; i++) if (root->src[i]->op != OP_RANGE) return SPEC_FALSE;
  return SPEC_TRUE;
}

/* COPY keeps its source's dtype */
RULE(copy_dtype, copy, x) { return verdict(copy->dtype == x->dtype); }

/* ALLREDUCE keeps its dtype and names its reduce op */
RULE(allreduce_arg, red, x) {
  return verdict(red->dtype != x->dtype ? 0 : PyObject_IsInstance(red->arg, Ops_Type));
}

/* MULTI: sources of its dtype, an int axis arg */
RULE(multi_arg, multi) {
  return verdict(srcs_have_dtype(multi, multi->dtype) && PyLong_Check(multi->arg));
}

/* ENCDEC has a state and an input buffer at least */
RULE(encdec_srcs, x) { return verdict(x->nsrc >= 2); }

/* REDUCE_AXIS arg: (ADD|MUL|MAX, axes, ...) */
RULE(reduce_axis_arg, x) {
  PyObject *arg = x->arg;
  if (!is_tuple_of_len(arg, 2, true)) return SPEC_FALSE;
  return verdict(PySet_Contains(reduce_axis_ops, PyTuple_GET_ITEM(arg, 0)));
}

/* REDUCE's sources after the first are its (index) ranges */
RULE(reduce_ranges, x) { return verdict(srcs_are_index_from(x, 1)); }

static const RuleDef tensor_spec_only_defs[] = {
  R("UPat(Ops.UNIQUE, dtypes.void, ())", accept),
  R("UPat(Ops.LUNIQUE, dtypes.void, ())", accept),
  R("UPat(Ops.DEVICE, dtypes.void, (), name='d')", device_names),
  R("UPat(Ops.BUFFER, src=(UPat((Ops.LUNIQUE, Ops.UNIQUE)), UPat(Ops.DEVICE)), allow_any_len=True, name='buf')", buffer_size_arg),
  R("UPat(Ops.BUFFER_VIEW, src=(UPat(Ops.BUFFER),), name='buf_view')", buffer_view_arg),
  R("UPat(Ops.BUFFER_VIEW, src=(UPat(Ops.MSTACK, src=UPat(Ops.BUFFER)),))", accept),
  R("UPat(Ops.KERNEL, src=UPat((Ops.BUFFER, Ops.BUFFER_VIEW, Ops.AFTER, Ops.MSELECT, Ops.MSTACK, Ops.BIND, Ops.CONTIGUOUS)))", accept),
  R("UPat(Ops.ASSIGN, name='x')", assign_srcs),
  R("UPat(Ops.MSELECT, name='x')", mselect_in_range),
  R("UPat(Ops.MSTACK, name='x')", mstack_single_devices),
  R("UPat(Ops.BIND, (dtypes.int, dtypes.index), (UPat(Ops.DEFINE_VAR), UPat.cvar(dtype=(dtypes.int, dtypes.index))), arg=None)", accept),
  R("UPat(Ops.BIND, (dtypes.int, dtypes.index), (UPat(Ops.DEFINE_VAR),), arg=None)", accept),
  R("UPat(Ops.CONST, src=(UPat(Ops.DEVICE),))", accept),
  R("UPat(Ops.CONST, src=(UPat(Ops.DEVICE), UPat((Ops.LUNIQUE, Ops.UNIQUE))))", accept),
  R("UPat((Ops.DETACH, Ops.CONTIGUOUS, Ops.CONTIGUOUS_BACKWARD), name='root', src=(UPat.var('x'),), arg=None)", same_dtype_as_src),
  R("UPat(Ops.CONTIGUOUS, name='root', src=(UPat.var('x'),), allow_any_len=True, arg=None)", contiguous_ranges),
  R("UPat(Ops.COPY, name='copy', src=(UPat.var('x'), UPat(Ops.DEVICE)), arg=None)", copy_dtype),
  R("UPat(Ops.ALLREDUCE, name='red', src=(UPat.var('x'), UPat(Ops.DEVICE)))", allreduce_arg),
  R("UPat(Ops.MULTI, name='multi')", multi_arg),
  R("UPat(Ops.ENCDEC, name='x')", encdec_srcs),
  R("UPat(Ops.REDUCE_AXIS, name='x')", reduce_axis_arg),
  R("UPat(Ops.REDUCE, src=(UPat(),), allow_any_len=True, name='x')", reduce_ranges),
  R("UPat(Ops.AFTER, src=(UPat((Ops.BUFFER, Ops.AFTER)),), allow_any_len=True)", accept),
  R("UPat(Ops.BIND, (dtypes.int, dtypes.index), (UPat(Ops.DEFINE_VAR), UPat(Ops.RANGE)), arg=None)", accept),
  R("UPat(Ops.STORE, src=(UPat(), UPat()))", accept),
};

/* ---- tensor_spec: _tensor_spec, and no tags ---- */

/* a tagged node is not allowed in the tensor graph */
RULE(untagged, x) { return uop_tag(x) == Py_None ? NULL : SPEC_FALSE; }

static const RuleDef tensor_spec_defs[] = {
  R("UPat(GroupOp.All, name='x')", untagged),
};

/* ---- shared_codegen_spec: kernels and programs ---- */

/* DEFINE_GLOBAL/DEFINE_LOCAL are pointers into their address space */
RULE(global_pointer, x) { return verdict(x->dtype->is_ptr && x->dtype->addrspace == ADDRSPACE_GLOBAL); }
RULE(local_pointer, x) { return verdict(x->dtype->is_ptr && x->dtype->addrspace == ADDRSPACE_LOCAL); }

/* DEFINE_REG's arg is its number */
RULE(int_arg, x) { return verdict(PyLong_Check(x->arg)); }

/* WMMA's arg is its 8-field description */
RULE(wmma_arg, x) { return verdict(is_tuple_of_len(x->arg, 8, false)); }

/* VECTORIZE of n > 1 scalars of one dtype, into that dtype's vec(n) */
RULE(vectorize_dtypes, x) {
  if (x->nsrc <= 1 || x->nsrc != dtype_vcount(x->dtype)) return SPEC_FALSE;
  for (int i = 0; i < x->nsrc; i++) {
    DType *v = dtype_vec(x->src[i]->dtype, x->nsrc);
    if (!v) return NULL;
    if (v != x->dtype) return SPEC_FALSE;
  }
  return SPEC_TRUE;
}

/* GEP of one lane has the scalar dtype */
RULE(gep_scalar, gep, src) { return verdict(gep->dtype == dtype_scalar(src->dtype)); }

/* SPECIAL: an index/int32 bound of its own dtype, a name */
RULE(special_arg, s, x) { return verdict(s->dtype == x->dtype && PyUnicode_Check(s->arg)); }

static const RuleDef shared_codegen_spec_defs[] = {
  R("UPat(Ops.DEFINE_GLOBAL, name='x')", global_pointer),
  R("UPat(Ops.DEFINE_LOCAL, name='x')", local_pointer),
  R("UPat(Ops.DEFINE_REG, src=(), name='x')", int_arg),
  R("UPat(Ops.AFTER, src=(UPat(GroupOp.Defines | {Ops.AFTER}),), allow_any_len=True)", accept),
  R("UPat(Ops.GROUP, dtypes.void)", accept),
  R("UPat(Ops.WMMA, src=(UPat(), UPat(), UPat()), name='x')", wmma_arg),
  R("UPat(Ops.VECTORIZE, name='x')", vectorize_dtypes),
  R("UPat(Ops.GEP, src=(UPat.var('src'),), name='gep')", gep_scalar),
  R("UPat().index(UPat()).or_casted().load()", accept),
  R("UPat(Ops.INDEX).or_casted().store(UPat())", accept),
  R("UPat((Ops.CUSTOMI, Ops.CUSTOM))", accept),
  R("UPat(GroupOp.Defines | {Ops.AFTER}, name='buf').index(UPat.var('idx'))", index_in_bounds),
  R("UPat(Ops.SPECIAL, src=(UPat.var('x', (dtypes.index, dtypes.int32)),), name='s')", special_arg),
  R("UPat(Ops.BARRIER, dtypes.void)", accept),
};

/* ---- kernel_spec: the AST codegen gets ---- */

/* CONTRACT's dtype holds the product of its axes */
RULE(contract_count, x) { return verdict(axes_multiply_to(x->arg, x->dtype->count)); }

/* UNROLL's source holds the product of its axes */
RULE(unroll_count, x) {
  UOp *s = src_at(x, 0);
  return s ? verdict(axes_multiply_to(x->arg, s->dtype->count)) : NULL;
}

static const RuleDef kernel_spec_only_defs[] = {
  R("UPat(GroupOp.Elementwise | {Ops.CONST, Ops.RANGE, Ops.DEFINE_VAR}, dtype=dtypes.index)", accept),
  R("UPat(Ops.CONTRACT, name='x')", contract_count),
  R("UPat(Ops.UNROLL, name='x')", unroll_count),
  R("UPat(Ops.END, src=(UPat(), UPat()), allow_any_len=True)", accept),
  R("UPat(Ops.BUFFERIZE, src=(UPat(),), allow_any_len=True, name='x')", accept),
  R("UPat(Ops.REDUCE, src=(UPat(),), allow_any_len=True, name='x')", reduce_ranges),
};

/* ---- program_spec: the linearized program ---- */

/* VCONST: a vector (>1 lanes) of valid values typed as its dtype makes them */
RULE(vconst_values, x) {
  PyObject *arg = x->arg, *seq = PySequence_Fast(arg, "VCONST arg is not iterable");
  if (!seq) return NULL;
  bool valid = true;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && valid; i++) valid = PySequence_Fast_GET_ITEM(seq, i) != Invalid;
  Py_DECREF(seq);
  if (!valid) return SPEC_FALSE;
  Py_ssize_t n = PyObject_Size(arg);
  if (n < 0) return NULL;
  int vcount = dtype_vcount(x->dtype);
  if (n != vcount || vcount <= 1) return SPEC_FALSE;
  return verdict(const_has_dtype_type(arg, x->dtype));
}

static const RuleDef program_spec_only_defs[] = {
  R("UPat(Ops.INDEX, src=(UPat(GroupOp.Defines | {Ops.AFTER}, name='buf'), UPat.var('idx'), UPat.var('gate', dtype=dtypes.bool)))", gated_index_in_bounds),
  R("UPat().index(UPat(), UPat(dtype=dtypes.bool)).or_casted().load(UPat())", accept),
  R("UPat(Ops.END, src=(UPat(), UPat(Ops.RANGE)), dtype=dtypes.void)", accept),
  R("UPat(GroupOp.All, dtype=dtypes.index)", reject),
  R("UPat(Ops.CONST, arg=Invalid)", reject),
  R("UPat(Ops.VCONST, name='x')", vconst_values),
  R("UPat(Ops.IF, dtype=dtypes.void, src=(UPat(dtype=dtypes.bool), UPat((Ops.CAST, Ops.INDEX))))", accept),
  R("UPat(Ops.ENDIF, dtype=dtypes.void, src=(UPat(Ops.IF),))", accept),
};

/* ---- full_spec: every node ever made ---- */

/* GEP of many lanes: its width is the number of lanes picked (void GEPs pass) */
RULE(gep_lanes, gep) {
  if (gep->dtype == DTYPE(VOID)) return SPEC_TRUE;
  Py_ssize_t n = PyObject_Size(gep->arg);
  return n < 0 ? NULL : verdict(dtype_vcount(gep->dtype) == n);
}

/* PTRCAT/CAT: the width is the sum of the sources' widths (pointee count for PTRCAT) */
RULE(ptrcat_width, x) {
  long total = 0;
  for (int i = 0; i < x->nsrc; i++) total += dtype_base(x->src[i]->dtype)->count;
  return verdict(dtype_vcount(x->dtype) == total);
}
RULE(cat_width, x) {
  long total = 0;
  for (int i = 0; i < x->nsrc; i++) total += dtype_vcount(x->src[i]->dtype);
  return verdict(dtype_vcount(x->dtype) == total);
}

/* Invalid is an index value */
RULE(invalid_is_index, x) { return verdict(dtype_scalar(x->dtype) == DTYPE(INDEX)); }

static const RuleDef full_spec_only_defs[] = {
  R("UPat(Ops.NOOP)", accept),
  R("UPat(Ops.REWRITE_ERROR)", accept),
  R("UPat(Ops.BUFFER_VIEW, src=(UPat((Ops.INDEX, Ops.LOAD)),))", accept),
  R("UPat(Ops.ASSIGN, src=(UPat(), UPat(), UPat()))", accept),
  R("UPat((Ops.UNROLL, Ops.CONTRACT), src=(UPat(),))", accept),
  R("UPat(Ops.GEP, name='gep')", gep_lanes),
  R("UPat(Ops.PTRCAT, name='x')", ptrcat_width),
  R("UPat(Ops.CAT, name='x')", cat_width),
  R("UPat(Ops.INDEX, src=(UPat((Ops.VECTORIZE, Ops.CAST)), UPat()))", accept),
  R("UPat(Ops.KERNEL, dtype=dtypes.void)", accept),
  R("UPat(Ops.CONST, arg=Invalid, name='x')", invalid_is_index),
  R("UPat(Ops.WHERE, dtype=dtypes.index, src=(UPat(dtype=dtypes.bool), UPat(), UPat(dtype=dtypes.index)))", accept),
  R("UPat((Ops.ADD, Ops.MUL, Ops.MOD, Ops.IDIV, Ops.MAX, Ops.SPECIAL, Ops.CAST, Ops.RANGE, Ops.VCONST, Ops.VECTORIZE), "
   "dtype=dtypes.index)", accept),
  R("UPat(Ops.BIND, (dtypes.int, dtypes.index), (UPat(), UPat()), arg=None)", accept),
  R("UPat((Ops.MSELECT, Ops.MSTACK), name='x')", accept),
  R("UPat(Ops.PROGRAM, dtypes.void, src=(UPat(Ops.SINK), UPat(Ops.DEVICE)))", accept),
  R("UPat(Ops.PROGRAM, dtypes.void, src=(UPat(Ops.SINK), UPat(Ops.DEVICE), UPat(Ops.LINEAR)))", accept),
  R("UPat(Ops.PROGRAM, dtypes.void, src=(UPat(Ops.SINK), UPat(Ops.DEVICE), UPat(Ops.LINEAR), UPat(Ops.SOURCE)))", accept),
  R("UPat(Ops.PROGRAM, dtypes.void, src=(UPat(Ops.SINK), UPat(Ops.DEVICE), UPat(Ops.LINEAR), UPat(Ops.SOURCE), UPat(Ops.BINARY)))", accept),
  R("UPat(Ops.LINEAR, dtypes.void)", accept),
  R("UPat(Ops.SOURCE, dtypes.void, src=())", accept),
  R("UPat(Ops.BINARY, dtypes.void, src=())", accept),
  R("UPat(Ops.VECTORIZE)", accept),
  R("UPat(Ops.INDEX)", accept),
  R("UPat((Ops.LOAD, Ops.STORE))", accept),
  R("UPat(Ops.DEFINE_VAR, dtype=dtypes.floats)", accept),
  R("UPat(Ops.AFTER, src=(UPat(),), allow_any_len=True)", accept),
};

/* ---- type_verify ---- */

/* the message tinygrad raises: position, op, dtype, source count, (op, dtype, arg) of each source, arg */
static PyObject *verify_failure_message(Py_ssize_t i, UOp *u) {
  PyObject *srcs = PyList_New(u->nsrc), *msg = NULL, *fmt = NULL;
  for (int k = 0; srcs && k < u->nsrc; k++) {
    UOp *s = u->src[k];
    PyObject *t = PyTuple_Pack(3, ops_members[s->op], (PyObject *)s->dtype, s->arg);
    if (!t) { Py_CLEAR(srcs); break; }
    PyList_SET_ITEM(srcs, k, t);
  }
  if (srcs && (fmt = PyUnicode_FromString("UOp verification failed at {} on {} {} {} {} {}")))
    msg = PyObject_CallMethod(fmt, "format", "nOOiOO", i, ops_members[u->op], (PyObject *)u->dtype, (int)u->nsrc, srcs, u->arg);
  Py_XDECREF(srcs); Py_XDECREF(fmt);
  return msg;
}

/* check_spec.rewrite(u): new reference, Py_None when no rule answers */
static PyObject *spec_answer(PyObject *spec, UOp *u) {
  if (!PatternMatcher_Check(spec)) return PyObject_CallMethod(spec, "rewrite", "O", (PyObject *)u);
  PyObject *ret = pm_rewrite((PatternMatcher *)spec, u, Py_None, false);
  return ret || PyErr_Occurred() ? ret : Py_NewRef(Py_None);
}

/* type_verify(ast, check_spec): every node of ast (a UOp, walked in toposort order, or a list of
 * UOps) must be answered True by the spec; the first that is not raises RuntimeError. */
static PyObject *type_verify(PyObject *ast, PyObject *spec) {
  PyObject *lst = UOp_Check(ast) ? uop_toposort_list((UOp *)ast, NULL) : PySequence_List(ast);
  if (!lst) return NULL;
  PyObject *ret = Py_None;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(lst); i++) {
    PyObject *u = PyList_GET_ITEM(lst, i);
    if (!UOp_Check(u)) { PyErr_Format(PyExc_TypeError, "type_verify needs UOps, not %.100s", Py_TYPE(u)->tp_name); ret = NULL; break; }
    PyObject *answer = spec_answer(spec, (UOp *)u);
    if (!answer) { ret = NULL; break; }
    Py_DECREF(answer);
    if (answer == Py_True) continue;
    PyObject *msg = verify_failure_message(i, (UOp *)u);
    if (msg) { PyErr_SetObject(PyExc_RuntimeError, msg); Py_DECREF(msg); }
    ret = NULL;
  }
  Py_DECREF(lst);
  return Py_XNewRef(ret);
}

static PyObject *py_type_verify(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *ast, *spec;
  return PyArg_ParseTuple(args, "OO:type_verify", &ast, &spec) ? type_verify(ast, spec) : NULL;
}

static bool spec_enabled = true;   /* tinygrad's SPEC (default 1), a ContextVar */

int spec_check(PyObject *ast, const char *spec_name) {
  if (!spec_enabled) return 0;
  PyObject *spec = (PyObject *)native_get(spec_name);
  if (!spec) { PyErr_Format(PyExc_RuntimeError, "the native rule set %s is missing", spec_name); return -1; }
  PyObject *ok = type_verify(ast, spec);
  Py_XDECREF(ok);
  return ok ? 0 : -1;
}

/* validate_index(buf, idx, gate=None) as a function, for tests and Python callers */
static PyObject *py_validate_index(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  UOp *buf, *idx, *gate = NULL;
  PyObject *gate_obj = Py_None;
  if (!PyArg_ParseTuple(args, "O!O!|O:validate_index", &UOp_Type, &buf, &UOp_Type, &idx, &gate_obj)) return NULL;
  if (gate_obj != Py_None) {
    if (!UOp_Check(gate_obj)) return PyErr_Format(PyExc_TypeError, "validate_index's gate must be a UOp or None");
    gate = (UOp *)gate_obj;
  }
  Py_ssize_t mark = pool_mark();
  int r = validate_index(buf, idx, gate);
  pool_release(mark);
  return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyMethodDef spec_functions[] = {
  {"type_verify", py_type_verify, METH_VARARGS, "type_verify(ast, check_spec): raise RuntimeError at the first node the spec rejects"},
  {"validate_index", py_validate_index, METH_VARARGS, "validate_index(buf, idx, gate=None): the INDEX spec check (z3 proves the bounds when IGNORE_OOB=0)"},
  {NULL, NULL, 0, NULL},
};

/* ---- registration ---- */

/* a rule set: its own rules, then the named sets after them (NULL-terminated), as tinygrad's `+` */
static int register_spec(const char *name, const RuleDef *defs, int n, const char *const *tail) {
  PatternMatcher *pm = pm_from_defs(defs, n);
  if (pm) pm_set_form_checked(pm);   /* a spec judges each node of a possibly malformed graph, checking what it reads */
  for (int i = 0; pm && tail[i]; i++) {
    PatternMatcher *next = native_get(tail[i]);
    PatternMatcher *joined = next ? pm_concat(pm, next) : NULL;
    if (!next) PyErr_Format(PyExc_RuntimeError, "spec %s needs %s first", name, tail[i]);
    Py_SETREF(pm, joined);
  }
  return native_register(name, pm);
}

static int init_spec_globals(PyObject *m) {
  if (ctxvar_flag("SPEC", &spec_enabled) < 0 || ctxvar_flag("IGNORE_OOB", &ignore_oob) < 0) return -1;
  axistype_class = (PyObject *)Py_TYPE(axistype_members[AXIS_GLOBAL]);
  if (!(reduce_axis_ops = PySet_New(NULL))) return -1;
  const Op reduce_ops[] = {OP_ADD, OP_MUL, OP_MAX};
  for (int i = 0; i < 3; i++) if (PySet_Add(reduce_axis_ops, ops_members[reduce_ops[i]]) < 0) return -1;
  return PyModule_AddFunctions(m, spec_functions);
}

int tinyc_init_spec(PyObject *m) {
  static const char *const none[] = {NULL};
  static const char *const tensor_tail[] = {"movement_ops", "shared_spec", NULL};
  static const char *const tagged_tail[] = {"_tensor_spec", NULL};
  static const char *const kernel_tail[] = {"movement_ops", "shared_codegen_spec", "shared_spec", NULL};
  static const char *const program_tail[] = {"shared_codegen_spec", "shared_spec", NULL};
  static const char *const full_tail[] = {"_tensor_spec", "kernel_spec", "program_spec", "shared_spec", NULL};
  if (init_spec_globals(m) < 0) return -1;
  return register_spec("shared_spec", shared_spec_defs, N(shared_spec_defs), none) < 0 ||
         register_spec("movement_ops", movement_ops_defs, N(movement_ops_defs), none) < 0 ||
         register_spec("_tensor_spec", tensor_spec_only_defs, N(tensor_spec_only_defs), tensor_tail) < 0 ||
         register_spec("tensor_spec", tensor_spec_defs, N(tensor_spec_defs), tagged_tail) < 0 ||
         register_spec("shared_codegen_spec", shared_codegen_spec_defs, N(shared_codegen_spec_defs), none) < 0 ||
         register_spec("kernel_spec", kernel_spec_only_defs, N(kernel_spec_only_defs), kernel_tail) < 0 ||
         register_spec("program_spec", program_spec_only_defs, N(program_spec_only_defs), program_tail) < 0 ||
         register_spec("full_spec", full_spec_only_defs, N(full_spec_only_defs), full_tail) < 0 ? -1 : 0;
}
