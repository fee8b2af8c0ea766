"""What a cell's runs show besides its verdict (pure): which key components moved, a job's processes that
disagreed and each one's verdict, what the script did to its cache, whether failures follow the hash seed,
what misses cost, and --vary's factors. harness/core/model.py re-exports them."""

from __future__ import annotations

import msgspec

from harness.core.kinds import ThresholdMode, Verdict
from harness.core.runs import CacheSetting, RunRecord
from harness.core.factors import Factor, FactorOutcome


class Attribution(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """Which components of a module's key moved between two runs, from their JAX logs: the first run's
    key against a later run's new key of the same computation."""

    module: str
    run_a: int  # the first run
    run_b: int  # a later run that computed a key the first did not
    key_a: str
    key_b: str
    # (component, its hash in run_a, in run_b), JAX's order
    hashes: list[tuple[str, str | None, str | None]] = []

    @property
    def components(self) -> list[str]:
        """The components (JAX's spelling) whose hashes differ between the two runs."""
        return [name for name, a, b in self.hashes if a != b]


class RankSplit(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """The processes of one run (a job) computed different keys for the same module: they lowered
    different programs (the multi-host hang class), or their keys differ in another component."""

    module: str
    run: int
    ranks: tuple[int, int]
    keys: tuple[str, str]
    # (component, its hash in ranks[0], in ranks[1])
    hashes: list[tuple[str, str | None, str | None]] = []

    @property
    def components(self) -> list[str]:
        return [name for name, a, b in self.hashes if a != b]


class ProcessVerdict(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """One process of a job judged alone: its launches' keys against its own first launch's."""

    rank: int
    verdict: Verdict
    reason: str = ""  # absent in some older results


class JobFacts(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """What the runs of a multi-process cell show besides the verdict (harness/evidence/ranks.py)."""

    processes: int
    per_process: tuple[ProcessVerdict, ...] = ()
    writers: tuple[int, ...] = ()  # ranks whose JAX logged writing an entry
    # Components in which the ranks' keys of one module differed in every run, and nothing else did: the
    # key names the process's own devices (on the CPU each process's simulated devices are its own).
    host_components: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


class ScriptCacheFacts(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """What a cell's runs' scripts did to their cache, over all runs (harness/evidence/script_settings.py)."""

    # (folder asked for, api): redirected to the cell's folder
    folders: tuple[tuple[str, str], ...] = ()
    disabled: str | None = None  # how the script turned its cache off
    escaped: str | None = None  # a cache folder JAX used that is not the cell's (not redirected)
    thresholds: tuple[CacheSetting, ...] = ()  # threshold settings the script made (last of each option)
    problems: tuple[str, ...] = ()  # what the hook could not do
    # whose thresholds applied
    mode: ThresholdMode = msgspec.field(default=ThresholdMode.SCRIPT, name="thresholds_mode")
    notes: tuple[str, ...] = ()  # the report's sentences
    # The script's call that set its folder after JAX had initialised its cache without one: no cache.
    uninitialised: str | None = None

    @property
    def any(self) -> bool:
        return bool(self.folders or self.disabled or self.escaped or self.thresholds or self.problems)


class SeedRun(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """One run of a seed check: the seed, the cell's run that had it, and how its re-run ended."""

    seed: int
    run: int  # the cell's run with this seed
    rerun_ok: bool
    rerun_detail: str = ""  # why the re-run failed
    log: str = ""  # the re-run's log, relative to the results folder


class SeedCheck(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """Whether a cell's failures follow the hash seed: a failing and a passing seed re-run (harness/verdicts/seed_check.py),
    in fresh cache folders. It follows the seed when each re-run ends as its first run did."""

    failing: SeedRun
    passing: SeedRun
    # the further re-runs of either seed (none in results written before)
    again: tuple[SeedRun, ...] = ()

    @property
    def follows_seed(self) -> bool:
        return all(r.rerun_ok == (r.seed == self.passing.seed) for r in (self.failing, self.passing, *self.again))


class RunCost(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """What one run's compiles cost, from its JAX log (harness/evidence/cost.py): the keys it compiled (misses)
    and their logged seconds, the keys it loaded (hits) and the seconds the run that wrote each had
    logged compiling it (what the hit saved)."""

    run: int
    modules: int = 0  # modules the run computed a key of
    misses: int = 0  # keys compiled
    miss_s: float = 0.0  # their compile seconds, as JAX logged them
    untimed_misses: int = 0  # compiled keys whose seconds JAX did not log (a module it never writes)
    hits: int = 0
    saved_s: float = 0.0
    missed_modules: tuple[str, ...] = ()


class CellCost(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """What a cell's misses cost each fresh process, and what its hits saved (harness/evidence/cost.py). `starts`:
    the later successful runs, each a fresh process that should have loaded what the first one compiled."""

    starts: int = 0
    lost_per_start_s: float = 0.0  # mean compile seconds of the later runs' misses
    saved_per_start_s: float = 0.0  # mean seconds the later runs' hits saved
    modules: int = 0  # modules the later runs computed
    missed_modules: tuple[str, ...] = ()  # modules a later run compiled again
    each_start_missed: tuple[str, ...] = ()  # those every later run compiled again
    untimed_modules: tuple[str, ...] = ()  # missed modules whose compile seconds JAX did not log
    first_run_s: float = 0.0  # the first run's compile seconds (a cold cache: every key a miss)
    runs: tuple[RunCost, ...] = ()


class FactorResult(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """One factor of `--vary`: its run against the cell's reference run (harness/verdicts/factor_verdicts.py)."""

    factor: Factor
    outcome: FactorOutcome
    reason: str = ""  # the miss in words ("compile_options moved, 3 of 3 modules"), or why not judged
    # key components that moved (JAX's spelling)
    components: list[str] = []
    # the reference's modules it missed, of how many (when known)
    modules: list[str] = []
    modules_total: int = 0
    # what the run changed, in words (the other path, the variable's value)
    change: str = ""
    run: RunRecord | None = None  # None: could not be varied here
    # harness check's moved run in a planned later run's place (its index and seed; 0: run 1's seed, one run beside
    # the plan, as before): `counted` when every key hit, the run then being that planned run; otherwise that run
    # was made again in the cell's own folder with the same seed, the control that tells the path from the seed.
    planned_run: int = 0
    counted: bool = False

    @property
    def missed(self) -> bool:
        """A miss under a factor that should not matter: what makes a cell `reproduced`."""
        return self.outcome == FactorOutcome.MISS


class CellVariation(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """A cell's `--vary` measurement: the reference run (the cell's first, in the plain environment),
    one run per factor with its hash seed, and, when a factor missed, a control run: the plain
    environment with the same seed again, which must hit for a miss to be the factor's."""

    reference_run: int  # index of the cell's run the factors are compared with
    seed: int  # its hash seed, which every factor run had
    factors: list[FactorResult] = []
    control: RunRecord | None = None
    # why no factor was judged (the reference failed, nothing was cached, the control missed)
    note: str = ""

    def missed(self) -> list[FactorResult]:
        return [f for f in self.factors if f.missed]
