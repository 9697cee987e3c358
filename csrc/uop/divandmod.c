/* tinygrad/uop/divandmod.py: folding integer division and modulo of index expressions, the
 * `div_and_mod_symbolic` rule set. A few cheap rules come first; the general folder
 * (fold_divmod_general) tries its sub-rules in tinygrad's order; two sign rules for MOD close the list.
 *
 * The folder's arithmetic is written with Python's operators (n_add, n_mul, ... on numbers or UOps):
 * tinyc's UOp operators build the very graph tinygrad's expressions build (int + UOp is the reversed
 * add, UOp - int adds the negated int, ...), so the shape of every result matches tinygrad's.
 * tinygrad memoizes fold_divmod_general; its None answers are memoized on the node (UOpExtra.no_fold). */
#include "native.h"

static bool correct_divmod_folding;   /* CORRECT_DIVMOD_FOLDING: a ContextVar, a Context changes it */

#define AS_PY(u) ((PyObject *)(u))
/* a truth value from a comparison helper; on error leave the enclosing function with NULL */
#define TEST(var, expr) int var = (expr); if (var < 0) return NULL
/* try a sub-rule: its result, or its error, ends the enclosing function */
#define TRY_RULE(call) do { UOp *r_ = (call); if (r_ || PyErr_Occurred()) return r_; } while (0)

/* ---- small helpers ---- */

static PyObject *n_abs(PyObject *a) { return a ? pool_keep(PyNumber_Absolute(a)) : NULL; }
static PyObject *new_list(void) { return pool_keep(PyList_New(0)); }
static int append(PyObject *list, PyObject *o) { return list && o ? PyList_Append(list, o) : -1; }
#define ITEM(list, i) PyList_GET_ITEM(list, i)
#define LEN(list) PyList_GET_SIZE(list)

/* a value used as a UOp (tinygrad would read an attribute of it): a TypeError/AttributeError if it is not one */
static UOp *need_uop(PyObject *o) {
  if (!o || UOp_Check(o)) return (UOp *)o;
  if (o == Py_None) PyErr_SetString(PyExc_AttributeError, "'NoneType' object has no attribute 'vmin'");
  else PyErr_Format(PyExc_TypeError, "expected a UOp, got %.100s", Py_TYPE(o)->tp_name);
  return NULL;
}
/* tinygrad's unwrap: the value, asserting it is not None */
static UOp *unwrap(PyObject *o) {
  if (o == Py_None) { PyErr_SetString(PyExc_AssertionError, "unwrap of None"); return NULL; }
  return need_uop(o);
}

/* Python's sum(): 0 + xs[0] + xs[1] + ... */
static PyObject *py_sum(PyObject *xs) {
  PyObject *acc = n_int(0);
  for (Py_ssize_t i = 0; acc && i < LEN(xs); i++) acc = n_add(acc, ITEM(xs, i));
  return acc;
}

/* ---- the folder's questions in C integers ----
 * Most sub-rules fold nothing, and tinygrad asks them by building expressions only to read their bounds. Where every
 * number fits in 64 bits (as_int64) the same question is answered here in 128-bit arithmetic first: a "no" ends the
 * sub-rule, anything else (a fold, or a number that does not fit) goes on to the Python-number path, which builds
 * tinygrad's expressions as before. */

static bool small_bounds(UOp *u, long long *lo, long long *hi) {
  PyObject *mn, *mx;
  if (uop_min_max(u, &mn, &mx) < 0) { PyErr_Clear(); return false; }   /* the Python path meets the error again */
  return as_int64(mn, lo) && as_int64(mx, hi);
}
static wide floordiv_w(wide a, wide c) { wide q = a / c; return (a % c != 0 && (a < 0) != (c < 0)) ? q - 1 : q; }   /* Python // */
static wide floormod_w(wide a, wide c) { return a - floordiv_w(a, c) * c; }                                       /* Python % */
static wide cdiv_w(wide a, wide b) { return a / b; }   /* tinygrad's cdiv: C division truncates toward zero (b != 0) */
static long long gcd_ll(long long a, long long b) {
  unsigned long long x = a < 0 ? -(unsigned long long)a : (unsigned long long)a, y = b < 0 ? -(unsigned long long)b : (unsigned long long)b;
  while (y) { unsigned long long t = x % y; x = y, y = t; }
  return x > LLONG_MAX ? 0 : (long long)x;   /* 0: does not fit (only for LLONG_MIN alone) */
}
/* u.const_factor() in C integers when it fits (uop_const_factor's rules on C integers: CONST, ADD as the gcd of both
 * sides, MUL by a CONST, else 1); false for a VCONST or a number that does not fit */
