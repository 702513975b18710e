"""The key groups crawl/urls/routing.py computes are the ones Flink's JVM gives the fetch stage's
keys (PyFlink's ``key_by`` wraps a key in a one-field Row): checked against a live JVM through
PyFlink's gateway, for random strings and for the salted keys of a domain."""

from __future__ import annotations

import random

import pytest

from crawl.urls.routing import FetchRouter, key_group_of

pytestmark = pytest.mark.integration


def test_key_groups_match_the_jvm() -> None:
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    assign = jvm.org.apache.flink.runtime.state.KeyGroupRangeAssignment.assignToKeyGroup

    def jvm_key_group(key: str, max_parallelism: int) -> int:
        row = jvm.org.apache.flink.types.Row(1)  # as KeyByKeySelector builds it
        row.setField(0, key)
        return assign(row, max_parallelism)

    rng = random.Random(11)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789.-:[] é\u4e2d\U0001d11e"
    keys = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(40))) for _ in range(300)]
    router = FetchRouter("domain", 256)
    hosts = [f"h{n}.site{n % 7}.example" for n in range(40)]
    salted = router.keys(hosts)
    keys += list(salted.values())
    for key in keys:
        for max_parallelism in (1, 3, 128, 256, 32768):
            assert key_group_of(key, max_parallelism) == jvm_key_group(key, max_parallelism), key
    for host, key in salted.items():
        domain = host.partition(".")[2]
        assert jvm_key_group(key, 256) == jvm_key_group(domain, 256)
