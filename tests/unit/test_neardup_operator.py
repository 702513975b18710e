"""The near-duplicate stage's handlers (operators/neardup.py) over the Flink fakes: every page
told to the crawl DB, a near-duplicate marked with a WARC note, the index rebuilt from keyed
state after a restore, unreadable queries skipped, and the state layout a savepoint restores."""

from __future__ import annotations

import uuid
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from crawl.config import load_config
from crawl.content.neardup_judge import NearQuery
from crawl.layout import OutputLayout
from crawl.loop.records import decode_line, parse_record
from operators.neardup import NearDuplicateFunction, NearDuplicateSettings, neardup_prefix
from tests.fakes import KeyedHarness, Snapshot

T0 = 1_700_000_000_000
FINGERPRINT = 0x0123_4567_89AB_CDEF


def _harness(out: Path, restore: Snapshot | None = None) -> KeyedHarness:
    function = NearDuplicateFunction(NearDuplicateSettings.from_config(load_config()), str(out))
    return KeyedHarness(function, now_ms=T0, restore=restore).open()


def _query(url: str, fingerprint: int) -> str:
    return NearQuery(url, 3, (url, "FETCHED", 200, "", T0), fingerprint, 100,
                     f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>", "2023-11-14T22:13:20Z",
                     [("http://c.test/", "L", url)], [1.0]).encode()


def _marks(lines: list[str]) -> list[tuple]:
    return [tuple(mark) for line in lines for mark in parse_record(decode_line(line)[1]).near]


def _notes(out: Path) -> list[str]:
    found = []
    prefix = neardup_prefix(load_config().warc)
    for path in sorted(OutputLayout(str(out)).warc.glob(f"{prefix}-*.warc.gz")):
        with path.open("rb") as stream:
            found += [record.rec_headers.get_header("WARC-Target-URI")
                      for record in ArchiveIterator(stream) if record.rec_type == "metadata"]
    return found


def test_a_near_duplicate_is_marked_after_a_restore(tmp_path: Path) -> None:
    first = _harness(tmp_path)
    lines = first.process(0, _query("http://a.test/", FINGERPRINT))
    assert _marks(lines) == []
    assert [d[0] for line in lines for d in parse_record(decode_line(line)[1]).done] == [
        "http://a.test/"]
    snapshot = first.snapshot()
    first.close()
    second = _harness(tmp_path, restore=snapshot)  # the index comes back from ``pages``
    lines = second.process(0, _query("http://b.test/", FINGERPRINT ^ 0b101))
    second.close()
    assert _marks(lines) == [("http://b.test/", "http://a.test/", 2)]
    rescored = [r for line in lines for r in parse_record(decode_line(line)[1]).rescore]
    assert [r[0] for r in rescored] == ["http://c.test/"]
    assert _notes(tmp_path) == ["http://b.test/"]


def test_a_page_far_from_the_others_is_no_near_duplicate(tmp_path: Path) -> None:
    harness = _harness(tmp_path)
    try:
        harness.process(0, _query("http://a.test/", FINGERPRINT))
        assert _marks(harness.process(0, _query("http://b.test/", ~FINGERPRINT & 2**64 - 1))) == []
        assert len(list(harness.state("pages", 0)["items"])) == 2
    finally:
        harness.close()


def test_an_unreadable_query_is_skipped(tmp_path: Path) -> None:
    harness = _harness(tmp_path)
    try:
        assert harness.process(0, "[1, 2") == []
        assert harness.keys("pages") == set()
    finally:
        harness.close()


def test_the_state_layout_is_the_one_savepoints_hold(tmp_path: Path) -> None:
    harness = _harness(tmp_path)
    try:
        assert harness.descriptors == {"pages": ("list", "ListTypeInfo<String>")}
    finally:
        harness.close()
