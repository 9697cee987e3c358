/* tinygrad/renderer/cstyle.py for the CPU: the base C-style string rules (`base_rewrite`), the
 * language settings of ClangRenderer, and the render loop (naming, inlining of single-use values,
 * the kernel signature and the vector typedefs in front of it). Also the Renderer base type with the
 * attributes of tinygrad/renderer/__init__.py.
 *
 * The string rules return Python strs, not UOps; their ctx is the renderer, whose `r` dict holds the
 * text of every node rendered so far (sources come before their users in a linearized list). */
#include "renderer.h"
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdarg.h>
#include <string.h>

static int SLOT_bidx, SLOT_cast_root;

/* a rule's text result, handed to the pool */
#define TEXT(expr) ((UOp *)pool_keep(expr))

/* PyUnicode_FromFormat for the few conversions this file uses (%S %U %s %c %d %ld %zd %%), without
 * CPython's general writer: the pieces are measured, then copied once into a new str. The result is
 * the same str; anything else goes to PyUnicode_FromFormatV. */
typedef struct { const char *s; Py_ssize_t n; PyObject *o; } FmtPiece;
static PyObject *text_format(const char *fmt, ...) {
  va_list va, again;
  va_start(va, fmt);
  va_copy(again, va);
  FmtPiece p[24];
  char nums[6][24];
  int np = 0, nnum = 0;
  Py_ssize_t len = 0;
  Py_UCS4 maxc = 127;
  PyObject *ret = NULL;
  bool fallback = false, failed = false;
  for (const char *f = fmt; *f && !fallback && !failed;) {
    if (np == 24) { fallback = true; break; }
    if (*f != '%') {
      const char *st = f;
      while (*f && *f != '%') fallback |= (unsigned char)*f++ >= 128;
      p[np++] = (FmtPiece){st, f - st, NULL};
      continue;
    }
    f++;
    if (*f == 'S' || *f == 'U') {
      PyObject *o = va_arg(va, PyObject *), *str = PyUnicode_Check(o) ? Py_NewRef(o) : PyObject_Str(o);
      if (!str) { failed = true; break; }
      p[np++] = (FmtPiece){NULL, PyUnicode_GET_LENGTH(str), str};
      Py_UCS4 m = PyUnicode_MAX_CHAR_VALUE(str);
      if (m > maxc) maxc = m;
      f++;
    } else if (*f == 's') {
      const char *c = va_arg(va, const char *);
      Py_ssize_t n = (Py_ssize_t)strlen(c);
      for (Py_ssize_t i = 0; i < n; i++) fallback |= (unsigned char)c[i] >= 128;
      p[np++] = (FmtPiece){c, n, NULL};
      f++;
    } else if (*f == '%') {
      p[np++] = (FmtPiece){"%", 1, NULL};
      f++;
    } else if (nnum == 6) {
      fallback = true;
    } else if (*f == 'c') {
      int c = va_arg(va, int);
      if (c <= 0 || c >= 128) { fallback = true; break; }
      nums[nnum][0] = (char)c;
      p[np++] = (FmtPiece){nums[nnum++], 1, NULL};
      f++;
    } else if (*f == 'd' || (f[0] == 'l' && f[1] == 'd') || (f[0] == 'z' && f[1] == 'd')) {
      long long v = *f == 'd' ? va_arg(va, int) : *f == 'l' ? va_arg(va, long) : (long long)va_arg(va, Py_ssize_t);
      int n = snprintf(nums[nnum], sizeof(nums[nnum]), "%lld", v);
      p[np++] = (FmtPiece){nums[nnum++], n, NULL};
      f += *f == 'd' ? 1 : 2;
    } else {
      fallback = true;
    }
  }
  if (!fallback && !failed) {
    for (int i = 0; i < np; i++) len += p[i].n;
    if ((ret = PyUnicode_New(len, maxc))) {
      Py_ssize_t pos = 0;
      if (maxc < 128) {
        char *d = (char *)PyUnicode_1BYTE_DATA(ret);
        for (int i = 0; i < np; i++) memcpy(d + pos, p[i].o ? (const char *)PyUnicode_1BYTE_DATA(p[i].o) : p[i].s, (size_t)p[i].n), pos += p[i].n;
      } else {
        int kind = PyUnicode_KIND(ret);
        void *d = PyUnicode_DATA(ret);
        for (int i = 0; i < np && ret; i++) {
          if (p[i].o) {
            if (PyUnicode_CopyCharacters(ret, pos, p[i].o, 0, p[i].n) < 0) Py_CLEAR(ret);
            pos += p[i].n;
          } else
            for (Py_ssize_t k = 0; k < p[i].n; k++) PyUnicode_WRITE(kind, d, pos++, (Py_UCS4)(unsigned char)p[i].s[k]);
        }
      }
    }
  }
  for (int i = 0; i < np; i++) Py_XDECREF(p[i].o);
  if (fallback && !failed) ret = PyUnicode_FromFormatV(fmt, again);
  va_end(again);
  va_end(va);
  return ret;
}
#define PyUnicode_FromFormat text_format

/* ================================================================================================
 * Clang's language settings (the ones the render loop reads; also published as class attributes)
 * ================================================================================================ */

static const char *const KERNEL_TYPEDEF = "void";
static const char *const BUFFER_SUFFIX = " restrict";
static const char *const ARG_INT_PREFIX = "const int";
static const char *const INFINITY_TEXT = "__builtin_inff()";
static const char *const NAN_TEXT = "__builtin_nanf(\"\")";
static const char *const EXTRA_ARG = "int core_id";
static const int GEP_ARR_THRESHOLD = 0;

/* ================================================================================================
 * text helpers
 * ================================================================================================ */

/* ctx[u]: the text of a node rendered earlier (borrowed; KeyError when it was not rendered) */
static PyObject *text_of(PyObject *ctx, UOp *u) {
  if (!PyObject_TypeCheck(ctx, &Renderer_Type)) return PyErr_Format(PyExc_TypeError, "the string rules' ctx must be a Renderer");
  PyObject *r = ((RendererObject *)ctx)->r;
  PyObject *t = r ? PyDict_GetItemWithError(r, (PyObject *)u) : NULL;
  if (!t && !PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, (PyObject *)u);
  return t;
}

/* s[start:end] never closes more parens than it opened, and closes all it opened */
static bool is_balanced(PyObject *s, Py_ssize_t start, Py_ssize_t end) {
  Py_ssize_t depth = 0;
  for (Py_ssize_t i = start; i < end; i++) {
    Py_UCS4 c = PyUnicode_READ_CHAR(s, i);
    depth += (c == '(') - (c == ')');
    if (depth < 0) return false;
  }
  return depth == 0;
}

/* "(...)" without its outer parens when what is inside is balanced (borrowed, pooled) */
static PyObject *strip_parens(PyObject *s) {
  if (!s) return NULL;
  Py_ssize_t n = PyUnicode_GET_LENGTH(s);
  if (n < 2 || PyUnicode_READ_CHAR(s, 0) != '(' || PyUnicode_READ_CHAR(s, n - 1) != ')' || !is_balanced(s, 1, n - 1)) return s;
  return pool_keep(PyUnicode_Substring(s, 1, n - 1));
}

/* PyUnicode_FromFormat with every %S argument present (NULL: an error happened earlier); pooled */
static UOp *fmt1(const char *f, PyObject *a) { return a ? TEXT(PyUnicode_FromFormat(f, a)) : NULL; }
static UOp *fmt2(const char *f, PyObject *a, PyObject *b) { return a && b ? TEXT(PyUnicode_FromFormat(f, a, b)) : NULL; }
static UOp *fmt3(const char *f, PyObject *a, PyObject *b, PyObject *c) {
  return a && b && c ? TEXT(PyUnicode_FromFormat(f, a, b, c)) : NULL;
}

/* sep.join of the texts of nodes (pooled) */
static PyObject *join_texts(PyObject *ctx, UOp *const *us, int n, const char *sep) {
  PyObject *parts = pool_keep(PyList_New(0)), *s = pool_keep(PyUnicode_FromString(sep));
  if (!parts || !s) return NULL;
  for (int i = 0; i < n; i++) {
    PyObject *t = text_of(ctx, us[i]);
    if (!t || PyList_Append(parts, t) < 0) return NULL;
  }
  return pool_keep(PyUnicode_Join(s, parts));
}

