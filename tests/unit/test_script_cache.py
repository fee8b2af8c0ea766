"""A user's script's own cache settings: the start-up hook's decisions (pure), its record, and what the
report and the verdict's reason make of them. No JAX here: the hook's logic is plain functions."""

import json
import subprocess
import sys

import pytest

from harness.core.records import plain, convert
from harness.core.runs import CacheSetting, RunRecord
from harness.core.findings import ScriptCacheFacts
from harness.core.kinds import ThresholdMode
from harness.evidence.script_settings import cell_facts, parse_record, sets_own_folder
from harness.inside.startup import startup_dir
from harness.inside.startup.jax_cache_harness_hook import (CACHE_DIR, ENABLE, LATE_ENVIRON, MIN_COMPILE_TIME,
                                                           MIN_ENTRY_SIZE, caller_api, decide, environment_changes)

CELL = "/results/caches/cell"


def test_a_cache_folder_the_script_asks_for_becomes_the_cells():
    applied, event = decide(CACHE_DIR, "/jaxcache", "set_cache_dir", CELL, "script")
    assert applied == CELL
    assert event == {"kind": "setting", "option": CACHE_DIR, "api": "set_cache_dir", "requested": "/jaxcache",
                     "applied": CELL}


def test_turning_the_cache_off_is_the_scripts_choice_and_recorded():
    for option, value in ((CACHE_DIR, None), (CACHE_DIR, ""), (ENABLE, False)):
        applied, event = decide(option, value, "jax.config.update", CELL, "script")
        assert applied == value and event["requested"] == value


def test_thresholds_are_kept_by_default_and_zeroed_when_asked():
    assert decide(MIN_COMPILE_TIME, 2.5, "jax.config.update", CELL, "script")[0] == 2.5
    assert decide(MIN_COMPILE_TIME, 2.5, "jax.config.update", CELL, "harness")[0] == 0.0
    applied, event = decide(MIN_ENTRY_SIZE, 10_000, "jax.config.update", CELL, "harness")
    assert applied == -1 and event["requested"] == 10_000


def test_jaxs_own_updates_pass_untouched_except_a_cache_folder():
    # _initialize_cache sets its default minimum entry size: not the script's, not recorded.
    assert decide(MIN_ENTRY_SIZE, 0, None, CELL, "harness") == (0, None)
    # A folder from absl flags (inside jax) still goes to the cell.
    assert decide(CACHE_DIR, "/flags", None, CELL, "script")[0] == CELL
    assert decide("jax_enable_x64", True, "jax.config.update", CELL, "script") == (True, None)


def test_callers_are_named_by_what_the_script_called():
    assert caller_api("jax._src.compilation_cache", "set_cache_dir") == "set_cache_dir"
    assert caller_api("jax._src.compilation_cache", "initialize_cache") == "initialize_cache"
    assert caller_api("jax._src.compilation_cache", "_initialize_cache") is None
    assert caller_api("__main__", "<module>") == "jax.config.update"
    assert caller_api("jaxtyping_user", "setup") == "jax.config.update"  # a name starting "jax" only


def test_settings_made_through_os_environ_before_import_are_seen():
    values = {CACHE_DIR: "/from/env", ENABLE: True, MIN_COMPILE_TIME: 1.0, MIN_ENTRY_SIZE: 0}
    ((option, applied, event),) = environment_changes(values, [CACHE_DIR], CELL, "script")
    assert (option, applied, event["api"]) == (CACHE_DIR, CELL, "os.environ")
    # What the process started with (the harness's variables, or JAX's defaults) is not the script's.
    assert environment_changes(values, [], CELL, "script") == []


def record(*events):
    return "\n".join(json.dumps(e) for e in events) + "\n"


def run_with(text, index=1):
    return RunRecord(index, index, 0, 1.0, [], script_cache=parse_record(text))


def test_the_record_becomes_a_run_fact_and_survives_json():
    text = record({"kind": "setting", "option": CACHE_DIR, "api": "set_cache_dir", "requested": "/jaxcache",
                   "applied": CELL},
                  {"kind": "final", "cache_path": CELL, "target": CELL}) + '{"kind": "setti'  # killed mid-line
    run = run_with(text)
    assert run.script_cache.settings == (CacheSetting(CACHE_DIR, "set_cache_dir", "/jaxcache", CELL),)
    assert convert(json.loads(json.dumps(plain(run))), RunRecord) == run
    # A run recorded before this field existed still loads.
    old = {k: v for k, v in plain(run).items() if k != "script_cache"}
    assert convert(old, RunRecord).script_cache is None


