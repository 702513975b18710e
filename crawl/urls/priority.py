"""The priority of a URL: its cash, an on-line estimate of its importance that flows along links.

The crawl DB ranks URLs by **cash**, as in OPIC (Abiteboul, Preda and Cobena, "Adaptive on-line
page importance computation", WWW 2003): importance enters the crawl at its seeds and flows
from page to page as the crawl fetches them.

* a **seed** gets ``seed_boost``, a **sitemap** named by a robots.txt ``sitemap_boost``: the
  user chose the one, the site points to the other;
* a **fetched page** passes one share (``priority.flow: shares``, the default) or the cash it
  had when it was released (``cash``) on to the URLs it leads to, split evenly
  (:func:`link_cash`): its outlinks, its redirect's or meta refresh's target, a sitemap's
  entries and child sitemaps, the directories above it (``scope.path_ascending``). A page with
  nothing to lead to keeps its cash out of the flow;
* the crawl DB adds up what each URL receives (records sum their scores when they merge:
  :mod:`drum.record`), and a fetch spends what its URL had at its release: the outcome takes it
  back out of the record, so cash that arrived meanwhile stays for the next visit.

With ``shares`` a page's cash counts the fetched pages linking to it, each diluted by how many
links it has, and ranks a real web's pages better than ``cash`` (BENCHMARKS.md, "Shares instead
of cash"); the budgets (:mod:`crawl.crawldb.budgets`), not the rank, hold link farms and
endless spaces.

With ``cash`` a page's cash is what the pages linking to it passed on, each weighted by its
own cash and diluted by how many links it has. A cluster of pages that link each other (a link
farm, on any number of domains) gets only what flows into it from outside, spread over every
page it invents; each step into a calendar or another endless space divides what the next page
gets.
A near-duplicate's links pass on only ``neardup.outlink_weight`` of their cash (a copy says
little about what it links to): the near-duplicate stage takes the rest back.

The crawl DB hands each host's best-ranked URLs to the frontier a few at a time
(``priority.host_window``), and the frontier serves a host's queue best first; the rank of a
URL is its cash (:func:`rank`).
"""

from __future__ import annotations

import math

from crawl.config import PrioritySection
from crawl.hops import SITEMAP, SITEMAP_LISTED

__all__ = ["CASH_DIGITS", "CashLevel", "CashPolicy", "link_cash", "rank"]

#: Digits kept of an amount of cash in a loop line (relative: a float's 7 are more than enough
#: for an estimate, and the line stays short).
CASH_DIGITS = 6


class CashPolicy:
    """The cash that enters the crawl from outside the flow: seeds and sitemaps that robots.txt
    names (see the module docstring)."""

    def __init__(self, section: PrioritySection) -> None:
        self.seed_cash = section.seed_boost
        self.sitemap_cash = section.sitemap_boost

    def injected(self, hops: str) -> float | None:
        """The cash a URL reached by ``hops`` gets from outside the flow, or None when it
        gets its cash from the page that led to it."""
        if not hops:
            return self.seed_cash
        if hops == SITEMAP:  # named by a robots.txt: the robots.txt has no cash to pass on
            return self.sitemap_cash
        return None

    def legacy(self, hops: str) -> float:
        """The cash of a discovery that came without an amount (a loop line of a version
        that had none, after an upgrade): a seed's or a sitemap's, else nothing."""
        injected = self.injected(hops)
        if injected is not None:
            return injected
        return self.sitemap_cash if hops.endswith(SITEMAP_LISTED) else 0.0


class CashLevel:
    """The typical cash of the pages a crawl fetches now: a moving geometric mean over the
    last ``window`` pages or so (pages without cash left out), known after ``warmup`` pages.

    The process stage keeps one from the pages it archives (a sample of the whole crawl's,
    since it is keyed by payload digest) and sends it with its loop lines; the crawl DB defers
    new URLs whose cash is far below it (``priority.defer_below``): whatever host they are on,
    they are not worth a fetch while the crawl has pages of that level to fetch. O(1) a page.
    """

    def __init__(self, window: int = 200, warmup: int = 20) -> None:
        self._alpha = 1.0 / window
        self._warmup = warmup
        self._seen = 0
        self._log = 0.0

    def add(self, cash: float) -> None:
        if cash <= 0 or not math.isfinite(cash):
            return
        value = math.log(cash)
        self._seen += 1
        # The plain mean while warming up, then exponential.
        alpha = max(self._alpha, 1.0 / self._seen)
        self._log += alpha * (value - self._log)

    @property
    def value(self) -> float | None:
        """The level, or None before ``warmup`` pages with cash."""
        if self._seen < self._warmup:
            return None
        return float(f"{math.exp(self._log):.{CASH_DIGITS}g}")


def link_cash(cash: float, links: int) -> float:
    """What each of ``links`` URLs gets from a page that had ``cash`` (rounded to
    :data:`CASH_DIGITS` significant digits)."""
    if links <= 0 or cash <= 0:
        return 0.0
    return float(f"{cash / links:.{CASH_DIGITS}g}")


def rank(score):
    """The rank the crawl DB and the frontier order URLs by (higher first): the cash (a
    number or a NumPy array)."""
    return score
