"""The quick screen of one reduction, set up from the original's forked children (harness/reduce/screen.py runs
them; harness/reduce/measure_candidate.py asks them of each candidate).

`ScreenMaker.make` starts the screen where it is as contained as a candidate's fresh run and the original passes it,
and says so once; `QuickScreen` is what it found: the servers on the bad release, the good release's, and whether the
children decide a candidate (they showed the original's miss) or only reject one that raises. The reduction hands it
to its measurer twice: at first to reject only (the original is measured as a candidate by fresh processes before the
screen decides anything), then as it was found (`QuickScreen.attach`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from harness.core.factors import Factor
from harness.core.kinds import FolderMode
from harness.inputs.config import Config
from harness.inputs.process_variables import merge_user_env, process_env
from harness.inside.startup.jax_cache_harness_hook import JOB_COORDINATOR_VAR, JOB_PROCESSES_VAR, JOB_RANK_VAR
from harness.measure.multiprocess_env import GroupPlan, rank_env
from harness.reduce.measure_candidate import Measurer, PreparedRelease
from harness.reduce.screen import ForkScreen, child_timeout, preloaded, screen_allowed
from harness.reduce.reduce_state import ReduceState


@dataclass
class QuickScreen:
    """The quick screen as the original's forked children found it. `screen` None: off, every candidate runs as
    fresh processes; `good` None: not asked on the good release; `decides`: the children showed the original's
    miss, so they reject or provisionally keep a candidate, not only reject one that raises."""

    screen: ForkScreen | None = None
    good: ForkScreen | None = None
    decides: bool = False
    # The good release's screen, not started until a checkpoint finds a kept program not clean there: in every
    # reduction of the integration tests none was, and its children were a quarter of all (start_good).
    good_maker: Callable[[], ForkScreen | None] | None = None

    def attach(self, measurer: Measurer, deciding: bool) -> None:
        """The measurer asks these servers; `deciding` False: they only reject (the original is not measured fresh
        yet), True: as they were found (and the good release's once a checkpoint asks for them)."""
        measurer.screen, measurer.good_screen = self.screen, self.good
        measurer.screen_decides = deciding and self.decides
        measurer.start_good_screen = self.start_good if deciding and self.decides and self.good_maker else None

    def start_good(self) -> ForkScreen | None:
        """The good release's screen, started once (None where the original's children there are not clean)."""
        if self.good is None and self.good_maker is not None:
            maker, self.good_maker = self.good_maker, None
            self.good = maker()
        return self.good

    @property
    def cpu_s(self) -> float:
        """The CPU seconds its children used, on both releases."""
        return sum(s.cpu_s for s in (self.screen, self.good) if s is not None)

    def close(self) -> None:
        for screen in (self.good, self.screen):
            if screen is not None:
                screen.close()


@dataclass
class ScreenMaker:
    config: Config  # the original's check config: its variables, arguments, thresholds
    script: Path
    work: Path  # the screen's scratch: the only place its servers write
    good: str | None  # the good release (what is said)
    say: Callable[[str], None]

    def make(self, source: str, state: ReduceState, measurer: Measurer) -> QuickScreen:
        """The quick screen where it is as contained as a candidate's fresh run and the original passes it (it runs
        to its end in a forked child of its first deciding seed); else none, said once."""
        if not measurer.sandbox.bwrap:
            return QuickScreen()
        python = getattr(measurer.bad.environment, "python", None)
        seed = state.bad_seeds[0] if state.bad_seeds else None
        if state.signature.factor is not None or state.signature.ranks is not None:
            return self._cell(source, state, measurer)
        if python is None or not isinstance(seed, int):
            return QuickScreen()
        if not screen_allowed(state.places):
            self.say("quick screen off: the original wrote outside /tmp and /var/tmp "
                     f"({', '.join(state.places[:2])}{' ...' if len(state.places) > 2 else ''}), where a "
                     "candidate's stand-in is its own; every candidate runs as fresh processes")
            return QuickScreen()
        screen = self._forked(source, state, measurer, measurer.bad, Path(python), self.work,
                              process_env(measurer.bad.spec, seed, self.config.cache_thresholds))
        # The two seeds that decide nearly every candidate; a later seed's server starts when a candidate first
        # needs it (one whose first two seeds computed one key: a few in a reduction).
        screen.prestart([s for s in state.bad_seeds if isinstance(s, int)][:2])
        original = screen.screen(state.best, seed)
        if not original.finished:
            screen.close()
            why = original.rejected or original.why or "it did not run"
            self.say(f"quick screen off: the original does not run to its end in a forked child ({why}); every "
                     "candidate runs as fresh processes")
            return QuickScreen()
        # A candidate's child is killed much sooner than a fresh run would be (docs/reduce.md): one that hangs
        # costs a few times the original's forked run, not the fresh run's timeout.
        screen.timeout_s = child_timeout(original.seconds, measurer.timeout_s)
        found = QuickScreen(screen, decides=self._decides(screen, state))
        if found.decides and measurer.good is not None:
            found.good_maker = partial(self._good, source, state, measurer, screen.timeout_s)
        hanging = (f"a child is stopped as hanging after {screen.timeout_s:.0f} s (the original ran "
                   f"{original.seconds:.1f} s forked)")
        if found.decides:
            self.say(f"quick screen: candidates run as children forked from interpreters that imported "
                     f"{', '.join(screen.modules)} (one per seed: {', '.join(map(str, state.bad_seeds))}); one that "
                     f"raises, or computes one key of {state.signature.module} for every seed, is rejected; one whose "
                     "seeds compute different keys is kept provisionally"
                     + ", and confirmed by fresh processes at each checkpoint (each fixpoint of the coarse passes), as the reduced "
                     "program is at the end"
                     + (f" (on jax {self.good} too; forked children there as well once a checkpoint finds a kept "
                        "program not clean there)" if found.good_maker else "") + f"; {hanging}")
        else:
            self.say(f"quick screen: candidates that raise are rejected in a child forked from an interpreter that "
                     f"imported {', '.join(screen.modules)} (seed {seed}); the others, and every kept one, run as "
                     f"fresh processes; {hanging}")
        return found

    def _cell(self, source: str, state: ReduceState, measurer: Measurer) -> QuickScreen:
        """The quick screen under --vary cache-path or between processes (harness/reduce/forked_cells.py): where the
        original's own forked children show its miss (the factor's child misses and the control hits; the job's
        processes disagree), it decides, as the plain screen does; else it is off, said once. None for any other
        factor (its run is another user, host, prefix...: fresh processes only)."""
        python = getattr(measurer.bad.environment, "python", None)
        launch = state.bad_seeds[0] if state.bad_seeds else None
        factor, ranks = state.signature.factor, state.signature.ranks
        if python is None or launch is None or (factor is not None and factor != Factor.CACHE_PATH) \
                or not screen_allowed(state.places):
            return QuickScreen()
        screen = self._forked(source, state, measurer, measurer.bad, Path(python), self.work)
        if factor is not None and isinstance(launch, int):
            answer = measurer.factor_children(screen, state.best, launch)
            shown = f"{state.signature.module} missed under {factor} and its control hit"
        elif ranks is not None and isinstance(launch, tuple):
            answer = measurer.job_children(screen, state.best, launch)
            shown = f"its processes computed different keys of {state.signature.module}"
        else:
            answer = None
        if answer is None or not answer.kept:
            screen.close()
            self.say("quick screen off: the original's forked children do not show its miss "
                     f"({answer.why if answer else 'they did not run to their key'}); every candidate runs "
                     "as fresh processes")
            return QuickScreen()
        found = QuickScreen(screen, decides=True)
        if factor is not None and isinstance(launch, int) and measurer.good is not None:
            found.good_maker = partial(self._good_factor, source, state, measurer, launch)
        self.say(f"quick screen: candidates run as children forked from interpreters that imported "
                 f"{', '.join(screen.modules)} (the original's did: {shown}); "
                 + (f"at two cache paths and the first again, seed {launch}" if factor is not None else
                    f"one job of children of seeds {', '.join(map(str, launch if isinstance(launch, tuple) else ()))}")
                 + "; one that raises or does not miss is rejected, one that misses is kept provisionally"
                 + ", and confirmed by fresh processes at each checkpoint, as the reduced program is at the end"
                 + (f" (on jax {self.good} too; forked children there as well once a checkpoint finds a kept program "
                    "not clean there)" if found.good_maker else ""))
        return found

    def _good_factor(self, source: str, state: ReduceState, measurer: Measurer, seed: int) -> ForkScreen | None:
        """Forked children on the good release under --vary cache-path, where the original's are clean there."""
        python = getattr(measurer.good.environment, "python", None) if measurer.good is not None else None
        if measurer.good is None or python is None:
            return None
        good = self._forked(source, state, measurer, measurer.good, Path(python), self.work / "good")
        if measurer.good_factor_children(state.best, seed, good) is not None:  # the original is not clean there
            good.close()
            return None
        return good

    def _forked(self, source: str, state: ReduceState, measurer: Measurer, release: PreparedRelease, python: Path,
                work: Path, env: dict[str, str] | None = None) -> ForkScreen:
        """Servers of `release`'s environment with a fresh run's variables (`env`, else seed 0's; a job's process's,
        between processes: its share of the devices, gloo), less the hash seed, the cache folder and the job (set per
        child)."""
        if env is not None:
            pass
        elif release.spec.is_multiprocess:
            env = rank_env(release.spec, GroupPlan((0,) * release.spec.processes, ""), 0,
                           self.config.cache_thresholds)
            for name in (JOB_COORDINATOR_VAR, JOB_PROCESSES_VAR, JOB_RANK_VAR):
                env.pop(name, None)
        else:
            env = process_env(release.spec, 0, self.config.cache_thresholds)
        env = merge_user_env(env, self.config.env)
        env.pop("PYTHONHASHSEED")
        local = (self.script.resolve().parent, Path(measurer.workdir).resolve())  # (the original's working folder)
        return ForkScreen(python, {**os.environ, **env}, preloaded(source, local), work, Path(measurer.workdir),
                          self.script, measurer.files, local, measurer.timeout_s, args=self.config.args,
                          hook_folder=state.folder == FolderMode.HOOK, places=state.places,
                          network=release.spec.is_multiprocess or state.network, say=self.say)

    def _good(self, source: str, state: ReduceState, measurer: Measurer, timeout_s: float) -> ForkScreen | None:
        """Forked children on the good release too, where the original's of its two deciding seeds are clean there
        (each computes keys, the second none the first did not): a provisional keep they find not clean is
        rejected at once, rather than undone at the next checkpoint by fresh processes."""
        good = measurer.good
        python = getattr(good.environment, "python", None) if good else None
        seeds = [s for s in state.bad_seeds[:2] if isinstance(s, int)]  # a plain cell's (make's test)
        if python is None or good is None or len(seeds) < 2:
            return None
        screen = self._forked(source, state, measurer, good, Path(python), self.work / "good",
                              process_env(good.spec, seeds[0], self.config.cache_thresholds))
        screen.timeout_s = timeout_s
        screen.prestart(seeds)
        first, later = (screen.screen(state.best, s, module=state.signature.module) for s in seeds)
        if first.computed and later.keys is not None and not later.every - first.every:
            return screen
        screen.close()
        return None

    @staticmethod
    def _decides(screen: ForkScreen, state: ReduceState) -> bool:
        """Whether the original's forked children of its two deciding seeds compute different keys of the
        signature's module, each seed's own (a program that needs the start-up hook to miss, or whose miss the
        forked children do not show, is decided by fresh processes only). Not under --vary or --processes."""
        seeds = [s for s in state.bad_seeds[:2] if isinstance(s, int)]
        if len(seeds) < 2:  # a job's seeds, or one seed only
            return False
        first, later = (screen.screen(state.best, s, module=state.signature.module) for s in seeds)
        return bool(first.keys and later.keys and later.keys - first.keys)
