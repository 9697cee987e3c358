/* The rule sets of tinygrad/schedule/rangeify.py that the codegen pipeline uses: pm_mops (movement ops
 * pushed into INDEX, AFTER and END), pm_flatten_bufferize, to_bufferview, rangeify_codegen and
 * pm_add_buffers_local (BUFFERIZE becomes a buffer, a STORE into it and an AFTER; ctx is a counter such
 * as itertools.count(0), advanced with next()). Also pm_syntactic_sugar of tinygrad/codegen/__init__.py,
 * which runs with pm_mops in codegen's first pass. */
#include "../uop/native.h"
#include "../uop/ops_movement.h"
#include "indexing.h"

static PyObject *fn_next, *fn_sorted, *key_arg, *opt_type, *axis_outer, *axis_loop;   /* owned */

/* ---- helpers (results pooled, NULL propagates) ---- */

/* o.meth(*args, **kw); args a tuple (borrowed), kw may be NULL */
static PyObject *call_kw(PyObject *o, const char *meth, PyObject *args, PyObject *kw) {
  if (!o || !args) return NULL;
  PyObject *f = PyObject_GetAttrString(o, meth);
  PyObject *r = f ? PyObject_Call(f, args, kw) : NULL;
  Py_XDECREF(f);
  return pool_keep(r);
}

static PyObject *tuple_of(UOp *const *xs, Py_ssize_t n) {
  PyObject *t = PyTuple_New(n);
  for (Py_ssize_t i = 0; t && i < n; i++) PyTuple_SET_ITEM(t, i, Py_NewRef((PyObject *)xs[i]));
  return pool_keep(t);
}

/* UOp(op, dtype, src, arg, tag) */
static UOp *u_make(Op op, DType *dt, UOp *const *src, int n, PyObject *arg, PyObject *tag) {
  for (int i = 0; i < n; i++) if (!src[i]) return NULL;
  return dt ? KEEP(uop_new(op, dt, src, n, arg, tag)) : NULL;
}

/* a.end(*rngs): a when there is nothing to end */
static UOp *u_end(UOp *a, PyObject *rngs) {
  if (!a || !rngs) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(rngs);
  if (n == 0) return a;
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)(n + 1));
  if (!src) { PyErr_NoMemory(); return NULL; }
  src[0] = a;
  for (Py_ssize_t i = 0; i < n; i++) src[i + 1] = (UOp *)PyTuple_GET_ITEM(rngs, i);
  UOp *r = u_make(OP_END, DTYPE(VOID), src, (int)n + 1, NULL, NULL);
  PyMem_Free(src);
  return r;
}

static UOp *u_after(UOp *a, UOp *b) { UOp *src[2] = {a, b}; return a ? u_make(OP_AFTER, a->dtype, src, 2, NULL, NULL) : NULL; }
static UOp *u_store(UOp *a, UOp *v, PyObject *tag) { UOp *src[2] = {a, v}; return u_make(OP_STORE, DTYPE(VOID), src, 2, NULL, tag); }
static UOp *u_index(UOp *a, UOp *i, DType *dt) { UOp *src[2] = {a, i}; return u_make(OP_INDEX, dt, src, 2, NULL, NULL); }

/* ---- pm_mops ---- */

/* a movement op under an INDEX becomes new indices into its source */
RULE(mop_index, r, idx) {
  UOp *x = r->nsrc ? r->src[0] : NULL;
  if (!x) return NULL;
  PyObject *shape = pool_keep(uop_shape_req(x)), *marg = shape ? pool_keep(uop_marg(r)) : NULL;
  PyObject *rngs = marg ? tuple_of(idx->src + 1, idx->nsrc - 1) : NULL;
  PyObject *nr = rngs ? pool_keep(apply_movement_op(r->op, shape, marg, rngs)) : NULL;
  if (!nr) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(nr);
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)(n + 1));
  if (!src) { PyErr_NoMemory(); return NULL; }
  src[0] = x;
  for (Py_ssize_t i = 0; i < n; i++) src[i + 1] = (UOp *)PyTuple_GET_ITEM(nr, i);
  UOp *ret = u_make(OP_INDEX, idx->dtype, src, (int)n + 1, idx->arg, NULL);
  PyMem_Free(src);
  return ret;
}

