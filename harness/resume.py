"""Resume an interrupted sweep in its own results folder (pure): is it the same sweep, and which of
its cells still need measuring. A cell cut short by Ctrl-C is measured again from scratch."""

from __future__ import annotations

from typing import Any

from harness.errors import UserError
from harness.model import CellResult, CellSpec

# What must match for old and new cells to belong in one table: the same measurement.
SAME_OPTIONS = ("runs", "seeds", "all_runs")


def _config_without_source(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != "source"}  # the file may have moved


def check_same_sweep(previous: dict[str, Any], header: dict[str, Any], where: str) -> None:
    """UserError naming the first thing that differs between the folder's sweep and this one."""
    old, new = _config_without_source(previous.get("config") or {}), _config_without_source(header["config"])
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            raise UserError(f"--resume {where}: config.{key} differs ({old.get(key)!r} there, "
                            f"{new.get(key)!r} now): resume with the config that made it")
    if previous.get("versions") != header["versions"]:
        raise UserError(f"--resume {where}: versions differ ({', '.join(previous.get('versions') or [])} "
                        f"there, {', '.join(header['versions'])} now): pass --versions "
                        f"{' '.join(previous.get('versions') or [])}")
    old_options, new_options = previous.get("options") or {}, header["options"]
    for key in SAME_OPTIONS:
        if old_options.get(key) != new_options.get(key):
            raise UserError(f"--resume {where}: option {key} differs ({old_options.get(key)!r} there, "
                            f"{new_options.get(key)!r} now)")
    if (previous.get("shard") or {}).get("cells") != (header.get("shard") or {}).get("cells"):
        raise UserError(f"--resume {where}: it measured another shard (pass the same --shard)")


def finished_cells(cells: list[CellResult]) -> list[CellResult]:
    """The cells a resume keeps: all but one cut short by Ctrl-C."""
    return [c for c in cells if not c.extra.get("interrupted")]


def still_to_measure(planned: list[CellSpec], kept: list[CellResult]) -> list[CellSpec]:
    done = {c.spec.key for c in kept}
    return [spec for spec in planned if spec.key not in done]
