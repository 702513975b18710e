"""What a page leads to (crawl.content.links.LinkExtractor): every kind of link with its hop,
nofollow, noindex and X-Robots-Tag, meta refresh, Link headers, the canonical URL and the outlink
cap, as tables of pages and what they give; and a fuzz test that nothing raises."""

from __future__ import annotations

import html

import lxml.html
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawl.config import LINK_KINDS, UserAgentSection
from crawl.content.links import _DEFAULT_TOKEN, KINDS, LinkExtractor, extract_links
from crawl.model import FetchResult
from crawl.status import Status

PAGE = "http://a.test/dir/page.html"
DEFAULT = LinkExtractor()


def _page(body: bytes | str, headers: list[tuple[str, str]] | None = None,
          content_type: str = "text/html") -> FetchResult:
    if isinstance(body, str):
        body = body.encode()
    return FetchResult(url=PAGE, status=Status.FETCHED, reason="", http_status=200,
                       response_headers=[("Content-Type", content_type), *(headers or [])],
                       body=body)


def _links(body: bytes | str, headers: list[tuple[str, str]] | None = None,
           extractor: LinkExtractor = DEFAULT) -> list[tuple[str, str]]:
    return extractor.extract(_page(body, headers)).links


def test_the_kinds_are_those_of_the_configuration() -> None:
    assert KINDS == LINK_KINDS
    assert _DEFAULT_TOKEN == UserAgentSection().product


# -- every kind of link -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('<a href="x">x</a>', [("http://a.test/dir/x", "L")]),
        ('<map><area href="/m"></map>', [("http://a.test/m", "L")]),
        ('<link rel=next href="/2">', [("http://a.test/2", "L")]),
        ('<link rel="alternate" hreflang=fr href="/fr/">', [("http://a.test/fr/", "L")]),
        ('<link href="/norel">', [("http://a.test/norel", "L")]),
        ('<link rel=canonical href="/c">', [("http://a.test/c", "L")]),
        ('<link rel=stylesheet href="s.css">', [("http://a.test/dir/s.css", "E")]),
        ('<link rel="Alternate StyleSheet" href="t.css">', [("http://a.test/dir/t.css", "E")]),
        ('<link rel="shortcut icon" href="/favicon.ico">', [("http://a.test/favicon.ico", "E")]),
        ('<link rel=apple-touch-icon href="/t.png">', [("http://a.test/t.png", "E")]),
        ('<link rel=preload as=font href="/f.woff2">', [("http://a.test/f.woff2", "E")]),
        ('<link rel=modulepreload href="/m.js">', [("http://a.test/m.js", "E")]),
        ('<link rel=manifest href="/app.webmanifest">', [("http://a.test/app.webmanifest", "E")]),
        ('<link rel=dns-prefetch href="//cdn.test">', []),
        ('<link rel=preconnect href="https://cdn.test">', []),
        ('<link rel=pingback href="/xmlrpc.php">', []),
        ('<link rel=stylesheet>', []),
        ('<frameset><frame src="f1"><frame src="f2"></frameset>',
         [("http://a.test/dir/f1", "E"), ("http://a.test/dir/f2", "E")]),
        ('<iframe src="https://v.test/embed/1"></iframe>', [("https://v.test/embed/1", "E")]),
        ('<img src="i.png" srcset="i2.png 2x">', [("http://a.test/dir/i.png", "E")]),
        ('<img alt="no source">', []),
        ('<script src="/app.js"></script><script>var u = "/inline";</script>',
         [("http://a.test/app.js", "E")]),
        ('<embed src="m.swf">', [("http://a.test/dir/m.swf", "E")]),
        ('<object data="doc.pdf"></object>', [("http://a.test/dir/doc.pdf", "E")]),
        ('<video src="v.mp4"><track src="v.vtt"></video>',
         [("http://a.test/dir/v.mp4", "E"), ("http://a.test/dir/v.vtt", "E")]),
        ('<audio><source src="a.ogg" type="audio/ogg"></audio>',
         [("http://a.test/dir/a.ogg", "E")]),
        ('<meta http-equiv="refresh" content="5; url=/next">', [("http://a.test/next", "R")]),
        # <base> applies to every HTML kind
        ('<base href="http://b.test/x/"><a href=1>1</a><img src=2><link rel=next href=3>',
         [("http://b.test/x/3", "L"), ("http://b.test/x/1", "L"), ("http://b.test/x/2", "E")]),
        # a URL both linked and embedded is a link
        ('<img src="/p.jpg"><a href="/p.jpg">big</a>', [("http://a.test/p.jpg", "L")]),
        # refresh first, then navigation (<link> before anchors), then embeds in document order
        ('<a href=a>a</a><img src=i><link rel=stylesheet href=s><link rel=next href=n>'
         '<meta http-equiv=Refresh content="0;url=r"><script src=j></script>',
         [("http://a.test/dir/r", "R"), ("http://a.test/dir/n", "L"),
          ("http://a.test/dir/a", "L"), ("http://a.test/dir/i", "E"),
          ("http://a.test/dir/s", "E"), ("http://a.test/dir/j", "E")]),
    ],
)
def test_each_kind_of_link_with_its_hop(body: str, expected: list[tuple[str, str]]) -> None:
    assert _links(body) == expected


