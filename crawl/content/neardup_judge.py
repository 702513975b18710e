"""The near-duplicate stage's work, without Flink: judge each archived page against every page
archived before it, and tell the crawl DB.

Near-duplicates of a page can be anywhere in the crawl: no key routes them to one place (that
is what the simhash index's permuted tables are for), so one instance of the stage sees every
page: the process stage, which parses pages in parallel, sends it a small :class:`NearQuery`
per archived HTML page (the fingerprint made of the page's main text, the page's own outcome
and the links it sent on), and the stage does the index lookup (about 0.1 ms at 1 to 10
million pages, ``BENCHMARKS.md``). :class:`NearJudge` answers each query with:

* the page's loop line for the crawl DB: its outcome (held back by the process stage until
  the verdict, so that both reach the crawl DB record in one merge), and for a near-duplicate
  a mark (the record's ``FLAG_NEAR_DUPLICATE``, counted as ``urls.near_duplicate``);
* for a near-duplicate, ``rescore`` entries for the links it sent: each counts
  ``neardup.outlink_weight`` of a link (a copy of a page says little about what it links to);
* for a near-duplicate, the fields of a WARC ``metadata`` record about its response
  (``nearDuplicateOf``, ``hammingDistance``, ``simhash``), which the stage writes to WARC files
  of its own.

Its memory is :class:`crawl.content.neardup.NearDuplicateDetector`'s (at most ``neardup.capacity``
pages, the older half forgotten when full) plus each page's URL; :meth:`NearJudge.entries`
is what the operator keeps in keyed state to rebuild it after a restore.
"""

from __future__ import annotations

import dataclasses
import json
from collections import deque
from collections.abc import Iterable

from crawl.config import NearDupSection
from crawl.content.neardup import Fingerprint, NearDuplicateDetector
from crawl.loop.records import DoneEvent, FoundUrl, Rescore, encode_line, url_vnode

__all__ = ["NearJudge", "NearQuery", "NearVerdict"]


@dataclasses.dataclass(frozen=True)
class NearQuery:
    """What the process stage sends about one archived page."""

    url: str
    vnode: int
    #: The page's own outcome, for the crawl DB.
    done: DoneEvent
    fingerprint: int
    features: int
    #: The WARC-Record-ID and WARC-Date of the page's response record.
    record_id: str
    warc_date: str
    #: The links the page sent on (after the cache of recent URLs and the URL policy)...
    outlinks: list[FoundUrl]
    #: ...and the cash each of them brought (:mod:`crawl.urls.priority`).
    outlink_cash: list[float] = dataclasses.field(default_factory=list)

    def encode(self) -> str:
        return json.dumps(
            [self.url, self.vnode, list(self.done), f"{self.fingerprint:016x}", self.features,
             self.record_id, self.warc_date, [list(item) for item in self.outlinks],
             self.outlink_cash],
            separators=(",", ":"), ensure_ascii=False,
        )

    @classmethod
    def decode(cls, text: str) -> NearQuery:
        url, vnode, done, fingerprint, features, record_id, warc_date, outlinks, *cash = (
            json.loads(text))
        return cls(
            url, int(vnode), tuple(done), int(fingerprint, 16), int(features), record_id,
            warc_date, [tuple(item) for item in outlinks],
            [float(amount) for amount in cash[0]] if cash else [],
        )


@dataclasses.dataclass(frozen=True)
class NearVerdict:
    """What the stage does with one query."""

    #: Loop lines for the crawl DB.
    lines: list[str]
    #: The earlier page this one is a near-duplicate of, and the distance (None: none).
    original: str | None = None
    distance: int | None = None
    #: Fields of the WARC metadata record to write about the page (None: none).
    note: list[tuple[str, str]] | None = None
    #: The entry to append to the stored pages (None: the page was not added).
    entry: str | None = None
    #: The stored pages changed other than by ``entry`` (the older half was forgotten):
    #: store :meth:`NearJudge.entries` again.
    rewrite: bool = False


