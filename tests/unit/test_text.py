"""Visible and main text of HTML pages: a table of cases, and junk that must not raise."""

from __future__ import annotations

import lxml.etree
import lxml.html
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawl.content.text import advert, main_text, visible_text, visible_text_of


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<html><head><title>T</title></head><body><p>Hello</p></body></html>", "Hello"),
        ("<p>Hello <b>wo</b>rld</p>", "Hello world"),
        ("<p>fa<b>st</b> and <a href='/'>li</a>nk</p>", "fast and link"),
        ("<div>one</div><div>two</div>", "one two"),
        ("<ul><li>a</li><li>b</li></ul><table><tr><td>c</td><td>d</td></tr></table>", "a b c d"),
        ("line<br>break", "line break"),
        ("<p>a<script>var hidden = 1;</script>b</p>", "ab"),
        ("<style>p { color: red }</style><p>x</p><noscript>enable js</noscript>", "x"),
        ("<template><p>later</p></template><p>now</p>", "now"),
        ("<div>two<!-- comment -->three</div>", "twothree"),
        ("<p>  spread \n\t out  </p>", "spread out"),
        ("<p>caf\u00e9 \u6771\u4eac</p>", "caf\u00e9 \u6771\u4eac"),
        ("<html><head><title>only a title</title></head></html>", ""),
        ("<P>UPPER <B>case</B></P>", "UPPER case"),
    ],
)
def test_visible_text(html: str, expected: str) -> None:
    assert visible_text(lxml.html.document_fromstring(html)) == expected
    assert visible_text_of(html.encode()) == expected


def test_visible_text_of_bytes_in_declared_and_guessed_encodings() -> None:
    page = "<html><body><p>Caf\u00e9 cr\u00e8me</p></body></html>"
    assert visible_text_of(page.encode("iso-8859-1"), "ISO-8859-1") == "Caf\u00e9 cr\u00e8me"
    assert visible_text_of(page.encode("cp1252")) == "Caf\u00e9 cr\u00e8me"  # not UTF-8: cp1252
    hello = "\u041f\u0440\u0438\u0432\u0435\u0442"
    meta = f'<html><head><meta charset="windows-1251"></head><body>{hello}</body></html>'
    assert visible_text_of(meta.encode("cp1251")) == hello
    assert visible_text_of(b"\xef\xbb\xbf<p>bom</p>") == "bom"
    assert visible_text_of(b"<p>x</p>", "no-such-charset") == "x"


@pytest.mark.parametrize("junk", [b"", b"   ", b"\x00", b"\xff\xfe\x00<", b"<?xml version='1.0'?>",
                                  b"<!-- only a comment -->", b"<html", b"\x89PNG\r\n\x1a\n\x00"])
def test_visible_text_of_junk_is_a_string(junk: bytes) -> None:
    assert isinstance(visible_text_of(junk), str)


def test_deep_nesting() -> None:
    page = "<div>" * 200 + "deep" + "</div>" * 200
    assert visible_text_of(page.encode()) == "deep"
    # libxml2 drops what lies deeper than 255 elements: no text, and no error either.
    assert visible_text_of(("<div>" * 5000 + "deeper").encode()) == ""


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_visible_text_of_never_raises_on_bytes(body: bytes) -> None:
    text = visible_text_of(body)
    assert text == " ".join(text.split())


_TAGS = st.sampled_from(["p", "div", "b", "a", "script", "style", "li", "td", "br", "span",
                         "noscript", "template", "head", "title", "x-y", "svg"])
