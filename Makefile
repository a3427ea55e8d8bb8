# nslb — `make help` lists the targets.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# make paper: which presets, how many run at once (one per CPU; each is one process running its
# jobs one after another), how their jobs are launched, extra overrides for every run (e.g.
# PAPER_ARGS='agent=mts,umts' for a subset of the agents, or run.n_seeds=20).
PAPER_PRESETS ?= fixed known prior
PAPER_PARALLEL ?= $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
PAPER_LAUNCH ?=
PAPER_ARGS ?=
# make family: extra overrides for every run of the successors' presets (e.g. FAMILY_ARGS=run.n_seeds=5),
# and a MovieLens release for family/movielens_genres (FAMILY_DATA=~/data/ml-1m; unset: skipped).
FAMILY_ARGS ?=
FAMILY_DATA ?=
# make offline: extra overrides for the run of offline/data_size (e.g. OFFLINE_ARGS=run.n_seeds=5)
OFFLINE_ARGS ?=
# make bench-data: e.g. BENCH_DATA_ARGS='--folder /tmp/ml25m-like --repeat 1' keeps the release
BENCH_DATA_ARGS ?=
# make bench: the commit to compare against (main before the speed work), extra arguments
# (--quick, --only REGEX, --repeats N; see python -m benchmarks.speed --help).
BENCH_BASELINE ?= fa9f062
BENCH_ARGS ?=
# make compare-smpybandits: e.g. COMPARE_ARGS='--only sw_ucb --seeds 20'
COMPARE_ARGS ?=
# make compare-latent-ar: e.g. LATENT_AR_ARGS='--seeds 20' (see python -m benchmarks.latent_ar --help)
LATENT_AR_ARGS ?=
# make compare-switching: e.g. SWITCHING_ARGS='--runs 10 --horizon 2000', or --checkout DIR (their
# code at the pinned commit already on disk; see python -m benchmarks.switching_latent --help)
SWITCHING_ARGS ?=

# make test-next: the side venv holding the newest Hydra pre-releases (ignored by git)
NEXT_VENV ?= .bench/next-venv
# make lock / install-locked: the exact versions of the dev environment CI passed with
LOCK ?= requirements/dev-py311.lock

# mkdocs build: --strict (in mkdocs.yml) fails on a broken link, anchor or API reference;
# NO_MKDOCS_2_WARNING silences the theme's banner about a future MkDocs 2.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build

.DEFAULT_GOAL := help
.PHONY: help install install-locked lock lint docs docs-serve test test-full test-next validate bench bench-data smpy-venv compare-smpybandits compare-latent-ar compare-switching paper paper-runs family offline clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {printf "  %-10s %s\n", $$1, $$2}'

install: ## create .venv and install nslb with its dev tools (editable)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -e '.[dev]'
	$(BIN)/nslb warmup --engine numpy  # compile every kernel now, not in the first runs (the JAX engine's programs: nslb warmup --engine jax)

install-locked: ## as install, with the exact versions of $(LOCK) (CPython 3.11, Linux x86_64), hashes checked
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install --require-hashes -r $(LOCK)
	$(BIN)/pip install --no-deps -e .
	$(BIN)/nslb warmup --engine numpy

lock: ## write $(LOCK) from this .venv (the versions its tests passed with), with hashes (uv pip compile)
	$(BIN)/pip install -q 'uv>=0.5'
	$(BIN)/pip freeze --exclude-editable > $(LOCK).constraints
	$(BIN)/uv pip compile pyproject.toml --extra dev --python $(BIN)/python --generate-hashes \
		--constraint $(LOCK).constraints --no-header --quiet -o $(LOCK).new
	rm $(LOCK).constraints
	(echo '# make lock: the dev environment CI passed with, for make install-locked (CPython 3.11,'; \
	 echo '# Linux x86_64). Regenerate with make lock in a .venv whose make test passed.'; \
	 cat $(LOCK).new) > $(LOCK) && rm $(LOCK).new

lint: ## ruff (lint and format check), mypy (types), import-linter (the layers' import rules), the docs (strict)
	$(BIN)/ruff check nslb_cli hydra_plugins tests examples benchmarks
	$(BIN)/ruff format --check nslb_cli hydra_plugins tests examples benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(MKDOCS) --strict --quiet
	@# a reST role or literal-block marker that mkdocstrings shows as text fails the build
	@! grep -rlE ':(class|func|meth|mod|data|attr|obj|exc|ref):`|::</(p|li)>' site --include='*.html' \
		|| { echo 'reST markup shown as text in the pages above: write Markdown in docstrings'; exit 1; }

docs: ## the documentation site (mkdocs.yml, docs/) into site/
	$(MKDOCS)

