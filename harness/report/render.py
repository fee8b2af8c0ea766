"""report.md (pure): a results document and its evidence in, Markdown ready for a GitHub issue out."""

from __future__ import annotations

from typing import Any

import yaml
from tabulate import tabulate

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness.core.records import plain
from harness.core import markdown as md
from harness.verdicts.boundaries import Boundaries, release_boundaries, version_verdicts
from harness.evidence.keys import cell_comparison
from harness.verdicts.uncached import user_sets_folder
from harness.inputs.dependencies import other_distributions
from harness.core.findings import Attribution
from harness.core.model import CellResult
from harness.core.kinds import FolderMode, Verdict
from harness.core.platforms import describe
from harness.core.findings import RankSplit
from harness.core.kinds import Cause
from harness.results.header import RecordedConfig, RecordedOptions, ResultsHeader, host_flat
from harness.results.bisect_results import BisectSection
from harness.results.reduce_results import REDUCE_SECTION, Reduced
from harness.results.document import BISECTION, ResultsDocument, SweepStatus, summaries_by_mesh
from harness.core.confidence import SeedStrategy
from harness.report.bisect_section import bisect_section, commit_link
from harness.evidence.program_packages import ProgramPackages
from harness.report.evidence import (CAUSE_WORDS, Evidence, MissingEvidence, ProgramsDiffer, Seeds, key_seeds,
                                     moved_module, programs_differ, short_key)
from harness.report.reproduce import (harness_command, seed_commands, shell_comment, shell_commands,
                                      summary_of)
from harness.verdicts.seed_check import phrase
from harness.report.first_screen import first_screen
from harness.report.misses_screen import FunctionEvidence, cell_findings, listings_note, per_test_section
from harness.evidence.misses import Category, Follows
from harness.report.variation_section import moved_folder_section, variation_section
from harness.verdicts.factor_verdicts import by_factors_only
from harness.report.stats import cache_statistics, module_statistics
from harness.inputs.process_variables import process_env
from harness.report.table import boundaries_of, in_version_order, render_markdown_table as render_table, summary_line

REPORT_FILE = "report.md"
EVIDENCE_TITLE = "## Evidence: a later run's new key against the same computation in the first run"
MAX_DIFF_LINES = 80  # a longer diff is cut: the first changed lines carry the point
MAX_REPRO_CELLS = 3  # "Reproduce with" blocks: the first reproduced cell of each mesh, at most this many

EvidenceMap = dict[str, Evidence | MissingEvidence]  # CellSpec.key -> evidence
SeedsMap = dict[str, Seeds]  # CellSpec.key -> the first run's seed and those that brought new keys


def render_report(document: ResultsDocument, cells: list[CellResult], evidence: EvidenceMap,
                  seeds: SeedsMap | None = None, boundaries: Boundaries | None = None,
                  functions: FunctionEvidence | None = None) -> str:
    """`seeds`: per reproduced cell; without it, the seeds are read from the runs' keys. `boundaries`: the
    cells' release_boundaries with the header's releases, when the caller made them already (once per write).
    `functions`: per cell, its moved functions' lowered modules compared (report/sources.py: function_evidence)."""
    header = document.header
    config = header.config
    bounds = boundaries or release_boundaries(cells, header.releases)
    summary = summary_of(header, cells, bounds)  # the title's line and the Boundaries section's
    # A bisection adds cells in the order it tested them; every section lists them as the table does,
    # and "the first reproduced cell" is then the earliest release.
    cells = in_version_order(cells)
    title = summary_sentence(cells, header, summary)
    sections = [
        [f"# {md.text(config.name or 'sweep')}: {title}", *_status(document)],
        first_screen(cells, functions),
        per_test_section(cells, functions, {key: (e.module, e.key_b) for key, e in evidence.items()
                                            if isinstance(e, Evidence) and e.diff}),
        _as_it_runs(cells),
        ["## Results", "", render_table(cells)],
        _boundaries(document, cells, evidence, bounds, summary),
        _groups(cells),
        cache_statistics(cells),
        _script_cache(cells),
        _commits(cells),
        _bisection(document, cells),
        _minimal_reproducer(document.sections),
        _evidence(cells, evidence),
        variation_section(header, cells),
        moved_folder_section(header, cells),
        _environment(document, cells),
        ["## Config", "", *md.fence(config_yaml(config).splitlines(), "yaml")],
        _reproduce(document, cells, seeds or {}),
        listings_note() if any(c.listing or c.runs for c in cells) else [],
        [(f"<sub>Generated by the JAX cache harness from `results.json` (schema "
          f"{md.text(document.schema_version)}, created {md.text(header.created)}).</sub>")],
    ]
    return "\n\n".join("\n".join(s).strip("\n") for s in sections if s) + "\n"


