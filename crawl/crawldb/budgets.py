"""Budgets of a crawl DB partition: the share of the crawl each registered domain and each URL
shape of a host may take. What is over its budget is deferred, never dropped: it stays in the
crawl DB, keeps its rank, and goes out as soon as its budget grows.

* **Domain budget** (IRLBot's BEAST, ``admission.domain_*``): a registered domain gets at most
  ``domain_base_urls + domain_urls_per_linking_domain x S`` of its URLs released, S being its
  support: the distinct other registered domains seen linking to it that it does not link back
  to (counted up to ``max_linking_domains``). Domains that link each other, as link farms on
  many domains do, lend each other no support: a farm gets what the rest of the web gives it.
  Every host of a domain draws on the one budget. The domain is held besides to what its
  pages showed (``admission.domain_trial_urls`` plus ``domain_urls_per_good_page`` for each of
  its pages that proved good, as below: neither a copy nor a page that repeats a few words),
  and gets no more than ``trial_pages`` URLs (and one for each that gave no page: a redirect,
  a dead link) until one of its pages proves good: a link farm's keyword pages prove nothing,
  so however many domains link it, it stays at its first few pages. The domains of seeds
  have no budget (``seed_domains_unbudgeted``): the user chose them.
* **Shape budget** (``admission.shape_*``): a host's URLs of one shape (the path with digits
  as ``#``, runs of number segments as one, and ``?`` for any query:
  :func:`crawl.urls.shapes.url_shape`) get ``shape_base_urls`` released, plus
  ``shape_urls_per_good_page`` for each page of that shape that proved good (a 2xx answer
  that was neither an exact duplicate of another URL's page nor a near-duplicate, short pages
  included, by their exact words, nor a page that repeats a few words over and over:
  ``thin:repeated-words``), but no more than the shape's new URLs that were novel:
  that brought a value the shape had not shown (:func:`crawl.urls.shapes.url_values`: a
  number of its path in its place, a parameter of its query). A shop's thousands of
  ``/item-#.html`` pages, each a new number and a page of its own, keep their shape growing;
  a calendar's days and a listing's filter combinations, pages of their own but combinations
  of the dates and filters already shown, stop. A shape of URLs with a query whose first
  ``trial_pages`` pages fetched prove nothing (a session id's copies) gets no more than those.

The crawl DB's releases ask :meth:`Budgets.groups`, :meth:`Budgets.group_limits` and
:meth:`Budgets.shape_limits` (the DRUM's :class:`drum.ReleaseLimits`), and tell
:meth:`Budgets.released` what went. What the limits held back is counted by the release as
deferred, by reason (``budget:domain``, ``budget:shape``).

The counters live in a :class:`CounterStore` (string keys, integer values): a dict in tests,
Flink MapState in the job (the partition's keyed state, checkpointed with it), behind a bounded
in-memory cache. They are a few per domain, host and shape, and one per value shown by a
shape whose URLs have a query or several numbers (at most one per such URL). Every host of a
registered domain is in one crawl DB partition (URLs are partitioned by registered domain), so
each counter is complete where it is kept; the links a domain's pages make arrive in its own
partition with their outcomes, which is what tells a reciprocal link from support.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Protocol

import numpy as np

from crawl.config import AdmissionSection
from crawl.status import SOFT_404_REASON, Status
from crawl.urls.normalize import host_of
from crawl.urls.scope import registered_domain
from crawl.urls.shapes import url_shape, url_values
from drum import host_key

__all__ = ["Budgets", "CachedStore", "CounterStore", "MemoryStore", "shape_key"]

#: A limit that never binds.
UNLIMITED = 1 << 62

# Counter keys (the MapState's), by their first letter:
#   L <domain> <linking domain>   1: counted as support, 2: reciprocal (not counted)
#   O <domain> <linked domain>    1: the domain links there
#   N <domain hash>               support (distinct non-reciprocal linking domains)
#   T <domain hash>               1: a seed's domain (no budget)
#   R <domain hash>               URLs of the domain released
#   Y <domain hash>               pages of the domain that proved good
#   X <domain hash>               outcomes of the domain that were no page (no 2xx)
#   H <host hash>                 the host's domain hash
#   P <host hash> <shape hash>    URLs of the shape released
#   A <host hash> <shape hash>    outcomes of a path's shape (any answer)
#   F <host hash> <shape hash>    pages of a query's shape fetched (2xx)
#   G <host hash> <shape hash>    pages of the shape that proved good
#   V <host hash> <shape hash>    new URLs of the shape that were novel
#   W <value hash> <host hash> <shape hash>   1: a value the shape has shown


def shape_key(url: str) -> int:
    """The 32-bit hash of a URL's shape (:func:`crawl.urls.shapes.url_shape`)."""
    return host_key(url_shape(url))


class CounterStore(Protocol):
    """Where budget counters are kept (string keys, integer values)."""

    def get(self, key: str) -> int | None: ...

    def put(self, key: str, value: int) -> None: ...


class MemoryStore(dict):
    """Counters in a plain dict (tests, standalone use)."""

    def put(self, key: str, value: int) -> None:
        self[key] = value


