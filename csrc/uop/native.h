/* Writing rewrite rules in C. A rule is data: a pattern written as tinygrad's rule files write it
 * (a UPat expression, evaluated once at import against tinyc's UPat/Ops/dtypes), and one small C
 * function. The function gets the captures (m->x, m->c1, ...) and returns a borrowed UOp, NULL for
 * "no rewrite" (tinygrad's None), or NULL with an exception set.
 *
 * Inside a rule every helper below returns a borrowed reference owned by the rule's pool, which the
 * engine empties after the rule returns; helpers take NULL as "an error happened earlier" and pass it
 * on, so rule bodies nest calls the way tinygrad's lambdas do: return u_add(m->y, u_mul(m->x, m->c)). */
#ifndef TINYC_NATIVE_H
#define TINYC_NATIVE_H
#include "upat.h"

typedef struct { const char *pattern; NativeFn fn; } RuleDef;
#define N(defs) ((int)(sizeof(defs) / sizeof((defs)[0])))

/* A matcher from rule definitions; a pattern may evaluate to one UPat or a list of them (one rule each). */
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

/* ---- UOp helpers (borrowed, pooled; NULL propagates) ---- */
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
UOp *u_simplify(UOp *a);                          /* a.simplify() */
UOp *u_substitute(UOp *a, PyObject *dvars);       /* a.substitute(dict) */
/* symbolic.py's uop_given_valid(valid, uop, try_simplex): uop simplified where valid holds (borrowed, pooled) */
UOp *uop_given_valid(UOp *valid, UOp *uop, bool simplex);

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
