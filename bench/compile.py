"""Compile time per kernel over the test corpus: tinyc's LLVM (in process, LLVM C API), tinyc's clang (a subprocess + ld),
tinygrad 0.12.0's default CPU compile (ClangJITCompiler: clang + its ELF loader) and tinygrad's CPU_LLVM=1 compile
(CPULLVMCompiler through ctypes), on the same sources (each kernel with tinygrad's heuristic opts for that renderer); then
tinyc's compile throughput with 1 and 2 threads, and the load time of a program (ORC JIT link vs memfd + dlopen).

  python bench/compile.py [N]     N kernels of the corpus (default: all for LLVM, the first 40 for the clang paths)

No compile cache is involved: every compile is a real one. The machine's other load shows in the thread figures."""
import pathlib, sys, time
from concurrent.futures import ThreadPoolExecutor
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
import corpus
import tinyc
from tinyc.codegen import get_program
from tinyc.tinygrad import from_tinygrad
from tinygrad.codegen import get_program as tg_get_program
from tinygrad.renderer.cstyle import ClangRenderer as TgClangRenderer
from tinygrad.renderer.llvmir import LLVMRenderer as TgLLVMRenderer
from tinygrad.runtime.support.compiler_cpu import ClangJITCompiler as TgClangJITCompiler, CPULLVMCompiler as TgCPULLVMCompiler

N = int(sys.argv[1]) if len(sys.argv) > 1 else None

def tc_opts(opts): return tuple(tinyc.Opt(getattr(tinyc.OptOps, o.op.name), o.axis, o.arg) for o in opts)

def sources():
  """[(LLVM function name, LLVM IR, C source, C function name)]: tinyc renders both (identical to tinygrad's texts), without compiling"""
  llvm, clang, tg_llvm, tg_clang = tinyc.LLVMRenderer(), tinyc.ClangRenderer(), TgLLVMRenderer(), TgClangRenderer()
  llvm.compiler = None   # render only
  out = []
  for _, ast in corpus.kernel_asts()[:N]:
    t = from_tinygrad(ast)
    ir = get_program(t, llvm, opts=tc_opts(tg_get_program(ast, tg_llvm).applied_opts))
    c = get_program(t, clang, opts=tc_opts(tg_get_program(ast, tg_clang).applied_opts))
    out.append((ir.function_name, ir.src, c.src, c.function_name))
  return out

def per_kernel_ms(compile_fn, srcs):
  t0 = time.perf_counter()
  for s in srcs: compile_fn(s)
  return (time.perf_counter() - t0) * 1e3 / len(srcs)

def threaded_ms(compile_fn, srcs, threads):
  """wall ms per kernel compiling srcs on `threads` threads"""
  with ThreadPoolExecutor(threads) as ex:
    list(ex.map(compile_fn, srcs[:threads]))   # warm each thread's LLVM state
    t0 = time.perf_counter()
    list(ex.map(compile_fn, srcs))
  return (time.perf_counter() - t0) * 1e3 / len(srcs)

def main():
  srcs = sources()
  irs, cs = [s[1] for s in srcs], [s[2] for s in srcs]
  few = 40 if N is None else len(srcs)
  tc_llvm, tc_clang, tg_clang, tg_llvm = tinyc.CPULLVMCompiler(), tinyc.ClangCompiler(), TgClangJITCompiler(), TgCPULLVMCompiler()
  tc_llvm.compile(irs[0]), tg_llvm.compile(irs[0])   # LLVM's one-time setup, both
  rows = {
    "tinyc LLVM (in process)": per_kernel_ms(tc_llvm.compile, irs),
    "tinygrad CPU_LLVM=1 (ctypes)": per_kernel_ms(tg_llvm.compile, irs),
    "tinyc clang (subprocess + ld)": per_kernel_ms(tc_clang.compile, cs[:few]),
    "tinygrad clang (its default CPU path)": per_kernel_ms(tg_clang.compile, cs[:few]),
  }
  print(f"compile ms per kernel ({len(irs)} kernels for LLVM, {few} for clang):")
  base = rows["tinyc LLVM (in process)"]
  for k, v in rows.items(): print(f"  {k:40s} {v:8.2f} ms   {v / base:6.2f}x tinyc LLVM's time")
  one, two = threaded_ms(tc_llvm.compile, irs, 1), threaded_ms(tc_llvm.compile, irs, 2)
  print(f"tinyc LLVM throughput: 1 thread {1e3 / one:.0f} kernels/s, 2 threads {1e3 / two:.0f} kernels/s ({one / two:.2f}x)")
  one, two = threaded_ms(tc_clang.compile, cs[:few], 1), threaded_ms(tc_clang.compile, cs[:few], 2)
  print(f"tinyc clang throughput: 1 thread {1e3 / one:.0f} kernels/s, 2 threads {1e3 / two:.0f} kernels/s ({one / two:.2f}x)")
  objs = [(name, tc_llvm.compile(ir)) for name, ir, _, _ in srcs[:few]]
  sos = [(name, tc_clang.compile(c)) for _, _, c, name in srcs[:few]]
  for what, libs in (("ORC JIT link (LLVM object)", objs), ("memfd + dlopen (clang .so)", sos)):
    t0 = time.perf_counter()
    for name, lib in libs: tinyc.CPUProgram(name, lib)
    print(f"load {what:28s} {(time.perf_counter() - t0) * 1e3 / len(libs):6.2f} ms per program")

if __name__ == "__main__": main()
