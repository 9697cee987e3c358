/* UPat, PatternMatcher and graph_rewrite (tinygrad/uop/ops.py, "pattern matcher" and "graph rewrite
 * engine"). Rules are data: a UPat plus either a Python callable or a C function. */
#ifndef TINYC_UPAT_H
#define TINYC_UPAT_H
#include "uop.h"

/* Captures: a pattern names the nodes it binds; every distinct name gets one slot, program-wide.
 * Every name a native rule reads has a fixed slot here, so a rule reads it as `m->x` (see RULE in native.h). */
#define CAPTURE_NAMES(X) X(x) X(y) X(z) X(c) X(c0) X(c1) X(c2) X(c3) X(d) X(d1) X(d2) X(a) X(b) X(u) X(v) \
  X(w) X(r) X(s) X(g) X(n) X(k) X(e) X(f) X(t) X(idx) X(buf) X(gate) X(cond) X(val) X(root) X(alu) X(ld) X(st) \
  X(var) X(rng) X(base) X(acc) X(out) X(ex) X(gep) X(vec) X(cast) X(bc) X(src) X(mul) X(add) X(lt) X(ne) X(m1) \
  X(x2) X(x3) X(tt) X(ff) X(i) X(i1) X(i2) X(g1) X(g2) X(wmma) X(bidx) X(cast_root) X(alt) X(buf_view) X(cat) \
  X(con) X(copy) X(cut) X(data) X(dg) X(end) X(expr) X(index) X(inner) X(key) X(l) X(lin) X(lower) X(ls) X(m) \
  X(midx) X(multi) X(mv) X(noop) X(outer) X(p) X(prg) X(red) X(sink) X(source) X(sto) X(store) X(upper) X(valid)
enum {
#define X(n) CAP_##n,
  CAPTURE_NAMES(X)
#undef X
  CAP_FIXED
};
#define MAX_CAPTURES 256
typedef union Captures {
  struct {
#define X(n) UOp *n;
    CAPTURE_NAMES(X)
#undef X
  };
  UOp *slot[MAX_CAPTURES];
} Captures;

/* A C rewrite: the captures and the rewrite's ctx in, a borrowed reference out (see native.h's
 * pool); NULL without an exception means "no rewrite" (tinygrad's None). */
typedef UOp *(*NativeFn)(Captures *m, PyObject *ctx);

typedef enum { SRC_NONE, SRC_TUPLE, SRC_PERMUTE, SRC_REPEAT } SrcKind;

typedef struct UPat {
  PyObject_HEAD
  OpSet ops;                 /* allowed ops; meaningful when has_ops */
  bool has_ops, is_any, strict_length;
  SrcKind src_kind;
  int nsrc, nperms, required_len;
  int slot;                  /* capture slot of `name`, -1 when unnamed */
  DType **dtypes;            /* allowed dtypes (borrowed, immortal), ndtypes == 0: any */
  int ndtypes;
  struct UPat **src;         /* owned: the tuple (SRC_TUPLE/PERMUTE) or the repeated one (SRC_REPEAT) */
  uint8_t *perms;            /* SRC_PERMUTE: nperms rows of nsrc indices, itertools.permutations order */
  OpSet early_reject;        /* ops that must appear among a node's sources for this pattern to match */
  PyObject *op, *dtype, *arg, *name, *in_src, *custom_early_reject, *location;   /* Python views; arg NULL: any */
} UPat;

extern PyTypeObject UPat_Type;
#define UPat_Check(o) PyObject_TypeCheck((o), &UPat_Type)

typedef struct Rule {
  UPat *pat;
  PyObject *fn;              /* a Python callable, or NULL for a native rule */
  NativeFn native;
  bool wants_ctx;            /* the Python callable has a `ctx` parameter */
  bool form_checked;         /* a native rule that checks the form of what it reads itself (see pm_set_form_checked) */
  int nnames;                /* the capture slots named anywhere in the pattern */
  int *names;
  int npos;                  /* a quick reject before matching: the ops the first npos sources may have, */
  OpSet pos_ops[4];
  bool pos_permuted;         /* or, for a commutative pattern, the ops of its npos sources in one of its orders */
  int nsame;                 /* and the pairs of depths below the root at which one capture occurs twice: where no */
  uint8_t same_depth[4][2];  /* node is at both, the pattern cannot match (match() binds a name to one node); */
  int ndeep;                 /* and ops that some node 2 or 3 levels down must have */
  struct { uint8_t depth; OpSet ops; } deep[4];
} Rule;

