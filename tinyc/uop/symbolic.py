"""tinyc.uop.symbolic mirrors tinygrad.uop.symbolic: the symbolic rule sets, native."""
from tinyc.uop._rules import rule_sets

globals().update(rule_sets(__name__, ("propagate_invalid", "symbolic_simple", "commutative", "gep_pushing", "symbolic", "sym",
                                      "pm_simplify_valid", "pm_drop_and_clauses", "pm_move_where_on_load")))
from tinyc._C import simplify_valid  # noqa: E402  (native, csrc/uop/symbolic_sym.c)
