"""CDXJ index of the WARC output: what pywb and the other web-archive tools look captures up in.

One line per ``response``, ``revisit``, ``resource`` or ``metadata`` record (not metadata of
type ``application/warc-fields``: no capture to replay), as webrecorder's cdxj-indexer writes
it, field for field (the tests compare the two on the same files)::

    com,example)/a?b=1 20261122141747 {"url": "http://example.com/a?b=1", "mime": "text/html",
        "status": "200", "digest": "sha1:...", "length": "1043", "offset": "312",
        "filename": "crawl-...-00000-00001.warc.gz"}

The key is the URL's SURT (Sort-friendly URI Reordering Transform) made by the ``surt``
package, the Internet Archive's reference implementation that pywb canonicalises lookups with:
a key made any other way would not be found. Lines sort by key, then timestamp.

The WARC writer indexes its records as it writes them (it knows each gzip member's offset and
length: nothing is read back) and writes ``<file>.cdxj`` next to a WARC file when it completes
it (:class:`FileIndex`). :func:`build_index` merges the files' indexes into one (``python -m
job index``, and the launcher at the end of a crawl), indexing by reading any WARC file that
has none (a file recovered after a crash) with :func:`index_warc_file`.
"""

from __future__ import annotations

import heapq
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import surt
from warcio.archiveiterator import ArchiveIterator

__all__ = [
    "INDEX_SUFFIX",
    "FileIndex",
    "build_index",
    "cdxj_line",
    "index_path_of",
    "index_warc_file",
    "mime_of",
    "timestamp14",
    "url_key",
]

INDEX_SUFFIX = ".cdxj"
_WARC_SUFFIX = ".warc.gz"
_INDEXED_TYPES = ("response", "revisit", "resource", "metadata")
_MIME_END = re.compile(r"[;\s]")


def url_key(url: str) -> str:
    """The SURT key of ``url`` (the URL itself if surt cannot read it, as cdxj-indexer)."""
    try:
        return surt.surt(url)
    except Exception:  # noqa: BLE001 - surt raises whatever its parser meets
        return url


def timestamp14(iso_date: str) -> str:
    """``yyyyMMddHHmmss`` of a WARC-Date (``2026-11-22T14:17:47.123Z``)."""
    if len(iso_date) >= 19 and iso_date[4] == "-" and iso_date[10] == "T":  # the usual form
        return (iso_date[0:4] + iso_date[5:7] + iso_date[8:10] + iso_date[11:13]
                + iso_date[14:16] + iso_date[17:19])
    digits = re.sub(r"[^0-9]", "", iso_date)
    return (digits + "00000000000000")[:14]


def mime_of(content_type: str | None) -> str | None:
    """The media type of a Content-Type value as the index gives it (None: no header)."""
    if not content_type:
        return content_type
    return _MIME_END.split(content_type, 1)[0].strip()


def cdxj_line(
    url: str,
    iso_date: str,
    *,
    mime: str | None,
    status: str | None,
    digest: str | None,
    length: int,
    offset: int,
    filename: str,
) -> str:
    """One index line (without its newline); None fields are left out."""
    fields = {"url": url, "mime": mime, "status": status, "digest": digest,
              "length": str(length), "offset": str(offset), "filename": filename}
    entry = {name: value for name, value in fields.items() if value is not None}
    return f"{url_key(url)} {timestamp14(iso_date)} {json.dumps(entry)}"


def index_path_of(warc_path: str | os.PathLike[str]) -> Path:
    """Where the index of a WARC file goes: ``X.warc.gz`` -> ``X.cdxj``."""
    path = Path(warc_path)
    name = path.name
    stem = name[: -len(_WARC_SUFFIX)] if name.endswith(_WARC_SUFFIX) else name
    return path.with_name(stem + INDEX_SUFFIX)


def index_warc_file(warc_path: str | os.PathLike[str]) -> list[str]:
    """The index lines of a WARC file, read with warcio, sorted."""
    filename = os.path.basename(warc_path)
    lines = []
    with open(warc_path, "rb") as stream:
        records = ArchiveIterator(stream)
        for record in records:
            if record.rec_type not in _INDEXED_TYPES:
                continue
            headers = record.rec_headers
            content_type = headers.get_header("Content-Type")
            if record.rec_type == "metadata" and content_type == "application/warc-fields":
                continue
            status = None
            if record.rec_type == "revisit":
                mime = "warc/revisit"
            elif record.rec_type == "response":
                mime = mime_of(record.http_headers.get_header("Content-Type")
                               if record.http_headers else None)
            else:
                mime = mime_of(content_type)
            if record.rec_type in ("response", "revisit") and record.http_headers:
                status = record.http_headers.get_statuscode()
            lines.append(cdxj_line(
                headers.get_header("WARC-Target-URI"), headers.get_header("WARC-Date"),
                mime=mime, status=status, digest=headers.get_header("WARC-Payload-Digest"),
                length=records.get_record_length(), offset=records.get_record_offset(),
                filename=filename,
            ))
    lines.sort()
    return lines


def _write_lines(path: Path, lines: Iterable[str]) -> int:
    """Write ``lines`` to ``path`` through a temporary file (a reader never sees half)."""
    temporary = path.with_name(path.name + ".tmp")
    count = 0
    with open(temporary, "w", encoding="utf-8", newline="\n") as output:
        for line in lines:
            output.write(line)
            output.write("\n")
            count += 1
        output.flush()
        os.fsync(output.fileno())
    os.replace(temporary, path)
    return count


class FileIndex:
    """The index lines of the WARC file being written, written next to it when it is done."""

    def __init__(self) -> None:
        self._lines: list[str] = []

    def add(self, line: str) -> None:
        self._lines.append(line)

    def clear(self) -> None:
        self._lines = []

    def write(self, warc_path: str | os.PathLike[str]) -> Path:
        """Write the lines, sorted, as the index of the completed file ``warc_path``."""
        path = index_path_of(warc_path)
        lines, self._lines = sorted(self._lines), []
        _write_lines(path, lines)
        return path


def _completed_warc_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*" + _WARC_SUFFIX) if p.is_file())


def _read_sorted(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            yield line.rstrip("\n")


def build_index(warc_dir: str | os.PathLike[str], output: str | os.PathLike[str]) -> int:
    """Merge the indexes of every completed WARC file in ``warc_dir`` into ``output`` (sorted)
    and return its line count. A file without an index (or with one older than itself) is
    indexed first, by reading it. Files still being written (``.open``) are left out."""
    directory = Path(warc_dir)
    indexes = []
    for warc in _completed_warc_files(directory):
        index = index_path_of(warc)
        if not index.exists() or index.stat().st_mtime < warc.stat().st_mtime:
            _write_lines(index, index_warc_file(warc))
        indexes.append(index)
    merged = heapq.merge(*(_read_sorted(index) for index in indexes))
    return _write_lines(Path(output), merged)
