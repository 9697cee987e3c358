/* Phase 3 of tinygrad/uop/symbolic.py: simplifying valids (the conditions that gate an index) and
 * the rule sets built on that (pm_simplify_valid, pm_drop_and_clauses, pm_move_where_on_load), then
 * `sym`, the complete symbolic rule set. Also two things tinyc's UOp does not have yet and these
 * rules need: xpow (tinygrad/uop/decompositions.py), which sym lowers POW to, and UOp.ranges
 * (tinygrad/uop/ops.py), the RANGEs a node is inside of. */
#include "native.h"
#include "../helpers.h"
#include <stdlib.h>

static long image_level;   /* tinygrad's IMAGE, a ContextVar: its rules test IMAGE.value > 0 */
static PyObject *math_nan;   /* math.nan itself: tinygrad's const_like(math.nan) keeps that very float object */

/* ---------------------------------------------------------------------------------------------- */
/* small helpers                                                                                   */
/* ---------------------------------------------------------------------------------------------- */

/* u.name() / u.name(a) through tinyc's Python-level UOp methods (borrowed, pooled) */
/* buf.index(i): the value INDEX (tinygrad's ptr=False) */
static UOp *index_value(UOp *buf, UOp *i) { return buf ? u_new(OP_INDEX, dtype_base(buf->dtype), (UOp *[]){buf, i}, 2, NULL) : NULL; }

static bool vec_has(const PtrVec *v, const void *p) {
  for (Py_ssize_t k = 0; k < v->len; k++)
    if (v->items[k] == p) return true;
  return false;
}

/* x in u.toposort() (also u.backward_slice_with_self): u itself or a node below it. 1, 0, or -1 */
static int in_toposort(UOp *x, UOp *u) {
  if (x == u) return 1;
  PyObject *slice = getattr_literal((PyObject *)u, "backward_slice");
  int rc = slice ? PyDict_Contains(slice, (PyObject *)x) : -1;
  Py_XDECREF(slice);
  return rc;
}

/* u.op_in_backward_slice_with_self(*ops): 1, 0, or -1 */
static int op_in_slice_with_self(UOp *u, OpSet ops) {
  if (opset_has(ops, u->op)) return 1;
  PyObject *slice = getattr_literal((PyObject *)u, "backward_slice"), *k, *v;
  if (!slice) return -1;
  Py_ssize_t pos = 0;
  int found = 0;
  while (!found && PyDict_Next(slice, &pos, &k, &v)) found = opset_has(ops, ((UOp *)k)->op);
  Py_DECREF(slice);
  return found;
}

static OpSet opset_of(const Op *ops, int n) {
  OpSet s = {{0, 0}};
  for (int k = 0; k < n; k++) opset_add(&s, ops[k]);
  return s;
}

/* UOp.prod(*xs) (xs[0] is self): a chain of & when xs[0] is a bool, of * otherwise */
static UOp *uop_prod(UOp *const *xs, Py_ssize_t n) {
  UOp *acc = xs[0];
  bool is_bool = acc->dtype == DTYPE(BOOL);
  for (Py_ssize_t k = 1; k < n && acc; k++) acc = is_bool ? u_and(acc, xs[k]) : u_mul(acc, xs[k]);
  return acc;
}

/* UOp.const(dtypes.bool, True).prod(*xs) */
static UOp *all_true_and(UOp *const *xs, Py_ssize_t n) {
  UOp *acc = u_const(DTYPE(BOOL), Py_True);
  for (Py_ssize_t k = 0; k < n && acc; k++) acc = u_and(acc, xs[k]);
  return acc;
}

/* helpers.prod(xs): functools.reduce(mul, xs, 1), so the first factor is 1*xs[0] (CONST first) */
static UOp *int_prod(UOp *const *xs, Py_ssize_t n) {
  UOp *acc = u_rbinop(OP_MUL, n_int(1), xs[0]);
  for (Py_ssize_t k = 1; k < n && acc; k++) acc = u_mul(acc, xs[k]);
  return acc;
}

/* x.substitute({frm: to}) */
static UOp *substitute1(UOp *x, UOp *frm, UOp *to) {
  PyObject *d = x && frm && to ? pool_keep(PyDict_New()) : NULL;
  if (!d || PyDict_SetItem(d, (PyObject *)frm, (PyObject *)to) < 0) return NULL;
  return u_substitute(x, d);
}

/* UOp.variable(f"fake{i}", lo, hi, dtype) */
static UOp *fake_variable(int i, PyObject *lo, PyObject *hi, DType *dtype) {
  if (!lo || !hi) return NULL;
  PyObject *name = PyUnicode_FromFormat("fake%d", i), *arg = name ? pool_keep(PyTuple_Pack(3, name, lo, hi)) : NULL;
  Py_XDECREF(name);
  return arg ? u_new(OP_DEFINE_VAR, dtype, NULL, 0, arg) : NULL;
}

