"""Sorted runs folded by the merge rule: a run read a block at a time, and several runs (oldest
first) merged into one sequence of records in key order, a key present in several runs folded
to one record (:func:`drum.record.combine_indexed`). Used by the merges, by
:meth:`drum.store.Drum.items` and to look keys up for the due window. Memory: about one block
per run.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from drum.files import RunFile
from drum.record import RECORD, combine_indexed, concat

__all__ = ["BlockStream", "fold_pieces", "merged_chunks"]

_EMPTY_KEYS = np.empty(0, dtype=np.uint64)


class BlockStream:
    """Reads a run block by block for a merge: ``take_until(bound)`` returns the records with
    keys <= bound not yet taken. Memory: one block."""

    def __init__(self, run: RunFile) -> None:
        self.run = run
        self.block = -1
        self.done = False
        self._next_block()

    def _next_block(self) -> None:
        self.block += 1
        if self.block >= self.run.blocks:
            self.done = True
            self.keys = _EMPTY_KEYS
            self.values = np.empty(0, dtype=RECORD)
        else:
            self.keys, self.values = self.run.read_block(self.block)
        self.pos = 0

    @property
    def last(self) -> int:
        return int(self.keys[-1])

    def take_until(self, bound: int) -> tuple[np.ndarray, np.ndarray]:
        end = int(np.searchsorted(self.keys, np.uint64(bound), side="right"))
        keys = self.keys[self.pos : end]
        values = self.values[self.pos : end]
        self.pos = end
        if end == len(self.keys):
            self._next_block()
        return keys, values


def _group_sorted(sorted_keys: np.ndarray) -> np.ndarray:
    """Start index of each run of equal keys in a sorted array."""
    head = np.empty(len(sorted_keys), dtype=bool)
    if len(sorted_keys):
        head[0] = True
        np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=head[1:])
    return np.flatnonzero(head)


def fold_pieces(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Union of sorted runs with unique keys (oldest first), common keys merged by the rule.
    One stable sort of the concatenation (runs already sorted: about O(n log k)) and one
    gather of the records; only keys present in several runs are folded."""
    pieces = [p for p in pieces if len(p[0])]
    if not pieces:
        return _EMPTY_KEYS, np.empty(0, dtype=RECORD)
    if len(pieces) == 1:
        return pieces[0]
    keys = np.concatenate([p[0] for p in pieces])
    values = concat([p[1] for p in pieces])
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = _group_sorted(sorted_keys)
    return sorted_keys[starts], combine_indexed(values, order, starts)


def merged_chunks(runs: list[RunFile]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The folded records of ``runs`` (oldest first) in key order, a few blocks at a time.
    Memory: about one block per run."""
    streams = [s for s in (BlockStream(r) for r in runs) if not s.done]
    while streams:
        bound = min(s.last for s in streams)
        pieces = [s.take_until(bound) for s in streams]
        streams = [s for s in streams if not s.done]
        keys, values = fold_pieces(pieces)
        if len(keys):
            yield keys, values
