# The two commands of README.md: `make demo` (the main job) and `make test` (the suite).
# Each installs what is missing, builds the extension, then runs.
PYTHON ?= python3
APT_PACKAGES := gcc make clang libsqlite3-dev libxxhash-dev zlib1g-dev llvm-19-dev
APT_PACKAGES += libz3-dev
# the interpreter itself, not a launcher script (pyenv's shim is bash): the sanitizers must see only Python's allocations
PY = $(shell $(PYTHON) -c 'import sys; print(sys.executable)')

# The AddressSanitizer + UBSan build lives apart, in build-asan/lib (the in-place build stays the normal one). It runs
# with Python's own allocator off so ASan sees every allocation, huge allocations failing as MemoryError (as they do
# without it), leak detection on (the build leaves what the import makes once out of it, see module.c; CPython's own
# few leaks are named in tests/lsan.supp), and CPU=1 so that tinygrad (the oracle) does not probe devices at fixed
# addresses. The toolchain tinyc spawns runs without the preloaded runtime (tests/sanitizer_bin: ld's own leaks are
# not ours). pytest runs from build-asan/ so that the source tree's tinyc/ (the normal build) is not on sys.path.
ASAN_LIB := build-asan/lib
SAN_LIBS = $(shell gcc -print-file-name=libasan.so):$(shell gcc -print-file-name=libubsan.so)
SAN_ENV = PYTHONPATH=$(CURDIR)/$(ASAN_LIB) PATH=$(CURDIR)/tests/sanitizer_bin:$$PATH CPU=1 PYTHONMALLOC=malloc LD_PRELOAD=$(SAN_LIBS) \
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:quarantine_size_mb=16 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
# BEAM's threads and its failure paths, the heuristics' and tensor cores' bad input and memory (the whole of these files
# under ASan is slow: their searches and identity sweeps compile and rewrite hundreds of kernels)
BEAM_ASAN_TESTS := $(addprefix tests/test_search.py::,test_get_kernel_actions_arguments test_custom_actions_timer_and_on_step \
  test_parallel_compiles_give_the_serial_result test_failing_compiles_are_dropped test_a_compile_that_times_out_is_dropped \
  test_a_timer_that_raises_stops_the_search test_an_on_step_that_raises_stops_the_search \
  test_an_executor_that_loses_workers_loses_only_their_candidates test_bad_arguments_raise) \
  $(addprefix tests/test_heuristic.py::,test_bad_input test_memory_flat) \
  $(addprefix tests/test_tc.py::,test_bad_construction_types test_bad_args_as_tinygrad test_bad_input test_memory_flat)
# LLVM's compiles in threads, its errors, loading bad objects, malformed uops, memory (not the corpus runs: slow under ASan)
LLVM_ASAN_TESTS := $(addprefix tests/test_llvm.py::,test_two_threads_compile_the_bytes_of_serial test_a_failing_thread_does_not_disturb_another \
  test_bad_ir_raises_compile_error_with_llvms_message test_truncated_or_garbage_object_raises_on_load test_malformed_uops_raise_never_crash \
  test_renderer_settings_are_tinygrads test_compiling_and_loading_leaves_memory_flat)
PARITY_ASAN_TESTS := $(addprefix tests/test_parity.py::,test_graph_rewrite_map_bad_input test_graph_rewrite_map_input_map \
  test_simplify_valid test_divide_exact test_divide_exact_bad_input test_placeholder_bad_addrspace test_new_buffer_and_unique \
  test_uop_replace_unknown_field test_exec_alu_truncate_output_keyword test_dataclass_fields_and_defaults)
# the part of the suite make test runs again on the sanitizer build: the fuzzers (an eighth of their cases) and the
# tests of memory, reference counts, faults and threads, rewriting, rendering and the runtime
ASAN_TESTS := tests/test_fuzz.py tests/test_reliability.py tests/test_memory.py tests/test_uop.py tests/test_rewrite.py \
  tests/test_cstyle.py tests/test_runtime.py tests/test_program_spec.py tests/test_expander.py $(BEAM_ASAN_TESTS) $(LLVM_ASAN_TESTS) \
  $(PARITY_ASAN_TESTS)
CONTEXT_ASAN_TESTS := $(addprefix tests/test_context.py::,test_refused_values_change_nothing test_c_side_follows_every_native_key test_restore_as_tinygrad)
ASAN_TESTS += $(CONTEXT_ASAN_TESTS)
# validate_index's z3 proof: malformed graphs, the report, threads and memory
Z3_ASAN_TESTS := $(addprefix tests/test_validate.py::,test_malformed_inputs_raise_as_tinygrad test_out_of_bounds_report_names_the_index_as_tinygrad \
  test_threads_and_memory)
ASAN_TESTS += $(Z3_ASAN_TESTS)

# the PYTHON device's hand-written and malformed programs, out-of-range accesses, missing buffers, runtime errors, memory, every
# ALU op and cast, the WMMA layouts (not the corpus runs)
PYDEV_ASAN_TESTS := $(addprefix tests/test_python_device.py::,test_a_hand_written_program_runs test_out_of_range_access_raises_index_error \
  test_missing_buffers_and_vars_raise test_bad_programs_raise_never_crash test_runtime_errors_of_python_semantics \
  test_wmma_with_too_few_warp_threads_raises test_memory_flat test_int_alu_as_tinygrad test_float_alu_as_tinygrad test_casts_as_tinygrad \
  test_tensor_core_matmul_under_emulate test_mutated_programs_raise_or_run_never_crash)
