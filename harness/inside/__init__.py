"""Programs that run inside an environment, not in the harness: the built-in repros, the seed probe, the
start-up hook a user's script starts with (and its multi-process job probe), and the supervisor each run
starts under. Each runs on whatever interpreter the environment has (any Python JAX supports), alone.

The room's contract: nothing here imports from the harness (tests/unit/test_layers.py checks it, and the
layers contract puts the room at the bottom). The harness finds these files through importlib.resources
(harness/core/files.py: package_path), so an installed wheel runs them as a checkout does.
"""
