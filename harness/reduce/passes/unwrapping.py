"""`unwrappings`: a compound statement replaced by its body (pure)."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from harness.reduce.passes.syntax import Place, _blocks, _emit, _skipped

_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try)


def unwrappings(source: str, resume_at: Place | None = None) -> Iterator[tuple[Place, str]]:
    """The program with one compound statement replaced by its body (the else part dropped)."""
    tree = ast.parse(source)
    blocks = _blocks(tree)
    places = [(b, i) for b, block in enumerate(blocks) for i, s in enumerate(block) if isinstance(s, _COMPOUND)]
    for number, index in places:
        if _skipped((number, index), resume_at):
            continue
        copies: dict[int, object] = {}
        copied = copy.deepcopy(tree, copies)
        block = copies[id(blocks[number])]
        assert isinstance(block, list)
        block[index:index + 1] = block[index].body
        text = _emit(copied)
        if text and text != source:
            yield (number, index), text

