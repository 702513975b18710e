"""Crawl log: line format, parse round trip, no spaces inside columns, the writer's flushing."""

from __future__ import annotations

import pathlib
import time
from typing import Any

import pytest

from crawl.archive.crawl_log import (
    COLUMNS,
    CrawlLogWriter,
    format_line,
    format_result_line,
    parse_line,
)
from crawl.archive.warc import sha1_digest
from crawl.model import FetchResult
from crawl.status import Status

T_MS = 1_795_321_255_123  # 2026-11-22T04:20:55.123Z

FETCHED = {
    "timestamp_ms": T_MS, "status": Status.FETCHED, "url": "http://a.example/x",
    "http_status": 200, "size": 5120, "hops": "L", "via": "http://a.example/",
    "content_type": "text/html", "duration_ms": 87,
    "payload_digest": "sha1:HTA2TNY3AA66NWDWA26A4TJXUALGCGM4", "reason": "http:200",
}
ENTRIES: list[dict[str, Any]] = [
    FETCHED,
    {**FETCHED, "status": Status.REDIRECT, "http_status": 301, "size": 0, "hops": "LR",
     "content_type": "", "payload_digest": "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
     "reason": "http:301"},
    {**FETCHED, "status": Status.HTTP_ERROR, "http_status": 503, "reason": "http:503"},
    {"timestamp_ms": T_MS, "status": Status.FETCH_ERROR, "url": "http://b.example/",
     "http_status": 0, "size": None, "hops": "", "via": "", "content_type": "",
     "duration_ms": 30000, "payload_digest": "", "reason": "timeout:read"},
    {"timestamp_ms": 0, "status": Status.ROBOTS_DENIED, "url": "http://a.example/private",
     "http_status": 0, "size": None, "hops": "LL", "via": "http://a.example/x",
     "content_type": "", "duration_ms": 0, "payload_digest": "", "reason": "robots:disallow"},
    {"timestamp_ms": T_MS + 999, "status": Status.REJECTED, "url": "ftp://c.example/f",
     "http_status": 0, "size": None, "hops": "L", "via": "http://a.example/",
     "content_type": "", "duration_ms": 0, "payload_digest": "", "reason": "scheme:ftp"},
]


def test_line_golden() -> None:
    assert format_line(**FETCHED) == (
        "2026-11-22T04:20:55.123Z 200 5120 http://a.example/x L http://a.example/ text/html 87 "
        "sha1:HTA2TNY3AA66NWDWA26A4TJXUALGCGM4 FETCHED http:200")


def test_line_without_response_golden() -> None:
    assert format_line(**ENTRIES[4]) == (
        "1970-01-01T00:00:00.000Z -9998 - http://a.example/private LL http://a.example/x - 0 - "
        "ROBOTS_DENIED robots:disallow")


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry["status"].value for entry in ENTRIES])
def test_format_parse_round_trip(entry: dict[str, Any]) -> None:
    line = format_line(**entry)

    fields = parse_line(line + "\n")

    code = fields.pop("code")
    assert fields == entry
    assert code == (entry["http_status"] or {Status.FETCH_ERROR: -2, Status.ROBOTS_DENIED: -9998,
                                             Status.REJECTED: -5000}[entry["status"]])
    assert format_line(**fields) == line


UNSAFE = [
    {"url": "http://a.example/a b\tc\nd"},
    {"url": "http://a.example/caf\u00e9\u00a0\u2028x"},
    {"via": "http://a.example/ spaced"},
    {"reason": "connection reset by peer\r\n"},
    {"reason": "odd\u00a0space\u2003and\u200bzero-width\x00nul"},
    {"hops": "L L"},
    {"content_type": "text/ html"},
    {"payload_digest": "sha1: X"},
    {"url": "", "via": "", "reason": ""},
]


@pytest.mark.parametrize("change", UNSAFE)
def test_columns_never_contain_spaces(change: dict[str, str]) -> None:
    line = format_line(**{**FETCHED, **change})

    columns = line.split(" ")
    assert len(columns) == len(COLUMNS)
    for column in columns:
        assert column
        assert not any(char.isspace() or not char.isprintable() for char in column)
    assert format_line(**{k: v for k, v in parse_line(line).items() if k != "code"}) == line