def summary_sentence(cells: list[CellResult], header: ResultsHeader | None = None, summary: str | None = None) -> str:
    """The one line for an issue title or first sentence (Markdown); with the `header`, a boundary across
    releases not measured is told as a range, with the command that narrows it (`summary`: that line, made
    already)."""
    if summary is None and header is not None:
        summary = summary_of(header, cells)
    # A release's evidence first; a jax commit's (nightly --jax-repo) when no release reproduced.
    worst = _first_reproduced([c for c in cells if c.commit is None]) or _first_reproduced(cells)
    boundaries = summary if summary is not None else boundaries_of(cells)
    if worst is not None and worst.commit is not None:  # said of the releases' boundaries, before what follows
        boundaries += " of releases; jax commit " + worst.label + " reproduces"
    line = md.text(summary_line(cells, boundaries))
    if worst is None:
        return line
    comparison = cell_comparison(worst)
    module = comparison.moved_module()
    if module is None:  # a results folder judged by an older rule
        return f"{line}; reproduced on {_jax(worst)}" + (f": {md.text(worst.reason)}" if worst.reason else "")
    brought = len(comparison.runs_with_new(module))
    later = len(comparison.later_runs)
    return (f"{line}; on {_jax(worst)} {md.code(module)} got a persistent-cache key the first run did "
            f"not compute in {brought} of {later} later fresh process" + ("" if later == 1 else "es"))


def config_yaml(config: RecordedConfig) -> str:
    """The recorded config as a config `harness run` accepts: `source` says where it was read from (not
    a key), and a user's script records `meshes: []` (it builds its own mesh), which a config omits."""
    shown = {k: v for k, v in plain(config).items() if k != "source" and not (k == "meshes" and not v)}
    return yaml.safe_dump(shown, sort_keys=False, default_flow_style=None).rstrip()


def _first_reproduced(cells: list[CellResult]) -> CellResult | None:
    return next((c for c in cells if c.verdict == Verdict.REPRODUCED), None)


def _status(document: ResultsDocument) -> list[str]:
    lines = [""]  # a blank line after the title when there is something to say
    if document.status_text != SweepStatus.COMPLETE:
        lines.append(f"> **Status: {md.text(document.status_text)}** — this sweep did not finish; the rows below "
                     "are what it measured.")
    shard = document.header.shard
    if shard:
        lines.append(f"> Shard {shard.index}/{shard.count}: only this shard's cells "
                     "(`harness merge` joins the shards).")
    merged = document.sections.get("merged_from")
    if merged:
        harnesses = sorted({str((part.get("host") or {}).get("harness_version") or "an unrecorded version")
                            for part in merged if isinstance(part, dict)})
        by = f", measured by harness {' and '.join(md.text(v) for v in harnesses)}" if len(harnesses) > 1 else ""
        lines.append(f"> Merged from {len(merged)} shard result(s){by}.")
    return lines if len(lines) > 1 else []


