/* tinygrad/codegen/__init__.py: full_rewrite_to_sink, the pass sequence from a kernel AST to the final
 * sink, and get_program, which linearizes, renders and (when the renderer has a compiler) compiles it.
 *
 * The pass list is data: each pass names its rule sets (tinygrad's names, registered by the files of
 * the passes) and the context its rules read; their concatenation is built once, on first use.
 * The environment switches tinygrad reads here (DEVECTORIZE, TRANSCENDENTAL; SPEC in spec.c) are read once at
 * import, as tinygrad's ContextVars read the environment. With no opts given, apply_opts (postrange.c) chooses them
 * as tinygrad does: the hand-coded heuristics unless NOOPT; opts=[] applies none. */
#include "codegen.h"
#include "../uop/form.h"
#include "opt/opt.h"
#include "../uop/kernel_info.h"
#include "../renderers/renderer.h"

typedef enum { CTX_NONE, CTX_DICT, CTX_DEVICE, CTX_RENDERER, CTX_COUNTER, CTX_REDUCE, CTX_CFG } CtxKind;

typedef struct {
  const char *name;           /* tinygrad's name= for the pass */
  const char *sets[5];        /* the rule sets, concatenated in this order */
  CtxKind ctx;
  bool bottom_up;
  PatternMatcher *pm;         /* built on first use */
} Pass;

#define PASS(nm, ctx, bu, ...) {nm, {__VA_ARGS__}, ctx, bu, NULL}

static Pass early_pass = PASS("early movement ops", CTX_NONE, true, "pm_mops", "pm_syntactic_sugar");

/* optimize=True: range and store preparation before the Scheduler applies opts */
static Pass optimize_passes[] = {
  PASS("load collapse", CTX_NONE, false, "pm_load_collapse"),
  PASS("split ranges", CTX_DICT, false, "pm_split_ranges", "pm_flatten_range"),
  /* symbolic: pm_simplify_ranges is only correct after it */
  PASS("initial symbolic", CTX_NONE, false, "sym", "pm_flatten_range"),
  PASS("simplify ranges", CTX_NONE, false, "pm_simplify_ranges"),
  PASS("cut store ranges", CTX_DEVICE, false, "pm_split_store"),
};

/* expander and devectorizer up to the loads */
static Pass expand_passes[] = {
  PASS("postopt symbolic", CTX_NONE, false, "sym", "pm_move_where_on_load"),
  PASS("expander", CTX_NONE, false, "sym", "pm_pre_expander", "pm_group_for_reduce", "expander"),
  PASS("add local buffers", CTX_COUNTER, false, "pm_add_buffers_local", "rangeify_codegen"),
  PASS("remove_reduce", CTX_REDUCE, false, "pm_reduce", "gep_pushing"),
  /* gpudims works after devectorize too, but it is faster here */
  PASS("add gpudims", CTX_RENDERER, false, "pm_add_gpudims"),
  PASS("** add loads (code)", CTX_NONE, false, "pm_add_loads"),
};

/* devectorize, by DEVECTORIZE: 0, 1, >=2 */
static Pass devectorize_passes[] = {
  PASS("devectorize", CTX_RENDERER, false, "sym", "load_store_folding", "correct_load_store", "load_store_indexing"),
  PASS("devectorize", CTX_RENDERER, false, "sym", "devectorize", "load_store_folding", "correct_load_store", "load_store_indexing"),
  PASS("devectorize", CTX_RENDERER, false, "sym", "load_store_folding", "load_store_indexing"),
};

static Pass lower_passes[] = {
  PASS("lower all index dtypes", CTX_DEVICE, false, "pm_lower_index_dtype", "load_store_indexing"),
  PASS("post index symbolic", CTX_NONE, false, "symbolic"),
};

static Pass control_flow_pass = PASS("add control flow", CTX_CFG, true, "pm_add_control_flow");

static long devectorize_level = 1, transcendental_level = 1;
static PyObject *itertools_count;      /* itertools.count */
static PyObject *final_cache;          /* (code_for_op keys, force, extra_matcher) -> (pm_decomp, pm_final_rewrite) */

/* ---- building the passes' matchers ---- */

