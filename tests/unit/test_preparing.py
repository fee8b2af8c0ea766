"""`harness init` (a starter config for a user's script) and `harness base-image` (the offline base image,
built by the script shipped in the package): what a user sets up before measuring."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
import yaml


from harness.cli import commands as cli
from harness.inputs import options
from harness.core.confidence import runs_for_target
from harness.inputs.config import KEYS, load_config, starter_config
from harness.environments.docker import DEBIAN_PYTHONS
from harness.core.files import package_path, shipped_configs
from harness.inputs.versions import LATEST

SCRIPT = "import jax\nprint(jax.numpy.ones(3))\n"


def test_init_writes_a_config_that_runs_the_script_with_every_key_explained(tmp_path, monkeypatch, capsys):
    (tmp_path / "project").mkdir()
    script = tmp_path / "project" / "train.py"
    script.write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["init", "project/train.py"]) == 0
    assert capsys.readouterr().out == "config: train.yaml (edit it, then: harness run train.yaml)\n"
    config = load_config("train.yaml")
    assert config.repro.path == script.resolve() and not config.repro.builtin
    assert (config.name, config.jax_versions, config.runs) == ("check-train", (LATEST,), runs_for_target())
    text = Path("train.yaml").read_text()
    assert text.splitlines()[1] == "# Measure it with: harness run train.yaml   (every key: docs/config.md)"
    # Every key a script's config takes is there, set or commented out, with what it does.
    script_keys = KEYS - {"meshes", "docker", "module", "processes", "vary"}
    assert {k for k in script_keys if not re.search(rf"^(# )?{k}: .+  # ", text, re.MULTILINE)} == set()
    # The commented keys are valid as written: uncommented, the config still reads.
    (tmp_path / "requirements.txt").write_text("flax\n")
    uncommented = re.sub(r"^# (\w+: )", r"\1", text, flags=re.MULTILINE)
    Path("all.yaml").write_text(uncommented)
    everything = load_config("all.yaml")
    assert everything.args == ("--steps", "1") and dict(everything.env) == {"MODEL_SIZE": "tiny"}
    assert str(everything.python) == "3.12"


def test_init_keeps_what_exists_unless_forced_and_refuses_a_missing_script(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(SCRIPT)
    Path("sub").mkdir()
    assert cli.main(["init", "train.py", "--output", "sub/c.yaml"]) == 0
    assert load_config("sub/c.yaml").repro.path == (tmp_path / "train.py").resolve()  # relative to the config
    assert "repro: ../train.py" in Path("sub/c.yaml").read_text()
    capsys.readouterr()
    assert cli.main(["init", "train.py", "-o", "sub/c.yaml"]) == 2
    assert capsys.readouterr().err == "harness: error: sub/c.yaml: already exists (--force to replace it)\n"
    assert cli.main(["init", "train.py", "-o", "sub/c.yaml", "--force"]) == 0
    assert cli.main(["init", "gone.py"]) == 2
    assert "gone.py: no such script" in capsys.readouterr().err


def test_the_shipped_configs_are_the_ones_the_help_names():
    names = ", ".join(shipped_configs())
    assert names == "gpu_local, nightly, releases, shard_map_grad, smoke"
    assert set(shipped_configs()) <= set(re.findall(r"\w+", options.option("run", "config").help))


def test_base_image_runs_the_shipped_script_with_the_release_asked_for(tmp_path, monkeypatch, capfd):
    """The package's script (what `make base-image` ran from docker/): a `docker` that says the image exists
    stands in for the engine here; test_base_image_of_a_real_engine below asks a real one."""
    assert options.DEBIAN_RELEASES == tuple(DEBIAN_PYTHONS)  # --debian's choices are the releases it knows
    script = package_path("harness.environments", "dockerfiles", "make_base_image.sh")
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "docker"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/asked\nexit 0\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert cli.main(["base-image", "--debian", "trixie"]) == 0
    assert cli.main(["base-image", "--image", "mine:1"]) == 0
    assert (tmp_path / "asked").read_text().splitlines() == ["image inspect jax-harness-base:trixie",
                                                             "image inspect mine:1"]
    assert "base-image: jax-harness-base:trixie already exists (rebuild it with: harness base-image --force)" \
        in capfd.readouterr().out


def test_init_never_replaces_the_script_itself(tmp_path, monkeypatch, capsys):
    """Issue 49, 5: `init mine.py --output mine.py --force` replaced the script by a config (exit 0)."""
    monkeypatch.chdir(tmp_path)
    Path("mine.py").write_text(SCRIPT)
    os.symlink("mine.py", "link.py")
    os.link("mine.py", "hard.py")
    for output in ("mine.py", "link.py", "hard.py"):
        assert cli.main(["init", "mine.py", "--output", output, "--force"]) == 2
        assert capsys.readouterr().err == f"harness: error: {output}: is the script itself; give another file for the config\n"
    assert Path("mine.py").read_text() == SCRIPT


@pytest.mark.parametrize("breaker", ["\n", "\r", "\u2028", "\u2029", "\x85"])
def test_a_script_name_with_a_line_break_replaces_no_config(breaker, tmp_path, monkeypatch, capsys):
    """Issue 49, 5: such a name broke out of the config's comment, and the config was replaced by one with
    keys of its own (`args`, `env: {LD_PRELOAD: ...}`) before the exit 2."""
    monkeypatch.chdir(tmp_path)
    Path("mine.yaml").write_text("kept\n")
    name = f"a{breaker}env: {{LD_PRELOAD: x.so}}{breaker}b.py"
    Path(name).write_text(SCRIPT)
    assert cli.main(["init", name, "--output", "mine.yaml", "--force"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "control character" in err, err
    assert Path("mine.yaml").read_text() == "kept\n"


def test_the_starters_comments_hold_no_line_break_of_yaml():
    text = starter_config("t.py", "check-t", 8, "for a\u2028args: [x]\x85b\r", "harness run 'a\nb.yaml'")
    assert set(yaml.safe_load(text)) == {"name", "repro", "jax_versions", "platform", "device_count", "runs",
                                         "timeout_s"}
    assert len(text.splitlines()) == len(starter_config("t.py", "check-t", 8, "x", "y").splitlines())


def test_init_under_a_file_is_one_line(tmp_path, monkeypatch, capsys):
    """Issue 49, 15: `init s9.py --output s9.py/x.yaml` was a FileExistsError traceback."""
    monkeypatch.chdir(tmp_path)
    Path("s9.py").write_text(SCRIPT)
    assert cli.main(["init", "s9.py", "--output", "s9.py/x.yaml"]) == 2
    assert capsys.readouterr().err == "harness: error: s9.py/x.yaml: s9.py is not a folder\n"
