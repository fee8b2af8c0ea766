"""docs/schemas/*.json are generated from the types (harness/schemas.py, `make docs`) and every fixture folder's
results.json, old ones included, validates against the results schema."""

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from harness.results import schemas
from harness.core.records import plain
from harness.results.document import document_json, read_document, upgrade
from harness.results.fingerprints import Fingerprint
from harness.results.header import HostFacts

ROOT = Path(__file__).parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures"
FOLDERS = sorted(p.parent.name for p in FIXTURES.glob("*/results.json"))


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((ROOT / schemas.SCHEMAS_DIR / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("name", sorted(schemas.schemas()))
def test_the_committed_schema_is_what_the_types_say(name):
    written = (ROOT / schemas.SCHEMAS_DIR / name).read_text()
    assert written == schemas.render(schemas.schemas()[name]), (
        f"{schemas.SCHEMAS_DIR / name} is out of date with the types: run `make docs` and commit it")


def test_every_fixture_folder_is_there():
    assert {"v1-release-run", "smoke-run", "smoke-run-jobs2"} <= set(FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_fixture_results_file_validates(folder):
    """The schema is version 3's: an older file validates as `upgrade` maps it (as every reader reads it)."""
    data = _upgraded(json.loads((FIXTURES / folder / "results.json").read_text()))
    _validator("results.schema.json").validate(data)
    _validator("config.schema.json").validate(data["config"])


@pytest.mark.parametrize("path, value", [
    (("config", "platform"), "gpu"),
    (("options", "jobs"), "2"),
    (("host", "gpus"), "H100"),
    (("config", "env"), ["X=1"]),
    (("cells", 0, "spec", "mesh", "shape"), ["8"]),
])
def test_a_value_no_release_wrote_does_not_validate(path, value):
    data = _upgraded(json.loads((FIXTURES / "v1-release-run" / "results.json").read_text()))
    node = data
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        _validator("results.schema.json").validate(data)


def test_a_header_made_now_validates_with_every_part_it_can_hold():
    data = json.loads((FIXTURES / "v1-release-run" / "results.json").read_text())
    data["config"].update(env={"X": "1"}, args=["--a"], cwd="/w", processes=2, vary=["script-path"],
                          cache_thresholds="script", from_a_newer_release={"x": 1})
    data["options"].update(good=None, bad="0.4.28", jax_repo=None, index_url="https://i.example/simple")
    data["host"].update(gpus=["H100 (80 GB)"], docker_version="27")
    _validator("results.schema.json").validate(_upgraded(data))
    # as this release writes it (schema_version 3: the endpoints under options.bisect, docker_version in host.facts)
    written = json.loads(json.dumps(document_json(read_document(data, "v1"))))
    assert written["options"]["bisect"]["bad"] == "0.4.28" and written["host"]["facts"]["docker_version"] == "27"
    _validator("results.schema.json").validate(written)


def test_a_fingerprint_written_now_validates():
    written = plain(Fingerprint(HostFacts(hostname="h", gpus=("H100",)), [], "s.py"))
    _validator("fingerprint.schema.json").validate(json.loads(json.dumps(written)))


def test_what_older_results_lack_is_not_required():
    cost = {"runs": [{"run": 2}]}  # an older cost: the Structs' defaults fill in the rest
    job = {"processes": 2, "per_process": [{"rank": 0, "verdict": "clean"}]}
    data = json.loads((FIXTURES / "v1-release-run" / "results.json").read_text())
    data["cells"][0].update(cost=cost, job=job, commit={"sha": "abc"})
    data["cells"][0]["runs"][0]["script_cache"] = {"settings": [], "final": None, "problems": []}
    _validator("results.schema.json").validate(_upgraded(data))


def _upgraded(data):
    return upgrade(copy.deepcopy(data), data["schema_version"])


def _cell_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((ROOT / schemas.SCHEMAS_DIR / "results.schema.json").read_text())
    return jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/CellResult"})


def test_every_cell_with_every_optional_part_validates_to_its_last_key():
    from tests.records_golden import rich_cells
    for cell in rich_cells():
        _cell_validator().validate(json.loads(json.dumps(plain(cell))))


@pytest.mark.parametrize("where, value", [
    (("runs", 0, "ranks", 0, "seed"), "11"),
    (("runs", 0, "keys", "keys", 0, "outcome"), "kept"),
    (("runs", 0, "keys", "keys", 0, "devices"), ["0"]),
    (("attribution_detail", "run_a"), "1"),
    (("rank_split", "hashes", 0), ["h1"]),
    (("command", "env"), [["XLA_FLAGS", "--a"]]),
    (("script_cache", "folders", 0), {"requested": "/tmp/c", "api": "jax.config.update"}),
    (("variation", "factors", 0, "factor"), "moon-phase"),
    (("seeds", "candidates_probed"), "40"),
    (("cache_folder",), "somewhere"),
    (("spec", "processes"), "2"),
])
def test_a_wrong_value_anywhere_in_a_cell_does_not_validate(where, value):
    from tests.records_golden import rich_cells
    data = json.loads(json.dumps(plain(rich_cells()[0])))
    node = data
    for step in where[:-1]:
        node = node[step]
    node[where[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        _cell_validator().validate(data)


def test_the_json_summary_validates_and_a_wrong_value_in_it_does_not():
    from harness.report.table import summary_json
    from harness.results.document import SweepStatus
    from tests.cells import CELLS
    data = json.loads(json.dumps(summary_json(CELLS, SweepStatus.COMPLETE, "r/results.json", "r/report.md")))
    _validator("summary.schema.json").validate(data)
    for change in (lambda d: d["cells"][0].update(runs="2"), lambda d: d["verdicts"].update(maybe=1),
                   lambda d: d["boundaries"].pop("line"), lambda d: d.update(status="halfway")):
        wrong = copy.deepcopy(data)
        change(wrong)
        with pytest.raises(jsonschema.ValidationError):
            _validator("summary.schema.json").validate(wrong)


def test_a_document_with_its_key_components_once_per_cell_validates():
    """A cell written now keeps each key's components once, in `key_components`: the schema says the table."""
    from harness.core.jaxlog import LoggedKey, Outcome, RunLog
    from harness.core.records import replace
    from harness.core.runs import RunRecord

    document = read_document(json.loads((FIXTURES / "smoke-run" / "results.json").read_text()), "smoke-run")
    components = {"computation": "c" * 64, "XLA flags": "f" * 64}
    runs = [RunRecord(i, i, 0, 1.0, [], keys=RunLog([LoggedKey("jit_f", "jit_f-" + "a" * 64, Outcome.HIT,
                                                               components=components)])) for i in (1, 2)]
    document.cells[0] = replace(document.cells[0], runs=runs)
    data = json.loads(json.dumps(document_json(document)))
    assert data["cells"][0]["key_components"] == {"jit_f-" + "a" * 64: components}
    _validator("results.schema.json").validate(data)
    data["cells"][0]["key_components"]["jit_f-" + "a" * 64] = ["not", "a", "mapping"]
    with pytest.raises(jsonschema.ValidationError):
        _validator("results.schema.json").validate(data)
