"""End to end: near-duplicate pages found by the crawl, against the synthetic web's ground truth.

The web's near-duplicate profile serves articles on several hosts, each copy in its host's
boilerplate with its own date, counters, advertisement and markup (Manku et al.'s
near-duplicates: the same content, differing in a small portion), copies with one to four words
of the article changed besides (measured, a harder case than the 64-bit simhash at distance 3
is meant for), and decoys: pages in the same boilerplate with an article of their own. The
crawl's verdicts are read from what it leaves: the WARC metadata records of the near-duplicate
stage and the crawl DB's counters.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl.config import NearDupSection
from crawl.content.neardup import content_features
from crawl.content.text import main_text
from crawl.progress import CrawlFigures, read_statuses
from crawl.stages import (
    CRAWLDB_URLS_NEAR_DUPLICATE,
    NEAR_DUPLICATES,
    NEARDUP_INDEX,
    NEARDUP_INDEX_PROBES,
    NEARDUP_PAGES_IN,
    NEARDUP_PAGES_NEAR_DUPLICATE,
)
from synthweb import SyntheticWeb, SyntheticWebServer, WebConfig, audit_log
from tests.integration.ahead import CrawlsAhead, crawl_ahead
from tests.integration.crawl_runner import SHORT_BACKOFF, near_duplicate_notes, run_crawl
from tests.integration.prometheus_watch import (
    PrometheusWatch,
    flink_conf_with_prometheus,
    free_port,
)

pytestmark = pytest.mark.integration

DELAY = 0.05
TOKEN = "pyflink-crawler"
WEB = WebConfig(seed=3, hosts=16, pages_per_host=6).with_near_duplicate_profile()


def _archived_by(out: Path, url: str) -> int:
    """The process subtask whose WARC files hold the response of ``url``."""
    for path in (out / "warc").glob("crawl-*.warc.gz"):
        if "-neardup-" in path.name:
            continue
        with gzip.open(path, "rb") as raw:
            for record in ArchiveIterator(raw):
                if (record.rec_type == "response"
                        and record.rec_headers.get_header("WARC-Target-URI") == url):
                    return int(path.name.split("-")[2])
    raise AssertionError(f"no response for {url}")


def _same_short_text(web: SyntheticWeb, url: str, other: str) -> bool:
    """Whether both pages are short pages with the same distinct words (the web's bodies)."""
    words = []
    for page in (url, other):
        host, _, path = page.removeprefix("http://").partition("/")
        body = web.respond(host, "/" + path).body
        words.append(frozenset(content_features(main_text(lxml.html.fromstring(body)))))
    return words[0] == words[1] and len(words[0]) < NearDupSection().min_features


def _recall(groups: list[tuple[str, ...]], flagged: set[str], fetched: set[str]) -> float:
    """Share of the pages that should be flagged that were: every fetched page of a group but
    the first one judged."""
    expected = sum(max(0, len([u for u in group if u in fetched]) - 1) for group in groups)
    found = sum(len([u for u in group if u in flagged]) for group in groups)
    return found / expected


@crawl_ahead("near-duplicates")
def _near_duplicate_crawl(tmp_path: Path) -> dict[str, Any]:
    """The crawl of the near-duplicate web at parallelism 2, watched through Flink's Prometheus
    reporter."""
    port = free_port()
    scrapes = PrometheusWatch(port)
    with SyntheticWebServer(WEB, tmp_path / "requests.jsonl") as server:
        web = server.web
        seeds = web.seeds(1)
        # Two process subtasks: the copies of an article are archived by either, and still
        # meet in the near-duplicate index, whose keys are spread over two subtasks. On the
        # MiniCluster: its one process serves every metric on the reporter's one port (a local
        # cluster's daemons need a range).
        process, summary = run_crawl(
            tmp_path, seeds, server.proxy_url, "--delay", str(DELAY), "--idle-seconds", "6",
            *SHORT_BACKOFF, "--parallelism", "2", "--set", "crawl.local_runtime=minicluster",
            "--flink-conf", str(flink_conf_with_prometheus(tmp_path, port)),
            timeout=600, watch=scrapes,
        )
        return {"web": web, "expected": web.expected_crawl(seeds, TOKEN), "scrapes": scrapes,
                "process": process, "summary": summary, "records": server.request_log(),
                "out": tmp_path / "out"}


@pytest.mark.crawl_ahead("near-duplicates")
def test_near_duplicates_are_found_marked_and_archived_with_their_original(
    crawls_ahead: CrawlsAhead,
) -> None:
    """Also watched through Flink's Prometheus reporter while it runs (``prometheus_watch``):
    this crawl counts nearly every figure the Grafana dashboard shows (near-duplicates, WARC
    revisits, fetch errors, rejected links), at parallelism 2."""
    crawl = crawls_ahead.result("near-duplicates")
    web, expected, scrapes = crawl["web"], crawl["expected"], crawl["scrapes"]
    process, summary, records = crawl["process"], crawl["summary"], crawl["records"]
    out = crawl["out"]
    assert process.returncode == 0, process.stderr[-3000:]
    assert summary["stop_reason"] == "idle"
    assert audit_log(records, expected, min_delay=DELAY) == []
    scrapes.check(summary)
    fetched = {f"http://{r.host}{r.path}" for r in records if r.status == 200}

    notes = near_duplicate_notes(out)
    same = web.near_duplicate_groups()
    edited = web.near_duplicate_edited_groups()
    group_of = {url: ("same", i) for i, group in enumerate(same) for url in group}
    group_of.update({url: ("edited", i) for i, group in enumerate(edited) for url in group})
    # Besides the groups, short pages (fewer than neardup.min_features distinct words) with
    # the same distinct words as an earlier one are copies: the web's plain pages say "A
    # synthetic page" and their number.
    correct = [(url, original) for url, original, _ in notes
               if (url in group_of and group_of[url] == group_of.get(original))
               or _same_short_text(web, url, original)]
    assert notes
    precision = len(correct) / len(notes)
    flagged = {url for url, _ in correct}
    same_recall = _recall(same, flagged, fetched)
    edited_recall = _recall(edited, flagged, fetched)
    print(f"near-duplicates: {len(notes)} verdicts, precision {precision:.3f}, recall "
          f"{same_recall:.3f} (same article), {edited_recall:.3f} (edited copies)")
    assert precision >= 0.95
    assert same_recall >= 0.95
    # Copies with words of the article changed are beyond distance 3 more often than not
    # (BENCHMARKS.md: about 0.68 over five webs); this only guards against a collapse.
    assert edited_recall >= 0.3
    assert all(0 <= distance <= 3 for _, _, distance in notes)

    # Both process subtasks archived pages that were judged near-duplicates, and both
    # subtasks of the index and of the verdicts had their share: no stage of one instance.
    judged_by = {_archived_by(out, url) for url, _ in correct}
    assert judged_by == {0, 1}
    work = {(status["stage"], status["subtask"]): status["counters"]
            for status in read_statuses(out / "status")}
    for subtask in (0, 1):
        assert work[NEARDUP_INDEX.figures, subtask].get(NEARDUP_INDEX_PROBES.name, 0) > 0
        assert work[NEAR_DUPLICATES.figures, subtask].get(NEARDUP_PAGES_IN.name, 0) > 0
    # One verdict a page: each near-duplicate has one note.
    assert len({url for url, _, _ in notes}) == len(notes)
    # The crawl DB marked each of them; the summary counts them.
    figures = CrawlFigures.from_statuses(read_statuses(out / "status"))
    assert figures.counter(CRAWLDB_URLS_NEAR_DUPLICATE.key) == len(notes)
    assert figures.counter(NEARDUP_PAGES_NEAR_DUPLICATE.key) == len(notes)
    assert summary["near_duplicates"] == len(notes)
