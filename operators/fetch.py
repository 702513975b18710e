"""The fetch stage: frontier, politeness, robots and HTTP for the hosts of one subtask.

Keyed by host (the fetch key of :mod:`crawl.urls.routing`: the host, or under ``politeness.group_by:
domain`` or ``ip`` the host with its group). Input: ``(key, json list of [url, hops, via])``
batches from the crawl DB.
Output: :class:`~crawl.model.FetchResult` objects (pages, robots.txt fetches, robots denials).

The per-host decisions are :class:`crawl.frontier.scheduler.HostScheduler`'s; this class loads and
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
   (a Flink row state cannot change its number of fields in place).
3. ``robots``: a row with the last robots.txt fetch (status, text, fetched, expires, reason).
"""

from __future__ import annotations

import concurrent.futures
import logging
import time

from pyflink.common import Row, Types
from pyflink.datastream import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

from crawl.config import Config
from crawl.crawldb.recrawl import conditional_headers
from crawl.fetch_requests import decode_batch
from crawl.frontier.budget import PageBudget
from crawl.frontier.host_queue import HostQueue
from crawl.frontier.politeness import DomainQuota, PolitenessGroups, poll_delay_ms
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
from crawl.status import Status
from crawl.urls.routing import group_of_key, host_of_key
from operators.context import Lifecycle, subtask_of
from operators.metrics import fetch_latency_histogram, mirror_status

__all__ = ["FetchFunction"]

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


