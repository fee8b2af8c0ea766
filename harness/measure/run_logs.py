"""A run's log read back after it ended: what JAX's log says it computed, and what a crash said."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import msgspec

from harness.core import jaxlog, recorder
from harness.core.bounded_read import LOG_MAX_BYTES, Bounded, read_bounded, read_text_bounded
from harness.core.files import write_atomic
from harness.core.ir_results import with_result_types
from harness.inputs.process_variables import ir_dump_dir
from harness.environments.gpus import gpu_memory_holders
from harness.evidence.failure import held_device_reason, out_of_device_memory, traceback_packages, with_detail


def read_jax_log(log: Path, version: str, ok: bool,
                 recorded: Path | None = None) -> tuple[jaxlog.RunLog | None, str]:
    """What JAX's log says this run computed (None, and why, when it named no key): read_run's keys and note."""
    keys, note, _, _, _ = read_run(log, version, ok, recorded)
    return keys, note


def read_run(log: Path, version: str, ok: bool, recorded: Path | None = None, pytest: bool = False
             ) -> tuple[jaxlog.RunLog | None, str, dict[str, str], dict[str, float], list[str]]:
    """What JAX's log says this run computed (None, and why, when it named no key), a pytest run's tests with their
    outcomes and their seconds ({}: none, or not a pytest run: `pytest`, see Recording.vetted), and where its accounts disagree (words, [] where
    they agree); a log over `jaxlog.LOG_CAP_BYTES` is cut down to what attribution needs, its head and its tail.
    `recorded`: the run's recorder file (JAX's messages read in-process, whatever the program did with stderr),
    only its lines that check out against the run's key. No single account decides a hit: the recorder's and the
    log on stderr are read together (`jaxlog.combined`), and the cache folder beside them (harness/evidence/keys.py)."""
    recording = recorder.read(recorded, recorder.recorder_key(recorded)) if recorded is not None else None
    sources = [] if recording is None or not recording.altered else [
        (f"{recording.altered} of its recorder's lines were not the hook's as it wrote them (appended or changed "
         "by the program, or after a line it removed): not read")]
    if recording is not None:
        recording, left_out = recording.vetted(pytest)
        sources += left_out
    tests = recording.test_results() if recording is not None else {}
    seconds = recording.test_seconds() if recording is not None else {}
    found = read_bounded(log, LOG_MAX_BYTES)
    if not found.read:
        return None, f"its log {found.problem or 'is missing'}", tests, seconds, sources
    text = found.text()
    found = replace(found, data=b"")  # a log of 64 MiB held twice at most (its bytes, then its lines), not thrice
    lines, over = text.splitlines(), found.capped or len(text) > jaxlog.LOG_CAP_BYTES
    del text
    cut = ""
    if over:  # what is kept is never past the cut, whatever the lines
        write_atomic(log, "\n".join(jaxlog.capped(lines)) + "\n")
        cut = log_cut(found, lines)
    # (a recorder whose lines did not all check out is no whole account: every key stderr shows computed is read)
    named = None if recording is None or recording.altered else jaxlog.named_keys(lines)
    own = lines if recording is None or recording.altered or not tests else outside_captured(lines)
    parsed, disagree = jaxlog.combined(recorder.run_log(recording) if recording is not None else jaxlog.RunLog(),
                                       jaxlog.parse(own), named)
    sources += [f"its recorder and JAX's log on stderr disagree: {'; '.join(disagree)}"] if disagree else []
    said = recording.cut() if recording is not None else ""  # the hook's cap, or what the bounded read left out
    said = "; ".join(n for n in (said, cut) if n)
    if parsed.empty:
        why = jaxlog.no_keys_note(version) if ok else "the run failed before JAX logged a cache key"
        return None, "; ".join(n for n in (why, said) if n), tests, seconds, sources
    if any(k.arg_types for k in parsed.keys):  # a static argument's value shows in the results alone
        parsed = msgspec.structs.replace(parsed, keys=with_result_types(parsed.keys, ir_dump_dir(log)))
    return parsed, said, tests, seconds, sources


def log_cut(found: Bounded, lines: list[str]) -> str:
    """What the kept log lost beyond its usual cut (its middle's lines that are not JAX's), for the run's row: a file
    past the read bound, lines shortened; "" for neither (the supervisor writes no such log: the program's own)."""
    long_lines = sum(len(line) > jaxlog.LINE_CAP_CHARS for line in lines)
    said = [found.note("its log", LOG_MAX_BYTES)] if found.capped else []
    said += [(f"{long_lines} line{'s' if long_lines > 1 else ''} of it longer than {jaxlog.LINE_CAP_CHARS >> 10} KiB "
             "shortened")] if long_lines else []
    return "; ".join(said) + f", the log kept cut to {jaxlog.LOG_CAP_BYTES >> 20} MiB" if said else ""


_CAPTURED = re.compile(r"^-+ Captured (?:stdout|stderr|log) (?:setup|call|teardown) -+$")
_SECTION = re.compile(r"^(?:_{3,} .* _{3,}|={3,}.*={3,}|-{3,} .* -{3,})$")


def outside_captured(lines: list[str]) -> list[str]:
    """A pytest run's log without pytest's report of what its failing tests printed (`---- Captured stderr call
    ----` up to the next section): excerpts of those tests' own stderr, JAX's log among them, not the process's
    log. Where pytest captured stderr (its default) the recorder is then the run's one account; with `-s` the log
    is whole and both are read. distrax's float64 tests failing on 0.4.31 had a key that run 1 compiled in one test
    and hit in a failing one read as "a miss in the recorder, a hit on stderr"."""
    out, inside = [], False
    for line in lines:
        if _CAPTURED.match(line):
            inside = True
            continue
        if inside and _SECTION.match(line):
            inside = False
        if not inside:
            out.append(line)
    return out


def missing_module(module: str, log: Path) -> str | None:
    """The one line to say when `python -m module` found no such module in the release's environment (Python's
    own words in the log: `python: No module named pytest`, or `Error while finding module specification for
    'a.b' (ModuleNotFoundError: No module named 'a')`); None when the log says something else."""
    text = read_text_bounded(log, LOG_MAX_BYTES)
    if text is None:
        return None
    lines = text.splitlines()[-20:]
    top = module.split(".")[0]
    parts = [module.rsplit(".", i)[0] for i in range(module.count(".") + 1)]
    for line in lines:
        if ": No module named " in line or "Error while finding module specification" in line:
            named = line.rsplit("No module named ", 1)[-1].strip().strip("'\")")
            if named in parts or named == top:
                return (f"no module {module} in this release's environment (python -m found none: install it with "
                        f"--with, or set --cwd to the folder that holds it)")
    return None


def with_log_detail(reason: str, log: Path) -> str:
    """A crash's reason with what failed (the exception, or the program's own last line), so the table says why."""
    text = read_text_bounded(log, LOG_MAX_BYTES)
    if text is None:
        return reason
    lines = text.splitlines()
    return with_detail(reason, lines, installed_versions(traceback_packages(lines)))


def held_device(reason: str, log: Path, on_gpus: bool) -> str:
    """A failed run's reason, said as the harness's failure where the GPU's memory was held by another process
    (harness/evidence/failure.py); asks nvidia-smi who holds GPU memory only for an out-of-memory failure on a cell
    whose runs see GPUs (`on_gpus`)."""
    if not on_gpus or not out_of_device_memory(reason):
        return reason
    text = read_text_bounded(log, LOG_MAX_BYTES) or ""
    return held_device_reason(reason, text.splitlines(), gpu_memory_holders()) or reason


def installed_versions(packages: list[tuple[str, str]]) -> list[str]:
    """`flax 0.8.4` for each (site-packages folder, module) whose distribution's metadata is in that folder
    (a venv's, on this machine; a container's folder is not here, and its packages go unnamed)."""
    out = []
    for root, module in packages:
        try:
            infos = sorted(Path(root).glob("*.dist-info"))
        except OSError:
            continue
        version = next((_dist_version(info, module) for info in infos if _dist_version(info, module)), None)
        if version:
            out.append(f"{module} {version}")
    return out


def _dist_version(info: Path, module: str) -> str | None:
    """The version of `<name>-<version>.dist-info` when it is `module`'s distribution: its name is the
    module's (normalised), or its top_level.txt lists the module."""
    name, _, version = info.name[: -len(".dist-info")].partition("-")
    if name.lower().replace("-", "_").replace(".", "_") == module.lower():
        return version
    try:
        return version if module in (info / "top_level.txt").read_text().split() else None
    except OSError:
        return None
