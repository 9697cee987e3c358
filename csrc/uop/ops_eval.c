/* tinygrad/uop/ops.py, "uop evaluation" and the helpers around it that need the rewrite engine:
 * simplify, ssimplify, substitute, render, resolve, smax/smin, and the `_substitute` rule set. */
#include "native.h"
#include "../helpers.h"

/* ---- _substitute: every node found in ctx (a dict) becomes its value ---- */

RULE(substitute_from_ctx, x) {
  PyObject *v = PyDict_Check(ctx) ? PyDict_GetItemWithError(ctx, (PyObject *)x) : NULL;
  if (v && !UOp_Check(v)) return (UOp *)PyErr_Format(PyExc_TypeError, "substitute values must be UOps, not %.100s", Py_TYPE(v)->tp_name);
  return (UOp *)v;
}

static const RuleDef substitute_defs[] = {
  R("UPat(tuple(Ops), name='x')", substitute_from_ctx),
};

/* ---- simplify ---- */

static PatternMatcher *rule_set(const char *name) {
  PatternMatcher *pm = native_get(name);
  if (!pm) PyErr_Format(PyExc_RuntimeError, "the native rule set %s is missing", name);
  return pm;
}

UOp *uop_simplify(UOp *u) {
  if (u->op == OP_CONST || u->op == OP_VCONST) return (UOp *)Py_NewRef(u);
  static PatternMatcher *symbolic;   /* registered sets live as long as the module: look it up once */
  if (!symbolic) symbolic = rule_set("symbolic");
  return symbolic ? graph_rewrite(u, symbolic, Py_None, false, NULL) : NULL;
}

static PyObject *UOp_simplify(UOp *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"tracked", NULL};
  int tracked = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:simplify", kwlist, &tracked)) return NULL;
  return (PyObject *)uop_simplify(self);
}

PyObject *uop_ssimplify(UOp *self) {
  UOp *s = uop_simplify(self);
  if (!s || s->op != OP_CONST) return (PyObject *)s;
  PyObject *v = Py_NewRef(s->arg);
  Py_DECREF(s);
  return v;
}
static PyObject *UOp_ssimplify(UOp *self, PyObject *unused) { UNUSED(unused); return uop_ssimplify(self); }

/* ---- bottom-up rewrites by a one-node rule as a direct walk (substitute, add control flow) ----
 * graph_rewrite(x, pm, ctx, bottom_up=True) with a rule set whose one rule reads only its node and ctx (no effect, no
 * order to keep) answers, for each node n: m = the end of n's chain through the rule (n, step(n), step(step(n)), ...;
 * a node met twice is tinygrad's "infinite loop in fixed_point_rewrite"); m itself when every source of m answers
 * itself, else the answer for m rebuilt on its sources' answers. The walk computes that recursion directly: no
 * matching, no rewrite engine. An answer answers itself (by induction on the recursion), which lets the walk answer the
 * end of a chain and a rebuilt node that the rule leaves without walking them again; a node with none of the ops the
 * rule fires on below it (its ops_below summary) is its own answer and is never visited. */

#define REWRITE_WALK_STACK_LIMIT 250000   /* graph_rewrite's REWRITE_STACK_LIMIT */
#define IN_PROGRESS ((void *)&in_progress_marker)
static char in_progress_marker;

typedef struct { UOp *n, *m, *y; int stage; } WalkFrame;
typedef struct {
  PyObject *ctx; RewriteStep step; uint32_t rule_ops;
  PtrMap answer; PtrVec keep; WalkFrame *stack; Py_ssize_t len, cap;
} RewriteWalk;

static bool untouched(const RewriteWalk *w, const UOp *u) { return !(u->ops_below & w->rule_ops); }
static UOp *answer_of(const RewriteWalk *w, UOp *u) { return untouched(w, u) ? u : ptrmap_get(&w->answer, u); }
static UOp *step_of(RewriteWalk *w, UOp *u) { return op_bit(u->op) & w->rule_ops ? w->step(w->ctx, u, &w->keep) : u; }

