"""Code that runs inside a user's script's process, not in the harness: the runner puts this folder
first on the run's PYTHONPATH, so Python's start-up imports `sitecustomize` from here (see
`jax_cache_harness_hook`). Nothing here imports the harness; it must run on any interpreter JAX does."""

from pathlib import Path

# The folder a run's PYTHONPATH starts with (mounted read-only into containers).
STARTUP_DIR = Path(__file__).resolve().parent
