"""The in-process recorder (issue 51): the start-up hook records JAX's cache messages inside the run, whatever
the program does with stderr or logging, a pytest plugin stamps test ids, and the harness reads the file
(harness/core/recorder.py) together with the log on stderr (issue 61). A fake `jax` here: no release needed."""

import hashlib
import hmac
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core import jaxlog, recorder
from harness.core.kinds import ThresholdMode
from harness.inside.startup import startup_dir
from harness.inside.startup.jax_cache_harness_pytest import outcome_of
from harness.measure.run_logs import missing_module, read_jax_log, read_run
from harness.service.sweeping import with_pytest
from harness.evidence.script_settings import first_use

FIXTURES = Path(__file__).parents[1] / "fixtures" / "jax_logs"
HEX = {c: c * 64 for c in "abcdef"}


def log(message, test=None, pid=1, logger="jax._src.compiler"):
    record = {"kind": "log", "logger": logger, "level": 10, "message": message, "pid": pid}
    return json.dumps({**record, **({"test": test, "phase": "call"} if test else {})})


def key_lines(module, digest, test, types=None):
    """A compile as 0.4.31+ logs it: the types (pxla), a component, the running hash, the miss, the write."""
    lines = [log(f"Compiling {module[4:]} with global shapes and types [ShapedArray({types})]. Argument "
                 "mapping: (UnspecifiedValue,).", test, logger="jax._src.interpreters.pxla")] if types else []
    return lines + [log(f"get_cache_key hash of serialized computation: {HEX['f']}", test),
                    log(f"get_cache_key hash after serializing computation: {digest}", test),
                    log(f"PERSISTENT COMPILATION CACHE MISS for '{module}' with key '{module}-{digest}'", test),
                    log(f"'{module}' took at least 0.00 seconds to compile (0.12s)", test),
                    log(f"Writing {module} to persistent compilation cache with key '{module}-{digest}'", test)]


def test_each_key_carries_its_tests_its_types_and_what_jax_said():
    text = "\n".join([json.dumps({"kind": "start", "argv": ["-m", "pytest"], "pid": 1}),
                      json.dumps({"kind": "collected", "ids": ["t.py::a", "t.py::b", "t.py::c"], "pid": 1}),
                      *key_lines("jit_f", HEX["a"], "t.py::a", "float32[2]"),
                      json.dumps({"kind": "test", "id": "t.py::a", "outcome": "passed"}),
                      *key_lines("jit_f", HEX["b"], "t.py::b", "float32[4]"),
                      log(f"Persistent compilation cache hit for 'jit_f' with key 'jit_f-{HEX['a']}'", "t.py::b"),
                      json.dumps({"kind": "test", "id": "t.py::b", "outcome": "failed"}),
                      json.dumps({"kind": "test", "id": "t.py::c", "outcome": "skipped"}),
                      json.dumps({"kind": "session", "exit_status": 1}),
                      '{"kind": "log", "message": "cut sh',  # a crash mid-write
                      json.dumps({"kind": "a later kind"})])
    recording = recorder.parse(text)
    assert recording.unreadable == 2 and recording.exit_status() == 1
    assert recording.collected() == ["t.py::a", "t.py::b", "t.py::c"]
    assert recording.outcomes() == {"t.py::a": "passed", "t.py::b": "failed", "t.py::c": "skipped"}
    records = recorder.key_records(recorder.run_log(recording))
    assert [(r.key, r.outcome, r.compile_time_s, r.tests, r.arg_types) for r in records] == [
        (f"jit_f-{HEX['a']}", "written", 0.12, ["t.py::a", "t.py::b"], ["float32[2]"]),  # b hit it
        (f"jit_f-{HEX['b']}", "written", 0.12, ["t.py::b"], ["float32[4]"])]


@pytest.mark.parametrize("name", ["seed-0.10.2-hs1-0.err", "init_order-0.5.0-hs1.err", "host_callback-0.4.31-hs1.err",
                                  "job-local-0.8.1-rank0.err"])
def test_the_recorded_messages_read_as_the_same_log_on_stderr(name):
    """One parser for both: JAX's messages recorded one by one say what its log on stderr says (a release that
    prints a line twice on stderr records it once)."""
    lines = (FIXTURES / name).read_text().splitlines()
    messages = [line.split(":", 4)[-1].lstrip() if line.startswith(("DEBUG:", "INFO:", "WARNING:")) else line
                for line in lines if jaxlog.is_cache_line(line) or line[:1].isspace()]
    recording = recorder.parse("\n".join(log(m) for m in messages))
    assert recorder.run_log(recording).by_key().keys() == jaxlog.parse(lines).by_key().keys()
    assert not recorder.run_log(recording).empty


