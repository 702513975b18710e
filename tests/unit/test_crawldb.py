"""The crawl DB's URL record: a new URL is queued; fetch outcomes merge newest-wins."""

from __future__ import annotations

import pytest

from crawl.crawldb import QUEUED, RECORD_VERSION, UrlRecord, merge_done, new_record
from crawl.status import Status

T0 = 1_700_000_000_000


@pytest.mark.parametrize(("hops", "depth"), [("", 0), ("L", 1), ("LLR", 3), ("LLLLLLLLLL", 10)])
def test_new_record(hops: str, depth: int) -> None:
    assert new_record(hops, T0) == UrlRecord(
        status=QUEUED, http_status=0, reason="", depth=depth, discovered_ms=T0, fetched_ms=0,
        fetch_count=0, failure_count=0, version=RECORD_VERSION,
    )


QUEUED_RECORD = new_record("LL", T0)
FETCHED_ONCE = UrlRecord("FETCHED", 200, "http:200", 2, T0, T0 + 10, 1, 0)
FAILED_TWICE = UrlRecord("FETCH_ERROR", 0, "timeout:read", 2, T0, T0 + 20, 2, 2)

# (record before, status, http, reason, at, record after)
MERGES = [
    # a fetch is counted and dated
    (QUEUED_RECORD, Status.FETCHED, 200, "http:200", T0 + 5,
     UrlRecord("FETCHED", 200, "http:200", 2, T0, T0 + 5, 1, 0)),
    (QUEUED_RECORD, Status.REDIRECT, 301, "http:301", T0 + 5,
     UrlRecord("REDIRECT", 301, "http:301", 2, T0, T0 + 5, 1, 0)),
    # failures are fetches too, and counted as failures
    (QUEUED_RECORD, Status.FETCH_ERROR, 0, "timeout:read", T0 + 5,
     UrlRecord("FETCH_ERROR", 0, "timeout:read", 2, T0, T0 + 5, 1, 1)),
    (QUEUED_RECORD, Status.HTTP_ERROR, 503, "http:503", T0 + 5,
     UrlRecord("HTTP_ERROR", 503, "http:503", 2, T0, T0 + 5, 1, 1)),
    (FAILED_TWICE, Status.HTTP_ERROR, 500, "http:500", T0 + 30,
     UrlRecord("HTTP_ERROR", 500, "http:500", 2, T0, T0 + 30, 3, 3)),
    # a robots denial or a rejection is a decision, not a fetch
    (QUEUED_RECORD, Status.ROBOTS_DENIED, 0, "robots:disallow", T0 + 5,
     UrlRecord("ROBOTS_DENIED", 0, "robots:disallow", 2, T0, 0, 0, 0)),
    (QUEUED_RECORD, Status.REJECTED, 0, "url:too-long", T0 + 5,
     UrlRecord("REJECTED", 0, "url:too-long", 2, T0, 0, 0, 0)),
    (FETCHED_ONCE, Status.ROBOTS_DENIED, 0, "robots:unavailable:http:503", T0 + 50,
     UrlRecord("ROBOTS_DENIED", 0, "robots:unavailable:http:503", 2, T0, T0 + 10, 1, 0)),
    # the newest outcome wins, counts accumulate
    (FAILED_TWICE, Status.FETCHED, 200, "http:200", T0 + 40,
     UrlRecord("FETCHED", 200, "http:200", 2, T0, T0 + 40, 3, 2)),
    (FETCHED_ONCE, Status.FETCH_ERROR, 0, "connect:refused", T0 + 60,
     UrlRecord("FETCH_ERROR", 0, "connect:refused", 2, T0, T0 + 60, 2, 1)),
    # an outcome for a URL the DB does not know creates its record
    (None, Status.FETCHED, 200, "http:200", T0 + 5,
     UrlRecord("FETCHED", 200, "http:200", 0, T0 + 5, T0 + 5, 1, 0)),
    (None, Status.ROBOTS_DENIED, 0, "robots:disallow", T0 + 5,
     UrlRecord("ROBOTS_DENIED", 0, "robots:disallow", 0, T0 + 5, 0, 0, 0)),
    (None, Status.FETCH_ERROR, 0, "dns:unresolved", T0 + 5,
     UrlRecord("FETCH_ERROR", 0, "dns:unresolved", 0, T0 + 5, T0 + 5, 1, 1)),
]


@pytest.mark.parametrize(("before", "status", "http", "reason", "at", "after"), MERGES)
def test_merge_done(
    before: UrlRecord | None, status: Status, http: int, reason: str, at: int, after: UrlRecord
) -> None:
    assert merge_done(before, status.value, http, reason, at) == after


@pytest.mark.parametrize("status", list(Status))
def test_merge_done_keeps_identity_fields(status: Status) -> None:
    merged = merge_done(QUEUED_RECORD, status.value, 0, "r", T0 + 1)

    assert (merged.depth, merged.discovered_ms, merged.version) == (2, T0, RECORD_VERSION)
    assert merged.status == status.value


def test_merge_done_accepts_the_status_enum_itself() -> None:
    # Status is a StrEnum: callers passing the member rather than its value get the same record.
    assert merge_done(None, Status.HTTP_ERROR, 404, "http:404", T0) == merge_done(
        None, "HTTP_ERROR", 404, "http:404", T0
    )


def test_repeated_failures_count_up() -> None:
    record = QUEUED_RECORD
    for attempt in range(1, 6):
        record = merge_done(record, "FETCH_ERROR", 0, "timeout:read", T0 + attempt)

        assert (record.fetch_count, record.failure_count) == (attempt, attempt)
    assert record.fetched_ms == T0 + 5