/* move a movement op after the AFTER it is the buffer of; the AFTER's tag goes to the movement op */
RULE(mop_after, r, a) {
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)(a->nsrc + r->nsrc));
  if (!src) { PyErr_NoMemory(); return NULL; }
  memcpy(src, a->src, sizeof(UOp *) * a->nsrc);
  src[0] = r->src[0];
  UOp *na = u_make(OP_AFTER, a->dtype, src, a->nsrc, a->arg, NULL);
  memcpy(src, r->src, sizeof(UOp *) * r->nsrc);
  src[0] = na;
  UOp *ret = u_make(r->op, r->dtype, src, r->nsrc, r->arg, uop_tag(a));
  PyMem_Free(src);
  return ret;
}

/* an END of a movement op ends its source */
RULE(mop_end, r, a) {
  UOp **src = PyMem_Malloc(sizeof(UOp *) * a->nsrc);
  if (!src) { PyErr_NoMemory(); return NULL; }
  memcpy(src, a->src, sizeof(UOp *) * a->nsrc);
  src[0] = r->src[0];
  UOp *ret = u_replace_src(a, src, a->nsrc);
  PyMem_Free(src);
  return ret;
}

static const RuleDef pm_mops_defs[] = {
  R("UPat(GroupOp.Movement, name='r').f(Ops.INDEX, allow_any_len=True, name='idx')", mop_index),
  R("UPat(GroupOp.Movement, name='r').after(name='a', allow_any_len=True)", mop_after),
  R("UPat(GroupOp.Movement, name='r').end(name='a', allow_any_len=True)", mop_end),
};

/* ---- pm_syntactic_sugar (tinygrad/codegen/__init__.py; kept here beside pm_mops, which it runs with) ---- */

/* an INDEX of a pointer INDEX is one INDEX with both index lists */
RULE(index_concat, i1, i2) {
  if (!i1->dtype->is_ptr || i2->dtype->is_ptr) return NULL;
  int n = (int)i1->nsrc + (int)i2->nsrc - 1;
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)n);
  if (!src) { PyErr_NoMemory(); return NULL; }
  memcpy(src, i1->src, sizeof(UOp *) * i1->nsrc);
  memcpy(src + i1->nsrc, i2->src + 1, sizeof(UOp *) * (i2->nsrc - 1));
  UOp *ret = u_replace_src(i2, src, n);
  PyMem_Free(src);
  return ret;
}

static const RuleDef pm_syntactic_sugar_defs[] = {
  R("UPat(Ops.INDEX, name='i1').f(Ops.INDEX, name='i2', allow_any_len=True)", index_concat),
};

/* ---- pm_flatten_bufferize ---- */

/* a BUFFERIZE of several ranges (or with a tag) becomes one of a single flat range, reshaped back; the tag
 * moves to the reshape, and symbolic-sized ranges are shrunk to their size */
