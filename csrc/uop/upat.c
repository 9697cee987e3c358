/* tinygrad/uop/ops.py, "pattern matcher": UPat, its matching, and PatternMatcher.
 * Matching enumerates the same matches in the same order as tinygrad's UPat.match (permutations
 * in itertools order, UPat.any alternatives in order), depth first with backtracking, and hands
 * each complete match to the rule until the rule returns something. */
#include "native.h"
#include "form.h"
#include <stddef.h>

PyObject *BottomUpGate;

/* ------------------------------------------------------------------------------------------
 * Capture names: one slot per distinct name, program-wide
 * ------------------------------------------------------------------------------------------ */

static PyObject *slot_of_name;            /* dict str -> int */
static PyObject *name_of_slot[MAX_CAPTURES];
static int nslots;

static int slot_for(PyObject *name) {
  PyObject *v = PyDict_GetItemWithError(slot_of_name, name);
  if (v) return (int)PyLong_AsLong(v);
  if (PyErr_Occurred()) return -1;
  if (nslots == MAX_CAPTURES) { PyErr_Format(PyExc_ValueError, "more than %d distinct UPat names", MAX_CAPTURES); return -1; }
  PyObject *id = PyLong_FromLong(nslots);
  if (!id || PyDict_SetItem(slot_of_name, name, id) < 0) { Py_XDECREF(id); return -1; }
  Py_DECREF(id);
  name_of_slot[nslots] = Py_NewRef(name);
  return nslots++;
}

int capture_slot(const char *name) {
  PyObject *s = PyUnicode_InternFromString(name);
  int slot = s ? slot_for(s) : -1;
  Py_XDECREF(s);
  return slot;
}

/* ------------------------------------------------------------------------------------------
 * UPat construction
 * ------------------------------------------------------------------------------------------ */

/* while a native rule's pattern is evaluated: the (C file, line) of its table entry, the location of the UPats it makes */
static PyObject *native_location;
void upat_set_native_location(PyObject *location) { native_location = location; }

static PyObject *caller_location(void) {
  if (native_location) return Py_NewRef(native_location);
  PyFrameObject *frame = PyEval_GetFrame();
  if (!frame) return Py_BuildValue("(si)", "<C>", 0);
  PyCodeObject *code = PyFrame_GetCode(frame);
  PyObject *loc = Py_BuildValue("(Oi)", code->co_filename, PyFrame_GetLineNumber(frame));
  Py_DECREF(code);
  return loc;
}

static bool all_same_pats(UPat *const *src, int n) {
  for (int i = 1; i < n; i++)
    if (src[i] != src[0]) return false;
  return true;
}

/* rows of indices in itertools.permutations order (lexicographic) */
static int fill_permutations(UPat *p) {
  int n = p->nsrc, count = 1;
  for (int i = 2; i <= n; i++) count *= i;
  if (n > 6) { PyErr_Format(PyExc_ValueError, "UPat: %d commutative sources is too many", n); return -1; }
  if (!(p->perms = PyMem_Malloc((size_t)(count * n)))) { PyErr_NoMemory(); return -1; }
  uint8_t cur[8];
  for (int i = 0; i < n; i++) cur[i] = (uint8_t)i;
  for (int row = 0; row < count; row++) {
    memcpy(p->perms + row * n, cur, (size_t)n);
    int i = n - 2;   /* next permutation */
    while (i >= 0 && cur[i] > cur[i + 1]) i--;
    if (i < 0) break;
    int j = n - 1;
    while (cur[j] < cur[i]) j--;
    uint8_t t = cur[i]; cur[i] = cur[j]; cur[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) t = cur[a], cur[a] = cur[b], cur[b] = t;
  }
  p->nperms = count;
  return 0;
}

static PyObject *ops_tuple_of(OpSet ops) {
  PyObject *t = PyList_New(0);
  for (int op = 1; t && op < OP_COUNT; op++)
    if (opset_has(ops, op) && PyList_Append(t, ops_members[op]) < 0) Py_CLEAR(t);
  PyObject *ret = t ? PyList_AsTuple(t) : NULL;
  Py_XDECREF(t);
  return ret;
}

UPat *upat_build(OpSet ops, bool has_ops, DType *const *dtypes, int ndtypes, SrcKind kind, UPat *const *src, int nsrc,
                 PyObject *arg, const char *name, bool allow_any_len) {
  UPat *p = PyObject_GC_New(UPat, &UPat_Type);
  if (!p) return NULL;
  memset((char *)p + sizeof(PyObject), 0, sizeof(UPat) - sizeof(PyObject));
  PyObject_GC_Track(p);
  p->slot = -1;
  p->ops = ops, p->has_ops = has_ops, p->src_kind = kind, p->nsrc = nsrc;
  if (ndtypes) {
    if (!(p->dtypes = PyMem_Malloc(sizeof(DType *) * (size_t)ndtypes))) goto nomem;
    memcpy(p->dtypes, dtypes, sizeof(DType *) * (size_t)ndtypes);
    p->ndtypes = ndtypes;
  }
  if (nsrc) {
    if (!(p->src = PyMem_Malloc(sizeof(UPat *) * (size_t)nsrc))) goto nomem;
    for (int i = 0; i < nsrc; i++) p->src[i] = (UPat *)Py_NewRef(src[i]);
  }
  if (kind == SRC_PERMUTE && all_same_pats(src, nsrc)) p->src_kind = kind = SRC_TUPLE;   /* one order is enough */
  if (kind == SRC_PERMUTE && fill_permutations(p) < 0) goto fail;
  p->arg = Py_XNewRef(arg);
  if (name && (!(p->name = PyUnicode_InternFromString(name)) || (p->slot = slot_for(p->name)) < 0)) goto fail;
  p->strict_length = !(allow_any_len || kind == SRC_REPEAT || kind == SRC_NONE);
  p->required_len = (kind == SRC_REPEAT || kind == SRC_NONE) ? 0 : nsrc;
  /* early reject: the single-op patterns among the sources (the first order of a permutation) */
  for (int i = 0; i < nsrc; i++) {
    UPat *s = src[i];
    if (s->has_ops && !s->is_any) {
      int count = 0, only = 0;
      for (int op = 1; op < OP_COUNT; op++)
        if (opset_has(s->ops, op)) count++, only = op;
      if (count == 1) opset_add(&p->early_reject, only);
    }
  }
  p->op = has_ops ? ops_tuple_of(ops) : Py_NewRef(Py_None);
  if (!p->op) goto fail;
  if (!(p->dtype = ndtypes ? PyTuple_New(ndtypes) : Py_NewRef(Py_None))) goto fail;
  for (int i = 0; i < ndtypes; i++) PyTuple_SET_ITEM(p->dtype, i, Py_NewRef(dtypes[i]));
  if (!(p->location = caller_location())) goto fail;
  return p;
nomem:
  PyErr_NoMemory();
fail:
  Py_DECREF(p);
  return NULL;
}

static void UPat_dealloc(UPat *p) {
  PyObject_GC_UnTrack(p);
  for (int i = 0; i < p->nsrc; i++) Py_XDECREF(p->src[i]);
  PyMem_Free(p->src); PyMem_Free(p->dtypes); PyMem_Free(p->perms);
  Py_XDECREF(p->op); Py_XDECREF(p->dtype); Py_XDECREF(p->arg); Py_XDECREF(p->name);
  Py_XDECREF(p->in_src); Py_XDECREF(p->custom_early_reject); Py_XDECREF(p->location);
  PyObject_GC_Del(p);
}
/* a UPat's arg, src and early-reject hook can be any Python objects, so a UPat can be in a reference cycle */
static int UPat_traverse(UPat *p, visitproc visit, void *arg) {
  for (int i = 0; i < p->nsrc; i++) Py_VISIT(p->src[i]);
  Py_VISIT(p->arg); Py_VISIT(p->in_src); Py_VISIT(p->custom_early_reject);
  return 0;
}
/* breaks a cycle through the user's objects; a cleared UPat matches any arg (NULL is "any") */
static int UPat_clear(UPat *p) {
  Py_CLEAR(p->arg); Py_CLEAR(p->in_src); Py_CLEAR(p->custom_early_reject);
  return 0;
}

/* op argument: an Ops member, or a tuple/set/list of them */
static int parse_ops(PyObject *o, OpSet *out, bool *has) {
  *out = (OpSet){{0, 0}};
  *has = o != Py_None;
  if (!*has) return 0;
  if (Py_IS_TYPE(o, (PyTypeObject *)Ops_Type)) { opset_add(out, (int)PyLong_AsLong(o)); return 0; }
  if (!PyTuple_Check(o) && !PyAnySet_Check(o) && !PyList_Check(o)) {
    PyErr_Format(PyExc_TypeError, "UPat op must be Ops or a tuple of Ops, not %.100s", Py_TYPE(o)->tp_name);
    return -1;
  }
  PyObject *seq = PySequence_Fast(o, "UPat op");
  if (!seq) return -1;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
    if (!Py_IS_TYPE(item, (PyTypeObject *)Ops_Type)) {
      PyErr_Format(PyExc_TypeError, "UPat op must be Ops or a tuple of Ops, got %.100s inside", Py_TYPE(item)->tp_name);
      Py_DECREF(seq);
      return -1;
    }
    opset_add(out, (int)PyLong_AsLong(item));
  }
  Py_DECREF(seq);
  return 0;
}

