"""tinygrad/uop/validate.py: validate_index's z3 proof (csrc/uop/validate.c, z3's C API) against tinygrad 0.12.0.

Both read IGNORE_OOB at import, so every check runs in a child process with IGNORE_OOB=0. The hand-made cases (safe and
unsafe indexes over ranges, specials, variables, loads, casts, every integer ALU op z3 renders, gates) and the malformed
ones are built by one piece of code from either library's UOp, Ops, dtypes and Invalid: tinygrad's child gives the
expected verdicts, tinyc's child (tinyc alone, so that it runs on the sanitizer build too) gives its own. The corpus
cases (tests/corpus.py's gated, padded, shifted and reduce kernels) take tinygrad's indexes through from_tinygrad, in
one child holding both. tinygrad raises z3py's own Z3Exception (and ctypes' ArgumentError for a name z3 cannot take)
where tinyc, which cannot raise z3py's class, raises TypeError: the comparison maps those two names."""
import json, os, subprocess, sys, textwrap
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "RESULT-JSON "
Z3PY_ERRORS = {"Z3Exception": "TypeError", "ArgumentError": "TypeError"}

# builds the cases from UOp, Ops, dtypes, Invalid of the library the child imported: {name: (buf, idx, gate)}
_CASES = textwrap.dedent("""
  def const(v, dt=dtypes.index): return UOp.const(dt, v)
  def rng(n, axis=0): return UOp(Ops.RANGE, dtypes.index, (const(n),), (axis, 0))
  def buf(size, dt=dtypes.float, slot=0): return UOp(Ops.DEFINE_GLOBAL, dt.ptr(size), (), slot)
  def load(b, i, dt): return UOp(Ops.LOAD, dt, (UOp(Ops.INDEX, dt.ptr(b.dtype.size), (b, i)),))
  def alu(op, dt, *src): return UOp(op, dt, tuple(src))
  def valid(cond, x): return UOp(Ops.WHERE, dtypes.index, (cond, x, UOp.const(dtypes.index, Invalid)))
  r, r2 = rng(16), rng(4, 1)
  b16, b32, b30 = buf(16), buf(32), buf(30)
  special = UOp(Ops.SPECIAL, dtypes.index, (const(16),), "gidx0")
  n = UOp(Ops.DEFINE_VAR, dtypes.index, (), ("n", 1, 16))
  ints, bools, floats = buf(8, dtypes.int, 1), buf(8, dtypes.bool, 2), buf(8, dtypes.float, 3)
  li, lb, lf = load(ints, r2, dtypes.int), load(bools, r2, dtypes.bool), load(floats, r2, dtypes.float)
  li_index = alu(Ops.CAST, dtypes.index, li)
  T = UOp.const(dtypes.bool, True)
  def lt(a, b): return alu(Ops.CMPLT, dtypes.bool, a, b)
  GOOD = {
    "range": (b16, r, None), "shifted": (b16, r + 1, None), "shifted_gated": (b16, r + 1, lt(r, const(15))),
    "back_shifted_gated": (b16, r - 1, lt(const(0), r)), "back_shifted": (b16, r - 1, None),
    "gate_true": (b16, r + 1, T),
    "padded": (b16, valid(lt(r, const(15)), r + 1), None), "padded_unsafe": (b16, valid(lt(r, const(16)), r + 1), None),
    "padded_2d": (b16, valid(alu(Ops.AND, dtypes.bool, lt(const(0), r2), lt(r, const(12))), r2 * 4 + r - 4), None),
    "padded_2d_unsafe": (b16, valid(lt(const(0), r2), r2 * 4 + r - 4), None),
    "special": (b16, special + 1, None), "special_gated": (b16, special + 1, lt(special, const(15))),
    "variable_safe": (b16, n - 1, None), "variable_unsafe": (b16, n, None),
    "nested": (b16, r2 * 4 + alu(Ops.IDIV, dtypes.index, r, const(4)), None),
    "nested_unsafe": (b16, r2 * 5 + alu(Ops.IDIV, dtypes.index, r, const(4)), None),
    "idiv_trunc": (b16, alu(Ops.IDIV, dtypes.index, r - 15, const(4)) + 3, None),
    "idiv_trunc_unsafe": (b16, alu(Ops.IDIV, dtypes.index, r - 15, const(4)) + 2, None),
    "idiv_neg_divisor": (b16, alu(Ops.IDIV, dtypes.index, r, const(-2)) + 7, None),
    "mod_neg": (b16, alu(Ops.MOD, dtypes.index, r - 8, const(16)), None),
    "mod_gated": (b16, alu(Ops.MOD, dtypes.index, r - 8, const(16)), lt(const(7), r)),
    "mod_shifted": (b16, alu(Ops.MOD, dtypes.index, r + 5, const(16)), None),
    "and_mask": (b16, alu(Ops.AND, dtypes.index, r + 5, const(15)), None),
    "and_mask_unsafe": (b16, alu(Ops.AND, dtypes.index, r + 5, const(31)), None),
    "shr": (b16, alu(Ops.SHR, dtypes.index, r + 17, const(1)), None),
    "shr_unsafe": (b16, alu(Ops.SHR, dtypes.index, r + 18, const(1)), None),
    "shl": (b32, alu(Ops.SHL, dtypes.index, r, const(1)) + 1, None),
    "shl_unsafe": (b30, alu(Ops.SHL, dtypes.index, r, const(1)) + 1, None),
    "max": (b16, alu(Ops.MAX, dtypes.index, r - 3, const(0)), None),
    "max_unsafe": (b16, alu(Ops.MAX, dtypes.index, r - 3, const(-1)), None),
    "neg": (b16, alu(Ops.NEG, dtypes.index, r) + 15, None), "neg_unsafe": (b16, alu(Ops.NEG, dtypes.index, r) + 14, None),
    "mulacc": (b32, alu(Ops.MULACC, dtypes.index, r, const(2), const(1)), None),
    "mulacc_unsafe": (b30, alu(Ops.MULACC, dtypes.index, r, const(2), const(1)), None),
    "where_sel": (b16, alu(Ops.WHERE, dtypes.index, lt(r, const(8)), r + 8, r - 8), None),
    "where_sel_unsafe": (b16, alu(Ops.WHERE, dtypes.index, lt(r, const(8)), r + 9, r - 8), None),
    "cmpne_gate": (b16, r + 1, alu(Ops.CMPNE, dtypes.bool, r, const(15))),
    "cmpeq_gate": (b16, r + 1, alu(Ops.CMPEQ, dtypes.bool, r, const(3))),
    "or_gate": (b16, r + 1, alu(Ops.OR, dtypes.bool, lt(r, const(5)), lt(r, const(15)))),
    "or_gate_unsafe": (b16, r + 1, alu(Ops.OR, dtypes.bool, lt(r, const(5)), lt(const(3), r))),
    "xor_gate": (b16, r + 1, alu(Ops.XOR, dtypes.bool, lt(r, const(15)), lt(r, const(-1)))),
    "bool_cast_index": (b16, r + alu(Ops.CAST, dtypes.index, lt(r, const(15))), None),
    "bool_cast_index_unsafe": (b16, r + alu(Ops.CAST, dtypes.index, lt(r, const(16))), None),
    "int_cast_bool_gate": (b16, r + 1, alu(Ops.CAST, dtypes.bool, r - 15)),
    "int_load_gather": (b16, li_index, alu(Ops.AND, dtypes.bool, lt(const(-1), li_index), lt(li_index, const(16)))),
    "int_load_gather_unsafe": (b16, li_index, lt(li_index, const(16))),
    "bool_load_gate": (b16, r + 1, alu(Ops.AND, dtypes.bool, lb, lt(r, const(15)))),
    "bool_load_gate_unsafe": (b16, r + 1, lb),
    "float_cast": (b16, alu(Ops.CAST, dtypes.index, lf), None),
    "float_cast_gated": (b16, alu(Ops.CAST, dtypes.int, lf), alu(Ops.AND, dtypes.bool, lt(const(-1), alu(Ops.CAST, dtypes.int, lf)),
                                                                lt(alu(Ops.CAST, dtypes.int, lf), const(16)))),
    "float_cmp_gate": (b16, r + 1, alu(Ops.AND, dtypes.bool, lt(lf, UOp.const(dtypes.float, 0.5)), lt(r, const(15)))),
    "float_cmp_gate_unsafe": (b16, r + 1, lt(lf, UOp.const(dtypes.float, 0.5))),
    "int_cast_of_int": (b16, alu(Ops.CAST, dtypes.index, alu(Ops.CAST, dtypes.int, r + 1)), lt(r, const(15))),
    "big_const": (b16, r + 2**70 - 2**70, None),
    "invalid": (b16, UOp.const(dtypes.index, Invalid), None),
    "unsized": (buf(-1), r + 100, None),
    "bitcast": (b16, alu(Ops.BITCAST, dtypes.index, r + 1), None),
    "int32_range": (b16, UOp(Ops.RANGE, dtypes.int, (UOp.const(dtypes.int, 16),), (0, 0)) + 1, None),
  }
  rf = alu(Ops.CAST, dtypes.float, r)
  BAD = {
    "float_source": (b16, alu(Ops.ADD, dtypes.index, r, rf), None),
    "threefry": (b16, alu(Ops.THREEFRY, dtypes.index, r, r), None),
    "or_of_ints": (b16, alu(Ops.OR, dtypes.index, r, const(16)), None),
    "xor_of_ints": (b16, alu(Ops.XOR, dtypes.index, r, const(16)), None),
    "shift_by_range": (b16, alu(Ops.SHL, dtypes.index, const(1), r2), None),
    "float_index": (b16, lf, None),
    "index_gate": (b16, r + 1, r),
    "index_condition": (b16, alu(Ops.WHERE, dtypes.index, r, r + 1, r), None),
    "bool_cast_of_bool": (b16, r + 1, alu(Ops.CAST, dtypes.bool, lt(r, const(15)))),
    "log2_of_index": (b16, alu(Ops.LOG2, dtypes.index, r) + 16, None),
    "vectorized_index": (b16, UOp(Ops.VECTORIZE, dtypes.index.vec(2), (r + 1, r + 1)), None),
    "special_tuple_name": (b16, UOp(Ops.SPECIAL, dtypes.index, (const(16),), ("g", 0)) + 1, None),
    "define_var_short_arg": (b16, UOp(Ops.DEFINE_VAR, dtypes.index, (), ("m", 0)) + 1, None),
    "range_without_size": (b16, UOp(Ops.RANGE, dtypes.index, (), (0, 0)) + 1, None),
    "range_of_float_size": (b16, UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.float, 16.0),), (0, 0)) + 1, None),
    "const_float_arg": (b16, UOp(Ops.CONST, dtypes.index, (), 1.5) + r, None),
    "cast_without_source": (b16, r + 1, UOp(Ops.CAST, dtypes.bool, (), None)),
    "index_of_a_bool": (buf(1), lt(r, const(8)), None),
    "buffer_not_a_pointer": (UOp(Ops.DEFINE_GLOBAL, dtypes.float, (), 0), r + 1, None),
    "unary_with_two_sources": (b16, alu(Ops.NEG, dtypes.index, r, r) + 20, None),
  }
""")

