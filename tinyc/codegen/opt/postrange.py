"""tinyc.codegen.opt.postrange mirrors tinygrad.codegen.opt.postrange: the Scheduler and apply_opts, native."""
from tinyc._C import Scheduler, apply_opts

__all__ = ["Scheduler", "apply_opts"]