/* dtype argument: a DType, or a tuple/set of them; fills at most 64 */
static int parse_dtypes(PyObject *o, DType **out, int *n) {
  *n = 0;
  if (o == Py_None) return 0;
  if (DType_Check(o)) { out[(*n)++] = (DType *)o; return 0; }
  PyObject *seq = (PyTuple_Check(o) || PyAnySet_Check(o) || PyList_Check(o)) ? PySequence_Fast(o, "UPat dtype") : NULL;
  if (!seq) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "invalid UPat dtype %.100s", Py_TYPE(o)->tp_name);
    return -1;
  }
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
    if (!DType_Check(item) || *n == 64) {
      PyErr_Format(PyExc_TypeError, "invalid UPat dtype %R", o);
      Py_DECREF(seq);
      return -1;
    }
    out[(*n)++] = (DType *)item;
  }
  Py_DECREF(seq);
  return 0;
}

/* src argument: tuple (in order), list (any order), a UPat (repeated), or None */
static int parse_src_pats(PyObject *o, SrcKind *kind, UPat ***out, int *n) {
  *n = 0, *out = NULL;
  if (o == Py_None) { *kind = SRC_NONE; return 0; }
  if (UPat_Check(o)) { *kind = SRC_REPEAT; *out = PyMem_Malloc(sizeof(UPat *)); if (!*out) { PyErr_NoMemory(); return -1; } (*out)[0] = (UPat *)o; *n = 1; return 0; }
  if (!PyTuple_Check(o) && !PyList_Check(o)) {
    PyErr_Format(PyExc_TypeError, "UPat src must be a tuple, list or UPat, not %.100s", Py_TYPE(o)->tp_name);
    return -1;
  }
  *kind = PyList_Check(o) ? SRC_PERMUTE : SRC_TUPLE;
  Py_ssize_t len = PySequence_Size(o);
  if (!(*out = PyMem_Malloc(sizeof(UPat *) * (size_t)(len + 1)))) { PyErr_NoMemory(); return -1; }
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject *item = PyTuple_Check(o) ? PyTuple_GET_ITEM(o, i) : PyList_GET_ITEM(o, i);
    if (!UPat_Check(item)) {
      PyErr_Format(PyExc_TypeError, "UPat src[%zd] must be a UPat, not %.100s", i, Py_TYPE(item)->tp_name);
      PyMem_Free(*out);
      return -1;
    }
    (*out)[i] = (UPat *)item;
  }
  *n = (int)len;
  return 0;
}

static UPat *upat_from_python(PyObject *op, PyObject *dtype, PyObject *src, PyObject *arg, PyObject *name, int allow_any_len,
                              PyObject *custom_early_reject, PyObject *location, int is_any) {
  OpSet ops;
  bool has_ops;
  DType *dts[64];
  int ndt, nsrc;
  SrcKind kind;
  UPat **srcs;
  if (parse_ops(op, &ops, &has_ops) < 0 || parse_dtypes(dtype, dts, &ndt) < 0) return NULL;
  if (name != Py_None && !PyUnicode_Check(name)) return (UPat *)PyErr_Format(PyExc_TypeError, "UPat name must be a str");
  if (name != Py_None && PyUnicode_CompareWithASCIIString(name, "ctx") == 0) return (UPat *)PyErr_Format(PyExc_ValueError, "UPat can't be named ctx");
  if (parse_src_pats(src, &kind, &srcs, &nsrc) < 0) return NULL;
  const char *cname = name == Py_None ? NULL : PyUnicode_AsUTF8(name);
  UPat *p = upat_build(ops, has_ops, dts, ndt, kind, srcs, nsrc, arg == Py_None ? NULL : arg, cname, allow_any_len);
  PyMem_Free(srcs);
  if (!p) return NULL;
  p->is_any = is_any;
  p->in_src = Py_NewRef(src);
  if (custom_early_reject != Py_None) {
    OpSet er;
    bool has;
    if (parse_ops(custom_early_reject, &er, &has) < 0) { Py_DECREF(p); return NULL; }
    p->early_reject = er;
    p->custom_early_reject = Py_NewRef(custom_early_reject);
  }
  if (is_any) p->early_reject = (OpSet){{0, 0}};
  if (location != Py_None) Py_SETREF(p->location, Py_NewRef(location));
  return p;
}

static PyObject *UPat_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  UNUSED(type);
  static char *kwlist[] = {"op", "dtype", "src", "arg", "name", "allow_any_len", "custom_early_reject", "location", "is_any", NULL};
  PyObject *op = Py_None, *dtype = Py_None, *src = Py_None, *arg = Py_None, *name = Py_None, *cer = Py_None, *loc = Py_None;
  int allow_any_len = 0, is_any = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOpOOp:UPat", kwlist, &op, &dtype, &src, &arg, &name, &allow_any_len, &cer, &loc, &is_any))
    return NULL;
  return (PyObject *)upat_from_python(op, dtype, src, arg, name, allow_any_len, cer, loc, is_any);
}

/* ------------------------------------------------------------------------------------------
 * Matching
 * ------------------------------------------------------------------------------------------ */

/* What to do with each complete match: returns 1 to stop (done), 0 to look for the next, -1 error. */
typedef struct MatchState {
  Captures *cap;
  int (*on_match)(struct MatchState *st);
  void *env;
} MatchState;

/* The sources still to match after the current pattern: pats[i..n) against uops[i..n), then next. */
typedef struct Cont {
  UPat *const *pats;         /* NULL: every uop against `repeat` */
  UPat *repeat;
  const uint8_t *perm;       /* reorders pats when set */
  UOp *const *uops;
  int i, n;
  const struct Cont *next;
} Cont;

static int match(MatchState *st, UPat *p, UOp *u, const Cont *k);

static int match_rest(MatchState *st, const Cont *k) {
  while (k && k->i == k->n) k = k->next;
  if (!k) return st->on_match(st);
  Cont after = *k;
  after.i++;
  UPat *p = k->pats ? k->pats[k->perm ? k->perm[k->i] : k->i] : k->repeat;
  return match(st, p, k->uops[k->i], &after);
}

static bool dtype_ok(UPat *p, UOp *u) {
  if (!p->ndtypes) return true;
  DType *scalar = dtype_scalar(u->dtype);
  for (int i = 0; i < p->ndtypes; i++)
    if (p->dtypes[i] == u->dtype || p->dtypes[i] == scalar) return true;
  return false;
}

static int arg_ok(UPat *p, UOp *u) {
  if (!p->arg || p->arg == u->arg) return 1;
  int ne = compare_bool(p->arg, u->arg, Py_NE);
  return ne < 0 ? -1 : !ne;
}

static int match(MatchState *st, UPat *p, UOp *u, const Cont *k) {
  if (p->is_any) {
    for (int i = 0; i < p->nsrc; i++) {
      int r = match(st, p->src[i], u, k);
      if (r) return r;
    }
    return 0;
  }
  if (p->has_ops && !opset_has(p->ops, u->op)) return 0;
  bool bound_here = false;
  if (p->slot >= 0) {
    UOp *prev = st->cap->slot[p->slot];
    if (prev && prev != u) return 0;
    if (!prev) st->cap->slot[p->slot] = u, bound_here = true;
  }
  int r = 0;
  if (!dtype_ok(p, u) || u->nsrc < p->required_len || (p->strict_length && u->nsrc != p->required_len)) goto end;
  if ((r = arg_ok(p, u)) != 1) goto end;
  if (p->src_kind == SRC_NONE) { r = match_rest(st, k); goto end; }
  int n = p->src_kind == SRC_REPEAT ? u->nsrc : (u->nsrc < p->nsrc ? u->nsrc : p->nsrc);
  Cont c = {p->src_kind == SRC_REPEAT ? NULL : p->src, p->src_kind == SRC_REPEAT ? p->src[0] : NULL, NULL, u->src, 0, n, k};
  if (p->src_kind != SRC_PERMUTE) { r = match_rest(st, &c); goto end; }
  r = 0;
  for (int row = 0; row < p->nperms && !r; row++) {
    c.perm = p->perms + row * p->nsrc;
    r = match_rest(st, &c);
  }
end:
  if (bound_here) st->cap->slot[p->slot] = NULL;
  return r;
}

/* ------------------------------------------------------------------------------------------
 * What a pattern binds: the check of a native rule's reads against its pattern
 * ------------------------------------------------------------------------------------------ */

typedef struct { uint64_t bits[MAX_CAPTURES / 64]; } SlotSet;

static bool slotset_has(const SlotSet *s, int slot) { return (s->bits[slot / 64] >> (slot % 64)) & 1; }

/* every: the capture slots bound on every match of p: its own name and every source's (a tuple or a
 * permutation matches each of its sources), and for UPat.any the names every alternative binds; a repeated
 * source may match no node at all, so nothing under it is guaranteed. Not every: the slots bound on some match. */
static void bound_slots(UPat *p, bool every, SlotSet *out) {
  memset(out, 0, sizeof(*out));
  if (p->is_any) {
    for (int i = 0; i < p->nsrc; i++) {
      SlotSet alt;
      bound_slots(p->src[i], every, &alt);
      for (int w = 0; w < MAX_CAPTURES / 64; w++) out->bits[w] = i && every ? out->bits[w] & alt.bits[w] : out->bits[w] | alt.bits[w];
    }
    return;
  }
  if (p->slot >= 0) out->bits[p->slot / 64] |= (uint64_t)1 << (p->slot % 64);
  if (every && p->src_kind == SRC_REPEAT) return;
  for (int i = 0; i < p->nsrc; i++) {
    SlotSet sub;
    bound_slots(p->src[i], every, &sub);
    for (int w = 0; w < MAX_CAPTURES / 64; w++) out->bits[w] |= sub.bits[w];
  }
}

