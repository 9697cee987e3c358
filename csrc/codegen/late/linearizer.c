/* From the final kernel graph to the list of lines a renderer prints:
 *   linearize(sink)        tinygrad/codegen/late/linearizer.py: a toposort that follows a priority order
 *   line_rewrite(lst, pm)  tinygrad/codegen/__init__.py: a rewrite over lines, where a rule may emit several
 *   pm_linearize_cleanups  the line rules that do_linearize runs: a gated store gets wrapped in IF/ENDIF
 *
 * linearize ranks every node by an "ideal" key (how many times it runs, a per-op priority, then its
 * tuplize), then walks back from the sink with a max-heap on that rank, taking a node only once all of
 * its consumers are placed; the reversed walk is the program. */
#include "../passes.h"
#include "../../uop/form.h"
#include "../../helpers.h"

#include <math.h>

static bool tuple_order = true;   /* tinygrad's TUPLE_ORDER (default 1): break ties by tuplize */

/* ---------------------------------------------------------------------------------------------- */
/* u.ranges as sets (order does not matter here: only the product of their sizes is used)          */
/* ---------------------------------------------------------------------------------------------- */

static bool set_has(const PtrVec *s, const void *p) {
  for (Py_ssize_t i = 0; i < s->len; i++)
    if (s->items[i] == p) return true;
  return false;
}
static int set_add(PtrVec *s, void *p) { return set_has(s, p) ? 0 : ptrvec_push(s, p); }
static void set_remove(PtrVec *s, const void *p) {
  for (Py_ssize_t i = 0; i < s->len; i++)
    if (s->items[i] == p) { s->items[i] = s->items[--s->len]; return; }
}

/* u.ended_ranges appended to out; an AFTER passes on those of its sources after the first */
static int collect_ended_ranges(UOp *u, PtrVec *out) {
  int start = uop_range_start(u->op);
  if (start >= 0) {
    for (int k = start; k < u->nsrc; k++)
      if (ptrvec_push(out, u->src[k]) < 0) return -1;
  } else if (u->op == OP_AFTER) {
    for (int k = 1; k < u->nsrc; k++)
      if (collect_ended_ranges(u->src[k], out) < 0) return -1;
  }
  return 0;
}

/* The nodes of a toposort, each with its position, its ranges and its consumer count. */
typedef struct {
  UOp **nodes;        /* borrowed from `list` */
  Py_ssize_t n;
  PtrMap pos;         /* node -> position + 1 */
  PtrVec *ranges;     /* per position */
} Graph;

static PtrVec *ranges_at(Graph *g, UOp *u) { return &g->ranges[(Py_ssize_t)ptrmap_get(&g->pos, u) - 1]; }

/* u.ranges from its sources' (already computed): their union, less what u ends, plus u if a RANGE */
static int compute_ranges(Graph *g, UOp *u, PtrVec *out) {
  PtrVec ended = {0};
  int rc = 0;
  for (int k = 0; k < u->nsrc && rc == 0; k++) {
    PtrVec *s = ranges_at(g, u->src[k]);
    for (Py_ssize_t i = 0; i < s->len && rc == 0; i++) rc = set_add(out, s->items[i]);
  }
  if (rc == 0) rc = collect_ended_ranges(u, &ended);
  for (Py_ssize_t k = 0; k < ended.len && rc == 0; k++) {
    UOp *er = ended.items[k];
    if (er->op == OP_RANGE) { set_remove(out, er); continue; }
    PtrVec *inner = ranges_at(g, er);   /* a non-RANGE ends every range it is inside of */
    for (Py_ssize_t i = 0; i < inner->len; i++) set_remove(out, inner->items[i]);
  }
  ptrvec_free(&ended);
  if (rc == 0 && u->op == OP_RANGE) rc = set_add(out, u);
  return rc;
}

static void graph_free(Graph *g) {
  for (Py_ssize_t i = 0; g->ranges && i < g->n; i++) ptrvec_free(&g->ranges[i]);
  PyMem_Free(g->ranges);
  ptrmap_free(&g->pos);
}

