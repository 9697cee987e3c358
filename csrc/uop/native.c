/* The machinery native rules are written with (see native.h): rule sets from definitions, the
 * registry of named rule sets, the pool, and the UOp/number helpers rule bodies use. Also
 * exec_alu (tinygrad/uop/ops.py, "ops in python"), which constant folding needs. */
#include "native.h"
#include <limits.h>
#include <math.h>
#include <pthread.h>

/* the pool: a stack per OS thread of everything rule bodies made, released back to the rule's mark when it returns.
 * Per thread, because a rule running in one thread can let another run (a Python __eq__ of an arg gives up the GIL),
 * whose rules must not release what the first one still holds; within a thread marks nest, so a stack serves. A C
 * array, not a Python list: every native rule call marks and releases, and every intermediate is pushed. Its buffer
 * is the raw allocator's, freed by the thread's key destructor (which runs without the GIL, after the thread's last
 * release has emptied it). */
typedef struct { PyObject **items; Py_ssize_t len, cap; } Pool;
static FAST_TLS Pool tls_pool;
static pthread_key_t pool_free_key;   /* set to the thread's Pool once it has a buffer: its destructor frees it */
static PyObject *namespace;     /* globals the pattern expressions are evaluated in */
static PyObject *registry;      /* dict name -> PatternMatcher */
static PyObject *math_mod;

/* ---- pool ---- */

static void pool_free_buffer(void *pool) {
  Pool *p = pool;
  PyMem_RawFree(p->items);   /* anything still in it (never, after the last release) is leaked, not freed without the GIL */
  *p = (Pool){0};
}
static int pool_grow(Pool *p) {
  Py_ssize_t cap = p->cap ? p->cap * 2 : 256;
  PyObject **items = cap < PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(PyObject *) ? PyMem_RawRealloc(p->items, sizeof(PyObject *) * (size_t)cap) : NULL;
  if (!items) { PyErr_NoMemory(); return -1; }
  if (!p->items) pthread_setspecific(pool_free_key, p);
  p->items = items, p->cap = cap;
  return 0;
}
Py_ssize_t pool_mark(void) { return tls_pool.len; }
/* popped before each release: a destructor that runs rules pushes and releases above the mark */
void pool_release(Py_ssize_t mark) {
  Pool *p = &tls_pool;
  while (p->len > mark) {
    PyObject *o = p->items[--p->len];
    Py_DECREF(o);
  }
}
PyObject *pool_keep(PyObject *o) {
  if (!o) return NULL;
  Pool *p = &tls_pool;
  if (p->len == p->cap && pool_grow(p) < 0) { Py_DECREF(o); return NULL; }
  p->items[p->len++] = o;
  return o;
}

void *pool_alloc(size_t n) {
  if (n > (size_t)PY_SSIZE_T_MAX - 1) { PyErr_NoMemory(); return NULL; }
  PyObject *b = pool_keep(PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n ? n : 1)));
  return b ? PyBytes_AS_STRING(b) : NULL;
}

/* ---- rule sets ---- */

PyObject *native_eval(const char *expr) {
  PyObject *code = Py_CompileString(expr, "<tinyc rule pattern>", Py_eval_input);
  PyObject *ret = code ? PyEval_EvalCode(code, namespace, namespace) : NULL;
  Py_XDECREF(code);
  if (!ret) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_Format(PyExc_RuntimeError, "bad native rule pattern %s: %S", expr, value ? value : Py_None);
    Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
  }
  return ret;
}

