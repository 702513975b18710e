"""The HTTP client against a hostile server: every malformed answer becomes a recorded status.

A raw TCP server on loopback answers each path with canned bytes (bad status lines, huge
headers, lying lengths, resets, broken chunking and gzip, trickling bodies). The fetcher must
turn each into a FetchResult with a status and a reason, and never raise.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from crawl.config import FetchSection, UserAgentSection
from crawl.fetcher import HttpFetcher, IoLoop
from crawl.status import Status

OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"

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
}


class _HostileServer:
    """Answers each request path with the canned bytes of ``ANSWERS`` and closes."""

    def __init__(self) -> None:
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
        answer = ANSWERS.get(path, ANSWERS.get(path.strip("/"), b""))
        if answer == "reset":
            writer.write(OK_HEAD + b"Content-Length: 100000\r\n\r\n" + b"x" * 100)
            await writer.drain()
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
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
    config = FetchSection(total_timeout_seconds=3.0, read_timeout_seconds=0.5)
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
        ("/many-headers", "bad-response:"),
        ("/short-body", "bad-response:payload"),
        ("/bad-chunked", "bad-response:"),
        ("/bad-gzip", "bad-response:"),
        ("/empty", "connect:disconnected"),
        ("/reset", ""),
        # one byte every 0.2 s never trips the 0.5 s read timeout: the total timeout ends it
        ("/trickle", "timeout:total"),
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
