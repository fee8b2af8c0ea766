"""The results header typed (harness/results/header.py): every shape an earlier release wrote reads, meaning what it
said; a header made now is written as its Structs say (schema_version 3)."""

import hashlib
import json
import tomllib
from dataclasses import asdict
from pathlib import Path

import pytest

from harness.core.records import plain as as_json
from harness.results.header import recorded_config
from harness.core.confidence import SeedStrategy
from harness.inputs.config import CHECK_SOURCE, parse_config
from harness.inputs.dependencies import Requirements
from harness.core.errors import UserError
from harness.core.factors import Factor
from harness.core.files import harness_version
from harness.results.header import BisectRange, RecordedConfig, RecordedOptions
from harness.results.identity import SweepIdentity
from harness.core.kinds import BackendName, Platform, ThresholdMode
from harness.results.document import SCHEMA_VERSION, document_json, load_results, read_document
from harness.service.measurement import host_facts
from harness.core.records import convert, plain
from harness.results.document import read_header
from harness.results.header import host_flat, host_record

FIXTURES = Path(__file__).parents[1] / "fixtures"
FOLDERS = ["v1-release-run", "smoke-run", "smoke-run-jobs2"]


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_fixture_header_reads_typed_and_means_what_it_said(folder):
    """Old folders read (schema_version 3 writes them in its own shape): every value the file held is in the
    typed header, under the key it had (the bisection's endpoints under `bisect`, a backend's facts under
    `facts`)."""
    data = json.loads((FIXTURES / folder / "results.json").read_text())
    header = read_header(data)
    assert header.config.name == "smoke" and header.config.platform == Platform.CPU
    assert header.options.backend == BackendName.VENV and header.host.cpu_count == 2
    present = {part: {k: v for k, v in data[part].items() if v is not None} for part in ("config", "options", "host")}
    assert plain(header.config) == present["config"]
    assert plain(header.options) == present["options"]
    assert host_flat(header.host) == present["host"]
    assert read_header({"schema_version": SCHEMA_VERSION, **plain(header)}) == header


def test_older_shapes_missing_null_and_unknown_keys():
    # smoke-run (an early release): no seeds, no all_runs, no jobs_why; the host's backend written last.
    old = read_header(json.loads((FIXTURES / "smoke-run" / "results.json").read_text()))
    assert old.options.seeds is None and old.options.all_runs is None and old.options.runs_at_once_why is None
    assert "seeds" not in plain(old.options)  # absent stays absent: the identity of that folder is unchanged
    # null reads as absent; a key this release does not know is not kept in the config (merge needs none)
    config = read_header({"schema_version": 2, "config": {"name": "n", "python": None,
                                                          "from_a_newer_release": {"x": 1}}}).config
    assert config.python is None and plain(config) == {"name": "n"}
    # a host's facts this release does not name are kept (merge carries them into merged_from)
    host = host_record({"os": "L", "docker": "19.03", "backend_python": "3.8"})  # `docker`: an older key
    assert host.facts == {"docker": "19.03", "backend_python": "3.8"} and host_flat(host) == {
        "docker": "19.03", "backend_python": "3.8", "os": "L"}
    assert plain(read_header({}).config) == {}  # a header with nothing in it


