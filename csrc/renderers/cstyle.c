/* tinygrad/renderer/cstyle.py: CStyleLanguage, the one render loop every C-style backend shares, its string
 * rules (base_rewrite) and extra matchers (extra_pm, create_non_native_float_pats, pm_manual_bf16_cast), and the
 * backends: CStyleLanguage's own defaults, ClangRenderer, ClangJITRenderer and OpenCLRenderer (with tinygrad's image
 * rules: image2d_t arguments, read_imagef / write_imagef).
 *
 * A backend is data: a settings table (CStyleLanguageDef, one const struct per language) plus its extra matcher
 * and the few methods tinygrad gives it. A table becomes the class attributes of its Python type at init (one
 * source of truth). A render reads the effective settings once, one attribute lookup each (CStyleSettings), so
 * a Python subclass that sets kernel_typedef, type_map, code_for_op, ... (on the class or the instance) or
 * overrides render_dtype, render_cast, render_kernel renders what the same subclass of tinygrad's renders. An
 * instance of a native type with none of them set on it renders with its class's settings, read once at init.
 *
 * The string rules return Python strs, not UOps; their ctx is the renderer, whose `r` dict holds the text of
 * every node rendered so far (sources come before their users in a linearized list). They reach the settings
 * through the ctx (rule_settings: a TypeError for a ctx that is not a CStyleLanguage). */
#include "renderer.h"
#include "../uop/form.h"
#include "../codegen/late/devectorizer.h"
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <string.h>

static PyObject *str_empty, *str_space, *str_underscore, *str_comma, *str_comma_space, *str_newline, *str_float4;

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
 * the language tables
 * ================================================================================================ */

/* a code_for_op entry: the op's C expression as text_format templates, one %S per operand in order */
typedef struct { Op op; const char *code; const char *code_f64; /* for float64, where it differs */ } OpCode;
/* a code_for_workitem entry: the C expression of a SPECIAL of this kind, every %S its dimension (x.arg[-1]) */
typedef struct { const char *kind; const char *code; } WorkitemCode;
/* a type_map entry */
typedef struct { DTypeId dtype; const char *name; } TypeName;

/* A native code_for_op or code_for_workitem value: a table entry the render loop applies in C, callable from Python as
 * tinygrad's lambdas are. */
typedef struct { PyObject_HEAD const OpCode *op; const WorkitemCode *workitem; } NativeCode;
static PyTypeObject NativeCode_Type;

typedef struct CStyleSettings CStyleSettings;
/* a language's render_kernel(function_name, kernel, bufs, uops, prefix): a new reference */
typedef PyObject *(*RenderKernelFn)(CStyleSettings *s, PyObject *self, PyObject *name, PyObject *kernel, PyObject *bufs,
                                    PyObject *uops, PyObject *prefix);

/* The settings of one language, tinygrad's CStyleLanguage class attributes (and render_kernel) */
typedef struct {
  const char *kernel_typedef, *buffer_prefix, *buffer_suffix, *smem_align, *smem_prefix;
  bool smem_prefix_for_cast;
  const char *arg_int_prefix, *barrier;
  const WorkitemCode *code_for_workitem;   /* ends at kind NULL */
  const char *const *extra_args;           /* ends at NULL */
  const char *float4;                      /* NULL: None */
  const char *float4_style[2];
  int gep_arr_threshold;
  const TypeName *type_map;                /* ends at name NULL */
  const char *infinity, *nan;
  const OpCode *code_for_op;               /* ends at OP_NONE, in tinygrad's key order */
  const char *string_rewrite, *extra_matcher;   /* names of registered rule sets */
  RenderKernelFn render_kernel;
} CStyleLanguageDef;

static PyObject *cstyle_render_kernel(CStyleSettings *s, PyObject *self, PyObject *name, PyObject *kernel, PyObject *bufs,
                                      PyObject *uops, PyObject *prefix);
static PyObject *clang_render_kernel(CStyleSettings *s, PyObject *self, PyObject *name, PyObject *kernel, PyObject *bufs,
                                     PyObject *uops, PyObject *prefix);
static PyObject *opencl_render_kernel(CStyleSettings *s, PyObject *self, PyObject *name, PyObject *kernel, PyObject *bufs,
                                      PyObject *uops, PyObject *prefix);

/* CStyleLanguage's own: what every C-style language starts from */
static const OpCode cstyle_code_for_op[] = {
  {OP_SQRT, "sqrt(%S)", NULL}, {OP_RECIPROCAL, "(1/%S)", NULL}, {OP_NEG, "-%S", NULL}, {OP_EXP2, "exp2(%S)", NULL},
  {OP_LOG2, "log2(%S)", NULL}, {OP_SIN, "sin(%S)", NULL}, {OP_TRUNC, "trunc(%S)", NULL},
  {OP_AND, "(%S&%S)", NULL}, {OP_XOR, "(%S^%S)", NULL}, {OP_OR, "(%S|%S)", NULL}, {OP_ADD, "(%S+%S)", NULL},
  {OP_SUB, "(%S-%S)", NULL}, {OP_MUL, "(%S*%S)", NULL}, {OP_MOD, "(%S%%%S)", NULL}, {OP_IDIV, "(%S/%S)", NULL},
  {OP_CMPNE, "(%S!=%S)", NULL}, {OP_SHR, "(%S>>%S)", NULL}, {OP_SHL, "(%S<<%S)", NULL}, {OP_CMPLT, "(%S<%S)", NULL},
  {OP_WHERE, "(%S?%S:%S)", NULL}, {OP_CMPEQ, "(%S==%S)", NULL}, {OP_NONE, NULL, NULL},
};
static const WorkitemCode no_workitems[] = {{NULL, NULL}};
static const char *const no_extra_args[] = {NULL};
static const TypeName no_type_map[] = {{DT_VOID, NULL}};

static const CStyleLanguageDef cstyle_language = {
  .kernel_typedef = "void", .buffer_prefix = "", .buffer_suffix = "", .smem_align = "", .smem_prefix = "", .smem_prefix_for_cast = true,
  .arg_int_prefix = "const int", .barrier = "", .code_for_workitem = no_workitems, .extra_args = no_extra_args, .float4 = NULL,
  .float4_style = {"(", ")"}, .gep_arr_threshold = 4, .type_map = no_type_map, .infinity = "INFINITY", .nan = "NAN",
  .code_for_op = cstyle_code_for_op, .string_rewrite = "base_rewrite", .extra_matcher = "extra_pm", .render_kernel = cstyle_render_kernel,
};

/* ClangRenderer: CStyleLanguage's code_for_op without EXP2, LOG2, SIN, RECIPROCAL, with the builtins for SQRT and TRUNC,
 * and FDIV */
static const OpCode clang_code_for_op[] = {
  {OP_SQRT, "__builtin_sqrtf(%S)", "__builtin_sqrt(%S)"}, {OP_NEG, "-%S", NULL}, {OP_AND, "(%S&%S)", NULL},
  {OP_XOR, "(%S^%S)", NULL}, {OP_OR, "(%S|%S)", NULL}, {OP_ADD, "(%S+%S)", NULL}, {OP_SUB, "(%S-%S)", NULL},
  {OP_MUL, "(%S*%S)", NULL}, {OP_MOD, "(%S%%%S)", NULL}, {OP_IDIV, "(%S/%S)", NULL}, {OP_CMPNE, "(%S!=%S)", NULL},
  {OP_SHR, "(%S>>%S)", NULL}, {OP_SHL, "(%S<<%S)", NULL}, {OP_CMPLT, "(%S<%S)", NULL}, {OP_WHERE, "(%S?%S:%S)", NULL},
  {OP_CMPEQ, "(%S==%S)", NULL}, {OP_TRUNC, "__builtin_truncf(%S)", "__builtin_trunc(%S)"}, {OP_FDIV, "(%S/%S)", NULL},
  {OP_NONE, NULL, NULL},
};
static const WorkitemCode clang_workitems[] = {{"g", "core_id"}, {NULL, NULL}};   /* the only workitem: the thread's core */
static const char *const clang_extra_args[] = {"int core_id", NULL};
static const TypeName clang_type_map[] = {{DT_BOOL, "_Bool"}, {DT_FLOAT16, "__fp16"}, {DT_VOID, NULL}};

static const CStyleLanguageDef clang_language = {
  .kernel_typedef = "void", .buffer_prefix = "", .buffer_suffix = " restrict", .smem_align = "", .smem_prefix = "",
  .smem_prefix_for_cast = true, .arg_int_prefix = "const int", .barrier = "", .code_for_workitem = clang_workitems,
  .extra_args = clang_extra_args, .float4 = "(float4)", .float4_style = {"{", "}"}, .gep_arr_threshold = 0,
  .type_map = clang_type_map, .infinity = "__builtin_inff()", .nan = "__builtin_nanf(\"\")", .code_for_op = clang_code_for_op,
  .string_rewrite = "base_rewrite", .extra_matcher = "clang_extra_matcher", .render_kernel = clang_render_kernel,
};

/* OpenCLRenderer: CStyleLanguage's code_for_op, OpenCL's work-item functions and type names */
static const WorkitemCode opencl_workitems[] = {
  {"g", "get_group_id(%S)"}, {"l", "get_local_id(%S)"}, {"i", "get_global_id(%S)"}, {NULL, NULL},
};
static const TypeName opencl_type_map[] = {
  {DT_INT8, "char"}, {DT_UINT8, "uchar"}, {DT_UINT32, "uint"}, {DT_UINT16, "ushort"}, {DT_UINT64, "ulong"}, {DT_BFLOAT16, "ushort"},
  {DT_VOID, NULL},
};

static const CStyleLanguageDef opencl_language = {
  .kernel_typedef = "__kernel void", .buffer_prefix = "__global ", .buffer_suffix = "", .smem_align = "__attribute__ ((aligned (16))) ",
  .smem_prefix = "__local ", .smem_prefix_for_cast = true, .arg_int_prefix = "const int", .barrier = "barrier(CLK_LOCAL_MEM_FENCE);",
  .code_for_workitem = opencl_workitems, .extra_args = no_extra_args, .float4 = "(float4)", .float4_style = {"(", ")"},
  .gep_arr_threshold = 4, .type_map = opencl_type_map, .infinity = "INFINITY", .nan = "NAN", .code_for_op = cstyle_code_for_op,
  .string_rewrite = "opencl_string_rewrite", .extra_matcher = "opencl_extra_matcher", .render_kernel = opencl_render_kernel,
};

/* ================================================================================================
 * the settings a render reads
 * ================================================================================================ */

/* The effective settings of a renderer: its attributes (owned references) as the render loop uses them. */
struct CStyleSettings {
  PyObject *kernel_typedef, *buffer_prefix, *buffer_suffix, *smem_align, *smem_prefix, *smem_prefix_for_cast, *arg_int_prefix,
    *barrier, *code_for_workitem, *extra_args, *float4, *float4_style, *gep_arr_threshold, *type_map, *infinity, *nan,
    *code_for_op, *string_rewrite;
  /* the methods a Python subclass overrides (bound), NULL where the renderer's method is tinyc's own */
  PyObject *render_dtype, *render_cast, *render_kernel, *_render;
  /* derived */
  bool prefix_local_casts;           /* smem_prefix_for_cast is true */
  long gep_threshold;
  const CStyleLanguageDef *lang;     /* the table of the nearest native type in the renderer's MRO */
  bool plain;                        /* a native type's class settings: no method is overridden */
  bool owned;                        /* the references are this struct's (read), not its class's (copied) */
  /* code_for_op and type_map as tables, resolved at the start of a call */
  const OpCode *op_codes[OP_COUNT];  /* the native entries by op; NULL for a Python callable (or no entry) */
  PyObject *type_names[DT_COUNT];    /* the names of the standard scalars (owned: a rule may change type_map); NULL for none */
};

typedef enum { K_STR, K_STR_OR_NONE, K_TRUTH, K_INT, K_PAIR, K_STRS, K_DICT, K_MATCHER, K_METHOD } SettingKind;
static const char *const kind_wanted[] = {"a str", "a str or None", "", "an int", "a pair of strs", "a list", "a dict",
                                          "a PatternMatcher", ""};
#define SETTING(name, kind) {#name, kind, offsetof(CStyleSettings, name)}
static const struct { const char *name; SettingKind kind; size_t offset; } SETTINGS[] = {
  SETTING(kernel_typedef, K_STR), SETTING(buffer_prefix, K_STR), SETTING(buffer_suffix, K_STR), SETTING(smem_align, K_STR),
  SETTING(smem_prefix, K_STR), SETTING(smem_prefix_for_cast, K_TRUTH), SETTING(arg_int_prefix, K_STR), SETTING(barrier, K_STR),
  SETTING(code_for_workitem, K_DICT), SETTING(extra_args, K_STRS), SETTING(float4, K_STR_OR_NONE), SETTING(float4_style, K_PAIR),
  SETTING(gep_arr_threshold, K_INT), SETTING(type_map, K_DICT), SETTING(infinity, K_STR), SETTING(nan, K_STR),
  SETTING(code_for_op, K_DICT), SETTING(string_rewrite, K_MATCHER),
  SETTING(render_dtype, K_METHOD), SETTING(render_cast, K_METHOD), SETTING(render_kernel, K_METHOD), SETTING(_render, K_METHOD),
};
#define N_SETTINGS N(SETTINGS)
static PyObject *setting_names[N_SETTINGS];   /* interned */

