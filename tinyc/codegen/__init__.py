"""tinyc.codegen mirrors tinygrad.codegen: full_rewrite_to_sink (the pass sequence from a kernel AST to the
final sink) and get_program (linearize, render, compile), native in tinyc._C; the rule sets of
tinygrad/codegen/__init__.py and of its late/ and opt/ modules by tinygrad's names."""
from tinyc._C import full_rewrite_to_sink, get_program, program_uop, linearize, line_rewrite, do_linearize
from tinyc._C import native_rules as _native_rules

__all__ = ["full_rewrite_to_sink", "get_program", "program_uop", "linearize", "line_rewrite", "do_linearize"]

def __getattr__(name):
  # pm_syntactic_sugar, pm_linearize_cleanups, pm_to_program and the passes' rule sets (pm_add_gpudims, expander, ...)
  if (pm := _native_rules().get(name)) is not None: return pm
  raise AttributeError(f"module 'tinyc.codegen' has no attribute {name!r}")
