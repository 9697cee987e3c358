"""The bridge to an installed tinygrad 0.12.0: convert whole UOp graphs both ways.

from_tinygrad(u) builds the tinyc graph of a tinygrad UOp; to_tinygrad(u) the reverse. Both keep sharing
(a node used twice is converted once) and walk iteratively, so deep graphs convert. Because both sides
hash-cons their nodes, a round trip returns the very object it started from.
install() routes tinygrad's get_program through tinyc (see "The bridge" below).
This is the only module of tinyc that imports tinygrad.
"""
from __future__ import annotations
from typing import Any, Callable
import tinyc
from tinyc import _C
from tinygrad.uop.ops import UOp as TgUOp, KernelInfo as TgKernelInfo, AxisType as TgAxisType, UOpMetaClass as _TgUOpMeta
from tinygrad.uop import Ops as TgOps
from tinygrad.dtype import DType as TgDType, PtrDType as TgPtrDType, ImageDType as TgImageDType, AddrSpace as TgAddrSpace
from tinygrad.dtype import dtypes as tg_dtypes, Invalid as TgInvalid
from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps
from tinygrad.schedule.indexing import BufferizeOpts as TgBufferizeOpts
from tinygrad.helpers import SPEC as _TG_SPEC

__all__ = ["from_tinygrad", "to_tinygrad", "install", "uninstall", "installed", "stats", "reset_stats"]

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

_PLAIN_ARGS = frozenset((type(None), int, float, bool, str))   # args both sides share as they are

class _Direction:
  """Converting nodes one way: the other side's constructor, and what an op, a dtype and an arg become. Ops and dtypes are
  few and immutable on both sides, so each is converted once and remembered; so are the members of the enums that args
  hold (enums: {this side's enum: the other side's}), which C swaps inside an arg without calling convert_arg. consed():
  None, or the (class, cache) that lets C hash-cons the nodes as the constructor would (see _C._rebuild_graph)."""
  def __init__(self, make, op_type, convert_dtype, convert_arg, enums: dict, consed=lambda: None):
    self.make, self.op_type, self.convert_dtype, self.convert_arg, self.consed = make, op_type, convert_dtype, convert_arg, consed
    self.ops: dict = {}
    self.dtypes: dict = {}
    self.members = {src: tuple((m, dst(m.value)) for m in src) for src, dst in enums.items()}

  def convert_op(self, op): return self.op_type(op.value)

  def graph(self, root):
    """Rebuild the graph under root bottom-up (toposort order), one node made per distinct node: an op, a dtype and the
    sources looked up, an arg of plain values and enum members converted in C (the loop is C's, _C._rebuild_graph)."""
    return _C._rebuild_graph(list(root.toposort()), self.make, self.ops, self.convert_op, self.dtypes, self.convert_dtype,
                             self.convert_arg, _PLAIN_ARGS, self.consed(), self.members)

def _tinygrads_constructor(f) -> bool:
  return getattr(f, "__module__", None) == "tinygrad.uop.ops" and getattr(f, "__qualname__", None) == "UOpMetaClass.__call__"
def _tg_consed():
  """tinygrad's UOp(op, dtype, src, arg, tag) hash-conses a node in UOpMetaClass.ucache and, under SPEC>1, checks it
  against the spec: the bridge's nodes carry no metadata or buffer, so C does the same while SPEC<=1 and the constructor
  is tinygrad's own (not replaced, before or after this import); else the constructor is called."""
  return (TgUOp, _TgUOpMeta.ucache) if _TG_SPEC.value <= 1 and _tinygrads_constructor(_TgUOpMeta.__dict__.get("__call__")) else None

_ENUMS = {tinyc.Ops: TgOps, tinyc.AxisType: TgAxisType, tinyc.OptOps: TgOptOps, tinyc.AddrSpace: TgAddrSpace}   # same values
_TO_TC = _Direction(tinyc.UOp, tinyc.Ops, _to_tc_dtype, _to_tc_arg, {tg: tc for tc, tg in _ENUMS.items()})
_TO_TG = _Direction(TgUOp, TgOps, _to_tg_dtype, _to_tg_arg, _ENUMS, _tg_consed)

def from_tinygrad(u: TgUOp) -> tinyc.UOp:
  """The tinyc graph equal to tinygrad UOp u."""
  if not isinstance(u, TgUOp): raise TypeError(f"from_tinygrad needs a tinygrad UOp, got {type(u).__name__}")
  return _TO_TC.graph(u)

