"""Link extraction from fetched pages: lxml, with Beautiful Soup as the fallback.

:class:`LinkExtractor` (and :func:`extract_links`) gives what a page leads to, by kind, each
with its Heritrix hop: navigation (L) from ``<a href>``, ``<area href>`` and ``<link href>``
and HTTP ``Link:`` headers of other rels; embeds (E) from stylesheets, icons, frames, images,
scripts, ``<embed>``/``<object>``, media and the ``preload``, ``modulepreload``, ``prefetch``
and ``manifest`` rels; a refresh (R) from ``<meta http-equiv=refresh>``. ``parse.follow`` names
the kinds followed (:data:`KINDS`). HTML links resolve against ``<base href>``, ``Link:``
header links against the page's URL (RFC 8288), and all are normalised
(:mod:`crawl.urls.normalize`); a redirect's ``Location:`` is not read here.

``nofollow`` for the crawler's product token drops a link (its ``rel``) or a page's navigation
links (``<meta name=robots>``, ``<meta name=TOKEN>``, ``X-Robots-Tag``), never its embeds or
refresh; ``noindex`` and the canonical link are reported, not acted on. At most
``max_outlinks`` are kept, the refresh and navigation before the embeds, links to the page's
own host and to others alternating; what is dropped is counted by reason. The text encoding
comes from a byte order mark, the Content-Type, a ``<meta>`` or XML declaration, else UTF-8 if
valid, else :func:`guess_encoding`. Broken markup, binary junk and junk headers never raise: at
worst a page yields no links.

README.md ("How it works", Process) gives the rules in full; BENCHMARKS.md ("Link extraction")
the measurements behind lxml.
"""

from __future__ import annotations

import codecs
import dataclasses
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, zip_longest

import charset_normalizer
import lxml.etree
import lxml.html
from bs4 import BeautifulSoup, SoupStrainer, XMLParsedAsHTMLWarning

from crawl.config import LINK_KINDS, ParseSection, UserAgentSection
from crawl.hops import EMBED, LINK, REDIRECT
from crawl.model import FetchResult
from crawl.status import Status
from crawl.urls.normalize import DEFAULT_NORMALIZER, UrlError, UrlNormalizer, host_of

__all__ = [
    "HTML_TYPES",
    "KINDS",
    "LinkExtractor",
    "Outlink",
    "ParsedLinks",
    "extract_links",
    "guess_encoding",
    "html_document",
]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


#: The kinds of links ``parse.follow`` may name, in the table's order.
KINDS = LINK_KINDS

#: An outlink: (canonical URL, hop code).
Outlink = tuple[str, str]

_DEFAULT_TOKEN = UserAgentSection().product
_DEFAULTS = ParseSection()

# tag -> (kind, attribute holding the URL); all embeds (hop E)
_EMBEDS = {
    "frame": ("frame", "src"),
    "iframe": ("frame", "src"),
    "img": ("img", "src"),
    "script": ("script", "src"),
    "embed": ("embed", "src"),
    "object": ("embed", "data"),
    "video": ("media", "src"),
    "audio": ("media", "src"),
    "source": ("media", "src"),
    "track": ("media", "src"),
}
_ICON_RELS = frozenset({"icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon"})
_RESOURCE_RELS = frozenset({"preload", "modulepreload", "prefetch", "manifest"})
_NOT_LINK_RELS = frozenset({"dns-prefetch", "preconnect", "pingback", "webmention"})
# X-Robots-Tag directives written "name: value", not to be taken for a user agent prefix.
_VALUED_DIRECTIVES = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)
_AGENT = re.compile(r"[A-Za-z_-]+")
_SPLIT = re.compile(r"[\s,]+")
_NOFOLLOW = (
    "contains(concat(' ', translate(normalize-space(@rel), 'NOFLW', 'noflw'), ' '), ' nofollow ')"
)
# RFC 8288 link-param: ; name [= token / quoted-string]
_LINK_PARAM = re.compile(
    r"""\s*;\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*(?:=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;,"]*)))?"""
)
# WHATWG "shared declarative refresh steps": a time, then optionally ; or , and url=
_REFRESH = re.compile(r"\s*[0-9.]+\s*[;,]?\s*(?:url\s*=\s*)?(.*)", re.IGNORECASE | re.DOTALL)

