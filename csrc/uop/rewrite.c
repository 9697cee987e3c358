/* tinygrad/uop/ops.py, "simple graph rewrite engine": graph_rewrite as tinygrad 0.12.0's
 * RewriteContext.unified_rewrite, with the same stack discipline (a deque: pop from the right,
 * re-queue on the left) so the same rules meet the same nodes in the same order. Where no rule call
 * can tell the order (C rules over a ctx they only read), the walk skips what cannot change and does a
 * waiting source at once (inert, push_source): the answers stay tinygrad's. */
#include "upat.h"
#include "../helpers.h"

#define REWRITE_STACK_LIMIT 250000

/* a node's step: n, what it is becoming, the stage, and n's entry in the node map (its index, stable as entries are
 * added: the map's lookups are the walk's most frequent work) */
typedef struct { UOp *n, *new_n; uint32_t stage, at; } Frame;

/* a ring-buffer deque of frames; the capacity is a power of two */
typedef struct { Frame *buf; size_t cap, head, len; } Deque;

/* The buffers of a finished rewrite, kept for the next one: codegen runs some twenty rewrites per kernel, and growing a
 * fresh stack and entry array for each cost a small kernel more than its walk. One spare of each kind, taken and given
 * back under the GIL; a buffer past SPARE_MAX_BYTES is freed instead. */
typedef struct { void *buf; size_t cap; } Spare;
static Spare spare_frames, spare_entries;
#define SPARE_MAX_BYTES ((size_t)1 << 22)

static void *spare_take(Spare *s, size_t *cap) {
  void *buf = s->buf;
  *cap = s->cap;
  s->buf = NULL, s->cap = 0;
  return buf;
}
static void spare_give(Spare *s, void *buf, size_t cap, size_t item_size) {
  if (!buf || cap * item_size > SPARE_MAX_BYTES || (s->buf && s->cap >= cap)) { PyMem_Free(buf); return; }
  PyMem_Free(s->buf);
  s->buf = buf, s->cap = cap;
}

static __attribute__((noinline)) int deque_grow(Deque *d) {
  size_t cap = d->cap ? d->cap * 2 : 256;
  Frame *buf = PyMem_Malloc(cap * sizeof(Frame));
  if (!buf) { PyErr_NoMemory(); return -1; }
  for (size_t i = 0; i < d->len; i++) buf[i] = d->buf[(d->head + i) & (d->cap - 1)];
  PyMem_Free(d->buf);
  d->buf = buf, d->cap = cap, d->head = 0;
  return 0;
}
static inline int deque_reserve(Deque *d) { return d->len < d->cap ? 0 : deque_grow(d); }
static int push_right(Deque *d, UOp *n, uint32_t stage, UOp *new_n, uint32_t at) {
  if (deque_reserve(d) < 0) return -1;
  d->buf[(d->head + d->len++) & (d->cap - 1)] = (Frame){n, new_n, stage, at};
  return 0;
}
static int push_left(Deque *d, UOp *n, uint32_t stage, UOp *new_n, uint32_t at) {
  if (deque_reserve(d) < 0) return -1;
  d->head = (d->head + d->cap - 1) & (d->cap - 1);
  d->buf[d->head] = (Frame){n, new_n, stage, at};
  d->len++;
  return 0;
}
static Frame pop_right(Deque *d) { return d->buf[(d->head + --d->len) & (d->cap - 1)]; }

/* Everything the rewrite knows about a node: its rewritten node (tinygrad's replace), the bottom-up
 * matcher's cached answer, whether it was queued. The entries sit in one array; a node finds its entry
 * through its own scratch fields (rw_id: which rewrite, rw_idx: where), with no hashing. The fields are narrow (a
 * node stays small): ids are reused, never two running rewrites' at once, and an entry past rw_idx's reach, like a
 * node whose fields a stale id left, is told apart by naming its node. A rewrite run from inside a rule (nested)
 * overwrites those fields of the nodes it meets, so it notes the old values and puts them back when it ends; an entry
 * is trusted only when it names the node.
 * Rewrites of other threads interleave with this one (a Python rule gives up the GIL), and they share the
 * nodes, so a node whose fields belong to another thread's running rewrite is left alone: its entry is found
 * through the side map instead. */
