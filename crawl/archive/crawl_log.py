"""The crawl log: one line per fetch attempt, robots denial or rejection, in Heritrix's spirit.

Columns, separated by single spaces; ``-`` stands for an empty value::

    timestamp code size url hops via content_type duration_ms payload_digest status reason
    2026-11-22T04:14:15.123Z 200 51 http://a.ex/x L http://a.ex/ text/html 87 sha1:XZ6 FETCHED -
    2026-11-22T04:14:15.456Z -9998 - http://a.ex/y L http://a.ex/ - 0 - ROBOTS_DENIED robots:no

- ``timestamp``: UTC with milliseconds, when the fetch ended (start + duration), or when the
  line was logged for outcomes without a fetch.
- ``code``: :func:`crawl.status.crawl_log_code` (HTTP status, or negative without a response).
- ``size``: stored body bytes, ``-`` without a response.
- ``url`` and ``via``: whitespace, control and non-ASCII characters percent-encoded.
- ``hops``: Heritrix hop path (``-`` for a seed); ``content_type``: media type without
  parameters; ``payload_digest``: ``sha1:BASE32`` of the body, as in WARC-Payload-Digest.
- ``status``: the :class:`~crawl.status.Status` value; ``reason``: its machine-readable reason.

No column ever contains a space: in text columns every whitespace or control character becomes
``_``. A text column whose whole value is ``-`` reads back as empty.
"""

from __future__ import annotations

import calendar
import datetime
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from crawl.archive.warc import escape_uri, iso_timestamp_ms, sha1_digest, wall_clock_ms
from crawl.model import FetchResult
from crawl.status import Status, crawl_log_code

__all__ = ["COLUMNS", "CrawlLogWriter", "format_line", "format_result_line", "parse_line"]

COLUMNS = ("timestamp", "code", "size", "url", "hops", "via", "content_type", "duration_ms",
           "payload_digest", "status", "reason")
_EMPTY = "-"


def _token(text: str) -> str:
    if not text:
        return _EMPTY
    return "".join("_" if char.isspace() or not char.isprintable() else char for char in text)


def _uri(text: str) -> str:
    return escape_uri(text) if text else _EMPTY


def _value(column: str) -> str:
    return "" if column == _EMPTY else column


def format_line(*, timestamp_ms: int, status: Status, url: str, http_status: int = 0,
                size: int | None = None, hops: str = "", via: str = "", content_type: str = "",
                duration_ms: int = 0, payload_digest: str = "", reason: str = "") -> str:
    """One crawl log line, without its line break. Pure."""
    return " ".join((
        iso_timestamp_ms(timestamp_ms),
        str(crawl_log_code(status, http_status)),
        _EMPTY if size is None else str(size),
        _uri(url),
        _token(hops),
        _uri(via),
        _token(content_type),
        str(duration_ms),
        _token(payload_digest),
        status.value,
        _token(reason),
    ))


def format_result_line(result: FetchResult, *, timestamp_ms: int,
                       payload_digest: str | None = None, reason: str | None = None) -> str:
    """The line for ``result``; the body's digest is computed unless given (no response: -);
    ``reason`` in place of the result's own."""
    has_response = result.http_status > 0
    if payload_digest is None:
        payload_digest = sha1_digest(result.body) if has_response else ""
    return format_line(
        timestamp_ms=timestamp_ms, status=result.status, url=result.url,
        http_status=result.http_status, size=len(result.body) if has_response else None,
        hops=result.hops, via=result.via, content_type=result.content_type,
        duration_ms=result.duration_ms, payload_digest=payload_digest,
        reason=result.reason if reason is None else reason)


def parse_line(line: str) -> dict[str, Any]:
    """The fields of a line: :func:`format_line`'s keyword arguments plus ``code``.

    ``format_line(**fields_without_code)`` gives the line back. Raises ValueError on a line
    that does not have the 11 columns or whose numbers, time or status do not parse.
    """
    columns = line.rstrip("\r\n").split(" ")
    if len(columns) != len(COLUMNS):
        raise ValueError(f"crawl log line has {len(columns)} columns, expected "
                         f"{len(COLUMNS)}: {line!r}")
    fields = dict(zip(COLUMNS, columns, strict=True))
    code = int(fields["code"])
    return {
        "timestamp_ms": _parse_timestamp(fields["timestamp"]),
        "code": code,
        "http_status": max(code, 0),
        "size": None if fields["size"] == _EMPTY else int(fields["size"]),
        "url": _value(fields["url"]),
        "hops": _value(fields["hops"]),
        "via": _value(fields["via"]),
        "content_type": _value(fields["content_type"]),
        "duration_ms": int(fields["duration_ms"]),
        "payload_digest": _value(fields["payload_digest"]),
        "status": Status(fields["status"]),
        "reason": _value(fields["reason"]),
    }


