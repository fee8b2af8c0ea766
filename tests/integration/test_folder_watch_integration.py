"""What the cache folder itself saw, on real releases: the harness watches each run's folder as it goes (inotify), so a
program cannot forge a verdict by deleting the entries it wrote or by printing JAX's lines; and every process a
program starts is measured, a child without the hook included, the same under --jobs auto and --jobs 1.
(docs/design/faults.md; stress/stress.py replays each program.)"""

import pytest

from harness.measure.folder_watch import watch_problem
from tests.sweeps import check

pytestmark = pytest.mark.skipif(bool(watch_problem()), reason="the folder watch needs inotify (Linux)")

VERSIONS = ["0.4.31", "0.10.2"]

SET_ORDERED = '''
STAGES = list({"embed", "attend", "mix", "project"})


@jax.jit
def f(x):
    for i, name in enumerate(STAGES):
        x = x * (i + 1) + len(name)
    return x


f(jnp.ones(4)).block_until_ready()
'''
# Set-ordered (a new jit_f key in about every other fresh process), JAX's log kept off stderr. Run 1 notes what it
# left; every later run deletes the entries it wrote, then forges its recorder and stderr (FORGERIES).
DELETES_ITS_ENTRIES = '''import json, logging, os, pathlib, shutil, sys
import jax, jax.numpy as jnp
for name in ("jax", "jax._src.compiler", "jax._src.cache_key", "jax._src.compilation_cache"):
    logging.getLogger(name).setLevel(logging.ERROR)  # JAX's own lines no longer on stderr (the recorder has them)
''' + SET_ORDERED + '''
folder = pathlib.Path(jax.config.jax_compilation_cache_dir)
here = pathlib.Path(__file__).parent
recorder = pathlib.Path(os.environ["HARNESS_RECORDER"])
first = here / "first-entries.json"
if not first.exists():
    first.write_text(json.dumps(sorted(p.name for p in folder.iterdir())))
    sys.stderr.flush()
    os.fsync(os.open(recorder, os.O_RDONLY))
    shutil.copyfile(recorder, here / "first-recorder.jsonl")
    sys.exit(0)
kept = set(json.loads(first.read_text()))
for p in folder.iterdir():
    if p.name not in kept:
        p.unlink()
hits = [(n.rsplit("-", 2)[0], n.rsplit("-", 1)[0]) for n in sorted(kept) if n.endswith("-cache")]
'''
FORGERIES = {
    # its recorder emptied (a prefix of the chain: no MAC fails), JAX's own hit line printed for each entry there
    "stderr-hits": '''recorder.write_text("")
for module, key in hits:
    print(f"DEBUG:jax._src.compiler:Persistent compilation cache hit for '{module}' with key '{key}'", file=sys.stderr)
''',
    # the recorder replaced by a named pipe, the hit lines printed
    "recorder-fifo": '''recorder.unlink()
os.mkfifo(recorder)
for module, key in hits:
    print(f"DEBUG:jax._src.compiler:Persistent compilation cache hit for '{module}' with key '{key}'", file=sys.stderr)
''',
    # stderr silenced from the start (below), the recorder replaced by run 1's own
    "replayed-recorder": '''shutil.copyfile(here / "first-recorder.jsonl", recorder)
''',
    # the recorder rewritten as hits on run 1's entries, each line signed with the run's own key
    "re-signed": '''import hashlib, hmac
key = bytes.fromhex(os.environ["HARNESS_RECORDER_KEY"])
last, lines = "", []
for module, name in hits:
    body = json.dumps({"kind": "log", "logger": "jax._src.compiler", "level": 10, "pid": os.getpid(),
                       "message": f"Persistent compilation cache hit for '{module}' with key '{name}'"}, sort_keys=True)
    last = hmac.new(key, (last + body).encode(), hashlib.sha256).hexdigest()[:32]
    lines.append(body[:-1] + ', "mac": "' + last + '"}')
recorder.write_text("\\n".join(lines) + "\\n")
''',
}
SILENCE = "import os\nos.dup2(os.open(os.devnull, os.O_WRONLY), 2)\n"


def forged(how: str) -> str:
    return (SILENCE if how == "replayed-recorder" else "") + DELETES_ITS_ENTRIES + FORGERIES[how]


