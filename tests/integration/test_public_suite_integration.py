"""A public JAX library's own tests as the program (issues 51 and 72): optax ships its tests in its wheel, and a user
checks them from a folder of their own as `harness check --pytest -- -q --pyargs optax.x_test`. One check of two of
its files on 0.4.31 (optax 0.2.3 of its date) and 0.10.2 (optax 0.2.8), read by both tests below:
- the zoom linesearch's failure tests run with `verbose=True`, whose `jax.debug.print` sits in the `lax.while_loop`
  JAX compiles as `jit_while` and never writes (host callbacks), while `test_high_smaller_than_low` compiles a
  `jit_while` JAX writes (a namesake: by module name it hid the other); on 0.4.31 the callback's key moves in every
  process too (its address is in the module): never written either way, `not cached`, the cell's verdict;
- the masked cosine tests of `_regression_test` draw unseeded random masks on 0.10.2, so a later run may compile
  `jit__reduce_sum` and three more helpers at mask sizes run 1 never had: new input, never a moved key (optax
  0.2.3 has no masked tests);
- the namesake's test compiles the same keys in every run: a clean test.
Only those tests are selected: each costs its process its compilations (run 1, and run 2 in a folder of its own) and
its loads, and the files' other tests (clean ones) showed nothing these do not.

Which runs draw new sizes is chance, so the test counts by hand from the runs' recorder files (JAX's own messages,
each stamped with its test; nothing of the harness's judgement): a test that logged JAX's refusal to write a module
for host callbacks is not cached with that module; every other miss of a later run is at argument types run 1 never
compiled its module at (new input), and the harness names exactly those tests and functions. The count follows the
documented rule (docs/measuring.md): a later run's miss is one of a key no earlier run (by index) computed. Runs in
sequence never log another kind (the earlier run's entry is a hit), but runs that overlap do: run 2 beside run 1, and
two later runs at once (each in a folder of its own) may both draw the same mask size and both compile its key, the
earlier run's miss alone, so that the verdict does not depend on whether runs overlapped (a count of every logged
miss charged the later run's test too, and failed whenever two overlapping runs drew alike)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.cells import SCHEMA

# both tests read one check: on one worker
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("optax-suite")]

MODULES = ["optax._src.linesearch_test", "optax.losses._regression_test"]
FILES = ("optax/_src/linesearch_test.py::", "optax/losses/_regression_test.py::")
SELECTED = "test_failure_flat_fun or test_failure_inf_value or test_high_smaller_than_low or test_mask"
RUNS = 3  # the fewest with which run 2 runs beside run 1 and a later run is served from the cell's folder
_REFUSED = re.compile(r"Not writing persistent cache entry for '([^']+)' because it uses host callbacks")
_MISS = re.compile(r"PERSISTENT COMPILATION CACHE MISS for '([^']+)' with key '([^']+)'")
_KEY = re.compile(r"(?:PERSISTENT COMPILATION CACHE MISS|Persistent compilation cache hit) for '[^']+' with key '([^']+)'")
_COMPILING = re.compile(r"Compiling (\S+) with global shapes and types \((.*)\)\. Argument mapping")


@dataclass
class Checked:
    folder: Path  # the user's folder: junit.xml, results/<run>/
    run_dir: Path
    summary: dict[str, dict]  # release -> its cell in --json's output
    cells: dict[str, dict]  # release -> its cell in results.json


@pytest.fixture(scope="module")
def optax_check(tmp_path_factory) -> Checked:
    """The check, once, as a user runs it from a folder of their own (the default results folder under it)."""
    where = tmp_path_factory.mktemp("optax-suite")
    done = subprocess.run([sys.executable, "-m", "harness", "check", "--pytest", "--versions", "0.4.31", "0.10.2",
                           "--with", "optax", "--runs", str(RUNS), "--no-moved-folder", "--junit-xml", "junit.xml",
                           "--json", "--quiet", "--", "-q", "-p", "no:randomly", "--pyargs", *MODULES, "-k", SELECTED],
                          check=False, cwd=where, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]  # not cached and new input pass unless --fail-on names them
    (run_dir,) = (where / "results").iterdir()
    cells = {c["spec"]["jax_version"]: c for c in json.loads((run_dir / "results.json").read_text())["cells"]}
    return Checked(where, run_dir, {c["jax_version"]: c for c in json.loads(done.stdout)["cells"]}, cells)


def _records(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def refused(path: Path) -> set[tuple[str, str]]:
    """(test, module) of every refusal to write for host callbacks JAX logged in one run."""
    return {(r.get("test") or "", m[1]) for r in _records(path) if (m := _REFUSED.search(r.get("message") or ""))}


def misses(path: Path, earlier: frozenset[str] = frozenset()) -> dict[tuple[str, str], set[str]]:
    """(test, module) -> the argument types (JAX's own `Compiling ... with global shapes and types` line before it)
    of every cache miss JAX logged in one run, the keys an earlier run computed (`earlier`) left out."""
    found: dict[tuple[str, str], set[str]] = {}
    shapes = ""
    for record in _records(path):
        message = record.get("message") or ""
        if compiling := _COMPILING.search(message):
            shapes = compiling[2]
        if (miss := _MISS.search(message)) and miss[2] not in earlier:
            found.setdefault((record.get("test") or "", miss[1]), set()).add(shapes)
    return found


def computed(path: Path) -> frozenset[str]:
    """Every key JAX logged a hit or a miss for in one run."""
    return frozenset(m[1] for m in _KEY.finditer(path.read_text()))


def test_optaxs_own_tests_give_the_verdicts_a_by_hand_count_gives(optax_check):
    cells, summary = optax_check.cells, optax_check.summary
    assert cells["0.4.31"]["environment"]["distributions"]["optax"] == "0.2.3"
    assert cells["0.10.2"]["environment"]["distributions"]["optax"] == "0.2.8"
    for version, cell in cells.items():
        assert cell["verdict"] == "not cached", (version, cell["reason"])
        first, *later = [r for r in cell["runs"] if r["exit_code"] == 0]
        assert len(later) == RUNS - 1, cell["reason"]
        recorded = [optax_check.run_dir / r["log"].replace(".log", ".recorder.jsonl") for r in (first, *later)]
        # by hand: not cached, the tests that logged JAX's refusal
        uncached = set().union(*(refused(p) for p in recorded))
        assert {m for _, m in uncached} == {"jit_while"}, uncached
        # by hand: every other later miss (of a key no earlier run computed) is at argument types run 1 never
        # compiled its function at: new input, not a moved key
        first_types: dict[str, set[str]] = {}
        for (_, module), types in misses(recorded[0]).items():
            first_types.setdefault(module, set()).update(types)
        drawn: dict[tuple[str, str], set[str]] = {}
        earlier = computed(recorded[0])
        for path in recorded[1:]:  # in index order
            for pair, types in misses(path, earlier).items():
                if pair not in uncached:
                    drawn.setdefault(pair, set()).update(types)
            earlier |= computed(path)
        assert all(not types & first_types.get(module, set()) for (_, module), types in drawn.items()), drawn
        if version == "0.4.31":
            assert not drawn  # optax 0.2.3's tests draw no random shapes
        found = summary[version]["per_test"]
        named = {(t, m["module"], m["category"]) for m in found.get("misses", []) for t in m["tests"]}
        assert {(t, m) for t, m, c in named if c == "not cached"} == uncached, (version, sorted(named))
        assert {(t, m) for t, m, c in named if c == "new input"} == set(drawn), (version, sorted(named), sorted(drawn))
        assert {c for _, _, c in named} <= {"not cached", "new input"}, named
        # each test's status: the callback's tests not cached, where they drew nothing new; the drawing ones missed
        status = {t["id"]: t["status"] for t in found["tests"]}
        callback_tests = {t for t, _ in uncached}
        missed_tests = {t for t, _ in drawn}
        assert len(callback_tests) == 2 and all("test_failure_" in t for t in callback_tests), callback_tests
        assert {t for t, s in status.items() if s == "missed"} == missed_tests, version
        assert {t for t, s in status.items() if s == "not cached"} == callback_tests - missed_tests
        assert {t for t, s in status.items() if s == "clean"} == set(status) - callback_tests - missed_tests
        # the ids name the installed module's file, as `--pyargs` finds it again (pytest's own start at `::`)
        files = {next((f for f in FILES if i.startswith(f)), None) for i in status}
        assert files == (set(FILES) if version == "0.10.2" else {FILES[0]}), list(status)


def test_optaxs_callback_is_named_with_its_line_in_junit_and_the_report(optax_check):
    for cell in optax_check.cells.values():
        # the callback's line: optax's own (its linesearch's jax.debug.print, as the recorder saw the call), not JAX's;
        # optax's own test calls it (no other package between)
        assert re.fullmatch(r"optax/_src/linesearch\.py:\d+ jax\.debug\.print", cell["callback_sites"]["jit_while"]), cell
    # JUnit: a case per test of each release, none failing (not cached and new input pass); the callback's tests
    # say not cached in their output
    junit = optax_check.folder / "junit.xml"
    SCHEMA.validate(str(junit))
    cases = [c for c in ElementTree.parse(junit).getroot().iter("testcase") if " [jax " in (c.get("name") or "")]
    assert len(cases) == sum(len(s["per_test"]["tests"]) for s in optax_check.summary.values())
    assert not [c.get("name") for c in cases if c.find("failure") is not None]
    said = [c for c in cases if "test_failure_flat_fun" in (c.get("name") or "")]
    assert len(said) == 2 and all("jit_while: not cached" in c.find("system-out").text for c in said)
    report = (optax_check.run_dir / "report.md").read_text()
    assert len(report.encode()) < 20_000, len(report.encode())
    headline = report.splitlines()[0]
    assert "optax 0.2.3 on 0.4.31, 0.2.8 on 0.10.2" in headline and "not cached on 0.4.31, 0.10.2" in headline
    assert "regression" not in headline, headline
