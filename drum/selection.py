"""The due selection: of the records offered (a pass over the runs, or the due window), the
best-ranked that are due, within the per-host cap of the :class:`~drum.config.DuePolicy` and
the budgets of the DRUM user's :class:`ReleaseLimits`.

:class:`DueSelector` takes the records a chunk at a time and keeps only the candidates that can
still make it: memory O(``max_urls`` + 65,536 records) whatever the number of records offered. What
it selects is then leased or marked QUEUED by the merge (:mod:`drum.merge`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from drum.config import DuePolicy
from drum.record import NEVER, NO_DEPTH, RECORD, DrumStatus, concat, next_fetch_times, select, take

__all__ = ["DueSelector", "ReleaseLimits"]

_EMPTY_KEYS = np.empty(0, dtype=np.uint64)
#: Candidates a pool takes in before it trims itself to the best (at least; ``2 x max_urls``
#: when that is more): 9 MB of records at most.
_PENDING_RECORDS = 1 << 16


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
        # Pairs are keyed by host << 32 | shape (see _pairs).
        self._shapes: dict[int, int] = {}
        self._pair_due: dict[int, int] = {}
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
        group -1, unlimited). O(n log n) and a question per host, group and pair not met yet."""
        n = len(values)
        group = np.full(n, -1, dtype=np.int64)
        group_cap = np.full(n, _UNLIMITED, dtype=np.int64)
        shape_cap = group_cap.copy()
        new = values["status"] == DrumStatus.UNFETCHED
        if not new.any():
            return group, group_cap, shape_cap
        new_values = values[new]
        hosts, host_of = np.unique(new_values["host"], return_inverse=True)
        groups = _answers(self._group_of, hosts.astype(np.int64),
                          lambda missing: self._limits.groups(missing.astype(np.uint32)))
        record_groups = groups[host_of]
        unique_groups, group_of = np.unique(record_groups, return_inverse=True)
        limits = _answers(self._groups, unique_groups, self._limits.group_limits)
        pairs, pair_of = np.unique(_pairs(new_values), return_inverse=True)
        shape_limits = _answers(
            self._shapes, pairs,
            lambda missing: self._limits.shape_limits(
                (missing >> np.uint64(32)).astype(np.uint32),
                (missing & np.uint64(0xFFFFFFFF)).astype(np.uint32)))
        group[new] = record_groups
        group_cap[new] = limits[group_of]
        shape_cap[new] = shape_limits[pair_of]
        return group, group_cap, shape_cap

    def count_due(self, values: np.ndarray) -> None:
        """Count the due new records of a chunk per (host, shape) pair. O(n log n)."""
        new = values["status"] == DrumStatus.UNFETCHED
        if not new.any():
            return
        pairs, counts = np.unique(_pairs(values[new]), return_counts=True)
        due = self._pair_due
        for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True):
            due[pair] = due.get(pair, 0) + count

    def held(self) -> tuple[int, int]:
        """The due new URLs the limits hold back: by their shape's limit, then (of those their
        shapes' limits leave) by their group's. O(groups and pairs met)."""
        by_shape = by_group = 0
        left: dict[int, int] = {}
        for pair, due in self._pair_due.items():
            allowed = min(due, self._shapes[pair])
            by_shape += due - allowed
            group = self._group_of[pair >> 32]
            left[group] = left.get(group, 0) + allowed
        for group, allowed in left.items():
            by_group += max(0, allowed - self._groups[group])
        return by_group, by_shape


def _pairs(values: np.ndarray) -> np.ndarray:
    """Each record's (host, shape) as one integer: host << 32 | shape (uint64)."""
    return (values["host"].astype(np.uint64) << np.uint64(32)) | values["shape"].astype(np.uint64)


def _answers(known: dict[int, int], keys: np.ndarray,
             ask: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """The answers (int64) for ``keys`` (unique, sorted), from ``known`` or asked with ``ask``
    (for those not known yet, all at once) and kept in ``known``."""
    listed = keys.tolist()
    missing = [key for key in listed if key not in known]
    if missing:
        answers = ask(np.array(missing, dtype=keys.dtype))
        known.update(zip(missing, np.asarray(answers).tolist(), strict=True))
    return np.array([known[key] for key in listed], dtype=np.int64)


class _Pool:
    """The best ``max_urls`` candidates offered, by (rank desc, key asc), at most ``per_host``
    per host, and with ``limits`` at most their host's and shape's limits. Memory O(max_urls +
    :data:`_PENDING_RECORDS`)."""

    def __init__(self, policy: DuePolicy, limits: _Limits | None = None) -> None:
        self.policy = policy
        self.limits = limits
        self.keys = _EMPTY_KEYS
        self.values = np.empty(0, dtype=RECORD)
        self.rank = np.empty(0, dtype=np.float64)
        #: With limits: each candidate's group, group limit and shape limit (one row each).
        self.caps = np.empty((0, 3), dtype=np.int64)
        # Candidates offered since the pool was last trimmed (keys, values, rank, caps).
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending_count = 0

    def _better_than_worst(self, keys: np.ndarray, rank: np.ndarray) -> np.ndarray:
        worst_rank, worst_key = self.rank[-1], self.keys[-1]
        return (rank > worst_rank) | ((rank == worst_rank) & (keys < worst_key))

    def offer(self, keys: np.ndarray, values: np.ndarray, rank: np.ndarray,
              caps: np.ndarray | None = None) -> None:
        """Take candidates in (with limits, ``caps``: their rows of :attr:`caps`); the pool is
        trimmed to the best once the candidates waiting reach :data:`_PENDING_RECORDS` or
        ``2 x max_urls`` (:meth:`trim`), so a pass sorts the pool a few times, not at every
        chunk. O(c log c) for c candidates that can still make it."""
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
        self._pending.append((keys, values, rank, caps))
        self._pending_count += len(keys)
        if self._pending_count >= max(_PENDING_RECORDS, 2 * max_urls):
            self.trim()

    def trim(self) -> None:
        """Keep the best ``max_urls`` of the pool and the candidates waiting, within the
        limits and ``per_host``; :attr:`keys` ... are the selection so far after it."""
        if not self._pending:
            return
        keys = np.concatenate([self.keys, *(p[0] for p in self._pending)])
        values = concat([self.values, *(p[1] for p in self._pending)])
        rank = np.concatenate([self.rank, *(p[2] for p in self._pending)])
        caps = np.concatenate([self.caps, *(p[3] for p in self._pending)])
        self._pending, self._pending_count = [], 0
        if self.limits is not None:
            keep = self._within_limits(keys, values, rank, caps)
            keys, values, rank, caps = keys[keep], select(values, keep), rank[keep], caps[keep]
        if self.policy.per_host > 0:
            hosts = values["host"]
            order = np.lexsort((keys, -rank, hosts))
            within = _rank_within(hosts, order)
            keep = (within < self.policy.per_host) | (hosts == 0)
            keys, values, rank, caps = keys[keep], select(values, keep), rank[keep], caps[keep]
        order = np.lexsort((keys, -rank))[:self.policy.max_urls]
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


class DueSelector:
    """Best ``max_urls`` due records by (rank desc, key asc), at most ``per_host`` per host,
    rank being ``score - depth_weight x depth`` (a revisit's plus how many intervals late it
    is, with ``refresh_share``). Exact and incremental: memory O(max_urls + 65,536). With
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
            self.limits.count_due(values)
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
        self._new.trim()
        self._revisits.trim()
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
