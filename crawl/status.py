"""One status vocabulary for every URL outcome, from fetch to crawl DB, crawl log and metrics.

A fetch or a rejection ends in exactly one :class:`Status`, always paired with a short
machine-readable reason (``"timeout:read"``, ``"robots:disallow"``, ``"http:404"`` ...), so a
user can count outcomes by reason and find each one in the crawl log.

"Status" here is a URL's outcome. Two other things bear the word: a stage's status file, its
figures (:class:`crawl.progress.StageStatus`), and the ``python -m job status`` command
(:mod:`job.status`).
"""

from __future__ import annotations

from crawl.compat import StrEnum

__all__ = ["SOFT_404_REASON", "Status", "crawl_log_code"]

#: The reason of a FETCHED page that is its host's not-found page (crawl/content/soft404.py).
SOFT_404_REASON = "soft-404"


class Status(StrEnum):
    """What happened to a URL. The value is what the crawl log and the loop records carry."""

    #: 2xx response received and archived.
    FETCHED = "FETCHED"
    #: 3xx response with a Location; the target re-enters the crawl as a new URL.
    REDIRECT = "REDIRECT"
    #: 4xx or 5xx response (archived; the reason carries the code).
    HTTP_ERROR = "HTTP_ERROR"
    #: No usable response: timeout, connection refused or reset, DNS, malformed response.
    FETCH_ERROR = "FETCH_ERROR"
    #: robots.txt forbids the URL for our product token (or robots.txt is unavailable: 5xx).
    ROBOTS_DENIED = "ROBOTS_DENIED"
    #: The URL was rejected before fetching (not a URL, unsupported scheme, too long ...).
    REJECTED = "REJECTED"


# Heritrix-style negative codes for outcomes without an HTTP status.
_NEGATIVE_CODES = {
    Status.FETCH_ERROR: -2,
    Status.ROBOTS_DENIED: -9998,
    Status.REJECTED: -5000,
}


def crawl_log_code(status: Status, http_status: int | None) -> int:
    """The numeric code of a crawl log line: the HTTP status when there is one, else negative."""
    if http_status:
        return http_status
    return _NEGATIVE_CODES.get(status, -1)
