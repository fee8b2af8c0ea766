"""Python imports this at start-up in every run of a user's script (the harness puts this folder first
on PYTHONPATH). It installs the harness's cache hook, then runs the `sitecustomize` this one shadows
(the virtualenv's, the image's or the user's own), so a run starts exactly as it would without us.
Standard library only; the annotations are never evaluated (see jax_cache_harness_hook)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

TYPE_CHECKING = False  # typing's, without importing typing at start-up (jax_cache_harness_hook says why)
if TYPE_CHECKING:  # the same file, as the type checker sees it (in harness/); never run
    from . import jax_cache_harness_hook, jax_cache_harness_recorder
else:
    import jax_cache_harness_hook  # this folder is first on sys.path: the hook's own top-level name
    import jax_cache_harness_recorder


def _chain() -> None:
    """Run the next `sitecustomize` on sys.path, the one Python would have run without this folder."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if os.environ.get(jax_cache_harness_hook.RECORD_VAR):
    jax_cache_harness_hook.install()
if os.environ.get(jax_cache_harness_recorder.RECORDER_VAR):
    jax_cache_harness_recorder.install_recorder(os.environ.get(jax_cache_harness_hook.KEPT_TARGET_VAR))
if os.environ.get(jax_cache_harness_hook.WRITE_ROOTS_VAR) and os.environ.get(jax_cache_harness_hook.WRITES_RECORD_VAR):
    jax_cache_harness_hook.install_write_watch()
if os.environ.get(jax_cache_harness_hook.DEVICES_VAR):
    jax_cache_harness_hook.install_devices_record()
if os.environ.get(jax_cache_harness_hook.JOB_PROCESSES_VAR):
    jax_cache_harness_hook.install_job()
_chain()
