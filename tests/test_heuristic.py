"""tinygrad/codegen/opt/heuristic.py's hand_coded_optimizations, native in tinyc, against tinygrad 0.12.0; and the
default choice of apply_opts (the heuristics unless NOOPT) seen through get_program.

The kernels are the corpus kernels at the input of tinygrad's apply_opts (as tests/test_postrange.py captures them),
plus a few built here so that every step of the heuristics runs: a vector-matrix product (matvec: GROUP, LOCAL, UPCAST),
a stack (masked upcasts) and a big elementwise kernel (threads on the CPU). Tensor cores are off on both sides for those
(tinygrad's CUDARenderer gets tensor_cores=[]); on renderers with tensor cores the kernels are tests/test_tc.py's."""
import functools, os, subprocess, sys
import pytest
import tinyc
from tinyc.tinygrad import from_tinygrad, _to_tc_arg
from tinyc.codegen import get_program
import tinygrad.codegen as tg_codegen
from tinygrad import Tensor
from tinygrad.codegen.opt.heuristic import hand_coded_optimizations as tg_hand_coded
from tinygrad.codegen.opt.postrange import Scheduler as TgScheduler
from tinygrad.renderer.cstyle import ClangRenderer, CUDARenderer
from tinygrad.uop.ops import Ops as TgOps
from corpus import kernel_asts
from passes import capture_apply_opts_inputs


def extra_programs():
  Tensor.manual_seed(1)
  r = Tensor.rand
  return [("vecmat", lambda: r(256) @ r(256, 64)), ("vecmat_t", lambda: r(1, 128) @ r(128, 128).T),
          ("stack", lambda: Tensor.stack(r(16, 8), r(16, 8), r(16, 8)) * 2), ("big_add", lambda: r(512, 1024) + 1)]

@functools.cache
def extra_asts():
  out = []
  for name, build in extra_programs():
    sched, _ = build().schedule_with_vars()
    out += [(f"{name}/{i}", si.ast) for i, si in enumerate(x for x in sched if x.ast.op is TgOps.SINK)]
  return tuple(out)

def tg_renderer(ren_name, tensor_cores=False):
  ren = ClangRenderer() if ren_name == "clang" else CUDARenderer("sm_80")
  if not tensor_cores: ren.tensor_cores = []
  return ren

def tc_renderer(ren_name):
  """a tinyc renderer with the attributes the heuristics read, copied from tinygrad's (no tensor cores)"""
  if ren_name == "clang": return tinyc.ClangRenderer()
  tg, r = tg_renderer(ren_name), tinyc.Renderer()
  for a in ("device", "has_local", "has_shared", "has_threads", "global_max", "local_max", "shared_max"): setattr(r, a, getattr(tg, a))
  r.tensor_cores = ()
  return r

@functools.cache
def captured(ren_name):
  """[(name, the tinygrad AST apply_opts gets)] for the corpus and the extra kernels"""
  return capture_apply_opts_inputs(kernel_asts() + extra_asts(), tg_renderer(ren_name))

def run_both(ast, ren_name, tensor_cores=False):
  """(tinygrad's Scheduler or exception, tinyc's) after hand_coded_optimizations of the same kernel"""
  tk, ck = TgScheduler(ast, tg_renderer(ren_name, tensor_cores)), tinyc.Scheduler(from_tinygrad(ast), tc_renderer(ren_name))
  tk.convert_loop_to_global(), ck.convert_loop_to_global()
  outs = []
  for fn, k in ((tg_hand_coded, tk), (tinyc.hand_coded_optimizations, ck)):
    try: outs.append(fn(k))
    except Exception as e: outs.append(e)
  return outs

def same(t, c):
  if isinstance(t, Exception) or isinstance(c, Exception): return type(t).__name__ == type(c).__name__
  return _to_tc_arg(tuple(t.applied_opts)) == tuple(c.applied_opts) and from_tinygrad(t.ast) is c.ast

def identity(ren_name, tensor_cores=False, every=1):
  """(same, total, the names that differ, how many opts of each kind tinygrad chose)"""
  ok, n, bad, kinds = 0, 0, [], {}
  for kname, ast in captured(ren_name)[::every]:
    t, c = run_both(ast, ren_name, tensor_cores)
    n += 1
    if same(t, c): ok += 1
    else: bad.append(kname)
    for o in ([] if isinstance(t, Exception) else t.applied_opts): kinds[o.op.name] = kinds.get(o.op.name, 0) + 1
  return ok, n, bad, kinds

