"""tinyc.uop.validate mirrors tinygrad.uop.validate: validate_index(buf, idx, gate=None), native (csrc/uop/spec.c and
csrc/uop/validate.c). With IGNORE_OOB=0 (read at import) an index the quick checks do not clear is proved in bounds
with z3 through its C API: True when it is, False (tinygrad's report printed) when it may leave the buffer."""
from tinyc._C import validate_index

__all__ = ["validate_index"]
