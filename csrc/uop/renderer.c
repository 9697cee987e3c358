/* The rule sets at the end of tinygrad/uop/ops.py: `renderer` and `renderer_infer` (UOp.render's text
 * for index expressions), `pm_lower_index_dtype` (dtypes.index becomes int/long), `_remove_all_tags`
 * and `pm_unbind`, with UOp.unbind_all and _index_to_concrete_int.
 *
 * The renderer's rules return Python strs, not UOps: ctx is the dict node -> text of the nodes
 * rendered so far (sources come first in toposort order). */
#include "native.h"

/* ================================================================================================
 * renderer
 * ================================================================================================ */

/* a rule's text result: a new reference handed to the pool */
#define TEXT(expr) ((UOp *)pool_keep(expr))

/* ctx[u]: the text rendered for a source (KeyError when it was not rendered) */
static PyObject *text_of(PyObject *ctx, UOp *u) { return pool_keep(PyObject_GetItem(ctx, (PyObject *)u)); }

/* formatting with every %S argument present (NULL: an error happened earlier) */
static UOp *format1(const char *fmt, PyObject *a) { return a ? TEXT(PyUnicode_FromFormat(fmt, a)) : NULL; }
static UOp *format2(const char *fmt, PyObject *a, PyObject *b) { return a && b ? TEXT(PyUnicode_FromFormat(fmt, a, b)) : NULL; }
static UOp *format3(const char *fmt, PyObject *a, PyObject *b, PyObject *c) {
  return a && b && c ? TEXT(PyUnicode_FromFormat(fmt, a, b, c)) : NULL;
}

/* strip_parens (helpers), pooled: borrowed */
static PyObject *stripped(PyObject *s) { return pool_keep(strip_parens(s)); }

/* how tightly a binary op binds in Python (lower binds tighter); ops without an entry: 99 */
static int precedence(Op op) {
  switch (op) {
  case OP_MUL: case OP_IDIV: case OP_MOD: return 1;
  case OP_ADD: case OP_SUB: return 2;
  case OP_SHL: case OP_SHR: return 3;
  case OP_AND: return 4;
  case OP_XOR: return 5;
  case OP_OR: return 6;
  default: return 99;
  }
}

/* the Python operator of each op the binary rule renders (tinygrad's `syms`) */
static const char *binary_symbol(Op op) {
  switch (op) {
  case OP_ADD: return "+";
  case OP_SUB: return "-";
  case OP_IDIV: return "//";
  case OP_MOD: return "%";
  case OP_SHL: return "<<";
  case OP_SHR: return ">>";
  case OP_MUL: return "*";
  case OP_CMPLT: return "<";
  case OP_CMPNE: return "!=";
  case OP_AND: return "&";
  case OP_OR: return "|";
  case OP_XOR: return "^";
  default: return NULL;
  }
}

/* strip_binary_parens: "(left sym right)", dropping an operand's parens where precedence makes them
 * redundant (a left operand of the same or tighter binding, a right one of strictly tighter binding).
 * Comparisons have no precedence entry and keep their operands as they are (Python chains them). */
static UOp *render_binary(UOp *x, PyObject *left, PyObject *right) {
  int mine = precedence(x->op);
  if (mine != 99) {
    if (precedence(x->src[0]->op) <= mine) left = stripped(left);
    if (precedence(x->src[1]->op) < mine) right = stripped(right);
  }
  PyObject *sym = pool_keep(PyUnicode_FromString(binary_symbol(x->op)));
  return left && right && sym ? TEXT(PyUnicode_FromFormat("(%S%S%S)", left, sym, right)) : NULL;
}

/* ops.py's range_str: the range's arg without its AxisType, joined by "_", negatives as "m<abs>" */
static PyObject *range_str(UOp *u) {
  PyObject *ids = pool_keep(PySequence_GetSlice(u->arg, 0, -1)), *zero = n_int(0);
  PyObject *parts = ids && zero ? pool_keep(PyList_New(0)) : NULL;
  Py_ssize_t n = parts ? PySequence_Length(ids) : -1;
  if (n < 0) return NULL;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *id = pool_keep(PySequence_GetItem(ids, i));
    int nonneg = id ? PyObject_RichCompareBool(id, zero, Py_GE) : -1;
    if (nonneg < 0) return NULL;
    PyObject *part = nonneg ? pool_keep(PyObject_Str(id)) : (PyObject *)format1("m%S", n_neg(id));
    if (!part || PyList_Append(parts, part) < 0) return NULL;
  }
  PyObject *sep = pool_keep(PyUnicode_FromString("_"));
  return sep ? pool_keep(PyUnicode_Join(sep, parts)) : NULL;
}

