"""A user's own dependencies (Flax, Optax, ...), as Python users already write them (pure).

Three spellings, one result: PEP 723 inline script metadata (`# /// script` with `dependencies`),
a requirements file (`pip -r`), and plain PEP 508 strings (`--with`, the config's `requirements:`).
Every string is validated with `packaging` and named by where it came from; the set is normalised
and sorted, so its digest names an environment: the same set reuses it, another set makes another.
"""

from __future__ import annotations

import configparser
import hashlib
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterable, Mapping
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from harness.core.errors import UserError
from harness.inputs.index_urls import redacted

# The specification's reference regular expression (packaging.python.org, "Inline script metadata").
# No maintained library offers this parser (`packaging` has none); the spec gives these lines as the
# way to read a block, and uv reads it the same way.
_BLOCK_RE = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
_OPENING_RE = re.compile(r"(?m)^# /// script\s*$")

# JAX itself: pinned by the harness for each release, never by the user.
JAX_OWN = frozenset({"jax", "jaxlib"})
# What every environment has whatever the script asks for: JAX's own plugins and CUDA libraries, and
# the installer's tools. A report lists the rest, the packages the script's results depend on.
_INFRASTRUCTURE = re.compile(r"^(jax|jaxlib|jax-cuda\d+-(plugin|pjrt)|nvidia-.*|pip|setuptools|wheel)$")


@dataclass(frozen=True)
class Requirements:
    """A normalised, sorted, duplicate-free set of PEP 508 requirement strings (`items`: what results.json and
    an environment's facts record, a list)."""

    items: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.items)

    def __add__(self, other: Requirements) -> Requirements:
        return Requirements(tuple(sorted(set(self.items) | set(other.items))))

    @property
    def digest(self) -> str:
        """Ten hex digits naming this set (the same for any spelling or order of the same strings)."""
        return hashlib.sha256("\n".join(self.items).encode()).hexdigest()[:10]

    @property
    def names(self) -> tuple[str, ...]:
        """The canonical (PEP 503) distribution names asked for."""
        return tuple(sorted({Requirement(item).name for item in self.items}))


# Where uv and pip read an index from the environment, in the order the harness honours them (uv's own
# spellings first: the installer is uv). Extra indexes are space-separated, as both tools read them.
INDEX_VARIABLES = ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL")
EXTRA_INDEX_VARIABLES = ("UV_EXTRA_INDEX_URL", "PIP_EXTRA_INDEX_URL")