int upat_check_reads(UPat *p, const int *reads, const char *rule, const char *pattern) {
  SlotSet always, sometimes;
  bound_slots(p, true, &always);
  bound_slots(p, false, &sometimes);
  const int *r = reads;
  for (; *r >= 0; r++)
    if (!slotset_has(&always, *r)) {
      PyErr_Format(PyExc_RuntimeError, "native rule %s reads the capture '%U', which its pattern %s does not bind on every match",
                   rule, name_of_slot[*r], pattern);
      return -1;
    }
  for (r++; *r >= 0; r++)   /* the captures a RULE_MAYBE allows to be unbound: still named by the pattern */
    if (!slotset_has(&sometimes, *r)) {
      PyErr_Format(PyExc_RuntimeError, "native rule %s reads the capture '%U', which its pattern %s never binds", rule, name_of_slot[*r], pattern);
      return -1;
    }
  return 0;
}

/* ------------------------------------------------------------------------------------------
 * Calling a rule on a match
 * ------------------------------------------------------------------------------------------ */

typedef struct RuleCall {
  Rule *rule;
  UOp *root;
  PyObject *ctx;
  PyObject *result;          /* the first non-None result */
} RuleCall;

static void add_rule_location(Rule *rule) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  PyObject *note = PyUnicode_FromFormat("in the rewrite rule whose UPat was made at %S", rule->pat->location);
  if (note && value) {
    PyObject *r = PyObject_CallMethod(value, "add_note", "O", note);
    Py_XDECREF(r);
    PyErr_Clear();
  }
  Py_XDECREF(note);
  PyErr_Restore(type, value, tb);
}

static PyObject *call_python_rule(Rule *rule, Captures *cap, PyObject *ctx) {
  PyObject *kwargs = PyDict_New();
  if (!kwargs) return NULL;
  for (int i = 0; i < rule->nnames; i++) {
    UOp *u = cap->slot[rule->names[i]];
    if (u && PyDict_SetItem(kwargs, name_of_slot[rule->names[i]], (PyObject *)u) < 0) { Py_DECREF(kwargs); return NULL; }
  }
  if (rule->wants_ctx && PyDict_SetItemString(kwargs, "ctx", ctx) < 0) { Py_DECREF(kwargs); return NULL; }
  static PyObject *empty;
  if (!empty && !(empty = PyTuple_New(0))) { Py_DECREF(kwargs); return NULL; }
  PyObject *ret = PyObject_Call(rule->fn, empty, kwargs);
  Py_DECREF(kwargs);
  if (!ret) add_rule_location(rule);
  return ret;
}

static int on_rule_match(MatchState *st) {
  RuleCall *call = st->env;
  Rule *rule = call->rule;
  PyObject *ret;
  if (rule->native) {   /* a borrowed result from the rule's pool, kept past the pool's release */
    if (!rule->form_checked && uop_check_form(call->root, NULL) < 0) return -1;   /* C reads only well-formed nodes */
    Py_ssize_t mark = pool_mark();
    ret = Py_XNewRef((PyObject *)rule->native(st->cap, call->ctx));
    pool_release(mark);
    if (PyErr_Occurred()) { Py_XDECREF(ret); add_rule_location(rule); return -1; }
    if (!ret) return 0;
  } else {
    if (!(ret = call_python_rule(rule, st->cap, call->ctx))) return -1;
    if (ret == Py_None) { Py_DECREF(ret); return 0; }
  }
  call->result = ret;
  return 1;
}

/* universal_match: the first non-None result of the rule over all its matches (NULL: none).
 * cap comes in all NULL and leaves all NULL: match() unbinds every capture on its way out. */
static int apply_rule(Rule *rule, UOp *u, PyObject *ctx, Captures *cap, PyObject **out) {
  RuleCall call = {rule, u, ctx, NULL};
  MatchState st = {cap, on_rule_match, &call};
  int r = match(&st, rule->pat, u, NULL);
  *out = call.result;
  return r < 0 ? -1 : 0;
}

static bool early_rejected(const RuleSlot *slot, OpSet src_ops) {
  return (slot->early_reject.bits[0] & ~src_ops.bits[0]) || (slot->early_reject.bits[1] & ~src_ops.bits[1]);
}

/* some order of a commutative pattern's sources whose ops the node's sources have (match() pairs them the same way) */
static bool permutation_fits(const Rule *rule, const UOp *u) {
  const UPat *p = rule->pat;
  int n = u->nsrc < p->nsrc ? u->nsrc : p->nsrc;
  for (int row = 0; row < p->nperms; row++) {
    const uint8_t *perm = p->perms + row * p->nsrc;
    int k = 0;
    while (k < n && opset_has(rule->pos_ops[perm[k]], u->src[k]->op)) k++;
    if (k == n) return true;
  }
  return false;
}

/* what pm_rewrite checks before match(), from the rule's slot alone: whether it may fire on u (the early reject, the
 * lengths, the ops of the first sources); the dtype is checked apart, as the shape does not decide it */
static bool shape_fits(const RuleSlot *slot, const UOp *u, OpSet src_ops) {
  if (early_rejected(slot, src_ops)) return false;
  const Rule *rule = slot->rule;
  const UPat *p = rule->pat;
  if (p->is_any) return true;
  if (u->nsrc < p->required_len || (p->strict_length && u->nsrc != p->required_len)) return false;
  if (rule->pos_permuted) return permutation_fits(rule, u);
  for (int k = 0; k < rule->npos && k < (int)u->nsrc; k++)
    if (!opset_has(rule->pos_ops[k], u->src[k]->op)) return false;
  return true;
}

/* ---- the deep reject ----
 * (y + x) + x, x + x*c, (y + (x//c1)*c3) + x%c1*c2 and their kind are tried on every ADD and almost never match. A node
 * at depth d of a pattern's match is at depth d of the node's graph (each source pattern matches a source), so before
 * trying the orders of a rule, two necessary conditions are checked on the node's first levels: a name bound at two
 * places needs one node at both depths (or twice at one depth: match() binds a name to one node), and a source
 * pattern with ops 2 or 3 levels down needs a node of one of its ops at that depth. Only places every match reaches
 * count: not under UPat.any (alternatives) or a repeated source (which may match no source). */
#define DEEP_MAX_DEPTH 3
#define DEEP_LEVEL_MAX 16

/* every (slot, depth) a match of p binds for sure, up to DEEP_MAX_DEPTH below the root; and the ops found down there */
static void sure_places(const UPat *p, int depth, int (*places)[2], int *n, Rule *r) {
  if (p->is_any || depth > DEEP_MAX_DEPTH) return;
  if (p->slot >= 0 && *n < 32) places[*n][0] = p->slot, places[*n][1] = depth, (*n)++;
  if (depth >= 2 && p->has_ops && r->ndeep < 4) r->deep[r->ndeep].depth = (uint8_t)depth, r->deep[r->ndeep++].ops = p->ops;
  if (p->src_kind == SRC_TUPLE || p->src_kind == SRC_PERMUTE)
    for (int i = 0; i < p->nsrc; i++) sure_places(p->src[i], depth + 1, places, n, r);
}

static void deep_reject_init(Rule *r) {
  int places[32][2], n = 0;
  sure_places(r->pat, 0, places, &n, r);
  for (int i = 0; i < n; i++) {
    int j = i + 1;
    while (j < n && places[j][0] != places[i][0]) j++;
    bool first = true;   /* one pair per slot: from its first place */
    for (int k = 0; k < i && first; k++) first = places[k][0] != places[i][0];
    if (j < n && first && r->nsame < 4) {   /* shallower depth first: the check builds the levels down to the second */
      int a = places[i][1], b = places[j][1];
      r->same_depth[r->nsame][0] = (uint8_t)(a < b ? a : b), r->same_depth[r->nsame][1] = (uint8_t)(a < b ? b : a), r->nsame++;
    }
  }
}

/* the nodes at each depth of u's graph (a node once per place) and their ops, down to what the rules need; built on
 * first use */
typedef struct {
  UOp *at[DEEP_MAX_DEPTH + 1][DEEP_LEVEL_MAX];
  int len[DEEP_MAX_DEPTH + 1];
  OpSet ops[DEEP_MAX_DEPTH + 1];
  int built;
  bool too_wide;
} Levels;

static void levels_build(Levels *lv, UOp *u, int depth) {
  if (!lv->built) {   /* first use for this node: a level is read only once built, but gcc cannot see that */
    memset(lv->len, 0, sizeof lv->len), memset(lv->ops, 0, sizeof lv->ops);
    lv->at[0][0] = u, lv->len[0] = 1, lv->built = 1;
  }
  for (; lv->built <= depth && !lv->too_wide; lv->built++) {
    int d = lv->built, len = 0;
    OpSet ops = {{0, 0}};
    for (int i = 0; i < lv->len[d - 1]; i++) {
      UOp *x = lv->at[d - 1][i];
      if (len + x->nsrc > DEEP_LEVEL_MAX) { lv->too_wide = true; break; }
      for (int k = 0; k < x->nsrc; k++) opset_add(&ops, x->src[k]->op), lv->at[d][len++] = x->src[k];
    }
    lv->len[d] = len, lv->ops[d] = ops;
  }
}