/* ================================================================================================
 * render_dtype, render_cast
 * ================================================================================================ */

/* Clang's type_map: bool is _Bool, half is __fp16; every other scalar is its name. New reference. */
static PyObject *scalar_c_name(DType *scalar) {
  if (scalar == DTYPE(BOOL)) return PyUnicode_FromString("_Bool");
  if (scalar == DTYPE(FLOAT16)) return PyUnicode_FromString("__fp16");
  return Py_NewRef(scalar->name);
}

/* the C spelling of a dtype: "float", "float4" (vector typedefs), "float*" (pointers). New reference. */
static PyObject *render_dtype(DType *dt) {
  if (dt->is_ptr) {   /* Clang has no buffer/shared-memory prefixes */
    PyObject *base = render_dtype(dt->base), *ret = base ? PyUnicode_FromFormat("%U*", base) : NULL;
    Py_XDECREF(base);
    return ret;
  }
  PyObject *name = scalar_c_name(dtype_scalar(dt));
  if (!name || dt->count <= 1) return name;
  PyObject *space = PyUnicode_FromString(" "), *under = PyUnicode_FromString("_");
  PyObject *fixed = space && under ? PyUnicode_Replace(name, space, under, -1) : NULL;
  PyObject *ret = fixed ? PyUnicode_FromFormat("%U%d", fixed, dt->count) : NULL;
  Py_XDECREF(space); Py_XDECREF(under); Py_XDECREF(fixed); Py_DECREF(name);
  return ret;
}
static PyObject *dtype_text(DType *dt) { return pool_keep(render_dtype(dt)); }

/* "(type)(val)": pooled */
static PyObject *render_cast(DType *dt, PyObject *val) { return (PyObject *)fmt2("(%S)(%S)", dtype_text(dt), val); }
static PyObject *render_cast_c(DType *dt, const char *val) { return render_cast(dt, pool_keep(PyUnicode_FromString(val))); }

/* ================================================================================================
 * code_for_op: the C expression of each ALU op Clang renders
 * ================================================================================================ */

/* the infix operator of a binary op, NULL when the op is not a C infix op here */
static const char *infix_symbol(Op op) {
  switch (op) {
  case OP_AND: return "&"; case OP_XOR: return "^"; case OP_OR: return "|"; case OP_ADD: return "+"; case OP_SUB: return "-";
  case OP_MUL: return "*"; case OP_MOD: return "%"; case OP_IDIV: return "/"; case OP_CMPNE: return "!="; case OP_SHR: return ">>";
  case OP_SHL: return "<<"; case OP_CMPLT: return "<"; case OP_CMPEQ: return "=="; case OP_FDIV: return "/";
  default: return NULL;
  }
}

/* how many operands an op's code takes; 0 when Clang's code_for_op has no entry for the op */
static int code_arity(Op op) {
  if (op == OP_SQRT || op == OP_NEG || op == OP_TRUNC) return 1;
  if (op == OP_WHERE) return 3;
  return infix_symbol(op) ? 2 : 0;
}

/* code_for_op[op](*operands, dtype): new reference; KeyError for ops Clang cannot render */
static PyObject *code_for_op(Op op, PyObject *const *a, int n, DType *dtype) {
  int arity = code_arity(op);
  if (!arity) return PyErr_Format(PyExc_KeyError, "ClangRenderer has no code_for_op entry for Ops.%s", op_names[op]);
  if (n != arity) return PyErr_Format(PyExc_TypeError, "code_for_op[Ops.%s] takes %d operands, got %d", op_names[op], arity, n);
  bool f64 = dtype == DTYPE(FLOAT64);
  switch (op) {
  case OP_SQRT: return PyUnicode_FromFormat(f64 ? "__builtin_sqrt(%S)" : "__builtin_sqrtf(%S)", a[0]);
  case OP_TRUNC: return PyUnicode_FromFormat(f64 ? "__builtin_trunc(%S)" : "__builtin_truncf(%S)", a[0]);
  case OP_NEG: return PyUnicode_FromFormat("-%S", a[0]);
  case OP_WHERE: return PyUnicode_FromFormat("(%S?%S:%S)", a[0], a[1], a[2]);
  default: return PyUnicode_FromFormat("(%S%s%S)", a[0], infix_symbol(op), a[1]);
  }
}

/* the Python face of one code_for_op entry: self is the Ops member, args are (*operands, dtype) */
static PyObject *code_for_op_call(PyObject *self, PyObject *args) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  int op = op_from_object(self);
  if (op < 0) return NULL;
  if (n < 1 || n - 1 > 3) return PyErr_Format(PyExc_TypeError, "code_for_op[Ops.%s] takes the operands and a dtype", op_names[op]);
  PyObject *dt = PyTuple_GET_ITEM(args, n - 1), *strs[3];
  int k = 0;
  for (; k < n - 1; k++) if (!(strs[k] = PyObject_Str(PyTuple_GET_ITEM(args, k)))) break;
  PyObject *ret = k == n - 1 ? code_for_op((Op)op, strs, k, DType_Check(dt) ? (DType *)dt : NULL) : NULL;
  for (int i = 0; i < k; i++) Py_DECREF(strs[i]);
  return ret;
}
static PyMethodDef code_for_op_def = {"code_for_op", code_for_op_call, METH_VARARGS, "the C text of the op on its operands' texts"};

/* ================================================================================================
 * string_rewrite (tinygrad's base_rewrite)
 * ================================================================================================ */

