"""The shape of a URL within its host: what URLs of one template have in common.

Digit runs in the path become ``#``: ``/calendar/2026/12`` and ``/calendar/2027/01`` share
``/calendar/#/#``. A URL with a query has the shape of its parameter names alone, sorted,
whatever its path: ``/cal?date=2026-12-01&view=day`` and ``/list?view=week&date=1`` are
``?date&view``. The same parameters across a host's paths make one family: a session id or a
tracking tag added to every link of a site, the sort orders and filters of every listing. The
crawl DB budgets URLs per host and shape (:mod:`crawl.crawldb.budgets`), so that an endless
space of one shape stays bounded by what its pages turn out to be worth.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["url_shape"]

_DIGITS = re.compile(r"[0-9]+")


def url_shape(url: str) -> str:
    """The shape of a URL within its host: its path with digit runs as ``#``, or with a query
    its parameter names alone, sorted (digit runs as ``#``)."""
    parts = urlsplit(url)
    if parts.query:
        names = {_DIGITS.sub("#", item.partition("=")[0]) for item in parts.query.split("&")}
        return "?" + "&".join(sorted(name for name in names if name))
    return _DIGITS.sub("#", parts.path)
