"""The fetcher's rules as plain logic, without a network: the address guard's classification,
the DNS cache and resolver (controllable clock, fake lookups), the body decoder's limits and
the content-type filter."""

from __future__ import annotations

import asyncio
import gzip
import os
import socket
import zlib
from collections.abc import Callable

import pytest

from crawl.config import ConfigError, FetchSection, load_config
from crawl.http.fetcher import (
    ADDRESS_CLASSES,
    AddressNotAllowed,
    BodyDecoder,
    BodyError,
    CachingResolver,
    DnsCache,
    address_check_for,
    address_class,
    address_reason,
    content_type_accepted,
)

# -- the address guard ------------------------------------------------------------------------

ADDRESSES = [
    # IPv4: public
    ("8.8.8.8", None),
    ("93.184.215.14", None),
    ("1.1.1.1", None),
    ("100.63.255.255", None),  # just below the shared address space
    ("100.128.0.0", None),  # just above it
    ("172.15.255.255", None),
    ("172.32.0.0", None),
    ("192.0.1.1", None),
    ("192.169.0.1", None),
    ("198.20.0.1", None),
    ("223.255.255.255", None),
    # IPv4: special
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "reserved"),
    ("10.0.0.1", "private"),
    ("10.255.255.255", "private"),
    ("100.64.0.1", "private"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("169.254.169.254", "link-local"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.0.0.8", "reserved"),
    ("192.0.2.1", "reserved"),
    ("192.88.99.1", "reserved"),
    ("192.168.1.1", "private"),
    ("198.18.0.1", "reserved"),
    ("198.19.255.255", "reserved"),
    ("198.51.100.7", "reserved"),
    ("203.0.113.9", "reserved"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    # IPv6: public
    ("2606:4700:4700::1111", None),
    ("2a00:1450:4001:81c::200e", None),
    ("2001:4860:4860::8888", None),
    # IPv6: special
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("[::1]", "loopback"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("febf:ffff::1", "link-local"),
    ("fc00::1", "private"),
    ("fd12:3456:789a::1", "private"),
    ("fec0::1", "private"),
    ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"),
    ("2001:db8::1", "reserved"),
    ("2001::1", "reserved"),  # Teredo
    ("2001:2::1", "reserved"),  # benchmarking
    ("3fff::1", "reserved"),
    ("100::1", "reserved"),
    ("64:ff9b:1::1", "private"),
    ("::2", "reserved"),
    ("4000::1", "reserved"),  # outside 2000::/3
    ("5f00::1", "reserved"),
    # IPv4 inside IPv6: the IPv4 address decides
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:7f00:1", "loopback"),
    ("::ffff:10.1.2.3", "private"),
    ("::ffff:169.254.169.254", "link-local"),
    ("::ffff:0.0.0.0", "unspecified"),
    ("::ffff:8.8.8.8", None),
    ("64:ff9b::127.0.0.1", "loopback"),
    ("64:ff9b::8.8.8.8", None),
    ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
    ("2002:c0a8:101::1", "private"),  # 6to4 of 192.168.1.1
    ("2002:808:808::1", None),  # 6to4 of 8.8.8.8
    ("::127.0.0.1", "reserved"),  # IPv4-compatible (deprecated)
    # not an address at all
    ("example.org", "reserved"),
    ("", "reserved"),
]


@pytest.mark.parametrize(("address", "expected"), ADDRESSES)
def test_address_class(address: str, expected: str | None) -> None:
    assert address_class(address) == expected


def test_every_class_is_in_the_table() -> None:
    assert {expected for _, expected in ADDRESSES} - {None} == set(ADDRESS_CLASSES)


def test_address_reason_names_the_class() -> None:
    assert address_reason("10.0.0.1") == "ssrf:private-address"
    assert address_reason("::1") == "ssrf:loopback-address"
    assert address_reason("169.254.169.254") == "ssrf:link-local-address"
    assert address_reason("8.8.8.8") is None


@pytest.mark.parametrize(
    ("settings", "guarded"),
    [
        ({}, True),
        ({"allow_private_addresses": True}, False),
        ({"proxy": "http://127.0.0.1:3128"}, False),
        ({"proxy": "http://127.0.0.1:3128", "allow_private_addresses": True}, False),
    ],
)
def test_the_guard_applies_without_proxy_unless_allowed(settings: dict, guarded: bool) -> None:
    check = address_check_for(FetchSection(**settings))
    assert (check is address_reason) is guarded
    assert (check is None) is not guarded


# -- the DNS cache ----------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


KEY = ("h.test", 80, 0)
ANSWER = [{"hostname": "h.test", "host": "8.8.8.8", "port": 80, "family": 2, "proto": 0,
           "flags": 0}]


@pytest.mark.parametrize(
    ("stored", "after", "fresh"),
    [
        ("answer", 0.0, True),
        ("answer", 299.9, True),
        ("answer", 300.0, False),
        ("answer", 5000.0, False),
        ("failure", 0.0, True),
        ("failure", 59.9, True),
        ("failure", 60.0, False),
    ],
)
def test_dns_cache_keeps_answers_and_failures_for_their_ttl(
    stored: str, after: float, fresh: bool
) -> None:
    clock = Clock()
    cache = DnsCache(300.0, 60.0, clock=clock)
    value = ANSWER if stored == "answer" else socket.gaierror(socket.EAI_NONAME, "nope")
    cache.put(KEY, value)
    clock.now += after
    assert (cache.get(KEY) is value) is fresh
    if not fresh:
        assert len(cache) == 0


def test_dns_cache_with_zero_ttls_keeps_nothing() -> None:
    cache = DnsCache(0.0, 0.0, clock=Clock())
    cache.put(KEY, ANSWER)
    cache.put(("x.test", 80, 0), OSError("x"))
    assert cache.get(KEY) is None
    assert len(cache) == 0


def test_dns_cache_drops_the_oldest_beyond_its_size() -> None:
    cache = DnsCache(300.0, 60.0, max_entries=3, clock=Clock())
    for n in range(5):
        cache.put((f"h{n}.test", 80, 0), ANSWER)
    assert len(cache) == 3
    assert cache.get(("h0.test", 80, 0)) is None
    assert cache.get(("h1.test", 80, 0)) is None
    assert cache.get(("h4.test", 80, 0)) is ANSWER


# -- the resolver -----------------------------------------------------------------------------


class FakeLookup:
    """A name server: host -> list of addresses (or an OSError to raise); counts lookups."""

    def __init__(self, table: dict[str, list[str] | OSError], delay: float = 0.0) -> None:
        self.table = table
        self.delay = delay
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int, family: int) -> list:
        self.calls.append(host)
        if self.delay:
            await asyncio.sleep(self.delay)
        unknown = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        value = self.table.get(host, unknown)
        if isinstance(value, OSError):
            raise value
        return [
            {"hostname": host, "host": address, "port": port,
             "family": socket.AF_INET6 if ":" in address else socket.AF_INET,
             "proto": 0, "flags": socket.AI_NUMERICHOST}
            for address in value
        ]


def _resolver(
    table: dict, clock: Clock, check: Callable[[str], str | None] | None = address_reason,
    delay: float = 0.0, positive: float = 300.0, negative: float = 60.0,
) -> tuple[CachingResolver, FakeLookup]:
    lookup = FakeLookup(table, delay)
    return CachingResolver(DnsCache(positive, negative, clock=clock), lookup, check), lookup


def _hosts(answers: list) -> list[str]:
    return [answer["host"] for answer in answers]


def test_answers_are_cached_for_the_positive_ttl() -> None:
    clock = Clock()
    resolver, lookup = _resolver({"a.test": ["8.8.8.8"]}, clock)

    async def scenario() -> None:
        for _ in range(5):
            assert _hosts(await resolver.resolve("a.test", 80)) == ["8.8.8.8"]
        assert lookup.calls == ["a.test"]
        clock.now += 300
        await resolver.resolve("a.test", 80)
        assert lookup.calls == ["a.test", "a.test"]

    asyncio.run(scenario())


def test_an_unresolvable_host_is_looked_up_once_per_negative_ttl() -> None:
    clock = Clock()
    resolver, lookup = _resolver({}, clock)

    async def scenario() -> None:
        for _ in range(100):  # a hundred URLs of a dead host
            with pytest.raises(socket.gaierror):
                await resolver.resolve("dead.test", 80)
        assert lookup.calls == ["dead.test"]
        clock.now += 59
        with pytest.raises(OSError, match="not known"):
            await resolver.resolve("dead.test", 80)
        assert len(lookup.calls) == 1
        clock.now += 1
        with pytest.raises(socket.gaierror):
            await resolver.resolve("dead.test", 80)
        assert len(lookup.calls) == 2

    asyncio.run(scenario())


def test_an_empty_answer_is_a_failure() -> None:
    resolver, lookup = _resolver({"empty.test": []}, Clock())

    async def scenario() -> None:
        for _ in range(3):
            with pytest.raises(socket.gaierror):
                await resolver.resolve("empty.test", 80)

    asyncio.run(scenario())
    assert lookup.calls == ["empty.test"]


def test_concurrent_lookups_of_one_name_are_shared() -> None:
    resolver, lookup = _resolver({"a.test": ["8.8.8.8"]}, Clock(), delay=0.05)

    async def scenario() -> list:
        return await asyncio.gather(*(resolver.resolve("a.test", 80) for _ in range(10)))

    answers = asyncio.run(scenario())
    assert [_hosts(a) for a in answers] == [["8.8.8.8"]] * 10
    assert lookup.calls == ["a.test"]
    assert resolver.lookups == 1


def test_a_caller_that_gives_up_does_not_cancel_the_shared_lookup() -> None:
    resolver, lookup = _resolver({"a.test": ["8.8.8.8"]}, Clock(), delay=0.1)

    async def scenario() -> list:
        impatient = asyncio.ensure_future(resolver.resolve("a.test", 80))
        patient = asyncio.ensure_future(resolver.resolve("a.test", 80))
        await asyncio.sleep(0.01)
        impatient.cancel()
        answers = await patient
        with pytest.raises(asyncio.CancelledError):
            await impatient
        return answers

    assert _hosts(asyncio.run(scenario())) == ["8.8.8.8"]
    assert lookup.calls == ["a.test"]


@pytest.mark.parametrize(
    ("addresses", "kept", "reason"),
    [
        (["8.8.8.8"], ["8.8.8.8"], None),
        (["127.0.0.1"], [], "ssrf:loopback-address"),
        (["10.0.0.5", "192.168.0.1"], [], "ssrf:private-address"),
        (["169.254.169.254"], [], "ssrf:link-local-address"),
        (["::1"], [], "ssrf:loopback-address"),
        (["::ffff:127.0.0.1"], [], "ssrf:loopback-address"),
        (["fd00::1"], [], "ssrf:private-address"),
        (["0.0.0.0"], [], "ssrf:unspecified-address"),
        (["224.0.0.251"], [], "ssrf:multicast-address"),
        # a public host with a private address too: only the public one is ever connected to
        (["10.0.0.1", "8.8.8.8", "::1", "2606:4700::1"], ["8.8.8.8", "2606:4700::1"], None),
    ],
)
def test_the_guard_drops_refused_answers(
    addresses: list[str], kept: list[str], reason: str | None
) -> None:
    resolver, _ = _resolver({"h.test": addresses}, Clock())

    async def scenario() -> list:
        return await resolver.resolve("h.test", 443)

    if reason is None:
        assert _hosts(asyncio.run(scenario())) == kept
    else:
        with pytest.raises(AddressNotAllowed) as caught:
            asyncio.run(scenario())
        assert caught.value.reason == reason
        assert caught.value.host == "h.test"


def test_a_refused_host_is_refused_from_the_cache_too() -> None:
    resolver, lookup = _resolver({"h.test": ["127.0.0.1"]}, Clock())

    async def scenario() -> None:
        for _ in range(3):
            with pytest.raises(AddressNotAllowed):
                await resolver.resolve("h.test", 80)

    asyncio.run(scenario())
    assert lookup.calls == ["h.test"]


def test_without_a_check_every_answer_is_kept() -> None:
    resolver, _ = _resolver({"h.test": ["127.0.0.1", "10.0.0.1"]}, Clock(), check=None)
    assert _hosts(asyncio.run(resolver.resolve("h.test", 80))) == ["127.0.0.1", "10.0.0.1"]


def test_the_resolver_remembers_each_hosts_address() -> None:
    resolver, _ = _resolver({"h.test": ["8.8.4.4", "8.8.8.8"]}, Clock())
    assert resolver.address_of("h.test") == ""
    asyncio.run(resolver.resolve("h.test", 80))
    assert resolver.address_of("h.test") == "8.8.4.4"
    assert resolver.address_of("192.0.2.1") == "192.0.2.1"
    assert resolver.address_of("[2001:db8::1]") == "2001:db8::1"


def test_the_default_lookup_resolves_in_a_thread() -> None:
    async def scenario() -> list:
        resolver = CachingResolver(DnsCache(300.0, 60.0), check=None)
        try:
            return await resolver.resolve("localhost", 80, socket.AF_INET)
        finally:
            await resolver.close()

    assert "127.0.0.1" in _hosts(asyncio.run(scenario()))


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
    random_text = os.urandom(1 << 20).hex().encode()
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


# -- configuration ----------------------------------------------------------------------------


def test_fetch_defaults() -> None:
    fetch = FetchSection()
    assert fetch.allow_private_addresses is False
    assert (fetch.dns_cache_seconds, fetch.dns_negative_cache_seconds) == (300.0, 60.0)
    assert fetch.max_decompression_ratio == 100.0
    assert (fetch.max_header_bytes, fetch.max_headers) == (16384, 256)
    assert fetch.accept_content_types == ()


def test_fetch_overrides_are_coerced() -> None:
    config = load_config(overrides={
        "fetch.allow_private_addresses": "true",
        "fetch.accept_content_types": "text/html, text/*",
        "fetch.max_decompression_ratio": "0",
        "fetch.dns_negative_cache_seconds": "0",
    })
    assert config.fetch.allow_private_addresses is True
    assert config.fetch.accept_content_types == ("text/html", "text/*")
    assert config.fetch.max_decompression_ratio == 0.0


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("dns_cache_seconds", "-1"),
        ("dns_negative_cache_seconds", "-0.5"),
        ("max_decompression_ratio", "0.5"),
        ("max_decompression_ratio", "-3"),
        ("max_header_bytes", "100"),
        ("max_header_bytes", "99999999"),
        ("max_headers", "0"),
        ("accept_content_types", "html"),
        ("accept_content_types", "text/html;charset=utf-8"),
        ("accept_content_types", "*/html"),
        ("allow_private_addresses", "maybe"),
    ],
)
def test_bad_fetch_values_name_their_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=rf"^fetch\.{key}: "):
        load_config(overrides={f"fetch.{key}": value})