def test_a_header_made_now_is_written_as_the_config_and_options_say(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    config = parse_config({"name": "check-s", "repro": str(script), "jax_versions": ["0.4.28"], "platform": "cpu",
                           "args": ["--a", "b"], "env": {"X": "1"}, "cwd": str(tmp_path), "processes": 2,
                           "device_count": 8, "cache_thresholds": "script", "requirements": ["flax"]}, source=CHECK_SOURCE, base_dir=tmp_path)
    assert config.requirements == Requirements(("flax",))
    written = as_json(recorded_config(config))
    typed = convert(written, RecordedConfig)
    assert plain(typed) == written
    # The bytes Config.to_json wrote before it went (same keys, same order): a resumed folder is the same sweep.
    assert json.dumps(written) == json.dumps({
        "name": "check-s", "repro": str(script), "jax_versions": ["0.4.28"], "platform": "cpu", "device_count": 8,
        "meshes": [], "runs": 8, "timeout_s": 300.0, "docker": {}, "source": CHECK_SOURCE, "requirements": ["flax"],
        "cache_thresholds": "script", "args": ["--a", "b"], "env": {"X": "1"}, "cwd": str(tmp_path), "processes": 2})
    assert (typed.cache_thresholds, typed.env, typed.processes, typed.requirements) == \
        (ThresholdMode.SCRIPT, {"X": "1"}, 2, ("flax",))
    assert convert({"vary": ["cwd", "tz"]}, RecordedConfig).vary == (Factor.CWD, Factor.TZ)
    # The options in the order the sweep and the bisection wrote their dicts (the backend added last).
    sweep = RecordedOptions(runs=4, runs_at_once=2, runs_at_once_why="asked", seeds=SeedStrategy.CHOSEN,
                            all_runs=False, backend=BackendName.VENV, backend_reason="asked")
    assert json.dumps(plain(sweep)) == json.dumps({
        "runs": 4, "jobs": 2, "jobs_why": "asked", "seeds": "chosen", "all_runs": False, "backend": "venv",
        "backend_reason": "asked"})
    bisect = RecordedOptions(runs=4, runs_at_once=1, runs_at_once_why="w", seeds=SeedStrategy.RANDOM,
                             bisect=BisectRange(None, "0.4.28", None), backend=BackendName.DOCKER, backend_reason="r")
    expected = {"runs": 4, "jobs": 1, "jobs_why": "w", "seeds": "random",
                "bisect": {"good": None, "bad": "0.4.28", "jax_repo": None}, "backend": "docker", "backend_reason": "r"}
    assert json.dumps(plain(bisect)) == json.dumps(expected)
    assert convert(expected, RecordedOptions) == bisect  # the nulls of a bisection's endpoints come back
    # as a bisection before schema_version 3 wrote them: three keys among the options
    older = {"runs": 4, "jobs": 1, "jobs_why": "w", "seeds": "random", "good": None, "bad": "0.4.28",
             "jax_repo": None, "backend": "docker", "backend_reason": "r"}
    assert read_header({"schema_version": 2, "options": older}).options == bisect
    # The host: the backend's facts first (a clashing one renamed), then the host's own.
    host = host_facts({"backend": "docker", "python": "3.10", "docker_version": "24"})
    assert list(host_flat(host))[:4] == ["backend", "backend_python", "docker_version", "os"]
    assert host.facts == {"backend_python": "3.10", "docker_version": "24"}
    # The harness that measured, as installed (pyproject.toml's version), after its interpreter's path.
    assert host.harness_version == harness_version() == tomllib.loads(
        (Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["version"]
    assert list(host_flat(host)).index("harness_version") == list(host_flat(host)).index("harness_python") + 1
    assert "harness_version" not in host_flat(host_record({"os": "L"}))  # an older folder's stays absent


def test_the_sweep_identity_and_its_key_are_what_they_were_for_an_old_folder():
    """A bisection finds its recorded state by SweepIdentity.key: the typed header must give the key the
    dicts gave (the same config, runs, seeds and all_runs), or every recorded bisection would be lost."""
    data = json.loads((FIXTURES / "v1-release-run" / "results.json").read_text())
    identity = SweepIdentity.of(read_header(data))
    options = data["options"]
    before = {"config": {k: v for k, v in data["config"].items() if k != "source"}, "versions": data["versions"],
              "runs": options["runs"], "seeds": options["seeds"], "all_runs": options["all_runs"]}
    text = json.dumps({**before, "good": "0.4.26"}, sort_keys=True, default=str)
    assert identity.key(good="0.4.26") == hashlib.sha256(text.encode()).hexdigest()[:10]
    recorded = json.loads(json.dumps(asdict(identity)))
    sources = {"index_url": None, "extra_index_urls": [], "with_editable": []}  # an old folder names none
    assert recorded == {**before, "versions": data["versions"], **sources}


@pytest.mark.parametrize("part, key, value, message", [
    ("config", "platform", "gpu", "config.platform: Invalid enum value 'gpu'"),
    ("options", "seeds", "lucky", "options.seeds: Invalid enum value 'lucky'"),
    ("options", "jobs", "2", "options.jobs: Expected `int | null`, got `str`"),
    ("host", "gpus", "H100", "host.gpus: Expected `array | null`, got `str`"),
    ("config", "env", ["X=1"], "config.env: Expected `object | null`, got `array`"),
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
    document = read_document(data, "v1")
    again = read_document(document_json(document), "again")
    assert again.header == document.header and again.header.options.overlapped is False
