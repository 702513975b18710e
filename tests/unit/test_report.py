"""The crawl report: its figures from crawl-log lines written by the crawl's own writer, the
Crawl-delay read back from the archive, and the page written for a finished or running crawl."""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import numpy as np
import pytest

from crawl.archive.cdxj import build_index
from crawl.archive.crawl_log import CrawlLogWriter
from crawl.archive.summary import summarise_crawl_logs
from crawl.archive.warc import WarcFileWriter
from crawl.config import load_config
from crawl.layout import OutputLayout
from crawl.model import FetchResult
from crawl.report import REPORT_FILE_NAME, ReportSettings, gather_report, write_report
from crawl.report.log_figures import (
    CrawlLogColumns,
    SpacingRules,
    _group_quantile,
    _mean_coverage,
    choose_bin_seconds,
    log_figures,
    read_crawl_logs,
)
from crawl.stages import CRAWLDB_DEFERRED, PROCESS_LINKS_FOUND
from crawl.status import Status
from job.cli import main as cli_main
from job.launcher import _write_report

T0 = 1_795_000_000_000
HTML = [("Content-Type", "text/html; charset=utf-8")]


def _fetch(url: str, start: int, duration: int = 50, *, status: Status = Status.FETCHED,
           code: int = 200, body: bytes | None = None, hops: str = "L", reason: str = "",
           headers: list[tuple[str, str]] | None = None) -> FetchResult:
    if body is None:
        body = f"<html>{url}</html>".encode() if code else b""
    return FetchResult(url=url, status=status, reason=reason, http_status=code, body=body,
                       started_ms=T0 + start, duration_ms=duration, hops=hops,
                       response_headers=HTML if headers is None else headers)


def _robots(host: str, start: int, code: int = 200, body: bytes = b"User-agent: *\n",
            duration: int = 10) -> FetchResult:
    status = Status.FETCHED if code < 400 else Status.HTTP_ERROR
    return _fetch(f"http://{host}/robots.txt", start, duration, status=status, code=code,
                  body=body, hops="P", headers=[("Content-Type", "text/plain")])


def _denied(url: str, at: int) -> FetchResult:
    return FetchResult(url=url, status=Status.ROBOTS_DENIED, reason="robots:disallow",
                       hops="L", started_ms=T0 + at)


