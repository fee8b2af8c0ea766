"""Resuming an interrupted sweep: the same sweep only, finished cells kept, a cut-short cell redone."""

import json

import pytest

from harness.core.errors import UserError
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict
from harness.results.resume import check_same_sweep, finished_cells, still_to_measure
from harness.results.document import read_header

HEADER = {"config": {"name": "smoke", "runs": 4, "source": "configs/smoke.yaml"},
          "versions": ["0.4.28", "0.4.29"], "options": {"runs": 4, "seeds": "chosen", "all_runs": False}}


def changed(**parts):
    out = json.loads(json.dumps(HEADER))
    for key, value in parts.items():
        section, _, name = key.partition("__")
        if name:
            out[section][name] = value
        else:
            out[section] = value
    return read_header(out)


def test_the_same_sweep_passes_even_from_a_moved_config():
    assert check_same_sweep(changed(config__source="elsewhere/smoke.yaml"), changed(), "dir") is None


@pytest.mark.parametrize("previous, fragment", [
    (changed(config__runs=8), "config.runs differs"),
    (changed(versions=["0.4.28"]), "versions differ"),
    (changed(options__seeds="random"), "option seeds differs"),
    (changed(options__all_runs=True), "option all_runs differs"),
    (changed(shard={"index": 1, "count": 2, "cells": ["a"]}), "another shard"),
])
def test_another_sweep_is_refused_naming_what_differs(previous, fragment):
    with pytest.raises(UserError, match=fragment):
        check_same_sweep(previous, changed(), "dir")


def test_finished_cells_drop_the_one_cut_short_and_the_rest_is_to_measure():
    specs = [CellSpec(v, Platform.CPU, 8, None) for v in ("0.4.28", "0.4.29", "0.4.30")]
    done = CellResult(specs[0], Verdict.REPRODUCED, {})
    cut = CellResult(specs[1], Verdict.ERROR, {}, interrupted=True)
    kept = finished_cells([done, cut])
    assert kept == [done]
    assert still_to_measure(specs, kept) == specs[1:]