# runs the cases of one group with validate_index; prints {name: verdict or exception class name}
_RUN = textwrap.dedent("""
  import io, json, contextlib
  def outcome(*a):
    try:
      with contextlib.redirect_stdout(io.StringIO()): return validate_index(*a)
    except Exception as e: return type(e).__name__
  print("%s" + json.dumps({name: outcome(*case) for name, case in {**GOOD, **BAD}.items()}))
""" % MARK)

_TINYGRAD = "from tinygrad.uop.ops import UOp, Ops\nfrom tinygrad.dtype import dtypes, Invalid\nfrom tinygrad.uop.validate import validate_index\n"
_TINYC = "from tinyc import UOp, Ops, dtypes, Invalid\nfrom tinyc.uop.validate import validate_index\n"

def _child(script: str, oracle: bool, timeout=120) -> tuple[dict, str]:
  """run script in a child with IGNORE_OOB=0: its JSON result and its whole output. tinygrad's child runs without the
  sanitizer runtime (z3py's library is not ours to check); tinyc's child runs as this process does."""
  env = dict(os.environ, IGNORE_OOB="0")
  if oracle:
    for k in ("LD_PRELOAD", "PYTHONMALLOC", "ASAN_OPTIONS", "LSAN_OPTIONS"): env.pop(k, None)
  res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=timeout, cwd=HERE)
  assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
  line = next(l for l in reversed(res.stdout.splitlines()) if l.startswith(MARK))
  return json.loads(line[len(MARK):]), res.stdout

