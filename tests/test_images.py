"""Image dtypes and tinygrad's image handling, against tinygrad 0.12.0 (the oracle, computed in each test).

ImageDType (dtypes.imagef / imageh): fields, pitch, vec/ptr/scalar, repr, pickling, interning, bad shapes. The pipeline with
image buffers (make_images, the float4 image upcast, image_fixup's int2 texel coordinates, image valid simplification) and
OpenCLRenderer (image2d_t arguments, read_imagef / write_imagef, the sampler): tinyc's get_program on the same AST gives
tinygrad's uops and source. IMAGE is read at import by both (a ContextVar in tinygrad, its environment value in tinyc), so
the IMAGE=1 and IMAGE=2 runs are child processes started with it set."""
import json, os, pickle, subprocess, sys
import pytest
from tinygrad import Tensor
from tinygrad.dtype import dtypes as tg_dtypes, AddrSpace as TgAddrSpace, ImageDType as TgImageDType
from tinygrad.codegen import get_program as tg_get_program
from tinygrad.codegen.opt import Opt as TgOpt, OptOps as TgOptOps
from tinygrad.codegen.opt.heuristic import hand_coded_optimizations as tg_hand_coded
from tinygrad.codegen.opt.postrange import Scheduler as TgScheduler
from tinygrad.renderer.cstyle import OpenCLRenderer as TgCL
from tinygrad.uop.ops import Ops as TgOps
from test_codegen import same_source, same_uops
import tinyc
from tinyc.codegen import get_program
from tinyc.tinygrad import from_tinygrad, to_tinygrad

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from corpus import kernel_asts  # noqa: E402
from passes import capture_apply_opts_inputs  # noqa: E402

def _outcome(f):
  """repr of f()'s value, or its exception's type name"""
  try: return repr(f())
  except Exception as e: return type(e).__name__

def _tc_opts(opts): return None if opts is None else [tinyc.Opt(tinyc.OptOps(o.op.value), o.axis, o.arg) for o in opts]

def _compare_program(ast, opts=None):
  """(same uops, same source), or the exception type names when either side raises (equal when both raise alike)"""
  try: p = tg_get_program(ast, TgCL(), opts)
  except Exception as e: p = e
  try: q = get_program(from_tinygrad(ast), tinyc.OpenCLRenderer(), _tc_opts(opts))
  except Exception as e: q = e
  if isinstance(p, Exception) or isinstance(q, Exception): return (type(p).__name__, type(q).__name__)
  return (same_uops(p, q), same_source(p, q), "image2d_t" in p.src)   # kernel names' process counters stripped

# ---------------------------------------------------------------- ImageDType

SHAPES = [(10,), (0, 4, 4), (-3, 4, 4), (), (4, 0, 4), (2, -5, 4), (64, 100, 4), (1, 1024, 4), (3, 7), (1, 1, 4), (128, 64, 4),
          (2, 200, 4), (33, 129, 4), (1, 70, 4), (1, 257, 4), (7, 3000, 4), (1, 16, 4)]
ATTRS = ["", ".pitch", ".size", ".shape", ".itemsize", ".base", ".vec(4)", ".vec(4).scalar()", ".vec(4).v", ".scalar()", ".nbytes()",
         ".vcount", ".count", ".name", ".fmt", ".priority", ".bitsize", "._pitch", ".addrspace", ".v", ".ptr()", ".vec(1)"]

@pytest.mark.parametrize("name", ["imagef", "imageh"])
def test_image_dtype_fields_as_tinygrad(name):
  for shape in SHAPES:
    for pitch in (-1, 256):
      for attr in ATTRS:
        got = [_outcome(lambda d=d: eval(f"d.{name}(shape, pitch){attr}")) for d in (tg_dtypes, tinyc.dtypes)]
        assert got[0] == got[1], (name, shape, pitch, attr)

