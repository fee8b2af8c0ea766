"""Reproduce JAX persistent-compilation-cache regressions version by version.

A folder per stage, layered (pyproject.toml's import-linter contract, checked by the tests; docs/architecture.md):
cli -> service -> reduce -> bisect, nightly, slurm, output -> report -> results, measure -> environments ->
verdicts, inputs (pure) -> evidence (pure) -> core (pure) -> inside (programs run in an environment: they import nothing).
"""

# The version has one source, pyproject.toml, read at run time: harness.core.files.harness_version().
