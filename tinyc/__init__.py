"""tinyc: tinygrad 0.12.0's kernel-compiler core as a CPython extension in C.

The types keep tinygrad's names and meaning: `from tinyc import UOp, Ops, dtypes` reads like
`from tinygrad.uop.ops import UOp, Ops; from tinygrad.dtype import dtypes`.
"""
from tinyc import _C
from tinyc._C import (Ops, GroupOp, AxisType, UOp, DType, PtrDType, AddrSpace, dtypes, Invalid, InvalidType,
                      least_upper_dtype, least_upper_float, to_dtype, can_lossless_cast, sum_acc_dtype, truncate_value,
                      KernelInfo, Opt, OptOps, KernelOptError, UPat, PatternMatcher, graph_rewrite, BottomUpGate,
                      resolve, smax, smin, ssimplify, sym_infer, Renderer, CStyleLanguage, ClangRenderer, ClangJITRenderer,
                      LLVMRenderer, Buffer, Device, Allocator, Compiler, ClangCompiler, LLVMCompiler, CPULLVMCompiler, CompileError,
                      Compiled, CPUDevice, CPUProgram, NullRenderer, NullDevice, NullProgram, CompiledRunner, ProgramSpec, Estimates,
                      BufferizeOpts, Scheduler, TensorCore, hand_coded_optimizations)

__all__ = ["Ops", "GroupOp", "AxisType", "UOp", "DType", "PtrDType", "AddrSpace", "dtypes", "Invalid", "InvalidType",
           "least_upper_dtype", "least_upper_float", "to_dtype", "can_lossless_cast", "sum_acc_dtype", "truncate_value",
           "KernelInfo", "Opt", "OptOps", "KernelOptError", "UPat", "PatternMatcher", "graph_rewrite", "BottomUpGate",
           "resolve", "smax", "smin", "ssimplify", "sym_infer", "Renderer", "CStyleLanguage", "ClangRenderer", "ClangJITRenderer",
           "LLVMRenderer", "Buffer", "Device", "Allocator", "Compiler", "ClangCompiler", "LLVMCompiler", "CPULLVMCompiler",
           "CompileError", "Compiled", "CPUDevice", "CPUProgram", "NullRenderer", "NullDevice", "NullProgram", "CompiledRunner",
           "ProgramSpec", "Estimates", "BufferizeOpts", "Scheduler", "TensorCore", "hand_coded_optimizations"]
Variable = UOp.variable   # tinygrad's `from tinygrad import Variable`
__all__.append("Variable")
from tinyc._C import PythonRenderer, PythonCompiler, PythonDevice, PythonProgram   # the PYTHON device (devices/ops_python.c)
__all__ += ["PythonRenderer", "PythonCompiler", "PythonDevice", "PythonProgram"]
from tinyc._C import ClangObjectCompiler   # clang -c alone, as tinygrad's ClangJITCompiler runs it (devices/support/compiler_cpu.c)
__all__.append("ClangObjectCompiler")
from tinyc._C import ImageDType, OpenCLRenderer  # tinygrad's image dtypes (dtypes.imagef / imageh) and the OpenCL renderer
__all__ += ["ImageDType", "OpenCLRenderer"]
