"""End to end: a crawl of the synthetic web's hostile and sitemap profiles, judged by the
server's own log.

The crawler reaches the web as a production crawler reaches the Internet: directly, with no
proxy, and with the private-address guard on. ``fetch.connect_to`` sends the web's host names
to the server on loopback (curl's ``--connect-to``); every other name goes to the system
resolver: ``localhost`` resolves to a loopback address the guard refuses, and
``x-private-dns.synth.test`` (which the web's proxy would "resolve" to 10.0.0.7) does not
resolve at all, as a ``.test`` name must not. IP-literal links to private addresses are refused
before any connection. The server serves Retry-After answers, trickling and broken bodies, a
1 GiB gzip bomb, a 20 MiB page, huge headers, a redirect loop and robots.txt that stalls,
redirects or runs past 500 KiB. The sitemap hosts name sitemaps in robots.txt (an index, a
gzipped file, a text sitemap, one on another host) listing pages no page links to, and
sitemaps and pages the crawl must not follow (other hosts', nested too deep, disallowed).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl.archive.crawl_log import parse_line
from crawl.stages import PROCESS, PROCESS_LINKS_REJECTED
from synthweb import (
    ExpectedCrawl,
    RequestRecord,
    SyntheticWebServer,
    WebConfig,
    audit_hostile,
    audit_log,
)
from synthweb.hostile import BROKEN_HOST, ROBOTS_STALL_HOST, TRICKLE_HOST
from synthweb.sitemaps import SITEMAP_HOSTS
from tests.integration.ahead import CrawlsAhead, crawl_ahead
from tests.integration.crawl_runner import run_crawl_measured

pytestmark = pytest.mark.integration

DELAY = 0.2
TOKEN = "pyflink-crawler"
#: A fetch's time limit: it cuts the trickle and the robots.txt that stalls. Each of the three
#: attempts at that robots.txt lasts this long and the next waits twice as long (the response
#: time factor), which makes it the longest chain of the crawl; every honest answer of this
#: web, the big page included, takes well under a second here.
TOTAL_TIMEOUT = 4.0
TRICKLE_SECONDS = 20.0
#: The crawl's processes together (client, JVM with its embedded Python): a crawl of the
#: plain web of this size peaks near 1 GiB; decoding the 1 GiB bomb in memory (or keeping
#: 20 MiB pages in more than a few copies) would pass this.
PEAK_RSS_BOUND = 1800 * 2**20


@dataclasses.dataclass
class HostileCrawl:
    """The crawl of the hostile web, and what the test judges of it."""

    process: Any
    summary: dict[str, Any]
    usage: Any
    records: list[RequestRecord]
    expected: ExpectedCrawl
    out: Path


@crawl_ahead("hostile web", long=True)
def _hostile_crawl(tmp_path: Path) -> HostileCrawl:
    config = WebConfig(seed=7, hosts=12, pages_per_host=8).with_hostile_profile(
        hostile_trickle_seconds=TRICKLE_SECONDS, hostile_robots_stall_seconds=60.0
    ).with_sitemap_profile()
    with SyntheticWebServer(config, tmp_path / "requests.jsonl") as server:
        web = server.web
        seeds = web.seeds()
        expected = web.expected_crawl(seeds, TOKEN)
        assert expected.hostile is not None
        # Every name of the web the crawl needs, hostile hosts and hosts off the web (502)
        # alike, goes to the server, and the sitemap host the crawl must leave alone (so that
        # a request there would show); the private-DNS name is deliberately not among them.
        names = sorted(
            set(expected.robots) | set(expected.hostile.robots) | set(SITEMAP_HOSTS))
        port = server.proxy_url.rsplit(":", 1)[1]
        connect_to = ",".join(f"{name}:80:127.0.0.1:{port}" for name in names)

        process, summary, usage = run_crawl_measured(
            tmp_path, seeds, None,
            "--delay", str(DELAY), "--idle-seconds", "6",
            "--set", f"fetch.connect_to={connect_to}",
            "--set", f"fetch.total_timeout_seconds={TOTAL_TIMEOUT}",
            timeout=600,
        )
        return HostileCrawl(process, summary, usage, server.request_log(), expected,
                            tmp_path / "out")


@pytest.mark.crawl_ahead("hostile web")
def test_the_crawl_survives_the_hostile_web_stays_polite_and_follows_sitemaps(
    crawls_ahead: CrawlsAhead,
) -> None:
    crawl: HostileCrawl = crawls_ahead.result("hostile web")
    process, summary, usage = crawl.process, crawl.summary, crawl.usage
    expected = crawl.expected
    assert process.returncode == 0, process.stderr[-3000:]
    assert summary["stop_reason"] == "idle"

    records = crawl.records
    # The server's log: robots.txt first on every host, nothing disallowed, no overlap, no
    # gap below the delay, Crawl-delay or 2 x the last response time; every page once, each
    # Retry-After URL twice, each faulty URL once.
    assert audit_log(records, expected, min_delay=DELAY, response_time_factor=2.0) == []
    # No request before the Retry-After a host was told; none to a private address; nothing
    # but robots.txt on the host whose robots.txt never answered.
    assert audit_hostile(records, expected) == []
    stalled = [r for r in records if r.host == ROBOTS_STALL_HOST]
    assert stalled
    assert all(r.path == "/robots.txt" for r in stalled)
    # Sitemaps: every page only they lead to was fetched (audit_log: every expected URL once),
    # and nothing they name but must not be followed (audit_log: nothing in never).
    sitemaps = expected.sitemaps
    assert sitemaps is not None
    requested = {r.url for r in records}
    assert sitemaps.orphans <= requested
    assert sitemaps.documents <= requested
    assert not sitemaps.refused & requested

    # The crawler's own account: each misbehaviour recorded with its reason.
    out = crawl.out
    lines = [
        parse_line(line)
        for path in (out / "logs").glob("crawl-*.log")
        for line in path.read_text().splitlines()
    ]
    by_url = {line["url"]: line for line in lines if not line["hops"].endswith("P")}
    reasons = Counter(line["reason"] for line in by_url.values())
    assert by_url[f"http://{BROKEN_HOST}/bomb"]["reason"] == "bad-response:compression-ratio"
    assert by_url[f"http://{BROKEN_HOST}/huge-header"]["reason"] == "bad-response:header-too-large"
    assert by_url[f"http://{BROKEN_HOST}/many-headers"]["reason"] == (
        "bad-response:too-many-headers"
    )
    assert by_url[f"http://{BROKEN_HOST}/bad-gzip"]["reason"] == "bad-response:invalid-gzip"
    big = by_url[f"http://{BROKEN_HOST}/big"]
    assert (big["status"].value, big["size"]) == ("FETCHED", 10 * 2**20)
    trickle = by_url[f"http://{TRICKLE_HOST}/trickle"]
    assert trickle["status"].value == "FETCHED"
    # Cut by the time limit, and said so in the archive. The limit runs from when the request
    # was begun, its duration from when its headers were sent: a few milliseconds apart here.
    assert trickle["duration_ms"] >= (TOTAL_TIMEOUT - 1) * 1000
    assert warc_truncations(out)[f"http://{TRICKLE_HOST}/trickle"] == "time"
    # A private address is refused at its robots.txt already, so its pages are recorded as
    # robots denials that name the refusal.
    for url in ("http://127.0.0.1/", "http://10.0.0.1/", "http://[::1]/",
                "http://169.254.169.254/latest/meta-data/", "http://localhost/"):
        assert by_url[url]["reason"].startswith("robots:unavailable:ssrf:"), by_url[url]
    private_dns = by_url["http://x-private-dns.synth.test/"]
    assert private_dns["reason"] == "robots:unavailable:dns:unresolved"
    assert by_url[f"http://{ROBOTS_STALL_HOST}/"]["reason"] == "robots:unavailable:timeout:total"
    assert reasons["robots:disallow"] >= 3  # /secret/1 (moved), /private/1 (big), a sitemap
    process_status = json.loads((out / "status" / f"{PROCESS.figures}-00000.json").read_text())
    counters = process_status["counters"]
    assert counters[PROCESS_LINKS_REJECTED.member("sitemap:cross-host")] == 2
    assert counters[PROCESS_LINKS_REJECTED.member("sitemap:too-deep")] == 1

    assert usage.samples > 10
    assert usage.peak_rss_bytes < PEAK_RSS_BOUND, f"peak RSS {usage.peak_rss_bytes / 2**20:.0f} MiB"


def warc_truncations(out: Path) -> dict[str, str]:
    """``WARC-Truncated`` of every response record of the crawl's archive, by target URL."""
    truncations = {}
    for path in (out / "warc").glob("*.warc.gz"):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                reason = record.rec_headers.get_header("WARC-Truncated")
                if record.rec_type == "response" and reason:
                    truncations[record.rec_headers.get_header("WARC-Target-URI")] = reason
    return truncations
