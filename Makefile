# Run `make` or `make help` for the list of targets. Arguments go in ARGS:
#   make train ARGS="model=tiny training.max_steps=100"
#   make eval ARGS="--run smoke --split dev decoding.length_penalty=1.4"
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
# torch is installed before the project so that its `torch>=2.3` is already met: the pinned CPU
# wheel here; on a CUDA machine, e.g. `make setup TORCH_SPEC=torch`.
TORCH_SPEC ?= torch==2.13.0
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
ARGS ?=
LOGDIR ?= runs
BENCH_LOG ?= runs/bench.log

.PHONY: help setup data tokenizer train translate eval serve export back-translate tensorboard test test-full lint bench gpu-prepare gpu-run clean

help: ## List the targets
	@# Colour only at a terminal: piped or redirected, the list is plain text.
	@if [ -t 1 ]; then on='\033[36m'; off='\033[0m'; else on=''; off=''; fi; \
	awk -v on="$$on" -v off="$$off" 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %s%-12s%s %s\n", on, $$1, off, $$2}' $(MAKEFILE_LIST)

setup: $(STAMP) ## Create .venv and install torch, then the project with its dev, bench, serve and export extras (once)

# Quiet, on stderr: `make translate` may run it first, and its stdout is translations.
$(STAMP): pyproject.toml
	@echo "make setup: installing $(TORCH_SPEC) and this project into $(VENV)/" >&2
	@$(PYTHON) -m venv $(VENV) >&2
	@$(PY) -m pip install --quiet "$(TORCH_SPEC)" >&2
	@$(PY) -m pip install --quiet -e '.[dev,bench,serve,export]' >&2
	@# matplotlib builds its font cache on first use: here, not inside a run's time budget
	@$(PY) -c "import matplotlib.font_manager" >&2
	@touch $(STAMP)

data: setup ## Fetch a dataset into data/raw/ (downloads, or copies from DATA_MIRROR)
	$(PY) scripts/prepare_data.py $(ARGS)

tokenizer: setup ## Train the BPE tokenizer(s) on the dataset's train split
	$(PY) scripts/train_tokenizer.py $(ARGS)

train: setup ## Fetch data and train the default model (resumes an existing run)
	$(PY) scripts/train.py $(ARGS)

# `@`: their stdout is data (translations, scores), never make's echo of the command.
translate: setup ## Translate stdin line by line with runs/default's model (ARGS="--run NAME ...")
	@$(PY) scripts/translate.py $(ARGS)

eval: setup ## Score runs/default's model on the test split (ARGS="--run NAME --split dev ...")
	@$(PY) scripts/evaluate.py $(ARGS)

serve: setup ## Serve runs/default's model: a web page and a JSON API on :8000 (ARGS="--run NAME --port N")
	$(PY) scripts/serve.py $(ARGS)

export: setup ## Export runs/default's model for CTranslate2 or transformers (ARGS="--run NAME --format transformers")
	$(PY) scripts/export.py $(ARGS)

back-translate: setup ## Turn monolingual text into tagged pairs with a reverse model (ARGS="--run ja_en --data wikinews_ja")
	$(PY) scripts/back_translate.py $(ARGS)

# ARGS go to TensorBoard (`ARGS="--port 6007"`); one with its own --logdir replaces LOGDIR's.
tensorboard: setup ## Serve the TensorBoard logs of every run under runs/ (ARGS="--port 6007")
	$(VENV)/bin/tensorboard $(if $(findstring --logdir,$(ARGS)),,--logdir $(LOGDIR)) $(ARGS)

# One pytest worker a core (pytest-xdist): the fast tests are many and short, so the cores share
# them evenly. A test file stays on one worker, which builds its fixtures once.
test: setup ## Run the fast tests (everything not marked slow), one worker a core
	$(PY) -m pytest -m "not slow" -n auto --dist loadfile $(ARGS)

test-full: setup ## Run every test, the slow ones too
	$(PY) -m pytest $(ARGS)

lint: setup ## Check style with ruff
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: setup ## Run every scripts/bench_*.py against its reference; one markdown table on stdout
	@mkdir -p $(dir $(BENCH_LOG)) && : > $(BENCH_LOG)
	@echo "| benchmark | ours | reference | ours / reference | conditions |"
	@echo "|---|---:|---:|---:|---|"
	@for bench in scripts/bench_*.py; do $(PY) $$bench --table-rows 2>>$(BENCH_LOG) || exit $$?; done
	@echo "(details: $(BENCH_LOG))" >&2

# A GPU lease (docs/training.md, One command for a GPU): prepared here, run there, with nothing
# from the network there. BUDGET: the lease's minutes, setup and scoring included.
BUDGET ?= 9m30s
gpu-prepare: setup ## Fill gpu/ for a GPU lease: wheels, corpus, tokenizers (needs DATA_MIRROR)
	scripts/gpu_prepare.sh

gpu-run: ## On the GPU: benchmark, train kftt_gpu, decode test with beam 5 in BUDGET, into OUT (gpu_out/)
	scripts/gpu_run.sh $(BUDGET)

clean: ## Remove the virtual environment and caches (keeps data/ and runs/)
	rm -rf $(VENV) .pytest_cache .ruff_cache