PatternMatcher *pm_from_defs(const RuleDef *defs, int n) {
  PyObject *pats = PyList_New(0);
  NativeFn *fns = NULL;
  int count = 0, cap = 0;
  PatternMatcher *pm = NULL;
  if (!pats) return NULL;
  for (int i = 0; i < n; i++) {
    PyObject *loc = defs[i].file ? Py_BuildValue("(si)", defs[i].file, defs[i].line) : NULL;
    if (defs[i].file && !loc) goto end;
    upat_set_native_location(loc);
    PyObject *p = native_eval(defs[i].pattern);
    upat_set_native_location(NULL);
    Py_XDECREF(loc);
    if (!p) goto end;
    PyObject *list = UPat_Check(p) ? PyList_New(0) : PySequence_List(p);
    if (!list || (UPat_Check(p) && PyList_Append(list, p) < 0)) { Py_XDECREF(list); Py_DECREF(p); goto end; }
    Py_DECREF(p);
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(list); k++) {
      if (!UPat_Check(PyList_GET_ITEM(list, k))) { PyErr_Format(PyExc_TypeError, "rule pattern %s is not a UPat", defs[i].pattern); Py_DECREF(list); goto end; }
      if (upat_check_reads((UPat *)PyList_GET_ITEM(list, k), defs[i].reads, defs[i].name, defs[i].pattern) < 0) {
        Py_DECREF(list);
        goto end;
      }
      if (count == cap) {
        cap = cap ? cap * 2 : 64;
        NativeFn *grown = PyMem_Realloc(fns, sizeof(NativeFn) * (size_t)cap);
        if (!grown) { PyErr_NoMemory(); Py_DECREF(list); goto end; }
        fns = grown;
      }
      if (PyList_Append(pats, PyList_GET_ITEM(list, k)) < 0) { Py_DECREF(list); goto end; }
      fns[count++] = defs[i].fn;
    }
    Py_DECREF(list);
  }
  const UPat **arr = PyMem_Malloc(sizeof(UPat *) * (size_t)(count ? count : 1));
  if (!arr) { PyErr_NoMemory(); goto end; }
  for (int i = 0; i < count; i++) arr[i] = (UPat *)Py_NewRef(PyList_GET_ITEM(pats, i));
  pm = pm_new_native(arr, fns, count);
  PyMem_Free(arr);
end:
  Py_DECREF(pats);
  PyMem_Free(fns);
  return pm;
}

UOp *rule_unbound(const char *rule, const char *capture) {
  return (UOp *)PyErr_Format(PyExc_TypeError, "%s() missing 1 required positional argument: '%s'", rule, capture);
}

int native_register(const char *name, PatternMatcher *pm) {
  if (!pm) return -1;
  int rc = PyDict_SetItemString(registry, name, (PyObject *)pm);
  Py_DECREF(pm);
  return rc;
}
PatternMatcher *native_get(const char *name) { return (PatternMatcher *)PyDict_GetItemString(registry, name); }

/* ---- UOp helpers ---- */

