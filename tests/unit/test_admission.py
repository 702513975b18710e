"""Admission with state: URL shapes and per-domain budgets that grow with linking domains."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from crawl.config import CrawlDbSection
from crawl.crawldb.partition import CrawlDbPartition
from crawl.urls.admission import Admission, CachedStore, MemoryStore, url_shape

T0 = 1_700_000_000_000


@pytest.mark.parametrize(
    ("url", "shape"),
    [
        ("http://a.org/", "/"),
        ("http://a.org/calendar/2026/12", "/calendar/#/#"),
        ("http://a.org/calendar/2027/01", "/calendar/#/#"),
        ("http://a.org/cal?date=2026-12-01&view=day", "/cal?date&view"),
        ("http://a.org/cal?view=week&date=2026-12-01", "/cal?date&view"),
        ("http://a.org/s?a=1&b=2&a=3", "/s?a&b"),
        ("http://a.org/s?p1=1&p22=2", "/s?p#"),
        ("http://a.org/p/v2/item-17.html", "/p/v#/item-#.html"),
    ],
)
def test_url_shape(url: str, shape: str) -> None:
    assert url_shape(url) == shape


def test_a_calendar_is_bounded_per_host_and_shape() -> None:
    admission = Admission(MemoryStore(), max_urls_per_shape=3)
    months = [f"http://a.org/calendar/{2026 + m // 12}/{m % 12 + 1}" for m in range(10)]
    verdicts = [admission.admit(url, "L") for url in months]
    assert verdicts == [None] * 3 + ["trap:shape-budget"] * 7
    # Another shape, or another host, has its own budget; seeds always pass.
    assert admission.admit("http://a.org/news/1", "L") is None
    assert admission.admit("http://b.org/calendar/2026/1", "L") is None
    assert admission.admit("http://a.org/calendar/2030/1", "") is None


def test_a_domain_budget_grows_with_linking_domains() -> None:
    store = MemoryStore()
    admission = Admission(store, domain_base_urls=2, domain_urls_per_linking_domain=3,
                          max_linking_domains=2)
    farm = [f"http://s{i % 4}.farm.test/p/{i}" for i in range(20)]
    # Links inside the farm (between its own hosts) do not raise its budget.
    admission.saw_links([(farm[1], "L", farm[0]), (farm[2], "L", farm[5])])
    assert admission.domain_budget("farm.test") == 2
    assert [admission.admit(url, "LL") for url in farm[:4]] == [None, None, "budget:domain",
                                                               "budget:domain"]
    # Two other domains link to it: 2 + 2 x 3 = 8; a third one is past max_linking_domains.
    admission.saw_links([(farm[0], "L", "http://a.org/x"), (farm[1], "L", "http://www.a.org/y"),
                         (farm[3], "L", "http://b.net/"), (farm[3], "L", "http://c.net/")])
    assert admission.domain_budget("farm.test") == 8
    admitted = [url for url in farm[4:] if admission.admit(url, "LL") is None]
    assert len(admitted) == 6
    assert admission.admit("http://farm.test/seed", "") is None  # seeds always pass...
    # ...and a seed's domain has no domain budget from then on.
    assert all(admission.admit(f"http://farm.test/x/{i}", "L") is None for i in range(50))
    strict = Admission(MemoryStore(), domain_base_urls=1, seed_domains_unbudgeted=False)
    assert strict.admit("http://a.org/", "") is None
    assert strict.admit("http://a.org/1", "L") == "budget:domain"


def test_off_by_default_and_counters_go_through_the_cache() -> None:
    assert not Admission(MemoryStore()).enabled
    backing = MemoryStore()
    cached = CachedStore(backing, capacity=2)
    for key in "abc":
        cached.put(key, 1)
    assert backing == {"a": 1, "b": 1, "c": 1}
    assert cached.get("a") == 1  # evicted from the cache, read from the store
    assert cached.get("zzz") is None


def test_the_crawl_db_records_turned_away_urls_as_rejected(tmp_path: Path) -> None:
    section = replace(CrawlDbSection(), fsync=False)
    store = MemoryStore()
    db = CrawlDbPartition(str(tmp_path / "p"), section,
                          admission=Admission(store, max_urls_per_shape=2))
    months = [(f"http://a.org/cal/{m}", "L", "http://a.org/") for m in range(5)]
    db.apply(months, [], T0)
    answer = db.flush(T0 + 1)
    sent = [item[0] for _, batch in answer.requests for item in json.loads(batch)]
    assert sent == ["http://a.org/cal/0", "http://a.org/cal/1"]
    assert answer.counts["urls.rejected.trap:shape-budget"] == 3
    state = db.take_state()
    assert state.merged
    (extra,) = state.journal_extra
    assert [event[1:4] for event in json.loads(extra)["done"]] == [["REJECTED", 0,
                                                                  "trap:shape-budget"]] * 3
    assert db.buffered == 3  # recorded by the next merge
    db.flush(T0 + 2)
    statuses = {}
    for _keys, values, _archived in db.drum.items():
        for value in values:
            statuses[int(value["status"])] = statuses.get(int(value["status"]), 0) + 1
    assert statuses == {1: 2, 7: 3}  # two UNFETCHED (sent), three REJECTED
    # Found again: seen, not asked about again.
    db.apply(months, [], T0 + 3)
    again = db.flush(T0 + 4)
    assert again.requests == []
    assert "urls.rejected.trap:shape-budget" not in again.counts
