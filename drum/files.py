"""The DRUM's file formats (run files: format version 2, which reads 1 too; payload files:
format version 1). Every file is written once, under a name never used before, and never
modified afterwards; a manifest says which files are live.

All integers are little-endian. Checksums are zlib's CRC-32 (computed by zlib-ng: the same
values, four times faster), stored in 64-bit slots. Every file has a fixed header and a trailer
ending in an end marker; opening a file reads those and its table only, and checks that the
sizes add up exactly (a truncated file fails there); data is checked when it is read.

Run file (``run-*.drum``: the main run, a delta run, an archived set)::

    header   32 B   magic "DRUMRUN1", format u16, layout u16, kind u16, value size u16,
                    block records u32, reserved u32, header checksum u64
    blocks          per block: keys (count x u64, strictly increasing within the whole file)
                    then values; blocks follow one another
    table    48 B   per block: offset u64, count u32, fields u32, first key u64, last key
                    u64, keys checksum u64, values checksum u64
    trailer  48 B   table offset u64, blocks u64, records u64, table checksum u64,
                    trailer checksum u64, magic "DRUMEND1"

A block's values are either whole records (count x RECORD; ``fields`` is :data:`ROWS`) or
columns: for each field of the record whose bit is set in ``fields`` (bit i: the i-th field of
the file's layout), in the record's order, count values of that field; the fields left out are
zero in every record of the block. A writer writes columns when they take at most half the
bytes of whole records: a discovery sets 9 of the 29 fields (45 of 136 bytes), and every byte
written is fsynced. Format 1 had only whole records (``fields`` 0).

A check reads only the keys of the blocks whose key range holds a key of the batch (the
table is the fence index); a merge streams whole blocks. Opening a file reads the header,
trailer and table only and checks that the sizes add up exactly: a truncated file fails there.
Each block's checksums are checked when the block is read.

Payload file (``pay-*.drum``: a consecutive range of the DRUM's payload log: the URLs of the
keys inserted by one merge, or several such ranges packed into one file)::

    header   32 B   magic "DRUMPAY1", format u16, reserved 14 B, header checksum u64
    data            the payloads, back to back (records point into it: offset, length)
    pages           CRC-32 (u32) of each 4 KiB page of the data
    trailer  32 B   data length u64, page size u32, pages checksum u32, trailer checksum u64,
                    magic "DRUMEND1"

A payload is read with one ``pread`` of the pages that hold it, each checked; ``verify``
checks every page.
"""

from __future__ import annotations

import errno
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
from zlib_ng import zlib_ng

from drum.errors import DrumCorruptError, DrumMissingFileError, DrumWriteError
from drum.record import LAYOUT_VERSION, READABLE_LAYOUTS, RECORD, concat, upgrade

__all__ = [
    "IO_BYTES",
    "IO_SECONDS",
    "KIND_ARCHIVE",
    "KIND_DELTA",
    "KIND_MAIN",
    "PAYLOAD_FORMAT_VERSION",
    "ROWS",
    "RUN_FORMAT_VERSION",
    "FileInfo",
    "ManifestWriter",
    "Opener",
    "PayloadFile",
    "PayloadWriter",
    "RunFile",
    "RunWriter",
    "checksum",
]

#: Format of the run files written; :data:`READABLE_RUN_FORMATS` are read.
RUN_FORMAT_VERSION = 2
READABLE_RUN_FORMATS = (1, 2)
PAYLOAD_FORMAT_VERSION = 1
#: A block table's ``fields`` when the block's values are whole records.
ROWS = 1 << 31
KIND_MAIN, KIND_DELTA, KIND_ARCHIVE = 1, 2, 3
_KIND_NAMES = {KIND_MAIN: "main", KIND_DELTA: "delta", KIND_ARCHIVE: "archive"}

#: How a new file is opened for writing: ``opener(path)`` returns a binary file object opened
#: with mode "xb" (fails if the file exists). Injected in tests to simulate a full disk.
Opener = Callable[[str], BinaryIO]

#: Payload data is checked in pages of this many bytes (a URL read checks one or two pages).
PAGE = 4096