@dataclass(frozen=True)
class Sources:
    """Where an environment's packages come from besides the public index's dated releases: another
    index (and extra ones), and the user's own packages installed editable (absolute paths). Part of
    the environment's identity: two sweeps with other sources never share an environment."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    editables: tuple[str, ...] = ()
    # Each editable folder's content digest (editable_content), in the order of `editables`: part of a
    # sweep's identity (an edit between a sweep and its --resume is another package), not of the
    # environment's (an editable install sees the edit without a rebuild).
    editable_digests: tuple[str, ...] = field(default=(), compare=False)
    # Where the indexes came from when not from the command line: the variable's name.
    index_variable: str | None = field(default=None, compare=False)
    # The projects an extra index serves: installed as it has them, not as of the release's date (a
    # private index rarely records upload times, and uv drops undated files under --exclude-newer).
    undated: tuple[str, ...] = field(default=(), compare=False)

    def __bool__(self) -> bool:
        return bool(self.index_url or self.extra_index_urls or self.editables)

    @property
    def digest(self) -> str:
        """Ten hex digits naming these sources (an environment's folder carries them)."""
        text = "\n".join([self.index_url or "", *self.extra_index_urls, "", *self.editables])
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    def index_args(self) -> list[str]:
        """uv's (and pip's) flags for the indexes."""
        out = ["--index-url", self.index_url] if self.index_url else []
        for url in self.extra_index_urls:
            out += ["--extra-index-url", url]
        return out

    def undated_args(self) -> list[str]:
        """uv's flags that exempt the extra indexes' own projects from --exclude-newer."""
        return [word for name in self.undated for word in ("--exclude-newer-package", f"{name}=false")]

    def editable_args(self) -> list[str]:
        return [word for path in self.editables for word in ("--editable", path)]


def sources_from(index_url: str | None, extra_index_urls: Iterable[str], editables: Iterable[Path],
                 environ: Mapping[str, str]) -> Sources:
    """The sources given on the command line, an index from the environment where none is given (see
    INDEX_VARIABLES), and each editable path checked to be a folder a package builds from (UserError)."""
    variable = None
    index = index_url
    if index is None:
        variable = next((name for name in INDEX_VARIABLES if environ.get(name, "").strip()), None)
        index = environ[variable] if variable else None
    extras = tuple(extra_index_urls)
    if not extras:
        extra_variable = next((name for name in EXTRA_INDEX_VARIABLES if environ.get(name, "").strip()), None)
        if extra_variable:
            extras, variable = tuple(environ[extra_variable].split()), variable or extra_variable
    for url in (index, *extras):
        if url is not None and not re.match(r"^(https?|file)://\S+$", url.strip()):
            raise UserError(f"--index-url/--extra-index-url: {redacted(url)!r} is not an http(s):// or file:// URL")
    folders = tuple(dict.fromkeys(str(package_folder(path, "--with-editable")) for path in editables))
    for folder in folders:
        stands_in = jax_stand_in(Path(folder))
        if stands_in:
            raise UserError(f"--with-editable {folder}: {stands_in}; jax and jaxlib come from the release's own "
                            "index, pinned by the harness for each release (choose them with --versions)")
    return Sources(index.strip() if index else None, tuple(u.strip() for u in extras), folders,
                   editable_digests=tuple(editable_content(Path(f)) for f in folders), index_variable=variable)


def package_folder(path: Path | str, where: str) -> Path:
    """`path` resolved, when it is a folder a package builds from; else UserError naming `where`."""
    folder = Path(path).expanduser().resolve()
    if not folder.is_dir():
        raise UserError(f"{where}: {path}: no such folder (give your package's folder, "
                        "the one with pyproject.toml or setup.py)")
    if not any((folder / name).is_file() for name in PACKAGE_FILES):
        raise UserError(f"{where}: {path}: has no pyproject.toml, setup.py or setup.cfg: not a package folder")
    return folder


def jax_stand_in(folder: Path) -> str | None:
    """How the package in `folder` would replace jax or jaxlib once installed editable (its declared name,
    or a module of that name at its top or under src/), else None. What a setup.py names at run time is
    not read here: the venv checks where jax imports from once installed (venv.release_origin_problem)."""
    declared = _declared_name(folder)
    if declared is not None and canonicalize_name(declared) in JAX_OWN:
        return f"the package is named {declared}"
    for top in (folder, folder / "src"):
        for name in sorted(JAX_OWN):
            if (top / name).is_dir() or (top / f"{name}.py").is_file():
                return f"it holds a module named {name} ({(top / name).relative_to(folder)})"
    return None


def _declared_name(folder: Path) -> str | None:
    """The distribution name pyproject.toml ([project] name) or setup.cfg ([metadata] name) declares."""
    try:
        name = tomllib.loads((folder / "pyproject.toml").read_text()).get("project", {}).get("name")
        if isinstance(name, str):
            return name
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError):
        pass  # no pyproject.toml, or one uv will refuse with its own words
    setup_cfg = configparser.ConfigParser(interpolation=None)
    try:
        setup_cfg.read(folder / "setup.cfg", encoding="utf-8")
        return setup_cfg.get("metadata", "name", fallback=None)
    except (configparser.Error, UnicodeDecodeError):
        return None


PACKAGE_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
# Not the package's content anywhere in it: version control and tools' folders, caches, build metadata.
_NOT_CONTENT = re.compile(r"^(\..*|__pycache__|node_modules|.*\.egg-info)$")
# Build outputs: at the package's root only (a subpackage may well be named `build` or `dist`).
_BUILD_OUTPUTS = frozenset({"build", "dist"})
# A folder holding one of these is no source of the package: a virtualenv, a tagged cache (CACHEDIR.TAG), a
# results folder or a reduction of this harness (`harness check train.py --with .` from the project writes
# results/ inside it; a --resume must not see its own results as an edit of the package).
_NOT_SOURCE_MARKERS = ("pyvenv.cfg", "CACHEDIR.TAG", "results.json", "reduce.json")


def editable_content(folder: Path) -> str:
    """Ten hex digits of an editable package's files (their paths and bytes; a linked file by what it links
    to), so that a sweep can tell that the code it measures changed between two invocations: what a build
    would install, not what tools and this harness keep beside it."""
    digest = hashlib.sha256()
    for path in sorted(_content_files(folder, top=True)):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError as exc:  # an unreadable file (a dangling link) is content the sweep cannot vouch for: named
            digest.update(f"unreadable: {exc.strerror}".encode())
        digest.update(b"\0")
    return digest.hexdigest()[:10]