typedef struct { UOp *key, *replace; void *bpm; bool on_stack, expanded; } Entry;   /* expanded: its stage 0 has run */
typedef struct { UOp *u; uint32_t id, idx; } Saved;
typedef struct NodeMap {
  uint32_t id;
  unsigned long thread;      /* the thread running it */
  Entry *e;
  size_t cap, len;
  Saved *saved;              /* nested rewrites: the scratch fields to restore */
  size_t nsaved, saved_cap;
  PtrMap side;               /* node -> its entry's index + 1, for nodes another thread's rewrite holds */
  struct NodeMap *next_active;
} NodeMap;

#define RW_ID_MAX 255u                          /* rw_id's 8 bits */
#define RW_IDX_LIMIT (1u << 24)                 /* rw_idx's 24 bits: entries from here on live in the side map */
static uint32_t rewrite_last_id;                /* ids of rewrites, 1 to RW_ID_MAX */
static FAST_TLS int rewrite_depth;              /* rewrites running in this thread (a nested one saves what it overwrites) */
static NodeMap *active_rewrites;                /* every rewrite running, in any thread (the GIL orders the changes) */

static __attribute__((noinline)) Entry *nodemap_get_side(const NodeMap *m, const UOp *key) {
  size_t at = (size_t)ptrmap_get(&m->side, key);
  return at ? &m->e[at - 1] : NULL;
}
/* inlined: the node's own fields answer nearly every call */
static inline Entry *nodemap_get(const NodeMap *m, const UOp *key) {
  if (key->rw_id == m->id && key->rw_idx < m->len && m->e[key->rw_idx].key == key) return &m->e[key->rw_idx];
  return m->side.len ? nodemap_get_side(m, key) : NULL;
}
/* the running rewrite with this id, or NULL */
static const NodeMap *running(uint32_t id) {
  for (NodeMap *a = active_rewrites; a; a = a->next_active) if (a->id == id) return a;
  return NULL;
}
static bool held_by_other_thread(const NodeMap *m, uint32_t id) {
  const NodeMap *a = running(id);
  return a && a->thread != m->thread;
}
static int nodemap_init(NodeMap *m, size_t cap) {
  memset(m, 0, sizeof(*m));
  uint32_t tries = 0;
  do {   /* the next id no running rewrite has: a node's fields then name at most one running rewrite */
    rewrite_last_id = rewrite_last_id % RW_ID_MAX + 1;
    if (++tries > RW_ID_MAX) { PyErr_SetString(PyExc_RecursionError, "too many graph_rewrites running at once"); return -1; }
  } while (running(rewrite_last_id));
  m->id = rewrite_last_id, m->thread = PyThread_get_thread_ident();
  size_t spare_cap;
  m->e = spare_take(&spare_entries, &spare_cap);
  if (m->e && spare_cap < cap) PyMem_Free(m->e), m->e = NULL;
  m->cap = m->e ? spare_cap : cap;
  if (!m->e && !(m->e = PyMem_Malloc(cap * sizeof(Entry)))) { PyErr_NoMemory(); return -1; }
  m->next_active = active_rewrites, active_rewrites = m;
  return 0;
}
static void nodemap_free(NodeMap *m) {
  for (NodeMap **a = &active_rewrites; *a; a = &(*a)->next_active)
    if (*a == m) { *a = m->next_active; break; }
  for (size_t i = m->nsaved; i-- > 0;) {   /* newest first: the oldest saved value is the one to keep */
    Saved *sv = &m->saved[i];
    if (sv->u->rw_id == m->id) sv->u->rw_id = sv->id, sv->u->rw_idx = sv->idx;
  }
  spare_give(&spare_entries, m->e, m->cap, sizeof(Entry));
  PyMem_Free(m->saved);
  ptrmap_free(&m->side);
}
/* the node's entry, added if missing; valid until the next add */
static Entry *nodemap_add(NodeMap *m, UOp *key) {
  Entry *e = nodemap_get(m, key);
  if (e) return e;
  if (m->len == m->cap) {
    Entry *bigger = PyMem_Realloc(m->e, m->cap * 2 * sizeof(Entry));
    if (!bigger) { PyErr_NoMemory(); return NULL; }
    m->e = bigger, m->cap *= 2;
  }
  if (m->len >= RW_IDX_LIMIT || (key->rw_id && key->rw_id != m->id && held_by_other_thread(m, key->rw_id))) {
    if (ptrmap_set(&m->side, key, (void *)(m->len + 1)) < 0) return NULL;
  } else {
    if (rewrite_depth > 1 && key->rw_id) {
      if (m->nsaved == m->saved_cap) {
        size_t cap = m->saved_cap ? m->saved_cap * 2 : 64;
        Saved *more = PyMem_Realloc(m->saved, cap * sizeof(Saved));
        if (!more) { PyErr_NoMemory(); return NULL; }
        m->saved = more, m->saved_cap = cap;
      }
      m->saved[m->nsaved++] = (Saved){key, key->rw_id, key->rw_idx};
    }
    key->rw_id = m->id, key->rw_idx = (uint32_t)m->len;
  }
  e = &m->e[m->len++];
  *e = (Entry){key, NULL, NULL, false};
  return e;
}
static UOp *get_replace(const NodeMap *m, const UOp *n) {
  Entry *e = nodemap_get(m, n);
  return e ? e->replace : NULL;
}