RULE(flatten_bufferize, x) {
  if (uop_tag(x) == Py_None && x->nsrc == 2) return NULL;
  PyObject *shape = pool_keep(uop_shape_req(x)), *size = shape ? pool_keep(sint_prod(shape)) : NULL;
  PyObject *flat = size ? pool_keep(PyTuple_Pack(1, size)) : NULL, *rngs = flat ? tuple_of(x->src + 1, x->nsrc - 1) : NULL;
  PyObject *one = rngs ? pool_keep(apply_movement_op(OP_RESHAPE, flat, shape, rngs)) : NULL;
  if (!one) return NULL;
  if (PyTuple_GET_SIZE(one) != 1) { PyErr_Format(PyExc_AssertionError, "%S must have length 1", one); return NULL; }
  UOp *src[2] = {x->src[0], (UOp *)PyTuple_GET_ITEM(one, 0)};
  UOp *ret = u_make(OP_BUFFERIZE, x->dtype, src, 2, x->arg, NULL);
  if (!ret) return NULL;
  ret = KEEP(uop_mop(ret, OP_RESHAPE, shape, false));
  bool symbolic = false;
  for (int i = 1; i < (int)x->nsrc; i++) symbolic |= x->src[i]->op == OP_RANGE && x->src[i]->src[0]->op != OP_CONST;
  if (ret && symbolic) {
    PyObject *arg = PyTuple_New(x->nsrc - 1), *zero = PyLong_FromLong(0);
    for (int i = 1; arg && zero && i < (int)x->nsrc; i++) {
      UOp *r = x->src[i];
      if (r->op != OP_CONST && !r->nsrc) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); Py_CLEAR(arg); break; }
      PyObject *p = PyTuple_Pack(2, zero, r->op != OP_CONST ? (PyObject *)r->src[0] : n_int(1));
      if (!p) { Py_CLEAR(arg); break; }
      PyTuple_SET_ITEM(arg, i - 1, p);
    }
    Py_XDECREF(zero);
    if (!pool_keep(arg)) return NULL;
    PyObject *args = pool_keep(PyTuple_Pack(1, arg));
    ret = (UOp *)call_kw((PyObject *)ret, "shrink", args, NULL);
  }
  return ret ? u_make(ret->op, ret->dtype, ret->src, ret->nsrc, ret->arg, uop_tag(x)) : NULL;
}

static const RuleDef pm_flatten_bufferize_defs[] = {
  R("UPat(Ops.BUFFERIZE, name='x')", flatten_bufferize),
};

/* ---- to_bufferview ---- */

/* on DISK (and TINYFS) a BUFFERIZE of a bitcast or contiguous is a BUFFER_VIEW of the indexed buffer */
RULE(late_buffer_view, t, b) {
  PyObject *dev = pool_keep(uop_device(b));
  if (!dev) return NULL;
  if (dev == Py_None) { PyErr_SetString(PyExc_AssertionError, ""); return NULL; }   /* b.device is unwrap(b._device) */
  if (!PyUnicode_Check(dev)) return NULL;
  PyObject *disk = pool_keep(PyUnicode_FromString("DISK")), *tinyfs = pool_keep(PyUnicode_FromString("TINYFS"));
  if (!disk || !tinyfs) return NULL;
  if (PyUnicode_Tailmatch(dev, disk, 0, PY_SSIZE_T_MAX, -1) != 1 && PyUnicode_Tailmatch(dev, tinyfs, 0, PY_SSIZE_T_MAX, -1) != 1) return NULL;
  PyObject *shape = pool_keep(uop_shape_req(b)), *size = shape ? pool_keep(sint_prod(shape)) : NULL;
  if (!size) return NULL;
  /* walk up to the INDEX */
  UOp *x = t, *found = NULL;
  for (;;) {
    for (int i = 0; i < (int)x->nsrc && !found; i++) if (x->src[i]->op == OP_INDEX) found = x->src[i];
    if (found) break;
    if (IN_GROUP(x->op, Elementwise)) { PyErr_SetString(PyExc_AssertionError, "can't buffer view elementwise"); return NULL; }
    if (!x->nsrc) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); return NULL; }
    x = x->src[0];
  }
  PyObject *offset;
  if (PyTuple_GET_SIZE(shape) == 0) offset = found->nsrc > 1 ? found->src[1]->arg : NULL;
  else {
    offset = n_int(0);
    for (int i = 1; i < (int)found->nsrc; i++) offset = n_add(offset, vmin(found->src[i]));
    if (offset && n_lti(offset, 0) > 0) offset = n_int(0);
  }
  if (!offset) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "tuple index out of range"); return NULL; }
  UOp *base = (UOp *)pool_keep(getattr_literal((PyObject *)found, "base"));
  PyObject *arg = pool_keep(PyTuple_Pack(2, size, offset));
  UOp *bv = arg ? u_make(OP_BUFFER_VIEW, t->dtype, &base, 1, arg, uop_tag(t)) : NULL;
  if (!bv) return NULL;
  UOp **src = PyMem_Malloc(sizeof(UOp *) * b->nsrc);
  if (!src) { PyErr_NoMemory(); return NULL; }
  memcpy(src, b->src, sizeof(UOp *) * b->nsrc);
  src[0] = bv;
  UOp *ret = u_replace_src(b, src, b->nsrc);
  PyMem_Free(src);
  return ret;
}