static bool small_const_factor(UOp *u, long long *out, int depth) {
  switch (u->op) {
  case OP_CONST: return as_int64(u->arg, out);
  case OP_VCONST: return false;
  case OP_ADD: {
    long long a, b;
    if (depth > 64 || u->nsrc != 2 || !small_const_factor(u->src[0], &a, depth + 1) || !small_const_factor(u->src[1], &b, depth + 1)) return false;
    *out = gcd_ll(a, b);
    return *out != 0 || (a == 0 && b == 0);
  }
  case OP_MUL:
    if (u->nsrc == 2 && u->src[0]->op == OP_CONST) return as_int64(u->src[0]->arg, out);
    if (u->nsrc == 2 && u->src[1]->op == OP_CONST) return as_int64(u->src[1]->arg, out);
    *out = 1;
    return true;
  default: *out = 1; return true;
  }
}

/* ---- the UOp methods the folder uses (ops.py) ---- */

static PyObject *const_factor(UOp *u) { return u ? pool_keep(uop_const_factor(u)) : NULL; }
static PyObject *divides(UOp *u, PyObject *v) { return u && v ? pool_keep(uop_divides(u, v)) : NULL; }

static PyObject *split_uop(UOp *u, Op sep) { return u ? pool_keep(uop_split_uop_list(u, sep)) : NULL; }   /* list(u.split_uop(sep)) */

/* the tuple (*uops, y) */
static PyObject *with_last(PyObject *uops, UOp *y) {
  PyObject *all = pool_keep(PyList_GetSlice(uops, 0, LEN(uops)));
  return append(all, AS_PY(y)) < 0 ? NULL : pool_keep(PyList_AsTuple(all));
}

/* UOp.gcd(*uops, y) is surely CONST 1 when y is a CONST c > 0 and the const factors of the terms and c share no factor:
 * y's term is c/c = CONST 1, whose only MUL-leaf is itself, so the leaves every term shares are at most that CONST 1,
 * and 1 * CONST 1 * ... * CONST(1) simplifies to CONST 1. A zero factor (a division by zero in gcd) or a number that
 * does not fit is left to the full computation. */
static bool gcd_surely_one(PyObject *uops, UOp *y) {
  long long g;
  if (y->op != OP_CONST || !as_int64(y->arg, &g) || g <= 0) return false;
  for (Py_ssize_t i = 0; i < LEN(uops) && g != 1; i++) {
    long long f;
    if (!small_const_factor((UOp *)ITEM(uops, i), &f, 0) || f == 0) return false;
    g = gcd_ll(g, f);
  }
  return g == 1;
}

/* UOp.gcd(*uops, y).simplify(); NULL without an exception when that is surely CONST 1, which both users of it give up
 * on: the common case, told from gcd's parts without building the product and rewriting it */
static UOp *gcd_simplified(PyObject *uops, UOp *y) {
  if (gcd_surely_one(uops, y)) return NULL;
  PyObject *args = with_last(uops, y), *g = args ? pool_keep(uop_gcd_unless_one(args)) : NULL;
  return g && g != Py_None ? u_simplify(need_uop(g)) : NULL;
}

/* u.pop_const(Ops.MUL): (the factor, the constant multiplier) */
static int pop_mul_const(UOp *u, UOp **fac, PyObject **cst) {
  if (u->op == OP_MUL && u->nsrc == 2 && u->src[1]->op == OP_CONST) { *fac = u->src[0]; *cst = u->src[1]->arg; return 0; }
  *fac = u;
  *cst = pool_keep(dtype_as_const(n_int(1), u->dtype));
  return *cst ? 0 : -1;
}

/* Counter(u.split_uop(MUL)): leaf -> count, in first-seen order */
static PyObject *mul_leaf_counts(UOp *u) {
  PyObject *leaves = split_uop(u, OP_MUL), *counts = pool_keep(PyDict_New());
  for (Py_ssize_t i = 0; leaves && counts && i < LEN(leaves); i++) {
    PyObject *c = PyDict_GetItemWithError(counts, ITEM(leaves, i));
    if (!c && PyErr_Occurred()) return NULL;
    if (PyDict_SetItem(counts, ITEM(leaves, i), n_add(c ? c : n_int(0), n_int(1))) < 0) return NULL;
  }
  return leaves ? counts : NULL;
}

