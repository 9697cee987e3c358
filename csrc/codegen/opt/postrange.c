/* tinygrad/codegen/opt/postrange.py in C: the Scheduler, apply_opts, make_images and remove_tags.
 *
 * A Scheduler holds a kernel AST (a SINK) and the renderer it is for; its axes are the RANGEs of the AST
 * (sorted by axis type), and apply_opt reshapes them (split a range into two, retype one, pad one, swap two).
 * Most values here are Python objects (the UOps, the ints of shapes that may be symbolic, the opts), so the
 * code works on them through the object API and so fails the way tinygrad's Python does on odd input. */
#include "postrange.h"
#include "../../uop/form.h"
#include "opt.h"
#include "heuristic.h"
#include "../../uop/kernel_info.h"
#include "../../uop/native.h"
#include "tc.h"
#include <math.h>
#include <stdarg.h>
#include <stddef.h>

#define AT(name) axistype_members[AXIS_##name]

static PyObject *axis_to_pos, *axis_letters, *axis_colors;   /* dicts keyed by AxisType, as tinygrad's */
static PyObject *kernel_cnt;                                  /* Scheduler.kernel_cnt: function name -> count */
static PyObject *uop_range_fn, *uop_invalid_fn;               /* UOp.range, UOp.invalid */
static PyObject *small_ints[3];                               /* 0, 1, -1 */
#define PY0 small_ints[0]
#define PY1 small_ints[1]
#define PYM1 small_ints[2]

typedef struct {
  PyObject_HEAD
  PyObject *ast;            /* the kernel, a UOp */
  PyObject *ren;            /* the renderer */
  PyObject *applied_opts;   /* list of Opt */
  PyObject *opt_range;      /* the next axis id a new range gets (tinygrad's itertools.count) */
  PyObject *tensor_core;    /* the TensorCore the TC opt applied, None before */
  PyObject *dict;           /* instance attributes */
  PyObject *rngs;           /* tinygrad's self.rngs of ast, made on first use (every opt and shape query reads it); NULL
                             * again whenever ast changes (sched_set_ast) */
  char dont_use_locals;
} SchedulerObject;

/* self.ast = ast (stolen): the ranges read from the old one go with it */
static void sched_set_ast(SchedulerObject *s, PyObject *ast) {
  Py_XSETREF(s->ast, ast);
  Py_CLEAR(s->rngs);
}

static PyTypeObject Scheduler_Type;

/* ---- small helpers ---- */

/* raise KernelOptError(msg) with a printf-style message (PyUnicode_FromFormat's %S/%R/%s/%d). */
static void opt_error(const char *fmt, ...) {
  va_list va;
  va_start(va, fmt);
  PyObject *msg = PyUnicode_FromFormatV(fmt, va);
  va_end(va);
  if (msg) { PyErr_SetObject(KernelOptError, msg); Py_DECREF(msg); }
}
/* tinygrad's check(cond, msg): -1 with KernelOptError(msg) when cond is 0, -1 as is when cond is -1 (an error) */
#define CHECK(cond, ...) do { int c_ = (cond); if (c_ < 0) goto fail; if (!c_) { opt_error(__VA_ARGS__); goto fail; } } while (0)

/* x.arg[-1]: the axis type of a RANGE (new reference); through the object API, so a non-tuple arg raises as in Python */
static PyObject *arg_last(PyObject *u) {
  PyObject *arg = getattr_literal(u, "arg");
  if (!arg) return NULL;
  PyObject *ret = PyObject_GetItem(arg, PYM1);
  Py_DECREF(arg);
  return ret;
}
/* x.arg[0:-1] as a tuple (new reference) */
static PyObject *arg_head(PyObject *u) {
  PyObject *arg = getattr_literal(u, "arg");
  if (!arg) return NULL;
  PyObject *ret = NULL;
  if (PyTuple_Check(arg)) ret = PyTuple_GetSlice(arg, 0, PyTuple_GET_SIZE(arg) - 1);
  else PyErr_Format(PyExc_TypeError, "a RANGE's arg must be a tuple, not %.100s", Py_TYPE(arg)->tp_name);
  Py_DECREF(arg);
  return ret;
}
/* is the axis type of u one of the given members: 1, 0 or -1 */
static int axis_in(PyObject *u, int n, ...) {
  PyObject *at = arg_last(u);
  if (!at) return -1;
  va_list va;
  va_start(va, n);
  int ret = 0;
  for (int i = 0; i < n; i++) if (at == axistype_members[va_arg(va, int)]) ret = 1;
  va_end(va);
  Py_DECREF(at);
  return ret;
}
static PyObject *src_of(PyObject *u, Py_ssize_t i) {   /* u.src[i], new reference */
  PyObject *src = getattr_literal(u, "src");
  if (!src) return NULL;
  PyObject *ret = PySequence_GetItem(src, i);
  Py_DECREF(src);
  return ret;
}
static PyObject *vmax_plus_1(PyObject *u) {   /* u.vmax+1 */
  PyObject *v = getattr_literal(u, "vmax");
  if (!v) return NULL;
  PyObject *ret = PyNumber_Add(v, PY1);
  Py_DECREF(v);
  return ret;
}
/* name: a string literal (getattr_literal) */
static PyObject *ren_attr(SchedulerObject *s, const char *name) { return getattr_literal(s->ren, name); }
static int ren_truth(SchedulerObject *s, const char *name) {
  PyObject *v = ren_attr(s, name);
  int ret = v ? PyObject_IsTrue(v) : -1;
  Py_XDECREF(v);
  return ret;
}
static int lt_bool(PyObject *a, PyObject *b, int op) { return PyObject_RichCompareBool(a, b, op); }

/* tinygrad's helpers.colored(st, color): the ANSI colour escape around st; upper-case names are the bright ones */
static PyObject *colored(PyObject *st, const char *color) {
  static const char *const names[] = {"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"};
  char lower[16];
  size_t n = strlen(color);
  if (n >= sizeof lower) return PyErr_Format(PyExc_ValueError, "unknown colour %s", color);
  bool upper = true;
  for (size_t i = 0; i <= n; i++) {
    char c = color[i];
    if (c >= 'a' && c <= 'z') upper = false;
    lower[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
  }
  for (int i = 0; i < 8; i++)
    if (!strcmp(lower, names[i])) return PyUnicode_FromFormat("\x1b[%dm%S\x1b[0m", 60 * upper + 30 + i, st);
  return PyErr_Format(PyExc_ValueError, "unknown colour %s", color);
}

/* a list sorted by keys (keys[i] the key of items[i]), stable as Python's sorted; steals nothing */
static PyObject *sorted_by(PyObject *items, PyObject *keys) {
  Py_ssize_t n = PyList_GET_SIZE(items);
  PyObject *tmp = PyList_New(n), *ret = NULL;
  if (!tmp) return NULL;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *idx = PyLong_FromSsize_t(i), *t = idx ? PyTuple_Pack(2, PyList_GET_ITEM(keys, i), idx) : NULL;
    Py_XDECREF(idx);
    if (!t) goto done;
    PyList_SET_ITEM(tmp, i, t);
  }
  if (PyList_Sort(tmp) < 0 || !(ret = PyList_New(n))) goto done;
  for (Py_ssize_t i = 0; i < n; i++)
    PyList_SET_ITEM(ret, i, Py_NewRef(PyList_GET_ITEM(items, PyLong_AsSsize_t(PyTuple_GET_ITEM(PyList_GET_ITEM(tmp, i), 1)))));
done:
  Py_DECREF(tmp);
  return ret;
}

/* ---- the axes ---- */

/* rngs: the RANGEs of the AST that run more than once, in order of axis type (axis_to_pos), then arg */
static PyObject *rngs_of(PyObject *ast) {
  PyObject *bs = getattr_literal(ast, "backward_slice"), *items = PyList_New(0), *keys = PyList_New(0), *ret = NULL;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  if (!bs || !items || !keys) goto done;
  if (!PyDict_Check(bs)) { PyErr_SetString(PyExc_TypeError, "backward_slice must be a dict"); goto done; }
  while (PyDict_Next(bs, &pos, &k, &v)) {
    if (!UOp_Check(k) || ((UOp *)k)->op != OP_RANGE) continue;
    PyObject *lo, *hi;
    if (uop_min_max((UOp *)k, &lo, &hi) < 0) goto done;
    int pos_ = PyObject_RichCompareBool(hi, PY0, Py_GT);
    if (pos_ < 0) goto done;
    if (!pos_) continue;
    PyObject *at = arg_last(k), *p = at ? PyDict_GetItemWithError(axis_to_pos, at) : NULL, *head = p ? arg_head(k) : NULL;
    if (at && !p && !PyErr_Occurred()) PyErr_Format(PyExc_KeyError, "%R has no axis position", at);
    PyObject *first = head ? PyTuple_Pack(1, p) : NULL, *key = first ? PySequence_Concat(first, head) : NULL;
    Py_XDECREF(at); Py_XDECREF(head); Py_XDECREF(first);
    int err = !key || PyList_Append(keys, key) < 0 || PyList_Append(items, k) < 0;
    Py_XDECREF(key);
    if (err) goto done;
  }
  ret = sorted_by(items, keys);
done:
  Py_XDECREF(bs); Py_XDECREF(items); Py_XDECREF(keys);
  return ret;
}

/* the ranges of the kernel, sorted as tinygrad's rngs property sorts them: a new list each call, from the cache */
static PyObject *sched_rngs(SchedulerObject *s) {
  if (!s->rngs && !(s->rngs = rngs_of(s->ast))) return NULL;
  return PyList_GetSlice(s->rngs, 0, PY_SSIZE_T_MAX);
}

static PyObject *sched_full_shape(SchedulerObject *s) {
  PyObject *rngs = sched_rngs(s);
  if (!rngs) return NULL;
  Py_ssize_t n = PyList_GET_SIZE(rngs);
  PyObject *ret = PyList_New(n);
  for (Py_ssize_t i = 0; ret && i < n; i++) {
    PyObject *v = uop_ssimplify(((UOp *)PyList_GET_ITEM(rngs, i))->src[0]);
    if (!v) Py_CLEAR(ret);
    else PyList_SET_ITEM(ret, i, v);
  }
  Py_DECREF(rngs);
  return ret;
}

static PyObject *sched_axis_types(SchedulerObject *s) {
  PyObject *rngs = sched_rngs(s);
  if (!rngs) return NULL;
  Py_ssize_t n = PyList_GET_SIZE(rngs);
  PyObject *ret = PyList_New(n);
  for (Py_ssize_t i = 0; ret && i < n; i++) {
    PyObject *v = arg_last(PyList_GET_ITEM(rngs, i));
    if (!v) Py_CLEAR(ret);
    else PyList_SET_ITEM(ret, i, v);
  }
  Py_DECREF(rngs);
  return ret;
}

/* axes_of: the indices of the axes whose type is in the set (bit i for AxisTypeId i) */
static PyObject *sched_axes_of_mask(SchedulerObject *s, unsigned mask) {
  PyObject *types = sched_axis_types(s), *ret = types ? PyList_New(0) : NULL;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(types); i++) {
    PyObject *t = PyList_GET_ITEM(types, i);
    bool in = false;
    for (int a = 1; a < AXIS_COUNT; a++) if ((mask >> a & 1) && t == axistype_members[a]) in = true;
    if (!in) continue;
    PyObject *idx = PyLong_FromSsize_t(i);
    if (!idx || PyList_Append(ret, idx) < 0) Py_CLEAR(ret);
    Py_XDECREF(idx);
  }
  Py_XDECREF(types);
  return ret;
}
#define M(name) (1u << AXIS_##name)

static Py_ssize_t sched_len_axes_of(SchedulerObject *s, unsigned mask) {
  PyObject *a = sched_axes_of_mask(s, mask);
  if (!a) return -1;
  Py_ssize_t n = PyList_GET_SIZE(a);
  Py_DECREF(a);
  return n;
}

/* prod(full_shape[a] for a in axes), starting from 1 as tinygrad's prod */
static PyObject *sched_prod_axes(SchedulerObject *s, unsigned mask) {
  PyObject *fs = sched_full_shape(s), *axes = fs ? sched_axes_of_mask(s, mask) : NULL, *acc = axes ? Py_NewRef(PY1) : NULL;
  for (Py_ssize_t i = 0; acc && i < PyList_GET_SIZE(axes); i++)
    Py_SETREF(acc, PyNumber_Multiply(acc, PyList_GET_ITEM(fs, PyLong_AsSsize_t(PyList_GET_ITEM(axes, i)))));
  Py_XDECREF(fs); Py_XDECREF(axes);
  return acc;
}

/* the axes of the mask whose size is an int > 1 (upcastable_dims / unrollable_dims) */
static PyObject *sched_int_dims(SchedulerObject *s, unsigned mask) {
  PyObject *fs = sched_full_shape(s), *axes = fs ? sched_axes_of_mask(s, mask) : NULL, *ret = axes ? PyList_New(0) : NULL;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(axes); i++) {
    PyObject *a = PyList_GET_ITEM(axes, i), *sz = PyList_GET_ITEM(fs, PyLong_AsSsize_t(a));
    if (!PyLong_Check(sz)) continue;
    int gt = PyObject_RichCompareBool(sz, PY1, Py_GT);
    if (gt < 0 || (gt && PyList_Append(ret, a) < 0)) Py_CLEAR(ret);
  }
  Py_XDECREF(fs); Py_XDECREF(axes);
  return ret;
}

static PyObject *sched_reduceops(SchedulerObject *s) {
  PyObject *bs = getattr_literal(s->ast, "backward_slice"), *ret = bs ? PyList_New(0) : NULL, *k, *v;
  Py_ssize_t pos = 0;
  while (ret && PyDict_Check(bs) && PyDict_Next(bs, &pos, &k, &v))
    if (UOp_Check(k) && ((UOp *)k)->op == OP_REDUCE && PyList_Append(ret, k) < 0) Py_CLEAR(ret);
  Py_XDECREF(bs);
  return ret;
}

/* reduceop: the first REDUCE as the REDUCE_AXIS tinygrad's heuristics read, or None */
static PyObject *sched_reduceop(SchedulerObject *s) {
  PyObject *red = sched_reduceops(s);
  if (!red) return NULL;
  PyObject *ret = NULL;
  if (!PyList_GET_SIZE(red)) ret = Py_NewRef(Py_None);
  else {
    UOp *r = (UOp *)PyList_GET_ITEM(red, 0);
    PyObject *empty = PyTuple_New(0), *arg = empty ? PyTuple_Pack(2, r->arg, empty) : NULL;
    if (arg) ret = (PyObject *)uop_new(OP_REDUCE_AXIS, r->dtype, r->src, r->nsrc, arg, NULL);
    Py_XDECREF(empty); Py_XDECREF(arg);
  }
  Py_DECREF(red);
  return ret;
}

