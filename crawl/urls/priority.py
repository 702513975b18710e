"""The priority of a URL: what each discovery adds to its score, and how score and depth rank it.

A URL's score is the sum, over every time the crawl finds it, of what that discovery is worth
(the crawl DB's records add scores up when they merge: :mod:`drum.record`). What a discovery is
worth depends on where it came from:

* a **seed** (hop path ``""``): ``seed_boost``: the user chose it;
* a URL listed in a **sitemap** (last hop ``M``): ``sitemap_boost``: the site says it matters;
* a **link** (or a redirect, an embed, a directory above a page) from a page of **another
  registered domain**: ``other_domain_link``; from the **same registered domain** (the same
  host included): ``same_domain_link``.

So a page's score is, in effect, its in-degree from other domains (links within a site, which a
site's own templates repeat on every page, are worth little), as the crawl knows it when the
URL is ranked. The process stage lets one link from each other host through its cache of recent
URLs (:class:`crawl.processing.RecentUrls`), so a page linked from many hosts gathers a link
from each, not one; several pages of one other domain linking a URL each count, which is why
the domain budgets of :mod:`crawl.urls.admission` still bound link farms.

The rank the crawl DB orders URLs by is ``score - depth_penalty x depth`` (depth: hops from a
seed): among URLs with the same in-links, those nearer the seeds first. The crawl DB hands each
host's best-ranked URLs to the frontier a few at a time (``priority.host_window``), and the
frontier serves a host's queue best first.
"""

from __future__ import annotations

from collections.abc import Sequence

from crawl.config import PrioritySection
from crawl.hops import SITEMAP_LISTED
from crawl.urls.normalize import host_of
from crawl.urls.scope import registered_domain

__all__ = ["ScorePolicy", "rank"]


class ScorePolicy:
    """What each discovery adds to a URL's score (see the module docstring)."""

    def __init__(self, section: PrioritySection) -> None:
        self._seed = section.seed_boost
        self._sitemap = section.sitemap_boost
        self._other_domain = section.other_domain_link
        self._same_domain = section.same_domain_link
        self.depth_penalty = section.depth_penalty

    def score(self, url: str, hops: str, via: str) -> float:
        """What finding ``url`` by ``hops`` from ``via`` adds to its score. O(1) (the
        registered domain of a host is cached)."""
        if not hops:
            return self._seed
        if hops.endswith(SITEMAP_LISTED):
            return self._sitemap
        if not via:
            return self._same_domain
        try:
            source, target = host_of(via), host_of(url)
        except ValueError:  # not an absolute URL: no domain to compare
            return self._same_domain
        if source == target or registered_domain(source) == registered_domain(target):
            return self._same_domain
        return self._other_domain

    def scores(self, found: Sequence[tuple[str, str, str]]) -> list[float]:
        """:meth:`score` of each ``(url, hops, via)``."""
        score = self.score
        return [score(url, hops, via) for url, hops, via in found]


def rank(score, depth, depth_penalty: float):
    """The rank the crawl DB and the frontier order URLs by (higher first); numbers or NumPy
    arrays."""
    return score - depth_penalty * depth
