"""A GPU host as hosts have it (fake host facts: no GPU here): the CUDA extra its driver runs, its facts in
results.json's header and the report, and a run that failed on memory another process held said as the harness's
failure."""

from __future__ import annotations

import stat
from datetime import UTC, datetime

import pytest

from harness.core.hostinfo import jax_cuda_plugin, parse_cuda_version, parse_gpu_holders, parse_nvidia_smi
from harness.core.kinds import Platform, Verdict
from harness.core.model import CellResult, CellSpec
from harness.core.platforms import cuda_major, describe
from harness.environments import gpus
from harness.environments import wheelhouse as wh
from harness.environments.local import LocalBackend
from harness.environments.requirements import jax_requirements
from harness.evidence.failure import held_device_reason
from harness.measure.run_logs import held_device
from harness.report.render import render_report
from harness.results.document import ResultsDocument, SweepStatus
from harness.results.header import HostFacts, RecordedConfig, ResultsHeader, host_record

SMI_HEADER = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
"""


def fake_smi(tmp_path, monkeypatch, answers: dict[str, str]) -> None:
    """nvidia-smi on PATH answering each first argument ("" for none) with its text."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    cases = "".join(f"  '{arg}') cat <<'EOF'\n{text}EOF\n  ;;\n" for arg, text in answers.items())
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\ncase "${{1:-}}" in\n{cases}  *) exit 9;;\nesac\n')
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    gpus.driver_cuda_version.cache_clear()


@pytest.mark.parametrize("release, driver, extra", [
    ("0.11.2", "13.0", "cuda13"),  # the release has jax-cuda13-plugin and the driver runs CUDA 13
    ("0.7.2", "13.1", "cuda13"),  # the first release with it
    ("0.7.1", "13.0", "cuda12"),  # before jax-cuda13-plugin: CUDA 13 drivers run CUDA 12's
    ("0.11.2", "12.4", "cuda12"),  # a CUDA 12 driver cannot run CUDA 13
    ("0.11.2", None, "cuda12"),  # no driver known (a submitting machine, an image built without a GPU)
    ("0.4.26", "13.0", "cuda12"),
    ("0.4.25", "13.0", "cuda12_pip"),
])
def test_the_cuda_extra_follows_the_release_and_the_driver(release, driver, extra):
    assert describe(Platform.CUDA).install.extra_for(release, driver) == extra
    assert jax_requirements(release, Platform.CUDA, driver)[0] == f"jax[{extra}]=={release}"


def test_other_platforms_ignore_the_driver():
    assert jax_requirements("0.11.2", Platform.TPU, "13.0")[0] == "jax[tpu]==0.11.2"
    assert jax_requirements("0.11.2", Platform.CPU, "13.0")[0] == "jax==0.11.2"
    assert (cuda_major("13.0"), cuda_major("12"), cuda_major(None), cuda_major("n/a")) == (13, 12, None, None)


def test_the_driver_s_cuda_version_from_nvidia_smi_s_header():
    assert parse_cuda_version(SMI_HEADER) == "13.0"
    assert parse_cuda_version("CUDA Version                              : 12.4\n") == "12.4"  # nvidia-smi -q
    assert parse_cuda_version("No devices were found\n") is None


def test_gpu_name_and_memory_driver_and_cuda_are_host_facts(tmp_path, monkeypatch):
    fake_smi(tmp_path, monkeypatch, {"--query-gpu=name,driver_version,memory.total": "NVIDIA H200, 580.95.05, 143771 MiB\n",
                                     "": SMI_HEADER})
    facts = gpus.accelerator_facts()
    assert facts == {"gpus": ["NVIDIA H200 (143771 MiB)"], "driver_version": "580.95.05", "cuda_version": "13.0"}
    assert gpus.driver_cuda_for(Platform.CUDA) == "13.0" and gpus.driver_cuda_for(Platform.CPU) is None
    host = host_record(facts)
    assert (host.gpus, host.driver_version, host.cuda_version) == (("NVIDIA H200 (143771 MiB)",), "580.95.05", "13.0")