/* all(r in outer for r in inner) when want_all, any(...) otherwise; 1, 0, -1 */
static int ranges_within(PyObject *inner, PyObject *outer, bool want_all) {
  PyObject *key, *val;
  Py_ssize_t pos = 0;
  while (PyDict_Next(inner, &pos, &key, &val)) {
    int has = PyDict_Contains(outer, key);
    if (has < 0) return -1;
    if (want_all && !has) return 0;
    if (!want_all && has) return 1;
  }
  return want_all ? 1 : 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* simplify_valid                                                                                  */
/* ---------------------------------------------------------------------------------------------- */

typedef struct { UOp *expr; bool is_upper; PyObject *c; } ParsedValid;

/* parse_valid: (X<c).ne(True) is X >= vmin(c); X<c is X <= vmax(c)-1, for int X. 1 parsed, 0 not, -1 error */
static int parse_valid(UOp *v, ParsedValid *out) {
  if (v->op == OP_CMPNE && v->nsrc == 2 && v->src[1]->op == OP_CONST) {
    int is_one = n_eqi(v->src[1]->arg, 1);
    if (is_one < 0) return -1;
    UOp *s0 = v->src[0];
    if (is_one && s0->op == OP_CMPLT && s0->nsrc == 2 && dtype_is_int(s0->src[0]->dtype)) {
      *out = (ParsedValid){s0->src[0], false, pool_keep(PyNumber_Long(vmin(s0->src[1])))};
      return out->c ? 1 : -1;
    }
  }
  if (v->op == OP_CMPLT && v->nsrc == 2 && dtype_is_int(v->src[0]->dtype)) {
    *out = (ParsedValid){v->src[0], true, n_sub(pool_keep(PyNumber_Long(vmax(v->src[1]))), n_int(1))};
    return out->c ? 1 : -1;
  }
  return 0;
}

int uop_parse_valid(UOp *v, UOp **X, bool *is_upper, PyObject **c) {
  ParsedValid pv;
  int rc = parse_valid(v, &pv);
  if (rc == 1) *X = pv.expr, *is_upper = pv.is_upper, *c = pv.c;
  return rc;
}

/* bounds[expr] = [lower, upper] (NULL for None), in first-seen order of expr */
typedef struct { UOp *expr; PyObject *bound[2]; } ExprBounds;

/* the candidate: each X[k] replaced by newX[k] alone; when every branch simplifies (and maps back)
 * to the same node, uop becomes that node; for a 2-wide VECTORIZE, lane by lane. Returns the new uop. */
static UOp *try_candidate(UOp *uop, UOp *const *X, UOp *const *newX, Py_ssize_t n) {
  if (n == 0) return uop;   /* nothing to substitute */
  PtrVec outs = {0};
  UOp *ret = uop;
  bool skip = false;
  for (Py_ssize_t k = 0; k < n && ret; k++) {
    UOp *s = substitute1(uop, X[k], newX[k]);
    if (!s || ptrvec_push(&outs, s) < 0) ret = NULL;
    else skip |= s == uop;
  }
  for (Py_ssize_t k = 0; ret && !skip && k < n; k++)
    if (!(outs.items[k] = u_simplify(substitute1(u_simplify(outs.items[k]), newX[k], X[k])))) ret = NULL;
  if (!ret || skip) goto end;
  bool all_same = true, same0 = true, same1 = true;
  for (Py_ssize_t k = 1; k < n; k++) all_same &= outs.items[k] == outs.items[0];
  if (all_same) { ret = outs.items[0]; goto end; }
  if (uop->op != OP_VECTORIZE || uop->nsrc != 2) goto end;
  for (Py_ssize_t k = 0; k < n; k++) {
    UOp *o = outs.items[k], *o0 = outs.items[0];
    if (o->nsrc < 2 || o0->nsrc < 2) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); ret = NULL; goto end; }
    same0 &= o->src[0] == o0->src[0];
    same1 &= o->src[1] == o0->src[1];
  }
  UOp *o0 = outs.items[0];
  if (same0) ret = u_replace_src(ret, (UOp *[]){o0->src[0], ret->src[1]}, 2);
  if (same1 && ret) ret = u_replace_src(ret, (UOp *[]){ret->src[0], o0->src[1]}, 2);
end:
  ptrvec_free(&outs);
  return ret;
}

