"""The loop source's handlers (operators/loop_reader.py) over the Flink fakes: the lister
announcing each file once, a file read a chunk per timer, each line once across a restore, bad
lines skipped, and the file deleted once no retained checkpoint can need it."""

from __future__ import annotations

import time
from pathlib import Path

from crawl.layout import OutputLayout
from crawl.loop.records import encode_line
from operators.loop_reader import RETRY_MS, LoopListerFunction, LoopReaderFunction
from tests.fakes import FakeRuntimeContext, KeyedHarness, Snapshot

T0 = 1_700_000_000_000
VNODES = 16
JOB = "0123456789abcdef0123456789abcdef"
NAME = "part-0-0"


def _write_loop_file(out: Path, lines: list[str]) -> Path:
    loop = OutputLayout(str(out)).loop
    loop.mkdir(parents=True, exist_ok=True)
    path = loop / NAME
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def _lines(count: int) -> list[str]:
    return [encode_line(n % VNODES, [(f"http://h{n}.test/", "", "")]) for n in range(count)]


def _harness(out: Path, job_id: str | None = None, restore: Snapshot | None = None,
             ) -> KeyedHarness:
    function = LoopReaderFunction(str(out), VNODES, chunk_bytes=200)
    return KeyedHarness(function, now_ms=T0, job_id=job_id, restore=restore).open()


def _read_all(harness: KeyedHarness) -> list:
    records = harness.process(NAME, NAME)
    while harness.timers(NAME) == [harness.now_ms]:  # the next chunk, at once
        records += harness.advance_to(harness.now_ms)
    return records


def _expected(lines: list[str]) -> list[tuple[int, str]]:
    return [(int(line.split("\t")[0]), line.split("\t", 1)[1]) for line in lines]


def test_the_lister_announces_each_visible_file_once(tmp_path: Path) -> None:
    loop = OutputLayout(str(tmp_path)).loop
    lister = LoopListerFunction(str(loop))
    lister.open(FakeRuntimeContext())
    assert list(lister.flat_map(0)) == []  # no directory yet: nothing, and no failure
    _write_loop_file(tmp_path, _lines(1))
    (loop / ".part-0-1.inprogress").write_text("", encoding="utf-8")
    assert list(lister.flat_map(1)) == [NAME]
    assert list(lister.flat_map(2)) == []


def test_a_file_is_read_a_chunk_at_a_time(tmp_path: Path) -> None:
    lines = _lines(12)
    _write_loop_file(tmp_path, lines)
    harness = _harness(tmp_path)
    try:
        first = harness.process(NAME, NAME)
        assert 0 < len(first) < len(lines)  # one chunk, the next one on a timer
        assert harness.timers(NAME) == [T0]
        rest = []
        while harness.timers(NAME):
            rest += harness.advance_to(harness.now_ms)
        assert first + rest == _expected(lines)
        # Without a job id nothing is deleted: the file stays, read to its end.
        assert harness.state("loop-file", NAME)["value"]
        assert (OutputLayout(str(tmp_path)).loop / NAME).exists()
    finally:
        harness.close()


def test_lines_that_are_no_loop_lines_are_skipped(tmp_path: Path) -> None:
    good = _lines(2)
    _write_loop_file(tmp_path, [good[0], "not a loop line", f"{VNODES}\t{{}}", good[1]])
    harness = _harness(tmp_path)
    try:
        assert _read_all(harness) == _expected(good)
    finally:
        harness.close()


def test_each_line_once_across_a_restore(tmp_path: Path) -> None:
    lines = _lines(12)
    _write_loop_file(tmp_path, lines)
    first = _harness(tmp_path)
    before = first.process(NAME, NAME)
    snapshot = first.snapshot()  # holds the offset and the timer of the next chunk
    first.close()
    second = _harness(tmp_path, restore=snapshot)
    try:
        after = []
        while second.timers(NAME):
            after += second.advance_to(second.now_ms)
    finally:
        second.close()
    assert before + after == _expected(lines)


def test_a_file_gone_clears_its_state(tmp_path: Path) -> None:
    _write_loop_file(tmp_path, _lines(12))
    first = _harness(tmp_path)
    first.process(NAME, NAME)
    snapshot = first.snapshot()
    first.close()
    (OutputLayout(str(tmp_path)).loop / NAME).unlink()  # deleted by a later attempt
    second = _harness(tmp_path, restore=snapshot)
    try:
        assert second.advance_to(T0) == []
        assert second.keys("loop-file") == set()
        assert second.timers() == []
    finally:
        second.close()


def test_a_read_file_is_deleted_once_no_retained_checkpoint_can_need_it(tmp_path: Path) -> None:
    path = _write_loop_file(tmp_path, _lines(3))
    checkpoints = OutputLayout(str(tmp_path)).checkpoints / JOB
    harness = _harness(tmp_path, job_id=JOB)
    try:
        _read_all(harness)  # done when no checkpoint had completed
        assert path.exists()
        assert harness.timers(NAME) == [T0 + RETRY_MS]
        (checkpoints / "chk-1").mkdir(parents=True)
        (checkpoints / "chk-1" / "_metadata").write_bytes(b"")
        time.sleep(1.0)  # the checkpoint directory is listed at most once a second
        assert harness.advance_by(RETRY_MS) == []
        assert not path.exists()
        assert harness.keys("loop-file") == set()
        assert harness.timers() == []
    finally:
        harness.close()


def test_the_state_layout_is_the_one_savepoints_hold(tmp_path: Path) -> None:
    harness = _harness(tmp_path)
    try:
        assert harness.descriptors == {"loop-file": ("value", "String")}
    finally:
        harness.close()
