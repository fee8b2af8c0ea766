"""report.md's Evidence section (pure): a reproduced cell's moved key components and its lowered modules' diff,
and how a cell is named in the report's sections."""

from __future__ import annotations


from harness.core import markdown as md
from harness.core.findings import Attribution, RankSplit
from harness.core.kinds import Cause
from harness.core.model import CellResult
from harness.evidence.keys import cell_comparison
from harness.inputs.process_variables import process_env
from harness.report.evidence import (CAUSE_WORDS, Evidence, MissingEvidence, ProgramsDiffer, programs_differ,
                                     short_key)

EVIDENCE_TITLE = "## Evidence: a later run's new key against the same computation in the first run"
MAX_DIFF_LINES = 80  # a longer diff is cut: the first changed lines carry the point
EVIDENCE_BYTES = 3_000  # the section's cells past the first are folded in full while it stays within this, else a line
MAX_DIFF_WIDTH = 160  # characters of a diff line shown (a dense constant is one line); evidence/ has them whole

EvidenceMap = dict[str, Evidence | MissingEvidence]  # CellSpec.key -> evidence


def evidence_section(cells: list[CellResult], evidence: EvidenceMap) -> list[str]:
    shown = [c for c in cells if c.spec.key in evidence]
    if not shown:
        return []
    lines = [EVIDENCE_TITLE, ""]
    for number, cell in enumerate(shown):
        body = _attribution(cell, evidence[cell.spec.key]) + _one_evidence(evidence[cell.spec.key]) + \
            _inconsistencies(cell)
        title = f"{jax_words(cell)}, {where_words(cell)}"
        if number == 0:
            lines += [f"### {title}", "", *body, ""]
        elif sum(len(t.encode()) + 1 for t in [*lines, *body]) <= EVIDENCE_BYTES:  # the rest are folded
            lines += [f"<details><summary>{title}</summary>", "", *body, "", "</details>", ""]
        else:  # past the section's budget: a line each (report.md stays under 20 KB)
            lines += [_evidence_line(cell, evidence[cell.spec.key], title), ""]
    return lines


def _evidence_line(cell: CellResult, item: Evidence | MissingEvidence, title: str) -> str:
    """`- jax 0.10.2, user script, cpu x8: `jit_f`'s key moved in `computation`; likely cause `constant` (...)`."""
    moved = cell.attribution.components if cell.attribution is not None and cell.rank_split is None else []
    where = f" in {', '.join(md.code(n) for n in moved)}" if moved else ""
    cause = f"; likely cause `{item.cause or Cause.UNKNOWN}`" if isinstance(item, Evidence) and item.diff else ""
    whole = (f" (its diff: `evidence/{cell.spec.slug}.diff`)" if isinstance(item, Evidence) and item.diff
             else " (`harness check --json`, evidence/)")
    what = f"{md.code(item.module)}'s key" if item.module else "a key"
    return f"- {title}: {what} moved{where}{cause}{whole}."


def _attribution(cell: CellResult, item: Evidence | MissingEvidence | None = None) -> list[str]:
    """Which key components moved, from the runs' JAX logs: a components x runs table, the differing
    ones marked; when the computation is not among them, that the modules are identical."""
    if cell.rank_split is not None:
        return _rank_attribution(cell.rank_split, item)
    attribution = cell.attribution
    if attribution is None:
        why = cell.attribution_unavailable or "the runs' JAX logs were not read (a folder from before they were)"
        # An entry compiled again while on disk is JAX's log's word, not the folder's (its keys did not move).
        alone = "" if cell_comparison(cell).unserved else " The verdict comes from the cache folder alone."
        return [f"_Attribution unavailable: {md.text(why)}.{alone}_", ""]
    moved = attribution.components
    names = ", ".join(md.code(n) for n in moved) or "none"
    lines = [f"Which part of the {md.code(attribution.module)} key moved (JAX's own log, each component's own hash): {names}.",
             ""]
    rows = [[md.cell(f"**{md.text(name)}**" if a != b else md.text(name)), _short_hash(a), _short_hash(b),
             "differs" if a != b else ""] for name, a, b in attribution.hashes]
    lines += [md.pipe_table(rows, ["component", md.cell(f"run {attribution.run_a} ({md.text(short_key(attribution.key_a))})"),
                                   md.cell(f"run {attribution.run_b} ({md.text(short_key(attribution.key_b))})"), ""]), ""]
    if "computation" not in moved:
        lines += [(f"The lowered modules are identical (the `computation` hash is the same): the key moved through "
                   f"{names} alone."), ""]
        if "XLA flags" in moved:
            lines += [_xla_flags(cell, attribution), ""]
    return lines


# What two processes' different programs mean for the job, by what their lowered modules' diff shows.
PROGRAMS_DIFFER_WORDS = {
    ProgramsDiffer.COLLECTIVES: "The processes lowered different programs for the same function, and a collective "
                                "is among the differing lines: the collectives each then runs do not match the "
                                "other's, so such a job hangs or dies.",
    ProgramsDiffer.CONSTANTS: "The processes lowered the same program but for a constant (only constants differ "
                              "in the diff below): their collectives match, so the job runs, but each process "
                              "computes its own key and none hits what process 0 wrote.",
    ProgramsDiffer.OTHER: "The processes lowered different programs for the same function; no collective is among "
                          "the differing lines below.",
}


