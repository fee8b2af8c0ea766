"""Inter-process locks for what sweeps share: a venv or image being made, the wheelhouse's downloads.

Two sweeps that need the same new environment at the same time (two shards on one node, two users of
one HARNESS_ENV_DIR) would otherwise break each other: one deletes the other's half-made venv, both
write one install log. The second waits for the first and then reuses what it made. The locks are
`flock`s (through filelock): the kernel drops them when their process dies, so a killed sweep never
leaves a lock that blocks the next one.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from collections.abc import Iterator

from filelock import FileLock, Timeout

from harness.environments.base import Say, _quiet


@contextmanager
def held(lock_path: Path, what: str, say: Say = _quiet) -> Iterator[None]:
    """Hold the lock at `lock_path` for the block, saying so when another process has it first."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(lock_path, thread_local=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        say(f"waiting for another harness process that is preparing {what} (lock {lock_path})")
        lock.acquire()
    try:
        yield
    finally:
        lock.release()