/* bufs: the INDEX nodes, last first */
static PyObject *sched_bufs(SchedulerObject *s) {
  PyObject *topo = uop_toposort_list((UOp *)s->ast, NULL), *ret = topo ? PyList_New(0) : NULL;
  for (Py_ssize_t i = topo ? PyList_GET_SIZE(topo) - 1 : -1; ret && i >= 0; i--) {
    UOp *u = (UOp *)PyList_GET_ITEM(topo, i);
    if (u->op == OP_INDEX && PyList_Append(ret, (PyObject *)u) < 0) Py_CLEAR(ret);
  }
  Py_XDECREF(topo);
  return ret;
}

/* _output_rngs: the non-reduce ranges each END of the SINK closes */
static PyObject *sched_output_rngs(SchedulerObject *s) {
  UOp *ast = (UOp *)s->ast;
  PyObject *ret = PyList_New(0);
  for (uint32_t i = 0; ret && i < ast->nsrc; i++) {
    UOp *e = ast->src[i];
    if (e->op != OP_END) continue;
    UOp *sink = uop_new(OP_SINK, DTYPE(VOID), e->src + 1, e->nsrc - 1, NULL, NULL);
    PyObject *rs = sink ? getattr_literal((PyObject *)sink, "ranges") : NULL, *it = rs ? PyObject_GetIter(rs) : NULL, *r;
    Py_XDECREF(sink);
    if (!it) { Py_XDECREF(rs); Py_CLEAR(ret); break; }
    while ((r = PyIter_Next(it))) {
      PyObject *at = arg_last(r);
      if (!at || (at != AT(REDUCE) && PyList_Append(ret, r) < 0)) { Py_XDECREF(at); Py_DECREF(r); Py_CLEAR(ret); break; }
      Py_DECREF(at); Py_DECREF(r);
    }
    if (PyErr_Occurred()) Py_CLEAR(ret);
    Py_DECREF(it); Py_DECREF(rs);
  }
  return ret;
}

/* _globalizable_rngs: the LOOP output ranges that every BUFFERIZE also has */
static PyObject *sched_globalizable_rngs(SchedulerObject *s) {
  PyObject *out = sched_output_rngs(s), *ret = out ? PyList_New(0) : NULL, *topo = NULL;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(out); i++) {
    PyObject *at = arg_last(PyList_GET_ITEM(out, i));
    if (!at || (at == AT(LOOP) && PyList_Append(ret, PyList_GET_ITEM(out, i)) < 0)) Py_CLEAR(ret);
    Py_XDECREF(at);
  }
  if (ret && !(topo = uop_toposort_list((UOp *)s->ast, NULL))) Py_CLEAR(ret);
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(topo); i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(topo, i);
    if (x->op != OP_BUFFERIZE) continue;
    PyObject *rs = getattr_literal((PyObject *)x, "ranges"), *kept = rs ? PyList_New(0) : NULL;
    for (Py_ssize_t j = 0; kept && j < PyList_GET_SIZE(ret); j++) {
      int in = PySequence_Contains(rs, PyList_GET_ITEM(ret, j));
      if (in < 0 || (in && PyList_Append(kept, PyList_GET_ITEM(ret, j)) < 0)) Py_CLEAR(kept);
    }
    Py_XDECREF(rs);
    Py_SETREF(ret, kept);
  }
  Py_XDECREF(out); Py_XDECREF(topo);
  return ret;
}

/* colors: one colour name per axis, as the kernel name and colored_shape show them */
static PyObject *sched_colors(SchedulerObject *s) {
  PyObject *out = sched_output_rngs(s), *glob = out ? sched_globalizable_rngs(s) : NULL, *rngs = glob ? sched_rngs(s) : NULL;
  PyObject *ret = rngs ? PyList_New(0) : NULL;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(rngs); i++) {
    PyObject *r = PyList_GET_ITEM(rngs, i), *x = arg_last(r), *c = NULL;
    int in_out = x ? PySequence_Contains(out, r) : -1, in_glob = in_out >= 0 ? PySequence_Contains(glob, r) : -1;
    if (in_glob >= 0) {
      if (s->dont_use_locals && x == AT(GLOBAL)) c = PyUnicode_FromString("BLUE");
      else if (!in_out && x == AT(LOOP)) c = PyUnicode_FromString("BLACK");
      else if (!in_glob && x == AT(LOOP)) c = PyUnicode_FromString("white");
      else if (!(c = Py_XNewRef(PyDict_GetItemWithError(axis_colors, x))) && !PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, x);
    }
    Py_XDECREF(x);
    if (!c || PyList_Append(ret, c) < 0) Py_CLEAR(ret);
    Py_XDECREF(c);
  }
  Py_XDECREF(out); Py_XDECREF(glob); Py_XDECREF(rngs);
  return ret;
}

/* the rendered size of each axis in its colour, fmt ">4s" for colored_shape, "" for the kernel name */
static PyObject *sched_colored_sizes(SchedulerObject *s, const char *fmt) {
  PyObject *rngs = sched_rngs(s), *colors = rngs ? sched_colors(s) : NULL, *ret = colors ? PyList_New(0) : NULL;
  PyObject *spec = ret ? PyUnicode_FromString(fmt) : NULL;
  if (!spec) Py_CLEAR(ret);
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(rngs); i++) {
    PyObject *text = uop_render(((UOp *)PyList_GET_ITEM(rngs, i))->src[0], true);
    PyObject *f = text ? PyObject_Format(text, spec) : NULL;
    const char *c = f ? PyUnicode_AsUTF8(PyList_GET_ITEM(colors, i)) : NULL;
    PyObject *col = c ? colored(f, c) : NULL;
    if (!col || PyList_Append(ret, col) < 0) Py_CLEAR(ret);
    Py_XDECREF(text); Py_XDECREF(f); Py_XDECREF(col);
  }
  Py_XDECREF(rngs); Py_XDECREF(colors); Py_XDECREF(spec);
  return ret;
}

static PyObject *sched_colored_shape(SchedulerObject *s) {
  PyObject *parts = sched_colored_sizes(s, ">4s"), *sep = parts ? PyUnicode_FromString(" ") : NULL;
  PyObject *ret = sep ? PyUnicode_Join(sep, parts) : NULL;
  Py_XDECREF(parts); Py_XDECREF(sep);
  return ret;
}

static PyObject *sched_shape_str(SchedulerObject *s) {
  PyObject *types = sched_axis_types(s), *cnt = types ? PyDict_New() : NULL, *ret = cnt ? PyList_New(0) : NULL;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(types); i++) {
    PyObject *x = PyList_GET_ITEM(types, i), *c = PyDict_GetItemWithError(cnt, x), *letter;
    PyObject *nc = c ? PyNumber_Add(c, PY1) : PyErr_Occurred() ? NULL : Py_NewRef(PY0);
    if (!nc || PyDict_SetItem(cnt, x, nc) < 0) { Py_XDECREF(nc); Py_CLEAR(ret); break; }
    if (!(letter = PyDict_GetItemWithError(axis_letters, x))) {
      if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, x);
      Py_DECREF(nc); Py_CLEAR(ret); break;
    }
    PyObject *str = PyUnicode_FromFormat("%U%S", letter, nc);
    Py_DECREF(nc);
    if (!str || PyList_Append(ret, str) < 0) Py_CLEAR(ret);
    Py_XDECREF(str);
  }
  Py_XDECREF(types); Py_XDECREF(cnt);
  return ret;
}

/* ---- changing the AST ---- */

/* self.ast = self.ast.substitute(replaces) */
static int sched_substitute(SchedulerObject *s, PyObject *replaces) {
  PyObject *n = PyObject_CallMethod(s->ast, "substitute", "O", replaces);
  if (!n) return -1;
  if (!UOp_Check(n)) { Py_DECREF(n); PyErr_SetString(PyExc_TypeError, "substitute did not return a UOp"); return -1; }
  sched_set_ast(s, n);
  return 0;
}

static PyObject *next_opt_range(SchedulerObject *s) {
  PyObject *ret = s->opt_range, *nxt = PyNumber_Add(ret, PY1);
  if (!nxt) return NULL;
  s->opt_range = nxt;
  return ret;   /* the reference the scheduler held */
}

/* shift_to: split rng into (rng/amount, amount), the new range of type new_type inside (or outside, top) the old one */
static PyObject *sched_shift_to(SchedulerObject *s, PyObject *rng, PyObject *amount, PyObject *new_type, int top, PyObject *input_new_rng) {
  PyObject *src0 = src_of(rng, 0), *old_sz = src0 ? PyObject_CallMethod(src0, "divides", "O", amount) : NULL, *ret = NULL;
  PyObject *new_rng = NULL, *cst = NULL, *replaced = NULL, *a = NULL, *sub = NULL, *d = NULL;
  if (!old_sz) goto done;
  if (old_sz == Py_None) {
    PyObject *shape = sched_colored_shape(s);
    if (shape) opt_error("%S can't divide %S in %S", amount, src0, shape);
    Py_XDECREF(shape);
    goto done;
  }
  if (input_new_rng == Py_None) {
    PyObject *id = next_opt_range(s);
    new_rng = id ? PyObject_CallFunctionObjArgs(uop_range_fn, amount, id, new_type, NULL) : NULL;
    Py_XDECREF(id);
  } else new_rng = Py_NewRef(input_new_rng);
  if (!new_rng) goto done;
  if (!(cst = PyObject_CallMethod((PyObject *)&UOp_Type, "const", "OO", (PyObject *)DTYPE(INT32), old_sz))) goto done;
  {
    PyObject *kw = Py_BuildValue("{s(O)}", "src", cst), *empty = kw ? PyTuple_New(0) : NULL, *rep = empty ? getattr_literal(rng, "replace") : NULL;
    if (rep) replaced = PyObject_Call(rep, empty, kw);
    Py_XDECREF(kw); Py_XDECREF(empty); Py_XDECREF(rep);
  }
  if (!replaced) goto done;
  if (top) { if ((a = PyNumber_Multiply(new_rng, old_sz))) sub = PyNumber_Add(a, replaced); }
  else if ((a = PyNumber_Multiply(replaced, amount))) sub = PyNumber_Add(a, new_rng);
  if (!sub || !(d = PyDict_New()) || PyDict_SetItem(d, rng, sub) < 0 || sched_substitute(s, d) < 0) goto done;
  ret = PyTuple_Pack(2, replaced, new_rng);
done:
  Py_XDECREF(src0); Py_XDECREF(old_sz); Py_XDECREF(new_rng); Py_XDECREF(cst); Py_XDECREF(replaced);
  Py_XDECREF(a); Py_XDECREF(sub); Py_XDECREF(d);
  return ret;
}

/* convert_loop_to_global: on a renderer with locals, the globalizable LOOP ranges become GLOBAL */
static int sched_convert_loop_to_global(SchedulerObject *s) {
  int has_local = ren_truth(s, "has_local");
  if (has_local <= 0) return has_local;
  PyObject *glob = sched_globalizable_rngs(s), *rngs = glob ? sched_rngs(s) : NULL, *d = rngs ? PyDict_New() : NULL;
  int err = !d;
  for (Py_ssize_t i = 0; !err && i < PyList_GET_SIZE(rngs); i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(rngs, i);
    int in = PySequence_Contains(glob, (PyObject *)x);
    PyObject *head = in > 0 ? arg_head((PyObject *)x) : NULL, *last = head ? PyTuple_Pack(1, AT(GLOBAL)) : NULL;
    PyObject *arg = last ? PySequence_Concat(head, last) : NULL;
    PyObject *nx = in == 0 ? Py_NewRef(x) : arg ? (PyObject *)uop_new(x->op, x->dtype, x->src, x->nsrc, arg, uop_tag(x) == Py_None ? NULL : uop_tag(x)) : NULL;
    err = !nx || PyDict_SetItem(d, (PyObject *)x, nx) < 0;
    Py_XDECREF(head); Py_XDECREF(last); Py_XDECREF(arg); Py_XDECREF(nx);
  }
  if (!err) err = sched_substitute(s, d) < 0;
  Py_XDECREF(glob); Py_XDECREF(rngs); Py_XDECREF(d);
  return err ? -1 : 0;
}

/* real_axis: the index into rngs an opt's axis means; -1 when it names none */
static int sched_real_axis(SchedulerObject *s, OptObject *opt, Py_ssize_t *out) {
  if (opt->axis == Py_None || opt->op_id == OPTOPS_TC) { *out = -1; return 0; }
  PyObject *dims = NULL, *v = NULL;
  if (opt->op_id == OPTOPS_UNROLL) dims = sched_int_dims(s, M(GROUP_REDUCE) | M(REDUCE));
  else if (opt->op_id == OPTOPS_GROUP || opt->op_id == OPTOPS_GROUPTOP) dims = sched_axes_of_mask(s, M(REDUCE));
  else {
    PyObject *rngs = sched_rngs(s);
    if (!rngs) return -1;
    Py_ssize_t n = PyList_GET_SIZE(rngs);
    Py_DECREF(rngs);
    PyObject *len = PyLong_FromSsize_t(n);
    int lt = len ? PyObject_RichCompareBool(opt->axis, len, Py_LT) : -1;
    if (lt == 0) opt_error("invalid axis on axis=%R op=%R self.shape_len=%zd", opt->axis, opt->op, n);
    Py_XDECREF(len);
    if (lt <= 0) return -1;
    *out = PyLong_AsSsize_t(opt->axis);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
  }
  if (!dims) return -1;
  v = PyObject_GetItem(dims, opt->axis);
  Py_DECREF(dims);
  if (!v) {
    /* an axis past the end is a KernelOptError (tinygrad raises it from the IndexError) */
    if (PyErr_ExceptionMatches(PyExc_IndexError)) { PyErr_Clear(); PyErr_SetNone(KernelOptError); }
    return -1;
  }
  *out = PyLong_AsSsize_t(v);
  Py_DECREF(v);
  return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* the range an opt acts on: rngs[real_axis], or a NOOP when it names none */
static PyObject *sched_opt_rng(SchedulerObject *s, Py_ssize_t real_axis) {
  if (real_axis < 0) return (PyObject *)uop_new0(OP_NOOP, DTYPE(VOID), NULL);
  PyObject *rngs = sched_rngs(s);
  if (!rngs) return NULL;
  PyObject *ret = PySequence_GetItem(rngs, real_axis);
  Py_DECREF(rngs);
  return ret;
}

static int applied_has_tc(SchedulerObject *s) {
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(s->applied_opts); i++) {
    PyObject *o = PyList_GET_ITEM(s->applied_opts, i), *op = getattr_literal(o, "op");
    if (!op) return -1;
    int tc = op == optops_members[OPTOPS_TC];
    Py_DECREF(op);
    if (tc) return 1;
  }
  return 0;
}

