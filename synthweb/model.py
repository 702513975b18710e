"""The values the synthetic web answers with: page kinds, pages with their links, HTTP answers.

:class:`synthweb.graph.SyntheticWeb` builds them; the truth (:mod:`synthweb.truth`), the
server and the tests read them.
"""

from __future__ import annotations

import dataclasses

from synthweb.compat import StrEnum

__all__ = ["HTML_KINDS", "Link", "Page", "PageKind", "Response"]


class PageKind(StrEnum):
    """What a page is; its path prefix tells it too (see the module docstring)."""

    HTML = "html"
    #: Unclosed tags, mixed attribute quoting, junk bytes (invalid UTF-8, NUL).
    BROKEN_HTML = "broken-html"
    #: ISO-8859-1, declared in the Content-Type header only.
    LATIN1_HTML = "latin1-html"
    #: windows-1251, declared in a <meta> only (the header says plain ``text/html``).
    CP1251_HTML = "cp1251-html"
    #: HTML answered after a delay drawn from ``WebConfig.slow_delay_range``.
    SLOW_HTML = "slow-html"
    TEXT = "text"
    BINARY = "binary"
    REDIRECT = "redirect"
    #: Answers 500.
    ERROR = "error"


HTML_KINDS = frozenset(
    {
        PageKind.HTML,
        PageKind.BROKEN_HTML,
        PageKind.LATIN1_HTML,
        PageKind.CP1251_HTML,
        PageKind.SLOW_HTML,
    }
)



@dataclasses.dataclass(frozen=True, slots=True)
class Link:
    """One ``<a href>`` of a page: the reference as written and the canonical URL it resolves to.

    ``url`` is None when the reference is not a crawlable ``http://`` URL. ``href=""`` and
    ``href="#top"`` resolve to the page itself. With the URL-policy profile, ``url`` is the
    page identity of the reference (:func:`synthweb.urls.page_identity`), which is the canonical
    URL for every spelling but the profile's own.
    """

    href: str
    url: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    """One page of the model: what it is and what the server answers for it."""

    url: str
    kind: PageKind
    status: int
    content_type: str
    #: The ``<a href>`` links in document order (HTML kinds only).
    links: tuple[Link, ...] = ()
    #: The Location header as written (relative or absolute), for redirects.
    location: str | None = None
    #: The canonical URL the redirect points to.
    redirect_to: str | None = None
    #: Seconds the server waits before answering.
    delay: float = 0.0
    #: Whether the body is gzip-compressed for a client that accepts gzip.
    gzip: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Response:
    """An HTTP answer, without the headers the server adds (Content-Length, Date, Connection)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    delay: float = 0.0
    #: Hostile profile: the epoch time Retry-After names (logged as ``retry_at``).
    retry_at: float | None = None
    #: Hostile profile: the fault this answer shows (logged as ``fault``); "" for none.
    fault: str = ""
