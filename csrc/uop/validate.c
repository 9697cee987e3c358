/* tinygrad/uop/validate.py: the z3 proof that an index stays in its buffer, through z3's C API.
 *
 * As tinygrad's uops_to_z3, the integer and boolean part of the graph below the index and its gate (a walk that
 * stops at nodes of other dtypes) becomes z3 terms, sources first. Ranges, specials, variables, integer loads and
 * casts from floats become z3 integers bounded by their ranges (the bound a constraint on the solver); a comparison
 * of floats becomes a free boolean; the ALU ops follow tinygrad's z3_alu (truncating IDIV/MOD written with z3's
 * euclidean division, AND with an integer mask as a modulo, shifts as multiplications by powers of two); a
 * `cond.where(x, Invalid)` is x with cond added to the solver. The index is in bounds when no assignment makes it
 * negative or >= size under the gate.
 *
 * Where tinygrad's translation fails on a malformed graph it raises KeyError (a source outside the walk), TypeError
 * (no rule for a node; an operand of the wrong kind), AssertionError (XOR of integers, an index the walk leaves out),
 * AttributeError (a shift by a non-constant); tinyc raises the same. z3py's own Z3Exception (mixing booleans and
 * integers where z3py cannot) is a TypeError here: tinyc cannot raise z3py's class without importing it. */
#include "native.h"
#include "validate.h"

#ifndef TINYC_HAVE_Z3

int validate_index_z3(UOp *idx, UOp *gate, Py_ssize_t size) {
  UNUSED(idx); UNUSED(gate); UNUSED(size);
  PyErr_SetString(PyExc_ImportError, "bounds checking requires z3 >= 4.12.4, use IGNORE_OOB=1 to disable, or \"pip install "
                                     "'z3-solver>=4.12.4\" (tinyc was built without z3: install libz3-dev and rebuild)");
  return -1;
}

#else
#include <z3.h>

/* one translation: the context, its solver, the terms made so far (tinygrad's z3map: UOp -> term) */
typedef struct {
  Z3_context c;
  Z3_solver s;
  PtrMap terms;
  size_t nterms;   /* len(z3map): numbers the fresh loads, casts and float comparisons */
} Z3Ctx;

/* ---- term helpers: NULL in (an error earlier) gives NULL out; a z3 error becomes a RuntimeError ---- */

/* 0 when the last z3 call made obj without error, else -1 with the RuntimeError */
static int z_status(Z3Ctx *z, const void *obj) {
  Z3_error_code e = Z3_get_error_code(z->c);
  if (e == Z3_OK && obj) return 0;
  PyErr_Format(PyExc_RuntimeError, "z3: %s", e == Z3_OK ? "out of memory" : Z3_get_error_msg(z->c, e));
  return -1;
}
static Z3_ast checked(Z3Ctx *z, Z3_ast a) { return z_status(z, a) == 0 ? a : NULL; }

static bool is_bool(Z3Ctx *z, Z3_ast a) { return Z3_get_sort_kind(z->c, Z3_get_sort(z->c, a)) == Z3_BOOL_SORT; }

static Z3_ast z_intval(Z3Ctx *z, long long v) { return checked(z, Z3_mk_int64(z->c, v, Z3_mk_int_sort(z->c))); }
static Z3_ast z_boolval(Z3Ctx *z, bool v) { return checked(z, v ? Z3_mk_true(z->c) : Z3_mk_false(z->c)); }

/* z3.IntVal(v) of a Python int of any size; bools read as 0/1 and floats truncated, as z3py's _to_int_str reads them */
static Z3_ast z_numeral(Z3Ctx *z, PyObject *v) {
  if (!PyLong_Check(v) && !PyFloat_Check(v)) {
    PyErr_Format(PyExc_TypeError, "z3 rendering wants an int, got %R", v);
    return NULL;
  }
  PyObject *as_int = PyNumber_Long(v), *s = as_int ? PyObject_Str(as_int) : NULL;
  const char *text = s ? PyUnicode_AsUTF8(s) : NULL;
  Z3_ast a = text ? checked(z, Z3_mk_numeral(z->c, text, Z3_mk_int_sort(z->c))) : NULL;
  Py_XDECREF(as_int); Py_XDECREF(s);
  return a;
}

