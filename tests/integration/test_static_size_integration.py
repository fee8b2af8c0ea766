"""Issue 60.3 on real releases, through `harness check` on a plain script: a later run's key at run 1's argument types
whose module returns other types is `new input` only where the seed control says its key does not follow the hash
seed. A size drawn from an unseeded numpy generator and passed as a static argument: the control (run 1's seed again)
draws another size, so the program computed something new. A `device_put` onto a mesh whose axis names come from a set
shards into shapes that follow the hash seed (other result types as well): the control computes run 1's key again, and
the cell stays `reproduced` (the seed's own bug class, never hidden as new input)."""

import pytest

from tests.sweeps import check

pytestmark = pytest.mark.integration

STATIC_SIZE = ("import functools\nimport jax, jax.numpy as jnp, numpy as np\n\n\n"
               "@functools.partial(jax.jit, static_argnums=1)\n"
               "def tile(x, n):\n    return jnp.tile(x, n)\n\n\n"
               "n = int(np.random.default_rng().integers(2, 100000))  # unseeded: another size each start\n"
               "print(tile(np.ones(3, np.float32), n).shape)\n")

# Three names from a set onto a (2, 4, 1) mesh, the array sharded over two of them: each of the six orders gives its
# shards another shape (the sharding module's result types follow the seed), and none leaves it unsharded (a module
# that some orders never compile reads new input by its argument types: run 1 never compiled it).
SET_MESH = ("import jax, jax.numpy as jnp, numpy as np\n"
            "from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n\n"
            "names = tuple({'batch', 'model', 'data'})  # a set's order: the hash seed's\n"
            "mesh = Mesh(np.array(jax.devices()).reshape(2, 4, 1), names)\n"
            "x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P('batch', 'model')))\n"
            "print(x.sharding.shard_shape(x.shape))\n")


@pytest.mark.parametrize("version", ["0.4.31", "0.10.2"])
def test_a_static_size_from_an_unseeded_numpy_generator_is_new_input(tmp_path, capsys, write, version):
    script = write("static_size.py", STATIC_SIZE)
    swept = check([str(script), "--versions", version, "--runs", "4", "--no-moved-folder"], tmp_path / "out", capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "new input", cell["reason"]
    # it stopped at run 2's key, a moved key until the control said new input: then its planned runs went on
    assert len(cell["runs"]) == 4, cell["runs"]
    assert cell["reason"].startswith("jit_tile at (float32[3], -> tensor<"), cell["reason"]
    assert "a control with run 1's own hash seed computed another key" in cell["reason"], cell["reason"]
    assert cell["seed_control"]["exit_code"] == 0  # what told it from a key the hash seed moved
    report = (swept.run_dir / "report.md").read_text()
    head = report[:report.index("## Results")]
    assert "## What to do" in head, head
    assert ("`jit_tile`: the program's own randomness moved it, not the hash seed" in head
            and "at run 1's argument types returning other types (" in head
            and "a static argument's value changed what it computes" in head), head
    assert "seed its generators" in head, head
    assert "a static argument's value changed what it computes" in swept.out, swept.out


def test_with_the_moved_folder_a_check_that_went_on_after_the_control_made_every_planned_run(tmp_path, capsys, write):
    """The default check: the moved folder's run took run 3's place beside run 2 (its seed, a folder of run 1's
    entries) and missed (another size), so run 3 was to be made again in the cell's own folder; the cell stopped at
    run 2's key, then the control said new input: run 3 is made with the rest, never "only 3 of 4 runs"."""
    script = write("static_size.py", STATIC_SIZE)
    swept = check([str(script), "--versions", "0.10.2", "--runs", "4", "--jobs", "2"], tmp_path / "out", capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "new input", cell["reason"]
    assert sorted(r["index"] for r in cell["runs"]) == [1, 2, 3, 4], cell["runs"]


@pytest.mark.parametrize("version", ["0.4.31", "0.10.2"])
def test_a_device_put_onto_a_mesh_named_from_a_set_stays_reproduced(tmp_path, capsys, write, version):
    script = write("set_mesh.py", SET_MESH)
    swept = check([str(script), "--versions", version, "--runs", "6", "--no-moved-folder"],
                  tmp_path / "out", capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "reproduced", cell["reason"]
    # the rule was put to the test: a later run's key of the moved module at run 1's argument types returns other
    # types (the shards' shape), and the seed control (run 1's seed again) computed run 1's key there
    module = cell["reason"].split(":", 1)[0]
    first = {k["key"]: k for k in cell["runs"][0]["keys"]["keys"] if k["module"] == module}
    later = [k for r in cell["runs"][1:] for k in r["keys"]["keys"] if k["module"] == module and k["key"] not in first]
    assert any(k.get("result_types") and k["arg_types"] == f["arg_types"] and k["result_types"] != f["result_types"]
               for k in later for f in first.values()), (first, later)
    control = [k["key"] for k in cell["seed_control"]["keys"]["keys"] if k["module"] == module]
    assert control and set(control) <= set(first), (control, first)
    assert len(cell["runs"]) < 6  # the control said the hash seed: the cell stopped at its first miss, as it does
    report = (swept.run_dir / "report.md").read_text()
    head = report[:report.index("## Results")]
    assert "moved key: hash seed" in head or "its key follows the hash seed" in head, head
    assert "new input" not in cell["reason"], cell["reason"]
