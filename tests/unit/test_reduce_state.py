"""reduce.json as --resume reads it: every field checked by type and range, the size and depth bounded by
the results reader's rule, and a best program this reducer did not write (its seal does not match) refused
before anything runs; a state from before seals resumes from the original."""

import hashlib
import hmac
import json
from pathlib import Path

import msgspec
import pytest

from harness.core.errors import UserError
from harness.core.factors import Factor
from harness.core.kinds import Cause, FolderMode
from harness.core import seal as seal_module
from harness.reduce import reduce_state as state_module
from harness.reduce.search import Tried
from harness.results.reduce_results import Signature
from harness.reduce.reduce_state import STATE_FILE, ReduceState, load_state

ORIGINAL = "import jax\nprint(jax.jit(lambda x: x)(1))\n"


@pytest.fixture(autouse=True)
def own_key(tmp_path, monkeypatch):
    monkeypatch.setattr(state_module, "KEY_FILE", tmp_path / "key" / "reduce-state.key")


def _state() -> ReduceState:
    return ReduceState("train.py", "d" * 64, "0.4.28", "0.4.29", Signature("jit_f", ("computation",), Cause.ORDER),
                       [1, 2, (3, 4)], 24.0, "import jax\n", {"a" * 64: Tried(False, "crashed")}, measured=5)


def _written(where, **changes):
    """A sealed state with `changes` made to its document afterwards, as an edit would."""
    _state().save(where)
    data = json.loads((where / STATE_FILE).read_text())
    data.update(changes)
    (where / STATE_FILE).write_text(json.dumps(data))
    return data


def test_a_sealed_state_reads_back(tmp_path):
    _state().save(tmp_path)
    again = load_state(tmp_path, ORIGINAL)
    assert again.document() == _state().document() and not again.unsealed
    assert state_module.KEY_FILE.stat().st_mode & 0o077 == 0  # the user's alone


def test_a_planted_best_is_refused(tmp_path):
    _written(tmp_path, best="open('/tmp/planted', 'w').write('ran')\n")
    with pytest.raises(UserError, match="seal does not match.*not run"):
        load_state(tmp_path, ORIGINAL)


def test_a_planted_state_with_a_recomputed_digest_is_refused(tmp_path):
    # The digests are plain sha256: anyone can recompute them; the seal needs the user's key.
    data = _written(tmp_path, best="print('planted')\n")
    data["seal"] = hashlib.sha256(json.dumps(data).encode()).hexdigest()
    (tmp_path / STATE_FILE).write_text(json.dumps(data))
    with pytest.raises(UserError, match="seal does not match"):
        load_state(tmp_path, ORIGINAL)


def test_a_state_from_before_seals_resumes_from_the_original(tmp_path):
    data = _state().document()
    data["version"] = 2
    data["best"] = "print('planted')\n"
    (tmp_path / STATE_FILE).write_text(json.dumps(data))
    state = load_state(tmp_path, ORIGINAL)
    assert state.best == ORIGINAL and state.unsealed and state.memo


