"""What a reduction's report says of plain JAX (pure): the libraries the original imported beyond JAX, NumPy and
Python's own, the pass that took each out, and for a call left, why it stayed."""

from __future__ import annotations

import ast

from harness.reduce.passes import library_calls, library_packages
from harness.results.reduce_results import Plain


def plain_jax_said(original: str, reduced: str, taken_out_by: dict[str, str],
                   not_spelled: dict[str, str] | None = None, lost_alone: dict[str, str] | None = None) -> Plain | None:
    """What the report says of plain JAX: the original's libraries, the pass that took each out, the calls left, and
    for those, what the traced pass could not write and which function's body alone lost the signature (of the
    functions the reduced program still defines)."""
    libraries = library_packages(original)
    if not libraries:
        return None
    still = libraries & library_packages(reduced)
    defined = {n.name for n in ast.walk(ast.parse(reduced)) if isinstance(n, ast.FunctionDef)} if still else set()
    return Plain(tuple(sorted(libraries)), {p: taken_out_by[p] for p in sorted(libraries - still) if p in taken_out_by},
                 tuple(library_calls(reduced)), tuple(sorted(still)),
                 {f: why for f, why in sorted((not_spelled or {}).items()) if f in defined},
                 {f: why for f, why in sorted((lost_alone or {}).items()) if f in defined})
