"""The sitemap profile of the synthetic web: hosts whose pages only sitemaps lead to.

Off unless ``WebConfig.sitemaps`` is on (:meth:`~synthweb.config.WebConfig.with_sitemap_profile`);
off, nothing here is served or modelled. On:

- a share (``WebConfig.sitemap_host_share``) of the normal hosts whose robots.txt has rules (not
  the showcase ``h0``) name ``/sitemap.xml`` and on some ``/sitemap.txt`` in their robots.txt
  (:func:`normal_host_sitemaps`), listing their home page, a few pages and orphans
  ``/orphan/{n}`` that no page links to;
- the home page of ``h0.synth.test`` links ``sm-a.synth.test``, whose robots.txt names, at
  fixed URLs (:data:`ROBOTS`, :data:`DOCUMENTS`), every format and every case a crawler must
  refuse: a urlset, a relative index of a text sitemap, a gzipped urlset without
  Content-Encoding and a nested index whose third-level child must not be fetched, a sitemap
  its robots.txt disallows, and a sitemap on ``sm-b`` (cross-submission) listing pages of
  sm-a (accepted), sm-b (its own host) and sm-c (refused).

The rules a crawler must follow here, which :func:`synthweb.truth.expected_crawl` applies to
:meth:`~synthweb.graph.SyntheticWeb.sitemap_document`: a robots.txt answering 2xx names its
first :data:`MAX_PER_ROBOTS` sitemaps, each entering like a link at level 1; an index at level
L leads to its children only if L + 1 <= :data:`MAX_NESTING`; a listed URL enters as a page if
it is on the sitemap's own host or, for a level-1 sitemap, on the host of the robots.txt that
names it (hosts compared exactly); robots.txt, politeness and fetching once apply as anywhere.
"""

from __future__ import annotations

import dataclasses
import gzip
import random
from collections.abc import Sequence
from xml.sax.saxutils import escape

from synthweb.urls import DOMAIN

__all__ = [
    "DOCUMENTS",
    "ENTRY_URL",
    "MAX_NESTING",
    "MAX_PER_ROBOTS",
    "SITEMAP_HOSTS",
    "HostSitemaps",
    "document_response",
    "is_sitemap_host",
    "normal_host_sitemaps",
    "page_links",
    "paths",
    "response",
    "robots_sitemaps",
]

HOST_A = f"sm-a.{DOMAIN}"
HOST_B = f"sm-b.{DOMAIN}"
HOST_C = f"sm-c.{DOMAIN}"
SITEMAP_HOSTS = (HOST_A, HOST_B, HOST_C)
ENTRY_URL = f"http://{HOST_A}/"
#: Sitemap documents below robots.txt a crawl follows (robots.txt -> index -> sitemap).
MAX_NESTING = 2
#: ``Sitemap:`` lines taken from one robots.txt (the crawler's ``sitemaps.max_per_robots``).
MAX_PER_ROBOTS = 50
NAMESPACE = "http://www.sitemaps.org/schemas/sitemap/0.9"
_TEXT_TYPE = ("Content-Type", "text/plain; charset=utf-8")
_HTML_TYPE = ("Content-Type", "text/html; charset=utf-8")

_A = f"http://{HOST_A}"
_B = f"http://{HOST_B}"
_C = f"http://{HOST_C}"

ROBOTS = {
    HOST_A: (
        "User-agent: *\nDisallow: /private/\n\n"
        f"Sitemap: {_A}/sitemap.xml\n"
        "sitemap: /sitemap-index.xml\n"
        f"Sitemap: {_A}/private/sitemap.xml\n"
        f"Sitemap: {_B}/for-a.xml\n"
    ),
    HOST_B: "User-agent: *\nDisallow:\n",
    HOST_C: "User-agent: *\nDisallow:\n",
}
#: Paths robots.txt disallows, per host.
DISALLOWED = {HOST_A: ("/private/",)}