@pytest.fixture(scope="module")
def hand_made():
  want, _ = _child(_TINYGRAD + _CASES + _RUN, oracle=True)
  got, _ = _child(_TINYC + _CASES + _RUN, oracle=False)
  return want, got

def _expected(v): return Z3PY_ERRORS.get(v, v) if isinstance(v, str) else v

def test_safe_and_unsafe_indexes_have_tinygrads_verdict(hand_made):
  want, got = hand_made
  good = [k for k in want if k not in BAD_NAMES]
  diffs = {k: (want[k], got[k]) for k in good if got[k] != want[k]}
  assert not diffs, diffs
  # the set proves both ways: z3 finds accesses out of bounds and proves others in bounds
  assert sum(want[k] is False for k in good) >= 15 and sum(want[k] is True for k in good) >= 25, want

BAD_NAMES = ["float_source", "threefry", "or_of_ints", "xor_of_ints", "shift_by_range", "float_index", "index_gate",
             "index_condition", "bool_cast_of_bool", "log2_of_index", "vectorized_index", "special_tuple_name",
             "define_var_short_arg", "range_without_size", "range_of_float_size", "const_float_arg", "cast_without_source",
             "index_of_a_bool", "buffer_not_a_pointer", "unary_with_two_sources"]

def test_malformed_inputs_raise_as_tinygrad(hand_made):
  want, got = hand_made
  assert set(BAD_NAMES) <= set(want)
  diffs = {k: (want[k], got[k]) for k in BAD_NAMES if got[k] != _expected(want[k])}
  assert not diffs, diffs
  assert sum(isinstance(want[k], str) for k in BAD_NAMES) >= 15, want   # most of them do raise in tinygrad

