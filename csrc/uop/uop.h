/* The UOp core: the ops enum (tinygrad/uop/__init__.py) and the UOp type (tinygrad/uop/ops.py). */
#ifndef TINYC_UOP_H
#define TINYC_UOP_H
#include "../tinyc.h"
#include "../dtype.h"
#include "ops_list.h"
#include "../helpers.h"

/* ---- ops (uop/__init__.py) ---- */

typedef enum {
  OP_NONE = 0,               /* values start at 1, as tinygrad's auto() */
#define X(name) OP_##name,
  OPS_LIST(X)
#undef X
  OP_COUNT
} Op;
_Static_assert(OP_COUNT <= 128, "a UOp stores its op in 7 bits");

extern const char *const op_names[OP_COUNT];   /* "ADD", ... ; op_names[0] is NULL */
extern PyObject *ops_members[OP_COUNT];        /* the tinyc.Ops members, borrowed */
extern PyObject *Ops_Type;                     /* the tinyc.Ops IntEnum class */
extern PyObject *ops_str[OP_COUNT];            /* "Ops.ADD", ...: str() of each member, made once */

/* A set of ops as a bit set: GroupOp's groups, pattern early-reject sets. */
typedef struct { uint64_t bits[2]; } OpSet;
static inline bool opset_has(OpSet s, int op) { return (s.bits[op >> 6] >> (op & 63)) & 1; }
static inline void opset_add(OpSet *s, int op) { s->bits[op >> 6] |= (uint64_t)1 << (op & 63); }

/* GroupOp, with tinygrad's members (filled at init from ops_enum.c's tables). */
typedef enum {
  GROUP_Unary, GROUP_Binary, GROUP_Ternary, GROUP_ALU, GROUP_Elementwise, GROUP_Defines, GROUP_Irreducible,
  GROUP_Movement, GROUP_Buffer, GROUP_Commutative, GROUP_Associative, GROUP_Idempotent, GROUP_Comparison,
  GROUP_UnsafePad, GROUP_All, GROUP_COUNT
} GroupId;
extern OpSet group_ops[GROUP_COUNT];
#define IN_GROUP(op, G) opset_has(group_ops[GROUP_##G], (op))

/* Op from a Python object (an Ops member or an int in range); -1 with TypeError/ValueError set. */
int op_from_object(PyObject *o);

/* AxisType (uop/ops.py), values from 1 in tinygrad's order */
#define AXIS_TYPES(X) X(GLOBAL) X(WARP) X(LOCAL) X(LOOP) X(GROUP_REDUCE) X(REDUCE) X(UPCAST) X(UNROLL) \
  X(THREAD) X(OUTER) X(PLACEHOLDER)
typedef enum {
  AXIS_NONE = 0,
#define X(name) AXIS_##name,
  AXIS_TYPES(X)
#undef X
  AXIS_COUNT
} AxisTypeId;
extern PyObject *axistype_members[AXIS_COUNT];  /* borrowed */

/* ---- UOp ---- */

/* Rarely-set or derived fields live outside the node, made on first need, to keep a node small. */
typedef struct UOpExtra {
  PyObject *tag;        /* NULL for None */
  PyObject *vmin;       /* cached range bounds, NULL until computed */
  PyObject *vmax;
  PyObject *key;        /* cached content hash (bytes) */
  PyObject *bslice;     /* cached backward_slice dict (without the node: no reference cycle) */
} UOpExtra;

typedef struct UOp {
  PyObject_HEAD
  uint32_t op : 7;       /* Op (OP_COUNT <= 128) */
  uint32_t flags : 3;    /* UOP_FLAG_* */
  uint32_t nsrc : 22;    /* up to UOP_MAX_SRC: a LINEAR holds every uop of a kernel */
  uint32_t hash;         /* hash of (op, dtype, src, arg, tag) for the intern table */
  DType *dtype;          /* borrowed: dtypes are immortal */
  PyObject *arg;         /* owned, never NULL (Py_None) */
  UOpExtra *extra;       /* NULL when the tag is None and nothing is cached */
  uint32_t rw_id;        /* graph_rewrite's scratch: the rewrite that last touched the node (0: none) */
  uint32_t rw_idx;       /* and the node's entry in that rewrite's table (see rewrite.c) */
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
/* tinygrad's ufix: x if a UOp, else self.const_like(x). New reference. */
UOp *uop_ufix(UOp *self, PyObject *x);
/* self.const_like(b) */
UOp *uop_const_like(UOp *self, PyObject *b);

/* The UOpExtra of a node, made if missing; NULL with MemoryError. */
UOpExtra *uop_extra(UOp *u);

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
PyObject *uop_split_uop_list(UOp *u, Op sep);       /* list(u.split_uop(sep)) */
PyObject *uop_const_factor(UOp *u);                 /* u.const_factor(): a Python int */
PyObject *uop_divides(UOp *u, PyObject *v);         /* u.divides(v): the quotient UOp, or None */
PyObject *uop_gcd(PyObject *uops);                  /* UOp.gcd(*uops) of a tuple of UOps */
int uop_overflows(UOp *u, DType *dtype);            /* u.overflows(dtype): 1, 0, or -1 */
UOp *uop_bind(UOp *var, PyObject *val);             /* var.bind(val), val an int or a UOp */
PyObject *uop_unbind(UOp *u);                       /* u.unbind(): the (variable, value) tuple */
PyObject *uop_sym_infer(UOp *u, PyObject *var_vals);   /* u.sym_infer(var_vals) */
UOp *uop_simplify(UOp *u);                          /* u.simplify(): graph_rewrite(u, symbolic) */
PyObject *uop_ssimplify(UOp *u);                    /* u.ssimplify(): the simplified UOp, or the CONST's value */
UOp *uop_substitute(UOp *u, PyObject *dvars);       /* u.substitute(dvars), dvars a dict */
PyObject *uop_render(UOp *u, bool simplify);        /* u.render(simplify): str, or None where no rule renders it */
UOp *uop_invalid(int count);                        /* UOp.invalid(count) */
UOp *uop_valid(UOp *u, UOp *cond);                  /* u.valid(cond) */
UOp *uop_get_idx(UOp *u);                           /* u.get_idx() */
UOp *uop_get_valid(UOp *u);                         /* u.get_valid() */

/* The number of live interned UOps (for tests of weak interning). */
Py_ssize_t uop_intern_count(void);

/* Methods of mixin/math.py (math.c) added to UOp's method table, and the number protocol. */
extern PyMethodDef uop_math_methods[];
extern PyNumberMethods uop_as_number;
PyObject *uop_richcompare(PyObject *a, PyObject *b, int cmp);

#endif