static bool shared_between(const Levels *lv, int a, int b) {
  for (int i = 0; i < lv->len[a]; i++)
    for (int j = a == b ? i + 1 : 0; j < lv->len[b]; j++)
      if (lv->at[a][i] == lv->at[b][j]) return true;
  return false;
}

/* false when the rule cannot match u: a deep op is missing, or a capture cannot bind one node at its two places */
static bool deep_possible(const Rule *r, UOp *u, Levels *lv) {
  for (int i = 0; i < r->ndeep; i++) {
    int d = r->deep[i].depth;
    levels_build(lv, u, d);
    if (lv->too_wide) return true;
    if (!(r->deep[i].ops.bits[0] & lv->ops[d].bits[0]) && !(r->deep[i].ops.bits[1] & lv->ops[d].bits[1])) return false;
  }
  for (int i = 0; i < r->nsame; i++) {
    int a = r->same_depth[i][0], b = r->same_depth[i][1];
    levels_build(lv, u, b);
    if (lv->too_wide) return true;
    if (!shared_between(lv, a, b)) return false;
  }
  return true;
}

/* Try the rules of u's op in order: those at positions at[i..n) of its slot list (every position from i when at is
 * NULL, each then checked by shape_fits). Kept out of line so that the common "no rule can fire" answer does not pay
 * for the captures on the stack. */
static __attribute__((noinline)) PyObject *try_rules(PatternMatcher *pm, UOp *u, PyObject *ctx, bool require_uop,
                                                     const uint16_t *at, int n, int i, OpSet src_ops) {
  /* the captures: match() leaves every slot NULL again, so a few zeroed buffers serve every call without
   * clearing, each marked busy while in use (a rule may rewrite, another thread may run during a Python
   * rule); with all busy, a cleared local one */
  static Captures pool[8];
  static bool busy[8];
  int b = 0;
  while (b < 8 && busy[b]) b++;
  Captures local, *capp = b < 8 ? &pool[b] : &local;
  if (b < 8) busy[b] = true;
  else memset(&local, 0, sizeof(UOp *) * (size_t)(nslots > CAP_FIXED ? nslots : CAP_FIXED));
  PyObject *result = NULL;
  Levels levels;
  levels.built = 0, levels.too_wide = false;   /* the rest is written on first use (levels_build) */
  for (; i < n; i++) {
    const RuleSlot *slot = &pm->by_op[u->op][at ? at[i] : i];
    Rule *rule = slot->rule;
    if ((!rule->native && !rule->fn) || (!at && !shape_fits(slot, u, src_ops))) continue;
    if (!rule->pat->is_any && !dtype_ok(rule->pat, u)) continue;   /* what match() would reject first, without the call */
    if ((rule->nsame || rule->ndeep) && !deep_possible(rule, u, &levels)) continue;
    PyObject *ret;
    if (apply_rule(rule, u, ctx, capp, &ret) < 0) break;
    if (!ret) continue;
    if (ret == (PyObject *)u) { Py_DECREF(ret); continue; }
    if (require_uop && !UOp_Check(ret)) {
      PyErr_Format(PyExc_TypeError, "rewrite rule (UPat made at %S) returned %.100s, not a UOp or None", rule->pat->location,
                   Py_TYPE(ret)->tp_name);
      Py_DECREF(ret);
      break;
    }
    result = ret;
    break;
  }
  if (b < 8) busy[b] = false;
  return result;
}

/* ---- the shape cache ---- */

#define SHAPE_CACHE_MAX (1u << 16)   /* shapes kept per matcher; past it, new shapes scan (a fuzzer's graphs stay bounded) */

_Static_assert(9 + 7 * SHAPE_MAX_SRC <= 31, "a shape (7-bit op, 2-bit count, 7 bits per source op) fits a key below 2**31");
static uint32_t shape_key(const UOp *u) {
  uint32_t key = u->op | (uint32_t)u->nsrc << 7;
  for (int k = 0; k < (int)u->nsrc; k++) key |= (uint32_t)u->src[k]->op << (9 + 7 * k);
  return key + 1;   /* 0 marks an empty entry */
}

static ShapeRules *shape_slot(ShapeCache *c, uint32_t key) {
  uint32_t mask = c->cap - 1, at = (key * 0x9E3779B1u) >> c->shift;   /* the product's top bits: Fibonacci hashing */
  while (c->e[at].key && c->e[at].key != key) at = (at + 1) & mask;
  return &c->e[at];
}

static int shape_cache_grow(ShapeCache *c) {
  uint32_t cap = c->cap ? c->cap * 2 : 64, shift = c->cap ? c->shift - 1 : 26;   /* 2**(32 - shift) == cap */
  ShapeRules *old = c->e, *e = PyMem_Calloc(cap, sizeof(ShapeRules));
  if (!e) return -1;
  ShapeCache bigger = {e, cap, c->len, shift};
  for (uint32_t i = 0; i < c->cap; i++)
    if (old[i].key) *shape_slot(&bigger, old[i].key) = old[i];
  PyMem_Free(old);
  *c = bigger;
  return 0;
}

static void shape_cache_free(ShapeCache *c) {
  for (uint32_t i = 0; i < c->cap; i++) PyMem_Free(c->e[i].at);
  PyMem_Free(c->e);
  *c = (ShapeCache){0};
}

/* the rules that may fire on nodes of u's shape (u has at most SHAPE_MAX_SRC sources), found on the first meeting;
 * NULL when they cannot be kept (no memory, or the cache is full): then the caller scans, as without it */
static const ShapeRules *shape_rules(PatternMatcher *pm, const UOp *u) {
  ShapeCache *c = &pm->shapes;
  uint32_t key = shape_key(u);
  if (c->cap) {
    ShapeRules *hit = shape_slot(c, key);
    if (hit->key) return hit;
  }
  if (c->len >= SHAPE_CACHE_MAX || ((c->len + 1) * 4 > c->cap * 3 && shape_cache_grow(c) < 0)) return NULL;
  int n = pm->n_by_op[u->op], found = 0;
  uint16_t *at = PyMem_Malloc(sizeof(uint16_t) * (size_t)(n ? n : 1));
  if (!at) return NULL;
  OpSet src_ops = {{0, 0}};
  for (int i = 0; i < u->nsrc; i++) opset_add(&src_ops, u->src[i]->op);
  for (int i = 0; i < n; i++)
    if (shape_fits(&pm->by_op[u->op][i], u, src_ops)) at[found++] = (uint16_t)i;
  ShapeRules *e = shape_slot(c, key);
  *e = (ShapeRules){key, (uint32_t)found, at};
  c->len++;
  return e;
}

PyObject *pm_rewrite(PatternMatcher *pm, UOp *u, PyObject *ctx, bool require_uop) {
  int n = pm->n_by_op[u->op];
  if (!n) return NULL;
  if (u->nsrc <= SHAPE_MAX_SRC && n <= UINT16_MAX) {
    const ShapeRules *shape = shape_rules(pm, u);
    if (shape) return shape->n ? try_rules(pm, u, ctx, require_uop, shape->at, (int)shape->n, 0, (OpSet){{0, 0}}) : NULL;
  }
  OpSet src_ops = {{0, 0}};
  for (int i = 0; i < u->nsrc; i++) opset_add(&src_ops, u->src[i]->op);
  const RuleSlot *slots = pm->by_op[u->op];
  for (int i = 0; i < n; i++)
    if (!early_rejected(&slots[i], src_ops)) return try_rules(pm, u, ctx, require_uop, NULL, n, i, src_ops);
  return NULL;
}

/* ------------------------------------------------------------------------------------------
 * PatternMatcher
 * ------------------------------------------------------------------------------------------ */

/* Rules are shared between matchers (pm + pm): each is a small Python object the matchers hold references to, so
 * that the cycle collector sees a rule's callable once however many matchers share it (a rule's function often
 * refers to the matcher it is in). */
typedef struct { PyObject_HEAD Rule rule; } RuleObject;
#define RULE_OBJECT(r) ((PyObject *)((char *)(r) - offsetof(RuleObject, rule)))

static Rule *rule_ref(Rule *r) { Py_INCREF(RULE_OBJECT(r)); return r; }
static void rule_unref(Rule *r) { Py_DECREF(RULE_OBJECT(r)); }

static void RuleObject_dealloc(RuleObject *o) {
  PyObject_GC_UnTrack(o);
  Py_XDECREF(o->rule.pat); Py_XDECREF(o->rule.fn);
  PyMem_Free(o->rule.names);
  PyObject_GC_Del(o);
}
static int RuleObject_traverse(RuleObject *o, visitproc visit, void *arg) {
  Py_VISIT(o->rule.pat); Py_VISIT(o->rule.fn);
  return 0;
}
/* a cleared Python rule (no fn, no native function) never fires */
static int RuleObject_clear(RuleObject *o) { Py_CLEAR(o->rule.fn); return 0; }
static PyTypeObject RuleObject_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc._Rule",
  .tp_basicsize = sizeof(RuleObject),
  .tp_dealloc = (destructor)RuleObject_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
  .tp_doc = "one rule of PatternMatchers: a UPat and its rewrite",
  .tp_traverse = (traverseproc)RuleObject_traverse,
  .tp_clear = (inquiry)RuleObject_clear,
};

