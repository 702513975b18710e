"""Sitemaps: robots.txt Sitemap lines and sitemap documents (crawl/content/sitemaps.py), and the
``sitemaps`` configuration section. Real documents, real gzip streams, a real HTTP server for
the XXE test: nothing is mocked."""

from __future__ import annotations

import gzip
import http.server
import threading
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawl.config import ConfigError, SitemapsSection, load_config
from crawl.content.sitemaps import (
    MAX_LOC_LENGTH,
    SitemapEntry,
    parse_sitemap,
    sitemaps_in_robots,
)
from crawl.hops import is_sitemap_hops, sitemap_level

CONFIG = SitemapsSection()
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
ROBOTS = "http://a.test/dir/robots.txt"


def _urlset(*locs: str, ns: str = NS, extra: str = "") -> bytes:
    xmlns = f' xmlns="{ns}"' if ns else ""
    urls = "".join(f"<url><loc>{loc}</loc>{extra}</url>\n" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset{xmlns}>\n{urls}</urlset>\n'.encode()


def _numbered(count: int) -> bytes:
    return _urlset(*(f"http://a.test/{n}" for n in range(count)))


def _urls(body: bytes, config: SitemapsSection = CONFIG, **options: object) -> list[str]:
    return [entry.url for entry in parse_sitemap(body, config, **options).urls]


# -- robots.txt -------------------------------------------------------------------------------

ROBOTS_CASES = [
    ("plain", b"Sitemap: http://a.test/s.xml\n", ["http://a.test/s.xml"]),
    ("field case", b"SITEMAP: http://a.test/1\nsiteMap: http://a.test/2\n",
     ["http://a.test/1", "http://a.test/2"]),
    ("google's site-map", b"Site-map: http://a.test/1\n", ["http://a.test/1"]),
    ("not the field", b"Sitemaps: http://a.test/1\nSitemap http://a.test/2\n", []),
    ("spaces", b"  Sitemap \t:   http://a.test/1   \n", ["http://a.test/1"]),
    ("in a group", b"User-agent: x\nDisallow: /\nSitemap: http://a.test/1\nAllow: /y\n",
     ["http://a.test/1"]),
    ("root-relative", b"Sitemap: /s.xml\n", ["http://a.test/s.xml"]),
    ("path-relative", b"Sitemap: s.xml\n", ["http://a.test/dir/s.xml"]),
    ("scheme-relative", b"Sitemap: //b.test/s.xml\n", ["http://b.test/s.xml"]),
    ("other host", b"Sitemap: https://b.test/s.xml.gz\n", ["https://b.test/s.xml.gz"]),
    ("comment", b"Sitemap: http://a.test/s.xml # the main one\n", ["http://a.test/s.xml"]),
    ("comment only", b"Sitemap: # none\n# Sitemap: http://a.test/x\n", []),
    ("empty value", b"Sitemap:\nSitemap:   \n", []),
    ("not http", b"Sitemap: ftp://a.test/s\nSitemap: mailto:x@a.test\n"
     b"Sitemap: javascript:alert(1)\nSitemap: http://\nSitemap: http:///nohost\n"
     b"Sitemap: http:s.xml\nSitemap: localhost:8080/s.xml\n", []),
    ("unparseable", b"Sitemap: http://[x/s.xml\nSitemap: http://a.test/ok\n",
     ["http://a.test/ok"]),
    ("duplicates", b"Sitemap: http://a.test/2\nSitemap: http://a.test/1\nSitemap: /2\n"
     b"Sitemap: http://a.test/2\n", ["http://a.test/2", "http://a.test/1"]),
    ("BOM", b"\xef\xbb\xbfSitemap: http://a.test/1\n", ["http://a.test/1"]),
    ("CRLF", b"User-agent: *\r\nSitemap: http://a.test/1\r\nSitemap: /2\r\n",
     ["http://a.test/1", "http://a.test/2"]),
    ("CR only", b"User-agent: *\rSitemap: http://a.test/1\rSitemap: /2\r",
     ["http://a.test/1", "http://a.test/2"]),
    ("no final newline", b"Disallow: /x\nSitemap: http://a.test/1", ["http://a.test/1"]),
    ("bad bytes", b"Sitemap: http://a.test/caf\xe9\nSitemap: http://a.test/2\n",
     ["http://a.test/caf\ufffd", "http://a.test/2"]),
    ("form feed is no line end", b"Sitemap: http://a.test/1\x0cSitemap: /2\n",
     ["http://a.test/1\x0cSitemap: /2"]),
]


@pytest.mark.parametrize(("body", "expected"), [case[1:] for case in ROBOTS_CASES],
                         ids=[case[0] for case in ROBOTS_CASES])
def test_sitemap_lines_of_a_robots_txt(body: bytes, expected: list[str]) -> None:
    assert sitemaps_in_robots(body, ROBOTS, 50) == (expected, 0)


@pytest.mark.parametrize(("limit", "kept", "dropped"), [(1, 1, 9), (3, 3, 7), (10, 10, 0),
                                                        (50, 10, 0)])
def test_sitemap_lines_beyond_the_limit_are_counted(limit: int, kept: int, dropped: int) -> None:
    body = "".join(f"Sitemap: http://a.test/s{n}.xml\n" for n in range(10)).encode()
    body += b"Sitemap: http://a.test/s0.xml\n"  # a repeat is no extra line over the limit
    urls, over = sitemaps_in_robots(body, ROBOTS, limit)
    assert urls == [f"http://a.test/s{n}.xml" for n in range(kept)]
    assert over == dropped


# -- urlset and index -------------------------------------------------------------------------


def test_a_urlset_with_its_fields() -> None:
    body = (
        f'<urlset xmlns="{NS}"><url>\n  <loc>\n    http://a.test/p?x=1&amp;y=2\n  </loc>\n'
        "<lastmod> 2026-11-01 </lastmod><changefreq>Daily</changefreq>"
        "<priority>0.8</priority></url>"
        "<url><loc><![CDATA[http://a.test/cdata?a=1&b=2]]></loc><lastmod></lastmod></url>"
        "<url><loc>http://a.test/&#x41;&#66;</loc><changefreq>sometimes</changefreq></url>"
        "</urlset>"
    ).encode()
    document = parse_sitemap(body, CONFIG)
    assert (document.kind, document.error, document.rejected) == ("urlset", "", {})
    assert document.sitemaps == []
    assert document.urls == [
        SitemapEntry("http://a.test/p?x=1&y=2", "2026-11-01", "daily", 0.8),
        SitemapEntry("http://a.test/cdata?a=1&b=2", None, None, None),
        SitemapEntry("http://a.test/AB", None, None, None),
    ]


@pytest.mark.parametrize(
    ("text", "priority"),
    [("0.8", 0.8), ("1", 1.0), ("1.0", 1.0), ("0", 0.0), ("0.0", 0.0), (".5", 0.5),
     ("1.", 1.0), (" 0.3 ", 0.3), ("1.5", None), ("2", None), ("-0.1", None), ("high", None),
     ("nan", None), ("inf", None), ("1e-1", None), ("0,5", None), ("0.5_0", None), ("", None)],
)
def test_priority_is_a_number_from_0_to_1(text: str, priority: float | None) -> None:
    body = _urlset("http://a.test/1", extra=f"<priority>{text}</priority>")
    assert parse_sitemap(body, CONFIG).urls == [
        SitemapEntry("http://a.test/1", None, None, priority)
    ]


def test_absent_fields_are_none() -> None:
    assert parse_sitemap(_urlset("http://a.test/1"), CONFIG).urls == [
        SitemapEntry("http://a.test/1", None, None, None)
    ]


@pytest.mark.parametrize(
    "ns", [NS, "http://www.google.com/schemas/sitemap/0.84", "", "urn:anything"]
)
def test_any_namespace_or_none(ns: str) -> None:
    body = _urlset("http://a.test/1", "http://a.test/2", ns=ns, extra="<priority>0.5</priority>")
    document = parse_sitemap(body, CONFIG)
    assert document.urls == [SitemapEntry("http://a.test/1", priority=0.5),
                             SitemapEntry("http://a.test/2", priority=0.5)]


def test_a_prefixed_namespace() -> None:
    body = (f'<s:urlset xmlns:s="{NS}"><s:url><s:loc>http://a.test/1</s:loc>'
            "<s:lastmod>2026-01-01</s:lastmod></s:url></s:urlset>").encode()
    assert parse_sitemap(body, CONFIG).urls == [SitemapEntry("http://a.test/1", "2026-01-01")]


def test_extension_elements_are_not_entries_or_fields() -> None:
    # Google's image and video extensions nest <image:loc> and the like inside an entry, and a
    # foreign <x:url> inside one must not be read as an entry of its own.
    body = (
        f'<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"'
        ' xmlns:x="urn:x"><url><image:image><image:loc>http://cdn.test/i.jpg</image:loc>'
        "</image:image><x:url><x:loc>http://a.test/nested</x:loc></x:url>"
        "<loc>http://a.test/page</loc></url></urlset>"
    ).encode()
    document = parse_sitemap(body, CONFIG)
    assert (document.urls, document.rejected) == ([SitemapEntry("http://a.test/page")], {})


def test_names_are_case_sensitive() -> None:
    upper = b"<URLSET><URL><LOC>http://a.test/1</LOC></URL></URLSET>"
    assert (parse_sitemap(upper, CONFIG).kind, parse_sitemap(upper, CONFIG).error) == (
        "", "sitemap:unknown-format")
    mixed = b"<urlset><URL><LOC>http://a.test/1</LOC></URL><url><Loc>http://a.test/2</Loc>" \
            b"</url></urlset>"
    document = parse_sitemap(mixed, CONFIG)
    assert (document.kind, document.urls, document.rejected) == (
        "urlset", [], {"sitemap:bad-entry": 1})


def test_a_sitemap_index() -> None:
    body = (
        f'<sitemapindex xmlns="{NS}"><sitemap><loc>http://a.test/s1.xml</loc>'
        "<lastmod>2026-01-01</lastmod></sitemap>"
        "<sitemap><loc> http://a.test/s2.xml.gz </loc></sitemap>"
        "<sitemap><loc>/relative.xml</loc></sitemap></sitemapindex>"
    ).encode()
    document = parse_sitemap(body, CONFIG)
    assert (document.kind, document.urls, document.error) == ("index", [], "")
    assert document.sitemaps == [SitemapEntry("http://a.test/s1.xml", "2026-01-01"),
                                 SitemapEntry("http://a.test/s2.xml.gz")]
    assert document.rejected == {"sitemap:bad-entry": 1}


# -- text and feeds ---------------------------------------------------------------------------


def test_a_text_sitemap() -> None:
    body = b"\xef\xbb\xbfhttp://a.test/1\r\n\r\n  https://a.test/2  \rnot a url\n/rel\nHTTP://a.test/3"
    document = parse_sitemap(body, CONFIG)
    assert (document.kind, document.error) == ("text", "")
    assert [e.url for e in document.urls] == ["http://a.test/1", "https://a.test/2",
                                             "HTTP://a.test/3"]
    assert document.rejected == {"sitemap:bad-entry": 2}


def test_a_text_sitemap_is_known_by_its_type_when_its_head_shows_no_url() -> None:
    body = b"junk\n" * 1000 + b"http://a.test/1\n"
    assert parse_sitemap(body, CONFIG).error == "sitemap:unknown-format"
    document = parse_sitemap(body, CONFIG, content_type="text/plain; charset=utf-8")
    assert (document.kind, _urls(body, content_type="Text/Plain")) == ("text",
                                                                      ["http://a.test/1"])
    assert document.rejected == {"sitemap:bad-entry": 1000}


def test_an_rss_feed() -> None:
    body = (
        b'<?xml version="1.0"?><rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">'
        b"<channel><title>t</title><link>http://a.test/channel</link>"
        b"<item><title>a</title><atom:link href=\"http://a.test/atom\"/>"
        b"<link>http://a.test/a</link></item>"
        b"<item><link> http://a.test/b </link><pubDate>Sun, 22 Nov 2026</pubDate></item>"
        b"<item><title>no link</title></item></channel></rss>"
    )
    document = parse_sitemap(body, CONFIG)
    assert (document.kind, document.error) == ("rss", "")
    assert document.urls == [SitemapEntry("http://a.test/a"),
                             SitemapEntry("http://a.test/b", "Sun, 22 Nov 2026")]
    assert document.rejected == {"sitemap:bad-entry": 1}


def test_an_atom_feed() -> None:
    body = (
        b'<feed xmlns="http://www.w3.org/2005/Atom"><link href="http://a.test/feed"/>'
        b'<entry><link rel="edit" href="http://a.test/edit"/><link href="http://a.test/e1"/>'
        b"<updated>2026-11-22T00:00:00Z</updated></entry>"
        b'<entry><link rel=" Alternate " href=" http://a.test/e2 "/></entry>'
        b'<entry><link rel="enclosure" href="http://a.test/e3.mp3"/></entry>'
        b'<entry><link href="relative"/></entry></feed>'
    )
    document = parse_sitemap(body, CONFIG)
    assert (document.kind, document.error) == ("atom", "")
    assert document.urls == [SitemapEntry("http://a.test/e1", "2026-11-22T00:00:00Z"),
                             SitemapEntry("http://a.test/e2")]
    assert document.rejected == {"sitemap:bad-entry": 2}


# -- what real sitemaps do wrong --------------------------------------------------------------

_ONE = b'<urlset xmlns="' + NS.encode() + b'"><url><loc>http://a.test/1</loc></url></urlset>'


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(_ONE, id="no declaration"),
        pytest.param(b"\xef\xbb\xbf" + _ONE, id="BOM"),
        pytest.param(b'\n\n  <?xml version="1.0" encoding="UTF-8"?>\n' + _ONE,
                     id="whitespace before the declaration"),
        pytest.param(b'\xef\xbb\xbf\r\n<?xml version="1.0"?>' + _ONE, id="BOM and whitespace"),
        pytest.param('<?xml version="1.0" encoding="UTF-16"?>'.encode("utf-16") +
                     _ONE.decode().encode("utf-16-le"), id="UTF-16"),
        pytest.param(b"<urlset><url><loc>http://a.test/<!-- x -->1</loc></url></urlset>",
                     id="comment in the loc"),
        pytest.param(b"<!-- generated --><?pi x?><!DOCTYPE urlset><urlset><url>\n\t<loc>\n"
                     b"http://a.test/1\n</loc>\n</url></urlset>", id="prolog and whitespace"),
    ],
)
def test_tolerated_faults(body: bytes) -> None:
    document = parse_sitemap(body, CONFIG)
    assert (document.urls, document.error) == ([SitemapEntry("http://a.test/1")], "")


