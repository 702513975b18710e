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
  grow), a run of two or more segments repeated back to back more than ``max_run_repeats``
  times (``trap:repeated-run``: ``/support/faq/support/faq/``, what a relative link to
  ``support/faq/`` on a page of that folder makes), more than ``max_query_params`` query
  parameters (``trap:too-many-params``).

Traps that need state (ever-growing spaces of distinct URLs of one shape, such as calendars)
are bounded in the crawl DB, which knows which URLs are new.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

from crawl.config import FOLLOW_MODES, ScopeSection
from crawl.hops import REDIRECT, is_sitemap_hops

__all__ = ["UrlPolicy", "registered_domain"]

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


class UrlPolicy:
    """The stateless URL policy of a ``scope`` section (see the module docstring). URLs given to
    it are normalised. Raises ValueError for an unknown ``follow`` mode and re.error for a bad
    pattern."""

    def __init__(self, section: ScopeSection = ScopeSection()) -> None:  # noqa: B008 (frozen)
        if section.follow not in FOLLOW_MODES:
            raise ValueError(
                f"follow must be one of {', '.join(FOLLOW_MODES)}: {section.follow!r}")
        for pattern in (*section.include, *section.exclude):
            re.compile(pattern)  # raises re.error naming the pattern's fault
        self.section = section
        self.follow = section.follow
        self.schemes = section.schemes
        self.max_url_length = section.max_url_length
        self.max_depth = section.max_depth
        self.max_path_segments = section.max_path_segments
        self.max_segment_repeats = section.max_segment_repeats
        self.max_run_repeats = section.max_run_repeats
        self.max_query_params = section.max_query_params
        self._include = _union(section.include)
        self._exclude = _union(section.exclude)
        self._suffixes = tuple(
            "." + ext.lower().lstrip(".") for ext in section.skip_extensions if ext.strip(".")
        )
        self._listed = tuple(d.lower().strip(".") for d in section.domains if d.strip("."))
        self._log_refusals = section.log_refusals

    def logs(self, reason: str) -> bool:
        """Whether a refusal for ``reason`` gets a crawl log line (``scope.log_refusals``)."""
        if self._log_refusals == "traps":
            return reason.startswith("trap:") or reason in ("scope:too-deep", "scope:too-long")
        return self._log_refusals == "all"

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
            reason = self._follow_reason(host, via, hops.endswith(REDIRECT))
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
        if self.max_path_segments or self.max_segment_repeats or self.max_run_repeats:
            segments = [s for s in path.split("/") if s]
            if self.max_path_segments and len(segments) > self.max_path_segments:
                return "trap:too-many-segments"
            if self.max_segment_repeats and len(segments) > self.max_segment_repeats:
                counts: dict[str, int] = {}
                for segment in segments:
                    counts[segment] = counts.get(segment, 0) + 1
                    if counts[segment] > self.max_segment_repeats:
                        return "trap:repeated-segment"
            if self.max_run_repeats and _repeats_a_run(segments, self.max_run_repeats):
                return "trap:repeated-run"
        if self.max_query_params and query and query.count("&") >= self.max_query_params:
            return "trap:too-many-params"
        return None


def _repeats_a_run(segments: list[str], most: int) -> bool:
    """Whether a run of two or more segments comes back to back more than ``most`` times."""
    count = len(segments)
    for length in range(2, count // (most + 1) + 1):
        for start in range(count - length * (most + 1) + 1):
            run = segments[start : start + length]
            if all(segments[start + length * k : start + length * (k + 1)] == run
                   for k in range(1, most + 1)):
                return True
    return False


def _union(patterns: Sequence[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns))
