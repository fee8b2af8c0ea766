"""docs/schemas/*.json: the JSON Schemas of results.json, a results header's parts and a fingerprint, generated
from the types that read and write them (msgspec's schemas of harness/results/header.py's and
harness/core/model.py's Structs, which are shaped like the file), never written by hand. `make docs` writes them; tests/unit/test_schemas.py fails when a committed one differs from what the types
say, and validates every fixture folder's results.json (as upgraded to schema_version 3) against it.

A cell is typed to its last key: its runs, their processes and logged keys, its seeds, variation and cost. Keys a
cell's records do not know are let through (a newer release's), as the readers ignore them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from harness.core.model import CellResult
from harness.results.document import KEY_COMPONENTS
from harness.results.header import HostFacts, RecordedConfig, RecordedOptions
from harness.results.summary import Summary

SCHEMAS_DIR = Path("docs") / "schemas"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
REF = "#/$defs/{name}"


def _components() -> dict[str, Any]:
    _, defs = msgspec.json.schema_components((RecordedConfig, RecordedOptions, HostFacts, CellResult, Summary),
                                             ref_template=REF)
    # what a cell's file holds beside its Struct's fields: its keys' components, once per key (document.py)
    defs["CellResult"]["properties"][KEY_COMPONENTS] = {
        "type": "object", "description": "Each key's components (component -> hash), once per cell: a run's "
        "logged key without `components` has these", "additionalProperties": {
            "type": "object", "additionalProperties": {"type": "string"}}}
    return defs


def _document(title: str, description: str, properties: dict[str, Any], required: list[str],
              defs: dict[str, Any]) -> dict[str, Any]:
    used = _used(properties, defs)
    return {"$schema": DRAFT, "title": title, "description": description, "type": "object",
            "properties": properties, "required": required, "$defs": {k: defs[k] for k in sorted(used)}}


def _used(node: Any, defs: dict[str, Any], seen: set[str] | None = None) -> set[str]:
    seen = set() if seen is None else seen
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name not in seen:
                seen.add(name)
                _used(defs[name], defs, seen)
        for value in node.values():
            _used(value, defs, seen)
    elif isinstance(node, list):
        for value in node:
            _used(value, defs, seen)
    return seen


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(name=name)}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def schemas() -> dict[str, dict[str, Any]]:
    """File name -> schema."""
    defs = _components()
    text, texts = {"type": "string"}, {"type": "array", "items": {"type": "string"}}
    results = _document(
        "results.json", "A results folder's document (docs/results.md), as this release writes it: schema_version 3 (earlier ones read through harness/results/document.py's upgrade)",
        {"schema_version": {"type": "integer", "minimum": 1, "maximum": 3}, "created": _nullable(text), "command": text,
         "config": _ref("RecordedConfig"), "versions": texts, "options": _ref("RecordedOptions"),
         "host": _ref("HostFacts"), "finished": _nullable(text), "status": _nullable(text), "resumed": texts,
         "releases": texts, "cells": _nullable({"type": "array", "items": _ref("CellResult")})},
        ["schema_version"], defs)
    fingerprint = _document(
        "fingerprint", "harness fingerprint's file (docs/variation.md)",
        {"fingerprint": {"type": "integer"}, "source": _nullable(text), "host": _ref("HostFacts"),
         "cells": {"type": "array", "items": {"type": "object"}}}, ["fingerprint", "cells"], defs)
    config = {"$schema": DRAFT, "title": "config", "description": "The config as results.json records it "
              "(its `config`): a config file's keys as resolved when the sweep started", **defs["RecordedConfig"],
              "$defs": {k: defs[k] for k in sorted(_used(defs["RecordedConfig"], defs))}}
    config.pop("title", None)
    config["title"] = "config"
    summary = {"$schema": DRAFT, **{k: v for k, v in defs["Summary"].items() if k != "title"}, "title": "summary",
               "description": "What a measuring command prints with --json (docs/results.md): " + defs["Summary"]["description"],
               "$defs": {k: defs[k] for k in sorted(_used(defs["Summary"], defs))}}
    return {"results.schema.json": results, "config.schema.json": config, "fingerprint.schema.json": fingerprint,
            "summary.schema.json": summary}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    """`python -m harness.results.schemas [FOLDER]`: write every schema (default docs/schemas/)."""
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else SCHEMAS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas().items():
        (folder / name).write_text(render(schema))
        print(f"wrote {folder / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