static int graph_init(Graph *g, PyObject *list) {
  g->nodes = (UOp **)PySequence_Fast_ITEMS(list), g->n = PyList_GET_SIZE(list);
  if (!(g->ranges = PyMem_Calloc((size_t)g->n + 1, sizeof(PtrVec)))) { PyErr_NoMemory(); return -1; }
  if (ptrmap_reserve(&g->pos, (size_t)g->n) < 0) return -1;
  for (Py_ssize_t i = 0; i < g->n; i++)
    if (ptrmap_set(&g->pos, g->nodes[i], (void *)(i + 1)) < 0) return -1;
  for (Py_ssize_t i = 0; i < g->n; i++)   /* sources come first in a toposort */
    if (compute_ranges(g, g->nodes[i], &g->ranges[i]) < 0) return -1;
  return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* the ideal order: (run count, priority, extra) then tuplize, as Python compares tuples            */
/* ---------------------------------------------------------------------------------------------- */

typedef struct {
  PyObject *run_count;   /* owned: prod(int(r.vmax)+1 for r in u.ranges); NULL while every key's is small */
  long long rc;          /* run_count as a C integer when small is set (it fits) */
  bool small;
  int priority;          /* smaller is placed earlier */
  PyObject *extra;       /* borrowed u->arg for the defines whose order is their arg; NULL for None */
} Key;

/* placement priority per op: the defines first in a fixed order, then consts, loads early, stores late,
 * RANGE wants to be placed, END does not */
static int op_priority(Op op) {
  switch (op) {
  case OP_DEFINE_GLOBAL: return -20;
  case OP_DEFINE_VAR: return -19;
  case OP_DEFINE_LOCAL: return -18;
  case OP_DEFINE_REG: return -17;
  case OP_CONST: return -10;
  case OP_LOAD: return -1;
  case OP_STORE: return 1;
  case OP_RANGE: return 5;
  case OP_END: return -5;
  default: return 0;
  }
}

/* prod(int(r.vmax)+1 for r in ranges), a new reference */
static PyObject *run_count(PtrVec *ranges) {
  PyObject *acc = PyLong_FromLong(1), *one = PyLong_FromLong(1);
  for (Py_ssize_t i = 0; acc && i < ranges->len; i++) {
    PyObject *mn, *mx, *size = NULL;
    if (uop_min_max(ranges->items[i], &mn, &mx) == 0) {
      PyObject *as_int = PyNumber_Long(mx);
      size = as_int ? PyNumber_Add(as_int, one) : NULL;
      Py_XDECREF(as_int);
    }
    Py_SETREF(acc, size ? PyNumber_Multiply(acc, size) : NULL);
    Py_XDECREF(size);
  }
  Py_XDECREF(one);
  return acc;
}

/* the same product in C when every vmax is an int and nothing overflows: true with *out set; false (no error set) when
 * Python's numbers are needed, -1 on error */
static int small_run_count(PtrVec *ranges, long long *out) {
  long long acc = 1;
  for (Py_ssize_t i = 0; i < ranges->len; i++) {
    PyObject *mn, *mx;
    if (uop_min_max(ranges->items[i], &mn, &mx) < 0) return -1;
    if (!PyLong_CheckExact(mx)) return 0;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(mx, &overflow);
    if (overflow || v == LLONG_MAX || __builtin_mul_overflow(acc, v + 1, &acc)) return 0;
  }
  *out = acc;
  return 1;
}

/* ---------------------------------------------------------------------------------------------- */
/* tuplize order through token prefixes                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* u.tuplize compared as Python compares nested tuples is the lexicographic order of its preorder
 * flattening into tokens: each node opens with its head (op value, arg, dtype) and its tuple closes
 * after its sources, a close being less than any head (the shorter tuple is less). Heads form a strict
 * weak order when their args are plain values (no NaN, nothing exotic): dtypes order by a key, so two
 * distinct dtypes with one key are neither less than the other, and Python's comparison stops there
 * answering "not less" both ways. So a head's token is (its class in that order, which ==-equal group
 * within the class): different classes decide by class, one class but different groups answer "not less",
 * the same token goes on. Every node gets the first TOK_K tokens of its flattening; a tie within the
 * prefixes falls back to uop_tuplize_order. The answers are the walk's, so list.sort asks the same
 * questions and gets the same answers. A head whose arg Python may not order consistently (a NaN const,
 * which is neither less nor more than any other const, or an exotic object) stays out of the ranking: its
 * token is TOK_SPECIAL and its own number, and where such a token is the first difference the two heads
 * themselves are compared, as Python compares them. When the ranking fails all the same, the tokens are
 * left out and every answer comes from the walk. */
#define TOK_K 64
#define TOK_GROUP_BITS 11
#define TOK_SPECIAL (1u << 31)
typedef struct {
  uint32_t *tok;     /* TOK_K per position; 0 closes a tuple, a head is class << TOK_GROUP_BITS | group or TOK_SPECIAL | n */
  uint32_t *at;      /* with special heads: the position of the node whose head each token is (TOK_K per position) */
  uint16_t *len;
  bool *complete;    /* the whole flattening fits */
} Tokens;

/* args Python orders consistently among themselves (a TypeError between kinds is caught); objects with
 * object's own comparisons (an Enum member such as an AxisType) are equal only to themselves */
static bool plain_arg(PyObject *o) {
  if (o == Py_None || PyLong_Check(o) || PyUnicode_CheckExact(o)) return true;
  if (Py_TYPE(o)->tp_richcompare == PyBaseObject_Type.tp_richcompare) return true;
  if (PyFloat_CheckExact(o)) return !isnan(PyFloat_AS_DOUBLE(o));
  if (PyTuple_CheckExact(o)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
      if (!plain_arg(PyTuple_GET_ITEM(o, i))) return false;
    return true;
  }
  return false;
}

/* head order for ranking (both args plain: rank_heads ranks only those): ORD_*, or -1 when the heads cannot be
 * ranked (no exception left set) */
static int rank_head_order(UOp *a, UOp *b) {
  int r = uop_head_order(a, b);
  if (r < 0) PyErr_Clear();
  return r;
}

/* merge sort of positions by head (stable); -1: cannot rank */
static int sort_by_head(UOp **nodes, Py_ssize_t *idx, Py_ssize_t *tmp, Py_ssize_t n) {
  if (n < 2) return 0;
  Py_ssize_t h = n / 2;
  if (sort_by_head(nodes, idx, tmp, h) < 0 || sort_by_head(nodes, idx + h, tmp, n - h) < 0) return -1;
  Py_ssize_t i = 0, j = h, k = 0;
  while (i < h && j < n) {
    int r = rank_head_order(nodes[idx[j]], nodes[idx[i]]);
    if (r < 0) return -1;
    tmp[k++] = r == ORD_LESS ? idx[j++] : idx[i++];
  }
  while (i < h) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, sizeof(Py_ssize_t) * (size_t)n);
  return 0;
}

static void tokens_free(Tokens *t) {
  PyMem_Free(t->tok); PyMem_Free(t->at); PyMem_Free(t->len); PyMem_Free(t->complete);
  memset(t, 0, sizeof(*t));
}

/* The positions whose head (op, arg object, dtype) is the first of its kind, in position order, and each position's
 * first (first_of). Identical heads compare equal (identity first, as Python's tuples), so ranking the distinct ones
 * ranks all: a kernel has thousands of nodes but a few dozen heads. Returns how many distinct, -1 on error. */
static Py_ssize_t distinct_heads(Graph *g, Py_ssize_t *distinct, uint32_t *first_of) {
  size_t cap = 16;
  while (cap < 2 * (size_t)g->n) cap *= 2;
  Py_ssize_t *table = PyMem_Malloc(cap * sizeof(Py_ssize_t)), nd = 0;   /* slot -> position + 1, 0 empty */
  if (!table) { PyErr_NoMemory(); return -1; }
  memset(table, 0, cap * sizeof(Py_ssize_t));
  for (Py_ssize_t i = 0; i < g->n; i++) {
    UOp *u = g->nodes[i];
    uint64_t h = ((uint64_t)u->op * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)(uintptr_t)u->arg * 0xC2B2AE3D27D4EB4FULL) ^
                 ((uint64_t)(uintptr_t)u->dtype * 0x165667B19E3779F9ULL);
    size_t at = (h ^ (h >> 29)) & (cap - 1);
    for (;; at = (at + 1) & (cap - 1)) {
      if (!table[at]) { table[at] = i + 1, distinct[nd++] = i, first_of[i] = (uint32_t)i; break; }
      UOp *v = g->nodes[table[at] - 1];
      if (v->op == u->op && v->arg == u->arg && v->dtype == u->dtype) { first_of[i] = (uint32_t)(table[at] - 1); break; }
    }
  }
  PyMem_Free(table);
  return nd;
}

/* the tokens of the n plain heads at positions idx, put in tmp[k] for the k-th once idx is sorted by head: 0, or 1 when
 * the heads cannot be ranked. tmp holds n + 1. */
