"""Sitemaps (sitemaps.org): the URLs a robots.txt and its sitemap files name, as plain logic.

:func:`sitemaps_in_robots` reads the ``Sitemap:`` lines of a robots.txt that answered 2xx
(case-insensitive, relative values resolved against it, at most ``sitemaps.max_per_robots``);
each sitemap enters the crawl as a URL with the hop ``S``. :func:`parse_sitemap` reads a fetched
sitemap: the children of an index enter with one more ``S``, up to ``sitemaps.max_nesting``
levels below robots.txt; the URLs of a urlset, a text sitemap or an RSS/Atom feed enter with
the hop ``M`` if they are on the sitemap's host or, for a sitemap a robots.txt names, on that
robots.txt's host. :mod:`crawl.processing` applies these rules.

:func:`parse_sitemap` takes a body with its Content-Encoding removed; the bytes decide what it
is, not the Content-Type: gzip (decompressed here within ``max_bytes`` and
``max_decompression_ratio``), XML (its root ``urlset``, ``sitemapindex``, ``rss`` or ``feed``),
else a text sitemap. XML is read incrementally by lxml, safely: no entity expanded, no DTD
loaded, nothing fetched (no XXE), libxml2's limits on. Element names are matched by local name
in any namespace and case-sensitively, as XML's are, which lets lxml filter entries in C. What
a broken document held before the break is kept, with the reason (``sitemap:malformed-xml``,
...); one broken only by a bare ``&`` or an HTML entity is repaired and read again in full. An
entry is an absolute http(s) URL of at most :data:`MAX_LOC_LENGTH` characters, returned as
written: the caller normalises it. README.md ("How it works", Fetch) puts sitemaps in the crawl.
"""

from __future__ import annotations

import dataclasses
import html.entities
import io
import re
import urllib.parse
from collections import Counter

from lxml import etree

from crawl.config import SitemapsSection
from crawl.http.body import BodyDecoder, BodyError

__all__ = [
    "MAX_LOC_LENGTH",
    "SitemapDocument",
    "SitemapEntry",
    "parse_sitemap",
    "sitemaps_in_robots",
]

#: Longest ``<loc>`` kept: sitemaps.org says "less than 2,048 characters"; one more is allowed
#: so that this agrees with ``scope.max_url_length``'s ceiling, which the caller applies anyway.
MAX_LOC_LENGTH = 2048
_GZIP_MAGIC = b"\x1f\x8b"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_SCHEMES = ("http", "https")
#: An absolute http(s) URL with a non-empty authority (a full parse is the normaliser's job).
_HTTP_URL = re.compile(r"https?://[^/?#\s]", re.IGNORECASE)
#: What may precede a document's first byte of content.
_LEADING = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*")
#: RFC 9309 line ends (str.splitlines would also split on form feeds, U+2028 and more).
_EOL = re.compile(r"\r\n?|\n")
#: robots.txt field names of a sitemap line (Google also accepts the ``site-map`` spelling).
_ROBOTS_FIELDS = frozenset({"sitemap", "site-map"})
_CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})
_PRIORITY = re.compile(r"[0-9]*\.?[0-9]+|[0-9]+\.")


def sitemaps_in_robots(body: bytes, robots_url: str, limit: int) -> tuple[list[str], int]:
    """The ``Sitemap:`` URLs of a robots.txt body, in order without repeats, at most
    ``limit``; and how many more there were.

    RFC 9309 and sitemaps.org: the field name is case-insensitive, ``#`` starts a comment,
    lines end in CR, LF or CRLF, a UTF-8 BOM is skipped, and a sitemap line belongs to no
    group. A relative value is resolved against ``robots_url``; only http(s) URLs with a host
    are kept (a value urllib cannot parse, such as ``http://[x/``, is skipped). Cutting the
    body to a size is the caller's business. O(size of the body).
    """
    text = body.decode("utf-8-sig", errors="replace")
    found: dict[str, None] = {}
    for line in _EOL.split(text):
        field, colon, value = line.partition(":")
        if not colon or field.strip().lower() not in _ROBOTS_FIELDS:
            continue
        value = value.split("#", 1)[0].strip()
        if not value:
            continue
        try:
            # urljoin would read "http:" or "http:///x" as relative to robots_url
            absolute = bool(urllib.parse.urlsplit(value).scheme)
            url = value if absolute else urllib.parse.urljoin(robots_url, value)
            parts = urllib.parse.urlsplit(url)
            host = parts.hostname
        except ValueError:
            continue
        if parts.scheme in _SCHEMES and host:
            found[url] = None
    urls = list(found)
    return urls[:limit], max(0, len(urls) - limit)


