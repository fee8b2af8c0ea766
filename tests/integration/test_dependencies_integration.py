"""A user's script with its own dependencies (Flax, Optax), installed with each real JAX release as of
that release's date, in real uv virtualenvs."""

import re
import shutil
from pathlib import Path

import pytest

from harness.inputs.dependencies import parse_requirements
from harness.environments.venv import VenvBackend
from harness.environments import dated_venv_backend
from harness.core.kinds import Platform
from tests.sweeps import sweep

pytestmark = pytest.mark.integration

EXAMPLE = Path("examples/flax_mlp_step.py")


def without_metadata(tmp_path) -> Path:
    """The example with its `# /// script` block removed: the same program, no inline requirements."""
    text = re.sub(r"(?ms)^# /// script$.*?^# ///$\n", "", EXAMPLE.read_text())
    assert "# ///" not in text
    script = tmp_path / "flax_mlp_step_plain.py"
    script.write_text(text)
    return script


def assert_flax_step_measured(cell):
    """The step ran in every run (no ModuleNotFoundError), and every run hit the first run's keys: the
    step compiles several shapes (a key each), the same ones in every run, which is clean."""
    assert cell["verdict"] == "clean", cell["reason"]
    assert cell["runs"] and all(r["exit_code"] == 0 for r in cell["runs"])
    assert len(cell["keys"]["jit_step"]) == 1
    installed = cell["environment"]["distributions"]
    assert {"flax", "optax"} <= set(installed)
    assert cell["environment"]["requirements"] == ["flax", "optax"]
    return installed


def test_inline_metadata_gets_each_release_the_flax_of_its_time(tmp_path, capsys):
    swept = sweep(["check", str(EXAMPLE), "--versions", "0.4.31", "0.10.2", "--runs", "2"],
                  tmp_path / "inline", capsys)
    data = swept.data
    cells = {c["spec"]["jax_version"]: c for c in data["cells"]}
    old, new = (assert_flax_step_measured(cells[v]) for v in ("0.4.31", "0.10.2"))
    assert old["flax"] == "0.8.5" and old["optax"] == "0.2.3"  # as resolved on 0.4.31's date
    assert new["flax"] != old["flax"]  # a newer release gets a newer Flax
    assert data["config"]["requirements"] == ["flax", "optax"]
    report = (swept.run_dir / "report.md").read_text()
    assert "- jax 0.4.31: flax 0.8.5, optax 0.2.3" in report
    assert f"- jax 0.10.2: flax {new['flax']}, optax {new['optax']}" in report
    assert "flax==0.8.5 optax==0.2.3" in report  # the hand-run commands pin what was measured


def test_with_flag_shares_the_environment_of_the_same_set(tmp_path, capsys):
    first = dated_venv_backend(requirements=parse_requirements(["flax", "optax"], "test")).prepare(
        "0.4.31", Platform.CPU)  # made by the test above, or now
    data = sweep(["check", str(without_metadata(tmp_path)), "--with", "optax", "--with", "Flax",
                  "--versions", "0.4.31", "--runs", "2"], tmp_path / "with", capsys).data
    (cell,) = data["cells"]
    assert_flax_step_measured(cell)
    assert cell["environment"]["path"] == str(first.path) and cell["environment"]["reused"] is True


def test_a_different_set_is_a_different_environment(tmp_path):
    root = tmp_path / "envs"
    flax_only = VenvBackend(root=root, requirements=parse_requirements(["flax"], "t")).prepare(
        "0.4.31", Platform.CPU)
    again = VenvBackend(root=root, requirements=parse_requirements(["FLAX"], "t")).prepare("0.4.31", Platform.CPU)
    assert again.path == flax_only.path and again.describe()["reused"] is True
    plain = VenvBackend(root=root).prepare("0.4.31", Platform.CPU)
    assert plain.path != flax_only.path and plain.describe()["reused"] is False
    assert "flax" in flax_only.describe()["distributions"]
    assert "flax" not in plain.describe()["distributions"]
    shutil.rmtree(root)


def test_an_impossible_pin_is_each_cells_error_with_uvs_reason(tmp_path, capsys):
    data = sweep(["check", str(EXAMPLE), "--with", "flax==0.0.1", "--versions", "0.4.31", "0.6.2",
                  "--runs", "2"], tmp_path / "pin", capsys).data
    assert [c["spec"]["jax_version"] for c in data["cells"]] == ["0.4.31", "0.6.2"]  # the sweep went on
    for cell in data["cells"]:
        assert cell["verdict"] == "error" and not cell.get("runs")
        assert "flax==0.0.1" in cell["reason"] and "unsatisfiable" in cell["reason"]
        assert "\n" not in cell["reason"]
    assert data["status"] == "complete"


def test_local_backend_names_what_the_interpreter_lacks(tmp_path, capsys):
    env = dated_venv_backend(requirements=parse_requirements(["flax", "optax"], "test")).prepare("0.4.31", Platform.CPU)
    err = sweep(["check", str(EXAMPLE), "--with", "flax>=99", "--with", "einops", "--backend", "local",
                 "--python", str(env.python), "--versions", "0.4.31"], tmp_path / "local", capsys, expect=2).err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "flax>=99 (has 0.8.5)" in lines[0] and "einops (not installed)" in lines[0]
    assert not (tmp_path / "local").exists()