/* MUL case of divide_exact: the leaves of self's factor minus the divisor's must all stay, and the
 * constants must divide; the quotient is the product 1 * leaf * ... * const, as math.prod builds it */
static PyObject *divide_exact_mul(UOp *self, UOp *v) {
  UOp *fac, *div_fac;
  PyObject *cst, *div_cst;
  if (pop_mul_const(self, &fac, &cst) < 0 || pop_mul_const(v, &div_fac, &div_cst) < 0) return NULL;
  PyObject *counts = mul_leaf_counts(fac), *div_leaves = split_uop(div_fac, OP_MUL);
  if (!counts || !div_leaves) return NULL;
  for (Py_ssize_t i = 0; i < LEN(div_leaves); i++) {   /* Counter.subtract */
    PyObject *c = PyDict_GetItemWithError(counts, ITEM(div_leaves, i));
    if (!c && PyErr_Occurred()) return NULL;
    if (PyDict_SetItem(counts, ITEM(div_leaves, i), n_sub(c ? c : n_int(0), n_int(1))) < 0) return NULL;
  }
  TEST(divisible, n_cmpi(n_mod(cst, div_cst), Py_EQ, 0));
  if (!divisible) return Py_None;
  Py_ssize_t pos = 0;
  PyObject *leaf, *count;
  while (PyDict_Next(counts, &pos, &leaf, &count)) {
    TEST(negative, n_cmpi(count, Py_LT, 0));
    if (negative) return Py_None;
  }
  PyObject *acc = n_int(1);
  for (pos = 0; acc && PyDict_Next(counts, &pos, &leaf, &count);)
    for (long k = PyLong_AsLong(count); acc && k > 0; k--) acc = n_mul(acc, leaf);
  return n_mul(acc, AS_PY(u_const_like(self, n_floordiv(cst, div_cst))));
}

/* UOp.divide_exact(v): self / v when v surely divides self, else None */
static PyObject *divide_exact(UOp *self, UOp *v) {
  if (!self || !v) return NULL;
  if (self == v) return AS_PY(u_const_likei(self, 1));
  if (v->op == OP_CONST) return divides(self, v->arg);
  if (self->op == OP_ADD && self->nsrc == 2) {
    if (Py_EnterRecursiveCall(" in divide_exact")) return NULL;
    PyObject *s0 = divide_exact(self->src[0], v), *s1 = s0 && s0 != Py_None ? divide_exact(self->src[1], v) : s0;
    Py_LeaveRecursiveCall();
    return !s1 || s1 == Py_None ? s1 : n_add(s0, s1);
  }
  if (self->op == OP_MUL) return divide_exact_mul(self, v);
  return Py_None;
}

/* ---- fold_divmod_general ---- */

typedef struct {
  UOp *d, *x, *y;
  bool is_mod, correct;
  PyObject *x_min, *x_max, *y_min, *y_max;
  UOp *x_peeled;              /* x without its trailing additive constant */
  PyObject *cst;              /* that constant (0 when there is none) */
  PyObject *uops;             /* the ADD terms of x_peeled */
  PyObject *c;                /* y's value, when y is a CONST > 0 */
  PyObject *terms, *factors;  /* each term over its const factor, and the factor */
  PyObject *all_uops;         /* the terms, plus the constant when it is not 0 */
} DivMod;

static UOp *fold_divmod_general(UOp *d, bool correct);

/* the bounds of both operands (ints), and the division by an exact zero */
static int read_bounds(DivMod *s) {
  if (!(s->x_min = vmin(s->x)) || !(s->x_max = vmax(s->x)) || !(s->y_min = vmin(s->y)) || !(s->y_max = vmax(s->y))) return -1;
  if (!PyLong_Check(s->x_min) || !PyLong_Check(s->x_max) || !PyLong_Check(s->y_min) || !PyLong_Check(s->y_max)) {
    PyErr_SetString(PyExc_AssertionError, "div/mod folding needs int bounds");
    return -1;
  }
  int same = n_eq(s->y_min, s->y_max), zero = same > 0 ? n_cmpi(s->y_max, Py_EQ, 0) : same;
  if (zero < 0) return -1;
  if (zero) {
    UOp *e = u_alu2(s->d->op, s->x, s->y);
    if (e) PyErr_Format(PyExc_ZeroDivisionError, "%s by zero trying to rewrite %S", s->is_mod ? "Mod" : "Division", AS_PY(e));
    return -1;
  }
  return 0;
}