def test_image_dtype_identity_pickle_and_promotion():
  img = tinyc.dtypes.imagef((2, 4, 4))
  assert isinstance(img, tinyc.ImageDType) and isinstance(img, tinyc.PtrDType) and type(img).__name__ == "ImageDType"
  assert img is tinyc.dtypes.imagef((2, 4, 4)) and img is not tinyc.dtypes.imagef((2, 4, 4), 256) and img is not tinyc.dtypes.imageh((2, 4, 4))
  assert img == tinyc.dtypes.imagef((2, 4, 4)) and img != tinyc.dtypes.imagef((2, 4, 5)) and hash(img) == hash(tinyc.dtypes.imagef((2, 4, 4)))
  for d in (img, img.vec(4), tinyc.dtypes.imageh((8, 16, 4), 512)):
    assert pickle.loads(pickle.dumps(d)) is d
    tg = to_tinygrad(tinyc.UOp(tinyc.Ops.DEFINE_GLOBAL, d, (), 0)).dtype
    assert repr(d.__reduce__()[1]) == repr(tg.__reduce__()[1]) and d.__reduce__()[0] is tinyc.ImageDType
    assert tinyc.ImageDType(*d.__reduce__()[1]) is d
  assert tinyc.ImageDType(100, 32, "imagef", "f", 1, None, tinyc.dtypes.float, tinyc.AddrSpace.GLOBAL, 1, 32, (2, 4, 4)) is img
  assert tinyc.dtypes.is_float(img) == tg_dtypes.is_float(tg_dtypes.imagef((2, 4, 4))) == True   # noqa: E712
  assert tinyc.least_upper_dtype(tinyc.dtypes.int, img) is img and tinyc.least_upper_float(img) is img
  assert img.ptr() is img and img.ptr(10) is img
  for local in (TgAddrSpace.LOCAL, tinyc.AddrSpace.LOCAL):
    d = tg_dtypes.imagef((2, 4, 4)) if local is TgAddrSpace.LOCAL else img
    with pytest.raises(AssertionError, match="images can't be local"): d.ptr(addrspace=local)

def test_bad_image_shapes_raise_as_tinygrad():
  """what tinygrad refuses (unhashable, not a tuple) raises TypeError in both; shapes too short for a pitch raise IndexError
  there; tinyc also refuses shapes of non-ints (TypeError) and widths past 2**40 (OverflowError) where tinygrad computes"""
  for shape in ([1, 2, 4], 5, None, "abc"):
    for name in ("imagef", "imageh"):
      with pytest.raises(TypeError): getattr(tg_dtypes, name)(shape)
      with pytest.raises(TypeError): getattr(tinyc.dtypes, name)(shape)
  for shape in ((10,), ()):
    with pytest.raises(IndexError): tg_dtypes.imagef(shape).pitch
    with pytest.raises(IndexError): tinyc.dtypes.imagef(shape).pitch
  with pytest.raises(TypeError): tinyc.dtypes.imagef((1.5, 2, 4))
  with pytest.raises(TypeError): tinyc.dtypes.imagef((1, 2, 4), "x")
  with pytest.raises(OverflowError): tinyc.dtypes.imagef((1, 2**70, 4))
  with pytest.raises(OverflowError): tinyc.dtypes.imagef((1, 2**50, 4)).pitch
  with pytest.raises(TypeError): tinyc.ImageDType(100, 32, "imagef", "f", 1, None, tinyc.dtypes.float, tinyc.AddrSpace.GLOBAL, 1, 32, [2, 4])
  with pytest.raises(TypeError): tinyc.ImageDType(100, 32, "imagef", "f", 1, None, 3, tinyc.AddrSpace.GLOBAL, 1, 32, (2, 4))
  odd = tinyc.ImageDType(100, 8, "imageb", "b", 1, None, tinyc.dtypes.float, tinyc.AddrSpace.GLOBAL, 1, 32, (2, 4, 4))
  with pytest.raises(ValueError): odd.pitch   # itemsize 1: tinygrad divides by log2(1) (ZeroDivisionError); tinyc refuses

