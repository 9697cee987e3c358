/* tinygrad/uop/symbolic.py, phases 1 and 2: propagate_invalid, symbolic_simple, gep_pushing,
 * commutative and symbolic. Each table reads one-for-one against tinygrad's list, in its order;
 * each rule is a pattern (tinygrad's rule-file syntax) and a small C function.
 * (Phase 3, `sym` and simplify_valid, lives in symbolic_sym.c.) */
#include "native.h"
#include "../helpers.h"
#include <math.h>

static PyObject *math_mod, *struct_mod;

/* ---- small helpers on Python numbers and UOps (borrowed and pooled, NULL propagates) ---- */

static PyObject *n_truediv(PyObject *a, PyObject *b) { return a && b ? pool_keep(PyNumber_TrueDivide(a, b)) : NULL; }
static PyObject *n_long(PyObject *a) { return a ? pool_keep(PyNumber_Long(a)) : NULL; }   /* int(a) */
static PyObject *n_float(double v) { return pool_keep(PyFloat_FromDouble(v)); }
static PyObject *n_math(const char *fn, PyObject *a) { return a ? pool_keep(PyObject_CallMethod(math_mod, fn, "O", a)) : NULL; }
/* a.arg * b.arg == c.arg, with Python's operators */
static int args_product_is(UOp *a, UOp *b, UOp *c) { return n_eq(n_mul(a->arg, b->arg), c->arg); }

static UOp *u_sub(UOp *a, UOp *b) { return a && b ? (UOp *)pool_keep(PyNumber_Subtract((PyObject *)a, (PyObject *)b)) : NULL; }
static UOp *u_pow(UOp *a, UOp *b) { return u_alu2(OP_POW, a, b); }
/* x.const_like(False).cast(bool with x's vector width): the folded result of a comparison */
static UOp *false_like(UOp *x) { return u_cast(u_const_like(x, Py_False), dtype_vec(DTYPE(BOOL), x->dtype->count)); }
static UOp *u_new_vec(Op op, DType *dt, PtrVec *src, PyObject *arg) {
  UOp *ret = src->len > UOP_MAX_SRC ? (UOp *)PyErr_Format(PyExc_ValueError, "too many sources") : u_new(op, dt, (UOp **)src->items, (int)src->len, arg);
  ptrvec_free(src);
  return ret;
}
static UOp *index_error(const char *what) { return (UOp *)PyErr_Format(PyExc_IndexError, "%s index out of range", what); }
/* u.src[i] with Python's indexing (negative i counts from the end) */
static UOp *src_at(UOp *u, PyObject *i) {
  if (!i) return NULL;
  Py_ssize_t k = PyNumber_AsSsize_t(i, PyExc_IndexError);
  if (k == -1 && PyErr_Occurred()) return NULL;
  if (k < 0) k += u->nsrc;
  return k >= 0 && k < u->nsrc ? u->src[k] : index_error("src");
}
/* tuple(seq[i] for i in idxs) */
static PyObject *pick_generic(PyObject *seq, PyObject *idxs) {
  PyObject *list = PyList_New(0), *it = list ? PyObject_GetIter(idxs) : NULL, *i;
  while (it && (i = PyIter_Next(it))) {
    PyObject *v = PyObject_GetItem(seq, i);
    Py_DECREF(i);
    if (!v || PyList_Append(list, v) < 0) { Py_XDECREF(v); Py_CLEAR(it); break; }
    Py_DECREF(v);
  }
  PyObject *ret = it && !PyErr_Occurred() ? PyList_AsTuple(list) : NULL;
  Py_XDECREF(it); Py_XDECREF(list);
  return pool_keep(ret);
}
/* tuple(seq[i] for i in idxs); GEP args are tuples of small ints, picked in C (anything else the generic way) */
static PyObject *pick(PyObject *seq, PyObject *idxs) {
  if (!seq || !idxs || !PyTuple_CheckExact(seq) || !PyTuple_CheckExact(idxs) || PyTuple_GET_SIZE(idxs) > 64) return pick_generic(seq, idxs);
  Py_ssize_t n = PyTuple_GET_SIZE(idxs), at[64];
  for (Py_ssize_t k = 0; k < n; k++) {
    long v;
    if (!exact_long(PyTuple_GET_ITEM(idxs, k), &v) || v < 0 || v >= PyTuple_GET_SIZE(seq))
      return pick_generic(seq, idxs);   /* not an int, huge, negative or out of range */
    at[k] = v;
  }
  PyObject *ret = PyTuple_New(n);
  for (Py_ssize_t k = 0; ret && k < n; k++) PyTuple_SET_ITEM(ret, k, Py_NewRef(PyTuple_GET_ITEM(seq, at[k])));
  return pool_keep(ret);
}
/* ---- pattern pieces shared by several rules ---- */

#define INVALID_PAT "UPat(Ops.CONST, arg=Invalid, name='i')"
#define INVALID_GATE "UPat.var('cond').where(UPat.var('x'), " INVALID_PAT ")"
#define BINARY_NOT_CMP "(GroupOp.Binary - GroupOp.Comparison)"

/* ================================ propagate_invalid ================================ */

/* cond.where(x, Invalid).cast(dt) -> x.cast(dt) */
RULE(cast_past_invalid_gate, x, cast) { return u_cast(x, cast->dtype); }
/* cond.where(x, Invalid) <op> y -> cond.where(x <op> y, Invalid) */
RULE(alu_into_invalid_gate, i, cond, alu, x, y) { return u_where(cond, u_alu2(alu->op, x, y), i); }
/* cond.where(x, Invalid) <cmp> y -> x <cmp> y: a comparison drops the gate */
RULE(compare_drops_invalid_gate, alu, x, y) { return u_alu2(alu->op, x, y); }
/* Invalid <op> y -> Invalid */
RULE(invalid_absorbs_alu, i) { return i; }

static const RuleDef propagate_invalid_defs[] = {
  R(INVALID_GATE ".cast(name='cast')", cast_past_invalid_gate),
  R("[" INVALID_GATE ".alu(op, UPat.var('y')).named('alu') for op in " BINARY_NOT_CMP "]", alu_into_invalid_gate),
  R("[" INVALID_GATE ".alu(op, UPat.var('y')).named('alu') for op in GroupOp.Comparison]", compare_drops_invalid_gate),
  R("[" INVALID_PAT ".alu(op, UPat(dtype=dtypes.index)) for op in " BINARY_NOT_CMP "]", invalid_absorbs_alu),
};

/* ================================ symbolic_simple ================================ */

