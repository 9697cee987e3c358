"""Access to the native rule sets (PatternMatchers built in C at import) by tinygrad's names."""
from tinyc import _C

def rule_sets(module_name: str, names: tuple[str, ...]) -> dict:
  """The registered native rule sets of `names`; a missing one is an import error naming it."""
  registry = _C.native_rules()
  missing = [n for n in names if n not in registry]
  if missing: raise ImportError(f"{module_name}: native rule sets not built: {', '.join(missing)}")
  return {n: registry[n] for n in names}
