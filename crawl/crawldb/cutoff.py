"""The rank a new URL needs to be released while a page budget runs out: the budget cutoff.

A crawl with a page budget (``crawl.max_pages``) is judged by what it spends the budget on. Each
crawl DB partition sees only its own URLs and hands each host its best few
(``priority.host_window``); without a bar shared by all of them, a host with nothing but poor
URLs left (a link farm, a calendar) would be kept busy at its politeness rate, spending the
budget while better URLs wait on slower hosts. The cutoff is that bar: of all the new URLs
waiting in every partition, the best ``priority.budget_cutoff`` x R may go (off: 0, the
default), R being the pages the budget has left once the URLs already handed to the frontier
are fetched. A URL ranked below them waits (it is still pending: when the better ones are gone,
or a fetch fails without spending a page, the bar falls to it).

Each partition writes the ranks of its waiting new URLs as a histogram (:data:`RANK_EDGES`,
:data:`BUCKETS_PER_DECADE` buckets a decade) to ``status/ranks/partition-NNNNN.json`` at each
release (:func:`write_waiting`). The crawl DB operator computes the bar at most once a second
(:class:`BudgetCutoff`) from every partition's histogram, the page ledger's count and the fetch
stage's ``queued`` and ``in_flight`` figures, and gives it to its partitions; a partition
holding URLs below the bar looks again each release interval, and releases when the bar fell.
The bar is the lower edge of the bucket where the count of better URLs reaches R, so a bucket
across the bar goes whole (the budget ends the crawl anyway). URLs whose domain or shape budget
has no room left are not counted as waiting (they could not go, and would hold the bar up);
those of a domain or shape with some room are. Without a page budget there is no bar.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import numpy as np

from crawl.crawldb.frontier_bound import fetch_figures
from crawl.progress import read_json_objects

__all__ = [
    "BUCKETS_PER_DECADE",
    "RANK_EDGES",
    "BudgetCutoff",
    "cutoff_rank",
    "frontier_size",
    "read_waiting",
    "write_waiting",
]

#: Buckets a decade of rank (each about 12 % wide).
BUCKETS_PER_DECADE = 20
#: Bucket edges: bucket ``i`` holds ranks from ``RANK_EDGES[i - 1]`` (bucket 0: anything below
#: ``RANK_EDGES[0]``) to below ``RANK_EDGES[i]``; the last bucket has no upper edge.
RANK_EDGES = 10.0 ** (np.arange(-12 * BUCKETS_PER_DECADE, 4 * BUCKETS_PER_DECADE + 1)
                      / BUCKETS_PER_DECADE)


def cutoff_rank(waiting: Iterable[Mapping[int, int]], remaining: int) -> float:
    """The lowest rank a new URL may have and go, given histograms of the URLs waiting
    (bucket -> count) and the pages the budget has ``remaining``: the lower edge of the bucket
    where the count of URLs in it and above reaches ``remaining``; -inf when all of them fit,
    +inf when nothing may go."""
    if remaining <= 0:
        return math.inf
    counts = np.zeros(len(RANK_EDGES) + 1, dtype=np.int64)
    for histogram in waiting:
        for bucket, count in histogram.items():
            if 0 <= bucket < len(counts) and count > 0:
                counts[bucket] += count
    better = np.cumsum(counts[::-1])[::-1]  # better[i]: URLs in bucket i or above
    reached = np.flatnonzero(better >= remaining)
    if not len(reached):
        return -math.inf
    bucket = int(reached[-1])
    return float(RANK_EDGES[bucket - 1]) if bucket > 0 else -math.inf


def frontier_size(statuses: Iterable[Mapping]) -> tuple[int, float]:
    """The URLs the fetch stage holds (``queued`` and ``in_flight``, summed over its subtasks'
    status files: :mod:`crawl.progress`) and the time of the oldest of those figures."""
    figures = fetch_figures(statuses)
    return (0, 0.0) if figures is None else (figures.held, figures.time)


def waiting_path(directory: str | Path, partition: int) -> Path:
    return Path(directory) / f"partition-{partition:05d}.json"


def write_waiting(directory: str | Path, partition: int, counts: np.ndarray) -> None:
    """Write one partition's histogram of waiting new URLs (counts per bucket of
    :data:`RANK_EDGES`) atomically. Advisory: a write that fails is skipped."""
    path = waiting_path(directory, partition)
    nonzero = np.flatnonzero(counts > 0)
    text = json.dumps({
        "time": time.time(),
        "counts": {str(int(b)): int(counts[b]) for b in nonzero},
    })
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        pass


def read_waiting(directory: str | Path) -> list[dict[int, int]]:
    """Every partition's histogram (files being replaced or unreadable are skipped)."""
    histograms = []
    for written in read_json_objects(directory, "partition-*.json"):
        try:
            counts = written["counts"]
            histograms.append({int(bucket): int(count) for bucket, count in counts.items()})
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return histograms


class BudgetCutoff:
    """The budget cutoff as one crawl DB subtask sees it, computed at most once per
    ``interval`` seconds (see the module docstring).

    ``claimed()``: pages the budget has spent (the page ledger); ``in_frontier()``: URLs the
    fetch stage holds (queued and in flight) and the time of its figures (seconds since the
    epoch); ``waiting_directory``: where the partitions' histograms are. URLs this subtask
    released after the fetch stage's figures were written (:meth:`released`) count as in the
    frontier already.
    """

    def __init__(
        self,
        max_pages: int,
        share: float,
        waiting_directory: str | Path,
        claimed: Callable[[], int],
        in_frontier: Callable[[], tuple[int, float]],
        *,
        interval: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_pages = max_pages
        self.share = share
        self.waiting_directory = Path(waiting_directory)
        self._claimed = claimed
        self._in_frontier = in_frontier
        self._interval = interval
        self._clock = clock
        self._value = -math.inf
        self._computed_at = -math.inf
        self._released: list[tuple[float, int]] = []

    def released(self, count: int) -> None:
        """Note ``count`` new URLs handed to the frontier now."""
        if count:
            self._released.append((self._clock(), count))

    def value(self) -> float:
        """The rank a new URL needs to go now (-inf: any)."""
        now = self._clock()
        if now - self._computed_at < self._interval:
            return self._value
        self._computed_at = now
        in_frontier, figures_at = self._in_frontier()
        self._released = [(at, n) for at, n in self._released if at > figures_at]
        since = sum(n for _, n in self._released)
        remaining = self.max_pages - self._claimed() - in_frontier - since
        self._value = cutoff_rank(read_waiting(self.waiting_directory),
                                  math.ceil(remaining * self.share))
        return self._value