/* fold_bitcast: one constant's bytes read as another dtype (struct.pack then struct.unpack) */
static PyObject *reinterpret(char from_fmt, char to_fmt, PyObject *v) {
  PyObject *packed = PyObject_CallMethod(struct_mod, "pack", "s#O", &from_fmt, (Py_ssize_t)1, v);
  PyObject *vals = packed ? PyObject_CallMethod(struct_mod, "unpack", "s#O", &to_fmt, (Py_ssize_t)1, packed) : NULL;
  PyObject *ret = vals ? PySequence_GetItem(vals, 0) : NULL;
  Py_XDECREF(packed); Py_XDECREF(vals);
  return pool_keep(ret);
}
static PyObject *reinterpret_each(char from_fmt, char to_fmt, PyObject *vs) {
  PyObject *list = PyList_New(0), *it = list ? PyObject_GetIter(vs) : NULL, *v;
  while (it && (v = PyIter_Next(it))) {
    PyObject *r = reinterpret(from_fmt, to_fmt, v);
    Py_DECREF(v);
    if (!r || PyList_Append(list, r) < 0) { Py_CLEAR(it); break; }
  }
  PyObject *ret = it && !PyErr_Occurred() ? PyList_AsTuple(list) : NULL;
  Py_XDECREF(it); Py_XDECREF(list);
  return pool_keep(ret);
}
RULE(fold_bitcast, root, c) {
  char from_fmt = dtype_scalar(c->dtype)->fmt, to_fmt = dtype_scalar(root->dtype)->fmt;
  if (!from_fmt || !to_fmt || dtype_itemsize(c->dtype) != dtype_itemsize(root->dtype)) return NULL;
  return u_const_like(root, root->dtype->count == 1 ? reinterpret(from_fmt, to_fmt, c->arg) : reinterpret_each(from_fmt, to_fmt, c->arg));
}

/* simplify_pow: x ** c for a scalar constant c, as reciprocals, square roots and products */
RULE(simplify_pow, x, c) {
  PyObject *e = c->arg, *half = n_float(0.5);
  int r;
  if ((r = n_lti(e, 0))) return r < 0 ? NULL : u_pow(u_recip(x), u_neg(c));          /* (1/x) ** -c */
  if ((r = n_eqi(e, 0))) return r < 0 ? NULL : u_const_likei(x, 1);                   /* x ** 0 = 1 */
  if ((r = n_eq(n_add(n_long(n_sub(e, half)), half), e)))                              /* c = k + 0.5 */
    return r < 0 ? NULL : u_mul(u_pow(x, u_const_like(c, n_sub(e, half))), u_unary(OP_SQRT, x));
  if ((r = n_eq(n_long(e), e)) <= 0) return NULL;                                      /* c = k: square and multiply */
  UOp *y = u_pow(x, u_const_like(c, n_floordiv(e, n_int(2))));
  int odd = n_eqi(n_mod(e, n_int(2)), 1);
  if (odd < 0) return NULL;
  UOp *yy = u_mul(y, y);
  return odd ? u_mul(yy, x) : u_binop(OP_MUL, yy, n_int(1));
}

/* x + 0, x * 1, x ^ 0, x // 1 -> x */
RULE(to_x, x) { return x; }
/* x // x, x / x -> 1 */
RULE(to_one, x) { return u_const_likei(x, 1); }
/* x // -1 -> -x */
RULE(idiv_minus_one, x) { return u_neg(x); }
/* (x % y) % y -> x % y */
RULE(mod_mod, base) { return base; }
/* ((x // a) % c) + ((x // b) * c) -> x // a when a*c == b */
RULE(recombine_div_mod, a, c, b, x) { return N_TRUE(args_product_is(a, c, b)) ? u_idiv(x, a) : NULL; }
/* (x // c1) * c3 + (x % c1) * c2 -> x * c2 when c1*c2 == c3 */
RULE(recombine_scaled, c1, c2, c3, x) { return N_TRUE(args_product_is(c1, c2, c3)) ? u_mul(x, c2) : NULL; }
/* y + (x // c) * c + x % c -> y + x */
RULE(y_plus_x, y, x) { return u_add(y, x); }
/* y + (x // c1) * c3 + (x % c1) * c2 -> y + x * c2 when c1*c2 == c3 */
RULE(y_plus_recombine_scaled, c1, c2, c3, y, x) { return N_TRUE(args_product_is(c1, c2, c3)) ? u_add(y, u_mul(x, c2)) : NULL; }
/* bool x & c -> x if c else c */
RULE(bool_and_const, c, x) { int t = n_truth(c->arg); return t < 0 ? NULL : t ? x : c; }
/* bool x | c -> c if c else x */
RULE(bool_or_const, c, x) { int t = n_truth(c->arg); return t < 0 ? NULL : t ? c : x; }
/* x.where(False, True) -> not x */
RULE(where_false_true, x) { return u_not(x); }
/* x < x, x != x (ints) -> False */
RULE(to_false, x) { return false_like(x); }
/* x % x, x ^ x -> 0 */
RULE(to_zero, x) { return u_const_likei(x, 0); }
/* an ALU of constants -> its value (exec_alu, not truncated) */
RULE(fold_const_alu, a) {
  PyObject *args[3];
  for (int i = 0; i < a->nsrc && i < 3; i++) args[i] = a->src[i]->arg;
  return u_const_like(a, pool_keep(exec_alu(a->op, a->dtype, args, a->nsrc < 3 ? a->nsrc : 3, false)));
}
/* bool x * y -> x & y */
RULE(bool_mul_is_and, x, y) { return u_and(x, y); }
/* bool x + y, max(x, y) -> x | y */
RULE(bool_add_is_or, x, y) { return u_or(x, y); }
/* 0/0, (x*0)/0 -> nan */
RULE(to_nan, x) { return u_const_like(x, n_float(NAN)); }
/* (x * x2) / x2 -> x */
RULE(mul_div_cancel, x) { return x; }
/* x * 0 -> 0 (nan when x is a nan or inf constant) */
RULE(mul_zero, x) {
  bool nan = x->op == OP_CONST && PyFloat_Check(x->arg) && !isfinite(PyFloat_AS_DOUBLE(x->arg));
  return u_const_like(x, nan ? n_float(NAN) : n_int(0));
}
/* CAST(const) -> const of the cast's dtype */
RULE(fold_cast_const, root, c) { return u_const_like(root, c->arg); }
/* a CAST/BITCAST to the dtype it already has -> its source */
RULE(noop_cast, root) {
  if (!root->nsrc) return index_error("src");
  return root->dtype == root->src[0]->dtype ? root->src[0] : NULL;
}
/* x.cast(a).cast(b) -> x when b is x's dtype and a keeps every value of it */
RULE(cast_roundtrip, x, b, a) { return x->dtype == b->dtype && dtype_can_lossless_cast(b->dtype, a->dtype) ? x : NULL; }
/* c ** x -> c if c == 1, else exp2(x * log2(c)) for c > 0 */
RULE(const_pow, c, x) {
  int r = n_eqi(c->arg, 1);
  if (r) return r < 0 ? NULL : c;
  if (!N_TRUE(n_gti(c->arg, 0))) return NULL;
  return u_unary(OP_EXP2, u_binop(OP_MUL, x, n_math("log2", c->arg)));
}
/* threefry: (x & 0xFFFFFFFF).cast(uint32) -> x.cast(uint32) */
RULE(low_word_cast, x) { return u_cast(x, DTYPE(UINT32)); }
/* threefry: the low word of (hi << 32 | y) is y */
RULE(low_word, y) { return y; }
/* threefry: the high word of (x << 32 | lo) is x */
RULE(high_word, x) { return x; }
/* c.where(v, v) -> v */
RULE(where_same, val) { return val; }
/* const gate: gate.where(c0, c1) -> c0 if gate else c1 */
RULE(where_const_gate, gate, c0, c1) { int t = n_truth(gate->arg); return t < 0 ? NULL : t ? c0 : c1; }
/* a.where(b.where(c, d), d) -> (a & b).where(c, d) */
RULE(where_merge_gates, a, b, c, d) { return u_where(u_and(a, b), c, d); }

