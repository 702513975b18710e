"""Near-duplicates in the job's plain logic: the process stage's probes, the WARC note of a
verdict, the crawl DB's marks and rescores, and the loop format that carries them (the index
and the verdicts: tests/unit/test_neardup_index.py)."""

from __future__ import annotations

import gzip
import json
import uuid
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl.archive.crawl_log import CrawlLogWriter
from crawl.archive.warc import WarcFileWriter, verify_warc_file
from crawl.config import CrawlDbSection, PrioritySection
from crawl.content.neardup import fingerprint_text
from crawl.content.neardup_index import NearProbe
from crawl.content.neardup_judge import NearQuery
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
        url, url_vnode(url, VNODES) if vnode is None else vnode, fp.value, fp.features,
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
                          priority=PrioritySection(host_window=100), timer=_no_time)
    copy, link = "http://a.example/copy", "http://a.example/linked"
    db.apply([(copy, "L", "http://b.other/"), (link, "LL", "http://b.other/z")], [], T0,
             cash=[0.5, 1.0])
    db.flush(T0 + 1)
    # The outcome comes from the process stage, the mark and the rescores a little later
    # from the near-duplicate verdicts.
    db.apply([], [(copy, "FETCHED", 200, "http:200", T0 + 5)], T0 + 10)
    db.flush(T0 + 20)
    db.apply([], [], T0 + 30, rescore=[(link, "LL", "http://b.other/z", -0.75, 1.0)],
             near=[(copy, "http://c.other/original", 1)])
    answer = db.flush(T0 + 2000)
    assert answer.counts[CRAWLDB_URLS_NEAR_DUPLICATE.name] == 1
    assert answer.counts["urls.rescored"] == 1
    assert CRAWLDB_URLS_FOUND.name not in answer.counts
    assert record_of(db, link)["score"] == pytest.approx(0.25)
    # Once a major merge archives the record (done for good), it keeps the flag.
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


def test_the_process_stage_sends_a_pages_outcome_and_its_probes(
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
    probes = [NearProbe.decode(text) for text in processor.near_probes]
    assert [probe.table for probe in probes] == [0, 1, 2, 3]
    assert {probe.record_id for probe in probes} == {warc.last_capture.record_id}
    assert len({probe.query for probe in probes}) == 1
    query = NearQuery.decode(probes[0].query)
    assert query.outlinks == [("http://b.test/next", "L", "http://a.test/news/1")]
    assert query.record_id == warc.last_capture.record_id
    assert query.fingerprint == fingerprint_text(ARTICLE).value
    # The page's outcome goes at once.
    assert [event[:5] for line in lines
            for event in json.loads(decode_line(line)[1]).get("done", [])] == [
        ["http://a.test/news/1", "FETCHED", 200, "http:200", T0]]
    # Not HTML: no probes.
    processor.near_probes.clear()
    text = FetchResult(url="http://a.test/t.txt", status=Status.FETCHED, reason="http:200",
                       http_status=200, response_headers=[("Content-Type", "text/plain")],
                       body=b"hello", started_ms=T0)
    (line,) = processor.process(text)
    assert json.loads(decode_line(line)[1])["done"][0][0] == "http://a.test/t.txt"
    assert processor.near_probes == []
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


def _no_time() -> float:
    """A release's pass over the DRUM takes no time (on a loaded machine it may take longer
    than the share of ``release_seconds`` a pass may use, and space the releases out)."""
    return 0.0
