"""The budget cutoff: the best URLs the page budget has room for go, the others wait."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from crawl.config import AdmissionSection, ConfigError, CrawlDbSection, PrioritySection, load_config
from crawl.crawldb.budgets import Budgets, MemoryStore
from crawl.crawldb.cutoff import (
    RANK_EDGES,
    BudgetCutoff,
    cutoff_rank,
    frontier_size,
    read_waiting,
    write_waiting,
)
from crawl.crawldb.partition import CrawlDbPartition
from crawl.fetch_requests import decode_entries
from crawl.progress import CrawlFigures, StageStatus, is_idle, read_statuses
from crawl.stages import CRAWL_DB, CRAWLDB_PENDING, FETCH, FETCH_IN_FLIGHT, FETCH_QUEUED

T0 = 1_700_000_000_000


def _bucket(rank: float) -> int:
    return int(np.searchsorted(RANK_EDGES, rank, side="right"))


def test_the_cutoff_is_the_edge_where_the_better_urls_fill_what_the_budget_has_left() -> None:
    one, two = _bucket(1.0), _bucket(0.01)
    partitions = [{one: 3, two: 10}, {one: 2, _bucket(1e-5): 100}]
    # Five URLs near 1.0 in all: a budget of five takes them, and nothing below.
    assert cutoff_rank(partitions, 5) == pytest.approx(RANK_EDGES[one - 1])
    assert 0.89 < cutoff_rank(partitions, 5) <= 1.0
    # Six: the bucket of 0.01 is needed, and goes whole.
    assert 0.0089 < cutoff_rank(partitions, 6) <= 0.01
    assert cutoff_rank(partitions, 15) == cutoff_rank(partitions, 6)
    # Sixteen: the bucket of 1e-5, whose lower edge is 1e-5 itself or a hair below (as
    # 10.0 ** -5.0 rounds).
    assert cutoff_rank(partitions, 16) == RANK_EDGES[_bucket(1e-5) - 1]
    assert 0.89e-5 < cutoff_rank(partitions, 16) <= 1e-5
    # Room for every URL waiting: nothing is held back; no room: nothing new goes.
    assert cutoff_rank(partitions, 116) == -math.inf
    assert cutoff_rank(partitions, 0) == math.inf
    assert cutoff_rank([], 10) == -math.inf
    # A rank of 0 (or below the first edge) sits in bucket 0, whose lower edge is -inf.
    assert cutoff_rank([{0: 4}], 2) == -math.inf


def test_histograms_go_through_files_and_bad_files_are_skipped(tmp_path: Path) -> None:
    counts = np.zeros(len(RANK_EDGES) + 1, dtype=np.int64)
    counts[_bucket(0.5)] = 7
    write_waiting(tmp_path, 3, counts)
    write_waiting(tmp_path, 4, np.zeros_like(counts))
    (tmp_path / "partition-00009.json").write_text("{not json")
    assert read_waiting(tmp_path) == [{_bucket(0.5): 7}, {}]
    assert read_waiting(tmp_path / "missing") == []


def test_the_budget_left_counts_what_the_frontier_holds_and_what_went_since(
    tmp_path: Path,
) -> None:
    clock = [100.0]
    claimed = [0]
    frontier = [(0, 0.0)]
    cutoff = BudgetCutoff(10, 1.0, tmp_path, lambda: claimed[0], lambda: frontier[0],
                          clock=lambda: clock[0])
    good, poor = _bucket(1.0), _bucket(1e-3)
    counts = np.zeros(len(RANK_EDGES) + 1, dtype=np.int64)
    counts[good], counts[poor] = 4, 20
    write_waiting(tmp_path, 0, counts)

    def value() -> float:
        clock[0] += 1.0
        return cutoff.value()

    # 10 pages left, 4 good and 20 poor URLs waiting: the bar is in the poor bucket.
    assert value() <= 1e-3
    # 7 pages spent, 2 URLs in the fetch stage: room for 1, a good one.
    claimed[0], frontier[0] = 7, (2, clock[0])
    assert 0.89 < value() <= 1.0
    # Released since the fetch stage wrote its figures: that room is taken too.
    cutoff.released(1)
    assert value() == math.inf
    # Once the fetch stage's figures are newer than the release, it counts there only.
    frontier[0] = (3, clock[0] + 0.5)
    assert value() == math.inf
    claimed[0], frontier[0] = 5, (0, clock[0] + 0.5)
    assert value() <= 1e-3
    # Computed at most once per interval.
    claimed[0] = 10
    assert cutoff.value() <= 1e-3
    assert value() == math.inf


def test_the_frontier_is_what_every_fetch_subtask_holds() -> None:
    statuses = [
        {"stage": FETCH.figures, "time": 20.0,
         "gauges": {FETCH_QUEUED.name: 5, FETCH_IN_FLIGHT.name: 2}},
        {"stage": FETCH.figures, "time": 18.0, "gauges": {FETCH_QUEUED.name: 1}},
        {"stage": CRAWL_DB.figures, "time": 10.0, "gauges": {FETCH_QUEUED.name: 100}},
    ]
    assert frontier_size(statuses) == (8, 18.0)
    assert frontier_size([]) == (0, 0.0)


def test_the_frontier_is_read_from_the_files_the_fetch_stage_writes(tmp_path: Path) -> None:
    for subtask, (queued, in_flight) in enumerate(((4, 1), (2, 3))):
        status = StageStatus(tmp_path, "fetch", subtask, interval=3600)
        status.gauges.update(queued=queued, in_flight=in_flight)
        status.close()
    held, written = frontier_size(read_statuses(tmp_path))
    assert held == 10
    assert written > 0


def test_the_cutoff_setting_is_off_or_at_least_the_budget_left(tmp_path: Path) -> None:
    assert load_config(None).priority.budget_cutoff == 0
    assert load_config(None, {"priority.budget_cutoff": "2"}).priority.budget_cutoff == 2
    with pytest.raises(ConfigError, match="budget_cutoff"):
        load_config(None, {"priority.budget_cutoff": "0.5"})


def _partition(tmp_path: Path, cutoff: list[float], published: list[np.ndarray]):
    section = dataclasses.replace(CrawlDbSection(), fsync=False)
    budgets = Budgets(MemoryStore(), AdmissionSection(domain_base_urls=0, shape_base_urls=0))
    return CrawlDbPartition(
        str(tmp_path / "p"), section, budgets=budgets,
        priority=PrioritySection(host_window=100), cutoff=lambda: cutoff[0], timer=_no_time,
        publish_waiting=published.append,
    )


def test_a_partition_holds_urls_below_the_cutoff_as_pending_and_releases_them_when_it_falls(
    tmp_path: Path,
) -> None:
    cutoff = [0.05]
    published: list[np.ndarray] = []
    db = _partition(tmp_path, cutoff, published)
    found = [("http://a.org/good", "L", "http://b.org/"),
             ("http://farm.test/1", "L", "http://a.org/"),
             ("http://farm.test/2", "L", "http://a.org/")]
    db.apply(found, [], T0, cash=[0.2, 3e-3, 3e-5])
    answer = db.flush(T0 + 1)
    sent = [item[0] for _, batch in answer.requests for item in decode_entries(batch)]
    assert sent == ["http://a.org/good"]
    # Held back, not deferred: they wait for their turn and keep the crawl from being idle.
    assert db.below_cutoff == 2
    assert db.pending == 2
    assert db.deferred["budget:importance"] == 0
    figures = CrawlFigures(counters={}, gauges={CRAWLDB_PENDING.key: db.pending})
    assert not is_idle(figures, quiet_seconds=100, idle_seconds=10)
    # The partition told what waits: one URL in the bucket of 3e-3, one in 3e-5's.
    assert {int(b): int(n) for b, n in enumerate(published[-1]) if n} == {
        _bucket(3e-3): 1, _bucket(3e-5): 1}
    # Nothing new comes, the cutoff stays: the partition looks again later, releases nothing.
    wake = db.next_release_ms(T0 + 2)
    assert wake is not None
    assert wake > T0 + 2
    assert db.flush(wake).requests == []
    # The cutoff falls below the better one: it goes at the next look, the other waits.
    cutoff[0] = 1e-4
    wake = db.next_release_ms(wake)
    answer = db.flush(wake)
    sent = [item[0] for _, batch in answer.requests for item in decode_entries(batch)]
    assert sent == ["http://farm.test/1"]
    assert db.below_cutoff == 1
    # No cutoff at all: the last one goes.
    cutoff[0] = -math.inf
    wake = db.next_release_ms(wake)
    sent = [item[0] for _, batch in db.flush(wake).requests for item in decode_entries(batch)]
    assert sent == ["http://farm.test/2"]
    assert db.below_cutoff == 0
    assert db.pending == 0
    assert db.next_release_ms(wake + 1) is None


def test_the_deferral_by_importance_still_defers_when_it_is_the_higher_bar(tmp_path: Path) -> None:
    section = dataclasses.replace(CrawlDbSection(), fsync=False)
    budgets = Budgets(MemoryStore(), AdmissionSection(domain_base_urls=0, shape_base_urls=0))
    db = CrawlDbPartition(str(tmp_path / "p"), section, budgets=budgets,
                          priority=PrioritySection(host_window=100, defer_below=0.01),
                          cutoff=lambda: 1e-6, publish_waiting=lambda counts: None,
                          timer=_no_time)
    db.apply([("http://a.org/x", "L", "http://b.org/"), ("http://farm.test/1", "L", "http://a/")],
             [], T0, cash=[0.02, 1e-4], level=1.0)
    db.flush(T0 + 1)
    assert db.deferred["budget:importance"] == 1
    assert db.below_cutoff == 0
    assert db.pending == 0


def _no_time() -> float:
    """A release's pass over the DRUM takes no time (on a loaded machine it may take longer
    than the share of ``release_seconds`` a pass may use, and space the releases out)."""
    return 0.0
