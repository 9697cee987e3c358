"""The codegen pipeline and the CPU device: tinyc against tinygrad 0.12.0 over the test corpus, side by side in one process.

  python bench/codegen.py [--quick]

1. Per kernel AST (tests/corpus.py; each with the opts tinygrad's heuristics choose for it, passed to both):
   rewrite (full_rewrite_to_sink), linearize (do_linearize: linearize + IF/ENDIF cleanup + program_spec check) and
   render (the Clang renderer's render of the lines). Best of 3 runs of the whole corpus on freshly unpickled ASTs,
   in ms per kernel; the cycle collector is paused in both while timing. tinyc runs twice: as it is, and inside a
   tinyc.helpers.Context that sets every switch its C code reads (to its current value) with tinygrad's Context
   followed (the bridge's hook): the cost of run-time Context reads, which must stay within 2%.
2. get_program without compiling (the Clang renderer has no compiler), the heuristics choosing the opts in each library:
   per kernel AST of the corpus, best of 3, the sources compared; then the same times split by the program's size
   (under 200 uops or not), since per-call costs weigh most on small kernels.
3. BEAM's workload: get_program (no compile) of every candidate get_kernel_actions makes of a 512 matmul, then of every
   candidate of its three fastest children (chosen once, before timing, by running tinyc's builds of the first round:
   the same three actions in both libraries), as BEAM's second round does. Best of 3, the sources compared.
4. Per kernel of a sample: compile (tinyc: clang to a shared object; tinygrad: clang to an object + its ELF loader),
   compile_cached on a cache hit (both SQLite), launch overhead of a CompiledRunner call (no wait), and the
   kernel's run time (wait=True, best of 5) on the same source.
"""
import gc, pathlib, pickle, re, sys, time
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
  """(tinygrad AST, tinyc AST), each carrying the opts tinygrad's heuristics pick, pickled: every run unpickles fresh
  nodes, so neither library starts from what an earlier run cached on the nodes"""
  out, ren = [], TgClangRenderer()
  asts = corpus.kernel_asts()[: 30 if QUICK else None]
  for _, ast in asts:
    opts = tg_get_program(ast, ren).applied_opts
    out.append((ast.replace(arg=TgKernelInfo(opts_to_apply=opts)), from_tinygrad(ast).replace(arg=tinyc.KernelInfo(opts_to_apply=tc_opts(opts)))))
  return pickle.dumps(out)

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

def strip_name(src): return re.sub(r"(void \w+?)n\d+\(", r"\1(", src)   # tinygrad's kernel names carry a per-process counter

def in_context(run):
  """run() inside a Context that sets every key tinyc's C reads to the value it has, tinygrad's Context followed"""
  from tinyc import helpers
  helpers.follow_tinygrad(True)
  try:
    with helpers.Context(**{k: _C._ctxvar_get(k) for k in _C._ctxvar_keys()}): return run()
  finally: helpers.follow_tinygrad(False)

def corpus_run(lib, blob):
  ks = pickle.loads(blob)
  gc.collect(); gc.disable()
  tot, srcs = [0.0, 0.0, 0.0], []
  for tg_ast, tc_ast in ks:
    times, src = stages("tinygrad" if lib == "tinygrad" else "tinyc", tg_ast if lib == "tinygrad" else tc_ast)
    tot = [a + b for a, b in zip(tot, times)]
    srcs.append(src)
  gc.enable()
  return tot, srcs, len(ks)

def main():
  blob = kernels()
  best = {}
  for _ in range(REPEAT):   # interleaved, so that tinyc's two runs see the machine alike
    for lib in ("tinygrad", "tinyc", "tinyc in Context"):
      tot, srcs, n = in_context(lambda: corpus_run(lib, blob)) if lib == "tinyc in Context" else corpus_run(lib, blob)
      if lib not in best or sum(tot) < sum(best[lib][0]): best[lib] = (tot, srcs)
  same = sum(strip_name(a) == strip_name(b) for a, b in zip(best["tinygrad"][1], best["tinyc"][1]))
  print(f"codegen over {n} corpus kernels (tinygrad's heuristic opts), ms per kernel, best of {REPEAT}; identical source {same}/{n}")
  print(f"{'stage':<12}{'tinygrad':>10}{'tinyc':>10}{'ratio':>9}")
  for i, stage in enumerate(("rewrite", "linearize", "render")):
    a, b = best["tinygrad"][0][i] / n * 1e3, best["tinyc"][0][i] / n * 1e3
    print(f"{stage:<12}{a:>10.3f}{b:>10.3f}{a / b:>8.1f}x")
  a, b = sum(best["tinygrad"][0]) / n * 1e3, sum(best["tinyc"][0]) / n * 1e3
  print(f"{'all three':<12}{a:>10.3f}{b:>10.3f}{a / b:>8.1f}x")
  c = sum(best["tinyc in Context"][0]) / n * 1e3
  assert list(map(strip_name, best["tinyc in Context"][1])) == list(map(strip_name, best["tinyc"][1]))
  print(f"tinyc inside a Context setting every switch C reads: {c:.3f} ms per kernel, {100 * (c / b - 1):+.1f}% (goal: within 2%)")