/* a register array: "float acc0[4];" */
static UOp *r_define_reg(Captures *m, PyObject *ctx) {
  PyObject *dt = dtype_text(m->x->dtype->base), *name = dt ? text_of(ctx, m->x) : NULL;
  return name ? TEXT(PyUnicode_FromFormat("%S %S[%zd];", dt, name, m->x->dtype->size)) : NULL;
}
/* an if opens a block on its condition */
static UOp *r_if(Captures *m, PyObject *ctx) { return fmt1("if (%S) {", text_of(ctx, m->x->src[0])); }
/* ENDIF and END close a block */
static UOp *r_close(Captures *m, PyObject *ctx) { UNUSED(m); UNUSED(ctx); return TEXT(PyUnicode_FromString("}")); }
/* a tensor-core call: "__name(a, b, c)" */
static UOp *r_wmma(Captures *m, PyObject *ctx) {
  UOp *x = m->x;
  PyObject *name = pool_keep(PySequence_GetItem(x->arg, 0));
  PyObject *a = name ? text_of(ctx, x->src[0]) : NULL, *b = a ? text_of(ctx, x->src[1]) : NULL, *c = b ? text_of(ctx, x->src[2]) : NULL;
  return c ? TEXT(PyUnicode_FromFormat("__%S(%S, %S, %S)", name, a, b, c)) : NULL;
}
/* a range opens a counted for loop */
static UOp *r_range(Captures *m, PyObject *ctx) {
  PyObject *dt = dtype_text(m->x->dtype), *name = dt ? text_of(ctx, m->x) : NULL, *end = name ? text_of(ctx, m->x->src[0]) : NULL;
  return end ? TEXT(PyUnicode_FromFormat("for (%S %S = 0; %S < %S; %S++) {", dt, name, name, end, name)) : NULL;
}
/* a vector literal: "(float4){a,b,c,d}" */
static UOp *r_vectorize(Captures *m, PyObject *ctx) {
  return fmt2("(%S){%S}", dtype_text(m->x->dtype), join_texts(ctx, m->x->src, m->x->nsrc, ","));
}
/* a cast of a (non-pointer) vector converts lane by lane */
static UOp *r_cast_vector(Captures *m, PyObject *ctx) {
  if (m->x->dtype->count <= 1 || m->x->dtype->is_ptr) return NULL;
  return fmt2("__builtin_convertvector(%S, %S)", text_of(ctx, m->x->src[0]), dtype_text(m->x->dtype));
}
/* any other cast is a C cast */
static UOp *r_cast(Captures *m, PyObject *ctx) { return fmt1("(%S)", render_cast(m->x->dtype, text_of(ctx, m->x->src[0]))); }
/* a bitcast reinterprets the bits of the source, typed as its own dtype */
static UOp *r_bitcast(Captures *m, PyObject *ctx) {
  return fmt3("__builtin_bit_cast(%S, (%S)(%S))", dtype_text(m->x->dtype), dtype_text(m->x->src[0]->dtype), text_of(ctx, m->x->src[0]));
}
/* shared memory: an array (Clang has no alignment or address-space prefix) */
static UOp *r_define_local(Captures *m, PyObject *ctx) { return r_define_reg(m, ctx); }
/* Clang's barrier is no text at all */
static UOp *r_barrier(Captures *m, PyObject *ctx) { UNUSED(m); UNUSED(ctx); return TEXT(PyUnicode_FromString("")); }
/* a global index is the core id (the only workitem Clang has), with the bound as a comment */
static UOp *r_special(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  PyObject *kind = pool_keep(PySequence_GetItem(m->x->arg, 0));
  if (!kind) return NULL;
  if (!PyUnicode_Check(kind) || PyUnicode_CompareWithASCIIString(kind, "g") != 0) { PyErr_SetObject(PyExc_KeyError, kind); return NULL; }
  return fmt1("core_id; /* %S */", pool_keep(PyObject_CallMethod((PyObject *)m->x->src[0], "render", NULL)));
}
/* +inf and -inf constants */
static UOp *r_const_inf(Captures *m, PyObject *ctx) { UNUSED(ctx); return fmt1("(%S)", render_cast_c(m->x->dtype, INFINITY_TEXT)); }
static UOp *r_const_neg_inf(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  return fmt1("(%S)", render_cast(m->x->dtype, pool_keep(PyUnicode_FromFormat("-%s", INFINITY_TEXT))));
}
/* a float nan constant */
static UOp *r_const_nan(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  double v = PyFloat_AsDouble(m->x->arg);
  if (v == -1.0 && PyErr_Occurred()) return NULL;
  return isnan(v) ? fmt1("(%S)", render_cast_c(m->x->dtype, NAN_TEXT)) : NULL;
}
/* constants with a C literal suffix: float "f", int64 "ll" */
static UOp *r_const_float(Captures *m, PyObject *ctx) { UNUSED(ctx); return TEXT(PyUnicode_FromFormat("%Sf", m->x->arg)); }
static UOp *r_const_int64(Captures *m, PyObject *ctx) { UNUSED(ctx); return TEXT(PyUnicode_FromFormat("%Sll", m->x->arg)); }
/* unsigned 64/32 constants are truncated to the dtype and suffixed "ull"/"u" */
static UOp *r_const_unsigned(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  PyObject *v = pool_keep(dtype_truncate(m->x->dtype, m->x->arg));
  return fmt1(m->x->dtype == DTYPE(UINT64) ? "%Sull" : "%Su", v);
}
/* bools are 1 or 0 */
static UOp *r_const_bool(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  int t = PyObject_IsTrue(m->x->arg);
  return t < 0 ? NULL : TEXT(PyUnicode_FromString(t ? "1" : "0"));
}
/* small floats are written as float literals and cast */
static UOp *r_const_small_float(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  return fmt1("(%S)", render_cast(m->x->dtype, pool_keep(PyUnicode_FromFormat("%Sf", m->x->arg))));
}
/* small unsigned ints are written as unsigned literals and cast */
static UOp *r_const_small_uint(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  return fmt1("(%S)", render_cast(m->x->dtype, pool_keep(PyUnicode_FromFormat("%Su", m->x->arg))));
}
/* small signed ints are written plainly and cast */
static UOp *r_const_small_int(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  return fmt1("(%S)", render_cast(m->x->dtype, pool_keep(PyObject_Str(m->x->arg))));
}
/* any other constant is its str */
static UOp *r_const(Captures *m, PyObject *ctx) { UNUSED(ctx); return TEXT(PyObject_Str(m->x->arg)); }
/* an index is pointer arithmetic "(buf+idx)"; tinygrad strips the index's parens when idx.arg equals Ops.ADD */
static UOp *r_index(Captures *m, PyObject *ctx) {
  PyObject *idx = text_of(ctx, m->idx);
  int is_add = idx ? PyObject_RichCompareBool(m->idx->arg, ops_members[OP_ADD], Py_EQ) : -1;
  if (is_add < 0) return NULL;
  return fmt2("(%S+%S)", text_of(ctx, m->buf), is_add ? strip_parens(idx) : idx);
}
/* a gated load: "(gate?*ptr:alt)" */
static UOp *r_load_gated(Captures *m, PyObject *ctx) {
  return fmt3("(%S?*%S:%S)", text_of(ctx, m->gate), text_of(ctx, m->slot[SLOT_bidx]), text_of(ctx, m->var));
}
/* a load dereferences */
static UOp *r_load(Captures *m, PyObject *ctx) { return fmt1("(*%S)", text_of(ctx, m->slot[SLOT_bidx])); }
/* a store assigns through the pointer */
static UOp *r_store(Captures *m, PyObject *ctx) { return fmt2("*%S = %S;", text_of(ctx, m->slot[SLOT_bidx]), text_of(ctx, m->var)); }
/* ALU ops by code_for_op; a chain of the same associative op drops the inner parens */
static UOp *r_alu(Captures *m, PyObject *ctx) {
  UOp *x = m->x;
  if (x->nsrc > 3) return (UOp *)PyErr_Format(PyExc_TypeError, "code_for_op[Ops.%s]: too many operands", op_names[x->op]);
  bool chains = x->op == OP_ADD || x->op == OP_MUL || x->op == OP_XOR || x->op == OP_OR || x->op == OP_AND;
  PyObject *a[3];
  for (int i = 0; i < x->nsrc; i++) {
    a[i] = text_of(ctx, x->src[i]);
    if (chains && x->src[i]->op == x->op) a[i] = strip_parens(a[i]);
    if (!a[i]) return NULL;
  }
  return TEXT(code_for_op((Op)x->op, a, x->nsrc, x->dtype));
}
/* a lane of a vector: "v[i]" (or ".x" style at or below the array threshold) */
static UOp *r_gep(Captures *m, PyObject *ctx) {
  UOp *x = m->x;
  PyObject *v = text_of(ctx, x->src[0]), *lane = v ? pool_keep(PySequence_GetItem(x->arg, 0)) : NULL;
  if (!lane) return NULL;
  if (x->src[0]->dtype->count > GEP_ARR_THRESHOLD) return fmt2("%S[%S]", v, lane);
  Py_ssize_t i = PyLong_AsSsize_t(lane);
  if (i < 0 || i >= 8) return PyErr_Occurred() ? NULL : (UOp *)PyErr_Format(PyExc_IndexError, "string index out of range");
  return TEXT(PyUnicode_FromFormat("%S.%c", v, "xyzwabcd"[i]));
}
/* custom code: arg.format(*texts of the sources) */
static UOp *r_custom(Captures *m, PyObject *ctx) {
  UOp *x = m->x;
  PyObject *args = pool_keep(PyTuple_New(x->nsrc));
  if (!args) return NULL;
  for (int i = 0; i < x->nsrc; i++) {
    PyObject *t = text_of(ctx, x->src[i]);
    if (!t) return NULL;
    PyTuple_SET_ITEM(args, i, Py_NewRef(t));
  }
  PyObject *format = pool_keep(PyObject_GetAttrString(x->arg, "format"));
  return format ? TEXT(PyObject_Call(format, args, NULL)) : NULL;
}