/* ClangRenderer's render_kernel calls these through self, so a subclass may override them too */
enum { M_RENDER_VECTOR_PREFIX, M_RENDER_DEFINES, M_RENDER_BODY, M_RENDER_ENTRY, M_COUNT };
static const char *const clang_method_names[M_COUNT] = {"render_vector_prefix", "_render_defines", "_render_body", "_render_entry"};
static PyObject *clang_methods[M_COUNT];      /* interned */
static PyObject *overridable;                 /* frozenset: every name above */

/* An instance: a Renderer, and the settings of the render in progress on it (NULL outside one). */
typedef struct { RendererObject base; CStyleSettings *settings; } CStyleObject;

/* ctx is a CStyleLanguage: two compares for the native types' own instances, the renderers of the hot path */
static inline bool is_cstyle(PyObject *ctx) {
  PyTypeObject *t = Py_TYPE(ctx);
  return t == &ClangJITRenderer_Type || t == &ClangRenderer_Type || t == &OpenCLRenderer_Type || PyType_IsSubtype(t, &CStyleLanguage_Type);
}

/* the native types, each with its table and its class's settings (read at init from an instance with an empty __dict__) */
static struct { PyTypeObject *type; const CStyleLanguageDef *def; CStyleSettings cls; } native_types[] = {
  {&CStyleLanguage_Type, &cstyle_language, {0}}, {&ClangRenderer_Type, &clang_language, {0}}, {&ClangJITRenderer_Type, &clang_language, {0}},
  {&OpenCLRenderer_Type, &opencl_language, {0}},
};

static PyObject **setting_slot(CStyleSettings *s, int i) { return (PyObject **)((char *)s + SETTINGS[i].offset); }

static void settings_clear(CStyleSettings *s) {
  for (int i = 0; i < N_SETTINGS; i++) Py_CLEAR(*setting_slot(s, i));
}

/* one of tinyc's C methods bound to self: the renderer does not override it */
static bool is_native_method(PyObject *m, PyObject *self) { return PyCFunction_Check(m) && PyCFunction_GET_SELF(m) == self; }

static bool all_strs(PyObject *tuple) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++) if (!PyUnicode_Check(PyTuple_GET_ITEM(tuple, i))) return false;
  return true;
}

/* v (stolen) as setting i is used: itself, or for a pair of strs a tuple; NULL with a TypeError when it cannot be one. (The items
 * of extra_args are checked where they are joined: the list may change after it is read.) */
static PyObject *checked_setting(PyObject *self, int i, PyObject *v) {
  SettingKind kind = SETTINGS[i].kind;
  bool ok = true;
  if (kind == K_STR) ok = PyUnicode_Check(v);
  else if (kind == K_STR_OR_NONE) ok = v == Py_None || PyUnicode_Check(v);
  else if (kind == K_INT) ok = PyLong_Check(v);
  else if (kind == K_DICT) ok = PyDict_Check(v);
  else if (kind == K_MATCHER) ok = PatternMatcher_Check(v);
  else if (kind == K_STRS) ok = PyList_Check(v) || PyTuple_Check(v);
  else if (kind == K_PAIR) {
    PyObject *t = PyTuple_Check(v) || PyList_Check(v) ? PySequence_Tuple(v) : NULL;
    if (t && PyTuple_GET_SIZE(t) == 2 && all_strs(t)) { Py_DECREF(v); return t; }
    if (!t && PyErr_Occurred()) { Py_DECREF(v); return NULL; }
    Py_XDECREF(t);
    ok = false;
  }
  if (ok) return v;
  PyErr_Format(PyExc_TypeError, "%.100s.%s must be %s, not %.100s", Py_TYPE(self)->tp_name, SETTINGS[i].name, kind_wanted[kind],
               Py_TYPE(v)->tp_name);
  Py_DECREF(v);
  return NULL;
}

/* the table of the nearest native type in t's MRO */
static const CStyleLanguageDef *language_of(PyTypeObject *t) {
  for (Py_ssize_t i = 0; t->tp_mro && i < PyTuple_GET_SIZE(t->tp_mro); i++)
    for (int k = 0; k < N(native_types); k++) if (PyTuple_GET_ITEM(t->tp_mro, i) == (PyObject *)native_types[k].type) return native_types[k].def;
  return &cstyle_language;
}

/* s = the settings of renderer self, one attribute lookup each; 0, or -1 with s cleared */
static int settings_read(PyObject *self, CStyleSettings *s) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < N_SETTINGS; i++) {
    PyObject *v = PyObject_GetAttr(self, setting_names[i]);
    if (!v) goto fail;
    if (SETTINGS[i].kind != K_METHOD) {
      if (!(v = checked_setting(self, i, v))) goto fail;
    } else if (is_native_method(v, self)) Py_CLEAR(v);   /* tinyc's own: called in C, not through Python */
    *setting_slot(s, i) = v;
  }
  int prefix = PyObject_IsTrue(s->smem_prefix_for_cast);
  s->gep_threshold = PyLong_AsLong(s->gep_arr_threshold);
  if (prefix < 0 || (s->gep_threshold == -1 && PyErr_Occurred())) goto fail;
  s->prefix_local_casts = prefix;
  s->lang = language_of(Py_TYPE(self));
  s->owned = true;
  return 0;
fail:
  settings_clear(s);
  return -1;
}

/* the class's settings when self is a native type's own instance whose __dict__ sets none of them, else NULL */
static CStyleSettings *class_settings(PyObject *self) {
  for (int k = 0; k < N(native_types); k++) {
    if (Py_TYPE(self) != native_types[k].type) continue;
    PyObject *d = ((RendererObject *)self)->dict, *key, *value;
    Py_ssize_t pos = 0;
    while (d && PyDict_Next(d, &pos, &key, &value)) {
      int set = PySet_Contains(overridable, key);
      if (set < 0) PyErr_Clear();   /* an unhashable key names no setting, but take the slow path */
      if (set != 0) return NULL;
    }
    return &native_types[k].cls;
  }
  return NULL;
}

/* code_for_op's native entries and type_map's names of the standard scalars, as tables indexed by op and dtype */
static void resolve_tables(CStyleSettings *s) {
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  memset(s->op_codes, 0, sizeof s->op_codes);
  memset(s->type_names, 0, sizeof s->type_names);
  while (PyDict_Next(s->code_for_op, &pos, &key, &value)) {
    int op = Py_IS_TYPE(value, &NativeCode_Type) && ((NativeCode *)value)->op ? op_from_object(key) : -1;
    if (op >= 0) s->op_codes[op] = ((NativeCode *)value)->op;
    else PyErr_Clear();   /* a key that is no op is never looked up */
  }
  for (pos = 0; PyDict_Next(s->type_map, &pos, &key, &value);)
    if (DType_Check(key) && ((DType *)key)->id < DT_COUNT && scalar_dtypes[((DType *)key)->id] == (DType *)key)
      Py_XSETREF(s->type_names[((DType *)key)->id], Py_NewRef(value));
}

/* s = renderer self's settings for one call (a render, a method): copied from its class's for a plain native instance, else read;
 * 0, or -1 with an exception on a bad setting. Pair with settings_end. */
static int settings_begin(PyObject *self, CStyleSettings *s) {
  CStyleSettings *cls = class_settings(self);
  if (cls) {
    *s = *cls;
    s->owned = false;
  } else if (settings_read(self, s) < 0) return -1;
  resolve_tables(s);
  return 0;
}
static void settings_end(CStyleSettings *s) {
  for (int i = 0; i < DT_COUNT; i++) Py_CLEAR(s->type_names[i]);
  if (s->owned) settings_clear(s);
}

/* The settings of renderer self (a CStyleLanguage) for one method call: the render in progress's, else begun in *tmp. Pair
 * with settings_release. NULL with an exception on a bad setting. */
static CStyleSettings *settings_acquire(PyObject *self, CStyleSettings *tmp) {
  CStyleSettings *s = ((CStyleObject *)self)->settings;
  if (s) return s;
  return settings_begin(self, tmp) < 0 ? NULL : tmp;
}
static void settings_release(CStyleSettings *s, CStyleSettings *tmp) {
  if (s == tmp) settings_end(tmp);
}

static void settings_capsule_free(PyObject *capsule) {
  CStyleSettings *s = PyCapsule_GetPointer(capsule, "tinyc.CStyleSettings");
  if (s) { settings_end(s); PyMem_Free(s); }
}

/* The settings a string rule reads from its ctx; a TypeError when ctx is not a CStyleLanguage. Outside a render they are read
 * for this one rule and go with its pool. */
static CStyleSettings *rule_settings(PyObject *ctx) {
  if (!is_cstyle(ctx)) {
    PyErr_Format(PyExc_TypeError, "the C-style string rules need a CStyleLanguage as ctx, not %.100s", Py_TYPE(ctx)->tp_name);
    return NULL;
  }
  CStyleSettings *s = ((CStyleObject *)ctx)->settings;
  if (s) return s;
  if (!(s = PyMem_Malloc(sizeof *s))) { PyErr_NoMemory(); return NULL; }
  if (settings_begin(ctx, s) < 0) { PyMem_Free(s); return NULL; }
  PyObject *capsule = PyCapsule_New(s, "tinyc.CStyleSettings", settings_capsule_free);
  if (!capsule) { settings_end(s); PyMem_Free(s); return NULL; }
  return pool_keep(capsule) ? s : NULL;
}

/* *m = self's override of one of ClangRenderer's methods (pooled), NULL where it is tinyc's own; -1 on error */
static int clang_override(CStyleSettings *s, PyObject *self, int method, PyObject **m) {
  *m = NULL;
  if (s->plain) return 0;
  PyObject *attr = PyObject_GetAttr(self, clang_methods[method]);
  if (!attr) return -1;
  if (is_native_method(attr, self)) { Py_DECREF(attr); return 0; }
  return (*m = pool_keep(attr)) ? 0 : -1;
}

/* ================================================================================================
 * text helpers
 * ================================================================================================ */

/* ctx[u]: the text of a node rendered earlier (borrowed); TypeError when ctx is not a Renderer */
static inline PyObject *text_of(PyObject *ctx, UOp *u) { return is_cstyle(ctx) ? renderer_text((RendererObject *)ctx, u) : renderer_text_of(ctx, u); }

/* strip_parens (helpers), pooled: borrowed */
static PyObject *stripped(PyObject *s) { return pool_keep(strip_parens(s)); }

/* PyUnicode_FromFormat with every %S argument present (NULL: an error happened earlier); pooled */
static UOp *fmt1(const char *f, PyObject *a) { return a ? TEXT(PyUnicode_FromFormat(f, a)) : NULL; }
static UOp *fmt2(const char *f, PyObject *a, PyObject *b) { return a && b ? TEXT(PyUnicode_FromFormat(f, a, b)) : NULL; }
static UOp *fmt3(const char *f, PyObject *a, PyObject *b, PyObject *c) {
  return a && b && c ? TEXT(PyUnicode_FromFormat(f, a, b, c)) : NULL;
}

/* sep.join of the texts of nodes (pooled) */
static PyObject *join_texts(PyObject *ctx, UOp *const *us, int n, PyObject *sep) {
  PyObject *parts = pool_keep(PyList_New(0));
  if (!parts) return NULL;
  for (int i = 0; i < n; i++) {
    PyObject *t = text_of(ctx, us[i]);
    if (!t || PyList_Append(parts, t) < 0) return NULL;
  }
  return pool_keep(PyUnicode_Join(sep, parts));
}

/* "\n".join(lines) of a sequence of strs: pooled */
static PyObject *join_lines(PyObject *lines) { return lines ? pool_keep(PyUnicode_Join(str_newline, lines)) : NULL; }

/* what a Python override returned (pooled), a TypeError unless it is a str */
static PyObject *override_text(PyObject *ret, const char *method) {
  if (ret && !PyUnicode_Check(ret)) return PyErr_Format(PyExc_TypeError, "%s must return a str, not %.100s", method, Py_TYPE(ret)->tp_name);
  return ret;
}

/* a node's PtrDType, a TypeError for a node that needs one and has none */
static DType *ptr_dtype(UOp *x) {
  if (!x->dtype->is_ptr) return (DType *)PyErr_Format(PyExc_TypeError, "Ops.%s needs a PtrDType, not %S", op_names[x->op], (PyObject *)x->dtype);
  return x->dtype;
}

