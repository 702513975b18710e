"""The HTTP client of the fetch stage: one aiohttp session on a background event loop.

:class:`IoLoop` runs an asyncio loop in a daemon thread; the fetch operator hands it fetches
with :meth:`IoLoop.submit` and collects the finished ones later, so no Flink call ever waits for
the network (a checkpoint never waits for a slow server either). :class:`HttpFetcher` performs
one request and turns every outcome, good or bad, into a :class:`~crawl.model.FetchResult` with
a status from the one vocabulary: it never raises for anything the web does.

aiohttp was chosen over requests in a thread pool by measurement (see the README's dependency
notes and ``bench/http_clients.md``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ipaddress
import socket
import threading
import time
from collections.abc import Coroutine
from typing import Any

import aiohttp

from crawl.config import FetchSection, UserAgentSection
from crawl.model import FetchResult
from crawl.progress import RunningMean
from crawl.status import Status

__all__ = ["HttpFetcher", "IoLoop", "status_for_http"]

_READ_CHUNK = 64 * 1024


class IoLoop:
    """An asyncio event loop in a daemon thread, fed from other threads."""

    def __init__(self, name: str = "crawler-io") -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        """Schedule ``coroutine`` on the loop; the returned future completes with its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        """Run ``coroutine`` on the loop and wait for its result (setup and teardown only)."""
        return self.submit(coroutine).result(timeout)

    def close(self) -> None:
        """Stop the loop and its thread; pending fetches are abandoned."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()


def status_for_http(http_status: int, location: str | None) -> tuple[Status, str]:
    """Map an HTTP status (and Location header) to the crawl's status and reason."""
    if 200 <= http_status < 300:
        return Status.FETCHED, ""
    if 300 <= http_status < 400 and http_status != 304:
        if location:
            return Status.REDIRECT, f"http:{http_status}"
        return Status.HTTP_ERROR, f"http:{http_status}:no-location"
    return Status.HTTP_ERROR, f"http:{http_status}"


def _error_reason(error: BaseException) -> str:
    """A short machine-readable reason for a failed request."""
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return "timeout:connect"
    if isinstance(error, aiohttp.SocketTimeoutError):
        return "timeout:read"
    if isinstance(error, asyncio.TimeoutError | TimeoutError):
        return "timeout:total"
    if isinstance(error, aiohttp.ClientProxyConnectionError):
        return "connect:proxy-unreachable"
    if isinstance(error, aiohttp.ClientConnectorDNSError):
        return "dns:unresolved"
    if isinstance(error, aiohttp.ClientConnectorError):
        os_error = error.os_error
        if isinstance(os_error, ConnectionRefusedError):
            return "connect:refused"
        if isinstance(os_error, socket.gaierror):
            return "dns:unresolved"
        return "connect:failed"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "connect:disconnected"
    if isinstance(error, aiohttp.ClientPayloadError):
        return "bad-response:payload"
    if isinstance(error, aiohttp.ClientResponseError):
        message = (error.message or "").lower()
        if "too long" in message or "too large" in message or "got more than" in message:
            return "bad-response:header-too-large"
        return "bad-response:invalid"
    if isinstance(error, aiohttp.InvalidURL):
        return "url:invalid"
    if isinstance(error, ConnectionResetError):
        return "connect:reset"
    if isinstance(error, aiohttp.ClientOSError | OSError):
        return "connect:os-error"
    if isinstance(error, aiohttp.ClientError):
        return "fetch:" + type(error).__name__
    return "fetch:internal:" + type(error).__name__


class _SentTime:
    """When a request's headers were handed to the socket (the first one, for redirects)."""

    __slots__ = ("monotonic", "noted", "wall")

    def __init__(self, wall: float, monotonic: float) -> None:
        self.wall = wall
        self.monotonic = monotonic
        self.noted = False


async def _note_request_sent(
    session: aiohttp.ClientSession,
    context: Any,
    params: aiohttp.TraceRequestHeadersSentParams,
) -> None:
    sent = context.trace_request_ctx
    if isinstance(sent, _SentTime) and not sent.noted:
        sent.wall, sent.monotonic, sent.noted = time.time(), time.monotonic(), True


