# Everything bootstraps itself: the first target you run makes .venv with the harness installed.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CONFIG ?= configs/shard_map_grad.yaml
BASELINE ?= results/baseline
JAX_REPO ?=
ARGS   ?=
# make test-unit spreads tests/unit over one pytest-xdist worker per core; XDIST= runs them in one process.
XDIST  ?= -n auto
# make test runs tests/integration on four workers, the reductions first (the longest tests): on their own they left a
# quarter of CI's 2 cores idle (a check's fresh runs follow one another), which the other tests now fill; slurm's tests
# share one worker (tests/integration/conftest.py). INTEGRATION_XDIST= for one process.
INTEGRATION_XDIST ?= -n 4 --dist loadgroup
# Each stage of make test ends with its 20 slowest tests (CI's log: where the time goes).
DURATIONS ?= --durations=20
# make bench: each timing taken this many times (the best kept); BENCH_ARGS goes to every bench script
# (CI runs `make bench BENCH_REPS=1 BENCH_ARGS=--help`: each script's command line parsed, its imports made).
BENCH_REPS ?= 3
BENCH_ARGS ?=

.PHONY: table smoke test test-unit lint typecheck docs site bench stress bisect reduce nightly base-image cuda-image-check \
	gpu-check tpu-check offline-wheels tpu-wheels clean-envs help

help:
	@echo "make table      sweep the seed's config (JAX 0.4.25-0.4.31) and print the version table"
	@echo "make smoke      a quick sweep of two releases"
	@echo "make bisect [JAX_REPO=path/to/jax]  find where the regression appears and is fixed (releases, then commits)"
	@echo "make reduce [SCRIPT=path BAD=V GOOD=V]  shrink a script to the smallest one with its cache miss"
	@echo "                (default: examples/train_shard_map_grad.py on 0.4.28, clean on 0.4.29; docs/reduce.md)"
	@echo "make test       lint and typecheck, then all tests: tests/unit on every core, then tests/integration"
	@echo "                (real JAX releases) on four workers, its reductions first"
	@echo "make test-unit  the fast tests only (tests/unit: no JAX release, Docker or Slurm), on every core"
	@echo "make lint       ruff over harness/, docker/, bench/, stress/ (pyproject.toml: [tool.ruff])"
	@echo "make typecheck  mypy, strict on harness/, over docker/, bench/, stress/ too (pyproject.toml: [tool.mypy])"
	@echo "make docs       regenerate the command reference (docs/reference/commands/) and docs/schemas/, then build the site strictly (site/)"
	@echo "make site       build the documentation site (mkdocs.yml) into site/, strictly: a broken link or a page missing"
	@echo "                from the nav fails (make test builds it first; make docs regenerates the generated pages too)"
	@echo "make bench [BENCH_REPS=N]  the harness's overhead against a bare shell loop, each timing the best of N"
	@echo "make stress     replay the fault cases (signals, concurrency, hostile input) on real runs: a tried/held table"
	@echo "make nightly BASELINE=results/<run>  sweep the latest release, exit 1 if a clean cell regressed"
	@echo "make base-image [DEBIAN=trixie]  build the offline Debian base image for --backend docker"
	@echo "                (bookworm: Python 3.11; trixie: Python 3.13, for JAX 0.11+; needs root, dockerd)"
	@echo "make gpu-check [GPU_WHEELS=dir GPU_PYTHON=python]  on a GPU host with JAX installed, offline: the seed, a"
	@echo "                stable, a hash-seeded and a host-callback program on every GPU, under 5 min"
	@echo "make tpu-check [TPU_WHEELS=dir TPU_PYTHON=python]  on a TPU host with JAX installed, offline: the seed, a stable"
	@echo "                and a hash-seeded program on every chip, 3-4 min"
	@echo "make offline-wheels [PY=3.12 OFFLINE_WHEELS=dir]  the folder those checks install the harness from, for the"
	@echo "                host's Python (on a machine with network; make tpu-wheels: the same, TPU_PY=3.11 into tpu-wheels)"
	@echo "make cuda-image-check  build the cuda image of jax 0.4.28 offline and check it without a GPU (~2 GB download)"
	@echo "Variables: CONFIG=path ARGS='--jobs 2 ...' PYTEST_ARGS='-k verdict' XDIST= (unit tests in one process)"
	@echo "           INTEGRATION_XDIST= (make test's integration tests in one process)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@# The harness's bytecode, once: an editable install compiles none, and where PYTHONDONTWRITEBYTECODE is set (these
	@# machines, CI) every `python -m harness` compiled its ~400 modules again, about 0.4 s of CPU each start.
	$(BIN)/python -m compileall -q harness
	touch $@

table: $(STAMP)
	$(BIN)/harness run $(CONFIG) $(ARGS)

smoke: $(STAMP)
	$(BIN)/harness run configs/smoke.yaml $(ARGS)

# lint, typecheck and the site's strict build first (a finding stops it); then the unit tests on every core, then
# tests/integration (INTEGRATION_XDIST above); both always run, and the first failure's exit code is make's. Exit 5
# (nothing selected by PYTEST_ARGS) is no failure.
test: $(STAMP) lint typecheck site
	@unit=0; $(BIN)/python -m pytest tests/unit $(XDIST) $(DURATIONS) $(PYTEST_ARGS) || unit=$$?; \
	integration=0; $(BIN)/python -m pytest tests/integration $(INTEGRATION_XDIST) $(DURATIONS) $(PYTEST_ARGS) \
		|| integration=$$?; \
	for rc in $$unit $$integration; do [ $$rc -eq 0 ] || [ $$rc -eq 5 ] || exit $$rc; done

test-unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit $(XDIST) $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check