def _boundaries(document: ResultsDocument, cells: list[CellResult], evidence: EvidenceMap,
                b: Boundaries, summary: str) -> list[str]:
    """`summary`: b's line (summary_of)."""
    if b.no_boundary:  # no clean release measured: where it "appears" is not known
        appears = f"— (every release measured reproduces, {md.text(b.measured[0])} included)"
    else:
        appears = md.text(b.appears_in or "—") + (
            f" (last clean release before it: {md.text(b.last_clean_before)})" if b.last_clean_before else "")
    lines = ["## Boundaries", "", f"**{md.text(summary)}**", "", f"- Appears in: {appears}",
             f"- Fixed in: {_fixed(b)}"]
    failing = b.fails_from
    if failing is not None:  # the same object as the line: no release after it is said to fix anything
        lines.append(f"- Fails from: {md.text(failing.version)} ({md.text(failing.reason)})")
    lines += [f"- Outside JAX: {md.text(phrase)}" for phrase in b.outside_jax_phrases()]
    lines += [f"- Nothing cached: {md.text(u.phrase())}" for u in b.uncached]
    if b.no_boundary:
        lines.append(f"- What differs: {_likely_cause(cells, evidence)}")
    groups = summaries_by_mesh(document.cells, document.header.releases)  # in the order the cells were measured, as results.json has them
    if len(groups) > 1:
        lines += ["", "Per mesh:", ""] + [f"- {md.text(g.get('group'))}: {md.text(g.get('line'))}" for g in groups]
    verdicts = version_verdicts(cells)
    for verdict, what in ((Verdict.ERROR, "failed"), (Verdict.UNSUPPORTED, "nothing measured")):
        skipped = [v for v, found in verdicts.items() if found == verdict]
        if skipped:  # a failed release is said failed, not "nothing measured" (issue 47.4)
            lines += ["", f"_Stepped over ({what}): {md.text(', '.join(skipped))}._"]
    return lines


def _fixed(b: Boundaries) -> str:
    """`0.4.31`, or `by 0.4.31 (after 0.4.28; 0.4.29-0.4.30 not measured)` where releases lie unmeasured between."""
    if not b.fixed_in:
        return "—"
    missing = b.not_measured_between(b.last_reproduced_before_fix, b.fixed_in) if b.last_reproduced_before_fix else []
    if not missing:
        return md.text(b.fixed_in)
    span = missing[0] if len(missing) == 1 else f"{missing[0]}-{missing[-1]}"
    return md.text(f"by {b.fixed_in} (after {b.last_reproduced_before_fix}; {span} not measured)")


def _likely_cause(cells: list[CellResult], evidence: EvidenceMap) -> str:
    """The first reproduced release's likely cause, from its evidence below (where the report has it)."""
    for cell in cells:
        item = evidence.get(cell.spec.key)
        if cell.verdict != Verdict.REPRODUCED or not isinstance(item, Evidence):
            continue
        if item.cause is None:  # identical modules: what moved is outside them, as the note says
            return f"on {_jax(cell)}, {md.text(item.note or 'the lowered modules are identical')} (see the Evidence below)"
        return f"on {_jax(cell)}, `{item.cause}`: {CAUSE_WORDS[item.cause]} (the diff is in the Evidence below)"
    return "the Evidence below, where the runs' lowered modules were kept"


def _as_it_runs(cells: list[CellResult]) -> list[str]:
    """The report's first lines, where what the program does as its author runs it differs from what
    was measured, or is the finding: its own thresholds, why nothing was cached, a seed-dependent failure."""
    said: dict[str, list[str]] = {}
    for cell in cells:
        sentences = [cell.as_you_run_it] if cell.as_you_run_it else []
        if cell.nothing_cached is not None:
            sentences.append(cell.reason)
        if cell.seed_check is not None and cell.seed_check.follows_seed:
            sentences.append(f"{phrase(cell.seed_check)} (see Reproduce with)")
        for sentence in sentences:
            said.setdefault(sentence, []).append(_jax(cell))
    return [f"- **{', '.join(where)}**: {md.text(text[0].upper() + text[1:])}." for text, where in said.items()]


