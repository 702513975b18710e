"""WARC writer: exact bytes, readability by warcio (and FastWARC), rolling files, recovery."""

from __future__ import annotations

import base64
import errno
import gzip
import hashlib
import io
import itertools
import os
import pathlib
import random
import re
import subprocess
import sys
import zlib
from collections.abc import Callable

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl.archive import warc as warc_writer
from crawl.archive.warc import (
    WarcFileError,
    WarcFileWriter,
    WarcRecordFactory,
    encode_records,
    recover_open_files,
    sha1_digest,
    verify_warc_file,
)
from crawl.model import FetchResult
from crawl.status import Status

NOW_MS = 1_795_321_300_000  # 2026-11-22T04:21:40.000Z
STARTED_MS = 1_795_321_255_123  # 2026-11-22T04:20:55.123Z
FILE_NAME = re.compile(r"^crawl-\d{17}-(\d{5})-(\d{5})\.warc\.gz$")


def record_ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"<urn:uuid:00000000-0000-4000-8000-{next(counter):012d}>"


def fetch_result(**changes: object) -> FetchResult:
    fields: dict[str, object] = {
        "url": "https://example.com/path/page?q=1",
        "status": Status.FETCHED,
        "reason": "http:200",
        "http_status": 200,
        "http_reason": "OK",
        "request_headers": [("Host", "example.com"), ("User-Agent", "testbot/1.0"),
                            ("Accept-Encoding", "gzip")],
        "response_headers": [("Content-Type", "text/html; charset=utf-8"),
                             ("Content-Encoding", "gzip"), ("Content-Length", "52")],
        "body": b"<html><body>Hello</body></html>\n",
        "ip_address": "192.0.2.7",
        "started_ms": STARTED_MS,
        "duration_ms": 87,
    }
    fields.update(changes)
    return FetchResult(**fields)  # type: ignore[arg-type]


def gzip_members(data: bytes) -> list[bytes]:
    """The decompressed content of each gzip member, checking each is complete."""
    members = []
    while data:
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        members.append(decompressor.decompress(data))
        assert decompressor.eof
        data = decompressor.unused_data
    return members


def pair_bytes(result: FetchResult) -> list[bytes]:
    factory = WarcRecordFactory(clock=lambda: NOW_MS, new_record_id=record_ids())
    return gzip_members(encode_records(factory.response_and_request(result)))


def http_block(record: bytes) -> bytes:
    return record.split(b"\r\n\r\n", 1)[1][: -len(b"\r\n\r\n")]


def warcio_records(path: str | os.PathLike[str]) -> list[tuple[dict[str, str], bytes, object]]:
    """(WARC headers, decoded content, HTTP headers) of each record, digests checked."""
    found = []
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream, check_digests="raise"):
            content = record.content_stream().read()
            found.append((dict(record.rec_headers.headers), content, record.http_headers))
    return found


def finished_files(directory: str | os.PathLike[str]) -> list[str]:
    return sorted(os.path.join(directory, name) for name in os.listdir(directory)
                  if name.endswith(".warc.gz"))


