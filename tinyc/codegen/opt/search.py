"""tinyc.codegen.opt.search mirrors tinygrad.codegen.opt.search: BEAM search, native in tinyc._C.

beam_search(s, rawbufs, amt, allow_test_size=True, disable_cache=IGNORE_BEAM_CACHE, *, actions=None, timer=None,
on_step=None, executor=None) -> Scheduler takes tinygrad's arguments plus four hooks:
- actions: the Opts to try (default `actions`, tinygrad's list);
- timer(p, rawbufs) -> seconds (or inf): times a candidate ProgramSpec (with its lib) instead of time_program;
- on_step(step, ranked) -> bool: sees each step's [(Scheduler, seconds)], fastest first; True stops the search;
- executor: a concurrent.futures.Executor or a dask.distributed Client; its workers build the candidates
  (codegen and compile) and return ProgramSpecs with their lib, which this process times.
Without an executor, codegen runs in the calling thread and compiles on PARALLEL native threads (default: the cores)."""
from tinyc._C import actions, get_kernel_actions, bufs_from_ast, get_test_global_size, time_program, beam_search, beam_stats

__all__ = ["actions", "get_kernel_actions", "bufs_from_ast", "get_test_global_size", "time_program", "beam_search", "beam_stats"]
