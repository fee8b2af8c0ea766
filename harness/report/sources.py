"""Where a run's lowered module is on disk: the built-in repro prints it into the run's log; a user's
script gets it from JAX's own IR dump (`JAX_DUMP_IR_TO`, set for each run) in the folder beside the log."""

from __future__ import annotations

import re
from pathlib import Path

from harness.model import CellResult, RunRecord
from harness.report.evidence import (Evidence, MissingEvidence, Seeds, compare_runs, extract_lowered,
                                     first_of_each_module, key_seeds, module_seeds, pick_pair, split_module)
from harness.run_env import ir_dump_dir

_DUMP_RE = re.compile(r"^jax_ir(?P<n>\d+)_(?P<module>.+)_compile\.mlir$")


def lowered_text(results_dir: Path, run: RunRecord, module: str) -> str | None:
    """The module `module` as `run` compiled it, or None when neither source has it."""
    if not run.log:
        return None
    log = results_dir / run.log
    dumped = _from_dump(ir_dump_dir(log), module)
    if dumped is not None:
        return dumped
    try:
        return extract_lowered(log.read_text(errors="replace"))
    except OSError:
        return None


def _from_dump(folder: Path, module: str) -> str | None:
    # JAX names dumps `jax_ir<counter>_<module>_compile.mlir`; a module compiled twice has two.
    safe = re.sub(r"[^\w.)( -]", "", module)
    try:
        found = [(int(m["n"]), p) for p in folder.iterdir()
                 if (m := _DUMP_RE.match(p.name)) and m["module"] == safe]
    except OSError:
        return None
    if not found:
        return None
    return "".join(p.read_text(errors="replace") for _, p in sorted(found))


def distinct_lowered(results_dir: Path, cell: CellResult, module: str) -> list[tuple[RunRecord, str]]:
    """The first successful run of each distinct lowered `module` whose text was kept."""
    texts = [(run, lowered_text(results_dir, run, module)) for run in cell.runs if run.ok]
    return first_of_each_module([(run, text) for run, text in texts if text is not None])


def collect(results_dir: Path, cell: CellResult, overlapped: bool = False) -> tuple[Evidence | MissingEvidence,
                                                                                 Seeds | None]:
    """A reproduced cell's evidence and the seeds that each gave a different key, its logs read once.

    `overlapped`: the cell's runs ran in parallel (--jobs N>1), so a run's new_entries may hold a
    neighbour's key; runs (and seeds) are then told apart by their lowered modules, not by their keys."""
    module = split_module(cell)
    if module is None:
        return MissingEvidence(None, "no module got two keys"), None
    if overlapped:
        distinct = distinct_lowered(results_dir, cell, module)
        return _evidence_by_module(module, distinct), module_seeds(distinct)
    return _evidence_by_key(results_dir, cell, module), key_seeds(cell, module)


def _evidence_by_module(module: str, distinct: list[tuple[RunRecord, str]]) -> Evidence | MissingEvidence:
    if len(distinct) < 2:
        return MissingEvidence(module, f"the runs overlapped (--jobs), so their keys cannot be told apart, "
                                       f"and no two runs kept a different lowered {module} (this script "
                                       "does not print it, this JAX release wrote no IR dump, or the "
                                       "modules are the same and the keys differ for another reason)")
    (run_a, text_a), (run_b, text_b) = distinct[:2]
    return compare_runs(module, run_a, run_b, text_a, text_b, keyed=False)


def _evidence_by_key(results_dir: Path, cell: CellResult, module: str) -> Evidence | MissingEvidence:
    pair = pick_pair(cell, module)
    if pair is None:
        return MissingEvidence(module, f"no two runs each wrote one {module} key of their own "
                                       "(runs overlapped with --jobs, or the keys came from cache hits)")
    run_a, run_b = pair
    texts = [lowered_text(results_dir, r, module) for r in pair]
    if any(t is None for t in texts):
        return MissingEvidence(module, f"the lowered {module} of runs {run_a.index} and {run_b.index} was "
                                       "not kept (this script does not print it, and this JAX release "
                                       "wrote no IR dump)")
    return compare_runs(module, run_a, run_b, texts[0], texts[1])
