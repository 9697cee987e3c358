"""tinygrad/codegen/opt/postrange.py's Scheduler, apply_opts and remove_tags, native in tinyc, against tinygrad 0.12.0.

The kernels are the inputs of tinygrad's apply_opts inside full_rewrite_to_sink over the shared corpus (captured by a
spy that stops the pipeline there), once for tinygrad's ClangRenderer (no locals) and once for CUDARenderer("sm_80")
(locals, so LOCAL/GROUP/GROUPTOP apply); tinyc gets the same kernels through the bridge and a renderer with the same
attributes. Both Schedulers must agree on the axes, on every opt (the same AST after it, or KernelOptError from both)
and on the optimized AST with its name."""
import functools, random, sys
import pytest
import tinyc
from tinyc import _C
from tinyc.tinygrad import from_tinygrad, _to_tc_arg
from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps, KernelOptError as TgKernelOptError
from tinygrad.codegen.opt.postrange import Scheduler as TgScheduler, apply_opts as tg_apply_opts
from tinygrad.codegen.opt.heuristic import hand_coded_optimizations
from tinygrad.renderer.cstyle import ClangRenderer, CUDARenderer
from tinygrad.helpers import Context
from tinygrad.uop.ops import Ops as TgOps, KernelInfo as TgKernelInfo
from corpus import kernel_asts
from passes import capture_apply_opts_inputs


def tc_renderer_like(tg_ren):
  """a tinyc Renderer with the attributes the Scheduler reads, copied from a tinygrad renderer (no tensor cores)"""
  if isinstance(tg_ren, ClangRenderer): return tinyc.ClangRenderer()
  r = tinyc.Renderer()
  for a in ("device", "has_local", "has_threads", "global_max", "local_max", "shared_max"): setattr(r, a, getattr(tg_ren, a))
  r.tensor_cores = ()
  return r

RENDERERS = {"clang": ClangRenderer, "cuda": lambda: CUDARenderer("sm_80")}

@functools.cache
def captured(ren_name):
  """[(kernel name, the tinygrad AST apply_opts gets)] for every corpus kernel that reaches it"""
  return capture_apply_opts_inputs(kernel_asts(), RENDERERS[ren_name]())

def schedulers(ast, ren_name):
  tg_ren = RENDERERS[ren_name]()
  tk, ck = TgScheduler(ast, tg_ren), tinyc.Scheduler(from_tinygrad(ast), tc_renderer_like(tg_ren))
  tk.convert_loop_to_global()
  ck.convert_loop_to_global()
  return tk, ck

def reset_counters():
  TgScheduler.kernel_cnt.clear()
  tinyc.Scheduler.kernel_cnt.clear()

def conv(xs):
  """a list of ints and tinygrad UOps as tinyc sees it"""
  return [from_tinygrad(x) if hasattr(x, "op") else x for x in xs]

def same_state(tk, ck):
  return (from_tinygrad(tk.ast) is ck.ast and [from_tinygrad(r) for r in tk.rngs] == ck.rngs and tk.shape_str() == ck.shape_str()
          and conv(tk.full_shape) == ck.full_shape
          and [_to_tc_arg(a) for a in tk.axis_types] == ck.axis_types and _to_tc_arg(tuple(tk.applied_opts)) == tuple(ck.applied_opts)
          and tk.dont_use_locals == ck.dont_use_locals)

def test_corpus_reaches_apply_opts():
  assert len(captured("clang")) >= 100 and len(captured("cuda")) >= 100

@pytest.mark.parametrize("ren_name", ["clang", "cuda"])
def test_axes_identity(ren_name):
  ok = n = 0
  for kname, ast in captured(ren_name):
    tk, ck = schedulers(ast, ren_name)
    n += 1
    ok += (same_state(tk, ck) and tk.colors() == ck.colors() and tk.colored_shape() == ck.colored_shape()
           and tk.upcastable_dims == ck.upcastable_dims and tk.unrollable_dims == ck.unrollable_dims
           and conv(tk.output_shape) == ck.output_shape and tk.upcasted == ck.upcasted and tk.group_for_reduces == ck.group_for_reduces
           and conv([tk.upcast_size()]) == [ck.upcast_size()] and [from_tinygrad(b) for b in tk.bufs] == ck.bufs
           and [from_tinygrad(r) for r in tk.reduceops] == ck.reduceops
           and (tk.reduceop is None if ck.reduceop is None else from_tinygrad(tk.reduceop) is ck.reduceop)
           and [from_tinygrad(r) for r in tk._globalizable_rngs()] == ck._globalizable_rngs())
  print(f"axes ({ren_name}): {ok}/{n}")
  assert ok == n