def test_bridge_converts_image_dtypes_both_ways():
  for d in (tg_dtypes.imagef((2, 4, 4)), tg_dtypes.imageh((1, 8, 4), 512), tg_dtypes.imagef((2, 4, 4)).vec(4)):
    u = from_tinygrad(TgImageAst.define(d))
    assert isinstance(u.dtype, tinyc.ImageDType) and repr(u.dtype) == repr(d) and u.dtype._pitch == d._pitch
    assert to_tinygrad(u).dtype is d

# ---------------------------------------------------------------- hand-made image kernels

class TgImageAst:
  """tinygrad kernel ASTs with image DEFINE_GLOBALs, as tinygrad's unit tests make them: a scheduled kernel whose buffers'
  dtypes are replaced"""
  @staticmethod
  def define(dt):
    from tinygrad.uop.ops import UOp
    return UOp(TgOps.DEFINE_GLOBAL, dt, (), 0)
  @staticmethod
  def with_images(t, images):
    """the first SINK kernel of t's schedule, DEFINE_GLOBAL arg -> the image dtype in `images`"""
    ast = next(si.ast for si in t.schedule() if si.ast.op is TgOps.SINK)
    subs = {u: u.replace(dtype=images[u.arg]) for u in ast.toposort() if u.op is TgOps.DEFINE_GLOBAL and u.arg in images}
    return ast.substitute(subs)

def _image_kernels():
  e = lambda *s: Tensor.empty(*s, device="CPU")
  img = tg_dtypes.imagef
  return [
    ("copy_into_image", TgImageAst.with_images(e(8, 16).contiguous() + 1, {0: img((8, 4, 4))})),
    ("read_image", TgImageAst.with_images(e(8, 16) * 2, {1: img((8, 4, 4))})),
    ("image_to_image", TgImageAst.with_images(e(4, 32).exp2(), {0: img((4, 8, 4)), 1: img((4, 8, 4))})),
    ("image_sum", TgImageAst.with_images(e(16, 16).sum(1), {1: img((16, 4, 4))})),
    ("image_transposed_read", TgImageAst.with_images(e(16, 8).T.contiguous(), {1: img((16, 2, 4))})),
    ("image_pad", TgImageAst.with_images(e(8, 16).pad(((0, 0), (4, 4))) + 1, {1: img((8, 4, 4))})),
    ("half_image", TgImageAst.with_images(e(8, 16) + 1, {1: tg_dtypes.imageh((8, 4, 4))})),
    ("broadcast", TgImageAst.with_images(e(8, 16) + e(16), {0: img((8, 4, 4)), 2: img((1, 4, 4))})),
    ("sum_axis0", TgImageAst.with_images(e(16, 16).sum(0), {1: img((16, 4, 4))})),
    ("matmul", TgImageAst.with_images(e(8, 16) @ e(16, 8), {1: img((8, 4, 4)), 2: img((16, 2, 4))})),
    ("permuted_store", TgImageAst.with_images(e(6, 6).permute(1, 0).contiguous(), {0: img((6, 2, 4))})),
    ("stride3_read", TgImageAst.with_images(e(12, 12)[:, ::3].contiguous(), {1: img((12, 3, 4))})),
  ]

IMAGE_KERNELS = _image_kernels()
OPTS = [None, [], [TgOpt(TgOptOps.UPCAST, 0, 4)], [TgOpt(TgOptOps.UPCAST, 1, 4)], [TgOpt(TgOptOps.LOCAL, 0, 2), TgOpt(TgOptOps.UPCAST, 1, 4)],
        [TgOpt(TgOptOps.UNROLL, 0, 4)]]

def test_image_kernels_pipeline_identity():
  """the same uops and source as tinygrad's for every kernel and opts; where tinygrad refuses (an image store not upcast
  to 4, an opt that does not fit), the same exception type"""
  images = 0
  for name, ast in IMAGE_KERNELS:
    for opts in OPTS:
      r = _compare_program(ast, opts)
      assert r[0] == r[1] if isinstance(r[0], str) else r[:2] == (True, True), (name, opts, r)
      images += not isinstance(r[0], str) and r[2]
  assert images >= 30   # most of them render image2d_t arguments, read_imagef and write_imagef