def _programs_differ_words(item: Evidence | MissingEvidence | None) -> str:
    found = programs_differ(item.diff) if isinstance(item, Evidence) else None
    if found is not None:
        return PROGRAMS_DIFFER_WORDS[found]
    return ("The processes lowered different programs for the same function; whether their collectives differ "
            "only the lowered modules' diff can say, and it is not here.")


def _rank_attribution(split: RankSplit, item: Evidence | MissingEvidence | None) -> list[str]:
    """The components of the two processes' keys of one run, from each process's own JAX log; what their
    programs' difference means for the job, from the lowered modules' diff."""
    a, b = split.ranks
    names = ", ".join(md.code(n) for n in split.components) or "none"
    lines = [(f"Which parts of the {md.code(split.module)} key differ between processes {a} and {b} of run {split.run} "
              f"(each process's own JAX log): {names}."), ""]
    rows = [[md.cell(f"**{md.text(name)}**" if x != y else md.text(name)), _short_hash(x), _short_hash(y),
             "differs" if x != y else ""] for name, x, y in split.hashes]
    lines += [md.pipe_table(rows, ["component", md.cell(f"process {a} ({md.text(short_key(split.keys[0]))})"),
                                   md.cell(f"process {b} ({md.text(short_key(split.keys[1]))})"), ""]), ""]
    if "computation" in split.components:
        lines += [_programs_differ_words(item), ""]
    if "accelerator_config" in split.components:
        lines += [("(`accelerator_config` names each process's own devices and differs between the processes of "
                   "every job here; it is not what moved.)"), ""]
    return lines


def _xla_flags(cell: CellResult, item: Attribution) -> str:
    runs = {r.index: r for r in cell.runs}
    given = {i: process_env(cell.spec, runs[i].seed).get("XLA_FLAGS", "") for i in (item.run_a, item.run_b) if i in runs}
    shown = "; ".join(f"run {i}: {md.code('XLA_FLAGS=' + flags)}" if flags else f"run {i}: none"
                      for i, flags in given.items())
    return (f"The XLA flags the harness gave the runs ({shown}) were the same, so the process changed them itself "
            "(its own XLA_FLAGS, or `--xla_*` arguments, which JAX also hashes): the harness cannot see what it set.")


def _short_hash(value: str | None) -> str:
    return md.cell(md.code(f"{value[:12]}…")) if value else "(not logged)"


def _inconsistencies(cell: CellResult) -> list[str]:
    if not cell.inconsistencies:
        return []
    return ["", "The cache folder and the runs' JAX logs disagree:", "",
            *(f"- {md.text(line)}" for line in cell.inconsistencies)]


def _one_evidence(item: Evidence | MissingEvidence) -> list[str]:
    if isinstance(item, MissingEvidence):
        return [f"_No diff: {md.text(item.why)}._"]
    a, b = item.run_a, item.run_b
    what = md.code(item.module) + (f" for arguments {md.code(item.arguments)}" if item.arguments else "")
    if item.ranks is not None:
        first = (f"Processes {item.ranks[0]} and {item.ranks[1]} of run {a.index} computed different keys for "
                 f"{what}; their lowered modules differ")
    elif item.key_b is None:  # overlapping later runs: which key each wrote is not known, only its module
        first = (f"Run {b.index} (`PYTHONHASHSEED={b.seed}`) overlapped with other runs (--jobs), so which key it "
                 f"wrote is not known, but it is one the first run did not compute: its lowered {what} differs "
                 f"from the first run's (run {a.index}, `PYTHONHASHSEED={a.seed}`)")
    else:
        counterpart = f" ({md.code(short_key(item.key_a))})" if item.key_a else ""
        first = (f"Run {b.index} (`PYTHONHASHSEED={b.seed}`) computed {md.code(short_key(item.key_b))}, a key the first "
                 f"run did not; the first run, run {a.index} (`PYTHONHASHSEED={a.seed}`), compiled the same "
                 f"computation{counterpart}. Their lowered {what} differs")
    diff = [d if len(d) <= MAX_DIFF_WIDTH else d[:MAX_DIFF_WIDTH - 3] + "..." for d in item.diff]
    if len(diff) > MAX_DIFF_LINES:
        diff = diff[:MAX_DIFF_LINES] + [f"... ({len(item.diff) - MAX_DIFF_LINES} more diff lines)"]
    whole = " (cut here; the whole diff is in evidence/)" if diff != item.diff and not item.identical else ""
    lines = [first + whole + (" in:" if item.attributes else ":"), ""]
    for name, before, after in item.attributes:
        lines.append(f"- {md.code(name)}: {md.code(before)} → {md.code(after)}")
    if item.identical:
        return lines[:1] + ["", f"_{md.text(item.note)}._"]
    cause = item.cause or Cause.UNKNOWN  # None only for a diff without a changed line
    return lines + ["", *md.fence(diff, "diff"), "", f"Likely cause (`{cause}`): {CAUSE_WORDS[cause]}."]


def jax_words(cell: CellResult) -> str:
    """`jax 0.4.28`, or `jax@c0cfc7ae9ff9` for a commit's cell (Markdown)."""
    return md.text(cell.label if cell.commit else f"jax {cell.spec.jax_version}")


def where_words(cell: CellResult) -> str:
    mesh = f"mesh {cell.spec.mesh.label}" if cell.spec.mesh else "user script"
    group = f" in {cell.spec.processes} processes" if cell.spec.is_multiprocess else ""
    return md.text(f"{mesh}, {cell.spec.platform} x{cell.spec.device_count}{group}")