def test_a_declared_encoding_is_honoured() -> None:
    body = '<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>http://a.test/é</loc>' \
           "</url></urlset>"
    assert _urls(body.encode("latin-1")) == ["http://a.test/é"]


def test_a_bare_ampersand_or_html_entity_is_repaired() -> None:
    body = (
        b"<urlset><url><loc>http://a.test/?a=1&amp;b=2</loc></url>"
        b"<url><loc>http://a.test/?a=1&b=2&c</loc></url>"
        b"<url><loc><![CDATA[http://a.test/?cdata=1&amp;x=2]]></loc></url>"
        b"<url><loc>http://a.test/&nbsp;x&eacute;</loc></url>"
        b"<url><loc>http://a.test/&#38;</loc></url></urlset>"
    )
    document = parse_sitemap(body, CONFIG)
    assert [e.url for e in document.urls] == [
        "http://a.test/?a=1&b=2",
        "http://a.test/?a=1&b=2&c",
        "http://a.test/?cdata=1&amp;x=2",  # literal in CDATA: left as written
        "http://a.test/\xa0x\xe9",
        "http://a.test/&",
    ]
    assert document.error == ""


def test_an_unknown_entity_is_no_repair() -> None:
    body = b"<urlset><url><loc>http://a.test/1</loc></url><url><loc>http://a.test/&bogus;</loc>" \
           b"</url><url><loc>http://a.test/3</loc></url></urlset>"
    document = parse_sitemap(body, CONFIG)
    assert (_urls(body), document.error) == (["http://a.test/1"], "sitemap:malformed-xml")