def to_tinygrad(u: tinyc.UOp) -> TgUOp:
  """The tinygrad graph equal to tinyc UOp u."""
  if not isinstance(u, tinyc.UOp): raise TypeError(f"to_tinygrad needs a tinyc UOp, got {type(u).__name__}")
  return _TO_TG.graph(u)


# ================================================================================================
# The bridge: tinygrad's get_program built by tinyc
# ================================================================================================
#
# install() puts _routed_get_program where tinygrad's modules bound get_program (tinygrad.codegen, engine.realize,
# codegen.opt.search) and _routed_run_schedule where they bound run_schedule (engine.realize, tensor). A kernel for a
# renderer tinyc has goes: tinygrad AST -> from_tinygrad -> tinyc's program_uop (opts, heuristics or BEAM as the AST
# and environment ask) -> a tinygrad ProgramSpec, its fields as tinygrad's ProgramSpec.from_uop computes them, read by
# tinyc's C from_uop (with the estimates) and converted by to_tinygrad. The lib is what tinygrad's runtime loads: for
# ClangJIT the bytes tinygrad's ClangJITCompiler makes (its clang command run by tinyc's C on native compile threads,
# then tinygrad's jit_loader); for LLVM tinyc's in-process LLVM object through tinygrad's jit_loader, as tinygrad's
# CPULLVMCompiler returns it. Anything else, or a kernel tinyc raises on, goes to tinygrad's get_program.
#
# Compile ahead: run_schedule's list is known before it runs, so the bridge generates code for its kernels that the
# method cache lacks (in the calling thread: codegen makes UOps) and queues their compiles on a CompilePool (search.c's
# BEAM pool); get_program, reached in tinygrad's order through tinygrad's get_runner, takes the finished program.
import contextlib, dataclasses, functools, os, sys, threading, time
import tinygrad.codegen as _tg_codegen
import tinygrad.engine.realize as _tg_realize
from tinygrad.renderer import ProgramSpec as TgProgramSpec, Estimates as TgEstimates
from tinygrad.uop.ops import print_uops as _tg_print_uops
from tinygrad.renderer.cstyle import ClangRenderer as TgClangRenderer, ClangJITRenderer as TgClangJITRenderer
from tinygrad.renderer.llvmir import LLVMRenderer as TgLLVMRenderer
from tinygrad.runtime.support.compiler_cpu import ClangJITCompiler as _TgClangJITCompiler
from tinygrad.helpers import DEBUG as _TG_DEBUG, BEAM as _TG_BEAM, NOOPT as _TG_NOOPT, DEVECTORIZE as _TG_DEVECTORIZE, getenv as _tg_getenv
from tinygrad.helpers import diskcache_get as _tg_diskcache_get, diskcache_put as _tg_diskcache_put
from tinygrad.device import Device as _TgDevice
import tinyc.codegen

_tg_get_program = _tg_codegen.get_program
_tg_run_schedule = _tg_realize.run_schedule

# the settings tinyc read at import (its ContextVars read the environment once): a tinygrad Context() that changes one
# of them makes tinyc's program differ, so such a kernel falls back unless tinyc.helpers.follow_tinygrad keeps them equal
_TC_CONTEXT = {k: int(os.environ.get(k) or d) for k, d in (("BEAM", 0), ("NOOPT", 0), ("DEVECTORIZE", 1))}

class _JitLoaded:
  """An object tinyc compiles, as tinygrad's jitted CPU compilers return it: through tinygrad's own jit_loader (a flat
  image; a tenth of a millisecond, in Python). compile(src) -> the object's bytes."""
  def __init__(self, compile): self.compile = compile
  def compile_cached(self, src):
    from tinygrad.runtime.support.elf import jit_loader
    return jit_loader(self.compile(src))

class _Uncached:
  """A tinygrad compiler's compile alone: tinygrad's disk cache is one sqlite connection that only its creating thread
  may use, so the bridge reads and writes the cache in the calling thread and only compiles on the pool."""
  def __init__(self, compiler): self.compiler = compiler
  def compile_cached(self, src): return self.compiler.compile(src)

@dataclasses.dataclass
class _Route:
  """How the bridge builds a tinygrad renderer's kernels: tinyc's renderer (no compiler: codegen stops at SOURCE) and
  the compiler of the lib (None: lib None, tinygrad compiles), with the disk cache key of that compiler (or None)."""
  renderer: Any
  compiler: Any
  cachekey: str|None

def _uncompiled(ren):
  ren.compiler = None   # the bridge compiles (on the pool, with the lib tinygrad's runtime loads)
  return ren

