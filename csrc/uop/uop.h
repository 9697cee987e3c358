/* The UOp core: the UOp type (tinygrad/uop/ops.py), over the ops enum of ops_enum.h (tinygrad/uop/__init__.py). */
#ifndef TINYC_UOP_H
#define TINYC_UOP_H
#include "../tinyc.h"
#include "../dtype.h"
#include "ops_enum.h"
#include "../helpers.h"

/* ---- UOp ---- */

/* Rarely-set or derived fields live outside the node, made on first need, to keep a node small. */
typedef struct UOpExtra {
  PyObject *tag;        /* NULL for None */
  PyObject *vmin;       /* cached range bounds, NULL until computed */
  PyObject *vmax;
  PyObject *key;        /* cached content hash (bytes) */
  PyObject *bslice;     /* cached backward_slice dict (without the node: no reference cycle) */
  uint8_t no_fold;      /* UOP_NO_FOLD_*: node-only functions known to answer None here (tinygrad memoizes them) */
} UOpExtra;

/* UOpExtra.no_fold: fold_divmod_general(d, correct) gave None, for correct false / true. Only the None answers are
 * kept: a result would hold a graph from the node's extra, and it costs only its one call to make again. */
enum { UOP_NO_FOLD_DIVMOD = 1, UOP_NO_FOLD_DIVMOD_CORRECT = 2 };

typedef struct UOp {
  PyObject_HEAD
  uint32_t op : 7;       /* Op (OP_COUNT <= 128) */
  uint32_t flags : 3;    /* UOP_FLAG_* */
  uint32_t nsrc : 22;    /* up to UOP_MAX_SRC: a LINEAR holds every uop of a kernel */
  uint32_t hash;         /* hash of (op, dtype, src, arg, tag) for the intern table */
  DType *dtype;          /* borrowed: dtypes are immortal */
  PyObject *arg;         /* owned, never NULL (Py_None) */
  UOpExtra *extra;       /* NULL when the tag is None and nothing is cached */
  uint32_t rw_id : 8;    /* graph_rewrite's scratch: the rewrite that last touched the node (0: none) */
  uint32_t rw_idx : 24;  /* and the node's entry in that rewrite's table (see rewrite.c) */
  uint32_t ops_below;    /* op_bit of the node's op and of every op below it: a rewrite skips a subgraph where no rule
                          * of its matcher can fire (a node is immutable, so this is made once) */
  struct UOp *src[];     /* owned */
} UOp;

#define UOP_MAX_SRC ((1 << 22) - 1)
/* node flags: a DEVICE op is in the backward slice (_device needs a walk); a walk has finished the node (scratch);
 * the node or one below it is malformed (form.h: native code reads neither) */
enum { UOP_FLAG_HAS_DEVICE = 1, UOP_FLAG_VISITED = 2, UOP_FLAG_MALFORMED = 4 };

extern PyTypeObject UOp_Type;
#define UOp_Check(o) (Py_TYPE(o) == &UOp_Type)

static inline PyObject *uop_tag(const UOp *u) { return (u->extra && u->extra->tag) ? u->extra->tag : Py_None; }

/* The one constructor: returns the live equal UOp if there is one, else a new one (hash-consing).
 * src items are borrowed; arg/tag borrowed, NULL means None. New reference, NULL on error. */
UOp *uop_new(Op op, DType *dtype, UOp *const *src, Py_ssize_t nsrc, PyObject *arg, PyObject *tag);
/* Convenience for fixed arity. */
UOp *uop_new0(Op op, DType *dtype, PyObject *arg);
UOp *uop_new1(Op op, DType *dtype, UOp *a, PyObject *arg);
UOp *uop_new2(Op op, DType *dtype, UOp *a, UOp *b, PyObject *arg);
/* u with one more source at the end (tinygrad's u.replace(src=u.src+(extra,), arg=arg)); arg NULL keeps u's.
 * New reference, NULL when extra is NULL (an error before) or on error. */
