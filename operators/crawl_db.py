"""The crawl DB stage: the URL-seen test and the status of every URL, one DRUM per partition.

Keyed by crawl DB partition (``vnode % crawldb.partitions``, see :mod:`crawl.crawldb.partition`).
Input:
``(vnode, loop payload JSON)`` (see :mod:`crawl.loop.records`). Output: ``(fetch key, batch)``,
the URLs handed to the frontier, batched per host (:mod:`crawl.fetch_requests`), for the fetch
stage (the fetch key is the host, or the host with
its politeness group: :mod:`crawl.urls.routing`). Answers come when a partition's DRUM merges its
buffer: when the buffer is full, or from a processing-time timer ``crawldb.flush_seconds``
after the first buffered operation; with priority, URLs go at the releases (timers too, so
that a partition whose URLs wait is woken, after a restore as well).

State, keyed by partition (every call writes what changed, so a checkpoint holds exactly the
DRUM of that moment; the DRUM's files are immutable):

1. ``drum_manifest``: ValueState, the manifest (the DRUM's files and counters, JSON bytes);
2. ``drum_journal``: ListState, the loop payloads received since the last merge;
3. ``drum_history``: ValueState, the files recent merges dropped, kept for the retained
   checkpoints until ``crawldb.file_grace_seconds`` have passed;
4. ``admission``: MapState, the counters of the budgets (:mod:`crawl.crawldb.budgets`);
5. ``fetch_keys``: MapState host -> fetch key, when hosts are grouped by IP address only (a
   host keeps the key of the address it first resolved to).
"""

from __future__ import annotations

import dataclasses
import time

from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)

from crawl.config import (
    AdmissionSection,
    Config,
    ConnectTo,
    CrawlDbSection,
    PrioritySection,
    RecrawlSection,
)
from crawl.crawldb.budgets import Budgets, CachedStore
from crawl.crawldb.cutoff import BudgetCutoff, frontier_size, write_waiting
from crawl.crawldb.frontier_bound import FrontierBound, fetch_figures
from crawl.crawldb.partition import Answer, CrawlDbPartition, partition_directory
from crawl.frontier.budget import PageBudget
from crawl.layout import OutputLayout
from crawl.loop.records import LoopRecordError, parse_record
from crawl.progress import StageStatus, read_statuses
from crawl.savepoint_files import deletions_paused
from crawl.stages import (
    CRAWL_DB,
    CRAWLDB_ARCHIVED,
    CRAWLDB_BELOW_CUTOFF,
    CRAWLDB_BUFFERED,
    CRAWLDB_DEFERRED,
    CRAWLDB_KNOWN,
    CRAWLDB_PENDING,
    CRAWLDB_URLS_RELEASED,
    CRAWLDB_URLS_RELEASED_REVISITS,
)
from crawl.urls.routing import AddressResolver, FetchRouter
from operators.context import OpenedStage
from operators.faults import FaultInjector
from operators.metrics import mirror_status

__all__ = ["CrawlDbFunction", "CrawlDbSettings"]

#: The budgets that defer URLs (the crawl DB's ``deferred.<reason>`` gauges).
_DEFERRED_REASONS = ("budget:domain", "budget:shape", "budget:importance")
#: The gauges that read the partitions as they are now.
_GAUGES_NOW = (
    CRAWLDB_KNOWN.name, CRAWLDB_BUFFERED.name, CRAWLDB_PENDING.name, CRAWLDB_ARCHIVED.name,
    CRAWLDB_BELOW_CUTOFF.name, *(CRAWLDB_DEFERRED.member(reason) for reason in _DEFERRED_REASONS),
)


@dataclasses.dataclass(frozen=True)
class CrawlDbSettings:
    """What the crawl DB stage is configured by: its own sections, and the settings of other
    sections it applies (the page budget, the vnodes, how hosts are routed to the fetch
    stage)."""

    crawldb: CrawlDbSection
    admission: AdmissionSection
    priority: PrioritySection
    recrawl: RecrawlSection
    #: ``crawl.vnodes``: the fetch stage's max parallelism, over which fetch keys spread.
    vnodes: int
    #: ``crawl.max_pages`` (0: no page budget).
    max_pages: int
    #: ``politeness.fetch_routing``: what one fetch key keeps together.
    fetch_routing: str
    #: ``fetch.connect_to`` and ``fetch.connect_timeout_seconds``: where and how long the
    #: routing by IP address looks a host up.
    connect_to: tuple[ConnectTo, ...]
    dns_timeout_seconds: float

    @classmethod
    def from_config(cls, config: Config) -> CrawlDbSettings:
        return cls(
            crawldb=config.crawldb,
            admission=config.admission,
            priority=config.priority,
            recrawl=config.recrawl,
            vnodes=config.crawl.vnodes,
            max_pages=config.crawl.max_pages,
            fetch_routing=config.politeness.fetch_routing,
            connect_to=config.fetch.connect_to_rules,
            dns_timeout_seconds=config.fetch.connect_timeout_seconds,
        )