@pytest.mark.parametrize("ren_name", ["clang", "cuda"])
def test_hand_coded_optimizations_identity(ren_name):
  ok, n, bad, kinds = identity(ren_name)
  print(f"\nhand_coded_optimizations ({ren_name}): {ok}/{n} = {ok/n:.1%} the same opts and AST; tinygrad's opts: {kinds}")
  assert n >= 110 and ok == n, bad
  need = {"clang": {"UPCAST", "UNROLL", "THREAD"}, "cuda": {"UPCAST", "UNROLL", "LOCAL", "GROUP", "GROUPTOP"}}[ren_name]
  assert need <= set(kinds)

@pytest.mark.parametrize("name", ["sm_80", "sm_89", "rdna3", "rdna4", "cdna3", "metal"])
def test_hand_coded_optimizations_identity_with_tensor_cores(name):
  """on renderers with tensor cores (tinygrad's CUDA, AMD and Metal renderers as the oracle, tinyc's from its own tables;
  see tests/test_tc.py), the heuristics try the tensor cores first and pick tinygrad's opts"""
  import test_tc as ttc
  ok = n = with_tc = 0
  bad = []
  dev = ttc.device_of(name)
  for kname, ast in ttc.matmuls(dev) + [c for c in ttc.captured(dev) if c not in ttc.matmuls(dev)][::3]:
    tk, ck = ttc.schedulers(ast, name)
    t, c = outcomes(tk, ck)
    n += 1
    if isinstance(t, Exception) or isinstance(c, Exception): good = type(t).__name__ == type(c).__name__
    else:
      good = ttc.same_state(t, c)
      with_tc += any(o.op.name == "TC" for o in t.applied_opts)
    ok += good
    if not good: bad.append(kname)
  print(f"\nhand_coded_optimizations ({name}, tensor cores): {ok}/{n} = {ok/n:.1%}, {with_tc} with a TC opt")
  assert n >= 40 and with_tc >= 3 and ok == n, bad

def a_matvec():
  """the first kernel tinygrad's matvec step takes (GROUP, LOCAL, UPCAST)"""
  return next(a for k, a in captured("cuda") if k.startswith("vecmat") and "GROUP" in str(run_both(a, "cuda")[0].applied_opts))

def test_input_not_changed():
  k = tinyc.Scheduler(from_tinygrad(a_matvec()), tc_renderer("cuda"))
  k.convert_loop_to_global()
  before = k.ast
  out = tinyc.hand_coded_optimizations(k)
  assert out is not k and k.ast is before and k.applied_opts == [] and len(out.applied_opts) == 3

def test_default_program_identity():
  """get_program(ast, ClangRenderer()) with no opts: the heuristics' program, byte for byte tinygrad's"""
  ok, n, bad = 0, 0, []
  for kname, ast in kernel_asts():
    TgScheduler.kernel_cnt.clear(); tinyc.Scheduler.kernel_cnt.clear()   # the names' nN counters start fresh on both
    tg, tc = tg_codegen.get_program(ast, ClangRenderer()), get_program(from_tinygrad(ast), tinyc.ClangRenderer())
    n += 1
    if tg.src == tc.src and tuple(map(str, tg.applied_opts)) == tuple(map(str, tc.applied_opts)): ok += 1
    else: bad.append(kname)
  print(f"\ndefault get_program: source {ok}/{n} = {ok/n:.1%}")
  assert n >= 100 and ok == n, bad

ENV_SCRIPT = """
import sys, os; sys.path.insert(0, {tests!r})
import test_heuristic as th
mode = {mode!r}
if mode == "noopt":
  import tinyc
  from tinyc.codegen import get_program
  from tinyc.tinygrad import from_tinygrad
  from tinygrad.codegen import get_program as tg_get_program
  from tinygrad.codegen.opt.postrange import Scheduler as TgScheduler
  from tinygrad.renderer.cstyle import ClangRenderer
  ok = n = opts = 0
  for name, ast in th.kernel_asts()[::3]:
    TgScheduler.kernel_cnt.clear(); tinyc.Scheduler.kernel_cnt.clear()
    tg, tc = tg_get_program(ast, ClangRenderer()), get_program(from_tinygrad(ast), tinyc.ClangRenderer())
    n += 1; ok += tg.src == tc.src and tc.applied_opts == (); opts += len(tg.applied_opts)
  print(ok, n, opts)
else:
  ok = n = 0
  for ren_name in ("clang", "cuda"):
    a, b, bad, kinds = th.identity(ren_name, tensor_cores=mode == "tc_off", every=3)
    ok += a; n += b
  print(ok, n, sorted(kinds))
"""

