"""Hop codes: how a URL was reached, one letter per step from a seed (Heritrix's hop path).

A URL's hops are the letters of every step from its seed (``""`` for a seed itself), the last
one the step that found it. They travel with the URL through the loop, the frontier and the
fetch, and end in the crawl log and the WARC metadata record.
"""

from __future__ import annotations

__all__ = [
    "EMBED",
    "INFERRED",
    "LINK",
    "NOT_FOUND_PROBE",
    "PREREQUISITE",
    "REDIRECT",
    "SITEMAP",
    "SITEMAP_LISTED",
    "is_not_found_probe",
    "is_prerequisite",
    "is_sitemap_hops",
    "sitemap_level",
    "way_found",
]

#: A navigation link (``<a href>``, ``<area>``, ``<link>``, a ``Link:`` header).
LINK = "L"
#: An embed: what a browser loads with the page (images, scripts, stylesheets, frames).
EMBED = "E"
#: A redirect's ``Location:`` or a meta refresh.
REDIRECT = "R"
#: A prerequisite of its host: robots.txt.
PREREQUISITE = "P"
#: A host's not-found probe: a path it cannot have, asked to tell its soft 404s
#: (:mod:`crawl.content.soft404`).
NOT_FOUND_PROBE = "N"
#: A URL inferred from another: a directory above a fetched page (``scope.path_ascending``).
INFERRED = "I"
#: A sitemap document, named by robots.txt or by a sitemap index.
SITEMAP = "S"
#: A URL a sitemap lists.
SITEMAP_LISTED = "M"


def is_prerequisite(hops: str) -> bool:
    """Whether ``hops`` reached a robots.txt (its last hop is ``P``)."""
    return hops.endswith(PREREQUISITE)


def is_not_found_probe(hops: str) -> bool:
    """Whether ``hops`` reached a host's not-found probe."""
    return hops == NOT_FOUND_PROBE


def is_sitemap_hops(hops: str) -> bool:
    """Whether a URL reached by ``hops`` is a sitemap document (its last hop but redirects
    is ``S``)."""
    return hops.rstrip(REDIRECT).endswith(SITEMAP)


def sitemap_level(hops: str) -> int:
    """How many sitemap documents deep ``hops`` is below robots.txt (1: named by it)."""
    return hops.count(SITEMAP)


#: How a URL was found, by its last hop, in words.
_WAYS = {"": "seed", LINK: "link", EMBED: "embed", REDIRECT: "redirect", SITEMAP: "sitemap",
         SITEMAP_LISTED: "sitemap entry", INFERRED: "inferred directory",
         NOT_FOUND_PROBE: "not-found probe"}


def way_found(hops: str) -> str:
    """How a URL reached by ``hops`` was found (its last hop), in words: ``seed``, ``link``,
    ``embed``, ``redirect``, ``sitemap``, ``sitemap entry`` or ``inferred directory``."""
    return _WAYS.get(hops[-1:], hops[-1:])