typecheck: $(STAMP)
	$(BIN)/mypy

docs: $(STAMP)
	$(BIN)/python -m harness.cli.docs
	$(BIN)/python -m harness.results.schemas
	$(MAKE) --no-print-directory site

# NO_MKDOCS_2_WARNING: Material's notice about MkDocs 2.0 (and its own end of life) on every build, not a finding.
# Not --quiet: it drops the warnings, and with them what --strict counts (a broken link then passed).
site: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(STAMP)
	$(BIN)/python bench/bench_table.py --repeats $(BENCH_REPS) $(BENCH_ARGS)
	$(BIN)/python bench/bench_runs.py --repeats $(BENCH_REPS) $(BENCH_ARGS)
	$(BIN)/python bench/bench_seconds.py --repeats $(BENCH_REPS) $(BENCH_ARGS)
	$(BIN)/python bench/bench_docker.py $(BENCH_ARGS)
	$(BIN)/python bench/bench_bisect.py $(BENCH_ARGS)
	$(BIN)/python bench/bench_slurm.py --repeats $(BENCH_REPS) $(BENCH_ARGS)
	$(BIN)/python bench/bench_reduce_search.py $(BENCH_ARGS)
	$(BIN)/python bench/bench_flush.py $(BENCH_ARGS)
	$(BIN)/python bench/bench_serialisation.py --repeats $(BENCH_REPS) $(BENCH_ARGS)  # results.json's cells read and written
	$(BIN)/python bench/bench_evidence.py --repeats $(BENCH_REPS) $(BENCH_ARGS)  # the harness's own work after a synthetic suite's runs (2 MiB constants, 1,000 modules), as a share of the runs' time
	$(BIN)/python bench/bench_pytest.py --repeats $(BENCH_REPS) --public $(BENCH_ARGS)  # check --pytest of a clean and a reproducing suite and optax's shipped tests, as ratios of their bare time
	$(BIN)/python bench/bench_reduce.py --against bench/reduce-before.json $(BENCH_ARGS)  # the reduction before the quick screen
	$(BIN)/python bench/bench_reduce.py --script tests/fixtures/reduce/vary_cache_path.py --bad 0.5.0 --good 0.4.31 --options "--vary cache-path --runs 2" --target 3 --against bench/reduce-vary-before.json $(BENCH_ARGS)  # under a factor, before its screen
	$(BIN)/python bench/bench_reduce.py --script tests/fixtures/reduce/pvary_job.py --bad 0.8.1 --good 0.8.2 --options "--processes 2 --runs 4" --reduce-options "--max-candidates 100" --target 3 --against bench/reduce-processes-before.json $(BENCH_ARGS)  # between processes, before its screen

stress: $(STAMP)
	$(BIN)/python stress/stress.py $(ARGS)

bisect: $(STAMP)
	$(BIN)/harness bisect $(CONFIG) $(if $(JAX_REPO),--jax-repo $(JAX_REPO)) $(ARGS)

SCRIPT ?= examples/train_shard_map_grad.py
BAD    ?= 0.4.28
GOOD   ?= 0.4.29

reduce: $(STAMP)
	$(BIN)/harness reduce $(SCRIPT) --versions $(BAD) $(if $(GOOD),--good $(GOOD)) $(ARGS)

nightly: $(STAMP)
	$(BIN)/harness nightly $(CONFIG) --baseline $(BASELINE) $(ARGS)

DEBIAN ?= bookworm

base-image: $(STAMP)
	$(BIN)/harness base-image --debian $(DEBIAN) $(ARGS)

# No .venv: the GPU host has no network; the check installs the harness from GPU_WHEELS into its own venv.
gpu-check:
	.ci/gpu-check $(ARGS)

# No .venv: the TPU host has no network; the check installs the harness from TPU_WHEELS into its own venv.
tpu-check:
	.ci/tpu-check $(ARGS)

# On a machine with network: the harness's wheel and its runtime dependencies' (resolved from pyproject.toml) as
# wheels for an accelerator host's Python PY, so that `pip install --no-index --find-links DIR jax-cache-harness`
# works there with no index. WHEEL_PLATFORM: manylinux2014 (glibc 2.17) runs on every current Linux host.
OFFLINE_WHEELS ?= offline-wheels
PY ?= 3.12
WHEEL_PLATFORM ?= manylinux2014_x86_64
offline-wheels: $(STAMP)
	rm -f $(OFFLINE_WHEELS)/jax_cache_harness-*.whl
	$(BIN)/python -m pip wheel --quiet --no-deps -w $(OFFLINE_WHEELS) .
	$(BIN)/python -m pip download --quiet --only-binary=:all: --python-version $(PY) --platform $(WHEEL_PLATFORM) \
		-d $(OFFLINE_WHEELS) $(OFFLINE_WHEELS)/jax_cache_harness-*.whl
	@echo "offline-wheels: $$(ls $(OFFLINE_WHEELS)/*.whl | wc -l) wheels for Python $(PY) in $(OFFLINE_WHEELS)/ ($$(du -sh $(OFFLINE_WHEELS) | cut -f1))"

# make offline-wheels for the TPU host's Python (TPU_PY, 3.11) into TPU_WHEELS, where make tpu-check looks.
TPU_WHEELS ?= tpu-wheels
TPU_PY ?= 3.11
tpu-wheels: $(STAMP)
	$(MAKE) --no-print-directory offline-wheels OFFLINE_WHEELS=$(TPU_WHEELS) PY=$(TPU_PY)

cuda-image-check: $(STAMP)
	$(BIN)/python docker/check_cuda_image.py $(ARGS)

clean-envs:
	rm -rf $${HARNESS_ENV_DIR:-$$HOME/.cache/jax-cache-harness/envs}
