"""Parsing JAX's own cache log, from real logs of several releases (tests/fixtures/jax_logs, collected with
`JAX_DEBUG_LOG_MODULES=... JAX_LOGGING_LEVEL=DEBUG` on the seed and on the examples' scripts)."""

from pathlib import Path

import pytest

from harness.core.records import plain, convert
from harness.core import jaxlog
from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.listing import entries

LOGS = Path(__file__).parents[1] / "fixtures" / "jax_logs"
OLD_COMPONENTS = ["computation", "jax_lib version", "XLA flags", "compile_options", "accelerator_config",
                  "compression", "custom_hook"]
NEW_COMPONENTS = OLD_COMPONENTS[:2] + ["backend version"] + OLD_COMPONENTS[2:]
SEED_MODULES = ["jit__multi_slice", "jit_f", "jit_iota", "jit_reshape"]


def parse(name: str) -> RunLog:
    return jaxlog.parse((LOGS / name).read_text())


@pytest.mark.parametrize("version, components", [
    ("0.4.26", OLD_COMPONENTS), ("0.4.28", OLD_COMPONENTS), ("0.4.31", OLD_COMPONENTS),
    ("0.6.2", NEW_COMPONENTS), ("0.10.2", NEW_COMPONENTS)])
def test_first_run_of_each_release_writes_every_key_with_all_components(version, components):
    log = parse(f"seed-{version}-hs1-0.err")
    assert sorted(log.modules()) == SEED_MODULES
    assert all(len(keys) == 1 for keys in log.modules().values())
    for k in log.keys:
        assert k.outcome == Outcome.WRITTEN, k
        assert list(k.components) == components  # JAX's order and spelling, spaces included
        assert k.key.startswith(k.module + "-") and len(k.key) == len(k.module) + 65
    assert log.excluded_flags == ["--xla_force_host_platform_device_count=8"]


@pytest.mark.parametrize("version, later", [("0.4.26", "hs2-4"), ("0.4.31", "hs2-8"), ("0.6.2", "hs2-4"),
                                            ("0.10.2", "hs2-4")])
def test_a_later_run_hits_the_same_keys(version, later):
    """Hits before 0.4.31 name no key: the key comes from the running hash computed just before."""
    first, second = parse(f"seed-{version}-hs1-0.err"), parse(f"seed-{version}-{later}.err")
    assert second.modules() == first.modules()
    assert {k.outcome for k in second.keys} == {Outcome.HIT}
    assert all(second.by_key()[k.key].components == k.components for k in first.keys)


def test_the_logged_keys_are_the_entries_on_disk():
    """The key JAX logs is the file name it writes (listing-0.4.28: both runs' entries)."""
    written = {k.key for name in ("seed-0.4.28-hs1-0.err", "seed-0.4.28-hs2-4.err")
               for k in parse(name).with_outcome(Outcome.WRITTEN)}
    listing = (LOGS / "listing-0.4.28.txt").read_text().split()
    assert written == {e.key for e in entries(listing)}


def test_seed_on_0_4_28_only_the_computation_moves():
    a, b = parse("seed-0.4.28-hs1-0.err"), parse("seed-0.4.28-hs2-4.err")
    f_a, f_b = (next(k for k in log.keys if k.module == "jit_f") for log in (a, b))
    assert f_a.key != f_b.key and f_b.outcome == Outcome.WRITTEN
    assert jaxlog.differing_components(f_a, f_b) == ["computation"]
    for module in ("jit_iota", "jit_reshape", "jit__multi_slice"):
        assert b.modules()[module] == a.modules()[module]


def test_xla_flags_changed_after_start_move_only_the_xla_flags_component():
    a, b = parse("xla_flags-0.4.28-hs1.err"), parse("xla_flags-0.4.28-hs2.err")
    f_a, f_b = (next(k for k in log.keys if k.module == "jit_f") for log in (a, b))
    assert jaxlog.differing_components(f_a, f_b) == ["XLA flags"]


