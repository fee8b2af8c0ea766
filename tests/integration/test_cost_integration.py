"""Seconds a miss costs, end to end with real releases: the seed loses jit_f's compile time in every fresh
process on 0.4.28 and saves it on 0.4.29 (JSON, table, report); a host-callback script's cache statistics
name the module JAX never writes, with JAX's reason, on 0.6.0."""

import re

import pytest

from tests.sweeps import sweep

pytestmark = pytest.mark.integration


def test_the_seed_loses_seconds_per_start_on_0_4_28_and_saves_them_on_0_4_29(tmp_path, capsys):
    swept = sweep(["run", "configs/shard_map_grad.yaml", "--versions", "0.4.28", "0.4.29",
                   "--runs", "3", "--jobs", "1"], tmp_path, capsys)
    data = swept.data
    cells = {c["spec"]["jax_version"]: c for c in data["cells"]}
    bad, good = cells["0.4.28"]["cost"], cells["0.4.29"]["cost"]
    assert cells["0.4.28"]["verdict"] == "reproduced" and cells["0.4.29"]["verdict"] == "clean"
    assert bad["lost_per_start_s"] > 0 and bad["each_start_missed"] == ["jit_f"] and bad["modules"] == 4
    assert bad["runs"][1].get("missed_modules", []) == ["jit_f"] and bad["runs"][1].get("hits", 0) == 3
    assert good["lost_per_start_s"] == 0 and good["saved_per_start_s"] > 0 and good.get("missed_modules", []) == []
    assert all(r.get("hits", 0) == 4 and r.get("misses", 0) == 0 for r in good["runs"][1:])
    lost = f"each fresh process recompiles jit_f: {bad['lost_per_start_s']:.2f} s lost per start (1 of 4 modules missed)"
    saved = f"a hit saves {good['saved_per_start_s']:.2f} s per start (4 modules loaded)"
    run_dir = swept.run_dir
    for text in (swept.out, (run_dir / "table.md").read_text(), (run_dir / "report.md").read_text()):
        assert lost in text and saved in text
    report = (run_dir / "report.md").read_text()
    stats = report.split("## Cache statistics", 1)[1]
    assert re.search(r"\| 0\.4\.28 .*\|\s+1 \|\s+0 \|", stats)  # one later miss, nothing refused
    # The key's compile time is what JAX logged in that run.
    second = cells["0.4.28"]["runs"][1]
    (new_key,) = [k for k in second["keys"]["keys"] if k["module"] == "jit_f" and k["outcome"] != "hit"]
    assert f"({new_key['compile_time_s']:.2f}s)" in (run_dir / second["log"]).read_text()


def test_cache_statistics_name_the_module_a_host_callback_keeps_out_of_the_cache(tmp_path, capsys):
    swept = sweep(["check", "examples/host_callback.py", "--versions", "0.6.0", "--runs", "2"],
                  tmp_path, capsys)
    data = swept.data
    (cell,) = data["cells"]
    assert cell["cost"]["each_start_missed"] == ["jit_f"] and cell["cost"]["untimed_modules"] == ["jit_f"]
    report = (swept.run_dir / "report.md").read_text()
    stats = report.split("## Cache statistics", 1)[1]
    assert ("- jax 0.6.0, script, cpu x8: `jit_f` in 2 of 2 runs: \"it uses host callbacks (e.g. from jax.debug.print "
            "or breakpoint)\"") in stats
    # The cell is `not cached`: its detail says the cost JAX logs no time for, from the recorder's timestamps.
    assert cell["verdict"] == "not cached" and re.search(r"jax\.pure_callback\); never written by JAX, so every fresh "
                                                         r"process compiles it again: [0-9.]+ s lost per start", swept.out)
