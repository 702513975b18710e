"""The HTTP client of the fetch stage: single GETs on one aiohttp session, every outcome a
:class:`~crawl.model.FetchResult` with a status from the one vocabulary.

:class:`HttpFetcher` never raises for anything the web does. It puts together the address
guard (:mod:`crawl.http.address_guard`), the resolver (:mod:`crawl.http.dns`) and the body
decoder (:mod:`crawl.http.body`), and adds the rules of the request itself: timeouts, header
limits, the content-type filter and redirects followed hop by hop, each hop checked like the
first. aiohttp was chosen over requests in a thread pool by measurement (see the README's
dependency notes and ``bench/http_clients.md``).
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

import aiohttp
from yarl import URL

from crawl.config import FetchSection, UserAgentSection
from crawl.hops import is_prerequisite, is_sitemap_hops
from crawl.http.address_guard import AddressNotAllowed, address_check_for, is_ip_literal
from crawl.http.body import BodyDecoder, BodyError, content_type_accepted
from crawl.http.dns import CachingResolver, DnsCache, Lookup
from crawl.model import FetchResult
from crawl.progress import RunningMean
from crawl.status import Status

__all__ = ["MAX_REDIRECTS", "NOT_MODIFIED", "HttpFetcher", "status_for_http"]

_READ_CHUNK = 64 * 1024

#: Redirects followed when asked to (robots.txt); RFC 9309 asks for at least five.
MAX_REDIRECTS = 5

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


#: The reason of a 304 answer to a conditional request (a FETCHED outcome: the page is as
#: archived before).
NOT_MODIFIED = "http:not-modified"


def status_for_http(
    http_status: int, location: str | None, conditional: bool = False
) -> tuple[Status, str]:
    """Map an HTTP status (and Location header) to the crawl's status and reason; a 304 is
    FETCHED (:data:`NOT_MODIFIED`) when the request was ``conditional``."""
    if 200 <= http_status < 300:
        return Status.FETCHED, ""
    if http_status == 304 and conditional:
        return Status.FETCHED, NOT_MODIFIED
    if 300 <= http_status < 400 and http_status != 304:
        if location:
            return Status.REDIRECT, f"http:{http_status}"
        return Status.HTTP_ERROR, f"http:{http_status}:no-location"
    return Status.HTTP_ERROR, f"http:{http_status}"


def _error_reason(error: BaseException) -> str:
    """A short machine-readable reason for a failed request."""
    if isinstance(error, AddressNotAllowed):
        return error.reason
    if isinstance(error, BodyError):
        return error.reason
    if isinstance(error, aiohttp.ClientConnectorError) and isinstance(
        error.os_error, AddressNotAllowed
    ):
        return error.os_error.reason
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
        if "too many headers" in message:
            return "bad-response:too-many-headers"
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


def _decode_header(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _header_limits(fetch: FetchSection) -> dict[str, int]:
    """aiohttp's parser limits for ClientSession (``max_headers`` only where it exists)."""
    limits = {"max_line_size": fetch.max_header_bytes, "max_field_size": fetch.max_header_bytes}
    if "max_headers" in inspect.signature(aiohttp.ClientSession).parameters:
        limits["max_headers"] = fetch.max_headers
    return limits


