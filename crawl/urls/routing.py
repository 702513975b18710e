"""Fetch keys: the key of a host in the fetch stage, so that the hosts that share a politeness
clock (``politeness.group_by``) or a domain quota are fetched by one subtask.

The fetch stage is keyed by a string. Flink puts a key in a key group (``key_group_of``: the
MurmurHash of the key's hash code modulo the max parallelism, which is ``crawl.vnodes``) and
a key group in a subtask; rescaling moves whole key groups. The routing mode
(``PolitenessSection.fetch_routing``) says what to keep together. Under ``host`` a host's key
is the host itself. Under ``domain`` or ``ip`` it is ``"<host> <group> <salt>"``, the salt
(six digits) being the first one that puts the key in the key group of the group's name: every
host of a group is then in one key group, hence in one subtask at any parallelism, and the
fetch stage still keeps one state per host. A host whose group is unknown (``ip``: its name
does not resolve) keeps its plain key and is a group of its own.

The group of a host under ``ip`` is the address its name resolves to when it is first routed
(``fetch.connect_to`` first, then DNS: :class:`AddressResolver`), and the crawl DB remembers
the key (:class:`FetchRouter`): a key must never change, or the host's queue and politeness
state would be split between two keys.

PyFlink's ``key_by`` makes the key a one-field ``Row``; its hash code and Flink's MurmurHash are
reproduced here exactly (the tests compare them with the JVM's).
"""

from __future__ import annotations

import collections
import concurrent.futures
import ipaddress
import socket
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

import numpy as np

from crawl.config import ConnectTo

__all__ = [
    "ROUTING_MODES",
    "AddressResolver",
    "FetchRouter",
    "KeyStore",
    "group_of_key",
    "host_of_key",
    "java_string_hash",
    "key_group_of",
]

ROUTING_MODES = ("host", "domain", "ip")

