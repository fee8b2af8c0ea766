"""Cells of a reduction's measurements (cache keys per run, judged by the real tally), shared by the reducer's tests."""

from harness.core.findings import Attribution
from harness.core.kinds import Cause, Verdict
from harness.core.runs import RunRecord
from harness.verdicts.judge import Tally


def key(module, n):
    return f"{module}-{n:064x}"


def cell(spec, keys_per_run, components=("computation",), cause=Cause.ORDER, exit_codes=None):
    records = [RunRecord(index=i, seed=100 + i, exit_code=(exit_codes or {}).get(i, 0), duration_s=1.0,
                         new_entries=list(keys)) for i, keys in enumerate(keys_per_run, start=1)]
    tally = Tally(len(records))
    for record in records:
        tally.add(record)
    result = tally.cell(spec, [], {})
    if result.verdict == Verdict.REPRODUCED:
        module = keys_per_run[1][0].rpartition("-")[0]
        result.attribution = Attribution(module, 1, 2, keys_per_run[0][0], keys_per_run[1][0],
                                         [(c, "a", "b") for c in components] + [("devices", "x", "x")])
        result.cause = cause
    return result
