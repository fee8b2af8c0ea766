"""Every Makefile target and how CI runs it, so that none is left to break unseen (issue 50, item 5).

A target CI runs itself (`.ci/run`: `make test`, `make base-image`) or that `make test` runs first (lint,
typecheck) says where; every other one is run by tests/integration/test_make_targets.py with the
arguments below: the real target, made short (one release, two runs, results in the test's folder), or a dry
run where the whole one needs a GPU or a 2 GB download, or takes longer than CI can give it (the benches: each
script's command line as make writes it, parsed with `--help`, which makes every import). `{tmp}` is the
test's folder, `{baseline}` the results folder `table` wrote there. tests/unit/test_make_targets.py checks that this table names exactly the Makefile's targets.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    ran_by: str  # "this test", or where CI runs it
    args: tuple[str, ...] = ()  # after `make NAME`
    expect_code: int = 0
    expect_text: str = ""  # in its output
    env: tuple[tuple[str, str], ...] = ()  # added to the environment ({tmp} filled in)


THIS_TEST = "tests/integration/test_make_targets.py"
# One release the integration tests install anyway, so its venv is there; two runs are the fewest a cell takes.
VERSION = "0.4.31"
SHORT = f"--versions {VERSION} --runs 2 --seeds random -q"

TARGETS = (
    Target("help", THIS_TEST, expect_text="make table"),
    Target("test", ".ci/run (make test)"),
    Target("lint", "make test, first"),
    Target("typecheck", "make test, first"),
    # One unit test, selected from all of them (make test runs them all, not through this target).
    Target("test-unit", THIS_TEST, ("XDIST=", "PYTEST_ARGS=-k the_parser_sees_rules_and_not_variables"),
           expect_text="1 passed"),
    Target("base-image", ".ci/run (make base-image, for bookworm and trixie)"),
    Target("docs", THIS_TEST),
    Target("site", "make test, first (after lint and typecheck)"),
    Target("table", THIS_TEST, (f"ARGS={SHORT} --out {{tmp}}/table",)),
    Target("smoke", THIS_TEST, (f"ARGS={SHORT} --out {{tmp}}/smoke",)),
    # Against the table's results folder, {baseline} (the test runs `table` first).
    Target("nightly", THIS_TEST, ("BASELINE={baseline}", f"ARGS={SHORT} --out {{tmp}}/nightly")),
    Target("bisect", THIS_TEST, ("ARGS=--versions 0.4.28 0.4.29 --runs 2 --seeds random -q --out {tmp}/bisect",),
           expect_text="0.4.29"),
    Target("reduce", THIS_TEST, ("SCRIPT=tests/fixtures/sm.py",
                                 "ARGS=--max-candidates 1 --runs 2 -q --out {tmp}/reduce")),
    Target("stress", THIS_TEST, ("ARGS=--only=5,000-digit",), expect_text="2 of 2 held"),
    Target("bench", THIS_TEST, ("BENCH_REPS=1", "BENCH_ARGS=--help"), expect_text="usage: bench_reduce.py"),
    Target("cuda-image-check", THIS_TEST, ("ARGS=--help",), expect_text="usage: check_cuda_image.py"),
    # No GPU in CI: the whole check on cpu's 8 simulated devices, with this venv's harness and, as GPU_PYTHON, the
    # python of a venv with JAX 0.10.2 installed, as a GPU host's image has it (the test sets GPU_PYTHON; it also
    # runs it on a machine without NVIDIA's driver; tests/unit/test_gpu_check.py the cuda path with stand-ins). The
    # stable program with 2 runs, not a GPU's 6: on cpu they prove the steps and the judge, not a GPU's stability.
    Target("gpu-check", THIS_TEST, expect_text="gpu-check: PASS",
           env=(("GPU_CHECK_PLATFORM", "cpu"), ("GPU_CHECK_OUT", "{tmp}/gpu-check"), ("GPU_CHECK_CPU_RUNS", "2"))),
    # The wheel folder an offline host installs from (the harness's own wheel and its dependencies', from the
    # index) for Python 3.12; the test installs the harness from it in a fresh Python 3.12 venv with no index.
    Target("offline-wheels", THIS_TEST, ("PY=3.12", "OFFLINE_WHEELS={tmp}/offline-wheels"),
           expect_text="wheels for Python 3.12"),
    # The same for the TPU host's Python (3.11) where make tpu-check looks.
    Target("tpu-wheels", THIS_TEST, ("TPU_WHEELS={tmp}/tpu-wheels",)),
    # No TPU in CI: the whole check on one simulated CPU device, with this venv's harness and a plain interpreter
    # whose PYTHONPATH gives it JAX 0.10.2, as a TPU host's image does (the test sets TPU_PYTHON and PYTHONPATH; it
    # also runs it with no wheel folder, as on a host nobody prepared); the stable program with 2 runs, as gpu-check's.
    Target("tpu-check", THIS_TEST, expect_text="tpu-check: PASS",
           env=(("TPU_CHECK_PLATFORM", "cpu"), ("TPU_CHECK_OUT", "{tmp}/tpu-check"), ("TPU_CHECK_CPU_RUNS", "2"))),
    Target("clean-envs", THIS_TEST, env=(("HARNESS_ENV_DIR", "{tmp}/envs"),)),
)