def _route_clang_jit(ren):
  if (c := ren.compiler) is None: return None
  # tinygrad's own ClangJITCompiler is replaced by the same clang command run from C without the GIL (the same object
  # bytes: tinyc.ClangObjectCompiler), then its jit_loader; a compiler of another type is run as it is
  compiler = _JitLoaded(tinyc.ClangObjectCompiler().compile) if type(c) is _TgClangJITCompiler else _Uncached(c)
  return _Route(_uncompiled(tinyc.ClangJITRenderer()), compiler, getattr(c, "cachekey", None))
def _route_clang(ren): return _Route(_uncompiled(tinyc.ClangRenderer()), None, None)
def _route_llvm(ren):
  return _Route(_uncompiled(tinyc.LLVMRenderer()), _JitLoaded(tinyc.CPULLVMCompiler().compile_cached), None) if _C.HAVE_LLVM else None

# tinygrad's renderer classes that tinyc has, by exact type (a subclass may change what it renders)
_ROUTES = {TgClangJITRenderer: _route_clang_jit, TgClangRenderer: _route_clang, TgLLVMRenderer: _route_llvm}

class _State:
  def __init__(self):
    self.lock = threading.Lock()
    self.routes: dict[int, tuple[Any, _Route|None]] = {}   # id(tinygrad renderer) -> (the renderer, its route)
    self.saved: list[tuple[Any, str, Any]] = []            # (module, name, tinygrad's object) that install() replaced
    self.local = threading.local()                         # .ahead: the running schedule's kernels built ahead
    self.routed, self.fallback, self.seconds, self.split = 0, {}, 0.0, {"codegen": 0.0, "compile_wait": 0.0}
    self.following = False
_S = _State()

def _route(ren) -> _Route|None:
  with _S.lock:
    if (hit := _S.routes.get(id(ren))) is not None and hit[0] is ren: return hit[1]
  make = _ROUTES.get(type(ren))
  r = make(ren) if make is not None else None
  for name in ("device", "has_local", "has_threads", "global_max", "local_max", "supports_float4"):  # same settings
    if r is not None and getattr(r.renderer, name, None) != getattr(ren, name, None): r = None
  with _S.lock: _S.routes[id(ren)] = (ren, r)
  return r

def _follow_tinygrad(on: bool) -> bool:
  """tinyc.helpers.follow_tinygrad(on) where it exists (it keeps tinyc's settings equal to tinygrad's Context)."""
  if (f := getattr(getattr(tinyc, "helpers", None), "follow_tinygrad", None)) is None: return False
  f(on)
  return on

def _context_reason() -> str|None:
  if _S.following: return None
  for v in (_TG_BEAM, _TG_NOOPT, _TG_DEVECTORIZE):
    if v.value != _TC_CONTEXT[v.key]: return f"{v.key}={v.value} set after tinyc read {_TC_CONTEXT[v.key]}"
  return None

def _count_fallback(reason: str):
  with _S.lock: _S.fallback[reason] = _S.fallback.get(reason, 0) + 1
  if _TG_DEBUG >= 2: print(f"tinyc bridge: tinygrad builds this kernel ({reason})")

# ---- building one kernel ----

@dataclasses.dataclass
class _Built:
  """A kernel's source, its tinygrad ProgramSpec (lib not set) and its compile: a pool job, or a lib (or None) already there."""
  src: str
  route: _Route
  spec: TgProgramSpec|None = None
  pool: Any = None
  job: int = -1
  lib: bytes|None = None

@contextlib.contextmanager
def _timed(part: str):
  st = time.perf_counter()
  try: yield
  finally:
    with _S.lock: _S.split[part] += time.perf_counter() - st

def _codegen(ast, route: _Route, opts, pool) -> _Built:
  """The kernel's program, its compile started (see _start_compile) before its graph is converted for tinygrad: at once,
  while tinyc's graph is still in the processor's caches (converted later, among tinygrad's own work, it cost twice)."""
  with _timed("codegen"):
    tc_opts = None if opts is None else [_to_tc_arg(o) for o in opts]
    prg = tinyc.codegen.program_uop(from_tinygrad(ast), route.renderer, tc_opts)
  b = _start_compile(_Built(prg.src[3].arg, route), pool)
  with _timed("codegen"): b.spec = _tg_program_spec(prg)
  return b

def _cached_lib(b: _Built) -> bytes|None:
  return _tg_diskcache_get(b.route.cachekey, b.src) if b.route.cachekey is not None else None

