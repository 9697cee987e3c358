"""The codegen pipeline: tinyc against tinygrad 0.12.0 over the test corpus, side by side in one process.

  python bench/codegen.py [--quick]

Per kernel AST (tests/corpus.py; each with the opts tinygrad's heuristics choose for it, passed to both):
rewrite (full_rewrite_to_sink), linearize (do_linearize: linearize + IF/ENDIF cleanup + program_spec check) and
render (the Clang renderer's render of the lines). Times are the best of 3 runs of the whole corpus, in ms per kernel.
"""
import gc, pathlib, sys, time
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
import corpus
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad
from tinygrad.codegen import get_program as tg_get_program, full_rewrite_to_sink as tg_full, do_linearize as tg_do_linearize
from tinygrad.renderer.cstyle import ClangRenderer as TgClangRenderer
from tinygrad.uop.ops import KernelInfo as TgKernelInfo, UOp as TgUOp, Ops as TgOps

QUICK = "--quick" in sys.argv
REPEAT = 1 if QUICK else 3

def tc_opts(opts): return tuple(tinyc.Opt(getattr(tinyc.OptOps, o.op.name), o.axis, o.arg) for o in opts)

def kernels():
  """(tinygrad AST, tinyc AST), each carrying the opts tinygrad's heuristics pick"""
  out, ren = [], TgClangRenderer()
  asts = corpus.kernel_asts()[: 30 if QUICK else None]
  for _, ast in asts:
    opts = tg_get_program(ast, ren).applied_opts
    out.append((ast.replace(arg=TgKernelInfo(opts_to_apply=opts)), from_tinygrad(ast).replace(arg=tinyc.KernelInfo(opts_to_apply=tc_opts(opts)))))
  return out

def stages(lib, ast):
  """seconds spent in rewrite, linearize, render for one kernel"""
  if lib == "tinygrad":
    ren, full, do_lin, Prog, Ops = TG_REN, tg_full, tg_do_linearize, TgUOp, TgOps
  else:
    ren, full, do_lin, Prog, Ops = TC_REN, _C.full_rewrite_to_sink, _C.do_linearize, tinyc.UOp, tinyc.Ops
  t0 = time.perf_counter()
  sink = full(ast, ren)
  t1 = time.perf_counter()
  prg = do_lin(Prog(Ops.PROGRAM, src=(sink, Prog(Ops.DEVICE, arg="CPU"))), sink)
  t2 = time.perf_counter()
  src = ren.render(list(prg.src[-1].src))
  t3 = time.perf_counter()
  return (t1 - t0, t2 - t1, t3 - t2), src

TG_REN, TC_REN = TgClangRenderer(), tinyc.ClangRenderer()

def main():
  ks = kernels()
  best = {}
  for lib in ("tinygrad", "tinyc"):
    for _ in range(REPEAT):
      gc.collect(); gc.disable()
      tot, srcs = [0.0, 0.0, 0.0], []
      for tg_ast, tc_ast in ks:
        times, src = stages(lib, tg_ast if lib == "tinygrad" else tc_ast)
        tot = [a + b for a, b in zip(tot, times)]
        srcs.append(src)
      gc.enable()
      if lib not in best or sum(tot) < sum(best[lib][0]): best[lib] = (tot, srcs)
  n = len(ks)
  strip = lambda s: s.split("(", 1)[1]   # the kernel name carries tinygrad's per-process counter
  same = sum(strip(a) == strip(b) for a, b in zip(best["tinygrad"][1], best["tinyc"][1]))
  print(f"codegen over {n} corpus kernels (tinygrad's heuristic opts), ms per kernel, best of {REPEAT}; identical source {same}/{n}")
  print(f"{'stage':<12}{'tinygrad':>10}{'tinyc':>10}{'ratio':>9}")
  for i, stage in enumerate(("rewrite", "linearize", "render")):
    a, b = best["tinygrad"][0][i] / n * 1e3, best["tinyc"][0][i] / n * 1e3
    print(f"{stage:<12}{a:>10.3f}{b:>10.3f}{a / b:>8.1f}x")
  a, b = sum(best["tinygrad"][0]) / n * 1e3, sum(best["tinyc"][0]) / n * 1e3
  print(f"{'all three':<12}{a:>10.3f}{b:>10.3f}{a / b:>8.1f}x")

if __name__ == "__main__":
  main()
