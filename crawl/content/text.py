"""The visible text of an HTML page: what a reader sees, as one line of words.

:func:`visible_text` walks the ``<body>`` of an lxml.html document and keeps the text a browser
would render: not the content of ``<script>``, ``<style>``, ``<noscript>``, ``<template>`` or of
the ``<head>`` (title included), nor comments and processing instructions. Words are never glued
together across elements that a browser lays out apart (blocks, table cells, list items, line
breaks); inline elements (``<a>``, ``<b>``, ``<span>`` ...) join their text to the text around
them as written, so ``fa<b>st</b>`` stays one word. Runs of whitespace become one space and the
result has no leading or trailing space.

:func:`main_text` narrows it to the page's article (what :mod:`crawl.content.neardup` fingerprints).
Once a page is parsed, on the synthetic web's pages (``bench/neardup_quality.py``): visible text
about 35 us a page (0.9 KB pages of links) to 105 us (4.9 KB article pages of the near-duplicate
profile), main text 55 to 165 us (one walk of the part of the page that holds its paragraphs,
see :class:`_Layout`); parsing itself takes 20 to 45 us. Nothing here raises on
junk: a document without a body, or bytes lxml cannot make a document of, give ``""``; libxml2
drops what is nested deeper than 255 elements.
"""

from __future__ import annotations

import re
from itertools import accumulate, islice

import lxml.etree
import lxml.html

from crawl.content.links import html_document

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



def visible_text(document: lxml.etree._Element) -> str:
    """The visible text of an lxml.html document (or of any element: its own visible text),
    whitespace collapsed. O(elements + characters); never raises on a parsed document."""
    return _visible_text(document, None)


def _visible_text(
    document: lxml.etree._Element, omitted: set[lxml.etree._Element] | None
) -> str:
    """:func:`visible_text`, without the elements in ``omitted`` (their tails stay)."""
    root = _root(document)
    if root is None:
        return ""
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


def _root(document: lxml.etree._Element) -> lxml.etree._Element | None:
    """The element whose text is the visible text of ``document``: its body if it is an
    ``<html>`` element, else itself; None when there is none (no body, or not an element)."""
    if not isinstance(document.tag, str):
        return None
    if document.tag.lower() != "html":
        return document
    body = document.find("body")
    if body is None:  # a parser may leave the body in another case or namespace
        body = next((c for c in document if _tag(c) == "body"), None)
    return body


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
    if not paragraphs:
        return visible_text(document)
    asides: dict[lxml.etree._Element, bool] = {}
    paragraphs = [paragraph for paragraph in paragraphs if not _aside(paragraph, asides)]
    if not paragraphs:
        return visible_text(document)
    layout = _Layout(_containers(paragraphs))
    for paragraph in paragraphs:
        words, link_words = layout.words(paragraph)
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
        words, link_words = layout.words(element)
        weighted = score * (1 - link_words / words if words else 0) * _name_weight(element)
        if weighted > best_score:
            best, best_score = element, weighted
    if best is None:
        return visible_text(document)
    named = best.iter(lxml.etree.Element)  # what .//*[@class or @id] finds, and best
    next(named)
    adverts = {
        element
        for element in named
        if (element.get("class") is not None or element.get("id") is not None) and _advert(element)
    } or None
    parts = [best.text or ""]
    for child in best:
        if isinstance(child.tag, str) and not _boilerplate(child, layout):
            parts.append(layout.text(child, adverts))
        if child.tail:
            parts.append(child.tail)
    return " ".join(" ".join(parts).split())


