"""`make stress`: replay the fault cases of issues 10 and 27 against real runs and print a tried / held table.

Every case starts the real `harness` command line as its own process (as a user, a scheduler or a
careless config would), with real JAX releases in real venvs (and Docker where an engine answers),
and checks the behaviour the harness promises (docs/signals-and-concurrency.md). Exit 1 if
any case did not hold. Slow (minutes): not part of `make test`, whose fault tests cover the same
ground one case at a time.

    python stress/stress.py [--only WORD] [--no-docker] [--list]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from collections.abc import Callable, Iterator

from tabulate import tabulate

REPO = Path(__file__).resolve().parents[1]
T = TypeVar("T")
VERSION = "0.4.29"
BASE_IMAGE = "jax-harness-base:bookworm"


@dataclass
class Result:
    case: str
    held: bool
    detail: str
    seconds: float


class Harness:
    """Runs `harness ...` in a scratch folder and answers questions about what it left."""

    def __init__(self, root: Path, env_dir: Path):
        self.root, self.env_dir = root, env_dir

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "HARNESS_ENV_DIR": str(self.env_dir), **extra}

    def start(self, *argv: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "harness", *argv], cwd=cwd, env=env or self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, *argv: str, timeout: float = 900, env: dict[str, str] | None = None,
            cwd: Path = REPO) -> tuple[int, str, str]:
        proc = self.start(*argv, env=env, cwd=cwd)
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err

    def write(self, name: str, text: str | bytes) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return path

    def config(self, name: str, script_text: str, runs: int = 2, timeout_s: int = 120, extra: str = "") -> Path:
        script = self.write(f"{name}/script.py", script_text)
        return self.write(f"{name}.yaml", f"name: {name}\nrepro: {script}\njax_versions: ['{VERSION}']\n"
                                          f"runs: {runs}\ntimeout_s: {timeout_s}\n"
                                          f"docker: {{base_image: '{BASE_IMAGE}'}}\n{extra}")


def one_line(code: int, err: str, expected: int = 2) -> tuple[bool, str]:
    lines = err.strip().splitlines()
    ok = code == expected and len(lines) == 1 and "Traceback" not in err
    return ok, f"exit {code}: {lines[-1][:90] if lines else '(nothing on stderr)'}"


def results_of(out: Path) -> dict[str, Any]:
    (found,) = out.glob("*/results.json")
    document: dict[str, Any] = json.loads(found.read_text())
    return document


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def alive_in(named: str) -> bool:
    """Whether the process a run named (`{pid}-{namespace}`, tests/helpers.py's OWN_PID) still runs here."""
    from tests.helpers import machine_pid

    pid = machine_pid(named)
    return pid is not None and alive(pid)


def wait_for(predicate: Callable[[], T], seconds: float) -> T | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    return None


# ---------------------------------------------------------------- cases

COMPILE_THEN_SEGV = """\
import os, signal
import jax, jax.numpy as jnp
jax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()
os.kill(os.getpid(), signal.SIGSEGV)
"""

HANG = """\
import os, time
open(os.path.join(os.environ["JAX_COMPILATION_CACHE_DIR"], f"started-{os.getpid()}-{os.stat('/proc/self/ns/pid').st_ino}"), "w").close()
time.sleep(600)
"""

LEAVE_BEHIND = """\
import os, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
namespace = os.stat("/proc/self/ns/pid").st_ino
open(os.path.join(os.environ["JAX_COMPILATION_CACHE_DIR"], f"left-{child.pid}-{namespace}"), "w").close()
"""

FLOOD = "import sys\nprint('FIRST')\nfor _ in range(60_000): sys.stdout.write('x' * 1023 + '\\n')\nprint('LAST')\n"


def case_self_signal(h: Harness, backend: str) -> tuple[bool, str]:
    code, _, _err = h.run("run", str(h.config(f"segv-{backend}", COMPILE_THEN_SEGV)), "--backend", backend,
                         "--seeds", "random", "--quiet", "--out", str(h.root / f"segv-{backend}-out"))
    cell = results_of(h.root / f"segv-{backend}-out")["cells"][0]
    return code == 0 and cell["verdict"] == "error", f"verdict {cell['verdict']}: {cell['reason'][:70]}"


def case_sigterm(h: Harness, backend: str) -> tuple[bool, str]:
    out = h.root / f"term-{backend}-out"
    proc = h.start("run", str(h.config(f"term-{backend}", HANG, runs=3, timeout_s=300)), "--backend", backend,
                   "--seeds", "random", "--out", str(out))
    marker = wait_for(lambda: sorted(out.glob("*/caches/*/started-*")), 300)
    if not marker:
        proc.kill()
        return False, "the run never started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    status = results_of(out)["status"]
    left = ""
    if backend == "venv":
        left = "the run still runs" if alive_in(marker[0].name.split("-", 1)[1]) else ""
    else:
        import docker

        running = docker.from_env().containers.list(
            all=True, filters={"label": f"org.jax-cache-harness.owner-pid={proc.pid}"})
        left = f"{len(running)} container(s) left" if running else ""
    held = proc.returncode == 143 and status == "interrupted" and "resume with:" in err and not left
    return held, f"exit {proc.returncode}, status {status}" + (f", {left}" if left else ", nothing left")


def case_sigkill_docker(h: Harness) -> tuple[bool, str]:
    """A SIGKILLed harness: its run container ends by itself past the run's timeout, and the next docker
    sweep removes it."""
    import docker

    out = h.root / "sigkill-docker-out"
    proc = h.start("run", str(h.config("sigkill-docker", HANG, runs=2, timeout_s=5)), "--backend", "docker",
                   "--seeds", "random", "--out", str(out))
    if not wait_for(lambda: sorted(out.glob("*/caches/*/started-*")), 300):
        proc.kill()
        return False, "the run never started"
    proc.kill()
    proc.wait(timeout=30)
    client = docker.from_env()
    mine: dict[str, str | list[str] | bool] = {"label": f"org.jax-cache-harness.owner-pid={proc.pid}"}
    ended = wait_for(lambda: not client.containers.list(filters=mine), 90)
    code, _, err = h.run("check", "examples/stable_script.py", "--versions", VERSION, "--runs", "2", "--backend",
                         "docker", "--out", str(h.root / "sigkill-next-out"))
    left = client.containers.list(all=True, filters=mine)
    said = "said so" if "removed 1 container" in err else "another sweep removed it first"
    return bool(ended) and code == 0 and not left, \
        f"ended by itself: {bool(ended)}, next sweep exit {code}, {len(left)} left ({said})"


def case_left_behind(h: Harness) -> tuple[bool, str]:
    out = h.root / "left-out"
    code, _, _ = h.run("run", str(h.config("left", LEAVE_BEHIND)), "--seeds", "random", "--quiet",
                       "--out", str(out))
    pids = [p.name.split("-", 1)[1] for p in out.glob("*/caches/*/left-*")]
    survivors = [p for p in pids if alive_in(p)]
    return code == 0 and bool(pids) and not survivors, f"{len(pids)} setsid grandchildren, {len(survivors)} alive after"


def case_timeout_left_behind(h: Harness) -> tuple[bool, str]:
    out = h.root / "timeout-out"
    code, _, _ = h.run("run", str(h.config("timeout", LEAVE_BEHIND + "import time; time.sleep(600)\n",
                                           timeout_s=5)), "--seeds", "random", "--quiet", "--out", str(out))
    pids = [p.name.split("-", 1)[1] for p in out.glob("*/caches/*/left-*")]
    survivors = [p for p in pids if alive_in(p)]
    cell = results_of(out)["cells"][0]
    return (code == 0 and cell["verdict"] == "error" and bool(pids) and not survivors,
            f"verdict {cell['verdict']}, {len(survivors)} of {len(pids)} grandchildren alive")


def case_damaged_venv(h: Harness, how: str) -> tuple[bool, str]:
    from harness.environments.venv import VenvBackend
    from harness.core.kinds import Platform

    env_dir = h.root / f"envs-{how}"
    venv = VenvBackend(root=env_dir).prepare(VERSION, Platform.CPU)
    if how == "dangling python":
        target = venv.python.resolve()
        venv.python.unlink()
        venv.python.symlink_to(env_dir / "gone" / target.name)
    else:
        (package,) = venv.path.glob("lib/python*/site-packages/jax")
        shutil.rmtree(package)
    out = h.root / f"damaged-{how.replace(' ', '-')}-out"
    code, _, err = h.run("check", "examples/stable_script.py", "--versions", VERSION, "--runs", "2",
                         "--out", str(out), env=h.env(HARNESS_ENV_DIR=str(env_dir)))
    cell = results_of(out)["cells"][0]
    rebuilt = "rebuilding" in err and "damaged" in err
    return code == 0 and rebuilt and cell["verdict"] == "clean", f"exit {code}, rebuilt: {rebuilt}, {cell['verdict']}"


def case_two_sweeps_one_venv(h: Harness) -> tuple[bool, str]:
    env_dir = h.root / "envs-shared"
    procs = [h.start("check", "examples/stable_script.py", "--versions", VERSION, "--runs", "2", "--quiet",
                     "--out", str(h.root / f"shared-{i}"), env=h.env(HARNESS_ENV_DIR=str(env_dir))) for i in (1, 2)]
    codes = []
    for proc in procs:
        proc.communicate(timeout=900)
        codes.append(proc.returncode)
    verdicts = [results_of(h.root / f"shared-{i}")["cells"][0]["verdict"] for i in (1, 2)]
    return codes == [0, 0] and verdicts == ["clean", "clean"], f"exits {codes}, verdicts {verdicts}"


def case_two_resumes(h: Harness) -> tuple[bool, str]:
    out = h.root / "resume-out"
    first = h.start("run", str(h.config("resume", HANG, runs=2, timeout_s=300)), "--seeds", "random",
                    "--out", str(out))
    if not wait_for(lambda: sorted(out.glob("*/caches/*/started-*")), 300):
        first.kill()
        return False, "the first sweep never started a run"
    first.send_signal(signal.SIGINT)
    try:  # told by SIGTERM, its run's supervisor kills the run at once; then the folder is saved (0.3 s; 3 s at load 11)
        first.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        first.kill()
        first.communicate()
        return False, "the first sweep did not exit within 60 s of SIGINT"
    (folder,) = out.iterdir()
    resumed_at = time.time_ns()
    again = h.start("run", str(h.root / "resume.yaml"), "--seeds", "random", "--resume", str(folder))

    def again_writes() -> bool:
        """The resume holds the folder (its pid in the holder's note) and a run of its own has started: the first
        sweep's marker, still there until the resume empties the cell's folder, is older than the resume."""
        try:
            holder = json.loads((folder / ".writer.holder").read_text())
        except (OSError, ValueError):
            return False
        return holder.get("pid") == again.pid and any(
            p.stat().st_mtime_ns >= resumed_at for p in folder.glob("caches/*/started-*"))

    if not wait_for(again_writes, 300):
        again.kill()
        again.communicate()
        return False, "the first --resume never started a run"
    code, _, err = h.run("run", str(h.root / "resume.yaml"), "--seeds", "random", "--resume", str(folder))
    again.send_signal(signal.SIGTERM)
    again.communicate(timeout=60)
    held, detail = one_line(code, err)
    # The refusal names the writer: the first --resume, by its pid (results/document.py's holder note).
    return held and f"another harness process (pid {again.pid}: " in err and "is writing" in err, detail


def case_flood(h: Harness) -> tuple[bool, str]:
    out = h.root / "flood-out"
    code, _, _ = h.run("run", str(h.config("flood", FLOOD)), "--seeds", "random", "--quiet", "--out", str(out))
    logs = sorted(out.glob("*/logs/*/run-*.log"))
    sizes = [p.stat().st_size for p in logs]
    text = logs[0].read_bytes() if logs else b""
    held = code == 0 and bool(logs) and all(s < (32 << 20) + 1024 for s in sizes) and b"cut here" in text
    return held, f"{len(logs)} logs, largest {max(sizes, default=0) >> 20} MiB of 60 MiB printed"


# Issue 27: a set-order bug (a new jit_f key in about every other run) behind what a script does to JAX's log.
SET_ORDER_F = """
STAGES = list({"embed", "attend", "mix", "project"})


@jax.jit
def f(x):
    for i, name in enumerate(STAGES):
        x = x * (i + 1) + len(name)
    return x
"""
SILENCED = ("import logging\nimport jax, jax.numpy as jnp\njax.jit(lambda x: x + 1)(jnp.float32(1))\n"
            "for n in ('jax', 'jax._src.compiler', 'jax._src.cache_key', 'jax._src.compilation_cache'):\n"
            "    logging.getLogger(n).setLevel(logging.ERROR)\n" + SET_ORDER_F + "print(f(jnp.ones(4)))\n")
FLOOD_AROUND = ("import sys\nimport jax, jax.numpy as jnp\n" + SET_ORDER_F
                + "sys.stderr.write(('x' * 1023 + '\\n') * 40 * 1024)\nprint(f(jnp.ones(4)), flush=True)\n"
                  "sys.stderr.write(('x' * 1023 + '\\n') * 40 * 1024)\n")
FAKE_HIT = ("import os, sys\nimport jax, jax.numpy as jnp\n" + SET_ORDER_F + "f(jnp.ones(4))\n"
            "print(\"Persistent compilation cache hit for 'jit_f' with key 'jit_f-\" + '0' * 64 + \"'\", "
            "file=sys.stderr)\n")


def case_log_against_folder(h: Harness, name: str, script: str, untrusted: bool) -> tuple[bool, str]:
    """The cell reproduces, as its cache folder shows, whatever the script did to JAX's log."""
    out = h.root / f"{name}-out"
    code, _, _ = h.run("check", str(h.write(f"{name}/script.py", script)), "--versions", "0.4.31", "--runs", "8",
                       "--quiet", "--out", str(out))
    cell = results_of(out)["cells"][0]
    said = ("not trusted" in cell["reason"]) == untrusted
    return code == 1 and cell["verdict"] == "reproduced" and said, f"verdict {cell['verdict']}: {cell['reason'][:80]}"


ODD_NAME = ("import os\nimport jax, jax.numpy as jnp\njax.jit(lambda x: x * 2)(jnp.arange(4.0))\n"
            "open(os.path.join(os.environ['JAX_COMPILATION_CACHE_DIR'].encode(), b'odd-\\xff-name'), 'wb').close()\n")


def case_odd_file_name(h: Harness) -> tuple[bool, str]:
    out = h.root / "odd-name-out"
    code, _, err = h.run("check", str(h.write("odd-name/script.py", ODD_NAME)), "--versions", "0.4.31", "--runs",
                         "2", "--quiet", "--out", str(out))
    if code != 0:
        return False, f"exit {code}: {err.strip().splitlines()[-1][:80] if err.strip() else ''}"
    (folder,) = out.iterdir()
    again, _, _ = h.run("report", str(folder))
    cell = results_of(out)["cells"][0]
    return again == 0 and (folder / "report.md").is_file(), f"verdict {cell['verdict']}, report exit {again}"


PLANTED = ("import os, random\nimport jax, jax.numpy as jnp\njax.jit(lambda x: x * 2)(jnp.arange(4.0))\n"
           "d = '%064x' % random.getrandbits(256)\n"
           "open(os.path.join(os.environ['JAX_COMPILATION_CACHE_DIR'], 'jit_a|b|c<img src=x>```<!-- -' + d + '-cache'),"
           " 'w').close()\n")


def case_planted_markdown(h: Harness) -> tuple[bool, str]:
    """A planted file name is the cell's finding: report.md shows it as text (no HTML, no extra columns)."""
    import re

    out = h.root / "planted-out"
    # --fail-on none: `check` exits 1 on the finding (a new planted entry each run) since it fails as pytest does
    code, _, _ = h.run("check", str(h.write("planted/script.py", PLANTED)), "--versions", "0.4.31", "--runs", "3",
                       "--fail-on", "none", "--quiet", "--out", str(out))
    (folder,) = out.iterdir()
    text = (folder / "report.md").read_text()
    outside = re.sub(r"(?s)(`{3,})[^\n]*\n.*?\n\1\n", "", text)
    outside = re.sub(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", "", outside)
    raw = [tag for tag in ("<img", "<!--") if tag in outside]
    verdict = results_of(out)["cells"][0]["verdict"]
    return (code == 0 and verdict == "reproduced" and not raw,
            f"exit {code}, verdict {verdict}, raw HTML outside code: {raw or 'none'}")


def case_closed_pipe(h: Harness, lines: int) -> tuple[bool, str]:
    """`harness check ... 2>&1 | head -N`: the printing stops, the sweep finishes and saves every run."""
    out = h.root / f"pipe-{lines}-out"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "check", "examples/stable_script.py", "--versions",
                             VERSION, "--runs", "3", "--all-runs", "--out", str(out)], cwd=REPO, env=h.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None  # piped
    for _ in range(lines):
        proc.stdout.readline()
    proc.stdout.close()
    code = proc.wait(timeout=900)
    data = results_of(out)
    runs = sum(len(c.get("runs", [])) for c in data["cells"])
    return code == 0 and data["status"] == "complete" and runs == 3, f"exit {code}, {data['status']}, {runs} runs"


def case_submit_out_with_a_space(h: Harness) -> tuple[bool, str]:
    """The real Slurm takes the job scripts of a folder named with a space and a %, and the sweep merges."""
    code, _out, _err = h.run("submit", "configs/smoke.yaml", "--shards", "2", "--wait", "--quiet",
                           "--out", str(h.root / "slurm out 100%"))
    merged = sorted((h.root / "slurm out 100%").glob("*/merged/*/results.json"))
    status = json.loads(merged[0].read_text())["status"] if merged else "no merged results"
    return code == 0 and status == "complete", f"exit {code}, merged: {status}"


def case_vary_from_the_project_folder(h: Harness, factors: str) -> tuple[bool, str]:
    """`harness check train.py --vary ...` run from the script's folder: results/ is inside what script-path
    copies (it copied itself until `File name too long`); the cell is measured and script-path judged."""
    project = h.root / f"project-{factors.replace(',', '-')}"
    h.write(f"{project.name}/train.py", (REPO / "examples" / "stable_script.py").read_text())
    code, _, err = h.run("check", "train.py", "--versions", "0.4.31", "--runs", "2", "--vary", factors, "--quiet",
                         cwd=project)
    if code != 0:
        return False, f"exit {code}: {err.strip().splitlines()[-1][:80] if err.strip() else ''}"
    cells = results_of(project / "results")["cells"]
    found = {f["factor"]: f["outcome"] for c in cells for f in c["variation"]["factors"]}
    copied = list((project / "results").rglob("script/*/results"))
    return (len(cells) == 1 and found.get("script-path") == "hit" and not copied,
            f"{len(cells)} cell, script-path {found.get('script-path')}, results copied: {len(copied)}")


def case_nightly_plan_with_bad_versions(h: Harness, versions: str) -> tuple[bool, str]:
    """nightly.yml's plan step, run as the workflow runs it (its `defaults` shell) with the real harness:
    versions it cannot resolve fail the step (without pipefail it passed, planning no release; an
    unquoted `*` became the repository's file names)."""
    import yaml

    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "nightly.yml").read_text())
    (step,) = [s for s in workflow["jobs"]["plan"]["steps"] if s.get("id") == "resolve"]
    script, output = h.write("plan/step.sh", step["run"]), h.root / "plan" / "output"
    shell = [str(script) if w == "{0}" else w for w in workflow["defaults"]["run"]["shell"].split()]
    env = h.env(CONFIG=workflow["env"]["CONFIG"], VERSIONS=versions, GITHUB_OUTPUT=str(output),
                GITHUB_STEP_SUMMARY=str(h.root / "plan" / "summary"))
    done = subprocess.run(shell, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    planned = output.read_text() if output.exists() else ""
    return done.returncode != 0 and "versions=" not in planned, f"step exit {done.returncode}, output {planned!r}"


Argv = list[str] | Callable[[], list[str]]  # a callable writes its input first (a 200 MB file: only when run)


def bad_fingerprints(h: Harness) -> list[tuple[str, Argv]]:
    """`harness diff GOOD BAD`: each a traceback, a value printed at length or a wrong type taken before."""
    cell = {"jax_version": "0.4.31", "platform": "cpu", "device_count": 8, "seed": 1,
            "modules": {"jit_f": {"jit_f-" + "a" * 64: {"computation": "b" * 64}}}, "facts": {}}
    good = {"fingerprint": 1, "source": "s.py", "host": {}, "cells": [cell]}
    text = json.dumps(good)
    bad = {
        "200,000 nested brackets": "[" * 200_000 + "]" * 200_000,
        "a seed of 100,000 digits": text.replace('"seed": 1', '"seed": ' + "1" * 100_000),
        "jax_version: null": text.replace('"0.4.31"', "null"),
        "seed: NaN": text.replace('"seed": 1', '"seed": NaN'),
        "seed: Infinity": text.replace('"seed": 1', '"seed": Infinity'),
        'seed: "s"': text.replace('"seed": 1', '"seed": "s"'),
        "an integer hash": text.replace('"' + "b" * 64 + '"', "12345"),
        "fingerprint: 2": text.replace('"fingerprint": 1', '"fingerprint": 2'),
        "an unknown platform": text.replace('"cpu"', '"tpu-v9"'),
    }
    path = h.write("fingerprints/good.json", text)
    cases: list[tuple[str, Argv]] = [(f"diff: {name}", ["diff", str(path), str(h.write(f"fingerprints/{i}.json", content))])
                                     for i, (name, content) in enumerate(bad.items())]

    def huge() -> list[str]:  # a 200 MB value: read whole and printed before
        with open(h.root / "fingerprints" / "huge.json", "w") as f:
            f.write('{"fingerprint": 1, "cells": [{"jax_version": "')
            f.writelines("9" * (1 << 20) for _ in range(200))
            f.write('"}]}')
        return ["diff", str(path), f.name]

    cases.append(("diff: a 200 MB fingerprint", huge))
    return cases


# Issue 32: CI outputs, hostile text in JUnit and on the terminal, a temporary folder per run.
RAW = tuple(chr(c) for c in (*range(9), *range(11, 32), *range(0x7f, 0xa0)))  # no \t, \n


def case_summary_at_a_folder(h: Harness) -> tuple[bool, str]:
    """GITHUB_STEP_SUMMARY naming a folder: bad input before the first run (it was exit 2 after the sweep)."""
    out = h.root / "summary-folder-out"
    code, _, err = h.run("check", "examples/stable_script.py", "--versions", VERSION, "--runs", "2", "--fail-on",
                         "reproduced", "--out", str(out), env=h.env(GITHUB_STEP_SUMMARY=str(h.root)), timeout=120)
    held, detail = one_line(code, err)
    return held and "GITHUB_STEP_SUMMARY" in err and not out.exists(), detail + (", nothing run" if not out.exists() else "")


LATE_OUTPUTS = ("import os\nimport jax, jax.numpy as jnp\n" + SET_ORDER_F + "print(f(jnp.ones(4)))\n"
                "summary = os.environ['GITHUB_STEP_SUMMARY']\n"
                "if not os.path.isdir(summary):\n    os.remove(summary) if os.path.exists(summary) else None\n"
                "    os.mkdir(summary)\n"
                "ci = os.environ['LATE_CI']\nif not os.path.exists(ci):\n    open(ci, 'w').write('a file now')\n")


def case_outputs_failing_after_the_sweep(h: Harness) -> tuple[bool, str]:
    """The program turns the summary into a folder and the JUnit file's folder into a file while it runs: both
    are said, and the regression still exits 1 (it was 2, --fail-on skipped)."""
    out, summary, ci = h.root / "late-out", h.root / "late-summary.md", h.root / "late-ci"
    code, _, err = h.run("check", str(h.write("late/script.py", LATE_OUTPUTS)), "--versions", "0.4.31", "--runs",
                         "8", "--quiet", "--fail-on", "reproduced", "--junit-xml", str(ci / "junit.xml"),
                         "--env", f"LATE_CI={ci}", "--out", str(out), env=h.env(GITHUB_STEP_SUMMARY=str(summary)))
    cell = results_of(out)["cells"][0]
    said = "error: GITHUB_STEP_SUMMARY" in err and "error: --junit-xml" in err
    return (code == 1 and said and cell["verdict"] == "reproduced",
            f"exit {code}, verdict {cell['verdict']}, both outputs said: {said}")


HOSTILE_CRASH = ("import jax, jax.numpy as jnp\njax.jit(lambda x: x * 2)(jnp.arange(4.0))\n"
                 # ESC first: \v, \f and \r end the crash's line (Python's splitlines), what follows is cut
                 f"raise ValueError('\\x1b]0;owned\\x07 \\x1b[2J \\x1b[31mred ' + {''.join(RAW)!r})\n")


def case_hostile_crash_in_junit(h: Harness) -> tuple[bool, str]:
    """A crash line holding every C0, DEL and C1 character: the JUnit file is well-formed (expat), valid
    (the schema), and stderr and stdout get no raw control character."""
    from xml.etree import ElementTree

    import xmlschema

    out, junit = h.root / "hostile-out", h.root / "hostile-ci" / "junit.xml"
    code, stdout, err = h.run("check", str(h.write("hostile/script.py", HOSTILE_CRASH)), "--versions", VERSION,
                              "--runs", "2", "--fail-on", "error", "--junit-xml", str(junit), "--out", str(out))
    text = junit.read_text(errors="strict") if junit.exists() else ""
    try:
        ElementTree.fromstring(text.encode())
        xmlschema.XMLSchema(REPO / "tests" / "fixtures" / "junit-10.xsd").validate(text)
        parsed = "well-formed and valid"
    except Exception as exc:  # noqa: BLE001 - what broke is the detail
        parsed = f"{type(exc).__name__}: {str(exc)[:60]}"
    raw = sorted({f"{ord(c):#x}" for c in stdout + err if c in RAW})
    return (code == 1 and parsed == "well-formed and valid" and not raw and "\\x1b" in text,
            f"exit {code}, junit {parsed}, raw on the terminal: {raw[:4] or 'none'}")


TRAIN_CKPT = ("import os, tempfile\nimport jax, jax.numpy as jnp\njax.jit(lambda x: x * 2)(jnp.arange(4.0))\n"
              "folder = tempfile.mkdtemp(prefix='train-ckpt-')\n"
              "open(os.path.join(folder, 'step-1.ckpt'), 'w').write('weights')\n"
              "open(os.path.join(os.environ['JAX_COMPILATION_CACHE_DIR'], f'ckpt-{os.getpid()}'), 'w')"
              ".write(folder + '\\n' + os.environ.get('TMPDIR', ''))\n")


def case_run_tmpdir(h: Harness, backend: str, hang: bool = False) -> tuple[bool, str]:
    """A script's tempfile.mkdtemp(prefix='train-ckpt-') is in a folder of its run's own, gone with the run
    (107 /tmp/train-ckpt-* were found, one per run), also when the run times out."""
    name = f"ckpt-{backend}{'-timeout' if hang else ''}"
    base = h.root / f"{name}-machine-tmp"
    base.mkdir()
    out = h.root / f"{name}-out"
    config = h.config(name, TRAIN_CKPT + ("import time; time.sleep(600)\n" if hang else ""), runs=3,
                      timeout_s=20 if hang else 120)
    code, _, _ = h.run("run", str(config), "--backend", backend, "--seeds", "random", "--quiet", "--out", str(out),
                       env=h.env(TMPDIR=str(base)))
    seen = [p.read_text().split("\n") for p in out.glob("*/caches/*/ckpt-*")]
    tmpdirs = {tmpdir for _, tmpdir in seen}
    if backend == "docker":  # the container's own /tmp, which exists inside and goes with the container
        own = tmpdirs == {"/tmp"}
    else:
        own = len(tmpdirs) == len(seen) and all(Path(t).parent == base for t in tmpdirs)
    left = sorted(p.name for p in base.iterdir())
    held = code == 0 and bool(seen) and own and not left
    return held, f"exit {code}, {len(seen)} runs, TMPDIR {sorted(tmpdirs)[:1]}..., left: {left[:3] or 'none'}"


def bad_input_held(h: Harness, argv: Argv) -> tuple[bool, str]:
    code, _, err = h.run(*(argv() if callable(argv) else argv), timeout=60)
    return one_line(code, err)


def bad_input_cases(h: Harness) -> list[tuple[str, Argv]]:
    base = "name: t\nrepro: shard_map_grad\n"
    cfg = {
        "newline in an axis name": base + "jax_versions: ['0.4.29']\nmeshes: [{shape: [8,1,1,1], "
                                          "axis_names: [\"a\\ntouch /tmp/x\", b, c, d]}]\n",
        "5,000-digit version": base + "jax_versions: ['" + "1" * 5000 + "']\n",
        "5,000-digit device_count": base + "jax_versions: ['0.4.29']\ndevice_count: " + "1" * 5000 + "\n",
        "a key that is a list": base + "jax_versions: ['0.4.29']\n? [a, b]\n: c\n",
        "nesting 100,000 deep": base + "jax_versions: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "exponential aliases": "x0: &x0 [a, a, a, a, a, a, a, a, a]\n" + "".join(
            f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 9)}]\n" for i in range(1, 10)) + base + "jax_versions: *x9\n",
        "repro: ~nosuchuser/x.py": "name: t\nrepro: ~nosuchuser-stress/x.py\njax_versions: ['0.4.29']\n",
        "docker: []": base + "jax_versions: ['0.4.29']\ndocker: []\n",
        "a 300-character name": "name: " + "n" * 300 + "\nrepro: shard_map_grad\njax_versions: ['0.4.29']\n",
    }
    cases = [(name, ["run", str(h.write(f"bad/{i}.yaml", text)), "--out", str(h.root / "bad-out")])
             for i, (name, text) in enumerate(cfg.items())]
    huge = h.root / "bad" / "huge.yaml"
    with open(huge, "wb") as f:
        f.truncate(100 << 20)
    cases.append(("a 100 MiB config", ["run", str(huge), "--out", str(h.root / "bad-out")]))
    cases.append(("a wrong option", ["run", "configs/smoke.yaml", "--runs", "1"]))
    good = REPO / "tests" / "fixtures" / "smoke-run"
    good_text = (good / "results.json").read_bytes()
    for name, content in {"binary results.json": b"\x00\xff" * 64,
                          "cells: {} in results.json": b'{"schema_version": 1, "cells": {}}',
                          "schema_version: \"1\"": b'{"schema_version": "1"}',
                          "a NaN duration": good_text.replace(b'"duration_s": ', b'"duration_s": NaN, "x": ', 1),
                          "a duration of 1e308": good_text.replace(b'"duration_s": ', b'"duration_s": 1e308, "x": ', 1),
                          }.items():
        folder = h.root / "bad" / "".join(c if c.isalnum() else "-" for c in name)  # one folder per case
        h.write(f"bad/{folder.name}/results.json", content)
        cases += [(f"{name}: report", ["report", str(folder)]),
                  (f"{name}: compare", ["compare", str(good), "--baseline", str(folder)]),
                  (f"{name}: merge", ["merge", str(folder), str(good), "--out", str(h.root / "bad-out")])]
    cases.append(("harness report /dev/zero", ["report", "/dev/zero"]))
    many = json.loads(good_text)
    small = {k: v for k, v in many["cells"][0].items() if k in ("jax_version", "platform", "device_count", "mesh",
                                                                  "verdict", "reason")}
    h.write("bad/many-cells/results.json", json.dumps({**many, "cells": [small] * 1_000_000}))
    cases.append(("a schema-valid results.json of 1,000,000 cells: report", ["report", str(h.root / "bad" / "many-cells")]))
    planted = json.loads((good / "results.json").read_text())
    planted["cells"][0]["command"] = {"argv": ["/x/t.py"], "env": {f"A=1;touch {h.root}/pwned;B": "v"}, "cwd": "/x"}
    h.write("bad/env-name/results.json", json.dumps(planted))
    cases.append(("a shell command as an env name in results.json: report", ["report", str(h.root / "bad" / "env-name")]))
    direct = h.write("bad/direct.py", "# /// script\n# dependencies = ['evil @ file:///tmp/evil']\n# ///\nimport jax\n")
    cases += [("a direct-URL requirement in a script's metadata", ["check", str(direct), "--out", str(h.root / "bad-out")]),
              ("--with 'pkg @ https://...'", ["check", "examples/stable_script.py", "--with", "evil @ https://x/e.whl",
                                             "--out", str(h.root / "bad-out")]),
              ("--requirements /dev/zero", ["check", "examples/stable_script.py", "--requirements", "/dev/zero",
                                            "--out", str(h.root / "bad-out")])]
    a_file = h.write("bad/a-file", "a file, not a folder")
    cases.append(("--junit-xml under a file", ["check", "examples/stable_script.py", "--junit-xml",
                                               str(a_file / "j.xml"), "--out", str(h.root / "bad-out")]))
    h.write("bad/s9.py", "import jax\n")
    cases.append(("init --output under the script (a file)", ["init", str(h.root / "bad" / "s9.py"), "--output",
                                                             str(h.root / "bad" / "s9.py" / "x.yaml")]))
    h.write("bad/jax-stub/pyproject.toml", f'[project]\nname = "jax"\nversion = "{VERSION}"\n')
    h.write("bad/jax-stub/jax/__init__.py", f"__version__ = {VERSION!r}\n")
    cases.append(("--with-editable of a package named jax", ["check", "examples/stable_script.py", "--with-editable",
                                                             str(h.root / "bad" / "jax-stub"), "--out",
                                                             str(h.root / "bad-out")]))
    cases.append(("submit --sbatch-arg with a newline", ["submit", "configs/smoke.yaml", "--shards", "2", "--dry-run",
                                                         "--sbatch-arg", "--account=x\n#SBATCH --array=9"]))
    return cases + bad_fingerprints(h)


