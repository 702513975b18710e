"""Near-duplicate detection: 64-bit simhash fingerprints and an index of them.

:func:`simhash` is Charikar's fingerprint as Manku, Jain and Das Sarma used it for web pages
("Detecting near-duplicates for web crawling", WWW 2007): every feature of the text (here the
word 3-shingles of the visible text, lower-cased) is hashed to 64 bits; each bit of the
fingerprint is the sign of the sum over features of +1 or -1 for that bit of the feature's
hash. Similar texts get fingerprints a few bits apart; pages within Hamming distance 3 are
near-duplicates (Manku et al.'s choice for 8 billion pages).

:class:`SimhashIndex` finds every stored fingerprint within distance ``k`` of a query without a
linear scan, with Manku et al.'s permuted tables: the 64 bits are cut into ``blocks`` blocks;
two fingerprints within distance k agree on at least ``blocks - k`` whole blocks (pigeonhole),
so one sorted table per choice of ``blocks - k`` blocks, keyed by those blocks, holds every
near-duplicate of a query within the range of the query's key. With 4 blocks and k = 3 there
are 4 tables keyed by 16 bits: at N fingerprints a query looks at about 4 N / 2^16 candidates,
whose distances are computed in one vectorised pass. More blocks mean more tables (memory) and
fewer candidates (time). New fingerprints go to a small unsorted buffer, merged into the sorted
tables when it fills, so inserts cost O(log N) amortised.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["SimhashIndex", "hamming", "simhash", "text_features"]

_WORD = re.compile(r"\w+", re.UNICODE)
_BIT_WEIGHTS = np.int64(1) << np.arange(64, dtype=np.int64)
_ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


def text_features(text: str, shingle: int = 3) -> list[str]:
    """The word ``shingle``-grams of a text, lower-cased (the words themselves when shorter)."""
    words = _WORD.findall(text.lower())
    if len(words) < shingle:
        return words
    return [" ".join(words[i : i + shingle]) for i in range(len(words) - shingle + 1)]


def simhash(features: Iterable[str]) -> int:
    """The 64-bit simhash of features (unweighted; repeated features count each time). 0 for
    no features. O(features)."""
    blake = hashlib.blake2b
    data = b"".join(blake(f.encode("utf-8"), digest_size=8).digest() for f in features)
    if not data:
        return 0
    hashes = np.frombuffer(data, dtype="<u8")
    bits = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    votes = bits.sum(axis=0, dtype=np.int64) * 2 - len(hashes)
    return int(np.bitwise_or.reduce(np.where(votes > 0, _BIT_WEIGHTS, 0)).astype(np.uint64))


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two 64-bit fingerprints."""
    return (a ^ b).bit_count()


def _popcount64(values: np.ndarray) -> np.ndarray:
    """Bits set in each uint64 (vectorised)."""
    return np.bitwise_count(values).astype(np.int64)


class _Run:
    """Sorted fingerprints: per table, the run's order by that table's key, and the keys."""

    __slots__ = ("fingerprints", "ids", "keys", "orders")

    def __init__(self, fingerprints: np.ndarray, ids: np.ndarray, masks: list[np.uint64]):
        self.fingerprints = fingerprints
        self.ids = ids
        self.orders = []
        self.keys = []
        for mask in masks:
            keys = fingerprints & mask
            order = np.argsort(keys, kind="stable")
            self.orders.append(order)
            self.keys.append(keys[order])

    def __len__(self) -> int:
        return len(self.fingerprints)


