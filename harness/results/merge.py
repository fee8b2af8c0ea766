"""Join shard results into one sweep (pure: documents in, one document out).

Shards must come from the same sweep (`SweepIdentity`: the same config, versions, runs per cell and
seeds). Anything else would put rows measured under different conditions into one table, so it is
refused, naming what differs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from packaging.version import Version

from harness.core.records import plain
from harness.core.errors import UserError
from harness.results.identity import SweepIdentity
from harness.core.model import CellResult
from harness.results.document import BISECTION, ResultsDocument, SweepStatus
from harness.results.header import RecordedShard, ResultsHeader


def merge_documents(documents: list[tuple[str, ResultsDocument]], command: str = "harness merge") -> ResultsDocument:
    """`(label, results document)` pairs -> the merged document, its cells in the order the unsharded
    sweep would have measured them. UserError when they are not one sweep."""
    if not documents:
        raise UserError("merge: no results to merge")
    _refuse_other_sweeps(documents)
    first = documents[0][1]
    shards, missing = _shards(documents)

    cells: list[CellResult] = []
    seen: dict[str, str] = {}
    for label, doc in documents:
        for cell in doc.cells:
            if cell.spec.key in seen:
                raise UserError(f"merge: cell {cell.spec.key} is in both {seen[cell.spec.key]} and {label}")
            seen[cell.spec.key] = label
            cells.append(cell)
    planned = shards[0].planned if shards else None
    cells.sort(key=_plan_order(planned))

    # Which shards are not there or did not finish, by number: the merge's status names them, and
    # `shards` keeps them as data for a re-submission of just those (harness submit --only-shards).
    unfinished = {doc.header.shard.index if doc.header.shard else label: doc.status_text
                  for label, doc in documents if doc.status != SweepStatus.COMPLETE}
    parts = [f"shard {i} missing" for i in missing]
    parts += [f"shard {k} {v}" for k, v in sorted((k, v) for k, v in unfinished.items() if isinstance(k, int))]
    parts += [f"{k} {v}" for k, v in sorted((k, v) for k, v in unfinished.items() if isinstance(k, str))]
    status, detail = (SweepStatus.INCOMPLETE, ", ".join(parts)) if parts else (SweepStatus.COMPLETE, "")
    header = ResultsHeader(command=command, config=first.header.config, versions=first.header.versions,
                           options=first.header.options, host=first.header.host,
                           created=min(str(doc.header.created) for _, doc in documents))
    # Each part's own provenance (the header keeps the first's): its host, the harness that measured it (in
    # the host's facts) and its backend.
    sections: dict[str, Any] = {
        "merged_from": [{"results": label, "shard": doc.header.shard.index if doc.header.shard else None,
                         "status": doc.status_text, "backend": _value(doc.header.options.backend),
                         "host": plain(doc.header.host)} for label, doc in documents]}
    if shards:
        sections["shards"] = {"count": shards[0].count, "missing": missing,
                              "unfinished": {str(k): v for k, v in unfinished.items() if isinstance(k, int)}}
    for _, doc in documents:  # results added by later stages (a bisection) travel with the merge
        if doc.sections.get(BISECTION) and BISECTION not in sections:
            sections[BISECTION] = doc.sections[BISECTION]
    return ResultsDocument(header, cells, status, detail, max(str(doc.finished) for _, doc in documents),
                           sections)


def _refuse_other_sweeps(documents: list[tuple[str, ResultsDocument]]) -> None:
    """UserError, naming what differs, when the documents are not shards of one sweep in one kind of environment."""
    first_label, first = documents[0]
    identity = SweepIdentity.of(first.header)
    for label, doc in documents[1:]:
        differs = identity.differences(SweepIdentity.of(doc.header))
        if differs:
            raise UserError(f"merge: {label} is not from the same sweep as {first_label} "
                            f"(differs in {', '.join(differs)})")

    # One table, one kind of environment: a venv's and a container's runs are not the same measurement.
    backends = {label: doc.header.options.backend for label, doc in documents}
    if len({b for b in backends.values() if b is not None}) > 1:
        other = next(label for label, b in backends.items() if b not in (None, backends[first_label]))
        raise UserError(f"merge: {other} was measured with --backend {backends[other]}, {first_label} with "
                        f"{backends[first_label]}: merge shards measured in one kind of environment")


def _shards(documents: list[tuple[str, ResultsDocument]]) -> tuple[list[RecordedShard], list[int]]:
    """The documents' shards (none for whole sweeps) and the numbers of the shards not given; UserError where
    they are not the shards of one cut."""
    shards = [s for _, doc in documents if (s := doc.header.shard) is not None]
    if not shards:
        return shards, []
    if len(shards) < len(documents):
        whole = next(label for (label, doc) in documents if not doc.header.shard)
        raise UserError(f"merge: {whole} is a whole sweep, not a shard; merge shards of one sweep")
    counts = {s.count for s in shards}
    if len(counts) > 1:
        raise UserError(f"merge: the shards were cut {' and '.join(map(str, sorted(counts)))} ways")
    indices = [s.index for s in shards]
    repeated = sorted({i for i in indices if indices.count(i) > 1})
    if repeated:
        raise UserError(f"merge: shard {repeated[0]}/{counts.pop()} given twice")
    missing = sorted(set(range(1, shards[0].count + 1)) - set(indices))
    return shards, missing


def _value(backend: Any) -> str | None:
    return None if backend is None else str(getattr(backend, "value", backend))


def _plan_order(planned: list[str] | None) -> Callable[[CellResult], tuple[int, Version, str]]:
    position = {key: i for i, key in enumerate(planned or [])}

    def key(cell: CellResult) -> tuple[int, Version, str]:
        return (position.get(cell.spec.key, len(position)), Version(cell.spec.jax_version), cell.spec.key)
    return key
