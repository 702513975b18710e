"""The ids Flink gives operators with a uid, as a savepoint's ``_metadata`` names them.

An operator's id is the 128-bit MurmurHash3 (x64 variant, seed 0) of its uid's UTF-8 bytes
(Flink's ``StreamGraphHasherV2``), written as those 16 bytes where the savepoint lists the
operator's state. :func:`holds_state_of` tells from that whether a savepoint or checkpoint has
state of an operator the job no longer has (:data:`crawl.stages.RETIRED_UIDS`), which Flink
would refuse to restore without being told to leave it behind.
"""

from __future__ import annotations

import struct
from pathlib import Path

__all__ = ["holds_state_of", "operator_id"]

_MASK = (1 << 64) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK


def _fmix(value: int) -> int:
    value ^= value >> 33
    value = (value * 0xFF51AFD7ED558CCD) & _MASK
    value ^= value >> 33
    value = (value * 0xC4CEB9FE1A85EC53) & _MASK
    return value ^ (value >> 33)


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * _C1) & _MASK, 31) * _C2) & _MASK


def _mix_k2(k2: int) -> int:
    return (_rotl((k2 * _C2) & _MASK, 33) * _C1) & _MASK


def murmur3_128(data: bytes, seed: int = 0) -> bytes:
    """MurmurHash3_x64_128 of ``data``, as Guava's ``asBytes()`` gives it (h1 then h2, each
    little-endian)."""
    h1 = h2 = seed
    blocks = len(data) // 16
    for i in range(blocks):
        k1, k2 = struct.unpack_from("<QQ", data, i * 16)
        h1 ^= _mix_k1(k1)
        h1 = (_rotl(h1, 27) + h2) & _MASK
        h1 = (h1 * 5 + 0x52DCE729) & _MASK
        h2 ^= _mix_k2(k2)
        h2 = (_rotl(h2, 31) + h1) & _MASK
        h2 = (h2 * 5 + 0x38495AB5) & _MASK
    tail = data[blocks * 16:]
    if len(tail) > 8:
        h2 ^= _mix_k2(int.from_bytes(tail[8:], "little"))
    if tail:
        h1 ^= _mix_k1(int.from_bytes(tail[:8], "little"))
    h1 ^= len(data)
    h2 ^= len(data)
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    h1, h2 = _fmix(h1), _fmix(h2)
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    return struct.pack("<QQ", h1, h2)


def operator_id(uid: str) -> bytes:
    """The 16 bytes of the id of the operator with ``uid``."""
    return murmur3_128(uid.encode("utf-8"))


def holds_state_of(checkpoint: Path, uid: str) -> bool:
    """Whether the savepoint or checkpoint directory ``checkpoint`` lists the operator with
    ``uid`` (False when it has no readable ``_metadata``)."""
    try:
        metadata = (checkpoint / "_metadata").read_bytes()
    except OSError:
        return False
    return operator_id(uid) in metadata