def test_a_redirected_folder_is_a_note_not_a_reason():
    facts = cell_facts([run_with(record({"kind": "setting", "option": CACHE_DIR, "api": "set_cache_dir",
                                         "requested": "/jaxcache", "applied": CELL}))], ThresholdMode.SCRIPT)
    assert facts.notes[0] == ("the script set its cache folder to /jaxcache (set_cache_dir); the harness redirected "
                              "it to the cell's folder, so nothing was written to yours")  # not "nothing written"
    assert sets_own_folder(parse_record(record({"kind": "setting", "option": CACHE_DIR, "api": "set_cache_dir",
                                                "requested": "/j", "applied": CELL}))) == "set_cache_dir"
    assert sets_own_folder(parse_record(record({"kind": "final", "target": CELL}))) is None
    assert convert(json.loads(json.dumps(plain(facts))), ScriptCacheFacts) == facts


def test_kept_thresholds_are_noted_and_zeroed_ones_said_replaced():
    text = record({"kind": "setting", "option": MIN_COMPILE_TIME, "api": "jax.config.update", "requested": 60.0,
                   "applied": 60.0})
    facts = cell_facts([run_with(text)], ThresholdMode.SCRIPT)
    assert "never measured" in facts.notes[0]
    zeroed = cell_facts([run_with(record({"kind": "setting", "option": MIN_COMPILE_TIME, "api": "jax.config.update",
                                          "requested": 60.0, "applied": 0.0}))], ThresholdMode.HARNESS)
    assert "replaced by the harness's zeros" in zeroed.notes[0]


def test_a_folder_set_after_jax_initialised_its_cache_without_one_is_recorded():
    setting = {"kind": "setting", "option": CACHE_DIR, "api": "jax.config.update", "requested": "/mine",
               "applied": CELL, "cache_then": {"initialized": True, "path": None}}
    facts = cell_facts([run_with(record(setting))], ThresholdMode.HARNESS)
    assert facts.uninitialised == "jax.config.update('jax_compilation_cache_dir', '/mine')"
    assert convert(json.loads(json.dumps(plain(facts))), ScriptCacheFacts) == facts
    in_time = dict(setting, cache_then=None)  # JAX's cache module not even imported yet
    assert cell_facts([run_with(record(in_time))], ThresholdMode.HARNESS).uninitialised is None


def test_runs_without_a_record_have_no_facts():
    assert cell_facts([RunRecord(1, 1, 0, 1.0, []), run_with("")], ThresholdMode.SCRIPT) is None


