"""The frontier bound: the fetch stage's figures read from its status files, the room they leave
for a crawl DB subtask, and a partition that releases no more than that room."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawl.config import Config, ConfigError, CrawlDbSection, PrioritySection, load_config
from crawl.crawldb.frontier_bound import FetchFigures, FrontierBound, fetch_figures
from crawl.crawldb.partition import CrawlDbPartition, partition_directory
from crawl.progress import StageStatus, read_statuses
from crawl.stages import CRAWLDB_URLS_RELEASED

T0 = 1_700_000_000_000
SECTION = CrawlDbSection(buffer_ops=1000, block_records=4, max_deltas=3, max_archives=2,
                         file_grace_seconds=10.0, fsync=False)


def _fetch_status(subtask: int, queued: int, in_flight: int, results: dict[str, int],
                  written: float, stage: str = "fetch", taken_in: int = 0) -> dict:
    return {"stage": stage, "subtask": subtask, "time": written,
            "gauges": {"queued": queued, "in_flight": in_flight, "hosts_active": 3},
            "counters": {**{f"results.{k}": v for k, v in results.items()},
                         "urls.in": taken_in, "started.page": 999, "timers": 5000}}


def _crawldb_status(subtask: int, released: int, written: float) -> dict:
    return {"stage": "crawldb", "subtask": subtask, "time": written, "gauges": {},
            "counters": {"urls.released": released, "urls.new": 10 * released}}


def test_the_frontiers_figures_are_summed_over_the_fresh_status_files() -> None:
    statuses = [
        _fetch_status(0, 100, 20, {"FETCHED": 500, "HTTP_ERROR": 40}, 1000.0, taken_in=650),
        _fetch_status(1, 50, 5, {"FETCHED": 300}, 990.0, taken_in=400),
        _fetch_status(2, 7000, 9, {"FETCHED": 1}, 900.0),  # a gone attempt: stale
        _fetch_status(0, 999, 999, {"FETCHED": 999}, 1000.0, stage="process"),
        {"stage": "fetch", "time": "soon", "gauges": {}, "counters": {}},  # not its figures
        _crawldb_status(0, 600, 1000.0),  # this subtask's own: its count is live
        _crawldb_status(1, 500, 999.0),
        _crawldb_status(2, 70, 10.0),  # stale
    ]
    assert fetch_figures(statuses, now=1001.0, own_subtask=0) == FetchFigures(
        held=175, fetched=840, taken_in=1050, released_by_others=500, time=990.0)
    assert fetch_figures(statuses) == FetchFigures(7184, 841, 1050, 1170, 900.0)
    assert fetch_figures(statuses[3:], now=1001.0) is None


def test_the_figures_are_read_from_the_files_the_stages_write(tmp_path: Path) -> None:
    for stage, subtask, counts, gauges in (
        ("fetch", 0, {"results.FETCHED": 40, "results.ROBOTS_DENIED": 2, "urls.in": 90,
                      "batches.in": 7}, {"queued": 12, "in_flight": 3}),
        ("crawldb", 1, {"urls.released": 120}, {}),
    ):
        status = StageStatus(tmp_path, stage, subtask, interval=3600)
        try:
            status.gauges.update(gauges)
            for name, amount in counts.items():
                status.count(name, amount)
            status.write()
        finally:
            status.close()
    figures = fetch_figures(read_statuses(tmp_path))
    assert (figures.held, figures.fetched, figures.taken_in, figures.released_by_others) == (
        15, 42, 90, 120)


def _figures(held: int, fetched: int, time: float, *, taken_in: int = 0,
             others: int = 0) -> FetchFigures:
    return FetchFigures(held, fetched, taken_in, others, time)


class _Figures:
    """Fetch figures a test sets, read by the bound when it looks."""

    def __init__(self) -> None:
        self.value: FetchFigures | None = None

    def __call__(self) -> FetchFigures | None:
        return self.value


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_room_is_what_the_rate_times_the_seconds_leaves_and_at_least_the_minimum() -> None:
    figures, clock = _Figures(), _Clock(100.0)
    bound = FrontierBound(30.0, 2000, figures, clock=clock)
    assert bound.room() is None  # nothing known: no bound
    figures.value = _figures(500, 0, 99.5)
    clock.now = 101.0
    assert bound.room() == 1500  # no rate yet: the minimum
    figures.value = _figures(1200, 1000, 109.5)
    clock.now = 111.0
    assert bound.room() == 3000 - 1200
    assert bound.rate == pytest.approx(100.0)
    # A later figure at 300 a second moves the mean part of the way.
    figures.value = _figures(1200, 4000, 119.5)
    clock.now = 121.0
    assert bound.room() == int((100 + 0.3 * 200) * 30) - 1200


def test_urls_released_are_in_the_frontier_until_the_fetch_stage_took_them_in() -> None:
    figures, clock = _Figures(), _Clock(10.0)
    figures.value = _figures(0, 0, 9.0)
    bound = FrontierBound(30.0, 1000, figures, clock=clock)
    assert bound.room() == 1000
    bound.released(600)
    clock.now = 10.5  # within the interval: the same figures
    assert bound.room() == 400
    bound.released(400)
    assert bound.room() == 0
    # The fetch stage took 300 of them in and holds them: the rest are on their way.
    figures.value = _figures(300, 0, 11.0, taken_in=300)
    clock.now = 11.5
    assert bound.frontier() == 1000
    assert bound.room() == 0
    # It took them all in, and 700 of them are fetched already.
    figures.value = _figures(300, 0, 11.9, taken_in=1000)
    clock.now = 12.5
    assert bound.room() == 700
    # Another crawl DB subtask's releases not taken in yet count too.
    figures.value = _figures(300, 0, 12.5, taken_in=1000, others=200)
    clock.now = 13.5
    assert bound.room() == 500


def test_a_subtask_takes_its_share_and_a_restarted_fetch_stage_is_a_new_start() -> None:
    figures, clock = _Figures(), _Clock(10.0)
    figures.value = _figures(0, 5000, 9.0)
    bound = FrontierBound(10.0, 1000, figures, share=0.25, clock=clock)
    assert bound.room() == 250
    figures.value = _figures(0, 100, 11.0)  # counters from zero again
    clock.now = 11.5
    assert bound.room() == 250
    assert bound.rate == 0
    figures.value = _figures(0, 2100, 21.0)
    clock.now = 21.5
    assert bound.room() == 500  # 200 a second x 10 s, a quarter of it
    assert bound.rate == pytest.approx(200.0)


def test_figures_gone_stale_lift_the_bound() -> None:
    figures, clock = _Figures(), _Clock(10.0)
    figures.value = _figures(5000, 0, 9.0)
    bound = FrontierBound(30.0, 1000, figures, clock=clock)
    assert bound.room() == -4000
    figures.value = None
    clock.now = 11.0
    assert bound.room() is None


def _partition(directory: str, room: list[int | None]) -> CrawlDbPartition:
    return CrawlDbPartition(
        directory, SECTION,
        priority=PrioritySection(host_window=100, release_batch=50, release_seconds=1.0),
        timer=lambda: 0.0, frontier_room=lambda: room[0])


def test_a_partition_releases_no_more_than_the_frontier_has_room_for(tmp_path: Path) -> None:
    room: list[int | None] = [7]
    db = _partition(partition_directory(str(tmp_path), 0), room)
    db.apply([(f"http://h{i}.example/", "L", "http://b.other/") for i in range(40)], [], T0)
    assert db.flush(T0).counts[CRAWLDB_URLS_RELEASED.name] == 7
    # Full: the partition looks again a release interval later, and releases nothing now.
    room[0] = 0
    assert db.next_release_ms(T0 + 1000) == T0 + 2000
    assert CRAWLDB_URLS_RELEASED.name not in db.flush(T0 + 1000).counts
    assert db.pending == 33
    room[0] = None  # no figures: no bound, release_batch as ever
    assert db.next_release_ms(T0 + 1000) == T0 + 1000
    assert db.flush(T0 + 1000).counts[CRAWLDB_URLS_RELEASED.name] == 33


def test_frontier_settings_are_checked() -> None:
    for key, value in (("frontier_seconds", -1.0), ("frontier_min_urls", 0)):
        with pytest.raises(ConfigError, match=f"priority.{key}"):
            Config(priority=PrioritySection(**{key: value})).validate()
    assert load_config(overrides={"priority.frontier_seconds": "0"}).priority.frontier_seconds == 0
