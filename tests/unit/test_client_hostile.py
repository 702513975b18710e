"""The HTTP client against a hostile server: every malformed answer becomes a recorded status.

A raw TCP server on loopback answers each path with canned bytes (bad status lines, huge
headers, lying lengths, resets, broken chunking and gzip, decompression bombs, unwanted types,
redirects to forbidden addresses, trickling bodies). The fetcher must turn each into a
FetchResult with a status and a reason, and never raise. ``{PORT}`` in an answer is the
server's port; the server logs every path it is asked for.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator

import pytest

from crawl.archive.warc import WarcRecordFactory
from crawl.config import FetchSection, UserAgentSection
from crawl.http.address_guard import address_reason
from crawl.http.client import MAX_REDIRECTS, HttpFetcher
from crawl.http.io_loop import IoLoop
from crawl.model import FetchResult
from crawl.status import Status

OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
PAGE = b"<html><body>" + b"".join(b"<a href=/p/%d>page %d</a>" % (n, n) for n in range(3000))
BOMB = gzip.compress(bytes(50 << 20), 9)  # 50 MiB of zeros in about 50 KB


def _with_body(head: bytes, body: bytes) -> bytes:
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def _redirect(location: str) -> bytes:
    return b"HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n" % location.encode()

ANSWERS: dict[str, bytes | str] = {
    "/bad-status": b"HTTP/1.1 two hundred OK\r\nContent-Length: 0\r\n\r\n",
    "/not-http": b"SSH-2.0-OpenSSH_9.6\r\n",
    "/huge-header": OK_HEAD + b"X-Big: " + b"a" * 100_000 + b"\r\nContent-Length: 0\r\n\r\n",
    "/many-headers": OK_HEAD + b"".join(b"X-%d: v\r\n" % i for i in range(20_000))
    + b"Content-Length: 0\r\n\r\n",
    "/short-body": OK_HEAD + b"Content-Length: 1000\r\n\r\n" + b"x" * 10,
    "/bad-chunked": OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    "/bad-gzip": OK_HEAD + b"Content-Encoding: gzip\r\nContent-Length: 20\r\n\r\n"
    + b"not gzip at all !!!!",
    "/good-gzip": OK_HEAD + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
    % len(gzip.compress(b"<a href=/x>x</a>")) + gzip.compress(b"<a href=/x>x</a>"),
    "/latin1-header": OK_HEAD + b"X-Name: caf\xe9\r\nContent-Length: 2\r\n\r\nok",
    "/empty": b"",
    "reset": "reset",
    "trickle": "trickle",
    "stall-in-body": "stall-in-body",
    # decompression
    "/bomb": _with_body(OK_HEAD + b"Content-Encoding: gzip\r\n", BOMB),
    "/bomb-chunked": OK_HEAD + b"Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
    + b"".join(b"%x\r\n%s\r\n" % (len(BOMB[i:i + 8192]), BOMB[i:i + 8192])
               for i in range(0, len(BOMB), 8192)) + b"0\r\n\r\n",
    "/big-gzip": _with_body(OK_HEAD + b"Content-Encoding: gzip\r\n", gzip.compress(PAGE)),
    "/incomplete-gzip": _with_body(
        OK_HEAD + b"Content-Encoding: gzip\r\n", gzip.compress(PAGE)[:-300]
    ),
    "/gzip-eof-delimited": OK_HEAD + b"Content-Encoding: gzip\r\nConnection: close\r\n\r\n"
    + gzip.compress(PAGE)[:-300],
    "/deflate": _with_body(OK_HEAD + b"Content-Encoding: deflate\r\n", zlib.compress(PAGE)),
    "/brotli": _with_body(OK_HEAD + b"Content-Encoding: br\r\n", b"\x8b\x02\x80ok\x03"),
    # headers
    "/200-headers": OK_HEAD + b"".join(b"X-%d: v\r\n" % i for i in range(200))
    + b"Content-Length: 2\r\n\r\nok",
    "/300-headers": OK_HEAD + b"".join(b"X-%d: v\r\n" % i for i in range(300))
    + b"Content-Length: 2\r\n\r\nok",
    "/12k-header": OK_HEAD + b"X-Big: " + b"a" * 12_000 + b"\r\nContent-Length: 2\r\n\r\nok",
    "/20k-header": OK_HEAD + b"X-Big: " + b"a" * 20_000 + b"\r\nContent-Length: 2\r\n\r\nok",
    "/20k-status-line": b"HTTP/1.1 200 " + b"O" * 20_000 + b"\r\nContent-Length: 0\r\n\r\n",
    # content types
    "/pdf": "slow-pdf",
    "/plain": _with_body(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n", b"User-agent: *\n"),
    "/untyped": _with_body(b"HTTP/1.1 200 OK\r\n", b"<a href=/x>x</a>"),
    "/pdf-404": _with_body(
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/pdf\r\n", b"%PDF-1.4 gone"
    ),
    # redirects
    "/to-good-gzip": _redirect("/good-gzip"),
    "/to-blocked-literal": _redirect("http://127.0.0.2:{PORT}/good-gzip"),
    "/to-blocked-name": _redirect("http://blocked.test:{PORT}/good-gzip"),
    "/to-ipv6-loopback": _redirect("http://[::1]:{PORT}/good-gzip"),
    "/to-ftp": _redirect("ftp://127.0.0.1/file"),
    "/loop": _redirect("/loop"),
}


class _HostileServer:
    """Answers each request path with the canned bytes of ``ANSWERS`` and closes."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        #: The slow PDF's answers, as they ended: "cut" (the client closed first) or "sent".
        self.pdf_answers: list[str] = []
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0)
        )
        self.port = self.server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            writer.close()
            return
        path = head.split(b" ", 2)[1].decode()
        self.requests.append(path)
        answer = ANSWERS.get(path, ANSWERS.get(path.strip("/"), b""))
        if isinstance(answer, bytes):
            answer = answer.replace(b"{PORT}", str(self.port).encode())
        if answer == "reset":
            writer.write(OK_HEAD + b"Content-Length: 100000\r\n\r\n" + b"x" * 100)
            await writer.drain()
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return
        if answer == "slow-pdf":
            # 10 MB of PDF, slowly: a filtered type must not be downloaded.
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/pdf\r\n"
                         b"Content-Length: 10000000\r\n\r\n%PDF-1.4\n")
            ended = "sent"
            try:
                for _ in range(100):
                    writer.write(b"x" * 100_000)
                    await writer.drain()
                    await asyncio.sleep(0.05)
            except ConnectionError:
                ended = "cut"
            self.pdf_answers.append(ended)
            writer.close()
            return
        if answer == "stall-in-body":
            writer.write(OK_HEAD + b"Content-Length: 1000\r\n\r\nxxxxx")
            await writer.drain()
            await asyncio.sleep(5)
            writer.close()
            return
        if answer == "trickle":
            writer.write(OK_HEAD + b"Content-Length: 1000\r\n\r\n")
            for _ in range(50):
                writer.write(b"x")
                await writer.drain()
                await asyncio.sleep(0.2)
            writer.close()
            return
        writer.write(answer)
        await writer.drain()
        writer.close()

    def close(self) -> None:
        async def shut() -> None:
            self.server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)