class CachedStore:
    """A write-back cache of at most ``capacity`` counters in front of a store, absent ones
    included (most keys a budget looks up are not there yet: a shape without a good page, a
    pair of domains that never linked). :meth:`flush` writes the counters changed since the
    last flush; the owner calls it before anything else may read the store (the crawl DB: at
    the end of each call, before a checkpoint can come), so that a counter changed many times
    in one call is written once. This cache must be the store's only writer."""

    def __init__(self, store: CounterStore, capacity: int = 100_000) -> None:
        self._store = store
        self._capacity = capacity
        self._cache: OrderedDict[str, int | None] = OrderedDict()
        self._dirty: set[str] = set()

    def get(self, key: str) -> int | None:
        cache = self._cache
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        value = self._store.get(key)
        self._remember(key, value)
        return value

    def put(self, key: str, value: int) -> None:
        self._remember(key, value)
        self._dirty.add(key)

    def flush(self) -> None:
        """Write the counters changed since the last flush to the store."""
        for key in self._dirty:
            value = self._cache.get(key)
            if value is not None:
                self._store.put(key, value)
        self._dirty.clear()

    def _remember(self, key: str, value: int | None) -> None:
        cache = self._cache
        cache[key] = value
        cache.move_to_end(key)
        if len(cache) > self._capacity:
            evicted, old = cache.popitem(last=False)
            if evicted in self._dirty:  # (written now, or its change would be lost)
                self._dirty.discard(evicted)
                if old is not None:
                    self._store.put(evicted, old)


