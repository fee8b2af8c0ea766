"""The checks made before a candidate runs (pure): `broken` says why it cannot run, or would never end."""

from __future__ import annotations

import ast
import functools
import warnings

from pyflakes import checker as flakes
from pyflakes import messages

from harness.reduce.raises import certain_error, endless_loops, new_endless_loop

# pyflakes' findings that make a run fail for certain once the code is reached.
_FATAL = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)


@functools.lru_cache(maxsize=4)
def _endless_loops_of(source: str) -> tuple[str, ...]:
    return tuple(endless_loops(ast.parse(source)))


def broken(source: str, made_from: str | None = None) -> str | None:
    """Why a candidate cannot run (it does not compile, uses a name it never defines, or misuses a value
    known before it runs), or would run until killed (a `while True` loop that `made_from`, the program it was
    made from, could leave and it cannot: harness/reduce/raises.py); None: try it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # `0()`: certain_error says so below
            tree = ast.parse(source)
            compile(tree, "<candidate>", "exec")
    except (SyntaxError, ValueError) as exc:
        return f"does not compile ({exc.__class__.__name__})"
    found = [m for m in flakes.Checker(tree).messages if isinstance(m, _FATAL)]
    if found:
        return f"pyflakes: {found[0].message % found[0].message_args}"
    error = certain_error(tree)
    if error:
        return f"raises when it runs: {error}"
    loop = new_endless_loop(_endless_loops_of(made_from), tree) if made_from is not None else None
    return f"never ends when it runs: {loop}, nothing but an exception leaves it" if loop else None


