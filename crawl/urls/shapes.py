"""The shape of a URL within its host: what URLs of one template have in common.

Digit runs become ``#`` and the query keeps only its parameter names, sorted:
``/calendar/2026/12`` and ``/calendar/2027/01`` share ``/calendar/#/#``;
``/cal?date=2026-12-01&view=day`` is ``/cal?date&view``. The crawl DB budgets URLs per host
and shape (:mod:`crawl.crawldb.budgets`), so that an endless space of one shape stays bounded
by what its pages turn out to be worth.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["url_shape"]

_DIGITS = re.compile(r"[0-9]+")


def url_shape(url: str) -> str:
    """The shape of a URL within its host: digit runs as ``#``, query parameter names sorted."""
    parts = urlsplit(url)
    shape = _DIGITS.sub("#", parts.path)
    if parts.query:
        names = {_DIGITS.sub("#", item.partition("=")[0]) for item in parts.query.split("&")}
        shape += "?" + "&".join(sorted(name for name in names if name))
    return shape