def test_processes_are_read_apart_then_merged():
    """xdist's workers, a launcher's children: one file, several pids, never one interleaved reading."""
    a, b = key_lines("jit_f", HEX["a"], "t.py::a"), key_lines("jit_g", HEX["b"], "t.py::b")
    mixed = [line.replace('"pid": 1', '"pid": 2') if i % 2 else line for i, line in enumerate(a)]
    interleaved = [x for pair in zip(mixed, b) for x in pair] + mixed[len(b):]
    keys = recorder.run_log(recorder.parse("\n".join(interleaved))).by_key()
    assert set(keys) == {f"jit_g-{HEX['b']}"} | ({f"jit_f-{HEX['a']}"} & set(keys))
    two = recorder.run_log(recorder.parse("\n".join(a + [line.replace('"pid": 1', '"pid": 2') for line in b])))
    assert {k.key: k.tests for k in two.keys} == {f"jit_f-{HEX['a']}": ("t.py::a",), f"jit_g-{HEX['b']}": ("t.py::b",)}


def signed(path, lines):
    """`lines` as the hook writes them for the run whose recorder is `path`: each line's MAC chained to its process's
    previous one, with the run's key (an independent statement of the hook's rule)."""
    key, last, out = bytes.fromhex(recorder.recorder_key(path)), {}, []
    for line in lines:
        pid = json.loads(line).get("pid", 0)
        body = json.dumps(json.loads(line), sort_keys=True)
        last[pid] = hmac.new(key, (last.get(pid, "") + body).encode(), hashlib.sha256).hexdigest()[:32]
        out.append(body[:-1] + f', "mac": "{last[pid]}"}}')
    return "\n".join(out) + "\n"


def test_the_harness_reads_the_recorder_and_stderr_together(tmp_path):
    """Issue 61 item 2: no single account decides. Where only one names keys it is read alone; where both do,
    every key either shows computed is read and their disagreement is said."""
    stderr = tmp_path / "run.log"
    file = recorder.recorder_path(stderr)
    assert file.name == "run.recorder.jsonl"
    file.write_text(signed(file, key_lines("jit_only_recorded", HEX["c"], None)))
    stderr.write_text("")
    keys, note = read_jax_log(stderr, "0.10.2", True, file)  # no stderr at all (pytest keeps it): the recorder's
    assert [k.module for k in keys.keys] == ["jit_only_recorded"] and not note
    stderr.write_text((FIXTURES / "seed-0.10.2-hs1-0.err").read_text())
    keys, _, _, _, sources = read_run(stderr, "0.10.2", True, file)
    assert set(keys.modules()) == {"jit_only_recorded", *SEED_MODULES}
    assert len(sources) == 1 and "JAX's log on stderr names 4 keys the recorder does not" in sources[0]
    file.write_text(signed(file, [json.dumps({"kind": "start", "pid": 3})]))  # the program compiled nothing it saw
    keys, _ = read_jax_log(stderr, "0.10.2", True, file)
    assert keys is not None and set(keys.modules()) == set(SEED_MODULES)
    stderr.write_text("")
    file.unlink()
    keys, note = read_jax_log(stderr, "0.10.2", True, file)
    assert keys is None and "compiled nothing" in note


SEED_MODULES = ("jit__multi_slice", "jit_f", "jit_iota", "jit_reshape")


def test_lines_appended_to_the_recorder_are_not_read_and_said(tmp_path):
    """Issue 61 item 2: two lines appended (a fake miss and write) do not check out: not read, and said; JAX's
    log on stderr (a hit) and the recorder's own lines decide."""
    stderr = tmp_path / "run.log"
    file = recorder.recorder_path(stderr)
    hit = log(f"Persistent compilation cache hit for 'jit_f' with key 'jit_f-{HEX['a']}'")
    file.write_text(signed(file, [hit]) + "\n".join(key_lines("jit_f", HEX["b"], None)[2:]) + "\n")
    stderr.write_text(f"DEBUG:jax._src.compiler: Persistent compilation cache hit for 'jit_f' with key 'jit_f-{HEX['a']}'\n")
    keys, _, _, _, sources = read_run(stderr, "0.10.2", True, file)
    assert [(k.key, k.outcome) for k in keys.keys] == [(f"jit_f-{HEX['a']}", jaxlog.Outcome.HIT)]
    assert sources == ["3 of its recorder's lines were not the hook's as it wrote them (appended or changed by the "
                       "program, or after a line it removed): not read"]


