"""`--shard I/N` (pure): which of a sweep's planned cells one machine measures.

Cells are dealt round-robin over the planned order (versions x meshes), so each shard gets a mix of
old and new releases and shards finish at about the same time. Every machine plans the same cells
from the same config and versions, so the shards are disjoint and together cover the sweep.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import TypeVar
from collections.abc import Sequence

T = TypeVar("T")
_SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as Slurm's and a CI matrix's numbering reads
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def select(self, items: Sequence[T]) -> list[T]:
        return list(items[self.index - 1::self.count])


def parse_shard(text: str) -> Shard:
    """`I/N` with 1 <= I <= N; argparse type (its error is one line naming the option)."""
    match = _SHARD_RE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N (e.g. 2/4)")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"{text!r}: need 1 <= I <= N")
    return Shard(index, count)
