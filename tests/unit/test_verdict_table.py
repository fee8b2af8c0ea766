"""docs/reference/verdicts.md holds every verdict and every cause the harness judges with: each enum below has a
table under its heading whose first column names every member's value, and nothing else, so a member added
to the code without its row (or a row left of one removed) fails here."""

from __future__ import annotations

import enum
import re
from pathlib import Path

import pytest

from harness.core.comparison import Moved
from harness.core.factors import FactorOutcome
from harness.core.kinds import Cause, NothingCached, Verdict
from harness.evidence.misses import Category, Follows
from harness.nightly.compare import Change
from harness.report.evidence import ProgramsDiffer

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "verdicts.md"
# Each enum -> the header of the first column of its table on the page.
TABLES: dict[type[enum.Enum], str] = {
    Verdict: "verdict", Category: "category", Moved: "decision", Follows: "follows", Cause: "cause",
    ProgramsDiffer: "programs differ in", NothingCached: "cause", FactorOutcome: "outcome", Change: "change"}
# Two enums share a first column's header: told apart by the heading they come under.
HEADINGS = {Cause: "## The likely cause", NothingCached: "## Why nothing was cached"}


def first_columns(text: str) -> list[tuple[str, list[str]]]:
    """Each table on the page: its first column's header and the code spans of its first column."""
    tables: list[tuple[str, list[str]]] = []
    for block in re.findall(r"(?m)((?:^\|.*\|\n)+)", text):
        rows = [line.split("|")[1].strip() for line in block.splitlines()]
        tables.append((rows[0], [re.fullmatch(r"`([^`]+)`", cell).group(1) if re.fullmatch(r"`([^`]+)`", cell)
                                 else cell for cell in rows[2:]]))
    return tables


def table_of(kind: type[enum.Enum], text: str) -> list[str]:
    section = text.split(HEADINGS[kind], 1)[1].split("\n## ", 1)[0] if kind in HEADINGS else text
    found = [values for header, values in first_columns(section) if header == TABLES[kind]]
    assert found, f"{PAGE.name} has no table headed `{TABLES[kind]}` for {kind.__name__}"
    return found[0]


@pytest.mark.parametrize("kind", list(TABLES), ids=lambda k: k.__name__)
def test_the_table_names_every_member(kind: type[enum.Enum]):
    rows = table_of(kind, PAGE.read_text())
    values = [str(member.value) for member in kind]
    missing = [v for v in values if v not in rows]
    assert not missing, f"{PAGE.name}'s {kind.__name__} table lacks {missing}: add a row each (what it means, what to do)"
    assert sorted(rows) == sorted(values), f"{PAGE.name}'s {kind.__name__} table has rows the code lacks: {rows}"


def test_every_row_says_what_it_means_and_what_to_do():
    for block in re.findall(r"(?m)((?:^\|.*\|\n)+)", PAGE.read_text()):
        for line in block.splitlines()[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            assert len(cells) == 3 and all(cells), f"a row without its meaning or what to do: {line}"