/* cancel_divmod's question in C: 0 when it surely does not fold, 1 when it may (or a number does not fit) */
static int cancel_may_fold(DivMod *s) {
  long long xl, xh, yl, yh;
  if (!as_int64(s->x_min, &xl) || !as_int64(s->x_max, &xh) || !as_int64(s->y_min, &yl) || !as_int64(s->y_max, &yh)) return 1;
  if ((wide)yl * yh <= 0) return 0;
  wide q = cdiv_w(xl, yl);
  return q == cdiv_w(xl, yh) && q == cdiv_w(xh, yl) && q == cdiv_w(xh, yh);
}

/* cancel_divmod: the numerator's range lies within one denominator interval, so the quotient is constant */
static UOp *cancel_divmod(DivMod *s) {
  if (!cancel_may_fold(s)) return NULL;
  TEST(same_sign, n_cmpi(n_mul(s->y_min, s->y_max), Py_GT, 0));
  if (!same_sign) return NULL;
  PyObject *q = n_cdiv(s->x_min, s->y_min);
  TEST(e1, n_eq(q, n_cdiv(s->x_min, s->y_max)));
  if (!e1) return NULL;
  TEST(e2, n_eq(n_cdiv(s->x_min, s->y_max), n_cdiv(s->x_max, s->y_min)));
  if (!e2) return NULL;
  TEST(e3, n_eq(n_cdiv(s->x_max, s->y_min), n_cdiv(s->x_max, s->y_max)));
  if (!e3) return NULL;
  return s->is_mod ? need_uop(n_sub(AS_PY(s->x), n_mul(q, AS_PY(s->y)))) : u_const_like(s->d, q);
}

/* x.pop_const() and the ADD terms of what remains */
static int split_numerator(DivMod *s) {
  UOp *x = s->x;
  if (x->op == OP_ADD && x->nsrc == 2 && x->src[1]->op == OP_CONST) s->x_peeled = x->src[0], s->cst = x->src[1]->arg;
  else if (!(s->cst = pool_keep(dtype_as_const(n_int(0), x->dtype)))) return -1;
  else s->x_peeled = x;
  return (s->uops = split_uop(s->x_peeled, OP_ADD)) ? 0 : -1;
}

/* remove_nested_mod: an inner mod by a multiple of c goes away, (a%4 + b)%2 -> (a+b)%2 */
static UOp *remove_nested_mod(DivMod *s) {
  if (!s->is_mod) return NULL;
  TEST(nonneg, n_cmpi(s->x_min, Py_GE, 0));
  if (!nonneg) return NULL;
  PyObject *new_xs = new_list();
  bool changed = false;
  for (Py_ssize_t i = 0; new_xs && i < LEN(s->uops); i++) {
    UOp *u = (UOp *)ITEM(s->uops, i);
    if (u->op == OP_MOD) {
      PyObject *q = divides(u->src[1], s->c);
      if (!q) return NULL;
      if (q != Py_None) u = u->src[0], changed = true;
    }
    if (append(new_xs, AS_PY(u)) < 0) return NULL;
  }
  if (!new_xs || !changed) return NULL;
  UOp *new_x = need_uop(n_add(AS_PY(u_sum((UOp *const *)((PyListObject *)new_xs)->ob_item, (int)LEN(new_xs))), s->cst));
  TEST(ok, n_cmpi(vmin(new_x), Py_GE, 0));
  return ok ? u_mod(new_x, s->y) : NULL;
}

/* each term as (term / its const factor, the factor) */
static int decompose(DivMod *s) {
  if (!(s->terms = new_list()) || !(s->factors = new_list())) return -1;
  for (Py_ssize_t i = 0; i < LEN(s->uops); i++) {
    UOp *u = (UOp *)ITEM(s->uops, i);
    PyObject *f = const_factor(u);
    if (append(s->terms, f ? divides(u, f) : NULL) < 0 || append(s->factors, f) < 0) return -1;
  }
  return 0;
}

