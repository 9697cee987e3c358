"""tinyc.device mirrors tinygrad.device: Device (Device[name], Device.DEFAULT), Buffer, Allocator, Compiler,
CompileError, Compiled, is_dtype_supported and ALL_DEVICES, all native in tinyc._C."""
from tinyc._C import Device, Buffer, Allocator, Compiler, CompileError, Compiled, is_dtype_supported, ALL_DEVICES

__all__ = ["Device", "Buffer", "Allocator", "Compiler", "CompileError", "Compiled", "is_dtype_supported", "ALL_DEVICES"]