/* GROUP/GROUPTOP: the first REDUCE that has rng among the ranges of its range sources must not sit inside another reduce */
static int check_group_not_nested(SchedulerObject *s, PyObject *rng) {
  PyObject *bs = getattr_literal(s->ast, "backward_slice"), *k, *v, *reduce = NULL;
  Py_ssize_t pos = 0;
  if (!bs) return -1;
  while (!reduce && PyDict_Next(bs, &pos, &k, &v)) {
    UOp *u = (UOp *)k;
    if (!UOp_Check(k) || u->op != OP_REDUCE) continue;
    for (uint32_t i = 1; i < u->nsrc && !reduce; i++) {
      PyObject *rs = getattr_literal((PyObject *)u->src[i], "ranges");
      int in = rs ? PySequence_Contains(rs, rng) : -1;
      Py_XDECREF(rs);
      if (in < 0) { Py_DECREF(bs); return -1; }
      if (in) reduce = k;
    }
  }
  Py_DECREF(bs);
  if (!reduce) { PyErr_SetString(PyExc_IndexError, "list index out of range"); return -1; }
  PyObject *rs = getattr_literal(reduce, "ranges"), *it = rs ? PyObject_GetIter(rs) : NULL, *r;
  int bad = 0;
  while (it && !bad && (r = PyIter_Next(it))) {
    bad = axis_in(r, 3, AXIS_REDUCE, AXIS_UNROLL, AXIS_GROUP_REDUCE);
    Py_DECREF(r);
  }
  int err = !it || PyErr_Occurred() || bad < 0;
  Py_XDECREF(it); Py_XDECREF(rs);
  if (err) return -1;
  if (bad) { opt_error("cannot have a GROUP_REDUCE inside another reduce"); return -1; }
  return 0;
}

/* the opts that split a range, and the axis type of the new one */
static int opt_to_at(OptOpsId op) {
  switch (op) {
    case OPTOPS_LOCAL: return AXIS_LOCAL;
    case OPTOPS_UPCAST: return AXIS_UPCAST;
    case OPTOPS_UNROLL: return AXIS_UNROLL;
    case OPTOPS_GROUP: case OPTOPS_GROUPTOP: return AXIS_GROUP_REDUCE;
    case OPTOPS_THREAD: return AXIS_THREAD;
    default: return 0;
  }
}

static PyObject *apply_split_opt(SchedulerObject *s, OptObject *opt, PyObject *rng) {
  OptOpsId op = opt->op_id;
  PyObject *amt = NULL, *ret = NULL, *tmp = NULL, *reduceops = NULL;
  int is0 = PyObject_RichCompareBool(opt->arg, PY0, Py_EQ);
  if (is0 < 0) return NULL;
  if (is0) { if ((tmp = vmax_plus_1(rng))) amt = PyNumber_Long(tmp); Py_CLEAR(tmp); }
  else amt = Py_NewRef(opt->arg);
  if (!amt || !(reduceops = sched_reduceops(s))) goto fail;
  bool has_reduce = PyList_GET_SIZE(reduceops) > 0, group = op == OPTOPS_GROUP || op == OPTOPS_GROUPTOP;
  if (has_reduce) {
    Py_ssize_t gfr = group ? 0 : sched_len_axes_of(s, M(GROUP_REDUCE));
    if (gfr < 0) goto fail;
    if (group || gfr) {
      /* shared memory of a grouped reduce (kept from tinygrad's kernel.py, where it avoided METAL compiler hangs) */
      PyObject *ul = sched_prod_axes(s, M(UPCAST) | M(WARP) | M(LOCAL) | M(GROUP_REDUCE)), *a = ul ? PyNumber_Multiply(amt, ul) : NULL;
      PyObject *isz = a ? PyLong_FromLong(dtype_itemsize(((UOp *)PyList_GET_ITEM(reduceops, 0))->dtype)) : NULL;
      PyObject *smem = isz ? PyNumber_Multiply(a, isz) : NULL, *smax = smem ? ren_attr(s, "shared_max") : NULL;
      int ok = smax ? lt_bool(smem, smax, Py_LE) : -1;
      if (ok == 0) opt_error("exceeds maximum shared memory size: needs %S, max %S", smem, smax);
      Py_XDECREF(ul); Py_XDECREF(a); Py_XDECREF(isz); Py_XDECREF(smem); Py_XDECREF(smax);
      if (ok <= 0) goto fail;
    }
    if (group && check_group_not_nested(s, rng) < 0) goto fail;
  }
  if (op == OPTOPS_UNROLL) {
    tmp = PyLong_FromLong(32);
    CHECK(tmp ? lt_bool(amt, tmp, Py_LE) : -1, "don't unroll more than 32");
    CHECK(axis_in(rng, 2, AXIS_GROUP_REDUCE, AXIS_REDUCE), "unroll is for GROUP_REDUCE/REDUCE");
  }
  if (op == OPTOPS_UPCAST) {
    PyObject *dev = s->ren == Py_None ? NULL : ren_attr(s, "device");
    if (!dev && s->ren != Py_None) goto fail;
    int dsp = dev ? PyObject_RichCompareBool(dev, tmp = PyUnicode_FromString("DSP"), Py_EQ) : 0;
    Py_XDECREF(dev); Py_CLEAR(tmp);
    if (dsp < 0) goto fail;
    if (!dsp) { tmp = PyLong_FromLong(16); CHECK(tmp ? lt_bool(amt, tmp, Py_LE) : -1, "don't upcast more than 16"); }
    PyObject *at = arg_last(rng);
    if (!at) goto fail;
    int ok = at == AT(GLOBAL) || at == AT(LOCAL) || at == AT(LOOP);
    if (!ok) opt_error("upcast is for GLOBAL/LOCAL/LOOP, not %S", at);
    Py_DECREF(at);
    if (!ok) goto fail;
  }
  if (op == OPTOPS_LOCAL) {
    CHECK(!s->dont_use_locals, "can't use locals");
    CHECK(axis_in(rng, 2, AXIS_GLOBAL, AXIS_LOOP), "local is for globals");
  }
  if (op == OPTOPS_THREAD) {
    CHECK(s->ren == Py_None ? 0 : ren_truth(s, "has_threads"), "target does not support threads");
    PyObject *gm = s->ren == Py_None ? Py_NewRef(Py_None) : ren_attr(s, "global_max");
    if (!gm) goto fail;
    PyObject *g0 = gm != Py_None ? PySequence_GetItem(gm, 0) : NULL;
    int ok = gm == Py_None ? 0 : g0 ? lt_bool(amt, g0, Py_LE) : -1;
    Py_DECREF(gm); Py_XDECREF(g0);
    CHECK(ok, "too many threads");
    Py_ssize_t nthread = sched_len_axes_of(s, M(THREAD));
    CHECK(nthread < 0 ? -1 : nthread == 0, "already threaded");
    PyObject *glob = sched_globalizable_rngs(s);
    int in = glob ? PySequence_Contains(glob, rng) : -1;
    Py_XDECREF(glob);
    CHECK(in, "can't apply range to this dim");
  }
  if (group) {
    int tc = applied_has_tc(s);
    CHECK(tc < 0 ? -1 : !tc, "no grouping with tensor cores");
    CHECK(!s->dont_use_locals, "can't use locals");
    CHECK(axis_in(rng, 1, AXIS_REDUCE), "group is for reduce");
  }
  ret = sched_shift_to(s, rng, amt, axistype_members[opt_to_at(op)], op == OPTOPS_GROUPTOP || op == OPTOPS_THREAD, Py_None);
fail:
  Py_XDECREF(amt); Py_XDECREF(tmp); Py_XDECREF(reduceops);
  return ret;
}

/* ---- TC: tensor cores (tinygrad's _apply_tc_opt) ----
 * The first REDUCE must be a SUM of a MUL (possibly under a CAST); each tensor core of the renderer whose dtypes match
 * is tried on the axis-th (in1 range, in0 range, reduce range) choice: pad the three ranges to its dims (opt_level 2),
 * split them into the warp's locals, the upcasts and the reduce unrolls its opts name, and (use_tc 1) replace the
 * reduce by a WMMA of the two operands, permuted by the tensor core's swizzle. A choice that fails to pad moves on
 * to the next tensor core with the AST as the failure left it, as in tinygrad. */

static PyObject *sched_apply_opt(SchedulerObject *s, PyObject *opt_obj, int append_opt);
static long allow_tf32;   /* tinygrad's ALLOW_TF32, a ContextVar */

/* x.arg[0] (new reference) */
static PyObject *arg_first(PyObject *u) {
  PyObject *arg = getattr_literal(u, "arg"), *ret = arg ? PySequence_GetItem(arg, 0) : NULL;
  Py_XDECREF(arg);
  return ret;
}

/* sorted(items, key=lambda x: x.arg[0], reverse=True); reversing, sorting stably and reversing keeps Python's order of ties */
static PyObject *sorted_by_id_desc(PyObject *items) {
  PyObject *rev = PyList_GetSlice(items, 0, PY_SSIZE_T_MAX), *keys = rev ? PyList_New(0) : NULL, *ret = NULL;
  if (!keys || PyList_Reverse(rev) < 0) goto done;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rev); i++) {
    PyObject *k = arg_first(PyList_GET_ITEM(rev, i));
    int err = !k || PyList_Append(keys, k) < 0;
    Py_XDECREF(k);
    if (err) goto done;
  }
  if ((ret = sorted_by(rev, keys)) && PyList_Reverse(ret) < 0) Py_CLEAR(ret);
done:
  Py_XDECREF(rev); Py_XDECREF(keys);
  return ret;
}

/* the ranges of a that b does not have, by id descending */
static PyObject *own_ranges(PyObject *a, PyObject *b) {
  PyObject *ra = getattr_literal(a, "ranges"), *rb = ra ? getattr_literal(b, "ranges") : NULL;
  PyObject *it = rb ? PyObject_GetIter(ra) : NULL, *own = it ? PyList_New(0) : NULL, *r, *ret = NULL;
  while (own && (r = PyIter_Next(it))) {
    int in = PySequence_Contains(rb, r);
    if (in < 0 || (!in && PyList_Append(own, r) < 0)) Py_CLEAR(own);
    Py_DECREF(r);
  }
  if (own && !PyErr_Occurred()) ret = sorted_by_id_desc(own);
  Py_XDECREF(ra); Py_XDECREF(rb); Py_XDECREF(it); Py_XDECREF(own);
  return ret;
}

/* the three TC ranges of one candidate: (in1, in0, reduce) ranges, the choice number `axis` of their product as
 * Python indexes it (negative from the end). 1 with axes filled, 0 when there is no such choice. */
static int tc_pick_axes(UOp *red, UOp *in0, UOp *in1, long axis, PyObject *axes[3]) {
  PyObject *r0 = own_ranges((PyObject *)in0, (PyObject *)in1), *r1 = r0 ? own_ranges((PyObject *)in1, (PyObject *)in0) : NULL;
  PyObject *rr = r1 ? PyList_New(0) : NULL, *sorted = NULL;
  int ret = -1;
  for (uint32_t i = 1; rr && i < red->nsrc; i++) if (PyList_Append(rr, (PyObject *)red->src[i]) < 0) Py_CLEAR(rr);
  if (!rr || !(sorted = sorted_by_id_desc(rr))) goto done;
  Py_ssize_t n1 = PyList_GET_SIZE(r1), n0 = PyList_GET_SIZE(r0), nr = PyList_GET_SIZE(sorted);
  ret = 0;
  if (!n0 || !n1 || !nr) goto done;
  long n = (long)(n1 * n0 * nr);
  if (!(axis < n)) goto done;
  if (axis < -n) { PyErr_SetString(PyExc_IndexError, "list index out of range"); ret = -1; goto done; }
  long idx = axis < 0 ? axis + n : axis;
  axes[0] = Py_NewRef(PyList_GET_ITEM(r1, idx / (n0 * nr)));
  axes[1] = Py_NewRef(PyList_GET_ITEM(r0, (idx / nr) % n0));
  axes[2] = Py_NewRef(PyList_GET_ITEM(sorted, idx % nr));
  ret = 1;
done:
  Py_XDECREF(r0); Py_XDECREF(r1); Py_XDECREF(rr); Py_XDECREF(sorted);
  return ret;
}

/* self.rngs.index(a), with list.index's ValueError when it is not there */
static Py_ssize_t rng_index(SchedulerObject *s, PyObject *a) {
  PyObject *rngs = sched_rngs(s), *i = rngs ? PyObject_CallMethod(rngs, "index", "O", a) : NULL;
  Py_ssize_t ret = i ? PyLong_AsSsize_t(i) : -1;
  Py_XDECREF(rngs); Py_XDECREF(i);
  return ret;
}

/* the ranges whose size the tensor core's dims do not divide are padded (opt_level 2 only). 1 done, 0 give up on
 * this tensor core (a KernelOptError, cleared), -1 error. */
static int tc_pad_axes(SchedulerObject *s, TensorCoreObject *tc, PyObject *axes[3], long opt_level) {
  for (int i = 0; i < 3; i++) {
    Py_ssize_t idx = rng_index(s, axes[i]);
    if (idx < 0) return -1;
    PyObject *sz = vmax_plus_1(axes[i]), *dim = sz ? PyLong_FromLong(tc->dim[i]) : NULL, *rem = dim ? PyNumber_Remainder(sz, dim) : NULL;
    int divides = rem ? PyObject_RichCompareBool(rem, PY0, Py_EQ) : -1;
    Py_XDECREF(sz); Py_XDECREF(rem);
    if (divides != 0) { Py_XDECREF(dim); if (divides < 0) return -1; continue; }
    if (opt_level < 2) { Py_DECREF(dim); return 0; }   /* "tc padding requires opt_level >= 2" */
    PyObject *pidx = PyLong_FromSsize_t(idx), *pad = pidx ? opt_new(optops_members[OPTOPS_PADTO], pidx, dim) : NULL;
    PyObject *r = pad ? sched_apply_opt(s, pad, 0) : NULL, *rngs = r ? sched_rngs(s) : NULL;
    Py_XDECREF(pidx); Py_XDECREF(pad); Py_XDECREF(r); Py_DECREF(dim);
    if (!rngs) {
      if (!PyErr_ExceptionMatches(KernelOptError)) return -1;
      PyErr_Clear();   /* PADTO might fail: the next tensor core */
      return 0;
    }
    PyObject *a = PySequence_GetItem(rngs, idx);
    Py_DECREF(rngs);
    if (!a) return -1;
    Py_SETREF(axes[i], a);
  }
  return 1;
}

/* shift_to(axes[d], amount, type, input_new_rng=nr): axes[d] becomes the outer part; the new range appended to ne */
static int tc_shift(SchedulerObject *s, PyObject *axes[3], int d, long amount, int type, PyObject *nr, PyObject *ne) {
  PyObject *amt = PyLong_FromLong(amount), *r = amt ? sched_shift_to(s, axes[d], amt, axistype_members[type], 0, nr) : NULL;
  Py_XDECREF(amt);
  if (!r) return -1;
  Py_SETREF(axes[d], Py_NewRef(PyTuple_GET_ITEM(r, 0)));
  int err = PyList_Append(ne, PyTuple_GET_ITEM(r, 1));
  Py_DECREF(r);
  return err;
}