/* the simplex X0 + X1 + ... >= 1 over irreducible Xi: each Xi >= 1 as its own branch */
static UOp *try_simplex(UOp *uop, UOp *expr, int i) {
  PtrVec leaves = {0}, fakes = {0};
  UOp *ret = uop;
  if (uop_split_uop(expr, OP_ADD, &leaves) < 0) ret = NULL;
  for (Py_ssize_t k = 0; ret && k < leaves.len; k++)
    if (!IN_GROUP(((UOp *)leaves.items[k])->op, Irreducible)) goto end;
  for (Py_ssize_t k = 0; ret && k < leaves.len; k++) {
    UOp *Xi = leaves.items[k], *fake = fake_variable(i, n_int(1), vmax(Xi), Xi->dtype);
    if (!fake || ptrvec_push(&fakes, fake) < 0) ret = NULL;
  }
  if (ret) ret = try_candidate(uop, (UOp *const *)leaves.items, (UOp *const *)fakes.items, leaves.len);
end:
  ptrvec_free(&leaves); ptrvec_free(&fakes);
  return ret;
}

/* collect the bounds the clauses of valid put on expressions; n_out entries */
static ExprBounds *parse_bounds(UOp *valid, Py_ssize_t *n_out) {
  PtrVec stmts = {0};
  ExprBounds *b = NULL;
  Py_ssize_t n = 0;
  if (uop_split_uop(valid, OP_AND, &stmts) < 0 || !(b = PyMem_Calloc((size_t)stmts.len + 1, sizeof(ExprBounds)))) goto fail;
  for (Py_ssize_t k = 0; k < stmts.len; k++) {
    ParsedValid pv;
    int rc = parse_valid(stmts.items[k], &pv);
    if (rc < 0) goto fail;
    if (rc == 0) continue;
    Py_ssize_t at = 0;
    while (at < n && b[at].expr != pv.expr) at++;
    if (at == n) b[n++].expr = pv.expr;
    b[at].bound[pv.is_upper] = pv.c;
  }
  ptrvec_free(&stmts);
  *n_out = n;
  return b;
fail:
  if (!PyErr_Occurred()) PyErr_NoMemory();
  ptrvec_free(&stmts);
  PyMem_Free(b);
  return NULL;
}

/* uop_given_valid: uop simplified under the assumption that valid holds (maybe uop itself).
 * Each bounded expression becomes a fake variable with those bounds, the result is simplified and
 * the variables put back; first one expression at a time (with try_simplex), then all together. */
UOp *uop_given_valid(UOp *valid, UOp *uop, bool simplex) {
  Py_ssize_t n;
  ExprBounds *b = valid && uop ? parse_bounds(valid, &n) : NULL;
  if (!b) return NULL;
  PyObject *sub = pool_keep(PyDict_New()), *back = pool_keep(PyDict_New());
  for (Py_ssize_t i = 0; uop && sub && back && i < n; i++) {
    UOp *expr = b[i].expr;
    PyObject *v0 = b[i].bound[0] ? b[i].bound[0] : vmin(expr), *v1 = b[i].bound[1] ? b[i].bound[1] : vmax(expr);
    UOp *fake = fake_variable((int)i, v0, v1, expr->dtype);
    if (!fake || PyDict_SetItem(sub, (PyObject *)expr, (PyObject *)fake) < 0 || PyDict_SetItem(back, (PyObject *)fake, (PyObject *)expr) < 0) {
      uop = NULL;
      break;
    }
    if (!simplex) continue;
    uop = try_candidate(uop, &expr, &fake, 1);
    int simplex_start = expr->op == OP_ADD ? n_eqi(v0, 1) : 0;
    if (simplex_start < 0) uop = NULL;
    else if (simplex_start && uop) uop = try_simplex(uop, expr, (int)i);
  }
  PyMem_Free(b);
  if (!uop || !sub || !back) return NULL;
  if (!PyDict_GET_SIZE(sub)) return uop;
  UOp *s_uop = u_substitute(uop, sub);
  if (!s_uop || s_uop == uop) return s_uop;
  return u_simplify(u_substitute(u_simplify(s_uop), back));
}

/* _valid_priority: -1 for every clause whose parsed expression appears in that clause's graph, so
 * clauses that others are built from come first */
static int valid_priority(UOp *v, const PtrVec *valids, long *out) {
  ParsedValid pv;
  int rc = parse_valid(v, &pv);
  *out = 0;
  for (Py_ssize_t k = 0; rc > 0 && k < valids->len; k++) {
    int in = in_toposort(pv.expr, valids->items[k]);
    if (in < 0) return -1;
    *out -= in;
  }
  return rc < 0 ? -1 : 0;
}