/* booleans take part in arithmetic as If(b, 1, 0), as z3py coerces them */
static Z3_ast z_as_int(Z3Ctx *z, Z3_ast a) {
  if (!a || !is_bool(z, a)) return a;
  Z3_ast one = z_intval(z, 1), zero = z_intval(z, 0);
  return one && zero ? checked(z, Z3_mk_ite(z->c, a, one, zero)) : NULL;
}

static Z3_ast z_need_bool(Z3Ctx *z, Z3_ast a, const char *what) {
  if (!a || is_bool(z, a)) return a;
  PyErr_Format(PyExc_TypeError, "z3 rendering: %s must be a boolean, got %s", what, Z3_ast_to_string(z->c, a));
  return NULL;
}

/* Z3_mk_add/sub/mul/and/or over two terms */
typedef Z3_ast (*Z3Nary)(Z3_context, unsigned, Z3_ast const[]);
static Z3_ast z_nary(Z3Ctx *z, Z3Nary f, Z3_ast a, Z3_ast b) {
  if (!a || !b) return NULL;
  Z3_ast args[2] = {a, b};
  return checked(z, f(z->c, 2, args));
}
typedef Z3_ast (*Z3Binary)(Z3_context, Z3_ast, Z3_ast);
static Z3_ast z_binary(Z3Ctx *z, Z3Binary f, Z3_ast a, Z3_ast b) { return a && b ? checked(z, f(z->c, a, b)) : NULL; }

/* integer arithmetic, operands coerced to integers */
static Z3_ast z_add(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_nary(z, Z3_mk_add, z_as_int(z, a), z_as_int(z, b)); }
static Z3_ast z_sub(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_nary(z, Z3_mk_sub, z_as_int(z, a), z_as_int(z, b)); }
static Z3_ast z_mul(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_nary(z, Z3_mk_mul, z_as_int(z, a), z_as_int(z, b)); }
static Z3_ast z_div(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_binary(z, Z3_mk_div, z_as_int(z, a), z_as_int(z, b)); }
static Z3_ast z_mod(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_binary(z, Z3_mk_mod, z_as_int(z, a), z_as_int(z, b)); }
static Z3_ast z_lt(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_binary(z, Z3_mk_lt, z_as_int(z, a), z_as_int(z, b)); }
static Z3_ast z_le(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_binary(z, Z3_mk_le, z_as_int(z, a), z_as_int(z, b)); }
static Z3_ast z_addi(Z3Ctx *z, Z3_ast a, long long b) { return z_add(z, a, z_intval(z, b)); }

/* ==, as z3py: terms of one sort compare as they are, a boolean against an integer as an integer */
static Z3_ast z_eq(Z3Ctx *z, Z3_ast a, Z3_ast b) {
  if (!a || !b) return NULL;
  if (is_bool(z, a) != is_bool(z, b)) a = z_as_int(z, a), b = z_as_int(z, b);
  return z_binary(z, Z3_mk_eq, a, b);
}
static Z3_ast z_not(Z3Ctx *z, Z3_ast a) { return a ? checked(z, Z3_mk_not(z->c, a)) : NULL; }
static Z3_ast z_ne(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_not(z, z_eq(z, a, b)); }

/* z3.If(c, t, f): c a boolean, branches of one sort (mixed ones as integers) */
static Z3_ast z_if(Z3Ctx *z, Z3_ast c, Z3_ast t, Z3_ast f) {
  if (!(c = z_need_bool(z, c, "a condition")) || !t || !f) return NULL;
  if (is_bool(z, t) != is_bool(z, f)) t = z_as_int(z, t), f = z_as_int(z, f);
  return t && f ? checked(z, Z3_mk_ite(z->c, c, t, f)) : NULL;
}

/* a named constant: z3.Int(name) / z3.Bool(name) */
static Z3_ast z_named(Z3Ctx *z, const char *name, bool boolean) {
  Z3_sort sort = boolean ? Z3_mk_bool_sort(z->c) : Z3_mk_int_sort(z->c);
  return checked(z, Z3_mk_const(z->c, Z3_mk_string_symbol(z->c, name), sort));
}

/* "load3": a fresh name numbered by the terms made so far, as tinygrad's f"load{len(ctx[1])}" */
static Z3_ast z_fresh(Z3Ctx *z, const char *prefix, bool boolean) {
  char name[64];
  snprintf(name, sizeof name, "%s%zu", prefix, z->nterms);
  return z_named(z, name, boolean);
}

