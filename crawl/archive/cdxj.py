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
it (:class:`FileIndex`, which keeps at most 20,000 lines in memory and spills the rest to
sorted part files). :func:`build_index` merges the files' indexes into one (``python -m
job index``, and the launcher at the end of a crawl), indexing by reading any WARC file that
has none (a file recovered after a crash) with :func:`index_warc_file`.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import surt
from warcio.archiveiterator import ArchiveIterator

__all__ = [
    "INDEX_PART_SUFFIX",
    "INDEX_SUFFIX",
    "FileIndex",
    "build_index",
    "cdxj_line",
    "index_path_of",
    "index_warc_file",
    "mime_of",
    "remove_index_parts",
    "timestamp14",
    "url_key",
]

log = logging.getLogger(__name__)

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


#: Where :class:`FileIndex` spills the lines of a WARC file being written: next to it, as
#: ``<file>.warc.gz.open`` + this + a number.
INDEX_PART_SUFFIX = ".cdxj-part-"


class FileIndex:
    """The index lines of the WARC file being written, written next to it when it is done.

    At most ``memory_lines`` lines are held: beyond that they are sorted and spilled to a part
    file next to the WARC file (``<file>.warc.gz.open.cdxj-part-00000``, ...), and
    :meth:`write` merges the parts and the lines held into the index, then removes the parts.
    A WARC file of a gigabyte holds some 600,000 captures, whose lines (300 bytes each as
    Python strings) would otherwise stay in memory until the file is done. A part that cannot
    be written (a full disk) drops the file's index, not a capture: :func:`build_index`
    indexes a WARC file without an index by reading it, as after a crash (when
    :func:`remove_index_parts` removes the parts left behind).
    """

    def __init__(self, memory_lines: int = 20_000) -> None:
        if memory_lines < 1:
            raise ValueError(f"memory_lines must be at least 1, got {memory_lines}")
        self._memory_lines = memory_lines
        self._lines: list[str] = []
        self._parts: list[Path] = []
        self._part_base: str | None = None
        self._dropped = False

    def start(self, open_path: str | os.PathLike[str]) -> None:
        """Begin the index of the WARC file being written at ``open_path`` (parts go next to
        it); what was held for another file is dropped."""
        self.clear()
        self._part_base = os.fspath(open_path) + INDEX_PART_SUFFIX

    def add(self, line: str) -> None:
        if self._dropped:
            return
        self._lines.append(line)
        if len(self._lines) >= self._memory_lines and self._part_base is not None:
            self._spill()

    def clear(self) -> None:
        """Drop the lines held and remove the parts written."""
        self._lines = []
        for part in self._parts:
            _remove_quietly(part)
        self._parts = []
        self._dropped = False

    def write(self, warc_path: str | os.PathLike[str]) -> Path | None:
        """Write the lines, sorted, as the index of the completed file ``warc_path``; None when
        a part could not be written (the file is then indexed by reading it)."""
        if self._dropped:
            self.clear()
            return None
        path = index_path_of(warc_path)
        lines, self._lines = sorted(self._lines), []
        try:
            with contextlib.ExitStack() as stack:
                parts = [stack.enter_context(open(part, encoding="utf-8"))
                         for part in self._parts]
                _write_lines(path, heapq.merge(lines, *((line.rstrip("\n") for line in part)
                                                        for part in parts)))
        finally:
            self.clear()
        return path

    def _spill(self) -> None:
        part = Path(f"{self._part_base}{len(self._parts):05d}")
        self._lines.sort()
        try:
            with open(part, "w", encoding="utf-8", newline="\n") as output:
                for line in self._lines:
                    output.write(line)
                    output.write("\n")
        except OSError:
            log.exception("could not spill index lines to %s: the WARC file will be indexed "
                          "by reading it", part)
            with contextlib.suppress(OSError):
                os.remove(part)
            self.clear()
            self._dropped = True
            return
        self._parts.append(part)
        self._lines = []


def remove_index_parts(directory: str | os.PathLike[str], open_name: str) -> int:
    """Remove the index parts a writer of ``open_name`` (a ``.warc.gz.open`` file's name in
    ``directory``) left behind; how many."""
    prefix = open_name + INDEX_PART_SUFFIX
    removed = 0
    for name in os.listdir(directory):
        if name.startswith(prefix):
            _remove_quietly(Path(directory) / name)
            removed += 1
    return removed


def _remove_quietly(path: Path) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


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