#: Sitemap URL -> (format, listed URLs): ``urlset``, ``gzip-urlset``, ``text`` list pages,
#: ``index`` lists sitemaps.
DOCUMENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    f"{_A}/sitemap.xml": (
        "urlset", (f"{_A}/p/1", f"{_A}/orphan/1", f"{_A}/orphan/2?from=sitemap&kind=xml",
                   f"{_C}/orphan/1"),
    ),
    f"{_A}/sitemap-index.xml": (
        "index", (f"{_A}/sitemaps/part-1.txt", f"{_A}/sitemaps/part-2.xml.gz",
                  f"{_A}/sitemaps/part-3.xml", f"{_A}/sitemaps/nested-index.xml"),
    ),
    f"{_A}/sitemaps/part-1.txt": ("text", (f"{_A}/orphan/4",)),
    f"{_A}/sitemaps/part-2.xml.gz": ("gzip-urlset", (f"{_A}/orphan/3", f"{_A}/p/1")),
    f"{_A}/sitemaps/part-3.xml": ("urlset", (f"{_A}/orphan/6", f"{_A}/")),
    f"{_A}/sitemaps/nested-index.xml": ("index", (f"{_A}/sitemaps/deep.xml",)),
    f"{_A}/sitemaps/deep.xml": ("urlset", (f"{_A}/orphan/9",)),
    f"{_A}/private/sitemap.xml": ("urlset", (f"{_A}/orphan/8",)),
    f"{_B}/for-a.xml": ("urlset", (f"{_A}/orphan/5", f"{_B}/orphan/1", f"{_C}/orphan/2")),
}

#: The HTML pages of each host: path -> the paths it links to.
_PAGES: dict[str, dict[str, tuple[str, ...]]] = {
    HOST_A: {"/": ("/p/1",), "/p/1": ("/",)}
    | {f"/orphan/{n}": ("/",) for n in (1, 3, 4, 5, 6, 8, 9)}
    | {"/orphan/2": ("/",)},
    HOST_B: {"/": (), "/orphan/1": ("/",)},
    HOST_C: {"/": (), "/orphan/1": ("/",), "/orphan/2": ("/",)},
}


def is_sitemap_host(host: str) -> bool:
    """Whether ``host`` is one of :data:`SITEMAP_HOSTS`."""
    return host in _PAGES


def robots_sitemaps(host: str) -> tuple[str, ...]:
    """The sitemap URLs the robots.txt of ``host`` names, absolute, in order."""
    urls = []
    for line in ROBOTS[host].splitlines():
        field, _, value = line.partition(":")
        if field.strip().lower() == "sitemap":
            value = value.strip()
            urls.append(value if "://" in value else f"http://{host}{value}")
    return tuple(urls)


def page_links(host: str, path: str) -> tuple[str, ...] | None:
    """The absolute URLs the HTML page ``path`` of ``host`` links to; None if it is no page
    (a sitemap document, or nothing)."""
    links = _PAGES.get(host, {}).get(path.split("?", 1)[0])
    return None if links is None else tuple(f"http://{host}{p}" for p in links)


def paths(host: str) -> tuple[str, ...]:
    """Every path of ``host`` (pages, home first, then its sitemap documents)."""
    prefix = f"http://{host}"
    documents = tuple(url[len(prefix):] for url in DOCUMENTS if url.startswith(prefix + "/"))
    return tuple(_PAGES[host]) + documents


def _html(title: str, links: tuple[str, ...]) -> bytes:
    items = "".join(f'<li><a href="{escape(url)}">{escape(url)}</a></li>\n' for url in links)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"</head>\n<body><h1>{escape(title)}</h1>\n<ul>\n{items}</ul>\n</body></html>\n"
    ).encode()


def _urlset(urls: tuple[str, ...]) -> bytes:
    entries = "".join(
        f"  <url>\n    <loc>\n      {escape(url)}\n    </loc>\n"
        f"    <lastmod>2026-11-{1 + n % 28:02d}</lastmod>\n"
        f"    <changefreq>{'daily' if n % 2 else 'weekly'}</changefreq>\n"
        f"    <priority>0.{5 + n % 5}</priority>\n  </url>\n"
        for n, url in enumerate(urls)
    )
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NAMESPACE}">\n{entries}'
            "</urlset>\n").encode()


def _index(urls: tuple[str, ...]) -> bytes:
    entries = "".join(
        f"  <sitemap><loc>{escape(url)}</loc><lastmod>2026-11-20</lastmod></sitemap>\n"
        for url in urls
    )
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{NAMESPACE}">\n'
            f"{entries}</sitemapindex>\n").encode()