static const RuleDef symbolic_simple_defs[] = {
  /* self folding */
  R("UPat.var('x') + 0", to_x),
  R("UPat.var('x') * 1", to_x),
  R("UPat.var('x', dtype=dtypes.ints+(dtypes.bool, dtypes.index)) ^ 0", to_x),
  R("UPat.var('x') // UPat.var('x')", to_one),
  R("UPat.var('x') // 1", to_x),
  R("UPat.var('x') // -1", idiv_minus_one),
  R("(UPat.var() % UPat.var('y')).named('base') % UPat.var('y')", mod_mod),
  R("UPat.var('x') % UPat.cvar('c') + (UPat.var('x') // UPat.cvar('c')) * UPat.cvar('c')", to_x),
  R("(UPat.var('x') // UPat.cvar('a')) % UPat.cvar('c') + (UPat.var('x') // UPat.cvar('b')) * UPat.cvar('c')", recombine_div_mod),
  R("(UPat.var('x') // UPat.cvar('c1')) * UPat.cvar('c3') + UPat.var('x') % UPat.cvar('c1') * UPat.cvar('c2')", recombine_scaled),
  R("(UPat.var('y') + (UPat.var('x') // UPat.cvar('c')) * UPat.cvar('c')) + UPat.var('x') % UPat.cvar('c')", y_plus_x),
  R("(UPat.var('y') + UPat.var('x') % UPat.cvar('c')) + (UPat.var('x') // UPat.cvar('c')) * UPat.cvar('c')", y_plus_x),
  R("(UPat.var('y') + (UPat.var('x') // UPat.cvar('c1')) * UPat.cvar('c3')) + UPat.var('x') % UPat.cvar('c1') * UPat.cvar('c2')", y_plus_recombine_scaled),
  R("(UPat.var('y') + UPat.var('x') % UPat.cvar('c1') * UPat.cvar('c2')) + (UPat.var('x') // UPat.cvar('c1')) * UPat.cvar('c3')", y_plus_recombine_scaled),
  R("UPat.var('x', dtype=dtypes.bool) & UPat.cvar('c', vec=False)", bool_and_const),
  R("UPat.var('x', dtype=dtypes.bool) | UPat.cvar('c', vec=False)", bool_or_const),
  R("UPat(GroupOp.Idempotent, src=(UPat.var('x'), UPat.var('x')))", to_x),
  R("UPat.var('x', dtype=dtypes.bool).logical_not().logical_not()", to_x),
  R("UPat.var('x', dtype=dtypes.bool).where(UPat.const(dtypes.bool, True), UPat.const(dtypes.bool, False))", to_x),
  R("UPat.var('x', dtype=dtypes.bool).where(UPat.const(dtypes.bool, False), UPat.const(dtypes.bool, True))", where_false_true),
  R("UPat.var('x', dtype=dtypes.ints+(dtypes.bool, dtypes.index)).trunc()", to_x),
  /* zero folding */
  R("UPat.var('x') < UPat.var('x')", to_false),
  R("UPat.var('x') % UPat.var('x')", to_zero),
  R("UPat.var('x') ^ UPat.var('x')", to_zero),
  R("UPat.var('x', dtype=dtypes.ints+(dtypes.bool, dtypes.index)) != UPat.var('x')", to_false),
  /* constant folding */
  R("UPat(GroupOp.Unary, src=(UPat((Ops.VCONST, Ops.CONST)),), name='a')", fold_const_alu),
  R("UPat(GroupOp.Binary - {Ops.THREEFRY}, src=(UPat((Ops.VCONST, Ops.CONST)),)*2, name='a')", fold_const_alu),
  R("UPat(GroupOp.Ternary, src=(UPat((Ops.VCONST, Ops.CONST)),)*3, name='a')", fold_const_alu),
  /* bool MUL is AND, ADD and MAX are OR */
  R("UPat.var('x', dtype=dtypes.bool) * UPat.var('y', dtype=dtypes.bool)", bool_mul_is_and),
  R("UPat.var('x', dtype=dtypes.bool) + UPat.var('y', dtype=dtypes.bool)", bool_add_is_or),
  R("UPat.var('x', dtype=dtypes.bool).maximum(UPat.var('y', dtype=dtypes.bool))", bool_add_is_or),
  /* div rules */
  R("UPat.cvar('x', arg=0) / 0", to_nan),
  R("(UPat.var('x') * 0) / 0", to_nan),
  R("UPat.var('x') / UPat.var('x')", to_one),
  R("(UPat.var('x') * UPat.var('x2')) / UPat.var('x2')", mul_div_cancel),
  /* x * 0 */
  R("UPat.var('x') * 0", mul_zero),
  /* cast/bitcast */
  R("UPat(Ops.CAST, name='root', src=(UPat.cvar('c'),))", fold_cast_const),
  R("UPat((Ops.CAST, Ops.BITCAST), name='root')", noop_cast),
  R("UPat(Ops.BITCAST, name='root', src=(UPat.cvar('c'),))", fold_bitcast),
  R("UPat.var('x').cast(name='a').cast(name='b')", cast_roundtrip),
  /* pow */
  R("UPat.var('x').alu(Ops.POW, UPat.cvar('c', vec=False))", simplify_pow),
  R("UPat.cvar('c', vec=False).alu(Ops.POW, UPat.var('x'))", const_pow),
  /* threefry */
  R("(UPat.var('x', dtypes.uint64) & 0xFFFFFFFF).cast(dtypes.uint32)", low_word_cast),
  R("((UPat.var(None, dtypes.uint64) * (1 << 32)) | UPat.var('y', dtypes.uint32).cast(dtypes.uint64)).cast(dtypes.uint32)", low_word),
  R("((UPat.var('x', dtypes.uint64) * (1 << 32)) | UPat.var(None, dtypes.uint32).cast(dtypes.uint64)) // (1 << 32)", high_word),
  R("((UPat.var(None, dtypes.uint64) << 32) | UPat.var('y', dtypes.uint32).cast(dtypes.uint64)).cast(dtypes.uint32)", low_word),
  R("((UPat.var('x', dtypes.uint64) << 32) | UPat.var(None, dtypes.uint32).cast(dtypes.uint64)) >> 32", high_word),
  /* simple where folding */
  R("UPat.var().where(UPat.var('val'), UPat.var('val'))", where_same),
  R("UPat.cvar('gate', vec=False).where(UPat.var('c0'), UPat.var('c1'))", where_const_gate),
  R("UPat.var('a').where(UPat.var('b').where(UPat.var('c'), UPat.var('d')), UPat.var('d'))", where_merge_gates),
};

