# Two entry points: `make demo` and `make test`. Each creates .venv and installs what it needs.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed

.PHONY: demo test test-aarch64 test-big venv lint bench bench-quick bench-alone fuzz clean

venv: $(STAMP)

$(STAMP): pyproject.toml setup.py constraints.txt
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	# torch first, pinned to the CPU build this project is tested with
	$(VPY) -m pip install -q torch==2.13.0
	$(VPY) -m pip install -q -e '.[dev,serve,quant,llm]' -c constraints.txt
	# build aotc's hand-written kernels for this machine once, as part of the install
	$(VENV)/bin/aotc prepare
	touch $(STAMP)

# the C++ examples: CMake finds aotc (and, for the adapter, the wheel's libtorch) from Python
PYEXE   := $(abspath $(VPY))
AOTC_CMAKE  = $$($(VPY) -c 'import aotc; print(aotc.cmake_prefix_path)')
TORCH_CMAKE = $$($(VPY) -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')

demo: $(STAMP)
	cd examples && ../$(VPY) model.py
	cmake -S examples/cpp -B build/examples/cpp -DPython3_EXECUTABLE=$(PYEXE) \
	  -DCMAKE_PREFIX_PATH="$(AOTC_CMAKE)"
	cmake --build build/examples/cpp -j
	cd build/examples/cpp && ./inference
	cmake -S examples/cpp_torch -B build/examples/cpp_torch -DPython3_EXECUTABLE=$(PYEXE) \
	  -DCMAKE_PREFIX_PATH="$(AOTC_CMAKE);$(TORCH_CMAKE)"
	cmake --build build/examples/cpp_torch -j
	cd build/examples/cpp_torch && ./inference

# the tests in TEST_JOBS processes (one per core, at most 4: each holds torch and runs
# compilers), a test file's tests in one process; TEST_JOBS=0 runs them in this one. The
# slowest tests are listed at the end, to keep the suite's time in view
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)
test: $(STAMP)
	$(VPY) -m pytest -q -n $(TEST_JOBS) --dist loadfile tests --durations=40

# the C++ kernels and runtime cross-compiled for aarch64 and run under qemu-user; they need
# Debian's g++-aarch64-linux-gnu and qemu-user, and skip without them
test-aarch64: $(STAMP)
	$(VPY) -m pytest -q tests/aarch64

# a package over 4 GB (zip64) in both runtimes: mapped, shared by two processes; it needs
# about 13 GB of available memory (skipped without it) and some minutes
test-big: $(STAMP)
	AOTC_BIG_PACKAGE=1 $(VPY) -m pytest -q tests/cpp/test_big_package.py

# the damaged-package sweep at full size (make test runs 200 of these cases), and 5000 random
# programs against eager, drawn by Hypothesis (make test runs 30; AOTC_FUZZ_SEED is its seed)
AOTC_FUZZ_PROGRAMS ?= 5000
fuzz: $(STAMP)
	AOTC_FUZZ_CASES=5000 $(VPY) -m pytest -q tests/package/test_fuzz.py
	AOTC_FUZZ_PROGRAMS=$(AOTC_FUZZ_PROGRAMS) $(VPY) -m pytest -q tests/e2e/test_fuzz_programs.py

lint: $(STAMP)
	$(VPY) -m ruff check src tests benchmarks examples setup.py

# the peers (ONNX Runtime, OpenVINO, the ONNX exporter) come with the bench extra
BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(VPY) -m pip install -q -e '.[bench]' -c constraints.txt
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(VPY) benchmarks/run.py

bench-quick: $(BENCH_STAMP)
	$(VPY) benchmarks/run.py --quick

# every runtime (ExecuTorch too: the quant extra) alone in its own process, rounds rotated
bench-alone: $(BENCH_STAMP)
	$(VPY) benchmarks/alone.py

clean:
	rm -rf $(VENV) build examples/model.pt2