@pytest.mark.parametrize("version, moves", [("0.4.31", True), ("0.10.2", False)])
def test_host_callback_is_never_written_with_jax_reason(version, moves):
    a, b = parse(f"host_callback-{version}-hs1.err"), parse(f"host_callback-{version}-hs2.err")
    for log in (a, b):
        (f,) = [k for k in log.keys if k.module == "jit_f"]
        assert f.outcome == Outcome.NOT_WRITTEN
        assert f.reason.startswith("it uses host callbacks")
        assert f.components  # the key was computed: its components are known
    assert (a.modules()["jit_f"] != b.modules()["jit_f"]) == moves


def test_prefix_changes_and_repeated_lines_change_nothing():
    text = (LOGS / "seed-0.4.31-hs1-0.err").read_text()
    reprefixed = "\n".join("WARNING:jax._src.x:1: " + line.split(": ", 1)[-1] if line.startswith("DEBUG:") else line
                           for line in text.splitlines())
    doubled = "\n".join(line + "\n" + line for line in text.splitlines())
    expected = plain(jaxlog.parse(text))
    assert plain(jaxlog.parse(reprefixed)) == expected
    assert plain(jaxlog.parse(doubled)) == expected


def test_no_key_lines_is_empty():
    assert jaxlog.parse("hello\nTraceback (most recent call last):\n").empty
    assert "0.4.26" in jaxlog.no_keys_note("0.4.25")
    assert "changed logging" in jaxlog.no_keys_note("0.4.31")


def test_not_writing_by_key_and_size_reason():
    digest = "ab" * 32
    text = "\n".join([
        f"DEBUG:t:jax._src.cache_key:1: get_cache_key hash of serialized computation: {digest}",
        f"DEBUG:t:jax._src.cache_key:2: get_cache_key hash after serializing computation: {digest}",
        f"DEBUG:t:jax._src.compiler:3: PERSISTENT COMPILATION CACHE MISS for 'jit_g' with key 'jit_g-{digest}'",
        f"DEBUG:t:jax._src.compilation_cache:4: Not writing persistent cache entry with key 'jit_g-{digest}' "
        "since its size (10 bytes) is less than threshold (20 bytes)"])
    (k,) = jaxlog.parse(text).keys
    assert (k.module, k.outcome, k.components) == ("jit_g", Outcome.NOT_WRITTEN, {"computation": digest})
    assert k.reason == "its size (10 bytes) is less than threshold (20 bytes)"


def test_round_trip_through_json():
    log = parse("host_callback-0.4.31-hs1.err")
    assert plain(convert(plain(log), RunLog)) == plain(log)
    first = next(k for k in plain(log)["keys"] if k["key"] == log.modules()["jit_f"][0])
    assert first["module"] == "jit_f" and first["reason"].startswith("it uses host callbacks")


def test_differing_components_counts_a_component_one_release_lacks():
    a = LoggedKey("m", "m-1", Outcome.HIT, components={"computation": "1", "XLA flags": "2"})
    b = LoggedKey("m", "m-2", Outcome.HIT, components={"computation": "1", "backend version": "3", "XLA flags": "2"})
    assert jaxlog.differing_components(a, b) == ["backend version"]


def test_capped_keeps_head_tail_and_cache_lines():
    lines = [f"noise {i}" for i in range(5000)]
    lines[2500] = "DEBUG:x: get_cache_key hash of serialized computation: " + "0" * 64
    out = jaxlog.capped(lines, keep=100)
    assert out[:100] == lines[:100] and out[-100:] == lines[-100:]
    assert lines[2500] in out and "lines cut" in out[100]
    assert len(out) == 202
    assert jaxlog.capped(lines[:150], keep=100) == lines[:150]


def test_capped_keeps_the_supervisors_note_of_what_it_cut():
    """Issue 27: a second cut must not drop the note that says the run's output was cut before."""
    lines = [f"noise {i}" for i in range(5000)]
    lines[3000] = "[harness: 123 bytes of output cut here; the log keeps the first 1 and the last 1 bytes]"
    out = jaxlog.capped(lines, keep=100)
    assert lines[3000] in out