/* A rule as its root op's dispatch list holds it: the early-reject set beside the rule, so scanning the list for the
 * rules that may fire reads one array. */
typedef struct { OpSet early_reject; Rule *rule; } RuleSlot;

/* The rules of a root op that may fire on a node of one shape (its op, its source count up to SHAPE_MAX_SRC and its
 * sources' ops): those are what decide the early reject, the length checks and pos_ops, so the rules passing them are
 * found once per shape and kept, as positions in the op's RuleSlot list, in rule order. */
#define SHAPE_MAX_SRC 3
typedef struct { uint32_t key; uint32_t n; uint16_t *at; } ShapeRules;   /* key 0: an empty entry */
typedef struct { ShapeRules *e; uint32_t cap, len, shift; } ShapeCache;   /* open addressing, cap a power of two */

typedef struct PatternMatcher {
  PyObject_HEAD
  Rule **rules;              /* shared, reference counted through `owners` */
  int nrules;
  RuleSlot *by_op[OP_COUNT]; /* the rules per root op, in rule order */
  int n_by_op[OP_COUNT];
  ShapeCache shapes;         /* filled as shapes are met */
  uint32_t root_bits;        /* op_bit of every op some rule matches at the root: none below a node, nothing to do there */
  bool all_native;           /* every rule is C: none has state of its own that the order of the calls could show */
  PyObject *patterns;        /* list of (UPat, callable-or-None), built on request */
} PatternMatcher;

extern PyTypeObject PatternMatcher_Type;
#define PatternMatcher_Check(o) PyObject_TypeCheck((o), &PatternMatcher_Type)
extern PyObject *BottomUpGate;

/* ---- building patterns and rule sets in C (native rules) ---- */
int capture_slot(const char *name);                       /* slot of a name, registering it */
/* 0 when p binds the capture slots of reads on every match (reads: those slots, -1, then the slots that may be
 * unbound but must be named in p, -1); else -1 with a RuntimeError naming the rule, the capture and the pattern */
int upat_check_reads(UPat *p, const int *reads, const char *rule, const char *pattern);
/* UPats made until it is cleared (NULL) get this location (borrowed): pm_from_defs gives a native rule's C file and line */
void upat_set_native_location(PyObject *location);
UPat *upat_build(OpSet ops, bool has_ops, DType *const *dtypes, int ndtypes, SrcKind kind, UPat *const *src, int nsrc,
                 PyObject *arg, const char *name, bool allow_any_len);   /* steals nothing; NULL on error */
PatternMatcher *pm_new_native(const UPat *const *pats, const NativeFn *fns, int n);  /* steals the pattern refs */
PatternMatcher *pm_concat(PatternMatcher *a, PatternMatcher *b);
/* A native rule runs only on a root whose whole graph is well formed (form.h), except the rules of a set marked
 * here, which check every source and arg they read themselves or read none: the specs, whose job is to judge
 * malformed nodes one by one as tinygrad's do (spec.c; tested node by node against tinygrad, and fuzzed), and the
 * structure-blind sets (substitute, removing tags) that must work on any graph. */
void pm_set_form_checked(PatternMatcher *pm);

/* pm.rewrite(u, ctx): the first rule's result that is not None and not u; NULL and no exception
 * when nothing fires. With require_uop, a result that is not a UOp is a TypeError naming the rule. */
PyObject *pm_rewrite(PatternMatcher *pm, UOp *u, PyObject *ctx, bool require_uop);
/* graph_rewrite(sink, pm, ctx, bottom_up, bpm) as tinygrad 0.12.0's unified_rewrite. */
UOp *graph_rewrite(UOp *sink, PatternMatcher *pm, PyObject *ctx, bool bottom_up, PatternMatcher *bpm);
/* the same, told that the rules only read ctx (a renderer, a device name): with C rules alone, the order of their calls
 * cannot change the answer then, and subgraphs where none can fire are left unwalked (graph_rewrite assumes that of a
 * None ctx only) */
UOp *graph_rewrite_read_only_ctx(UOp *sink, PatternMatcher *pm, PyObject *ctx, bool bottom_up);

int tinyc_init_upat(PyObject *m);
int tinyc_init_rewrite(PyObject *m);

#endif