def case_init_replaces_nothing(h: Harness, script_name: str, output: str) -> tuple[bool, str]:
    """`harness init` with --force, from the script's folder, relative paths: the script (or an existing
    config, when the script's name would break out of the config's comment) is left as it was."""
    folder = h.root / f"init-{len(list(h.root.glob('init-*')))}"
    folder.mkdir()
    (folder / "mine.py").write_text("import jax\n")
    (folder / script_name).write_text("import jax\n")
    (folder / "mine.yaml").write_text("kept: true\n")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    code, _, err = h.run("init", script_name, "--output", output, "--force", cwd=folder, timeout=60)
    held, detail = one_line(code, err)
    after = {p.name: p.read_bytes() for p in folder.iterdir()}
    return held and after == before, detail + ("" if after == before else ": a file was replaced")


def case_extra_index_serving_jax(h: Harness) -> tuple[bool, str]:
    """An --extra-index-url (a real index on the loopback) that serves a stub jax: refused before any venv."""
    from tests.local_index import build_wheel, served, simple_index

    wheel = build_wheel(h.root / "evil-built", "jax", VERSION, f"__version__ = {VERSION!r}\n")
    simple_index(h.root / "evil-index", {"jax": [wheel.name], "jaxlib": []}, {wheel.name: wheel})
    script = h.write("evil-index-user/s.py", "import jax\n")
    envs = h.root / "evil-envs"
    with served(h.root / "evil-index") as url:
        code, _, err = h.run("check", str(script), "--versions", VERSION, "--extra-index-url", f"{url}/simple",
                             "--out", str(h.root / "evil-out"), env=h.env(HARNESS_ENV_DIR=str(envs)), timeout=120)
    held, detail = one_line(code, err)
    return held and not envs.exists(), detail