def test_malformed_xml_keeps_the_entries_before_the_error() -> None:
    body = _urlset("http://a.test/1", "http://a.test/2")[:-10] + b"<url><loc>oops</urlset>"
    document = parse_sitemap(body, CONFIG)
    assert document.error == "sitemap:malformed-xml"
    assert [e.url for e in document.urls] == ["http://a.test/1", "http://a.test/2"]


def test_garbage_after_the_root_keeps_the_entries() -> None:
    body = _urlset("http://a.test/1", "http://a.test/2") + b"<html>oops</html>"
    document = parse_sitemap(body, CONFIG)
    assert (document.kind, document.error) == ("urlset", "sitemap:malformed-xml")
    assert [e.url for e in document.urls] == ["http://a.test/1", "http://a.test/2"]
    assert parse_sitemap(_urlset("http://a.test/1") + b"\n<!-- fine -->\n", CONFIG).error == ""


def test_bad_entries_are_counted_not_kept() -> None:
    longest = "http://a.test/" + "x" * (MAX_LOC_LENGTH - len("http://a.test/"))
    body = _urlset("http://a.test/ok", "", "   ", "javascript:alert(1)", "/relative",
                   "ftp://a.test/f", "http://", "http:///path", "http://[x/bad-ipv6", longest,
                   longest + "y")
    document = parse_sitemap(body, CONFIG)
    assert [e.url for e in document.urls] == ["http://a.test/ok", "http://[x/bad-ipv6", longest]
    assert document.rejected == {"sitemap:bad-entry": 8}
    missing = parse_sitemap(b"<urlset><url><lastmod>2026-01-01</lastmod></url></urlset>", CONFIG)
    assert (missing.urls, missing.rejected) == ([], {"sitemap:bad-entry": 1})


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"", "sitemap:empty"),
        (b"   \r\n\t", "sitemap:empty"),
        (b"\xef\xbb\xbf", "sitemap:empty"),
        (b"<html><body>Not found</body></html>", "sitemap:unknown-format"),
        (b"<!DOCTYPE html>\n<html><body><a href='http://a.test/'>x</a></body></html>",
         "sitemap:unknown-format"),
        (b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>',
         "sitemap:unknown-format"),
        (b"%PDF-1.4 binary", "sitemap:unknown-format"),
        (b'<?xml version="1.0"?>', "sitemap:malformed-xml"),
        (b"<urlset><url><loc>http://a.test/1", "sitemap:malformed-xml"),
    ],
)
def test_what_is_no_sitemap(body: bytes, error: str) -> None:
    document = parse_sitemap(body, CONFIG)
    assert (document.error, document.urls, document.sitemaps) == (error, [], [])
    assert document.kind == ("urlset" if body.startswith(b"<urlset") else "")