def folder_note(cell: CellResult) -> str | None:
    """Where the cell's cache folder came from, when not from the script itself (its `cache_folder`,
    docs/as-it-runs.md); None for a folder the script set (the hook redirected it: its own note says so),
    for the harness's built-in repros and for results written before cells recorded it."""
    if cell.cache_folder != FolderMode.ENVIRONMENT:
        return None
    if cell.spec.is_multiprocess:  # the hook redirects a folder set in code to it, so it holds either way
        return ("the harness set JAX_COMPILATION_CACHE_DIR for every process of this multi-process cell (a "
                "folder the script sets in code is redirected to it)")
    if user_sets_folder(cell):  # the user's --env: honoured as how they run it
        return ("you set JAX_COMPILATION_CACHE_DIR for the program (--env); to measure, each cell's runs got a "
                "fresh folder of their own in its place")
    # A user's script is in `environment` mode only when its first run set no folder (harness/measure/cell_runner.py).
    return ("the script sets no cache folder; the harness set JAX_COMPILATION_CACHE_DIR to measure (where it "
            "is not set, JAX keeps no persistent cache for this script)")


def _script_cache(cells: list[CellResult]) -> list[str]:
    """Where the cache folder of a user's script came from (when not from the script itself), then what
    the script did to its own cache (the runner's cell.script_cache.notes), each sentence once with the
    releases it held for."""
    releases: dict[str, list[str]] = {}
    for cell in cells:
        folder = folder_note(cell)
        for note in ([folder] if folder else []) + list(cell.script_cache.notes if cell.script_cache else ()):
            releases.setdefault(note, [])
            if cell.spec.jax_version not in releases[note]:
                releases[note].append(cell.spec.jax_version)
    if not releases:
        return []
    lines = ["## The script's own cache settings", ""]
    for note, versions in releases.items():
        lines.append(f"- {md.text(note[0].upper() + note[1:])} (jax {md.text(', '.join(versions))}).")
    return lines


def _commits(cells: list[CellResult]) -> list[str]:
    """The jax commits measured beside the releases (`nightly --jax-repo`): which, when, with what jaxlib."""
    measured = [(c, c.commit) for c in cells if c.commit]
    if not measured:
        return []
    lines = ["## jax commits", ""]
    for cell, commit in measured:
        ref = f" ({md.code('--ref ' + commit.ref)})" if commit.ref else ""
        jaxlib = commit.jaxlib or cell.environment_facts.get("jaxlib_release")
        ran = f"run with jaxlib {md.text(jaxlib)} (the newest release it accepts that ran)" if jaxlib else \
            "no jaxlib ran it"
        lines.append(f"- {md.text(cell.label)}{ref}: {commit_link(commit.info)}; {ran}; {_where(cell)}: "
                     f"**{md.text(cell.verdict)}**"
                     + (f" ({md.text(cell.reason)})" if cell.reason and cell.verdict != Verdict.CLEAN else ""))
    return lines




def _minimal_reproducer(sections: dict[str, Any]) -> list[str]:
    """The reduced program, when `harness reduce` made these results (its `reduce` section)."""
    found = sections.get(REDUCE_SECTION)
    if not isinstance(found, Reduced):
        return []
    original, reduced, signature = found.original, found.reduced, found.signature
    moved = ", ".join(signature.components) or "unknown"
    where = ""
    if signature.factor:
        where = f" when varying {md.code(signature.factor)} ({md.code(f'--vary {signature.factor}')})"
    elif signature.ranks:
        a, b = signature.ranks
        where = f" between processes {a} and {b} of one job (`--processes {found.processes}`)"
    same = " under the same factor" if signature.factor else " with as many processes" if signature.ranks else ""
    kept = (f"`reproduced` on jax {md.text(found.bad)} through {md.code(signature.module)}{where} (key component "
            f"{md.text(moved)}, cause {md.code(signature.cause or 'unknown')})"
            + (f", `clean` on jax {md.text(found.good)}{same}" if found.good else ""))
    source = reduced.source.rstrip("\n")
    fence = "````" if "```" in source else "```"
    return ["## Minimal reproducer", "",
            (f"`harness reduce` shrank {md.code(original.path)} from {original.lines} to "
            f"{reduced.lines} lines ({original.bytes} -> {reduced.bytes} bytes), keeping "
            f"its failure signature: {kept}; {found.candidates_run} candidates run in "
            f"{found.seconds} s. The table above is this program's own check."), "",
            *_plain_jax(found), f"{fence}python", source, fence]


