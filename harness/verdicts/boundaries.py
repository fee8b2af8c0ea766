"""Versions -> where a regression appears and where it is fixed (pure): one verdict per release, the
boundaries, the ranges of releases that cached nothing, and the summary line's parts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from collections.abc import Callable, Iterable, Sequence

import msgspec
from packaging.version import Version

from harness.core.model import CellResult
from harness.core.kinds import NothingCached, Verdict
from harness.core.factors import Factor
from harness.evidence.failure import OutsideFailure, outside_jax
from harness.verdicts.factor_verdicts import by_factors_only



class RecordedBoundaries(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """The boundaries as results.json's `summary` and --json's `boundaries` write them: the three releases,
    the release the program fails from (when the range ends failing) and the summary line."""

    appears_in: str | None
    last_clean_before: str | None
    fixed_in: str | None
    fails_from: str | None = None
    line: str


@dataclass(frozen=True)
class Uncached:
    """Consecutive releases whose every cell cached nothing (`unsupported` with a `nothing_cached` cause),
    told as a boundary is: where it starts, the release before it that cached, where caching comes back.
    Releases that measured nothing for another reason (an error) are stepped over, as boundaries() does."""

    first: str
    last: str
    causes: tuple[NothingCached, ...]
    cached_before: str | None  # the last release before it that cached (clean or reproduced)
    cached_after: str | None  # the first release after it that cached

    def phrase(self) -> str:
        """`nothing is cached in 0.4.25 (no persistent cache; no release before it cached); cached from 0.4.26`."""
        span = self.first if self.first == self.last else f"{self.first} to {self.last}"
        if self.causes == (NothingCached.NO_JAX,):  # not the release's doing: nothing to cache at all
            return f"the program compiled nothing with JAX ({span}: it never imported jax): nothing measured"
        why = ", ".join(self.causes)
        if self.cached_before is None and self.cached_after is None:
            return f"nothing is cached on any release measured ({span}: {why})"
        before = f"last cached {self.cached_before}" if self.cached_before else "no release before it cached"
        text = f"nothing is cached in {span} ({why}; {before})"
        if self.cached_after is None:
            return text + "; not cached again in this range"
        return text + f"; cached {'again ' if self.cached_before else ''}from {self.cached_after}"


@dataclass(frozen=True)
class FailedRelease:
    """A release whose cells failed (`error`): no boundary is drawn through it, and where the program fails
    from some release on, no release after the last reproduced one is said to fix it."""

    version: str
    reason: str  # its first failed cell's
    outside: OutsideFailure | None = None  # failed on something JAX does not own (a missing module, ...)


def _range(versions: Sequence[str]) -> str:
    """Neighbouring releases: `0.4.29`, `0.4.29-0.4.30`."""
    return versions[0] if len(versions) == 1 else f"{versions[0]}-{versions[-1]}"


def _span(versions: Sequence[str]) -> str:
    """`0.4.28`, `0.4.28 and 0.4.31` (they need not be neighbours), `0.4.32-0.5.2 (7 releases)`."""
    if len(versions) <= 2:
        return " and ".join(versions)
    return f"{versions[0]}-{versions[-1]} ({len(versions)} releases)"


# (the measured release before a gap, the one after it) -> the command that measures the gap (the options
# registry spells it, above this layer: harness/report/reproduce.py's `narrowing`).
Narrowing = Callable[[str, str], str]
# (a boundary's last release before it, its first after it) -> what else changed between them, said after the
# boundary (`, where optax also changed 0.2.3 -> 0.2.8 here ...`), or "".
Also = Callable[[str | None, str | None], str]


def _nothing_else(low: str | None, high: str | None) -> str:
    return ""


@dataclass(frozen=True)
class Boundaries:
    """Where a regression appears and is fixed, as results.json's `summary` and --json's `boundaries` write it:
    the three releases and the summary line; what else the line is made of stays in memory."""

    appears_in: str | None
    last_clean_before: str | None
    fixed_in: str | None
    # The releases measured (clean or reproduced), in order: where every one of them reproduced, there is no
    # boundary to tell (empty: not known, as for a bisection's own line, which has its known-good release).
    measured: tuple[str, ...] = ()
    uncached: tuple[Uncached, ...] = ()  # ranges of releases that cached nothing
    # the last reproduced release before `fixed_in`
    last_reproduced_before_fix: str | None = None
    # Every release known to exist in the range (the index's, as the sweep recorded it, and those of the
    # cells): a boundary between two measured releases with others between them is told as a range.
    releases: tuple[str, ...] = ()
    # Where no release was measured at all (nothing is claimed): how many cells, and the first failed one's
    # reason (None where every release cached nothing: the `uncached` phrases say why).
    unmeasured: tuple[int, str | None] | None = None
    # Releases whose cells failed, in version order: a boundary is never drawn through them (issue 47.4).
    failed: tuple[FailedRelease, ...] = ()
    # Where every release measured reproduced (no clean one, no fix): the first of them. `appears_in` is then
    # null, as the line says: no boundary, so no release the regression appears in (issue 47.5).
    first_reproduced: str | None = None
    # Where every reproduced release reproduced only under --vary (its fresh processes all hit): the factors
    # that missed. The keys then follow the factor, not the program's own nondeterminism.
    missed_under: tuple[Factor, ...] = ()
    # Releases whose cells read `not cached` (no key moved, a module JAX never writes): measured, never clean, so
    # never a boundary; said where the line would otherwise call another release the only one measured.
    not_cached: tuple[str, ...] = ()

    def recorded(self) -> RecordedBoundaries:
        """What results.json and --json hold of these boundaries."""
        return RecordedBoundaries(appears_in=self.appears_in, last_clean_before=self.last_clean_before,
                                  fixed_in=self.fixed_in, fails_from=self.fails_from_release(), line=self.plain_line())

    def fails_from_release(self) -> str | None:
        """The release the program fails from, when the range ends failing (`fails_from`)."""
        failing = self.fails_from
        return failing.version if failing else None

    @property
    def reproduced_from(self) -> str | None:
        """The first release that reproduced, whether or not the range shows where it appears."""
        return self.appears_in or self.first_reproduced

    @property
    def fails_from(self) -> FailedRelease | None:
        """The first of the failed releases after the last one measured, when the range ends failing: the
        program fails from there on, so no later release can be said to fix (or show) anything."""
        if not self.failed or not self.measured:
            return None
        last = Version(self.measured[-1])
        after = [f for f in self.failed if Version(f.version) > last]
        return after[0] if after and after[-1].version == self.failed[-1].version else None

    def outside_jax_phrases(self) -> list[str]:
        """What failed outside JAX, said first: `0.4.32-0.5.2 (7 releases) failed on a dependency of the program,
        not on JAX: the program imports importlib_resources, which their environments lack (add it: --with
        importlib_resources)`, one phrase per thing missing."""
        by_cause: dict[OutsideFailure, list[str]] = {}
        for failed in self.failed:
            if failed.outside is not None:
                by_cause.setdefault(failed.outside, []).append(failed.version)
        return [f"{_span(versions)} failed on a dependency of the program, not on JAX: "
                f"{cause.phrase()}" for cause, versions in by_cause.items()]

    def not_measured_between(self, low: str, high: str) -> list[str]:
        """The known releases strictly between two measured ones that were not measured (clean or reproduced)."""
        measured = set(self.measured)
        return [v for v in sorted(set(self.releases), key=Version)
                if Version(low) < Version(v) < Version(high) and v not in measured]

    def plain_line(self) -> str:
        """The summary line without the commands that would narrow a gap (what results.json holds)."""
        return self.line()

    @property
    def no_boundary(self) -> bool:
        """Every release measured reproduced, the earliest included, and none was clean: the range shows
        no boundary (a program's own nondeterminism differs on every release)."""
        return self.first_reproduced is not None and self.appears_in is None

    def _gap(self, low: str | None, high: str, narrowing: Narrowing | None) -> str:
        """`, with 0.4.29-0.4.30 not measured (narrow it: harness ...)`; "" where no known release lies between."""
        if not low:
            return ""
        missing = self.not_measured_between(low, high)
        if not missing:
            return ""
        failed = {f.version for f in self.failed} & set(missing)
        # Releases that failed are no boundary either: said as failed, and narrowing them would fail again.
        if failed == set(missing):
            return f", with {_range(missing)} failing"
        narrow = f" (narrow it: {narrowing(low, high)})" if narrowing else ""
        some = f", {len(failed)} of them failing" if failed else ""
        return f", with {_range(missing)} not measured{some}{narrow}"

    def _fails_phrase(self, failing: FailedRelease) -> str:
        return f"the program fails from {failing.version} ({failing.reason})"

    def _no_boundary_phrase(self) -> str:
        """Every release measured misses: no boundary in the range, and why that may be."""
        first, last = self.measured[0], self.measured[-1]
        if self.missed_under:  # the fresh processes all hit: the factor moved the keys
            factors = ", ".join(self.missed_under)
            span = f"on {first}, the only release measured" if first == last else \
                f"on every release measured, {first} to {last}"
            return (f"a start under --vary {factors} misses {span} (its fresh processes hit: the keys follow "
                    f"{factors}), so the range shows no boundary (measure an earlier release for one)")
        elif first == last and self.failed:  # other releases were measured: they failed
            return (f"fresh processes miss the cache on {first}, the only release where the program ran, "
                    "so the range shows no boundary where it appears (measure an earlier release for one)")
        elif first == last and self.not_cached:  # measured too, but never clean: no boundary with it
            return (f"fresh processes miss the cache on {first}, the only release clean or reproduced "
                    f"({_span(self.not_cached)} not cached, never clean), so the range shows no boundary (measure "
                    "an earlier release for one)")
        elif first == last:
            return (f"fresh processes miss the cache on {first}, the only release measured, so the range "
                    "shows no boundary (measure an earlier release for one)")
        else:
            return (f"fresh processes miss the cache on every release measured, {first} to {last}, so the "
                    f"range shows no boundary: likely the program's own nondeterminism (or a regression older "
                    f"than {first})")

    def line(self, narrowing: Narrowing | None = None, also: Also | None = None) -> str:
        """The summary line. `narrowing`: spells the command that measures the releases a boundary leaves
        unmeasured (without it the gap is still said, with no command). `also`: what else changed between a
        boundary's two releases, said right after it (harness/evidence/program_packages.py: the program's own
        packages)."""
        also = also or _nothing_else
        outside = self.outside_jax_phrases()  # a dependency's failure first: it is no finding about JAX
        if self.unmeasured is not None:  # no "not reproduced": nothing was
            cells, why = self.unmeasured
            # Every failure already said first (outside JAX): not again as the reason.
            told = bool(self.failed) and all(f.outside is not None for f in self.failed)
            said = [] if why is None else [f"nothing was measured: {'the only cell' if cells == 1 else f'all {cells} cells'} "
                                           f"failed or cached nothing" + ("" if told else f" ({why})")]
            return "; ".join([*outside, *said, *(u.phrase() for u in self.uncached)])
        failing = self.fails_from
        if self.no_boundary:
            text = self._no_boundary_phrase()
        elif self.appears_in is None:
            text = ("not reproduced in this range" if failing is None else
                    f"not reproduced where the program ran (through {self.measured[-1]}); {self._fails_phrase(failing)}")
        else:
            appears_gap = self._gap(self.last_clean_before, self.appears_in, narrowing)
            if appears_gap:
                text = f"regression appears after {self.last_clean_before}, by {self.appears_in}{appears_gap}"
            elif self.last_clean_before:
                text = f"regression appears in {self.appears_in} (last clean {self.last_clean_before})"
            else:
                text = (f"regression present from the first measured release, {self.appears_in} "
                        "(no clean release before it)")
            if self.last_clean_before:
                text += also(self.last_clean_before, self.appears_in)
            fixed_gap = self._gap(self.last_reproduced_before_fix, self.fixed_in, narrowing) if self.fixed_in else ""
            if fixed_gap:
                text += f"; fixed after {self.last_reproduced_before_fix}, by {self.fixed_in}{fixed_gap}"
            elif self.fixed_in:
                text += f"; fixed in {self.fixed_in}"
            elif failing is None:
                text += "; not fixed in this range"
            if self.fixed_in:
                text += also(self.last_reproduced_before_fix, self.fixed_in)
        if self.reproduced_from is not None and not self.fixed_in and failing is not None:
            # A regression that ends in a failure is not fixed: the program stopped running.
            text += (f"; reproduced through {self.measured[-1]}; {self._fails_phrase(failing)}, "
                     "so no release here fixes it")
        return "; ".join([*outside, text, *(u.phrase() for u in self.uncached)])


def version_verdicts(cells: Iterable[CellResult]) -> dict[str, Verdict]:
    """One verdict per JAX version over all its cells (meshes): reproduced if any cell reproduced; else `not cached`
    where a cell is and no key moved in any (its own state: never clean, so never a boundary between clean and
    reproduced, as a failed release is not); clean only if every cell is clean or `new input` (no key moved: the
    program computed something new, summary_line says it), else error (if any) or unsupported. Releases only: a
    commit measured beside them (`nightly --jax-repo`) is compared on its own, never a release boundary."""
    by_version: dict[str, list[Verdict]] = {}
    for cell in cells:
        if cell.commit is not None:
            continue
        by_version.setdefault(cell.spec.jax_version, []).append(cell.verdict)
    out = {}
    for version, verdicts in by_version.items():
        if Verdict.REPRODUCED in verdicts:
            out[version] = Verdict.REPRODUCED
        elif all(v.no_key_moved for v in verdicts) and Verdict.NOT_CACHED in verdicts:
            out[version] = Verdict.NOT_CACHED  # every start compiles what JAX never writes: not clean
        elif all(v.no_key_moved for v in verdicts):
            out[version] = Verdict.CLEAN  # new input: no key moved (the program computed something new)
        elif Verdict.ERROR in verdicts:
            out[version] = Verdict.ERROR
        else:
            out[version] = Verdict.UNSUPPORTED
    return dict(sorted(out.items(), key=lambda kv: Version(kv[0])))


def release_boundaries(cells: Sequence[CellResult], releases: Sequence[str] = ()) -> Boundaries:
    """The releases' boundaries (boundaries()), with which releases were measured and the ranges of
    releases that cached nothing: what every summary line of a sweep says. `releases`: every release
    known to exist in the range (the index's, recorded by the sweep; the cells' own are added), so a
    boundary between two measured releases with others between them is said as a range, not a release."""
    verdicts = version_verdicts(cells)
    measured = tuple(v for v, verdict in verdicts.items() if verdict.measured)
    known = tuple(sorted({*releases, *verdicts}, key=Version))
    found = replace(boundaries(verdicts), measured=measured, uncached=uncached_ranges(cells, verdicts),
                    releases=known, failed=failed_releases(cells, verdicts),
                    not_cached=tuple(v for v, verdict in verdicts.items() if verdict == Verdict.NOT_CACHED))
    if found.appears_in is not None and not found.last_clean_before and not found.fixed_in:
        # Every release measured reproduced: no boundary, and no release it "appears in" to write.
        found = replace(found, appears_in=None, first_reproduced=found.appears_in,
                        missed_under=_factors_alone(cells, verdicts))
    releases_only = [c for c in cells if c.commit is None]
    if releases_only and not measured and Verdict.NOT_CACHED not in verdicts.values():  # not cached: measured
        failed = [c for c in releases_only if c.verdict == Verdict.ERROR or
                  (c.verdict == Verdict.UNSUPPORTED and c.nothing_cached is None)]  # not told by `uncached`
        first = min(failed, key=lambda c: Version(c.spec.jax_version), default=None)
        found = replace(found, unmeasured=(len(releases_only),
                                           f"jax {first.spec.jax_version}: {first.reason}" if first else None))
    return found


def _factors_alone(cells: Sequence[CellResult], verdicts: dict[str, Verdict]) -> tuple[Factor, ...]:
    """The factors that missed, where every reproduced cell of a reproduced release reproduced only under
    --vary; () where any reproduced by its own fresh processes."""
    reproduced = [c for c in cells if c.commit is None and c.verdict == Verdict.REPRODUCED
                  and verdicts.get(c.spec.jax_version) == Verdict.REPRODUCED]
    if not reproduced or not all(by_factors_only(c) for c in reproduced):
        return ()
    return tuple(dict.fromkeys(f.factor for c in reproduced if c.variation for f in c.variation.missed()))


def failed_releases(cells: Sequence[CellResult], verdicts: dict[str, Verdict]) -> tuple[FailedRelease, ...]:
    """The releases whose verdict is `error`, each with its first failed cell's reason and, where that
    names one, the failure outside JAX."""
    out = []
    for version, verdict in verdicts.items():  # in version order
        if verdict != Verdict.ERROR:
            continue
        first = next(c for c in cells if c.commit is None and c.spec.jax_version == version
                     and c.verdict == Verdict.ERROR)
        # What failed, not the cell's whole account: its first failed run's reason (`exit code 1: ...`).
        why = next((r.reason for r in first.runs if not r.ok and r.reason), first.reason)
        out.append(FailedRelease(version, why, outside_jax(why)))
    return tuple(out)


def uncached_ranges(cells: Sequence[CellResult], verdicts: dict[str, Verdict]) -> tuple[Uncached, ...]:
    """The runs of consecutive releases (errors stepped over) whose every cell cached nothing."""
    causes: dict[str, list[NothingCached | None]] = {}
    for cell in cells:
        if cell.commit is None:
            causes.setdefault(cell.spec.jax_version, []).append(cell.nothing_cached)
    states: list[tuple[str, tuple[NothingCached, ...] | None]] = []  # (release, its causes, or None: it cached)
    for version, verdict in verdicts.items():  # in version order
        found = causes.get(version, [])
        if verdict.measured:
            states.append((version, None))
        elif verdict == Verdict.UNSUPPORTED and found and all(c is not None for c in found):
            states.append((version, tuple(dict.fromkeys(c for c in found if c is not None))))
    out: list[Uncached] = []
    i = 0
    while i < len(states):
        if states[i][1] is None:
            i += 1
            continue
        j = i
        while j + 1 < len(states) and states[j + 1][1] is not None:
            j += 1
        why = tuple(dict.fromkeys(c for _, found in states[i:j + 1] for c in found or ()))
        out.append(Uncached(states[i][0], states[j][0], why, states[i - 1][0] if i > 0 else None,
                            states[j + 1][0] if j + 1 < len(states) else None))
        i = j + 1
    return tuple(out)


def boundaries(verdicts: dict[str, Verdict]) -> Boundaries:
    """Where the first regression appears (after its nearest clean release) and where it is fixed.

    Versions that are `error` or `unsupported` say nothing and are stepped over.
    """
    ordered = [(v, verdicts[v]) for v in sorted(verdicts, key=Version)
               if verdicts[v].measured]
    appears = last_clean = fixed = last_reproduced = None
    for version, verdict in ordered:
        if appears is None:
            if verdict == Verdict.CLEAN:
                last_clean = version
            else:
                appears = last_reproduced = version
        elif verdict == Verdict.CLEAN:
            fixed = version
            break
        else:
            last_reproduced = version
    return Boundaries(appears, last_clean if appears else None, fixed,
                      last_reproduced_before_fix=last_reproduced if fixed else None)