def test_record_pair_golden_bytes() -> None:
    response, request = pair_bytes(fetch_result())

    assert response == (
        b"WARC/1.1\r\n"
        b"WARC-Type: response\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
        b"WARC-Date: 2026-11-22T04:20:55.123Z\r\n"
        b"WARC-Target-URI: https://example.com/path/page?q=1\r\n"
        b"WARC-IP-Address: 192.0.2.7\r\n"
        b"WARC-Payload-Digest: sha1:HTA2TNY3AA66NWDWA26A4TJXUALGCGM4\r\n"
        b"WARC-Block-Digest: sha1:E424S2MHGNP4WN4HPRW4ZYWDCGJ6NJD6\r\n"
        b"Content-Type: application/http; msgtype=response\r\n"
        b"Content-Length: 193\r\n"
        b"\r\n"
        b"HTTP/1.1 200 OK\r\n"
        b"Content-Type: text/html; charset=utf-8\r\n"
        b"X-Crawler-Original-Content-Encoding: gzip\r\n"
        b"Content-Length: 32\r\n"
        b"X-Crawler-Original-Content-Length: 52\r\n"
        b"\r\n"
        b"<html><body>Hello</body></html>\n"
        b"\r\n\r\n"
    )
    assert request == (
        b"WARC/1.1\r\n"
        b"WARC-Type: request\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000002>\r\n"
        b"WARC-Date: 2026-11-22T04:20:55.123Z\r\n"
        b"WARC-Target-URI: https://example.com/path/page?q=1\r\n"
        b"WARC-IP-Address: 192.0.2.7\r\n"
        b"WARC-Concurrent-To: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
        b"WARC-Payload-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\r\n"
        b"WARC-Block-Digest: sha1:4AQGZHZ3S5ICR5I37X6CDSQF7DZEEYO5\r\n"
        b"Content-Type: application/http; msgtype=request\r\n"
        b"Content-Length: 98\r\n"
        b"\r\n"
        b"GET /path/page?q=1 HTTP/1.1\r\n"
        b"Host: example.com\r\n"
        b"User-Agent: testbot/1.0\r\n"
        b"Accept-Encoding: gzip\r\n"
        b"\r\n"
        b"\r\n\r\n"
    )


def test_golden_digests_are_sha1_base32_of_block_and_payload() -> None:
    def b32_sha1(data: bytes) -> bytes:
        return b"sha1:" + base64.b32encode(hashlib.sha1(data).digest())

    for record in pair_bytes(fetch_result()):
        block = http_block(record)
        payload = block.split(b"\r\n\r\n", 1)[1]
        assert b"WARC-Block-Digest: " + b32_sha1(block) + b"\r\n" in record
        assert b"WARC-Payload-Digest: " + b32_sha1(payload) + b"\r\n" in record
        assert f"Content-Length: {len(block)}\r\n".encode() in record


def test_truncated_response_is_marked_and_request_is_not() -> None:
    response, request = pair_bytes(fetch_result(truncated="length"))

    assert b"WARC-Truncated: length\r\n" in response
    assert b"WARC-Truncated" not in request


@pytest.mark.parametrize(("url", "request_line"), [
    ("http://example.com", b"GET / HTTP/1.1"),
    ("http://example.com/?", b"GET /? HTTP/1.1"),
    ("http://example.com/a b/c?x=1 2#frag", b"GET /a%20b/c?x=1%202 HTTP/1.1"),
    ("http://example.com/caf\u00e9", b"GET /caf%C3%A9 HTTP/1.1"),
    ("http://user:pw@example.com:8080/p", b"GET /p HTTP/1.1"),
])
def test_request_is_in_origin_form(url: str, request_line: bytes) -> None:
    _, request = pair_bytes(fetch_result(url=url))

    assert http_block(request).split(b"\r\n", 1)[0] == request_line


def test_request_drops_proxy_headers_and_adds_missing_host() -> None:
    result = fetch_result(url="http://example.com:8080/p", request_headers=[
        ("User-Agent", "testbot/1.0"), ("Proxy-Authorization", "Basic c2VjcmV0"),
        ("Proxy-Connection", "keep-alive")])

    _, request = pair_bytes(result)

    assert http_block(request) == (
        b"GET /p HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: testbot/1.0\r\n\r\n")


def test_result_without_response_is_refused() -> None:
    factory = WarcRecordFactory(clock=lambda: NOW_MS, new_record_id=record_ids())
    result = fetch_result(status=Status.FETCH_ERROR, reason="timeout:connect", http_status=0)

    with pytest.raises(ValueError, match="no HTTP response to archive"):
        factory.response_and_request(result)


def test_result_without_start_time_is_dated_by_the_clock() -> None:
    response, _ = pair_bytes(fetch_result(started_ms=0))

    assert b"WARC-Date: 2026-11-22T04:21:40.000Z\r\n" in response


