"""--vary: the factors (pure), how a factor's run is judged, what it does to a cell's verdict, the host
folders a factor's run gets, what the backends are asked for, and the runner's factor runs against an
environment that keys like JAX 0.4.36-0.10.2 (the cache folder's path in the compile options)."""

import hashlib
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness.results.header import recorded_config
from harness.results.document import read_cell
from harness.cli.commands import main
from harness.inputs.config import Repro, parse_config
from harness.environments import factor_runs as varying
from harness.environments.base import Environment
from harness.environments.docker import CACHE_MOUNT, ELSEWHERE, SCRIPT_MOUNT, container_command, run_kwargs
from harness.environments.process import wrapped
from harness.core.errors import ConfigError
from harness.core.factors import ALL, OTHER_HOSTNAME, OTHER_TZ, OTHER_UID, Factor, FactorOutcome, RunVariation, parse_factors
from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.model import CellResult, CellSpec
from harness.core.findings import CellVariation
from harness.core.kinds import Platform, Verdict
from harness.core.runs import ProcessOutcome, Program, RunRecord
from harness.results.header import RecordedConfig, ResultsHeader
from harness.report.render import render_report
from harness.report.variation_section import variation_section
from harness.results.document import ResultsDocument, SweepStatus
from harness.measure.cell_runner import CellRunner
from harness.measure.seeds import PROBE_SCRIPT, SeedPlanner
from harness.core.confidence import SeedStrategy
from harness.inputs.process_variables import IR_DUMP_VAR
from harness.report.table import render, summary_json
from harness.output.ci import junit_xml
from harness.results.header import RecordedOptions
from harness.results.resume import check_same_sweep
from harness.core.errors import UserError
from harness.core.records import convert, plain
from harness.core.records import plain as as_json
from harness.verdicts.factor_verdicts import (as_planned_run, cannot_vary, counts_as_planned_run, judge_factor,
                                              moved_folder_column, moved_folder_finding, moved_folder_line, needs_control, not_judged,
                                              vary_column, verdict_with, why_not_varied, with_control,
                                              with_planned_control, without_planned_control)

SPEC = CellSpec("0.5.0", Platform.CPU, 8, None)


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def logged(module: str, **components: str) -> LoggedKey:
    hashes = {name: h(value) for name, value in components.items()}
    key = f"{module}-{h(module + repr(sorted(hashes.items())))}"
    return LoggedKey(module, key, Outcome.WRITTEN, components=hashes)


def record(index: int, *keys: LoggedKey, ok: bool = True, listed: bool = True) -> RunRecord:
    return RunRecord(index, 7, 0 if ok else 1, 0.1, [f"{k.key}-cache" for k in keys] if listed else [],
                     reason="" if ok else "exit code 1", keys=RunLog(list(keys)) if keys else None)


REFERENCE = record(1, logged("jit_f", computation="f", compile_options="/a"),
                   logged("jit_g", computation="g", compile_options="/a"))


# ---- the factors ------------------------------------------------------------------------------------

def test_a_reference_run_that_computed_no_key_is_not_varied():
    """mypy found `known` tested as a method (always true): such a reference was varied all the same."""
    assert why_not_varied(REFERENCE, Verdict.CLEAN) == ""
    nothing = RunRecord(1, 7, 0, 0.1, [], keys=RunLog([]))
    assert why_not_varied(nothing, Verdict.CLEAN) == "the reference run (run 1) computed no key"


def test_factors_parse_in_order_once_and_all_is_every_factor():
    assert parse_factors("cache-path,cwd,cache-path") == (Factor.CACHE_PATH, Factor.CWD)
    assert parse_factors(["tz", "locale"]) == (Factor.TZ, Factor.LOCALE)
    assert parse_factors(ALL) == tuple(Factor)
    for bad in ("cache_path", "", "cwd,nope"):
        with pytest.raises(ValueError, match="factor"):
            parse_factors(bad)


def test_config_vary_key_is_validated_and_kept_in_the_identity(tmp_path):
    base = {"name": "x", "repro": "shard_map_grad", "jax_versions": ["0.4.31"]}
    config = parse_config({**base, "vary": ["cache-path", "tz"]})
    assert config.vary == (Factor.CACHE_PATH, Factor.TZ)
    assert as_json(recorded_config(config))["vary"] == ["cache-path", "tz"]
    assert "vary" not in as_json(recorded_config(parse_config(base)))  # a sweep without it keeps its identity
    with pytest.raises(ConfigError, match="vary: unknown factor 'hostnme'"):
        parse_config({**base, "vary": ["hostnme"]})
    with pytest.raises(ConfigError, match="vary: must be a list"):
        parse_config({**base, "vary": 3})


