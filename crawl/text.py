"""The visible text of an HTML page: what a reader sees, as one line of words.

:func:`visible_text` walks the ``<body>`` of an lxml.html document and keeps the text a browser
would render: not the content of ``<script>``, ``<style>``, ``<noscript>``, ``<template>`` or of
the ``<head>`` (title included), nor comments and processing instructions. Words are never glued
together across elements that a browser lays out apart (blocks, table cells, list items, line
breaks); inline elements (``<a>``, ``<b>``, ``<span>`` ...) join their text to the text around
them as written, so ``fa<b>st</b>`` stays one word. Runs of whitespace become one space and the
result has no leading or trailing space.

:func:`main_text` narrows it to the page's article (what :mod:`crawl.neardup` fingerprints).
Once a page is parsed, on the synthetic web's pages (``bench/neardup_quality.py``): visible text
about 35 us a page (0.9 KB pages of links) to 105 us (4.9 KB article pages of the near-duplicate
profile), main text 155 to 440 us; parsing itself takes 20 to 45 us. Nothing here raises on
junk: a document without a body, or bytes lxml cannot make a document of, give ``""``; libxml2
drops what is nested deeper than 255 elements.
"""

from __future__ import annotations

import codecs
import re

import lxml.etree
import lxml.html

__all__ = [
    "AD_NAMES",
    "INLINE_TAGS",
    "SKIPPED_TAGS",
    "advert",
    "main_text",
    "visible_text",
    "visible_text_of",
]

#: Elements whose content is never shown.
SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title"})
#: Elements laid out within a line: their boundaries do not separate words. Every other element
#: (blocks, cells, list items, ``<br>``, unknown tags) does.
INLINE_TAGS = frozenset({
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn",
    "em", "font", "i", "ins", "kbd", "mark", "q", "rp", "rt", "ruby", "s", "samp", "small",
    "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr",
})  # fmt: skip

_META_CHARSET = re.compile(rb"<meta[^>]+charset", re.IGNORECASE)
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_PARSERS: dict[str, lxml.html.HTMLParser] = {}


def visible_text(document: lxml.etree._Element) -> str:
    """The visible text of an lxml.html document (or of any element: its own visible text),
    whitespace collapsed. O(elements + characters); never raises on a parsed document."""
    return _visible_text(document, None)


def _visible_text(
    document: lxml.etree._Element, omitted: set[lxml.etree._Element] | None
) -> str:
    """:func:`visible_text`, without the elements in ``omitted`` (their tails stay)."""
    if not isinstance(document.tag, str):
        return ""
    root = document
    if document.tag.lower() == "html":
        body = document.find("body")
        if body is None:  # a parser may leave the body in another case or namespace
            body = next((c for c in document if _tag(c) == "body"), None)
        if body is None:
            return ""
        root = body
    parts: list[str] = []
    append = parts.append
    # lxml's walker: no recursion in Python, so deep nesting in hostile markup is no danger.
    walker = lxml.etree.iterwalk(root, events=("start", "end", "comment", "pi"))
    skipping = None  # the hidden element being skipped (its end event still comes)
    for event, element in walker:
        tag = element.tag
        if event == "start":
            if type(tag) is not str:  # an entity: only its tail shows
                tail = element.tail
                if tail and element is not root:
                    append(tail)
                continue
            name = _NAMES.get(tag) or _name(tag)
            if name in SKIPPED_TAGS or (omitted and element in omitted):
                skipping = element
                walker.skip_subtree()
                continue
            if name not in INLINE_TAGS:
                append(" ")
            text = element.text
            if text:
                append(text)
        elif event != "end":  # a comment or processing instruction: only its tail shows
            tail = element.tail
            if tail and element is not root:
                append(tail)
        else:
            if element is skipping:
                skipping = None
            elif (_NAMES.get(tag) or _name(tag)) not in INLINE_TAGS:
                append(" ")
            if element is not root:
                tail = element.tail
                if tail:
                    append(tail)
    return " ".join("".join(parts).split())


