"""The name sets a lowered module carries: recorded IR dumps (0.4.28's shard_map grad; a Shardy mesh)."""

from pathlib import Path

from harness.core.ir_names import MAX_NAMES, name_groups
from harness.measure.seeds import dump_texts

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_the_built_in_repro_s_module_gives_its_residual_s_axis_names_and_the_spec_s():
    # loc("[('a',), ('b',)]") and result_info "[('d', 'a', 'b', 'c'), None]"
    assert name_groups(dump_texts(FIXTURES / "ir_dump" / "run-01.ir")) == [("a", "b"), ("a", "b", "c", "d")]


def test_a_shardy_mesh_s_axes_are_one_set():
    text = 'sdy.mesh @mesh = <["batch"=4, "feats"=2]>\nfunc.func public @main(%arg0: tensor<8xf32> loc("x"))'
    assert name_groups([text]) == [("batch", "feats")]


def test_names_that_are_not_quoted_together_or_are_too_many_make_no_set():
    assert name_groups(['loc("params[0][1]")', 'loc("x")']) == []  # no quoted names: argument paths only
    many = "(" + ", ".join(f"'n{i}'" for i in range(MAX_NAMES + 1)) + ")"
    assert name_groups([f'jax.result_info = "{many}"']) == []
    assert name_groups(['{jax.result_info = "[\'w1\']"} {jax.result_info = "[\'b1\']"}']) == [("b1", "w1")]


def test_a_missing_dump_has_no_names(tmp_path):
    assert name_groups(dump_texts(tmp_path / "absent.ir")) == []