def case_forged_json(h: Harness) -> tuple[bool, str]:
    """A measured program writes forged --json summaries into its ancestors' stdout through /proc: the
    harness's stdout is one JSON object, its own."""
    script = REPO / "tests" / "fixtures" / "hostile" / "forge_json.py"
    code, out, _err = h.run("check", str(script), "--versions", VERSION, "--runs", "2", "--json", "--quiet",
                           "--out", str(h.root / "forge-out"))
    lines = out.splitlines()
    try:
        summary = json.loads(out)
    except ValueError:
        summary = {}
    held = code == 0 and len(lines) == 1 and "forged" not in summary and summary.get("cells")
    return bool(held), f"exit {code}, {len(lines)} line(s) on stdout, forged: {'forged' in out}"


# Issues 60.1 and 61.5-7: what a run leaves in its own folder is read within bounds. Each program compiles, then
# puts something in place of one of its files; the harness must finish, say it in the run's row, and not hang.
REPLACES = {  # the file (by the variable that names it to the run) -> what the program puts there at its end
    "recorder": "os.environ['HARNESS_RECORDER']",
    "settings": "os.environ['HARNESS_CACHE_RECORD']",
    "dump": "os.path.join(os.environ['JAX_DUMP_IR_TO'], 'jax_ir9999_jit__lambda_compile.mlir')",
}
PLANTS = {
    "fifo": "os.mkfifo(p)",
    "folder": "os.mkdir(p)",
    "zero": "os.symlink('/dev/zero', p)",
}
RECORDER_FLOOD = ("import os\nimport jax, jax.numpy as jnp\njax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()\n"
                  "with open(os.environ['HARNESS_RECORDER'], 'ab') as f:\n"
                  "    f.write(b'x\\n' * (32 << 20))\n")  # 64 MiB of two-byte lines
# Seeded by a str's hash, so the constant follows the hash seed: reproduced, its Evidence diffed (an unseeded one is
# the program's own randomness: new input, exit 0).
BIG_CONSTANT = ("import jax, numpy as np\n"
                "c = np.random.default_rng(hash('constant') & 0xFFFFFFFF).random(262_144).astype(np.float32)\n"
                "print(jax.jit(lambda x: x + c)(np.float32(1.0)).sum())\n")


def _planted(which: str, plant: str) -> str:
    return ("import os\nimport jax, jax.numpy as jnp\njax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()\n"
            f"p = {REPLACES[which]}\n"
            "if os.path.lexists(p):\n    os.unlink(p)\n"
            f"{PLANTS[plant]}\n")


def case_replaced_file(h: Harness, which: str, plant: str) -> tuple[bool, str]:
    """A run replaces its recorder file, its cache-settings record or a file of its IR dump with a named pipe,
    a folder or a link to /dev/zero: the check ends (was: blocked in open() for 300 s+, or a traceback, exit 3),
    and the run's row says what was not read."""
    out = h.root / f"replaced-{which}-{plant}-out"
    script = h.write(f"replaced-{which}-{plant}/script.py", _planted(which, plant))
    code, _, err = h.run("check", str(script), "--versions", "0.10.2", "--runs", "2", "--quiet", "--out", str(out),
                         timeout=600)
    if code not in (0, 1):
        return False, f"exit {code}: {err.strip().splitlines()[-1][:80] if err.strip() else ''}"
    cell = results_of(out)["cells"][0]
    said = " ".join(json.dumps(r.get("log_note", "")) + json.dumps(r.get("script_cache", {})) for r in cell["runs"])
    words = {"recorder": "the recorder file", "settings": "the cache-settings record", "dump": "the run's IR dump"}
    held = cell["verdict"] != "error" and words[which] in said and "not read" in said
    return held, f"exit {code}, verdict {cell['verdict']}, said: {words[which] in said}"


def case_recorder_flood(h: Harness) -> tuple[bool, str]:
    """64 MiB of two-byte lines appended to the recorder: the harness's own memory stays bounded (was 2.6 GB; a
    normal check's is about 0.16 GB). Its peak (VmHWM) is read from /proc while it runs, its runs apart."""
    out = h.root / "recorder-flood-out"
    script = h.write("recorder-flood/script.py", RECORDER_FLOOD)
    code, _, peak_kb, _ = run_with_peak(h, "check", str(script), "--versions", "0.10.2", "--runs", "2", "--quiet",
                                        "--out", str(out), timeout=600)
    cell = results_of(out)["cells"][0] if code in (0, 1) else {"verdict": "?"}
    held = code in (0, 1) and cell["verdict"] != "error" and 0 < peak_kb < 512 * 1024
    return held, f"exit {code}, verdict {cell['verdict']}, the harness's own peak {peak_kb >> 10} MB"


def case_big_constant(h: Harness) -> tuple[bool, str]:
    """A jitted function closing over a 1 MiB random array the hash seed draws (a line of 2 MB in its module): the check
    ends promptly (sat 12 minutes before) and says the constant differs by its size and digest."""
    out = h.root / "big-constant-out"
    script = h.write("big-constant/script.py", BIG_CONSTANT)
    start = time.monotonic()
    code, _, _err = h.run("check", str(script), "--versions", "0.10.2", "--runs", "2", "--quiet", "--out", str(out),
                          timeout=600)
    took = time.monotonic() - start
    report = next(out.glob("*/report.md")).read_text() if code == 1 else ""
    held = code == 1 and "2.0 MiB constant differs" in report and len(report) < 100_000
    return held, f"exit {code} in {took:.0f} s, report.md {len(report)} bytes"


COMPILES = "import jax, jax.numpy as jnp\njax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()\n"
_swept: dict[str, Path] = {}


def interrupted_folder(h: Harness) -> Path:
    """A results folder as an interrupted sweep leaves it (a real sweep's, its cell dropped and its status
    `interrupted`), made once; each case resumes a copy."""
    if "folder" not in _swept:
        out = h.root / "planted-sweep"
        code, _, err = h.run("run", str(h.config("planted", COMPILES)), "--seeds", "random", "--quiet",
                             "--out", str(out))
        if code != 0:
            raise RuntimeError(f"the sweep exited {code}: {err.strip()[-80:]}")
        (folder,) = out.iterdir()
        document = json.loads((folder / "results.json").read_text())
        document.update(cells=[], status="interrupted")
        (folder / "results.json").write_text(json.dumps(document))
        _swept["folder"] = folder
    return _swept["folder"]


def case_planted_link(h: Harness, planted: str) -> tuple[bool, str]:
    """A link planted in a results folder (`planted`, relative; CELL: the cell's slug) to a folder of the
    user's (or a file in it), then --resume: one line, exit 2, the link's target as it was."""
    source = interrupted_folder(h)
    folder = h.root / f"planted-{len(list(h.root.glob('planted-*')))}"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns(".writer*"))
    victim = h.root / f"victim-{folder.name}"
    victim.mkdir()
    (victim / "precious.txt").write_text("precious\n")
    (slug,) = [p.name for p in (folder / "caches").iterdir()]
    link = folder / planted.replace("CELL", slug)
    if link.is_dir():
        shutil.rmtree(link)
    link.symlink_to(victim if planted.startswith("caches") else victim / "precious.txt")
    code, _, err = h.run("run", str(h.root / "planted.yaml"), "--seeds", "random", "--resume", str(folder),
                         timeout=300)
    held, detail = one_line(code, err)
    kept = sorted(p.name for p in victim.iterdir()) == ["precious.txt"] and \
        (victim / "precious.txt").read_text() == "precious\n"
    return held and kept, detail + ("" if kept else ": the link's target was changed")