/* fold_binary_numerator: one non-constant term taking just two values: a line through both results */
static UOp *fold_binary_numerator(DivMod *s) {
  if (LEN(s->terms) != 1) return NULL;
  UOp *v = need_uop(ITEM(s->terms, 0));
  TEST(two_values, n_cmpi(n_sub(vmax(v), vmin(v)), Py_EQ, 1));
  if (!two_values) return NULL;
  PyObject *f = ITEM(s->factors, 0), *(*op)(PyObject *, PyObject *) = s->is_mod ? n_cmod : n_cdiv;
  PyObject *y1 = op(n_add(n_mul(f, vmin(v)), s->cst), s->c), *y2 = op(n_add(n_mul(f, vmax(v)), s->cst), s->c);
  return need_uop(n_add(n_mul(n_sub(y2, y1), n_sub(AS_PY(v), vmin(v))), y1));
}

/* fold_divmod_congruence's question in C: the bounds of sum(rem_i * term_i) + cst % c, as tinygrad's _min_max gives them
 * for that sum (a MUL by a CONST: its corners; an ADD: the sums), in one interval of c? 0 surely not, 1 it may (or a
 * number does not fit) */
static int congruence_may_fold(DivMod *s) {
  long long c, cst;
  if (!as_int64(s->c, &c) || c <= 0 || !as_int64(s->cst, &cst)) return 1;
  wide lo = floormod_w(cst, c), hi = lo;
  for (Py_ssize_t i = 0; i < LEN(s->factors); i++) {
    long long f, tl, th;
    if (!as_int64(ITEM(s->factors, i), &f) || !UOp_Check(ITEM(s->terms, i)) || !small_bounds((UOp *)ITEM(s->terms, i), &tl, &th)) return 1;
    wide r = floormod_w(f, c), r_neg = r - c, rem = (r_neg < 0 ? -r_neg : r_neg) < r ? r_neg : r;
    wide a = rem * tl, b = rem * th;   /* each below 2**126: a sum of many may not fit, then Python's numbers answer */
    if (__builtin_add_overflow(lo, a < b ? a : b, &lo) || __builtin_add_overflow(hi, a < b ? b : a, &hi)) return 1;
  }
  return floordiv_w(lo, c) == floordiv_w(hi, c);
}

/* fold_divmod_congruence: replace each factor by its smallest residue mod c; when that sum stays
 * within one interval of c, the quotient and remainder follow term by term */
static UOp *fold_divmod_congruence(DivMod *s) {
  TEST(x_negative, n_cmpi(s->x_min, Py_LT, 0));
  if (x_negative && s->correct) return NULL;
  if (!congruence_may_fold(s)) return NULL;
  PyObject *rems = new_list(), *c = s->c;
  for (Py_ssize_t i = 0; rems && i < LEN(s->factors); i++) {
    PyObject *r = n_mod(ITEM(s->factors, i), c), *r_neg = n_sub(r, c);
    TEST(closer, n_lt(n_abs(r_neg), n_abs(r)));
    if (append(rems, closer ? r_neg : r) < 0) return NULL;
  }
  PyObject *rem = rems ? n_int(0) : NULL;
  for (Py_ssize_t i = 0; rem && i < LEN(rems); i++) rem = n_add(rem, n_mul(ITEM(rems, i), ITEM(s->terms, i)));
  UOp *rem_u = need_uop(n_add(rem, n_mod(s->cst, c)));
  PyObject *lo = n_floordiv(vmin(rem_u), c);
  TEST(one_interval, n_eq(lo, n_floordiv(vmax(rem_u), c)));
  if (!one_interval) return NULL;
  if (s->is_mod) return need_uop(n_sub(AS_PY(rem_u), n_mul(lo, c)));
  PyObject *quo = n_int(0);
  for (Py_ssize_t i = 0; quo && i < LEN(rems); i++)
    quo = n_add(quo, n_mul(n_floordiv(n_sub(ITEM(s->factors, i), ITEM(rems, i)), c), ITEM(s->terms, i)));
  return need_uop(n_add(quo, n_floordiv(n_add(n_sub(s->cst, n_mod(s->cst, c)), n_mul(lo, c)), c)));
}

