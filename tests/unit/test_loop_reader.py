"""Reading the loop directory: listing, chunked reads, deletion rule, migration from Flink's
file source."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

from crawl.loop.reader import (
    CheckpointDirectory,
    LoopFileProgress,
    LoopLister,
    files_read_by_file_source,
    is_loop_file_name,
    may_delete,
    read_chunk,
    read_migrated,
    write_migrated,
)

#: The ``_metadata`` of a savepoint of a crawl whose loop Flink's file source read (taken by
#: ``bench/soak.py`` with the job of that time: its seed file and 66 loop files read, none
#: pending).
FILE_SOURCE_METADATA = Path(__file__).parent / "data" / "file-source-savepoint-metadata"


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _read_all(path: Path, max_bytes: int) -> list[str]:
    lines: list[str] = []
    offset, steps = 0, 0
    while True:
        chunk = read_chunk(path, offset, max_bytes)
        lines += chunk.lines
        offset = chunk.offset
        steps += 1
        if chunk.at_end:
            return lines
        assert steps < 1000


@pytest.mark.parametrize("max_bytes", [1, 2, 5, 7, 16, 1 << 20])
def test_chunks_give_every_line_once_whatever_their_size(tmp_path: Path, max_bytes: int) -> None:
    path = tmp_path / "loop-1"
    path.write_bytes(b"3\t{\"a\": 1}\n\nsecond line\r\nthird\nlast without break")
    lines = _read_all(path, max_bytes)
    assert lines == ['3\t{"a": 1}', "second line", "third", "last without break"]


def test_a_chunk_ends_at_a_line_break(tmp_path: Path) -> None:
    path = tmp_path / "loop-1"
    path.write_bytes(b"aaaa\nbbbb\ncccc\n")
    chunk = read_chunk(path, 0, 12)
    assert chunk.lines == ["aaaa", "bbbb"]
    assert chunk.offset == 10
    assert not chunk.at_end
    rest = read_chunk(path, chunk.offset, 12)
    assert rest.lines == ["cccc"]
    assert rest.offset == 15
    assert rest.at_end


def test_a_line_longer_than_a_chunk_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "loop-1"
    path.write_bytes(b"x" * 100 + b"\nshort\n")
    chunk = read_chunk(path, 0, 8)
    assert chunk.lines == ["x" * 100]
    assert chunk.offset == 101


def test_empty_file_and_bad_bytes(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert read_chunk(empty, 0) == ([], 0, True)
    bad = tmp_path / "bad"
    bad.write_bytes(b"ok\n\xff\xfe\n")
    assert read_chunk(bad, 0).lines == ["ok", "\ufffd\ufffd"]
    with pytest.raises(FileNotFoundError):
        read_chunk(tmp_path / "missing", 0)


def test_progress_round_trips() -> None:
    for progress in (LoopFileProgress(), LoopFileProgress(123), LoopFileProgress(9, -1),
                     LoopFileProgress(40, 17)):
        assert LoopFileProgress.decode(progress.encode()) == progress
    assert LoopFileProgress.decode(None) == LoopFileProgress(0, None)
    assert not LoopFileProgress(5).done
    assert LoopFileProgress(5, -1).done


@pytest.mark.parametrize(
    ("done_after", "completed", "expected"),
    [
        (4, [], False),
        (4, [5, 6], False),  # checkpoint 5 may have started before the file was done
        (4, [6, 7], True),
        (4, [3, 6], False),  # an older one retained still can be restored
        (-1, [1], True),
        (-1, [0], False),
    ],
)
def test_may_delete(done_after: int, completed: list[int], expected: bool) -> None:
    assert may_delete(done_after, completed) is expected


def test_checkpoint_directory_lists_completed_ones_at_most_once_a_second(tmp_path: Path) -> None:
    clock = _Clock()
    directory = CheckpointDirectory(tmp_path, refresh_seconds=1.0, monotonic=clock)
    assert directory.completed() == []
    assert directory.newest() == -1
    for number, complete in ((1, True), (2, False), (3, True)):
        (tmp_path / f"chk-{number}").mkdir()
        if complete:
            (tmp_path / f"chk-{number}" / "_metadata").write_bytes(b"x")
    (tmp_path / "shared").mkdir()
    assert directory.completed() == []  # listed less than a second ago
    clock.now = 1.0
    assert directory.completed() == [1, 3]
    assert directory.newest() == 3
    assert CheckpointDirectory(tmp_path / "missing").completed() == []


def test_lister_announces_each_visible_file_once_a_run(tmp_path: Path) -> None:
    (tmp_path / "loop-a").write_text("1\n")
    (tmp_path / ".loop-b.inprogress").write_text("2\n")
    (tmp_path / "_seeds").write_text("3\n")
    (tmp_path / "folder").mkdir()
    lister = LoopLister(tmp_path)
    assert lister.new_files() == ["loop-a"]
    assert lister.new_files() == []
    os.replace(tmp_path / ".loop-b.inprogress", tmp_path / "loop-b")
    (tmp_path / "loop-a").unlink()
    assert lister.new_files() == ["loop-b"]
    (tmp_path / "loop-a").write_text("again\n")  # a name gone and back is new again
    assert lister.new_files() == ["loop-a"]
    assert sorted(LoopLister(tmp_path).new_files()) == ["loop-a", "loop-b"]  # a restarted job
    with pytest.raises(FileNotFoundError):
        LoopLister(tmp_path / "missing").new_files()


def test_loop_file_names() -> None:
    assert is_loop_file_name("loop-0b1f-0-12")
    assert not is_loop_file_name(".loop-0b1f-0-12.inprogress.8a2f")
    assert not is_loop_file_name("_SUCCESS")


def test_files_read_by_flinks_file_source_in_a_real_savepoint(tmp_path: Path) -> None:
    savepoint = tmp_path / "savepoint-c11081-6ad769380fd0"
    savepoint.mkdir()
    shutil.copy(FILE_SOURCE_METADATA, savepoint / "_metadata")
    names = files_read_by_file_source(savepoint)
    assert names is not None
    assert len(names) == 67
    assert sum(name.startswith("loop-") for name in names) == 66
    assert "seeds-59bba30c085141578636695bd3dc242e" in names
    assert "loop-e9c90c19-2ce1-45d4-858d-da1c00649c69-23" in names


def _enumerator_state(splits: list[bytes], paths: list[bytes]) -> bytes:
    """The file source's enumerator state as Flink 2.3 writes it (version 1)."""
    blob = struct.pack("<Iiii", 0xDEADBEEF, 1, len(splits), len(paths))
    for item in [*splits, *paths]:
        blob += struct.pack("<i", len(item)) + item
    return blob


