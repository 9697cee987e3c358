"""tinyc.uop.spec mirrors tinygrad.uop.spec: the spec checkers, native, and type_verify."""
from tinyc import _C
from tinyc._C import native_rules as _native_rules

def __getattr__(name):
  if name == "type_verify": return _C.type_verify
  if (pm := _native_rules().get(name)) is not None: return pm
  raise AttributeError(f"module 'tinyc.uop.spec' has no attribute {name!r}")
