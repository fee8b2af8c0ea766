"""The built-in repro's seed plan says what its runs lowered, not what the probe predicted (issue 47 item 2).

The probe builds the mesh's name set itself, with the names inserted in the mesh's order; a release that builds
it otherwise (or whose module never shows the order) lowers other orders for some seeds. The plan recorded in
the cell (`orderings_run`, `pairs_in_both_orders`, the set-order bound) comes from the modules the runs printed
in their logs; the real probe (this interpreter) chooses the seeds, the runs are stand-ins that print a module.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from harness.core.confidence import SeedStrategy
from harness.core.ir_names import HLO_BEGIN, HLO_END
from harness.core.model import CellSpec, Mesh
from harness.core.kinds import Platform, Verdict
from harness.core.runs import ProcessOutcome
from harness.environments.local import LocalEnvironment
from harness.environments.process import clean_environment
from harness.inputs.config import Repro
from harness.measure.cell_runner import CellRunner
from harness.measure.seeds import PROBE_SCRIPT, SeedPlanner

NAMES = ("model", "data")
SPEC = CellSpec("0.4.31", Platform.CPU, 8, Mesh((4, 2), NAMES))
REPRO = Repro("shard_map_grad", Path(__file__), builtin=True)


def inserted_reversed(seed: int) -> tuple[str, ...]:
    """What `set(names) - set()` iterates as with the names inserted in the other order, under `seed`."""
    code = f"print(','.join(set({list(NAMES[::-1])!r}) - set()))"
    env = {**clean_environment({}), "PYTHONHASHSEED": str(seed)}
    out = subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, check=True)
    return tuple(out.stdout.strip().split(","))


class PrintingEnvironment(LocalEnvironment):
    """The probe runs for real; the built-in's runs print a module whose residual names are `order(seed)`, and
    write one cache entry (the same key every run: clean)."""

    def __init__(self, order):
        super().__init__(sys.executable, {"jax": "0.4.31", "python": sys.version.split()[0]})
        self.order, self.lowered = order, {}

    def run(self, program, env, cache_dir, log_path, timeout_s, variation=None):
        if program.script == PROBE_SCRIPT:
            return super().run(program, env, cache_dir, log_path, timeout_s)
        seed = int(env["PYTHONHASHSEED"])
        names = self.lowered[seed] = self.order(seed)
        quoted = ", ".join(f"'{n}'" for n in names)
        log_path.write_text(f"{HLO_BEGIN}\nmodule @jit_f {{\n  func.func private @shmap_body(%arg0: tensor<1x1xf32>) "
                            f"-> (tensor<1x1xf32> {{jax.result_info = \"[({quoted}), None]\"}})\n}}\n{HLO_END}\n")
        (cache_dir / f"jit_f-{1:064x}-cache").write_text("x")
        return ProcessOutcome(0, 0.01)


def measure(tmp_path: Path, environment: PrintingEnvironment, runs: int):
    planner = SeedPlanner(runs=runs)
    logs = tmp_path / "logs"
    plan = planner.plan(SPEC, environment, logs)
    assert plan.strategy == SeedStrategy.CHOSEN  # the probe answered
    predicted = {",".join(o[0]) for o in plan_orders(planner, environment)}
    cell = CellRunner(environment, REPRO, 10).run(SPEC, plan.launches(), tmp_path / "cache", logs,
                                                  stop_when_reproduced=True,
                                                  reseed=planner.reseeder(SPEC, plan, environment, logs), plan=plan)
    return cell, predicted


def plan_orders(planner: SeedPlanner, environment: PrintingEnvironment):
    (probe,) = planner._probes.values()
    return probe.orderings.values()


def test_a_release_that_always_lowers_one_order_is_not_said_to_have_run_both(tmp_path):
    """Every run lowers ('model', 'data'), whatever its seed: before, the plan said both orders ran
    (`orderings_run: [data,model, model,data]`, every pair both ways, a set-order bound of 0)."""
    environment = PrintingEnvironment(lambda seed: NAMES)
    cell, predicted = measure(tmp_path, environment, runs=4)
    assert predicted == {"model,data", "data,model"}  # the probe predicts both among its candidates
    assert cell.verdict == Verdict.CLEAN and len(cell.runs) == 4
    (cover,) = cell.seeds.covers
    assert cover.orderings_run == ["model,data"] and cover.lowered is True
    assert cover.pairs_in_both_orders is False and cover.pair_orders_not_seen == ["data,model"]
    assert "data,model" in cover.orderings_predicted  # what the probe said, kept beside
    assert cell.miss_bounds.set_order > 0  # from the observed orders: not 0
    assert cell.seeds.seeds == [r.seed for r in cell.runs]  # the plan recorded is the seeds that ran
    assert "read back from the module it printed" in cell.seeds.note


def test_what_the_plan_says_ran_is_what_the_runs_printed(tmp_path):
    """A release that inserts the names in the other order: the recorded orders are the printed ones."""
    environment = PrintingEnvironment(inserted_reversed)
    cell, _ = measure(tmp_path, environment, runs=6)
    (cover,) = cell.seeds.covers
    printed = {",".join(environment.lowered[r.seed]) for r in cell.runs}
    assert set(cover.orderings_run) == printed
    assert cover.pairs_in_both_orders is (len(printed) == 2)


def test_a_clean_release_whose_module_shows_both_orders_keeps_a_bound_of_0(tmp_path):
    """The seed's regression fixed but the order still printed (each run as the probe predicted): both orders
    seen, so the set-order bound is 0 as before, and runs 1 and 2 are the plan's first two chosen seeds."""
    probe_env = PrintingEnvironment(lambda seed: NAMES)
    planner = SeedPlanner(runs=4)
    plan = planner.plan(SPEC, probe_env, tmp_path / "probe")
    (probe,) = planner._probes.values()
    environment = PrintingEnvironment(lambda seed: probe.orderings[seed][0] if seed in probe.orderings else NAMES)
    first_two = plan.chosen[:2]
    cell, _ = measure(tmp_path, environment, runs=4)
    (cover,) = cell.seeds.covers
    assert [r.seed for r in cell.runs[:2]] == first_two
    assert cover.pairs_in_both_orders is True and cell.miss_bounds.set_order == 0.0
    assert os.path.basename(cell.runs[0].log).startswith("run-01-")


