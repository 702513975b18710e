"""End to end: the URL policy against a synthetic web with spellings, traps and a link farm."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from synthweb import SyntheticWebServer, WebConfig, audit_log, audit_policy
from tests.integration.ahead import CrawlsAhead, crawl_ahead
from tests.integration.crawl_runner import SHORT_BACKOFF, run_crawl

pytestmark = pytest.mark.integration

DELAY = 0.2
TOKEN = "pyflink-crawler"
SHAPE_BUDGET = 12  # above any shape of a normal host (at most 8 /p/# pages with 6 per host)
MAX_QUERY_PARAMS = 4
MAX_SEGMENT_REPEATS = 3
DOMAIN_BASE = 10
PER_LINKING_DOMAIN = 10


@crawl_ahead("URL policy", long=True)
def _policy_crawl(tmp_path: Path) -> dict[str, Any]:
    """The crawl of 12 normal hosts with links in many spellings, a trap host and a 5-host
    link farm."""
    config = WebConfig(seed=7, hosts=12, pages_per_host=6).with_url_policy_profile(
        farm_hosts=5, farm_pages_per_host=100
    )
    with SyntheticWebServer(config, tmp_path / "requests.jsonl") as policy_web:
        seeds = policy_web.web.seeds()
        process, summary = run_crawl(
            tmp_path, seeds, policy_web.proxy_url,
            "--delay", str(DELAY), "--idle-seconds", "6", *SHORT_BACKOFF,
            "--set", f"admission.shape_base_urls={SHAPE_BUDGET}",
            # (no growth: the bound below is exact; growth is the unit tests' and the
            # benchmark's)
            "--set", "admission.shape_urls_per_good_page=0",
            "--set", f"admission.domain_base_urls={DOMAIN_BASE}",
            "--set", f"admission.domain_urls_per_linking_domain={PER_LINKING_DOMAIN}",
            "--set", f"scope.max_query_params={MAX_QUERY_PARAMS}",
            "--set", f"scope.max_segment_repeats={MAX_SEGMENT_REPEATS}",
            timeout=600,
        )
        return {"process": process, "summary": summary, "records": policy_web.request_log(),
                "expected": policy_web.web.expected_crawl(seeds, TOKEN),
                "out": tmp_path / "out"}


@pytest.mark.crawl_ahead("URL policy")
def test_each_page_once_in_one_spelling_traps_bounded_and_the_farm_held_to_its_budget(
    crawls_ahead: CrawlsAhead,
) -> None:
    crawl = crawls_ahead.result("URL policy")
    process, summary = crawl["process"], crawl["summary"]
    assert process.returncode == 0, process.stderr[-3000:]
    # Deferred URLs wait for budgets that will not grow: the crawl ends by itself all the same.
    assert summary["stop_reason"] == "idle"

    records, expected = crawl["records"], crawl["expected"]
    # Every reachable page of the normal web fetched exactly once, whatever the spellings of
    # the links to it; robots.txt first, nothing disallowed, politeness kept.
    assert audit_log(records, expected, min_delay=DELAY) == []

    policy = audit_policy(records)
    # Traps: each URL shape of the trap host gets at most SHAPE_BUDGET URLs; calendar pages
    # come in 3 shapes, search pages in one shape per parameter count up to the maximum, and
    # the growing path stops at the repeated-segment limit.
    trap_bound = SHAPE_BUDGET * (3 + MAX_QUERY_PARAMS) + MAX_SEGMENT_REPEATS + 2
    # The farm is linked from one other domain only: its budget is base + 1 x per-domain.
    farm_bound = DOMAIN_BASE + PER_LINKING_DOMAIN
    assert policy.problems(max_trap_requests=trap_bound, max_farm_requests=farm_bound) == []
    assert policy.trap_total > 0, "the traps were never entered: the test tests nothing"
    assert policy.farm_total > 0, "the farm was never entered: the test tests nothing"

    # The crawler's own account agrees that the budgets were what stopped them: it deferred
    # URLs of both kinds, kept in the crawl DB, and says so in its summary.
    crawldb = json.loads((crawl["out"] / "status" / "crawldb-00000.json").read_text())
    assert crawldb["gauges"].get("deferred.budget:shape", 0) > 0
    assert crawldb["gauges"].get("deferred.budget:domain", 0) > 0
    assert summary["urls_deferred"] == {
        reason: int(crawldb["gauges"][f"deferred.{reason}"])
        for reason in ("budget:domain", "budget:shape", "budget:importance")}
    assert summary["links_rejected"].get("trap:repeated-segment", 0) > 0
    # The trap's refusals are in the crawl log too, each with its reason (at most once per
    # link found: the cache of recent URLs drops repeats before the policy sees them).
    logged = summary["reasons"].get("trap:repeated-segment", 0)
    assert 0 < logged <= summary["links_rejected"]["trap:repeated-segment"]
    assert summary["pages_by_status"]["REJECTED"] >= logged
