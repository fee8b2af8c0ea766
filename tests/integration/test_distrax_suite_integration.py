"""A public JAX library's own tests on two releases, against a by-hand count (issue 60's "Done when"). distrax ships
its tests in its wheel; a user checks two of its files from a folder of their own with `--pyargs`, distrax resolved
as of each release (0.1.5 on 0.4.31, 0.1.9 on 0.10.2). What they do, seen here: the `two_distributions` tests of
`normal_test` close jitted KL divergences and cross entropies over unseeded `np.random` arrays, so those keys move in
every fresh process whatever the hash seed: the program's own randomness, `new input` (a control with run 1's own
hash seed computes other keys; before the cause controls this read `reproduced`, `moved key: program`); on 0.4.31 the
five `float64` Greedy tests fail in every run (distrax 0.1.5 against JAX's x64-less dtypes): failing tests, not cache
misses. Only those tests and the other `two_distributions` tests under jit (two clean ones among them) are selected:
each process still imports both files, but computes 76 keys a run on 0.10.2 where the whole `two_distributions or
Greedy` selection computed 186 (half the CPU of a first run), and every property below needs no other test.

The by-hand count uses nothing of the harness: fresh `python -m pytest -s` processes in the release's environment,
each with the same cache folder, JAX's own debug log on stderr (`JAX_DEBUG_LOG_MODULES`, `JAX_LOGGING_LEVEL`) and
a three-line pytest plugin that prints each test's id as it starts, the cache folder listed after each run, and one
fixed `PYTHONHASHSEED` for every process (so a key that still moves follows the program, not the hash seed). Two such
processes, run 1 in an empty folder and one after it, are every kind of run there is by hand: a third is the second
again (each computes the same keys; the moved ones move in every process)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

import pytest

from harness.cli import commands as cli
from tests.cells import SCHEMA

pytestmark = pytest.mark.integration

VERSIONS = ("0.4.31", "0.10.2")
RUNS = 3  # the fewest with which run 2 runs beside run 1 (a run after it measures served hits)
BY_HAND_RUNS = 2
MODULES = ["distrax._src.distributions.normal_test", "distrax._src.distributions.greedy_test"]
PYTEST_ARGS = ["-q", "-p", "no:randomly", "-p", "no:cacheprovider", "--pyargs", *MODULES,
               "-k", "two_distributions and with_jit or sample_dtype_float64"]
LOG_MODULES = "jax._src.cache_key,jax._src.compiler,jax._src.compilation_cache"
# to file descriptor 2 itself, beside whatever the program does with sys.stderr
PLUGIN = ("import os\n\n\ndef pytest_runtest_logstart(nodeid, location):\n"
          "    os.write(2, f'@@TEST {nodeid}\\n'.encode())\n")

_START = re.compile(r"@@TEST (\S.*)$")  # pytest's progress dot may stand before it
_KEY = re.compile(r"(?:PERSISTENT COMPILATION CACHE MISS|Persistent compilation cache hit) for '([^']+)' "
                  r"with key '([^']+)'")
_MISS = re.compile(r"PERSISTENT COMPILATION CACHE MISS for '([^']+)' with key '([^']+)'")
_NOT_WRITTEN = re.compile(r"Not writing persistent cache entry for '([^']+)'")
_COMPILING = re.compile(r"Compiling (\S+) (?:with global shapes and types|\(\d+\) for \d+ devices with args) (.*?)\. "
                        r"(?:Argument mapping|\(num_replicas)")
_FAILED = re.compile(r"^FAILED (\S+::\S+)")


def _short(test: str) -> str:
    """`::NormalTest::test_x` from `distrax/_src/distributions/normal_test.py::NormalTest::test_x` or pytest's own
    `::NormalTest::test_x` (its id of a test outside its rootdir): the two files' classes differ."""
    return "::" + test.split("::", 1)[1] if "::" in test else test


@dataclass
class Run:
    keys: dict[str, str] = field(default_factory=dict)  # key -> module, every key JAX computed (hit or miss)
    misses: list[tuple[str, str, str, str]] = field(default_factory=list)  # (test, module, key, argument types)
    types: dict[str, set[str]] = field(default_factory=dict)  # module -> argument types of its compilations
    not_written: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    entries: set[str] = field(default_factory=set)  # the cache folder's entries after the run