_RUN_MAGIC = b"DRUMRUN1"
_PAY_MAGIC = b"DRUMPAY1"
_END_MAGIC = b"DRUMEND1"
_RUN_HEADER = struct.Struct("<8sHHHHII")  # + checksum u64 = 32
_PAY_HEADER = struct.Struct("<8sH14s")  # + checksum u64 = 32
_RUN_TRAILER = struct.Struct("<QQQQ")  # + checksum u64 + magic = 48
_PAY_TRAILER = struct.Struct("<QII")  # + checksum u64 + magic = 32
HEADER_SIZE = 32
_TABLE = np.dtype(
    [
        ("offset", "<u8"),
        ("count", "<u4"),
        ("fields", "<u4"),
        ("first", "<u8"),
        ("last", "<u8"),
        ("keys_sum", "<u8"),
        ("values_sum", "<u8"),
    ]
)
assert _TABLE.itemsize == 48


#: Seconds spent in file I/O and checksums by this process (diagnostics for benchmarks).
IO_SECONDS = {"read": 0.0, "write": 0.0, "fsync": 0.0, "crc": 0.0}
#: Bytes read and written in files by this process (diagnostics for benchmarks).
IO_BYTES = {"read": 0, "write": 0}


def checksum(data: bytes | bytearray | memoryview | np.ndarray) -> int:
    """CRC-32 (zlib's) of ``data``. O(len). zlib-ng computes the same CRC-32 as zlib, with
    carry-less multiplication where the CPU has it: about 15 GB/s here against zlib's 3.7."""
    began = time.perf_counter()
    value = zlib_ng.crc32(memoryview(data).cast("B"))
    IO_SECONDS["crc"] += time.perf_counter() - began
    return value


def _sum_bytes(data: bytes) -> bytes:
    return checksum(data).to_bytes(8, "little")


@dataclass(frozen=True)
class FileInfo:
    """What a manifest records of one file: its name, size, records and table checksum."""

    name: str
    size: int
    records: int
    checksum: int

    def to_json(self) -> list:
        return [self.name, self.size, self.records, self.checksum]

    @classmethod
    def from_json(cls, value: list) -> FileInfo:
        name, size, records, check = value
        return cls(str(name), int(size), int(records), int(check))


def _open_read(path: str) -> int:
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise DrumMissingFileError(path, "file named by the manifest is missing") from None


def _pread_exact(fd: int, size: int, offset: int, path: str, what: str) -> bytes:
    began = time.perf_counter()
    data = os.pread(fd, size, offset)
    IO_SECONDS["read"] += time.perf_counter() - began
    IO_BYTES["read"] += len(data)
    if len(data) != size:
        raise DrumCorruptError(path, f"truncated: {what} at byte {offset} needs {size} bytes")
    return data


def _layout_fields(value_size: int) -> list[tuple[str, np.dtype]]:
    """The fields of the record layout whose records take ``value_size`` bytes (each earlier
    layout is a prefix of the current one), in order: (name, dtype)."""
    return [
        (name, RECORD.fields[name][0]) for name in RECORD.names
        if RECORD.fields[name][1] < value_size
    ]


_FIELDS = _layout_fields(RECORD.itemsize)
_FIELD_OFFSETS = np.array([RECORD.fields[name][1] for name, _ in _FIELDS], dtype=np.intp)
_FIELD_SIZES = np.array([dtype.itemsize for _, dtype in _FIELDS], dtype=np.int64)
if RECORD.itemsize % 8 or np.any(np.diff(_FIELD_OFFSETS) != _FIELD_SIZES[:-1]):
    raise AssertionError("RECORD must be packed, in field order, a multiple of 8 bytes")


def _columns_of(
    mask: int, fields: list[tuple[str, np.dtype]], path: str
) -> list[tuple[str, np.dtype]]:
    """The fields whose bits are set in a block table's ``mask``, in order."""
    if mask >> len(fields):
        raise DrumCorruptError(path, f"block fields {mask:#x} beyond the layout's")
    return [field for i, field in enumerate(fields) if mask >> i & 1]


