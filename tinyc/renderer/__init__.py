"""tinyc.renderer mirrors tinygrad.renderer: the Renderer base type (and ProgramSpec, Estimates), native in tinyc._C."""
from tinyc._C import Renderer, ProgramSpec, Estimates

__all__ = ["Renderer", "ProgramSpec", "Estimates"]