# -- limits -----------------------------------------------------------------------------------


def test_entries_past_max_urls_are_counted() -> None:
    config = SitemapsSection(max_urls=3)
    document = parse_sitemap(_numbered(10), config)
    assert [e.url for e in document.urls] == ["http://a.test/0", "http://a.test/1",
                                              "http://a.test/2"]
    assert (document.rejected, document.error) == ({"sitemap:over-limit": 7}, "")


def test_max_urls_counts_the_sitemaps_of_an_index() -> None:
    body = b"<sitemapindex>" + b"".join(
        f"<sitemap><loc>http://a.test/s{n}.xml</loc></sitemap>".encode() for n in range(5)
    ) + b"</sitemapindex>"
    document = parse_sitemap(body, SitemapsSection(max_urls=2))
    assert [e.url for e in document.sitemaps] == ["http://a.test/s0.xml", "http://a.test/s1.xml"]
    assert document.rejected == {"sitemap:over-limit": 3}


def test_a_body_over_max_bytes_is_cut_and_read_up_to_the_cut() -> None:
    body = _numbered(1000)
    document = parse_sitemap(body, SitemapsSection(max_bytes=4096))
    assert document.error == "sitemap:too-large"
    assert 50 < len(document.urls) < 200
    assert [e.url for e in document.urls] == [f"http://a.test/{n}"
                                              for n in range(len(document.urls))]
    assert parse_sitemap(body[:4096], SitemapsSection(max_bytes=4096)).error == \
        "sitemap:malformed-xml"  # the same bytes, not cut here: a broken document