def case_planted_reduced(h: Harness) -> tuple[bool, str]:
    """reduced.py planted as a link in a reduce folder, then reduce --resume: its target left as it was."""
    folder = h.root / "reduce-planted"
    shutil.copytree(reduced_folder(h), folder, ignore=shutil.ignore_patterns(".writer*"))
    victim = h.root / "reduce-victim.py"
    victim.write_text("precious\n")
    (folder / "reduced.py").unlink(missing_ok=True)
    (folder / "reduced.py").symlink_to(victim)
    code, _, err = h.run("reduce", str(REPO / "tests" / "fixtures" / "sm.py"), "--versions", REDUCED_VERSION,
                         "--resume", str(folder), "--quiet", timeout=600)
    held, detail = one_line(code, err)
    return held and victim.read_text() == "precious\n", detail


REDUCED_VERSION = "0.4.28"  # the seed's bug: a release where the reducer has something to reduce
CANARY_SCRIPT = (REPO / "tests" / "fixtures" / "reduce" / "writes_beside_itself.py").read_text()
_reduced: dict[str, Path] = {}


def reduced_folder(h: Harness) -> Path:
    """A small reduction of the seed (two candidates), made once for the cases that edit its state."""
    if "seed" not in _reduced:
        out = h.root / "reduce-seed"
        code, _, err = h.run("reduce", str(REPO / "tests" / "fixtures" / "sm.py"), "--versions", REDUCED_VERSION,
                             "--max-candidates", "2", "--quiet", "--out", str(out), timeout=1800)
        if code != 0:
            raise RuntimeError(f"the seed's reduction exited {code}: {err.strip()[-80:]}")
        (_reduced["seed"],) = [p for p in out.iterdir() if p.is_dir()]
    return _reduced["seed"]


def case_reduce_writes_outside(h: Harness) -> tuple[bool, str]:
    """A candidate that writes outside its folder (the `if` choosing the script's own folder removed) is
    refused; nothing appears in the canary folder nor beside the user's script; the reduction still works."""
    canary, user = h.root / "canary", h.root / "writer-project"
    script = h.write("writer-project/train.py", CANARY_SCRIPT.replace("@CANARY@", str(canary / "out")))
    out = h.root / "writer-out"
    code, _, _err = h.run("reduce", str(script), "--versions", REDUCED_VERSION, "--quiet", "--out", str(out),
                         "--max-candidates", "30", timeout=3600)
    (folder,) = out.iterdir()
    memo = json.loads((folder / "reduce.json").read_text())["memo"].values()
    refused = sum("wrote outside its own folder" in t["why"] for t in memo)
    beside = sorted(p.name for p in user.rglob("*"))
    held = code == 0 and not canary.exists() and beside == ["cfg_run.txt", "out", "train.py"] and refused > 0
    return held, f"exit {code}, {refused} candidate(s) refused, canary {'written' if canary.exists() else 'empty'}"


def case_reduce_state(h: Harness, change: dict[str, Any] | None) -> tuple[bool, str]:
    """--resume of an edited reduce.json: a planted best (None: the seal's refusal), or a field out of range."""
    source = reduced_folder(h)
    folder = h.root / f"reduce-edited-{len(list(h.root.glob('reduce-edited-*')))}"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns(".writer*"))
    state = json.loads((folder / "reduce.json").read_text())
    planted = h.root / "planted-best-ran"
    state.update(change if change is not None else {"best": f"open({str(planted)!r}, 'w').write('ran')\n"})
    (folder / "reduce.json").write_text(json.dumps(state))
    code, _, err = h.run("reduce", str(REPO / "tests" / "fixtures" / "sm.py"), "--versions", REDUCED_VERSION,
                         "--resume", str(folder), "--quiet", timeout=600)
    held, detail = one_line(code, err)
    return held and not planted.exists(), detail


INDEX_TOKEN = "pypi-stress-S3cr3t"
INDEX_PAGE = b'{"files": [{"filename": "jax-0.4.29.tar.gz", "upload-time": "2024-06-10T00:00:00Z"}]}'


@contextmanager
def hostile_index(respond: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """An index on the loopback whose every answer is `respond(handler)`: its URL while the block runs."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            try:
                respond(self)
            except OSError:  # the harness hung up, as it should on a page it refuses
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/simple"
    finally:
        server.shutdown()
        server.server_close()


def _answer(handler: BaseHTTPRequestHandler, body: bytes, status: int = 200, **headers: str) -> None:
    handler.send_response(status)
    for name, value in {"Content-Type": "application/vnd.pypi.simple.v1+json",
                        "Content-Length": str(len(body)), **headers}.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def _drip(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
    handler.end_headers()
    for _ in range(40):  # one byte every 5 s: each read is quick, the page never ends
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(5)


INDEX_SERVERS: dict[str, tuple[Callable[[BaseHTTPRequestHandler], None], str]] = {
    # name: (what the index answers, the URL's user part), each `harness versions` one line, exit 2
    "a wrong token in --index-url is never printed": (lambda h: _answer(h, b"no", 401), f"__token__:{INDEX_TOKEN}@"),
    "upload-time: yesterday": (lambda h: _answer(h, INDEX_PAGE.replace(b"2024-06-10T00:00:00Z", b"yesterday")), ""),
    "upload-time: 5": (lambda h: _answer(h, INDEX_PAGE.replace(b'"2024-06-10T00:00:00Z"', b"5")), ""),
    "PEP 691 JSON in UTF-16": (lambda h: _answer(h, INDEX_PAGE.decode().encode("utf-16")), ""),
    "a JSON list": (lambda h: _answer(h, b"[1, 2]"), ""),
    "requires-python: 5": (lambda h: _answer(h, INDEX_PAGE.replace(b'"upload-time"', b'"requires-python": 5, "x"')), ""),
    "a redirect loop": (lambda h: _answer(h, b"", 302, Location=h.path), ""),
    "a 100 MiB page": (lambda h: _answer(h, b" " * (100 << 20)), ""),
    "a byte every 5 s": (_drip, ""),
}


def case_hostile_index(h: Harness, name: str) -> tuple[bool, str]:
    respond, user = INDEX_SERVERS[name]
    cache = h.root / "index-home" / name.replace(" ", "-").replace("/", "-")
    with hostile_index(respond) as url:
        url = url.replace("http://", f"http://{user}")
        start = time.monotonic()
        code, _, err = h.run("versions", "configs/smoke.yaml", "--versions", ">=0.4.26", "--index-url", url,
                             timeout=200, env=h.env(HOME=str(cache)))
        took = time.monotonic() - start
    # `versions` first says where the packages come from (a progress line), then the one line of the error
    said = [line for line in err.strip().splitlines() if not line.startswith("harness: packages from ")]
    held, detail = one_line(code, "\n".join(said))
    kept = list(cache.rglob("*.json"))  # a page that did not validate is never the copy on disk
    return held and INDEX_TOKEN not in err and took < 80 and not kept, f"{detail} in {took:.0f} s, {len(kept)} kept"


def case_file_index(h: Harness) -> tuple[bool, str]:
    for project, files in {"jax": ["jax-0.4.29.tar.gz"], "jaxlib": ["jaxlib-0.4.29-cp311-cp311-manylinux2014_x86_64.whl"]}.items():
        links = "".join(f'<a href="../../files/{f}">{f}</a>' for f in files)
        h.write(f"file-index/simple/{project}/index.html", f"<html><body>{links}</body></html>")
    code, out, err = h.run("versions", "configs/smoke.yaml", "--versions", ">=0.4.26",
                           "--index-url", (h.root / "file-index" / "simple").as_uri(), timeout=60,
                           env=h.env(HOME=str(h.root / "index-home" / "file")))
    listed = [line.split()[0] for line in out.splitlines() if line.strip()]
    return code == 0 and listed == ["0.4.29"], f"exit {code}: {(out or err).strip()[:80]}"


def case_base_image_sigterm(h: Harness) -> tuple[bool, str]:
    """SIGTERM to `harness base-image` while debootstrap runs: it stops too, and its rootfs goes."""
    tmp = h.root / "base-image-tmp"
    tmp.mkdir()
    proc = h.start("base-image", "--image", "jax-harness-stress:stopped", "--force", env=h.env(TMPDIR=str(tmp)))
    if not wait_for(lambda: list(tmp.glob("jax-harness-rootfs.*/*")), 120):
        proc.kill()
        return False, f"debootstrap never wrote its rootfs: {proc.communicate()[1][-80:]}"
    proc.send_signal(signal.SIGTERM)
    _, _err = proc.communicate(timeout=120)
    left = [p.name for p in tmp.iterdir()]
    debootstraps = [p for p in Path("/proc").glob("[0-9]*/cmdline")
                    if str(tmp) in p.read_bytes().replace(b"\0", b" ").decode(errors="replace")]
    held = proc.returncode == 143 and not left and not debootstraps
    return held, f"exit {proc.returncode}, left {left or 'nothing'}, {len(debootstraps)} debootstrap(s) still running"

WRITES_UNDER_TMP = (REPO / "tests" / "fixtures" / "reduce" / "writes_under_tmp.py").read_text()
ESCAPES_SCRIPT = (REPO / "tests" / "fixtures" / "reduce" / "escapes_when_its_if_goes.py").read_text()


def case_reduce_as_a_user_runs_it(h: Harness) -> tuple[bool, str]:
    """From the script's folder, the default relative --out, a script writing a checkpoint and a log under /tmp:
    it reduces (exit 0), and no candidate's line reaches the machine's /tmp (issue 48)."""
    project, place = h.root / "tmp-writer-project", f"/tmp/harness-stress-{os.getpid()}-ckpt"
    script = h.write("tmp-writer-project/train.py", WRITES_UNDER_TMP.replace("@TMP@", place))
    try:
        code, _, err = h.run("reduce", script.name, "--versions", REDUCED_VERSION, "--quiet", "--max-candidates", "6",
                             cwd=project, timeout=1800)
        ran = {json.loads(line)["ran"] for line in Path(f"{place}.log").read_text().splitlines()} \
            if Path(f"{place}.log").exists() else set()
    finally:
        shutil.rmtree(place, ignore_errors=True)
        Path(f"{place}.log").unlink(missing_ok=True)
    candidates = sorted(r for r in ran if "/candidates/" in r)
    held = code == 0 and str(script) in ran and not candidates
    return held, f"exit {code}, {len(candidates)} candidate line(s) in the machine's /tmp: {err.strip()[-60:]}"


def case_reduce_escapes(h: Harness) -> tuple[bool, str]:
    """A candidate (its `if` dropped) whose shell writes through /proc/<pid outside>/cwd and /root into a canary
    folder and whose child asks the engine's socket for a volume: nothing lands, no volume (issue 49)."""
    canary = h.root / "escape-canary"
    canary.mkdir()
    outside = subprocess.Popen(["sleep", "3600"], cwd=canary)
    volume = f"harness-stress-escape-{os.getpid()}"
    script = h.write("escape-project/train.py", ESCAPES_SCRIPT.replace("@PID@", str(outside.pid))
                     .replace("@CANARY@", str(canary)).replace("@VOLUME@", volume))
    try:
        code, _, _err = h.run("reduce", str(script), "--versions", REDUCED_VERSION, "--quiet", "--out",
                             str(h.root / "escape-out"), "--max-candidates", "30", timeout=3600)
    finally:
        outside.kill()
        outside.wait()
    (folder,) = (h.root / "escape-out").iterdir()
    memo = json.loads((folder / "reduce.json").read_text())["memo"].values()
    stopped = sum("CalledProcessError" in t["why"] for t in memo)  # candidates whose escape the sandbox stopped
    landed = sorted(p.name for p in canary.iterdir())
    volumes = subprocess.run(["docker", "volume", "ls", "-q"], capture_output=True, text=True, check=False).stdout \
        if shutil.which("docker") else ""
    made = volume in volumes.split()
    if made:
        subprocess.run(["docker", "volume", "rm", volume], capture_output=True, check=False)
    held = code == 0 and not landed and not made and stopped > 0
    return held, (f"exit {code}, {stopped} escaping candidate(s) stopped, canary {landed or 'empty'}, "
                  f"volume {'made' if made else 'not made'}")


def case_reduce_sigterm_during_the_original(h: Harness) -> tuple[bool, str]:
    """SIGTERM while the original is checked: exit 143, a resume line, and that line completes (issue 49 #16)."""
    out = h.root / "reduce-sigterm"
    proc = h.start("reduce", str(REPO / "tests" / "fixtures" / "sm.py"), "--versions", REDUCED_VERSION,
                   "--max-candidates", "1", "--out", str(out))
    seen = []
    assert proc.stderr is not None  # piped
    for line in proc.stderr:
        seen.append(line)
        if "run 1/" in line:
            proc.send_signal(signal.SIGTERM)
            break
    _, rest = proc.communicate(timeout=300)
    last = ("".join(seen) + rest).strip().splitlines()[-1]
    if proc.returncode != 143 or not last.startswith("continue with: harness "):
        return False, f"exit {proc.returncode}: {last[:80]}"
    code, _, err = h.run(*last.removeprefix("continue with: harness ").split(), timeout=1800)
    return code == 0, f"exit 143 then the resume line: exit {code} {err.strip()[-60:] if code else ''}"


def case_reduce_empty_key(h: Harness) -> tuple[bool, str]:
    """A planted best sealed with HMAC(b"") while the key file is 0 bytes (made on a full disk): refused
    unrun, one line, exit 2; the key is made anew (issue 49 #3)."""
    import hashlib
    import hmac
    source = reduced_folder(h)
    folder = h.root / "reduce-empty-key"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns(".writer*"))
    key = h.write("empty-key/reduce-state.key", b"")
    planted = h.root / "planted-by-an-empty-key"
    state = json.loads((folder / "reduce.json").read_text())
    state["best"] = f"open({str(planted)!r}, 'w').write('ran')\n"
    state.pop("seal", None)
    body = json.dumps(state, sort_keys=True, separators=(",", ":")).encode()
    state["seal"] = hmac.new(b"", body, hashlib.sha256).hexdigest()
    (folder / "reduce.json").write_text(json.dumps(state))
    code, _, err = h.run("reduce", str(REPO / "tests" / "fixtures" / "sm.py"), "--versions", REDUCED_VERSION,
                         "--resume", str(folder), "--quiet", env=h.env(HARNESS_STATE_KEY=str(key)), timeout=600)
    held, detail = one_line(code, err)
    return held and not planted.exists() and len(key.read_bytes()) == 32, detail


