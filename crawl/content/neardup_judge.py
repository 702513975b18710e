"""The near-duplicate verdicts, without Flink: gather the index's answers about each archived
page, judge it, and tell the crawl DB.

The process stage, which parses pages in parallel, sends a page's probes to the index stage
(:mod:`crawl.content.neardup_index`; the first probe carries a small :class:`NearQuery`: the
page's own outcome and the links it sent on); the index answers each probe; the verdict stage,
keyed by the page's WARC record id, keeps the answers come so far in keyed state
(:class:`NearVerdicts`: a pending verdict) until it has one per probe, then judges the page
against the best of them and keeps only what it decided ("N": no near-duplicate, "Y": one),
for late answers (:mod:`crawl.content.neardup_index`). Each verdict is:

* the page's loop line for the crawl DB: its outcome (held back by the process stage until
  the verdict, so that both reach the crawl DB record in one merge), and for a near-duplicate
  a mark (the record's ``FLAG_NEAR_DUPLICATE``, counted as ``urls.near_duplicate``);
* for a near-duplicate, ``rescore`` entries for the links it sent: each counts
  ``neardup.outlink_weight`` of a link (a copy of a page says little about what it links to);
* for a near-duplicate, the fields of a WARC ``metadata`` record about its response
  (``nearDuplicateOf``, ``hammingDistance``, ``simhash``), which the stage writes to WARC files
  of its own.

A late answer about a page judged no near-duplicate marks it then: a line with the mark alone
and the note (its links, sent at their full worth, are not rescored: the query is gone).
"""

from __future__ import annotations

import dataclasses
import json

from crawl.config import NearDupSection
from crawl.content.neardup_index import NearAnswer
from crawl.loop.records import DoneEvent, FoundUrl, Rescore, encode_line, url_vnode

__all__ = ["NEAR", "NOT_NEAR", "NearQuery", "NearVerdict", "NearVerdicts"]


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


#: What the verdict stage keeps about a page once judged: a near-duplicate, or not.
NEAR = "Y"
NOT_NEAR = "N"
_PENDING = "P"


@dataclasses.dataclass(frozen=True)
class NearVerdict:
    """What the verdict stage does with one answer."""

    #: What to keep about the page from now on (None: nothing changes).
    state: str | None
    #: Loop lines for the crawl DB.
    lines: list[str] = dataclasses.field(default_factory=list)
    #: The page was judged now (its last answer came).
    judged: bool = False
    #: The page was found a near-duplicate now (judged, or by a late answer)...
    near_duplicate: bool = False
    #: ...of this page, this far.
    original: str | None = None
    distance: int | None = None
    #: The WARC metadata record to write about the page's response: (its URL, WARC-Date,
    #: record id, fields), or None.
    note: tuple[str, str, str, list[tuple[str, str]]] | None = None
    #: A late answer came for a page already judged a near-duplicate, or no longer known.
    late_ignored: bool = False


class NearVerdicts:
    """Judges pages from the index's answers (see the module docstring). Not thread-safe."""

    def __init__(self, section: NearDupSection, vnodes: int, producer_id: str) -> None:
        self._rescore_weight = section.outlink_weight - 1.0
        self._vnodes = vnodes
        self._producer_id = producer_id
        self._lines = 0

    def take(self, state: str | None, answer: NearAnswer) -> NearVerdict:
        """The verdict on ``answer``'s page given what is kept about it (``state``; None:
        nothing)."""
        if answer.late:
            return self._late(state, answer)
        received, best, query, probes = 0, None, "", answer.probes
        if state is not None and state.startswith(_PENDING):
            received, best, query, probes = json.loads(state[1:])
            best = tuple(best) if best is not None else None
        elif state is not None:  # judged already: an answer of a replayed probe
            return NearVerdict(None, late_ignored=True)
        received += 1
        best = _better(best, answer.original)
        query = query or answer.query
        if received < probes or not query:
            return NearVerdict(_PENDING + json.dumps([received, best, query, probes],
                                                     separators=(",", ":")))
        return self._judge(NearQuery.decode(query), best)

    def _judge(self, query: NearQuery, best: tuple | None) -> NearVerdict:
        if best is None:
            line = encode_line(query.vnode, done=[query.done], line_id=self._line_id())
            return NearVerdict(NOT_NEAR, [line], judged=True)
        distance, _, _, original = best
        lines = [encode_line(query.vnode, done=[query.done],
                             near=[(query.url, original, distance)], line_id=self._line_id())]
        cash = query.outlink_cash or [None] * len(query.outlinks)
        groups: dict[int, list[Rescore]] = {}
        for (url, hops, via), amount in zip(query.outlinks, cash, strict=True):
            groups.setdefault(url_vnode(url, self._vnodes), []).append(
                (url, hops, via, self._rescore_weight, amount))
        for vnode, rescore in groups.items():
            lines.append(encode_line(vnode, rescore=rescore, line_id=self._line_id()))
        note = (query.url, query.warc_date, query.record_id,
                _note_fields(original, distance, query.fingerprint))
        return NearVerdict(NEAR, lines, True, True, original, distance, note)

    def _late(self, state: str | None, answer: NearAnswer) -> NearVerdict:
        if answer.original is None:
            return NearVerdict(None)
        if state is not None and state.startswith(_PENDING):
            received, best, query, probes = json.loads(state[1:])
            best = _better(tuple(best) if best is not None else None, answer.original)
            return NearVerdict(_PENDING + json.dumps([received, best, query, probes],
                                                     separators=(",", ":")))
        if state != NOT_NEAR:
            return NearVerdict(None, late_ignored=True)
        distance, _, _, original = answer.original
        line = encode_line(url_vnode(answer.url, self._vnodes),
                           near=[(answer.url, original, distance)], line_id=self._line_id())
        note = (answer.url, answer.warc_date, answer.record_id,
                _note_fields(original, distance, answer.fingerprint))
        return NearVerdict(NEAR, [line], False, True, original, distance, note)

    def _line_id(self) -> str:
        self._lines += 1
        return f"{self._producer_id}.{self._lines}"


def _better(best: tuple | None, other: tuple | None) -> tuple | None:
    """The nearer, then earlier, of two originals (either may be None)."""
    if other is None:
        return best
    other = tuple(other)
    return other if best is None or other < best else best


def _note_fields(original: str, distance: int, fingerprint: int) -> list[tuple[str, str]]:
    return [
        ("nearDuplicateOf", original),
        ("hammingDistance", str(distance)),
        ("simhash", f"{fingerprint:016x}"),
    ]