@pytest.mark.parametrize("field, value, fragment", [
    ("timeout_s", -1, "timeout_s: Expected `float` > 0.0"),
    ("timeout_s", "20", "timeout_s: Expected `float`, got `str`"),
    ("timeout_s", 8 * 24 * 3600, "timeout_s: Expected `float` <= 604800.0"),
    ("bad_seeds", "abc", "bad_seeds: Expected `array`, got `str`"),
    ("bad_seeds", [1, -2], "bad_seeds[1]: Expected `int` >= 0"),
    ("bad_seeds", [True], "bad_seeds[0]: Expected `int | array`, got `bool`"),  # ... and here
    ("bad_seeds", [], "bad_seeds: Expected `array` of length >= 1"),
    ("bad_seeds", [[1, 2], []], "bad_seeds[1]: Expected `array` of length >= 1"),
    ("bad_seeds", [[1, 2 ** 32]], "bad_seeds[0][1]: Expected `int` <= 4294967295"),
    ("version", 99, "version: Expected `int` <= 3"),
    ("memo", [], "memo: Expected `object`, got `array`"),
    ("memo", {"x": {"kept": True}}, "matching regex '\\\\A[0-9a-f]{64}\\\\Z' - at `key` in `$.memo`"),
    ("memo", {"a" * 64 + "\n": {"kept": True}}, "at `key` in `$.memo`"),
    ("memo", {"a" * 64: {"kept": "yes"}}, "memo[...].kept: Expected `bool`, got `str`"),
    ("best", "def (:\n", "best: not Python"),
    ("best", 3, "best: Expected `str`, got `int`"),
    ("signature", [], "signature: Expected `object`, got `array`"),
    ("signature", {"module": "jit_f", "cause": "nonsense"}, "signature.cause: Invalid enum value 'nonsense'"),
    ("signature", {"module": 3}, "signature.module: Expected `str`, got `int`"),
    ("status", "done", "status: Invalid enum value 'done'"),
    ("processes", 0, "processes: Expected `int` >= 1"),
    ("measured", -1, "measured: Expected `int` >= 0"),
    ("vary", ["nonsense"], "vary[0]: Invalid enum value 'nonsense'"),
    ("folder", "elsewhere", "folder: Invalid enum value 'elsewhere'"),
    ("original_digest", "abc", "original_digest: Expected `str` matching regex"),
    ("good", 4, "good: Expected `str | null`, got `int`"),
    ("tolerated_failures", [3], "tolerated_failures[0]: Expected `str`, got `int`"),
])
def test_a_field_of_the_wrong_type_or_range_is_one_line(tmp_path, field, value, fragment):
    _written(tmp_path, **{field: value})
    with pytest.raises(UserError, match="reduce.json is not a reduce state") as caught:
        load_state(tmp_path, ORIGINAL)
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("text, fragment", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("[]", "not a reduce state (a JSON object), but list"),
    ("\xff", "not a readable reduce state file"),
])
def test_a_document_that_is_no_state_is_one_line(tmp_path, text, fragment):
    (tmp_path / STATE_FILE).write_text(text)
    with pytest.raises(UserError, match="reduce") as caught:
        load_state(tmp_path, ORIGINAL)
    assert fragment in str(caught.value)


def test_a_state_larger_than_the_bound_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(state_module, "MAX_STATE_BYTES", 1 << 20)
    (tmp_path / STATE_FILE).write_text(" " * (2 << 20))
    with pytest.raises(UserError, match="larger than 1 MiB: not a harness reduce state file"):
        load_state(tmp_path, ORIGINAL)


@pytest.mark.parametrize("field, value, fragment", [("timeout_s", float("nan"), "NaN is not a JSON number"),
                                                    ("seconds", float("inf"), "Infinity is not a JSON number")])
def test_a_number_strict_json_has_not_is_refused_by_the_reader_in_one_line(tmp_path, field, value, fragment):
    _written(tmp_path, **{field: value})  # json.dumps writes NaN and Infinity: no strict reader takes them
    with pytest.raises(UserError, match="not a harness reduce state file") as caught:
        load_state(tmp_path, ORIGINAL)
    assert fragment in str(caught.value) and "\n" not in str(caught.value)

# ---- the seal's key (issue 49 item 3) and a seal that is not text of hex digits (item 15) ----------------------

def _sealed_with_an_empty_key(where):
    """A planted state, sealed as the harness sealed it when its key file was left at 0 bytes: HMAC(b"")."""
    data = _state().document()
    data["best"] = "open('/tmp/planted-by-an-empty-key', 'w').write('ran')\n"
    body = json.dumps(data, sort_keys=True, separators=(",", ":"))
    data["seal"] = hmac.new(b"", body.encode(), hashlib.sha256).hexdigest()
    (where / STATE_FILE).write_text(json.dumps(data))