/* the capture slots named anywhere in a pattern, each once */
static int collect_names(UPat *p, int *names, int *n) {
  if (p->slot >= 0) {
    bool seen = false;
    for (int i = 0; i < *n && !seen; i++) seen = names[i] == p->slot;
    if (!seen) {
      if (*n == MAX_CAPTURES) return -1;
      names[(*n)++] = p->slot;
    }
  }
  for (int i = 0; i < p->nsrc; i++)
    if (collect_names(p->src[i], names, n) < 0) return -1;
  return 0;
}

static Rule *rule_new(UPat *pat, PyObject *fn, NativeFn native) {
  RuleObject *box = PyObject_GC_New(RuleObject, &RuleObject_Type);
  int names[MAX_CAPTURES], n = 0;
  if (!box) return NULL;
  memset(&box->rule, 0, sizeof(Rule));
  PyObject_GC_Track(box);
  Rule *r = &box->rule;
  r->pat = (UPat *)Py_NewRef(pat), r->fn = Py_XNewRef(fn), r->native = native;
  if (collect_names(pat, names, &n) < 0 || !(r->names = PyMem_Malloc(sizeof(int) * (size_t)(n ? n : 1)))) {
    rule_unref(r);
    return (Rule *)PyErr_NoMemory();
  }
  memcpy(r->names, names, sizeof(int) * (size_t)n);
  r->nnames = n;
  /* sources with known ops, in fixed positions (not repeated): a node whose source at such a position has another op
   * cannot match, whatever the rest of the pattern says; for a commutative pattern (up to 4 sources), in none of its
   * orders */
  bool permuted = pat->src_kind == SRC_PERMUTE && pat->nsrc <= 4;
  if (!pat->is_any && (pat->src_kind == SRC_TUPLE || permuted)) {
    r->pos_permuted = permuted;
    for (int i = 0; i < pat->nsrc && i < 4; i++) {
      UPat *sp = pat->src[i];
      OpSet set = {{0, 0}};
      bool known = sp->is_any ? sp->nsrc > 0 : sp->has_ops;
      if (sp->is_any) {
        for (int k = 0; k < sp->nsrc && known; k++) {
          if (sp->src[k]->is_any || !sp->src[k]->has_ops) known = false;
          else set.bits[0] |= sp->src[k]->ops.bits[0], set.bits[1] |= sp->src[k]->ops.bits[1];
        }
      } else set = sp->ops;
      r->pos_ops[i] = known ? set : (OpSet){{~(uint64_t)0, ~(uint64_t)0}};
      r->npos = i + 1;
    }
  }
  deep_reject_init(r);
  if (fn) {   /* does the callable take ctx? (tinygrad asks inspect.signature) */
    PyObject *inspect = PyImport_ImportModule("inspect"), *sig = inspect ? PyObject_CallMethod(inspect, "signature", "O", fn) : NULL;
    PyObject *params = sig ? getattr_literal(sig, "parameters") : NULL, *ctx_name = PyUnicode_FromString("ctx");
    int has = params && ctx_name ? PySequence_Contains(params, ctx_name) : -1;
    Py_XDECREF(ctx_name);
    Py_XDECREF(inspect); Py_XDECREF(sig); Py_XDECREF(params);
    if (has < 0) { rule_unref(r); return NULL; }
    r->wants_ctx = has;
  }
  return r;
}

static PatternMatcher *pm_alloc(int nrules) {
  PatternMatcher *pm = PyObject_GC_New(PatternMatcher, &PatternMatcher_Type);
  if (!pm) return NULL;
  memset((char *)pm + sizeof(PyObject), 0, sizeof(PatternMatcher) - sizeof(PyObject));
  PyObject_GC_Track(pm);
  if (nrules && !(pm->rules = PyMem_Calloc((size_t)nrules, sizeof(Rule *)))) { Py_DECREF(pm); return (PatternMatcher *)PyErr_NoMemory(); }
  return pm;
}

/* the per-op dispatch table, rules in order */
static int pm_index(PatternMatcher *pm) {
  pm->all_native = true;
  for (int i = 0; i < pm->nrules; i++) {
    UPat *p = pm->rules[i]->pat;
    pm->all_native &= pm->rules[i]->native != NULL;
    if (!p->has_ops) { PyErr_Format(PyExc_ValueError, "a PatternMatcher rule's UPat needs an op (made at %S)", p->location); return -1; }
    for (int op = 1; op < OP_COUNT; op++) if (opset_has(p->ops, op)) pm->n_by_op[op]++, pm->root_bits |= op_bit(op);
  }
  for (int op = 1; op < OP_COUNT; op++) {
    if (!pm->n_by_op[op]) continue;
    if (!(pm->by_op[op] = PyMem_Malloc(sizeof(RuleSlot) * (size_t)pm->n_by_op[op]))) { PyErr_NoMemory(); return -1; }
    pm->n_by_op[op] = 0;
  }
  for (int i = 0; i < pm->nrules; i++)
    for (int op = 1; op < OP_COUNT; op++)
      if (opset_has(pm->rules[i]->pat->ops, op))
        pm->by_op[op][pm->n_by_op[op]++] = (RuleSlot){pm->rules[i]->pat->early_reject, pm->rules[i]};
  return 0;
}

PatternMatcher *pm_new_native(const UPat *const *pats, const NativeFn *fns, int n) {
  PatternMatcher *pm = pm_alloc(n);
  for (int i = 0; pm && i < n; i++) {
    if (!pats[i] || !(pm->rules[i] = rule_new((UPat *)pats[i], NULL, fns[i]))) { Py_CLEAR(pm); break; }
    pm->nrules++;
  }
  for (int i = 0; i < n; i++) Py_XDECREF(pats[i]);
  if (pm && pm_index(pm) < 0) Py_CLEAR(pm);
  return pm;
}

PatternMatcher *pm_concat(PatternMatcher *a, PatternMatcher *b) {
  PatternMatcher *pm = pm_alloc(a->nrules + b->nrules);
  if (!pm) return NULL;
  for (int i = 0; i < a->nrules; i++) pm->rules[pm->nrules++] = rule_ref(a->rules[i]);
  for (int i = 0; i < b->nrules; i++) pm->rules[pm->nrules++] = rule_ref(b->rules[i]);
  if (pm_index(pm) < 0) Py_CLEAR(pm);
  return pm;
}

void pm_set_form_checked(PatternMatcher *pm) {
  for (int i = 0; i < pm->nrules; i++) if (pm->rules[i]->native) pm->rules[i]->form_checked = true;
}

static PyObject *PatternMatcher_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  UNUSED(type);
  static char *kwlist[] = {"patterns", "compiled", NULL};
  PyObject *patterns, *compiled = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:PatternMatcher", kwlist, &patterns, &compiled)) return NULL;
  PyObject *seq = PySequence_Fast(patterns, "PatternMatcher needs a list of (UPat, callable) rules");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PatternMatcher *pm = pm_alloc((int)n);
  for (Py_ssize_t i = 0; pm && i < n; i++) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 || !UPat_Check(PyTuple_GET_ITEM(item, 0)) ||
        !PyCallable_Check(PyTuple_GET_ITEM(item, 1))) {
      PyErr_Format(PyExc_TypeError, "PatternMatcher rule %zd must be a (UPat, callable) pair", i);
      Py_CLEAR(pm);
      break;
    }
    if (!(pm->rules[i] = rule_new((UPat *)PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1), NULL))) { Py_CLEAR(pm); break; }
    pm->nrules++;
  }
  Py_DECREF(seq);
  if (pm && pm_index(pm) < 0) Py_CLEAR(pm);
  return (PyObject *)pm;
}

/* drops the rules: a cleared matcher matches nothing */
static int PatternMatcher_clear(PatternMatcher *pm) {
  int n = pm->nrules;
  pm->nrules = 0, pm->root_bits = 0;
  for (int op = 0; op < OP_COUNT; op++) PyMem_Free(pm->by_op[op]), pm->by_op[op] = NULL, pm->n_by_op[op] = 0;
  shape_cache_free(&pm->shapes);
  for (int i = 0; i < n; i++) if (pm->rules[i]) rule_unref(pm->rules[i]);
  PyMem_Free(pm->rules);
  pm->rules = NULL;
  Py_CLEAR(pm->patterns);
  return 0;
}
static int PatternMatcher_traverse(PatternMatcher *pm, visitproc visit, void *arg) {
  for (int i = 0; i < pm->nrules; i++) if (pm->rules[i]) Py_VISIT(RULE_OBJECT(pm->rules[i]));
  Py_VISIT(pm->patterns);
  return 0;
}
static void PatternMatcher_dealloc(PatternMatcher *pm) {
  PyObject_GC_UnTrack(pm);
  PatternMatcher_clear(pm);
  PyObject_GC_Del(pm);
}

static PyObject *PatternMatcher_add(PyObject *a, PyObject *b) {
  if (!PatternMatcher_Check(a) || !PatternMatcher_Check(b)) Py_RETURN_NOTIMPLEMENTED;
  return (PyObject *)pm_concat((PatternMatcher *)a, (PatternMatcher *)b);
}

static PyObject *PatternMatcher_rewrite(PatternMatcher *pm, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"uop", "ctx", NULL};
  PyObject *u, *ctx = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:rewrite", kwlist, &u, &ctx)) return NULL;
  if (!UOp_Check(u)) return PyErr_Format(PyExc_TypeError, "rewrite needs a UOp, not %.100s", Py_TYPE(u)->tp_name);
  PyObject *ret = pm_rewrite(pm, (UOp *)u, ctx, false);
  if (!ret && !PyErr_Occurred()) Py_RETURN_NONE;
  return ret;
}

