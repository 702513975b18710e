"""Where a crawl keeps its files, all under one output directory.

``warc/`` the archive, ``logs/`` crawl logs (and Flink's own log under ``logs/flink``),
``loop/`` the file log that carries discovered URLs round the job, ``status/`` the figures of
every subtask, ``budget/`` the page-budget ledger, ``checkpoints/`` and ``savepoints/`` Flink's,
``flink-conf/`` the Flink configuration directory of a local run, ``summary.json`` the summary,
``crawldb/`` the crawl DB's DRUM files, ``crawl.json`` the settings fixed for the crawl's life,
``pins/`` the pins that pause deletions while a savepoint's files are kept
(:mod:`crawl.savepoint_files`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

__all__ = ["MIGRATED_FILE_NAME", "FixedSettingsError", "OutputLayout", "flink_uri"]

#: The list of loop files an older job's file source had read, made when resuming its
#: savepoint (next to the loop directory, one name a line).
MIGRATED_FILE_NAME = "loop-read-by-file-source.txt"


def flink_uri(path: Path) -> str:
    """A local directory as Flink takes it in a setting: ``file://`` and the absolute path as
    it is. Flink's ``Path`` escapes what a URI must escape itself, so an escaped form
    (``Path.as_uri()``: ``a%20b`` for a space) would name another directory, ``a%20b``, where
    a resume finds no checkpoint."""
    return "file://" + str(path.absolute())


class FixedSettingsError(ValueError):
    """A setting fixed for the life of a crawl differs from the one the crawl started with."""


@dataclasses.dataclass(frozen=True)
class OutputLayout:
    """The paths of one crawl's output directory (``root`` is made absolute)."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root).absolute())

    @property
    def warc(self) -> Path:
        return self.root / "warc"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def flink_logs(self) -> Path:
        return self.root / "logs" / "flink"

    @property
    def loop(self) -> Path:
        return self.root / "loop"

    @property
    def status(self) -> Path:
        return self.root / "status"

    @property
    def budget(self) -> Path:
        return self.root / "budget"

    @property
    def crawldb(self) -> Path:
        """The crawl DB's DRUM files, a directory per partition (named by checkpoint state)."""
        return self.root / "crawldb"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def savepoints(self) -> Path:
        return self.root / "savepoints"

    @property
    def pins(self) -> Path:
        """Pins that pause the crawl's deletions (:mod:`crawl.savepoint_files`)."""
        return self.root / "pins"

    @property
    def flink_conf(self) -> Path:
        return self.root / "flink-conf"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def index(self) -> Path:
        """The CDXJ index of every WARC file (crawl/archive/cdxj.py)."""
        return self.root / "index.cdxj"

    @property
    def fixed_settings(self) -> Path:
        return self.root / "crawl.json"

    def record_fixed_settings(self, settings: Mapping[str, object]) -> None:
        """Write the settings that must not change while the crawl lives (vnode and crawl DB
        partition counts: they decide where every URL's state is)."""
        self.fixed_settings.write_text(json.dumps(dict(settings), indent=2), encoding="utf-8")

    def check_fixed_settings(
        self, settings: Mapping[str, object], implied: Mapping[str, object] | None = None
    ) -> None:
        """Raise :class:`FixedSettingsError` naming the first setting that differs from the
        recorded one (nothing recorded: nothing to check). ``implied``: the value of a setting
        that crawls recorded before it existed had (its default then)."""
        implied = implied or {}
        try:
            recorded = json.loads(self.fixed_settings.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as error:
            raise FixedSettingsError(f"{self.fixed_settings}: unreadable: {error}") from None
        for key, value in settings.items():
            before = recorded.get(key, implied.get(key))
            if before != value:
                raise FixedSettingsError(
                    f"{key}: this crawl was started with {before} and it cannot change "
                    f"during the crawl's life (it decides where or how every URL's state is "
                    f"kept), got {value}: set it as the crawl has it to resume the crawl"
                )

    def holds_crawl(self) -> bool:
        """Whether a crawl has already used this directory."""
        return self.loop.exists() or self.warc.exists() or self.checkpoints.exists()

    def latest_restore_point(self) -> Path | None:
        """Where a resumed crawl goes on from, None if nowhere: the newest completed checkpoint
        of a job that started after the newest savepoint (a run resumed from it that then
        failed), or else that savepoint, or else the newest completed checkpoint.

        Checkpoints of the job that took the savepoint are passed over even when newer: they
        were taken while it drained (Flink names a savepoint after its job's first six hex
        digits, and keeps a job's checkpoints in a directory named by its id).
        """

        def completed_at(point: Path) -> float:
            return (point / "_metadata").stat().st_mtime

        savepoints = [p for p in self.savepoints.glob("savepoint-*") if (p / "_metadata").exists()]
        checkpoints = [p for p in self.checkpoints.glob("*/chk-*") if (p / "_metadata").exists()]
        if savepoints:
            savepoint = max(savepoints, key=completed_at)
            taker = savepoint.name.split("-")[1]
            saved_at = completed_at(savepoint)
            checkpoints = [
                p for p in checkpoints
                if not p.parent.name.startswith(taker) and completed_at(p) > saved_at
            ]
            if not checkpoints:
                return savepoint
        return max(checkpoints, key=completed_at) if checkpoints else None

    def check_writable(self) -> None:
        """Create the output directory if need be and write, sync and remove a file in it:
        OSError (read-only file system, no permission, a full disk, not a directory) if a
        crawl could not write here."""
        self.root.mkdir(parents=True, exist_ok=True)
        probe = self.root / f".write-probe-{os.getpid()}"
        try:
            with open(probe, "wb") as file:
                file.write(b"pyflink-crawler write probe\n" * 16)
                file.flush()
                os.fsync(file.fileno())
        finally:
            probe.unlink(missing_ok=True)

    def clear(self) -> None:
        """Remove what a previous crawl wrote here (only the crawl's own entries)."""
        for path in (self.warc, self.logs, self.loop, self.status, self.budget,
                     self.crawldb, self.checkpoints, self.savepoints, self.flink_conf, self.pins):
            if path.exists():
                shutil.rmtree(path)
        self.summary.unlink(missing_ok=True)
        self.fixed_settings.unlink(missing_ok=True)
        (self.root / MIGRATED_FILE_NAME).unlink(missing_ok=True)

    def make(self) -> None:
        """Create the directories a crawl writes into."""
        for path in (self.warc, self.flink_logs, self.loop, self.status, self.budget,
                     self.crawldb, self.checkpoints, self.savepoints, self.flink_conf):
            path.mkdir(parents=True, exist_ok=True)