/* the warp's locals, the upcasts and the reduce unrolls, in the tensor core's order; ne gets the new ranges */
static int tc_split_axes(SchedulerObject *s, TensorCoreObject *tc, PyObject *axes[3], PyObject *ne) {
  /* the warp is made whole (one range of all threads), in case later opts move or remove some of its pieces */
  PyObject *thr = PyLong_FromLong(tc->nthreads), *warp = thr ? PyObject_CallFunctionObjArgs(uop_range_fn, thr, PYM1, AT(WARP), NULL) : NULL;
  PyObject *two = warp ? PyLong_FromLong(2) : NULL;
  int err = !two;
  Py_XDECREF(thr);
  for (int i = 0; !err && i < tc->nopts; i++) {
    if (tc->opt_kind[i] == 'u') { err = tc_shift(s, axes, tc->opt_dim[i], 2, AXIS_UPCAST, Py_None, ne) < 0; continue; }
    PyObject *lane = PyNumber_Remainder(warp, two);
    err = !lane || tc_shift(s, axes, tc->opt_dim[i], 2, AXIS_LOCAL, lane, ne) < 0;
    Py_XDECREF(lane);
    if (!err) { Py_SETREF(warp, PyNumber_FloorDivide(warp, two)); err = !warp; }
  }
  for (int i = 0; !err && i < tc->nreduce; i++) err = tc_shift(s, axes, 2, 2, AXIS_UNROLL, Py_None, ne) < 0;
  Py_XDECREF(warp); Py_XDECREF(two);
  return err ? -1 : 0;
}

/* the one REDUCE tagged "TC" (tinygrad's get_single_element, AssertionError otherwise): new reference */
static UOp *tagged_reduce(SchedulerObject *s) {
  PyObject *topo = uop_toposort_list((UOp *)s->ast, NULL), *found = topo ? PyList_New(0) : NULL, *tag = PyUnicode_FromString("TC");
  UOp *ret = NULL;
  for (Py_ssize_t i = 0; found && tag && i < PyList_GET_SIZE(topo); i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(topo, i);
    int is = x->op == OP_REDUCE ? PyObject_RichCompareBool(uop_tag(x), tag, Py_EQ) : 0;
    if (is < 0 || (is && PyList_Append(found, (PyObject *)x) < 0)) Py_CLEAR(found);
  }
  if (found && PyList_GET_SIZE(found) == 1) ret = (UOp *)Py_NewRef(PyList_GET_ITEM(found, 0));
  else if (found) PyErr_Format(PyExc_AssertionError, "%R must only have 1 element", found);
  Py_XDECREF(topo); Py_XDECREF(found); Py_XDECREF(tag);
  return ret;
}

/* dict(zip(keys, vals)) */
static PyObject *zip_dict(PyObject *keys, PyObject *vals) {
  PyObject *d = PyDict_New();
  Py_ssize_t n = PyList_GET_SIZE(keys) < PyList_GET_SIZE(vals) ? PyList_GET_SIZE(keys) : PyList_GET_SIZE(vals);
  for (Py_ssize_t i = 0; d && i < n; i++)
    if (PyDict_SetItem(d, PyList_GET_ITEM(keys, i), PyList_GET_ITEM(vals, i)) < 0) Py_CLEAR(d);
  return d;
}

/* [ne[i] for i in argsort(p)]: p a tuple of ints as long as ne */
static PyObject *argsorted(PyObject *p, PyObject *ne) {
  Py_ssize_t n = PyTuple_GET_SIZE(p);
  if (n != PyList_GET_SIZE(ne)) return PyErr_Format(PyExc_ValueError, "tensor core permutation of %zd for %zd ranges", n, PyList_GET_SIZE(ne));
  Py_ssize_t *order = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1)), *val = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
  PyObject *ret = order && val ? PyList_New(n) : NULL;
  for (Py_ssize_t i = 0; ret && i < n; i++) {
    if ((val[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(p, i))) == -1 && PyErr_Occurred()) Py_CLEAR(ret);
    /* a stable insertion sort of the indices by their value */
    Py_ssize_t j = i;
    for (; ret && j > 0 && val[order[j - 1]] > val[i]; j--) order[j] = order[j - 1];
    order[j] = i;
  }
  for (Py_ssize_t i = 0; ret && i < n; i++) PyList_SET_ITEM(ret, i, Py_NewRef(PyList_GET_ITEM(ne, order[i])));
  if (!order || !val) PyErr_NoMemory();
  PyMem_Free(order); PyMem_Free(val);
  return ret;
}

/* the MUL's two operands of the tagged reduce with the tensor-core ranges tagged, then each operand's ranges permuted
 * by its swizzle: srcs[0], srcs[1] (new references) */
static int tc_operands(TensorCoreObject *tc, UOp *red, PyObject *ne, PyObject *srcs[2]) {
  PyObject *tne = PyList_New(0), *d = NULL, *ret = NULL, *bss = NULL, *perms = NULL;
  int err = -1;
  for (Py_ssize_t i = 0; tne && i < PyList_GET_SIZE(ne); i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(ne, i);
    PyObject *t = UOp_Check(x) ? (PyObject *)uop_new(x->op, x->dtype, x->src, x->nsrc, x->arg, PY1) : PyErr_Format(PyExc_TypeError, "a tensor core range must be a UOp");
    if (!t || PyList_Append(tne, t) < 0) Py_CLEAR(tne);
    Py_XDECREF(t);
  }
  if (!tne || !(d = zip_dict(ne, tne)) || !(ret = (PyObject *)uop_substitute(red, d))) goto done;
  UOp *v = (UOp *)ret;
  if (v->nsrc && v->src[0]->op == OP_CAST && v->src[0]->nsrc) v = v->src[0]->src[0];
  else if (v->nsrc) v = v->src[0];
  if (v == (UOp *)ret || v->nsrc < 2) { PyErr_SetString(PyExc_IndexError, "the tensor core reduce needs a MUL of two operands"); goto done; }
  if (!(bss = tc_base_shape_str(tc)) || !(perms = tc_permutes_for_shape_str(tc, bss))) goto done;
  srcs[0] = srcs[1] = NULL;
  for (int i = 0; i < 2; i++) {
    PyObject *vals = argsorted(PyTuple_GET_ITEM(perms, i), ne), *sub = vals ? zip_dict(tne, vals) : NULL;
    srcs[i] = sub ? (PyObject *)uop_substitute(v->src[i], sub) : NULL;
    Py_XDECREF(vals); Py_XDECREF(sub);
    if (!srcs[i]) { Py_CLEAR(srcs[0]); goto done; }
  }
  err = 0;
done:
  Py_XDECREF(tne); Py_XDECREF(d); Py_XDECREF(ret); Py_XDECREF(bss); Py_XDECREF(perms);
  return err;
}

/* shape_str_to_axis(names) mapped to the range ids: rngs[shape_str().index(n)].arg[0] for each name (new list) */
static PyObject *names_to_ids(SchedulerObject *s, PyObject *names) {
  PyObject *ss = sched_shape_str(s), *rngs = ss ? sched_rngs(s) : NULL, *ret = rngs ? PyList_New(0) : NULL;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(names); i++) {
    PyObject *ix = PyObject_CallMethod(ss, "index", "O", PyList_GET_ITEM(names, i));
    Py_ssize_t j = ix ? PyLong_AsSsize_t(ix) : -1;
    PyObject *id = j >= 0 ? arg_first(PyList_GET_ITEM(rngs, j)) : NULL;
    if (!id || PyList_Append(ret, id) < 0) Py_CLEAR(ret);
    Py_XDECREF(ix); Py_XDECREF(id);
  }
  Py_XDECREF(ss); Py_XDECREF(rngs);
  return ret;
}

/* tc_upcast_axes: for A, B and C, the first log2(elements_per_thread) of the base upcast axes as (range id, 2) */
static PyObject *tc_upcast_axes(SchedulerObject *s, TensorCoreObject *tc) {
  PyObject *names = tc_base_upcast_axes(tc), *ids = names ? names_to_ids(s, names) : NULL, *ret = ids ? PyTuple_New(3) : NULL;
  for (int i = 0; ret && i < 3; i++) {
    Py_ssize_t n = (Py_ssize_t)log2((double)tc->ept[i]), m = PyList_GET_SIZE(ids);
    PyObject *t = PyTuple_New(n < m ? n : m);
    for (Py_ssize_t j = 0; t && j < PyTuple_GET_SIZE(t); j++) {
      PyObject *pair = Py_BuildValue("(Oi)", PyList_GET_ITEM(ids, j), 2);
      if (!pair) Py_CLEAR(t);
      else PyTuple_SET_ITEM(t, j, pair);
    }
    if (!t) Py_CLEAR(ret);
    else PyTuple_SET_ITEM(ret, i, t);
  }
  Py_XDECREF(names); Py_XDECREF(ids);
  return ret;
}

/* the reduce ranges of red that are not the tensor core's own (kept in a REDUCE around the WMMA) */
static PyObject *extra_reduce_ranges(SchedulerObject *s, TensorCoreObject *tc, UOp *red) {
  PyObject *names = PyList_New(0), *ids = NULL, *topo = NULL, *ret = NULL;
  if (!names) return NULL;
  if (red->nsrc < 1) { Py_DECREF(names); return PyErr_Format(PyExc_ValueError, "a REDUCE without sources"); }
  for (int i = 0; i < tc->nreduce; i++) {
    PyObject *nm = PyUnicode_FromFormat("r%d", i);
    int err = !nm || PyList_Append(names, nm) < 0;
    Py_XDECREF(nm);
    if (err) goto done;
  }
  UOp *sink = (ids = names_to_ids(s, names)) ? uop_new(OP_SINK, DTYPE(VOID), red->src + 1, red->nsrc - 1, NULL, NULL) : NULL;
  topo = sink ? uop_toposort_list(sink, NULL) : NULL;
  Py_XDECREF(sink);
  if (!topo || !(ret = PyList_New(0))) goto done;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(topo); i++) {
    PyObject *x = PyList_GET_ITEM(topo, i), *id = ((UOp *)x)->op == OP_RANGE ? arg_first(x) : NULL;
    int in = id ? PySequence_Contains(ids, id) : ((UOp *)x)->op == OP_RANGE ? -1 : 1;
    if (in < 0 || (!in && PyList_Append(ret, x) < 0)) Py_CLEAR(ret);
    Py_XDECREF(id);
  }
done:
  Py_XDECREF(names); Py_XDECREF(ids); Py_XDECREF(topo);
  return ret;
}

static DType *vec_of(DType *dt, long n) {
  if (n > INT32_MAX) { PyErr_SetString(PyExc_ValueError, "tensor core vector too wide"); return NULL; }
  return n == 1 ? dt : dtype_vec(dt, (int)n);
}

/* WMMA(CONTRACT(a), CONTRACT(b), 0) under an UNROLL of C's axes, in a REDUCE over the other ranges when there are any */
static UOp *tc_build_wmma(SchedulerObject *s, TensorCoreObject *tc, UOp *red, PyObject *srcs[2]) {
  PyObject *ua = tc_upcast_axes(s, tc), *name = ua ? tc_str(tc) : NULL, *dev = name ? ren_attr(s, "device") : NULL, *empty = PyTuple_New(0);
  PyObject *arg = dev && empty ? PyTuple_Pack(8, name, tc->dims, tc->dtype_in, tc->dtype_out, dev, tc->threads, ua, empty) : NULL;
  DType *out = (DType *)tc->dtype_out, *vout = arg ? vec_of(out, tc->ept[2]) : NULL;
  UOp *c[3] = {NULL, NULL, NULL}, *wmma = NULL, *unroll = NULL, *ret = NULL;
  PyObject *zero = vout ? PyFloat_FromDouble(0.0) : NULL, *extra = NULL;
  for (int i = 0; zero && i < 2; i++) {
    UOp *x = (UOp *)srcs[i];
    DType *vt = vec_of(x->dtype, tc->ept[i]);
    if (!vt || !(c[i] = uop_new(OP_CONTRACT, vt, &x, 1, PyTuple_GET_ITEM(ua, i), PY1))) goto done;
  }
  if (!zero || !(c[2] = uop_const(vout, zero)) || !(wmma = uop_new(OP_WMMA, vout, c, 3, arg, PY1))) goto done;
  if (!(unroll = uop_new(OP_UNROLL, out, &wmma, 1, PyTuple_GET_ITEM(ua, 2), PY1)) || !(extra = extra_reduce_ranges(s, tc, red))) goto done;
  if (!PyList_GET_SIZE(extra)) { ret = (UOp *)Py_NewRef(unroll); goto done; }
  if (PyList_Insert(extra, 0, (PyObject *)unroll) < 0) goto done;
  ret = uop_new(OP_REDUCE, out, (UOp *const *)PySequence_Fast_ITEMS(extra), PyList_GET_SIZE(extra), ops_members[OP_ADD], NULL);
done:
  Py_XDECREF(ua); Py_XDECREF(name); Py_XDECREF(dev); Py_XDECREF(empty); Py_XDECREF(arg); Py_XDECREF(zero); Py_XDECREF(extra);
  for (int i = 0; i < 3; i++) Py_XDECREF(c[i]);
  Py_XDECREF(wmma); Py_XDECREF(unroll);
  return ret;
}

/* the reduce, tagged "TC" while the ranges move, becomes the WMMA */
static int tc_replace_reduce(SchedulerObject *s, TensorCoreObject *tc, PyObject *ne) {
  UOp *red = tagged_reduce(s), *wmma = NULL;
  PyObject *srcs[2] = {NULL, NULL}, *d = NULL;
  int err = !red || tc_operands(tc, red, ne, srcs) < 0 || !(wmma = tc_build_wmma(s, tc, red, srcs)) ||
            !(d = PyDict_New()) || PyDict_SetItem(d, (PyObject *)red, (PyObject *)wmma) < 0 || sched_substitute(s, d) < 0;
  Py_XDECREF(red); Py_XDECREF(wmma); Py_XDECREF(srcs[0]); Py_XDECREF(srcs[1]); Py_XDECREF(d);
  return err ? -1 : 0;
}

/* self.ast with the reduce tagged "TC" */
static int tag_reduce(SchedulerObject *s, UOp *red) {
  PyObject *tag = PyUnicode_FromString("TC"), *d = tag ? PyDict_New() : NULL;
  UOp *t = d ? uop_new(red->op, red->dtype, red->src, red->nsrc, red->arg, tag) : NULL;
  int err = !t || PyDict_SetItem(d, (PyObject *)red, (PyObject *)t) < 0 || sched_substitute(s, d) < 0;
  Py_XDECREF(tag); Py_XDECREF(d); Py_XDECREF(t);
  return err ? -1 : 0;
}

typedef struct { long axis, opt_level, use_tc; } TCArgs;