/* a BUFFER_VIEW of a bitcast or contiguous views what is under it */
RULE(bufferview_skip, b) {
  return u_replace_src(b, b->src[0]->src, b->src[0]->nsrc);
}

static const RuleDef to_bufferview_defs[] = {
  R("UPat((Ops.BITCAST, Ops.CONTIGUOUS), name='t').f(Ops.BUFFERIZE, allow_any_len=True, name='b')", late_buffer_view),
  R("UPat((Ops.BITCAST, Ops.CONTIGUOUS)).f(Ops.BUFFER_VIEW, name='b')", bufferview_skip),
};

/* ---- bufferize_to_store (pm_add_buffers_local) ---- */

static PyObject *next_id(PyObject *ctx) { return pool_keep(PyObject_CallOneArg(fn_next, ctx)); }

/* BUFFER(dtype, (LUNIQUE(next(ctx)), DEVICE(device)), size) */
static UOp *new_buffer(PyObject *ctx, UOp *x, PyObject *device, PyObject *size) {
  PyObject *id = next_id(ctx);
  if (!id) return NULL;
  UOp *src[2] = {u_make(OP_LUNIQUE, DTYPE(VOID), NULL, 0, id, NULL), u_make(OP_DEVICE, DTYPE(VOID), NULL, 0, device, NULL)};
  return u_make(OP_BUFFER, x->dtype, src, 2, size, NULL);
}

/* a BUFFERIZE becomes a buffer (global, or local in a kernel), a STORE of its value ending its ranges, and an
 * AFTER that reads the buffer once the store is done */