@pytest.fixture(scope="module")
def server() -> Iterator[_HostileServer]:
    running = _HostileServer()
    yield running
    running.close()


@pytest.fixture(scope="module")
def fetcher(server: _HostileServer) -> Iterator[tuple[IoLoop, HttpFetcher]]:
    io = IoLoop("hostile-test")
    config = FetchSection(
        total_timeout_seconds=3.0, read_timeout_seconds=0.5, allow_private_addresses=True
    )
    client = io.run(HttpFetcher.create(config, UserAgentSection()))
    yield io, client
    io.run(client.aclose())
    io.close()


@pytest.mark.parametrize(
    ("path", "reason_prefix"),
    [
        ("/bad-status", "bad-response:"),
        ("/not-http", "bad-response:"),
        ("/huge-header", "bad-response:header-too-large"),
        ("/many-headers", "bad-response:too-many-headers"),
        ("/300-headers", "bad-response:too-many-headers"),
        ("/20k-header", "bad-response:header-too-large"),
        ("/20k-status-line", "bad-response:header-too-large"),
        ("/short-body", "bad-response:payload"),
        ("/bad-chunked", "bad-response:"),
        ("/bad-gzip", "bad-response:invalid-gzip"),
        ("/incomplete-gzip", "bad-response:incomplete-gzip"),
        ("/gzip-eof-delimited", "bad-response:incomplete-gzip"),
        ("/brotli", "bad-response:unsupported-encoding"),
        ("/bomb", "bad-response:compression-ratio"),
        ("/bomb-chunked", "bad-response:compression-ratio"),
        ("/empty", "connect:disconnected"),
        ("/reset", ""),
    ],
)
def test_malformed_answers_are_fetch_errors_with_a_reason(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher], path: str, reason_prefix: str
) -> None:
    io, client = fetcher
    result = io.run(client.fetch(f"http://127.0.0.1:{server.port}{path}"), timeout=20)
    assert result.status is Status.FETCH_ERROR, (result.status, result.reason)
    assert result.reason.startswith(reason_prefix)
    assert result.reason
    assert result.http_status == 0
    assert result.body == b""


