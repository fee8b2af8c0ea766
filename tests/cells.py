"""Cells and results documents as stored results hold them, shared by the tests of the outputs: cells of
every verdict with their costs, the JUnit schema they are checked against, and the shards of a sweep."""

from __future__ import annotations

import json
from pathlib import Path

import xmlschema

from harness.core.records import plain
from harness.core.findings import CellCost
from harness.core.model import CellResult, CellSpec, Mesh
from harness.core.kinds import Platform, Verdict
from harness.core.runs import RunRecord
from harness.inputs.sharding import Shard

SCHEMA = xmlschema.XMLSchema(Path(__file__).parent / "fixtures" / "junit-10.xsd")


# The same schema with its one slip mended: it declares a test case's error element as `errors` (upstream too),
# where JUnit (Ant, Surefire, pytest, every CI's reader) writes `<error>`; only a cell that never ran the
# program has one, and it is validated against this.
SCHEMA_WITH_ERROR = xmlschema.XMLSchema(
    (Path(__file__).parent / "fixtures" / "junit-10.xsd").read_text()
    .replace('<xs:element name="errors">', '<xs:element name="error">')
    .replace('<xs:element ref="errors"/>', '<xs:element ref="error"/>'))


MESH = Mesh((8, 1, 1, 1), ("a", "b", "c", "d"))


def cost(lost: float, saved: float = 0.0, missed=("jit_f",)) -> CellCost:
    return CellCost(starts=2, lost_per_start_s=lost, saved_per_start_s=saved, modules=4,
                    missed_modules=tuple(missed) if lost else (), each_start_missed=tuple(missed) if lost else (),
                    untimed_modules=(), first_run_s=0.1)


def cell(version, verdict, reason="", lost=None, saved=0.0):
    runs = [RunRecord(index=i, seed=i, exit_code=0, duration_s=1.2345, new_entries=[]) for i in (1, 2)]
    return CellResult(CellSpec(version, Platform.CPU, 8, MESH), verdict, {}, runs, reason=reason,
                      cost=cost(lost, saved) if lost is not None else None)


CELLS = [cell("0.4.28", Verdict.REPRODUCED, "jit_f: a new key in run 2", lost=0.8),
         cell("0.4.29", Verdict.CLEAN, "jit_f: 1 key per run", lost=0.0, saved=0.5),
         cell("0.4.25", Verdict.UNSUPPORTED, "nothing was cached"),
         cell("0.4.30", Verdict.ERROR, "1 of 2 runs failed (run 2: exit code 1: ValueError: <bad> & \"quoted\"")]


def junit_cases(junit) -> dict:
    text = junit.read_text()
    SCHEMA.validate(text)
    (suite,) = SCHEMA.to_dict(text)["testsuite"]
    return suite


# ---- a sweep of 10 cells (4 reproduced) and its shards, as results.json documents

MESHES = [Mesh((8, 1, 1, 1), ("a", "b", "c", "d")), Mesh((4, 2, 1, 1), ("a", "b", "c", "d"))]


VERSIONS = ["0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.30"]


VERDICTS = {"0.4.26": Verdict.CLEAN, "0.4.27": Verdict.REPRODUCED, "0.4.28": Verdict.REPRODUCED,
            "0.4.29": Verdict.CLEAN, "0.4.30": Verdict.CLEAN}


CONFIG = {"name": "s", "repro": "shard_map_grad", "jax_versions": [">=0.4.26"], "runs": 4, "source": "s.yaml"}


def planned():
    return [CellSpec(v, Platform.CPU, 8, m) for v in VERSIONS for m in MESHES]


def measured(spec):
    key = f"jit_f-{abs(hash(spec.key)):064x}"[:70]
    return CellResult(spec, VERDICTS[spec.jax_version], {"jit_f": [key]},
                      [RunRecord(1, 7, 0, 1.0, [key], log="logs/x/run-01.log")], "why", [key], {"jax": spec.jax_version})


def document(cells, shard=None, **changes):
    doc = {"schema_version": 1, "created": "2026-11-29T00:00:00Z", "finished": "2026-11-29T01:00:00Z",
           "status": "complete", "config": dict(CONFIG), "versions": VERSIONS, "options": {"runs": 4},
           "host": {"os": "Linux"}, "cells": [plain(c) for c in cells],
           **({"shard": {"index": shard.index, "count": shard.count, "planned": [s.key for s in planned()],
                          "cells": [c.spec.key for c in cells]}} if shard else {})}
    for key, value in changes.items():
        doc["config" if key in CONFIG else key] = value if key not in CONFIG else {**doc["config"], key: value}
    return doc


def shard_documents(count):
    whole = [measured(s) for s in planned()]
    shards = [Shard(i, count) for i in range(1, count + 1)]
    return [(f"shard{s.index}", document(s.select(whole), s)) for s in shards]


def shard_folders(tmp_path, keep=(1, 2)):
    """Shards 1 and 2 of a sweep (shard_documents: 10 cells, 4 reproduced) as results folders; only
    those in `keep`."""
    folders = []
    for index, (label, doc) in enumerate(shard_documents(2), start=1):
        if index in keep:
            folders.append(str(write_doc(tmp_path / label, doc)))
    return folders



def write_doc(folder, doc):
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(doc))
    return folder
