# The two commands of README.md: `make demo` (the main job) and `make test` (the suite).
# Each installs what is missing, builds the extension, then runs.
PYTHON ?= python3
APT_PACKAGES := gcc make clang libsqlite3-dev zlib1g-dev
SAN_LIBS = $(shell gcc -print-file-name=libasan.so):$(shell gcc -print-file-name=libubsan.so)

.PHONY: deps build test asan-test demo bench clean

deps:
	@for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "apt-get install$$missing"; apt-get update -qq && apt-get install -y -qq $$missing; fi
	@$(PYTHON) -c "import numpy, pytest, tinygrad, tinyc; assert tinygrad.__version__ == '0.12.0'" 2>/dev/null \
	  || $(PYTHON) -m pip install -q -e '.[test]'

build: deps
	@$(PYTHON) setup.py -q build_ext --inplace

test: build
	$(PYTHON) -m pytest -q tests

# The same suite against an AddressSanitizer + UBSan build (kept apart in build-asan/). CPU=1 stops tinygrad
# (the oracle) probing for other devices, which maps memory at fixed addresses that ASan's shadow owns.
asan-test: deps
	TINYC_SANITIZE=1 $(PYTHON) setup.py -q build_ext --inplace --build-temp build-asan --force
	CPU=1 PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=8 UBSAN_OPTIONS=print_stacktrace=1 LD_PRELOAD=$(SAN_LIBS) \
	  $(PYTHON) -m pytest -q -x tests; rc=$$?; \
	$(PYTHON) setup.py -q build_ext --inplace --force >/dev/null; exit $$rc

demo: build
	$(PYTHON) -m tinyc demo

bench: build
	$(PYTHON) bench/uop.py
	$(PYTHON) bench/rewrite.py

clean:
	rm -rf build build-asan tinyc/*.so *.egg-info