@pytest.mark.parametrize("ren_name", ["clang", "cuda"])
def test_optimized_ast_no_opts(ren_name):
  ok = n = 0
  for kname, ast in captured(ren_name):
    tk, ck = schedulers(ast, ren_name)
    reset_counters()
    t1, c1 = tk.get_optimized_ast(), ck.get_optimized_ast()
    t2, c2 = tk.copy().get_optimized_ast(), ck.copy().get_optimized_ast()   # the second kernel of a name gets n1
    n += 1
    ok += from_tinygrad(t1) is c1 and from_tinygrad(t2) is c2 and from_tinygrad(tk.ast) is ck.ast and "n1" in c2.arg.name
  print(f"get_optimized_ast ({ren_name}): {ok}/{n}")
  assert ok == n

@functools.cache
def heuristic_opts(ren_name):
  """[(kernel name, ast, the opts tinygrad's hand_coded_optimizations picks)], kernels whose opts use TC left out"""
  out = []
  for kname, ast in captured(ren_name):
    tk, _ = schedulers(ast, ren_name)
    if any(u.op is TgOps.BUFFERIZE for u in ast.backward_slice): continue
    opts = hand_coded_optimizations(tk).applied_opts
    if any(o.op is TgOptOps.TC for o in opts): continue
    out.append((kname, ast, list(opts)))
  return out

@pytest.mark.parametrize("ren_name", ["clang", "cuda"])
def test_heuristic_opts_one_by_one(ren_name):
  ok = n = steps = 0
  for kname, ast, opts in heuristic_opts(ren_name):
    tk, ck = schedulers(ast, ren_name)
    good = True
    for o in opts:
      rt, rc = tk.apply_opt(o), ck.apply_opt(_to_tc_arg(o))
      steps += 1
      good = good and same_state(tk, ck) and ((rt is None and rc is None) or tuple(from_tinygrad(x) for x in rt) == rc)
    reset_counters()
    good = good and from_tinygrad(tk.get_optimized_ast()) is ck.get_optimized_ast()
    n += 1
    ok += good
  print(f"heuristic opts ({ren_name}): {ok}/{n} kernels, {steps} opts")
  assert ok == n and steps >= 50

@pytest.mark.parametrize("ren_name", ["clang", "cuda"])
def test_apply_opts(ren_name):
  """tinygrad's apply_opts vs _C.apply_opts: by default (the heuristics; no tensor cores on either side), and with
  opts_to_apply set to the heuristic's choice"""
  ok = n = 0
  for kname, ast, opts in heuristic_opts(ren_name):
    tg_ren = RENDERERS[ren_name]()
    tg_ren.tensor_cores = []
    for inp in (ast, ast.replace(arg=TgKernelInfo(opts_to_apply=tuple(opts))), ast.replace(arg=TgKernelInfo(name="mine", opts_to_apply=tuple(opts)))):
      reset_counters()
      t = tg_apply_opts(inp, tg_ren)
      c = _C.apply_opts(from_tinygrad(inp), tc_renderer_like(tg_ren))
      n += 1
      ok += from_tinygrad(t) is c and _C.apply_opts(c, tc_renderer_like(tg_ren)) is c and _C.make_images(c, tc_renderer_like(tg_ren)) is c
  print(f"apply_opts ({ren_name}): {ok}/{n}")
  assert ok == n