/* the end of u's chain through the rule: a borrowed node, kept by the walk */
static UOp *chain_end(RewriteWalk *w, UOp *u) {
  SmallSet seen = {0};
  UOp *ret = NULL;
  for (;;) {
    int again = smallset_add(&seen, u);
    if (again) {
      if (again > 0) PyErr_SetString(PyExc_RuntimeError, "infinite loop in fixed_point_rewrite");
      break;
    }
    UOp *v = step_of(w, u);
    if (v == u || !v) { ret = v; break; }
    u = v;
  }
  smallset_free(&seen);
  return ret;
}

static int walk_push(RewriteWalk *w, UOp *n) {
  if (w->len >= REWRITE_WALK_STACK_LIMIT) {
    PyErr_SetString(PyExc_RuntimeError, "infinite loop in graph_rewrite (stack too big)");
    return -1;
  }
  if (w->len == w->cap) {
    Py_ssize_t cap = w->cap ? w->cap * 2 : 64;
    WalkFrame *more = PyMem_Realloc(w->stack, (size_t)cap * sizeof(WalkFrame));
    if (!more) { PyErr_NoMemory(); return -1; }
    w->stack = more, w->cap = cap;
  }
  w->stack[w->len++] = (WalkFrame){n, NULL, NULL, 0};
  return 0;
}

static int loop_error(void) {
  PyErr_SetString(PyExc_RuntimeError, "graph_rewrite made no progress (the rewrites form a loop)");
  return -1;
}

/* u answers itself (u is an answer, or its sources are and the rule leaves it): recorded unless u is already known */
static int answers_itself(RewriteWalk *w, UOp *u) {
  void *known = answer_of(w, u);
  if (known == IN_PROGRESS) return loop_error();
  return known ? 0 : ptrmap_set(&w->answer, u, u);
}

/* stage 1 of frame f: m's sources are answered; n answers m, or m rebuilt on them (answered at once when the rule
 * leaves it, else walked as any other node: stage 2) */
static int walk_rebuild(RewriteWalk *w, WalkFrame *f) {
  UOp *m = f->m, *small[8], **src = m->nsrc <= 8 ? small : PyMem_Malloc(sizeof(UOp *) * m->nsrc);
  if (!src) { PyErr_NoMemory(); return -1; }
  bool changed = false;
  for (int i = 0; i < m->nsrc; i++) {
    src[i] = answer_of(w, m->src[i]);
    if (src[i] == IN_PROGRESS || !src[i]) { if (src != small) PyMem_Free(src); return loop_error(); }   /* a source waits on n */
    changed |= src[i] != m->src[i];
  }
  UOp *y = changed ? uop_new(m->op, m->dtype, src, m->nsrc, m->arg, uop_tag(m)) : NULL;
  if (src != small) PyMem_Free(src);
  if (!changed) {
    w->len--;
    return ptrmap_set(&w->answer, f->n, m) < 0 || (m != f->n && answers_itself(w, m) < 0) ? -1 : 0;
  }
  if (!y || ptrvec_push(&w->keep, y) < 0) { Py_XDECREF(y); return -1; }
  UOp *next = step_of(w, y);
  if (!next) return -1;
  if (next == y) {   /* its sources are answers: y answers itself */
    UOp *n = f->n;
    w->len--;
    return answers_itself(w, y) < 0 || ptrmap_set(&w->answer, n, answer_of(w, y)) < 0 ? -1 : 0;
  }
  f->y = y, f->stage = 2;
  return walk_push(w, y);
}

