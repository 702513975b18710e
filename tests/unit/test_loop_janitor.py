"""Deleting consumed loop files only when no retained checkpoint can need them."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawl.loop_janitor import CheckpointDirectory, LoopJanitor, last_line


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _checkpoint(job: Path, number: int, complete: bool = True) -> None:
    folder = job / f"chk-{number}"
    folder.mkdir(parents=True)
    if complete:
        (folder / "_metadata").write_bytes(b"x")


def _retain(job: Path, numbers: list[int]) -> None:
    """Make exactly ``numbers`` the retained, completed checkpoints (as Flink prunes)."""
    for folder in job.glob("chk-*"):
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()
    for number in numbers:
        _checkpoint(job, number)


def _loop_file(folder: Path, name: str, lines: list[str]) -> Path:
    path = folder / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"a\nb\nc\n", "c"),
        (b"a\nb\nc", "c"),
        (b"only\n", "only"),
        (b"", None),
        (b"\n\n", None),
        (b"x\n" + b"y" * 200_000 + b"\n", "y" * 200_000),
    ],
)
def test_last_line(tmp_path: Path, content: bytes, expected: str | None) -> None:
    path = tmp_path / "f"
    path.write_bytes(content)
    assert last_line(path) == expected


def test_completed_checkpoints_need_metadata(tmp_path: Path) -> None:
    _checkpoint(tmp_path, 3)
    _checkpoint(tmp_path, 4, complete=False)
    _checkpoint(tmp_path, 1)
    (tmp_path / "shared").mkdir()
    assert CheckpointDirectory(tmp_path).completed() == [1, 3]
    assert CheckpointDirectory(tmp_path / "missing").completed() == []


def test_file_goes_once_every_retained_checkpoint_is_two_past_its_end(tmp_path: Path) -> None:
    job = tmp_path / "job"
    loop = tmp_path / "loop"
    loop.mkdir()
    _retain(job, [5, 6, 7])
    clock = _Clock()
    janitor = LoopJanitor(CheckpointDirectory(job), sweep_interval=1.0, monotonic=clock)
    path = _loop_file(loop, "part-1", ["1\t{a}", "2\t{b}"])
    janitor.saw(str(path), "1\t{a}")
    assert janitor.pending == 0, "not at its end yet"
    janitor.saw(str(path), "2\t{b}")
    assert janitor.pending == 1  # finished while checkpoint 7 was the newest

    for retained in ([6, 7, 8], [7, 8, 9], [8, 9, 10]):
        _retain(job, retained)
        clock.now += 1.5
        assert janitor.sweep() == 0
        assert path.exists(), f"deleted while checkpoint {retained[0]} may refer to it"
    _retain(job, [9, 10, 11])
    clock.now += 1.5
    assert janitor.sweep() == 1
    assert not path.exists()
    assert janitor.deleted == 1
    assert janitor.pending == 0


def test_sweeps_are_rate_limited(tmp_path: Path) -> None:
    job = tmp_path / "job"
    _retain(job, [1])
    clock = _Clock()
    janitor = LoopJanitor(CheckpointDirectory(job), sweep_interval=1.0, monotonic=clock)
    path = _loop_file(tmp_path, "f", ["x"])
    janitor.saw(str(path), "x")
    _retain(job, [10])
    assert janitor.sweep() == 0  # too soon after the last sweep
    clock.now += 1.0
    assert janitor.sweep() == 1


def test_without_checkpoints_nothing_is_deleted(tmp_path: Path) -> None:
    clock = _Clock()
    janitor = LoopJanitor(CheckpointDirectory(tmp_path / "job"), monotonic=clock)
    path = _loop_file(tmp_path, "f", ["x"])
    janitor.saw(str(path), "x")
    clock.now += 10
    assert janitor.sweep() == 0
    assert path.exists()


def test_empty_and_vanished_files_are_harmless(tmp_path: Path) -> None:
    job = tmp_path / "job"
    _retain(job, [1])
    janitor = LoopJanitor(CheckpointDirectory(job), monotonic=_Clock())
    empty = _loop_file(tmp_path, "empty", [])
    janitor.saw(str(empty), "")
    janitor.saw(str(tmp_path / "gone"), "x")
    assert janitor.pending == 0