def test_spaces_in_urls_are_percent_encoded_and_in_reasons_replaced() -> None:
    line = format_line(**{**FETCHED, "url": "http://a.example/a b", "reason": "reset by peer"})

    fields = parse_line(line)

    assert fields["url"] == "http://a.example/a%20b"
    assert fields["reason"] == "reset_by_peer"


@pytest.mark.parametrize(("line", "message"), [
    ("2026-11-22T04:20:55.123Z 200 5120 http://a.example/x", "has 4 columns, expected 11"),
    ("2026-11-22 200 1 u - - - 0 - FETCHED -", "timestamp is not"),
    ("2026-11-22T04:20:55.123Z 200 1 u - - - 0 - SLEEPING -", "is not a valid Status"),
    ("2026-11-22T04:20:55.123Z OK 1 u - - - 0 - FETCHED -", "invalid literal for int"),
])
def test_parse_rejects_malformed_lines(line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_line(line)


def fetch_result(**changes: Any) -> FetchResult:
    fields: dict[str, Any] = {
        "url": "http://a.example/x", "status": Status.FETCHED, "reason": "http:200",
        "http_status": 200, "response_headers": [("Content-Type", "text/HTML; charset=utf-8")],
        "body": b"<html></html>", "started_ms": T_MS, "duration_ms": 87, "hops": "L",
        "via": "http://a.example/",
    }
    return FetchResult(**{**fields, **changes})


def test_result_line_takes_its_fields_from_the_result() -> None:
    fields = parse_line(format_result_line(fetch_result(), timestamp_ms=T_MS))

    assert fields == {
        "timestamp_ms": T_MS, "code": 200, "http_status": 200, "size": 13,
        "url": "http://a.example/x", "hops": "L", "via": "http://a.example/",
        "content_type": "text/html", "duration_ms": 87,
        "payload_digest": sha1_digest(b"<html></html>"), "status": Status.FETCHED,
        "reason": "http:200",
    }


def test_result_line_without_response_has_no_size_or_digest() -> None:
    result = fetch_result(status=Status.FETCH_ERROR, reason="dns:nxdomain", http_status=0,
                          response_headers=[], body=b"")

    fields = parse_line(format_result_line(result, timestamp_ms=T_MS))

    assert (fields["code"], fields["size"], fields["payload_digest"]) == (-2, None, "")


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_writer_buffers_then_flushes_once_the_interval_has_passed(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "crawl-00000.log"
    path.write_text("earlier line\n")
    monotonic = FakeMonotonic()
    writer = CrawlLogWriter(path, background_flush=False, monotonic=monotonic)

    writer.write_line("one")
    assert path.read_text() == "earlier line\n"
    monotonic.now += 1.0
    writer.write_line("two")
    assert path.read_text() == "earlier line\none\ntwo\n"
    writer.write_line("three")
    writer.flush()
    assert path.read_text().endswith("two\nthree\n")
    writer.write_line("four")
    writer.close()
    writer.close()
    assert path.read_text() == "earlier line\none\ntwo\nthree\nfour\n"
    with pytest.raises(ValueError, match="closed"):
        writer.write_line("five")


def test_writer_flushes_in_the_background_when_idle(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "crawl-00000.log"
    with CrawlLogWriter(path, flush_interval_s=0.02) as writer:
        writer.write_line("only line")
        deadline = time.monotonic() + 2.0
        while path.read_text() == "" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert path.read_text() == "only line\n"


def test_writer_dates_lines_by_fetch_end_or_by_the_clock(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "crawl-00000.log"
    with CrawlLogWriter(path, background_flush=False, clock=lambda: T_MS + 5000) as writer:
        writer.log(fetch_result())
        writer.log(fetch_result(status=Status.REJECTED, reason="url:too-long", http_status=0,
                                started_ms=0, duration_ms=0, body=b""))

    first, second = (parse_line(line) for line in path.read_text().splitlines())
    assert first["timestamp_ms"] == T_MS + 87
    assert (second["timestamp_ms"], second["code"], second["status"]) \
        == (T_MS + 5000, -5000, Status.REJECTED)


def test_writer_survives_unencodable_text(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "crawl-00000.log"
    with CrawlLogWriter(path, background_flush=False) as writer:
        writer.log(fetch_result(reason="bad\udce9byte"))
        writer.write_line("preformatted \udce9")

    first, second = path.read_text().splitlines()
    assert parse_line(first)["reason"] == "bad_byte"
    assert second == "preformatted \\udce9"