def test_image_kernel_scheduler_identity():
  """Scheduler + hand_coded_optimizations on tinygrad's apply_opts input: the same opts (the float4 image upcast first)"""
  for name, ast in capture_apply_opts_inputs(IMAGE_KERNELS, TgCL()):
    tk, ck = tg_hand_coded(TgScheduler(ast, TgCL())), tinyc.hand_coded_optimizations(tinyc.Scheduler(from_tinygrad(ast), tinyc.OpenCLRenderer()))
    assert [(o.op.name, o.axis, o.arg) for o in tk.applied_opts] == [(o.op.name, o.axis, o.arg) for o in ck.applied_opts], name
    assert from_tinygrad(tk.ast) is ck.ast, name

def test_image_store_not_upcast_raises():
  """upcasting the row axis leaves the store to the image one element at a time: tinygrad's AssertionError"""
  ast, opts = dict(IMAGE_KERNELS)["broadcast"], [TgOpt(TgOptOps.UPCAST, 0, 4)]
  with pytest.raises(AssertionError, match="image store"): tg_get_program(ast, TgCL(), opts)
  with pytest.raises(AssertionError, match="image store"): get_program(from_tinygrad(ast), tinyc.OpenCLRenderer(), _tc_opts(opts))

# ---------------------------------------------------------------- OpenCLRenderer

def test_opencl_renderer_settings_as_tinygrad():
  tg, tc = TgCL(), tinyc.OpenCLRenderer()
  for attr in ("device", "suffix", "has_local", "has_shared", "has_aux", "global_max", "local_max", "shared_max", "supports_float4",
               "kernel_typedef", "buffer_prefix", "buffer_suffix", "smem_align", "smem_prefix", "smem_prefix_for_cast", "arg_int_prefix",
               "barrier", "extra_args", "float4", "float4_style", "gep_arr_threshold", "infinity", "nan"):
    assert getattr(tg, attr) == getattr(tc, attr), attr
  assert {repr(k): v for k, v in tg.type_map.items()} == {repr(k): v for k, v in tc.type_map.items()}
  assert {k: f(2) for k, f in tg.code_for_workitem.items()} == {k: f(2) for k, f in tc.code_for_workitem.items()}
  assert [k.name for k in tg.code_for_op] == [k.name for k in tc.code_for_op]
  from tinyc.renderer.cstyle import OpenCLRenderer
  assert tinyc.OpenCLRenderer is OpenCLRenderer and isinstance(tc, tinyc.CStyleLanguage)
  for tgd, tcd in ((tg_dtypes.imagef((2, 4, 4)), tinyc.dtypes.imagef((2, 4, 4))), (tg_dtypes.half.ptr(4), tinyc.dtypes.half.ptr(4)),
                   (tg_dtypes.bfloat16.vec(4), tinyc.dtypes.bfloat16.vec(4)), (tg_dtypes.uint8, tinyc.dtypes.uint8)):
    for mutable in (True, False):
      assert tg.render_dtype(tgd, mutable) == tc.render_dtype(tcd, mutable)
    assert tg.render_dtype(tgd) == tc.render_dtype(tcd)

def test_opencl_aux_and_render_kernel():
  ast = IMAGE_KERNELS[2][1]
  p = tg_get_program(ast, TgCL())
  uops = [from_tinygrad(u) for u in p.uops]
  assert repr(TgCL().aux(p.uops)) == repr(tinyc.OpenCLRenderer().aux(uops))
  q = get_program(from_tinygrad(ast), tinyc.OpenCLRenderer())
  assert repr(p.aux) == repr(q.aux)
  tg_parts, tc_parts = TgCL()._render(p.uops), tinyc.OpenCLRenderer()._render(uops)
  assert tg_parts[:2] == tc_parts[:2]
  for prefix in (None, [], ["// one"]):
    assert TgCL().render_kernel(*tg_parts, p.uops, prefix) == tinyc.OpenCLRenderer().render_kernel(*tc_parts, uops, prefix)
  class Mine(tinyc.OpenCLRenderer):   # a Python subclass overrides a setting, as one of tinygrad's would
    barrier = "work_group_barrier(CLK_LOCAL_MEM_FENCE);"
  assert Mine().render(uops) == tinyc.OpenCLRenderer().render(uops)
  with pytest.raises(TypeError): tinyc.OpenCLRenderer().aux([1, 2])
  with pytest.raises(TypeError): tinyc.OpenCLRenderer().render_kernel("k", [], [("data0", (3, True))], uops)

