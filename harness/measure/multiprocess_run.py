"""One run of a multi-process cell: a job of N processes started together, each with its own hash seed and
log, sharing the cell's cache folder; and, once per environment, whether JAX can run such a job here.

A job's record is a run's (`RunRecord`) with each process's own (`RankRecord`): the listing before and
after is the job's, each process's keys come from its own JAX log. Processes that do not finish (one waits
on a collective a peer never joins) are stopped at the run's timeout, and the run says so.
"""

from __future__ import annotations

import json
import re
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

from harness.environments.base import Environment
from harness.environments.process import AFTER_PEERS
from harness.core.errors import GroupUnsupported
from harness.core.jaxlog import merged
from harness.measure.multiprocess_env import GroupPlan, group_hook_env, rank_env, rank_log
from harness.core.bounded_read import LOG_MAX_BYTES, read_text_bounded
from harness.core.listing import list_dir
from harness.core.model import CellSpec
from harness.core.runs import ProcessOutcome, Program, RankRecord, RunRecord
from harness.core.kinds import ThresholdMode
from harness.inputs.process_variables import IR_DUMP_VAR, script_settings_path, hook_env, ir_dump_dir, merge_user_env
from harness.measure.run_logs import read_jax_log, with_log_detail
from harness.core.recorder import recorder_path
from harness.core.files import remove_path
from harness.evidence.script_settings import read_script_settings
from harness.inside.startup import startup_dir
from harness.inside.startup.jax_cache_harness_hook import JOINED_MARK

PROBE_SCRIPT = "job_probe.py"  # in startup_dir(), run from there: harness/ would shadow `bisect`
PROBE_TIMEOUT_S = 120.0
LOOPBACK = "127.0.0.1"

_ports_lock = threading.Lock()
_ports_given: set[int] = set()


def free_port() -> int:
    """A loopback port nothing listens on now, never the same twice in this process (two cells' jobs
    may start at once)."""
    with _ports_lock:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((LOOPBACK, 0))
                port: int = sock.getsockname()[1]
            if port not in _ports_given:
                _ports_given.add(port)
                return port


# What JAX's distributed client logs once a process has left the job at exit: its script had ended.
SHUTDOWN_DONE = "Distributed task shutdown result: OK"
TRACEBACK = "Traceback (most recent call last)"
HUNG_AT_EXIT = "hung in JAX's distributed shutdown after its script had ended and left the job; stopped"


def _hung_at_exit(outcome: ProcessOutcome, log: Path) -> bool:
    """A process stopped after its peers had ended well, whose log says it had left the job (JAX's process 0
    can hang tearing down its coordinator service), with no traceback: its script had ended without error."""
    if not (outcome.timed_out and outcome.reason.startswith(AFTER_PEERS)):
        return False
    text = read_text_bounded(log, LOG_MAX_BYTES)
    if text is None:
        return False
    return SHUTDOWN_DONE in text and TRACEBACK not in text


def _joined(log: Path) -> bool | None:
    text = read_text_bounded(log, LOG_MAX_BYTES)
    return None if text is None else JOINED_MARK in text


def _rank_reason(outcome: ProcessOutcome, log: Path) -> str:
    reason = outcome.reason or ("timed out" if outcome.timed_out else f"exit code {outcome.exit_code}")
    return reason if outcome.timed_out else with_log_detail(reason, log)


def group_reason(ranks: list[RankRecord]) -> str:
    """Why a job failed, naming each process that did not end well: `processes did not finish: ...` when
    one was stopped (a hang), `processes failed: ...` when each ended by itself."""
    bad = [r for r in ranks if not r.ok]
    if not bad:
        return ""
    head = "processes did not finish" if any(r.timed_out for r in bad) else "processes failed"
    return f"{head}: " + "; ".join(f"process {r.rank} ({r.reason})" for r in bad)