/* gcd_with_remainder: divide the terms (not the constant) and c by their common constant factor */
static UOp *gcd_with_remainder(DivMod *s) {
  TEST(nonneg, n_cmpi(s->x_min, Py_GE, 0));
  if (!nonneg) return NULL;
  UOp *g = gcd_simplified(s->uops, s->y);
  if (!g || g->op != OP_CONST) return NULL;
  TEST(above_one, n_cmpi(g->arg, Py_GT, 1));
  if (!above_one) return NULL;
  UOp *quotient = unwrap(divide_exact(s->x_peeled, g));
  UOp *new_x = need_uop(n_add(AS_PY(u_simplify(quotient)), n_floordiv(n_mod(s->cst, s->c), g->arg)));
  TEST(ok, n_cmpi(vmin(new_x), Py_GE, 0));
  if (!ok) return NULL;
  UOp *ret = u_alu2(s->d->op, new_x, u_const_like(s->x, n_floordiv(s->c, g->arg)));
  return need_uop(s->is_mod ? n_add(n_mul(AS_PY(ret), AS_PY(g)), n_mod(s->cst, g->arg)) : n_add(AS_PY(ret), n_floordiv(s->cst, s->c)));
}

/* nest_div_by_smallest_factor: x//c -> (x//f)//(c//f) for the smallest term factor f dividing c,
 * when folding x//f succeeds (recursively) */
static UOp *nest_div_by_smallest_factor(DivMod *s) {
  if (s->is_mod) return NULL;
  TEST(nonneg, n_cmpi(s->x_min, Py_GE, 0));
  if (!nonneg) return NULL;
  PyObject *div = s->c;
  for (Py_ssize_t i = 0; i < LEN(s->uops); i++) {
    UOp *u = (UOp *)ITEM(s->uops, i);
    if (u->op == OP_CONST || u->op == OP_VCONST) continue;
    PyObject *f = ITEM(s->factors, i), *abs_f = n_abs(f);
    TEST(above_one, n_cmpi(abs_f, Py_GT, 1));
    if (!above_one) continue;
    TEST(divides_c, n_cmpi(n_mod(s->c, f), Py_EQ, 0));
    if (!divides_c) continue;
    TEST(smaller, n_lt(abs_f, div));
    if (smaller) div = abs_f;
  }
  TEST(nests, n_lt(div, s->c));
  if (!nests) return NULL;
  UOp *inner = need_uop(n_floordiv(AS_PY(s->x), div));
  if (!inner || Py_EnterRecursiveCall(" in fold_divmod_general")) return NULL;
  UOp *folded = fold_divmod_general(inner, s->correct);
  Py_LeaveRecursiveCall();
  if (!folded) return NULL;
  TEST(ok, n_cmpi(vmin(folded), Py_GE, 0));
  return ok ? need_uop(n_floordiv(AS_PY(folded), n_floordiv(s->c, div))) : NULL;
}

/* the rules that need y to be a CONST > 0 */
static UOp *constant_denominator_rules(DivMod *s) {
  if (s->y->op != OP_CONST) return NULL;
  TEST(positive, n_cmpi(s->y->arg, Py_GT, 0));
  if (!positive) return NULL;
  s->c = s->y->arg;
  TRY_RULE(remove_nested_mod(s));
  if (decompose(s) < 0) return NULL;
  TRY_RULE(fold_binary_numerator(s));
  TRY_RULE(fold_divmod_congruence(s));
  TRY_RULE(gcd_with_remainder(s));
  return nest_div_by_smallest_factor(s);
}

/* divide_by_gcd: x//y -> (x/g)//(y/g), x%y -> ((x/g)%(y/g))*g for the common factor g of all terms and y */
static UOp *divide_by_gcd(DivMod *s) {
  UOp *g = gcd_simplified(s->all_uops, s->y);
  if (!g) return NULL;
  if (g->op == OP_CONST) {
    TEST(one, n_cmpi(g->arg, Py_EQ, 1));
    if (one) return NULL;
  }
  UOp *x_over_g = unwrap(divide_exact(s->x, g));
  UOp *ret = x_over_g ? u_alu2(s->d->op, x_over_g, unwrap(divide_exact(s->y, g))) : NULL;
  return s->is_mod ? need_uop(n_mul(AS_PY(ret), AS_PY(g))) : ret;
}

/* factor_remainder: terms that are multiples of y leave the division, (d*x+y)//d -> x + y//d;
 * for a MOD by a constant, each term's factor is reduced mod y */
