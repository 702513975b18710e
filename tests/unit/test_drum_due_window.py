"""The due window (drum/due_window.py): selections made from it are the selections a pass over
the runs makes, and while it lasts they read no run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from drum import (
    NEVER,
    ArchivePolicy,
    Drum,
    DrumConfig,
    DrumStatus,
    DuePolicy,
    discoveries,
    neutral,
    outcomes,
)
from drum.due_window import ALL_DUE, WindowBuilder, due_times
from drum.files import RunFile
from drum.record import concat

T0 = 1_700_000_000_000
HOSTS = 12
STEPS, RESTORE_AT = 120, 60


def _config(window_urls: int, leased: bool = False) -> DrumConfig:
    """A crawl DB's policy (QUEUED marks), or with ``leased`` selections leased for 3 s."""
    return DrumConfig(
        buffer_ops=64,
        block_records=16,
        max_deltas=6,
        delta_fanout=4,  # as the crawl DB's
        delta_base_records=8,
        fsync=False,
        due=DuePolicy(max_urls=25, per_host=3, lease_ms=3000 if leased else 0,
                      mark_queued=not leased, depth_weight=0.1, refresh_share=0.3,
                      window_urls=window_urls),
    )


class _Crawl:
    """The same random crawl operations, applied to several DRUMs."""

    def __init__(self, seed: int, urls: int = 600, later: bool = False) -> None:
        self.rng = np.random.default_rng(seed)
        self.later = later  # some URLs found due later, not at once
        self.universe = self.rng.integers(1, 2**63, urls, dtype=np.uint64)
        self.hosts = self.rng.integers(1, HOSTS + 1, urls).astype(np.uint32)
        self.queued: list[int] = []  # indexes into the universe, handed out

    def discover(self, now: int, drums: list[Drum]) -> None:
        rng = self.rng
        pick = rng.integers(0, len(self.universe), rng.integers(1, 2 + len(self.universe) // 15))
        announced = np.where(rng.random(len(pick)) < 0.1, now // 1000 - 5, 0)
        due = now + np.where(rng.random(len(pick)) < 0.5, rng.integers(0, 30_000, len(pick)), 0)
        values = discoveries(len(pick), now_ms=now, score=rng.random(len(pick)) * 3,
                             depth=rng.integers(0, 6, len(pick)), host=self.hosts[pick],
                             announced_s=announced, next_fetch_ms=due if self.later else None)
        payloads = [b"http://h%d/%d" % (self.hosts[i], i) for i in pick]
        for drum in drums:
            drum.check_update(self.universe[pick], values.copy(), payloads, now_ms=now)

    def outcomes(self, now: int, drums: list[Drum]) -> None:
        rng = self.rng
        if not self.queued:
            return
        count = int(rng.integers(1, len(self.queued) + 1))
        done, self.queued = self.queued[:count], self.queued[count:]
        pick = np.array(done)
        n = len(pick)
        status = rng.choice([DrumStatus.FETCHED, DrumStatus.FETCHED, DrumStatus.HTTP_ERROR,
                             DrumStatus.FETCH_ERROR], n)
        later = now + rng.integers(0, 20_000, n)
        next_fetch = np.where(rng.random(n) < 0.15, NEVER, later)
        values = outcomes(n, status=status, at_ms=now - 1, next_fetch_ms=next_fetch,
                          host=self.hosts[pick])
        values["recrawl_s"] = (now - 1) // 1000
        values["interval_s"] = rng.integers(1, 30, n)
        for drum in drums:
            drum.update(self.universe[pick], values.copy(), None, now_ms=now)

    def strays(self, now: int, drums: list[Drum]) -> None:
        """Outcomes of URLs that were not handed out (a late or replayed outcome), half of them
        without recrawl fields: one can give a URL retired after its last fetch a next fetch
        time, and make an announcement newer than that fetch take effect."""
        rng = self.rng
        pick = rng.integers(0, len(self.universe), 2)
        n = len(pick)
        values = outcomes(n, status=DrumStatus.FETCHED, at_ms=now - 1, host=self.hosts[pick],
                          next_fetch_ms=now + rng.integers(0, 60_000, n))
        values["recrawl_s"] = np.where(rng.random(n) < 0.5, (now - 60_000) // 1000, 0)
        for drum in drums:
            drum.update(self.universe[pick], values.copy(), None, now_ms=now)

    def marks(self, now: int, drums: list[Drum]) -> None:
        """Flags on keys known or not (an unknown key gets a record of status NONE)."""
        pick = self.rng.integers(0, len(self.universe), 3)
        values = neutral(len(pick))
        values["flags"] = 1
        values["host"] = self.hosts[pick]
        for drum in drums:
            drum.update(self.universe[pick], values.copy(), None, now_ms=now)

    def handed_out(self, keys: np.ndarray) -> None:
        index = {int(k): i for i, k in enumerate(self.universe.tolist())}
        self.queued += [index[int(k)] for k in keys.tolist()]


def _same_records(a: np.ndarray, b: np.ndarray) -> None:
    """Equal records; scores to float32 rounding (sums folded in another grouping)."""
    np.testing.assert_allclose(a["score"], b["score"], rtol=1e-5)
    a, b = a.copy(), b.copy()
    a["score"] = b["score"] = 0
    assert a.tobytes() == b.tobytes()


def _next_due(drum: Drum, now: int) -> int | None:
    """When the first record whose next fetch time is still to come at ``now`` can be
    selected (its lease, when longer, included), from every record. (A record due but leased
    gives no wake-up, with or without the window.)"""
    soonest = None
    for _, values, _ in drum.items(archived=False):
        due = due_times(values)
        unleased = values.copy()
        unleased["leased_until_ms"] = 0
        later = due[(due_times(unleased) > now) & (due != NEVER)]
        if len(later) and (soonest is None or later.min() < soonest):
            soonest = int(later.min())
    return soonest


def _same_selection(windowed, passed, now: int, next_due: int | None) -> None:
    assert windowed is not None
    assert passed is not None
    assert windowed.keys.tolist() == passed.keys.tolist()
    _same_records(windowed.values, passed.values)
    assert windowed.payloads == passed.payloads
    assert (windowed.remaining, windowed.full, windowed.revisits) == (
        passed.remaining, passed.full, passed.revisits)
    # The window may wake its DRUM earlier (at its horizon), never after a record comes due.
    if next_due is not None:
        assert windowed.next_due_ms is not None
        assert now < windowed.next_due_ms <= next_due


@pytest.mark.parametrize(("seed", "urls", "window_urls", "leased"),
                         [(1, 600, 10_000, False), (3, 120, 60, False),
                          (4, 120, 30, False), (5, 600, 40, False), (6, 600, 10_000, True),
                          (7, 120, 60, True)])
def test_selections_from_the_window_are_those_of_a_pass(
    tmp_path, seed, urls, window_urls, leased
):
    """Also with windows too small for the crawl (given up, built again, or never built), and
    with leases instead of QUEUED marks and URLs found due later (the DRUM's other uses)."""
    crawl = _Crawl(seed, urls, later=leased)
    windowed = Drum.create(str(tmp_path / "windowed"), _config(window_urls, leased))
    passed = Drum.create(str(tmp_path / "passed"), _config(0, leased))
    drums = [windowed, passed]
    now = T0
    for step in range(STEPS):
        now += int(crawl.rng.integers(200, 1500))
        crawl.discover(now, drums)
        crawl.outcomes(now, drums)
        if step % 7 == 0:
            crawl.marks(now, drums)
        if step % 3 == 0:
            crawl.strays(now, drums)
        major = step % 37 == 36
        a = windowed.merge(now_ms=now, major=major, select=True)
        b = passed.merge(now_ms=now, major=major, select=True)
        _same_selection(a.due, b.due, now, _next_due(passed, now))
        crawl.handed_out(a.due.keys)
        if step == RESTORE_AT:  # a restore: the window is built again by the next selection's pass
            manifest = windowed.manifest_bytes()
            windowed.close()
            windowed = Drum.restore(str(tmp_path / "windowed"), manifest, (),
                                    _config(window_urls, leased))
            drums = [windowed, passed]
    for (keys_a, values_a, archived_a), (keys_b, values_b, archived_b) in zip(
            windowed.items(), passed.items(), strict=True):
        assert keys_a.tolist() == keys_b.tolist()
        assert archived_a == archived_b
        _same_records(values_a, values_b)
    stats = windowed.window_stats
    if window_urls >= 10_000:
        # After the restore, the window lasts: every selection comes from it but those of the
        # passes that build it (the first, and each major merge's).
        assert not [name for name in stats if name.startswith("given_up")]
        assert stats["selections"] + stats["builds"] >= STEPS - RESTORE_AT - 1
        assert stats["selections"] >= (STEPS - RESTORE_AT) // 2
        assert stats.get("lookups", 0) > 0  # announcements of keys outside it were looked up
    elif urls < 600:
        assert stats["builds"] >= 1
        assert stats["selections"] >= 1
        assert stats.get("given_up.full", 0) + stats.get("given_up.horizon", 0) > 0
    else:  # more records due at once than the window holds, all along
        assert stats
        assert set(stats) <= {"given_up.held", "given_up.due_now"}
    assert passed.window_stats == {}
    windowed.close()
    passed.close()


def test_a_selection_from_the_window_reads_no_run(tmp_path, monkeypatch):
    crawl = _Crawl(7)
    drum = Drum.create(str(tmp_path / "d"), _config(10_000))
    now = T0
    for _ in range(20):
        now += 500
        crawl.discover(now, [drum])
        crawl.outcomes(now, [drum])
        crawl.handed_out(drum.merge(now_ms=now, select=True).due.keys)
    reads = []
    real = RunFile.read_block
    monkeypatch.setattr(RunFile, "read_block", lambda run, block: reads.append(block) or
                        real(run, block))
    drum.check_update(crawl.universe[:0], discoveries(0, now_ms=now), [], now_ms=now)
    result = drum.merge(now_ms=now + 500, select=True)
    assert result.due.from_window
    assert reads == []
    drum.close()


def test_a_window_is_built_with_the_records_due_soonest():
    now = T0
    n = 10
    values = outcomes(n, status=DrumStatus.FETCHED, at_ms=now - 10,
                      next_fetch_ms=now + np.array([5, 1, 9, 3, 3, 7, 2, 8, 6, 4]) * 1000)
    queued = outcomes(2, status=DrumStatus.QUEUED, at_ms=now - 5)
    keys = np.arange(1, n + 3, dtype=np.uint64)
    builder = WindowBuilder(capacity=8, target=4, now_ms=now)
    builder.offer(keys, concat([values, queued]))
    window = builder.result()
    assert window is not None
    # Due at +1, +2, +3, +3 s (the tie at 3 s is held whole), and the two QUEUED records.
    assert window.horizon_ms == now + 4000 - 1
    assert sorted(window.keys.tolist()) == [2, 4, 5, 7, 11, 12]
    assert window.next_rebuild_ms() == now + 4000
    everything = WindowBuilder(capacity=20, target=10, now_ms=now)
    everything.offer(keys, concat([values, queued]))
    assert everything.result().horizon_ms == ALL_DUE


def test_no_window_when_more_records_are_due_now_than_it_holds():
    now = T0
    keys = np.arange(1, 31, dtype=np.uint64)
    revisits = outcomes(30, status=DrumStatus.FETCHED, at_ms=now - 10, next_fetch_ms=now - 1)
    builder = WindowBuilder(capacity=40, target=20, now_ms=now)
    builder.offer(keys, revisits)
    assert builder.result() is None
    assert builder.failed == "due_now"
    # New URLs are held whatever their due time: more than the capacity, no window either.
    builder = WindowBuilder(capacity=20, target=10, now_ms=now)
    builder.offer(keys, discoveries(30, now_ms=now, next_fetch_ms=now + 60_000))
    assert builder.result() is None
    assert builder.failed == "held"


def test_due_times_of_records_never_due():
    records = neutral(3)
    records["status"] = [DrumStatus.NONE, DrumStatus.QUEUED, DrumStatus.FETCHED]
    records["next_fetch_ms"] = [5, 5, NEVER]
    assert due_times(records).tolist() == [NEVER, NEVER, NEVER]


def test_no_window_with_policies_a_merge_cannot_follow():
    config = _config(1000)
    assert config.windowed
    assert not replace(config, due=replace(config.due, window_urls=0)).windowed
    assert not replace(config, due=replace(config.due, min_score=1.0)).windowed
    for archive in (ArchivePolicy(max_failures=3), ArchivePolicy(min_score=0.5),
                    ArchivePolicy(host_max_urls=100)):
        assert not replace(config, archive=archive).windowed
    assert replace(config, archive=ArchivePolicy(archive_done=True)).windowed


def test_an_outcome_that_makes_an_older_announcement_effective_brings_its_key_in(tmp_path):
    """A URL retired (never due) and not held, announced since its last fetch: an outcome
    without recrawl fields gives it a next fetch time, and the announcement, older than that
    and newer than the last fetch, makes it due at once. The window must see it although the
    outcome alone is due after the horizon and announces nothing."""
    policy = DuePolicy(max_urls=10, per_host=0, lease_ms=0, window_urls=4)
    config = DrumConfig(buffer_ops=64, block_records=16, fsync=False, due=policy)
    windowed = Drum.create(str(tmp_path / "windowed"), config)
    passed = Drum.create(str(tmp_path / "passed"), replace(config, due=replace(policy,
                                                                              window_urls=0)))
    drums = [windowed, passed]
    keys = np.arange(1, 5, dtype=np.uint64)
    fetched = outcomes(4, status=DrumStatus.FETCHED, at_ms=T0, host=7,
                       next_fetch_ms=[NEVER, T0 + 100_000, T0 + 200_000, T0 + 300_000])
    fetched["recrawl_s"] = T0 // 1000
    fetched["interval_s"] = 600
    for drum in drums:
        drum.update(keys, fetched.copy(), [b"http://h/%d" % k for k in keys], now_ms=T0)
        drum.merge(now_ms=T0)
    now = T0 + 10_000
    for drum in drums:  # a sitemap announces key 1's content changed after its last fetch
        drum.check_update(keys[:1], discoveries(1, now_ms=now, host=7,
                                                announced_s=T0 // 1000 + 5), [b"http://h/1"],
                          now_ms=now)
        assert len(drum.merge(now_ms=now, select=True).due.keys) == 0  # (builds the window)
    assert windowed.window_stats["builds"] == 1
    now += 10_000
    again = outcomes(1, status=DrumStatus.FETCHED, at_ms=now, host=7,
                     next_fetch_ms=now + 600_000)  # no recrawl fields
    for drum in drums:
        drum.update(keys[:1], again.copy(), now_ms=now)
    a = windowed.merge(now_ms=now + 1, select=True).due
    b = passed.merge(now_ms=now + 1, select=True).due
    assert b.keys.tolist() == [1]
    assert a.from_window
    assert a.keys.tolist() == b.keys.tolist()
    windowed.close()
    passed.close()