/* one step of the frame on top: 0 or -1 */
static int walk_step(RewriteWalk *w) {
  WalkFrame *f = &w->stack[w->len - 1];
  if (f->stage == 0) {
    void *known = answer_of(w, f->n);
    if (known == IN_PROGRESS) return loop_error();
    if (known) { w->len--; return 0; }
    if (ptrmap_set(&w->answer, f->n, IN_PROGRESS) < 0 || !(f->m = chain_end(w, f->n))) return -1;
    f->stage = 1;
    UOp *m = f->m;
    for (int i = m->nsrc - 1; i >= 0; i--)
      if (!answer_of(w, m->src[i]) && walk_push(w, m->src[i]) < 0) return -1;
    return 0;
  }
  if (f->stage == 1) return walk_rebuild(w, f);
  void *done = answer_of(w, f->y);
  w->len--;
  return ptrmap_set(&w->answer, f->n, done);
}

UOp *bottom_up_walk(UOp *root, PyObject *ctx, RewriteStep step, uint32_t rule_ops) {
  RewriteWalk w = {ctx, step, rule_ops, {0}, {0}, NULL, 0, 0};
  int rc = walk_push(&w, root);
  while (rc == 0 && w.len) rc = walk_step(&w);
  UOp *ret = rc == 0 ? (UOp *)Py_XNewRef(answer_of(&w, root)) : NULL;
  for (Py_ssize_t i = 0; i < w.keep.len; i++) Py_DECREF((PyObject *)w.keep.items[i]);
  ptrvec_free(&w.keep); ptrmap_free(&w.answer); PyMem_Free(w.stack);
  return ret;
}

/* _substitute's rule: the node's value in the map (kept), or the node */
static UOp *substitute_step(PyObject *map, UOp *u, PtrVec *keep) {
  PyObject *v = PyDict_GetItemWithError(map, (PyObject *)u);
  if (!v) return PyErr_Occurred() ? NULL : u;
  if (!UOp_Check(v)) return (UOp *)PyErr_Format(PyExc_TypeError, "substitute values must be UOps, not %.100s", Py_TYPE(v)->tp_name);
  if (v == (PyObject *)u) return u;   /* a node mapped to itself: the engine takes that for no rewrite */
  if (ptrvec_push(keep, Py_NewRef(v)) < 0) { Py_DECREF(v); return NULL; }
  return (UOp *)v;
}

/* the ops of the map's keys: a key of another type may equal a node of any op */
static uint32_t key_ops(PyObject *map) {
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  uint32_t ops = 0;
  while (PyDict_Next(map, &pos, &k, &v)) ops |= Py_IS_TYPE(k, &UOp_Type) ? op_bit(((UOp *)k)->op) : ~(uint32_t)0;
  return ops;
}

/* the map without its k: k entries, then the walk, or, with extra rules (NULL: none), a bottom-up rewrite with the map as
 * ctx by extra + _substitute */
static UOp *substitute_with(UOp *self, PyObject *dvars, PatternMatcher *extra) {
  PyObject *changed = PyDict_New(), *k, *v;
  Py_ssize_t pos = 0;
  while (changed && PyDict_Next(dvars, &pos, &k, &v))
    if (k != v && PyDict_SetItem(changed, k, v) < 0) Py_CLEAR(changed);
  if (!changed) return NULL;
  UOp *ret = NULL;
  if (!PyDict_GET_SIZE(changed)) ret = (UOp *)Py_NewRef(self);
  else if (!extra) ret = bottom_up_walk(self, changed, substitute_step, key_ops(changed));
  else {
    PatternMatcher *sub = rule_set("_substitute"), *pm = sub ? pm_concat(extra, sub) : NULL;
    ret = pm ? graph_rewrite(self, pm, changed, true, NULL) : NULL;
    Py_XDECREF(pm);
  }
  Py_DECREF(changed);
  return ret;
}
UOp *uop_substitute(UOp *self, PyObject *dvars) {
  if (!PyDict_Check(dvars)) return (UOp *)PyErr_Format(PyExc_TypeError, "substitute needs a dict");
  return substitute_with(self, dvars, NULL);
}