static int class_tokens(Graph *g, Py_ssize_t *idx, Py_ssize_t *tmp, Py_ssize_t n) {
  if (sort_by_head(g->nodes, idx, tmp, n) < 0) return 1;
  uint32_t cls = 0;
  Py_ssize_t start = 0;   /* where the current class begins in idx */
  for (Py_ssize_t k = 0; k < n; k++) {
    UOp *u = g->nodes[idx[k]];
    if (k > 0) {
      int o = rank_head_order(g->nodes[idx[k - 1]], u);
      if (o < 0) return 1;
      if (o == ORD_NOT_LESS) {   /* equivalent (neither less) or the sort's order is not consistent */
        int back = rank_head_order(u, g->nodes[idx[k - 1]]);
        if (back != ORD_NOT_LESS) return 1;
      }
      if (o == ORD_LESS) cls++, start = k;
    } else cls = 1;
    if (cls >= (1u << (31 - TOK_GROUP_BITS))) return 1;
    uint32_t group = 0, groups = 0;   /* the ==-equal group within the class: an earlier member's, or new */
    bool found = false;
    for (Py_ssize_t m = start; m < k && !found; m++) {
      uint32_t gm = tmp[m] & ((1u << TOK_GROUP_BITS) - 1);
      if (gm >= groups) groups = gm + 1;
      int e = rank_head_order(g->nodes[idx[m]], u);
      if (e < 0) return 1;
      if (e == ORD_EQUAL) group = gm, found = true;
    }
    if (!found) {
      for (Py_ssize_t m = start; m < k; m++) {
        uint32_t gm = tmp[m] & ((1u << TOK_GROUP_BITS) - 1);
        if (gm >= groups) groups = gm + 1;
      }
      group = groups;
    }
    if (group >= (1u << TOK_GROUP_BITS)) return 1;
    tmp[k] = cls << TOK_GROUP_BITS | group;   /* the token of the k-th distinct head (tmp is free after the sort) */
  }
  return 0;
}

/* head tokens by position: 0 when ranked, 1 when the heads cannot be ranked, -1 on error. idx and tmp hold n + 1.
 * *specials: how many heads stay out of the ranking (TOK_SPECIAL tokens). */
static int rank_heads(Graph *g, Py_ssize_t *idx, Py_ssize_t *tmp, uint32_t *head, uint32_t *specials) {
  Py_ssize_t nd = distinct_heads(g, idx, head), n = 0;   /* idx: the distinct heads' positions; head: each position's first, for now */
  if (nd < 0) return -1;
  Py_ssize_t *token_of = PyMem_Malloc(sizeof(Py_ssize_t) * ((size_t)g->n + 1));   /* first position -> its token */
  if (!token_of) { PyErr_NoMemory(); return -1; }
  *specials = 0;
  for (Py_ssize_t k = 0; k < nd; k++) {   /* the ranked heads stay in idx, in position order; the others get their own token */
    if (plain_arg(g->nodes[idx[k]]->arg)) idx[n++] = idx[k];
    else token_of[idx[k]] = TOK_SPECIAL | (*specials)++;
  }
  int rc = class_tokens(g, idx, tmp, n);
  if (rc == 0) {
    for (Py_ssize_t k = 0; k < n; k++) token_of[idx[k]] = tmp[k];
    for (Py_ssize_t i = 0; i < g->n; i++) head[i] = (uint32_t)token_of[head[i]];
  }
  PyMem_Free(token_of);
  return rc;
}

/* the token prefixes of every node; 0 with t->tok NULL when the heads cannot be ranked, -1 on error */
static int tokens_init(Tokens *t, Graph *g) {
  Py_ssize_t n = g->n;
  memset(t, 0, sizeof(*t));
  Py_ssize_t *idx = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n + 1)), *tmp = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
  uint32_t *head = PyMem_Malloc(sizeof(uint32_t) * (size_t)(n + 1));
  t->tok = PyMem_Malloc(sizeof(uint32_t) * TOK_K * (size_t)(n + 1));
  t->len = PyMem_Malloc(sizeof(uint16_t) * ((size_t)n + 1)), t->complete = PyMem_Malloc((size_t)n + 1);
  int rc = 0;
  if (!idx || !tmp || !head || !t->tok || !t->len || !t->complete) { PyErr_NoMemory(); rc = -1; tokens_free(t); goto out; }
  uint32_t specials = 0;
  int ranked = rank_heads(g, idx, tmp, head, &specials);
  if (ranked < 0) { rc = -1; tokens_free(t); goto out; }
  if (ranked) { tokens_free(t); goto out; }
  if (specials && !(t->at = PyMem_Malloc(sizeof(uint32_t) * TOK_K * (size_t)(n + 1)))) { PyErr_NoMemory(); rc = -1; tokens_free(t); goto out; }
  for (Py_ssize_t i = 0; i < n; i++) {   /* sources first: a toposort */
    UOp *u = g->nodes[i];
    uint32_t *tk = &t->tok[i * TOK_K], *at = t->at ? &t->at[i * TOK_K] : NULL;
    int len = 0;
    bool complete = true;
    if (at) at[len] = (uint32_t)i;
    tk[len++] = head[i];
    for (int s = 0; s < u->nsrc && complete; s++) {
      Py_ssize_t j = (Py_ssize_t)ptrmap_get(&g->pos, u->src[s]) - 1;
      int take = t->len[j] < TOK_K - len ? t->len[j] : TOK_K - len;
      memcpy(tk + len, &t->tok[j * TOK_K], sizeof(uint32_t) * (size_t)take);
      if (at) memcpy(at + len, &t->at[j * TOK_K], sizeof(uint32_t) * (size_t)take);
      len += take;
      if (take < t->len[j] || !t->complete[j]) complete = false;
    }
    if (complete && len < TOK_K) tk[len++] = 0;
    else complete = false;
    t->len[i] = (uint16_t)len, t->complete[i] = complete;
  }
out:
  PyMem_Free(idx); PyMem_Free(tmp); PyMem_Free(head);
  return rc;
}