def _plain_jax(found: Reduced) -> list[str]:
    """Which libraries the reduction took out and by which pass, and the library calls left and why."""
    said = found.plain
    if said is None:
        return []
    gone = [p for p in said.libraries if p not in said.still]
    taken = [f"{md.code(p)} by *{said.taken_out_by[p]}*" if p in said.taken_out_by else
             f"{md.code(p)} before a `--resume`" for p in gone]
    lines = [f"The original imported {', '.join(md.code(p) for p in said.libraries)} beyond JAX, NumPy and "
             "Python's own" + (f"; taken out: {', '.join(taken)}" if taken else "") + "."]
    if said.still:
        calls = ", ".join(md.code(c) for c in said.calls) or "none (only its import or a name)"
        lines.append(f"It still uses {', '.join(md.code(p) for p in said.still)}: calls {calls}. Every candidate that "
                     "replaced such a call by its argument, by a value a run of the program read, or removed it, "
                     "lost the signature: the miss needs the library's own code there.")
    else:
        lines.append("It imports JAX, NumPy and Python's own library only.")
    return [" ".join(lines), ""]


def _bisection(document: ResultsDocument, cells: list[CellResult]) -> list[str]:
    """Release boundaries and culprit commits, when `harness bisect` added them to the results: the section
    `harness bisect` itself prints (bisect_section)."""
    outcome = document.sections.get(BISECTION)
    if not isinstance(outcome, BisectSection):
        return []
    return bisect_section(outcome, ProgramPackages.of(cells, document.header.config.requirements or ()))


def _evidence(cells: list[CellResult], evidence: EvidenceMap) -> list[str]:
    shown = [c for c in cells if c.spec.key in evidence]
    if not shown:
        return []
    lines = [EVIDENCE_TITLE, ""]
    for number, cell in enumerate(shown):
        body = _attribution(cell, evidence[cell.spec.key]) + _one_evidence(evidence[cell.spec.key]) + \
            _inconsistencies(cell)
        title = f"{_jax(cell)}, {_where(cell)}"
        if number == 0:
            lines += [f"### {title}", "", *body, ""]
        else:  # the first one makes the point; the rest are folded
            lines += [f"<details><summary>{title}</summary>", "", *body, "", "</details>", ""]
    return lines


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
    lines += [tabulate(rows, headers=["component", md.cell(f"run {attribution.run_a} ({md.text(short_key(attribution.key_a))})"),
                                      md.cell(f"run {attribution.run_b} ({md.text(short_key(attribution.key_b))})"), ""],
                       tablefmt="github"), ""]
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
    lines += [tabulate(rows, headers=["component", md.cell(f"process {a} ({md.text(short_key(split.keys[0]))})"),
                                      md.cell(f"process {b} ({md.text(short_key(split.keys[1]))})"), ""],
                       tablefmt="github"), ""]
    if "computation" in split.components:
        lines += [_programs_differ_words(item), ""]
    if "accelerator_config" in split.components:
        lines += [("(`accelerator_config` names each process's own devices and differs between the processes of "
                   "every job here; it is not what moved.)"), ""]
    return lines


