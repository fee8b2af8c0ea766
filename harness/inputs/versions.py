"""JAX versions: check what a config names, and resolve specifiers against the package index.

Pure: the resolution takes an index object (harness/environments/package_index.py's `PyPIIndex` is the edge that asks PyPI's
JSON API); `parse_pypi` reads that API's answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from html.parser import HTMLParser
from typing import Any, Protocol, TypeVar
from collections.abc import Callable, Sequence
from urllib.parse import unquote, urlsplit

import msgspec
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from harness.core.errors import UserError
from harness.inputs.pythons import NoPython, PythonChoice, PythonChooser, PythonVersion

T = TypeVar("T")
_SPEC_CHARS = "<>=!~,"
# The CPython feature releases a wheel is looked for: far past any that exists today.
_CANDIDATE_PYTHONS = tuple(PythonVersion(3, minor) for minor in range(6, 40))


def is_specifier(entry: str) -> bool:
    return any(c in entry for c in _SPEC_CHARS)


LATEST = "latest"  # the newest usable release on the index


# Longer than any version or specifier list anyone writes; parsing 5,000 digits fails in int().
MAX_ENTRY_LENGTH = 200


def check_syntax(entry: str) -> str | None:
    """None when `entry` is a well-formed version, PEP 440 specifier or `latest`, else what is wrong."""
    if entry == LATEST:
        return None
    if len(entry) > MAX_ENTRY_LENGTH:
        return f"{entry[:20]!r}... is {len(entry)} characters long: not a version or specifier"
    try:
        if is_specifier(entry):
            SpecifierSet(entry)
        else:
            Version(entry)
    except (InvalidSpecifier, InvalidVersion, ValueError):  # ValueError: a number past 4300 digits
        return (f"{entry!r} is not a version (e.g. 0.4.28), a specifier (e.g. \">=0.4.26,<0.4.32\") "
                f"or latest")
    return None


@dataclass(frozen=True)
class Release:
    version: str
    uploaded: datetime | None  # latest upload among the release's files
    yanked: bool = False
    requires_python: str | None = None
    wheel_tags: frozenset[Tag] = frozenset()  # every tag of its binary wheels

    def pythons(self, wheel_platforms: Sequence[str]) -> frozenset[PythonVersion] | None:
        """The CPython versions with a wheel of this release that installs on `platforms`, narrowed
        by its Requires-Python; None when the index lists no wheels (a pure-Python release, a fake)."""
        allowed = _requires(self.requires_python)
        if not self.wheel_tags:
            return None
        return frozenset(v for v in _CANDIDATE_PYTHONS
                         if any(accepts(v, tuple(wheel_platforms), tag) for tag in self.wheel_tags) and allowed(v))


def _requires(requires_python: str | None) -> Callable[[PythonVersion], bool]:
    try:
        spec = SpecifierSet(requires_python or "")
    except InvalidSpecifier:
        spec = SpecifierSet()
    return lambda v: Version(f"{v}.0") in spec


@cache
def target_tags(python: PythonVersion, wheel_platforms: tuple[str, ...]) -> frozenset[Tag]:
    """Every wheel tag a (regular, not free-threaded) CPython `python` on these platforms accepts."""
    version = (python.major, python.minor)
    abi = f"cp{python.major}{python.minor}"
    return frozenset(cpython_tags(version, abis=[abi], platforms=list(wheel_platforms))) | frozenset(
        compatible_tags(version, interpreter=abi, platforms=list(wheel_platforms)))


# Stands for each platform asked: a CPython's tags are its (interpreter, abi) pairs times the wheel platforms, and a
# few `any` ones, so one such set answers for any platforms; the full sets (thousands of tags for manylinux's
# glibc versions) took 0.1 s of CPU at every command's start, about a tenth of a small suite's run.
_ONE_WHEEL_PLATFORM = "harness_one_platform"


@cache
def _tags_on_one_wheel_platform(python: PythonVersion) -> frozenset[Tag]:
    return target_tags(python, (_ONE_WHEEL_PLATFORM,))


def accepts(python: PythonVersion, wheel_platforms: tuple[str, ...], tag: Tag) -> bool:
    """Whether `tag` is in target_tags(python, wheel_platforms), without making that set."""
    wheel_platform = _ONE_WHEEL_PLATFORM if tag.platform in {p.lower() for p in wheel_platforms} else tag.platform
    return Tag(tag.interpreter, tag.abi, wheel_platform) in _tags_on_one_wheel_platform(python)


class PackageIndex(Protocol):
    def releases(self, package: str) -> dict[str, Release]: ...


def release_pythons(index: PackageIndex,
                    wheel_platforms: Sequence[str]) -> Callable[[str], frozenset[PythonVersion] | None]:
    """A function: jax version -> the Pythons with wheels for both its jax and its jaxlib on
    `platforms` (None when the index does not say)."""
    def pythons(version: str) -> frozenset[PythonVersion] | None:
        jax, jaxlib = index.releases("jax").get(version), index.releases("jaxlib").get(version)
        if jax is None or jaxlib is None:
            return None
        found = jaxlib.pythons(wheel_platforms)
        allowed = _requires(jax.requires_python)
        if found is None:
            return None if jax.requires_python is None else frozenset(v for v in _CANDIDATE_PYTHONS if allowed(v))
        return frozenset(v for v in found if allowed(v))
    return pythons


@dataclass(frozen=True)
class Resolution:
    """The releases the entries name, the Python each runs in, and those no Python here can run."""

    versions: list[str]
    pythons: dict[str, PythonChoice] = field(default_factory=dict)  # empty without a chooser
    unrunnable: list[NoPython] = field(default_factory=list)

    def notes(self) -> list[str]:
        """One line per release left out because no Python here can run it."""
        return [f"left out: {problem}" for problem in self.unrunnable]


def final_releases(index: PackageIndex) -> set[str]:
    """The final jax releases with a jaxlib of the same version, neither yanked."""
    jax = index.releases("jax")
    jaxlib = index.releases("jaxlib")
    return {v for v, r in jax.items() if not r.yanked and v in jaxlib and not jaxlib[v].yanked and _is_final(v)}


def releases_between(index: PackageIndex, versions: Sequence[str]) -> list[str]:
    """Every final release from the lowest of `versions` to the highest, in order: what a sweep of some of
    them leaves unmeasured (a boundary between 0.4.28 and 0.4.31 says 0.4.29-0.4.30 were not measured)."""
    if len(versions) < 2:
        return list(versions)
    low, high = min(map(Version, versions)), max(map(Version, versions))
    return sorted((v for v in final_releases(index) if low <= Version(v) <= high), key=Version)


def resolve(entries: tuple[str, ...] | list[str], index: PackageIndex, source: str = "jax_versions",
            pythons: PythonChooser | None = None) -> Resolution:
    """The releases `entries` name: final releases of jax with a jaxlib of the same version, sorted,
    without duplicates, each with the Python it runs in. With a `pythons` chooser, a release no
    Python here can run is left out of a range or `latest` (and listed in `unrunnable`, with what it
    needs) and is an error when named exactly. An entry that matches nothing is an error."""
    jax = index.releases("jax")
    released = final_releases(index)
    choices: dict[str, PythonChoice] = {}
    problems: dict[str, NoPython] = {}

    def runnable(version: str) -> bool:
        """Chosen only for releases an entry names: the machine is searched for other Pythons only
        when one of those needs it."""
        if pythons is None:
            return True
        if version not in choices and version not in problems:
            try:
                choices[version] = pythons.choose(version)
            except NoPython as problem:
                problems[version] = problem
        return version in choices

    chosen: set[str] = set()
    left_out: set[str] = set()
    for entry in entries:
        if entry == LATEST:
            newest_first = sorted(released, key=Version, reverse=True)
            matched, skipped = set(), set()
            for version in newest_first:
                if runnable(version):
                    matched = {version}
                    break
                skipped.add(version)
        elif is_specifier(entry):
            spec = SpecifierSet(entry)
            named = {v for v in released if Version(v) in spec}
            matched = {v for v in named if runnable(v)}
            skipped = named - matched
        else:
            wanted = Version(entry)
            named = {v for v in released if Version(v) == wanted}
            matched = {v for v in named if runnable(v)}
            skipped = set()
            if named - matched:
                raise UserError(f"{source}: {problems[min(named - matched)]}")
            if not matched and any(Version(v) == wanted for v in jax):
                raise UserError(f"{source}: jax {entry} has no matching jaxlib release (or was yanked)")
        if not matched:
            if skipped:
                newest_skipped = problems[max(skipped, key=Version)]
                raise UserError(f"{source}: {entry!r} matches no jax release a Python here can run: "
                                f"{newest_skipped}")
            raise UserError(f"{source}: {entry!r} matches no jax release on the package index")
        chosen |= matched
        left_out |= skipped
    versions = sorted(chosen, key=Version)
    return Resolution(versions, {v: choices[v] for v in versions if v in choices},
                      [problems[v] for v in sorted(left_out - chosen, key=Version)])


def _is_final(v: str) -> bool:
    try:
        parsed = Version(v)
    except InvalidVersion:
        return False
    return not (parsed.is_prerelease or parsed.is_devrelease)


class PageError(ValueError):
    """An index page that is not what its API says it is (one line: what is wrong, and where in the page)."""


class _PyPIFile(msgspec.Struct):
    filename: str = ""
    upload_time_iso_8601: datetime | None = None
    requires_python: str | None = None
    yanked: bool = False


class _PyPIPage(msgspec.Struct):
    """PyPI's JSON API answer (`/pypi/<project>/json`), the fields the resolution reads, each checked."""
    releases: dict[str, list[_PyPIFile]] = {}