_META_CHARSET = re.compile(rb"<meta[^>]+charset", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']""")
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_PARSERS: dict[str, lxml.html.HTMLParser] = {}

warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)


@dataclasses.dataclass(slots=True)
class ParsedLinks:
    """What a page leads to and what it asks of robots.

    ``links``: the canonical outlinks with their hop (without repeats, best first as in the
    module docstring); ``rejected``: what was dropped, counted by reason (``url:...``,
    ``nofollow:link``, ``nofollow:page``, ``parse:over-limit``, ``parse:failed``);
    ``noindex`` / ``nofollow``: the page's robots directives for our token (whether or not
    nofollow was obeyed); ``canonical``: its canonical URL ("" if none); ``document``: the
    lxml tree it was parsed into (None for a page not parsed by lxml), for a later reader of
    the same page (its text) not to parse it again.
    """

    links: list[Outlink] = dataclasses.field(default_factory=list)
    rejected: Counter[str] = dataclasses.field(default_factory=Counter)
    noindex: bool = False
    nofollow: bool = False
    canonical: str = ""
    document: lxml.html.HtmlElement | None = dataclasses.field(
        default=None, repr=False, compare=False
    )

    @property
    def urls(self) -> list[str]:
        """The outlinks' URLs, in order."""
        return [url for url, _ in self.links]


class _Found:
    """Raw references of one page as collected, before resolution."""

    __slots__ = ("anchors", "base", "canonical", "embeds", "header_canonical", "header_embeds",
                 "header_links", "links", "nofollow", "nofollow_links", "noindex", "refresh")

    def __init__(self) -> None:
        self.anchors: list[str] = []
        self.links: list[str] = []  # <link> navigation hrefs
        self.embeds: list[str] = []  # document order, <link> resources included
        self.header_links: list[str] = []
        self.header_embeds: list[str] = []
        self.base: str | None = None
        self.refresh: str | None = None
        self.canonical: str | None = None
        self.header_canonical: str | None = None
        self.noindex = False
        self.nofollow = False
        self.nofollow_links = 0  # links dropped for their rel=nofollow