def test_opencl_renderer_on_the_corpus():
  """every other corpus kernel (tinygrad's get_program is most of this file's time; the IMAGE=1 run takes others): tinyc's
  pipeline gives tinygrad's uops and source, and tinyc's renderer renders tinygrad's uops to tinygrad's text"""
  n = 0
  for name, ast in kernel_asts()[::2]:
    p = tg_get_program(ast, TgCL())
    assert tinyc.OpenCLRenderer().render([from_tinygrad(u) for u in p.uops]) == p.src, name
    q = get_program(from_tinygrad(ast), tinyc.OpenCLRenderer())
    assert same_uops(p, q) and same_source(p, q), name
    n += 1
  assert n >= 50

# ---------------------------------------------------------------- IMAGE=1 and IMAGE=2, in a child each

def _child(mode):
  """run this file's _child_main(mode) with IMAGE=mode; its JSON results"""
  env = dict(os.environ, IMAGE=str(mode), PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), os.environ.get("PYTHONPATH", "")]))
  out = subprocess.run([sys.executable, os.path.abspath(__file__), str(mode)], env=env, capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  return json.loads(out.stdout.strip().splitlines()[-1])

def test_image2_kernels_identity():
  """IMAGE=2: tinygrad's image_conv2d / image_dot kernels (its own image buffers), default opts and a few of tinygrad's"""
  res = _child(2)
  assert len(res) >= 12 and sum(r[1][2] for r in res if not isinstance(r[1][0], str)) >= 8
  for name, r in res: assert r[0] == r[1] if isinstance(r[0], str) else r[:2] == [True, True], (name, r)

def test_image1_make_images_identity():
  """IMAGE=1 on the CL renderer: make_images turns small float buffers into images; tinyc's make_images gives tinygrad's AST
  and the pipeline tinygrad's program, on the corpus kernels it changes"""
  res = _child(1)
  assert len(res) >= 10
  for name, r in res: assert r == [True, True, True, True], (name, r)

def _child_main(mode):
  from tinygrad.helpers import Context
  out = []
  if mode == 2:
    e = lambda *s: Tensor.empty(*s, device="CPU")
    x = e(1, 16, 8, 8)
    progs = [("conv_relu", x.conv2d(e(16, 16, 3, 3)).relu()), ("conv_pad", x.conv2d(e(8, 16, 3, 3), padding=1)),
             ("dot", e(4, 16).dot(e(16, 8))), ("depthwise", x.conv2d(e(16, 1, 3, 3), groups=16))]
    for pname, t in progs:
      for k, si in enumerate(s for s in t.schedule() if s.ast.op is TgOps.SINK):
        for j, opts in enumerate([None, [TgOpt(TgOptOps.LOCAL, 0, 2)]] if pname == "conv_relu" else [None]):
          r = _compare_program(si.ast, opts)
          out.append((f"{pname}/{k}/{j}", list(r)))
  else:
    from tinygrad.codegen.opt.postrange import make_images as tg_make_images
    with Context(IMAGE=0): asts = kernel_asts()   # tinygrad's Tensor takes its image paths under IMAGE=1: build them without
    changed = [(n, a) for n, a in asts if tg_make_images(a, TgCL()) is not a]
    for name, ast in changed[::3]:
      same_ast = from_tinygrad(tg_make_images(ast, TgCL())) is tinyc._C.make_images(from_tinygrad(ast), tinyc.OpenCLRenderer())
      r = _compare_program(ast)
      out.append((name, [same_ast, *r] if not isinstance(r[0], str) else [same_ast, *r, False]))
  print(json.dumps(out))

if __name__ == "__main__":
  _child_main(int(sys.argv[1]))
