"""Priority: the cash that enters at seeds and sitemaps and flows along links, the crawl DB
releasing each host's URLs with the most cash a window at a time (DRUM due selection, QUEUED
records), and the frontier serving a host's queue best first."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest

from crawl.config import CrawlDbSection, PrioritySection
from crawl.crawldb.partition import RELEASE_GATHER_MS, CrawlDbPartition, partition_directory
from crawl.fetch_requests import decode_entries
from crawl.frontier.host_queue import DictStore, HostQueue, QueueEntry
from crawl.processing import RecentUrls
from crawl.progress import CrawlFigures, is_idle
from crawl.stages import (
    CRAWLDB_PENDING,
    CRAWLDB_RELEASES_FROM_WINDOW,
    CRAWLDB_URLS_RELEASED,
    FETCH_TIMERS,
)
from crawl.urls.priority import CashPolicy, link_cash, rank
from drum import (
    ArchivePolicy,
    Drum,
    DrumConfig,
    DrumStatus,
    DuePolicy,
    discoveries,
    host_key,
    outcomes,
    selection,
    url_keys,
)
from drum.merge import MergeState
from drum.selection import DueSelector
from tests.fakes.crawldb import KeyedState, record_of

T0 = 1_700_000_000_000
SECTION = CrawlDbSection(buffer_ops=1000, block_records=4, max_deltas=3, max_archives=2,
                         file_grace_seconds=10.0, fsync=False)
PRIORITY = PrioritySection(host_window=2, release_batch=100, release_seconds=1.0)


def _no_time() -> float:
    """A release's pass over the DRUM takes no time (on a loaded machine it may take longer
    than the share of ``release_seconds`` a pass may use, and space the releases out)."""
    return 0.0
POLICY = CashPolicy(PrioritySection())


# ---------------------------------------------------------------------------- cash


@pytest.mark.parametrize(
    ("hops", "injected", "legacy"),
    [
        ("", 10.0, 10.0),  # a seed: the user chose it
        ("S", 1.0, 1.0),  # a sitemap a robots.txt names (the robots.txt has no cash)
        ("L", None, 0.0),  # a link: its page's share
        ("LS", None, 0.0),  # a sitemap an index names: the index's share
        ("SM", None, 1.0),  # a URL a sitemap lists: the sitemap's share (older lines: a boost)
        ("LR", None, 0.0),
    ],
)
def test_cash_enters_at_seeds_and_sitemaps_and_flows_along_the_rest(
    hops: str, injected: float | None, legacy: float
) -> None:
    assert POLICY.injected(hops) == injected
    assert POLICY.legacy(hops) == legacy


def test_a_page_splits_its_cash_evenly_over_what_it_leads_to() -> None:
    assert link_cash(1.0, 4) == 0.25
    assert link_cash(1.0, 3) == 0.333333  # six significant digits travel
    assert link_cash(2e-9, 7) == pytest.approx(2.85714e-10)
    assert link_cash(1.0, 0) == 0.0  # nothing to lead to: nothing passed on
    assert link_cash(0.0, 5) == 0.0
    assert rank(np.array([0.5, 2.0])).tolist() == [0.5, 2.0]  # the rank is the cash


def test_priority_settings_are_checked() -> None:
    from crawl.config import Config, ConfigError, load_config

    for bad in ({"host_window": 0}, {"release_batch": 0}, {"release_seconds": 0},
                {"seed_boost": -1}, {"sitemap_boost": float("nan")}):
        with pytest.raises(ConfigError, match="priority"):
            Config(priority=PrioritySection(**bad)).validate()
    # The fixed amounts per link of earlier versions are refused with the reason.
    for key in ("other_domain_link", "same_domain_link", "depth_penalty"):
        with pytest.raises(ConfigError, match=f"priority.{key}: no longer a setting: links"):
            load_config(overrides={f"priority.{key}": "1"})


# ---------------------------------------------------------------------------- DRUM release


def _drum(tmp_path: Path, **due) -> Drum:
    policy = DuePolicy(max_urls=100, per_host=2, lease_ms=0, mark_queued=True, **due)
    config = DrumConfig(buffer_ops=1000, block_records=4, due=policy, fsync=False,
                        archive=ArchivePolicy(archive_done=True))
    return Drum.create(str(tmp_path / "drum"), config)


def _discover(drum: Drum, urls: list[str], scores: list[float], depths: list[int],
              now: int) -> None:
    hosts = np.array([host_key(u.split("/")[2]) for u in urls], dtype=np.uint32)
    values = discoveries(len(urls), now_ms=now, score=np.array(scores, dtype=np.float32),
                         depth=np.array(depths), host=hosts)
    drum.check_update(url_keys(urls), values, [u.encode() for u in urls], now_ms=now)


def _released(drum: Drum, now: int) -> tuple[list[str], int]:
    due = drum.merge(now_ms=now, major=True).due
    assert due is not None
    return [p.decode() for p in due.payloads], due.remaining


def test_a_release_takes_each_hosts_best_ranked_urls_up_to_its_window(tmp_path: Path) -> None:
    drum = _drum(tmp_path, depth_weight=0.5)
    urls = [f"http://a.example/{i}" for i in range(4)] + ["http://b.example/0"]
    # Ranks: 1.0, 3.0, 2.5 (score 3.5 at depth 2), 0.5, and b's 0.1.
    _discover(drum, urls, [1.0, 3.0, 3.5, 0.5, 0.1], [0, 0, 2, 0, 0], T0)
    released, remaining = _released(drum, T0 + 1)
    assert released == ["http://a.example/1", "http://a.example/2", "http://b.example/0"]
    assert remaining == 2
    # Released URLs are QUEUED: not due again, and they fill their host's window.
    assert _released(drum, T0 + 2) == ([], 2)
    # An outcome frees a slot of a's window: its next best goes.
    done = outcomes(1, status=DrumStatus.FETCHED, at_ms=T0 + 3, host=host_key("a.example"))
    drum.update(url_keys(["http://a.example/1"]), done, None, now_ms=T0 + 3)
    assert _released(drum, T0 + 4) == (["http://a.example/0"], 1)


def test_release_batch_bounds_a_release_best_first_across_hosts(tmp_path: Path) -> None:
    policy = DuePolicy(max_urls=2, per_host=5, lease_ms=0, mark_queued=True)
    drum = Drum.create(str(tmp_path / "d"), DrumConfig(block_records=2, due=policy, fsync=False))
    urls = ["http://a.example/0", "http://b.example/0", "http://c.example/0",
            "http://d.example/0"]
    _discover(drum, urls, [0.1, 4.0, 2.0, 3.0], [0] * 4, T0)
    assert _released(drum, T0 + 1) == (["http://b.example/0", "http://d.example/0"], 2)
    assert _released(drum, T0 + 2) == (["http://c.example/0", "http://a.example/0"], 0)
    assert drum.merge(now_ms=T0 + 3, major=True).due.full is False


def test_queued_records_are_neither_archived_nor_replaced_by_older_outcomes(
    tmp_path: Path,
) -> None:
    drum = _drum(tmp_path)
    url = "http://a.example/x"
    _discover(drum, [url], [1.0], [1], T0)
    assert _released(drum, T0 + 10)[0] == [url]
    # A replayed outcome older than the release does not replace QUEUED; a newer one does.
    old = outcomes(1, status=DrumStatus.FETCH_ERROR, at_ms=T0 + 5, host=host_key("a.example"))
    drum.update(url_keys([url]), old, None, now_ms=T0 + 11)
    drum.merge(now_ms=T0 + 12, major=True)
    ((keys, values, _),) = list(drum.items())
    assert values["status"].tolist() == [DrumStatus.QUEUED]  # kept in the main run
    new = outcomes(1, status=DrumStatus.FETCHED, at_ms=T0 + 20, host=host_key("a.example"))
    drum.update(url_keys([url]), new, None, now_ms=T0 + 21)
    drum.merge(now_ms=T0 + 22, major=True)
    assert drum.counters.archived == 1  # done for good: archived


# ---------------------------------------------------------------------------- crawl DB


@pytest.fixture
def directory(tmp_path: Path) -> str:
    return partition_directory(str(tmp_path / "crawldb"), 0)


def _batches(answer) -> dict[str, list[list]]:
    return {host: decode_entries(batch) for host, batch in answer.requests}


def test_the_crawl_db_releases_the_urls_with_most_cash_first(directory: str) -> None:
    state = KeyedState()
    db = CrawlDbPartition(directory, SECTION, priority=PRIORITY, timer=_no_time)
    page = "http://a.example/"
    links = [(f"http://a.example/{i}", "L", page) for i in range(4)]
    # /3 gets cash from three other pages, /2 from one richer page; /0 and /1 a little each.
    links += [("http://a.example/3", "L", f"http://{h}.other/") for h in ("x", "y", "z")]
    links += [("http://a.example/2", "L", "http://w.other/")]
    cash = [0.01] * 4 + [0.3] * 3 + [0.5]
    state.apply(db, links, [], T0, cash=cash)
    answer = state.flush(db, T0 + 500)
    batches = _batches(answer)
    assert [item[0] for item in batches["a.example"]] == ["http://a.example/3",
                                                           "http://a.example/2"]
    ranks = [item[4] for item in batches["a.example"]]
    assert ranks == pytest.approx([0.91, 0.51])  # the rank handed out is the cash
    assert answer.counts[CRAWLDB_URLS_RELEASED.name] == 2
    assert db.pending == 2
    assert record_of(db, "http://a.example/3")["status"] == DrumStatus.QUEUED
    # Nothing more until an outcome frees the window (and not before release_seconds).
    assert db.next_release_ms(T0 + 600) is None
    # The fetch passed /3's cash on: its outcome takes it out of the record.
    done = [("http://a.example/3", "FETCHED", 200, "http:200", T0 + 700, None, 0.91)]
    state.apply(db, [], done, T0 + 800)
    assert db.next_release_ms(T0 + 800) == T0 + 1500
    assert _batches(state.flush(db, T0 + 1000)) == {}  # merged, not released yet
    assert record_of(db, "http://a.example/3")["score"] == pytest.approx(0.0, abs=1e-6)
    answer = state.flush(db, T0 + 1500)
    assert [item[0] for item in _batches(answer)["a.example"]] in (
        ["http://a.example/0"], ["http://a.example/1"])
    assert db.pending == 1


def test_a_near_duplicates_links_give_back_part_of_their_cash(directory: str) -> None:
    db = CrawlDbPartition(directory, SECTION, priority=PRIORITY, timer=_no_time)
    db.apply([("http://a.example/x", "L", "http://b.other/")], [], T0, cash=[0.4])
    db.apply([], [], T0 + 1, rescore=[("http://a.example/x", "L", "http://b.other/", -0.75,
                                       0.4)])
    db.flush(T0 + 2)
    assert record_of(db, "http://a.example/x")["score"] == pytest.approx(0.1)


def test_lines_without_cash_give_seeds_and_sitemaps_their_boost_and_links_none(
    directory: str,
) -> None:
    # Loop lines and journals written before cash existed (an upgrade) still rank seeds first.
    db = CrawlDbPartition(directory, SECTION, priority=PRIORITY, timer=_no_time)
    db.apply([("http://a.example/", "", ""), ("http://a.example/l", "L", "http://a.example/"),
              ("http://a.example/m", "SM", "http://a.example/sitemap.xml")], [], T0)
    db.apply([], [], T0, rescore=[("http://a.example/m", "SM", "http://a.example/s", -0.5,
                                   None)])
    db.flush(T0 + 1)
    scores = [record_of(db, f"http://a.example/{path}")["score"] for path in ("", "l", "m")]
    assert scores == pytest.approx([10.0, 0.0, 0.5])


def test_seeds_go_before_links_and_a_restore_does_not_release_twice(directory: str,
                                                                   tmp_path: Path) -> None:
    state = KeyedState()
    db = CrawlDbPartition(directory, SECTION, priority=PRIORITY, timer=_no_time)
    state.apply(db, [("http://a.example/p", "L", "http://b.other/"),
                     ("http://a.example/", "", ""), ("http://a.example/q", "L", "")], [], T0,
                cash=[0.5, 0.0, 0.1])
    first = _batches(state.flush(db, T0 + 1))
    assert [item[0] for item in first["a.example"]] == ["http://a.example/",
                                                         "http://a.example/p"]
    saved = state.snapshot()
    db.close()
    # Restored from the checkpoint's values: the QUEUED URLs stay with the frontier.
    restored = CrawlDbPartition(directory, SECTION, manifest=saved.manifest,
                                journal=saved.journal, history=saved.history, priority=PRIORITY)
    assert restored.next_release_ms(T0 + 5) == T0 + 5  # a restored partition looks once
    assert _batches(restored.flush(T0 + 5)) == {}  # the window is full
    assert restored.pending == 1


def test_urls_that_come_together_after_a_quiet_spell_go_in_one_release(
    directory: str,
) -> None:
    state = KeyedState()
    db = CrawlDbPartition(directory, SECTION, priority=PRIORITY, timer=_no_time)
    # The crawl's start: the seeds go at once.
    state.apply(db, [("http://a.example/", "", "")], [], T0)
    assert db.release_wake_ms(T0) == T0
    assert set(_batches(state.flush(db, T0))) == {"a.example"}
    # Their pages' links come a second or two later, a loop file's lines a few network
    # buffers apart. A release is allowed at once, but the operator wakes the partition once
    # the rest may have come.
    later = T0 + 2000
    state.apply(db, [("http://b.example/", "L", "http://a.example/")], [], later, cash=[1.0])
    assert db.next_release_ms(later) == later
    assert db.release_wake_ms(later) == later + RELEASE_GATHER_MS
    state.apply(db, [("http://c.example/", "L", "http://a.example/")], [], later + 90,
                cash=[1.0])
    assert db.release_wake_ms(later + 90) == later + RELEASE_GATHER_MS  # from the first one
    first = _batches(state.flush(db, later + RELEASE_GATHER_MS))
    assert set(first) == {"b.example", "c.example"}  # both in the one release
    released = later + RELEASE_GATHER_MS
    # While the crawl runs, the release interval binds, not the gathering.
    links = [(f"http://a.example/{i}", "L", "http://a.example/") for i in range(3)]
    done = [("http://a.example/", "FETCHED", 200, "http:200", released + 200, None, 10.0)]
    state.apply(db, links, done, released + 300, cash=[1.0, 2.0, 3.0])
    assert db.release_wake_ms(released + 300) == released + 1000
    assert [item[0] for item in _batches(state.flush(db, released + 1000))["a.example"]] == [
        "http://a.example/2", "http://a.example/1"]  # its window of two, best first
    released += 1000
    # A quiet spell: the next URLs wait for the rest of theirs, then go.
    quiet = released + 10_000
    state.apply(db, [("http://e.example/", "L", "http://x.other/")], [], quiet, cash=[0.5])
    state.apply(db, [("http://f.example/", "L", "http://x.other/")], [], quiet + 40,
                cash=[0.5])
    assert db.release_wake_ms(quiet + 40) == quiet + RELEASE_GATHER_MS
    assert set(_batches(state.flush(db, quiet + RELEASE_GATHER_MS))) == {"e.example",
                                                                       "f.example"}
    # Without new operations, nothing to wait for.
    assert db.release_wake_ms(quiet + 200) is None


def test_without_priority_new_urls_go_at_once_in_the_order_found(directory: str) -> None:
    db = CrawlDbPartition(directory, SECTION, priority=PrioritySection(enabled=False))
    db.apply([(f"http://a.example/{i}", "L", "http://b.other/") for i in range(5)], [], T0)
    batch = _batches(db.flush(T0 + 1))["a.example"]
    assert [item[0] for item in batch] == [f"http://a.example/{i}" for i in range(5)]
    assert db.pending == 0
    assert db.next_release_ms(T0 + 2) is None


# ---------------------------------------------------------------------------- frontier


def test_a_host_queue_serves_retries_first_then_best_rank_first() -> None:
    queue = HostQueue(DictStore())
    queue.push(QueueEntry("http://a/1", "L", "", 0, 0.5).encode())
    queue.push(QueueEntry("http://a/retry", "L", "", 2, 0.1).encode())
    queue.push_ranked([QueueEntry("http://a/2", "L", "", 0, 3.0).encode(),
                       QueueEntry("http://a/3", "L", "", 0, 0.5).encode()])
    order = []
    while (payload := queue.pop()) is not None:
        order.append(QueueEntry.decode(payload).url)
    assert order == ["http://a/retry", "http://a/2", "http://a/1", "http://a/3"]


@pytest.mark.parametrize(
    ("entry", "payload"),
    [
        (QueueEntry("u", "L", "v"), '["u","L","v"]'),
        (QueueEntry("u", "L", "v", 2), '["u","L","v",2]'),
        (QueueEntry("u", "L", "v", 0, 1.5), '["u","L","v",0,1.5]'),
        (QueueEntry("u", "L", "v", 1, -0.25), '["u","L","v",1,-0.25]'),
    ],
)
def test_queue_entries_round_trip_in_their_compact_forms(entry: QueueEntry,
                                                         payload: str) -> None:
    assert entry.encode() == payload
    assert QueueEntry.decode(payload) == entry


# ---------------------------------------------------------------------------- process, idle


def test_the_recent_url_cache_holds_the_cash_of_repeats_and_sends_it_later() -> None:
    recent = RecentUrls(100, hold_seconds=1.0)
    popular = ("http://a.example/popular", "L", "http://a.example/1")
    assert recent.add(popular[0])
    assert not recent.add(popular[0])  # a repeat: dropped...
    recent.hold(popular, 0.25)  # ...with its cash held
    recent.hold(("http://a.example/popular", "L", "http://b.example/2"), 0.5)
    recent.hold(("http://a.example/other", "L", "http://a.example/1"), 0.0)  # nothing to hold
    assert recent.release(10.0) == []  # (the first call starts the clock)
    assert recent.release(10.5) == []
    assert recent.release(11.0) == [(popular, 0.75)]  # one record: the first repeat's path
    assert recent.release(12.0) == []


def test_urls_waiting_in_the_crawl_db_keep_the_crawl_from_being_idle() -> None:
    figures = CrawlFigures(counters={FETCH_TIMERS.key: 1}, gauges={CRAWLDB_PENDING.key: 3.0})
    assert not is_idle(figures, quiet_seconds=100, idle_seconds=10)
    figures.gauges[CRAWLDB_PENDING.key] = 0.0
    assert is_idle(figures, quiet_seconds=100, idle_seconds=10)


def test_a_partition_whose_releases_take_long_releases_less_often(directory: str) -> None:
    # Any release takes more than a millionth of a second: the interval stretches past 1 s.
    db = CrawlDbPartition(directory, SECTION, priority=PrioritySection(
        host_window=1, release_seconds=1.0, release_max_share=1e-6))
    db.apply([(f"http://a.example/{i}", "L", "http://b.other/") for i in range(3)], [], T0)
    db.flush(T0)
    db.apply([("http://a.example/more", "L", "http://b.other/")], [], T0 + 10)
    assert db.next_release_ms(T0 + 10) > T0 + 10_000


class _SlowPhase:
    """A clock that stands still but where a phase of a DRUM merge adds ``seconds`` to it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, phase: str, seconds: float) -> None:
        self.now = 0.0
        original = getattr(MergeState, phase)

        def slow(state: MergeState, *args, **kwargs):
            self.now += seconds
            return original(state, *args, **kwargs)

        monkeypatch.setattr(MergeState, phase, slow)

    def __call__(self) -> float:
        return self.now