class _SimpleFile(msgspec.Struct, rename="kebab"):
    filename: str
    upload_time: datetime | None = None  # PEP 700
    requires_python: str | None = None
    yanked: bool | str = False  # PEP 592: true, or the reason


class _SimplePage(msgspec.Struct):
    """A simple API page for one project (PEP 691 JSON)."""
    files: list[_SimpleFile] = []


class _Project(msgspec.Struct):
    name: str


class _SimpleRoot(msgspec.Struct):
    """A simple index's root page (PEP 691 JSON): the projects it serves."""
    projects: list[_Project] = []


def _checked(raw: bytes, page: type[T]) -> T:
    try:
        return msgspec.json.decode(raw, type=page)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise PageError(" ".join(str(exc).split())[:300]) from None


def parse_pypi(raw: bytes) -> dict[str, Release]:
    """PyPI's JSON API answer as releases; PageError when it is not one (every field read is checked)."""
    return _releases({version: [(f.filename, f.upload_time_iso_8601, f.requires_python, f.yanked) for f in files]
                      for version, files in _checked(raw, _PyPIPage).releases.items()})


SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"  # PEP 691


def parse_simple(raw: bytes) -> dict[str, Release]:
    """A simple API page (PEP 691 JSON: `files`, each with `filename` and, where the index has them,
    PEP 700's `upload-time`, `requires-python`, `yanked`) as parse_pypi's releases, grouped by the version
    each file's name carries; PageError when it is not such a page. A mirror that gives no upload times
    gives releases without dates."""
    by_version: dict[str, list[tuple[str, datetime | None, str | None, bool]]] = {}
    for entry in _checked(raw, _SimplePage).files:
        version = _file_version(entry.filename)
        if version is not None:
            by_version.setdefault(version, []).append(
                (entry.filename, entry.upload_time, entry.requires_python, bool(entry.yanked)))
    return _releases(by_version)


