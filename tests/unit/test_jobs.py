"""Multi-process runs (jobs): the processes of one launch started together and stopped together, the hook
that fills in jax.distributed.initialize(), per-process seeds, the config key, and slots taken by a job.
Real processes of this interpreter where processes matter; no JAX."""

from __future__ import annotations

import random
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from harness.core.records import plain as as_json
from harness.results.header import recorded_config
from harness.core.records import plain
from harness.inputs.config import parse_config
from harness.core.confidence import miss_probability_random
from harness.environments.base import Environment
from harness.environments.process import clean_environment, run_processes
from harness.core.errors import ConfigError
from harness.measure.multiprocess_env import GroupPlan, rank_env, rank_log
from harness.core.model import CellSpec
from harness.core.kinds import Platform, Verdict
from harness.core.runs import ProcessOutcome, Program
from harness.measure.cell_runner import CellRunner
from harness.measure.cell_schedule import run_cells
from harness.measure.open_cell import OpenCell
from harness.measure.seeds import Probe, random_plan, rank_seeds, with_ranks
from harness.inside.startup import jax_cache_harness_hook as hook
from tests.helpers import pid_exists


def _script(tmp_path: Path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.write_text(text)
    return [sys.executable, str(path)]


def _wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while pid_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not pid_exists(pid)


def test_a_process_group_waits_for_every_process_and_gives_each_its_log(tmp_path):
    argv = _script(tmp_path, "ok.py", "import os; print('rank', os.environ['RANK'])\n")
    starts = [(argv, clean_environment({"RANK": str(r)}), tmp_path / f"r{r}.log") for r in range(3)]
    outcomes = run_processes(starts, timeout_s=30)
    assert [o.ok for o in outcomes] == [True, True, True]
    assert [(tmp_path / f"r{r}.log").read_text() for r in range(3)] == [f"rank {r}\n" for r in range(3)]


def test_a_process_waiting_for_a_peer_is_stopped_at_the_timeout_and_nothing_is_left(tmp_path):
    pid_file = tmp_path / "waiter.pid"
    waiter = _script(tmp_path, "wait.py", f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                                          "time.sleep(60)\n")
    start = time.monotonic()
    outcomes = run_processes([(waiter, clean_environment({}), tmp_path / "a.log"),
                              (waiter[:1] + ["-c", "import time; time.sleep(60)"], clean_environment({}),
                               tmp_path / "b.log")], timeout_s=2)
    assert time.monotonic() - start < 30
    assert all(o.timed_out and o.reason == "killed after the 2 s timeout" for o in outcomes)
    assert _wait_gone(int(pid_file.read_text()))


def test_once_one_process_fails_its_peers_are_stopped_after_the_grace(tmp_path):
    outcomes = run_processes([([sys.executable, "-c", "import sys; sys.exit(3)"], clean_environment({}),
                               tmp_path / "a.log"),
                              ([sys.executable, "-c", "import time; time.sleep(60)"], clean_environment({}),
                               tmp_path / "b.log")], timeout_s=60, peer_grace_s=0.5)
    assert outcomes[0].exit_code == 3 and outcomes[0].reason == "exit code 3"
    assert outcomes[1].timed_out and outcomes[1].reason == "stopped 0.5 s after process 0 failed (exit code 3)"
    assert outcomes[1].duration_s < 20


def test_the_last_process_is_stopped_after_the_grace_once_every_other_ended_well(tmp_path):
    from harness.environments.process import AFTER_PEERS

    outcomes = run_processes([([sys.executable, "-c", "pass"], clean_environment({}), tmp_path / "a.log"),
                              ([sys.executable, "-c", "import time; time.sleep(60)"], clean_environment({}),
                               tmp_path / "b.log")], timeout_s=60, peer_grace_s=0.5)
    assert outcomes[0].ok and outcomes[1].timed_out and outcomes[1].reason.startswith(AFTER_PEERS)


def test_a_process_0_that_hangs_in_jax_shutdown_after_its_work_has_ended_well(tmp_path):
    from harness.environments.process import AFTER_PEERS
    from harness.measure.multiprocess_run import HUNG_AT_EXIT, SHUTDOWN_DONE, _hung_at_exit

    stopped = ProcessOutcome(None, 11.0, timed_out=True, reason=f"{AFTER_PEERS} (10 s after the last one)")
    log = tmp_path / "r0.log"
    log.write_text(f"I1201 client.cc:140] {SHUTDOWN_DONE}\n")
    assert _hung_at_exit(stopped, log)
    log.write_text(f"Traceback (most recent call last):\nValueError\n{SHUTDOWN_DONE}\n")
    assert not _hung_at_exit(stopped, log)  # a script that raised is no clean exit
    timeout = ProcessOutcome(None, 60.0, timed_out=True, reason="killed after the 60 s timeout")
    assert not _hung_at_exit(timeout, log) and HUNG_AT_EXIT


def test_rank_env_splits_the_devices_and_tells_each_process_the_group():
    spec = CellSpec("0.10.2", Platform.CPU, 8, None, processes=2)
    plan = GroupPlan((11, 12), "127.0.0.1:4000")
    envs = [rank_env(spec, plan, r) for r in range(2)]
    assert [e["PYTHONHASHSEED"] for e in envs] == ["11", "12"]
    assert all(e["XLA_FLAGS"] == "--xla_force_host_platform_device_count=4" for e in envs)
    assert [e[hook.JOB_RANK_VAR] for e in envs] == ["0", "1"]
    assert all(e[hook.JOB_PROCESSES_VAR] == "2" and e[hook.JOB_COORDINATOR_VAR] == "127.0.0.1:4000" for e in envs)
    assert rank_log(Path("logs/run-01-seed-11.log"), 1) == Path("logs/run-01-seed-11.rank1.log")


def test_the_hook_fills_in_what_initialize_leaves_out(monkeypatch, capsys):
    calls = []
    module = types.SimpleNamespace(initialize=lambda *args, **kwargs: calls.append((args, kwargs)))
    monkeypatch.setenv(hook.JOB_COORDINATOR_VAR, "127.0.0.1:4000")
    monkeypatch.setenv(hook.JOB_PROCESSES_VAR, "2")
    monkeypatch.setenv(hook.JOB_RANK_VAR, "1")
    hook.distributed_loaded(module)
    module.initialize()
    module.initialize("10.0.0.1:99", local_device_ids=[0])  # what the script passes is kept
    assert calls == [(("127.0.0.1:4000", 2, 1), {}), (("10.0.0.1:99", 2, 1), {"local_device_ids": [0]})]
    assert hook.JOINED_MARK in capsys.readouterr().err


def test_each_process_of_a_launch_orders_the_names_differently_where_a_seed_can():
    # Seeds 1 and 3 order {a, b} as (a, b); 2 and 4 as (b, a).
    probe = Probe("cpython 3.11", (("a", "b"),), {1: (("a", "b"),), 2: (("b", "a"),), 3: (("a", "b"),),
                                                  4: (("b", "a"),)})
    assert rank_seeds(1, 2, probe, taken=set()) == (1, 2)
    assert rank_seeds(2, 2, probe, taken={1}) == (2, 3)
    seeds = rank_seeds(5, 3, None, taken={5}, rng=random.Random(0))
    assert len(set(seeds)) == 3 and seeds[0] == 5 and all(0 < s < 2**32 for s in seeds)


def test_a_group_plan_has_seeds_by_process_and_counts_them_in_its_bound():
    plan = with_ranks(random_plan(4), 2, rng=random.Random(1))
    assert [r[0] for r in plan.ranks] == plan.seeds and all(len(set(r)) == 2 for r in plan.ranks)
    assert plan.launches() == [tuple(r) for r in plan.ranks]
    assert plan.miss_bound == miss_probability_random(8)
    assert "by process" in plan.summary() and plain(plan)["ranks"] == plan.ranks
    single = random_plan(4)
    assert single.launches() == single.seeds and "ranks" not in plain(single)


def test_processes_in_a_config(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import jax\n")
    base = {"name": "t", "repro": str(script), "jax_versions": ["0.10.2"]}
    config = parse_config({**base, "processes": 2})
    assert config.processes == 2 and as_json(recorded_config(config))["processes"] == 2
    assert "processes" not in as_json(recorded_config(parse_config(base)))  # a results folder made before stays the same sweep
    for bad, says in (({"processes": 3}, "cannot be split evenly"), ({"processes": 0}, "at least 1"),
                      ({"processes": 2, "platform": "cuda"}, "cpu platform only")):
        with pytest.raises(ConfigError, match=says):
            parse_config({**base, **bad})
    with pytest.raises(ConfigError, match="runs in one process"):
        parse_config({"name": "t", "repro": "shard_map_grad", "jax_versions": ["0.4.28"], "processes": 2})


class GroupEnvironment(Environment):
    """Records how many processes were going at once; a job's processes each write their rank's key."""

    jax_version = "0.10.2"

    def __init__(self):
        self.lock, self.active, self.most = threading.Lock(), 0, 0

    def _enter(self, count):
        with self.lock:
            self.active += count
            self.most = max(self.most, self.active)

    def run(self, program, env, cache_dir, log_path, timeout_s):
        self._enter(1)
        time.sleep(0.05)
        log_path.write_text("")
        (cache_dir / f"jit_f-{0:064x}").write_text("x")
        self._enter(-1)
        return ProcessOutcome(0, 0.05)

    def run_group(self, program, envs, cache_dir, log_paths, timeout_s):
        self._enter(len(envs))
        time.sleep(0.05)
        for env, log in zip(envs, log_paths):
            log.write_text(f"{hook.JOINED_MARK}...)\n")
        (cache_dir / f"jit_f-{1:064x}").write_text("x")
        self._enter(-len(envs))
        return [ProcessOutcome(0, 0.05) for _ in envs]

    def describe(self):
        return {"backend": "scripted"}


def test_a_process_group_takes_a_slot_per_process(tmp_path, monkeypatch):
    import harness.measure.open_cell as runner_module

    monkeypatch.setattr(runner_module, "group_problem", lambda *args: None)
    env = GroupEnvironment()
    from harness.inputs.config import Repro

    repro = Repro("train", tmp_path / "train.py", builtin=False)
    results = []

    def opener(version, processes):
        spec = CellSpec(version, Platform.CPU, 4, None, processes=processes)
        seeds = [(1, 2), (3, 4), (5, 6)] if processes == 2 else [1, 2, 3, 4]
        return lambda: OpenCell.open(CellRunner(env, repro, 10, at_once=3), spec, seeds, tmp_path / "c" / version,
                                     tmp_path / "l" / version, tmp_path)

    run_cells([opener("a", 2), opener("b", 1), opener("c", 2)], 3, results.append)
    assert env.most <= 3
    assert [len(r.runs) for r in results] == [3, 4, 3]
    group_cell = results[0]
    assert all([rank.seed for rank in run.ranks] == list(seeds) for run, seeds in zip(group_cell.runs, [(1, 2), (3, 4),
                                                                                                 (5, 6)]))
    assert group_cell.verdict == Verdict.CLEAN and group_cell.job is not None and group_cell.job.processes == 2


def test_a_process_groups_containers_share_process_0s_network_of_nothing_but_a_loopback(tmp_path):
    from harness.environments.docker import group_kwargs

    script = tmp_path / "train.py"
    script.write_text("")
    envs = [{"HARNESS_JOB_RANK": "0"}, {"HARNESS_JOB_RANK": "1"}, {"HARNESS_JOB_RANK": "2"}]
    first, *others = group_kwargs(Program(script), envs, tmp_path, Platform.CPU, "1000:1000")
    assert first["network_mode"] == "none" and first["hostname"] == "localhost"
    assert all(k["network_mode"] == f"container:{first['name']}" for k in others)
    assert not any("network_disabled" in k for k in (first, *others))  # it leaves no /etc/hosts: gloo fails
    assert len({k["name"] for k in (first, *others)}) == 3
    assert [k["environment"]["HARNESS_JOB_RANK"] for k in (first, *others)] == ["0", "1", "2"]


def test_vary_and_processes_are_not_combined_yet(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import jax\n")
    with pytest.raises(ConfigError, match="cannot be combined with processes"):
        parse_config({"name": "t", "repro": str(script), "jax_versions": ["0.10.2"], "processes": 2,
                      "vary": "all"})


def test_the_probes_answer_is_found_where_gloo_cut_its_line(tmp_path):
    from harness.measure.multiprocess_run import _answer

    log = tmp_path / "probe.log"
    log.write_text('[Gloo] Rank {"process_index": 1, "process_count": 2, "device_count": 8, "local_device_count": 4}'
                   "1 is connected to 1 peer ranks.\nI1201 client.cc:140] shutdown\n")
    assert _answer(log) == {"process_index": 1, "process_count": 2, "device_count": 8, "local_device_count": 4}
    log.write_text("no answer\n")
    assert _answer(log) is None


def test_a_multi_process_sweeps_shards_ask_for_a_task_per_process_and_start_runs_with_srun(tmp_path):
    from harness.environments.process import LAUNCHER_VAR, SRUN
    from harness.slurm.jobs import Resources, SweepJobs

    def jobs(tasks):
        return SweepJobs(name="mh", sweep_dir=tmp_path, harness=("python", "-m", "harness"), config=tmp_path / "c.yaml",
                         shards=2, sweep_args=("--processes", str(tasks)), resources=Resources(tasks=tasks))
    shard, merge = jobs(2).shard_script(), jobs(2).merge_script()
    assert "#SBATCH --ntasks=2" in shard and f"export {LAUNCHER_VAR}={SRUN}" in shard
    assert "--ntasks" not in merge and LAUNCHER_VAR not in merge
    single = jobs(1).shard_script()
    assert "--ntasks" not in single and LAUNCHER_VAR not in single


def test_srun_mode_leaves_the_coordinator_and_rank_to_jax_and_slurm(monkeypatch, capsys):
    monkeypatch.delenv(hook.JOB_COORDINATOR_VAR, raising=False)
    monkeypatch.delenv(hook.JOB_RANK_VAR, raising=False)
    monkeypatch.setenv(hook.JOB_PROCESSES_VAR, "2")
    assert hook.job_defaults(dict(__import__("os").environ), None, None, None) == (None, 2, None)


def test_a_job_probe_that_ran_out_of_time_proves_no_limit_of_the_backend(monkeypatch, tmp_path):
    """CI, a loaded machine, timeout_s 10: the probe job's process 0 was killed at the timeout while importing jax,
    and the cell read `unsupported` ("cannot run a 2-process job here"), where its own runs hang and read `error`.
    A probe that ran out of time with nothing failed says nothing; one whose process failed still does."""
    from harness.core.runs import RankRecord, RunRecord
    from harness.measure import multiprocess_run

    def probe_job(*ranks: RankRecord):
        def measure_job(*args, **kwargs):
            return RunRecord(1, 1, None, 10.0, [], timed_out=any(r.timed_out for r in ranks), ranks=list(ranks),
                             reason=multiprocess_run.group_reason(list(ranks)))
        return measure_job

    spec = CellSpec("0.10.2", Platform.CPU, 8, None, processes=2)
    killed = RankRecord(0, 1, None, 10.0, timed_out=True, reason="killed after the 10 s timeout")
    monkeypatch.setattr(multiprocess_run, "measure_job", probe_job(killed, RankRecord(1, 2, None, 10.0, timed_out=True)))
    assert multiprocess_run._probe(object(), spec, tmp_path / "a", 10.0) is None  # type: ignore[arg-type]
    failed = RankRecord(1, 2, 1, 3.0, reason="exit code 1")
    monkeypatch.setattr(multiprocess_run, "measure_job", probe_job(killed, failed))
    problem = multiprocess_run._probe(object(), spec, tmp_path / "b", 10.0)  # type: ignore[arg-type]
    assert problem is not None and problem.startswith("jax 0.10.2 cannot run a 2-process job here: processes")


def test_a_later_process_connects_only_once_process_0_s_coordinator_listens():
    """A process other than 0 that connected before the coordinator listened waited gRPC's reconnect backoff, about
    a second of every job: it now waits for the port (a fresh job's through the start-up hook, a job of forked
    children through fork_server.py, which calls the same function), returning as soon as a connection is
    accepted, and not past its limit; process 0, and a coordinator that is not the harness's job's, never wait."""
    import socket

    from harness.inside import fork_server

    assert Path(fork_server._HOOK.__file__).resolve() == Path(hook.__file__).resolve()  # the same file's code
    wait = hook.wait_for_job_coordinator
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # a port nobody listens on, for now
    address = f"127.0.0.1:{port}"
    job = {hook.JOB_COORDINATOR_VAR: address}
    started = time.monotonic()
    wait(job, address, 0, timeout_s=10.0)  # process 0 runs the coordinator itself
    wait({}, address, 1, timeout_s=10.0)  # not the harness's job: JAX's own connect, as before
    wait({hook.JOB_COORDINATOR_VAR: "127.0.0.1:1"}, address, 1, timeout_s=10.0)  # the script's own address
    assert time.monotonic() - started < 1.0
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def listen_later():
        time.sleep(0.3)
        listener.bind(("127.0.0.1", port))
        listener.listen()

    opener = threading.Thread(target=listen_later)
    started = time.monotonic()
    opener.start()
    try:
        wait(job, address, 1, timeout_s=10.0)
        waited = time.monotonic() - started
        opener.join()
        assert 0.3 <= waited < 5.0  # until it listened, not the limit
        accepted, _ = listener.accept()  # the connection it made (and closed) is there
        accepted.close()
        started = time.monotonic()
        wait(job, address, 1, timeout_s=10.0)  # listening already: at once
        assert time.monotonic() - started < 1.0
    finally:
        listener.close()
    started = time.monotonic()
    wait(job, address, 1, timeout_s=0.2)  # nobody listens: it gives up at its limit, and JAX's own connect says
    assert 0.2 <= time.monotonic() - started < 3.0
    wait({hook.JOB_COORDINATOR_VAR: "no-port-here"}, "no-port-here", 1, timeout_s=0.1)  # JAX says so, not this