/* ================================================================================================
 * render_dtype, render_cast
 * ================================================================================================ */

static PyObject *dtype_text(CStyleSettings *s, DType *dt);

/* CStyleLanguage.render_dtype: "float", "float4" (type_map's name, spaces as "_", then the count), "float*" (with the buffer
 * or shared-memory prefix), an image as OpenCL's image2d_t, write_only where the kernel stores to it (mutable: NULL is True).
 * New reference. */
static PyObject *render_dtype_m(CStyleSettings *s, DType *dt, PyObject *mutable_) {
  if (dtype_is_image(dt)) {
    int m = mutable_ ? PyObject_IsTrue(mutable_) : 1;
    return m < 0 ? NULL : PyUnicode_FromString(m ? "write_only image2d_t" : "read_only image2d_t");
  }
  if (dt->is_ptr) {
    PyObject *prefix = dt->addrspace == ADDRSPACE_GLOBAL ? s->buffer_prefix
                     : dt->addrspace == ADDRSPACE_LOCAL && s->prefix_local_casts ? s->smem_prefix : str_empty;
    PyObject *base = dtype_text(s, dt->base);
    return base ? PyUnicode_FromFormat("%S%S*", prefix, base) : NULL;
  }
  DType *scalar = dtype_scalar(dt);
  PyObject *name = scalar->id < DT_COUNT ? s->type_names[scalar->id] : PyDict_GetItemWithError(s->type_map, (PyObject *)scalar);
  if (!name && PyErr_Occurred()) return NULL;
  if (!name) name = scalar->name;
  if (!PyUnicode_Check(name)) return PyErr_Format(PyExc_TypeError, "type_map[%S] must be a str, not %.100s", (PyObject *)scalar, Py_TYPE(name)->tp_name);
  if (dt->count <= 1) return Py_NewRef(name);
  PyObject *fixed = PyUnicode_Replace(name, str_space, str_underscore, -1);
  PyObject *ret = fixed ? PyUnicode_FromFormat("%S%d", fixed, dt->count) : NULL;
  Py_XDECREF(fixed);
  return ret;
}

/* ctx.render_dtype(dt[, mutable]): the subclass's override when it has one, else tinyc's. Pooled. */
static PyObject *dtype_text_m(CStyleSettings *s, DType *dt, PyObject *mutable_) {
  if (!s->render_dtype) return pool_keep(render_dtype_m(s, dt, mutable_));
  PyObject *args[2] = {(PyObject *)dt, mutable_};
  return override_text(pool_keep(PyObject_Vectorcall(s->render_dtype, args, mutable_ ? 2 : 1, NULL)), "render_dtype");
}
static PyObject *dtype_text(CStyleSettings *s, DType *dt) { return dtype_text_m(s, dt, NULL); }

/* ctx.render_cast(dt, val): "(type)(val)", or the subclass's override. Pooled. */
static PyObject *cast_text(CStyleSettings *s, DType *dt, PyObject *val) {
  if (!val) return NULL;
  if (!s->render_cast) return (PyObject *)fmt2("(%S)(%S)", dtype_text(s, dt), val);
  PyObject *args[2] = {(PyObject *)dt, val};
  return override_text(pool_keep(PyObject_Vectorcall(s->render_cast, args, 2, NULL)), "render_cast");
}

/* ================================================================================================
 * code_for_op and code_for_workitem: native entries are called in C, any other callable as tinygrad calls it
 * ================================================================================================ */

/* how many operands the code of an op takes: tinygrad's lambdas take one per source */
static int op_arity(Op op) { return IN_GROUP(op, Unary) ? 1 : IN_GROUP(op, Ternary) ? 3 : 2; }

/* the %S count of a template */
static int template_arity(const char *t) {
  int n = 0;
  for (; *t; t++) {
    if (*t != '%') continue;
    if (*++t == 'S') n++;
    else if (!*t) break;
  }
  return n;
}

/* a native code_for_op entry on operand texts: a new reference; TypeError when n is not the op's operand count */
static PyObject *op_code_text(const OpCode *c, PyObject *const *operands, int n, DType *dtype) {
  if (n != op_arity(c->op)) return PyErr_Format(PyExc_TypeError, "code_for_op[Ops.%s] takes %d operands, got %d", op_names[c->op], op_arity(c->op), n);
  PyObject *a[3] = {NULL, NULL, NULL};
  for (int i = 0; i < n; i++) a[i] = operands[i];
  return PyUnicode_FromFormat(c->code_f64 && dtype == DTYPE(FLOAT64) ? c->code_f64 : c->code, a[0], a[1], a[2]);
}

static PyObject *workitem_text(const WorkitemCode *w, PyObject *dim) { return PyUnicode_FromFormat(w->code, dim, dim, dim); }

/* code_for_op's (*operands, dtype) -> text, code_for_workitem's (dim) -> text */
static PyObject *NativeCode_call(NativeCode *self, PyObject *args, PyObject *kw) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  const char *what = self->op ? op_names[self->op->op] : self->workitem->kind;
  if ((kw && PyDict_GET_SIZE(kw)) || n < 1 || n > (self->op ? 4 : 1))
    return PyErr_Format(PyExc_TypeError, self->op ? "code_for_op[Ops.%s] takes the operands and a dtype" : "code_for_workitem[%s] takes the dimension", what);
  PyObject *strs[3], *ret = NULL;
  int k = 0, texts = self->op ? (int)n - 1 : 1;
  for (; k < texts; k++) if (!(strs[k] = PyObject_Str(PyTuple_GET_ITEM(args, k)))) break;
  if (k == texts) {
    PyObject *dt = PyTuple_GET_ITEM(args, n - 1);
    ret = self->op ? op_code_text(self->op, strs, k, DType_Check(dt) ? (DType *)dt : NULL) : workitem_text(self->workitem, strs[0]);
  }
  for (int i = 0; i < k; i++) Py_DECREF(strs[i]);
  return ret;
}

static PyTypeObject NativeCode_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.NativeCode",
  .tp_basicsize = sizeof(NativeCode),
  .tp_call = (ternaryfunc)NativeCode_call,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "a code_for_op / code_for_workitem entry of a native language: its C text on the operands' texts",
};

static PyObject *native_code(const OpCode *op, const WorkitemCode *workitem) {
  NativeCode *c = PyObject_New(NativeCode, &NativeCode_Type);
  if (c) { c->op = op; c->workitem = workitem; }
  return (PyObject *)c;
}

/* an operand's text, or the part of it inside its outer parens */
typedef struct { PyObject *text; Py_ssize_t start, len; } TextSlice;

/* a native code template ("(%S+%S)": %S the operands in order, %% a percent sign) on ASCII operand slices: a new
 * reference, one copy of each; NULL without an error when an operand is not an ASCII str (the general way formats it) */
static PyObject *ascii_template(const char *t, const TextSlice *a, int n) {
  Py_ssize_t len = 0;
  int k = 0;
  for (int i = 0; i < n; i++) if (!PyUnicode_Check(a[i].text) || !PyUnicode_IS_ASCII(a[i].text)) return NULL;
  for (const char *c = t; *c; c++) {
    if (c[0] == '%' && c[1] == 'S' && k < n) len += a[k++].len, c++;
    else if (c[0] == '%' && c[1] == '%') len++, c++;
    else len++;
  }
  PyObject *ret = PyUnicode_New(len, 127);
  char *d = ret ? (char *)PyUnicode_1BYTE_DATA(ret) : NULL;
  k = 0;
  for (const char *c = t; d && *c; c++) {
    if (c[0] == '%' && c[1] == 'S' && k < n) {
      memcpy(d, PyUnicode_1BYTE_DATA(a[k].text) + a[k].start, (size_t)a[k].len);
      d += a[k++].len, c++;
    }
    else if (c[0] == '%' && c[1] == '%') *d++ = '%', c++;
    else *d++ = *c;
  }
  return ret;
}

/* ctx.code_for_op[x.op](*operands, x.dtype): a new reference; KeyError for an op the renderer has no code for */
static PyObject *alu_text(CStyleSettings *s, UOp *x, PyObject *const *operands, int n) {
  if (s->op_codes[x->op]) return op_code_text(s->op_codes[x->op], operands, n, x->dtype);
  PyObject *fn = PyDict_GetItemWithError(s->code_for_op, ops_members[x->op]);
  if (!fn) {
    if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, ops_members[x->op]);
    return NULL;
  }
  PyObject *args[4];
  for (int i = 0; i < n; i++) args[i] = operands[i];
  args[n] = (PyObject *)x->dtype;
  Py_INCREF(fn);   /* the call may change the dict */
  PyObject *ret = PyObject_Vectorcall(fn, args, (size_t)n + 1, NULL);
  Py_DECREF(fn);
  return ret;
}

/* ctx.code_for_workitem[kind](dim): pooled; KeyError for a kind the renderer has no code for */
static PyObject *workitem_code_text(CStyleSettings *s, PyObject *kind, PyObject *dim) {
  PyObject *fn = PyDict_GetItemWithError(s->code_for_workitem, kind);
  if (!fn) {
    if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, kind);
    return NULL;
  }
  if (Py_IS_TYPE(fn, &NativeCode_Type) && ((NativeCode *)fn)->workitem) return pool_keep(workitem_text(((NativeCode *)fn)->workitem, dim));
  Py_INCREF(fn);
  PyObject *ret = PyObject_CallOneArg(fn, dim);
  Py_DECREF(fn);
  return pool_keep(ret);
}

/* ================================================================================================
 * string_rewrite (tinygrad's base_rewrite)
 * ================================================================================================ */

/* x.src[i], an IndexError when x has fewer sources */
static UOp *src_of(UOp *x, int i) {
  if (i < x->nsrc) return x->src[i];
  return (UOp *)PyErr_Format(PyExc_IndexError, "Ops.%s has %d sources, the string rule reads source %d", op_names[x->op], x->nsrc, i);
}
/* ctx[x.src[i]] */
static PyObject *src_text(PyObject *ctx, UOp *x, int i) {
  UOp *src = src_of(x, i);
  return src ? text_of(ctx, src) : NULL;
}

