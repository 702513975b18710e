"""End to end: link farms on many domains, endless spaces and soft 404s on real sites, held to
what their pages show, and a crawl that ends by itself with what its budgets deferred.

The web is the synthetic web's multi-domain profile: real sites on their own registered
domains (a few with several hosts), soft-404 hosts, link-farm hosts on domains of their own,
each linked once from a real site, whose every path is a page of keywords and links into the
farm (an endless supply of them), and on real sites a calendar, session ids in URLs, a
repeating relative path and a listing's filter combinations. The crawl runs with the default
budgets and no page budget: it must fetch every reachable real page, keep each farm domain to
its first pages (``admission.trial_pages``: its pages repeat a few words, so none proves
good), keep each endless space to what its shape's budget allows, tell the soft 404s from
pages, and then stop by itself, saying what it deferred.
"""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from crawl.archive.crawl_log import parse_line
from crawl.config import AdmissionSection
from crawl.urls.scope import registered_domain
from crawl.urls.shapes import url_shape
from synthweb import SyntheticWebServer, UrlKind, WebConfig, audit_log
from synthweb.audit import NOT_FOUND_PROBE
from synthweb.endless import FACETS
from tests.integration.ahead import CrawlsAhead, crawl_ahead
from tests.integration.crawl_runner import SHORT_BACKOFF, near_duplicate_notes, run_crawl

pytestmark = pytest.mark.integration

DELAY = 0.05
TOKEN = "pyflink-crawler"
#: The longest a page's near-duplicate mark takes to reach the crawl DB after its fetch: two
#: loop rounds (a checkpoint interval each, 1 s here), and as much again for a loaded machine.
MARK_SECONDS = 4.0
WEB = WebConfig(seed=2, hosts=12).with_multi_domain_profile(
    multi_domain_farm_hosts=6, multi_domain_farm_clusters=2, multi_domain_soft_404_hosts=2,
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
def test_farms_and_endless_spaces_are_held_and_the_crawl_ends_by_itself(
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
    fetched: dict[UrlKind, list[str]] = collections.defaultdict(list)
    probes: dict[UrlKind, list[str]] = collections.defaultdict(list)
    probed_at: dict[str, float] = {}  # when each host's not-found probe was answered
    for record in crawl.records:
        url = f"http://{record.host}{record.path}"
        if NOT_FOUND_PROBE.fullmatch(record.path):
            probes[truth.kind_of(url)].append(url)
            probed_at[record.host] = record.end
        elif record.path != "/robots.txt":
            fetched[truth.kind_of(url)].append(url)
    print("fetches by kind:", {kind.value: len(urls) for kind, urls in fetched.items()})
    admission = AdmissionSection()

    # Each farm domain stays at its first pages: they repeat a few keywords, none proves good.
    farms: dict[str, list[str]] = collections.defaultdict(list)
    for url in fetched[UrlKind.FARM]:
        farms[registered_domain(url.split("/")[2])].append(url)
    assert len(farms) >= 3, farms.keys()  # the farms were found, on several domains
    for domain, urls in farms.items():
        assert len(urls) <= admission.trial_pages, (domain, urls)

    # The calendar: its month and day views are one shape, whose pages recombine the days,
    # months and years it has shown: the base, plus at most one URL per value shown.
    calendar = fetched[UrlKind.CALENDAR]
    assert calendar, "the calendar was entered"
    years = {url.split("/")[4] for url in calendar}
    assert len(calendar) <= admission.shape_base_urls + 31 + 12 + len(years), calendar
    # The listing's filters in every combination: at most one URL per filter value shown.
    assert 0 < len(fetched[UrlKind.PARAMS]) <= admission.shape_base_urls + sum(
        len(values) for _, values in FACETS), fetched[UrlKind.PARAMS]
    # The repeating relative path is refused where it starts to repeat, and logged.
    assert fetched[UrlKind.REPEAT_PATH] == []
    refused = [line for log in (crawl.out / "logs").glob("crawl-*.log")
               for line in log.read_text().splitlines() if "trap:repeated-run" in line]
    assert refused, "the repeating path was refused in the crawl log"
    # Session ids: copies of the site's pages (near-duplicates), each shape held to its base
    # and two more for each of its pages that was no copy. A copy counts as a good page from
    # its outcome until its near-duplicate mark reaches the crawl DB, a loop round or two
    # later: the release that let the shape's last URL go may have counted two more for each
    # copy fetched in the moments before.
    copies = {url for url, _, _ in near_duplicate_notes(crawl.out)}
    sessions: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
    for record in crawl.records:
        url = f"http://{record.host}{record.path}"
        if truth.kind_of(url) is UrlKind.SESSION:
            sessions[url_shape(url)].append((record.start, url))
    assert sessions, "the session-id space was entered"
    for shape, fetches in sessions.items():
        urls = [url for _, url in fetches]
        good = len([url for url in urls if url not in copies])
        last = max(start for start, _ in fetches)
        in_flight = len([url for start, url in fetches
                         if url in copies and last - MARK_SECONDS <= start < last])
        assert len(urls) <= admission.shape_base_urls + 2 * (good + in_flight), (
            shape, good, in_flight, urls)

    # Soft 404s: each soft-404 host was asked once for a path it cannot have (the audit
    # allows one such request per host), after its first page, and every page it answered
    # for a dead link after that is logged as what it is; no real page is.
    logged = {entry["url"]: entry for log in (crawl.out / "logs").glob("crawl-*.log")
              for entry in map(parse_line, log.read_text().splitlines())}
    assert len(probes[UrlKind.SOFT_404]) == WEB.multi_domain_soft_404_hosts, probes
    assert {logged[url]["hops"] for urls in probes.values() for url in urls} == {"N"}
    dead = [record.url for record in crawl.records
            if truth.kind_of(record.url) is UrlKind.SOFT_404
            and not NOT_FOUND_PROBE.fullmatch(record.path)
            and record.start > probed_at[record.host]]
    assert dead, "dead links into the soft-404 hosts were followed"
    assert {url: logged[url]["reason"] for url in dead} == dict.fromkeys(dead, "soft-404")
    assert [url for url, entry in logged.items() if entry["reason"] == "soft-404"
            and truth.kind_of(url) is not UrlKind.SOFT_404] == []

    # What the crawl left, deferred by the budgets, it says.
    assert summary["urls_deferred"]["budget:domain"] > 0
    assert summary["urls_deferred"]["budget:shape"] > 0
    assert "URLs deferred" in process.stdout