/* a.tuplize vs b.tuplize (positions i, j) */
static int tuplize_order_at(const Tokens *t, Graph *g, Py_ssize_t i, Py_ssize_t j) {
  if (t->tok) {
    const uint32_t *x = &t->tok[i * TOK_K], *y = &t->tok[j * TOK_K];
    int m = t->len[i] < t->len[j] ? t->len[i] : t->len[j], k = 0;
    unsigned __int128 wx, wy;   /* four tokens a step while they agree: the common prefix is often long */
    for (; k + 4 <= m; k += 4) {
      memcpy(&wx, x + k, sizeof(wx)), memcpy(&wy, y + k, sizeof(wy));
      if (wx != wy) break;
    }
    for (; k < m; k++) {
      if (x[k] == y[k]) continue;
      if (x[k] && y[k] && ((x[k] | y[k]) & TOK_SPECIAL)) {   /* an unranked head: the two heads as Python compares them */
        int r = uop_head_order(g->nodes[t->at[i * TOK_K + k]], g->nodes[t->at[j * TOK_K + k]]);
        if (r != ORD_EQUAL) return r;
        goto walk;   /* ==-equal heads under two tokens */
      }
      if ((x[k] >> TOK_GROUP_BITS) == (y[k] >> TOK_GROUP_BITS)) return ORD_NOT_LESS;   /* equivalent heads, not equal */
      return x[k] < y[k] ? ORD_LESS : ORD_NOT_LESS;
    }
    if (t->complete[i] && t->complete[j]) return ORD_EQUAL;
  }
walk:
  return uop_tuplize_order(g->nodes[i], g->nodes[j]);
}

/* Python's sorted() only asks `<`, and its exact result depends on the order of its questions when the
 * order is not consistent (a NaN const answers False both ways), so the sort is Python's own list.sort,
 * over one small key object per position whose `<` is key_less: the same questions in the same order as
 * tinygrad's sorted(lst, key=...), without a Python call per comparison. */
typedef struct { Graph *g; Key *keys; Tokens tokens; } SortCtx;

/* priorities[a] + a.tuplize < priorities[b] + b.tuplize (positions i, j): 1, 0, or -1 on error */
static int key_less(SortCtx *c, Py_ssize_t i, Py_ssize_t j) {
  const Key *ka = &c->keys[i], *kb = &c->keys[j];
  int r = ka->small && kb->small ? (ka->rc == kb->rc ? ORD_EQUAL : ka->rc < kb->rc ? ORD_LESS : ORD_NOT_LESS)
                                 : py_value_order(ka->run_count, kb->run_count);
  if (r == ORD_EQUAL && ka->priority != kb->priority) r = ka->priority < kb->priority ? ORD_LESS : ORD_NOT_LESS;
  if (r == ORD_EQUAL && (ka->extra || kb->extra)) r = py_value_order(ka->extra ? ka->extra : Py_None, kb->extra ? kb->extra : Py_None);
  if (r == ORD_EQUAL && tuple_order) r = tuplize_order_at(&c->tokens, c->g, i, j);
  return r < 0 ? -1 : r == ORD_LESS;
}

typedef struct { PyObject_HEAD SortCtx *c; Py_ssize_t i; } SortKey;

static PyObject *SortKey_richcompare(PyObject *a, PyObject *b, int op) {
  if (op != Py_LT || Py_TYPE(a) != Py_TYPE(b)) Py_RETURN_NOTIMPLEMENTED;
  SortKey *x = (SortKey *)a, *y = (SortKey *)b;
  SortCtx *c = x->c;
  int lt = key_less(c, x->i, y->i);
  return lt < 0 ? NULL : Py_NewRef(lt ? Py_True : Py_False);
}

static PyTypeObject SortKey_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc._C.LinearizeSortKey",
  .tp_basicsize = sizeof(SortKey),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_richcompare = SortKey_richcompare,
};