/* a register array: "float acc0[4];" */
RULE(r_define_reg, x) {
  CStyleSettings *s = rule_settings(ctx);
  DType *ptr = s ? ptr_dtype(x) : NULL;
  PyObject *dt = ptr ? dtype_text(s, ptr->base) : NULL, *name = dt ? text_of(ctx, x) : NULL;
  return name ? TEXT(PyUnicode_FromFormat("%S %S[%zd];", dt, name, ptr->size)) : NULL;
}
/* an if opens a block on its condition */
RULE(r_if, x) { return fmt1("if (%S) {", src_text(ctx, x, 0)); }
/* ENDIF and END close a block */
RULE(r_close) { return TEXT(PyUnicode_FromString("}")); }
/* a tensor-core call: "__name(a, b, c)" */
RULE(r_wmma, x) {
  PyObject *name = pool_keep(PySequence_GetItem(x->arg, 0));
  PyObject *a = name ? src_text(ctx, x, 0) : NULL, *b = a ? src_text(ctx, x, 1) : NULL, *c = b ? src_text(ctx, x, 2) : NULL;
  return c ? TEXT(PyUnicode_FromFormat("__%S(%S, %S, %S)", name, a, b, c)) : NULL;
}
/* a range opens a counted for loop */
RULE(r_range, x) {
  CStyleSettings *s = rule_settings(ctx);
  PyObject *dt = s ? dtype_text(s, x->dtype) : NULL, *name = dt ? text_of(ctx, x) : NULL, *end = name ? src_text(ctx, x, 0) : NULL;
  return end ? TEXT(PyUnicode_FromFormat("for (%S %S = 0; %S < %S; %S++) {", dt, name, name, end, name)) : NULL;
}
/* a vector literal: float4 with "float4" spelled as the dtype, then the lanes between float4_style's pair: "(float4){a,b,c,d}" */
RULE(r_vectorize, x) {
  CStyleSettings *s = rule_settings(ctx);
  if (!s) return NULL;
  if (s->float4 == Py_None) return (UOp *)PyErr_Format(PyExc_AttributeError, "'NoneType' object has no attribute 'replace'");
  PyObject *dt = dtype_text(s, x->dtype), *lit = dt ? pool_keep(PyUnicode_Replace(s->float4, str_float4, dt, -1)) : NULL;
  PyObject *lanes = lit ? join_texts(ctx, x->src, x->nsrc, str_comma) : NULL;
  return lanes ? TEXT(PyUnicode_FromFormat("%S%S%S%S", lit, PyTuple_GET_ITEM(s->float4_style, 0), lanes, PyTuple_GET_ITEM(s->float4_style, 1))) : NULL;
}
/* a cast of a (non-pointer) vector converts lane by lane */
RULE(r_cast_vector, x) {
  if (x->dtype->count <= 1 || x->dtype->is_ptr) return NULL;
  CStyleSettings *s = rule_settings(ctx);
  PyObject *v = s ? src_text(ctx, x, 0) : NULL;
  return fmt2("__builtin_convertvector(%S, %S)", v, v ? dtype_text(s, x->dtype) : NULL);
}
/* any other cast is a C cast */
RULE(r_cast, x) {
  CStyleSettings *s = rule_settings(ctx);
  return fmt1("(%S)", s ? cast_text(s, x->dtype, src_text(ctx, x, 0)) : NULL);
}
/* a bitcast reinterprets the bits of the source, typed as its own dtype */
RULE(r_bitcast, x) {
  CStyleSettings *s = rule_settings(ctx);
  UOp *src = s ? src_of(x, 0) : NULL;
  PyObject *to = src ? dtype_text(s, x->dtype) : NULL, *from = to ? dtype_text(s, src->dtype) : NULL;
  return fmt3("__builtin_bit_cast(%S, (%S)(%S))", to, from, from ? text_of(ctx, src) : NULL);
}
/* shared memory: an array after the alignment and address-space prefixes */
RULE(r_define_local, x) {
  CStyleSettings *s = rule_settings(ctx);
  DType *ptr = s ? ptr_dtype(x) : NULL;
  PyObject *dt = ptr ? dtype_text(s, ptr->base) : NULL, *name = dt ? text_of(ctx, x) : NULL;
  return name ? TEXT(PyUnicode_FromFormat("%S%S%S %S[%zd];", s->smem_align, s->smem_prefix, dt, name, ptr->size)) : NULL;
}
RULE(r_barrier) {
  
  CStyleSettings *s = rule_settings(ctx);
  return s ? TEXT(Py_NewRef(s->barrier)) : NULL;
}
/* a workitem index by code_for_workitem (its kind is the name's first letter, its dimension the last), the bound as a comment */
RULE(r_special, x) {
  CStyleSettings *s = rule_settings(ctx);
  UOp *bound = s ? src_of(x, 0) : NULL;
  PyObject *kind = bound ? pool_keep(PySequence_GetItem(x->arg, 0)) : NULL, *dim = kind ? pool_keep(PySequence_GetItem(x->arg, -1)) : NULL;
  PyObject *code = dim ? workitem_code_text(s, kind, dim) : NULL;
  return fmt2("%S; /* %S */", code, code ? pool_keep(uop_render(bound, true)) : NULL);
}
/* +inf and -inf constants */
RULE(r_const_inf, x) {
  CStyleSettings *s = rule_settings(ctx);
  return fmt1("(%S)", s ? cast_text(s, x->dtype, s->infinity) : NULL);
}
RULE(r_const_neg_inf, x) {
  CStyleSettings *s = rule_settings(ctx);
  return fmt1("(%S)", s ? cast_text(s, x->dtype, (PyObject *)fmt1("-%S", s->infinity)) : NULL);
}
/* a float nan constant */
RULE(r_const_nan, x) {
  CStyleSettings *s = rule_settings(ctx);
  double v = s ? PyFloat_AsDouble(x->arg) : 0;
  if (!s || (v == -1.0 && PyErr_Occurred())) return NULL;
  return isnan(v) ? fmt1("(%S)", cast_text(s, x->dtype, s->nan)) : NULL;
}
/* constants with a C literal suffix: float "f", int64 "ll" */
RULE(r_const_float, x) { return TEXT(PyUnicode_FromFormat("%Sf", x->arg)); }
RULE(r_const_int64, x) { return TEXT(PyUnicode_FromFormat("%Sll", x->arg)); }
/* unsigned 64/32 constants are truncated to the dtype and suffixed "ull"/"u" */
RULE(r_const_unsigned, x) {
  PyObject *v = pool_keep(dtype_truncate(x->dtype, x->arg));
  return fmt1(x->dtype == DTYPE(UINT64) ? "%Sull" : "%Su", v);
}
/* bools are 1 or 0 */
RULE(r_const_bool, x) {
  int t = PyObject_IsTrue(x->arg);
  return t < 0 ? NULL : TEXT(PyUnicode_FromString(t ? "1" : "0"));
}
/* small floats are written as float literals and cast */
RULE(r_const_small_float, x) {
  CStyleSettings *s = rule_settings(ctx);
  return fmt1("(%S)", s ? cast_text(s, x->dtype, (PyObject *)fmt1("%Sf", x->arg)) : NULL);
}
/* small unsigned ints are written as unsigned literals and cast */
RULE(r_const_small_uint, x) {
  CStyleSettings *s = rule_settings(ctx);
  return fmt1("(%S)", s ? cast_text(s, x->dtype, (PyObject *)fmt1("%Su", x->arg)) : NULL);
}
/* small signed ints are written plainly and cast */
RULE(r_const_small_int, x) {
  CStyleSettings *s = rule_settings(ctx);
  return fmt1("(%S)", s ? cast_text(s, x->dtype, pool_keep(PyObject_Str(x->arg))) : NULL);
}
/* any other constant is its str */
RULE(r_const, x) { return TEXT(PyObject_Str(x->arg)); }
/* an index is pointer arithmetic "(buf+idx)"; tinygrad strips the index's parens when idx.arg equals Ops.ADD */
RULE(r_index, idx, buf) {
  PyObject *idx_text = text_of(ctx, idx);
  int is_add = idx_text ? PyObject_RichCompareBool(idx->arg, ops_members[OP_ADD], Py_EQ) : -1;
  if (is_add < 0) return NULL;
  return fmt2("(%S+%S)", text_of(ctx, buf), is_add ? stripped(idx_text) : idx_text);
}
/* a gated load: "(gate?*ptr:alt)" */
RULE(r_load_gated, gate, bidx, var) {
  return fmt3("(%S?*%S:%S)", text_of(ctx, gate), text_of(ctx, bidx), text_of(ctx, var));
}
/* a load dereferences */
RULE(r_load, bidx) { return fmt1("(*%S)", text_of(ctx, bidx)); }
/* a store assigns through the pointer */
RULE(r_store, bidx, var) { return fmt2("*%S = %S;", text_of(ctx, bidx), text_of(ctx, var)); }
/* ALU ops by code_for_op; a chain of the same associative op drops the inner parens */
RULE(r_alu, x) {
  CStyleSettings *s = rule_settings(ctx);
  if (!s) return NULL;
  if (x->nsrc > 3) return (UOp *)PyErr_Format(PyExc_TypeError, "code_for_op[Ops.%s]: too many operands", op_names[x->op]);
  bool chains = x->op == OP_ADD || x->op == OP_MUL || x->op == OP_XOR || x->op == OP_OR || x->op == OP_AND;
  TextSlice a[3];
  for (int i = 0; i < x->nsrc; i++) {
    PyObject *t = text_of(ctx, x->src[i]);
    if (!t || (chains && x->src[i]->op == x->op && !PyUnicode_Check(t) && !stripped(t))) return NULL;   /* strip_parens' TypeError */
    bool strip = chains && x->src[i]->op == x->op && parens_strippable(t);
    a[i] = (TextSlice){t, strip, PyUnicode_Check(t) ? PyUnicode_GET_LENGTH(t) - 2 * strip : 0};
  }
  const OpCode *code = s->op_codes[x->op];
  if (code && x->nsrc == op_arity(x->op)) {   /* the template straight from the slices, without the stripped copies */
    PyObject *ret = ascii_template(code->code_f64 && x->dtype == DTYPE(FLOAT64) ? code->code_f64 : code->code, a, x->nsrc);
    if (ret || PyErr_Occurred()) return TEXT(ret);
  }
  PyObject *texts[3];
  for (int i = 0; i < x->nsrc; i++)
    if (!(texts[i] = a[i].start ? pool_keep(PyUnicode_Substring(a[i].text, 1, 1 + a[i].len)) : a[i].text)) return NULL;
  return TEXT(alu_text(s, x, texts, x->nsrc));
}
/* a lane of a vector: "v[i]" above gep_arr_threshold lanes, ".x" style at or below it */
RULE(r_gep, x) {
  UOp *vec = src_of(x, 0);
  CStyleSettings *s = vec ? rule_settings(ctx) : NULL;
  PyObject *v = s ? text_of(ctx, vec) : NULL, *lane = v ? pool_keep(PySequence_GetItem(x->arg, 0)) : NULL;
  if (!lane) return NULL;
  if (vec->dtype->count > s->gep_threshold) return fmt2("%S[%S]", v, lane);
  Py_ssize_t i = PyLong_AsSsize_t(lane);
  if (i < 0 || i >= 8) return PyErr_Occurred() ? NULL : (UOp *)PyErr_Format(PyExc_IndexError, "string index out of range");
  return TEXT(PyUnicode_FromFormat("%S.%c", v, "xyzwabcd"[i]));
}
/* custom code: arg.format(*texts of the sources) */
RULE(r_custom, x) {
  PyObject *args = pool_keep(PyTuple_New(x->nsrc));
  if (!args) return NULL;
  for (int i = 0; i < x->nsrc; i++) {
    PyObject *t = text_of(ctx, x->src[i]);
    if (!t) return NULL;
    PyTuple_SET_ITEM(args, i, Py_NewRef(t));
  }
  PyObject *format = pool_keep(getattr_literal(x->arg, "format"));
  return format ? TEXT(PyObject_Call(format, args, NULL)) : NULL;
}

static const RuleDef base_rewrite_defs[] = {
  R("UPat(Ops.DEFINE_REG, name='x')", r_define_reg),
  R("UPat(Ops.IF, name='x')", r_if),
  R("UPat((Ops.ENDIF, Ops.END))", r_close),
  R("UPat(Ops.WMMA, name='x')", r_wmma),
  R("UPat(Ops.RANGE, name='x')", r_range),
  R("UPat(Ops.VECTORIZE, name='x')", r_vectorize),
  R("UPat(Ops.CAST, name='x')", r_cast_vector),
  R("UPat(Ops.CAST, name='x')", r_cast),
  R("UPat(Ops.BITCAST, name='x')", r_bitcast),
  R("UPat(Ops.DEFINE_LOCAL, name='x')", r_define_local),
  R("UPat(Ops.BARRIER)", r_barrier),
  R("UPat(Ops.SPECIAL, name='x')", r_special),
  R("UPat(Ops.CONST, arg=float('inf'), name='x')", r_const_inf),
  R("UPat(Ops.CONST, arg=float('-inf'), name='x')", r_const_neg_inf),
  R("UPat(Ops.CONST, dtype=dtypes.floats, name='x')", r_const_nan),
  R("UPat(Ops.CONST, dtype=dtypes.float, name='x')", r_const_float),
  R("UPat(Ops.CONST, dtype=dtypes.int64, name='x')", r_const_int64),
  R("UPat(Ops.CONST, dtype=dtypes.uint64, name='x')", r_const_unsigned),
  R("UPat(Ops.CONST, dtype=dtypes.uint32, name='x')", r_const_unsigned),
  R("UPat(Ops.CONST, dtype=dtypes.bool, name='x')", r_const_bool),
  R("UPat(Ops.CONST, (*dtypes.fp8s, dtypes.bfloat16, dtypes.half), name='x')", r_const_small_float),
  R("UPat(Ops.CONST, (dtypes.uint8, dtypes.uint16), name='x')", r_const_small_uint),
  R("UPat(Ops.CONST, (dtypes.int8, dtypes.int16), name='x')", r_const_small_int),
  R("UPat(Ops.CONST, name='x')", r_const),
  R("UPat(Ops.INDEX, src=(UPat.var('buf'), UPat.var('idx')), allow_any_len=True)", r_index),
  R("UPat(Ops.LOAD, src=(UPat(Ops.INDEX, src=(UPat(), UPat(), UPat.var('gate'))).or_casted('bidx'), UPat.var('var')), allow_any_len=True)", r_load_gated),
  R("UPat(Ops.LOAD, src=(UPat.var('bidx'),), allow_any_len=True)", r_load),
  R("UPat(Ops.STORE, src=(UPat.var('bidx'), UPat.var('var')), allow_any_len=True)", r_store),
  R("UPat(GroupOp.ALU, name='x')", r_alu),
  R("UPat(Ops.GEP, name='x')", r_gep),
  R("UPat((Ops.CUSTOM, Ops.CUSTOMI), name='x')", r_custom),
};

/* ---- OpenCLRenderer's string rules, tried before base_rewrite ---- */