class NearJudge:
    """Judges pages one after another (see the module docstring). Not thread-safe."""

    def __init__(self, section: NearDupSection, vnodes: int, producer_id: str) -> None:
        self._detector = NearDuplicateDetector(
            k=section.max_distance,
            blocks=max(4, section.max_distance + 1),
            capacity=section.capacity,
            min_features=section.min_features,
            min_exact_features=section.min_exact_features,
        )
        self._rescore_weight = section.outlink_weight - 1.0
        self._vnodes = vnodes
        self._producer_id = producer_id
        self._lines = 0
        self._next_capture = 0
        # (capture id, URL, fingerprint, short) of the pages held, oldest first.
        self._pages: deque[tuple[int, str, int, bool]] = deque()
        self._urls: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._pages)

    @property
    def detector(self) -> NearDuplicateDetector:
        return self._detector

    def restore(self, entries: Iterable[str]) -> int:
        """Take back stored pages (:meth:`entries`, oldest first); returns how many were
        unreadable (skipped)."""
        bad = 0
        for entry in entries:
            try:
                fingerprint, capture, url = entry.split(" ", 2)
                short = fingerprint.startswith(_SHORT)
                value, capture_id = int(fingerprint.removeprefix(_SHORT), 16), int(capture)
            except ValueError:
                bad += 1
                continue
            self._detector.restore([(value, capture_id, url)], short)
            self._remember(capture_id, url, value, short)
            self._next_capture = max(self._next_capture, capture_id + 1)
        self._forget()
        return bad

    def entries(self) -> list[str]:
        """The pages held, oldest first, as stored."""
        return [_entry(value, capture, url, short) for capture, url, value, short in self._pages]

    def judge(self, query: NearQuery) -> NearVerdict:
        capture = self._next_capture
        self._next_capture += 1
        held = len(self._detector)
        verdict = self._detector.check(
            query.url, capture, Fingerprint(query.fingerprint, query.features)
        )
        rewrite = False
        entry = None
        if verdict.added:
            short = query.features < self._detector.min_features
            self._remember(capture, query.url, query.fingerprint, short)
            entry = _entry(query.fingerprint, capture, query.url, short)
            if len(self._detector) < held + 1:  # the older half went
                rewrite = self._forget()
        if not verdict.near_duplicate:
            line = encode_line(query.vnode, done=[query.done], line_id=self._line_id())
            return NearVerdict([line], entry=entry, rewrite=rewrite)
        original = self._urls.get(verdict.duplicate_of, "")
        distance = int(verdict.distance or 0)
        lines = [encode_line(query.vnode, done=[query.done],
                             near=[(query.url, original, distance)], line_id=self._line_id())]
        cash = query.outlink_cash or [None] * len(query.outlinks)
        groups: dict[int, list[Rescore]] = {}
        for (url, hops, via), amount in zip(query.outlinks, cash, strict=True):
            groups.setdefault(url_vnode(url, self._vnodes), []).append(
                (url, hops, via, self._rescore_weight, amount))
        for vnode, rescore in groups.items():
            lines.append(encode_line(vnode, rescore=rescore, line_id=self._line_id()))
        note = [
            ("nearDuplicateOf", original),
            ("hammingDistance", str(distance)),
            ("simhash", f"{query.fingerprint:016x}"),
        ]
        return NearVerdict(lines, original, distance, note, entry, rewrite)

    def _remember(self, capture: int, url: str, fingerprint: int, short: bool) -> None:
        self._pages.append((capture, url, fingerprint, short))
        self._urls[capture] = url

    def _forget(self) -> bool:
        """Drop the pages the detector forgot (the oldest); True if any."""
        dropped = False
        while len(self._pages) > len(self._detector):
            capture, _, _, _ = self._pages.popleft()
            self._urls.pop(capture, None)
            dropped = True
        return dropped

    def _line_id(self) -> str:
        self._lines += 1
        return f"{self._producer_id}.{self._lines}"


#: Marks the stored entry of a short page (judged by its exact set of features).
_SHORT = "="


def _entry(fingerprint: int, capture: int, url: str, short: bool) -> str:
    return f"{_SHORT if short else ''}{fingerprint:016x} {capture} {url}"