class LinkExtractor:
    """Extracts a fetched page's outlinks as configured (``parse`` section, whose defaults are
    its own); see the module docstring for what is followed and obeyed. Stateless after
    construction: one instance serves a whole subtask."""

    @classmethod
    def from_section(cls, section: ParseSection, robots_token: str,
                     normalizer: UrlNormalizer = DEFAULT_NORMALIZER) -> LinkExtractor:
        """The extractor the ``parse`` section describes, obeying the robots directives given
        to ``robots_token`` (``user_agent.product``)."""
        return cls(follow=section.follow, max_outlinks=section.max_outlinks,
                   obey_nofollow=section.obey_nofollow, robots_token=robots_token,
                   normalizer=normalizer)

    def __init__(
        self,
        follow: Iterable[str] = _DEFAULTS.follow,
        max_outlinks: int = _DEFAULTS.max_outlinks,
        obey_nofollow: bool = _DEFAULTS.obey_nofollow,
        robots_token: str = _DEFAULT_TOKEN,
        normalizer: UrlNormalizer = DEFAULT_NORMALIZER,
    ) -> None:
        follow = frozenset(follow)
        unknown = sorted(follow - set(KINDS))
        if unknown:
            raise ValueError(f"unknown link kinds {unknown} (known: {', '.join(KINDS)})")
        self._follow = follow
        self._max = max_outlinks
        self._obey_nofollow = obey_nofollow
        self._token = robots_token.lower()
        self._normalizer = normalizer
        anchors = [tag for tag in ("a", "area") if tag in follow]
        self._anchor_tags = frozenset(anchors)
        self._hrefs = self._with_rel = self._followed = None
        if anchors:
            self._hrefs = lxml.etree.XPath(
                " | ".join(f"//{tag}/@href" for tag in anchors), smart_strings=False)
            self._with_rel = lxml.etree.XPath(" | ".join(f"//{tag}[@rel]" for tag in anchors))
            self._followed = lxml.etree.XPath(
                " | ".join(f"//{tag}[@href][not({_NOFOLLOW})]/@href" for tag in anchors),
                smart_strings=False)
        self._embed_tags = {tag: attr for tag, (kind, attr) in _EMBEDS.items() if kind in follow}
        self._tags = ("base", "meta", "link", *self._embed_tags)
        self._soup_tags = SoupStrainer([*self._tags, *anchors])

    def extract(self, result: FetchResult) -> ParsedLinks:
        """The outlinks of a fetched page (2xx): its ``Link:`` and ``X-Robots-Tag`` headers
        whatever its type, and its HTML when it is HTML. Empty for any other outcome."""
        parsed = ParsedLinks()
        if result.status is not Status.FETCHED:
            return parsed
        found = _Found()
        self._read_headers(result.response_headers, found)
        if result.content_type in HTML_TYPES and result.body.strip():
            # A byte order mark wins over the header (WHATWG encoding sniffing).
            declared = None
            if not result.body.startswith(_BOMS):
                declared = _charset(result.header("Content-Type"))
            try:
                document = html_document(result.body, declared)
                self._read_lxml(document, found, _may_say_nofollow(result.body, declared))
                parsed.document = document
            except Exception:  # noqa: BLE001 - lxml refused the document: try the slower parser
                found = _Found()
                self._read_headers(result.response_headers, found)
                try:
                    self._read_soup(result.body, declared, found)
                except Exception:  # noqa: BLE001 - a page no parser can read has no links
                    parsed.rejected["parse:failed"] += 1
        self._resolve(result.url, found, parsed)
        return parsed

    # -- collection ---------------------------------------------------------------------------

    def _read_headers(self, headers: list[tuple[str, str]], found: _Found) -> None:
        for name, value in headers:
            lower = name.lower()
            if lower == "link":
                for target, rels, anchored in _header_links(value):
                    if "canonical" in rels and not anchored and found.header_canonical is None:
                        found.header_canonical = target
                    self._link(target, rels, found, header=True)
            elif lower == "x-robots-tag":
                noindex, nofollow = _x_robots_tag(value, self._token)
                found.noindex |= noindex
                found.nofollow |= nofollow

    def _read_lxml(
        self, document: lxml.html.HtmlElement, found: _Found, may_say_nofollow: bool = True
    ) -> None:
        if self._hrefs is not None:
            hrefs = self._hrefs(document)
            if self._obey_nofollow and hrefs and may_say_nofollow:
                nofollowed = sum(
                    1 for element in self._with_rel(document)
                    if "nofollow" in _tokens(element.get("rel"))
                )
                if nofollowed:
                    hrefs = self._followed(document)
                    found.nofollow_links += nofollowed
            found.anchors = hrefs
        self._read_elements(((el.tag, el.get) for el in document.iter(self._tags)), found)

    def _read_soup(self, body: bytes, declared: str | None, found: _Found) -> None:
        soup = BeautifulSoup(body, "html.parser", parse_only=self._soup_tags,
                             from_encoding=declared)
        elements = []
        for tag in soup.find_all(True):
            if tag.name in self._anchor_tags:
                href = _soup_attribute(tag, "href")
                if href is None:
                    continue
                if self._obey_nofollow and "nofollow" in _tokens(_soup_attribute(tag, "rel")):
                    found.nofollow_links += 1
                    continue
                found.anchors.append(href)
            else:
                elements.append((tag.name, _soup_getter(tag)))
        self._read_elements(elements, found)

    def _read_elements(
        self, elements: Iterable[tuple[str, Callable[[str], str | None]]], found: _Found
    ) -> None:
        """``<base>``, ``<meta>``, ``<link>`` and embeds, in document order."""
        embed_tags = self._embed_tags
        token = self._token
        for tag, get in elements:
            if tag == "link":
                href = get("href")
                if href is not None:
                    rels = _tokens(get("rel"))
                    if "canonical" in rels and found.canonical is None:
                        found.canonical = href
                    self._link(href, rels, found, header=False)
            elif tag == "meta":
                name = get("name")
                if name is not None:
                    name = name.strip().lower()
                    if name == "robots" or name == token:
                        noindex, nofollow = _meta_robots(get("content") or "")
                        found.noindex |= noindex
                        found.nofollow |= nofollow
                elif found.refresh is None and "refresh" in self._follow:
                    equiv = get("http-equiv")
                    if equiv is not None and equiv.strip().lower() == "refresh":
                        found.refresh = _refresh_url(get("content") or "")
            elif tag == "base":
                if found.base is None:
                    found.base = get("href")
            else:
                src = get(embed_tags[tag])
                if src is not None:
                    found.embeds.append(src)

    def _link(self, href: str, rels: frozenset[str], found: _Found, header: bool) -> None:
        """A ``<link>`` element or ``Link:`` header link, sorted by its rel."""
        if "nofollow" in rels and self._obey_nofollow:
            found.nofollow_links += 1
            return
        if "stylesheet" in rels:
            kind, embed = "stylesheet", True
        elif rels & _ICON_RELS:
            kind, embed = "icon", True
        elif rels & _RESOURCE_RELS:
            kind, embed = "link", True
        elif rels and rels <= _NOT_LINK_RELS:
            return
        else:
            kind, embed = "link", False
        if kind not in self._follow:
            return
        if header:
            (found.header_embeds if embed else found.header_links).append(href)
        else:
            (found.embeds if embed else found.links).append(href)

    # -- resolution, robots and the cap ----------------------------------------------------------

    def _resolve(self, page: str, found: _Found, parsed: ParsedLinks) -> None:
        resolve = self._normalizer.resolve
        rejected = parsed.rejected
        if found.nofollow_links:
            rejected["nofollow:link"] += found.nofollow_links
        base = page
        if found.base is not None:
            try:
                base = resolve(page, found.base)
            except UrlError:
                rejected["url:bad-base"] += 1
        parsed.noindex = found.noindex
        parsed.nofollow = found.nofollow
        for href, against in ((found.header_canonical, page), (found.canonical, base)):
            if href is not None and not parsed.canonical:
                try:
                    parsed.canonical = resolve(against, href)
                except UrlError:
                    pass  # counted with the links: the canonical is one of them
        navigation = not (found.nofollow and self._obey_nofollow)
        groups = (
            ([found.refresh] if found.refresh else [], base, REDIRECT, True),
            (found.header_links, page, LINK, navigation),
            (found.links, base, LINK, navigation),
            (found.anchors, base, LINK, navigation),
            (found.header_embeds, page, EMBED, True),
            (found.embeds, base, EMBED, True),
        )
        links = parsed.links
        seen: set[str] = set()
        for hrefs, against, hop, followed in groups:
            if not hrefs:
                continue
            if not followed:
                rejected["nofollow:page"] += len(hrefs)
                continue
            for href in hrefs:
                try:
                    url = resolve(against, href)
                except UrlError as error:
                    rejected[error.reason] += 1
                    continue
                if url not in seen:
                    seen.add(url)
                    links.append((url, hop))
        if self._max and len(links) > self._max:
            parsed.links = _best(links, self._max, host_of(page))
            rejected["parse:over-limit"] += len(links) - self._max