def case_links_in_report(h: Harness) -> tuple[bool, str]:
    """A results file's URL, `www.` address and e-mail address: no link in report.md as GitHub renders it."""
    from tests.helpers import github_html

    folder = h.root / "linked-results"
    shutil.copytree(REPO / "tests" / "fixtures" / "smoke-run", folder)
    data = json.loads((folder / "results.json").read_text())
    data["config"]["name"] = "smoke www.evil.example"
    data["cells"][0]["reason"] = "see https://evil.example/pay, www.evil.example and phish@evil.example"
    (folder / "results.json").write_text(json.dumps(data))
    code, _, err = h.run("report", str(folder), timeout=120)
    links = github_html((folder / "report.md").read_text()).count("<a ") if code == 0 else -1
    return code == 0 and links == 0, f"exit {code}, {links} link(s) on GitHub {err.strip()[-60:]}"


def case_merge_of_two_backends(h: Harness) -> tuple[bool, str]:
    """Two shards of one sweep, one measured in venvs and one in containers: refused in one line."""
    parts = []
    for index, backend in ((1, "venv"), (2, "docker")):
        folder = h.root / "two-backends" / f"shard{index}"
        shutil.copytree(REPO / "tests" / "fixtures" / "smoke-run", folder)
        data = json.loads((folder / "results.json").read_text())
        data["options"]["backend"] = backend
        data["cells"] = [c for i, c in enumerate(data["cells"]) if i % 2 == index - 1]
        (folder / "results.json").write_text(json.dumps(data))
        parts.append(str(folder))
    return one_line(*h.run("merge", *parts, "--out", str(h.root / "two-backends-out"), timeout=120)[::2])


def case_with_dot_then_resume(h: Harness) -> tuple[bool, str]:
    """`harness check train.py --with .` from the project folder, then --resume of the results it wrote there."""
    project = h.root / "dot-project"
    h.write("dot-project/mypkg/__init__.py", "import jax\n\nstep = jax.jit(lambda x: x * 2)\n")
    h.write("dot-project/pyproject.toml", '[build-system]\nrequires = ["setuptools>=61"]\n'
            'build-backend = "setuptools.build_meta"\n[project]\nname = "mypkg"\nversion = "0.1"\n'
            '[tool.setuptools]\npackages = ["mypkg"]\n')
    h.write("dot-project/train.py", "import jax.numpy as jnp\nimport mypkg\nprint(mypkg.step(jnp.ones(4)))\n")
    argv = ["check", "train.py", "--with", ".", "--versions", VERSION, "--runs", "2", "--quiet"]
    code, _, err = h.run(*argv, cwd=project)
    if code != 0:
        return False, f"the check: exit {code}: {err.strip()[-80:]}"
    (results,) = (project / "results").iterdir()
    code, _, err = h.run(*argv, "--resume", str(results.relative_to(project)), cwd=project)
    return code == 0, f"the resume: exit {code} {err.strip()[-80:] if code else ''}"


# Issue 61 (round six): no unix socket reachable from a candidate, bisect's state sealed, results.json's upgrade
# validated first, commands as code spans, a forked child's stdin, the quick screen's reason for turning off.
SOCKETS_SCRIPT = (REPO / "tests" / "fixtures" / "reduce" / "tries_sockets.py").read_text()


class Listener:
    """A unix socket (a path, or `@name`: an abstract one) that greets each connection and counts them by who the
    peer is: the user's own run of the program (its working folder is the program's, `origin`), or a sandboxed
    candidate (its working folder a candidate's copy), told by SO_PEERCRED's pid. (Not by PID namespace: every run
    the harness measures starts in one of its own, the seal key's hider, the original's runs too.)"""

    def __init__(self, where: str, origin: Path) -> None:
        self.origin = str(origin.resolve())
        import socket

        if not where.startswith("@"):
            Path(where).parent.mkdir(parents=True, exist_ok=True)
        self.socket = socket.socket(socket.AF_UNIX)
        self.socket.bind("\0" + where[1:] if where.startswith("@") else where)
        self.socket.listen(16)
        self.machine = self.sandboxed = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        import socket
        import struct

        while True:
            try:
                conn, _ = self.socket.accept()
            except OSError:
                return
            with conn:
                pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
                try:
                    theirs = os.readlink(f"/proc/{pid}/cwd")
                except OSError:
                    theirs = "gone"  # ended already: counted as sandboxed, the worse reading
                if theirs == self.origin:
                    self.machine += 1
                else:
                    self.sandboxed += 1
                conn.sendall(b"hello")

    def close(self) -> None:
        self.socket.close()


_sockets: dict[str, Any] = {}


def socket_reduction(h: Harness) -> dict[str, Any]:
    """One reduction whose candidates (the `if` keeping the original home dropped) connect to a socket 4 folders
    deep in /tmp, one made in /tmp once the sandboxes started, two agent sockets in HOME and an abstract one; made
    once, each case reads its socket's count."""
    if not _sockets:
        root = Path(tempfile.mkdtemp(prefix="harness-stress-sock-", dir="/tmp"))
        tag = f".harness-stress-{os.getpid()}"
        where = {"deep": str(root / "a" / "b" / "c" / "d" / "s.sock"), "late": str(root / "late.sock"),
                 "ssh": str(Path.home() / f"{tag}-ssh-agent.sock"),
                 "gpg": str(Path.home() / f"{tag}-gnupg" / "S.gpg-agent.ssh"), "abstract": f"@harness-stress-{os.getpid()}"}
        paths = [where[n] for n in ("deep", "late", "ssh", "gpg")]
        script = h.write("socket-project/train.py", SOCKETS_SCRIPT.replace("@SOCKETS@", repr(paths))
                         .replace("@ABSTRACT@", where["abstract"]))
        listeners = {name: Listener(path, script.parent) for name, path in where.items() if name != "late"}
        out = h.root / "socket-out"
        proc = h.start("reduce", str(script), "--versions", REDUCED_VERSION, "--quiet", "--out", str(out),
                       "--max-candidates", "30")
        try:
            # Made once the sandboxes started: the screen's servers, or the first candidate's folder.
            wait_for(lambda: list(out.glob("*/screened")) or list(out.glob("*/candidates/*"))
                     or proc.poll() is not None, 1800)
            listeners["late"] = Listener(where["late"], script.parent)
            _, err = proc.communicate(timeout=3600)
            memo: list[Any] = []
            for folder in out.iterdir():
                memo = list(json.loads((folder / "reduce.json").read_text())["memo"].values())
            _sockets.update(code=proc.returncode, candidates=len(memo), err=err.strip()[-60:],
                            machine={name: listener.machine for name, listener in listeners.items()},
                            reached={name: listener.sandboxed for name, listener in listeners.items()})
        finally:
            if proc.poll() is None:
                proc.kill()
            for listener in listeners.values():
                listener.close()
            shutil.rmtree(root, ignore_errors=True)
            Path(where["ssh"]).unlink(missing_ok=True)
            shutil.rmtree(Path(where["gpg"]).parent, ignore_errors=True)
    return _sockets


def case_reduce_sockets(h: Harness, names: tuple[str, ...]) -> tuple[bool, str]:
    """Each socket answered the original's own runs (made before them) and no candidate (each tried it)."""
    found = socket_reduction(h)
    reached = {n: found["reached"][n] for n in names}
    answered = all(found["machine"][n] > 0 for n in names if n != "late")
    held = found["code"] == 0 and found["candidates"] > 0 and answered and not any(reached.values())
    return held, (f"exit {found['code']}, {found['candidates']} candidates, from a candidate: "
                  + ", ".join(f"{n} {c}" for n, c in reached.items()) + "; from the original's runs: "
                  + ", ".join(f"{n} {found['machine'][n]}" for n in names) + (f" {found['err']}" if found["code"] else ""))


# Issue 73: a candidate of `harness reduce` run as root, and the seal key within a measured program's reach.
AS_ROOT_SCRIPT = (REPO / "tests" / "fixtures" / "reduce" / "escapes_as_root.py").read_text()


class DatagramListener:
    """A unix datagram socket (a path, or `@name`: an abstract one) that counts what arrives by who sent it: a
    candidate (its working folder, the payload, is in a candidate's folder) or the original's own runs."""

    def __init__(self, where: str) -> None:
        import socket

        if not where.startswith("@"):
            Path(where).parent.mkdir(parents=True, exist_ok=True)
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind("\0" + where[1:] if where.startswith("@") else where)
        self.machine = self.candidates = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                sender = self.socket.recv(4096).decode(errors="replace")
            except OSError:
                return
            if "/candidates/" in sender:
                self.candidates += 1
            else:
                self.machine += 1

    def close(self) -> None:
        self.socket.close()


_as_root: dict[str, Any] = {}


def as_root_reduction(h: Harness) -> dict[str, Any]:
    """One reduction (as root where the harness runs as root, as CI does) whose candidates try to remount / and the
    view of /tmp read-write, unmount /run, and reach the machine's datagram sockets from a datagram pair; made
    once, each case reads what landed."""
    if not _as_root:
        tag = f"harness-stress-{os.getpid()}"
        home_canary, tmp_canary = Path.home() / f".{tag}-canary", Path(tempfile.mkdtemp(prefix=f"{tag}-", dir="/tmp"))
        home_canary.mkdir()
        where = {"tmp": str(tmp_canary / "a" / "b" / "d.sock"), "home": str(Path.home() / f".{tag}-d.sock"),
                 "abstract": f"@{tag}-dgram"}
        listeners = {name: DatagramListener(path) for name, path in where.items()}
        script = h.write("as-root-project/train.py", AS_ROOT_SCRIPT.replace("@SOCKETS@", repr(list(where.values())))
                         .replace("@CANARY@", str(home_canary)).replace("@TMP_CANARY@", str(tmp_canary)))
        out = h.root / "as-root-out"
        try:
            code, _, err = h.run("reduce", str(script), "--versions", REDUCED_VERSION, "--quiet", "--out", str(out),
                                 "--max-candidates", "12", timeout=3600)
            memo: list[Any] = []
            for folder in out.iterdir():
                memo = list(json.loads((folder / "reduce.json").read_text())["memo"].values())
            time.sleep(0.5)  # the last datagrams read
            _as_root.update(code=code, candidates=len(memo), err=err.strip()[-60:], uid=os.geteuid(),
                            landed=sorted(p.name for p in home_canary.iterdir())
                            + sorted(p.name for p in tmp_canary.iterdir() if p.name != "a"),
                            machine={name: listener.machine for name, listener in listeners.items()},
                            reached={name: listener.candidates for name, listener in listeners.items()})
        finally:
            for listener in listeners.values():
                listener.close()
            shutil.rmtree(home_canary, ignore_errors=True)
            shutil.rmtree(tmp_canary, ignore_errors=True)
            Path(where["home"]).unlink(missing_ok=True)
    return _as_root


def case_reduce_as_root_mounts(h: Harness) -> tuple[bool, str]:
    """No candidate's remount or unmount wrote anything (as root: bubblewrap kept every capability)."""
    found = as_root_reduction(h)
    held = found["code"] == 0 and found["candidates"] > 0 and not found["landed"]
    return held, (f"exit {found['code']} as uid {found['uid']}, {found['candidates']} candidates, written "
                  f"{found['landed'] or 'nothing'}" + (f" {found['err']}" if found["code"] else ""))


def case_reduce_datagrams(h: Harness, names: tuple[str, ...]) -> tuple[bool, str]:
    """Each datagram socket got the original's datagrams (sent from a pair as a candidate's are) and none of a
    candidate's."""
    found = as_root_reduction(h)
    reached = {n: found["reached"][n] for n in names}
    answered = all(found["machine"][n] > 0 for n in names)
    held = found["code"] == 0 and found["candidates"] > 0 and answered and not any(reached.values())
    return held, (f"exit {found['code']}, {found['candidates']} candidates, from a candidate: "
                  + ", ".join(f"{n} {c}" for n, c in reached.items()) + "; from the original's runs: "
                  + ", ".join(f"{n} {found['machine'][n]}" for n in names))


KEY_READER = """\
import glob, sys
import jax, jax.numpy as jnp
key, out = sys.argv[1], sys.argv[2]
found = []
for path in [key, *(root + key for root in glob.glob("/proc/[0-9]*/root"))]:
    try:
        with open(path, "rb") as f:
            found.append(f.read(64).hex())
    except OSError as exc:
        found.append(exc.strerror)
with open(out, "a") as log:
    log.write(" ".join(found) + "\\n")
print(jax.jit(lambda x: x * 2)(jnp.ones(3)))
"""


def case_key_out_of_reach(h: Harness) -> tuple[bool, str]:
    """A program `harness check` runs reads the seal key, directly and through every /proc/<pid>/root: it finds
    an empty file (it read the key and forged another bisection's seal: issue 73 #5)."""
    key, seen = h.root / "keys" / "reduce-state.key", h.root / "key-reader-saw.txt"
    script = h.write("key-reader/train.py", KEY_READER)
    code, _, _ = h.run("check", str(script), "--versions", VERSION, "--runs", "2", "--quiet", "--out",
                         str(h.root / "key-reader-out"), "--", str(key), str(seen), env=h.env(HARNESS_STATE_KEY=str(key)))
    secret = key.read_bytes().hex() if key.is_file() else "?"
    lines = seen.read_text().splitlines() if seen.exists() else []
    held = code == 0 and len(lines) >= 2 and not any(secret in line for line in lines) and key.is_file()
    return held, f"exit {code}, {len(lines)} run(s) read: {sorted({w for line in lines for w in line.split()})[:3] or 'nothing'}"


def case_key_planted(h: Harness, plant: str) -> tuple[bool, str]:
    """The seal key replaced by a named pipe or a link to /dev/zero: the bisection's own command is one line, exit 2
    (the pipe hung it until SIGTERM; /dev/zero was read until MemoryError)."""
    bisected_folder(h)
    key = h.root / f"planted-{plant}.key"
    if plant == "fifo":
        os.mkfifo(key)
    else:
        key.symlink_to("/dev/zero")
    proc = h.start(*bisect_argv(h), env=h.env(HARNESS_STATE_KEY=str(key)))
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return False, "still running after 120 s"
    held, detail = one_line(proc.returncode, err)
    return held and "state key" in err, detail


