"""The reducer's measuring side, where it can be tested without runs: how a batch of candidates is shared out."""

import threading

from harness.reduce.measure import Measurer
from harness.reduce.search import Tried


def test_a_candidate_twice_in_one_batch_is_measured_once(monkeypatch, tmp_path):
    # Two threads on one candidate once shared its folder: the second's mkdir failed (FileExistsError), an
    # internal error that ended the reduction (seen in CI's Ctrl-C test).
    measurer = Measurer(config=None, script=tmp_path / "s.py", workdir=tmp_path, bad=None, good=None, target=None,
                        bad_seeds=[1, 2], work=tmp_path / "candidates", timeout_s=10.0, jobs=2)
    calls, lock = [], threading.Lock()

    def one_bad(source):
        with lock:
            calls.append(source)
        return Tried(source == "a", source)

    monkeypatch.setattr(measurer, "one_bad", one_bad)
    assert [t.kept for t in measurer.test_bad(["a", "b", "a"])] == [True, False, True]
    assert sorted(calls) == ["a", "b"]
