"""The bodies of the synthetic web's pages: HTML (well-formed, broken, ISO-8859-1 and
windows-1251), plain text, PNG, and the error and redirect pages.

A body is rendered from the page's model (:class:`synthweb.model.Page`: its kind and links),
with what varies drawn from a generator of its own (see :mod:`synthweb.graph`).
"""

from __future__ import annotations

import html
import random
from collections.abc import Iterable

from synthweb.model import Link, Page, PageKind
from synthweb.urls import split_url

__all__ = ["ERROR_404", "ERROR_500", "MOVED", "render_page", "render_profile_page"]

ERROR_404 = b"<html><body><h1>404 Not Found</h1></body></html>\n"
ERROR_500 = b"<html><body><h1>500 Internal Server Error</h1></body></html>\n"
#: The body of a redirect.
MOVED = b"<html><body><p>Moved</p></body></html>\n"

_LATIN1_TEXT = "Café crème brûlée, naïve façade, déjà vu: ½ prix à l'été."
_CP1251_TEXT = "Привет, мир! Это синтетическая страница в кодировке windows-1251."
_UTF8_TEXT = "A synthetic page — café, naïve, 東京, Привет."
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def render_page(seed: int, page: Page, index: int, number: int) -> bytes:
    """The body of ``page``, page ``number`` of host ``index`` of the web of ``seed`` (a
    200 page of a kind with a body; the near-duplicate profile's pages are its own)."""
    host = split_url(page.url)[0]
    rng = random.Random(f"synthweb:{seed}:body:{index}:{number}")
    if page.kind is PageKind.TEXT:
        text = (
            f"Plain text page {number} of {host}.\n"
            f"It mentions http://{host}/ in passing, but text/plain has no links.\n"
        )
        return text.encode()
    if page.kind is PageKind.BINARY:
        return _PNG_SIGNATURE + rng.randbytes(rng.randint(200, 2000))
    title = f"{host} page {number}"
    if page.kind is PageKind.BROKEN_HTML:
        return _render_broken(title, page.links, rng)
    if page.kind is PageKind.LATIN1_HTML:
        return _render_html(title, _LATIN1_TEXT, page.links, meta="").encode("iso-8859-1")
    if page.kind is PageKind.CP1251_HTML:
        meta = rng.choice(
            (
                '<meta charset="windows-1251">',
                '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">',
            )
        )
        return _render_html(title, _CP1251_TEXT, page.links, meta=meta).encode("cp1251")
    return _render_html(title, _UTF8_TEXT, page.links, meta='<meta charset="utf-8">').encode()


def render_profile_page(page: Page) -> bytes:
    """The body of an HTML page of a profile's host (the trap host, the farm): its links
    under a title naming its URL."""
    host, path = split_url(page.url)
    title = html.escape(f"{host}{path}")
    return _render_html(title, _UTF8_TEXT, page.links, meta='<meta charset="utf-8">').encode()


def _anchor(href: str, text: str, style: int) -> str:
    quoted = html.escape(href, quote=True)
    if style == 1:
        return f"<a href='{quoted}'>{text}</a>"
    if style == 2 and href and not any(c in href for c in " \"'=<>`"):
        return f"<a href={href}>{text}</a>"
    if style == 3:
        return f'<A HREF="{quoted}" class="x">{text}</A>'
    return f'<a href="{quoted}">{text}</a>'


def _render_html(title: str, text: str, links: Iterable[Link], *, meta: str) -> str:
    items = "\n".join(
        f"<li>{_anchor(link.href, f'link {i}', 0)}</li>" for i, link in enumerate(links)
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head>{meta}<title>{title}</title></head>\n'
        f"<body><h1>{title}</h1>\n<p>{html.escape(text)}</p>\n<ul>\n{items}\n</ul>\n</body></html>\n"
    )


def _render_broken(title: str, links: tuple[Link, ...], rng: random.Random) -> bytes:
    # Unclosed elements, every way of quoting an attribute, and bytes that are not UTF-8
    # (and a NUL) between the links: a tolerant parser must still find every link. Nothing
    # that hides links from an HTML5 parser, such as an unclosed <title> or <script>.
    parts = [
        f"<html><head><title>{title}</title>\n<body><h1>{title}<p>broken page ".encode(),
        b"\xff\xfe\x80",
    ]
    for i, link in enumerate(links):
        anchor = _anchor(link.href, f"link {i}", i % 4)
        if i % 3 == 0:
            anchor = anchor.replace("</a>", "").replace("</A>", "")
        parts.append(f"\n<div><span>{anchor}".encode())
        if i % 5 == 2:
            parts.append(rng.choice((b"\xc3\x28", b"\xe2\x82", b"\x00", b"\x81\x8d")))
    parts.append(b"\n<table><tr><td>unclosed cell\n")
    return b"".join(parts)