_EVERY_KIND = (
    '<a href=a>a</a><map><area href=area></map><link rel=next href=link>'
    '<link rel=stylesheet href=css><link rel=icon href=ico><iframe src=frame></iframe>'
    '<img src=img><script src=js></script><embed src=embed><video src=media></video>'
    '<meta http-equiv=refresh content="1; url=refresh">'
)


@pytest.mark.parametrize(
    ("follow", "expected"),
    [
        (KINDS, ["refresh", "link", "a", "area", "css", "ico", "frame", "img", "js", "embed",
                 "media"]),
        (("a",), ["a"]),
        (("a", "area", "link", "refresh"), ["refresh", "link", "a", "area"]),
        (("img", "stylesheet"), ["css", "img"]),
        (("frame", "script", "embed", "media", "icon"), ["ico", "frame", "js", "embed", "media"]),
        ((), []),
    ],
)
def test_only_the_kinds_configured_are_followed(
    follow: tuple[str, ...], expected: list[str]
) -> None:
    links = _links(_EVERY_KIND, extractor=LinkExtractor(follow=follow))
    assert [url.rsplit("/", 1)[1] for url, _ in links] == expected


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown link kinds \['images'\]"):
        LinkExtractor(follow=("a", "images"))


# -- nofollow ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected", "dropped"),
    [
        ('<a href=x rel=nofollow>x</a><a href=y>y</a>', ["y"], 1),
        ('<a href=x rel="NoFollow noopener">x</a>', [], 1),
        ('<a href=x rel="\tnoopener\nnofollow ">x</a>', [], 1),
        ('<area href=x rel=nofollow>', [], 1),
        ('<link rel="next nofollow" href=x>', [], 1),
        ('<a href=x rel=ugc>x</a><a href=y rel=sponsored>y</a>', ["x", "y"], 0),
        ('<a href=x rel=nofollowing>x</a><a href=y rel="no follow">y</a>', ["x", "y"], 0),
        # the same URL once followed, once not: followed, where it is followed
        ('<a href=x rel=nofollow>1</a><a href=y>2</a><a href=x>3</a>', ["y", "x"], 1),
        # rel=nofollow is about a link, not the page's embeds
        ('<a href=x rel=nofollow>x</a><img src=i>', ["i"], 1),
    ],
)
def test_rel_nofollow_links_are_not_followed(body: str, expected: list[str], dropped: int) -> None:
    parsed = DEFAULT.extract(_page(body))
    assert [url.rsplit("/", 1)[1] for url in parsed.urls] == expected
    assert parsed.rejected["nofollow:link"] == dropped
    assert not parsed.nofollow  # a link's rel is not the page's directive


