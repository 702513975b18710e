"""Where a crawl keeps its files, all under one output directory.

``warc/`` the archive, ``logs/`` crawl logs (and Flink's own log under ``logs/flink``),
``loop/`` the file log that carries discovered URLs round the job, ``status/`` the figures of
every subtask, ``budget/`` the page-budget ledger, ``checkpoints/`` and ``savepoints/`` Flink's,
``flink-conf/`` the Flink configuration directory of a local run, ``summary.json`` the summary.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

__all__ = ["OutputLayout"]


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
    def flink_conf(self) -> Path:
        return self.root / "flink-conf"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    def holds_crawl(self) -> bool:
        """Whether a crawl has already used this directory."""
        return self.loop.exists() or self.warc.exists() or self.checkpoints.exists()

    def latest_restore_point(self) -> Path | None:
        """The newest savepoint, or else the newest completed checkpoint, None if neither."""
        savepoints = [p for p in self.savepoints.glob("savepoint-*") if (p / "_metadata").exists()]
        if savepoints:
            return max(savepoints, key=lambda p: (p / "_metadata").stat().st_mtime)
        checkpoints = [p for p in self.checkpoints.glob("*/chk-*") if (p / "_metadata").exists()]
        if checkpoints:
            return max(checkpoints, key=lambda p: (p / "_metadata").stat().st_mtime)
        return None

    def clear(self) -> None:
        """Remove what a previous crawl wrote here (only the crawl's own entries)."""
        for path in (self.warc, self.logs, self.loop, self.status, self.budget,
                     self.crawldb, self.checkpoints, self.savepoints, self.flink_conf):
            if path.exists():
                shutil.rmtree(path)
        self.summary.unlink(missing_ok=True)

    def make(self) -> None:
        """Create the directories a crawl writes into."""
        for path in (self.warc, self.flink_logs, self.loop, self.status, self.budget,
                     self.crawldb, self.checkpoints, self.savepoints, self.flink_conf):
            path.mkdir(parents=True, exist_ok=True)