static PyObject *PatternMatcher_patterns(PatternMatcher *pm, void *c) {
  UNUSED(c);
  PyObject *list = PyList_New(pm->nrules);
  for (int i = 0; list && i < pm->nrules; i++) {
    Rule *r = pm->rules[i];
    PyObject *t = PyTuple_Pack(2, (PyObject *)r->pat, r->fn ? r->fn : Py_None);
    if (!t) { Py_CLEAR(list); break; }
    PyList_SET_ITEM(list, i, t);
  }
  return list;
}

static PyObject *PatternMatcher_len(PatternMatcher *pm, void *c) { UNUSED(c); return PyLong_FromLong(pm->nrules); }

static PyMethodDef pm_methods[] = {
  {"rewrite", (PyCFunction)(void (*)(void))PatternMatcher_rewrite, METH_VARARGS | METH_KEYWORDS,
   "the first rule's result that is not None and not the uop itself, else None"},
  {NULL, NULL, 0, NULL},
};
static PyGetSetDef pm_getset[] = {
  {"patterns", (getter)PatternMatcher_patterns, NULL, "the (UPat, callable) rules; None for a native rule's callable", NULL},
  {"nrules", (getter)PatternMatcher_len, NULL, NULL, NULL},
  {NULL, NULL, NULL, NULL, NULL},
};
static PyNumberMethods pm_as_number = {.nb_add = PatternMatcher_add};

PyTypeObject PatternMatcher_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.PatternMatcher",
  .tp_basicsize = sizeof(PatternMatcher),
  .tp_dealloc = (destructor)PatternMatcher_dealloc,
  .tp_as_number = &pm_as_number,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
  .tp_traverse = (traverseproc)PatternMatcher_traverse,
  .tp_clear = (inquiry)PatternMatcher_clear,
  .tp_doc = "PatternMatcher([(UPat, fn), ...]): rules tried in order, dispatched on the root op",
  .tp_methods = pm_methods,
  .tp_getset = pm_getset,
  .tp_new = PatternMatcher_new,
};

/* ------------------------------------------------------------------------------------------
 * UPat's Python surface: attributes, the helpers rule files use, and the math operators
 * (tinygrad's UPat is an OpMixin: UPat.var("x") + UPat.cvar("c") builds a pattern)
 * ------------------------------------------------------------------------------------------ */

static PyObject *UPat_get_op(UPat *p, void *c) { UNUSED(c); return Py_NewRef(p->op); }
static PyObject *UPat_get_dtype(UPat *p, void *c) { UNUSED(c); return Py_NewRef(p->dtype); }
static PyObject *UPat_get_arg(UPat *p, void *c) { UNUSED(c); return Py_NewRef(p->arg ? p->arg : Py_None); }
static PyObject *UPat_get_name(UPat *p, void *c) { UNUSED(c); return Py_NewRef(p->name ? p->name : Py_None); }
static PyObject *UPat_get_in_src(UPat *p, void *c) { UNUSED(c); return Py_NewRef(p->in_src ? p->in_src : Py_None); }
static PyObject *UPat_get_location(UPat *p, void *c) { UNUSED(c); return Py_NewRef(p->location); }
static PyObject *UPat_get_is_any(UPat *p, void *c) { UNUSED(c); return PyBool_FromLong(p->is_any); }
static PyObject *UPat_get_strict_length(UPat *p, void *c) { UNUSED(c); return PyBool_FromLong(p->strict_length); }
static PyObject *UPat_get_required_len(UPat *p, void *c) { UNUSED(c); return PyLong_FromLong(p->required_len); }
static PyObject *UPat_get_early_reject(UPat *p, void *c) {
  UNUSED(c);
  PyObject *t = ops_tuple_of(p->early_reject), *s = t ? PySet_New(t) : NULL;
  Py_XDECREF(t);
  return s;
}

/* UPat(op, dtype, src, arg, name) from C values with Python dtype/arg views */
static PyObject *make(PyObject *op, PyObject *dtype, PyObject *src, PyObject *arg, PyObject *name) {
  return (PyObject *)upat_from_python(op, dtype, src, arg, name, 0, Py_None, Py_None, 0);
}

static PyObject *var_cache, *cvar_cache;

static PyObject *UPat_var(PyObject *cls, PyObject *args, PyObject *kw) {
  UNUSED(cls);
  static char *kwlist[] = {"name", "dtype", NULL};
  PyObject *name = Py_None, *dtype = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:var", kwlist, &name, &dtype)) return NULL;
  PyObject *key = PyTuple_Pack(2, name, dtype), *ret = NULL;   /* functools.cache'd in tinygrad */
  if (!key) return NULL;
  if ((ret = PyDict_GetItemWithError(var_cache, key))) Py_INCREF(ret);
  else if (!PyErr_Occurred() && (ret = make(Py_None, dtype, Py_None, Py_None, name)) && PyDict_SetItem(var_cache, key, ret) < 0) Py_CLEAR(ret);
  Py_DECREF(key);
  return ret;
}

static PyObject *UPat_cvar(PyObject *cls, PyObject *args, PyObject *kw) {
  UNUSED(cls);
  static char *kwlist[] = {"name", "dtype", "vec", "arg", NULL};
  PyObject *name = Py_None, *dtype = Py_None, *arg = Py_None;
  int vec = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOpO:cvar", kwlist, &name, &dtype, &vec, &arg)) return NULL;
  PyObject *key = Py_BuildValue("(OOiO)", name, dtype, vec, arg), *ret = NULL;
  if (!key) return NULL;
  if ((ret = PyDict_GetItemWithError(cvar_cache, key))) Py_INCREF(ret);
  else if (!PyErr_Occurred()) {
    PyObject *ops = vec ? PyTuple_Pack(2, ops_members[OP_CONST], ops_members[OP_VCONST]) : Py_NewRef(ops_members[OP_CONST]);
    if (ops && (ret = make(ops, dtype, Py_None, arg, name)) && PyDict_SetItem(cvar_cache, key, ret) < 0) Py_CLEAR(ret);
    Py_XDECREF(ops);
  }
  Py_DECREF(key);
  return ret;
}

static PyObject *UPat_const(PyObject *cls, PyObject *args) {
  UNUSED(cls);
  PyObject *dtype, *b;
  if (!PyArg_ParseTuple(args, "OO:const", &dtype, &b)) return NULL;
  return make(ops_members[OP_CONST], dtype, Py_None, b, Py_None);
}

static PyObject *UPat_any(PyObject *cls, PyObject *args) {
  UNUSED(cls);
  return (PyObject *)upat_from_python(Py_None, Py_None, args, Py_None, Py_None, 0, Py_None, Py_None, 1);
}

/* UPat(op, dtype, (self,)+srcs, **kwargs) for the helpers copied from UOp */
static PyObject *with_self(UPat *self, Op op, PyObject *dtype, PyObject *more, PyObject *kw) {
  Py_ssize_t n = more ? PyTuple_GET_SIZE(more) : 0;
  PyObject *src = PyTuple_New(n + 1);
  if (!src) return NULL;
  PyTuple_SET_ITEM(src, 0, Py_NewRef(self));
  for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(src, i + 1, Py_NewRef(PyTuple_GET_ITEM(more, i)));
  PyObject *args = Py_BuildValue("(OON)", ops_members[op], dtype, src);
  PyObject *ret = args ? PyObject_Call((PyObject *)&UPat_Type, args, kw) : NULL;
  Py_XDECREF(args);
  return ret;
}

static PyObject *UPat_f(UPat *self, PyObject *args, PyObject *kw) {
  PyObject *op;
  if (!PyArg_ParseTuple(args, "O:f", &op)) return NULL;
  PyObject *src = PyTuple_Pack(1, (PyObject *)self), *a = src ? Py_BuildValue("(OON)", op, Py_None, src) : NULL;
  PyObject *ret = a ? PyObject_Call((PyObject *)&UPat_Type, a, kw) : NULL;
  Py_XDECREF(a);
  return ret;
}

static PyObject *UPat_named(UPat *self, PyObject *name) {
  return (PyObject *)upat_from_python(self->op, self->dtype, self->in_src ? self->in_src : Py_None, self->arg ? self->arg : Py_None,
                                      name, !self->strict_length, self->custom_early_reject ? self->custom_early_reject : Py_None,
                                      Py_None, self->is_any);
}

/* or_casted/or_after: this pattern, or it under a CAST/AFTER, bound to the same name */
static PyObject *or_wrapped(UPat *self, PyObject *args, Op op, bool any_len) {
  PyObject *name = Py_None;
  if (!PyArg_ParseTuple(args, "|O", &name)) return NULL;
  PyObject *inner = name == Py_None ? Py_NewRef(self) : UPat_named(self, name);
  PyObject *src = inner ? PyTuple_Pack(1, (PyObject *)self) : NULL;
  PyObject *wrapped = src ? (PyObject *)upat_from_python(ops_members[op], Py_None, src, Py_None, name, any_len, Py_None, Py_None, 0) : NULL;
  PyObject *alts = wrapped ? PyTuple_Pack(2, inner, wrapped) : NULL;
  PyObject *ret = alts ? UPat_any(NULL, alts) : NULL;
  Py_XDECREF(inner); Py_XDECREF(src); Py_XDECREF(wrapped); Py_XDECREF(alts);
  return ret;
}
static PyObject *UPat_or_casted(UPat *self, PyObject *args) { return or_wrapped(self, args, OP_CAST, false); }
static PyObject *UPat_or_after(UPat *self, PyObject *args) { return or_wrapped(self, args, OP_AFTER, true); }

