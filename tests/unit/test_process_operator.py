"""The process stage's handlers (operators/process.py) over the Flink fakes: a page archived and
sent round the loop, its payload met again under the same key written as a revisit record (the
first capture kept in keyed state, across a restore too), near-duplicate queries on the side
output, and the state layout a savepoint restores."""

from __future__ import annotations

from pathlib import Path

from pyflink.common import Types
from pyflink.datastream import OutputTag
from warcio.archiveiterator import ArchiveIterator

from crawl.config import Config, load_config
from crawl.content.neardup_index import NearProbe
from crawl.content.neardup_judge import NearQuery
from crawl.layout import OutputLayout
from crawl.loop.records import decode_line, parse_record
from crawl.model import FetchResult
from crawl.processing import ProcessSettings, payload_key
from crawl.status import Status
from operators.process import ProcessFunction
from tests.fakes import KeyedHarness, Snapshot

T0 = 1_700_000_000_000
# (Words without digits: the near-duplicate fingerprint leaves those out.)
WORDS = " ".join(f"word{chr(97 + n % 26)}{chr(97 + n // 26)}" for n in range(60))
BODY = (f"<html><body><p>{WORDS}</p><a href='/next'>next</a></body></html>").encode()


def _config() -> Config:
    # No time to live on the first captures: PyFlink builds its TTL settings in the JVM.
    return load_config(None, {"warc.revisit_window_seconds": 0})


def _page(url: str, body: bytes = BODY) -> FetchResult:
    return FetchResult(url=url, status=Status.FETCHED, reason="", http_status=200,
                       http_reason="OK",
                       response_headers=[("Content-Type", "text/html; charset=utf-8")],
                       body=body, started_ms=T0, duration_ms=12, hops="L",
                       via="http://a.test/")


def _harness(out: Path, restore: Snapshot | None = None, near: OutputTag | None = None,
             ) -> KeyedHarness:
    function = ProcessFunction(ProcessSettings.from_config(_config()), str(out), near)
    return KeyedHarness(function, now_ms=T0, restore=restore).open()


def _process(harness: KeyedHarness, result: FetchResult) -> list:
    return harness.process(payload_key(result, 1), result)


def _records(out: Path) -> list[tuple[str, str]]:
    """(WARC-Type, WARC-Target-URI) of every record of the crawl's WARC files."""
    found = []
    for path in sorted(OutputLayout(str(out)).warc.glob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                found.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI")))
    return found


def test_a_page_is_archived_logged_and_sent_round_the_loop(tmp_path: Path) -> None:
    harness = _harness(tmp_path)
    lines = _process(harness, _page("http://a.test/one"))
    harness.close()
    records = [parse_record(decode_line(line)[1]) for line in lines]
    assert [tuple(done[:3]) for r in records for done in r.done] == [
        ("http://a.test/one", "FETCHED", 200)]
    assert [url for r in records for url, _, _ in r.found] == ["http://a.test/next"]
    assert ("response", "http://a.test/one") in _records(tmp_path)
    log = (OutputLayout(str(tmp_path)).logs / "crawl-00000.log").read_text(encoding="utf-8")
    assert "http://a.test/one" in log


def test_a_payload_met_again_is_a_revisit_across_a_restore(tmp_path: Path) -> None:
    first = _harness(tmp_path)
    _process(first, _page("http://a.test/one"))
    key = payload_key(_page("http://a.test/one"), 1)
    assert first.state("first-capture", key)["value"].startswith("http://a.test/one ")
    snapshot = first.snapshot()
    first.close()
    second = _harness(tmp_path, restore=snapshot)
    _process(second, _page("http://b.test/copy"))
    _process(second, _page("http://b.test/other", BODY.replace(b"wordba ", b"other ")))
    second.close()
    kinds = {url: kind for kind, url in _records(tmp_path) if kind in ("response", "revisit")}
    assert kinds == {"http://a.test/one": "response", "http://b.test/copy": "revisit",
                     "http://b.test/other": "response"}


def test_archived_pages_probe_the_near_duplicate_index_on_the_side_output(tmp_path: Path
                                                                          ) -> None:
    tag = OutputTag("near-probes", Types.STRING())
    harness = _harness(tmp_path, near=tag)
    try:
        emitted = _process(harness, _page("http://a.test/one"))
    finally:
        harness.close()
    probes = [NearProbe.decode(value) for item in emitted
              if isinstance(item, tuple) and item[0] is tag for value in item[1:]]
    assert [probe.table for probe in probes] == [0, 1, 2, 3]
    assert len({probe.query for probe in probes}) == 1
    decoded = NearQuery.decode(probes[0].query)
    assert decoded.url == "http://a.test/one"
    # The page's outcome goes round the loop at once, with its links.
    lines = [item for item in emitted if isinstance(item, str)]
    assert [[event[:2] for event in parse_record(decode_line(line)[1]).done]
            for line in lines] == [[("http://a.test/one", "FETCHED")]]


def test_the_state_layout_is_the_one_savepoints_hold(tmp_path: Path) -> None:
    harness = _harness(tmp_path)
    try:
        assert harness.descriptors == {"first-capture": ("value", "String")}
    finally:
        harness.close()
