"""The results header typed (harness/results/header.py): every shape an earlier release wrote reads, and is written
back key for key; a header made now is written exactly as the dicts it replaced were."""

import hashlib
import json
import tomllib
from dataclasses import asdict
from pathlib import Path

import pytest

from harness.core.confidence import SeedStrategy
from harness.inputs.config import CHECK_SOURCE, parse_config
from harness.inputs.dependencies import Requirements
from harness.core.errors import UserError
from harness.core.vary_factors import Factor
from harness.core.files import harness_version
from harness.results.header import BisectRange, HostFacts, RecordedConfig, RecordedOptions, ResultsHeader
from harness.results.identity import SweepIdentity
from harness.core.model import BackendName, Platform, ThresholdMode
from harness.results.document import ResultsDocument, load_results
from harness.service.measurement import host_facts

FIXTURES = Path(__file__).parents[1] / "fixtures"
FOLDERS = ["v1-release-run", "smoke-run", "smoke-run-jobs2"]


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_fixture_header_reads_typed_and_writes_back_byte_for_byte(folder):
    data = json.loads((FIXTURES / folder / "results.json").read_text())
    header = ResultsHeader.from_json(data)
    assert header.config.name == "smoke" and header.config.platform == Platform.CPU
    assert header.options.backend == BackendName.VENV and header.host.cpu_count == 2
    for part in ("config", "options", "host"):
        assert json.dumps(header.to_json()[part]) == json.dumps(data[part]), part  # same keys, same order


def test_older_shapes_missing_null_and_unknown_keys():
    # smoke-run (an early release): no seeds, no all_runs, no jobs_why; the host's backend written last.
    old = ResultsHeader.from_json(json.loads((FIXTURES / "smoke-run" / "results.json").read_text()))
    assert old.options.seeds is None and old.options.all_runs is None and old.options.jobs_why is None
    assert "seeds" not in old.options.to_json()  # absent stays absent: the identity of that folder is unchanged
    # null reads as absent; a key this release does not know is kept and written back
    config = RecordedConfig.from_json({"name": "n", "python": None, "from_a_newer_release": {"x": 1}})
    assert config.python is None and config.extra == {"from_a_newer_release": {"x": 1}}
    assert config.to_json() == {"name": "n", "from_a_newer_release": {"x": 1}}
    host = HostFacts.from_json({"os": "L", "docker": "19.03", "backend_python": "3.8"})  # `docker`: an older key
    assert host.facts == {"docker": "19.03", "backend_python": "3.8"} and host.to_json() == {
        "os": "L", "docker": "19.03", "backend_python": "3.8"}
    assert list(ResultsHeader.from_json({}).to_json()["config"]) == []  # a header with nothing in it