static int z_assert(Z3Ctx *z, Z3_ast constraint) {
  if (!(constraint = z_need_bool(z, constraint, "a constraint"))) return -1;
  Z3_solver_assert(z->c, z->s, constraint);
  return checked(z, constraint) ? 0 : -1;
}

/* tinygrad's create_bounded: the integer s with vmin <= s <= vmax asserted */
static Z3_ast z_bounded(Z3Ctx *z, Z3_ast s, Z3_ast lo, Z3_ast hi) {
  Z3_ast bound = z_nary(z, Z3_mk_and, z_le(z, lo, s), z_le(z, s, hi));
  return bound && z_assert(z, bound) == 0 ? s : NULL;
}

/* the term of a source already translated; KeyError as tinygrad's z3map[s] for one the walk left out */
static Z3_ast term_of(Z3Ctx *z, UOp *u) {
  Z3_ast a = ptrmap_get(&z->terms, u);
  if (!a) PyErr_SetObject(PyExc_KeyError, (PyObject *)u);
  return a;
}

static UOp *src0(UOp *u) {
  if (u->nsrc) return u->src[0];
  PyErr_SetString(PyExc_IndexError, "tuple index out of range");
  return NULL;
}
static Z3_ast term_of_src0(Z3Ctx *z, UOp *u) { UOp *s = src0(u); return s ? term_of(z, s) : NULL; }

/* ---- the rules of tinygrad's z3_renderer, in its order: a match test and a translation each ---- */

typedef bool (*Z3Match)(UOp *x);
typedef Z3_ast (*Z3Rule)(Z3Ctx *z, UOp *x);

static bool is_intlike(DType *dt) { return dtype_is_int(dt); }   /* dtypes.ints + (dtypes.index,), vectors too */
static bool one_src_of(UOp *x, bool (*pred)(DType *)) { return x->nsrc == 1 && pred(x->src[0]->dtype); }

/* cond.where(x, Invalid): x, with cond assumed */
static bool m_where_invalid(UOp *x) {
  return x->op == OP_WHERE && x->nsrc == 3 && x->src[2]->op == OP_CONST && x->src[2]->arg == Invalid &&
         dtype_scalar(x->src[2]->dtype) == DTYPE(INDEX);
}
static Z3_ast r_where_invalid(Z3Ctx *z, UOp *x) {
  Z3_ast val = term_of(z, x->src[1]), cond = val ? term_of(z, x->src[0]) : NULL;
  return cond && z_assert(z, cond) == 0 ? val : NULL;
}

/* SPECIAL: 0 <= s <= size-1, named by its arg */
static bool m_special(UOp *x) { return x->op == OP_SPECIAL; }
static Z3_ast r_special(Z3Ctx *z, UOp *x) {
  Z3_ast size = term_of_src0(z, x);
  if (!size) return NULL;
  if (!PyUnicode_Check(x->arg)) return PyErr_Format(PyExc_TypeError, "SPECIAL's arg must be a str, got %R", x->arg), NULL;
  const char *name = PyUnicode_AsUTF8(x->arg);
  return name ? z_bounded(z, z_named(z, name, false), z_intval(z, 0), z_addi(z, size, -1)) : NULL;
}

/* DEFINE_VAR (name, min, max) */
static bool m_define_var(UOp *x) { return x->op == OP_DEFINE_VAR; }
static Z3_ast r_define_var(Z3Ctx *z, UOp *x) {
  if (!PyTuple_Check(x->arg)) return PyErr_Format(PyExc_TypeError, "DEFINE_VAR's arg must be a tuple, got %R", x->arg), NULL;
  if (PyTuple_GET_SIZE(x->arg) < 3) return PyErr_SetString(PyExc_IndexError, "tuple index out of range"), NULL;
  PyObject *name = PyTuple_GET_ITEM(x->arg, 0);
  if (!PyUnicode_Check(name)) return PyErr_Format(PyExc_TypeError, "DEFINE_VAR's name must be a str, got %R", name), NULL;
  const char *cname = PyUnicode_AsUTF8(name);
  if (!cname) return NULL;
  Z3_ast lo = z_numeral(z, PyTuple_GET_ITEM(x->arg, 1)), hi = lo ? z_numeral(z, PyTuple_GET_ITEM(x->arg, 2)) : NULL;
  return hi ? z_bounded(z, z_named(z, cname, false), lo, hi) : NULL;
}