_FRAGMENT = st.recursive(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
    lambda inner: st.tuples(_TAGS, st.lists(inner, max_size=4)).map(
        lambda pair: f"<{pair[0]}>{''.join(pair[1])}</{pair[0]}>"
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_FRAGMENT, st.sampled_from(["utf-8", "cp1252", None]))
def test_never_raises_on_generated_markup(fragment: str, encoding: str | None) -> None:
    body = fragment.encode(encoding or "utf-8", "replace")
    text = visible_text_of(body, encoding)
    assert text == " ".join(text.split())
    try:
        document = lxml.html.document_fromstring(fragment.replace("\x00", ""))
    except (lxml.etree.LxmlError, ValueError):
        return  # lxml takes no document from it: nothing to walk
    assert main_text(document) == " ".join(main_text(document).split())


ARTICLE = " ".join(f"Sentence number {i}, of the article, with words in it." for i in range(12))


@pytest.mark.parametrize(
    "layout",
    [
        "<header><nav><a href='/'>Home</a> <a href='/w'>World</a></nav><p>Tagline of the site "
        "that is a sentence.</p></header><main><article><h1>Title</h1><p>{a}</p><p>{a}</p>"
        "</article><aside><ul><li><a href='/1'>Other story</a></li></ul></aside></main>"
        "<footer><p>Copyright and a long disclaimer about the site, its owners and "
        "lawyers.</p></footer>",
        "<div id='menu'><a href='/'>Home</a> | <a href='/w'>World</a></div><div id='content'>"
        "<h2>Title</h2><p>{a}</p><p>{a}</p><div class='links'><a href='/1'>Other story</a> "
        "<a href='/2'>Another story</a></div></div><div class='cookie-bar'>We use cookies, "
        "many of them, and you agree.</div>",
    ],
)
def test_main_text_is_the_article(layout: str) -> None:
    document = lxml.html.document_fromstring(layout.format(a=ARTICLE))
    text = main_text(document)
    assert text == f"Title {ARTICLE} {ARTICLE}"


def test_main_text_without_paragraphs_is_the_visible_text() -> None:
    document = lxml.html.document_fromstring("<div>just <b>some</b> text</div><ul><li>x</li></ul>")
    assert main_text(document) == visible_text(document) == "just some text x"


@pytest.mark.parametrize(
    ("attributes", "is_advert"),
    [
        ('class="ad"', True),
        ('class="ads wide"', True),
        ('class="advert"', True),
        ('class="advertisement"', True),
        ('id="sponsored"', True),
        ('class="sponsored-content"', True),
        ('class="ad-slot ad-300x250"', True),
        ('id="div-gpt-ad-1234-0"', True),
        ('class="adContainer"', True),
        ('class="google_ads"', True),
        ('class="promo"', True),
        ('class="banner-ad"', True),
        ('class="AD"', True),
        ('class="head"', False),
        ('class="header-load"', False),
        ('class="download"', False),
        ('class="shadow"', False),
        ('class="badge"', False),
        ('class="loaded"', False),
        ('id="add-comment"', False),
        ('class="adventure"', False),
        ('class="lead"', False),
        ("", False),
    ],
)
def test_advert_names_are_whole_words(attributes: str, is_advert: bool) -> None:
    element = lxml.html.fragment_fromstring(f"<div {attributes}>x</div>")
    assert advert(element) is is_advert


AD = "Buy the shiny widget today, limited offer for readers only."


@pytest.mark.parametrize(
    "markup",
    [
        "<aside class='ad'><p>{ad}</p></aside>",
        "<div class='advert'><span>Advertisement</span><p>{ad}</p></div>",
        "<div id='sponsored'><p>{ad}</p><a href='http://x/?utm_source=y'>Go</a></div>",
        "<section class='promo'>{ad}</section>",
        "<div class='ad-slot'><div><div><p>{ad}</p></div></div></div>",
        "<div id='div-gpt-ad-7-0'>{ad}</div>",
        "<p>Before the ad. <span class='adContainer'>{ad}</span></p>",
    ],
)
def test_main_text_drops_advertisements(markup: str) -> None:
    """Within the article, between its paragraphs or inside one, at any depth, and next to
    it."""
    ad = markup.format(ad=AD)
    within = (
        f"<main><article><h1>Title</h1><p>{ARTICLE}</p>{ad}<p>{ARTICLE}</p></article></main>"
    )
    after = f"<div id='content'><h2>Title</h2><p>{ARTICLE}</p><p>{ARTICLE}</p></div>{ad}"
    nested = f"<div class='story'><div><p>{ARTICLE}</p>{ad}<p>{ARTICLE}</p></div></div>"
    for page in (within, after, nested):
        text = main_text(lxml.html.document_fromstring(page))
        assert AD not in text
        assert text.count(ARTICLE) == 2
        assert "shiny" in visible_text(lxml.html.document_fromstring(page))  # a reader sees it
    kept = " Before the ad." if markup.startswith("<p>") else ""  # the paragraph around it
    assert main_text(lxml.html.document_fromstring(within)) == f"Title {ARTICLE}{kept} {ARTICLE}"


def test_main_text_keeps_what_only_sounds_like_an_advert() -> None:
    page = (
        f"<div class='head'><h2>Title</h2></div><div class='download'><p>{ARTICLE}</p>"
        f"<p class='shadow'>{ARTICLE}</p></div>"
    )
    text = main_text(lxml.html.document_fromstring(page))
    assert text.count(ARTICLE) == 2


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        # Advertisements nested in one another, the inner one first in document order.
        (
            "<pre>alpha<b id='adContainer'><br class='ad'>be<template>y.</template>x</b> xe"
            "</pre>be",
            "alpha xe be",
        ),
        # Words glued across inline elements count once; block elements part them.
        (
            "<div><p>fa<b>st</b> and <i>slow</i>ly</p><p>one<br>two</p></div>",
            "fast and slowly one two",
        ),
        # Paragraphs in two parts of the page apart, the second one the content.
        (
            "<div><div><p>One two three.</p></div></div><div class='post'><div><p>Four five "
            "six seven.</p><p>Eight nine ten.</p></div></div>",
            "Four five six seven. Eight nine ten.",
        ),
        # Link text inside a hidden element still counts as link text of its container.
        (
            "<div><p>Some words of the article here.</p><div>one two<noscript><a>three four "
            "five six</a></noscript></div></div>",
            "Some words of the article here.",
        ),
    ],
)
def test_main_text_of_nested_markup(markup: str, expected: str) -> None:
    assert main_text(lxml.html.document_fromstring(markup)) == expected