_REPORT = textwrap.dedent("""
  import io, json, contextlib
  r = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, 16),), (0, 0))
  b = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(16), (), 0)
  out = {}
  for name, gate in (("plain", None), ("gated", UOp(Ops.CMPLT, dtypes.bool, (r, UOp.const(dtypes.index, 16))))):
    with contextlib.redirect_stdout(io.StringIO()) as f: verdict = validate_index(b, r + 1, gate)
    out[name] = [verdict] + [l for l in f.getvalue().splitlines() if not l.startswith("constraints")]
  print("%s" + json.dumps(out))
""" % MARK)

def test_out_of_bounds_report_names_the_index_as_tinygrad():
  want, _ = _child(_TINYGRAD + _REPORT, oracle=True)
  got, _ = _child(_TINYC + _REPORT, oracle=False)
  assert want == got
  assert got["plain"][:2] == [False, "# OUT OF BOUNDS ACCESS: at [r0 = 15] INDEX not in 0 - 16"] and "idx=(r0+1)" in got["plain"]

_THREADS = textwrap.dedent("""
  import io, json, contextlib, threading, gc
  from sanitizer import rss, RSS_SLACK
  cases = list(GOOD.values())[:16]
  def verdicts():
    out = []
    for c in cases:
      try: out.append(validate_index(*c))
      except Exception as e: out.append(type(e).__name__)
    return out
  with contextlib.redirect_stdout(io.StringIO()):
    serial = verdicts()
    results = [None] * 4
    def work(i): results[i] = verdicts()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    idx = GOOD["shifted"][1]
    refs = sys.getrefcount(idx)
    sizes = []
    for _ in range(3):
      for _ in range(25): validate_index(*GOOD["padded_2d"]), validate_index(b16, idx)
      gc.collect(); sizes.append(rss())
  print("%s" + json.dumps({"same": all(r == serial for r in results), "refs": [refs, sys.getrefcount(idx)],
                           "growth": sizes[2] - sizes[1], "slack": RSS_SLACK}))
""" % MARK)