typedef struct {
  PatternMatcher *pm, *bpm;
  uint32_t root_bits;        /* the ops some rule of either matcher matches at the root */
  bool order_free;           /* no rule call can tell the order of the calls (see rewriter_begin) */
  PyObject *ctx;
  NodeMap nodes;
  PyObject *keep;            /* a list owning every node made here, so the map's pointers stay valid */
} Rewriter;

static char no_match_marker;
#define NO_MATCH ((void *)&no_match_marker)

static int keep_alive(Rewriter *rw, PyObject *o) { return PyList_Append(rw->keep, o); }

/* the bottom-up matcher's result for x, cached; *out NULL when nothing fires */
static int cached_bpm_rewrite(Rewriter *rw, UOp *x, UOp **out) {
  Entry *e = nodemap_get(&rw->nodes, x);
  void *hit = e ? e->bpm : NULL;
  if (hit) { *out = hit == NO_MATCH ? NULL : hit; return 0; }
  PyObject *ret = pm_rewrite(rw->bpm, x, rw->ctx, true);
  if (!ret && PyErr_Occurred()) return -1;
  if (ret && keep_alive(rw, ret) < 0) { Py_DECREF(ret); return -1; }
  Py_XDECREF(ret);   /* kept alive by rw->keep */
  *out = (UOp *)ret;
  if (!(e = nodemap_add(&rw->nodes, x))) return -1;
  e->bpm = ret ? ret : NO_MATCH;
  return 0;
}

/* Stage 0 with a bottom-up matcher: rewrite to a fixed point. 1: gated (done), 0: go on, -1: error. */
static int bottom_up_fixed_point(Rewriter *rw, UOp *n, uint32_t at, UOp **new_n) {
  SmallSet seen = {0};
  UOp *test_n = n;
  int rc = 0;
  while (test_n) {
    int again = smallset_add(&seen, test_n);
    if (again) {
      if (again > 0) PyErr_SetString(PyExc_RuntimeError, "infinite loop in fixed_point_rewrite");
      rc = -1;
      break;
    }
    UOp *next;
    if (cached_bpm_rewrite(rw, test_n, &next) < 0) {
      if (PyErr_ExceptionMatches(BottomUpGate)) {   /* the rule says: this node is final, don't descend */
        PyErr_Clear();
        rw->nodes.e[at].replace = test_n, rc = 1;
      } else rc = -1;
      break;
    }
    *new_n = test_n, test_n = next;
  }
  smallset_free(&seen);
  return rc;
}

/* No rule can fire on a node whose graph holds none of the matchers' root ops, so the walk would give back the node
 * itself having called nothing: it is its own rewrite at once, its graph unwalked. That changes when the nodes that
 * waited on it go on, and so the order of the rules' calls: only done where no call can tell (see rewriter_begin). */
static bool inert(const Rewriter *rw, const UOp *n) { return !(n->ops_below & rw->root_bits); }

