"""The evidence for a reproduced cell: a later run's new key against its counterpart in the first run, the
two lowered modules diffed.

Pure: texts in, texts out. Where the texts come from (run logs, IR dump folders) is in `sources.py`.
"""

from __future__ import annotations

import difflib
import enum
import re
from dataclasses import dataclass

from harness.core import markdown as md
from harness.core.ir_lines import condense, elided_constants
from harness.evidence.keys import cell_comparison, counted
from harness.verdicts.factor_verdicts import by_factors_only
from harness.core.ir_names import extract_lowered  # noqa: F401 (read from here by the report's tests)
from harness.core.kinds import Cause, Verdict
from harness.core.model import CellResult
from harness.core.runs import RunRecord

_LOC_DEFINITION_RE = re.compile(r"^#loc\d*\s*=")
# The entry point's parameters, and each one's type: `@main(%arg0: tensor<8x3xf32> {...}, ...)`.
_MAIN = "func.func public @main("
_ARG_TYPE_RE = re.compile(r"%arg\d+: ([^\s,{)]+)")


def strip_locations(mlir: str) -> str:
    """Drop debug locations (`loc(...)` and `#locN = ...` lines): IR dumps carry them, and they repeat
    every difference (and name source files), which hides the one line a JAX developer needs."""
    out = []
    for line in _lines(mlir):
        if _LOC_DEFINITION_RE.match(line.strip()):
            continue
        out.append(_drop_inline_locs(line))
    return "\n".join(out) + "\n"


def _lines(text: str) -> list[str]:
    """A module's lines, split on "\n" alone (a trailing newline makes no empty last line)."""
    lines = text.split("\n")
    return lines[:-1] if lines and not lines[-1] else lines


def _drop_inline_locs(line: str) -> str:
    # `loc(...)` may hold quoted strings with parentheses in them: scan, don't regex.
    result, i = [], 0
    while True:
        j = line.find(" loc(", i)
        if j < 0:
            result.append(line[i:])
            return "".join(result)
        result.append(line[i:j])
        k, depth, quoted = j + len(" loc("), 1, False
        while k < len(line) and depth:
            c = line[k]
            if quoted:
                if c == "\\":
                    k += 1
                elif c == '"':
                    quoted = False
            elif c == '"':
                quoted = True
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            k += 1
        i = k


def moved_module(cell: CellResult) -> str | None:
    """The module a later run computed a new key for (the one with the most new keys), None if none did."""
    return cell_comparison(cell).moved_module()


def arguments(text: str) -> str:
    """The argument types of a lowered module's entry point (`tensor<8x3xf32>, tensor<f32>`): which
    of a function's compilations (shapes) a module text is."""
    params = _main_params(text)
    return ", ".join(_ARG_TYPE_RE.findall(params)) if params is not None else ""


def _main_params(text: str) -> str | None:
    """What lies between `@main(` and the first `)` that `->` follows (spaces between): found with `str.find`,
    one pass (a lazy pattern retried from every start is quadratic in a module of megabytes)."""
    start = text.find(_MAIN)
    if start < 0:
        return None
    start += len(_MAIN)
    close = start
    while (close := text.find(")", close)) >= 0:
        after = close + 1
        while after < len(text) and text[after].isspace():
            after += 1
        if text.startswith("->", after):
            return text[start:close]
        close = after
    return None


def _similarity(a: str, b: str) -> float:
    # The lines the two share, as multisets: one pass over each (a full matching is quadratic in repeated lines).
    return difflib.SequenceMatcher(None, _lines(a), _lines(b), autojunk=False).quick_ratio()


def counterpart(new_text: str, first_texts: list[str], later_texts: list[str]) -> str:
    """Which of the first run's compilations of a module a later run's new one is the same computation
    as: among those the later run did not compute again, the one with the same argument types, else the
    closest text."""
    again = {strip_locations(t) for t in later_texts}
    candidates = [t for t in first_texts if strip_locations(t) not in again] or first_texts
    same_shape = [t for t in candidates if arguments(t) == arguments(new_text)]
    stripped = strip_locations(new_text)
    return max(same_shape or candidates, key=lambda t: _similarity(strip_locations(t), stripped))


