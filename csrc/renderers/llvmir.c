/* tinygrad/renderer/llvmir.py's LLVMRenderer (the CPU flavour) in C: linearized UOps -> LLVM IR text, the same text as
 * tinygrad's for the same uops. The backend is data: the type names (ldt), the op tables (tinygrad's unsigned_lop,
 * signed_lop, float_lop), and one short function per string rule of base_rewrite, chosen by op from a table built at init
 * (RULES). A render walks the uops once: each node gets its value name (%v0, %data0, a constant's literal) and its lines.
 *
 * Names and text are C strings here (no Python objects per node); only the constants go through Python, for tinygrad's
 * truncate and float repr. Every source, arg and dtype a rule reads is checked first; what tinygrad cannot render (a
 * pattern that does not match, a KeyError in its tables) raises RuntimeError "failed to render ...". WMMA (tinygrad's
 * AMX path) raises NotImplementedError. The compiler is the device layer's CPULLVMCompiler, found by name in tinyc._C
 * when a renderer is made (no include of the layer above). */
#include "renderer.h"
#include "../uop/form.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tables ---- */

static const char *const scalar_ldt[DT_COUNT] = {
  [DT_VOID] = "void", [DT_BOOL] = "i1", [DT_INT8] = "i8", [DT_INT16] = "i16", [DT_INT32] = "i32", [DT_INT64] = "i64",
  [DT_UINT8] = "i8", [DT_UINT16] = "i16", [DT_UINT32] = "i32", [DT_UINT64] = "i64", [DT_FP8E4M3] = "i8", [DT_FP8E5M2] = "i8",
  [DT_FLOAT16] = "half", [DT_BFLOAT16] = "bfloat", [DT_FLOAT32] = "float", [DT_FLOAT64] = "double",
};

/* lop[dtype][op]: one row per op, a column per kind of dtype (NULL: tinygrad's table has no entry, a KeyError) */
#define FMF " nsz arcp contract afn"
typedef struct { Op op; const char *unsigned_, *signed_, *float_; } LOp;
static const LOp lop_table[] = {
  {OP_ADD, "add", "add nsw", "fadd" FMF},          {OP_MUL, "mul", "mul", "fmul" FMF},
  {OP_IDIV, "udiv", "sdiv", NULL},                 {OP_MOD, "urem", "srem", NULL},
  {OP_CMPLT, "icmp ult", "icmp slt", "fcmp" FMF " ult"}, {OP_CMPNE, "icmp ne", "icmp ne", "fcmp" FMF " une"},
  {OP_CMPEQ, "icmp eq", "icmp eq", "fcmp" FMF " oeq"},   {OP_OR, "or", "or", NULL},
  {OP_AND, "and", "and", NULL},                    {OP_XOR, "xor", "xor", NULL},
  {OP_SHL, "shl", "shl", NULL},                    {OP_SHR, "lshr", "ashr", NULL},
  {OP_FDIV, NULL, NULL, "fdiv" FMF},
};

static const char FOOTER[] = "attributes #0 = { alwaysinline nounwind \"no-builtins\" \"no-trapping-math\"=\"true\" }";

/* ---- text ---- */

typedef struct { char *s; size_t len, cap; bool oom; } Text;

static void text_vadd(Text *t, const char *fmt, va_list va) {
  va_list again;
  va_copy(again, va);
  int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, va);
  if (n >= 0 && t->len + (size_t)n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 4096;
    while (cap < t->len + (size_t)n + 1) cap *= 2;
    char *s = realloc(t->s, cap);
    if (!s) t->oom = true;
    else t->s = s, t->cap = cap, vsnprintf(t->s + t->len, t->cap - t->len, fmt, again);
  }
  if (n >= 0 && !t->oom) t->len += (size_t)n;
  va_end(again);
}
static void text_add(Text *t, const char *fmt, ...) {
  va_list va;
  va_start(va, fmt);
  text_vadd(t, fmt, va);
  va_end(va);
}

/* ---- the state of one render ---- */

typedef struct { char s[64]; } TypeName;   /* one ldt result: "<16 x float>*" fits */

typedef struct {
  PtrMap names;          /* UOp -> its value name (char *, owned by `owned`) */
  PtrVec owned;
  Text body, args;       /* the kernel's lines after "{", the argument list */
  long vc;               /* the %vN counter */
  DType *bad_dtype;      /* a dtype ldt has no name for (tinygrad's KeyError) */
  UOp *cur;
} Render;

