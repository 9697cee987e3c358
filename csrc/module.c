/* The tinyc._C module: creates every type and enum, in dependency order. */
#include "tinyc.h"
int tinyc_init_uop_movement(PyObject *m);
int tinyc_init_indexing(PyObject *m);
int tinyc_init_rangeify(PyObject *m);

PyObject *tinyc_make_enum(const char *base, const char *clsname, const char *const *names) {
  PyObject *enum_mod = PyImport_ImportModule("enum");
  if (!enum_mod) return NULL;
  PyObject *cls = NULL, *pairs = PyList_New(0);
  if (!pairs) goto done;
  for (long i = 0; names[i]; i++) {
    PyObject *pair = Py_BuildValue("(sl)", names[i], i + 1);
    if (!pair || PyList_Append(pairs, pair) < 0) { Py_XDECREF(pair); goto done; }
    Py_DECREF(pair);
  }
  PyObject *enum_base = PyObject_GetAttrString(enum_mod, base);
  if (!enum_base) goto done;
  PyObject *args = Py_BuildValue("(sO)", clsname, pairs), *kwargs = Py_BuildValue("{ss}", "module", "tinyc");
  if (args && kwargs) cls = PyObject_Call(enum_base, args, kwargs);
  Py_XDECREF(args); Py_XDECREF(kwargs); Py_DECREF(enum_base);
done:
  Py_XDECREF(pairs); Py_DECREF(enum_mod);
  return cls;
}

/* Native rule sets, each after the ones it builds on (symbolic uses div_and_mod_symbolic, ...). */
static int tinyc_init_rule_sets(PyObject *m) {
  return tinyc_init_eval(m) < 0 || tinyc_init_uop_movement(m) < 0 || tinyc_init_indexing(m) < 0 || tinyc_init_divandmod(m) < 0 ||
         tinyc_init_symbolic(m) < 0 || tinyc_init_symbolic_sym(m) < 0 || tinyc_init_decompositions(m) < 0 ||
         tinyc_init_renderer(m) < 0 || tinyc_init_spec(m) < 0 || tinyc_init_codegen_simplify(m) < 0 ||
         tinyc_init_expander(m) < 0 || tinyc_init_rangeify(m) < 0 || tinyc_init_devectorizer(m) < 0 || tinyc_init_gpudims(m) < 0 ||
         tinyc_init_linearizer(m) < 0 || tinyc_init_renderer_base(m) < 0 || tinyc_init_cstyle(m) < 0 || tinyc_init_program_spec(m) < 0 ||
         tinyc_init_postrange(m) < 0 || tinyc_init_codegen(m) < 0 ? -1 : 0;
}

/* The device side, after the renderers (the CPU device holds a ClangRenderer). */
static int tinyc_init_runtime(PyObject *m) {
  return tinyc_init_diskcache(m) < 0 || tinyc_init_device(m) < 0 || tinyc_init_compiler_cpu(m) < 0 || tinyc_init_ops_cpu(m) < 0 ||
         tinyc_init_realize(m) < 0 ? -1 : 0;
}

static struct PyModuleDef tinyc_module = {PyModuleDef_HEAD_INIT, "tinyc._C",
  "tinygrad's kernel-compiler core in C. Import `tinyc`, not this module.", -1, NULL};

PyMODINIT_FUNC PyInit__C(void) {
  PyObject *m = PyModule_Create(&tinyc_module);
  if (!m) return NULL;
  if (tinyc_init_dtype(m) < 0 || tinyc_init_ops_enum(m) < 0 || tinyc_init_uop(m) < 0 || tinyc_init_upat(m) < 0 || tinyc_init_native(m) < 0 ||
      tinyc_init_opt(m) < 0 || tinyc_init_rule_sets(m) < 0 || tinyc_init_runtime(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