class SlowRunsEnvironment(PrintingEnvironment):
    """The probe for real; runs whose number is in `slow` end after their neighbour (a,b,c,d lowered every run)."""

    def __init__(self, slow: set[int]):
        super().__init__(lambda seed: ABCD.axis_names)
        self.slow, self.ended = slow, []

    def run(self, program, env, cache_dir, log_path, timeout_s, variation=None):
        if program.script == PROBE_SCRIPT:
            return super().run(program, env, cache_dir, log_path, timeout_s, variation)
        index = int(log_path.name.split("-")[1])
        if index in self.slow:
            time.sleep(0.3)
        outcome = super().run(program, env, cache_dir, log_path, timeout_s, variation)
        self.ended.append(index)
        return outcome


ABCD = Mesh((8, 1, 1, 1), ("a", "b", "c", "d"))


def test_two_runs_at_a_time_get_the_same_seeds_whichever_ends_first(tmp_path):
    """The runner takes each run's seed from the runs two places before it, whichever of two concurrent runs ends
    first (before, the 0.4.30 cell of `make table` got other seeds, and another bound, from one sweep to the next)."""
    spec = CellSpec("0.4.30", Platform.CPU, 8, ABCD)
    cells, ended = [], []
    for slow in ({3, 5, 7}, {4, 6, 8}):
        environment = SlowRunsEnvironment(slow)
        ended.append(environment.ended)
        planner = SeedPlanner(runs=8)
        logs = tmp_path / f"logs-{min(slow)}"
        plan = planner.plan(spec, environment, logs)
        cells.append(CellRunner(environment, REPRO, 10, at_once=2).run(
            spec, plan.launches(), tmp_path / f"cache-{min(slow)}", logs, stop_when_reproduced=True,
            reseed=planner.reseeder(spec, plan, environment, logs), plan=plan))
    assert ended[0] != ended[1]  # the runs ended in another order
    assert all(cell.verdict == Verdict.CLEAN and len(cell.runs) == 8 for cell in cells)
    first, second = (cell.seeds for cell in cells)
    assert [r.seed for r in cells[0].runs] == [r.seed for r in cells[1].runs]
    assert (first.chosen, first.covers) == (second.chosen, second.covers)
    assert cells[0].miss_bounds == cells[1].miss_bounds
