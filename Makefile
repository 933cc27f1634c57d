# PocketJudge entry points. `make run` and `make test` do all set-up themselves.
#   GPU=1 make setup   builds llama-cpp-python with CUDA (NVIDIA GPU + CUDA toolkit needed)

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LLAMA_CPP_VERSION := 0.3.36
REQ_HASH := $(shell cat requirements.txt requirements-nodeps.txt | md5sum | cut -c1-10)
STAMP := $(VENV)/.installed-$(REQ_HASH)$(if $(GPU),-gpu,)
CONVERTER := vendor/llama.cpp/convert_hf_to_gguf.py
HOST ?= 127.0.0.1
PORT ?= 8501
PYTEST_ARGS ?=

.PHONY: setup models run test test-fast lint format bench clean-venv train-lora eval

setup: $(STAMP) $(CONVERTER)

$(STAMP): requirements.txt requirements-nodeps.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing torch==2.13.0 first (local CPU build), then requirements.txt"
	$(BIN)/python -m pip install -q --disable-pip-version-check torch==2.13.0
ifdef GPU
	CMAKE_ARGS="-DGGML_CUDA=on" $(BIN)/python -m pip install -q --disable-pip-version-check \
		--no-cache-dir --force-reinstall --no-deps llama-cpp-python==$(LLAMA_CPP_VERSION)
endif
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	@rm -f $(VENV)/.installed-*
	@touch $@

$(CONVERTER): | $(STAMP)
	$(BIN)/python -m models.converter fetch

# The scenario classifier is committed (models/scenario_classifier.npz); fitted again when
# missing, from Auto-J's data in ../shared (about 2 minutes).
models: setup
	$(BIN)/python -m models.build
	@test -f models/scenario_classifier.npz || OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 \
		$(BIN)/python -m training.scenario_classifier || \
		echo "note: no scenario classifier: scenario 'auto' falls back to default"

# The other Streamlit settings (upload limit, no usage statistics, no Deploy button, ...) are
# in app/ui/.streamlit/config.toml; HOST=0.0.0.0 serves the network.
run: setup models
	PYTHONPATH=$(CURDIR) $(BIN)/python -m streamlit run app/ui/main.py --server.address $(HOST) --server.port $(PORT)

# Debian's Chromium for the browser tests (tests/app/ui/test_browser.py), when it is missing.
SUDO := $(shell [ "$$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && echo sudo)
.PHONY: browser
browser:
	command -v chromium >/dev/null || ($(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium)

test: setup models browser
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q $(PYTEST_ARGS)

test-fast: setup models
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -m "not slow" $(PYTEST_ARGS)

# QUICK=1: the whole pipeline on a slice of the data (minutes); else the default judge's recipe
# (pj-smollm2-135m). The stronger judge's recipe wants a GPU: TRAIN_CONFIG=qwen05-decision.
TRAIN_CONFIG ?= $(if $(QUICK),quick,smollm2-judge)
EVAL_FILES ?= ../shared/data/autoj/pairwise_dev.jsonl ../shared/data/llmbar/natural.json \
	../shared/data/llmbar/adversarial_neighbor.json
EVAL_MODEL ?=
EVAL_ARGS ?= $(if $(QUICK),--limit 10,)
# the rubric grades on vicuna_eval (training/rubric_eval.py) and its pairs with references
# (training/reference_pairs.py), e.g. --score-cache DIR
RUBRIC_ARGS ?= $(if $(QUICK),--limit 8,)

train-lora: setup models
	HF_HUB_OFFLINE=1 $(BIN)/python -m training run $(TRAIN_CONFIG)

# SECOND_JUDGMENTS=run/judgments.jsonl: a second judge's saved run on the same files adds the
# cascade curve (agreement when the least confident 0/10/30/50/100 % go to it).
SECOND_JUDGMENTS ?=
eval: setup models
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.evaluate $(EVAL_FILES) \
		$(if $(EVAL_MODEL),--model $(EVAL_MODEL),) --out training/runs/eval $(EVAL_ARGS) \
		$(if $(SECOND_JUDGMENTS),--second-judgments $(SECOND_JUDGMENTS),)
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.rubric_eval $(if $(EVAL_MODEL),--model $(EVAL_MODEL),) \
		$(RUBRIC_ARGS)
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.reference_pairs \
		$(if $(EVAL_MODEL),--model $(EVAL_MODEL),) $(RUBRIC_ARGS)

# The judging modes side by side on the first 50 pairs of Auto-J dev (bench/results.md), then
# the scale-out engines (Ray workers, server concurrency) on 16 pairs (bench/scale_out.md);
# cells are saved in bench/runs/ as they finish, so an interrupted run goes on. BENCH_ARGS=--fresh
BENCH_ARGS ?=
bench: setup models
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench.run $(BENCH_ARGS)
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench.scale_out
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench.heads

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean-venv:
	rm -rf $(VENV)
