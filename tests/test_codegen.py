"""tinygrad/codegen/__init__.py: full_rewrite_to_sink and get_program, native in tinyc, against tinygrad 0.12.0.

Every AST of the corpus (tests/corpus.py) goes through tinygrad's get_program and tinyc's with the Clang renderer:
(a) with no opts (tinygrad under NOOPT=1, tinyc given opts=[]), (b) with the opts tinygrad's heuristics choose for it, passed as opts=.
The rendered C must be byte-identical and the linear uops the very same nodes, in the same order. tinygrad appends
`nN` to a kernel name it has produced before in the same process (a counter of the process's history), so names are
compared with that suffix stripped."""
import functools, os, random, re, subprocess, sys
import pytest
from tinygrad.codegen import get_program as tg_get_program
from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps, KernelOptError as TgKernelOptError
from tinygrad.renderer.cstyle import ClangRenderer as TgClangRenderer
from tinygrad.helpers import Context
from tinygrad.uop.ops import UOp as TgUOp, Ops as TgOps
import tinyc
from tinyc import _C
from tinyc.codegen import get_program, full_rewrite_to_sink
from tinyc.tinygrad import from_tinygrad
import corpus

TG_REN, REN = TgClangRenderer(), tinyc.ClangRenderer()

def strip_counter(name: str) -> str:
  """the name without its `nN` counter: in a kernel name it is coloured (ESC[90m nN ESC[0m, the colour codes there
  even when the count is 1 and nN is empty), in a function name it is plain"""
  return re.sub(r"(\x1b\[90m(n\d+)?\x1b\[0m|n\d+)$", "", name)

def same_source(tg, tc) -> bool:
  """the same C text once each kernel's name has its process counter stripped"""
  return tg.src.replace(tg.function_name, strip_counter(tg.function_name)) == \
         tc.src.replace(tc.function_name, strip_counter(tc.function_name))

def same_uops(tg, tc) -> bool:
  """the same linear uops; the SINK's KernelInfo holds the kernel name, so it is compared without the counter"""
  if len(tg.uops) != len(tc.uops) or not all(from_tinygrad(a) is b for a, b in zip(tg.uops[:-1], tc.uops[:-1])): return False
  tg_sink, tc_sink = tg.uops[-1], tc.uops[-1]
  return tc_sink.op is tinyc.Ops.SINK and tc_sink.src == tuple(from_tinygrad(x) for x in tg_sink.src) and \
    strip_counter(tg_sink.arg.name) == strip_counter(tc_sink.arg.name) and \
    tuple(map(str, tg_sink.arg.applied_opts)) == tuple(map(str, tc_sink.arg.applied_opts))

def tc_opts(opts):
  return tuple(tinyc.Opt(getattr(tinyc.OptOps, o.op.name), o.axis, o.arg) for o in opts)

@functools.cache
def tinygrad_programs():
  """(name, ast, tinygrad's program with no opts, tinygrad's program with its heuristics' opts)"""
  out = []
  for name, ast in corpus.kernel_asts():
    with Context(NOOPT=1): noopt = tg_get_program(ast, TG_REN)
    out.append((name, ast, noopt, tg_get_program(ast, TG_REN)))
  return out

def test_corpus_is_broad():
  names = {n.split("/")[0] for n, _ in corpus.kernel_asts()}
  assert len(names) >= 30 and len(corpus.kernel_asts()) >= 100
  assert sum(len(opt.applied_opts) > 0 for *_, opt in tinygrad_programs()) >= 30

def rates(results):
  return sum(s for s, _ in results), sum(u for _, u in results), len(results)

def test_noopt_identity():
  results = []
  for _, ast, tg, _ in tinygrad_programs():
    tc = get_program(from_tinygrad(ast), REN, opts=[])   # opts=[]: apply none, as tinygrad under NOOPT=1
    results.append((same_source(tg, tc), same_uops(tg, tc)))
  src, uops, n = rates(results)
  print(f"\nno opts: source {src}/{n} = {src/n:.1%}, uops {uops}/{n} = {uops/n:.1%}")
  assert src / n >= 0.95 and uops / n >= 0.95