def test_a_body_cut_by_the_fetcher_is_read_as_far_as_it_goes() -> None:
    body = _numbered(50)
    document = parse_sitemap(body[: len(body) // 2], CONFIG, truncated=True)
    assert document.error == "sitemap:too-large"
    assert 10 < len(document.urls) < 50
    # The last line of a text sitemap cut short may be a URL cut short: left out.
    text = b"http://a.test/1\nhttp://a.test/2\nhttp://a.test/3"
    assert _urls(text, truncated=True) == ["http://a.test/1", "http://a.test/2"]
    assert _urls(text + b"\n", truncated=True) == [f"http://a.test/{n}" for n in (1, 2, 3)]
    assert _urls(text) == [f"http://a.test/{n}" for n in (1, 2, 3)]
    lines = [f"http://a.test/{n:05d}" for n in range(100)]
    whole = 1024 // (len(lines[0]) + 1)  # lines that fit in 1024 bytes; the next one is cut
    assert _urls("\n".join(lines).encode(), SitemapsSection(max_bytes=1024)) == lines[:whole]


# -- gzip -------------------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["", "application/x-gzip", "application/octet-stream",
                                          "text/html", "application/xml"])
def test_gzip_is_recognised_by_its_bytes_whatever_the_type(content_type: str) -> None:
    body = gzip.compress(_numbered(100))
    document = parse_sitemap(body, CONFIG, content_type=content_type)
    assert (document.kind, len(document.urls), document.error) == ("urlset", 100, "")


