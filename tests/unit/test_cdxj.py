"""The CDXJ index (crawl/archive/cdxj.py): the writer's index of each WARC file is, line for line,
what webrecorder's cdxj-indexer (the indexer pywb uses) makes of the same file."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from cdxj_indexer.main import write_cdx_index

from crawl.archive.cdxj import (
    INDEX_PART_SUFFIX,
    build_index,
    index_path_of,
    index_warc_file,
    timestamp14,
    url_key,
)
from crawl.archive.warc import WarcFileWriter, recover_open_files
from crawl.model import FetchResult
from crawl.status import Status
from job.cli import main as cli_main

STARTED_MS = 1_795_000_000_000


def _result(url: str, n: int, **changes: object) -> FetchResult:
    fields: dict[str, object] = {
        "url": url,
        "status": Status.FETCHED,
        "reason": "",
        "http_status": 200,
        "http_reason": "OK",
        "request_headers": [("Host", url.split("/")[2]), ("User-Agent", "testbot/1.0")],
        "response_headers": [("Content-Type", "text/html; charset=utf-8")],
        "body": f"<html><body>page {n}</body></html>".encode(),
        "ip_address": "192.0.2.7",
        "started_ms": STARTED_MS + n * 1500,
    }
    fields.update(changes)
    return FetchResult(**fields)  # type: ignore[arg-type]


def _varied_results() -> list[FetchResult]:
    """Captures of every kind the crawl writes, with the headers an index must get right."""
    results = [
        _result("http://www.example.com/", 0),
        _result("http://example.com/a/b?z=2&a=1", 1),
        _result("https://example.com:8443/x", 2, response_headers=[]),  # no Content-Type
        _result("http://example.com/img.png", 3,
                response_headers=[("content-type", "IMAGE/PNG"), ("Content-Length", "99")],
                body=bytes(range(256))),
        _result("http://example.com/odd", 4, response_headers=[("Content-Type", " text/plain")]),
        _result("http://example.com/odd2", 5,
                response_headers=[("Content-Type", "text/html;charset=utf-8"),
                                  ("Content-Type", "application/json")]),
        _result("http://example.com/nonascii", 6,
                response_headers=[("Content-Type", "text/h\u00e9ml")]),
        _result("http://example.com/missing", 7, status=Status.HTTP_ERROR, reason="http:404",
                http_status=404, http_reason="Not Found"),
        _result("http://example.com/moved", 8, status=Status.REDIRECT, reason="http:301",
                http_status=301, http_reason="Moved Permanently",
                response_headers=[("Location", "http://example.com/new")], body=b""),
        _result("http://xn--bcher-kva.example/%C3%A4?q=%20", 9),
        _result("http://example.com/big", 10, body=b"x" * 5000, truncated="length"),
        _result("http://192.0.2.1/ip", 11),
        _result("http://example.com/", 12),  # a second capture of a URL
    ]
    return results


def _reference_index(warc: Path, tmp_path: Path) -> list[str]:
    output = tmp_path / f"{warc.name}.reference.cdxj"
    write_cdx_index(str(output), [str(warc)], {"sort": True})
    return output.read_text(encoding="utf-8").splitlines()


def test_the_writers_index_is_the_reference_indexers(tmp_path: Path) -> None:
    warc_dir = tmp_path / "warc"
    with WarcFileWriter(warc_dir, "crawl", 0, max_file_bytes=4000) as writer:
        for n, result in enumerate(_varied_results()):
            # Metadata records (warc-fields) are not captures: neither index lists them.
            writer.write(result, [("fetchTimeMs", "5")] if n % 2 else None)
    files = sorted(warc_dir.glob("*.warc.gz"))
    assert len(files) >= 3  # rolled: offsets restart in every file
    lines = 0
    for warc in files:
        ours = index_path_of(warc).read_text(encoding="utf-8").splitlines()
        assert ours == _reference_index(warc, tmp_path), warc.name
        assert ours == index_warc_file(warc)  # and what reading the file back gives
        lines += len(ours)
    assert lines == len(_varied_results())


def test_an_index_spilled_in_parts_is_the_reference_indexers_and_leaves_no_part(
    tmp_path: Path,
) -> None:
    warc_dir = tmp_path / "warc"
    results = _varied_results() * 3
    random.Random(5).shuffle(results)
    with WarcFileWriter(warc_dir, "crawl", 0, index_memory_lines=2) as writer:
        for n, result in enumerate(results[:-1]):
            writer.write(result)
            if n == 20:
                parts = [p.name for p in warc_dir.iterdir() if INDEX_PART_SUFFIX in p.name]
                assert len(parts) == 10  # two lines a part; the 21st line held
                assert all(p.startswith(os.path.basename(writer.current_path or ""))
                           for p in parts)
        # One more line than the parts hold: the last is merged from memory.
        writer.write(results[-1])
    [warc] = warc_dir.glob("*.warc.gz")
    ours = index_path_of(warc).read_text(encoding="utf-8").splitlines()
    assert len(ours) == len(results)
    assert ours == _reference_index(warc, tmp_path)
    assert sorted(p.name for p in warc_dir.iterdir()) == sorted(
        [warc.name, index_path_of(warc).name])


def test_an_index_part_that_cannot_be_written_leaves_the_file_to_be_indexed_by_reading(
    tmp_path: Path,
) -> None:
    warc_dir = tmp_path / "warc"
    results = _varied_results()
    with WarcFileWriter(warc_dir, "crawl", 0, index_memory_lines=3) as writer:
        writer.write(results[0])
        # A directory where the first part goes: the spill fails as on a full disk.
        open_name = os.path.basename(writer.current_path or "")
        (warc_dir / f"{open_name}{INDEX_PART_SUFFIX}00000").mkdir()
        for result in results[1:]:
            writer.write(result)  # every capture is written all the same
        (warc_dir / f"{open_name}{INDEX_PART_SUFFIX}00000").rmdir()
    [warc] = warc_dir.glob("*.warc.gz")
    assert not index_path_of(warc).exists()
    assert build_index(warc_dir, tmp_path / "index.cdxj") == len(results)
    assert index_path_of(warc).read_text(encoding="utf-8").splitlines() == \
        _reference_index(warc, tmp_path)


def test_recovery_removes_the_index_parts_of_a_crashed_writer(tmp_path: Path) -> None:
    warc_dir = tmp_path / "warc"
    results = _varied_results()
    writer = WarcFileWriter(warc_dir, "crawl", 0, index_memory_lines=2)
    for result in results:
        writer.write(result)
    open_path = Path(writer.current_path or "")
    # A crash: the writer is never closed. Another writer stopped between its file's rename
    # and its index left parts of a file no longer open; a live subtask's parts are kept.
    orphan = warc_dir / f"crawl-20261122000000000-00000-00007.warc.gz.open{INDEX_PART_SUFFIX}00000"
    orphan.write_text("x\n", encoding="utf-8")
    other = warc_dir / "crawl-20261122000000000-00001-00000.warc.gz.open"
    other.write_bytes(b"")
    other_part = Path(f"{other}{INDEX_PART_SUFFIX}00000")
    other_part.write_text("x\n", encoding="utf-8")
    assert len(list(warc_dir.glob(f"{open_path.name}{INDEX_PART_SUFFIX}*"))) >= 5

    [report] = recover_open_files(warc_dir, "crawl", 0)

    assert report.final_path is not None
    assert sorted(p.name for p in warc_dir.iterdir()) == sorted(
        [Path(report.final_path).name, other.name, other_part.name])
    assert build_index(warc_dir, tmp_path / "index.cdxj") == len(results)


def test_build_index_merges_sorted_and_indexes_files_without_one(tmp_path: Path) -> None:
    warc_dir = tmp_path / "warc"
    results = _varied_results()
    random.Random(3).shuffle(results)
    for subtask in (0, 1):
        with WarcFileWriter(warc_dir, "crawl", subtask, max_file_bytes=6000) as writer:
            for result in results[subtask::2]:
                writer.write(result)
    files = sorted(warc_dir.glob("*.warc.gz"))
    os.remove(index_path_of(files[0]))  # as after a crash: recovered files have none
    stale = index_path_of(files[1])
    stale.write_text("", encoding="utf-8")
    os.utime(stale, (0, 0))  # older than its WARC file
    (warc_dir / "crawl-20990101000000000-00009-00000.warc.gz.open").write_bytes(b"partial")

    output = tmp_path / "index.cdxj"
    count = build_index(warc_dir, output)

    merged = output.read_text(encoding="utf-8").splitlines()
    assert count == len(merged) == len(results)
    assert merged == sorted(merged)
    reference = sorted(line for warc in files for line in _reference_index(warc, tmp_path))
    assert merged == reference
    assert index_path_of(files[0]).exists()


def test_the_index_command_writes_the_crawls_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with WarcFileWriter(tmp_path / "warc", "crawl", 0) as writer:
        writer.write(_result("http://example.com/", 0))
    assert cli_main(["index", "--out", str(tmp_path)]) == 0
    assert "1 captures in" in capsys.readouterr().out
    [line] = (tmp_path / "index.cdxj").read_text(encoding="utf-8").splitlines()
    assert line.startswith("com,example)/ 20261118")
    assert cli_main(["index", "--out", str(tmp_path / "nothing")]) == 1


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://www.example.com/a?b=2&a=1", "com,example)/a?a=1&b=2"),
        ("https://Example.COM:443/", "com,example)/"),
        ("http://example.com:8080/x", "com,example:8080)/x"),
        ("http://192.0.2.1/ip", "1,2,0,192)/ip"),  # surt reverses addresses too
    ],
)
def test_url_keys_are_surts(url: str, key: str) -> None:
    assert url_key(url) == key


def test_timestamps_have_fourteen_digits() -> None:
    assert timestamp14("2026-11-22T14:17:47.123Z") == "20261122141747"
    assert timestamp14("2026-11-22T14:17:47Z") == "20261122141747"
    assert timestamp14("2026-11-22") == "20261122000000"  # a short form, padded


def test_revisit_records_are_indexed_as_the_reference_does(tmp_path: Path) -> None:
    warc_dir = tmp_path / "warc"
    first = _result("http://example.com/a", 0)
    same = _result("http://example.com/b", 1)  # the same payload
    with WarcFileWriter(warc_dir, "crawl", 0) as writer:
        writer.write(first)
        original = writer.last_capture
        assert original is not None
        writer.write(same, [("fetchTimeMs", "2")], revisit_of=original)
    [warc] = sorted(warc_dir.glob("*.warc.gz"))
    ours = index_path_of(warc).read_text(encoding="utf-8").splitlines()
    assert ours == _reference_index(warc, tmp_path)
    [revisit] = [line for line in ours if line.startswith("com,example)/b ")]
    assert '"mime": "warc/revisit"' in revisit
    assert '"status": "200"' in revisit
