"""How many more URLs the crawl DB may hand to the frontier now: the frontier bound.

A URL handed to the frontier (the fetch stage's host queues) is out of the crawl DB's hands: a
better URL found later cannot overtake it, and the fetch stage must take in every batch before
it can fetch from it. Unbounded, the crawl DB hands out URLs as fast as its releases allow
(``priority.release_batch`` a partition every ``release_seconds``): on a large web a crawl
bound by its CPU queued 20,000 URLs and more, minutes of fetching, and the fetch stage, busy
with its fetches, took the batches in slowly, so that the crawl DB stalled on handing them over
and with it the loop and the checkpoints (BENCHMARKS.md, "The frontier bound").

The bound keeps the frontier (queued and in-flight URLs, every fetch subtask's, and the URLs
released and not taken in yet) at most ``priority.frontier_seconds`` of fetching at the rate
the fetch stage fetches now, and at least ``priority.frontier_min_urls`` (a crawl starts before
any rate is known). A crawl DB subtask reads the figures from the status files
(:mod:`crawl.progress`) at most once a second (:func:`fetch_figures`: the fetch stage's, and
the other crawl DB subtasks' releases), counts its own releases as they go, and takes its
share of the room (one crawl DB subtask's of all). The bound is advisory, like every figure of
the status files: without fresh figures (none written yet, or none for a while) nothing is
held back.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from crawl.stages import (
    CRAWL_DB,
    CRAWLDB_URLS_RELEASED,
    FETCH,
    FETCH_IN_FLIGHT,
    FETCH_QUEUED,
    FETCH_RESULTS,
    FETCH_URLS_IN,
)

__all__ = ["FetchFigures", "FrontierBound", "fetch_figures"]

#: A fetch subtask's status file older than this (seconds) is not counted: the subtask is gone
#: (a failed attempt whose successor has not written yet) or stuck.
STALE_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class FetchFigures:
    """What the status files say of the frontier, summed over the subtasks."""

    #: URLs queued and fetches in flight in the fetch stage.
    held: int
    #: Fetch outcomes so far (every ``results.*`` counter).
    fetched: int
    #: URLs the fetch stage took in (``urls.in``).
    taken_in: int
    #: URLs the other crawl DB subtasks released (``urls.released``).
    released_by_others: int
    #: When the oldest of the fetch stage's figures was written (seconds since the epoch).
    time: float


def fetch_figures(statuses: Iterable[Mapping], now: float | None = None, *, own_subtask: int = -1,
                  stale_seconds: float = STALE_SECONDS) -> FetchFigures | None:
    """The frontier's figures in ``statuses`` (status files, :mod:`crawl.progress`): the fetch
    stage's, and the URLs released by the crawl DB subtasks but ``own_subtask`` (whose own count
    is live). Files older than ``stale_seconds`` before ``now`` are left out; None when no
    file of the fetch stage is left."""
    held = fetched = taken_in = released = 0
    oldest = math.inf
    prefix = FETCH_RESULTS.member("")
    for status in statuses:
        stage = status.get("stage")
        if stage not in (FETCH.figures, CRAWL_DB.figures):
            continue
        try:
            written = float(status.get("time", 0.0))
            if now is not None and written < now - stale_seconds:
                continue
            counters = status.get("counters", {})
            if stage == CRAWL_DB.figures:
                if int(status.get("subtask", -1)) != own_subtask:
                    released += int(counters.get(CRAWLDB_URLS_RELEASED.name, 0))
                continue
            gauges = status.get("gauges", {})
            subtask_held = int(gauges.get(FETCH_QUEUED.name, 0)) + int(
                gauges.get(FETCH_IN_FLIGHT.name, 0))
            subtask_fetched = sum(int(value) for name, value in counters.items()
                                  if name.startswith(prefix))
            subtask_taken = int(counters.get(FETCH_URLS_IN.name, 0))
        except (TypeError, ValueError, AttributeError):
            continue  # a file written by something else: not the stage's figures
        held += subtask_held
        fetched += subtask_fetched
        taken_in += subtask_taken
        oldest = min(oldest, written)
    if oldest == math.inf:
        return None
    return FetchFigures(held, fetched, taken_in, released, oldest)


class FrontierBound:
    """The frontier bound as one crawl DB subtask sees it (see the module docstring).

    ``figures()``: the frontier's figures now (:func:`fetch_figures`, None: unknown); ``share``:
    this subtask's part of the room (1 / the crawl DB's parallelism). The figures are read at
    most once per ``interval`` seconds; :meth:`released` counts the URLs this subtask handed
    out, which are in the frontier until the fetch stage's ``urls.in`` says it took them in.
    """

    def __init__(
        self,
        seconds: float,
        min_urls: int,
        figures: Callable[[], FetchFigures | None],
        *,
        share: float = 1.0,
        interval: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.seconds = seconds
        self.min_urls = min_urls
        self.share = share
        self._read = figures
        self._interval = interval
        self._clock = clock
        self._computed_at = -math.inf
        self._figures: FetchFigures | None = None
        #: URLs this subtask handed to the frontier (since it opened).
        self.released_total = 0
        # The fetch rate: the figures it was last measured from, and its running mean.
        self._last: FetchFigures | None = None
        #: Fetches a second, as the status files tell (0 until two of them were read).
        self.rate = 0.0

    def released(self, count: int) -> None:
        """Note ``count`` URLs handed to the frontier now."""
        if count > 0:
            self.released_total += count

    def limit(self) -> int:
        """The most URLs the whole frontier may hold now."""
        return max(self.min_urls, int(self.rate * self.seconds))

    def frontier(self) -> int | None:
        """The URLs in the frontier now, as far as the figures tell: those the fetch stage
        holds, and those released and not taken in yet (in the network between the crawl DB
        and the fetch stage); None when unknown."""
        now = self._clock()
        if now - self._computed_at >= self._interval:
            self._computed_at = now
            self._figures = self._read()
            if self._figures is None:
                self._last = None
            else:
                self._measure(self._figures)
        figures = self._figures
        if figures is None:
            return None
        in_transit = figures.released_by_others + self.released_total - figures.taken_in
        return figures.held + max(0, in_transit)

    def room(self) -> int | None:
        """How many more URLs this subtask may hand to the frontier now (0 or less: none);
        None when the figures are unknown (no bound)."""
        frontier = self.frontier()
        if frontier is None:
            return None
        return math.floor((self.limit() - frontier) * self.share)

    def _measure(self, figures: FetchFigures) -> None:
        last = self._last
        if last is None or figures.fetched < last.fetched:
            self._last = figures  # the first figures, or a restarted subtask's: a new start
            return
        elapsed = figures.time - last.time
        if elapsed < self._interval:
            return  # the same files as last time, or too close to them to tell a rate
        rate = (figures.fetched - last.fetched) / elapsed
        # A running mean over a few seconds: one file's late write must not swing it.
        self.rate = rate if self.rate == 0 else self.rate + 0.3 * (rate - self.rate)
        self._last = figures