def new_texts(texts: list[str], earlier: list[str]) -> list[str]:
    """The compilations in `texts` that none in `earlier` equals (debug locations aside)."""
    seen = {strip_locations(t) for t in earlier}
    return [t for t in texts if strip_locations(t) not in seen]


@dataclass(frozen=True)
class Seeds:
    """Hash seeds of the first run and of each later run that computed a new key, and what told: "key"
    (runs one at a time: each run's new entries are its own) or "lowered module" (overlapping runs,
    told apart by the modules they compiled). Empty when nothing told a later run apart."""

    values: list[int]
    basis: str


def key_seeds(cell: CellResult, module: str) -> Seeds:
    """The first run's seed and each later run's that computed a new `module` key, from the runs' keys."""
    comparison = cell_comparison(cell)
    later = set(comparison.runs_with_new(module))
    values = [r.seed for r in counted(cell.runs) if r.index == comparison.baseline_run or r.index in later]
    return _seeds(values, "key")


def module_seeds(texts: list[tuple[RunRecord, list[str]]]) -> Seeds:
    """The first run's seed and each later run's that compiled a module no earlier run did: with
    overlapping runs this, not `new_entries`, says which runs brought a new key. `texts` in run order."""
    values: list[int] = []
    seen: set[str] = set()  # the earlier runs' modules, each stripped once
    for number, (run, compiled) in enumerate(texts):
        stripped = [strip_locations(t) for t in compiled]
        if number == 0 or any(t not in seen for t in stripped):
            values.append(run.seed)
        seen.update(stripped)
    return _seeds(values, "lowered module")


def _seeds(values: list[int], basis: str) -> Seeds:
    return Seeds(values if len(values) > 1 else [], basis)  # the first run alone shows nothing


# A token of a module line: a name or number (with the dots, % and # MLIR puts in them), or one other character.
_TOKEN_RE = re.compile(r"[\w.%#@$]+|\S")
# An SSA value's name in a lowered module (`%cst_0`, `%2`, `%arg0`): its number is its place, not its value.
_SSA_NAME_RE = re.compile(r"^%[\w.#]*$")
# What changes every run when an object's address or id() is printed into a module.
_ADDRESS_RE = re.compile(r"^(?:0x[0-9a-fA-F]{6,}|\d{8,})$")


def _removed_added(diff_lines: list[str]) -> tuple[list[str], list[str]]:
    removed = [line[1:] for line in diff_lines if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in diff_lines if line.startswith("+") and not line.startswith("+++")]
    return removed, added


def likely_cause(diff_lines: list[str]) -> Cause | None:
    """`order` when the differing lines hold the same tokens in another order (a set iterated into the
    module: its order follows PYTHONHASHSEED), also when what else differs is only the sharding attributes
    that follow from the reordered names (names in another order, `mhlo.sharding` rewritten to match);
    `constant` when only constants differ (random data or a static argument's value baked in: what report.md's
    "What differs" and the per-test line say of it); `address` when what differs is a hex address or a large
    integer (an object's address or id() printed into the module), else `unknown` (the tool cannot tell); None for no diff.

    One rule on every release (issue 47.5): SSA value names (`%cst_0`, `%2`) are numbered by their place in
    the module, not by their value, so a reordering that also renumbers them is still told as `order`:
    the differing lines' tokens are compared as a multiset, then again without SSA names."""
    removed, added = _removed_added(diff_lines)
    if not removed and not added:
        return None
    tokens_a = [_TOKEN_RE.findall(line) for line in removed]
    tokens_b = [_TOKEN_RE.findall(line) for line in added]
    if sorted(t for line in tokens_a for t in line) == sorted(t for line in tokens_b for t in line):
        return Cause.ORDER
    values_a = [t for line in tokens_a for t in line if not _SSA_NAME_RE.match(t)]
    values_b = [t for line in tokens_b for t in line if not _SSA_NAME_RE.match(t)]
    if values_a != values_b and sorted(values_a) == sorted(values_b):
        return Cause.ORDER
    if _reordered_apart_from_shardings(removed, added):
        return Cause.ORDER
    if all(_CONSTANT_RE.search(line) for line in (*removed, *added)):
        return Cause.CONSTANT
    changed = set()
    for a, b in zip(tokens_a, tokens_b):
        changed.update(_changed_tokens(a, b))
    if changed and len(removed) == len(added) and all(_ADDRESS_RE.match(t) for t in changed):
        return Cause.ADDRESS
    return Cause.UNKNOWN


