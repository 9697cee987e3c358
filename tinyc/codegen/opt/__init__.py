"""tinyc.codegen.opt mirrors tinygrad.codegen.opt: Opt, OptOps and KernelOptError (native in tinyc._C); its modules
postrange (the Scheduler), heuristic (hand_coded_optimizations), tc (the tensor cores) and search (BEAM) follow
tinygrad's files."""
from tinyc._C import Opt, OptOps, KernelOptError

__all__ = ["Opt", "OptOps", "KernelOptError"]
