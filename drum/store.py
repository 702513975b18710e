"""The DRUM store: a buffer of operations merged in bulk with sorted, immutable runs on disk.

Structure (all files immutable, listed by the :class:`~drum.manifest.Manifest`):

* the **buffer**: the operations not merged yet, in memory (bounded by
  ``DrumConfig.buffer_ops`` and ``buffer_payload_bytes``), and in the job also in keyed state
  (:meth:`Drum.take_journal`);
* the **main run**: every live key with its full record, sorted by key;
* **delta runs**: one per minor merge, the buffer's updates folded to one record per key;
  the newest ``delta_fanout`` of one size class are folded into one (size-tiered, like the
  payload files), so frequent small merges keep few runs without rewriting the main run;
* **archived sets**: keys moved out of the main run because they will probably never be
  fetched (still "seen"); several are compacted into one when there are too many;
* **the payload log**: the URLs of the keys each minor merge inserted, appended as one payload
  file per merge; records hold their URL's position in the log. Files hold consecutive ranges
  of the log; when the newest ``payload_pack_fanout`` files are of one size class they are
  packed (copied, in order) into one file, size-tiered, so a DRUM has O(fanout x log(size))
  payload files and each payload byte is copied O(log(size)) times. Records never change
  when files are packed: positions are positions in the log, not in a file.

A **minor merge** (buffer full, or :meth:`Drum.merge`) sorts the buffer, looks its keys up in
every run by reading only the key blocks whose range holds one of them (one sequential pass per
run), answers every check, writes the new URLs' payloads and one delta run. Its I/O is
O(K x 8) bytes read for K keys on disk (less when the buffer is small against K), plus
O(B x 136 + new URL bytes) written for a buffer of B operations.

A **major merge** (too many delta runs, deltas larger than ``major_ratio`` of the main run, or
asked for) streams the main run and the deltas block by block, folds them with the merge rule,
writes a new main run, moves records that the :class:`ArchivePolicy` gives up on into a new
archived set, and, when asked, selects the URLs due for fetching (:class:`DuePolicy`: by score,
next fetch time, a per-host budget), which it leases (a small delta run) so they are not
selected twice. A **due selection** asked for when no major merge is due makes the same
selection in a read-only pass over the folded runs: only its lease is written.
A major merge's I/O is O(K x 136) bytes read and written; its memory is a few blocks per run
plus the selection. With deltas allowed up to ``major_ratio`` x K records, each record is
rewritten about 1 / major_ratio times per K updates: the amortised cost per operation is
O(136 / ratio) bytes, independent of K.

With a **due window** (``DuePolicy.window_urls``, :mod:`drum.due_window`), a selection is made
from the records due soonest, held in memory and kept exact by each minor merge, reading
nothing, while the window lasts; a pass over the runs (a selection's or a major merge's)
builds it again.
"""

from __future__ import annotations

import bisect
import os
import struct
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from drum.due_window import DueWindow, WindowBuilder
from drum.errors import DrumCorruptError, DrumManifestError, DrumWriteError
from drum.files import (
    KIND_ARCHIVE,
    KIND_DELTA,
    KIND_MAIN,
    FileInfo,
    Opener,
    PayloadFile,
    PayloadWriter,
    RunFile,
    RunWriter,
    checksum,
    default_opener,
)
from drum.manifest import Counters, Manifest, collect_garbage, drum_file_names
from drum.record import (
    FAILURE_STATUSES,
    LAYOUT_VERSION,
    NEVER,
    NO_DEPTH,
    PAYLOAD_FIELDS,
    READABLE_LAYOUTS,
    RECORD,
    DrumStatus,
    ReasonTable,
    combine_indexed,
    concat,
    neutral,
    next_fetch_times,
    put,
    select,
    take,
    upgrade,
)

__all__ = [
    "CHECK",
    "CHECK_UPDATE",
    "UPDATE",
    "ArchivePolicy",
    "Checks",
    "Drum",
    "DrumConfig",
    "DuePolicy",
    "DueSelection",
    "JournalChunk",
    "MergeResult",
    "NewKeys",
    "pack_plan",
]

#: Operation kinds (bits): a check answers "seen?", an update merges a value in.
CHECK, UPDATE, CHECK_UPDATE = 1, 2, 3


@dataclass(frozen=True)
class DuePolicy:
    """Which URLs a major merge hands out for fetching."""

    #: At most this many per major merge (0: select nothing).
    max_urls: int = 100_000
    #: At most this many per host (by the record's host hash; 0: no limit; host 0 unlimited).
    per_host: int = 100
    #: Only URLs with at least this score.
    min_score: float = float("-inf")
    #: A selected URL is leased this long: not selected again before (0: no lease).
    lease_ms: int = 3_600_000
    #: Mark each selected URL QUEUED (at the merge's time) instead of leasing it: it is not
    #: due again until an outcome replaces that status, and ``per_host`` then bounds the URLs
    #: of a host that are QUEUED at once (those already queued count), not those of one merge.
    mark_queued: bool = False
    #: Rank = score - depth_weight x depth (hops from a seed; 0: by score alone).
    depth_weight: float = 0.0
    #: Above 0: new URLs (UNFETCHED) and revisits (a fetch outcome due again) are selected
    #: apart, revisits getting at most this share of ``max_urls`` while new URLs are due and
    #: new URLs the rest while revisits are due (a kind short of its share leaves it to the
    #: other); a revisit's rank adds how late it is, in intervals (``interval_s``). 0: both
    #: kinds ranked together.
    refresh_share: float = 0.0
    #: Above 0: keep a due window of at most this many records in memory
    #: (:mod:`drum.due_window`), from which selections are made without reading the runs while
    #: it lasts; a pass over the runs builds it again. 0: every selection passes over the runs.
    #: Not used with a ``min_score`` (a score that grows would move a record into it), nor
    #: with an :class:`ArchivePolicy` that gives up on records a selection could take (see
    #: :attr:`DrumConfig.windowed`).
    window_urls: int = 0


@dataclass(frozen=True)
class ArchivePolicy:
    """Which records a major merge moves to an archived set (leased records never move)."""

    #: UNFETCHED records with a score below this (None: off).
    min_score: float | None = None
    #: Failed records with at least this many failures (0: off).
    max_failures: int = 0
    #: Per host, UNFETCHED records beyond this many records of the host, in key order, which
    #: is a pseudo-random order within a host (0: off; host 0 has no budget).
    host_max_urls: int = 0
    #: Outcomes never due again (next fetch NEVER).
    archive_done: bool = False


@dataclass(frozen=True)
class DrumConfig:
    """Sizes and policies. Memory is about ``buffer_ops`` x 170 bytes (keys, values, payload
    references) plus the payload bytes, plus a few blocks of ``block_records`` x 136 bytes per
    run during merges, whatever the number of keys."""

    buffer_ops: int = 1 << 20
    buffer_payload_bytes: int = 256 << 20
    block_records: int = 1 << 16
    #: A major merge runs when there are this many delta runs...
    max_deltas: int = 16
    #: ...or when the delta records exceed this fraction of the main run's (or of buffer_ops).
    major_ratio: float = 1.0
    #: Below that, the newest ``delta_fanout`` delta runs are folded into one when they are of
    #: one size class (powers of the fanout times ``delta_base_records``): size-tiered, so
    #: frequent small merges keep few runs without rewriting the main run.
    delta_fanout: int = 4
    delta_base_records: int = 4096
    #: Archived sets are compacted into one when there are more than this many.
    max_archives: int = 8
    #: Payload files are packed this many at a time, when they are of one size class...
    payload_pack_fanout: int = 8
    #: ...size classes being powers of the fanout times this many bytes.
    payload_pack_base_bytes: int = 64 << 10
    #: New keys are leased this long (the job sends them to the frontier at once; 0: no lease).
    new_url_lease_ms: int = 0
    due: DuePolicy = field(default_factory=DuePolicy)
    archive: ArchivePolicy = field(default_factory=ArchivePolicy)
    #: fsync every file before the manifest that names it (needed for checkpoints).
    fsync: bool = True
    #: Write each new manifest as a file too, so :meth:`Drum.open` can reopen the directory.
    write_manifest_files: bool = True

    @property
    def windowed(self) -> bool:
        """Whether selections use a due window: asked for, and the window can be kept exact
        without a pass (no ``min_score``; the archive policy gives up on nothing but records
        never due again, as a pass passes over the records it would archive: a failure count,
        a score or a host's rank among its records can change without a merge reading them)."""
        due, archive = self.due, self.archive
        return (
            due.max_urls > 0 and due.window_urls > 0 and due.min_score == float("-inf")
            and archive.min_score is None and archive.max_failures == 0
            and archive.host_max_urls == 0
        )

    def __post_init__(self) -> None:
        if self.buffer_ops < 1 or self.block_records < 1 or self.max_deltas < 1:
            raise ValueError("buffer_ops, block_records and max_deltas must be >= 1")
        if not 0 < self.major_ratio or self.max_archives < 1:
            raise ValueError("major_ratio must be > 0 and max_archives >= 1")
        if self.delta_fanout < 2 or self.delta_base_records < 1:
            raise ValueError("delta_fanout must be >= 2 and delta_base_records >= 1")
        if self.payload_pack_fanout < 2 or self.payload_pack_base_bytes < 1:
            raise ValueError("payload_pack_fanout must be >= 2 and payload_pack_base_bytes >= 1")


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