@dataclasses.dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One ``<url>`` (or ``<sitemap>``, feed item) of a sitemap: its location as written
    (whitespace stripped, entities decoded, not normalised) and what the file says of it."""

    url: str
    #: ``<lastmod>`` (an RSS ``pubDate``, an Atom ``updated``) as written; None if absent.
    lastmod: str | None = None
    #: ``<changefreq>`` lower-cased, if one of sitemaps.org's seven values; else None.
    changefreq: str | None = None
    #: ``<priority>`` in [0, 1]; None when absent or not such a number.
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
        """Entries kept (page URLs and child sitemaps)."""
        return len(self.urls) + len(self.sitemaps)


def parse_sitemap(
    body: bytes, config: SitemapsSection, *, truncated: bool = False, content_type: str = ""
) -> SitemapDocument:
    """Read a sitemap document (see the module docstring for the rules).

    ``truncated``: the body was cut at the size limit before it got here (then a gzip file
    ending early is ``sitemap:too-large``, not ``sitemap:invalid-gzip``). ``content_type``
    only matters for a body that is neither gzip nor XML: text/plain makes it a text sitemap
    even with no URL in its first 4 KiB. Time O(decoded size), memory O(decoded size) for
    the body plus the entries kept: the parsed tree is dropped entry by entry.
    """
    error = "sitemap:too-large" if truncated else ""
    if body[:2] == _GZIP_MAGIC:
        body, gzip_error = _gunzip(body, config)
        if gzip_error == "sitemap:compression-ratio":
            return SitemapDocument(error=gzip_error)
        if gzip_error and not (truncated and gzip_error == "sitemap:invalid-gzip"):
            error = gzip_error
    elif len(body) > config.max_bytes:
        body, error = body[: config.max_bytes], "sitemap:too-large"
    match = _LEADING.match(body)
    start = match.end() if match else 0
    head = body[start : start + 4096]
    if not head:
        document = SitemapDocument(error="sitemap:empty")
    elif head.startswith(b"<") or body.startswith(_UTF16_BOMS):
        document = _read_xml(body, start, config)
    elif b"://" in head or _media_type(content_type) == "text/plain":
        document = _read_text(body, config, cut=bool(error))
    else:
        document = SitemapDocument(error="sitemap:unknown-format")
    # A cut or broken gzip ends the document: that is the cause of an error at its end.
    if error and document.error != "sitemap:unknown-format":
        document.error = error
    return document


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _gunzip(body: bytes, config: SitemapsSection) -> tuple[bytes, str]:

    decoder = BodyDecoder("gzip", config.max_bytes, config.max_decompression_ratio)
    try:
        cut = decoder.feed(body)
        if not cut:
            decoder.finish()
    except BodyError as error:
        if error.reason.endswith(":compression-ratio"):
            return b"", "sitemap:compression-ratio"
        # A gzip file cut short still gives what it held before the cut.
        return bytes(decoder.body), "sitemap:invalid-gzip"
    return bytes(decoder.body), "sitemap:too-large" if cut else ""


def _add(document: SitemapDocument, target: list[SitemapEntry], entry: SitemapEntry,
         config: SitemapsSection) -> None:
    if document.entries >= config.max_urls:
        document.rejected["sitemap:over-limit"] += 1
    else:
        target.append(entry)


def _valid_loc(text: str | None) -> str | None:
    """``text`` (already stripped) if it is an absolute http(s) URL short enough, else None."""
    if not text or len(text) > MAX_LOC_LENGTH or not _HTTP_URL.match(text):
        return None
    return text


def _read_text(body: bytes, config: SitemapsSection, cut: bool) -> SitemapDocument:
    document = SitemapDocument(kind="text")
    lines = _EOL.split(body.decode("utf-8-sig", errors="replace"))
    if cut:
        lines.pop()  # what follows the last line end may be a URL cut short: not one to crawl
    for line in lines:
        url = line.strip()
        if not url:
            continue
        if _valid_loc(url) is None:
            document.rejected["sitemap:bad-entry"] += 1
        else:
            _add(document, document.urls, SitemapEntry(url), config)
    return document


# -- XML ------------------------------------------------------------------------------------

_KINDS = {"urlset": "urlset", "sitemapindex": "index", "rss": "rss", "feed": "atom"}
_ENTRY = {"urlset": "url", "index": "sitemap", "rss": "item", "atom": "entry"}

#: libxml2 errors a repair may cure: an '&' starting no reference, an entity XML lacks.
_REPAIRABLE = frozenset({
    etree.ErrorTypes.ERR_ENTITYREF_SEMICOL_MISSING,
    etree.ErrorTypes.ERR_NAME_REQUIRED,
    etree.ErrorTypes.ERR_UNDECLARED_ENTITY,
})
#: A CDATA section (where '&' is literal: left alone), an entity reference, or a bare '&'.
_AMPERSANDS = re.compile(
    rb"<!\[CDATA\[.*?\]\]>|&(?:(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z_:][\w.:-]*);)?", re.DOTALL
)
_XML_ENTITIES = frozenset({b"amp", b"lt", b"gt", b"quot", b"apos"})


def _repair_reference(match: re.Match[bytes]) -> bytes:
    text, name = match[0], match[1]
    if text.startswith(b"<"):
        return text
    if name is None:
        return b"&amp;"  # a bare '&': the URL meant it literally
    if name.startswith(b"#") or name in _XML_ENTITIES:
        return text
    # An HTML entity (&nbsp;) becomes character references; an unknown name stays an error.
    chars = html.entities.html5.get(name.decode("ascii") + ";")
    return "".join(f"&#{ord(c)};" for c in chars).encode() if chars else text


def _read_xml(body: bytes, start: int, config: SitemapsSection) -> SitemapDocument:
    document = SitemapDocument()
    error = _parse_xml(body, start, config, document)
    if error is not None and any(e.type in _REPAIRABLE for e in error.error_log):
        # Only a broken document pays for this, and only once.
        repaired = _AMPERSANDS.sub(_repair_reference, body)
        if repaired != body:
            document = SitemapDocument()
            error = _parse_xml(repaired, start, config, document)
    if error is not None:
        document.error = "sitemap:malformed-xml"
    return document


def _events(stream: io.BytesIO, **options: object) -> etree.iterparse:
    return etree.iterparse(
        stream,
        resolve_entities=False,
        load_dtd=False,
        no_network=True,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        **options,
    )


def _parse_xml(body: bytes, start: int, config: SitemapsSection,
               document: SitemapDocument) -> etree.XMLSyntaxError | None:
    """Read the XML from byte ``start`` into ``document``; the syntax error it stopped at."""
    stream = io.BytesIO(body)
    try:
        # A first look at the root (libxml2 reads one chunk), then the entries, filtered by
        # name in C so that the other elements never cost a Python object.
        stream.seek(start)  # whitespace before an XML declaration is an error to libxml2
        for _, first in _events(stream, events=("start",)):
            document.kind = _KINDS.get(first.tag.rpartition("}")[2], "")
            break
        if not document.kind:
            document.error = "sitemap:unknown-format"
            return None
        stream.seek(start)
        root = None
        for _, element in _events(stream, events=("end",), tag="{*}" + _ENTRY[document.kind]):
            if root is None:
                root = element.getroottree().getroot()
            parent = element.getparent()
            # An element of the entry's name nested deeper is part of an entry, not one.
            if parent is None or (parent if document.kind != "rss" else parent.getparent()) \
                    is not root:
                continue
            _read_entry(element, document, config)
            # Drop what has been read: memory stays flat however long the document.
            element.clear()
            while element.getprevious() is not None:
                del parent[0]
    except etree.XMLSyntaxError as error:
        return error
    return None


def _text(children: dict[object, etree._Element], prefix: str, name: str) -> str | None:
    """The stripped text of an entry's child ``name`` (in the entry's namespace ``prefix``);
    None if there is none, or it holds more than text (an unexpanded entity reference, an
    element)."""
    child = children.get(prefix + name)
    if child is None or len(child):
        return None
    text = child.text
    return (text.strip() or None) if text else None


def _priority(text: str | None) -> float | None:
    if not text or not _PRIORITY.fullmatch(text):
        return None
    value = float(text)
    return value if value <= 1.0 else None


def _read_entry(element: etree._Element, document: SitemapDocument,
                config: SitemapsSection) -> None:
    kind = document.kind
    tag = element.tag
    prefix = tag[: tag.rfind("}") + 1]  # "{namespace}" or ""
    children = {child.tag: child for child in element}  # the last of a tag wins
    entry = None
    if kind == "urlset" or kind == "index":
        url = _valid_loc(_text(children, prefix, "loc"))
        if url is not None:
            changefreq = (_text(children, prefix, "changefreq") or "").lower()
            entry = SitemapEntry(
                url,
                _text(children, prefix, "lastmod"),
                changefreq if changefreq in _CHANGEFREQS else None,
                _priority(_text(children, prefix, "priority")),
            )
    elif kind == "rss":
        url = _valid_loc(_text(children, prefix, "link"))
        entry = SitemapEntry(url, _text(children, prefix, "pubDate")) if url else None
    else:  # Atom: the first link that is the entry's own page (rel alternate, the default)
        for child in element:
            if child.tag == prefix + "link" and (
                child.get("rel") or "alternate"
            ).strip().lower() == "alternate":
                url = _valid_loc((child.get("href") or "").strip())
                entry = SitemapEntry(url, _text(children, prefix, "updated")) if url else None
                break
    if entry is None:
        document.rejected["sitemap:bad-entry"] += 1
    else:
        _add(document, document.sitemaps if kind == "index" else document.urls, entry, config)
