"""The crawl DB's record of a URL and its merge rules (invariants 1 and 2 of the design).

Every discovered URL has exactly one :class:`UrlRecord` in the crawl DB of its vnode. A URL
seen for the first time is QUEUED and sent to the frontier once; seeing it again changes
nothing (the URL-seen test). A fetch outcome replaces the status (newest wins) and counts the
attempt. The record is stored in Flink state as a row of primitives (see
``operators/crawl_db.py``), with a layout version so that a savepoint survives a change.
"""

from __future__ import annotations

from typing import NamedTuple

from crawl.status import Status

__all__ = ["QUEUED", "RECORD_VERSION", "UrlRecord", "merge_done", "new_record"]

#: Status of a URL handed to the frontier and not fetched yet (crawl DB only).
QUEUED = "QUEUED"

RECORD_VERSION = 1

_FAILURES = frozenset({Status.FETCH_ERROR.value, Status.HTTP_ERROR.value})


class UrlRecord(NamedTuple):
    """What the crawl DB knows of one URL."""

    status: str
    http_status: int
    reason: str
    depth: int
    discovered_ms: int
    fetched_ms: int
    fetch_count: int
    failure_count: int
    version: int = RECORD_VERSION


def new_record(hops: str, now_ms: int) -> UrlRecord:
    """The record of a URL seen for the first time: queued for fetching."""
    return UrlRecord(QUEUED, 0, "", len(hops), now_ms, 0, 0, 0)


def merge_done(
    record: UrlRecord | None, status: str, http_status: int, reason: str, at_ms: int
) -> UrlRecord:
    """Apply a fetch outcome to a URL's record (the newest outcome wins; attempts counted).

    "Newest" is by outcome time: an outcome older than the one recorded (a replay arriving
    late) is counted as an attempt but does not replace the status. ROBOTS_DENIED and REJECTED
    are decisions, not fetch attempts: they do not count as fetches.
    """
    if record is None:
        record = UrlRecord(QUEUED, 0, "", 0, at_ms, 0, 0, 0)
    attempted = status not in (Status.ROBOTS_DENIED.value, Status.REJECTED.value)
    if attempted and record.fetch_count and at_ms < record.fetched_ms:
        return record._replace(
            fetch_count=record.fetch_count + 1,
            failure_count=record.failure_count + (1 if status in _FAILURES else 0),
        )
    return record._replace(
        status=status,
        http_status=http_status,
        reason=reason,
        fetched_ms=at_ms if attempted else record.fetched_ms,
        fetch_count=record.fetch_count + (1 if attempted else 0),
        failure_count=record.failure_count + (1 if status in _FAILURES else 0),
    )