def measure_job(environment: Environment, program: Program, spec: CellSpec, seeds: tuple[int, ...],
                cache_dir: Path, log_dir: Path, results_root: Path | None, index: int, timeout_s: float,
                user_env: tuple[tuple[str, str], ...] = (), thresholds: ThresholdMode = ThresholdMode.HARNESS,
                script: bool = True) -> RunRecord:
    """One launch: every process at once, then the listing, each process's log read."""
    plan = GroupPlan(seeds, f"{LOOPBACK}:{free_port()}")
    before = list_dir(cache_dir)
    log = log_dir / f"run-{index:02d}-seed-{seeds[0]}.log"
    logs = [rank_log(log, rank) for rank in range(plan.processes)]
    envs = []
    for rank, rank_log_path in enumerate(logs):
        env = {**rank_env(spec, plan, rank, thresholds if script else ThresholdMode.HARNESS), **group_hook_env()}
        if script:
            env[IR_DUMP_VAR] = str(ir_dump_dir(rank_log_path).resolve())
            remove_path(recorder_path(rank_log_path))
            env.update(hook_env(script_settings_path(rank_log_path), thresholds, recorder=recorder_path(rank_log_path).resolve()))
        envs.append(merge_user_env(env, user_env))
    outcomes = environment.run_group(program, envs, cache_dir, logs, timeout_s)
    added = sorted(list_dir(cache_dir) - before)

    def shown(path: Path) -> str:
        return str(path.relative_to(results_root) if results_root else path)

    ranks = []
    for rank, (outcome, rank_log_path) in enumerate(zip(outcomes, logs)):
        if _hung_at_exit(outcome, rank_log_path):
            outcome = ProcessOutcome(0, outcome.duration_s, reason=HUNG_AT_EXIT)
        keys, note = read_jax_log(rank_log_path, spec.jax_version, outcome.ok,
                                  recorder_path(rank_log_path) if script else None)
        ranks.append(RankRecord(rank, seeds[rank], outcome.exit_code, round(outcome.duration_s, 3),
                                outcome.timed_out, outcome.reason if outcome.ok else _rank_reason(outcome, rank_log_path),
                                shown(rank_log_path), keys, note,
                                read_script_settings(script_settings_path(rank_log_path)) if script else None,
                                _joined(rank_log_path)))
    failed = next((r for r in ranks if not r.ok), None)
    logged = [r.keys for r in ranks if r.keys is not None]
    return RunRecord(index=index, seed=seeds[0],
                     exit_code=0 if failed is None else failed.exit_code,
                     duration_s=round(max(o.duration_s for o in outcomes), 3), new_entries=added,
                     timed_out=any(r.timed_out for r in ranks), reason=group_reason(ranks), log=shown(logs[0]),
                     script_cache=ranks[0].script_cache, keys=merged(logged) if logged else None,
                     log_note="" if logged else ranks[0].log_note, ranks=ranks)


# The probe's answer: one JSON object, found anywhere in a line (gloo's threads print mid-line).
_ANSWER_RE = re.compile(r'\{"process_index"[^{}]*\}')


def _answer(log: Path) -> dict[str, Any] | None:
    """The probe's JSON answer (JAX's own lines come before, after and around it)."""
    text = read_text_bounded(log, LOG_MAX_BYTES)
    if text is None:
        return None
    found = _ANSWER_RE.findall(text)
    try:
        answer: dict[str, Any] | None = json.loads(found[-1]) if found else None
        return answer
    except ValueError:
        return None


_checked: dict[tuple[object, ...], str | None] = {}
_checked_lock = threading.Lock()


def _environment_key(environment: Environment, spec: CellSpec) -> tuple[object, ...]:
    facts = environment.describe()
    return (environment.same_as(), facts.get("jax"), facts.get("python"), spec.platform, spec.device_count,
            spec.processes)


def group_problem(environment: Environment, spec: CellSpec, log_dir: Path, timeout_s: float) -> str | None:
    """Why this environment cannot run a job of `spec.processes` here (None when it can): a probe job joins
    and runs one collective across all processes. Asked once per environment and job shape."""
    key = _environment_key(environment, spec)
    with _checked_lock:
        if key in _checked:
            return _checked[key]
    problem = _probe(environment, spec, log_dir / "job-probe", min(timeout_s, PROBE_TIMEOUT_S))
    with _checked_lock:
        _checked[key] = problem
    return problem


def _probe(environment: Environment, spec: CellSpec, log_dir: Path, timeout_s: float) -> str | None:
    # The probe's cache folder beside its logs, not in /tmp: a reduction's write watch allows only the run's
    # own folders, and the probe is the harness's, not the candidate's.
    log_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="job-probe-cache-", dir=log_dir) as cache:
        try:
            record = measure_job(environment, Program(startup_dir() / PROBE_SCRIPT), spec,
                                 tuple(range(1, spec.processes + 1)), Path(cache), log_dir, None, 1, timeout_s,
                                 script=False)
        except GroupUnsupported as exc:
            return str(exc)
    what = f"jax {spec.jax_version} cannot run a {spec.processes}-process job here"
    if record.timed_out and all(r.ok or r.timed_out for r in record.ranks):
        # Out of time, nothing failed: that proves no limit of the backend (a loaded machine's imports can take the
        # whole of a short timeout_s); the job's own runs are judged, and a hang of theirs reads `error`.
        return None
    if not record.ok:
        return f"{what}: {record.reason}"
    for rank in record.ranks:
        answer = _answer(Path(rank.log))
        if answer is None:
            return f"{what}: process {rank.rank} of the probe printed no answer"
        if answer.get("process_count") != spec.processes or answer.get("device_count") != spec.device_count:
            return (f"{what}: process {rank.rank} saw {answer.get('process_count')} processes and "
                    f"{answer.get('device_count')} devices, not {spec.processes} and {spec.device_count}")
    return None