def test_threads_and_memory():
  """one z3 context a call: threads validating at once get the serial verdicts; repeated proofs leave memory flat"""
  got, _ = _child("import sys\n" + _TINYC + _CASES + _THREADS, oracle=False, timeout=300)
  assert got["same"]
  assert got["refs"][0] == got["refs"][1]
  assert got["growth"] <= 2 * 2**20 + got["slack"], got

def test_without_ignore_oob_unset_every_index_passes():
  """IGNORE_OOB's default (1) skips the proof: an out-of-bounds index is True, as in tinygrad"""
  script = _TINYC + "r = UOp(Ops.RANGE, dtypes.index, (UOp.const(dtypes.index, 16),), (0, 0))\n" \
           "print(validate_index(UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(16), (), 0), r + 1))\n"
  env = {k: v for k, v in os.environ.items() if k != "IGNORE_OOB"}
  res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60, cwd=HERE)
  assert res.returncode == 0 and res.stdout.strip() == "True", res.stdout + res.stderr

_CORPUS = textwrap.dedent("""
  import io, json, contextlib
  from corpus import _programs
  from tinygrad.codegen import get_program as tg_get_program
  from tinygrad.renderer.cstyle import ClangRenderer
  from tinygrad.uop.ops import Ops
  import tinyc
  from tinyc.codegen import get_program
  from tinyc.tinygrad import from_tinygrad
  WANT = {"pad_permute", "cumsum", "gather", "gather_dim", "conv2d_stride_pad", "sum", "shrink_flip"}
  asts = []
  for name, build in _programs():
    if name not in WANT: continue
    sched, _ = build().schedule_with_vars()
    asts += [(f"{name}/{i}", si.ast) for i, si in enumerate(x for x in sched if x.ast.op is Ops.SINK)]
  # shifted reads: every load of an input buffer one element further on, which leaves the buffer at its end
  def shifted(ast):
    subs = {u: u.replace(src=(u.src[0], u.src[1] + 1) + u.src[2:]) for u in ast.toposort()
            if u.op is Ops.INDEX and u.src[0].op is Ops.DEFINE_GLOBAL and u.src[0].arg != 0}
    return ast.substitute(subs) if subs else None
  asts += [(n + "+1", s) for n, a in asts[:6] if (s := shifted(a)) is not None]
  def outcome(f):
    try:
      with contextlib.redirect_stdout(io.StringIO()): f()
      return "ok"
    except Exception as e: return type(e).__name__
  out = {n: [outcome(lambda: tg_get_program(a, ClangRenderer())), outcome(lambda: get_program(from_tinygrad(a), tinyc.ClangRenderer()))]
         for n, a in asts}
  print("%s" + json.dumps(out))
""" % MARK)

def test_corpus_kernels_and_shifted_reads_verdict_as_tinygrad():
  """get_program with IGNORE_OOB=0 on gated, padded, gather and reduce kernels of the corpus passes as in tinygrad; the
  same kernels reading one element past their inputs raise tinygrad's RuntimeError (its spec rejects the INDEX)"""
  got, _ = _child(_CORPUS, oracle=True, timeout=300)
  diffs = {k: v for k, v in got.items() if v[0] != v[1]}
  assert not diffs, diffs
  assert sum(v[0] == "ok" for v in got.values()) >= 8 and sum(v[0] == "RuntimeError" for v in got.values()) >= 3, got