@pytest.mark.parametrize(
    ("encoding", "content_type"),
    [
        ("utf-16", "text/html"),  # with a byte order mark
        ("utf-16-le", "text/html; charset=UTF-16LE"),
        ("utf-16-be", "text/html; charset=utf_16_be"),
        ("utf-8", "text/html"),
        ("cp1252", "text/html; charset=windows-1252"),
    ],
)
def test_rel_nofollow_is_seen_in_any_encoding(encoding: str, content_type: str) -> None:
    body = '<a href=x rel="NOFOLLOW">x</a><a href=y>y</a>'.encode(encoding)
    parsed = DEFAULT.extract(_page(body, content_type=content_type))
    assert parsed.urls == ["http://a.test/dir/y"]


def test_nofollow_can_be_ignored() -> None:
    ignoring = LinkExtractor(obey_nofollow=False)
    body = ('<meta name=robots content=nofollow><a href=x rel=nofollow>x</a>'
            '<link rel=nofollow href=y>')
    parsed = ignoring.extract(_page(body, [("Link", "</z>; rel=nofollow")]))
    assert parsed.urls == ["http://a.test/z", "http://a.test/dir/y", "http://a.test/dir/x"]
    assert parsed.nofollow  # still recorded
    assert not parsed.rejected


# -- robots directives: <meta> and X-Robots-Tag -----------------------------------------------


@pytest.mark.parametrize(
    ("head", "headers", "noindex", "nofollow"),
    [
        ('<meta name=robots content="noindex,nofollow">', [], True, True),
        ('<meta name="ROBOTS" content="NOINDEX">', [], True, False),
        ('<meta name=robots content=" nofollow ">', [], False, True),
        ('<meta name=robots content=none>', [], True, True),
        ('<meta name=robots content=all>', [], False, False),
        ('<meta name=robots content="index, follow">', [], False, False),
        ('<meta name=robots content="noindex nofollow">', [], True, True),
        ('<meta name=robots content="max-snippet:20, noarchive">', [], False, False),
        ('<meta name=robots>', [], False, False),
        ('<meta name=pyflink-crawler content=nofollow>', [], False, True),
        ('<meta name=" PyFlink-Crawler " content=NoIndex>', [], True, False),
        ('<meta name=googlebot content="noindex,nofollow">', [], False, False),
        ('<meta name=robots content=noindex><meta name=pyflink-crawler content=nofollow>', [],
         True, True),
        ('<meta name=robots content=all><meta name=robots content=nofollow>', [], False, True),
        ("", [("X-Robots-Tag", "noindex")], True, False),
        ("", [("X-Robots-Tag", "noindex, nofollow")], True, True),
        ("", [("x-robots-tag", "NONE")], True, True),
        ("", [("X-Robots-Tag", "all")], False, False),
        ("", [("X-Robots-Tag", "pyflink-crawler: nofollow")], False, True),
        ("", [("X-Robots-Tag", "PyFlink-Crawler: noindex, nofollow")], True, True),
        ("", [("X-Robots-Tag", "googlebot: noindex, nofollow")], False, False),
        ("", [("X-Robots-Tag", "googlebot: noindex, pyflink-crawler: nofollow")], False, True),
        ("", [("X-Robots-Tag", "googlebot: none"), ("X-Robots-Tag", "noindex")], True, False),
        ("", [("X-Robots-Tag", "unavailable_after: 25 Jun 2010 15:00:00 PST")], False, False),
        ("", [("X-Robots-Tag", "unavailable_after: Friday, 25-Jun-10 15:00:00 PST, noindex")],
         True, False),
        ("", [("X-Robots-Tag", "max-image-preview: large, nofollow")], False, True),
        ("", [("X-Robots-Tag", ";;: ,, nofollow")], False, True),
        ("", [("X-Robots-Tag", ":nofollow")], False, False),
        ("", [("X-Robots-Tag", "")], False, False),
    ],
)
def test_robots_directives_for_our_token(
    head: str, headers: list[tuple[str, str]], noindex: bool, nofollow: bool
) -> None:
    parsed = DEFAULT.extract(_page(f"<html><head>{head}</head><body><a href=x>x</a>", headers))
    assert (parsed.noindex, parsed.nofollow) == (noindex, nofollow)
    assert parsed.urls == ([] if nofollow else ["http://a.test/dir/x"])


