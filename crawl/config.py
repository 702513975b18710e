"""Crawl configuration: one commented YAML file loaded once into frozen dataclasses.

``conf/crawler.yaml`` documents every key with its default; the defaults also live here, on the
dataclass fields, and a unit test keeps the two equal. :func:`load_config` reads a file (or
none, for the defaults), applies ``section.key=value`` overrides from the command line and
validates everything at start: an invalid value raises :class:`ConfigError` naming its key.
Each operator receives only its own section.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import re
import typing
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "AdmissionSection",
    "Config",
    "ConfigError",
    "FOLLOW_MODES",
    "ConnectTo",
    "NearDupSection",
    "CrawlDbSection",
    "CrawlSection",
    "FetchSection",
    "ParseSection",
    "PolitenessSection",
    "PrioritySection",
    "RecrawlOverride",
    "RecrawlSection",
    "RobotsSection",
    "ScopeSection",
    "SitemapsSection",
    "UrlsSection",
    "UserAgentSection",
    "WarcSection",
    "load_config",
    "parse_override",
    "parse_recrawl_overrides",
]


#: How far links are followed (``scope.follow``): any host, the same host, the same registered
#: domain, the listed domains.
FOLLOW_MODES = ("any", "host", "domain", "listed")
#: What a fetched page passes on to its links (``priority.flow``).
FLOWS = ("cash", "shares")


class ConfigError(ValueError):
    """A configuration value is missing, unknown or invalid; the message names the key."""


def _ipv4_address(value: str) -> bool:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


def _positive(value: float) -> bool:
    return value > 0 and math.isfinite(value)


def _non_negative(value: float) -> bool:
    return value >= 0 and math.isfinite(value)


@dataclasses.dataclass(frozen=True)
class UserAgentSection:
    """How the crawler names itself to servers and which robots.txt group it obeys."""

    product: str = "pyflink-crawler"
    version: str = "0.1"
    contact_url: str = "https://github.com/pyflink-crawler/pyflink-crawler"

    @property
    def header(self) -> str:
        """The User-Agent header: product token, version and a contact URL."""
        return f"{self.product}/{self.version} (+{self.contact_url})"

    def _validate(self) -> None:
        if not re.fullmatch(r"[A-Za-z_-]+", self.product):
            raise ConfigError(
                "user_agent.product: must be a product token of ASCII letters, '-' or '_' "
                f"(RFC 9309 2.2.1), got {self.product!r}"
            )
        if not self.version or any(c.isspace() for c in self.version):
            raise ConfigError(
                f"user_agent.version: must be non-empty without spaces, got {self.version!r}"
            )
        parts = urllib.parse.urlsplit(self.contact_url)
        if parts.scheme not in ("http", "https", "mailto") or not (parts.netloc or parts.path):
            raise ConfigError(
                "user_agent.contact_url: must be an http(s) or mailto URL, "
                f"got {self.contact_url!r}"
            )


@dataclasses.dataclass(frozen=True)
class PolitenessSection:
    """Spacing of requests to one host (invariant 3, ARCHITECTURE.md)."""

    delay_seconds: float = 1.0
    max_crawl_delay_seconds: float = 30.0
    response_time_factor: float = 2.0
    retry_after_max_seconds: float = 3600.0
    backoff_after_failures: int = 2
    backoff_base_seconds: float = 5.0
    backoff_max_seconds: float = 600.0
    suspend_after_failures: int = 10
    suspend_seconds: float = 1800.0
    max_fetch_attempts: int = 3
    group_by: str = "host"
    domain_quota_pages: int = 0
    domain_quota_seconds: float = 3600.0

    @property
    def fetch_routing(self) -> str:
        """What the fetch stage's keys keep together in one subtask (crawl/urls/routing.py): the
        politeness group, or the registered domain when a domain quota needs it."""
        if self.group_by == "host" and self.domain_quota_pages:
            return "domain"
        return self.group_by

    def _validate(self) -> None:
        _check(self, "politeness", "group_by", lambda v: v in ("host", "domain", "ip"),
               "host, domain or ip")
        _check(self, "politeness", "delay_seconds", _non_negative, "a number >= 0")
        _check(self, "politeness", "max_crawl_delay_seconds", _non_negative, "a number >= 0")
        _check(self, "politeness", "response_time_factor", _non_negative, "a number >= 0")
        for key in ("retry_after_max_seconds", "backoff_base_seconds", "backoff_max_seconds",
                    "suspend_seconds"):
            _check(self, "politeness", key, _non_negative, "a number >= 0")
        _check(self, "politeness", "backoff_max_seconds",
               lambda v: v >= self.backoff_base_seconds, "a number >= backoff_base_seconds")
        _check(self, "politeness", "backoff_after_failures", lambda v: 1 <= v <= 1000,
               "an integer from 1 to 1000")
        _check(self, "politeness", "suspend_after_failures", lambda v: 0 <= v <= 1_000_000,
               "an integer from 0 (never) to 1000000")
        _check(self, "politeness", "max_fetch_attempts", lambda v: 1 <= v <= 100,
               "an integer from 1 (no retries) to 100")
        _check(self, "politeness", "domain_quota_pages", lambda v: 0 <= v <= 1_000_000,
               "an integer from 0 (no quota) to 1000000")
        _check(self, "politeness", "domain_quota_seconds", lambda v: v > 0, "a number > 0")
        if self.domain_quota_pages and self.group_by == "ip":
            raise ConfigError(
                "politeness.domain_quota_pages: needs group_by host or domain (grouped by IP "
                "address, the hosts of a domain may be fetched by different subtasks)"
            )


#: A media type or range in ``fetch.accept_content_types`` (RFC 9110 tokens, no parameters).
_MEDIA_RANGE = re.compile(r"[A-Za-z0-9!#$&^_.+-]+/(?:[A-Za-z0-9!#$&^_.+-]+|\*)|\*/\*")


@dataclasses.dataclass(frozen=True, slots=True)
class ConnectTo:
    """One ``fetch.connect_to`` rule, curl's ``--connect-to HOST:PORT:ADDRESS:PORT``: requests
    for ``host`` (any host when empty) on ``port`` (any port when None) connect to ``address``
    (an IP address) on ``to_port`` (the requested port when None). The URL, the Host header
    and everything recorded stay those of the requested host."""

    host: str
    port: int | None
    address: str
    to_port: int | None

    @classmethod
    def parse(cls, entry: str) -> ConnectTo:
        """Parse ``HOST:PORT:ADDRESS:PORT`` (IPv6 addresses in brackets); ValueError if bad."""
        match = _CONNECT_TO.fullmatch(entry.strip())
        if match is None:
            raise ValueError(
                f"{entry!r} is not HOST:PORT:ADDRESS:PORT (host and ports may be empty, an IPv6 "
                "address goes in brackets)"
            )
        host, port, address, to_port = match.groups()
        try:
            ipaddress.ip_address(address.strip("[]"))
        except ValueError:
            raise ValueError(f"{entry!r}: {address!r} is not an IP address") from None
        ports = []
        for text in (port, to_port):
            if text and not 0 < int(text) < 65536:
                raise ValueError(f"{entry!r}: port {text} is out of range")
            ports.append(int(text) if text else None)
        return cls(host.lower().rstrip("."), ports[0], address.strip("[]"), ports[1])

    def matches(self, host: str, port: int) -> bool:
        """Whether a request for ``host`` on ``port`` goes to this rule's address."""
        return (not self.host or self.host == host.lower()) and self.port in (None, port)