/* order[rank] = position, the positions sorted by their keys as tinygrad's sorted(lst, key=...) does */
static int sort_positions(SortCtx *c, Py_ssize_t *order) {
  PyObject *list = PyList_New(c->g->n);
  if (!list) return -1;
  for (Py_ssize_t i = 0; i < c->g->n; i++) {
    SortKey *k = PyObject_New(SortKey, &SortKey_Type);
    if (!k) { Py_DECREF(list); return -1; }
    k->c = c, k->i = i;
    PyList_SET_ITEM(list, i, (PyObject *)k);
  }
  if (PyList_Sort(list) < 0) { Py_DECREF(list); return -1; }
  for (Py_ssize_t r = 0; r < c->g->n; r++) order[r] = ((SortKey *)PyList_GET_ITEM(list, r))->i;
  Py_DECREF(list);
  return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* the walk from the sink: a max-heap on the ideal rank                                           */
/* ---------------------------------------------------------------------------------------------- */

typedef struct { Py_ssize_t *items, len; } RankHeap;

static void heap_push(RankHeap *h, Py_ssize_t rank) {
  Py_ssize_t i = h->len++;
  while (i > 0 && h->items[(i - 1) / 2] < rank) h->items[i] = h->items[(i - 1) / 2], i = (i - 1) / 2;
  h->items[i] = rank;
}
static Py_ssize_t heap_pop(RankHeap *h) {
  Py_ssize_t top = h->items[0], last = h->items[--h->len], i = 0;
  for (;;) {
    Py_ssize_t child = 2 * i + 1;
    if (child >= h->len) break;
    if (child + 1 < h->len && h->items[child + 1] > h->items[child]) child++;
    if (h->items[child] <= last) break;
    h->items[i] = h->items[child], i = child;
  }
  if (h->len) h->items[i] = last;
  return top;
}

/* Place the nodes from the sink down: a node is ready once all its consumers are placed, and the ready
 * node with the highest ideal rank goes next. order[rank] is a position; the result is a new list. */
static PyObject *walk_from_sink(Graph *g, const Py_ssize_t *order, const Py_ssize_t *rank_of, UOp *sink) {
  Py_ssize_t n = g->n, placed = 0, *out_degree = PyMem_Calloc((size_t)n + 1, sizeof(Py_ssize_t));
  RankHeap heap = {PyMem_Malloc(((size_t)n + 1) * sizeof(Py_ssize_t)), 0};
  PyObject *ret = PyList_New(n);
  if (!out_degree || !heap.items || !ret) { if (!PyErr_Occurred()) PyErr_NoMemory(); goto fail; }
  for (Py_ssize_t i = 0; i < n; i++)
    for (int k = 0; k < g->nodes[i]->nsrc; k++) out_degree[(Py_ssize_t)ptrmap_get(&g->pos, g->nodes[i]->src[k]) - 1]++;
  heap_push(&heap, rank_of[(Py_ssize_t)ptrmap_get(&g->pos, sink) - 1]);
  while (heap.len) {
    UOp *u = g->nodes[order[heap_pop(&heap)]];
    PyList_SET_ITEM(ret, n - 1 - placed++, Py_NewRef(u));   /* filled from the back: the walk reversed */
    for (int k = 0; k < u->nsrc; k++) {
      Py_ssize_t p = (Py_ssize_t)ptrmap_get(&g->pos, u->src[k]) - 1;
      if (--out_degree[p] == 0) heap_push(&heap, rank_of[p]);
    }
  }
  if (placed != n) { PyErr_SetString(PyExc_RuntimeError, "linearize: not every node was placed"); goto fail; }
  PyMem_Free(out_degree); PyMem_Free(heap.items);
  return ret;
fail:
  PyMem_Free(out_degree); PyMem_Free(heap.items); Py_XDECREF(ret);
  return NULL;
}

/* every key's run count: in C where it fits, and as a Python number for all of them when one does not (comparing
 * two keys needs both as Python numbers then) */
static int make_keys(Graph *g, Key *keys) {
  bool all_small = true;
  for (Py_ssize_t i = 0; i < g->n; i++) {
    UOp *u = g->nodes[i];
    int small = small_run_count(&g->ranges[i], &keys[i].rc);
    if (small < 0) return -1;
    keys[i].small = small;
    all_small &= small;
    keys[i].priority = op_priority(u->op);
    keys[i].extra = (u->op == OP_DEFINE_GLOBAL || u->op == OP_DEFINE_VAR) ? u->arg : NULL;
  }
  for (Py_ssize_t i = 0; !all_small && i < g->n; i++) {
    keys[i].run_count = keys[i].small ? PyLong_FromLongLong(keys[i].rc) : run_count(&g->ranges[i]);
    if (!keys[i].run_count) return -1;
    if (!keys[i].small && PyLong_CheckExact(keys[i].run_count)) {
      int overflow;
      keys[i].rc = PyLong_AsLongLongAndOverflow(keys[i].run_count, &overflow);
      if (keys[i].rc == -1 && PyErr_Occurred()) return -1;
      keys[i].small = !overflow;
    }
  }
  return 0;
}

/* tinygrad's linearize(sink): a new list of every node under sink, in program order */
static PyObject *linearize(UOp *sink) {
  if (uop_check_form(sink, "linearize") < 0) return NULL;
  PyObject *list = uop_toposort_list(sink, NULL), *ret = NULL;
  if (!list) return NULL;
  Graph g = {0};
  Py_ssize_t n = PyList_GET_SIZE(list);
  Key *keys = PyMem_Calloc((size_t)n + 1, sizeof(Key));
  Py_ssize_t *order = PyMem_Malloc(((size_t)n + 1) * sizeof(Py_ssize_t)), *tmp = PyMem_Malloc(((size_t)n + 1) * sizeof(Py_ssize_t));
  if (!keys || !order || !tmp) { PyErr_NoMemory(); goto done; }
  if (graph_init(&g, list) < 0 || make_keys(&g, keys) < 0) goto done;
  SortCtx ctx = {&g, keys, {0}};
  if (tuple_order && tokens_init(&ctx.tokens, &g) < 0) goto done;
  int sorted = sort_positions(&ctx, order);
  tokens_free(&ctx.tokens);
  if (sorted < 0) goto done;
  for (Py_ssize_t r = 0; r < n; r++) tmp[order[r]] = r;   /* tmp becomes rank_of[position] */
  ret = walk_from_sink(&g, order, tmp, sink);
done:
  for (Py_ssize_t i = 0; keys && i < n; i++) Py_XDECREF(keys[i].run_count);
  PyMem_Free(keys); PyMem_Free(order); PyMem_Free(tmp);
  graph_free(&g);
  Py_DECREF(list);
  return ret;
}

/* ---------------------------------------------------------------------------------------------- */
/* line_rewrite: each line's sources replaced by what their lines became, then one rule try; a     */
/* rule answers (new uop, lines to emit)                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* append every item of lines (any iterable) to out */
static int extend_list(PyObject *out, PyObject *lines) {
  PyObject *seq = PySequence_Fast(lines, "a line rule must answer (UOp, list of UOps)");
  if (!seq) return -1;
  int rc = 0;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && rc == 0; i++) rc = PyList_Append(out, PySequence_Fast_GET_ITEM(seq, i));
  Py_DECREF(seq);
  return rc;
}

/* one line: u with its sources replaced, rewritten by pm. Appends its lines to out; returns what u became
 * (a new reference) */
static UOp *rewrite_line(UOp *u, PatternMatcher *pm, PtrMap *replaced, PyObject *out) {
  UOp *small[8], **src = u->nsrc <= 8 ? small : PyMem_Malloc(sizeof(UOp *) * u->nsrc), *nu = NULL, *became = NULL;
  if (!src) { PyErr_NoMemory(); return NULL; }
  bool same = true;
  for (int k = 0; k < u->nsrc; k++) {
    if (!(src[k] = ptrmap_get(replaced, u->src[k]))) { PyErr_SetObject(PyExc_KeyError, (PyObject *)u->src[k]); goto done; }
    same &= src[k] == u->src[k];
  }
  /* with the same sources the node is u itself (hash-consing): no lookup */
  if (!(nu = same ? (UOp *)Py_NewRef(u) : uop_new(u->op, u->dtype, src, u->nsrc, u->arg, uop_tag(u)))) goto done;
  PyObject *ret = pm_rewrite(pm, nu, Py_None, false);
  if (!ret) {
    if (!PyErr_Occurred() && PyList_Append(out, (PyObject *)nu) == 0) became = (UOp *)Py_NewRef(nu);
    goto done;
  }
  if (!PyTuple_Check(ret) || PyTuple_GET_SIZE(ret) != 2 || !UOp_Check(PyTuple_GET_ITEM(ret, 0)))
    PyErr_Format(PyExc_TypeError, "a line rule must answer (UOp, list of UOps), not %R", ret);
  else if (extend_list(out, PyTuple_GET_ITEM(ret, 1)) == 0)
    became = (UOp *)Py_NewRef(PyTuple_GET_ITEM(ret, 0));
  Py_DECREF(ret);
done:
  Py_XDECREF(nu);
  if (src != small) PyMem_Free(src);
  return became;
}

/* tinygrad's line_rewrite(lst, pm) for a toposorted list: a new list */
static PyObject *line_rewrite(PyObject *lst, PatternMatcher *pm) {
  if (uops_check_form(lst, "line_rewrite") < 0) return NULL;
  PyObject *seq = PySequence_Fast(lst, "line_rewrite needs a list of UOps"), *out = PyList_New(0), *keep = PyList_New(0);
  PtrMap replaced = {0};   /* line -> what it became (alive through `keep`) */
  int rc = seq && out && keep ? 0 : -1;
  for (Py_ssize_t i = 0; rc == 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *u = PySequence_Fast_GET_ITEM(seq, i);
    if (!UOp_Check(u)) { PyErr_Format(PyExc_TypeError, "line_rewrite needs UOps, got %.100s", Py_TYPE(u)->tp_name); rc = -1; break; }
    UOp *became = rewrite_line((UOp *)u, pm, &replaced, out);
    rc = became && PyList_Append(keep, (PyObject *)became) == 0 && ptrmap_set(&replaced, u, became) == 0 ? 0 : -1;
    Py_XDECREF(became);
  }
  ptrmap_free(&replaced);
  Py_XDECREF(seq); Py_XDECREF(keep);
  if (rc < 0) Py_CLEAR(out);
  return out;
}

