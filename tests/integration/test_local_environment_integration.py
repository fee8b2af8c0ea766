"""`--backend local` as its user runs JAX: an interpreter without JAX whose PYTHONPATH provides it (as a TPU VM image
or an HPC module does), on a real CPU run; and what ran, recorded (the devices JAX reported) and shown."""

import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.kinds import Platform
from harness.environments import dated_venv_backend
from tests.sweeps import check

STABLE = """\
import jax, jax.numpy as jnp

@jax.jit
def step(w, x):
    return jnp.tanh(x @ w).sum()

print(step(jnp.ones((4, 4)), jnp.ones((2, 4))))
"""


def _plain_python(venv_python: Path) -> Path:
    """The interpreter the venv was made from (pyvenv.cfg's home): the same Python, without the venv's packages."""
    cfg = dict(line.split(" = ", 1) for line in (venv_python.parent.parent / "pyvenv.cfg").read_text().splitlines()
               if " = " in line)
    return Path(cfg["home"]) / f"python{sys.version_info.major}.{sys.version_info.minor}"


def test_a_jax_from_pythonpath_is_probed_run_and_its_devices_recorded(tmp_path, capsys, monkeypatch, write):
    env = dated_venv_backend().prepare("0.10.2", Platform.CPU)
    site = next((Path(env.python).parent.parent / "lib").glob("python3*/site-packages"))
    python = _plain_python(Path(env.python))
    if not python.exists():
        pytest.skip(f"{python}: the venv's own interpreter is not there")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert subprocess.run([str(python), "-c", "import jax"], capture_output=True, env={}).returncode != 0, \
        f"{python} has jax of its own: the test would not show that PYTHONPATH provided it"
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # an XLA_* of the user's, kept
    script = write("stable.py", STABLE)
    swept = check([str(script), "--backend", "local", "--python", str(python), "--versions", "0.10.2", "--runs", "2"],
                  tmp_path / "r", capsys, quiet=False)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "clean", cell.get("reason")
    assert "kept from your environment: PYTHONPATH, XLA_* (1)" in swept.err
    assert cell["environment"]["kept_environment"] == ["PYTHONPATH", "XLA_PYTHON_CLIENT_PREALLOCATE"]
    assert cell["runs"][0]["devices"] == {"platform": "cpu", "device_kind": "cpu", "count": 8,
                                          "platform_version": "cpu"}
    assert all("devices" not in r for r in cell["runs"][1:])
    assert "devices: cpu ×8" in swept.err
    table = (swept.run_dir / "table.md").read_text()
    assert "| cpu ×8 " in table and "cpux8" not in table
