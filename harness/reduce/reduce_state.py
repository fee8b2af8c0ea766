"""What a reduction has found so far, in its folder (`reduce.json`, rewritten atomically at every new best and at
most every 2 s otherwise, and whenever the reduction stops: `SaveSchedule`): the original and its signature, the seeds, the best program, every candidate's answer by
digest. `--resume` reads it back and goes on from the best program, the memo answering what was tried.

`--resume` runs the best program, so it must be one this reducer wrote: the state is sealed (an HMAC of its
whole text, keyed by a secret the harness keeps in the user's cache folder, never in the reduction's), and a
state whose seal does not match is refused, as is any field of the wrong type or range. A state written
before seals (version 1 or 2) resumes from the original, its memo kept: its best program is never run."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from harness.core.errors import UserError
from harness.core.factors import Factor
from harness.core.files import MAX_FLOAT, REDUCE_STATE_FILE, read_json_bounded, write_atomic
from harness.core.kinds import FolderMode
from harness.core.seal import KEY_FILE as SEAL_KEY_FILE, SEAL, seal_matches, seal_of, state_key
from harness.core.records import convert, plain
from harness.reduce.search import Tried
from harness.results.reduce_results import Signature

STATE_FILE = REDUCE_STATE_FILE
BEST_FILE = "best.py"  # the best program so far (the search's form), for a look while it works
# 2: vary, processes and a job's launches as seeds (1 reads as a plain cell's); 3: sealed.
STATE_VERSION = 3
SEALED_FROM = 3
MAX_STATE_BYTES = 64 << 20
# The seal's key: the user's, outside every reduction folder (a folder copied from elsewhere, or edited, has no
# seal this key makes).
KEY_FILE = SEAL_KEY_FILE
MAX_TIMEOUT_S = 7 * 24 * 3600.0
MAX_SEED = 2 ** 32 - 1
MAX_PROCESSES = 1024

# The checks on what a state file may hold (a hostile one included), as the types msgspec reads it by.
Digest = Annotated[str, Meta(pattern=r"\A[0-9a-f]{64}\Z", description="a sha256 digest (64 hex digits)")]
Seed = Annotated[int, Meta(ge=0, le=MAX_SEED)]
JobSeeds = Annotated[tuple[Seed, ...], Meta(min_length=1, max_length=MAX_PROCESSES)]  # a seed per process
Seconds = Annotated[float, Meta(ge=0, le=MAX_FLOAT)]
AbsolutePath = Annotated[str, Meta(pattern=r"\A/[^\x00]*\Z", description="an absolute path")]
Status = Annotated[Literal["running", "interrupted", "complete"],
                   Meta(description="one of running, interrupted, complete")]


class ReduceState(msgspec.Struct, omit_defaults=True):
    """reduce.json's document (less its seal), read strictly by msgspec (`read_state`)."""

    script: str  # the original, as given
    original_digest: Digest  # of its text: a resumed reduction must reduce the same program
    bad: str
    good: str | None
    signature: Signature
    bad_seeds: Annotated[list[Seed | JobSeeds], Meta(min_length=1)]  # a job's launches: a seed per process
    timeout_s: Annotated[float, Meta(gt=0, le=MAX_TIMEOUT_S)]
    best: str
    # Every candidate's answer by its digest; the file holds those measured (Tried.measured: True, not written),
    # and read_state reads them as remembered (measured False).
    memo: dict[Digest, Tried] = {}
    measured: Annotated[int, Meta(ge=0, le=1 << 40)] = 0
    seconds: Seconds = 0.0  # spent in the search, over all resumptions
    check_seconds: Seconds = 0.0  # the original's check on the bad release (its cell's runs)
    status: Status = "running"
    folder: FolderMode | None = None  # how the original's runs got the cache folder (candidates get it so)
    vary: tuple[Factor, ...] = ()  # --vary's factors as given (a resumed reduction must be given the same)
    processes: Annotated[int, Meta(ge=1, le=MAX_PROCESSES)] = 1  # --processes
    # How the original's disagreeing processes died (measure.own_failures).
    tolerated: tuple[str, ...] = msgspec.field(default=(), name="tolerated_failures")
    # Where the original wrote outside its folders (sandbox.write_places): a candidate may write there too, to
    # a stand-in of its own under bubblewrap. Sealed: a planted place would be a place candidates may write.
    places: tuple[AbsolutePath, ...] = msgspec.field(default=(), name="write_places")
    run_seconds: Seconds = 0.0  # the original's mean run there: what a candidate's run costs (0: not recorded)
    # The original's run connected over the network (the write watch's record): its candidates keep the machine's
    # network under bubblewrap (docs/reduce.md). Sealed, as `places` is.
    network: bool = False
    # As read (a file without one is from before versions: 1); save writes STATE_VERSION.
    version: Annotated[int, Meta(ge=1, le=STATE_VERSION)] = 1

    @property
    def unsealed(self) -> bool:
        """Read from before seals: load_state set its best aside (the original's instead)."""
        return self.version < SEALED_FROM

    def document(self) -> dict[str, Any]:
        """What save writes (less the seal): this version, the times to the millisecond, the memo's answers."""
        written = msgspec.structs.replace(
            self, version=STATE_VERSION, seconds=round(self.seconds, 3), check_seconds=round(self.check_seconds, 3),
            run_seconds=round(self.run_seconds, 3),
            memo={k: msgspec.structs.replace(v, measured=True) for k, v in self.memo.items()})
        document: dict[str, Any] = plain(written)
        return document

    def save(self, folder: Path) -> None:
        document = self.document()
        document[SEAL] = seal(document)
        write_atomic(folder / STATE_FILE, msgspec.json.format(msgspec.json.encode(document), indent=1).decode() + "\n")
        write_atomic(folder / BEST_FILE, self.best)


