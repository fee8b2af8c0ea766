"""Every file a run could touch is read within bounds (issues 60.1, 61.5, 61.6): a named pipe, a folder, a device
or a link in place of the recorder file, the cache-settings record, a file of the IR dump or the log is one line
and the run is read without it; a file past its bound is read in part and said; a line of megabytes (a constant's
bytes) is never scanned by a backtracking pattern nor diffed character by character. Each case ran for minutes,
blocked or crashed before; the assertions are on what comes out, never on time."""

import json
import os
import time
import tracemalloc

import pytest

from harness.core import recorder
from harness.core.bounded_read import CHUNK, Lines, irregular_entries, read_bounded
from harness.core import jaxlog
from harness.core.ir_results import with_result_types
from harness.core.jaxlog import LoggedKey, Outcome
from harness.core.ir_lines import LONG_LINE, condense
from harness.core.ir_names import name_groups
from harness.core.runs import RunRecord
from harness.evidence.script_settings import first_use, read_script_settings
from harness.measure.run_logs import read_run
from harness.report.evidence import changed_attributes, compare_runs, likely_cause, what_differs
from harness.report.sources import lowered_texts


def _fifo(path):
    os.mkfifo(path)
    return path


# Each stand-in for a file a program wrote: made in place of `path`, with the words the reader says of it.
def _make(kind, path, tmp_path):
    if kind == "fifo":
        _fifo(path)
        return "is a named pipe, not a regular file"
    if kind == "folder":
        path.mkdir()
        return "is a folder, not a regular file"
    if kind == "link":
        target = tmp_path / "elsewhere"
        target.write_text("{}\n")
        path.symlink_to(target)
        return "is a symbolic link"
    if kind == "device":
        path.symlink_to("/dev/zero")  # a program cannot make a device node; a link to one it can
        return "is a symbolic link"
    raise AssertionError(kind)


