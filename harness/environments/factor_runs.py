"""The host side of a factor's run: the folders it changes to, made before it starts (the cache folder's
copy, the script's copy, another working or home folder), and what it changes, in words.

What only a backend can change (the user, the host name, the variables' order, the prefix, zstandard)
is passed on to it as a `RunVariation`; each backend says which factors it cannot vary
(`Environment.cannot_vary`), so a factor is never passed silently.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.core.records import replace
from harness.core.files import holds_harness_results, remove_path
from harness.core.factors import OTHER_HOSTNAME, OTHER_TZ, OTHER_UID, Factor, RunVariation
from harness.core.runs import Program

# A script's folder (or a module's working folder) is copied for script-path only up to this size: a
# project folder with a dataset is not one to copy for every cell.
MAX_COPY_FILES = 5_000
MAX_COPY_BYTES = 512 << 20
_NOT_COPIED_NAMES = frozenset({".git", "__pycache__", ".venv"})
# A folder holding this is an environment (a venv): never part of what a script is; nor is a folder the harness
# wrote results into (holds_harness_results: earlier sweeps' too, and one inside the script's folder holds the copy).
_VENV_MARKER = "pyvenv.cfg"


@dataclass(frozen=True)
class FactorRun:
    """One factor's run as the runner starts it."""

    program: Program
    cache_dir: Path  # the folder the run writes to (a copy for cache-path), listed before and after
    variation: RunVariation
    change: str  # in words, for the report ("the cache folder copied to /x/y")


class CannotVary(Exception):
    """This factor cannot be varied for this run (the reason is the message)."""


def other_locale(env: dict[str, str]) -> str:
    """A locale other than the reference run's (LC_ALL over LANG), present on every glibc system."""
    current = env.get("LC_ALL") or env.get("LANG") or ""
    return "POSIX" if current.replace("utf8", "UTF-8") == "C.UTF-8" else "C.UTF-8"


def _not_copied(folder: Path, target: Path, never: tuple[Path, ...]) -> bool:
    """Whether `folder` (inside the folder being copied) stays out of the copy: the harness's own folders
    (`never`: the results folder, the cache folder), one that holds the copy's target (copying it would
    copy the copy, until `File name too long`), an environment or a results folder."""
    if folder.name in _NOT_COPIED_NAMES:
        return True
    if folder.is_symlink():  # copied as the link it is: nothing under it is copied
        return False
    resolved = folder.resolve()
    if resolved in never or target.resolve().is_relative_to(resolved):
        return True
    return (folder / _VENV_MARKER).exists() or holds_harness_results(folder)


def _size(folder: Path, target: Path, never: tuple[Path, ...]) -> tuple[int, int]:
    files = size = 0
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not _not_copied(Path(root) / d, target, never)]
        files += len(names)
        size += sum((Path(root) / n).lstat().st_size for n in names)
        if files > MAX_COPY_FILES or size > MAX_COPY_BYTES:
            break
    return files, size


def _copy_folder(source: Path, target: Path, never: tuple[Path, ...]) -> Path:
    never = tuple(p.resolve() for p in never)
    files, size = _size(source, target, never)
    if files > MAX_COPY_FILES or size > MAX_COPY_BYTES:
        raise CannotVary(f"{source} is too large to copy for every cell (more than {MAX_COPY_FILES} files "
                         f"or {MAX_COPY_BYTES >> 20} MiB)")

    def ignored(root: str, names: list[str]) -> set[str]:
        return {n for n in names if n.endswith(".pyc")
                or (os.path.isdir(os.path.join(root, n)) and _not_copied(Path(root) / n, target, never))}

    remove_path(target)
    shutil.copytree(source, target, symlinks=True, ignore=ignored)
    return target


