"""Write report.md (and each reproduced cell's full diff) into a results folder, atomically."""

from __future__ import annotations

from pathlib import Path

from harness.core.files import refuse_links, write_atomic
from harness.core.kinds import Cause
from harness.core.model import CellResult
from harness.report.evidence import Evidence, MissingEvidence, Seeds, cause_of, needs_evidence
from harness.report.misses_screen import LISTINGS_FILE, FunctionEvidence
from harness.report.render import REPORT_FILE, render_listings, render_report
from harness.report.sources import collect, function_evidence, uncached_facts
from harness.results.document import ResultsDocument, load_results
from harness.verdicts.boundaries import Boundaries

EVIDENCE_DIR = "evidence"


class ReportWriter:
    """report.md of one results folder, rewritten as often as asked (a sweep: after every cell).

    A reproduced cell's evidence is gathered once, when the cell is first seen: its logs are read and
    its full diff written then, not again on every rewrite (a finished cell's logs no longer change).
    """

    def __init__(self, results_dir: Path):
        self.dir = Path(results_dir)
        self._found: dict[str, tuple[Evidence | MissingEvidence, Seeds | None]] = {}  # by CellSpec.key
        self._functions: FunctionEvidence = {}  # each cell's moved functions compared, read once (by CellSpec.key)

    def gather(self, cell: CellResult, overlapped: bool) -> Evidence | MissingEvidence | None:
        """A reproduced cell's evidence (its logs read the first time only); None for other cells."""
        if not needs_evidence(cell):
            return None
        if cell.spec.key not in self._found:
            evidence, _ = self._found[cell.spec.key] = collect(self.dir, cell, overlapped)
            if isinstance(evidence, Evidence) and evidence.diff:
                # The report cuts long diffs; the whole one stays beside it.
                write_atomic(self.dir / EVIDENCE_DIR / f"{cell.spec.slug}.diff", "\n".join(evidence.diff) + "\n")
        return self._found[cell.spec.key][0]

    def cause(self, cell: CellResult, overlapped: bool = False) -> Cause | None:
        """A finished cell's likely cause (harness/verdicts/finish.py: CauseReader), from the evidence report.md
        shows of it (gathered now, once)."""
        return cause_of(self.gather(cell, overlapped))

    def uncached(self, cell: CellResult) -> tuple[dict[str, str], dict[str, float]]:
        """A `not cached` cell's callback lines and untimed seconds (harness/verdicts/finish.py: UncachedReader)."""
        return uncached_facts(self.dir, cell)

    def write(self, document: ResultsDocument, cells: list[CellResult], boundaries: Boundaries | None = None) -> Path:
        """report.md of `cells` (`boundaries`: theirs with the header's releases, when made already)."""
        overlapped = document.header.options.overlapped
        for cell in cells:
            self.gather(cell, overlapped)
        for cell in cells:
            if cell.spec.key not in self._functions:
                self._functions[cell.spec.key] = function_evidence(self.dir, cell)
        found = {c.spec.key: self._found[c.spec.key] for c in cells if c.spec.key in self._found}
        evidence = {key: e for key, (e, _) in found.items()}
        seeds = {key: s for key, (_, s) in found.items() if s is not None}
        path = self.dir / REPORT_FILE
        write_atomic(self.dir / EVIDENCE_DIR / LISTINGS_FILE, render_listings(cells))
        write_atomic(path, render_report(document, cells, evidence, seeds, boundaries,
                                             {c.spec.key: self._functions[c.spec.key] for c in cells}))
        return path


def write_report(results_dir: Path) -> Path:
    """Render the report of `results_dir` from its results.json (writing into it: none of its parts a link)."""
    document = load_results(results_dir)
    refuse_links(results_dir)
    return ReportWriter(results_dir).write(document, document.cells)
