"""The near-duplicate index, sharded over the job's keyed state: which earlier pages lie
within ``k`` bits of a page, found by a stage that runs at the job's parallelism.

Manku, Jain and Das Sarma's permuted tables (:mod:`crawl.content.simhash`) cut a 64-bit
fingerprint into ``blocks`` blocks; two fingerprints within distance ``k`` agree on at least
``blocks - k`` whole blocks (pigeonhole), so a table keyed by one choice of ``blocks - k``
blocks holds every near-duplicate of a page under the page's own key. Here each (table, key)
is a key of Flink's keyed state (:meth:`IndexLayout.probes`): the index stage keeps, under
each key, the pages whose fingerprints have that key in that table, and its keys spread over
its subtasks like any keyed state. With ``k`` = 3 and 4 blocks (the default) there are four
tables keyed by 16 bits: a page sends four :class:`NearProbe` s, one per table; a short page
(fewer than ``neardup.min_features`` features, judged by its exact set of features) one, to a
table of its own keyed by its whole fingerprint.

Each probe is looked up (:func:`look_up`) for the nearest, then earliest, earlier page of
another URL under its key within ``k``, and the page is added there. Only a page that has one
tells the verdict stage (:mod:`crawl.content.neardup_judge`), keyed by the page's WARC record
id, which marks it once, whichever of its tables finds it first: most pages are no
near-duplicates, and cost their probes alone. *Earlier* is fetched earlier: the fetch's start in
ms, then the record id, the same order in every table whatever order the probes reach them in.
Probes of two pages fetched at about the same time may reach a table in either order: when the
earlier page finds the later one already there, it tells the verdict stage of the later page
(a late answer). So a page is found a near-duplicate exactly when a single index that saw the
pages in fetch order would find it one, at any parallelism; its original is an earlier page
within ``k``, the nearest then earliest one of the table that found it first.

A page is not added to a table that holds a page of its own URL within ``k`` under the same key
(a continuous crawl fetches a page again and again; a page that changed little would fill the
index with copies of itself). A key holds at most ``per_key`` pages (:meth:`IndexLayout.per_key`,
from ``neardup.capacity``); when full, its oldest page is forgotten.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

from crawl.config import NearDupSection

__all__ = [
    "IndexLayout",
    "Lookup",
    "NearAnswer",
    "NearProbe",
    "answer_is_late",
    "answer_key",
    "look_up",
    "page_probes",
    "probe_key",
]

#: Bits of a key kept within a table (a table's bits of the fingerprint folded to this many).
_KEY_BITS = 24
_KEY_MASK = (1 << _KEY_BITS) - 1
#: The fewest pages a key holds before forgetting its oldest.
MIN_PER_KEY = 16


def _fold(value: int) -> int:
    return (value ^ (value >> _KEY_BITS) ^ (value >> 2 * _KEY_BITS)) & _KEY_MASK


class IndexLayout:
    """The tables of the index for distance ``k`` with ``blocks`` blocks, and the keys a
    fingerprint has in them. Two fingerprints that share a key may still differ in their
    table's bits (they are folded to 24): the distance is computed from whole fingerprints."""

    def __init__(self, k: int, blocks: int, capacity: int) -> None:
        if not 0 <= k < blocks <= 64:
            raise ValueError(f"need 0 <= k < blocks <= 64, got k={k}, blocks={blocks}")
        widths = [64 // blocks + (1 if i < 64 % blocks else 0) for i in range(blocks)]
        starts = list(itertools.accumulate([0, *widths[:-1]]))
        masks = [((1 << w) - 1) << s for w, s in zip(widths, starts, strict=True)]
        self.k = k
        #: One key mask per table: the union of the blocks it is keyed by.
        self.masks = [sum(masks[i] for i in chosen)
                      for chosen in itertools.combinations(range(blocks), blocks - k)]
        if len(self.masks) >= 127:
            raise ValueError(f"k={k} with {blocks} blocks makes too many tables")
        keys = min(1 << min(_KEY_BITS, mask.bit_count()) for mask in self.masks)
        #: Most pages a key holds: twice its share of ``capacity``, at least MIN_PER_KEY.
        self.per_key = max(MIN_PER_KEY, -(-2 * capacity // keys))

    @classmethod
    def from_section(cls, section: NearDupSection) -> IndexLayout:
        return cls(section.max_distance, max(4, section.max_distance + 1), section.capacity)

    @property
    def tables(self) -> int:
        """Tables of pages judged by distance (short pages have one more)."""
        return len(self.masks)

    def probes(self, fingerprint: int, short: bool) -> list[tuple[int, int]]:
        """(table, key) of each table a page is looked up in and added to: every table, or for a
        short page the short pages' table. Keys are non-negative 31-bit integers, the table in
        the top bits."""
        if short:
            return [(self.tables, (self.tables << _KEY_BITS) | _fold(fingerprint))]
        return [(table, (table << _KEY_BITS) | _fold(fingerprint & mask))
                for table, mask in enumerate(self.masks)]


@dataclasses.dataclass(frozen=True)
class NearProbe:
    """One page looked up in and added to one table of the index."""

    key: int
    table: int
    fingerprint: int
    short: bool
    started_ms: int
    record_id: str
    warc_date: str
    url: str
    #: The page's encoded :class:`crawl.content.neardup_judge.NearQuery` (what a verdict about
    #: it needs), which the index passes on with a candidate.
    query: str = ""

    @property
    def order(self) -> tuple[int, str]:
        return self.started_ms, self.record_id

    def encode(self) -> str:
        # Tab-separated, the key first (the stage's key selector reads only it). No field holds
        # a tab: URLs are normalised, the query is JSON (which escapes tabs in strings).
        return (f"{self.key}\t{self.table}\t{self.fingerprint:016x}\t"
                f"{'s' if self.short else ''}\t{self.started_ms}\t{self.record_id}\t"
                f"{self.warc_date}\t{self.url}\t{self.query}")

    @classmethod
    def decode(cls, text: str) -> NearProbe:
        (key, table, fingerprint, short, started_ms, record_id, warc_date, url,
         query) = text.split("\t", 8)
        return cls(int(key), int(table), int(fingerprint, 16), short == "s", int(started_ms),
                   record_id, warc_date, url, query)


def page_probes(layout: IndexLayout, fingerprint: int, short: bool, started_ms: int,
                record_id: str, warc_date: str, url: str, query: str) -> list[str]:
    """The encoded probes of one page, each with its encoded ``query``."""
    return [NearProbe(key, table, fingerprint, short, started_ms, record_id, warc_date, url,
                      query).encode()
            for table, key in layout.probes(fingerprint, short)]


def probe_key(text: str) -> int:
    """The index stage's key of an encoded probe."""
    return int(text[: text.index("\t")])


@dataclasses.dataclass(frozen=True)
class NearAnswer:
    """What the index tells the verdict stage: the page of ``record_id`` is a near-duplicate
    of ``original`` (distance, fetch start in ms, record id, URL).

    A table found the original for the page's probe (``late`` False): ``query`` is the page's.
    Or the original reached a table after the page (``late``): ``url``, ``warc_date`` and
    ``fingerprint`` are the page's (what a mark and a note about it need)."""

    record_id: str
    late: bool
    original: tuple[int, int, str, str]
    query: str = ""
    url: str = ""
    warc_date: str = ""
    fingerprint: int = 0

    def encode(self) -> str:
        original = " ".join(map(str, self.original))
        if self.late:
            return (f"{self.record_id}\tl\t{original}\t{self.url}\t{self.warc_date}\t"
                    f"{self.fingerprint:016x}")
        return f"{self.record_id}\ta\t{original}\t{self.query}"

    @classmethod
    def decode(cls, text: str) -> NearAnswer:
        record_id, kind, original_text, rest = text.split("\t", 3)
        distance, started_ms, original_id, url = original_text.split(" ", 3)
        original = (int(distance), int(started_ms), original_id, url)
        if kind == "l":
            url, warc_date, fingerprint = rest.split("\t")
            return cls(record_id, True, original, url=url, warc_date=warc_date,
                       fingerprint=int(fingerprint, 16))
        if kind != "a":
            raise ValueError(f"not an answer kind: {kind!r}")
        return cls(record_id, False, original, rest)


def answer_is_late(text: str) -> bool:
    """Whether an encoded answer is a late answer."""
    return text[text.index("\t") + 1] == "l"


def answer_key(text: str) -> str:
    """The verdict stage's key of an encoded answer: the page's record id."""
    return text[: text.index("\t")]


@dataclasses.dataclass(frozen=True)
class Lookup:
    """What the index does with one probe."""

    #: Encoded :class:`NearAnswer` s for the verdict stage: the probing page's original, if it
    #: has one here, and late answers for later pages it is near.
    answers: list[str]
    #: The entry to add under the key (None: the key holds a page of the URL within k).
    entry: str | None
    #: Entries to keep before ``entry`` when the key is full (None: keep all, append).
    keep: list[str] | None = None


def _entry(probe: NearProbe) -> str:
    return (f"{probe.fingerprint:016x} {probe.started_ms} {probe.record_id} {probe.warc_date} "
            f"{probe.url}")


def look_up(entries: Sequence[str], probe: NearProbe, k: int, per_key: int) -> Lookup:
    """Answer ``probe`` from the ``entries`` its key holds (oldest first) and say what the key
    holds next. O(entries)."""
    fingerprint = probe.fingerprint
    limit = 0 if probe.short else k
    order = probe.order
    best: tuple[int, int, str, str] | None = None
    lates = []
    held = False
    for entry in entries:
        distance = (int(entry[:16], 16) ^ fingerprint).bit_count()
        if distance > limit:
            continue
        _, started, record_id, warc_date, url = entry.split(" ", 4)
        if url == probe.url:
            held = True
            continue
        other = (int(started), record_id)
        if other < order:
            candidate = (distance, other[0], record_id, url)
            if best is None or candidate < best:
                best = candidate
        elif other > order:
            lates.append(NearAnswer(
                record_id, True, (distance, probe.started_ms, probe.record_id, probe.url),
                url=url, warc_date=warc_date, fingerprint=int(entry[:16], 16)).encode())
    answers = [NearAnswer(probe.record_id, False, best, probe.query).encode()] if best else []
    answers += lates
    if held:
        return Lookup(answers, None)
    keep = list(entries[len(entries) - per_key + 1:]) if len(entries) >= per_key else None
    return Lookup(answers, _entry(probe), keep)
