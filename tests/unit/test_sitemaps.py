"""Sitemaps: robots.txt Sitemap lines and sitemap documents (crawl/sitemaps.py)."""

from __future__ import annotations

import gzip
import time

import pytest

from crawl.config import SitemapsSection
from crawl.sitemaps import (
    MAX_LOC_LENGTH,
    SitemapEntry,
    is_sitemap_hops,
    parse_sitemap,
    sitemap_level,
    sitemaps_in_robots,
)

CONFIG = SitemapsSection()
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def _urlset(*locs: str, ns: str = NS, extra: str = "") -> bytes:
    xmlns = f' xmlns="{ns}"' if ns else ""
    urls = "".join(f"<url><loc>{loc}</loc>{extra}</url>\n" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset{xmlns}>\n{urls}</urlset>\n'.encode()


# -- robots.txt ---------------------------------------------------------------------------


def test_sitemap_lines_of_a_robots_txt() -> None:
    body = (
        b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /x\r\n"
        b"Sitemap: https://a.test/sitemap.xml\r\n"
        b"sitemap:/relative.xml # a comment\n"
        b"SITEMAP :   http://b.test/other.xml.gz\n"
        b"Sitemap: https://a.test/sitemap.xml\n"  # a repeat
        b"Sitemap: ftp://a.test/no.xml\n"
        b"Sitemap:\n"
        b"Sitemaps: http://a.test/not-the-field.xml\n"
    )
    urls, dropped = sitemaps_in_robots(body, "http://a.test/robots.txt", 50)
    assert urls == [
        "https://a.test/sitemap.xml",
        "http://a.test/relative.xml",
        "http://b.test/other.xml.gz",
    ]
    assert dropped == 0


def test_sitemap_lines_beyond_the_limit_are_counted() -> None:
    body = "".join(f"Sitemap: http://a.test/s{n}.xml\n" for n in range(10)).encode()
    urls, dropped = sitemaps_in_robots(body, "http://a.test/robots.txt", 3)
    assert urls == [f"http://a.test/s{n}.xml" for n in range(3)]
    assert dropped == 7


# -- documents ----------------------------------------------------------------------------


def test_a_urlset_with_its_fields() -> None:
    body = (
        f'<urlset xmlns="{NS}"><url>\n  <loc>\n    http://a.test/p?x=1&amp;y=2\n  </loc>\n'
        "<lastmod>2026-11-01</lastmod><changefreq>Daily</changefreq>"
        "<priority>0.8</priority></url>"
        "<url><loc><![CDATA[http://a.test/cdata]]></loc><priority>7</priority></url>"
        "</urlset>"
    ).encode()
    document = parse_sitemap(body, CONFIG)
    assert (document.kind, document.error) == ("urlset", "")
    assert document.urls == [
        SitemapEntry("http://a.test/p?x=1&y=2", "2026-11-01", "daily", 0.8),
        SitemapEntry("http://a.test/cdata", None, None, None),
    ]


@pytest.mark.parametrize(
    "ns", [NS, "http://www.google.com/schemas/sitemap/0.84", "", "urn:anything"]
)
def test_any_namespace_or_none(ns: str) -> None:
    document = parse_sitemap(_urlset("http://a.test/1", "http://a.test/2", ns=ns), CONFIG)
    assert [e.url for e in document.urls] == ["http://a.test/1", "http://a.test/2"]


def test_a_sitemap_index() -> None:
    body = (
        f'<sitemapindex xmlns="{NS}"><sitemap><loc>http://a.test/s1.xml</loc>'
        "<lastmod>2026-01-01</lastmod></sitemap>"
        "<sitemap><loc>http://a.test/s2.xml.gz</loc></sitemap></sitemapindex>"
    ).encode()
    document = parse_sitemap(body, CONFIG)
    assert document.kind == "index"
    assert document.urls == []
    assert [(e.url, e.lastmod) for e in document.sitemaps] == [
        ("http://a.test/s1.xml", "2026-01-01"), ("http://a.test/s2.xml.gz", None)
    ]


def test_text_rss_and_atom_sitemaps() -> None:
    text = parse_sitemap(b"http://a.test/1\n\n  http://a.test/2  \nnot a url\n", CONFIG)
    assert (text.kind, [e.url for e in text.urls]) == ("text", ["http://a.test/1",
                                                                "http://a.test/2"])
    assert text.rejected == {"sitemap:bad-entry": 1}
    rss = parse_sitemap(
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
        b"<item><title>a</title><link>http://a.test/a</link></item>"
        b"<item><link>http://a.test/b</link><pubDate>Sun, 22 Nov 2026</pubDate></item>"
        b"</channel></rss>", CONFIG)
    assert (rss.kind, [e.url for e in rss.urls]) == ("rss", ["http://a.test/a",
                                                             "http://a.test/b"])
    atom = parse_sitemap(
        b'<feed xmlns="http://www.w3.org/2005/Atom"><entry>'
        b'<link rel="edit" href="http://a.test/edit"/><link href="http://a.test/e1"/>'
        b"<updated>2026-11-22T00:00:00Z</updated></entry></feed>", CONFIG)
    assert (atom.kind, atom.urls) == ("atom", [SitemapEntry("http://a.test/e1",
                                                            "2026-11-22T00:00:00Z")])


def test_bad_entries_are_counted_not_kept() -> None:
    long = "http://a.test/" + "x" * MAX_LOC_LENGTH
    body = _urlset("http://a.test/ok", "", "javascript:alert(1)", "/relative", long)
    document = parse_sitemap(body, CONFIG)
    assert [e.url for e in document.urls] == ["http://a.test/ok"]
    assert document.rejected == {"sitemap:bad-entry": 4}


def test_gzip_is_recognised_by_its_bytes_whatever_the_type() -> None:
    body = gzip.compress(_urlset(*(f"http://a.test/{n}" for n in range(100))))
    document = parse_sitemap(body, CONFIG)
    assert (document.kind, len(document.urls), document.error) == ("urlset", 100, "")


def test_a_gzip_bomb_is_refused_quickly_and_cheaply() -> None:
    bomb = gzip.compress(b"<urlset>" + bytes(200 << 20), 9)  # 200 MiB in about 200 KB
    started = time.monotonic()
    document = parse_sitemap(bomb, CONFIG)
    assert time.monotonic() - started < 2.0
    assert document.error == "sitemap:compression-ratio"
    assert document.urls == []


def test_a_gzip_within_the_ratio_is_cut_at_max_bytes() -> None:
    config = SitemapsSection(max_bytes=4096, max_decompression_ratio=0)
    body = gzip.compress(_urlset(*(f"http://a.test/{n}" for n in range(1000))))
    document = parse_sitemap(body, config)
    assert document.error == "sitemap:too-large"
    assert 50 < len(document.urls) < 1000
    assert document.urls[0].url == "http://a.test/0"


def test_broken_gzip_keeps_what_came_before() -> None:
    body = gzip.compress(_urlset(*(f"http://a.test/{n}" for n in range(2000))))
    document = parse_sitemap(body[: len(body) // 2], CONFIG)
    assert document.error == "sitemap:invalid-gzip"
    assert document.urls[:2] == [SitemapEntry("http://a.test/0"), SitemapEntry("http://a.test/1")]
    assert parse_sitemap(b"\x1f\x8bnot gzip at all", CONFIG).error == "sitemap:invalid-gzip"


def test_entries_past_max_urls_are_counted() -> None:
    config = SitemapsSection(max_urls=3)
    document = parse_sitemap(_urlset(*(f"http://a.test/{n}" for n in range(10))), config)
    assert [e.url for e in document.urls] == ["http://a.test/0", "http://a.test/1",
                                              "http://a.test/2"]
    assert document.rejected == {"sitemap:over-limit": 7}


def test_a_body_cut_by_the_fetcher_is_read_as_far_as_it_goes() -> None:
    body = _urlset(*(f"http://a.test/{n}" for n in range(50)))
    document = parse_sitemap(body[: len(body) // 2], CONFIG, truncated=True)
    assert document.error == "sitemap:too-large"
    assert 10 < len(document.urls) < 50


def test_malformed_xml_keeps_the_entries_before_the_error() -> None:
    body = _urlset("http://a.test/1", "http://a.test/2")[:-10] + b"<url><loc>oops</urlset>"
    document = parse_sitemap(body, CONFIG)
    assert document.error == "sitemap:malformed-xml"
    assert [e.url for e in document.urls] == ["http://a.test/1", "http://a.test/2"]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"", "sitemap:empty"),
        (b"   \n", "sitemap:empty"),
        (b"<html><body>Not found</body></html>", "sitemap:unknown-format"),
        (b"%PDF-1.4 binary", "sitemap:unknown-format"),
    ],
)
def test_what_is_no_sitemap(body: bytes, error: str) -> None:
    document = parse_sitemap(body, CONFIG)
    assert (document.kind, document.error, document.urls) == ("", error, [])


def test_external_entities_are_not_expanded() -> None:
    body = (
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        b"<urlset><url><loc>http://a.test/&xxe;</loc></url>"
        b"<url><loc>http://a.test/plain</loc></url></urlset>"
    )
    document = parse_sitemap(body, CONFIG)
    assert all("root:" not in e.url for e in document.urls)
    assert "http://a.test/plain" in [e.url for e in document.urls]


def test_a_billion_laughs_does_not_expand() -> None:
    lol = "".join(
        f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10 if n else "lol"}">' for n in range(10)
    )
    body = (
        f'<?xml version="1.0"?><!DOCTYPE urlset [{lol}]>'
        "<urlset><url><loc>http://a.test/&lol9;</loc></url></urlset>"
    ).encode()
    started = time.monotonic()
    document = parse_sitemap(body, CONFIG)
    assert time.monotonic() - started < 1.0
    assert all(len(e.url) < 100 for e in document.urls)


def test_hop_rules() -> None:
    assert is_sitemap_hops("S")
    assert is_sitemap_hops("SS")
    assert is_sitemap_hops("SR")  # a sitemap that redirected is still one
    assert not is_sitemap_hops("SM")
    assert not is_sitemap_hops("LP")
    assert not is_sitemap_hops("")
    assert (sitemap_level("S"), sitemap_level("SSR"), sitemap_level("L")) == (1, 2, 0)