/* ---------------------------------------------------------------------------------------------- */
/* pm_linearize_cleanups (line rules: each answers (uop, lines), a tuple passed through as the     */
/* rule's result; the engine hands a native result on untouched when no UOp is required)          */
/* ---------------------------------------------------------------------------------------------- */

/* IF and ENDIF may only be made here, never come in with the graph */
RULE(no_if_in_graph) {
  PyErr_SetString(PyExc_RuntimeError, "if not allowed in graph");
  return NULL;
}

/* a store through a gated INDEX becomes IF(gate, index) STORE ENDIF */
RULE(gated_store_to_if, u, gate) {
  UOp *st = u, *mif = u_new(OP_IF, DTYPE(VOID), (UOp *[]){gate, st->src[0]}, 2, NULL);
  UOp *endif = u_new(OP_ENDIF, DTYPE(VOID), &mif, 1, NULL);
  if (!endif) return NULL;
  PyObject *lines = PyList_New(3);
  if (!lines) return NULL;
  PyList_SET_ITEM(lines, 0, Py_NewRef(mif));
  PyList_SET_ITEM(lines, 1, Py_NewRef(st));
  PyList_SET_ITEM(lines, 2, Py_NewRef(endif));
  PyObject *ret = PyTuple_Pack(2, (PyObject *)st, lines);
  Py_DECREF(lines);
  return (UOp *)pool_keep(ret);
}

static const RuleDef pm_linearize_cleanups_defs[] = {
  R("UPat((Ops.IF, Ops.ENDIF))", no_if_in_graph),
  R("UPat(Ops.STORE, name='u', allow_any_len=True,"
   " src=(UPat(Ops.INDEX, src=(UPat(), UPat(), UPat(name='gate', dtype=dtypes.bool))).or_casted(), UPat()))", gated_store_to_if),
};

/* ---------------------------------------------------------------------------------------------- */
/* CFGContext(sink).edges and pm_add_control_flow: order sibling loops by giving each RANGE an     */
/* extra source, the END it must come after                                                        */
/* ---------------------------------------------------------------------------------------------- */


/* deps[u]: the RANGEs and ENDs u depends on (itself included for those ops), in first-seen order, as
 * tinygrad's dict union keeps them. Most nodes depend on exactly what one of their sources does, so a
 * node shares that source's set; a new set is made only when a source adds something or u is a RANGE/END. */
typedef struct { Py_ssize_t n; UOp *items[]; } DepSet;
static const DepSet empty_deps = {0};

static bool deps_has(const DepSet *d, const UOp *x) {
  for (Py_ssize_t i = 0; i < d->n; i++)
    if (d->items[i] == x) return true;
  return false;
}

typedef struct {
  PtrMap pos;          /* node -> index + 1 in the toposort */
  const DepSet **deps; /* per index */
  PtrVec owned;        /* the DepSets made here */
  PtrVec nest_end, nest_closer;   /* nesting, in insertion order: END -> its closer (an END or the SINK) */
  PtrMap nested;       /* END -> 1 once it has a closer */
} CFG;

static const DepSet *deps_of(CFG *c, UOp *u) { return c->deps[(Py_ssize_t)ptrmap_get(&c->pos, u) - 1]; }

static DepSet *deps_new(CFG *c, const DepSet *from, Py_ssize_t room) {
  DepSet *d = PyMem_Malloc(sizeof(DepSet) + sizeof(UOp *) * (size_t)(from->n + room));
  if (!d) { PyErr_NoMemory(); return NULL; }
  if (ptrvec_push(&c->owned, d) < 0) { PyMem_Free(d); return NULL; }
  d->n = from->n;
  memcpy(d->items, from->items, sizeof(UOp *) * (size_t)from->n);
  return d;
}

static int fill_deps_and_nesting(CFG *c, PtrVec *nodes) {
  for (Py_ssize_t i = 0; i < nodes->len; i++) {
    UOp *u = nodes->items[i];
    const DepSet *cur = &empty_deps;
    for (int k = 0; k < u->nsrc; k++) {   /* deps[u] |= deps[s] */
      const DepSet *ds = deps_of(c, u->src[k]);
      if (ds == cur || !ds->n) continue;
      if (!cur->n) { cur = ds; continue; }
      Py_ssize_t extra = 0;
      for (Py_ssize_t j = 0; j < ds->n; j++) extra += !deps_has(cur, ds->items[j]);
      if (!extra) continue;
      DepSet *merged = deps_new(c, cur, extra);
      if (!merged) return -1;
      for (Py_ssize_t j = 0; j < ds->n; j++)
        if (!deps_has(cur, ds->items[j])) merged->items[merged->n++] = ds->items[j];
      cur = merged;
    }
    if (u->op == OP_END || u->op == OP_SINK) {   /* the ENDs inside u not yet given a closer */
      for (Py_ssize_t j = 0; j < cur->n; j++) {
        UOp *x = cur->items[j];
        if (x->op != OP_END || ptrmap_has(&c->nested, x)) continue;
        if (u->op != OP_SINK && !deps_has(deps_of(c, x), u->src[1])) continue;
        if (ptrmap_set(&c->nested, x, x) < 0 || ptrvec_push(&c->nest_end, x) < 0 || ptrvec_push(&c->nest_closer, u) < 0) return -1;
      }
    }
    if (u->op == OP_RANGE || u->op == OP_END) {
      DepSet *with = deps_new(c, cur, 1);
      if (!with) return -1;
      with->items[with->n++] = u;
      cur = with;
    }
    c->deps[i] = cur;
  }
  return 0;
}

