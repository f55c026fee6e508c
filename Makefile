# Two entry points: `make demo` and `make test`. Each creates .venv and installs what it needs.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed

.PHONY: demo test venv lint bench fuzz clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	# torch first, pinned to the CPU build this project is tested with
	$(VPY) -m pip install -q torch==2.13.0
	$(VPY) -m pip install -q -e '.[dev]'
	# build aotc's hand-written kernels for this machine once, as part of the install
	$(VENV)/bin/aotc prepare
	touch $(STAMP)

demo: $(STAMP)
	cd examples && ../$(VPY) model.py

test: $(STAMP)
	$(VPY) -m pytest -q tests

# the damaged-package sweep at full size (make test runs 200 of these cases)
fuzz: $(STAMP)
	AOTC_FUZZ_CASES=5000 $(VPY) -m pytest -q tests/package/test_fuzz.py

lint: $(STAMP)
	$(VPY) -m ruff check src tests benchmarks examples

bench: $(STAMP)
	$(VPY) benchmarks/run.py

clean:
	rm -rf $(VENV) build examples/model.pt2