docs-serve: ## serve the documentation site, with search, at http://127.0.0.1:8000 (rebuilt on edits)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

test: ## the fast test suite (what CI runs)
	$(BIN)/python -m pytest -n 2 -q --durations=25

test-full: ## every test, slow statistical and end-to-end ones included
	$(BIN)/python -m pytest -n 2 -q -m '' --durations=25

test-next: ## the fast suite on the newest Hydra pre-releases (hydra-core 1.4…), in a side venv
	$(PYTHON) -m venv $(NEXT_VENV)
	$(NEXT_VENV)/bin/pip install -q --upgrade pip
	$(NEXT_VENV)/bin/pip install -q -e '.[dev]'
	@# over nslb's own bound (<1.4): pip warns that nslb asks for 1.3, which is the point
	$(NEXT_VENV)/bin/pip install -q --pre --upgrade hydra-core hydra-joblib-launcher
	$(NEXT_VENV)/bin/pip list 2>/dev/null | grep -i '^hydra'
	NSLB_CACHE=$(abspath $(NEXT_VENV))/cache $(NEXT_VENV)/bin/python -m pytest -n 2 -q -p no:cacheprovider

validate: ## nslb's filters against Dynamax's, round by round (installs the [validate] extra if missing)
	$(BIN)/python -c 'import dynamax' 2>/dev/null || $(BIN)/pip install -e '.[validate]'
	$(BIN)/python -m pytest -q tests/validation

bench: bench-data ## speed targets, this tree vs BENCH_BASELINE in one run (BENCH_ARGS=--quick: skip slow rows)
	$(BIN)/python -m benchmarks.speed --baseline $(BENCH_BASELINE) $(BENCH_ARGS)

bench-data: ## prepare a generated ML-25M-sized release (25M ratings): seconds and peak memory
	$(BIN)/python -m benchmarks.movielens_prepare $(BENCH_DATA_ARGS)

smpy-venv: ## a side venv with SMPyBandits 0.9.7 (numpy < 2.1, scipy < 1.15) in .bench/smpy-venv
	$(PYTHON) -m venv .bench/smpy-venv
	.bench/smpy-venv/bin/pip install "SMPyBandits==0.9.7" "numpy<2.1" "scipy<1.15"

compare-smpybandits: ## the field's baselines vs SMPyBandits on the same worlds (make smpy-venv first)
	$(BIN)/python -m benchmarks.smpybandits $(COMPARE_ARGS)

compare-latent-ar: ## the latent-AR agents vs the LARL authors' code (git clone at a pinned commit into .bench/)
	$(BIN)/python -m benchmarks.latent_ar $(LATENT_AR_ARGS)

compare-switching: ## the filter oracle vs the switching-latent authors' code (git clone at a pinned commit into .bench/)
	$(BIN)/python -m benchmarks.switching_latent $(SWITCHING_ARGS)

paper: paper-runs ## the paper's synthetic experiments (100 seeds per agent), then figures (figure2, figure3, …) + tables in outputs/paper/figures
	$(BIN)/nslb plot outputs/paper --out outputs/paper/figures --paper

paper-runs: ## only the simulations of make paper: its presets, PAPER_PARALLEL at a time
	@$(MAKE) --no-print-directory -j$(PAPER_PARALLEL) --output-sync=target $(PAPER_TARGETS)

PAPER_TARGETS := $(addprefix paper/,$(PAPER_PRESETS))
.PHONY: $(PAPER_TARGETS)
$(PAPER_TARGETS): paper/%:
	$(BIN)/nslb run experiment=paper/$* $(PAPER_LAUNCH) $(PAPER_ARGS)

family: ## the successors' experiments (Trella et al., Russo et al.), then figures + claim tables in outputs/family/figures
	$(BIN)/nslb run experiment=family/latent_ar $(FAMILY_ARGS)
	$(BIN)/nslb run experiment=family/switching_latent $(FAMILY_ARGS)
	$(BIN)/nslb run experiment=family/switching_latent_estimation $(FAMILY_ARGS)
	$(if $(FAMILY_DATA),$(BIN)/nslb run experiment=family/movielens_genres env.data_dir=$(FAMILY_DATA) $(FAMILY_ARGS),@echo 'family/movielens_genres skipped: set FAMILY_DATA to a MovieLens release folder (e.g. FAMILY_DATA=~/data/ml-1m)')
	$(BIN)/nslb plot outputs/family --out outputs/family/figures --paper

offline: ## models learned from 10^2 to 10^5 logged rounds beside the known model, then figures + claim table in outputs/offline/figures
	$(BIN)/nslb run experiment=offline/data_size $(OFFLINE_ARGS)
	$(BIN)/nslb plot outputs/offline --out outputs/offline/figures --paper

clean: ## remove caches and build files (outputs/ is kept)
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