def _read(text: str) -> Run:
    run, test, types = Run(), "", ""
    for line in text.splitlines():
        if start := _START.search(line):
            test = _short(start[1])
        if compiling := _COMPILING.search(line):
            types = compiling[2]
        if key := _KEY.search(line):
            run.keys[key[2]] = key[1]
            run.types.setdefault(key[1], set()).add(types)
        if miss := _MISS.search(line):
            run.misses.append((test, miss[1], miss[2], types))
        if not_written := _NOT_WRITTEN.search(line):
            run.not_written.add(not_written[1])
        if failed := _FAILED.match(line):
            run.failed.add(_short(failed[1]))
    return run


def by_hand(python: Path, where: Path, runs: int) -> list[Run]:
    """`runs` fresh pytest processes of the suite sharing one cache folder, read from JAX's own log."""
    where.mkdir()
    (where / "byhand_ids.py").write_text(PLUGIN)
    cache = where / "cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_", "PYTEST_", "HARNESS_"))}
    env.update(JAX_COMPILATION_CACHE_DIR=str(cache), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
               JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="-1", JAX_DEBUG_LOG_MODULES=LOG_MODULES,
               JAX_LOGGING_LEVEL="DEBUG", JAX_PLATFORMS="cpu", PYTHONHASHSEED="0", PYTHONPATH=str(where),
               XLA_FLAGS="--xla_force_host_platform_device_count=8")
    out = []
    for n in range(runs):
        done = subprocess.run([str(python), "-m", "pytest", "-s", "-p", "byhand_ids", *PYTEST_ARGS], check=False,
                              cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=900)
        (where / f"run-{n + 1}.log").write_text(done.stdout)
        assert done.returncode in (0, 1), done.stdout[-3000:]
        run = _read(done.stdout)
        run.entries = {p.name.removesuffix("-cache") for p in cache.iterdir() if p.name.endswith("-cache")}
        out.append(run)
    return out


