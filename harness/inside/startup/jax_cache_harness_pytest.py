"""The recorder's pytest plugin: loaded into a run's pytest through PYTEST_PLUGINS (the start-up hook adds
it when the harness gives a recorder file), never a change to the suite. It tells the recorder which test
runs now, so each of JAX's cache messages carries the test that caused it, and records what pytest itself
decided: the ids collected, each test's outcome, a collection error, the session's exit status. Later work
tells "selected, skipped or failed differently between runs" from a cache miss with these.

Standard library and pytest only; it runs on any interpreter a JAX release supports, with any pytest it has:
the annotations are never evaluated (pytest.CollectReport, for one, is pytest 7's)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the hook's module as the type checker sees it (in harness/); never run
    from .jax_cache_harness_hook import Recorder

HOOK_MODULE = "jax_cache_harness_hook"  # loaded by the start-up hook's sitecustomize before pytest starts

_OUTCOMES: dict[str, str | None] = {}  # test id -> its outcome so far (a phase that failed or skipped decides it)


def _recorder() -> Recorder | None:
    """The run's recorder; None when the start-up hook did not install one (pytest outside the harness)."""
    return getattr(sys.modules.get(HOOK_MODULE), "RECORDER", None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    recorder = _recorder()
    if recorder is not None:
        recorder.write({"kind": "collected", "ids": [item.nodeid for item in session.items]})


def pytest_collectreport(report: pytest.CollectReport) -> None:
    recorder = _recorder()
    if recorder is not None and report.failed:
        recorder.write({"kind": "collect_error", "id": report.nodeid, "test": report.nodeid})


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    recorder = _recorder()
    if recorder is not None:
        recorder.test, recorder.phase = nodeid, None


def _phase(name: str) -> None:
    recorder = _recorder()
    if recorder is not None:
        recorder.phase = name


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _phase("setup")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    _phase("call")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    _phase("teardown")


def outcome_of(when: str, outcome: str, known: str | None, xfail: bool) -> str | None:
    """A test's outcome after one phase's report (pure): `known` the outcome so far. A failed setup or
    teardown is an error, a skip in setup or call is skipped, an expected failure is xfailed/xpassed."""
    if outcome == "failed":
        return "failed" if when == "call" else (known if known == "failed" else "error")
    if outcome == "skipped":
        return "xfailed" if xfail else "skipped"
    if when == "call":
        return "xpassed" if xfail else "passed"
    return known


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    known = _OUTCOMES.get(report.nodeid)
    _OUTCOMES[report.nodeid] = outcome_of(report.when, report.outcome, known, hasattr(report, "wasxfail"))


@pytest.hookimpl(trylast=True)
def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    recorder = _recorder()
    if recorder is None:
        return
    recorder.write({"kind": "test", "id": nodeid, "test": nodeid,
                    "outcome": _OUTCOMES.pop(nodeid, None) or "passed"})
    recorder.test, recorder.phase = None, None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    recorder = _recorder()
    if recorder is not None:
        recorder.write({"kind": "session", "exit_status": int(exitstatus)})