def test_a_recorder_rewritten_as_hits_does_not_hide_the_misses_stderr_shows(tmp_path):
    """Issue 61 item 2: a program that deletes its new entries and rewrites its recorder as hits on run 1's keys:
    the rewritten lines do not check out, and JAX's log on stderr still shows the new keys computed (a miss)."""
    stderr = tmp_path / "run.log"
    file = recorder.recorder_path(stderr)
    file.write_text(log(f"Persistent compilation cache hit for 'jit_f' with key 'jit_f-{HEX['a']}'") + "\n")
    stderr.write_text("\n".join(json.loads(line)["message"] for line in key_lines("jit_f", HEX["b"], None)) + "\n")
    keys, _, _, _, sources = read_run(stderr, "0.10.2", True, file)
    assert [(k.key, k.outcome) for k in keys.keys] == [(f"jit_f-{HEX['b']}", jaxlog.Outcome.WRITTEN)]
    assert "1 of its recorder's lines" in sources[0]
    # signed but saying a hit where stderr shows the miss: the miss is read, the disagreement said
    file.write_text(signed(file, [log(f"Persistent compilation cache hit for 'jit_f' with key 'jit_f-{HEX['b']}'")]))
    keys, _, _, _, sources = read_run(stderr, "0.10.2", True, file)
    assert [(k.key, k.outcome) for k in keys.keys] == [(f"jit_f-{HEX['b']}", jaxlog.Outcome.WRITTEN)]
    assert sources == [f"its recorder and JAX's log on stderr disagree: they differ on 1 key: jit_f-{HEX['b']} "
                       "(a hit in the recorder, a miss on stderr)"]


def test_a_link_in_the_recorders_place_is_never_read(tmp_path):
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("\n".join(key_lines("jit_f", HEX["a"], None)))
    link = tmp_path / "run.recorder.jsonl"
    link.symlink_to(target)
    read = recorder.read(link)
    assert read is not None and read.empty and read.cut() == "the recorder file is a symbolic link: not read"
    assert recorder.read(tmp_path / "absent.jsonl") is None


def test_arg_types_as_each_release_words_them():
    assert recorder.arg_types("Compiling f with global shapes and types [ShapedArray(float32[8,1])]. "
                              "Argument mapping: (UnspecifiedValue,).") == ["float32[8,1]"]
    assert recorder.arg_types("Compiling jit(<lambda>) with global shapes and types (ShapedArray(float32[2]), "
                              "ShapedArray(int32[], weak_type=True)). Argument mapping: (U, U).") == ["float32[2]",
                                                                                                   "int32[]"]
    assert recorder.arg_types("Compiling iota with global shapes and types []. Argument mapping: ().") == []
    assert recorder.arg_types("get_compile_options: num_replicas=1") is None


@pytest.mark.parametrize("reports, outcome", [
    ([("setup", "passed", False), ("call", "passed", False), ("teardown", "passed", False)], "passed"),
    ([("setup", "passed", False), ("call", "failed", False), ("teardown", "passed", False)], "failed"),
    ([("setup", "failed", False), ("teardown", "passed", False)], "error"),
    ([("setup", "skipped", False), ("teardown", "passed", False)], "skipped"),
    ([("setup", "passed", False), ("call", "skipped", True), ("teardown", "passed", False)], "xfailed"),
    ([("setup", "passed", False), ("call", "passed", False), ("teardown", "failed", False)], "error"),
])
def test_a_tests_outcome_from_its_phases(reports, outcome):
    known = None
    for when, result, xfail in reports:
        known = outcome_of(when, result, known, xfail)
    assert known == outcome


FAKE_CONFIG = """\
class Config:
    def __init__(self):
        self.values = {"jax_compilation_cache_dir": None}
    def update(self, name, val):
        self.values[name] = val
    def _read(self, name):
        return self.values[name]
config = Config()
"""
FAKE_COMPILER = """\
import logging
from jax._src import compilation_cache
logger = logging.getLogger(__name__)
def get_compile_options():
    logger.debug("get_compile_options: num_replicas=1 num_partitions=1 device_assignment=[[CpuDevice(id=0)]]")
def compile(name, digest):
    get_compile_options()
    compilation_cache._initialize_cache()
    if logger.isEnabledFor(logging.DEBUG):  # as cache_key.py guards its component hashes
        logger.debug("get_cache_key hash after serializing computation: %s", digest)
    logger.debug("PERSISTENT COMPILATION CACHE MISS for '%s' with key '%s-%s'", name, name, digest)
    import warnings
    warnings.warn("Error reading persistent compilation cache entry for 'jit_g': error: bad")
"""
FAKE_CACHE = """\
from jax._src.config import config
_cache_initialized = False
def _initialize_cache():
    global _cache_initialized
    _cache_initialized = bool(config._read("jax_compilation_cache_dir"))
"""


