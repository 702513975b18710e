"""Crawl figures: what every stage reports, and how the launcher reads them.

Each subtask of each stage keeps a :class:`StageStatus` (counters that only grow, gauges that
go up and down) and a background thread writes it every second to
``status/<stage>-<subtask>.json`` (atomically, by rename). The launcher reads these files to
print progress, to decide that a bounded crawl is over (budget used, or idle: nothing queued,
nothing in flight and no counter moving for ``idle_seconds``) and to print the summary.
Counters must only move with crawl work (a gauge for anything periodic), or the crawl never
looks quiet. The
files work the same on one machine and on a cluster with a shared filesystem.

A status file is a stage's figures, not a URL's outcome status (:mod:`crawl.status`); the
stages' names and the figures read outside the stage that counts them are in
:mod:`crawl.stages`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawl.memory import MemoryTrace
from crawl.stages import (
    CRAWLDB_BUFFERED,
    CRAWLDB_PENDING,
    FETCH_IN_FLIGHT,
    FETCH_QUEUED,
    FETCH_TIMERS,
    PROCESS_PAGES,
)
from crawl.status import Status

__all__ = [
    "CounterCarry",
    "CrawlFigures",
    "QuietTracker",
    "RunningMean",
    "StageStatus",
    "is_idle",
    "read_json_objects",
    "read_statuses",
]


class StageStatus:
    """Counters and gauges of one subtask (its figures, named as :mod:`crawl.stages` says),
    written to its status file every ``interval`` seconds.

    The owning operator updates :attr:`counters` and :attr:`gauges` (plain dicts) from its own
    thread; the writer thread only copies them, which is atomic under the GIL.

    A follower (:meth:`follow`: the Flink metrics of :mod:`operators.metrics`) can copy the
    figures elsewhere on the owner's thread after each write, at no cost to :meth:`count`.
    """

    def __init__(
        self,
        directory: str | Path,
        stage: str,
        subtask: int,
        attempt: int = 0,
        interval: float = 1.0,
    ) -> None:
        self.counters: dict[str, int] = {}
        self.gauges: dict[str, float] = {}
        #: Gauges computed by the writer thread (for figures too costly to keep per record).
        self.gauge_functions: dict[str, Callable[[], float]] = {}
        #: CPU seconds of the operator's handlers (thread time: waiting for the interpreter
        #: lock does not count); reported as ``busy_pct`` of wall time.
        self.busy_seconds = 0.0
        self._busy_seen = (0.0, time.monotonic())
        self._directory = Path(directory)
        self._directory.mkdir(parents=True, exist_ok=True)
        MemoryTrace.start_if_asked(self._directory)
        self._path = self._directory / f"{stage}-{subtask:05d}.json"
        self._header = {"stage": stage, "subtask": subtask, "attempt": attempt, "pid": os.getpid()}
        self._interval = interval
        #: Every gauge as of the last write (gauge functions included), for readers that must
        #: not call the gauge functions themselves (some take the mean since their last call).
        self.gauge_values: dict[str, float] = {}
        self._follower: Callable[[], None] | None = None
        self._follower_thread = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"status-{stage}-{subtask}", daemon=True
        )
        self._thread.start()

    def count(self, name: str, amount: int = 1) -> None:
        """Add ``amount`` to counter ``name``."""
        self.counters[name] = self.counters.get(name, 0) + amount

    def write(self) -> None:
        """Write the file now (atomically)."""
        snapshot = dict(self._header)
        snapshot["time"] = time.time()
        snapshot["counters"] = self.counters.copy()
        gauges = self.gauges.copy()
        for name, function in list(self.gauge_functions.items()):
            try:
                gauges[name] = function()
            except Exception:  # noqa: BLE001 - e.g. a dict resized under us: skip this once
                pass
        busy, now = self.busy_seconds, time.monotonic()
        seen_busy, seen_at = self._busy_seen
        if busy and now > seen_at:
            gauges["busy_pct"] = round(100.0 * (busy - seen_busy) / (now - seen_at), 1)
        self._busy_seen = (busy, now)
        snapshot["gauges"] = gauges
        self.gauge_values = gauges
        if self._follower is not None:
            # Followed at the owner's next count(): the follower may only run on its thread.
            self.count = self._count_and_follow  # type: ignore[method-assign]
        temporary = self._path.with_name(
            f".{self._path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
        )
        try:
            temporary.write_text(json.dumps(snapshot, sort_keys=True), encoding="utf-8")
            os.replace(temporary, self._path)
        except OSError:
            # Figures are advisory; a full disk must not take the operator down with it.
            pass

    def follow(self, follower: Callable[[], None]) -> None:
        """Call ``follower()`` now and then on this thread, at the first :meth:`count` it
        makes after each write (so about once per ``interval`` while the owner counts).

        A follower can do there what only the owner's thread may do, such as calling into the
        JVM from PyFlink's thread mode (:mod:`operators.metrics`). Between writes
        :meth:`count` costs what it always does.
        """
        self._follower = follower
        self._follower_thread = threading.get_ident()
        follower()

    def flush(self, current: Iterable[str] = ()) -> None:
        """Give the follower the figures as they are now, on the owner's thread, without
        waiting for a write and a count: for a stage that falls idle, whose next write would
        otherwise be followed by no count, leaving the follower one burst behind for good.
        ``current`` names gauge functions to evaluate now (those that read the owner's state;
        the others keep their value of the last write)."""
        follower = self._follower
        if follower is None or threading.get_ident() != self._follower_thread:
            return
        now = {}
        for name in current:
            try:
                now[name] = self.gauge_functions[name]()
            except Exception:  # noqa: BLE001 - as in write(): skip this once
                pass
        self.gauge_values = {**self.gauge_values, **self.gauges, **now}
        self.__dict__.pop("count", None)
        follower()

    def _count_and_follow(self, name: str, amount: int = 1) -> None:
        StageStatus.count(self, name, amount)
        follower = self._follower
        if follower is not None and threading.get_ident() == self._follower_thread:
            self.__dict__.pop("count", None)
            follower()

    def gauge_value(self, name: str) -> float:
        """Gauge ``name`` as of the last write; a gauge set since then, as it is now."""
        value = self.gauge_values.get(name)
        return self.gauges.get(name, 0.0) if value is None else value

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.write()

    def close(self) -> None:
        """Stop the writer thread after a last write."""
        self._stop.set()
        self._thread.join(timeout=5)
        self.write()


class RunningMean:
    """A figure summed and counted as it happens; :meth:`take` gives the mean since the last
    take (for gauges such as "how late did timers fire lately")."""

    __slots__ = ("_seen", "count", "total")

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0
        self._seen = (0.0, 0)

    def add(self, value: float) -> None:
        self.total += value
        self.count += 1

    def take(self) -> float:
        """Mean of the values added since the last call (0 when none), rounded to 0.1."""
        total, count = self.total, self.count
        seen_total, seen_count = self._seen
        self._seen = (total, count)
        return round((total - seen_total) / (count - seen_count), 1) if count > seen_count else 0.0


def read_json_objects(directory: str | Path, pattern: str = "*.json") -> list[dict[str, Any]]:
    """The JSON objects of the files of ``directory`` that match ``pattern``, in name order
    (files being replaced, unreadable or holding something else are skipped)."""
    objects = []
    path = Path(directory)
    if not path.is_dir():
        return objects
    for entry in sorted(path.glob(pattern)):
        try:
            value = json.loads(entry.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(value, dict):
            objects.append(value)
    return objects


def read_statuses(directory: str | Path) -> list[dict[str, Any]]:
    """Every stage file in ``directory`` (files being replaced or unreadable are skipped)."""
    return read_json_objects(directory)


class CounterCarry:
    """Counters that survive task restarts.

    A subtask restarted after a failure is a new attempt whose counters start again at zero
    (its status file says which attempt it is). The launcher reads every status file while the
    crawl runs; through this, each subtask's counters are its current attempt's plus the last
    ones seen of its earlier attempts (the work an attempt did between its last write and its
    failure is missed, and fetches made again after the restore count twice, as they were made).
    """

    def __init__(self) -> None:
        self._last: dict[tuple[str, int], tuple[int, dict[str, int]]] = {}
        self._carried: dict[tuple[str, int], dict[str, int]] = {}

    def carry(self, statuses: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``statuses`` with the counters of earlier attempts added."""
        carried_statuses = []
        for status in statuses:
            ident = (str(status.get("stage", "?")), int(status.get("subtask", 0)))
            attempt = int(status.get("attempt", 0))
            counters = {name: int(value) for name, value in status.get("counters", {}).items()}
            seen = self._last.get(ident)
            if seen is not None and seen[0] != attempt:
                carried = self._carried.setdefault(ident, {})
                for name, value in seen[1].items():
                    carried[name] = carried.get(name, 0) + value
            self._last[ident] = (attempt, counters)
            carried = self._carried.get(ident)
            if carried:
                counters = {name: counters.get(name, 0) + carried.get(name, 0)
                            for name in counters.keys() | carried.keys()}
            carried_statuses.append({**status, "counters": counters})
        return carried_statuses