class HttpFetcher:
    """Performs single HTTP GETs with the crawl's limits, on the loop it was created for.

    Construct and close it on the loop (``await HttpFetcher.create(...)`` /
    ``await fetcher.aclose()``); call :meth:`fetch` from coroutines on that loop.

    - **Address guard**: a name's answers are checked by the resolver, an IP-literal URL here
      before its request; refused: ``FETCH_ERROR`` with ``ssrf:<class>-address``. It does not
      apply through ``fetch.proxy`` nor to the addresses ``fetch.connect_to`` names.
    - **Bodies**: cut at ``fetch.max_content_bytes`` after decoding (``WARC-Truncated:
      length``); past ``fetch.max_decompression_ratio`` ``bad-response:compression-ratio``;
      corrupt or unfinished compressed data ``bad-response:invalid-gzip`` /
      ``incomplete-gzip`` (or ``-deflate``); codings not asked for (``Accept-Encoding: gzip,
      deflate``) ``bad-response:unsupported-encoding``.
    - **Headers**: aiohttp's parser limits the status line and each field to
      ``fetch.max_header_bytes`` and the count to ``fetch.max_headers``
      (``bad-response:header-too-large``, ``bad-response:too-many-headers``).
    - **Content types** (:func:`~crawl.http.body.content_type_accepted`): with
      ``fetch.accept_content_types`` set, a 2xx response of another declared type is
      ``FETCH_ERROR content-type:filtered``: status and headers are kept (the WARC writer
      archives them, with an empty body marked ``WARC-Truncated: unspecified``), the body is
      not read and the connection is closed. robots.txt (hop path ending in ``P``), sitemaps
      (``S``) and responses without a Content-Type are never filtered.
    - **Timeouts**: connect (``fetch.connect_timeout_seconds``), silence while reading
      (``read_timeout_seconds``) and the whole request (``total_timeout_seconds``), so a slow
      host holds a connection for a bounded time. Before the response head: ``FETCH_ERROR``
      with ``timeout:connect``, ``timeout:read`` or ``timeout:total`` (a failure that may
      pass, see :mod:`crawl.frontier.politeness`). After it (a trickling body): the response
      is kept as far as it came, marked ``WARC-Truncated: time``, and counts as an answer (the
      host's spacing grows with the long response time, Mercator's rule): asking again would
      only hold a slot again.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession,
        fetch: FetchSection,
        user_agent: UserAgentSection,
        resolver: CachingResolver | None = None,
        address_check: Callable[[str], str | None] | None = None,
    ) -> None:
        self._session = session
        self._resolver = resolver
        self._config = fetch
        self._address_check = address_check
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
    async def create(
        cls,
        fetch: FetchSection,
        user_agent: UserAgentSection,
        *,
        lookup: Lookup | None = None,
        address_check: Callable[[str], str | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> HttpFetcher:
        """Open the session (must run on the target loop).

        ``lookup`` replaces the threaded ``getaddrinfo`` and ``address_check`` the guard's
        :func:`address_reason` (tests). With a proxy, or with ``allow_private_addresses``,
        there is no guard at all (:func:`address_check_for`).
        """
        check = address_check_for(fetch)
        if check is not None and address_check is not None:
            check = address_check
        resolver = CachingResolver(
            DnsCache(fetch.dns_cache_seconds, fetch.dns_negative_cache_seconds, clock=clock),
            lookup,
            check,
            connect_to=fetch.connect_to_rules,
        )
        connector = aiohttp.TCPConnector(
            limit=fetch.max_connections,
            limit_per_host=0 if fetch.proxy else 2,
            use_dns_cache=False,  # the resolver caches, failures included
            enable_cleanup_closed=True,
            resolver=resolver,
        )
        tracing = aiohttp.TraceConfig()
        tracing.on_request_headers_sent.append(_note_request_sent)
        session = aiohttp.ClientSession(
            connector=connector,
            trace_configs=[tracing],
            auto_decompress=False,  # BodyDecoder does it, within limits
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("User-Agent",),
            **_header_limits(fetch),
        )
        return cls(session, fetch, user_agent, resolver, check)

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

    def _check_literal(self, target: URL) -> None:
        """Refuse an IP-literal URL the guard does not allow (names: in the resolver)."""
        host = target.host or ""
        if self._address_check is not None and is_ip_literal(host):
            reason = self._address_check(host)
            if reason is not None:
                raise AddressNotAllowed(reason, host)

    async def fetch(
        self,
        url: str,
        *,
        hops: str = "",
        via: str = "",
        follow_redirects: bool = False,
        hop_spacing: tuple[float, float] = (0.0, 0.0),
        max_bytes: int | None = None,
        submitted: float | None = None,
        conditional: Sequence[tuple[str, str]] = (),
    ) -> FetchResult:
        """GET ``url``; every outcome is a FetchResult (never raises for what the web does).

        ``follow_redirects`` follows up to :data:`MAX_REDIRECTS` redirects (robots.txt),
        checking every hop like the first; past them the last redirect is the result
        (``http:too-many-redirects``). A hop to the same host waits ``hop_spacing`` = (delay,
        K) as the host's politeness asks: max(delay, K x the previous hop's time) after the
        previous hop ended; the wait does not count against the total timeout.
        ``submitted`` (``time.monotonic()`` when the fetch was handed to the loop) feeds
        :attr:`send_lag_ms`. ``conditional``: the validators of a revisit (``If-None-Match``,
        ``If-Modified-Since``), sent with the request; a 304 answer is then FETCHED.
        """
        limit = max_bytes if max_bytes is not None else self._config.max_content_bytes
        headers = {
            "User-Agent": self._user_agent,
            "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "Accept-Encoding": "gzip, deflate",
        }
        headers.update(conditional)
        sent = _SentTime(time.time(), time.monotonic())
        result = FetchResult(url=url, status=Status.FETCH_ERROR, reason="", hops=hops, via=via)
        filter_types = (
            bool(self._config.accept_content_types)
            and not is_prerequisite(hops)
            and not is_sitemap_hops(hops)
        )
        try:
            target = URL(url)
            timeout = self._timeout
            redirects = 0
            deadline = sent.monotonic + self._timeout.total
            hop_started = time.monotonic()
            while True:
                self._check_literal(target)
                async with self._session.get(
                    target,
                    headers=headers,
                    proxy=self._config.proxy or None,
                    allow_redirects=False,
                    timeout=timeout,
                    trace_request_ctx=sent,
                ) as response:
                    location = response.headers.get("Location")
                    if follow_redirects and location and response.status in _REDIRECT_STATUSES:
                        if redirects >= MAX_REDIRECTS:
                            self._fill_head(response, result)
                            response.close()
                            result.url = str(response.url)
                            result.status, result.reason = (
                                Status.HTTP_ERROR, "http:too-many-redirects"
                            )
                            break
                        try:
                            target = response.url.join(URL(location))
                        except ValueError:
                            raise aiohttp.InvalidURL(location) from None
                        if target.scheme not in ("http", "https") or not target.host:
                            raise aiohttp.InvalidURL(location)
                        response.close()
                        redirects += 1
                        if target.host == response.url.host:
                            ended = time.monotonic()
                            delay, factor = hop_spacing
                            pause = max(delay, factor * (ended - hop_started))
                            if pause > 0:
                                await asyncio.sleep(pause)
                                deadline += pause
                        hop_started = time.monotonic()
                        remaining = deadline - hop_started
                        if remaining <= 0:
                            raise TimeoutError
                        timeout = aiohttp.ClientTimeout(
                            total=remaining,
                            sock_connect=self._timeout.sock_connect,
                            sock_read=self._timeout.sock_read,
                        )
                        continue
                    if redirects:
                        result.url = str(response.url)
                    await self._read(response, result, limit, filter_types, bool(conditional))
                    break
        except Exception as error:  # noqa: BLE001 - every failure becomes a recorded status
            result.status = Status.FETCH_ERROR
            result.reason = _error_reason(error)
            result.http_status = 0
            result.response_headers = []
            result.body = b""
            result.truncated = ""
        # Politeness is measured from when the request left, which under load can be well
        # after this coroutine started (waiting for the interpreter lock or a connection).
        result.started_ms = int(sent.wall * 1000)
        result.duration_ms = int((time.monotonic() - sent.monotonic) * 1000)
        if submitted is not None and sent.noted:
            self.send_lag_ms.add((sent.monotonic - submitted) * 1000)
        return result

    @staticmethod
    def _fill_head(response: aiohttp.ClientResponse, result: FetchResult) -> None:
        """Status line and headers of ``response``, and the request headers sent."""
        result.http_status = response.status
        result.http_reason = response.reason or ""
        result.http_version = f"{response.version.major}.{response.version.minor}"
        result.request_headers = [
            (str(k), str(v)) for k, v in response.request_info.headers.items()
        ]
        result.response_headers = [
            (_decode_header(k), _decode_header(v)) for k, v in response.raw_headers
        ]

    async def _read(
        self,
        response: aiohttp.ClientResponse,
        result: FetchResult,
        limit: int,
        filter_types: bool,
        conditional: bool = False,
    ) -> None:
        """Fill ``result`` from ``response``: status, headers, the body within the limits."""
        self._fill_head(response, result)
        if len(result.response_headers) > self._config.max_headers:
            # aiohttp versions without a max_headers setting parse up to 32768 of them.
            raise BodyError("bad-response:too-many-headers")
        if not self._config.proxy:
            result.ip_address = self._peer_address(response)
        status, reason = status_for_http(
            response.status, response.headers.get("Location"), conditional
        )
        if (
            filter_types
            and status is Status.FETCHED
            and reason != NOT_MODIFIED
            and not content_type_accepted(
                response.headers.get("Content-Type", ""), self._config.accept_content_types
            )
        ):
            result.status, result.reason = Status.FETCH_ERROR, "content-type:filtered"
            if not response.content.at_eof():
                result.truncated = "unspecified"
                response.close()  # unread bytes must not reach the next request
            return
        decoder = BodyDecoder(
            ",".join(response.headers.getall("Content-Encoding", ())),
            limit,
            self._config.max_decompression_ratio,
        )
        cut = False
        try:
            async for chunk in response.content.iter_chunked(_READ_CHUNK):
                if decoder.feed(chunk):
                    cut = True
                    break
        except (TimeoutError, asyncio.TimeoutError, aiohttp.ServerTimeoutError):
            # The server answered but its body outlasted the total or read timeout (a
            # trickle): what came is kept and marked, as Heritrix marks timeTrunc. (aiohttp
            # raises asyncio's TimeoutError, which is the built-in one from Python 3.11 only.)
            result.truncated = "time"
            response.close()
        else:
            if cut:
                result.truncated = "length"
                response.close()
            else:
                decoder.finish()
        result.body = bytes(decoder.body)
        result.status, result.reason = status, reason