ENVS = {"noopt": {"NOOPT": "1"}, "mv_off": {"MV": "0"}, "nolocals": {"NOLOCALS": "1"}, "tc_off": {"TC": "0"},
        "mv_sizes": {"MV_THREADS_PER_ROW": "4", "MV_BLOCKSIZE": "2", "MV_ROWS_PER_THREAD": "2"}}

def test_environment_switches():
  """each switch in its own process (both read it at import, or at the first call), all processes at once; TC=0 keeps
  tinygrad's CUDA tensor cores, which the switch must then turn off"""
  here = os.path.dirname(os.path.abspath(__file__))
  procs = {m: subprocess.Popen([sys.executable, "-c", ENV_SCRIPT.format(tests=here, mode=m)], env={**os.environ, **env},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for m, env in ENVS.items()}
  for m, p in procs.items():
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, (m, err[-3000:])
    ok, n, extra = out.split()[-3:] if m == "noopt" else (out.split()[0], out.split()[1], None)
    print(f"\n{m}: {ok}/{n}", out.strip())
    assert int(n) >= 30 and ok == n, (m, out)
    if m == "noopt": assert int(extra) == 0   # tinygrad applied no opts either
    if m == "nolocals": assert "'NOLOCALS'" in out
    if m == "mv_off": assert "'GROUP'" not in out

def test_bad_input():
  for bad in (None, 1, "k", tinyc.UOp.sink(), tinyc.ClangRenderer()):
    with pytest.raises(TypeError): tinyc.hand_coded_optimizations(bad)
  with pytest.raises(TypeError): tinyc.hand_coded_optimizations()
  # a kernel whose renderer lacks what the heuristics read: an AttributeError, as in tinygrad
  class Bare: has_local = True
  k = tinyc.Scheduler(from_tinygrad(a_matvec()), Bare())
  with pytest.raises(AttributeError): tinyc.hand_coded_optimizations(k)
  from tinyc.codegen.opt.heuristic import hand_coded_optimizations
  assert hand_coded_optimizations is tinyc.hand_coded_optimizations

def test_memory_flat():
  import gc
  cases = [(from_tinygrad(a), n) for n in ("clang", "cuda") for _, a in captured(n)[::6]]
  rens = {n: tc_renderer(n) for n in ("clang", "cuda")}
  def work():
    for ast, n in cases:
      k = tinyc.Scheduler(ast, rens[n])
      k.convert_loop_to_global()
      tinyc.hand_coded_optimizations(k).get_optimized_ast()
    tinyc.Scheduler.kernel_cnt.clear()
  work(); gc.collect()
  base = tinyc._C._intern_count()
  for _ in range(2): work()
  gc.collect()
  assert tinyc._C._intern_count() == base

def outcomes(tk, ck):
  outs = []
  for fn, k in ((tg_hand_coded, tk), (tinyc.hand_coded_optimizations, ck)):
    try: outs.append(fn(k))
    except Exception as e: outs.append(e)
  return outs

def test_dsp_upcasts():
  """a renderer whose device is "DSP" upcasts by 128 once, as tinygrad's"""
  ok = n = 0
  for kname, ast in captured("clang")[::2]:
    tr, cr = tg_renderer("clang"), tinyc.ClangRenderer()
    tr.device = cr.device = "DSP"
    n += 1
    ok += same(*outcomes(TgScheduler(ast, tr), tinyc.Scheduler(from_tinygrad(ast), cr)))
  print(f"\nDSP: {ok}/{n}")
  assert ok == n

@pytest.mark.parametrize("ren_name", ["clang", "cuda"])
def test_after_random_opts(ren_name):
  """the heuristics on kernels that already have a few opts (existing upcasts, locals, groups; TC then refuses)"""
  import random
  from test_postrange import random_opt
  rnd, ok, n = random.Random(5), 0, 0
  for kname, ast in captured(ren_name)[::2]:
    tk, ck = TgScheduler(ast, tg_renderer(ren_name)), tinyc.Scheduler(from_tinygrad(ast), tc_renderer(ren_name))
    tk.convert_loop_to_global(), ck.convert_loop_to_global()
    for _ in range(2):
      o = random_opt(rnd, tk)
      if o.op.name == "TC": continue
      try: tk.apply_opt(o)
      except Exception: break
      ck.apply_opt(_to_tc_arg(o))
    n += 1
    ok += same(*outcomes(tk, ck))
  print(f"\nafter random opts ({ren_name}): {ok}/{n}")
  assert ok == n
