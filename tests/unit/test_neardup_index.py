"""The sharded near-duplicate index and its verdicts, without Flink: keys that meet every pair
of near-duplicates, the index's answers, and the verdicts of pages whose probes reach the
index's keys and whose answers reach the verdict stage in any order Flink may deliver them,
against the one-instance detector that sees the pages in fetch order."""

from __future__ import annotations

import json
import random
from collections import defaultdict, deque

import pytest

from crawl.config import NearDupSection
from crawl.content.neardup import Fingerprint, NearDuplicateDetector
from crawl.content.neardup_index import (
    MIN_PER_KEY,
    IndexLayout,
    NearAnswer,
    NearProbe,
    answer_is_late,
    answer_key,
    look_up,
    page_probes,
    probe_key,
)
from crawl.content.neardup_judge import NEAR, NearQuery, NearVerdicts
from crawl.loop.records import decode_line, url_vnode

VNODES = 64
T0 = 1_700_000_000_000


def _flip(value: int, bits: int, rng: random.Random) -> int:
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return value


@pytest.mark.parametrize("k", range(9))
def test_two_fingerprints_within_k_share_a_key_and_keys_fit_an_int(k: int) -> None:
    rng = random.Random(k)
    layout = IndexLayout(k, max(4, k + 1), 1_000_000)
    for _ in range(300):
        a = rng.getrandbits(64)
        b = _flip(a, rng.randint(0, k), rng)
        keys_a, keys_b = layout.probes(a, False), layout.probes(b, False)
        assert len(keys_a) == layout.tables
        assert set(keys_a) & set(keys_b)
        assert all(0 <= key < 2**31 for _, key in keys_a)
    # Short pages: one probe, in a table of their own, keyed by the whole fingerprint.
    ((table, key),) = layout.probes(0xABC, True)
    assert table == layout.tables
    assert layout.probes(0xABC, True) == [(table, key)]
    assert key >> 24 == layout.tables


def test_the_default_layout_has_four_tables_of_16_bits_and_room_per_key() -> None:
    layout = IndexLayout.from_section(NearDupSection())
    assert layout.tables == 4
    # Twice a key's share of a million pages over 2^16 keys.
    assert layout.per_key == 31
    assert IndexLayout.from_section(NearDupSection(capacity=100)).per_key == MIN_PER_KEY
    with pytest.raises(ValueError, match="need 0 <= k < blocks"):
        IndexLayout(4, 4, 100)


def test_probes_and_answers_round_trip_and_name_their_keys() -> None:
    query = '["http://a.test/x",3,[]]'
    texts = page_probes(IndexLayout(3, 4, 100), 0x1234, False, T0, "<urn:uuid:1>",
                        "2026-11-24T00:00:00.000Z", "http://a.test/x", query)
    probes = [NearProbe.decode(text) for text in texts]
    assert [probe.table for probe in probes] == [0, 1, 2, 3]
    assert {(probe.url, probe.query) for probe in probes} == {("http://a.test/x", query)}
    assert [probe_key(text) for text in texts] == [probe.key for probe in probes]
    for answer in (NearAnswer("<urn:uuid:1>", False, (2, T0, "<urn:uuid:0>", "http://b/ x"),
                              query),
                   NearAnswer("<urn:uuid:2>", True, (1, T0, "<urn:uuid:1>", "http://a/"),
                              url="http://c/", warc_date="2026", fingerprint=7)):
        assert NearAnswer.decode(answer.encode()) == answer
        assert answer_key(answer.encode()) == answer.record_id
        assert answer_is_late(answer.encode()) == answer.late
    with pytest.raises(ValueError, match="not an answer kind"):
        NearAnswer.decode("id\tz\t1 2 <r> http://a/\tq")


def _probe(url: str, fingerprint: int, started_ms: int, record: str,
           short: bool = False) -> NearProbe:
    return NearProbe(0, 0, fingerprint, short, started_ms, record, "2026-11-24", url, "{q}")


def _entry(probe: NearProbe) -> str:
    found = look_up([], probe, 3, 100)
    assert found.entry is not None
    return found.entry


