"""The results document and its folder: `results/<UTC timestamp>-<name>/results.json` (written by
`harness.output.results_folder` after every cell), read back by report, compare, merge and --resume; logs in `logs/`.

`ResultsDocument` is the file as typed data: a header (what was measured, how, where: harness/results/header.py), the cells, the
status, and the sections later stages add (a bisection, a merge). `document_json` and `read_document` are the
one way out and in; a file written by an earlier release (schema_version 1 or 2) reads through `upgrade`.
"""

from __future__ import annotations

import enum
import json
import os
import shlex
import sys
from datetime import datetime, UTC
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterator, Sequence

import msgspec
from filelock import FileLock, Timeout
from packaging.version import InvalidVersion, Version

from harness.verdicts.boundaries import release_boundaries
from harness.verdicts.cell_facts import CellFacts, cell_facts, cells_facts
from harness.core.errors import UserError
from harness.core.files import WRITER_LOCK_FILE, fitting_name, read_json_bounded, refuse_links, write_atomic
from harness.core.records import convert, plain
from harness.results.bisect_results import BisectSection, upgrade_bisection
from harness.results.reduce_results import REDUCE_SECTION, Reduced
from harness.results.header import HEADER_KEYS, ResultsHeader, host_shape
from harness.core.model import CellResult

# 3: the header's parts are Structs shaped like the file (harness/results/header.py). Files of versions 1 and 2
# (earlier releases) read through `upgrade`, which maps them to version 3 before the strict conversion.
SCHEMA_VERSION = 3
RESULTS_FILE = "results.json"
TABLE_FILE = "table.md"


class SweepStatus(enum.StrEnum):
    """How a measurement ended, as results.json's `status` says."""

    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"  # Ctrl-C: what was measured is kept
    FAILED = "failed"  # a failure of the harness itself
    PROBLEM = "problem"  # a bisection whose endpoint contradicts its flag
    INCOMPLETE = "incomplete"  # a merge that lacks shards, or took one that did not complete


# Held (flock) by the one process writing a results folder; the kernel drops it if that process dies.
WRITER_HOLDER_FILE = ".writer.holder"  # who holds the lock: pid, command line, since when
# A results.json of 10,000 cells with long listings is tens of MiB; past this it is not one of ours,
# and reading it must not exhaust memory (`harness report /dev/zero`).
MAX_RESULTS_BYTES = 256 << 20
_DERIVED = ("summary", "summaries")  # computed from the cells on every write
_KNOWN = {"schema_version", "finished", "status", "cells", *HEADER_KEYS, *_DERIVED}
# The section a bisection adds (`bisection` in some earlier releases): a BisectSection in memory.
BISECTION = "bisect"
_BISECT_OPTIONS = ("good", "bad", "jax_repo")


def upgrade(document: dict[str, Any], version: int) -> dict[str, Any]:
    """A results.json written as schema `version` (1 or 2) in version 3's shape (pure: dict in, dict out); a
    part of the wrong type is left as it is, for the strict conversion to name."""
    if isinstance(document.get("cells"), list):  # a cell of the shape before (written by 3's first builds too)
        document = {**document, "cells": [upgrade_cell(c, f"cells[{i}]") for i, c in enumerate(document["cells"])]}
    if version >= SCHEMA_VERSION:
        return document
    out = {**document, "schema_version": SCHEMA_VERSION}
    options = out.get("options")
    if isinstance(options, dict) and any(k in options for k in _BISECT_OPTIONS):  # three keys, null where not given
        out["options"] = {**{k: v for k, v in options.items() if k not in _BISECT_OPTIONS},
                          "bisect": {k: options.get(k) for k in _BISECT_OPTIONS}}
    for part in ("config", "options", "host"):  # null meant absent
        if isinstance(out.get(part), dict):
            out[part] = {k: v for k, v in out[part].items() if v is not None}
    if isinstance(out.get("host"), dict):  # the backend's facts were among the host's own
        out["host"] = host_shape(out["host"])
    if "bisection" in out and "bisect" not in out:
        out["bisect"] = out.pop("bisection")
    if "bisect" in out:
        out["bisect"] = upgrade_bisection(out["bisect"])
    return out


