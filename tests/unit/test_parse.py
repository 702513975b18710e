"""Link extraction (crawl.content.links): broken markup, charsets and junk never raise."""

from __future__ import annotations

import random

import pytest

from crawl.content.links import extract_links
from crawl.model import FetchResult
from crawl.status import Status
from synthweb import SyntheticWeb, WebConfig

PAGE = "http://a.test/dir/page.html"


def _page(body: bytes, content_type: str = "text/html", status: Status = Status.FETCHED,
          http_status: int = 200) -> FetchResult:
    return FetchResult(url=PAGE, status=status, reason="", http_status=http_status,
                       response_headers=[("Content-Type", content_type)], body=body)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'<a href="x">x</a><a href="/y">y</a>', ["http://a.test/dir/x", "http://a.test/y"]),
        (b'<a href="x">one</a><a href="x#frag">again</a>', ["http://a.test/dir/x"]),
        (b'<base href="http://b.test/base/"><a href="x">x</a>', ["http://b.test/base/x"]),
        (b'<map><area href="/m" shape=rect></map>', ["http://a.test/m"]),
        (b"<a href=unquoted>u</a><A HREF='single'>s</A>",
         ["http://a.test/dir/unquoted", "http://a.test/dir/single"]),
        (b'<a href="mailto:x@a.test">m</a><a href="javascript:void(0)">j</a>', []),
        (b'<a href="http://[bad">b</a><a href="ok">ok</a>', ["http://a.test/dir/ok"]),
        (b"<a href=\"  \n/spaced\t \">s</a>", ["http://a.test/spaced"]),
        (b'<a href="page.html">self</a>', [PAGE]),
        (b"<div><p><a href=1>unclosed <b>tags <a href=2>", ["http://a.test/dir/1",
                                                          "http://a.test/dir/2"]),
        (b"\x00\xff\xfe<a href=\"z\x00\">z</a>\x89PNG", ["http://a.test/dir/z%EF%BF%BD"]),
        (b"", []),
    ],
)
def test_links(body: bytes, expected: list[str]) -> None:
    assert extract_links(_page(body)).urls == expected


def test_rejected_links_are_counted() -> None:
    parsed = extract_links(_page(b'<a href="mailto:x@y">m</a><a href="http://[x">b</a>'))
    assert parsed.rejected["url:scheme:mailto"] == 1
    assert parsed.rejected["url:unparseable"] == 1


def test_charset_from_the_header() -> None:
    body = '<a href="caf\u00e9">c</a>'.encode("latin-1")
    parsed = extract_links(_page(body, "text/html; charset=ISO-8859-1"))
    assert parsed.urls == ["http://a.test/dir/caf%C3%A9"]


def test_charset_from_a_meta_tag() -> None:
    body = ('<meta charset="windows-1251"><a href="\u0434">d</a>').encode("cp1251")
    assert extract_links(_page(body)).urls == ["http://a.test/dir/%D0%B4"]


@pytest.mark.parametrize(
    ("content_type", "status", "http_status"),
    [
        ("text/plain", Status.FETCHED, 200),
        ("image/png", Status.FETCHED, 200),
        ("text/html", Status.HTTP_ERROR, 404),
        ("text/html", Status.REDIRECT, 301),
    ],
)
def test_only_fetched_html_is_parsed(content_type: str, status: Status, http_status: int) -> None:
    body = b'<a href="x">x</a>'
    assert extract_links(_page(body, content_type, status, http_status)).urls == []


def test_random_bytes_never_raise() -> None:
    for seed in range(200):
        rng = random.Random(seed)
        junk = rng.randbytes(seed * 13 % 4000) + b"<a href='" + rng.randbytes(seed % 50) + b"'>"
        extract_links(_page(junk))


def test_synthetic_web_pages_give_the_model_links() -> None:
    web = SyntheticWeb(WebConfig(seed=3, hosts=8))
    checked = 0
    for host in web.host_names():
        for page in web.pages(host):
            if page.status != 200 or not page.content_type.startswith("text/html"):
                continue
            response = web.respond(host, page.url.split(host, 1)[1])
            result = FetchResult(url=page.url, status=Status.FETCHED, reason="",
                                 http_status=200, response_headers=list(response.headers),
                                 body=response.body)
            expected = list(dict.fromkeys(
                link.url for link in page.links if link.url and link.url != page.url))
            found = [url for url in extract_links(result).urls if url != page.url]
            assert found == expected, page.url
            checked += 1
    assert checked > 20


def test_a_document_lxml_refuses_falls_back_to_beautiful_soup() -> None:
    # lxml sees no element at all in a lone comment and raises; the fallback reads it.
    assert extract_links(_page(b"<!-- only a comment -->")).urls == []
    body = b"<!-- c --><a href='x'>x</a>"
    assert extract_links(_page(body)).urls == ["http://a.test/dir/x"]


def test_xhtml_with_an_xml_declaration() -> None:
    body = (b"<?xml version='1.0' encoding='utf-8'?>\n<html xmlns='http://www.w3.org/1999/xhtml'>"
            b"<body><a href='x'>x</a></body></html>")
    assert extract_links(_page(body, "application/xhtml+xml")).urls == ["http://a.test/dir/x"]


def test_unknown_charset_name_is_ignored() -> None:
    body = '<a href="caf\u00e9">c</a>'.encode()
    parsed = extract_links(_page(body, "text/html; charset=x-no-such-charset"))
    assert parsed.urls == ["http://a.test/dir/caf%C3%A9"]
