/* compiler_llvm.c: tinygrad's LLVMCompiler / CPULLVMCompiler through the LLVM C API, and the loader of the relocatable
 * objects it makes (ORC LLJIT). Both exist only when the build found llvm-config (TINYC_HAVE_LLVM); without it the
 * types still exist and constructing one, or loading an object, raises a RuntimeError that says so. */
#ifndef TINYC_COMPILER_LLVM_H
#define TINYC_COMPILER_LLVM_H
#include "../../device.h"

/* A relocatable object (ELF e_type ET_REL) linked in process; what ops_cpu.c's program holds. */
typedef struct LLVMLoaded LLVMLoaded;
/* Link lib (an ET_REL object's bytes) into a new JIT of its own and find the function `fname`; *fxn its address.
 * Called with the GIL held (released while linking). NULL with an exception (RuntimeError naming `name`). */
LLVMLoaded *llvm_object_load(PyObject *name, const char *fname, const char *lib, size_t len, void **fxn);
void llvm_object_free(LLVMLoaded *obj);

/* CPULLVMCompiler(): a new reference, NULL with an exception (the RuntimeError of a build without LLVM) */
PyObject *cpu_llvm_compiler_new(void);

int tinyc_init_compiler_llvm(PyObject *m);
#endif
