"""Read a results folder back (for `report`, `compare`, `nightly` and `merge`): its document and its cells.

A malformed cell (a hand-edited file, a truncated merge) is bad input: one line naming the file and the
cell, exit 2, not a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from packaging.version import Version

from harness.errors import UserError
from harness.model import CellResult
from harness.results import load_results, results_file


def cells_of_document(document: dict[str, Any], source: Path | str) -> list[CellResult]:
    cells = document.get("cells") or []
    if not isinstance(cells, list):
        raise UserError(f"{source}: cells: must be a list of cells")
    out = []
    for i, data in enumerate(cells):
        try:
            cell = CellResult.from_json(data)
            Version(cell.spec.jax_version)  # compare and sorting need it; InvalidVersion is a ValueError
        except KeyError as exc:
            raise UserError(f"{source}: cells[{i}]: missing key {exc}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise UserError(f"{source}: cells[{i}]: {exc}") from None
        out.append(cell)
    return out


def load(path: Path) -> tuple[dict[str, Any], list[CellResult]]:
    """The results document of `path` (a folder or its results.json) and its cells."""
    document = load_results(path)
    return document, cells_of_document(document, results_file(path))