UOp *uop_append_src(UOp *u, UOp *extra, PyObject *arg);
UOp *uop_new3(Op op, DType *dtype, UOp *a, UOp *b, UOp *c, PyObject *arg);

/* tinygrad's UOp.const(dtype, b) for a Python number / tuple / Invalid (no device, no shape). */
UOp *uop_const(DType *dtype, PyObject *b);
UOp *uop_const_int(DType *dtype, long long v);
/* tinygrad's self.alu(op, *src): dtype from the last operand, bool for comparisons. */
UOp *uop_alu(Op op, UOp *const *src, Py_ssize_t nsrc);
/* self.const_like(b) */
UOp *uop_const_like(UOp *self, PyObject *b);

/* The UOpExtra of a node, made if missing; NULL with MemoryError. */
UOpExtra *uop_extra(UOp *u);

/* A Python int (not a bool: Python's bools add up to ints) that fits in 64 bits, as a C integer. Numbers stay Python's,
 * but where every number of a question fits, range analysis and the div/mod folder ask it in 128-bit arithmetic (no
 * sum or product of two such numbers overflows it) and go on with Python's numbers otherwise. */
typedef __int128 wide;
static inline bool as_int64(PyObject *o, long long *out) {
  if (!PyLong_CheckExact(o)) return false;
  int overflow;
  *out = PyLong_AsLongLongAndOverflow(o, &overflow);
  return !overflow;
}

/* Range analysis (vmin/vmax), cached per node, computed without recursion. Borrowed refs, NULL on error. */
int uop_min_max(UOp *u, PyObject **vmin, PyObject **vmax);

/* Toposort as tinygrad's: a list (new ref) of the nodes, sources first. gate may be NULL. */
PyObject *uop_toposort_list(UOp *root, PyObject *gate);

/* tinygrad's a.tuplize vs b.tuplize: ORD_EQUAL, ORD_LESS or ORD_NOT_LESS; -1 with an exception. */
typedef enum { ORD_EQUAL, ORD_LESS, ORD_NOT_LESS } TupleOrder;
int uop_tuplize_order(UOp *a, UOp *b);
/* the first step of it: the order of the (op value, arg, dtype) heads alone */
int uop_head_order(UOp *a, UOp *b);
/* One step of Python's tuple comparison: ORD_EQUAL when a == b, else whether a < b; -1 on error. */
int py_value_order(PyObject *a, PyObject *b);

/* tinygrad's u.ranges: the RANGEs u is inside of, a dict borrowed from memo (node -> ranges dict),
 * which a caller frees with uop_ranges_memo_free once done; NULL with an exception. */
PyObject *uop_ranges(UOp *u, PtrMap *memo);
void uop_ranges_memo_free(PtrMap *memo);
/* tinygrad's range_start: the first source of op that is a range it ends, -1 for ops that end none */
int uop_range_start(Op op);

/* u.cast(dtype) and u.gep(i) as the methods (ops_sugar.c), for C callers: new reference */
PyObject *UOp_cast(UOp *self, PyObject *dtype);
PyObject *UOp_gep(UOp *self, PyObject *i);
PyObject *uop_broadcast(UOp *self, long count);   /* u.broadcast(count) */

/* ---- the UOp methods native code calls, in C (each Python method calls its function here) ----
 * New references unless said otherwise; NULL (or -1) with an exception set on error. */