def extract_links(
    result: FetchResult, normalizer: UrlNormalizer = DEFAULT_NORMALIZER
) -> ParsedLinks:
    """Outlinks of a fetched page with the default settings (every kind, at most 1000 links,
    nofollow obeyed for ``pyflink-crawler``), normalised by ``normalizer``."""
    extractor = _DEFAULT_EXTRACTORS.get(normalizer)
    if extractor is None:
        extractor = _DEFAULT_EXTRACTORS[normalizer] = LinkExtractor(normalizer=normalizer)
    return extractor.extract(result)


_DEFAULT_EXTRACTORS: dict[UrlNormalizer, LinkExtractor] = {}


def _best(links: list[Outlink], limit: int, own_host: str) -> list[Outlink]:
    """The best ``limit`` of ``links`` (refresh and navigation before embeds; own host and
    other hosts alternating within each), in their original order."""
    kept: set[int] = set()
    for embeds in (False, True):
        same: list[int] = []
        other: list[int] = []
        for index, (url, hop) in enumerate(links):
            if (hop == EMBED) is embeds:
                (same if host_of(url) == own_host else other).append(index)
        for index in chain.from_iterable(zip_longest(same, other)):
            if len(kept) == limit:
                return [links[i] for i in sorted(kept)]
            if index is not None:
                kept.add(index)
    return [links[i] for i in sorted(kept)]