def _groups(cells: list[CellResult]) -> list[str]:
    """What the multi-process cells were, and what each process said on its own."""
    groups = [(c, c.job) for c in cells if c.spec.is_multiprocess and c.job is not None]
    if not groups:
        return []
    lines = ["## Multi-process cells", "",
             ("Each run of these cells was one job of several processes on this machine (a coordinator on a "
              "loopback port, the devices split between them, each process with its own `PYTHONHASHSEED`, one cache "
              "folder shared), as a multi-host job runs one process per host. The cell's verdict is the job's: "
              "`reproduced` when the processes of one run computed different keys for the same module compiled for "
              "the same devices (they lowered different programs; a computation on a process's own devices is "
              "keyed per process by design, and judged per process), or when a later run computed a key no earlier run had; each process "
              "is also judged alone (below). See docs/multi-process.md for what this simulates and what not."), ""]
    for cell, facts in groups:
        seeds = cell.seeds.ranks if cell.seeds is not None else []
        lines.append(f"- **{_jax(cell)}**, {facts.processes} processes per run"
                     + (f"; seeds by process: {', '.join('(' + ', '.join(map(str, r)) + ')' for r in seeds)}"
                        if seeds else ""))
        for verdict in facts.per_process:
            lines.append(f"  - process {verdict.rank}: {verdict.verdict} ({md.text(verdict.reason)})")
        writers = ", ".join(map(str, facts.writers)) if facts.writers else "none"
        lines.append(f"  - processes that wrote to the cache: {writers}")
        lines += [f"  - {md.text(note)}" for note in facts.notes]
    if any(c.seeds is not None and c.seeds.ranks_how for c, _ in groups):
        ranks_how = next(c.seeds.ranks_how for c, _ in groups if c.seeds is not None and c.seeds.ranks_how)
        lines += ["", f"Seeds by process: {ranks_how}."]
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
    lines = [first + (" in:" if item.attributes else ":"), ""]
    for name, before, after in item.attributes:
        lines.append(f"- {md.code(name)}: {md.code(before)} → {md.code(after)}")
    if item.identical:
        return lines[:1] + ["", f"_{md.text(item.note)}._"]
    diff = item.diff
    if len(diff) > MAX_DIFF_LINES:
        diff = diff[:MAX_DIFF_LINES] + [f"... ({len(item.diff) - MAX_DIFF_LINES} more diff lines)"]
    cause = item.cause or Cause.UNKNOWN  # None only for a diff without a changed line
    return lines + ["", *md.fence(diff, "diff"), "", f"Likely cause (`{cause}`): {CAUSE_WORDS[cause]}."]


def _jax(cell: CellResult) -> str:
    """`jax 0.4.28`, or `jax@c0cfc7ae9ff9` for a commit's cell (Markdown)."""
    return md.text(cell.label if cell.commit else f"jax {cell.spec.jax_version}")


def _where(cell: CellResult) -> str:
    mesh = f"mesh {cell.spec.mesh.label}" if cell.spec.mesh else "user script"
    group = f" in {cell.spec.processes} processes" if cell.spec.is_multiprocess else ""
    return md.text(f"{mesh}, {cell.spec.platform} x{cell.spec.device_count}{group}")


# The host's facts the Environment section names itself; the others follow under their own names.
_SHOWN_HOST_FACTS = {"os", "python", "cpu_count", "backend", "docker_version", "docker", "driver_version", "gpus",
                     "tpu_accelerator_type", "tpu_chips", "libtpu_version",
                     "harness_python"}  # harness_python: a path on the measuring machine, not a fact about it


def _environment(document: ResultsDocument, cells: list[CellResult]) -> list[str]:
    host = document.header.host
    named = [("OS", host.os), ("Python", host.python), ("CPUs", host.cpu_count), ("Backend", host.backend),
             ("Docker", host.facts.get("docker_version")), ("Docker", host.facts.get("docker")),  # older: docker
             ("NVIDIA driver", host.driver_version), ("GPUs", host.gpus),
             ("TPU", host.tpu_accelerator_type), ("TPU chips", host.tpu_chips), ("libtpu", host.libtpu_version)]
    lines = ["## Environment", ""]
    for label, value in named:
        if value not in (None, "", (), [], {}):
            lines.append(f"- {label}: {md.text(', '.join(map(str, value)) if isinstance(value, (list, tuple)) else value)}")
    for key, value in host_flat(host).items():
        if key not in _SHOWN_HOST_FACTS and value not in (None, "", [], {}):
            lines.append(f"- {md.text(key)}: {md.text(value)}")
    lines.append(f"- Devices: {_devices(cells, document)}")
    options = document.header.options
    if options != RecordedOptions():
        at_once = 1 if options.runs_at_once is None else options.runs_at_once
        lines.append(f"- Runs per cell: up to {md.text(options.runs)}, {md.text(at_once)} "
                     "at a time; every run a fresh process with its own `PYTHONHASHSEED`")
        if options.seeds == SeedStrategy.CHOSEN:
            lines.append("- Hash seeds: chosen so that every pair of the mesh's axis names is iterated in "
                         "both orders, then random ones (a user script's are all random); "
                         + ("every run was made" if options.all_runs else
                            "a cell stops at the first later run with a new key"))
    rows = []
    for c in cells:
        env = c.environment_facts
        rows.append([md.cell(md.text(v)) for v in (c.label, env.get("jax", "—"), env.get("jaxlib", "—"),
                                                    env.get("python", "—"), env.get("numpy", "—"),
                                                    env.get("backend", "—"), env.get("image", "") or "")])
    if rows:
        lines += ["", tabulate(rows, headers=["cell", "jax", "jaxlib", "python", "numpy", "backend", "image"],
                               tablefmt="github")]
    return lines + _packages(document, cells)