class Budgets:
    """The budgets of one crawl DB partition (see the module docstring). Costs are a few
    counter reads and writes per link, outcome or released URL (cached)."""

    def __init__(self, store: CounterStore, section: AdmissionSection) -> None:
        self._store = store
        self.section = section
        #: New URLs ranked below this are held back (the crawl DB sets it: budget:importance).
        self.min_rank = float("-inf")
        self.rank_edges = None
        #: Domain budgets by support (BEAST), by the pages a domain showed, either.
        self.support = section.domain_base_urls > 0
        self.trial = section.domain_trial_urls > 0
        self.domains = self.support or self.trial
        self.shapes = section.shape_base_urls > 0

    @property
    def enabled(self) -> bool:
        return self.domains or self.shapes

    def flush(self) -> None:
        """Write what the store holds back (a :class:`CachedStore`) to where it keeps it."""
        flush = getattr(self._store, "flush", None)
        if flush is not None:
            flush()

    def _add(self, key: str, amount: int = 1) -> int:
        value = max(0, (self._store.get(key) or 0) + amount)
        self._store.put(key, value)
        return value

    # -- what the crawl DB sees

    def saw_found(self, found: Iterable[tuple[str, str, str]]) -> None:
        """Note where found URLs are: each host's domain, the seeds' domains, and the links
        from other domains (support, unless the linked domain links back)."""
        store = self._store
        for url, hops, via in found:
            host = host_of(url)
            domain = registered_domain(host)
            host_hash = host_key(host)
            if store.get(f"H\t{host_hash}") is None:
                store.put(f"H\t{host_hash}", host_key(domain))
            if not hops:
                if self.section.seed_domains_unbudgeted:
                    store.put(f"T\t{host_key(domain)}", 1)
                continue
            if not via or not self.support:
                continue
            source = registered_domain(host_of(via))
            if source == domain:
                continue
            pair = f"L\t{domain}\t{source}"
            if store.get(pair):
                continue
            if store.get(f"O\t{domain}\t{source}"):
                store.put(pair, 2)  # it links back: no support
                continue
            store.put(pair, 1)
            count_key = f"N\t{host_key(domain)}"
            if (store.get(count_key) or 0) < self.section.max_linking_domains:
                self._add(count_key)

    def saw_outlinks(self, domain: str, targets: Iterable[str]) -> None:
        """Note the other domains a page of ``domain`` links to: support they gave it is
        taken back (they link each other)."""
        if not self.support:
            return
        store = self._store
        for target in targets:
            if target == domain or store.get(f"O\t{domain}\t{target}"):
                continue
            store.put(f"O\t{domain}\t{target}", 1)
            pair = f"L\t{domain}\t{target}"
            if store.get(pair) == 1:
                store.put(pair, 2)
                self._add(f"N\t{host_key(domain)}", -1)

    def saw_outcome(self, url: str, status: str, http_status: int, reason: str) -> None:
        """A fetch outcome: a good page raises its shape's and its domain's budgets; a soft
        404 counts as no page."""
        host = host_of(url)
        # A soft 404 (crawl/content/soft404.py) is a dead link that answered with a page.
        page = (status == Status.FETCHED.value and 200 <= http_status < 300
                and reason != SOFT_404_REASON)
        if self.shapes:
            # A path's URL lets the next one go whatever it answered (a site's own short or
            # alike pages, its dead links); a query's pages are counted for its trial.
            if "?" not in url:
                self._add(f"A\t{host_key(host)}\t{shape_key(url)}")
            elif page:
                self._add(f"F\t{host_key(host)}\t{shape_key(url)}")
        if not page:
            if self.trial:  # (no page: a redirect, an error; the domain's trial goes on)
                self._add(f"X\t{host_key(registered_domain(host))}")
            return
        if not reason.startswith(("duplicate", "thin")):
            self._count_good(url, 1)

    def saw_near_duplicate(self, url: str) -> None:
        """A page found a near-duplicate: it was not good after all."""
        self._count_good(url, -1)

    def _count_good(self, url: str, amount: int) -> None:
        host = host_of(url)
        if self.shapes:
            self._add(f"G\t{host_key(host)}\t{shape_key(url)}", amount)
        if self.trial:
            self._add(f"Y\t{host_key(registered_domain(host))}", amount)

    def saw_new(self, url: str) -> None:
        """A URL the crawl DB did not know: count it for its shape if it was novel."""
        if not self.shapes:
            return
        host, shape = host_key(host_of(url)), shape_key(url)
        values = url_values(url)
        # A new URL of one number, or none, is novel as it is new (its shape's other URLs
        # have as many numbers): only queries and runs of numbers need what was shown.
        if len(values) > 1 or (values and values[-1].startswith("?")):
            novel = False
            for value in values:
                key = f"W\t{host_key(value)}\t{host}\t{shape}"
                if not self._store.get(key):
                    self._store.put(key, 1)
                    novel = True
            if not novel:
                return
        self._add(f"V\t{host}\t{shape}")

    def released(self, hosts: np.ndarray, shapes: np.ndarray) -> None:
        """Count new URLs released (the host and shape hashes of their records)."""
        store = self._store
        for host, shape in zip(hosts.tolist(), shapes.tolist(), strict=True):
            if self.domains:
                group = store.get(f"H\t{host}")
                if group is not None:
                    self._add(f"R\t{group}")
            if self.shapes and shape:
                self._add(f"P\t{host}\t{shape}")

    # -- drum.ReleaseLimits

    def groups(self, hosts: np.ndarray) -> np.ndarray:
        """The domain hash of each host hash (-1: unknown, then unlimited)."""
        groups = [self._store.get(f"H\t{host}") for host in hosts.tolist()]
        return np.array([-1 if group is None else group for group in groups], dtype=np.int64)

    def group_limits(self, groups: np.ndarray) -> np.ndarray:
        """How many more URLs each domain may have released now."""
        return np.array([self.domain_room(group) for group in groups.tolist()], dtype=np.int64)

    def shape_limits(self, hosts: np.ndarray, shapes: np.ndarray) -> np.ndarray:
        """How many more URLs each host's shape may have released now."""
        return np.array([self.shape_room(host, shape) for host, shape
                         in zip(hosts.tolist(), shapes.tolist(), strict=True)], dtype=np.int64)

    def domain_budget(self, group: int) -> int:
        """URLs the domain of this hash may have released, as of now."""
        store, section = self._store, self.section
        if not self.domains or group < 0 or store.get(f"T\t{group}"):
            return UNLIMITED
        budget = UNLIMITED
        if self.support:
            support = store.get(f"N\t{group}") or 0
            budget = section.domain_base_urls + section.domain_urls_per_linking_domain * support
        if self.trial:
            good = store.get(f"Y\t{group}") or 0
            budget = min(budget, section.domain_trial_urls
                         + int(section.domain_urls_per_good_page * good))
            if good <= 0 and section.trial_pages:
                # Until a page proves good: trial_pages, and one more for each URL that gave
                # no page (a redirect to follow, a dead link), as far as the trial goes.
                answered = store.get(f"X\t{group}") or 0
                budget = min(budget, section.trial_pages + answered)
        return budget

    def domain_room(self, group: int) -> int:
        budget = self.domain_budget(group)
        if budget >= UNLIMITED:
            return UNLIMITED
        return max(0, budget - (self._store.get(f"R\t{group}") or 0))

    def shape_budget(self, host: int, shape: int) -> int:
        """URLs of a host's shape (hashes) that may be released, as of now."""
        if not self.shapes or not shape:
            return UNLIMITED
        section, store = self.section, self._store
        good = store.get(f"G\t{host}\t{shape}") or 0
        base = section.shape_base_urls
        if good <= 0 and section.trial_pages:
            fetched = store.get(f"F\t{host}\t{shape}") or 0
            if fetched >= section.trial_pages:
                return min(base, section.trial_pages)
        novel = store.get(f"V\t{host}\t{shape}") or 0
        answered = store.get(f"A\t{host}\t{shape}") or 0
        if answered:  # a path's shape: each answer lets one more go, a good page one besides
            extra = max(section.shape_urls_per_good_page - 1, 0.0) * max(good, 0)
            return base + min(novel, answered + int(extra))
        return base + min(novel, int(section.shape_urls_per_good_page * good))

    def shape_room(self, host: int, shape: int) -> int:
        budget = self.shape_budget(host, shape)
        if budget >= UNLIMITED:
            return UNLIMITED
        return max(0, budget - (self._store.get(f"P\t{host}\t{shape}") or 0))