static const RuleDef base_rewrite_defs[] = {
  {"UPat(Ops.DEFINE_REG, name='x')", r_define_reg},
  {"UPat(Ops.IF, name='x')", r_if},
  {"UPat((Ops.ENDIF, Ops.END))", r_close},
  {"UPat(Ops.WMMA, name='x')", r_wmma},
  {"UPat(Ops.RANGE, name='x')", r_range},
  {"UPat(Ops.VECTORIZE, name='x')", r_vectorize},
  {"UPat(Ops.CAST, name='x')", r_cast_vector},
  {"UPat(Ops.CAST, name='x')", r_cast},
  {"UPat(Ops.BITCAST, name='x')", r_bitcast},
  {"UPat(Ops.DEFINE_LOCAL, name='x')", r_define_local},
  {"UPat(Ops.BARRIER)", r_barrier},
  {"UPat(Ops.SPECIAL, name='x')", r_special},
  {"UPat(Ops.CONST, arg=float('inf'), name='x')", r_const_inf},
  {"UPat(Ops.CONST, arg=float('-inf'), name='x')", r_const_neg_inf},
  {"UPat(Ops.CONST, dtype=dtypes.floats, name='x')", r_const_nan},
  {"UPat(Ops.CONST, dtype=dtypes.float, name='x')", r_const_float},
  {"UPat(Ops.CONST, dtype=dtypes.int64, name='x')", r_const_int64},
  {"UPat(Ops.CONST, dtype=dtypes.uint64, name='x')", r_const_unsigned},
  {"UPat(Ops.CONST, dtype=dtypes.uint32, name='x')", r_const_unsigned},
  {"UPat(Ops.CONST, dtype=dtypes.bool, name='x')", r_const_bool},
  {"UPat(Ops.CONST, (*dtypes.fp8s, dtypes.bfloat16, dtypes.half), name='x')", r_const_small_float},
  {"UPat(Ops.CONST, (dtypes.uint8, dtypes.uint16), name='x')", r_const_small_uint},
  {"UPat(Ops.CONST, (dtypes.int8, dtypes.int16), name='x')", r_const_small_int},
  {"UPat(Ops.CONST, name='x')", r_const},
  {"UPat(Ops.INDEX, src=(UPat.var('buf'), UPat.var('idx')), allow_any_len=True)", r_index},
  {"UPat(Ops.LOAD, src=(UPat(Ops.INDEX, src=(UPat(), UPat(), UPat.var('gate'))).or_casted('bidx'), UPat.var('var')), allow_any_len=True)",
   r_load_gated},
  {"UPat(Ops.LOAD, src=(UPat.var('bidx'),), allow_any_len=True)", r_load},
  {"UPat(Ops.STORE, src=(UPat.var('bidx'), UPat.var('var')), allow_any_len=True)", r_store},
  {"UPat(GroupOp.ALU, name='x')", r_alu},
  {"UPat(Ops.GEP, name='x')", r_gep},
  {"UPat((Ops.CUSTOM, Ops.CUSTOMI), name='x')", r_custom},
};

/* ================================================================================================
 * the render loop (CStyleLanguage._render)
 * ================================================================================================ */

/* the name prefix of each kind of value; everything unlisted is an "alu" */
enum { PFX_WMMA, PFX_TEMP, PFX_CONST, PFX_CAST, PFX_GEP, PFX_BIDX, PFX_ACC, PFX_VAL, PFX_ALU, PFX_COUNT };
static const char *const prefix_names[PFX_COUNT] = {"wmma", "temp", "const", "cast", "gep", "bidx", "acc", "val", "alu"};

static int prefix_of(Op op) {
  switch (op) {
  case OP_WMMA: return PFX_WMMA;
  case OP_DEFINE_LOCAL: return PFX_TEMP;
  case OP_CONST: return PFX_CONST;
  case OP_CAST: case OP_BITCAST: case OP_VECTORIZE: return PFX_CAST;
  case OP_GEP: return PFX_GEP;
  case OP_INDEX: return PFX_BIDX;
  case OP_DEFINE_REG: return PFX_ACC;
  case OP_LOAD: return PFX_VAL;
  default: return PFX_ALU;
  }
}

/* ops.py's axis_letters: the letter a loop variable of each AxisType starts with (0: none) */
static char axis_letter(PyObject *axis_type) {
  static const struct { AxisTypeId id; char letter; } letters[] = {
    {AXIS_GLOBAL, 'g'}, {AXIS_THREAD, 't'}, {AXIS_LOCAL, 'l'}, {AXIS_WARP, 'w'}, {AXIS_LOOP, 'L'}, {AXIS_UPCAST, 'u'},
    {AXIS_GROUP_REDUCE, 'G'}, {AXIS_REDUCE, 'R'}, {AXIS_UNROLL, 'r'}, {AXIS_OUTER, 'O'}};
  for (size_t i = 0; i < sizeof(letters) / sizeof(letters[0]); i++) if (axistype_members[letters[i].id] == axis_type) return letters[i].letter;
  return 0;
}

/* a loop variable's name: axis letter, "idx", then the range ids joined by "_" (negatives as "m<abs>"). Pooled. */
static PyObject *range_name(UOp *u) {
  Py_ssize_t n = PyTuple_Check(u->arg) ? PyTuple_GET_SIZE(u->arg) : 0;
  if (n < 1) return PyErr_Format(PyExc_TypeError, "a RANGE's arg must be a tuple ending in its AxisType");
  char letter = axis_letter(PyTuple_GET_ITEM(u->arg, n - 1));
  if (!letter) { PyErr_SetObject(PyExc_KeyError, PyTuple_GET_ITEM(u->arg, n - 1)); return NULL; }
  PyObject *parts = pool_keep(PyList_New(0)), *zero = n_int(0);
  if (!parts || !zero) return NULL;
  for (Py_ssize_t i = 0; i < n - 1; i++) {
    PyObject *id = PyTuple_GET_ITEM(u->arg, i);
    int nonneg = PyObject_RichCompareBool(id, zero, Py_GE);
    if (nonneg < 0) return NULL;
    PyObject *part = nonneg ? pool_keep(PyObject_Str(id)) : (PyObject *)fmt1("m%S", n_neg(id));
    if (!part || PyList_Append(parts, part) < 0) return NULL;
  }
  PyObject *sep = pool_keep(PyUnicode_FromString("_"));
  PyObject *ids = sep ? pool_keep(PyUnicode_Join(sep, parts)) : NULL;
  return ids ? pool_keep(PyUnicode_FromFormat("%cidx%U", letter, ids)) : NULL;
}

/* The state of one render: tinygrad's locals in _render. */
typedef struct {
  RendererObject *self;
  PatternMatcher *pm;
  PyObject *r, *bufs, *kernel;
  PtrMap child_count;        /* node -> how many sources name it (tinygrad's Counter) */
  PyObject *name;            /* the SINK's function name (pooled) when this node set it */
  int depth;
  long counters[PFX_COUNT];
  bool expand_ssa;
} RenderState;

static long child_count(RenderState *st, UOp *u) { return (long)(intptr_t)ptrmap_get(&st->child_count, u); }

/* STORE: every global buffer the stored-to pointer comes from becomes writable */
static int mark_writable(RenderState *st, UOp *ptr) {
  PyObject *order = pool_keep(uop_toposort_list(ptr, NULL));
  if (!order) return -1;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order); i++) {
    UOp *up = (UOp *)PyList_GET_ITEM(order, i);
    if (up->op != OP_DEFINE_GLOBAL) continue;
    PyObject *old = PyDict_GetItemWithError(st->bufs, (PyObject *)up);
    if (!old) { if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, (PyObject *)up); return -1; }
    PyObject *entry = Py_BuildValue("(O(OO))", PyTuple_GET_ITEM(old, 0), (PyObject *)up->dtype, Py_True);
    if (!entry || PyDict_SetItem(st->bufs, (PyObject *)up, entry) < 0) { Py_XDECREF(entry); return -1; }
    Py_DECREF(entry);
  }
  return 0;
}

/* DEFINE_GLOBAL / DEFINE_VAR: a kernel argument, named "data<i>[_<size>]" or by the variable's name */
static int add_argument(RenderState *st, UOp *u) {
  PyObject *name;
  if (u->op == OP_DEFINE_GLOBAL) {
    if (!u->dtype->is_ptr) { PyErr_Format(PyExc_TypeError, "DEFINE_GLOBAL needs a PtrDType"); return -1; }
    name = pool_keep(u->dtype->size > 0 ? PyUnicode_FromFormat("data%S_%zd", u->arg, u->dtype->size) : PyUnicode_FromFormat("data%S", u->arg));
  } else {
    name = pool_keep(PySequence_GetItem(u->arg, 0));
  }
  PyObject *entry = name ? pool_keep(Py_BuildValue("(O(OO))", name, (PyObject *)u->dtype, Py_False)) : NULL;
  if (!entry || PyDict_SetItem(st->r, (PyObject *)u, name) < 0) return -1;
  return PyDict_SetItem(st->bufs, (PyObject *)u, entry);
}