def test_a_header_made_now_is_written_as_the_config_and_options_dicts_were(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    config = parse_config({"name": "check-s", "repro": str(script), "jax_versions": ["0.4.28"], "platform": "cpu",
                           "args": ["--a", "b"], "env": {"X": "1"}, "cwd": str(tmp_path), "processes": 2,
                           "device_count": 8, "cache_thresholds": "script", "requirements": ["flax"]}, source=CHECK_SOURCE, base_dir=tmp_path)
    assert config.requirements == Requirements(("flax",))
    written = config.to_json()
    typed = RecordedConfig.from_json(written)
    assert json.dumps(typed.to_json()) == json.dumps(written)
    assert (typed.cache_thresholds, typed.env, typed.processes, typed.requirements) == \
        (ThresholdMode.SCRIPT, (("X", "1"),), 2, ("flax",))
    assert RecordedConfig.from_json({"vary": ["cwd", "tz"]}).vary == (Factor.CWD, Factor.TZ)
    # The options in the order the sweep and the bisection wrote their dicts (the backend added last).
    sweep = RecordedOptions(runs=4, jobs=2, jobs_why="asked", seeds=SeedStrategy.CHOSEN, all_runs=False,
                            backend=BackendName.VENV, backend_reason="asked")
    assert json.dumps(sweep.to_json()) == json.dumps({"runs": 4, "jobs": 2, "jobs_why": "asked", "seeds": "chosen",
                                                      "all_runs": False, "backend": "venv",
                                                      "backend_reason": "asked"})
    bisect = RecordedOptions(runs=4, jobs=1, jobs_why="w", seeds=SeedStrategy.RANDOM,
                             bisect=BisectRange(None, "0.4.28", None), backend=BackendName.DOCKER, backend_reason="r")
    expected = {"runs": 4, "jobs": 1, "jobs_why": "w", "seeds": "random", "good": None, "bad": "0.4.28",
                "jax_repo": None, "backend": "docker", "backend_reason": "r"}
    assert json.dumps(bisect.to_json()) == json.dumps(expected)
    assert RecordedOptions.from_json(expected) == bisect  # the nulls of a bisection's endpoints come back
    # The host: the backend's facts first (a clashing one renamed), then the host's own.
    host = host_facts({"backend": "docker", "python": "3.10", "docker_version": "24"})
    assert list(host.to_json())[:4] == ["backend", "backend_python", "docker_version", "os"]
    # The harness that measured, as installed (pyproject.toml's version), after its interpreter's path.
    assert host.harness_version == harness_version() == tomllib.loads(
        (Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["version"]
    assert list(host.to_json()).index("harness_version") == list(host.to_json()).index("harness_python") + 1
    assert "harness_version" not in HostFacts.from_json({"os": "L"}).to_json()  # an older folder's stays absent


def test_the_sweep_identity_and_its_key_are_what_they_were_for_an_old_folder():
    """A bisection finds its recorded state by SweepIdentity.key: the typed header must give the key the
    dicts gave (the same config, runs, seeds and all_runs), or every recorded bisection would be lost."""
    data = json.loads((FIXTURES / "v1-release-run" / "results.json").read_text())
    identity = SweepIdentity.of(ResultsHeader.from_json(data))
    options = data["options"]
    before = {"config": {k: v for k, v in data["config"].items() if k != "source"}, "versions": data["versions"],
              "runs": options["runs"], "seeds": options["seeds"], "all_runs": options["all_runs"]}
    text = json.dumps({**before, "good": "0.4.26"}, sort_keys=True, default=str)
    assert identity.key(good="0.4.26") == hashlib.sha256(text.encode()).hexdigest()[:10]
    recorded = json.loads(json.dumps(asdict(identity)))
    sources = {"index_url": None, "extra_index_urls": [], "with_editable": []}  # an old folder names none
    assert recorded == {**before, "versions": data["versions"], **sources}


@pytest.mark.parametrize("part, key, value, message", [
    ("config", "platform", "tpu", "config.platform: must be one of cpu, cuda, auto, not 'tpu'"),
    ("options", "seeds", "lucky", "options.seeds: must be one of chosen, random, not 'lucky'"),
    ("options", "jobs", "2", "options.jobs: must be a whole number, not '2'"),
    ("host", "gpus", "H100", "host.gpus: must be a list of GPUs, not 'H100'"),
    ("config", "env", ["X=1"], "config.env: must be a mapping of names to values"),
])
def test_a_value_no_release_wrote_is_one_line_naming_it(tmp_path, part, key, value, message):
    data = json.loads((FIXTURES / "v1-release-run" / "results.json").read_text())
    data[part][key] = value
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(UserError) as found:
        load_results(tmp_path)
    assert str(found.value).startswith(f"{tmp_path / 'results.json'}: ") and message in str(found.value)
    assert "\n" not in str(found.value)


def test_a_document_keeps_its_typed_header_through_a_round_trip():
    data = json.loads((FIXTURES / "v1-release-run" / "results.json").read_text())
    document = ResultsDocument.from_json(data, "v1")
    again = ResultsDocument.from_json(document.to_json(), "again")
    assert again.header == document.header and again.header.options.overlapped is False