static PyObject *UPat_sink(UPat *self, PyObject *args, PyObject *kw) {
  PyObject *kept = PyList_New(0);
  for (Py_ssize_t i = 0; kept && i < PyTuple_GET_SIZE(args); i++)
    if (PyTuple_GET_ITEM(args, i) != Py_None && PyList_Append(kept, PyTuple_GET_ITEM(args, i)) < 0) Py_CLEAR(kept);
  PyObject *t = kept ? PyList_AsTuple(kept) : NULL, *ret = t ? with_self(self, OP_SINK, (PyObject *)DTYPE(VOID), t, kw) : NULL;
  Py_XDECREF(kept); Py_XDECREF(t);
  return ret;
}
static PyObject *UPat_index(UPat *self, PyObject *args, PyObject *kw) {
  PyObject *idx, *valid = Py_None;
  if (!PyArg_ParseTuple(args, "O|O:index", &idx, &valid)) return NULL;
  PyObject *more = valid == Py_None ? PyTuple_Pack(1, idx) : PyTuple_Pack(2, idx, valid);
  PyObject *ret = more ? with_self(self, OP_INDEX, self->dtype, more, kw) : NULL;
  Py_XDECREF(more);
  return ret;
}
static PyObject *one_src(UPat *self, Op op, PyObject *dtype, PyObject *arg, PyObject *kw) {
  PyObject *src = PyTuple_Pack(1, (PyObject *)self), *args = src ? Py_BuildValue("(OOOO)", ops_members[op], dtype, src, arg) : NULL;
  PyObject *ret = args ? PyObject_Call((PyObject *)&UPat_Type, args, kw) : NULL;
  Py_XDECREF(src); Py_XDECREF(args);
  return ret;
}
static PyObject *UPat_cast(UPat *self, PyObject *args, PyObject *kw) {
  PyObject *dtype = Py_None;
  if (!PyArg_ParseTuple(args, "|O:cast", &dtype)) return NULL;
  return one_src(self, OP_CAST, dtype, Py_None, kw);
}
static PyObject *UPat_bitcast(UPat *self, PyObject *args) {
  PyObject *dtype = Py_None;
  if (!PyArg_ParseTuple(args, "|O:bitcast", &dtype)) return NULL;
  return one_src(self, OP_BITCAST, dtype, Py_None, NULL);
}
static PyObject *UPat_gep(UPat *self, PyObject *args, PyObject *kw) {
  PyObject *i = Py_None;
  if (!PyArg_ParseTuple(args, "|O:gep", &i)) return NULL;
  PyObject *arg = i == Py_None ? Py_NewRef(Py_None) : PyTuple_Pack(1, i), *ret = arg ? one_src(self, OP_GEP, Py_None, arg, kw) : NULL;
  Py_XDECREF(arg);
  return ret;
}
#define SELF_PLUS(name, OP, DT)                                                 \
  static PyObject *UPat_##name(UPat *self, PyObject *args, PyObject *kw) {      \
    return with_self(self, OP, DT, args, kw);                                   \
  }
SELF_PLUS(load, OP_LOAD, Py_None)
SELF_PLUS(store, OP_STORE, self->dtype)
SELF_PLUS(assign, OP_ASSIGN, self->dtype)
SELF_PLUS(reduce, OP_REDUCE, self->dtype)
SELF_PLUS(contiguous, OP_CONTIGUOUS, self->dtype)
SELF_PLUS(after, OP_AFTER, self->dtype)
SELF_PLUS(end, OP_END, self->dtype)

static PyObject *UPat_broadcast(UPat *self, PyObject *args, PyObject *kw) {
  UNUSED(args);
  PyObject *a = Py_BuildValue("(OOO)", ops_members[OP_VECTORIZE], self->dtype, (PyObject *)self);
  PyObject *ret = a ? PyObject_Call((PyObject *)&UPat_Type, a, kw) : NULL;
  Py_XDECREF(a);
  return ret;
}

static PyObject *UPat_const_like(UPat *self, PyObject *b) { return make(ops_members[OP_CONST], self->dtype, Py_None, b, Py_None); }

/* alu(op, *src): bool for CMPLT/CMPNE, else the last operand's dtype; commutative ops match either order */
static PyObject *upat_alu(Op op, PyObject *const *src, int n) {
  PyObject *dtype = (op == OP_CMPLT || op == OP_CMPNE) ? (PyObject *)DTYPE(BOOL) : ((UPat *)src[n - 1])->dtype;
  PyObject *srcs = IN_GROUP(op, Commutative) ? PyList_New(n) : PyTuple_New(n);
  for (int i = 0; srcs && i < n; i++) {
    if (PyList_Check(srcs)) PyList_SET_ITEM(srcs, i, Py_NewRef(src[i]));
    else PyTuple_SET_ITEM(srcs, i, Py_NewRef(src[i]));
  }
  PyObject *ret = srcs ? make(ops_members[op], dtype, srcs, Py_None, Py_None) : NULL;
  Py_XDECREF(srcs);
  return ret;
}

static PyObject *UPat_alu(UPat *self, PyObject *args) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n < 1) return PyErr_Format(PyExc_TypeError, "alu needs an op");
  int op = op_from_object(PyTuple_GET_ITEM(args, 0));
  if (op < 0) return NULL;
  PyObject *src[8];
  if (n > 8) return PyErr_Format(PyExc_ValueError, "too many alu sources");
  src[0] = (PyObject *)self;
  for (Py_ssize_t i = 1; i < n; i++) {
    if (!UPat_Check(PyTuple_GET_ITEM(args, i))) return PyErr_Format(PyExc_TypeError, "alu sources must be UPats");
    src[i] = PyTuple_GET_ITEM(args, i);
  }
  return upat_alu(op, src, (int)n);
}

/* ufix: a number becomes UPat.const(self.dtype, x) */
static PyObject *upat_ufix(UPat *self, PyObject *x) { return UPat_Check(x) ? Py_NewRef(x) : UPat_const_like(self, x); }

static PyObject *upat_binop(Op op, PyObject *a, PyObject *b) {
  bool reverse = !UPat_Check(a);
  UPat *self = (UPat *)(reverse ? b : a);
  PyObject *x = reverse ? a : b;
  if (UOp_Check(x)) Py_RETURN_NOTIMPLEMENTED;
  PyObject *ux = upat_ufix(self, x);
  if (!ux) return NULL;
  PyObject *src[2] = {reverse ? ux : (PyObject *)self, reverse ? (PyObject *)self : ux};
  PyObject *ret = upat_alu(op, src, 2);
  Py_DECREF(ux);
  return ret;
}

#define UPAT_BINARY(name, OP) static PyObject *upat_nb_##name(PyObject *a, PyObject *b) { return upat_binop(OP, a, b); }
UPAT_BINARY(add, OP_ADD)
UPAT_BINARY(mul, OP_MUL)
UPAT_BINARY(floordiv, OP_IDIV)
UPAT_BINARY(mod, OP_MOD)
UPAT_BINARY(and, OP_AND)
UPAT_BINARY(or, OP_OR)
UPAT_BINARY(xor, OP_XOR)
UPAT_BINARY(lshift, OP_SHL)
UPAT_BINARY(rshift, OP_SHR)

/* self - x = self + (-x): only a number can be negated here (a UPat has no dtype to negate with) */
static PyObject *upat_nb_sub(PyObject *a, PyObject *b) {
  if (!UPat_Check(a) || UPat_Check(b)) return PyErr_Format(PyExc_TypeError, "UPat subtraction needs a number on the right");
  PyObject *nb = PyNumber_Negative(b), *ret = nb ? upat_binop(OP_ADD, a, nb) : NULL;
  Py_XDECREF(nb);
  return ret;
}

/* a / b = a * ufix(b).reciprocal(); a number over a pattern, ufix(a) * b.reciprocal() (the math mixin's div) */
static PyObject *upat_nb_truediv(PyObject *a, PyObject *b) {
  bool reverse = !UPat_Check(a);
  UPat *self = (UPat *)(reverse ? b : a);
  PyObject *x = reverse ? a : b;
  if (UOp_Check(x)) Py_RETURN_NOTIMPLEMENTED;
  PyObject *ux = upat_ufix(self, x), *recip = NULL, *ret = NULL;
  PyObject *num = reverse ? ux : (PyObject *)self, *den = reverse ? (PyObject *)self : ux;
  if (ux) recip = upat_alu(OP_RECIPROCAL, &den, 1);
  if (recip) {
    PyObject *src[2] = {num, recip};
    ret = upat_alu(OP_MUL, src, 2);
  }
  Py_XDECREF(ux); Py_XDECREF(recip);
  return ret;
}

static PyObject *upat_richcompare(PyObject *a, PyObject *b, int cmp) {
  if (cmp == Py_EQ) { if (a == b) Py_RETURN_TRUE; Py_RETURN_NOTIMPLEMENTED; }
  if (!UPat_Check(a)) Py_RETURN_NOTIMPLEMENTED;
  if (cmp == Py_LT) return upat_binop(OP_CMPLT, a, b);
  if (cmp == Py_NE) return upat_binop(OP_CMPNE, a, b);
  if (cmp == Py_GT) return upat_binop(OP_CMPLT, b, a);
  PyErr_SetString(PyExc_TypeError, "UPat supports <, > and != only");
  return NULL;
}