@pytest.mark.parametrize("left", [b"", b"short"])
def test_a_key_file_cut_short_is_made_anew_and_the_seals_made_with_it_refused(tmp_path, left):
    state_module.KEY_FILE.parent.mkdir(parents=True)
    state_module.KEY_FILE.write_bytes(left)  # made on a full disk, or truncated
    _sealed_with_an_empty_key(tmp_path)
    with pytest.raises(UserError, match="seal does not match"):
        load_state(tmp_path, ORIGINAL)
    assert len(state_module.KEY_FILE.read_bytes()) == seal_module.KEY_BYTES
    assert state_module.KEY_FILE.stat().st_mode & 0o077 == 0


def test_a_key_that_cannot_be_written_whole_leaves_no_key_file(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(seal_module.os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        _state().save(tmp_path)
    assert not state_module.KEY_FILE.exists()  # no empty key left behind for the next seal
    assert list(state_module.KEY_FILE.parent.iterdir()) == []
    monkeypatch.undo()
    monkeypatch.setattr(state_module, "KEY_FILE", tmp_path / "key" / "reduce-state.key")
    _state().save(tmp_path)
    assert load_state(tmp_path, ORIGINAL).document() == _state().document()


@pytest.mark.parametrize("seal", ["é" * 64, "\udcff", "g" * 64, 7])
def test_a_seal_that_is_not_hex_digits_is_one_line(tmp_path, seal):
    _written(tmp_path, seal=seal)
    with pytest.raises(UserError, match="seal does not match"):
        load_state(tmp_path, ORIGINAL)


def test_the_places_the_original_wrote_are_sealed_and_checked(tmp_path):
    msgspec.structs.replace(_state(), places=("/tmp/ckpt", "/var/tmp/log.txt")).save(tmp_path)
    assert load_state(tmp_path, ORIGINAL).places == ("/tmp/ckpt", "/var/tmp/log.txt")
    _written(tmp_path, write_places=["/tmp/ckpt", "/home"])
    with pytest.raises(UserError, match="seal does not match"):
        load_state(tmp_path, ORIGINAL)
    _written(tmp_path, write_places=["relative"])
    with pytest.raises(UserError, match=r"write_places\[0\]: Expected `str` matching regex"):
        load_state(tmp_path, ORIGINAL)


# ---- reduce.json as earlier code wrote it: --resume still reads it (issue 50 item 1) ---------------------------
# Each folder was written by that code's ReduceState.save (release 0.1.0's, and main's at 7e8655d, the last before
# the state became a msgspec Struct), sealed with the key below: a job's reduction, interrupted, and a --vary one.
FIXTURES = Path(__file__).parents[1] / "fixtures"
FIXTURE_KEY = bytes(range(32))
WRITTEN_BEFORE = ["reduce-state-0.1.0", "reduce-state-7e8655d"]
FIXTURE_BEST = "import jax\nimport jax.numpy as jnp\nprint(jax.jit(lambda x: jnp.sum(x))(jnp.ones(8)))\n"


def _fixture(release, kind, tmp_path):
    state_module.KEY_FILE.parent.mkdir(parents=True)
    state_module.KEY_FILE.write_bytes(FIXTURE_KEY)
    folder = FIXTURES / release / kind
    return load_state(folder, (folder / "train.py").read_text())


@pytest.mark.parametrize("release", WRITTEN_BEFORE)
def test_a_job_s_state_written_before_reads(release, tmp_path):
    state = _fixture(release, "job", tmp_path)
    assert (state.script, state.bad, state.good, state.timeout_s) == ("/home/u/train.py", "0.4.28", "0.4.29", 600.0)
    assert state.signature == Signature("jit_f", ("computation", "devices"), Cause.ORDER, ranks=(0, 1))
    assert state.bad_seeds == [(11, 12), (13, 14)] and state.processes == 2 and state.tolerated == ("SIGABRT",)
    assert state.folder == FolderMode.ENVIRONMENT and state.status == "interrupted" and state.vary == ()
    assert state.best == FIXTURE_BEST and not state.unsealed and state.version == 3
    assert state.memo == {"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb": Tried(True, "", False),
                          "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d":
                              Tried(False, "crashed: NameError", False),
                          "2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6":
                              Tried(False, "clean on 0.4.28", False)}
    assert (state.measured, state.seconds, state.check_seconds) == (3, 41.235, 9.877)
    assert state.places == () and state.run_seconds == 0.0


@pytest.mark.parametrize("release", WRITTEN_BEFORE)
def test_a_vary_state_written_before_reads_and_resumes_into_a_state_that_reads(release, tmp_path):
    state = _fixture(release, "vary", tmp_path)
    assert (state.script, state.bad, state.good, state.timeout_s) == ("train.py", "0.4.38", None, 120.0)
    assert state.signature == Signature("jit_f", ("compile_options",), None, factor=Factor.CACHE_PATH)
    assert state.bad_seeds == [7, 8, 9] and state.processes == 1 and state.tolerated == ()
    assert state.folder == FolderMode.HOOK and state.status == "complete" and state.vary == ("cache-path",)
    assert state.best == FIXTURE_BEST and not state.unsealed and len(state.memo) == 3
    assert (state.measured, state.seconds, state.check_seconds) == (3, 12.5, 3.0)
    newer = release != "reduce-state-0.1.0"  # write_places and run_seconds came after 0.1.0
    assert state.places == (("/tmp/ckpt",) if newer else ()) and state.run_seconds == (1.234 if newer else 0.0)
    state.status = "running"  # as --resume goes on: saved by this release, read back by it
    state.save(tmp_path)
    again = load_state(tmp_path, "")
    assert again.status == "running" and again.memo == state.memo and again.best == state.best
    assert again.signature == state.signature and again.places == state.places and again.vary == state.vary


def test_the_state_is_written_at_every_new_best_and_otherwise_at_most_every_2_s():
    from harness.reduce.reduce_state import SaveSchedule
    saving = SaveSchedule()
    assert saving.due("a\n", 100.0)  # the first answer
    assert not saving.due("a\n", 100.5) and not saving.due("a\n", 101.9)  # rejections, within 2 s: not written
    assert saving.due("b\n", 102.0)  # a new best: at once
    assert not saving.due("b\n", 103.9) and saving.due("b\n", 104.0)  # 2 s after the last write


@pytest.mark.parametrize("plant", ["fifo", "dev-zero", "folder", "link"])
def test_a_key_file_that_is_no_regular_file_is_one_line_and_never_read(tmp_path, plant):
    """Issue 73 #5: the key file as a named pipe hung the harness, as a link to /dev/zero it was read until
    MemoryError. Opened without following a link or blocking, at most a few bytes read: one line, exit 2."""
    import os
    import threading

    key = state_module.KEY_FILE
    key.parent.mkdir(parents=True)
    (tmp_path / "real.key").write_bytes(b"k" * seal_module.KEY_BYTES)
    {"fifo": lambda: os.mkfifo(key), "dev-zero": lambda: key.symlink_to("/dev/zero"), "folder": key.mkdir,
     "link": lambda: key.symlink_to(tmp_path / "real.key")}[plant]()
    raised: list[BaseException] = []

    def save() -> None:
        try:
            _state().save(tmp_path)
        except BaseException as exc:  # noqa: BLE001 - what it raised is the test's answer
            raised.append(exc)

    worker = threading.Thread(target=save, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # blocked on the pipe: unblock it so the test process can end
        with open(key, "wb"):
            pass
        pytest.fail("the key's read blocked")
    assert len(raised) == 1 and isinstance(raised[0], UserError), raised
    assert str(raised[0]).startswith(f"the state key {key} ") and "not read" in str(raised[0])
    assert not (tmp_path / STATE_FILE).exists()