def _parse_timestamp(text: str) -> int:
    if not (text.endswith("Z") and len(text) == 24 and text[19] == "."):
        raise ValueError(f"crawl log timestamp is not yyyy-MM-ddTHH:mm:ss.SSSZ: {text!r}")
    moment = datetime.datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")
    return calendar.timegm(moment.timetuple()) * 1000 + int(text[20:23])


class CrawlLogWriter:
    """Appends crawl log lines to one file (one per subtask, named by the caller).

    Lines are buffered and flushed when a write finds the last flush ``flush_interval_s`` or
    more ago, on :meth:`flush`, and on :meth:`close`. With ``background_flush`` a daemon thread
    also flushes pending lines every ``flush_interval_s``, so no line waits longer than about
    that even when no more lines come. ``clock`` (epoch ms) dates lines of outcomes without a
    fetch; ``monotonic`` (seconds) times the flushes. Thread-safe.
    """

    def __init__(self, path: str | os.PathLike[str], *, flush_interval_s: float = 1.0,
                 background_flush: bool = True, clock: Callable[[], int] = wall_clock_ms,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._flush_interval_s = flush_interval_s
        self._clock = clock
        self._monotonic = monotonic
        self._lock = threading.Lock()
        # backslashreplace: a lone surrogate in a reason must not lose the whole line.
        self._file: TextIO | None = open(path, "a", encoding="utf-8",
                                         errors="backslashreplace", newline="\n")
        self._pending = False
        self._last_flush = monotonic()
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
        if background_flush:
            self._flusher = threading.Thread(target=self._flush_periodically,
                                             name=f"crawl-log-flush:{path}", daemon=True)
            self._flusher.start()

    def log(self, result: FetchResult, payload_digest: str | None = None,
            reason: str | None = None) -> None:
        """Append the line for ``result`` (see :func:`format_result_line`); ``reason``, when
        given, is what the crawl made of a response the fetch found nothing wrong with (a
        soft 404)."""
        if result.started_ms > 0:
            timestamp_ms = result.started_ms + result.duration_ms
        else:
            timestamp_ms = self._clock()
        self.write_line(format_result_line(result, timestamp_ms=timestamp_ms,
                                           payload_digest=payload_digest, reason=reason))

    def log_refusal(self, url: str, hops: str, via: str, reason: str) -> None:
        """Append the line of a URL the crawl refused to enter (REJECTED, dated now)."""
        self.write_line(format_line(timestamp_ms=self._clock(), status=Status.REJECTED, url=url,
                                    hops=hops, via=via, reason=reason))

    def write_line(self, line: str) -> None:
        """Append one already formatted line. Raises ValueError after :meth:`close`."""
        with self._lock:
            if self._file is None:
                raise ValueError("crawl log writer is closed")
            self._file.write(line + "\n")
            self._pending = True
            if self._monotonic() - self._last_flush >= self._flush_interval_s:
                self._flush_locked()

    def flush(self) -> None:
        """Push every line written so far to the operating system."""
        with self._lock:
            if self._file is not None:
                self._flush_locked()

    def close(self) -> None:
        """Flush and close the file and stop the flusher thread. Idempotent."""
        self._stop.set()
        if self._flusher is not None and self._flusher is not threading.current_thread():
            self._flusher.join()
        with self._lock:
            if self._file is not None:
                self._flush_locked()
                self._file.close()
                self._file = None

    def __enter__(self) -> CrawlLogWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _flush_locked(self) -> None:
        assert self._file is not None
        self._file.flush()
        self._pending = False
        self._last_flush = self._monotonic()

    def _flush_periodically(self) -> None:
        while not self._stop.wait(self._flush_interval_s):
            with self._lock:
                if self._file is not None and self._pending:
                    self._flush_locked()