def _packages(document: ResultsDocument, cells: list[CellResult]) -> list[str]:
    """What else each cell had installed: the script's requirements as resolved for that release
    (a different Flax per JAX release is the point), then every other package, folded."""
    requested = document.header.config.requirements or ()
    names = {canonicalize_name(Requirement(r).name) for r in requested}
    listed = [(c, other_distributions(c.environment_facts.get("distributions") or {})) for c in cells]
    listed = [(c, d) for c, d in listed if d]
    lines = []
    if requested:
        lines += ["", (f"The script's requirements ({', '.join(md.code(r) for r in requested)}), installed with each "
                       "release as of its date:"), ""]
        for cell, installed in listed:
            got = ", ".join(f"{n} {installed[n]}" for n in sorted(names) if n in installed) or "—"
            lines.append(f"- jax {md.text(cell.spec.jax_version)}: {md.text(got)}")
    if listed:
        lines += ["", "<details><summary>packages installed besides jax and jaxlib, per cell</summary>", ""]
        for cell, installed in listed:
            lines.append(f"- jax {md.text(cell.spec.jax_version)} ({_where(cell)}): "
                         + ", ".join(f"**{md.text(f'{n} {v}')}**" if n in names else md.text(f"{n} {v}")
                                     for n, v in installed.items()))
        lines += ["", "</details>"]
    return lines


def _devices(cells: list[CellResult], document: ResultsDocument) -> str:
    kinds = sorted({(c.spec.platform, c.spec.device_count) for c in cells})
    parts = []
    for platform, count in kinds:
        if describe(platform).simulated:
            parts.append(f"{count} simulated CPU devices (`XLA_FLAGS=--xla_force_host_platform_device_count={count}`)")
        else:
            gpus = document.header.host.gpus
            parts.append(f"{platform} x{count}" + (f" ({len(gpus)} GPU(s) on the host)" if gpus else ""))
    seen = sorted({f"{d.label} ({d.version_line or d.platform})" for c in cells if (d := c.devices) is not None})
    if seen:  # what JAX reported in the cells' first runs
        parts.append("JAX saw " + ", ".join(md.text(s) for s in seen))
    return "; ".join(parts) or "—"


def _reproduce(document: ResultsDocument, cells: list[CellResult], seeds: SeedsMap) -> list[str]:
    firsts: dict[tuple[object, ...], CellResult] = {}
    for c in cells:
        if c.verdict == Verdict.REPRODUCED and not by_factors_only(c):  # a factor's: its own commands
            firsts.setdefault((c.spec.platform, c.spec.device_count, c.spec.mesh), c)
    chosen = list(firsts.values())[:MAX_REPRO_CELLS]
    header = document.header
    config = header.config
    lines = ["## Reproduce with", ""]
    if not chosen:
        chosen = [c for c in cells if c.runs][:1]
        if not chosen:
            return []
        lines += ["Nothing reproduced; to measure again:", ""]
    elif not chosen[0].spec.is_multiprocess:  # a job's cell says its seeds itself (_group_reproduce)
        lines += [_seeds_sentence(chosen[0], _seeds_of(chosen[0], seeds)) + _follows_program(chosen[0]) +
                  " From a checkout of the harness (for the built-in repro's script):", ""]
    for cell in chosen:
        if cell.spec.is_multiprocess:  # its processes must join one another: the harness starts them as a job
            lines += [_group_reproduce(cell), ""]
            continue
        lines += [*md.fence(shell_commands(cell, config, _seeds_of(cell, seeds), header.options).splitlines(), "bash"), ""]
    for cell in [c for c in cells if c.seed_check is not None and c.seed_check.follows_seed][:MAX_REPRO_CELLS]:
        lines += [f"On {_jax(cell)} the failure follows the hash seed: a failing and a passing seed, by hand:", "",
                  *md.fence(seed_commands(cell, config, header.options).splitlines(), "bash"), ""]
    commands = [harness_command(header, c) for c in chosen]
    if header.command:
        commands.append(shell_comment(f"the whole sweep, as it was run: {header.command}"))
    return lines + ["With the harness (a fresh process per run, new seeds each time):", "",
                    *md.fence([line for command in commands for line in command.splitlines()], "bash")]