def _start_compile(b: _Built, pool) -> _Built:
  """Queue b's compile on pool (None: compile when it is needed), unless tinygrad's disk cache has its lib."""
  if b.route.compiler is None: return b
  if (lib := _cached_lib(b)) is not None: b.lib = lib
  elif pool is not None: b.pool, b.job = pool, pool.submit(b.route.compiler, b.src)
  return b

def _finish_compile(b: _Built) -> bytes|None:
  if b.route.compiler is None or b.lib is not None: return b.lib
  if _tg_getenv("ASSERT_COMPILE"): raise AssertionError(f"tried to compile with ASSERT_COMPILE set\n{b.src}")
  with _timed("compile_wait"): lib = b.pool.result(b.job) if b.pool is not None else b.route.compiler.compile_cached(b.src)
  if b.route.cachekey is not None: _tg_diskcache_put(b.route.cachekey, b.src, lib)
  return lib

def _tg_sint(x): return to_tinygrad(x) if isinstance(x, tinyc.UOp) else x

class _Uops(list):
  """A routed ProgramSpec's uops (tinyc's linearized uops through to_tinygrad), with the estimates tinyc counted from
  them in C; it pickles and copies as a plain list."""
  __slots__ = ("estimates",)
  def __init__(self, uops, estimates: TgEstimates):
    super().__init__(uops)
    self.estimates = estimates
  def __reduce_ex__(self, protocol): return list, (list(self),)

class _ProgramSpec(TgProgramSpec):
  """tinygrad's ProgramSpec of a kernel tinyc built. Its estimates are the ones tinyc counted and keeps with the uops
  (_Uops), so tinygrad does not count them again in Python for each kernel it runs; a dataclasses.replace, as tinygrad's
  get_runner makes, keeps the uops and so the count. Equal to a tinygrad ProgramSpec of the same fields, and it pickles
  as one (tinyc is not needed to load it)."""
  @functools.cached_property
  def estimates(self) -> TgEstimates:
    return self.uops.estimates if type(self.uops) is _Uops else TgProgramSpec.estimates.func(self)
  def __eq__(self, other): return _spec_fields(self) == _spec_fields(other) if isinstance(other, TgProgramSpec) else NotImplemented
  __hash__ = None
  def __reduce__(self): return TgProgramSpec, _spec_fields(self)

def _spec_fields(p: TgProgramSpec) -> tuple: return tuple(getattr(p, f.name) for f in dataclasses.fields(TgProgramSpec))

def _tg_program_spec(prg) -> TgProgramSpec:
  """tinygrad's ProgramSpec.from_uop of tinyc's PROGRAM converted, its fields read by tinyc's C ProgramSpec.from_uop (the
  same single pass over the uops). A UOp among them (a var, a symbolic size or estimate) converts to the very node of
  the converted graph: both sides hash-cons."""
  tc, tg = tinyc.ProgramSpec.from_uop(prg), to_tinygrad(prg)
  e = tc.estimates
  uops = _Uops(tg.src[2].src, TgEstimates(_tg_sint(e.ops), _tg_sint(e.lds), _tg_sint(e.mem)))
  return _ProgramSpec(tc.name, tc.src, tc.device, tg.src[0], uops, None, list(tg.arg) if tg.arg else [],
                      [_tg_sint(x) for x in tc.global_size], None if tc.local_size is None else [_tg_sint(x) for x in tc.local_size],
                      [to_tinygrad(v) for v in tc.vars], list(tc.globals), list(tc.outs), list(tc.ins))

def _spec(b: _Built) -> TgProgramSpec:
  if _TG_DEBUG >= 6: _tg_print_uops(b.spec.uops)   # as tinygrad's from_uop prints them, in get_program's order
  b.spec.lib = _finish_compile(b)
  return b.spec

def _ahead_key(ast, ren): return (ast.key, id(ren))

def _build(ast, ren, route: _Route, opts) -> TgProgramSpec:
  ahead = getattr(_S.local, "ahead", None)
  b = ahead.pop(_ahead_key(ast, ren), None) if ahead is not None and opts is None else None
  return _spec(b if b is not None else _codegen(ast, route, opts, None))

def _routed_get_program(ast, renderer, opts=None):
  """tinygrad's get_program(ast, renderer, opts=None) -> ProgramSpec, built by tinyc where it can."""
  if (route := _route(renderer)) is None: reason = f"tinyc has no renderer for {type(renderer).__name__}"
  elif (reason := _context_reason()) is None:
    st = time.perf_counter()
    try: ret = _build(ast, renderer, route, opts)
    except Exception as e: reason = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:200]
    finally:
      with _S.lock: _S.seconds += time.perf_counter() - st
    if reason is None:
      with _S.lock: _S.routed += 1
      return ret
  _count_fallback(reason)
  return _tg_get_program(ast, renderer, opts)