def get_program_row():
  from tinyc.codegen import get_program as tc_get_program
  blob = pickle.dumps([(ast, from_tinygrad(ast)) for _, ast in corpus.kernel_asts()[: 30 if QUICK else None]])
  best, srcs, uops = {}, {}, []
  for _ in range(REPEAT):
    for lib in ("tinygrad", "tinyc"):
      ks = pickle.loads(blob)
      gc.collect(); gc.disable()
      times, out = [], []
      for tg, tc in ks:   # each kernel timed on its own (for the split by size below); the row is their sum
        t0 = time.perf_counter()
        p = tg_get_program(tg, TG_REN) if lib == "tinygrad" else tc_get_program(tc, TC_REN)
        times.append(time.perf_counter() - t0)
        out.append((p.src, len(p.uops)))   # not the program: its graph would stay alive through the run
        del p
      gc.enable()
      if sum(times) < sum(best.get(lib, [float("inf")])): best[lib] = times
      srcs[lib], uops = [src for src, _ in out], [k for _, k in out]
  n = len(srcs["tinyc"])
  same = sum(strip_name(a) == strip_name(b) for a, b in zip(srcs["tinygrad"], srcs["tinyc"]))
  a, b = sum(best["tinygrad"]) / n * 1e3, sum(best["tinyc"]) / n * 1e3
  print(f"\nget_program without compiling over {n} corpus kernels (each library's heuristics), ms per kernel, best of {REPEAT}; "
        f"identical source {same}/{n}")
  print(f"{'get_program':<12}{a:>10.3f}{b:>10.3f}{a / b:>8.1f}x")
  for label, part in (("< 200 uops", lambda k: k < 200), (">= 200 uops", lambda k: k >= 200)):
    idx = [i for i, k in enumerate(uops) if part(k)]
    ta, tb = sum(best["tinygrad"][i] for i in idx), sum(best["tinyc"][i] for i in idx)
    print(f"  {label}: {len(idx)} kernels, {ta / max(len(idx), 1) * 1e3:.3f} / {tb / max(len(idx), 1) * 1e3:.3f} ms per kernel, "
          f"{ta / max(tb, 1e-12):.1f}x, {tb / sum(best['tinyc']):.0%} of tinyc's time")

def beam_workload_row(n=512):
  """get_program of every first-round candidate of BEAM on an n-matmul, then of every candidate of its three fastest"""
  import tinygrad.codegen.opt.search as tg_search
  from tinygrad import Tensor
  from tinygrad.codegen.opt.postrange import Scheduler as TgScheduler
  from tinyc import search as tc_search
  from tinyc.codegen import get_program as tc_get_program
  tg_ast = (Tensor.empty(n, n) @ Tensor.empty(n, n)).schedule()[-1].ast
  tc_ast = from_tinygrad(tg_ast)
  libs = {"tinygrad": (TgScheduler, tg_search.get_kernel_actions, tg_get_program, tg_ast, TG_REN),
          "tinyc": (tinyc.Scheduler, tc_search.get_kernel_actions, tc_get_program, tc_ast, TC_REN)}
  def root(lib):
    Sched, _, _, ast, ren = libs[lib]
    s = Sched(ast, ren)
    s.convert_loop_to_global()
    return s
  def build(lib, sched, ren=None): return libs[lib][2](sched.copy().get_optimized_ast(name_override="test"), ren or libs[lib][4])
  # the three fastest first-round candidates, by running tinyc's builds on the CPU device (outside the timing)
  first = tc_search.get_kernel_actions(root("tinyc"))
  bufs = tc_search.bufs_from_ast(tc_ast, "CPU")
  for b in bufs: b.ensure_allocated()
  speed = {}
  for i, s in first.items():
    try: p = build("tinyc", s, tinyc.Device["CPU"].renderer)
    except Exception: continue
    speed[i] = min(tc_search.time_program(p, bufs, cnt=5, allow_test_size=False))
  fastest = sorted(speed, key=speed.get)[:3]
  def workload(lib):
    acts = libs[lib][1](root(lib))
    out = [build(lib, s) for s in acts.values()]
    for i in fastest: out += [build(lib, s) for s in libs[lib][1](acts[i]).values()]
    return out
  best, progs = {}, {}
  for _ in range(REPEAT):
    for lib in libs:
      gc.collect(); gc.disable()
      t0 = time.perf_counter(); out = workload(lib); t = time.perf_counter() - t0
      gc.enable()
      best[lib], progs[lib] = min(best.get(lib, t), t), out
  k = len(progs["tinyc"])
  same = sum(a.src == b.src for a, b in zip(progs["tinygrad"], progs["tinyc"])) if len(progs["tinygrad"]) == k else 0
  uops = sorted(len(p.uops) for p in progs["tinyc"])
  print(f"\nBEAM's workload on a {n} matmul: {k} candidates ({uops[0]} to {uops[-1]} uops; first round, then the candidates of "
        f"actions {fastest}), best of {REPEAT}; identical source {same}/{k}")
  print(f"{'candidates':<12}{best['tinygrad'] * 1e3:>9.1f}ms{best['tinyc'] * 1e3:>8.1f}ms{best['tinygrad'] / best['tinyc']:>8.1f}x")

