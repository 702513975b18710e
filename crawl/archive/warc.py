"""WARC/1.1 output: records from fetch results, rolling files, recovery, checks.

Three layers, each usable alone:

- :class:`WarcRecordFactory` turns a :class:`~crawl.model.FetchResult` into records (a
  ``response``, or a ``revisit`` when the payload was archived before, the ``request`` that
  produced it, and a ``metadata`` record about it) and builds ``warcinfo`` records. Time and
  record identity are injected, so the bytes it produces are reproducible in tests.
- :func:`encode_records` serialises records with warcio, each as its own gzip member.
- :class:`WarcFileWriter` appends record pairs to rolling ``.warc.gz`` files of one subtask,
  and writes each completed file's CDXJ index next to it (:mod:`crawl.archive.cdxj`);
  :func:`recover_open_files` finalises files a crashed writer left behind, and
  :func:`verify_warc_file` reads a file back and checks every record.

How a fetch result is stored
----------------------------
The fetcher hands us a parsed view of the exchange, not the bytes on the wire, so the HTTP
messages are reconstructed, and made self-consistent for readers (warcio, pywb, FastWARC):

- The body has already lost its ``Content-Encoding``, so a ``Content-Encoding`` header is stored
  as ``X-Crawler-Original-Content-Encoding`` and any ``Transfer-Encoding`` as
  ``X-Crawler-Original-Transfer-Encoding``; otherwise readers would try to gunzip or de-chunk
  the stored (plain) body and fail. ``Content-Length`` is set to the stored body length (added
  when absent); a different original value is kept as ``X-Crawler-Original-Content-Length``.
  Hence ``WARC-Payload-Digest`` is the digest of the decoded entity, the same for a page
  whether it was served gzipped or not (which is what duplicate detection wants).
- The request is written in origin form (``GET /path?query HTTP/1.1``) even when it went through
  a proxy; ``Proxy-Authorization`` and ``Proxy-Connection`` are left out (they concern the proxy,
  and the first is a credential), and ``Host`` is added from the URL if the client did not list
  it (HTTP/2 clients send ``:authority`` instead).
- Header names and values are written as UTF-8 with ``surrogateescape``, which gives back the
  exact wire bytes for clients that decode headers as UTF-8 with ``surrogateescape`` (aiohttp)
  and readable UTF-8 otherwise. CR, LF and NUL inside a name or value become spaces, and names
  lose surrounding whitespace, so one header cannot end the block or turn into two. warcio's
  own encoder is bypassed: it percent-encodes non-ASCII values (changing them) and raises on
  non-ASCII names and on surrogate-escaped values.
- Records are written response first, then request with ``WARC-Concurrent-To`` naming the
  response (the order of Heritrix and of warcio's ``write_request_response_pair``).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import hashlib
import io
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import metadata
from typing import BinaryIO
from urllib.parse import quote_from_bytes, urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordbuilder import RecordBuilder
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter
from zlib_ng import zlib_ng

from crawl.archive.cdxj import INDEX_PART_SUFFIX, FileIndex, cdxj_line, mime_of, remove_index_parts
from crawl.config import WarcSection
from crawl.model import FetchResult

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "NOT_MODIFIED_PROFILE",
    "REVISIT_PROFILE",
    "Capture",
    "EncodedPair",
    "RecoveredFile",
    "WarcFileError",
    "WarcFileWriter",
    "WarcRecordFactory",
    "encode_records",
    "escape_uri",
    "iso_timestamp_ms",
    "random_record_id",
    "recover_open_files",
    "sha1_digest",
    "verify_warc_file",
    "wall_clock_ms",
]

log = logging.getLogger(__name__)

#: ``warc.max_file_bytes``'s default.
DEFAULT_MAX_FILE_BYTES = WarcSection().max_file_bytes
OPEN_SUFFIX = ".open"
WARC_SUFFIX = ".warc.gz"
WARC_VERSION = "WARC/1.1"

#: Every printable ASCII character except space: what may stay as is in a URI we write.
_URI_SAFE = "".join(chr(code) for code in range(0x21, 0x7F))
_LINE_BREAKING = str.maketrans({"\r": " ", "\n": " ", "\0": " "})
#: ``{prefix}-{yyyyMMddHHmmssSSS}-{subtask}-{serial}.warc.gz[.open]``
_FILE_NAME = re.compile(r"^(?P<prefix>.+)-(?P<ts>\d{17})-(?P<subtask>\d{5,})-(?P<serial>\d{5,})"
                        r"\.warc\.gz(?P<open>\.open)?$")
_DROPPED_REQUEST_HEADERS = frozenset({"proxy-authorization", "proxy-connection"})
_READ_CHUNK = 1 << 20
_EMPTY_DIGEST = "sha1:" + base64.b32encode(hashlib.sha1(b"").digest()).decode("ascii")


def wall_clock_ms() -> int:
    """Milliseconds since the epoch, from the system clock (the default clock)."""
    return time.time_ns() // 1_000_000


def random_record_id() -> str:
    """A fresh ``<urn:uuid:...>`` WARC-Record-ID (the default record-id generator)."""
    return f"<urn:uuid:{uuid.uuid4()}>"


def iso_timestamp_ms(epoch_ms: int) -> str:
    """``2026-11-22T04:14:15.123Z``: UTC, millisecond precision (WARC/1.1 allows fractions)."""
    seconds, millis = divmod(epoch_ms, 1000)
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{millis:03d}Z"


def sha1_digest(data: bytes) -> str:
    """``sha1:BASE32`` of ``data``, the form of WARC-Payload-Digest that warcio writes."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def escape_uri(uri: str) -> str:
    """``uri`` with whitespace, control and non-ASCII characters percent-encoded (UTF-8).

    A valid URI comes back unchanged (existing ``%xx`` escapes are kept), so the value still
    matches what the rest of the crawl calls this URL; one with spaces becomes a single token.
    """
    return quote_from_bytes(_wire_bytes(uri), safe=_URI_SAFE)


