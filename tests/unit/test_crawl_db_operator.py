"""The crawl DB stage's handlers (operators/crawl_db.py) over the Flink fakes: loop records in,
a merge on the partition's timer, batches out per host; the journal and manifest in keyed
state that a restore goes on from; bad lines; the state layout a savepoint restores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from crawl.config import Config, load_config
from crawl.crawldb.partition import partition_of
from crawl.fetch_requests import decode_entries
from crawl.loop.records import encode_line, url_vnode
from operators.crawl_db import CrawlDbFunction, CrawlDbSettings
from tests.fakes import KeyedHarness, Snapshot

T0 = 1_700_000_000_000
HOST = "www.example.test"


def _config(**overrides: object) -> Config:
    return load_config(None, {"crawldb.fsync": False, "crawldb.partitions": 4,
                              "priority.enabled": False, **overrides})


def _harness(config: Config, out: Path, restore: Snapshot | None = None) -> KeyedHarness:
    return KeyedHarness(CrawlDbFunction(CrawlDbSettings.from_config(config), str(out)), now_ms=T0,
                        restore=restore).open()


@pytest.fixture
def config() -> Config:
    return _config()


@pytest.fixture
def harness(config: Config, tmp_path: Path) -> Iterator[KeyedHarness]:
    harness = _harness(config, tmp_path)
    yield harness
    harness.close()


def _found(config: Config, *paths: str) -> tuple[int, tuple[int, str]]:
    """(partition, the loop record found ``paths`` of HOST make for the crawl DB)."""
    urls = [f"http://{HOST}{path}" for path in paths]
    vnode = url_vnode(urls[0], config.crawl.vnodes)
    line = encode_line(vnode, [(url, "", "") for url in urls])
    return partition_of(vnode, config.crawldb.partitions), (vnode, line.split("\t", 1)[1])


def _released(emitted: list) -> dict[str, list[str]]:
    return {key: [entry.url for entry in decode_entries(batch)] for key, batch in emitted}


def test_found_urls_go_to_the_frontier_at_the_partitions_merge(
    harness: KeyedHarness, config: Config
) -> None:
    partition, record = _found(config, "/", "/a")
    assert harness.process(partition, record) == []  # buffered until the merge
    [merge] = harness.timers(partition)
    assert merge == T0 + int(config.crawldb.flush_seconds * 1000)
    assert harness.state("drum_journal", partition)["items"] == [record[1]]
    _, again = _found(config, "/a", "/b")
    harness.process(partition, again)
    assert harness.timers(partition) == [merge]  # one merge for the buffer
    released = _released(harness.advance_to(merge))
    assert released == {HOST: [f"http://{HOST}/", f"http://{HOST}/a", f"http://{HOST}/b"]}
    assert harness.keys("drum_journal") == set()  # merged: the journal starts again
    assert harness.state("drum_manifest", partition)["value"]
    assert harness.timers() == []


def test_a_url_seen_before_is_not_released_again(harness: KeyedHarness, config: Config) -> None:
    partition, record = _found(config, "/")
    harness.process(partition, record)
    harness.advance_by(10_000)
    harness.process(partition, record)
    assert harness.advance_by(10_000) == []


def test_a_restore_goes_on_from_the_journal_in_state(config: Config, tmp_path: Path) -> None:
    first = _harness(config, tmp_path)
    partition, record = _found(config, "/", "/a")
    first.process(partition, record)
    snapshot = first.snapshot()  # a checkpoint before the merge
    first.close()
    second = _harness(config, tmp_path, restore=snapshot)
    try:
        released = _released(second.advance_by(10_000))
        assert released == {HOST: [f"http://{HOST}/", f"http://{HOST}/a"]}
        second.process(partition, _found(config, "/a", "/c")[1])
        assert _released(second.advance_by(10_000)) == {HOST: [f"http://{HOST}/c"]}
    finally:
        second.close()


def test_a_line_that_is_no_loop_record_is_skipped(harness: KeyedHarness) -> None:
    assert harness.process(0, (0, "{not json")) == []
    assert harness.timers() == []
    assert harness.keys("drum_journal") == set()


def test_hosts_grouped_by_domain_go_to_their_group_key(tmp_path: Path) -> None:
    config = _config(**{"politeness.group_by": "domain"})
    harness = _harness(config, tmp_path)
    try:
        partition, record = _found(config, "/")
        harness.process(partition, record)
        [(key, _)] = harness.advance_by(10_000)
    finally:
        harness.close()
    assert key.split(" ")[:2] == [HOST, "example.test"]


def test_the_state_layout_is_the_one_savepoints_hold(harness: KeyedHarness) -> None:
    assert harness.descriptors == {
        "drum_manifest": ("value", "PickledByteArrayTypeInfo"),
        "drum_journal": ("list", "ListTypeInfo<String>"),
        "drum_history": ("value", "String"),
        "admission": ("map", "MapTypeInfo<String, Long>"),
        "fetch_keys": ("map", "MapTypeInfo<String, String>"),
    }