/* ================================ gep_pushing ================================ */

/* GEP of a GEP -> one GEP picking through both */
RULE(gep_of_gep, g2, g1) { return u_gep(g2->src[0], pick(g2->arg, g1->arg)); }
/* GEP of a VECTORIZE -> the picked sources (a VECTORIZE of them when more than one) */
RULE(gep_of_vectorize, gep, vec) {
  Py_ssize_t n = PyObject_Length(gep->arg);
  if (n < 0) return NULL;
  if (n <= 1) return src_at(vec, pool_keep(PySequence_GetItem(gep->arg, 0)));
  PtrVec src = {0};
  for (Py_ssize_t k = 0; k < n; k++) {
    UOp *s = src_at(vec, pool_keep(PySequence_GetItem(gep->arg, k)));
    if (!s || ptrvec_push(&src, s) < 0) { ptrvec_free(&src); return NULL; }
  }
  return u_new_vec(OP_VECTORIZE, gep->dtype, &src, NULL);
}
/* GEP of a scalar CONST -> that const, GEP's dtype */
RULE(gep_of_const, gep, c) { return u_const_like(gep, c->arg); }
/* GEP of a VCONST -> the picked lanes */
RULE(gep_of_vconst, gep, c) { return u_const_like(gep, pick(c->arg, gep->arg)); }
/* GEP of a void node -> the node */
RULE(gep_of_void, x) { return x; }
/* GEP taking every lane in order -> its source */
RULE(gep_in_order, g) {
  if (g->dtype->is_ptr || !g->nsrc || !PyTuple_Check(g->arg) || PyTuple_GET_SIZE(g->arg) != g->src[0]->dtype->count) return NULL;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(g->arg); k++) {
    int eq = n_cmpi(PyTuple_GET_ITEM(g->arg, k), Py_EQ, k);
    if (eq <= 0) return NULL;
  }
  return g->src[0];
}
/* GEP of an ALU/CAST/BITCAST -> the ALU of GEPs of its sources */
RULE(gep_through_alu, gep, alu) {
  if (gep->dtype->is_ptr || alu->dtype->is_ptr) return NULL;
  DType *dt = dtype_vec(dtype_scalar(alu->dtype), gep->dtype->count);
  if (!dt) return NULL;
  PtrVec src = {0};
  for (int k = 0; k < alu->nsrc; k++) {
    UOp *s = u_gep(alu->src[k], gep->arg);
    if (!s || ptrvec_push(&src, s) < 0) { ptrvec_free(&src); return NULL; }
  }
  return u_new_vec(alu->op, dt, &src, alu->arg);
}
/* CAT -> a VECTORIZE of every lane of every source */
RULE(cat_to_vectorize, x) {
  if (x->dtype->is_ptr) return NULL;
  PtrVec src = {0};
  for (int k = 0; k < x->nsrc; k++)
    for (int i = 0; i < x->src[k]->dtype->count; i++) {
      UOp *s = u_gep(x->src[k], n_int(i));
      if (!s || ptrvec_push(&src, s) < 0) { ptrvec_free(&src); return NULL; }
    }
  return u_new_vec(OP_VECTORIZE, x->dtype, &src, NULL);
}
/* VECTORIZE of single-lane GEPs of one x -> one GEP of x */
RULE_MAYBE(vectorize_of_geps, (v), x) {
  PyObject *lanes = PyTuple_New(v->nsrc);
  for (int k = 0; lanes && k < v->nsrc; k++) {
    PyObject *arg = v->src[k]->arg;
    Py_ssize_t n = PyObject_Length(arg);
    if (n != 1) {
      if (n >= 0) PyErr_Format(PyExc_AssertionError, "expected one element in %R", arg);
      Py_CLEAR(lanes);
      break;
    }
    PyObject *lane = PySequence_GetItem(arg, 0);
    if (!lane) { Py_CLEAR(lanes); break; }
    PyTuple_SET_ITEM(lanes, k, lane);
  }
  return u_gep(x, pool_keep(lanes));
}

/* prod(x[1] for x in axes): the lanes of a WMMA operand from its (axis, size) pairs; -1 on error */
static int axes_size(PyObject *axes, Py_ssize_t *size) {
  PyObject *it = axes ? PyObject_GetIter(axes) : NULL, *ax;
  *size = 1;
  while (it && (ax = PyIter_Next(it))) {
    PyObject *s = PySequence_GetItem(ax, 1);
    Py_ssize_t v = s ? PyLong_AsSsize_t(s) : -1;
    Py_DECREF(ax); Py_XDECREF(s);
    if (v == -1 && PyErr_Occurred()) break;
    *size *= v;
  }
  Py_XDECREF(it);
  return PyErr_Occurred() ? -1 : 0;
}
/* a GEP's lanes as C integers (a PyMem array), NULL with an error when they are not ints */
static Py_ssize_t *lanes_of(PyObject *arg, Py_ssize_t *n) {
  if ((*n = PyObject_Length(arg)) < 0) return NULL;
  Py_ssize_t *lanes = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(*n ? *n : 1));
  if (!lanes) return (Py_ssize_t *)PyErr_NoMemory();
  for (Py_ssize_t k = 0; k < *n; k++) {
    PyObject *v = PySequence_GetItem(arg, k);
    lanes[k] = v ? PyLong_AsSsize_t(v) : -1;
    Py_XDECREF(v);
    if (lanes[k] == -1 && PyErr_Occurred()) { PyMem_Free(lanes); return NULL; }
  }
  return lanes;
}
static Py_ssize_t floordiv(Py_ssize_t a, Py_ssize_t b) { Py_ssize_t q = a / b; return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q; }
/* the lanes pick whole output blocks of `block` lanes, in order inside each block:
 * lanes[i::block] == tuple(x + i for x in lanes[::block]) for every i < block */