def fake_jax(write):
    write("fake/jax/__init__.py", "from jax._src.config import config\nfrom jax._src import compiler\n")
    write("fake/jax/_src/__init__.py", "")
    write("fake/jax/_src/config.py", FAKE_CONFIG)
    write("fake/jax/_src/compilation_cache.py", FAKE_CACHE)
    write("fake/jax/_src/compiler.py", FAKE_COMPILER)


def hook_env(tmp_path, **more):
    return {"PYTHONPATH": f"{startup_dir()}:{tmp_path / 'fake'}", "PATH": os.environ["PATH"],
            "HARNESS_RECORDER": str(tmp_path / "run.recorder.jsonl"), **more}


def test_a_script_that_closes_stderr_and_silences_jax_is_still_recorded(tmp_path, write):
    fake_jax(write)
    script = write("quiet.py", "import logging, os\nos.close(2)\nlogging.getLogger('jax').setLevel(logging.CRITICAL)\n"
                   "logging.basicConfig(force=True, level=logging.ERROR)\nimport jax\n"
                   f"jax.compiler.compile('jit_f', '{HEX['a']}')\n")
    # Python exits 120 when it cannot flush the closed stderr (the warning went there): the program's own doing
    subprocess.run([sys.executable, str(script)], env=hook_env(tmp_path), capture_output=True, text=True, check=False)
    recording = recorder.read(tmp_path / "run.recorder.jsonl")
    (key,) = recorder.run_log(recording).keys
    assert key.key == f"jit_f-{HEX['a']}" and key.outcome == jaxlog.Outcome.MISS
    assert any("Error reading persistent compilation cache entry" in m.message for m in recording.messages)


def test_the_programs_own_log_still_shows_jaxs_file_and_line(tmp_path, write):
    fake_jax(write)
    script = write("loud.py", "import logging\nlogging.basicConfig(format='%(filename)s:%(funcName)s: %(message)s', "
                   "level=logging.DEBUG)\nimport jax\n"
                   f"jax.compiler.compile('jit_f', '{HEX['a']}')\n")
    done = subprocess.run([sys.executable, str(script)], env=hook_env(tmp_path), capture_output=True, text=True,
                          check=True)
    assert "compiler.py:get_compile_options: get_compile_options: num_replicas=1" in done.stderr
    assert "compiler.py:compile: PERSISTENT COMPILATION CACHE MISS for 'jit_f'" in done.stderr


