"""A seeded, deterministic synthetic web served over real HTTP on loopback.

It is the crawler's demo ("crawl the built-in web") and the fixture of the integration tests,
which assert against its ground truth (:meth:`SyntheticWeb.expected_crawl`) and its request log
(:func:`audit_log`), never against the crawler's view of itself. Standard library only; nothing
here imports ``pyflink``.

Typical use::

    with SyntheticWebServer(WebConfig(seed=1, hosts=30), tmp_path / "requests.jsonl") as server:
        seeds = server.web.seeds()
        ...  # crawl `seeds` with server.proxy_url as the HTTP proxy of every request
        records = server.request_log()
    assert audit_log(records, server.web.expected_crawl(seeds, "pyflink-crawler")) == []

The URL-policy profile (spellings, traps, a link farm, popular pages; off by default) is
described in :mod:`synthweb.policy`; ``WebConfig().with_url_policy_profile()`` turns it on.
The hostile profile (Retry-After, trickles, resets, broken encodings, a gzip bomb, huge pages and
headers, private addresses, odd robots.txt; off by default) is described in
:mod:`synthweb.hostile`; ``WebConfig().with_hostile_profile()`` turns it on.
The sitemap profile (Sitemap: lines in robots.txt, every sitemap format, pages only sitemaps
lead to, and sitemap entries a crawler must refuse; off by default) is described in
:mod:`synthweb.sitemaps`; ``WebConfig().with_sitemap_profile()`` turns it on.
The multi-domain profile (a layout of its own: sites of very different sizes on many registered
domains, link farms, endless spaces on real sites and soft 404s, with the real pages a crawl can
reach and their in-degree as ground truth; off by default) is described in
:mod:`synthweb.domains`; ``WebConfig().with_multi_domain_profile()`` turns it on.
"""

from synthweb.audit import PolicyAudit, audit_hostile, audit_log, audit_policy
from synthweb.config import WebConfig
from synthweb.domains import UrlKind
from synthweb.graph import SyntheticWeb
from synthweb.model import Link, Page, PageKind, Response
from synthweb.policy import is_farm, is_trap, trap_area
from synthweb.requestlog import RequestRecord, read_request_log
from synthweb.robots import RobotsFile, RobotsGroup, RobotsKind, Rule
from synthweb.server import SyntheticWebServer, SyntheticWebService
from synthweb.truth import DomainTruth, ExpectedCrawl, HostileTruth, PolicyTruth, SitemapTruth
from synthweb.urls import canonical_url, page_identity

__all__ = [
    "DomainTruth",
    "ExpectedCrawl",
    "HostileTruth",
    "Link",
    "Page",
    "PageKind",
    "PolicyAudit",
    "PolicyTruth",
    "RequestRecord",
    "Response",
    "RobotsFile",
    "RobotsGroup",
    "RobotsKind",
    "Rule",
    "SitemapTruth",
    "SyntheticWeb",
    "SyntheticWebServer",
    "SyntheticWebService",
    "UrlKind",
    "WebConfig",
    "audit_hostile",
    "audit_log",
    "audit_policy",
    "canonical_url",
    "is_farm",
    "is_trap",
    "page_identity",
    "read_request_log",
    "trap_area",
]
