"""The fetch stage: frontier, politeness, robots and HTTP for the hosts of one subtask.

Keyed by host (the fetch key of :mod:`crawl.urls.routing`: the host, or under ``politeness.group_by:
domain`` or ``ip`` the host with its group). Input: ``(key, batch)`` from the crawl DB, a batch
of queue entries for the host (:mod:`crawl.fetch_requests`).
Output: :class:`~crawl.model.FetchResult` objects (pages, robots.txt fetches, robots denials).

The per-host decisions are :class:`crawl.frontier.scheduler.HostScheduler`'s, and what the
subtask keeps in memory across hosts (fetches in flight and their polls, politeness groups,
domain quotas) is :class:`crawl.frontier.in_flight.FetchesInFlight`'s; this class loads and
saves state, starts fetches on a background event loop and wakes hosts with timers. No Flink call
waits for the network: a fetch runs on the loop while Flink goes on, and the host's next
timer collects it. Hence a checkpoint never waits for a slow server; what was in flight at a
checkpoint is in its state as a lease and is fetched again after a restore.

State, keyed by host:

1. ``queue``: MapState sequence -> JSON ``[url, hops, via]`` (``[url, hops, via, attempts,
   rank]`` with priority or for a URL put back to be fetched again:
   :class:`crawl.fetch_requests.QueueEntry`), the host's queue, best rank first with priority.
2. ``host-v2``: a row with the queue bounds, the politeness clock (next allowed start, last
   response time), the lease of the fetch in flight (kind, payload, start), the time of the
   registered wake-up timer, the fetch time of the robots.txt record and the host's
   consecutive failures (its back-off); layout :data:`crawl.frontier.scheduler.HOST_ROW_FIELDS`,
   version 2. A checkpoint of a crawl begun before version 2 holds version 1 rows (without
   the failures) in the state ``host``: each is read once, upgraded and moved to ``host-v2``
   (a Flink row state cannot change its number of fields in place). The last hosts' rows
   are kept in memory in front of it (:class:`crawl.state_cache.StateCache`): a timer reads
   its host's row from there, and a row is written only when it changed.
3. ``robots``: a row with the last robots.txt fetch (status, text, fetched, expires, reason).
4. ``not-found``: what the host answered for a path it cannot have
   (:attr:`crawl.frontier.scheduler.HostState.not_found`; none: to be asked), with the
   last hosts' answers in memory in front of it (:class:`crawl.content.soft404.NotFoundAnswers`).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import time

from pyflink.common import Row, Types
from pyflink.datastream import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

from crawl.config import (
    Config,
    FetchSection,
    ParseSection,
    PolitenessSection,
    RobotsSection,
    UrlsSection,
    UserAgentSection,
)
from crawl.content.links import LinkExtractor
from crawl.content.soft404 import NotFoundAnswers, not_found_print
from crawl.crawldb.recrawl import conditional_headers
from crawl.fetch_requests import decode_batch
from crawl.frontier.budget import PageBudget
from crawl.frontier.host_queue import HostQueue
from crawl.frontier.in_flight import FetchesInFlight, TimerKind
from crawl.frontier.robots import RobotsRecord
from crawl.frontier.scheduler import (
    HOST_ROW_FIELDS,
    LEASE_ROBOTS,
    FetchOrder,
    HostScheduler,
    HostState,
    host_row,
    host_state,
    upgrade_host_row,
)
from crawl.hops import is_sitemap_hops
from crawl.http.client import HttpFetcher
from crawl.http.io_loop import IoLoop
from crawl.layout import OutputLayout
from crawl.model import FetchResult
from crawl.progress import RunningMean, StageStatus
from crawl.stages import (
    FETCH,
    FETCH_ERRORS,
    FETCH_HELD_DOMAIN_QUOTA,
    FETCH_HOSTS_ACTIVE,
    FETCH_HOSTS_FAILING,
    FETCH_IN_FLIGHT,
    FETCH_QUEUED,
    FETCH_RESULTS,
    FETCH_SUSPENSIONS,
    FETCH_TIMERS,
    FETCH_URLS_IN,
)
from crawl.state_cache import StateCache
from crawl.status import Status
from crawl.urls.normalize import UrlNormalizer
from crawl.urls.routing import group_of_key, host_of_key
from operators.context import OpenedStage
from operators.metrics import fetch_latency_histogram, mirror_status

__all__ = ["FetchFunction", "FetchSettings"]

log = logging.getLogger(__name__)

#: A host queue longer than this is not reordered when URLs with a rank arrive (with priority
#: a host gets ``priority.host_window`` URLs at a time; a longer queue is one filled before).
_RANKED_QUEUE_MAX = 1000
# How much later a timer that fires while the job drains is registered again (_defer).
_DRAIN_DEFER_MS = 1000

#: Outcomes counted by reason too (``errors.<reason>``: ``errors.timeout:read`` ...).
_ERRORS = frozenset({Status.HTTP_ERROR, Status.FETCH_ERROR})

#: Layout version of the robots row.
ROBOTS_ROW_VERSION = 1

# Rows are read by position: PyFlink's thread mode returns rows without field names.
_LEASE_KIND = HOST_ROW_FIELDS.index("lease_kind")
_WAKE_MS = HOST_ROW_FIELDS.index("wake_ms")
_ROBOTS_FETCHED_MS = HOST_ROW_FIELDS.index("robots_fetched_ms")

_HOST_ROW_V1_TYPES = [
    Types.INT(),
    Types.LONG(),
    Types.LONG(),
    Types.LONG(),
    Types.LONG(),
    Types.STRING(),
    Types.STRING(),
    Types.LONG(),
    Types.LONG(),
    Types.LONG(),
]
#: The host row (version 2), in the state ``host-v2``.
HOST_ROW = Types.ROW_NAMED(list(HOST_ROW_FIELDS), [*_HOST_ROW_V1_TYPES, Types.INT()])
#: The version 1 host row, in the state ``host`` of checkpoints taken before version 2.
HOST_ROW_V1 = Types.ROW_NAMED(list(HOST_ROW_FIELDS[:-1]), _HOST_ROW_V1_TYPES)

ROBOTS_ROW = Types.ROW_NAMED(
    ["version", "http_status", "body", "fetched_ms", "expires_ms", "reason"],
    [Types.INT(), Types.INT(), Types.STRING(), Types.LONG(), Types.LONG(), Types.STRING()],
)


@dataclasses.dataclass(frozen=True)
class FetchSettings:
    """What the fetch stage is configured by: the sections of the frontier and the HTTP
    client, the page budget, the size limit of sitemaps, and the parse and URL sections (a
    not-found probe's answer is read as the process stage reads pages)."""

    politeness: PolitenessSection
    robots: RobotsSection
    user_agent: UserAgentSection
    fetch: FetchSection
    #: ``crawl.max_pages`` (0: no page budget).
    max_pages: int
    #: ``sitemaps.max_bytes``: a sitemap's body may be larger than a page's.
    sitemap_max_bytes: int
    parse: ParseSection = dataclasses.field(default_factory=ParseSection)
    urls: UrlsSection = dataclasses.field(default_factory=UrlsSection)

    @classmethod
    def from_config(cls, config: Config) -> FetchSettings:
        return cls(
            politeness=config.politeness,
            robots=config.robots,
            user_agent=config.user_agent,
            fetch=config.fetch,
            max_pages=config.crawl.max_pages,
            sitemap_max_bytes=config.sitemaps.max_bytes,
            parse=config.parse,
            urls=config.urls,
        )


class FetchFunction(KeyedProcessFunction):
    """Frontier + fetcher keyed by host; emits fetch outcomes (see the module docstring)."""

    def __init__(self, settings: FetchSettings, output_dir: str) -> None:
        self._settings = settings
        self._output_dir = output_dir

    def open(self, runtime_context: RuntimeContext) -> None:
        self._stage = OpenedStage(FETCH.figures, runtime_context, self._release)
        subtask = self._stage.subtask
        self._queue = runtime_context.get_map_state(
            MapStateDescriptor("queue", Types.LONG(), Types.STRING())
        )
        self._host = runtime_context.get_state(ValueStateDescriptor("host-v2", HOST_ROW))
        self._host_v1 = runtime_context.get_state(ValueStateDescriptor("host", HOST_ROW_V1))
        self._robots = runtime_context.get_state(ValueStateDescriptor("robots", ROBOTS_ROW))
        self._not_found = runtime_context.get_state(
            ValueStateDescriptor("not-found", Types.STRING()))
        self._not_found_answers = NotFoundAnswers()
        self._host_rows: StateCache[tuple | None] = StateCache()
        settings = self._settings
        layout = OutputLayout(self._output_dir)
        self._status = StageStatus(
            layout.status, FETCH.figures, subtask.index, subtask.attempt
        )
        probe_reader = None
        if settings.fetch.not_found_probe:
            links = LinkExtractor.from_section(settings.parse, settings.user_agent.product,
                                               UrlNormalizer.from_section(settings.urls))

            def probe_reader(result: FetchResult) -> str:
                return not_found_print(result, links)

        self._scheduler = HostScheduler(
            settings.politeness,
            settings.robots,
            settings.user_agent,
            PageBudget(layout.budget, settings.max_pages),
            not_found_print=probe_reader,
        )
        self._flights = FetchesInFlight.from_section(settings.politeness)
        # robots.txt redirects are followed by the client, spaced like any requests.
        self._hop_spacing = (
            settings.politeness.delay_seconds, settings.politeness.response_time_factor
        )
        self._io = IoLoop(f"fetch-io-{subtask.index}")
        self._fetcher = self._io.run(HttpFetcher.create(settings.fetch, settings.user_agent))
        # Queue lengths of the hosts seen by this subtask, for the figures only.
        self._queued: dict[str, int] = {}
        self._queued_total = 0
        # Hosts with failures in a row (backed off or suspended), for the figures only.
        self._failing: set[str] = set()
        self._status.gauge_functions["send_lag_ms"] = self._fetcher.send_lag_ms.take
        # How late timers fire: an overloaded task (or interpreter) shows here first.
        self._lateness_ms = RunningMean()
        self._status.gauge_functions["timer_lateness_ms"] = self._lateness_ms.take
        self._status.gauge_functions[FETCH_HOSTS_ACTIVE.name] = lambda: len(
            self._queued.keys() | self._flights.hosts()
        )
        self._status.gauge_functions[FETCH_HOSTS_FAILING.name] = lambda: len(self._failing)
        mirror_status(self._status, runtime_context, FETCH.figures)
        self._latency = fetch_latency_histogram(runtime_context)

    def close(self) -> None:
        self._stage.close()

    def _release(self) -> None:
        try:
            self._io.run(self._fetcher.aclose(), timeout=10)
        except Exception:  # noqa: BLE001 - closing must not hide the job's real outcome
            log.exception("closing the HTTP client failed")
        self._io.close()
        self._status.close()

    def process_element(self, value: tuple[str, str], ctx: KeyedProcessFunction.Context):
        began = time.thread_time()
        self._status.count("batches.in")
        host = host_of_key(value[0])
        ranked, payloads = decode_batch(value[1])
        row = self._host_row(value[0])
        state = self._load(host, row)
        if ranked and len(state.queue) < _RANKED_QUEUE_MAX:
            state.queue.push_ranked(payloads)  # URLs released by priority: best first
        else:
            for payload in payloads:
                state.queue.push(payload)
        self._status.count(FETCH_URLS_IN.name, len(payloads))
        wake_ms = row[_WAKE_MS] if row is not None else 0
        if not wake_ms:
            now = ctx.timer_service().current_processing_time()
            wake_ms = self._scheduler.first_wake_ms(state, now)
            ctx.timer_service().register_processing_time_timer(wake_ms)
        self._save(value[0], state, wake_ms, row[_ROBOTS_FETCHED_MS] if row is not None else 0)
        self._status.busy_seconds += time.thread_time() - began
        yield from ()

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext):
        if self._stage.closed:
            self._defer(timestamp, ctx)
            return
        began = time.thread_time()
        try:
            results = self._wake(timestamp, ctx)
        finally:
            # Measured before yielding: what runs inside the yields (the key selector of the
            # process stage) is not the fetch stage's work.
            self._status.busy_seconds += time.thread_time() - began
        yield from results

    def _defer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> None:
        """A timer that fires while a stop with a savepoint drains the job, after PyFlink has
        closed the function (at the end of its input): no fetch can start, so the timer is
        registered again a little later, for the resumed job to fire (the savepoint holds
        it), with the host's wake time moved along. Later, not at the same time: Flink fires
        every timer due before it returns, so one at the same time would fire at once again,
        forever."""
        later = max(timestamp, ctx.timer_service().current_processing_time()) + _DRAIN_DEFER_MS
        ctx.timer_service().register_processing_time_timer(later)
        key = ctx.get_current_key()
        row = self._host_row(key)
        if row is not None and row[_WAKE_MS] == timestamp:
            fields = list(row)
            fields[_WAKE_MS] = later
            self._host_rows.put(key, tuple(fields), self._write_host_row)

    def _wake(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> list[FetchResult]:
        key = ctx.get_current_key()
        host = host_of_key(key)
        flights = self._flights
        now = ctx.timer_service().current_processing_time()
        self._lateness_ms.add(now - timestamp)
        self._status.count(FETCH_TIMERS.name)
        kind = flights.timer_kind(host, timestamp)
        if kind is TimerKind.POLL_RUNNING:
            # A poll of the fetch in flight: decided from memory, no state touched.
            ctx.timer_service().register_processing_time_timer(flights.next_poll_ms(host, now))
            return []
        row = self._host_row(key)
        if kind is TimerKind.OTHER and (
            row is None
            or not flights.wakes_host(host, timestamp, row[_WAKE_MS], row[_LEASE_KIND])
        ):
            return []  # superseded by a later registration
        state = self._load(host, row)
        group = group_of_key(key)
        hold = flights.hold(group, host, now)
        wake = self._scheduler.wake(host, state, flights.get(host), now, hold.until_ms)
        if hold.by_quota(wake, now):
            self._status.count(FETCH_HELD_DOMAIN_QUOTA.name)
        flights.collect(group, host, state.next_allowed_ms)
        if wake.start is not None:
            order = wake.start
            flights.started(group, host, order.kind, self._submit(order), now,
                            state.lease_started_ms)
            self._status.count(f"started.{order.kind}")
        if flights.get(host) is not None:
            ctx.timer_service().register_processing_time_timer(
                flights.next_poll_ms(host, now, state.lease_started_ms, state.last_duration_ms)
            )
        if wake.budget_exhausted:
            self._status.gauges["budget_exhausted"] = 1
        wake_ms = 0
        if wake.wake_at_ms is not None:
            wake_ms = wake.wake_at_ms
            ctx.timer_service().register_processing_time_timer(wake_ms)
        self._save(key, state, wake_ms, row[_ROBOTS_FETCHED_MS] if row is not None else 0)
        self._status.gauges[FETCH_IN_FLIGHT.name] = len(flights)
        for result in wake.results:
            self._status.count(FETCH_RESULTS.member(result.status.value))
            if result.status in _ERRORS:
                self._status.count(FETCH_ERRORS.member(result.reason))
            if result.status is not Status.ROBOTS_DENIED:  # denials make no request
                self._latency.update(result.duration_ms)
        for event in wake.events:
            self._status.count(event)
            if event == FETCH_SUSPENSIONS.name:
                log.info(
                    "host %s suspended until %d after %d failures in a row",
                    host, state.next_allowed_ms, state.failures,
                )
        if not len(flights) and not self._queued_total:
            self._status.flush()  # idle now: the metrics show the final figures, not a burst ago
        return wake.results

    def _submit(self, order: FetchOrder) -> concurrent.futures.Future[FetchResult]:
        """Start ``order``'s request on the background loop; its future."""
        return self._io.submit(
            self._fetcher.fetch(
                order.url,
                hops=order.hops,
                via=order.via,
                follow_redirects=order.kind == LEASE_ROBOTS,
                hop_spacing=self._hop_spacing,
                max_bytes=self._max_bytes(order),
                submitted=time.monotonic(),
                conditional=conditional_headers(order.recrawl),
            )
        )

    def _host_row(self, key: str) -> tuple | None:
        """The current key's host row (its fields), from the cache of host rows or its state."""
        return self._host_rows.get(key, self._read_host_row)

    def _read_host_row(self) -> tuple | None:
        """The current key's host row from its state; a version 1 row (from a checkpoint taken
        before version 2) is upgraded and moved to the current state on its first read."""
        row = self._host.value()
        if row is not None:
            return tuple(row)
        old = self._host_v1.value()
        if old is None:
            return None
        fields = upgrade_host_row(tuple(old))
        self._host.update(Row(*fields))
        self._host_v1.clear()
        return fields

    def _write_host_row(self, fields: tuple | None) -> None:
        self._host.update(Row(*fields))

    def _load(self, host: str, fields: tuple | None) -> HostState:
        if fields is None:  # a host new to the stage: nothing stored, nothing to read
            state = HostState(HostQueue(self._queue))
            state.not_found = self._not_found_answers.get(host, lambda: None)
            return state
        state = host_state(
            fields, self._queue, self._robots_record(host, fields[_ROBOTS_FETCHED_MS])
        )
        state.not_found = self._not_found_answers.get(host, self._not_found.value)
        return state

    def _max_bytes(self, order: FetchOrder) -> int | None:
        """robots.txt and sitemaps have limits of their own; pages the fetch section's."""
        if order.kind == LEASE_ROBOTS:
            return self._settings.robots.max_bytes
        if is_sitemap_hops(order.hops):
            return self._settings.sitemap_max_bytes
        return None

    def _robots_record(self, host: str, fetched_ms: int) -> RobotsRecord | None:
        """The host's robots.txt record: from the parsed-policy cache, else from state."""
        if not fetched_ms:
            return None
        cached = self._scheduler.cached_record(host, fetched_ms)
        if cached is not None:
            return cached
        robots_row = self._robots.value()  # after a restore, or evicted from the cache
        return RobotsRecord(*tuple(robots_row)[1:]) if robots_row is not None else None

    def _store_not_found(self, answer: str | None) -> None:
        if answer is None:
            self._not_found.clear()
        else:
            self._not_found.update(answer)

    def _save(self, key: str, state: HostState, wake_ms: int, stored_robots_ms: int) -> None:
        host = host_of_key(key)
        robots = state.robots
        robots_ms = robots.fetched_ms if robots is not None else 0
        self._host_rows.put(key, host_row(state, wake_ms, robots_ms), self._write_host_row)
        self._not_found_answers.put(host, state.not_found, self._store_not_found)
        if state.failures:
            self._failing.add(host)
        else:
            self._failing.discard(host)
        if robots is not None and robots_ms != stored_robots_ms:
            self._robots.update(
                Row(
                    ROBOTS_ROW_VERSION,
                    robots.http_status,
                    robots.body,
                    robots.fetched_ms,
                    robots.expires_ms,
                    robots.reason,
                )
            )
        queued = len(state.queue)
        self._queued_total += queued - self._queued.get(host, 0)
        if queued:
            self._queued[host] = queued
        else:
            self._queued.pop(host, None)
        self._status.gauges[FETCH_QUEUED.name] = self._queued_total
