"""Image kernels through the OpenCL renderer: tinyc's get_program against tinygrad 0.12.0's, side by side in one process.

  IMAGE=2 python bench/images.py

The kernels are tinygrad's own image kernels (IMAGE=2: image_conv2d and image_dot make image buffers) and the test file's
hand-made ones. Each get_program runs on freshly unpickled ASTs (nothing cached on the nodes), default opts (the
heuristics, float4 image upcast first); best of 3 runs of the whole set, ms per kernel, and the ratio."""
import gc, pathlib, pickle, sys, time
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from tinygrad import Tensor
from tinygrad.codegen import get_program as tg_get_program
from tinygrad.renderer.cstyle import OpenCLRenderer as TgCL
from tinygrad.uop.ops import Ops as TgOps
import tinyc
from tinyc.codegen import get_program
from tinyc.tinygrad import from_tinygrad
import test_images

def kernels():
  e = lambda *s: Tensor.empty(*s, device="CPU")
  x = e(1, 16, 8, 8)
  progs = [x.conv2d(e(16, 16, 3, 3)).relu(), x.conv2d(e(8, 16, 3, 3), padding=1), e(4, 16).dot(e(16, 8))]
  asts = [si.ast for t in progs for si in t.schedule() if si.ast.op is TgOps.SINK] + [a for _, a in test_images.IMAGE_KERNELS]
  return pickle.dumps([(a, from_tinygrad(a)) for a in asts])

def best(fn, blob, side):
  times = []
  for _ in range(3):
    asts = [pair[side] for pair in pickle.loads(blob)]
    gc.disable()
    st = time.perf_counter()
    for a in asts: fn(a)
    times.append((time.perf_counter() - st) / len(asts))
    gc.enable()
  return min(times) * 1e3

if __name__ == "__main__":
  blob = kernels()
  n = len(pickle.loads(blob))
  tg = best(lambda a: tg_get_program(a, TgCL()), blob, 0)
  tc = best(lambda a: get_program(a, tinyc.OpenCLRenderer()), blob, 1)
  print(f"{n} image kernels, get_program through OpenCLRenderer: tinygrad {tg:.2f} ms/kernel, tinyc {tc:.3f} ms/kernel, "
        f"{tg / tc:.0f}x")