@dataclass
class SaveSchedule:
    """When the search writes its state: at every new best, else once `every_s` passed since the last write. Each
    write is the sealed state and best.py, each fsynced (10-20 ms on this machine), which the search's main thread
    waited for after every answer (800 a reduction of the training script) while a slot stood idle. Whatever
    stops the reduction (its end, Ctrl-C, SIGTERM) writes it too; one killed outright may run the answers of its
    last `every_s` again on --resume (nothing else is lost: each is a candidate's answer, memoised)."""

    every_s: float = 2.0
    _last: float | None = None
    _best: str | None = None

    def due(self, best: str, now: float) -> bool:
        if self._last is not None and best == self._best and now - self._last < self.every_s:
            return False
        self._last, self._best = now, best
        return True


class StateProblem(ValueError):
    """A field of reduce.json of the wrong type or range (the message names it)."""


def read_state(data: Any) -> ReduceState:
    """The state in `data` (JSON's types), its memo's answers remembered, not measured now; StateProblem (one line
    naming the first field of the wrong type or range) otherwise."""
    if not isinstance(data, dict):
        raise StateProblem(f"not a reduce state (a JSON object), but {type(data).__name__}")
    try:
        state = convert(data, ReduceState)
    except ValueError as exc:
        raise StateProblem(str(exc)) from None
    try:
        ast.parse(state.best)  # its text is a program (a sealed one is run)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise StateProblem("best: not Python this harness can parse") from None
    state.memo = {k: msgspec.structs.replace(v, measured=False) for k, v in state.memo.items()}
    return state




def _key() -> bytes:
    """The seal's key (harness/core/seal.py's rules), from KEY_FILE."""
    return state_key(KEY_FILE)


def seal(document: dict[str, Any]) -> str:
    """The HMAC of a state document (without its seal), canonically serialised."""
    return seal_of(document, _key())


def load_state(folder: Path, original: str) -> ReduceState:
    """The state of the reduction in `folder`, of the program `original`; UserError (one line, exit 2) for
    a state of the wrong type or range, or a sealed one whose seal this user's key did not make. A state
    from before seals resumes from `original` (its best program is never run)."""
    path = folder / STATE_FILE
    if not path.exists():
        raise UserError(f"--resume {folder}: no {STATE_FILE} there (not a harness reduce folder)")
    data = read_json_bounded(path, MAX_STATE_BYTES, "reduce state file")
    try:
        state = read_state(data)
    except StateProblem as exc:
        raise UserError(f"--resume {folder}: {STATE_FILE} is not a reduce state: {exc}") from None
    if state.version >= SEALED_FROM:
        if not seal_matches(data, _key()):
            raise UserError(f"--resume {folder}: {STATE_FILE} was not written by this reducer as it stands (its "
                            "seal does not match: edited, or made by another user or machine); its programs are "
                            "not run: reduce again without --resume")
    else:
        state.best = original  # unsealed: nothing it holds is run; its memo only answers what was tried
    return state