_CONNECT_TO = re.compile(r"([^:\[\]\s]*):(\d*):(\[[^\]\s]*\]|[^:\[\]\s]+):(\d*)")


@dataclasses.dataclass(frozen=True)
class FetchSection:
    """The HTTP client: timeouts, size and header limits, proxy, concurrency, the address
    guard, the DNS cache and the accepted content types (see crawl/http/)."""

    connect_timeout_seconds: float = 10.0
    read_timeout_seconds: float = 20.0
    total_timeout_seconds: float = 60.0
    max_content_bytes: int = 10 * 1024 * 1024
    proxy: str = ""
    max_connections: int = 256
    allow_private_addresses: bool = False
    dns_cache_seconds: float = 300.0
    dns_negative_cache_seconds: float = 60.0
    max_decompression_ratio: float = 100.0
    max_header_bytes: int = 16384
    max_headers: int = 256
    accept_content_types: tuple[str, ...] = ()
    connect_to: tuple[str, ...] = ()
    #: Ask each host, after its first page, for a path it cannot have, to tell its soft 404s
    #: (crawl/content/soft404.py).
    not_found_probe: bool = True

    @property
    def connect_to_rules(self) -> tuple[ConnectTo, ...]:
        """``connect_to`` parsed (validated at load, so this does not raise)."""
        return tuple(ConnectTo.parse(entry) for entry in self.connect_to)

    def _validate(self) -> None:
        for entry in self.connect_to:
            try:
                ConnectTo.parse(entry)
            except ValueError as error:
                raise ConfigError(f"fetch.connect_to: {error}") from None
        for key in ("connect_timeout_seconds", "read_timeout_seconds", "total_timeout_seconds"):
            _check(self, "fetch", key, _positive, "a number > 0")
        _check(self, "fetch", "max_content_bytes", lambda v: v >= 1024, "an integer >= 1024")
        for key in ("dns_cache_seconds", "dns_negative_cache_seconds"):
            _check(self, "fetch", key, _non_negative, "a number >= 0 (0: no caching)")
        _check(self, "fetch", "max_decompression_ratio", lambda v: v == 0 or v >= 1,
               "0 (no limit) or a number >= 1")
        _check(self, "fetch", "max_header_bytes", lambda v: 1024 <= v <= 1024 * 1024,
               "an integer from 1024 to 1048576")
        _check(self, "fetch", "max_headers", lambda v: 1 <= v <= 10_000,
               "an integer from 1 to 10000")
        for media_range in self.accept_content_types:
            if not _MEDIA_RANGE.fullmatch(media_range):
                raise ConfigError(
                    f"fetch.accept_content_types: {media_range!r} is not a media type "
                    "(type/subtype, type/* or */*)"
                )
        _check(
            self,
            "fetch",
            "max_connections",
            lambda v: 1 <= v <= 100_000,
            "an integer from 1 to 100000",
        )
        if self.proxy:
            parts = urllib.parse.urlsplit(self.proxy)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError(f"fetch.proxy: must be an http:// proxy URL, got {self.proxy!r}")
            try:
                parts.port  # noqa: B018 - validates the port
            except ValueError as error:
                raise ConfigError(f"fetch.proxy: {error}: {self.proxy!r}") from None