MAX_MATCHED_TOKENS = 2000  # past this, the tokens between a line pair's common start and end all count as changed


def _changed_tokens(a: list[str], b: list[str]) -> list[str]:
    """The tokens that differ between two versions of a line: past their common start and end, matched token by
    token where what is left is short (the matching is quadratic), else all of what is left."""
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end = 0
    while end < len(a) - start and end < len(b) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[start:len(a) - end], b[start:len(b) - end]
    if len(a) + len(b) > MAX_MATCHED_TOKENS:
        return a + b
    changed: list[str] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            changed += a[i1:i2] + b[j1:j2]
    return changed


# A sharding attribute's value: it is derived from the mesh axes' order, so it moves with a reordering of names.
_SHARDING_RE = re.compile(r'(?:mhlo|sdy)\.sharding\w*\s*=\s*(?:"(?:[^"\\]|\\.)*"|#sdy\.\w+<[^>]*>)')


def _reordered_apart_from_shardings(removed: list[str], added: list[str]) -> bool:
    """With every sharding attribute's value taken out, the differing lines hold the same tokens in another
    order (and some did move: lines that differ only in their shardings are not a reordering)."""
    def tokens(lines: list[str]) -> list[list[str]]:
        return [_TOKEN_RE.findall(_SHARDING_RE.sub("sharding", line)) for line in lines]
    a, b = tokens(removed), tokens(added)
    if not any(_SHARDING_RE.search(line) for line in removed + added):
        return False
    flat_a, flat_b = [t for line in a for t in line], [t for line in b for t in line]
    return flat_a != flat_b and sorted(flat_a) == sorted(flat_b)


CAUSE_WORDS = {
    Cause.ORDER: "the differing lines hold the same tokens in another order (with the shardings that follow from "
                 "it): an unordered collection (a set, whose iteration order follows PYTHONHASHSEED) is iterated "
                 "into the module",
    Cause.ADDRESS: "what differs is a hex address or a large integer that changes every run: an object's "
                   "address or id() is printed into the module",
    Cause.CONSTANT: "only constants differ: the same computation with other values baked in (random data, a static "
                    "argument's value, a clock); seed the generator that makes them, or pass them as arguments",
    Cause.UNKNOWN: "the differing lines are neither a reordering nor an address: the tool cannot tell; read the diff",
    Cause.OTHER: "the differing lines are neither a reordering nor an address: read the diff",  # an older folder's
}


_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
MAX_ATTRIBUTE_NAME = 200  # a name longer than this is no attribute's (a constant's bytes before ` = "`)


def quoted_attributes(line: str) -> list[tuple[str, str]]:
    """The `name = "value"` attributes of one MLIR line (jax.result_info, mhlo.sharding, ...), in order: found
    by `str.find` of ` = "`, each name read backwards and each value forwards once (a pattern that tries every
    start of a megabyte of name characters is quadratic)."""
    found: list[tuple[str, str]] = []
    i = 0
    while (j := line.find(' = "', i)) >= 0:
        k = j
        while k > 0 and j - k <= MAX_ATTRIBUTE_NAME and (line[k - 1].isalnum() or line[k - 1] in "_."):
            k -= 1
        while k < j and line[k] not in _NAME_START:  # a name starts with a letter or `_`
            k += 1
        value_start = end = j + len(' = "')
        while (end := line.find('"', end)) >= 0:
            backslashes = 0
            while line[end - 1 - backslashes] == "\\":
                backslashes += 1
            if backslashes % 2 == 0:
                break
            end += 1
        if end < 0:
            break  # no closing quote: no attribute from here on
        if k < j and j - k <= MAX_ATTRIBUTE_NAME:
            found.append((line[k:j], line[value_start:end]))
            i = end + 1
        else:
            i = j + 1
    return found


def changed_attributes(diff_lines: list[str]) -> list[tuple[str, str, str]]:
    """(attribute, before, after) for quoted attributes whose value differs between the removed and
    the added lines of a diff: the one-line explanation (for the seed, `jax.result_info`)."""
    removed, added = _removed_added(diff_lines)
    found: list[tuple[str, str, str]] = []
    for old, new in zip(removed, added):
        if old == new:
            continue
        before, after = quoted_attributes(old), quoted_attributes(new)
        if len(before) != len(after):
            continue
        for (name_a, value_a), (name_b, value_b) in zip(before, after):
            change = (name_a, value_a, value_b)
            if name_a == name_b and value_a != value_b and change not in found:
                found.append(change)
    return found