def prepare(factor: Factor, program: Program, cache_dir: Path, work: Path,
            reference_env: dict[str, str], never_copy: tuple[Path, ...] = ()) -> FactorRun:
    """The run of `factor`, its host folders made under `work` (a folder of its own). `reference_env`:
    the variables the reference run's process had (the locale and time zone are changed away from
    them). `never_copy`: the harness's folders (the results folder) a script-path copy leaves out, as it
    leaves out `work`, the cache folder, environments and results folders. CannotVary when the change
    cannot be made for this program."""
    never_copy = (*never_copy, cache_dir, work)
    remove_path(work)
    work.mkdir(parents=True)
    variation = RunVariation(factor)
    if factor == Factor.CACHE_PATH:
        copy = work / "cache"
        shutil.copytree(cache_dir, copy, symlinks=True)
        return FactorRun(program, copy, variation,
                         f"the cache folder copied to {copy}")
    if factor == Factor.CWD:
        if program.module is not None:
            raise CannotVary("python -m finds the module in its working folder: vary script-path instead")
        elsewhere = work / "cwd"
        elsewhere.mkdir()
        return FactorRun(replace(program, cwd=elsewhere), cache_dir, variation,
                         f"the run starts in {elsewhere} instead of {program.workdir}")
    if factor == Factor.SCRIPT_PATH:
        return _moved_script(program, cache_dir, variation, work, never_copy)
    if factor == Factor.HOME:
        home = work / "home"
        home.mkdir()
        return FactorRun(program, cache_dir, replace(variation, env={"HOME": str(home)}),
                         f"HOME={home}")
    if factor == Factor.USER:
        return FactorRun(program, cache_dir, replace(variation, uid=OTHER_UID), f"run as uid {OTHER_UID}")
    if factor == Factor.HOSTNAME:
        return FactorRun(program, cache_dir, replace(variation, hostname=OTHER_HOSTNAME),
                         f"host name {OTHER_HOSTNAME}")
    if factor == Factor.ENV_ORDER:
        return FactorRun(program, cache_dir, replace(variation, reverse_env=True),
                         "the same variables in the reverse order")
    if factor == Factor.TZ:
        return FactorRun(program, cache_dir, replace(variation, env={"TZ": OTHER_TZ}), f"TZ={OTHER_TZ}")
    if factor == Factor.LOCALE:
        locale = other_locale(reference_env)
        return FactorRun(program, cache_dir, replace(variation, env={"LC_ALL": locale, "LANG": locale}),
                         f"LC_ALL={locale} LANG={locale}")
    if factor == Factor.PREFIX:
        return FactorRun(program, cache_dir, replace(variation, other_prefix=True),
                         "the environment's packages copied to another path")
    if factor == Factor.COMPRESSION:
        return FactorRun(program, cache_dir, variation, "zstandard importable if it was not, hidden if it was")
    raise AssertionError(factor)


def _moved_script(program: Program, cache_dir: Path, variation: RunVariation, work: Path,
                  never_copy: tuple[Path, ...]) -> FactorRun:
    """--vary script-path: the script's folder (or a module's working folder) copied under `work`."""
    if program.module is not None:  # the module's package is found in its working folder: copy that
        copy = _copy_folder(program.workdir, work / "script" / program.workdir.name, never_copy)
        return FactorRun(replace(program, cwd=copy), cache_dir, variation,
                         f"the module's folder copied to {copy}")
    assert program.script is not None
    folder = _copy_folder(program.script.parent, work / "script" / program.script.parent.name,
                          never_copy)
    moved = replace(program, script=folder / program.script.name)
    if program.cwd is not None and program.cwd.resolve() == program.script.parent.resolve():
        moved = replace(moved, cwd=folder)
    return FactorRun(moved, cache_dir, variation,
                     f"the script's folder copied to {folder}")


def open_to_all(*folders: Path) -> None:
    """Another user's run must read and write the cell's folders (the cache's entries, the IR dump, the
    hook's record): made so, as the harness's own folders."""
    for folder in folders:
        if not folder.exists():
            continue
        for root, dirs, files in os.walk(folder):
            os.chmod(root, 0o777)
            for name in files:
                os.chmod(Path(root) / name, 0o666)


def unreachable_by_others(path: Path) -> str:
    """Why a user other than the owner cannot reach `path` (a folder on the way without x for others,
    or the file without r), or ""."""
    path = path.absolute()
    for folder in [*reversed(path.parents), path] if path.is_dir() else [*reversed(path.parents)]:
        mode = folder.stat().st_mode
        if not mode & 0o001:
            return f"{folder} is not reachable by another user (mode {mode & 0o777:o})"
    if path.is_file() and not path.stat().st_mode & 0o004:
        return f"{path} is not readable by another user"
    return ""