@dataclasses.dataclass(frozen=True)
class RobotsSection:
    """robots.txt caching (invariant 4, ARCHITECTURE.md)."""

    ttl_seconds: float = 86400.0
    unavailable_retry_seconds: float = 600.0
    unavailable_attempts: int = 3
    max_bytes: int = 512 * 1024

    def _validate(self) -> None:
        _check(self, "robots", "ttl_seconds", _positive, "a number > 0")
        _check(self, "robots", "unavailable_retry_seconds", _positive, "a number > 0")
        _check(self, "robots", "unavailable_attempts", lambda v: 1 <= v <= 100,
               "an integer from 1 to 100")
        _check(self, "robots", "max_bytes", lambda v: v >= 1024, "an integer >= 1024")


@dataclasses.dataclass(frozen=True)
class SitemapsSection:
    """Sitemaps named by robots.txt: how far they are followed (see crawl/content/sitemaps.py)."""

    enabled: bool = True
    max_per_robots: int = 50
    max_bytes: int = 50 * 1024 * 1024
    max_urls: int = 50_000
    max_decompression_ratio: float = 200.0
    max_nesting: int = 2

    def _validate(self) -> None:
        _check(self, "sitemaps", "max_per_robots", lambda v: 1 <= v <= 10_000,
               "an integer from 1 to 10000")
        _check(self, "sitemaps", "max_bytes", lambda v: v >= 1024, "an integer >= 1024")
        _check(self, "sitemaps", "max_urls", lambda v: v >= 1, "an integer >= 1")
        _check(self, "sitemaps", "max_decompression_ratio", lambda v: v == 0 or v >= 1,
               "0 (no limit) or a number >= 1")
        _check(self, "sitemaps", "max_nesting", lambda v: 1 <= v <= 10,
               "an integer from 1 to 10")


@dataclasses.dataclass(frozen=True)
class WarcSection:
    """The WARC output."""

    prefix: str = "crawl"
    max_file_bytes: int = 1_000_000_000
    operator: str = ""
    metadata_records: bool = True
    revisits: bool = True
    revisit_min_bytes: int = 1
    #: A payload's first capture is forgotten this long after the payload was last seen
    #: (0: never); 90 days.
    revisit_window_seconds: float = 90 * 86_400.0

    def _validate(self) -> None:
        if not self.prefix or not all(c.isalnum() or c in "-_." for c in self.prefix):
            raise ConfigError(
                f"warc.prefix: must be letters, digits, '-', '_' or '.', got {self.prefix!r}"
            )
        _check(self, "warc", "max_file_bytes", lambda v: v >= 64 * 1024, "an integer >= 65536")
        _check(self, "warc", "revisit_min_bytes", lambda v: v >= 1, "an integer >= 1")
        _check(self, "warc", "revisit_window_seconds", lambda v: v == 0 or v >= 1,
               "a number of seconds >= 1 (0: never forget)")


@dataclasses.dataclass(frozen=True)
class CrawlSection:
    """What to crawl, where to write it, and when a bounded crawl ends."""

    seeds: str = ""
    output_dir: str = "crawl-out"
    max_pages: int = 0
    idle_seconds: float = 30.0
    #: Stop (with a savepoint) after this long; 0: no time limit.
    max_seconds: float = 0.0
    parallelism: int = 1
    vnodes: int = 256
    progress_seconds: float = 5.0
    recent_urls: int = 100_000
    #: The C allocator of the local MiniCluster's JVM (:mod:`job.native_allocator`).
    native_allocator: str = "auto"
    #: Write ``report.html`` (:mod:`crawl.report`) when a local crawl ends.
    report: bool = True
    #: The address every endpoint of a local run's Flink binds to (REST API, blob server, RPC,
    #: data port): this machine only, unless opened deliberately (``job.local_settings``).
    flink_bind_address: str = "127.0.0.1"
    #: What runs a local crawl (:mod:`job.local_cluster`): ``auto``, the MiniCluster at
    #: parallelism 1 and a standalone cluster of one TaskManager a subtask above it;
    #: ``minicluster``; ``taskmanagers``.
    local_runtime: str = "auto"

    def _validate(self) -> None:
        _check(self, "crawl", "max_pages", lambda v: v >= 0, "an integer >= 0 (0: no budget)")
        _check(self, "crawl", "idle_seconds", _non_negative, "a number >= 0 (0: never stop)")
        _check(self, "crawl", "max_seconds", _non_negative, "a number >= 0 (0: no limit)")
        _check(self, "crawl", "parallelism", lambda v: 1 <= v <= 1024, "an integer from 1 to 1024")
        _check(self, "crawl", "vnodes", lambda v: 1 <= v <= 32768, "an integer from 1 to 32768")
        _check(self, "crawl", "progress_seconds", _positive, "a number > 0")
        _check(self, "crawl", "recent_urls", lambda v: v >= 0, "an integer >= 0 (0: no cache)")
        _check(self, "crawl", "native_allocator", lambda v: v in ("auto", "jemalloc", "malloc"),
               "auto, jemalloc or malloc")
        _check(self, "crawl", "local_runtime",
               lambda v: v in ("auto", "minicluster", "taskmanagers"),
               "auto, minicluster or taskmanagers")
        _check(self, "crawl", "flink_bind_address", _ipv4_address,
               "an IPv4 address (127.0.0.1: this machine only, 0.0.0.0: every interface)")
        if self.parallelism > self.vnodes:
            raise ConfigError(
                f"crawl.parallelism: {self.parallelism} exceeds crawl.vnodes ({self.vnodes})"
            )
        if not self.output_dir:
            raise ConfigError("crawl.output_dir: must not be empty")


