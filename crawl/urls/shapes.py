"""The shape of a URL within its host: what URLs of one template have in common.

Digit runs in the path become ``#``, and consecutive segments of digits alone one ``#``
segment: ``/shop/item-17.html`` is ``/shop/item-#.html``, and a calendar's month and day views
``/calendar/2026/12/`` and ``/calendar/2026/12/05`` are both ``/calendar/#`` (a trailing slash
is no part of a shape). A URL with a query has the shape of its path's first segment followed
by ``?``, whatever the rest of its path and its parameters: a listing's filters and sort
orders in every combination (``/shop/?colour=red&sort=price``) are one shape ``/shop?``, and
a session id on every page of a section (``/posts/a-walk-3.html?visit=...``) one shape
``/posts?``. The crawl DB budgets URLs per host and shape (:mod:`crawl.crawldb.budgets`), and
counts the values a shape's URLs bring (:func:`url_values`), so that an endless space of one
shape, whose URLs recombine what it has shown, stays bounded.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["url_shape", "url_values"]

_DIGITS = re.compile(r"[0-9]+")
#: Segments of digits alone after the first (already ``#``), with their slash.
_NUMBER_SEGMENTS = re.compile(r"(?<=/#)(?:/#)+(?=/|$)")


def url_shape(url: str) -> str:
    """The shape of a URL within its host: its path with digit runs as ``#`` and consecutive
    segments of digits alone as one, without a trailing slash; with a query, its path's first
    segment so and ``?``."""
    parts = urlsplit(url)
    path = parts.path
    if parts.query:
        path = "/" + path.lstrip("/").split("/", 1)[0]
    shape = _NUMBER_SEGMENTS.sub("", _DIGITS.sub("#", path)).rstrip("/") or "/"
    return shape + "?" if parts.query else shape


def url_values(url: str) -> list[str]:
    """What varies among the URLs of a shape: the path's digit runs, each with its place
    (``1=2026``), and the query's parameters (``?colour=red``), each once."""
    parts = urlsplit(url)
    values = [f"{place}={run}" for place, run in enumerate(_DIGITS.findall(parts.path))]
    if parts.query:
        values += sorted({f"?{item}" for item in parts.query.split("&") if item})
    return values