# Clean; in every run after the first it says it missed and wrote the key run 1 left for its function.
PRINTS_A_MISS = '''import os, pathlib, sys
import jax, jax.numpy as jnp
jax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()
folder = pathlib.Path(jax.config.jax_compilation_cache_dir)
names = sorted(p.name for p in folder.iterdir() if p.name.startswith("jit__lambda") and not p.name.endswith("-atime"))
key = names[0].removesuffix("-cache")
module = key.rsplit("-", 1)[0]
lines = [f"PERSISTENT COMPILATION CACHE MISS for '{module}' with key '{key}'",
         f"Writing {module} to persistent compilation cache with key '{key}'"]
if pathlib.Path(__file__).with_name("seen-one-run").exists():
    if os.environ.get("THROUGH") == "recorder":
        recorder = sys.modules["jax_cache_harness_recorder"].RECORDER
        for line in lines:
            recorder.message("jax._src.compiler", 10, line, ())
    else:
        for line in lines:
            print("DEBUG:jax._src.compiler:" + line, file=sys.stderr)
pathlib.Path(__file__).with_name("seen-one-run").touch()
'''
# A data-prep child started with a minimal environment (no hook, no recorder, a hash seed of its own) compiles a
# set-ordered function: a new entry in about every other fresh process, no account of the run names it.
MINIMAL_CHILD = '''import os, subprocess, sys
import jax, jax.numpy as jnp
CHILD = """
import jax, jax.numpy as jnp
STAGES = list({"embed", "attend", "mix", "project"})
@jax.jit
def prep(x):
    for i, name in enumerate(STAGES):
        x = x * (i + 1) + len(name)
    return x
prep(jnp.ones(4)).block_until_ready()
"""
env = {name: os.environ[name] for name in ("PATH", "JAX_PLATFORMS", "JAX_COMPILATION_CACHE_DIR",
       "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES") if name in os.environ}
subprocess.run([sys.executable, "-c", CHILD], env=env, check=True)
print(jax.jit(lambda x: x * 2)(jnp.arange(4.0)))
'''
# Deterministic; its child runs with `python -I` (PYTHONPATH, so the hook, and PYTHONHASHSEED ignored).
ISOLATED_CHILD = '''import subprocess, sys
import jax, jax.numpy as jnp
CHILD = "import jax, jax.numpy as jnp; print(jax.jit(lambda x: jnp.sin(x) + 1)(jnp.ones(4)))"
subprocess.run([sys.executable, "-I", "-c", CHILD], check=True)
print(jax.jit(lambda x: x * 2)(jnp.arange(4.0)))
'''
# Closes the descriptors it inherited, as launchers do, then opens its own output file (the lowest free number).
CLOSES_ITS_DESCRIPTORS = '''import os, pathlib
import jax, jax.numpy as jnp
os.closerange(3, 4096)
out = open(pathlib.Path(__file__).with_name("own-output.txt"), "a")
for i in range(4):
    out.write(f"line {i}: {jax.jit(lambda x, i=i: x * i)(jnp.arange(4.0)).sum()}\\n")
out.close()
'''


def _cells(swept):
    return {c["spec"]["jax_version"]: c for c in swept.data["cells"]}


@pytest.mark.parametrize("how", list(FORGERIES))
def test_entries_deleted_with_a_forged_account_are_never_clean(tmp_path, capsys, how):
    """Issue 73, break 3: `clean` on both releases before the watch, whatever the recorder and stderr then said."""
    script = tmp_path / how / "prog.py"
    script.parent.mkdir()
    script.write_text(forged(how))
    swept = check([str(script), "--versions", *VERSIONS, "--runs", "4", "--jobs", "2"], tmp_path / "out", capsys)
    for version, cell in _cells(swept).items():
        assert cell["verdict"] == "reproduced", (version, cell["reason"])


@pytest.mark.parametrize("through", ["stderr", "recorder"])
def test_a_printed_miss_and_write_of_a_key_on_disk_is_not_taken(tmp_path, capsys, through):
    """Issue 73, break 4: the two lines, on stderr or through the hook's own recorder, made a clean program
    `reproduced` ("compiled again"); the folder saw the entry read, never written."""
    script = tmp_path / "prog" / "prog.py"
    script.parent.mkdir()
    script.write_text(PRINTS_A_MISS)
    swept = check([str(script), "--versions", *VERSIONS, "--runs", "3", "--env", f"THROUGH={through}"],
                  tmp_path / "out", capsys)
    for version, cell in _cells(swept).items():
        assert cell["verdict"] == "clean", (version, cell["reason"])
        assert "never saw written" in cell["reason"], (version, cell["reason"])


@pytest.mark.parametrize("jobs", ["auto", "1"])
def test_a_set_ordered_child_with_a_minimal_environment_reproduces_whether_runs_overlap_or_not(tmp_path, capsys,
                                                                                                jobs):
    """Issue 72: `clean` under --jobs auto (each run overlapped another: its child's entry was charged to no run),
    `reproduced` with --jobs 1. Overlapping runs now have folders of their own at the cell folder's path."""
    script = tmp_path / "prog" / "prog.py"
    script.parent.mkdir()
    script.write_text(MINIMAL_CHILD)
    swept = check([str(script), "--versions", *VERSIONS, "--jobs", jobs], tmp_path / "out", capsys)
    for version, cell in _cells(swept).items():
        assert cell["verdict"] == "reproduced", (version, jobs, cell["reason"])
        assert "written by no run" not in cell["reason"]


def test_a_deterministic_isolated_child_is_clean_and_closed_descriptors_are_never_written(tmp_path, capsys):
    """Issue 72: a `python -I` child read `unsupported` on 0.4.31 and `reproduced` on 0.10.2 (run 1 gave it no folder:
    the hook gave the parent its folder; its later runs' environment gave the child one); a program that closes its
    inherited descriptors got the hook's records in its own output file."""
    isolated = tmp_path / "isolated" / "prog.py"
    isolated.parent.mkdir()
    isolated.write_text(ISOLATED_CHILD)
    # Two runs: the break was run 1 (no folder for the child) against run 2 (one), seen at run 2.
    swept = check([str(isolated), "--versions", *VERSIONS, "--runs", "2"], tmp_path / "out", capsys)
    for version, cell in _cells(swept).items():
        assert cell["verdict"] == "clean", (version, cell["reason"])
    closing = tmp_path / "closing" / "prog.py"
    closing.parent.mkdir()
    closing.write_text(CLOSES_ITS_DESCRIPTORS)
    # Two runs and no moved folder: every process that wrote its own file is one of the cell's runs.
    swept = check([str(closing), "--versions", VERSIONS[0], "--runs", "2", "--no-moved-folder"], tmp_path / "out2",
                  capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    lines = (closing.parent / "own-output.txt").read_text().splitlines()
    assert len(lines) == 4 * len(cell["runs"]) and all(line.startswith("line ") for line in lines), lines[:3]
