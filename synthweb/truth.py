"""Ground truth: what a correct, polite crawler of the synthetic web must and must not fetch.

The crawler modelled here starts from the seeds, follows every ``<a href>`` of every 200
``text/html`` page, treats the target of a redirect as a new URL (the 3xx itself is a fetch), and
obeys robots.txt under RFC 9309 for its product token, fetching a host's robots.txt before
anything else on it. It never fetches a URL twice. The result is computed from the model's link
lists (:attr:`synthweb.model.Page.links`), not by parsing what the server sends.

With the URL-policy profile on (:mod:`synthweb.policy`) the modelled crawler also has a URL
policy: it normalises every link to its page identity (:func:`synthweb.urls.page_identity`:
dot segments, percent-encoding, session ids), so it fetches each page in one spelling; and it
does not follow links into the trap areas or the link farm. ``fetch`` stays "what a correct
crawler must fetch exactly once" and holds neither; :class:`PolicyTruth` (``policy``) names the
trap and farm URLs the crawl reaches, which a crawler may fetch up to a bound of its own.

With the hostile profile on (:mod:`synthweb.hostile`) the modelled crawler is hardened: it never
requests a private address (those URLs are in ``never``), it retries a 429/503 with Retry-After
once, after the time told, it gives up on a failing answer without retrying it, and it treats a
robots.txt that never answers as "unreachable" (complete disallow, RFC 9309 section 2.3.1.4),
one redirected five times or fewer as the target's rules, one redirected more than five times
as "unavailable" (allow all) and only the first 500 KiB of a robots.txt as its rules.
``fetch`` holds the hostile URLs that answer normally (home pages, plain pages, the redirect
loop); :class:`HostileTruth` (``hostile``) holds the others.

With the sitemap profile on (:mod:`synthweb.sitemaps`, whose docstring states the rules) the
modelled crawler also reads the ``Sitemap:`` lines of every 2xx robots.txt it fetches and the
sitemaps they lead to. Sitemap documents and the pages they list are in ``fetch`` like pages;
what the rules refuse (listed URLs of other hosts, sitemaps nested too deep and what only they
list, sitemaps robots.txt disallows) is in ``never``. :class:`SitemapTruth` (``sitemaps``)
names them, and the orphans: pages only sitemaps lead to.

With the multi-domain profile on (:mod:`synthweb.domains`) the modelled crawler follows real
pages only: it never follows a link into junk (an endless space, a farm page, a soft 404), so
``fetch`` holds the real pages reachable from the seeds through real pages (robots.txt obeyed),
the redirects and dead links on the way. A real page reachable only through junk (a past event
only the calendar links) is not in it. :class:`DomainTruth` (``domains``) names the reachable
real pages, how well linked each is, and where the crawl meets junk.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from synthweb import hostile as hostile_web
from synthweb import policy as url_policy
from synthweb import sitemaps as sitemap_web
from synthweb.urls import canonical_url, page_identity, split_url

if TYPE_CHECKING:
    from synthweb.domains import UrlKind
    from synthweb.graph import SyntheticWeb

__all__ = [
    "DomainTruth", "ExpectedCrawl", "HostileTruth", "PolicyTruth", "SitemapTruth",
    "expected_crawl",
]

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
    #: The URL-policy profile's part of the truth; None when the profile is off.
    policy: PolicyTruth | None = None
    #: The hostile profile's part of the truth; None when the profile is off.
    hostile: HostileTruth | None = None
    #: The sitemap profile's part of the truth; None when the profile is off.
    sitemaps: SitemapTruth | None = None
    #: The multi-domain profile's part of the truth; None when the profile is off.
    domains: DomainTruth | None = None

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


@dataclasses.dataclass(frozen=True)
class PolicyTruth:
    """The ground truth of the URL-policy profile (see the module docstring). URLs are page
    identities; the mappings are plain dicts, treat them as read-only.

    Trap and farm URLs are "may fetch, up to a bound": none is in ``fetch`` or ``never``, and
    :func:`synthweb.audit.audit_log` does not require or refuse them (it still flags a URL
    requested twice); :func:`synthweb.audit.audit_policy` counts them.
    """

    #: Whether links come in several spellings (``WebConfig.url_variant_share`` > 0).
    variants: bool
    #: Trap URLs linked from the pages in ``fetch`` (or seeds): where a crawl enters the traps.
    trap_entries: frozenset[str]
    #: Farm URLs linked from the pages in ``fetch`` (or seeds): where a crawl enters the farm.
    farm_entries: frozenset[str]
    #: host -> robots.txt status, for the trap and farm hosts the crawl can reach: the crawler
    #: may ask them (it must, before any request to the host), and need not.
    robots: Mapping[str, int]
    #: URL in ``fetch`` -> how many hosts other than its own have a page in ``fetch`` that
    #: links to it (the popularity a crawler can observe; ``SyntheticWeb.in_links`` counts
    #: every page of the web).
    in_links: Mapping[str, int]
    #: The pages ``WebConfig.popular_pages`` made popular, most linked first.
    popular: tuple[str, ...] = ()

    @staticmethod
    def identity(url: str) -> str:
        """The page identity of ``url`` (any spelling), or ``url`` itself if it has none."""
        return page_identity(url) or url

    @staticmethod
    def is_trap(url: str) -> bool:
        """Whether ``url`` is a trap URL (:func:`synthweb.policy.is_trap`)."""
        return url_policy.is_trap(url)

    @staticmethod
    def is_farm(url: str) -> bool:
        """Whether ``url`` is a farm URL (:func:`synthweb.policy.is_farm`)."""
        return url_policy.is_farm(url)

    def bounded(self, url: str) -> bool:
        """Whether ``url`` is "may fetch, up to a bound": a trap or farm URL."""
        return url_policy.is_trap(url) or url_policy.is_farm(url)


@dataclasses.dataclass(frozen=True)
class HostileTruth:
    """The ground truth of the hostile profile (see the module docstring and
    :mod:`synthweb.hostile`). Only URLs the crawl reaches are named; mappings are plain dicts.
    """

    #: URL -> (status of the first answer, 429 or 503; status after it, 200): each must be
    #: requested exactly twice, the second time no earlier than the Retry-After told (which
    #: the request log's ``retry_at`` records; :func:`synthweb.audit.audit_hostile` checks it).
    retry: Mapping[str, tuple[int, int]]
    #: URL -> fault (``trickle``, ``reset``, ``short-body``, ``bad-chunked``, ``bad-gzip``,
    #: ``bomb``, ``big``, ``huge-header``, ``many-headers``): requested exactly once, whatever
    #: the outcome (an error for most; the status is not checked).
    once: Mapping[str, str]
    #: Private-address URLs linked from the crawl (also in ``never``): must never be requested.
    private: frozenset[str]
    #: Hosts whose requests are private-address requests (as the request log names them).
    private_hosts: frozenset[str]
    #: hostile host -> status of its /robots.txt (0: never answers), for the hosts reached:
    #: each must be asked, at least once.
    robots: Mapping[str, int]
    #: Hosts whose robots.txt never answers: nothing but robots.txt may be requested there.
    robots_failed: frozenset[str]
    #: robots.txt redirect targets (``/robots-moved.txt``, ``/robots-chain/{n}``): a crawler
    #: may request them (repeats allowed), need not.
    robots_extra: frozenset[str]
    #: Seconds that Retry-After tells.
    retry_after: int


@dataclasses.dataclass(frozen=True)
class SitemapTruth:
    """The ground truth of the sitemap profile (:mod:`synthweb.sitemaps`): which sitemaps a
    crawl fetches, which pages only they lead to, and what they name that it must not fetch
    (all also in ``fetch`` or ``never``)."""

    #: Sitemap documents to fetch.
    documents: frozenset[str]
    #: Pages fetched that no fetched page links to (nor redirects to): only sitemaps lead there.
    orphans: frozenset[str]
    #: URLs sitemaps or robots.txt name that must not be fetched: other hosts' pages, sitemaps
    #: nested too deep (and what only they list), a sitemap robots.txt disallows.
    refused: frozenset[str]
    #: Hosts the crawl reaches whose robots.txt answers 2xx and names sitemaps.
    hosts: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class DomainTruth:
    """The ground truth of the multi-domain profile (see the module docstring). URLs are
    canonical; the mappings are plain dicts, treat them as read-only.

    :func:`synthweb.audit.audit_log` neither requires nor refuses a URL outside ``fetch`` and
    ``never`` here (junk, and what only junk leads to): it still checks politeness, repeats,
    robots.txt and the statuses of ``fetch``.
    """

    #: The real pages (200) reachable from the seeds through real pages, robots.txt obeyed.
    reachable: frozenset[str]
    #: URL in ``reachable`` -> how many other pages in ``reachable`` link to it (a link to a
    #: redirect counts for its target).
    in_degree: Mapping[str, int]
    #: URL in ``reachable`` -> how many registered domains other than its own have a page in
    #: ``reachable`` linking to it.
    in_domains: Mapping[str, int]
    #: Junk URLs the pages in ``reachable`` link to, with their kind: where a crawl enters junk.
    junk_entries: Mapping[str, UrlKind]
    #: The real pages of the web not in ``reachable``: linked only from junk, or disallowed by
    #: robots.txt.
    unreachable: frozenset[str]
    #: Every host of the web (real sites, their bare domains, farms).
    hosts: frozenset[str]
    #: The kind of any canonical URL (:meth:`synthweb.domains.DomainWeb.kind`).
    kind_of: Callable[[str], UrlKind] = dataclasses.field(compare=False, repr=False)

    def best_mean_in_degree(self, count: int, *, domains: bool = False) -> float:
        """The mean in-degree of the ``count`` best-linked reachable pages: the best a crawl
        that fetches ``count`` of them can do. ``domains``: counted in linking domains
        (``in_domains``) instead of pages."""
        degrees = self.in_domains if domains else self.in_degree
        best = sorted(degrees.values(), reverse=True)[:count]
        return sum(best) / len(best) if best else 0.0

    def mean_in_degree(self, urls: Iterable[str], *, domains: bool = False) -> float:
        """The mean in-degree of those of ``urls`` that are in ``reachable`` (0 if none);
        ``domains``: counted in linking domains."""
        degrees = self.in_domains if domains else self.in_degree
        found = [degrees[url] for url in urls if url in degrees]
        return sum(found) / len(found) if found else 0.0


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
    profile = web.config.url_policy_on
    if profile:
        seed_urls = tuple(dict.fromkeys(page_identity(u) or u for u in seed_urls))
    trap_entries: set[str] = set()
    farm_entries: set[str] = set()
    # target URL -> hosts of fetched pages linking to it (profile only)
    linking_hosts: dict[str, set[str]] = {}
    seen = set(seed_urls)
    queue = deque(seed_urls)
    hostile_on = web.config.hostile
    retry: dict[str, tuple[int, int]] = {}
    once: dict[str, str] = {}
    private: set[str] = set()
    hostile_robots: dict[str, int] = {}
    sitemaps_on = web.config.sitemaps
    # sitemap URL -> (level below robots.txt, host of the robots.txt naming it, or "")
    sitemap_levels: dict[str, tuple[int, str]] = {}
    linked: set[str] = set(seed_urls)
    refused: set[str] = set()
    naming_hosts: set[str] = set()
    domains_on = web.config.multi_domain
    junk: dict[str, UrlKind] = {}

    def discover(url: str | None) -> None:
        if url and url not in seen:
            seen.add(url)
            queue.append(url)

    while queue:
        url = queue.popleft()
        if hostile_on and hostile_web.is_private_host(split_url(url)[0]):
            private.add(url)
            never.add(url)
            continue
        if hostile_on and hostile_web.is_hostile_host(split_url(url)[0]):
            host, path = split_url(url)
            if host not in hostile_robots:
                stalled = host == hostile_web.ROBOTS_STALL_HOST
                hostile_robots[host] = 0 if stalled else web.robots_rules(host).status
            if path == "/robots.txt":
                continue
            if not web.robots_rules(host).allowed(path, agent_token):
                never.add(url)
                continue
            kind = hostile_web.role(host, path)
            if kind == "retry":
                retry[url] = (hostile_web.RETRY_PATHS[path][0], 200)
                continue
            if kind in hostile_web.FAULTS:
                once[url] = kind
                continue
        if domains_on and web.url_kind(url).is_junk:
            junk[url] = web.url_kind(url)
            continue
        if profile and url_policy.is_trap(url):
            trap_entries.add(url)
            continue
        if profile and url_policy.is_farm(url):
            farm_entries.add(url)
            continue
        host, path = split_url(url)
        rules = web.robots_rules(host)
        if host not in robots and not (hostile_on and host in hostile_robots):
            robots[host] = rules.status
            delay = rules.crawl_delay(agent_token)
            if delay is not None:
                delays[host] = delay
            named_sitemaps = web.robots_sitemaps(host) if sitemaps_on else ()
            if named_sitemaps and 200 <= rules.status < 300:
                naming_hosts.add(host)
                for named in named_sitemaps[: sitemap_web.MAX_PER_ROBOTS]:
                    sitemap_levels.setdefault(named, (1, host))
                    discover(named)
        if path == "/robots.txt":
            continue
        if not rules.allowed(path, agent_token):
            never.add(url)
            continue
        fetch[url] = web.status(url)
        if url in sitemap_levels:
            for target in _sitemap_targets(web, url, sitemap_levels, refused):
                discover(target)
            continue
        page = web.page(url)
        if page is None:
            continue
        if page.delay:
            slow[url] = page.delay
        if page.redirect_to:
            redirects[url] = page.redirect_to
            discover(page.redirect_to)
            linked.add(page.redirect_to)
        elif page.status == 200 and page.content_type.lower().startswith("text/html"):
            for link in page.links:
                discover(link.url)
                if link.url:
                    linked.add(link.url)
                if profile and link.url and split_url(link.url)[0] != host:
                    linking_hosts.setdefault(link.url, set()).add(host)
    truth = None
    if profile:
        policy_robots = {url_policy.TRAP_HOST: 200} if trap_entries else {}
        if farm_entries:
            policy_robots.update(
                (host, web.robots_rules(host).status)
                for host in web.policy_host_names()
                if host != url_policy.TRAP_HOST
            )
        truth = PolicyTruth(
            variants=web.config.url_variant_share > 0,
            trap_entries=frozenset(trap_entries),
            farm_entries=frozenset(farm_entries),
            robots=policy_robots,
            in_links={url: len(linking_hosts.get(url, ())) for url in fetch},
            popular=tuple(web.popular_pages()),
        )
    hostile_truth = None
    if hostile_on:
        extra = {
            f"http://{host}{path}"
            for host in hostile_robots
            for path in hostile_web.robots_extra_paths(host)
        }
        hostile_truth = HostileTruth(
            retry=retry,
            once=once,
            private=frozenset(private),
            private_hosts=hostile_web.PRIVATE_HOSTS,
            robots=hostile_robots,
            robots_failed=frozenset(h for h, s in hostile_robots.items() if s == 0),
            robots_extra=frozenset(extra),
            retry_after=web.config.hostile_retry_after,
        )
    sitemap_truth = None
    if sitemaps_on:
        refused -= fetch.keys()  # refused one way, reached another: fetched
        never |= refused
        documents = frozenset(u for u in sitemap_levels if u in fetch)
        sitemap_truth = SitemapTruth(
            documents=documents,
            orphans=frozenset(fetch.keys() - linked - documents),
            refused=frozenset(refused | {u for u in sitemap_levels if u in never}),
            hosts=frozenset(naming_hosts),
        )
    return ExpectedCrawl(
        agent_token=agent_token,
        seeds=seed_urls,
        fetch=fetch,
        never=frozenset(never),
        robots=robots,
        crawl_delays=delays,
        redirects=redirects,
        slow=slow,
        policy=truth,
        hostile=hostile_truth,
        sitemaps=sitemap_truth,
        domains=_domain_truth(web, fetch, redirects, junk) if domains_on else None,
    )


def _domain_truth(
    web: SyntheticWeb, fetch: Mapping[str, int], redirects: Mapping[str, str],
    junk: dict[str, UrlKind],
) -> DomainTruth:
    """The multi-domain truth of a finished walk: who links to each reachable real page."""
    from synthweb.domains import UrlKind

    assert web.domains is not None
    reachable = {u for u, status in fetch.items() if status == 200 and web.url_kind(u) is
                 UrlKind.PAGE}
    sources: dict[str, set[str]] = {url: set() for url in reachable}
    for source in reachable:
        page = web.page(source)
        assert page is not None
        for link in page.links:
            target = redirects.get(link.url or "", link.url)
            if target in sources and target != source:
                sources[target].add(source)
    in_domains = {
        url: len({_domain(split_url(s)[0]) for s in linking} - {_domain(split_url(url)[0])})
        for url, linking in sources.items()
    }
    hosts = (web.domains.host_names() + web.domains.redirect_host_names()
             + web.domains.farm_host_names())
    return DomainTruth(
        reachable=frozenset(reachable),
        in_degree={url: len(linking) for url, linking in sources.items()},
        in_domains=in_domains,
        junk_entries=junk,
        unreachable=frozenset(set(web.domains.legit_urls()) - reachable),
        hosts=frozenset(hosts),
        kind_of=web.url_kind,
    )


def _domain(host: str) -> str:
    """The registered domain of a host of the multi-domain web (all are ``label.test``)."""
    return ".".join(host.split(".")[-2:])


def _sitemap_targets(
    web: SyntheticWeb, url: str, levels: dict[str, tuple[int, str]], refused: set[str]
) -> list[str]:
    """What the model follows from sitemap ``url`` (see :mod:`synthweb.sitemaps`); what it
    must not follow goes to ``refused``, with what only a refused sitemap lists."""
    level, robots_host = levels[url]
    document = web.sitemap_document(url)
    if document is None:  # not there (404): nothing to follow
        return []
    kind, listed = document
    if kind == "index":
        if level >= sitemap_web.MAX_NESTING:
            for child in listed:
                refused.add(child)
                child_document = web.sitemap_document(child)
                if child_document is not None:
                    refused.update(child_document[1])
            return []
        for child in listed:
            levels.setdefault(child, (level + 1, ""))
        return list(listed)
    hosts = {split_url(url)[0]} | ({robots_host} if level == 1 else set())
    followed = [target for target in listed if split_url(target)[0] in hosts]
    refused.update(target for target in listed if split_url(target)[0] not in hosts)
    return followed