class SimhashIndex:
    """Fingerprints with their ids, queried for all within Hamming distance ``k`` (see the
    module docstring). Memory: about (16 + 16 x tables) bytes per fingerprint.

    Stored fingerprints are in sorted runs of growing sizes (a run is merged with the one
    before it when it is at least half its size, so there are O(log N) runs and every
    fingerprint is re-sorted O(log N) times); new ones wait in a buffer of ``buffer`` entries
    that queries scan in one vectorised pass.
    """

    def __init__(self, k: int = 3, blocks: int = 4, buffer: int = 4096) -> None:
        if not 0 <= k < blocks <= 64:
            raise ValueError("need 0 <= k < blocks <= 64")
        self.k = k
        widths = [64 // blocks + (1 if i < 64 % blocks else 0) for i in range(blocks)]
        starts = list(itertools.accumulate([0, *widths[:-1]]))
        masks = [((1 << w) - 1) << s for w, s in zip(widths, starts, strict=True)]
        #: one key mask per table: the union of the blocks it is keyed by
        self._key_masks = [
            np.uint64(sum(masks[i] for i in chosen))
            for chosen in itertools.combinations(range(blocks), blocks - k)
        ]
        self._runs: list[_Run] = []
        self._buffer_fp = np.empty(buffer, dtype=np.uint64)
        self._buffer_ids = np.empty(buffer, dtype=np.int64)
        self._filled = 0

    @property
    def tables(self) -> int:
        return len(self._key_masks)

    def __len__(self) -> int:
        return sum(map(len, self._runs)) + self._filled

    def add(self, fingerprint: int, item: int) -> None:
        """Store a fingerprint with an id. O(log N) amortised."""
        self._buffer_fp[self._filled] = fingerprint
        self._buffer_ids[self._filled] = item
        self._filled += 1
        if self._filled == len(self._buffer_fp):
            self._flush()

    def add_many(self, fingerprints: Sequence[int], items: Sequence[int]) -> None:
        """Store many fingerprints at once (as one run)."""
        if len(fingerprints) != len(items):
            raise ValueError("as many ids as fingerprints")
        self._flush()
        if len(fingerprints):
            self._push(np.asarray(fingerprints, dtype=np.uint64),
                       np.asarray(items, dtype=np.int64))

    def near(self, fingerprint: int) -> list[tuple[int, int]]:
        """Every stored ``(id, distance)`` within distance ``k`` of ``fingerprint``, nearest
        first. O(runs x tables x (log N + candidates)) + O(buffer), vectorised."""
        query = np.uint64(fingerprint)
        bounds = np.empty(2, dtype=np.uint64)
        candidates: list[np.ndarray] = []  # ids of candidates (may repeat across tables)
        prints: list[np.ndarray] = []
        for run in self._runs:
            for mask, order, keys in zip(self._key_masks, run.orders, run.keys, strict=True):
                key = query & mask
                bounds[0] = key
                if key == _ALL_ONES:  # key + 1 would wrap round
                    lo, hi = int(np.searchsorted(keys, key)), len(keys)
                else:
                    bounds[1] = key + np.uint64(1)  # the first index past key's range
                    lo, hi = np.searchsorted(keys, bounds).tolist()
                if hi > lo:
                    at = order[lo:hi]
                    candidates.append(run.ids[at])
                    prints.append(run.fingerprints[at])
        if self._filled:
            candidates.append(self._buffer_ids[: self._filled])
            prints.append(self._buffer_fp[: self._filled])
        if not candidates:
            return []
        ids = np.concatenate(candidates)
        distances = _popcount64(np.concatenate(prints) ^ query)
        close = distances <= self.k
        found = dict(zip(ids[close].tolist(), distances[close].tolist(), strict=True))
        return sorted(found.items(), key=lambda pair: (pair[1], pair[0]))

    def _flush(self) -> None:
        if self._filled:
            self._push(self._buffer_fp[: self._filled].copy(),
                       self._buffer_ids[: self._filled].copy())
            self._filled = 0

    def _push(self, fingerprints: np.ndarray, ids: np.ndarray) -> None:
        while self._runs and len(self._runs[-1]) <= 2 * len(fingerprints):
            last = self._runs.pop()
            fingerprints = np.concatenate((last.fingerprints, fingerprints))
            ids = np.concatenate((last.ids, ids))
        self._runs.append(_Run(fingerprints, ids, self._key_masks))
