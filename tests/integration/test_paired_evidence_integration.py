"""Issue 60, item 3, on a real release: two tests compile the same function at other dtypes and shapes, one in a
set's order (its key follows the hash seed), one with a host callback whose address JAX bakes into the module (its
key moves every run). Each moved key is diffed against the first run's module of the same test at the same argument
types: the callback's reads `address`, never a diff against the other test's module of other shapes."""

import json

import pytest

from harness.cli import commands as cli

pytestmark = pytest.mark.integration

SET_ORDER = "tests/test_pair.py::test_set_order"
COMPLEX = "tests/test_pair.py::test_complex"

SUITE = ("import functools\nimport jax, jax.numpy as jnp, numpy as np\n\n"
         "WEIGHTS = {'alpha': 1.0, 'beta': 2.0, 'gamma': 3.0, 'delta': 4.0, 'epsilon': 5.0}\n"
         "NAMES = set(WEIGHTS)\n\n\n"
         "@functools.partial(jax.jit, static_argnums=1)\n"
         "def scale(x, ordered):\n"
         "    if ordered:\n"
         "        return sum(x * WEIGHTS[n] for n in NAMES)\n"
         "    return jax.pure_callback(np.conj, jax.ShapeDtypeStruct(x.shape, x.dtype), x)\n\n\n"
         "def test_set_order():\n"
         "    assert float(scale(np.ones(3, np.float32), True).sum()) == 45.0\n\n\n"
         "def test_complex():\n"
         "    assert scale(jnp.ones(2, jnp.complex64), False).shape == (2,)\n")


def test_each_moved_key_is_diffed_against_its_own_tests_module(tmp_path, capsys, write):
    write("suite/tests/test_pair.py", SUITE)
    out = tmp_path / "out"
    code = cli.main(["check", "--pytest", "--versions", "0.4.31", "--runs", "3", "--no-moved-folder", "--quiet",
                     "--cwd", str(tmp_path / "suite"), "--out", str(out), "--json", "--", "-q", "-p", "no:randomly",
                     "tests"])
    capsys.readouterr()
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    (cell,) = json.loads((run_dir / "results.json").read_text())["cells"]
    assert code == 1 and cell["verdict"] == "reproduced", cell["reason"]
    report = (run_dir / "report.md").read_text()
    head = report[:report.index("## Results")] if "## Results" in report else report
    lines = [x for x in head.splitlines() if "against run 1" in x]
    line = next((x for x in lines if f"`{COMPLEX}`" in x), None)
    assert line is not None and "what differs is a hex address" in line and "(moved key: program" in line, head
    assert "tensor<3xf32>" not in line
    ordered = next((x for x in lines if f"`{SET_ORDER}`" in x), None)
    if ordered is not None:  # where a later run lowered the other order: its own row, diffed against its own module
        assert "(moved key: hash seed" in ordered, head
        assert "the differing lines hold the same tokens in another order" in ordered, head