static bool whole_blocks(const Py_ssize_t *lanes, Py_ssize_t n, Py_ssize_t block) {
  Py_ssize_t nblocks = (n + block - 1) / block;
  for (Py_ssize_t i = 0; i < block; i++) {
    if ((n - i + block - 1) / block != nblocks) return false;
    for (Py_ssize_t k = i; k < n; k += block)
      if (lanes[k] - i != lanes[k - i]) return false;
  }
  return true;
}
/* the GEP of one WMMA source (of `ssz` lanes per block) that feeds the chosen output blocks */
static UOp *wmma_src_gep(UOp *s, Py_ssize_t ssz, const Py_ssize_t *lanes, Py_ssize_t n, Py_ssize_t block) {
  PyObject *idx = PyList_New(0);
  for (Py_ssize_t k = 0; idx && k < n; k += block) {
    Py_ssize_t first = floordiv(lanes[k], block) * ssz;
    for (Py_ssize_t j = first; idx && j < first + ssz; j++) {
      PyObject *v = PyLong_FromSsize_t(j);
      if (!v || PyList_Append(idx, v) < 0) Py_CLEAR(idx);
      Py_XDECREF(v);
    }
  }
  PyObject *t = idx ? PyList_AsTuple(idx) : NULL;
  Py_XDECREF(idx);
  return u_gep(s, pool_keep(t));
}
/* a WMMA of the blocks the lanes pick: each source GEP'd to the blocks that feed them */
static UOp *wmma_of_blocks(UOp *gep, UOp *wmma, PyObject *shapes, const Py_ssize_t *lanes, Py_ssize_t n, Py_ssize_t block) {
  Py_ssize_t nshapes = PyObject_Length(shapes), ssz;
  if (nshapes < 0) return NULL;
  PtrVec src = {0};
  for (Py_ssize_t k = 0; k < wmma->nsrc && k < nshapes; k++) {
    UOp *s = axes_size(pool_keep(PySequence_GetItem(shapes, k)), &ssz) < 0 ? NULL : wmma_src_gep(wmma->src[k], ssz, lanes, n, block);
    if (!s || ptrvec_push(&src, s) < 0) { ptrvec_free(&src); return NULL; }
  }
  return u_new_vec(OP_WMMA, gep->dtype, &src, wmma->arg);
}
/* GEP of a WMMA that takes whole output blocks -> a WMMA of GEPs of its sources */
RULE(gep_through_wmma, wmma, gep) {
  PyObject *shapes = pool_keep(PySequence_GetItem(wmma->arg, 6)), *last = shapes ? pool_keep(PySequence_GetItem(shapes, -1)) : NULL;
  Py_ssize_t block, n;
  if (!last || axes_size(last, &block) < 0) return NULL;
  if (block <= 0) return (UOp *)PyErr_Format(PyExc_ValueError, "WMMA output block of %zd lanes", block);
  Py_ssize_t *lanes = lanes_of(gep->arg, &n);
  if (!lanes) return NULL;
  UOp *ret = whole_blocks(lanes, n, block) ? wmma_of_blocks(gep, wmma, shapes, lanes, n, block) : NULL;
  PyMem_Free(lanes);
  return ret;
}

static const RuleDef gep_pushing_defs[] = {
  R("UPat(Ops.GEP, name='g2').f(Ops.GEP, name='g1')", gep_of_gep),
  R("UPat(Ops.VECTORIZE, name='vec').f(Ops.GEP, name='gep')", gep_of_vectorize),
  R("UPat.cvar('c', vec=False).f(Ops.GEP, name='gep')", gep_of_const),
  R("UPat(Ops.VCONST, name='c').f(Ops.GEP, name='gep')", gep_of_vconst),
  R("UPat(Ops.GEP, src=(UPat(dtype=dtypes.void, name='x'),))", gep_of_void),
  R("UPat(Ops.GEP, name='g')", gep_in_order),
  R("UPat((*GroupOp.ALU, Ops.CAST, Ops.BITCAST), name='alu').f(Ops.GEP, name='gep')", gep_through_alu),
  R("UPat(Ops.CAT, name='x')", cat_to_vectorize),
  R("UPat(Ops.VECTORIZE, name='v', src=UPat(Ops.GEP, src=(UPat.var('x'),)))", vectorize_of_geps),
  R("UPat(Ops.WMMA, name='wmma').f(Ops.GEP, name='gep')", gep_through_wmma),
};

/* ================================ commutative ================================ */

/* tinygrad's `a.tuplize < b.tuplize` (ops.c): 1, 0, or -1 on error */
static int tuplize_lt(UOp *a, UOp *b) {
  int r = uop_tuplize_order(a, b);
  return r < 0 ? -1 : r == ORD_LESS;
}

/* index a <op> b -> b <op> a when b sorts before a (a canonical order for commutative index math) */
RULE(sort_commutative, x) {
  if (x->nsrc < 2) return index_error("src");
  int lt = tuplize_lt(x->src[1], x->src[0]);
  if (lt <= 0) return NULL;
  PtrVec rev = {0};
  for (int k = x->nsrc - 1; k >= 0; k--)
    if (ptrvec_push(&rev, x->src[k]) < 0) { ptrvec_free(&rev); return NULL; }
  UOp *ret = u_replace_src(x, (UOp **)rev.items, (int)rev.len);
  ptrvec_free(&rev);
  return ret;
}

static const RuleDef commutative_defs[] = {
  R("UPat(GroupOp.Commutative, dtype=dtypes.index, name='x')", sort_commutative),
};

/* ================================ symbolic ================================ */


static PyObject *math_gcd;

/* lt_folding: terms < c, where the terms with a constant factor share d = gcd(their factors, c) > 1
 * and the rest stay within [0, d) -> (the factored terms / d) < c // d */
