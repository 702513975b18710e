"""URL admission with state: per-domain budgets (IRLBot's BEAST) and bounded URL shapes.

The crawl DB asks :class:`Admission` about every URL it sees for the first time, before the URL
goes to the frontier; a URL turned away is recorded in the crawl DB as REJECTED with its reason
(so it stays "seen" and is never asked about again) and counted.

* **URL shapes** (``trap:shape-budget``): at most ``max_urls_per_shape`` URLs per host and
  shape, the shape being the path with every run of digits replaced by ``#`` plus the sorted
  names of the query parameters (``/calendar/2026/12`` and ``/calendar/2027/01`` share
  ``/calendar/#/#``; ``/cal?date=2026-12-01&view=day`` is ``/cal?date&view``). Calendars and
  other ever-growing spaces of distinct URLs are bounded by configuration, not by luck.
* **Domain budget** (``budget:domain``, IRLBot's BEAST): a registered domain gets at most
  ``domain_base_urls + domain_urls_per_linking_domain x L`` URLs, where L is the number of
  distinct other registered domains seen linking to it (counted up to
  ``max_linking_domains``). A link farm, however many pages it has, gets little of the crawl
  until the rest of the web links to it. Seeds are always admitted (and counted), and the
  domains of seeds have no domain budget: the user chose them (``seed_domains_unbudgeted``).

Over-budget URLs are not kept for later: a domain whose budget grows afterwards gets new URLs,
not the ones turned away before (a crawl DB that hands out waiting URLs again is the continuous
crawl's work).

The counters live in a :class:`CounterStore`: a dict in tests, Flink MapState in the job (the
crawl DB partition's keyed state, so they are checkpointed with it), behind a bounded
in-memory cache. Every host of a registered domain shares one crawl DB partition (URLs are
partitioned by registered domain), so each counter is complete where it is kept.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable
from typing import Protocol
from urllib.parse import urlsplit

from crawl.urls.normalize import host_of
from crawl.urls.scope import registered_domain

__all__ = ["Admission", "CachedStore", "CounterStore", "MemoryStore", "url_shape"]

_DIGITS = re.compile(r"[0-9]+")


def url_shape(url: str) -> str:
    """The shape of a URL within its host: digit runs as ``#``, query parameter names sorted."""
    parts = urlsplit(url)
    shape = _DIGITS.sub("#", parts.path)
    if parts.query:
        names = {_DIGITS.sub("#", item.partition("=")[0]) for item in parts.query.split("&")}
        shape += "?" + "&".join(sorted(name for name in names if name))
    return shape


class CounterStore(Protocol):
    """Where admission counters are kept (string keys, integer values)."""

    def get(self, key: str) -> int | None: ...

    def put(self, key: str, value: int) -> None: ...


class MemoryStore(dict):
    """Counters in a plain dict (tests, standalone use)."""

    def put(self, key: str, value: int) -> None:
        self[key] = value


class CachedStore:
    """A write-through cache of at most ``capacity`` counters in front of a store."""

    def __init__(self, store: CounterStore, capacity: int = 100_000) -> None:
        self._store = store
        self._capacity = capacity
        self._cache: OrderedDict[str, int] = OrderedDict()

    def get(self, key: str) -> int | None:
        value = self._cache.get(key)
        if value is not None:
            self._cache.move_to_end(key)
            return value
        value = self._store.get(key)
        if value is not None:
            self._remember(key, value)
        return value

    def put(self, key: str, value: int) -> None:
        self._store.put(key, value)
        self._remember(key, value)

    def _remember(self, key: str, value: int) -> None:
        self._cache[key] = value
        self._cache.move_to_end(key)
        if len(self._cache) > self._capacity:
            self._cache.popitem(last=False)


class Admission:
    """The admission rules of one crawl DB partition (see the module docstring); 0 turns a
    rule off."""

    def __init__(
        self,
        store: CounterStore,
        *,
        max_urls_per_shape: int = 0,
        domain_base_urls: int = 0,
        domain_urls_per_linking_domain: int = 0,
        max_linking_domains: int = 1000,
        seed_domains_unbudgeted: bool = True,
    ) -> None:
        self._store = store
        self.max_urls_per_shape = max_urls_per_shape
        self.domain_base_urls = domain_base_urls
        self.domain_urls_per_linking_domain = domain_urls_per_linking_domain
        self.max_linking_domains = max_linking_domains
        self.seed_domains_unbudgeted = seed_domains_unbudgeted

    @property
    def enabled(self) -> bool:
        return bool(self.max_urls_per_shape or self.domain_base_urls)

    def saw_links(self, found: Iterable[tuple[str, str, str]]) -> None:
        """Count the distinct other domains linking to each URL's domain (every found link,
        new URL or not, may raise a domain's budget)."""
        if not self.domain_base_urls:
            return
        for url, _, via in found:
            if not via:
                continue
            target = registered_domain(host_of(url))
            source = registered_domain(host_of(via))
            if target == source:
                continue
            pair = f"L\t{target}\t{source}"
            if self._store.get(pair):
                continue
            count_key = f"N\t{target}"
            count = self._store.get(count_key) or 0
            if count >= self.max_linking_domains:
                continue
            self._store.put(pair, 1)
            self._store.put(count_key, count + 1)

    def admit(self, url: str, hops: str) -> str | None:
        """Whether a URL seen for the first time may go to the frontier: None, or the reason
        it is turned away. An admitted URL is counted against its budgets."""
        host = host_of(url)
        seed = not hops
        shape_key = None
        if self.max_urls_per_shape:
            shape_key = f"S\t{host}\t{url_shape(url)}"
            shaped = self._store.get(shape_key) or 0
            if shaped >= self.max_urls_per_shape and not seed:
                return "trap:shape-budget"
        domain_key = None
        if self.domain_base_urls:
            domain = registered_domain(host)
            domain_key = f"A\t{domain}"
            trusted_key = f"T\t{domain}"
            if seed and self.seed_domains_unbudgeted:
                self._store.put(trusted_key, 1)
            if not seed and not self._store.get(trusted_key):
                admitted = self._store.get(domain_key) or 0
                if admitted >= self.domain_budget(domain):
                    return "budget:domain"
        if shape_key is not None:
            self._store.put(shape_key, (self._store.get(shape_key) or 0) + 1)
        if domain_key is not None:
            self._store.put(domain_key, (self._store.get(domain_key) or 0) + 1)
        return None

    def domain_budget(self, domain: str) -> int:
        """URLs a registered domain may have in the crawl, as of now."""
        linking = self._store.get(f"N\t{domain}") or 0
        return self.domain_base_urls + self.domain_urls_per_linking_domain * linking
