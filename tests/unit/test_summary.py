"""The end-of-crawl summary, counted from crawl logs written with the crawl log's own format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from crawl.archive.crawl_log import format_line
from crawl.archive.summary import CrawlSummary, summarise_crawl_logs
from crawl.status import Status

T0 = 1_795_321_255_000


def _line(
    offset_ms: int, status: Status, url: str, http: int = 0, size: int | None = None,
    hops: str = "L", reason: str = "",
) -> str:
    return format_line(
        timestamp_ms=T0 + offset_ms, status=status, url=url, http_status=http, size=size,
        hops=hops, via="http://a.example/" if hops else "", content_type="text/html",
        duration_ms=12, payload_digest="", reason=reason,
    )


# Subtask 0's log: robots.txt fetches first (hop path ending in "P"), then pages.
LOG_0 = [
    _line(0, Status.FETCHED, "http://a.example/robots.txt", 200, 120, "P", "http:200"),
    _line(100, Status.FETCHED, "http://a.example/", 200, 1000, "", "http:200"),
    _line(200, Status.FETCHED, "http://a.example/x", 200, 2000, "L", "http:200"),
    _line(300, Status.REDIRECT, "http://a.example/r", 301, 50, "L", "http:301"),
    _line(400, Status.ROBOTS_DENIED, "http://a.example/private/1", reason="robots:disallow"),
    _line(500, Status.HTTP_ERROR, "http://a.example/gone", 404, 30, "L", "http:404"),
    "this is not a crawl log line",
    "",
    _line(600, Status.FETCHED, "http://b.example:8080/", 200, 500, "LL", "http:200"),
]
# Subtask 1's log.
LOG_1 = [
    _line(50, Status.HTTP_ERROR, "http://c.example/robots.txt", 503, 10, "LP", "http:503"),
    _line(700, Status.ROBOTS_DENIED, "http://c.example/", reason="robots:unavailable:http:503"),
    _line(800, Status.ROBOTS_DENIED, "http://c.example/a", reason="robots:unavailable:http:503"),
    _line(2100, Status.FETCH_ERROR, "http://d.example/", 0, None, "L", "timeout:read"),
    _line(2000, Status.FETCHED, "http://a.example/y", 200, 3000, "LM", "http:200"),
    _line(2050, Status.REJECTED, "http://a.example/a/a/a/a/", hops="LLLL",
          reason="trap:repeated-segment"),
    _line(1000, Status.FETCHED, "http://a.example/z", 200, 5, "L", "http:200")[:-20],
    _line(1000, Status.FETCHED, "http://a.example/z", 200, 5, "L", "http:200").replace(
        "FETCHED", "SLURPED"),
    "2026-11-22T04:20:55.123Z 200 five http://a.example/ L - text/html 1 - FETCHED http:200",
]


@pytest.fixture
def summary(tmp_path: Path) -> CrawlSummary:
    paths = []
    for n, lines in enumerate((LOG_0, LOG_1)):
        path = tmp_path / f"crawl-{n}.log"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        paths.append(path)
    return summarise_crawl_logs(paths)


def test_pages_by_status(summary: CrawlSummary) -> None:
    assert summary.pages_by_status == {
        "FETCHED": 4, "REDIRECT": 1, "HTTP_ERROR": 1, "ROBOTS_DENIED": 3, "FETCH_ERROR": 1,
        "REJECTED": 1,
    }
    assert summary.pages == 7


def test_pages_by_the_way_they_were_found(summary: CrawlSummary) -> None:
    # Fetches only: robots.txt, its denials and refusals fetch nothing.
    assert summary.pages_by_way == {"seed": 1, "link": 5, "sitemap entry": 1}
    assert "pages found by" in summary.render()
    assert "    sitemap entry   1" in summary.render()
    assert summary.robots_denials == 3


def test_robots_fetches_are_counted_apart(summary: CrawlSummary) -> None:
    assert summary.robots_fetches == 2
    assert "http:503" not in summary.reasons


def test_reasons(summary: CrawlSummary) -> None:
    assert summary.reasons == {
        "http:200": 4, "http:301": 1, "http:404": 1, "robots:disallow": 1,
        "robots:unavailable:http:503": 2, "timeout:read": 1, "trap:repeated-segment": 1,
    }


def test_bytes_count_pages_and_robots_fetches(summary: CrawlSummary) -> None:
    assert summary.bytes == 120 + 1000 + 2000 + 50 + 30 + 500 + 10 + 3000


def test_hosts_are_those_of_pages_not_of_denials(summary: CrawlSummary) -> None:
    # a.example, b.example:8080 and d.example; c.example only had denials
    assert summary.hosts == 3


def test_fetching_window_and_rate(summary: CrawlSummary) -> None:
    # Denials and robots.txt fetches do not open or close the window; lines come out of order.
    assert (summary.first_fetch_ms, summary.last_fetch_ms) == (T0 + 100, T0 + 2100)
    assert summary.pages_per_second == pytest.approx(7 / 2.0)


def test_bad_lines_are_counted(summary: CrawlSummary) -> None:
    assert summary.bad_log_lines == 4


def test_to_dict_is_json_serialisable(summary: CrawlSummary) -> None:
    summary.warc_files = ["/out/warc/crawl-1.warc.gz"]
    summary.crawl_logs = ["/out/logs/crawl-0.log"]
    summary.stop_reason = "idle"

    data: dict[str, Any] = json.loads(json.dumps(summary.to_dict()))

    assert data["pages"] == 7
    assert data["pages_by_status"]["FETCHED"] == 4
    assert data["robots_denials"] == 3
    assert data["robots_fetches"] == 2
    assert data["pages_per_second"] == 3.5
    assert data["hosts"] == 3
    assert data["bad_log_lines"] == 4
    assert data["warc_files"] == ["/out/warc/crawl-1.warc.gz"]
    assert data["stop_reason"] == "idle"


def test_render_mentions_the_figures(summary: CrawlSummary) -> None:
    summary.elapsed_seconds = 12.34
    summary.stop_reason = "page budget reached"
    summary.urls_known = 77
    summary.warc_files = ["/out/warc/crawl-1.warc.gz", "/out/warc/crawl-2.warc.gz"]
    summary.crawl_logs = ["/out/logs/crawl-0.log"]
    summary.savepoint = "/out/savepoints/sp-1"
    summary.urls_deferred.update({"budget:domain": 5, "budget:shape": 2})
    summary.urls_waiting = 9
    summary.revisits = 4
    summary.near_duplicates = 6

    text = summary.render()

    for expected in (
        "crawl finished (page budget reached) after 12.3 s",
        "pages fetched   7  (3.5 pages/s",
        "FETCHED         4",
        "ROBOTS_DENIED   3",
        "robots denials  3",
        "robots.txt      2 fetches",
        f"bytes           {summary.bytes}",
        "hosts           3",
        "URLs known      77",
        "WARC files      2 in /out/warc",
        "crawl log       /out/logs/crawl-0.log",
        "savepoint       /out/savepoints/sp-1",
        "URLs deferred   7",
        "budget:domain                  5",
        "URLs waiting    9",
        "revisits        4",
        "near-duplicates 6",
    ):
        assert expected in text
    assert json.loads(json.dumps(summary.to_dict()))["urls_deferred"]["budget:domain"] == 5


def test_summary_of_no_logs() -> None:
    summary = summarise_crawl_logs([])

    assert (summary.pages, summary.hosts, summary.pages_per_second) == (0, 0, 0.0)
    text = summary.render()
    assert "crawl finished (stopped)" in text
    assert "WARC files      0 in -" in text
    assert "savepoint" not in text
    json.dumps(summary.to_dict())


def test_one_page_has_no_rate(tmp_path: Path) -> None:
    path = tmp_path / "crawl.log"
    path.write_text(_line(0, Status.FETCHED, "http://a.example/", 200, 10) + "\n", "utf-8")

    summary = summarise_crawl_logs([path])

    assert (summary.pages, summary.pages_per_second) == (1, 0.0)


def test_undecodable_bytes_do_not_stop_the_summary(tmp_path: Path) -> None:
    path = tmp_path / "crawl.log"
    good = _line(0, Status.FETCHED, "http://a.example/", 200, 10) + "\n"
    path.write_bytes(good.encode() + b"\xff\xfe broken\n" + good.encode())

    summary = summarise_crawl_logs([str(path)])

    assert (summary.pages, summary.bad_log_lines) == (2, 1)


def test_not_found_probes_are_no_pages_and_soft_404s_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "crawl-0.log"
    path.write_text("".join(line + "\n" for line in [
        _line(0, Status.FETCHED, "http://a.example/robots.txt", 200, 120, "P"),
        _line(10, Status.FETCHED, "http://a.example/0123456789abcdef0123.html", 200, 300, "N"),
        _line(20, Status.HTTP_ERROR, "http://b.example/0123456789abcdef0123.html", 404, 30, "N",
              "http:404"),
        _line(100, Status.FETCHED, "http://a.example/", 200, 1000, ""),
        _line(200, Status.FETCHED, "http://a.example/old/7.html", 200, 300, "L", "soft-404"),
    ]), encoding="utf-8")
    summary = summarise_crawl_logs([path])
    assert summary.pages_by_status == {"FETCHED": 2}
    assert summary.not_found_probes == 2
    assert summary.reasons == {"soft-404": 1}
    assert summary.bytes == 120 + 300 + 30 + 1000 + 300
    assert "soft 404s       1 pages (2 hosts asked for a path they cannot have)" in (
        summary.render())
