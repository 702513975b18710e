"""The crawl DB of one partition: the URL-seen test and every URL's record, in a DRUM.

A URL's partition is its vnode modulo ``crawldb.partitions``, so every host of a registered
domain shares one. Each partition is one :class:`drum.Drum` in a directory of its own
(``<output>/crawldb/partition-NNNNN``), driven by the crawl DB operator keyed by partition
(``operators/crawl_db.py``), which only moves values between Flink and :class:`CrawlDbPartition`.

Operations, as the loop delivers them: a **found** URL is a ``check_update`` with an UNFETCHED
record (its hops, and the cash its discovery brings: :mod:`crawl.urls.priority`); a **done**
event an ``update`` with the fetch outcome, less the cash the fetch passed on (with
``recrawl.enabled``, also the next fetch time :mod:`crawl.crawldb.recrawl` computes); a
**rescore** gives a found URL a share of its discovery's cash once more; a **near** mark sets
:data:`FLAG_NEAR_DUPLICATE`. Answers come when a merge runs: when the buffer is full, or
``flush_seconds`` after its first operation (:meth:`CrawlDbPartition.flush`).

A new URL goes to the frontier once (invariant 2): at once without priority, else in a
**release**, a due selection within the budgets (:mod:`crawl.crawldb.budgets`) whose records
become QUEUED; made from the DRUM's due window while it lasts, else in a read-only pass over
its runs, spaced by ``release_max_share``. :attr:`CrawlDbPartition.pending` counts the URLs
left for a later release, except those a budget holds back (:attr:`CrawlDbPartition.deferred`).

The payload stored with a URL's key is ``url \\n hops \\n via``, so the frontier gets what the
crawl log needs from the DRUM's answer alone. After every call the operator stores
:meth:`CrawlDbPartition.take_state` in keyed state. README.md ("How it works": Crawl DB,
Priority) has the releases and budgets; ARCHITECTURE.md ("State and checkpoints", decision 5)
checkpoint consistency and why partitions rather than a DRUM per vnode.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from crawl.config import CrawlDbSection, PrioritySection, RecrawlSection
from crawl.crawldb.budgets import Budgets, shape_key
from crawl.crawldb.cutoff import RANK_EDGES
from crawl.crawldb.recrawl import RecrawlSchedule, Revisit, states_of_records, store_states
from crawl.fetch_requests import QueueEntry, encode_batch
from crawl.loop.records import (
    Announcement,
    DoneEvent,
    IntervalHint,
    LoopRecord,
    LoopRecordError,
    NearMark,
    Rescore,
    parse_record,
)
from crawl.stages import (
    CRAWLDB_MERGES,
    CRAWLDB_RELEASES,
    CRAWLDB_RELEASES_FROM_WINDOW,
    CRAWLDB_URLS_DUPLICATE,
    CRAWLDB_URLS_FOUND,
    CRAWLDB_URLS_NEAR_DUPLICATE,
    CRAWLDB_URLS_NEW,
    CRAWLDB_URLS_RELEASED,
    CRAWLDB_URLS_RELEASED_REVISITS,
)
from crawl.urls.normalize import host_of
from crawl.urls.priority import CASH_DIGITS, CashPolicy, rank
from drum import (
    CHECK_UPDATE,
    NO_DEPTH,
    PASS_LAPS,
    ArchivePolicy,
    Drum,
    DrumConfig,
    DrumStatus,
    DuePolicy,
    ManifestHistory,
    MergeResult,
    announced,
    discoveries,
    host_key,
    neutral,
    outcomes,
    url_keys,
)
from drum.manifest import collect_garbage

__all__ = [
    "FLAG_NEAR_DUPLICATE",
    "MAX_VIA_BYTES",
    "Answer",
    "CrawlDbPartition",
    "PartitionState",
    "decode_payload",
    "drum_config",
    "encode_payload",
    "minimum_file_grace_seconds",
    "parse_flink_duration",
    "partition_directory",
    "partition_of",
]

#: How long the operator lets a release wait after the first operation since the last
#: release (:meth:`CrawlDbPartition.release_wake_ms`; it matters when that release was
#: ``release_seconds`` or more ago, as after the seeds' release): the lines of a loop file
#: come in network buffers up to 100 ms apart (Flink's buffer timeout), and a release made
#: from the first alone would leave the rest a release interval later. (Not the first
#: release: the seeds go at once.)
RELEASE_GATHER_MS = 150
#: A referring URL longer than this is cut in the stored payload (it is only for the log).
MAX_VIA_BYTES = 4096

#: Statuses a done event from the loop may not carry (only the crawl DB makes them).
_NOT_OUTCOMES = ("NONE", "UNFETCHED", "QUEUED")
#: A record's flag: the page was found to be a near-duplicate of an earlier capture.
FLAG_NEAR_DUPLICATE = 1
# Near-duplicate marks wait among the done events under this name (not a status).
_NEAR = "~near"


def _seconds_of(
    pairs: Sequence[tuple[str, int]], found: Sequence[tuple[str, str, str]], rescores: int
) -> list[int]:
    """The seconds ``pairs`` give each found URL (0: none, at most 2^32 - 1), then 0 for each
    rescore (a link's worth changed: nothing else)."""
    if not pairs:
        return [0] * (len(found) + rescores)
    seconds = dict(pairs)
    return [min(seconds.get(url, 0), 0xFFFFFFFF) for url, _, _ in found] + [0] * rescores


def waiting_counts(due_counts: np.ndarray, selected_ranks: np.ndarray) -> np.ndarray:
    """The new URLs still waiting after a release, by rank bucket of
    :data:`crawl.crawldb.cutoff.RANK_EDGES`: those due (``due_counts``) but the selected."""
    selected = np.bincount(np.searchsorted(RANK_EDGES, selected_ranks, side="right"),
                           minlength=len(due_counts))
    return np.maximum(due_counts - selected[:len(due_counts)], 0)


def partition_of(vnode: int, partitions: int) -> int:
    """The crawl DB partition of a vnode."""
    return vnode % partitions


_DURATION_UNITS = {
    "ms": 0.001, "milli": 0.001, "millis": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0, "m": 60.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
}


def parse_flink_duration(text: str) -> float:
    """Seconds in a Flink duration setting ("1s", "10 min", "500ms"; a bare number is ms)."""
    value = str(text).strip().lower()
    digits = len(value) - len(value.lstrip("0123456789."))
    number, unit = value[:digits], value[digits:].strip()
    if not number or (unit and unit not in _DURATION_UNITS):
        raise ValueError(f"not a Flink duration: {text!r}")
    return float(number) * (_DURATION_UNITS[unit] if unit else 0.001)


def minimum_file_grace_seconds(flink_settings: Mapping[str, str]) -> float:
    """How long files a merge replaced must be kept so that every retained checkpoint finds
    its files: a retained checkpoint's state was taken at most (retained + 1) intervals plus
    the checkpoint timeout (its longest possible duration) ago."""
    interval = parse_flink_duration(flink_settings.get("execution.checkpointing.interval", "0"))
    timeout = parse_flink_duration(flink_settings.get("execution.checkpointing.timeout", "10min"))
    retained = int(flink_settings.get("execution.checkpointing.num-retained", "1"))
    return (retained + 1) * interval + timeout


def partition_directory(root: str, partition: int) -> str:
    """The directory of a partition's DRUM under the crawl DB directory."""
    return os.path.join(root, f"partition-{partition:05d}")


def drum_config(
    section: CrawlDbSection,
    priority: PrioritySection | None = None,
    recrawl: RecrawlSection | None = None,
) -> DrumConfig:
    """The DRUM configuration of a crawl DB partition (with ``priority`` enabled, every major
    merge releases the best-ranked due URLs, marking them QUEUED; with ``recrawl`` enabled,
    revisits among them within their share)."""
    due = DuePolicy(max_urls=0)
    if priority is not None and priority.enabled:
        due = DuePolicy(
            max_urls=priority.release_batch,
            per_host=priority.host_window,
            lease_ms=0,
            mark_queued=True,
            refresh_share=recrawl.refresh_share if recrawl is not None and recrawl.enabled
            else 0.0,
            window_urls=priority.release_window,
        )
    return DrumConfig(
        buffer_ops=section.buffer_ops,
        buffer_payload_bytes=section.buffer_payload_bytes,
        block_records=section.block_records,
        max_deltas=section.max_deltas,
        # Merges every flush_seconds make many small runs: folded four at a time, three a
        # size class, they stay under max_deltas without a major merge.
        delta_fanout=4,
        max_archives=section.max_archives,
        due=due,
        archive=ArchivePolicy(archive_done=True),
        fsync=section.fsync,
        # The manifest lives in keyed state; a file per merge would only cost an fsync.
        write_manifest_files=False,
    )


def encode_payload(url: str, hops: str, via: str) -> bytes:
    """The DRUM payload of a URL: ``url \\n hops \\n via`` in UTF-8 (via cut if huge)."""
    via_bytes = via.encode("utf-8", "replace")[:MAX_VIA_BYTES]
    return b"\n".join((url.encode("utf-8", "replace"), hops.encode("utf-8", "replace"), via_bytes))


def decode_payload(payload: bytes) -> tuple[str, str, str]:
    """Inverse of :func:`encode_payload` (a payload without newlines is a bare URL)."""
    parts = payload.decode("utf-8", "replace").split("\n", 2)
    parts += [""] * (3 - len(parts))
    return parts[0], parts[1], parts[2]


@dataclass
class Answer:
    """What one call delivers: fetch requests for the frontier and counts for the figures."""

    #: ``(host, batch)``: the URLs handed to the frontier, per host
    #: (:func:`crawl.fetch_requests.encode_batch`).
    requests: list[tuple[str, str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, name: str, amount: int = 1) -> None:
        if amount:
            self.counts[name] = self.counts.get(name, 0) + amount


@dataclass(frozen=True)
class PartitionState:
    """What the operator writes to keyed state after a call."""

    #: The new manifest, None when unchanged.
    manifest: bytes | None
    #: The new history of dropped files, None when unchanged.
    history: str | None
    #: Whether a merge in this call took every pending record (this call's too): the journal
    #: starts again, empty. Otherwise the record of this call is pending and goes to the end
    #: of the journal.
    merged: bool

    def journal_additions(self, payload: str | None) -> list[str]:
        """What goes to the end of the journal (after clearing it when :attr:`merged`): the
        payload of this call's record unless a merge took it."""
        return [payload] if payload is not None and not self.merged else []


class CrawlDbPartition:
    """One partition of the crawl DB (see the module docstring).

    Build it with the values of the partition's keyed state (None and empty for a partition
    never seen): ``manifest`` bytes, ``journal`` (the loop payloads received since the last
    merge, in order) and ``history`` JSON.

    Records wait in a plain list until a merge (``buffer_ops`` operations, or the flush
    timer), which hands them to the DRUM as one vectorised batch; the journal in keyed state
    is the list of their loop payloads, so a restore replays them exactly.
    """

    def __init__(
        self,
        directory: str,
        section: CrawlDbSection,
        *,
        manifest: bytes | None = None,
        journal: Iterable[str] = (),
        history: str | None = None,
        budgets: Budgets | None = None,
        priority: PrioritySection | None = None,
        recrawl: RecrawlSection | None = None,
        deletions_paused: Callable[[], bool] = lambda: False,
        timer: Callable[[], float] = time.thread_time,
        cutoff: Callable[[], float] | None = None,
        publish_waiting: Callable[[np.ndarray], None] | None = None,
        frontier_room: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.directory = directory
        # The frontier bound (crawl/crawldb/frontier_bound.py): how many more URLs may go to
        # the frontier now (None: no bound).
        self._frontier_room = frontier_room
        # The budget cutoff (crawl/crawldb/cutoff.py): the rank a new URL needs to go now,
        # and where this partition's waiting URLs are told, by rank bucket.
        self._cutoff = cutoff
        self._publish_waiting = publish_waiting
        # The best rank of the URLs the cutoff held back at the last release (-inf: none).
        self._below_cutoff_best = -math.inf
        self._below_cutoff = 0
        self._cutoff_binding = False
        # While a savepoint's files are being kept, replaced files wait for a later merge.
        self._deletions_paused = deletions_paused
        self._schedule = (
            RecrawlSchedule(recrawl) if recrawl is not None and recrawl.enabled else None
        )
        # When the earliest URL not due at the last release comes due (None: none will).
        self._next_due_ms: int | None = None
        self._budgets = budgets
        # The typical cash of the pages the crawl fetches now, as the process stage sends it.
        self._level: float | None = None
        self._defer_below = priority.defer_below if priority is not None else 0.0
        self._cash = CashPolicy(priority if priority is not None else PrioritySection())
        self._releasing = priority is not None and priority.enabled
        self._release_ms = int(priority.release_seconds * 1000) if self._releasing else 0
        self._release_share = priority.release_max_share if self._releasing else 1.0
        self._release_batch_urls = priority.release_batch if self._releasing else 0
        self._release_window_urls = priority.release_window if self._releasing else 0
        # The time between releases: release_seconds, or more when a release (a pass over
        # the whole DRUM, when its due window ran out) takes longer than release_max_share of it.
        self._release_interval_ms = self._release_ms
        self._last_release_ms = 0
        # A partition just opened (or restored) releases once before it knows what waits.
        self._ops_since_release = 1
        # When the first operation since the last release came (0: none, or no release yet:
        # a partition's first release, the seeds', goes at once).
        self._first_op_ms = 0
        self._pending = 0
        self._release_again = False
        self._deferred: dict[str, int] = {}
        self._merged = False
        self._buffer_ops = section.buffer_ops
        config = drum_config(section, priority, recrawl)
        window_ms = int(section.file_grace_seconds * 1000)
        if manifest is None:
            # A partition with no state: whatever is in its directory was written after the
            # checkpoint being restored (or by an earlier crawl) and no checkpoint refers to it.
            collect_garbage(directory, [])
            self._drum = Drum.create(directory, config)
        else:
            self._drum = Drum.restore(directory, manifest, (), config)
        # Times the phases of its merges, among them a release's pass over the runs, which
        # spaces the releases out: in CPU seconds of this thread, since in a busy crawl a
        # pass waits for the interpreter lock much of its time (2.7 s of wall time against at
        # most 0.7 s of CPU in one measured), and the waits are other stages' work (a test's
        # clock makes the spacing repeatable).
        self._drum.clock = timer
        self._history = (
            ManifestHistory.from_json(json.loads(history))
            if history
            else ManifestHistory(window_ms)
        )
        self._history.window_ms = window_ms
        self._manifest = self._drum.manifest_bytes()
        self._manifest_changed = manifest is None
        self._history_changed = False
        self._found: list[tuple[str, str, str]] = []
        self._found_at: list[int] = []  # arrival time of each found URL (0: replayed)
        self._found_cash: list[float] = []  # the cash each found URL (or rescore) brings
        self._found_rescore: list[bool] = []  # which of them are rescores
        self._found_hint: list[int] = []  # a recrawl interval hint (s; 0: none)
        self._found_lastmod: list[int] = []  # a sitemap's lastmod (s; 0: none)
        self._done: list[DoneEvent] = []
        # Order of the pending operations: True for a found URL, False for a done event.
        self._order: list[bool] = []
        #: Journal entries that could not be read back (counted, then dropped).
        self.unreadable_journal_entries = 0
        for payload in journal:
            try:
                record = parse_record(payload)
            except LoopRecordError:
                self.unreadable_journal_entries += 1
                continue
            self._append(record, 0)

    # ------------------------------------------------------------------ figures

    @property
    def buffered(self) -> int:
        """Operations waiting for a merge."""
        return len(self._order)

    @property
    def known(self) -> int:
        """Distinct URLs known after the last merge (live and archived)."""
        return len(self._drum)

    @property
    def pending(self) -> int:
        """URLs waiting in the crawl DB to be released to the frontier (as of the last
        release, plus those found new since; 0 when URLs are not held back)."""
        return self._pending

    @property
    def deferred(self) -> dict[str, int]:
        """URLs held back at the last release, by reason: ``budget:domain`` and
        ``budget:shape`` go when their budget grows, ``budget:importance`` when their cash
        comes within ``priority.defer_below`` of the typical cash of what the crawl fetches."""
        return dict(self._deferred)

    @property
    def below_cutoff(self) -> int:
        """Of :attr:`pending`, the URLs the budget cutoff held back at the last release: they go
        when better URLs are gone (crawl/crawldb/cutoff.py)."""
        return self._below_cutoff

    @property
    def drum(self) -> Drum:
        return self._drum

    def next_release_ms(self, now_ms: int) -> int | None:
        """When this partition should release URLs even if no operation comes, or None: when
        operations came since the last release (new URLs, or outcomes that free a host's
        window), or the last release was cut at ``release_batch``, or when a URL comes due
        (a revisit), or when the budget cutoff fell to a URL it held back (looked at each
        ``release_seconds``). URLs left because their hosts' windows are full wait for
        outcomes.
        """
        if not self._releasing:
            return None
        earliest = self._last_release_ms + self._release_interval_ms
        if self._frontier_full():
            # Looked at again each release_seconds, as fetches make room.
            earliest = max(earliest, now_ms + self._release_ms)
        if self._release_again or self._ops_since_release:
            return max(now_ms, earliest)
        wake = []
        if self._next_due_ms is not None:
            wake.append(max(now_ms, earliest, self._next_due_ms))
        if self._below_cutoff and self._cutoff is not None:
            if self._cutoff() <= self._below_cutoff_best:
                return max(now_ms, earliest)
            wake.append(max(now_ms + self._release_ms, earliest))
        return min(wake) if wake else None

    def release_wake_ms(self, now_ms: int) -> int | None:
        """When the operator should wake this partition for its next release: at
        :meth:`next_release_ms`, but no sooner than :data:`RELEASE_GATHER_MS` after the first
        operation since the last release, so that the operations that come together (a loop
        file's lines, in network buffers up to 100 ms apart) go in one release when they come
        after a quiet spell (the first links after the seeds' release, say)."""
        due = self.next_release_ms(now_ms)
        if due is not None and self._first_op_ms:  # (set only by operations since a release)
            due = max(due, self._first_op_ms + RELEASE_GATHER_MS)
        return due

    # ------------------------------------------------------------------ operations

    def apply(
        self,
        found: Sequence[tuple[str, str, str]],
        done: Sequence[tuple[str, str, int, str, int]],
        now_ms: int,
        rescore: Sequence[Rescore] = (),
        near: Sequence[NearMark] = (),
        hints: Sequence[IntervalHint] = (),
        lastmods: Sequence[Announcement] = (),
        cash: Sequence[float] | None = None,
        out: Sequence[tuple[str, str]] = (),
        level: float | None = None,
    ) -> Answer:
        """Take the found URLs (with the ``cash`` each brings, their recrawl interval
        ``hints`` and sitemap ``lastmods``), done events, rescores, near-duplicate marks and
        the links between registered domains (``out``: (a domain, another it links to)) of one
        loop record, with the typical cash of the pages the crawl fetches now (``level``);
        when the pending operations reach ``buffer_ops``, merge them all and deliver the
        answers."""
        if level is not None and level > 0:
            self._level = level if self._level is None else self._level + 0.1 * (
                level - self._level)
        budgets = self._budgets
        if budgets is not None:
            # What the record tells the budgets counts once, here (a replay of the journal
            # after a restore finds it in the restored counters already).
            budgets.saw_found(found)
            for event in done:
                budgets.saw_outcome(event[0], event[1], event[2], event[3])
            for source, target in out:
                budgets.saw_outlinks(source, (target,))
            for url, _, _ in near:
                budgets.saw_near_duplicate(url)
        self._append(LoopRecord(found, done, rescore, near, hints, lastmods, cash), now_ms)
        if len(self._order) >= self._buffer_ops:
            return self.flush(now_ms)
        return Answer()

    def flush(self, now_ms: int) -> Answer:
        """Merge every pending operation now (the flush timer), with a release of URLs if
        one is due (:meth:`next_release_ms`); nothing when there is neither."""
        answer = Answer()
        release = self._release_allowed(now_ms)
        if not self._order and not release:
            return answer
        window_before = dict(self._drum.window_stats)
        results = self._to_drum(now_ms, answer)
        if self._drum.buffered or release:  # (a full DRUM buffer may have merged already)
            passed_before = self._pass_seconds()
            limits = None
            if release and self._budgets is not None:
                limits = self._budgets
                deferral = (self._defer_below * self._level
                            if self._defer_below and self._level else -math.inf)
                cutoff = self._cutoff() if self._cutoff is not None else -math.inf
                self._cutoff_binding = cutoff > deferral
                limits.min_rank = max(deferral, cutoff)
                limits.rank_edges = RANK_EDGES if self._publish_waiting is not None else None
            result = self._drum.merge(now_ms=now_ms, select=release, limits=limits,
                                      max_urls=self._release_batch() if release else None)
            results.append(result)
            if release:
                # Only the time of a pass over the DRUM's runs spaces the next release out:
                # not the merge of the operations that came with it (their writes and
                # fsyncs), nor a major merge that was due anyway, nor a release from the
                # due window.
                spent_ms = 1000 * (self._pass_seconds() - passed_before)
                self._release_interval_ms = max(
                    self._release_ms, int(spent_ms / self._release_share))
        for name, count in self._drum.window_stats.items():
            answer.count(f"window.{name}", count - window_before.get(name, 0))
        self._found, self._found_at, self._done, self._order = [], [], [], []
        self._found_cash, self._found_rescore = [], []
        self._found_hint, self._found_lastmod = [], []
        self._merged = True
        self._deliver(results, now_ms, answer)
        return answer

    def _pass_seconds(self) -> float:
        """The time this partition's DRUM spent in passes over its runs so far (its clock's
        seconds)."""
        timings = self._drum.timings
        return sum(timings.get(lap, 0.0) for lap in PASS_LAPS)

    def _release_batch(self) -> int:
        """URLs the next release takes at most: ``release_batch``, times the spacing of the
        releases in ``release_seconds`` when passes over a large DRUM space them out (so that
        as many URLs a second go out as with a release every ``release_seconds``), at most the
        due window's size (20 batches without a window), and at most what the frontier bound
        leaves room for."""
        batch = self._release_batch_urls
        if self._release_interval_ms > self._release_ms:
            scaled = batch * self._release_interval_ms // self._release_ms
            batch = max(batch, min(scaled, self._release_window_urls or 20 * batch))
        room = self._frontier_room()
        return batch if room is None else max(1, min(batch, room))

    def _frontier_full(self) -> bool:
        room = self._frontier_room()
        return room is not None and room <= 0

    def _release_allowed(self, now_ms: int) -> bool:
        due = self.next_release_ms(now_ms)
        return due is not None and due <= now_ms

    def take_state(self) -> PartitionState:
        """The keyed-state changes of the last call (the budgets' counters written to their
        store now)."""
        if self._budgets is not None:
            self._budgets.flush()
        manifest = None
        if self._manifest_changed:
            manifest = self._manifest
            self._manifest_changed = False
        history = None
        if self._history_changed:
            history = json.dumps(self._history.to_json(), separators=(",", ":"))
            self._history_changed = False
        merged, self._merged = self._merged, False
        return PartitionState(manifest, history, merged=merged)

    def close(self) -> None:
        self._drum.close()

    # ------------------------------------------------------------------ internals

    def _append(self, record: LoopRecord, now_ms: int) -> None:
        """Queue a loop record's operations for the next merge (``now_ms`` 0: replayed from
        the journal). Its ``out`` and ``level`` are not operations: :meth:`apply` reads them."""
        found, rescore, cash = record.found, record.rescore, record.cash
        # A loop record's outcomes come before its links (a page's own outcome first).
        done = list(record.done) + [
            (url, _NEAR, distance, of, now_ms) for url, of, distance in record.near]
        self._done.extend(done)
        self._found.extend(found)
        self._found.extend((url, hops, via) for url, hops, via, _, _ in rescore)
        count = len(found) + len(rescore)
        self._found_at.extend([now_ms] * count)
        cash_policy = self._cash
        for (_, hops, _), amount in zip(found, cash if cash is not None else [None] * len(found),
                                        strict=True):
            injected = cash_policy.injected(hops)
            self._found_cash.append(
                injected if injected is not None
                else amount if amount is not None else cash_policy.legacy(hops))
        for _, hops, _, weight, amount in rescore:
            self._found_cash.append(weight * (amount if amount is not None
                                              else cash_policy.legacy(hops)))
        self._found_rescore.extend([False] * len(found) + [True] * len(rescore))
        self._found_hint += _seconds_of(record.hint, found, len(rescore))
        self._found_lastmod += _seconds_of(record.lastmod, found, len(rescore))
        self._order.extend([False] * len(done))
        self._order.extend([True] * count)
        if (done or count) and not self._first_op_ms and self._last_release_ms:
            self._first_op_ms = now_ms
        self._ops_since_release += len(done) + count

    def _to_drum(self, now_ms: int, answer: Answer) -> list[MergeResult]:
        """Hand the pending operations to the DRUM in their order, one batch per run of the
        same kind (usually a handful of batches per flush)."""
        results: list[MergeResult] = []
        found_at = done_at = 0
        order = self._order
        i = 0
        while i < len(order):
            j = i
            while j < len(order) and order[j] == order[i]:
                j += 1
            if order[i]:
                batch_found = self._found[found_at : found_at + j - i]
                arrived = self._found_at[found_at : found_at + j - i]
                cash = self._found_cash[found_at : found_at + j - i]
                rescores = self._found_rescore[found_at : found_at + j - i]
                hints = self._found_hint[found_at : found_at + j - i]
                lastmods = self._found_lastmod[found_at : found_at + j - i]
                found_at += j - i
                results += self._discoveries(batch_found, arrived, cash, rescores, hints,
                                             lastmods, now_ms, answer)
            else:
                batch_done = self._done[done_at : done_at + j - i]
                done_at += j - i
                results += self._outcomes(batch_done, now_ms, answer)
            i = j
        return results

    def _discoveries(
        self,
        found: Sequence[tuple[str, str, str]],
        arrived: Sequence[int],
        cash: Sequence[float],
        rescores: Sequence[bool],
        hints: Sequence[int],
        lastmods: Sequence[int],
        now_ms: int,
        answer: Answer,
    ) -> list[MergeResult]:
        n = len(found)
        urls = [url for url, _, _ in found]
        depth = np.fromiter((min(len(hops), NO_DEPTH - 1) for _, hops, _ in found), np.int64, n)
        hosts = np.fromiter((host_key(host_of(url)) for url in urls), np.uint32, n)
        # Found at its arrival; a record replayed after a restore, at this merge.
        at = np.fromiter((t or now_ms for t in arrived), np.int64, n)
        score = np.fromiter(cash, np.float32, n)
        rescored = sum(rescores)
        answer.count("urls.rescored", rescored)
        interval = announced_s = 0
        if self._schedule is not None:
            interval = np.fromiter(hints, np.uint32, n)
            announced_s = np.fromiter(lastmods, np.uint32, n)
        shapes = 0
        if self._budgets is not None and self._budgets.shapes:
            shapes = np.fromiter((shape_key(url) for url in urls), np.uint32, n)
        values = discoveries(n, now_ms=at, depth=depth, host=hosts, score=score,
                             interval_s=interval, announced_s=announced_s, shape=shapes)
        payloads = [encode_payload(url, hops, via) for url, hops, via in found]
        answer.count(CRAWLDB_URLS_FOUND.name, n - rescored)
        return self._drum.check_update(url_keys(urls), values, payloads, now_ms=now_ms)

    def _outcomes(
        self, done: Sequence[DoneEvent], now_ms: int, answer: Answer
    ) -> list[MergeResult]:
        kept = []
        near = []
        for event in done:
            if event[1] in DrumStatus.__members__ and event[1] not in _NOT_OUTCOMES:
                kept.append(event)
            elif event[1] == _NEAR:
                near.append(event[0])
            else:
                answer.count("done.bad_status")
        results = self._near_duplicates(near, now_ms, answer) if near else []
        if not kept:
            return results
        n = len(kept)
        urls = [event[0] for event in kept]
        status = np.fromiter((DrumStatus[event[1]] for event in kept), np.uint8, n)
        http = np.fromiter((min(max(event[2], 0), 0xFFFF) for event in kept), np.int64, n)
        reasons = np.fromiter((self._reason_code(event[3]) for event in kept), np.int64, n)
        # An outcome replaces the QUEUED status its URL got when released because it is newer:
        # a fetch starts after its release (on a cluster, clocks must agree to well within the
        # time from a release to its fetch: a network hop and the host's politeness wait).
        at = np.fromiter((event[4] for event in kept), np.int64, n)
        hosts = np.fromiter((host_key(host_of(url)) for url in urls), np.uint32, n)
        values = outcomes(n, status=status, at_ms=at, http_status=http, reason=reasons, host=hosts)
        # What a fetch passed on leaves its URL's cash (:mod:`crawl.urls.priority`).
        values["score"] = np.fromiter(
            (-event[6] if len(event) > 6 else 0.0 for event in kept), np.float32, n)
        if self._schedule is not None:
            self._schedule_outcomes(kept, values, answer)
        payloads = [encode_payload(url, "", "") for url in urls]
        for event in kept:
            answer.count(f"done.{event[1]}")
        return results + self._drum.update(url_keys(urls), values, payloads, now_ms=now_ms)

    def _schedule_outcomes(self, kept: Sequence[DoneEvent], values: np.ndarray, answer: Answer
                           ) -> None:
        """Each outcome's next fetch time and recrawl state (:mod:`crawl.crawldb.recrawl`), in
        ``values``."""
        schedule = self._schedule
        states = []
        next_fetch = np.empty(len(kept), dtype=np.int64)
        for i, event in enumerate(kept):
            revisit = None
            if len(event) > 5 and event[5] is not None:
                try:
                    revisit = Revisit.decode(event[5])
                except (ValueError, TypeError):
                    answer.count("recrawl.bad_revisit")
            state, next_fetch[i], what = schedule.after(
                event[0], event[1], event[2], event[3], event[4], revisit
            )
            states.append(state)
            answer.count(f"recrawl.{what}")
        values["next_fetch_ms"] = next_fetch
        store_states(values, states)

    def _near_duplicates(self, urls: list[str], now_ms: int, answer: Answer) -> list[MergeResult]:
        """Mark pages found to be near-duplicates (:data:`FLAG_NEAR_DUPLICATE`)."""
        n = len(urls)
        values = neutral(n)
        values["flags"] = FLAG_NEAR_DUPLICATE
        values["host"] = np.fromiter((host_key(host_of(url)) for url in urls), np.uint32, n)
        answer.count(CRAWLDB_URLS_NEAR_DUPLICATE.name, n)
        payloads = [encode_payload(url, "", "") for url in urls]
        return self._drum.update(url_keys(urls), values, payloads, now_ms=now_ms)

    def _reason_code(self, reason: str) -> int:
        try:
            return self._drum.reason_code(reason[:100])
        except ValueError:  # the table is full: an unbounded vocabulary of reasons
            return self._drum.reason_code("other")

    def _deliver(self, results: list[MergeResult], now_ms: int, answer: Answer) -> None:
        batches: dict[str, list[QueueEntry]] = {}
        released: list[tuple[bytes, float, list | None]] = []
        for result in results:
            if result.due is not None and self._releasing:
                due = result.due
                self._last_release_ms = now_ms
                self._ops_since_release = 0
                self._first_op_ms = 0
                # Deferred URLs wait for their budget to grow: they do not keep the crawl busy.
                # URLs below the budget cutoff wait for better ones to go: they are pending.
                below_cutoff = due.held_by_rank if self._cutoff_binding else 0
                self._deferred = {"budget:domain": due.held_by_group,
                                  "budget:shape": due.held_by_shape,
                                  "budget:importance": due.held_by_rank - below_cutoff}
                self._pending = due.remaining - sum(self._deferred.values())
                self._below_cutoff = below_cutoff
                self._below_cutoff_best = due.held_best_rank if below_cutoff else -math.inf
                self._release_again = due.full and self._pending > 0
                self._next_due_ms = result.due.next_due_ms
                answer.count(CRAWLDB_RELEASES.name)
                answer.count(CRAWLDB_RELEASES_FROM_WINDOW.name, int(result.due.from_window))
                answer.count(CRAWLDB_URLS_RELEASED_REVISITS.name, result.due.revisits)
                values = result.due.values
                if self._budgets is not None:
                    new = values["status"] == DrumStatus.UNFETCHED
                    self._budgets.released(values["host"][new], values["shape"][new])
                    if due.new_rank_counts is not None and self._publish_waiting is not None:
                        self._publish_waiting(waiting_counts(
                            due.new_rank_counts, rank(values["score"][new].astype(np.float64))))
                early = announced(values) & (values["next_fetch_ms"] > now_ms)
                answer.count("urls.released.announced", int(np.count_nonzero(early)))
                ranks = rank(values["score"].astype(np.float64))
                states = (
                    [state.encode() if state is not None else None
                     for state in states_of_records(values)]
                    if self._schedule is not None else [None] * len(values)
                )
                ranks = [float(f"{value:.{CASH_DIGITS}g}") for value in ranks.tolist()]
                released += zip(result.due.payloads, ranks, states, strict=True)
            # New URLs of a merge that released were counted by its selection.
            counted = result.due is not None
            answer.count(CRAWLDB_MERGES.name)
            answer.count("merges.major", int(result.major))
            answer.count("merges.selections", int(result.due is not None and not result.major))
            answer.count("urls.archived", result.archived)
            answer.count("archives.compacted", int(result.compacted))
            answer.count("updates.on_archived", result.dropped_updates)
            answer.count(CRAWLDB_URLS_DUPLICATE.name, result.duplicates)
            new = result.new
            for kind, payload in zip(new.kinds.tolist(), new.payloads, strict=True):
                if kind != CHECK_UPDATE:
                    answer.count("done.unknown_url")  # an outcome for a URL never found
                    continue
                url, hops, via = decode_payload(payload)
                answer.count(CRAWLDB_URLS_NEW.name)
                if self._budgets is not None:
                    self._budgets.saw_new(url)
                if self._releasing:
                    self._pending += not counted  # (until the next release counts again)
                else:
                    batches.setdefault(host_of(url), []).append(QueueEntry(url, hops, via))
        if released:
            for payload, url_rank, state in released:
                url, hops, via = decode_payload(payload)
                # A revisit's recrawl state goes with it.
                batches.setdefault(host_of(url), []).append(
                    QueueEntry(url, hops, via, 0, url_rank, state))
            answer.count(CRAWLDB_URLS_RELEASED.name, sum(len(items) for items in batches.values()))
        answer.requests = [
            (host, encode_batch(entries, ranked=self._releasing))
            for host, entries in batches.items()
        ]
        # Garbage: the files the merges dropped stay while a retained checkpoint may need them.
        manifest = self._drum.manifest_bytes()
        self._history.replaced(self._manifest, manifest, now_ms)
        self._manifest = manifest
        self._manifest_changed = True
        if self._deletions_paused():
            answer.count("files.deletions_paused")
        else:
            deleted = self._drum.collect_garbage(keep=self._history.retained(now_ms))
            answer.count("files.deleted", len(deleted))
        self._history_changed = True
