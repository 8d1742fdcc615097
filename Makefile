# Set-up and the two everyday commands. Each target creates or reuses .venv and installs torch==2.13.0
# before anything else (an unpinned torch would pull several GB of CUDA packages), then the project with
# the versions in constraints.txt, which make main's figures were measured with.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: main leagues train baselines dashboard test unit lint format test-all setup benchmark

# Cricsheet's zips (`cricsheet:<name>` sources, as data=t20 has) are read from the folder named by
# CRICKET_ATTN_CRICSHEET_DIR where it holds them, else downloaded once into data/raw/. Our machines and CI have
# no internet and keep a copy in ../shared/data/ beside the project: used when that folder exists.
ifneq ($(wildcard $(CURDIR)/../shared/data/.),)
export CRICKET_ATTN_CRICSHEET_DIR ?= $(abspath $(CURDIR)/../shared/data)
endif

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]" -c constraints.txt
	touch $(STAMP)

# The main job on the embedded IPL archive: ingest it (fetched once), check it against the official
# results, train and test the default transformer, then fit the baselines and pair them against it.
# Everything lands in mlflow.db at the project root (artifacts in mlartifacts/ beside it): `make dashboard`.
main: $(STAMP)
	$(VENV)/bin/cricket-attn-ingest
	$(PY) -m cricket_attn.commands.official_results
	$(VENV)/bin/cricket-attn-train
	$(VENV)/bin/cricket-attn-baselines

# Every men's T20 league (conf/data/t20.yaml: the IPL archive and Cricsheet's men's T20 zip, players known by
# their records as of the day in every competition): the pooled model with a moving average of its weights
# (callbacks=ema: steadier from seed to seed, better on every league) on a 12-epoch schedule with one member,
# refitted by continuing the selected model two epochs with 2024 added (refit_from=selected: 0.0003 worse on
# 2024 than refitting from scratch, for a sixth of its epochs' time; docs/log/2026-11-28.md), then the same
# fine-tuned on the IPL from its weights for 8 epochs, the last kept (as every stage: early stopping on one noisy
# season was 0.0007 worse on IPL 2024 a season back, three seeds; docs/log/2026-11-28.md), its targets half the trees'
# (data.teacher.weight=0.5: the model it starts from is already ahead of them; 0.0007 better than 0.8 on IPL 2024
# a season back, three seeds, 0.3 between), then the baselines on the pooled table, paired with the fine-tuned run
# (README, "Every men's T20 league").
# Each training stage has its folder under LEAGUES: `make leagues` again continues a stopped stage where it
# stopped, in the same MLflow run, and keeps a finished one (LEAGUES=<another folder> for a new run).
LEAGUES ?= $(CURDIR)/outputs/leagues
# Settings added to each stage after the recipe's own (the later wins), to try another schedule without
# editing this file, e.g. the longer recipe of 2026-11-26 (40 epochs, three members refitted from scratch:
# about seven hours):
# make leagues POOLED="'callbacks=[ema,early_stopping]' trainer.max_epochs=40 ensemble=3 refit_from=scratch" \
#   FINETUNE='ensemble=3'.
POOLED ?=
FINETUNE ?=
stage = if [ -f $(1)/mlflow_run.json ]; then $(VENV)/bin/cricket-attn-train resume=$(1); \
	else $(VENV)/bin/cricket-attn-train $(2) hydra.run.dir=$(1); fi
leagues: $(STAMP)
	$(call stage,$(LEAGUES)/pooled,data=t20 callbacks=ema ensemble=1 \
		refit_from=selected refit_epochs=2 $(POOLED))
	$(call stage,$(LEAGUES)/ipl,data=t20 init_from=$(LEAGUES)/pooled optim.lr=3e-4 \
		'data.train_competitions=[Indian Premier League]' ensemble=1 trainer.max_epochs=8 data.teacher.weight=0.5 \
		$(FINETUNE))
	$(VENV)/bin/cricket-attn-baselines data=t20

# Train and test the default transformer (conf/): fit on 2008-2023 for 12 epochs, calibrate on 2024, refit
# through 2024.
train: $(STAMP)
	$(VENV)/bin/cricket-attn-train

# The scikit-learn baselines, paired against the latest transformer run.
baselines: $(STAMP)
	$(VENV)/bin/cricket-attn-baselines

# MLflow's dashboard over the project's store, at http://127.0.0.1:5000 (the experiment's training runs:
# add ?workflowType=machine_learning to an experiment's address, as the commands' printed links do).
dashboard: $(STAMP)
	$(VENV)/bin/mlflow ui --backend-store-uri sqlite:///$(CURDIR)/mlflow.db --host 127.0.0.1 --port 5000

# The default test run: fast, on the real fixture matches, on both cores (pytest-xdist); what CI runs
# (after `make lint`).
test: $(STAMP)
	$(PY) -m pytest -m "not slow" -q -n 2

# The developers' loop: the unit tests alone, without the end-to-end ones (runs, commands, notebooks),
# on both cores.
unit: $(STAMP)
	$(PY) -m pytest -m "not slow and not e2e" -q -n 2

# ruff (pyproject.toml): lint, imports sorted, and the format checked; `make format` applies it.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Everything, including the checks on the whole IPL archive.
test-all: $(STAMP)
	$(PY) -m pytest -q

benchmark: $(STAMP)
	$(PY) benchmarks/ingest_speed.py
	$(PY) benchmarks/first_epoch.py
	$(PY) benchmarks/train_speed.py
	$(PY) benchmarks/predict_speed.py
	$(PY) benchmarks/simulate_speed.py
	$(PY) benchmarks/players_speed.py
