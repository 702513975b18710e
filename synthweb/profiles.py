"""The hostile, sitemap and multi-domain profiles as the model's values: their pages, answers
and robots.txt as :class:`~synthweb.model.Page`, :class:`~synthweb.model.Response` and
:class:`~synthweb.robots.RobotsFile`.

The profiles themselves are in :mod:`synthweb.hostile`, :mod:`synthweb.sitemaps` and
:mod:`synthweb.domains`, which know nothing of the model; :class:`synthweb.graph.SyntheticWeb`
asks here when a URL is on one of their hosts.
"""

from __future__ import annotations

from synthweb import hostile
from synthweb import sitemaps as sitemap_web
from synthweb.config import WebConfig
from synthweb.domains import DomainWeb
from synthweb.model import Link, Page, PageKind, Response
from synthweb.render import ERROR_404, MOVED
from synthweb.robots import RobotsFile, RobotsGroup, RobotsKind, Rule

__all__ = [
    "domain_page", "domain_web", "host_sitemap_page", "hostile_page", "hostile_response",
    "hostile_robots", "sitemap_page", "sitemap_robots",
]


def domain_web(config: WebConfig) -> DomainWeb:
    """The multi-domain web ``config`` describes."""
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


def domain_page(domains: DomainWeb, url: str) -> Page | None:
    """A page of the multi-domain web as the model's :class:`Page`."""
    found = domains.page(url)
    if found is None:
        return None
    if found.location is not None:
        return Page(url, PageKind.REDIRECT, found.status, "text/html; charset=utf-8",
                    location=found.location, redirect_to=found.location)
    links = tuple(Link(anchor.href, anchor.url) for anchor in found.anchors)
    return Page(url, PageKind.HTML, found.status, "text/html; charset=utf-8", links=links)


def sitemap_page(host: str, path: str) -> Page | None:
    """A page of a sitemap host for the model: HTML with its links, or a sitemap document
    (no links: :func:`synthweb.truth.expected_crawl` reads sitemaps itself)."""
    url = f"http://{host}{path}"
    status, headers, _ = sitemap_web.response(host, path)
    if status != 200:
        return None
    links = sitemap_web.page_links(host, path)
    kind = PageKind.HTML if links is not None else PageKind.TEXT
    return Page(url, kind, 200, headers[0][1], links=tuple(Link(u, u) for u in links or ()))


def sitemap_robots(host: str) -> RobotsFile:
    """What the robots.txt of a sitemap host means (see :mod:`synthweb.sitemaps`)."""
    _, _, body = sitemap_web.response(host, "/robots.txt")
    rules = tuple(Rule(False, p) for p in sitemap_web.DISALLOWED.get(host, ()))
    return RobotsFile(host, RobotsKind.NORMAL, "sitemaps", 200,
                      "text/plain; charset=utf-8", body, (RobotsGroup(("*",), rules),))


def host_sitemap_page(extra: sitemap_web.HostSitemaps, path: str) -> Page | None:
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


def hostile_robots(host: str) -> RobotsFile:
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


def hostile_page(host: str, path: str) -> Page | None:
    """A page of a hostile host for the model, or None (404)."""
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


def hostile_response(config: WebConfig, host: str, path: str) -> Response:
    """The stateless answers of a hostile host (the server handles retries and streams)."""
    robots = hostile.robots_answer(host, path)
    if robots is not None and host != hostile.ROBOTS_STALL_HOST:
        return Response(*robots)
    html_type = (("Content-Type", "text/html; charset=utf-8"),)
    kind = hostile.role(host, path)
    page = hostile_page(host, path)
    if page is None:
        return Response(404, html_type, ERROR_404)
    if page.kind is PageKind.REDIRECT:
        assert page.location is not None
        headers = html_type + (("Location", page.location),)
        return Response(302, headers, MOVED)
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