def test_a_probe_finds_the_nearest_earliest_earlier_page_and_tells_later_ones() -> None:
    base = 0xF0F0_F0F0_F0F0_F0F0
    earlier_far = _entry(_probe("http://a/1", base ^ 0b111, T0, "<r1>"))
    earlier_near = _entry(_probe("http://a/2", base ^ 0b1, T0 + 5, "<r2>"))
    earlier_near_too = _entry(_probe("http://a/3", base ^ 0b10, T0 + 7, "<r3>"))
    own_url = _entry(_probe("http://a/me", base ^ 0b11, T0 + 1, "<r4>"))
    later = _entry(_probe("http://a/5", base ^ 0b1000, T0 + 50, "<r5>"))
    unrelated = _entry(_probe("http://a/6", ~base & (2**64 - 1), T0, "<r6>"))
    entries = [later, earlier_near_too, earlier_far, own_url, earlier_near, unrelated]
    found = look_up(entries, _probe("http://a/me", base, T0 + 10, "<r0>"), 3, 100)
    answer, late = [NearAnswer.decode(text) for text in found.answers]
    # The nearest (distance 1), then the earliest of those, with the page's query.
    assert answer.original == (1, T0 + 5, "<r2>", "http://a/2")
    assert (answer.late, answer.query) == (False, "{q}")
    assert late.late
    assert late.record_id == "<r5>"
    assert late.url == "http://a/5"
    assert late.original == (1, T0 + 10, "<r0>", "http://a/me")
    # A capture of its own URL within k is held: the page is not added again.
    assert found.entry is None
    added = look_up(entries, _probe("http://a/new", base, T0 + 10, "<r0>"), 3, 100)
    assert added.entry is not None
    assert added.keep is None
    # A full key forgets its oldest.
    full = look_up(entries, _probe("http://a/new", base, T0 + 10, "<r0>"), 3, 4)
    assert full.keep == entries[3:]
    # A short page is near only a page of the same fingerprint.
    short = [_entry(_probe("http://s/1", 5, T0, "<s1>", True)),
             _entry(_probe("http://s/2", 4, T0, "<s2>", True))]
    found = look_up(short, _probe("http://s/3", 5, T0 + 1, "<s3>", True), 3, 100)
    assert NearAnswer.decode(found.answers[0]).original == (0, T0, "<s1>", "http://s/1")
    # A page with no earlier one near: nothing to say.
    assert look_up(short, _probe("http://s/4", 6, T0 + 1, "<s4>", True), 3, 100).answers == []


class _Harness:
    """The index stage and the verdict stage over dictionaries in place of keyed state, with
    messages delivered in a random order that Flink's channels allow: probes reach the index's
    keys in any order; what one key emits reaches the verdict stage in the order emitted."""

    def __init__(self, section: NearDupSection, seed: int) -> None:
        self.layout = IndexLayout.from_section(section)
        self.rng = random.Random(seed)
        self.keys: dict[int, list[str]] = defaultdict(list)
        self.kept: dict[str, str] = {}
        self.verdicts = NearVerdicts(section, VNODES, "n0")
        self.probes: list[str] = []
        self.answers: dict[int, deque[str]] = defaultdict(deque)
        self.lines: list[str] = []
        self.notes: list[tuple[str, str, int]] = []

    def send(self, probes: list[str]) -> None:
        self.probes += probes

    def run(self) -> None:
        while self.probes or any(self.answers.values()):
            waiting = [key for key, queue in self.answers.items() if queue]
            if self.probes and (not waiting or self.rng.random() < 0.5):
                probe = NearProbe.decode(self.probes.pop(self.rng.randrange(len(self.probes))))
                found = look_up(self.keys[probe.key], probe, self.layout.k, self.layout.per_key)
                if found.entry is not None:
                    self.keys[probe.key] = [*(found.keep if found.keep is not None
                                              else self.keys[probe.key]), found.entry]
                self.answers[probe.key] += found.answers
            else:
                text = self.answers[self.rng.choice(waiting)].popleft()
                answer = NearAnswer.decode(text)
                verdict = self.verdicts.take(self.kept.get(answer.record_id), answer)
                if verdict.state is not None:
                    self.kept[answer.record_id] = verdict.state
                self.lines += verdict.lines
                if verdict.note is not None:
                    fields = dict(verdict.note[3])
                    self.notes.append((verdict.note[0], fields["nearDuplicateOf"],
                                       int(fields["hammingDistance"])))