static UOp *factor_remainder(DivMod *s) {
  TEST(y_negative, n_cmpi(s->y_min, Py_LT, 0));
  if (y_negative) return NULL;
  TEST(x_negative, n_cmpi(s->x_min, Py_LT, 0));
  if (x_negative) return NULL;
  PyObject *quo = new_list(), *rem = new_list();
  if (!quo || !rem) return NULL;
  for (Py_ssize_t i = 0; i < LEN(s->all_uops); i++) {
    UOp *u = (UOp *)ITEM(s->all_uops, i);
    PyObject *q = divide_exact(u, s->y);
    if (!q) return NULL;
    if (q != Py_None) { if (append(quo, q) < 0) return NULL; continue; }
    if (s->is_mod && s->y->op == OP_CONST) {
      PyObject *cf = const_factor(u);
      TEST(reducible, n_eq(n_mod(cf, s->y->arg), cf));
      if (!reducible) {
        if (append(rem, n_mul(divides(u, cf), n_mod(cf, s->y->arg))) < 0 || append(quo, AS_PY(u_const_likei(u, 0))) < 0) return NULL;
        continue;
      }
    }
    if (append(rem, AS_PY(u)) < 0) return NULL;
  }
  if (!LEN(quo)) return NULL;
  UOp *new_x = need_uop(n_add(py_sum(rem), AS_PY(u_const_likei(s->x, 0))));
  TEST(negative, n_cmpi(vmin(new_x), Py_LT, 0));
  if (negative) return NULL;
  return s->is_mod ? u_mod(new_x, s->y) : need_uop(n_add(AS_PY(u_idiv(new_x, s->y)), py_sum(quo)));
}

static UOp *fold_divmod_sub_rules(UOp *d, bool correct);

/* tinygrad's functools.cache on fold_divmod_general, for its None answers: they depend only on the node (immutable) and
 * the switch, and the bit dies with the node */
static UOp *fold_divmod_general(UOp *d, bool correct) {
  uint8_t bit = correct ? UOP_NO_FOLD_DIVMOD_CORRECT : UOP_NO_FOLD_DIVMOD;
  if (d->extra && (d->extra->no_fold & bit)) return NULL;
  UOp *r = fold_divmod_sub_rules(d, correct);
  if (!r && !PyErr_Occurred() && uop_extra(d)) d->extra->no_fold |= bit;
  return r;
}

static UOp *fold_divmod_sub_rules(UOp *d, bool correct) {
  if (d->nsrc != 2) return (UOp *)PyErr_Format(PyExc_ValueError, "%s needs two sources", d->op == OP_MOD ? "MOD" : "IDIV");
  DivMod s = {.d = d, .x = d->src[0], .y = d->src[1], .is_mod = d->op == OP_MOD, .correct = correct};
  if (read_bounds(&s) < 0) return NULL;
  TRY_RULE(cancel_divmod(&s));
  if (split_numerator(&s) < 0) return NULL;
  TRY_RULE(constant_denominator_rules(&s));
  /* the fallback rules see every term, the constant included */
  if (!(s.all_uops = pool_keep(PyList_GetSlice(s.uops, 0, LEN(s.uops))))) return NULL;
  TEST(has_const, n_cmpi(s.cst, Py_NE, 0));
  if (has_const && append(s.all_uops, AS_PY(u_const_like(s.x, s.cst))) < 0) return NULL;
  TRY_RULE(divide_by_gcd(&s));
  return factor_remainder(&s);
}

/* ---- the rules ---- */

/* (x//c + a)//d -> (x + a*c)//(c*d), for positive c, d and x, a of one sign */
RULE(merge_nested_div, c, d, x, a) {
  TEST(c_pos, n_cmpi(vmin(c), Py_GT, 0));
  if (!c_pos) return NULL;
  TEST(d_pos, n_cmpi(vmin(d), Py_GT, 0));
  if (!d_pos) return NULL;
  TEST(x_nonneg, n_cmpi(vmin(x), Py_GE, 0));
  TEST(both_nonneg, x_nonneg ? n_cmpi(vmin(a), Py_GE, 0) : 0);
  if (!both_nonneg) {
    TEST(x_nonpos, n_cmpi(vmax(x), Py_LE, 0));
    TEST(both_nonpos, x_nonpos ? n_cmpi(vmax(a), Py_LE, 0) : 0);
    if (!both_nonpos) return NULL;
  }
  return u_idiv(u_add(x, u_mul(a, c)), u_mul(c, d));
}

/* x//d -> -(x//(-d)) for a negative d */
RULE(div_by_negative, d, x) {
  TEST(negative, n_cmpi(vmax(d), Py_LT, 0));
  return negative ? u_neg(u_idiv(x, u_neg(d))) : NULL;
}

