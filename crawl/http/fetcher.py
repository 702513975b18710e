"""The HTTP client of the fetch stage: one aiohttp session on a background event loop.

:class:`IoLoop` runs an asyncio loop in a daemon thread; the fetch operator hands it fetches
with :meth:`IoLoop.submit` and collects the finished ones later, so no Flink call ever waits for
the network (a checkpoint never waits for a slow server either). :class:`HttpFetcher` performs
one request and turns every outcome, good or bad, into a :class:`~crawl.model.FetchResult` with
a status from the one vocabulary: it never raises for anything the web does.

The web is hostile, so every request passes these rules, each plain logic tested on its own:

- **Address guard** (SSRF): :func:`address_class` sorts an IP address into loopback, private,
  link-local, multicast, reserved or unspecified (IPv4, IPv6, and the IPv4 addresses IPv6
  embeds: mapped, NAT64, 6to4) or public. Unless ``fetch.allow_private_addresses`` is set, the
  resolver drops non-public answers before aiohttp connects (it connects only to the addresses
  the resolver returns, so a name cannot resolve one way for the check and another for the
  connection) and an IP-literal URL is checked before its request. Redirects are followed
  here, hop by hop, so each hop passes the same checks. Refused: ``FETCH_ERROR`` with
  ``ssrf:<class>-address``. With ``fetch.proxy`` set the proxy resolves and connects, and the
  guard does not apply (the proxy is the user's choice; the resolver only ever sees its name);
  nor does it to the addresses ``fetch.connect_to`` names (curl's ``--connect-to``, answered by
  the resolver), for the same reason.
- **DNS** (:class:`DnsCache`, :class:`CachingResolver`): lookups run in threads (aiohttp's
  :class:`~aiohttp.ThreadedResolver`, on a pool of :data:`DNS_THREADS`), concurrent lookups of
  one name are shared, answers are kept ``fetch.dns_cache_seconds`` and failures
  ``fetch.dns_negative_cache_seconds``: a dead host costs one lookup per period, not one per
  URL.
- **Body decoding** (:class:`BodyDecoder`): Content-Encoding (gzip, deflate) is removed here,
  not by aiohttp, so that decoded and encoded sizes are both known. The decoded body is cut at
  ``fetch.max_content_bytes`` (``WARC-Truncated: length``, as for an uncompressed body); a body
  decoding to more than ``fetch.max_decompression_ratio`` times its compressed size (checked
  from :data:`RATIO_FLOOR_BYTES` decoded on) is a bomb: ``FETCH_ERROR``
  ``bad-response:compression-ratio``, nothing kept, because a bomb's content is worthless and a
  truncated page would look like a real one. Corrupt or unfinished compressed data is
  ``bad-response:invalid-gzip`` / ``incomplete-gzip`` (or ``-deflate``); codings the crawler
  does not ask for (``Accept-Encoding: gzip, deflate``) are ``bad-response:unsupported-encoding``.
- **Headers**: aiohttp's parser limits the status line and each field to
  ``fetch.max_header_bytes`` and the count to ``fetch.max_headers``
  (``bad-response:header-too-large``, ``bad-response:too-many-headers``).
- **Content types** (:func:`content_type_accepted`): with ``fetch.accept_content_types`` set, a
  2xx response of another declared type is ``FETCH_ERROR content-type:filtered``: status and
  headers are kept (the WARC writer archives them, with an empty body marked
  ``WARC-Truncated: unspecified``), the body is not read and the connection is closed. robots.txt
  (hop path ending in ``P``), sitemaps (``S``) and responses without a Content-Type are never
  filtered.
- **Timeouts**: connect (``fetch.connect_timeout_seconds``), silence while reading
  (``read_timeout_seconds``) and the whole request (``total_timeout_seconds``), so a slow
  host holds a connection for a bounded time. Before the response head: ``FETCH_ERROR`` with
  ``timeout:connect``, ``timeout:read`` or ``timeout:total`` (a failure that may pass, see
  :mod:`crawl.frontier.politeness`). After it (a trickling body): the response is kept as far as it
  came, marked ``WARC-Truncated: time``, and counts as an answer (the host's spacing grows
  with the long response time, Mercator's rule): asking again would only hold a slot again.

aiohttp was chosen over requests in a thread pool by measurement (see the README's dependency
notes and ``bench/http_clients.md``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import inspect
import ipaddress
import socket
import threading
import time
import zlib
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from crawl.config import ConnectTo, FetchSection, UserAgentSection
from crawl.hops import is_prerequisite, is_sitemap_hops
from crawl.model import FetchResult
from crawl.progress import RunningMean
from crawl.status import Status

__all__ = [
    "ADDRESS_CLASSES",
    "DNS_THREADS",
    "MAX_REDIRECTS",
    "NOT_MODIFIED",
    "RATIO_FLOOR_BYTES",
    "AddressNotAllowed",
    "BodyDecoder",
    "BodyError",
    "CachingResolver",
    "DnsCache",
    "HttpFetcher",
    "IoLoop",
    "address_check_for",
    "address_class",
    "address_reason",
    "content_type_accepted",
    "status_for_http",
]

_READ_CHUNK = 64 * 1024

#: Threads for blocking ``getaddrinfo`` calls, per event loop (asyncio's default is 6 on two
#: cores: a few slow name servers would hold up every new host).
DNS_THREADS = 16

#: The decompression ratio is checked once this much has been decoded: small bodies of repeated
#: text compress very well and cost nothing.
RATIO_FLOOR_BYTES = 1024 * 1024

#: Redirects followed when asked to (robots.txt); RFC 9309 asks for at least five.
MAX_REDIRECTS = 5

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class IoLoop:
    """An asyncio event loop in a daemon thread, fed from other threads.

    Its default executor (where :class:`aiohttp.ThreadedResolver` runs ``getaddrinfo``) has
    :data:`DNS_THREADS` threads.
    """

    def __init__(self, name: str = "crawler-io") -> None:
        self.loop = asyncio.new_event_loop()
        self._executor = concurrent.futures.ThreadPoolExecutor(
            DNS_THREADS, thread_name_prefix=f"{name}-dns"
        )
        self.loop.set_default_executor(self._executor)
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
        # Lookups still blocked in getaddrinfo finish on their own; nobody waits for them.
        self._executor.shutdown(wait=False, cancel_futures=True)


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


# -- the address guard ------------------------------------------------------------------------

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# IANA's special-purpose address registries (RFC 6890 and successors), most specific first.
# "private": in use inside some network, not on the Internet; "reserved": documentation,
# benchmarking, protocol assignments and unallocated space.
_V4_CLASSES: tuple[tuple[_Network, str], ...] = tuple(
    (ipaddress.ip_network(network), name)
    for network, name in (
        ("0.0.0.0/32", "unspecified"),
        ("0.0.0.0/8", "reserved"),  # "this network"; Linux connects 0.x to itself
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "private"),  # shared address space (carrier-grade NAT)
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),  # cloud metadata services live here
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved"),  # IETF protocol assignments
        ("192.0.2.0/24", "reserved"),  # documentation
        ("192.88.99.0/24", "reserved"),  # 6to4 relay anycast (deprecated)
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "reserved"),  # benchmarking
        ("198.51.100.0/24", "reserved"),  # documentation
        ("203.0.113.0/24", "reserved"),  # documentation
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),  # future use and the limited broadcast address
    )
)

# IPv6 prefixes that embed an IPv4 address: the embedded address decides.
_V6_EMBEDDING: tuple[_Network, ...] = (
    ipaddress.ip_network("::ffff:0:0/96"),  # IPv4-mapped
    ipaddress.ip_network("64:ff9b::/96"),  # NAT64 well-known prefix
)

_V6_CLASSES: tuple[tuple[_Network, str], ...] = tuple(
    (ipaddress.ip_network(network), name)
    for network, name in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("64:ff9b:1::/48", "private"),  # local-use NAT64
        ("100::/64", "reserved"),  # discard-only
        ("2001::/23", "reserved"),  # IETF protocol assignments (Teredo, benchmarking, ...)
        ("2001:db8::/32", "reserved"),  # documentation
        ("3fff::/20", "reserved"),  # documentation
        ("fc00::/7", "private"),  # unique local
        ("fe80::/10", "link-local"),
        ("fec0::/10", "private"),  # site-local (deprecated)
        ("ff00::/8", "multicast"),
    )
)

_V6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")

#: The classes :func:`address_class` returns besides None (public).
ADDRESS_CLASSES = ("loopback", "private", "link-local", "multicast", "reserved", "unspecified")


def _parse_address(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return None


def address_class(address: str) -> str | None:
    """The special-purpose class of an IP address (one of :data:`ADDRESS_CLASSES`), or None
    for a public unicast address. Text that is no IP address counts as ``"reserved"``.

    IPv6 zone ids are ignored (``fe80::1%eth0`` is link-local); IPv4 addresses embedded in
    IPv6 (``::ffff:127.0.0.1``, ``64:ff9b::a00:1``, 6to4 ``2002:7f00:1::``) are classified as
    the IPv4 address they reach. IPv6 outside 2000::/3 (not allocated for unicast) is reserved.
    """
    ip = _parse_address(address)
    if ip is None:
        return "reserved"
    if isinstance(ip, ipaddress.IPv6Address):
        ip = ipaddress.IPv6Address(ip.packed)  # without the zone id
        if any(ip in network for network in _V6_EMBEDDING):
            return address_class(str(ipaddress.IPv4Address(ip.packed[-4:])))
        if ip.sixtofour is not None:
            return address_class(str(ip.sixtofour))
        for network, name in _V6_CLASSES:
            if ip in network:
                return name
        return None if ip in _V6_GLOBAL_UNICAST else "reserved"
    for network, name in _V4_CLASSES:
        if ip in network:
            return name
    return None


def address_reason(address: str) -> str | None:
    """The reason a request to ``address`` is refused (``ssrf:<class>-address``), or None."""
    kind = address_class(address)
    return None if kind is None else f"ssrf:{kind}-address"


class AddressNotAllowed(OSError):
    """A request would reach an address the guard refuses; ``reason`` says which kind.

    An :class:`OSError`, so that aiohttp reports it from the resolver as a connection error
    (``ClientConnectorError.os_error``) rather than as an internal failure.
    """

    def __init__(self, reason: str, host: str = "") -> None:
        super().__init__(f"{reason}: {host}" if host else reason)
        self.reason = reason
        self.host = host


def _is_ip_literal(host: str) -> bool:
    return _parse_address(host) is not None


# -- DNS --------------------------------------------------------------------------------------

_DnsKey = tuple[str, int, int]
Lookup = Callable[[str, int, int], Awaitable[list[ResolveResult]]]


class DnsCache:
    """Answers and failures of name lookups, each kept for its own TTL.

    Plain logic: ``clock`` (seconds, monotonic) is injected. Holds at most ``max_entries``
    keys; beyond that the oldest stored goes. A TTL of 0 keeps nothing of that kind.
    """

    def __init__(
        self,
        positive_ttl: float,
        negative_ttl: float,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._positive_ttl = positive_ttl
        self._negative_ttl = negative_ttl
        self._max_entries = max(1, max_entries)
        self._clock = clock
        self._entries: dict[_DnsKey, tuple[float, list[ResolveResult] | OSError]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: _DnsKey) -> list[ResolveResult] | OSError | None:
        """The stored answer (a list) or failure (an OSError) for ``key``; None if none is
        fresh."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self._clock() >= expires:
            del self._entries[key]
            return None
        return value

    def put(self, key: _DnsKey, value: list[ResolveResult] | OSError) -> None:
        """Store an answer (for the positive TTL) or a failure (for the negative TTL)."""
        ttl = self._negative_ttl if isinstance(value, OSError) else self._positive_ttl
        self._entries.pop(key, None)
        if ttl <= 0:
            return
        while len(self._entries) >= self._max_entries:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = (self._clock() + ttl, value)