def test_first_use_gives_the_cells_folder_at_the_first_compile_and_records_when(tmp_path, write):
    fake_jax(write)
    env = hook_env(tmp_path, HARNESS_CACHE_RECORD=str(tmp_path / "r.jsonl"), HARNESS_CACHE_FOLDER="hook",
                   HARNESS_CACHE_FALLBACK="first-use", JAX_COMPILATION_CACHE_DIR=str(tmp_path / "cell"))
    none = write("none.py", f"import jax\njax.compiler.compile('jit_f', '{HEX['a']}')\n"
                 "print(jax.config._read('jax_compilation_cache_dir'))\n")
    out = subprocess.run([sys.executable, str(none)], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(tmp_path / "cell")
    assert first_use(tmp_path / "r.jsonl") == (True, False)
    assert recorder.read(tmp_path / "run.recorder.jsonl").fallback()

    (tmp_path / "r.jsonl").unlink()
    late = write("late.py", f"import jax\njax.compiler.compile('jit_f', '{HEX['a']}')\n"
                 "jax.config.update('jax_compilation_cache_dir', '/mine')\n")
    subprocess.run([sys.executable, str(late)], env=env, capture_output=True, text=True, check=True)
    assert first_use(tmp_path / "r.jsonl") == (True, True)  # set after compiling: run 1 is run again as written

    (tmp_path / "r.jsonl").unlink()
    early = write("early.py", "import jax\njax.config.update('jax_compilation_cache_dir', '/mine')\n"
                  f"jax.compiler.compile('jit_f', '{HEX['a']}')\n")
    subprocess.run([sys.executable, str(early)], env=env, capture_output=True, text=True, check=True)
    assert first_use(tmp_path / "r.jsonl") == (False, False)


def test_the_pytest_plugin_stamps_test_ids_with_stderr_captured(tmp_path, write):
    fake_jax(write)
    write("suite/test_it.py", "import jax, pytest\n"
          f"def test_a():\n    jax.compiler.compile('jit_f', '{HEX['a']}')\n"
          f"def test_b():\n    jax.compiler.compile('jit_g', '{HEX['b']}')\n    assert False\n"
          "def test_c():\n    pytest.skip('no')\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py"],
                          cwd=tmp_path / "suite", env=hook_env(tmp_path), capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    recording = recorder.read(tmp_path / "run.recorder.jsonl")
    assert recording.collected() == ["test_it.py::test_a", "test_it.py::test_b", "test_it.py::test_c"]
    assert recording.outcomes() == {"test_it.py::test_a": "passed", "test_it.py::test_b": "failed",
                                    "test_it.py::test_c": "skipped"}
    assert recording.exit_status() == 1
    assert {k.module: k.tests for k in recorder.run_log(recording).keys} == {"jit_f": ("test_it.py::test_a",),
                                                                            "jit_g": ("test_it.py::test_b",)}


def test_a_suite_outside_the_working_folder_keeps_its_modules_path_in_each_id(tmp_path, write):
    """A library's tests run from its installed package (`pytest --pyargs lib.x_test`, as optax's wheel ships
    them): pytest's own node id for a file outside the rootdir starts at `::`, with no file at all; each id
    names the module's file from its package (`lib/x_test.py::TestX::test_a`), as `--pyargs` finds it again."""
    fake_jax(write)
    write("site/lib/__init__.py", "")  # and none in lib/_src, as optax's wheel: pytest imports it as `y_test`
    write("site/lib/_src/y_test.py", "def test_b():\n    pass\n")
    write("site/lib/x_test.py", "import jax\nclass TestX:\n"
          f"    def test_a(self):\n        jax.compiler.compile('jit_f', '{HEX['a']}')\n")
    (tmp_path / "mine").mkdir()
    env = hook_env(tmp_path)
    env["PYTHONPATH"] += f":{tmp_path / 'site'}"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", "lib.x_test",
                           "lib._src.y_test"], cwd=tmp_path / "mine", env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    recording = recorder.read(tmp_path / "run.recorder.jsonl")
    assert recording.collected() == ["lib/x_test.py::TestX::test_a", "lib/_src/y_test.py::test_b"]
    assert recording.outcomes() == {"lib/x_test.py::TestX::test_a": "passed", "lib/_src/y_test.py::test_b": "passed"}
    assert [k.tests for k in recorder.run_log(recording).keys] == [("lib/x_test.py::TestX::test_a",)]
    # a rootdir in the package's own folder (pytest's id `x_test.py::...`): the same id
    (tmp_path / "run.recorder.jsonl").unlink()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path / "site"
                    / "lib"), "--pyargs", "lib.x_test"], cwd=tmp_path / "mine", env=env, capture_output=True, check=True)
    assert recorder.read(tmp_path / "run.recorder.jsonl").collected() == ["lib/x_test.py::TestX::test_a"]