/* a bitcast is OpenCL's as_<type>() */
RULE(r_cl_bitcast, x) {
  CStyleSettings *s = rule_settings(ctx);
  UOp *src = s ? src_of(x, 0) : NULL;
  PyObject *to = src ? dtype_text(s, x->dtype) : NULL, *from = to ? dtype_text(s, src->dtype) : NULL;
  return fmt3("as_%S((%S)(%S))", to, from, from ? text_of(ctx, src) : NULL);
}
/* bfloat16 is stored as ushort: a constant is the high 16 bits of its float32 bits, rounded to bfloat16 */
RULE(r_cl_const_bf16, x) {
  PyObject *rounded = pool_keep(dtype_truncate(DTYPE(BFLOAT16), x->arg));
  double v = rounded ? PyFloat_AsDouble(rounded) : -1.0;
  if (!rounded || (v == -1.0 && PyErr_Occurred())) return NULL;
  float f = (float)v;
  if (isinf(f) && !isinf(v)) return (UOp *)PyErr_Format(PyExc_OverflowError, "float too large to pack with f format");
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return TEXT(PyUnicode_FromFormat("%ldu", (long)(bits >> 16)));
}
/* image loads and stores, by texel (an int2 coordinate, a float4 value): read_imagef through the kernel's sampler */
RULE(r_read_image_gated, gate, buf, idx, var) {
  return fmt3("(%S?%S:%S)", text_of(ctx, gate), (PyObject *)fmt2("read_imagef(%S, smp, %S)", text_of(ctx, buf), text_of(ctx, idx)), text_of(ctx, var));
}
RULE(r_read_image, buf, idx) { return fmt2("read_imagef(%S, smp, %S)", text_of(ctx, buf), text_of(ctx, idx)); }
RULE(r_write_image, buf, idx, var) { return fmt3("write_imagef(%S, %S, %S);", text_of(ctx, buf), text_of(ctx, idx), text_of(ctx, var)); }

static const RuleDef opencl_rewrite_defs[] = {
  R("UPat(Ops.BITCAST, name='x')", r_cl_bitcast),
  R("UPat(Ops.CONST, dtypes.bfloat16, name='x')", r_cl_const_bf16),
  R("UPat(Ops.LOAD, dtype=dtypes.float.vec(4), src=(UPat.var('buf').index(UPat.var('idx', dtypes.int.vec(2)), UPat.var('gate')), UPat.var('var')))",
    r_read_image_gated),
  R("UPat(Ops.LOAD, dtype=dtypes.float.vec(4), src=(UPat.var('buf').index(UPat.var('idx', dtypes.int.vec(2))),))", r_read_image),
  R("UPat(Ops.STORE, src=(UPat.var('buf').index(UPat.var('idx', dtypes.int.vec(2)), allow_any_len=True), UPat.var('var', dtypes.float.vec(4))),"
    " allow_any_len=True)", r_write_image),
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
  CStyleObject *self;
  CStyleSettings *s;
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

/* "<type> <name> = <text>;" (a SPECIAL's text ends in a comment: no ";"); pooled */
static PyObject *declaration(RenderState *st, UOp *u, PyObject *name, PyObject *text) {
  PyObject *dt = dtype_text(st->s, u->dtype);
  return dt ? pool_keep(PyUnicode_FromFormat("%S %S = %S%s", dt, name, text, u->op == OP_SPECIAL ? "" : ";")) : NULL;
}

/* "  "*depth + l in one new string: pooled */
static PyObject *indented(PyObject *l, int depth) {
  if (depth <= 0) return l;
  Py_ssize_t pad = 2 * (Py_ssize_t)depth, n = PyUnicode_GET_LENGTH(l);
  PyObject *line = pool_keep(PyUnicode_New(pad + n, PyUnicode_MAX_CHAR_VALUE(l)));
  if (!line || PyUnicode_Fill(line, 0, pad, ' ') < 0 || PyUnicode_CopyCharacters(line, pad, l, 0, n) < 0) return NULL;
  return line;
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
    if (u->arg != Py_None && !(st->name = pool_keep(getattr_literal(u->arg, "function_name")))) return -1;
    return 0;
  }
  if (op == OP_DEFINE_GLOBAL || op == OP_DEFINE_VAR) return add_argument(st, u);
  if (op == OP_STORE && mark_writable(st, u->src[0]) < 0) return -1;

  int prefix;
  PyObject *name = value_name(st, u, &prefix);
  if (!name || PyDict_SetItem(st->r, (PyObject *)u, name) < 0) return -1;
  PyObject *l = pool_keep(pm_rewrite((PatternMatcher *)st->s->string_rewrite, u, (PyObject *)st->self, false));
  if (!l) return PyErr_Occurred() ? -1 : failed_to_render(u);
  if (!PyUnicode_Check(l)) { PyErr_Format(PyExc_TypeError, "a string rule returned %.100s, not a str", Py_TYPE(l)->tp_name); return -1; }

  if (op == OP_ENDIF || op == OP_END) st->depth--;
  if (renders_inline(st, u)) {
    if (PyDict_SetItem(st->r, (PyObject *)u, l) < 0) return -1;
  } else {
    if (op != OP_RANGE && op != OP_DEFINE_LOCAL && op != OP_STORE && op != OP_DEFINE_REG && u->dtype != DTYPE(VOID))
      l = declaration(st, u, name, l);
    PyObject *line = l ? indented(l, st->depth) : NULL;
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
    } else if (uop_check_form((UOp *)u, "render") < 0) Py_CLEAR(seq);   /* the loop reads sources and args (form.h) */
  }
  return seq;
}

/* _render(uops) -> (function name, kernel lines, [(arg name, (dtype, mutable)), ...]) with settings s: a new reference */
static PyObject *render_lines(CStyleObject *self, CStyleSettings *s, PyObject *uops_in) {
  PyObject *uops = uop_sequence(uops_in);
  if (!uops) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(uops);
#if PY_VERSION_HEX < 0x030D0000
  PyObject *r = _PyDict_NewPresized(n);   /* a text for (nearly) every node: no rehashing while filling */
#else
  PyObject *r = PyDict_New();
#endif
  RenderState st = {self, s, r, PyDict_New(), PyList_New(0), {0}, NULL, 1, {0}, env_long("EXPAND_SSA", 0) != 0};
  PyObject *ret = NULL, *name = NULL, *bufs, *outer_r = self->base.r;
  CStyleSettings *outer = self->settings;
  self->base.r = NULL;
  if (ptrmap_reserve(&st.child_count, (size_t)n * 2) < 0) goto done;   /* child counts: sized up front */
  if (!st.r || !st.bufs || !st.kernel || count_children(&st.child_count, PySequence_Fast_ITEMS(uops), n) < 0) goto done;
  self->base.r = Py_NewRef(st.r);
  self->settings = s;
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
  Py_XSETREF(self->base.r, outer_r);   /* as it was: tinygrad deletes self.r after a render */
  self->settings = outer;
  ptrmap_free(&st.child_count);
  Py_XDECREF(name); Py_XDECREF(st.r); Py_XDECREF(st.bufs); Py_XDECREF(st.kernel); Py_DECREF(uops);
  return ret;
}

/* ================================================================================================
 * render_kernel: CStyleLanguage's (the function), ClangRenderer's (vector typedefs, the function, the entry)
 * ================================================================================================ */

/* "<type> <name>" of one kernel argument (name, (dtype, mutable)): a pointer as render_dtype(dtype, mutable) + buffer_suffix, an
 * int after arg_int_prefix; pooled */
static PyObject *kernel_argument(CStyleSettings *s, PyObject *buf) {
  PyObject *name, *dtype, *mutable_;
  if (!PyTuple_Check(buf) || !PyArg_ParseTuple(buf, "O(OO)", &name, &dtype, &mutable_) || !DType_Check(dtype)) {
    PyErr_Clear();
    return PyErr_Format(PyExc_TypeError, "a kernel argument must be (name, (DType, mutable)), not %R", buf);
  }
  DType *dt = (DType *)dtype;
  if (dt->is_ptr) return (PyObject *)fmt3("%S%S %S", dtype_text_m(s, dt, mutable_), s->buffer_suffix, name);
  return (PyObject *)fmt2("%S %S", dt == DTYPE(INT32) ? s->arg_int_prefix : Py_None, name);
}

/* ", ".join of the arguments of bufs, then extra_args; pooled */
static PyObject *kernel_arguments(CStyleSettings *s, PyObject *bufs) {
  PyObject *seq = pool_keep(PySequence_Fast(bufs, "bufs must be a sequence")), *parts = seq ? pool_keep(PyList_New(0)) : NULL;
  if (!parts) return NULL;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *arg = kernel_argument(s, PySequence_Fast_GET_ITEM(seq, i));
    if (!arg || PyList_Append(parts, arg) < 0) return NULL;
  }
  PyObject *extra = pool_keep(PySequence_Fast(s->extra_args, "extra_args must be a list"));
  for (Py_ssize_t i = 0; extra && i < PySequence_Fast_GET_SIZE(extra); i++)
    if (PyList_Append(parts, PySequence_Fast_GET_ITEM(extra, i)) < 0) return NULL;
  if (!extra) return NULL;
  return pool_keep(PyUnicode_Join(str_comma_space, parts));
}

/* prod(d.vmax for the local dims, u.src[0] of each SPECIAL whose kind is "l"): pooled */
static PyObject *launch_bounds(PyObject *uops_in) {
  PyObject *uops = pool_keep(uop_sequence(uops_in)), *bounds = uops ? n_int(1) : NULL;
  for (Py_ssize_t i = 0; bounds && i < PySequence_Fast_GET_SIZE(uops); i++) {
    UOp *u = (UOp *)PySequence_Fast_GET_ITEM(uops, i);
    if (u->op != OP_SPECIAL) continue;
    PyObject *kind = pool_keep(PySequence_GetItem(u->arg, 0));
    if (!kind) return NULL;
    if (!PyUnicode_Check(kind) || PyUnicode_CompareWithASCIIString(kind, "l") != 0) continue;
    UOp *dim = src_of(u, 0);
    bounds = dim ? n_mul(bounds, vmax(dim)) : NULL;
  }
  return bounds;
}

/* kernel_typedef.format(launch_bounds=...): pooled (a typedef with no braces in it is its own format) */
static PyObject *kernel_typedef_text(CStyleSettings *s, PyObject *uops) {
  PyObject *t = s->kernel_typedef;
  Py_ssize_t n = PyUnicode_GET_LENGTH(t);
  if (PyUnicode_CheckExact(t) && PyUnicode_FindChar(t, '{', 0, n, 1) == -1 && PyUnicode_FindChar(t, '}', 0, n, 1) == -1) return t;
  PyObject *bounds = launch_bounds(uops), *kw = bounds ? pool_keep(Py_BuildValue("{sO}", "launch_bounds", bounds)) : NULL;
  PyObject *format = kw ? pool_keep(getattr_literal(t, "format")) : NULL, *none = format ? pool_keep(PyTuple_New(0)) : NULL;
  return none ? pool_keep(PyObject_Call(format, none, kw)) : NULL;
}

/* OpenCL's sampler for read_imagef, declared first in a kernel that takes an image: "" when it takes none (-1 on error) */
static const char *image_sampler(PyObject *bufs, int *err) {
  PyObject *seq = pool_keep(PySequence_Fast(bufs, "bufs must be a sequence"));
  *err = !seq;
  for (Py_ssize_t i = 0; seq && i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *buf = PySequence_Fast_GET_ITEM(seq, i), *entry = PyTuple_Check(buf) && PyTuple_GET_SIZE(buf) == 2 ? PyTuple_GET_ITEM(buf, 1) : NULL;
    PyObject *dt = entry && PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 2 ? PyTuple_GET_ITEM(entry, 0) : NULL;
    if (dt && DType_Check(dt) && dtype_is_image((DType *)dt))
      return "const sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;\n";
  }
  return "";
}

/* CStyleLanguage.render_kernel: "<kernel_typedef> name(<args>) {\n<sampler><lines>\n}", after the prefix lines when there are any */
static PyObject *cstyle_render_kernel(CStyleSettings *s, PyObject *self, PyObject *name, PyObject *kernel, PyObject *bufs,
                                      PyObject *uops, PyObject *prefix) {
  UNUSED(self);
  Py_ssize_t mark = pool_mark();
  int err;
  const char *sampler = image_sampler(bufs, &err);
  PyObject *args = !err ? kernel_arguments(s, bufs) : NULL, *type = args ? kernel_typedef_text(s, uops) : NULL, *body = type ? join_lines(kernel) : NULL;
  PyObject *prg = body ? pool_keep(PyUnicode_FromFormat("%S %S(%S) {\n%s%S\n}", type, name, args, sampler, body)) : NULL;
  PyObject *ret = prg && prefix != Py_None ? (PyObject *)fmt2("%S\n%S", join_lines(prefix), prg) : prg;
  Py_XINCREF(ret);
  pool_release(mark);
  return ret;
}