def test_distraxs_own_tests_on_two_releases_agree_with_a_by_hand_count(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # as a user: a folder of their own, the default results folder under it
    code = cli.main(["check", "--pytest", "--versions", *VERSIONS, "--with", "distrax", "--runs", str(RUNS),
                     "--no-moved-folder", "--junit-xml", "junit.xml", "--json", "--quiet", "--", *PYTEST_ARGS])
    printed = capsys.readouterr()
    assert code == 0, printed.err  # new input (the program's own random constants) fails only if asked
    summary = {c["jax_version"]: c for c in json.loads(printed.out)["cells"]}
    (run_dir,) = (tmp_path / "results").iterdir()
    cells = {c["spec"]["jax_version"]: c for c in json.loads((run_dir / "results.json").read_text())["cells"]}
    assert {v: c["environment"]["distributions"]["distrax"] for v, c in cells.items()} == {"0.4.31": "0.1.5",
                                                                                           "0.10.2": "0.1.9"}
    figures = {}
    for version, cell in cells.items():
        # the cell stopped at run 2's new keys, then run 1's seed again moved them again (the program's): new input,
        # so its planned runs went on
        assert len(cell["runs"]) == RUNS and all(r["exit_code"] in (0, 1) for r in cell["runs"]), cell["reason"]
        assert cell["seed_control"]["index"] == 1 and not cell.get("more_controls"), cell.get("more_controls")
        # run 2 ran beside run 1 and was compared by key, also where run 1 exited 1 with its failing tests (0.4.31)
        assert cell["runs"][1].get("compared_by_key") is not None, (version, cell["runs"][1])
        # one account of each run: pytest's report of a failing test's stderr is not the run's log (0.4.31)
        assert "disagree" not in cell["reason"], cell["reason"]
        hand = by_hand(Path(cell["environment"]["path"]) / "bin" / "python", tmp_path / f"by-hand-{version}",
                       BY_HAND_RUNS)
        first, later = hand[0], hand[1:]
        # keys and modules per run: the harness's own account of each run against JAX's log read here (its run 1
        # against run 1 by hand, each later run against the later one by hand)
        harness_keys = [len({k["key"] for k in r["keys"]["keys"]}) for r in cell["runs"]]
        harness_modules = [len({k["module"] for k in r["keys"]["keys"]}) for r in cell["runs"]]
        as_runs = [hand[min(i, BY_HAND_RUNS - 1)] for i in range(len(cell["runs"]))]
        assert harness_keys == [len(r.keys) for r in as_runs], (version, harness_keys, [len(r.keys) for r in hand])
        assert harness_modules == [len(set(r.keys.values())) for r in as_runs], version
        # the cache folder: run 1 writes every key it computed (zero thresholds), a later run what it missed
        assert first.entries == set(first.keys), version
        written = [e for e in cell["runs"][0]["new_entries"] if not e.endswith("-atime")]  # 0.4.31 on: two files
        assert len(written) == len(first.entries), (version, len(written), len(first.entries))
        # a later run's miss at argument types run 1 compiled the function at; with one hash seed for every process
        # it still moves: the program's own randomness, which the harness's controls found (new input)
        moved, new_input = set(), set()
        for run in later:
            for test, module, key, types in run.misses:
                if key not in first.keys:
                    (moved if types in first.types.get(module, set()) else new_input).add((test, module))
        assert moved and not new_input, (version, moved, new_input)
        assert not any(r.not_written for r in hand), version  # nothing here is one JAX never writes
        found = summary[version]["per_test"]
        named = {(_short(t), m["module"]) for m in found["misses"] for t in m["tests"]}
        assert named == moved, (version, sorted(named ^ moved))
        assert {m["category"] for m in found["misses"]} == {"new input"}, found["misses"]
        assert {m.get("follows") for m in found["misses"]} == {None}, found["misses"]
        assert cell["verdict"] == "new input", cell["reason"]
        assert "the program's own randomness moved it" in cell["reason"], cell["reason"]
        assert {_short(t["id"]) for t in found["tests"] if t["status"] == "missed"} == {t for t, _ in moved}
        assert not [t for t in found["tests"] if t["status"] == "not cached"], version
        # failing and flaky tests: pytest's own FAILED lines of each by-hand process
        always = set.intersection(*(r.failed for r in hand))
        sometimes = set.union(*(r.failed for r in hand)) - always
        assert {_short(t["id"]) for t in found["tests"] if t["status"] == "failing"} == always, version
        assert {_short(c["id"]) for c in found.get("changed", [])} == sometimes, version
        assert bool(always) == (version == "0.4.31"), (version, always)
        if always:
            assert "failing in every run (not cache misses)" in cell["reason"], cell["reason"]
            assert f"pytest: {len(hand[0].failed)} failed" in cell["reason"], cell["reason"]
        figures[version] = {"keys per run": [len(r.keys) for r in hand], "modules": len(set(first.keys.values())),
                            "moved": sorted({m for _, m in moved}), "tests moved": len({t for t, _ in moved}),
                            "failing": len(always)}
    print(json.dumps(figures), file=sys.stderr)  # the by-hand count, for the note (pytest -s shows it)

    # JUnit: a case per test of each release; new input fails none (only with --fail-on new-input), the failing
    # ones are skipped
    SCHEMA.validate(str(tmp_path / "junit.xml"))
    cases = [c for c in ElementTree.parse(tmp_path / "junit.xml").getroot().iter("testcase")
             if " [jax " in (c.get("name") or "")]
    assert len(cases) == sum(len(s["per_test"]["tests"]) for s in summary.values())
    failed = {c.get("name") for c in cases if c.find("failure") is not None}
    assert failed == set(), failed
    assert any(t["status"] == "missed" for s in summary.values() for t in s["per_test"]["tests"])  # (new input)
    assert all(float(c.get("time") or 0) > 0 for c in cases if c.find("skipped") is None)
    report = (run_dir / "report.md").read_text()
    assert "distrax 0.1.5 on 0.4.31, 0.1.9 on 0.10.2" in report.splitlines()[0], report.splitlines()[0]
    size = len(report.encode())
    print(json.dumps({"report.md bytes": size}), file=sys.stderr)
    # issue 60.5: under 20 KB (unpadded tables, the detail cut, budgets per section: report/), each cut saying where
    # the rest is; the facts of the first screen kept
    assert size < 20_000, size
    assert "the rest: results.json" in report or all(len(line) < 600 for line in report.splitlines() if line[:2] == "| ")
    assert "## What to do" in report and "the program's own randomness moved it" in report