def test_a_module_python_cannot_find_is_said_in_one_line(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("/envs/jax-0.4.31/bin/python: No module named pytest\n")
    assert "no module pytest in this release's environment" in missing_module("pytest", log)
    log.write_text("/p/python: Error while finding module specification for 'pkg.train' "
                   "(ModuleNotFoundError: No module named 'pkg')\n")
    assert missing_module("pkg.train", log).startswith("no module pkg.train")
    log.write_text("Traceback ...\nModuleNotFoundError: No module named 'optax'\n")  # the program's own import
    assert missing_module("pytest", log) is None


def test_pytest_is_added_to_the_requirements_unless_named():
    assert with_pytest(()) == ("pytest",)
    assert with_pytest(("flax",)) == ("flax", "pytest")
    assert with_pytest(("pytest==8.3.5",)) == ("pytest==8.3.5",)
    assert with_pytest(("pytest[testing]>=8",)) == ("pytest[testing]>=8",)


def test_the_recorder_file_stops_at_its_cap_and_says_so(tmp_path):
    """A suite that compiles millions of keys: the file grew without bound (the harness then read none of it, past
    recorder.MAX_BYTES). It stops at the hook's cap with one line that says so, and what it holds is read."""
    from harness.inside.startup.jax_cache_harness_recorder import RECORDER_MAX_BYTES, Recorder
    assert recorder.MAX_BYTES > RECORDER_MAX_BYTES  # what the hook writes is always read
    path = tmp_path / "run.recorder.jsonl"
    hook = Recorder(str(path), max_bytes=4000)
    for n in range(200):
        hook.message("jax._src.compiler", 10, "PERSISTENT COMPILATION CACHE MISS for 'jit_f' with key '%s'",
                     (f"jit_f-{n:064x}",))
    assert 4000 - 300 < path.stat().st_size < 4000 + 300
    recording = recorder.read(path)
    assert recording is not None and recording.cut().startswith("the recorder's file reached its cap (4000 bytes)")
    assert 10 < len(recorder.run_log(recording).keys) < 200


def test_a_pytest_run_writes_nothing_into_the_installed_package(tmp_path, write, monkeypatch):
    """Python writes bytecode beside what it imports (the hook's, pytest's rewritten plugin): the runs import the
    start-up folder from a copy outside the package (beside the environments), so a wheel's files stay as
    installed, and each copy is made once per content."""
    from harness.inputs.process_variables import hook_env as harness_hook_env
    from harness.inside.startup import SOURCE_DIR

    monkeypatch.setenv("HARNESS_ENV_DIR", str(tmp_path / "envs"))
    startup_dir.cache_clear()
    try:
        given = harness_hook_env(tmp_path / "r.jsonl", ThresholdMode.HARNESS, recorder=tmp_path / "run.recorder.jsonl")
        (path,) = given["PYTHONPATH"].split(os.pathsep)
        assert Path(path).parent == tmp_path / "envs" / ".startup" and not Path(path).is_relative_to(SOURCE_DIR)
        assert sorted(p.name for p in Path(path).iterdir()) == sorted(p.name for p in SOURCE_DIR.glob("*.py"))
        before = {p: p.stat().st_mtime_ns for p in SOURCE_DIR.rglob("*")}
        fake_jax(write)
        write("suite/test_it.py", f"import jax\ndef test_a():\n    jax.compiler.compile('jit_f', '{HEX['a']}')\n")
        env = {**given, "PYTHONPATH": f"{path}:{tmp_path / 'fake'}", "PATH": os.environ["PATH"]}
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py"],
                              cwd=tmp_path / "suite", env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert {p: p.stat().st_mtime_ns for p in SOURCE_DIR.rglob("*")} == before
        written = [p.name for p in (Path(path) / "__pycache__").iterdir()]
        assert any(n.startswith("jax_cache_harness_pytest.") and "-pytest-" in n for n in written), written
        assert any(n.startswith("sitecustomize.") for n in written), written
        startup_dir.cache_clear()
        assert startup_dir() == Path(path)  # the same files: the same copy, made once
    finally:
        startup_dir.cache_clear()


def compile_lines(module, digest, thread):
    """One below-threshold compile as 0.4.31+ logs it on `thread`: a component, the key, its miss, its refusal."""
    def on(message):
        return json.dumps({**json.loads(log(message)), **({"thread": thread} if thread is not None else {})})
    return [on(f"get_cache_key hash of serialized computation: {digest}"),
            on(f"get_cache_key hash after serializing computation: {digest}"),
            on(f"PERSISTENT COMPILATION CACHE MISS for '{module}' with key '{module}-{digest}'"),
            on(f"Not writing persistent cache entry for '{module}' because it took < 1.00 seconds to compile (0.06s)")]


@pytest.mark.parametrize("threads", [(7, 8), (None, None)], ids=["thread ids", "a file from before them"])
def test_concurrent_compilations_are_read_per_compilation(threads):
    """Issue 61 item 1: two threads compile at once and their messages interleave; a message that names only its
    module (the refusal) is about the key its own miss named, never the running hash another thread logged
    last (which read as a key never computed: `jit_a-<jit_b's digest>`). With thread ids each key has its own
    components too."""
    a, b = compile_lines("jit_a", HEX["a"], threads[0]), compile_lines("jit_b", HEX["b"], threads[1])
    order = [a[0], a[1], a[2], b[0], b[1], a[3], b[2], b[3]]
    keys = recorder.run_log(recorder.parse("\n".join(order))).by_key()
    assert set(keys) == {f"jit_a-{HEX['a']}", f"jit_b-{HEX['b']}"}
    assert all(k.outcome == jaxlog.Outcome.NOT_WRITTEN for k in keys.values())
    if threads[0] is not None:
        assert keys[f"jit_a-{HEX['a']}"].components == {"computation": HEX["a"]}
        assert keys[f"jit_b-{HEX['b']}"].components == {"computation": HEX["b"]}


def test_twelve_threads_compiling_at_once_on_0_4_31_read_as_the_cache_folder():
    """Issue 61 item 1, real files: 12 threads compiled 12 functions at once (a concurrent jit warm-up). The
    recorder (thread ids) names the folder's 14 keys, each with all its own components (12 functions: 12
    computations); JAX's log on stderr of such a run (below JAX's threshold: every key refused, the refusal
    naming only its module, some lines printed twice) names its 14 keys and none more."""
    listing = (FIXTURES / "threads12-0.4.31-hs1.listing").read_text().split()
    log = recorder.run_log(recorder.read(FIXTURES / "threads12-0.4.31-hs1.recorder.jsonl"))
    assert sorted(log.by_key()) == sorted(listing)
    assert all(len(k.components) == 7 for k in log.keys)
    functions = [k for k in log.keys if k.module.startswith("jit_fn")]
    assert len(functions) == 12 and len({k.components["computation"] for k in functions}) == 12
    stderr = jaxlog.parse((FIXTURES / "threads12-0.4.31-script-hs1.err").read_text())
    assert len(stderr.keys) == 14 and len({k.module for k in stderr.keys}) == 14
    assert all(k.outcome == jaxlog.Outcome.NOT_WRITTEN for k in stderr.keys)


def test_a_test_pytest_did_not_collect_is_never_charged_nor_a_junit_case(tmp_path):
    """Issue 61 item 4: a conftest set the recorder's test id to a test pytest never collected, and a line names its
    outcome: the stranger is no test of the run (said), and the miss is charged to the test running then."""
    stderr, file = tmp_path / "run.log", recorder.recorder_path(tmp_path / "run.log")
    stderr.write_text("")
    file.write_text(signed(file, [json.dumps({"kind": "collected", "ids": ["t.py::a"], "pid": 1}),
                                  *key_lines("jit_f", HEX["a"], "t.py::ghost"),
                                  json.dumps({"kind": "test", "id": "t.py::ghost", "outcome": "failed", "pid": 1}),
                                  json.dumps({"kind": "test", "id": "t.py::a", "outcome": "passed", "pid": 1})]))
    keys, _, tests, _, sources = read_run(stderr, "0.10.2", True, file, pytest=True)
    assert tests == {"t.py::a": "passed"} and [k.tests for k in keys.keys] == [("t.py::a",)]  # the one running
    assert sources == ["its recorder names 1 test pytest did not collect (t.py::ghost): ignored"]


def test_a_plain_scripts_pytest_records_are_ignored(tmp_path):
    """Issue 61 item 4: a script that is not pytest writes pytest records (through the hook's own recorder, so they
    check out): it gains no test and no JUnit case, its keys no test, and the row says so."""
    stderr, file = tmp_path / "run.log", recorder.recorder_path(tmp_path / "run.log")
    stderr.write_text("")
    file.write_text(signed(file, [json.dumps({"kind": "collected", "ids": ["t.py::mine"], "pid": 1}),
                                  *key_lines("jit_f", HEX["a"], "t.py::mine"),
                                  json.dumps({"kind": "test", "id": "t.py::mine", "outcome": "passed", "pid": 1})]))
    keys, _, tests, seconds, sources = read_run(stderr, "0.10.2", True, file)
    assert tests == {} and seconds == {} and [k.tests for k in keys.keys] == [()]
    assert sources == ["its recorder holds pytest records, but the run is not pytest's (a plain script): ignored"]
    _, _, tests, _, sources = read_run(stderr, "0.10.2", True, file, pytest=True)
    assert tests == {"t.py::mine": "passed"} and sources == []


def test_the_hooks_lines_check_out_from_threads_and_forks_and_a_removed_one_is_seen(tmp_path, write):
    """Issue 61 items 1-2, the real hook: messages of two threads and of a forked child, each line signed with the
    run's key, all check out and read as the keys compiled; removing one line leaves every later line of its
    process unread (said), never read as the hook's."""
    fake_jax(write)
    script = write("many.py", "import os, threading\nimport jax\n"
                   f"threads = [threading.Thread(target=jax.compiler.compile, args=('jit_' + c, c * 64)) for c in 'ab']\n"
                   "[t.start() for t in threads]\n[t.join() for t in threads]\n"
                   "pid = os.fork()\nif pid == 0:\n    jax.compiler.compile('jit_c', 'c' * 64)\n    os._exit(0)\n"
                   "os.waitpid(pid, 0)\njax.compiler.compile('jit_d', 'd' * 64)\n")
    file = tmp_path / "run.recorder.jsonl"
    subprocess.run([sys.executable, str(script)], env=hook_env(tmp_path, HARNESS_RECORDER_KEY=recorder.recorder_key(file)),
                   capture_output=True, text=True, check=True)
    recording = recorder.read(file, recorder.recorder_key(file))
    assert recording.altered == 0 and len({m.thread for m in recording.messages}) >= 2
    assert sorted(recorder.run_log(recording).by_key()) == [f"jit_{c}-{c * 64}" for c in "abcd"]
    lines = file.read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if "d" * 64 in line)
    file.write_text("\n".join(lines[:cut] + lines[cut + 1:]) + "\n")
    recording = recorder.read(file, recorder.recorder_key(file))
    assert recording.altered == sum(1 for line in lines[cut + 1:] if f'"pid": {json.loads(lines[cut])["pid"]}' in line)
    assert recording.altered > 0 and f"jit_d-{'d' * 64}" not in recorder.run_log(recording).by_key()
    assert recorder.read(file, "00" * 32).altered == len(lines) - 1  # another run's key: nothing checks out


