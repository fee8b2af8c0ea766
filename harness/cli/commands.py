"""`harness` (the top layer): parses arguments into options, calls the service, shows the outcome.

Nothing below this module sees an argparse Namespace. Exit codes (`errors.ExitCode`, docs/ci.md): 0 the
work completed (whatever it found), 1 a regression (nightly and compare; run, check, merge and submit
--wait with --fail-on), 2 bad input, 3 a failure of the harness itself (or an incomplete merge), 130
interrupted by Ctrl-C, 143 stopped by SIGTERM (129 SIGHUP; partial results are kept).
"""

from __future__ import annotations

import argparse
import errno
import html
import json
import io
import shlex
import sys
import traceback
from pathlib import Path
from collections.abc import Callable
from typing import Any

from harness import service
from harness.core.records import plain
from harness.service import option_checks
from harness.output import ci
from harness.inputs import options
from harness.core.errors import ExitCode, HarnessFailure, UserError
from harness.nightly.compare import CellChange, exit_code, render_changes
from harness.cli.console import ConsoleProgress, console_streams
from harness.reduce.passes import size
from harness.report.bisect_section import REPRODUCE_WITH
from harness.report.render import REPORT_FILE
from harness.core.model import CellResult
from harness.core.kinds import Verdict
from harness.results.document import SweepStatus
from harness.inputs.option_set import from_given
from harness.inputs.options import Given
from harness.slurm.jobs import LOG_FOLDER, MERGE_SCRIPT, SHARD_SCRIPT
from harness.core.shield import shield_from_children
from harness.environments.key_hiding import key_reach_caveat
from harness.core.signals import interrupted_exit_code, interrupted_how, stop_signals_interrupt
from harness.evidence.keys import cell_comparison
from harness.report.first_screen import terminal_lines
from harness.report.sources import function_evidence
from harness.report.table import render, summary_json, summary_line