/* a variable renders as its name */
RULE(render_define_var, x) { return TEXT(PySequence_GetItem(x->arg, 0)); }
/* a special renders as its arg (its name) */
RULE(render_special, x) { return (UOp *)x->arg; }
/* a range renders as "r" and its range_str */
RULE(render_range, x) { return format1("r%S", range_str(x)); }
/* a constant renders as str(arg) */
RULE(render_const, x) { return TEXT(PyObject_Str(x->arg)); }
/* UNROLL: tinygrad's rule takes a `u` its pattern never names, so calling it is a TypeError */
RULE(render_unroll) {
  return (UOp *)PyErr_Format(PyExc_TypeError, "<lambda>() missing 1 required positional argument: 'u'");
}
/* a cast renders C style: "(int)(x)", the dtype's repr without "dtypes." */
RULE(render_cast, x) {
  PyObject *dt = pool_keep(PyObject_Str((PyObject *)x->dtype));
  PyObject *name = dt ? pool_keep(PyUnicode_Substring(dt, 7, PY_SSIZE_T_MAX)) : NULL;
  return format2("(%S)(%S)", name, text_of(ctx, x->src[0]));
}
/* a bound variable renders as the variable */
RULE(render_bind, x) { return (UOp *)text_of(ctx, x->src[0]); }
/* negation: "(-x)" */
RULE(render_neg, x) { return format1("(-%S)", text_of(ctx, x->src[0])); }
/* reciprocal: "(1/x)" */
RULE(render_reciprocal, x) { return format1("(1/%S)", text_of(ctx, x->src[0])); }
/* max: "max(a, b)" */
RULE(render_max, x) {
  return format2("max(%S, %S)", text_of(ctx, x->src[0]), text_of(ctx, x->src[1]));
}
/* multiply-accumulate: "(a*b+c)" */
RULE(render_mulacc, x) {
  return format3("(%S*%S+%S)", text_of(ctx, x->src[0]), text_of(ctx, x->src[1]), text_of(ctx, x->src[2]));
}
/* where: Python's conditional expression "(t if c else f)" */
RULE(render_where, x) {
  return format3("(%S if %S else %S)", text_of(ctx, x->src[1]), text_of(ctx, x->src[0]), text_of(ctx, x->src[2]));
}
/* binary ops with a Python operator: "(a+b)", with redundant parens of the operands dropped */
RULE(render_binary_op, x) {
  return render_binary(x, text_of(ctx, x->src[0]), text_of(ctx, x->src[1]));
}
/* INDEX/BUFFERIZE: "[i][j]..." of the index sources (the buffer is not rendered) */
RULE(render_index, x) {
  PyObject *parts = pool_keep(PyList_New(0)), *empty = pool_keep(PyUnicode_FromString(""));
  if (!parts || !empty) return NULL;
  for (int i = 1; i < x->nsrc; i++) {
    PyObject *part = (PyObject *)format1("[%S]", stripped(text_of(ctx, x->src[i])));
    if (!part || PyList_Append(parts, part) < 0) return NULL;
  }
  return TEXT(PyUnicode_Join(empty, parts));
}
/* VECTORIZE: "{a,b,c}", or "{a, ...}" when every lane is the same node */
RULE(render_vectorize, x) {
  bool same = x->nsrc > 0;
  for (int i = 1; i < x->nsrc; i++) same &= x->src[i] == x->src[0];
  if (same) return format1("{%S, ...}", text_of(ctx, x->src[0]));
  PyObject *parts = pool_keep(PyList_New(0)), *comma = pool_keep(PyUnicode_FromString(","));
  if (!parts || !comma) return NULL;
  for (int i = 0; i < x->nsrc; i++) {
    PyObject *t = text_of(ctx, x->src[i]);
    if (!t || PyList_Append(parts, t) < 0) return NULL;
  }
  return format1("{%S}", pool_keep(PyUnicode_Join(comma, parts)));
}
/* anything else renders as the UOp's repr */
RULE(render_any, x) { return TEXT(PyObject_Str((PyObject *)x)); }