UOp *u_alu2(Op op, UOp *a, UOp *b) {
  if (!a || !b) return NULL;
  UOp *src[2] = {a, b};
  return KEEP(uop_alu(op, src, 2));
}
UOp *u_binop(Op op, UOp *a, PyObject *b) {
  if (!a || !b) return NULL;
  UOp *ub = UOp_Check(b) ? (UOp *)b : KEEP(uop_const_like(a, b));
  return u_alu2(op, a, ub);
}
UOp *u_rbinop(Op op, PyObject *a, UOp *b) {
  if (!a || !b) return NULL;
  UOp *ua = KEEP(uop_const_like(b, a));
  return u_alu2(op, ua, b);
}
UOp *u_add(UOp *a, UOp *b) { return u_alu2(OP_ADD, a, b); }
UOp *u_mul(UOp *a, UOp *b) { return u_alu2(OP_MUL, a, b); }
UOp *u_idiv(UOp *a, UOp *b) { return u_alu2(OP_IDIV, a, b); }
UOp *u_mod(UOp *a, UOp *b) { return u_alu2(OP_MOD, a, b); }
UOp *u_and(UOp *a, UOp *b) { return (UOp *)pool_keep(a && b ? PyNumber_And((PyObject *)a, (PyObject *)b) : NULL); }
UOp *u_or(UOp *a, UOp *b) { return (UOp *)pool_keep(a && b ? PyNumber_Or((PyObject *)a, (PyObject *)b) : NULL); }
UOp *u_max(UOp *a, UOp *b) { return u_alu2(OP_MAX, a, b); }
UOp *u_lt(UOp *a, UOp *b) { return u_alu2(OP_CMPLT, a, b); }
UOp *u_ne(UOp *a, UOp *b) { return u_alu2(OP_CMPNE, a, b); }
UOp *u_addi(UOp *a, long long b) { return u_binop(OP_ADD, a, n_int(b)); }
UOp *u_muli(UOp *a, long long b) { return u_binop(OP_MUL, a, n_int(b)); }
UOp *u_idivi(UOp *a, long long b) { return u_binop(OP_IDIV, a, n_int(b)); }
UOp *u_modi(UOp *a, long long b) { return u_binop(OP_MOD, a, n_int(b)); }
UOp *u_lti(UOp *a, long long b) { return u_binop(OP_CMPLT, a, n_int(b)); }
UOp *u_neg(UOp *a) { return (UOp *)pool_keep(a ? PyNumber_Negative((PyObject *)a) : NULL); }
UOp *u_not(UOp *a) { return u_binop(OP_CMPNE, a, Py_True); }
UOp *u_where(UOp *c, UOp *t, UOp *f) {
  if (!c || !t || !f) return NULL;
  UOp *src[3] = {c, t, f};
  return KEEP(uop_alu(OP_WHERE, src, 3));
}
UOp *u_cast(UOp *a, DType *dt) { return (UOp *)pool_keep(a && dt ? UOp_cast(a, (PyObject *)dt) : NULL); }   /* a.cast(dt) */
UOp *u_recip(UOp *a) { return u_unary(OP_RECIPROCAL, a); }
UOp *u_unary(Op op, UOp *a) { return a ? KEEP(uop_alu(op, &a, 1)) : NULL; }
UOp *u_const_like(UOp *a, PyObject *v) { return a && v ? KEEP(uop_const_like(a, v)) : NULL; }
UOp *u_const_likei(UOp *a, long long v) { return u_const_like(a, n_int(v)); }
UOp *u_const(DType *dt, PyObject *v) { return dt && v ? KEEP(uop_const(dt, v)) : NULL; }
UOp *u_new(Op op, DType *dt, UOp *const *src, int n, PyObject *arg) {
  for (int i = 0; i < n; i++) if (!src[i]) return NULL;
  return dt ? KEEP(uop_new(op, dt, src, n, arg, NULL)) : NULL;
}
UOp *u_replace_src(UOp *u, UOp *const *src, int n) {
  for (int i = 0; i < n; i++) if (!src[i]) return NULL;
  return u ? KEEP(uop_new(u->op, u->dtype, src, n, u->arg, uop_tag(u))) : NULL;
}
UOp *u_gep(UOp *a, PyObject *i) { return (UOp *)pool_keep(a && i ? UOp_gep(a, i) : NULL); }   /* a.gep(i) */
UOp *u_sum(UOp *const *xs, int n) {
  UOp *acc = xs[0];
  for (int i = 1; i < n && acc; i++) acc = (UOp *)pool_keep(xs[i] ? PyNumber_Add((PyObject *)acc, (PyObject *)xs[i]) : NULL);
  return acc;
}
UOp *u_broadcast(UOp *a, long n) { return a ? KEEP(uop_broadcast(a, n)) : NULL; }
UOp *u_valid(UOp *a, UOp *cond) { return a && cond ? KEEP(uop_valid(a, cond)) : NULL; }
UOp *u_get_idx(UOp *a) { return a ? KEEP(uop_get_idx(a)) : NULL; }
UOp *u_get_valid(UOp *a) { return a ? KEEP(uop_get_valid(a)) : NULL; }
UOp *u_simplify(UOp *a) { return a ? KEEP(uop_simplify(a)) : NULL; }
UOp *u_substitute(UOp *a, PyObject *dvars) { return a && dvars ? KEEP(uop_substitute(a, dvars)) : NULL; }