# ---- compile ahead ----

def _runner_cached(device: str, ast) -> bool:
  """Whether tinygrad's get_runner will find this kernel in the method cache (its two keys)."""
  context = (_TG_BEAM.value, _TG_NOOPT.value, _TG_DEVECTORIZE.value)
  ctype = type(_TgDevice[device].compiler)
  return (device, ctype, ast.key, context, False) in _tg_realize.method_cache or \
         (device.split(":")[0], ctype, ast.key, context, True) in _tg_realize.method_cache

def _build_ahead(schedule, pool) -> dict:
  """The programs of the schedule's kernels that get_runner will build, codegen done and compiles queued, in order."""
  ahead: dict = {}
  for ei in schedule:
    if ei.prg is not None or ei.ast.op is not TgOps.SINK or not ei.bufs or ei.bufs[0] is None: continue
    device = ei.bufs[0].device
    try:
      ren = _TgDevice[device].renderer
      if (key := _ahead_key(ei.ast, ren)) in ahead or _runner_cached(device, ei.ast): continue
      if (route := _route(ren)) is None or _context_reason() is not None: continue
      st = time.perf_counter()
      ahead[key] = _codegen(ei.ast, route, None, pool)
      with _S.lock: _S.seconds += time.perf_counter() - st
    except Exception: continue   # get_program meets it again in order, and falls back there with its reason
  return ahead

def _routed_run_schedule(schedule, var_vals=None, do_update_stats=True):
  """tinygrad's run_schedule, with the kernels it will lower built ahead (BEAM times kernels: then none are)."""
  if _TG_BEAM.value >= 1 or getattr(_S.local, "ahead", None) is not None:
    return _tg_run_schedule(schedule, var_vals, do_update_stats)
  with _C.CompilePool() as pool:
    _S.local.ahead = _build_ahead(schedule, pool)
    try: return _tg_run_schedule(schedule, var_vals, do_update_stats)
    finally: _S.local.ahead = None

# ---- install / uninstall ----

_REPLACED = {"get_program": (_tg_get_program, _routed_get_program), "run_schedule": (_tg_run_schedule, _routed_run_schedule)}

def _tinygrad_modules():
  import tinygrad.codegen.opt.search, tinygrad.tensor  # noqa: F401  (the modules that bind the names, imported now)
  return [m for n, m in list(sys.modules.items()) if m is not None and (n == "tinygrad" or n.startswith("tinygrad."))]

def install():
  """Route tinygrad's get_program (and run_schedule, for compile ahead) through tinyc in every module that bound them."""
  with _S.lock:
    if _S.saved: return
    for m in _tinygrad_modules():
      for name, (orig, routed) in _REPLACED.items():
        if m.__dict__.get(name) is orig:
          setattr(m, name, routed)
          _S.saved.append((m, name, orig))
  _S.following = _follow_tinygrad(True)

def uninstall():
  """Give every module tinygrad's own get_program and run_schedule back (also those imported while installed)."""
  with _S.lock:
    if not _S.saved: return
    for m in _tinygrad_modules():
      for name, (orig, routed) in _REPLACED.items():
        if m.__dict__.get(name) is routed: setattr(m, name, orig)
    _S.saved.clear()
  _S.following = _follow_tinygrad(False)

def is_installed() -> bool: return bool(_S.saved)

@contextlib.contextmanager
def installed():
  """with installed(): ... runs the block with the bridge installed (and leaves it as it was)."""
  was = is_installed()
  install()
  try: yield
  finally:
    if not was: uninstall()

def stats() -> dict:
  """routed: kernels tinyc built; fallback: reason -> kernels tinygrad built; seconds: time spent in tinyc, of which
  codegen (AST conversion both ways and tinyc's get_program up to the source) and compile_wait (the calling thread
  waiting for compiles: the rest of the compiling overlapped codegen on the pool's threads)."""
  with _S.lock: return {"routed": _S.routed, "fallback": dict(_S.fallback), "seconds": _S.seconds, **_S.split}

def reset_stats():
  with _S.lock: _S.routed, _S.fallback, _S.seconds, _S.split = 0, {}, 0.0, dict.fromkeys(_S.split, 0.0)