def test_sitecustomize_chains_to_the_one_it_shadows(tmp_path):
    """The user's own sitecustomize still runs, and without the record variable nothing is hooked."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import builtins\nbuiltins.USER_SITE_RAN = True\n")
    code = "import builtins, sys; print(getattr(builtins, 'USER_SITE_RAN', False), " \
           "any(type(f).__name__ == '_AfterImport' for f in sys.meta_path))"
    env = {"PYTHONPATH": f"{startup_dir()}:{user}", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]
    env["HARNESS_CACHE_RECORD"] = str(tmp_path / "record.jsonl")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_the_hook_does_not_change_the_hash_seed(tmp_path):
    env = {"PYTHONPATH": str(startup_dir()), "HARNESS_CACHE_RECORD": str(tmp_path / "r.jsonl"),
           "PYTHONHASHSEED": "7", "PATH": "/usr/bin:/bin"}
    runs = {subprocess.run([sys.executable, "-c", "print(hash('axis'))"], env=env, capture_output=True,
                           text=True, check=True).stdout for _ in range(2)}
    bare = subprocess.run([sys.executable, "-c", "print(hash('axis'))"], env={"PYTHONHASHSEED": "7"},
                          capture_output=True, text=True, check=True).stdout
    assert runs == {bare}


FAKE_CONFIG = '''
class Config:
    def __init__(self):
        self.values = {"jax_compilation_cache_dir": None, "jax_enable_compilation_cache": True,
                       "jax_persistent_cache_min_compile_time_secs": 1.0,
                       "jax_persistent_cache_min_entry_size_bytes": 0}
    def update(self, name, val):
        self.values[name] = val
    def _read(self, name):
        return self.values[name]

config = Config()
import os
config.values["jax_compilation_cache_dir"] = os.environ.get("JAX_COMPILATION_CACHE_DIR")
config.values["jax_persistent_cache_min_compile_time_secs"] = 0.0  # as the harness's variables set it
config.values["jax_persistent_cache_min_entry_size_bytes"] = -1
'''
FAKE_CACHE = '''
from jax._src import config
def set_cache_dir(path):
    config.config.update("jax_compilation_cache_dir", path)
'''


def test_the_hook_wraps_configs_update_once_jax_is_imported(tmp_path, write):
    """A stand-in `jax` with the same shape as the real one (Config.update, set_cache_dir calling it):
    the wiring is tested here; tests/integration/test_script_cache_integration.py runs real releases."""
    write("fake/jax/__init__.py", "from jax._src.config import config\n")
    write("fake/jax/_src/__init__.py", "")
    write("fake/jax/_src/config.py", FAKE_CONFIG)
    write("fake/jax/_src/compilation_cache.py", FAKE_CACHE)
    script = write("script.py", "import jax\nfrom jax._src import compilation_cache as cc\n"
                                "cc.set_cache_dir('/jaxcache')\n"
                                "jax.config.update('jax_persistent_cache_min_compile_time_secs', 5.0)\n"
                                "print(jax.config._read('jax_compilation_cache_dir'))\n")
    env = {"PYTHONPATH": f"{startup_dir()}:{tmp_path / 'fake'}", "HARNESS_CACHE_RECORD": str(tmp_path / "r.jsonl"),
           "JAX_COMPILATION_CACHE_DIR": CELL, "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == CELL
    cache = parse_record((tmp_path / "r.jsonl").read_text())
    assert [(s.option, s.api, s.requested, s.applied) for s in cache.settings] == [
        (CACHE_DIR, "set_cache_dir", "/jaxcache", CELL),
        (MIN_COMPILE_TIME, "jax.config.update", 5.0, 5.0)]
    assert cache.final["jax_compilation_cache_dir"] == CELL and cache.final["target"] == CELL


def test_a_threshold_the_script_sets_in_os_environ_is_its_own_even_at_the_harnesss_value(tmp_path, write):
    """Under harness thresholds a script's own os.environ["...MIN_COMPILE_TIME_SECS"] = "0" equals what the
    harness gave: still the script's setting (else the cell says it runs under JAX's 1 s default)."""
    write("fake/jax/__init__.py", "from jax._src.config import config\n")
    write("fake/jax/_src/__init__.py", "")
    write("fake/jax/_src/config.py", FAKE_CONFIG)
    script = write("script.py", "import os\n"
                                "os.environ['JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS'] = '0'\n"
                                "import jax\n")
    env = {"PYTHONPATH": f"{startup_dir()}:{tmp_path / 'fake'}", "HARNESS_CACHE_RECORD": str(tmp_path / "r.jsonl"),
           "JAX_COMPILATION_CACHE_DIR": CELL, "HARNESS_CACHE_THRESHOLDS": "harness", "PATH": "/usr/bin:/bin",
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}
    subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
    cache = parse_record((tmp_path / "r.jsonl").read_text())
    assert [(s.option, s.api, s.requested) for s in cache.settings] == [(MIN_COMPILE_TIME, "os.environ", 0.0)]


@pytest.mark.parametrize("folder_mode", ["environment", "hook"])
def test_a_launchers_os_environ_folder_for_its_worker_is_redirected_not_taken_as_the_cells(tmp_path, write,
                                                                                             folder_mode):
    """A script that never imports jax sets JAX_COMPILATION_CACHE_DIR for the worker it starts: the worker's
    folder is the cell's (before, in either mode, the worker's hook took the script's folder as the cell's,
    so entries went to the user's own folder and the cell's stayed empty)."""
    write("fake/jax/__init__.py", "from jax._src.config import config\n")
    write("fake/jax/_src/__init__.py", "")
    write("fake/jax/_src/config.py", FAKE_CONFIG)
    write("worker.py", "import jax\nprint(jax.config._read('jax_compilation_cache_dir'))\n")
    script = write("launcher.py", "import os, subprocess, sys\n"
                                  "os.environ['JAX_COMPILATION_CACHE_DIR'] = '/mine'\n"
                                  "os.environ['JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS'] = '0'\n"
                                  "sys.stdout.flush()\n"
                                  "subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), 'worker.py')])\n")
    env = {"PYTHONPATH": f"{startup_dir()}:{tmp_path / 'fake'}", "HARNESS_CACHE_RECORD": str(tmp_path / "r.jsonl"),
           "JAX_COMPILATION_CACHE_DIR": CELL, "HARNESS_CACHE_FOLDER": folder_mode, "PATH": "/usr/bin:/bin",
           "HARNESS_CACHE_THRESHOLDS": "harness", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [CELL]
    cache = parse_record((tmp_path / "r.jsonl").read_text())
    # the launcher's zero threshold for its worker is its own, though it equals the harness's
    assert [(s.option, s.api, s.requested, s.applied) for s in cache.settings] == [
        (CACHE_DIR, "os.environ", "/mine", CELL), (MIN_COMPILE_TIME, "os.environ", 0.0, 0.0)]
    assert cache.final["target"] == CELL


def test_a_folder_put_in_os_environ_after_import_jax_is_recorded_as_too_late(tmp_path, write):
    """JAX reads JAX_COMPILATION_CACHE_DIR when it defines its options: a script that sets it after `import jax`
    has no cache (before, the hook saw nothing, the run got the folder from the environment and read clean)."""
    write("fake/jax/__init__.py", "from jax._src.config import config\n")
    write("fake/jax/_src/__init__.py", "")
    write("fake/jax/_src/config.py", FAKE_CONFIG)
    script = write("script.py", "import os, jax\nos.environ['JAX_COMPILATION_CACHE_DIR'] = '/mine'\n")
    env = {"PYTHONPATH": f"{startup_dir()}:{tmp_path / 'fake'}", "HARNESS_CACHE_RECORD": str(tmp_path / "r.jsonl"),
           "JAX_COMPILATION_CACHE_DIR": CELL, "HARNESS_CACHE_FOLDER": "hook", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
    cache = parse_record((tmp_path / "r.jsonl").read_text())
    assert [(s.option, s.api, s.requested) for s in cache.settings] == [(CACHE_DIR, LATE_ENVIRON, "/mine")]
    assert sets_own_folder(cache) == LATE_ENVIRON  # measured as it runs: no folder from the environment


def test_hook_only_the_folder_leaves_the_environment_and_comes_back_when_the_script_sets_it(tmp_path, write):
    """HARNESS_CACHE_FOLDER=hook: neither the script nor JAX sees the cell's folder until the script sets
    its own, which becomes the cell's; its setting records JAX's cache at that moment."""
    write("fake/jax/__init__.py", "from jax._src.config import config\n")
    write("fake/jax/_src/__init__.py", "")
    write("fake/jax/_src/config.py", FAKE_CONFIG)
    write("fake/jax/_src/compilation_cache.py", FAKE_CACHE + "_cache_initialized = True\n_cache = None\n")
    script = write("script.py", "import os, sys, subprocess, jax\nfrom jax._src import compilation_cache as cc\n"
                                "print(os.environ.get('JAX_COMPILATION_CACHE_DIR'))\n"
                                "cc.set_cache_dir('/jaxcache')\n"
                                "print(jax.config._read('jax_compilation_cache_dir'))\n"
                                "if len(sys.argv) == 1:\n"  # a process it starts is redirected too
                                "    sys.stdout.flush(); subprocess.run([sys.executable, __file__, 'child'])\n")
    env = {"PYTHONPATH": f"{startup_dir()}:{tmp_path / 'fake'}", "HARNESS_CACHE_RECORD": str(tmp_path / "r.jsonl"),
           "JAX_COMPILATION_CACHE_DIR": CELL, "HARNESS_CACHE_FOLDER": "hook", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["None", CELL, "None", CELL]
    settings = parse_record((tmp_path / "r.jsonl").read_text()).settings
    assert [(s.requested, s.applied) for s in settings] == [("/jaxcache", CELL)] * 2
    assert settings[0].cache_then == {"initialized": True, "path": None}