/* the clauses of valid, stably sorted by _valid_priority */
static int sorted_clauses(UOp *valid, PtrVec *out) {
  if (uop_split_uop(valid, OP_AND, out) < 0) return -1;
  long *prio = PyMem_Calloc((size_t)out->len, sizeof(long));
  if (!prio) { PyErr_NoMemory(); return -1; }
  for (Py_ssize_t k = 0; k < out->len; k++)
    if (valid_priority(out->items[k], out, &prio[k]) < 0) { PyMem_Free(prio); return -1; }
  for (Py_ssize_t k = 1; k < out->len; k++) {   /* insertion sort: stable, as sorted() */
    void *item = out->items[k];
    long p = prio[k];
    Py_ssize_t j = k;
    for (; j > 0 && prio[j - 1] > p; j--) out->items[j] = out->items[j - 1], prio[j] = prio[j - 1];
    out->items[j] = item, prio[j] = p;
  }
  PyMem_Free(prio);
  return 0;
}

/* simplify_valid: each clause (in priority order, deduplicated) simplified given the ones before it */
RULE(simplify_valid, valid) {
  UOp *ret_uop = NULL;
  if (op_in_slice_with_self(valid, opset_of((Op[]){OP_INDEX}, 1)) != 0) return NULL;
  PtrVec valids = {0}, seen = {0}, ret = {0};
  if (sorted_clauses(valid, &valids) < 0) goto end;
  for (Py_ssize_t k = 0; k < valids.len; k++) {
    UOp *stmt = valids.items[k];
    if (vec_has(&seen, stmt)) continue;
    if (ptrvec_push(&seen, stmt) < 0) goto end;
    if (ret.len && !(stmt = uop_given_valid(uop_prod((UOp *const *)ret.items, ret.len), stmt, true))) goto end;
    if (ptrvec_push(&ret, stmt) < 0) goto end;
  }
  bool changed = ret.len != valids.len;   /* ret != valids */
  for (Py_ssize_t k = 0; !changed && k < ret.len; k++) changed = ret.items[k] != valids.items[k];
  if (changed) ret_uop = uop_prod((UOp *const *)ret.items, ret.len);
end:
  ptrvec_free(&valids); ptrvec_free(&seen); ptrvec_free(&ret);
  return ret_uop;
}

/* gated_given_valid: the gated index simplified given its own gate (not for image index math) */
RULE(gated_given_valid, i, x, cond) {
  if (image_level > 0) {
    int has_div = op_in_slice_with_self(x, opset_of((Op[]){OP_IDIV, OP_MOD}, 2));
    if (has_div != 0) return NULL;
  }
  return u_where(cond, uop_given_valid(cond, x, false), i);
}

/* ---------------------------------------------------------------------------------------------- */
/* reduce_mul_chain, drop_and_clauses, where_on_load                                               */
/* ---------------------------------------------------------------------------------------------- */

static int arg_is_op(PyObject *arg, Op op) { return PyObject_RichCompareBool(arg, ops_members[op], Py_EQ); }

/* reduce_mul_chain: factors of the reduced product that do not depend on the reduce's ranges (and,
 * for MAX, are never negative) move out of the REDUCE */
RULE(reduce_mul_chain, r) {
  UOp *ret = NULL;
  int is_add = arg_is_op(r->arg, OP_ADD), is_max = is_add ? 0 : arg_is_op(r->arg, OP_MAX);
  if (is_add < 0 || is_max < 0 || !(is_add || is_max)) return NULL;
  int dtype_differs = PyObject_RichCompareBool((PyObject *)r->dtype, (PyObject *)r->src[0]->dtype, Py_NE);
  if (dtype_differs != 0) return NULL;
  PtrVec factors = {0}, inside = {0}, outside = {0};
  if (uop_split_uop(r->src[0], OP_MUL, &factors) < 0) goto end;
  for (Py_ssize_t k = 0; k < factors.len; k++) {
    UOp *f = factors.items[k];
    bool independent = true;
    for (int s = 1; s < r->nsrc && independent; s++) {
      int in = in_toposort(r->src[s], f);
      if (in < 0) goto end;
      independent = !in;
    }
    if (independent && is_max) {
      int nonneg = n_le(n_int(0), vmin(f));
      if (nonneg < 0) goto end;
      independent = nonneg;
    }
    if (ptrvec_push(independent ? &outside : &inside, f) < 0) goto end;
  }
  if (!outside.len) goto end;
  UOp **src = PyMem_Malloc(sizeof(UOp *) * r->nsrc);
  if (!src) { PyErr_NoMemory(); goto end; }
  src[0] = inside.len ? int_prod((UOp *const *)inside.items, inside.len) : u_const_likei(r->src[0], 1);
  for (int s = 1; s < r->nsrc; s++) src[s] = r->src[s];
  ret = u_mul(u_replace_src(r, src, r->nsrc), int_prod((UOp *const *)outside.items, outside.len));
  PyMem_Free(src);
end:
  ptrvec_free(&factors); ptrvec_free(&inside); ptrvec_free(&outside);
  return ret;
}