def test_the_token_is_the_configured_one() -> None:
    mine = LinkExtractor(robots_token="MyBot")
    body = "<meta name=mybot content=noindex><meta name=pyflink-crawler content=nofollow>"
    parsed = mine.extract(_page(body, [("X-Robots-Tag", "mybot: nofollow")]))
    assert (parsed.noindex, parsed.nofollow) == (True, True)
    other = mine.extract(_page("<meta name=pyflink-crawler content=none>",
                               [("X-Robots-Tag", "pyflink-crawler: none")]))
    assert (other.noindex, other.nofollow) == (False, False)


def test_a_nofollow_page_keeps_its_embeds_and_its_refresh() -> None:
    body = ('<meta name=robots content=nofollow><meta http-equiv=refresh content="0; url=/r">'
            '<link rel=next href=/n><link rel=stylesheet href=/s.css><a href=/a>a</a>'
            '<img src=/i.png>')
    parsed = DEFAULT.extract(_page(body, [("Link", "</h>; rel=next")]))
    assert parsed.links == [("http://a.test/r", "R"), ("http://a.test/s.css", "E"),
                            ("http://a.test/i.png", "E")]
    assert parsed.rejected["nofollow:page"] == 3


def test_x_robots_tag_and_link_headers_of_a_page_that_is_not_html() -> None:
    result = _page(b"%PDF-1.4 <a href=x>", [("X-Robots-Tag", "noindex"),
                                            ("Link", '</doc.html>; rel="canonical"')],
                   content_type="application/pdf")
    parsed = DEFAULT.extract(result)
    assert parsed.noindex
    assert parsed.canonical == "http://a.test/doc.html"
    assert parsed.links == [("http://a.test/doc.html", "L")]


# -- meta refresh -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("5; url=http://x.test/a", "http://x.test/a"),
        ("0;URL='/b'", "http://a.test/b"),
        ('0; url="c d"', "http://a.test/dir/c%20d"),
        ("0; URL = /i ", "http://a.test/i"),
        ("0.5; url=/h", "http://a.test/h"),
        ("3, url=/e", "http://a.test/e"),
        ("3;/f", "http://a.test/f"),
        ("0; url='/j", "http://a.test/j"),
        ("0; url=/k?a=1;b=2", "http://a.test/k?a=1;b=2"),
        ("5", None),
        ("5;", None),
        ("5; url=", None),
        ("5; url=''", None),
        ("url=/g", None),
        ("-1; url=/n", None),
        ("junk", None),
        ("", None),
        ("0; url=javascript:alert(1)", None),
    ],
)
def test_meta_refresh(content: str, expected: str | None) -> None:
    body = f'<meta http-equiv="refresh" content="{html.escape(content)}"><p>x'
    assert _links(body) == ([(expected, "R")] if expected else [])


def test_only_the_first_refresh_counts_and_it_resolves_against_the_base() -> None:
    body = ('<base href="http://b.test/d/"><meta http-equiv=refresh content="0; url=one">'
            '<meta http-equiv=refresh content="0; url=two">')
    assert _links(body) == [("http://b.test/d/one", "R")]


# -- Link headers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (['</a>; rel="next"'], [("http://a.test/a", "L")]),
        (["</a>; rel=next, </b.css>; rel=stylesheet"],
         [("http://a.test/a", "L"), ("http://a.test/b.css", "E")]),
        (["<http://x.test/c.js>; rel=preload; as=script"], [("http://x.test/c.js", "E")]),
        (['</d>; title="a, b; c"; rel=next, </e>'],
         [("http://a.test/d", "L"), ("http://a.test/e", "L")]),
        (['</f>; rel="next"; rel="stylesheet"'], [("http://a.test/f", "L")]),
        (['</g>; title*=UTF-8\'de\'n%c3%a4chstes; REL = "Next"'], [("http://a.test/g", "L")]),
        (["</h>; rel=next", "</i>; rel=prev"],
         [("http://a.test/h", "L"), ("http://a.test/i", "L")]),
        (["<rel>"], [("http://a.test/dir/rel", "L")]),
        (["</p>; rel=preconnect", "</q>; rel=nofollow"], []),
        (["garbage", "<>; rel", "</unterminated; rel=next", ""], [(PAGE, "L")]),
        (['</u>; rel="unclosed, </v>; rel=next'],
         [("http://a.test/u", "L"), ("http://a.test/v", "L")]),
        (["<mailto:x@a.test>; rel=author, </w>"], [("http://a.test/w", "L")]),
    ],
)
def test_link_headers(values: list[str], expected: list[tuple[str, str]]) -> None:
    # Header links resolve against the page's URL, never the document's <base>.
    body = '<base href="http://b.test/">'
    assert _links(body, [("Link", value) for value in values]) == expected


