"""tinyc.search: BEAM search and its building blocks (tinyc.codegen.opt.search, tinygrad's codegen/opt/search.py)."""
from tinyc.codegen.opt.search import actions, get_kernel_actions, bufs_from_ast, time_program, beam_search, __doc__

__all__ = ["actions", "get_kernel_actions", "bufs_from_ast", "time_program", "beam_search"]
