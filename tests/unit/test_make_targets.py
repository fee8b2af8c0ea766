"""Every Makefile target is run in CI (tests/make_targets.py says how): a new target fails here until it is."""

from __future__ import annotations

import re
from pathlib import Path

from tests.make_targets import TARGETS, THIS_TEST

ROOT = Path(__file__).resolve().parents[2]


def makefile_targets(text: str) -> tuple[set[str], set[str]]:
    """The targets with a rule (not variables, not the venv's stamp) and those declared .PHONY."""
    text = text.replace("\\\n", " ")
    rules = {m[1] for m in re.finditer(r"^([A-Za-z][\w-]*)\s*:(?![:?]?=)", text, re.MULTILINE)}
    declared = re.search(r"^\.PHONY:(.*)$", text, re.MULTILINE)
    phony = set(declared[1].split()) if declared else set()
    return rules, phony


def test_the_parser_sees_rules_and_not_variables():
    rules, phony = makefile_targets(".PHONY: a b \\\n\tc\nX := 1\nY ?= 2\na: $(STAMP)\n\techo\nb:\nc: a\n$(STAMP): x\n")
    assert rules == {"a", "b", "c"} and phony == {"a", "b", "c"}


def test_every_makefile_target_is_phony_and_run_in_ci():
    rules, phony = makefile_targets((ROOT / "Makefile").read_text())
    assert rules == phony, f"declared .PHONY but no rule: {sorted(phony - rules)}; a rule not .PHONY: {sorted(rules - phony)}"
    named = {t.name for t in TARGETS}
    assert len(named) == len(TARGETS), "a target named twice in tests/make_targets.py"
    assert rules == named, (f"not run in CI (add it to tests/make_targets.py): {sorted(rules - named)}; "
                            f"no longer in the Makefile: {sorted(named - rules)}")


def test_the_targets_ci_runs_itself_are_in_its_script():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.MULTILINE)
    assert re.search(r"^make base-image$", ci, re.MULTILINE) and "make base-image DEBIAN=trixie" in ci
    makefile = (ROOT / "Makefile").read_text()
    test_rule = re.search(r"^test: (.*)$", makefile, re.MULTILINE)
    assert test_rule is not None and {"lint", "typecheck", "site"} <= set(test_rule[1].split())
    elsewhere = {t.name for t in TARGETS if t.ran_by != THIS_TEST}
    assert elsewhere == {"test", "lint", "typecheck", "site", "base-image"}