def test_no_driver_no_facts(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    gpus.driver_cuda_version.cache_clear()
    assert gpus.accelerator_facts() == {} and gpus.driver_cuda_version() is None and gpus.gpu_memory_holders() == []
    assert parse_nvidia_smi("") == {}


def test_the_local_interpreters_jax_cuda_plugin_is_a_host_fact():
    assert jax_cuda_plugin({"jax": "0.11.2", "jax-cuda13-plugin": "0.11.2", "jax-cuda13-pjrt": "0.11.2"}) == \
        "jax-cuda13-plugin 0.11.2"
    assert jax_cuda_plugin({"jax-cuda12-plugin": "0.4.31"}) == "jax-cuda12-plugin 0.4.31"
    assert jax_cuda_plugin({"jax": "0.11.2"}) is None
    backend = LocalBackend("/usr/bin/python3", kept={})
    backend._facts = {"jax": "0.11.2", "distributions": {"jax": "0.11.2", "jax-cuda13-plugin": "0.11.2"}}
    host = host_record(backend.describe())
    assert host.jax_cuda_plugin == "jax-cuda13-plugin 0.11.2" and host.facts == {}


def test_the_report_names_them():
    cells = [CellResult(CellSpec("0.11.2", Platform.CUDA, 1, None), Verdict.CLEAN, {})]
    header = ResultsHeader(command="harness check p.py --platform cuda", config=RecordedConfig(name="p"),
                           versions=["0.11.2"], host=HostFacts(gpus=("NVIDIA H200 (143771 MiB)",),
                                                              driver_version="580.95.05", cuda_version="13.0",
                                                              jax_cuda_plugin="jax-cuda13-plugin 0.11.2"))
    report = render_report(ResultsDocument(header, cells, SweepStatus.COMPLETE), cells, {})
    assert ("- NVIDIA driver: 580.95.05\n- CUDA (driver): 13.0\n- GPUs: NVIDIA H200 (143771 MiB)\n"
            "- JAX CUDA plugin: jax-cuda13-plugin 0.11.2\n") in report


# ---- a GPU another process held ------------------------------------------------------------------------------

OOM = "exit code 1: XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 107374182400 bytes."
AT_START = ["RuntimeError: Unable to initialize backend 'cuda': RESOURCE_EXHAUSTED: out of memory"]


def test_out_of_memory_while_jax_made_its_gpu_client_is_the_harness_s_failure():
    said = held_device_reason("exit code 1: " + AT_START[0], AT_START, [])
    assert said is not None and said.startswith("the GPU's memory was held by another process: the harness's "
                                                "failure, not the program's")
    assert said.endswith(AT_START[0])  # nothing lost


def test_out_of_memory_with_another_process_on_the_gpu_names_it():
    holders = parse_gpu_holders("4242, /usr/bin/python3, 104000 MiB\nnot a process line\n")
    assert holders == ["pid 4242 python3, 104000 MiB"]
    said = held_device_reason(OOM, ["... Out of memory while trying to allocate"], holders)
    assert said is not None and said.startswith("the GPU's memory was held by another process (pid 4242 python3, "
                                                "104000 MiB): the harness's failure")


def test_the_program_s_own_out_of_memory_and_other_failures_stay_the_program_s():
    assert held_device_reason(OOM, ["Traceback ...", OOM], []) is None  # nobody else held it: the program asked
    assert held_device_reason("exit code 1: ValueError: bad shape", AT_START, ["pid 1 x, 1 MiB"]) is None


def test_only_a_cell_whose_runs_see_gpus_asks_who_held_them(tmp_path, monkeypatch):
    log = tmp_path / "run.log"
    log.write_text("\n".join(AT_START) + "\n")
    asked = []
    monkeypatch.setattr("harness.measure.run_logs.gpu_memory_holders", lambda: asked.append(1) or [])
    assert held_device(OOM, log, on_gpus=False) == OOM and not asked
    assert held_device(OOM, log, on_gpus=True).startswith("the GPU's memory was held") and asked
    assert describe(Platform.CUDA).sees_gpus and describe(Platform.AUTO).sees_gpus
    assert not describe(Platform.CPU).sees_gpus and not describe(Platform.TPU).sees_gpus


def test_nvidia_smi_s_compute_processes(tmp_path, monkeypatch):
    fake_smi(tmp_path, monkeypatch, {"--query-compute-apps=pid,process_name,used_memory": "77, python, 100 MiB\n"})
    assert gpus.gpu_memory_holders() == ["pid 77 python, 100 MiB"]


def test_an_image_for_a_cuda_13_driver_has_its_own_lock(tmp_path, monkeypatch):
    """The docker backend's pinned list (harness/environments/wheelhouse.py) is resolved from jax[cuda13] where the
    host's driver runs CUDA 13: another list than a CUDA 12 host's, under its own name."""
    house = wh.Wheelhouse(tmp_path)
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "jax-0.11.2-cuda-py3.12-20260101.txt").write_text("jax-cuda12-plugin==0.11.2\n")
    (tmp_path / "locks" / "jax-0.11.2-cuda-py3.12-20260101-cuda13.txt").write_text("jax-cuda13-plugin==0.11.2\n")
    cutoff = datetime(2026, 1, 1, tzinfo=UTC)
    for driver, pinned in (("13.0", "jax-cuda13-plugin"), ("12.4", "jax-cuda12-plugin"), (None, "jax-cuda12-plugin")):
        monkeypatch.setattr(wh, "driver_cuda_for", lambda platform, driver=driver: driver)
        assert house.lock("0.11.2", Platform.CUDA, "3.12", cutoff, tmp_path / "log").startswith(pinned)
