"""Code that runs inside a user's script's process, not in the harness: the runner puts a copy of this folder
first on the run's PYTHONPATH (`startup_dir`), so Python's start-up imports `sitecustomize` from there (see
`jax_cache_harness_hook`). Nothing here imports the harness; it must run on any interpreter JAX does."""

import functools
import hashlib
import os
import shutil
import tempfile
from importlib.resources import files
from pathlib import Path

# The package's own folder, through importlib.resources so an installed wheel finds it as a checkout does. Never
# on a run's path: a run's Python writes bytecode beside what it imports (`__pycache__`, pytest's rewritten
# plugin), and a run must write nothing into the installed package.
SOURCE_DIR = Path(str(files(__name__))).resolve()


def environments_root() -> Path:
    """Where the releases' environments are kept: HARNESS_ENV_DIR, else the user's cache folder."""
    return Path(os.environ.get("HARNESS_ENV_DIR") or Path.home() / ".cache" / "jax-cache-harness" / "envs")


def copies_root() -> Path:
    """Where the copies are kept: beside the releases' environments, which every machine of a Slurm job
    already shares."""
    return environments_root() / ".startup"


@functools.cache
def startup_dir() -> Path:
    """The folder a run's PYTHONPATH starts with (mounted read-only into containers): a copy of this folder's
    files, one per content (`<root>/<digest>`), made once and shared by every run and harness that has the same
    files; the runs' bytecode is written there."""
    sources = sorted(p for p in SOURCE_DIR.iterdir() if p.suffix == ".py")
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    target = copies_root() / digest.hexdigest()[:16]
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    made = Path(tempfile.mkdtemp(prefix=".making-", dir=target.parent))
    for path in sources:
        shutil.copyfile(path, made / path.name)
    made.chmod(0o755)
    try:
        made.rename(target)
    except OSError:  # another harness made it first: the same files
        shutil.rmtree(made, ignore_errors=True)
        if not target.is_dir():
            raise
    return target