/* RANGE: 0 <= r <= size-1, named as it renders (two RANGEs that render alike are one variable, as in tinygrad) */
static bool m_range(UOp *x) { return x->op == OP_RANGE; }
static Z3_ast r_range(Z3Ctx *z, UOp *x) {
  Z3_ast size = term_of_src0(z, x);
  PyObject *name = size ? uop_render(x, false) : NULL;
  if (name && !PyUnicode_Check(name)) PyErr_Format(PyExc_TypeError, "the RANGE %R does not render to a name", (PyObject *)x);
  const char *cname = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
  Z3_ast r = cname ? z_bounded(z, z_named(z, cname, false), z_intval(z, 0), z_addi(z, size, -1)) : NULL;
  Py_XDECREF(name);
  return r;
}

/* a number bound of a dtype (dtypes.min / dtypes.max) as a term */
static Z3_ast z_dtype_bound(Z3Ctx *z, DType *dt, bool upper) {
  PyObject *v = upper ? dtype_max(dt) : dtype_min(dt);
  Z3_ast a = v ? z_numeral(z, v) : NULL;
  Py_XDECREF(v);
  return a;
}
/* an integer bounded by the min and max of x's dtype, named prefix + number */
static Z3_ast z_fresh_in_dtype(Z3Ctx *z, UOp *x, const char *prefix) {
  Z3_ast s = z_fresh(z, prefix, false), lo = s ? z_dtype_bound(z, x->dtype, false) : NULL;
  Z3_ast hi = lo ? z_dtype_bound(z, x->dtype, true) : NULL;
  return hi ? z_bounded(z, s, lo, hi) : NULL;
}

/* loads are unknowns within their dtype */
static bool m_load_int(UOp *x) { return x->op == OP_LOAD && is_intlike(x->dtype); }
static Z3_ast r_load_int(Z3Ctx *z, UOp *x) { return z_fresh_in_dtype(z, x, "load"); }
static bool m_load_bool(UOp *x) { return x->op == OP_LOAD && dtype_is_bool(x->dtype); }
static Z3_ast r_load_bool(Z3Ctx *z, UOp *x) { UNUSED(x); return z_fresh(z, "load", true); }

/* constants; Invalid is one shared unknown */
static bool m_const_invalid(UOp *x) { return x->op == OP_CONST && x->arg == Invalid; }
static Z3_ast r_const_invalid(Z3Ctx *z, UOp *x) { UNUSED(x); return z_named(z, "Invalid", false); }
static bool m_const_int(UOp *x) { return x->op == OP_CONST && is_intlike(x->dtype); }
static Z3_ast r_const_int(Z3Ctx *z, UOp *x) { return z_numeral(z, x->arg); }
static bool m_const_bool(UOp *x) { return x->op == OP_CONST && dtype_is_bool(x->dtype); }
static Z3_ast r_const_bool(Z3Ctx *z, UOp *x) {
  int truth = PyObject_IsTrue(x->arg);
  return truth < 0 ? NULL : z_boolval(z, truth);
}

/* a cast of a float to an integer is an unknown within the integer dtype */
static bool m_cast_from_float(UOp *x) { return x->op == OP_CAST && is_intlike(x->dtype) && one_src_of(x, dtype_is_float); }
static Z3_ast r_cast_from_float(Z3Ctx *z, UOp *x) { return z_fresh_in_dtype(z, x, "cast"); }

/* a comparison of floats is an unknown boolean */
static bool m_float_cmp(UOp *x) {
  if (!IN_GROUP(x->op, Comparison)) return false;
  for (int i = 0; i < (int)x->nsrc; i++) if (!dtype_is_float(x->src[i]->dtype)) return false;
  return true;
}
static Z3_ast r_float_cmp(Z3Ctx *z, UOp *x) { UNUSED(x); return z_fresh(z, "float_cmp", true); }

