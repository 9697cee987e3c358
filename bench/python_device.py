"""The PYTHON device: per corpus kernel, tinyc's interpreter (C) against tinygrad 0.12.0's (Python) on the same program
(tinygrad's PythonRenderer output with its heuristics' opts) and the same buffers; prints ms and the ratio, checks the
outputs agree. Run from the repository root: python bench/python_device.py [name-prefix ...]"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from corpus import kernel_asts
from test_python_device import tg_program, inputs_for, run_tinygrad, run_tinyc_interp, same_outputs

def main(prefixes):
  rows, t_tg, t_tc = [], 0.0, 0.0
  print(f"{'kernel':28s} {'uops':>5s} {'tinygrad ms':>12s} {'tinyc ms':>10s} {'ratio':>8s}  same")
  for name, ast in kernel_asts():
    if prefixes and not any(name.startswith(p) for p in prefixes): continue
    t0 = time.perf_counter()
    p = tg_program(ast)
    tcg = time.perf_counter() - t0
    init = inputs_for(p)
    (theirs, a), (ours, b) = run_tinygrad(p, init), run_tinyc_interp(p, init)
    ok = same_outputs(p, ours, theirs) is None
    t_tg, t_tc = t_tg + a, t_tc + b
    rows.append((name, a, b, ok))
    print(f"{name:28s} {len(p.uops):5d} {a*1e3:12.2f} {b*1e3:10.3f} {a/max(b,1e-9):8.0f}x  {'yes' if ok else 'NO'}"
          f"{'  (bit for bit)' if ok and ours == theirs else ''}   [tinygrad get_program {tcg:.2f}s]", flush=True)
  print(f"\n{len(rows)} kernels, {sum(r[3] for r in rows)} agree; tinygrad {t_tg:.2f}s, tinyc {t_tc:.3f}s: {t_tg/max(t_tc,1e-9):.0f}x")

if __name__ == "__main__": main(sys.argv[1:])