@dataclasses.dataclass(frozen=True)
class UrlsSection:
    """How URLs are normalised (see crawl/urls/normalize.py). Fixed for the life of a crawl: the
    rules decide every URL's identity in the crawl DB."""

    sort_query: bool = False
    strip_params: tuple[str, ...] = (
        "jsessionid", "phpsessid", "aspsessionid", "sid", "sessionid", "session_id", "sessid",
        "cfid", "cftoken", "oscsid", "zenid",
    )

    def _validate(self) -> None:
        for name in self.strip_params:
            if not name or any(c in name for c in "=&;#?/ "):
                raise ConfigError(f"urls.strip_params: {name!r} is not a parameter name")



@dataclasses.dataclass(frozen=True)
class ScopeSection:
    """Which discovered URLs enter the crawl (see crawl/urls/scope.py)."""

    follow: str = "any"
    domains: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    schemes: tuple[str, ...] = ("http", "https")
    skip_extensions: tuple[str, ...] = ()
    max_url_length: int = 2048
    max_depth: int = 0
    max_path_segments: int = 32
    max_segment_repeats: int = 3
    #: A run of two or more path segments repeated back to back more than this many times
    #: (/faq/help/faq/help/: a relative link resolved one level deeper each time).
    max_run_repeats: int = 1
    max_query_params: int = 32
    path_ascending: bool = False
    #: Which URLs the policy refuses get a line in the crawl log (status REJECTED, with the
    #: reason and the discovery path): "traps" (the trap rules, and URLs too deep or too
    #: long: what the limits cost the crawl), "all" (every refusal: a crawl kept to its hosts
    #: then logs every link off them) or "none" (counted only, as every refusal is).
    log_refusals: str = "traps"

    def _validate(self) -> None:
        _check(self, "scope", "follow", lambda v: v in FOLLOW_MODES,
               f"one of {', '.join(FOLLOW_MODES)}")
        if self.follow == "listed" and not self.domains:
            raise ConfigError("scope.domains: must list at least one domain when follow is listed")
        for key in ("include", "exclude"):
            for pattern in getattr(self, key):
                try:
                    re.compile(pattern)
                except re.error as error:
                    raise ConfigError(
                        f"scope.{key}: {pattern!r} is not a regular expression: {error}"
                    ) from None
        _check(self, "scope", "schemes", lambda v: v and set(v) <= {"http", "https"},
               "a non-empty list of http and https")
        _check(self, "scope", "max_url_length", lambda v: 16 <= v <= 2048,
               "an integer from 16 to 2048")
        for key in ("max_depth", "max_path_segments", "max_segment_repeats", "max_run_repeats",
                    "max_query_params"):
            _check(self, "scope", key, lambda v: v >= 0, "an integer >= 0 (0: no limit)")
        _check(self, "scope", "log_refusals", lambda v: v in ("traps", "all", "none"),
               "one of traps, all, none")


#: The link kinds ``parse.follow`` may name, in the link table's order (crawl/content/links.py).
LINK_KINDS = (
    "a", "area", "link", "stylesheet", "icon", "frame", "img", "script", "embed", "media",
    "refresh",
)


@dataclasses.dataclass(frozen=True)
class ParseSection:
    """Link extraction: which kinds of links are followed, how many per page, and whether
    nofollow is obeyed (see crawl/content/links.py)."""

    follow: tuple[str, ...] = LINK_KINDS
    max_outlinks: int = 1000
    obey_nofollow: bool = True

    def _validate(self) -> None:
        for kind in self.follow:
            if kind not in LINK_KINDS:
                raise ConfigError(
                    f"parse.follow: {kind!r} is not a link kind (known: {', '.join(LINK_KINDS)})"
                )
        _check(self, "parse", "max_outlinks", lambda v: 0 <= v <= 1_000_000,
               "an integer from 0 (no limit) to 1000000")


