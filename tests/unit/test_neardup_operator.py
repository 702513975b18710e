"""The near-duplicate stages' handlers (operators/neardup_index.py, operators/neardup.py) over
the Flink fakes: probes looked up under the index's keys, a near-duplicate marked once with a
WARC note, the index kept in keyed state across a restore, unreadable probes and answers
skipped, and the state layout a savepoint restores."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from crawl.config import load_config
from crawl.content.neardup_index import IndexLayout, answer_key, page_probes, probe_key
from crawl.content.neardup_judge import NearQuery
from crawl.layout import OutputLayout
from crawl.loop.records import decode_line, parse_record
from operators.neardup import NearDuplicateSettings, NearVerdictFunction, neardup_prefix
from operators.neardup_index import NearIndexFunction
from tests.fakes import KeyedHarness, Snapshot

T0 = 1_700_000_000_000
FINGERPRINT = 0x0123_4567_89AB_CDEF
#: No time to live on the verdicts: PyFlink builds its TTL settings in the JVM.
SETTINGS = dataclasses.replace(NearDuplicateSettings.from_config(load_config()),
                               verdict_seconds=0)
LAYOUT = IndexLayout.from_section(SETTINGS.neardup)


@dataclasses.dataclass
class _Stages:
    index: KeyedHarness
    verdicts: KeyedHarness

    def page(self, url: str, fingerprint: int, started_ms: int) -> list[str]:
        """The loop lines the page's probes lead to."""
        record_id = f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>"
        query = NearQuery(url, 3, fingerprint, 100, record_id, "2023-11-14T22:13:20Z",
                          [("http://c.test/", "L", url)], [1.0]).encode()
        lines = []
        for probe in page_probes(LAYOUT, fingerprint, False, started_ms, record_id,
                                 "2023-11-14T22:13:20Z", url, query):
            for answer in self.index.process(probe_key(probe), probe):
                lines += self.verdicts.process(answer_key(answer), answer)
        return lines

    def snapshot(self) -> tuple[Snapshot, Snapshot]:
        return self.index.snapshot(), self.verdicts.snapshot()

    def close(self) -> None:
        self.index.close()
        self.verdicts.close()


def _stages(out: Path, restore: tuple[Snapshot, Snapshot] | None = None) -> _Stages:
    index, verdicts = restore if restore is not None else (None, None)
    return _Stages(
        KeyedHarness(NearIndexFunction(SETTINGS, str(out)), now_ms=T0, restore=index).open(),
        KeyedHarness(NearVerdictFunction(SETTINGS, str(out)), now_ms=T0,
                     restore=verdicts).open())


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
    first = _stages(tmp_path)
    assert first.page("http://a.test/", FINGERPRINT, T0) == []  # no near-duplicate: nothing
    snapshot = first.snapshot()
    first.close()
    second = _stages(tmp_path, restore=snapshot)  # the index is keyed state: it comes back
    lines = second.page("http://b.test/", FINGERPRINT ^ 0b101, T0 + 1)
    second.close()
    # Found in each of the tables it shares with the first page: marked once.
    assert _marks(lines) == [("http://b.test/", "http://a.test/", 2)]
    rescored = [r for line in lines for r in parse_record(decode_line(line)[1]).rescore]
    assert [r[0] for r in rescored] == ["http://c.test/"]
    assert _notes(tmp_path) == ["http://b.test/"]


def test_a_page_reaching_the_index_after_a_later_copy_marks_it(tmp_path: Path) -> None:
    stages = _stages(tmp_path)
    try:
        # The later page's probes came first: nothing to say about it...
        assert stages.page("http://b.test/", FINGERPRINT ^ 0b1, T0 + 5) == []
        # ...until the earlier page's probes find it: a late mark (once, though each of the
        # four tables found it), and the earlier page is the original.
        earlier = stages.page("http://a.test/", FINGERPRINT, T0)
        assert _marks(earlier) == [("http://b.test/", "http://a.test/", 1)]
    finally:
        stages.close()
    assert _notes(tmp_path) == ["http://b.test/"]


def test_a_page_far_from_the_others_is_no_near_duplicate(tmp_path: Path) -> None:
    stages = _stages(tmp_path)
    try:
        stages.page("http://a.test/", FINGERPRINT, T0)
        assert stages.page("http://b.test/", ~FINGERPRINT & 2**64 - 1, T0 + 1) == []
        # Each page under its key of each of the four tables; no verdict kept.
        assert len(stages.index.keys("pages")) == 8
        assert stages.verdicts.keys("verdict") == set()
    finally:
        stages.close()


def test_unreadable_probes_and_answers_are_skipped(tmp_path: Path) -> None:
    stages = _stages(tmp_path)
    try:
        assert stages.index.process(1, "1\t2") == []
        assert stages.verdicts.process("x", "x\tz\t1 2 <r> http://a/\tq") == []
        assert stages.index.keys("pages") == set()
        assert stages.verdicts.keys("verdict") == set()
    finally:
        stages.close()


def test_the_state_layout_is_the_one_savepoints_hold(tmp_path: Path) -> None:
    stages = _stages(tmp_path)
    try:
        assert stages.index.descriptors == {"pages": ("list", "ListTypeInfo<String>")}
        assert stages.verdicts.descriptors == {"verdict": ("value", "String")}
    finally:
        stages.close()
