"""tinyc.engine.realize mirrors tinygrad.engine.realize: CompiledRunner (native, csrc/engine/realize.c), the Runner base a
custom runner subclasses, get_runner (an AST compiled once per device and context) and ExecItem (a kernel with its buffers).

The glue is Python because it is tinygrad's own bookkeeping: a cache dict, a record type, a loop over buffers; compiling and
launching are the native CompiledRunner's. tinyc lowers kernels (SINK or PROGRAM ASTs) only: copies and views belong to
tinygrad's scheduler, which tinyc does not port."""
import abc
from dataclasses import dataclass, field, replace
from tinyc._C import CompiledRunner, Device, Estimates, Ops, UOp, get_program

__all__ = ["Runner", "CompiledRunner", "get_runner", "method_cache", "ExecItem"]

class Runner(abc.ABC):   # noqa: B024 -- an ABC only so that the native CompiledRunner can be registered as a Runner
  """tinygrad's Runner: a display name, a device and the Estimates of what one call does; __call__ runs it."""
  def __init__(self, display_name: str, device: str, estimates=Estimates()):
    self.first_run, self.display_name, self.device, self.estimates = True, display_name, device, estimates
  @property
  def dev(self): return Device[self.device]
  def exec(self, rawbufs, var_vals=None):
    return self(rawbufs, {} if var_vals is None else var_vals)
  def __call__(self, rawbufs, var_vals, wait=False):
    raise NotImplementedError("override this")

Runner.register(CompiledRunner)   # isinstance(CompiledRunner(p), Runner), as tinygrad's subclass is

# (device, compiler type, ast key, context, is the base device) -> CompiledRunner, as tinygrad keys its method_cache
method_cache: dict = {}

def _context() -> tuple:
  # the switches tinygrad keys the cache on (BEAM, NOOPT, DEVECTORIZE), read through tinyc.helpers when it has them
  try: from tinyc import helpers
  except ImportError: return ()
  return tuple(getattr(getattr(helpers, n, None), "value", None) for n in ("BEAM", "NOOPT", "DEVECTORIZE"))

def get_runner(device: str, ast: UOp) -> CompiledRunner:
  """The CompiledRunner of ast on device, compiled once: a second device of the same kind (CPU:1) reuses the program."""
  context, compiler = _context(), type(Device[device].compiler)
  ckey = (device, compiler, ast.key, context, False)
  if (cret := method_cache.get(ckey)) is not None: return cret
  bkey = (device.split(":")[0], compiler, ast.key, context, True)
  if (bret := method_cache.get(bkey)) is not None:
    method_cache[ckey] = ret = CompiledRunner(replace(bret.p, device=device))
  else:
    prg = get_program(ast, Device[device].renderer)
    method_cache[ckey] = method_cache[bkey] = ret = CompiledRunner(replace(prg, device=device))
  return ret

@dataclass
class ExecItem:
  """tinygrad's ExecItem: an AST, its buffers (in the AST's global order), fixed variable values, and its runner once lowered."""
  ast: UOp
  bufs: list = field(default_factory=list)
  metadata: tuple = ()
  fixedvars: dict = field(default_factory=dict)
  prg: Runner | None = None

  def lower(self):
    """Set prg from the AST: a kernel (SINK or PROGRAM) becomes the CompiledRunner of the first buffer's device."""
    if self.prg is not None: return self
    if self.ast.op not in (Ops.SINK, Ops.PROGRAM): raise NotImplementedError(f"tinyc lowers kernels only, not {self.ast.op}")
    self.prg = get_runner(self.bufs[0].device, self.ast)
    return self

  def run(self, _var_vals=None, wait=False, jit=False, do_update_stats=True):
    """Run prg (lowering first) on the buffers, allocated unless jit; the kernel's time when wait, else None."""
    if self.prg is None: self.lower()
    var_vals = self.fixedvars if _var_vals is None else (_var_vals | self.fixedvars)
    bufs = [self.bufs[i] for i in self.prg.p.globals] if isinstance(self.prg, CompiledRunner) else self.bufs
    if any(b is None for b in bufs): raise RuntimeError("ExecItem.run: a buffer is None")
    if not jit: bufs = [b.ensure_allocated() for b in bufs]
    et = self.prg(bufs, var_vals, wait=wait)
    if do_update_stats: self.prg.first_run = False
    return et