@dataclass(frozen=True)
class Evidence:
    """A later run's new key of one module against its counterpart in the first run: the same
    computation (same argument types, or the closest module text), never two keys of one run."""

    module: str
    run_a: RunRecord  # the first run, whose keys are the baseline
    run_b: RunRecord  # a later run that computed a key the first run did not
    key_a: str | None  # the first run's counterpart key, when known (its only key of the module)
    key_b: str | None  # the later run's new key, when known (runs one at a time, one new key)
    diff: list[str]  # unified diff lines (no trailing newlines); empty when the modules are identical
    attributes: list[tuple[str, str, str]]
    note: str = ""  # why there is no diff, when there is none
    arguments: str = ""  # the new module's argument types, when the function was compiled at several
    test: str = ""  # the test that compiled both (paired by test and argument types: report/sources.py)
    ranks: tuple[int, int] | None = None  # two processes of one run (a job): run_a and run_b are that run

    @property
    def identical(self) -> bool:
        return not self.diff

    @property
    def cause(self) -> Cause | None:
        return likely_cause(self.diff)


def cause_of(evidence: Evidence | MissingEvidence | None) -> Cause | None:
    """A cell's likely cause: its evidence's, when that is a module diff."""
    return evidence.cause if isinstance(evidence, Evidence) else None


@dataclass(frozen=True)
class MissingEvidence:
    """A reproduced cell whose modules could not be compared, and why (said in the report)."""

    module: str | None
    why: str
    types: str = ""  # the argument types of the later run's key it is about, when paired by them (JAX's words)
    test: str = ""  # and the test that compiled it


def _condensed_lines(text: str) -> list[str]:
    """A module's lines as they are diffed: without debug locations, a long constant as its size and digest."""
    return _lines(condense(strip_locations(text)))


def compare_runs(module: str, run_a: RunRecord, run_b: RunRecord, text_a: str, text_b: str,
                 key_a: str | None = None, key_b: str | None = None, several: bool = False,
                 types: str = "", test: str = "") -> Evidence:
    """`text_b`: run_b's new compilation of `module`; `text_a`: its counterpart in the first run.
    `several`: the module was compiled more than once per run, so the labels name the argument types (`types`, as
    JAX names them, where the keys were paired by them; else the entry point's); `test`: the test that compiled both."""
    a, b = _condensed_lines(text_a), _condensed_lines(text_b)
    shapes = (types or arguments(text_b)) if several else ""

    def label(run: RunRecord, key: str | None) -> str:
        facts = [f"PYTHONHASHSEED={run.seed}"] + ([short_key(key)] if key else []) + \
            ([f"{module}({shapes})"] if shapes else [])
        return f"run {run.index} ({', '.join(facts)})"
    # No context lines: the changed lines alone are the evidence; the rest is the same module.
    diff = list(difflib.unified_diff(a, b, label(run_a, key_a), label(run_b, key_b), n=0, lineterm=""))
    note = "" if diff else ("the lowered modules are identical: the key difference comes from "
                            "something else hashed into the key (compile options, devices, backend)")
    return Evidence(module, run_a, run_b, key_a, key_b, diff, changed_attributes(diff), note, shapes, test)


def compare_ranks(module: str, run: RunRecord, ranks: tuple[int, int], seeds: tuple[int, int], text_a: str,
                  text_b: str, keys: tuple[str, str]) -> Evidence:
    """Two processes of one run (a job) lowered `module` each their own way: their modules' diff."""
    a, b = _condensed_lines(text_a), _condensed_lines(text_b)
    labels = [f"run {run.index}, process {rank} (PYTHONHASHSEED={seed}, {short_key(key)})"
              for rank, seed, key in zip(ranks, seeds, keys)]
    diff = list(difflib.unified_diff(a, b, labels[0], labels[1], n=0, lineterm=""))
    note = "" if diff else ("the lowered modules are identical: the keys differ through something else hashed "
                            "into them (compile options, devices)")
    return Evidence(module, run, run, keys[0], keys[1], diff, changed_attributes(diff), note, ranks=ranks)