/* casts between booleans and integers */
static bool m_cast_from_bool(UOp *x) { return x->op == OP_CAST && is_intlike(x->dtype) && one_src_of(x, dtype_is_bool); }
static Z3_ast r_cast_from_bool(Z3Ctx *z, UOp *x) { return z_as_int(z, z_need_bool(z, term_of(z, x->src[0]), "a cast bool")); }
static bool m_cast_from_int(UOp *x) { return x->op == OP_CAST && is_intlike(x->dtype) && one_src_of(x, is_intlike); }
static Z3_ast r_cast_from_int(Z3Ctx *z, UOp *x) { return term_of(z, x->src[0]); }
static bool m_cast_to_bool(UOp *x) { return x->op == OP_CAST && dtype_is_bool(x->dtype); }
static Z3_ast r_cast_to_bool(Z3Ctx *z, UOp *x) {
  Z3_ast a = term_of_src0(z, x);
  if (a && is_bool(z, a)) return PyErr_SetString(PyExc_TypeError, "z3 rendering: a boolean compared with 0"), NULL;
  return z_ne(z, a, z_intval(z, 0));
}

/* ---- the ALU ops (tinygrad's z3_alu): operands are the sources' terms ---- */

/* tinygrad's z3_cdiv: truncating division from z3's euclidean one */
static Z3_ast z_cdiv(Z3Ctx *z, Z3_ast a, Z3_ast b) {
  Z3_ast zero = z_intval(z, 0);
  Z3_ast neg = z_if(z, z_lt(z, zero, b), z_div(z, z_add(z, a, z_addi(z, b, -1)), b), z_div(z, z_sub(z, a, z_addi(z, b, 1)), b));
  return z_if(z, z_lt(z, a, zero), neg, z_div(z, a, b));
}

/* 2**b for a shift amount b, which must be a number (tinygrad's b.as_long()) */
static Z3_ast z_pow2(Z3Ctx *z, Z3_ast b) {
  if (!b) return NULL;
  if (is_bool(z, b) || !Z3_is_numeral_ast(z->c, b))
    return PyErr_SetString(PyExc_AttributeError, "a shift amount must be a constant ('ArithRef' object has no attribute 'as_long')"), NULL;
  PyObject *n = PyLong_FromString(Z3_get_numeral_string(z->c, b), NULL, 10), *two = PyLong_FromLong(2);
  PyObject *p = n && two ? PyNumber_Power(two, n, Py_None) : NULL;
  Z3_ast r = NULL;
  if (p && !PyLong_Check(p)) PyErr_SetString(PyExc_ValueError, "negative shift count");
  else if (p) r = z_numeral(z, p);
  Py_XDECREF(n); Py_XDECREF(two); Py_XDECREF(p);
  return r;
}

/* AND: a bit mask on integers is a modulo (a & (2**k-1) is a % 2**k), And on booleans */
static Z3_ast alu_and(Z3Ctx *z, Z3_ast a, Z3_ast b) {
  if (!is_bool(z, b)) return z_mod(z, a, z_addi(z, b, 1));
  return z_nary(z, Z3_mk_and, z_need_bool(z, a, "AND's operand"), b);
}
static Z3_ast alu_or(Z3Ctx *z, Z3_ast a, Z3_ast b) {
  if (!is_bool(z, a) || !is_bool(z, b)) return PyErr_SetString(PyExc_TypeError, "unsupported operand type(s) for |: 'ArithRef'"), NULL;
  return z_nary(z, Z3_mk_or, a, b);
}
static Z3_ast alu_xor(Z3Ctx *z, Z3_ast a, Z3_ast b) {
  if (!is_bool(z, a)) return PyErr_Format(PyExc_AssertionError, "XOR of a non-boolean: a=%s", Z3_ast_to_string(z->c, a)), NULL;
  return z_binary(z, Z3_mk_xor, a, z_need_bool(z, b, "XOR's operand"));
}
static Z3_ast alu_max(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_if(z, z_lt(z, a, b), b, a); }
static Z3_ast alu_mod(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_sub(z, a, z_mul(z, z_cdiv(z, a, b), b)); }
static Z3_ast alu_shr(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_div(z, a, z_pow2(z, b)); }
static Z3_ast alu_shl(Z3Ctx *z, Z3_ast a, Z3_ast b) { return z_mul(z, a, z_pow2(z, b)); }
static Z3_ast alu_neg(Z3Ctx *z, Z3_ast a) { a = z_as_int(z, a); return a ? checked(z, Z3_mk_unary_minus(z->c, a)) : NULL; }