KINDS = ["fifo", "folder", "link", "device"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_file_that_is_no_regular_file_is_one_line_never_a_hang_or_a_crash(tmp_path, kind):
    path = tmp_path / "run.recorder.jsonl"
    words = _make(kind, path, tmp_path)
    found = read_bounded(path, 1 << 20)
    assert not found.read and found.data == b"" and found.problem == words
    assert found.note("the recorder file", 1 << 20) == f"the recorder file {words}: not read"
    reading = Lines(path, 1 << 20)
    assert list(reading.lines()) == [] and reading.outcome.problem == words


def test_a_device_opened_directly_is_refused_by_its_kind():
    found = read_bounded(__import__("pathlib").Path("/dev/zero"), 1 << 20)  # never read whole: it has no end
    assert found.problem == "is a device, not a regular file" and found.data == b""


def test_a_file_past_its_bound_is_read_in_part_and_said(tmp_path):
    path = tmp_path / "big"
    path.write_bytes(b"x" * 5120)
    found = read_bounded(path, 1024)
    assert found.capped and found.data == b"x" * 1024 and found.size == 5120
    assert found.note("the log", 1024) == "the log is 5 KiB, past the harness's bound of 1 KiB: its first 1 KiB read"
    reading = Lines(path, 1024)
    assert list(reading.lines()) == [] and reading.outcome.capped  # the one line is cut by the bound: not taken


@pytest.mark.parametrize("kind", KINDS)
def test_the_recorder_file_replaced_is_said_and_the_run_read_from_its_log(tmp_path, kind):
    log = tmp_path / "run-01.log"
    digest = "ab" * 32
    log.write_text(f"DEBUG:jax._src.compiler: PERSISTENT COMPILATION CACHE MISS for 'jit_f' with key 'jit_f-{digest}'\n"
                   f"DEBUG:jax._src.compiler: Writing jit_f to persistent compilation cache with key 'jit_f-{digest}'\n")
    recorded = recorder.recorder_path(log)
    words = _make(kind, recorded, tmp_path)
    keys, note, tests, _, _ = read_run(log, "0.10.2", True, recorded)
    assert keys is not None and [k.key for k in keys.keys] == [f"jit_f-{digest}"]
    assert note == f"the recorder file {words}: not read" and tests == {}


def test_a_recorder_file_of_two_byte_lines_is_streamed_not_held_line_by_line(tmp_path):
    """64 MiB of two-byte lines took the harness to 2.6 GB (a bytes object per line): what
    the reader holds stays a small multiple of its chunk, not of the lines (here 1 MiB of them)."""
    path = tmp_path / "run.recorder.jsonl"
    path.write_bytes(b"x\n" * (512 << 10))
    tracemalloc.start()
    try:
        recording = recorder.read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert recording is not None and recording.unreadable == 512 << 10 and recording.lines == []
    assert peak < 4 << 20, peak  # splitting the whole file into lines first held over 20 MiB


def test_a_recorder_file_past_its_bound_is_read_to_the_bound_and_said(tmp_path, monkeypatch):
    monkeypatch.setattr(recorder, "MAX_BYTES", 1024)
    path = tmp_path / "run.recorder.jsonl"
    line = json.dumps({"kind": "start", "pid": 1}) + "\n"
    path.write_text(line * 200)
    recording = recorder.read(path)
    assert recording is not None and 0 < len(recording.lines) < 200
    assert recording.cut().startswith("the recorder file is ") and "past the harness's bound of 1 KiB" in recording.cut()


@pytest.mark.parametrize("kind", KINDS)
def test_the_cache_settings_record_replaced_is_one_problem_never_a_crash(tmp_path, kind):
    path = tmp_path / "run-01.cache.jsonl"
    words = _make(kind, path, tmp_path)
    cache = read_script_settings(path)
    assert cache is not None and cache.problems == (f"the cache-settings record {words}: not read",)
    assert first_use(path) == (False, False)


def test_a_cache_settings_line_nested_past_the_parsers_depth_is_skipped(tmp_path):
    path = tmp_path / "run-01.cache.jsonl"
    path.write_text("[" * 100_000 + "\n" + json.dumps({"kind": "problem", "detail": "seen"}) + "\n")
    cache = read_script_settings(path)
    assert cache is not None and cache.problems == ("seen",)


@pytest.mark.parametrize("kind", ["fifo", "folder", "link"])
def test_an_ir_dump_file_replaced_is_left_out_and_said_in_the_row(tmp_path, kind):
    log = tmp_path / "run-01.log"
    log.write_text("")
    dump = tmp_path / "run-01.ir"
    dump.mkdir()
    (dump / "jax_ir0_jit_f_compile.mlir").write_text("module @jit_f {\n}\n")
    words = _make(kind, dump / "jax_ir1_jit_f_compile.mlir", tmp_path)
    run = RunRecord(1, 0, 0, 0.0, [], log="run-01.log")
    assert lowered_texts(tmp_path, run, "jit_f") == ["module @jit_f {\n}\n"]
    kind_words = words.split(",")[0].removeprefix("is ")
    assert irregular_entries(dump, "the run's IR dump") == \
        f"the run's IR dump holds what is no regular file, not read: 'jax_ir1_jit_f_compile.mlir' ({kind_words})"


def test_an_ir_dump_folder_replaced_by_a_pipe_is_said(tmp_path):
    dump = _fifo(tmp_path / "run-01.ir")
    assert irregular_entries(dump, "the run's IR dump") == "the run's IR dump is a named pipe, not a folder: not read"
    assert lowered_texts(tmp_path, RunRecord(1, 0, 0, 0.0, [], log="run-01.log"), "jit_f") == []


def test_a_log_replaced_by_a_pipe_is_one_line(tmp_path):
    log = _fifo(tmp_path / "run-01.log")
    keys, note, _, _, _ = read_run(log, "0.10.2", True, None)
    assert keys is None and note == "its log is a named pipe, not a regular file"


def _module(constant_hex: str, name: str = "result") -> str:
    return (f'module @jit_f attributes {{mhlo.num_partitions = 1 : i32}} {{\n'
            f'  func.func public @main(%arg0: tensor<f32>) -> (tensor<{len(constant_hex) // 8}xf32> '
            f'{{jax.result_info = "{name}"}}) {{\n'
            f'    %cst = stablehlo.constant dense<"0x{constant_hex}"> : tensor<{len(constant_hex) // 8}xf32>\n'
            f'    return %cst : tensor<{len(constant_hex) // 8}xf32>\n  }}\n}}\n')


TWO_MB = 2 << 20  # hex digits: a 1 MiB array


def test_a_2_mb_constant_that_differs_is_said_by_its_size_and_digest():
    """A jitted function closing over an unseeded np.random.rand array: each run bakes other bytes into one line
    of megabytes. The harness sat for 12 minutes in changed_attributes on it; now the line is its size and digest."""
    a, b = os.urandom(TWO_MB // 2).hex().upper(), os.urandom(TWO_MB // 2).hex().upper()
    run_a, run_b = RunRecord(1, 1, 0, 0.0, []), RunRecord(2, 2, 0, 0.0, [])
    evidence = compare_runs("jit_f", run_a, run_b, _module(a), _module(b))
    changed = [d for d in evidence.diff if d[:1] in "-+" and not d.startswith(("---", "+++"))]
    assert len(changed) == 2 and all(len(d) < 200 for d in changed)
    assert "2.0 MiB constant #sha256_" in changed[0]
    assert what_differs(evidence).startswith("a 2.0 MiB constant differs (#sha256_")
    assert evidence.attributes == []


def test_a_line_of_megabytes_never_reaches_a_backtracking_pattern():
    """The attribute pattern tried every start of a run of name characters: quadratic on a constant's bytes."""
    a, b = "A" * TWO_MB, "B" * TWO_MB
    diff = ["--- a", "+++ b", f'-  %0 = x {{k = "1"}} {a}', f'+  %0 = x {{k = "2"}} {b}']
    assert changed_attributes(diff) == [("k", "1", "2")]
    assert likely_cause(diff) is not None


def test_a_long_line_keeps_what_differs_outside_its_constant():
    same = os.urandom(LONG_LINE).hex()
    before = condense(f'  %0 = stablehlo.constant dense<"0x{same}"> {{mhlo.sharding = "{{replicated}}"}} : x\n')
    after = condense(f'  %0 = stablehlo.constant dense<"0x{same}"> {{mhlo.sharding = "{{maximal device=1}}"}} : x\n')
    assert len(before) < 200 and before != after
    assert changed_attributes(["-" + before.strip("\n"), "+" + after.strip("\n")]) == [
        ("mhlo.sharding", "{replicated}", "{maximal device=1}")]


def test_a_mesh_left_open_is_given_up_in_one_pass():
    """`<["a"=1   "a"=1   ...` with no `]>`: the mesh pattern tried every way its spaces split (exponential)."""
    assert name_groups(['<[' + '"a"=1   ' * 40 + 'x']) == []
    assert name_groups(['sdy.mesh @mesh = <["batch"=4, "feats"=2]>']) == [("batch", "feats")]


def test_a_log_line_with_a_long_run_of_spaces_is_read_in_one_pass():
    """`since (?P<reason>.+?)\\s*$` retried the run of spaces from each of its places: quadratic in it."""
    from harness.core import jaxlog
    key = "jit_f-" + "ab" * 32
    log = jaxlog.parse([f"Not writing persistent cache entry with key '{key}' since it x" + " " * 200_000 + "y  "])
    assert [(k.key, str(k.outcome)) for k in log.keys] == [(key, "not written")]


def test_the_hook_writes_no_setting_into_a_pipe_put_in_the_records_place(tmp_path, capsys):
    """The program's own exit blocked in the hook's open() of the record a FIFO had replaced (until its timeout)."""
    from harness.inside.startup.jax_cache_harness_hook import _Hook
    record = _fifo(tmp_path / "run-01.cache.jsonl")
    _Hook(str(record), None, "script", {}).write({"kind": "final"})
    assert "cannot record a cache setting" in capsys.readouterr().err


def test_a_modules_signature_and_result_types_are_found_in_one_pass():
    """`@main\\((.*?)\\)\\s*->` and `tensor<[^>]*>` were retried from every start: quadratic in a module of
    megabytes that holds many starts and no end."""
    from harness.report.evidence import _result_types, arguments
    assert arguments("func.func public @main(" * 100_000) == ""
    assert _result_types(") ->" + "tensor<" * 300_000) == ""
    assert arguments("func.func public @main(%arg0: tensor<8xf32> {a = \"(x)\"}, %arg1: tensor<f32>)\n  -> (tensor<8xf32>)") \
        == "tensor<8xf32>, tensor<f32>"


def test_a_recorder_file_replaced_is_said_also_when_the_log_names_no_key(tmp_path):
    log = tmp_path / "run-01.log"
    log.write_text("nothing of JAX's here\n")
    recorded = _fifo(recorder.recorder_path(log))
    keys, note, _, _, _ = read_run(log, "0.10.2", True, recorded)
    assert keys is None and note.endswith("; the recorder file is a named pipe, not a regular file: not read")


def test_one_line_of_64_mib_is_read_in_linear_time_and_skipped_past_the_line_bound(tmp_path):
    """A recorder that is one 64 MiB line (sparse, no newline): the reader joined and re-split the whole pending
    line for each 64 KiB chunk (quadratic: 55-76 s a read); now each byte is looked at once and the line, past
    the line bound, is dropped as it is read and said."""
    path = tmp_path / "one-line.jsonl"
    with path.open("wb") as out:
        out.write(b'{"kind": "start", "pid": 1}\n')
        out.truncate(64 << 20)  # zeros after it, no newline
    reading = Lines(path, 80 << 20)
    started = time.monotonic()
    lines = list(reading.lines())
    assert time.monotonic() - started < 8  # about 0.1 s here; the quadratic read took over 50
    assert lines == [b'{"kind": "start", "pid": 1}'] and reading.outcome.long_lines == 1
    assert reading.outcome.note("the recorder file", 80 << 20) == \
        "the recorder file holds 1 line longer than 4.0 MiB: not read"


def test_lines_across_chunks_and_at_the_line_bound_are_read_whole(tmp_path):
    path = tmp_path / "lines"
    long = b"x" * (CHUNK * 3 + 17)  # spans four chunks
    path.write_bytes(b"a\n" + long + b"\n\n" + b"y" * 40 + b"\nlast")
    reading = Lines(path, 1 << 20, line_limit=len(long))
    assert list(reading.lines()) == [b"a", long, b"", b"y" * 40, b"last"] and not reading.outcome.long_lines
    reading = Lines(path, 1 << 20, line_limit=len(long) - 1)
    assert list(reading.lines()) == [b"a", b"", b"y" * 40, b"last"] and reading.outcome.long_lines == 1


def test_a_dump_folder_of_thousands_of_sparse_files_keeps_no_heads(tmp_path):
    """20,000 dump-named sparse files held 2.2 GB: every file's 64 KiB head was kept as text, whether a key needed
    it or not. Now a module no key names is not opened, and of a named one only a digest and its result types are
    kept (at most MAX_DUMPS + 1)."""
    folder = tmp_path / "dump"
    folder.mkdir()
    for i in range(300):
        for module in ("jit_f", "jit_other"):
            with (folder / f"jax_ir{2 * i + (module == 'jit_other')}_{module}_compile.mlir").open("wb") as out:
                out.truncate(1 << 20)
    keys = [LoggedKey("jit_f", f"jit_f-{'a' * 64}", Outcome.MISS)]
    tracemalloc.start()
    try:
        got = with_result_types(keys, folder)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == keys  # (their heads say no result types)
    assert peak < 4 << 20, peak  # the heads kept as text: over 38 MiB


def test_a_run_log_replaced_by_a_sparse_gibibyte_is_kept_within_the_cut_and_said(tmp_path):
    """The 2 MiB cut kept whole lines and never split one: a 1 GiB sparse log (one line) left a real 64 MiB log in
    the results folder for each run. Now what is kept never passes the cut, and the row says what was cut."""
    log = tmp_path / "run-01-seed-1.log"
    with log.open("wb") as out:
        out.write(b"started\n")
        out.truncate(1 << 30)
    keys, note, _, _, _ = read_run(log, "0.4.31", True)
    assert keys is None and log.stat().st_size <= 2 << 20
    assert ("its log is 1024.0 MiB, past the harness's bound of 64.0 MiB: its first 64.0 MiB read; 1 line of it "
            "longer than 16 KiB shortened, the log kept cut to 2 MiB") in note
    kept = log.read_text().splitlines()
    assert kept[0] == "started" and kept[1].endswith("characters of this line cut]")


def test_the_kept_log_is_within_the_cut_whatever_its_lines():
    lines = ["x" * 10_000] * 2_000 + ["DEBUG:jax._src.compiler:Writing jit_f to persistent cache"] * 3
    kept = jaxlog.capped(lines)
    assert len("\n".join(kept).encode()) + 1 <= jaxlog.LOG_CAP_BYTES
    assert sum("Writing jit_f" in line for line in kept) == 3 and sum("lines cut here" in line for line in kept) == 1


def test_the_dumps_read_for_names_are_bounded_in_files_and_bytes(tmp_path, monkeypatch):
    """The seeds' read-back read every dump-named file of a run to 4 MiB (20,000 sparse files: 20 GB a run)."""
    from harness.measure import seeds

    folder = tmp_path / "run-01.ir"
    folder.mkdir()
    for i in range(40):
        with (folder / f"jax_ir{i:05d}_jit_f_compile.mlir").open("wb") as out:
            out.truncate(1 << 20)
    monkeypatch.setattr(seeds, "DUMP_TOTAL_BYTES", 5 << 20)
    assert len(seeds.dump_texts(folder)) == 5
    monkeypatch.setattr(seeds, "DUMP_TOTAL_BYTES", 1 << 30)
    monkeypatch.setattr(seeds, "DUMP_FILES", 7)
    assert len(seeds.dump_texts(folder)) == 7
