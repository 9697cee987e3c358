"""The tinygrad bridge on a cold first run: one training step of a small MLP (SGD), every kernel compiled, with tinygrad
0.12.0 alone and with tinyc.tinygrad installed, each in a fresh process (no method cache) with the compile caches off
(tinygrad's CACHELEVEL=0 and DISABLE_COMPILER_CACHE=1; tinyc reads CACHELEVEL too).

  python bench/bridge.py [REPEATS]     (default 3; the median run of each side is shown)
  CPU_LLVM=1 python bench/bridge.py    the same through the LLVM renderer

The wall time of the step (from the first realize to the loss on the host, imports and model setup excluded) splits
into codegen (tinygrad: get_program less its compiles; bridge: AST conversion and tinyc's codegen), compile (wall time
the step spent waiting for compiles: tinygrad compiles in line; the bridge waits only for what its pool has not finished
ahead), run (the kernels' launches) and the rest (scheduling: tinygrad's Python either way). Compile CPU is the sum of
every compile's own time, on whatever thread it ran."""
import json, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def child(bridge_on: bool):
  import threading
  if bridge_on:
    import tinyc.tinygrad as bridge
    bridge.install()
  import tinygrad.codegen, tinygrad.engine.realize as realize
  from tinygrad import Tensor, nn, Device
  from tinygrad.nn.optim import SGD
  zero = {"get_program": 0.0, "compile_cpu": 0.0, "compile_inline": 0.0, "compile_in_get_program": 0.0, "run": 0.0, "kernels": 0}
  timing, main, in_get_program, lock = dict(zero), threading.main_thread(), [False], threading.Lock()
  def timed(fn, key):
    def wrapper(*args, **kw):
      st = time.perf_counter()
      if key == "get_program": in_get_program[0] = True
      try: return fn(*args, **kw)
      finally:
        dt = time.perf_counter() - st
        with lock: timing[key] += dt   # the bridge's compiles finish on its pool's threads
        if key == "get_program": in_get_program[0] = False
        if key == "compile_cpu" and threading.current_thread() is main:
          timing["compile_inline"] += dt
          if in_get_program[0]: timing["compile_in_get_program"] += dt
    return wrapper
  comp = type(Device["CPU"].compiler)   # tinygrad's compiler, and the bridge's: its libs made by tinyc, on the pool's threads
  comp.compile = timed(comp.compile, "compile_cpu")
  if bridge_on:
    bridge._JitLoaded.compile_cached = timed(bridge._JitLoaded.compile_cached, "compile_cpu")
  realize.CompiledRunner.__call__ = timed(realize.CompiledRunner.__call__, "run")
  gp = realize.get_program
  def counted(*a, **kw):
    timing["kernels"] += 1
    return gp(*a, **kw)
  realize.get_program = timed(counted, "get_program")

  Tensor.manual_seed(0)
  l1, l2, l3 = nn.Linear(64, 128), nn.Linear(128, 64), nn.Linear(64, 10)
  opt = SGD([l1.weight, l1.bias, l2.weight, l2.bias, l3.weight, l3.bias], lr=0.01, momentum=0.9)
  x, y = Tensor.randn(32, 64).realize(), Tensor(list(range(10)) * 3 + [0, 1]).realize()
  timing.update(zero)   # the step only
  if bridge_on: bridge.reset_stats()
  st = time.perf_counter()
  with Tensor.train():
    opt.zero_grad()
    loss = l3(l2(l1(x).relu()).relu()).sparse_categorical_crossentropy(y)
    loss.backward()
    opt.step()
    value = loss.item()
  wall = time.perf_counter() - st
  out = {"wall": wall, "loss": value, **timing}
  if bridge_on:
    s = bridge.stats()
    out.update(codegen=s["codegen"], compile=s["compile_wait"] + timing["compile_inline"] - timing["compile_in_get_program"],
               routed=s["routed"], fallback=s["fallback"])
  else:
    out.update(codegen=timing["get_program"] - timing["compile_in_get_program"], compile=timing["compile_inline"])
  print("RESULT " + json.dumps(out))

def run_child(bridge_on: bool) -> dict:
  env = {**os.environ, "CACHELEVEL": "0", "DISABLE_COMPILER_CACHE": "1", "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
  p = subprocess.run([sys.executable, __file__, "--child", "1" if bridge_on else "0"], env=env, capture_output=True, text=True)
  if p.returncode != 0: raise SystemExit(p.stderr)
  return json.loads(next(l for l in p.stdout.splitlines() if l.startswith("RESULT "))[7:])

def median_run(runs):
  return sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]

def main(repeats: int):
  tg_runs, tc_runs = [], []
  for _ in range(repeats):   # interleaved, so both sides see the machine's load alike
    tg_runs.append(run_child(False))
    tc_runs.append(run_child(True))
  tg, tc = median_run(tg_runs), median_run(tc_runs)
  assert tg["loss"] == tc["loss"], (tg["loss"], tc["loss"])
  print(f"cold training step (MLP 64-128-64-10, SGD momentum, batch 32), {tg['kernels']} kernels, median of {repeats}, "
        f"renderer {'LLVM' if os.environ.get('CPU_LLVM') == '1' else 'ClangJIT'}; bridge: routed {tc['routed']}, fallback {tc['fallback']}")
  print(f"{'':14s}{'tinygrad':>10s}{'bridge':>10s}{'ratio':>8s}")
  for key in ("wall", "codegen", "compile", "run"):
    print(f"{key:14s}{tg[key]*1e3:8.1f}ms{tc[key]*1e3:8.1f}ms{tg[key]/max(tc[key], 1e-9):7.1f}x")
  rest = lambda r: r["wall"] - r["codegen"] - r["compile"] - r["run"]
  print(f"{'rest':14s}{rest(tg)*1e3:8.1f}ms{rest(tc)*1e3:8.1f}ms{rest(tg)/max(rest(tc), 1e-9):7.1f}x")
  print(f"{'compile CPU':14s}{tg['compile_cpu']*1e3:8.1f}ms{tc['compile_cpu']*1e3:8.1f}ms")
  share = lambda r: r["codegen"] / r["wall"]
  print(f"codegen share of the wall: tinygrad {share(tg):.1%}, bridge {share(tc):.1%} ({share(tg)/max(share(tc), 1e-9):.1f}x cut); "
        f"codegen time {tg['codegen']/max(tc['codegen'], 1e-9):.1f}x less; whole cold step {tg['wall']/tc['wall']:.2f}x faster")
  print("walls: tinygrad " + " ".join(f"{r['wall']:.2f}" for r in tg_runs) + " s; bridge " + " ".join(f"{r['wall']:.2f}" for r in tc_runs) + " s")
  print("codegen: tinygrad " + " ".join(f"{r['codegen']*1e3:.0f}" for r in tg_runs) + " ms; bridge " +
        " ".join(f"{r['codegen']*1e3:.1f}" for r in tc_runs) + " ms (the runs in order: the machine's noise)")

if __name__ == "__main__":
  if sys.argv[1:2] == ["--child"]: child(sys.argv[2] == "1")
  else: main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
