"""Capturing tinygrad's passes: what each named graph_rewrite of tinygrad's full_rewrite_to_sink got and gave, for
the per-pass identity tests (tinyc's rule set on tinygrad's input must give tinygrad's output)."""
import tinygrad.codegen as tg_codegen
from tinygrad.uop.ops import graph_rewrite as tg_graph_rewrite

def capture_passes(kernels, ren, names) -> dict:
  """{pass name: [(kernel name, input sink, ctx, output sink)]} for the passes in `names`, lowering each
  (kernel name, ast) of `kernels` with renderer `ren`; a kernel tinygrad refuses (an opt it does not take) stops
  where it fails. ctx is a copy when it is a dict (the pass may change it)."""
  out, current = {name: [] for name in names}, [None]
  def spy(sink, pm, ctx=None, bottom_up=False, name=None, **kwargs):
    ctx_in = dict(ctx) if isinstance(ctx, dict) else ctx
    ret = tg_graph_rewrite(sink, pm, ctx, bottom_up, name=name, **kwargs)
    if name in out: out[name].append((current[0], sink, ctx_in, ret))
    return ret
  tg_codegen.graph_rewrite = spy
  try:
    for kname, ast in kernels:
      current[0] = kname
      try: tg_codegen.full_rewrite_to_sink(ast, ren, optimize=ast.tag is None)
      except Exception: continue   # an opt tinygrad refuses for this kernel
  finally: tg_codegen.graph_rewrite = tg_graph_rewrite
  return out

class _Stop(Exception): pass

def capture_apply_opts_inputs(kernels, ren) -> tuple:
  """((kernel name, the AST tinygrad's apply_opts gets), ...) for each (kernel name, ast) of `kernels` lowered with `ren`:
  full_rewrite_to_sink runs up to apply_opts and stops there; a tagged AST (already optimized) is left out"""
  out, orig = [], tg_codegen.apply_opts
  def spy(ast, ren):
    out.append(ast)
    raise _Stop
  tg_codegen.apply_opts = spy
  try:
    res = []
    for kname, ast in kernels:
      if ast.tag is not None: continue
      try: tg_codegen.full_rewrite_to_sink(ast, ren)
      except _Stop: res.append((kname, out[-1]))
  finally: tg_codegen.apply_opts = orig
  return tuple(res)
