"""What `harness check --pytest` costs against the suite's own time (issue 51, item 7).

Two small suites, each run bare (`python -m pytest -q` in the release's environment, no cache folder: as its
author runs it) and through a default `harness check --pytest` (the environment made once before timing):
- clean: three test files, one jitted function each: the check makes every planned run, the moved folder's run
  being one of them (run 3, where every key it computed hit);
- reproducing: the same and a test whose jitted function bakes a set's order into its module (its key follows
  the hash seed): the check stops at the first run that misses, then makes the seed control.
- compiling: three deep unrolled gradients, compiling most of the suite's time: later runs load from the cache
  (where issue 51's 3 T is within reach; in the other suites `import jax` is most of every run, and 6 runs of
  about a bare run's CPU each fill 3 T of 2 cores before the harness adds anything).
The bare run and the check alternate, each the best of --repeats, so both see the same load. Printed: each
suite's bare time T, the check's wall time and the ratio, and the processes the check started (issue 51's
target: at most 3 T when clean; the floor is 1 + ceil((processes - 1) / 2) fresh processes in a row on two cores,
each about a bare run where `import jax` is most of it, as in these suites); the floor measured: the check's planned
runs as bare fresh runs of the whole suite, as many at once as there are cores, and the check's wall over it (issue
60's target for a clean suite: at most 1.3x that floor; and at most 3 T where compiling dominates); and the CPU the
harness's own start takes before run 1 can begin, as a ratio of the bare suite's.

    python bench/bench_pytest.py [--version 0.4.31] [--runs N] [--repeats N] [--public: optax's shipped tests too]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

CLEAN = {
    "test_add.py": "import jax, jax.numpy as jnp\n\n\ndef test_add():\n"
                   "    assert float(jax.jit(lambda x: x + 1)(jnp.ones(2)).sum()) == 4.0\n",
    "test_scale.py": "import jax, jax.numpy as jnp\n\n\ndef scale(x):\n    return x * 3\n\n\n"
                     "def test_scale():\n    assert float(jax.jit(scale)(jnp.ones(4)).sum()) == 12.0\n",
    "test_norm.py": "import jax, jax.numpy as jnp\n\n\n@jax.jit\ndef norm(x):\n    return jnp.sqrt((x * x).sum())\n\n\n"
                    "def test_norm():\n    assert float(norm(jnp.ones(9))) == 3.0\n",
}
# A set of names iterated into the module's constants: its key follows PYTHONHASHSEED (a moved key: hash seed).
REPRODUCING = {**CLEAN, "test_order.py": (
    "import jax, jax.numpy as jnp\n\nNAMES = {'data', 'model', 'fsdp', 'expert', 'seq', 'tensor'}\n\n\n"
    "def test_order():\n    weights = jnp.array([float(len(n) * i) for i, n in enumerate(NAMES)])\n"
    "    assert float(jax.jit(lambda x: (x * weights).sum())(jnp.ones(len(NAMES)))) > 0\n")}
# Compiling is most of its time (three deep unrolled gradients, about a second of XLA each on CPU) and a later run
# loads them from the cache instead: the kind of suite where 6 fresh processes can cost less than 6 bare runs.
_DEEP = ("import jax, jax.numpy as jnp\n\n\ndef loss(ws, x):\n    for i in range({depth}):\n"
         "        x = jnp.tanh(x @ ws[i] + jnp.sin(x))\n    return (x * x).sum()\n\n\n"
         "def test_deep_{depth}():\n    grads = jax.jit(jax.grad(loss))(jnp.ones(({depth}, {width}, {width})) * 0.01, "
         "jnp.ones((8, {width})))\n    assert grads.shape == ({depth}, {width}, {width})\n")
COMPILING = {f"test_deep_{depth}.py": _DEEP.format(depth=depth, width=width)
             for depth, width in ((100, 32), (110, 24), (120, 16))}
SUITES = {"clean": CLEAN, "reproducing": REPRODUCING, "compiling": COMPILING}
EXPECTED = {"clean": "clean", "reproducing": "reproduced", "compiling": "clean", "optax": "clean"}
# --public: a public library's own tests, shipped in its wheel (optax's, as tests/integration/
# test_public_suite_integration.py runs them): a suite whose time is mostly compiling, where a later run loads
# its modules from the cache instead. On 0.4.31 (optax 0.2.3 of its date) every run compiles the same keys: clean.
PUBLIC_ARGS = ("-q", "-p", "no:randomly", "--pyargs", "optax._src.update_test", "optax.losses._regression_test")


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


@dataclass
class Checked:
    seconds: float
    cpu: float  # the check's and its processes' CPU seconds: what the load on a shared machine changes least
    cell: dict[str, Any]
    processes: int  # fresh processes the check started for the cell (runs, seed checks and control, moved folder)


def check(version: str, suite: Path, out: Path, runs: int | None, args: tuple[str, ...] = ("-q", "tests"),
          more: tuple[str, ...] = ()) -> Checked:
    argv = [sys.executable, "-m", "harness", "check", "--pytest", "--versions", version, "--quiet",
            "--cwd", str(suite), "--out", str(out), *(["--runs", str(runs)] if runs else []), *more, "--", *args]
    start, cpu = time.monotonic(), children_cpu()
    subprocess.run(argv, cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds, cpu = time.monotonic() - start, children_cpu() - cpu
    folder = max(p for p in out.iterdir() if p.is_dir())  # the one results folder made under `out`
    (cell,) = json.loads((folder / "results.json").read_text())["cells"]
    logs = [p for p in (folder / "logs").rglob("*.log") if not p.name.endswith((".first-use.log", "seed-probe.log"))]
    return Checked(seconds, cpu, cell, len(logs))


def bare(python: str, suite: Path, args: tuple[str, ...] = ("-q", "tests")) -> tuple[float, float]:
    """The suite's wall and CPU seconds, as its author runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "HARNESS_"))}
    env["JAX_PLATFORMS"] = "cpu"
    start, cpu = time.monotonic(), children_cpu()
    subprocess.run([python, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=suite, env=env, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start, children_cpu() - cpu


def _layers(tmp: Path, warm_cache: Path) -> dict[str, dict[str, str]]:
    """One pytest process's environment, a layer of the harness's at a time: a cache folder (warm, the harness's
    thresholds), JAX's cache log, the start-up hook with its recorder and pytest plugin, JAX's IR dump."""
    from harness.core.jaxlog import LOG_ENV
    from harness.core.kinds import FolderMode, Platform, ThresholdMode
    from harness.core.model import CellSpec
    from harness.inputs.process_variables import IR_DUMP_VAR, hook_env, process_env

    spec = CellSpec("0.4.31", Platform.CPU, 8, None)
    cache = {k: v for k, v in process_env(spec, 1).items() if k not in LOG_ENV}
    cache["JAX_COMPILATION_CACHE_DIR"] = str(warm_cache)
    log = {**cache, **LOG_ENV}
    hook = {**log, **hook_env(tmp / "record.jsonl", ThresholdMode.HARNESS, FolderMode.ENVIRONMENT,
                              tmp / "run.recorder.jsonl")}
    return {"+ cache folder": cache, "+ JAX's cache log": log, "+ hook, recorder": hook,
            "+ IR dump": {**hook, IR_DUMP_VAR: str(tmp / "ir")}}


def parts(python: str, suite: Path, tmp: Path, repeats: int, args: tuple[str, ...] = ("-q", "tests")) -> None:
    """Where one later run's time goes (the cache warm, as every run after the first finds it): the bare suite,
    then each layer of the harness's environment added, then the same run through the harness's own runner (its
    supervisor process, the log, reading the recorder file back). CPU seconds of the process tree (load moves
    them least) and wall seconds, each the best of `repeats`, the layers alternating."""
    from harness.core.runs import Program
    from harness.environments.venv import VenvEnvironment
    from harness.measure.run_logs import read_run

    warm = tmp / "warm-cache"
    layers = _layers(tmp, warm)
    argv = [python, "-m", "pytest", "-p", "no:cacheprovider", *args]
    subprocess.run(argv, cwd=suite, check=False, env={**_clean(), **layers["+ cache folder"]},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    environment = VenvEnvironment(Path(python).parents[1], "0.4.31", {})
    program = Program(None, ("-p", "no:cacheprovider", *args), cwd=suite, module="pytest")
    timings: dict[str, list[tuple[float, float]]] = {}
    for _ in range(max(1, repeats)):
        timings.setdefault("bare", []).append(bare(python, suite, args))
        for name, env in layers.items():
            shutil.rmtree(tmp / "ir", ignore_errors=True)  # each run dumps and records afresh
            for leftover in ("run.recorder.jsonl", "record.jsonl"):
                (tmp / leftover).unlink(missing_ok=True)
            start, cpu = time.monotonic(), children_cpu()
            subprocess.run(argv, cwd=suite, check=False, env={**_clean(), **env}, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            timings.setdefault(name, []).append((time.monotonic() - start, children_cpu() - cpu))
        harness_env = {k: v for k, v in layers["+ IR dump"].items() if k != "JAX_COMPILATION_CACHE_DIR"}
        start, cpu, own = time.monotonic(), children_cpu(), time.process_time()
        outcome = environment.run(program, harness_env, warm, tmp / "run.log", 600)
        read_run(tmp / "run.log", "0.4.31", outcome.ok, tmp / "run.recorder.jsonl")
        timings.setdefault("through the harness's runner", []).append(
            (time.monotonic() - start, children_cpu() - cpu + time.process_time() - own))
    base_wall, base_cpu = (min(x[i] for x in timings["bare"]) for i in (0, 1))
    print(f"    one later run, layer by layer (best of {repeats}; bare: {base_wall:.2f} s wall, {base_cpu:.2f} s CPU):")
    for name, values in timings.items():
        wall, cpu = min(v[0] for v in values), min(v[1] for v in values)
        print(f"      {name:30} {wall:6.2f} s wall = {wall / base_wall:4.2f} T   {cpu:6.2f} s CPU = "
              f"{cpu / base_cpu:4.2f} x bare")


def harness_start(repeats: int) -> float:
    """CPU seconds of a fresh interpreter importing the harness's command line, the best of `repeats`: what every
    check pays before its first run (the Docker SDK, 0.07 s of it, is no longer imported there)."""
    best = math.inf
    for _ in range(max(1, repeats)):
        cpu = children_cpu()
        subprocess.run([sys.executable, "-c", "import harness.cli.commands"], cwd=ROOT, check=True)
        best = min(best, children_cpu() - cpu)
    return best


def _clean() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "HARNESS_", "PYTHON", "XLA_"))}


def measured_floor(python: str, suite: Path, runs: int, args: tuple[str, ...] = ("-q", "tests")) -> float:
    """The wall seconds of `runs` bare fresh runs of the whole suite, as many at once as the machine has cores: what
    N fresh processes cost here before a harness adds anything (issue 60's floor)."""
    from concurrent.futures import ThreadPoolExecutor

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(lambda _: bare(python, suite, args), range(runs)))
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", default="0.4.31")
    parser.add_argument("--runs", type=int, default=None, help="check's --runs (default: check's own)")
    parser.add_argument("--repeats", type=int, default=3, help="each timing the best of N (bare and check alternate)")
    parser.add_argument("--parts", action=argparse.BooleanOptionalAction, default=True,
                        help="also time one later run of the clean suite a layer of the harness's at a time")
    parser.add_argument("--public", action="store_true",
                        help="also optax's own shipped tests (installs optax into the release's environment)")
    args = parser.parse_args()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"check --pytest on jax {args.version} against the bare suite, each the best of {args.repeats} "
          f"(load average {load} on {os.cpu_count()} cores at the start)")
    with tempfile.TemporaryDirectory() as tmp:
        suites: dict[str, dict[str, str] | None] = {**SUITES, **({"optax": None} if args.public else {})}
        for name, files in suites.items():
            suite = Path(tmp) / name
            (suite / "tests").mkdir(parents=True)
            for file, text in (files or {}).items():
                (suite / "tests" / file).write_text(text)
            pytest_args, more = (PUBLIC_ARGS, ("--with", "optax")) if files is None else (("-q", "tests"), ())
            # makes the environment, untimed
            made = check(args.version, suite, Path(tmp) / f"{name}-warm", 2, pytest_args, more)
            python = str(Path(made.cell["environment"]["path"]) / "bin" / "python")
            bares: list[tuple[float, float]] = []
            checks: list[Checked] = []
            floors: list[float] = []
            for repeat in range(max(1, args.repeats)):
                bares.append(bare(python, suite, pytest_args))
                checks.append(check(args.version, suite, Path(tmp) / f"{name}-{repeat}", args.runs, pytest_args,
                                    more))
                floors.append(measured_floor(python, suite, len(checks[-1].cell.get("runs", [])) or 1, pytest_args))
            t, t_cpu = min(b[0] for b in bares), min(b[1] for b in bares)
            best = min(checks, key=lambda c: c.seconds)
            cpu = min(c.cpu for c in checks)
            verdict = best.cell["verdict"]
            planned = len(best.cell.get("runs", []))
            # run 1 alone, or beside run 2 (compared by key in a folder of its own): the fewest steps on 2 cores
            paired = any(r.get("compared_by_key") for r in best.cell.get("runs", []))
            floor = math.ceil(best.processes / 2) if paired else 1 + math.ceil((best.processes - 1) / 2)
            tests = f"{len(files)} tests" if files is not None else "its two shipped test files"
            print(f"  {name}: {tests}, bare T = {t:.2f} s; check {best.seconds:.1f} s = "
                  f"{best.seconds / t:.1f} T (verdict {verdict}{'' if verdict == EXPECTED[name] else ' UNEXPECTED'}; "
                  f"{best.processes} processes, {planned} planned runs{', run 2 beside run 1' if paired else ''}; "
                  f"floor on 2 cores about {floor} processes in a row; issue 51's target when clean: 3 T)")
            lowest = min(floors)
            print(f"    floor measured: its {planned} planned runs bare, {os.cpu_count()} at once, {lowest:.1f} s; "
                  f"the check = {best.seconds / lowest:.2f}x the floor (issue 60's target when clean: at most 1.3x; "
                  f"where compiling dominates at most 3 T: {best.seconds / t:.1f} T)")
            print(f"    CPU: bare {t_cpu:.2f} s; check {cpu:.1f} s = {cpu / t_cpu:.1f} x the bare CPU, "
                  f"{cpu / t_cpu / 2:.1f} T on 2 idle cores at best")
            if name == "clean":
                start = harness_start(args.repeats)
                print(f"    the harness's own start (its command line imported, before run 1 can begin): {start:.2f} s "
                      f"of CPU = {start / t_cpu:.2f} x the bare CPU")
            if name == "clean" and args.parts:
                parts(python, suite, Path(tmp) / "parts", args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
