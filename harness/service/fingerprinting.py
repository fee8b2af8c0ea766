"""`harness fingerprint` and `harness diff`: each module's key and components on this machine, and what
differs between two machines' fingerprints (harness/results/fingerprints.py)."""

from __future__ import annotations

import json
import os
import platform as host_os
import socket
import tempfile
from pathlib import Path

from harness.inputs.config import Config
from harness.core.errors import EnvironmentUnavailable, UserError
from harness.core.files import read_json_bounded, remove_path, write_atomic
from harness.results.fingerprints import (CACHE_DIR, MAX_FINGERPRINT_BYTES, Fingerprint, FingerprintCell,
                                  cell_fingerprint, diff, fingerprint_of, render_diff)
from harness.core.records import plain
from harness.results.header import HostFacts, host_record
from harness.measure.progress import Progress
from harness.results.document import load_results, new_results_folder, results_file, results_folder
from harness.service import measurement
from harness.service.command_options import FingerprintOptions
from harness.measure.sweep import cell_runner, plan_cells

# The cache folder's path is part of the key on some releases (0.4.36 until 0.11.0): a fingerprint's runs
# use one fixed path, so two machines' fingerprints differ only where the machines do.
FINGERPRINT_CACHE = Path(tempfile.gettempdir()) / "jax-cache-harness-fingerprint"


def this_host(backend: str, cache_dir: Path) -> HostFacts:
    return host_record({"hostname": socket.gethostname(), "os": host_os.platform(),
                                "machine": host_os.machine(), "python": host_os.python_version(),
                                "cpu_count": os.cpu_count(), "backend": backend, CACHE_DIR: str(cache_dir)})


def fingerprint(config: Config, options: FingerprintOptions, progress: Progress) -> Fingerprint:
    """One run per release (the config's, or --versions) with one hash seed; its keys and components."""
    opened = measurement.open(config, options, progress.say)
    config, choice = opened.config, opened.choice
    versions = opened.versions(options.versions, progress)
    choice.backend.check(config.platform, progress.say)  # one run each, no --jobs: no GPU or jobs line
    work = new_results_folder(options.out, f"fingerprint-{config.name}")
    cache_root = (options.cache_dir or FINGERPRINT_CACHE).absolute()
    progress.say(f"fingerprint: {len(versions)} release(s), hash seed {options.seed}, cache folder {cache_root}, "
                 f"logs in {work}")
    cells: list[FingerprintCell] = []
    for spec in plan_cells(config, versions):
        try:
            environment = choice.backend.prepare(spec.jax_version, spec.platform, progress.say)
        except EnvironmentUnavailable as exc:
            cells.append(FingerprintCell(spec.jax_version, str(spec.platform), spec.device_count, None,
                                         note=f"environment: {exc}"))
            continue
        cache = cache_root / spec.slug
        remove_path(cache)  # a fixed path: emptied, so every key is computed afresh
        cache.mkdir(parents=True)
        cell = cell_runner(environment, config, 1).run(spec, [options.seed], cache, work / "logs" / spec.slug,
                                                       results_root=work)
        found = cell_fingerprint(cell, str(cache))
        progress.say(f"  jax {spec.jax_version}: {sum(len(k) for k in found.modules.values())} key(s) of "
                     f"{len(found.modules)} module(s)" + (f" ({found.note})" if found.note else ""))
        cells.append(found)
    fingerprint = Fingerprint(this_host(choice.backend.name, cache_root), cells, source=str(config.repro.path))
    text = json.dumps(plain(fingerprint), indent=1, allow_nan=False) + "\n"
    write_atomic(work / "fingerprint.json", text)
    if options.output is not None:
        write_atomic(options.output, text)
    return fingerprint


def from_results(folder: Path) -> Fingerprint:
    """A results folder's cells as a fingerprint (each cell's first successful run)."""
    document = load_results(folder)
    root = results_folder(results_file(folder))
    return Fingerprint(document.header.host,
                       [cell_fingerprint(c, str(root / "caches" / c.spec.slug)) for c in document.cells],
                       source=str(root))


def read(path: Path) -> Fingerprint:
    """A fingerprint file, or a results folder (or its results.json) read as one; UserError otherwise."""
    if path.is_dir() or path.name == "results.json":
        return from_results(path)
    data = read_json_bounded(path, MAX_FINGERPRINT_BYTES, "fingerprint file")
    if isinstance(data, dict) and "fingerprint" not in data and "cells" in data and "config" in data:
        return from_results(path)
    try:
        return fingerprint_of(data, str(path))
    except ValueError as exc:
        raise UserError(str(exc)) from None


def diff_files(a: Path, b: Path) -> tuple[str, bool]:
    """The diff of two fingerprints (or results folders), and whether any key differs."""
    first, second = read(a), read(b)
    found = diff(first, second)
    return render_diff(first, second, found), any(c.differs for c in found)
