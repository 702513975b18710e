"""Sitemaps (sitemaps.org): the URLs a robots.txt and its sitemap files name, as plain logic.

How sitemaps feed the crawl (the process stage applies these; see ``crawl/processing.py``):

- a robots.txt that answers 2xx names sitemaps in ``Sitemap:`` lines
  (:func:`sitemaps_in_robots`: case-insensitive, relative values resolved against the
  robots.txt URL, at most ``sitemaps.max_per_robots``); each enters the crawl as a URL with the
  hop ``S`` (a sitemap document), so robots.txt, politeness and the URL-seen test apply to it
  like to any page;
- a fetched sitemap document (hop path ending in ``S``, redirects aside) is read by
  :func:`parse_sitemap`: the children of a sitemap index enter with one more ``S``, up to
  ``sitemaps.max_nesting`` levels below robots.txt (deeper ones are refused,
  ``sitemap:too-deep``); the URLs of a urlset, a text sitemap or an RSS/Atom feed enter with the
  hop ``M`` (listed in a sitemap) and are crawled like pages, if they are on the sitemap's own
  host or, for a sitemap a robots.txt names, on that robots.txt's host (sitemaps.org's
  cross-submission); others are refused (``sitemap:cross-host``).

:func:`parse_sitemap` takes a body as fetched (Content-Encoding already removed): a gzip file
(``.xml.gz``, whatever its Content-Type says) is decompressed here, within
``sitemaps.max_bytes`` and ``sitemaps.max_decompression_ratio``. XML is read incrementally by
lxml with entities left unexpanded, no DTD and no network (no XXE, no billion laughs);
elements are matched by local name, so any namespace (sitemaps.org 0.9, Google's 0.84) or none
will do. What a broken document held before the break is kept, with the error named.
"""

from __future__ import annotations

import dataclasses
import io
import urllib.parse
from collections import Counter

from lxml import etree

from crawl.config import SitemapsSection

__all__ = [
    "MAX_LOC_LENGTH",
    "SitemapDocument",
    "SitemapEntry",
    "is_sitemap_hops",
    "parse_sitemap",
    "sitemap_level",
    "sitemaps_in_robots",
]

#: sitemaps.org: a <loc> is less than 2,048 characters.
MAX_LOC_LENGTH = 2048
_GZIP_MAGIC = b"\x1f\x8b"
_SCHEMES = ("http", "https")


def is_sitemap_hops(hops: str) -> bool:
    """Whether a URL reached by ``hops`` is a sitemap document (its last hop but redirects
    is ``S``)."""
    return hops.rstrip("R").endswith("S")


def sitemap_level(hops: str) -> int:
    """How many sitemap documents deep ``hops`` is below robots.txt (1: named by it)."""
    return hops.count("S")


def sitemaps_in_robots(body: bytes, robots_url: str, limit: int) -> tuple[list[str], int]:
    """The ``Sitemap:`` URLs of a robots.txt body, in order without repeats, at most
    ``limit``; and how many more there were."""
    text = body.decode("utf-8-sig", errors="replace")
    found: dict[str, None] = {}
    for line in text.splitlines():
        field, colon, value = line.partition(":")
        if not colon or field.strip().lower() != "sitemap":
            continue
        value = value.split("#", 1)[0].strip()
        if not value:
            continue
        url = urllib.parse.urljoin(robots_url, value)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme in _SCHEMES and parts.hostname:
            found[url] = None
    urls = list(found)
    return urls[:limit], max(0, len(urls) - limit)