/* x//d -> -((-x)//d) for a nonpositive x */
RULE(div_of_nonpositive, x, d) {
  TEST(nonpositive, n_cmpi(vmax(x), Py_LE, 0));
  return nonpositive ? u_neg(u_idiv(u_neg(x), d)) : NULL;
}

/* (x+c)//d -> (x + c%d)//d + c//d, when the constant is at least d and everything is nonnegative */
RULE(div_split_const, c, d, x, n) {
  PyObject *cv = c->arg, *dv = d->arg, *c_mod_d = n_mod(cv, dv);
  TEST(reduces, n_cmp(c_mod_d, cv, Py_NE));
  if (!reduces) return NULL;
  TEST(x_nonneg, n_cmpi(vmin(x), Py_GE, 0));
  if (!x_nonneg) return NULL;
  TEST(n_nonneg, n_cmpi(vmin(n), Py_GE, 0));
  if (!n_nonneg) return NULL;
  TEST(d_pos, n_cmpi(dv, Py_GT, 0));
  if (!d_pos) return NULL;
  return need_uop(n_add(AS_PY(u_idiv(u_binop(OP_ADD, x, c_mod_d), d)), n_floordiv(cv, dv)));
}

/* (x+c)//d with x <= 0 <= x+c: -(-(c%d + x - (d-1))//d) + c//d */
RULE(div_split_const_nonpositive, c, d, x, n) {
  PyObject *cv = c->arg, *dv = d->arg;
  TEST(x_nonpos, n_cmpi(vmax(x), Py_LE, 0));
  if (!x_nonpos) return NULL;
  TEST(n_nonneg, n_cmpi(vmin(n), Py_GE, 0));
  if (!n_nonneg) return NULL;
  TEST(d_pos, n_cmpi(dv, Py_GT, 0));
  if (!d_pos) return NULL;
  PyObject *shifted = n_sub(n_add(n_mod(cv, dv), AS_PY(x)), n_sub(dv, n_int(1)));
  return need_uop(n_add(n_neg(n_floordiv(n_neg(shifted), AS_PY(d))), n_floordiv(cv, dv)));
}

/* the general folder on any index IDIV/MOD */
RULE(fold_divmod, d) {
  return fold_divmod_general(d, correct_divmod_folding);
}

/* x%d -> -((-x)%d) for a nonpositive x */
RULE(mod_of_nonpositive, x, d) {
  TEST(nonpositive, n_cmpi(vmax(x), Py_LE, 0));
  return nonpositive ? u_neg(u_mod(u_neg(x), d)) : NULL;
}

/* x%d -> x%(-d) for a negative d */
RULE(mod_by_negative, d, x) {
  TEST(negative, n_cmpi(vmax(d), Py_LT, 0));
  return negative ? u_mod(x, u_neg(d)) : NULL;
}

static const RuleDef div_and_mod_defs[] = {
  /* the fast rules */
  R("(UPat.var('x') // UPat.cvar('c') + UPat.cvar('a')) // UPat.cvar('d')", merge_nested_div),
  R("UPat.var('x', dtypes.index) // UPat.var('d')", div_by_negative),
  R("UPat.var('x', dtypes.index) // UPat.var('d')", div_of_nonpositive),
  R("(UPat.var('x', dtypes.index) + UPat.cvar('c', vec=False)).named('n') // UPat.cvar('d', vec=False)", div_split_const),
  R("(UPat.var('x', dtypes.index) + UPat.cvar('c', vec=False)).named('n') // UPat.cvar('d', vec=False)", div_split_const_nonpositive),
  /* the general folder */
  R("UPat((Ops.IDIV, Ops.MOD), dtypes.index, name='d')", fold_divmod),
  /* last, as in tinygrad (earlier they would loop with the symbolic rules) */
  R("UPat.var('x', dtypes.index) % UPat.var('d')", mod_of_nonpositive),
  R("UPat.var('x', dtypes.index) % UPat.var('d')", mod_by_negative),
};

int tinyc_init_divandmod(PyObject *m) {
  UNUSED(m);
  if (ctxvar_flag("CORRECT_DIVMOD_FOLDING", &correct_divmod_folding) < 0) return -1;   /* tinygrad's ContextVar, default 0 */
  return native_register("div_and_mod_symbolic", pm_from_defs(div_and_mod_defs, N(div_and_mod_defs)));
}