/* tinygrad's ldt: the LLVM type of a dtype; an unknown one is remembered and raises after the rule */
static const char *ldt(Render *st, DType *dt, TypeName *out) {
  DType *sc = dtype_scalar(dt);
  if (dtype_vcount(dt) > 1) {
    TypeName inner;
    snprintf(out->s, sizeof(out->s), "<%d x %s>", dtype_vcount(dt), ldt(st, sc, &inner));
  } else if (dt->is_ptr) {
    TypeName inner;
    snprintf(out->s, sizeof(out->s), "%s*", ldt(st, dt->base, &inner));
  } else if (sc->id < DT_COUNT && sc->id != DT_INDEX && scalar_dtypes[sc->id] == sc) {
    snprintf(out->s, sizeof(out->s), "%s", scalar_ldt[sc->id]);
  } else {
    st->bad_dtype = dt;
    snprintf(out->s, sizeof(out->s), "?");
  }
  return out->s;
}

static const char *keep_name(Render *st, UOp *u, char *name) {
  if (!name || ptrvec_push(&st->owned, name) < 0) { free(name); PyErr_NoMemory(); return NULL; }
  if (ptrmap_set(&st->names, u, name) < 0) { PyErr_NoMemory(); return NULL; }
  return name;
}
static const char *set_name(Render *st, UOp *u, const char *fmt, ...) {
  char buf[256];
  va_list va;
  va_start(va, fmt);
  vsnprintf(buf, sizeof(buf), fmt, va);
  va_end(va);
  return keep_name(st, u, strdup(buf));
}

/* the name a rule reads for a source: tinygrad's ctx[x], a KeyError-like failure when it was never rendered */
static const char *name_of(Render *st, UOp *u) {
  const char *n = u ? ptrmap_get(&st->names, u) : NULL;
  if (!n && !PyErr_Occurred())
    PyErr_Format(PyExc_RuntimeError, "failed to render %s: a source (Ops.%s) has no value", op_names[st->cur->op], u ? op_names[u->op] : "?");
  return n;
}

/* str(obj) as a kept C string */
static const char *name_from_str(Render *st, UOp *u, PyObject *obj, const char *prefix) {
  PyObject *s = obj ? PyObject_Str(obj) : NULL;
  const char *utf8 = s ? PyUnicode_AsUTF8(s) : NULL;
  const char *ret = utf8 ? set_name(st, u, "%s%s", prefix, utf8) : NULL;
  Py_XDECREF(s);
  return ret;
}

/* ---- the failure of a rule ---- */

static int failed(Render *st, UOp *x) {
  if (PyErr_Occurred()) return -1;
  PyObject *srcs = PyList_New(0);
  for (uint32_t i = 0; srcs && i < x->nsrc; i++)
    if (PyList_Append(srcs, (PyObject *)x->src[i]->dtype) < 0) Py_CLEAR(srcs);
  if (srcs) PyErr_Format(PyExc_RuntimeError, "failed to render Ops.%s with %R srcs %R", op_names[x->op], (PyObject *)x->dtype, srcs);
  Py_XDECREF(srcs);
  UNUSED(st);
  return -1;
}

static UOp *src_n(UOp *x, uint32_t i) { return i < x->nsrc ? x->src[i] : NULL; }

/* lop[scalar dtype][op]: NULL when tinygrad's table has none */
static const char *lop(DType *dt, Op op) {
  DType *sc = dtype_scalar(dt);
  if (dt->is_ptr || sc->id >= DT_COUNT || scalar_dtypes[sc->id] != sc || sc->id == DT_INDEX || sc->id == DT_VOID) return NULL;
  for (size_t i = 0; i < sizeof(lop_table) / sizeof(lop_table[0]); i++) {
    if (lop_table[i].op != op) continue;
    if (dtype_is_float(sc)) return lop_table[i].float_;
    return sc->id == DT_BOOL || dtype_is_unsigned(sc) ? lop_table[i].unsigned_ : lop_table[i].signed_;
  }
  return NULL;
}

