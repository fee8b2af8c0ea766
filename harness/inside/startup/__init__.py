"""Code that runs inside a user's script's process, not in the harness: the runner puts this folder
first on the run's PYTHONPATH, so Python's start-up imports `sitecustomize` from here (see
`jax_cache_harness_hook`). Nothing here imports the harness; it must run on any interpreter JAX does."""

from importlib.resources import files
from pathlib import Path

# The folder a run's PYTHONPATH starts with (mounted read-only into containers).
# Through importlib.resources, so an installed wheel finds it as a checkout does (a real folder: mounted).
STARTUP_DIR = Path(str(files(__name__))).resolve()