/* "typedef float float4 __attribute__((aligned(16),ext_vector_type(4)));" (alignment rounded down to a power of two): new reference */
static PyObject *render_vector_prefix(CStyleSettings *s, DType *dt) {
  int itemsize = dtype_itemsize(dt), alignment = 1;
  if (env_long("ALIGNED", 1) && !dtype_is_bool(dt)) while (alignment * 2 <= itemsize) alignment *= 2;
  PyObject *scalar = dtype_text(s, dtype_scalar(dt)), *vec = scalar ? dtype_text(s, dt) : NULL;
  return vec ? PyUnicode_FromFormat("typedef %S %S __attribute__((aligned(%d),ext_vector_type(%d)));", scalar, vec, alignment, dt->count) : NULL;
}

/* ClangRenderer._render_defines: the typedef of every vector dtype the uops use, first use first (a new list) */
static PyObject *clang_render_defines(CStyleSettings *s, PyObject *self, PyObject *uops_in) {
  PyObject *vector_prefix;
  if (clang_override(s, self, M_RENDER_VECTOR_PREFIX, &vector_prefix) < 0) return NULL;
  PyObject *uops = pool_keep(uop_sequence(uops_in)), *seen = uops ? pool_keep(PySet_New(NULL)) : NULL, *lines = seen ? PyList_New(0) : NULL;
  for (Py_ssize_t i = 0; lines && i < PySequence_Fast_GET_SIZE(uops); i++) {
    UOp *u = (UOp *)PySequence_Fast_GET_ITEM(uops, i);
    if (u->op == OP_WMMA) { PyErr_SetString(PyExc_NotImplementedError, "ClangRenderer: WMMA (AMX) kernels are not supported"); Py_CLEAR(lines); break; }
    if (u->dtype->is_ptr || u->dtype->count <= 1) continue;
    int had = PySet_Contains(seen, (PyObject *)u->dtype);
    if (had < 0 || (!had && PySet_Add(seen, (PyObject *)u->dtype) < 0)) { Py_CLEAR(lines); break; }
    if (had) continue;
    PyObject *line = vector_prefix ? PyObject_CallOneArg(vector_prefix, (PyObject *)u->dtype) : render_vector_prefix(s, u->dtype);
    if (!line || PyList_Append(lines, line) < 0) Py_CLEAR(lines);
    Py_XDECREF(line);
  }
  return lines;
}

/* self._render_defines(uops), "\n"-joined: pooled */
static PyObject *defines_text(CStyleSettings *s, PyObject *self, PyObject *uops) {
  PyObject *fn;
  if (clang_override(s, self, M_RENDER_DEFINES, &fn) < 0) return NULL;
  return join_lines(pool_keep(fn ? PyObject_CallOneArg(fn, uops) : clang_render_defines(s, self, uops)));
}

/* self._render_body(function_name, kernel, bufs, uops, prefix): tinyc's is CStyleLanguage's render_kernel. Pooled. */
static PyObject *body_text(CStyleSettings *s, PyObject *self, PyObject *name, PyObject *kernel, PyObject *bufs, PyObject *uops,
                           PyObject *prefix) {
  PyObject *fn, *args[5] = {name, kernel, bufs, uops, prefix};
  if (clang_override(s, self, M_RENDER_BODY, &fn) < 0) return NULL;
  return pool_keep(fn ? PyObject_Vectorcall(fn, args, 5, NULL) : cstyle_render_kernel(s, self, name, kernel, bufs, uops, prefix));
}

/* self._render_entry(function_name, bufs): tinyc's is empty. Pooled. */
static PyObject *entry_text(CStyleSettings *s, PyObject *self, PyObject *name, PyObject *bufs) {
  PyObject *fn, *args[2] = {name, bufs};
  if (clang_override(s, self, M_RENDER_ENTRY, &fn) < 0) return NULL;
  return fn ? pool_keep(PyObject_Vectorcall(fn, args, 2, NULL)) : str_empty;
}

/* OpenCLRenderer.render_kernel: CStyleLanguage's, after the cl_khr_fp16 pragma when a uop's dtype (or pointee) is half */
static PyObject *opencl_render_kernel(CStyleSettings *s, PyObject *self, PyObject *name, PyObject *kernel, PyObject *bufs,
                                      PyObject *uops, PyObject *prefix) {
  Py_ssize_t mark = pool_mark();
  PyObject *seq = pool_keep(uop_sequence(uops)), *ret = NULL;
  bool half = false;
  for (Py_ssize_t i = 0; seq && !half && i < PySequence_Fast_GET_SIZE(seq); i++)
    half = dtype_base(((UOp *)PySequence_Fast_GET_ITEM(seq, i))->dtype) == DTYPE(FLOAT16);
  int has_prefix = seq && half ? PyObject_IsTrue(prefix) : 0;
  PyObject *lines = seq && half && has_prefix >= 0 ? pool_keep(Py_BuildValue("[s]", "#pragma OPENCL EXTENSION cl_khr_fp16 : enable")) : NULL;
  if (lines && has_prefix > 0) {   /* ["#pragma ..."] + prefix */
    PyObject *rest = pool_keep(PySequence_List(prefix));
    lines = rest ? pool_keep(PySequence_Concat(lines, rest)) : NULL;
  }
  if (seq && (!half || lines)) ret = cstyle_render_kernel(s, self, name, kernel, bufs, uops, half ? lines : prefix);
  pool_release(mark);
  return ret;
}

/* ClangRenderer.render_kernel: "<defines>\n<body>\n<entry>" */
static PyObject *clang_render_kernel(CStyleSettings *s, PyObject *self, PyObject *name, PyObject *kernel, PyObject *bufs,
                                     PyObject *uops, PyObject *prefix) {
  Py_ssize_t mark = pool_mark();
  PyObject *defines = defines_text(s, self, uops), *body = defines ? body_text(s, self, name, kernel, bufs, uops, prefix) : NULL;
  PyObject *entry = body ? entry_text(s, self, name, bufs) : NULL;
  PyObject *ret = entry ? PyUnicode_FromFormat("%S\n%S\n%S", defines, body, entry) : NULL;
  pool_release(mark);
  return ret;
}

/* ================================================================================================
 * the extra matchers: extra_pm, create_non_native_float_pats, pm_manual_bf16_cast, ClangRenderer's
 * ================================================================================================ */

/* CStyleLanguage.extra_matcher: bools, casts from bool and wheres are never vectors */
static const RuleDef extra_pm_defs[] = {
  R("UPat((*GroupOp.ALU, Ops.CAST, Ops.BITCAST, Ops.INDEX), dtype=dtypes.bool, name='alu')", no_vectorized_alu),
  R("UPat(Ops.CAST, src=(UPat(dtype=dtypes.bool),), name='alu')", no_vectorized_alu),
  R("UPat(Ops.WHERE, name='alu')", no_vectorized_alu),
};

/* a cast that LLVM would lower to a libcall goes through float32 first */
RULE(cast_via_float32, cast_root, x) {
  UOp *cast = cast_root;
  return u_cast(u_cast(x, DTYPE(FLOAT32)), cast->dtype);
}

/* a where on a non-native float selects in float and casts back */
RULE(non_native_where, b, x, y) {
  UOp *src[3] = {b, u_cast(x, DTYPE(FLOAT32)), u_cast(y, DTYPE(FLOAT32))};
  return u_cast(u_new(OP_WHERE, DTYPE(FLOAT32), src, 3, NULL), x->dtype);
}

/* an ALU op on a non-native float computes in float and casts back */
RULE(non_native_alu, x) {
  UOp *src[4];
  if (x->nsrc > 4) return (UOp *)PyErr_Format(PyExc_ValueError, "an ALU op with %d sources", x->nsrc);
  for (int i = 0; i < x->nsrc; i++) src[i] = u_cast(x->src[i], DTYPE(FLOAT32));
  return u_cast(u_new((Op)x->op, DTYPE(FLOAT32), src, x->nsrc, x->arg), x->dtype);
}

/* a comparison of non-native floats compares floats */
RULE(non_native_compare, x, y, alu) {
  UOp *src[2] = {u_cast(x, DTYPE(FLOAT32)), u_cast(y, DTYPE(FLOAT32))};
  return u_new((Op)alu->op, DTYPE(BOOL), src, 2, alu->arg);
}

/* a cast to a non-native float from anything but float goes through float */
RULE(cast_through_float_to, x, y) {
  return x->dtype == DTYPE(FLOAT32) ? NULL : u_cast(u_cast(x, DTYPE(FLOAT32)), y->dtype);
}

/* a cast from a non-native float to anything but float goes through float */
RULE(cast_through_float_from, x, y) {
  return x->dtype == DTYPE(FLOAT32) ? NULL : u_cast(u_cast(y, DTYPE(FLOAT32)), x->dtype);
}

static UOp *u_bitcast(UOp *x, DType *dt) { return x ? u_new(OP_BITCAST, dt, &x, 1, NULL) : NULL; }

/* bfloat16 -> float: the 16 bits become the high half of a float's bits */
RULE(bf16_to_float, x) {
  return u_bitcast(u_binop(OP_SHL, u_cast(u_bitcast(x, DTYPE(UINT16)), DTYPE(UINT32)), n_int(16)), DTYPE(FLOAT32));
}

/* float -> bfloat16 with round-to-nearest-even; nan keeps a mantissa bit, inf stays inf (cast_float_to_bf16) */
RULE(float_to_bf16, x) {
  if (x->dtype != DTYPE(FLOAT32)) return (UOp *)PyErr_Format(PyExc_AssertionError, "cast float -> bf16 must start with float");
  UOp *bits32 = u_bitcast(x, DTYPE(UINT32));
  UOp *finite = u_binop(OP_CMPNE, u_binop(OP_AND, u_neg(bits32), n_int(0x7f800000)), n_int(0));
  UOp *rounded = u_binop(OP_ADD, u_add(bits32, u_binop(OP_AND, u_binop(OP_SHR, bits32, n_int(16)), n_int(1))), n_int(0x7fff));
  UOp *nan_keep = u_where(u_binop(OP_CMPNE, u_binop(OP_AND, bits32, n_int(0xffff)), n_int(0)), u_binop(OP_OR, bits32, n_int(0x10000)), bits32);
  UOp *bits = u_where(finite, rounded, nan_keep);
  return u_bitcast(u_cast(u_binop(OP_SHR, bits, n_int(16)), DTYPE(UINT16)), DTYPE(BFLOAT16));
}


/* create_non_native_float_pats: DTS stands for the dtypes, spelled as their repr */
static const RuleDef non_native_float_defs[] = {
  R("UPat(Ops.WHERE, src=(UPat.var('b'), UPat.var('x', dtype=DTS), UPat.var('y', dtype=DTS)))", non_native_where),
  R("UPat(GroupOp.ALU, dtype=DTS, name='x')", non_native_alu),
  R("UPat(GroupOp.ALU, dtypes.bool, name='alu', src=(UPat.var('x', dtype=DTS), UPat.var('y', dtype=DTS)))", non_native_compare),
};
/* ... and with casting=True */
static const RuleDef non_native_float_cast_defs[] = {
  R("UPat(Ops.CAST, DTS, (UPat.var('x'),), name='y')", cast_through_float_to),
  R("UPat(Ops.CAST, name='x', src=(UPat.var('y', DTS),))", cast_through_float_from),
};

static const RuleDef pm_manual_bf16_cast_defs[] = {
  R("UPat(Ops.CAST, dtypes.float, (UPat.var('x', dtypes.bfloat16),))", bf16_to_float),
  R("UPat(Ops.CAST, dtype=dtypes.bfloat16, src=(UPat.var('x', dtype=dtypes.float),))", float_to_bf16),
};

/* ClangRenderer's own: casts clang would lower to a libcall (no native double/bfloat16 -> half on most CPUs) go through float */
static const RuleDef clang_extra_defs[] = {
  R("UPat.var('x', dtypes.float64).cast(dtypes.float16, name='cast_root')", cast_via_float32),
  R("UPat.var('x', dtypes.float64).cast(dtypes.bfloat16, name='cast_root')", cast_via_float32),
  R("UPat.var('x', dtypes.bfloat16).cast(dtypes.float16, name='cast_root')", cast_via_float32),
  R("UPat((Ops.SQRT, Ops.TRUNC), name='alu')", no_vectorized_alu),
};

/* pm_from_defs with DTS in every pattern spelled as `spelled` */
static PatternMatcher *pm_for_dtypes(const RuleDef *defs, int n, PyObject *spelled) {
  RuleDef mine[8];
  PyObject *texts = PyList_New(0), *dts = PyUnicode_FromString("DTS");   /* texts keeps the patterns' UTF-8 alive */
  PatternMatcher *pm = NULL;
  if (n > N(mine)) PyErr_SetString(PyExc_SystemError, "pm_for_dtypes: too many rules");
  for (int i = 0; i < n && texts && dts && !PyErr_Occurred(); i++) {
    PyObject *p = PyUnicode_FromString(defs[i].pattern), *q = p ? PyUnicode_Replace(p, dts, spelled, -1) : NULL;
    const char *utf8 = q && PyList_Append(texts, q) == 0 ? PyUnicode_AsUTF8(q) : NULL;
    Py_XDECREF(p); Py_XDECREF(q);
    mine[i] = (RuleDef){utf8, defs[i].fn, defs[i].reads, defs[i].name, defs[i].file, defs[i].line};
  }
  if (texts && dts && !PyErr_Occurred()) pm = pm_from_defs(mine, n);
  Py_XDECREF(texts); Py_XDECREF(dts);
  return pm;
}

