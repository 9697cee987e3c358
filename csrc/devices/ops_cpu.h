/* What only the CPU device's two files share: ops_cpu.c pairs its renderer with support/compiler_cpu.c's ClangCompiler. */
#ifndef TINYC_OPS_CPU_H
#define TINYC_OPS_CPU_H
#include "../device.h"

/* a new ClangCompiler (cachekey "compile_clang_so") */
PyObject *clang_compiler_new(void);

#endif