def _connect_to_answer(host: str, port: int, rule: ConnectTo) -> ResolveResult:
    family = socket.AF_INET6 if ":" in rule.address else socket.AF_INET
    return ResolveResult(
        hostname=host,
        host=rule.address,
        port=rule.to_port or port,
        family=family,
        proto=0,
        flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
    )


class CachingResolver(AbstractResolver):
    """aiohttp resolver: cached lookups (:class:`DnsCache`), shared while in progress, and the
    address guard on their answers.

    ``lookup`` is the real resolution (by default :class:`aiohttp.ThreadedResolver`, that is
    ``getaddrinfo`` in a thread); ``check`` maps an address to the reason it is refused, or
    None (no check at all when ``check`` is None). Answers the guard refuses are dropped; when
    none is left the lookup raises :class:`AddressNotAllowed`. Failed lookups raise their
    OSError again, from the cache, until the negative TTL has passed. A ``connect_to`` rule
    (``fetch.connect_to``) that matches the host and port answers instead of the lookup, and
    the guard leaves it alone: it is the user's explicit choice, as a proxy is.
    """

    def __init__(
        self,
        cache: DnsCache,
        lookup: Lookup | None = None,
        check: Callable[[str], str | None] | None = None,
        remembered: int = 4096,
        connect_to: tuple[ConnectTo, ...] = (),
    ) -> None:
        self._cache = cache
        self._connect_to = connect_to
        self._threaded = aiohttp.ThreadedResolver() if lookup is None else None
        self._lookup = lookup if lookup is not None else self._threaded_lookup
        self._check = check
        self._pending: dict[_DnsKey, asyncio.Future[list[ResolveResult] | OSError]] = {}
        self._addresses: dict[str, str] = {}
        self._remembered = remembered
        #: Lookups actually made (cache misses not shared with another caller).
        self.lookups = 0

    async def _threaded_lookup(self, host: str, port: int, family: int) -> list[ResolveResult]:
        assert self._threaded is not None
        return await self._threaded.resolve(host, port, family)  # type: ignore[arg-type]

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        for rule in self._connect_to:
            if rule.matches(host, port):
                return self._remember(host, [_connect_to_answer(host, port, rule)])
        key = (host, port, int(family))
        value = self._cache.get(key)
        if value is None:
            pending = self._pending.get(key)
            if pending is None:
                pending = asyncio.ensure_future(self._look_up(key))
                self._pending[key] = pending
            # Shielded: a caller that gives up (timeout) does not cancel the others' lookup.
            value = await asyncio.shield(pending)
        if isinstance(value, OSError):
            raise copy.copy(value)
        return self._allowed(host, value)

    async def _look_up(self, key: _DnsKey) -> list[ResolveResult] | OSError:
        self.lookups += 1
        try:
            value: list[ResolveResult] | OSError = await self._lookup(*key)
            if not value:
                value = socket.gaierror(socket.EAI_NONAME, "no address")
        except OSError as error:
            value = error
        finally:
            self._pending.pop(key, None)
        self._cache.put(key, value)
        return value

    def _allowed(self, host: str, answers: list[ResolveResult]) -> list[ResolveResult]:
        if self._check is not None:
            refused = ""
            kept = []
            for answer in answers:
                reason = self._check(str(answer["host"]))
                if reason is None:
                    kept.append(answer)
                elif not refused:
                    refused = reason
            if not kept:
                raise AddressNotAllowed(refused, host)
            answers = kept
        return self._remember(host, answers)

    def _remember(self, host: str, answers: list[ResolveResult]) -> list[ResolveResult]:
        if host not in self._addresses and len(self._addresses) >= self._remembered:
            self._addresses.pop(next(iter(self._addresses)))
        self._addresses[host] = str(answers[0]["host"])
        return answers

    def address_of(self, host: str) -> str:
        """The first address ``host`` last resolved to (for WARC-IP-Address when the
        connection is gone before it could be asked)."""
        if _is_ip_literal(host):
            return host.strip("[]")
        return self._addresses.get(host, "")

    async def close(self) -> None:
        if self._threaded is not None:
            await self._threaded.close()