def _pages(rng: random.Random, count: int) -> list[tuple[str, Fingerprint]]:
    """Pages in clusters: copies a few bits from an article, or farther; short pages with the
    same or other words; pages too short to be judged."""
    bases = [rng.getrandbits(64) for _ in range(count // 6)]
    pages = []
    for n in range(count):
        kind = rng.random()
        if kind < 0.75:
            fingerprint = Fingerprint(_flip(rng.choice(bases), rng.choice([0, 1, 2, 3, 3, 4, 5]),
                                            rng), 100)
        elif kind < 0.95:
            fingerprint = Fingerprint(rng.choice([11, 12, 13]), 10)
        else:
            fingerprint = Fingerprint(rng.getrandbits(64), 2)
        pages.append((f"http://h{n % 5}.test/p{n}", fingerprint))
    return pages


@pytest.mark.parametrize("seed", range(12))
def test_pages_get_the_verdicts_of_one_index_in_fetch_order_whatever_order_probes_arrive_in(
    seed: int,
) -> None:
    section = NearDupSection()
    rng = random.Random(seed)
    pages = _pages(rng, 80)
    harness = _Harness(section, seed)
    # Fetched in this order (the start times); the probes of a few pages at a time are in
    # flight together and reach the keys in any order.
    expected: dict[str, bool] = {}
    detector = NearDuplicateDetector(k=3, min_features=section.min_features,
                                     min_exact_features=section.min_exact_features)
    for n, (url, fingerprint) in enumerate(pages):
        record = f"<urn:uuid:{n}>"
        verdict = detector.check(url, n, fingerprint)
        if not verdict.judged:
            continue
        expected[url] = verdict.near_duplicate
        query = NearQuery(url, url_vnode(url, VNODES), fingerprint.value, fingerprint.features,
                          record, "2026-11-24T00:00:00.000Z", []).encode()
        harness.send(page_probes(harness.layout, fingerprint.value,
                                 fingerprint.features < section.min_features, T0 + n, record,
                                 "2026-11-24T00:00:00.000Z", url, query))
        if rng.random() < 0.3:
            harness.run()
    harness.run()
    # A mark and a note for each near-duplicate, once; nothing about the other pages.
    marked = [mark[0] for line in harness.lines
              for mark in json.loads(decode_line(line)[1]).get("near", [])]
    assert sorted(marked) == sorted(url for url, near in expected.items() if near)
    assert sorted(url for url, _, _ in harness.notes) == sorted(marked)
    fetched = {url: n for n, (url, _) in enumerate(pages)}
    prints = dict(pages)
    for url, original, distance in harness.notes:
        assert fetched[original] < fetched[url]
        assert (prints[url].value ^ prints[original].value).bit_count() == distance <= 3
    assert set(harness.kept.values()) == {NEAR}
    assert len(harness.kept) == len(marked)


def test_a_page_is_marked_once_its_links_rescored_and_a_late_answer_marks_it_too() -> None:
    section = NearDupSection(outlink_weight=0.25)
    verdicts = NearVerdicts(section, VNODES, "n0")
    url = "http://b.test/copy"
    query = NearQuery(url, url_vnode(url, VNODES), 0xFF, 100, "<b>", "2026-11-24T00:00:00.000Z",
                      [("http://c.test/", "L", url)], [0.5]).encode()
    first = verdicts.take(None, NearAnswer("<b>", False, (2, T0, "<a>", "http://a.test/orig"),
                                           query))
    assert (first.state, first.near_duplicate, first.original, first.distance) == (
        NEAR, True, "http://a.test/orig", 2)
    parts = {vnode: json.loads(payload) for vnode, payload in map(decode_line, first.lines)}
    assert parts[url_vnode(url, VNODES)]["near"] == [[url, "http://a.test/orig", 2]]
    assert "done" not in parts[url_vnode(url, VNODES)]  # the outcome went at once
    # The copy's link gives back three quarters of the cash it brought.
    assert parts[url_vnode("http://c.test/", VNODES)]["rescore"] == [
        ["http://c.test/", "L", url, -0.75, 0.5]]
    assert first.note == (url, "2026-11-24T00:00:00.000Z", "<b>", [
        ("nearDuplicateOf", "http://a.test/orig"), ("hammingDistance", "2"),
        ("simhash", "00000000000000ff")])
    # Another table's answer, or a late one: marked already.
    again = verdicts.take(NEAR, NearAnswer("<b>", False, (1, T0, "<z>", "http://z/"), query))
    assert (again.state, again.lines, again.note) == (None, [], None)
    late = NearAnswer("<d>", True, (1, T0, "<a>", "http://a.test/orig"), url="http://d.test/",
                      warc_date="2026-11-24T00:00:00.000Z", fingerprint=0xFE)
    marked = verdicts.take(None, late)
    ((vnode, payload),) = [decode_line(line) for line in marked.lines]
    assert vnode == url_vnode("http://d.test/", VNODES)
    assert json.loads(payload)["near"] == [["http://d.test/", "http://a.test/orig", 1]]
    assert marked.note[:3] == ("http://d.test/", "2026-11-24T00:00:00.000Z", "<d>")
    assert verdicts.take(NEAR, late).lines == []