@dataclass
class CrawlFigures:
    """Counters summed over subtasks, per stage (``stage.counter``), and gauges summed too."""

    counters: dict[str, int] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)
    newest: float = 0.0

    @classmethod
    def from_statuses(cls, statuses: Iterable[Mapping[str, Any]]) -> CrawlFigures:
        figures = cls()
        for status in statuses:
            stage = status.get("stage", "?")
            figures.newest = max(figures.newest, float(status.get("time", 0.0)))
            for name, value in status.get("counters", {}).items():
                key = f"{stage}.{name}"
                figures.counters[key] = figures.counters.get(key, 0) + int(value)
            for name, value in status.get("gauges", {}).items():
                key = f"{stage}.{name}"
                figures.gauges[key] = figures.gauges.get(key, 0) + float(value)
        return figures

    def counter(self, key: str) -> int:
        return self.counters.get(key, 0)

    def gauge(self, key: str) -> float:
        return self.gauges.get(key, 0.0)

    def with_prefix(self, prefix: str) -> dict[str, int]:
        """Counters whose key starts with ``prefix``, with the prefix removed."""
        return {k[len(prefix) :]: v for k, v in self.counters.items() if k.startswith(prefix)}

    @property
    def pages(self) -> int:
        """Page fetch outcomes processed (robots.txt requests and robots denials excluded)."""
        return sum(
            v for k, v in self.with_prefix(PROCESS_PAGES.member_prefix).items()
            if k != Status.ROBOTS_DENIED
        )

    @property
    def fingerprint(self) -> tuple[tuple[str, int], ...]:
        """Changes whenever a counter of progress moves (timer firings are not progress: a
        host waiting for its back-off, or for a page budget that is used up, wakes for
        nothing)."""
        return tuple(sorted(
            item for item in self.counters.items() if item[0] not in _NOT_PROGRESS
        ))