def test_heuristic_opts_identity():
  results = []
  for _, ast, _, tg in tinygrad_programs():
    tc = get_program(from_tinygrad(ast), REN, opts=tc_opts(tg.applied_opts))
    results.append((same_source(tg, tc), same_uops(tg, tc)))
  src, uops, n = rates(results)
  print(f"\ntinygrad's opts: source {src}/{n} = {src/n:.1%}, uops {uops}/{n} = {uops/n:.1%}")
  assert src / n >= 0.95 and uops / n >= 0.95

def test_full_rewrite_to_sink_identity():
  """the final sink itself, for the NOOPT program (tinygrad's own full_rewrite_to_sink, no opts to apply)"""
  from tinygrad.codegen import full_rewrite_to_sink as tg_full
  from tinygrad.uop.ops import KernelInfo
  ok = 0
  asts = corpus.kernel_asts()[::4]
  for _, ast in asts:
    ast = ast.replace(arg=KernelInfo(opts_to_apply=()))
    tg, tc = tg_full(ast, TG_REN), full_rewrite_to_sink(from_tinygrad(ast), REN)
    strip = lambda s: s.replace(arg=None)   # the SINK's KernelInfo names the kernel (and counts it)
    ok += from_tinygrad(strip(tg)) is strip(tc)
  print(f"\nfull_rewrite_to_sink: {ok}/{len(asts)}")
  assert ok == len(asts)

def random_opts(rng, ast_len):
  ops = [TgOptOps.UPCAST, TgOptOps.UNROLL, TgOptOps.LOCAL, TgOptOps.GROUP, TgOptOps.GROUPTOP, TgOptOps.PADTO,
         TgOptOps.SWAP, TgOptOps.NOLOCALS, TgOptOps.THREAD]
  out = []
  for _ in range(rng.randint(1, 2)):
    # mostly small axes and sizes that divide (so many sequences apply), sometimes ones that cannot
    op = rng.choice(ops[:2] * 4 + [TgOptOps.THREAD, TgOptOps.PADTO, TgOptOps.NOLOCALS] * 2 + ops[2:])
    axis = None if op is TgOptOps.NOLOCALS else rng.choice([0, 0, 1, 1, 2, ast_len])
    sizes = {TgOptOps.PADTO: [8, 16, 32], TgOptOps.THREAD: [2, 2, 3]}.get(op, [0, 2, 2, 4, 4, 3, 8, 32])
    out.append(TgOpt(op, axis, rng.choice(sizes)))
  return tuple(out)

def test_random_opts_raise_where_tinygrad_raises():
  rng = random.Random(7)
  asts = [ast for name, ast in corpus.kernel_asts() if name.split("/")[0] in ("matmul", "sum", "softmax", "conv2d", "cumsum", "symbolic_sum")
          and not any(u.op is TgOps.THREEFRY for u in ast.toposort()) and sum(u.op is TgOps.RANGE for u in ast.toposort()) >= 2]
  same = raised = 0
  cases = 0
  for ast in asts:
    for _ in range(24):
      opts = random_opts(rng, 3)
      cases += 1
      try: tg, tg_err = tg_get_program(ast, TG_REN, opts=opts), None
      except Exception as e: tg, tg_err = None, e   # KernelOptError mostly; PADTO by 0 divides by zero in both
      try: tc, tc_err = get_program(from_tinygrad(ast), REN, opts=tc_opts(opts)), None
      except Exception as e: tc, tc_err = None, e
      raised += isinstance(tg_err, TgKernelOptError)
      if tg_err is not None: same += tc_err is not None and type(tc_err).__name__ == type(tg_err).__name__
      else: same += tc is not None and same_source(tg, tc)
  print(f"\nrandom opts: {same}/{cases} same ({raised} raise KernelOptError)")
  assert same == cases and cases * 0.2 < raised < cases * 0.8

ENV_SCRIPT = """
import sys; sys.path.insert(0, {tests!r})
import corpus, tinyc
from tinyc.codegen import get_program
from tinyc.tinygrad import from_tinygrad
from tinygrad.codegen import get_program as tg_get_program
from tinygrad.renderer.cstyle import ClangRenderer
ok = n = 0
for name, ast in corpus.kernel_asts():
  if not name.split("/")[0] in ("softmax", "sin_sqrt", "exp_log", "matmul", "cast_half", "pow"): continue
  tg, tc = tg_get_program(ast, ClangRenderer()), get_program(from_tinygrad(ast), tinyc.ClangRenderer())
  n += 1; ok += tg.src.replace(tg.function_name, "K") == tc.src.replace(tc.function_name, "K")
print(ok, n)
"""

