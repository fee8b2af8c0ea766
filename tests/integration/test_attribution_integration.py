"""JAX's own log read end to end (issue 9), with real JAX releases on 8 CPU-simulated devices: which key
component moved, what was never written, and keys tied to their runs with --jobs."""

import pytest

from tests.sweeps import sweep

pytestmark = pytest.mark.integration


SEED = """\
name: seed-0.4.28
repro: shard_map_grad
jax_versions: ["0.4.28"]
device_count: 8
meshes: [{shape: [8, 1, 1, 1], axis_names: [a, b, c, d]}]
runs: 2
"""


def modules(run):
    """The modules a run's logged keys name (schema 3: a list of key records)."""
    return {k["module"] for k in run["keys"]["keys"]}


def moved(cell):
    """The key components that differ between the two runs the attribution compares."""
    return [name for name, a, b in cell["attribution_detail"]["hashes"] if a != b]


def test_seed_on_0_4_28_the_computation_moved_by_set_order(tmp_path, capsys, write):
    swept = sweep(["run", str(write("seed.yaml", SEED))], tmp_path / "r", capsys)
    data = swept.data
    (cell,) = data["cells"]
    assert cell["verdict"] == "reproduced", cell["reason"]
    assert moved(cell) == ["computation"]
    assert cell["cause"] == "order"
    assert cell["reason"].endswith("(on disk and in JAX's log)")
    for run in cell["runs"]:  # every module's key, its outcome and its components, per run
        assert modules(run) == {"jit_iota", "jit_reshape", "jit_f", "jit__multi_slice"}
        (f,) = [k for k in run["keys"]["keys"] if k["module"] == "jit_f"]
        # A key's components are kept once per cell in results.json (key_components), not under each run's key.
        assert f["outcome"] == "written" and "XLA flags" in cell["key_components"][f["key"]]
    assert "inconsistencies" not in cell
    report = (swept.run_dir / "report.md").read_text()
    assert report.index("| **computation** ") < report.index("```diff")
    assert "Likely cause (`order`)" in report


def test_xla_flags_that_follow_the_hash_seed_are_attributed_with_identical_modules(tmp_path, capsys):
    # Four flag values: eight runs that all agree with the first are rare (about 1 in 16,000 if equally likely).
    swept = sweep(["check", "examples/xla_flags_follow_seed.py", "--versions", "0.4.28",
                   "--runs", "8"], tmp_path / "r", capsys)
    data = swept.data
    (cell,) = data["cells"]
    assert cell["verdict"] == "reproduced", cell["reason"]
    assert moved(cell) == ["XLA flags"]
    report = (swept.run_dir / "report.md").read_text()
    assert "The lowered modules are identical" in report and "through `XLA flags` alone" in report
    assert "`XLA_FLAGS=--xla_force_host_platform_device_count=8`" in report


@pytest.mark.parametrize("version", ["0.4.31", "0.10.2"])
def test_a_host_callback_is_never_clean_before_0_11(tmp_path, capsys, version):
    data = sweep(["check", "examples/host_callback.py", "--versions", version, "--runs", "2"], tmp_path / "r",
                 capsys).data
    (cell,) = data["cells"]
    # never written either way: `not cached`, on 0.4.31 too, where its key also moves (the callback's address is
    # printed into the module), which costs nothing more
    assert cell["verdict"] == "not cached", cell["reason"]
    assert cell["reason"].startswith("jit_f uses a host callback (host_callback.py:19 jax.pure_callback)"), cell
    if version == "0.4.31":
        assert "its key differs between runs too" in cell["reason"], cell["reason"]
    for run in cell["runs"]:
        (f,) = [k for k in run["keys"]["keys"] if k["module"] == "jit_f"]
        assert f["outcome"] == "not written" and f["reason"].startswith("it uses host callbacks")


def test_jobs_2_ties_every_key_to_its_own_run(tmp_path, capsys, write):
    # Four runs, two at a time: each overlaps another (two rounds), what the attribution must see through.
    swept = sweep(["run", str(write("seed.yaml", SEED.replace("runs: 2", "runs: 4"))), "--jobs", "2",
                   "--all-runs", "--seeds", "random"], tmp_path / "r", capsys)
    data = swept.data
    (cell,) = data["cells"]
    listing = {n for n in cell["listing"]}
    seen = set()
    for run in cell["runs"]:
        keys = {k["key"]: k for k in run["keys"]["keys"]}
        written = {k for k, info in keys.items() if info["outcome"] == "written"}
        assert written <= listing  # what its own log wrote is on disk
        seen |= set(keys)
        # A run's log names exactly one jit_f key: its own, whatever appeared on disk while it ran.
        assert len([k for k in run["keys"]["keys"] if k["module"] == "jit_f"]) == 1
    assert {n for n in listing} <= seen  # every entry on disk was computed by a run that says so
    assert "inconsistencies" not in cell
    if cell["verdict"] == "reproduced":
        def f_keys(run):
            return {k["key"] for k in run["keys"]["keys"] if k["module"] == "jit_f"}
        later = [r for r in cell["runs"][1:] if f_keys(r) - f_keys(cell["runs"][0])]
        assert cell["attribution_detail"]["run_b"] == later[0]["index"]
        report = (swept.run_dir / "report.md").read_text()
        assert "overlapped with other runs" not in report  # the log says which key each run computed
        new_key = next(iter(f_keys(later[0])))
        assert f"computed `{new_key[:18]}…`" in report