class _Layout:
    """The visible text of some elements (the outermost :func:`main_text` measures, walked
    once each) and where each element's text within them lies in it: what :func:`main_text`
    asks of many elements, nested in one another, in O(1) an element (word counts in O(its
    characters), in C) after one O(elements + characters) walk.

    ``parts`` are the strings :func:`visible_text` joins, in the same order. An element the
    walk reached (not within a hidden one) has a span: its parts ``parts[start:end]`` (what
    :func:`visible_text` of the element alone would join) and its links ``links[first:last]``
    (the ``<a>`` elements within it or it, or for those within a hidden element, their word
    count). Words are counted on the text's shape: one byte a character, ``x`` for a
    character of a word and a space for whitespace (what ``str.split`` splits at); a word
    ends at each ``"x "`` and at the end of a span that ends within a word. Elements without
    a span (hidden, or outside the walk) are measured on their own, as are ``<html>``
    elements (whose visible text is their body's).
    """

    __slots__ = ("_link_sums", "_links", "_offsets", "_shape", "_spans", "parts")

    def __init__(self, roots: list[lxml.etree._Element]) -> None:
        self.parts: list[str] = []
        self._spans: dict[lxml.etree._Element, tuple[int, int, int, int]] = {}
        self._links: list[lxml.etree._Element | int] = []
        self._link_sums: list[int] | None = None
        for root in roots:
            self._walk(root)
        self._offsets = [0, *accumulate(map(len, self.parts))]
        text = "".join(self.parts)
        try:
            self._shape = text.encode("latin-1").translate(_SHAPES)
        except UnicodeEncodeError:
            text = _WIDE_SPACE.sub(" ", text)  # one character for one: offsets hold
            self._shape = text.encode("ascii", "replace").translate(_SHAPES)

    def _walk(self, root: lxml.etree._Element) -> None:
        """:func:`_visible_text`'s walk (without omissions), noting the spans. The same
        parts in the same order, from ``Element.iter`` (faster than ``iterwalk``): an element
        ends before the first node that is not its descendant."""
        parts = self.parts
        append = parts.append
        spans = self._spans
        links = self._links
        kinds = _KINDS
        nodes = root.iter()
        next(nodes)
        tag = root.tag
        kind = kinds.get(tag) or _kind(tag)
        if kind == _HIDDEN:
            return
        start, first = len(parts), len(links)
        if tag == "a":  # what Element.iter("a") finds
            links.append(root)
        block = kind == _BLOCK
        if block:
            append(" ")
        text = root.text
        if text:
            append(text)
        top = root
        # (element, its first part, its first link, block), the root first
        open_ = [(root, start, first, block)]
        for node in nodes:
            parent = node.getparent()
            while top is not parent:  # the root is everyone's ancestor
                element, start, first, block = open_.pop()
                if block:
                    append(" ")
                spans[element] = (start, len(parts), first, len(links))
                tail = element.tail
                if tail:
                    append(tail)
                top = open_[-1][0]
            tag = node.tag
            if type(tag) is not str:  # an entity, comment or PI
                tail = node.tail
                if tail:
                    append(tail)
                if tag is lxml.etree.Entity:  # iterwalk's end event of an entity
                    append(" ")
                    if tail:
                        append(tail)
                continue
            kind = kinds.get(tag) or _kind(tag)
            if kind == _HIDDEN:
                if len(node):
                    hidden = list(node.iter())
                    words = [len(visible_text(a).split()) for a in hidden if a.tag == "a"]
                    if words:
                        links.append(sum(words))
                    for _ in islice(nodes, len(hidden) - 1):
                        pass
                tail = node.tail
                if tail:
                    append(tail)
                continue
            start, first = len(parts), len(links)
            if tag == "a":
                links.append(node)
            block = kind == _BLOCK
            if block:
                append(" ")
            text = node.text
            if text:
                append(text)
            open_.append((node, start, first, block))
            top = node
        while open_:
            element, start, first, block = open_.pop()
            if block:
                append(" ")
            spans[element] = (start, len(parts), first, len(links))
            if open_:  # not the root
                tail = element.tail
                if tail:
                    append(tail)

    def _span(self, element: lxml.etree._Element) -> tuple[int, int, int, int] | None:
        span = self._spans.get(element)
        if span is None or element.tag.lower() == "html":
            return None
        return span

    def words(self, element: lxml.etree._Element) -> tuple[int, int]:
        """:func:`_words`: (visible words of an element, of them within links)."""
        span = self._spans.get(element)
        if span is None or element.tag.lower() == "html":
            return _words(element)
        begin, end = self._offsets[span[0]], self._offsets[span[1]]
        shape = self._shape
        words = shape.count(b"x ", begin, end) + (shape[end - 1] == 0x78) if begin < end else 0
        if _tag(element) == "a":
            return words, words
        first, last = span[2], span[3]
        if first == last:
            return words, 0
        sums = self._link_sums
        if sums is None:
            sums = self._link_sums = [0, *accumulate(self._link_words())]
        return words, sums[last] - sums[first]

    def _link_words(self) -> list[int]:
        offsets, shape, spans = self._offsets, self._shape, self._spans
        counts = []
        for link in self._links:
            if type(link) is int:
                counts.append(link)
                continue
            span = spans[link]
            begin, end = offsets[span[0]], offsets[span[1]]
            counts.append(
                shape.count(b"x ", begin, end) + (shape[end - 1] == 0x78) if begin < end else 0
            )
        return counts

    def text(self, element: lxml.etree._Element, omitted: set[lxml.etree._Element] | None) -> str:
        """:func:`_visible_text` of an element without the elements in ``omitted``, its
        whitespace not collapsed."""
        span = self._span(element)
        if span is None:
            return _visible_text(element, omitted)
        start, end = span[0], span[1]
        if omitted:
            cuts = sorted(
                (cut[0], cut[1])
                for cut in map(self._spans.get, omitted)
                if cut is not None and start <= cut[0] < end
            )
            if cuts:
                kept = []
                for cut_start, cut_end in cuts:  # nested in one another, or apart
                    if cut_start >= start:
                        kept.append("".join(self.parts[start:cut_start]))
                    start = max(start, cut_end)
                kept.append("".join(self.parts[start:end]))
                return "".join(kept)
        return "".join(self.parts[start:end])