/* tinygrad's lcast: the LLVM cast instruction from one dtype to another, NULL where it has none */
static const char *lcast(DType *in, DType *out) {
  int isz = dtype_itemsize(in), osz = dtype_itemsize(out);
  if (dtype_is_float(in)) {
    if (dtype_is_float(out)) return osz > isz ? "fpext" : "fptrunc";
    if (dtype_is_int(out)) return dtype_is_unsigned(out) ? "fptoui" : "fptosi";
  }
  if (dtype_is_unsigned(in) || dtype_is_bool(in)) {
    if (dtype_is_float(out)) return "uitofp";
    if (dtype_is_int(out)) return osz < isz ? "trunc" : "zext";
  }
  if (dtype_is_int(in)) {
    if (dtype_is_float(out)) return "sitofp";
    if (dtype_is_int(out)) return osz < isz ? "trunc" : "sext";
  }
  return NULL;
}

/* ---- the string rules (tinygrad's base_rewrite), one function each: 0, or -1 ---- */

typedef int (*RuleFn)(Render *st, UOp *x, const char *xn);
#define NAMES1(a) const char *a##n = name_of(st, a); if (!a##n) return -1
#define LINE(...) (text_add(&st->body, __VA_ARGS__), 0)

static int r_index(Render *st, UOp *x, const char *xn) {
  UOp *buf = src_n(x, 0), *idx = src_n(x, 1);
  if (!idx || !x->dtype->is_ptr) return failed(st, x);
  NAMES1(buf); NAMES1(idx);
  TypeName a, b, c;
  return LINE("\n  %s = getelementptr inbounds %s, %s %s, %s %s", xn, ldt(st, x->dtype->base, &a), ldt(st, buf->dtype, &b), bufn,
              ldt(st, idx->dtype, &c), idxn);
}

/* the INDEX under a load's pointer (the pointer or a CAST of it) when it carries a gate: INDEX(buf, idx, mask) */
static UOp *gated_index(UOp *idx) {
  UOp *i = idx->op == OP_CAST && idx->nsrc == 1 ? idx->src[0] : idx;
  return i->op == OP_INDEX && i->nsrc == 3 ? i : NULL;
}

static int r_gated_load(Render *st, UOp *x, const char *xn, UOp *idx, UOp *mask, UOp *alt) {
  NAMES1(idx); NAMES1(mask); NAMES1(alt);
  const char *b = xn + 1;   /* the block labels: the value's name without its % */
  TypeName t, it;
  ldt(st, x->dtype, &t), ldt(st, idx->dtype, &it);
  return LINE("\n  br label %s_entry\n%s_entry:\n  br i1 %s, label %s_load, label %s_exit\n%s_load:\n  %s_yes = load %s, %s %s\n"
              "  br label %s_exit\n%s_exit:\n  %s = phi %s [%s_yes, %s_load], [%s, %s_entry]",
              xn, b, maskn, xn, xn, b, xn, t.s, it.s, idxn, xn, b, xn, t.s, xn, xn, altn, xn);
}

static int r_load(Render *st, UOp *x, const char *xn) {
  UOp *idx = src_n(x, 0), *gate = idx && x->nsrc >= 2 ? gated_index(idx) : NULL;
  if (!idx) return failed(st, x);
  if (gate) return r_gated_load(st, x, xn, idx, gate->src[2], x->src[1]);
  NAMES1(idx);
  TypeName a, b;
  return LINE("\n  %s = load %s, %s %s", xn, ldt(st, x->dtype, &a), ldt(st, idx->dtype, &b), idxn);
}

static int r_store(Render *st, UOp *x, const char *xn) {
  UNUSED(xn);
  UOp *ptr = src_n(x, 0), *val = src_n(x, 1);
  if (!val) return failed(st, x);
  NAMES1(ptr); NAMES1(val);
  TypeName a, b;
  return LINE("\n  store %s %s, %s %s", ldt(st, val->dtype, &a), valn, ldt(st, ptr->dtype, &b), ptrn);
}

static int r_gep(Render *st, UOp *x, const char *xn) {
  UOp *v = src_n(x, 0);
  if (!v || !PyTuple_Check(x->arg) || PyTuple_GET_SIZE(x->arg) < 1 || !PyLong_Check(PyTuple_GET_ITEM(x->arg, 0))) return failed(st, x);
  long i = PyLong_AsLong(PyTuple_GET_ITEM(x->arg, 0));
  if (i == -1 && PyErr_Occurred()) return -1;
  NAMES1(v);
  TypeName a;
  return LINE("\n  %s = extractelement %s %s, i32 %ld", xn, ldt(st, v->dtype, &a), vn, i);
}

