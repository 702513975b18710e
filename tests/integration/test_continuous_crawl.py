"""End to end: a continuous crawl keeps a changing web fresh.

The web (:mod:`synthweb.changing`): 6 hosts of 12 pages whose plain pages never change
(``static``), change every 20 seconds (``slow``) or every 4 seconds (``fast``); most hosts send
ETag and Last-Modified, some Last-Modified only, some neither; 4 linked pages answer 404 or 410
from 20 seconds on; the robots.txt of two hosts names a live sitemap giving each page's
``lastmod``. The crawl runs with recrawl on and short bounds (first revisit after 10 s,
intervals from 2 s to 2 min) for 85 seconds and is stopped by its time limit.

From the server's request log: fast pages are requested more often than slow ones, and slow
more often than static ones; revisits of unchanged pages from hosts with validators are
conditional and mostly answered 304 (archived as server-not-modified revisits); unchanged
pages of hosts without validators are archived in full at each visit, their first capture
forgotten after the 5-second ``warc.revisit_window_seconds``; a gone page is asked again only
until it is retired (two failures in a row) and never after; a page that keeps failing with
500 is retried with a back-off that doubles; the crawl stays polite (robots.txt first, spacing
per host); the pages of the hosts with a live sitemap, whose own schedule (an override of 200
seconds) would fetch them once, are fetched again after they change, as the sitemap announces
it, and those that never change are not.
"""

from __future__ import annotations

import collections
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl.archive.crawl_log import parse_line
from crawl.report import gather_report
from synthweb import SyntheticWebServer, WebConfig
from synthweb.audit import is_page_path
from tests.integration.ahead import CrawlsAhead, crawl_ahead
from tests.integration.crawl_runner import run_crawl
from tests.integration.report_check import check_report_draws

pytestmark = pytest.mark.integration

DELAY = 0.2
TOKEN = "pyflink-crawler"
CRAWL_SECONDS = 85
WEB = WebConfig(seed=11, hosts=6, pages_per_host=12, showcase=False)
RECRAWL = {
    "recrawl.enabled": "true", "recrawl.initial_seconds": "10", "recrawl.min_seconds": "2",
    "recrawl.max_seconds": "120", "recrawl.retry_seconds": "2", "recrawl.gone_failures": "2",
    "recrawl.estimate_after": "3",
    # Shorter than any revisit interval: a payload seen again is archived in full again.
    "warc.revisit_window_seconds": "5",
}


def _settings(settings: dict[str, str]) -> list[str]:
    return [option for key, value in settings.items() for option in ("--set", f"{key}={value}")]


@crawl_ahead("continuous", long=True)
def _continuous_crawl(tmp_path: Path) -> dict[str, Any]:
    """The crawl of the changing web, and what the test judges of it."""
    config = WEB.with_changing_profile(
        change_fast_period=4.0, change_slow_period=20.0, gone_pages=4, gone_after=20.0,
        change_no_etag_host_share=0.15, change_no_validator_host_share=0.2,
        change_long_etag_host_share=0.2, change_sitemap_host_share=0.2,
    )
    with SyntheticWebServer(config, tmp_path / "requests.jsonl") as server:
        web = server.web
        changing = web.changing
        assert changing is not None
        seeds = web.seeds(2)
        expected = web.expected_crawl(seeds, TOKEN)
        # Hosts with a live sitemap: their pages' own schedule fetches them once in the crawl;
        # the sitemap itself keeps the common bounds.
        announcing = [host for host in web.host_names() if changing.live_sitemap(host)]
        assert len(announcing) == 2
        overrides = ["re:/changes\\.xml$ min=2 max=120 initial=10"] + [
            f"{host} min=200 max=200 initial=200" for host in announcing]
        process, summary = run_crawl(
            tmp_path, seeds, server.proxy_url,
            "--delay", str(DELAY), "--max-seconds", str(CRAWL_SECONDS),
            *_settings({**RECRAWL, "recrawl.overrides": ",".join(overrides)}),
            timeout=CRAWL_SECONDS + 240,
        )
        return {"changing": changing, "expected": expected, "announcing": announcing,
                "process": process, "summary": summary, "records": server.request_log(),
                "out": tmp_path / "out"}