static PatternMatcher *concat_sets(const char *const *names, int n) {
  PatternMatcher *pm = NULL;
  for (int i = 0; i < n && names[i]; i++) {
    PatternMatcher *set = native_get(names[i]);
    if (!set) {
      Py_XDECREF(pm);
      return (PatternMatcher *)PyErr_Format(PyExc_RuntimeError, "the native rule set %s is missing", names[i]);
    }
    PatternMatcher *next = pm ? pm_concat(pm, set) : (PatternMatcher *)Py_NewRef(set);
    Py_XDECREF(pm);
    if (!(pm = next)) return NULL;
  }
  return pm;
}

static PatternMatcher *pass_matcher(Pass *p) {
  if (!p->pm) p->pm = concat_sets(p->sets, 5);
  return p->pm;
}

/* ---- the contexts ---- */

static PyObject *renderer_device(PyObject *ren) { return getattr_literal(ren, "device"); }

/* a new reference to the ctx of pass p on sink */
static PyObject *pass_ctx(const Pass *p, PyObject *ren, UOp *sink) {
  switch (p->ctx) {
    case CTX_NONE: return Py_NewRef(Py_None);
    case CTX_DICT: return PyDict_New();
    case CTX_DEVICE: return renderer_device(ren);
    case CTX_RENDERER: return Py_NewRef(ren);
    case CTX_COUNTER: return PyObject_CallFunction(itertools_count, "i", 0);
    case CTX_REDUCE: return reduce_context_new();
    case CTX_CFG: return cfg_edges(sink);
  }
  return NULL;
}

/* graph_rewrite(sink, pm, ctx) for one pass; steals sink, returns a new reference. A ctx the rules only read (a
 * renderer, a device name) lets the rewrite skip what no rule can change (graph_rewrite_read_only_ctx). */
static UOp *run_matcher(UOp *sink, PatternMatcher *pm, PyObject *ctx, bool bottom_up, bool ctx_read_only) {
  UOp *ret = !sink || !pm || !ctx ? NULL
           : ctx_read_only ? graph_rewrite_read_only_ctx(sink, pm, ctx, bottom_up) : graph_rewrite(sink, pm, ctx, bottom_up, NULL);
  Py_XDECREF(sink); Py_XDECREF(ctx);
  return ret;
}

static UOp *run_pass(UOp *sink, Pass *p, PyObject *ren) {
  if (!sink) return NULL;
  bool read_only = p->ctx == CTX_NONE || p->ctx == CTX_DEVICE || p->ctx == CTX_RENDERER;
  PyObject *ctx = pass_ctx(p, ren, sink);
  if (ctx && p->ctx == CTX_CFG) {   /* pm_add_control_flow on the edges made here: a direct walk */
    UOp *ret = add_control_flow(sink, ctx);
    Py_DECREF(sink); Py_DECREF(ctx);
    return ret;
  }
  return run_matcher(sink, pass_matcher(p), ctx, p->bottom_up, read_only);
}

static UOp *run_passes(UOp *sink, Pass *ps, int n, PyObject *ren) {
  for (int i = 0; i < n && sink; i++) sink = run_pass(sink, &ps[i], ren);
  return sink;
}

/* ---- the renderer's part: decompositions and the final rewrite ---- */

/* (pm_decomp, pm_final_rewrite) for this renderer, borrowed from the cache:
 * pm_decomp = symbolic_simple + get_late_rewrite_patterns(code_for_op keys, TRANSCENDENTAL>=2)
 * pm_final_rewrite = pm_decomp + pm_render + extra_matcher + pm_split_ends */