# Ops that move data between devices: where one differs between two processes, what each sends and waits for differs.
_COLLECTIVE_RE = re.compile(r"\b(?:all_reduce|all_gather|reduce_scatter|all_to_all|collective_permute|"
                            r"collective_broadcast|send|recv)\b|\breplica_groups\b|\bsource_target_pairs\b")
_CONSTANT_RE = re.compile(r"\b(?:stablehlo|mhlo|arith)\.constant\b")


class ProgramsDiffer(enum.StrEnum):
    """How the lowered modules of two processes of one job differ, read from their diff."""

    COLLECTIVES = "collectives"  # a collective's line differs: the processes' collectives do not match
    CONSTANTS = "constants"  # only constants differ: the same collectives, other values
    OTHER = "other"  # other lines, no collective among them


def programs_differ(diff_lines: list[str]) -> ProgramsDiffer | None:
    """What differs between two processes' lowered modules; None for no diff (the keys differ elsewhere)."""
    removed, added = _removed_added(diff_lines)
    changed = removed + added
    if not changed:
        return None
    if any(_COLLECTIVE_RE.search(line) for line in changed):
        return ProgramsDiffer.COLLECTIVES
    if all(_CONSTANT_RE.search(line) for line in changed):
        return ProgramsDiffer.CONSTANTS
    return ProgramsDiffer.OTHER


def _result_types(main_line: str) -> str:
    """The types of a lowered module's results: `-> (tensor<3xf32> {jax.result_info = ""}, tensor<f32>)` on @main's
    line; each `tensor<...>` found with `str.find` (one pass)."""
    _, arrow, results = main_line.partition(") ->")
    found, i = [], 0
    while arrow and (i := results.find("tensor<", i)) >= 0 and (end := results.find(">", i)) >= 0:
        found.append(results[i:end + 1])
        i = end + 1
    return ", ".join(found)


def what_differs(evidence: Evidence) -> str:
    """In words (Markdown), how a later run's lowered module differs from the first run's (a moved key's line in
    report.md): its entry point's result types, only constants, a reordering, an address, or lines to read."""
    if not evidence.diff:
        return md.text(evidence.note)
    removed, added = _removed_added(evidence.diff)
    mains = [_result_types(line) for line in (*removed, *added) if "@main(" in line]
    if len(mains) == 2 and mains[0] != mains[1]:
        return (f"the results' types differ ({md.code(mains[0])} -> {md.code(mains[1])}): a value the function is specialised on (a "
                "static argument, a size drawn at random) changed the shapes inside: the program computed something "
                "new at the same argument types")
    cause = evidence.cause
    if cause == Cause.CONSTANT:  # a reordering of constants is `order` (likely_cause), and reads so here too
        elided = [_constants_words(a, b) for a, b in zip(removed, added)]
        if any(elided):
            return md.text(f"{'; '.join(e for e in elided if e)}: the same computation with other values baked in "
                           "(random data, a static argument's value, a clock)")
        return ("only constants differ: the same computation with other values baked in (random data, a static "
                "argument's value, a clock)")
    return md.text(CAUSE_WORDS[cause] if cause is not None else evidence.note)


def _constants_words(before: str, after: str) -> str:
    """`a 1.5 MiB constant differs (#sha256_… -> #sha256_…)` for each long constant that differs between two
    versions of a line ("" for none): such a constant is compared by its size and digest, never character by
    character."""
    pairs = zip(elided_constants(before), elided_constants(after))
    return "; ".join(f"a {size_b} constant differs (#sha256_{digest_a} -> #sha256_{digest_b})"
                     for (_, digest_a), (size_b, digest_b) in pairs if digest_a != digest_b)


def short_key(key: str, digits: int = 12) -> str:
    """`jit_f-<first digits>…` for prose and headings; full keys stay in the listings."""
    module, _, digest = key.rpartition("-")
    return f"{module}-{digest[:digits]}…" if module and len(digest) > digits else key


def needs_evidence(cell: CellResult) -> bool:
    """A cell reproduced by its own runs (a --vary factor's miss has its own section)."""
    return cell.verdict == Verdict.REPRODUCED and not by_factors_only(cell)
