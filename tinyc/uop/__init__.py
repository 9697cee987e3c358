"""tinyc.uop mirrors tinygrad.uop: Ops and GroupOp here, UOp and the rewrite engine in tinyc.uop.ops,
the native rule sets under the module names tinygrad keeps them in (tinyc.uop.symbolic, ...)."""
from tinyc._C import Ops, GroupOp

__all__ = ["Ops", "GroupOp"]
