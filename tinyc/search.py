"""tinyc.search: BEAM search and its building blocks (tinyc.codegen.opt.search, tinygrad's codegen/opt/search.py)."""
from tinyc.codegen.opt.search import actions, get_kernel_actions, bufs_from_ast, get_test_global_size, time_program, beam_search, beam_stats, __doc__

__all__ = ["actions", "get_kernel_actions", "bufs_from_ast", "get_test_global_size", "time_program", "beam_search", "beam_stats"]