/* Whether stage 0 pushes source x (its entry e). tinygrad pushes a node once: a parent that meets a source already
 * waiting deeper in the stack is re-queued until that source is done. Where the order of the calls cannot show, a
 * source not yet expanded is pushed again, to be done now (its older frame is skipped later): same answers, without
 * the re-queues, which in a DAG come about once per node. */
static bool push_source(const Rewriter *rw, const Entry *e) {
  return !e->on_stack || (rw->order_free && !e->expanded && !e->replace);
}

static int stage0(Rewriter *rw, Deque *stack, UOp *n, uint32_t at) {
  if (inert(rw, n)) { rw->nodes.e[at].replace = n; return 0; }
  if (rw->order_free && rw->nodes.e[at].expanded) return 0;   /* a frame left from before its source was pushed again */
  rw->nodes.e[at].expanded = true;
  UOp *new_n = n;
  if (rw->bpm) {
    int r = bottom_up_fixed_point(rw, n, at, &new_n);
    if (r) return r < 0 ? -1 : 0;
  }
  if (push_right(stack, n, 1, new_n, at) < 0) return -1;
  for (int i = new_n->nsrc - 1; i >= 0; i--) {
    UOp *x = new_n->src[i];
    Entry *e = nodemap_add(&rw->nodes, x);
    if (!e) return -1;
    if (!push_source(rw, e)) continue;
    e->on_stack = true;
    if (inert(rw, x)) e->replace = x;
    else if (push_right(stack, x, 0, x, (uint32_t)(e - rw->nodes.e)) < 0) return -1;
  }
  return 0;
}

/* Stage 1: once every source is rewritten, rebuild the node (sources changed) or run the top-down
 * matcher on it; either way the result goes through stage 0 and is linked back in stage 2.
 * Returns 1 when it had to wait (re-queued), 0 otherwise, -1 on error. */
static int stage1(Rewriter *rw, Deque *stack, UOp *n, UOp *new_n, uint32_t at) {
  UOp *stack_src[8], **src = new_n->nsrc <= 8 ? stack_src : PyMem_Malloc(sizeof(UOp *) * new_n->nsrc);
  if (!src) { PyErr_NoMemory(); return -1; }
  bool changed = false;
  int rc = 0;
  for (int i = 0; i < new_n->nsrc; i++) {
    UOp *rx = get_replace(&rw->nodes, new_n->src[i]);
    if (!rx) { rc = push_left(stack, n, 1, new_n, at) < 0 ? -1 : 1; goto end; }
    src[i] = rx;
    changed |= rx != new_n->src[i];
  }
  UOp *next;
  if (!changed) {
    PyObject *ret = rw->pm ? pm_rewrite(rw->pm, new_n, rw->ctx, true) : NULL;
    if (!ret) {
      if (PyErr_Occurred()) rc = -1;
      else rw->nodes.e[at].replace = new_n;
      goto end;
    }
    int k = keep_alive(rw, ret);
    Py_DECREF(ret);
    if (k < 0) { rc = -1; goto end; }
    next = (UOp *)ret;
  } else {
    next = uop_new(new_n->op, new_n->dtype, src, new_n->nsrc, new_n->arg, uop_tag(new_n));
    if (!next) { rc = -1; goto end; }
    int k = keep_alive(rw, (PyObject *)next);
    Py_DECREF(next);
    if (k < 0) { rc = -1; goto end; }
  }
  Entry *ne = nodemap_add(&rw->nodes, next);   /* an entry to name in the frame: not on the stack, nothing known yet */
  rc = (!ne || push_right(stack, n, 2, next, at) < 0 || push_right(stack, next, 0, next, (uint32_t)(ne - rw->nodes.e)) < 0) ? -1 : 0;
end:
  if (src != stack_src) PyMem_Free(src);
  return rc;
}

