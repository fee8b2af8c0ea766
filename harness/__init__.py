"""Reproduce JAX persistent-compilation-cache regressions version by version.

The package is layered; a module imports only from layers below its own (pyproject.toml's
import-linter contract, checked by the tests): cli -> service -> output (results, table, report,
writer, nightly, shards, slurm) -> measurement (seeds, runner, sweep, bisect) -> environments -> pure
core (tally, analysis, run_env, progress, config, versions, listing, model, identity, confidence, files,
errors; repros and the seed probe, which import nothing). Every module has a layer (tests/unit/test_layers.py).
"""

# The version has one source, pyproject.toml, read at run time: harness.files.harness_version().
