"""Fingerprints and their diff (pure), and `harness diff`'s exit codes and inputs."""

import json

from harness.cli import main
from harness.fingerprints import Fingerprint, FingerprintCell, cell_fingerprint, diff, render_diff
from harness.header import HostFacts
from harness.jaxlog import LoggedKey, Outcome, RunLog
from harness.model import CellResult, CellSpec, Platform, RunRecord, Verdict


def comps(**values):
    return {name: f"{value:0>64}" for name, value in values.items()}


def cell(version="0.5.0", **modules):
    return FingerprintCell(version, "cpu", 8, 1, {m: {f"{m}-{k}": c for k, c in keys.items()}
                                                  for m, keys in modules.items()})


def test_the_same_keys_are_the_same_and_a_moved_component_is_named():
    a = Fingerprint(HostFacts(hostname="a"), [cell(jit_f={"1": comps(computation="1", compile_options="1")})])
    b = Fingerprint(HostFacts(hostname="b"), [cell(jit_f={"2": comps(computation="1", compile_options="2")})])
    same = diff(a, a)
    assert not any(c.differs for c in same)
    assert "the same keys (1 module)" in render_diff(a, a, same)
    found = diff(a, b)
    assert found[0].differs and found[0].modules[0].components == ["compile_options"]
    text = render_diff(a, b, found)
    assert "1 of 1 modules' keys differ; moved: compile_options" in text
    assert "the two differ in: hostname: a vs b" in text


def test_a_release_in_one_fingerprint_only_and_other_seeds_are_said():
    a = Fingerprint(HostFacts(), [cell("0.5.0", jit_f={"1": comps(computation="1")})])
    b = Fingerprint(HostFacts(), [cell("0.6.0", jit_f={"1": comps(computation="1")})])
    text = render_diff(a, b, diff(a, b))
    assert "jax 0.5.0 (cpu x8): only in A" in text and "jax 0.6.0 (cpu x8): only in B" in text
    other = cell(jit_f={"2": comps(computation="2")})
    other.seed = 7
    text = render_diff(a, Fingerprint(HostFacts(), [other]), diff(a, Fingerprint(HostFacts(), [other])))
    assert "hash seeds differ: 1 vs 7" in text and "jit_f: computation" in text


def test_a_fingerprint_round_trips_and_comes_from_a_cells_first_good_run():
    key = LoggedKey("jit_f", "jit_f-" + "a" * 64, Outcome.WRITTEN, components=comps(computation="1"))
    result = CellResult(CellSpec("0.5.0", Platform.CPU, 8, None), Verdict.CLEAN, {},
                        runs=[RunRecord(2, 9, 0, 0.1, [], keys=RunLog([])), RunRecord(1, 5, 0, 0.1, [], keys=RunLog([key]))],
                        environment={"jaxlib": "0.5.0"})
    found = cell_fingerprint(result, "/c")
    assert found.seed == 5 and found.modules == {"jit_f": {key.key: key.components}}
    assert found.facts == {"jaxlib": "0.5.0", "cache_dir": "/c"}
    taken = Fingerprint(HostFacts(hostname="x"), [found], "s.py")
    assert Fingerprint.from_json(taken.to_json(), "f").to_json() == taken.to_json()


def test_harness_diff_exits_1_when_keys_differ_and_2_for_what_is_no_fingerprint(tmp_path, capsys):
    a = Fingerprint(HostFacts(), [cell(jit_f={"1": comps(computation="1", compile_options="1")})])
    b = Fingerprint(HostFacts(), [cell(jit_f={"2": comps(computation="1", compile_options="2")})])
    (tmp_path / "a.json").write_text(json.dumps(a.to_json()))
    (tmp_path / "b.json").write_text(json.dumps(b.to_json()))
    assert main(["diff", str(tmp_path / "a.json"), str(tmp_path / "a.json")]) == 0
    assert main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 1
    assert "moved: compile_options" in capsys.readouterr().out
    (tmp_path / "bad.json").write_text('{"x": 1}')
    assert main(["diff", str(tmp_path / "a.json"), str(tmp_path / "bad.json")]) == 2
    assert "not a fingerprint" in capsys.readouterr().err


def test_a_results_folder_is_a_fingerprint_too(capsys):
    assert main(["diff", "tests/fixtures/smoke-run", "tests/fixtures/smoke-run"]) == 0
    assert "the same keys" in capsys.readouterr().out
    assert main(["fingerprint", "tests/fixtures/smoke-run"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["jax_version"] for c in data["cells"]] and data["fingerprint"] == 1


def test_the_hosts_are_compared_by_the_facts_a_results_folder_records():
    """A results folder's host says `driver_version` (nvidia-smi's): that is the driver compared, and a
    fingerprint file reads its host back typed."""
    a = Fingerprint(HostFacts(driver_version="550.1", gpus=("H100 (80 GiB)",)), [])
    b = Fingerprint(HostFacts.from_json({"driver_version": "535.2", "gpus": ["H100 (80 GiB)"]}), [])
    assert render_diff(a, b, []) == "the two differ in: driver_version: 550.1 vs 535.2"
    assert Fingerprint.from_json(a.to_json(), "a").host == a.host