/* one tensor core on the reduce: the axes (a new list) when it applies, Py_None when it does not (borrowed), NULL on error */
static PyObject *tc_try(SchedulerObject *s, TensorCoreObject *tc, UOp *red, UOp *in0, UOp *in1, const TCArgs *a) {
  PyObject *axes[3] = {NULL, NULL, NULL}, *ne = NULL, *ret = NULL;
  int picked = tc_pick_axes(red, in0, in1, a->axis, axes);
  if (picked <= 0) return picked < 0 ? NULL : Py_None;
  int padded = tag_reduce(s, red) < 0 ? -1 : tc_pad_axes(s, tc, axes, a->opt_level);
  if (padded <= 0) { ret = padded < 0 ? NULL : Py_None; goto done; }
  if (!(ne = PyList_New(0)) || tc_split_axes(s, tc, axes, ne) < 0) goto done;
  if (a->use_tc != 2 && tc_replace_reduce(s, tc, ne) < 0) goto done;
  Py_XSETREF(s->tensor_core, Py_NewRef((PyObject *)tc));
  ret = PyList_New(3);
  for (int i = 0; ret && i < 3; i++) PyList_SET_ITEM(ret, i, Py_NewRef(axes[i]));
done:
  for (int i = 0; i < 3; i++) Py_XDECREF(axes[i]);
  Py_XDECREF(ne);
  return ret;
}

/* does tc take these operand dtypes (and, on CUDA/NV, is a float input allowed: TF32 only with ALLOW_TF32) */
static int tc_fits(SchedulerObject *s, TensorCoreObject *tc, UOp *red, UOp *in0, UOp *in1) {
  if (!allow_tf32 && tc->dtype_in == (PyObject *)DTYPE(FLOAT32)) {
    PyObject *dev = ren_attr(s, "device");
    if (!dev) return -1;
    int nv = PyUnicode_Check(dev) && (!PyUnicode_CompareWithASCIIString(dev, "CUDA") || !PyUnicode_CompareWithASCIIString(dev, "NV"));
    Py_DECREF(dev);
    if (nv) return 0;
  }
  return tc->dtype_in == (PyObject *)dtype_scalar(in0->dtype) && tc->dtype_in == (PyObject *)dtype_scalar(in1->dtype) &&
         tc->dtype_out == (PyObject *)dtype_scalar(red->dtype);
}

/* the tensor cores to try: all of them (tc_select -1) or the one chosen; each must be a tinyc TensorCore */
static PyObject *tc_candidates(PyObject *tcs, long tc_select) {
  PyObject *all = PySequence_List(tcs), *ret = NULL;
  if (!all) return NULL;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(all); i++)
    if (!TensorCore_Check(PyList_GET_ITEM(all, i))) {
      PyErr_Format(PyExc_TypeError, "renderer.tensor_cores must hold tinyc.TensorCore objects, not %R", (PyObject *)Py_TYPE(PyList_GET_ITEM(all, i)));
      Py_DECREF(all);
      return NULL;
    }
  if (tc_select == -1) return all;
  if (tc_select < 0 || tc_select >= PyList_GET_SIZE(all)) opt_error("invalid tensor core choice %ld", tc_select);
  else ret = PyList_GetSlice(all, tc_select, tc_select + 1);
  Py_DECREF(all);
  return ret;
}

/* _apply_tc_opt: the axes, or Py_None (borrowed) when no tensor core applies */
static PyObject *tc_search(SchedulerObject *s, PyObject *tcs, long tc_select, const TCArgs *a) {
  PyObject *reduceops = sched_reduceops(s), *cands = NULL, *ret = NULL;
  if (!reduceops) return NULL;
  if (!PyList_GET_SIZE(reduceops)) { opt_error("no reduce ops for TensorCore"); goto done; }
  UOp *red = (UOp *)PyList_GET_ITEM(reduceops, 0);
  ret = Py_None;
  if (red->arg != ops_members[OP_ADD] || !red->nsrc) goto done;
  UOp *mul = red->src[0]->op != OP_CAST ? red->src[0] : red->src[0]->nsrc ? red->src[0]->src[0] : NULL;
  if (!mul || mul->op != OP_MUL) goto done;
  if (mul->nsrc != 2) { ret = PyErr_Format(PyExc_ValueError, "not enough values to unpack (expected 2, got %d)", (int)mul->nsrc); goto done; }
  if (!(cands = tc_candidates(tcs, tc_select))) { ret = NULL; goto done; }
  for (Py_ssize_t i = 0; ret == Py_None && i < PyList_GET_SIZE(cands); i++) {
    TensorCoreObject *tc = (TensorCoreObject *)PyList_GET_ITEM(cands, i);
    int fits = tc_fits(s, tc, red, mul->src[0], mul->src[1]);
    ret = fits < 0 ? NULL : fits ? tc_try(s, tc, red, mul->src[0], mul->src[1], a) : Py_None;
  }
done:
  Py_XDECREF(reduceops); Py_XDECREF(cands);
  return ret;
}

/* an arg item as a long (ints only; bools are ints, as in Python) */
static int tc_arg_long(PyObject *o, long *out) {
  PyObject *i = PyNumber_Index(o);
  if (!i) return -1;
  *out = PyLong_AsLong(i);
  Py_DECREF(i);
  return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* TC: tinygrad's argument checks, then the search; a ValueError on the way is a KernelOptError of its message */
static PyObject *apply_tc_opt(SchedulerObject *s, OptObject *opt) {
  PyObject *tcs = NULL, *ret = NULL, *t0, *t1, *t2, *lo = NULL, *hi = NULL;
  CHECK(PyList_GET_SIZE(s->applied_opts) == 0, "tensor core opts must be first");
  CHECK(opt->axis != Py_None, "tensor core opts must have an axis");
  CHECK(opt->arg != Py_None && PyTuple_Check(opt->arg) && PyTuple_GET_SIZE(opt->arg) == 3, "tensor core opts must have valid arg");
  if (!(tcs = ren_attr(s, "tensor_cores"))) goto fail;
  Py_ssize_t ntc = PyObject_Length(tcs);
  if (ntc < 0 || !(hi = PyLong_FromSsize_t(ntc)) || !(lo = PyLong_FromLong(2))) goto fail;
  t0 = PyTuple_GET_ITEM(opt->arg, 0), t1 = PyTuple_GET_ITEM(opt->arg, 1), t2 = PyTuple_GET_ITEM(opt->arg, 2);
  int a = lt_bool(PYM1, t0, Py_LE), b = a > 0 ? lt_bool(t0, hi, Py_LT) : a;
  CHECK(b, "tensor core opts must have valid tc_select");
  a = lt_bool(PY0, t1, Py_LE), b = a > 0 ? lt_bool(t1, lo, Py_LE) : a;
  CHECK(b, "tensor core opts must have valid tc_opt");
  a = lt_bool(PY0, t2, Py_LT), b = a > 0 ? lt_bool(t2, lo, Py_LE) : a;
  CHECK(b, "use_tensor_cores value is not valid");
  long tc_select;
  TCArgs args = {opt->axis_val, 0, 0};
  if (tc_arg_long(t0, &tc_select) < 0 || tc_arg_long(t1, &args.opt_level) < 0 || tc_arg_long(t2, &args.use_tc) < 0) goto fail;
  PyObject *r = tc_search(s, tcs, tc_select, &args);
  if (!r && PyErr_ExceptionMatches(PyExc_ValueError)) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *msg = value ? PyObject_Str(value) : NULL;
    if (msg) { PyErr_SetObject(KernelOptError, msg); Py_DECREF(msg); }
    Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
  }
  if (!r) goto fail;
  if (r == Py_None) { opt_error("no tensor core available"); goto fail; }
  ret = r;
fail:
  Py_XDECREF(tcs); Py_XDECREF(lo); Py_XDECREF(hi);
  return ret;
}

/* PADTO: round the range up to a multiple of arg, and mask the loads and stores that read past the old end */
static int apply_padto(SchedulerObject *s, OptObject *opt, PyObject *rng) {
  PyObject *src0 = src_of(rng, 0), *reduceops = NULL, *sz = NULL, *new_sz = NULL, *q = NULL, *four = NULL, *rarg = NULL;
  PyObject *replaced = NULL, *replaces = NULL, *valid = NULL, *bufs = NULL, *empty = NULL;
  int ret = -1;
  if (!src0) goto fail;
  CHECK(UOp_Check(src0) && ((UOp *)src0)->op == OP_CONST, "only pad const axes");
  int up = axis_in(rng, 2, AXIS_UPCAST, AXIS_UNROLL);
  CHECK(up < 0 ? -1 : !up, "cannot pad upcasted");
  int th = axis_in(rng, 1, AXIS_THREAD);
  CHECK(th < 0 ? -1 : !th, "cannot pad thread");
  if (!(reduceops = sched_reduceops(s))) goto fail;
  int red_axis = axis_in(rng, 2, AXIS_GROUP_REDUCE, AXIS_REDUCE);
  if (red_axis < 0) goto fail;
  if (PyList_GET_SIZE(reduceops) && red_axis) {
    /* ok to pad a SUM if every op above the reduce has f(0) = 0 */
    UOp *r = (UOp *)PyList_GET_ITEM(reduceops, 0);
    int ok = r->arg == ops_members[OP_ADD];
    if (ok) {
      PyObject *topo = uop_toposort_list(r, NULL);
      if (!topo) goto fail;
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topo); i++) if (IN_GROUP(((UOp *)PyList_GET_ITEM(topo, i))->op, UnsafePad)) ok = 0;
      Py_DECREF(topo);
    }
    if (!ok) {
      PyObject *ro = sched_reduceop(s);
      if (ro) opt_error("cannot pad %S", ro);
      Py_XDECREF(ro);
      goto fail;
    }
  }
  /* new_sz = round_up(int(rng.vmax+1), arg) */
  PyObject *v = vmax_plus_1(rng), *iv = v ? PyNumber_Long(v) : NULL, *am1 = NULL, *t = NULL;
  Py_XDECREF(v);
  if (iv && (am1 = PyNumber_Subtract(opt->arg, PY1)) && (t = PyNumber_Add(iv, am1))) {
    PyObject *d = PyNumber_FloorDivide(t, opt->arg);
    if (d) { new_sz = PyNumber_Multiply(d, opt->arg); Py_DECREF(d); }
  }
  Py_XDECREF(iv); Py_XDECREF(am1); Py_XDECREF(t);
  if (!new_sz || !(sz = vmax_plus_1(rng)) || !(four = PyLong_FromLong(4)) || !(q = PyNumber_FloorDivide(new_sz, four))) goto fail;
  CHECK(lt_bool(sz, q, Py_GT), "pad adds more than quadruple the work");
  if (!(rarg = getattr_literal(rng, "arg"))) goto fail;
  {
    PyObject *first = PyTuple_Pack(1, new_sz), *targs = first ? PySequence_Concat(first, rarg) : NULL;
    if (targs) replaced = PyObject_Call(uop_range_fn, targs, NULL);
    Py_XDECREF(first); Py_XDECREF(targs);
  }
  if (!replaced || !(replaces = PyDict_New()) || PyDict_SetItem(replaces, rng, replaced) < 0) goto fail;
  if (!(valid = PyObject_RichCompare(replaced, sz, Py_LT)) || !(bufs = sched_bufs(s)) || !(empty = PyTuple_New(0))) goto fail;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(bufs); i++) {
    UOp *b = (UOp *)PyList_GET_ITEM(bufs, i);
    if (b->nsrc < 2) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); goto fail; }
    PyObject *idx = (PyObject *)uop_get_idx(b->src[1]);
    PyObject *bsl = idx ? getattr_literal(idx, "backward_slice_with_self") : NULL;
    int in = bsl ? PySequence_Contains(bsl, rng) : -1;
    Py_XDECREF(bsl);
    if (in <= 0) { Py_XDECREF(idx); if (in < 0) goto fail; continue; }
    PyObject *gv = (PyObject *)uop_get_valid(b->src[1]), *both = gv ? PyNumber_And(valid, gv) : NULL;
    PyObject *inv = both ? PyObject_Call(uop_invalid_fn, empty, NULL) : NULL;
    PyObject *w = inv ? PyObject_CallMethod(both, "where", "OO", idx, inv) : NULL;
    UOp *nb = NULL;
    if (w && UOp_Check(w)) {
      UOp *srcs[2] = {b->src[0], (UOp *)w};
      nb = uop_new(b->op, b->dtype, srcs, 2, b->arg, uop_tag(b) == Py_None ? NULL : uop_tag(b));
    } else if (w) PyErr_SetString(PyExc_TypeError, "where did not return a UOp");
    int err = !nb || PyDict_SetItem(replaces, (PyObject *)b, (PyObject *)nb) < 0;
    Py_XDECREF(idx); Py_XDECREF(gv); Py_XDECREF(both); Py_XDECREF(inv); Py_XDECREF(w); Py_XDECREF(nb);
    if (err) goto fail;
  }
  ret = sched_substitute(s, replaces);
fail:
  Py_XDECREF(src0); Py_XDECREF(reduceops); Py_XDECREF(sz); Py_XDECREF(new_sz); Py_XDECREF(q); Py_XDECREF(four);
  Py_XDECREF(rarg); Py_XDECREF(replaced); Py_XDECREF(replaces); Py_XDECREF(valid); Py_XDECREF(bufs); Py_XDECREF(empty);
  return ret;
}

/* a RANGE with the arg (*head_of.arg[0:-1], type_of.arg[-1]) and tag 1 */
static PyObject *swapped_range(UOp *r, PyObject *head_of, PyObject *type_of) {
  PyObject *head = arg_head(head_of), *at = head ? arg_last(type_of) : NULL, *last = at ? PyTuple_Pack(1, at) : NULL;
  PyObject *arg = last ? PySequence_Concat(head, last) : NULL, *one = PY1;
  PyObject *ret = arg ? (PyObject *)uop_new(r->op, r->dtype, r->src, r->nsrc, arg, one) : NULL;
  Py_XDECREF(head); Py_XDECREF(at); Py_XDECREF(last); Py_XDECREF(arg);
  return ret;
}

static PatternMatcher *remove_tags_pm;

