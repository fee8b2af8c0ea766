"""Where a run's lowered module is on disk: the built-in repro prints it into the run's log; a user's
script gets it from JAX's own IR dump (`JAX_DUMP_IR_TO`, set by the runner) in the folder beside the log."""

from __future__ import annotations

import re
from pathlib import Path

from harness.model import CellResult, RunRecord
from harness.report.evidence import (Evidence, MissingEvidence, compare_runs, extract_lowered, pick_pair,
                                     split_module)
from harness.runner import ir_dump_dir

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


def collect_evidence(results_dir: Path, cell: CellResult) -> Evidence | MissingEvidence:
    module = split_module(cell)
    if module is None:
        return MissingEvidence(None, "no module got two keys")
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
