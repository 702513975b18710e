"""Text encodings of fetched pages (crawl.content.links): byte order marks, the header, <meta> and
XML declarations, and the UTF-8 / windows-1252 guess, as a table of pages and the links they
give."""

from __future__ import annotations

import codecs

import pytest

from crawl.content.links import extract_links, guess_encoding
from crawl.model import FetchResult
from crawl.status import Status

CYRILLIC = "/\u0436\u0443\u043a"  # /жук
JAPANESE = "/\u65e5\u672c"  # /日本
LATIN = "/p\u00e4ge"  # /päge
QUOTED = {
    CYRILLIC: "/%D0%B6%D1%83%D0%BA",
    JAPANESE: "/%E6%97%A5%E6%9C%AC",
    LATIN: "/p%C3%A4ge",
}


def _links(body: bytes, content_type: str = "text/html") -> list[str]:
    result = FetchResult(url="http://h.test/", status=Status.FETCHED, reason="", http_status=200,
                         response_headers=[("Content-Type", content_type)], body=body)
    return extract_links(result).urls


def _page(path: str, head: str = "") -> str:
    return f'<html><head>{head}</head><body><a href="{path}">x</a></body></html>'


@pytest.mark.parametrize(
    ("path", "encoding", "bom", "head", "content_type"),
    [
        # byte order marks, with and without a header charset (the mark wins)
        (JAPANESE, "utf-16-le", codecs.BOM_UTF16_LE, "", "text/html"),
        (JAPANESE, "utf-16-be", codecs.BOM_UTF16_BE, "", "text/html"),
        (CYRILLIC, "utf-16-le", codecs.BOM_UTF16_LE, "", "text/html; charset=utf-8"),
        (CYRILLIC, "utf-16-be", codecs.BOM_UTF16_BE, "", "text/html; charset=windows-1252"),
        (JAPANESE, "utf-8", codecs.BOM_UTF8, "", "text/html; charset=iso-8859-1"),
        # the header
        (CYRILLIC, "cp1251", b"", "", "text/html; charset=windows-1251"),
        (CYRILLIC, "koi8-r", b"", "", 'text/html; charset="KOI8-R"'),
        (JAPANESE, "shift_jis", b"", "", "text/html; charset=Shift_JIS"),
        (JAPANESE, "euc-jp", b"", '<meta charset="shift_jis">', "text/html; charset=euc-jp"),
        # <meta>, both forms
        (CYRILLIC, "koi8-r", b"", '<meta charset="koi8-r">', "text/html"),
        (CYRILLIC, "koi8-r", b"",
         '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">', "text/html"),
        (JAPANESE, "shift_jis", b"", "<meta charset=shift_jis>", "text/html"),
        (JAPANESE, "euc-jp", b"", '<meta charset="EUC-JP">', "text/html"),
        # nothing declared: UTF-8 when it is valid UTF-8, else windows-1252
        (JAPANESE, "utf-8", b"", "", "text/html"),
        (LATIN, "cp1252", b"", "", "text/html"),
    ],
)
def test_the_encoding_of_a_page(
    path: str, encoding: str, bom: bytes, head: str, content_type: str
) -> None:
    body = bom + _page(path, head).encode(encoding)
    assert _links(body, content_type) == ["http://h.test" + QUOTED[path]]


@pytest.mark.parametrize("quote", ['"', "'"])
def test_an_xml_declaration_names_the_encoding(quote: str) -> None:
    declaration = f"<?xml version={quote}1.0{quote} encoding={quote}koi8-r{quote}?>\n"
    body = (declaration + _page(CYRILLIC)).encode("koi8-r")
    expected = ["http://h.test" + QUOTED[CYRILLIC]]
    assert _links(body, "application/xhtml+xml") == expected
    # the header still wins over the declaration
    assert _links(body.replace(b"koi8-r", b"utf-8"), "text/html; charset=koi8-r") == expected


def test_an_xml_declaration_claiming_utf16_in_ascii_is_ignored() -> None:
    body = ('<?xml version="1.0" encoding="UTF-16"?>' + _page(JAPANESE)).encode("utf-8")
    assert _links(body, "application/xhtml+xml") == ["http://h.test" + QUOTED[JAPANESE]]


RUSSIAN = "Привет, это страница на русском языке о погоде и новостях нашего города."
GREEK = "Καλημέρα κόσμε, αυτή είναι μια σελίδα για τον καιρό και τα νέα της πόλης."
WESTERN = "Größe und Übergänge: café, naïve, déjà vu, élan vital, façade, “quoted” text."


@pytest.mark.parametrize(
    ("text", "encoding", "path", "expected"),
    [
        (RUSSIAN, "cp1251", CYRILLIC, "cp1251"),
        (RUSSIAN, "koi8-r", CYRILLIC, "koi8-r"),
        (GREEK, "cp1253", "/x", "cp1253"),
        # Latin text: the browsers' default, whatever Latin code page detection would pick
        (WESTERN, "cp1252", LATIN, "cp1252"),
        (WESTERN.replace("“", '"').replace("”", '"'), "latin-1", LATIN, "cp1252"),
    ],
)
def test_an_undeclared_page_that_is_not_utf8_has_its_script_detected(
    text: str, encoding: str, path: str, expected: str
) -> None:
    body = f'<html><body><p>{text}</p><a href="{path}">x</a></body></html>'.encode(encoding)
    assert codecs.lookup(guess_encoding(body)).name == codecs.lookup(expected).name
    if path in QUOTED:
        assert _links(body) == ["http://h.test" + QUOTED[path]]


def test_detection_never_fails_and_defaults_to_windows_1252() -> None:
    assert guess_encoding(b"") == "cp1252"
    assert guess_encoding(b"plain ascii") == "cp1252"
    for junk in (bytes(range(256)) * 4, b"\x00\xff" * 5000, b"\x89PNG\r\n\x1a\n" + bytes(300)):
        codecs.lookup(guess_encoding(junk))  # a codec Python knows, whatever it is