static const RuleDef renderer_defs[] = {
  R("UPat((Ops.DEFINE_VAR,), name='x')", render_define_var),
  R("UPat(Ops.SPECIAL, name='x')", render_special),
  R("UPat(Ops.RANGE, name='x')", render_range),
  R("UPat((Ops.CONST, Ops.VCONST), name='x')", render_const),
  R("UPat(Ops.UNROLL, name='x')", render_unroll),
  R("UPat(Ops.CAST, name='x')", render_cast),
  R("UPat(Ops.BIND, name='x')", render_bind),
  R("UPat(Ops.NEG, name='x')", render_neg),
  R("UPat(Ops.RECIPROCAL, name='x')", render_reciprocal),
  R("UPat(Ops.MAX, name='x')", render_max),
  R("UPat(Ops.MULACC, name='x')", render_mulacc),
  R("UPat(Ops.WHERE, name='x')", render_where),
  R("UPat({Ops.ADD, Ops.SUB, Ops.IDIV, Ops.MOD, Ops.SHL, Ops.SHR, Ops.MUL, Ops.CMPLT, Ops.CMPNE, Ops.AND, Ops.OR, Ops.XOR}, name='x')", render_binary_op),
  R("UPat((Ops.INDEX, Ops.BUFFERIZE), name='x')", render_index),
  R("UPat(Ops.VECTORIZE, name='x')", render_vectorize),
  R("UPat(GroupOp.All, name='x')", render_any),
};

/* renderer_infer: MOD and IDIV as calls of cmod/cdiv (C semantics) so sym_infer evaluates like the device */
RULE(render_cmod, x) {
  return format2("cmod(%S, %S)", text_of(ctx, x->src[0]), text_of(ctx, x->src[1]));
}
RULE(render_cdiv, x) {
  return format2("cdiv(%S, %S)", text_of(ctx, x->src[0]), text_of(ctx, x->src[1]));
}

static const RuleDef renderer_infer_defs[] = {
  R("UPat(Ops.MOD, name='x')", render_cmod),
  R("UPat(Ops.IDIV, name='x')", render_cdiv),
};

/* ================================================================================================
 * pm_lower_index_dtype
 * ================================================================================================ */

/* select_dtype: int, or long when the value may not fit an int32; as wide as u */
static DType *select_dtype(UOp *u) {
  int overflows = uop_overflows(u, DTYPE(INT32));
  return overflows < 0 ? NULL : dtype_vec(overflows ? DTYPE(INT64) : DTYPE(INT32), u->dtype->count);
}

/* u.replace(dtype=dt, src=src): the same node with a new dtype and sources (tag kept) */
static UOp *replace_dtype_src(UOp *u, DType *dt, UOp *const *src, int n) {
  for (int i = 0; i < n; i++) if (!src[i]) return NULL;
  return dt ? KEEP(uop_new(u->op, dt, src, n, u->arg, uop_tag(u))) : NULL;
}

/* buf.index(*srcs, ptr=True): an INDEX keeping the buffer's pointer dtype */
static UOp *index_ptr(UOp *buf, UOp *idx, UOp *valid) {
  UOp *src[3] = {buf, idx, valid};
  return u_new(OP_INDEX, buf->dtype, src, valid ? 3 : 2, NULL);
}

static DType *least_upper2(DType *a, DType *b) { DType *ds[2] = {a, b}; return dtype_least_upper(ds, 2); }

/* a binary op of two casts to index runs in a concrete int wide enough for the result and both operands */
RULE(lower_binary, u, x, y) {
  DType *sel = select_dtype(u);
  DType *ds[3] = {sel, x->dtype, y->dtype};
  DType *dt = sel ? dtype_least_upper(ds, 3) : NULL;
  return dt ? u_cast(u_alu2(u->op, u_cast(x, dt), u_cast(y, dt)), u->dtype) : NULL;
}

/* an index constant (not Invalid) becomes a concrete int constant cast back to index */
RULE(lower_const, u) {
  int valid = PyObject_RichCompareBool(u->arg, Invalid, Py_NE);
  if (valid <= 0) return NULL;
  return u_cast(replace_dtype_src(u, select_dtype(u), u->src, u->nsrc), u->dtype);
}