def response(host: str, path: str) -> tuple[int, tuple[tuple[str, str], ...], bytes]:
    """(status, headers, body) of ``path`` on sitemap host ``host``."""
    if path == "/robots.txt":
        return 200, (_TEXT_TYPE,), ROBOTS[host].encode()
    document = DOCUMENTS.get(f"http://{host}{path}")
    if document is not None:
        return document_response(*document)
    links = page_links(host, path)
    if links is None:
        return 404, (_HTML_TYPE,), b"<html><body><h1>Not Found</h1></body></html>\n"
    return 200, (_HTML_TYPE,), _html(f"http://{host}{path}", links)


def document_response(
    kind: str, urls: tuple[str, ...]
) -> tuple[int, tuple[tuple[str, str], ...], bytes]:
    """(status, headers, body) of a sitemap document of format ``kind`` listing ``urls``.

    ``gzip-urlset`` is a gzip file, ``application/x-gzip`` without Content-Encoding: the body
    is the file, which the crawler decompresses itself.
    """
    if kind == "text":
        return 200, (_TEXT_TYPE,), "".join(url + "\n" for url in urls).encode()
    if kind == "gzip-urlset":
        return 200, (("Content-Type", "application/x-gzip"),), gzip.compress(
            _urlset(urls), mtime=0
        )
    body = _index(urls) if kind == "index" else _urlset(urls)
    return 200, (("Content-Type", "application/xml; charset=utf-8"),), body


def allowed(host: str, path: str) -> bool:
    """Whether the robots.txt of ``host`` allows ``path`` (to every agent)."""
    return not any(path.startswith(prefix) for prefix in DISALLOWED.get(host, ()))


# -- normal hosts that name sitemaps ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class HostSitemaps:
    """What the profile adds to a normal host chosen to name sitemaps: the ``Sitemap:`` URLs of
    its robots.txt, the documents they are and its orphan pages. Its other pages are as without
    the profile."""

    host: str
    #: Absolute URLs of the ``Sitemap:`` lines its robots.txt gains, in order.
    named: tuple[str, ...]
    #: Sitemap URL -> (format, listed URLs), as in :data:`DOCUMENTS`.
    documents: dict[str, tuple[str, tuple[str, ...]]]
    #: Paths of the pages only its sitemaps list; each links to the home page.
    orphans: tuple[str, ...]

    def paths(self) -> tuple[str, ...]:
        """The paths the profile adds to the host: orphans, then documents."""
        prefix = len(f"http://{self.host}")
        return self.orphans + tuple(url[prefix:] for url in self.documents)

    def page_links(self, path: str) -> tuple[str, ...] | None:
        """The links of orphan ``path`` (absolute); None if it is no orphan."""
        return (f"http://{self.host}/",) if path in self.orphans else None

    def response(self, path: str) -> tuple[int, tuple[tuple[str, str], ...], bytes] | None:
        """(status, headers, body) of a path the profile adds; None for any other path."""
        url = f"http://{self.host}{path}"
        document = self.documents.get(url)
        if document is not None:
            return document_response(*document)
        links = self.page_links(path)
        return None if links is None else (200, (_HTML_TYPE,), _html(url, links))


def normal_host_sitemaps(host: str, rng: random.Random, pages: Sequence[str]) -> HostSitemaps:
    """The sitemaps of normal host ``host``, drawn from ``rng``: 2 to 4 orphans; a urlset
    ``/sitemap.xml`` listing the home page, up to two of ``pages`` (paths of its HTML pages)
    and the orphans; on about half the hosts also a text ``/sitemap.txt`` taking the last
    orphan from the urlset (and listing the home page again)."""
    base = f"http://{host}"
    orphans = tuple(f"/orphan/{n}" for n in range(1, rng.randint(2, 4) + 1))
    listed = ("/",) + tuple(rng.sample(sorted(pages), min(2, len(pages))))
    documents: dict[str, tuple[str, tuple[str, ...]]] = {}
    if rng.random() < 0.5:
        documents[f"{base}/sitemap.xml"] = ("urlset", tuple(base + p for p in listed + orphans))
    else:
        documents[f"{base}/sitemap.xml"] = (
            "urlset", tuple(base + p for p in listed + orphans[:-1])
        )
        documents[f"{base}/sitemap.txt"] = ("text", (base + orphans[-1], base + "/"))
    return HostSitemaps(host, tuple(documents), documents, orphans)
