"""Resume an interrupted sweep in its own results folder (pure): is it the same sweep (`SweepIdentity`),
and which of its cells still need measuring. A cell cut short by Ctrl-C is measured again from scratch."""

from __future__ import annotations

from harness.core.errors import UserError
from harness.results.header import ResultsHeader
from harness.results.identity import SweepIdentity
from harness.core.model import CellResult, CellSpec


def check_same_sweep(previous: ResultsHeader, header: ResultsHeader, where: str) -> None:
    """UserError naming the first thing that differs between the folder's sweep and this one."""
    old, new = SweepIdentity.of(previous), SweepIdentity.of(header)
    for name in old.differences(new):
        if name.startswith("config."):
            key = name.removeprefix("config.")
            raise UserError(f"--resume {where}: config.{key} differs ({old.config.get(key)!r} there, "
                            f"{new.config.get(key)!r} now): resume with the config that made it")
        if name == "versions":
            raise UserError(f"--resume {where}: versions differ ({', '.join(old.versions)} there, "
                            f"{', '.join(new.versions)} now): pass --versions {' '.join(old.versions)}")
        if name in _SOURCE_FLAGS:
            flag = _SOURCE_FLAGS[name]
            raise UserError(f"--resume {where}: {flag} differs ({old.describe(name)} there, {new.describe(name)} "
                            f"now): resume with the sources that made it, or measure anew in another folder")
        raise UserError(f"--resume {where}: option {name} differs ({getattr(old, name)!r} there, "
                        f"{getattr(new, name)!r} now)")
    # Not in SweepIdentity, whose fields key every recorded bisection's state; a check's cells with and without
    # the moved folder's run would still read as one table.
    if previous.options.moved_folder != header.options.moved_folder:
        said = {True: "made", False: "not made (--no-moved-folder)", None: "not recorded"}
        raise UserError(f"--resume {where}: the moved folder's run differs ({said[previous.options.moved_folder]} "
                        f"there, {said[header.options.moved_folder]} now): resume with the options that made it")
    if (previous.shard.cells if previous.shard else None) != (header.shard.cells if header.shard else None):
        raise UserError(f"--resume {where}: it measured another shard (pass the same --shard)")


# The identity's sources as the user gives them (harness/inputs/options.py).
_SOURCE_FLAGS = {"index_url": "--index-url", "extra_index_urls": "--extra-index-url",
                 "editables": "--with-editable"}


def finished_cells(cells: list[CellResult]) -> list[CellResult]:
    """The cells a resume keeps: all but one cut short by Ctrl-C."""
    return [c for c in cells if not c.interrupted]


def still_to_measure(planned: list[CellSpec], kept: list[CellResult]) -> list[CellSpec]:
    measured = {c.spec.key for c in kept}
    return [spec for spec in planned if spec.key not in measured]
