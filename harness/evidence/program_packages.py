"""The program's own packages, release by release (pure; issue 51.5): what the program asked for besides jax
(`--with`, PEP 723 inline metadata, `--requirements`, a config's `requirements:`) as each release's environment
resolved it, read from what every cell already records (`environment.distributions`, every installed
distribution and its version, and `environment.requirements`, the set asked for). No record field of its own.

Each release gets the packages of its date, so optax 0.2.3 beside JAX 0.4.31 and 0.2.8 beside 0.10.2: a miss that
appears (or goes) between two releases may be the package's, not JAX's. The table gets a `packages` column where
they differ between cells, and a boundary that coincides with such a change says so (`optax also changed 0.2.3
-> 0.2.8 here`), with the pin that tells the two apart (`--with optax==0.2.3`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from harness.core.model import CellResult

PACKAGES_HEADER = "packages"  # the table's column, only where the program's packages differ between cells


def requested_names(requirements: Iterable[str]) -> tuple[str, ...]:
    """The canonical names of requirement strings (`optax>=0.2` -> `optax`), sorted; unreadable ones skipped."""
    names = set()
    for text in requirements:
        try:
            names.add(canonicalize_name(Requirement(text).name))
        except InvalidRequirement:
            continue
    return tuple(sorted(names))


def cells_requirements(cells: Iterable[CellResult]) -> tuple[str, ...]:
    """What the cells' environments were asked to install besides jax (`environment.requirements`)."""
    return tuple(dict.fromkeys(r for c in cells for r in (c.environment_facts.get("requirements") or ())
                               if isinstance(r, str)))


def resolved(cell: CellResult, names: Sequence[str]) -> dict[str, str]:
    """The versions the cell's environment had of `names` ({} where it recorded no distributions)."""
    installed: dict[str, str] = {canonicalize_name(str(n)): str(v) for n, v in (cell.environment_facts.get("distributions") or {}).items()}
    return {n: installed[n] for n in names if n in installed}


def _release_key(version: str) -> tuple[int, Version | str]:
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


@dataclass(frozen=True)
class PackageChange:
    name: str
    before: str | None  # None: not installed there
    after: str | None

    def phrase(self) -> str:
        return f"{self.name} {self.before or 'absent'} -> {self.after or 'absent'}"


@dataclass(frozen=True)
class ProgramPackages:
    """The program's requested packages as each release resolved them (releases only: a commit's cell runs
    with a jaxlib release's environment and is no release boundary)."""

    names: tuple[str, ...] = ()
    by_release: dict[str, dict[str, str]] = field(default_factory=dict)  # in version order

    @classmethod
    def of(cls, cells: Sequence[CellResult], requirements: Iterable[str] = ()) -> ProgramPackages:
        """From the cells and the requirements the header knows (a config's or check's; the cells' own
        `environment.requirements` are added)."""
        names = requested_names([*requirements, *cells_requirements(cells)])
        if not names:
            return cls()
        by_release: dict[str, dict[str, str]] = {}
        for cell in cells:
            if cell.commit is not None:
                continue
            found = resolved(cell, names)
            if found:
                by_release.setdefault(cell.spec.jax_version, {}).update(found)
        return cls(names, dict(sorted(by_release.items(), key=lambda kv: _release_key(kv[0]))))

    def varying(self) -> tuple[str, ...]:
        """The requested packages whose version is not the same on every release that recorded them."""
        return tuple(n for n in self.names
                     if len({versions.get(n) for versions in self.by_release.values()}) > 1)

    def changes(self, low: str | None, high: str | None) -> list[PackageChange]:
        """What changed between two releases (both must have recorded their packages)."""
        if low not in self.by_release or high not in self.by_release:
            return []
        before, after = self.by_release[low], self.by_release[high]
        return [PackageChange(n, before.get(n), after.get(n)) for n in self.names if before.get(n) != after.get(n)]

    def also_changed(self, low: str | None, high: str | None) -> str:
        """`, where optax also changed 0.2.3 -> 0.2.8 here: the program's own package, so the change may be
        its, not JAX's (pin it to tell: --with optax==0.2.3)`; "" where none changed between them."""
        found = self.changes(low, high)
        if not found:
            return ""
        one = len(found) == 1
        pins = " ".join(f"--with {c.name}=={c.before}" for c in found if c.before)
        pin = f" (pin {'it' if one else 'them'} to tell: {pins})" if pins else ""
        return (f", where {_also(found)} here: the program's own package{'' if one else 's'}, so the change may be "
                f"{'its' if one else 'theirs'}, not JAX's{pin}")

    def summary_phrase(self) -> str:
        """`the program's packages differ between releases: optax 0.2.3 on 0.4.31, 0.2.8 on 0.10.2`; ""."""
        parts = []
        for name in self.varying():
            spans: list[tuple[str | None, list[str]]] = []
            for release, versions in self.by_release.items():
                version = versions.get(name)
                if spans and spans[-1][0] == version:
                    spans[-1][1].append(release)
                else:
                    spans.append((version, [release]))
            told = ", ".join(f"{version or 'absent'} on {_span(releases)}" for version, releases in spans)
            parts.append(f"{name} {told}")
        if not parts:
            return ""
        return "the program's packages differ between releases: " + "; ".join(parts)

    def column(self, cell: CellResult) -> str:
        """The table's `packages` cell: the versions of the packages that differ between releases."""
        found = resolved(cell, self.varying())
        return ", ".join(f"{n} {v}" for n, v in found.items()) or "-"

    def release_column(self, release: str) -> str:
        """The same for a release (a bisection's row)."""
        found = self.by_release.get(release, {})
        return ", ".join(f"{n} {found[n]}" for n in self.varying() if n in found) or "-"


def _also(found: list[PackageChange]) -> str:
    first, *rest = found
    return " and ".join([f"{first.name} also changed {first.before or 'absent'} -> {first.after or 'absent'}",
                         *(c.phrase() for c in rest)])


def _span(releases: list[str]) -> str:
    return releases[0] if len(releases) == 1 else f"{releases[0]}-{releases[-1]}"


def line_with_packages(line: Callable[[Callable[[str | None, str | None], str] | None], str],
                       packages: ProgramPackages) -> str:
    """A boundaries line (`line(also)`: Boundaries.line with its `also`) that names the program's package
    changes at each boundary they coincide with; where they differ between releases but at no boundary, the
    line ends by saying so."""
    if not packages.varying():
        return line(None)
    told: list[str] = []

    def also(low: str | None, high: str | None) -> str:
        phrase = packages.also_changed(low, high)
        if phrase:
            told.append(phrase)
        return phrase

    text = line(also)
    return text if told else "; ".join(part for part in (text, packages.summary_phrase()) if part)


NO_PACKAGES = ProgramPackages()  # no requested packages: nothing to name