class FetchFunction(KeyedProcessFunction):
    """Frontier + fetcher keyed by host; emits fetch outcomes (see the module docstring)."""

    def __init__(self, config: Config, output_dir: str) -> None:
        self._config = config
        self._output_dir = output_dir

    def open(self, runtime_context: RuntimeContext) -> None:
        subtask = subtask_of(runtime_context)
        self._subtask = subtask.index
        self._closed = False
        Lifecycle.opened("fetch", subtask.index, self._shutdown)
        self._queue = runtime_context.get_map_state(
            MapStateDescriptor("queue", Types.LONG(), Types.STRING())
        )
        self._host = runtime_context.get_state(ValueStateDescriptor("host-v2", HOST_ROW))
        self._host_v1 = runtime_context.get_state(ValueStateDescriptor("host", HOST_ROW_V1))
        self._robots = runtime_context.get_state(ValueStateDescriptor("robots", ROBOTS_ROW))
        config = self._config
        layout = OutputLayout(self._output_dir)
        self._status = StageStatus(
            layout.status, "fetch", subtask.index, subtask.attempt
        )
        self._scheduler = HostScheduler(
            config.politeness,
            config.robots,
            config.user_agent,
            PageBudget(layout.budget, config.crawl.max_pages),
        )
        self._groups = (
            PolitenessGroups(config.politeness) if config.politeness.group_by != "host" else None
        )
        politeness = config.politeness
        self._quota = (
            DomainQuota(politeness.domain_quota_pages, politeness.domain_quota_seconds)
            if politeness.domain_quota_pages else None
        )
        # robots.txt redirects are followed by the client, spaced like any requests.
        self._hop_spacing = (
            config.politeness.delay_seconds, config.politeness.response_time_factor
        )
        self._io = IoLoop(f"fetch-io-{subtask.index}")
        self._fetcher = self._io.run(HttpFetcher.create(config.fetch, config.user_agent))
        self._in_flight: dict[str, concurrent.futures.Future[FetchResult]] = {}
        # Polls of fetches in flight are timers kept in memory only: a poll costs no state
        # access. After a restore such timers fire unknown and are ignored; the lease in state
        # (with no fetch in memory) makes the host's next timer recover it.
        self._polls: dict[str, int] = {}
        self._lease_started: dict[str, int] = {}
        self._expected: dict[str, int] = {}
        # Queue lengths of the hosts seen by this subtask, for the figures only.
        self._queued: dict[str, int] = {}
        self._queued_total = 0
        # Hosts with failures in a row (backed off or suspended), for the figures only.
        self._failing: set[str] = set()
        self._status.gauge_functions["send_lag_ms"] = self._fetcher.send_lag_ms.take
        # How late timers fire: an overloaded task (or interpreter) shows here first.
        self._lateness_ms = RunningMean()
        self._status.gauge_functions["timer_lateness_ms"] = self._lateness_ms.take
        self._status.gauge_functions["hosts_active"] = lambda: len(
            self._queued.keys() | self._in_flight.keys()
        )
        self._status.gauge_functions["hosts_failing"] = lambda: len(self._failing)
        mirror_status(self._status, runtime_context, "fetch")
        self._latency = fetch_latency_histogram(runtime_context)

    def close(self) -> None:
        Lifecycle.closed("fetch", self._subtask, self._shutdown)
        self._shutdown()

    def _shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
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
        row = self._host_row()
        state = self._load(host, row)
        if ranked and len(state.queue) < _RANKED_QUEUE_MAX:
            state.queue.push_ranked(payloads)  # URLs released by priority: best first
        else:
            for payload in payloads:
                state.queue.push(payload)
        self._status.count("urls.in", len(payloads))
        wake_ms = row[_WAKE_MS] if row is not None else 0
        if not wake_ms:
            now = ctx.timer_service().current_processing_time()
            wake_ms = self._scheduler.first_wake_ms(state, now)
            ctx.timer_service().register_processing_time_timer(wake_ms)
        self._save(host, state, wake_ms, row[_ROBOTS_FETCHED_MS] if row is not None else 0)
        self._status.busy_seconds += time.thread_time() - began
        yield from ()

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext):
        if self._closed:
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
        row = self._host_row()
        if row is not None and row[_WAKE_MS] == timestamp:
            fields = list(tuple(row))
            fields[_WAKE_MS] = later
            self._host.update(Row(*fields))

    def _wake(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> list[FetchResult]:
        key = ctx.get_current_key()
        host = host_of_key(key)
        in_flight = self._in_flight.get(host)
        now = ctx.timer_service().current_processing_time()
        self._lateness_ms.add(now - timestamp)
        self._status.count("timers")
        if self._polls.get(host) == timestamp:
            # A poll of the fetch in flight: decided from memory, no state touched.
            if in_flight is not None and not in_flight.done():
                self._poll(host, ctx, now, self._lease_started.get(host, now))
                return []
            del self._polls[host]
            row = self._host_row()
        else:
            row = self._host_row()
            if row is None:
                return []
            restored_lease = bool(row[_LEASE_KIND]) and in_flight is None
            if row[_WAKE_MS] != timestamp and not restored_lease:
                return []  # superseded by a later registration
        state = self._load(host, row)
        groups = self._groups
        group = group_of_key(key)
        hold = groups.hold_until_ms(group, host, now) if groups is not None else 0
        quota = self._quota
        quota_hold = 0
        if quota is not None:  # the key's group is the registered domain (fetch_routing)
            quota_hold = quota.hold_until_ms(group, now)
            hold = max(hold, quota_hold)
        wake = self._scheduler.wake(host, state, in_flight, now, hold)
        if quota_hold > now and wake.start is None and wake.wake_at_ms == quota_hold:
            # The domain's quota, not the host's clock or its group's, holds the host back.
            self._status.count("held.domain_quota")
        if in_flight is not None and in_flight.done():
            del self._in_flight[host]
            self._lease_started.pop(host, None)
            self._expected.pop(host, None)
            if groups is not None:
                groups.finished(group, host, state.next_allowed_ms)
        if wake.start is not None:
            if groups is not None:
                groups.started(group, host)
            order = wake.start
            if quota is not None and order.kind != LEASE_ROBOTS:
                quota.started(group, now)
            self._in_flight[host] = self._io.submit(
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
            self._lease_started[host] = state.lease_started_ms
            self._status.count(f"started.{order.kind}")
        if host in self._in_flight:
            self._poll(host, ctx, now, state.lease_started_ms, state.last_duration_ms)
        if wake.budget_exhausted:
            self._status.gauges["budget_exhausted"] = 1
        wake_ms = 0
        if wake.wake_at_ms is not None:
            wake_ms = wake.wake_at_ms
            ctx.timer_service().register_processing_time_timer(wake_ms)
        self._save(host, state, wake_ms, row[_ROBOTS_FETCHED_MS] if row is not None else 0)
        self._status.gauges["in_flight"] = len(self._in_flight)
        for result in wake.results:
            self._status.count(f"results.{result.status.value}")
            if result.status in _ERRORS:
                self._status.count(f"errors.{result.reason}")
            if result.status is not Status.ROBOTS_DENIED:  # denials make no request
                self._latency.update(result.duration_ms)
        for event in wake.events:
            self._status.count(event)
            if event == "suspensions":
                log.info(
                    "host %s suspended until %d after %d failures in a row",
                    host, state.next_allowed_ms, state.failures,
                )
        if not self._in_flight and not self._queued_total:
            self._status.flush()  # idle now: the metrics show the final figures, not a burst ago
        return wake.results

    def _poll(
        self,
        host: str,
        ctx: KeyedProcessFunction.OnTimerContext,
        now: int,
        started_ms: int,
        expected_ms: int | None = None,
    ) -> None:
        """Wake ``host`` again to look at its fetch in flight (a timer known only in memory)."""
        if expected_ms is not None:
            self._expected[host] = expected_ms
        at = now + poll_delay_ms(now - started_ms, max(5, self._expected.get(host, 5)))
        self._polls[host] = at
        ctx.timer_service().register_processing_time_timer(at)

    def _host_row(self) -> Row | None:
        """The current key's host row; a version 1 row (from a checkpoint taken before version
        2) is upgraded and moved to the current state on its first read."""
        row = self._host.value()
        if row is not None:
            return row
        old = self._host_v1.value()
        if old is None:
            return None
        row = Row(*upgrade_host_row(tuple(old)))
        self._host.update(row)
        self._host_v1.clear()
        return row

    def _load(self, host: str, row: Row | None) -> HostState:
        if row is None:
            return HostState(HostQueue(self._queue))
        fields = tuple(row)
        return host_state(
            fields, self._queue, self._robots_record(host, fields[_ROBOTS_FETCHED_MS])
        )

    def _max_bytes(self, order: FetchOrder) -> int | None:
        """robots.txt and sitemaps have limits of their own; pages the fetch section's."""
        if order.kind == LEASE_ROBOTS:
            return self._config.robots.max_bytes
        if is_sitemap_hops(order.hops):
            return self._config.sitemaps.max_bytes
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

    def _save(self, host: str, state: HostState, wake_ms: int, stored_robots_ms: int) -> None:
        robots = state.robots
        robots_ms = robots.fetched_ms if robots is not None else 0
        self._host.update(Row(*host_row(state, wake_ms, robots_ms)))
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
        self._status.gauges["queued"] = self._queued_total
