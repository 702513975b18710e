"""A revisit's way round: the crawl DB releases due URLs with their recrawl state (within the
refresh share), the frontier keeps it, the process stage archives a 304 as a revisit and sends
back what the fetch saw, and the crawl DB schedules the next fetch from it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl.archive.crawl_log import CrawlLogWriter
from crawl.archive.warc import NOT_MODIFIED_PROFILE, WarcFileWriter
from crawl.config import CrawlDbSection, PrioritySection, RecrawlSection
from crawl.crawldb.partition import CrawlDbPartition, partition_directory
from crawl.crawldb.recrawl import RecrawlState, Revisit
from crawl.fetch_requests import decode_entries
from crawl.frontier.host_queue import QueueEntry
from crawl.http.client import NOT_MODIFIED
from crawl.loop.records import decode_line, parse_record
from crawl.model import FetchResult
from crawl.processing import PageProcessor
from crawl.progress import StageStatus
from crawl.stages import CRAWLDB_URLS_NEW, PROCESS_NEARDUP_QUERIES, PROCESS_WARC_NOT_MODIFIED
from crawl.status import Status
from drum import (
    NEVER,
    ArchivePolicy,
    Drum,
    DrumConfig,
    DrumStatus,
    DuePolicy,
    discoveries,
    host_key,
    outcomes,
    url_keys,
)
from tests.fakes.crawldb import KeyedState, record_of

T0 = 1_700_000_000_000
SECTION = CrawlDbSection(buffer_ops=1000, block_records=4, max_deltas=3, max_archives=2,
                         file_grace_seconds=10.0, fsync=False)
PRIORITY = PrioritySection(host_window=4, release_batch=100, release_seconds=1.0)
RECRAWL = RecrawlSection(enabled=True, initial_seconds=60.0, min_seconds=10.0,
                         max_seconds=3600.0, retry_seconds=30.0, gone_failures=2)


# ---------------------------------------------------------------------------- DRUM selection


def _drum(tmp_path: Path, max_urls: int, share: float) -> Drum:
    policy = DuePolicy(max_urls=max_urls, per_host=0, lease_ms=0, mark_queued=True,
                       refresh_share=share)
    config = DrumConfig(buffer_ops=1000, block_records=4, due=policy, fsync=False,
                        archive=ArchivePolicy(archive_done=True))
    return Drum.create(str(tmp_path / "drum"), config)


def _fetched(drum: Drum, urls: list[str], next_ms: list[int], interval_s: int, now: int) -> None:
    hosts = np.array([host_key(u.split("/")[2]) for u in urls], dtype=np.uint32)
    values = outcomes(len(urls), status=DrumStatus.FETCHED, at_ms=now, host=hosts,
                      next_fetch_ms=np.array(next_ms))
    values["recrawl_s"], values["interval_s"] = now // 1000, interval_s
    drum.update(url_keys(urls), values, [u.encode() for u in urls], now_ms=now)


def test_revisits_get_their_share_most_overdue_first(tmp_path: Path) -> None:
    drum = _drum(tmp_path, max_urls=4, share=0.5)
    old = [f"http://a.example/old{i}" for i in range(4)]
    # Due 10, 30, 20 and 40 intervals (of 1 s) ago at T0 + 100 s.
    _fetched(drum, old, [T0 + 90_000, T0 + 70_000, T0 + 80_000, T0 + 60_000], 1, T0)
    _fetched(drum, ["http://a.example/later"], [T0 + 500_000], 1, T0)
    new = [f"http://b.example/new{i}" for i in range(5)]
    drum.check_update(url_keys(new), discoveries(5, now_ms=T0 + 1, host=host_key("b.example")),
                      [u.encode() for u in new], now_ms=T0 + 1)
    due = drum.merge(now_ms=T0 + 100_000, major=True).due
    released = [p.decode() for p in due.payloads]
    assert released[:2] == ["http://a.example/old3", "http://a.example/old1"]
    assert sum(url.startswith("http://b.") for url in released) == 2
    assert due.revisits == 2
    assert due.remaining == 5
    assert due.next_due_ms == T0 + 500_000
    # With no new URL waiting, revisits take the whole release.
    due = drum.merge(now_ms=T0 + 101_000, major=True).due
    assert due.revisits == 2
    assert len(due.keys) == 4
    due = drum.merge(now_ms=T0 + 102_000, major=True).due
    assert len(due.keys) == 1
    assert due.revisits == 0


# ---------------------------------------------------------------------------- crawl DB


@pytest.fixture
def directory(tmp_path: Path) -> str:
    return partition_directory(str(tmp_path / "crawldb"), 0)


def _no_time() -> float:
    """A release's pass over the DRUM takes no time (on a loaded machine it may take longer
    than the share of ``release_seconds`` a pass may use, and space the releases out)."""
    return 0.0


def _items(answer) -> list[list]:
    return [item for _, batch in answer.requests for item in decode_entries(batch)]


def _done(url: str, status: str, http: int, at: int, revisit: Revisit, reason: str = "") -> tuple:
    return (url, status, http, reason, at, revisit.encode())


def test_a_fetched_url_comes_due_again_with_its_state(directory: str) -> None:
    from crawl.crawldb.recrawl import Observation

    state = KeyedState()
    db = CrawlDbPartition(directory, SECTION, priority=PRIORITY, recrawl=RECRAWL,
                          timer=_no_time)
    url = "http://a.example/"
    state.apply(db, [(url, "", "")], [], T0)
    (item,) = _items(state.flush(db, T0 + 10))
    assert item.recrawl is None  # a first fetch: no recrawl state
    seen = Observation(77, '"v1"', "Tue, 14 Nov 2023 22:13:20 GMT")
    state.apply(db, [], [_done(url, "FETCHED", 200, T0 + 1000, Revisit(None, seen))], T0 + 2000)
    state.flush(db, T0 + 3000)
    record = record_of(db, url)
    assert record["next_fetch_ms"] == T0 + 61_000
    assert (record["interval_s"], record["digest"], record["etag"]) == (60, 77, b"v1")
    # Not due yet: no release before its time, then one at its time.
    assert db.next_release_ms(T0 + 5000) == T0 + 61_000
    assert _items(state.flush(db, T0 + 30_000)) == []
    (item,) = _items(state.flush(db, T0 + 61_000))
    carried = RecrawlState.decode(item[5])
    assert (carried.interval_s, carried.digest, carried.etag_header()) == (60, 77, '"v1"')
    assert carried.conditional_headers()[0] == ("If-None-Match", '"v1"')
    assert record_of(db, url)["status"] == DrumStatus.QUEUED
    # A 304: unchanged, the interval grows, the record keeps its capture.
    state.apply(db, [], [_done(url, "FETCHED", 304, T0 + 62_000, Revisit(
        carried, Observation(not_modified=True)), NOT_MODIFIED)], T0 + 62_500)
    answer = state.flush(db, T0 + 63_000)
    assert answer.counts["recrawl.not-modified"] == 1
    record = record_of(db, url)
    assert (record["status"], record["interval_s"], record["visits"], record["digest"]) == (
        DrumStatus.FETCHED, 84, 1, 77)
    assert record["next_fetch_ms"] == T0 + 62_000 + 84_000


def test_a_url_that_keeps_failing_is_retired_and_stays_seen(directory: str) -> None:
    state = KeyedState()
    db = CrawlDbPartition(directory, SECTION, priority=PRIORITY, recrawl=RECRAWL,
                          timer=_no_time)
    url = "http://a.example/gone"
    state.apply(db, [(url, "L", "http://a.example/")], [], T0)
    state.flush(db, T0 + 10)
    state.apply(db, [], [_done(url, "HTTP_ERROR", 404, T0 + 100, Revisit(None, None),
                               "http:404")], T0 + 200)
    state.flush(db, T0 + 300)
    assert record_of(db, url)["next_fetch_ms"] == T0 + 100 + 30_000
    (item,) = _items(state.flush(db, T0 + 31_000))
    carried = RecrawlState.decode(item[5])
    assert carried.failures_in_row == 1
    state.apply(db, [], [_done(url, "HTTP_ERROR", 410, T0 + 32_000, Revisit(carried, None),
                               "http:410")], T0 + 33_000)
    answer = state.flush(db, T0 + 34_000)
    assert answer.counts.get("recrawl.retired") == 1
    assert record_of(db, url)["next_fetch_ms"] == NEVER
    # Never released again, and still seen.
    assert _items(state.flush(db, T0 + 10_000_000)) == []
    answer = state.apply(db, [(url, "L", "http://a.example/")], [], T0 + 10_000_001)
    answer = state.flush(db, T0 + 10_000_002)
    assert answer.counts.get(CRAWLDB_URLS_NEW.name, 0) == 0
    assert _items(answer) == []


def test_without_recrawl_outcomes_are_done_for_good(directory: str) -> None:
    db = CrawlDbPartition(directory, SECTION, priority=PRIORITY, timer=_no_time)
    url = "http://a.example/"
    db.apply([(url, "", "")], [], T0)
    db.flush(T0 + 1)
    db.apply([], [(url, "FETCHED", 200, "", T0 + 2)], T0 + 3)
    db.flush(T0 + 4)
    assert record_of(db, url)["next_fetch_ms"] == NEVER
    db.flush(T0 + 1001)  # (the outcome freed a slot of the host's window: a release looks)
    assert db.next_release_ms(T0 + 1002) is None


def test_queue_entries_keep_a_revisits_state() -> None:
    state = RecrawlState(1, 60, 5, etag="x").encode()
    entry = QueueEntry("u", "L", "v", 0, 1.5, state)
    assert entry.encode() == json.dumps(["u", "L", "v", 0, 1.5, state], separators=(",", ":"))
    assert QueueEntry.decode(entry.encode()) == entry
    assert QueueEntry.decode('["u","L","v",0,0,[1,60,5,0,0,0,0,0,0,"\\"x\\"",0]]').recrawl


# ---------------------------------------------------------------------------- process stage


def _processor(
    tmp_path: Path, change_features: int = 0
) -> tuple[PageProcessor, WarcFileWriter, StageStatus]:
    warc = WarcFileWriter(tmp_path / "warc", "test", 0)
    log = CrawlLogWriter(tmp_path / "crawl.log", background_flush=False)
    status = StageStatus(tmp_path / "status", "process", 0, interval=60)
    processor = PageProcessor(warc, log, 256, status, producer_id="0.r", recrawl=True,
                              change_features=change_features)
    return processor, warc, status


def _done_events(lines: list[str]) -> list[tuple]:
    return [event for line in lines for event in parse_record(decode_line(line)[1]).done]


def test_a_304_is_archived_as_a_server_not_modified_revisit(tmp_path: Path) -> None:
    processor, warc, status = _processor(tmp_path)
    carried = RecrawlState(1_700_000_000, 60, 77, 0, 1_700_000_000, 1_700_000_000, etag="v1")
    result = FetchResult(
        url="http://a.test/p", status=Status.FETCHED, reason=NOT_MODIFIED, http_status=304,
        http_reason="Not Modified", request_headers=[("If-None-Match", '"v1"')],
        response_headers=[("ETag", '"v1"')], started_ms=1_700_000_100_000, hops="L",
        via="http://a.test/", recrawl=carried.encode(),
    )
    (event,) = _done_events(processor.process(result))
    revisit = Revisit.decode(event[5])
    assert revisit.state == carried
    assert revisit.observation.not_modified
    assert revisit.observation.etag == '"v1"'
    warc.close()
    (path,) = (tmp_path / "warc").glob("*.warc.gz")
    with open(path, "rb") as stream:
        records = [r for r in ArchiveIterator(stream) if r.rec_type == "revisit"]
    (record,) = records
    headers = record.rec_headers
    assert headers.get_header("WARC-Profile") == NOT_MODIFIED_PROFILE
    assert headers.get_header("WARC-Refers-To-Target-URI") == "http://a.test/p"
    assert headers.get_header("WARC-Refers-To-Date") == "2023-11-14T22:13:20.000Z"
    assert headers.get_header("WARC-Refers-To") is None
    assert status.counters[PROCESS_WARC_NOT_MODIFIED.name] == 1


def test_a_changed_page_reports_its_digest_and_validators(tmp_path: Path) -> None:
    processor, warc, _ = _processor(tmp_path)
    result = FetchResult(
        url="http://a.test/p", status=Status.FETCHED, reason="", http_status=200,
        http_reason="OK", response_headers=[("Content-Type", "text/html"), ("ETag", '"v2"'),
                                            ("Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT")],
        body=b"<html><body>new</body></html>", started_ms=1_700_000_100_000, hops="L",
        via="http://a.test/", recrawl=RecrawlState(1, 60, 77, observed_s=1).encode(),
    )
    (event,) = _done_events(processor.process(result))
    observation = Revisit.decode(event[5]).observation
    assert observation.digest not in (0, 77)
    assert observation.etag == '"v2"'
    assert observation.last_modified == "Tue, 14 Nov 2023 22:13:20 GMT"
    warc.close()


def _article(words: list[str], footer: str) -> bytes:
    return (
        f"<html><body><article><p>{' '.join(words)}</p></article>"
        f"<footer>{footer}</footer></body></html>"
    ).encode()


def test_with_change_distance_a_page_reports_its_main_texts_simhash(tmp_path: Path) -> None:
    """recrawl.change_distance: an HTML page of enough words is observed by the simhash of its
    main text (a new footer changes its digest, not its simhash); a short one by digest."""
    processor, warc, status = _processor(tmp_path, change_features=32)
    words = [f"word{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(60)]

    def observe(body: bytes, url: str = "http://a.test/p"):
        result = FetchResult(
            url=url, status=Status.FETCHED, reason="", http_status=200, http_reason="OK",
            response_headers=[("Content-Type", "text/html")], body=body,
            started_ms=1_700_000_100_000, hops="L", via="http://a.test/",
            recrawl=RecrawlState(1, 60, 77, observed_s=1).encode(),
        )
        (event,) = _done_events(processor.process(result))
        return Revisit.decode(event[5]).observation

    first = observe(_article(words, "visits: one"))
    again = observe(_article(words, "visits: two hundred"))
    assert first.simhash
    assert again.simhash
    assert first.digest == again.digest
    short = observe(_article(words[:5], "visits: one"), "http://a.test/short")
    assert not short.simhash
    assert PROCESS_NEARDUP_QUERIES.name not in status.counters  # the near-duplicate stage is off
    warc.close()


def test_a_sitemaps_changefreq_starts_a_urls_schedule(tmp_path: Path, directory: str) -> None:
    from crawl.config import SitemapsSection

    warc = WarcFileWriter(tmp_path / "warc", "test", 0)
    log = CrawlLogWriter(tmp_path / "crawl.log", background_flush=False)
    status = StageStatus(tmp_path / "status", "process", 0, interval=60)
    processor = PageProcessor(warc, log, 256, status, producer_id="0.h", recrawl=True,
                              sitemaps=SitemapsSection())
    # T0 is 2023-11-14T22:13:20Z: /blog changed 2 hours before the sitemap was read, /later
    # claims a change in the future (ignored), /both has both (changefreq wins).
    body = (b"<urlset><url><loc>http://a.test/news</loc><changefreq>hourly</changefreq></url>"
            b"<url><loc>http://a.test/about</loc></url>"
            b"<url><loc>http://a.test/blog</loc><lastmod>2023-11-14T21:13:20+01:00</lastmod>"
            b"</url><url><loc>http://a.test/later</loc><lastmod>2023-11-15</lastmod></url>"
            b"<url><loc>http://a.test/both</loc><lastmod>2023-11-14</lastmod>"
            b"<changefreq>daily</changefreq></url></urlset>")
    sitemap = FetchResult(url="http://a.test/sitemap.xml", status=Status.FETCHED, reason="",
                          http_status=200, body=body, started_ms=T0, hops="S",
                          via="http://a.test/robots.txt",
                          response_headers=[("Content-Type", "application/xml")])
    (line,) = processor.process(sitemap)
    record = parse_record(decode_line(line)[1])
    assert record.hint == [("http://a.test/news", 3600), ("http://a.test/blog", 7200),
                           ("http://a.test/both", 86_400)]
    warc.close()
    # The crawl DB keeps the hint with the URL and hands it out with its first fetch...
    db = CrawlDbPartition(directory, SECTION, priority=PRIORITY, recrawl=RECRAWL,
                          timer=_no_time)
    db.apply(record.found, record.done, T0, hints=record.hint)
    items = {item[0]: item for item in _items(db.flush(T0 + 1))}
    assert items["http://a.test/about"].recrawl is None
    hinted = RecrawlState.decode(items["http://a.test/news"][5])
    assert (hinted.interval_s, hinted.fetched) == (3600, False)
    assert hinted.conditional_headers() == []
    # ...whose outcome starts the schedule with it (within the bounds: at most an hour here).
    from crawl.crawldb.recrawl import Observation, RecrawlSchedule

    new, next_ms, what = RecrawlSchedule(RECRAWL).after(
        "http://a.test/news", "FETCHED", 200, "", T0 + 5, Revisit(hinted, Observation(3)))
    assert (what, new.interval_s, next_ms) == ("first", 3600, T0 + 5 + 3_600_000)


def test_a_sitemaps_lastmod_brings_a_known_url_back_before_its_time(
    tmp_path: Path, directory: str
) -> None:
    from crawl.config import SitemapsSection
    from crawl.crawldb.recrawl import Observation

    warc = WarcFileWriter(tmp_path / "warc", "test", 0)
    log = CrawlLogWriter(tmp_path / "crawl.log", background_flush=False)
    status = StageStatus(tmp_path / "status", "process", 0, interval=60)
    processor = PageProcessor(warc, log, 256, status, producer_id="0.h", recrawl=True,
                              sitemaps=SitemapsSection(), recent_urls=100)
    page = FetchResult(url="http://a.test/", status=Status.FETCHED, reason="", http_status=200,
                       body=b'<a href="/news">n</a><a href="/about">a</a>', started_ms=T0,
                       response_headers=[("Content-Type", "text/html")])
    processor.process(page)
    # Read 5 s later, the sitemap lists both links again: /news with a lastmod 3 s after T0.
    # /news goes to the crawl DB although just found; /about, without a date, does not.
    body = (b"<urlset><url><loc>http://a.test/news</loc>"
            b"<lastmod>2023-11-14T22:13:23Z</lastmod></url>"
            b"<url><loc>http://a.test/about</loc></url></urlset>")
    sitemap = FetchResult(url="http://a.test/sitemap.xml", status=Status.FETCHED, reason="",
                          http_status=200, body=body, started_ms=T0 + 5000, hops="S",
                          via="http://a.test/robots.txt",
                          response_headers=[("Content-Type", "application/xml")])
    (line,) = processor.process(sitemap)
    warc.close()
    record = parse_record(decode_line(line)[1])
    assert [url for url, _, _ in record.found] == ["http://a.test/news"]
    assert record.lastmod == [("http://a.test/news", T0 // 1000 + 3)]

    state = KeyedState()
    db = CrawlDbPartition(directory, SECTION, priority=PRIORITY, recrawl=RECRAWL,
                          timer=_no_time)
    news = "http://a.test/news"
    state.apply(db, [(news, "L", "http://a.test/")], [], T0)
    (item,) = _items(state.flush(db, T0 + 10))
    state.apply(db, [], [_done(news, "FETCHED", 200, T0 + 1000, Revisit(None, Observation(7)))],
                T0 + 1500)
    state.flush(db, T0 + 2000)
    assert record_of(db, news)["next_fetch_ms"] == T0 + 61_000
    # A lastmod before the fetch says nothing new.
    db.apply(record.found, [], T0 + 2500, lastmods=[(news, T0 // 1000)])
    assert _items(state.flush(db, T0 + 3000)) == []
    # One after it: due now, not in 58 s, with its state (a conditional GET).
    db.apply(record.found, record.done, T0 + 5500, hints=record.hint, lastmods=record.lastmod)
    answer = state.flush(db, T0 + 6000)
    (item,) = _items(answer)
    assert answer.counts["urls.released.announced"] == 1
    carried = RecrawlState.decode(item[5])
    assert (carried.digest, carried.fetched) == (7, True)
    # Fetched again: the announcement is spent; due at its new time, not before.
    state.apply(db, [], [_done(news, "FETCHED", 200, T0 + 7000, Revisit(carried,
                                                                         Observation(8)))],
                T0 + 7500)
    assert _items(state.flush(db, T0 + 8000)) == []
    assert _items(state.flush(db, T0 + 20_000)) == []
    assert record_of(db, news)["announced_s"] == T0 // 1000 + 3