@dataclasses.dataclass(frozen=True)
class AdmissionSection:
    """Budgets kept by the crawl DB: how much of the crawl each registered domain and each URL
    shape of a host may take; what is over is deferred (see crawl/crawldb/budgets.py)."""

    #: A registered domain's URLs released at most: domain_base_urls, plus
    #: domain_urls_per_linking_domain for each other domain linking to it that it does not
    #: link back to (at most max_linking_domains of them). 0: no domain budget.
    domain_base_urls: int = 100
    domain_urls_per_linking_domain: int = 100
    max_linking_domains: int = 1000
    #: And at most domain_trial_urls, plus domain_urls_per_good_page for each page of the
    #: domain that proved good (2xx, neither a copy of another URL's page, nor a
    #: near-duplicate, nor a page repeating a few words). 0: no such bound.
    domain_trial_urls: int = 10
    domain_urls_per_good_page: float = 2.0
    #: The domains of the seeds have no budget.
    seed_domains_unbudgeted: bool = True
    #: A host's URLs of one shape released at most: shape_base_urls, plus
    #: shape_urls_per_good_page for each of its pages that proved good (for a path's shape,
    #: one for each URL answered, whatever the answer, and the rest for a good page), but no
    #: more than its new URLs that brought a number or a parameter the shape had not shown.
    #: 0: no shape budget.
    shape_base_urls: int = 10
    shape_urls_per_good_page: float = 2.0
    #: A registered domain gets at most trial_pages URLs (and one more for each that gave no
    #: page, up to domain_trial_urls) until one of its pages proves good, and a host's shape
    #: of URLs with a query whose first trial_pages pages fetched (2xx) are none of them good
    #: no more than that many (a link farm's keyword pages, a session id's copies). 0: off.
    trial_pages: int = 3

    def _validate(self) -> None:
        for key in ("domain_base_urls", "domain_urls_per_linking_domain", "domain_trial_urls",
                    "shape_base_urls", "trial_pages"):
            _check(self, "admission", key, lambda v: v >= 0, "an integer >= 0 (0: off)")
        _check(self, "admission", "max_linking_domains", lambda v: v >= 1, "an integer >= 1")
        for key in ("domain_urls_per_good_page", "shape_urls_per_good_page"):
            _check(self, "admission", key, lambda v: 0 <= v <= 1000, "a number from 0 to 1000")


@dataclasses.dataclass(frozen=True)
class CrawlDbSection:
    """The crawl DB: one DRUM per partition (see crawl/crawldb/partition.py)."""

    partitions: int = 16
    buffer_ops: int = 16384
    buffer_payload_bytes: int = 4 * 1024 * 1024
    flush_seconds: float = 0.5
    block_records: int = 4096
    max_deltas: int = 8
    max_archives: int = 4
    file_grace_seconds: float = 180.0
    fsync: bool = True

    def _validate(self) -> None:
        _check(self, "crawldb", "partitions", lambda v: 1 <= v <= 32768,
               "an integer from 1 to 32768")
        _check(self, "crawldb", "buffer_ops", lambda v: v >= 1, "an integer >= 1")
        _check(self, "crawldb", "buffer_payload_bytes", lambda v: v >= 65536,
               "an integer >= 65536")
        _check(self, "crawldb", "flush_seconds", _positive, "a number > 0")
        _check(self, "crawldb", "block_records", lambda v: v >= 1, "an integer >= 1")
        _check(self, "crawldb", "max_deltas", lambda v: v >= 1, "an integer >= 1")
        _check(self, "crawldb", "max_archives", lambda v: v >= 1, "an integer >= 1")
        _check(self, "crawldb", "file_grace_seconds", _positive, "a number > 0")


@dataclasses.dataclass(frozen=True)
class PrioritySection:
    """Which URLs go first (see crawl/urls/priority.py): scores, and how the crawl DB releases
    URLs."""

    #: Rank URLs and release each host's best few at a time (False: every new URL goes to the
    #: frontier at once, in discovery order). Fixed for the life of a crawl.
    enabled: bool = True
    #: The cash (importance) a seed brings into the crawl...
    seed_boost: float = 10.0
    #: ...and a sitemap a robots.txt names (split over its entries as a page's over its links).
    sitemap_boost: float = 1.0
    #: What a fetched page passes on to its links, split evenly: "shares", one share whatever
    #: it had, or "cash", the cash it had (crawl/urls/priority.py).
    flow: str = "shares"
    #: Under a page budget, a new URL goes only if it ranks among the best of every URL
    #: waiting, this many times the pages the budget has left after what the frontier holds
    #: (crawl/crawldb/cutoff.py); the others wait their turn. 0: no such cutoff (the
    #: default: see BENCHMARKS.md, "The budget cutoff").
    budget_cutoff: float = 0.0
    #: A new URL whose cash is below this share of the typical cash of the pages the crawl
    #: fetches now is deferred (budget:importance), on whatever host it is. 0: never (the
    #: default: a crawl that runs dry ends with such URLs unfetched, real pages among them).
    defer_below: float = 0.0
    #: URLs of one host handed to the frontier and not fetched yet, at most.
    host_window: int = 16
    #: URLs one crawl DB partition releases at most per release, best first (per
    #: release_seconds: a release that comes later, after a long pass, takes more).
    release_batch: int = 1000
    #: A partition releases at most this often...
    release_seconds: float = 1.0
    #: ...and spends at most this share of the time in passes over its DRUM (a release that
    #: passes over a large partition's runs makes it wait longer before the next; the merge
    #: of the operations that came with it does not count).
    release_max_share: float = 0.02
    #: The frontier (URLs the fetch stage holds: queued and in flight) is kept at most this
    #: many seconds of fetching, at the rate the crawl fetches now (crawl/crawldb/
    #: frontier_bound.py): URLs wait in the crawl DB, ranked, rather than in host queues. 0:
    #: no bound (URLs go as fast as the releases allow).
    frontier_seconds: float = 30.0
    #: ...and may hold this many URLs whatever the rate (a crawl starts before any is known).
    frontier_min_urls: int = 2000
    #: Records of the URLs due soonest (and of those QUEUED) a partition keeps in memory, at
    #: most, to release from without reading its DRUM (drum/due_window.py; 144 bytes each);
    #: a pass over the DRUM builds the window again when it runs out. 0: every release is a
    #: pass over the DRUM.
    release_window: int = 20_000

    def _validate(self) -> None:
        for key in ("seed_boost", "sitemap_boost"):
            _check(self, "priority", key, _non_negative, "a number >= 0")
        _check(self, "priority", "flow", lambda v: v in FLOWS, "cash or shares")
        _check(self, "priority", "defer_below", lambda v: 0 <= v < 1, "a number from 0, below 1")
        _check(self, "priority", "budget_cutoff", lambda v: v == 0 or v >= 1,
               "0 (off) or a number >= 1")
        _check(self, "priority", "host_window", lambda v: 1 <= v <= 100_000,
               "an integer from 1 to 100000")
        _check(self, "priority", "release_batch", lambda v: v >= 1, "an integer >= 1")
        _check(self, "priority", "release_seconds", _positive, "a number > 0")
        _check(self, "priority", "frontier_seconds", _non_negative, "a number >= 0")
        _check(self, "priority", "frontier_min_urls", lambda v: v >= 1, "an integer >= 1")
        _check(self, "priority", "release_max_share", lambda v: 0 < v <= 1,
               "a number above 0, at most 1")
        _check(self, "priority", "release_window", lambda v: v >= 0, "an integer >= 0")


