"""tinyc.uop.divandmod mirrors tinygrad.uop.divandmod."""
from tinyc.uop._rules import rule_sets

globals().update(rule_sets(__name__, ("div_and_mod_symbolic",)))