def test_header_links_come_before_the_documents() -> None:
    body = "<link rel=next href=/html-next><a href=/a>a</a><img src=/i>"
    headers = [("Link", "</h-style>; rel=stylesheet, </h-next>; rel=next")]
    assert _links(body, headers) == [
        ("http://a.test/h-next", "L"), ("http://a.test/html-next", "L"), ("http://a.test/a", "L"),
        ("http://a.test/h-style", "E"), ("http://a.test/i", "E"),
    ]


# -- the canonical link -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "headers", "canonical"),
    [
        ('<link rel=canonical href="/c?x=1">', [], "http://a.test/c?x=1"),
        ('<LINK REL="Canonical" HREF="http://A.TEST:80/c">', [], "http://a.test/c"),
        ('<base href="http://b.test/"><link rel=canonical href=c>', [], "http://b.test/c"),
        ('<link rel=canonical href=one><link rel=canonical href=two>', [], "http://a.test/dir/one"),
        ('<link rel=canonical href=html>', [("Link", '</hdr>; rel="canonical"')],
         "http://a.test/hdr"),
        ("", [("Link", '</other>; rel=canonical; anchor="/elsewhere"')], ""),
        ('<link rel=canonical href="http://[bad">', [], ""),
        ("<link rel=canonical>", [], ""),
        ("<a href=x>x</a>", [], ""),
    ],
)
def test_the_canonical_link_is_recorded(
    body: str, headers: list[tuple[str, str]], canonical: str
) -> None:
    assert DEFAULT.extract(_page(body, headers)).canonical == canonical


def test_the_canonical_link_is_still_only_a_link_when_link_is_not_followed() -> None:
    parsed = LinkExtractor(follow=("a",)).extract(_page("<link rel=canonical href=/c>"))
    assert parsed.canonical == "http://a.test/c"
    assert parsed.links == []


# -- the cap ----------------------------------------------------------------------------------


def _anchors(*hrefs: str) -> str:
    return "".join(f"<a href='{href}'>x</a>" for href in hrefs)


@pytest.mark.parametrize(
    ("body", "cap", "expected", "dropped"),
    [
        # own host and other hosts alternate: the two other-host links survive
        (_anchors("/1", "/2", "/3", "/4", "http://b.test/5", "http://c.test/6"), 4,
         ["http://a.test/1", "http://a.test/2", "http://b.test/5", "http://c.test/6"], 2),
        (_anchors("http://b.test/1", "http://b.test/2", "http://b.test/3", "/4"), 2,
         ["http://b.test/1", "http://a.test/4"], 2),
        # embeds go first, the refresh target last
        ("<meta http-equiv=refresh content='0;url=/r'><img src=/i>" + _anchors("/1", "/2"), 3,
         ["http://a.test/r", "http://a.test/1", "http://a.test/2"], 1),
        ("<img src=/i><img src=http://cdn.test/j><img src=/k>" + _anchors("/1"), 3,
         ["http://a.test/1", "http://a.test/i", "http://cdn.test/j"], 1),
        (_anchors("/1", "/2", "/3"), 3,
         ["http://a.test/1", "http://a.test/2", "http://a.test/3"], 0),
        (_anchors("/1", "/2", "/3"), 0,  # no limit
         ["http://a.test/1", "http://a.test/2", "http://a.test/3"], 0),
        # repeats and bad URLs do not count against the cap
        (_anchors("/1", "/1#x", "mailto:m@a.test", "/2"), 2,
         ["http://a.test/1", "http://a.test/2"], 0),
    ],
)
def test_the_outlinks_of_a_page_are_capped_keeping_the_best(
    body: str, cap: int, expected: list[str], dropped: int
) -> None:
    parsed = LinkExtractor(max_outlinks=cap).extract(_page(body))
    assert parsed.urls == expected
    assert parsed.rejected["parse:over-limit"] == dropped