RULE(bufferize_to_store, x, idx) {
  PyObject *shape = pool_keep(uop_shape_req(x)), *size = shape ? pool_keep(sint_prod(shape)) : NULL;
  if (!size) return NULL;
  PtrMap memo = {0};
  PyObject *rd = uop_ranges(idx, &memo), *rl = rd ? PySequence_List(rd) : NULL;
  uop_ranges_memo_free(&memo);
  PyObject *kw = rl ? pool_keep(Py_BuildValue("{sO}", "key", key_arg)) : NULL, *args = kw ? pool_keep(PyTuple_Pack(1, rl)) : NULL;
  Py_XDECREF(rl);
  PyObject *sorted = args ? pool_keep(PyObject_Call(fn_sorted, args, kw)) : NULL, *rngs = sorted ? pool_keep(PySequence_Tuple(sorted)) : NULL;
  if (!rngs) return NULL;
  int pos = PyLong_Check(size) ? n_gti(size, 0) : 0;
  if (pos < 0) return NULL;
  if (!pos) { PyErr_Format(PyExc_AssertionError, "no zero sized or symbolic sized buffers %S", size); return NULL; }
  Py_ssize_t nsize = PyLong_AsSsize_t(size);
  if (nsize == -1 && PyErr_Occurred()) return NULL;
  PyObject *as = pool_keep(getattr_literal(x->arg, "addrspace")), *asv = as ? pool_keep(getattr_literal(as, "value")) : NULL;
  long asid = asv ? PyLong_AsLong(asv) : -1;
  if (asid == -1 && (!asv || PyErr_Occurred())) return NULL;
  if (asid < ADDRSPACE_GLOBAL || asid > ADDRSPACE_REG) { PyErr_SetString(PyExc_ValueError, "bad addrspace"); return NULL; }
  DType *sdtype = dtype_ptr(x->dtype, nsize, (AddrSpaceId)asid);
  if (!sdtype) return NULL;
  UOp *val = x->src[0];

  if (val->op == OP_ASSIGN) {   /* store into the assign's target; its movement ops go back on after */
    if (val->nsrc != 3) { PyErr_Format(PyExc_ValueError, "not enough values to unpack (expected 3, got %d)", (int)val->nsrc); return NULL; }
    UOp *target = val->src[0], *asrc = val->src[1], *mops = val->src[2];
    if (target->op != OP_INDEX) { PyErr_Format(PyExc_AssertionError, "%U is not index", ops_str[target->op]); return NULL; }
    UOp *tgt = u_make(OP_INDEX, sdtype, target->src, target->nsrc, target->arg, uop_tag(target));
    UOp *ret = u_after(target->src[0], u_end(u_store(tgt, asrc, uop_tag(x)), rngs));
    UOp *base = (UOp *)pool_keep(getattr_literal((PyObject *)mops, "base"));
    if (!base || !ret) return NULL;
    PyObject *chain = pool_keep(PyList_New(0));   /* the movement ops from the top down to base */
    for (UOp *w = mops; chain && w != base; w = w->src[0])
      if (PyList_Append(chain, (PyObject *)w) < 0) return NULL;
    for (Py_ssize_t k = chain ? PyList_GET_SIZE(chain) - 1 : -1; ret && k >= 0; k--) {
      UOp *w = (UOp *)PyList_GET_ITEM(chain, k);
      PyObject *marg = pool_keep(uop_marg(w));
      ret = marg ? KEEP(uop_mop(ret, w->op, marg, false)) : NULL;
    }
    return chain ? ret : NULL;
  }

  UOp *red = val;
  if (red->op == OP_REDUCE && red->nsrc == 2 && PyTuple_Check(red->src[1]->arg) && PyTuple_GET_SIZE(red->src[1]->arg) &&
      PyTuple_GET_ITEM(red->src[1]->arg, PyTuple_GET_SIZE(red->src[1]->arg) - 1) == axis_outer) {
    /* an outer-world reduce: zero the buffer over the outer range, then accumulate into it */
    if (asid != ADDRSPACE_GLOBAL) { PyErr_SetString(PyExc_AssertionError, "outer reduce needs a global buffer"); return NULL; }
    UOp *outer = red->src[1];
    PyObject *dev = pool_keep(getattr_literal(x->arg, "device"));
    UOp *buf = dev ? new_buffer(ctx, x, dev, size) : NULL;
    if (!buf) return NULL;
    Py_ssize_t na = PyTuple_GET_SIZE(outer->arg);
    PyObject *head = pool_keep(PyTuple_GetSlice(outer->arg, 0, na - 1)), *tail = pool_keep(PyTuple_Pack(1, axis_loop));
    PyObject *zarg = head && tail ? pool_keep(PySequence_Concat(head, tail)) : NULL;
    UOp *zsize = KEEP(uop_const_int(DTYPE(INDEX), nsize));
    UOp *zr = zarg && zsize ? u_make(OP_RANGE, outer->dtype, &zsize, 1, zarg, uop_tag(outer)) : NULL;
    UOp *zero = zr ? u_const(buf->dtype, n_int(0)) : NULL;
    UOp *zero_store = zero ? u_store(u_index(buf, zr, buf->dtype), zero, NULL) : NULL;
    UOp *zsrc[2] = {zero_store, zr};
    buf = u_after(buf, zero_store ? u_make(OP_END, DTYPE(VOID), zsrc, 2, NULL, NULL) : NULL);
    UOp *bufi = u_index(buf, idx, sdtype);
    UOp *ld = bufi ? u_make(OP_LOAD, sdtype->base, &bufi, 1, NULL, NULL) : NULL;
    UOp *sum = ld ? (UOp *)pool_keep(PyNumber_Add((PyObject *)ld, (PyObject *)red->src[0])) : NULL;
    UOp *st = sum ? u_store(bufi, sum, uop_tag(x)) : NULL;
    PyObject *outer_t = pool_keep(PyTuple_Pack(1, outer));
    return u_after(buf, u_end(u_end(st, rngs), outer_t));
  }

  if (asid == ADDRSPACE_GLOBAL) {
    PyObject *dev = pool_keep(getattr_literal(x->arg, "device"));
    UOp *buf = dev ? new_buffer(ctx, x, dev, size) : NULL;
    UOp *st = buf ? u_store(u_index(buf, idx, sdtype), val, uop_tag(x)) : NULL;
    return u_after(buf, u_end(st, rngs));
  }

  /* a local buffer, broadcast to the width of the index, and a barrier after the store */
  PyObject *id = next_id(ctx);
  UOp *buf = id ? u_make(OP_DEFINE_LOCAL, sdtype, NULL, 0, id, NULL) : NULL;
  if (!buf || x->nsrc < 2) return NULL;
  UOp *bc = u_broadcast(buf, x->src[1]->dtype->count);
  UOp *st = bc ? u_end(u_store(u_index(bc, idx, sdtype), val, NULL), rngs) : NULL;
  UOp *bar = st ? u_make(OP_BARRIER, DTYPE(VOID), &st, 1, NULL, NULL) : NULL;
  return u_after(buf, bar);
}

