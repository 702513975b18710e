"""The parameters of a synthetic web (:class:`WebConfig`): its size, the shares of each kind
of host, page and link, and the profiles it turns on.

Every field is validated when the configuration is made; ``with_*_profile`` turn a profile on
with sensible values, and :meth:`WebConfig.to_json` / :meth:`WebConfig.from_json` carry a
configuration to the server's process.
"""

from __future__ import annotations

import dataclasses
import json
import time

from synthweb.model import PageKind
from synthweb.robots import RobotsKind

__all__ = ["PAGE_KIND_SHARES", "ROBOTS_KIND_SHARES", "WebConfig"]

#: The kinds a page is drawn from, with the field giving each one's share (the rest is HTML).
PAGE_KIND_SHARES = (
    (PageKind.BROKEN_HTML, "broken_html_share"),
    (PageKind.LATIN1_HTML, "latin1_html_share"),
    (PageKind.CP1251_HTML, "cp1251_html_share"),
    (PageKind.SLOW_HTML, "slow_page_share"),
    (PageKind.TEXT, "text_page_share"),
    (PageKind.BINARY, "binary_page_share"),
    (PageKind.REDIRECT, "redirect_share"),
    (PageKind.ERROR, "error_page_share"),
)

#: The kinds of robots.txt a host is given, with the field giving each one's share, in this
#: order of priority when there are too few hosts for every kind (the rest are normal).
ROBOTS_KIND_SHARES = (
    (RobotsKind.AGENT_GROUP, "agent_group_host_share"),
    (RobotsKind.UNAVAILABLE, "unavailable_robots_host_share"),
    (RobotsKind.CRAWL_DELAY, "crawl_delay_host_share"),
    (RobotsKind.MISSING, "missing_robots_host_share"),
    (RobotsKind.GARBAGE, "garbage_robots_host_share"),
)


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
    #: Host 0 shows every feature at fixed paths (see :mod:`synthweb.graph`).
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
        for name, shares in (("page kind", PAGE_KIND_SHARES), ("robots kind", ROBOTS_KIND_SHARES)):
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