/* ---- numbers ---- */

PyObject *vmin(UOp *u) {
  PyObject *lo, *hi;
  return u && uop_min_max(u, &lo, &hi) == 0 ? lo : NULL;
}
PyObject *vmax(UOp *u) {
  PyObject *lo, *hi;
  return u && uop_min_max(u, &lo, &hi) == 0 ? hi : NULL;
}
PyObject *n_int(long long v) { return pool_keep(PyLong_FromLongLong(v)); }
#define NUM2(name, expr) PyObject *name(PyObject *a, PyObject *b) { return a && b ? pool_keep(expr) : NULL; }
NUM2(n_add, PyNumber_Add(a, b))
NUM2(n_sub, PyNumber_Subtract(a, b))
NUM2(n_mul, PyNumber_Multiply(a, b))
NUM2(n_floordiv, PyNumber_FloorDivide(a, b))
NUM2(n_mod, PyNumber_Remainder(a, b))
NUM2(n_cdiv, py_cdiv(a, b))
NUM2(n_cmod, py_cmod(a, b))
NUM2(n_gcd, PyObject_CallMethod(math_mod, "gcd", "OO", a, b))
PyObject *n_neg(PyObject *a) { return a ? pool_keep(PyNumber_Negative(a)) : NULL; }

int n_cmp(PyObject *a, PyObject *b, int op) { return a && b ? compare_bool(a, b, op) : -1; }
int n_lt(PyObject *a, PyObject *b) { return n_cmp(a, b, Py_LT); }
int n_le(PyObject *a, PyObject *b) { return n_cmp(a, b, Py_LE); }
int n_eq(PyObject *a, PyObject *b) { return n_cmp(a, b, Py_EQ); }
int n_cmpi(PyObject *a, int op, long long b) {
  long x;
  if (a && b >= LONG_MIN && b <= LONG_MAX && exact_long(a, &x)) return compare_longs(x, (long)b, op);   /* no int made for b */
  return n_cmp(a, n_int(b), op);
}
int n_lti(PyObject *a, long long b) { return n_cmpi(a, Py_LT, b); }
int n_gti(PyObject *a, long long b) { return n_cmpi(a, Py_GT, b); }
int n_eqi(PyObject *a, long long b) { return n_cmpi(a, Py_EQ, b); }
int n_truth(PyObject *a) { return a ? PyObject_IsTrue(a) : -1; }

/* ---- exec_alu ---- */

