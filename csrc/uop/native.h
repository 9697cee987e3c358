/* Writing rewrite rules in C. A rule is data: a pattern written as tinygrad's rule files write it
 * (a UPat expression, evaluated once at import against tinyc's UPat/Ops/dtypes), and one small C
 * function, a RULE (below), that gets the captures it names (x, c1, ...) and returns a borrowed UOp, NULL
 * for "no rewrite" (tinygrad's None), or NULL with an exception set.
 *
 * Inside a rule every helper below returns a borrowed reference owned by the rule's pool, which the
 * engine empties after the rule returns; helpers take NULL as "an error happened earlier" and pass it
 * on, so rule bodies nest calls the way tinygrad's lambdas do: RULE(f, x, y, c) { return u_add(y, u_mul(x, c)); } */
#ifndef TINYC_NATIVE_H
#define TINYC_NATIVE_H
#include "upat.h"

/* RULE(name, x, c1) { ... } defines the rule `name` as tinygrad's `lambda x, c1: ...`: the body sees the
 * captures it names as `UOp *x, *c1` (and the rewrite's ctx), so reading a capture it did not name does not
 * compile; name_reads records the names (as capture slots), and pm_from_defs checks at import that the
 * rule's pattern binds each of them on every match. name itself is the NativeFn the engine calls. */
#define RULE(name, ...)                                                                                        \
  static UOp *name##_body(PyObject *ctx RULE_EACH(RULE_PARAM, __VA_ARGS__));                                   \
  static const int name##_reads[] __attribute__((unused)) = {RULE_EACH(RULE_SLOT, __VA_ARGS__) -1, -1};        \
  static UOp *name(Captures *m __attribute__((unused)), PyObject *ctx) {                                       \
    return name##_body(ctx RULE_EACH(RULE_ARG, __VA_ARGS__));                                                  \
  }                                                                                                            \
  static UOp *name##_body(PyObject *ctx __attribute__((unused)) RULE_EACH(RULE_PARAM, __VA_ARGS__))
/* RULE_MAYBE(name, (x), y) { ... }: a rule whose pattern binds y only on some matches (a name under a repeated
 * source, as in tinygrad's broadcast patterns: a node with no sources binds nothing there). Where y is
 * unbound the call is tinygrad's lambda missing an argument, a TypeError; the body never sees it NULL. */
#define RULE_MAYBE(name, always, ...)                                                                          \
  static UOp *name##_body(PyObject *ctx RULE_EACH(RULE_PARAM, RULE_UNPAREN always) RULE_EACH(RULE_PARAM, __VA_ARGS__)); \
  static const int name##_reads[] __attribute__((unused)) = {                                                  \
      RULE_EACH(RULE_SLOT, RULE_UNPAREN always) -1, RULE_EACH(RULE_SLOT, __VA_ARGS__) -1};                     \
  static UOp *name(Captures *m, PyObject *ctx) {                                                               \
    RULE_EACH(RULE_NEED, __VA_ARGS__)                                                                          \
    return name##_body(ctx RULE_EACH(RULE_ARG, RULE_UNPAREN always) RULE_EACH(RULE_ARG, __VA_ARGS__));         \
  }                                                                                                            \
  static UOp *name##_body(PyObject *ctx __attribute__((unused)) RULE_EACH(RULE_PARAM, RULE_UNPAREN always)     \
                          RULE_EACH(RULE_PARAM, __VA_ARGS__))
