"""Ground truth: what a correct, polite crawler of the synthetic web must and must not fetch.

The crawler modelled here starts from the seeds, follows every ``<a href>`` of every 200
``text/html`` page, treats the target of a redirect as a new URL (the 3xx itself is a fetch), and
obeys robots.txt under RFC 9309 for its product token, fetching a host's robots.txt before
anything else on it. It never fetches a URL twice. The result is computed from the model's link
lists (:attr:`synthweb.graph.Page.links`), not by parsing what the server sends.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from synthweb.urls import canonical_url, split_url

if TYPE_CHECKING:
    from synthweb.graph import SyntheticWeb

__all__ = ["ExpectedCrawl", "expected_crawl"]

DEFAULT_AGENT_TOKEN = "pyflink-crawler"


@dataclasses.dataclass(frozen=True)
class ExpectedCrawl:
    """What a correct crawl from ``seeds`` as ``agent_token`` does. All URLs are canonical.

    The mappings are plain dicts; treat them as read-only.
    """

    agent_token: str
    seeds: tuple[str, ...]
    #: URL -> HTTP status: every URL the crawler must request, exactly once (robots.txt apart).
    fetch: Mapping[str, int]
    #: URLs the crawler discovers but must never request: disallowed by robots.txt for its
    #: token, or on a host whose robots.txt answers 5xx (including hosts off the web: 502).
    never: frozenset[str]
    #: host -> status of its robots.txt, for every host the crawler must ask (at least once;
    #: a crawler may ask a 5xx host again later).
    robots: Mapping[str, int]
    #: host -> Crawl-delay in seconds that applies to the token (hosts without one are absent).
    crawl_delays: Mapping[str, float]
    #: redirect URL -> canonical target (each target is in ``fetch`` or ``never``).
    redirects: Mapping[str, str]
    #: URL -> seconds the server waits before answering it.
    slow: Mapping[str, float]

    def robots_url(self, host: str) -> str:
        """The robots.txt URL of ``host``."""
        return f"http://{host}/robots.txt"

    @property
    def hosts(self) -> frozenset[str]:
        """Every host the crawler contacts (its robots.txt at least)."""
        return frozenset(self.robots)

    def urls_of(self, host: str) -> dict[str, int]:
        """The URLs of ``host`` to fetch, with their status."""
        return {url: status for url, status in self.fetch.items() if split_url(url)[0] == host}


def expected_crawl(
    web: SyntheticWeb, seeds: Iterable[str], agent_token: str = DEFAULT_AGENT_TOKEN
) -> ExpectedCrawl:
    """Run the model crawler over ``web`` from ``seeds``: a breadth-first walk of the link graph.

    Seeds are canonicalised first; those that are not crawlable URLs are ignored. Cost: one visit
    per reachable page and one step per link, with no I/O.
    """
    seed_urls = tuple(dict.fromkeys(u for u in (canonical_url(s) for s in seeds) if u))
    fetch: dict[str, int] = {}
    never: set[str] = set()
    robots: dict[str, int] = {}
    delays: dict[str, float] = {}
    redirects: dict[str, str] = {}
    slow: dict[str, float] = {}
    seen = set(seed_urls)
    queue = deque(seed_urls)

    def discover(url: str | None) -> None:
        if url and url not in seen:
            seen.add(url)
            queue.append(url)

    while queue:
        url = queue.popleft()
        host, path = split_url(url)
        rules = web.robots_rules(host)
        if host not in robots:
            robots[host] = rules.status
            delay = rules.crawl_delay(agent_token)
            if delay is not None:
                delays[host] = delay
        if path == "/robots.txt":
            continue
        if not rules.allowed(path, agent_token):
            never.add(url)
            continue
        fetch[url] = web.status(url)
        page = web.page(url)
        if page is None:
            continue
        if page.delay:
            slow[url] = page.delay
        if page.redirect_to:
            redirects[url] = page.redirect_to
            discover(page.redirect_to)
        elif page.status == 200 and page.content_type.lower().startswith("text/html"):
            for link in page.links:
                discover(link.url)
    return ExpectedCrawl(
        agent_token=agent_token,
        seeds=seed_urls,
        fetch=fetch,
        never=frozenset(never),
        robots=robots,
        crawl_delays=delays,
        redirects=redirects,
        slow=slow,
    )
