"""Write report.md (and each reproduced cell's full diff) into a results folder, atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.model import CellResult
from harness.report.evidence import Evidence, needs_evidence
from harness.report.load import cells_of_document
from harness.report.render import REPORT_FILE, EvidenceMap, SeedsMap, render_report
from harness.report.sources import collect
from harness.results import load_results, results_file, write_atomic

EVIDENCE_DIR = "evidence"


def runs_overlapped(document: dict[str, Any]) -> bool:
    """With --jobs N>1 a cell's runs overlap, and a run's new_entries may include a neighbour's key."""
    return ((document.get("options") or {}).get("jobs") or 1) > 1


def gather(results_dir: Path, cells: list[CellResult], overlapped: bool) -> tuple[EvidenceMap, SeedsMap]:
    """Each reproduced cell's evidence and seeds, its logs read once for both."""
    found = {c.spec.key: collect(results_dir, c, overlapped) for c in cells if needs_evidence(c)}
    return ({key: e for key, (e, _) in found.items()},
            {key: s for key, (_, s) in found.items() if s is not None})


def write_report(results_dir: Path, document: dict[str, Any] | None = None,
                 cells: list[CellResult] | None = None) -> Path:
    """Render the report of `results_dir` (its results.json unless `document` is given)."""
    from harness.sweep import cell_slug

    results_dir = Path(results_dir)
    if document is None:
        document = load_results(results_dir)
    if cells is None:
        cells = cells_of_document(document, results_file(results_dir))
    overlapped = runs_overlapped(document)
    evidence, seeds = gather(results_dir, cells, overlapped)
    for cell in cells:
        item = evidence.get(cell.spec.key)
        if isinstance(item, Evidence) and item.diff:
            # The report cuts long diffs; the whole one stays beside it.
            write_atomic(results_dir / EVIDENCE_DIR / f"{cell_slug(cell.spec)}.diff", "\n".join(item.diff) + "\n")
    path = results_dir / REPORT_FILE
    write_atomic(path, render_report(document, cells, evidence, seeds))
    return path
