"""Seed coverage is what the runs lowered, not what the probe predicted (issue 47, item 2), on a real release.

examples/two_name_mesh.py builds its mesh from `{name for name in {"model": 4, "fsdp": 2}}`: seed 1 puts both
names in one slot, so the set follows insertion (model first) while the probe, which inserts in sorted order,
predicts fsdp first. Run 1's seed (3) lowers ('model', 'fsdp'); the probe's pick for the other order is seed 1,
which lowers ('model', 'fsdp') again. The random seeds are fixed here (3, then seeds that lower the same
order) so that the outcome does not depend on a draw."""

from pathlib import Path

import pytest

from harness.measure import seeds as seeds_module
from tests.sweeps import check

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).parents[2] / "examples" / "two_name_mesh.py"
SAME_ORDER = [3, 4, 5, 6, 7, 8, 10]  # each lowers ('model', 'fsdp') on CPython 3.11, as seed 1 does


@pytest.fixture
def fixed_random_seeds(monkeypatch):
    monkeypatch.setattr(seeds_module, "random_seeds", lambda count, rng=None: SAME_ORDER[:count])


def test_with_4_runs_the_order_seed_1_did_not_lower_is_chosen_again_and_the_bug_shows(tmp_path, capsys,
                                                                                     fixed_random_seeds):
    swept = check([str(EXAMPLE), "--versions", "0.4.31", "--runs", "4"], tmp_path, capsys)
    (cell,) = swept.data["cells"]
    assert [r["seed"] for r in cell["runs"]][:3] == [3, 1, 2]  # seed 1 lowered model,fsdp: seed 2 for fsdp,model
    assert cell["verdict"] == "reproduced", cell["reason"]
    (cover,) = [c for c in cell["seeds"]["covers"] if c["names"] == ["fsdp", "model"]]
    assert cover["lowered"] is True and cover["pairs_in_both_orders"] is True
    assert sorted(cover["orderings_run"]) == ["fsdp,model", "model,fsdp"]


def test_with_2_runs_the_row_says_which_order_was_never_lowered(tmp_path, capsys, fixed_random_seeds):
    swept = check([str(EXAMPLE), "--versions", "0.4.31", "--runs", "2"], tmp_path, capsys)
    (cell,) = swept.data["cells"]
    assert [r["seed"] for r in cell["runs"]] == [3, 1]
    assert cell["verdict"] == "clean", cell["reason"]
    (cover,) = [c for c in cell["seeds"]["covers"] if c["names"] == ["fsdp", "model"]]
    # what the runs lowered, and what the probe predicted for the same seeds
    assert cover["orderings_run"] == ["model,fsdp"] and sorted(cover["orderings_predicted"]) == ["fsdp,model",
                                                                                              "model,fsdp"]
    assert cover["pairs_in_both_orders"] is False and cover["pair_orders_not_seen"] == ["fsdp,model"]
    # seed 1 lowered model,fsdp though predicted fsdp,model: the probe was wrong, or the order never reaches the
    # module; one such seed leaves 1 in 8 (both names in one slot)
    assert cell["miss_bound"] == 0.125
    table = (swept.run_dir / "table.md").read_text()
    assert "the runs never lowered {fsdp, model} as fsdp,model" in table
