"""The records that cross stage boundaries: what a fetch produced, as plain data.

A :class:`FetchResult` is built by the fetcher and consumed by the processing stage (parsing,
WARC writing, crawl log). It holds the HTTP exchange as it went over the wire, reconstructed
from the client's parsed view (request line and headers as sent, status line and headers as
received, body bytes as received, possibly truncated).
"""

from __future__ import annotations

import dataclasses

from crawl.status import Status

__all__ = ["FetchResult"]

Headers = list[tuple[str, str]]


@dataclasses.dataclass(slots=True)
class FetchResult:
    """The outcome of one fetch attempt of one URL.

    ``request_headers`` / ``response_headers`` keep order and repeats. ``body`` is the payload as
    received (content-encoding already removed by the client), at most the configured maximum
    size; ``truncated`` names why it was cut (``"length"`` or ``"time"``), empty if complete.
    ``http_status`` is 0 when no response was received (then ``status`` is FETCH_ERROR or
    ROBOTS_DENIED and ``reason`` says why).
    """

    url: str
    status: Status
    reason: str
    http_status: int = 0
    http_reason: str = ""
    http_version: str = "1.1"
    method: str = "GET"
    request_headers: Headers = dataclasses.field(default_factory=list)
    response_headers: Headers = dataclasses.field(default_factory=list)
    body: bytes = b""
    truncated: str = ""
    ip_address: str = ""
    #: Wall-clock time the request started, milliseconds since the epoch.
    started_ms: int = 0
    #: Time from request start to the end of the body, milliseconds.
    duration_ms: int = 0
    #: How the URL was reached: Heritrix hop path ("" for a seed, "L" link, "R" redirect ...).
    hops: str = ""
    #: The URL whose page linked here (or redirected here); "" for a seed.
    via: str = ""
    #: A revisit's recrawl state as the crawl DB handed it out (the encoded
    #: :class:`crawl.crawldb.recrawl.RecrawlState`; None for a first fetch or without recrawl).
    recrawl: list | None = None
    #: The URL's cash when the crawl DB released it (:mod:`crawl.urls.priority`): what the page
    #: passes on to the URLs it leads to (0 without priority).
    cash: float = 0.0
    #: The encoded print of the host's not-found page when the host answers paths it cannot
    #: have with 200 (:mod:`crawl.content.soft404`), for the process stage to tell a soft 404;
    #: "" otherwise.
    not_found: str = ""

    def header(self, name: str) -> str | None:
        """The first response header called ``name`` (case-insensitive), or None."""
        lower = name.lower()
        for key, value in self.response_headers:
            if key.lower() == lower:
                return value
        return None

    @property
    def content_type(self) -> str:
        """The response's media type without parameters, lower case ("" when absent)."""
        value = self.header("Content-Type") or ""
        return value.split(";", 1)[0].strip().lower()