def _or_of_records(words: np.ndarray) -> np.ndarray:
    """The bitwise or of every record (rows of ``words``), as bytes. NumPy reduces the rows of
    a 2-D array one at a time; the rows are first or-ed as 64 long contiguous slices, three
    times faster."""
    slices = 64
    whole = len(words) - len(words) % slices
    result = np.bitwise_or.reduce(
        np.bitwise_or.reduce(words[:whole].reshape(slices, -1, words.shape[1]), axis=0), axis=0
    ) if whole else np.zeros(words.shape[1], dtype=words.dtype)
    if whole < len(words):
        result |= np.bitwise_or.reduce(words[whole:], axis=0)
    return result.view(np.uint8)


def encode_values(values: np.ndarray) -> tuple[int, memoryview]:
    """A block's values as written: ``(fields, data)``, columns of the fields that are not zero
    in every record when they take at most half the bytes of whole records, else the records
    (``fields`` :data:`ROWS`). O(len(values)): one pass finds the zero fields, one copies."""
    count = len(values)
    raw = values.view(np.uint8)
    nonzero = _or_of_records(raw.view("<u8").reshape(count, RECORD.itemsize // 8)) != 0
    present = np.flatnonzero(np.logical_or.reduceat(nonzero, _FIELD_OFFSETS))
    width = int(_FIELD_SIZES[present].sum())
    if 2 * width > RECORD.itemsize:
        return ROWS, memoryview(raw)
    data = np.empty(count * width, dtype=np.uint8)
    fields = position = 0
    for i in present.tolist():
        name, dtype = _FIELDS[i]
        end = position + count * dtype.itemsize
        data[position:end].view(dtype)[:] = values[name]
        position = end
        fields |= 1 << i
    return fields, memoryview(data)


def _decode_columns(
    data: bytes | memoryview, count: int, columns: list[tuple[str, np.dtype]]
) -> np.ndarray:
    """Records from columns of some of their fields (the others zero). O(count)."""
    values = np.zeros(count, dtype=RECORD)
    position = 0
    for name, dtype in columns:
        values[name] = np.frombuffer(data, dtype, count, position)
        position += count * dtype.itemsize
    return values


class _Writer:
    """Common part of the writers: exclusive create, errors wrapped, partial file removed."""

    def __init__(self, path: str, opener: Opener, fsync: bool) -> None:
        self.path = path
        self._fsync = fsync
        self._file: BinaryIO | None = None
        self._size = 0
        try:
            self._file = opener(path)
        except OSError as error:
            raise DrumWriteError(path, f"cannot create: {error.strerror or error}") from error

    def _write(self, data: bytes | memoryview) -> None:
        assert self._file is not None
        view = memoryview(data).cast("B")
        size = len(view)
        began = time.perf_counter()
        try:
            while len(view):
                # Raw files may write less than asked; file-likes may return None (all).
                written = self._file.write(view)
                view = view[len(view) if written is None else written :]
        except OSError as error:
            self.abort()
            reason = "disk full (ENOSPC)" if error.errno == errno.ENOSPC else error.strerror
            raise DrumWriteError(self.path, f"write failed: {reason or error}") from error
        IO_SECONDS["write"] += time.perf_counter() - began
        IO_BYTES["write"] += size
        self._size += size

    def _finish(self) -> None:
        assert self._file is not None
        try:
            self._file.flush()
            if self._fsync:
                began = time.perf_counter()
                os.fsync(self._file.fileno())
                IO_SECONDS["fsync"] += time.perf_counter() - began
            self._file.close()
        except OSError as error:
            self.abort()
            raise DrumWriteError(self.path, f"flush failed: {error.strerror or error}") from error
        self._file = None

    def abort(self) -> None:
        """Close and remove the partial file (best effort)."""
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None
        try:
            os.remove(self.path)
        except OSError:
            pass


class RunWriter(_Writer):
    """Writes a run file from sorted chunks of (keys, values). Memory: one block."""

    def __init__(
        self, path: str, kind: int, *, block_records: int, opener: Opener, fsync: bool = True
    ) -> None:
        super().__init__(path, opener, fsync)
        self._block_records = block_records
        head = _RUN_HEADER.pack(
            _RUN_MAGIC, RUN_FORMAT_VERSION, LAYOUT_VERSION, kind, RECORD.itemsize, block_records, 0
        )
        self._write(head + _sum_bytes(head))
        self._table: list[tuple] = []
        self._pending_keys: list[np.ndarray] = []
        self._pending_values: list[np.ndarray] = []
        self._pending = 0
        self._last: int | None = None
        self.records = 0

    def append(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Add records whose keys are strictly increasing and above every key written."""
        if len(keys) == 0:
            return
        if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
            raise AssertionError(f"{self.path}: keys not strictly increasing")
        if self._last is not None and int(keys[0]) <= self._last:
            raise AssertionError(f"{self.path}: key {int(keys[0])} after {self._last}")
        self._last = int(keys[-1])
        size = self._block_records
        if self._pending:  # complete the pending block first (a small copy)
            fill = min(size - self._pending, len(keys))
            self._pending_keys.append(keys[:fill])
            self._pending_values.append(values[:fill])
            self._pending += fill
            keys, values = keys[fill:], values[fill:]
            if self._pending < size:
                return
            self._write_block(np.concatenate(self._pending_keys), concat(self._pending_values))
            self._pending_keys, self._pending_values, self._pending = [], [], 0
        whole = len(keys) - len(keys) % size
        for start in range(0, whole, size):  # straight from the caller's arrays
            self._write_block(keys[start : start + size], values[start : start + size])
        if whole < len(keys):
            self._pending_keys = [keys[whole:]]
            self._pending_values = [values[whole:]]
            self._pending = len(keys) - whole

    def _flush_blocks(self) -> None:
        if self._pending:
            self._write_block(np.concatenate(self._pending_keys), concat(self._pending_values))
        self._pending_keys, self._pending_values, self._pending = [], [], 0

    def _write_block(self, keys: np.ndarray, values: np.ndarray) -> None:
        keys = np.ascontiguousarray(keys, dtype="<u8")
        fields, data = encode_values(np.ascontiguousarray(values, dtype=RECORD))
        offset = self._size
        self._write(memoryview(keys).cast("B"))
        self._write(data)
        self._table.append(
            (offset, len(keys), fields, int(keys[0]), int(keys[-1]), checksum(keys),
             checksum(data))
        )
        self.records += len(keys)

    @property
    def total(self) -> int:
        """Records appended so far (written or pending)."""
        return self.records + self._pending

    def close(self) -> FileInfo:
        """Write the table and trailer, fsync, close. Returns what the manifest records."""
        self._flush_blocks()
        table = np.array(self._table, dtype=_TABLE).tobytes()
        table_offset = self._size
        self._write(table)
        table_sum = checksum(table)
        trailer = _RUN_TRAILER.pack(table_offset, len(self._table), self.records, table_sum)
        self._write(trailer + _sum_bytes(trailer) + _END_MAGIC)
        self._finish()
        return FileInfo(os.path.basename(self.path), self._size, self.records, table_sum)


class _ReadFile:
    """An immutable DRUM file open for reading: opened and checked by ``_load`` (the file is
    closed again if that fails), closed by :meth:`close`."""

    def __init__(self, path: str, expected: FileInfo | None = None) -> None:
        self.path = path
        self._fd = _open_read(path)
        try:
            self._load(expected)
        except BaseException:
            os.close(self._fd)
            raise

    def _load(self, expected: FileInfo | None) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:  # pragma: no cover - safety net
        try:
            self.close()
        except Exception:
            pass


class RunFile(_ReadFile):
    """An open run file: header, trailer and table read and checked; blocks read on demand.

    Opening costs O(blocks) bytes of I/O; ``read_keys`` O(count x 8) and ``read_block``
    O(count x 136) bytes at most, each checked against its checksum. A file of an earlier record
    layout (:data:`drum.record.READABLE_LAYOUTS`) is read as it is and its records upgraded.
    """


    def _load(self, expected: FileInfo | None) -> None:
        path = self.path
        size = os.fstat(self._fd).st_size
        self.size = size
        if size < HEADER_SIZE + 48:
            raise DrumCorruptError(path, f"truncated: {size} bytes is less than a run file")
        head = _pread_exact(self._fd, HEADER_SIZE, 0, path, "header")
        magic, fmt, layout, kind, value_size, block_records, _ = _RUN_HEADER.unpack(head[:24])
        if magic != _RUN_MAGIC:
            raise DrumCorruptError(path, f"not a DRUM run file (magic {magic!r})")
        if head[24:] != _sum_bytes(head[:24]):
            raise DrumCorruptError(path, "header checksum mismatch")
        if fmt not in READABLE_RUN_FORMATS or READABLE_LAYOUTS.get(layout) != value_size:
            raise DrumCorruptError(
                path, f"unsupported format {fmt} / layout {layout} / value size {value_size}"
            )
        #: The record layout of the file (an earlier one's records are upgraded when read).
        self.layout = layout
        self.value_size = value_size
        if kind not in _KIND_NAMES:
            raise DrumCorruptError(path, f"unknown run kind {kind}")
        self.kind = kind
        self.block_records = block_records
        trailer = _pread_exact(self._fd, 48, size - 48, path, "trailer")
        if trailer[40:] != _END_MAGIC:
            raise DrumCorruptError(path, "truncated or damaged: no end marker")
        if trailer[32:40] != _sum_bytes(trailer[:32]):
            raise DrumCorruptError(path, "trailer checksum mismatch")
        table_offset, blocks, records, table_sum = _RUN_TRAILER.unpack(trailer[:32])
        if table_offset + blocks * _TABLE.itemsize + 48 != size:
            raise DrumCorruptError(path, "sizes in the trailer do not add up to the file size")
        table_bytes = _pread_exact(self._fd, blocks * _TABLE.itemsize, table_offset, path, "table")
        if checksum(table_bytes) != table_sum:
            raise DrumCorruptError(path, "block table checksum mismatch")
        table = np.frombuffer(table_bytes, dtype=_TABLE)
        if fmt == 1:
            if table["fields"].any():
                raise DrumCorruptError(path, "format 1 block table with fields set")
            table = table.copy()
            table["fields"] = ROWS
        fields = _layout_fields(value_size)
        masks, which = np.unique(table["fields"], return_inverse=True)
        #: The columns of a block, by its table entry's ``fields`` (not there: whole records).
        self._columns = {
            int(mask): _columns_of(int(mask), fields, path)
            for mask in masks if int(mask) != ROWS
        }
        widths = np.array(
            [value_size if int(mask) == ROWS
             else sum(dtype.itemsize for _, dtype in self._columns[int(mask)])
             for mask in masks],
            dtype=np.int64,
        )
        #: Bytes of one record's values in each block.
        self._widths = widths[which.reshape(-1)] if blocks else np.empty(0, dtype=np.int64)
        sizes = table["count"].astype(np.int64) * (8 + self._widths)
        expected_offsets = HEADER_SIZE + np.concatenate(
            ([0], np.cumsum(sizes)[:-1])
        ) if blocks else np.empty(0)
        if blocks and (
            not np.array_equal(table["offset"].astype(np.int64), expected_offsets.astype(np.int64))
            or int(table["offset"][-1]) + int(sizes[-1]) != table_offset
        ):
            raise DrumCorruptError(path, "block table offsets are inconsistent")
        if int(table["count"].sum()) != records:
            raise DrumCorruptError(path, "block counts do not add up to the record count")
        if blocks == 0 and table_offset != HEADER_SIZE:
            raise DrumCorruptError(path, "empty run with data")
        self.table = table
        self._keys_checked = np.zeros(blocks, dtype=bool)
        self.records = records
        self.checksum = table_sum
        if expected is not None:
            if expected.size != size:
                raise DrumCorruptError(
                    path, f"size {size} differs from the manifest's {expected.size}"
                )
            if expected.records != records or expected.checksum != table_sum:
                raise DrumCorruptError(path, "records or checksum differ from the manifest's")

    @property
    def blocks(self) -> int:
        return len(self.table)

    def read_keys(self, block: int) -> np.ndarray:
        """The keys of one block, checked the first time this object reads them (a check reads
        every key block of the main run at each minor merge: checking them every time would
        cost as much as reading them). O(count) bytes read."""
        entry = self.table[block]
        count = int(entry["count"])
        data = _pread_exact(self._fd, count * 8, int(entry["offset"]), self.path, "keys")
        if not self._keys_checked[block]:
            if checksum(data) != int(entry["keys_sum"]):
                raise DrumCorruptError(self.path, f"keys checksum mismatch in block {block}")
            self._keys_checked[block] = True
        return np.frombuffer(data, dtype="<u8")

    def read_block(self, block: int) -> tuple[np.ndarray, np.ndarray]:
        """Keys and values of one block (checked). O(count) bytes read."""
        entry = self.table[block]
        count = int(entry["count"])
        data = _pread_exact(
            self._fd, count * (8 + int(self._widths[block])), int(entry["offset"]), self.path,
            "block"
        )
        keys_bytes = memoryview(data)[: count * 8]
        values_bytes = memoryview(data)[count * 8 :]
        if checksum(keys_bytes) != int(entry["keys_sum"]):
            raise DrumCorruptError(self.path, f"keys checksum mismatch in block {block}")
        if checksum(values_bytes) != int(entry["values_sum"]):
            raise DrumCorruptError(self.path, f"values checksum mismatch in block {block}")
        columns = self._columns.get(int(entry["fields"]))
        if columns is None:
            return np.frombuffer(keys_bytes, dtype="<u8"), upgrade(values_bytes, self.layout)
        return np.frombuffer(keys_bytes, dtype="<u8"), _decode_columns(values_bytes, count, columns)

    def info(self) -> FileInfo:
        return FileInfo(os.path.basename(self.path), self.size, self.records, self.checksum)


class PayloadWriter(_Writer):
    """Writes one payload file: from a single blob (:meth:`write`), or streamed in pieces of
    any size (:meth:`append` ..., then :meth:`finish`). Memory: the piece plus one page."""

    def __init__(self, path: str, opener: Opener, fsync: bool) -> None:
        super().__init__(path, opener, fsync)
        self._started = False
        self._length = 0
        self._carry = b""  # the last, incomplete page
        self._page_sums: list[int] = []

    def _start(self) -> None:
        head = _PAY_HEADER.pack(_PAY_MAGIC, PAYLOAD_FORMAT_VERSION, b"")
        self._write(head + _sum_bytes(head))
        self._started = True

    def append(self, data: bytes | memoryview) -> None:
        """Add ``data`` to the payload data. O(len(data))."""
        if not self._started:
            self._start()
        self._write(data)
        self._length += len(data)
        pending = bytes(self._carry) + bytes(data) if self._carry else data
        view = memoryview(pending)
        full = len(view) - len(view) % PAGE
        crc = zlib_ng.crc32
        self._page_sums.extend(crc(view[i : i + PAGE]) for i in range(0, full, PAGE))
        self._carry = bytes(view[full:])

    def finish(self) -> FileInfo:
        """Write the page table and trailer, flush (and fsync); the file is complete."""
        if not self._started:
            self._start()
        if self._carry:
            self._page_sums.append(zlib_ng.crc32(self._carry))
            self._carry = b""
        pages = np.array(self._page_sums, dtype="<u4").tobytes()
        self._write(pages)
        pages_sum = checksum(pages)
        trailer = _PAY_TRAILER.pack(self._length, PAGE, pages_sum)
        self._write(trailer + _sum_bytes(trailer) + _END_MAGIC)
        self._finish()
        return FileInfo(os.path.basename(self.path), self._size, self._length, pages_sum)

    def write(self, blob: bytes) -> FileInfo:
        """The whole file from one blob."""
        self.append(blob)
        return self.finish()


class ManifestWriter(_Writer):
    """Writes one manifest file: the manifest's bytes as they are (they carry their own
    checksum: :mod:`drum.manifest`), created, flushed and fsynced like every DRUM file."""

    def write(self, blob: bytes) -> FileInfo:
        """The whole file from ``blob``; its :class:`FileInfo` has no records or checksum."""
        self._write(blob)
        self._finish()
        return FileInfo(os.path.basename(self.path), len(blob), 0, 0)


class PayloadFile(_ReadFile):
    """An open payload segment. Opening checks header, trailer, sizes and the page table
    (O(data / 256) bytes read)."""


    def _load(self, expected: FileInfo | None) -> None:
        path = self.path
        size = os.fstat(self._fd).st_size
        self.size = size
        if size < HEADER_SIZE + 32:
            raise DrumCorruptError(path, f"truncated: {size} bytes is less than a payload file")
        head = _pread_exact(self._fd, HEADER_SIZE, 0, path, "header")
        magic, fmt, _ = _PAY_HEADER.unpack(head[:24])
        if magic != _PAY_MAGIC:
            raise DrumCorruptError(path, f"not a DRUM payload file (magic {magic!r})")
        if head[24:] != _sum_bytes(head[:24]) or fmt != PAYLOAD_FORMAT_VERSION:
            raise DrumCorruptError(path, "header checksum or format mismatch")
        trailer = _pread_exact(self._fd, 32, size - 32, path, "trailer")
        if trailer[24:] != _END_MAGIC:
            raise DrumCorruptError(path, "truncated or damaged: no end marker")
        if trailer[16:24] != _sum_bytes(trailer[:16]):
            raise DrumCorruptError(path, "trailer checksum mismatch")
        length, page, pages_sum = _PAY_TRAILER.unpack(trailer[:16])
        count = -(-length // page) if page else -1
        if page <= 0 or HEADER_SIZE + length + 4 * count + 32 != size:
            raise DrumCorruptError(path, "data length does not match the file size")
        table = _pread_exact(self._fd, 4 * count, HEADER_SIZE + length, path, "page table")
        if checksum(table) != pages_sum:
            raise DrumCorruptError(path, "page table checksum mismatch")
        self.length = length
        self.page = page
        self.pages = np.frombuffer(table, dtype="<u4")
        self.checksum = pages_sum
        if expected is not None and (
            expected.size != size or expected.records != length or expected.checksum != pages_sum
        ):
            raise DrumCorruptError(path, "size, length or checksum differ from the manifest's")

    def read(self, offset: int, length: int) -> bytes:
        """One payload; the pages holding it are read and checked. One pread."""
        if offset + length > self.length:
            raise DrumCorruptError(self.path, f"payload at {offset}+{length} beyond the data")
        if length == 0:
            return b""
        first, last = offset // self.page, (offset + length - 1) // self.page
        start = first * self.page
        end = min((last + 1) * self.page, self.length)
        data = _pread_exact(self._fd, end - start, HEADER_SIZE + start, self.path, "payload")
        view = memoryview(data)
        for number in range(first, last + 1):
            at = (number - first) * self.page
            if zlib_ng.crc32(view[at : at + self.page]) != int(self.pages[number]):
                raise DrumCorruptError(
                    self.path, f"payload at offset {offset}: page {number} checksum mismatch"
                )
        return data[offset - start : offset - start + length]

    def verify(self) -> None:
        """Check every page. O(segment size) I/O."""
        data = memoryview(_pread_exact(self._fd, self.length, HEADER_SIZE, self.path, "data"))
        for number in range(len(self.pages)):
            chunk = data[number * self.page : (number + 1) * self.page]
            if zlib_ng.crc32(chunk) != int(self.pages[number]):
                raise DrumCorruptError(self.path, f"data page {number} checksum mismatch")

    def info(self) -> FileInfo:
        return FileInfo(os.path.basename(self.path), self.size, self.length, self.checksum)


def default_opener(path: str) -> BinaryIO:
    """Exclusive create, unbuffered writes go straight to the OS (blocks are large)."""
    return open(path, "xb", buffering=0)  # noqa: SIM115 - closed by the writer


def kind_name(kind: int) -> str:
    return _KIND_NAMES[kind]
