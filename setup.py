"""Builds the tinyc._C extension from every C file under csrc/.

TINYC_SANITIZE=1 builds with AddressSanitizer + UBSan (see `make asan-test`)."""
import glob, os, shutil, subprocess
import numpy
from setuptools import setup, Extension

sources = sorted(glob.glob("csrc/**/*.c", recursive=True))
headers = sorted(glob.glob("csrc/**/*.h", recursive=True))
cflags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-missing-field-initializers", "-Wvla", "-O2", "-g"]
ldflags = []
if os.environ.get("TINYC_SANITIZE"):
  san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]
  cflags, ldflags = cflags + san + ["-O1", "-DTINYC_LEAK_CHECK"], ldflags + san

def llvm_flags():
  """cflags, ldflags and libs of LLVM when llvm-config ($LLVM_CONFIG, else llvm-config-19) is here: tinyc then compiles LLVM IR
  in process (csrc/devices/support/compiler_llvm.c); without it the module builds and using LLVM raises a clear error"""
  tool = os.environ.get("LLVM_CONFIG") or shutil.which("llvm-config-19")
  if not tool: return [], []
  try: out = {a: subprocess.check_output([tool, a], text=True).split() for a in ("--includedir", "--libdir", "--ldflags", "--libs")}
  except (OSError, subprocess.CalledProcessError): return [], []
  return ["-DTINYC_HAVE_LLVM", *("-I" + d for d in out["--includedir"])], out["--ldflags"] + out["--libs"] + ["-Wl,-rpath," + d for d in out["--libdir"]]

llvm_c, llvm_ld = llvm_flags()
cflags, ldflags = cflags + llvm_c, ldflags + llvm_ld

def z3_flags():
  """cflags and ldflags of z3 when its C header is here (Debian's libz3-dev): validate_index then proves bounds with z3
  (csrc/uop/validate.c); without it the module builds and that proof raises tinygrad's ImportError"""
  inc = os.environ.get("Z3_INCLUDE", "/usr/include")
  return (["-DTINYC_HAVE_Z3", "-I" + inc], ["-lz3"]) if os.path.exists(os.path.join(inc, "z3.h")) else ([], [])

z3_c, z3_ld = z3_flags()
cflags, ldflags = cflags + z3_c, ldflags + z3_ld

setup(ext_modules=[Extension("tinyc._C", sources=sources, depends=headers, extra_compile_args=cflags,
                             extra_link_args=ldflags, libraries=["dl", "sqlite3", "z", "xxhash", "pthread"],
                             include_dirs=[numpy.get_include()])])
