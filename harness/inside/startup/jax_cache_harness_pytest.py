"""The recorder's pytest plugin: loaded into a run's pytest through PYTEST_PLUGINS (the start-up hook adds
it when the harness gives a recorder file), never a change to the suite. It tells the recorder which test
runs now, so each of JAX's cache messages carries the test that caused it, and records what pytest itself
decided: the ids collected, each test's outcome, a collection error, the session's exit status. Later work
tells "selected, skipped or failed differently between runs" from a cache miss with these.

Standard library and pytest only; it runs on any interpreter a JAX release supports."""

import sys

import pytest

HOOK_MODULE = "jax_cache_harness_hook"  # loaded by the start-up hook's sitecustomize before pytest starts

_OUTCOMES = {}  # test id -> its outcome so far (a phase that failed or skipped decides it)
_IDS = {}  # pytest's node id -> the id recorded, where they differ (a test file outside the rootdir)


def _recorder():
    """The run's recorder; None when the start-up hook did not install one (pytest outside the harness)."""
    return getattr(sys.modules.get(HOOK_MODULE), "RECORDER", None)


def test_id(item):
    """The test's id as recorded: pytest's node id, or for a test file outside the rootdir (a library's tests
    run from its installed package, `pytest --pyargs lib.x_test`), whose node id starts at `::` and names no
    file, the module's file from its package (`lib/x_test.py::TestX::test_a`)."""
    if not item.nodeid.startswith("::"):
        return item.nodeid
    module = getattr(getattr(item, "module", None), "__name__", None)
    if not module:
        return item.nodeid
    path = str(getattr(item, "path", ""))
    name = module.replace(".", "/") + ("/__init__.py" if path.endswith("__init__.py") else ".py")
    return name + item.nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session):
    recorder = _recorder()
    for item in session.items:
        if item.nodeid.startswith("::"):
            _IDS[item.nodeid] = test_id(item)
    if recorder is not None:
        recorder.write({"kind": "collected", "ids": [test_id(item) for item in session.items]})


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    # node ids outside the rootdir can repeat between modules (`::TestX::test_a`): the item says which
    _IDS[item.nodeid] = test_id(item)


def pytest_collectreport(report):
    recorder = _recorder()
    if recorder is not None and report.failed:
        recorder.write({"kind": "collect_error", "id": report.nodeid, "test": report.nodeid})


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid, location):
    recorder = _recorder()
    if recorder is not None:
        recorder.test, recorder.phase = _IDS.get(nodeid, nodeid), None


def _phase(name):
    recorder = _recorder()
    if recorder is not None:
        recorder.phase = name


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _phase("setup")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    _phase("call")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item):
    _phase("teardown")


def outcome_of(when, outcome, known, xfail):
    """A test's outcome after one phase's report (pure): `known` the outcome so far. A failed setup or
    teardown is an error, a skip in setup or call is skipped, an expected failure is xfailed/xpassed."""
    if outcome == "failed":
        return "failed" if when == "call" else (known if known == "failed" else "error")
    if outcome == "skipped":
        return "xfailed" if xfail else "skipped"
    if when == "call":
        return "xpassed" if xfail else "passed"
    return known


def pytest_runtest_logreport(report):
    known = _OUTCOMES.get(report.nodeid)
    _OUTCOMES[report.nodeid] = outcome_of(report.when, report.outcome, known, hasattr(report, "wasxfail"))


@pytest.hookimpl(trylast=True)
def pytest_runtest_logfinish(nodeid, location):
    recorder = _recorder()
    if recorder is None:
        return
    recorded = _IDS.get(nodeid, nodeid)
    recorder.write({"kind": "test", "id": recorded, "test": recorded,
                    "outcome": _OUTCOMES.pop(nodeid, None) or "passed"})
    recorder.test, recorder.phase = None, None


def pytest_sessionfinish(session, exitstatus):
    recorder = _recorder()
    if recorder is not None:
        recorder.write({"kind": "session", "exit_status": int(exitstatus)})