/* create_non_native_float_pats(dts, casting=True): the rules that compute in float what the dtypes (a tuple of DTypes, or one)
 * cannot; a new reference */
static PatternMatcher *create_non_native_float_pats(PyObject *dts, bool casting) {
  bool ok = DType_Check(dts) || PyTuple_Check(dts);
  for (Py_ssize_t i = 0; ok && PyTuple_Check(dts) && i < PyTuple_GET_SIZE(dts); i++) ok = DType_Check(PyTuple_GET_ITEM(dts, i));
  if (!ok) return (PatternMatcher *)PyErr_Format(PyExc_TypeError, "create_non_native_float_pats needs a tuple of DTypes, not %R", dts);
  PyObject *spelled = PyObject_Repr(dts);
  PatternMatcher *pm = spelled ? pm_for_dtypes(non_native_float_defs, N(non_native_float_defs), spelled) : NULL;
  PatternMatcher *cast = pm && casting ? pm_for_dtypes(non_native_float_cast_defs, N(non_native_float_cast_defs), spelled) : NULL;
  if (cast) Py_SETREF(pm, pm_concat(pm, cast));
  else if (casting) Py_CLEAR(pm);
  Py_XDECREF(cast); Py_XDECREF(spelled);
  return pm;
}

static PyObject *py_create_non_native_float_pats(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"dts", "casting", NULL};
  PyObject *dts;
  int casting = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:create_non_native_float_pats", kwlist, &dts, &casting)) return NULL;
  return (PyObject *)create_non_native_float_pats(dts, casting);
}

/* pm concatenated with the registered rule set `name`: steals pm, a new reference */
static PatternMatcher *then(PatternMatcher *pm, const char *name) {
  PatternMatcher *next = native_get(name), *ret = pm && next ? pm_concat(pm, next) : NULL;
  if (pm && !next) PyErr_Format(PyExc_RuntimeError, "the native rule set %s is missing", name);
  Py_XDECREF(pm);
  return ret;
}

/* base_rewrite, extra_pm, pm_manual_bf16_cast and ClangRenderer.extra_matcher: its own rules
 * + create_non_native_float_pats((dtypes.bfloat16,)) + pm_manual_bf16_cast + CStyleLanguage.extra_matcher, as tinygrad's */
static int init_matchers(void) {
  if (native_register("base_rewrite", pm_from_defs(base_rewrite_defs, N(base_rewrite_defs))) < 0 ||
      native_register("extra_pm", pm_from_defs(extra_pm_defs, N(extra_pm_defs))) < 0 ||
      native_register("pm_manual_bf16_cast", pm_from_defs(pm_manual_bf16_cast_defs, N(pm_manual_bf16_cast_defs))) < 0)
    return -1;
  PyObject *bf16 = PyTuple_Pack(1, (PyObject *)DTYPE(BFLOAT16));
  PatternMatcher *own = pm_from_defs(clang_extra_defs, N(clang_extra_defs)), *non_native = bf16 ? create_non_native_float_pats(bf16, true) : NULL;
  PatternMatcher *clang = own && non_native ? pm_concat(own, non_native) : NULL;
  Py_XDECREF(bf16); Py_XDECREF(own); Py_XDECREF(non_native);
  if (native_register("clang_extra_matcher", then(then(clang, "pm_manual_bf16_cast"), "extra_pm")) < 0) return -1;
  /* OpenCLRenderer: its string rules + base_rewrite; create_non_native_float_pats((dtypes.bfloat16,)) + pm_manual_bf16_cast + extra_pm */
  PyObject *bf16_again = PyTuple_Pack(1, (PyObject *)DTYPE(BFLOAT16));
  PatternMatcher *cl_non_native = bf16_again ? create_non_native_float_pats(bf16_again, true) : NULL;
  Py_XDECREF(bf16_again);
  if (native_register("opencl_extra_matcher", then(then(cl_non_native, "pm_manual_bf16_cast"), "extra_pm")) < 0) return -1;
  return native_register("opencl_string_rewrite", then(pm_from_defs(opencl_rewrite_defs, N(opencl_rewrite_defs)), "base_rewrite"));
}

/* ================================================================================================
 * the Python types: CStyleLanguage, ClangRenderer, ClangJITRenderer
 * ================================================================================================ */

/* render(uops): render_kernel(*_render(uops), uops), each the subclass's where it overrides them; both read this render's settings */
static PyObject *CStyle_render(PyObject *self, PyObject *uops) {
  CStyleObject *o = (CStyleObject *)self;
  CStyleSettings tmp, *s = settings_acquire(self, &tmp), *outer = o->settings;
  if (!s) return NULL;
  o->settings = s;
  PyObject *ret = NULL, *parts = s->_render ? PyObject_CallOneArg(s->_render, uops) : render_lines(o, s, uops);
  if (parts && s->_render) Py_SETREF(parts, PySequence_Tuple(parts));
  if (parts && PyTuple_GET_SIZE(parts) != 3) PyErr_Format(PyExc_TypeError, "_render must return (name, kernel, bufs)");
  else if (parts) {
    PyObject *args[4] = {PyTuple_GET_ITEM(parts, 0), PyTuple_GET_ITEM(parts, 1), PyTuple_GET_ITEM(parts, 2), uops};
    ret = s->render_kernel ? PyObject_Vectorcall(s->render_kernel, args, 4, NULL) : s->lang->render_kernel(s, self, args[0], args[1], args[2], uops, Py_None);
  }
  Py_XDECREF(parts);
  o->settings = outer;
  settings_release(s, &tmp);
  return ret;
}

static PyObject *CStyle__render(PyObject *self, PyObject *uops) {
  CStyleSettings tmp, *s = settings_acquire(self, &tmp);
  PyObject *ret = s ? render_lines((CStyleObject *)self, s, uops) : NULL;
  settings_release(s, &tmp);
  return ret;
}

static char *render_kernel_kwlist[] = {"function_name", "kernel", "bufs", "uops", "prefix", NULL};
static char *render_body_kwlist[] = {"function_name", "kernel", "bufs", "uops", "pref", NULL};   /* _render_body's name for prefix */

/* render_kernel(function_name, kernel, bufs, uops, prefix=None) by fn */
static PyObject *render_kernel_method(PyObject *self, PyObject *args, PyObject *kw, const char *format, char **kwlist, RenderKernelFn fn) {
  PyObject *name, *kernel, *bufs, *uops, *prefix = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, format, kwlist, &name, &kernel, &bufs, &uops, &prefix)) return NULL;
  CStyleSettings tmp, *s = settings_acquire(self, &tmp);
  PyObject *ret = s ? fn(s, self, name, kernel, bufs, uops, prefix) : NULL;
  settings_release(s, &tmp);
  return ret;
}
static PyObject *CStyle_render_kernel(PyObject *self, PyObject *args, PyObject *kw) {
  return render_kernel_method(self, args, kw, "OOOO|O:render_kernel", render_kernel_kwlist, cstyle_render_kernel);
}

/* a method on one DType: fn(settings, dt), a new reference */
static PyObject *dtype_method(PyObject *self, PyObject *dt, PyObject *(*fn)(CStyleSettings *, DType *)) {
  if (!DType_Check(dt)) return PyErr_Format(PyExc_TypeError, "a DType is needed, not %.100s", Py_TYPE(dt)->tp_name);
  CStyleSettings tmp, *s = settings_acquire(self, &tmp);
  Py_ssize_t mark = pool_mark();
  PyObject *ret = s ? fn(s, (DType *)dt) : NULL;
  pool_release(mark);
  settings_release(s, &tmp);
  return ret;
}

static PyObject *CStyle_render_dtype(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"dt", "mutable", NULL};
  PyObject *dt, *mutable_ = Py_True;   /* only images render by it */
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:render_dtype", kwlist, &dt, &mutable_)) return NULL;
  if (!DType_Check(dt)) return PyErr_Format(PyExc_TypeError, "a DType is needed, not %.100s", Py_TYPE(dt)->tp_name);
  CStyleSettings tmp, *s = settings_acquire(self, &tmp);
  PyObject *ret = s ? render_dtype_m(s, (DType *)dt, mutable_) : NULL;
  settings_release(s, &tmp);
  return ret;
}

static PyObject *CStyle_render_cast(PyObject *self, PyObject *args) {
  PyObject *dt, *val;
  if (!PyArg_ParseTuple(args, "O!O:render_cast", &DType_Type, &dt, &val)) return NULL;
  CStyleSettings tmp, *s = settings_acquire(self, &tmp);
  Py_ssize_t mark = pool_mark();
  PyObject *ret = s ? (PyObject *)fmt2("(%S)(%S)", dtype_text(s, (DType *)dt), val) : NULL;
  Py_XINCREF(ret);
  pool_release(mark);
  settings_release(s, &tmp);
  return ret;
}

static PyMethodDef CStyle_methods[] = {
  {"render", (PyCFunction)CStyle_render, METH_O, "render(uops) -> the kernel's source: render_kernel(*_render(uops), uops)"},
  {"_render", (PyCFunction)CStyle__render, METH_O, "_render(uops) -> (name, kernel lines, bufs)"},
  {"render_kernel", (PyCFunction)(void (*)(void))CStyle_render_kernel, METH_VARARGS | METH_KEYWORDS,
   "render_kernel(function_name, kernel, bufs, uops, prefix=None) -> the kernel function's text"},
  {"render_dtype", (PyCFunction)(void (*)(void))CStyle_render_dtype, METH_VARARGS | METH_KEYWORDS, "render_dtype(dt, mutable=True) -> the C type"},
  {"render_cast", CStyle_render_cast, METH_VARARGS, "render_cast(dt, val) -> '(type)(val)'"},
  {NULL, NULL, 0, NULL},
};

PyTypeObject CStyleLanguage_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.CStyleLanguage",
  .tp_basicsize = sizeof(CStyleObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "tinygrad's CStyleLanguage: the settings of a C-style language, rendered by one loop",
  .tp_methods = CStyle_methods,
  .tp_base = &Renderer_Type,
  .tp_new = PyType_GenericNew,
};

static PyObject *Clang_render_kernel(PyObject *self, PyObject *args, PyObject *kw) {
  return render_kernel_method(self, args, kw, "OOOO|O:render_kernel", render_kernel_kwlist, clang_render_kernel);
}
static PyObject *Clang__render_body(PyObject *self, PyObject *args, PyObject *kw) {
  return render_kernel_method(self, args, kw, "OOOO|O:_render_body", render_body_kwlist, cstyle_render_kernel);
}
static PyObject *Clang__render_entry(PyObject *self, PyObject *args, PyObject *kw) {
  UNUSED(self);
  static char *kwlist[] = {"function_name", "bufs", NULL};
  PyObject *name, *bufs;
  return PyArg_ParseTupleAndKeywords(args, kw, "OO:_render_entry", kwlist, &name, &bufs) ? Py_NewRef(str_empty) : NULL;
}
static PyObject *Clang__render_defines(PyObject *self, PyObject *uops) {
  CStyleSettings tmp, *s = settings_acquire(self, &tmp);
  Py_ssize_t mark = pool_mark();
  PyObject *ret = s ? clang_render_defines(s, self, uops) : NULL;
  pool_release(mark);
  settings_release(s, &tmp);
  return ret;
}
static PyObject *Clang_render_vector_prefix(PyObject *self, PyObject *dt) { return dtype_method(self, dt, render_vector_prefix); }

static PyMethodDef Clang_methods[] = {
  {"render_kernel", (PyCFunction)(void (*)(void))Clang_render_kernel, METH_VARARGS | METH_KEYWORDS,
   "render_kernel(function_name, kernel, bufs, uops, prefix=None): _render_defines, _render_body, _render_entry"},
  {"render_vector_prefix", Clang_render_vector_prefix, METH_O, "render_vector_prefix(dt) -> the typedef of a vector dtype"},
  {"_render_defines", Clang__render_defines, METH_O, "_render_defines(uops) -> the vector typedefs the uops need"},
  {"_render_body", (PyCFunction)(void (*)(void))Clang__render_body, METH_VARARGS | METH_KEYWORDS,
   "_render_body(function_name, kernel, bufs, uops, pref=None): CStyleLanguage's render_kernel"},
  {"_render_entry", (PyCFunction)(void (*)(void))Clang__render_entry, METH_VARARGS | METH_KEYWORDS, "_render_entry(function_name, bufs) -> ''"},
  {NULL, NULL, 0, NULL},
};