/* drop_and_clauses: clauses of an index gate that share no range with the index are dropped */
RULE(drop_and_clauses, i, cond, x) {
  PtrVec clauses = {0}, keep = {0};
  PtrMap memo = {0};
  UOp *ret = NULL;
  PyObject *x_ranges = NULL;
  if (uop_split_uop(cond, OP_AND, &clauses) < 0 || !(x_ranges = uop_ranges(x, &memo))) goto end;
  for (Py_ssize_t k = 0; k < clauses.len; k++) {
    PyObject *c_ranges = uop_ranges(clauses.items[k], &memo);
    int shares = c_ranges ? ranges_within(c_ranges, x_ranges, false) : -1;
    if (shares < 0 || (shares && ptrvec_push(&keep, clauses.items[k]) < 0)) goto end;
  }
  if (keep.len < clauses.len) ret = u_where(all_true_and((UOp *const *)keep.items, keep.len), x, i);
end:
  uop_ranges_memo_free(&memo);
  ptrvec_free(&clauses); ptrvec_free(&keep);
  return ret;
}

/* every INDEX in c's graph (with c) is in x's graph (with x): 1, 0, -1 */
static int indexes_within(UOp *c, UOp *x) {
  if (c->op == OP_INDEX) {
    int in = in_toposort(c, x);
    if (in <= 0) return in;
  }
  PyObject *slice = getattr_literal((PyObject *)c, "backward_slice"), *k, *v;
  if (!slice) return -1;
  Py_ssize_t pos = 0;
  int ok = 1;
  while (ok > 0 && PyDict_Next(slice, &pos, &k, &v))
    if (((UOp *)k)->op == OP_INDEX) ok = in_toposort((UOp *)k, x);
  Py_DECREF(slice);
  return ok;
}

/* a clause of the where can move into the load's index gate when its ranges are all the index's
 * and every INDEX it reads is already under the index (no data dependent loads): 1, 0, -1 */
static int clause_can_move(UOp *c, UOp *x, PyObject *x_ranges, PtrMap *memo) {
  PyObject *c_ranges = uop_ranges(c, memo);
  int within = c_ranges ? ranges_within(c_ranges, x_ranges, true) : -1;
  return within <= 0 ? within : indexes_within(c, x);
}

/* where_on_load: c1.where(buf[x], 0) moves the clauses of c1 it can (and drops the ones the index
 * gate has already) into the gate of x */
static UOp *where_on_load(UOp *c1, UOp *buf, UOp *x) {
  UOp *c2 = u_get_valid(x), *ret = NULL;
  if (!c1 || !c2) return NULL;
  PtrVec c1s = {0}, c2s = {0}, dup = {0}, moved = {0}, remaining = {0};
  PtrMap memo = {0};
  PyObject *x_ranges = NULL;
  if (uop_split_uop(c1, OP_AND, &c1s) < 0 || uop_split_uop(c2, OP_AND, &c2s) < 0 || !(x_ranges = uop_ranges(x, &memo))) goto end;
  for (Py_ssize_t k = 0; k < c1s.len; k++)
    if (vec_has(&c2s, c1s.items[k]) && ptrvec_push(&dup, c1s.items[k]) < 0) goto end;
  for (Py_ssize_t k = 0; k < c1s.len; k++) {
    if (vec_has(&dup, c1s.items[k])) continue;
    int can = clause_can_move(c1s.items[k], x, x_ranges, &memo);
    if (can < 0 || (can && ptrvec_push(&moved, c1s.items[k]) < 0)) goto end;
  }
  if (!moved.len && !dup.len) goto end;
  for (Py_ssize_t k = 0; k < c1s.len; k++)
    if (!vec_has(&moved, c1s.items[k]) && !vec_has(&dup, c1s.items[k]) && ptrvec_push(&remaining, c1s.items[k]) < 0) goto end;
  UOp *gate = c2;
  for (Py_ssize_t k = 0; k < moved.len && gate; k++) gate = u_and(gate, moved.items[k]);
  UOp *load = index_value(buf, u_valid(u_get_idx(x), gate));
  ret = u_where(all_true_and((UOp *const *)remaining.items, remaining.len), load, u_const_likei(load, 0));
end:
  uop_ranges_memo_free(&memo);
  ptrvec_free(&c1s); ptrvec_free(&c2s); ptrvec_free(&dup); ptrvec_free(&moved); ptrvec_free(&remaining);
  return ret;
}

/* c1.where(buf[x], 0) */
RULE(where_then_load, c1, buf, x) { return where_on_load(c1, buf, x); }
/* c1.where(0, buf[x]) is (not c1).where(buf[x], 0) */
RULE(where_else_load, c1, buf, x) { return where_on_load(u_not(c1), buf, x); }

/* ---------------------------------------------------------------------------------------------- */
/* xpow (tinygrad/uop/decompositions.py)                                                          */
/* ---------------------------------------------------------------------------------------------- */

