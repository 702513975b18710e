"""Reading the loop directory: which files to read, reading them in chunks, forgetting them.

The loop directory holds files that are complete and immutable once visible: the loop sink
commits each file by renaming it from a hidden name when the checkpoint it belongs to
completes, and seed files are written under a hidden name and renamed. So a file is read once,
from start to end, by the reader that owns its name (the loop reader stage is keyed by file
name); how far it got is one number in that key's state, and once the reader has passed the end
the file is done. What a reader keeps for a file is :class:`LoopFileProgress`, and it goes away
with the file: Flink's own continuously monitoring file source remembered every path it had
ever read, in the JobManager's memory and in every checkpoint, which bounded how long a crawl
could run.

A done file is deleted once no retained checkpoint can refer to it as unread or half-read
(:func:`may_delete`); until then its state stays, so a restore finds it done.

Savepoints and checkpoints of crawls that read the loop with Flink's file source carry that
source's state instead: :func:`files_read_by_file_source` finds in them the files it had read,
which the reader then takes as done.
"""

from __future__ import annotations

import os
import re
import struct
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from crawl.layout import MIGRATED_FILE_NAME

__all__ = [
    "CHUNK_BYTES",
    "CheckpointDirectory",
    "LoopChunk",
    "LoopFileProgress",
    "LoopLister",
    "files_read_by_file_source",
    "is_loop_file_name",
    "may_delete",
    "read_chunk",
    "read_migrated",
    "write_migrated",
]

#: How much of a file one step of the reader reads (a seed file of millions of URLs is read in
#: many steps, with checkpoints in between).
CHUNK_BYTES = 1 << 20


_CHECKPOINT_NAME = re.compile(r"chk-(\d+)$")


def is_loop_file_name(name: str) -> bool:
    """Whether a directory entry of this name is a loop file: hidden names (a file being
    written, a seed file before its rename) are not, as for Flink's file sources."""
    return not name.startswith((".", "_"))


class LoopChunk(NamedTuple):
    """What one read of a loop file gave: its lines (without line breaks, empty ones left out),
    the offset to read on from, and whether that is the file's end."""

    lines: list[str]
    offset: int
    at_end: bool


def read_chunk(path: str | os.PathLike[str], offset: int, max_bytes: int = CHUNK_BYTES
               ) -> LoopChunk:
    """Read whole lines of the file at ``path`` from ``offset``: about ``max_bytes`` of them
    (more when one line is longer), ending at a line break or at the file's end. Raises
    OSError (FileNotFoundError when the file is gone)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read(max_bytes)
        at_end = len(data) < max_bytes
        if not at_end:
            cut = data.rfind(b"\n")
            while cut < 0:
                more = handle.read(max_bytes)
                data += more
                if len(more) < max_bytes:
                    at_end = True
                    break
                cut = data.rfind(b"\n", len(data) - len(more))
            if not at_end:
                data = data[: cut + 1]
        if at_end:
            at_end = handle.read(1) == b""  # it grew while read: read on next time
    text = data.decode("utf-8", "replace")
    lines = [line.rstrip("\r") for line in text.split("\n")]
    return LoopChunk([line for line in lines if line], offset + len(data), at_end)


class LoopFileProgress(NamedTuple):
    """How far the reader is in one loop file: ``offset`` read so far, and once at its end the
    newest checkpoint completed then (``done_after``; -1 when none had); None while not done."""

    offset: int = 0
    done_after: int | None = None

    @property
    def done(self) -> bool:
        return self.done_after is not None

    def encode(self) -> str:
        return f"{self.offset} {'' if self.done_after is None else self.done_after}".rstrip()

    @classmethod
    def decode(cls, value: str | None) -> LoopFileProgress:
        if not value:
            return cls()
        parts = value.split(" ")
        return cls(int(parts[0]), int(parts[1]) if len(parts) > 1 else None)


def may_delete(done_after: int, completed: list[int]) -> bool:
    """Whether a file done when checkpoint ``done_after`` was the newest completed one can be
    deleted, ``completed`` being the retained checkpoints' numbers (oldest first).

    Checkpoint ``done_after + 1`` may have started before the file was done, and so may hold
    it unread; ``done_after + 2`` can only start once ``done_after + 1`` has completed (one
    checkpoint at a time, as ``flink-conf.yaml`` sets), so after the file was done. Once every
    retained checkpoint is numbered ``done_after + 2`` or more, none can need the file.
    """
    return bool(completed) and completed[0] >= done_after + 2


class CheckpointDirectory:
    """The completed checkpoints of one job, read from its checkpoint directory (a local or
    mounted path). Listed at most once per ``refresh_seconds``: an older answer only delays a
    deletion, since it names older checkpoints."""

    def __init__(self, job_directory: Path, refresh_seconds: float = 1.0,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._directory = job_directory
        self._refresh_seconds = refresh_seconds
        self._monotonic = monotonic
        self._listed_at: float | None = None
        self._completed: list[int] = []

    def completed(self) -> list[int]:
        """Numbers of the checkpoints whose metadata is written (oldest first)."""
        now = self._monotonic()
        if self._listed_at is None or now - self._listed_at >= self._refresh_seconds:
            self._completed = self._list()
            self._listed_at = now
        return self._completed

    def newest(self) -> int:
        """The newest completed checkpoint's number, -1 if none."""
        completed = self.completed()
        return completed[-1] if completed else -1

    def _list(self) -> list[int]:
        numbers = []
        try:
            entries = list(os.scandir(self._directory))
        except OSError:
            return []
        for entry in entries:
            match = _CHECKPOINT_NAME.match(entry.name)
            if match and os.path.exists(os.path.join(entry.path, "_metadata")):
                numbers.append(int(match.group(1)))
        return sorted(numbers)


