"""End to end: with a page budget of half the web, priority fetches the better-linked pages first.

The web: 20 hosts of about 80 pages, few links across hosts, and 40 popular pages, each linked
from pages of many other hosts (the j-th of n from about (n - j) / n of them). Crawled from two
seeds with a budget of half its pages, in discovery order (priority off) the crawl reaches
about 35 of the 40 popular pages; with priority (the cash pages pass along their links) it
fetches the well-linked ones (all but at most one), early, and the pages it fetches have four
fifths of the in-links the best possible half of the web has.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from crawl.stages import CRAWL_DB, CRAWLDB_RELEASES, CRAWLDB_URLS_RELEASED
from synthweb import (
    ExpectedCrawl,
    RequestRecord,
    SyntheticWeb,
    SyntheticWebServer,
    WebConfig,
    audit_log,
)
from tests.integration.ahead import CrawlsAhead, crawl_ahead
from tests.integration.crawl_runner import run_crawl

pytestmark = pytest.mark.integration

DELAY = 0.2
TOKEN = "pyflink-crawler"
#: In-links that make a popular page well linked here (the 40th best-linked page has 3).
WELL_LINKED = 6
WEB = WebConfig(seed=5, hosts=20, pages_per_host=80, popular_pages=40,
                cross_host_link_share=0.05, showcase=False)


@dataclasses.dataclass
class PriorityCrawl:
    """The budgeted crawl, and what the test judges of it."""

    process: Any
    summary: dict[str, Any]
    records: list[RequestRecord]
    web: SyntheticWeb
    expected: ExpectedCrawl
    budget: int
    out: Path


@crawl_ahead("half the web as budget", long=True)
def _priority_crawl(tmp_path: Path) -> PriorityCrawl:
    with SyntheticWebServer(WEB, tmp_path / "requests.jsonl") as server:
        web = server.web
        seeds = web.seeds(2)
        expected = web.expected_crawl(seeds, TOKEN)
        budget = len(expected.fetch) // 2
        process, summary = run_crawl(
            tmp_path, seeds, server.proxy_url,
            "--delay", str(DELAY), "--max-pages", str(budget), "--idle-seconds", "6",
            "--set", "priority.host_window=2",
            timeout=600,
        )
        return PriorityCrawl(process, summary, server.request_log(), web, expected, budget,
                             tmp_path / "out")


@pytest.mark.crawl_ahead("half the web as budget")
def test_with_half_the_web_as_budget_the_better_linked_pages_are_fetched_first(
    crawls_ahead: CrawlsAhead,
) -> None:
    crawl: PriorityCrawl = crawls_ahead.result("half the web as budget")
    process, summary, records = crawl.process, crawl.summary, crawl.records
    web, expected, budget = crawl.web, crawl.expected, crawl.budget
    assert process.returncode == 0, process.stderr[-3000:]
    assert summary["stop_reason"] == "page budget reached"
    # Polite and each page once (robots.txt first, nothing disallowed, no overlap, spacing).
    assert audit_log(records, expected, min_delay=DELAY, complete=False) == []

    fetched: list[str] = []
    for record in sorted(records, key=lambda r: r.start):
        url = f"http://{record.host}{record.path}"
        if record.path != "/robots.txt" and url in expected.fetch and url not in fetched:
            fetched.append(url)
    assert len(fetched) == budget
    taken = set(fetched)

    popular = [url for url in web.popular_pages() if url in expected.fetch]
    assert len(popular) == 40
    # The popular pages linked from at least WELL_LINKED pages (about 30 of the 40; a page of
    # this web has 1 in-link at the median) are fetched, all but at most one, and every one
    # with twice as many in-links. The others are barely more linked than any page: the runs
    # here miss 2 to 4 of them, more of them under load. A host is served two URLs a loop
    # round (priority.host_window), each its best known then: a page whose in-links are fetched
    # late, on a host with four popular pages, may come after the budget (one page of 8
    # in-links in one run on a loaded machine, fetched 26th of its host's 41 requests in another).
    well_linked = [url for url in popular if web.in_links(url) >= WELL_LINKED]
    assert len(well_linked) >= 25
    missed = [(url, web.in_links(url)) for url in well_linked if url not in taken]
    assert len(missed) <= 1, missed
    assert all(in_links < 2 * WELL_LINKED for _, in_links in missed), missed

    in_links = {url: web.in_links(url) for url in expected.fetch}
    best = statistics.mean(sorted(in_links.values(), reverse=True)[:budget])
    mean = statistics.mean(in_links[url] for url in fetched)
    assert mean >= 0.7 * best, (mean, best)  # (0.80 in the runs here)

    # Better-linked first: the first quarter of the fetches has far more in-links a page than
    # the last quarter (4.7 times in the runs here).
    quarter = budget // 4
    first = statistics.mean(in_links[url] for url in fetched[:quarter])
    last = statistics.mean(in_links[url] for url in fetched[-quarter:])
    assert first >= 3 * last, (first, last)

    crawldb = json.loads(
        (crawl.out / "status" / f"{CRAWL_DB.figures}-00000.json").read_text())
    assert crawldb["counters"][CRAWLDB_RELEASES.name] > 0
    assert crawldb["counters"][CRAWLDB_URLS_RELEASED.name] >= budget