def random_opt(rnd, k):
  """a random Opt for tinygrad's Scheduler k: mostly on an existing axis with an amount that divides it, sometimes not"""
  op = rnd.choice(list(TgOptOps))
  axis = rnd.randrange(0, k.shape_len + 2) if rnd.random() < 0.2 or not k.shape_len else rnd.randrange(0, k.shape_len)
  if op is TgOptOps.TC: arg = (rnd.choice([-1, 0, 1]), rnd.choice([0, 1, 2, 3]), rnd.choice([0, 1, 2]))
  elif op is TgOptOps.SWAP: arg = rnd.randrange(0, k.shape_len + 2)
  else:
    # never 1: tinygrad's shift_to never ends then (it substitutes a range by an expression of itself)
    arg = rnd.choice([0, 2, 3, 4, 5, 7, 8, 16, 32, 64])
    if axis < k.shape_len and isinstance(sz := k.full_shape[axis], int) and rnd.random() < 0.6:
      arg = rnd.choice([d for d in range(2, sz + 1) if sz % d == 0] or [0])
  return TgOpt(op, axis, arg)

def run_both(tk, ck, opt):
  """apply opt to both; (same outcome, tinygrad raised KernelOptError, tinyc's message)"""
  try: rt, et = tk.apply_opt(opt), None
  except Exception as e: rt, et = None, e
  try: rc, ec = ck.apply_opt(_to_tc_arg(opt)), None
  except Exception as e: rc, ec = None, e
  if et is not None or ec is not None:
    if isinstance(et, TgKernelOptError): same = isinstance(ec, tinyc.KernelOptError) and str(et) == str(ec)
    else: same = et is not None and ec is not None and type(et).__name__ == type(ec).__name__
    return same and same_state(tk, ck), isinstance(et, TgKernelOptError)
  return same_state(tk, ck) and ((rt is None and rc is None) or tuple(from_tinygrad(x) for x in rt) == rc), False

@pytest.mark.parametrize("ren_name", ["clang", "cuda"])
def test_random_opts(ren_name):
  rnd = random.Random(1234)
  kernels = [(k, a) for k, a in captured(ren_name) if any(u.op is TgOps.RANGE for u in a.toposort())]
  picks = rnd.sample(kernels, 10)
  ok = n = errs = 0
  for kname, ast in picks:
    for _ in range(6):
      tk, ck = schedulers(ast, ren_name)
      for _ in range(6):
        opt = random_opt(rnd, tk)
        if ren_name == "cuda" and opt.op is TgOptOps.TC: continue
        same, err = run_both(tk, ck, opt)
        n += 1
        ok += same
        errs += err
        if not same: print("differs:", kname, tk.applied_opts, opt)
  print(f"random opts ({ren_name}): {ok}/{n} same ({errs} KernelOptError)")
  assert ok == n and 0 < errs < n

def a_matmul():
  """a corpus matmul kernel (with its reduce)"""
  return next(a for k, a in captured("clang") if k.startswith("matmul/") and TgScheduler(a, ClangRenderer()).reduceop is not None)

def test_tc_raises_without_tensor_cores():
  """TC on a matmul, and on a kernel without a reduce: the same KernelOptError as tinygrad's"""
  no_reduce = next(a for k, a in captured("clang") if TgScheduler(a, ClangRenderer()).reduceop is None)
  for ast in (a_matmul(), no_reduce):
    for arg in [(-1, 0, 1), (0, 0, 1), (-1, 2, 2), (-1, 3, 1), (-1, 0, 0), (-1, 1)]:
      tk, ck = schedulers(ast, "clang")
      same, err = run_both(tk, ck, TgOpt(TgOptOps.TC, 0, arg))
      assert same and err
    tk, ck = schedulers(ast, "clang")
    assert run_both(tk, ck, TgOpt(TgOptOps.TC, None, (-1, 0, 1))) == (True, True)

def test_remove_tags():
  rt = _C.native_rules()["postrange_remove_tags"]
  x = tinyc.UOp.range(8, 0, tinyc.AxisType.LOOP)
  tagged = (x.replace(tag=1) + 1).replace(tag="a")
  assert _C.graph_rewrite(tinyc.UOp.sink(tagged), rt) is tinyc.UOp.sink(x + 1)