@dataclass(frozen=True)
class JournalChunk:
    """Buffer operations for keyed state: if ``reset``, the pending state is ``[data]``,
    otherwise ``data`` is appended to it."""

    reset: bool
    data: bytes
    #: Operations in ``data`` (0: nothing to append).
    operations: int = 0


_EMPTY_KEYS = np.empty(0, dtype=np.uint64)
_OPS_HEAD = struct.Struct("<8sHHQQ")
_OPS_MAGIC = b"DRUMOPS1"


def _empty_checks() -> Checks:
    return Checks(_EMPTY_KEYS, _EMPTY_KEYS, np.empty(0, dtype=bool))


def _empty_new() -> NewKeys:
    return NewKeys(_EMPTY_KEYS, _EMPTY_KEYS, np.empty(0, dtype=RECORD), [])


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


class _BlockStream:
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


def _fold_pieces(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
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


def _merged_chunks(runs: list[RunFile]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The folded records of ``runs`` (oldest first) in key order, a few blocks at a time.
    Memory: about one block per run."""
    streams = [s for s in (_BlockStream(r) for r in runs) if not s.done]
    while streams:
        bound = min(s.last for s in streams)
        pieces = [s.take_until(bound) for s in streams]
        streams = [s for s in streams if not s.done]
        keys, values = _fold_pieces(pieces)
        if len(keys):
            yield keys, values


class _HostRanks:
    """Running count of records per host over a merge in key order. Memory O(hosts)."""

    def __init__(self) -> None:
        self.hosts = np.empty(0, dtype=np.uint32)
        self.counts = np.empty(0, dtype=np.int64)

    def ranks(self, hosts: np.ndarray) -> np.ndarray:
        """For each record (in order), how many records of its host came before it."""
        n = len(hosts)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        order = np.argsort(hosts, kind="stable")
        sorted_hosts = hosts[order]
        head = np.empty(n, dtype=bool)
        head[0] = True
        np.not_equal(sorted_hosts[1:], sorted_hosts[:-1], out=head[1:])
        starts = np.flatnonzero(head)
        uniq = sorted_hosts[starts]
        group = np.cumsum(head) - 1
        within = np.arange(n) - starts[group]
        at = np.searchsorted(self.hosts, uniq)
        known = at < len(self.hosts)
        known[known] = self.hosts[at[known]] == uniq[known]
        prior = np.zeros(len(uniq), dtype=np.int64)
        prior[known] = self.counts[at[known]]
        ranks = np.empty(n, dtype=np.int64)
        ranks[order] = prior[group] + within
        sizes = np.diff(np.append(starts, n))
        self.counts[at[known]] += sizes[known]
        new_hosts = uniq[~known]
        if len(new_hosts):
            hosts_all = np.concatenate((self.hosts, new_hosts))
            counts_all = np.concatenate((self.counts, sizes[~known]))
            resort = np.argsort(hosts_all, kind="stable")
            self.hosts, self.counts = hosts_all[resort], counts_all[resort]
        return ranks


def _rank_within(groups: np.ndarray, order: np.ndarray) -> np.ndarray:
    """For records sorted by ``order`` (grouped by ``groups``), the rank within the group."""
    g = groups[order]
    n = len(g)
    head = np.empty(n, dtype=bool)
    if n:
        head[0] = True
        np.not_equal(g[1:], g[:-1], out=head[1:])
    starts = np.flatnonzero(head)
    group = np.cumsum(head) - 1
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.arange(n) - starts[group]
    return ranks


class ReleaseLimits(Protocol):
    """Budgets a due selection keeps (the DRUM's user's): how many more new URLs (UNFETCHED)
    of a group of hosts (a registered domain, say), and of a shape within a host (the records'
    ``host`` and ``shape`` hashes), it may take now. Revisits are not limited. A selection asks
    once for each host, group and pair it meets, for all of them at once."""

    def groups(self, hosts: np.ndarray) -> np.ndarray:
        """The group (int64) of each host hash (unique, uint32)."""
        ...

    def group_limits(self, groups: np.ndarray) -> np.ndarray:
        """For each group (unique), how many more of its URLs may go (>= 0)."""
        ...

    def shape_limits(self, hosts: np.ndarray, shapes: np.ndarray) -> np.ndarray:
        """For each (host, shape) pair (unique), how many more of its URLs may go (>= 0)."""
        ...

    #: New URLs ranked below this do not go (-inf: none held back so).
    min_rank: float
    #: Optional (None when absent): ascending bucket edges; the selection then counts the due
    #: new URLs their group and shape have room for by rank bucket
    #: (:attr:`DueSelection.new_rank_counts`), bucket ``i`` holding ranks from
    #: ``edges[i - 1]`` (-inf for bucket 0) to below ``edges[i]``.
    rank_edges: np.ndarray | None


_UNLIMITED = np.iinfo(np.int64).max


class _Limits:
    """The answers of a :class:`ReleaseLimits` for one selection, asked once per host, group
    and pair, and the due records each kind of limit held back. Memory O(hosts and pairs
    met)."""

    def __init__(self, limits: ReleaseLimits) -> None:
        self._limits = limits
        self._group_of: dict[int, int] = {}
        self._groups: dict[int, int] = {}
        self._shapes: dict[tuple[int, int], int] = {}
        self._group_due: dict[int, int] = {}
        self._pair_due: dict[tuple[int, int], int] = {}
        self.min_rank = float(getattr(limits, "min_rank", float("-inf")))
        #: Due new URLs held back because their rank is below ``min_rank``...
        self.held_by_rank = 0
        #: ... and the best rank among them (-inf: none).
        self.held_best_rank = float("-inf")
        self.rank_edges = getattr(limits, "rank_edges", None)
        #: With ``rank_edges``: the due new URLs offered, counted by rank bucket.
        self.new_rank_counts = (
            np.zeros(len(self.rank_edges) + 1, dtype=np.int64)
            if self.rank_edges is not None else None
        )

    def count_ranks(self, rank: np.ndarray) -> None:
        """Count ranks of due new URLs into :attr:`new_rank_counts` (if asked). O(n log b)."""
        if self.new_rank_counts is not None and len(rank):
            buckets = np.searchsorted(self.rank_edges, rank, side="right")
            self.new_rank_counts += np.bincount(buckets, minlength=len(self.new_rank_counts))

    def caps(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The group, the group's limit and the shape's limit of each record (revisits:
        group -1, unlimited). O(n) and a question per host, group and pair not met yet."""
        n = len(values)
        group = np.full(n, -1, dtype=np.int64)
        group_cap = np.full(n, _UNLIMITED, dtype=np.int64)
        shape_cap = group_cap.copy()
        new = values["status"] == DrumStatus.UNFETCHED
        if not new.any():
            return group, group_cap, shape_cap
        hosts = values["host"][new].astype(np.int64).tolist()
        shapes = values["shape"][new].astype(np.int64).tolist()
        missing = sorted(set(hosts) - self._group_of.keys())
        if missing:
            answers = self._limits.groups(np.array(missing, dtype=np.uint32))
            self._group_of.update(zip(missing, np.asarray(answers).tolist(), strict=True))
        groups = [self._group_of[h] for h in hosts]
        missing = sorted(set(groups) - self._groups.keys())
        if missing:
            answers = self._limits.group_limits(np.array(missing, dtype=np.int64))
            self._groups.update(zip(missing, np.asarray(answers).tolist(), strict=True))
        pairs = list(zip(hosts, shapes, strict=True))
        missing = sorted(set(pairs) - self._shapes.keys())
        if missing:
            answers = self._limits.shape_limits(
                np.array([h for h, _ in missing], dtype=np.uint32),
                np.array([s for _, s in missing], dtype=np.uint32))
            self._shapes.update(zip(missing, np.asarray(answers).tolist(), strict=True))
        group[new] = groups
        group_cap[new] = [self._groups[g] for g in groups]
        shape_cap[new] = [self._shapes[pair] for pair in pairs]
        return group, group_cap, shape_cap

    def count_due(self, values: np.ndarray, group: np.ndarray) -> None:
        """Count the due new records of a chunk (``group``: their groups, from :meth:`caps`)
        per group and per pair. O(n)."""
        new = values["status"] == DrumStatus.UNFETCHED
        if not new.any():
            return
        pairs = zip(values["host"][new].tolist(), values["shape"][new].tolist(), strict=True)
        for key in group[new].tolist():
            self._group_due[key] = self._group_due.get(key, 0) + 1
        for pair in pairs:
            self._pair_due[pair] = self._pair_due.get(pair, 0) + 1

    def held(self) -> tuple[int, int]:
        """The due new URLs the limits hold back: by their shape's limit, then (of those their
        shapes' limits leave) by their group's. O(groups and pairs met)."""
        by_shape = by_group = 0
        left: dict[int, int] = {}
        for pair, due in self._pair_due.items():
            allowed = min(due, self._shapes[pair])
            by_shape += due - allowed
            group = self._group_of[pair[0]]
            left[group] = left.get(group, 0) + allowed
        for group, allowed in left.items():
            by_group += max(0, allowed - self._groups[group])
        return by_group, by_shape


class _Pool:
    """The best ``max_urls`` candidates offered, by (rank desc, key asc), at most ``per_host``
    per host, and with ``limits`` at most their host's and shape's limits. Memory O(max_urls +
    one chunk)."""

    def __init__(self, policy: DuePolicy, limits: _Limits | None = None) -> None:
        self.policy = policy
        self.limits = limits
        self.keys = _EMPTY_KEYS
        self.values = np.empty(0, dtype=RECORD)
        self.rank = np.empty(0, dtype=np.float64)
        #: With limits: each candidate's group, group limit and shape limit (one row each).
        self.caps = np.empty((0, 3), dtype=np.int64)

    def _better_than_worst(self, keys: np.ndarray, rank: np.ndarray) -> np.ndarray:
        worst_rank, worst_key = self.rank[-1], self.keys[-1]
        return (rank > worst_rank) | ((rank == worst_rank) & (keys < worst_key))

    def offer(self, keys: np.ndarray, values: np.ndarray, rank: np.ndarray,
              caps: np.ndarray | None = None) -> None:
        """Merge candidates in (with limits, ``caps``: their rows of :attr:`caps`). O(c log c)
        for c candidates that can still make it."""
        max_urls = self.policy.max_urls
        if len(keys) == 0 or max_urls <= 0:
            return
        if caps is None:
            caps = np.empty((len(keys), 3), dtype=np.int64)
        if len(self.keys) >= max_urls:
            better = self._better_than_worst(keys, rank)
            if not better.any():
                return
            keys, values = keys[better], select(values, better)
            rank, caps = rank[better], caps[better]
        keys = np.concatenate((self.keys, keys))
        values = concat([self.values, values])
        rank = np.concatenate((self.rank, rank))
        caps = np.concatenate((self.caps, caps))
        if self.limits is not None:
            keep = self._within_limits(keys, values, rank, caps)
            keys, values, rank, caps = keys[keep], select(values, keep), rank[keep], caps[keep]
        if self.policy.per_host > 0:
            hosts = values["host"]
            order = np.lexsort((keys, -rank, hosts))
            within = _rank_within(hosts, order)
            keep = (within < self.policy.per_host) | (hosts == 0)
            keys, values, rank, caps = keys[keep], select(values, keep), rank[keep], caps[keep]
        order = np.lexsort((keys, -rank))[:max_urls]
        self.keys, self.values, self.rank = keys[order], take(values, order), rank[order]
        self.caps = caps[order]

    @staticmethod
    def _within_limits(keys: np.ndarray, values: np.ndarray, rank: np.ndarray,
                       caps: np.ndarray) -> np.ndarray:
        """Which candidates their shape's limit, then their group's, leaves, best first."""
        group, group_cap, shape_cap = caps[:, 0], caps[:, 1], caps[:, 2]
        hosts = values["host"].astype(np.uint64)
        pairs = (hosts << np.uint64(32)) | values["shape"].astype(np.uint64)
        keep = _rank_within(pairs, np.lexsort((keys, -rank, pairs))) < shape_cap
        kept = np.flatnonzero(keep)
        if len(kept):
            order = np.lexsort((keys[kept], -rank[kept], group[kept]))
            keep[kept] = _rank_within(group[kept], order) < group_cap[kept]
        return keep


class _DueSelector:
    """Best ``max_urls`` due records by (rank desc, key asc), at most ``per_host`` per host,
    rank being ``score - depth_weight x depth`` (a revisit's plus how many intervals late it
    is, with ``refresh_share``). Exact and incremental: memory O(max_urls + one chunk). With
    ``mark_queued``, a host's QUEUED records count against its ``per_host`` too: they are
    counted during the scan and the candidates trimmed at the end (so a selection may hold
    fewer than ``max_urls`` when candidates of full hosts were kept over others)."""

    def __init__(self, policy: DuePolicy, limits: ReleaseLimits | None = None) -> None:
        self.policy = policy
        self.limits = _Limits(limits) if limits is not None else None
        self._new = _Pool(policy, self.limits)
        self._revisits = _Pool(policy, self.limits) if policy.refresh_share > 0 else self._new
        self.keys = _EMPTY_KEYS
        self.values = np.empty(0, dtype=RECORD)
        #: Due records offered (selected or not).
        self.due = 0
        self.full = False
        self.revisits = 0
        #: The earliest next fetch time of the records offered and not due yet.
        self.next_due_ms: int | None = None
        self._queued_hosts: list[np.ndarray] = []

    def _rank(self, values: np.ndarray) -> np.ndarray:
        rank = values["score"].astype(np.float64)
        if self.policy.depth_weight:
            depth = values["depth"]
            rank -= self.policy.depth_weight * np.where(depth == NO_DEPTH, 0, depth)
        return rank

    def offer_due(self, keys: np.ndarray, values: np.ndarray, now_ms: int) -> None:
        """Offer the records of a chunk that are due at ``now_ms``: UNFETCHED or an outcome,
        next fetch time reached, not leased, score at least the policy's minimum."""
        status = values["status"]
        if self.policy.mark_queued and self.policy.per_host > 0:
            queued = status == DrumStatus.QUEUED
            if queued.any():
                self._queued_hosts.append(values["host"][queued])
        next_fetch = next_fetch_times(values)  # (due when announced, whatever its schedule)
        candidate = (status >= DrumStatus.UNFETCHED) & (values["score"] >= self.policy.min_score)
        due = candidate & (next_fetch <= now_ms) & (values["leased_until_ms"] <= now_ms)
        later = candidate & (next_fetch > now_ms) & (next_fetch != NEVER)
        if later.any():
            soonest = int(next_fetch[later].min())
            if self.next_due_ms is None or soonest < self.next_due_ms:
                self.next_due_ms = soonest
        count = int(np.count_nonzero(due))
        if not count:
            return
        self.due += count
        keys, values, next_fetch = keys[due], select(values, due), next_fetch[due]
        rank = self._rank(values)
        caps = None
        if self.limits is not None:
            caps = np.column_stack(self.limits.caps(values))
            new = values["status"] == DrumStatus.UNFETCHED
            # Ranks are counted of the new URLs their limits leave room for (a group or shape
            # with none left holds them whatever their rank).
            self.limits.count_ranks(rank[new & (caps[:, 1] > 0) & (caps[:, 2] > 0)])
            low = new & (rank < self.limits.min_rank)
            if low.any():
                self.limits.held_by_rank += int(np.count_nonzero(low))
                self.limits.held_best_rank = max(self.limits.held_best_rank,
                                                 float(rank[low].max()))
                keep = ~low
                keys, values, next_fetch, rank, caps = (keys[keep], select(values, keep),
                                                        next_fetch[keep], rank[keep], caps[keep])
            self.limits.count_due(values, caps[:, 0])
        if self._revisits is self._new:
            self._new.offer(keys, values, rank, caps)
            return
        revisit = values["status"] != DrumStatus.UNFETCHED
        fresh = ~revisit
        if fresh.any():
            self._new.offer(keys[fresh], select(values, fresh), rank[fresh],
                            caps[fresh] if caps is not None else None)
        if revisit.any():
            values = select(values, revisit)
            late_ms = (now_ms - next_fetch[revisit]).astype(np.float64)
            interval_ms = np.maximum(values["interval_s"].astype(np.float64), 1.0) * 1000
            self._revisits.offer(keys[revisit], values, rank[revisit] + late_ms / interval_ms,
                                 caps[revisit] if caps is not None else None)

    def _shares(self) -> tuple[int, int]:
        """How many of the best revisits and of the best new URLs the selection takes."""
        total = self.policy.max_urls
        revisits, new = len(self._revisits.keys), len(self._new.keys)
        quota = int(total * self.policy.refresh_share)
        take_revisits = min(revisits, max(quota, total - new))
        return take_revisits, min(new, total - take_revisits)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """The selection (revisits first with ``refresh_share``, each kind best first)."""
        if self._revisits is self._new:
            keys, values = self._new.keys, self._new.values
            self.revisits = int(np.count_nonzero(values["status"] != DrumStatus.UNFETCHED))
            self.full = len(keys) >= self.policy.max_urls > 0
        else:
            take_revisits, take_new = self._shares()
            keys = np.concatenate((self._revisits.keys[:take_revisits],
                                   self._new.keys[:take_new]))
            values = concat([self._revisits.values[:take_revisits], self._new.values[:take_new]])
            self.revisits = take_revisits
            self.full = len(keys) >= self.policy.max_urls > 0
            if self.policy.per_host > 0 and len(keys):
                # Each kind kept per_host of a host: together, the first per_host of it.
                hosts = values["host"]
                within = _rank_within(hosts, np.lexsort((np.arange(len(keys)), hosts)))
                keep = (within < self.policy.per_host) | (hosts == 0)
                keys, values = keys[keep], select(values, keep)
                self.revisits = int(np.count_nonzero(keep[:take_revisits]))
        if self._queued_hosts and len(keys):
            queued_hosts, queued = np.unique(
                np.concatenate(self._queued_hosts), return_counts=True
            )
            hosts = values["host"]
            where = np.searchsorted(queued_hosts, hosts)
            where = np.minimum(where, len(queued_hosts) - 1)
            already = np.where(queued_hosts[where] == hosts, queued[where], 0)
            within = _rank_within(hosts, np.lexsort((np.arange(len(keys)), hosts)))
            keep = (within + already < self.policy.per_host) | (hosts == 0)
            revisit = values["status"] != DrumStatus.UNFETCHED
            keys, values = keys[keep], select(values, keep)
            self.revisits = int(np.count_nonzero(keep & revisit))
            self._queued_hosts = []
        self.keys, self.values = keys, values
        return keys, values


class Drum:
    """A DRUM in one directory. Build it with :meth:`create`, :meth:`open` or :meth:`restore`.

    Operations are buffered and answered in bulk: each operation method returns the
    :class:`MergeResult` of every merge it triggered (usually none). Operation ``i`` of a
    DRUM's life has sequence number ``i``; ``next_seq`` is the number of the next one.
    Not thread-safe: one DRUM is used by one thread.
    """

    def __init__(
        self,
        directory: str,
        manifest: Manifest,
        config: DrumConfig,
        opener: Opener | None,
        *,
        verify: bool = False,
    ) -> None:
        self.directory = os.fspath(directory)
        self.config = config
        self._opener = opener or default_opener
        self._manifest = manifest
        self._reasons = ReasonTable(manifest.reasons)
        self._state_version = 0
        self._main: RunFile | None = None
        self._deltas: list[RunFile] = []
        self._archives: list[RunFile] = []
        self._payload_files: dict[str, PayloadFile] = {}  # open payload files, by name
        self._open_files(verify)
        cap = config.buffer_ops
        self._keys = np.empty(cap, dtype=np.uint64)
        self._kinds = np.empty(cap, dtype=np.uint8)
        self._values = np.empty(cap, dtype=RECORD)
        self._payloads: list[bytes] = []
        self._payload_bytes = 0
        self._fill = 0
        self._journal_from = 0
        self._journal_reset = False
        self._closed = False
        #: Seconds spent per merge phase (diagnostics; see also drum.files.IO_SECONDS).
        self.timings: dict[str, float] = {}
        # The due window (None: none yet, or given up; never stored: built by a pass).
        self._window: DueWindow | None = None
        #: What the due window did (diagnostics, since this object was made): selections made
        #: from it, passes that built one, windows given up (by cause), keys looked up in the
        #: runs to keep one exact.
        self.window_stats: dict[str, int] = {}

    # ------------------------------------------------------------------ construction

    @classmethod
    def create(
        cls, directory: str, config: DrumConfig | None = None, *, opener: Opener | None = None
    ) -> Drum:
        """A new, empty DRUM in ``directory`` (created if needed; must hold no manifest).
        O(1) I/O."""
        os.makedirs(directory, exist_ok=True)
        if any(n.startswith("manifest-") for n in drum_file_names(directory)):
            raise DrumManifestError(directory, "already holds a DRUM (use Drum.open)")
        manifest = Manifest(token=os.urandom(4).hex())
        return cls(directory, manifest, config or DrumConfig(), opener)

    @classmethod
    def open(
        cls,
        directory: str,
        config: DrumConfig | None = None,
        *,
        opener: Opener | None = None,
        verify: bool = False,
    ) -> Drum:
        """Reopen the DRUM of ``directory`` from its newest manifest file, the one with the
        highest serial (standalone use; operations never merged are lost, as without a
        journal; a restore makes its manifest the newest). O(files) I/O."""
        serials = _manifest_serials(directory)
        if not serials:
            raise DrumManifestError(directory, "no DRUM manifest in this directory")
        newest = max(serials, key=serials.__getitem__)
        path = os.path.join(directory, newest)
        with open(path, "rb") as handle:
            manifest = Manifest.from_bytes(handle.read(), path)
        return cls(directory, manifest, config or DrumConfig(), opener, verify=verify)

    @classmethod
    def restore(
        cls,
        directory: str,
        manifest: Manifest | Mapping[str, Any] | bytes,
        pending: Iterable[bytes] = (),
        config: DrumConfig | None = None,
        *,
        opener: Opener | None = None,
        verify: bool = False,
    ) -> Drum:
        """The DRUM described by ``manifest`` with the journal chunks ``pending`` back in its
        buffer: exactly the DRUM whose manifest and journal were stored (the job's restore).

        Checks that every file exists with the recorded size and checksum (O(files) I/O;
        with ``verify``, reads and checks every block and payload: O(total size)). Raises
        :class:`DrumMissingFileError` or :class:`DrumCorruptError` naming the file.

        With ``write_manifest_files``, the restored manifest becomes the one :meth:`open` loads:
        if a manifest file of a higher serial is in the directory (a later state, abandoned by
        this restore of an earlier one) or its own file is not, the manifest is written again
        under a serial above every one there (same files and counters, a new name; merges go
        on from it). The abandoned manifests and their files are left to
        :func:`collect_garbage`. One small file written, at most.
        """
        if isinstance(manifest, bytes | bytearray):
            manifest = Manifest.from_bytes(bytes(manifest))
        elif not isinstance(manifest, Manifest):
            manifest = Manifest.from_json(manifest)
        drum = cls(directory, manifest, config or DrumConfig(), opener, verify=verify)
        try:
            for index, chunk in enumerate(pending):
                kinds, keys, values, payloads = decode_ops(chunk, f"pending chunk {index}")
                drum._append_raw(kinds, keys, values, payloads)
            drum._journal_from = drum._fill
            if drum.config.write_manifest_files:
                drum._become_newest()
        except BaseException:
            drum.close()
            raise
        return drum

    def _become_newest(self) -> None:
        """Write the manifest again under a serial above every manifest file's of the
        directory, unless its own file is already the newest."""
        serials = _manifest_serials(self.directory)
        manifest = self.manifest
        own = serials.pop(manifest.file_name, None)
        if own is not None and all(serial < own for serial in serials.values()):
            return
        serial = max([manifest.serial, *serials.values()]) + 1
        manifest = manifest.evolve(serial=serial, token=os.urandom(4).hex())
        path = self._path(manifest.file_name)
        _ManifestWriter(path, self._opener, self.config.fsync).write(manifest.to_bytes())
        self._manifest = manifest
        self._state_version += 1

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def _open_files(self, verify: bool) -> None:
        m = self._manifest
        opened: list[RunFile | PayloadFile] = []
        try:
            if m.main:
                self._main = RunFile(self._path(m.main.name), m.main)
                opened.append(self._main)
            for info in m.deltas:
                self._deltas.append(RunFile(self._path(info.name), info))
                opened.append(self._deltas[-1])
            for info in m.archives:
                self._archives.append(RunFile(self._path(info.name), info))
                opened.append(self._archives[-1])
            for info in m.payloads.values():
                payload = PayloadFile(self._path(info.name), info)
                if verify:
                    payload.verify()
                payload.close()  # reopened on demand: there may be many
            if verify:
                for run in self._runs():
                    for block in range(run.blocks):
                        run.read_block(block)
        except BaseException:
            for item in opened:
                item.close()
            raise

    def _runs(self) -> list[RunFile]:
        return ([self._main] if self._main else []) + self._deltas + self._archives

    # ------------------------------------------------------------------ state for the job

    @property
    def manifest(self) -> Manifest:
        """The current manifest (with the reason table as it is now). O(files)."""
        if len(self._reasons) != len(self._manifest.reasons):
            self._manifest = self._manifest.evolve(reasons=tuple(self._reasons.names()))
        return self._manifest

    def manifest_bytes(self) -> bytes:
        """:attr:`manifest` as compact JSON bytes, for keyed state. O(files)."""
        return self.manifest.to_bytes()

    @property
    def state_version(self) -> int:
        """Changes whenever the manifest changes (merge, new reason): store it then."""
        return self._state_version

    @property
    def next_seq(self) -> int:
        """Sequence number of the next operation. O(1), no I/O."""
        return self._manifest.counters.next_seq + self._fill

    @property
    def buffered(self) -> int:
        """Operations in the buffer."""
        return self._fill

    @property
    def counters(self) -> Counters:
        """The manifest's counters (as of the last merge). O(1), no I/O."""
        return self._manifest.counters

    def __len__(self) -> int:
        """Distinct keys known after the last merge (live and archived). O(1)."""
        return self._manifest.counters.keys

    def reason_code(self, reason: str) -> int:
        """The code of a reason string (added to the table if new). O(1)."""
        before = len(self._reasons)
        code = self._reasons.code(reason)
        if len(self._reasons) != before:
            self._state_version += 1
        return code

    def reason_name(self, code: int) -> str:
        """The reason string of a code. O(1), no I/O."""
        return self._reasons.name(code)

    def pending(self) -> bytes:
        """Every buffered operation as one journal chunk. O(buffer)."""
        n = self._fill
        return encode_ops(self._kinds[:n], self._keys[:n], self._values[:n], self._payloads)

    def take_journal(self) -> JournalChunk:
        """The operations buffered since the previous call, for the job's keyed state (a list
        of chunks): ``reset`` tells that a merge consumed the earlier chunks. O(new ops)."""
        start, n = self._journal_from, self._fill
        chunk = JournalChunk(
            self._journal_reset,
            encode_ops(
                self._kinds[start:n], self._keys[start:n], self._values[start:n],
                self._payloads[start:n],
            ),
            n - start,
        )
        self._journal_from = n
        self._journal_reset = False
        return chunk

    def collect_garbage(
        self,
        retained: Iterable[Manifest | Mapping[str, Any] | bytes] = (),
        keep: Iterable[str] = (),
    ) -> list[str]:
        """Delete the files of this directory that neither the current manifest nor any of
        ``retained`` refers to, except those named in ``keep``. O(files); returns the deleted
        names."""
        return collect_garbage(self.directory, [self.manifest, *retained], keep)

    # ------------------------------------------------------------------ operations

    def check(self, keys: np.ndarray | Sequence[int], *, now_ms: int) -> list[MergeResult]:
        """Buffer "is this key known?" for each key. Answers come in the merge's
        :class:`Checks`. O(1) amortised per key in memory; merges as described above."""
        keys = np.asarray(keys, dtype=np.uint64)
        return self._add(CHECK, keys, None, None, now_ms)

    def update(
        self,
        keys: np.ndarray | Sequence[int],
        values: np.ndarray,
        payloads: Sequence[bytes] | None = None,
        *,
        now_ms: int,
    ) -> list[MergeResult]:
        """Buffer "merge ``values[i]`` into the record of ``keys[i]``" (creating it, with
        ``payloads[i]`` as its URL, if the key is unknown). Updates to archived keys are
        dropped and counted. O(1) amortised per key in memory."""
        keys = np.asarray(keys, dtype=np.uint64)
        return self._add(UPDATE, keys, values, payloads, now_ms)

    def check_update(
        self,
        keys: np.ndarray | Sequence[int],
        values: np.ndarray,
        payloads: Sequence[bytes] | None = None,
        *,
        now_ms: int,
    ) -> list[MergeResult]:
        """A check, then an update: the URL-seen test of discovered links. Unknown keys come
        back in :class:`NewKeys` with their payload. O(1) amortised per key in memory."""
        keys = np.asarray(keys, dtype=np.uint64)
        return self._add(CHECK_UPDATE, keys, values, payloads, now_ms)

    def merge(self, *, now_ms: int, major: bool = False, select: bool = False,
              limits: ReleaseLimits | None = None, max_urls: int | None = None) -> MergeResult:
        """Merge the buffer now (a minor merge; with an empty buffer no run or payload file is
        written, only a new manifest); with ``major``, then also a major merge (fold, archive,
        select due URLs); with ``select``, then the due selection: a major merge's when one is
        due anyway, else a read-only pass over the folded runs (:meth:`_MergeState.select`).
        ``limits`` bound the new URLs a selection takes per group of hosts and per shape of a
        host; ``max_urls`` replaces the due policy's ``max_urls`` for this selection.
        I/O: see the module docstring."""
        return self._merge(now_ms, force_major=major, select=select, limits=limits,
                           max_urls=max_urls)

    def _add(
        self,
        kind: int,
        keys: np.ndarray,
        values: np.ndarray | None,
        payloads: Sequence[bytes] | None,
        now_ms: int,
    ) -> list[MergeResult]:
        self._ensure_open()
        if keys.ndim != 1:
            raise ValueError("keys must be a 1-D array of uint64")
        n = len(keys)
        if values is None:
            values = neutral(n)
        elif values.dtype != RECORD or values.shape != (n,):
            raise ValueError(f"values must be an array of {n} drum.RECORD records")
        byte_cap = self.config.buffer_payload_bytes
        if payloads is None:
            payloads = [b""] * n
            total = 0
            lens = None
        else:
            if len(payloads) != n:
                raise ValueError(f"{len(payloads)} payloads for {n} keys")
            total = sum(map(len, payloads))
            if total > 0xFFFF and max(map(len, payloads)) > 0xFFFF:
                raise ValueError("a payload is longer than 65535 bytes")
            lens = None if self._payload_bytes + total < byte_cap else np.fromiter(
                map(len, payloads), dtype=np.int64, count=n
            )
        kinds = np.full(n, kind, dtype=np.uint8)
        results: list[MergeResult] = []
        cap = self.config.buffer_ops
        i = 0
        if lens is None and self._fill + n < cap:  # the common case: all fits, no merge
            self._append_raw(kinds, keys, values, payloads, total)
            return results
        if lens is None:
            lens = np.fromiter(map(len, payloads), dtype=np.int64, count=n)
        while i < n:
            # (The buffer can hold more than ``cap`` after a restore with a smaller buffer:
            # then there is no room, and it is merged first.)
            count = min(cap - self._fill, n - i)
            if count > 0:
                room = byte_cap - self._payload_bytes
                fits = int(np.searchsorted(np.cumsum(lens[i : i + count]), room, side="right"))
                count = max(fits, 1) if self._fill == 0 else fits
            if count <= 0:
                results.append(self._merge(now_ms))
                continue
            self._append_raw(
                kinds[i : i + count], keys[i : i + count], values[i : i + count],
                payloads[i : i + count], int(lens[i : i + count].sum()),
            )
            i += count
            if self._fill >= cap or self._payload_bytes >= byte_cap:
                results.append(self._merge(now_ms))
        return results

    def _append_raw(
        self,
        kinds: np.ndarray,
        keys: np.ndarray,
        values: np.ndarray,
        payloads: Sequence[bytes],
        payload_bytes: int | None = None,
    ) -> None:
        n = len(keys)
        end = self._fill + n
        if end > len(self._keys):  # a restore with more pending than the buffer holds
            grow = max(end, 2 * len(self._keys))
            self._keys = np.resize(self._keys, grow)
            self._kinds = np.resize(self._kinds, grow)
            self._values = np.resize(self._values, grow)
        self._keys[self._fill : end] = keys
        self._kinds[self._fill : end] = kinds
        put(self._values, slice(self._fill, end), values)  # payload fields cleared at merge
        self._payloads.extend(payloads)
        self._payload_bytes += (
            sum(map(len, payloads)) if payload_bytes is None else payload_bytes
        )
        self._fill = end

    # ------------------------------------------------------------------ merging

    def _new_name(self, prefix: str, serial: int, index: int) -> str:
        return f"{prefix}-{serial:010x}-{os.urandom(4).hex()}-{index:x}.drum"

    def _merge(self, now_ms: int, force_major: bool = False, select: bool = False,
               limits: ReleaseLimits | None = None, max_urls: int | None = None) -> MergeResult:
        self._ensure_open()
        old = self.manifest
        serial = old.serial + 1
        written: list[str] = []  # paths of new files, removed if the merge fails
        opened: list[RunFile] = []
        due = self.config.due if max_urls is None else replace(self.config.due, max_urls=max_urls)
        try:
            state = _MergeState(self, old, serial, now_ms, written, opened, limits, due)
            result = state.minor()
            main_records = state.main_records()
            major = force_major or state.delta_records() > self.config.major_ratio * max(
                main_records, self.config.buffer_ops
            )
            if not major:
                state.tier_deltas()
                major = len(state.deltas) >= self.config.max_deltas
            if major:
                result = state.major(result, select=force_major or select)
            elif select and state.window is not None and state.window.usable(now_ms):
                result = state.select_from_window(result)
            elif select:
                result = state.select(result)
            state.pack_payloads()
            c = state.counters
            manifest = Manifest(
                serial=serial,
                token=os.urandom(4).hex(),  # unique name even after a restore of an older one
                main=state.main.info() if state.main else None,
                deltas=tuple(r.info() for r in state.deltas),
                archives=tuple(r.info() for r in state.archives),
                payloads=state.payloads,
                reasons=tuple(self._reasons.names()),
                counters=c,
            )
            if self.config.write_manifest_files:
                path = self._path(manifest.file_name)
                writer = _ManifestWriter(path, self._opener, self.config.fsync)
                written.append(path)
                writer.write(manifest.to_bytes())
        except BaseException:
            for run in opened:
                run.close()
            for path in written:
                try:
                    os.remove(path)
                except OSError:
                    pass
            raise
        # Commit: swap the in-memory state (files of the old manifest stay on disk).
        keep = {id(r) for r in [state.main, *state.deltas, *state.archives] if r is not None}
        for run in self._runs():
            if id(run) not in keep:
                run.close()
        self._main, self._deltas, self._archives = state.main, state.deltas, state.archives
        self._window = state.window
        for name, amount in state.window_counts.items():
            self.window_stats[name] = self.window_stats.get(name, 0) + amount
        self._manifest = manifest
        self._state_version += 1
        self._fill = 0
        self._payloads = []
        self._payload_bytes = 0
        self._journal_from = 0
        self._journal_reset = True
        return result

    def _payload_file(self, info: FileInfo) -> PayloadFile:
        handle = self._payload_files.get(info.name)
        if handle is None:
            handle = PayloadFile(self._path(info.name), info)
            if len(self._payload_files) >= 64:
                for other in self._payload_files.values():
                    other.close()
                self._payload_files.clear()
            self._payload_files[info.name] = handle
        return handle

    def read_payloads(self, values: np.ndarray, manifest: Manifest | None = None) -> list[bytes]:
        """The payloads (URLs) of records, each checked (the 4 KiB pages holding it are read
        and checked against their CRC-32). One pread per record."""
        manifest = manifest or self._manifest
        starts = sorted(manifest.payloads)
        out = []
        for pos, length in zip(
            values["payload_pos"].tolist(), values["payload_len"].tolist(), strict=True
        ):
            if length == 0:
                out.append(b"")
                continue
            at = bisect.bisect_right(starts, pos) - 1
            if at < 0:
                raise DrumCorruptError(self.directory, f"payload position {pos} in no file")
            start = starts[at]
            info = manifest.payloads[start]
            if pos + length > start + info.records:
                raise DrumCorruptError(
                    self.directory, f"payload {pos}+{length} beyond the file {info.name}"
                )
            out.append(self._payload_file(info).read(pos - start, length))
        return out

    # ------------------------------------------------------------------ reading

    def items(self, *, archived: bool = True) -> Iterator[tuple[np.ndarray, np.ndarray, bool]]:
        """Every merged record, in key order per part: ``(keys, values, is_archived)`` chunks,
        first the live records (main run and deltas folded), then each archived set.
        The buffer is not included. O(total size) I/O, memory a few blocks per run."""
        self._ensure_open()
        for keys, values in _merged_chunks([r for r in [self._main, *self._deltas] if r]):
            yield keys, values, False
        if archived:
            for run in self._archives:
                for block in range(run.blocks):
                    keys, values = run.read_block(block)
                    yield keys, values, True

    def close(self) -> None:
        """Close the open files (nothing is written). The DRUM cannot be used afterwards."""
        for run in self._runs():
            run.close()
        for handle in self._payload_files.values():
            handle.close()
        self._payload_files.clear()
        self._closed = True

    def _ensure_open(self) -> None:
        if self._closed:
            raise ValueError("this DRUM is closed")

    def __enter__(self) -> Drum:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ invariants

    def _check(self) -> None:
        """Assert the invariants (tests; O(total size) I/O and memory):

        * the manifest names exactly the open runs and every file it names exists with the
          recorded size and checksum (reopened and fully read);
        * every run's keys are strictly increasing (no duplicates within a run), blocks agree
          with the table;
        * archived sets are disjoint from each other and from the live runs;
        * the counters match: distinct keys, archived keys, sequence numbers;
        * every payload reference points inside a live segment;
        * the buffer is within its bounds and consistent with the journal marks;
        * the due window holds exactly the live records it must, each as it is on disk
          (scores to float32 rounding: sums folded in another grouping).
        """
        m = self.manifest
        assert [r.info() for r in self._runs()] == m.runs(), "open runs differ from manifest"
        live_keys: list[np.ndarray] = []
        archived_keys: list[np.ndarray] = []
        records: list[np.ndarray] = []
        for run, info in zip(self._runs(), m.runs(), strict=True):
            fresh = RunFile(self._path(info.name), info)  # re-read from disk
            try:
                last = -1
                keys_all = []
                for block in range(fresh.blocks):
                    keys, values = fresh.read_block(block)
                    entry = fresh.table[block]
                    assert len(keys) > 0, f"{info.name}: empty block"
                    assert int(entry["first"]) == int(keys[0]), f"{info.name}: fence first"
                    assert int(entry["last"]) == int(keys[-1]), f"{info.name}: fence last"
                    assert bool(np.all(keys[1:] > keys[:-1])), f"{info.name}: not sorted"
                    assert int(keys[0]) > last, f"{info.name}: blocks out of order"
                    last = int(keys[-1])
                    keys_all.append(keys)
                    records.append(values)
                keys = np.concatenate(keys_all) if keys_all else _EMPTY_KEYS
                assert len(keys) == fresh.records == run.records
                kind = KIND_ARCHIVE if run in self._archives else None
                if kind == KIND_ARCHIVE:
                    assert fresh.kind == KIND_ARCHIVE, f"{info.name}: not an archive"
                    archived_keys.append(keys)
                else:
                    live_keys.append(keys)
            finally:
                fresh.close()
        if self._main is not None:
            assert self._main.kind == KIND_MAIN
        assert all(d.kind == KIND_DELTA for d in self._deltas)
        live = np.unique(np.concatenate(live_keys)) if live_keys else _EMPTY_KEYS
        arch = np.concatenate(archived_keys) if archived_keys else _EMPTY_KEYS
        assert len(np.unique(arch)) == len(arch), "a key is in two archived sets"
        assert len(np.intersect1d(live, arch)) == 0, "a key is both live and archived"
        c = m.counters
        assert c.keys == len(live) + len(arch), f"keys counter {c.keys} != {len(live)}+{len(arch)}"
        assert c.archived == len(arch), "archived counter mismatch"
        # Payload files: consecutive ranges that cover the log exactly.
        end = 0
        for start in sorted(m.payloads):
            info = m.payloads[start]
            assert start == end, f"payload log gap or overlap at {start} ({info.name})"
            end = start + info.records
            handle = PayloadFile(self._path(info.name), info)
            handle.verify()
            handle.close()
        assert end == c.payload_end, f"payload files end at {end}, log at {c.payload_end}"
        if records:
            values = np.concatenate(records)
            refs = values[values["payload_len"] != 0]
            ends = refs["payload_pos"].astype(np.int64) + refs["payload_len"]
            assert len(refs) == 0 or int(ends.max()) <= c.payload_end, "payload beyond the log"
        assert 0 <= self._journal_from <= self._fill <= len(self._keys)
        assert len(self._payloads) == self._fill
        assert self._payload_bytes == sum(map(len, self._payloads))
        assert self._payload_bytes <= max(self.config.buffer_payload_bytes, 0xFFFF) or (
            len(self._keys) > self.config.buffer_ops
        ), "the buffer's payload bytes exceed their bound"
        window = self._window
        if window is not None:
            held = [(keys[window.holds(values)], select(values, window.holds(values)))
                    for keys, values, _ in self.items(archived=False)]
            keys = np.concatenate([k for k, _ in held]) if held else _EMPTY_KEYS
            values = concat([v for _, v in held])
            assert keys.tolist() == window.keys.tolist(), "the due window holds other records"
            assert np.allclose(values["score"], window.values["score"], rtol=1e-5)
            values, expected = values.copy(), window.values.copy()
            values["score"] = expected["score"] = 0
            assert values.tobytes() == expected.tobytes(), "a due window record is not current"


def _manifest_serials(directory: str) -> dict[str, int]:
    """The manifest files of ``directory`` and their serials. O(files in the directory)."""
    return {
        name: int(name.split("-")[1], 16)
        for name in drum_file_names(directory)
        if name.startswith("manifest-") and name.endswith(".json")
    }


class _ManifestWriter(PayloadWriter):
    def write(self, blob: bytes) -> FileInfo:  # type: ignore[override]
        self._write(blob)
        self._finish()
        return FileInfo(os.path.basename(self.path), len(blob), 0, 0)


class _MergeState:
    """One merge in progress: the new files and the state they make, committed only at the end
    (so a failure leaves the DRUM as it was)."""

    def __init__(
        self,
        drum: Drum,
        manifest: Manifest,
        serial: int,
        now_ms: int,
        written: list[str],
        opened: list[RunFile],
        limits: ReleaseLimits | None = None,
        due: DuePolicy | None = None,
    ) -> None:
        self.drum = drum
        self.limits = limits
        #: The due policy of this merge's selection (the DRUM's, or with another max_urls).
        self.due = due if due is not None else drum.config.due
        self.config = drum.config
        self.serial = serial
        self.now_ms = now_ms
        self.written = written
        self.opened = opened
        self.main = drum._main
        self.deltas = list(drum._deltas)
        self.archives = list(drum._archives)
        self.payloads = dict(manifest.payloads)
        self.counters = manifest.counters
        self.manifest = manifest
        self._files = 0
        self._last_lap = time.perf_counter()
        self.window = drum._window if self.config.windowed else None
        self.window_counts: dict[str, int] = {}

    def _lap(self, name: str) -> None:
        """Add the time since the previous lap to ``timings[name]``."""
        now = time.perf_counter()
        timings = self.drum.timings
        timings[name] = timings.get(name, 0.0) + now - self._last_lap
        self._last_lap = now

    def main_records(self) -> int:
        return self.main.records if self.main else 0

    def delta_records(self) -> int:
        return sum(d.records for d in self.deltas)

    def _run_writer(self, kind: int) -> RunWriter:
        name = self.drum._new_name("run", self.serial, self._files)
        self._files += 1
        path = self.drum._path(name)
        writer = RunWriter(
            path, kind, block_records=self.config.block_records, opener=self.drum._opener,
            fsync=self.config.fsync,
        )
        self.written.append(path)
        return writer

    def _finish_run(self, writer: RunWriter) -> RunFile:
        info = writer.close()
        run = RunFile(writer.path, info)
        self.opened.append(run)
        return run

    # -- lookups

    def _member(self, run: RunFile, ukeys: np.ndarray, out: np.ndarray) -> None:
        """Mark in ``out`` the sorted unique ``ukeys`` present in ``run``: reads only the key
        blocks whose range holds one of them."""
        table = run.table
        if len(table) == 0 or len(ukeys) == 0:
            return
        lo = np.searchsorted(ukeys, table["first"], side="left")
        hi = np.searchsorted(ukeys, table["last"], side="right")
        for block in np.flatnonzero(hi > lo).tolist():
            a, b = int(lo[block]), int(hi[block])
            keys = run.read_keys(block)
            q = ukeys[a:b]
            at = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
            out[a:b] |= keys[at] == q

    # -- minor merge

    def minor(self) -> MergeResult:
        drum = self.drum
        n = drum._fill
        base = self.counters.next_seq
        merge_no = self.counters.merges + 1
        if n == 0:
            self.counters = replace(self.counters, merges=merge_no)
            return MergeResult(merge_no, self.now_ms, base, _empty_checks(), _empty_new(), 0)
        keys = drum._keys[:n]
        kinds = drum._kinds[:n]
        values = drum._values[:n]
        order = np.argsort(keys)  # not stable (three times faster than a stable sort)...
        sk = keys[order]
        head = np.empty(n, dtype=bool)
        head[0] = True
        np.not_equal(sk[1:], sk[:-1], out=head[1:])
        starts = np.flatnonzero(head)
        ukeys = sk[starts]
        group = np.cumsum(head) - 1
        if len(starts) < n:  # ...so put each key's operations back in sequence order
            order = np.sort(group * n + order) % n
        self._lap("minor.sort")
        live = np.zeros(len(ukeys), dtype=bool)
        archived = np.zeros(len(ukeys), dtype=bool)
        for run in ([self.main] if self.main else []) + self.deltas:
            self._member(run, ukeys, live)
        for run in self.archives:
            self._member(run, ukeys, archived)
        self._lap("minor.lookup")
        skind = kinds[order]
        inserts = (skind & UPDATE) != 0
        count = np.cumsum(inserts)
        before = count - inserts
        before = before - before[starts][group]
        seen = (live | archived)[group] | (before > 0)
        # Back to operation order by scattering through the permutation (no second sort).
        seen_by_op = np.empty(n, dtype=bool)
        seen_by_op[order] = seen
        is_check = (kinds & CHECK) != 0
        checks = Checks(
            (base + np.flatnonzero(is_check)).astype(np.uint64), keys[is_check],
            seen_by_op[is_check],
        )
        on_archive = archived[group]
        dropped = int(np.count_nonzero(inserts & on_archive))
        applied = inserts & ~on_archive
        akeys = sk[applied]
        new_mask = inserts & ~seen  # the first insert of each key unknown so far
        if len(akeys):
            head2 = np.empty(len(akeys), dtype=bool)
            head2[0] = True
            np.not_equal(akeys[1:], akeys[:-1], out=head2[1:])
            starts2 = np.flatnonzero(head2)
            delta_keys = akeys[starts2]
            delta_values = combine_indexed(values, order[applied], starts2)
            for name in PAYLOAD_FIELDS:
                delta_values[name] = 0  # payload references are the DRUM's to set
        else:
            delta_keys, delta_values = _EMPTY_KEYS, np.empty(0, dtype=RECORD)
        self._lap("minor.fold")
        # New keys in operation order (their payloads are read sequentially from the buffer).
        new_pos_by_key = order[new_mask]
        at_by_op = np.empty(n, dtype=np.int64)
        at_by_op[new_pos_by_key] = np.searchsorted(delta_keys, sk[new_mask])  # sorted queries
        is_new = np.zeros(n, dtype=bool)
        is_new[new_pos_by_key] = True
        new_pos = np.flatnonzero(is_new)
        new_keys = keys[new_pos]
        at = at_by_op[new_pos]
        payloads = drum._payloads
        new_payloads = [payloads[i] for i in new_pos.tolist()]
        log_end = self.counters.payload_end
        lens = np.fromiter(map(len, new_payloads), dtype=np.int64, count=len(new_payloads))
        total = int(lens.sum())
        if total:
            name = drum._new_name("pay", self.serial, self._files)
            self._files += 1
            path = drum._path(name)
            writer = PayloadWriter(path, drum._opener, self.config.fsync)
            self.written.append(path)
            blob = b"".join(new_payloads)
            self.payloads[log_end] = writer.write(blob)
            offsets = np.cumsum(lens) - lens
            has = lens > 0
            target = at[has]
            delta_values["payload_pos"][target] = log_end + offsets[has]
            delta_values["payload_len"][target] = lens[has]
            log_end += total
        if self.config.new_url_lease_ms and len(at):
            lease = self.now_ms + self.config.new_url_lease_ms
            current = delta_values["leased_until_ms"][at]
            delta_values["leased_until_ms"][at] = np.maximum(current, lease)
        self._lap("minor.payloads")
        runs_before = ([self.main] if self.main else []) + self.deltas
        if len(delta_keys):
            writer = self._run_writer(KIND_DELTA)
            writer.append(delta_keys, delta_values)
            self.deltas.append(self._finish_run(writer))
        self._lap("minor.write_delta")
        if self.window is not None and len(delta_keys):
            existed = live[np.searchsorted(ukeys, delta_keys)]
            self._keep_window(delta_keys, delta_values, existed, runs_before)
        new = NewKeys(
            (base + new_pos).astype(np.uint64), new_keys, take(delta_values, at), new_payloads,
            kinds[new_pos],
        )
        c = self.counters
        self.counters = replace(
            c,
            keys=c.keys + len(new_keys),
            next_seq=c.next_seq + n,
            payload_end=log_end,
            merges=merge_no,
            dropped_updates=c.dropped_updates + dropped,
        )
        return MergeResult(merge_no, self.now_ms, base + n, checks, new, dropped)

    # -- major merge

    def _archive_mask(self, values: np.ndarray, ranks: _HostRanks) -> np.ndarray:
        policy = self.config.archive
        status = values["status"]
        leased = values["leased_until_ms"] > self.now_ms
        mask = np.zeros(len(values), dtype=bool)
        if policy.max_failures > 0:
            mask |= np.isin(status, FAILURE_STATUSES) & (
                values["failure_count"] >= policy.max_failures
            )
        if policy.min_score is not None:
            mask |= (status == DrumStatus.UNFETCHED) & (values["score"] < policy.min_score)
        if policy.archive_done:
            mask |= (
                (status >= 2) & (status != DrumStatus.QUEUED) & (values["next_fetch_ms"] == NEVER)
            )
        mask &= ~leased
        if policy.host_max_urls > 0:
            keep = np.flatnonzero(~mask)
            hosts = values["host"][keep]
            rank = ranks.ranks(hosts)
            over = (
                (rank >= policy.host_max_urls)
                & (hosts != 0)
                & (status[keep] == DrumStatus.UNFETCHED)
                & ~leased[keep]
            )
            mask[keep[over]] = True
        return mask

    def tier_deltas(self) -> None:
        """Fold the newest delta runs into one while :func:`pack_plan` says so (the newest
        ``delta_fanout`` of one size class): size-tiered, each record copied once a class. The
        folded run takes their place in the sequence (runs stay oldest first, as the merge
        rule needs; it is associative). O(their records) I/O."""
        config = self.config
        while True:
            count = pack_plan([d.records for d in self.deltas], config.delta_fanout,
                              config.delta_base_records)
            if not count:
                return
            chosen = self.deltas[-count:]
            writer = self._run_writer(KIND_DELTA)
            for keys, values in _merged_chunks(chosen):
                writer.append(keys, values)
            folded = self._finish_run(writer)
            self.deltas = [*self.deltas[:-count], folded]
            self.counters = replace(self.counters,
                                    delta_folds=self.counters.delta_folds + 1)
            self._lap("tier_deltas")

    def select(self, minor_result: MergeResult) -> MergeResult:
        """The due selection of a major merge without the major merge: one read-only pass over
        the folded main and delta runs (records the archive policy gives up on are passed
        over, not moved); only the selected URLs' lease or QUEUED mark is written, as a small
        delta run. O(K x record) bytes read, nothing rewritten."""
        return self._fold_pass(minor_result, rewrite=False, selecting=True)

    def major(self, minor_result: MergeResult, *, select: bool = True) -> MergeResult:
        """Fold every run into a new main run and archive; with ``select``, the due selection
        too (a major merge that runs because the deltas are many selects nothing: URLs go out
        when the DRUM's user asks)."""
        return self._fold_pass(minor_result, rewrite=True, selecting=select)

    def select_from_window(self, minor_result: MergeResult) -> MergeResult:
        """The due selection made from the due window alone (:mod:`drum.due_window`): the
        same records a pass over the runs would select, nothing read; only the selected URLs'
        lease or QUEUED mark is written, as a small delta run. O(window) time."""
        window = self.window
        assert window is not None
        selector = _DueSelector(self.due, self.limits)
        selector.offer_due(window.keys, window.values, self.now_ms)
        self._lap("window.select")
        self._count_window("selections")
        due_keys, due_values, lease_until, marks = self._lease(selector, self.deltas)
        self.window = window.mark(*marks) if marks is not None else window
        self.counters = replace(self.counters, selections=self.counters.selections + 1)
        next_due = selector.next_due_ms
        rebuild = window.next_rebuild_ms()
        if rebuild is not None and (next_due is None or rebuild < next_due):
            next_due = rebuild  # (records due after the horizon are not in the window)
        selection = self._due_selection(selector, due_keys, due_values, lease_until, next_due,
                                        from_window=True)
        return replace(minor_result, due=selection)

    def _fold_pass(
        self, minor_result: MergeResult, *, rewrite: bool, selecting: bool
    ) -> MergeResult:
        now = self.now_ms
        lap = "major" if rewrite else "select"
        sources = [r for r in [self.main, *self.deltas] if r is not None]
        main_writer = self._run_writer(KIND_MAIN) if rewrite else None
        archive_writer: RunWriter | None = None
        selector = _DueSelector(self.due, self.limits)
        due_policy = self.due
        builder = None
        if self.config.windowed:
            builder = WindowBuilder(due_policy.window_urls, max(1, due_policy.window_urls // 2),
                                    now)
        ranks = _HostRanks()
        archived = 0
        self._lap(f"{lap}.start")
        for keys, values in _merged_chunks(sources):
            self._lap(f"{lap}.read_fold")
            to_archive = self._archive_mask(values, ranks)
            kept = ~to_archive
            if to_archive.any() and rewrite:
                if archive_writer is None:
                    archive_writer = self._run_writer(KIND_ARCHIVE)
                archive_writer.append(keys[to_archive], select(values, to_archive))
                archived += int(np.count_nonzero(to_archive))
            keys, values = keys[kept], select(values, kept)
            self._lap(f"{lap}.archive")
            if main_writer is not None:
                main_writer.append(keys, values)
                self._lap("major.write_main")
            if selecting and due_policy.max_urls > 0:
                selector.offer_due(keys, values, now)
                self._lap(f"{lap}.select")
            if builder is not None:
                builder.offer(keys, values)
                self._lap(f"{lap}.window")
        new_deltas: list[RunFile] = []
        if main_writer is not None:
            new_main = self._finish_run(main_writer) if main_writer.total else None
            if new_main is None:
                main_writer.abort()
                self.written.remove(main_writer.path)
            self._lap("major.write_main")
        else:
            new_main, new_deltas = self.main, list(self.deltas)
        new_archives = list(self.archives)
        if archive_writer is not None:
            new_archives.append(self._finish_run(archive_writer))
        due_keys, due_values, lease_until, marks = self._lease(selector, new_deltas)
        if builder is not None:
            window = builder.result()
            if window is None:
                self._count_window(f"given_up.{builder.failed}")
            else:
                self._count_window("builds")
                if marks is not None:
                    window = window.mark(*marks)
            self.window = window
        self._lap(f"{lap}.lease")
        compacted = False
        if len(new_archives) > self.config.max_archives:
            new_archives = [self._compact(new_archives)]
            compacted = True
        self._lap(f"{lap}.compact")
        self.main, self.deltas, self.archives = new_main, new_deltas, new_archives
        c = self.counters
        self.counters = replace(
            c,
            archived=c.archived + archived,
            major_merges=c.major_merges + int(rewrite),
            selections=c.selections + int(not rewrite),
            compactions=c.compactions + int(compacted),
        )
        due_selection = None
        if selecting:
            due_selection = self._due_selection(selector, due_keys, due_values, lease_until,
                                                selector.next_due_ms)
        self._lap(f"{lap}.read_due_payloads")
        return replace(minor_result, major=rewrite, due=due_selection, archived=archived,
                       compacted=compacted)

    def _lease(
        self, selector: _DueSelector, deltas: list[RunFile]
    ) -> tuple[np.ndarray, np.ndarray, int, tuple[np.ndarray, np.ndarray] | None]:
        """The selection of ``selector``, its lease time, and its lease or QUEUED marks
        (sorted keys, records), written as a delta run appended to ``deltas`` (None: none)."""
        due_policy = self.config.due
        due_keys, due_values = selector.result()
        leased = due_policy.lease_ms > 0 and not due_policy.mark_queued
        lease_until = self.now_ms + due_policy.lease_ms if leased else 0
        marks = None
        if len(due_keys) and (lease_until or due_policy.mark_queued):
            order = np.argsort(due_keys)
            lease = neutral(len(due_keys))
            if due_policy.mark_queued:
                lease["status"] = DrumStatus.QUEUED
                lease["status_ms"] = self.now_ms
            else:
                lease["leased_until_ms"] = lease_until
            writer = self._run_writer(KIND_DELTA)
            writer.append(due_keys[order], lease)
            deltas.append(self._finish_run(writer))
            marks = (due_keys[order], lease)
        return due_keys, due_values, lease_until, marks

    def _due_selection(
        self,
        selector: _DueSelector,
        due_keys: np.ndarray,
        due_values: np.ndarray,
        lease_until: int,
        next_due_ms: int | None,
        *,
        from_window: bool = False,
    ) -> DueSelection:
        due_manifest = self.manifest.evolve(payloads=self.payloads)
        held = selector.limits.held() if selector.limits is not None else (0, 0)
        return DueSelection(
            due_keys,
            due_values,
            self.drum.read_payloads(due_values, due_manifest),
            lease_until,
            remaining=selector.due - len(due_keys),
            full=selector.full,
            next_due_ms=next_due_ms,
            revisits=selector.revisits,
            from_window=from_window,
            held_by_group=held[0],
            held_by_shape=held[1],
            held_by_rank=selector.limits.held_by_rank if selector.limits is not None else 0,
            held_best_rank=(selector.limits.held_best_rank if selector.limits is not None
                            else float("-inf")),
            new_rank_counts=(selector.limits.new_rank_counts if selector.limits is not None
                             else None),
        )

    # -- the due window

    def _count_window(self, name: str) -> None:
        self.window_counts[name] = self.window_counts.get(name, 0) + 1

    def _keep_window(
        self, keys: np.ndarray, deltas: np.ndarray, existed: np.ndarray, runs: list[RunFile]
    ) -> None:
        """The due window after this merge's delta records (``runs``: those before it)."""
        window = self.window
        assert window is not None
        if not window.usable(self.now_ms):
            self._count_window("given_up.horizon")
            self.window = None
            return

        def lookup(wanted: np.ndarray) -> np.ndarray:
            self.window_counts["lookups"] = self.window_counts.get("lookups", 0) + len(wanted)
            return self._records(runs, wanted)

        self.window = window.apply(keys, deltas, existed, lookup)
        if self.window is None:
            self._count_window("given_up.full")
        self._lap("minor.window")

    def _records(self, runs: list[RunFile], keys: np.ndarray) -> np.ndarray:
        """The folded records of sorted unique ``keys``, every one in ``runs`` (oldest
        first): reads the blocks whose range holds one of them (checked)."""
        pieces = []
        for run in runs:
            table = run.table
            lo = np.searchsorted(keys, table["first"], side="left")
            hi = np.searchsorted(keys, table["last"], side="right")
            for block in np.flatnonzero(hi > lo).tolist():
                block_keys, block_values = run.read_block(block)
                wanted = keys[int(lo[block]) : int(hi[block])]
                at = np.minimum(np.searchsorted(block_keys, wanted), len(block_keys) - 1)
                found = block_keys[at] == wanted
                pieces.append((wanted[found], take(block_values, at[found])))
        found_keys, values = _fold_pieces(pieces)
        if not np.array_equal(found_keys, keys):
            raise DrumCorruptError(self.drum.directory, "a key found in a run is not there")
        return values

    # -- payload packing

    def pack_payloads(self) -> None:
        """Pack the newest payload files while :func:`pack_plan` says so. Each pack reads its
        files in order (pages checked) and writes one file with the same bytes; records are
        untouched (positions are log positions). O(packed bytes) I/O, memory one chunk."""
        config = self.config
        while True:
            starts = sorted(self.payloads)
            sizes = [self.payloads[start].records for start in starts]
            count = pack_plan(sizes, config.payload_pack_fanout, config.payload_pack_base_bytes)
            if not count:
                return
            chosen = starts[-count:]
            name = self.drum._new_name("pay", self.serial, self._files)
            self._files += 1
            path = self.drum._path(name)
            writer = PayloadWriter(path, self.drum._opener, config.fsync)
            self.written.append(path)
            try:
                for start in chosen:
                    source = PayloadFile(self.drum._path(self.payloads[start].name),
                                         self.payloads[start])
                    try:
                        for offset in range(0, source.length, _PACK_CHUNK):
                            size = min(_PACK_CHUNK, source.length - offset)
                            writer.append(source.read(offset, size))
                    finally:
                        source.close()
                info = writer.finish()
            except BaseException:
                writer.abort()
                raise
            for start in chosen:
                del self.payloads[start]
            self.payloads[chosen[0]] = info
            packs = self.counters.payload_packs + 1
            self.counters = replace(self.counters, payload_packs=packs)
            self._lap("pack_payloads")

    def _compact(self, archives: list[RunFile]) -> RunFile:
        """Merge archived sets (disjoint keys) into one. O(their size) I/O."""
        writer = self._run_writer(KIND_ARCHIVE)
        streams = [s for s in (_BlockStream(r) for r in archives) if not s.done]
        while streams:
            bound = min(s.last for s in streams)
            pieces = [s.take_until(bound) for s in streams]
            streams = [s for s in streams if not s.done]
            keys = np.concatenate([p[0] for p in pieces])
            values = concat([p[1] for p in pieces])
            order = np.argsort(keys)
            writer.append(keys[order], take(values, order))
        return self._finish_run(writer)


#: Bytes copied per read while packing payload files (a multiple of the page size).
_PACK_CHUNK = 1 << 20


def pack_plan(sizes: Sequence[int], fanout: int, base_bytes: int) -> int:
    """How many of the newest payload files (``sizes``, oldest first) to pack into one: the
    newest ``fanout`` when they are all of one size class (class 0 below ``fanout x
    base_bytes``, class k up to ``fanout^(k+1) x base_bytes``), else 0. Like a size-tiered
    LSM tree: files stay few (under ``fanout`` per class) and a byte is copied once per class.
    """
    if len(sizes) < fanout:
        return 0
    classes = set()
    for size in sizes[-fanout:]:
        level, bound = 0, fanout * base_bytes
        while size >= bound:
            level, bound = level + 1, bound * fanout
        classes.add(level)
    return fanout if len(classes) == 1 else 0


# Keep the error types importable from here too (callers catch them around operations).
__all__ += ["DrumWriteError"]
_ = DrumWriteError