#: Whitespace to ``str.split`` beyond ASCII (``tests/unit/test_text.py`` checks the list).
_WIDE_SPACE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
#: Bytes of Latin-1 text to their shape: b" " for whitespace to ``str.split``, else b"x".
_SHAPES = bytes(0x20 if chr(byte).isspace() else 0x78 for byte in range(256))
_INLINE, _BLOCK, _HIDDEN = 1, 2, 3
_KINDS: dict[str, int] = {}


def _kind(tag: str) -> int:
    """How the walk treats an element of this tag: hidden, inline or block (remembered)."""
    name = _NAMES.get(tag) or _name(tag)
    kind = _HIDDEN if name in SKIPPED_TAGS else _INLINE if name in INLINE_TAGS else _BLOCK
    if len(_KINDS) < 10_000:
        _KINDS[tag] = kind
    return kind


def _containers(paragraphs: list[lxml.etree._Element]) -> list[lxml.etree._Element]:
    """The outermost of the elements the paragraphs score (their parents and grandparents
    below ``<html>``; a paragraph without a parent itself): what :func:`main_text` measures
    lies within them."""
    tops: dict[lxml.etree._Element, None] = {}
    for paragraph in paragraphs:
        top = paragraph.getparent()
        if top is None:
            top = paragraph
        else:
            grandparent = top.getparent()
            if grandparent is not None and _tag(grandparent) not in ("html", None):
                top = grandparent
        tops[top] = None
    roots = []
    for top in tops:
        node = top.getparent()
        while node is not None and node not in tops:
            node = node.getparent()
        if node is None:
            roots.append(top)
    return roots


def advert(element: lxml.etree._Element) -> bool:
    """Whether an element's class or id names it an advertisement (:data:`AD_NAMES`)."""
    return _advert(element)


def _advert(element: lxml.etree._Element) -> bool:
    return _advert_names(_names(element))


def _advert_names(names: str) -> bool:
    if names == " ":
        return False
    return any(word.lower() in AD_NAMES for word in _NAME_WORDS.findall(names))


def _named_aside(element: lxml.etree._Element) -> bool:
    """Whether an element's class or id names it an aside (:data:`_UNLIKELY`) or an
    advertisement."""
    names = _names(element)
    return names != " " and bool(_UNLIKELY.search(names) or _advert_names(names))


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


def _aside(element: lxml.etree._Element, known: dict[lxml.etree._Element, bool]) -> bool:
    """Whether an element is within a header, footer, navigation, aside, advertisement or an
    element named as one (:data:`_UNLIKELY`, :data:`AD_NAMES`); ``known`` remembers the answer
    for it and its ancestors."""
    chain = []
    node: lxml.etree._Element | None = element
    answer = False
    while node is not None:
        seen = known.get(node)
        if seen is not None:
            answer = seen
            break
        chain.append(node)
        node = node.getparent()
    for node in reversed(chain):
        if not answer:
            tag = _tag(node)
            answer = tag in _ASIDE_TAGS or (tag not in ("html", "body") and _named_aside(node))
        known[node] = answer
    return answer


def _boilerplate(element: lxml.etree._Element, layout: _Layout) -> bool:
    if _tag(element) in _ASIDE_TAGS or _named_aside(element):
        return True
    words, link_words = layout.words(element)
    return words > 0 and link_words * 2 >= words


def _words(element: lxml.etree._Element) -> tuple[int, int]:
    """(visible words of an element, of them within links), walking it."""
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
    name = _TAGS.get(tag)
    if name is None:
        name = (tag.rpartition("}")[2] if tag[:1] == "{" else tag).lower()
        if len(_TAGS) < 10_000:
            _TAGS[tag] = name
    return name


_TAGS: dict[str, str] = {}


def visible_text_of(body: bytes, encoding: str | None = None) -> str:
    """The visible text of an HTML page given as bytes, parsed as the crawl parses pages
    (:func:`crawl.content.links.html_document`); ``encoding`` is the charset the Content-Type header
    declares, if any. ``""`` for what is no document."""
    try:
        return visible_text(html_document(body, encoding))
    except (lxml.etree.LxmlError, ValueError, LookupError, TypeError):
        return ""
