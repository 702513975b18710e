"""Deleting consumed loop files without ever losing one a restore could need.

A loop file may go once (a) it has been read to its end and (b) no retained checkpoint can
still refer to it as unread or half-read. The decode stage sees every line with the path of
its file, so:

(a) A file has been read to its end when the line just read is the file's last line. Lines
    are unique (each carries its producer's id and sequence number), and a file is read by one
    reader from start to end, so seeing its last line means every earlier line went out before
    it, in this attempt or in one whose effects a restored checkpoint already holds.
(b) At that moment the janitor notes the newest completed checkpoint, ``c``. Checkpoint
    ``c + 1`` may have started before the file was finished, but ``c + 2`` can only start once
    ``c + 1`` has completed, so after the file was finished (one checkpoint at a time, as
    ``flink-conf.yaml`` sets). The file is deleted once every retained checkpoint is numbered
    ``c + 2`` or more: none of them can refer to it.

Completed checkpoints are read from the job's checkpoint directory (``chk-<n>/_metadata``),
which must therefore be a local or mounted path. Files finished shortly before a failure are
left behind (the restored job never reads them again, so no janitor sees their last line);
they are small and harmless.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["CheckpointDirectory", "LoopJanitor", "last_line"]

log = logging.getLogger(__name__)

_CHECKPOINT_NAME = re.compile(r"chk-(\d+)$")
_TAIL_BYTES = 64 * 1024


def last_line(path: str | Path) -> str | None:
    """The last non-empty line of a text file (without its line break), None if it has none."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        chunk = _TAIL_BYTES
        while True:
            start = max(0, size - chunk)
            handle.seek(start)
            data = handle.read(size - start).rstrip(b"\r\n")
            newline = data.rfind(b"\n")
            if newline >= 0 or start == 0:
                tail = data[newline + 1 :]
                return tail.decode("utf-8", "replace") if tail else None
            chunk *= 4


class CheckpointDirectory:
    """The completed checkpoints of one job, read from its checkpoint directory."""

    def __init__(self, job_directory: Path) -> None:
        self._directory = job_directory

    def completed(self) -> list[int]:
        """Numbers of the checkpoints whose metadata is written (oldest first)."""
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


class LoopJanitor:
    """Tracks the loop files one decode subtask reads and deletes them when safe.

    Call :meth:`saw` for every line read and :meth:`sweep` now and then (it lists the
    checkpoint directory at most once per ``sweep_interval`` seconds). Thread-safe, so that
    a timer thread can sweep while no lines arrive.
    """

    def __init__(
        self,
        checkpoints: CheckpointDirectory,
        sweep_interval: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._checkpoints = checkpoints
        self._sweep_interval = sweep_interval
        self._monotonic = monotonic
        self._last_lines: dict[str, str | None] = {}
        self._finished: list[tuple[str, int]] = []
        self._last_sweep = monotonic()
        self._lock = threading.Lock()
        self.deleted = 0

    def saw(self, path: str, line: str) -> None:
        """Note that ``line`` of the file at ``path`` was read. O(1) after a file's first line."""
        expected = self._last_lines.get(path)
        if expected is None:
            if path in self._last_lines:
                return  # an empty or unreadable file: nothing to wait for
            try:
                expected = last_line(path)
            except OSError as error:
                log.warning("cannot read the end of loop file %s: %s", path, error)
                expected = None
            self._last_lines[path] = expected
            if expected is None:
                return
        if line == expected:
            del self._last_lines[path]
            completed = self._checkpoints.completed()
            with self._lock:
                self._finished.append((path, completed[-1] if completed else -1))

    def sweep(self) -> int:
        """Delete the finished files no retained checkpoint can refer to; returns how many."""
        with self._lock:
            now = self._monotonic()
            if not self._finished or now - self._last_sweep < self._sweep_interval:
                return 0
            self._last_sweep = now
            finished, self._finished = self._finished, []
        completed = self._checkpoints.completed()
        oldest = completed[0] if completed else -1
        keep: list[tuple[str, int]] = []
        deleted = 0
        for path, newest_when_finished in finished:
            if oldest >= newest_when_finished + 2:
                try:
                    os.remove(path)
                    deleted += 1
                except FileNotFoundError:
                    pass
                except OSError as error:
                    log.warning("cannot delete consumed loop file %s: %s", path, error)
            else:
                keep.append((path, newest_when_finished))
        with self._lock:
            self._finished.extend(keep)
            self.deleted += deleted
        return deleted

    @property
    def pending(self) -> int:
        """Files read to their end and not deleted yet."""
        return len(self._finished)