/* SWAP: two GLOBAL ranges trade their axis ids (tagged while they trade, so neither is rewritten twice) */
static int apply_swap(SchedulerObject *s, OptObject *opt, PyObject *rng) {
  PyObject *rngs = sched_rngs(s), *alt = rngs ? PyObject_GetItem(rngs, opt->arg) : NULL, *a = NULL, *b = NULL, *d = NULL;
  int ret = -1;
  Py_XDECREF(rngs);
  if (!alt) {
    if (rngs && PyErr_ExceptionMatches(PyExc_IndexError)) { PyErr_Clear(); PyErr_SetNone(KernelOptError); }
    return -1;
  }
  int g1 = axis_in(rng, 1, AXIS_GLOBAL), g2 = g1 > 0 ? axis_in(alt, 1, AXIS_GLOBAL) : g1;
  CHECK(g2, "swap only for globals");
  if (!UOp_Check(rng) || !UOp_Check(alt)) { PyErr_SetString(PyExc_TypeError, "swap needs UOp ranges"); goto fail; }
  if (!(a = swapped_range((UOp *)rng, alt, rng)) || !(b = swapped_range((UOp *)alt, rng, alt))) goto fail;
  if (!(d = PyDict_New()) || PyDict_SetItem(d, rng, a) < 0 || PyDict_SetItem(d, alt, b) < 0 || sched_substitute(s, d) < 0) goto fail;
  UOp *n = graph_rewrite((UOp *)s->ast, remove_tags_pm, Py_None, false, NULL);
  if (!n) goto fail;
  sched_set_ast(s, (PyObject *)n);
  ret = 0;
fail:
  Py_XDECREF(alt); Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(d);
  return ret;
}

static PyObject *sched_apply_opt(SchedulerObject *s, PyObject *opt_obj, int append_opt) {
  if (!Opt_Check(opt_obj)) return PyErr_Format(PyExc_TypeError, "apply_opt needs a tinyc.Opt, not %.100s", Py_TYPE(opt_obj)->tp_name);
  OptObject *opt = (OptObject *)opt_obj;
  PyObject *rng = NULL, *ret = NULL;
  if (opt->op_id == OPTOPS_NOLOCALS) {
    Py_ssize_t n = sched_len_axes_of(s, M(WARP) | M(LOCAL) | M(GROUP_REDUCE));
    CHECK(n < 0 ? -1 : n == 0, "no locals can't have locals");
    if (append_opt && PyList_Append(s->applied_opts, opt_obj) < 0) return NULL;
    s->dont_use_locals = 1;
    Py_RETURN_NONE;
  }
  if (opt->op_id == OPTOPS_LOCAL || opt->op_id == OPTOPS_GROUP || opt->op_id == OPTOPS_GROUPTOP)
    CHECK(ren_truth(s, "has_local"), "locals needed for opt");
  Py_ssize_t real_axis;
  if (sched_real_axis(s, opt, &real_axis) < 0 || !(rng = sched_opt_rng(s, real_axis))) goto fail;
  if (opt_to_at(opt->op_id)) {
    if (!(ret = apply_split_opt(s, opt, rng))) goto fail;
  } else if (opt->op_id == OPTOPS_TC) {
    if (!(ret = apply_tc_opt(s, opt))) goto fail;
  } else if (opt->op_id == OPTOPS_PADTO) {
    if (apply_padto(s, opt, rng) < 0) goto fail;
    ret = Py_NewRef(Py_None);
  } else if (opt->op_id == OPTOPS_SWAP) {
    if (apply_swap(s, opt, rng) < 0) goto fail;
    ret = Py_NewRef(Py_None);
  } else {
    opt_error("unsupported opt %S", opt->op);
    goto fail;
  }
  if (append_opt && PyList_Append(s->applied_opts, opt_obj) < 0) Py_CLEAR(ret);
  Py_DECREF(rng);
  return ret;
fail:
  Py_XDECREF(rng); Py_XDECREF(ret);
  return NULL;
}

/* ---- get_optimized_ast ---- */

/* the name tinygrad gives a kernel: r or E, the launch sizes, the axis sizes in their colours, and nN when a kernel of
 * the same function name came before in this process */
static PyObject *kernel_name(SchedulerObject *s) {
  PyObject *reduceops = sched_reduceops(s), *parts = NULL, *topo = NULL, *specials = NULL, *keys = NULL, *sorted = NULL;
  PyObject *sizes = NULL, *sep = NULL, *us = NULL, *joined = NULL, *name = NULL, *fn = NULL, *num = NULL, *cnum = NULL, *ret = NULL;
  if (!reduceops || !(parts = PyList_New(0)) || !(specials = PyList_New(0)) || !(keys = PyList_New(0))) goto done;
  if (!(num = PyUnicode_FromString("")) || PyList_Append(parts, num) < 0) goto done;
  Py_CLEAR(num);
  if (!(topo = uop_toposort_list((UOp *)s->ast, NULL))) goto done;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topo); i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(topo, i);
    if (x->op == OP_SPECIAL && (PyList_Append(specials, (PyObject *)x) < 0 || PyList_Append(keys, x->arg) < 0)) goto done;
  }
  if (!(sorted = sorted_by(specials, keys))) goto done;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(sorted); i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(sorted, i);
    PyObject *v = vmax_plus_1((PyObject *)x), *str = v ? PyObject_Str(v) : NULL, *c0 = str ? PySequence_GetItem(x->arg, 0) : NULL;
    int g = c0 ? PyUnicode_Check(c0) && PyUnicode_CompareWithASCIIString(c0, "g") == 0 : -1;
    PyObject *col = g >= 0 ? colored(str, g ? "blue" : "cyan") : NULL;
    int err = !col || PyList_Append(parts, col) < 0;
    Py_XDECREF(v); Py_XDECREF(str); Py_XDECREF(c0); Py_XDECREF(col);
    if (err) goto done;
  }
  if (!(sizes = sched_colored_sizes(s, "")) || PyList_SetSlice(parts, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, sizes) < 0) goto done;
  if (!(us = PyUnicode_FromString("_")) || !(sep = colored(us, "BLACK")) || !(joined = PyUnicode_Join(sep, parts))) goto done;
  if (!(name = PyUnicode_FromFormat("%s%U", PyList_GET_SIZE(reduceops) ? "r" : "E", joined))) goto done;
  if (!(fn = tinyc_to_function_name(name))) goto done;
  PyObject *c = PyDict_GetItemWithError(kernel_cnt, fn);
  if (!c && PyErr_Occurred()) goto done;
  PyObject *nc = c ? PyNumber_Add(c, PY1) : Py_NewRef(PY1);
  if (!nc || PyDict_SetItem(kernel_cnt, fn, nc) < 0) { Py_XDECREF(nc); goto done; }
  int more = lt_bool(nc, PY1, Py_GT);
  if (more > 0) {
    PyObject *m1 = PyNumber_Subtract(nc, PY1);
    num = m1 ? PyUnicode_FromFormat("n%S", m1) : NULL;
    Py_XDECREF(m1);
  } else if (more == 0) num = PyUnicode_FromString("");
  Py_DECREF(nc);
  if (num && (cnum = colored(num, "BLACK"))) ret = PyUnicode_Concat(name, cnum);
done:
  Py_XDECREF(reduceops); Py_XDECREF(parts); Py_XDECREF(topo); Py_XDECREF(specials); Py_XDECREF(keys); Py_XDECREF(sorted);
  Py_XDECREF(sizes); Py_XDECREF(sep); Py_XDECREF(us); Py_XDECREF(joined); Py_XDECREF(name); Py_XDECREF(fn); Py_XDECREF(num);
  Py_XDECREF(cnum);
  return ret;
}

static PyObject *sched_get_optimized_ast(SchedulerObject *s, PyObject *name_override) {
  PyObject *name = name_override != Py_None ? Py_NewRef(name_override) : kernel_name(s);
  if (!name) return NULL;
  PatternMatcher *flatten = native_get("pm_flatten_range");
  if (!flatten) { Py_DECREF(name); return PyErr_Format(PyExc_RuntimeError, "the native rule set pm_flatten_range is missing"); }
  UOp *flat = graph_rewrite((UOp *)s->ast, flatten, Py_None, false, NULL);
  if (!flat) { Py_DECREF(name); return NULL; }
  sched_set_ast(s, (PyObject *)flat);
  PyObject *opts = PyList_AsTuple(s->applied_opts), *kw = opts ? Py_BuildValue("{sOsOsO}", "name", name, "applied_opts", opts,
      "dont_use_locals", s->dont_use_locals ? Py_True : Py_False) : NULL, *empty = kw ? PyTuple_New(0) : NULL;
  PyObject *ki = empty ? PyObject_Call((PyObject *)&KernelInfo_Type, empty, kw) : NULL, *ret = NULL;
  if (ki) ret = (PyObject *)uop_new(flat->op, flat->dtype, flat->src, flat->nsrc, ki, PY1);
  Py_XDECREF(opts); Py_XDECREF(kw); Py_XDECREF(empty); Py_XDECREF(ki); Py_DECREF(name);
  return ret;
}

/* ---- the Python type ---- */

/* opt_range starts after the largest axis id of the ranges */
static int sched_init_fields(SchedulerObject *s, PyObject *ast, PyObject *ren) {
  if (!UOp_Check(ast)) { PyErr_Format(PyExc_TypeError, "Scheduler needs a tinyc UOp, not %.100s", Py_TYPE(ast)->tp_name); return -1; }
  if (((UOp *)ast)->op != OP_SINK) { PyErr_Format(PyExc_ValueError, "Scheduler needs a SINK ast, not %S", ops_members[((UOp *)ast)->op]); return -1; }
  if (uop_check_form((UOp *)ast, "Scheduler") < 0) return -1;
  if (s->ast != ast) sched_set_ast(s, Py_NewRef(ast));   /* the same kernel (a copy) keeps its ranges */
  Py_XSETREF(s->ren, Py_NewRef(ren));
  PyObject *arg = ((UOp *)ast)->arg, *opts;
  s->dont_use_locals = 0;
  if (arg != Py_None) {
    PyObject *d = getattr_literal(arg, "dont_use_locals"), *ao = d ? getattr_literal(arg, "applied_opts") : NULL;
    int t = d ? PyObject_IsTrue(d) : -1;
    Py_XDECREF(d);
    opts = ao ? PySequence_List(ao) : NULL;
    Py_XDECREF(ao);
    if (t < 0 || !opts) { Py_XDECREF(opts); return -1; }
    s->dont_use_locals = (char)t;
  } else if (!(opts = PyList_New(0))) return -1;
  Py_XSETREF(s->applied_opts, opts);
  PyObject *rngs = sched_rngs(s), *mx = rngs ? Py_NewRef(PY0) : NULL;
  for (Py_ssize_t i = 0; mx && i < PyList_GET_SIZE(rngs); i++) {
    PyObject *a0 = PySequence_GetItem(((UOp *)PyList_GET_ITEM(rngs, i))->arg, 0);   /* rngs are RANGE UOps */
    int gt = a0 ? (i == 0 ? 1 : lt_bool(a0, mx, Py_GT)) : -1;
    if (gt < 0) Py_CLEAR(mx);
    else if (gt) Py_SETREF(mx, Py_NewRef(a0));
    Py_XDECREF(a0);
  }
  PyObject *start = mx ? PyNumber_Add(mx, PY1) : NULL;
  Py_XDECREF(rngs); Py_XDECREF(mx);
  if (!start) return -1;
  Py_XSETREF(s->opt_range, start);
  return 0;
}

static SchedulerObject *sched_alloc(PyTypeObject *type) {
  SchedulerObject *s = (SchedulerObject *)type->tp_alloc(type, 0);
  if (s) s->tensor_core = Py_NewRef(Py_None);
  return s;
}

static PyObject *Scheduler_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"ast", "ren", NULL};
  PyObject *ast, *ren;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:Scheduler", kwlist, &ast, &ren)) return NULL;
  SchedulerObject *s = sched_alloc(type);
  if (!s) return NULL;
  if (sched_init_fields(s, ast, ren) < 0) { Py_DECREF(s); return NULL; }
  return (PyObject *)s;
}

static int Scheduler_traverse(SchedulerObject *s, visitproc visit, void *arg) {
  Py_VISIT(s->ast); Py_VISIT(s->ren); Py_VISIT(s->applied_opts); Py_VISIT(s->opt_range); Py_VISIT(s->tensor_core); Py_VISIT(s->dict);
  Py_VISIT(s->rngs);
  return 0;
}
static int Scheduler_clear(SchedulerObject *s) {
  Py_CLEAR(s->ast); Py_CLEAR(s->ren); Py_CLEAR(s->applied_opts); Py_CLEAR(s->opt_range); Py_CLEAR(s->tensor_core); Py_CLEAR(s->dict);
  Py_CLEAR(s->rngs);
  return 0;
}
static void Scheduler_dealloc(SchedulerObject *s) {
  PyObject_GC_UnTrack(s);
  Scheduler_clear(s);
  Py_TYPE(s)->tp_free((PyObject *)s);
}

static int sched_ready(SchedulerObject *s) {
  if (s->ast && s->applied_opts && s->opt_range) return 0;
  PyErr_SetString(PyExc_RuntimeError, "Scheduler is not initialised");
  return -1;
}
#define READY(s) do { if (sched_ready(s) < 0) return NULL; } while (0)

/* copy(): a new Scheduler of the current AST, with the same dont_use_locals, applied_opts and tensor_core */
static PyObject *Scheduler_copy(SchedulerObject *s, PyObject *unused) {
  UNUSED(unused);
  READY(s);
  SchedulerObject *r = sched_alloc(Py_TYPE(s));
  if (!r) return NULL;
  r->ast = Py_NewRef(s->ast), r->rngs = Py_XNewRef(s->rngs);   /* the same kernel: the same ranges */
  if (sched_init_fields(r, s->ast, s->ren) < 0) { Py_DECREF(r); return NULL; }
  r->dont_use_locals = s->dont_use_locals;
  Py_SETREF(r->applied_opts, PyList_GetSlice(s->applied_opts, 0, PY_SSIZE_T_MAX));
  if (!r->applied_opts) { Py_DECREF(r); return NULL; }
  Py_XSETREF(r->tensor_core, Py_NewRef(s->tensor_core ? s->tensor_core : Py_None));
  return (PyObject *)r;
}

static PyObject *Scheduler_shape_str(SchedulerObject *s, PyObject *unused) { UNUSED(unused); READY(s); return sched_shape_str(s); }
static PyObject *Scheduler_shape_str_to_axis(SchedulerObject *s, PyObject *nms) {
  READY(s);
  PyObject *ss = sched_shape_str(s), *seq = ss ? PySequence_Fast(nms, "shape_str_to_axis needs a sequence of names") : NULL, *ret = NULL;
  if (seq && (ret = PyTuple_New(PySequence_Fast_GET_SIZE(seq)))) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
      Py_ssize_t j = PySequence_Index(ss, PySequence_Fast_GET_ITEM(seq, i));
      PyObject *v = j < 0 ? NULL : PyLong_FromSsize_t(j);
      if (!v) { Py_CLEAR(ret); break; }
      PyTuple_SET_ITEM(ret, i, v);
    }
  }
  Py_XDECREF(ss); Py_XDECREF(seq);
  return ret;
}
static PyObject *Scheduler_convert_loop_to_global(SchedulerObject *s, PyObject *unused) {
  UNUSED(unused); READY(s);
  if (sched_convert_loop_to_global(s) < 0) return NULL;
  Py_RETURN_NONE;
}
static PyObject *Scheduler_colors(SchedulerObject *s, PyObject *unused) { UNUSED(unused); READY(s); return sched_colors(s); }
static PyObject *Scheduler_colored_shape(SchedulerObject *s, PyObject *unused) { UNUSED(unused); READY(s); return sched_colored_shape(s); }
static PyObject *Scheduler_output_rngs(SchedulerObject *s, PyObject *unused) { UNUSED(unused); READY(s); return sched_output_rngs(s); }
static PyObject *Scheduler_globalizable_rngs(SchedulerObject *s, PyObject *unused) { UNUSED(unused); READY(s); return sched_globalizable_rngs(s); }
static PyObject *Scheduler_upcast_size(SchedulerObject *s, PyObject *unused) { UNUSED(unused); READY(s); return sched_prod_axes(s, M(UPCAST) | M(UNROLL)); }