# -- robots directives, refresh and Link headers --------------------------------------------------


def _may_say_nofollow(body: bytes, declared: str | None) -> bool:
    """False when no ``rel`` of the page can hold ``nofollow``: in an ASCII-compatible
    encoding, the word is then nowhere in its bytes in any case (short of a page spelling it
    with character references, hiding it from itself). Saves the two walks of the tree that
    look for ``rel`` attributes on most pages (a quarter of a small page's time)."""
    if body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    if declared and declared.lower().replace("_", "-").startswith(("utf-16", "utf-32", "ucs")):
        return True
    return b"nofollow" in body.lower()


def _tokens(value: str | None) -> frozenset[str]:
    """The space-separated tokens of a ``rel`` value, lower case."""
    return frozenset(value.lower().split()) if value else frozenset()


def _meta_robots(content: str) -> tuple[bool, bool]:
    """(noindex, nofollow) of a robots ``<meta>`` content: comma-separated directives (spaces
    accepted too), case-insensitive; ``none`` is both."""
    directives = set(_SPLIT.split(content.lower()))
    none = "none" in directives
    return none or "noindex" in directives, none or "nofollow" in directives


def _x_robots_tag(value: str, token: str) -> tuple[bool, bool]:
    """(noindex, nofollow) for ``token`` of one ``X-Robots-Tag`` header value: directives
    separated by commas, each run of them for every crawler or, after ``agent:``, for that
    one (``googlebot: noindex, pyflink-crawler: nofollow``)."""
    noindex = nofollow = False
    agent = ""
    for part in value.split(","):
        name, colon, rest = part.partition(":")
        name = name.strip().lower()
        if colon and name not in _VALUED_DIRECTIVES and _AGENT.fullmatch(name):
            agent, part = name, rest
        if agent and agent != token:
            continue
        for directive in part.lower().split():
            if directive == "noindex":
                noindex = True
            elif directive == "nofollow":
                nofollow = True
            elif directive == "none":
                noindex = nofollow = True
    return noindex, nofollow


def _refresh_url(content: str) -> str | None:
    """The URL of a ``<meta http-equiv=refresh>`` content (``5; url='...'``), None when it
    names none (a plain reload) or is not a refresh value."""
    match = _REFRESH.match(content)
    if match is None:
        return None
    url = match.group(1).strip()
    if url[:1] in ("'", '"'):
        quote = url[0]
        url = url[1:].split(quote, 1)[0]
    return url.strip() or None