/* the AssertionError of a node no rule renders */
static int failed_to_render(UOp *u) {
  PyObject *srcs = pool_keep(PyList_New(0));
  for (int i = 0; srcs && i < u->nsrc; i++) {
    PyObject *pair = pool_keep(Py_BuildValue("(OO)", ops_members[u->src[i]->op], (PyObject *)u->src[i]->dtype));
    if (!pair || PyList_Append(srcs, pair) < 0) return -1;
  }
  if (srcs) PyErr_Format(PyExc_AssertionError, "failed to render %S %S %S %S", ops_members[u->op], (PyObject *)u->dtype, srcs, u->arg);
  return -1;
}

/* the text of a node goes inline into its users (r[u] = text) rather than on a line of its own */
static bool renders_inline(RenderState *st, UOp *u) {
  Op op = (Op)u->op;
  if (op == OP_CAST && dtype_vcount(u->dtype) != 1) return false;
  if (op == OP_CONST || op == OP_GEP || op == OP_INDEX || op == OP_CUSTOMI) return true;
  if (op == OP_LOAD && u->nsrc && u->src[0]->dtype->is_ptr && u->src[0]->dtype->addrspace == ADDRSPACE_REG) return true;
  if (op == OP_CAST && u->dtype->is_ptr) return true;
  bool single_use_kind = op == OP_VECTORIZE || op == OP_CAST || op == OP_BITCAST || (IN_GROUP(op, ALU) && op != OP_WHERE);
  return single_use_kind && child_count(st, u) == 1 && !st->expand_ssa;
}

/* the name a node's value gets (pooled); *prefix is its counter, -1 for specials and ranges */
static PyObject *value_name(RenderState *st, UOp *u, int *prefix) {
  *prefix = -1;
  if (u->op == OP_SPECIAL) return u->arg;
  if (u->op == OP_RANGE) return range_name(u);
  *prefix = prefix_of((Op)u->op);
  long k = st->counters[*prefix];
  static PyObject *cache[PFX_COUNT][1024];   /* "alu0", "alu1", ...: the same strs every render */
  if (k >= 0 && k < 1024) {
    if (!cache[*prefix][k] && !(cache[*prefix][k] = PyUnicode_FromFormat("%s%ld", prefix_names[*prefix], k))) return NULL;
    return cache[*prefix][k];
  }
  return pool_keep(PyUnicode_FromFormat("%s%ld", prefix_names[*prefix], k));
}

/* one node of the loop body */
static int render_uop(RenderState *st, UOp *u) {
  Op op = (Op)u->op;
  if (op == OP_NOOP || op == OP_GROUP) return 0;
  if ((op == OP_AFTER || op == OP_STORE) && !u->nsrc) { PyErr_Format(PyExc_IndexError, "Ops.%s without sources", op_names[op]); return -1; }
  if (op == OP_AFTER) {
    PyObject *t = text_of((PyObject *)st->self, u->src[0]);
    return t ? PyDict_SetItem(st->r, (PyObject *)u, t) : -1;
  }
  if (op == OP_SINK) {
    if (u->arg != Py_None && !(st->name = pool_keep(PyObject_GetAttrString(u->arg, "function_name")))) return -1;
    return 0;
  }
  if (op == OP_DEFINE_GLOBAL || op == OP_DEFINE_VAR) return add_argument(st, u);
  if (op == OP_STORE && mark_writable(st, u->src[0]) < 0) return -1;

  int prefix;
  PyObject *name = value_name(st, u, &prefix);
  if (!name || PyDict_SetItem(st->r, (PyObject *)u, name) < 0) return -1;
  PyObject *l = pool_keep(pm_rewrite(st->pm, u, (PyObject *)st->self, false));
  if (!l) return PyErr_Occurred() ? -1 : failed_to_render(u);
  if (!PyUnicode_Check(l)) { PyErr_Format(PyExc_TypeError, "a string rule returned %.100s, not a str", Py_TYPE(l)->tp_name); return -1; }

  if (op == OP_ENDIF || op == OP_END) st->depth--;
  if (renders_inline(st, u)) {
    if (PyDict_SetItem(st->r, (PyObject *)u, l) < 0) return -1;
  } else {
    if (op != OP_RANGE && op != OP_DEFINE_LOCAL && op != OP_STORE && op != OP_DEFINE_REG && u->dtype != DTYPE(VOID))
      l = pool_keep(PyUnicode_FromFormat("%S %S = %S%s", dtype_text(u->dtype), name, l, op == OP_SPECIAL ? "" : ";"));
    PyObject *two = l ? pool_keep(PyUnicode_FromString("  ")) : NULL;
    PyObject *indent = two ? pool_keep(PySequence_Repeat(two, st->depth > 0 ? st->depth : 0)) : NULL;
    PyObject *line = indent ? pool_keep(PyUnicode_Concat(indent, l)) : NULL;
    if (!line || PyList_Append(st->kernel, line) < 0) return -1;
    if (prefix >= 0) st->counters[prefix]++;
  }
  if (op == OP_IF || op == OP_RANGE) st->depth++;
  return 0;
}

/* Counter(v for u in uops for v in u.src) */
static int count_children(PtrMap *counts, PyObject *const *uops, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; i++) {
    UOp *u = (UOp *)uops[i];
    for (int j = 0; j < u->nsrc; j++)
      if (ptrmap_set(counts, u->src[j], (void *)((intptr_t)ptrmap_get(counts, u->src[j]) + 1)) < 0) return -1;
  }
  return 0;
}

/* the uops as a fast sequence of UOps (new reference), TypeError for anything else */
static PyObject *uop_sequence(PyObject *uops) {
  PyObject *seq = PySequence_Fast(uops, "render needs a list of UOps");
  for (Py_ssize_t i = 0; seq && i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *u = PySequence_Fast_GET_ITEM(seq, i);
    if (!UOp_Check(u)) {
      PyErr_Format(PyExc_TypeError, "render needs tinyc UOps, item %zd is %.100s", i, Py_TYPE(u)->tp_name);
      Py_CLEAR(seq);
    }
  }
  return seq;
}

/* _render(uops) -> (function name, kernel lines, [(arg name, (dtype, mutable)), ...]) */
static PyObject *Renderer__render(RendererObject *self, PyObject *uops_in) {
  PatternMatcher *pm = native_get("cstyle_base_rewrite");
  PyObject *uops = pm ? uop_sequence(uops_in) : NULL;
  if (!uops) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(uops);
#if PY_VERSION_HEX < 0x030D0000
  PyObject *r = _PyDict_NewPresized(n);   /* a text for (nearly) every node: no rehashing while filling */
#else
  PyObject *r = PyDict_New();
#endif
  RenderState st = {self, pm, r, PyDict_New(), PyList_New(0), {0}, NULL, 1, {0}, env_long("EXPAND_SSA", 0) != 0};
  PyObject *ret = NULL, *name = NULL, *bufs;
  if (ptrmap_reserve(&st.child_count, (size_t)n * 2) < 0) goto done;   /* child counts: sized up front */
  if (!st.r || !st.bufs || !st.kernel || count_children(&st.child_count, PySequence_Fast_ITEMS(uops), n) < 0) goto done;
  Py_XSETREF(self->r, Py_NewRef(st.r));
  for (Py_ssize_t i = 0; i < n; i++) {
    Py_ssize_t mark = pool_mark();
    int rc = render_uop(&st, (UOp *)PySequence_Fast_GET_ITEM(uops, i));
    if (rc == 0 && st.name) Py_XSETREF(name, Py_NewRef(st.name));   /* keep the SINK's name past the pool */
    st.name = NULL;
    pool_release(mark);
    if (rc < 0) goto done;
  }
  if ((bufs = PyDict_Values(st.bufs))) ret = Py_BuildValue("(NON)", name ? Py_NewRef(name) : PyUnicode_FromString("test"), st.kernel, bufs);
done:
  Py_CLEAR(self->r);
  ptrmap_free(&st.child_count);
  Py_XDECREF(name); Py_XDECREF(st.r); Py_XDECREF(st.bufs); Py_XDECREF(st.kernel); Py_DECREF(uops);
  return ret;
}

/* ================================================================================================
 * render_kernel (ClangRenderer's: vector typedefs, then the function)
 * ================================================================================================ */