static PyObject *Scheduler_shift_to(SchedulerObject *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"rng", "amount", "new_type", "top", "input_new_rng", NULL};
  PyObject *rng, *amount, *new_type, *input_new_rng = Py_None;
  int top = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|pO:shift_to", kwlist, &rng, &amount, &new_type, &top, &input_new_rng)) return NULL;
  READY(s);
  return sched_shift_to(s, rng, amount, new_type, top, input_new_rng);
}

/* the mask of the AxisType members in args */
static int axis_mask(PyObject *args, unsigned *mask) {
  *mask = 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
    PyObject *t = PyTuple_GET_ITEM(args, i);
    for (int a = 1; a < AXIS_COUNT; a++) if (t == axistype_members[a]) *mask |= 1u << a;
  }
  return 0;
}
static PyObject *Scheduler_axes_of(SchedulerObject *s, PyObject *args) {
  READY(s);
  unsigned mask;
  axis_mask(args, &mask);
  return sched_axes_of_mask(s, mask);
}
/* ranges_of: the ranges whose axis type is in the mask, in rngs order */
static PyObject *sched_ranges_of_mask(SchedulerObject *s, unsigned mask) {
  PyObject *rngs = sched_rngs(s), *ret = rngs ? PyList_New(0) : NULL;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(rngs); i++) {
    PyObject *at = arg_last(PyList_GET_ITEM(rngs, i));
    bool in = false;
    for (int a = 1; at && a < AXIS_COUNT; a++) if ((mask >> a & 1) && at == axistype_members[a]) in = true;
    if (!at || (in && PyList_Append(ret, PyList_GET_ITEM(rngs, i)) < 0)) Py_CLEAR(ret);
    Py_XDECREF(at);
  }
  Py_XDECREF(rngs);
  return ret;
}
static PyObject *Scheduler_ranges_of(SchedulerObject *s, PyObject *args) {
  READY(s);
  PyObject *rngs = sched_rngs(s), *ret = rngs ? PyList_New(0) : NULL;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(rngs); i++) {
    PyObject *at = arg_last(PyList_GET_ITEM(rngs, i));
    int in = at ? PySequence_Contains(args, at) : -1;
    Py_XDECREF(at);
    if (in < 0 || (in && PyList_Append(ret, PyList_GET_ITEM(rngs, i)) < 0)) Py_CLEAR(ret);
  }
  Py_XDECREF(rngs);
  return ret;
}

static PyObject *Scheduler_real_axis(SchedulerObject *s, PyObject *args) {
  PyObject *op, *axis;
  if (!PyArg_ParseTuple(args, "OO:real_axis", &op, &axis)) return NULL;
  READY(s);
  PyObject *opt = opt_new(op, axis, NULL);
  if (!opt) return NULL;
  Py_ssize_t r;
  int err = sched_real_axis(s, (OptObject *)opt, &r);
  Py_DECREF(opt);
  return err < 0 ? NULL : PyLong_FromSsize_t(r);
}

static PyObject *Scheduler_apply_opt(SchedulerObject *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"opt", "append_opt", NULL};
  PyObject *opt;
  int append_opt = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:apply_opt", kwlist, &opt, &append_opt)) return NULL;
  READY(s);
  return sched_apply_opt(s, opt, append_opt);
}

static PyObject *Scheduler_get_optimized_ast(SchedulerObject *s, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name_override", NULL};
  PyObject *name_override = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:get_optimized_ast", kwlist, &name_override)) return NULL;
  READY(s);
  if (name_override != Py_None && !PyUnicode_Check(name_override)) return PyErr_Format(PyExc_TypeError, "name_override must be a str or None");
  return sched_get_optimized_ast(s, name_override);
}

#define GETTER(name, expr) static PyObject *Scheduler_get_##name(SchedulerObject *s, void *c) { UNUSED(c); READY(s); return expr; }
GETTER(rngs, sched_rngs(s))
GETTER(full_shape, sched_full_shape(s))
GETTER(axis_types, sched_axis_types(s))
GETTER(upcastable_dims, sched_int_dims(s, M(GLOBAL) | M(LOCAL) | M(LOOP)))
GETTER(unrollable_dims, sched_int_dims(s, M(GROUP_REDUCE) | M(REDUCE)))
GETTER(reduceops, sched_reduceops(s))
GETTER(reduceop, sched_reduceop(s))
GETTER(bufs, sched_bufs(s))
static PyObject *len_getter(SchedulerObject *s, unsigned mask) {
  Py_ssize_t n = sched_len_axes_of(s, mask);
  return n < 0 ? NULL : PyLong_FromSsize_t(n);
}
GETTER(shape_len, len_getter(s, ~0u))
GETTER(upcasted, len_getter(s, M(UPCAST) | M(UNROLL)))
GETTER(group_for_reduces, len_getter(s, M(GROUP_REDUCE)))

static PyObject *sched_output_shape(SchedulerObject *s) {
  PyObject *fs = sched_full_shape(s), *types = fs ? sched_axis_types(s) : NULL, *ret = types ? PyList_New(0) : NULL;
  for (Py_ssize_t i = 0; ret && i < PyList_GET_SIZE(fs); i++) {
    PyObject *t = PyList_GET_ITEM(types, i);
    PyObject *v = (t == AT(REDUCE) || t == AT(UNROLL) || t == AT(GROUP_REDUCE)) ? PY1 : PyList_GET_ITEM(fs, i);
    if (PyList_Append(ret, v) < 0) Py_CLEAR(ret);
  }
  Py_XDECREF(fs); Py_XDECREF(types);
  return ret;
}
static PyObject *Scheduler_get_output_shape(SchedulerObject *s, void *c) { UNUSED(c); READY(s); return sched_output_shape(s); }

static PyObject *Scheduler_get_ast(SchedulerObject *s, void *c) { UNUSED(c); READY(s); return Py_NewRef(s->ast); }
static int Scheduler_set_ast(SchedulerObject *s, PyObject *v, void *c) {
  UNUSED(c);
  if (!v || !UOp_Check(v)) { PyErr_SetString(PyExc_TypeError, "Scheduler.ast must be a UOp"); return -1; }
  sched_set_ast(s, Py_NewRef(v));
  return 0;
}
static PyObject *Scheduler_get_ren(SchedulerObject *s, void *c) { UNUSED(c); READY(s); return Py_NewRef(s->ren); }
static PyObject *Scheduler_get_applied_opts(SchedulerObject *s, void *c) { UNUSED(c); READY(s); return Py_NewRef(s->applied_opts); }
static int Scheduler_set_applied_opts(SchedulerObject *s, PyObject *v, void *c) {
  UNUSED(c);
  if (!v || !PyList_Check(v)) { PyErr_SetString(PyExc_TypeError, "Scheduler.applied_opts must be a list"); return -1; }
  Py_XSETREF(s->applied_opts, Py_NewRef(v));
  return 0;
}
static PyObject *Scheduler_get_dont_use_locals(SchedulerObject *s, void *c) { UNUSED(c); return PyBool_FromLong(s->dont_use_locals); }
static int Scheduler_set_dont_use_locals(SchedulerObject *s, PyObject *v, void *c) {
  UNUSED(c);
  int t = v ? PyObject_IsTrue(v) : -1;
  if (t < 0) { if (!v) PyErr_SetString(PyExc_TypeError, "can't delete dont_use_locals"); return -1; }
  s->dont_use_locals = (char)t;
  return 0;
}

static PyObject *Scheduler_get_tensor_core(SchedulerObject *s, void *c) { UNUSED(c); return Py_NewRef(s->tensor_core ? s->tensor_core : Py_None); }
static int Scheduler_set_tensor_core(SchedulerObject *s, PyObject *v, void *c) {
  UNUSED(c);
  Py_XSETREF(s->tensor_core, Py_NewRef(v ? v : Py_None));
  return 0;
}

static PyGetSetDef Scheduler_getset[] = {
  {"tensor_core", (getter)Scheduler_get_tensor_core, (setter)Scheduler_set_tensor_core, "the TensorCore the TC opt applied, or None", NULL},
  {"ast", (getter)Scheduler_get_ast, (setter)Scheduler_set_ast, "the kernel AST (a SINK)", NULL},
  {"ren", (getter)Scheduler_get_ren, NULL, "the renderer", NULL},
  {"applied_opts", (getter)Scheduler_get_applied_opts, (setter)Scheduler_set_applied_opts, "the opts applied so far", NULL},
  {"dont_use_locals", (getter)Scheduler_get_dont_use_locals, (setter)Scheduler_set_dont_use_locals, NULL, NULL},
  {"rngs", (getter)Scheduler_get_rngs, NULL, "the ranges that run more than once, ordered by axis type", NULL},
  {"shape_len", (getter)Scheduler_get_shape_len, NULL, NULL, NULL},
  {"full_shape", (getter)Scheduler_get_full_shape, NULL, NULL, NULL},
  {"axis_types", (getter)Scheduler_get_axis_types, NULL, NULL, NULL},
  {"upcastable_dims", (getter)Scheduler_get_upcastable_dims, NULL, NULL, NULL},
  {"unrollable_dims", (getter)Scheduler_get_unrollable_dims, NULL, NULL, NULL},
  {"reduceops", (getter)Scheduler_get_reduceops, NULL, NULL, NULL},
  {"reduceop", (getter)Scheduler_get_reduceop, NULL, NULL, NULL},
  {"bufs", (getter)Scheduler_get_bufs, NULL, NULL, NULL},
  {"output_shape", (getter)Scheduler_get_output_shape, NULL, NULL, NULL},
  {"upcasted", (getter)Scheduler_get_upcasted, NULL, NULL, NULL},
  {"group_for_reduces", (getter)Scheduler_get_group_for_reduces, NULL, NULL, NULL},
  {NULL, NULL, NULL, NULL, NULL}
};

#define VK(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
static PyMethodDef Scheduler_methods[] = {
  {"shape_str", (PyCFunction)Scheduler_shape_str, METH_NOARGS, "the axes as names: g0 g1 l0 R0 r0 u0 ..."},
  {"shape_str_to_axis", (PyCFunction)Scheduler_shape_str_to_axis, METH_O, NULL},
  {"copy", (PyCFunction)Scheduler_copy, METH_NOARGS, NULL},
  {"get_optimized_ast", VK(Scheduler_get_optimized_ast), "the AST with its ranges flattened and its KernelInfo (name, opts)"},
  {"_output_rngs", (PyCFunction)Scheduler_output_rngs, METH_NOARGS, NULL},
  {"_globalizable_rngs", (PyCFunction)Scheduler_globalizable_rngs, METH_NOARGS, NULL},
  {"convert_loop_to_global", (PyCFunction)Scheduler_convert_loop_to_global, METH_NOARGS, NULL},
  {"colors", (PyCFunction)Scheduler_colors, METH_NOARGS, NULL},
  {"colored_shape", (PyCFunction)Scheduler_colored_shape, METH_NOARGS, NULL},
  {"shift_to", VK(Scheduler_shift_to), "shift_to(rng, amount, new_type, top=False, input_new_rng=None)"},
  {"ranges_of", (PyCFunction)Scheduler_ranges_of, METH_VARARGS, NULL},
  {"axes_of", (PyCFunction)Scheduler_axes_of, METH_VARARGS, NULL},
  {"upcast_size", (PyCFunction)Scheduler_upcast_size, METH_NOARGS, NULL},
  {"real_axis", (PyCFunction)Scheduler_real_axis, METH_VARARGS, NULL},
  {"apply_opt", VK(Scheduler_apply_opt), "apply_opt(opt, append_opt=True)"},
  {NULL, NULL, 0, NULL}
};

static PyTypeObject Scheduler_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.Scheduler",
  .tp_doc = "Scheduler(ast, ren): tinygrad's postrange Scheduler, the axes of a kernel AST and the opts that reshape them.",
  .tp_basicsize = sizeof(SchedulerObject),
  .tp_dictoffset = offsetof(SchedulerObject, dict),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
  .tp_new = Scheduler_new,
  .tp_dealloc = (destructor)Scheduler_dealloc,
  .tp_traverse = (traverseproc)Scheduler_traverse,
  .tp_clear = (inquiry)Scheduler_clear,
  .tp_methods = Scheduler_methods,
  .tp_getset = Scheduler_getset,
};

/* ---- the Scheduler for C callers (heuristic.c, search.c): the same functions its Python methods call ---- */

int scheduler_check(PyObject *o) { return PyObject_TypeCheck(o, &Scheduler_Type); }
static SchedulerObject *ready_sched(PyObject *k) {
  if (!scheduler_check(k)) { PyErr_Format(PyExc_TypeError, "need a tinyc.Scheduler, not %.100s", Py_TYPE(k)->tp_name); return NULL; }
  return sched_ready((SchedulerObject *)k) < 0 ? NULL : (SchedulerObject *)k;
}
#define SCHED_OR_NULL(k) SchedulerObject *s_ = ready_sched(k); if (!s_) return NULL
PyObject *scheduler_copy(PyObject *k) { SCHED_OR_NULL(k); return Scheduler_copy(s_, NULL); }
PyObject *scheduler_apply_opt(PyObject *k, PyObject *opt, int append_opt) { SCHED_OR_NULL(k); return sched_apply_opt(s_, opt, append_opt); }
PyObject *scheduler_ast(PyObject *k) { SCHED_OR_NULL(k); return s_->ast; }
PyObject *scheduler_ren(PyObject *k) { SCHED_OR_NULL(k); return s_->ren; }
PyObject *scheduler_applied_opts(PyObject *k) { SCHED_OR_NULL(k); return s_->applied_opts; }
PyObject *scheduler_rngs(PyObject *k) { SCHED_OR_NULL(k); return sched_rngs(s_); }
PyObject *scheduler_full_shape(PyObject *k) { SCHED_OR_NULL(k); return sched_full_shape(s_); }
PyObject *scheduler_output_shape(PyObject *k) { SCHED_OR_NULL(k); return sched_output_shape(s_); }
PyObject *scheduler_axes_of(PyObject *k, unsigned mask) { SCHED_OR_NULL(k); return sched_axes_of_mask(s_, mask); }
PyObject *scheduler_ranges_of(PyObject *k, unsigned mask) { SCHED_OR_NULL(k); return sched_ranges_of_mask(s_, mask); }
PyObject *scheduler_int_dims(PyObject *k, unsigned mask) { SCHED_OR_NULL(k); return sched_int_dims(s_, mask); }
PyObject *scheduler_prod_axes(PyObject *k, unsigned mask) { SCHED_OR_NULL(k); return sched_prod_axes(s_, mask); }
PyObject *scheduler_reduceop(PyObject *k) { SCHED_OR_NULL(k); return sched_reduceop(s_); }
PyObject *scheduler_bufs(PyObject *k) { SCHED_OR_NULL(k); return sched_bufs(s_); }
PyObject *scheduler_axis_types(PyObject *k) { SCHED_OR_NULL(k); return sched_axis_types(s_); }
int scheduler_real_axis(PyObject *k, PyObject *opt, Py_ssize_t *out) {
  SchedulerObject *s = ready_sched(k);
  if (!s) return -1;
  if (!Opt_Check(opt)) { PyErr_SetString(PyExc_TypeError, "real_axis needs an Opt"); return -1; }
  return sched_real_axis(s, (OptObject *)opt, out);
}
PyObject *scheduler_get_optimized_ast(PyObject *k, const char *name_override) {
  SCHED_OR_NULL(k);
  PyObject *name = name_override ? PyUnicode_FromString(name_override) : Py_NewRef(Py_None);
  PyObject *ret = name ? sched_get_optimized_ast(s_, name) : NULL;
  Py_XDECREF(name);
  return ret;
}

