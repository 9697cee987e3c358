/* The tinyc._C module: creates every type and enum, in dependency order. */
#include "tinyc.h"
#include "dtype.h"
#include "helpers/diskcache.h"
#include "uop/ops_movement.h"
#include "uop/native.h"
#include "uop/decompositions.h"
#include "uop/kernel_info.h"
#include "schedule/indexing.h"
#include "codegen/codegen.h"
#include "codegen/opt/opt.h"
#include "codegen/opt/tc.h"
#include "codegen/opt/heuristic.h"
#include "renderers/renderer.h"
#include "renderers/program_spec.h"
#include "device.h"
#include "devices/ops_python.h"
#include "devices/support/compiler_llvm.h"
#include "engine/realize.h"
#include "codegen/opt/search.h"

/* Native rule sets, each after the ones it builds on (symbolic uses div_and_mod_symbolic, ...). */
static int tinyc_init_rule_sets(PyObject *m) {
  return tinyc_init_eval(m) < 0 || tinyc_init_uop_movement(m) < 0 || tinyc_init_indexing(m) < 0 || tinyc_init_divandmod(m) < 0 ||
         tinyc_init_symbolic(m) < 0 || tinyc_init_symbolic_sym(m) < 0 || tinyc_init_decompositions(m) < 0 ||
         tinyc_init_renderer(m) < 0 || tinyc_init_spec(m) < 0 || tinyc_init_codegen_simplify(m) < 0 ||
         tinyc_init_expander(m) < 0 || tinyc_init_rangeify(m) < 0 || tinyc_init_devectorizer(m) < 0 || tinyc_init_gpudims(m) < 0 ||
         tinyc_init_linearizer(m) < 0 || tinyc_init_renderer_base(m) < 0 || tinyc_init_cstyle(m) < 0 || tinyc_init_llvmir(m) < 0 ||
         tinyc_init_program_spec(m) < 0 || tinyc_init_postrange(m) < 0 || tinyc_init_heuristic(m) < 0 || tinyc_init_codegen(m) < 0 ? -1 : 0;
}

/* The device side, after the renderers (each device's pairs make renderers, NullRenderer subclasses ClangRenderer). */
static int tinyc_init_runtime(PyObject *m) {
  return tinyc_init_diskcache(m) < 0 || tinyc_init_device(m) < 0 || tinyc_init_compiler_cpu(m) < 0 || tinyc_init_compiler_llvm(m) < 0 || tinyc_init_ops_cpu(m) < 0 ||
         tinyc_init_ops_null(m) < 0 || tinyc_init_ops_python(m) < 0 || tinyc_init_realize(m) < 0 || tinyc_init_search(m) < 0 ? -1 : 0;
}

static struct PyModuleDef tinyc_module = {PyModuleDef_HEAD_INIT, "tinyc._C",
  "tinygrad's kernel-compiler core in C. Import `tinyc`, not this module.", -1, NULL};

static PyObject *init_module(void) {
  PyObject *m = PyModule_Create(&tinyc_module);
  if (!m) return NULL;
  if (tinyc_init_getenv(m) < 0 || tinyc_init_dtype(m) < 0 || tinyc_init_ops_enum(m) < 0 || tinyc_init_uop(m) < 0 || tinyc_init_upat(m) < 0 || tinyc_init_native(m) < 0 ||
      tinyc_init_kernel_info(m) < 0 || tinyc_init_opt(m) < 0 || tinyc_init_tc(m) < 0 || tinyc_init_rule_sets(m) < 0 || tinyc_init_runtime(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}

#ifdef TINYC_LEAK_CHECK
#include <sanitizer/lsan_interface.h>
#endif
PyMODINIT_FUNC PyInit__C(void) {
#ifdef TINYC_LEAK_CHECK
  /* The sanitizer build checks for leaks everything made after the import. What the import makes, once, stays for the
   * life of the process (the rule tables, built by compiling their patterns), and the interpreter leaves a piece of
   * that compiling behind at exit; none of it can grow, so it is not counted. */
  __lsan_disable();
  PyObject *m = init_module();
  __lsan_enable();
  return m;
#else
  return init_module();
#endif
}
