"""Response bodies (crawl.http.body) without a network: the decoder's codings, limits and
errors, and the content-type filter."""

from __future__ import annotations

import gzip
import random
import zlib
from collections.abc import Callable

import pytest

from crawl.http.body import BodyDecoder, BodyError, content_type_accepted

# -- body decoding ----------------------------------------------------------------------------

PAGE = b"<html><body>" + b"".join(b"<a href=/p/%d>page %d</a>\n" % (n, n) for n in range(2000))


def _decode(data: bytes, coding: str, limit: int = 1 << 20, ratio: float = 100.0,
            chunk: int = 4096, floor: int = 1 << 20) -> BodyDecoder:
    decoder = BodyDecoder(coding, limit, ratio, ratio_floor=floor)
    for start in range(0, len(data), chunk):
        if decoder.feed(data[start:start + chunk]):
            return decoder
    decoder.finish()
    return decoder


GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("", lambda d: d),
        ("identity", lambda d: d),
        ("gzip", gzip.compress),
        ("GZip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("gzip, identity", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", _raw_deflate),
    ],
)
@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
def test_bodies_are_decoded_whole(coding: str, encode: Callable, chunk: int) -> None:
    if chunk == 1 and len(PAGE) > 10_000 and coding not in ("gzip", ""):
        chunk = 3  # keep the byte-by-byte cases quick
    decoder = _decode(encode(PAGE), coding, chunk=chunk)
    assert bytes(decoder.body) == PAGE
    assert not decoder.truncated
    assert decoder.encoded == len(encode(PAGE))


def test_gzip_members_are_concatenated_and_trailing_bytes_ignored() -> None:
    data = gzip.compress(b"first ") + gzip.compress(b"second") + b"\x00\x00junk"
    for chunk in (1, 5, 1000):
        assert bytes(_decode(data, "gzip", chunk=chunk).body) == b"first second"


def test_bytes_after_a_deflate_stream_are_ignored() -> None:
    assert bytes(_decode(zlib.compress(b"body") + b"garbage", "deflate").body) == b"body"


@pytest.mark.parametrize(
    ("data", "coding", "reason"),
    [
        (b"not gzip at all !!!!", "gzip", "bad-response:invalid-gzip"),
        (GZIP_HEADER + b"\xff" * 10, "gzip", "bad-response:invalid-gzip"),  # bad block type
        (gzip.compress(PAGE)[:-8] + b"\0" * 8, "gzip", "bad-response:invalid-gzip"),  # bad CRC
        (b"\x1f\x8b\x07" + b"\0" * 20, "gzip", "bad-response:invalid-gzip"),  # bad method
        (gzip.compress(PAGE)[:-100], "gzip", "bad-response:incomplete-gzip"),
        (gzip.compress(PAGE)[:-4], "gzip", "bad-response:incomplete-gzip"),  # no length
        (b"\x78\x9c" + b"\xff" * 30, "deflate", "bad-response:invalid-deflate"),
        (zlib.compress(PAGE)[:-50], "deflate", "bad-response:incomplete-deflate"),
        (b"anything", "br", "bad-response:unsupported-encoding"),
        (b"anything", "zstd", "bad-response:unsupported-encoding"),
        (b"anything", "compress", "bad-response:unsupported-encoding"),
        (b"anything", "gzip, gzip", "bad-response:unsupported-encoding"),
        (b"anything", "gzip, br", "bad-response:unsupported-encoding"),
    ],
)
def test_broken_or_unsupported_encodings_have_a_reason(
    data: bytes, coding: str, reason: str
) -> None:
    with pytest.raises(BodyError) as caught:
        _decode(data, coding)
    assert caught.value.reason == reason


def test_an_empty_compressed_body_is_an_empty_body() -> None:
    decoder = _decode(b"", "gzip")
    assert decoder.body == b""
    assert not decoder.truncated


@pytest.mark.parametrize("coding", ["", "gzip", "deflate"])
@pytest.mark.parametrize(
    ("limit", "truncated"), [(len(PAGE) - 1, True), (len(PAGE), False), (len(PAGE) + 1, False)]
)
def test_the_decoded_body_is_cut_at_the_limit(coding: str, limit: int, truncated: bool) -> None:
    data = {"": PAGE, "gzip": gzip.compress(PAGE), "deflate": zlib.compress(PAGE)}[coding]
    decoder = _decode(data, coding, limit=limit)
    assert decoder.truncated is truncated
    assert bytes(decoder.body) == PAGE[:limit]


def test_a_bomb_is_refused_without_decoding_it_all() -> None:
    bomb = gzip.compress(bytes(64 << 20), 9)  # 64 MiB of zeros in about 64 KB
    assert len(bomb) < 100_000
    decoder = BodyDecoder("gzip", 10 << 20, 100.0)
    with pytest.raises(BodyError) as caught:
        decoder.feed(bomb[:65536])
    assert caught.value.reason == "bad-response:compression-ratio"
    # Stopped soon after the ratio floor, long before the size limit.
    assert decoder.decoded < 2 << 20
    assert len(decoder.body) == decoder.decoded


def test_a_bomb_in_one_chunk_never_decodes_past_the_limit() -> None:
    bomb = gzip.compress(bytes(64 << 20), 9)
    decoder = BodyDecoder("gzip", 1 << 20, 0.0)  # no ratio limit: the size limit cuts it
    assert decoder.feed(bomb) is True
    assert decoder.truncated
    assert len(decoder.body) == 1 << 20
    assert decoder.decoded == (1 << 20) + 1
    assert decoder.encoded < len(bomb)  # only what was needed was consumed


def test_the_ratio_is_checked_only_past_its_floor() -> None:
    zeros = gzip.compress(bytes(512 << 10))  # ratio about 500, but only 512 KiB
    decoder = _decode(zeros, "gzip", limit=10 << 20)
    assert len(decoder.body) == 512 << 10
    with pytest.raises(BodyError, match="compression-ratio"):
        _decode(zeros, "gzip", limit=10 << 20, floor=256 << 10)


def test_ordinary_compressible_pages_pass_the_ratio() -> None:
    page = PAGE * 40  # about 1.2 MB of repetitive links
    data = gzip.compress(page)
    assert len(page) / len(data) < 100
    assert bytes(_decode(data, "gzip", limit=10 << 20).body) == page
    random_text = random.Random(1).randbytes(1 << 20).hex().encode()
    assert bytes(_decode(gzip.compress(random_text), "gzip", limit=10 << 20).body) == random_text


# -- content types ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "accepted", "expected"),
    [
        ("application/pdf", (), True),
        ("text/html", ("text/html",), True),
        ("text/html; charset=utf-8", ("text/html",), True),
        ("TEXT/HTML", ("text/html",), True),
        ("text/html", ("Text/HTML",), True),
        ("application/pdf", ("text/html",), False),
        ("text/plain", ("text/html", "application/xhtml+xml"), False),
        ("application/xhtml+xml", ("text/html", "application/xhtml+xml"), True),
        ("text/plain", ("text/*",), True),
        ("text/css; charset=x", ("text/*",), True),
        ("textual/plain", ("text/*",), False),
        ("image/png", ("text/*",), False),
        ("image/png", ("*/*",), True),
        ("", ("text/html",), True),  # no type declared: not filtered
        ("   ; charset=utf-8", ("text/html",), True),
        ("garbage", ("text/html",), False),
    ],
)
def test_content_type_accepted(content_type: str, accepted: tuple, expected: bool) -> None:
    assert content_type_accepted(content_type, accepted) is expected
