"""Commands that only read results (and the index): `harness versions`, `report`, `merge`."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from collections.abc import Callable

from harness.inputs.config import load_config
from harness.core.errors import UserError
from harness.core.files import refuse_links
from harness.inputs.pythons import AUTO, PythonVersion
from harness.report.write import write_report
from harness.results.document import load_results, new_results_folder, results_folder
from harness.service.measurement import open_backend, version_entries
from harness.service.command_options import MeasureOptions, PythonOptions
from harness.service.outcomes import MergeOutcome
from harness.results.merge import merge_documents
from harness.inputs.versions import Resolution, resolve
from harness.output.results_folder import write_files
from harness.report.reproduce import summary_of

MERGE_COPIED = ("logs",)  # what the report's evidence reads; caches stay behind (listings are in the JSON)

def list_versions(config_path: Path, versions: tuple[str, ...] | None, python: str | None,
                  pythons: PythonOptions = PythonOptions(), index_url: str | None = None,
                  extra_index_urls: tuple[str, ...] = (), say: Callable[[str], None] | None = None) -> Resolution:
    """`harness versions`: the releases a config (or --versions) resolves to, each with the Python its
    venv would use (`python`, "3.N", pins one as the config's python: does)."""
    config = load_config(config_path)
    if python == AUTO:  # each release in a Python this machine has, whatever the config pins
        config = replace(config, python=None)
    elif python:
        try:
            config = replace(config, python=PythonVersion.parse(python))
        except ValueError as exc:
            raise UserError(f"--python-version: {exc} (or auto)") from None
    entries, source = version_entries(config, versions)
    choice, index = open_backend(config, MeasureOptions(pythons=pythons, index_url=index_url,
                                                        extra_index_urls=extra_index_urls), say)
    return resolve(entries, index, source=source, pythons=choice.backend.pythons)

def report(results: Path) -> Path:
    """`harness report RESULTS`: report.md written again from the folder's results.json."""
    return write_report(results_folder(results))


def merge(folders: list[Path], out_root: Path, command: str) -> MergeOutcome:
    """`harness merge`: the shards' folders joined into one (refused, before anything is written,
    when they are not shards of one sweep)."""
    folders = [results_folder(f) for f in folders]
    merged = merge_documents([(str(f), load_results(f)) for f in folders], command)
    for folder in folders:  # their trees are copied: a planted link would bring its target's files along
        refuse_links(folder)
    out = new_results_folder(out_root, f"{merged.header.config.name or 'sweep'}-merged")
    for folder in folders:
        for name in MERGE_COPIED:
            if (folder / name).is_dir():
                # Slugs name cells, and each cell is in one shard: the trees do not collide.
                shutil.copytree(folder / name, out / name, dirs_exist_ok=True)
    write_files(out, merged)
    return MergeOutcome(out, merged.cells, merged.status_text, merged.header.config.name or "",
                        summary_of(merged.header, merged.cells))