@pytest.mark.parametrize(
    ("path", "ended_by"),
    [
        # one byte every 0.2 s never trips the 0.5 s read timeout: the total timeout (3 s)
        ("/trickle", 2.9),
        # a head and a few bytes, then silence: the read timeout (0.5 s)
        ("/stall-in-body", 0.4),
    ],
)
def test_a_body_that_outlasts_the_timeouts_is_kept_as_far_as_it_came(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher], path: str, ended_by: float
) -> None:
    io, client = fetcher
    started = time.monotonic()
    result = io.run(client.fetch(f"http://127.0.0.1:{server.port}{path}"), timeout=20)
    elapsed = time.monotonic() - started
    assert (result.status, result.http_status, result.truncated) == (Status.FETCHED, 200, "time")
    assert 0 < len(result.body) < 1000
    assert set(result.body) == {ord("x")}
    assert ended_by <= elapsed
    records, _ = WarcRecordFactory().encode_pair(result)
    assert b"WARC-Truncated: time" in gzip.decompress(records)


def test_gzip_body_is_decoded(server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]) -> None:
    io, client = fetcher
    result = io.run(client.fetch(f"http://127.0.0.1:{server.port}/good-gzip"), timeout=20)
    assert result.status is Status.FETCHED
    assert result.body == b"<a href=/x>x</a>"
    assert result.header("Content-Encoding") == "gzip"


def test_non_ascii_header_value_survives(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, client = fetcher
    result = io.run(client.fetch(f"http://127.0.0.1:{server.port}/latin1-header"), timeout=20)
    assert result.status is Status.FETCHED
    value = result.header("X-Name")
    assert value is not None
    assert value.encode("utf-8", "surrogateescape") == b"caf\xe9"
    assert result.ip_address == "127.0.0.1"


# -- limits -----------------------------------------------------------------------------------


def _fetch_with(
    io: IoLoop,
    url: str,
    settings: dict | None = None,
    create: dict | None = None,
    **options: object,
) -> FetchResult:
    """One fetch by a client of its own (``settings`` for FetchSection, ``create`` for
    HttpFetcher.create, ``options`` for fetch)."""
    config = FetchSection(**{"total_timeout_seconds": 5.0, "read_timeout_seconds": 2.0,
                             **(settings or {})})
    client = io.run(HttpFetcher.create(config, UserAgentSection(), **(create or {})))
    try:
        return io.run(client.fetch(url, **options), timeout=30)
    finally:
        io.run(client.aclose())


@pytest.mark.parametrize("path", ["/big-gzip", "/deflate", "/200-headers", "/12k-header"])
def test_answers_within_the_limits_are_fetched(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher], path: str
) -> None:
    io, client = fetcher
    result = io.run(client.fetch(f"http://127.0.0.1:{server.port}{path}"), timeout=20)
    assert (result.status, result.reason, result.truncated) == (Status.FETCHED, "", "")
    if path in ("/big-gzip", "/deflate"):
        assert result.body == PAGE


