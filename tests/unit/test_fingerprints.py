"""Fingerprints and their diff (pure), and `harness diff`'s exit codes and inputs."""

import json

import pytest

from harness.cli.commands import main
from harness.core.records import plain
from harness.results.fingerprints import (MAX_FINGERPRINT_BYTES, Fingerprint, FingerprintCell, cell_fingerprint, diff,
                                         fingerprint_of, render_diff)
from harness.results.header import HostFacts
from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict
from harness.core.runs import RunRecord
from harness.results.header import host_record


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
                        environment_facts={"jaxlib": "0.5.0"})
    found = cell_fingerprint(result, "/c")
    assert found.seed == 5 and found.modules == {"jit_f": {key.key: key.components}}
    assert found.facts == {"jaxlib": "0.5.0", "cache_dir": "/c"}
    taken = Fingerprint(HostFacts(hostname="x"), [found], "s.py")
    assert plain(fingerprint_of(plain(taken), "f")) == plain(taken)


def test_harness_diff_exits_1_when_keys_differ_and_2_for_what_is_no_fingerprint(tmp_path, capsys):
    a = Fingerprint(HostFacts(), [cell(jit_f={"1": comps(computation="1", compile_options="1")})])
    b = Fingerprint(HostFacts(), [cell(jit_f={"2": comps(computation="1", compile_options="2")})])
    (tmp_path / "a.json").write_text(json.dumps(plain(a)))
    (tmp_path / "b.json").write_text(json.dumps(plain(b)))
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
    b = Fingerprint(host_record({"driver_version": "535.2", "gpus": ["H100 (80 GiB)"]}), [])
    assert render_diff(a, b, []) == "the two differ in: driver_version: 550.1 vs 535.2"
    assert fingerprint_of(plain(a), "a").host == a.host


def _good():
    return plain(Fingerprint(HostFacts(hostname="h"), [cell(jit_f={"1": comps(computation="1")})], "s.py"))


def _with_cell(**fields):
    data = _good()
    data["cells"][0].update(fields)
    return json.dumps(data)


# Issue 32.8: each was a traceback, a value printed at length, or a wrong type taken as a fingerprint.
MALFORMED = {
    "200,000 nested brackets": "[" * 200_000 + "]" * 200_000,
    "a seed of 100,000 digits": _with_cell(seed=0).replace('"seed": 0', '"seed": ' + "1" * 100_000),
    "jax_version: null": _with_cell(jax_version=None),
    "jax_version: a number": _with_cell(jax_version=5),
    "a jax_version of 300 characters": _with_cell(jax_version="1" * 300),
    "seed: NaN": _with_cell(seed=0).replace('"seed": 0', '"seed": NaN'),
    "seed: Infinity": _with_cell(seed=0).replace('"seed": 0', '"seed": Infinity'),
    'seed: "s"': _with_cell(seed="s"),
    "seed: true": _with_cell(seed=True),
    "seed: -1": _with_cell(seed=-1),
    "an integer hash": _with_cell(modules={"jit_f": {"jit_f-1": {"computation": 12345}}}),
    "keys as a list": _with_cell(modules={"jit_f": ["jit_f-1"]}),
    "a module name with a newline": _with_cell(modules={"jit_f\nx": {}}),
    "fingerprint: 2": json.dumps({**_good(), "fingerprint": 2}),
    "no fingerprint format": json.dumps({k: v for k, v in _good().items() if k != "fingerprint"}),
    "an unknown platform": _with_cell(platform="tpu-v9"),
    "device_count: text": _with_cell(device_count="8"),
    "a cell that is a list": json.dumps({**_good(), "cells": [[1]]}),
    "host: a list": json.dumps({**_good(), "host": [1]}),
    "a hostname of 5,000 characters": json.dumps({**_good(), "host": {"hostname": "h" * 5000}}),
    "binary": b"\x00\xff" * 64,
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_fingerprint_is_one_line_and_exit_2(name, tmp_path, capsys):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(_good()))
    content = MALFORMED[name]
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    for a, b in ((good, bad), (bad, good)):
        assert main(["diff", str(a), str(b)]) == 2, name
        out, err = capsys.readouterr()
        assert not out and len(err.splitlines()) == 1 and len(err) < 400, err[:500]
        assert str(bad) in err and "Traceback" not in err


def test_a_fingerprint_larger_than_its_bound_is_not_read_and_no_value_is_printed_at_length(tmp_path, capsys):
    big = tmp_path / "big.json"
    big.write_text(_with_cell(jax_version="9" * (40 << 20)))  # 40 MiB, past the bound
    assert main(["diff", str(big), str(big)]) == 2
    err = capsys.readouterr().err
    assert f"larger than {MAX_FINGERPRINT_BYTES >> 20} MiB" in err and len(err) < 300
    big.write_text(_with_cell(jax_version="9" * (1 << 20)))  # within the bound: the value is not echoed
    assert main(["diff", str(big), str(big)]) == 2
    err = capsys.readouterr().err
    assert "jax_version: must be at most 100 characters" in err and len(err) < 300
    assert main(["diff", "/dev/zero", str(big)]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_good_fingerprint_still_reads(tmp_path, capsys):
    path = tmp_path / "good.json"
    path.write_text(_with_cell(seed=None, platform="cuda", device_count=2, note="its log named no key"))
    assert main(["diff", str(path), str(path)]) == 0
    assert "jax 0.5.0 (cuda x2)" in capsys.readouterr().out


def test_the_results_reader_follows_the_same_rule(tmp_path, capsys):
    """One bounded reader for both: a results.json with a number of 5,000 digits was a traceback too."""
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "results.json").write_text('{"schema_version": ' + "1" * 5000 + "}")
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "not a harness results file" in err
