"""A public library's own tests where a host callback and random shapes meet (issue 72's "Done when"): optax ships its
tests in its wheel; its zoom linesearch's failure tests run with `verbose=True`, whose `jax.debug.print` sits in the
`lax.while_loop` JAX compiles as `jit_while` (never written), while `test_high_smaller_than_low` compiles a `jit_while`
JAX writes (a namesake: by module name it hid the other); its masked cosine tests (optax 0.2.8, on 0.10.2) draw unseeded
random masks, so a later run compiles helpers at sizes run 1 never had (new input). On 0.4.31 (optax 0.2.3) the
callback's key moves in every process too (its address is in the module): never written either way, `not cached`.

The by-hand count reads the runs' recorder files (JAX's own messages, each stamped with its test; nothing of the
harness's judgement): a test that logged JAX's refusal to write a module for host callbacks is not cached with that
module; a cache miss of a later run at argument types run 1 never compiled its module at is new input."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from harness.cli import commands as cli

pytestmark = pytest.mark.integration

MODULES = ["optax._src.linesearch_test", "optax.losses._regression_test"]
SELECTED = "test_failure_flat_fun or test_failure_inf_value or test_high_smaller_than_low or test_mask"
_REFUSED = re.compile(r"Not writing persistent cache entry for '([^']+)' because it uses host callbacks")
_MISS = re.compile(r"PERSISTENT COMPILATION CACHE MISS for '([^']+)' with key '([^']+)'")
_COMPILING = re.compile(r"Compiling (\S+) with global shapes and types \((.*)\)\. Argument mapping")


def _records(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def refused(path: Path) -> set[tuple[str, str]]:
    """(test, module) of every refusal to write for host callbacks JAX logged in one run."""
    return {(r.get("test") or "", m[1]) for r in _records(path) if (m := _REFUSED.search(r.get("message") or ""))}


def misses(path: Path, skip: frozenset[str] = frozenset()) -> dict[tuple[str, str], set[str]]:
    """(test, module) -> the argument types of each cache miss JAX logged in one run (its `Compiling` line before it),
    the keys in `skip` left out."""
    found: dict[tuple[str, str], set[str]] = {}
    shapes = ""
    for record in _records(path):
        message = record.get("message") or ""
        if compiling := _COMPILING.search(message):
            shapes = compiling[2]
        if (miss := _MISS.search(message)) and miss[2] not in skip:
            found.setdefault((record.get("test") or "", miss[1]), set()).add(shapes)
    return found


def test_optaxs_linesearch_callbacks_are_not_cached_per_test_and_its_random_masks_new_input(tmp_path, capsys,
                                                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["check", "--pytest", "--versions", "0.4.31", "0.10.2", "--with", "optax", "--runs", "3",
                     "--no-moved-folder", "--junit-xml", "junit.xml", "--json", "--quiet",
                     "--", "-q", "-p", "no:randomly", "--pyargs", *MODULES, "-k", SELECTED])
    printed = capsys.readouterr()
    assert code == 0, printed.err  # not cached and new input pass unless --fail-on names them
    summary = {c["jax_version"]: c for c in json.loads(printed.out)["cells"]}
    (run_dir,) = (tmp_path / "results").iterdir()
    cells = {c["spec"]["jax_version"]: c for c in json.loads((run_dir / "results.json").read_text())["cells"]}
    for version, cell in cells.items():
        assert cell["verdict"] == "not cached", (version, cell["reason"])
        good = [r for r in cell["runs"] if r["exit_code"] == 0]
        recorded = [run_dir / r["log"].replace(".log", ".recorder.jsonl") for r in good]
        # by hand: not cached
        uncached = set().union(*(refused(p) for p in recorded))
        assert {m for _, m in uncached} == {"jit_while"}, uncached
        # by hand: new input, the later runs' misses at argument types run 1 never compiled their function at
        run_1 = misses(recorded[0])
        first_types: dict[str, set[str]] = {}
        for (_, module), types in run_1.items():
            first_types.setdefault(module, set()).update(types)
        drawn: set[tuple[str, str]] = set()
        for path in recorded[1:]:
            for (test, module), types in misses(path, frozenset(m[2] for m in _MISS.finditer(recorded[0].read_text()))
                                                ).items():
                if (test, module) not in uncached and types - first_types.get(module, set()):
                    drawn.add((test, module))
        found = summary[version]["per_test"]
        named = {(t, m["module"], m["category"]) for m in found.get("misses", []) for t in m["tests"]}
        assert {(t, m) for t, m, c in named if c == "not cached"} == uncached, (version, sorted(named))
        assert {(t, m) for t, m, c in named if c == "new input"} == drawn, (version, sorted(named), sorted(drawn))
        assert {c for _, _, c in named} <= {"not cached", "new input"}, named
        status = {t["id"]: t["status"] for t in found["tests"]}
        callback_tests = {t for t, _ in uncached}
        assert {t for t, s in status.items() if s == "not cached"} == callback_tests - {t for t, _ in drawn}
        assert {t for t, s in status.items() if s == "clean"} == set(status) - callback_tests - {t for t, _ in drawn}
        assert len(callback_tests) == 2 and all("test_failure_" in t for t in callback_tests), callback_tests
        if version == "0.4.31":
            assert not drawn  # optax 0.2.3's tests draw no random shapes
        # the callback's line: optax's own (its linesearch's jax.debug.print, as the recorder saw the call), not JAX's;
        # optax's own test calls it (no other package between)
        assert re.fullmatch(r"optax/_src/linesearch\.py:\d+ jax\.debug\.print", cell["callback_sites"]["jit_while"]), cell
    # JUnit: the callback's tests pass, saying not cached
    cases = {c.get("name"): c for c in ElementTree.parse(tmp_path / "junit.xml").getroot().iter("testcase")}
    said = [c for n, c in cases.items() if "test_failure_flat_fun" in n]
    assert len(said) == 2 and all(c.find("failure") is None and "jit_while: not cached" in c.find("system-out").text
                                  for c in said)
    report = (run_dir / "report.md").read_text()
    assert len(report.encode()) < 20_000, len(report.encode())
    assert "regression" not in report.splitlines()[0] and "not cached on 0.4.31, 0.10.2" in report.splitlines()[0]
