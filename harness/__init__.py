"""Reproduce JAX persistent-compilation-cache regressions version by version.

The package is layered; a module imports only from layers below its own (pyproject.toml's
import-linter contract, checked by the tests): cli -> service -> output (results, table, report,
writer, nightly, shards) -> measurement (seeds, runner, sweep, bisect) -> environments -> pure core
(model, config, versions, listing, analysis, run_env, progress, files, errors, repros).
"""

__version__ = "0.1.0"