/* RULE_SHARED: a RULE other files' rule sets use too (declare it in a header with RULE_DECLARE) */
#define RULE_SHARED(name, ...)                                                                                 \
  static UOp *name##_body(PyObject *ctx RULE_EACH(RULE_PARAM, __VA_ARGS__));                                   \
  const int name##_reads[] = {RULE_EACH(RULE_SLOT, __VA_ARGS__) -1, -1};                                       \
  UOp *name(Captures *m __attribute__((unused)), PyObject *ctx) { return name##_body(ctx RULE_EACH(RULE_ARG, __VA_ARGS__)); } \
  static UOp *name##_body(PyObject *ctx __attribute__((unused)) RULE_EACH(RULE_PARAM, __VA_ARGS__))
#define RULE_DECLARE(name) UOp *name(Captures *m, PyObject *ctx); extern const int name##_reads[]
#define RULE_NEED(x) if (!m->x) return rule_unbound(__func__, #x);
#define RULE_UNPAREN(...) __VA_ARGS__
/* the TypeError of a RULE_MAYBE called without one of its captures: NULL */
UOp *rule_unbound(const char *rule, const char *capture);
#define RULE_PARAM(x) , UOp *x
#define RULE_ARG(x) , m->x
#define RULE_SLOT(x) CAP_##x,
/* RULE_EACH(F, a, b, ...) is F(a) F(b) ...: up to 8 captures a rule */
#define RULE_EACH(F, ...) RULE_CAT(RULE_EACH_, RULE_COUNT(__VA_ARGS__))(F __VA_OPT__(,) __VA_ARGS__)
#define RULE_COUNT(...) RULE_COUNT_(_ __VA_OPT__(,) __VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define RULE_COUNT_(_, a1, a2, a3, a4, a5, a6, a7, a8, n, ...) n
#define RULE_CAT(a, b) RULE_CAT_(a, b)
#define RULE_CAT_(a, b) a##b
#define RULE_EACH_0(F)
#define RULE_EACH_1(F, a) F(a)
#define RULE_EACH_2(F, a, ...) F(a) RULE_EACH_1(F, __VA_ARGS__)
#define RULE_EACH_3(F, a, ...) F(a) RULE_EACH_2(F, __VA_ARGS__)
#define RULE_EACH_4(F, a, ...) F(a) RULE_EACH_3(F, __VA_ARGS__)
#define RULE_EACH_5(F, a, ...) F(a) RULE_EACH_4(F, __VA_ARGS__)
#define RULE_EACH_6(F, a, ...) F(a) RULE_EACH_5(F, __VA_ARGS__)
#define RULE_EACH_7(F, a, ...) F(a) RULE_EACH_6(F, __VA_ARGS__)
#define RULE_EACH_8(F, a, ...) F(a) RULE_EACH_7(F, __VA_ARGS__)

/* One table entry: the pattern and the RULE that rewrites it, with its reads, its name, and where the entry is written
 * (the UPats of the pattern carry that C file and line as their location, as tinygrad's carry their Python line). */
typedef struct { const char *pattern; NativeFn fn; const int *reads; const char *name; const char *file; int line; } RuleDef;
#define R(pattern, fn) {pattern, fn, fn##_reads, #fn, __FILE__, __LINE__}
#define N(defs) ((int)(sizeof(defs) / sizeof((defs)[0])))

/* A matcher from rule definitions; a pattern may evaluate to one UPat or a list of them (one rule each).
 * A RuntimeError naming the rule and its pattern when a pattern does not bind a capture its rule reads. */
PatternMatcher *pm_from_defs(const RuleDef *defs, int n);
/* Named rule sets, visible to Python as tinyc._C.native_rules()[name]; register steals the reference. */
int native_register(const char *name, PatternMatcher *pm);
PatternMatcher *native_get(const char *name);   /* borrowed, NULL if not registered */
/* Evaluate a pattern expression in the rule namespace (for patterns shared between rules). */
PyObject *native_eval(const char *expr);

/* ---- the pool ---- */
Py_ssize_t pool_mark(void);
void pool_release(Py_ssize_t mark);
PyObject *pool_keep(PyObject *o);       /* steals o into the pool; returns it borrowed (NULL stays NULL) */
#define KEEP(u) ((UOp *)pool_keep((PyObject *)(u)))
/* n bytes of scratch memory that live until the pool is released (NULL with MemoryError): a rule's arrays whose
 * size comes from the graph, instead of variable-length arrays on the stack (the build forbids those: -Wvla) */
void *pool_alloc(size_t n);

/* ---- UOp helpers (borrowed, pooled; NULL propagates) ---- */
/* u.src[i] where the form table (form.h) does not promise it: IndexError as Python's tuple indexing raises */
static inline UOp *u_src(UOp *u, int i) {
  if (!u) return NULL;
  if (i >= 0 && i < (int)u->nsrc) return u->src[i];
  PyErr_Format(PyExc_IndexError, "Ops.%s has %d sources, source %d was asked for", op_names[u->op], (int)u->nsrc, i);
  return NULL;
}
UOp *u_alu2(Op op, UOp *a, UOp *b);              /* a.alu(op, b) */
UOp *u_binop(Op op, UOp *a, PyObject *b);         /* a <op> b, with b promoted as tinygrad's ufix */
UOp *u_rbinop(Op op, PyObject *a, UOp *b);        /* a <op> b, a a Python number */
UOp *u_add(UOp *a, UOp *b);
UOp *u_mul(UOp *a, UOp *b);
UOp *u_idiv(UOp *a, UOp *b);
UOp *u_mod(UOp *a, UOp *b);
UOp *u_and(UOp *a, UOp *b);
UOp *u_or(UOp *a, UOp *b);
UOp *u_max(UOp *a, UOp *b);
UOp *u_lt(UOp *a, UOp *b);
UOp *u_ne(UOp *a, UOp *b);
UOp *u_addi(UOp *a, long long b);                 /* a + b */
UOp *u_muli(UOp *a, long long b);                 /* a * b */
UOp *u_idivi(UOp *a, long long b);
UOp *u_modi(UOp *a, long long b);
UOp *u_lti(UOp *a, long long b);
UOp *u_neg(UOp *a);                               /* -a (logical not for bools) */
UOp *u_not(UOp *a);                               /* a.logical_not() */
UOp *u_where(UOp *c, UOp *t, UOp *f);
UOp *u_cast(UOp *a, DType *dt);
UOp *u_recip(UOp *a);
UOp *u_unary(Op op, UOp *a);
UOp *u_const_like(UOp *a, PyObject *v);           /* a.const_like(v) */
UOp *u_const_likei(UOp *a, long long v);
UOp *u_const(DType *dt, PyObject *v);             /* UOp.const(dt, v) */
UOp *u_new(Op op, DType *dt, UOp *const *src, int n, PyObject *arg);
UOp *u_replace_src(UOp *u, UOp *const *src, int n);
UOp *u_gep(UOp *a, PyObject *i);                  /* a.gep(i) */
UOp *u_sum(UOp *const *xs, int n);                /* UOp.sum: x0 + x1 + ... (n >= 1) */
UOp *u_broadcast(UOp *a, long n);                 /* a.broadcast(n) */
UOp *u_valid(UOp *a, UOp *cond);                  /* a.valid(cond) */
UOp *u_get_idx(UOp *a);                           /* a.get_idx() */
UOp *u_get_valid(UOp *a);                         /* a.get_valid() */
UOp *u_simplify(UOp *a);                          /* a.simplify() */
UOp *u_substitute(UOp *a, PyObject *dvars);       /* a.substitute(dict) */
/* symbolic.py's uop_given_valid(valid, uop, try_simplex): uop simplified where valid holds (borrowed, pooled) */
UOp *uop_given_valid(UOp *valid, UOp *uop, bool simplex);
/* symbolic.py's parse_valid(v): 1 with X <= c (*is_upper) or X >= c (c pooled), 0 when v is neither, -1 on error */
int uop_parse_valid(UOp *v, UOp **X, bool *is_upper, PyObject **c);

/* ---- numbers (Python ints/floats/bools, borrowed and pooled; NULL propagates) ---- */
PyObject *vmin(UOp *u);
PyObject *vmax(UOp *u);
PyObject *n_int(long long v);
PyObject *n_add(PyObject *a, PyObject *b);
PyObject *n_sub(PyObject *a, PyObject *b);
PyObject *n_mul(PyObject *a, PyObject *b);
PyObject *n_floordiv(PyObject *a, PyObject *b);  /* Python // */
PyObject *n_mod(PyObject *a, PyObject *b);       /* Python % */
PyObject *n_cdiv(PyObject *a, PyObject *b);      /* tinygrad's cdiv (truncating) */
PyObject *n_cmod(PyObject *a, PyObject *b);
PyObject *n_neg(PyObject *a);
PyObject *n_gcd(PyObject *a, PyObject *b);
/* comparisons: 1 true, 0 false, -1 error (and on NULL input) */
int n_lt(PyObject *a, PyObject *b);
int n_le(PyObject *a, PyObject *b);
int n_eq(PyObject *a, PyObject *b);
int n_cmp(PyObject *a, PyObject *b, int op);    /* a <op> b, op as Py_LT ... Py_GE */
int n_cmpi(PyObject *a, int op, long long b);   /* the same against a C integer */
int n_lti(PyObject *a, long long b);
int n_gti(PyObject *a, long long b);
int n_eqi(PyObject *a, long long b);
int n_truth(PyObject *a);
#define N_TRUE(expr) ((expr) > 0)   /* an error reads as false; the engine sees the exception afterwards */

/* tinygrad's exec_alu(op, dtype, operands, truncate_output): new reference */
PyObject *exec_alu(Op op, DType *dtype, PyObject *const *operands, int n, bool truncate_output);

/* spec.c: type_verify(ast, <the native rule set spec_name>) when SPEC is on (tinygrad's `if SPEC: type_verify(...)`);
 * ast is a UOp (checked in toposort order) or a list of UOps. 0, or -1 with the RuntimeError naming the node. */
int spec_check(PyObject *ast, const char *spec_name);

int tinyc_init_native(PyObject *m);
/* the rule files of uop/, each registering its rule sets (module.c calls them after native, each after those it uses) */
int tinyc_init_eval(PyObject *m);            /* ops_eval.c */
int tinyc_init_divandmod(PyObject *m);       /* divandmod.c */
int tinyc_init_symbolic(PyObject *m);        /* symbolic.c */
int tinyc_init_symbolic_sym(PyObject *m);    /* symbolic_sym.c */
int tinyc_init_renderer(PyObject *m);        /* renderer.c */
int tinyc_init_spec(PyObject *m);            /* spec.c */

#endif