/* u.split_uop(sep): the leaves of a tree of sep ops, left to right, appended to out (borrowed: they live under u) */
int uop_split_uop(UOp *u, Op sep, PtrVec *out);
PyObject *uop_backward_slice(UOp *u);                /* u.backward_slice: a dict (borrowed: cached on u) */
PyObject *uop_split_uop_list(UOp *u, Op sep);       /* list(u.split_uop(sep)) */
PyObject *uop_const_factor(UOp *u);                 /* u.const_factor(): a Python int */
PyObject *uop_divides(UOp *u, PyObject *v);         /* u.divides(v): the quotient UOp, or None */
PyObject *uop_gcd(PyObject *uops);                  /* UOp.gcd(*uops) of a tuple of UOps */
/* UOp.gcd(*uops), or None when it is surely 1 * CONST(1) (no shared leaf, coprime const factors: its simplify() is
 * CONST 1), told from its parts without building it */
PyObject *uop_gcd_unless_one(PyObject *uops);
int uop_overflows(UOp *u, DType *dtype);            /* u.overflows(dtype): 1, 0, or -1 */
UOp *uop_bind(UOp *var, PyObject *val);             /* var.bind(val), val an int or a UOp */
PyObject *uop_unbind(UOp *u);                       /* u.unbind(): the (variable, value) tuple */
PyObject *uop_sym_infer(UOp *u, PyObject *var_vals);   /* u.sym_infer(var_vals) */
UOp *uop_simplify(UOp *u);                          /* u.simplify(): graph_rewrite(u, symbolic) */
PyObject *uop_ssimplify(UOp *u);                    /* u.ssimplify(): the simplified UOp, or the CONST's value */
UOp *uop_substitute(UOp *u, PyObject *dvars);       /* u.substitute(dvars), dvars a dict */
/* A rule that reads only its node and ctx: u itself where it does not fire, else what u becomes (a reference kept in
 * keep until the rewrite ends); NULL on error. */
typedef UOp *(*RewriteStep)(PyObject *ctx, UOp *u, PtrVec *keep);
/* graph_rewrite(root, [step], ctx, bottom_up=True) without the rewrite engine; rule_ops: op_bit of each op step may
 * fire on (ops_eval.c) */
UOp *bottom_up_walk(UOp *root, PyObject *ctx, RewriteStep step, uint32_t rule_ops);
PyObject *uop_render(UOp *u, bool simplify);        /* u.render(simplify): str, or None where no rule renders it */
UOp *uop_invalid(int count);                        /* UOp.invalid(count) */
UOp *uop_valid(UOp *u, UOp *cond);                  /* u.valid(cond) */
UOp *uop_get_idx(UOp *u);                           /* u.get_idx() */
UOp *uop_get_valid(UOp *u);                         /* u.get_valid() */

/* The number of live interned UOps (for tests of weak interning). */
Py_ssize_t uop_intern_count(void);

/* u.simplify() (ops_eval.c): graph_rewrite(u, symbolic), a new reference */
UOp *uop_simplify(UOp *u);

/* tinygrad's cdiv (truncating toward zero, 0 for a zero divisor) and cmod on Python ints (ops_range.c): new references */
PyObject *py_cdiv(PyObject *x, PyObject *y);
PyObject *py_cmod(PyObject *x, PyObject *y);

/* tinygrad's u._device: the device of the first DEVICE found through the sources, None when there is none. New ref. */
PyObject *uop_device(UOp *u);

/* UOp's own __bool__, __int__ and __float__ (ops_range.c): the value of a node that evaluates to a constant. */
int uop_bool(UOp *self);
PyObject *uop_int(UOp *self);
PyObject *uop_float(UOp *self);

/* The methods and properties of the other UOp files, merged into UOp's tables at init (ops.c), and their inits. */
extern PyMethodDef uop_sugar_methods[];      /* ops_sugar.c */
extern PyMethodDef uop_range_methods[];      /* ops_range.c */
extern PyGetSetDef uop_range_getset[];
extern PyMethodDef uop_eval_methods[];       /* ops_eval.c */
extern PyMethodDef uop_renderer_methods[];   /* renderer.c */
int tinyc_init_uop(PyObject *m);
int tinyc_init_uop_sugar(PyObject *m);
int tinyc_init_uop_range(PyObject *m);

#endif