def test_a_callback_api_call_is_recorded_with_its_stack_and_read_back_as_its_modules_line(tmp_path):
    """The dump of a callback a library puts in while its primitive is lowered (equinox's error_if in lineax) keeps the
    primitive's frames only: the recorder wraps the callback APIs and records each call's own stack, innermost first,
    without JAX's frames; the call belongs to the next module JAX refuses to write for host callbacks."""
    import types
    from harness.evidence.not_cached import recorded_sites
    from harness.inside.startup.jax_cache_harness_recorder import CALLBACK_APIS, Recorder, _callbacks_recorded
    path = tmp_path / "run.recorder.jsonl"
    hook = Recorder(str(path))
    module = types.ModuleType("jax._src.callback")
    calls = []

    def pure_callback(callback, shape, *args, **kwargs):
        """JAX's."""
        calls.append((callback, shape, args, kwargs))
        return "result"
    module.pure_callback = pure_callback
    _callbacks_recorded(hook, CALLBACK_APIS["jax._src.callback"])(module)
    assert module.pure_callback.__doc__ == "JAX's." and module.pure_callback.__wrapped__ is pure_callback

    def error_if():  # the caller's line is the record's innermost frame
        return module.pure_callback(print, (), 1, vectorized=False)
    assert error_if() == "result" and calls == [(print, (), (1,), {"vectorized": False})]
    hook.message("jax._src.compiler", 10, "Not writing persistent cache entry for 'jit_solve' because it uses host "
                 "callbacks (e.g. from jax.debug.print or breakpoint)", ())
    recording = recorder.read(path)
    assert recording is not None
    sites = recorded_sites(m.message for m in recording.messages)
    assert sites["jit_solve"].startswith(f"{__file__}:") and sites["jit_solve"].endswith(" jax.pure_callback"), sites