static UOp *lt_folding(UOp *x, PyObject *c) {
  PtrVec terms = {0}, factored = {0};
  PyObject *factors = PyList_New(0), *lo = n_int(0), *hi = n_int(0);
  UOp *ret = NULL;
  if (!factors || uop_split_uop(x, OP_ADD, &terms) < 0) goto end;
  for (Py_ssize_t k = 0; k < terms.len; k++) {
    UOp *u = terms.items[k];
    PyObject *f = pool_keep(uop_const_factor(u));
    int one = n_eqi(f, 1);
    if (one < 0) goto end;
    if (one) lo = n_add(lo, vmin(u)), hi = n_add(hi, vmax(u));
    else if (ptrvec_push(&factored, u) < 0 || PyList_Append(factors, f) < 0) goto end;
  }
  if (!lo || !hi || !factored.len || PyList_Append(factors, c) < 0) goto end;
  PyObject *args = PyList_AsTuple(factors), *d = args ? pool_keep(PyObject_Call(math_gcd, args, NULL)) : NULL;
  Py_XDECREF(args);
  if (!N_TRUE(n_gti(d, 1)) || !N_TRUE(n_le(n_int(0), lo)) || !N_TRUE(n_lt(hi, d))) goto end;
  UOp *sum = u_sum((UOp **)factored.items, (int)factored.len);
  PyObject *q = sum && d ? pool_keep(uop_divides(sum, d)) : NULL;
  if (q == Py_None) PyErr_SetString(PyExc_AssertionError, "lt_folding: the factored terms don't divide");
  else if (q) ret = u_binop(OP_CMPLT, (UOp *)q, n_floordiv(c, d));
end:
  ptrvec_free(&terms); ptrvec_free(&factored);
  Py_XDECREF(factors);
  return ret;
}

/* canonicalize_simplex: a0*x0 + a1*x1 + ... with ai > 0 and irreducible xi >= 0 -> x0 + x1 + ...
 * (their positivity is the same); NULL when X is not such a sum or has no coefficient to drop */
static UOp *canonicalize_simplex(UOp *X) {
  PtrVec terms = {0}, kept = {0};
  bool changed = false;
  UOp *ret = NULL;
  if (uop_split_uop(X, OP_ADD, &terms) < 0) goto end;
  for (Py_ssize_t k = 0; k < terms.len; k++) {
    UOp *u = terms.items[k];
    if (u->op == OP_MUL && u->nsrc == 2 && u->src[1]->op == OP_CONST) {
      int pos = n_gti(u->src[1]->arg, 0);
      if (pos < 0) goto end;
      if (pos) changed = true, u = u->src[0];
    }
    if (!IN_GROUP(u->op, Irreducible) || !N_TRUE(n_cmpi(vmin(u), Py_GE, 0)) || ptrvec_push(&kept, u) < 0) goto end;
  }
  if (changed) ret = u_sum((UOp **)kept.items, (int)kept.len);
end:
  ptrvec_free(&terms); ptrvec_free(&kept);
  return ret;
}

/* x | !x -> True */
RULE(or_not_self, x) { return u_const_like(x, Py_True); }
/* x*c0 + x*c1 -> x*(c0+c1) */
RULE(combine_scaled, x, c0, c1) { return u_mul(x, u_add(c0, c1)); }
/* (y + x*c0) + x*c1 -> y + x*(c0+c1) */
RULE(y_combine_scaled, y, x, c0, c1) { return u_add(y, u_mul(x, u_add(c0, c1))); }
/* x + x*c -> x*(c+1) */
RULE(combine_one_scaled, x, c) { return u_mul(x, u_addi(c, 1)); }
/* (y + x) + x*c, (y + x*c) + x -> y + x*(c+1) */
RULE(y_combine_one_scaled, y, x, c) { return u_add(y, u_mul(x, u_addi(c, 1))); }
/* x + x -> x*2 */
RULE(double_x, x) { return u_muli(x, 2); }
/* (y + x) + x -> y + x*2 */
RULE(y_double_x, y, x) { return u_add(y, u_muli(x, 2)); }
/* (x / x2) / x3 -> x / (x2*x3) */
RULE(merge_divisions, x2, x3, x) { return x2 == x3 ? NULL : u_mul(x, u_recip(u_mul(x2, x3))); }
/* -(x + c) -> -x + -c */
RULE(negate_sum_const, x, c) { return u_add(u_neg(x), u_neg(c)); }
/* y*(x + c) -> y*x + y*c (index) */
RULE(distribute_const, y, x, c) { return u_add(u_mul(y, x), u_mul(y, c)); }
/* (!cond).where(t, f) -> cond.where(f, t), unless f is Invalid */
RULE(where_not_cond, f, cond, t) { return f->arg == Invalid ? NULL : u_where(cond, f, t); }
/* c.where(t, f) <op> c.where(tt, ff) -> c.where(t <op> tt, f <op> ff) when a branch pair is constant */
static bool const_pair(UOp *a, UOp *b) { return a->op == OP_CONST && b->op == OP_CONST; }
RULE(alu_of_same_gates, tt, ff, t, f, c, alu) {
  if (!const_pair(t, tt) && !const_pair(f, ff)) return NULL;
  return u_where(c, u_alu2(alu->op, t, tt), u_alu2(alu->op, f, ff));
}
/* (y + c.where(t, f)) + c.where(tt, ff) -> y + c.where(t+tt, f+ff) when a branch pair is constant */
RULE(add_of_same_gates, tt, ff, t, f, y, c) {
  if (!const_pair(t, tt) && !const_pair(f, ff)) return NULL;
  return u_add(y, u_where(c, u_add(t, tt), u_add(f, ff)));
}
/* a node whose range is a single value -> that value. A float ALU's range is its dtype's, (-inf, inf) (_min_max has no
 * rule for it): never one value, and no bounds need computing to say so. */