static PyObject *renderer_matchers(PyObject *ren) {
  PyObject *code_for_op = getattr_literal(ren, "code_for_op"), *extra = getattr_literal(ren, "extra_matcher");
  PyObject *ops = code_for_op ? PySequence_Tuple(code_for_op) : NULL;   /* a dict iterates over its keys */
  PyObject *key = ops && extra ? Py_BuildValue("(OOO)", ops, transcendental_level >= 2 ? Py_True : Py_False, extra) : NULL;
  PyObject *ret = key ? PyDict_GetItemWithError(final_cache, key) : NULL;
  if (key && !ret && !PyErr_Occurred()) {
    if (extra != Py_None && !PatternMatcher_Check(extra)) {
      PyErr_Format(PyExc_TypeError, "renderer's extra_matcher must be a PatternMatcher or None, not %.100s", Py_TYPE(extra)->tp_name);
      goto done;
    }
    PatternMatcher *late = get_late_rewrite_patterns(ops, transcendental_level >= 2);
    const char *render_sets[] = {"pm_render"}, *end_sets[] = {"pm_split_ends"};
    PatternMatcher *decomp = late ? pm_concat(native_get("symbolic_simple"), late) : NULL;
    PatternMatcher *render = concat_sets(render_sets, 1), *ends = concat_sets(end_sets, 1);
    PatternMatcher *a = decomp && render ? pm_concat(decomp, render) : NULL;
    PatternMatcher *b = a && extra != Py_None ? pm_concat(a, (PatternMatcher *)extra) : (PatternMatcher *)Py_XNewRef(a);
    PatternMatcher *final = b && ends ? pm_concat(b, ends) : NULL;
    PyObject *pair = final ? PyTuple_Pack(2, (PyObject *)decomp, (PyObject *)final) : NULL;
    if (pair && PyDict_SetItem(final_cache, key, pair) == 0) ret = pair;
    Py_XDECREF(pair); Py_XDECREF(decomp); Py_XDECREF(render); Py_XDECREF(ends); Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(final);
  }
done:
  Py_XDECREF(code_for_op); Py_XDECREF(extra); Py_XDECREF(ops); Py_XDECREF(key);
  return ret;
}

/* ---- full_rewrite_to_sink ---- */

static UOp *verify_kernel(UOp *sink) {
  if (spec_check((PyObject *)sink, "kernel_spec") < 0) { Py_DECREF(sink); return NULL; }
  return sink;
}

static UOp *apply_opts(UOp *sink, PyObject *ren) {
  UOp *images = sink ? postrange_make_images(sink, ren) : NULL;   /* image buffers first (IMAGE=1 on QCOM/CL) */
  UOp *ret = images ? postrange_apply_opts(images, ren) : NULL;
  Py_XDECREF(sink); Py_XDECREF(images);
  return ret;
}

/* the renderer's optional pre_matcher */
static UOp *run_pre_matcher(UOp *sink, PyObject *ren) {
  PyObject *pre = sink ? getattr_literal(ren, "pre_matcher") : NULL;
  if (!pre) { Py_XDECREF(sink); return NULL; }
  if (pre == Py_None) { Py_DECREF(pre); return sink; }
  if (!PatternMatcher_Check(pre)) {
    PyErr_Format(PyExc_TypeError, "renderer's pre_matcher must be a PatternMatcher or None, not %.100s", Py_TYPE(pre)->tp_name);
    Py_DECREF(pre); Py_DECREF(sink);
    return NULL;
  }
  UOp *ret = run_matcher(sink, (PatternMatcher *)pre, Py_NewRef(Py_None), false, true);
  Py_DECREF(pre);
  return ret;
}

static UOp *run_renderer_passes(UOp *sink, PyObject *ren) {
  PyObject *matchers = sink ? renderer_matchers(ren) : NULL;
  if (!matchers) { Py_XDECREF(sink); return NULL; }
  Py_INCREF(matchers);   /* the cache may be cleared while rewriting runs Python rules */
  sink = run_matcher(sink, (PatternMatcher *)PyTuple_GET_ITEM(matchers, 0), renderer_device(ren), false, true);   /* decompositions */
  sink = run_matcher(sink, (PatternMatcher *)PyTuple_GET_ITEM(matchers, 1), sink ? renderer_device(ren) : NULL, false, true); /* final */
  Py_DECREF(matchers);
  return sink;
}

static UOp *rewrite_to_sink(UOp *sink, PyObject *ren, bool optimize) {
  sink = verify_kernel((UOp *)Py_NewRef(sink));
  sink = run_pass(sink, &early_pass, ren);
  if (optimize) sink = apply_opts(run_passes(sink, optimize_passes, N(optimize_passes), ren), ren);
  sink = run_passes(sink, expand_passes, N(expand_passes), ren);
  int dv = devectorize_level >= 2 ? 2 : devectorize_level ? 1 : 0;
  sink = run_pass(sink, &devectorize_passes[dv], ren);
  sink = run_passes(sink, lower_passes, N(lower_passes), ren);
  sink = run_pre_matcher(sink, ren);
  sink = run_renderer_passes(sink, ren);
  return run_pass(sink, &control_flow_pass, ren);
}

