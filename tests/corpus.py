"""The kernel corpus of the codegen tests: kernel ASTs of real tinygrad 0.12.0 programs.

Each program is scheduled by tinygrad on device CPU; every SINK kernel of its schedule is one corpus AST (kept as
tinygrad's UOp, converted with tinyc.tinygrad.from_tinygrad where a test needs it). ASTs are deduplicated by key.
The tensors are built lazily: scheduling realizes nothing, so no kernel runs here."""
import functools
from tinygrad import Tensor, Variable, dtypes
from tinygrad.uop.ops import Ops

def _programs():
  """(name, function building the tensor); all on CPU, seeded so the ASTs are the same every run"""
  Tensor.manual_seed(0)
  r = Tensor.rand
  v = Variable("n", 1, 32).bind(10)
  return [
    ("matmul", lambda: r(16, 32) @ r(32, 8)),
    ("matmul_big", lambda: r(64, 64) @ r(64, 64)),
    ("batched_matmul", lambda: r(4, 8, 16) @ r(4, 16, 8)),
    ("matvec", lambda: r(64, 32) @ r(32)),
    ("conv2d", lambda: r(1, 3, 8, 8).conv2d(r(4, 3, 3, 3))),
    ("conv2d_stride_pad", lambda: r(2, 4, 9, 9).conv2d(r(8, 4, 3, 3), stride=2, padding=1)),
    ("conv1d", lambda: r(1, 2, 16).conv2d(r(3, 2, 5))),
    ("maxpool", lambda: r(1, 2, 8, 8).max_pool2d()),
    ("avgpool", lambda: r(1, 2, 8, 8).avg_pool2d()),
    ("softmax", lambda: r(16, 32).softmax(-1)),
    ("log_softmax", lambda: r(8, 20).log_softmax(0)),
    ("layernorm", lambda: r(8, 32).layernorm()),
    ("attention", lambda: Tensor.scaled_dot_product_attention(r(1, 2, 8, 16), r(1, 2, 8, 16), r(1, 2, 8, 16))),
    ("sum", lambda: r(16, 32).sum(axis=1)),
    ("sum_all", lambda: r(33, 17).sum()),
    ("max", lambda: r(16, 32).max()),
    ("argmax", lambda: r(16, 32).argmax(axis=0)),
    ("cumsum", lambda: r(33).cumsum()),
    ("mean_var", lambda: r(12, 10).var(axis=1)),
    ("gather", lambda: r(10, 6)[Tensor([1, 3, 9, 0])]),
    ("gather_dim", lambda: r(5, 7).gather(1, Tensor([[0, 2], [1, 1], [6, 3], [2, 2], [0, 5]]))),
    ("pad_permute", lambda: r(16, 32).pad(((1, 2), (0, 3))).permute(1, 0) + 1),
    ("shrink_flip", lambda: r(12, 10)[2:9, 1:8].flip(0) * 2),
    ("expand_add", lambda: r(8, 1) + r(1, 12)),
    ("cast_half", lambda: (r(8, 8).cast(dtypes.half) * 3).cast(dtypes.float)),
    ("cast_bfloat16", lambda: r(8, 8).cast(dtypes.bfloat16) + 1),
    ("cast_int8", lambda: (r(8, 8) * 100).cast(dtypes.int8)),
    ("cast_uint32", lambda: (r(8, 8) * 1000).cast(dtypes.uint32) // 7),
    ("cast_float64", lambda: r(8, 8).cast(dtypes.float64).sqrt() + 1),
    ("exp_log", lambda: r(10, 10).exp() + (r(10, 10) + 1).log()),
    ("sin_sqrt", lambda: r(17).sin() * r(17).sqrt()),
    ("pow", lambda: (r(9) + 0.5).pow(r(9))),
    ("where_cmp", lambda: (r(16, 32).exp() > 1).where(r(16, 32), r(16, 32).cast(dtypes.half).cast(dtypes.float) * 2)),
    ("int_math", lambda: (Tensor.arange(40).reshape(5, 8) * 3 // 2 % 7).cast(dtypes.int8)),
    ("bool_ops", lambda: ((r(20) > 0.5) & (r(20) < 0.8)) | (r(20) == 0)),
    ("relu_chain", lambda: (r(32, 4) * 2 - 1).relu().sigmoid().tanh()),
    ("symbolic_sum", lambda: r(32, 8)[:v].sum(0)),
    ("symbolic_elementwise", lambda: r(32, 8)[:v] * 2 + 1),
    ("arange_reduce", lambda: Tensor.arange(64).reshape(8, 8).sum(1)),
    ("transpose_contig", lambda: r(24, 12).T.contiguous()),
  ]

def program_names() -> list[str]: return [name for name, _ in _programs()]

@functools.cache
def kernel_asts() -> tuple[tuple[str, object], ...]:
  """(program name / kernel number, tinygrad SINK AST) for every distinct kernel of every program"""
  out, seen = [], set()
  for name, build in _programs():
    sched, _ = build().schedule_with_vars()
    for i, si in enumerate(x for x in sched if x.ast.op is Ops.SINK):
      if si.ast.key in seen: continue
      seen.add(si.ast.key)
      out.append((f"{name}/{i}", si.ast))
  return tuple(out)