def test_the_recorder_never_writes_into_a_descriptor_the_program_closed_and_reused(tmp_path):
    """A program that closes its inherited descriptors (`os.closerange(3, 4096)`, as launchers do) and opens its own
    output file got the hook's records in that file (the same number): they go to the recorder's file, by its path."""
    from harness.inside.startup.jax_cache_harness_recorder import Recorder
    path = tmp_path / "run.recorder.jsonl"
    hook = Recorder(str(path))
    hook.message("jax._src.compiler", 10, "before", ())
    os.close(hook.fd)
    mine = tmp_path / "program-output.txt"
    fd = os.open(mine, os.O_WRONLY | os.O_CREAT)
    try:
        assert fd == hook.fd  # the program's file has the recorder's old number
        for n in range(3):
            hook.message("jax._src.compiler", 10, f"after {n}", ())
    finally:
        os.close(fd)
    assert mine.read_text() == ""
    assert [json.loads(line)["message"] for line in path.read_text().splitlines()] == [
        "before", "after 0", "after 1", "after 2"]
    path.unlink()
    path.write_text("")  # another file at its path: not written either
    hook.message("jax._src.compiler", 10, "replaced", ())
    os.close(hook.fd)
    hook.message("jax._src.compiler", 10, "replaced", ())
    assert path.read_text() == ""