static Z3_ast r_alu(Z3Ctx *z, UOp *x) {
  int arity = IN_GROUP(x->op, Unary) ? 1 : IN_GROUP(x->op, Binary) ? 2 : 3;
  if (x->op == OP_THREEFRY || x->op == OP_FDIV) return PyErr_SetObject(PyExc_KeyError, ops_members[x->op]), NULL;
  if ((int)x->nsrc != arity) return PyErr_Format(PyExc_TypeError, "Ops.%s takes %d operands, got %d", op_names[x->op], arity, (int)x->nsrc), NULL;
  Z3_ast s[3] = {NULL, NULL, NULL};
  for (int i = 0; i < arity; i++) if (!(s[i] = term_of(z, x->src[i]))) return NULL;
  switch (x->op) {
    case OP_NEG: return alu_neg(z, s[0]);
    case OP_ADD: return z_add(z, s[0], s[1]);
    case OP_SUB: return z_sub(z, s[0], s[1]);
    case OP_MUL: return z_mul(z, s[0], s[1]);
    case OP_CMPLT: return z_lt(z, s[0], s[1]);
    case OP_CMPNE: return z_ne(z, s[0], s[1]);
    case OP_CMPEQ: return z_eq(z, s[0], s[1]);
    case OP_XOR: return alu_xor(z, s[0], s[1]);
    case OP_OR: return alu_or(z, s[0], s[1]);
    case OP_AND: return alu_and(z, s[0], s[1]);
    case OP_SHR: return alu_shr(z, s[0], s[1]);
    case OP_SHL: return alu_shl(z, s[0], s[1]);
    case OP_MAX: return alu_max(z, s[0], s[1]);
    case OP_MOD: return alu_mod(z, s[0], s[1]);
    case OP_IDIV: return z_cdiv(z, s[0], s[1]);
    case OP_MULACC: return z_add(z, z_mul(z, s[0], s[1]), s[2]);
    case OP_WHERE: return z_if(z, s[0], s[1], s[2]);
    default:   /* the float-only ops (LOG2, SQRT, ...): python's math functions refuse z3 terms */
      return PyErr_Format(PyExc_TypeError, "Ops.%s does not take an integer z3 term", op_names[x->op]), NULL;
  }
}
static bool m_alu(UOp *x) { return IN_GROUP(x->op, ALU); }

static const struct { Z3Match match; Z3Rule rule; } z3_renderer[] = {
  {m_where_invalid, r_where_invalid},
  {m_special, r_special}, {m_define_var, r_define_var}, {m_range, r_range},
  {m_load_int, r_load_int}, {m_load_bool, r_load_bool},
  {m_const_invalid, r_const_invalid}, {m_const_int, r_const_int}, {m_const_bool, r_const_bool},
  {m_cast_from_float, r_cast_from_float}, {m_float_cmp, r_float_cmp},
  {m_cast_from_bool, r_cast_from_bool}, {m_cast_from_int, r_cast_from_int}, {m_cast_to_bool, r_cast_to_bool},
  {m_alu, r_alu},
};

/* the first rule that matches x translates it; TypeError (tinygrad unpacking the None of no match) when none does */
static Z3_ast render_one(Z3Ctx *z, UOp *x) {
  for (size_t i = 0; i < sizeof z3_renderer / sizeof z3_renderer[0]; i++)
    if (z3_renderer[i].match(x)) return z3_renderer[i].rule(z, x);
  PyErr_Format(PyExc_TypeError, "cannot render Ops.%s of %R to z3 (cannot unpack non-iterable NoneType object)",
               op_names[x->op], (PyObject *)x->dtype);
  return NULL;
}

/* ---- uops_to_z3 ---- */

/* the walk's gate: integer, index and boolean nodes (a pointer's scalar() is the pointer: not one of them) */
static bool in_walk(UOp *u) { return dtype_is_int(u->dtype) || dtype_is_bool(u->dtype); }

/* tinygrad's UOp.sink(*roots).toposort(gate) without the sink: sources first, a node failing the gate left out with
 * everything only it reaches. The stack holds (node, visited) with visited in the pointer's low bit. */