_bisected: dict[str, Any] = {}
HOSTILE_ARGS = ["--title", "<b>bold</b>", "--note", "a `tick` and *stars*"]


def bisect_argv(h: Harness) -> list[str]:
    return ["bisect", str(REPO / "tests" / "fixtures" / "sm.py"), "--versions", ">=0.4.28,<=0.4.29", "--runs", "3",
            "--seeds", "random", "--quiet", "--out", str(h.root / "bisect-out"), "--", *HOSTILE_ARGS]


def bisected_folder(h: Harness) -> Path:
    """A real bisection of the seed between 0.4.28 and 0.4.29, its program given hostile arguments; made once, its
    state.json kept to be restored before each case damages it."""
    if "folder" not in _bisected:
        code, out, err = h.run(*bisect_argv(h), timeout=1800)
        if code != 0:
            raise RuntimeError(f"the bisection exited {code}: {err.strip()[-80:]}")
        (made,) = (h.root / "bisect-out").iterdir()
        _bisected.update(folder=made, state=(made / "state.json").read_bytes(), out=out)
    folder: Path = _bisected["folder"]
    return folder


def case_bisect_state(h: Harness, damage: Callable[[dict[str, Any]], Any] | bytes | None) -> tuple[bool, str]:
    """The same bisect command again over a state.json damaged (bytes, or a change to the document; None: every
    point edited to read `reproduced`): one line, exit 2, 'rerun with --fresh', nothing replayed."""
    folder = bisected_folder(h)
    state = folder / "state.json"
    if isinstance(damage, bytes):
        state.write_bytes(damage)
    else:
        document = json.loads(_bisected["state"])
        if damage is None:
            for cells in document["points"].values():
                for cell in cells:
                    cell.update(verdict="reproduced", reason="FORGED")
        else:
            document = damage(document)
        state.write_text(json.dumps(document))
    try:
        code, out, err = h.run(*bisect_argv(h), timeout=600)
    finally:
        state.write_bytes(_bisected["state"])
    held, detail = one_line(code, err)
    return held and "rerun with --fresh" in err and "FORGED" not in out, detail


def case_bisect_resumes(h: Harness) -> tuple[bool, str]:
    """The state this release wrote resumes: the same command replays it (the same answer), exit 0."""
    bisected_folder(h)
    code, out, err = h.run(*bisect_argv(h), timeout=600)
    said = out.strip().splitlines()[0] if out.strip() else ""
    return code == 0 and out == _bisected["out"], f"exit {code}: {said[:70]} {err.strip()[-60:] if code else ''}"


def case_bisect_md_code_span(h: Harness) -> tuple[bool, str]:
    """bisect.md's Reproduce with line, as GitHub renders it: the program's arguments as they are, no <b>."""
    from tests.helpers import github_html

    last = (bisected_folder(h) / "bisect.md").read_text().strip().splitlines()[-1]
    shown = github_html(last)
    held = "<b>" not in shown and "&lt;b&gt;bold&lt;/b&gt;" in shown and "`tick`" in shown
    return held, f"rendered: {shown.strip()[:80]}"


def upgrade_cases(h: Harness) -> list[tuple[str, Argv]]:
    """results.json cells the upgrade used to reach before the strict conversion: report, compare, merge."""
    good = REPO / "tests" / "fixtures" / "smoke-run"
    base = json.loads((good / "results.json").read_text())

    def nested(depth: int) -> dict[str, Any]:
        run: dict[str, Any] = {}
        here = run
        for _ in range(depth):
            here["ranks"] = [{}]
            here = here["ranks"][0]
        return run

    changes: dict[str, Callable[[dict[str, Any]], None]] = {
        "key_components with runs: 5": lambda c: c.update(runs=5),
        "key_components with ranks: 7": lambda c: c.update(runs=[{**c["runs"][0], "ranks": 7}]),
        "key_components with moved_folder.factors: 7": lambda c: c.update(moved_folder={"factors": 7}),
        "key_components with ranks nested 400 deep": lambda c: c.update(runs=[nested(400)]),
    }
    cases: list[tuple[str, Argv]] = []
    for i, (name, change) in enumerate(changes.items()):
        document = json.loads(json.dumps(base))
        cell = document["cells"][0]
        cell["key_components"] = {"jit_f-" + "a" * 64: {"hlo": "b" * 64}}
        change(cell)
        h.write(f"upgrade/{i}/results.json", json.dumps(document))
        folder = str(h.root / "upgrade" / str(i))
        cases += [(f"{name} in results.json: report", ["report", folder]),
                  (f"{name} in results.json: compare", ["compare", str(good), "--baseline", folder]),
                  (f"{name} in results.json: merge", ["merge", folder, str(good), "--out", str(h.root / "bad-out")])]
    return cases


READS_STDIN = "import sys\nsys.stdin.read()\n" + (REPO / "tests" / "fixtures" / "sm.py").read_text()
# A forked child has imported jax before the program runs (its server did); a fresh run has not.
EXITS_WHEN_FORKED = "import sys\nif 'jax' in sys.modules:\n    sys.exit(5)\n" + (
    REPO / "tests" / "fixtures" / "sm.py").read_text()


def case_reduce_screen(h: Harness, name: str, source: str, said: str) -> tuple[bool, str]:
    """A reduction of `source` (2 candidates): exit 0 and its progress says `said` about the quick screen."""
    script = h.write(f"{name}/train.py", source)
    code, _, err = h.run("reduce", str(script), "--versions", REDUCED_VERSION, "--max-candidates", "2",
                         "--out", str(h.root / f"{name}-out"), timeout=1800)
    line = next((ln for ln in err.splitlines() if "quick screen" in ln), "(no quick screen line)")
    return code == 0 and said in line, f"exit {code}: {line.strip()[:90]}"


def round_six_cases(h: Harness) -> list[tuple[str, Callable[[], tuple[bool, str]]]]:
    cases: list[tuple[str, Callable[[], tuple[bool, str]]]] = [
        ("reduce: a unix socket 4 folders deep in /tmp is unreachable from a candidate",
         partial(case_reduce_sockets, h, ("deep",))),
        ("reduce: a unix socket made in /tmp after the sandboxes started is unreachable from a candidate",
         partial(case_reduce_sockets, h, ("late",))),
        ("reduce: agent sockets in HOME (ssh, gpg) and an abstract socket are unreachable from a candidate",
         partial(case_reduce_sockets, h, ("ssh", "gpg", "abstract"))),
        ("bisect: the state it wrote resumes", partial(case_bisect_resumes, h)),
        ("bisect: a state.json with every point edited to reproduced is refused",
         partial(case_bisect_state, h, None)),
        ("bisect: a state.json of []", partial(case_bisect_state, h, b"[]")),
        ("bisect: a state.json with points: [1, 2]", partial(case_bisect_state, h, lambda d: {**d, "points": [1, 2]})),
        ('bisect: a state.json of {"spec": 5}', partial(case_bisect_state, h, b'{"spec": 5}')),
        ("bisect: a state.json with a NaN", partial(case_bisect_state, h, b'{"state_version": NaN}')),
        ("bisect: a state.json with an integer of 5,000 digits",
         partial(case_bisect_state, h, b'{"state_version": ' + b"1" * 5000 + b"}")),
        ("bisect: a 300 MB state.json", partial(case_bisect_state, h, b" " * (300 << 20))),
        ("bisect: an unsealed state.json of an earlier release (version 2)",
         partial(case_bisect_state, h, lambda d: {k: v for k, v in {**d, "state_version": 2}.items() if k != "seal"})),
        ("bisect.md: the Reproduce with line is a code span (a program's <b> and backticks as they are)",
         partial(case_bisect_md_code_span, h)),
        ("reduce: a program that reads stdin keeps the quick screen (a forked child's stdin is /dev/null)",
         partial(case_reduce_screen, h, "reads-stdin", READS_STDIN, "quick screen: ")),
        ("reduce: the quick screen turning off says why",
         partial(case_reduce_screen, h, "forked-exits", EXITS_WHEN_FORKED,
                 "quick screen off: the original does not run to its end in a forked child (exited 5)")),
    ]
    cases += [(f"bad input: {name}", partial(bad_input_held, h, argv)) for name, argv in upgrade_cases(h)]
    return cases


def round_seven_cases(h: Harness) -> list[tuple[str, Callable[[], tuple[bool, str]]]]:
    return [
        ("reduce as root: no candidate remounts / or /tmp's view read-write or unmounts /run",
         partial(case_reduce_as_root_mounts, h)),
        ("reduce as root: a datagram pair's sendto/connect reaches no socket in /tmp or HOME",
         partial(case_reduce_datagrams, h, ("tmp", "home"))),
        ("reduce as root: a datagram pair reaches no abstract socket", partial(case_reduce_datagrams, h, ("abstract",))),
        ("seal key: a program check runs reads an empty file in its place", partial(case_key_out_of_reach, h)),
        ("seal key: a named pipe in its place is one line, exit 2", partial(case_key_planted, h, "fifo")),
        ("seal key: a link to /dev/zero in its place is one line, exit 2", partial(case_key_planted, h, "dev-zero")),
    ]

# Issue 61: the recorder never outvotes the folder, runs never charge each other.
THREADS = """\
import threading
import jax, jax.numpy as jnp
functions = []
for i in range(12):
    def f(x, i=i):
        return x * (i + 1) + i
    f.__name__ = f"fn{i}"
    functions.append(jax.jit(f))
start = threading.Barrier(12)
def warm_up(i):
    start.wait()
    functions[i](jnp.ones(4)).block_until_ready()
threads = [threading.Thread(target=warm_up, args=(i,)) for i in range(12)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""
# Set-ordered; in every run after the first it deletes the entries it wrote and rewrites its recorder as hits on
# run 1's entries (JAX's log on stderr still shows its own keys).
REWRITES_RECORDER = ("import json, os, pathlib\nimport jax, jax.numpy as jnp\n" + SET_ORDER_F + """\
f(jnp.ones(4)).block_until_ready()
folder = pathlib.Path(jax.config.jax_compilation_cache_dir)
first = pathlib.Path(__file__).with_name("first-entries.json")
if not first.exists():
    first.write_text(json.dumps(sorted(p.name for p in folder.iterdir())))
else:
    kept = set(json.loads(first.read_text()))
    for p in folder.iterdir():
        if p.name not in kept:
            p.unlink()
    hits = [json.dumps({"kind": "log", "logger": "jax._src.compiler", "level": 10, "pid": os.getpid(),
                        "message": f"Persistent compilation cache hit for '{n.rsplit('-', 2)[0]}' with key "
                                   f"'{n.rsplit('-', 1)[0]}'"}) for n in sorted(kept) if n.endswith("-cache")]
    pathlib.Path(os.environ["HARNESS_RECORDER"]).write_text("\\n".join(hits) + "\\n")
""")
# Clean; appends a fake miss and write of a new key to its recorder.
APPENDS_TO_RECORDER = """\
import json, os
import jax, jax.numpy as jnp
jax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()
key = "jit_forged-" + os.urandom(32).hex()
with open(os.environ["HARNESS_RECORDER"], "a") as out:
    for message in (f"PERSISTENT COMPILATION CACHE MISS for 'jit_forged' with key '{key}'",
                    f"Writing jit_forged to persistent compilation cache with key '{key}'"):
        out.write(json.dumps({"kind": "log", "logger": "jax._src.compiler", "level": 10, "pid": os.getpid(),
                              "message": message}) + "\\n")
"""
# Clean; in its moved-folder run only (another folder than run 1's), plants an entry into the cell's own folder
# while run 2 runs there.
PLANTS_FROM_THE_MOVED_RUN = """\
import os, pathlib, time
import jax, jax.numpy as jnp
jax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()
mine = jax.config.jax_compilation_cache_dir
marker = pathlib.Path(__file__).with_name("first-folder.txt")
if not marker.exists():
    marker.write_text(mine)
first = marker.read_text()
if mine and os.path.realpath(mine) != os.path.realpath(first):
    time.sleep(1)
    (pathlib.Path(first) / ("jit_planted-" + os.urandom(32).hex() + "-cache")).write_bytes(b"x")
else:
    time.sleep(3)
"""
# A plain script that writes pytest records through the hook's own recorder (they check out).
SCRIPT_WITH_PYTEST_RECORDS = """\
import sys
import jax, jax.numpy as jnp
jax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()
recorder = sys.modules["jax_cache_harness_recorder"].RECORDER
recorder.write({"kind": "collected", "ids": ["forged.py::chosen_case"]})
recorder.write({"kind": "test", "id": "forged.py::chosen_case", "outcome": "failed"})
"""
# A suite whose conftest stamps a set-ordered test's compile with a test pytest never collected.
GHOST_CONFTEST = """\
import sys
import pytest

@pytest.fixture(autouse=True)
def ghost():
    recorder = sys.modules["jax_cache_harness_recorder"].RECORDER
    real = recorder.test
    recorder.test = "tests/test_ghost.py::never_collected"
    yield
    recorder.test = real
