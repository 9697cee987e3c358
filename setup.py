"""Builds the tinyc._C extension from every C file under csrc/.

TINYC_SANITIZE=1 builds with AddressSanitizer + UBSan (see `make asan-test`)."""
import glob, os
import numpy
from setuptools import setup, Extension

sources = sorted(glob.glob("csrc/**/*.c", recursive=True))
headers = sorted(glob.glob("csrc/**/*.h", recursive=True))
cflags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-missing-field-initializers", "-Wvla", "-O2", "-g"]
ldflags = []
if os.environ.get("TINYC_SANITIZE"):
  san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]
  cflags, ldflags = cflags + san + ["-O1", "-DTINYC_LEAK_CHECK"], ldflags + san

setup(ext_modules=[Extension("tinyc._C", sources=sources, depends=headers, extra_compile_args=cflags,
                             extra_link_args=ldflags, libraries=["dl", "sqlite3", "z", "pthread"],
                             include_dirs=[numpy.get_include()])])