def test_written_file_reads_back_with_digests_checked(tmp_path: os.PathLike[str]) -> None:
    results = [fetch_result(url=f"https://example.com/{n}", body=b"x" * n) for n in range(4)]
    with WarcFileWriter(tmp_path, "crawl", 0, warcinfo={"operator": "tester"},
                        clock=lambda: NOW_MS, new_record_id=record_ids()) as writer:
        for result in results:
            writer.write(result)

    [path] = finished_files(tmp_path)
    expected = [("warcinfo", None)] + [
        (kind, f"https://example.com/{n}") for n in range(4) for kind in ("response", "request")]
    assert verify_warc_file(path) == expected
    records = warcio_records(path)
    assert [content for headers, content, _ in records if headers["WARC-Type"] == "response"] \
        == [result.body for result in results]


def test_file_starts_with_warcinfo_naming_the_file(tmp_path: os.PathLike[str]) -> None:
    with WarcFileWriter(tmp_path, "crawl", 7, warcinfo={"operator": "tester",
                                                        "http-header-user-agent": "testbot/1.0"},
                        clock=lambda: NOW_MS, new_record_id=record_ids()) as writer:
        writer.write(fetch_result())

    [path] = finished_files(tmp_path)
    assert os.path.basename(path) == "crawl-20261122042140000-00007-00000.warc.gz"
    headers, content, _ = warcio_records(path)[0]
    assert headers["WARC-Type"] == "warcinfo"
    assert headers["WARC-Filename"] == os.path.basename(path)
    assert headers["WARC-Date"] == "2026-11-22T04:21:40.000Z"
    assert headers["Content-Type"] == "application/warc-fields"
    fields = dict(line.split(": ", 1) for line in content.decode().splitlines())
    assert fields["software"].startswith("pyflink-crawler")
    assert fields["format"] == "WARC File Format 1.1"
    assert fields["robots"] == "obey"
    assert fields["operator"] == "tester"
    assert fields["http-header-user-agent"] == "testbot/1.0"
    assert fields["hostname"]