static const RuleDef bufferize_to_store_defs[] = {
  R("UPat(Ops.BUFFERIZE, src=(UPat(), UPat(name='idx')), name='x')", bufferize_to_store),
};

/* ---- rangeify_codegen ---- */

/* a CONTIGUOUS whose arg is opts hands them to ctx.opts, and goes */
RULE(get_contiguous, x) {
  if (PyTuple_Check(x->arg)) {
    bool all_opts = true;
    for (Py_ssize_t i = 0; all_opts && i < PyTuple_GET_SIZE(x->arg); i++) {
      int r = PyObject_IsInstance(PyTuple_GET_ITEM(x->arg, i), opt_type);
      if (r < 0) return NULL;
      all_opts = r;
    }
    if (all_opts && PyObject_SetAttrString(ctx, "opts", x->arg) < 0) return NULL;
  }
  if (!x->nsrc) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); return NULL; }
  return x->src[0];
}

/* no NOOP in a kernel graph */
RULE(noop_src, x) {
  if (!x->nsrc) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); return NULL; }
  return x->src[0];
}

/* a STORE has no arg */
RULE(strip_store_arg, x) {
  if (x->arg == Py_None) return NULL;
  return u_make(x->op, x->dtype, x->src, x->nsrc, Py_None, uop_tag(x));
}

/* a broadcast of an AFTER is the AFTER broadcast (the dtype of the vector follows the AFTER's) */
RULE_MAYBE(broadcast_after, (b), a) {
  return u_broadcast(a, b->nsrc);
}

/* a GEP of an AFTER is the AFTER's GEP */
RULE(gep_after, a, b) {
  return u_gep(a, b->arg);
}