static UOp *unified_rewrite(Rewriter *rw, UOp *root) {
  Deque stack = {0};
  stack.buf = spare_take(&spare_frames, &stack.cap);
  UOp *ret = NULL;
  size_t waiting = 0;   /* frames re-queued in a row: a full lap of them means no progress is possible */
  Entry *re = nodemap_add(&rw->nodes, root);
  if (!re) goto end;
  re->on_stack = true;
  if (push_right(&stack, root, 0, root, (uint32_t)(re - rw->nodes.e)) < 0) goto end;
  while (stack.len) {
    if (stack.len > REWRITE_STACK_LIMIT) { PyErr_SetString(PyExc_RuntimeError, "infinite loop in graph_rewrite (stack too big)"); goto end; }
    if (waiting > stack.len) { PyErr_SetString(PyExc_RuntimeError, "graph_rewrite made no progress (the rewrites form a loop)"); goto end; }
    Frame f = pop_right(&stack);
    if (rw->nodes.e[f.at].replace) continue;
    int r;
    if (f.stage == 0) r = stage0(rw, &stack, f.n, f.at);
    else if (f.stage == 1) r = stage1(rw, &stack, f.n, f.new_n, f.at);
    else {
      UOp *done = get_replace(&rw->nodes, f.new_n);
      if (done) rw->nodes.e[f.at].replace = done, r = 0;
      else r = push_left(&stack, f.n, 2, f.new_n, f.at) < 0 ? -1 : 1;
    }
    if (r < 0) goto end;
    waiting = r == 1 ? waiting + 1 : 0;
  }
  ret = get_replace(&rw->nodes, root);
  Py_XINCREF(ret);
end:
  spare_give(&spare_frames, stack.buf, stack.cap, sizeof(Frame));
  return ret;
}

/* a rewrite's state, as tinygrad's RewriteContext(pm if not bottom_up, pm if bottom_up else bpm, ctx); 0 or -1.
 * Inert subgraphs are skipped only when the order of the rules' calls cannot show: C rules (a Python rule may count its
 * calls) over a ctx they do not write (a list or dict ctx records the order). */
static int rewriter_begin(Rewriter *rw, PatternMatcher *pm, PyObject *ctx, bool bottom_up, PatternMatcher *bpm, bool ctx_read_only) {
  if (!ctx) ctx = Py_None;
  bool order_free = (ctx_read_only || ctx == Py_None) && pm->all_native && (!bpm || bpm->all_native);
  uint32_t root_bits = order_free ? pm->root_bits | (bpm ? bpm->root_bits : 0) : UINT32_MAX;
  *rw = (Rewriter){bottom_up ? NULL : pm, bottom_up ? pm : bpm, root_bits, order_free, ctx, {0}, PyList_New(0)};
  if (!rw->keep) return -1;
  if (nodemap_init(&rw->nodes, 128) < 0) { Py_DECREF(rw->keep); return -1; }
  rewrite_depth++;
  return 0;
}

static void rewriter_end(Rewriter *rw) {
  rewrite_depth--;
  nodemap_free(&rw->nodes);
  Py_DECREF(rw->keep);
}

static UOp *rewrite_once(UOp *sink, PatternMatcher *pm, PyObject *ctx, bool bottom_up, PatternMatcher *bpm, bool ctx_read_only) {
  Rewriter rw;
  if (rewriter_begin(&rw, pm, ctx, bottom_up, bpm, ctx_read_only) < 0) return NULL;
  UOp *ret = unified_rewrite(&rw, sink);
  rewriter_end(&rw);
  return ret;
}

UOp *graph_rewrite(UOp *sink, PatternMatcher *pm, PyObject *ctx, bool bottom_up, PatternMatcher *bpm) {
  return rewrite_once(sink, pm, ctx, bottom_up, bpm, false);
}

UOp *graph_rewrite_read_only_ctx(UOp *sink, PatternMatcher *pm, PyObject *ctx, bool bottom_up) {
  return rewrite_once(sink, pm, ctx, bottom_up, NULL, true);
}

/* tinygrad's graph_rewrite_map: each node of sink's graph (sources first; users first when bottom_up) mapped to what one
 * shared rewrite makes of it, so the nodes rewritten for one are reused for the next */
static PyObject *rewrite_map(UOp *sink, PatternMatcher *pm, PyObject *ctx, bool bottom_up, PatternMatcher *bpm) {
  PyObject *order = uop_toposort_list(sink, NULL), *map = order ? PyDict_New() : NULL;
  Rewriter rw;
  if (!map || rewriter_begin(&rw, pm, ctx, bottom_up, bpm, false) < 0) { Py_XDECREF(order); Py_XDECREF(map); return NULL; }
  Py_ssize_t n = PyList_GET_SIZE(order);
  for (Py_ssize_t i = 0; map && i < n; i++) {
    PyObject *k = PyList_GET_ITEM(order, bottom_up ? n - 1 - i : i), *v = (PyObject *)unified_rewrite(&rw, (UOp *)k);
    if (!v || PyDict_SetItem(map, k, v) < 0) Py_CLEAR(map);
    Py_XDECREF(v);
  }
  rewriter_end(&rw);
  Py_DECREF(order);
  return map;
}

