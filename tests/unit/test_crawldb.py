"""The crawl DB partition: URL-seen test and fetch outcomes in a DRUM, restored from the values
the operator keeps in keyed state, with garbage collection that spares retained checkpoints."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from crawl.crawldb.partition import (
    MAX_VIA_BYTES,
    CrawlDbPartition,
    decode_payload,
    encode_payload,
    partition_directory,
    partition_of,
)
from crawl.fetch_requests import decode_batch, decode_entries
from crawl.stages import CRAWLDB_MERGES, CRAWLDB_URLS_DUPLICATE, CRAWLDB_URLS_NEW
from drum import DrumStatus
from tests.fakes.crawldb import SECTION, T0, KeyedState, found, record_of


def requested(answers) -> list[str]:
    return sorted(entry.url for a in answers for _, batch in a.requests
                  for entry in decode_entries(batch))


@pytest.fixture
def directory(tmp_path: Path) -> str:
    return partition_directory(str(tmp_path / "crawldb"), 3)


def test_partition_and_directory_naming() -> None:
    assert [partition_of(v, 16) for v in (0, 15, 16, 255)] == [0, 15, 0, 15]
    assert partition_directory("/x", 3) == "/x/partition-00003"


@pytest.mark.parametrize(
    ("url", "hops", "via"),
    [("http://a.example/", "", ""), ("http://a.example/p?q=1", "LLR", "http://b.example/x"),
     ("http://xn--bcher-kva.example/", "L", "http://a.example/é")],
)
def test_payload_round_trip(url: str, hops: str, via: str) -> None:
    assert decode_payload(encode_payload(url, hops, via)) == (url, hops, via)


def test_payload_cuts_a_huge_via_and_reads_a_bare_url() -> None:
    url, hops, via = decode_payload(encode_payload("http://a/", "L", "http://b/" + "x" * 10_000))
    assert (url, hops, len(via.encode())) == ("http://a/", "L", MAX_VIA_BYTES)
    assert decode_payload(b"http://a/") == ("http://a/", "", "")


def test_new_urls_go_to_the_frontier_once_grouped_by_host(directory: str) -> None:
    db = CrawlDbPartition(directory, SECTION)
    first = db.apply(found("http://a.example/1", "http://b.example/1", "http://a.example/1"),
                     [], T0)
    assert first.requests == []  # answered by the merge, not before
    assert db.buffered == 3
    flushed = db.flush(T0 + 500)
    assert db.buffered == 0
    batches = {host: decode_batch(batch) for host, batch in flushed.requests}
    assert batches == {  # in the order found: no priority here
        "a.example": (False, ['["http://a.example/1","L","http://a.example/"]']),
        "b.example": (False, ['["http://b.example/1","L","http://a.example/"]']),
    }
    assert flushed.counts[CRAWLDB_URLS_NEW.name] == 2
    assert flushed.counts[CRAWLDB_URLS_DUPLICATE.name] == 1
    # Seen again in a later batch: a duplicate, not a request.
    db.apply(found("http://b.example/1", "http://c.example/1"), [], T0 + 600)
    later = db.flush(T0 + 1100)
    assert requested([later]) == ["http://c.example/1"]
    assert later.counts[CRAWLDB_URLS_DUPLICATE.name] == 1
    assert db.known == 3
    assert db.flush(T0 + 2000).counts == {}  # nothing buffered: no merge


def test_a_full_buffer_merges_inside_apply(directory: str) -> None:
    db = CrawlDbPartition(directory, replace(SECTION, buffer_ops=4))
    assert db.apply(found("http://a.example/x"), [], T0).requests == []
    answer = db.apply(found(*(f"http://a.example/{i}" for i in range(10))), [], T0)
    assert answer.counts[CRAWLDB_MERGES.name] == 3  # the DRUM's own buffer holds 4 operations too
    assert len(requested([answer])) == 11
    assert db.buffered == 0
    assert db.flush(T0 + 1).requests == []


def test_outcomes_newest_wins_attempts_counted(directory: str) -> None:
    db = CrawlDbPartition(directory, SECTION)
    url = "http://a.example/p"
    db.apply(found(url, hops="LL"), [], T0)
    db.flush(T0 + 1)
    answer = db.apply([], [(url, "FETCH_ERROR", 0, "timeout:read", T0 + 100),
                           (url, "FETCHED", 200, "http:200", T0 + 300),
                           (url, "HTTP_ERROR", 503, "http:503", T0 + 200),  # late replay
                           (url, "ROBOTS_DENIED", 0, "robots:disallow", T0 + 50),
                           (url, "BOGUS", 0, "", T0 + 400)], T0 + 500)
    assert answer.counts == {}
    assert db.flush(T0 + 600).counts["done.bad_status"] == 1
    record = record_of(db, url)
    assert record["status"] == DrumStatus.FETCHED
    assert record["http_status"] == 200
    assert db.drum.reason_name(record["reason"]) == "http:200"
    assert record["depth"] == 2
    assert record["fetch_count"] == 3  # the robots denial is a decision, not an attempt
    assert record["failure_count"] == 2
    assert record["discovered_ms"] == T0


def test_an_outcome_for_a_url_never_found_is_recorded_not_requested(directory: str) -> None:
    db = CrawlDbPartition(directory, SECTION)
    db.apply([], [("http://a.example/x", "FETCHED", 200, "http:200", T0)], T0)
    answer = db.flush(T0 + 1)
    assert answer.requests == []
    assert answer.counts["done.unknown_url"] == 1
    db.apply(found("http://a.example/x"), [], T0 + 2)
    assert db.flush(T0 + 3).requests == []  # already known


def test_done_urls_are_archived_by_major_merges_and_stay_seen(directory: str) -> None:
    db = CrawlDbPartition(directory, replace(SECTION, max_deltas=2, max_archives=1))
    archived = compacted = 0
    for round_ in range(8):
        now = T0 + 1000 * round_
        urls = [f"http://a.example/{round_}/{i}" for i in range(5)]
        db.apply(found(*urls), [], now)
        db.flush(now + 1)
        answer = db.apply([], [(u, "FETCHED", 200, "http:200", now + 2) for u in urls], now + 2)
        answer = db.flush(now + 3)
        archived += answer.counts.get("urls.archived", 0)
        compacted += answer.counts.get("archives.compacted", 0)
    db.drum._check()
    assert archived == 40
    assert compacted > 0
    assert db.drum.counters.archived == 40
    # Every one is still seen: found again, none goes to the frontier.
    db.apply(found(*(f"http://a.example/{r}/{i}" for r in range(8) for i in range(5))), [], T0)
    again = db.flush(T0 + 10_000)
    assert again.requests == []
    assert again.counts[CRAWLDB_URLS_DUPLICATE.name] == 40


def test_restore_from_keyed_state_loses_nothing_buffered(directory: str) -> None:
    state = KeyedState()
    db = CrawlDbPartition(directory, replace(SECTION, buffer_ops=5))
    state.apply(db, found(*(f"http://a.example/{i}" for i in (1, 2, 3, 6, 7))), [], T0)
    assert state.journal == []  # merged
    state.apply(db, found("http://a.example/4"), [], T0 + 1)
    state.apply(db, found("http://a.example/5", "http://a.example/1"), [], T0 + 2)
    assert db.buffered == 3
    assert len(state.journal) == 2
    state.apply(db, [], [("http://a.example/2", "FETCHED", 200, "http:200", T0 + 3)], T0 + 3)
    checkpoint = state.snapshot()
    expected = requested([db.flush(T0 + 3)])
    db.close()

    # The job fails after the flush; the restore sees the checkpoint's DRUM and buffer.
    checkpoint.journal.append("{not json")
    restored = checkpoint.open(directory)
    assert restored.unreadable_journal_entries == 1
    assert restored.buffered == 4
    assert restored.known == 5
    assert requested([restored.flush(T0 + 4)]) == expected == [
        "http://a.example/4", "http://a.example/5"
    ]
    assert record_of(restored, "http://a.example/2")["status"] == DrumStatus.FETCHED
    restored.drum._check()


def test_files_of_a_retained_checkpoint_outlive_newer_merges(directory: str) -> None:
    state = KeyedState()
    db = CrawlDbPartition(directory, replace(SECTION, max_deltas=2))
    old_checkpoint = None
    for step in range(12):
        now = T0 + 1000 * step  # grace window: 10 s
        state.apply(db, found(*(f"http://a.example/{step}/{i}" for i in range(6))), [], now)
        state.flush(db, now + 1)
        if step == 5:
            old_checkpoint = state.snapshot()
    files_now = set(os.listdir(directory))
    # The checkpoint of step 5 is 6 s old: its files are still there and it restores.
    restored = old_checkpoint.open(directory)
    assert restored.known == 36
    restored.drum._check()
    # Its first merge removes what the abandoned attempt wrote after it.
    restored.apply(found("http://b.example/1"), [], T0 + 13_000)
    restored.flush(T0 + 13_001)
    assert files_now - set(os.listdir(directory)), "nothing of the abandoned attempt deleted"
    assert restored.known == 37
    # Much later, files dropped long ago are gone.
    for step in range(3):
        now = T0 + 30_000 + 1000 * step
        restored.apply(found(f"http://c.example/{step}"), [], now)
        restored.flush(now + 1)
    db_files = set(os.listdir(directory))
    live = restored.drum.manifest.files() - {restored.drum.manifest.file_name}
    assert live <= db_files
    assert len(db_files - live) <= 12  # only what the last 10 s dropped


def test_a_partition_without_state_clears_its_directory(directory: str) -> None:
    db = CrawlDbPartition(directory, SECTION)
    db.apply(found("http://a.example/1"), [], T0)
    db.flush(T0 + 1)
    db.close()
    assert os.listdir(directory)
    fresh = KeyedState().open(directory)  # restored from a checkpoint before the first merge
    assert os.listdir(directory) == []
    fresh.apply(found("http://a.example/1"), [], T0 + 2)
    assert requested([fresh.flush(T0 + 3)]) == ["http://a.example/1"]


def test_a_missing_file_is_a_clear_error(directory: str) -> None:
    state = KeyedState()
    db = CrawlDbPartition(directory, SECTION)
    state.apply(db, found("http://a.example/1"), [], T0)
    state.flush(db, T0 + 1)
    db.close()
    victim = sorted(n for n in os.listdir(directory) if n.startswith("run-"))[0]
    os.remove(os.path.join(directory, victim))
    with pytest.raises(Exception, match=victim):
        state.open(directory)


def test_journal_additions_follow_the_merge() -> None:
    from crawl.crawldb.partition import PartitionState

    assert PartitionState(None, None, merged=False).journal_additions("p") == ["p"]
    assert PartitionState(None, None, merged=True).journal_additions("p") == []
    assert PartitionState(None, None, merged=False).journal_additions(None) == []