PyTypeObject ClangRenderer_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.ClangRenderer",
  .tp_basicsize = sizeof(CStyleObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "tinygrad's ClangRenderer: C source for the CPU device",
  .tp_methods = Clang_methods,
  .tp_base = &CStyleLanguage_Type,
  .tp_new = PyType_GenericNew,
};

/* ClangJITRenderer(): a ClangRenderer that compiles, its compiler a new ClangCompiler. The compiler lives in the device layer,
 * above this one, so its type is looked up by name in tinyc._C when one is made. */
static int ClangJIT_init(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kw, ":ClangJITRenderer", kwlist)) return -1;
  PyObject *mod = PyImport_ImportModule("tinyc._C"), *cls = mod ? getattr_literal(mod, "ClangCompiler") : NULL;
  PyObject *compiler = cls ? PyObject_CallNoArgs(cls) : NULL;
  int rc = compiler ? PyObject_SetAttrString(self, "compiler", compiler) : -1;
  Py_XDECREF(mod); Py_XDECREF(cls); Py_XDECREF(compiler);
  return rc;
}

PyTypeObject ClangJITRenderer_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.ClangJITRenderer",
  .tp_basicsize = sizeof(CStyleObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "tinygrad's ClangJITRenderer: a ClangRenderer with a ClangCompiler",
  .tp_base = &ClangRenderer_Type,
  .tp_init = ClangJIT_init,
  .tp_new = PyType_GenericNew,
};

static PyObject *OpenCL_render_kernel(PyObject *self, PyObject *args, PyObject *kw) {
  return render_kernel_method(self, args, kw, "OOOO|O:render_kernel", render_kernel_kwlist, opencl_render_kernel);
}

/* aux(uops): (the dtypes of the DEFINE_GLOBALs, in order,): the runtime makes image objects of the image ones */
static PyObject *OpenCL_aux(PyObject *self, PyObject *uops_in) {
  UNUSED(self);
  PyObject *uops = uop_sequence(uops_in), *dts = uops ? PyList_New(0) : NULL, *ret = NULL;
  for (Py_ssize_t i = 0; dts && i < PySequence_Fast_GET_SIZE(uops); i++) {
    UOp *u = (UOp *)PySequence_Fast_GET_ITEM(uops, i);
    if (u->op == OP_DEFINE_GLOBAL && PyList_Append(dts, (PyObject *)u->dtype) < 0) Py_CLEAR(dts);
  }
  PyObject *t = dts ? PyList_AsTuple(dts) : NULL;
  if (t) ret = PyTuple_Pack(1, t);
  Py_XDECREF(t); Py_XDECREF(dts); Py_XDECREF(uops);
  return ret;
}

static PyMethodDef OpenCL_methods[] = {
  {"render_kernel", (PyCFunction)(void (*)(void))OpenCL_render_kernel, METH_VARARGS | METH_KEYWORDS,
   "render_kernel(function_name, kernel, bufs, uops, prefix=None): CStyleLanguage's, with the fp16 pragma where half is used"},
  {"aux", OpenCL_aux, METH_O, "aux(uops) -> (the DEFINE_GLOBALs' dtypes,)"},
  {NULL, NULL, 0, NULL},
};

PyTypeObject OpenCLRenderer_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.OpenCLRenderer",
  .tp_basicsize = sizeof(CStyleObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
  .tp_doc = "tinygrad's OpenCLRenderer: OpenCL C for the CL device, image buffers as image2d_t",
  .tp_methods = OpenCL_methods,
  .tp_base = &CStyleLanguage_Type,
  .tp_new = PyType_GenericNew,
};

/* ---- class attributes, from the tables ---- */

/* code_for_op from a table, checked: each template takes as many operands as its op */
static PyObject *code_for_op_dict(const OpCode *codes) {
  PyObject *d = PyDict_New();
  for (const OpCode *c = codes; d && c->op != OP_NONE; c++) {
    if (template_arity(c->code) != op_arity(c->op) || (c->code_f64 && template_arity(c->code_f64) != op_arity(c->op))) {
      PyErr_Format(PyExc_SystemError, "the code_for_op template of Ops.%s does not take %d operands", op_names[c->op], op_arity(c->op));
      Py_CLEAR(d);
      break;
    }
    PyObject *fn = native_code(c, NULL);
    if (!fn || PyDict_SetItem(d, ops_members[c->op], fn) < 0) Py_CLEAR(d);
    Py_XDECREF(fn);
  }
  return d;
}

static PyObject *workitem_dict(const WorkitemCode *codes) {
  PyObject *d = PyDict_New();
  for (const WorkitemCode *w = codes; d && w->kind; w++) {
    if (template_arity(w->code) > 3) {   /* workitem_text passes the dimension three times */
      PyErr_Format(PyExc_SystemError, "the code_for_workitem template of %s uses its dimension more than three times", w->kind);
      Py_CLEAR(d);
      break;
    }
    PyObject *fn = native_code(NULL, w);
    if (!fn || PyDict_SetItemString(d, w->kind, fn) < 0) Py_CLEAR(d);
    Py_XDECREF(fn);
  }
  return d;
}

static PyObject *type_map_dict(const TypeName *names) {
  PyObject *d = PyDict_New();
  for (const TypeName *t = names; d && t->name; t++) {
    PyObject *name = PyUnicode_FromString(t->name);
    if (!name || PyDict_SetItem(d, (PyObject *)scalar_dtypes[t->dtype], name) < 0) Py_CLEAR(d);
    Py_XDECREF(name);
  }
  return d;
}

static PyObject *str_list(const char *const *strs) {
  PyObject *l = PyList_New(0);
  for (; l && *strs; strs++) {
    PyObject *s = PyUnicode_FromString(*strs);
    if (!s || PyList_Append(l, s) < 0) Py_CLEAR(l);
    Py_XDECREF(s);
  }
  return l;
}

static PyObject *registered(const char *name) {
  PyObject *pm = (PyObject *)native_get(name);
  return pm ? Py_NewRef(pm) : PyErr_Format(PyExc_RuntimeError, "the native rule set %s is missing", name);
}

/* a language's table as the class attributes of its type */
static int language_attrs(PyTypeObject *t, const CStyleLanguageDef *d) {
  return renderer_set_attr(t, "kernel_typedef", PyUnicode_FromString(d->kernel_typedef)) < 0 ||
    renderer_set_attr(t, "buffer_prefix", PyUnicode_FromString(d->buffer_prefix)) < 0 ||
    renderer_set_attr(t, "buffer_suffix", PyUnicode_FromString(d->buffer_suffix)) < 0 ||
    renderer_set_attr(t, "smem_align", PyUnicode_FromString(d->smem_align)) < 0 ||
    renderer_set_attr(t, "smem_prefix", PyUnicode_FromString(d->smem_prefix)) < 0 ||
    renderer_set_attr(t, "smem_prefix_for_cast", PyBool_FromLong(d->smem_prefix_for_cast)) < 0 ||
    renderer_set_attr(t, "arg_int_prefix", PyUnicode_FromString(d->arg_int_prefix)) < 0 ||
    renderer_set_attr(t, "barrier", PyUnicode_FromString(d->barrier)) < 0 ||
    renderer_set_attr(t, "code_for_workitem", workitem_dict(d->code_for_workitem)) < 0 ||
    renderer_set_attr(t, "extra_args", str_list(d->extra_args)) < 0 ||
    renderer_set_attr(t, "float4", d->float4 ? PyUnicode_FromString(d->float4) : Py_NewRef(Py_None)) < 0 ||
    renderer_set_attr(t, "float4_style", Py_BuildValue("(ss)", d->float4_style[0], d->float4_style[1])) < 0 ||
    renderer_set_attr(t, "gep_arr_threshold", PyLong_FromLong(d->gep_arr_threshold)) < 0 ||
    renderer_set_attr(t, "type_map", type_map_dict(d->type_map)) < 0 ||
    renderer_set_attr(t, "infinity", PyUnicode_FromString(d->infinity)) < 0 || renderer_set_attr(t, "nan", PyUnicode_FromString(d->nan)) < 0 ||
    renderer_set_attr(t, "code_for_op", code_for_op_dict(d->code_for_op)) < 0 ||
    renderer_set_attr(t, "string_rewrite", registered(d->string_rewrite)) < 0 ||
    renderer_set_attr(t, "extra_matcher", registered(d->extra_matcher)) < 0 ? -1 : 0;
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

/* ClangRenderer's Renderer attributes: the CPU device, no local memory, threads unless THREADS=0, a thread per core */
static int clang_renderer_attrs(PyTypeObject *t) {
  return renderer_set_attr(t, "device", PyUnicode_FromString("CPU")) < 0 || renderer_set_attr(t, "has_local", Py_NewRef(Py_False)) < 0 ||
    renderer_set_attr(t, "has_threads", PyBool_FromLong(env_long("THREADS", 1) != 0)) < 0 ||
    renderer_set_attr(t, "global_max", renderer_int_tuple3(cpu_count(), 0, 0)) < 0 ? -1 : 0;
}

/* the interned names of the settings and overridable methods, and the text constants */
static int init_names(void) {
  PyObject *names = PyList_New(0);
  for (int i = 0; names && i < N_SETTINGS; i++)
    if (!(setting_names[i] = PyUnicode_InternFromString(SETTINGS[i].name)) || PyList_Append(names, setting_names[i]) < 0) Py_CLEAR(names);
  for (int i = 0; names && i < M_COUNT; i++)
    if (!(clang_methods[i] = PyUnicode_InternFromString(clang_method_names[i])) || PyList_Append(names, clang_methods[i]) < 0) Py_CLEAR(names);
  overridable = names ? PyFrozenSet_New(names) : NULL;
  Py_XDECREF(names);
  return overridable && (str_empty = PyUnicode_FromString("")) && (str_space = PyUnicode_FromString(" ")) &&
    (str_underscore = PyUnicode_FromString("_")) && (str_comma = PyUnicode_FromString(",")) &&
    (str_comma_space = PyUnicode_FromString(", ")) && (str_newline = PyUnicode_FromString("\n")) &&
    (str_float4 = PyUnicode_FromString("float4")) ? 0 : -1;
}

/* every native type's class settings, read from a bare instance */
static int init_class_settings(void) {
  for (int k = 0; k < N(native_types); k++) {
    PyObject *bare = PyType_GenericNew(native_types[k].type, NULL, NULL);
    int rc = bare ? settings_read(bare, &native_types[k].cls) : -1;
    Py_XDECREF(bare);
    if (rc < 0) return -1;
    native_types[k].cls.plain = true;
  }
  return 0;
}

static PyMethodDef cstyle_functions[] = {
  {"create_non_native_float_pats", (PyCFunction)(void (*)(void))py_create_non_native_float_pats, METH_VARARGS | METH_KEYWORDS,
   "create_non_native_float_pats(dts, casting=True): rules computing in float what the dtypes cannot"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_cstyle(PyObject *m) {
  if (PyType_Ready(&NativeCode_Type) < 0 || init_names() < 0 || init_matchers() < 0) return -1;
  if (PyType_Ready(&CStyleLanguage_Type) < 0 || PyType_Ready(&ClangRenderer_Type) < 0 || PyType_Ready(&ClangJITRenderer_Type) < 0 ||
      PyType_Ready(&OpenCLRenderer_Type) < 0)
    return -1;
  if (language_attrs(&CStyleLanguage_Type, &cstyle_language) < 0 || language_attrs(&ClangRenderer_Type, &clang_language) < 0 ||
      clang_renderer_attrs(&ClangRenderer_Type) < 0 || language_attrs(&OpenCLRenderer_Type, &opencl_language) < 0 ||
      renderer_set_attr(&OpenCLRenderer_Type, "device", PyUnicode_FromString("CL")) < 0 ||
      renderer_set_attr(&OpenCLRenderer_Type, "has_aux", Py_NewRef(Py_True)) < 0)
    return -1;
  PyType_Modified(&CStyleLanguage_Type);
  PyType_Modified(&ClangRenderer_Type);
  PyType_Modified(&ClangJITRenderer_Type);
  PyType_Modified(&OpenCLRenderer_Type);
  if (init_class_settings() < 0 || PyModule_AddFunctions(m, cstyle_functions) < 0) return -1;
  return tinyc_add(m, "CStyleLanguage", (PyObject *)&CStyleLanguage_Type) < 0 ||
    tinyc_add(m, "ClangRenderer", (PyObject *)&ClangRenderer_Type) < 0 ||
    tinyc_add(m, "ClangJITRenderer", (PyObject *)&ClangJITRenderer_Type) < 0 ||
    tinyc_add(m, "OpenCLRenderer", (PyObject *)&OpenCLRenderer_Type) < 0 ? -1 : 0;
}