static int walk(UOp *const *roots, int nroots, PtrVec *order) {
  PtrVec stack = {0};
  PtrMap done = {0};
  int rc = 0;
  for (int i = nroots - 1; i >= 0 && rc == 0; i--) rc = ptrvec_push(&stack, roots[i]);
  while (rc == 0 && stack.len) {
    uintptr_t top = (uintptr_t)ptrvec_pop(&stack);
    UOp *u = (UOp *)(top & ~(uintptr_t)1);
    if (ptrmap_has(&done, u)) continue;
    if (top & 1) { rc = ptrmap_set(&done, u, u) < 0 || ptrvec_push(order, u) < 0 ? -1 : 0; continue; }
    if (!in_walk(u)) continue;
    rc = ptrvec_push(&stack, (void *)(top | 1));
    for (int i = (int)u->nsrc - 1; i >= 0 && rc == 0; i--) rc = ptrvec_push(&stack, u->src[i]);
  }
  ptrvec_free(&stack);
  ptrmap_free(&done);
  return rc;
}

/* translate every node of the walk, in order; the terms of idx and gate into out (gate NULL: z3's true) */
static int uops_to_z3(Z3Ctx *z, UOp *idx, UOp *gate, Z3_ast out[2]) {
  UOp *roots[2] = {idx, gate};
  PtrVec order = {0};
  int rc = walk(roots, gate ? 2 : 1, &order);
  for (Py_ssize_t i = 0; rc == 0 && i < order.len; i++) {
    UOp *u = order.items[i];
    Z3_ast a = render_one(z, u);
    rc = a && ptrmap_set(&z->terms, u, a) == 0 ? 0 : -1;
    z->nterms++;
  }
  ptrvec_free(&order);
  if (rc < 0) return -1;
  out[0] = ptrmap_get(&z->terms, idx);
  out[1] = gate ? ptrmap_get(&z->terms, gate) : z_boolval(z, true);
  if (out[0] && out[1]) return 0;
  if (!PyErr_Occurred()) PyErr_SetString(PyExc_AssertionError, "UOp failed to rewrite to z3!");
  return -1;
}

/* ---- the verdict ---- */

/* z3's strings live in one buffer of the context that the next call overwrites: each is copied out at once */
static PyObject *z_str(const char *s) { return s ? PyUnicode_FromString(s) : NULL; }

/* "name = value" of the model's i-th constant */
static PyObject *model_entry(Z3Ctx *z, void *model, unsigned i) {   /* a Z3Entry */
  Z3_model m = model;
  Z3_func_decl d = Z3_model_get_const_decl(z->c, m, i);
  PyObject *name = z_str(Z3_get_symbol_string(z->c, Z3_get_decl_name(z->c, d)));
  Z3_ast v = name ? Z3_model_get_const_interp(z->c, m, d) : NULL;
  PyObject *value = v ? z_str(Z3_ast_to_string(z->c, v)) : NULL;
  PyObject *entry = value ? PyUnicode_FromFormat("%U = %U", name, value) : NULL;
  Py_XDECREF(name); Py_XDECREF(value);
  return entry;
}

/* "[a, b, ...]" of the n strings entry(z, obj, i) makes, as z3py prints its lists */
typedef PyObject *(*Z3Entry)(Z3Ctx *z, void *obj, unsigned i);
static PyObject *bracketed(Z3Ctx *z, void *obj, unsigned n, Z3Entry entry) {
  PyObject *parts = PyList_New(0);
  for (unsigned i = 0; parts && i < n; i++) {
    PyObject *s = entry(z, obj, i);
    if (!s || PyList_Append(parts, s) < 0) Py_CLEAR(parts);
    Py_XDECREF(s);
  }
  PyObject *sep = parts ? PyUnicode_FromString(", ") : NULL, *joined = sep ? PyUnicode_Join(sep, parts) : NULL;
  PyObject *ret = joined ? PyUnicode_FromFormat("[%U]", joined) : NULL;
  Py_XDECREF(sep); Py_XDECREF(parts); Py_XDECREF(joined);
  return ret;
}
static PyObject *model_text(Z3Ctx *z, Z3_model m) {
  return bracketed(z, m, Z3_model_get_num_consts(z->c, m), model_entry);
}
/* the solver's assertions (the bounds and the mask) */
static PyObject *assertion_entry(Z3Ctx *z, void *v, unsigned i) { return z_str(Z3_ast_to_string(z->c, Z3_ast_vector_get(z->c, v, i))); }
static PyObject *constraints_text(Z3Ctx *z) {
  Z3_ast_vector v = Z3_solver_get_assertions(z->c, z->s);
  if (z_status(z, v) < 0) return NULL;
  Z3_ast_vector_inc_ref(z->c, v);
  PyObject *text = bracketed(z, v, Z3_ast_vector_size(z->c, v), assertion_entry);
  Z3_ast_vector_dec_ref(z->c, v);
  return text;
}