/* "typedef float float4 __attribute__((aligned(16),ext_vector_type(4)));" (alignment rounded down to a power of two) */
static PyObject *render_vector_prefix(DType *dt) {
  int itemsize = dtype_itemsize(dt), alignment = 1;
  if (env_long("ALIGNED", 1) && !dtype_is_bool(dt)) while (alignment * 2 <= itemsize) alignment *= 2;
  PyObject *s = render_dtype(dtype_scalar(dt)), *v = s ? render_dtype(dt) : NULL;
  PyObject *ret = v ? PyUnicode_FromFormat("typedef %U %U __attribute__((aligned(%d),ext_vector_type(%d)));", s, v, alignment, dt->count) : NULL;
  Py_XDECREF(s); Py_XDECREF(v);
  return ret;
}

/* the typedef lines for every vector dtype the uops use, first use first (new reference, a list) */
static PyObject *render_defines(PyObject *uops) {
  PyObject *seen = PySet_New(NULL), *lines = PyList_New(0);
  for (Py_ssize_t i = 0; seen && lines && i < PySequence_Fast_GET_SIZE(uops); i++) {
    UOp *u = (UOp *)PySequence_Fast_GET_ITEM(uops, i);
    if (u->op == OP_WMMA) { PyErr_SetString(PyExc_NotImplementedError, "ClangRenderer: WMMA (AMX) kernels are not supported"); goto fail; }
    if (u->dtype->is_ptr || u->dtype->count <= 1) continue;
    int had = PySet_Contains(seen, (PyObject *)u->dtype);
    if (had < 0 || (!had && PySet_Add(seen, (PyObject *)u->dtype) < 0)) goto fail;
    if (had) continue;
    PyObject *line = render_vector_prefix(u->dtype);
    if (!line || PyList_Append(lines, line) < 0) { Py_XDECREF(line); goto fail; }
    Py_DECREF(line);
  }
  if (!seen || !lines) goto fail;
  Py_DECREF(seen);
  return lines;
fail:
  Py_XDECREF(seen); Py_XDECREF(lines);
  return NULL;
}

/* "<type> <name>" of one kernel argument (name, (dtype, mutable)); pooled */
static PyObject *render_argument(PyObject *buf) {
  PyObject *name, *dtype, *mutable_;
  if (!PyArg_ParseTuple(buf, "O(OO)", &name, &dtype, &mutable_)) return NULL;
  if (!DType_Check(dtype)) return PyErr_Format(PyExc_TypeError, "a kernel argument's dtype must be a DType");
  DType *dt = (DType *)dtype;
  if (dt->is_ptr) return pool_keep(PyUnicode_FromFormat("%S%s %S", dtype_text(dt), BUFFER_SUFFIX, name));
  return pool_keep(PyUnicode_FromFormat("%s %S", dt == DTYPE(INT32) ? ARG_INT_PREFIX : "None", name));
}

/* "\n".join(lines) of a sequence of strs: pooled */
static PyObject *join_lines(PyObject *lines) {
  PyObject *nl = pool_keep(PyUnicode_FromString("\n"));
  return nl ? pool_keep(PyUnicode_Join(nl, lines)) : NULL;
}

/* the function: "void name(args, int core_id) {\n<lines>\n}", after the prefix lines when given. Pooled. */
static PyObject *render_function(PyObject *name, PyObject *kernel, PyObject *bufs, PyObject *prefix) {
  PyObject *args = pool_keep(PyList_New(0)), *comma = pool_keep(PyUnicode_FromString(", "));
  PyObject *seq = args && comma ? pool_keep(PySequence_Fast(bufs, "bufs must be a sequence")) : NULL;
  if (!seq) return NULL;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *arg = render_argument(PySequence_Fast_GET_ITEM(seq, i));
    if (!arg || PyList_Append(args, arg) < 0) return NULL;
  }
  PyObject *extra = pool_keep(PyUnicode_FromString(EXTRA_ARG));
  if (!extra || PyList_Append(args, extra) < 0) return NULL;
  PyObject *body = join_lines(kernel), *joined = body ? pool_keep(PyUnicode_Join(comma, args)) : NULL;
  PyObject *prg = joined ? pool_keep(PyUnicode_FromFormat("%s %S(%S) {\n%S\n}", KERNEL_TYPEDEF, name, joined, body)) : NULL;
  if (!prg || prefix == Py_None) return prg;
  return (PyObject *)fmt2("%S\n%S", join_lines(prefix), prg);
}

/* render_kernel(function_name, kernel, bufs, uops, prefix=None): new reference */
static PyObject *clang_render_kernel(PyObject *name, PyObject *kernel, PyObject *bufs, PyObject *uops_in, PyObject *prefix) {
  PyObject *uops = uop_sequence(uops_in);
  if (!uops) return NULL;
  Py_ssize_t mark = pool_mark();
  PyObject *defines = render_defines(uops), *ret = NULL;
  PyObject *dtext = defines ? join_lines(defines) : NULL, *fn = dtext ? render_function(name, kernel, bufs, prefix) : NULL;
  if (fn) ret = PyUnicode_FromFormat("%S\n%S\n", dtext, fn);   /* Clang's _render_entry is empty */
  pool_release(mark);
  Py_XDECREF(defines); Py_DECREF(uops);
  return ret;
}

/* ================================================================================================
 * ClangRenderer.extra_matcher: Clang's own cast rules, then create_non_native_float_pats((bfloat16,)),
 * pm_manual_bf16_cast and CStyleLanguage's extra_pm, in tinygrad's order
 * ================================================================================================ */

/* devectorizer.py's no_vectorized_alu: a vector op becomes a VECTORIZE of the op on each lane */
static UOp *no_vectorized_alu(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  UOp *alu = m->alu;
  int lanes = dtype_vcount(alu->dtype);
  if (lanes == 1) return NULL;
  if (alu->op == OP_WHERE && alu->nsrc == 3 && alu->src[2]->arg == Invalid) return NULL;   /* image index: cond.where(idx, Invalid) */
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)(alu->nsrc + lanes));
  if (!src) return (UOp *)PyErr_NoMemory();
  UOp **per_lane = src + alu->nsrc;
  for (int i = 0; i < lanes; i++) {
    for (int j = 0; j < alu->nsrc; j++) src[j] = u_gep(alu->src[j], n_int(i));
    per_lane[i] = u_new((Op)alu->op, dtype_scalar(alu->dtype), src, alu->nsrc, alu->arg);
  }
  UOp *ret = u_new(OP_VECTORIZE, alu->dtype, per_lane, lanes, NULL);
  PyMem_Free(src);
  return ret;
}

/* a cast that LLVM would lower to a libcall goes through float32 first */
static UOp *cast_via_float32(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  UOp *cast = m->slot[SLOT_cast_root];
  return u_cast(u_cast(m->x, DTYPE(FLOAT32)), cast->dtype);
}

/* a bfloat16 where selects in float and casts back */
static UOp *bf16_where(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  UOp *src[3] = {m->b, u_cast(m->x, DTYPE(FLOAT32)), u_cast(m->y, DTYPE(FLOAT32))};
  return u_cast(u_new(OP_WHERE, DTYPE(FLOAT32), src, 3, NULL), m->x->dtype);
}

/* a bfloat16 ALU op computes in float and casts back */
static UOp *bf16_alu(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  UOp *x = m->x, *src[4];
  if (x->nsrc > 4) return (UOp *)PyErr_Format(PyExc_ValueError, "an ALU op with %d sources", x->nsrc);
  for (int i = 0; i < x->nsrc; i++) src[i] = u_cast(x->src[i], DTYPE(FLOAT32));
  return u_cast(u_new((Op)x->op, DTYPE(FLOAT32), src, x->nsrc, x->arg), x->dtype);
}

/* a comparison of bfloat16s compares floats */
static UOp *bf16_compare(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  UOp *src[2] = {u_cast(m->x, DTYPE(FLOAT32)), u_cast(m->y, DTYPE(FLOAT32))};
  return u_new((Op)m->alu->op, DTYPE(BOOL), src, 2, m->alu->arg);
}

/* a cast to bfloat16 from anything but float goes through float */
static UOp *bf16_cast_to(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  return m->x->dtype == DTYPE(FLOAT32) ? NULL : u_cast(u_cast(m->x, DTYPE(FLOAT32)), m->y->dtype);
}

