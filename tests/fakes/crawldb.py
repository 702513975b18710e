"""Helpers of the crawl DB's tests: a small section, the keyed state the crawl DB operator keeps
(``operators/crawl_db.py``) as plain attributes, found-URL triples and a URL's record."""

from __future__ import annotations

import json

from crawl.config import CrawlDbSection
from crawl.crawldb.partition import CrawlDbPartition
from crawl.loop.records import encode_line
from drum import record_dict, url_key

__all__ = ["SECTION", "T0", "KeyedState", "found", "record_of"]

T0 = 1_700_000_000_000
SECTION = CrawlDbSection(
    buffer_ops=1000, block_records=4, max_deltas=3, max_archives=2, file_grace_seconds=10.0,
    fsync=False,
)


class KeyedState:
    """The partition's keyed state as the operator keeps it (operators/crawl_db.py)."""

    def __init__(self) -> None:
        self.manifest: bytes | None = None
        self.journal: list[str] = []
        self.history: str | None = None

    def apply(self, partition: CrawlDbPartition, found_urls: list, done: list, now: int,
              cash: list[float] | None = None):
        """What the operator does with one loop record: apply it, then store the state."""
        answer = partition.apply(found_urls, done, now, cash=cash)
        line = encode_line(0, found_urls, done, cash=cash)
        self.store(partition, json.loads(line.split("\t", 1)[1]))
        return answer

    def flush(self, partition: CrawlDbPartition, now: int):
        answer = partition.flush(now)
        self.store(partition, None)
        return answer

    def store(self, partition: CrawlDbPartition, payload: dict | None) -> None:
        state = partition.take_state()
        if state.manifest is not None:
            self.manifest = state.manifest
        if state.merged:
            self.journal = []
        self.journal += state.journal_additions(
            json.dumps(payload) if payload is not None else None
        )
        if state.history is not None:
            self.history = state.history

    def snapshot(self) -> KeyedState:
        copy = KeyedState()
        copy.manifest, copy.journal, copy.history = self.manifest, list(self.journal), self.history
        return copy

    def open(self, directory: str, section: CrawlDbSection = SECTION) -> CrawlDbPartition:
        return CrawlDbPartition(
            directory, section, manifest=self.manifest, journal=self.journal, history=self.history
        )


def found(*urls: str, hops: str = "L", via: str = "http://a.example/") -> list:
    return [(url, hops, via) for url in urls]


def record_of(partition: CrawlDbPartition, url: str) -> dict:
    key = url_key(url)
    for keys, values, _ in partition.drum.items():
        for k, value in zip(keys.tolist(), values, strict=True):
            if k == key:
                return record_dict(value)
    raise AssertionError(f"{url} not in the crawl DB")