@dataclasses.dataclass(frozen=True)
class NearDupSection:
    """Near-duplicate pages (see crawl/content/neardup.py, crawl/content/neardup_index.py and
    crawl/content/neardup_judge.py)."""

    enabled: bool = True
    #: Pages whose fingerprints are at most this many bits apart are near-duplicates.
    max_distance: int = 3
    #: About how many pages the index holds: each of its keys holds at most twice its share
    #: (at least 16), its oldest forgotten when full (crawl/content/neardup_index.py).
    capacity: int = 1_000_000
    #: A page with fewer distinct words in its main text is a short page: judged by its exact
    #: set of words (the same distinct words as an earlier page), not by distance...
    min_features: int = 32
    #: ...and one with fewer than this is not judged at all.
    min_exact_features: int = 4
    #: What a link from a near-duplicate page counts, as a share of a link's worth.
    outlink_weight: float = 0.25

    def _validate(self) -> None:
        _check(self, "neardup", "max_distance", lambda v: 0 <= v <= 8, "an integer from 0 to 8")
        _check(self, "neardup", "capacity", lambda v: v >= 2, "an integer >= 2")
        _check(self, "neardup", "min_features", lambda v: v >= 1, "an integer >= 1")
        _check(self, "neardup", "min_exact_features", lambda v: 1 <= v <= self.min_features,
               "an integer from 1 to neardup.min_features")
        _check(self, "neardup", "outlink_weight", lambda v: 0 <= v <= 1, "a number from 0 to 1")