/* The passes make no reference cycles (UOps are a DAG), but they allocate many tuples and dicts, which
 * would start the cycle collector every few hundred allocations: it is paused while they run. */
UOp *full_rewrite_to_sink(UOp *sink, PyObject *ren, bool optimize) {
  if (uop_check_form(sink, "full_rewrite_to_sink") < 0) return NULL;
  if (sink->op != OP_SINK) return (UOp *)PyErr_Format(PyExc_ValueError, "full_rewrite_to_sink needs a SINK, got %S", ops_str[sink->op]);
  int gc_was_enabled = PyGC_Disable();
  UOp *ret = rewrite_to_sink(sink, ren, optimize);
  if (gc_was_enabled) PyGC_Enable();
  return ret;
}

/* ---- get_program: pm_to_program ---- */

/* do_linearize: PROGRAM(SINK, DEVICE) gains LINEAR */
RULE(to_linear, prg, sink) {
  return KEEP(do_linearize(prg, sink));
}

/* do_render: gains SOURCE, the renderer's text for the lines (and the renderer's aux as arg if it has one) */
RULE(to_source, prg, lin) {
  PyObject *lines = pool_keep(PyList_New(lin->nsrc));
  for (Py_ssize_t i = 0; lines && i < (Py_ssize_t)lin->nsrc; i++) PyList_SET_ITEM(lines, i, Py_NewRef(lin->src[i]));
  PyObject *text = lines ? pool_keep(PyObject_CallMethod(ctx, "render", "O", lines)) : NULL;
  if (text && !PyUnicode_Check(text))
    return (UOp *)PyErr_Format(PyExc_TypeError, "render() must return a str, not %.100s", Py_TYPE(text)->tp_name);
  PyObject *has_aux = text ? pool_keep(getattr_literal(ctx, "has_aux")) : NULL;
  int aux_wanted = has_aux ? PyObject_IsTrue(has_aux) : -1;
  PyObject *aux = aux_wanted > 0 ? pool_keep(PyObject_CallMethod(ctx, "aux", "O", lines)) : NULL;
  if (aux_wanted < 0 || (aux_wanted && !aux)) return NULL;
  UOp *source = KEEP(uop_new0(OP_SOURCE, DTYPE(VOID), text));
  return source ? KEEP(uop_append_src(prg, source, aux)) : NULL;
}

/* do_compile: gains BINARY, the compiled bytes, when the renderer has a compiler */
RULE(to_binary, source, prg) {
  PyObject *compiler = pool_keep(getattr_literal(ctx, "compiler"));
  if (!compiler || compiler == Py_None) return NULL;
  PyObject *lib = pool_keep(PyObject_CallMethod(compiler, "compile_cached", "O", source->arg));
  UOp *binary = lib ? KEEP(uop_new0(OP_BINARY, DTYPE(VOID), lib)) : NULL;
  return binary ? KEEP(uop_append_src(prg, binary, NULL)) : NULL;
}

static const RuleDef pm_to_program_defs[] = {
  R("UPat(Ops.PROGRAM, src=(UPat(Ops.SINK, name='sink'), UPat(Ops.DEVICE)), name='prg')", to_linear),
  R("UPat(Ops.PROGRAM, src=(UPat(), UPat(Ops.DEVICE), UPat(Ops.LINEAR, name='lin')), name='prg')", to_source),
  R("UPat(Ops.PROGRAM, src=(UPat(), UPat(Ops.DEVICE), UPat(Ops.LINEAR), UPat(Ops.SOURCE, name='source')), name='prg')", to_binary),
};

/* the AST with KernelInfo(opts_to_apply=opts) when opts are given, KernelInfo() when it has no arg */
static UOp *with_kernel_info(UOp *ast, PyObject *opts) {
  PyObject *info = NULL;
  if (opts != Py_None) {
    if (ast->arg != Py_None) return (UOp *)PyErr_Format(PyExc_AssertionError, "can't apply opts if sink has an arg");
    PyObject *t = PySequence_Tuple(opts), *kw = t ? Py_BuildValue("{sO}", "opts_to_apply", t) : NULL, *args = PyTuple_New(0);
    info = kw && args ? PyObject_Call((PyObject *)&KernelInfo_Type, args, kw) : NULL;
    Py_XDECREF(t); Py_XDECREF(kw); Py_XDECREF(args);
  } else if (ast->arg == Py_None) info = PyObject_CallNoArgs((PyObject *)&KernelInfo_Type);
  else return (UOp *)Py_NewRef(ast);
  UOp *ret = info ? uop_new(ast->op, ast->dtype, ast->src, ast->nsrc, info, uop_tag(ast)) : NULL;
  Py_XDECREF(info);
  return ret;
}