#: Parts of a page that hold no article, by tag.
_ASIDE_TAGS = frozenset({"header", "footer", "nav", "aside", "menu", "form", "button", "select"})
# Mozilla Readability's "unlikely candidates" and "positive" class and id names, abridged.
_UNLIKELY = re.compile(
    r"-ad-|banner|breadcrumb|combx|comment|community|cookie|disqus|extra|footer|gdpr|header|"
    r"legends|menu|related|remark|replies|rss|share|shoutbox|sidebar|skyscraper|social|"
    r"sponsor|supplemental|popup|pager|pagination|navbar|consent",
    re.IGNORECASE,
)
_LIKELY = re.compile(
    r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story", re.IGNORECASE
)
_PARAGRAPHS = lxml.etree.XPath("//body//p | //body//pre")
#: Class and id words that name an advertisement, matched as whole words of the name (split at
#: spaces, punctuation and case changes: ``ad-slot``, ``div-gpt-ad-1``, ``adContainer``,
#: ``google_ads``; not ``head``, ``load``, ``shadow`` or ``badge``).
AD_NAMES = frozenset({
    "ad", "ads", "adv", "advert", "adverts", "advertisement", "advertisements", "advertising",
    "sponsor", "sponsors", "sponsored", "promo", "promos", "promoted", "promotion", "banner",
    "banners", "adsense", "adslot", "adunit", "adbox", "dfp", "taboola", "outbrain",
})  # fmt: skip
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_NAMED = lxml.etree.XPath(".//*[@class or @id]")


def main_text(document: lxml.etree._Element) -> str:
    """The visible text of the page's main content (an article without the site's
    navigation, notices, footer and lists of links), or of the whole body when no part of it
    stands out. Cost: O(elements + characters).

    A shortened form of Mozilla Readability's choice of the content element: every ``<p>`` or
    ``<pre>`` outside headers, footers, navigation, asides, advertisements and elements whose
    class or id says they are such (``menu``, ``sidebar``, ``cookie``, ``related`` ...; for
    advertisements the whole words of :data:`AD_NAMES`: ``ad``, ``advert``, ``sponsored``,
    ``promo`` ...) gives its number of words
    (not counting link text) to its parent and half of it to its grandparent; the element with
    the highest score, times the share of its words that are not link text, is the content.
    Its visible text is the result, without its children that are mostly links (at least half
    of their words) or named as above, and without advertisements at any depth. Dates and
    counters are kept here; it is for the features to drop them.
    """
    scores: dict[lxml.etree._Element, float] = {}
    try:
        paragraphs = _PARAGRAPHS(document)
    except lxml.etree.LxmlError:
        return visible_text(document)
    for paragraph in paragraphs:
        if _aside(paragraph):
            continue
        words, link_words = _words(paragraph)
        score = words - link_words
        if score <= 0:
            continue
        parent = paragraph.getparent()
        if parent is None:
            continue
        scores[parent] = scores.get(parent, 0.0) + score
        grandparent = parent.getparent()
        if grandparent is not None and _tag(grandparent) not in ("html", None):
            scores[grandparent] = scores.get(grandparent, 0.0) + score / 2
    best, best_score = None, 0.0
    for element, score in scores.items():
        words, link_words = _words(element)
        weighted = score * (1 - link_words / words if words else 0) * _name_weight(element)
        if weighted > best_score:
            best, best_score = element, weighted
    if best is None:
        return visible_text(document)
    adverts = {element for element in _NAMED(best) if _advert(element)} or None
    parts = [best.text or ""]
    for child in best:
        if isinstance(child.tag, str) and not _boilerplate(child):
            parts.append(_visible_text(child, adverts))
        if child.tail:
            parts.append(child.tail)
    return " ".join(" ".join(parts).split())


def advert(element: lxml.etree._Element) -> bool:
    """Whether an element's class or id names it an advertisement (:data:`AD_NAMES`)."""
    return _advert(element)


