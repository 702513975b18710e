"""Fetch keys (crawl/urls/routing.py): Flink's key groups reproduced, and every host of a politeness
group put in its group's key group."""

from __future__ import annotations

import random
import string

import pytest

from crawl.config import ConnectTo
from crawl.urls.routing import (
    AddressResolver,
    FetchRouter,
    group_of_key,
    host_of_key,
    java_string_hash,
    key_group_of,
)

JAVA_HASHES = [
    ("", 0),
    ("a", 97),
    ("abc", 96354),
    ("hello", 99162322),
    ("é", 233),
    ("\U0001d11e", 1772394),  # a surrogate pair: Java hashes UTF-16 code units
    ("www.example.org", 2416688777),  # wraps around 2**32
]


@pytest.mark.parametrize(("text", "expected"), JAVA_HASHES)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


#: Key groups the JVM gives these one-field Row keys (KeyGroupRangeAssignment.assignToKeyGroup);
#: tests/integration/test_routing_jvm.py compares many more with a live JVM.
JVM_KEY_GROUPS = [
    ("", 256, 161),
    ("example.org", 256, 38),
    ("www.example.org", 256, 176),
    ("192.0.2.7", 256, 210),
    ("[2001:db8::1]", 256, 243),
    ("xn--bcher-kva.example", 256, 230),
    ("h1.synth.test", 256, 224),
    ("", 32768, 19617),
    ("example.org", 32768, 32294),
    ("h1.synth.test", 32768, 26080),
    ("www.example.org example.org 000140", 256, 38),
    ("h1.synth.test synth.test 000145", 256, 46),
]


@pytest.mark.parametrize(("key", "max_parallelism", "expected"), JVM_KEY_GROUPS)
def test_key_groups_are_flinks(key: str, max_parallelism: int, expected: int) -> None:
    assert key_group_of(key, max_parallelism) == expected


def test_host_of_key_and_group_of_key() -> None:
    assert host_of_key("www.example.org") == "www.example.org"
    assert group_of_key("www.example.org") == "www.example.org"
    assert host_of_key("www.example.org example.org 000140") == "www.example.org"
    assert group_of_key("www.example.org example.org 000140") == "example.org"
    assert group_of_key("a.test 2001:db8::1 000007") == "2001:db8::1"


def test_host_mode_keys_are_the_hosts() -> None:
    router = FetchRouter("host", 256)
    assert router.keys(["a.test", "b.test", "a.test"]) == {"a.test": "a.test", "b.test": "b.test"}


@pytest.mark.parametrize("max_parallelism", [1, 2, 7, 128, 256, 4096, 32768])
def test_the_hosts_of_a_domain_share_its_key_group(max_parallelism: int) -> None:
    router = FetchRouter("domain", max_parallelism)
    hosts = ["example.org", "www.example.org", "shop.example.org", "a.b.c.example.org"]
    keys = router.keys(hosts)
    target = key_group_of("example.org", max_parallelism)
    assert keys["example.org"] == "example.org"  # the domain itself needs no salt
    for host in hosts:
        assert host_of_key(keys[host]) == host
        assert group_of_key(keys[host]) == "example.org"
        assert key_group_of(keys[host], max_parallelism) == target
    # A public suffix splits registered domains.
    other = router.keys(["a.github.io", "b.github.io"])
    assert group_of_key(other["a.github.io"]) == "a.github.io"
    assert group_of_key(other["b.github.io"]) == "b.github.io"


def test_keys_are_the_same_in_every_process() -> None:
    hosts = [f"h{n}.synth.test" for n in range(50)]
    first = FetchRouter("domain", 256).keys(hosts)
    again = FetchRouter("domain", 256, cache_size=3).keys(reversed(hosts))
    assert first == again


def test_random_hosts_land_in_their_groups_key_group() -> None:
    rng = random.Random(7)
    router = FetchRouter("domain", 256)
    for _ in range(200):
        label = "".join(rng.choice(string.ascii_lowercase + "-0123456789") for _ in range(12))
        domain = f"{label.strip('-') or 'x'}.com"
        host = f"www{rng.randrange(100)}.{domain}"
        key = router.keys([host])[host]
        assert key_group_of(key, 256) == key_group_of(domain, 256)