_STORAGE_FULL = (errno.ENOSPC, errno.EDQUOT)
DESCRIPTION = "Reproduce JAX persistent-compilation-cache regressions version by version."


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command, from the options' one declaration (harness/inputs/options.py)."""
    return options.build_parser(DESCRIPTION)


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a name from a program or an old results file never stops a print
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    # Before any program runs: none can write this process's stdout (a forged --json) or read its memory.
    shield_from_children()
    words = list(sys.argv[1:] if argv is None else argv)
    given, _ = options.parse(words, build_parser())  # the Namespace stops here
    try:
        with stop_signals_interrupt(), console_streams():
            return handler(given.command)(given, tuple(words))
    except UserError as exc:
        ConsoleProgress.discard_all()  # bad input is said alone, not after what was resolved before it
        print(f"harness: error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except HarnessFailure as exc:
        ConsoleProgress.release_all()
        print(f"harness: error: {exc}", file=sys.stderr)
        return ExitCode.FAILURE
    except KeyboardInterrupt:
        ConsoleProgress.release_all()
        print(f"\nharness: {interrupted_how()}", file=sys.stderr)
        return interrupted_exit_code()
    except OSError as exc:
        ConsoleProgress.release_all()
        if exc.errno not in _STORAGE_FULL:
            return _internal_error()
        # Not a bug and not bad input: the machine's storage. What was measured was saved up to here.
        print(f"harness: error: {exc.strerror}{f' ({exc.filename})' if exc.filename else ''}; the results "
              "keep every cell saved before it", file=sys.stderr)
        return ExitCode.FAILURE
    except Exception:  # noqa: BLE001 -- a bug of the harness, not bad input: the traceback is what a fix needs
        return _internal_error()
    finally:
        ConsoleProgress.release_all()


def cmd_completion(given: Given, words: tuple[str, ...]) -> int:
    """The completion script (shtab: generated from the parser, so from the options registry; nothing of
    the harness runs on a Tab press). Path-typed options and arguments complete file names."""
    try:
        # Here, not at the top (as uv in environments/venv.py): a venv made before shtab was a dependency
        # still runs every other command; this one says what to install.
        import shtab  # noqa: PLC0415
    except ImportError:
        raise UserError("completion needs shtab, a dependency of the harness: pip install shtab") from None
    parser = build_parser()
    for action in _all_actions(parser):
        if action.type is Path:
            action.complete = shtab.FILE  # type: ignore[attr-defined]
    text = shtab.complete(parser, shell=given.shell)
    # shtab's zsh script registers itself only when eval'd (`eval "$(harness completion zsh)"`); sourced
    # (`source <(harness completion zsh)`, as a .zshrc does) it called _arguments outside a completion
    # and failed: it registers then too. From a folder on $fpath it still runs as the completion itself.
    print(text.replace("[[ $zsh_eval_context[-1] == eval ]]", "[[ $zsh_eval_context[-1] == (eval|file) ]]"), end="")
    return ExitCode.OK


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    found = []
    for action in parser._actions:
        found.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _all_actions(sub)
    return found


def _internal_error() -> int:
    ConsoleProgress.release_all()
    traceback.print_exc()
    print("harness: internal error (a bug in the harness; the traceback above says where)", file=sys.stderr)
    return ExitCode.FAILURE


# ---- commands: each takes what was given (harness/inputs/options.py) and the words as typed ------------

# The lines a command prints before it measures are held this long at most (until its first cell), so
# that bad input found meanwhile (a --resume of another sweep, a read-only --out) is said alone.
SETUP_HOLD_S = 3.0


def _progress(quiet: bool) -> ConsoleProgress:
    return ConsoleProgress(quiet=quiet, hold_s=SETUP_HOLD_S)


Handler = Callable[[Given, tuple[str, ...]], int]  # cmd_<command>: what was given, the words as typed


def handler(command: str) -> Handler:
    """`cmd_<command>` below (`base-image`: cmd_base_image): one per command of harness/inputs/options.py
    (tests/unit/test_options.py checks)."""
    found: Handler = globals()[f"cmd_{command.replace('-', '_')}"]
    return found


def _typed(words: tuple[str, ...]) -> str:
    """The command line as typed: the results header records it."""
    return shlex.join(["harness", *words])


def _sweep_options(given: Given, words: tuple[str, ...]) -> service.SweepOptions:
    return from_given(service.SweepOptions, given, command=_typed(words))


def cmd_run(given: Given, words: tuple[str, ...]) -> int:
    _check_ci_paths(given.junit_xml, given.out, given.resume)
    swept = service.run(given.config, _sweep_options(given, words), _progress(given.quiet))
    return _show_sweep(swept, given.junit_xml, given.fail_on, as_json=given.json)


def cmd_check(given: Given, words: tuple[str, ...]) -> int:
    given = service.as_pytest(given, "script")  # `-m pytest`; a SCRIPT given is pytest's first argument
    option_checks.check_script_or_python_module("check", given.script, given.module)
    _check_ci_paths(given.junit_xml, given.out, given.resume)
    check = _script_check(given)
    config = service.check_config(check, moved_folder=not given.no_moved_folder)
    options = service.with_script_packages(_sweep_options(given, words), check.script_run)  # --with . is --with-editable .
    swept = service.sweep(config, options, _progress(given.quiet))
    return _show_sweep(swept, given.junit_xml, given.fail_on, as_json=given.json)


def _unhidden_key() -> str:
    """A line before a resume line where the programs run could read the key that seals the state it resumes
    (no bubblewrap: docs/design/faults.md), else ""."""
    caveat = key_reach_caveat()
    return f"{caveat}: a state one of them sealed anew would be resumed as the harness's own\n" if caveat else ""


def cmd_reduce(given: Given, words: tuple[str, ...]) -> int:
    options = from_given(service.ReduceOptions, given, command=_typed(words))
    reduction = service.reduce(_script_check(given), options, _progress(given.quiet))
    state = reduction.state
    if reduction.status == SweepStatus.INTERRUPTED and state is None:
        print(f"\n{interrupted_how()} during the original's check: nothing reduced yet\n{_unhidden_key()}"
              f"continue with: {service.resume_command(given, reduction.folder)}", file=sys.stderr)
        return interrupted_exit_code()
    assert state is not None  # a reduction that was not interrupted before its first candidate has a state
    if reduction.status == SweepStatus.INTERRUPTED:
        print(f"\n{interrupted_how()}: the best so far ({size(state.best)} of {reduction.original_lines} lines, "
              f"{state.measured} candidates run) is {reduction.best_file}\n{_unhidden_key()}"
              f"continue with: {service.resume_command(given, reduction.folder)}", file=sys.stderr)
        return interrupted_exit_code()
    assert reduction.reduced is not None  # a finished reduction wrote its reduced program
    print(f"results: {reduction.folder / 'results.json'} (report: {reduction.folder / REPORT_FILE})", file=sys.stderr)
    print(render(list(reduction.cells)))
    print()
    print(f"reduced: {reduction.reduced} ({reduction.original_lines} -> {size(reduction.reduced.read_text())} lines; "
          f"{state.measured} candidates run in {state.seconds:.0f} s)")
    if reduction.problem:
        print(f"harness: the reduced program's own check did not keep the signature: {reduction.problem}",
              file=sys.stderr)
        return ExitCode.FAILURE
    return ExitCode.OK


def cmd_fingerprint(given: Given, words: tuple[str, ...]) -> int:
    """The fingerprint as JSON on stdout (and in --output): from one run per release of the script, or
    read from a results folder."""
    source = given.script
    if source is not None and given.module is None and (source.is_dir() or source.name == "results.json"):
        fingerprint = service.read_fingerprint(source)
    else:
        option_checks.check_fingerprint_source(source, given.module)
        check = _script_check(given, runs=2)
        config = service.check_config(check)
        options = service.with_script_packages(from_given(service.FingerprintOptions, given), check.script_run)
        fingerprint = service.fingerprint(config, options, _progress(given.quiet))
    text = json.dumps(plain(fingerprint), indent=1, allow_nan=False)
    if given.output is not None and source is not None and source.is_dir():
        given.output.write_text(text + "\n")
    print(text)
    return ExitCode.OK


def cmd_diff(given: Given, words: tuple[str, ...]) -> int:
    """Exit 0 when every module's keys are the same in both, 1 when some differ (as diff does)."""
    text, differs = service.diff_files(given.a, given.b)
    print(text)
    return ExitCode.REGRESSION if differs else ExitCode.OK  # 1, as diff(1) says "they differ"


def _script_check(given: Given, **fields: Any) -> service.ScriptCheck:
    """What check, reduce and fingerprint measure of the user's code, typed from what was given."""
    script_run = from_given(service.ScriptRunOptions, given, env=_env_pairs(given.env))  # its args: the words after --
    return from_given(service.ScriptCheck, given, script_run=script_run, **fields)


def _env_pairs(items: tuple[str, ...]) -> dict[str, str]:
    """--env NAME=VALUE ... as a mapping (the config's env: validates names and values)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UserError(f"--env {item!r}: expected NAME=VALUE")
        if name in out:
            raise UserError(f"--env {name}: given twice")
        out[name] = value
    return out


def _say_on_stderr(line: str) -> None:
    print(f"harness: {line}", file=sys.stderr)


def cmd_versions(given: Given, words: tuple[str, ...]) -> int:
    """One release per line, a tab, and the Python it would run in (`cut -f1` gives the releases)."""
    resolution = service.list_versions(given.config, given.versions or (), given.python_version,
                                       from_given(service.PythonOptions, given), given.index_url,
                                       given.extra_index_urls, say=_say_on_stderr)
    for line in resolution.notes():
        print(f"harness: {line}", file=sys.stderr)
    for version in resolution.versions:
        print(f"{version}\t{resolution.pythons[version]}")
    return ExitCode.OK


def cmd_init(given: Given, words: tuple[str, ...]) -> int:
    written = service.init_config(given.script, given.output, given.force)
    print(f"config: {written} (edit it, then: {shlex.join(['harness', 'run', str(written)])})")
    return ExitCode.OK


def cmd_base_image(given: Given, words: tuple[str, ...]) -> int:
    """The build script's own exit code: 0 built or already there, 1 a step failed."""
    return ExitCode.OK if service.base_image(given.debian, given.image, given.force) == 0 else \
        ExitCode.FAILURE


def cmd_report(given: Given, words: tuple[str, ...]) -> int:
    path = service.report(given.results)
    if given.show:
        print(path.read_text(), end="")
    print(f"report: {path}")
    return ExitCode.OK


def cmd_nightly(given: Given, words: tuple[str, ...]) -> int:
    _check_ci_paths(given.junit_xml, given.out)
    jax_ref = from_given(service.JaxRef, given) if given.jax_repo is not None else None
    found = service.nightly(given.config, _sweep_options(given, words), given.baseline,
                            given.config_versions, _progress(given.quiet), jax_ref,
                            max_lost_growth=given.max_lost_growth)
    code = _show_sweep(found.sweep, given.junit_xml)
    if code != ExitCode.OK:
        return code
    print()
    code = _show_changes(found.changes, given.baseline)
    if code == ExitCode.REGRESSION and given.triage:
        return _triage(found.sweep.folder, given, words)
    return code


def cmd_triage(given: Given, words: tuple[str, ...]) -> int:
    return _triage(given.results, given, words)


def _triage(results: Path, given: Given, words: tuple[str, ...]) -> int:
    """Exit 1 (a regression, triaged), or 3 when a step failed (bug.md says what is known)."""
    options = from_given(service.TriageOptions, given, command=_typed(words))
    try:
        found = service.triage(results, given.baseline, options, _progress(given.quiet))
    except KeyboardInterrupt:
        ConsoleProgress.release_all()
        again = ["harness", "triage", str(results), "--baseline", str(given.baseline)]
        again += ["--jax-repo", str(given.jax_repo)] if given.jax_repo is not None else []
        folder = results if results.is_dir() else results.parent
        print(f"\n{interrupted_how()}: {folder / 'bug.md'} says what is known so far; each step resumes from "
              f"its own state\ncontinue with: {shlex.join(again)}", file=sys.stderr)
        return interrupted_exit_code()
    print(f"bug report: {found.bug}")
    for step in found.failed:
        print(f"harness: triage: {step.name} failed: {step.detail}", file=sys.stderr)
    return ExitCode.FAILURE if found.failed else ExitCode.REGRESSION


def cmd_compare(given: Given, words: tuple[str, ...]) -> int:
    return _show_changes(service.compare_folders(given.results, given.baseline, given.max_lost_growth),
                         given.baseline)


def cmd_merge(given: Given, words: tuple[str, ...]) -> int:
    _check_ci_paths(given.junit_xml, given.out)
    merged = service.merge(list(given.results), given.out, shlex.join(["harness", *words]))
    print(render(merged.cells))
    print()
    line = summary_line(merged.cells, merged.summary or None)  # table.md's, with the header's releases
    print(line)
    print(f"results: {merged.results_file}")
    return _merged_outputs(merged.cells, merged.status, merged.complete,
                           ci.merged_suite_name(merged.name, merged.folder), given.junit_xml, given.fail_on, line=line)


def cmd_bisect(given: Given, words: tuple[str, ...]) -> int:
    given = service.as_pytest(given, "config")  # as check's: a CONFIG|SCRIPT given is pytest's first argument
    options = from_given(service.BisectOptions, given)
    if option_checks.names_a_program(given.config, given.module):  # train.py or -m MODULE: as check runs it
        check = _script_check(given, script=given.config)
        found = service.bisect_program(check, options, _progress(given.quiet))
    else:
        option_checks.check_program_options_need_a_program(given)  # --with, --env, ... are a script's
        found = service.bisect(given.config, options, _progress(given.quiet))
    if found.status == SweepStatus.INTERRUPTED:
        print(f"\n{interrupted_how()}: {found.points} point(s) recorded in {found.state_path} (a point cut short is "
              f"measured again on resume); no run started after it\n{_unhidden_key()}"
              f"resume with: {found.command}", file=sys.stderr)
        return interrupted_exit_code()
    print(f"results: {found.results_file} (report: {found.report_file})", file=sys.stderr)
    # bisect.md as it reads in a terminal (its HTML entities, `-&gt;`, as what they stand for); it ends with the line
    # that reproduces it, as `run` ends with its summary: there the command as it is, to paste (bisect.md's is a
    # code span)
    section, said, _ = found.text.rpartition(f"\n\n{REPRODUCE_WITH}")
    print(f"{html.unescape(section)}{said}{found.command}" if said else html.unescape(found.text))
    # An endpoint that contradicts its flag (--good reproduces, --bad is clean) is the user's to fix.
    return ExitCode.OK if found.status == SweepStatus.COMPLETE else ExitCode.BAD_INPUT


def cmd_submit(given: Given, words: tuple[str, ...]) -> int:
    _check_ci_paths(given.junit_xml, given.out)
    option_checks.check_ci_outputs_need_wait(given.wait, given.junit_xml, given.fail_on)
    submit_options = from_given(service.SubmitOptions, given, command=_typed(words))
    found = service.submit(given.config, submit_options, dry_run=given.dry_run, progress=ConsoleProgress())
    if found.submitted is None:
        print(f"# {SHARD_SCRIPT}\n{found.jobs.shard_script()}\n# {MERGE_SCRIPT}\n{found.jobs.merge_script()}")
        print(f"(dry run: nothing submitted; the folder would be {found.jobs.sweep_dir})", file=sys.stderr)
        return ExitCode.OK
    submitted = found.submitted
    print(f"shards: job {submitted.array_job} (array tasks {','.join(map(str, submitted.shards))} of {given.shards})")
    print(f"merge: job {submitted.merge_job} (after the shards, however they end)")
    print(f"folder: {submitted.sweep_dir}")
    if not given.wait:
        return ExitCode.OK
    try:
        waited = service.wait_submission(found, _progress(given.quiet))
    except KeyboardInterrupt:
        print(f"\n{interrupted_how()}: stopped waiting; the jobs go on (cancel them with: "
              f"scancel {submitted.array_job} {submitted.merge_job})", file=sys.stderr)
        return interrupted_exit_code()
    if waited.merged is None:
        print(f"the merge job left no results: see {submitted.sweep_dir / LOG_FOLDER}", file=sys.stderr)
        return ExitCode.FAILURE
    merged = waited.merged
    print(f"results: {merged.results_file} (report: {merged.folder / REPORT_FILE})", file=sys.stderr)
    print(render(merged.cells))
    print()
    line = summary_line(merged.cells)
    print(line)  # last, as for run
    return _merged_outputs(merged.cells, merged.status, merged.complete,
                           ci.merged_suite_name(merged.name, merged.folder), given.junit_xml, given.fail_on,
                           waited.resubmit_command, line=line)


# ---- showing outcomes ----------------------------------------------------------------------------

def _check_ci_paths(junit_xml: Path | None, out: Path, resume: Path | None = None) -> None:
    """Every output path a command will write (--junit-xml, GITHUB_STEP_SUMMARY, the results folder --out,
    unless it resumes another), checked before the first run: a bad one is bad input, said in one line
    before an hour of measuring."""
    problems = ci.output_problems(junit_xml)
    if out is not None and resume is None:
        problem = ci.folder_problem(out)
        if problem:
            problems.append(f"--out {out}: {problem}")
    if problems:
        raise UserError(problems[0])


def _show_sweep(swept: service.SweepOutcome, junit_xml: Path | None, fail_on: frozenset[Verdict] | None = None,
                as_json: bool = False) -> int:
    """The table and summary (--json: the summary as JSON on stdout, the rest on stderr), then the CI
    outputs (--junit-xml, --fail-on: nightly has no --fail-on, its exit is the comparison's)."""
    ConsoleProgress.release_all()  # what was held (no cell started) comes before the outcome
    if swept.status == SweepStatus.INTERRUPTED:
        cut = [c.label for c in swept.cells if c.interrupted]
        print(f"\n{interrupted_how()}: {len(swept.cells) - len(cut)} cell(s) kept in {swept.results_file}"
              + (f"; {', '.join(cut)} cut short (its finished runs kept to read; measured again on resume)"
                 if cut else "") + "; no run started after it\n"
              f"resume with: {swept.resume_command}", file=sys.stderr)
        return interrupted_exit_code()
    print(f"results: {swept.results_file} (report: {swept.folder / REPORT_FILE})", file=sys.stderr)
    human = sys.stderr if as_json else sys.stdout  # --json: stdout is the one JSON object, nothing else
    print(render(swept.cells), file=human)
    print(file=human)
    todo = terminal_lines(swept.cells, {c.spec.key: function_evidence(swept.folder, c) for c in swept.cells
                                        if cell_comparison(c).new})
    if todo:  # report.md's first screen, one line per finding, most important first (issue 60.5)
        print("\n".join(todo) + "\n", file=human)
    line = summary_line(swept.cells, swept.summary or None)  # every output says this one line (issue 47.5)
    print(line, file=human)  # last, so `| tail -1` gives the answer
    if as_json:
        print(json.dumps(summary_json(swept.cells, swept.status, str(swept.results_file),
                                      str(swept.folder / REPORT_FILE), swept.boundaries, line), allow_nan=False))
    return _ci_outputs(swept.cells, ci.suite_name(swept.folder), junit_xml, fail_on,
                       report=swept.folder / REPORT_FILE, line=line)


def _ci_outputs(cells: list[CellResult], suite: str, junit_xml: Path | None, fail_on: frozenset[Verdict] | None,
                status: str = "", report: Path | None = None, line: str | None = None) -> int:
    """JUnit XML and GitHub's job summary when asked for; exit 1 when a cell's verdict is one --fail-on names.
    An output that cannot be written (its path was checked before the sweep; something changed since) is
    said, the others are still written, and the verdict's exit code wins: a regression stays 1, and
    otherwise it is 3 (the harness could not deliver what it was asked), never 2."""
    unwritten = []
    if junit_xml is not None:
        try:
            ci.write_junit(junit_xml, cells, suite, line)
            print(f"junit: {junit_xml}", file=sys.stderr)
        except ci.OutputFailed as exc:
            unwritten.append(str(exc))
    try:
        ci.append_step_summary(cells, suite, status=status, line=line)
    except ci.OutputFailed as exc:
        unwritten.append(str(exc))
    for problem in unwritten:
        print(f"harness: error: {problem}; the results folder has every cell", file=sys.stderr)
    fail_on = fail_on or frozenset()
    failed = ci.failing(cells, fail_on)
    if failed:
        print(f"harness: {ci.fail_line(failed, fail_on, report)}", file=sys.stderr)
        return ExitCode.REGRESSION
    return ExitCode.FAILURE if unwritten else ExitCode.OK


def _merged_outputs(cells: list[CellResult], status: str, complete: bool, suite: str, junit_xml: Path | None,
                    fail_on: frozenset[Verdict] | None, resubmit_command: str | None = None, line: str | None = None) -> int:
    """merge and submit --wait: the CI outputs of the merged cells. An incomplete merge (a shard missing or
    cut short) exits 3, as the harness's failure: nothing was decided for the cells it lacks. A verdict
    --fail-on names among the cells it has is still 1: that regression was measured."""
    code = _ci_outputs(cells, suite, junit_xml, fail_on, status="" if complete else status, line=line)
    if complete:
        return code
    print(f"harness: {status}" + (f"; re-submit with: {resubmit_command}" if resubmit_command else ""),
          file=sys.stderr)
    return code if code == ExitCode.REGRESSION else ExitCode.FAILURE


def _show_changes(changes: list[CellChange], baseline: Path) -> int:
    print(f"compared with {baseline}:")
    print(render_changes(changes))
    return exit_code(changes)


if __name__ == "__main__":
    sys.exit(main())
