"""No contradictory sentences (issue 47.5): a row reproduced only under --vary says what a start under the
factor loses, never `a hit saves ...` beside `reproduced`; the summary of misses under a factor names the
factor, not the program's own nondeterminism."""

from __future__ import annotations

import hashlib


from harness.core.records import replace
from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.findings import CellCost, CellVariation
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict
from harness.core.runs import RunRecord
from harness.core.factors import Factor
from harness.output.ci import junit_xml
from harness.verdicts.cell_facts import detail
from harness.verdicts.boundaries import release_boundaries
from harness.verdicts.factor_verdicts import judge_factor, verdict_with


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def logged(module: str, **components: str) -> LoggedKey:
    hashes = {name: h(value) for name, value in components.items()}
    return LoggedKey(module, f"{module}-{h(module + repr(sorted(hashes.items())))}", Outcome.WRITTEN, components=hashes)


def record(index: int, *keys: LoggedKey) -> RunRecord:
    return RunRecord(index, 7, 0, 0.1, [f"{k.key}-cache" for k in keys], keys=RunLog(list(keys)))


REFERENCE = record(1, logged("jit_f", computation="f", compile_options="/a"),
                   logged("jit_g", computation="g", compile_options="/a"))


def factor_only_cell(version: str = "0.5.0") -> CellResult:
    moved = record(9, logged("jit_f", computation="f", compile_options="/b"),
                   logged("jit_g", computation="g", compile_options="/b"))
    second = record(2, *[replace(k, outcome=Outcome.HIT) for k in REFERENCE.keys.keys])  # its fresh processes hit
    cell = CellResult(CellSpec(version, Platform.CPU, 8, None), Verdict.CLEAN,
                      {"jit_f": ["k"]}, runs=[REFERENCE, second], reason="jit_f: 1 key per run, the same in all 2 runs",
                      variation=CellVariation(1, 7, [judge_factor(Factor.CACHE_PATH, REFERENCE, moved, "copied to /b")]))
    cell.cost = CellCost(starts=2, lost_per_start_s=0.0, saved_per_start_s=6.64, modules=2, missed_modules=(),
                         each_start_missed=(), untimed_modules=(), first_run_s=6.7)
    cell.verdict, cell.reason = verdict_with(cell.verdict, cell.reason, cell.variation)
    return cell


def test_a_row_reproduced_under_vary_says_what_a_start_under_it_loses_not_what_a_hit_saves():
    cell = factor_only_cell()
    assert cell.verdict == Verdict.REPRODUCED
    said = detail(cell)
    assert "a hit saves" not in said, said
    assert "under --vary cache-path a start misses 2 of 2 modules: up to 6.64 s lost per start" in said
    assert "a hit saves" not in junit_xml([cell], "s").tostring().decode()


def test_misses_under_a_factor_on_every_release_are_not_the_programs_own_nondeterminism():
    line = release_boundaries([factor_only_cell("0.4.38"), factor_only_cell("0.5.0")]).line()
    assert "nondeterminism" not in line, line
    assert line.startswith("a start under --vary cache-path misses on every release measured, 0.4.38 to 0.5.0"), line


# ---- a folder the user sets on purpose is honoured (issue 47.5) --------------------------------------------

def test_jax_compilation_cache_dir_in_env_is_accepted_and_the_no_folder_note_goes(write):
    from harness.core.records import replace

    from harness.core.runs import RunCommand, ScriptCache
    from harness.inputs.config import parse_config
    from harness.verdicts.uncached import explain, user_sets_folder

    script = write("prog.py", "")
    config = parse_config({"name": "p", "repro": "prog.py", "jax_versions": ["0.4.31"],
                           "env": {"JAX_COMPILATION_CACHE_DIR": "/data/jax-cache"}}, base_dir=script.parent)
    assert config.env == (("JAX_COMPILATION_CACHE_DIR", "/data/jax-cache"),)
    key = LoggedKey("jit_f", "jit_f-" + "a" * 64, Outcome.WRITTEN, compile_time_s=0.02)
    run = RunRecord(1, 7, 0, 0.1, [key.key + "-cache"], keys=RunLog([key]), script_cache=ScriptCache())
    plain = CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), Verdict.CLEAN, {"jit_f": ["k"]}, runs=[run, run],
                       command=RunCommand(("prog.py",), {}, "/w"))
    assert "sets no cache folder" in explain(plain).as_you_run_it  # as before, without the user's folder
    cell = replace(plain, command=RunCommand(("prog.py",), {"JAX_COMPILATION_CACHE_DIR": "/data/jax-cache"}, "/w"))
    assert user_sets_folder(cell) and not user_sets_folder(plain)
    told = explain(cell).as_you_run_it
    assert "sets no cache folder" not in told and told.startswith("as you run it, nothing is written"), told


# ---- each row says its verdict's reason first; the as-it-runs note once ------------------------------------

def test_a_row_leads_with_its_reason_and_says_the_as_it_runs_note_once():
    from harness.output.ci import first_sentence

    note = "as you run it, nothing is cached: the script sets no cache folder, so JAX keeps no persistent cache"
    clean = CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), Verdict.CLEAN, {"jit_f": ["k"]},
                       reason="jit_f: 1 key per run, the same in all 4 runs", as_you_run_it=note)
    said = detail(clean)
    assert said.startswith("jit_f: 1 key per run, the same in all 4 runs; ") and said.count("as you run it") == 1
    reproduced = replace_verdict(clean, Verdict.REPRODUCED, "jit_f: a new key in run 2 (on disk and in JAX's log)")
    xml = junit_xml([reproduced], "s").tostring().decode()
    assert 'message="jit_f: a new key in run 2' in xml
    assert first_sentence(detail(reproduced)).startswith("jit_f: a new key in run 2")


def replace_verdict(cell: CellResult, verdict: Verdict, reason: str) -> CellResult:
    return replace(cell, verdict=verdict, reason=reason)