@dataclasses.dataclass(frozen=True)
class RecrawlOverride:
    """Bounds of the URLs of a host (and its subdomains when ``host`` starts with ".") or of
    the URLs a regular expression matches (see ``recrawl.overrides``)."""

    host: str = ""
    pattern: re.Pattern[str] | None = None
    min_seconds: float | None = None
    max_seconds: float | None = None
    initial_seconds: float | None = None

    def matches(self, url: str, host: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(url) is not None
        if self.host.startswith("."):
            return host == self.host[1:] or host.endswith(self.host)
        return host == self.host


_OVERRIDE_KEYS = {"min": "min_seconds", "max": "max_seconds", "initial": "initial_seconds"}


def parse_recrawl_overrides(lines: Iterable[str]) -> tuple[RecrawlOverride, ...]:
    """Parse ``recrawl.overrides`` lines; raises ValueError naming the bad line."""
    overrides = []
    for line in lines:
        target, *pairs = line.split()
        if not pairs:
            raise ValueError(f"{line!r}: expected '<host or re:pattern> key=seconds ...'")
        values: dict[str, float] = {}
        for pair in pairs:
            key, _, text = pair.partition("=")
            if key not in _OVERRIDE_KEYS:
                raise ValueError(f"{line!r}: unknown key {key!r} (min, max or initial)")
            try:
                seconds = float(text)
            except ValueError:
                raise ValueError(f"{line!r}: {key} must be a number of seconds") from None
            if not 1 <= seconds <= 10 * 365 * 86_400:
                raise ValueError(f"{line!r}: {key} must be from 1 s to ten years")
            values[_OVERRIDE_KEYS[key]] = seconds
        if target.startswith("re:"):
            try:
                overrides.append(RecrawlOverride(pattern=re.compile(target[3:]), **values))
            except re.error as error:
                raise ValueError(f"{line!r}: bad regular expression: {error}") from None
        else:
            overrides.append(RecrawlOverride(host=target.lower(), **values))
    return tuple(overrides)


@dataclasses.dataclass(frozen=True)
class RecrawlSection:
    """Revisits: when each fetched URL is due again (see crawl/crawldb/recrawl.py)."""

    #: Fetch every URL again when due (a continuous crawl, which never ends by itself);
    #: False: each URL once. Needs ``priority.enabled`` (the crawl DB releases due URLs).
    enabled: bool = False
    #: The first interval after a URL's first fetch (seconds).
    initial_seconds: float = 86_400.0
    #: Intervals stay within these bounds (seconds).
    min_seconds: float = 3_600.0
    max_seconds: float = 30 * 86_400.0
    #: Nutch's AdaptiveFetchSchedule: the interval grows by inc_rate when the page had not
    #: changed and shrinks by dec_rate when it had...
    inc_rate: float = 0.4
    dec_rate: float = 0.2
    #: ...until this many visits are known; then Cho and Garcia-Molina's estimate of the
    #: page's change rate sets it: the interval at which a change is found at a visit with
    #: probability ``change_target``.
    estimate_after: int = 4
    change_target: float = 0.5
    #: 0: a page changed when its payload digest did; above 0: when its main text's simhash
    #: is more than this many bits from the one of its last counted change (HTML pages with
    #: ``neardup.min_features`` words or more; the others by digest).
    change_distance: int = 0
    #: Visits the estimate remembers (older ones count half, then a quarter...).
    estimate_window: int = 32
    #: A failed fetch is tried again after retry_seconds x 2^(failures in a row - 1)...
    retry_seconds: float = 600.0
    #: ...and the URL is retired (kept as seen, never fetched again) after this many failures
    #: in a row, or after gone_failures in a row of 404 / 410 / a host that no longer exists.
    retire_failures: int = 8
    gone_failures: int = 2
    #: A URL robots.txt denies is asked again after this long (robots.txt may change).
    denied_seconds: float = 7 * 86_400.0
    #: Of each release, at most this share goes to revisits while new URLs wait (and at most
    #: 1 - this share to new URLs while revisits wait); a kind with nothing waiting leaves its
    #: share to the other.
    refresh_share: float = 0.5
    #: Per-host and per-URL bounds: ``"<host> key=value ..."`` (a host and its subdomains
    #: when it starts with "."), or ``"re:<regular expression> key=value ..."`` (matched
    #: against the URL); keys ``min``, ``max`` and ``initial`` in seconds. The first match wins.
    overrides: tuple[str, ...] = ()

    def _validate(self) -> None:
        for key in ("initial_seconds", "min_seconds", "max_seconds", "retry_seconds",
                    "denied_seconds"):
            _check(self, "recrawl", key, lambda v: 1 <= v <= 10 * 365 * 86_400,
                   "a number of seconds from 1 to ten years")
        if self.min_seconds > self.max_seconds:
            raise ConfigError(
                f"recrawl.min_seconds: {self.min_seconds} exceeds recrawl.max_seconds "
                f"({self.max_seconds})"
            )
        _check(self, "recrawl", "inc_rate", lambda v: 0 <= v <= 10, "a number from 0 to 10")
        _check(self, "recrawl", "dec_rate", lambda v: 0 <= v < 1, "a number from 0, below 1")
        _check(self, "recrawl", "estimate_after", lambda v: 1 <= v <= 255,
               "an integer from 1 to 255")
        _check(self, "recrawl", "change_target", lambda v: 0 < v < 1, "a number between 0 and 1")
        _check(self, "recrawl", "change_distance", lambda v: 0 <= v <= 32,
               "an integer from 0 (any change of the payload) to 32")
        _check(self, "recrawl", "estimate_window", lambda v: 2 <= v <= 255,
               "an integer from 2 to 255")
        _check(self, "recrawl", "retire_failures", lambda v: 1 <= v <= 255,
               "an integer from 1 to 255")
        _check(self, "recrawl", "gone_failures", lambda v: 1 <= v <= 255,
               "an integer from 1 to 255")
        _check(self, "recrawl", "refresh_share", lambda v: 0 < v < 1, "a number between 0 and 1")
        try:
            parse_recrawl_overrides(self.overrides)
        except ValueError as error:
            raise ConfigError(f"recrawl.overrides: {error}") from None


@dataclasses.dataclass(frozen=True)
class Config:
    """The whole crawl configuration, one frozen section per concern."""

    crawl: CrawlSection = dataclasses.field(default_factory=CrawlSection)
    user_agent: UserAgentSection = dataclasses.field(default_factory=UserAgentSection)
    politeness: PolitenessSection = dataclasses.field(default_factory=PolitenessSection)
    fetch: FetchSection = dataclasses.field(default_factory=FetchSection)
    robots: RobotsSection = dataclasses.field(default_factory=RobotsSection)
    sitemaps: SitemapsSection = dataclasses.field(default_factory=SitemapsSection)
    warc: WarcSection = dataclasses.field(default_factory=WarcSection)
    crawldb: CrawlDbSection = dataclasses.field(default_factory=CrawlDbSection)
    urls: UrlsSection = dataclasses.field(default_factory=UrlsSection)
    scope: ScopeSection = dataclasses.field(default_factory=ScopeSection)
    parse: ParseSection = dataclasses.field(default_factory=ParseSection)
    admission: AdmissionSection = dataclasses.field(default_factory=AdmissionSection)
    priority: PrioritySection = dataclasses.field(default_factory=PrioritySection)
    neardup: NearDupSection = dataclasses.field(default_factory=NearDupSection)
    recrawl: RecrawlSection = dataclasses.field(default_factory=RecrawlSection)

    def validate(self) -> Config:
        """Check every section; raise :class:`ConfigError` naming the first invalid key."""
        for field in dataclasses.fields(self):
            getattr(self, field.name)._validate()
        if self.crawldb.partitions > self.crawl.vnodes:
            raise ConfigError(
                f"crawldb.partitions: {self.crawldb.partitions} exceeds crawl.vnodes "
                f"({self.crawl.vnodes})"
            )
        if self.crawl.parallelism > self.crawldb.partitions:
            raise ConfigError(
                f"crawl.parallelism: {self.crawl.parallelism} exceeds crawldb.partitions "
                f"({self.crawldb.partitions}); the crawl DB cannot use more subtasks"
            )
        if self.recrawl.enabled and not self.priority.enabled:
            raise ConfigError(
                "recrawl.enabled: needs priority.enabled (the crawl DB releases due URLs)"
            )
        return self

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Plain nested dict, as in the YAML file (for the warcinfo record and the summary)."""
        return dataclasses.asdict(self)


def _check(section: Any, name: str, key: str, predicate: Any, expected: str) -> None:
    value = getattr(section, key)
    if not predicate(value):
        raise ConfigError(f"{name}.{key}: must be {expected}, got {value!r}")


def _section_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _coerce(key: str, value: Any, expected: Any) -> Any:
    """Convert a YAML or command-line value to the field's type, or raise naming the key."""
    if expected is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.lower() in ("true", "yes", "1")
        raise ConfigError(f"{key}: must be true or false, got {value!r}")
    if expected is int:
        if isinstance(value, bool):
            raise ConfigError(f"{key}: must be an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.replace("_", ""))
            except ValueError:
                pass
        raise ConfigError(f"{key}: must be an integer, got {value!r}")
    if expected is float:
        if isinstance(value, bool):
            raise ConfigError(f"{key}: must be a number, got {value!r}")
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{key}: must be a number, got {value!r}")
    if expected == tuple[str, ...]:
        # A YAML list, or on the command line a comma-separated string.
        if value is None:
            return ()
        if isinstance(value, str):
            value = [item.strip() for item in value.split(",") if item.strip()]
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ConfigError(f"{key}: must be a list of strings, got {value!r}")
    if expected is str:
        if value is None:
            return ""
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{key}: must be a string, got {value!r}")
    raise ConfigError(f"{key}: unsupported type {expected!r}")  # pragma: no cover


def parse_override(text: str) -> tuple[str, str]:
    """Split a command-line ``section.key=value`` override."""
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected section.key=value")
    key, value = text.split("=", 1)
    return key.strip(), value.strip()


#: Keys earlier versions had, and why they are gone (a file that still sets one is refused
#: with the reason, rather than crawling differently than its author meant).
RETIRED_KEYS = {
    f"priority.{key}": "links no longer add fixed amounts to a URL's score: each fetched page "
    "passes its own importance on, split over its links (see priority in conf/crawler.yaml); "
    "remove the key"
    for key in ("other_domain_link", "same_domain_link", "depth_penalty")
} | {
    "admission.max_urls_per_shape": "URLs over a budget are deferred, not refused, and a "
    "shape's budget grows with the good pages it yields: see shape_base_urls and "
    "shape_urls_per_good_page in conf/crawler.yaml; remove the key",
}


def _refuse_retired(dotted: str) -> None:
    reason = RETIRED_KEYS.get(dotted)
    if reason is not None:
        raise ConfigError(f"{dotted}: no longer a setting: {reason}")


def load_config(
    path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> Config:
    """Read ``path`` (YAML; None for the defaults), apply ``overrides`` and validate.

    ``overrides`` maps dotted keys (``"crawl.max_pages"``) to values; strings are converted to
    the key's type. Unknown sections or keys are errors, so a typo never passes silently.
    """
    raw: dict[str, Any] = {}
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(f"cannot read configuration file {path}: {error}") from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise ConfigError(f"{path}: not valid YAML: {error}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections")
        raw = {str(k): v for k, v in loaded.items()}

    merged: dict[str, dict[str, Any]] = {}
    for name, values in raw.items():
        for key in values if isinstance(values, dict) else ():
            _refuse_retired(f"{name}.{key}")
    for dotted in overrides or {}:
        _refuse_retired(dotted)
    sections = {field.name: field.type for field in dataclasses.fields(Config)}
    section_classes = typing.get_type_hints(Config)
    for name, values in raw.items():
        if name not in sections:
            raise ConfigError(f"{name}: unknown section (known: {', '.join(sections)})")
        if values is None:
            values = {}
        if not isinstance(values, dict):
            raise ConfigError(f"{name}: must be a mapping of keys")
        merged[name] = dict(values)
    for dotted, value in (overrides or {}).items():
        if dotted.count(".") != 1:
            raise ConfigError(f"{dotted}: expected section.key")
        name, key = dotted.split(".")
        if name not in sections:
            raise ConfigError(f"{dotted}: unknown section {name!r}")
        merged.setdefault(name, {})[key] = value

    built = {}
    for name, cls in section_classes.items():
        types = _section_types(cls)
        values = merged.get(name, {})
        kwargs = {}
        for key, value in values.items():
            if key not in types:
                raise ConfigError(
                    f"{name}.{key}: unknown key (known: {', '.join(sorted(types))})"
                )
            kwargs[key] = _coerce(f"{name}.{key}", value, types[key])
        built[name] = cls(**kwargs)
    return Config(**built).validate()
