"""Name resolution for the client: a cache of answers and failures, and the aiohttp resolver
that uses it and applies the address guard.

Lookups run ``getaddrinfo`` in threads (on the pool of :data:`crawl.http.io_loop.DNS_THREADS`),
concurrent lookups of one name are shared, and a dead host costs one lookup per
``fetch.dns_negative_cache_seconds``, not one per URL. aiohttp connects only to the addresses
the resolver returns, so the guard checks exactly what is connected to: a name cannot resolve
one way for the check and another for the connection.
"""

from __future__ import annotations

import asyncio
import copy
import socket
import time
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from crawl.config import ConnectTo
from crawl.http.address_guard import AddressNotAllowed, is_ip_literal

__all__ = ["CachingResolver", "DnsCache", "Lookup"]

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
        if is_ip_literal(host):
            return host.strip("[]")
        return self._addresses.get(host, "")

    async def close(self) -> None:
        if self._threaded is not None:
            await self._threaded.close()
