"""The model of the synthetic web: hosts, their robots.txt, pages, links and HTTP answers.

Every answer is a pure function of (config, host, path): each host and page draws its details
from its own ``random.Random`` seeded with a string naming it, so the same seed always gives the
same web, in any process and whatever ``PYTHONHASHSEED`` is, and a page can be built without
building the rest of the web. Results are cached, which changes nothing but speed.

Layout of a host ``h{i}.synth.test`` with pages numbered 0..n-1:

- ``/`` (page 0): HTML home page linking to the first pages of the host;
- ``/p/{n}``: HTML (well-formed, broken, ISO-8859-1 or windows-1251), also placed under
  ``/private/{n}``, ``/private/public/{n}``, ``/no-bots/{n}``, ``/for-bots/{n}`` for robots rules;
- ``/slow/{n}``: HTML answered after a delay; ``/t/{n}.txt``: text/plain; ``/img/{n}.png``: binary;
- ``/r/{n}``: a 301/302/307/308 redirect; ``/e/{n}``: 500; any other path: 404.

Host ``h0`` is the showcase (unless ``WebConfig.showcase`` is off): normal robots.txt and, at fixed
numbers, one page of every kind, a redirect chain, a redirect loop and every form of link, all
linked from its home page, so the single seed ``http://h0.synth.test/`` reaches every feature.

The URL-policy profile (off by default; :mod:`synthweb.policy`) adds spellings of URLs, a trap
host, a link farm and popular pages; with it on, the showcase home page also links every
spelling of ``/p/1`` and the entry points of the traps and the farm.

The sitemap profile (off by default; :mod:`synthweb.sitemaps`) makes some hosts name sitemaps in
their robots.txt, listing pages no page links to, and adds the hosts ``sm-*.synth.test`` (every
sitemap format and every case a crawler must refuse), linked from the showcase home page.

The near-duplicate profile (off by default; :mod:`synthweb.neardup`) adds pages ``/news/{n}`` to
some normal hosts: copies of one article in each host's boilerplate (with its own date, counters,
advertisement and markup; in edited groups also a few words changed), and decoys that share the
boilerplate only, linked from their hosts' home pages.

The multi-domain profile (off by default; :mod:`synthweb.domains`) is a layout of its own: with
it on, :class:`SyntheticWeb` answers everything from :class:`synthweb.domains.DomainWeb` (hosts
of real sites on many registered domains, link farms, endless spaces, soft 404s).
"""

from __future__ import annotations

import dataclasses
import gzip
import html
import json
import posixpath
import random
import time
from collections.abc import Iterable

from synthweb import changing as changing_web
from synthweb import hostile, neardup, policy
from synthweb import sitemaps as sitemap_web
from synthweb.compat import StrEnum
from synthweb.domains import DomainWeb, UrlKind
from synthweb.robots import (
    GARBAGE_VARIANTS,
    RobotsFile,
    RobotsGroup,
    RobotsKind,
    Rule,
    build_robots,
    with_sitemaps,
)
from synthweb.truth import DEFAULT_AGENT_TOKEN, ExpectedCrawl, expected_crawl
from synthweb.urls import (
    canonical_url,
    host_index,
    host_name,
    nohost_name,
    page_identity,
    split_url,
)

__all__ = ["Link", "Page", "PageKind", "Response", "SyntheticWeb", "WebConfig"]