def test_the_supervisor_keeps_the_same_cache_lines_this_parser_reads():
    from harness.inside import supervise

    assert [m.decode() for m in supervise.CACHE_LINE_MARKERS] == list(jaxlog._MARKERS)
    assert supervise.NOTE_PREFIX.decode() == jaxlog.NOTE_PREFIX


@pytest.mark.parametrize("version", ["0.4.26", "0.4.28", "0.4.31", "0.6.2", "0.10.2"])
def test_each_compiled_key_has_the_seconds_jax_logged(version):
    """`'jit_f' took at least 0.00 seconds to compile (0.07s)`: every release, before or after the write."""
    log = parse(f"seed-{version}-hs1-0.err")
    text = (LOGS / f"seed-{version}-hs1-0.err").read_text()
    for k in log.keys:
        assert k.compile_time_s is not None and k.compile_time_s >= 0, k
        assert f"'{k.module}' took at least 0.00 seconds to compile ({k.compile_time_s:.2f}s)" in text


def test_hits_and_host_callbacks_have_no_compile_seconds():
    """A hit compiles nothing; a module JAX refuses for host callbacks is refused before it is timed."""
    assert all(k.compile_time_s is None for k in parse("seed-0.6.2-hs2-4.err").keys)
    callback = parse("host_callback-0.4.31-hs1.err")
    refused = next(k for k in callback.keys if k.module == "jit_f")
    assert refused.outcome == Outcome.NOT_WRITTEN and refused.compile_time_s is None
    assert all(k.compile_time_s is not None for k in callback.keys if k.module != "jit_f")


def test_a_threshold_refusal_keeps_its_measured_seconds():
    digest = "cd" * 32
    text = "\n".join([
        f"DEBUG:t:jax._src.cache_key:2: get_cache_key hash after serializing computation: {digest}",
        "DEBUG:t:jax._src.compiler:9: Not writing persistent cache entry for 'jit_g' because it took < 1.00 "
        "seconds to compile (0.02s)"])
    (k,) = jaxlog.parse(text).keys
    assert (k.outcome, k.compile_time_s) == (Outcome.NOT_WRITTEN, 0.02)
    assert convert(plain(jaxlog.parse(text)), RunLog).keys[0].compile_time_s == 0.02


def test_stderr_and_the_recorder_together_a_miss_either_shows_is_a_miss():
    """Issue 61 item 2 (jaxlog.combined): a key stderr shows compiled where the recorder says hit is a miss, and
    said; a hit only stderr shows is not taken; a key only stderr put together from a running hash and a module
    named later (on a release whose miss names no key, another thread's hash) is said, not read, unless stderr
    named it in so many words."""
    a, b, c = "a" * 64, "b" * 64, "c" * 64
    recorded = RunLog([LoggedKey("jit_a", f"jit_a-{a}", Outcome.HIT), LoggedKey("jit_c", f"jit_c-{c}", Outcome.WRITTEN)])
    lines = [f"PERSISTENT COMPILATION CACHE MISS for 'jit_a' with key 'jit_a-{a}'",
             f"Persistent compilation cache hit for 'jit_h' with key 'jit_h-{c}'",
             f"get_cache_key hash after serializing computation: {b}",
             "'jit_b' took at least 0.00 seconds to compile (0.01s)"]
    out, said = jaxlog.combined(recorded, jaxlog.parse(lines), jaxlog.named_keys(lines))
    assert [(k.key, k.outcome) for k in out.keys] == [(f"jit_a-{a}", Outcome.MISS), (f"jit_c-{c}", Outcome.WRITTEN)]
    assert said == [f"JAX's log on stderr names 2 keys the recorder does not (jit_h-{c}, ...)",
                    f"the recorder names 1 key JAX's log on stderr does not (jit_c-{c})",
                    f"they differ on 1 key: jit_a-{a} (a hit in the recorder, a miss on stderr)"]
    out, _ = jaxlog.combined(recorded, jaxlog.parse(lines))  # no names given: every key stderr shows computed
    assert f"jit_b-{b}" in out.by_key()