/* siblings (ENDs under one closer), stably sorted by how many of the others each depends on */
static int sort_siblings(CFG *c, UOp **sibs, Py_ssize_t n) {
  Py_ssize_t *count = PyMem_Calloc((size_t)n + 1, sizeof(Py_ssize_t));
  if (!count) { PyErr_NoMemory(); return -1; }
  for (Py_ssize_t i = 0; i < n; i++) {
    const DepSet *dx = deps_of(c, sibs[i]);
    for (Py_ssize_t j = 0; j < n; j++) count[i] += deps_has(dx, sibs[j]);
  }
  for (Py_ssize_t i = 1; i < n; i++) {   /* insertion sort: stable, as sorted() */
    UOp *item = sibs[i];
    Py_ssize_t cnt = count[i], j = i;
    for (; j > 0 && count[j - 1] > cnt; j--) sibs[j] = sibs[j - 1], count[j] = count[j - 1];
    sibs[j] = item, count[j] = cnt;
  }
  PyMem_Free(count);
  return 0;
}

/* whether r is in x.backward_slice_with_self: for a RANGE or END that is whether x's deps hold it (deps gather every
 * RANGE and END below a node), without building the slice */
static int in_slice(CFG *c, UOp *x, UOp *r) {
  if (r->op == OP_RANGE || r->op == OP_END) return deps_has(deps_of(c, x), r);
  PyObject *slice = getattr_literal((PyObject *)x, "backward_slice_with_self");
  int has = slice ? PyDict_Contains(slice, (PyObject *)r) : -1;
  Py_XDECREF(slice);
  return has;
}

/* edges[y.src[1]] = x: y's RANGE waits for END x (x must not already depend on that RANGE) */
static int add_edge(CFG *c, PyObject *edges, UOp *x, UOp *y) {
  int cyc = in_slice(c, x, y->src[1]);
  if (cyc > 0) PyErr_SetString(PyExc_AssertionError, "add control flow: the loop order would form a cycle");
  return cyc != 0 ? -1 : PyDict_SetItem(edges, (PyObject *)y->src[1], (PyObject *)x);
}

/* chain each closer's ENDs in order: under the SINK one after another, under an END after its own RANGE.
 * Closers in the order they first appear in nesting, each with its ENDs in nesting order. */
static int edges_from_nesting(CFG *c, PyObject *edges) {
  Py_ssize_t n = c->nest_end.len;
  UOp **sibs = PyMem_Malloc(sizeof(UOp *) * (size_t)(n + 1));
  bool *done = PyMem_Calloc((size_t)n + 1, sizeof(bool));
  int rc = sibs && done ? 0 : -1;
  if (rc < 0) PyErr_NoMemory();
  for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
    if (done[i]) continue;
    UOp *closer = c->nest_closer.items[i];
    Py_ssize_t m = 0;
    for (Py_ssize_t j = i; j < n; j++)
      if (c->nest_closer.items[j] == closer) sibs[m++] = c->nest_end.items[j], done[j] = true;
    if ((rc = sort_siblings(c, sibs, m)) < 0) break;
    UOp *prev = closer->op == OP_SINK ? NULL : closer->src[1];
    for (Py_ssize_t k = 0; rc == 0 && k < m; k++) {
      if (prev) rc = add_edge(c, edges, prev, sibs[k]);
      prev = sibs[k];
    }
  }
  PyMem_Free(sibs); PyMem_Free(done);
  return rc;
}

/* tinygrad's CFGContext(sink).edges: a new dict RANGE -> the END it must follow */
PyObject *cfg_edges(UOp *sink) {
  if (uop_check_form(sink, "cfg_edges") < 0) return NULL;
  PyObject *nodes = uop_toposort_list(sink, NULL), *edges = PyDict_New();
  CFG c = {0};
  int rc = nodes && edges ? 0 : -1;
  PtrVec order = {0};
  if (rc == 0) {
    order.items = (void **)PySequence_Fast_ITEMS(nodes), order.len = PyList_GET_SIZE(nodes);
    if (!(c.deps = PyMem_Calloc((size_t)order.len + 1, sizeof(DepSet *)))) { PyErr_NoMemory(); rc = -1; }
  }
  if (rc == 0) rc = ptrmap_reserve(&c.pos, (size_t)order.len);
  for (Py_ssize_t i = 0; rc == 0 && i < order.len; i++) rc = ptrmap_set(&c.pos, order.items[i], (void *)(i + 1));
  if (rc == 0) rc = fill_deps_and_nesting(&c, &order);
  if (rc == 0) rc = edges_from_nesting(&c, edges);
  for (Py_ssize_t i = 0; i < c.owned.len; i++) PyMem_Free(c.owned.items[i]);
  ptrvec_free(&c.owned); ptrvec_free(&c.nest_end); ptrvec_free(&c.nest_closer);
  ptrmap_free(&c.pos); ptrmap_free(&c.nested);
  PyMem_Free(c.deps);
  Py_XDECREF(nodes);
  if (rc < 0) Py_CLEAR(edges);
  return edges;
}

/* range x with end, the edge's value, as one more source: a new reference, or NULL with the error */
static UOp *append_edge(UOp *x, PyObject *end) {
  if (!UOp_Check(end)) return (UOp *)PyErr_Format(PyExc_TypeError, "add control flow: an edge must be a UOp");
  return uop_append_src(x, (UOp *)end, NULL);
}

/* a RANGE with an END it must follow gets that END as one more source (ctx: the edges dict, or an
 * object with .edges as tinygrad's CFGContext) */
RULE(range_after_sibling, x) {
  PyObject *edges = PyDict_Check(ctx) ? Py_NewRef(ctx) : getattr_literal(ctx, "edges");
  if (!edges) return NULL;
  PyObject *y = PyObject_GetItem(edges, (PyObject *)x);
  Py_DECREF(edges);
  if (!y) { if (PyErr_ExceptionMatches(PyExc_KeyError)) PyErr_Clear(); return NULL; }
  UOp *ret = KEEP(append_edge(x, y));
  Py_DECREF(y);
  return ret;
}

static const RuleDef pm_add_control_flow_defs[] = {
  R("UPat(Ops.RANGE, name='x')", range_after_sibling),
};

/* pm_add_control_flow's rule as a step of the shared bottom-up walk (ops_eval.c): it fires only on the RANGEs the edges
 * name and reads the edges only. n, or n + (edges[n],) (kept in keep); NULL on error. */
static UOp *with_edge(PyObject *edges, UOp *n, PtrVec *keep) {
  PyObject *end = n->op == OP_RANGE ? PyDict_GetItemWithError(edges, (PyObject *)n) : NULL;
  if (!end) return PyErr_Occurred() ? NULL : n;
  if (UOp_Check(end) && uop_check_form((UOp *)end, "add control flow") < 0) return NULL;   /* the walk goes on below it */
  UOp *m = append_edge(n, end);
  if (m && ptrvec_push(keep, m) < 0) Py_CLEAR(m);
  return m;
}