/* ---- apply_opts, make_images ---- */

static long noopt_level;   /* tinygrad's NOOPT, a ContextVar (from the environment at import; Context sets it) */
static long beam_amount;   /* BEAM, likewise */
PyObject *(*postrange_beam_hook)(PyObject *k, UOp *ast, PyObject *ren, long amt);

/* opts_to_apply of the KernelInfo: a new reference, None when there is no KernelInfo */
static PyObject *opts_to_apply(UOp *ast) {
  return ast->arg == Py_None ? Py_NewRef(Py_None) : getattr_literal(ast->arg, "opts_to_apply");
}

static int apply_each(SchedulerObject *k, PyObject *opts) {
  PyObject *seq = PySequence_Fast(opts, "opts_to_apply must be a sequence");
  if (!seq) return -1;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *r = sched_apply_opt(k, PySequence_Fast_GET_ITEM(seq, i), 1);
    if (!r) { Py_DECREF(seq); return -1; }
    Py_DECREF(r);
  }
  Py_DECREF(seq);
  return 0;
}

/* the heuristics run on a kernel no opts were applied to yet (no KernelInfo, or applied_opts == ()) */
static int no_opts_applied(UOp *ast) {
  if (ast->arg == Py_None) return 1;
  PyObject *ao = getattr_literal(ast->arg, "applied_opts"), *empty = ao ? PyTuple_New(0) : NULL;
  int ret = empty ? PyObject_RichCompareBool(ao, empty, Py_EQ) : -1;
  Py_XDECREF(ao); Py_XDECREF(empty);
  return ret;
}

/* hand_coded_optimizations does not do kernels of several blocks (a BUFFERIZE inside) */
static int has_bufferize(UOp *ast) {
  PyObject *bs = uop_backward_slice(ast), *key, *val;
  Py_ssize_t pos = 0;
  if (!bs) return -1;
  while (PyDict_Next(bs, &pos, &key, &val)) if (UOp_Check(key) && ((UOp *)key)->op == OP_BUFFERIZE) return 1;
  return 0;
}

/* the opts tinygrad's apply_opts chooses: the explicit ones, else BEAM's search, else the heuristics unless NOOPT */
static SchedulerObject *choose_opts(SchedulerObject *k, UOp *ast, PyObject *ren) {
  PyObject *oa = opts_to_apply(ast);
  if (!oa) return NULL;
  int err = 0;
  if (oa != Py_None) err = apply_each(k, oa);
  else if (beam_amount >= 1 && postrange_beam_hook) {
    PyObject *best = postrange_beam_hook((PyObject *)k, ast, ren, beam_amount);
    Py_DECREF(oa);
    Py_DECREF(k);
    return (SchedulerObject *)best;
  } else if (!noopt_level) {
    int fresh = no_opts_applied(ast), bufz = fresh > 0 ? has_bufferize(ast) : 0;
    if (fresh < 0 || bufz < 0) err = -1;
    else if (fresh && !bufz) {
      PyObject *h = hand_coded_optimizations((PyObject *)k);
      Py_DECREF(oa);
      Py_DECREF(k);
      return (SchedulerObject *)h;
    }
  }
  Py_DECREF(oa);
  if (err) { Py_DECREF(k); return NULL; }
  return k;
}

/* the name the optimized kernel keeps: the KernelInfo's, unless it is the default "test" */
static PyObject *kept_name(UOp *ast) {
  if (ast->arg == Py_None) return Py_NewRef(Py_None);
  PyObject *n = getattr_literal(ast->arg, "name");
  if (n && PyUnicode_Check(n) && PyUnicode_CompareWithASCIIString(n, "test") == 0) Py_SETREF(n, Py_NewRef(Py_None));
  return n;
}

UOp *postrange_apply_opts(UOp *ast, PyObject *ren) {
  if (uop_tag(ast) != Py_None) return (UOp *)Py_NewRef(ast);
  PyObject *args = PyTuple_Pack(2, (PyObject *)ast, ren);
  SchedulerObject *k = args ? (SchedulerObject *)Scheduler_new(&Scheduler_Type, args, NULL) : NULL;
  Py_XDECREF(args);
  if (!k) return NULL;
  if (sched_convert_loop_to_global(k) < 0 || !(k = choose_opts(k, ast, ren))) { Py_XDECREF(k); return NULL; }
  PyObject *ret = NULL, *name = ready_sched((PyObject *)k) ? kept_name(ast) : NULL;
  if (name) ret = sched_get_optimized_ast(k, name);
  Py_XDECREF(name); Py_DECREF(k);
  return (UOp *)ret;
}

static PyObject *py_apply_opts(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *ast, *ren;
  if (!PyArg_ParseTuple(args, "O!O:apply_opts", &UOp_Type, &ast, &ren)) return NULL;
  return (PyObject *)postrange_apply_opts((UOp *)ast, ren);
}

/* ---- make_images: with IMAGE=1 on a QCOM or CL renderer, small float buffers become one-row float4 images ---- */

static long image_mode;   /* tinygrad's IMAGE, read once at import as the other ContextVars here */
static PatternMatcher *make_image_pm, *undo_image_store_pm;   /* borrowed: the registry keeps them */

/* a float buffer under 65536 elements of a multiple of 64 bytes becomes imagef((1, size//4, 4), nbytes); ctx (arg ->
 * dtype) keeps what it was */
RULE(make_image, dg) {
  DType *dt = dg->dtype;
  if (!dt->is_ptr || dt->base != DTYPE(FLOAT32) || dtype_is_image(dt) || dt->size >= 65536) return NULL;
  if (dt->size == -1) return (UOp *)PyErr_Format(PyExc_RuntimeError, "can't get nbytes of a pointer with unlimited size");
  long long nbytes = (long long)dt->size * dtype_itemsize(dt), width = dt->size >= 0 ? dt->size / 4 : -((3 - dt->size) / 4);
  if (((nbytes % 64) + 64) % 64 != 0) return NULL;
  PyObject *shape = pool_keep(Py_BuildValue("(iLi)", 1, width, 4));
  DType *image = shape ? dtype_image(false, shape, (Py_ssize_t)nbytes) : NULL;
  if (!image || PyDict_SetItem(ctx, dg->arg, (PyObject *)dt) < 0) return NULL;
  return KEEP(uop_new(dg->op, image, dg->src, dg->nsrc, dg->arg, uop_tag(dg)));
}

/* a store to a made image whose index walks no range of a multiple of 4 cannot write whole texels: it stores to the
 * buffer as it was */
RULE(undo_image_store, st, idx, dg) {
  PyObject *was = PyDict_GetItemWithError(ctx, dg->arg);
  if (!was) return NULL;
  UOp *i = idx->nsrc >= 2 ? u_get_idx(idx->src[1]) : NULL;
  PtrVec terms = {0};
  int walks = i && uop_split_uop(i, OP_ADD, &terms) == 0 ? 0 : -1;
  for (Py_ssize_t k = 0; walks == 0 && k < terms.len; k++) {
    UOp *c = terms.items[k];
    if (c->op == OP_RANGE) walks = n_eqi(n_mod(n_add(vmax(c), n_int(1)), n_int(4)), 0);
  }
  ptrvec_free(&terms);
  if (walks) return NULL;   /* an error stays set for the engine */
  UOp *buf = KEEP(uop_new(dg->op, (DType *)was, dg->src, dg->nsrc, dg->arg, uop_tag(dg)));
  UOp *isrc[2] = {buf, idx->src[1]}, *new_idx = u_replace_src(idx, isrc, 2), *ssrc[2] = {new_idx, st->src[1]};
  return u_replace_src(st, ssrc, 2);
}

static const RuleDef make_image_defs[] = {R("UPat(Ops.DEFINE_GLOBAL, name='dg')", make_image)};
static const RuleDef undo_image_store_defs[] = {
  R("UPat(Ops.DEFINE_GLOBAL, name='dg').index(UPat(), name='idx').store(UPat(), name='st')", undo_image_store),
};

/* ren.device is one of tinygrad's image devices: 1, 0 or -1 */
static int image_device(PyObject *ren) {
  PyObject *dev = getattr_literal(ren, "device");
  int ret = !dev ? -1 : PyUnicode_Check(dev) && (PyUnicode_CompareWithASCIIString(dev, "QCOM") == 0 || PyUnicode_CompareWithASCIIString(dev, "CL") == 0);
  Py_XDECREF(dev);
  return ret;
}

UOp *postrange_make_images(UOp *ast, PyObject *ren) {
  int on = image_mode == 1 ? image_device(ren) : 0;
  if (on <= 0) return on < 0 ? NULL : (UOp *)Py_NewRef(ast);
  PyObject *dg_types = PyDict_New();
  UOp *made = dg_types ? graph_rewrite(ast, make_image_pm, dg_types, false, NULL) : NULL;
  UOp *ret = made ? graph_rewrite(made, undo_image_store_pm, dg_types, false, NULL) : NULL;
  Py_XDECREF(made); Py_XDECREF(dg_types);
  return ret;
}

static PyObject *py_make_images(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *ast, *ren;
  if (!PyArg_ParseTuple(args, "O!O:make_images", &UOp_Type, &ast, &ren)) return NULL;
  return (PyObject *)postrange_make_images((UOp *)ast, ren);
}

static PyMethodDef postrange_functions[] = {
  {"apply_opts", py_apply_opts, METH_VARARGS, "apply_opts(ast, ren): the kernel with its opts applied (opts_to_apply, else BEAM, else the heuristics unless NOOPT) and named"},
  {"make_images", py_make_images, METH_VARARGS, "make_images(ast, ren): with IMAGE=1 on QCOM/CL, small float buffers as float4 images"},
  {NULL, NULL, 0, NULL}
};

/* ---- remove_tags: every tagged node loses its tag ---- */

RULE(remove_tag, x) {
  if (uop_tag(x) == Py_None) return NULL;
  return KEEP(uop_new(x->op, x->dtype, x->src, x->nsrc, x->arg, NULL));
}

static const RuleDef remove_tags_defs[] = {
  R("UPat(GroupOp.All, name='x')", remove_tag),
};

static PyObject *axis_dict(const int *axes, const char *const *vals, int n, bool ints, const long *ivals) {
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < n; i++) {
    PyObject *v = ints ? PyLong_FromLong(ivals[i]) : PyUnicode_FromString(vals[i]);
    if (!v || PyDict_SetItem(d, axistype_members[axes[i]], v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

int tinyc_init_postrange(PyObject *m) {
  static const int letter_axes[] = {AXIS_GLOBAL, AXIS_THREAD, AXIS_LOCAL, AXIS_WARP, AXIS_LOOP, AXIS_UPCAST, AXIS_GROUP_REDUCE,
                                    AXIS_REDUCE, AXIS_UNROLL, AXIS_OUTER};
  static const char *const letters[] = {"g", "t", "l", "w", "L", "u", "G", "R", "r", "O"};
  static const char *const colors[] = {"blue", "BLUE", "cyan", "CYAN", "WHITE", "yellow", "RED", "red", "magenta", "green"};
  /* LOCAL and GROUP_REDUCE share a position: the order of the ranges within it is their arg's */
  static const int pos_axes[] = {AXIS_LOOP, AXIS_THREAD, AXIS_GLOBAL, AXIS_WARP, AXIS_LOCAL, AXIS_UPCAST, AXIS_GROUP_REDUCE,
                                 AXIS_REDUCE, AXIS_UNROLL, AXIS_OUTER};
  static const long pos[] = {-1, 0, 0, 1, 2, 3, 2, 4, 5, -2};
  if (!(axis_letters = axis_dict(letter_axes, letters, 10, false, NULL)) || !(axis_colors = axis_dict(letter_axes, colors, 10, false, NULL)) ||
      !(axis_to_pos = axis_dict(pos_axes, NULL, 10, true, pos)) || !(kernel_cnt = PyDict_New())) return -1;
  if (ctxvar_int("ALLOW_TF32", &allow_tf32) < 0) return -1;
  if (ctxvar_int("NOOPT", &noopt_level) < 0) return -1;
  if (ctxvar_int("IMAGE", &image_mode) < 0) return -1;
  if (native_register("make_image", make_image_pm = pm_from_defs(make_image_defs, N(make_image_defs))) < 0 ||
      native_register("undo_image_store", undo_image_store_pm = pm_from_defs(undo_image_store_defs, N(undo_image_store_defs))) < 0) return -1;
  if (ctxvar_int("BEAM", &beam_amount) < 0) return -1;
  for (int i = 0; i < 3; i++) if (!(small_ints[i] = PyLong_FromLong(i == 2 ? -1 : i))) return -1;
  if (!(uop_range_fn = getattr_literal((PyObject *)&UOp_Type, "range")) ||
      !(uop_invalid_fn = getattr_literal((PyObject *)&UOp_Type, "invalid"))) return -1;
  PatternMatcher *rt = pm_from_defs(remove_tags_defs, N(remove_tags_defs));
  if (rt) pm_set_form_checked(rt);   /* reads no sources */
  if (!rt || native_register("postrange_remove_tags", rt) < 0) return -1;
  remove_tags_pm = rt;   /* borrowed: the registry keeps it */
  if (PyType_Ready(&Scheduler_Type) < 0 || PyDict_SetItemString(Scheduler_Type.tp_dict, "kernel_cnt", kernel_cnt) < 0) return -1;
  PyType_Modified(&Scheduler_Type);
  if (tinyc_add(m, "Scheduler", (PyObject *)&Scheduler_Type) < 0) return -1;
  return PyModule_AddFunctions(m, postrange_functions);
}