def test_the_size_limit_applies_to_the_decoded_body(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, client = fetcher
    url = f"http://127.0.0.1:{server.port}/big-gzip"
    result = io.run(client.fetch(url, max_bytes=5000), timeout=20)
    assert (result.status, result.truncated) == (Status.FETCHED, "length")
    assert result.body == PAGE[:5000]
    assert len(gzip.compress(PAGE)) < len(PAGE) // 3  # the limit was not on the wire


def test_a_bomb_is_refused_and_nothing_of_it_kept(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, client = fetcher
    result = io.run(client.fetch(f"http://127.0.0.1:{server.port}/bomb"), timeout=20)
    assert result.reason == "bad-response:compression-ratio"
    assert result.body == b""  # nothing of it kept


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/200-headers", "bad-response:too-many-headers"),
        ("/12k-header", "bad-response:header-too-large"),
        ("/good-gzip", ""),
    ],
)
def test_header_limits_come_from_the_settings(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher], path: str, reason: str
) -> None:
    io, _ = fetcher
    settings = {"max_headers": 100, "max_header_bytes": 8192, "allow_private_addresses": True}
    result = _fetch_with(io, f"http://127.0.0.1:{server.port}{path}", settings)
    assert result.reason == reason


def test_the_ratio_limit_can_be_turned_off(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, _ = fetcher
    settings = {"max_decompression_ratio": 0.0, "max_content_bytes": 2 << 20,
                "allow_private_addresses": True}
    result = _fetch_with(io, f"http://127.0.0.1:{server.port}/bomb", settings)
    assert (result.status, result.truncated, len(result.body)) == (
        Status.FETCHED, "length", 2 << 20
    )


# -- content types ----------------------------------------------------------------------------

HTML_ONLY = {"accept_content_types": ("text/html",), "allow_private_addresses": True}


def test_a_filtered_type_keeps_its_headers_but_not_its_body(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, _ = fetcher
    result = _fetch_with(io, f"http://127.0.0.1:{server.port}/pdf", HTML_ONLY)
    assert (result.status, result.reason) == (Status.FETCH_ERROR, "content-type:filtered")
    # The server sends its 10 MB over 5 s: the fetcher closed the connection before it was
    # done (the server's writes failed), it did not read them.
    while not server.pdf_answers:
        time.sleep(0.05)
    assert server.pdf_answers == ["cut"]
    assert result.http_status == 200
    assert result.content_type == "application/pdf"
    assert result.header("Content-Length") == "10000000"
    assert (result.body, result.truncated) == (b"", "unspecified")
    # The WARC writer archives it: headers, an empty payload, marked truncated.
    records, _ = WarcRecordFactory().encode_pair(result)
    text = gzip.decompress(records)
    assert b"WARC-Truncated: unspecified" in text
    assert b"Content-Type: application/pdf" in text
    assert b"X-Crawler-Original-Content-Length: 10000000" in text


@pytest.mark.parametrize(
    ("path", "hops", "status", "reason"),
    [
        ("/good-gzip", "L", Status.FETCHED, ""),
        ("/plain", "L", Status.FETCH_ERROR, "content-type:filtered"),
        ("/plain", "P", Status.FETCHED, ""),  # robots.txt is never filtered
        ("/untyped", "L", Status.FETCHED, ""),  # no type declared: not filtered
        ("/pdf-404", "L", Status.HTTP_ERROR, "http:404"),  # only 2xx are filtered
        ("/to-good-gzip", "L", Status.REDIRECT, "http:302"),
    ],
)
def test_which_responses_the_type_filter_applies_to(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher],
    path: str, hops: str, status: Status, reason: str,
) -> None:
    io, _ = fetcher
    result = _fetch_with(io, f"http://127.0.0.1:{server.port}{path}", HTML_ONLY, hops=hops)
    assert (result.status, result.reason) == (status, reason)
    if path == "/plain" and status is Status.FETCH_ERROR:
        # Not kept even when it has arrived: the record says the body is missing.
        assert (result.body, result.truncated) == (b"", "unspecified")
    if path == "/pdf-404":
        assert result.body == b"%PDF-1.4 gone"


# -- the address guard ------------------------------------------------------------------------


class FakeLookup:
    """Names to addresses for the resolver; every other name does not exist. Counts calls."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int, family: int) -> list:
        self.calls.append(host)
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [{"hostname": host, "host": self.table[host], "port": port,
                 "family": socket.AF_INET, "proto": 0, "flags": socket.AI_NUMERICHOST}]


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("127.0.0.1", "ssrf:loopback-address"),
        ("[::1]", "ssrf:loopback-address"),
        ("[::ffff:127.0.0.1]", "ssrf:loopback-address"),
        ("[::ffff:7f00:1]", "ssrf:loopback-address"),
        ("0.0.0.0", "ssrf:unspecified-address"),
        ("169.254.169.254", "ssrf:link-local-address"),
        ("localhost", "ssrf:loopback-address"),  # a name, resolved for real
        ("loopback.test", "ssrf:loopback-address"),
        ("intranet.test", "ssrf:private-address"),
        ("metadata.test", "ssrf:link-local-address"),
        ("nowhere.test", "dns:unresolved"),
    ],
)
def test_private_addresses_are_refused_by_default(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher], host: str, reason: str
) -> None:
    io, _ = fetcher
    path = f"/good-gzip?guard={host}"
    lookup = None
    if host.endswith(".test"):
        lookup = FakeLookup({"loopback.test": "127.0.0.1", "intranet.test": "10.1.2.3",
                             "metadata.test": "169.254.169.254"})
    result = _fetch_with(io, f"http://{host}:{server.port}{path}", create={"lookup": lookup})
    assert (result.status, result.reason) == (Status.FETCH_ERROR, reason)
    assert result.http_status == 0
    assert path not in server.requests


def test_allow_private_addresses_lets_them_through(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, _ = fetcher
    lookup = FakeLookup({"loopback.test": "127.0.0.1"})
    result = _fetch_with(io, f"http://loopback.test:{server.port}/good-gzip",
                         {"allow_private_addresses": True}, {"lookup": lookup})
    assert result.status is Status.FETCHED
    assert result.ip_address == "127.0.0.1"


def test_connect_to_reaches_its_address_past_the_guard_and_nothing_else(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, _ = fetcher
    rules = {"connect_to": (f"site.test:80:127.0.0.1:{server.port}",)}
    before = len(server.requests)
    result = _fetch_with(io, "http://site.test/good-gzip", rules)
    assert (result.status, result.url) == (Status.FETCHED, "http://site.test/good-gzip")
    assert result.ip_address == "127.0.0.1"
    assert server.requests[before:] == ["/good-gzip"]
    assert ("Host", "site.test") in result.request_headers
    # The rule names one host and port: the guard still refuses other ports of that host (not
    # matched: DNS, which has no such name), and every address a redirect leads to.
    other_port = _fetch_with(io, f"http://site.test:{server.port}/good-gzip", rules)
    assert (other_port.status, other_port.reason) == (Status.FETCH_ERROR, "dns:unresolved")
    redirected = _fetch_with(io, "http://site.test/to-blocked-literal", rules,
                             follow_redirects=True)
    assert (redirected.status, redirected.reason) == (
        Status.FETCH_ERROR, "ssrf:loopback-address"
    )


def _all_but_the_server(address: str) -> str | None:
    """The guard, except for the test server's own address (so that a first hop gets there)."""
    return None if address == "127.0.0.1" else address_reason(address)


@pytest.mark.parametrize(
    ("path", "status", "reason"),
    [
        ("/to-good-gzip", Status.FETCHED, ""),
        ("/to-blocked-literal", Status.FETCH_ERROR, "ssrf:loopback-address"),  # 127.0.0.2
        ("/to-blocked-name", Status.FETCH_ERROR, "ssrf:private-address"),
        ("/to-ipv6-loopback", Status.FETCH_ERROR, "ssrf:loopback-address"),
        ("/to-ftp", Status.FETCH_ERROR, "url:invalid"),
    ],
)
def test_every_redirect_hop_passes_the_guard(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher],
    path: str, status: Status, reason: str,
) -> None:
    io, _ = fetcher
    create = {"lookup": FakeLookup({"blocked.test": "10.0.0.7"}),
              "address_check": _all_but_the_server}
    before = len(server.requests)
    result = _fetch_with(io, f"http://127.0.0.1:{server.port}{path}", create=create,
                         follow_redirects=True)
    assert (result.status, result.reason) == (status, reason)
    if status is Status.FETCHED:
        assert result.url == f"http://127.0.0.1:{server.port}/good-gzip"
        assert server.requests[before:] == [path, "/good-gzip"]
    else:
        assert server.requests[before:] == [path]