@dataclasses.dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One ``<url>`` (or ``<sitemap>``, feed item) of a sitemap: its location as written
    (whitespace stripped, entities decoded, not normalised) and what the file says of it."""

    url: str
    lastmod: str | None = None
    changefreq: str | None = None
    #: The entry's <priority> in [0, 1]; None when absent or not such a number.
    priority: float | None = None


@dataclasses.dataclass(slots=True)
class SitemapDocument:
    """What :func:`parse_sitemap` read from one document."""

    #: ``urlset``, ``index``, ``text``, ``rss``, ``atom``, or "" when nothing could be read.
    kind: str = ""
    #: Page URLs (urlset, text sitemap, feed).
    urls: list[SitemapEntry] = dataclasses.field(default_factory=list)
    #: Child sitemaps (index).
    sitemaps: list[SitemapEntry] = dataclasses.field(default_factory=list)
    #: Entries left out, by reason (``sitemap:bad-entry``, ``sitemap:over-limit``).
    rejected: Counter[str] = dataclasses.field(default_factory=Counter)
    #: Why the document was not read to its end ("" if it was): ``sitemap:malformed-xml``,
    #: ``sitemap:too-large``, ``sitemap:invalid-gzip``, ``sitemap:compression-ratio``,
    #: ``sitemap:unknown-format``, ``sitemap:empty``. Entries read before it are kept.
    error: str = ""

    @property
    def entries(self) -> int:
        return len(self.urls) + len(self.sitemaps)


def _local(tag: object) -> str:
    if not isinstance(tag, str):
        return ""  # comments, processing instructions, entity references
    return tag.rpartition("}")[2].lower()


def _valid_loc(text: str | None) -> str | None:
    if not text:
        return None
    url = text.strip()
    if not url or len(url) >= MAX_LOC_LENGTH:
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in _SCHEMES or not parts.netloc:
        return None
    return url


def _priority(text: str | None) -> float | None:
    try:
        value = float((text or "").strip())
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def _child_texts(element: etree._Element) -> dict[str, str]:
    texts: dict[str, str] = {}
    for child in element:
        name = _local(child.tag)
        if name and name not in texts:
            texts[name] = (child.text or "").strip()
    return texts


def _decompress(body: bytes, config: SitemapsSection) -> tuple[bytes, str]:
    # Imported here: the fetcher imports this module's hop rules, and the scope check, which
    # does too, need not load the HTTP client.
    from crawl.fetcher import BodyDecoder, BodyError

    decoder = BodyDecoder("gzip", config.max_bytes, config.max_decompression_ratio)
    try:
        cut = decoder.feed(body)
        if not cut:
            decoder.finish()
    except BodyError as error:
        reason = error.reason.rpartition(":")[2]
        if reason == "compression-ratio":
            return b"", "sitemap:compression-ratio"
        # A gzip file cut short still gives what it held before the cut.
        return bytes(decoder.body), "sitemap:invalid-gzip"
    return bytes(decoder.body), "sitemap:too-large" if cut else ""


def parse_sitemap(
    body: bytes, config: SitemapsSection, *, truncated: bool = False
) -> SitemapDocument:
    """Read a sitemap document (see the module docstring). ``truncated``: the body was cut
    at the size limit before it got here."""
    document = SitemapDocument()
    error = "sitemap:too-large" if truncated else ""
    if body[:2] == _GZIP_MAGIC:
        body, gzip_error = _decompress(body, config)
        error = gzip_error or error
    elif len(body) > config.max_bytes:
        body, error = body[: config.max_bytes], "sitemap:too-large"
    start = body.lstrip()[:64]
    if start.startswith(b"\xef\xbb\xbf"):
        start = start[3:].lstrip()
    if not start:
        document.error = error or "sitemap:empty"
        return document
    if start.startswith(b"<"):
        _read_xml(body, config, document)
    elif b"://" in body[:4096]:
        _read_text(body, config, document)
    else:
        document.error = error or "sitemap:unknown-format"
        return document
    if error and (document.error in ("", "sitemap:malformed-xml")):
        document.error = error  # a cut document breaks off: the cut is the cause
    return document


def _add(document: SitemapDocument, target: list[SitemapEntry], entry: SitemapEntry,
         config: SitemapsSection) -> None:
    if document.entries >= config.max_urls:
        document.rejected["sitemap:over-limit"] += 1
    else:
        target.append(entry)


def _read_text(body: bytes, config: SitemapsSection, document: SitemapDocument) -> None:
    document.kind = "text"
    for line in body.decode("utf-8-sig", errors="replace").splitlines():
        if not line.strip():
            continue
        url = _valid_loc(line)
        if url is None:
            document.rejected["sitemap:bad-entry"] += 1
        else:
            _add(document, document.urls, SitemapEntry(url), config)


_KINDS = {"urlset": "urlset", "sitemapindex": "index", "rss": "rss", "feed": "atom"}
_ENTRY = {"urlset": "url", "index": "sitemap", "rss": "item", "atom": "entry"}


def _read_xml(body: bytes, config: SitemapsSection, document: SitemapDocument) -> None:
    events = etree.iterparse(
        io.BytesIO(body),
        events=("start", "end"),
        resolve_entities=False,
        load_dtd=False,
        no_network=True,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )
    entry_name = ""
    try:
        for event, element in events:
            name = _local(element.tag)
            if not document.kind:
                if event != "start":
                    continue
                document.kind = _KINDS.get(name, "")
                if not document.kind:
                    document.error = "sitemap:unknown-format"
                    return
                entry_name = _ENTRY[document.kind]
                continue
            if event != "end" or name != entry_name:
                continue
            _read_entry(element, document, config)
            element.clear()
            parent = element.getparent()
            if parent is not None:
                while element.getprevious() is not None:
                    del parent[0]
    except etree.XMLSyntaxError:
        document.error = "sitemap:malformed-xml"


def _read_entry(element: etree._Element, document: SitemapDocument,
                config: SitemapsSection) -> None:
    kind = document.kind
    if kind == "atom":
        url = None
        for child in element:
            if _local(child.tag) == "link" and child.get("rel", "alternate") == "alternate":
                url = _valid_loc(child.get("href"))
                break
        texts = _child_texts(element)
        entry = SitemapEntry(url, texts.get("updated")) if url else None
    else:
        texts = _child_texts(element)
        url = _valid_loc(texts.get("link" if kind == "rss" else "loc"))
        if url is None:
            entry = None
        elif kind == "rss":
            entry = SitemapEntry(url, texts.get("pubdate"))
        else:
            entry = SitemapEntry(
                url,
                texts.get("lastmod") or None,
                (texts.get("changefreq") or "").lower() or None,
                _priority(texts.get("priority")),
            )
    if entry is None:
        document.rejected["sitemap:bad-entry"] += 1
    else:
        _add(document, document.sitemaps if kind == "index" else document.urls, entry, config)