"""
GHOST_TEST = "import jax, jax.numpy as jnp\n" + SET_ORDER_F + "\n\ndef test_f():\n    f(jnp.ones(4)).block_until_ready()\n"


def _cells(out: Path) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = results_of(out)["cells"]
    return cells


def case_threads(h: Harness) -> tuple[bool, str]:
    out = h.root / "threads-out"
    code, _, _ = h.run("check", str(h.write("threads/prog.py", THREADS)), "--versions", "0.4.31", "0.10.2",
                       "--quiet", "--out", str(out), cwd=h.root / "threads")
    verdicts = [c["verdict"] for c in _cells(out)]
    return code == 0 and verdicts == ["clean", "clean"], f"exit {code}, verdicts {verdicts}"


def case_recorder_forged(h: Harness, name: str, script: str, code_wanted: int, verdict: str,
                         said: str) -> tuple[bool, str]:
    out = h.root / f"{name}-out"
    code, _, _ = h.run("check", str(h.write(f"{name}/prog.py", script)), "--versions", "0.4.31", "--runs", "4",
                       "--quiet", "--out", str(out), cwd=h.root / name)
    (cell,) = _cells(out)
    return (code == code_wanted and cell["verdict"] == verdict and said in cell["reason"],
            f"exit {code}, verdict {cell['verdict']}: {cell['reason'][:90]}")


def case_pytest_records(h: Harness, name: str, argv: list[str], files: dict[str, str], said: str,
                        failing: str = "") -> tuple[bool, str]:
    """No stranger among the JUnit cases or the runs' tests, what was ignored said, and `failing` (a test's id):
    its JUnit case fails (the miss charged to the test running then)."""
    out, junit = h.root / f"{name}-out", h.root / f"{name}-junit.xml"
    for file, text in files.items():
        h.write(f"{name}/{file}", text)
    code, _, _ = h.run("check", *argv, "--versions", "0.4.31", "--runs", "2", "--quiet", "--junit-xml", str(junit),
                       "--fail-on", "error", "--out", str(out), cwd=h.root / name)
    (cell,) = _cells(out)
    from xml.etree import ElementTree

    found = list(ElementTree.parse(junit).iter("testcase")) if junit.exists() else []
    cases = [c.get("name", "") for c in found]
    stranger = any("chosen_case" in t or "never_collected" in t
                   for t in cases + [t for r in cell["runs"] for t in r.get("tests", {})])
    failed = not failing or any(c.get("name", "").startswith(failing) and c.find("failure") is not None for c in found)
    return (code == 0 and not stranger and failed and said in cell["reason"],
            f"exit {code}, verdict {cell['verdict']}, a stranger in JUnit or the runs: {stranger}"
            + (f", {failing} failed: {failed}" if failing else ""))


# Round seven (issue 73, breaks 6 to 9): hostile results folders, bounded reading at any shape of input, a
# bisection's program by its content, a signal that stops the work.
PAIR = ("0.4.31", "0.10.2")
NAMED_F = "import jax, jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    return x * 2\n\nf(jnp.arange(4.0)).block_until_ready()\n"
ONE_LONG_RECORDER_LINE = (NAMED_F + "import os\np = os.environ['HARNESS_RECORDER']\n"
                          "os.truncate(p, os.path.getsize(p) + (64 << 20))\n")  # 64 MiB of zeros, no newline
DUMP_FLOOD = (NAMED_F + "import os\nd = os.environ['JAX_DUMP_IR_TO']\n"
              "for i in range(10_000):\n"
              "    for module in ('f', 'other'):\n"
              "        with open(os.path.join(d, f'jax_ir{100_000 + i}_jit_{module}_compile.mlir'), 'wb') as out:\n"
              "            out.truncate(1 << 20)\n")  # 20,000 sparse dumps, half of them of the key's module
SPARSE_LOG = (NAMED_F + "import os\nr = os.environ['HARNESS_RECORDER']\n"
              "os.truncate(r.removesuffix('.recorder.jsonl') + '.log', 1 << 30)\n")  # the run's own log, 1 GiB sparse
BLOCKS = ("import os, time\nopen(os.path.join(os.environ['MARKS'], f'started-{os.getpid()}'), 'w').close()\n"
          "time.sleep(600)\n")  # sets no cache folder and never compiles: a failed first run is run again
_checked_pair: dict[str, Path] = {}


def checked_pair(h: Harness) -> Path:
    """A real check of a clean program on 0.4.31 and 0.10.2 (made once): the folder the hostile copies start from."""
    if "folder" not in _checked_pair:
        out = h.root / "pair-out"
        code, _, err = h.run("check", str(h.write("pair/prog.py", NAMED_F)), "--versions", *PAIR, "--runs", "2",
                             "--quiet", "--out", str(out), cwd=h.root / "pair", timeout=900)
        if code != 0:
            raise RuntimeError(f"the check exited {code}: {err.strip()[-80:]}")
        (_checked_pair["folder"],) = out.iterdir()
    return _checked_pair["folder"]


def hostile_copy(h: Harness, name: str, change: Callable[[dict[str, Any]], None]) -> Path:
    """The checked pair's folder copied with its results.json changed."""
    folder = h.root / "hostile-folders" / name
    if not folder.exists():
        shutil.copytree(checked_pair(h), folder)
        document = json.loads((folder / "results.json").read_text())
        change(document)
        (folder / "results.json").write_text(json.dumps(document))
    return folder


def _second_cell_ahead(document: dict[str, Any]) -> None:
    """A second 0.10.2 cell, reproduced, ahead of the real (clean) one."""
    real = next(c for c in document["cells"] if c["spec"]["jax_version"] == "0.10.2")
    document["cells"].insert(0, {**real, "verdict": "reproduced", "reason": "jit_f: a new key in run 2"})


def _covers_of_the_wrong_shape(document: dict[str, Any]) -> None:
    """Clean cells of chosen seeds whose covers lack `pairs_in_both_orders` (was: a KeyError, exit 3)."""
    for cell in document["cells"]:
        if cell["verdict"] == "clean":
            seeds = cell.setdefault("seeds", {"seeds": [1, 2]})
            seeds.update(strategy="chosen", chosen=seeds.get("seeds", [1])[:1],
                         covers=[{"names": ["data", "model"], "orderings_run": ["data,model"], "lowered": True}])


def round_seven_folder_cases(h: Harness) -> list[tuple[str, Argv]]:
    """Every command that reads a folder, over a folder of the real pair with a duplicate cell or covers of the
    wrong shape: one line, exit 2 (was: compare's "no change against the baseline", exit 0; a KeyError, exit 3)."""
    def duplicated() -> Path:
        return hostile_copy(h, "second-cell-ahead", _second_cell_ahead)

    def covers() -> Path:
        return hostile_copy(h, "covers-of-the-wrong-shape", _covers_of_the_wrong_shape)

    config = h.write("nightly-pair.yaml", f"name: pair\nrepro: {h.root / 'pair' / 'prog.py'}\n"
                                          "jax_versions: ['0.10.2']\nruns: 2\n")  # the baseline's program
    return [
        ("a baseline with a second 0.10.2 cell, reproduced, ahead of the clean one: compare",
         lambda: ["compare", str(checked_pair(h)), "--baseline", str(duplicated())]),
        ("a baseline with a second 0.10.2 cell ahead of the clean one: nightly --baseline",
         lambda: ["nightly", str(config), "--versions", "0.10.2", "--baseline", str(duplicated()),
                  "--out", str(h.root / "nightly-out")]),
        ("a folder with a second 0.10.2 cell: report", lambda: ["report", str(duplicated())]),
        ("a folder with a second 0.10.2 cell: merge",
         lambda: ["merge", str(duplicated()), "--out", str(h.root / "merged-out")]),
        ("a folder with a second 0.10.2 cell: check --resume",
         lambda: ["check", str(h.root / "pair" / "prog.py"), "--versions", *PAIR, "--runs", "2",
                  "--resume", str(duplicated())]),
        ("clean cells whose seeds.covers are of the wrong shape: report", lambda: ["report", str(covers())]),
        ("clean cells whose seeds.covers are of the wrong shape: compare",
         lambda: ["compare", str(covers()), "--baseline", str(checked_pair(h))]),
    ]


def run_with_peak(h: Harness, *argv: str, timeout: float = 900, cwd: Path = REPO) -> tuple[int, str, int, float]:
    """`harness ARGV` with its own peak memory (VmHWM, its runs apart) read from /proc as it goes: (exit, stderr,
    peak in KiB, seconds)."""
    start = time.monotonic()
    proc = h.start(*argv, cwd=cwd)
    peak_kb = 0
    reader = threading.Thread(target=lambda: setattr(proc, "said", proc.communicate()), daemon=True)
    reader.start()  # (its pipes drained meanwhile)
    while proc.poll() is None and time.monotonic() - start < timeout:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            peak_kb = max(peak_kb, int(status.split("VmHWM:")[1].split()[0]))
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
    reader.join()
    return proc.returncode, getattr(proc, "said", ("", ""))[1], peak_kb, time.monotonic() - start


def case_bounded_input(h: Harness, name: str, script: str, said: str, seconds: float) -> tuple[bool, str]:
    """A program that makes one of its run's files hostile (one long line, many files, a sparse gibibyte): the
    check on 0.4.31 and 0.10.2 ends within `seconds`, the harness's own memory bounded, every run's row saying
    `said`, and no kept log past the 2 MiB cut."""
    out = h.root / f"{name}-out"
    code, err, peak_kb, took = run_with_peak(h, "check", str(h.write(f"{name}/prog.py", script)), "--versions", *PAIR,
                                             "--runs", "2", "--quiet", "--out", str(out), cwd=h.root / name)
    if code not in (0, 1):
        return False, f"exit {code} in {took:.0f} s: {err.strip()[-80:]}"
    cells = results_of(out)["cells"]
    notes = [r.get("log_note", "") for c in cells for r in c.get("runs", [])]
    logs = [p.stat().st_size for p in out.glob("*/logs/**/*.log")]
    held = (took < seconds and 0 < peak_kb < 512 * 1024 and len(notes) >= 4 and all(said in n for n in notes)
            and max(logs, default=0) <= 2 << 20 and all(c["verdict"] != "error" for c in cells))
    return held, (f"exit {code} in {took:.0f} s, the harness's peak {peak_kb >> 10} MB, {sum(said in n for n in notes)} "
                  f"of {len(notes)} rows say it, largest kept log {max(logs, default=0) >> 10} KiB")


def case_bisect_edited_program(h: Harness) -> tuple[bool, str]:
    """A bisection on 0.4.31 and 0.10.2, its program edited (clean, then set-ordered), the same command again:
    measured again (was: the old program's verdicts replayed), the line saying why; then the edited one resumes."""
    program = h.write("edited/prog.py", NAMED_F)
    argv = ["bisect", str(program), "--versions", *PAIR, "--runs", "3", "--seeds", "random",  # (its progress said)
            "--out", str(h.root / "edited-out")]
    first = h.run(*argv, timeout=900, cwd=h.root / "edited")
    program.write_text("import jax, jax.numpy as jnp\n" + SET_ORDER_F + "f(jnp.ones(4)).block_until_ready()\n")
    second = h.run(*argv, timeout=900, cwd=h.root / "edited")
    third = h.run(*argv, timeout=900, cwd=h.root / "edited")
    held = ("not resuming" in second[2] and "(prog's text differs)" in second[2] and second[1] != first[1]
            and "resuming: " in third[2] and third[1] == second[1])
    return held, (f"exits {first[0]}, {second[0]}, {third[0]}; again: "
                  f"{next((line for line in second[2].splitlines() if 'resuming' in line), '(no resume line)')[-90:]}")


def case_sigterm_blocked_first_run(h: Harness) -> tuple[bool, str]:
    """SIGTERM while a program's first run is blocked: the run is killed and no run starts after it (was: the first
    run's retry started a new one, which ran on), exit 143, the line saying what was kept."""
    marks = h.root / "blocked-marks"
    marks.mkdir(exist_ok=True)
    out = h.root / "blocked-out"
    # (--jobs 1: one run at a time, so a second run can only be one started after the signal)
    proc = h.start("check", str(h.write("blocked/prog.py", BLOCKS)), "--versions", *PAIR, "--runs", "2",
                   "--jobs", "1", "--out", str(out), env=h.env(MARKS=str(marks)), cwd=h.root / "blocked")
    if not wait_for(lambda: list(marks.iterdir()), 300):
        proc.kill()
        return False, "the run never started"
    proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    _, err = proc.communicate(timeout=120)
    took = time.monotonic() - started
    time.sleep(2)  # a run started after the signal would have made its mark by now
    runs = len(list(marks.iterdir()))
    held = proc.returncode == 143 and runs == 1 and "no run started after it" in err and took < 60
    return held, f"exit {proc.returncode} {took:.0f} s after the signal, {runs} run(s) started in all"


def round_seven_input_cases(h: Harness) -> list[tuple[str, Callable[[], tuple[bool, str]]]]:
    cases: list[tuple[str, Callable[[], tuple[bool, str]]]] = [
        (f"hostile folder: {name}", partial(bad_input_held, h, argv)) for name, argv in round_seven_folder_cases(h)]
    cases += [
        ("a recorder that is one 64 MiB line: read in linear time, said in the row (0.4.31, 0.10.2)",
         partial(case_bounded_input, h, "one-long-line", ONE_LONG_RECORDER_LINE, "longer than 4.0 MiB: not read", 240)),
        ("an IR dump of 20,000 dump-named sparse files: the harness's memory bounded (0.4.31, 0.10.2)",
         partial(case_bounded_input, h, "dump-flood", DUMP_FLOOD, "", 600)),
        ("a run log replaced by a 1 GiB sparse file: what is kept stays within the cut, said (0.4.31, 0.10.2)",
         partial(case_bounded_input, h, "sparse-log", SPARSE_LOG, "past the harness's bound of 64.0 MiB", 300)),
        ("bisect: an edited program is measured again and the line says why (0.4.31, 0.10.2)",
         partial(case_bisect_edited_program, h)),
        ("SIGTERM while the first run is blocked: no run starts after it, its retry included",
         partial(case_sigterm_blocked_first_run, h)),
    ]
    return cases