RULE(fold_single_value, x) {
  if (IN_GROUP(x->op, ALU) && dtype_is_float(x->dtype)) return NULL;
  PyObject *lo = vmin(x);
  int eq = n_eq(lo, vmax(x));
  return eq <= 0 ? NULL : u_const_like(x, lo);
}
/* max(x, y) -> x or y when their ranges don't overlap */
RULE(fold_max, x, y) {
  int r = n_cmp(vmin(x), vmax(y), Py_GE);
  if (r) return r < 0 ? NULL : x;
  return N_TRUE(n_cmp(vmax(x), vmin(y), Py_LE)) ? y : NULL;
}
/* (x <op> c1) <op> c2 -> x <op> (c1 <op> c2) for an associative op */
RULE(fold_two_consts, f, x, c1, c2) { return u_alu2(f->op, x, u_alu2(f->op, c1, c2)); }
/* c0 + x < c1 -> x < c1 - c0 */
RULE(lt_move_const, x, c1, c0) { return u_lt(x, u_sub(c1, c0)); }
/* (x // c1) // c2 -> x // (c1*c2) */
RULE(idiv_idiv, x, c1, c2) { return u_idiv(x, u_mul(c1, c2)); }
/* c0*x < c1 -> x < ceil(c1/c0) for positive c0, c1 */
RULE(lt_scaled_pos, c0, c1, x) {
  PyObject *c0v = c0->arg, *c1v = c1->arg;
  if (!N_TRUE(n_gti(c0v, 0)) || !N_TRUE(n_gti(c1v, 0))) return NULL;
  return u_binop(OP_CMPLT, x, n_math("ceil", n_truediv(c1v, c0v)));
}
/* c0*x < c1 -> -x < -floor(-c1/-c0) for negative c0 (not -1) and non-positive c1 */
RULE(lt_scaled_neg, c0, c1, x) {
  PyObject *c0v = c0->arg, *c1v = c1->arg;
  if (!N_TRUE(n_lti(c0v, 0)) || !N_TRUE(n_cmpi(c0v, Py_NE, -1)) || !N_TRUE(n_cmpi(c1v, Py_LE, 0))) return NULL;
  return u_binop(OP_CMPLT, u_neg(x), n_neg(n_math("floor", n_truediv(n_neg(c1v), n_neg(c0v)))));
}
/* x // d < c -> x < c*d (c > 0) or x < c*d - (d-1) (c <= 0), for positive d */
RULE(lt_of_idiv, d, c, x) {
  PyObject *dv = d->arg, *cv = c->arg;
  if (!N_TRUE(n_gti(dv, 0))) return NULL;
  int pos = n_gti(cv, 0);
  if (pos < 0) return NULL;
  PyObject *cd = n_mul(cv, dv);
  return u_binop(OP_CMPLT, x, pos ? cd : n_sub(cd, n_sub(dv, n_int(1))));
}
/* (x + c1) + y -> (x + y) + c1 */
RULE(add_const_to_end, x, y, c1) { return u_add(u_add(x, y), c1); }
/* (x * c1) * y -> (x * y) * c1 */
RULE(mul_const_to_end, x, y, c1) { return u_mul(u_mul(x, y), c1); }
/* x < c -> lt_folding(x, c) for positive c */
RULE(generic_lt_folding, c, x) { return N_TRUE(n_gti(c->arg, 0)) ? lt_folding(x, c->arg) : NULL; }
/* -x < -y -> y < x */
RULE(lt_of_negations, y, x) { return u_lt(y, x); }
/* !(x < 1) -> !(x' < 1) with x' the simplex x without its positive coefficients */
RULE(simplex_positive, x) {
  UOp *newx = canonicalize_simplex(x);
  return newx ? u_not(u_lti(newx, 1)) : NULL;
}
/* a range mod its end -> the range */
RULE(range_mod_end, r) { return r; }
/* a range // its end -> 0 */
RULE(range_div_end, r) { return u_const_likei(r, 0); }
/* x.cast(a).cast(b) -> x.cast(b) when a keeps every value of x */
RULE(cast_through_wider, x, a, b) { return dtype_can_lossless_cast(x->dtype, a->dtype) ? u_cast(x, b->dtype) : NULL; }
/* int x.cast(a).cast(b) -> x.cast(b) when x's range fits a */
RULE(cast_through_fitting, a, x, b) {
  PyObject *amin = pool_keep(dtype_min(a->dtype)), *amax = pool_keep(dtype_max(a->dtype));
  if (!N_TRUE(n_le(amin, vmin(x))) || !N_TRUE(n_le(vmax(x), amax))) return NULL;
  return u_cast(x, b->dtype);
}
/* long math whose operands and result fit int -> the same math in int */
RULE(long_to_int, u, x, y) {
  UOp *vals[3] = {u, x, y};
  for (int k = 0; k < 3; k++)
    if (uop_overflows(vals[k], DTYPE(INT32)) != 0) return NULL;
  return u_cast(u_alu2(u->op, u_cast(x, DTYPE(INT32)), u_cast(y, DTYPE(INT32))), u->dtype);
}
/* (x + c).cast(int) -> x.cast(int) + c.cast(int) for index x */
RULE(cast_of_add_const, x, cast, c) { return u_add(u_cast(x, cast->dtype), u_cast(c, cast->dtype)); }
/* AFTER keeps only the sources with side effects (RANGE/STORE/KERNEL/BARRIER/END/UNROLL), the others
 * are replaced by their own sources */
static bool has_side_effect(UOp *u) {
  return u->op == OP_RANGE || u->op == OP_STORE || u->op == OP_KERNEL || u->op == OP_BARRIER || u->op == OP_END || u->op == OP_UNROLL;
}
RULE(after_side_effects, x) {
  if (!x->nsrc) return index_error("src");
  PtrVec src = {0};
  int rc = ptrvec_push(&src, x->src[0]);
  for (int k = 1; k < x->nsrc && rc == 0; k++) {
    UOp *y = x->src[k];
    if (has_side_effect(y)) rc = ptrvec_push(&src, y);
    else for (int j = 0; j < y->nsrc && rc == 0; j++) rc = ptrvec_push(&src, y->src[j]);
  }
  UOp *ret = rc < 0 ? NULL : src.len > UOP_MAX_SRC ? (UOp *)PyErr_Format(PyExc_ValueError, "too many sources")
                                                   : u_replace_src(x, (UOp **)src.items, (int)src.len);
  ptrvec_free(&src);
  return ret;
}
/* AFTER with one source -> the source */
RULE(after_alone, s) { return s; }
/* VECTORIZE of CONSTs -> one (V)CONST */
RULE(vectorize_consts, vec) {
  if (!vec->nsrc) return NULL;
  PyObject *args = PyTuple_New(vec->nsrc);
  for (int k = 0; args && k < vec->nsrc; k++) PyTuple_SET_ITEM(args, k, Py_NewRef(vec->src[k]->arg));
  return u_const(vec->dtype, pool_keep(args));
}

#define WHERE_C_T_F "UPat.var('c').where(UPat.var('t'), UPat.var('f'))"
#define WHERE_C_TT_FF "UPat.var('c').where(UPat.var('tt'), UPat.var('ff'))"