/* a cast from bfloat16 to anything but float goes through float */
static UOp *bf16_cast_from(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  return m->x->dtype == DTYPE(FLOAT32) ? NULL : u_cast(u_cast(m->y, DTYPE(FLOAT32)), m->x->dtype);
}

static UOp *u_bitcast(UOp *x, DType *dt) { return x ? u_new(OP_BITCAST, dt, &x, 1, NULL) : NULL; }

/* bfloat16 -> float: the 16 bits become the high half of a float's bits */
static UOp *bf16_to_float(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  return u_bitcast(u_binop(OP_SHL, u_cast(u_bitcast(m->x, DTYPE(UINT16)), DTYPE(UINT32)), n_int(16)), DTYPE(FLOAT32));
}

/* float -> bfloat16 with round-to-nearest-even; nan keeps a mantissa bit, inf stays inf (cast_float_to_bf16) */
static UOp *float_to_bf16(Captures *m, PyObject *ctx) {
  UNUSED(ctx);
  if (m->x->dtype != DTYPE(FLOAT32)) return (UOp *)PyErr_Format(PyExc_AssertionError, "cast float -> bf16 must start with float");
  UOp *x = u_bitcast(m->x, DTYPE(UINT32));
  UOp *finite = u_binop(OP_CMPNE, u_binop(OP_AND, u_neg(x), n_int(0x7f800000)), n_int(0));
  UOp *rounded = u_binop(OP_ADD, u_add(x, u_binop(OP_AND, u_binop(OP_SHR, x, n_int(16)), n_int(1))), n_int(0x7fff));
  UOp *nan_keep = u_where(u_binop(OP_CMPNE, u_binop(OP_AND, x, n_int(0xffff)), n_int(0)), u_binop(OP_OR, x, n_int(0x10000)), x);
  UOp *bits = u_where(finite, rounded, nan_keep);
  return u_bitcast(u_cast(u_binop(OP_SHR, bits, n_int(16)), DTYPE(UINT16)), DTYPE(BFLOAT16));
}

static const RuleDef clang_extra_matcher_defs[] = {
  /* ClangRenderer's own */
  {"UPat.var('x', dtypes.float64).cast(dtypes.float16, name='cast_root')", cast_via_float32},
  {"UPat.var('x', dtypes.float64).cast(dtypes.bfloat16, name='cast_root')", cast_via_float32},
  {"UPat.var('x', dtypes.bfloat16).cast(dtypes.float16, name='cast_root')", cast_via_float32},
  {"UPat((Ops.SQRT, Ops.TRUNC), name='alu')", no_vectorized_alu},
  /* create_non_native_float_pats((dtypes.bfloat16,)) */
  {"UPat(Ops.WHERE, src=(UPat.var('b'), UPat.var('x', dtype=(dtypes.bfloat16,)), UPat.var('y', dtype=(dtypes.bfloat16,))))", bf16_where},
  {"UPat(GroupOp.ALU, dtype=(dtypes.bfloat16,), name='x')", bf16_alu},
  {"UPat(GroupOp.ALU, dtypes.bool, name='alu', src=(UPat.var('x', dtype=(dtypes.bfloat16,)), UPat.var('y', dtype=(dtypes.bfloat16,))))",
   bf16_compare},
  {"UPat(Ops.CAST, (dtypes.bfloat16,), (UPat.var('x'),), name='y')", bf16_cast_to},
  {"UPat(Ops.CAST, name='x', src=(UPat.var('y', (dtypes.bfloat16,)),))", bf16_cast_from},
  /* pm_manual_bf16_cast */
  {"UPat(Ops.CAST, dtypes.float, (UPat.var('x', dtypes.bfloat16),))", bf16_to_float},
  {"UPat(Ops.CAST, dtype=dtypes.bfloat16, src=(UPat.var('x', dtype=dtypes.float),))", float_to_bf16},
  /* CStyleLanguage.extra_matcher (extra_pm): bools, casts from bool and wheres are never vectors */
  {"UPat((*GroupOp.ALU, Ops.CAST, Ops.BITCAST, Ops.INDEX), dtype=dtypes.bool, name='alu')", no_vectorized_alu},
  {"UPat(Ops.CAST, src=(UPat(dtype=dtypes.bool),), name='alu')", no_vectorized_alu},
  {"UPat(Ops.WHERE, name='alu')", no_vectorized_alu},
};

static int init_extra_matcher(void) {
  SLOT_cast_root = capture_slot("cast_root");
  if (SLOT_cast_root < 0) return -1;
  return native_register("clang_extra_matcher", pm_from_defs(clang_extra_matcher_defs, N(clang_extra_matcher_defs)));
}

/* ================================================================================================
 * the Python types: Renderer (renderer/__init__.py) and ClangRenderer
 * ================================================================================================ */

static void Renderer_dealloc(RendererObject *self) {
  Py_XDECREF(self->dict); Py_XDECREF(self->r);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* self[key]: the text rendered for a node during a render (tinygrad's self.r[key]) */
static PyObject *Renderer_getitem(RendererObject *self, PyObject *key) {
  if (!self->r) return PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute 'r'", Py_TYPE(self)->tp_name);
  return PyObject_GetItem(self->r, key);
}
static PyMappingMethods Renderer_as_mapping = {NULL, (binaryfunc)Renderer_getitem, NULL};

static PyObject *Renderer_render(PyObject *self, PyObject *uops) {
  UNUSED(self); UNUSED(uops);
  PyErr_SetString(PyExc_NotImplementedError, "needs a renderer");
  return NULL;
}
static PyObject *Renderer_aux(PyObject *self, PyObject *uops) {
  UNUSED(self); UNUSED(uops);
  PyErr_SetString(PyExc_NotImplementedError, "needs aux");
  return NULL;
}
/* a renderer pickles as its class: (cls, ()) */
static PyObject *Renderer_reduce(PyObject *self, PyObject *unused) {
  UNUSED(unused);
  return Py_BuildValue("(O())", (PyObject *)Py_TYPE(self));
}

static PyMethodDef Renderer_methods[] = {
  {"render", Renderer_render, METH_O, "render(uops) -> the kernel's source"},
  {"aux", Renderer_aux, METH_O, "additional program info"},
  {"__reduce__", Renderer_reduce, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL},
};

PyTypeObject Renderer_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.Renderer",
  .tp_basicsize = sizeof(RendererObject),
  .tp_dealloc = (destructor)Renderer_dealloc,
  .tp_as_mapping = &Renderer_as_mapping,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "tinygrad's Renderer: the settings of a code generator and render(uops) -> source",
  .tp_methods = Renderer_methods,
  .tp_dictoffset = offsetof(RendererObject, dict),
  .tp_new = PyType_GenericNew,
};

/* render(uops): the C source of the kernel, as tinygrad's ClangRenderer().render(uops) */
static PyObject *Clang_render(RendererObject *self, PyObject *uops) {
  PyObject *parts = Renderer__render(self, uops);
  if (!parts) return NULL;
  PyObject *ret = clang_render_kernel(PyTuple_GET_ITEM(parts, 0), PyTuple_GET_ITEM(parts, 1), PyTuple_GET_ITEM(parts, 2), uops, Py_None);
  Py_DECREF(parts);
  return ret;
}

static PyObject *Clang_render_kernel(PyObject *self, PyObject *args, PyObject *kw) {
  UNUSED(self);
  static char *kwlist[] = {"function_name", "kernel", "bufs", "uops", "prefix", NULL};
  PyObject *name, *kernel, *bufs, *uops, *prefix = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|O:render_kernel", kwlist, &name, &kernel, &bufs, &uops, &prefix)) return NULL;
  return clang_render_kernel(name, kernel, bufs, uops, prefix);
}

static PyObject *Clang_render_dtype(PyObject *self, PyObject *args, PyObject *kw) {
  UNUSED(self);
  static char *kwlist[] = {"dt", "mutable", NULL};
  PyObject *dt;
  int mutable_ = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|p:render_dtype", kwlist, &DType_Type, &dt, &mutable_)) return NULL;
  return render_dtype((DType *)dt);
}

static PyObject *Clang_render_cast(PyObject *self, PyObject *args) {
  UNUSED(self);
  PyObject *dt, *val;
  if (!PyArg_ParseTuple(args, "O!U:render_cast", &DType_Type, &dt, &val)) return NULL;
  Py_ssize_t mark = pool_mark();
  PyObject *ret = Py_XNewRef(render_cast((DType *)dt, val));
  pool_release(mark);
  return ret;
}

static PyObject *Clang_render_vector_prefix(PyObject *self, PyObject *dt) {
  UNUSED(self);
  if (!DType_Check(dt)) return PyErr_Format(PyExc_TypeError, "render_vector_prefix needs a DType");
  return render_vector_prefix((DType *)dt);
}

static PyMethodDef Clang_methods[] = {
  {"render", (PyCFunction)Clang_render, METH_O, "render(uops) -> the kernel's C source"},
  {"_render", (PyCFunction)Renderer__render, METH_O, "_render(uops) -> (name, kernel lines, bufs)"},
  {"render_kernel", (PyCFunction)(void (*)(void))Clang_render_kernel, METH_VARARGS | METH_KEYWORDS, NULL},
  {"render_dtype", (PyCFunction)(void (*)(void))Clang_render_dtype, METH_VARARGS | METH_KEYWORDS, NULL},
  {"render_cast", Clang_render_cast, METH_VARARGS, NULL},
  {"render_vector_prefix", Clang_render_vector_prefix, METH_O, NULL},
  {NULL, NULL, 0, NULL},
};

PyTypeObject ClangRenderer_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.ClangRenderer",
  .tp_basicsize = sizeof(RendererObject),
  .tp_dealloc = (destructor)Renderer_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "tinygrad's ClangRenderer: C source for the CPU device",
  .tp_methods = Clang_methods,
  .tp_base = &Renderer_Type,
  .tp_new = PyType_GenericNew,
};

