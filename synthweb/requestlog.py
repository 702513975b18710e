"""The server's request log: one JSON object per line, one line per request to a synthetic host.

Fields: ``start`` (epoch seconds when the request head was fully received), ``end`` (epoch
seconds when the last byte of the response was handed to the socket), ``host`` (lower-case, no
port), ``path`` (as requested, with the query), ``method``, ``status``, ``bytes`` (body bytes sent;
0 for HEAD), ``ua`` (the User-Agent header, empty if none). A line also has ``"aborted": true``
when the client had gone before a delayed response could be sent (or, with the hostile profile,
before a trickled or stalled one was finished: ``end`` is then when the connection was lost).
With the hostile profile (:mod:`synthweb.hostile`) a line may also have ``retry_at`` (epoch
seconds named by the ``Retry-After`` sent: the client must not come back to the host before)
and ``fault`` (the misbehaviour served: ``trickle``, ``reset``, ``stall``, ``private-address``
...). A conditional request's line has ``inm`` and ``ims``: the ``If-None-Match`` and
``If-Modified-Since`` values it sent. Requests to the server's own address (control and info
pages) are not logged.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import TextIO

__all__ = ["RequestLogWriter", "RequestRecord", "read_request_log"]


@dataclasses.dataclass(frozen=True, slots=True)
class RequestRecord:
    """One logged request (see the module docstring for the fields)."""

    start: float
    end: float
    host: str
    path: str
    method: str
    status: int
    bytes: int
    ua: str
    aborted: bool = False
    retry_at: float | None = None
    fault: str = ""
    inm: str | None = None
    ims: str | None = None

    @property
    def conditional(self) -> bool:
        """Whether the request carried a validator (If-None-Match or If-Modified-Since)."""
        return self.inm is not None or self.ims is not None

    @property
    def url(self) -> str:
        """The URL requested: host in canonical form, path and query as the client wrote them
        (its page identity is :func:`synthweb.urls.page_identity` of this)."""
        return f"http://{self.host}{self.path}"

    @property
    def duration(self) -> float:
        """Seconds from the request head received to the response written."""
        return self.end - self.start


def read_request_log(path: str | os.PathLike[str]) -> list[RequestRecord]:
    """The records of a request log, in the order written (roughly by ``end``).

    A last line cut short (the server still writing) is skipped.
    """
    records = []
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            if not line.endswith("\n"):
                break
            records.append(RequestRecord(**json.loads(line)))
    return records


class RequestLogWriter:
    """Buffers log lines in memory and writes them to ``stream`` on :meth:`flush`.

    The server calls :meth:`flush` on a timer and at stop; a line is never split across flushes.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lines: list[str] = []

    def write(
        self,
        *,
        start: float,
        end: float,
        host: str,
        path: str,
        method: str,
        status: int,
        body_bytes: int,
        ua: str,
        aborted: bool = False,
        retry_at: float | None = None,
        fault: str = "",
        if_none_match: str | None = None,
        if_modified_since: str | None = None,
    ) -> None:
        """Buffer one record."""
        record = {
            "start": start,
            "end": end,
            "host": host,
            "path": path,
            "method": method,
            "status": status,
            "bytes": body_bytes,
            "ua": ua,
        }
        if aborted:
            record["aborted"] = True
        if retry_at is not None:
            record["retry_at"] = retry_at
        if fault:
            record["fault"] = fault
        if if_none_match is not None:
            record["inm"] = if_none_match
        if if_modified_since is not None:
            record["ims"] = if_modified_since
        self._lines.append(json.dumps(record, ensure_ascii=False))

    def flush(self) -> None:
        """Write the buffered records and flush the stream."""
        if self._lines:
            self._stream.write("\n".join(self._lines) + "\n")
            self._lines.clear()
        self._stream.flush()

    def close(self) -> None:
        """Flush, then close the stream."""
        self.flush()
        self._stream.close()