def test_a_redirect_not_followed_is_recorded_as_it_came(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, _ = fetcher
    result = _fetch_with(io, f"http://127.0.0.1:{server.port}/to-blocked-literal",
                         create={"address_check": _all_but_the_server})
    assert (result.status, result.reason) == (Status.REDIRECT, "http:302")
    assert result.header("Location") == f"http://127.0.0.2:{server.port}/good-gzip"


def test_redirects_are_followed_a_bounded_number_of_times(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, _ = fetcher
    before = len(server.requests)
    result = _fetch_with(io, f"http://127.0.0.1:{server.port}/loop",
                         {"allow_private_addresses": True}, follow_redirects=True)
    assert (result.status, result.reason) == (Status.HTTP_ERROR, "http:too-many-redirects")
    assert server.requests[before:] == ["/loop"] * (MAX_REDIRECTS + 1)
    # The last redirect is what is recorded (and archived): robots.txt policy reads its 3xx
    # as RFC 9309 says of too many redirects (unavailable: allow all).
    assert result.http_status == 302
    assert result.header("Location") == "/loop"


def test_hops_to_the_same_host_are_spaced_as_politeness_asks(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, _ = fetcher
    started = time.monotonic()
    # The total timeout (0.5 s) is shorter than the five pauses: they do not count against it.
    result = _fetch_with(io, f"http://127.0.0.1:{server.port}/loop",
                         {"allow_private_addresses": True, "total_timeout_seconds": 0.5},
                         follow_redirects=True, hop_spacing=(0.2, 0.0))
    elapsed = time.monotonic() - started
    assert (result.status, result.reason) == (Status.HTTP_ERROR, "http:too-many-redirects")
    assert MAX_REDIRECTS * 0.2 <= elapsed


def test_a_dead_host_is_looked_up_once_for_many_urls(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, _ = fetcher
    lookup = FakeLookup({})
    config = FetchSection(total_timeout_seconds=5.0)
    client = io.run(HttpFetcher.create(config, UserAgentSection(), lookup=lookup))
    try:
        reasons = {io.run(client.fetch(f"http://dead.test/{n}"), timeout=10).reason
                   for n in range(20)}
    finally:
        io.run(client.aclose())
    assert reasons == {"dns:unresolved"}
    assert lookup.calls == ["dead.test"]


def test_the_clock_of_the_dns_cache_is_injected(
    server: _HostileServer, fetcher: tuple[IoLoop, HttpFetcher]
) -> None:
    io, _ = fetcher
    now = [0.0]
    lookup = FakeLookup({})
    config = FetchSection(dns_negative_cache_seconds=30.0)
    client = io.run(HttpFetcher.create(config, UserAgentSection(), lookup=lookup,
                                       clock=lambda: now[0]))
    fetch: Callable[[], FetchResult] = lambda: io.run(client.fetch("http://dead.test/"), 10)  # noqa: E731
    try:
        fetch()
        now[0] = 29.0
        fetch()
        assert len(lookup.calls) == 1
        now[0] = 30.0
        fetch()
        assert len(lookup.calls) == 2
    finally:
        io.run(client.aclose())
