"""Name resolution (crawl.http.dns) as plain logic: the DNS cache with a controllable clock, and
the resolver over fake lookups, with the address guard on its answers."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import pytest

from crawl.http.address_guard import AddressNotAllowed, address_reason
from crawl.http.dns import CachingResolver, DnsCache

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