@pytest.mark.parametrize("env", [{"NOOPT": "1", "DEVECTORIZE": "0"}, {"NOOPT": "1", "DEVECTORIZE": "2"},
                                 {"NOOPT": "1", "TRANSCENDENTAL": "2"}, {"NOOPT": "1", "SPEC": "0"}])
def test_environment_switches_read_the_same(env):
  script = ENV_SCRIPT.format(tests=os.path.dirname(__file__))
  out = subprocess.run([sys.executable, "-c", script], env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr
  ok, n = map(int, out.stdout.split()[-2:])
  assert n >= 10 and ok == n, f"{env}: {ok}/{n}"

def test_bad_input():
  ast = from_tinygrad(corpus.kernel_asts()[0][1])
  with pytest.raises(ValueError, match="SINK"):
    full_rewrite_to_sink(ast.src[0], REN)
  with pytest.raises(tinyc.KernelOptError):
    get_program(ast, REN, opts=(tinyc.Opt(tinyc.OptOps.UPCAST, 9, 2),))
  with pytest.raises(AssertionError, match="opts"):
    get_program(ast.replace(arg=tinyc.KernelInfo()), REN, opts=())
  with pytest.raises(TypeError):
    get_program("not a UOp", REN)
  with pytest.raises(AttributeError):
    get_program(ast, "not a renderer")

def test_a_program_goes_on_as_tinygrads_pm_to_program():
  """a PROGRAM given goes through pm_to_program as tinygrad's graph_rewrite takes it: tinyc rewrites its root alone
  when no PROGRAM is below it (also when a LINEAR is, whose op shares PROGRAM's ops_below bit), and walks the graph (as
  tinygrad does) when one is: the same node, or the same error"""
  from tinygrad.codegen import full_rewrite_to_sink as tg_full, pm_to_program as tg_pm_to_program, do_linearize as tg_do_linearize
  from tinygrad.uop.ops import KernelInfo as TgKernelInfo, graph_rewrite as tg_graph_rewrite
  from tinyc.codegen import program_uop
  def outcome(f):
    try: return f()
    except Exception as e: return type(e)
  dev = TgUOp(TgOps.DEVICE, arg="CPU")
  for _, ast in corpus.kernel_asts()[:4]:
    full = tg_full(ast.replace(arg=TgKernelInfo()), TG_REN)
    nested = TgUOp(TgOps.SINK, src=(TgUOp(TgOps.PROGRAM, src=(full, dev)),), arg=full.arg)
    for sink in (full, nested):
      prg = TgUOp(TgOps.PROGRAM, src=(sink, dev), arg=TgKernelInfo())
      for given in (prg, outcome(lambda: tg_do_linearize(prg, sink))):
        if isinstance(given, type): continue   # the nested sink does not linearize
        tg = outcome(lambda: from_tinygrad(tg_graph_rewrite(given, tg_pm_to_program, ctx=TG_REN)))
        assert outcome(lambda: program_uop(from_tinygrad(given), REN)) is tg

def test_a_dtype_the_renderer_cannot_render_raises_as_in_tinygrad():
  """an index-typed buffer never lowers to a C type: both raise the same error from the spec check"""
  from tinygrad.uop.ops import AxisType as TgAxisType
  from tinygrad.dtype import dtypes as tg_dtypes
  def kernel(U, Ops, dtypes, AxisType):
    o, a = (U(Ops.DEFINE_GLOBAL, dtypes.index.ptr(8), arg=i) for i in range(2))
    i = U.range(U.const(dtypes.index, 8), 0, AxisType.LOOP)
    return U.sink(o.index(i, ptr=True).store(a.index(i)).end(i))
  with pytest.raises(RuntimeError) as tg_err:
    tg_get_program(kernel(TgUOp, TgOps, tg_dtypes, TgAxisType), TG_REN)
  with pytest.raises(RuntimeError) as tc_err:
    get_program(kernel(tinyc.UOp, tinyc.Ops, tinyc.dtypes, tinyc.AxisType), REN)
  assert str(tg_err.value).split(" at ")[0] == str(tc_err.value).split(" at ")[0] == "UOp verification failed"