def _advert(element: lxml.etree._Element) -> bool:
    names = _names(element)
    if names == " ":
        return False
    return any(word.lower() in AD_NAMES for word in _NAME_WORDS.findall(names))


def _names(element: lxml.etree._Element) -> str:
    return f"{element.get('class', '')} {element.get('id', '')}"


def _name_weight(element: lxml.etree._Element) -> float:
    names = _names(element)
    weight = 1.0
    if _LIKELY.search(names):
        weight *= 1.25
    if _UNLIKELY.search(names):
        weight *= 0.5
    if _advert(element):
        weight *= 0.1
    return weight


def _aside(element: lxml.etree._Element) -> bool:
    """Whether an element is within a header, footer, navigation, aside, advertisement or an
    element named as one (:data:`_UNLIKELY`, :data:`AD_NAMES`)."""
    node: lxml.etree._Element | None = element
    while node is not None:
        tag = _tag(node)
        if tag in _ASIDE_TAGS or (
            tag not in ("html", "body") and (_UNLIKELY.search(_names(node)) or _advert(node))
        ):
            return True
        node = node.getparent()
    return False


def _boilerplate(element: lxml.etree._Element) -> bool:
    if _tag(element) in _ASIDE_TAGS or _UNLIKELY.search(_names(element)) or _advert(element):
        return True
    words, link_words = _words(element)
    return words > 0 and link_words * 2 >= words


def _words(element: lxml.etree._Element) -> tuple[int, int]:
    """(visible words of an element, of them within links)."""
    words = len(visible_text(element).split())
    link_words = sum(len(visible_text(a).split()) for a in element.iter("a"))
    if _tag(element) == "a":
        link_words = words
    return words, link_words


_NAMES: dict[str, str] = {}


def _name(tag: object) -> str:
    """The local name of a tag, lower-cased (and remembered: pages use few distinct tags)."""
    if type(tag) is not str:
        return ""
    name = tag.rpartition("}")[2].lower()
    if len(_NAMES) < 10_000:
        _NAMES[tag] = name
    return name


def _tag(element: lxml.etree._Element) -> str | None:
    """The local name of an element, lower-cased; None for comments, entities and PIs."""
    tag = element.tag
    if not isinstance(tag, str):
        return None
    if tag[:1] == "{":
        tag = tag.rpartition("}")[2]
    return tag.lower()


def visible_text_of(body: bytes, encoding: str | None = None) -> str:
    """The visible text of an HTML page given as bytes; ``encoding`` is the charset the
    Content-Type header declares, if any (else a byte order mark, a ``<meta>`` declaration,
    UTF-8 if the bytes are valid UTF-8, else windows-1252). ``""`` for what is no document."""
    try:
        return visible_text(_document(body, encoding))
    except (lxml.etree.LxmlError, ValueError, LookupError, TypeError):
        return ""


def _document(body: bytes, encoding: str | None) -> lxml.etree._Element:
    known = None
    if encoding:
        try:
            known = codecs.lookup(encoding).name
        except LookupError:
            known = None
    if known is not None or body.startswith(_BOMS) or _META_CHARSET.search(body, 0, 2048):
        # libxml2 reads a byte order mark itself (given no encoding) and finds <meta> charsets.
        return lxml.html.document_fromstring(body, parser=_parser(known))
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = body.decode("cp1252", "replace")
    # lxml refuses NUL and most C0 controls in text input, and XML declarations in strings.
    text = _CONTROLS.sub("\ufffd", text)
    if text.lstrip().startswith("<?xml"):
        return lxml.html.document_fromstring(text.encode("utf-8"), parser=_parser("utf-8"))
    return lxml.html.document_fromstring(text, parser=_parser(None))


_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _parser(encoding: str | None) -> lxml.html.HTMLParser:
    key = encoding or ""
    parser = _PARSERS.get(key)
    if parser is None:
        parser = lxml.html.HTMLParser(encoding=encoding, recover=True, no_network=True)
        _PARSERS[key] = parser
    return parser