def _write_log(path: Path, results: list[FetchResult]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with CrawlLogWriter(path, background_flush=False, clock=lambda: T0) as writer:
        for result in results:
            writer.log(result)
    return path


def _columns(tmp_path: Path, results: list[FetchResult]) -> CrawlLogColumns:
    return read_crawl_logs([_write_log(tmp_path / "logs" / "crawl-00000.log", results)])


def _varied_crawl(seed: int = 7, hosts: int = 6, pages: int = 300) -> list[FetchResult]:
    """A crawl's worth of outcomes over several hosts, each host's requests spaced politely."""
    rng = random.Random(seed)
    results = []
    for h in range(hosts):
        host = f"h{h}.example"
        clock = rng.randrange(0, 500)
        results.append(_robots(host, clock, code=rng.choice([200, 200, 404, 503])))
        clock += 1000
        # The host's not-found probe: a request, but neither a page nor robots.txt.
        results.append(_fetch(f"http://{host}/0123456789abcdef0123.html", clock, 10,
                              status=Status.HTTP_ERROR, code=404, hops="N", reason="http:404"))
        clock += 10
        for n in range(pages // hosts):
            clock += rng.choice([1000, 1000, 1200, 4000])
            duration = rng.choice([1, 5, 40, 300, 2500])
            kind = rng.random()
            url = f"http://{host}/p/{n % 40}"
            if kind < 0.1:
                results.append(_denied(url, clock))
                continue
            if kind < 0.2:
                results.append(_fetch(url, clock, duration, status=Status.HTTP_ERROR,
                                      code=rng.choice([404, 500, 429]), reason="http:x"))
            elif kind < 0.25:
                results.append(FetchResult(url=url, status=Status.FETCH_ERROR,
                                           reason="timeout:read", started_ms=T0 + clock,
                                           duration_ms=duration, hops="L"))
            else:
                results.append(_fetch(url, clock, duration,
                                      body=rng.choice([b"same", b"x" * rng.randrange(1, 9000)])))
            clock += duration
    results.sort(key=lambda r: r.started_ms + r.duration_ms)
    return results


def test_figures_agree_with_the_summary_of_the_same_log(tmp_path: Path) -> None:
    path = _write_log(tmp_path / "crawl-00000.log", _varied_crawl())
    columns = read_crawl_logs([path])
    figures = log_figures(columns)
    summary = summarise_crawl_logs([path])
    assert figures.lines == len(columns) == 312
    assert figures.bad_lines == 0
    assert figures.pages == summary.pages
    assert figures.bytes == summary.bytes
    assert figures.robots_fetches == summary.robots_fetches
    assert figures.by_status == dict(summary.pages_by_status)
    assert {reason: n for _, reason, n in figures.by_reason if reason} == dict(summary.reasons)
    # Every page fetch lands in one bin; bytes per second times the width sum to the bytes.
    assert sum(figures.timeline["pages_per_s"]) * figures.bin_seconds == summary.pages
    assert sum(figures.timeline["bytes_per_s"]) * figures.bin_seconds == pytest.approx(
        summary.bytes)
    assert sum(sum(counts) for counts in figures.latency_counts.values()) == (
        summary.pages + summary.robots_fetches)
    assert figures.host_count == 6
    assert [row["requests"] for row in figures.busiest_hosts] == sorted(
        (row["requests"] for row in figures.busiest_hosts), reverse=True)
    # Everything the page embeds is plain JSON.
    json.dumps(figures.__dict__, allow_nan=False)


def test_gaps_between_a_hosts_requests_are_politeness_idleness_or_after_a_failure(
    tmp_path: Path,
) -> None:
    results = [
        _robots("a.ex", 0),                                           # ends at 10
        _fetch("http://a.ex/1", 1_010, 50),                           # gap 1.0 s: polite
        _fetch("http://a.ex/2", 5_060, 100, status=Status.HTTP_ERROR,  # gap 4.0 s: idle
               code=503, reason="http:503"),
        _fetch("http://a.ex/3", 8_160, 40),                           # gap 3.0 s after a 503
        _fetch("http://a.ex/4", 9_300, 500),                          # gap 1.1 s: polite
        _fetch("http://a.ex/5", 10_800, 10),                          # 1.0 s: within 2 x 0.5 s
        _denied("http://a.ex/private", 11_000),                       # no request: no gap
    ]
    columns = _columns(tmp_path, results)
    figures = log_figures(columns, SpacingRules(delay_seconds=1.0, response_time_factor=2.0))
    assert figures.gap_seconds == pytest.approx(
        {"politeness": 1.0 + 1.1 + 1.0, "idle": 4.0, "after_failure": 3.0})
    # The per-bin means of the hosts in each state add back up to those seconds.
    for name, seconds in figures.gap_seconds.items():
        assert sum(figures.timeline[f"hosts_{name}"]) * figures.bin_seconds == pytest.approx(
            seconds, abs=1e-3)
    assert sum(figures.timeline["in_flight"]) == pytest.approx((10 + 50 + 100 + 40 + 500 + 10)
                                                               / 1000, abs=1e-3)
    assert figures.timeline["slow_down"][5] == 1
    assert sum(figures.timeline["failures"]) == 1
    assert sum(figures.timeline["robots_denials"]) == 1
    (row,) = figures.busiest_hosts
    assert row["host"] == "a.ex"
    assert (row["requests"], row["pages"], row["failures"]) == (6, 5, 1)
    assert row["median_polite_gap_s"] == pytest.approx(1.0)
    # A Crawl-delay of 5 s makes the 4 s gap polite.
    spaced = log_figures(columns, SpacingRules(delay_seconds=1.0,
                                               crawl_delays={"a.ex": 5.0}))
    assert spaced.gap_seconds["idle"] == 0.0
    assert spaced.busiest_hosts[0]["crawl_delay_s"] == 5.0


def test_novelty_tells_new_duplicate_changed_unchanged_and_not_modified(tmp_path: Path) -> None:
    page = "http://a.ex/page"
    results = [
        _fetch(page, 0, body=b"version A"),
        _fetch("http://a.ex/copy", 2_000, body=b"version A"),        # payload seen elsewhere
        _fetch(page, 10_000, code=304, body=b"", reason="http:not-modified"),
        _fetch(page, 20_000, body=b"version A"),                     # unchanged (not the 304's)
        _fetch(page, 30_000, body=b"version B"),                     # changed
        _fetch("http://a.ex/gone", 31_000, status=Status.HTTP_ERROR, code=404, body=b"nope",
               reason="http:404"),
    ]
    figures = log_figures(_columns(tmp_path, results))
    assert figures.novelty == {
        "new payload": 2, "payload seen at another URL": 1, "refetch, changed": 1,
        "refetch, unchanged": 1, "304 not modified": 1,
    }
    assert figures.urls_refetched == 1
    assert figures.median_refetch_interval_s == pytest.approx(10.0)
    assert sum(figures.timeline["refetches"]) == 3
    assert sum(figures.timeline["not_modified"]) == 1
    # 304s carry no body: content types and sizes count the other answers.
    assert figures.content_types == [("text/html", 5, 9 * 4 + 4)]


def test_unreadable_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    path = _write_log(tmp_path / "crawl-00000.log", [_fetch("http://a.ex/", 0)])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("2026-11-22T04:14:15.123Z 200 51 http://a.ex/x\n")          # cut short
        handle.write("2026-13-22T04:14:15.123Z 200 5 http://a.ex/y L - - 1 - FETCHED -\n")
        handle.write("2026-11-22T04:14:15.123Z 200 5 http://a.ex/y L - - 1 - GONE -\n")
        handle.write("2026-11-22T04:14:15.1Z 200 5 http://a.ex/y L - - 1 - FETCHED -\n")
        handle.write("2026-11-22T04:14:15.123Z 200 5 http://a.ex/y L - - 1 - FETCHED -\n")
    figures = log_figures(read_crawl_logs([path]))
    assert (figures.lines, figures.bad_lines, figures.pages) == (2, 4, 2)


def test_an_empty_log_gives_empty_figures(tmp_path: Path) -> None:
    figures = log_figures(_columns(tmp_path, []))
    assert (figures.lines, figures.pages, figures.bin_starts_ms) == (0, 0, [])


@pytest.mark.parametrize(("span_s", "width"), [(0, 1), (1499, 1), (1500, 2), (86_400, 60),
                                                (30 * 86_400, 1800)])
def test_the_bin_width_keeps_a_timeline_short(span_s: int, width: int) -> None:
    assert choose_bin_seconds(span_s * 1000, 1500) == width


def test_mean_coverage_matches_counting_millisecond_by_millisecond() -> None:
    rng = np.random.default_rng(3)
    starts = rng.integers(0, 5_000, 200)
    ends = starts + rng.integers(0, 900, 200)
    edges = np.arange(0, 6_001, 250)
    busy = np.zeros(6_000)
    for start, end in zip(starts, ends, strict=True):
        busy[start:end] += 1
    expected = busy.reshape(-1, 250).mean(axis=1)
    assert _mean_coverage(starts, ends, edges) == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("q", [0.0, 0.5, 0.95, 1.0])
def test_group_quantiles_match_numpy_group_by_group(q: float) -> None:
    rng = np.random.default_rng(5)
    groups = rng.integers(0, 40, 3_000)
    groups[groups == 7] = 8  # a group without values
    values = rng.lognormal(3, 1, 3_000).round()
    got = _group_quantile(groups, values, q, 41)
    for group in range(41):
        chosen = values[groups == group]
        if chosen.size:
            assert got[group] == pytest.approx(np.quantile(chosen, q)), group
        else:
            assert np.isnan(got[group]), group


def _crawl_dir(tmp_path: Path, *, finished: bool) -> Path:
    """An output directory as a crawl leaves it: crawl log, WARC and index, figures, job."""
    out = tmp_path / "out"
    layout = OutputLayout(out)
    results = _varied_crawl(hosts=3, pages=60) + [
        _robots("slow.ex", 0, body=b"User-agent: *\nCrawl-delay: 4\n"),
        _fetch("http://slow.ex/", 4_100, 20),
        _robots("capped.ex", 0, body=b"User-agent: pyflink-crawler\nCrawl-delay: 90\n"),
    ]
    _write_log(layout.logs / "crawl-00000.log", results)
    layout.warc.mkdir(parents=True)
    with WarcFileWriter(layout.warc, "crawl", 0) as writer:
        for result in results:
            if result.http_status:
                writer.write(result)
    build_index(layout.warc, layout.index)
    layout.status.mkdir()
    (layout.status / "process-00000.json").write_text(json.dumps({
        "stage": "process", "subtask": 0, "attempt": 0, "time": 1.0,
        "counters": {"links.found": 900, "links.recent": 500, "links.rejected.url:scheme:tel": 3,
                     "warc.revisits": 4},
        "gauges": {}}), encoding="utf-8")
    (layout.status / "crawldb-00000.json").write_text(json.dumps({
        "stage": "crawldb", "subtask": 0, "attempt": 0, "time": 1.0,
        "counters": {"urls.found": 400, "urls.new": 90, "urls.duplicate": 310,
                     "urls.released": 80},
        "gauges": {"known": 90, "pending": 10, "deferred.budget:domain": 7}}), encoding="utf-8")
    job = {"job_id": "abc123", "started": T0 / 1000}
    if finished:
        job.update(finished=T0 / 1000 + 400, stop_reason="idle")
        (out / "summary.json").write_text(json.dumps({
            "stop_reason": "idle", "urls_known": 90, "urls_waiting": 10,
            "urls_deferred": {"budget:domain": 7}, "links_rejected": {"url:scheme:tel": 3}}),
            encoding="utf-8")
    (out / "job.json").write_text(json.dumps(job), encoding="utf-8")
    return out


def _charts(page: str) -> list[str]:
    return re.findall(r'<div class="chart" id="chart-([a-z_]+)"></div>', page)


def test_the_report_of_a_finished_crawl_reads_every_source(tmp_path: Path) -> None:
    out = _crawl_dir(tmp_path, finished=True)
    data = gather_report(out, ReportSettings(delay_seconds=1.0))
    assert not data.running
    assert data.summary["stop_reason"] == "idle"
    assert data.counters[PROCESS_LINKS_FOUND.key] == 900
    assert data.gauges[CRAWLDB_DEFERRED.member_key("budget:domain")] == 7
    # Crawl-delay for our token, capped as the crawler caps it; hosts without one are absent.
    assert data.crawl_delays == {"slow.ex": 4.0, "capped.ex": 30.0}
    slow = next(row for row in data.log.busiest_hosts if row["host"] == "slow.ex")
    assert (slow["crawl_delay_s"], slow["median_polite_gap_s"]) == (4.0, 4.09)

    path = write_report(out, ReportSettings(delay_seconds=1.0))
    assert path == out / REPORT_FILE_NAME
    page = path.read_text(encoding="utf-8")
    assert _charts(page) == ["timeline", "status", "reasons", "hosts", "latency", "budget",
                             "content_types", "sizes", "novelty"]
    figures = json.loads(re.search(r'<script type="application/json" id="report-figures">'
                                   r"(.*?)</script>", page, re.S).group(1))
    assert set(figures) == set(_charts(page))
    assert all(figure["data"] for figure in figures.values())
    budget = {label: value for trace in figures["budget"]["data"]
              for label, value in zip(trace["y"], trace["x"], strict=True)}
    assert budget["held back: deferred: budget:domain"] == 7
    assert budget["links: turned away: url:scheme:tel"] == 3
    assert "crawl finished: idle" in page
    assert "No URL was fetched twice" in page
    # Self-contained: plotly.js is inlined, nothing is loaded from elsewhere.
    assert "Plotly" in page
    assert not re.search(r'<script[^>]+src=|<link[^>]+href=', page)


def test_the_report_of_a_running_crawl_says_so(tmp_path: Path) -> None:
    out = _crawl_dir(tmp_path, finished=False)
    assert cli_main(["report", "--out", str(out), "--set", "politeness.delay_seconds=0.5"]) == 0
    page = (out / REPORT_FILE_NAME).read_text(encoding="utf-8")
    assert "crawl running" in page
    assert "delay 0.5 s" in page
    assert "the configuration given" in page


def test_the_report_command_needs_a_crawl(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["report", "--out", str(tmp_path)]) == 1
    assert "no crawl logs in" in capsys.readouterr().err


def test_a_report_that_cannot_be_written_is_told_and_does_not_fail_the_crawl(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    _write_report(OutputLayout(tmp_path / "empty"), load_config(None, {}), out)
    assert "could not write the crawl report: FileNotFoundError: no crawl logs in" in (
        out.getvalue())
    crawl = _crawl_dir(tmp_path, finished=True)
    _write_report(OutputLayout(crawl), load_config(None, {}), out)
    assert f"report          {crawl / REPORT_FILE_NAME}" in out.getvalue()