/* base ** exponent as exp2(exponent * log2(|base|)), with the sign of a negative base (nan for a
 * non-integer exponent, -1 for an odd one) and 0 ** 0 = 1 */
static UOp *xpow(UOp *base, UOp *exponent) {
  UOp *base_neg = u_lti(base, 0);
  UOp *ret = u_unary(OP_EXP2, u_mul(u_unary(OP_LOG2, u_where(base_neg, u_neg(base), base)), exponent));
  UOp *non_int = u_ne(exponent, u_cast(u_cast(exponent, DTYPE(INT32)), exponent ? exponent->dtype : NULL));
  UOp *abs_exp = u_where(u_lti(exponent, 0), u_neg(exponent), exponent);
  UOp *odd = u_cast(u_modi(u_cast(abs_exp, DTYPE(INT32)), 2), DTYPE(BOOL));
  UOp *adj = u_where(non_int, u_const_like(ret, math_nan), u_where(odd, u_const_likei(ret, -1), u_const_likei(ret, 1)));
  UOp *zero_zero = u_and(u_not(u_binop(OP_CMPNE, base, n_int(0))), u_not(u_binop(OP_CMPNE, exponent, n_int(0))));   /* x.eq(0) */
  return u_where(zero_zero, u_const_likei(ret, 1), u_mul(ret, u_where(base_neg, adj, u_const_likei(ret, 1))));
}

/* ---------------------------------------------------------------------------------------------- */
/* the rules of sym                                                                                */
/* ---------------------------------------------------------------------------------------------- */

/* an ALU of two broadcasts is one scalar ALU, broadcast */
RULE_MAYBE(alu_of_broadcasts, (alu), x, y) {
  UOp *scalar = u_new(alu->op, dtype_scalar(alu->dtype), (UOp *[]){x, y}, 2, NULL);
  int n = alu->dtype->count;
  UOp **lanes = scalar ? PyMem_Malloc(sizeof(UOp *) * (size_t)(n ? n : 1)) : NULL;
  if (!lanes) return scalar ? (UOp *)PyErr_NoMemory() : NULL;
  for (int k = 0; k < n; k++) lanes[k] = scalar;
  UOp *ret = u_new(OP_VECTORIZE, alu->dtype, lanes, n, NULL);
  PyMem_Free(lanes);
  return ret;
}

/* x != 0 is x cast to bool */
RULE(ne_zero_is_bool, x) {
  return u_cast(x, dtype_vec(DTYPE(BOOL), x->dtype->count));
}

/* a cast of a where casts both branches */
RULE(cast_into_where, s, a, cast, b) {
  return u_where(s, u_cast(a, cast->dtype), u_cast(b, cast->dtype));
}

/* POW is lowered to exp2/log2 */
RULE(pow_to_xpow, p) {
  if (p->nsrc != 2) return (UOp *)PyErr_Format(PyExc_TypeError, "xpow() takes 2 arguments (%d given)", (int)p->nsrc);
  return xpow(p->src[0], p->src[1]);
}

static UOp *noop(void) { return u_new(OP_NOOP, DTYPE(VOID), NULL, 0, NULL); }

/* storing what was just loaded from the same place does nothing */
RULE(store_of_own_load) { return noop(); }

/* store(idx, gate.where(alt, load(idx))) stores alt only where gate holds */
RULE(store_gated_alt, index, store, alt, gate) {
  if (index->nsrc < 2) return (UOp *)PyErr_Format(PyExc_IndexError, "tuple index out of range");
  UOp *invalid = KEEP(uop_const(DTYPE(INDEX), Invalid));
  UOp *gated = index_value(index->src[0], u_where(gate, index->src[1], invalid));
  PyObject *args = gated ? pool_keep(PyTuple_New(store->nsrc - 1)) : NULL;
  if (!args) return NULL;
  PyTuple_SET_ITEM(args, 0, Py_NewRef((PyObject *)alt));
  for (int k = 2; k < store->nsrc; k++) PyTuple_SET_ITEM(args, k - 1, Py_NewRef((PyObject *)store->src[k]));
  PyObject *fn = pool_keep(getattr_literal((PyObject *)gated, "store"));
  return fn ? KEEP(PyObject_Call(fn, args, NULL)) : NULL;
}

/* a LOAD or STORE at an Invalid index: a store does nothing, a load reads 0 */
RULE(invalid_access, x) {
  return x->op == OP_STORE ? noop() : u_const_likei(x, 0);
}