def test_pending_and_half_read_files_are_not_taken_as_read(tmp_path: Path) -> None:
    loop = "file:/crawl/out/loop/"
    state = _enumerator_state(
        [b"\x00\x01id" + (loop + "loop-pending").encode() + b"\x00" * 16],
        [(loop + name).encode() for name in ("loop-read", "loop-pending", "loop-half",
                                             "seeds-0001.txt")],
    )
    checkpoint = tmp_path / "chk-9"
    checkpoint.mkdir()
    (checkpoint / "_metadata").write_bytes(b"header" + state + b"trailer")
    # A reader's split, in an operator state file of its own.
    (checkpoint / "4b1e-state").write_bytes(b"..." + (loop + "loop-half").encode() + b"\x00")
    assert files_read_by_file_source(checkpoint) == ["loop-read", "seeds-0001.txt"]


def test_checkpoints_without_the_file_source(tmp_path: Path) -> None:
    assert files_read_by_file_source(tmp_path / "missing") is None
    (tmp_path / "_metadata").write_bytes(b"no file source here")
    assert files_read_by_file_source(tmp_path) is None
    truncated = _enumerator_state([], [b"file:/out/loop/loop-1"])[:-6]
    (tmp_path / "_metadata").write_bytes(truncated)
    assert files_read_by_file_source(tmp_path) is None


def test_migrated_names_are_kept_next_to_the_loop_directory(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.mkdir()
    assert read_migrated(loop) == frozenset()
    written = write_migrated(loop, ["loop-a", "loop-b"])
    assert written.parent == tmp_path
    assert read_migrated(loop) == {"loop-a", "loop-b"}
    assert list(loop.iterdir()) == []