def _group_reproduce(cell: CellResult) -> str:
    """A multi-process cell's runs by hand: which seeds, and why the harness command starts them."""
    run = cell.split_run
    which = ""
    if run is not None and run.ranks:
        seeds = ", ".join(f"`PYTHONHASHSEED={r.seed}`" for r in run.ranks)
        which = f" (run {run.index} had {seeds} for processes {', '.join(str(r.rank) for r in run.ranks)})"
    return (f"On {_jax(cell)} each run is a job of {cell.spec.processes} processes that join one another "
            f"(`jax.distributed.initialize()`), each with its own hash seed{which}; the harness command below "
            "starts them so (docs/multi-process.md).")


def _seeds_of(cell: CellResult, seeds: SeedsMap) -> Seeds | None:
    module = moved_module(cell)
    return seeds.get(cell.spec.key) or (key_seeds(cell, module) if module else None)


def _follows_program(cell: CellResult) -> str:
    """Said before the seeds when the seed control found that the moved module's key follows the program."""
    module = moved_module(cell)
    found = [m for m in cell_findings(cell).misses if m.module == module and m.category == Category.MOVED_KEY]
    if not found or found[0].follows != Follows.PROGRAM:
        return ""
    return (f" The seed control (the first run's seed again) moved {md.code(module)}'s key again: it follows the "
            "program's own randomness (random constants, a clock), not the hash seed, so any two runs may differ "
            "whatever their seeds.")


def _seeds_sentence(cell: CellResult, seeds: Seeds | None) -> str:
    module, version = moved_module(cell) or "a module", _jax(cell)
    module = md.code(module)
    if seeds is None or not seeds.values:
        return (f"Which hash seeds gave a new {module} key on {version} cannot be told from the results "
                "(overlapping runs whose lowered modules were not kept), so the commands below use every "
                "run's seed.")
    first, rest = f"`{seeds.values[0]}`", ", ".join(f"`{s}`" for s in seeds.values[1:])
    if seeds.basis == "key":
        return (f"On {version}, after the first run (hash seed {first}), each of these hash seeds computed "
                f"a {module} key that no run before it had: {rest}.")
    return (f"On {version}, after the first run (hash seed {first}), each of these hash seeds lowered "
            f"{module} differently from every run before it, so computed a new key: {rest} (the later runs "
            "overlapped, so they are told apart by their modules).")


def render_listings(cells: list[CellResult]) -> str:
    """evidence/listings.md: each cell's cache folder after its last run (the raw listing, out of report.md)."""
    ordered = in_version_order(cells)
    return "\n".join([*_listings(ordered), *module_statistics(ordered)]).rstrip("\n") + "\n"


def _listings(cells: list[CellResult]) -> list[str]:
    lines = ["# Cache listings", "", "The cache folder after the last run of each cell (`ls -1`):", ""]
    for c in cells:
        if not c.listing and not c.runs:
            continue
        lines += [(f"<details><summary>{_jax(c)}, {_where(c)}: {md.text(c.verdict)}, "
                   f"{len(c.listing)} file(s)</summary>"), "",
                  *md.fence(["$ ls -1 $JAX_COMPILATION_CACHE_DIR", *c.listing], "console"), "", "</details>", ""]
    return lines