def _content_files(folder: Path, top: bool = False) -> Iterable[Path]:
    for entry in folder.iterdir():
        if _NOT_CONTENT.match(entry.name) or (top and entry.name in _BUILD_OUTPUTS):
            continue
        if entry.is_dir():
            # A linked folder is not followed (it may hold the package itself); a linked file is content.
            if not entry.is_symlink() and not any((entry / marker).exists() for marker in _NOT_SOURCE_MARKERS):
                yield from _content_files(entry)
        elif entry.is_file() or entry.is_symlink():
            yield entry


def normalise(text: str) -> str:
    """One spelling per requirement: canonical name, sorted extras and specifiers (packaging's str)."""
    requirement = Requirement(text)
    requirement.name = canonicalize_name(requirement.name)
    return str(requirement)


def parse_requirements(strings: Iterable[object], where: str) -> Requirements:
    """Validate each string; UserError naming `where` and the bad string."""
    items = set()
    for number, value in enumerate(strings):
        if not isinstance(value, str) or not value.strip():
            raise UserError(f"{where}: item {number + 1} ({value!r}) is not a requirement string")
        try:
            item = normalise(value.strip())
        except InvalidRequirement as exc:
            # packaging's message is the reason, then the string with a caret: keep the reason.
            reason = (str(exc).splitlines() or ["invalid"])[0]
            raise UserError(f"{where}: {value!r} is not a valid requirement ({reason})") from None
        if Requirement(item).name in JAX_OWN:
            raise UserError(f"{where}: {value!r}: jax and jaxlib are pinned by the harness for each "
                            "release (choose them with --versions or jax_versions)")
        if Requirement(item).url:  # `name @ file:///...` would run its setup.py here; `@ https://` skips the date
            raise UserError(f"{where}: {value!r}: a direct reference (`name @ URL`) bypasses the package index "
                            "and the release's date; name the package and a version instead (your own "
                            "package: --with-editable PATH)")
        items.add(item)
    return Requirements(tuple(sorted(items)))


MAX_REQUIREMENTS_BYTES = 1 << 20  # 1 MiB: /dev/zero or a huge file is not a requirements file