_SPEC = ("jax_version", "platform", "device_count", "mesh", "processes")
_SPEC_OR_DERIVED = frozenset((*_SPEC, "attribution"))  # a cell's own keys that upgrade_cell moves or drops
_DERIVED_IN_CELL = {"seeds": {"miss_bound", "miss_bound_other_mechanisms", "assumes", "assumes_other_mechanisms", "target"},
                    "rank_split": {"components"}, "seed_check": {"follows_seed"}}


def shape_problem(cell: dict[str, Any]) -> str:
    """Why the arrays of a cell that upgrade_cell walks are not arrays ("runs: expected an array, got an integer"),
    or "": checked before anything is transformed (a part of another wrong type is skipped by the walk and named
    by the strict conversion). A job's process holds no processes of its own: `ranks` inside a rank is refused
    here, so the walk is two levels deep whatever the file's nesting (no recursion on its depth)."""
    def kind(value: Any) -> str:
        return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
                float: "a number"}.get(type(value), "null")

    checks: list[tuple[str, Any, type]] = []  # (where, value, the type it must have where present)

    def run(where: str, value: Any, rank: bool = False) -> None:
        if isinstance(value, dict):
            if rank and "ranks" in value:
                checks.append((f"{where}.ranks", value["ranks"], type(None)))  # a process has none
            elif value.get("ranks") is not None:
                checks.append((f"{where}.ranks", value["ranks"], list))
                if isinstance(value["ranks"], list):
                    for i, each in enumerate(value["ranks"]):
                        run(f"{where}.ranks[{i}]", each, rank=True)

    for key, value in cell.items():
        if key == "runs" and value is not None:
            checks.append(("runs", value, list))
            for i, each in enumerate(value if isinstance(value, list) else []):
                run(f"runs[{i}]", each)
        elif key == "seed_control" and value is not None:
            run(key, value)
        elif key == "more_controls" and value is not None:
            checks.append((key, value, list))
            for i, each in enumerate(value if isinstance(value, list) else []):
                run(f"{key}[{i}]", each)
        elif key in ("moved_folder", "variation") and isinstance(value, dict):
            for part in ("run", "control"):
                if value.get(part) is not None:
                    run(f"{key}.{part}", value[part])
            factors = value.get("factors")
            if factors is not None:
                checks.append((f"{key}.factors", factors, list))
                for i, factor in enumerate(factors if isinstance(factors, list) else []):
                    if isinstance(factor, dict) and factor.get("run") is not None:
                        run(f"{key}.factors[{i}].run", factor["run"])
    for where, value, expected in checks:
        if not isinstance(value, expected):
            if expected is type(None):
                return f"{where}: a job's process holds no processes"
            return f"{where}: expected {'an object' if expected is dict else 'an array'}, got {kind(value)}"
    return ""


def upgrade_cell(cell: Any, where: str = "") -> Any:
    """A cell as version 1 or 2 wrote it in version 3's shape (what is not of the shape it had is left for the
    strict conversion to name): the spec's keys nested, the miss bounds under `miss_bounds`, the cache folder's
    mode flat, the attribution's and a rank split's pairs as lists, each run's logged keys a list; a cell's
    `key_components` put back under each key that names them. ValueError (naming `where` and the key) for a cell
    whose runs are not of the shapes this walks (`shape_problem`), before any of it is transformed."""
    if isinstance(cell, dict) and (problem := shape_problem(cell)):
        raise ValueError(f"{where}.{problem}" if where else problem)
    if isinstance(cell, dict) and KEY_COMPONENTS in cell:
        cell = with_key_components(cell)
    if not isinstance(cell, dict) or isinstance(cell.get("spec"), dict):  # not a cell, or one of version 3's shape
        return cell
    out = {k: v for k, v in cell.items() if k not in _SPEC_OR_DERIVED}
    out["spec"] = {k: cell[k] for k in _SPEC if k in cell}
    bound, other = out.pop("miss_bound", None), out.pop("miss_bound_other_mechanisms", None)
    if bound is not None:
        out["miss_bounds"] = {"miss_bound": bound, "miss_bound_other_mechanisms": other}
    folder = out.pop("cache_folder", None)
    if isinstance(folder, dict):
        out |= {"cache_folder": folder.get("mode"), "cache_folder_why": folder.get("why", "")}
    if "cost" in out and not isinstance(out["cost"], dict):  # an early release's cost was no record
        del out["cost"]
    for record, derived in _DERIVED_IN_CELL.items():  # what versions 1 and 2 wrote for readers, derived on reading now
        if isinstance(part := out.get(record), dict):
            out[record] = {k: v for k, v in part.items() if k not in derived}
    detail = out.get("attribution_detail")
    if isinstance(detail, dict) and isinstance(detail.get("runs"), list) and isinstance(detail.get("keys"), list):
        (run_a, run_b), (key_a, key_b) = (detail["runs"] + [None, None])[:2], (detail["keys"] + [None, None])[:2]
        out["attribution_detail"] = {"module": detail.get("module"), "run_a": run_a, "run_b": run_b, "key_a": key_a,
                                     "key_b": key_b, "hashes": _triples(detail.get("hashes", {}))}
    if isinstance(out.get("rank_split"), dict):
        out["rank_split"] = {**out["rank_split"], "hashes": _triples(out["rank_split"].get("hashes", {}))}
    facts = out.get("script_cache")
    if isinstance(facts, dict) and isinstance(facts.get("folders"), list):
        out["script_cache"] = {**facts, "folders": [[f.get("requested"), f.get("api")] if isinstance(f, dict) else f
                                                    for f in facts["folders"]]}
    if isinstance(out.get("command"), dict) and out["command"].get("env", {}) is None:
        out["command"] = {**out["command"], "env": {}}
    if isinstance(out.get("runs"), list):
        out["runs"] = [_run(r) for r in out["runs"]]
    for key in ("variation", "moved_folder"):
        part = out.get(key)
        if isinstance(part, dict):
            part = out[key] = {**part, **{k: _run(part[k]) for k in ("run", "control") if k in part}}
            if isinstance(part.get("factors"), list):
                part["factors"] = [{**f, "run": _run(f["run"])} if isinstance(f, dict) and "run" in f else f
                                   for f in part["factors"]]
    return out