def test_bad_input():
  kname, ast = captured("clang")[0]
  with pytest.raises(ValueError, match="SINK"): tinyc.Scheduler(from_tinygrad(ast).src[0], tinyc.ClangRenderer())
  with pytest.raises(TypeError): tinyc.Scheduler(ast, tinyc.ClangRenderer())   # a tinygrad UOp, not a tinyc one
  ck = tinyc.Scheduler(from_tinygrad(a_matmul()), tinyc.ClangRenderer())
  with pytest.raises(tinyc.KernelOptError, match="invalid axis"): ck.apply_opt(tinyc.Opt(tinyc.OptOps.UPCAST, 99, 2))
  with pytest.raises(tinyc.KernelOptError): ck.apply_opt(tinyc.Opt(tinyc.OptOps.UNROLL, 99, 2))
  with pytest.raises(TypeError): ck.apply_opt("UPCAST")
  with pytest.raises(TypeError): _C.apply_opts(1, tinyc.ClangRenderer())
  with pytest.raises(RuntimeError, match="no progress"): ck.copy().apply_opt(tinyc.Opt(tinyc.OptOps.UPCAST, 0, 1))   # tinygrad hangs
  assert ck.applied_opts == []

def test_ranges_follow_the_ast():
  """A Scheduler sorts its kernel's ranges once per ast: after every opt, in a copy that diverges from its original,
  and after `ast` is set, the axes are tinygrad's for that ast (a stale cache would show the old ones)"""
  checked = 0
  for kname, ast in captured("clang")[:40]:
    tk, ck = schedulers(ast, "clang")
    ck.full_shape   # fills the cache of the original
    for opt in (TgOpt(TgOptOps.UPCAST, 0, 4), TgOpt(TgOptOps.UNROLL, 0, 4), TgOpt(TgOptOps.UPCAST, 1, 2)):
      tk2, ck2 = tk.copy(), ck.copy()
      try: tk2.apply_opt(opt)
      except TgKernelOptError:
        with pytest.raises(tinyc.KernelOptError): ck2.apply_opt(_to_tc_arg(opt))
        continue
      ck2.apply_opt(_to_tc_arg(opt))
      assert same_state(tk2, ck2) and same_state(tk, ck), (kname, opt)
      tk.ast, ck.ast = tk2.ast, ck2.ast   # the setter: the original now schedules the changed kernel
      assert conv(tk.full_shape) == ck.full_shape and [from_tinygrad(r) for r in tk.rngs] == ck.rngs, (kname, opt)
      checked += 1
  assert checked >= 20

def test_memory_flat():
  """repeated scheduling (opts, errors, copies, names) leaves no UOps and no references behind"""
  import gc
  cases = [(from_tinygrad(ast), [_to_tc_arg(o) for o in opts]) for _, ast, opts in heuristic_opts("cuda")[:30]]
  ren = tc_renderer_like(RENDERERS["cuda"]())
  bad = [tinyc.Opt(tinyc.OptOps.UPCAST, 0, 7), tinyc.Opt(tinyc.OptOps.PADTO, 0, 1000), tinyc.Opt(tinyc.OptOps.SWAP, 0, 99),
         tinyc.Opt(tinyc.OptOps.TC, 0, (-1, 0, 1)), tinyc.Opt(tinyc.OptOps.UNROLL, 5, 0), tinyc.Opt(tinyc.OptOps.PADTO, 0, 32)]
  def work():
    for ast, opts in cases:
      k = tinyc.Scheduler(ast, ren)
      k.convert_loop_to_global()
      for o in opts + bad:
        try: k.copy().apply_opt(o)
        except tinyc.KernelOptError: pass
        try: k.apply_opt(o)
        except tinyc.KernelOptError: pass
      k.colored_shape(), k.output_shape, k.reduceop, k.bufs
      k.get_optimized_ast()
      _C.apply_opts(ast, ren)
    tinyc.Scheduler.kernel_cnt.clear()
  work()
  gc.collect()
  base, refs = _C._intern_count(), sys.gettotalrefcount() if hasattr(sys, "gettotalrefcount") else 0
  for _ in range(3): work()
  gc.collect()
  assert _C._intern_count() == base
  if refs: assert sys.gettotalrefcount() - refs < 100

def test_odd_opts():
  """axis None or negative, arg None or negative: tinyc fails (or not) the way tinygrad does"""
  ok = n = 0
  for ast in [a for _, a in captured("cuda")][:60:12]:
    for op in TgOptOps:
      if op is TgOptOps.TC: continue
      for axis in (None, -1, -2):
        for arg in (0, 2, -1, None):
          tk, ck = schedulers(ast, "cuda")
          same, _ = run_both(tk, ck, TgOpt(op, axis, arg))
          n += 1
          ok += same
  print(f"odd opts: {ok}/{n}")
  assert ok == n