class _Lookups:
    """Answers DNS questions from a table and counts them."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def __call__(self, host: str) -> list[str]:
        self.asked.append(host)
        return self.answers.get(host, [])


def test_ip_mode_groups_hosts_by_address_and_keeps_a_hosts_key() -> None:
    lookups = _Lookups(
        {
            "a.test": ["2001:db8::5", "192.0.2.5"],  # IPv4 preferred
            "b.test": ["192.0.2.5"],
            "c.test": ["192.0.2.6"],
        }
    )
    router = FetchRouter("ip", 256, AddressResolver((), 2.0, lookup=lookups))
    routes: dict[str, str] = {}
    keys = router.keys(["a.test", "b.test", "c.test", "gone.test"], routes)
    assert {host: group_of_key(key) for host, key in keys.items()} == {
        "a.test": "192.0.2.5",
        "b.test": "192.0.2.5",
        "c.test": "192.0.2.6",
        "gone.test": "gone.test",  # does not resolve: a group of its own
    }
    assert keys["gone.test"] == "gone.test"
    assert key_group_of(keys["a.test"], 256) == key_group_of("192.0.2.5", 256)
    assert key_group_of(keys["b.test"], 256) == key_group_of("192.0.2.5", 256)
    assert routes == keys
    # The address changes, a new process starts: the remembered key stays.
    lookups.answers["a.test"] = ["192.0.2.99"]
    later = FetchRouter("ip", 256, AddressResolver((), 2.0, lookup=lookups))
    asked_before = len(lookups.asked)
    assert later.keys(["a.test"], routes) == {"a.test": keys["a.test"]}
    assert len(lookups.asked) == asked_before


def test_the_resolver_takes_connect_to_first_and_literals_as_they_are() -> None:
    lookups = _Lookups({"b.test": ["192.0.2.1"]})
    rules = (ConnectTo.parse("a.test::127.0.0.1:8080"), ConnectTo.parse("c.test:443:[::1]:"))
    resolver = AddressResolver(rules, 2.0, lookup=lookups)
    assert resolver.resolve(["a.test", "b.test", "c.test", "[2001:DB8::1]", "10.0.0.1"]) == {
        "a.test": "127.0.0.1",
        "b.test": "192.0.2.1",
        "c.test": "::1",
        "[2001:DB8::1]": "2001:db8::1",
        "10.0.0.1": "10.0.0.1",
    }
    assert lookups.asked == ["b.test"]
    every_host = AddressResolver((ConnectTo.parse("::127.0.0.1:"),), 2.0, lookup=lookups)
    assert every_host.resolve(["x.test", "y.test"]) == {
        "x.test": "127.0.0.1",
        "y.test": "127.0.0.1",
    }


def test_the_resolver_asks_the_real_dns_and_gives_up_in_time() -> None:
    resolver = AddressResolver((), 5.0)
    answers = resolver.resolve(["localhost", "nothing-here.invalid"])
    assert answers["localhost"] in ("127.0.0.1", "::1")
    assert answers["nothing-here.invalid"] is None

    def slow(host: str) -> list[str]:
        import time

        time.sleep(2.0)
        return ["192.0.2.1"]

    impatient = AddressResolver((), 0.2, lookup=slow)
    assert impatient.resolve(["slow.test"]) == {"slow.test": None}


def test_a_failing_lookup_is_no_address() -> None:
    def broken(host: str) -> list[str]:
        raise RuntimeError("resolver bug")

    resolver = AddressResolver((), 1.0, lookup=broken)
    assert resolver.resolve(["a.test"]) == {"a.test": None}
    assert AddressResolver((), 1.0, lookup=lambda host: ["not an address"]).resolve(["a"]) == {
        "a": None
    }


def test_unknown_modes_are_refused() -> None:
    with pytest.raises(ValueError, match="routing mode"):
        FetchRouter("subnet", 256)
    with pytest.raises(ValueError, match="resolver"):
        FetchRouter("ip", 256)
