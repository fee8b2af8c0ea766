"""The recorder's pytest plugin: loaded into a run's pytest through PYTEST_PLUGINS (the start-up hook adds
it when the harness gives a recorder file), never a change to the suite. It tells the recorder which test
runs now, so each of JAX's cache messages carries the test that caused it, and records what pytest itself
decided: the ids collected, each test's outcome, a collection error, the session's exit status. Later work
tells "selected, skipped or failed differently between runs" from a cache miss with these.

Standard library and pytest only; it runs on any interpreter a JAX release supports, with any pytest it has:
the annotations are never evaluated (pytest.CollectReport, for one, is pytest 7's)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the hook's module as the type checker sees it (in harness/); never run
    from .jax_cache_harness_hook import Recorder

HOOK_MODULE = "jax_cache_harness_hook"  # loaded by the start-up hook's sitecustomize before pytest starts

_OUTCOMES: dict[str, str | None] = {}  # test id -> its outcome so far (a phase that failed or skipped decides it)
_SECONDS: dict[str, float] = {}  # test id -> pytest's own durations of its phases so far
_IDS: dict[str, str] = {}  # pytest's node id -> the id recorded (they differ for a test file outside the folder pytest started in)


def _recorder() -> Recorder | None:
    """The run's recorder; None when the start-up hook did not install one (pytest outside the harness)."""
    return getattr(sys.modules.get(HOOK_MODULE), "RECORDER", None)


# sys.path as the plugin loads (before pytest's own import mode puts a test's folder in front): the folders an
# installed package's tests are imported from, site-packages or an editable install's source folder
_IMPORT_ROOTS = [os.path.abspath(p or os.getcwd()) for p in sys.path]


def _from_import_root(path: object) -> str | None:
    """`optax/_src/update_test.py`: the file's path from the sys.path folder it is imported from; None if none."""
    full = os.path.abspath(str(path))
    roots = [r for r in _IMPORT_ROOTS if full.startswith(r.rstrip(os.sep) + os.sep)]
    return os.path.relpath(full, max(roots, key=len)).replace(os.sep, "/") if roots else None


def recorded_id(item: pytest.Item) -> str:
    """The test's id as recorded: pytest's node id for a test file under the folder pytest was started in; for one
    outside it (a library's tests run from its installed package, `pytest --pyargs lib.x_test`), whose node id is
    relative to whatever rootdir pytest picked (`::TestX::test_a` when outside it, `x_test.py::...` when the
    rootdir is the package's own folder), the file from its installed package (`lib/x_test.py::TestX::test_a`),
    the same from any folder. Not the module's `__name__`: a test folder with no `__init__.py` (optax's
    `_src`) is imported as `update_test`."""
    path = getattr(item, "path", None)
    try:
        started = item.config.invocation_params.dir
        outside = path is not None and not path.is_relative_to(started)
    except AttributeError:  # an older pytest: node ids outside the rootdir still start at `::`
        outside = item.nodeid.startswith("::")
    if not outside or path is None or "::" not in item.nodeid:
        return item.nodeid
    name = _from_import_root(path)
    return name + "::" + item.nodeid.split("::", 1)[1] if name else item.nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    recorder = _recorder()
    for item in session.items:
        _IDS[item.nodeid] = recorded_id(item)
    if recorder is not None:
        recorder.write({"kind": "collected", "ids": [recorded_id(item) for item in session.items]})


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    # node ids outside the rootdir can repeat between modules (`::TestX::test_a`): the item says which one runs
    _IDS[item.nodeid] = recorded_id(item)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    recorder = _recorder()
    if recorder is not None and report.failed:
        recorder.write({"kind": "collect_error", "id": report.nodeid, "test": report.nodeid})


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    recorder = _recorder()
    if recorder is not None:
        recorder.test, recorder.phase = _IDS.get(nodeid, nodeid), None


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
    _SECONDS[report.nodeid] = _SECONDS.get(report.nodeid, 0.0) + (getattr(report, "duration", 0.0) or 0.0)
    _OUTCOMES[report.nodeid] = outcome_of(report.when, report.outcome, known, hasattr(report, "wasxfail"))


@pytest.hookimpl(trylast=True)
def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    recorder = _recorder()
    if recorder is None:
        return
    recorded = _IDS.get(nodeid, nodeid)
    recorder.write({"kind": "test", "id": recorded, "test": recorded,
                    "outcome": _OUTCOMES.pop(nodeid, None) or "passed",
                    "seconds": round(_SECONDS.pop(nodeid, 0.0), 3)})
    recorder.test, recorder.phase = None, None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    recorder = _recorder()
    if recorder is not None:
        recorder.write({"kind": "session", "exit_status": int(exitstatus)})
