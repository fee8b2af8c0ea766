"""The program's own packages named where they change (issue 51.5): optax 0.2.3 for one release and 0.2.8 for
the next, read from what each cell records (`environment.distributions`, `environment.requirements`); the table's
`packages` column, the summary line, a bisection's text."""

from __future__ import annotations



from harness.core.records import replace
from harness.report.bisect_section import bisect_text
from harness.results.bisect_results import Boundary, BisectSection, Role, Row
from harness.core.kinds import Verdict
from harness.report.table import render, summary_line
from harness.verdicts.boundaries import release_boundaries
from harness.evidence.program_packages import ProgramPackages, line_with_packages, requested_names
from tests.cells import cell

OPTAX = {"0.4.30": "0.2.3", "0.4.31": "0.2.3", "0.10.2": "0.2.8"}


def with_packages(version, verdict, optax=None, flax="0.8.5", requirements=("flax", "optax>=0.2")):
    found = cell(version, verdict)
    distributions = {"jax": version, "jaxlib": version, "Flax": flax, "optax": optax or OPTAX[version], "numpy": "2.0"}
    return replace(found, environment_facts={"distributions": distributions, "requirements": list(requirements)})


def test_requested_names_are_canonical():
    assert requested_names(["Flax", "optax>=0.2", "ml_dtypes[x]; python_version>'3'", "not a requirement ("]) == (
        "flax", "ml-dtypes", "optax")


def test_a_regression_that_coincides_with_a_package_change_names_it():
    cells = [with_packages("0.4.31", Verdict.CLEAN), with_packages("0.10.2", Verdict.REPRODUCED)]
    line = summary_line(cells)
    assert line == ("regression appears in 0.10.2 (last clean 0.4.31), where optax also changed 0.2.3 -> 0.2.8 here: "
                    "the program's own package, so the change may be its, not JAX's (pin it to tell: --with "
                    "optax==0.2.3); not fixed in this range")
    table = render(cells)
    assert table.splitlines()[0].split("|")[-3].strip() == "packages"
    assert "| optax 0.2.3 |" in table and "| optax 0.2.8 |" in table
    assert "flax" not in table  # the same on both: not said


def test_a_fix_that_coincides_with_a_change_names_it_and_a_boundary_without_one_is_plain():
    cells = [with_packages("0.4.30", Verdict.CLEAN), with_packages("0.4.31", Verdict.REPRODUCED),
             with_packages("0.10.2", Verdict.CLEAN, flax="0.12.7")]
    line = summary_line(cells)
    assert line.startswith("regression appears in 0.4.31 (last clean 0.4.30); fixed in 0.10.2, where flax also "
                           "changed 0.8.5 -> 0.12.7 and optax 0.2.3 -> 0.2.8 here: the program's own packages, so the "
                           "change may be theirs, not JAX's (pin them to tell: --with flax==0.8.5 --with optax==0.2.3)")


def test_packages_that_differ_at_no_boundary_are_still_said():
    cells = [with_packages("0.4.30", Verdict.CLEAN), with_packages("0.4.31", Verdict.CLEAN),
             with_packages("0.10.2", Verdict.CLEAN)]
    assert summary_line(cells) == ("not reproduced in this range; the program's packages differ between releases: "
                                   "optax 0.2.3 on 0.4.30-0.4.31, 0.2.8 on 0.10.2")


def test_without_requested_packages_nothing_changes():
    cells = [with_packages("0.4.31", Verdict.CLEAN, requirements=()),
             with_packages("0.10.2", Verdict.REPRODUCED, requirements=())]
    assert summary_line(cells) == "regression appears in 0.10.2 (last clean 0.4.31); not fixed in this range"
    assert "packages" not in render(cells)
    # Packages JAX itself brings (numpy here) are not the program's: never named, even when they differ.
    cells = [replace(c, environment_facts={**c.environment_facts,
                                           "distributions": {**c.environment_facts["distributions"], "numpy": v}})
             for c, v in zip([with_packages("0.4.31", Verdict.CLEAN, requirements=("optax",), optax="0.2.3"),
                              with_packages("0.10.2", Verdict.REPRODUCED, requirements=("optax",), optax="0.2.3")],
                             ("1.26", "2.0"))]
    assert summary_line(cells) == "regression appears in 0.10.2 (last clean 0.4.31); not fixed in this range"


def test_the_headers_requirements_count_where_cells_do_not_record_them():
    cells = [with_packages("0.4.31", Verdict.CLEAN, requirements=()),
             with_packages("0.10.2", Verdict.REPRODUCED, requirements=())]
    packages = ProgramPackages.of(cells, ["optax"])
    found = release_boundaries(cells)
    assert "optax also changed 0.2.3 -> 0.2.8 here" in line_with_packages(lambda also: found.line(also=also), packages)


def test_a_bisection_names_the_change_at_its_boundary_and_in_its_table():
    cells = [with_packages("0.4.31", Verdict.CLEAN), with_packages("0.10.2", Verdict.REPRODUCED)]
    outcome = BisectSection(Boundary("0.4.31", "0.10.2"), None, None,
                      [Row("0.4.31", Role.ENDPOINT, Verdict.CLEAN, 11, 0.001, ""),
                       Row("0.10.2", Role.ENDPOINT, Verdict.REPRODUCED, 2, None, "")])
    text = bisect_text(outcome, "harness bisect train.py", packages=ProgramPackages.of(cells))
    # (Markdown: report.md's section is this text, so `>` is an entity)
    assert "regression appears in 0.10.2 (last clean 0.4.31), where optax also changed 0.2.3 -&gt; 0.2.8 here" in text
    assert "| packages" in text and "optax 0.2.8" in text
    # Without the packages (a bisection of a config without requirements): as before.
    assert "packages" not in bisect_text(outcome, "harness bisect c.yaml")
