"""The cells behind tests/fixtures/records-golden.json: every fixture folder's cells as read, and cells built
here with every optional record set, as the harness wrote them before msgspec converted every record
(`python -m tests.records_golden` wrote the file with that code; tests/unit/test_records_golden.py checks
that it reads as the same records today)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.core.records import plain
from harness.core.confidence import MissBounds, SeedPlan, SeedStrategy, SetCover
from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.findings import (
    Attribution,
    CellCost,
    CellVariation,
    FactorResult,
    JobFacts,
    ProcessVerdict,
    RankSplit,
    RunCost,
    ScriptCacheFacts,
    SeedCheck,
    SeedRun,
)
from harness.core.runs import CacheSetting, RankRecord, RunCommand, RunRecord, ScriptCache
from harness.core.kinds import Cause, FolderMode, NothingCached, Platform, ThresholdMode, Verdict
from harness.core.model import CellResult, CellSpec, MeasuredCommit, Mesh
from harness.core.factors import Factor, FactorOutcome

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = FIXTURES / "records-golden.json"
FOLDERS = sorted(p.parent.name for p in FIXTURES.glob("*/results.json"))


def _log() -> RunLog:
    return RunLog([LoggedKey("jit_f", "k1", Outcome.WRITTEN, "", {"hlo": "h1", "compile_options": "c1"}, 0.25, (0, 1)),
                   LoggedKey("jit_f", "k2", Outcome.NOT_WRITTEN, "too fast"),
                   LoggedKey("jit_g", "k3", Outcome.HIT)])


def _run(index: int, **changes) -> RunRecord:
    return RunRecord(index, 100 + index, 0, 1.5, [f"entry-{index}"], log=f"logs/run-{index}.log", **changes)


def _script_cache() -> ScriptCache:
    return ScriptCache((CacheSetting("jax_compilation_cache_dir", "jax.config.update", "/tmp/c", "/cell",
                                     {"initialized": False, "path": None}),),
                       {"cache_path": "/cell", "target": "/cell"}, ("no hook",))


def rich_cells() -> list[CellResult]:
    """Cells with every optional part set, and ones with none: what no fixture folder holds."""
    mesh = Mesh((2, 1), ("a", "b"))
    ranks = [RankRecord(0, 11, 0, 1.0, log="logs/r0.log", keys=_log(), log_note="n", script_cache=_script_cache(),
                        joined=True),
             RankRecord(1, 12, None, 2.0, True, "timed out", "logs/r1.log")]
    runs = [_run(1, script_cache=_script_cache(), keys=_log(), log_note="note", ranks=ranks),
            _run(2, timed_out=True, reason="slow"), _run(3, keys=RunLog())]
    chosen = SeedPlan(SeedStrategy.CHOSEN, [1, 2, 3], chosen=[1, 2], random=[3], python="3.11", candidates=40,
                      covers=[SetCover(["a", "b"], True, orderings_run=["a,b", "b,a"])], note="a note",
                      ranks=[[1, 2], [3, 4]], ranks_how="spread")
    random = SeedPlan(SeedStrategy.RANDOM, [5, 6])
    full = CellResult(
        spec=CellSpec("0.4.31", Platform.CPU, 8, mesh, processes=2), verdict=Verdict.REPRODUCED,
        keys={"jit_f": ["k1", "k2"]}, runs=runs, reason="jit_f: a new key in run 2", listing=["a", "b"],
        environment_facts={"python": "3.11", "jaxlib": "0.4.31"}, seeds=chosen, miss_bounds=MissBounds(0.01, 0.2),
        interrupted=True, log_tail="tail", earlier_attempts=["docker: none"],
        script_cache=ScriptCacheFacts((("/tmp/c", "jax.config.update"),), "jax.config.update", "/elsewhere",
                                      (CacheSetting("jax_persistent_cache_min_compile_time_secs",
                                                    "jax.config.update", 1.0, 0.0),),
                                      ("p",), ThresholdMode.HARNESS, ("a note",), "set_cache_dir"),
        attribution=Attribution("jit_f", 1, 2, "k1", "k2", [("hlo", "h1", "h2"), ("compile_options", "c", "c"),
                                                            ("devices", None, "d")]),
        attribution_unavailable="run 3: no log", inconsistencies=["folder has more"], cause=Cause.ORDER,
        command=RunCommand(("s.py", "--x"), {"XLA_FLAGS": "--a", "B": "1"}, "/work"),
        commit=MeasuredCommit("a" * 40, "2024-01-01T00:00:00Z", "subject", "main", "origin", "0.4.30"),
        cache_folder=FolderMode.HOOK, cache_folder_why="the script sets one", nothing_cached=NothingCached.THRESHOLDS,
        as_you_run_it="as you run it, nothing is cached: the script sets no folder",
        seed_check=SeedCheck(SeedRun(1, 2, False, "crashed", "logs/s1.log"), SeedRun(3, 1, True),
                             (SeedRun(1, 2, False),)),
        rank_split=RankSplit("jit_f", 1, (0, 1), ("k1", "k9"), [("hlo", "h1", "h9"), ("devices", "d", "d")]),
        job=JobFacts(2, (ProcessVerdict(0, Verdict.CLEAN, ""), ProcessVerdict(1, Verdict.REPRODUCED, "new key")),
                       (0,), ("devices",), ("note",)),
        variation=CellVariation(1, 101, [
            FactorResult(Factor.CWD, FactorOutcome.MISS, "hlo moved", ["hlo"], ["jit_f"], 2, "/other",
                         _run(4, keys=_log())),
            FactorResult(Factor.USER, FactorOutcome.CANNOT_VARY, "no root"),
            FactorResult(Factor.TZ, FactorOutcome.HIT, "", [], [], 3)], _run(5), "control missed"),
        cost=CellCost(2, 0.5, 0.1, 3, ("jit_f",), (), ("jit_g",), 1.25,
                      (RunCost(2, 3, 1, 0.5, 0, 2, 0.1, ("jit_f",)),)))
    bare = CellResult(CellSpec("0.4.30", Platform.CUDA, 1, None), Verdict.ERROR, {}, reason="no env")
    clean = CellResult(CellSpec("0.4.29", Platform.AUTO, 4, mesh), Verdict.CLEAN, {"jit_f": ["k"]},
                       runs=[_run(1), _run(2)], seeds=random, miss_bounds=random.bounds,
                       cache_folder=FolderMode.ENVIRONMENT)
    unbounded = CellResult(CellSpec("0.4.28", Platform.CPU, 8, mesh), Verdict.UNSUPPORTED, {}, seeds=random,
                           nothing_cached=NothingCached.UNKNOWN)
    return [full, bare, clean, unbounded]


def current() -> dict:
    """What this code writes: each fixture folder's cells and document as read, and the built cells."""
    from harness.results.document import read_document, document_json

    out: dict = {"folders": {}, "built": [plain(c) for c in rich_cells()]}
    for folder in FOLDERS:
        data = json.loads((FIXTURES / folder / "results.json").read_text())
        doc = read_document(data, folder)
        out["folders"][folder] = document_json(doc)
    return out


def dumped(value) -> str:
    return json.dumps(value, indent=1) + "\n"


if __name__ == "__main__":
    GOLDEN.write_text(dumped(current()))
    print(f"wrote {GOLDEN}")
    sys.exit(0)