def test_the_default_cap_is_generous() -> None:
    parsed = extract_links(_page(_anchors(*(f"/{n}" for n in range(1500)))))
    assert len(parsed.links) == 1000
    assert parsed.urls[-1] == "http://a.test/999"
    assert parsed.rejected["parse:over-limit"] == 500


# -- the parsed document ----------------------------------------------------------------------


def test_the_parsed_document_is_kept_for_a_later_reader() -> None:
    parsed = DEFAULT.extract(_page("<html><body><p>Hello <b>world</b><a href=x>x</a></body>"))
    assert isinstance(parsed.document, lxml.html.HtmlElement)
    assert parsed.document.text_content() == "Hello worldx"
    assert DEFAULT.extract(_page(b"<!-- only a comment -->")).document is None  # not lxml's


def test_the_beautiful_soup_fallback_reads_every_kind_too() -> None:
    # lxml sees no element in a lone comment; with markup after it, lxml reads it after all,
    # so the fallback is tested directly.
    from crawl.content.links import _Found

    found = _Found()
    DEFAULT._read_soup(
        b"<base href='http://b.test/'><meta name=robots content=noindex>"
        b"<a href=a rel='nofollow'>a</a><area href=b><link rel='stylesheet' href=c>"
        b"<img src=d><meta http-equiv=refresh content='1;url=e'>", None, found)
    assert (found.base, found.anchors, found.embeds, found.refresh) == (
        "http://b.test/", ["b"], ["c", "d"], "e")
    assert (found.noindex, found.nofollow_links) == (True, 1)


# -- junk never raises ------------------------------------------------------------------------

_MARKUP = st.sampled_from([
    "<a href='", "<a href=", "'>", '">', "<img src=", "<link rel=", "stylesheet ", "nofollow",
    "<meta name=robots content=", "<meta http-equiv=refresh content='0;url=", "<base href=",
    "<iframe src=", "</a>", "<!--", "-->", "<?xml ", "encoding='utf-16'?>", "<script>", "</",
    "http://", "//x.test/", "#", "\x00", "\ufeff", "&#0;", "&amp;", "<", ">", " ", "\n",
])
_BODIES = st.one_of(
    st.binary(max_size=400),
    st.lists(st.one_of(_MARKUP, st.text(max_size=8)), max_size=40).map(
        lambda parts: "".join(parts).encode("utf-8", "surrogatepass")),
)
_HEADER_VALUES = st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(["<", ">", "/x", ";", "rel=", '"', "next", "nofollow", ",", " ",
                              "googlebot:", "pyflink-crawler:", "noindex", "none", ":"]),
             max_size=20).map("".join),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=_BODIES,
    content_type=st.sampled_from(["text/html", "text/html; charset=utf-16",
                                  "text/html; charset=x-junk", "application/xhtml+xml",
                                  "text/plain"]),
    link=_HEADER_VALUES,
    robots=_HEADER_VALUES,
    cap=st.integers(min_value=0, max_value=5),
)
def test_junk_never_raises(
    body: bytes, content_type: str, link: str, robots: str, cap: int
) -> None:
    result = FetchResult(url=PAGE, status=Status.FETCHED, reason="", http_status=200, body=body,
                         response_headers=[("Content-Type", content_type), ("Link", link),
                                           ("X-Robots-Tag", robots)])
    parsed = LinkExtractor(max_outlinks=cap).extract(result)
    assert not cap or len(parsed.links) <= cap
    assert len(set(parsed.urls)) == len(parsed.links)
    assert all(url.startswith(("http://", "https://")) for url in parsed.urls)
    assert {hop for _, hop in parsed.links} <= {"L", "E", "R"}