/* an index where of two casts selects in their common concrete int */
RULE(lower_where, x, y, cond) {
  DType *dt = least_upper2(x->dtype, y->dtype);
  return dt ? u_cast(u_where(cond, u_cast(x, dt), u_cast(y, dt)), DTYPE(INDEX)) : NULL;
}

/* a range over a cast end runs in the end's dtype */
RULE_MAYBE(lower_range, (r), end) {
  return u_cast(replace_dtype_src(r, end->dtype, &end, 1), DTYPE(INDEX));
}

/* a vector of casts to index becomes a vector of concrete ints */
RULE(lower_vectorize, v) {
  DType *dt = select_dtype(v);
  if (!dt) return NULL;
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)(v->nsrc ? v->nsrc : 1));
  if (!src) return (UOp *)PyErr_NoMemory();
  for (int i = 0; i < v->nsrc; i++) src[i] = u_cast(v->src[i]->src[0], dtype_scalar(dt));
  UOp *ret = replace_dtype_src(v, dt, src, v->nsrc);
  PyMem_Free(src);
  return u_cast(ret, DTYPE(INDEX));
}

/* a special is an int32 */
RULE(lower_special, u, var) {
  return u_cast(replace_dtype_src(u, DTYPE(INT32), &var, 1), DTYPE(INDEX));
}

/* an index variable is an int32 */
RULE(lower_define_var, u) {
  return u_cast(replace_dtype_src(u, DTYPE(INT32), u->src, u->nsrc), DTYPE(INDEX));
}

/* a bind of casts binds the concrete variable to the concrete value */
RULE(lower_bind, var, val) {
  return u_cast(KEEP(uop_bind(var, (PyObject *)val)), DTYPE(INDEX));
}

/* an index gated by where(cond, idx, Invalid) becomes an INDEX with the gate as its own source */
RULE(lower_invalid_gate, buf, idx, cond) { return index_ptr(buf, idx, cond); }
/* an INDEX by a cast int uses the int */
RULE(index_drop_cast, buf, idx) { return index_ptr(buf, idx, NULL); }
RULE(index_drop_cast_valid, valid, buf, idx) {
  return index_ptr(buf, idx, valid);
}

/* SINK/NOOP/END sources that are casts to index become what was cast */
RULE(drop_hanging_casts, n) {
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)(n->nsrc ? n->nsrc : 1));
  if (!src) return (UOp *)PyErr_NoMemory();
  for (int i = 0; i < n->nsrc; i++) {
    UOp *s = n->src[i];
    src[i] = s->op == OP_CAST && s->dtype == DTYPE(INDEX) ? s->src[0] : s;
  }
  UOp *ret = u_replace_src(n, src, n->nsrc);
  PyMem_Free(src);
  return ret;
}

static const RuleDef pm_lower_index_dtype_defs[] = {
  R("UPat(GroupOp.Binary, name='u', src=(UPat.var('x').cast(dtypes.index), UPat.var('y').cast(dtypes.index)))", lower_binary),
  R("UPat((Ops.CONST, Ops.VCONST), dtype=dtypes.index, name='u')", lower_const),
  R("UPat(Ops.WHERE, dtypes.index, src=(UPat.var('cond'), UPat.var('x').cast(dtypes.index), UPat.var('y').cast(dtypes.index)))", lower_where),
  R("UPat(Ops.RANGE, src=(UPat.var('end').cast(dtypes.index)), name='r')", lower_range),
  R("UPat(Ops.VECTORIZE, src=UPat().cast(dtypes.index), name='v')", lower_vectorize),
  R("UPat(Ops.SPECIAL, src=(UPat.var('var').cast(dtypes.index),), name='u')", lower_special),
  R("UPat(Ops.DEFINE_VAR, dtype=dtypes.index, name='u')", lower_define_var),
  R("UPat(Ops.BIND, src=(UPat.var('var').cast(dtypes.index), UPat.cvar('val').cast(dtypes.index)))", lower_bind),
  R("UPat.var('buf').index(UPat.var('cond').where(UPat.var('idx'), UPat(Ops.CONST, arg=Invalid)))", lower_invalid_gate),
  R("UPat(Ops.INDEX, src=(UPat.var('buf'), UPat.var('idx', dtypes.ints).cast()))", index_drop_cast),
  R("UPat(Ops.INDEX, src=(UPat.var('buf'), UPat.var('idx', dtypes.ints).cast(), UPat.var('valid')))", index_drop_cast_valid),
  R("UPat((Ops.SINK, Ops.NOOP, Ops.END), name='n')", drop_hanging_casts),
};

