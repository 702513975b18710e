"""The per-host queue of the frontier: URL entries kept in keyed state, served in order.

Entries live in a map ``sequence number -> payload`` with the (head, tail) bounds beside it, so
that pushing and popping cost one state access each whatever the queue length (a list state
would be rewritten whole on every pop). The store is anything with ``get``/``put``/``remove``:
Flink's ``MapState`` in the job, a ``dict`` wrapper in tests.

A payload is a :class:`crawl.fetch_requests.QueueEntry` as the crawl DB sends it (a URL with
what the crawl log needs, its rank and a revisit's recrawl state), or with ``attempts`` (failed
attempts so far; see :mod:`crawl.frontier.politeness`) for a URL put back to be fetched again
after a failure that may pass.

With priority, the crawl DB hands a host only a few URLs at a time, and
:meth:`HostQueue.push_ranked` keeps that short queue best rank first (URLs put back for a retry
stay in front): the frontier serves each host's best URL first.
"""

from __future__ import annotations

from typing import Protocol

from crawl.fetch_requests import QueueEntry

__all__ = ["DictStore", "HostQueue", "MapStore"]


class MapStore(Protocol):
    """The subset of Flink's MapState the queue uses."""

    def get(self, key: int) -> str | None: ...

    def put(self, key: int, value: str) -> None: ...

    def remove(self, key: int) -> None: ...


class DictStore:
    """A MapStore over a plain dict (tests, and anything outside Flink)."""

    def __init__(self) -> None:
        self.data: dict[int, str] = {}

    def get(self, key: int) -> str | None:
        return self.data.get(key)

    def put(self, key: int, value: str) -> None:
        self.data[key] = value

    def remove(self, key: int) -> None:
        del self.data[key]


class HostQueue:
    """FIFO of one host's URL payloads over a :class:`MapStore`.

    ``head`` is the sequence number of the first entry, ``tail`` one past the last; the caller
    persists them (``bounds``) after changing the queue. Every operation is O(1) state accesses.
    """

    __slots__ = ("_entries", "head", "tail")

    def __init__(self, entries: MapStore, head: int = 0, tail: int = 0) -> None:
        if tail < head:
            raise ValueError(f"queue bounds out of order: head={head} tail={tail}")
        self._entries = entries
        self.head = head
        self.tail = tail

    def __len__(self) -> int:
        return self.tail - self.head

    @property
    def bounds(self) -> tuple[int, int]:
        """(head, tail), to be stored with the entries."""
        return self.head, self.tail

    def push(self, payload: str) -> None:
        """Append at the back. O(1)."""
        self._entries.put(self.tail, payload)
        self.tail += 1

    def push_front(self, payload: str) -> None:
        """Put back at the front (a fetch that must be retried first). O(1)."""
        self.head -= 1
        self._entries.put(self.head, payload)

    def push_ranked(self, payloads: list[str]) -> None:
        """Add entries with a rank and order the whole queue: entries put back for a retry
        first, then best rank first, ties in arrival order. O(queue length) state accesses,
        meant for the short queues of priority (a host's window of URLs)."""
        entries = []
        while (payload := self.pop()) is not None:
            entries.append(payload)
        entries += payloads
        decoded = [QueueEntry.decode(payload) for payload in entries]
        order = sorted(
            range(len(entries)), key=lambda i: (decoded[i].attempts == 0, -decoded[i].rank)
        )
        for i in order:
            self.push(entries[i])

    def peek(self) -> str | None:
        """The front entry, left in place; None when empty. O(1) but for entries popped
        already (a hole a crash left)."""
        for sequence in range(self.head, self.tail):
            payload = self._entries.get(sequence)
            if payload is not None:
                return payload
        return None

    def pop(self) -> str | None:
        """Remove and return the front entry, None when empty. O(1)."""
        while self.head < self.tail:
            payload = self._entries.get(self.head)
            if payload is not None:
                self._entries.remove(self.head)
            self.head += 1
            if payload is not None:
                return payload
        return None