/* substitute(dvars, name=None, extra_pm=None) */
static PyObject *UOp_substitute(UOp *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"dvars", "name", "extra_pm", NULL};
  PyObject *dvars, *name = Py_None, *extra = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|OO:substitute", kwlist, &PyDict_Type, &dvars, &name, &extra)) return NULL;
  if (extra != Py_None && !PatternMatcher_Check(extra)) return PyErr_Format(PyExc_TypeError, "extra_pm must be a PatternMatcher");
  return (PyObject *)substitute_with(self, dvars, extra == Py_None ? NULL : (PatternMatcher *)extra);
}

/* each node's text from its sources' texts, by the renderer matcher pm */
static PyObject *render_with(UOp *self, bool simplify, PatternMatcher *pm) {
  UOp *s = simplify ? uop_simplify(self) : (UOp *)Py_NewRef(self);
  PyObject *ctx = s ? PyDict_New() : NULL, *order = ctx ? uop_toposort_list(s, NULL) : NULL, *ret = NULL;
  for (Py_ssize_t i = 0; order && i < PyList_GET_SIZE(order); i++) {
    UOp *u = (UOp *)PyList_GET_ITEM(order, i);
    PyObject *text = pm_rewrite(pm, u, ctx, false);
    if (!text && !PyErr_Occurred()) text = Py_NewRef(Py_None);
    if (!text || PyDict_SetItem(ctx, (PyObject *)u, text) < 0) { Py_XDECREF(text); goto end; }
    Py_DECREF(text);
  }
  if (order) ret = Py_XNewRef(PyDict_GetItem(ctx, (PyObject *)s));
end:
  Py_XDECREF(s); Py_XDECREF(ctx); Py_XDECREF(order);
  return ret;
}
PyObject *uop_render(UOp *self, bool simplify) {
  PatternMatcher *pm = rule_set("renderer");
  return pm ? render_with(self, simplify, pm) : NULL;
}

/* render(simplify=True, pm=None) */
static PyObject *UOp_render(UOp *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"simplify", "pm", NULL};
  int simplify = 1;
  PyObject *pm = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|pO:render", kwlist, &simplify, &pm)) return NULL;
  if (pm == Py_None) return uop_render(self, simplify);
  if (!PatternMatcher_Check(pm)) return PyErr_Format(PyExc_TypeError, "render's pm must be a PatternMatcher");
  return render_with(self, simplify, (PatternMatcher *)pm);
}

/* ---- module functions: resolve, smax, smin, ssimplify, sym_infer ---- */

/* resolve(x, default=True): a bool, or the bool a UOp surely has, or the default */
static PyObject *py_resolve(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"x", "default", NULL};
  PyObject *x, *dflt = Py_True;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:resolve", kwlist, &x, &dflt)) return NULL;
  if (PyBool_Check(x)) return Py_NewRef(x);
  if (!UOp_Check(x)) return PyErr_Format(PyExc_TypeError, "resolve needs a bool or a UOp, not %.100s", Py_TYPE(x)->tp_name);
  if (((UOp *)x)->dtype != DTYPE(BOOL)) return PyErr_Format(PyExc_ValueError, "UOp in resolve must be bool");
  UOp *s = uop_simplify((UOp *)x);
  PyObject *lo, *hi, *ret = NULL;
  if (s && uop_min_max(s, &lo, &hi) == 0) {
    int eq = PyObject_RichCompareBool(lo, hi, Py_EQ), truth = eq > 0 ? PyObject_IsTrue(lo) : 0;
    if (eq >= 0 && truth >= 0) ret = eq ? PyBool_FromLong(truth) : (PyObject_IsTrue(dflt) ? Py_NewRef(Py_True) : Py_NewRef(Py_False));
  }
  Py_XDECREF(s);
  return ret;
}

static PyObject *ssimplify_any(PyObject *x) {
  if (!UOp_Check(x)) return Py_NewRef(x);
  return uop_ssimplify((UOp *)x);
}