@pytest.mark.crawl_ahead("continuous")
def test_a_continuous_crawl_revisits_by_change_rate_with_conditional_gets(
    crawls_ahead: CrawlsAhead,
) -> None:
    crawl = crawls_ahead.result("continuous")
    changing, expected, announcing = crawl["changing"], crawl["expected"], crawl["announcing"]
    process, summary, records = crawl["process"], crawl["summary"], crawl["records"]
    assert process.returncode == 0, process.stderr[-3000:]
    assert summary["stop_reason"] == "time limit reached", summary
    # No task failed, the stop with a savepoint included (timers still fire while it drains).
    assert "task failure" not in process.stdout, process.stdout[-3000:]
    # The job keeps nothing of the loop files it has read and deleted: its savepoint names at
    # most the files the loop sink has yet to commit (Flink's file source listed every file it
    # had ever read: about one a second here), and read files are deleted (those of the last
    # seconds wait for the next run).
    out = crawl["out"]
    metadata = next((out / "savepoints").glob("savepoint-*/_metadata")).read_bytes()
    assert len(set(re.findall(rb"/loop/loop-[0-9a-f-]+", metadata))) <= 4
    assert len([p for p in (out / "loop").iterdir() if not p.name.startswith(".")]) <= 10

    requests: dict[str, list] = collections.defaultdict(list)
    for record in sorted(records, key=lambda r: r.start):
        if is_page_path(record.path):
            requests[record.url].append(record)
    # The whole reachable web was fetched at least once.
    missed = [url for url in expected.fetch if url not in requests]
    assert missed == []

    gone = {page.url: page for page in changing.gone_pages()}
    assert len(gone) == 4
    by_class: dict[str, list[int]] = collections.defaultdict(list)
    announced: dict[str, list[int]] = collections.defaultdict(list)
    for url in expected.fetch:
        change_class = changing.change_class(url)
        if change_class is not None and url not in gone:
            scheduled = url.split("/")[2] not in announcing
            (by_class if scheduled else announced)[change_class].append(len(requests[url]))
    fast = statistics.median(by_class["fast"])
    slow = statistics.median(by_class["slow"])
    static = statistics.median(by_class["static"])
    report = {name: sorted(counts) for name, counts in by_class.items()}
    print("requests per page by change class:", report)
    # Fast pages (a new version every 4 s) are revisited far more often than slow ones (every
    # 20 s), and these more often than static ones (whose intervals only grow). Measured:
    # medians of about 20, 7 and 4.5 requests.
    assert fast >= 2 * slow, report
    assert slow > static, report
    assert static >= 3, report
    # On the hosts with a live sitemap, fetched again only when the sitemap says a page
    # changed since its last fetch: the fast and slow pages are, the static ones never.
    announced_report = {name: sorted(counts) for name, counts in announced.items()}
    print("requests per page of hosts with a live sitemap:", announced_report)
    for host in announcing:
        assert len(requests[changing.live_sitemap(host)]) >= 5, host
    assert announced["static"], announced_report
    assert all(count == 1 for count in announced["static"]), announced_report
    assert statistics.median(announced["fast"]) >= 4, announced_report
    assert statistics.median(announced["slow"]) >= 2, announced_report

    # A host that sends only ETags of more than 32 characters (a SHA-256, S3's and Netlify's
    # forms) is asked with If-None-Match naming them: the record keeps them packed.
    long_revisits = [
        record
        for url, made in requests.items()
        if (plan := changing.plan(url)) is not None and plan.long_etag and url not in gone
        for record in made[1:]
    ]
    assert long_revisits
    assert all(record.inm and len(record.inm) > 34 and record.ims is None
               for record in long_revisits), long_revisits
    # Revisits of static pages whose hosts send validators are conditional GETs, mostly 304.
    revisits = [
        record
        for url, made in requests.items()
        if changing.change_class(url) == "static" and url not in gone
        and ((plan := changing.plan(url)) is not None and (plan.etag or plan.last_modified))
        for record in made[1:]
    ]
    assert revisits
    assert all(record.conditional for record in revisits)
    not_modified = sum(record.status == 304 for record in revisits)
    assert not_modified >= 0.9 * len(revisits), (not_modified, len(revisits))
    # Hosts without validators are asked plainly (nothing to send).
    plain = [
        record
        for url, made in requests.items()
        if (plan := changing.plan(url)) is not None and not (plan.etag or plan.last_modified)
        for record in made
    ]
    assert not any(record.conditional for record in plain)
    # A fast page's revisits find a new version most of the time (the interval follows the
    # rate), so they are answered 200.
    fast_revisits = [
        record
        for url, made in requests.items()
        if changing.change_class(url) == "fast" and url not in gone
        for record in made[1:]
    ]
    assert sum(record.status == 200 for record in fast_revisits) >= 0.4 * len(fast_revisits)

    # Gone pages: asked until two failures in a row, then never again (on the hosts with a live
    # sitemap, when it announces a change); so is every URL that answers 404 or 410 from the
    # start.
    for url, page in gone.items():
        made = requests[url]
        if (url.split("/")[2] in announcing and changing.change_class(url) == "static"
                and made[0].status == 200):
            # Fetched before it went away: its schedule (200 s) never comes due in the crawl and
            # the sitemap never announces it (its lastmod stays in 2020). Pages go away 20 s
            # after the web starts; on a loaded machine the crawl may reach one only after that,
            # and then it is a gone page like any other, below.
            assert len(made) == 1, made
            continue
        failures = [record for record in made if record.status in (404, 410)]
        assert [record.status for record in failures] == [page.status, page.status], (
            url, [(record.start, record.status) for record in made],
        )
        assert made[-1] is failures[-1]
    always_gone = [made for made in requests.values() if made[0].status in (404, 410)]
    assert always_gone
    assert all(len(made) == 2 for made in always_gone)
    # A URL that keeps failing with 500 is retried with a back-off that doubles.
    failing = [made for made in requests.values() if all(r.status == 500 for r in made)]
    assert failing
    for made in failing:
        gaps = [b.start - a.start for a, b in zip(made, made[1:], strict=False)]
        assert len(gaps) >= 3, gaps
        assert gaps[-1] >= 4 * gaps[0], gaps

    # Politeness holds through revisits: robots.txt first on each host and the delay kept.
    by_host: dict[str, list] = collections.defaultdict(list)
    for record in sorted(records, key=lambda r: r.start):
        by_host[record.host].append(record)
    for host, made in by_host.items():
        assert made[0].path == "/robots.txt", host
        gaps = [b.start - a.end for a, b in zip(made[1:], made[2:], strict=False)]
        assert min(gaps) >= DELAY - 0.05, (host, min(gaps))

    # The crawl's own figures and log agree with the server's.
    assert summary["refetches"] >= len(revisits) + len(fast_revisits), summary
    assert summary["not_modified"] >= not_modified, summary
    # Releases came from the crawl DB's due windows, not from passes over its DRUMs: only
    # the passes that build them (a partition's first release, a major merge's) read them.
    assert summary["releases_from_window"] >= 0.8 * summary["releases"] > 0, summary
    log_lines = [
        parse_line(line)
        for path in (out / "logs").glob("crawl-*.log")
        for line in path.read_text().splitlines()
    ]
    assert sum(line["http_status"] == 304 for line in log_lines) >= not_modified

    # In the archive: a 304 is a server-not-modified revisit; an unchanged page of a host
    # without validators, fetched again after the revisit window, a full response each time
    # (its first capture forgotten: Flink's state TTL on the process stage's first-capture).
    archived: dict[str, list[str]] = collections.defaultdict(list)
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type in ("response", "revisit"):
                    profile = record.rec_headers.get_header("WARC-Profile") or ""
                    archived[record.rec_headers.get_header("WARC-Target-URI")].append(
                        record.rec_type + (" " + profile.rsplit("/", 1)[-1] if profile else "")
                    )
    assert sum(kinds.count("revisit server-not-modified") for kinds in archived.values()) >= (
        not_modified
    )
    unvalidated_static = [
        url for url, made in requests.items()
        if changing.change_class(url) == "static" and url not in gone
        and (plan := changing.plan(url)) is not None and not (plan.etag or plan.last_modified)
        and len(made) >= 2 and all(record.status == 200 for record in made)
    ]
    assert unvalidated_static
    for url in unvalidated_static:
        assert archived[url] == ["response"] * len(requests[url]), (url, archived[url])

    # The report written at the crawl's end counts the log's refetches and 304s, and its
    # charts, the continuous crawl's too, draw in a browser.
    report = gather_report(out)
    assert report.log.novelty["304 not modified"] == sum(
        line["http_status"] == 304 for line in log_lines)
    fast_refetched = [url for url, made in requests.items()
                      if changing.change_class(url) == "fast" and len(made) >= 2]
    assert report.log.urls_refetched >= len(fast_refetched) > 0
    check_report_draws(out, {"timeline", "novelty", "freshness"})
