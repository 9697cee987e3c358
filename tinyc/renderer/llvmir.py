"""tinyc.renderer.llvmir mirrors tinygrad.renderer.llvmir: LLVMRenderer (CPU), LLVM IR rendered natively
(csrc/renderers/llvmir.c), compiled in process by CPULLVMCompiler."""
from tinyc._C import LLVMRenderer

__all__ = ["LLVMRenderer"]