/* graph_rewrite(prg, pm, ren) for pm_to_program and pm_to_source, whose rules all match a PROGRAM: on a graph with no
 * other PROGRAM below the root, the rewrite's walk leaves every other node as it is (what the rules add, LINEAR, SOURCE
 * and BINARY, holds no PROGRAM either), so its answer is the root rewritten until no rule fires, without the walk */
static bool only_program_rules(const PatternMatcher *pm) {
  for (int op = 0; op < OP_COUNT; op++) if (op != OP_PROGRAM && pm->n_by_op[op]) return false;
  return true;
}
/* 1 when no PROGRAM is below prg (its sources' ops_below say so, or else a walk), 0 when one is, -1 on error */
static int program_alone(UOp *prg) {
  bool none_below = true;
  for (int i = 0; i < prg->nsrc; i++) none_below &= !(prg->src[i]->ops_below & op_bit(OP_PROGRAM));
  if (none_below) return 1;   /* a kernel's sink: no op of PROGRAM's bit below, no walk */
  PyObject *nodes = uop_toposort_list(prg, NULL);
  if (!nodes) return -1;
  bool alone = true;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(nodes) - 1 && alone; i++) alone = ((UOp *)PyList_GET_ITEM(nodes, i))->op != OP_PROGRAM;
  Py_DECREF(nodes);
  return alone;
}
static UOp *rewrite_program_root(UOp *prg, PatternMatcher *pm, PyObject *ren) {
  if (!only_program_rules(pm)) return graph_rewrite(prg, pm, ren, false, NULL);   /* a rule for other nodes: the walk */
  int alone = program_alone(prg);
  if (alone < 0) return NULL;
  if (!alone) return graph_rewrite(prg, pm, ren, false, NULL);
  UOp *cur = (UOp *)Py_NewRef(prg);
  for (int step = 0; step < 8; step++) {   /* the rules add one source each: three steps at most */
    UOp *next = (UOp *)pm_rewrite(pm, cur, ren, true);
    if (!next) {
      if (PyErr_Occurred()) Py_CLEAR(cur);
      return cur;
    }
    Py_SETREF(cur, next);
  }
  UOp *ret = graph_rewrite(cur, pm, ren, false, NULL);   /* rules that keep firing: the walk's answer (or its error) */
  Py_DECREF(cur);
  return ret;
}

/* the PROGRAM UOp of an AST: SINK, DEVICE, LINEAR, SOURCE and (with a compiler) BINARY; a PROGRAM given
 * goes on from where it stands */
static UOp *build_program(UOp *ast, PyObject *ren, PyObject *opts, const char *passes) {
  if (uop_check_form(ast, "get_program") < 0) return NULL;
  UOp *prg = NULL, *kast = with_kernel_info(ast, opts);
  if (!kast) return NULL;
  if (kast->op == OP_PROGRAM) prg = (UOp *)Py_NewRef(kast);
  else {
    PyObject *device = renderer_device(ren);
    UOp *full = full_rewrite_to_sink(kast, ren, uop_tag(kast) == Py_None);
    UOp *dev = device && full ? uop_new0(OP_DEVICE, DTYPE(VOID), device) : NULL;
    prg = dev ? uop_new2(OP_PROGRAM, DTYPE(VOID), full, dev, NULL) : NULL;
    Py_XDECREF(device); Py_XDECREF(full); Py_XDECREF(dev);
  }
  Py_DECREF(kast);
  PatternMatcher *pm = prg ? native_get(passes) : NULL;
  if (prg && !pm) PyErr_Format(PyExc_RuntimeError, "the native rule set %s is missing", passes);
  UOp *ret = pm ? rewrite_program_root(prg, pm, ren) : NULL;
  Py_XDECREF(prg);
  return ret;
}

