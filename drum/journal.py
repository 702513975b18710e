"""The DRUM's operations and their journal: what a :class:`~drum.store.Drum` buffers until a
merge, encoded for the job's keyed state (a list of :class:`JournalChunk`) and decoded on a
restore.

An operation is a kind (:data:`CHECK`, :data:`UPDATE` or both), a key, a record (``RECORD``)
and a payload (the URL). Journal chunk (format 1; integers little-endian)::

    header   28 B   magic "DRUMOPS1", format u16, layout u16, operations u64, payload bytes u64
    keys            operations x u64
    kinds           operations x u8
    values          operations x RECORD (of the header's layout: older layouts are upgraded)
    lengths         operations x u32, each payload's length
    payloads        back to back
    checksum  8 B   CRC-32 of everything before it, in a u64

A chunk is checked whole when decoded: :func:`decode_ops` raises
:class:`~drum.errors.DrumCorruptError` naming its source on a bad checksum, magic, format,
layout or size.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from drum.errors import DrumCorruptError
from drum.files import checksum
from drum.record import LAYOUT_VERSION, READABLE_LAYOUTS, RECORD, upgrade

__all__ = ["CHECK", "CHECK_UPDATE", "UPDATE", "JournalChunk", "decode_ops", "encode_ops"]

#: Operation kinds (bits): a check answers "seen?", an update merges a value in.
CHECK, UPDATE, CHECK_UPDATE = 1, 2, 3

_OPS_HEAD = struct.Struct("<8sHHQQ")
_OPS_MAGIC = b"DRUMOPS1"


@dataclass(frozen=True)
class JournalChunk:
    """Buffer operations for keyed state: if ``reset``, the pending state is ``[data]``,
    otherwise ``data`` is appended to it."""

    reset: bool
    data: bytes
    #: Operations in ``data`` (0: nothing to append).
    operations: int = 0


def encode_ops(kinds: np.ndarray, keys: np.ndarray, values: np.ndarray, payloads: Sequence[bytes]
               ) -> bytes:
    """Serialise buffered operations (journal format 1, checksummed). O(n)."""
    lens = np.fromiter(map(len, payloads), dtype="<u4", count=len(payloads))
    blob = b"".join(payloads)
    body = b"".join(
        (
            _OPS_HEAD.pack(_OPS_MAGIC, 1, LAYOUT_VERSION, len(keys), len(blob)),
            np.ascontiguousarray(keys, dtype="<u8").tobytes(),
            np.ascontiguousarray(kinds, dtype=np.uint8).tobytes(),
            np.ascontiguousarray(values, dtype=RECORD).tobytes(),
            lens.tobytes(),
            blob,
        )
    )
    return body + checksum(body).to_bytes(8, "little")


def decode_ops(data: bytes, source: str = "journal"
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[bytes]]:
    """Inverse of :func:`encode_ops`; raises :class:`DrumCorruptError` on damage."""
    if len(data) < _OPS_HEAD.size + 8:
        raise DrumCorruptError(source, "journal chunk truncated")
    if checksum(data[:-8]) != int.from_bytes(data[-8:], "little"):
        raise DrumCorruptError(source, "journal chunk checksum mismatch")
    magic, fmt, layout, n, blob_len = _OPS_HEAD.unpack_from(data)
    size = READABLE_LAYOUTS.get(layout)
    if magic != _OPS_MAGIC or fmt != 1 or size is None:
        raise DrumCorruptError(source, "not a journal chunk of this format and layout")
    at = _OPS_HEAD.size
    keys = np.frombuffer(data, "<u8", n, at).astype(np.uint64)
    at += 8 * n
    kinds = np.frombuffer(data, np.uint8, n, at).copy()
    at += n
    values = upgrade(memoryview(data)[at : at + size * n], layout).copy()
    at += size * n
    lens = np.frombuffer(data, "<u4", n, at).astype(np.int64)
    at += 4 * n
    if at + blob_len + 8 != len(data) or int(lens.sum()) != blob_len:
        raise DrumCorruptError(source, "journal chunk sizes inconsistent")
    ends = np.cumsum(lens) + at
    payloads = [data[e - ln : e] for e, ln in zip(ends.tolist(), lens.tolist(), strict=True)]
    return kinds, keys, values, payloads