def _wire_bytes(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # surrogates that surrogateescape did not produce
        return text.encode("utf-8", "replace")


def _one_line(text: str) -> str:
    return text.translate(_LINE_BREAKING)


def _warc_header_value(text: str) -> str:
    # warcio encodes WARC headers as strict UTF-8: surrogates would raise there.
    return _one_line(_wire_bytes(text).decode("utf-8", "replace"))


def _http_block(first_line: str, headers: Iterable[tuple[str, str]]) -> bytes:
    lines = [_wire_bytes(_one_line(first_line))]
    for name, value in headers:
        lines.append(_wire_bytes(_one_line(name).strip()) + b": " + _wire_bytes(_one_line(value)))
    return b"\r\n".join(lines) + b"\r\n\r\n"


class _EncodedHttpHeaders(StatusAndHeaders):
    """HTTP headers whose bytes were fixed in advance; warcio must not re-encode them."""

    def __init__(self, statusline: str, headers: list[tuple[str, str]], protocol: str,
                 block: bytes) -> None:
        super().__init__(statusline, headers, protocol=protocol)
        self.headers_buff = block

    def compute_headers_buffer(self, header_filter: object = None) -> None:
        """Keep the block given at construction (warcio calls this before writing)."""


def _origin_form(url: str) -> str:
    parts = urlsplit(url)
    target = parts.path or "/"
    if parts.query or "?" in url.partition("#")[0]:
        target += "?" + parts.query
    return escape_uri(target)


def _authority(url: str) -> str:
    netloc = urlsplit(url).netloc
    return netloc.rpartition("@")[2]


def _stored_request_headers(result: FetchResult) -> list[tuple[str, str]]:
    headers = [(name, value) for name, value in result.request_headers
               if name.strip().lower() not in _DROPPED_REQUEST_HEADERS]
    if not any(name.strip().lower() == "host" for name, _ in headers):
        headers.insert(0, ("Host", _authority(result.url)))
    return headers


def _stored_response_headers(result: FetchResult) -> list[tuple[str, str]]:
    stored_length = str(len(result.body))
    headers: list[tuple[str, str]] = []
    has_length = False
    for name, value in result.response_headers:
        key = name.strip().lower()
        if key == "content-encoding":
            headers.append(("X-Crawler-Original-Content-Encoding", value))
        elif key == "transfer-encoding":
            headers.append(("X-Crawler-Original-Transfer-Encoding", value))
        elif key == "content-length":
            if not has_length:
                headers.append((name, stored_length))
                has_length = True
            if value.strip() != stored_length:
                headers.append(("X-Crawler-Original-Content-Length", value))
        else:
            headers.append((name, value))
    if not has_length:
        headers.append(("Content-Length", stored_length))
    return headers


def _http_version(result: FetchResult) -> str:
    version = result.http_version.strip() or "1.1"
    return version if version.upper().startswith("HTTP/") else f"HTTP/{version}"


#: WARC 1.1's revisit profile for a payload already archived (section 6.7.2).
REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
#: WARC 1.1's revisit profile for a 304 Not Modified answer to a conditional request (6.7.3).
NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


@dataclasses.dataclass(frozen=True)
class Capture:
    """Where a payload was archived in full: what a revisit record refers to (``record_id``
    "" when not known: a 304's revisit refers to the URL's last capture by URI and date)."""

    target_uri: str
    warc_date: str
    record_id: str


@dataclasses.dataclass(frozen=True)
class EncodedPair:
    """A response/request pair as gzip members, and the response's fields for the index."""

    response: bytes
    request: bytes
    payload_digest: str
    warc_date: str
    target_uri: str
    content_type: str | None
    response_id: str


def _content_type(result: FetchResult) -> str | None:
    """The stored response's first Content-Type value as a reader parses it back."""
    for name, value in _stored_response_headers(result):
        if _one_line(name).strip().lower() == "content-type":
            return _wire_bytes(_one_line(value)).decode("utf-8", "replace").strip()
    return None


class WarcRecordFactory:
    """Builds WARC/1.1 records (warcio ``ArcWarcRecord``) from fetch results.

    ``clock`` (milliseconds since the epoch) dates warcinfo records and records of results
    without a start time; ``new_record_id`` returns ``<urn:uuid:...>`` identifiers. Both are
    injected so that tests can pin the exact bytes. Records hold a stream: write each once.
    """

    def __init__(self, clock: Callable[[], int] = wall_clock_ms,
                 new_record_id: Callable[[], str] = random_record_id) -> None:
        self._clock = clock
        self._new_record_id = new_record_id
        self._builder = RecordBuilder(warc_version=WARC_VERSION)

    def response_and_request(self, result: FetchResult) -> tuple[ArcWarcRecord, ArcWarcRecord]:
        """The ``response`` record, then the ``request`` record concurrent to it.

        Both are dated ``result.started_ms``. Raises ValueError when no HTTP response was
        received (``http_status <= 0``): such outcomes go to the crawl log only.
        """
        if result.http_status <= 0:
            raise ValueError(f"no HTTP response to archive for {result.url!r} "
                             f"(status {result.status.value}, http_status {result.http_status})")
        started_ms = result.started_ms if result.started_ms > 0 else self._clock()
        common = {
            "WARC-Date": iso_timestamp_ms(started_ms),
            "WARC-Target-URI": escape_uri(result.url),
        }
        if result.ip_address:
            common["WARC-IP-Address"] = _warc_header_value(result.ip_address)

        response_id = self._new_record_id()
        response_fields = {"WARC-Type": "response", "WARC-Record-ID": response_id, **common}
        if result.truncated:
            response_fields["WARC-Truncated"] = _warc_header_value(result.truncated)
        version = _http_version(result)
        statusline = f"{result.http_status} {result.http_reason}"
        response = self._http_record(
            "response", response_fields, result.body,
            _encoded_headers(statusline, _stored_response_headers(result), version,
                             first_line=f"{version} {statusline}"))

        request_fields = {"WARC-Type": "request", "WARC-Record-ID": self._new_record_id(),
                          **common, "WARC-Concurrent-To": response_id}
        method = result.method.strip().upper() or "GET"
        target_line = f"{_origin_form(result.url)} {version}"
        request = self._http_record(
            "request", request_fields, b"",
            _encoded_headers(target_line, _stored_request_headers(result), method,
                             first_line=f"{method} {target_line}"))
        return response, request

    def encode_pair(self, result: FetchResult, compress_level: int = 6) -> tuple[bytes, str]:
        """The ``response`` and ``request`` records of ``result``, serialised and gzipped
        member by member, and the response's payload digest.

        Byte for byte what :func:`encode_records` makes of :meth:`response_and_request` (a
        test holds them equal), written without warcio's record objects: 110 us instead of
        170 us for a 1 KB page (compression and digests are most of what is left).
        """
        pair = self.encode_pair_members(result, compress_level)
        return pair.response + pair.request, pair.payload_digest

    def encode_pair_members(self, result: FetchResult, compress_level: int = 6,
                            revisit_of: Capture | None = None,
                            payload_digest: str | None = None,
                            profile: str = REVISIT_PROFILE) -> EncodedPair:
        """:meth:`encode_pair`, its two gzip members apart, with what the index needs.

        With ``revisit_of`` (where the same payload was archived first) the first record is a
        ``revisit`` (WARC 1.1 6.7.2, profile identical-payload-digest): the HTTP headers of
        this response without its payload, referring to that capture; with ``profile``
        :data:`NOT_MODIFIED_PROFILE` the revisit of a 304 (the URL's last capture, which the
        server says is current). ``payload_digest``: the body's digest when the caller has it
        already (it is not computed again)."""
        if result.http_status <= 0:
            raise ValueError(f"no HTTP response to archive for {result.url!r} "
                             f"(status {result.status.value}, http_status {result.http_status})")
        started_ms = result.started_ms if result.started_ms > 0 else self._clock()
        common = (f"WARC-Date: {iso_timestamp_ms(started_ms)}\r\n"
                  f"WARC-Target-URI: {escape_uri(result.url)}\r\n")
        if result.ip_address:
            common += f"WARC-IP-Address: {_warc_header_value(result.ip_address)}\r\n"
        version = _http_version(result)
        statusline = f"{result.http_status} {result.http_reason}"
        response_block = _http_block(f"{version} {statusline}", _stored_response_headers(result))
        payload_digest = payload_digest or sha1_digest(result.body)
        response_id = self._new_record_id()
        if revisit_of is None:
            response_block += result.body
            response_head = (f"{WARC_VERSION}\r\nWARC-Type: response\r\n"
                             f"WARC-Record-ID: {response_id}\r\n{common}")
            if result.truncated:
                response_head += f"WARC-Truncated: {_warc_header_value(result.truncated)}\r\n"
        else:
            refers_to = (f"WARC-Refers-To: {revisit_of.record_id}\r\n"
                         if revisit_of.record_id else "")
            response_head = (f"{WARC_VERSION}\r\nWARC-Type: revisit\r\n"
                             f"WARC-Record-ID: {response_id}\r\n{common}"
                             f"WARC-Profile: {profile}\r\n{refers_to}"
                             f"WARC-Refers-To-Target-URI: {revisit_of.target_uri}\r\n"
                             f"WARC-Refers-To-Date: {revisit_of.warc_date}\r\n")
        method = result.method.strip().upper() or "GET"
        request_block = _http_block(f"{method} {_origin_form(result.url)} {version}",
                                    _stored_request_headers(result))
        request_head = (f"{WARC_VERSION}\r\nWARC-Type: request\r\n"
                        f"WARC-Record-ID: {self._new_record_id()}\r\n{common}"
                        f"WARC-Concurrent-To: {response_id}\r\n")
        members = []
        for head, block, payload, kind in (
            (response_head, response_block, payload_digest, "response"),
            (request_head, request_block, _EMPTY_DIGEST, "request"),
        ):
            record = b"".join((
                (f"{head}WARC-Payload-Digest: {payload}\r\n"
                 f"WARC-Block-Digest: {sha1_digest(block)}\r\n"
                 f"Content-Type: application/http; msgtype={kind}\r\n"
                 f"Content-Length: {len(block)}\r\n\r\n").encode(),
                block,
                b"\r\n\r\n",
            ))
            members.append(_gzipped(record, compress_level))
        return EncodedPair(members[0], members[1], payload_digest, iso_timestamp_ms(started_ms),
                           escape_uri(result.url), _content_type(result), response_id)

    def encode_metadata(self, pair: EncodedPair, fields: Iterable[tuple[str, str]],
                        compress_level: int = 6) -> bytes:
        """A ``metadata`` record about the response of ``pair`` (same target URI and date,
        ``WARC-Concurrent-To`` it) whose ``application/warc-fields`` block lists ``fields``
        in order, gzipped as one member."""
        return _metadata_record(self._new_record_id(), pair.warc_date, pair.target_uri,
                                ("WARC-Concurrent-To", pair.response_id), fields, compress_level)

    def encode_note(self, target_uri: str, warc_date: str, refers_to: str,
                    fields: Iterable[tuple[str, str]], compress_level: int = 6) -> bytes:
        """A ``metadata`` record about a record written elsewhere (``WARC-Refers-To`` it, with
        its target URI and date), whose ``application/warc-fields`` block lists ``fields``,
        gzipped as one member."""
        return _metadata_record(self._new_record_id(), _warc_header_value(warc_date),
                                escape_uri(target_uri),
                                ("WARC-Refers-To", _warc_header_value(refers_to)), fields,
                                compress_level)

    def warcinfo(self, filename: str, fields: Mapping[str, str]) -> ArcWarcRecord:
        """A ``warcinfo`` record for file ``filename`` whose block lists ``fields`` in order.

        Empty values are left out; line breaks inside a value become spaces.
        """
        block = "".join(f"{_one_line(name).strip()}: {_one_line(str(value))}\r\n"
                        for name, value in fields.items() if value not in (None, ""))
        payload = block.encode("utf-8", "replace")
        headers = StatusAndHeaders("", [
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", self._new_record_id()),
            ("WARC-Date", iso_timestamp_ms(self._clock())),
            ("WARC-Filename", _warc_header_value(filename)),
        ], protocol=WARC_VERSION)
        return self._builder.create_warc_record("", "warcinfo", payload=io.BytesIO(payload),
                                                length=len(payload), warc_headers=headers)

    def _http_record(self, record_type: str, fields: dict[str, str], payload: bytes,
                     http_headers: StatusAndHeaders) -> ArcWarcRecord:
        # Our own digest saves warcio a second pass over the body; same algorithm and form.
        fields["WARC-Payload-Digest"] = sha1_digest(payload)
        return self._builder.create_warc_record(
            fields["WARC-Target-URI"], record_type, payload=io.BytesIO(payload),
            length=len(payload), warc_headers_dict=fields, http_headers=http_headers)


def _gzipped(data: bytes, level: int = 6) -> bytes:
    """``data`` as one gzip member. zlib-ng's deflate: at level 6 its output is as small as
    zlib's and takes two thirds of the time on a page of 50 KB (BENCHMARKS.md, "zlib-ng")."""
    compressor = zlib_ng.compressobj(level, zlib_ng.DEFLATED, 16 + zlib_ng.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _metadata_record(record_id: str, warc_date: str, target_uri: str, link: tuple[str, str],
                     fields: Iterable[tuple[str, str]], compress_level: int) -> bytes:
    """A gzipped ``metadata`` record whose ``application/warc-fields`` block lists ``fields``,
    tied to another record by the ``link`` header (name, value); values already WARC-safe."""
    block = "".join(f"{_one_line(name).strip()}: {_one_line(value)}\r\n"
                    for name, value in fields).encode("utf-8", "replace")
    head = (f"{WARC_VERSION}\r\nWARC-Type: metadata\r\n"
            f"WARC-Record-ID: {record_id}\r\n"
            f"WARC-Date: {warc_date}\r\n"
            f"WARC-Target-URI: {target_uri}\r\n"
            f"{link[0]}: {link[1]}\r\n"
            f"WARC-Block-Digest: {sha1_digest(block)}\r\n"
            "Content-Type: application/warc-fields\r\n"
            f"Content-Length: {len(block)}\r\n\r\n")
    return _gzipped(head.encode() + block + b"\r\n\r\n", compress_level)


def _encoded_headers(statusline: str, headers: list[tuple[str, str]], protocol: str,
                     first_line: str) -> _EncodedHttpHeaders:
    return _EncodedHttpHeaders(statusline, headers, protocol, _http_block(first_line, headers))


def encode_records(records: Iterable[ArcWarcRecord], compress_level: int = 6) -> bytes:
    """The records serialised by warcio, each compressed as its own gzip member.

    We gzip rather than warcio because warcio always uses level 9, several times slower than
    the default 6 on HTML for a few percent of size.
    """
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=False, warc_version=WARC_VERSION)
    members = []
    for record in records:
        buffer.seek(0)
        buffer.truncate()
        writer.write_record(record)
        members.append(_gzipped(buffer.getvalue(), compress_level))
    return b"".join(members)


def _software() -> str:
    try:
        return f"pyflink-crawler/{metadata.version('pyflink-crawler')}"
    except metadata.PackageNotFoundError:
        return "pyflink-crawler"


def _file_timestamp(epoch_ms: int) -> str:
    seconds, millis = divmod(epoch_ms, 1000)
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return f"{moment:%Y%m%d%H%M%S}{millis:03d}"


class WarcFileWriter:
    """Appends record pairs to rolling ``.warc.gz`` files; one writer per subtask.

    Files are named ``{prefix}-{yyyyMMddHHmmssSSS}-{subtask:05d}-{serial:05d}.warc.gz`` (UTC
    time of the file's start), carry an ``.open`` suffix while being written and are renamed
    when complete. The serial continues after the highest one already in ``directory`` for this
    prefix and subtask, so it stays unique across restarts. Each file starts with a ``warcinfo``
    record: software, hostname, format, conformsTo, ``robots: obey``, then ``warcinfo`` (which
    may override those). A file is rolled before a pair would take it past ``max_file_bytes``
    (a single larger pair gets a file of its own) and as soon as it reaches it.

    Each pair goes to the operating system before ``write`` returns, so a crash of the process
    leaves at most one incomplete gzip member at the end of the ``.open`` file, which
    :func:`recover_open_files` cuts off. Completed files are fsynced before their rename.
    Run that recovery for this subtask before creating the writer. Not thread-safe.
    """

    def __init__(self, directory: str | os.PathLike[str], prefix: str, subtask_index: int,
                 max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                 warcinfo: Mapping[str, str] | None = None, *,
                 clock: Callable[[], int] = wall_clock_ms,
                 new_record_id: Callable[[], str] = random_record_id,
                 compress_level: int = 6,
                 index: bool = True,
                 index_memory_lines: int = 20_000) -> None:
        if max_file_bytes <= 0:
            raise ValueError(f"max_file_bytes must be positive, got {max_file_bytes}")
        if subtask_index < 0:
            raise ValueError(f"subtask_index must not be negative, got {subtask_index}")
        self._directory = os.fspath(directory)
        self._prefix = prefix
        self._subtask_index = subtask_index
        self._max_file_bytes = max_file_bytes
        self._warcinfo_fields = {
            "software": _software(),
            "hostname": socket.gethostname(),
            "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/"
                          "warc-format/warc-1.1/",
            "robots": "obey",
            **(warcinfo or {}),
        }
        self._clock = clock
        self._factory = WarcRecordFactory(clock, new_record_id)
        self._compress_level = compress_level
        os.makedirs(self._directory, exist_ok=True)
        self._next_serial = self._highest_serial() + 1
        self._file: io.FileIO | None = None
        self._final_path = ""
        self._size = 0
        self._pairs = 0
        self._index = FileIndex(index_memory_lines) if index else None
        #: Where the last :meth:`write` put its response (or revisit) record.
        self.last_capture: Capture | None = None

    @property
    def current_path(self) -> str | None:
        """The ``.open`` path being written, or None between files."""
        return self._final_path + OPEN_SUFFIX if self._file is not None else None

    def write(self, result: FetchResult,
              metadata: Iterable[tuple[str, str]] | None = None,
              revisit_of: Capture | None = None, payload_digest: str | None = None,
              profile: str = REVISIT_PROFILE) -> str:
        """Append the response/request pair of ``result`` (and, given ``metadata`` fields, a
        metadata record about the response), opening or rolling files as needed. With
        ``revisit_of`` the response is written as a revisit record referring to that capture
        of the same payload, or with ``profile`` :data:`NOT_MODIFIED_PROFILE` the URL's last
        capture (:meth:`WarcRecordFactory.encode_pair_members`).

        Returns the payload digest (``sha1:BASE32``) of the response; :attr:`last_capture`
        says where it went. Raises ValueError when ``result`` has no HTTP response. If the disk
        write fails, the file is cut back to its last complete pair and finalised, and the
        error propagates.
        """
        pair = self._factory.encode_pair_members(result, self._compress_level, revisit_of,
                                                 payload_digest, profile)
        extra = (self._factory.encode_metadata(pair, metadata, self._compress_level)
                 if metadata is not None else b"")
        size = len(pair.response) + len(pair.request) + len(extra)
        if self._file is not None and self._pairs and self._size + size > self._max_file_bytes:
            self._finish_file()
        if self._file is None:
            self._start_file()
        offset = self._size
        self._append(pair.response + pair.request + extra)
        self._pairs += 1
        self.last_capture = Capture(pair.target_uri, pair.warc_date, pair.response_id)
        if self._index is not None:
            mime = "warc/revisit" if revisit_of is not None else mime_of(pair.content_type)
            self._index.add(cdxj_line(
                pair.target_uri, pair.warc_date, mime=mime,
                status=str(result.http_status), digest=pair.payload_digest,
                length=len(pair.response), offset=offset,
                filename=os.path.basename(self._final_path),
            ))
        if self._size >= self._max_file_bytes:
            self._finish_file()
        return pair.payload_digest

    def write_note(self, target_uri: str, warc_date: str, refers_to: str,
                   fields: Iterable[tuple[str, str]]) -> None:
        """Append a ``metadata`` record about a record written elsewhere
        (:meth:`WarcRecordFactory.encode_note`), opening or rolling files as needed."""
        record = self._factory.encode_note(target_uri, warc_date, refers_to, fields,
                                           self._compress_level)
        if self._file is not None and self._pairs and self._size + len(record) > \
                self._max_file_bytes:
            self._finish_file()
        if self._file is None:
            self._start_file()
        self._append(record)
        self._pairs += 1
        if self._size >= self._max_file_bytes:
            self._finish_file()

    def close(self) -> None:
        """Finalise the current file, if any. The writer may be used again afterwards."""
        if self._file is not None:
            self._finish_file()

    def __enter__(self) -> WarcFileWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _highest_serial(self) -> int:
        highest = -1
        for name in os.listdir(self._directory):
            match = _FILE_NAME.match(name)
            if (match and match["prefix"] == self._prefix
                    and int(match["subtask"]) == self._subtask_index):
                highest = max(highest, int(match["serial"]))
        return highest

    def _start_file(self) -> None:
        started_ms = self._clock()
        name = (f"{self._prefix}-{_file_timestamp(started_ms)}-{self._subtask_index:05d}-"
                f"{self._next_serial:05d}{WARC_SUFFIX}")
        self._next_serial += 1
        self._final_path = os.path.join(self._directory, name)
        # Unbuffered: after a failed write no stale buffer may land behind the truncation.
        self._file = open(self._final_path + OPEN_SUFFIX, "xb", buffering=0)
        self._size = 0
        self._pairs = 0
        if self._index is not None:
            self._index.start(self._final_path + OPEN_SUFFIX)
        self._append(encode_records([self._factory.warcinfo(name, self._warcinfo_fields)],
                                    self._compress_level))

    def _append(self, data: bytes) -> None:
        assert self._file is not None
        try:
            remaining = memoryview(data)
            while remaining:
                remaining = remaining[self._file.write(remaining):]
        except OSError:
            self._salvage_file()
            raise
        self._size += len(data)

    def _salvage_file(self) -> None:
        # A partial member mid-file would hide every later record from readers: cut it now.
        assert self._file is not None
        open_path = self._final_path + OPEN_SUFFIX
        try:
            self._file.truncate(self._size)
            if self._size:
                self._finish_file()
            else:
                self._file.close()
                self._file = None
                os.remove(open_path)
        except OSError:
            log.exception("could not finalise %s; recover_open_files will", open_path)
            if self._file is not None:
                self._file.close()
            self._file = None

    def _finish_file(self) -> None:
        assert self._file is not None
        file, self._file = self._file, None
        try:
            os.fsync(file.fileno())
        finally:
            file.close()
        os.rename(self._final_path + OPEN_SUFFIX, self._final_path)
        if self._index is not None:
            try:
                self._index.write(self._final_path)
            except OSError:
                # The WARC file is complete; build_index indexes a file without an index.
                log.exception("could not write the index of %s", self._final_path)
                self._index.clear()


class WarcFileError(Exception):
    """A WARC file that is not a sequence of complete, intact records."""

    def __init__(self, message: str, path: str, offset: int) -> None:
        super().__init__(f"{path} at offset {offset}: {message}")
        self.path = path
        self.offset = offset


class _BadMember(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def _gzip_members(stream: BinaryIO) -> Iterator[tuple[int, int, bytes]]:
    """``(start, end, decompressed)`` per gzip member; raises _BadMember at the first bad one.

    warcio cannot be asked this: it reads a member cut short without complaint (see
    :func:`verify_warc_file`).
    """
    start = 0
    pending = b""
    while True:
        if not pending:
            pending = stream.read(_READ_CHUNK)
            if not pending:
                return
        decompressor = zlib_ng.decompressobj(16 + zlib_ng.MAX_WBITS)
        output = []
        size = 0
        while not decompressor.eof:
            if not pending:
                pending = stream.read(_READ_CHUNK)
                if not pending:
                    raise _BadMember("incomplete gzip member", start)
            try:
                output.append(decompressor.decompress(pending))
            except zlib_ng.error as error:
                raise _BadMember(f"not a valid gzip member ({error})", start) from error
            used = len(pending) - len(decompressor.unused_data)
            size += used
            pending = decompressor.unused_data
        yield start, start + size, b"".join(output)
        start += size


def _whole_records(data: bytes, offset: int) -> list[tuple[str, str | None]]:
    """The records in one decompressed member, checked whole and digest-correct by warcio."""
    found = []
    try:
        records = ArchiveIterator(io.BytesIO(data), check_digests="raise")
        for record in records:
            declared = record.rec_headers.get_header("Content-Length")
            while record.raw_stream.read(_READ_CHUNK):
                pass
            if declared is None or getattr(record.raw_stream, "limit", 1) != 0:
                raise _BadMember(f"{record.rec_type} record shorter than its Content-Length",
                                 offset)
            found.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI")))
    except ArchiveLoadFailed as error:
        raise _BadMember(str(error), offset) from error
    if not found:
        raise _BadMember("gzip member holds no WARC record", offset)
    if not data.endswith(b"\r\n\r\n"):
        raise _BadMember("record not followed by CRLF CRLF", offset)
    return found


def verify_warc_file(path: str | os.PathLike[str]) -> list[tuple[str, str | None]]:
    """``(record type, target URI)`` of every record of a ``.warc.gz`` file, in order.

    Raises :class:`WarcFileError` (with the offset) on a digest mismatch, a record shorter
    than its Content-Length or an incomplete gzip member. Each gzip member is checked on its
    own, then warcio's ``ArchiveIterator`` must read the same records from the whole file.
    Both are needed: warcio reads a member cut short without complaint, and its digest check
    only fires once a record has been read to its full length. O(file size), two passes.
    """
    path = os.fspath(path)
    records: list[tuple[str, str | None]] = []
    with open(path, "rb") as stream:
        try:
            for start, _end, data in _gzip_members(stream):
                records.extend(_whole_records(data, start))
        except _BadMember as error:
            raise WarcFileError(str(error), path, error.offset) from error
    with open(path, "rb") as stream:
        try:
            whole = [(record.rec_type, record.rec_headers.get_header("WARC-Target-URI"))
                     for record in ArchiveIterator(stream, check_digests="raise")]
        except ArchiveLoadFailed as error:
            raise WarcFileError(str(error), path, 0) from error
    if whole != records:
        raise WarcFileError("warcio reads other records from the whole file", path, 0)
    return records


@dataclasses.dataclass(frozen=True, slots=True)
class RecoveredFile:
    """What :func:`recover_open_files` did with one ``.open`` file."""

    open_path: str
    #: The finalised file; None if the file was deleted or could not be renamed.
    final_path: str | None
    #: Complete records kept, the warcinfo record included.
    records_kept: int
    #: Bytes cut from the end (an incomplete or damaged member and everything after it).
    bytes_cut: int
    #: True when nothing but (at most) a warcinfo record survived and the file was removed.
    deleted: bool


def recover_open_files(directory: str | os.PathLike[str], prefix: str | None = None,
                       subtask_index: int | None = None) -> list[RecoveredFile]:
    """Finalise the ``.warc.gz.open`` files a crashed writer left in ``directory``.

    Keeps every complete record: the file is cut at the first gzip member that is incomplete
    or does not hold whole, digest-correct records, then renamed to its final name. A file
    left with no record besides warcinfo is deleted. A file whose final name already exists
    is left alone and reported with ``final_path=None``. The index parts of a file being
    written (:class:`crawl.archive.cdxj.FileIndex`) are removed: the file has no index until
    :func:`crawl.archive.cdxj.build_index` makes one by reading it. Filter by ``prefix`` and
    ``subtask_index`` so as not to touch files that live writers of other subtasks are
    writing. Safe to run again after a crash during recovery. O(total size of the files).
    """
    directory = os.fspath(directory)
    recovered = []
    names = sorted(os.listdir(directory))
    for name in names:
        open_name, is_part, _ = name.partition(INDEX_PART_SUFFIX)
        match = _FILE_NAME.match(open_name)
        if not match or not match["open"]:
            continue
        if prefix is not None and match["prefix"] != prefix:
            continue
        if subtask_index is not None and int(match["subtask"]) != subtask_index:
            continue
        if not is_part:
            recovered.append(_recover_file(os.path.join(directory, name)))
            remove_index_parts(directory, name)
        elif not os.path.exists(os.path.join(directory, open_name)):
            # Left by a writer stopped after the file's rename, before its index was written
            # (build_index indexes such a file by reading it), or removed just above.
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(directory, name))
    return recovered


def _recover_file(open_path: str) -> RecoveredFile:
    final_path = open_path.removesuffix(OPEN_SUFFIX)
    kept_end = 0
    record_types: list[str] = []
    with open(open_path, "rb") as stream:
        try:
            for start, end, data in _gzip_members(stream):
                record_types.extend(kind for kind, _uri in _whole_records(data, start))
                kept_end = end
        except _BadMember as error:
            log.warning("%s: cutting at offset %d: %s", open_path, error.offset, error)
    size = os.path.getsize(open_path)
    if all(kind == "warcinfo" for kind in record_types):
        os.remove(open_path)
        return RecoveredFile(open_path, None, len(record_types), size - kept_end, deleted=True)
    if kept_end < size:
        with open(open_path, "r+b") as stream:
            stream.truncate(kept_end)
            os.fsync(stream.fileno())
    if os.path.exists(final_path):
        log.error("%s: not renamed, %s already exists", open_path, final_path)
        return RecoveredFile(open_path, None, len(record_types), size - kept_end, deleted=False)
    os.rename(open_path, final_path)
    return RecoveredFile(open_path, final_path, len(record_types), size - kept_end, deleted=False)