static bool all_same_src(UOp *x) {
  for (uint32_t i = 1; i < x->nsrc; i++) if (x->src[i] != x->src[0]) return false;
  return x->nsrc >= 1;
}

/* VECTORIZE of one value repeated: a broadcast by shufflevector; else one insertelement per lane */
static int r_vectorize(Render *st, UOp *x, const char *xn) {
  TypeName a, b;
  if (all_same_src(x)) {
    UOp *y = x->src[0];
    NAMES1(y);
    ldt(st, y->dtype, &a);
    return LINE("\n  %s_z = insertelement <1 x %s> poison, %s %s, i32 0\n  %s = shufflevector <1 x %s> %s_z, <1 x %s> poison, <%d x i32> zeroinitializer",
                xn, a.s, a.s, yn, xn, a.s, xn, a.s, x->dtype->count);
  }
  if (x->nsrc == 0) return failed(st, x);
  ldt(st, x->dtype, &a);
  for (uint32_t i = 0; i < x->nsrc; i++) {
    UOp *u = x->src[i];
    NAMES1(u);
    text_add(&st->body, "\n  %s", xn);
    if (i + 1 != x->nsrc) text_add(&st->body, "_%u", i);
    text_add(&st->body, " = insertelement %s ", a.s);
    if (i) text_add(&st->body, "%s_%u", xn, i - 1);
    else text_add(&st->body, "poison");
    text_add(&st->body, ", %s %s, i32 %u", ldt(st, u->dtype, &b), un, i);
  }
  return 0;
}

static int r_bitcast(Render *st, UOp *x, const char *xn) {
  UOp *y = src_n(x, 0);
  if (!y) return failed(st, x);
  NAMES1(y);
  TypeName a, b;
  return LINE("\n  %s = bitcast %s %s to %s", xn, ldt(st, y->dtype, &a), yn, ldt(st, x->dtype, &b));
}

/* CAST: to bool it is CMPNE with 0 (tinygrad matches dtypes.bool on the scalar, so vectors of bool too) */
static int r_cast(Render *st, UOp *x, const char *xn) {
  UOp *y = src_n(x, 0);
  if (!y) return failed(st, x);
  NAMES1(y);
  TypeName a, b;
  bool to_bool = dtype_scalar(x->dtype) == DTYPE(BOOL) || x->dtype == DTYPE(BOOL);
  const char *inst = to_bool ? lop(y->dtype, OP_CMPNE) : lcast(y->dtype, x->dtype);
  if (!inst) return failed(st, x);
  if (to_bool) return LINE("\n  %s = %s %s %s, zeroinitializer", xn, inst, ldt(st, y->dtype, &a), yn);
  return LINE("\n  %s = %s %s %s to %s", xn, inst, ldt(st, y->dtype, &a), yn, ldt(st, x->dtype, &b));
}

static int r_trunc(Render *st, UOp *x, const char *xn) {
  UOp *y = src_n(x, 0);
  if (!y) return failed(st, x);
  NAMES1(y);
  TypeName a, b, c;
  return LINE("\n  %s = call %s @llvm.trunc.%s(%s %s)", xn, ldt(st, x->dtype, &a), ldt(st, dtype_scalar(x->dtype), &b),
              ldt(st, y->dtype, &c), yn);
}

static int r_binary(Render *st, UOp *x, const char *xn) {
  UOp *a = src_n(x, 0), *b = src_n(x, 1);
  const char *inst = b ? lop(a->dtype, (Op)x->op) : NULL;
  if (!inst) return failed(st, x);
  NAMES1(a); NAMES1(b);
  TypeName t;
  return LINE("\n  %s = %s %s %s, %s", xn, inst, ldt(st, a->dtype, &t), an, bn);
}

static int r_where(Render *st, UOp *x, const char *xn) {
  UOp *c = src_n(x, 0), *t = src_n(x, 1), *f = src_n(x, 2);
  if (!f) return failed(st, x);
  NAMES1(c); NAMES1(t); NAMES1(f);
  TypeName a, b, d;
  return LINE("\n  %s = select %s %s, %s %s, %s %s", xn, ldt(st, c->dtype, &a), cn, ldt(st, t->dtype, &b), tn, ldt(st, f->dtype, &d), fn);
}

