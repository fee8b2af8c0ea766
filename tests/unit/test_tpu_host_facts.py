"""A TPU host's facts in results.json's header, where the host says them (fake facts: no TPU here)."""

from __future__ import annotations

from harness.core.hostinfo import tpu_facts
from harness.environments.local import LocalBackend
from harness.results.header import HostFacts, host_record


def test_a_tpu_hosts_own_words():
    assert tpu_facts(0, {"TPU_ACCELERATOR_TYPE": "v5litepod-4"}) == {}  # no chip here: nothing said
    assert tpu_facts(1, {}) == {"tpu_chips": 1}
    assert tpu_facts(1, {"TPU_ACCELERATOR_TYPE": "v5litepod-4"}) == {"tpu_chips": 1, "tpu_accelerator_type": "v5litepod-4"}


def test_the_local_interpreters_libtpu_is_recorded_as_a_host_fact():
    backend = LocalBackend("/usr/bin/python3", kept={})
    assert backend.describe() == {"backend": "local"}  # not probed yet, or no libtpu: nothing said
    backend._facts = {"jax": "0.10.2", "distributions": {"jax": "0.10.2", "libtpu": "0.0.42.1"}}
    host = host_record({**backend.describe(), **tpu_facts(1, {"TPU_ACCELERATOR_TYPE": "v5litepod-4"})})
    assert (host.libtpu_version, host.tpu_chips, host.tpu_accelerator_type) == ("0.0.42.1", 1, "v5litepod-4")
    assert host.facts == {}  # each under its own name, not among the backend's other facts


def test_a_header_without_them_still_reads():
    assert host_record({"backend": "venv", "os": "Linux"}) == HostFacts(backend="venv", os="Linux")  # type: ignore[arg-type]


def test_the_report_names_them():
    from harness.core.kinds import Platform, Verdict
    from harness.core.model import CellResult, CellSpec
    from harness.report.render import render_report
    from harness.results.document import ResultsDocument, SweepStatus
    from harness.results.header import RecordedConfig, ResultsHeader

    cells = [CellResult(CellSpec("0.10.2", Platform.TPU, 1, None), Verdict.CLEAN, {})]
    header = ResultsHeader(command="harness check p.py --platform tpu", config=RecordedConfig(name="p"),
                           versions=["0.10.2"], host=HostFacts(tpu_chips=1, tpu_accelerator_type="v5litepod-4",
                                                              libtpu_version="0.0.42.1"))
    report = render_report(ResultsDocument(header, cells, SweepStatus.COMPLETE), cells, {})
    assert "- TPU: v5litepod-4\n- TPU chips: 1\n- libtpu: 0.0.42.1\n" in report