static const RuleDef symbolic_defs[] = {
  /* boolean algebra */
  R("UPat.var('x', dtype=dtypes.bool) | UPat.var('x').logical_not()", or_not_self),
  /* combine terms */
  R("UPat.var('x') * UPat.cvar('c0') + UPat.var('x') * UPat.cvar('c1')", combine_scaled),
  R("(UPat.var('y') + UPat.var('x') * UPat.cvar('c0')) + UPat.var('x') * UPat.cvar('c1')", y_combine_scaled),
  R("UPat.var('x') + UPat.var('x') * UPat.cvar('c')", combine_one_scaled),
  R("(UPat.var('y') + UPat.var('x')) + UPat.var('x') * UPat.cvar('c')", y_combine_one_scaled),
  R("(UPat.var('y') + UPat.var('x') * UPat.cvar('c')) + UPat.var('x')", y_combine_one_scaled),
  R("UPat.var('x') + UPat.var('x')", double_x),
  R("(UPat.var('y') + UPat.var('x')) + UPat.var('x')", y_double_x),
  R("(UPat.var('x') / UPat.var('x2')) / UPat.var('x3')", merge_divisions),
  R("-1 * (UPat.var('x') + UPat.cvar('c'))", negate_sum_const),
  R("UPat.cvar('y') * (UPat.var('x', dtype=dtypes.index) + UPat.cvar('c'))", distribute_const),
  /* where folding */
  R("UPat.var('cond', dtype=dtypes.bool).logical_not().where(UPat.var('t'), UPat.var('f'))", where_not_cond),
  R("UPat(GroupOp.Binary, name='alu', src=(" WHERE_C_T_F ", " WHERE_C_TT_FF "))", alu_of_same_gates),
  R("(UPat.var('y') + " WHERE_C_T_F ") + " WHERE_C_TT_FF, add_of_same_gates),
  /* a single-valued ALU/variable -> CONST */
  R("UPat(GroupOp.ALU | {Ops.DEFINE_VAR, Ops.SPECIAL}, name='x')", fold_single_value),
  R("UPat(Ops.RANGE, src=UPat(Ops.CONST), name='x')", fold_single_value),
  /* max folding */
  R("UPat.maximum(UPat.var('x'), UPat.var('y'))", fold_max),
  /* two stage ALU folding */
  R("[UPat.var('x').alu(op, UPat.cvar('c1')).alu(op, UPat.cvar('c2')).named('f') for op in GroupOp.Associative]", fold_two_consts),
  R("(UPat.cvar('c0') + UPat.var('x')) < UPat.cvar('c1')", lt_move_const),
  R("(UPat.var('x') // UPat.cvar('c1')) // UPat.cvar('c2')", idiv_idiv),
  /* lt */
  R("(UPat.cvar('c0', vec=False) * UPat.var('x', dtype=dtypes.index)) < UPat.cvar('c1', vec=False)", lt_scaled_pos),
  R("(UPat.cvar('c0', vec=False) * UPat.var('x', dtype=dtypes.index)) < UPat.cvar('c1', vec=False)", lt_scaled_neg),
  R("(UPat.var('x', dtype=dtypes.index) // UPat.cvar('d', vec=False)) < UPat.cvar('c', vec=False)", lt_of_idiv),
  /* move add/mul consts to the end */
  R("(UPat.var('x') + UPat.cvar('c1')) + UPat.var('y')", add_const_to_end),
  R("(UPat.var('x') * UPat.cvar('c1')) * UPat.var('y')", mul_const_to_end),
  /* generic lt folding */
  R("UPat.var('x', dtypes.index) < UPat.cvar('c', vec=False)", generic_lt_folding),
  R("UPat.var('x', dtypes.index) * -1 < UPat.var('y') * -1", lt_of_negations),
  R("(UPat.var('x', dtypes.index) < 1).ne(True)", simplex_positive),
  /* ranges */
  R("UPat(Ops.RANGE, src=UPat.var('end'), name='r') % UPat.var('end')", range_mod_end),
  R("UPat(Ops.RANGE, src=UPat.var('end'), name='r') // UPat.var('end')", range_div_end),
  /* cast/long folding */
  R("UPat.var('x').cast(name='a').cast(name='b')", cast_through_wider),
  R("UPat.var('x', dtypes.ints+(dtypes.index,)).cast(dtypes.ints+(dtypes.index,), name='a').cast(name='b')", cast_through_fitting),
  R("UPat(GroupOp.Binary, src=(UPat.var('x', dtypes.long), UPat.var('y', dtypes.long)), name='u')", long_to_int),
  R("(UPat.var('x', dtypes.index) + UPat.cvar('c')).cast(dtypes.sints, name='cast')", cast_of_add_const),
  /* AFTER */
  R("UPat(Ops.AFTER, name='x')", after_side_effects),
  R("UPat(Ops.AFTER, src=(UPat.var('s'),))", after_alone),
  /* VECTORIZE/CONST */
  R("UPat(Ops.VECTORIZE, src=UPat(Ops.CONST), name='vec')", vectorize_consts),
};

/* ================================ registration ================================ */

/* a + b, stealing both: a new reference, NULL with an error (also when either is NULL) */
static PatternMatcher *pm_join(PatternMatcher *a, PatternMatcher *b) {
  PatternMatcher *ret = a && b ? pm_concat(a, b) : NULL;
  Py_XDECREF(a); Py_XDECREF(b);
  return ret;
}
/* a new reference to a registered set */
static PatternMatcher *registered(const char *name) {
  PatternMatcher *pm = native_get(name);
  if (!pm) PyErr_Format(PyExc_RuntimeError, "the native rule set %s is missing", name);
  return (PatternMatcher *)Py_XNewRef(pm);
}

int tinyc_init_symbolic(PyObject *m) {
  UNUSED(m);
  if (!math_mod && !(math_mod = PyImport_ImportModule("math"))) return -1;
  if (!struct_mod && !(struct_mod = PyImport_ImportModule("struct"))) return -1;
  if (!math_gcd && !(math_gcd = getattr_literal(math_mod, "gcd"))) return -1;
  if (native_register("propagate_invalid", pm_from_defs(propagate_invalid_defs, N(propagate_invalid_defs))) < 0) return -1;
  /* symbolic_simple = propagate_invalid + its own rules */
  if (native_register("symbolic_simple", pm_join(registered("propagate_invalid"), pm_from_defs(symbolic_simple_defs, N(symbolic_simple_defs)))) < 0)
    return -1;
  if (native_register("gep_pushing", pm_from_defs(gep_pushing_defs, N(gep_pushing_defs))) < 0) return -1;
  if (native_register("commutative", pm_from_defs(commutative_defs, N(commutative_defs))) < 0) return -1;
  /* symbolic = symbolic_simple + commutative + its own rules + div_and_mod_symbolic + gep_pushing
   * (without div_and_mod_symbolic while that set is not registered) */
  PatternMatcher *pm = pm_join(pm_join(registered("symbolic_simple"), registered("commutative")), pm_from_defs(symbolic_defs, N(symbolic_defs)));
  PatternMatcher *divmod = native_get("div_and_mod_symbolic");
  if (divmod) pm = pm_join(pm, (PatternMatcher *)Py_NewRef(divmod));
  return native_register("symbolic", pm_join(pm, registered("gep_pushing")));
}