def _header_links(value: str) -> Iterator[tuple[str, frozenset[str], bool]]:
    """(target, rel tokens, has an anchor parameter) of each link of a ``Link:`` header value
    (RFC 8288 section 3: ``<uri>; rel="a b"; ...`` separated by commas). What does not parse is
    skipped up to the next comma."""
    position = 0
    while True:
        start = value.find("<", position)
        if start < 0:
            return
        end = value.find(">", start)
        if end < 0:
            return
        target = value[start + 1:end]
        rel: str | None = None
        anchored = False
        position = end + 1
        while True:
            match = _LINK_PARAM.match(value, position)
            if match is None:
                break
            name = match.group(1).lower()
            text = match.group(2) if match.group(2) is not None else (match.group(3) or "")
            if name == "rel" and rel is None:  # RFC 8288: a later rel is ignored
                rel = text
            elif name == "anchor" and text:
                anchored = True
            position = match.end()
        yield target, _tokens(rel), anchored
        comma = value.find(",", position)
        if comma < 0:
            return
        position = comma + 1


# -- decoding ---------------------------------------------------------------------------------


def _charset(content_type_header: str | None) -> str | None:
    if not content_type_header:
        return None
    for part in content_type_header.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'")
    return None


def _parser(encoding: str | None) -> lxml.html.HTMLParser:
    key = encoding or ""
    parser = _PARSERS.get(key)
    if parser is None:
        parser = lxml.html.HTMLParser(encoding=encoding, recover=True, no_network=True)
        _PARSERS[key] = parser
    return parser


def _known_encoding(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def html_document(body: bytes, declared: str | None) -> lxml.html.HtmlElement:
    """The page parsed by lxml with the crawl's encoding rules (the module docstring;
    ``declared``: the Content-Type header's charset); raises on a document lxml cannot take."""
    encoding = _known_encoding(declared)
    if encoding is None and not body.startswith(_BOMS):
        xml = _XML_ENCODING.match(body, 0, 1024)
        encoding = _known_encoding(xml.group(1).decode("ascii")) if xml else None
        if encoding is not None and encoding.startswith(("utf-16", "utf-32")):
            encoding = None  # readable as ASCII, so not what it says
    if encoding is not None or body.startswith(_BOMS) or _META_CHARSET.search(body, 0, 2048):
        # libxml2 reads a byte order mark itself (given no encoding) and finds <meta> charsets.
        return lxml.html.document_fromstring(body, parser=_parser(encoding))
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = body.decode(guess_encoding(body), "replace")
    if text.lstrip().startswith("<?xml"):
        return lxml.html.document_fromstring(body, parser=_parser(None))
    # lxml refuses NUL and most C0 controls in text input.
    text = text.replace("\x00", "\ufffd")
    return lxml.html.document_fromstring(text, parser=_parser(None))


#: Unicode blocks a Western page's text is made of (windows-1252 covers them, or near enough).
_LATIN_BLOCKS = ("Latin", "General Punctuation", "Currency Symbols", "Letterlike Symbols",
                 "Spacing Modifier Letters", "Number Forms")
#: Bytes the detection looks at (enough for any statistic; bounds its cost on huge pages).
_DETECTION_BYTES = 64 * 1024


def guess_encoding(body: bytes) -> str:
    """The encoding of a page that declares none and is not UTF-8: what charset-normalizer
    detects when the text is in another script than Latin (Cyrillic, Greek, Hebrew, Arabic,
    CJK ...), else windows-1252, the browsers' default (detection tells the Latin code pages
    apart poorly: a windows-1252 page may come out as windows-1250 or -1257, which would
    change some letters). A few milliseconds at most, and only for such pages."""
    try:
        match = charset_normalizer.from_bytes(body[:_DETECTION_BYTES]).best()
    except Exception:  # noqa: BLE001 - detection is a guess: never let it fail a page
        return "cp1252"
    if match is None or not match.encoding:
        return "cp1252"
    if all(any(block in name for block in _LATIN_BLOCKS) for name in match.alphabets):
        return "cp1252"
    return match.encoding


def _soup_attribute(tag: object, name: str) -> str | None:
    value = tag.get(name)  # type: ignore[attr-defined]
    if value is None or isinstance(value, str):
        return value
    return " ".join(value)  # a multi-valued attribute (rel) as a list


def _soup_getter(tag: object) -> Callable[[str], str | None]:
    return lambda name: _soup_attribute(tag, name)