/* smax/smin: max/min that stay symbolic: UOps fold with maximum/minimum, numbers with max/min */
static PyObject *suop(PyObject *args, const char *uop_method, const char *py_fn) {
  if (PyTuple_GET_SIZE(args) == 1 && (PyTuple_Check(PyTuple_GET_ITEM(args, 0)) || PyList_Check(PyTuple_GET_ITEM(args, 0))))
    args = PyTuple_GET_ITEM(args, 0);   /* argfix: smax((a, b)) is smax(a, b) */
  PyObject *seq = PySequence_Fast(args, "smax/smin"), *uops = PyList_New(0), *nums = PyList_New(0), *acc = NULL;
  if (!seq || !uops || !nums) goto end;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *x = PySequence_Fast_GET_ITEM(seq, i);
    if (PyList_Append(UOp_Check(x) ? uops : nums, x) < 0) goto end;
  }
  if (PyList_GET_SIZE(nums)) {
    PyObject *builtins = PyEval_GetBuiltins(), *fn = PyDict_GetItemString(builtins, py_fn);
    PyObject *n = fn ? PyObject_CallOneArg(fn, nums) : NULL;
    if (!n || PyList_Append(uops, n) < 0) { Py_XDECREF(n); goto end; }
    Py_DECREF(n);
  }
  if (!PyList_GET_SIZE(uops)) { PyErr_SetString(PyExc_TypeError, "smax/smin of nothing"); goto end; }
  acc = Py_NewRef(PyList_GET_ITEM(uops, 0));
  for (Py_ssize_t i = 1; acc && i < PyList_GET_SIZE(uops); i++)
    Py_SETREF(acc, PyObject_CallMethod(acc, uop_method, "O", PyList_GET_ITEM(uops, i)));
  if (acc) Py_SETREF(acc, ssimplify_any(acc));
end:
  Py_XDECREF(seq); Py_XDECREF(uops); Py_XDECREF(nums);
  return acc;
}
static PyObject *py_smax(PyObject *mod, PyObject *args) { UNUSED(mod); return suop(args, "maximum", "max"); }
static PyObject *py_smin(PyObject *mod, PyObject *args) { UNUSED(mod); return suop(args, "minimum", "min"); }
static PyObject *py_ssimplify(PyObject *mod, PyObject *x) { UNUSED(mod); return ssimplify_any(x); }
static PyObject *py_sym_infer(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *u, *var_vals;
  if (!PyArg_ParseTuple(args, "OO:sym_infer", &u, &var_vals)) return NULL;
  return UOp_Check(u) ? uop_sym_infer((UOp *)u, var_vals) : Py_NewRef(u);
}

#define VK(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
PyMethodDef uop_eval_methods[] = {
  {"simplify", VK(UOp_simplify), "graph_rewrite(self, symbolic)"},
  {"ssimplify", (PyCFunction)UOp_ssimplify, METH_NOARGS, "simplify, and a CONST becomes its value"},
  {"substitute", VK(UOp_substitute), "replace nodes by the dict's values, bottom up"},
  {"render", VK(UOp_render), "the expression as text, by the renderer matcher"},
  {NULL, NULL, 0, NULL},
};

static PyMethodDef eval_functions[] = {
  {"resolve", VK(py_resolve), "resolve(x, default=True)"},
  {"smax", py_smax, METH_VARARGS, NULL},
  {"smin", py_smin, METH_VARARGS, NULL},
  {"ssimplify", py_ssimplify, METH_O, NULL},
  {"sym_infer", py_sym_infer, METH_VARARGS, NULL},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_eval(PyObject *m) {
  if (PyModule_AddFunctions(m, eval_functions) < 0) return -1;
  PatternMatcher *sub = pm_from_defs(substitute_defs, N(substitute_defs));
  if (sub) pm_set_form_checked(sub);   /* substitute reads no sources: it works on malformed graphs as tinygrad's does */
  return native_register("_substitute", sub);
}
