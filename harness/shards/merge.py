"""Join shard results into one sweep (pure: documents in, one document out).

Shards must come from the same sweep (`SweepIdentity`: the same config, versions, runs per cell and
seeds). Anything else would put rows measured under different conditions into one table, so it is
refused, naming what differs.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from harness.errors import UserError
from harness.identity import SweepIdentity
from harness.model import CellResult
from harness.report.load import cells_of_document
from harness.report.render import BISECTION_KEYS
from harness.results import SCHEMA_VERSION, RunStatus, summaries_by_mesh, summarise

def merge_documents(documents: list[tuple[str, dict[str, Any]]], command: str = "harness merge") \
        -> tuple[dict[str, Any], list[CellResult]]:
    """`(label, results document)` pairs -> the merged document (without cells) and its cells in the
    order the unsharded sweep would have measured them. UserError when they are not one sweep."""
    if not documents:
        raise UserError("merge: no results to merge")
    first_label, first = documents[0]
    identity = SweepIdentity.of(first)
    for label, doc in documents[1:]:
        differs = identity.differences(SweepIdentity.of(doc))
        if differs:
            raise UserError(f"merge: {label} is not from the same sweep as {first_label} "
                            f"(differs in {', '.join(differs)})")

    shards = [doc.get("shard") for _, doc in documents]
    missing: list[int] = []
    if any(shards):
        if not all(shards):
            plain = next(label for (label, doc) in documents if not doc.get("shard"))
            raise UserError(f"merge: {plain} is a whole sweep, not a shard; merge shards of one sweep")
        counts = {s["count"] for s in shards}
        if len(counts) > 1:
            raise UserError(f"merge: the shards were cut {' and '.join(map(str, sorted(counts)))} ways")
        indices = [s["index"] for s in shards]
        repeated = sorted({i for i in indices if indices.count(i) > 1})
        if repeated:
            raise UserError(f"merge: shard {repeated[0]}/{counts.pop()} given twice")
        missing = sorted(set(range(1, shards[0]["count"] + 1)) - set(indices))

    cells: list[CellResult] = []
    seen: dict[str, str] = {}
    for label, doc in documents:
        for cell in cells_of_document(doc, label):
            if cell.spec.key in seen:
                raise UserError(f"merge: cell {cell.spec.key} is in both {seen[cell.spec.key]} and {label}")
            seen[cell.spec.key] = label
            cells.append(cell)
    planned = (shards[0] or {}).get("planned") if shards and shards[0] else None
    cells.sort(key=_plan_order(planned))

    statuses = {doc.get("status") for _, doc in documents}
    status = RunStatus.COMPLETE if statuses == {RunStatus.COMPLETE} and not missing else (
        f"incomplete: shard(s) {', '.join(map(str, missing))} missing" if missing else
        "incomplete: " + ", ".join(sorted(s for s in statuses if s and s != RunStatus.COMPLETE)))
    merged = {
        "schema_version": SCHEMA_VERSION,
        "created": min(str(doc.get("created")) for _, doc in documents),
        "finished": max(str(doc.get("finished")) for _, doc in documents),
        "status": status,
        "command": command,
        "config": first.get("config"),
        "versions": first.get("versions"),
        "options": first.get("options"),
        "host": first.get("host"),
        "merged_from": [{"results": label, "shard": doc.get("shard", {}).get("index") if doc.get("shard") else None,
                         "status": doc.get("status"), "host": doc.get("host")} for label, doc in documents],
        "cells": [c.to_json() for c in cells],
        "summary": summarise(cells),
        "summaries": summaries_by_mesh(cells),
    }
    for _, doc in documents:  # results added by later stages (a bisection) travel with the merge
        for key in BISECTION_KEYS:
            if doc.get(key) and key not in merged:
                merged[key] = doc[key]
    return merged, cells


def _plan_order(planned: list[str] | None):
    position = {key: i for i, key in enumerate(planned or [])}

    def key(cell: CellResult):
        return (position.get(cell.spec.key, len(position)), Version(cell.spec.jax_version), cell.spec.key)
    return key
