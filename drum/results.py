"""What a DRUM's merges deliver: the answers to checks, the keys inserted, the URLs selected
for fetching, all of one merge in one :class:`MergeResult`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from drum.record import RECORD

__all__ = ["Checks", "DueSelection", "MergeResult", "NewKeys", "empty_checks", "empty_new"]

_EMPTY_KEYS = np.empty(0, dtype=np.uint64)


@dataclass(frozen=True)
class Checks:
    """Answers to the check and check_update operations of one merge, in operation order."""

    seq: np.ndarray  #: uint64 operation sequence numbers
    keys: np.ndarray  #: uint64
    seen: np.ndarray  #: bool: the key was known before this operation


@dataclass(frozen=True)
class NewKeys:
    """Keys inserted by one merge (first insert of a key never seen), in operation order."""

    seq: np.ndarray
    keys: np.ndarray
    values: np.ndarray  #: RECORD, as stored (with payload reference and lease)
    payloads: list[bytes]
    #: uint8 kind of the operation that created each key: CHECK_UPDATE (a discovered link,
    #: for the frontier) or UPDATE (an outcome for a URL never seen, e.g. after a restore)
    kinds: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint8))


@dataclass(frozen=True)
class DueSelection:
    """URLs handed out for fetching by a major merge, best score first."""

    keys: np.ndarray
    values: np.ndarray  #: RECORD, before the lease
    payloads: list[bytes]
    leased_until_ms: int
    #: Records that were due but not selected (over ``max_urls`` or a host's ``per_host``).
    remaining: int = 0
    #: The candidates reached ``max_urls`` (before ``mark_queued`` trimmed full hosts): a
    #: further selection may take more of the remaining records at once.
    full: bool = False
    #: The earliest next fetch time of the records not due yet (None: none will be).
    next_due_ms: int | None = None
    #: Of the selection, how many are revisits (fetch outcomes due again).
    revisits: int = 0
    #: Made from the due window (:mod:`drum.due_window`), without reading the runs.
    from_window: bool = False
    #: Of ``remaining``, the new URLs a :class:`ReleaseLimits` holds back: those over their
    #: shape's limit, and of the others those over their group's.
    held_by_group: int = 0
    held_by_shape: int = 0
    #: ... and those ranked below the limits' ``min_rank``.
    held_by_rank: int = 0
    #: The best rank of those (-inf: none).
    held_best_rank: float = float("-inf")
    #: With the limits' ``rank_edges``: the due new URLs (selected or not) their group and shape
    #: have room for, by rank bucket.
    new_rank_counts: np.ndarray | None = None


@dataclass(frozen=True)
class MergeResult:
    """Everything one merge delivers, in bulk."""

    merge_no: int
    now_ms: int
    #: Operations with a sequence number below this are merged (this merge took the rest).
    seq_end: int
    checks: Checks
    new: NewKeys
    #: Update operations on archived keys, dropped (counted in the manifest too).
    dropped_updates: int
    major: bool = False
    due: DueSelection | None = None
    archived: int = 0
    compacted: bool = False

    @property
    def duplicates(self) -> int:
        """Check operations that found their key already seen."""
        return int(np.count_nonzero(self.checks.seen))


def empty_checks() -> Checks:
    """The answers of a merge that had no check to answer."""
    return Checks(_EMPTY_KEYS, _EMPTY_KEYS, np.empty(0, dtype=bool))


def empty_new() -> NewKeys:
    """The new keys of a merge that inserted none."""
    return NewKeys(_EMPTY_KEYS, _EMPTY_KEYS, np.empty(0, dtype=RECORD), [])

