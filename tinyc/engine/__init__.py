"""tinyc.engine mirrors tinygrad.engine: realize (Runner, CompiledRunner, get_runner, ExecItem)."""
