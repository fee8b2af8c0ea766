"""A user's FSDP+TP shard_map program (examples/fsdp_tp_shard_map.py) on 0.4.28, whose jit(grad) key follows
the order of the set {batch, feats}: two orders only, so 4 random runs all agree one time in 8. Its later
seeds are chosen from run 1's module to show both orders, so 4 runs reproduce it every time."""

from pathlib import Path

import pytest

from tests.sweeps import check

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).parents[2] / "examples" / "fsdp_tp_shard_map.py"


def test_the_fsdp_tp_program_reproduces_with_4_runs_because_its_seeds_cover_both_orders(tmp_path, capsys):
    swept = check([str(EXAMPLE), "--versions", "0.4.28", "--runs", "4"], tmp_path, capsys)
    (cell,) = swept.data["cells"]
    seeds = cell["seeds"]
    assert seeds["strategy"] == "chosen" and seeds["chosen"][0] == seeds["seeds"][0]  # run 1's seed, random
    assert "names from run 1's lowered module: batch, feats" in seeds["note"]
    cover = next(c for c in seeds["covers"] if c["names"] == ["batch", "feats"])
    assert cover["pairs_in_both_orders"] is True
    assert sorted(cover["orderings_run"]) == ["batch,feats", "feats,batch"]  # what makes it deterministic
    assert cell["verdict"] == "reproduced"
    # the runs made: no more than the two orders needed, and the moved folder's run beside run 2 with run 3's
    # seed, kept as run 3 where every key hit (docs/measuring.md)
    runs = cell["runs"]
    assert [r["seed"] for r in runs] == seeds["chosen"][:len(runs)]
    assert len(runs) == 2 or (len(runs) == 3 and runs[2]["in_moved_folder"] and cell["moved_folder"]["counted"])