def _releases(files_by_version: dict[str, list[tuple[str, datetime | None, str | None, bool]]]) -> dict[str, Release]:
    """Releases from each version's files (name, upload time, Requires-Python, yanked)."""
    out = {}
    for version, files in files_by_version.items():
        if not files:
            continue
        times = [_aware(uploaded) for _, uploaded, _, _ in files if uploaded is not None]
        requires = next((r for _, _, r, _ in files if r), None)
        out[version] = Release(version, max(times, default=None), yanked=all(y for _, _, _, y in files),
                               requires_python=requires,
                               wheel_tags=_wheel_tags([name for name, _, _, yanked in files if not yanked]))
    return out


def _aware(moment: datetime) -> datetime:
    """A time without a zone as UTC (an index's times are), so that every upload time compares."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _file_version(filename: str) -> str | None:
    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[1])
        if filename.endswith((".tar.gz", ".zip")):
            return str(parse_sdist_filename(filename)[1])
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return None


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.files: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a":
            return
        named = dict(attrs)
        href = named.get("href") or ""
        filename = unquote(urlsplit(href).path.rsplit("/", 1)[-1])
        if filename:
            self.files.append({"filename": filename, "url": href,
                               "requires-python": named.get("data-requires-python"),
                               "yanked": "data-yanked" in named})


class _AnchorTexts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []
        self._open = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open = tag == "a"
        if self._open:
            self.names.append("")

    def handle_endtag(self, tag: str) -> None:
        self._open = self._open and tag != "a"

    def handle_data(self, data: str) -> None:
        if self._open:
            self.names[-1] += data


def simple_projects(page: str, is_json: bool) -> tuple[str, ...]:
    """The project names a simple index's root lists (PEP 691 JSON `projects`, or PEP 503's anchors),
    canonical and sorted. PageError for JSON that is not an index's."""
    if is_json:
        names = [project.name for project in _checked(page.encode(), _SimpleRoot).projects]
    else:
        anchors = _AnchorTexts()
        anchors.feed(page)
        names = [n.strip() for n in anchors.names if n.strip()]
    return tuple(sorted({canonicalize_name(n) for n in names}))


def simple_html_as_json(page: str) -> dict[str, Any]:
    """A PEP 503 HTML page (one anchor per file) in PEP 691's JSON shape (no upload times: HTML has none)."""
    anchors = _Anchors()
    anchors.feed(page)
    return {"meta": {"api-version": "1.0"}, "files": anchors.files}


def _wheel_tags(filenames: list[str]) -> frozenset[Tag]:
    tags: set[Tag] = set()
    for name in filenames:
        if not name.endswith(".whl"):
            continue
        try:
            tags |= parse_wheel_filename(name)[3]
        except InvalidWheelFilename:
            continue
    return frozenset(tags)


def matches(entry: str, version: str) -> bool:
    """Whether one config entry names `version` (`latest` names whatever is installed)."""
    if entry == LATEST:
        return True
    if is_specifier(entry):
        return Version(version) in SpecifierSet(entry)
    return Version(entry) == Version(version)