class CrawlDbFunction(KeyedProcessFunction):
    """URL-seen test and crawl DB keyed by partition (see the module docstring)."""

    def __init__(self, settings: CrawlDbSettings, output_dir: str) -> None:
        self._settings = settings
        self._output_dir = output_dir

    def open(self, runtime_context: RuntimeContext) -> None:
        self._stage = OpenedStage(CRAWL_DB.figures, runtime_context, self._release)
        subtask = self._stage.subtask
        self._manifest_state = runtime_context.get_state(
            ValueStateDescriptor("drum_manifest", Types.PICKLED_BYTE_ARRAY())
        )
        self._journal_state = runtime_context.get_list_state(
            ListStateDescriptor("drum_journal", Types.STRING())
        )
        self._history_state = runtime_context.get_state(
            ValueStateDescriptor("drum_history", Types.STRING())
        )
        self._admission_state = runtime_context.get_map_state(
            MapStateDescriptor("admission", Types.STRING(), Types.LONG())
        )
        self._fetch_keys = runtime_context.get_map_state(
            MapStateDescriptor("fetch_keys", Types.STRING(), Types.STRING())
        )
        settings = self._settings
        resolver = (
            AddressResolver(settings.connect_to, settings.dns_timeout_seconds)
            if settings.fetch_routing == "ip" else None
        )
        self._router = FetchRouter(settings.fetch_routing, settings.vnodes, resolver)
        layout = OutputLayout(self._output_dir)
        self._root = str(layout.crawldb)
        self._pins = layout.pins
        self._flush_ms = int(settings.crawldb.flush_seconds * 1000)
        self._partitions: dict[int, CrawlDbPartition] = {}
        # The earliest timer this attempt registered for each partition, until it fires.
        self._timers: dict[int, int] = {}
        self._status = StageStatus(
            layout.status, CRAWL_DB.figures, subtask.index, subtask.attempt
        )
        self._cutoff = None
        self._waiting_directory = layout.status / "ranks"
        max_pages, priority = settings.max_pages, settings.priority
        status_directory = layout.status
        if max_pages and priority.enabled and priority.budget_cutoff:
            budget = PageBudget(layout.budget, max_pages)
            self._cutoff = BudgetCutoff(
                max_pages, priority.budget_cutoff, self._waiting_directory,
                budget.claimed,
                lambda: frontier_size(read_statuses(status_directory)),
            )
        self._frontier = None
        if priority.enabled and priority.frontier_seconds:
            self._frontier = FrontierBound(
                priority.frontier_seconds, priority.frontier_min_urls,
                lambda: fetch_figures(read_statuses(status_directory), time.time(),
                                      own_subtask=subtask.index),
                share=1.0 / subtask.parallelism,
            )
        self._status.gauge_functions[CRAWLDB_KNOWN.name] = lambda: sum(
            p.known for p in list(self._partitions.values())
        )
        self._status.gauge_functions[CRAWLDB_BUFFERED.name] = lambda: sum(
            p.buffered for p in list(self._partitions.values())
        )
        self._status.gauge_functions[CRAWLDB_PENDING.name] = lambda: sum(
            p.pending for p in list(self._partitions.values())
        )
        self._status.gauge_functions[CRAWLDB_BELOW_CUTOFF.name] = lambda: sum(
            p.below_cutoff for p in list(self._partitions.values())
        )
        for reason in _DEFERRED_REASONS:
            self._status.gauge_functions[CRAWLDB_DEFERRED.member(reason)] = (
                lambda reason=reason: sum(p.deferred.get(reason, 0)
                                          for p in list(self._partitions.values())))
        self._status.gauge_functions[CRAWLDB_ARCHIVED.name] = lambda: sum(
            p.drum.counters.archived for p in list(self._partitions.values())
        )
        mirror_status(self._status, runtime_context, CRAWL_DB.figures)
        self._faults = FaultInjector(CRAWL_DB.uid, self._output_dir)

    def close(self) -> None:
        self._stage.close()

    def _release(self) -> None:
        self._status.close()
        for partition in self._partitions.values():
            partition.close()
        self._partitions.clear()

    def process_element(self, value: tuple[int, str], ctx: KeyedProcessFunction.Context):
        began = time.thread_time()
        self._faults.tick()
        _, payload = value
        try:
            record = parse_record(payload)
        except LoopRecordError:
            self._status.count("lines.bad")
            return
        key = ctx.get_current_key()
        partition = self._partition(key)
        now = ctx.timer_service().current_processing_time()
        answer = partition.apply(record.found, record.done, now, record.rescore, record.near,
                                 record.hint, record.lastmod, record.cash, record.out,
                                 record.level)
        self._store(partition, payload)
        self._schedule(key, partition, now, ctx)
        yield from self._emit(answer, began)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext):
        began = time.thread_time()
        key = ctx.get_current_key()
        if self._timers.get(key) == timestamp:
            del self._timers[key]
        partition = self._partition(key)
        now = ctx.timer_service().current_processing_time()
        answer = partition.flush(now)
        self._store(partition, None)
        self._schedule(key, partition, now, ctx)
        yield from self._emit(answer, began)

    def _schedule(self, key: int, partition: CrawlDbPartition, now: int, ctx) -> None:
        """Have a timer wake the partition when its buffer must be merged (URLs turned away
        too: they are recorded by the next merge) or URLs must be released. Timers are
        checkpointed, so a partition whose URLs wait is woken after a restore too."""
        due = now + self._flush_ms if partition.buffered else None
        release = partition.release_wake_ms(now)
        if release is not None:
            due = release if due is None else min(due, release)
        if due is None:
            # Nothing to merge or release: idle now. The metrics show the final figures (the
            # next count, which would push them, may not come), queues as they are now.
            self._status.flush(current=_GAUGES_NOW)
            return
        registered = self._timers.get(key)
        if registered is None or registered > due:
            ctx.timer_service().register_processing_time_timer(due)
            self._timers[key] = due

    def _partition(self, key: int) -> CrawlDbPartition:
        partition = self._partitions.get(key)
        if partition is None:
            partition = CrawlDbPartition(
                partition_directory(self._root, key),
                self._settings.crawldb,
                manifest=self._manifest_state.value(),
                journal=list(self._journal_state.get() or []),
                history=self._history_state.value(),
                budgets=Budgets(
                    CachedStore(_MapStateStore(self._admission_state)),
                    self._settings.admission,
                ),
                priority=self._settings.priority,
                recrawl=self._settings.recrawl,
                deletions_paused=lambda: deletions_paused(self._pins),
                cutoff=self._cutoff.value if self._cutoff is not None else None,
                publish_waiting=(
                    (lambda counts, key=key: write_waiting(self._waiting_directory, key, counts))
                    if self._cutoff is not None else None
                ),
                frontier_room=self._frontier.room if self._frontier is not None else lambda: None,
            )
            self._partitions[key] = partition
            self._status.count("journal.unreadable", partition.unreadable_journal_entries)
        return partition

    def _store(self, partition: CrawlDbPartition, payload: str | None) -> None:
        state = partition.take_state()
        if state.manifest is not None:
            self._manifest_state.update(state.manifest)
        if state.merged:
            self._journal_state.clear()
        for entry in state.journal_additions(payload):
            self._journal_state.add(entry)
        if state.history is not None:
            self._history_state.update(state.history)

    def _emit(self, answer: Answer, began: float) -> list[tuple[str, str]]:
        for name, amount in answer.counts.items():
            self._status.count(name, amount)
        if self._cutoff is not None:
            self._cutoff.released(answer.counts.get(CRAWLDB_URLS_RELEASED.name, 0)
                                  - answer.counts.get(CRAWLDB_URLS_RELEASED_REVISITS.name, 0))
        if self._frontier is not None:
            self._frontier.released(answer.counts.get(CRAWLDB_URLS_RELEASED.name, 0))
        requests = answer.requests
        if requests and self._router.mode != "host":
            keys = self._router.keys(
                (host for host, _ in requests), _MapStateStore(self._fetch_keys)
            )
            requests = [(keys[host], batch) for host, batch in requests]
        self._status.busy_seconds += time.thread_time() - began
        return requests


class _MapStateStore:
    """A MapState of the current key (the partition being handled) as the plain stores of
    :mod:`crawl.crawldb.budgets` (get/put) and :mod:`crawl.urls.routing` (get/item assignment) use
    it."""

    def __init__(self, state) -> None:
        self._state = state

    def get(self, key: str):
        return self._state.get(key)

    def put(self, key: str, value) -> None:
        self._state.put(key, value)

    __setitem__ = put