# A key's components are what its hash is computed from, so every run that logged a key logged the same components:
# results.json holds them once per cell (`key_components`: key -> component -> hash) rather than under each run's
# key, where a suite's 150 keys in 12 runs wrote them 12 times (half the file). In memory each key has its own.
KEY_COMPONENTS = "key_components"


def _run_dicts(cell: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every run a cell's mapping holds, and every process of each: its runs, the seed control, the moved folder's
    run, --vary's factor runs and control."""
    controls = cell.get("more_controls")
    places: list[Any] = [*(cell.get("runs") or []), cell.get("seed_control"),
                         *(controls if isinstance(controls, list) else [])]
    for part in (cell.get("moved_folder"), cell.get("variation")):
        if isinstance(part, dict):
            places += [part.get("run"), part.get("control")]
            places += [f.get("run") for f in part.get("factors") or [] if isinstance(f, dict)]
    while places:
        run = places.pop(0)
        if isinstance(run, dict):
            yield run
            places += run.get("ranks") or []


def _logged_keys(cell: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for run in _run_dicts(cell):
        log = run.get("keys")
        if isinstance(log, dict) and isinstance(log.get("keys"), list):
            yield from (k for k in log["keys"] if isinstance(k, dict))


def without_key_components(cell: dict[str, Any]) -> dict[str, Any]:
    """`cell` (as `msgspec.to_builtins` makes it, changed in place) with each key's components moved to the cell's
    `key_components`, once per key; a key whose components differ from the ones kept (a log cut mid-key) keeps its."""
    table: dict[str, Any] = {}
    for logged in _logged_keys(cell):
        components = logged.get("components")
        if components and table.setdefault(logged["key"], components) == components:
            del logged["components"]
    if table:
        cell[KEY_COMPONENTS] = table
    return cell


def with_key_components(cell: dict[str, Any]) -> dict[str, Any]:
    """`cell` as results.json holds it with each key's components back under the key (a copy; a table of the wrong
    type is left for the strict conversion to name)."""
    table = cell.get(KEY_COMPONENTS)
    if not isinstance(table, dict):
        return cell
    cell = _copy_runs({k: v for k, v in cell.items() if k != KEY_COMPONENTS})  # the caller's stays as it was
    for logged in _logged_keys(cell):
        key = logged.get("key")
        if "components" not in logged and isinstance(key, str) and isinstance(components := table.get(key), dict):
            logged["components"] = dict(components)
    return cell


def _copy_runs(cell: dict[str, Any]) -> dict[str, Any]:
    """`cell` copied down to each logged key of each run (what with_key_components changes), the rest shared: no
    deep copy, whose recursion a file nested hundreds deep exhausted."""
    def run(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out = dict(value)
        log = out.get("keys")
        if isinstance(log, dict) and isinstance(log.get("keys"), list):
            out["keys"] = {**log, "keys": [dict(k) if isinstance(k, dict) else k for k in log["keys"]]}
        if isinstance(out.get("ranks"), list):
            out["ranks"] = [run(r) if isinstance(r, dict) and "ranks" not in r else r for r in out["ranks"]]
        return out

    cell = dict(cell)
    if isinstance(cell.get("runs"), list):
        cell["runs"] = [run(r) for r in cell["runs"]]
    if "seed_control" in cell:
        cell["seed_control"] = run(cell["seed_control"])
    if isinstance(cell.get("more_controls"), list):
        cell["more_controls"] = [run(c) for c in cell["more_controls"]]
    for key in ("moved_folder", "variation"):
        if isinstance(part := cell.get(key), dict):
            part = cell[key] = {**part, **{k: run(part[k]) for k in ("run", "control") if k in part}}
            if isinstance(part.get("factors"), list):
                part["factors"] = [{**f, "run": run(f["run"])} if isinstance(f, dict) and "run" in f else f
                                   for f in part["factors"]]
    return cell


def _triples(pairs: Any) -> Any:
    """{component: [a, b]} as [[component, a, b]] (JAX's order)."""
    if not isinstance(pairs, dict):
        return pairs
    return [[name, *pair] if isinstance(pair, list) else pair for name, pair in pairs.items()]


def _run(run: Any) -> Any:
    """A run (or a process of a job): its logged keys, module -> key -> facts, as {"keys": [facts with both]}."""
    if not isinstance(run, dict):
        return run
    out: dict[str, Any] = {}  # what changes (a run that needs none is kept as it is)
    keys = run.get("keys")
    if isinstance(keys, dict):
        out["keys"] = {"keys": [{"outcome": "miss", **info, "module": module, "key": key}
                                for module, by_key in keys.items() if isinstance(by_key, dict)
                                for key, info in by_key.items() if isinstance(info, dict)]}
    cache = run.get("script_cache")
    if isinstance(cache, dict) and cache.get("final", {}) is None:
        out["script_cache"] = {**cache, "final": {}}
    if isinstance(run.get("ranks"), list):
        out["ranks"] = [_run(r) for r in run["ranks"]]
    return {**run, **out} if out else run


@dataclass
class ResultsDocument:
    header: ResultsHeader
    cells: list[CellResult] = field(default_factory=list)
    status: SweepStatus = SweepStatus.RUNNING
    status_detail: str = ""  # why a merge is incomplete ("shard(s) 3 missing"), written into `status`
    finished: str | None = None
    sections: dict[str, Any] = field(default_factory=dict)  # added by later stages: bisect, merged_from...
    schema_version: int = SCHEMA_VERSION  # as read (a report names it); written as SCHEMA_VERSION
    # Each cell's facts for the table and its summary line, derived as the cell enters (never written: a folder
    # of any release gets them as it is read); add() keeps them beside `cells`.
    facts: list[CellFacts] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.facts = cells_facts(self.cells)

    def add(self, cell: CellResult) -> None:
        """Keep a finished cell, with its facts."""
        self.cells.append(cell)
        self.facts.append(cell_facts(cell))

    @property
    def status_text(self) -> str:
        return f"{self.status}: {self.status_detail}" if self.status_detail else str(self.status)



def document_json(document: ResultsDocument, cells: list[Any] | None = None) -> dict[str, Any]:
    """results.json's content (`cells`: what to write as the cells, the results writer's, each encoded once)."""
    return {"schema_version": SCHEMA_VERSION, **plain(document.header),
            "finished": document.finished, "status": document.status_text,
            "cells": [cell_json(c) for c in document.cells] if cells is None else cells,
            "summary": summarise(document.cells, document.header.releases),
            "summaries": summaries_by_mesh(document.cells, document.header.releases),
            **{k: plain(v) for k, v in document.sections.items()}}


def read_header(data: dict[str, Any]) -> ResultsHeader:
    """The header of a results.json's mapping (of version 3, or of the version it names); ValueError naming the
    key (`config.platform: Invalid enum value ...`) for a value no release wrote."""
    data = upgrade(data, data.get("schema_version", SCHEMA_VERSION))
    return convert({k: data[k] for k in HEADER_KEYS if data.get(k) is not None}, ResultsHeader)


class _Document(msgspec.Struct):
    """results.json's keys beside the header's, read typed (a cell of a key no record has is refused: a newer
    harness wrote it, and rewriting the folder here would lose it); a key it does not name is a later stage's
    section (merged_from...), kept as it is."""

    status: str = SweepStatus.RUNNING
    finished: str | None = None
    cells: list[CellResult] = []
    bisect: BisectSection | None = None
    reduce: Reduced | None = None


def read_document(data: Any, source: Path | str) -> ResultsDocument:
    """The document of a results.json of any release (`source` names it in errors); UserError, one line naming
    the file and the key, when it is not one this harness can read."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise UserError(f"{source}: not a harness results file (no schema_version)")
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise UserError(f"{source}: schema_version must be a whole number from 1, not {str(version)[:20]!r}")
    if version > SCHEMA_VERSION:
        raise UserError(f"{source}: schema_version {version} is newer than this harness "
                        f"reads ({SCHEMA_VERSION}); upgrade the harness")
    try:
        data = upgrade(data, version)  # refuses a cell whose runs are not of the shapes it walks
        header, known = read_header(data), convert({k: v for k, v in data.items() if v is not None}, _Document)
    except ValueError as exc:
        raise UserError(f"{source}: {exc}") from None
    first: dict[str, int] = {}  # a cell's spec key -> where it is
    for i, cell in enumerate(known.cells):
        try:
            Version(cell.spec.jax_version)  # compare and sorting need it
        except InvalidVersion as exc:
            raise UserError(f"{source}: cells[{i}].spec.jax_version: {exc}") from None
        # Every reader looks a cell up by its spec (compare's baseline, the report's evidence, resume, merge): a
        # second one would be read for the first, or hide it. No release writes two (a resume drops the cut one).
        if (at := first.setdefault(cell.spec.key, i)) != i:
            raise UserError(f"{source}: cells[{i}]: a second cell of {cell.spec.key} (cells[{at}] is the first); "
                            "a results file holds one cell per version, platform, devices and mesh")
    status, _, detail = known.status.partition(": ")
    if status not in {s.value for s in SweepStatus}:
        raise UserError(f"{source}: status: {known.status!r} is not a status")
    sections = {k: v for k, v in data.items() if k not in _KNOWN} | \
        {k: v for k, v in ((BISECTION, known.bisect), (REDUCE_SECTION, known.reduce)) if v is not None}
    return ResultsDocument(header, known.cells, SweepStatus(status), detail, known.finished, sections, version)


def read_cell(data: Any) -> CellResult:
    """One cell as results.json of any release holds it; ValueError naming the key."""
    return convert(upgrade_cell(data), CellResult)


def cell_json(cell: CellResult) -> dict[str, Any]:
    """`cell` as results.json holds it (JSON's types, tuples for its lists: json.dumps writes them as lists, and
    refuses a NaN, which msgspec's own encoder would write as null)."""
    return without_key_components(msgspec.to_builtins(cell))


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_results_folder(results_root: Path, name: str) -> Path:
    """A new folder for one sweep; UserError when the results folder cannot hold it."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = fitting_name(f"{stamp}-{name}")  # a config's name may be long (up to config.MAX_NAME)
    path = results_root / folder
    suffix = 1
    while path.exists():
        suffix += 1
        path = results_root / f"{folder}-{suffix}"
    try:
        path.mkdir(parents=True)
    except OSError as exc:
        raise UserError(f"--out {results_root}: cannot create a results folder there ({exc.strerror})") from None
    return path


def summarise(cells: list[CellResult], releases: Sequence[str] = ()) -> dict[str, Any]:
    """The releases' boundaries as every output says them (`releases`: the header's, the index's between)."""
    out: dict[str, Any] = plain(release_boundaries(cells, releases).recorded())
    return out


def summaries_by_mesh(cells: list[CellResult], releases: Sequence[str] = ()) -> list[dict[str, Any]]:
    groups: dict[str, list[CellResult]] = {}
    for cell in cells:
        label = cell.spec.mesh_label
        groups.setdefault(f"{label} {cell.spec.platform}", []).append(cell)
    return [{"group": g, **summarise(cs, releases)} for g, cs in groups.items()]


def results_file(path: Path) -> Path:
    """A results folder's results.json; any other path is taken to be the file itself."""
    path = Path(path)
    return path / RESULTS_FILE if path.is_dir() else path


def results_folder(path: Path) -> Path:
    """The folder of a results.json; any other path is taken to be the folder itself."""
    path = Path(path)
    return path.parent if path.name == RESULTS_FILE else path


def load_results(path: Path) -> ResultsDocument:
    """Read a results.json (or the folder holding one); UserError (one line) when it is not one.

    Bounded (MAX_RESULTS_BYTES, regular files only) and checked for the types every reader relies on,
    down to each cell's keys and runs, before anything is built from it."""
    refuse_a_parent_of_results(Path(path))
    path = results_file(path)
    return read_document(read_json_bounded(path, MAX_RESULTS_BYTES, "results file", beyond_a_report), path)


def refuse_a_parent_of_results(folder: Path) -> None:
    """UserError naming the run folders inside `folder` when it is the folder `--out` names (it holds
    TIME-NAME folders, each with a results.json) rather than one run's: `--baseline results` for
    `--baseline results/20261207T224400Z-nightly` is an easy slip, and "no such results file" hides the fix."""
    if not folder.is_dir() or (folder / RESULTS_FILE).exists():
        return
    runs = sorted(found.parent for found in folder.glob(f"*/{RESULTS_FILE}"))  # TIME-NAME: the newest last
    if runs:
        held = "a run's results folder:" if len(runs) == 1 else f"{len(runs)} runs' results folders, the newest"
        raise UserError(f"{folder}: no {RESULTS_FILE} here; it holds {held} {runs[-1]} (name that folder)")


# A report reads every cell and every run: past these a results file is not a sweep's (a sweep of 100 releases
# on 10 meshes and 2 platforms is 2,000 cells), and building it would take gigabytes and many minutes.
MAX_CELLS = 20_000
MAX_RUNS = 400_000


class _Cells(msgspec.Struct):
    cells: list[msgspec.Raw] | None = None


class _Runs(msgspec.Struct):
    runs: list[msgspec.Raw] | None = None


def beyond_a_report(raw: bytes) -> str:
    """Why a results file is larger than any sweep's (too many cells or runs), or "": counted without
    building the cells (msgspec.Raw keeps each one as its bytes). A document of another shape is left to
    the reader, which names what is wrong with it."""
    try:
        cells = msgspec.json.decode(raw, type=_Cells).cells or []
        if len(cells) > MAX_CELLS:
            return f"{len(cells):,} cells, more than any sweep's ({MAX_CELLS:,}): not a harness results file"
        runs = sum(len(msgspec.json.decode(cell, type=_Runs).runs or []) for cell in cells)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return ""
    if runs > MAX_RUNS:
        return f"{runs:,} runs, more than any sweep's ({MAX_RUNS:,}): not a harness results file"
    return ""


def lock_results_folder(folder: Path) -> FileLock:
    """Become the one writer of `folder`; UserError (one line, naming the holder) when another process is
    writing it.

    Two `--resume` of one folder would measure into the same caches and logs and mix their cells: the
    second is refused. Take it before reading the folder, so what is read is what nobody else writes."""
    # One lock object per folder in this process (is_singleton): re-entering it here is allowed; the
    # guard is against another process.
    folder = Path(folder)
    refuse_links(folder)  # before the lock file and the holder's note: nothing is written through a planted link
    lock = FileLock(folder.resolve() / WRITER_LOCK_FILE, thread_local=False, is_singleton=True)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise UserError(f"{folder}: another harness process{_holder(folder)} is writing this results folder; "
                        "wait for it to finish (or stop it) and try again") from None
    except OSError as exc:
        raise UserError(f"{folder}: cannot lock the results folder ({exc.strerror})") from None
    if lock.lock_counter == 1:  # just taken by this process: say who holds it, for the next one refused
        holder = {"pid": os.getpid(), "argv": ["harness", *sys.argv[1:]], "since": utc_now()}
        try:
            write_atomic(folder.resolve() / WRITER_HOLDER_FILE, json.dumps(holder) + "\n")
        except OSError:
            pass  # the lock holds without it; a refusal then names no holder
    return lock


def _holder(folder: Path) -> str:
    """` (pid 123: harness reduce x.py ..., since ...)` from the holder's note; "" when it left none."""
    try:
        holder = json.loads((Path(folder).resolve() / WRITER_HOLDER_FILE).read_text())
        return f" (pid {int(holder['pid'])}: {shlex.join(map(str, holder['argv']))}, since {holder['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return ""
