"""A public JAX library's own tests as the program (issue 51's acceptance): optax ships its tests in its wheel, and a
user runs them from a folder of their own as `harness check --pytest -- -q --pyargs optax.x_test`. On 0.4.31 (optax
0.2.3 of its date) every run compiles the same keys: clean. On 0.10.2 (optax 0.2.8) the masked cosine tests draw
unseeded random masks, so a later run may compile `jit__reduce_sum` and three more helpers at mask sizes run 1 never
had: new input, never a moved key. Which runs do is chance, so the test counts by hand from the runs' recorder files
(JAX's own messages, no harness judgement) and asserts that the harness names exactly those tests and functions.

The by-hand count follows the documented rule (docs/measuring.md): a later run's miss is one of a key no earlier run
(by index) computed. Runs in sequence never log another kind (the earlier run's entry is a hit), but runs that overlap
do: run 2 beside run 1, and runs 3 and 4 at once (each in a folder of its own) may both draw the same mask size and
both compile its key, which is the earlier run's miss alone, so the verdict does not depend on whether runs overlapped
(a by-hand count of every logged miss charged run 4's test too, and failed whenever the two drew alike)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from harness.cli import commands as cli
from tests.cells import SCHEMA

pytestmark = pytest.mark.integration

MODULES = ["optax._src.update_test", "optax.losses._regression_test"]
_MISS = re.compile(r"PERSISTENT COMPILATION CACHE MISS for '([^']+)' with key '([^']+)'")
_KEY = re.compile(r"(?:PERSISTENT COMPILATION CACHE MISS|Persistent compilation cache hit) for '[^']+' with key '([^']+)'")
_COMPILING = re.compile(r"Compiling (\S+) with global shapes and types \((.*)\)\. Argument mapping")


def by_hand(recorder_file: Path, earlier: frozenset[str] = frozenset()) -> dict[tuple[str, str], set[str]]:
    """(test, module) -> the argument types (JAX's own `Compiling ... with global shapes and types` line before it)
    of every cache miss JAX logged in one run, read line by line from the recorder file, the keys an earlier run
    computed (`earlier`) left out: the earlier run's misses, met again by a run that overlapped it."""
    found: dict[tuple[str, str], set[str]] = {}
    shapes = ""
    for line in recorder_file.read_text().splitlines():
        record = json.loads(line)
        message = record.get("message") or ""
        if compiling := _COMPILING.search(message):
            shapes = compiling[2]
        if (miss := _MISS.search(message)) and miss[2] not in earlier:
            found.setdefault((record.get("test") or "", miss[1]), set()).add(shapes)
    return found


def computed(recorder_file: Path) -> frozenset[str]:
    """Every key JAX logged a hit or a miss for in one run."""
    return frozenset(m[1] for m in _KEY.finditer(recorder_file.read_text()))


def test_optaxs_own_tests_give_the_verdicts_a_by_hand_count_gives(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # as a user: a folder of their own, the default results folder under it
    code = cli.main(["check", "--pytest", "--versions", "0.4.31", "0.10.2", "--with", "optax", "--runs", "4",
                     "--no-moved-folder", "--junit-xml", "junit.xml", "--json", "--quiet",
                     "--", "-q", "-p", "no:randomly", "--pyargs", *MODULES])
    printed = capsys.readouterr()
    assert code == 0, printed.err  # new input passes unless --fail-on names it
    summary = {c["jax_version"]: c for c in json.loads(printed.out)["cells"]}
    (run_dir,) = (tmp_path / "results").iterdir()
    cells = {c["spec"]["jax_version"]: c for c in json.loads((run_dir / "results.json").read_text())["cells"]}
    assert cells["0.4.31"]["environment"]["distributions"]["optax"] == "0.2.3"
    assert cells["0.10.2"]["environment"]["distributions"]["optax"] == "0.2.8"

    for version, cell in cells.items():
        first, *later = [r for r in cell["runs"] if r["exit_code"] == 0]
        assert len(later) == 3, cell["reason"]
        recorded = [run_dir / r["log"].replace(".log", ".recorder.jsonl") for r in (first, *later)]
        run_1 = by_hand(recorded[0])
        first_types: dict[str, set[str]] = {}
        for (_, module), types in run_1.items():
            first_types.setdefault(module, set()).update(types)
        missed: dict[tuple[str, str], set[str]] = {}
        earlier = computed(recorded[0])
        for path in recorded[1:]:  # in index order: each run's misses of keys no earlier run computed
            for pair, types in by_hand(path, earlier).items():
                missed.setdefault(pair, set()).update(types)
            earlier |= computed(path)
        # every later miss is at argument types run 1 never compiled its function at: new input, not a moved key
        assert all(not types & first_types.get(module, set()) for (_, module), types in missed.items()), missed
        found = summary[version]["per_test"]
        named = {(t, m["module"]) for m in found.get("misses", []) for t in m["tests"]}
        assert named == set(missed), (version, sorted(named), sorted(missed))
        assert {m["category"] for m in found.get("misses", [])} <= {"new input"}
        assert cell["verdict"] == ("new input" if missed else "clean"), cell["reason"]
        # the ids name the installed module's file, as `--pyargs` finds it again (pytest's own start at `::`)
        ids = [t["id"] for t in found["tests"]]
        assert ids and all(i.startswith(("optax/_src/update_test.py::", "optax/losses/_regression_test.py::"))
                           for i in ids), ids[:3]
        assert {t["id"] for t in found["tests"] if t["status"] == "missed"} == {t for t, _ in missed}
        if version == "0.4.31":
            assert not missed  # optax 0.2.3's tests draw no random shapes
            assert re.match(r"\d+ tests: \d+ keys of \d+ functions per run, the same in all 4 runs", cell["reason"])

    # JUnit: a case per test of each release, none failing (new input passes, with its functions in its output)
    SCHEMA.validate(str(tmp_path / "junit.xml"))
    cases = [c for c in ElementTree.parse(tmp_path / "junit.xml").getroot().iter("testcase")
             if " [jax " in (c.get("name") or "")]
    assert len(cases) == sum(len(s["per_test"]["tests"]) for s in summary.values())
    assert not [c.get("name") for c in cases if c.find("failure") is not None]
    report = (run_dir / "report.md").read_text()
    assert len(report.encode()) < 20_000, len(report.encode())
    assert "optax 0.2.3 on 0.4.31, 0.2.8 on 0.10.2" in report.splitlines()[0]