/* tinygrad's range_str: the range's ids joined by "_", a negative one as m<abs> */
static int range_str(UOp *r, char *out, size_t n) {
  Py_ssize_t k = PyTuple_Check(r->arg) ? PyTuple_GET_SIZE(r->arg) : 0;
  size_t len = 0;
  out[0] = 0;
  if (k < 1) { PyErr_Format(PyExc_RuntimeError, "failed to render Ops.RANGE: its arg must be a tuple ending in its AxisType"); return -1; }
  for (Py_ssize_t i = 0; i < k - 1; i++) {
    PyObject *id = PyTuple_GET_ITEM(r->arg, i);
    long long v = PyLong_Check(id) ? PyLong_AsLongLong(id) : (PyErr_SetString(PyExc_TypeError, "a RANGE's ids must be ints"), -1);
    if (PyErr_Occurred()) return -1;
    int w = snprintf(out + len, n - len, "%s%s%lld", i ? "_" : "", v < 0 ? "m" : "", v < 0 ? -v : v);
    if (w < 0 || (size_t)w >= n - len) { PyErr_SetString(PyExc_ValueError, "a RANGE's arg is too long to render"); return -1; }
    len += (size_t)w;
  }
  return 0;
}

static int r_range(Render *st, UOp *r, const char *rn) {
  UOp *end = src_n(r, 0);
  char rs[200];
  if (!end) return failed(st, r);
  if (range_str(r, rs, sizeof(rs)) < 0) return -1;
  NAMES1(end);
  TypeName t;
  ldt(st, r->dtype, &t);
  return LINE("\n  br label %%loop_entry_%s\nloop_entry_%s:\n  br label %%loop_latch_%s\nloop_latch_%s:\n"
              "  %s = phi %s [ 0, %%loop_entry_%s ], [ %sphi, %%loop_footer_%s ]\n  %sphi = add %s %s, 1\n"
              "  %scmp = icmp ult %s %s, %s\n  br i1 %scmp, label %%loop_body_%s, label %%loop_exit_%s\nloop_body_%s:",
              rs, rs, rs, rs, rn, t.s, rs, rn, rs, rn, t.s, rn, rn, t.s, rn, endn, rn, rs, rs, rs);
}

/* END(x, RANGE): exactly the two sources tinygrad's pattern names */
static int r_end(Render *st, UOp *x, const char *xn) {
  UNUSED(xn);
  UOp *r = src_n(x, 1);
  char rs[200];
  if (x->nsrc != 2 || r->op != OP_RANGE) return failed(st, x);
  if (range_str(r, rs, sizeof(rs)) < 0) return -1;
  return LINE("\n  br label %%loop_footer_%s\nloop_footer_%s:\n  br label %%loop_latch_%s\nloop_exit_%s:", rs, rs, rs, rs);
}

static int r_if(Render *st, UOp *x, const char *xn) {
  UOp *c = src_n(x, 0);
  if (!c) return failed(st, x);
  NAMES1(c);
  return LINE("\n  br i1 %s, label %%ifbody_%s, label %%ifskip_%s\nifbody_%s:", cn, xn + 1, xn + 1, xn + 1);
}

static int r_endif(Render *st, UOp *x, const char *xn) {
  UNUSED(xn);
  UOp *i = src_n(x, 0);
  if (!i) return failed(st, x);
  NAMES1(i);
  return LINE("\n  br label %%ifskip_%s\nifskip_%s:", in + 1, in + 1);
}

static int r_barrier(Render *st, UOp *x, const char *xn) { UNUSED(x); UNUSED(xn); return LINE("\n"); }

static int r_wmma(Render *st, UOp *x, const char *xn) {
  UNUSED(st); UNUSED(x); UNUSED(xn);
  PyErr_SetString(PyExc_NotImplementedError, "LLVMRenderer: WMMA (tinygrad's AMX tensor cores) is not rendered by tinyc");
  return -1;
}

/* the rule of each op, tinygrad's base_rewrite in its order of precedence (a binary op: r_binary) */
static const struct { Op op; RuleFn fn; } RULE_TABLE[] = {
  {OP_INDEX, r_index}, {OP_LOAD, r_load}, {OP_STORE, r_store}, {OP_GEP, r_gep}, {OP_VECTORIZE, r_vectorize},
  {OP_BITCAST, r_bitcast}, {OP_CAST, r_cast}, {OP_TRUNC, r_trunc}, {OP_WHERE, r_where}, {OP_RANGE, r_range},
  {OP_END, r_end}, {OP_IF, r_if}, {OP_ENDIF, r_endif}, {OP_BARRIER, r_barrier}, {OP_WMMA, r_wmma},
};
static RuleFn RULES[OP_COUNT];

