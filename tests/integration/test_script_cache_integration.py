"""A script that configures its cache in code, measured as its author wrote it (real JAX releases).

`tests/fixtures/sm.py` is the seed issue's script exactly as pasted there: it calls
`set_cache_dir('/jaxcache')`. The harness's start-up hook sends every run's cache to the cell's folder,
so the releases are told apart, and `/jaxcache` is never created.
"""

import os
from pathlib import Path

import pytest

from harness.environments.docker import docker_available
from tests.sweeps import check

pytestmark = pytest.mark.integration

SM = Path(__file__).parents[1] / "fixtures" / "sm.py"
SEED_VERDICTS = {"0.4.26": "clean", "0.4.27": "reproduced", "0.4.28": "reproduced", "0.4.29": "clean"}
ITS_FOLDER = Path("/jaxcache")
# The chosen seeds put every pair of the script's axis names in both orders by run 2, so a reproducing release is
# found there; the verdicts and the redirected folder need no more runs than that and one more on a clean release.
RUNS = ("--runs", "3")


def assert_seed_script_measured(data, run_dir):
    verdicts = {c["spec"]["jax_version"]: c["verdict"] for c in data["cells"]}
    assert verdicts == SEED_VERDICTS, [c["reason"] for c in data["cells"]]
    for cell in data["cells"]:
        assert cell["script_cache"]["folders"] == [["/jaxcache", "set_cache_dir"]]  # (folder asked for, api) pairs
        for run in cell["runs"]:
            (setting,) = run["script_cache"]["settings"]
            assert setting["requested"] == "/jaxcache" and setting["api"] == "set_cache_dir"
    report = (run_dir / "report.md").read_text()
    assert "The script set its cache folder to /jaxcache (set_cache_dir); the harness redirected it" in report
    assert "ls -1 /jaxcache" in report  # the hand-run commands look where the script writes
    assert not ITS_FOLDER.exists()


@pytest.fixture
def no_jaxcache():
    if ITS_FOLDER.exists():
        pytest.skip(f"{ITS_FOLDER} exists already: cannot tell whether a run created it")
    yield
    assert not ITS_FOLDER.exists(), "a run wrote into the folder the script asked for"


def test_the_seed_issues_own_script(tmp_path, capsys, no_jaxcache):
    swept = check([str(SM), "--versions", *SEED_VERDICTS, *RUNS], tmp_path, capsys)
    data = swept.data
    assert_seed_script_measured(data, swept.run_dir)


@pytest.mark.docker
def test_the_seed_issues_own_script_in_containers(tmp_path, capsys, no_jaxcache):
    ok, reason = docker_available()
    if not ok:
        if os.environ.get("HARNESS_REQUIRE_DOCKER") == "1":
            pytest.fail(f"HARNESS_REQUIRE_DOCKER=1 but {reason}")
        pytest.skip(reason)
    swept = check([str(SM), "--versions", *SEED_VERDICTS, *RUNS, "--backend", "docker"], tmp_path, capsys)
    data = swept.data
    assert {c["environment"]["backend"] for c in data["cells"]} == {"docker"}
    assert_seed_script_measured(data, swept.run_dir)


STABLE = """\
import jax, jax.numpy as jnp
{setup}
print(jax.jit(lambda x: x * 2 + 1)(jnp.ones(4)))
"""


def test_jax_config_update_on_a_recent_release(tmp_path, capsys, write):
    asked = tmp_path / "its-own-cache"
    script = write("config_update.py", STABLE.format(
        setup=f"jax.config.update('jax_compilation_cache_dir', {str(asked)!r})"))
    data = check([str(script), "--versions", "0.10.2", "--runs", "2"], tmp_path / "r", capsys).data
    (cell,) = data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert cell["script_cache"]["folders"] == [[str(asked), "jax.config.update"]]
    assert not asked.exists()


def test_thresholds_the_script_sets_are_zeroed_unless_its_own_are_asked_for(tmp_path, capsys, write):
    script = write("slow_only.py", STABLE.format(
        setup="jax.config.update('jax_persistent_cache_min_compile_time_secs', 600.0)"))
    data = check([str(script), "--versions", "0.10.2", "--runs", "2"], tmp_path / "zeroed", capsys).data
    (cell,) = data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert "cache_thresholds" not in data["config"]  # the default
    (setting,) = cell["runs"][0]["script_cache"]["settings"]
    assert (setting["requested"], setting["applied"]) == (600.0, 0.0)
    # It sets no folder: as written it has no cache at all, which comes before its threshold.
    assert cell["as_you_run_it"].startswith("as you run it, nothing is cached: the script sets no cache folder")
    assert cell["as_you_run_it"].endswith("below your 600 s threshold (jax_persistent_cache_min_compile_time_secs)")
    data = check([str(script), "--versions", "0.10.2", "--runs", "2", "--cache-thresholds", "script"],
                 tmp_path / "kept", capsys).data
    (cell,) = data["cells"]
    # Measured, as the program runs: every module compiles under its 600 s threshold, so none is ever written (issue
    # 62.6: the finding is the headline, never "nothing was measured")
    assert cell["verdict"] == "not cached" and cell["nothing_cached"] == "cache uninitialised"
    assert cell["reason"].startswith("as you run it, nothing is cached: the script sets no cache folder, "), cell["reason"]
    assert "; even with it, " in cell["reason"] and "under your 600 s threshold" in cell["reason"]
    assert "`jax_persistent_cache_min_compile_time_secs=0` would keep them" in cell["reason"]
    assert data["config"]["cache_thresholds"] == "script"


def test_a_script_that_turns_the_cache_off_is_not_an_unsupported_release(tmp_path, capsys, write):
    script = write("off.py", STABLE.format(setup="jax.config.update('jax_enable_compilation_cache', False)"))
    data = check([str(script), "--versions", "0.4.26", "--runs", "2"], tmp_path, capsys).data
    (cell,) = data["cells"]
    assert cell["verdict"] == "unsupported"
    assert cell["nothing_cached"] == "cache disabled"
    assert cell["reason"].startswith("nothing is cached, because the script turned its cache off: "
                                     "jax.config.update('jax_enable_compilation_cache', False)")