/* build_program with the cycle collector paused: the linearizer and the renderer, like the passes (see
 * full_rewrite_to_sink), make many dicts, lists and tuples and no reference cycles */
static UOp *program_uop(UOp *ast, PyObject *ren, PyObject *opts, const char *passes) {
  int gc_was_enabled = PyGC_Disable();
  UOp *ret = build_program(ast, ren, opts, passes);
  if (gc_was_enabled) PyGC_Enable();
  return ret;
}

PyObject *get_program(UOp *ast, PyObject *ren, PyObject *opts) {
  UOp *prg = program_uop(ast, ren, opts, "pm_to_program");
  PyObject *ret = prg ? program_spec_from_uop((PyObject *)prg) : NULL;
  Py_XDECREF(prg);
  return ret;
}

/* BEAM compiles its candidates on other threads: the program up to its SOURCE, lib None (unless the PROGRAM given has
 * its BINARY already) */
PyObject *get_program_uncompiled(UOp *ast, PyObject *ren) {
  UOp *prg = program_uop(ast, ren, Py_None, "pm_to_source");
  PyObject *ret = prg ? program_spec_from_uop((PyObject *)prg) : NULL;
  Py_XDECREF(prg);
  return ret;
}

/* ---- Python ---- */

/* ren=None is tinygrad's Renderer(): a new tinyc.Renderer */
static PyObject *renderer_or_default(PyObject *ren) {
  return ren == Py_None ? PyObject_CallNoArgs((PyObject *)&Renderer_Type) : Py_NewRef(ren);
}

static PyObject *py_full_rewrite_to_sink(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"sink", "ren", "optimize", NULL};
  PyObject *sink, *ren = Py_None;
  int optimize = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|Op:full_rewrite_to_sink", kwlist, &UOp_Type, &sink, &ren, &optimize)) return NULL;
  if (!(ren = renderer_or_default(ren))) return NULL;
  PyObject *ret = (PyObject *)full_rewrite_to_sink((UOp *)sink, ren, optimize);
  Py_DECREF(ren);
  return ret;
}

static PyObject *py_get_program(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"ast", "renderer", "opts", NULL};
  PyObject *ast, *ren, *opts = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|O:get_program", kwlist, &UOp_Type, &ast, &ren, &opts)) return NULL;
  return get_program((UOp *)ast, ren, opts);
}

static PyObject *py_program_uop(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"ast", "renderer", "opts", NULL};
  PyObject *ast, *ren, *opts = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O|O:program_uop", kwlist, &UOp_Type, &ast, &ren, &opts)) return NULL;
  return (PyObject *)program_uop((UOp *)ast, ren, opts, "pm_to_program");
}

static PyMethodDef codegen_functions[] = {
  {"full_rewrite_to_sink", (PyCFunction)(void (*)(void))py_full_rewrite_to_sink, METH_VARARGS | METH_KEYWORDS,
   "full_rewrite_to_sink(sink, ren=None, optimize=True): the kernel AST rewritten to the final sink, as tinygrad's"},
  {"get_program", (PyCFunction)(void (*)(void))py_get_program, METH_VARARGS | METH_KEYWORDS,
   "get_program(ast, renderer, opts=None) -> ProgramSpec, as tinygrad's"},
  {"program_uop", (PyCFunction)(void (*)(void))py_program_uop, METH_VARARGS | METH_KEYWORDS,
   "program_uop(ast, renderer, opts=None): the PROGRAM UOp get_program builds its ProgramSpec from"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_codegen(PyObject *m) {
  PyObject *itertools = PyImport_ImportModule("itertools");
  itertools_count = itertools ? getattr_literal(itertools, "count") : NULL;
  Py_XDECREF(itertools);
  final_cache = PyDict_New();
  if (!itertools_count || !final_cache || ctxvar_int("DEVECTORIZE", &devectorize_level) < 0 ||
      ctxvar_int("TRANSCENDENTAL", &transcendental_level) < 0)
    return -1;
  if (PyModule_AddFunctions(m, codegen_functions) < 0) return -1;
  /* pm_to_source: pm_to_program without its last rule, the compile */
  if (native_register("pm_to_source", pm_from_defs(pm_to_program_defs, N(pm_to_program_defs) - 1)) < 0) return -1;
  return native_register("pm_to_program", pm_from_defs(pm_to_program_defs, N(pm_to_program_defs)));
}
