"""The bridge to an installed tinygrad 0.12.0: convert whole UOp graphs both ways.

from_tinygrad(u) builds the tinyc graph of a tinygrad UOp; to_tinygrad(u) the reverse. Both keep sharing
(a node used twice is converted once) and walk iteratively, so deep graphs convert. Because both sides
hash-cons their nodes, a round trip returns the very object it started from.
This is the only module of tinyc that imports tinygrad.
"""
from __future__ import annotations
from typing import Any, Callable
import tinyc
from tinyc import _C
from tinygrad.uop.ops import UOp as TgUOp, KernelInfo as TgKernelInfo, AxisType as TgAxisType
from tinygrad.uop import Ops as TgOps
from tinygrad.dtype import DType as TgDType, PtrDType as TgPtrDType, ImageDType as TgImageDType, AddrSpace as TgAddrSpace
from tinygrad.dtype import dtypes as tg_dtypes, Invalid as TgInvalid
from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps
from tinygrad.schedule.indexing import BufferizeOpts as TgBufferizeOpts

__all__ = ["from_tinygrad", "to_tinygrad"]

def _dtype_converter(src_dtypes, dst_dtypes, ptr_type, dst_addrspace, image_type=None):
  """A function mapping a dtype of one side to the same dtype of the other, by name and shape. (image_type is no longer
  needed: an image dtype is a pointer dtype with a shape, on both sides.)"""
  def convert(dt):
    if isinstance(dt, ptr_type) and hasattr(dt, "shape"):  # an ImageDType (of either side): remade by dtypes.imagef / imageh
      ret = getattr(dst_dtypes, dt.name)(tuple(dt.shape), dt._pitch)
      return ret.vec(dt.v) if dt.v != 1 else ret
    if isinstance(dt, ptr_type):
      ret = convert(dt.base).ptr(dt.size, dst_addrspace[dt.addrspace.name])
      return ret.vec(dt.v) if dt.v != 1 else ret
    ret = getattr(dst_dtypes, _scalar_names_of(src_dtypes)[dt.scalar()])
    return ret.vec(dt.count) if dt.count != 1 else ret
  return convert

_name_cache: dict[int, dict] = {}
def _scalar_names_of(dtypes_ns) -> dict:
  if (names := _name_cache.get(id(dtypes_ns))) is None:
    fields = ("void", "index", "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "fp8e4m3", "fp8e5m2",
              "float16", "bfloat16", "float32", "float64")
    names = _name_cache[id(dtypes_ns)] = {getattr(dtypes_ns, f): f for f in fields}
  return names

_to_tc_dtype = _dtype_converter(tg_dtypes, tinyc.dtypes, TgPtrDType, tinyc.AddrSpace.__members__, TgImageDType)
_to_tg_dtype = _dtype_converter(tinyc.dtypes, tg_dtypes, tinyc.PtrDType, TgAddrSpace.__members__)

def _arg_converter(from_types: dict[type, Callable[[Any], Any]]) -> Callable[[Any], Any]:
  """Convert an arg (or tag) value: known types by their converter, tuples item by item, the rest as is."""
  def convert(x):
    if (f := from_types.get(type(x))) is not None: return f(x)
    if type(x) is tuple: return tuple(convert(v) for v in x)
    return x
  return convert

def _kernel_info_to_tc(k: TgKernelInfo):
  return tinyc.KernelInfo(k.name, _to_tc_arg(k.axis_types), k.dont_use_locals, _to_tc_arg(k.applied_opts), _to_tc_arg(k.opts_to_apply))
def _kernel_info_to_tg(k):
  return TgKernelInfo(k.name, _to_tg_arg(k.axis_types), k.dont_use_locals, _to_tg_arg(k.applied_opts), _to_tg_arg(k.opts_to_apply))

_to_tc_arg = _arg_converter({
  TgOps: lambda o: tinyc.Ops(o.value), TgAxisType: lambda a: tinyc.AxisType(a.value), TgOptOps: lambda o: tinyc.OptOps(o.value),
  TgOpt: lambda o: tinyc.Opt(tinyc.OptOps(o.op.value), o.axis, _to_tc_arg(o.arg)), TgKernelInfo: _kernel_info_to_tc,
  type(TgInvalid): lambda _: tinyc.Invalid, TgAddrSpace: lambda a: tinyc.AddrSpace(a.value),
  TgDType: _to_tc_dtype, TgPtrDType: _to_tc_dtype,
  TgBufferizeOpts: lambda b: tinyc.BufferizeOpts(_to_tc_arg(b.device), _to_tc_arg(b.addrspace), b.removable)})
_to_tg_arg = _arg_converter({
  tinyc.Ops: lambda o: TgOps(o.value), tinyc.AxisType: lambda a: TgAxisType(a.value), tinyc.OptOps: lambda o: TgOptOps(o.value),
  tinyc.Opt: lambda o: TgOpt(TgOptOps(o.op.value), o.axis, _to_tg_arg(o.arg)), tinyc.KernelInfo: _kernel_info_to_tg,
  tinyc.InvalidType: lambda _: TgInvalid, tinyc.AddrSpace: lambda a: TgAddrSpace(a.value),
  tinyc.DType: _to_tg_dtype, tinyc.PtrDType: _to_tg_dtype,
  tinyc.BufferizeOpts: lambda b: TgBufferizeOpts(_to_tg_arg(b.device), _to_tg_arg(b.addrspace), b.removable)})

def _convert_graph(root, make, convert_dtype, convert_arg, ops_type):
  """Rebuild the graph under root bottom-up (toposort order), one `make` per distinct node."""
  done: dict = {}
  for u in root.toposort():
    done[u] = make(ops_type(u.op.value), convert_dtype(u.dtype), tuple(done[s] for s in u.src), convert_arg(u.arg), convert_arg(u.tag))
  return done[root]

def from_tinygrad(u: TgUOp) -> tinyc.UOp:
  """The tinyc graph equal to tinygrad UOp u."""
  if not isinstance(u, TgUOp): raise TypeError(f"from_tinygrad needs a tinygrad UOp, got {type(u).__name__}")
  return _convert_graph(u, tinyc.UOp, _to_tc_dtype, _to_tc_arg, tinyc.Ops)

def to_tinygrad(u: tinyc.UOp) -> TgUOp:
  """The tinygrad graph equal to tinyc UOp u."""
  if not isinstance(u, tinyc.UOp): raise TypeError(f"to_tinygrad needs a tinyc UOp, got {type(u).__name__}")
  return _convert_graph(u, TgUOp, _to_tg_dtype, _to_tg_arg, TgOps)
