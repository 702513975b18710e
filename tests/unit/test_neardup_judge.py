"""Near-duplicates in the job's plain logic: the process stage's queries, the near-duplicate
stage's verdicts (loop lines, WARC note, stored pages), the crawl DB's marks and rescores, and
the loop format that carries them."""

from __future__ import annotations

import dataclasses
import gzip
import json
import uuid
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl.archive.crawl_log import CrawlLogWriter
from crawl.archive.warc import WarcFileWriter, verify_warc_file
from crawl.config import CrawlDbSection, NearDupSection, PrioritySection
from crawl.content.neardup import fingerprint_text
from crawl.content.neardup_judge import NearJudge, NearQuery
from crawl.crawldb.partition import FLAG_NEAR_DUPLICATE, CrawlDbPartition, partition_directory
from crawl.loop.records import LoopRecordError, decode_line, encode_line, parse_record, url_vnode
from crawl.model import FetchResult
from crawl.processing import PageProcessor
from crawl.progress import StageStatus
from crawl.stages import CRAWLDB_URLS_FOUND, CRAWLDB_URLS_NEAR_DUPLICATE
from crawl.status import Status
from tests.fakes.crawldb import record_of

VNODES = 256
T0 = 1_700_000_000_000
ARTICLE = " ".join(f"word{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(120))
OTHER = " ".join(f"other{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(120))


def _query(url: str, text: str, outlinks=(), vnode: int | None = None) -> NearQuery:
    fp = fingerprint_text(text)
    return NearQuery(
        url, url_vnode(url, VNODES) if vnode is None else vnode,
        (url, "FETCHED", 200, "http:200", T0), fp.value, fp.features,
        f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>", "2026-11-24T00:00:00.000Z",
        list(outlinks),
    )


def _parts(lines: list[str]) -> dict[int, dict]:
    out = {}
    for line in lines:
        vnode, payload = decode_line(line)
        out[vnode] = json.loads(payload)
    return out


def test_a_query_round_trips() -> None:
    query = _query("http://a.test/x", ARTICLE, [("http://b.test/", "LL", "http://a.test/x")])
    assert NearQuery.decode(query.encode()) == query


def test_the_first_page_passes_its_outcome_on_and_a_copy_is_marked_and_rescored() -> None:
    judge = NearJudge(NearDupSection(outlink_weight=0.25), VNODES, "n0")
    first = judge.judge(_query("http://a.test/news/1", ARTICLE))
    assert first.original is None
    assert first.note is None
    ((vnode, payload),) = _parts(first.lines).items()
    assert vnode == url_vnode("http://a.test/news/1", VNODES)
    assert payload["done"] == [["http://a.test/news/1", "FETCHED", 200, "http:200", T0]]
    assert "near" not in payload
    links = [("http://c.test/p", "LL", "http://b.test/news/9")]
    copy = judge.judge(dataclasses.replace(
        _query("http://b.test/news/9", ARTICLE + " extra", links), outlink_cash=[0.2]))
    assert copy.original == "http://a.test/news/1"
    assert copy.distance is not None
    assert copy.distance <= 3
    parts = _parts(copy.lines)
    own = parts[url_vnode("http://b.test/news/9", VNODES)]
    assert own["near"] == [["http://b.test/news/9", "http://a.test/news/1", copy.distance]]
    assert own["done"][0][0] == "http://b.test/news/9"
    rescored = parts[url_vnode("http://c.test/p", VNODES)]["rescore"]
    # The copy's link gives back three quarters of the cash it brought.
    assert rescored == [["http://c.test/p", "LL", "http://b.test/news/9", -0.75, 0.2]]
    assert dict(copy.note)["nearDuplicateOf"] == "http://a.test/news/1"
    # Another article is not a copy; a page of three words is not judged nor stored.
    assert judge.judge(_query("http://c.test/other", OTHER)).original is None
    shortest = judge.judge(_query("http://d.test/shortest", "three words only"))
    assert shortest.entry is None
    assert len(judge) == 3
    # A short page is judged by its exact words: the same words in another order and number
    # are a copy, distance 0; one word more is not.
    thin = judge.judge(_query("http://e.test/1", "cheap best offer deal free top"))
    assert thin.original is None
    copy = judge.judge(_query("http://e.test/2", "top deal top cheap free offer best best"))
    assert (copy.original, copy.distance) == ("http://e.test/1", 0)
    assert judge.judge(_query("http://e.test/3", "cheap best offer deal free top now")).original \
        is None


def test_stored_pages_rebuild_the_index_after_a_restore() -> None:
    section = NearDupSection()
    judge = NearJudge(section, VNODES, "n0")
    thin = "cheap best offer deal free top"
    stored = [v.entry for v in (judge.judge(_query("http://a.test/1", ARTICLE)),
                                judge.judge(_query("http://b.test/2", OTHER)),
                                judge.judge(_query("http://t.test/1", thin))) if v.entry]
    assert stored == judge.entries()
    assert stored[2].startswith("=")  # a short page's entry says so
    restored = NearJudge(section, VNODES, "n1")
    assert restored.restore([*stored, "junk", "zz 1 http://x/", "=zz 1 http://x/"]) == 3
    verdict = restored.judge(_query("http://c.test/3", OTHER))
    assert verdict.original == "http://b.test/2"
    # Capture ids go on after the restored ones: the new page's entry names a new one.
    assert verdict.entry.split(" ")[1] == "3"
    assert restored.judge(_query("http://t.test/2", thin)).original == "http://t.test/1"
    assert restored.entries()[:3] == stored


def test_a_full_index_forgets_its_older_half_and_says_the_stored_pages_changed() -> None:
    judge = NearJudge(NearDupSection(capacity=4), VNODES, "n0")
    texts = [" ".join(f"t{chr(97 + n)}w{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(60))
             for n in range(5)]
    verdicts = [judge.judge(_query(f"http://a.test/{n}", text)) for n, text in enumerate(texts)]
    # Two generations of two pages: the fifth page makes the first two go.
    assert [v.rewrite for v in verdicts] == [False, False, False, False, True]
    assert [e.split(" ")[2] for e in judge.entries()] == [
        "http://a.test/2", "http://a.test/3", "http://a.test/4"]
    assert len(judge) == len(judge.entries()) == judge.detector.__len__()


def test_the_loop_carries_rescores_and_near_marks_and_refuses_bad_ones() -> None:
    line = encode_line(3, rescore=[("http://a/", "L", "http://b/", -0.5, None),
                                   ("http://a/2", "L", "http://b/", -0.5, 0.125)],
                       near=[("http://a/x", "http://b/y", 2)], line_id="n.1")
    assert '["http://a/","L","http://b/",-0.5]' in line  # (the older form when no cash)
    record = parse_record(decode_line(line)[1])
    assert record.rescore == [("http://a/", "L", "http://b/", -0.5, None),
                              ("http://a/2", "L", "http://b/", -0.5, 0.125)]
    assert record.near == [("http://a/x", "http://b/y", 2)]
    assert (record.found, record.done) == ([], [])
    for bad in ('{"rescore": [["u", "L", "v", "NaN"]]}', '{"near": [["u", "v"]]}',
                '{"rescore": [["u", "L", "v", "x"]]}'):
        with pytest.raises(LoopRecordError):
            parse_record(bad)


def test_the_crawl_db_marks_a_near_duplicate_and_lowers_what_its_links_are_worth(
    tmp_path: Path,
) -> None:
    section = CrawlDbSection(buffer_ops=1000, block_records=4, fsync=False)
    db = CrawlDbPartition(partition_directory(str(tmp_path), 0), section,
                          priority=PrioritySection(host_window=100))
    copy, link = "http://a.example/copy", "http://a.example/linked"
    db.apply([(copy, "L", "http://b.other/"), (link, "LL", "http://b.other/z")], [], T0,
             cash=[0.5, 1.0])
    db.flush(T0 + 1)
    done = [(copy, "FETCHED", 200, "http:200", T0 + 5)]
    answer = db.apply([], done, T0 + 10, rescore=[(link, "LL", "http://b.other/z", -0.75, 1.0)],
                      near=[(copy, "http://c.other/original", 1)])
    answer = db.flush(T0 + 2000)
    assert answer.counts[CRAWLDB_URLS_NEAR_DUPLICATE.name] == 1
    assert answer.counts["urls.rescored"] == 1
    assert CRAWLDB_URLS_FOUND.name not in answer.counts
    assert record_of(db, link)["score"] == pytest.approx(0.25)
    # The mark and the outcome were merged together: once a major merge archives the record
    # (done for good), it keeps the flag.
    db.drum.merge(now_ms=T0 + 2001, major=True)
    assert db.drum.counters.archived == 1
    archived = [flags for _, values, is_archived in db.drum.items() if is_archived
                for flags in values["flags"].tolist()]
    assert archived == [FLAG_NEAR_DUPLICATE]


def test_a_note_about_a_response_is_a_metadata_record_that_refers_to_it(tmp_path: Path) -> None:
    writer = WarcFileWriter(tmp_path, "t-neardup", 0, new_record_id=lambda: "<urn:uuid:note>")
    writer.write_note("http://a.test/x y", "2026-11-24T00:00:00.000Z", "<urn:uuid:resp>",
                      [("nearDuplicateOf", "http://b.test/"), ("hammingDistance", "2")])
    writer.close()
    (path,) = tmp_path.glob("*.warc.gz")
    assert verify_warc_file(path)
    with gzip.open(path, "rb") as raw:
        records = [(r.rec_type, r.rec_headers, r.content_stream().read())
                   for r in ArchiveIterator(raw)]
    kind, headers, block = records[-1]
    assert kind == "metadata"
    assert headers.get_header("WARC-Refers-To") == "<urn:uuid:resp>"
    assert headers.get_header("WARC-Target-URI") == "http://a.test/x%20y"
    assert block == b"nearDuplicateOf: http://b.test/\r\nhammingDistance: 2\r\n"


def test_the_process_stage_holds_a_pages_outcome_for_the_near_duplicate_stage(
    tmp_path: Path,
) -> None:
    warc = WarcFileWriter(tmp_path / "warc", "test", 0)
    log = CrawlLogWriter(tmp_path / "crawl.log", background_flush=False)
    status = StageStatus(tmp_path / "status", "process", 0, interval=60)
    processor = PageProcessor(warc, log, VNODES, status, producer_id="0.t",
                              near_duplicates=True)
    body = f"<html><body><p>{ARTICLE}</p><a href='http://b.test/next'>n</a></body></html>"
    result = FetchResult(url="http://a.test/news/1", status=Status.FETCHED, reason="http:200",
                         http_status=200, response_headers=[("Content-Type", "text/html")],
                         body=body.encode(), started_ms=T0)
    lines = processor.process(result)
    ((query_text,),) = [processor.near_queries]
    query = NearQuery.decode(query_text)
    assert query.done == ("http://a.test/news/1", "FETCHED", 200, "http:200", T0)
    assert query.outlinks == [("http://b.test/next", "L", "http://a.test/news/1")]
    assert query.record_id == warc.last_capture.record_id
    assert query.fingerprint == fingerprint_text(ARTICLE).value
    # The page's own line carries no outcome: the near-duplicate stage sends it.
    for line in lines:
        assert "done" not in json.loads(decode_line(line)[1])
    # Not HTML: no query, the outcome goes at once.
    processor.near_queries.clear()
    text = FetchResult(url="http://a.test/t.txt", status=Status.FETCHED, reason="http:200",
                       http_status=200, response_headers=[("Content-Type", "text/plain")],
                       body=b"hello", started_ms=T0)
    (line,) = processor.process(text)
    assert json.loads(decode_line(line)[1])["done"][0][0] == "http://a.test/t.txt"
    assert processor.near_queries == []
    warc.close()
    log.close()
    status.close()


def test_the_metadata_record_names_the_server_address_and_the_simhash() -> None:
    from crawl.processing import metadata_fields

    result = FetchResult(url="http://a.test/", status=Status.FETCHED, reason="http:200",
                         http_status=200, ip_address="192.0.2.7", duration_ms=12)
    fields = metadata_fields(result, [("http://a.test/x", "L", "http://a.test/")],
                             simhash=0xABC)
    assert fields == [("fetchTimeMs", "12"), ("ip", "192.0.2.7"),
                      ("simhash", "0000000000000abc"), ("outlink", "http://a.test/x L")]