def requirements_file_problem(path: Path) -> str | None:
    """None when `path` can be read as a requirements file, else what is wrong with it (for one line)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot read ({_one_line(exc)})"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size > MAX_REQUIREMENTS_BYTES:
        return f"larger than {MAX_REQUIREMENTS_BYTES >> 20} MiB: not a requirements file"
    return None


def read_requirements_file(path: Path, where: str) -> Requirements:
    """A requirements file as `pip -r` reads one: a requirement per line, `#` comments, `\\`
    continuations and `-r other.txt` includes (relative to the file). Other pip options (index URLs,
    `-e`, hashes) would change where packages come from, which the harness decides: refused."""
    return _read_requirements_file(Path(path), where, seen=(), editables=None)


def read_script_requirements_file(path: Path, where: str) -> tuple[Requirements, tuple[Path, ...]]:
    """A requirements file given for a script (`--requirements FILE`): as read_requirements_file, and
    `-e PATH` (or a line that is a folder's path) names the user's own package, as `--with-editable PATH`
    does (relative to the file, as pip reads it): (requirements, package folders)."""
    editables: list[Path] = []
    found = _read_requirements_file(Path(path), where, seen=(), editables=editables)
    return found, tuple(editables)


def split_script_requirements(strings: Iterable[str], where: str) -> tuple[Requirements, tuple[Path, ...]]:
    """`--with` strings: a folder's path (`.`, `./mypkg`, `~/src/mypkg`, as uv's `--with .`) is the user's
    own package, installed as `--with-editable PATH`; the rest are requirements. (requirements, folders)."""
    strings = tuple(strings)
    folders = tuple(package_folder(text, where) for text in strings if is_local_path(text))
    return parse_requirements([t for t in strings if not is_local_path(t)], where), folders


def is_local_path(text: object) -> bool:
    """Whether a requirement-like string is spelled as a local path (uv's and pip's rule: it starts
    with `.`, `/` or `~`, or has a `/` and is no URL or `name @ ...` reference). A bare name is a name."""
    if not isinstance(text, str):
        return False
    text = text.strip()
    return bool(text) and "://" not in text and "@" not in text and (text.startswith((".", "/", "~"))
                                                                      or "/" in text)


def _read_requirements_file(path: Path, where: str, seen: tuple[Path, ...],
                            editables: list[Path] | None) -> Requirements:
    if problem := requirements_file_problem(path):
        raise UserError(f"{where}: {path}: {problem}")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{where}: cannot read {path} ({_one_line(exc)})") from None
    found = Requirements()
    for number, line in _logical_lines(text):
        here = f"{where}: {path} line {number}"
        include = re.match(r"^(?:-r|--requirement)(?:\s+|=)(\S+)$", line)
        editable = re.match(r"^(?:-e|--editable)(?:\s+|=)(\S+)$", line)
        if include:
            target = (path.parent / include.group(1)).resolve()
            if target in seen or target == path.resolve():
                raise UserError(f"{here}: {include.group(1)} includes itself")
            found += _read_requirements_file(target, where, (*seen, path.resolve()), editables)
        elif editables is not None and (editable or is_local_path(line)):
            named = editable.group(1) if editable else line
            if not is_local_path(named) and not (path.parent / named).is_dir():
                raise UserError(f"{here}: -e {named}: only a local folder can be editable (your own package's "
                                "folder, as --with-editable PATH)")
            editables.append(package_folder(path.parent / Path(named).expanduser(), here))
        elif line.startswith("-"):
            raise UserError(f"{here}: pip option {line.split()[0]!r} is not supported (only requirements "
                            "and -r includes; packages come from the index as of each release: your own "
                            "package is --with-editable PATH, another index --index-url URL)")
        else:
            found += parse_requirements([line], here)
    return found


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    """(first line number, text) per requirement line, comments dropped and continuations joined."""
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()  # pip: a comment starts at '#' after a space
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = (pending + line).strip(), ""
        if line:
            yield start, line
    if pending.strip():
        yield start, pending.strip()


def script_metadata(text: str) -> dict[str, Any] | None:
    """The `script` block of PEP 723 inline metadata, as TOML data; None when the script has none.

    ValueError for two blocks, a block never closed, or TOML that does not parse."""
    blocks = [m for m in _BLOCK_RE.finditer(text) if m.group("type") == "script"]
    if len(blocks) > 1:
        raise ValueError("has more than one `# /// script` block")
    if not blocks:
        if _OPENING_RE.search(text):
            raise ValueError("opens a `# /// script` block that no `# ///` line closes")
        return None
    content = "".join(line[2:] if line.startswith("# ") else line[1:]
                      for line in blocks[0].group("content").splitlines(keepends=True))
    try:
        return tomllib.loads(content)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"has a `# /// script` block that is not valid TOML ({exc})") from None


def script_requirements(path: Path) -> Requirements:
    """The `dependencies` of a script's inline metadata (empty when it has none); UserError naming
    the script when the block or a string in it is malformed."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read ({_one_line(exc)})") from None
    where = f"{path}: inline script metadata"
    try:
        metadata = script_metadata(text)
    except ValueError as exc:
        raise UserError(f"{path}: {exc}") from None
    if metadata is None:
        return Requirements()
    dependencies = metadata.get("dependencies", [])
    if not isinstance(dependencies, list):
        raise UserError(f"{where}: dependencies must be a list of requirement strings")
    return parse_requirements(dependencies, f"{where} (dependencies)")


def unmet(requirements: Requirements, installed: dict[str, str], python_version: str) -> list[str]:
    """What an interpreter with `installed` (distribution name -> version) lacks, one phrase each.

    Markers are evaluated for that interpreter's Python; extras are not checked (their packages are
    ordinary requirements of the distribution, named by its metadata, not by the extra)."""
    versions: dict[str, str] = {canonicalize_name(name): version for name, version in installed.items()}
    environment = {"python_version": ".".join(python_version.split(".")[:2]),
                   "python_full_version": python_version, "extra": ""}
    missing = []
    for item in requirements.items:
        requirement = Requirement(item)
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        have = versions.get(requirement.name)
        if have is None:
            missing.append(f"{item} (not installed)")
            continue
        try:
            ok = requirement.specifier.contains(Version(have), prereleases=True)
        except InvalidVersion:
            ok = not requirement.specifier
        if not ok:
            missing.append(f"{item} (has {have})")
    return missing


def other_distributions(distributions: dict[str, str]) -> dict[str, str]:
    """Installed distributions besides JAX's own and the installer's, by canonical name, sorted."""
    named = {canonicalize_name(name): version for name, version in distributions.items()}
    return {name: named[name] for name in sorted(named) if not _INFRASTRUCTURE.match(name)}


def _one_line(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " ".join(lines) if lines else type(exc).__name__
