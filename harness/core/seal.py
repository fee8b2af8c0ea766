"""The seal of a state file the harness reads back and acts on (reduce.json, a bisection's state.json): an HMAC of
the document's canonical text, keyed by a secret the harness keeps in the user's cache folder (never in the
folder of the state it seals). A state edited, copied from another user or machine, or forged has no seal this key
makes, and is refused."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
from pathlib import Path
from typing import Any

from harness.core.bounded_read import read_bounded
from harness.core.errors import UserError

# The user's key, outside every reduction and bisection folder (one copied from elsewhere, or edited, has no seal
# this key makes). One key for every kind of state: a seal covers the document's own kind (its keys differ).
KEY_FILE = Path(os.environ.get("HARNESS_STATE_KEY", Path.home() / ".cache" / "jax-cache-harness" / "reduce-state.key"))
KEY_BYTES = 32
SEAL = "seal"
_DIGEST = re.compile(r"[0-9a-f]{64}")


def _read_key(key_file: Path) -> bytes | None:
    """The key file's bytes (a few past KEY_BYTES at most), None when there is none; UserError when something
    else is at its path. Opened without following a link and without blocking: a named pipe there hung the
    harness, and a link to /dev/zero was read until memory ran out."""
    found = read_bounded(key_file, KEY_BYTES)
    if found.missing:
        return None
    if found.problem:
        raise UserError(f"the state key {key_file} {found.problem}: not read (remove it, and a new key is made: "
                        "the states sealed with the old one are then refused; or set HARNESS_STATE_KEY to a file)")
    return found.data + (b"?" if found.capped else b"")  # longer than a key: not one


def state_key(key_file: Path) -> bytes:
    """The seal's key, made on first use (readable by the user only). Written whole or not at all (a temporary
    file linked into place), and its length checked on every read: a key cut short (made on a full disk,
    truncated) is made anew, so every seal made with it is refused, never one made with an empty key trusted."""
    key = _read_key(key_file)
    if key is not None and len(key) == KEY_BYTES:
        return key
    key_file.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=key_file.parent, prefix=f".{key_file.name}.")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(KEY_BYTES))
            out.flush()
            os.fsync(out.fileno())
        if key is not None:  # one cut short: replaced
            os.replace(temporary, key_file)
        else:
            try:
                os.link(temporary, key_file)  # first use: another process that made it meanwhile wins
            except FileExistsError:
                pass
    finally:
        Path(temporary).unlink(missing_ok=True)
    key = _read_key(key_file) or b""
    if len(key) != KEY_BYTES:
        raise OSError(f"the state key {key_file} could not be written whole ({len(key)} bytes)")
    return key


def seal_of(document: dict[str, Any], key: bytes) -> str:
    """The HMAC of a state document (without its seal), canonically serialised."""
    body = json.dumps({k: v for k, v in document.items() if k != SEAL}, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def seal_matches(document: dict[str, Any], key: bytes) -> bool:
    """Whether `document`'s seal is the one `key` makes of the rest of it. A seal is 64 hex digits: anything else
    (non-ASCII text, which compare_digest refuses with a TypeError) does not match."""
    given = document.get(SEAL)
    return isinstance(given, str) and bool(_DIGEST.fullmatch(given)) and hmac.compare_digest(given,
                                                                                             seal_of(document, key))