@dataclasses.dataclass(frozen=True)
class WebConfig:
    """The parameters of a synthetic web. Shares are fractions in [0, 1].

    Host shares pick how many hosts have each kind of robots.txt (at least one each when the
    share is positive and there are enough hosts; the others are normal). Page shares pick the
    kind of each page; what is left is plain HTML.
    """

    seed: int = 1
    hosts: int = 30
    #: Mean pages per host; each host has between half and one and a half times as many.
    pages_per_host: int = 20
    #: Mean ``<a href>`` links per HTML page (between half and one and a half times as many).
    outlinks_per_page: int = 12
    #: Share of page links that point to another host.
    cross_host_link_share: float = 0.3
    #: Product tokens that AGENT_GROUP robots.txt files name in their own group.
    named_agents: tuple[str, ...] = ("pyflink-crawler",)
    #: Host 0 shows every feature at fixed paths (see the module docstring).
    showcase: bool = True

    agent_group_host_share: float = 0.1
    unavailable_robots_host_share: float = 0.07
    crawl_delay_host_share: float = 0.07
    missing_robots_host_share: float = 0.1
    garbage_robots_host_share: float = 0.13
    #: Crawl-delay values (seconds) drawn for CRAWL_DELAY hosts.
    crawl_delays: tuple[float, ...] = (0.5,)
    #: Pages of a CRAWL_DELAY host, kept small so that a polite crawl of it stays short.
    crawl_delay_host_pages: int = 4

    broken_html_share: float = 0.05
    latin1_html_share: float = 0.03
    cp1251_html_share: float = 0.03
    slow_page_share: float = 0.02
    text_page_share: float = 0.04
    binary_page_share: float = 0.04
    redirect_share: float = 0.08
    error_page_share: float = 0.03
    #: Share of HTML pages placed under /private/ (two thirds) or /private/public/ (one third).
    private_page_share: float = 0.06
    #: Share of HTML pages of an AGENT_GROUP host placed under /no-bots/ or /for-bots/.
    bot_section_share: float = 0.2
    #: Range of the response delay of slow pages, in seconds.
    slow_delay_range: tuple[float, float] = (0.3, 1.5)
    #: Share of HTML pages served gzip-compressed to a client that accepts gzip.
    gzip_share: float = 0.5

    #: Share of links to paths that answer 404 (``/missing/0`` .. ``/missing/3`` of the host).
    dead_link_share: float = 0.02
    #: Share of links that are not crawlable URLs (mailto:, javascript:, http://[bad ...).
    junk_link_share: float = 0.04
    #: Share of links to hosts that do not exist (the proxy answers 502).
    nohost_link_share: float = 0.01

    # -- the URL-policy profile (synthweb.policy); every field's default turns its part off --

    #: Share of links to pages of the web written in another spelling of the same URL; above 0
    #: also adds /caf%C3%A9/{n} and /catalog?item={n}&lang=en to every host and makes the server
    #: answer every spelling of a URL with its page.
    url_variant_share: float = 0.0
    #: Serve the trap host traps.synth.test (calendar, parameter combinations, growing paths).
    traps: bool = False
    #: Hosts of the link farm s{i}.farm-spam.test; 0: no farm.
    farm_hosts: int = 0
    #: Pages of each farm host (its home page included).
    farm_pages_per_host: int = 200
    #: Links of each farm page (to its own host and to the other farm hosts).
    farm_links_per_page: int = 20
    #: Pages linked from many other hosts (a skewed, graded in-degree); 0: none.
    popular_pages: int = 0

    # -- the hostile profile (synthweb.hostile); off unless ``hostile`` is on -----------------

    #: Serve the hostile hosts x-*.synth.test and answer private addresses (421), all linked
    #: from h0's home page.
    hostile: bool = False
    #: Seconds that Retry-After tells on x-retry.synth.test.
    hostile_retry_after: int = 2
    #: Seconds over which x-trickle.synth.test/trickle sends its body.
    hostile_trickle_seconds: float = 120.0
    #: Seconds x-robots-stall.synth.test holds its robots.txt request before closing it unanswered.
    hostile_robots_stall_seconds: float = 90.0
    #: Bytes of x-broken.synth.test/big.
    hostile_big_page_bytes: int = 20 * 1024 * 1024
    #: Decompressed bytes of the gzip bomb x-broken.synth.test/bomb.
    hostile_bomb_bytes: int = 1 << 30

    # -- the sitemap profile (synthweb.sitemaps) ----------------------------------------------

    #: Serve the hosts sm-*.synth.test, with sitemaps named by robots.txt and pages only they
    #: list, sm-a linked from h0's home page.
    sitemaps: bool = False
    #: With ``sitemaps`` on, the share of the hosts with a 200 robots.txt of rules (normal,
    #: agent-group, crawl-delay; not the showcase) whose robots.txt names sitemaps listing
    #: orphan pages of theirs (at least one host when above 0 and there is one).
    sitemap_host_share: float = 0.0

    # -- the near-duplicate profile (synthweb.neardup) ----------------------------------------

    #: Articles each served as ``near_duplicate_group_size`` near-duplicate pages on different
    #: hosts (the same text, another page around it), with decoys; the profile is off when
    #: this and ``near_duplicate_edited_groups`` are 0.
    near_duplicate_groups: int = 0
    #: Articles served as ``near_duplicate_group_size`` pages whose text differs besides: one
    #: to four words of the article changed per copy after the first (the harder case,
    #: counted apart), with decoys.
    near_duplicate_edited_groups: int = 0
    #: Pages of each group (copies of its article, on as many hosts as there are).
    near_duplicate_group_size: int = 4
    #: Decoys of each group: pages with the boilerplate of its copies' hosts and another article.
    near_duplicate_decoys_per_group: int = 2

    # -- the changing-web profile (synthweb.changing) -----------------------------------------

    #: Pages change at known rates, answers carry validators and honour conditional GETs, and
    #: ``gone_pages`` pages go away.
    changing: bool = False
    #: Shares of the plain HTML pages that never change and that change slowly (the rest
    #: change fast), and the seconds between their versions.
    change_static_share: float = 0.4
    change_slow_share: float = 0.3
    change_slow_period: float = 60.0
    change_fast_period: float = 4.0
    #: The clock's origin of every page's versions (seconds since the epoch).
    change_epoch: float = 0.0
    #: Shares of the hosts that send Last-Modified only, and neither validator.
    change_no_etag_host_share: float = 0.2
    change_no_validator_host_share: float = 0.1
    #: Share of the hosts that send an ETag only, of more than 32 characters, in the forms
    #: servers use: a SHA-256 in hex, S3's multipart ``<md5>-<parts>``, Netlify's
    #: ``<md5>-ssl-df``.
    change_long_etag_host_share: float = 0.0
    #: Share of the hosts whose robots.txt (when it answers 200) names a live sitemap,
    #: ``/changes.xml``, giving each changing page's ``lastmod`` as the page changes.
    change_sitemap_host_share: float = 0.0
    #: Pages that answer 404 or 410 from ``change_epoch + gone_after`` seconds on.
    gone_pages: int = 4
    gone_after: float = 20.0

    # -- the multi-domain profile (synthweb.domains); a layout of its own ---------------------

    #: Serve the multi-domain web instead of h{i}.synth.test: ``hosts`` hosts of real sites on
    #: many registered domains, link farms, endless spaces and soft 404s. The page-kind, link
    #: and robots.txt shares above do not apply to it, nor can another profile be on with it.
    multi_domain: bool = False
    #: Pages of the largest host; 0: 15 a host of the web (at least 40). The r-th largest has
    #: about ``largest / r ** multi_domain_size_exponent`` (at least 4).
    multi_domain_largest_host: int = 0
    multi_domain_size_exponent: float = 1.2
    #: Link-farm hosts (on registered domains of their own) and the clusters they form.
    multi_domain_farm_hosts: int = 12
    multi_domain_farm_clusters: int = 3
    #: Real hosts that answer every unknown path with a 200 "not found" page.
    multi_domain_soft_404_hosts: int = 3
    #: The calendar, session-id, repeating-path and filter spaces on real sites.
    multi_domain_endless_spaces: bool = True
    #: Home pages :meth:`SyntheticWeb.seeds` gives by default.
    multi_domain_seed_sites: int = 5

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name.endswith("_share") and not 0.0 <= value <= 1.0:
                raise ValueError(f"WebConfig.{field.name} must be in [0, 1], got {value!r}")
        if self.hosts < 1:
            raise ValueError(f"WebConfig.hosts must be at least 1, got {self.hosts!r}")
        if self.pages_per_host < 2:
            raise ValueError(
                f"WebConfig.pages_per_host must be at least 2, got {self.pages_per_host!r}"
            )
        if self.outlinks_per_page < 1:
            raise ValueError(
                f"WebConfig.outlinks_per_page must be at least 1, got {self.outlinks_per_page!r}"
            )
        if self.crawl_delay_host_pages < 1:
            raise ValueError("WebConfig.crawl_delay_host_pages must be at least 1")
        if not self.crawl_delays or min(self.crawl_delays) <= 0:
            raise ValueError(f"WebConfig.crawl_delays must be positive, got {self.crawl_delays!r}")
        low, high = self.slow_delay_range
        if not 0 <= low <= high:
            raise ValueError(
                f"WebConfig.slow_delay_range must be 0 <= low <= high, got {(low, high)}"
            )
        if not self.named_agents or any(not a or a != a.strip() for a in self.named_agents):
            raise ValueError(
                f"WebConfig.named_agents must be non-empty tokens, got {self.named_agents!r}"
            )
        for name, shares in (("page kind", _PAGE_KIND_SHARES), ("robots kind", _ROBOTS_SHARES)):
            total = sum(getattr(self, field) for _, field in shares)
            if total > 1.0:
                raise ValueError(f"WebConfig {name} shares add up to {total:.2f} > 1")
        if self.dead_link_share + self.junk_link_share + self.nohost_link_share > 1.0:
            raise ValueError("WebConfig link shares add up to more than 1")
        for name, least in (
            ("farm_hosts", 0),
            ("farm_pages_per_host", 2),
            ("farm_links_per_page", 1),
            ("popular_pages", 0),
            ("near_duplicate_groups", 0),
            ("near_duplicate_edited_groups", 0),
            ("near_duplicate_group_size", 2),
            ("near_duplicate_decoys_per_group", 0),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < least:
                raise ValueError(f"WebConfig.{name} must be an integer >= {least}, got {value!r}")
        for name, least in (
            ("hostile_retry_after", 1),
            ("hostile_big_page_bytes", 100),
            ("hostile_bomb_bytes", 1),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < least:
                raise ValueError(f"WebConfig.{name} must be an integer >= {least}, got {value!r}")
        for name in ("hostile_trickle_seconds", "hostile_robots_stall_seconds",
                     "change_slow_period", "change_fast_period"):
            if not getattr(self, name) > 0:
                raise ValueError(f"WebConfig.{name} must be positive, got {getattr(self, name)!r}")
        if self.change_static_share + self.change_slow_share > 1.0:
            raise ValueError("WebConfig change class shares add up to more than 1")
        if (self.change_no_etag_host_share + self.change_no_validator_host_share
                + self.change_long_etag_host_share > 1.0):
            raise ValueError("WebConfig validator host shares add up to more than 1")
        if not isinstance(self.gone_pages, int) or self.gone_pages < 0 or self.gone_after < 0:
            raise ValueError("WebConfig.gone_pages and gone_after must be >= 0")
        self._check_multi_domain()

    def _check_multi_domain(self) -> None:
        for name, least in (
            ("multi_domain_largest_host", 0),
            ("multi_domain_farm_hosts", 0),
            ("multi_domain_farm_clusters", 1),
            ("multi_domain_soft_404_hosts", 0),
            ("multi_domain_seed_sites", 1),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < least:
                raise ValueError(f"WebConfig.{name} must be an integer >= {least}, got {value!r}")
        if not self.multi_domain_size_exponent > 0:
            raise ValueError("WebConfig.multi_domain_size_exponent must be positive")
        others = (self.url_policy_on or self.hostile or self.sitemaps or self.changing
                  or self.near_duplicate_groups or self.near_duplicate_edited_groups)
        if self.multi_domain and others:
            raise ValueError("WebConfig.multi_domain is a layout of its own: turn the other "
                             "profiles off")

    @property
    def url_policy_on(self) -> bool:
        """Whether any part of the URL-policy profile is on (see :mod:`synthweb.policy`)."""
        return bool(
            self.url_variant_share > 0 or self.traps or self.farm_hosts or self.popular_pages
        )

    def with_url_policy_profile(self, **changes: object) -> WebConfig:
        """This configuration with the whole URL-policy profile on; ``changes`` override it."""
        profile: dict[str, object] = {
            "url_variant_share": 0.25,
            "traps": True,
            "farm_hosts": 20,
            "farm_pages_per_host": 200,
            "farm_links_per_page": 20,
            "popular_pages": 8,
        }
        profile.update(changes)
        return dataclasses.replace(self, **profile)  # type: ignore[arg-type]

    def with_sitemap_profile(self, **changes: object) -> WebConfig:
        """This configuration with the sitemap profile on (sitemaps on half the hosts that can
        have them); ``changes`` override its fields."""
        profile: dict[str, object] = {"sitemaps": True, "sitemap_host_share": 0.5}
        profile.update(changes)
        return dataclasses.replace(self, **profile)  # type: ignore[arg-type]

    def with_near_duplicate_profile(self, **changes: object) -> WebConfig:
        """This configuration with the near-duplicate profile on (12 groups and 12 edited
        groups of 4 pages, 2 decoys a group); ``changes`` override its fields."""
        profile: dict[str, object] = {
            "near_duplicate_groups": 12,
            "near_duplicate_edited_groups": 12,
            "near_duplicate_group_size": 4,
            "near_duplicate_decoys_per_group": 2,
        }
        profile.update(changes)
        return dataclasses.replace(self, **profile)  # type: ignore[arg-type]

    def with_changing_profile(self, **changes: object) -> WebConfig:
        """This configuration with the changing-web profile on (:mod:`synthweb.changing`):
        versions from now on (``change_epoch``: the current time); ``changes`` override its
        fields."""
        profile: dict[str, object] = {"changing": True, "change_epoch": float(int(time.time()))}
        profile.update(changes)
        return dataclasses.replace(self, **profile)  # type: ignore[arg-type]

    def with_hostile_profile(self, **changes: object) -> WebConfig:
        """This configuration with the hostile profile on; ``changes`` override its fields."""
        profile: dict[str, object] = {"hostile": True}
        profile.update(changes)
        return dataclasses.replace(self, **profile)  # type: ignore[arg-type]

    def with_multi_domain_profile(self, **changes: object) -> WebConfig:
        """This configuration with the multi-domain layout (:mod:`synthweb.domains`);
        ``changes`` override its fields."""
        profile: dict[str, object] = {"multi_domain": True}
        profile.update(changes)
        return dataclasses.replace(self, **profile)  # type: ignore[arg-type]

    def to_json(self) -> str:
        """This configuration as a JSON object (what ``python -m synthweb --config-json`` reads)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> WebConfig:
        """The configuration a JSON object describes; missing keys take their defaults."""
        values = json.loads(text)
        known = {field.name: field for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"unknown WebConfig keys: {', '.join(unknown)}")
        for name, value in values.items():
            if isinstance(value, list):
                values[name] = tuple(value)
        return cls(**values)


class PageKind(StrEnum):
    """What a page is; its path prefix tells it too (see the module docstring)."""

    HTML = "html"
    #: Unclosed tags, mixed attribute quoting, junk bytes (invalid UTF-8, NUL).
    BROKEN_HTML = "broken-html"
    #: ISO-8859-1, declared in the Content-Type header only.
    LATIN1_HTML = "latin1-html"
    #: windows-1251, declared in a <meta> only (the header says plain ``text/html``).
    CP1251_HTML = "cp1251-html"
    #: HTML answered after a delay drawn from ``WebConfig.slow_delay_range``.
    SLOW_HTML = "slow-html"
    TEXT = "text"
    BINARY = "binary"
    REDIRECT = "redirect"
    #: Answers 500.
    ERROR = "error"


HTML_KINDS = frozenset(
    {
        PageKind.HTML,
        PageKind.BROKEN_HTML,
        PageKind.LATIN1_HTML,
        PageKind.CP1251_HTML,
        PageKind.SLOW_HTML,
    }
)

_PAGE_KIND_SHARES = (
    (PageKind.BROKEN_HTML, "broken_html_share"),
    (PageKind.LATIN1_HTML, "latin1_html_share"),
    (PageKind.CP1251_HTML, "cp1251_html_share"),
    (PageKind.SLOW_HTML, "slow_page_share"),
    (PageKind.TEXT, "text_page_share"),
    (PageKind.BINARY, "binary_page_share"),
    (PageKind.REDIRECT, "redirect_share"),
    (PageKind.ERROR, "error_page_share"),
)

# In this order of priority when there are too few hosts for every kind.
_ROBOTS_SHARES = (
    (RobotsKind.AGENT_GROUP, "agent_group_host_share"),
    (RobotsKind.UNAVAILABLE, "unavailable_robots_host_share"),
    (RobotsKind.CRAWL_DELAY, "crawl_delay_host_share"),
    (RobotsKind.MISSING, "missing_robots_host_share"),
    (RobotsKind.GARBAGE, "garbage_robots_host_share"),
)


@dataclasses.dataclass(frozen=True, slots=True)
class Link:
    """One ``<a href>`` of a page: the reference as written and the canonical URL it resolves to.

    ``url`` is None when the reference is not a crawlable ``http://`` URL. ``href=""`` and
    ``href="#top"`` resolve to the page itself. With the URL-policy profile, ``url`` is the
    page identity of the reference (:func:`synthweb.urls.page_identity`), which is the canonical
    URL for every spelling but the profile's own.
    """

    href: str
    url: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    """One page of the model: what it is and what the server answers for it."""

    url: str
    kind: PageKind
    status: int
    content_type: str
    #: The ``<a href>`` links in document order (HTML kinds only).
    links: tuple[Link, ...] = ()
    #: The Location header as written (relative or absolute), for redirects.
    location: str | None = None
    #: The canonical URL the redirect points to.
    redirect_to: str | None = None
    #: Seconds the server waits before answering.
    delay: float = 0.0
    #: Whether the body is gzip-compressed for a client that accepts gzip.
    gzip: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Response:
    """An HTTP answer, without the headers the server adds (Content-Length, Date, Connection)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    delay: float = 0.0
    #: Hostile profile: the epoch time Retry-After names (logged as ``retry_at``).
    retry_at: float | None = None
    #: Hostile profile: the fault this answer shows (logged as ``fault``); "" for none.
    fault: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class _HostPlan:
    """A host before its links are drawn: robots.txt and the kind and path of each page."""

    index: int
    name: str
    robots: RobotsFile
    paths: tuple[str, ...]
    kinds: tuple[PageKind, ...]
    numbers: dict[str, int]
    #: Pages 0..drawable-1 are the host's own; the profile's pages follow them, and links and
    #: redirects are drawn among the first ones only, so the profile leaves them as they were.
    drawable: int
    #: The sitemap profile's additions (sitemaps, orphans; not in ``paths``), if any.
    sitemaps: sitemap_web.HostSitemaps | None = None
    #: The near-duplicate profile's pages of the host (after all others): number -> placement.
    near_duplicates: dict[int, neardup.Placement] | None = None


# The showcase host's fixed pages: (number, kind, path); see _SHOWCASE_REDIRECTS for redirects.
_SHOWCASE_PAGES = (
    (1, PageKind.HTML, "/p/1"),
    (2, PageKind.BROKEN_HTML, "/p/2"),
    (3, PageKind.LATIN1_HTML, "/p/3"),
    (4, PageKind.CP1251_HTML, "/p/4"),
    (5, PageKind.SLOW_HTML, "/slow/5"),
    (6, PageKind.TEXT, "/t/6.txt"),
    (7, PageKind.BINARY, "/img/7.png"),
    (8, PageKind.ERROR, "/e/8"),
    (9, PageKind.REDIRECT, "/r/9"),
    (10, PageKind.REDIRECT, "/r/10"),
    (11, PageKind.REDIRECT, "/r/11"),
    (12, PageKind.REDIRECT, "/r/12"),
    (13, PageKind.REDIRECT, "/r/13"),
    (14, PageKind.HTML, "/private/14"),
    (15, PageKind.HTML, "/private/public/15"),
)
# number -> (status, Location as written; {other} is the next host): a chain 9 -> 10 -> /p/1,
# a loop 11 -> 12 -> 11 and a cross-host redirect 13 -> h1's home page.
_SHOWCASE_REDIRECTS = {
    9: (301, "http://{host}/r/10"),
    10: (308, "/p/1"),
    11: (302, "/r/12"),
    12: (307, "http://{host}/r/11"),
    13: (301, "http://{other}/"),
}

# How links are written; the forms in _SAME_HOST_ONLY are relative to the page's own host.
_SAME_HOST_FORMS = ("root",) * 3 + ("absolute",) * 2 + (
    "relative", "dot-relative", "fragment", "absolute-fragment", "upper", "port",
    "protocol-relative",
)  # fmt: skip
_CROSS_HOST_FORMS = ("absolute",) * 3 + ("absolute-fragment", "upper", "port", "protocol-relative")
_ALL_FORMS = (
    "root", "relative", "dot-relative", "fragment", "absolute", "absolute-fragment", "upper",
    "port", "protocol-relative", "bare-home",
)  # fmt: skip
_SAME_HOST_ONLY = frozenset({"root", "relative", "dot-relative", "fragment"})

_LATIN1_TEXT = "Café crème brûlée, naïve façade, déjà vu: ½ prix à l'été."
_CP1251_TEXT = "Привет, мир! Это синтетическая страница в кодировке windows-1251."
_UTF8_TEXT = "A synthetic page — café, naïve, 東京, Привет."
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class SyntheticWeb:
    """A deterministic web of ``config.hosts`` hosts: its pages, robots.txt files and answers.

    Thread-safe for reading (caches are filled idempotently). See :mod:`synthweb.truth` for what
    a correct crawler of this web must and must not fetch.
    """

    def __init__(self, config: WebConfig | None = None) -> None:
        self.config = config or WebConfig()
        self._robots_kinds = _assign_robots_kinds(self.config)
        self._sitemap_indices = _assign_sitemap_hosts(self.config, self._robots_kinds)
        self._plans: dict[int, _HostPlan] = {}
        self._pages: dict[tuple[int, int], Page] = {}
        self._responses: dict[tuple[str, str, bool], Response] = {}
        self._farm_pages: dict[tuple[int, int], Page] = {}
        self._policy_robots: dict[str, RobotsFile] = {}
        # Filled on first use (profile only): links added to pages, popular pages, in-links.
        self._extras: dict[tuple[int, int], tuple[tuple[str, str], ...]] | None = None
        self._popular: tuple[str, ...] = ()
        self._in_links: dict[str, int] | None = None
        self._near_duplicates = self._place_near_duplicates()
        #: The changing-web profile's model, when it is on.
        self.changing = changing_web.ChangingWeb(self) if self.config.changing else None
        #: The multi-domain profile's model, when it is on (it then answers everything).
        self.domains = _domain_web(self.config) if self.config.multi_domain else None

    # -- hosts and robots.txt ---------------------------------------------------------------

    def host_names(self) -> list[str]:
        """The names of the normal hosts, ``h0.synth.test`` first (see
        :meth:`policy_host_names` for the trap host and the farm); with the multi-domain
        profile, the hosts of real sites."""
        if self.domains is not None:
            return self.domains.host_names()
        return [host_name(i) for i in range(self.config.hosts)]

    def policy_host_names(self) -> list[str]:
        """The hosts of the URL-policy profile: the trap host, then the farm hosts, if on."""
        names = [policy.TRAP_HOST] if self.config.traps else []
        return names + [policy.farm_host_name(i) for i in range(self.config.farm_hosts)]

    def hostile_host_names(self) -> list[str]:
        """The hosts of the hostile profile (:data:`synthweb.hostile.HOSTILE_HOSTS`), if on."""
        return list(hostile.HOSTILE_HOSTS) if self.config.hostile else []

    def sitemap_host_names(self) -> list[str]:
        """The hosts whose robots.txt names sitemaps (sitemap profile): the normal hosts chosen
        for it in index order, then :data:`synthweb.sitemaps.SITEMAP_HOSTS`; empty if off."""
        if not self.config.sitemaps:
            return []
        names = [host_name(i) for i in sorted(self._sitemap_indices)]
        return names + [h for h in sitemap_web.SITEMAP_HOSTS if sitemap_web.robots_sitemaps(h)]

    def robots_sitemaps(self, host: str) -> tuple[str, ...]:
        """The absolute URLs the ``Sitemap:`` lines of the robots.txt of ``host`` name, in order
        (sitemap profile; empty for every host with it off)."""
        if not self.config.sitemaps or not self.is_host(host):
            return ()
        if sitemap_web.is_sitemap_host(host):
            return sitemap_web.robots_sitemaps(host)
        index = host_index(host)
        extra = None if index is None else self._plan(index).sitemaps
        return extra.named if extra else ()

    def sitemap_document(self, url: str) -> tuple[str, tuple[str, ...]] | None:
        """(format, listed URLs) of the sitemap document at canonical ``url`` (sitemap profile):
        format ``urlset``, ``gzip-urlset`` or ``text`` lists pages, ``index`` lists sitemaps.
        None if ``url`` is no sitemap (or the profile is off)."""
        host = split_url(url)[0]
        if not self.config.sitemaps or not self.is_host(host):
            return None
        if sitemap_web.is_sitemap_host(host):
            return sitemap_web.DOCUMENTS.get(url)
        index = host_index(host)
        extra = None if index is None else self._plan(index).sitemaps
        return extra.documents.get(url) if extra else None

    def is_host(self, host: str) -> bool:
        """Whether ``host`` (lower-case, no port) is a host of this web (profile hosts too)."""
        if self.domains is not None:
            return self.domains.is_host(host)
        index = host_index(host)
        if index is not None:
            return index < self.config.hosts
        if self.config.hostile and hostile.is_hostile_host(host):
            return True
        if self.config.sitemaps and sitemap_web.is_sitemap_host(host):
            return True
        return self._is_policy_host(host)

    def _is_policy_host(self, host: str) -> bool:
        if host == policy.TRAP_HOST:
            return self.config.traps
        index = policy.farm_host_index(host)
        return index is not None and index < self.config.farm_hosts

    def hosts_with_robots(self, kind: RobotsKind) -> list[str]:
        """The hosts whose robots.txt is of ``kind``, in index order."""
        return [host_name(i) for i, k in enumerate(self._robots_kinds) if k is kind]

    def robots_rules(self, host: str) -> RobotsFile:
        """The robots.txt of ``host`` and its meaning. An unknown host gives the proxy's 502."""
        if not self.is_host(host):
            body = f"502 Bad Gateway: cannot resolve {host}\n".encode()
            return RobotsFile(
                host, RobotsKind.UNAVAILABLE, "unknown-host", 502, "text/plain", body, ()
            )
        if self.domains is not None:
            return self.domains.robots(host)
        if host_index(host) is None and sitemap_web.is_sitemap_host(host):
            _, _, body = sitemap_web.response(host, "/robots.txt")
            rules = tuple(Rule(False, p) for p in sitemap_web.DISALLOWED.get(host, ()))
            return RobotsFile(host, RobotsKind.NORMAL, "sitemaps", 200,
                              "text/plain; charset=utf-8", body, (RobotsGroup(("*",), rules),))
        if host_index(host) is None and hostile.is_hostile_host(host):
            robots = self._policy_robots.get(host)
            if robots is None:
                robots = self._policy_robots[host] = _hostile_robots(host)
            return robots
        if host_index(host) is None:
            robots = self._policy_robots.get(host)
            if robots is None:
                body = f"# robots.txt for {host}\nUser-agent: *\nDisallow:\n".encode()
                robots = self._policy_robots[host] = RobotsFile(
                    host,
                    RobotsKind.NORMAL,
                    "allow-all",
                    200,
                    "text/plain; charset=utf-8",
                    body,
                    (RobotsGroup(("*",), ()),),
                )
            return robots
        return self._plan(host).robots

    # -- pages ------------------------------------------------------------------------------

    def page(self, url: str) -> Page | None:
        """The page at canonical ``url``, or None if nothing is there (404, or 502 off the web)."""
        host, path = split_url(url)
        if not self.is_host(host):
            return None
        if self.domains is not None:
            return _domain_page(self.domains, url)
        if host_index(host) is None:
            if hostile.is_hostile_host(host):
                return self._hostile_page(host, path)
            if sitemap_web.is_sitemap_host(host):
                return _sitemap_page(host, path)
            return self._policy_page(host, path)
        plan = self._plan(host)
        number = plan.numbers.get(path)
        if number is None and plan.sitemaps is not None:
            return _host_sitemap_page(plan.sitemaps, path)
        return None if number is None else self._page(plan.index, number)

    def pages(self, host: str) -> list[Page]:
        """All pages of ``host``, home page first (a farm host's too; the trap host has no end,
        so it raises ValueError)."""
        if host == policy.TRAP_HOST:
            raise ValueError(f"{host} has infinitely many pages")
        if self.domains is not None:
            return self._domain_pages(host)
        if self.config.hostile and hostile.is_hostile_host(host):
            return [p for p in map(self._hostile_page, [host] * 99, hostile.paths(host)) if p]
        if self.config.sitemaps and sitemap_web.is_sitemap_host(host):
            return [p for p in (_sitemap_page(host, q) for q in sitemap_web.paths(host)) if p]
        farm = policy.farm_host_index(host)
        if farm is not None and farm < self.config.farm_hosts:
            return [self._farm_page(farm, n) for n in range(self.config.farm_pages_per_host)]
        plan = self._plan(host)
        pages = [self._page(plan.index, n) for n in range(len(plan.paths))]
        if plan.sitemaps is not None:
            added = (_host_sitemap_page(plan.sitemaps, path) for path in plan.sitemaps.paths())
            pages += [page for page in added if page]
        return pages

    def status(self, url: str) -> int:
        """The HTTP status a GET of canonical ``url`` answers."""
        host, path = split_url(url)
        if not self.is_host(host):
            return 502
        if path == "/robots.txt":
            return self.robots_rules(host).status
        page = self.page(url)
        return page.status if page else 404

    def seeds(self, count: int | None = None) -> list[str]:
        """Home pages of the first ``count`` hosts (all hosts if None): a reasonable seed list.
        With the multi-domain profile: of ``count`` hosts in a seeded order
        (``multi_domain_seed_sites`` if None)."""
        if self.domains is not None:
            return self.domains.seeds(count)
        hosts = self.config.hosts if count is None else min(count, self.config.hosts)
        return [f"http://{host_name(i)}/" for i in range(hosts)]

    # -- the multi-domain profile -----------------------------------------------------------

    def url_kind(self, url: str) -> UrlKind:
        """What canonical ``url`` is on the multi-domain web: a real page, a redirect, a 404,
        robots.txt, off the web, or junk (:class:`synthweb.domains.UrlKind`)."""
        if self.domains is None:
            raise ValueError("url_kind needs the multi-domain profile")
        return self.domains.kind(url)

    def _domain_pages(self, host: str) -> list[Page]:
        """The real pages of a host of the multi-domain web (a farm host has no end)."""
        assert self.domains is not None
        if host in self.domains.farm_host_names():
            raise ValueError(f"{host} has infinitely many pages")
        prefix = f"http://{host}/"
        pages = (self.page(u) for u in self.domains.legit_urls() if u.startswith(prefix))
        return [page for page in pages if page is not None]

    # -- the URL-policy profile -------------------------------------------------------------

    def page_identity(self, url: str) -> str | None:
        """The canonical identity of ``url`` in any spelling (:func:`synthweb.urls.page_identity`),
        e.g. of the URL of a request log record; None if it is no ``http://`` URL."""
        return page_identity(url)

    def is_trap(self, url: str) -> bool:
        """Whether ``url`` (any spelling) is in the trap areas (:func:`synthweb.policy.is_trap`)."""
        return policy.is_trap(url)

    def is_farm(self, url: str) -> bool:
        """Whether ``url`` (any spelling) is in the link farm (:func:`synthweb.policy.is_farm`)."""
        return policy.is_farm(url)

    def trap_entry_points(self) -> frozenset[str]:
        """The trap URLs the normal web links to (empty with ``traps`` off)."""
        if not self.config.traps:
            return frozenset()
        return frozenset(f"http://{policy.TRAP_HOST}{p}" for p in policy.TRAP_ENTRY_PATHS)

    def farm_entry_points(self) -> frozenset[str]:
        """The farm URLs the normal web links to (empty with no farm)."""
        return frozenset(
            url
            for links in self._policy_extras().values()
            for _, url in links
            if policy.is_farm(url)
        )

    def popular_pages(self) -> list[str]:
        """The pages ``popular_pages`` makes popular, most linked first."""
        self._policy_extras()
        return list(self._popular)

    def in_links(self, url: str) -> int:
        """How many hosts other than its own have a page linking to ``url`` (any spelling).

        Counted over every HTML page of the normal hosts, reachable or not; farm and trap pages
        are not counted. :attr:`synthweb.truth.PolicyTruth.in_links` counts only the pages a
        crawl fetches. The first call builds every page of the web.
        """
        if self._in_links is None:
            sources: dict[str, set[str]] = {}
            for host in self.host_names():
                for page in self.pages(host):
                    for link in page.links:
                        if link.url and split_url(link.url)[0] != host:
                            sources.setdefault(link.url, set()).add(host)
            self._in_links = {target: len(hosts) for target, hosts in sources.items()}
        identity = page_identity(url)
        return self._in_links.get(identity, 0) if identity else 0

    # -- the near-duplicate profile ---------------------------------------------------------

    def near_duplicate_groups(self) -> list[tuple[str, ...]]:
        """The near-duplicate groups (:mod:`synthweb.neardup`): for each, the URLs of its pages,
        one article (the same words) in the boilerplate of several hosts, with its own date,
        counters, advertisement, tracking parameters and markup on each page; empty with the
        profile off. Every other page of the web, decoys and edited groups included, is a
        near-duplicate of none of them."""
        return self._near_duplicate_group_urls(edited=False)

    def near_duplicate_edited_groups(self) -> list[tuple[str, ...]]:
        """The edited groups: as :meth:`near_duplicate_groups`, and besides one to four words
        of the article changed on every copy after the first (``near_duplicate_edited_groups``
        of the configuration); a near-duplicate of none of the other pages."""
        return self._near_duplicate_group_urls(edited=True)

    def _near_duplicate_group_urls(self, edited: bool) -> list[tuple[str, ...]]:
        groups: dict[int, list[str]] = {}
        for url, placement in self._near_duplicate_urls():
            if placement.decoy < 0 and placement.edited == edited:
                groups.setdefault(placement.group, []).append(url)
        return [tuple(groups[g]) for g in sorted(groups)]

    def near_duplicate_decoys(self) -> list[str]:
        """The decoys of the near-duplicate profile: pages with the boilerplate of a group's
        pages and an article of their own (near-duplicates of nothing); empty with it off."""
        return [url for url, placement in self._near_duplicate_urls() if placement.decoy >= 0]

    def _near_duplicate_urls(self) -> list[tuple[str, neardup.Placement]]:
        found = []
        for index in self._near_duplicates:
            plan = self._plan(index)
            for number, placement in (plan.near_duplicates or {}).items():
                found.append((f"http://{plan.name}{plan.paths[number]}", placement))
        return found

    def _place_near_duplicates(self) -> dict[int, tuple[neardup.Placement, ...]]:
        config = self.config
        if not (config.near_duplicate_groups or config.near_duplicate_edited_groups):
            return {}
        hosts = [
            i
            for i, kind in enumerate(self._robots_kinds)
            if kind in (RobotsKind.NORMAL, RobotsKind.MISSING) and not self._showcasing(i)
        ]
        return neardup.place(
            config.seed,
            hosts,
            config.near_duplicate_groups,
            config.near_duplicate_group_size,
            config.near_duplicate_decoys_per_group,
            config.near_duplicate_edited_groups,
        )

    def _near_duplicate_links(self, index: int, number: int) -> tuple[Link, ...]:
        """Links the profile adds to a home page: its host's /news/ pages; the showcase's (host
        0's) also to the home page of every host that has some."""
        if number != 0:
            return ()
        plan = self._plan(index)
        links = [
            Link(plan.paths[n], f"http://{plan.name}{plan.paths[n]}")
            for n in sorted(plan.near_duplicates or ())
        ]
        if index == 0:
            links += [
                Link(f"http://{host_name(i)}/", f"http://{host_name(i)}/")
                for i in self._near_duplicates
                if i != 0
            ]
        return tuple(links)

    def _near_duplicate_page(self, plan: _HostPlan, number: int) -> neardup.ArticlePage:
        """The links and body of profile page ``number`` of ``plan``'s host: navigation to
        the home page and the first pages of the host, related links to its other /news/
        pages and to some of its own."""
        assert plan.near_duplicates is not None
        placement = plan.near_duplicates[number]
        own = [n for n in range(1, plan.drawable) if plan.kinds[n] in HTML_KINDS]
        nav = ("/", *(plan.paths[n] for n in own[:6]))
        related = [
            (plan.paths[n], neardup.headline(self.config.seed, other.article_key))
            for n, other in sorted(plan.near_duplicates.items())
            if n != number
        ][:5]
        related += [(plan.paths[n], "") for n in own[6:9]]
        return neardup.article_page(
            self.config.seed, plan.name, plan.paths[number], placement, nav, tuple(related)
        )

    def spellings(self, url: str) -> list[str]:
        """``url`` (canonical, on a host of this web) in every spelling of
        :data:`synthweb.policy.VARIANT_FORMS`, absolute, in that order (the forms that do not
        apply to it fall back to others, so some may repeat)."""
        rng = random.Random(f"synthweb:{self.config.seed}:spellings:{url}")
        return [policy.variant_href(f, url, rng, same_host=False) for f in policy.VARIANT_FORMS]

    def expected_crawl(
        self, seeds: Iterable[str], agent_token: str = DEFAULT_AGENT_TOKEN
    ) -> ExpectedCrawl:
        """What a correct polite crawl from ``seeds`` as ``agent_token`` fetches and avoids.

        See :mod:`synthweb.truth`.
        """
        return expected_crawl(self, seeds, agent_token)

    # -- answers ----------------------------------------------------------------------------

    def respond(self, host: str, path: str, *, accept_gzip: bool = False) -> Response:
        """What the server answers to a GET of ``path`` on ``host`` (lower-case, no port)."""
        key = (host, path, accept_gzip)
        response = self._responses.get(key)
        if response is None:
            response = self._build_response(host, path, accept_gzip)
            if len(self._responses) > 100_000:
                self._responses.clear()
            self._responses[key] = response
        return response

    def body(self, url: str) -> bytes:
        """The uncompressed body served for canonical ``url``."""
        host, path = split_url(url)
        return self.respond(host, path).body

    # -- building ---------------------------------------------------------------------------

    def _plan(self, host: str | int) -> _HostPlan:
        index = host if isinstance(host, int) else host_index(host)
        if index is None or not 0 <= index < self.config.hosts:
            raise KeyError(f"{host!r} is not a host of this web")
        plan = self._plans.get(index)
        if plan is None:
            plan = self._plans[index] = self._build_plan(index)
        return plan

    def _showcasing(self, index: int) -> bool:
        return self.config.showcase and index == 0

    def _build_plan(self, index: int) -> _HostPlan:
        config = self.config
        name = host_name(index)
        rng = random.Random(f"synthweb:{config.seed}:host:{index}")
        kind = self._robots_kinds[index]
        robots = build_robots(
            name,
            kind,
            random.Random(f"synthweb:{config.seed}:robots:{index}"),
            named_agents=config.named_agents,
            crawl_delays=config.crawl_delays,
            variant_index=self._robots_kinds[:index].count(RobotsKind.GARBAGE),
            showcase=self._showcasing(index),
        )
        mean = config.pages_per_host
        count = rng.randint(max(2, mean - mean // 2), mean + mean // 2)
        if kind is RobotsKind.CRAWL_DELAY:
            count = config.crawl_delay_host_pages
        fixed: dict[int, tuple[PageKind, str]] = {}
        if self._showcasing(index):
            count = max(count, len(_SHOWCASE_PAGES) + 5)
            fixed = {number: (k, path) for number, k, path in _SHOWCASE_PAGES}
        elif kind is RobotsKind.AGENT_GROUP:
            for number, section in ((1, "/no-bots/"), (2, "/for-bots/"), (3, "/private/")):
                fixed[number] = (PageKind.HTML, f"{section}{number}")

        kinds = [PageKind.HTML]
        paths = ["/"]
        for number in range(1, count):
            if number in fixed:
                page_kind, path = fixed[number]
            else:
                page_kind = self._draw_kind(rng, allow_slow=kind is not RobotsKind.CRAWL_DELAY)
                path = self._draw_path(
                    rng, number, page_kind, bot_sections=kind is RobotsKind.AGENT_GROUP
                )
            kinds.append(page_kind)
            paths.append(path)
        if config.url_variant_share > 0:
            # Pages whose spellings need a real escape and real query parameters.
            paths += [f"/caf%C3%A9/{count}", f"/catalog?item={count + 1}&lang=en"]
            kinds += [PageKind.HTML, PageKind.HTML]
        near_duplicates = None
        if index in self._near_duplicates:
            near_duplicates = {}
            for placement in self._near_duplicates[index]:
                near_duplicates[len(paths)] = placement
                paths.append(f"/news/{len(paths)}")
                kinds.append(PageKind.HTML)
        numbers = {path: number for number, path in enumerate(paths)}
        sitemaps = None
        if index in self._sitemap_indices:
            # Its own generator: the rest of the host is as without the profile.
            html_pages = [paths[n] for n in range(1, count) if kinds[n] in HTML_KINDS]
            sitemap_rng = random.Random(f"synthweb:{config.seed}:sitemaps:{index}")
            sitemaps = sitemap_web.normal_host_sitemaps(name, sitemap_rng, html_pages)
            robots = with_sitemaps(robots, sitemaps.named)
        return _HostPlan(
            index, name, robots, tuple(paths), tuple(kinds), numbers, count, sitemaps,
            near_duplicates,
        )

    def _draw_kind(self, rng: random.Random, *, allow_slow: bool) -> PageKind:
        roll = rng.random()
        for page_kind, field in _PAGE_KIND_SHARES:
            share = getattr(self.config, field)
            if roll < share:
                if page_kind is PageKind.SLOW_HTML and not allow_slow:
                    return PageKind.HTML
                return page_kind
            roll -= share
        return PageKind.HTML

    def _draw_path(
        self, rng: random.Random, number: int, kind: PageKind, *, bot_sections: bool
    ) -> str:
        config = self.config
        roll = rng.random()
        if kind is PageKind.SLOW_HTML:
            return f"/slow/{number}"
        if kind is PageKind.TEXT:
            return f"/t/{number}.txt"
        if kind is PageKind.BINARY:
            return f"/img/{number}.png"
        if kind is PageKind.REDIRECT:
            return f"/r/{number}"
        if kind is PageKind.ERROR:
            return f"/e/{number}"
        if roll < config.private_page_share:
            section = "/private/public/" if rng.random() < 1 / 3 else "/private/"
            return f"{section}{number}"
        if bot_sections and roll < config.private_page_share + config.bot_section_share:
            return f"{rng.choice(('/no-bots/', '/for-bots/'))}{number}"
        return f"/p/{number}"

    def _page(self, index: int, number: int) -> Page:
        page = self._pages.get((index, number))
        if page is None:
            page = self._pages[(index, number)] = self._build_page(index, number)
        return page

    def _build_page(self, index: int, number: int) -> Page:
        plan = self._plan(index)
        kind = plan.kinds[number]
        url = f"http://{plan.name}{plan.paths[number]}"
        if plan.near_duplicates and number in plan.near_duplicates:
            links = tuple(Link(*pair) for pair in self._near_duplicate_page(plan, number).links)
            return Page(url, kind, 200, "text/html; charset=utf-8", links=links)
        rng = random.Random(f"synthweb:{self.config.seed}:page:{index}:{number}")
        if kind is PageKind.REDIRECT:
            status, location = self._draw_redirect(rng, plan, number)
            return Page(
                url,
                kind,
                status,
                "text/html; charset=utf-8",
                location=location,
                redirect_to=canonical_url(location, url),
            )
        if kind is PageKind.ERROR:
            return Page(url, kind, 500, "text/html; charset=utf-8")
        if kind is PageKind.TEXT:
            return Page(url, kind, 200, "text/plain; charset=utf-8")
        if kind is PageKind.BINARY:
            return Page(url, kind, 200, "image/png")
        content_type = {
            PageKind.LATIN1_HTML: "text/html; charset=ISO-8859-1",
            PageKind.CP1251_HTML: "text/html",
        }.get(kind) or rng.choice(
            ("text/html; charset=utf-8",) * 5 + ("text/html;charset=UTF-8", "text/html")
        )
        delay = 0.0
        if kind is PageKind.SLOW_HTML:
            delay = round(rng.uniform(*self.config.slow_delay_range), 3)
        links = self._draw_links(rng, plan, number, url)
        if self.config.url_policy_on:
            links = self._policy_links(plan, number, url, links)
        if self.config.hostile and index == 0 and number == 0:
            links += tuple(Link(href, target) for href, target in hostile.entry_links())
        if self.config.sitemaps and index == 0 and number == 0:
            links += (Link(sitemap_web.ENTRY_URL, sitemap_web.ENTRY_URL),)
        if self._near_duplicates:
            links += self._near_duplicate_links(index, number)
        gzipped = rng.random() < self.config.gzip_share
        return Page(url, kind, 200, content_type, links=links, delay=delay, gzip=gzipped)

    def _draw_redirect(self, rng: random.Random, plan: _HostPlan, number: int) -> tuple[int, str]:
        if self._showcasing(plan.index) and number in _SHOWCASE_REDIRECTS:
            status, template = _SHOWCASE_REDIRECTS[number]
            other = host_name(1 if self.config.hosts > 1 else 0)
            return status, template.format(host=plan.name, other=other)
        status = rng.choice((301, 302, 307, 308))
        if self.config.hosts > 1 and rng.random() < 0.35:
            target = self._plan(self._other_host(rng, plan.index))
            path = target.paths[rng.randrange(target.drawable)]
            return status, f"http://{target.name}{path}"
        path = plan.paths[rng.choice([n for n in range(plan.drawable) if n != number])]
        return status, path if rng.random() < 0.5 else f"http://{plan.name}{path}"

    def _other_host(self, rng: random.Random, index: int) -> int:
        other = rng.randrange(self.config.hosts - 1)
        return other + 1 if other >= index else other

    def _draw_links(
        self, rng: random.Random, plan: _HostPlan, number: int, url: str
    ) -> tuple[Link, ...]:
        config = self.config
        source = plan.paths[number]
        # (href as written, canonical URL it resolves to; None for junk)
        drawn: list[tuple[str, str | None]] = []
        if number == 0:
            drawn += self._home_links(rng, plan)
        mean = config.outlinks_per_page
        dead = config.dead_link_share
        junk = dead + config.junk_link_share
        nohost = junk + config.nohost_link_share
        for _ in range(rng.randint(max(1, mean - mean // 2), mean + mean // 2)):
            roll = rng.random()
            if roll < dead:
                path = f"/missing/{rng.randrange(4)}"
                drawn.append((path, f"http://{plan.name}{path}"))
            elif roll < junk:
                drawn.append((rng.choice(_junk_hrefs(plan.name)), None))
            elif roll < nohost:
                target = f"http://{nohost_name(rng.randrange(3))}/p/{rng.randrange(10)}"
                drawn.append((target, target))
            elif config.hosts > 1 and rng.random() < config.cross_host_link_share:
                other = self._plan(self._other_host(rng, plan.index))
                path = other.paths[rng.randrange(other.drawable)]
                form = rng.choice(_CROSS_HOST_FORMS)
                drawn.append(
                    (_write_href(form, source, other.name, path), f"http://{other.name}{path}")
                )
            else:
                path = plan.paths[rng.randrange(plan.drawable)]
                form = rng.choice(_SAME_HOST_FORMS)
                drawn.append(
                    (_write_href(form, source, plan.name, path), f"http://{plan.name}{path}")
                )
        # The target is known as drawn; resolving every href here would triple the cost of a
        # page, so the unit tests check instead that canonical_url(href, page) gives the same.
        return tuple(
            Link(href, target if target is not None else _junk_target(href, url))
            for href, target in drawn
        )

    def _home_links(self, rng: random.Random, plan: _HostPlan) -> list[tuple[str, str | None]]:
        """The home page links to the first pages of its host; the showcase's to everything."""
        own = plan.name
        if not self._showcasing(plan.index):
            return [
                (_write_href(rng.choice(_SAME_HOST_FORMS), "/", own, path), f"http://{own}{path}")
                for path in plan.paths[1 : min(9, plan.drawable)]
            ]
        drawn = [
            (_write_href(_ALL_FORMS[n % len(_ALL_FORMS)], "/", own, path), f"http://{own}{path}")
            for n, path in enumerate(plan.paths[1 : len(_SHOWCASE_PAGES) + 1], start=1)
        ]
        drawn += [(_write_href(form, "/", own, "/p/1"), f"http://{own}/p/1") for form in _ALL_FORMS]
        drawn += [("/missing/1", f"http://{own}/missing/1")]
        drawn += [(f"http://{nohost_name(0)}/p/1", f"http://{nohost_name(0)}/p/1")]
        drawn += [(href, None) for href in _junk_hrefs(own)]
        if self.config.hosts > 1:
            other = host_name(1)
            drawn += [
                (_write_href(form, "/", other, "/"), f"http://{other}/")
                for form in _ALL_FORMS
                if form not in _SAME_HOST_ONLY
            ]
        return drawn

    # -- building the URL-policy profile ----------------------------------------------------

    def _policy_links(
        self, plan: _HostPlan, number: int, url: str, links: tuple[Link, ...]
    ) -> tuple[Link, ...]:
        """The links of a page with the profile: some respelled, the profile's own added.

        Draws from its own generator, so the rest of the page is as without the profile.
        """
        config = self.config
        rng = random.Random(f"synthweb:{config.seed}:policy:{plan.index}:{number}")
        out = list(links)
        showcase_home = self._showcasing(plan.index) and number == 0
        if config.url_variant_share > 0:
            if not showcase_home:  # the showcase's catalogue of forms stays as it is
                for i, link in enumerate(out):
                    target = link.url
                    if target is None or host_index(split_url(target)[0]) is None:
                        continue  # junk and hosts off the web keep their spelling
                    if rng.random() < config.url_variant_share:
                        form = rng.choice(policy.VARIANT_FORMS)
                        same = split_url(target)[0] == plan.name
                        href = policy.variant_href(form, target, rng, same_host=same)
                        out[i] = Link(href, target)
            if number == 0:
                for path in plan.paths[plan.drawable :]:
                    target = f"http://{plan.name}{path}"
                    out.append(Link(path, target))
                    for form in rng.sample(policy.VARIANT_FORMS, 2):
                        href = policy.variant_href(form, target, rng, same_host=True)
                        out.append(Link(href, target))
            if showcase_home:
                for target in (f"http://{plan.name}/p/1", f"http://{plan.name}/"):
                    for form in policy.VARIANT_FORMS:
                        href = policy.variant_href(form, target, rng, same_host=True)
                        out.append(Link(href, target))
                for path in plan.paths[plan.drawable :]:
                    target = f"http://{plan.name}{path}"
                    for form in ("percent-lower", "session-query", "session-path", "combined"):
                        href = policy.variant_href(form, target, rng, same_host=True)
                        out.append(Link(href, target))
        extras = self._policy_extras().get((plan.index, number), ())
        out += [Link(href, target) for href, target in extras]
        return tuple(out)

    def _policy_extras(self) -> dict[tuple[int, int], tuple[tuple[str, str], ...]]:
        """(host index, page number) -> links the profile adds to that page: the entry points
        of the traps and the farm, and the links to popular pages."""
        if self._extras is not None:
            return self._extras
        config = self.config
        extras: dict[tuple[int, int], list[tuple[str, str]]] = {}
        # Hosts whose "*" rules allow their home page (normal and 4xx robots.txt), shuffled;
        # the showcase first.
        eligible = [
            i
            for i, kind in enumerate(self._robots_kinds)
            if kind in (RobotsKind.NORMAL, RobotsKind.MISSING) and not self._showcasing(i)
        ]
        random.Random(f"synthweb:{config.seed}:policy-entries").shuffle(eligible)
        sources = ([0] if config.showcase else []) + eligible or [0]
        rng = random.Random(f"synthweb:{config.seed}:policy-extras")
        if config.traps:
            extras.setdefault((sources[0], 0), []).extend(
                (f"http://{policy.TRAP_HOST}{path}",) * 2 for path in policy.TRAP_ENTRY_PATHS
            )
        if config.farm_hosts:
            home = f"http://{policy.farm_host_name(0)}/"
            extras.setdefault((sources[0], 0), []).append((home, home))
            if config.farm_hosts > 1 and len(sources) > 1:
                pages = self._open_html_pages(sources[1]) or [0]
                second = f"http://{policy.farm_host_name(1)}/"
                extras.setdefault((sources[1], rng.choice(pages)), []).append((second, second))
        popular: list[str] = []
        if config.popular_pages:
            candidates = [
                (i, n)
                for i in sources
                for n in self._open_html_pages(i)
                if self._plan(i).paths[n].startswith("/p/")
            ]
            rng.shuffle(candidates)
            count = min(config.popular_pages, len(candidates))
            for j, (target_host, target_number) in enumerate(candidates[:count]):
                target_plan = self._plan(target_host)
                target = f"http://{target_plan.name}{target_plan.paths[target_number]}"
                popular.append(target)
                linkers = [
                    i
                    for i in range(config.hosts)
                    if i != target_host and not self._plan(i).robots.disallows_all
                ]
                rng.shuffle(linkers)
                share = (count - j) / count
                for linker in linkers[: max(1, round(share * len(linkers)))]:
                    pages = self._open_html_pages(linker)
                    if pages:
                        extras.setdefault((linker, rng.choice(pages)), []).append((target, target))
        self._popular = tuple(popular)
        self._extras = {key: tuple(links) for key, links in extras.items()}
        return self._extras

    def _open_html_pages(self, index: int) -> list[int]:
        """Numbers of the host's own HTML pages that its robots.txt lets any crawler fetch."""
        plan = self._plan(index)
        return [
            n
            for n in range(plan.drawable)
            if plan.kinds[n] in HTML_KINDS
            and plan.robots.allowed(plan.paths[n], "*")
            and plan.robots.allowed(plan.paths[n], "somebot")
        ]

    def _policy_page(self, host: str, path: str) -> Page | None:
        url = f"http://{host}{path}"
        if host == policy.TRAP_HOST:
            links = policy.trap_links(path)
            if links is None:
                return None
            return Page(
                url,
                PageKind.HTML,
                200,
                "text/html; charset=utf-8",
                links=tuple(Link(href, target) for href, target in links),
            )
        index = policy.farm_host_index(host)
        assert index is not None
        number = policy.farm_number(path, self.config.farm_pages_per_host)
        return None if number is None else self._farm_page(index, number)

    def _farm_page(self, index: int, number: int) -> Page:
        page = self._farm_pages.get((index, number))
        if page is None:
            config = self.config
            rng = random.Random(f"synthweb:{config.seed}:farm:{index}:{number}")
            links = policy.farm_links(
                rng,
                index,
                number,
                config.farm_hosts,
                config.farm_pages_per_host,
                config.farm_links_per_page,
            )
            url = f"http://{policy.farm_host_name(index)}{policy.farm_path(number)}"
            page = self._farm_pages[(index, number)] = Page(
                url,
                PageKind.HTML,
                200,
                "text/html; charset=utf-8",
                links=tuple(Link(href, target) for href, target in links),
            )
        return page

    # -- building the hostile profile -------------------------------------------------------

    def _hostile_page(self, host: str, path: str) -> Page | None:
        kind = hostile.role(host, path)
        if kind is None:
            return None
        url = f"http://{host}{path}"
        html_type = "text/html; charset=utf-8"
        if kind == "redirect":
            location = hostile.redirect_location(host, path)
            return Page(
                url, PageKind.REDIRECT, 302, html_type, location=location, redirect_to=location
            )
        links: tuple[Link, ...] = ()
        if kind == "home":
            links = tuple(Link(href, target) for href, target in hostile.home_links(host))
        elif kind == "retry":
            links = (Link("/", f"http://{host}/"),)
        return Page(url, PageKind.HTML, 200, html_type, links=links)

    def _hostile_response(self, host: str, path: str) -> Response:
        """The stateless answers of a hostile host (the server handles retries and streams)."""
        config = self.config
        robots = hostile.robots_answer(host, path)
        if robots is not None and host != hostile.ROBOTS_STALL_HOST:
            return Response(*robots)
        html_type = (("Content-Type", "text/html; charset=utf-8"),)
        kind = hostile.role(host, path)
        page = self._hostile_page(host, path)
        if page is None:
            return Response(404, html_type, _ERROR_404)
        if page.kind is PageKind.REDIRECT:
            assert page.location is not None
            headers = html_type + (("Location", page.location),)
            return Response(302, headers, b"<html><body><p>Moved</p></body></html>\n")
        if kind == "bad-gzip":
            headers = html_type + (("Content-Encoding", "gzip"),)
            return Response(200, headers, hostile.bad_gzip(), fault=kind)
        if kind == "bomb":
            headers = html_type + (("Content-Encoding", "gzip"),)
            return Response(200, headers, hostile.gzip_bomb(config.hostile_bomb_bytes), fault=kind)
        if kind == "big":
            return Response(
                200, html_type, hostile.big_page(config.hostile_big_page_bytes), fault=kind
            )
        body = hostile.html_page(page.url, tuple((lk.href, lk.url or "") for lk in page.links))
        if kind == "huge-header":
            return Response(200, html_type + hostile.huge_header(), body, fault=kind)
        if kind == "many-headers":
            return Response(200, html_type + hostile.many_headers(), body, fault=kind)
        return Response(200, html_type, body)

    def _build_response(self, host: str, path: str, accept_gzip: bool) -> Response:
        if self.domains is not None:
            return Response(*self.domains.response(host, path))
        if self.config.hostile and hostile.is_hostile_host(host):
            return self._hostile_response(host, path)
        if self.config.sitemaps and sitemap_web.is_sitemap_host(host):
            return Response(*sitemap_web.response(host, path))
        if not self.is_host(host):
            body = f"502 Bad Gateway: cannot resolve {host}\n".encode()
            return Response(502, (("Content-Type", "text/plain; charset=utf-8"),), body)
        if self.config.url_variant_share > 0:
            # Every spelling of a URL gets the page of its identity.
            identity = page_identity(f"http://{host}{path}")
            if identity is not None:
                path = split_url(identity)[1]
        if path == "/robots.txt":
            robots = self.robots_rules(host)
            return Response(robots.status, (("Content-Type", robots.content_type),), robots.body)
        if self._sitemap_indices and host_index(host) in self._sitemap_indices:
            extra = self._plan(host).sitemaps
            answer = extra.response(path) if extra else None
            if answer is not None:
                return Response(*answer)
        page = self.page(f"http://{host}{path}")
        if page is None:
            return Response(404, (("Content-Type", "text/html; charset=utf-8"),), _ERROR_404)
        headers = [("Content-Type", page.content_type)]
        if page.kind is PageKind.REDIRECT:
            assert page.location is not None
            headers.append(("Location", page.location))
            body = b"<html><body><p>Moved</p></body></html>\n"
            return Response(page.status, tuple(headers), body)
        if page.kind is PageKind.ERROR:
            return Response(500, tuple(headers), _ERROR_500)
        body = self._render(page)
        if page.gzip:
            headers.append(("Vary", "Accept-Encoding"))
            if accept_gzip:
                headers.append(("Content-Encoding", "gzip"))
                body = gzip.compress(body, mtime=0)
        return Response(page.status, tuple(headers), body, page.delay)

    def _render(self, page: Page) -> bytes:
        host, path = split_url(page.url)
        index = host_index(host)
        if index is None:
            title = html.escape(f"{host}{path}")
            meta = '<meta charset="utf-8">'
            return _render_html(title, _UTF8_TEXT, page.links, meta=meta).encode()
        plan = self._plan(host)
        number = plan.numbers[path]
        if plan.near_duplicates and number in plan.near_duplicates:
            return self._near_duplicate_page(plan, number).body
        rng = random.Random(f"synthweb:{self.config.seed}:body:{index}:{number}")
        if page.kind is PageKind.TEXT:
            text = (
                f"Plain text page {number} of {host}.\n"
                f"It mentions http://{host}/ in passing, but text/plain has no links.\n"
            )
            return text.encode()
        if page.kind is PageKind.BINARY:
            return _PNG_SIGNATURE + rng.randbytes(rng.randint(200, 2000))
        title = f"{host} page {number}"
        if page.kind is PageKind.BROKEN_HTML:
            return _render_broken(title, page.links, rng)
        if page.kind is PageKind.LATIN1_HTML:
            return _render_html(title, _LATIN1_TEXT, page.links, meta="").encode("iso-8859-1")
        if page.kind is PageKind.CP1251_HTML:
            meta = rng.choice(
                (
                    '<meta charset="windows-1251">',
                    '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">',
                )
            )
            return _render_html(title, _CP1251_TEXT, page.links, meta=meta).encode("cp1251")
        return _render_html(title, _UTF8_TEXT, page.links, meta='<meta charset="utf-8">').encode()


_ERROR_404 = b"<html><body><h1>404 Not Found</h1></body></html>\n"
_ERROR_500 = b"<html><body><h1>500 Internal Server Error</h1></body></html>\n"


def _domain_web(config: WebConfig) -> DomainWeb:
    return DomainWeb(
        config.seed,
        config.hosts,
        largest=config.multi_domain_largest_host,
        exponent=config.multi_domain_size_exponent,
        farm_hosts=config.multi_domain_farm_hosts,
        farm_clusters=config.multi_domain_farm_clusters,
        soft_404_hosts=config.multi_domain_soft_404_hosts,
        endless_spaces=config.multi_domain_endless_spaces,
        seed_sites=config.multi_domain_seed_sites,
    )


def _domain_page(domains: DomainWeb, url: str) -> Page | None:
    """A page of the multi-domain web as the model's :class:`Page`."""
    found = domains.page(url)
    if found is None:
        return None
    if found.location is not None:
        return Page(url, PageKind.REDIRECT, found.status, "text/html; charset=utf-8",
                    location=found.location, redirect_to=found.location)
    links = tuple(Link(anchor.href, anchor.url) for anchor in found.anchors)
    return Page(url, PageKind.HTML, found.status, "text/html; charset=utf-8", links=links)


def _sitemap_page(host: str, path: str) -> Page | None:
    """A page of a sitemap host for the model: HTML with its links, or a sitemap document
    (no links: :func:`synthweb.truth.expected_crawl` reads sitemaps itself)."""
    url = f"http://{host}{path}"
    status, headers, _ = sitemap_web.response(host, path)
    if status != 200:
        return None
    links = sitemap_web.page_links(host, path)
    kind = PageKind.HTML if links is not None else PageKind.TEXT
    return Page(url, kind, 200, headers[0][1], links=tuple(Link(u, u) for u in links or ()))


def _host_sitemap_page(extra: sitemap_web.HostSitemaps, path: str) -> Page | None:
    """A page the sitemap profile adds to a normal host, for the model: an orphan (HTML) or a
    sitemap document (no links: :func:`synthweb.truth.expected_crawl` reads sitemaps itself)."""
    answer = extra.response(path)
    if answer is None:
        return None
    status, headers, _ = answer
    links = extra.page_links(path) or ()
    kind = PageKind.HTML if path in extra.orphans else PageKind.TEXT
    url = f"http://{extra.host}{path}"
    return Page(url, kind, status, headers[0][1], links=tuple(Link(u, u) for u in links))


def _hostile_robots(host: str) -> RobotsFile:
    """What the robots.txt of a hostile host means (see :mod:`synthweb.hostile`)."""
    text = "text/plain; charset=utf-8"
    if host == hostile.ROBOTS_STALL_HOST:
        # Never answered: the model says 504 (what a proxy would), RFC 9309 says disallow all.
        return RobotsFile(host, RobotsKind.UNAVAILABLE, "stall", 504, text, b"", ())
    status, _, body = hostile.robots_answer(host, "/robots.txt") or (200, (), hostile.ALLOW_ALL)
    if host == hostile.ROBOTS_MOVED_HOST:
        groups: tuple[RobotsGroup, ...] = (RobotsGroup(("*",), (Rule(False, "/secret/"),)),)
        target = hostile.robots_answer(host, "/robots-moved.txt")
        assert target is not None
        return RobotsFile(host, RobotsKind.NORMAL, "redirect-once", status, text, target[2], groups)
    if host == hostile.ROBOTS_CHAIN_HOST:
        # More than 5 redirects: "unavailable" (allow all), and the last target allows all too.
        return RobotsFile(
            host, RobotsKind.NORMAL, "redirect-chain", status, text, hostile.ALLOW_ALL, ()
        )
    if host == hostile.ROBOTS_BIG_HOST:
        # Only the first 500 KiB count: Disallow: /late/ comes after them.
        groups = (RobotsGroup(("*",), (Rule(False, "/private/"),)),)
        return RobotsFile(host, RobotsKind.NORMAL, "over-500KiB", status, text, body, groups)
    return RobotsFile(
        host, RobotsKind.NORMAL, "allow-all", status, text, body, (RobotsGroup(("*",), ()),)
    )


def _assign_robots_kinds(config: WebConfig) -> list[RobotsKind]:
    kinds = [RobotsKind.NORMAL] * config.hosts
    others = list(range(1 if config.showcase else 0, config.hosts))
    random.Random(f"synthweb:{config.seed}:robots-kinds").shuffle(others)
    start = 0
    for kind, field in _ROBOTS_SHARES:
        share = getattr(config, field)
        # At least one host of each kind, and of each garbage variant, when hosts suffice.
        least = len(GARBAGE_VARIANTS) if kind is RobotsKind.GARBAGE else 1
        count = max(least, round(share * config.hosts)) if share > 0 else 0
        for index in others[start : start + count]:
            kinds[index] = kind
        start += count
    return kinds


def _assign_sitemap_hosts(config: WebConfig, kinds: list[RobotsKind]) -> frozenset[int]:
    """The normal hosts that name sitemaps (sitemap profile): ``sitemap_host_share`` of those
    whose robots.txt answers 200 with rules, the showcase apart, chosen from the seed."""
    if not config.sitemaps or config.sitemap_host_share <= 0:
        return frozenset()
    with_rules = (RobotsKind.NORMAL, RobotsKind.AGENT_GROUP, RobotsKind.CRAWL_DELAY)
    eligible = [
        i for i, kind in enumerate(kinds)
        if kind in with_rules and not (config.showcase and i == 0)
    ]
    random.Random(f"synthweb:{config.seed}:sitemap-hosts").shuffle(eligible)
    count = max(1, round(config.sitemap_host_share * len(eligible))) if eligible else 0
    return frozenset(eligible[:count])


def _junk_target(href: str, page_url: str) -> str | None:
    """An empty or fragment-only reference points to the page itself; the others nowhere."""
    return page_url if href in ("", "#top") else None


def _junk_hrefs(host: str) -> list[str]:
    return [
        f"mailto:webmaster@{host}",
        "javascript:void(0)",
        "tel:+1-555-0100",
        "",
        "#top",
        "http://[bad",
        f"ftp://{host}/pub/file.txt",
        "data:text/plain,hello",
    ]


def _write_href(form: str, source: str, host: str, path: str) -> str:
    """Write a link to ``http://{host}{path}`` from page ``source`` (same host for some forms)."""
    if form in ("relative", "dot-relative"):
        relative = posixpath.relpath(path, posixpath.dirname(source))
        if path.endswith("/") and not relative.endswith("/"):
            relative += "/"
        if form == "dot-relative" and not relative.startswith(".."):
            relative = "./" + relative
        return relative
    return {
        "root": path,
        "fragment": f"{path}#section-2",
        "absolute": f"http://{host}{path}",
        "absolute-fragment": f"http://{host}{path}#top",
        "upper": f"HTTP://{host.upper()}{path}",
        "port": f"http://{host}:80{path}",
        "protocol-relative": f"//{host}{path}",
        "bare-home": f"http://{host}" if path == "/" else f"http://{host}{path}",
    }[form]


def _anchor(href: str, text: str, style: int) -> str:
    quoted = html.escape(href, quote=True)
    if style == 1:
        return f"<a href='{quoted}'>{text}</a>"
    if style == 2 and href and not any(c in href for c in " \"'=<>`"):
        return f"<a href={href}>{text}</a>"
    if style == 3:
        return f'<A HREF="{quoted}" class="x">{text}</A>'
    return f'<a href="{quoted}">{text}</a>'


def _render_html(title: str, text: str, links: Iterable[Link], *, meta: str) -> str:
    items = "\n".join(
        f"<li>{_anchor(link.href, f'link {i}', 0)}</li>" for i, link in enumerate(links)
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head>{meta}<title>{title}</title></head>\n'
        f"<body><h1>{title}</h1>\n<p>{html.escape(text)}</p>\n<ul>\n{items}\n</ul>\n</body></html>\n"
    )


def _render_broken(title: str, links: tuple[Link, ...], rng: random.Random) -> bytes:
    # Unclosed elements, every way of quoting an attribute, and bytes that are not UTF-8
    # (and a NUL) between the links: a tolerant parser must still find every link. Nothing
    # that hides links from an HTML5 parser, such as an unclosed <title> or <script>.
    parts = [
        f"<html><head><title>{title}</title>\n<body><h1>{title}<p>broken page ".encode(),
        b"\xff\xfe\x80",
    ]
    for i, link in enumerate(links):
        anchor = _anchor(link.href, f"link {i}", i % 4)
        if i % 3 == 0:
            anchor = anchor.replace("</a>", "").replace("</A>", "")
        parts.append(f"\n<div><span>{anchor}".encode())
        if i % 5 == 2:
            parts.append(rng.choice((b"\xc3\x28", b"\xe2\x82", b"\x00", b"\x81\x8d")))
    parts.append(b"\n<table><tr><td>unclosed cell\n")
    return b"".join(parts)