def test_a_gzipped_text_sitemap_and_several_members() -> None:
    body = gzip.compress(b"http://a.test/1\n") + gzip.compress(b"http://a.test/2\n")
    assert _urls(body) == ["http://a.test/1", "http://a.test/2"]


def _zeros_gzip(mebibytes: int) -> bytes:
    """A gzip file of ``mebibytes`` MiB of zeros after a urlset start tag, compressed as it is
    made: the bomb never exists decompressed in this process."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [compressor.compress(b"<urlset><url><loc>http://a.test/1</loc></url>")]
    chunk = bytes(1 << 20)
    parts += [compressor.compress(chunk) for _ in range(mebibytes)]
    parts.append(compressor.flush())
    return b"".join(parts)


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return _zeros_gzip(200)  # 200 MiB in about 200 KB


def test_a_gzip_bomb_is_refused_in_little_memory(bomb: bytes) -> None:
    assert len(bomb) < 400_000
    tracemalloc.start()
    try:
        document = parse_sitemap(bomb, CONFIG)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (document.error, document.kind, document.urls) == ("sitemap:compression-ratio", "", [])
    assert peak < 8 << 20, f"{peak} bytes: the bomb was decompressed before it was refused"


def test_a_gzip_bomb_without_a_ratio_limit_is_cut_at_max_bytes_in_little_memory(
    bomb: bytes,
) -> None:
    config = SitemapsSection(max_bytes=1 << 20, max_decompression_ratio=0)
    tracemalloc.start()
    try:
        document = parse_sitemap(bomb, config)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert document.error == "sitemap:too-large"
    assert peak < 8 << 20, f"{peak} bytes: the bomb was not decompressed as a stream"


def test_a_gzip_within_the_ratio_is_cut_at_max_bytes() -> None:
    config = SitemapsSection(max_bytes=4096, max_decompression_ratio=0)
    document = parse_sitemap(gzip.compress(_numbered(1000)), config)
    assert document.error == "sitemap:too-large"
    assert 50 < len(document.urls) < 1000
    assert document.urls[0].url == "http://a.test/0"


def test_a_real_sitemap_passes_the_default_ratio() -> None:
    body = _urlset(*(f"https://www.example.com/catalogue/product-{n}.html" for n in range(20_000)),
                   extra="<lastmod>2026-01-01T00:00:00+00:00</lastmod>"
                         "<changefreq>daily</changefreq><priority>0.5</priority>")
    compressed = gzip.compress(body, 9)
    assert len(body) / len(compressed) > 30  # as repetitive as sitemaps get
    document = parse_sitemap(compressed, CONFIG)
    assert (document.error, len(document.urls)) == ("", 20_000)


def test_broken_gzip_keeps_what_came_before() -> None:
    body = gzip.compress(_numbered(2000))
    document = parse_sitemap(body[: len(body) // 2], CONFIG)
    assert document.error == "sitemap:invalid-gzip"
    assert document.urls[:2] == [SitemapEntry("http://a.test/0"), SitemapEntry("http://a.test/1")]
    assert parse_sitemap(b"\x1f\x8bnot gzip at all", CONFIG).error == "sitemap:invalid-gzip"
    # Cut by the fetcher's size limit, the same bytes are a sitemap too large, not a bad one.
    cut = parse_sitemap(body[: len(body) // 2], CONFIG, truncated=True)
    assert (cut.error, cut.urls) == ("sitemap:too-large", document.urls)


# -- hostile XML ------------------------------------------------------------------------------


def test_entities_are_not_expanded() -> None:
    body = (b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY e "x">]>'
            b"<urlset><url><loc>http://a.test/&e;</loc></url>"
            b"<url><loc>http://a.test/plain</loc></url></urlset>")
    document = parse_sitemap(body, CONFIG)
    assert (_urls(body), document.rejected) == (["http://a.test/plain"], {"sitemap:bad-entry": 1})


def test_external_entities_and_dtds_are_not_loaded(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:SECRET")
    # Loading this DTD, as the document's or as a parameter entity, is a syntax error.
    dtd = tmp_path / "evil.dtd"
    dtd.write_text('<!ENTITY leak "LEAKED"> <!ENTITY broken')
    body = (
        f'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "{dtd.as_uri()}" ['
        f'<!ENTITY % ext SYSTEM "{dtd.as_uri()}"> %ext;'
        f'<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>'
        "<urlset><url><loc>http://a.test/&xxe;</loc></url>"
        "<url><loc>http://a.test/&leak;</loc></url>"
        "<url><loc>http://a.test/plain</loc></url></urlset>"
    ).encode()
    document = parse_sitemap(body, CONFIG)
    assert (document.error, document.urls) == ("", [SitemapEntry("http://a.test/plain")])
    assert document.rejected == {"sitemap:bad-entry": 2}


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server answering every GET with an entity declaration; yields its base
    URL and the paths asked for."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server name
            asked.append(self.path)
            body = b'<!ENTITY leak "LEAKED">'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}", asked
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_nothing_is_fetched_from_the_network(server: tuple[str, list[str]]) -> None:
    base, asked = server
    body = (
        f'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "{base}/doctype.dtd" ['
        f'<!ENTITY % ext SYSTEM "{base}/parameter.dtd"> %ext;'
        f'<!ENTITY web SYSTEM "{base}/entity">]>'
        "<urlset><url><loc>http://a.test/&web;</loc></url>"
        "<url><loc>http://a.test/plain</loc></url></urlset>"
    ).encode()
    document = parse_sitemap(body, CONFIG)
    assert document.urls == [SitemapEntry("http://a.test/plain")]
    assert asked == []


def _laughs(levels: int) -> str:
    return "".join(
        f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10 if n else "lol"}">' for n in range(levels)
    )


@pytest.mark.parametrize(
    ("root", "entry"),
    [("urlset", "<url><loc>http://a.test/{}</loc></url>"),
     ("feed", '<entry><link href="http://a.test/{}"/></entry>')],  # attributes expand
)
def test_a_billion_laughs_is_not_expanded(root: str, entry: str) -> None:
    body = (f'<?xml version="1.0"?><!DOCTYPE {root} [{_laughs(10)}]><{root}>'
            f'{entry.format("ok")}{entry.format("&lol9;")}{entry.format("after")}</{root}>')
    document = parse_sitemap(body.encode(), CONFIG)
    # libxml2 (2.11 on) stops at its entity amplification limit, which ends the document;
    # the entries before the bomb are kept either way.
    assert document.urls[0] == SitemapEntry("http://a.test/ok")
    assert (document.urls, document.error) in [
        ([SitemapEntry("http://a.test/ok")], "sitemap:malformed-xml"),
        ([SitemapEntry("http://a.test/ok"), SitemapEntry("http://a.test/after")], ""),
    ]


def test_a_small_laugh_is_a_bad_entry_not_an_expansion() -> None:
    body = (f'<?xml version="1.0"?><!DOCTYPE urlset [{_laughs(3)}]><urlset>'
            "<url><loc>http://a.test/&lol2;</loc></url><url><loc>http://a.test/ok</loc></url>"
            "</urlset>").encode()
    document = parse_sitemap(body, CONFIG)
    assert (_urls(body), document.rejected) == (["http://a.test/ok"], {"sitemap:bad-entry": 1})


def test_deep_nesting_is_refused_without_recursion() -> None:
    body = b"<urlset><url><loc>http://a.test/1</loc></url>" + b"<a>" * 100_000 + \
        b"</a>" * 100_000 + b"<url><loc>http://a.test/2</loc></url></urlset>"
    document = parse_sitemap(body, CONFIG)
    assert (_urls(body), document.error) == (["http://a.test/1"], "sitemap:malformed-xml")


# -- hops -------------------------------------------------------------------------------------


def test_hop_rules() -> None:
    assert is_sitemap_hops("S")
    assert is_sitemap_hops("SS")
    assert is_sitemap_hops("SR")  # a sitemap that redirected is still one
    assert not is_sitemap_hops("SM")
    assert not is_sitemap_hops("LP")
    assert not is_sitemap_hops("")
    assert (sitemap_level("S"), sitemap_level("SSR"), sitemap_level("L")) == (1, 2, 0)


# -- configuration ----------------------------------------------------------------------------


def test_the_defaults() -> None:
    assert load_config().sitemaps == SitemapsSection(
        enabled=True, max_per_robots=50, max_bytes=50 * 1024 * 1024, max_urls=50_000,
        max_decompression_ratio=200.0, max_nesting=2,
    )


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [("enabled", "false", False), ("max_per_robots", "1", 1), ("max_bytes", "1024", 1024),
     ("max_urls", "1", 1), ("max_decompression_ratio", "0", 0.0),
     ("max_decompression_ratio", "1.5", 1.5), ("max_nesting", "1", 1), ("max_nesting", "10", 10)],
)
def test_valid_values(key: str, value: str, expected: object) -> None:
    section = load_config(overrides={f"sitemaps.{key}": value}).sitemaps
    assert getattr(section, key) == expected
    assert section != SitemapsSection()


@pytest.mark.parametrize(
    ("key", "value"),
    [("enabled", "maybe"), ("max_per_robots", "0"), ("max_per_robots", "-1"),
     ("max_per_robots", "many"), ("max_bytes", "1023"), ("max_urls", "0"),
     ("max_decompression_ratio", "0.5"), ("max_decompression_ratio", "-1"),
     ("max_decompression_ratio", "nan"), ("max_nesting", "0"), ("max_nesting", "11"),
     ("max_nesting", "1.5")],
)
def test_invalid_values_name_their_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=rf"^sitemaps\.{key}: "):
        load_config(overrides={f"sitemaps.{key}": value})


def test_an_unknown_key_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"^sitemaps\.max_url: unknown key"):
        load_config(overrides={"sitemaps.max_url": "5"})