static PyObject *UPat_ne(UPat *self, PyObject *x) { return upat_binop(OP_CMPNE, (PyObject *)self, x); }
static PyObject *UPat_logical_not(UPat *self, PyObject *unused) { UNUSED(unused); return upat_binop(OP_CMPNE, (PyObject *)self, Py_True); }
static PyObject *UPat_maximum(UPat *self, PyObject *x) { return upat_binop(OP_MAX, (PyObject *)self, x); }
static PyObject *UPat_where(UPat *self, PyObject *args) {
  PyObject *x, *y;
  if (!PyArg_ParseTuple(args, "OO:where", &x, &y)) return NULL;
  UPat *anchor = UPat_Check(x) ? (UPat *)x : UPat_Check(y) ? (UPat *)y : NULL;
  if (!anchor) return PyErr_Format(PyExc_RuntimeError, "where needs at least one UPat arg");
  PyObject *ux = upat_ufix(anchor, x), *uy = ux ? upat_ufix(anchor, y) : NULL, *ret = NULL;
  if (uy) {
    PyObject *src[3] = {(PyObject *)self, ux, uy};
    ret = upat_alu(OP_WHERE, src, 3);
  }
  Py_XDECREF(ux); Py_XDECREF(uy);
  return ret;
}
#define UPAT_UNARY(name, OP) \
  static PyObject *UPat_##name(UPat *self, PyObject *u) { UNUSED(u); PyObject *s = (PyObject *)self; return upat_alu(OP, &s, 1); }
UPAT_UNARY(reciprocal, OP_RECIPROCAL)
UPAT_UNARY(sqrt, OP_SQRT)
UPAT_UNARY(exp2, OP_EXP2)
UPAT_UNARY(log2, OP_LOG2)
UPAT_UNARY(sin, OP_SIN)
UPAT_UNARY(trunc, OP_TRUNC)

/* match(uop, store): every match as a dict of captures, in tinygrad's order */
typedef struct { PyObject *list; UPat *root; } CollectEnv;
static int collect_match(MatchState *st) {
  CollectEnv *env = st->env;
  int names[MAX_CAPTURES], n = 0;
  if (collect_names(env->root, names, &n) < 0) return -1;
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < n; i++)
    if (st->cap->slot[names[i]] && PyDict_SetItem(d, name_of_slot[names[i]], (PyObject *)st->cap->slot[names[i]]) < 0) Py_CLEAR(d);
  int rc = d ? PyList_Append(env->list, d) : -1;
  Py_XDECREF(d);
  return rc < 0 ? -1 : 0;
}

static PyObject *UPat_match(UPat *self, PyObject *args) {
  PyObject *u, *store = NULL;
  if (!PyArg_ParseTuple(args, "O|O!:match", &u, &PyDict_Type, &store)) return NULL;
  if (!UOp_Check(u)) return PyErr_Format(PyExc_TypeError, "match needs a UOp");
  Captures cap;
  memset(&cap, 0, sizeof(cap));
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  while (store && PyDict_Next(store, &pos, &k, &v)) {
    int slot = slot_for(k);
    if (slot < 0) return NULL;
    if (!UOp_Check(v)) return PyErr_Format(PyExc_TypeError, "match store values must be UOps");
    cap.slot[slot] = (UOp *)v;
  }
  CollectEnv env = {PyList_New(0), self};
  if (!env.list) return NULL;
  MatchState st = {&cap, collect_match, &env};
  if (match(&st, self, (UOp *)u, NULL) < 0) Py_CLEAR(env.list);
  return env.list;
}

#define VK(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
static PyMethodDef upat_methods[] = {
  {"var", VK(UPat_var) | METH_STATIC, "UPat.var(name=None, dtype=None): any node"},
  {"cvar", VK(UPat_cvar) | METH_STATIC, "UPat.cvar(name=None, dtype=None, vec=True, arg=None): a constant"},
  {"const", (PyCFunction)UPat_const, METH_VARARGS | METH_STATIC, NULL},
  {"any", (PyCFunction)UPat_any, METH_VARARGS | METH_STATIC, "UPat.any(*pats): any of the patterns"},
  {"f", VK(UPat_f), NULL}, {"named", (PyCFunction)UPat_named, METH_O, NULL},
  {"or_casted", (PyCFunction)UPat_or_casted, METH_VARARGS, NULL}, {"or_after", (PyCFunction)UPat_or_after, METH_VARARGS, NULL},
  {"sink", VK(UPat_sink), NULL}, {"index", VK(UPat_index), NULL}, {"cast", VK(UPat_cast), NULL},
  {"bitcast", (PyCFunction)UPat_bitcast, METH_VARARGS, NULL}, {"gep", VK(UPat_gep), NULL}, {"load", VK(UPat_load), NULL},
  {"store", VK(UPat_store), NULL}, {"assign", VK(UPat_assign), NULL}, {"reduce", VK(UPat_reduce), NULL},
  {"broadcast", VK(UPat_broadcast), NULL}, {"contiguous", VK(UPat_contiguous), NULL}, {"after", VK(UPat_after), NULL},
  {"end", VK(UPat_end), NULL}, {"const_like", (PyCFunction)UPat_const_like, METH_O, NULL},
  {"alu", (PyCFunction)UPat_alu, METH_VARARGS, NULL}, {"ne", (PyCFunction)UPat_ne, METH_O, NULL},
  {"logical_not", (PyCFunction)UPat_logical_not, METH_NOARGS, NULL},
  {"maximum", (PyCFunction)UPat_maximum, METH_O, NULL}, {"where", (PyCFunction)UPat_where, METH_VARARGS, NULL},
  {"reciprocal", (PyCFunction)UPat_reciprocal, METH_NOARGS, NULL}, {"sqrt", (PyCFunction)UPat_sqrt, METH_NOARGS, NULL},
  {"exp2", (PyCFunction)UPat_exp2, METH_NOARGS, NULL}, {"log2", (PyCFunction)UPat_log2, METH_NOARGS, NULL},
  {"sin", (PyCFunction)UPat_sin, METH_NOARGS, NULL}, {"trunc", (PyCFunction)UPat_trunc, METH_NOARGS, NULL},
  {"match", (PyCFunction)UPat_match, METH_VARARGS, "every match of the pattern on a UOp, as dicts of captures"},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef upat_getset[] = {
  {"op", (getter)UPat_get_op, NULL, NULL, NULL}, {"dtype", (getter)UPat_get_dtype, NULL, NULL, NULL},
  {"arg", (getter)UPat_get_arg, NULL, NULL, NULL}, {"name", (getter)UPat_get_name, NULL, NULL, NULL},
  {"_in_src", (getter)UPat_get_in_src, NULL, NULL, NULL}, {"location", (getter)UPat_get_location, NULL, NULL, NULL},
  {"is_any", (getter)UPat_get_is_any, NULL, NULL, NULL}, {"strict_length", (getter)UPat_get_strict_length, NULL, NULL, NULL},
  {"required_len", (getter)UPat_get_required_len, NULL, NULL, NULL}, {"early_reject", (getter)UPat_get_early_reject, NULL, NULL, NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

static PyNumberMethods upat_as_number = {
  .nb_add = upat_nb_add, .nb_subtract = upat_nb_sub, .nb_multiply = upat_nb_mul, .nb_remainder = upat_nb_mod,
  .nb_floor_divide = upat_nb_floordiv, .nb_true_divide = upat_nb_truediv, .nb_and = upat_nb_and, .nb_or = upat_nb_or, .nb_xor = upat_nb_xor,
  .nb_lshift = upat_nb_lshift, .nb_rshift = upat_nb_rshift,
};

PyTypeObject UPat_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.UPat",
  .tp_basicsize = sizeof(UPat),
  .tp_dealloc = (destructor)UPat_dealloc,
  .tp_as_number = &upat_as_number,
  .tp_richcompare = upat_richcompare,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
  .tp_traverse = (traverseproc)UPat_traverse,
  .tp_clear = (inquiry)UPat_clear,
  .tp_doc = "UPat(op=None, dtype=None, src=None, arg=None, name=None, allow_any_len=False, custom_early_reject=None)",
  .tp_methods = upat_methods,
  .tp_getset = upat_getset,
  .tp_new = UPat_new,
};

int tinyc_init_upat(PyObject *m) {
  if (!(slot_of_name = PyDict_New()) || !(var_cache = PyDict_New()) || !(cvar_cache = PyDict_New())) return -1;
  static const char *const fixed[] = {
#define X(n) #n,
    CAPTURE_NAMES(X)
#undef X
  };
  for (int i = 0; i < CAP_FIXED; i++)
    if (capture_slot(fixed[i]) != i) return -1;
  UPat_Type.tp_hash = PyBaseObject_Type.tp_hash;
  if (PyType_Ready(&UPat_Type) < 0 || PyType_Ready(&PatternMatcher_Type) < 0 || PyType_Ready(&RuleObject_Type) < 0) return -1;
  if (!(BottomUpGate = PyErr_NewException("tinyc.BottomUpGate", NULL, NULL))) return -1;
  return tinyc_add(m, "UPat", (PyObject *)&UPat_Type) < 0 || tinyc_add(m, "PatternMatcher", (PyObject *)&PatternMatcher_Type) < 0 ||
         tinyc_add(m, "BottomUpGate", BottomUpGate) < 0 ? -1 : tinyc_init_rewrite(m);
}
