"""End to end: link farms on many domains, held to what their pages show, and a crawl that ends
by itself with what its budgets deferred.

The web is the synthetic web's multi-domain profile without its endless spaces: real sites on
their own registered domains (a few with several hosts), soft-404 hosts, and link-farm hosts
on domains of their own, each linked once from a real site, whose every path is a thin page of
links into the farm (an endless supply of them). The crawl runs with the default budgets and
no page budget: it must fetch every reachable real page, keep each farm domain to
``admission.domain_trial_urls`` plus ``domain_urls_per_good_page`` for each of its pages that
was not a copy, and then stop by itself, saying what it deferred.
"""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from crawl.config import AdmissionSection
from crawl.urls.scope import registered_domain
from synthweb import SyntheticWebServer, UrlKind, WebConfig, audit_log
from tests.integration.ahead import CrawlsAhead, crawl_ahead
from tests.integration.crawl_runner import SHORT_BACKOFF, near_duplicate_notes, run_crawl

pytestmark = pytest.mark.integration

DELAY = 0.05
TOKEN = "pyflink-crawler"
WEB = WebConfig(seed=2, hosts=12).with_multi_domain_profile(
    multi_domain_endless_spaces=False, multi_domain_farm_hosts=6, multi_domain_farm_clusters=2,
    multi_domain_soft_404_hosts=2,
)


@dataclasses.dataclass
class FarmCrawl:
    process: Any
    summary: dict
    records: list
    expected: Any
    out: Path


@crawl_ahead("link farms")
def _farm_crawl(tmp_path: Path) -> FarmCrawl:
    with SyntheticWebServer(WEB, tmp_path / "requests.jsonl") as server:
        seeds = server.web.seeds()
        process, summary = run_crawl(
            tmp_path, seeds, server.proxy_url, "--delay", str(DELAY), "--idle-seconds", "6",
            *SHORT_BACKOFF,
        )
        return FarmCrawl(process, summary, server.request_log(),
                         server.web.expected_crawl(seeds, TOKEN), tmp_path / "out")


@pytest.mark.crawl_ahead("link farms")
def test_link_farms_stay_at_their_trial_and_the_crawl_ends_by_itself(
    crawls_ahead: CrawlsAhead,
) -> None:
    crawl: FarmCrawl = crawls_ahead.result("link farms")
    process, summary = crawl.process, crawl.summary
    assert process.returncode == 0, process.stderr[-3000:]
    assert summary["stop_reason"] == "idle"
    # Every reachable real page fetched, politely, robots.txt obeyed: the budgets cost the
    # real sites nothing.
    assert audit_log(crawl.records, crawl.expected, min_delay=DELAY) == []

    truth = crawl.expected.domains
    assert truth is not None
    copies = {url for url, _, _ in near_duplicate_notes(crawl.out)}
    fetched: dict[str, list[str]] = collections.defaultdict(list)
    for record in crawl.records:
        url = f"http://{record.host}{record.path}"
        if record.path != "/robots.txt" and truth.kind_of(url) is UrlKind.FARM:
            fetched[registered_domain(record.host)].append(url)
    assert len(fetched) >= 3, fetched.keys()  # the farms were found, on several domains
    print("farm fetches (not copies) by domain:", {
        domain: f"{len(urls)} ({len([u for u in urls if u not in copies])})"
        for domain, urls in sorted(fetched.items())})
    admission = AdmissionSection()
    for domain, urls in fetched.items():
        # Each farm domain got its trial and two more URLs per page that was not a copy; a
        # good share of the farm's thin pages were copies of one another (their words differ
        # only by the keywords of their titles: 36 % to 45 % were not copies in one run).
        good = len([url for url in urls if url not in copies])
        assert len(urls) <= (admission.domain_trial_urls
                             + admission.domain_urls_per_good_page * good), (domain, urls)
        assert good <= len(urls) * 2 / 3, (domain, urls)
    # The farms' endless URLs are what the crawl left, deferred by their domains' budgets,
    # and it says so.
    assert summary["urls_deferred"]["budget:domain"] > 0
    assert "URLs deferred" in process.stdout