def build_cases(h: Harness, with_docker: bool, with_slurm: bool) -> list[tuple[str, Callable[[], tuple[bool, str]]]]:
    """Every case by name (docs/design/faults.md lists each: tests/unit/test_stress_cases.py); nothing runs yet."""
    cases: list[tuple[str, Callable[[], tuple[bool, str]]]] = [
        ("self-signalled SIGSEGV after compiling (venv) is error", lambda: case_self_signal(h, "venv")),
        ("SIGTERM to a running sweep (venv)", lambda: case_sigterm(h, "venv")),
        ("setsid grandchild after exit 0 is gone", lambda: case_left_behind(h)),
        ("setsid grandchild of a timed-out run is gone", lambda: case_timeout_left_behind(h)),
        ("venv with a dangling bin/python is rebuilt", lambda: case_damaged_venv(h, "dangling python")),
        ("venv whose jax was removed is rebuilt", lambda: case_damaged_venv(h, "jax removed")),
        ("two sweeps make one new venv", lambda: case_two_sweeps_one_venv(h)),
        ("a second --resume of a folder being written", lambda: case_two_resumes(h)),
        ("a run printing 60 MiB", lambda: case_flood(h)),
        # JAX's log is read in the process (the recorder): loggers set to ERROR, or a line printed to stderr,
        # change nothing the harness reads, so nothing needs distrusting.
        ("new jit_f entries behind jax loggers set to ERROR reproduce, read in the process",
         lambda: case_log_against_folder(h, "silenced", SILENCED, untrusted=False)),
        ("a run printing 80 MiB around its compile keeps JAX's cache lines",
         lambda: case_log_against_folder(h, "flood-around", FLOOD_AROUND, untrusted=False)),
        ("a printed fake cache-hit line is not what is read and hides no new key",
         lambda: case_log_against_folder(h, "fake-hit", FAKE_HIT, untrusted=False)),
        ("12 threads compiling at once read clean on 0.4.31 and 0.10.2", lambda: case_threads(h)),
        ("a program that deletes its new entries and rewrites its recorder as hits reproduces",
         lambda: case_recorder_forged(h, "rewrites-recorder", REWRITES_RECORDER, 1, "reproduced",
                                      "were not the hook's as it wrote them")),
        ("a fake miss and write appended to the recorder leave a clean program clean",
         lambda: case_recorder_forged(h, "appends-recorder", APPENDS_TO_RECORDER, 0, "clean",
                                      "were not the hook's as it wrote them")),
        ("an entry the moved-folder run plants in the cell's folder is written by no run",
         # (run 2 has a folder of its own beside the moved run: the planted entry is in no run's folder at all)
         lambda: case_recorder_forged(h, "moved-plants", PLANTS_FROM_THE_MOVED_RUN, 0, "clean", "")),
        ("a plain script's pytest records gain no JUnit case",
         lambda: case_pytest_records(h, "script-records", ["prog.py"], {"prog.py": SCRIPT_WITH_PYTEST_RECORDS},
                                     "not pytest's")),
        ("a conftest stamping a test pytest never collected charges nothing to it",
         lambda: case_pytest_records(h, "ghost-suite", ["--pytest", "tests"],
                                     {"tests/conftest.py": GHOST_CONFTEST, "tests/test_f.py": GHOST_TEST},
                                     "did not collect", failing="tests/test_f.py::test_f")),
        ("a non-UTF-8 file name in the cache folder: verdict and report", lambda: case_odd_file_name(h)),
        ("a planted file name with Markdown and HTML in report.md", lambda: case_planted_markdown(h)),
        ("progress into a pipe closed after 3 lines (head -3)", lambda: case_closed_pipe(h, 3)),
        ("progress into a pipe closed after a run (head -9)", lambda: case_closed_pipe(h, 9)),
        ("--vary script-path from the project folder holding results/",
         lambda: case_vary_from_the_project_folder(h, "script-path")),
        ("--vary all,all from the project folder", lambda: case_vary_from_the_project_folder(h, "all,all")),
        ("--vary all,cwd from the project folder", lambda: case_vary_from_the_project_folder(h, "all,cwd")),
        ("nightly plan step: versions '*' fail it", lambda: case_nightly_plan_with_bad_versions(h, "*")),
        ("nightly plan step: an unknown release fails it",
         lambda: case_nightly_plan_with_bad_versions(h, "0.0.0.999")),
        ("reduce: a candidate writing outside its folder is refused, nothing appears there",
         lambda: case_reduce_writes_outside(h)),
        ("reduce --resume: a planted best is refused unrun", lambda: case_reduce_state(h, None)),
        ("reduce --resume: reduced.py planted as a link to a file", lambda: case_planted_reduced(h)),
        ("reduce --resume: timeout_s NaN", lambda: case_reduce_state(h, {"timeout_s": float("nan")})),
        ("reduce --resume: timeout_s -1", lambda: case_reduce_state(h, {"timeout_s": -1})),
        ("reduce --resume: bad_seeds 'abc'", lambda: case_reduce_state(h, {"bad_seeds": "abc"})),
        ("reduce --resume: version 99", lambda: case_reduce_state(h, {"version": 99})),
        ("reduce --resume: memo []", lambda: case_reduce_state(h, {"memo": []})),
        ("init --output of the script itself with --force", lambda: case_init_replaces_nothing(h, "mine.py", "mine.py")),
        ("init of a script whose name holds a newline over a config with --force",
         lambda: case_init_replaces_nothing(h, "a\nenv: {LD_PRELOAD: x.so}\nb.py", "mine.yaml")),
        ("init of a script whose name holds U+2028 over a config with --force",
         lambda: case_init_replaces_nothing(h, "a\u2028args: [x]\u2028b.py", "mine.yaml")),
        ("an --extra-index-url that serves jax is refused", lambda: case_extra_index_serving_jax(h)),
        ("a program writing forged --json into the harness's stdout through /proc", lambda: case_forged_json(h)),
        ("--resume: caches/<cell> planted as a link to a folder", lambda: case_planted_link(h, "caches/CELL")),
        ("--resume: caches planted as a link to a folder", lambda: case_planted_link(h, "caches")),
        ("--resume: .writer.holder planted as a link to a file", lambda: case_planted_link(h, ".writer.holder")),
        ("--resume: .writer.lock planted as a link to a file", lambda: case_planted_link(h, ".writer.lock")),

        ("reduce --resume: a non-ASCII seal", lambda: case_reduce_state(h, {"seal": "\u00e9" * 64})),
        ("reduce --resume: a best sealed with an empty key", lambda: case_reduce_empty_key(h)),
        ("reduce: from the script's folder, default --out, writing under /tmp", lambda: case_reduce_as_a_user_runs_it(h)),
        ("reduce: a candidate's shell through /proc/<pid>/cwd and /root, and the engine's socket",
         lambda: case_reduce_escapes(h)),
        ("reduce: SIGTERM during the original's check, then its resume line", lambda: case_reduce_sigterm_during_the_original(h)),
        ("a GITHUB_STEP_SUMMARY that is a folder is bad input before the first run", lambda: case_summary_at_a_folder(h)),
        ("an output that fails after the sweep: said, and the regression still exits 1",
         lambda: case_outputs_failing_after_the_sweep(h)),
        ("a crash line full of control characters in the JUnit file and on the terminal",
         lambda: case_hostile_crash_in_junit(h)),
        ("a recorder file replaced by a named pipe: one line, not a hang",
         lambda: case_replaced_file(h, "recorder", "fifo")),
        ("a recorder file replaced by a folder: one line, not a crash", lambda: case_replaced_file(h, "recorder", "folder")),
        ("a recorder file replaced by a link to /dev/zero: one line", lambda: case_replaced_file(h, "recorder", "zero")),
        ("a cache-settings record replaced by a named pipe: one line, not a hang",
         lambda: case_replaced_file(h, "settings", "fifo")),
        ("a cache-settings record replaced by a folder: one line, not a crash",
         lambda: case_replaced_file(h, "settings", "folder")),
        ("a named pipe in the IR dump folder: one line, not a hang", lambda: case_replaced_file(h, "dump", "fifo")),
        ("a link to /dev/zero in the IR dump folder: one line", lambda: case_replaced_file(h, "dump", "zero")),
        ("64 MiB of two-byte lines appended to the recorder: memory bounded", lambda: case_recorder_flood(h)),
        ("a 2 MB random constant in every run's module: said by its size, promptly", lambda: case_big_constant(h)),
        ("a script's /tmp/train-ckpt-* goes with its run (venv)", lambda: case_run_tmpdir(h, "venv")),
        ("a timed-out script's /tmp/train-ckpt-* goes with its run (venv)",
         lambda: case_run_tmpdir(h, "venv", hang=True)),
    ]
    cases += [(f"index: {name}", partial(case_hostile_index, h, name)) for name in INDEX_SERVERS]
    cases.append(("index: a file:// index in the usual layout", lambda: case_file_index(h)))
    cases += [("report: a URL, a www. address and an e-mail address from results.json are no links",
               lambda: case_links_in_report(h)),
              ("merge: shards of two backends are refused in one line", lambda: case_merge_of_two_backends(h)),
              ("check --with . from the project folder, then --resume of its own results",
               lambda: case_with_dot_then_resume(h))]
    if shutil.which("debootstrap") and os.geteuid() == 0:
        cases.append(("base-image: SIGTERM during debootstrap stops it and removes its rootfs",
                      lambda: case_base_image_sigterm(h)))
    if with_docker:
        cases[1:1] = [("self-signalled SIGSEGV after compiling (docker) is error",
                       lambda: case_self_signal(h, "docker")),
                      ("SIGTERM to a running sweep (docker)", lambda: case_sigterm(h, "docker")),
                      ("SIGKILL under docker: the container ends by itself, the next sweep removes it",
                       lambda: case_sigkill_docker(h)),
                      ("a script's /tmp/train-ckpt-* goes with its run (docker)", lambda: case_run_tmpdir(h, "docker"))]
    if with_slurm:
        cases.append(("submit --out with a space and a % (real Slurm)", lambda: case_submit_out_with_a_space(h)))
    for name, argv in bad_input_cases(h):
        cases.append((f"bad input: {name}", partial(bad_input_held, h, argv)))
    cases += round_six_cases(h)
    cases += round_seven_cases(h)
    cases += round_seven_input_cases(h)
    cases += folder_watch_cases(h)
    return cases


# Issue 73 (items 1) and 72 (item 5): what the cache folder itself saw, watched as each run goes. The programs are
# tests/integration/test_folder_watch_integration.py's.
def case_folder_watch(h: Harness, name: str, script: str, verdict: str, *options: str,
                      said: str = "") -> tuple[bool, str]:
    """`harness check` of `script` on 0.4.31 and 0.10.2 (its own folder): every cell `verdict`, its reason holding
    `said`."""
    out = h.root / f"{name}-out"
    code, _, err = h.run("check", str(h.write(f"{name}/prog.py", script)), "--versions", "0.4.31", "0.10.2",
                         "--quiet", "--out", str(out), *options, cwd=h.root / name)
    cells = _cells(out) if out.exists() else []
    held = bool(cells) and all(c["verdict"] == verdict and said in c["reason"] for c in cells)
    return held, f"exit {code}, " + "; ".join(f"{c['spec']['jax_version']} {c['verdict']}: {c['reason'][:60]}"
                                              for c in cells) if cells else err.strip()[-120:]


def case_closed_descriptors(h: Harness) -> tuple[bool, str]:
    from tests.integration.test_folder_watch_integration import CLOSES_ITS_DESCRIPTORS

    held, detail = case_folder_watch(h, "closes-descriptors", CLOSES_ITS_DESCRIPTORS, "clean", "--runs", "3")
    lines = (h.root / "closes-descriptors" / "own-output.txt").read_text().splitlines()
    stranger = [line for line in lines if not line.startswith("line ")]
    return held and bool(lines) and not stranger, f"{detail}; {len(stranger)} of {len(lines)} lines not its own"


def folder_watch_cases(h: Harness) -> list[tuple[str, Callable[[], tuple[bool, str]]]]:
    from tests.integration.test_folder_watch_integration import (FORGERIES, ISOLATED_CHILD, MINIMAL_CHILD,
                                                                 PRINTS_A_MISS, forged)

    words = {"stderr-hits": "its recorder emptied and JAX's hit lines printed",
             "recorder-fifo": "its recorder replaced by a named pipe",
             "replayed-recorder": "stderr silenced and its recorder replaced by run 1's",
             "re-signed": "its recorder re-signed with the run's own key"}
    cases: list[tuple[str, Callable[[], tuple[bool, str]]]] = [
        (f"folder watch: entries deleted, {words[how]}, reproduces",
         partial(case_folder_watch, h, f"forged-{how}", forged(how), "reproduced", "--runs", "4", "--jobs", "2"))
        for how in FORGERIES]
    cases += [(f"folder watch: a printed miss and write of a key on disk ({through}) leaves a clean program clean",
               partial(case_folder_watch, h, f"printed-miss-{through}", PRINTS_A_MISS, "clean", "--runs", "3",
                       "--env", f"THROUGH={through}", said="never saw written"))
              for through in ("stderr", "recorder")]
    cases += [(f"folder watch: a set-ordered child with a minimal environment reproduces (--jobs {jobs})",
               partial(case_folder_watch, h, f"minimal-child-{jobs}", MINIMAL_CHILD, "reproduced", "--jobs", jobs))
              for jobs in ("auto", "1")]
    cases += [("folder watch: a deterministic python -I child is clean",
               partial(case_folder_watch, h, "isolated-child", ISOLATED_CHILD, "clean", "--runs", "4")),
              ("folder watch: a program that closes its descriptors gets none of the hook's records",
               partial(case_closed_descriptors, h))]
    return cases


def ctrl_c_reaches_children() -> None:
    """Let the harness commands started here take SIGINT as a terminal's Ctrl-C. A background job of a shell without
    job control (`make stress > log &` in a script) starts with SIGINT ignored, every process it starts inherits
    that, and the harness then rightly keeps ignoring Ctrl-C (harness/core/signals.py): a case's SIGINT did
    nothing, and its sweep ran on to its runs' timeouts. A handler of this process's own is reset to the default in
    the programs it starts."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only the cases whose name contains this")
    parser.add_argument("--no-docker", action="store_true", help="skip the docker cases")
    parser.add_argument("--list", action="store_true", help="print every case's name (docker and Slurm ones too), "
                                                            "one a line, and run none")
    args = parser.parse_args()
    ctrl_c_reaches_children()
    sys.path.insert(0, str(REPO))
    root = Path(tempfile.mkdtemp(prefix="harness-stress-"))
    h = Harness(root, Path(os.environ.get("HARNESS_ENV_DIR",
                                          Path.home() / ".cache" / "jax-cache-harness" / "envs")))
    if args.list:
        print("\n".join(name for name, _ in build_cases(h, with_docker=True, with_slurm=True)))
        shutil.rmtree(root, ignore_errors=True)
        return 0
    from harness.environments.docker import docker_available

    with_docker = not args.no_docker and docker_available()[0]
    cases = build_cases(h, with_docker, with_slurm=bool(shutil.which("sbatch")))
    results = []
    for name, check in cases:
        if args.only and args.only not in name:
            continue
        start = time.monotonic()
        try:
            held, detail = check()
        except Exception as exc:  # noqa: BLE001 - a case that could not even be tried is a case that did not hold
            held, detail = False, f"{type(exc).__name__}: {str(exc)[:80]}"
        results.append(Result(name, bool(held), detail, time.monotonic() - start))
        print(f"{'held' if held else 'BROKE'}: {name} ({detail})", file=sys.stderr, flush=True)
    print(tabulate([(r.case, "yes", "yes" if r.held else "NO", f"{r.seconds:.1f}", r.detail) for r in results],
                   headers=["case", "tried", "held", "s", "detail"], tablefmt="github"))
    held_count = sum(r.held for r in results)
    print(f"\n{held_count} of {len(results)} held" + ("" if with_docker else " (docker cases skipped: no engine)"))
    shutil.rmtree(root, ignore_errors=True)
    return 0 if held_count == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
