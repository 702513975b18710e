"""What the crawl DB hands the frontier: batches of URLs for one host, each a queue entry.

A :class:`QueueEntry` is one URL with what the crawl log needs (its discovery path and
referrer), its rank (:mod:`crawl.urls.priority`), a revisit's recrawl state
(:mod:`crawl.crawldb.recrawl`) and the failed attempts so far; stored as compact JSON in the
host's queue (:mod:`crawl.frontier.host_queue`): ``[url, hops, via]``, with
``[..., attempts, rank]`` when either is set, and ``[..., attempts, rank, recrawl]`` for a
revisit. A batch (:func:`encode_batch`) is a header line saying whether the URLs were released
by priority (``ranked``: the frontier keeps the host's queue best first) or come in the order
found (``in-order``), then one entry a line (JSON never holds a raw newline), so the frontier
stores the lines as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["IN_ORDER", "RANKED", "QueueEntry", "decode_batch", "decode_entries", "encode_batch"]

#: The header of a batch released by priority, and of one in the order the URLs were found.
RANKED = "ranked"
IN_ORDER = "in-order"


class QueueEntry(NamedTuple):
    """One URL of a host's queue: what the crawl log needs, and its failed attempts so far."""

    url: str
    hops: str
    via: str
    attempts: int = 0
    rank: float = 0.0
    #: A revisit's encoded recrawl state (None: a first fetch).
    recrawl: list | None = None

    def encode(self) -> str:
        """The payload stored in the queue (the 3-item form while there was no attempt and
        there is no rank or recrawl state)."""
        items: list = [self.url, self.hops, self.via]
        if self.attempts or self.rank or self.recrawl is not None:
            items.append(self.attempts)
        if self.rank or self.recrawl is not None:
            items.append(self.rank)
        if self.recrawl is not None:
            items.append(self.recrawl)
        return json.dumps(items, separators=(",", ":"))

    @classmethod
    def decode(cls, payload: str) -> QueueEntry:
        """The entry of a stored payload (any form)."""
        items = json.loads(payload)
        return cls(
            items[0],
            items[1],
            items[2],
            items[3] if len(items) > 3 else 0,
            items[4] if len(items) > 4 else 0.0,
            items[5] if len(items) > 5 and isinstance(items[5], list) else None,
        )


def encode_batch(entries: Iterable[QueueEntry], ranked: bool) -> str:
    """One host's batch: the header, then an entry a line."""
    return "\n".join([RANKED if ranked else IN_ORDER, *(entry.encode() for entry in entries)])


def decode_batch(message: str) -> tuple[bool, list[str]]:
    """(whether the batch is ranked, its entries' payloads as stored in a queue); ValueError
    for a message that is not a batch."""
    header, _, body = message.partition("\n")
    if header not in (RANKED, IN_ORDER):
        raise ValueError(f"not a batch of queue entries (header {header[:40]!r})")
    return header == RANKED, body.split("\n") if body else []


def decode_entries(message: str) -> list[QueueEntry]:
    """The entries of a batch, decoded."""
    return [QueueEntry.decode(payload) for payload in decode_batch(message)[1]]