class _RecordingResolver(aiohttp.ThreadedResolver):
    """The default resolver, remembering the first address of each host (for WARC-IP-Address
    when the connection is gone before it could be asked)."""

    def __init__(self, remembered: int = 4096) -> None:
        super().__init__()
        self._addresses: dict[str, str] = {}
        self._remembered = remembered

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> Any:
        answers = await super().resolve(host, port, family)
        if answers:
            if len(self._addresses) >= self._remembered:
                self._addresses.pop(next(iter(self._addresses)))
            self._addresses[host] = str(answers[0]["host"])
        return answers

    def address_of(self, host: str) -> str:
        if _is_ip_literal(host):
            return host
        return self._addresses.get(host, "")


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _decode_header(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


class HttpFetcher:
    """Performs single HTTP GETs with the crawl's limits, on the loop it was created for.

    Construct and close it on the loop (``await HttpFetcher.create(...)`` /
    ``await fetcher.aclose()``); call :meth:`fetch` from coroutines on that loop.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession,
        fetch: FetchSection,
        user_agent: UserAgentSection,
        resolver: _RecordingResolver | None = None,
    ) -> None:
        self._session = session
        self._resolver = resolver
        self._config = fetch
        self._user_agent = user_agent.header
        #: Time (ms) from a fetch's submission to its request leaving: how long fetches wait
        #: for the event loop (a busy interpreter shows here first).
        self.send_lag_ms = RunningMean()
        self._timeout = aiohttp.ClientTimeout(
            total=fetch.total_timeout_seconds,
            sock_connect=fetch.connect_timeout_seconds,
            sock_read=fetch.read_timeout_seconds,
        )

    @classmethod
    async def create(cls, fetch: FetchSection, user_agent: UserAgentSection) -> HttpFetcher:
        """Open the session (must run on the target loop)."""
        resolver = _RecordingResolver()
        connector = aiohttp.TCPConnector(
            limit=fetch.max_connections,
            limit_per_host=0 if fetch.proxy else 2,
            ttl_dns_cache=300,
            enable_cleanup_closed=True,
            resolver=resolver,
        )
        tracing = aiohttp.TraceConfig()
        tracing.on_request_headers_sent.append(_note_request_sent)
        session = aiohttp.ClientSession(
            connector=connector,
            trace_configs=[tracing],
            auto_decompress=True,
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("User-Agent",),
            max_line_size=16 * 1024,
            max_field_size=16 * 1024,
        )
        return cls(session, fetch, user_agent, resolver)

    async def aclose(self) -> None:
        """Close the session and its connections."""
        await self._session.close()

    def _peer_address(self, response: aiohttp.ClientResponse) -> str:
        """The server's IP address: from the socket while it is held, else as resolved."""
        connection = response.connection
        transport = connection.transport if connection is not None else None
        peer = transport.get_extra_info("peername") if transport is not None else None
        if peer:
            return str(peer[0])
        if self._resolver is not None and response.url.host:
            return self._resolver.address_of(response.url.host)
        return ""

    async def fetch(
        self,
        url: str,
        *,
        hops: str = "",
        via: str = "",
        follow_redirects: bool = False,
        max_bytes: int | None = None,
        submitted: float | None = None,
    ) -> FetchResult:
        """GET ``url``; every outcome is a FetchResult (never raises for what the web does).

        ``submitted`` (``time.monotonic()`` when the fetch was handed to the loop) feeds
        :attr:`send_lag_ms`.
        """
        limit = max_bytes if max_bytes is not None else self._config.max_content_bytes
        headers = {
            "User-Agent": self._user_agent,
            "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "Accept-Encoding": "gzip, deflate",
        }
        sent = _SentTime(time.time(), time.monotonic())
        result = FetchResult(url=url, status=Status.FETCH_ERROR, reason="", hops=hops, via=via)
        try:
            async with self._session.get(
                url,
                headers=headers,
                proxy=self._config.proxy or None,
                allow_redirects=follow_redirects,
                max_redirects=5,
                timeout=self._timeout,
                trace_request_ctx=sent,
            ) as response:
                result.http_status = response.status
                result.http_reason = response.reason or ""
                result.http_version = f"{response.version.major}.{response.version.minor}"
                result.request_headers = [
                    (str(k), str(v)) for k, v in response.request_info.headers.items()
                ]
                result.response_headers = [
                    (_decode_header(k), _decode_header(v)) for k, v in response.raw_headers
                ]
                if follow_redirects and response.history:
                    result.url = str(response.url)
                if not self._config.proxy:
                    result.ip_address = self._peer_address(response)
                body = bytearray()
                async for chunk in response.content.iter_chunked(_READ_CHUNK):
                    room = limit - len(body)
                    if len(chunk) >= room:
                        body += chunk[:room]
                        if len(chunk) > room or not response.content.at_eof():
                            result.truncated = "length"
                        break
                    body += chunk
                result.body = bytes(body)
                result.status, result.reason = status_for_http(
                    response.status, response.headers.get("Location")
                )
        except aiohttp.TooManyRedirects:
            result.status, result.reason = Status.HTTP_ERROR, "http:too-many-redirects"
        except Exception as error:  # noqa: BLE001 - every failure becomes a recorded status
            result.status = Status.FETCH_ERROR
            result.reason = _error_reason(error)
            result.http_status = 0
            result.response_headers = []
            result.body = b""
        # Politeness is measured from when the request left, which under load can be well
        # after this coroutine started (waiting for the interpreter lock or a connection).
        result.started_ms = int(sent.wall * 1000)
        result.duration_ms = int((time.monotonic() - sent.monotonic) * 1000)
        if submitted is not None and sent.noted:
            self.send_lag_ms.add((sent.monotonic - submitted) * 1000)
        return result
