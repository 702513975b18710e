"""The near-duplicate verdicts, without Flink: mark each page the index found a near-duplicate,
once, and tell the crawl DB.

The process stage, which parses pages in parallel, sends a page's probes to the index stage
(:mod:`crawl.content.neardup_index`), each with a small :class:`NearQuery` (the page's URL, its
fingerprint and record, the links it sent on); its outcome goes to the crawl DB at once. The
index tells the verdict stage, keyed by the page's WARC record id, only of a page it found an
earlier page within ``k`` for (or, a late answer, of a later page that an earlier one reached
after it). :class:`NearVerdicts` marks the page the first time and keeps that it did (``Y``)
for the answers of its other tables; a marked page's verdict is:

* a loop line with its mark for the crawl DB (the record's ``FLAG_NEAR_DUPLICATE``, counted as
  ``urls.near_duplicate``, and the budgets' count of its good pages);
* ``rescore`` entries for the links it sent: each counts ``neardup.outlink_weight`` of a link
  (a copy of a page says little about what it links to; not for a page marked by a late
  answer, whose query the index did not have: its links keep their full worth);
* the fields of a WARC ``metadata`` record about its response (``nearDuplicateOf``,
  ``hammingDistance``, ``simhash``), which the stage writes to WARC files of its own.
"""

from __future__ import annotations

import dataclasses
import json

from crawl.config import NearDupSection
from crawl.content.neardup_index import NearAnswer
from crawl.loop.records import FoundUrl, Rescore, encode_line, url_vnode

__all__ = ["NEAR", "NearQuery", "NearVerdict", "NearVerdicts"]


@dataclasses.dataclass(frozen=True)
class NearQuery:
    """What the process stage sends about one archived page, with each of its probes."""

    url: str
    vnode: int
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
            [self.url, self.vnode, f"{self.fingerprint:016x}", self.features, self.record_id,
             self.warc_date, [list(item) for item in self.outlinks], self.outlink_cash],
            separators=(",", ":"), ensure_ascii=False,
        )

    @classmethod
    def decode(cls, text: str) -> NearQuery:
        url, vnode, fingerprint, features, record_id, warc_date, outlinks, cash = (
            json.loads(text))
        return cls(url, int(vnode), int(fingerprint, 16), int(features), record_id, warc_date,
                   [tuple(item) for item in outlinks], [float(amount) for amount in cash])


#: What the verdict stage keeps about a page it marked.
NEAR = "Y"


@dataclasses.dataclass(frozen=True)
class NearVerdict:
    """What the verdict stage does with one answer."""

    #: What to keep about the page from now on (None: nothing changes).
    state: str | None
    #: Loop lines for the crawl DB.
    lines: list[str] = dataclasses.field(default_factory=list)
    #: The page was marked now...
    near_duplicate: bool = False
    #: ...as a near-duplicate of this page, this far.
    original: str | None = None
    distance: int | None = None
    #: The WARC metadata record to write about the page's response: (its URL, WARC-Date,
    #: record id, fields), or None.
    note: tuple[str, str, str, list[tuple[str, str]]] | None = None


class NearVerdicts:
    """Marks pages from the index's answers (see the module docstring). Not thread-safe."""

    def __init__(self, section: NearDupSection, vnodes: int, producer_id: str) -> None:
        self._rescore_weight = section.outlink_weight - 1.0
        self._vnodes = vnodes
        self._producer_id = producer_id
        self._lines = 0

    def take(self, state: str | None, answer: NearAnswer) -> NearVerdict:
        """The verdict on ``answer``'s page given what is kept about it (``state``; None:
        nothing): marked now, or already (nothing to do)."""
        if state == NEAR:
            return NearVerdict(None)
        distance, _, _, original = answer.original
        if answer.late:
            url, vnode, rescore = answer.url, url_vnode(answer.url, self._vnodes), []
            warc_date, fingerprint = answer.warc_date, answer.fingerprint
        else:
            query = NearQuery.decode(answer.query)
            url, vnode, warc_date, fingerprint = (
                query.url, query.vnode, query.warc_date, query.fingerprint)
            rescore = self._rescore(query)
        lines = [encode_line(vnode, near=[(url, original, distance)], line_id=self._line_id())]
        lines += [encode_line(other, rescore=items, line_id=self._line_id())
                  for other, items in rescore]
        note = (url, warc_date, answer.record_id, [
            ("nearDuplicateOf", original),
            ("hammingDistance", str(distance)),
            ("simhash", f"{fingerprint:016x}"),
        ])
        return NearVerdict(NEAR, lines, True, original, distance, note)

    def _rescore(self, query: NearQuery) -> list[tuple[int, list[Rescore]]]:
        """The page's links, by vnode, each to count ``outlink_weight`` of its cash."""
        cash = query.outlink_cash or [None] * len(query.outlinks)
        groups: dict[int, list[Rescore]] = {}
        for (url, hops, via), amount in zip(query.outlinks, cash, strict=True):
            groups.setdefault(url_vnode(url, self._vnodes), []).append(
                (url, hops, via, self._rescore_weight, amount))
        return list(groups.items())

    def _line_id(self) -> str:
        self._lines += 1
        return f"{self._producer_id}.{self._lines}"