/* ---- the render loop (tinygrad's _render_kernel) ---- */

/* tinygrad's lconst: a float's truncated repr (inf and nan as the hex of the double), an int's or bool's int */
static const char *const_name(Render *st, UOp *u) {
  DType *dt = u->dtype;
  if (!dtype_is_float(dt)) {
    PyObject *i = PyNumber_Long(u->arg);
    const char *n = name_from_str(st, u, i, "");
    Py_XDECREF(i);
    return n;
  }
  if (dtype_scalar(dt) == DTYPE(FP8E4M3) || dtype_scalar(dt) == DTYPE(FP8E5M2)) {
    PyErr_SetString(PyExc_NotImplementedError, "LLVMRenderer: fp8 constants are not rendered by tinyc");
    return NULL;
  }
  double d = PyFloat_AsDouble(u->arg);
  if (d == -1.0 && PyErr_Occurred()) return NULL;
  if (isinf(d) || isnan(d)) {
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    return set_name(st, u, "0x%016llX", (unsigned long long)bits);
  }
  PyObject *t = dtype_truncate(dtype_scalar(dt), u->arg);
  const char *n = name_from_str(st, u, t, "");
  Py_XDECREF(t);
  return n;
}

/* DEFINE_REG / DEFINE_LOCAL: %reg_<arg> with its ( ) , and spaces dropped (commas as _), an alloca */
static int define_memory(Render *st, UOp *u) {
  if (!u->dtype->is_ptr) return failed(st, u);
  PyObject *s = PyObject_Str(u->arg);
  const char *a = s ? PyUnicode_AsUTF8(s) : NULL;
  char clean[200];
  size_t k = 0;
  for (; a && *a && k + 1 < sizeof(clean); a++)
    if (*a != '(' && *a != ')' && *a != ' ') clean[k++] = *a == ',' ? '_' : *a;
  clean[k] = 0;
  const char *n = a ? set_name(st, u, "%%%s_%s", u->op == OP_DEFINE_LOCAL ? "local" : "reg", clean) : NULL;
  Py_XDECREF(s);
  if (!n) return -1;
  TypeName t;
  ldt(st, u->dtype->base, &t);
  return LINE("\n  %s = alloca [%zd x %s]%s", n, u->dtype->size, t.s, u->op == OP_DEFINE_LOCAL ? ", align 16" : "");
}

/* DEFINE_GLOBAL (%dataN) and DEFINE_VAR (%name): a kernel argument */
static int define_arg(Render *st, UOp *u) {
  const char *n;
  if (u->op == OP_DEFINE_GLOBAL) n = name_from_str(st, u, u->arg, "%data");
  else if (!PyTuple_Check(u->arg) || PyTuple_GET_SIZE(u->arg) < 1) return failed(st, u);
  else n = name_from_str(st, u, PyTuple_GET_ITEM(u->arg, 0), "%");
  if (!n) return -1;
  TypeName t;
  text_add(&st->args, "%s%s%s %s", st->args.len ? ", " : "", ldt(st, u->dtype, &t), u->dtype->is_ptr ? " noalias align 32" : "", n);
  return 0;
}

/* a CAST that is no instruction: to a pointer, or between dtypes of one LLVM type (signed <-> unsigned) */
static bool is_noop_cast(Render *st, UOp *u) {
  if (u->op != OP_CAST || u->nsrc < 1) return false;
  TypeName a, b;
  return (u->dtype->is_ptr || strcmp(ldt(st, u->dtype, &a), ldt(st, u->src[0]->dtype, &b)) == 0) && !st->bad_dtype;
}