/* 1/(x*x) -> (1/x)*(1/x) */
RULE(recip_square, x) { return u_mul(u_recip(x), u_recip(x)); }
/* 1/(x*x*x) -> (1/x)*(1/x)*(1/x) */
RULE(recip_cube, x) {
  return u_mul(u_mul(u_recip(x), u_recip(x)), u_recip(x));
}
/* 1/(x*c) -> (1/x)*(1/c) */
RULE(recip_times_const, x, c) { return u_mul(u_recip(x), u_recip(c)); }

/* 1-d as Python computes it on UOps */
static UOp *one_minus(UOp *d) { return d ? KEEP(PyNumber_Subtract(n_int(1), (PyObject *)d)) : NULL; }
/* x*(1/(1+x)) -> 1-1/(1+x) */
RULE(x_over_one_plus_x, d) { return one_minus(d); }
/* x*((1/(1+x))*y) -> y*(1-1/(1+x)) */
RULE(x_over_one_plus_x_times, y, d) { return u_mul(y, one_minus(d)); }
/* x*(1/(1+x)+y) -> (1-1/(1+x))+x*y */
RULE(x_over_one_plus_x_plus, d, x, y) { return u_add(one_minus(d), u_mul(x, y)); }

/* a REDUCE ADD of x*c is the REDUCE of x, times c */
RULE(const_out_of_reduce, r, x, c) {
  UOp **src = PyMem_Malloc(sizeof(UOp *) * r->nsrc);
  if (!src) return (UOp *)PyErr_NoMemory();
  src[0] = x;
  for (int k = 1; k < r->nsrc; k++) src[k] = r->src[k];
  UOp *ret = u_binop(OP_MUL, u_replace_src(r, src, r->nsrc), c->arg);
  PyMem_Free(src);
  return ret;
}

/* a GROUP of one is that one */
RULE(group_of_one, x) { return x; }

static bool sink_like(Op op) { return op == OP_UNROLL || op == OP_NOOP || op == OP_VECTORIZE || op == OP_SINK; }

/* a SINK/GROUP takes the sources of its UNROLL/NOOP/VECTORIZE/SINK sources in their place */
RULE(flatten_sink, root) {
  bool any = false;
  for (int k = 0; k < root->nsrc; k++) any |= sink_like(root->src[k]->op);
  if (!any) return NULL;
  PtrVec src = {0};
  for (int k = 0; k < root->nsrc; k++) {
    UOp *s = root->src[k];
    if (!sink_like(s->op)) { if (ptrvec_push(&src, s) < 0) goto fail; continue; }
    for (int j = 0; j < s->nsrc; j++)
      if (ptrvec_push(&src, s->src[j]) < 0) goto fail;
  }
  UOp *ret = src.len > INT_MAX ? NULL : u_new(root->op, root->dtype, (UOp *const *)src.items, (int)src.len, root->arg);
  ptrvec_free(&src);
  return ret;
fail:
  ptrvec_free(&src);
  return NULL;
}

/* an END of an empty NOOP is the NOOP */
RULE(end_of_noop, noop) { return noop; }
/* -(x+y) -> -x + -y */
RULE(negate_sum, x, y) { return u_add(u_neg(x), u_neg(y)); }
/* (x+y)*c -> x*c+y*c, for index x */
RULE(distribute_const, x, c, y) { return u_add(u_mul(x, c), u_mul(y, c)); }

/* ---------------------------------------------------------------------------------------------- */
/* rule sets                                                                                       */
/* ---------------------------------------------------------------------------------------------- */

#define INVALID_GATE "UPat.var('cond').where(UPat.var('x'), UPat(Ops.CONST, arg=Invalid, name='i'))"

static const RuleDef pm_drop_and_clauses_defs[] = {
  R(INVALID_GATE, drop_and_clauses),
};

static const RuleDef pm_move_where_on_load_defs[] = {
  R("UPat.var('c1').where(UPat.var('buf').index(UPat.var('x')), 0)", where_then_load),
  R("UPat.var('c1').where(0, UPat.var('buf').index(UPat.var('x')))", where_else_load),
};

static const RuleDef pm_simplify_valid_defs[] = {
  R("UPat(Ops.AND, name='valid')", simplify_valid),
  R(INVALID_GATE, gated_given_valid),
};