def test_a_bad_vary_option_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["check", "examples/stable_script.py", "--vary", "cache-path,moon"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown factor 'moon'" in err[0]


# ---- judging one factor's run -------------------------------------------------------------------------

def test_the_same_keys_again_is_a_hit():
    again = record(9, *REFERENCE.keys.keys, listed=False)
    result = judge_factor(Factor.CWD, REFERENCE, again)
    assert result.outcome == FactorOutcome.HIT and not result.missed
    assert result.reason == "every module the reference computed was hit (2 of 2)"


def test_a_miss_names_the_moved_component_and_the_modules():
    moved = record(9, logged("jit_f", computation="f", compile_options="/b"),
                   logged("jit_g", computation="g", compile_options="/b"))
    result = judge_factor(Factor.CACHE_PATH, REFERENCE, moved, "the cache folder copied to /b")
    assert result.outcome == FactorOutcome.MISS and result.missed
    assert result.components == ["compile_options"] and result.modules == ["jit_f", "jit_g"]
    assert result.reason == "compile_options moved, 2 of 2 modules"


def test_a_miss_only_in_the_component_meant_for_the_factor_is_keyed_by_design():
    ref = record(1, logged("jit_f", computation="f", compression="zlib"))
    other = record(9, logged("jit_f", computation="f", compression="zstandard"))
    result = judge_factor(Factor.COMPRESSION, ref, other)
    assert result.outcome == FactorOutcome.KEYED_BY_DESIGN and not result.missed
    assert "hosts sharing a cache must agree on it (compression moved, 1 of 1 module)" == result.reason
    # the same component moving under another factor is a miss: nothing meant it to
    assert judge_factor(Factor.HOME, ref, other).outcome == FactorOutcome.MISS
    # and compression with another component moving too is a miss
    both = record(9, logged("jit_f", computation="f2", compression="zstandard"))
    assert judge_factor(Factor.COMPRESSION, ref, both).outcome == FactorOutcome.MISS


def test_a_failed_run_or_other_modules_are_not_judged():
    failed = record(9, ok=False)
    assert judge_factor(Factor.CWD, REFERENCE, failed).outcome == FactorOutcome.NOT_JUDGED
    other = record(9, logged("jit_h", computation="h", compile_options="/a"))
    result = judge_factor(Factor.CWD, REFERENCE, other)
    assert result.outcome == FactorOutcome.NOT_JUDGED and "other modules" in result.reason


def test_without_logs_an_entry_written_by_the_factor_run_is_a_miss():
    ref = RunRecord(1, 7, 0, 0.1, [f"jit_f-{'a' * 64}"])
    hit = RunRecord(9, 7, 0, 0.1, [])
    miss = RunRecord(9, 7, 0, 0.1, [f"jit_f-{'b' * 64}"])
    assert judge_factor(Factor.TZ, ref, hit).outcome == FactorOutcome.HIT
    result = judge_factor(Factor.TZ, ref, miss)
    assert result.outcome == FactorOutcome.MISS and "names no key components" in result.reason


# ---- the cell's verdict ------------------------------------------------------------------------------

def _variation(*results):
    return CellVariation(1, 7, list(results))


def test_a_clean_cell_missing_under_a_factor_is_reproduced_naming_it():
    moved = record(9, logged("jit_f", computation="f", compile_options="/b"),
                   logged("jit_g", computation="g", compile_options="/b"))
    variation = _variation(judge_factor(Factor.CACHE_PATH, REFERENCE, moved),
                           judge_factor(Factor.CWD, REFERENCE, record(10, *REFERENCE.keys.keys)))
    verdict, reason = verdict_with(Verdict.CLEAN, "jit_f: 1 key per run, the same in all 8 runs", variation)
    assert verdict == Verdict.REPRODUCED
    assert reason == ("misses when the cache folder is reached by another path "
                      "(compile_options moved, 2 of 2 modules)")
    # reproduced by its seeds: stays, the factor's miss added
    verdict, reason = verdict_with(Verdict.REPRODUCED, "jit_f: a new key in run 2", variation)
    assert verdict == Verdict.REPRODUCED and reason.startswith("jit_f: a new key in run 2; also misses when")
    # error and unsupported cells are unchanged
    assert verdict_with(Verdict.ERROR, "boom", variation) == (Verdict.ERROR, "boom")
    # no --vary: exactly as before
    assert verdict_with(Verdict.CLEAN, "fine", None) == (Verdict.CLEAN, "fine")


def test_keyed_by_design_and_hits_keep_a_cell_clean():
    ref = record(1, logged("jit_f", computation="f", compression="zlib"))
    variation = _variation(judge_factor(Factor.COMPRESSION, ref, record(9, logged("jit_f", computation="f",
                                                                                   compression="zstandard"))))
    assert verdict_with(Verdict.CLEAN, "fine", variation) == (Verdict.CLEAN, "fine")
    assert vary_column(variation) == "keyed by design: compression"


def test_a_control_run_that_misses_too_blames_no_factor():
    moved = record(9, logged("jit_f", computation="f", compile_options="/b"),
                   logged("jit_g", computation="g", compile_options="/b"))
    variation = _variation(judge_factor(Factor.CACHE_PATH, REFERENCE, moved))
    with_control(variation, REFERENCE, record(10, logged("jit_f", computation="f@0x7f", compile_options="/a"),
                                              REFERENCE.keys.keys[1]))
    assert variation.factors[0].outcome == FactorOutcome.NOT_JUDGED and not variation.missed()
    verdict, reason = verdict_with(Verdict.CLEAN, "fine", variation)
    assert verdict == Verdict.REPRODUCED and "the keys move without any factor" in reason
    # a control that hits leaves the factor's miss standing
    variation = _variation(judge_factor(Factor.CACHE_PATH, REFERENCE, moved))
    with_control(variation, REFERENCE, record(10, *REFERENCE.keys.keys))
    assert [f.factor for f in variation.missed()] == [Factor.CACHE_PATH]


def test_a_cell_with_its_variation_round_trips_and_renders():
    moved = record(9, logged("jit_f", computation="f", compile_options="/b"))
    cell = CellResult(SPEC, Verdict.CLEAN, {"jit_f": ["k"]}, runs=[REFERENCE], reason="fine",
                      variation=_variation(judge_factor(Factor.CACHE_PATH, REFERENCE, moved, "copied to /b")))
    cell.verdict, cell.reason = verdict_with(cell.verdict, cell.reason, cell.variation)
    again = read_cell(as_json(cell))
    assert as_json(again.variation) == as_json(cell.variation)
    assert again.variation.factors[0].run.keys.keys[0].components == moved.keys.keys[0].components
    header = [word.strip() for word in render([again]).splitlines()[0].split("|")]
    assert "miss: cache-path" in render([again]) and header[-3:] == ["vary", "detail", ""]
    plain = render([CellResult(SPEC, Verdict.CLEAN, {}, runs=[REFERENCE])])
    assert "vary" not in plain.splitlines()[0]  # no column without --vary
    document = ResultsDocument(ResultsHeader(config=RecordedConfig(name="x", repro="/s.py", source="harness check")),
                               [again], SweepStatus.COMPLETE)
    report = render_report(document, [again], {})
    assert "## Environment variation" in report
    assert "| cache-path | miss | compile_options | 1 of 2 |" in report
    assert 'cp -r "$JAX_COMPILATION_CACHE_DIR" "$JAX_COMPILATION_CACHE_DIR-elsewhere"' in report
    assert "--vary cache-path" in report


# ---- the host folders of a factor's run ----------------------------------------------------------------

def test_prepare_makes_each_factors_change(tmp_path):
    script_dir = tmp_path / "proj"
    script_dir.mkdir()
    (script_dir / "train.py").write_text("print(1)\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"jit_f-{'a' * 64}-cache").write_text("x")
    program = Program(script_dir / "train.py", ("--steps", "1"))
    run = varying.prepare(Factor.CACHE_PATH, program, cache, tmp_path / "w1", {})
    assert run.cache_dir != cache and sorted(p.name for p in run.cache_dir.iterdir()) == [f"jit_f-{'a' * 64}-cache"]
    run = varying.prepare(Factor.CWD, program, cache, tmp_path / "w2", {})
    assert run.program.workdir != script_dir and run.program.workdir.is_dir() and run.program.script == program.script
    run = varying.prepare(Factor.SCRIPT_PATH, program, cache, tmp_path / "w3", {})
    assert run.program.script != program.script and run.program.script.read_text() == "print(1)\n"
    assert run.program.args == ("--steps", "1") and run.program.workdir == run.program.script.parent
    assert varying.prepare(Factor.TZ, program, cache, tmp_path / "w4", {}).variation.env == {"TZ": OTHER_TZ}
    home = dict(varying.prepare(Factor.HOME, program, cache, tmp_path / "w5", {}).variation.env)["HOME"]
    assert Path(home).is_dir() and home != os.environ.get("HOME")
    assert varying.prepare(Factor.ENV_ORDER, program, cache, tmp_path / "w6", {}).variation.reverse_env


def test_the_other_locale_is_never_the_reference_runs():
    assert varying.other_locale({"LANG": "C.UTF-8"}) == "POSIX"
    assert varying.other_locale({"LC_ALL": "C.utf8", "LANG": "de_DE.UTF-8"}) == "POSIX"
    assert varying.other_locale({"LANG": "en_US.UTF-8"}) == "C.UTF-8"
    assert varying.other_locale({}) == "C.UTF-8"


def test_what_cannot_be_varied_says_why(tmp_path, monkeypatch):
    module = Program(None, (), tmp_path, module="mypkg.train")
    with pytest.raises(varying.CannotVary, match="python -m finds the module"):
        varying.prepare(Factor.CWD, module, tmp_path, tmp_path / "w", {})
    monkeypatch.setattr(varying, "MAX_COPY_FILES", 2)
    big = tmp_path / "big"
    big.mkdir()
    for i in range(4):
        (big / f"f{i}.py").write_text("")
    with pytest.raises(varying.CannotVary, match="too large to copy"):
        varying.prepare(Factor.SCRIPT_PATH, Program(big / "f0.py"), tmp_path, tmp_path / "w2", {})
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    (closed / "s.py").write_text("")
    assert "not reachable by another user" in varying.unreachable_by_others(closed / "s.py")


def test_the_wrappers_change_the_user_and_the_host_name():
    argv = ["python", "s.py"]
    assert wrapped(argv, None) == argv
    user = wrapped(argv, RunVariation(Factor.USER, uid=OTHER_UID))
    assert user[0].endswith("setpriv") and f"--reuid={OTHER_UID}" in user and user[-2:] == argv
    host = wrapped(argv, RunVariation(Factor.HOSTNAME, hostname=OTHER_HOSTNAME))
    assert host[0].endswith("unshare") and "--uts" in host and OTHER_HOSTNAME in host and host[-2:] == argv


def test_containers_see_the_moved_folder_at_another_path(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("")
    plain = run_kwargs(Program(script), {}, tmp_path, Platform.CPU, "0:0")
    moved = run_kwargs(Program(script), {}, tmp_path, Platform.CPU, "0:0",
                       variation=RunVariation(Factor.CACHE_PATH))
    assert plain["environment"]["JAX_COMPILATION_CACHE_DIR"] == CACHE_MOUNT
    assert moved["environment"]["JAX_COMPILATION_CACHE_DIR"] == CACHE_MOUNT + ELSEWHERE
    assert {m["Target"] for m in moved["mounts"]} >= {CACHE_MOUNT + ELSEWHERE}
    copied = RunVariation(Factor.SCRIPT_PATH)
    assert container_command(Program(script), copied)[5] == f"{SCRIPT_MOUNT}{ELSEWHERE}/s.py"
    assert run_kwargs(Program(script), {}, tmp_path, Platform.CPU, "0:0", variation=copied)["working_dir"] == \
        SCRIPT_MOUNT + ELSEWHERE
    other = run_kwargs(Program(script), {"A": "1", "B": "2"}, tmp_path, Platform.CPU, "0:0",
                       variation=RunVariation(Factor.USER, uid=OTHER_UID))
    assert other["user"] == f"{OTHER_UID}:65534"
    named = run_kwargs(Program(script), {}, tmp_path, Platform.CPU, "0:0",
                       variation=RunVariation(Factor.HOSTNAME, hostname=OTHER_HOSTNAME))
    assert named["hostname"] == OTHER_HOSTNAME and "hostname" not in plain
    order = run_kwargs(Program(script), {"A": "1", "B": "2"}, tmp_path, Platform.CPU, "0:0",
                       variation=RunVariation(Factor.ENV_ORDER, reverse_env=True))
    same = run_kwargs(Program(script), {"A": "1", "B": "2"}, tmp_path, Platform.CPU, "0:0")
    assert list(order["environment"]) == list(reversed(list(same["environment"])))


# ---- the runner's factor runs ---------------------------------------------------------------------------

class PathKeyedEnvironment(Environment):
    """Logs and writes keys like JAX 0.4.36-0.10.2: the cache folder's path is in the compile options,
    the time zone in nothing; `moving` makes every run's computation differ, its seed's control's too (random
    constants closed over: the program's own randomness, new input).
    `path_keyed=False`: keys like 0.4.31 (no path in them); `seed_keyed`: the hash seeds whose module differs
    (a set's order baked into it)."""

    jax_version = "0.5.0"

    def __init__(self, cannot=(), moving=False, path_keyed=True, seed_keyed=()):
        self.cannot, self.moving, self.runs = set(cannot), moving, []
        self.path_keyed, self.seed_keyed = path_keyed, frozenset(seed_keyed)

    def cannot_vary(self, factor):
        return "not here" if factor in self.cannot else ""

    def run(self, program, env, cache_dir, log_path, timeout_s, variation=None):
        self.runs.append((program, variation))
        computation = f"f{len(self.runs)}" if self.moving else "f"
        if int(env.get("PYTHONHASHSEED", "0")) in self.seed_keyed:
            computation += "-other-order"
        components = {"computation": h(computation), "compile_options": h(str(cache_dir) if self.path_keyed else "/c"),
                      "compression": h("zlib")}
        key = h(repr(sorted(components.items())))
        lines = [f"DEBUG:jax._src.cache_key:get_cache_key hash of serialized {n}: {v}" for n, v in components.items()]
        lines.append(f"DEBUG:jax._src.cache_key:get_cache_key hash after serializing compression: {key}")
        entry = cache_dir / f"jit_f-{key}-cache"
        if entry.exists():
            entry.read_bytes()  # (as JAX loads it: the folder's watch sees the read)
            lines.append(f"DEBUG:jax._src.compiler:Persistent compilation cache hit for 'jit_f' with key 'jit_f-{key}'")
        else:
            lines.append(f"DEBUG:jax._src.compiler:PERSISTENT COMPILATION CACHE MISS for 'jit_f' with key 'jit_f-{key}'")
            lines.append(f"DEBUG:jax._src.compiler:Writing jit_f to persistent compilation cache with key 'jit_f-{key}'")
            entry.write_text("x")
        log_path.write_text("\n".join(lines) + "\n")
        return ProcessOutcome(0, 0.01)

    def describe(self):
        return {"backend": "path-keyed"}


def _measure(tmp_path, environment, vary):
    script = tmp_path / "s.py"
    script.write_text("")
    runner = CellRunner(environment, Repro("s", script, builtin=False), 10, vary=vary)
    return runner.run(SPEC, [11, 12, 13], tmp_path / "cache", tmp_path / "logs", results_root=tmp_path)


def test_cache_path_misses_where_the_path_is_keyed_and_the_others_hit(tmp_path):
    environment = PathKeyedEnvironment(cannot={Factor.USER})
    cell = _measure(tmp_path, environment, (Factor.CACHE_PATH, Factor.TZ, Factor.CWD, Factor.USER))
    assert [r.seed for r in cell.runs] == [11, 12, 13]  # the cell's own runs as without --vary
    outcomes = {f.factor: f.outcome for f in cell.variation.factors}
    assert outcomes == {Factor.CACHE_PATH: FactorOutcome.MISS, Factor.TZ: FactorOutcome.HIT,
                        Factor.CWD: FactorOutcome.HIT, Factor.USER: FactorOutcome.CANNOT_VARY}
    assert cell.variation.factors[0].components == ["compile_options"]
    assert all(f.run is None or f.run.seed == 11 for f in cell.variation.factors)  # the reference's seed
    assert cell.variation.control is not None and cell.variation.control.seed == 11  # a factor missed
    assert cell.verdict == Verdict.REPRODUCED
    assert cell.reason == ("misses when the cache folder is reached by another path "
                           "(compile_options moved, 1 of 1 module)")
    assert len(cell.listing) == 1  # the factors' entries are not left in the cell's folder
    # one run per factor that could be varied (user could not), then the control (no variation)
    varied = [v.factor for _, v in environment.runs if v is not None]
    assert varied == [Factor.CACHE_PATH, Factor.TZ, Factor.CWD] and environment.runs[-1][1] is None


def test_factors_that_all_hit_cost_one_run_each_and_no_control(tmp_path):
    environment = PathKeyedEnvironment()
    cell = _measure(tmp_path, environment, (Factor.TZ, Factor.LOCALE, Factor.HOME))
    assert cell.verdict == Verdict.CLEAN and cell.variation.control is None
    assert [v.factor for _, v in environment.runs if v is not None] == [Factor.TZ, Factor.LOCALE, Factor.HOME]
    assert environment.runs[-1][1] is not None  # no control run after them


def test_keys_that_move_in_every_run_are_not_blamed_on_a_factor(tmp_path):
    cell = _measure(tmp_path, PathKeyedEnvironment(moving=True), (Factor.TZ,))
    assert cell.verdict == Verdict.NEW_INPUT  # by its own runs and their controls, as without --vary
    assert not cell.variation.missed()


def test_a_log_that_claims_hits_never_hides_an_entry_the_run_wrote():
    # its log says the reference's keys again (a cut or faked log), but a new entry appeared meanwhile
    claims = record(9, *REFERENCE.keys.keys, listed=False)
    claims.new_entries = [f"jit_f-{'c' * 64}-cache"]
    assert judge_factor(Factor.HOME, REFERENCE, claims).outcome == FactorOutcome.MISS
    # and a hit on a key that never was in the folder is not believed
    faked = record(9, *REFERENCE.keys.keys, listed=False)
    for key in faked.keys.keys:
        key.outcome = Outcome.HIT
    on_disk = frozenset({REFERENCE.keys.keys[1].key})
    result = judge_factor(Factor.HOME, REFERENCE, faked, on_disk=on_disk)
    assert result.outcome != FactorOutcome.HIT


def test_a_script_path_copy_leaves_out_the_results_cache_and_environment_folders(tmp_path):
    """Issue 32.7: run from a project folder, the results folder is inside the script's folder; copying it
    copied the copy into itself until `File name too long`."""
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "train.py").write_text("print(1)\n")
    (project / "pkg" / "util.py").write_text("")
    results = project / "results" / "20260101-t"
    work = results / "logs" / "jax-0.4.31" / "vary-script-path"
    cache = results / "caches" / "jax-0.4.31"
    cache.mkdir(parents=True)
    (results / "results.json").write_text("{}")
    earlier = project / "results" / "20251231-t"
    earlier.mkdir()
    (earlier / "results.json").write_text("{}")
    (earlier / "table.md").write_text("| jax |\n")  # the pair every release writes
    mine = project / "data"  # a user's own results.json alone is the script's input: copied
    mine.mkdir()
    (mine / "results.json").write_text("[]")
    (project / "env" / "lib").mkdir(parents=True)  # a venv under any name
    (project / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    own_cache = project / "jax-cache"  # a cache folder given outside the results folder
    own_cache.mkdir()
    (own_cache / f"jit_f-{'a' * 64}-cache").write_text("x")
    run = varying.prepare(Factor.SCRIPT_PATH, Program(project / "train.py", (), project), own_cache, work, {},
                          (results,))
    copy = run.program.script.parent
    copied = sorted(str(p.relative_to(copy)) for p in copy.rglob("*"))
    assert copied == ["data", "data/results.json", "pkg", "pkg/util.py", "train.py"], copied
    assert run.program.workdir == copy
    module = varying.prepare(Factor.SCRIPT_PATH, Program(None, (), project, module="pkg.util"), own_cache, work,
                             {}, (results,))
    assert (module.program.workdir / "pkg" / "util.py").is_file()
    assert not (module.program.workdir / "results" / "20260101-t").exists()


def test_results_folders_do_not_count_towards_the_copy_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(varying, "MAX_COPY_FILES", 3)
    project = tmp_path / "proj"
    results = project / "results" / "r"
    results.mkdir(parents=True)
    (project / "s.py").write_text("")
    (results / "results.json").write_text("{}")
    for i in range(10):
        (results / f"log{i}").write_text("")
    run = varying.prepare(Factor.SCRIPT_PATH, Program(project / "s.py"), results / "cache", results / "work", {},
                          (results,))
    assert run.program.script.read_text() == ""


def test_script_path_with_the_results_folder_inside_the_scripts_folder(tmp_path):
    """The default when run from a project folder: `results/` is beside the script (here the logs are)."""
    cell = _measure(tmp_path, PathKeyedEnvironment(), (Factor.SCRIPT_PATH, Factor.TZ))
    found = {f.factor: f for f in cell.variation.factors}
    assert found[Factor.SCRIPT_PATH].outcome == FactorOutcome.HIT, found[Factor.SCRIPT_PATH].reason
    copy = tmp_path / "logs" / "vary-script-path" / "script" / tmp_path.name
    assert (copy / "s.py").is_file() and not (copy / "logs").exists() and not (copy / "cache").exists()


def test_a_factor_whose_folders_cannot_be_made_is_not_judged_and_the_sweep_goes_on(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    os.mkfifo(project / "a-pipe")  # shutil copies no named pipe: the copy fails
    script = project / "s.py"
    script.write_text("")
    runner = CellRunner(PathKeyedEnvironment(), Repro("s", script, builtin=False), 10,
                        vary=(Factor.SCRIPT_PATH, Factor.TZ))
    cell = runner.run(SPEC, [11, 12], tmp_path / "cache", tmp_path / "logs", results_root=tmp_path)
    found = {f.factor: f for f in cell.variation.factors}
    assert found[Factor.SCRIPT_PATH].outcome == FactorOutcome.NOT_JUDGED
    assert "a-pipe" in found[Factor.SCRIPT_PATH].reason and "could not be made" in found[Factor.SCRIPT_PATH].reason
    assert found[Factor.TZ].outcome == FactorOutcome.HIT  # the next factor still ran
    assert cell.verdict == Verdict.CLEAN and "script-path not judged (its folders could not be made" in cell.reason
    assert vary_column(cell.variation) == "1 hit; not judged: script-path"
    report = "\n".join(variation_section(ResultsHeader(), [cell]))
    assert "| script-path | not judged |" in report and "its folders could not be made" in report


# ---- harness check's moved folder (issue 47 item 3): the cache-path run beside the verdict ----------------

def test_the_moved_folders_column_and_line_say_what_its_run_found():
    moved_all = record(9, logged("jit_f", computation="f", compile_options="/b"),
                       logged("jit_g", computation="g", compile_options="/b"))
    missed = judge_factor(Factor.CACHE_PATH, REFERENCE, moved_all)
    assert moved_folder_column(missed) == "every module missed (compile_options)"
    assert moved_folder_line(missed) == "moved folder: every module missed (compile_options)"
    one = judge_factor(Factor.CACHE_PATH, REFERENCE, record(9, logged("jit_f", computation="f", compile_options="/b"),
                                                            REFERENCE.keys.keys[1]))
    assert moved_folder_column(one) == "1 of 2 modules missed (compile_options)"
    hit = judge_factor(Factor.CACHE_PATH, REFERENCE, record(9, *REFERENCE.keys.keys))
    assert moved_folder_line(hit) == "moved folder: hit"
    # where it could not be made or judged: said, with why, never a guess
    assert moved_folder_line(cannot_vary(Factor.CACHE_PATH, "a multi-process cell's runs are jobs")) == (
        "moved folder: not made (a multi-process cell's runs are jobs)")
    assert moved_folder_column(not_judged(Factor.CACHE_PATH, "its run failed")) == "not judged"
    # not planned (an error cell, --no-moved-folder): empty
    assert moved_folder_column(None) == "-" and moved_folder_line(None) == ""


def test_the_moved_folder_says_whether_the_folders_path_is_in_the_keys_on_the_release_measured():
    moved_all = record(9, logged("jit_f", computation="f", compile_options="/b"),
                       logged("jit_g", computation="g", compile_options="/b"))
    assert moved_folder_finding(judge_factor(Factor.CACHE_PATH, REFERENCE, moved_all)) == (
        "moved folder: every module missed (compile_options): the cache folder's path is in the keys on this release")
    assert moved_folder_finding(judge_factor(Factor.CACHE_PATH, REFERENCE, record(9, *REFERENCE.keys.keys))) == (
        "moved folder: hit: the cache folder's path is not in the keys on this release")
    # one module of two missed, or another component moved: it shows neither
    one = judge_factor(Factor.CACHE_PATH, REFERENCE, record(9, logged("jit_f", computation="f", compile_options="/b"),
                                                            REFERENCE.keys.keys[1]))
    assert moved_folder_finding(one) == moved_folder_line(one)
    computed = record(9, logged("jit_f", computation="x", compile_options="/b"),
                      logged("jit_g", computation="y", compile_options="/b"))
    assert "path" not in moved_folder_finding(judge_factor(Factor.CACHE_PATH, REFERENCE, computed))
    assert moved_folder_finding(None) == ""


def _measure_moved(tmp_path, environment, vary=()):
    script = tmp_path / "s.py"
    script.write_text("")
    runner = CellRunner(environment, Repro("s", script, builtin=False), 10, vary=vary, moved_folder=True)
    return runner.run(SPEC, [11, 12, 13], tmp_path / "cache", tmp_path / "logs", results_root=tmp_path)


def test_a_clean_cell_whose_moved_folder_misses_stays_clean_for_one_run_more(tmp_path):
    environment = PathKeyedEnvironment()
    cell = _measure_moved(tmp_path, environment)
    assert cell.verdict == Verdict.CLEAN and cell.variation is None  # the fresh processes' verdict, unchanged
    moved = cell.moved_folder
    assert moved.factor == Factor.CACHE_PATH and moved.outcome == FactorOutcome.MISS
    assert moved.components == ["compile_options"] and moved.run.seed == 11  # the reference's seed
    # one run more, and no control: the clean cell's own later runs already hit in the plain folder
    assert [v.factor for _, v in environment.runs if v] == [Factor.CACHE_PATH]
    assert environment.runs[-1][1].factor == Factor.CACHE_PATH
    again = read_cell(as_json(cell))
    assert as_json(again.moved_folder) == plain(moved)
    table = render([again])
    assert "moved folder" in table.splitlines()[0] and "every module missed (compile_options)" in table
    assert "| clean " in table
    (summarised,) = summary_json([again], SweepStatus.COMPLETE, "r.json", "report.md")["cells"]
    assert summarised["moved_folder"] == "every module missed (compile_options)"
    case = junit_xml([again], "check-s").tostring().decode()
    assert "moved folder: every module missed (compile_options)" in case and "<failure" not in case
    document = ResultsDocument(ResultsHeader(config=RecordedConfig(name="x", repro="/s.py", source="harness check")),
                               [again], SweepStatus.COMPLETE)
    report = render_report(document, [again], {})
    assert "## Moved cache folder" in report and "moved folder: every module missed (compile_options)" in report
    assert 'JAX_COMPILATION_CACHE_DIR="$JAX_COMPILATION_CACHE_DIR-elsewhere"' in report


def test_a_moved_folder_miss_on_keys_that_move_anyway_is_not_blamed_on_the_path(tmp_path):
    environment = PathKeyedEnvironment(moving=True)
    cell = _measure_moved(tmp_path, environment)
    assert cell.verdict == Verdict.NEW_INPUT  # by its own runs and their controls
    # its keys move by themselves: a control run (the plain folder, the same seed) decides, and misses too
    assert environment.runs[-2][1].factor == Factor.CACHE_PATH and environment.runs[-1][1] is None
    assert cell.moved_folder.outcome == FactorOutcome.NOT_JUDGED
    assert "the keys move without any factor" in cell.moved_folder.reason


def test_an_explicit_vary_cache_path_keeps_its_verdict_and_is_the_moved_folders_run(tmp_path):
    environment = PathKeyedEnvironment()
    cell = _measure_moved(tmp_path, environment, vary=(Factor.CACHE_PATH,))
    assert cell.verdict == Verdict.REPRODUCED  # as --vary cache-path always made it
    assert cell.moved_folder is cell.variation.factors[0]  # one run, said in both places
    assert [v.factor for _, v in environment.runs if v is not None] == [Factor.CACHE_PATH]


class BesideRun2Environment(PathKeyedEnvironment):
    """Run 2 (seed 12) and the moved folder's run each wait for the other to start: with two slots they must run
    at once (issue 51 item 7), or the wait times out and the run fails. Run 2 fails when `failing`."""

    def __init__(self, moving=False, failing=False):
        super().__init__(moving=moving)
        self.failing, self.together = failing, threading.Barrier(2, timeout=20)
        self.moved_folder_held: list[str] = []

    def run(self, program, env, cache_dir, log_path, timeout_s, variation=None):
        moved = variation is not None and variation.factor == Factor.CACHE_PATH
        if moved:
            self.moved_folder_held = sorted(p.name for p in cache_dir.iterdir())
        if moved or (variation is None and env.get("PYTHONHASHSEED") == "12" and "seed-control" not in log_path.name):
            self.together.wait()
            if self.failing and not moved:
                log_path.write_text("Traceback: boom\n")
                return ProcessOutcome(1, 0.01)
        return super().run(program, env, cache_dir, log_path, timeout_s, variation)


def _moved_side_by_side(tmp_path, environment, alone):
    script = tmp_path / "s.py"
    script.write_text("")
    cells = []
    for at_once, env in ((2, environment), (1, alone)):
        runner = CellRunner(env, Repro("s", script, builtin=False), 10, at_once=at_once, moved_folder=True)
        cells.append(runner.run(SPEC, [11, 12, 13], tmp_path / f"cache{at_once}", tmp_path / f"logs{at_once}",
                                results_root=tmp_path, stop_when_reproduced=True))  # as harness check does
    return cells


def _said(cell):
    moved = cell.moved_folder
    said = None if moved is None else (moved.outcome, moved.components)
    return cell.verdict, [(r.index, r.seed) for r in cell.runs], said


@pytest.mark.parametrize("moving", [False, True], ids=["clean", "reproduced at run 2"])
def test_with_two_slots_the_moved_folder_runs_beside_run_2_and_says_what_it_says_after_the_runs(tmp_path, moving):
    beside = BesideRun2Environment(moving=moving)
    early, late = _moved_side_by_side(tmp_path, beside, PathKeyedEnvironment(moving=moving))
    # beside run 2 it has run 3's seed, and run 3 is made again in the cell's own folder (the path is keyed): the
    # same runs and the same finding as the moved run after the cell's runs with run 1's seed (one slot)
    assert early.moved_folder.run.seed == 13 and early.moved_folder.planned_run == 3
    assert late.moved_folder.run.seed == 11 and not late.moved_folder.planned_run
    assert early.verdict == (Verdict.NEW_INPUT if moving else Verdict.CLEAN)
    # its folder is a copy of what run 1 left: run 1's entry alone (run 2 had not written)
    assert len(beside.moved_folder_held) == 1 and beside.moved_folder_held[0] in early.runs[0].new_entries
    if not moving:
        assert _said(early) == _said(late)
        return
    # the cell stopped at run 2's new key, then run 1's seed again moved it again (the program's own randomness:
    # new input), so its planned run 3 was made: the moved run, beside run 2 with run 3's seed, is judged by run 3
    # made again in the cell's own folder, which missed too, so the path is not blamed, as the late one's control
    # (another run) did not blame it
    assert _said(early) == _said(late) == (Verdict.NEW_INPUT, [(1, 11), (2, 12), (3, 13)],
                                           (FactorOutcome.NOT_JUDGED, ["computation", "compile_options"]))
    assert early.moved_folder.reason.endswith("run 3, seed 13 again in the cell's own folder, missed too (computation "
                                              "moved, 1 of 1 module): the seed or the program moved the keys, so "
                                              "whether the path moves them was not measured")
    assert [len(c.controls) for c in (early, late)] == [1, 1]  # one control of run 1's seed decided it: certain


def test_a_moved_folder_run_beside_a_run_that_fails_is_dropped_as_an_error_cell_has_none(tmp_path):
    early, late = _moved_side_by_side(tmp_path, BesideRun2Environment(failing=True), FailingSecondRun())
    assert _said(early) == _said(late)
    assert early.moved_folder is None and early.verdict == Verdict.ERROR


class ProbeBeforeMovedEnvironment(PathKeyedEnvironment):
    """Each run lowers the recorded 0.4.28 module (a set of mesh names: run 1's seed probe follows, this Python for
    real); the order of the probe and the runs is kept."""

    def __init__(self):
        super().__init__()
        self.order: list[str] = []

    def run(self, program, env, cache_dir, log_path, timeout_s, variation=None):
        if program.script == PROBE_SCRIPT:
            self.order.append("probe")
            with open(log_path, "w") as log:
                done = subprocess.run([sys.executable, str(program.script), *program.args], stdout=log, check=False)
            return ProcessOutcome(done.returncode, 0.01)
        self.order.append(f"moved {env['PYTHONHASHSEED']}" if variation is not None else env["PYTHONHASHSEED"])
        if IR_DUMP_VAR in env:
            shutil.copytree(Path(__file__).parents[1] / "fixtures" / "ir_dump" / "run-01.ir", env[IR_DUMP_VAR],
                            dirs_exist_ok=True)
        return super().run(program, env, cache_dir, log_path, timeout_s, variation)


@pytest.mark.parametrize("path_keyed", [False, True], ids=["0.4.31", "0.10.2"])
def test_the_moved_run_has_run_3s_seed_as_run_1s_probe_chose_it(tmp_path, path_keyed):
    script = tmp_path / "s.py"
    script.write_text("")
    environment = ProbeBeforeMovedEnvironment()
    environment.path_keyed = path_keyed
    planner = SeedPlanner(runs=4)
    plan = planner.plan(SPEC, environment, tmp_path)
    runner = CellRunner(environment, Repro("s", script, builtin=False), 10, at_once=2, moved_folder=True)
    cell = runner.run(SPEC, plan.seeds, tmp_path / "cache", tmp_path / "logs", results_root=tmp_path,
                      reseed=planner.reseeder(SPEC, plan, environment, tmp_path / "logs"), plan=plan)
    assert cell.verdict == Verdict.CLEAN and cell.moved_folder is not None
    assert plan.strategy == SeedStrategy.CHOSEN and [r.seed for r in cell.runs] == plan.seeds  # chosen after run 1
    assert "names from run 1's lowered module" in plan.note
    # the probe (when run 2 is taken) before the moved run, which has run 3's chosen seed
    assert environment.order.index("probe") < environment.order.index(f"moved {plan.seeds[2]}")
    assert cell.moved_folder.run.seed == plan.seeds[2] and cell.moved_folder.planned_run == 3
    assert cell.runs[2].in_moved_folder is not path_keyed  # it is run 3 where it hit
    # (this stub's run 1 runs twice: it never reads the hook's folder, as a script that sets its own may)
    seeds = [str(s) for s in plan.seeds]
    made = sorted(o for o in environment.order[2:] if o != "probe")
    assert made == sorted([seeds[1], f"moved {seeds[2]}", seeds[3]] + ([seeds[2]] if path_keyed else []))


class FailingSecondRun(PathKeyedEnvironment):
    def run(self, program, env, cache_dir, log_path, timeout_s, variation=None):
        if variation is None and env.get("PYTHONHASHSEED") == "12" and "seed-control" not in log_path.name:
            log_path.write_text("Traceback: boom\n")
            return ProcessOutcome(1, 0.01)
        return super().run(program, env, cache_dir, log_path, timeout_s, variation)


def test_a_resume_with_the_moved_folder_otherwise_is_refused():
    def header(moved):
        return ResultsHeader(config=RecordedConfig(name="x", source="harness check"), versions=["0.5.0"],
                             options=RecordedOptions(runs=2, moved_folder=moved))
    check_same_sweep(header(True), header(True), "r")
    with pytest.raises(UserError, match="moved folder's run differs"):
        check_same_sweep(header(True), header(False), "r")
    assert convert({"runs": 2}, RecordedOptions).moved_folder is None  # older folders: no such run
    assert convert(plain(RecordedOptions(moved_folder=False)), RecordedOptions).moved_folder is False


# ---- the moved run in a planned later run's place (issue 51 item 7) ------------------------------------------

def test_a_moved_run_that_hit_every_key_is_its_planned_run_and_one_that_compiled_is_not():
    written = [logged("jit_f", computation="f", compile_options="/a"), logged("jit_g", computation="g",
                                                                             compile_options="/a")]
    hit = judge_factor(Factor.CACHE_PATH, REFERENCE, record(3, *written, listed=False))
    assert hit.outcome == FactorOutcome.HIT  # (logged as written: compiled)
    assert not counts_as_planned_run(hit)  # a key compiled again from a copy that held it: not served
    served = [LoggedKey(k.module, k.key, Outcome.HIT, components=k.components) for k in written]
    loaded = judge_factor(Factor.CACHE_PATH, REFERENCE, record(3, *served, listed=False))
    assert counts_as_planned_run(loaded)
    counted = as_planned_run(loaded)
    assert counted.counted and counted.planned_run == 3 and counted.run.in_moved_folder
    assert counted.reason.endswith("; counted as run 3") and moved_folder_line(counted) == "moved folder: hit"
    assert not counts_as_planned_run(judge_factor(Factor.CACHE_PATH, REFERENCE, record(3, *served, ok=False)))


def _path_moved():
    return judge_factor(Factor.CACHE_PATH, REFERENCE, record(3, logged("jit_f", computation="f", compile_options="/b"),
                                                            logged("jit_g", computation="g", compile_options="/b")))


def test_the_planned_runs_control_tells_the_path_from_the_seed():
    # run 3 again in the cell's own folder, the same seed: it hit, so the moved run's miss is the path's
    path = with_planned_control(_path_moved(), REFERENCE, record(3, *REFERENCE.keys.keys))
    assert path.outcome == FactorOutcome.MISS and path.planned_run == 3 and not path.counted
    assert path.reason == "compile_options moved, 2 of 2 modules; run 3, seed 7 again in the cell's own folder, hit: " \
                          "the path moved them"
    assert moved_folder_column(path) == "every module missed (compile_options)"
    # it missed too: the seed (or the program) moved the keys, the path's part was not measured
    seed = with_planned_control(_path_moved(), REFERENCE, record(3, logged("jit_f", computation="f2",
                                                                           compile_options="/a"),
                                                                 REFERENCE.keys.keys[1]))
    assert seed.outcome == FactorOutcome.NOT_JUDGED and moved_folder_column(seed) == "not judged"
    assert "not the path's: run 3, seed 7 again in the cell's own folder, missed too (computation moved, 1 of 2 " \
           "modules): the seed or the program moved the keys, so whether the path moves them was not measured" \
           in seed.reason
    failed = with_planned_control(_path_moved(), REFERENCE, record(3, ok=False))
    assert failed.outcome == FactorOutcome.NOT_JUDGED and "again in the cell's own folder, failed (exit code 1)" in \
        failed.reason
    # a moved run that failed: its planned run made again, said, nothing judged
    broken = with_planned_control(judge_factor(Factor.CACHE_PATH, REFERENCE, record(3, ok=False)), REFERENCE,
                                  record(3, *REFERENCE.keys.keys))
    assert broken.outcome == FactorOutcome.NOT_JUDGED and broken.reason.startswith("its run failed")
    assert broken.reason.endswith("; run 3, seed 7 again in the cell's own folder, is the cell's run 3")
    # not made again (the cell stopped at its first miss): a miss is not known to be the path's
    unmade = without_planned_control(_path_moved(), 3, "the cell stopped")
    assert unmade.outcome == FactorOutcome.NOT_JUDGED and unmade.reason.endswith("; not known to be the path's: "
                                                                                "the cell stopped")
    assert unmade.planned_run == 3 and moved_folder_line(unmade).startswith("moved folder: not judged (compile_options")
    # needing no --vary control run of its own: its control is its planned run
    assert not needs_control(CellVariation(1, 7), path, Verdict.REPRODUCED)


class MovedRunFails(PathKeyedEnvironment):
    def run(self, program, env, cache_dir, log_path, timeout_s, variation=None):
        if variation is not None and variation.factor == Factor.CACHE_PATH:
            self.runs.append((program, variation))
            log_path.write_text("Traceback: boom\n")
            return ProcessOutcome(1, 0.01)
        return super().run(program, env, cache_dir, log_path, timeout_s, variation)


def _check_cell(tmp_path, environment, seeds=(11, 12, 13, 14, 15, 16)):
    """A cell as harness check measures it (two at once, stopping at the first miss, the moved folder); the fresh
    processes it made, as bench/bench_pytest.py counts them (its logs; the stub's run 1 runs twice: not counted)."""
    script = tmp_path / "s.py"
    script.write_text("")
    runner = CellRunner(environment, Repro("s", script, builtin=False), 10, at_once=2, moved_folder=True)
    cell = runner.run(SPEC, list(seeds), tmp_path / "cache", tmp_path / "logs", results_root=tmp_path,
                      stop_when_reproduced=True)
    logs = sorted(p.name for p in (tmp_path / "logs").glob("*.log") if not p.name.endswith(".first-use.log"))
    return cell, logs


def test_a_clean_cell_whose_moved_run_hits_is_its_planned_runs_alone(tmp_path):
    cell, logs = _check_cell(tmp_path, PathKeyedEnvironment(path_keyed=False))  # keys like 0.4.31's
    assert cell.verdict == Verdict.CLEAN and len(cell.runs) == 6 and len(logs) == 6  # 6 processes, not 7
    assert [(r.index, r.seed, r.in_moved_folder) for r in cell.runs][2] == (3, 13, True)
    assert "moved-folder-run-03-seed-13.log" in logs and "run-03-seed-13.log" not in logs
    moved = cell.moved_folder
    assert moved.outcome == FactorOutcome.HIT and moved.counted and moved.planned_run == 3
    assert moved.run.seed == 13 and "with run 3's seed 13" in moved.change
    assert "same in all 6 runs" in cell.reason
    again = read_cell(as_json(cell))  # the records say it, and load back
    assert again.runs[2].in_moved_folder and again.moved_folder.counted
    document = ResultsDocument(ResultsHeader(config=RecordedConfig(name="x", repro="/s.py", source="harness check")),
                               [again], SweepStatus.COMPLETE)
    report = render_report(document, [again], {})
    assert "moved folder: hit" in report and "with run 3's seed 13" in report and "counted as run 3" in report


def test_a_clean_cell_whose_path_is_keyed_makes_its_moved_runs_planned_run_in_its_own_folder(tmp_path):
    cell, logs = _check_cell(tmp_path, PathKeyedEnvironment())  # keys like 0.10.2's
    assert cell.verdict == Verdict.CLEAN and len(cell.runs) == 6 and len(logs) == 7
    assert not any(r.in_moved_folder for r in cell.runs) and cell.runs[2].seed == 13
    assert {"moved-folder-run-03-seed-13.log", "run-03-seed-13.log"} <= set(logs)
    moved = cell.moved_folder
    assert moved.outcome == FactorOutcome.MISS and moved.components == ["compile_options"] and not moved.counted
    assert moved.reason.endswith("run 3, seed 13 again in the cell's own folder, hit: the path moved them")


@pytest.mark.parametrize("path_keyed", [False, True], ids=["0.4.31", "0.10.2"])
def test_a_seed_that_moves_a_key_in_the_moved_run_reproduces_through_its_planned_run(tmp_path, path_keyed):
    cell, logs = _check_cell(tmp_path, PathKeyedEnvironment(path_keyed=path_keyed, seed_keyed={13}))
    assert cell.verdict == Verdict.REPRODUCED and "run 3" in cell.reason  # run 3 in the cell's own folder
    assert [r.index for r in cell.runs][:3] == [1, 2, 3] and not cell.runs[2].in_moved_folder
    moved = cell.moved_folder
    assert moved.outcome == FactorOutcome.NOT_JUDGED and moved.planned_run == 3
    assert "the seed or the program moved the keys, so whether the path moves them was not measured" in moved.reason


def test_a_moved_run_that_fails_leaves_its_planned_run_to_the_cells_own_folder(tmp_path):
    cell, logs = _check_cell(tmp_path, MovedRunFails(path_keyed=False))
    assert cell.verdict == Verdict.CLEAN and len(cell.runs) == 6 and len(logs) == 7
    assert cell.moved_folder.outcome == FactorOutcome.NOT_JUDGED
    assert cell.moved_folder.reason.endswith("is the cell's run 3")


def test_a_cell_that_stops_at_run_2_makes_no_run_to_tell_its_moved_runs_miss_from_the_seed(tmp_path):
    # a set-order regression: run 2's seed and the moved run's (run 3's) order the set otherwise
    cell, logs = _check_cell(tmp_path, PathKeyedEnvironment(path_keyed=False, seed_keyed={12, 13}))
    assert cell.verdict == Verdict.REPRODUCED and [r.index for r in cell.runs] == [1, 2]
    assert "run-03-seed-13.log" not in logs and "moved-folder-run-03-seed-13.log" in logs
    assert len([name for name in logs if not name.startswith("seed-control")]) == 3  # as with run 1's seed
    moved = cell.moved_folder
    assert moved.outcome == FactorOutcome.NOT_JUDGED and moved.components == ["computation"]
    assert "not known to be the path's: the cell stopped at its first miss" in moved.reason


def test_on_an_accelerator_one_run_at_a_time_the_moved_folder_takes_a_planned_run_s_place(tmp_path):
    # One TPU chip: one run at a time, and each run opens the chip (seconds). Keys without the folder's path (0.4.31):
    # the moved run hits every key and is counted as planned run 3: one process fewer than beside the plan.
    script = tmp_path / "s.py"
    script.write_text("")
    environment = PathKeyedEnvironment(path_keyed=False)
    runner = CellRunner(environment, Repro("s", script, builtin=False), 10, moved_folder=True)
    tpu = CellSpec("0.5.0", Platform.TPU, 1, None)
    cell = runner.run(tpu, [11, 12, 13], tmp_path / "cache", tmp_path / "logs", results_root=tmp_path)
    on_tpu = len(environment.runs)
    assert cell.verdict == Verdict.CLEAN and cell.moved_folder.planned_run == 3 and cell.moved_folder.counted
    assert [r.in_moved_folder for r in cell.runs] == [False, False, True]
    # on the CPU (simulated devices: a run costs its import) the moved run stays one beside the plan
    environment = PathKeyedEnvironment(path_keyed=False)
    runner = CellRunner(environment, Repro("s", script, builtin=False), 10, moved_folder=True)
    cell = runner.run(SPEC, [11, 12, 13], tmp_path / "cache2", tmp_path / "logs2", results_root=tmp_path)
    assert len(environment.runs) == on_tpu + 1 and not cell.moved_folder.planned_run