static int render_node(Render *st, UOp *u, PyObject **fname) {
  st->cur = u;
  switch (u->op) {
    case OP_NOOP: case OP_GROUP: return 0;
    case OP_AFTER: {
      const char *n = u->nsrc ? name_of(st, u->src[0]) : NULL;
      if (!n) return u->nsrc ? -1 : failed(st, u);
      return ptrmap_set(&st->names, u, (void *)n) < 0 ? (PyErr_NoMemory(), -1) : 0;
    }
    case OP_SINK:
      if (u->arg == Py_None) return 0;
      Py_XSETREF(*fname, getattr_literal(u->arg, "function_name"));
      return *fname ? 0 : -1;
    case OP_DEFINE_GLOBAL: case OP_DEFINE_VAR: return define_arg(st, u);
    case OP_DEFINE_LOCAL: case OP_DEFINE_REG: return define_memory(st, u);
    case OP_CONST: return const_name(st, u) ? 0 : -1;
    default: break;
  }
  if (is_noop_cast(st, u)) {
    const char *n = name_of(st, u->src[0]);
    return !n || ptrmap_set(&st->names, u, (void *)n) < 0 ? (n ? (PyErr_NoMemory(), -1) : -1) : 0;
  }
  const char *xn = ptrmap_get(&st->names, u);
  if (!xn && !(xn = set_name(st, u, "%%v%ld", ++st->vc))) return -1;
  RuleFn fn = RULES[u->op] ? RULES[u->op] : IN_GROUP((Op)u->op, Binary) ? r_binary : NULL;
  if (!fn) return failed(st, u);
  return fn(st, u, xn);
}

/* one node, then what its text helpers could only remember: a dtype with no LLVM type, memory running out */
static int render_one(Render *st, UOp *u, PyObject **fname) {
  if (render_node(st, u, fname) < 0) return -1;
  if (st->bad_dtype) {
    PyErr_Format(PyExc_RuntimeError, "failed to render Ops.%s: LLVM has no type for %R", op_names[u->op], (PyObject *)st->bad_dtype);
    return -1;
  }
  return st->body.oom || st->args.oom ? (PyErr_NoMemory(), -1) : 0;
}

/* tinygrad's _render_fn + footer: "define[ abi] void @name(args) #0\n{" + lines + "\n  ret void\n}\n" + attributes */
static PyObject *render_text(Render *st, PyObject *fname, const char *abi) {
  const char *name = fname ? PyUnicode_AsUTF8(fname) : "test";
  if (!name) return NULL;
  Text out = {0};
  text_add(&out, "define%s%s void @%s(%s) #0\n{%s\n  ret void\n}\n%s", abi ? " " : "", abi ? abi : "", name, st->args.s ? st->args.s : "",
           st->body.s ? st->body.s : "", FOOTER);
  PyObject *ret = out.oom ? PyErr_NoMemory() : PyUnicode_DecodeUTF8(out.s, (Py_ssize_t)out.len, "strict");
  free(out.s);
  return ret;
}

/* the renderer's abi setting (tinygrad's: None, win64cc on Windows): a str or None (NULL: none); -1 for any other value */
static int abi_of(PyObject *self, PyObject **abi) {
  *abi = getattr_literal(self, "abi");
  if (*abi && (*abi == Py_None || PyUnicode_Check(*abi))) return 0;
  if (*abi) PyErr_Format(PyExc_TypeError, "LLVMRenderer.abi must be a str or None, not %.100s", Py_TYPE(*abi)->tp_name);
  Py_CLEAR(*abi);
  return -1;
}

static PyObject *render_uops(PyObject *self, PyObject *uops_in) {
  PyObject *abi, *uops = abi_of(self, &abi) < 0 ? NULL : PySequence_Fast(uops_in, "render needs a list of UOps");
  const char *abi_text = uops && abi != Py_None ? PyUnicode_AsUTF8(abi) : NULL;
  if (!uops || (abi != Py_None && !abi_text)) { Py_XDECREF(abi); Py_XDECREF(uops); return NULL; }
  Render st = {0};
  st.vc = -1;
  PyObject *fname = NULL, *ret = NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(uops);
  int rc = 0;
  for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
    PyObject *u = PySequence_Fast_GET_ITEM(uops, i);
    if (!UOp_Check(u)) { PyErr_Format(PyExc_TypeError, "render needs UOps, got %.100s", Py_TYPE(u)->tp_name); rc = -1; }
    else rc = render_one(&st, (UOp *)u, &fname);
  }
  if (rc == 0 && fname && !PyUnicode_Check(fname)) PyErr_Format(PyExc_TypeError, "the kernel's function_name must be a str");
  else if (rc == 0) ret = render_text(&st, fname, abi_text);
  for (Py_ssize_t i = 0; i < st.owned.len; i++) free(st.owned.items[i]);
  ptrvec_free(&st.owned);
  ptrmap_free(&st.names);
  free(st.body.s); free(st.args.s);
  Py_XDECREF(fname);
  Py_DECREF(uops);
  Py_DECREF(abi);
  return ret;
}

/* ---- the Python type ---- */