#define ONE_PLUS_X_RECIP "(1 + UPat.var('x')).reciprocal().named('d')"
static const RuleDef sym_defs[] = {
  R("UPat(GroupOp.ALU, src=(UPat(Ops.VECTORIZE, src=UPat(name='x')), UPat(Ops.VECTORIZE, src=UPat(name='y'))), name='alu')", alu_of_broadcasts),
  R("UPat.var('x') != 0", ne_zero_is_bool),
  R("UPat.var('s').where(UPat.var('a'), UPat.var('b')).cast().named('cast')", cast_into_where),
  R("UPat(Ops.POW, name='p')", pow_to_xpow),
  R("UPat.store(UPat(Ops.INDEX, name='index'), UPat.load(UPat(Ops.INDEX, name='index')))", store_of_own_load),
  R("UPat.store(UPat(Ops.INDEX, name='index'), UPat.var('gate').where(UPat.var('alt'), UPat.load(UPat(Ops.INDEX, name='index'))),"
   " allow_any_len=True, name='store')", store_gated_alt),
  R("UPat((Ops.LOAD, Ops.STORE), src=(UPat().index(UPat.const(dtypes.index, Invalid)).or_casted(),), allow_any_len=True, name='x')", invalid_access),
  R("(UPat.var('x') * UPat.var('x')).reciprocal()", recip_square),
  R("(UPat.var('x') * UPat.var('x') * UPat.var('x')).reciprocal()", recip_cube),
  R("(UPat.var('x') * UPat.cvar('c')).reciprocal()", recip_times_const),
  R("UPat.var('x') * " ONE_PLUS_X_RECIP, x_over_one_plus_x),
  R("UPat.var('x') * (" ONE_PLUS_X_RECIP " * UPat.var('y'))", x_over_one_plus_x_times),
  R("UPat.var('x') * (" ONE_PLUS_X_RECIP " + UPat.var('y'))", x_over_one_plus_x_plus),
  R("(UPat.var('x') * UPat.cvar('c', vec=False)).reduce(arg=Ops.ADD, name='r', allow_any_len=True)", const_out_of_reduce),
  R("UPat(Ops.MUL).reduce(name='r', allow_any_len=True)", reduce_mul_chain),
  R("UPat(Ops.GROUP, src=(UPat.var('x'),))", group_of_one),
  R("UPat((Ops.SINK, Ops.GROUP), name='root')", flatten_sink),
  R("UPat(Ops.END, src=(UPat(Ops.NOOP, src=(), name='noop'),), allow_any_len=True)", end_of_noop),
  R("-1 * (UPat.var('x') + UPat.var('y'))", negate_sum),
  R("(UPat.var('x', dtypes.index) + UPat.var('y')) * UPat.cvar('c')", distribute_const),
};

/* symbolic.simplify_valid(valid) for Python: the rule's body, with its pool emptied after; the new valid, or None */
static PyObject *py_simplify_valid(PyObject *mod, PyObject *valid) {
  UNUSED(mod);
  if (!UOp_Check(valid)) return PyErr_Format(PyExc_AttributeError, "simplify_valid needs a UOp, not %.100s", Py_TYPE(valid)->tp_name);
  Py_ssize_t mark = pool_mark();
  UOp *ret = simplify_valid_body(NULL, (UOp *)valid);
  PyObject *out = ret ? Py_NewRef((PyObject *)ret) : PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
  pool_release(mark);
  return out;
}

static PyMethodDef sym_functions[] = {
  {"simplify_valid", py_simplify_valid, METH_O, "simplify_valid(valid): each clause simplified given the ones before it, or None"},
  {NULL, NULL, 0, NULL},
};

/* IMAGE as tinygrad's ContextVar reads it: int(os.getenv("IMAGE", 0)), on when positive */
static int read_image_env(void) {
  return ctxvar_int("IMAGE", &image_level);
}

static PatternMatcher *registered(const char *name, PatternMatcher *pm) {
  return native_register(name, pm) < 0 ? NULL : native_get(name);
}

int tinyc_init_symbolic_sym(PyObject *m) {
  PyObject *math = PyImport_ImportModule("math");
  math_nan = math ? getattr_literal(math, "nan") : NULL;
  Py_XDECREF(math);
  if (!math_nan || read_image_env() < 0 || PyModule_AddFunctions(m, sym_functions) < 0) return -1;
  PatternMatcher *simplify_valid_pm = registered("pm_simplify_valid", pm_from_defs(pm_simplify_valid_defs, N(pm_simplify_valid_defs)));
  if (!simplify_valid_pm) return -1;
  if (!registered("pm_drop_and_clauses", pm_from_defs(pm_drop_and_clauses_defs, N(pm_drop_and_clauses_defs))) ||
      !registered("pm_move_where_on_load", pm_from_defs(pm_move_where_on_load_defs, N(pm_move_where_on_load_defs))))
    return -1;
  /* sym = symbolic + pm_simplify_valid + its own rules; without symbolic (not built yet) the rest */
  PatternMatcher *symbolic = native_get("symbolic"), *own = pm_from_defs(sym_defs, N(sym_defs));
  PatternMatcher *head = symbolic ? pm_concat(symbolic, simplify_valid_pm) : (PatternMatcher *)Py_NewRef(simplify_valid_pm);
  PatternMatcher *sym = head && own ? pm_concat(head, own) : NULL;
  Py_XDECREF(head); Py_XDECREF(own);
  return native_register("sym", sym);
}
