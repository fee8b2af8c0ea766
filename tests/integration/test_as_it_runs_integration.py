"""Programs measured as they really run (docs/as-it-runs.md), with real JAX releases on 8 CPU-simulated
devices: a folder set in code reaches JAX only when the script sets it, nothing cached is never
`clean`, the program's own thresholds are told, and a failure that follows the hash seed says so."""

import re
from pathlib import Path

import pytest

from harness.results.document import read_cell

from tests.sweeps import check

pytestmark = pytest.mark.integration

SCRIPTS = Path(__file__).parents[1] / "fixtures" / "as_it_runs"


def test_an_array_made_before_the_folder_is_set_leaves_0_5_0_without_a_cache(tmp_path, capsys):
    """jax-ml/jax#25768, fixed in 0.5.1: with the folder in the environment, 0.5.0 looked clean."""
    swept = check([str(SCRIPTS / "init_order.py"), "--versions", "0.5.0", "0.5.1", "--runs", "2"],
                  tmp_path, capsys)
    data = swept.data
    old, fixed = data["cells"]
    assert old["verdict"] == "unsupported", old["reason"]
    assert old["nothing_cached"] == "cache uninitialised"
    assert old["reason"].startswith("nothing is cached, because JAX's cache was never initialised: a computation "
                                    "ran before the script set its folder")
    assert fixed["verdict"] == "clean", fixed["reason"]
    for cell in (old, fixed):
        assert cell["cache_folder"] == "hook"
        assert all(not r["new_entries"] for r in old["runs"])
    report = (swept.run_dir / "report.md").read_text()
    first = report[: report.index("## Results")]
    assert "**jax 0.5.0**: Nothing is cached, because JAX's cache was never initialised" in first
    assert "the harness set JAX_COMPILATION_CACHE_DIR" not in report  # the folder is the script's own
    assert not Path("/tmp/jax-25768-cache").exists() or not any(Path("/tmp/jax-25768-cache").iterdir())


def test_the_documentations_example_names_its_threshold_and_compile_time(tmp_path, capsys):
    """jax-ml/jax#21908: measured with zeros it is clean, and as its author runs it nothing is written."""
    swept = check([str(SCRIPTS / "docs_example.py"), "--versions", "0.4.31", "--runs", "2"],
                  tmp_path / "zeros", capsys)
    data = swept.data
    (cell,) = data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    told = cell["as_you_run_it"]
    # Modules are listed slowest first, so jit_f is "jit_f compiles in" or "jit_f in" by its compile time.
    assert told.startswith("as you run it, nothing is written: ")
    assert re.search(r"(: |, )jit_f (compiles )?in [0-9.]+ s", told), told
    assert told.endswith("below JAX's default 1 s threshold (jax_persistent_cache_min_compile_time_secs)")
    # The verdict's reason leads the table's detail; the note follows it, shortened.
    table = swept.out[:swept.out.index("What to do:")]
    assert "| jit_f: 1 key per run" in table and told not in table
    assert f"What to do:\n- jax 0.4.31: {told}\n" in swept.out  # said whole under the table, not only in report.md
    assert ("; with the harness's cache settings (as you run it, nothing is written: its compiles are under "
            "JAX's thresholds; see report.md)") in swept.out
    report = (swept.run_dir / "report.md").read_text()
    assert "**jax 0.4.31**: As you run it, nothing is written" in report[: report.index("## Results")]
    data = check([str(SCRIPTS / "docs_example.py"), "--versions", "0.4.31", "--runs", "2",
                  "--cache-thresholds", "script"], tmp_path / "script", capsys).data
    (cell,) = data["cells"]
    assert cell["verdict"] == "not cached" and cell["nothing_cached"] == "thresholds"  # measured: never unsupported
    assert cell["reason"].startswith("as you run it, nothing is cached: ") and "1 s threshold" in cell["reason"]


def test_a_script_that_sets_no_folder_gets_it_from_the_environment(tmp_path, capsys):
    swept = check(["examples/stable_script.py", "--versions", "0.4.31", "--runs", "2"], tmp_path, capsys)
    data = swept.data
    (cell,) = data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert cell["cache_folder"] == "environment"
    assert "set no cache folder in code" in cell["cache_folder_why"]
    # As its author runs it (no JAX_COMPILATION_CACHE_DIR) it has no cache: told before JAX's threshold.
    assert cell["as_you_run_it"].startswith("as you run it, nothing is cached: the script sets no cache folder")
    assert "; even with it, " in cell["as_you_run_it"] and "below JAX's default 1 s threshold" in cell["as_you_run_it"]
    logs = swept.run_dir / "logs" / "jax-0.4.31-cpu8-script"
    assert not list(logs.glob("run-01-*.first-use.log"))  # run 1 ran once: the hook gave the folder at first use
    assert len(list(logs.glob("run-01-*.log"))) == 1
    report = (swept.run_dir / "report.md").read_text()
    assert ("- The script sets no cache folder; the harness set JAX_COMPILATION_CACHE_DIR to measure (where it is "
            "not set, JAX keeps no persistent cache for this script) (jax 0.4.31).") in report


def test_a_compile_that_fails_for_some_hash_seeds_names_the_exception_and_the_seeds(tmp_path, capsys):
    """Shardy's verifier on 0.5.3 (fixed by jax commit 71b36dca84): two replicated axes in set order. Ten
    random seeds all on one side of a two-way split: about 1 in 500."""
    swept = check([str(SCRIPTS / "shardy_replicated_axes.py"), "--versions", "0.5.3", "--runs", "10"],
                  tmp_path, capsys)
    data = swept.data
    (cell,) = data["cells"]
    assert cell["verdict"] == "error"
    failed = [r for r in cell["runs"] if r["exit_code"] != 0]
    assert failed and len(failed) < len(cell["runs"])
    for run in failed:
        assert "replicated axes are not ordered w.r.t. mesh" in run["reason"], run["reason"]
        assert "Clearing JAX backend caches" not in run["reason"]
    check_ = cell["seed_check"]
    assert read_cell(cell).seed_check.follows_seed is True  # derived from the re-runs (not written)
    assert cell["reason"].startswith(f"fails for some hash seeds (a nondeterministic program): seed "
                                     f"{check_['failing']['seed']} fails")
    assert f"seed {check_['passing']['seed']} passes" in cell["reason"]
    assert "ValueError: Cannot lower jaxpr with verifier errors: 'sdy.sharding_constraint' op replicated axes" \
        in cell["reason"]
    report = (swept.run_dir / "report.md").read_text()
    assert f"PYTHONHASHSEED={check_['failing']['seed']} " in report
    assert f"PYTHONHASHSEED={check_['passing']['seed']} " in report