def device_stages():
  import numpy as np
  from tinygrad.device import Device as TgDevice, Buffer as TgBuffer
  from tinygrad.engine.realize import CompiledRunner as TgCompiledRunner
  from tinygrad.dtype import _to_np_dtype
  from tinyc.codegen import get_program
  tg_dev, tc_dev = TgDevice["CPU"], tinyc.Device["CPU"]
  sample = [(n, a) for n, a in corpus.kernel_asts() if "bfloat16" not in n][:: 4 if QUICK else 2]
  tot = {k: [0.0, 0.0] for k in ("compile", "cache hit", "launch", "run")}
  for _, ast in sample:
    tg_p = tg_get_program(ast, tg_dev.renderer)
    tc_p = get_program(from_tinygrad(ast), tc_dev.renderer, opts=tc_opts(tg_p.applied_opts))
    for i, (comp, src) in enumerate(((tg_dev.compiler, tg_p.src), (tc_dev.compiler, tc_p.src))):
      t0 = time.perf_counter(); comp.compile(src); tot["compile"][i] += time.perf_counter() - t0
      comp.compile_cached(src)
      t0 = time.perf_counter(); comp.compile_cached(src); tot["cache hit"][i] += time.perf_counter() - t0
    glbls = sorted({u.arg: u for u in tg_p.uops if u.op is TgOps.DEFINE_GLOBAL}.items())
    var_vals = {v.arg[0]: (v.arg[1] + v.arg[2]) // 2 for v in tg_p.vars}
    tg_bufs = [TgBuffer("CPU", u.dtype.size, u.dtype.base).allocate() for _, u in glbls]
    tc_bufs = [tinyc.Buffer("CPU", u.dtype.size, from_tinygrad(u).dtype.base).allocate() for _, u in glbls]
    for tb, cb in zip(tg_bufs, tc_bufs):
      data = np.zeros(tb.size, _to_np_dtype(tb.dtype))
      tb.copyin(memoryview(data).cast("B")); cb.copyin(memoryview(data).cast("B"))
    tg_r, tc_r = TgCompiledRunner(tg_p), tinyc.CompiledRunner(tc_p)
    for i, (r, bufs) in enumerate(((tg_r, tg_bufs), (tc_r, tc_bufs))):
      r(bufs, var_vals, wait=True)
      t0 = time.perf_counter()
      for _ in range(20): r(bufs, var_vals)
      tot["launch"][i] += (time.perf_counter() - t0) / 20
      tot["run"][i] += min(r(bufs, var_vals, wait=True) for _ in range(5))
    tg_dev.synchronize()
  n = len(sample)
  print(f"\nCPU device over {n} corpus kernels (tinygrad's heuristic opts, the same source in both), ms per kernel")
  print(f"{'stage':<12}{'tinygrad':>10}{'tinyc':>10}{'ratio':>9}")
  for k, (a, b) in tot.items(): print(f"{k:<12}{a / n * 1e3:>10.4f}{b / n * 1e3:>10.4f}{a / b:>8.2f}x")

if __name__ == "__main__":
  main()
  get_program_row()
  beam_workload_row()
  device_stages()