@pytest.mark.parametrize("response_headers", [
    [("Content-Encoding", "gzip"), ("Content-Length", "999")],
    [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")],
    [("content-encoding", "br"), ("transfer-encoding", "gzip, chunked")],
    [("Content-Encoding", "deflate"), ("Content-Length", "3"), ("Content-Length", "3")],
])
def test_decoded_body_reads_back_unchanged(tmp_path: os.PathLike[str],
                                           response_headers: list[tuple[str, str]]) -> None:
    body = b"<html>" + b"caf\xc3\xa9 " * 500 + b"</html>"
    assert gzip.decompress(gzip.compress(body)) == body  # what the client undid
    with WarcFileWriter(tmp_path, "crawl", 0) as writer:
        writer.write(fetch_result(response_headers=[("Content-Type", "text/html"),
                                                    *response_headers], body=body))

    [path] = finished_files(tmp_path)
    _, (response_headers_seen, content, http_headers), _ = warcio_records(path)
    assert response_headers_seen["WARC-Type"] == "response"
    assert content == body
    assert http_headers.get_header("Content-Encoding") is None
    assert http_headers.get_header("Transfer-Encoding") is None
    assert http_headers.get_header("Content-Length") == str(len(body))
    assert http_headers.get_header("X-Crawler-Original-Content-Encoding") \
        == response_headers[0][1]


ODD_HEADERS = [
    ("X-Latin-1", "caf\udce9"),  # byte 0xE9 kept by surrogateescape (aiohttp)
    ("X-Utf-8", "caf\u00e9 \u2603"),
    ("X-Lone-Surrogate", "\ud800"),
    ("N\u00e4me", "non-ASCII name"),
    ("", "empty name"),
    (" Spaced ", "name with spaces"),
    ("X-Colon:In-Name", "v"),
    (":status", "200"),
    ("X-Line-Break", "first\r\nInjected: yes"),
    ("X-Nul", "a\0b"),
    ("X-Empty", ""),
]


def test_odd_headers_are_written_and_the_records_read(tmp_path: os.PathLike[str]) -> None:
    result = fetch_result(request_headers=[("Host", "example.com"), *ODD_HEADERS],
                          response_headers=[("Content-Type", "text/html"), *ODD_HEADERS])
    with WarcFileWriter(tmp_path, "crawl", 0) as writer:
        writer.write(result)

    [path] = finished_files(tmp_path)
    records = warcio_records(path)
    assert [headers["WARC-Type"] for headers, _, _ in records] \
        == ["warcinfo", "response", "request"]
    assert records[1][1] == result.body
    raw = b"".join(gzip_members(pathlib.Path(path).read_bytes()))
    assert raw.count(b"X-Latin-1: caf\xe9\r\n") == 2
    assert raw.count(b"X-Line-Break: first  Injected: yes\r\n") == 2
    assert b"Injected: yes\r\n" not in raw.replace(b"first  Injected", b"")


def test_fastwarc_reads_every_record_with_valid_digests(tmp_path: os.PathLike[str]) -> None:
    fastwarc = pytest.importorskip("fastwarc.warc")
    with WarcFileWriter(tmp_path, "crawl", 0) as writer:
        writer.write(fetch_result())
        writer.write(fetch_result(url="https://example.com/odd",
                                  response_headers=[("Content-Type", "text/plain"),
                                                    *ODD_HEADERS], truncated="time"))

    [path] = finished_files(tmp_path)
    seen = []
    with open(path, "rb") as stream:
        for record in fastwarc.ArchiveIterator(stream, parse_http=False):
            seen.append(record.headers["WARC-Type"])
            assert record.verify_block_digest(consume=False)  # before the HTTP headers are read
            if record.record_type != fastwarc.WarcRecordType.warcinfo:
                record.parse_http()
                assert record.verify_payload_digest(consume=False)
    assert seen == ["warcinfo", "response", "request", "response", "request"]


def test_rolling_at_tiny_size_gives_files_each_starting_with_warcinfo(
        tmp_path: os.PathLike[str]) -> None:
    writer = WarcFileWriter(tmp_path, "crawl", 3, max_file_bytes=1)
    for n in range(3):
        writer.write(fetch_result(url=f"https://example.com/{n}"))
        assert writer.current_path is None  # full at once, so already finalised
    writer.close()

    paths = finished_files(tmp_path)
    assert [FILE_NAME.match(os.path.basename(path)).groups() for path in paths] \
        == [("00003", "00000"), ("00003", "00001"), ("00003", "00002")]
    for n, path in enumerate(paths):
        assert verify_warc_file(path) == [("warcinfo", None),
                                          ("response", f"https://example.com/{n}"),
                                          ("request", f"https://example.com/{n}")]


def test_rolls_before_a_pair_would_exceed_the_limit(tmp_path: os.PathLike[str]) -> None:
    pair_size = len(encode_records(WarcRecordFactory().response_and_request(fetch_result())))
    with WarcFileWriter(tmp_path, "crawl", 0, max_file_bytes=3 * pair_size) as writer:
        for _ in range(5):
            writer.write(fetch_result())

    sizes = [len(verify_warc_file(path)) for path in finished_files(tmp_path)]
    assert sizes == [5, 5, 3]  # warcinfo + 2 pairs (a third would pass the limit), ...
    assert all(os.path.getsize(path) <= 3 * pair_size for path in finished_files(tmp_path))


def test_file_is_open_while_written_and_renamed_on_close(tmp_path: os.PathLike[str]) -> None:
    writer = WarcFileWriter(tmp_path, "crawl", 0)
    writer.write(fetch_result())

    open_path = writer.current_path
    assert open_path is not None
    assert open_path.endswith(".warc.gz.open")
    assert os.listdir(tmp_path) == [os.path.basename(open_path)]
    assert verify_warc_file(open_path)  # every pair is complete on disk as soon as written
    writer.close()
    writer.close()
    final_name = os.path.basename(open_path).removesuffix(".open")
    # The completed file gets its CDXJ index next to it (crawl/archive/cdxj.py).
    assert sorted(os.listdir(tmp_path)) == [final_name.removesuffix(".warc.gz") + ".cdxj",
                                            final_name]


def test_serial_continues_after_a_restart(tmp_path: os.PathLike[str]) -> None:
    for _ in range(2):
        with WarcFileWriter(tmp_path, "crawl", 1, clock=lambda: NOW_MS) as writer:
            writer.write(fetch_result())
    with WarcFileWriter(tmp_path, "crawl", 2, clock=lambda: NOW_MS) as writer:
        writer.write(fetch_result())

    assert sorted(name for name in os.listdir(tmp_path) if name.endswith(".warc.gz")) == [
        "crawl-20261122042140000-00001-00000.warc.gz",
        "crawl-20261122042140000-00001-00001.warc.gz",
        "crawl-20261122042140000-00002-00000.warc.gz",
    ]


def test_failed_disk_write_keeps_the_file_readable(tmp_path: os.PathLike[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    class DiskFull(io.FileIO):
        writes = 0

        def write(self, data: object) -> int:
            DiskFull.writes += 1
            if DiskFull.writes == 3:  # warcinfo, first pair, then half the second pair
                super().write(bytes(data)[: len(data) // 2])  # type: ignore[arg-type]
                raise OSError(errno.ENOSPC, "No space left on device")
            return super().write(data)  # type: ignore[arg-type]

    def open_failing(path: str, mode: str, *args: object, **kwargs: object) -> object:
        return DiskFull(path, mode) if mode == "xb" else open(path, mode, *args, **kwargs)

    monkeypatch.setattr(warc_writer, "open", open_failing, raising=False)
    writer = WarcFileWriter(tmp_path, "crawl", 0)
    writer.write(fetch_result(url="https://example.com/kept"))

    with pytest.raises(OSError, match="No space left"):
        writer.write(fetch_result(url="https://example.com/lost"))

    [path] = finished_files(tmp_path)
    assert verify_warc_file(path) == [("warcinfo", None),
                                      ("response", "https://example.com/kept"),
                                      ("request", "https://example.com/kept")]


def crashed_file(directory: os.PathLike[str], pairs: int, subtask: int = 0) -> str:
    """A finished file renamed back to ``.open``, as if its writer had died after ``pairs``."""
    # A writer that died wrote no index either.
    rng = random.Random(pairs)
    with WarcFileWriter(directory, "crawl", subtask, index=False) as writer:
        for n in range(pairs):
            writer.write(fetch_result(url=f"https://example.com/{n}", body=rng.randbytes(3000)))
    [path] = [p for p in finished_files(directory)
              if f"-{subtask:05d}-" in p and p.endswith(".warc.gz")]
    os.rename(path, path + ".open")
    return path + ".open"


def member_offsets(path: str) -> list[int]:
    data = pathlib.Path(path).read_bytes()
    offsets, start = [], 0
    while start < len(data):
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        decompressor.decompress(data[start:])
        offsets.append(start)
        start = len(data) - len(decompressor.unused_data)
    return offsets


@pytest.mark.parametrize("cut", ["trailer", "middle", "header"])
def test_recovery_keeps_complete_records_of_a_cut_file(tmp_path: os.PathLike[str],
                                                       cut: str) -> None:
    open_path = crashed_file(tmp_path, pairs=3)
    size = os.path.getsize(open_path)
    last_member = member_offsets(open_path)[-1]
    new_size = {"trailer": size - 3, "middle": (last_member + size) // 2,
                "header": last_member + 5}[cut]
    os.truncate(open_path, new_size)
    with pytest.raises(WarcFileError, match="incomplete gzip member"):
        verify_warc_file(open_path)

    [report] = recover_open_files(tmp_path)

    final_path = open_path.removesuffix(".open")
    assert report.final_path == final_path
    assert (report.records_kept, report.bytes_cut, report.deleted) \
        == (6, new_size - last_member, False)
    assert os.listdir(tmp_path) == [os.path.basename(final_path)]
    assert [kind for kind, _ in verify_warc_file(final_path)] \
        == ["warcinfo"] + ["response", "request"] * 2 + ["response"]
    assert recover_open_files(tmp_path) == []


def test_recovery_cuts_at_a_damaged_member(tmp_path: os.PathLike[str]) -> None:
    open_path = crashed_file(tmp_path, pairs=2)
    size = os.path.getsize(open_path)
    second_pair = member_offsets(open_path)[3]
    with open(open_path, "r+b") as stream:
        stream.seek(second_pair + 40)
        stream.write(b"\xff" * 8)

    [report] = recover_open_files(tmp_path)

    assert (report.records_kept, report.bytes_cut) == (3, size - second_pair)
    assert [kind for kind, _ in verify_warc_file(report.final_path)] \
        == ["warcinfo", "response", "request"]


def test_recovery_deletes_files_without_fetch_records(tmp_path: os.PathLike[str]) -> None:
    empty = tmp_path / "crawl-20261122042140000-00000-00007.warc.gz.open"
    empty.write_bytes(b"")
    info_only = crashed_file(tmp_path, pairs=1)
    os.truncate(info_only, member_offsets(info_only)[1] + 10)

    reports = recover_open_files(tmp_path)

    assert sorted((report.open_path, report.deleted, report.final_path) for report in reports) \
        == sorted([(str(empty), True, None), (info_only, True, None)])
    assert os.listdir(tmp_path) == []


def test_recovery_touches_only_the_subtask_asked_for(tmp_path: os.PathLike[str]) -> None:
    mine = crashed_file(tmp_path, pairs=1, subtask=4)
    other = crashed_file(tmp_path, pairs=1, subtask=5)

    [report] = recover_open_files(tmp_path, prefix="crawl", subtask_index=4)

    assert report.open_path == mine
    assert os.path.exists(other)
    assert recover_open_files(tmp_path, prefix="other", subtask_index=5) == []


def test_verify_raises_on_a_digest_mismatch(tmp_path: os.PathLike[str]) -> None:
    response, request = pair_bytes(fetch_result())
    tampered = response.replace(b"Hello", b"Hallo")
    path = tmp_path / "tampered.warc.gz"
    path.write_bytes(gzip.compress(tampered) + gzip.compress(request))

    with pytest.raises(WarcFileError, match="digest failed"):
        verify_warc_file(path)


def test_payload_digest_helper_matches_the_record() -> None:
    response, _ = pair_bytes(fetch_result())

    assert f"WARC-Payload-Digest: {sha1_digest(fetch_result().body)}\r\n".encode() in response


def test_pure_modules_do_not_import_pyflink() -> None:
    code = ("import sys, crawl.archive.warc, crawl.archive.crawl_log; "
            "sys.exit('pyflink' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def _ids() -> Callable[[], str]:
    counter = itertools.count()
    return lambda: f"<urn:uuid:{next(counter):08d}-0000-4000-8000-000000000000>"


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"ip_address": "", "truncated": "length"},
        {"http_version": "1.0", "http_reason": "", "method": "head"},
        {"request_headers": [("User-Agent", "x")], "response_headers": []},
        {"response_headers": [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked"),
                              ("Content-Length", "999"), ("X-Odd\r\nName", "v\x00al\u00e9")]},
        {"url": "http://h\u00e9.test/p a?q=\u00fc#frag", "body": b"\xff\xfe\x00binary"},
        {"response_headers": [("X-Bytes", b"caf\xe9".decode("utf-8", "surrogateescape"))]},
        {"started_ms": 0, "http_status": 304, "body": b""},
    ],
)
def test_encode_pair_is_byte_for_byte_the_warcio_encoding(changes: dict) -> None:
    fields = {
        "url": "http://example.test/a/b?c=d",
        "status": Status.FETCHED,
        "reason": "",
        "http_status": 200,
        "http_reason": "OK",
        "request_headers": [("Host", "example.test"), ("User-Agent", "pyflink-crawler/0.1")],
        "response_headers": [("Content-Type", "text/html; charset=utf-8")],
        "body": b"<html><a href='x'>x</a></html>" * 20,
        "ip_address": "192.0.2.7",
        "started_ms": 1_700_000_000_123,
        "duration_ms": 12,
    }
    result = FetchResult(**{**fields, **changes})
    clock = lambda: 1_700_000_000_999  # noqa: E731
    slow = WarcRecordFactory(clock=clock, new_record_id=_ids())
    fast = WarcRecordFactory(clock=clock, new_record_id=_ids())
    expected = encode_records(slow.response_and_request(result), 6)
    data, digest = fast.encode_pair(result, 6)
    assert data == expected
    assert digest == sha1_digest(result.body)


def test_a_metadata_record_follows_its_response(tmp_path: os.PathLike[str]) -> None:
    fields = [("via", "https://example.com/"), ("hopsFromSeed", "LL"), ("fetchTimeMs", "87"),
              ("outlink", "https://example.com/a L"), ("outlink", "https://example.com/\u00e9 L"),
              ("bad\r\nname", "line\r\nbreak")]
    with WarcFileWriter(tmp_path, "crawl", 0, new_record_id=record_ids()) as writer:
        writer.write(fetch_result(), fields)
        writer.write(fetch_result(url="https://example.com/plain"))  # no metadata asked for

    [path] = finished_files(tmp_path)
    assert [kind for kind, _ in verify_warc_file(path)] == [
        "warcinfo", "response", "request", "metadata", "response", "request"]
    records = warcio_records(path)  # block digests checked
    response, metadata = records[1][0], records[3][0]
    assert metadata["WARC-Concurrent-To"] == response["WARC-Record-ID"]
    assert metadata["WARC-Target-URI"] == response["WARC-Target-URI"]
    assert metadata["WARC-Date"] == response["WARC-Date"]
    assert metadata["Content-Type"] == "application/warc-fields"
    assert records[3][1].decode("utf-8").split("\r\n") == [
        "via: https://example.com/", "hopsFromSeed: LL", "fetchTimeMs: 87",
        "outlink: https://example.com/a L", "outlink: https://example.com/\u00e9 L",
        "bad  name: line  break", ""]
    fastwarc = pytest.importorskip("fastwarc.warc")
    with open(path, "rb") as stream:
        kinds = []
        for record in fastwarc.ArchiveIterator(stream, parse_http=False):
            kinds.append(record.headers["WARC-Type"])
            assert record.verify_block_digest(consume=False)
    assert kinds.count("metadata") == 1


def test_a_revisit_record_refers_to_the_first_capture_of_its_payload(
        tmp_path: os.PathLike[str]) -> None:
    first = fetch_result(url="https://example.com/a")
    again = fetch_result(url="https://mirror.example.com/a", started_ms=STARTED_MS + 5000)
    with WarcFileWriter(tmp_path, "crawl", 0) as writer:
        digest = writer.write(first)
        original = writer.last_capture
        assert original is not None
        assert writer.write(again, revisit_of=original) == digest
        assert writer.last_capture is not None
        assert writer.last_capture.record_id != original.record_id

    [path] = finished_files(tmp_path)
    assert [kind for kind, _ in verify_warc_file(path)] == [
        "warcinfo", "response", "request", "revisit", "request"]
    records = warcio_records(path)  # block digests checked
    response, revisit = records[1], records[3]
    headers = revisit[0]
    assert headers["WARC-Profile"] == (
        "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest")
    assert headers["WARC-Refers-To"] == response[0]["WARC-Record-ID"]
    assert headers["WARC-Refers-To-Target-URI"] == "https://example.com/a"
    assert headers["WARC-Refers-To-Date"] == response[0]["WARC-Date"]
    assert headers["WARC-Target-URI"] == "https://mirror.example.com/a"
    assert headers["WARC-Payload-Digest"] == response[0]["WARC-Payload-Digest"] == digest
    assert revisit[1] == b""  # the payload is not stored again
    assert revisit[2].get_statuscode() == "200"  # the response's own headers are
    assert records[4][0]["WARC-Concurrent-To"] == headers["WARC-Record-ID"]
    fastwarc = pytest.importorskip("fastwarc.warc")
    with open(path, "rb") as stream:
        for record in fastwarc.ArchiveIterator(stream, parse_http=False):
            assert record.verify_block_digest(consume=False)
