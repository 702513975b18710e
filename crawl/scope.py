"""URL policy without state: which discovered URLs enter the crawl at all.

Every found URL (a link, a redirect target, a seed) passes :meth:`UrlPolicy.check` where it is
born, after normalisation; a rejected URL never reaches the loop, and its reason is counted
(``links.rejected.<reason>`` in the figures and the summary). The checks, cheapest first:

* **schemes**: only the configured schemes (``scope:scheme``);
* **length**: at most ``max_url_length`` characters (``scope:too-long``);
* **depth**: at most ``max_depth`` hops from a seed, 0 for no limit (``scope:too-deep``);
* **follow**: relative to the page the link is on (seeds and ``--seeds`` are always followed):
  ``any``; ``host``, the same host (Nutch's ``db.ignore.external.links``; a redirect may also
  go to another host of the same registered domain, as ``example.org`` to ``www.example.org``
  does); ``domain``, the same
  registered domain by the public suffix list (``publicsuffixlist``: the list ships with the
  package, no download); ``listed``, hosts in or under ``domains`` (``scope:external-host``,
  ``scope:external-domain``, ``scope:unlisted-domain``);
* **extensions**: a last path segment ending in one of ``skip_extensions`` (``scope:extension``);
* **patterns**: ``exclude`` regular expressions reject (``scope:excluded``); when ``include``
  ones are given, a URL must match one (``scope:not-included``);
* **path traps** (IRLBot's lesson: bounded by configuration, not by luck): more than
  ``max_path_segments`` segments (``trap:too-many-segments``), one segment repeated more than
  ``max_segment_repeats`` times (``trap:repeated-segment``: relative links that make paths
  grow), more than ``max_query_params`` query parameters (``trap:too-many-params``).

Traps that need state (ever-growing spaces of distinct URLs of one shape, such as calendars)
are bounded in the crawl DB, which knows which URLs are new.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

from crawl.sitemaps import is_sitemap_hops

__all__ = ["FOLLOW_MODES", "UrlPolicy", "registered_domain"]

FOLLOW_MODES = ("any", "host", "domain", "listed")

_PSL = PublicSuffixList()


@functools.lru_cache(maxsize=65536)
def registered_domain(host: str) -> str:
    """The registered domain (public suffix + one label) of a host (a port is ignored); an IP
    address or a name that is itself a public suffix is its own registered domain."""
    if host.startswith("["):
        host = host[: host.find("]") + 1] or host
    else:
        name, colon, port = host.rpartition(":")
        if colon and port.isdigit():
            host = name
    bare = host.strip("[]")
    try:
        ipaddress.ip_address(bare)
        return bare
    except ValueError:
        pass
    return _PSL.privatesuffix(host) or host


@dataclasses.dataclass(frozen=True)
class UrlPolicy:
    """The stateless URL policy (see the module docstring). URLs given to it are normalised."""

    follow: str = "any"
    domains: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    schemes: tuple[str, ...] = ("http", "https")
    skip_extensions: tuple[str, ...] = ()
    max_url_length: int = 2048
    max_depth: int = 0
    max_path_segments: int = 0
    max_segment_repeats: int = 0
    max_query_params: int = 0

    def __post_init__(self) -> None:
        if self.follow not in FOLLOW_MODES:
            raise ValueError(f"follow must be one of {', '.join(FOLLOW_MODES)}: {self.follow!r}")
        for pattern in (*self.include, *self.exclude):
            re.compile(pattern)  # raises re.error naming the pattern's fault
        object.__setattr__(self, "_include", _union(self.include))
        object.__setattr__(self, "_exclude", _union(self.exclude))
        suffixes = tuple(
            "." + ext.lower().lstrip(".") for ext in self.skip_extensions if ext.strip(".")
        )
        object.__setattr__(self, "_suffixes", suffixes)
        listed = tuple(d.lower().strip(".") for d in self.domains if d.strip("."))
        object.__setattr__(self, "_listed", listed)

    def check(self, url: str, hops: str = "", via: str = "") -> str | None:
        """The reason ``url`` is rejected, or None when it may enter the crawl. ``hops`` is
        its hop path from a seed and ``via`` the page that links to it ("" for a seed)."""
        if len(url) > self.max_url_length:
            return "scope:too-long"
        parts = urlsplit(url)
        if parts.scheme not in self.schemes:
            return "scope:scheme"
        if self.max_depth and len(hops) > self.max_depth:
            return "scope:too-deep"
        host = parts.hostname or ""
        if self.follow != "any":
            reason = self._follow_reason(host, via, hops.endswith("R"))
            if reason:
                return reason
        path = parts.path
        if self._suffixes and not is_sitemap_hops(hops):
            last = path.rsplit("/", 1)[-1].lower()
            if last.endswith(self._suffixes):
                return "scope:extension"
        if self._exclude is not None and self._exclude.search(url):
            return "scope:excluded"
        if self._include is not None and not self._include.search(url):
            return "scope:not-included"
        return self._trap_reason(path, parts.query)

    def _follow_reason(self, host: str, via: str, redirect: bool) -> str | None:
        if self.follow == "listed":
            if not any(host == d or host.endswith("." + d) for d in self._listed):
                return "scope:unlisted-domain"
            return None
        if not via:
            return None  # a seed
        source = urlsplit(via).hostname or ""
        if host == source:
            return None
        if self.follow == "host" and not redirect:
            return "scope:external-host"
        if registered_domain(host) != registered_domain(source):
            return "scope:external-domain"
        return None

    def _trap_reason(self, path: str, query: str) -> str | None:
        if self.max_path_segments or self.max_segment_repeats:
            segments = [s for s in path.split("/") if s]
            if self.max_path_segments and len(segments) > self.max_path_segments:
                return "trap:too-many-segments"
            if self.max_segment_repeats and len(segments) > self.max_segment_repeats:
                counts: dict[str, int] = {}
                for segment in segments:
                    counts[segment] = counts.get(segment, 0) + 1
                    if counts[segment] > self.max_segment_repeats:
                        return "trap:repeated-segment"
        if self.max_query_params and query and query.count("&") >= self.max_query_params:
            return "trap:too-many-params"
        return None


def _union(patterns: Sequence[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns))