ASAN_TESTS += $(PYDEV_ASAN_TESTS)
# image dtypes' bad shapes and pickles, an image store that cannot be done, the OpenCL renderer's bad arguments
IMAGES_ASAN_TESTS := $(addprefix tests/test_images.py::,test_bad_image_shapes_raise_as_tinygrad test_image_dtype_identity_pickle_and_promotion \
  test_image_store_not_upcast_raises test_opencl_aux_and_render_kernel)
ASAN_TESTS += $(IMAGES_ASAN_TESTS)
# the caches of issue 14 (memo bits, the Scheduler's ranges) and the bridge's C graph conversion
CACHE_ASAN_TESTS := tests/test_bridge.py::test_graph_conversion_bad_input_and_memory tests/test_postrange.py::test_ranges_follow_the_ast \
  $(addprefix tests/test_divandmod.py::,test_fold_memo_gives_the_uncached_answer test_fold_memo_keeps_no_node_alive)
ASAN_TESTS += $(CACHE_ASAN_TESTS)
# the bridge's C side: hash-consing tinygrad's nodes (checked input, the cache emptied as nodes die), the pool's nicer threads
BRIDGE_ASAN_TESTS := $(addprefix tests/test_bridge.py::,test_consed_conversion_is_tinygrads_constructor test_consed_bad_input \
  test_compile_pool_runs_its_compiles_nicer)
ASAN_TESTS += $(BRIDGE_ASAN_TESTS)
# the C-integer answers of the bounds and the div/mod folder at and past the 64-bit edges (128-bit sums and products)
INT_ASAN_TESTS := tests/test_divandmod.py::test_bounds_near_and_past_64_bits tests/test_uop_tinygrad.py::test_bounds_at_the_64_bit_edges
ASAN_TESTS += $(INT_ASAN_TESTS)
# test_program_spec's corpus identity is tinygrad's codegen of the corpus four times over, slow under ASan: the suite
# runs it; the sanitizer pass keeps the file's other tests (from_uop, pickles, estimates on hand-made and bad programs)
ASAN_DESELECT := --deselect tests/test_program_spec.py::test_from_uop_matches_tinygrad

.PHONY: deps build asan-build test suite asan-suite asan-test fuzz demo bench clean

deps:
	@for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "apt-get install$$missing"; apt-get update -qq && apt-get install -y -qq $$missing; fi
	@$(PYTHON) -c "import numpy, pytest, hypothesis, distributed, z3, tinyc, importlib.metadata as m; assert m.version('tinygrad') == '0.12.0'" 2>/dev/null \
	  || $(PYTHON) -m pip install -q -e '.[test]'

build: deps
	@$(PYTHON) setup.py -q build_ext --inplace -j 2

asan-build: deps
	@TINYC_SANITIZE=1 $(PYTHON) setup.py -q build_ext --build-lib $(ASAN_LIB) --build-temp build-asan/tmp -j 2
	@cd tinyc && find . -name '*.py' -exec cp --parents {} ../$(ASAN_LIB)/tinyc/ \;

# the suite (8,000 fuzz cases among it) and its sanitizer part (1,600 more), side by side: the suite waits on clang and
# its child processes about half of its time, so the two share the two cores. Each one's output is printed when it
# ends; either failing fails. (Both builds come first: built while the suite ran, the sanitizer build's compiles
# starved the suite enough to fail BEAM's test.)
test: build asan-build
	@$(MAKE) --no-print-directory -j2 --output-sync=target suite asan-suite

suite:
	TINYC_FUZZ_SCALE=0.4 $(PY) -m pytest -q --durations=25 tests

# LeakSanitizer's own tracer sometimes crashes in the leak check at exit, after every test passed ("LeakSanitizer has
# encountered a fatal error", google/sanitizers#1353): then, and only then, the sanitizer part runs once more. A leak it
# reports, a failing test, or the tracer crashing twice fails.
ASAN_LOG = $(CURDIR)/build-asan/suite.log
asan-suite:
	@for try in 1 2; do \
	  (cd build-asan && $(SAN_ENV) TINYC_FUZZ_SCALE=0.08 $(PY) -m pytest -q -x -p no:cacheprovider --basetemp=$(CURDIR)/build-asan/pytest-tmp \
	    --rootdir=$(CURDIR) $(ASAN_DESELECT) $(addprefix $(CURDIR)/,$(ASAN_TESTS))) > $(ASAN_LOG) 2>&1; rc=$$?; cat $(ASAN_LOG); \
	  [ $$rc -eq 0 ] && exit 0; \
	  grep -q "LeakSanitizer has encountered a fatal error" $(ASAN_LOG) && ! grep -q "detected memory leaks" $(ASAN_LOG) && \
	    grep -qE "^[0-9]+ passed" $(ASAN_LOG) && ! grep -qE "^[0-9]+ passed.*(failed|error)" $(ASAN_LOG) || exit $$rc; \
	  echo "asan-suite: LeakSanitizer's tracer crashed at exit; running the sanitizer part once more"; \
	done; exit 1

# the whole suite on the sanitizer build (slow)
asan-test: asan-build
	cd build-asan && $(SAN_ENV) $(PY) -m pytest -q -x -p no:cacheprovider --rootdir=$(CURDIR) $(CURDIR)/tests

# the long fuzzing mode: a million cases (FUZZ_CASES=, or a budget FUZZ_SECONDS=), crashes reported and fuzzing goes on
FUZZ_CASES ?= 1000000
FUZZ_SECONDS ?= inf
fuzz: build
	$(PY) tests/fuzz_run.py --cases $(FUZZ_CASES) --seconds $(FUZZ_SECONDS)

demo: build
	$(PYTHON) -m tinyc demo

bench: build
	$(PYTHON) bench/uop.py
	$(PYTHON) bench/rewrite.py
	$(PYTHON) bench/compile.py

clean:
	rm -rf build build-asan tinyc/*.so *.egg-info