#: Counters that move while a crawl makes no progress.
_NOT_PROGRESS = frozenset({FETCH_TIMERS.key})


class QuietTracker:
    """How long the crawl has been quiet: nothing in flight and no counter moving.

    A bounded crawl ends only after a quiet spell: when idle (nothing queued either) for
    ``crawl.idle_seconds``, or when the page budget is used up for a few seconds, so that the
    loop has carried the last outcomes round and no new loop file appears while the job stops.
    """

    def __init__(self) -> None:
        self._fingerprint: tuple[tuple[str, int], ...] | None = None
        self._quiet_since = 0.0

    def quiet_for(self, figures: CrawlFigures, now: float) -> float:
        """Seconds the crawl has been quiet as of ``now`` (0 when something moves)."""
        fingerprint = figures.fingerprint
        if (
            figures.gauge(FETCH_IN_FLIGHT.key) > 0
            or fingerprint != self._fingerprint
            or not figures.counters
        ):
            self._fingerprint = fingerprint
            self._quiet_since = now
            return 0.0
        return now - self._quiet_since

    def interrupt(self, now: float) -> None:
        """Count the quiet spell from ``now`` again (the job was not running: restarting)."""
        self._quiet_since = now


def is_idle(figures: CrawlFigures, quiet_seconds: float, idle_seconds: float) -> bool:
    """Idle: nothing queued (in the frontier, in a crawl DB buffer, or in the crawl DB waiting
    to be released to the frontier), and quiet for ``idle_seconds`` (0 means never idle)."""
    return (
        idle_seconds > 0
        and figures.gauge(FETCH_QUEUED.key) == 0
        and figures.gauge(CRAWLDB_BUFFERED.key) == 0
        and figures.gauge(CRAWLDB_PENDING.key) == 0
        and quiet_seconds >= idle_seconds
    )