/* what z3 found, before the out-of-bounds question is popped: the model where it found one, else why it gave up */
static PyObject *finding(Z3Ctx *z, Z3_lbool verdict) {
  if (verdict != Z3_L_TRUE) return z_str(Z3_solver_get_reason_unknown(z->c, z->s));
  Z3_model m = Z3_solver_get_model(z->c, z->s);
  if (z_status(z, m) < 0) return NULL;
  Z3_model_inc_ref(z->c, m);
  PyObject *text = model_text(z, m);
  Z3_model_dec_ref(z->c, m);
  return text;
}

/* tinygrad's report of an index z3 could not keep in bounds, printed to sys.stdout; the constraints are the solver's
 * (the mask, the bounds), without the question asked */
static int report(Z3Ctx *z, Z3_lbool verdict, PyObject *found, UOp *idx, UOp *gate, Py_ssize_t size) {
  PyObject *constraints = constraints_text(z);
  PyObject *i = constraints ? uop_render(idx, false) : NULL;
  PyObject *g = i ? (gate ? uop_render(gate, false) : PyUnicode_FromString("True")) : NULL;
  if (g && verdict == Z3_L_TRUE) PySys_FormatStdout("# OUT OF BOUNDS ACCESS: at %U INDEX not in 0 - %zd\n", found, size);
  else if (g) PySys_FormatStdout("# UNKNOWN RESULT FROM Z3: %U\n", found);
  if (g) PySys_FormatStdout("constraints = %U\nidx=%S\nmask=%S\n", constraints, i, g);
  Py_XDECREF(constraints); Py_XDECREF(i); Py_XDECREF(g);
  return g ? 0 : -1;
}

/* the question: can the index be < 0 or >= size? asked in a solver scope popped after */
static Z3_lbool ask(Z3Ctx *z, Z3_ast index, Py_ssize_t size, PyObject **found) {
  Z3_ast oob = z_nary(z, Z3_mk_or, z_lt(z, index, z_intval(z, 0)), z_le(z, z_intval(z, size), index));
  if (!oob) return Z3_L_UNDEF;
  Z3_solver_push(z->c, z->s);
  Z3_lbool verdict = Z3_L_UNDEF;
  if (z_assert(z, oob) == 0) {
    Py_BEGIN_ALLOW_THREADS
    verdict = Z3_solver_check(z->c, z->s);
    Py_END_ALLOW_THREADS
    if (z_status(z, z->s) == 0 && verdict != Z3_L_FALSE) *found = finding(z, verdict);
  }
  Z3_solver_pop(z->c, z->s, 1);
  return verdict;
}

/* assert the gate and ask for an index out of bounds: none (unsat) is the proof */
static int solve(Z3Ctx *z, UOp *idx, UOp *gate, Py_ssize_t size) {
  Z3_ast t[2];
  if (uops_to_z3(z, idx, gate, t) < 0 || z_assert(z, t[1]) < 0) return -1;
  if (is_bool(z, t[0])) return PyErr_SetString(PyExc_TypeError, "z3 rendering: the index is a boolean"), -1;
  PyObject *found = NULL;
  Z3_lbool verdict = ask(z, t[0], size, &found);
  int r = PyErr_Occurred() ? -1 : verdict == Z3_L_FALSE ? 1 : found ? report(z, verdict, found, idx, gate, size) : -1;
  Py_XDECREF(found);
  return r;
}

int validate_index_z3(UOp *idx, UOp *gate, Py_ssize_t size) {
  Z3_config cfg = Z3_mk_config();
  Z3Ctx z = {.c = cfg ? Z3_mk_context(cfg) : NULL};
  if (cfg) Z3_del_config(cfg);
  if (!z.c) { PyErr_NoMemory(); return -1; }
  Z3_set_error_handler(z.c, NULL);   /* errors set a code the helpers read instead of aborting the process */
  z.s = Z3_mk_solver(z.c);
  int r = -1;
  if (z_status(&z, z.s) == 0) {
    Z3_solver_inc_ref(z.c, z.s);
    r = solve(&z, idx, gate, size);
    Z3_solver_dec_ref(z.c, z.s);
  }
  ptrmap_free(&z.terms);
  Z3_del_context(z.c);
  return r;
}

#endif