/* ---- class attributes ---- */

/* set one class attribute, stealing v */
static int set_attr(PyTypeObject *t, const char *name, PyObject *v) {
  int rc = v ? PyDict_SetItemString(t->tp_dict, name, v) : -1;
  Py_XDECREF(v);
  return rc;
}

static PyObject *int_tuple3(long a, long b, long c) { return Py_BuildValue("(lll)", a, b, c); }

static int init_renderer_attrs(PyTypeObject *t) {
  return set_attr(t, "device", PyUnicode_FromString("")) < 0 || set_attr(t, "suffix", PyUnicode_FromString("")) < 0 ||
    set_attr(t, "supports_float4", Py_NewRef(Py_True)) < 0 || set_attr(t, "has_local", Py_NewRef(Py_True)) < 0 ||
    set_attr(t, "has_threads", Py_NewRef(Py_False)) < 0 || set_attr(t, "has_shared", Py_NewRef(Py_True)) < 0 ||
    set_attr(t, "has_aux", Py_NewRef(Py_False)) < 0 || set_attr(t, "global_max", int_tuple3(0x8FFFFFFF, 0x8FFFFFFF, 0x8FFFFFFF)) < 0 ||
    set_attr(t, "local_max", int_tuple3(0x8FFFFFFF, 0x8FFFFFFF, 0x8FFFFFFF)) < 0 || set_attr(t, "shared_max", PyLong_FromLong(32768)) < 0 ||
    set_attr(t, "tensor_cores", PyTuple_New(0)) < 0 || set_attr(t, "pre_matcher", Py_NewRef(Py_None)) < 0 ||
    set_attr(t, "extra_matcher", Py_NewRef(Py_None)) < 0 || set_attr(t, "code_for_op", PyDict_New()) < 0 ||
    set_attr(t, "compiler", Py_NewRef(Py_None)) < 0 ? -1 : 0;
}

/* CPU_COUNT: the env setting, else the cores this process may run on (at least 1) */
static long cpu_count(void) {
  long env = env_long("CPU_COUNT", 0);
  if (env) return env;
  PyObject *os = PyImport_ImportModule("os"), *cpus = os ? PyObject_CallMethod(os, "sched_getaffinity", "i", 0) : NULL;
  Py_ssize_t n = cpus ? PySequence_Length(cpus) : -1;
  Py_XDECREF(os); Py_XDECREF(cpus);
  if (n < 0) PyErr_Clear();
  return n > 1 ? (long)n : 1;
}

/* Clang's code_for_op, in tinygrad's key order, each value a callable (*operand texts, dtype) -> text */
static PyObject *clang_code_for_op_dict(void) {
  static const Op keys[] = {OP_SQRT, OP_NEG, OP_AND, OP_XOR, OP_OR, OP_ADD, OP_SUB, OP_MUL, OP_MOD, OP_IDIV, OP_CMPNE, OP_SHR,
                            OP_SHL, OP_CMPLT, OP_WHERE, OP_CMPEQ, OP_TRUNC, OP_FDIV};
  PyObject *d = PyDict_New();
  for (size_t i = 0; d && i < sizeof(keys) / sizeof(keys[0]); i++) {
    PyObject *fn = PyCFunction_New(&code_for_op_def, ops_members[keys[i]]);
    if (!fn || PyDict_SetItem(d, ops_members[keys[i]], fn) < 0) { Py_XDECREF(fn); Py_CLEAR(d); break; }
    Py_DECREF(fn);
  }
  return d;
}

static int init_clang_attrs(PyTypeObject *t) {
  PyObject *extra = (PyObject *)native_get("clang_extra_matcher");
  return set_attr(t, "device", PyUnicode_FromString("CPU")) < 0 || set_attr(t, "has_local", Py_NewRef(Py_False)) < 0 ||
    set_attr(t, "has_threads", PyBool_FromLong(env_long("THREADS", 1) != 0)) < 0 ||
    set_attr(t, "global_max", int_tuple3(cpu_count(), 0, 0)) < 0 || set_attr(t, "code_for_op", clang_code_for_op_dict()) < 0 ||
    set_attr(t, "extra_matcher", Py_NewRef(extra ? extra : Py_None)) < 0 ||
    set_attr(t, "string_rewrite", Py_NewRef((PyObject *)native_get("cstyle_base_rewrite"))) < 0 ||
    set_attr(t, "kernel_typedef", PyUnicode_FromString(KERNEL_TYPEDEF)) < 0 || set_attr(t, "buffer_prefix", PyUnicode_FromString("")) < 0 ||
    set_attr(t, "buffer_suffix", PyUnicode_FromString(BUFFER_SUFFIX)) < 0 || set_attr(t, "smem_align", PyUnicode_FromString("")) < 0 ||
    set_attr(t, "smem_prefix", PyUnicode_FromString("")) < 0 || set_attr(t, "arg_int_prefix", PyUnicode_FromString(ARG_INT_PREFIX)) < 0 ||
    set_attr(t, "barrier", PyUnicode_FromString("")) < 0 || set_attr(t, "extra_args", Py_BuildValue("[s]", EXTRA_ARG)) < 0 ||
    set_attr(t, "float4", PyUnicode_FromString("(float4)")) < 0 || set_attr(t, "float4_style", Py_BuildValue("(ss)", "{", "}")) < 0 ||
    set_attr(t, "gep_arr_threshold", PyLong_FromLong(GEP_ARR_THRESHOLD)) < 0 ||
    set_attr(t, "infinity", PyUnicode_FromString(INFINITY_TEXT)) < 0 || set_attr(t, "nan", PyUnicode_FromString(NAN_TEXT)) < 0 ? -1 : 0;
}

int tinyc_init_cstyle(PyObject *m) {
  SLOT_bidx = capture_slot("bidx");
  if (SLOT_bidx < 0) return -1;
  if (native_register("cstyle_base_rewrite", pm_from_defs(base_rewrite_defs, N(base_rewrite_defs))) < 0) return -1;
  if (init_extra_matcher() < 0) return -1;
  if (PyType_Ready(&Renderer_Type) < 0 || PyType_Ready(&ClangRenderer_Type) < 0) return -1;
  if (init_renderer_attrs(&Renderer_Type) < 0 || init_clang_attrs(&ClangRenderer_Type) < 0) return -1;
  PyType_Modified(&Renderer_Type);
  PyType_Modified(&ClangRenderer_Type);
  return tinyc_add(m, "Renderer", (PyObject *)&Renderer_Type) < 0 || tinyc_add(m, "ClangRenderer", (PyObject *)&ClangRenderer_Type) < 0 ? -1 : 0;
}