def test_a_script_that_silences_logging_is_still_attributed_from_the_recorder(tmp_path, capsys, write):
    """logging.disable() keeps JAX's log off stderr; the recorder inside the run (issue 51) still reads it."""
    script = write("quiet.py", "import logging\nlogging.disable(logging.CRITICAL)  # its own choice\n"
                   + open("examples/set_order_script.py").read())
    swept = sweep(["check", str(script), "--versions", "0.4.31", "--runs", "6"], tmp_path / "r", capsys)
    data = swept.data
    (cell,) = data["cells"]
    assert cell["verdict"] == "reproduced", cell["reason"]
    assert all("log_note" not in run and "jit_f" in modules(run) for run in cell["runs"])
    assert "attribution_unavailable" not in cell and moved(cell) == ["computation"]
    for run in cell["runs"]:  # stderr says nothing of the cache: the keys came from the recorder's file
        assert "get_cache_key" not in (swept.run_dir / run["log"]).read_text()


# Issue 27, item 1: what a script does to JAX's log never outvotes the cache folder. A set-order bug (a new
# jit_f key in about every other run) behind logging the script configured itself, or behind 40 MiB of output.
SET_ORDER_F = """
STAGES = list({"embed", "attend", "mix", "project"})  # order changes with PYTHONHASHSEED


@jax.jit
def f(x):
    for i, name in enumerate(STAGES):
        x = x * (i + 1) + len(name)
    return x
"""

SILENCED_AFTER_FIRST_COMPILE = """\
import logging
import jax
import jax.numpy as jnp

jax.jit(lambda x: x + 1)(jnp.float32(1)).block_until_ready()  # JAX logs this one
for name in ("jax", "jax._src.compiler", "jax._src.cache_key", "jax._src.compilation_cache"):
    logging.getLogger(name).setLevel(logging.ERROR)  # as training scripts configure their logging
""" + SET_ORDER_F + "print(f(jnp.ones(4)))\n"

FLOOD_AROUND_COMPILE = """\
import sys
import jax
import jax.numpy as jnp
""" + SET_ORDER_F + """
line = "x" * 1023 + "\\n"
for _ in range(20 * 1024):
    sys.stderr.write(line)
print(f(jnp.ones(4)), flush=True)
for _ in range(20 * 1024):
    sys.stderr.write(line)
"""


def test_a_script_that_silences_jax_after_its_first_compile_still_reproduces(tmp_path, capsys, write):
    swept = sweep(["check", str(write("quiet.py", SILENCED_AFTER_FIRST_COMPILE)), "--versions", "0.4.31",
                   "--runs", "8"], tmp_path / "r", capsys)
    data = swept.data
    (cell,) = data["cells"]
    # The loggers' levels keep jit_f off stderr, not out of the recorder (issue 51): every run names its jit_f.
    assert all("jit_f" in modules(run) for run in cell["runs"])
    assert cell["verdict"] == "reproduced", cell["reason"]
    assert "not trusted" not in cell["reason"]


def test_a_script_that_prints_40_mib_keeps_its_jax_cache_lines(tmp_path, capsys, write):
    swept = sweep(["check", str(write("loud.py", FLOOD_AROUND_COMPILE)), "--versions", "0.4.31",
                   "--runs", "8"], tmp_path / "r", capsys)
    data = swept.data
    (cell,) = data["cells"]
    assert cell["verdict"] == "reproduced", cell["reason"]
    for run in cell["runs"]:  # JAX's account of jit_f came from the middle of the output, which was cut
        assert len([k for k in run["keys"]["keys"] if k["module"] == "jit_f"]) == 1
        text = (swept.run_dir / run["log"]).read_text()
        assert "bytes of output cut here" in text and len(text) < 3 << 20
    assert "inconsistencies" not in cell and "not trusted" not in cell["reason"]
    assert moved(cell) == ["computation"]