/* python_alu[op](*operands): Python's own operators and math functions, with tinygrad's guards */
static PyObject *python_alu(Op op, PyObject *const *v) {
  switch (op) {
  case OP_ADD: return PyNumber_Add(v[0], v[1]);
  case OP_SUB: return PyNumber_Subtract(v[0], v[1]);
  case OP_MUL: return PyNumber_Multiply(v[0], v[1]);
  case OP_NEG: return PyNumber_Negative(v[0]);
  case OP_CMPNE: return PyObject_RichCompare(v[0], v[1], Py_NE);
  case OP_CMPLT: return PyObject_RichCompare(v[0], v[1], Py_LT);
  case OP_CMPEQ: return PyObject_RichCompare(v[0], v[1], Py_EQ);
  case OP_XOR: return PyNumber_Xor(v[0], v[1]);
  case OP_OR: return PyNumber_Or(v[0], v[1]);
  case OP_AND: return PyNumber_And(v[0], v[1]);
  case OP_SHR: return PyNumber_Rshift(v[0], v[1]);
  case OP_SHL: return PyNumber_Lshift(v[0], v[1]);
  case OP_MAX: { int r = compare_bool(v[1], v[0], Py_GT); return r < 0 ? NULL : Py_NewRef(r ? v[1] : v[0]); }
  case OP_MOD: return py_cmod(v[0], v[1]);
  case OP_IDIV: return py_cdiv(v[0], v[1]);
  case OP_MULACC: { PyObject *p = PyNumber_Multiply(v[0], v[1]), *r = p ? PyNumber_Add(p, v[2]) : NULL; Py_XDECREF(p); return r; }
  case OP_WHERE: { int t = PyObject_IsTrue(v[0]); return t < 0 ? NULL : Py_NewRef(t ? v[1] : v[2]); }
  case OP_TRUNC: return PyObject_CallMethod(math_mod, "trunc", "O", v[0]);
  default: break;
  }
  double x = PyFloat_AsDouble(v[0]);
  if (x == -1.0 && PyErr_Occurred()) return NULL;
  switch (op) {
  case OP_LOG2: return x > 0 ? PyObject_CallMethod(math_mod, "log2", "O", v[0]) : PyFloat_FromDouble(x == 0 ? -INFINITY : NAN);
  case OP_EXP2: {   /* 2 ** x, inf on overflow */
    PyObject *two = PyLong_FromLong(2), *r = two ? PyNumber_Power(two, v[0], Py_None) : NULL;
    Py_XDECREF(two);
    if (!r && PyErr_ExceptionMatches(PyExc_OverflowError)) { PyErr_Clear(); return PyFloat_FromDouble(INFINITY); }
    return r;
  }
  case OP_SQRT: return x >= 0 ? PyObject_CallMethod(math_mod, "sqrt", "O", v[0]) : PyFloat_FromDouble(NAN);
  case OP_RECIPROCAL: {
    if (x == 0) return PyFloat_FromDouble(copysign(INFINITY, x));
    PyObject *one = PyLong_FromLong(1), *r = one ? PyNumber_TrueDivide(one, v[0]) : NULL;
    Py_XDECREF(one);
    return r;
  }
  case OP_SIN: return isinf(x) ? PyFloat_FromDouble(NAN) : PyObject_CallMethod(math_mod, "sin", "O", v[0]);
  case OP_POW: {   /* safe_pow: complex -> nan, 0**-1 -> inf, domain errors -> +-inf */
    PyObject *r = PyNumber_Power(v[0], v[1], Py_None);
    if (r && PyComplex_Check(r)) { Py_DECREF(r); return PyFloat_FromDouble(NAN); }
    if (!r && PyErr_ExceptionMatches(PyExc_ZeroDivisionError)) { PyErr_Clear(); return PyFloat_FromDouble(INFINITY); }
    if (!r && PyErr_ExceptionMatches(PyExc_ValueError)) { PyErr_Clear(); return PyFloat_FromDouble(x > 0 ? INFINITY : -INFINITY); }
    return r;
  }
  default: return PyErr_Format(PyExc_KeyError, "no python alu for %U", ops_str[op]);
  }
}

PyObject *exec_alu(Op op, DType *dtype, PyObject *const *operands, int n, bool truncate_output) {
  if (n < 1 || n > 3) return PyErr_Format(PyExc_TypeError, "exec_alu takes 1 to 3 operands, got %d", n);
  if (dtype->count > 1 && dtype_scalar(dtype)->count > 1)   /* a pointer to vectors is its own scalar: tinygrad recurses forever */
    return PyErr_Format(PyExc_RuntimeError, "exec_alu: %R has no scalar lanes to compute on", (PyObject *)dtype);
  if (dtype->count > 1) {   /* lane by lane; scalar operands broadcast */
    PyObject *out = PyTuple_New(dtype->count), *lane[3];
    for (int i = 0; out && i < dtype->count; i++) {
      for (int k = 0; k < n; k++) lane[k] = PyTuple_Check(operands[k]) ? PySequence_GetItem(operands[k], i) : Py_NewRef(operands[k]);
      bool ok = true;
      for (int k = 0; k < n; k++) ok &= lane[k] != NULL;
      PyObject *r = ok ? exec_alu(op, dtype_scalar(dtype), lane, n, true) : NULL;
      for (int k = 0; k < n; k++) Py_XDECREF(lane[k]);
      if (!r) { Py_CLEAR(out); break; }
      PyTuple_SET_ITEM(out, i, r);
    }
    return out;
  }
  if (dtype == DTYPE(INDEX) && IN_GROUP(op, Binary))
    for (int k = 0; k < n; k++) if (operands[k] == Invalid) return Py_NewRef(Invalid);
  PyObject *r = python_alu(op, operands);
  if (!r || !truncate_output) return r;
  PyObject *t = dtype_truncate(dtype, r);
  Py_DECREF(r);
  return t;
}