_MASK = 0xFFFFFFFF
#: A one-field Row's hash code is the field's plus this (RowKind INSERT, Arrays-style mixing).
_ROW_HASH_OFFSET = 62
_SALT_DIGITS = 6
_SALTS = 10**_SALT_DIGITS


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` of ``text`` as an unsigned 32-bit integer."""
    value = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for index in range(0, len(data), 2):
        value = (31 * value + (data[index] << 8 | data[index + 1])) & _MASK
    return value


def _murmur(codes: np.ndarray) -> np.ndarray:
    """Flink's ``MathUtils.murmurHash`` of each uint32 of ``codes`` (non-negative int64)."""
    with np.errstate(over="ignore"):
        h = codes.astype(np.uint32) * np.uint32(0xCC9E2D51)
        h = (h << np.uint32(15)) | (h >> np.uint32(17))
        h = h * np.uint32(0x1B873593)
        h = (h << np.uint32(13)) | (h >> np.uint32(19))
        h = h * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= np.uint32(4)
        h ^= h >> np.uint32(16)
        h = h * np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h = h * np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    signed = h.view(np.int32).astype(np.int64)
    return np.where(signed == -(2**31), 0, np.abs(signed))


def key_group_of(key: str, max_parallelism: int) -> int:
    """The key group Flink gives the fetch-stage key ``key`` (KeyGroupRangeAssignment)."""
    code = (java_string_hash(key) + _ROW_HASH_OFFSET) & _MASK
    return int(_murmur(np.array([code], dtype=np.int64))[0]) % max_parallelism


_salt_hashes: np.ndarray | None = None


def _salt_hash_table() -> np.ndarray:
    """Java hash codes of the salts "000000" to "999999" (built on first use, 8 MB)."""
    global _salt_hashes
    if _salt_hashes is None:
        numbers = np.arange(_SALTS, dtype=np.int64)
        hashes = np.zeros(_SALTS, dtype=np.int64)
        for position in range(_SALT_DIGITS):
            digit = numbers // 10 ** (_SALT_DIGITS - 1 - position) % 10
            hashes = (hashes * 31 + ord("0") + digit) & _MASK
        _salt_hashes = hashes
    return _salt_hashes


def _salted_key(prefix: str, target: int, max_parallelism: int) -> str:
    """``prefix`` followed by the first six-digit salt that puts it in key group ``target``."""
    table = _salt_hash_table()
    base = (java_string_hash(prefix) * pow(31, _SALT_DIGITS, 2**32) + _ROW_HASH_OFFSET) & _MASK
    chunk = min(max(max_parallelism, 256), 8192)  # about one hit per max_parallelism salts
    for start in range(0, _SALTS, chunk):
        codes = (base + table[start : start + chunk]) & _MASK
        hits = np.flatnonzero(_murmur(codes) % max_parallelism == target)
        if hits.size:
            return f"{prefix}{start + int(hits[0]):0{_SALT_DIGITS}d}"
    # Out of a million salts none in a group of at most 32768: the hash would be broken.
    raise RuntimeError(f"no salt puts {prefix!r} in key group {target}")


def host_of_key(key: str) -> str:
    """The host a fetch-stage key stands for."""
    return key.partition(" ")[0]


def group_of_key(key: str) -> str:
    """The politeness group of a fetch-stage key (the host itself when it has no group)."""
    host, _, rest = key.partition(" ")
    return rest.partition(" ")[0] if rest else host


class AddressResolver:
    """The address a host name stands for, for ``group_by: ip``: the one ``fetch.connect_to``
    names for it, else the first its DNS answer lists (IPv4 before IPv6). Names are looked up
    in parallel threads, each at most ``timeout_seconds``; a name that does not resolve in
    time (or at all) has no address."""

    def __init__(
        self,
        connect_to: tuple[ConnectTo, ...],
        timeout_seconds: float,
        lookup: Callable[[str], list[str]] | None = None,
        threads: int = 16,
    ) -> None:
        self._connect_to = connect_to
        self._timeout = timeout_seconds
        self._lookup = lookup or _dns_addresses
        self._threads = threads

    def resolve(self, hosts: Iterable[str]) -> dict[str, str | None]:
        """The address of each of ``hosts`` (None: unknown)."""
        answers: dict[str, str | None] = {}
        pending = []
        for host in dict.fromkeys(hosts):
            named = self._named_address(host)
            if named is not None:
                answers[host] = named
            else:
                pending.append(host)
        if not pending:
            return answers
        pool = concurrent.futures.ThreadPoolExecutor(min(self._threads, len(pending)))
        try:
            futures = {pool.submit(self._lookup, host): host for host in pending}
            done, _ = concurrent.futures.wait(futures, timeout=self._timeout)
            for future, host in futures.items():
                addresses = future.result() if future in done and not future.exception() else []
                answers[host] = _preferred(addresses)
        finally:
            # A lookup past its time is left to finish on its own thread.
            pool.shutdown(wait=False, cancel_futures=True)
        return answers

    def _named_address(self, host: str) -> str | None:
        for rule in self._connect_to:
            if not rule.host or rule.host == host:
                return str(ipaddress.ip_address(rule.address))
        try:
            return str(ipaddress.ip_address(host.strip("[]")))
        except ValueError:
            return None


def _dns_addresses(host: str) -> list[str]:
    try:
        answers = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    return [str(answer[4][0]) for answer in answers]


def _preferred(addresses: list[str]) -> str | None:
    parsed = []
    for text in addresses:
        try:
            parsed.append(ipaddress.ip_address(text.partition("%")[0]))
        except ValueError:
            continue
    if not parsed:
        return None
    return str(min(parsed, key=lambda address: address.version))  # the first IPv4 one


class KeyStore(Protocol):
    """Where :class:`FetchRouter` remembers the keys it made (a dict, or keyed state)."""

    def get(self, host: str) -> str | None: ...

    def __setitem__(self, host: str, key: str) -> None: ...


class FetchRouter:
    """The fetch-stage key of each host the crawl DB sends URLs for (see the module docstring).

    ``routes`` (``group_by: ip`` only) is where the keys are remembered: the crawl DB's keyed
    state, so that a host keeps its key for the crawl's life. Under ``domain`` a key depends on
    the host alone and is only cached in memory.
    """

    def __init__(
        self,
        mode: str,
        max_parallelism: int,
        resolver: AddressResolver | None = None,
        cache_size: int = 100_000,
    ) -> None:
        if mode not in ROUTING_MODES:
            raise ValueError(f"routing mode {mode!r} is not one of {', '.join(ROUTING_MODES)}")
        if mode == "ip" and resolver is None:
            raise ValueError("routing by ip needs an address resolver")
        self._mode = mode
        self._max_parallelism = max_parallelism
        self._resolver = resolver
        self._cache: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._cache_size = cache_size
        if mode == "domain":
            from crawl.urls.scope import registered_domain  # scope imports config, as this does

            self._domain_of = registered_domain

    @property
    def mode(self) -> str:
        return self._mode

    def keys(self, hosts: Iterable[str], routes: KeyStore | None = None) -> dict[str, str]:
        """The key of each of ``hosts``; under ``ip``, keys not in ``routes`` are made (the new
        names resolved together) and added to it."""
        hosts = list(dict.fromkeys(hosts))
        if self._mode == "host":
            return {host: host for host in hosts}
        keys: dict[str, str] = {}
        missing = []
        for host in hosts:
            key = self._cached(host)
            if key is None and routes is not None and self._mode == "ip":
                key = routes.get(host)
                if key is not None:
                    self._remember(host, key)
            if key is None:
                missing.append(host)
            else:
                keys[host] = key
        if not missing:
            return keys
        if self._mode == "domain":
            groups: Mapping[str, str | None] = {host: self._domain_of(host) for host in missing}
        else:
            assert self._resolver is not None
            groups = self._resolver.resolve(missing)
        for host in missing:
            key = self.key_for(host, groups.get(host))
            keys[host] = key
            self._remember(host, key)
            if routes is not None and self._mode == "ip":
                routes[host] = key
        return keys

    def key_for(self, host: str, group: str | None) -> str:
        """The key of ``host`` in ``group`` (None or the host itself: a plain key)."""
        if not group or group == host:
            return host
        prefix = f"{host} {group} "
        return _salted_key(
            prefix, key_group_of(group, self._max_parallelism), self._max_parallelism
        )

    def _cached(self, host: str) -> str | None:
        key = self._cache.get(host)
        if key is not None:
            self._cache.move_to_end(host)
        return key

    def _remember(self, host: str, key: str) -> None:
        self._cache[host] = key
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