UOp *add_control_flow(UOp *sink, PyObject *edges) {
  if (!PyDict_GET_SIZE(edges)) return (UOp *)Py_NewRef(sink);   /* a single loop nest: nothing to add */
  return bottom_up_walk(sink, edges, with_edge, op_bit(OP_RANGE));
}

/* ---------------------------------------------------------------------------------------------- */
/* pm_split_ends: an END of several ranges becomes nested ENDs of one range each                   */
/* ---------------------------------------------------------------------------------------------- */

static PyObject *attrgetter_arg;   /* operator.attrgetter("arg") */

/* END(x, r...) -> END(END(x, innermost), ...): the ranges of the ended ones, highest arg innermost */
RULE(split_end, e) {
  UOp *group = u_new(OP_SINK, DTYPE(VOID), e->src + 1, e->nsrc - 1, NULL);
  PyObject *ranges = group ? pool_keep(getattr_literal((PyObject *)group, "ranges")) : NULL;
  PyObject *order = ranges ? pool_keep(PySequence_List(ranges)) : NULL;
  PyObject *kwargs = order ? pool_keep(Py_BuildValue("{sOsO}", "key", attrgetter_arg, "reverse", Py_True)) : NULL;
  PyObject *sort = kwargs ? pool_keep(getattr_literal(order, "sort")) : NULL, *empty = sort ? pool_keep(PyTuple_New(0)) : NULL;
  if (!empty || !pool_keep(PyObject_Call(sort, empty, kwargs))) return NULL;
  UOp *ret = e->src[0];
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(order); i++)
    ret = u_new(OP_END, DTYPE(VOID), (UOp *[]){ret, (UOp *)PyList_GET_ITEM(order, i)}, 2, NULL);
  return ret;
}

static const RuleDef pm_split_ends_defs[] = {
  R("UPat(Ops.END, name='e')", split_end),
};

/* ---------------------------------------------------------------------------------------------- */
/* do_linearize: PROGRAM(sink, device) gains LINEAR(the lines)                                      */
/* ---------------------------------------------------------------------------------------------- */

/* tinygrad's do_linearize(prg, sink): a new reference to prg with one more source, LINEAR of the lines */
UOp *do_linearize(UOp *prg, UOp *sink) {
  if (uop_check_form(prg, "do_linearize") < 0) return NULL;
  PyObject *lines = linearize(sink), *cleaned = lines ? line_rewrite(lines, native_get("pm_linearize_cleanups")) : NULL;
  Py_XDECREF(lines);
  if (!cleaned) return NULL;
  if (spec_check(cleaned, "program_spec") < 0) { Py_DECREF(cleaned); return NULL; }
  UOp *linear = uop_new(OP_LINEAR, DTYPE(VOID), (UOp **)PySequence_Fast_ITEMS(cleaned), PyList_GET_SIZE(cleaned), NULL, NULL);
  Py_DECREF(cleaned);
  UOp *ret = uop_append_src(prg, linear, NULL);
  Py_XDECREF(linear);
  return ret;
}

/* ---------------------------------------------------------------------------------------------- */
/* Python                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

static PyObject *py_linearize(PyObject *mod, PyObject *sink) {
  UNUSED(mod);
  if (!UOp_Check(sink)) return PyErr_Format(PyExc_TypeError, "linearize needs a UOp, got %.100s", Py_TYPE(sink)->tp_name);
  return linearize((UOp *)sink);
}

static PyObject *py_line_rewrite(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *lst, *pm;
  if (!PyArg_ParseTuple(args, "OO!:line_rewrite", &lst, &PatternMatcher_Type, &pm)) return NULL;
  return line_rewrite(lst, (PatternMatcher *)pm);
}

static PyObject *py_cfg_edges(PyObject *mod, PyObject *sink) {
  UNUSED(mod);
  if (!UOp_Check(sink)) return PyErr_Format(PyExc_TypeError, "cfg_edges needs a UOp, got %.100s", Py_TYPE(sink)->tp_name);
  return cfg_edges((UOp *)sink);
}

static PyObject *py_add_control_flow(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  UOp *sink;
  PyObject *edges;
  if (!PyArg_ParseTuple(args, "O!O!:add_control_flow", &UOp_Type, &sink, &PyDict_Type, &edges) || uop_check_form(sink, "add_control_flow") < 0)
    return NULL;
  return (PyObject *)add_control_flow(sink, edges);
}

static PyObject *py_do_linearize(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  UOp *prg, *sink;
  if (!PyArg_ParseTuple(args, "O!O!:do_linearize", &UOp_Type, &prg, &UOp_Type, &sink)) return NULL;
  return (PyObject *)do_linearize(prg, sink);
}

static PyMethodDef linearizer_functions[] = {
  {"linearize", py_linearize, METH_O, "linearize(sink): every node under sink in program order (a list of UOps)"},
  {"line_rewrite", py_line_rewrite, METH_VARARGS,
   "line_rewrite(lst, pm): rewrite a toposorted list line by line; a rule answers (uop, lines to emit)"},
  {"do_linearize", py_do_linearize, METH_VARARGS,
   "do_linearize(prg, sink): prg with LINEAR(line_rewrite(linearize(sink), pm_linearize_cleanups)) appended to its sources"},
  {"cfg_edges", py_cfg_edges, METH_O, "cfg_edges(sink): tinygrad's CFGContext(sink).edges (RANGE -> the END it must follow)"},
  {"add_control_flow", py_add_control_flow, METH_VARARGS,
   "add_control_flow(sink, edges): graph_rewrite(sink, pm_add_control_flow, ctx=edges, bottom_up=True), as the pipeline runs it"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_linearizer(PyObject *m) {
  if (PyType_Ready(&SortKey_Type) < 0) return -1;
  PyObject *operator_mod = PyImport_ImportModule("operator");
  attrgetter_arg = operator_mod ? PyObject_CallMethod(operator_mod, "attrgetter", "s", "arg") : NULL;
  Py_XDECREF(operator_mod);
  if (!attrgetter_arg || ctxvar_flag("TUPLE_ORDER", &tuple_order) < 0 || PyModule_AddFunctions(m, linearizer_functions) < 0)
    return -1;
  return native_register("pm_linearize_cleanups", pm_from_defs(pm_linearize_cleanups_defs, N(pm_linearize_cleanups_defs))) < 0 ||
         native_register("pm_add_control_flow", pm_from_defs(pm_add_control_flow_defs, N(pm_add_control_flow_defs))) < 0 ||
         native_register("pm_split_ends", pm_from_defs(pm_split_ends_defs, N(pm_split_ends_defs))) < 0 ? -1 : 0;
}