class LoopLister:
    """Finds the loop files to announce to their readers: each visible file once per run of
    the job (a restarted job announces every file again; the readers' state says which are
    done). Remembers only the names still in the directory."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self._directory = directory
        self._announced: set[str] = set()

    def new_files(self) -> list[str]:
        """Names of loop files not announced yet in this run (oldest first). Raises OSError
        when the directory cannot be listed."""
        entries = []
        with os.scandir(self._directory) as listing:
            for entry in listing:
                if is_loop_file_name(entry.name) and entry.is_file():
                    entries.append(entry)
        present = {entry.name for entry in entries}
        self._announced &= present
        new = [entry for entry in entries if entry.name not in self._announced]
        new.sort(key=_modified_then_name)
        self._announced.update(entry.name for entry in new)
        return [entry.name for entry in new]


def _modified_then_name(entry: os.DirEntry) -> tuple[float, str]:
    try:
        return entry.stat().st_mtime, entry.name
    except OSError:
        return 0.0, entry.name


#: Flink's PendingSplitsCheckpointSerializer (version 1) starts with this, little-endian.
_FILE_SOURCE_MAGIC = struct.pack("<I", 0xDEADBEEF)
_LOOP_PATH = re.compile(rb"file:[^\x00-\x1f]*?/loop/([^/\x00-\x20]+)")


def files_read_by_file_source(checkpoint: Path) -> list[str] | None:
    """The loop files Flink's file source had read when ``checkpoint`` (a savepoint or
    checkpoint directory) was taken, by name; None when it holds no such source's state (a
    crawl read by this module, or not a crawl).

    The source's enumerator state (in ``_metadata``) lists every path it ever took up, and the
    splits it had not handed out yet; a reader's split still being read is in the source
    operator's state. A path named anywhere else in the checkpoint than in the enumerator's
    list is taken as not read: its file is read again from its start (the launcher and
    ``job stop`` stop a quiet loop, where no file is half-read).
    """
    try:
        metadata = (checkpoint / "_metadata").read_bytes()
    except OSError:
        return None
    start = metadata.find(_FILE_SOURCE_MAGIC)
    if start < 0:
        return None
    try:
        _, split_count, path_count = struct.unpack_from("<iii", metadata, start + 4)
        position = start + 16
        unread: set[bytes] = set()
        for _ in range(split_count):
            (length,) = struct.unpack_from("<i", metadata, position)
            split = metadata[position + 4 : position + 4 + length]
            unread.update(match.group(1) for match in _LOOP_PATH.finditer(split))
            position += 4 + length
        taken: list[bytes] = []
        for _ in range(path_count):
            (length,) = struct.unpack_from("<i", metadata, position)
            path = metadata[position + 4 : position + 4 + length]
            if length < 0 or len(path) != length:
                return None
            match = _LOOP_PATH.fullmatch(path)
            if match:
                taken.append(match.group(1))
            position += 4 + length
    except struct.error:
        return None
    elsewhere = metadata[:start] + metadata[position:]
    for other in _other_state_files(checkpoint):
        elsewhere += b"\n" + other
    unread.update(match.group(1) for match in _LOOP_PATH.finditer(elsewhere))
    return sorted(name.decode("utf-8", "replace") for name in set(taken) - unread)


def _other_state_files(checkpoint: Path) -> Iterable[bytes]:
    """The checkpoint's files besides ``_metadata`` small enough to be operator state (keyed
    state files of RocksDB are larger and hold no loop path)."""
    try:
        entries = [entry for entry in checkpoint.iterdir() if entry.name != "_metadata"]
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_file() and entry.stat().st_size <= 1 << 20:
                yield entry.read_bytes()
        except OSError:
            continue


def write_migrated(loop_directory: Path, names: Iterable[str]) -> Path:
    """Record the files an older job's file source had read (see :func:`read_migrated`)."""
    target = loop_directory.parent / MIGRATED_FILE_NAME
    hidden = target.with_name("." + target.name)
    hidden.write_text("".join(f"{name}\n" for name in names), encoding="utf-8")
    os.replace(hidden, target)
    return target


def read_migrated(loop_directory: Path) -> frozenset[str]:
    """The names :func:`write_migrated` recorded next to ``loop_directory`` (none: empty)."""
    try:
        text = (loop_directory.parent / MIGRATED_FILE_NAME).read_text(encoding="utf-8")
    except FileNotFoundError:
        return frozenset()
    return frozenset(line for line in text.splitlines() if line)
