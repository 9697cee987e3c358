"""simplify() against tinygrad 0.12.0 on seeded random integer/index expressions: the simplified graphs render to the
same string, are the same graph (identity through the bridge), and have the same vmin/vmax."""
import random
import pytest
import tinyc
from tinyc.tinygrad import from_tinygrad
from tinygrad.uop.ops import UOp as TgUOp
from tinygrad.dtype import dtypes as tg_dtypes

N_EXPRS = 5000
SEEDS_PER_CHUNK = 500

def expr(rng, U, dt, depth, variables):
  """An integer/index expression: variables with bounds, consts, + * // % max < != where & |, casts."""
  if depth == 0 or rng.random() < 0.25:
    return rng.choice(variables) if rng.random() < 0.7 else U.const(dt.index, rng.randint(-8, 16))
  k = rng.random()
  a = expr(rng, U, dt, depth - 1, variables)
  if k < 0.22: return a + expr(rng, U, dt, depth - 1, variables)
  if k < 0.36: return a * rng.choice([-2, -1, 2, 3, 4, 8, 16])
  if k < 0.46: return a // rng.choice([1, 2, 3, 4, 5, 8, 16])
  if k < 0.56: return a % rng.choice([1, 2, 3, 4, 6, 8, 16])
  if k < 0.64: return a.maximum(expr(rng, U, dt, depth - 1, variables))
  if k < 0.72: return a * expr(rng, U, dt, depth - 1, variables)
  if k < 0.80:
    cond = (a < expr(rng, U, dt, depth - 1, variables)) if rng.random() < 0.6 else (a != rng.randint(0, 6))
    if rng.random() < 0.3: cond = cond & (expr(rng, U, dt, 1, variables) < rng.randint(1, 20))
    return cond.where(expr(rng, U, dt, depth - 1, variables), expr(rng, U, dt, depth - 1, variables))
  if k < 0.86: return a.cast(dt.int).cast(dt.index)
  if k < 0.93: return a + rng.randint(-10, 10)
  return (a < rng.randint(-4, 20)).where(a, 0)

def variables(rng, U, dt):
  vs = [U.variable(n, rng.randint(-5, 2), rng.randint(3, 40)) for n in "abcd"]
  vs += [U.variable("n", 1, rng.randint(2, 512)), U.range(rng.randint(2, 33), 0), U.range(rng.randint(2, 17), 1)]
  return vs

def build(seed, U, dt):
  rng = random.Random(seed)
  return expr(rng, U, dt, rng.randint(2, 5), variables(rng, U, dt))

@pytest.mark.parametrize("chunk", range(N_EXPRS // SEEDS_PER_CHUNK))
def test_simplify_matches_tinygrad(chunk):
  same_render = same_graph = 0
  failures = []
  for seed in range(chunk * SEEDS_PER_CHUNK, (chunk + 1) * SEEDS_PER_CHUNK):
    t, c = build(seed, TgUOp, tg_dtypes), build(seed, tinyc.UOp, tinyc.dtypes)
    assert from_tinygrad(t) is c, seed
    ts, cs = t.simplify(), c.simplify()
    same_graph += from_tinygrad(ts) is cs
    rt, rc = ts.render(simplify=False), cs.render(simplify=False)
    same_render += rt == rc
    if rt != rc or (ts.vmin, ts.vmax) != (cs.vmin, cs.vmax): failures.append((seed, rt, rc))
  assert not failures, f"{len(failures)} of {SEEDS_PER_CHUNK} differ, first: {failures[:3]}"
  assert same_graph == SEEDS_PER_CHUNK