/* input_map's keys added to map, each to what map says of its value (its value itself when map has none) */
static int add_input_map(PyObject *map, PyObject *input_map) {
  PyObject *k, *v;
  for (Py_ssize_t pos = 0; PyDict_Next(input_map, &pos, &k, &v);) {
    PyObject *to = PyDict_GetItemWithError(map, v);
    if ((!to && PyErr_Occurred()) || PyDict_SetItem(map, k, to ? to : v) < 0) return -1;
  }
  return 0;
}

static PyObject *py_graph_rewrite(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"sink", "pm", "ctx", "bottom_up", "name", "bpm", NULL};
  PyObject *sink, *pm, *ctx = Py_None, *name = Py_None, *bpm = Py_None;
  int bottom_up = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OpOO:graph_rewrite", kwlist, &sink, &pm, &ctx, &bottom_up, &name, &bpm)) return NULL;
  if (!UOp_Check(sink)) return PyErr_Format(PyExc_TypeError, "graph_rewrite needs a UOp, not %.100s", Py_TYPE(sink)->tp_name);
  if (!PatternMatcher_Check(pm)) return PyErr_Format(PyExc_TypeError, "graph_rewrite needs a PatternMatcher, not %.100s", Py_TYPE(pm)->tp_name);
  if (bpm != Py_None && !PatternMatcher_Check(bpm)) return PyErr_Format(PyExc_TypeError, "bpm must be a PatternMatcher");
  return (PyObject *)graph_rewrite((UOp *)sink, (PatternMatcher *)pm, ctx, bottom_up, bpm == Py_None ? NULL : (PatternMatcher *)bpm);
}

static PyObject *py_graph_rewrite_map(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"sink", "pm", "ctx", "bottom_up", "name", "bpm", "input_map", NULL};
  PyObject *sink, *pm, *ctx = Py_None, *name = Py_None, *bpm = Py_None, *input_map = Py_None;
  int bottom_up = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OpOOO:graph_rewrite_map", kwlist, &sink, &pm, &ctx, &bottom_up, &name, &bpm, &input_map))
    return NULL;
  if (!UOp_Check(sink)) return PyErr_Format(PyExc_AttributeError, "graph_rewrite_map needs a UOp, not %.100s", Py_TYPE(sink)->tp_name);
  if (!PatternMatcher_Check(pm)) return PyErr_Format(PyExc_TypeError, "graph_rewrite_map needs a PatternMatcher, not %.100s", Py_TYPE(pm)->tp_name);
  if (bpm != Py_None && !PatternMatcher_Check(bpm)) return PyErr_Format(PyExc_TypeError, "bpm must be a PatternMatcher");
  if (input_map != Py_None && !PyDict_Check(input_map)) return PyErr_Format(PyExc_AttributeError, "input_map must be a dict");
  PyObject *map = rewrite_map((UOp *)sink, (PatternMatcher *)pm, ctx, bottom_up, bpm == Py_None ? NULL : (PatternMatcher *)bpm);
  if (map && input_map != Py_None && add_input_map(map, input_map) < 0) Py_CLEAR(map);
  return map;
}

static PyMethodDef rewrite_functions[] = {
  {"graph_rewrite_map", (PyCFunction)(void (*)(void))py_graph_rewrite_map, METH_VARARGS | METH_KEYWORDS,
   "graph_rewrite_map(sink, pm, ctx=None, bottom_up=False, name=None, bpm=None, input_map=None): {node: its rewrite}"},
  {"graph_rewrite", (PyCFunction)(void (*)(void))py_graph_rewrite, METH_VARARGS | METH_KEYWORDS,
   "graph_rewrite(sink, pm, ctx=None, bottom_up=False, name=None, bpm=None)"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_rewrite(PyObject *m) { return PyModule_AddFunctions(m, rewrite_functions); }
