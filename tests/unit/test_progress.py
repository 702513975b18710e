"""Crawl figures: status files written atomically, read back tolerantly, summed; quiet and
idle."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crawl.progress import (
    CounterCarry,
    CrawlFigures,
    QuietTracker,
    RunningMean,
    StageStatus,
    is_idle,
    read_statuses,
)
from crawl.stages import FETCH_IN_FLIGHT, FETCH_QUEUED, FETCH_TIMERS, PROCESS_PAGES
from crawl.status import Status

HOUR = 3600.0  # an interval long enough that the writer thread never writes during a test


@pytest.fixture
def status(tmp_path: Path) -> Iterator[StageStatus]:
    stage = StageStatus(tmp_path / "status", "fetch", 3, attempt=1, interval=HOUR)
    yield stage
    stage.close()


def _only_file(directory: Path) -> dict[str, Any]:
    names = os.listdir(directory)
    assert names == ["fetch-00003.json"], names
    return json.loads((directory / names[0]).read_text(encoding="utf-8"))


def test_write_creates_the_status_file(tmp_path: Path, status: StageStatus) -> None:
    status.count("pages")
    status.count("pages", 4)
    status.count("bytes", 1024)
    status.gauges["queued"] = 7
    status.gauge_functions["in_flight"] = lambda: 2.5

    status.write()

    data = _only_file(tmp_path / "status")
    assert data["stage"] == "fetch"
    assert (data["subtask"], data["attempt"], data["pid"]) == (3, 1, os.getpid())
    assert data["counters"] == {"pages": 5, "bytes": 1024}
    assert data["gauges"] == {"queued": 7, "in_flight": 2.5}
    assert isinstance(data["time"], float)


def test_write_replaces_the_file_and_leaves_no_temporary(
    tmp_path: Path, status: StageStatus
) -> None:
    for n in range(1, 4):
        status.count("pages")
        status.write()

        assert _only_file(tmp_path / "status")["counters"] == {"pages": n}


def test_gauge_function_that_fails_on_a_resized_dict_keeps_the_last_value(
    tmp_path: Path, status: StageStatus
) -> None:
    status.gauges["hosts"] = 4

    def resized() -> float:
        raise RuntimeError("dictionary changed size during iteration")

    status.gauge_functions["hosts"] = resized
    status.write()

    assert _only_file(tmp_path / "status")["gauges"] == {"hosts": 4}


def test_close_writes_a_last_time(tmp_path: Path) -> None:
    stage = StageStatus(tmp_path, "process", 0, interval=HOUR)
    stage.count("pages.FETCHED", 9)

    stage.close()

    assert read_statuses(tmp_path)[0]["counters"] == {"pages.FETCHED": 9}


# -- reading ----------------------------------------------------------------------------------


def test_read_statuses_of_missing_directory(tmp_path: Path) -> None:
    assert read_statuses(tmp_path / "nowhere") == []


def test_read_statuses_skips_garbage(tmp_path: Path) -> None:
    good = {"stage": "fetch", "subtask": 0, "counters": {"pages": 1}, "gauges": {}, "time": 1.0}
    (tmp_path / "fetch-00000.json").write_text(json.dumps(good), encoding="utf-8")
    (tmp_path / "fetch-00001.json").write_text('{"stage": "fetch", "coun', encoding="utf-8")
    (tmp_path / "fetch-00002.json").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "fetch-00003.json").write_text("", encoding="utf-8")
    (tmp_path / "fetch-00004.json").mkdir()
    (tmp_path / ".fetch-00005.json.123.tmp").write_text(json.dumps(good), encoding="utf-8")
    (tmp_path / "notes.txt").write_text(json.dumps(good), encoding="utf-8")

    assert read_statuses(tmp_path) == [good]


def test_statuses_written_by_several_subtasks_are_all_read(tmp_path: Path) -> None:
    stages = [StageStatus(tmp_path, "fetch", n, interval=HOUR) for n in range(3)]
    for n, stage in enumerate(stages):
        stage.count("pages", n + 1)
        stage.close()

    figures = CrawlFigures.from_statuses(read_statuses(tmp_path))

    assert figures.counter("fetch.pages") == 6


# -- figures ----------------------------------------------------------------------------------

STATUSES: list[dict[str, Any]] = [
    {"stage": "fetch", "subtask": 0, "time": 10.0,
     "counters": {"requests": 5, "robots.requests": 2}, "gauges": {"queued": 3, "in_flight": 1}},
    {"stage": "fetch", "subtask": 1, "time": 12.5,
     "counters": {"requests": 7}, "gauges": {"queued": 0, "in_flight": 0.5}},
    {"stage": "process", "subtask": 0, "time": 11.0,
     "counters": {"pages.FETCHED": 8, "pages.HTTP_ERROR": 1, "pages.ROBOTS_DENIED": 4,
                  "links": 100}, "gauges": {}},
    {"stage": "process", "subtask": 1, "time": 9.0,
     "counters": {"pages.FETCHED": 2, "pages.FETCH_ERROR": 1, "pages.ROBOTS_DENIED": 1}},
    {"subtask": 9, "counters": {"odd": 1}},
]


def test_figures_sum_across_subtasks() -> None:
    figures = CrawlFigures.from_statuses(STATUSES)

    assert figures.counter("fetch.requests") == 12
    assert figures.counter("fetch.robots.requests") == 2
    assert figures.counter("process.pages.FETCHED") == 10
    assert figures.counter("?.odd") == 1
    assert figures.counter("fetch.nothing") == 0
    assert figures.gauge("fetch.queued") == 3.0
    assert figures.gauge("fetch.in_flight") == 1.5
    assert figures.gauge("fetch.nothing") == 0.0
    assert figures.newest == 12.5


def test_figures_with_prefix() -> None:
    figures = CrawlFigures.from_statuses(STATUSES)

    assert figures.with_prefix("process.pages.") == {
        "FETCHED": 10, "HTTP_ERROR": 1, "ROBOTS_DENIED": 5, "FETCH_ERROR": 1,
    }


def test_pages_exclude_robots_denials() -> None:
    assert CrawlFigures.from_statuses(STATUSES).pages == 12


def test_figures_of_nothing() -> None:
    figures = CrawlFigures.from_statuses([])

    assert (figures.pages, figures.counters, figures.gauges, figures.newest) == (0, {}, {}, 0.0)


def test_fingerprint_changes_when_any_counter_moves() -> None:
    before = CrawlFigures.from_statuses(STATUSES).fingerprint
    moved = [dict(status) for status in STATUSES]
    moved[2] = {**moved[2], "counters": {**moved[2]["counters"], "links": 101}}

    assert CrawlFigures.from_statuses(STATUSES).fingerprint == before
    assert CrawlFigures.from_statuses(moved).fingerprint != before


def test_timer_firings_are_not_progress() -> None:
    fetched = PROCESS_PAGES.member_key(Status.FETCHED.value)
    waiting = CrawlFigures(counters={fetched: 5, FETCH_TIMERS.key: 10})
    woke = CrawlFigures(counters={fetched: 5, FETCH_TIMERS.key: 90})
    assert waiting.fingerprint == woke.fingerprint
    tracker = QuietTracker()
    tracker.quiet_for(waiting, 100.0)
    assert tracker.quiet_for(woke, 110.0) == 10.0


# -- quiet and idle -------------------------------------------------------------------------


def _figures(pages: int, queued: float = 0, in_flight: float = 0) -> CrawlFigures:
    return CrawlFigures(
        counters={PROCESS_PAGES.member_key(Status.FETCHED.value): pages},
        gauges={FETCH_QUEUED.key: queued, FETCH_IN_FLIGHT.key: in_flight},
    )


def test_quiet_only_after_counters_stand_still() -> None:
    tracker = QuietTracker()

    # (now, figures, quiet for, idle with idle_seconds=30)
    steps = [
        (100.0, _figures(5), 0.0, False),  # first look: nothing to compare with yet
        (110.0, _figures(5), 10.0, False),
        (129.9, _figures(5), 29.9, False),
        (130.0, _figures(5), 30.0, True),
        (131.0, _figures(6), 0.0, False),  # a counter moved: the quiet starts again
        (150.0, _figures(6), 19.0, False),
        (161.0, _figures(6), 30.0, True),
        (500.0, _figures(6), 369.0, True),
    ]
    for now, figures, quiet, idle in steps:
        quiet_for = tracker.quiet_for(figures, now)

        assert quiet_for == pytest.approx(quiet), now
        assert is_idle(figures, quiet_for, 30.0) is idle, now


@pytest.mark.parametrize("in_flight", [1, 0.5, 3])
def test_never_quiet_while_in_flight(in_flight: float) -> None:
    tracker = QuietTracker()
    busy = _figures(5, in_flight=in_flight)

    for now in (0.0, 100.0, 1000.0):
        assert tracker.quiet_for(busy, now) == 0.0

    # Once the last fetch is done, the quiet is counted from the last busy look.
    assert tracker.quiet_for(_figures(5), 1004.0) == pytest.approx(4.0)


def test_never_quiet_before_any_counter() -> None:
    tracker = QuietTracker()

    for now in (0.0, 10.0, 100.0):
        assert tracker.quiet_for(CrawlFigures(), now) == 0.0


@pytest.mark.parametrize(
    ("queued", "quiet_seconds", "idle_seconds", "idle"),
    [
        (0, 30.0, 30.0, True),
        (0, 31.0, 30.0, True),
        (0, 29.9, 30.0, False),
        (0, 0.0, 30.0, False),
        # URLs waiting (for a politeness delay, say) are not idleness however quiet
        (1, 1000.0, 30.0, False),
        (0.5, 1000.0, 30.0, False),
        # idle_seconds 0: a continuous crawl, never idle
        (0, 1e9, 0.0, False),
    ],
)
def test_is_idle(queued: float, quiet_seconds: float, idle_seconds: float, idle: bool) -> None:
    assert is_idle(_figures(5, queued=queued), quiet_seconds, idle_seconds) is idle


def test_running_mean_gives_the_mean_since_the_last_take() -> None:
    mean = RunningMean()
    assert mean.take() == 0.0
    mean.add(10)
    mean.add(20)
    assert mean.take() == 15.0
    assert mean.take() == 0.0
    mean.add(1.26)
    assert mean.take() == 1.3


def test_pages_count_outcomes_only() -> None:
    from crawl.progress import CrawlFigures

    figures = CrawlFigures.from_statuses([{
        "stage": "process",
        "counters": {"pages.FETCHED": 3, "pages.ROBOTS_DENIED": 2, "directives.noindex": 1},
    }])
    assert figures.pages == 3


def test_counters_of_a_restarted_subtask_carry_those_of_its_earlier_attempts() -> None:
    carry = CounterCarry()

    def status(attempt: int, subtask: int = 0, **counters: int) -> dict[str, Any]:
        return {"stage": "process", "subtask": subtask, "attempt": attempt, "counters": counters}

    def figures(*statuses: dict[str, Any]) -> dict[str, int]:
        return CrawlFigures.from_statuses(carry.carry(statuses)).counters

    assert figures(status(0, pages=5), status(0, 1, pages=2)) == {"process.pages": 7}
    assert figures(status(0, pages=9), status(0, 1, pages=2)) == {"process.pages": 11}
    # Subtask 0 failed and restarted: its new attempt starts at zero.
    assert figures(status(1, pages=1, refetches=1), status(0, 1, pages=3)) == {
        "process.pages": 13, "process.refetches": 1}
    assert figures(status(1, pages=4), status(0, 1, pages=3)) == {"process.pages": 16}
    assert figures(status(2, pages=2), status(0, 1, pages=3)) == {"process.pages": 18}