static PyObject *LLVM_render(PyObject *self, PyObject *uops) { return render_uops(self, uops); }

/* LLVMRenderer(): its compiler a new CPULLVMCompiler, from the device layer by name (a RuntimeError when tinyc has no LLVM) */
static int LLVM_init(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kw, ":LLVMRenderer", kwlist)) return -1;
  PyObject *mod = PyImport_ImportModule("tinyc._C"), *cls = mod ? getattr_literal(mod, "CPULLVMCompiler") : NULL;
  PyObject *compiler = cls ? PyObject_CallNoArgs(cls) : NULL;
  int rc = compiler ? PyObject_SetAttrString(self, "compiler", compiler) : -1;
  Py_XDECREF(mod); Py_XDECREF(cls); Py_XDECREF(compiler);
  return rc;
}

static PyMethodDef LLVM_methods[] = {
  {"render", LLVM_render, METH_O, "render(uops) -> the kernel's LLVM IR"},
  {NULL, NULL, 0, NULL},
};

PyTypeObject LLVMRenderer_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.LLVMRenderer",
  .tp_basicsize = sizeof(RendererObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "tinygrad's LLVMRenderer: LLVM IR for the CPU device, compiled in process by CPULLVMCompiler",
  .tp_methods = LLVM_methods,
  .tp_base = &Renderer_Type,
  .tp_init = LLVM_init,
  .tp_new = PyType_GenericNew,
};

/* code_for_op's values: tinygrad's are `lambda: None`, only the keys are read */
static PyObject *returns_none(PyObject *self, PyObject *unused) { UNUSED(self); UNUSED(unused); Py_RETURN_NONE; }
static PyMethodDef returns_none_def = {"<lambda>", returns_none, METH_NOARGS, NULL};

static PyObject *llvm_code_for_op(void) {
  PyObject *d = PyDict_New(), *fn = PyCFunction_New(&returns_none_def, NULL);
  if (!d || !fn || PyDict_SetItem(d, ops_members[OP_FDIV], fn) < 0 || PyDict_SetItem(d, ops_members[OP_CMPLT], fn) < 0) Py_CLEAR(d);
  Py_XDECREF(fn);
  return d;
}

/* create_non_native_float_pats((dtypes.bfloat16,)) + pm_manual_bf16_cast, as tinygrad's */
static PyObject *llvm_extra_matcher(PyObject *m) {
  PyObject *make = getattr_literal(m, "create_non_native_float_pats"), *bf16 = PyTuple_Pack(1, (PyObject *)DTYPE(BFLOAT16));
  PyObject *pats = make && bf16 ? PyObject_CallOneArg(make, bf16) : NULL;
  PatternMatcher *manual = native_get("pm_manual_bf16_cast");
  PyObject *ret = pats && manual ? (PyObject *)pm_concat((PatternMatcher *)pats, manual) : NULL;
  if (pats && !manual) PyErr_SetString(PyExc_RuntimeError, "the native rule set pm_manual_bf16_cast is missing");
  Py_XDECREF(make); Py_XDECREF(bf16); Py_XDECREF(pats);
  return ret;
}

static int llvm_attrs(PyObject *m, PyTypeObject *t) {
  return renderer_set_attr(t, "device", PyUnicode_FromString("CPU")) < 0 || renderer_set_attr(t, "abi", Py_NewRef(Py_None)) < 0 ||
    renderer_set_attr(t, "supports_float4", Py_NewRef(Py_True)) < 0 || renderer_set_attr(t, "has_local", Py_NewRef(Py_False)) < 0 ||
    renderer_set_attr(t, "global_max", Py_NewRef(Py_None)) < 0 || renderer_set_attr(t, "code_for_op", llvm_code_for_op()) < 0 ||
    renderer_set_attr(t, "extra_matcher", llvm_extra_matcher(m)) < 0 ? -1 : 0;
}

int tinyc_init_llvmir(PyObject *m) {
  for (size_t i = 0; i < sizeof(RULE_TABLE) / sizeof(RULE_TABLE[0]); i++) RULES[RULE_TABLE[i].op] = RULE_TABLE[i].fn;
  if (PyType_Ready(&LLVMRenderer_Type) < 0 || llvm_attrs(m, &LLVMRenderer_Type) < 0) return -1;
  PyType_Modified(&LLVMRenderer_Type);
  return tinyc_add(m, "LLVMRenderer", (PyObject *)&LLVMRenderer_Type);
}