/* _index_to_concrete_int(u): u with its index arithmetic lowered to concrete ints */
static PyObject *py_index_to_concrete_int(PyObject *mod, PyObject *u) {
  UNUSED(mod);
  if (!UOp_Check(u)) return PyErr_Format(PyExc_TypeError, "_index_to_concrete_int needs a UOp");
  PatternMatcher *pm = native_get("pm_lower_index_dtype");
  UOp *sink = uop_new1(OP_SINK, DTYPE(VOID), (UOp *)u, NULL);
  UOp *ret = sink && pm ? graph_rewrite(sink, pm, Py_None, false, NULL) : NULL;
  PyObject *first = ret ? Py_NewRef((PyObject *)ret->src[0]) : NULL;
  Py_XDECREF(sink); Py_XDECREF(ret);
  return first;
}

/* ================================================================================================
 * _remove_all_tags, pm_unbind
 * ================================================================================================ */

/* every node with a tag loses it */
RULE(remove_tag, x) {
  return uop_tag(x) == Py_None ? NULL : KEEP(uop_new(x->op, x->dtype, x->src, x->nsrc, x->arg, NULL));
}

static const RuleDef remove_all_tags_defs[] = {
  R("UPat(GroupOp.All, name='x')", remove_tag),
};

/* do_unbind: a BIND becomes its variable; ctx (a dict) records variable -> value */
RULE(do_unbind, x) {
  PyObject *pair = pool_keep(uop_unbind(x));
  if (!pair || PyObject_SetItem(ctx, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) < 0) return NULL;
  return (UOp *)PyTuple_GET_ITEM(pair, 0);
}

static const RuleDef pm_unbind_defs[] = {
  R("UPat(Ops.BIND, name='x')", do_unbind),
};

/* UOp.unbind_all(): (the graph with every BIND replaced by its variable, {variable: value}) */
static PyObject *UOp_unbind_all(UOp *self, PyObject *unused) {
  UNUSED(unused);
  PatternMatcher *pm = native_get("pm_unbind");
  PyObject *values = pm ? PyDict_New() : NULL;
  UOp *ret = values ? graph_rewrite(self, pm, values, false, NULL) : NULL;
  if (!ret) { Py_XDECREF(values); return NULL; }
  return Py_BuildValue("(NN)", (PyObject *)ret, values);
}

PyMethodDef uop_renderer_methods[] = {
  {"unbind_all", (PyCFunction)UOp_unbind_all, METH_NOARGS, "(self without BINDs, {variable: bound value})"},
  {NULL, NULL, 0, NULL},
};

static PyMethodDef renderer_functions[] = {
  {"_index_to_concrete_int", py_index_to_concrete_int, METH_O, "graph_rewrite(u.sink(), pm_lower_index_dtype).src[0]"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_renderer(PyObject *m) {
  if (PyModule_AddFunctions(m, renderer_functions) < 0) return -1;
  if (native_register("renderer", pm_from_defs(renderer_defs, N(renderer_defs))) < 0) return -1;
  PatternMatcher *infer = pm_from_defs(renderer_infer_defs, N(renderer_infer_defs));
  PatternMatcher *both = infer ? pm_concat(infer, native_get("renderer")) : NULL;
  Py_XDECREF(infer);
  if (native_register("renderer_infer", both) < 0) return -1;
  if (native_register("pm_lower_index_dtype", pm_from_defs(pm_lower_index_dtype_defs, N(pm_lower_index_dtype_defs))) < 0) return -1;
  PatternMatcher *untag = pm_from_defs(remove_all_tags_defs, N(remove_all_tags_defs));
  if (untag) pm_set_form_checked(untag);   /* reads no sources */
  if (native_register("_remove_all_tags", untag) < 0) return -1;
  return native_register("pm_unbind", pm_from_defs(pm_unbind_defs, N(pm_unbind_defs)));
}