# -- bodies and types -------------------------------------------------------------------------


class BodyError(Exception):
    """A body that cannot be kept; ``reason`` is the crawl's reason for it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_GZIP_MAGIC = b"\x1f\x8b"
#: Decoded bytes produced per step: the ratio is checked between steps.
_INFLATE_STEP = 256 * 1024
_CODINGS = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}


class BodyDecoder:
    """Removes a response's Content-Encoding as the body arrives, within the crawl's limits.

    Plain logic: :meth:`feed` the encoded bytes as they come, :meth:`finish` at their end;
    :attr:`body` is the decoded body, at most ``max_bytes`` long, and :attr:`truncated` says
    whether more was there. Output is produced in steps of at most 256 KiB and never more than
    one byte past ``max_bytes``, so a bomb never takes more memory than a large page. Raises
    :class:`BodyError` for an unsupported coding, corrupt or unfinished compressed data, or a
    decoded body more than ``max_ratio`` times the compressed bytes it came from (0: no limit;
    checked once ``ratio_floor`` bytes are decoded). gzip may hold several members; bytes
    after the end of the compressed data are ignored. ``deflate`` is zlib-wrapped or, as some
    servers send it, raw.
    """

    def __init__(
        self,
        content_encoding: str,
        max_bytes: int,
        max_ratio: float = 0.0,
        ratio_floor: int = RATIO_FLOOR_BYTES,
    ) -> None:
        codings = [
            coding.strip().lower()
            for coding in content_encoding.split(",")
            if coding.strip() and coding.strip().lower() != "identity"
        ]
        if len(codings) > 1 or (codings and codings[0] not in _CODINGS):
            raise BodyError("bad-response:unsupported-encoding")
        self.coding = _CODINGS[codings[0]] if codings else ""
        self.body = bytearray()
        self.truncated = False
        #: Encoded bytes consumed so far.
        self.encoded = 0
        #: Decoded bytes produced so far (at most one past the limit).
        self.decoded = 0
        self._max_bytes = max_bytes
        self._max_ratio = max_ratio
        self._ratio_floor = ratio_floor
        self._inflater: Any = None
        self._members = 0  # compressed streams (gzip members) finished
        self._ended = False  # the compressed data ended: the rest is ignored

    def feed(self, data: bytes) -> bool:
        """Take the next encoded bytes; True once the body is cut at the size limit (the caller
        stops reading)."""
        if self.truncated or self._ended or not data:
            return self.truncated
        if not self.coding:
            self.encoded += len(data)
            self._append(data)
            return self.truncated
        pending = data
        while pending and not self.truncated:
            if self._inflater is None:
                if self._members and not _GZIP_MAGIC.startswith(pending[:2]):
                    self._ended = True  # bytes after the last member: ignored
                    break
                self._inflater = self._new_inflater(pending)
            inflater = self._inflater
            try:
                room = self._max_bytes - len(self.body)
                out = inflater.decompress(pending, min(room + 1, _INFLATE_STEP))
            except zlib.error:
                raise BodyError(f"bad-response:invalid-{self.coding}") from None
            consumed = len(pending) - len(inflater.unconsumed_tail)
            if inflater.eof:
                consumed -= len(inflater.unused_data)
            self.encoded += consumed
            self._append(out)
            self._check_ratio()
            if inflater.eof:
                self._members += 1
                self._inflater = None
                pending = inflater.unused_data
                if self.coding != "gzip":
                    self._ended = True
                    break
            else:
                pending = inflater.unconsumed_tail
        return self.truncated

    def finish(self) -> None:
        """The encoded body has ended: raise if compressed data stopped in the middle."""
        if not self.truncated and self._inflater is not None:
            raise BodyError(f"bad-response:incomplete-{self.coding}")

    def _new_inflater(self, first: bytes) -> Any:
        if self.coding == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        # RFC 1950: the low nibble of a zlib stream's first byte is 8 (deflate); else raw.
        return zlib.decompressobj(zlib.MAX_WBITS if first[0] & 0x0F == 8 else -zlib.MAX_WBITS)

    def _append(self, out: bytes) -> None:
        self.decoded += len(out)
        room = self._max_bytes - len(self.body)
        if len(out) > room:
            self.body += out[:room]
            self.truncated = True
        else:
            self.body += out

    def _check_ratio(self) -> None:
        if (
            self._max_ratio
            and self.decoded >= self._ratio_floor
            and self.decoded > self._max_ratio * max(1, self.encoded)
        ):
            raise BodyError("bad-response:compression-ratio")


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def content_type_accepted(content_type: str, accepted: tuple[str, ...]) -> bool:
    """Whether a response with Content-Type ``content_type`` is downloaded.

    ``accepted`` holds media types (``text/html``) and ranges (``text/*``, ``*/*``); empty
    accepts everything. A response without a media type is accepted: nothing says it is of a
    filtered type (sniffing its bytes is not this rule's business).
    """
    if not accepted:
        return True
    media = _media_type(content_type)
    if not media:
        return True
    major = media.split("/", 1)[0]
    for entry in accepted:
        entry = entry.lower()
        if entry in (media, "*/*") or (entry.endswith("/*") and entry[:-2] == major):
            return True
    return False


# -- errors -----------------------------------------------------------------------------------


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


# -- the client -------------------------------------------------------------------------------


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


def address_check_for(fetch: FetchSection) -> Callable[[str], str | None] | None:
    """The address guard the settings ask for: :func:`address_reason`, or None when private
    addresses are allowed or a proxy resolves and connects instead of us."""
    if fetch.proxy or fetch.allow_private_addresses:
        return None
    return address_reason


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
        if self._address_check is not None and _is_ip_literal(host):
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