/* a value INDEX into a (vector of) local buffer(s) is a LOAD of the pointer INDEX */
RULE(load_local, dg, idx) {
  if (idx->dtype->is_ptr) return NULL;
  int vcount = dg->dtype->is_ptr ? dg->dtype->v : dg->dtype->count;
  DType *base = dg->dtype->is_ptr ? dg->dtype->base : dg->dtype;
  DType *ldt = dtype_vec(dtype_scalar(base), vcount);
  UOp *pidx = u_make(OP_INDEX, dg->dtype, idx->src, idx->nsrc, Py_None, uop_tag(idx));
  return pidx && ldt ? u_make(OP_LOAD, ldt, &pidx, 1, NULL, NULL) : NULL;
}

static const RuleDef rangeify_codegen_defs[] = {
  R("UPat(Ops.CONTIGUOUS, name='x')", get_contiguous),
  R("UPat(Ops.NOOP, name='x')", noop_src),
  R("UPat(Ops.STORE, name='x')", strip_store_arg),
  R("UPat(Ops.AFTER, name='a').broadcast(name='b')", broadcast_after),
  R("UPat(Ops.DEFINE_LOCAL).f(Ops.AFTER, allow_any_len=True).broadcast(name='dg').f(Ops.INDEX, name='idx', allow_any_len=True)", load_local),
  R("UPat(Ops.AFTER, name='a').gep(name='b')", gep_after),
  R("UPat(Ops.DEFINE_LOCAL).f(Ops.AFTER, allow_any_len=True).gep(name='dg').f(Ops.INDEX, name='idx', allow_any_len=True)", load_local),
};

/* ---- init ---- */

/* a + b + c ... as new matchers (the parts are borrowed) */
static PatternMatcher *concat(PatternMatcher *const *pms, int n) {
  PatternMatcher *acc = (PatternMatcher *)Py_NewRef((PyObject *)pms[0]);
  for (int i = 1; acc && i < n; i++) {
    PatternMatcher *next = pm_concat(acc, pms[i]);
    Py_DECREF(acc);
    acc = next;
  }
  return acc;
}

int tinyc_init_rangeify(PyObject *m) {
  PyObject *bi = PyImport_ImportModule("builtins"), *opmod = PyImport_ImportModule("operator");
  if (bi) { fn_next = getattr_literal(bi, "next"); fn_sorted = getattr_literal(bi, "sorted"); }
  if (opmod) key_arg = PyObject_CallMethod(opmod, "attrgetter", "s", "arg");
  Py_XDECREF(bi); Py_XDECREF(opmod);
  opt_type = getattr_literal(m, "Opt");
  axis_outer = native_eval("AxisType.OUTER");
  axis_loop = native_eval("AxisType.LOOP");
  if (!fn_next || !fn_sorted || !key_arg || !opt_type || !axis_outer || !axis_loop) return -1;
  PatternMatcher *mops = pm_from_defs(pm_mops_defs, N(pm_mops_defs));
  PatternMatcher *flat = pm_from_defs(pm_flatten_bufferize_defs, N(pm_flatten_bufferize_defs));
  PatternMatcher *bview = pm_from_defs(to_bufferview_defs, N(to_bufferview_defs));
  PatternMatcher *store = pm_from_defs(bufferize_to_store_defs, N(bufferize_to_store_defs));
  PatternMatcher *sugar = pm_from_defs(pm_syntactic_sugar_defs, N(pm_syntactic_sugar_defs));
  PatternMatcher *codegen = pm_from_defs(rangeify_codegen_defs, N(rangeify_codegen_defs));
  if (!mops || !flat || !bview || !store || !sugar || !codegen) return -1;
  PatternMatcher *parts[] = {mops, flat, bview, store};
  PatternMatcher *local = concat(parts, 4);
  Py_DECREF(store);
  if (!local) return -1;
  return native_register("pm_mops", mops) < 0 || native_register("pm_flatten_bufferize", flat) < 0 ||
         native_register("to_bufferview", bview) < 0 || native_register("pm_add_buffers_local", local) < 0 ||
         native_register("pm_syntactic_sugar", sugar) < 0 || native_register("rangeify_codegen", codegen) < 0 ? -1 : 0;
}