/* a copy: C reads the registry's rule sets by name, unchecked, so Python may not replace them */
static PyObject *py_native_rules(PyObject *mod, PyObject *unused) { UNUSED(mod); UNUSED(unused); return PyDict_Copy(registry); }

static PyObject *py_exec_alu(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"op", "dtype", "operands", "truncate_output", NULL};
  PyObject *op_obj, *operands;
  DType *dt;
  int truncate_output = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO!O|p:exec_alu", kwlist, &op_obj, &DType_Type, &dt, &operands, &truncate_output))
    return NULL;
  int op = op_from_object(op_obj);
  PyObject *seq = op < 0 ? NULL : PySequence_Fast(operands, "exec_alu operands must be a sequence");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject *ret = n < 1 || n > 3 ? PyErr_Format(PyExc_ValueError, "exec_alu takes 1 to 3 operands")
                                 : exec_alu(op, dt, PySequence_Fast_ITEMS(seq), (int)n, truncate_output);
  Py_DECREF(seq);
  return ret;
}

/* ---- a test hook: the table check on a pattern of the caller's ---- */

/* x + y, for the tests of pm_from_defs's check; the RULE_MAYBE one may find y unbound */
RULE(test_add_x_y, x, y) { return u_add(x, y); }
RULE_MAYBE(test_add_x_maybe_y, (x), y) { return u_add(x, y); }

/* _rule_table(pattern, maybe=False): pm_from_defs of the one rule R(pattern, test_add_x_y) (or the RULE_MAYBE) */
static PyObject *py_rule_table(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  const char *pattern;
  int maybe = 0;
  if (!PyArg_ParseTuple(args, "s|p:_rule_table", &pattern, &maybe)) return NULL;
  RuleDef defs[2] = {R(NULL, test_add_x_y), R(NULL, test_add_x_maybe_y)};
  defs[maybe].pattern = pattern;
  return (PyObject *)pm_from_defs(&defs[maybe], 1);
}

static PyMethodDef native_functions[] = {
  {"native_rules", py_native_rules, METH_NOARGS, "the native rule sets by name"},
  {"exec_alu", (PyCFunction)(void (*)(void))py_exec_alu, METH_VARARGS | METH_KEYWORDS, "exec_alu(op, dtype, operands, truncate_output=True)"},
  {"_rule_table", py_rule_table, METH_VARARGS, "for tests: a matcher of one native rule that reads x and y, on a given pattern"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_native(PyObject *m) {
  if (pthread_key_create(&pool_free_key, pool_free_buffer) != 0) { PyErr_SetString(PyExc_RuntimeError, "no thread key for the rule pool"); return -1; }
  if (!(registry = PyDict_New()) || !(math_mod = PyImport_ImportModule("math"))) return -1;
  if (!(namespace = PyDict_New()) || PyDict_SetItemString(namespace, "__builtins__", PyEval_GetBuiltins()) < 0) return -1;
  static const char *const names[] = {"UPat", "Ops", "GroupOp", "dtypes", "Invalid", "PtrDType", "AddrSpace", "AxisType", NULL};
  for (int i = 0; names[i]; i++) {
    PyObject *v = PyObject_GetAttrString(m, names[i]);
    if (!v || PyDict_SetItemString(namespace, names[i], v) < 0) { Py_XDECREF(v); return -1; }
    Py_DECREF(v);
  }
  return PyModule_AddFunctions(m, native_functions);
}