def test_releases_spaced_out_by_slow_passes_take_more_urls_each(
        directory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each pass over the DRUM takes 50 ms, releases may take 1 % of the time: they come 5 s
    # apart, and each takes 5 batches, so that as many URLs a second go out as with a
    # release every second.
    clock = _SlowPhase(monkeypatch, "select", 0.05)
    db = CrawlDbPartition(directory, SECTION, priority=PrioritySection(
        host_window=100, release_batch=2, release_seconds=1.0, release_max_share=0.01,
        release_window=0), timer=clock)
    db.apply([(f"http://h{i}.example/", "L", "http://b.other/") for i in range(30)], [], T0)
    assert db.flush(T0).counts[CRAWLDB_URLS_RELEASED.name] == 2
    due = db.next_release_ms(T0 + 1)
    assert due == T0 + 5000
    assert db.flush(due).counts[CRAWLDB_URLS_RELEASED.name] == 10


@pytest.mark.parametrize("phase", ["minor", "major"])
def test_a_slow_merge_of_operations_does_not_space_the_releases_out(
        directory: str, monkeypatch: pytest.MonkeyPatch, phase: str) -> None:
    # The merge of the operations that come with a release (its writes and their fsyncs on a
    # slow disk), or a major merge that was due anyway, takes 10 s; the release's own pass
    # takes no time: the next release comes release_seconds later, as the frontier needs.
    clock = _SlowPhase(monkeypatch, phase, 10.0)
    section = dataclasses.replace(SECTION, max_deltas=1)  # (every merge a major merge)
    db = CrawlDbPartition(directory, section if phase == "major" else SECTION,
                          priority=PrioritySection(host_window=1, release_seconds=1.0,
                                                   release_max_share=0.02, release_window=0),
                          timer=clock)
    db.apply([(f"http://a.example/{i}", "L", "http://b.other/") for i in range(3)], [], T0)
    first = db.flush(T0)
    assert first.counts[CRAWLDB_URLS_RELEASED.name] == 1
    assert clock.now >= 10.0  # the slow phase ran
    db.apply([("http://c.example/", "L", "http://b.other/")], [], T0 + 10)
    assert db.next_release_ms(T0 + 10) == T0 + 1000


def test_a_pass_that_waits_does_not_space_the_releases_out(
        directory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # In a busy crawl a pass over the DRUM waits for the interpreter lock while the other
    # stages work: the partition's default clock counts its own CPU, not the waits.
    original = MergeState.select

    def waiting(state: MergeState, *args, **kwargs):
        time.sleep(0.6)  # (wall time spent waiting: more than half of release_seconds)
        return original(state, *args, **kwargs)

    monkeypatch.setattr(MergeState, "select", waiting)
    db = CrawlDbPartition(directory, SECTION, priority=PrioritySection(
        host_window=1, release_seconds=1.0, release_max_share=0.5, release_window=0))
    db.apply([(f"http://a.example/{i}", "L", "http://b.other/") for i in range(3)], [], T0)
    assert db.flush(T0).counts[CRAWLDB_URLS_RELEASED.name] == 1
    db.apply([("http://c.example/", "L", "http://b.other/")], [], T0 + 10)
    assert db.next_release_ms(T0 + 10) == T0 + 1000


def test_releases_from_the_due_window_are_not_spaced_out(directory: str) -> None:
    section = dataclasses.replace(SECTION, max_deltas=16)  # (no major merge in between)
    db = CrawlDbPartition(directory, section, priority=PrioritySection(
        host_window=1, release_seconds=1.0, release_max_share=1e-6))
    db.apply([(f"http://a.example/{i}", "L", "http://b.other/") for i in range(3)], [], T0)
    first = db.flush(T0)  # a pass over the DRUM, which builds the window
    assert first.counts["window.builds"] == 1
    assert CRAWLDB_RELEASES_FROM_WINDOW.name not in first.counts
    db.apply([("http://c.example/", "L", "http://b.other/")], [], T0 + 10)
    later = db.next_release_ms(T0 + 10)
    second = db.flush(later)
    assert second.counts[CRAWLDB_RELEASES_FROM_WINDOW.name] == 1
    assert second.counts["window.selections"] == 1
    db.apply([("http://d.example/", "L", "http://b.other/")], [], later + 10)
    assert db.next_release_ms(later + 10) == later + 1000  # release_seconds, not stretched


# ---------------------------------------------------------------------------- release limits


class _Limits:
    """Limits from plain dicts (missing: no limit), counting what the selection asks; each
    host is a group of its own, but for ``together``, which share one."""

    def __init__(self, hosts: dict[int, int], shapes: dict[tuple[int, int], int],
                 together: tuple[int, ...] = ()) -> None:
        self.hosts, self.shapes, self.together = hosts, shapes, together
        self.asked: list[int] = []

    def groups(self, hosts: np.ndarray) -> np.ndarray:
        self.asked += hosts.tolist()
        return np.array([self.together[0] if h in self.together else h for h in hosts.tolist()])

    def group_limits(self, groups: np.ndarray) -> np.ndarray:
        return np.array([self.hosts.get(g, 1000) for g in groups.tolist()])

    def shape_limits(self, hosts: np.ndarray, shapes: np.ndarray) -> np.ndarray:
        return np.array([self.shapes.get(pair, 1000)
                         for pair in zip(hosts.tolist(), shapes.tolist(), strict=True)])


def _discover_shaped(drum: Drum, found: list[tuple[str, float, int]], now: int) -> None:
    urls = [url for url, _, _ in found]
    hosts = np.array([host_key(u.split("/")[2]) for u in urls], dtype=np.uint32)
    values = discoveries(len(urls), now_ms=now, score=np.array([s for _, s, _ in found],
                                                                dtype=np.float32),
                         host=hosts, shape=np.array([s for _, _, s in found], dtype=np.uint32))
    drum.check_update(url_keys(urls), values, [u.encode() for u in urls], now_ms=now)


def test_a_selection_keeps_the_limits_of_each_host_and_shape_best_first(tmp_path: Path) -> None:
    policy = DuePolicy(max_urls=100, per_host=10, lease_ms=0, mark_queued=True)
    drum = Drum.create(str(tmp_path / "d"), DrumConfig(block_records=2, due=policy, fsync=False))
    a, b, c = host_key("a.example"), host_key("b.example"), host_key("c.example")
    _discover_shaped(drum, [
        ("http://a.example/cal/1", 0.9, 7), ("http://a.example/cal/2", 0.8, 7),
        ("http://a.example/cal/3", 0.7, 7), ("http://a.example/item/1", 0.5, 8),
        ("http://a.example/item/2", 0.4, 8), ("http://a.example/item/3", 0.3, 8),
        ("http://b.example/0", 1.0, 1), ("http://b.example/1", 1.0, 1),
        ("http://c.example/0", 0.1, 9), ("http://c.example/1", 0.2, 9),
    ], T0)
    limits = _Limits(hosts={a: 3, b: 0}, shapes={(a, 7): 1, (c, 9): 0})
    due = drum.merge(now_ms=T0 + 1, select=True, limits=limits).due
    # a: its best calendar URL (its shape's limit: 1), then its best items up to the host's 3;
    # b's and c's limits are 0: held back, counted by the limit that held them (a's two other
    # calendar URLs and c's by their shapes, a's last item and b's by their groups).
    assert sorted(p.decode() for p in due.payloads) == [
        "http://a.example/cal/1", "http://a.example/item/1", "http://a.example/item/2"]
    assert (due.held_by_group, due.held_by_shape) == (3, 4)
    assert due.remaining == 7
    assert sorted(set(limits.asked)) == sorted({a, b, c})  # each host asked once
    # Once a limit grows, the held URLs go, best first.
    limits.hosts[b] = 1
    due = drum.merge(now_ms=T0 + 2, select=True, limits=limits).due
    assert "http://b.example/0" in {p.decode() for p in due.payloads} or (
        "http://b.example/1" in {p.decode() for p in due.payloads})
    assert due.held_by_shape == 3  # c's two (its shape's limit is still 0) and a calendar URL


@pytest.mark.parametrize("seed", range(5))
def test_a_selection_trimmed_as_it_goes_is_the_selection_of_all_at_once(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # A pool trims itself to the best now and then as a pass offers its chunks: whenever it
    # does, the selection is the one made of every record at once (limits, per_host, ties).
    rng = np.random.default_rng(seed)
    n = 600
    values = discoveries(n, now_ms=T0, score=rng.integers(0, 5, n).astype(np.float32),
                         host=(rng.integers(0, 12, n) * 2654435761 % 2**32).astype(np.uint32),
                         shape=rng.integers(0, 4, n).astype(np.uint32))
    keys = np.cumsum(rng.integers(1, 1000, n)).astype(np.uint64)  # (sorted, as a pass offers)
    hosts = np.unique(values["host"]).tolist()
    limits = _Limits(hosts={h: int(rng.integers(0, 30)) for h in hosts},
                     shapes={(h, s): int(rng.integers(0, 12)) for h in hosts for s in range(4)},
                     together=tuple(hosts[:3]))
    policy = DuePolicy(max_urls=40, per_host=9, lease_ms=0, mark_queued=True)

    def select(pending: int, chunk: int) -> list[int]:
        monkeypatch.setattr(selection, "_PENDING_RECORDS", pending)
        selector = DueSelector(policy, limits)
        for start in range(0, n, chunk):
            selector.offer_due(keys[start:start + chunk], values[start:start + chunk], T0 + 1)
        return selector.result()[0].tolist()

    at_once = select(n, n)
    assert len(at_once) > 10
    assert select(1, 7) == at_once
    assert select(100, 33) == at_once


def test_selections_from_the_due_window_keep_the_limits_too(
    tmp_path: Path,
) -> None:
    policy = DuePolicy(max_urls=100, per_host=10, lease_ms=0, mark_queued=True,
                       window_urls=100)
    drum = Drum.create(str(tmp_path / "d"), DrumConfig(block_records=2, due=policy, fsync=False,
                                                       archive=ArchivePolicy()))
    a = host_key("a.example")
    _discover_shaped(drum, [(f"http://a.example/{i}", 1.0 - i / 10, 1) for i in range(5)], T0)
    limits = _Limits(hosts={a: 2}, shapes={})
    first = drum.merge(now_ms=T0 + 1, select=True, limits=limits).due  # a pass: builds the window
    assert len(first.payloads) == 2
    limits.hosts[a] = 1
    second = drum.merge(now_ms=T0 + 2, select=True, limits=limits).due
    assert second.from_window
    assert [p.decode() for p in second.payloads] == ["http://a.example/2"]
    assert (second.held_by_group, second.remaining) == (2, 2)
    limits.hosts[a] = 0
    third = drum.merge(now_ms=T0 + 3, select=True, limits=limits).due
    assert (len(third.payloads), third.held_by_group) == (0, 2)


def test_the_hosts_of_a_group_share_its_limit(tmp_path: Path) -> None:
    policy = DuePolicy(max_urls=100, per_host=10, lease_ms=0, mark_queued=True)
    drum = Drum.create(str(tmp_path / "d"), DrumConfig(block_records=2, due=policy, fsync=False))
    www, shop = host_key("www.a.example"), host_key("shop.a.example")
    _discover_shaped(drum, [("http://www.a.example/1", 0.9, 1), ("http://www.a.example/2", 0.3, 1),
                            ("http://shop.a.example/1", 0.5, 2),
                            ("http://shop.a.example/2", 0.4, 2)], T0)
    limits = _Limits(hosts={www: 3}, shapes={}, together=(www, shop))
    due = drum.merge(now_ms=T0 + 1, select=True, limits=limits).due
    assert sorted(p.decode() for p in due.payloads) == [
        "http://shop.a.example/1", "http://shop.a.example/2", "http://www.a.example/1"]
