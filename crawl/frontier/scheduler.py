"""What the fetch stage does when a host wakes up: the frontier's decisions, without Flink.

The fetch operator is keyed by host and wakes each host with a processing-time timer (Flink's
timer service is Mercator's back-queue heap). At each wake-up :meth:`HostScheduler.wake` looks
at the host's state and its fetch in flight, and decides:

1. a finished fetch is collected: the lease is released, the next allowed start computed from
   the politeness rule and the host's back-off (:func:`crawl.frontier.politeness.back_off`: failures
   in a row, Retry-After, suspension), and the result emitted, unless the fetch failed in a way
   that may pass and the URL has attempts left: then it goes back to the front of the queue,
   to be fetched again when the back-off ends, and nothing is emitted (only a URL's last
   attempt reaches the WARC files, the crawl log and the crawl DB, with its status and reason);
2. a lease without a fetch in flight is a fetch lost in a failure: its URL goes back to the
   front of the queue (the at-least-once window of invariant 2, ARCHITECTURE.md);
3. before the next allowed start (counted from the end of the previous response, see
   :mod:`crawl.frontier.politeness`), nothing happens but a new wake-up at that time (unless
   robots.txt is out of attempts: recording the queue as denied needs no request and is done at
   once);
4. robots.txt is fetched first whenever the host has none or it has expired; when it is
   unavailable (5xx, 429, no answer, or a text that cannot be parsed, which counts as a failed
   fetch of the host) the queue waits and robots.txt is fetched again as the back-off allows,
   ``robots.unavailable_attempts`` times in a row in all, before the queued URLs are recorded
   ROBOTS_DENIED;
5. after the host's first page, with ``fetch.not_found_probe``, the host is asked once for a
   path it cannot have (:mod:`crawl.content.soft404`), if robots.txt allows it and the page
   budget is not spent: what it answers (``HostState.not_found``) goes with each of its later
   pages, for the process stage to tell its soft 404s. After the first page, not before: the
   links of a host's first page (a seed's, often) go round the loop without waiting for it,
   and a host with one URL only is not asked. A new robots.txt fetch asks again. The probe
   claims no page token: like robots.txt it is a prerequisite of the host's pages;
6. otherwise URLs are taken from the queue: those robots.txt disallows are recorded as
   ROBOTS_DENIED without any request, the first allowed one is fetched (if the page budget
   grants a token).

At most one fetch per host is ever in flight: a new one starts only when there is no lease, and
a retry is a queue entry like any other (it waits for the lease and the spacing, and claims a
page token of the budget like any fetch).

The host row the fetch operator keeps (``operators/fetch.py``) is described here too
(:data:`HOST_ROW_FIELDS`, :func:`host_row`, :func:`upgrade_host_row`, :func:`host_state`), so
that its layout and its upgrade from older layouts are tested without Flink.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence

from crawl.config import PolitenessSection, RobotsSection, UserAgentSection
from crawl.fetch_requests import QueueEntry
from crawl.frontier.budget import PageBudget
from crawl.frontier.host_queue import HostQueue, MapStore
from crawl.frontier.politeness import (
    BackOff,
    Signal,
    back_off,
    classify,
    may_retry,
    next_allowed_start_ms,
    poll_delay_ms,
)
from crawl.frontier.robots import (
    UNPARSEABLE,
    RobotsPolicy,
    RobotsRecord,
    record_from_fetch,
    robots_url,
    unparseable,
)
from crawl.hops import NOT_FOUND_PROBE, PREREQUISITE
from crawl.model import FetchResult
from crawl.stages import (
    FETCH_BACKOFFS,
    FETCH_RETRIES,
    FETCH_RETRIES_EXHAUSTED,
    FETCH_ROBOTS_RETRIES,
    FETCH_ROBOTS_UNPARSEABLE,
    FETCH_SUSPENSIONS,
)
from crawl.status import Status

__all__ = [
    "ASK_AFTER_PAGE",
    "HOST_ROW_FIELDS",
    "HOST_ROW_VERSION",
    "LEASE_PAGE",
    "LEASE_PROBE",
    "LEASE_ROBOTS",
    "FetchOrder",
    "HostScheduler",
    "HostState",
    "Wake",
    "host_row",
    "host_state",
    "probe_url",
    "upgrade_host_row",
]

LEASE_PAGE = "page"
LEASE_ROBOTS = "robots"
LEASE_PROBE = "probe"
#: ``HostState.not_found`` of a host whose not-found probe waits for its next page.
ASK_AFTER_PAGE = "?"

#: At most this many robots denials are recorded in one wake-up, then the host yields.
_MAX_DENIALS_PER_WAKE = 200
#: When the budget is used up, look again this much later. Short, because the host's timer
#: is saved with it: a crawl resumed from the savepoint taken at the budget's end (with more
#: budget) finds every waiting host's timer due at once, not a minute later, when the launcher
#: may already have judged the crawl idle (it sees a host's queue only once the host wakes).
BUDGET_RETRY_MS = 2_000


def probe_url(host: str, scheme: str = "http") -> str:
    """The URL of a host's not-found probe, a path it cannot have: 20 hex digits drawn from
    a hash of the host name, so a retried or repeated probe asks the same path."""
    token = hashlib.sha1(f"not-found probe {host}".encode()).hexdigest()[:20]
    return f"{scheme}://{host}/{token}.html"


@dataclasses.dataclass(slots=True)
class HostState:
    """A host's frontier state, as loaded from (and saved back to) keyed state."""

    queue: HostQueue
    robots: RobotsRecord | None = None
    next_allowed_ms: int = 0
    last_duration_ms: int = 0
    lease_kind: str = ""
    lease_payload: str = ""
    lease_started_ms: int = 0
    #: Consecutive failures of the host (see :func:`crawl.frontier.politeness.back_off`).
    failures: int = 0
    #: What the host answered for a path it cannot have: None, to be asked now;
    #: :data:`ASK_AFTER_PAGE`, to be asked after the next page (robots.txt was just
    #: fetched); "", no soft 404 (an error, a redirect, or not asked at all); else the encoded
    #: :class:`crawl.content.soft404.NotFoundPrint` of its not-found page. Kept apart from the
    #: host row (the fetch operator's state ``not-found``).
    not_found: str | None = None


#: Layout version of the host row. 1: the fields up to ``robots_fetched_ms``; 2 added
#: ``failures`` (the host's back-off), at the end so that every other position stays.
HOST_ROW_VERSION = 2
#: The host row's fields, by position (rows read from state in thread mode carry no names).
HOST_ROW_FIELDS = (
    "version",
    "head",
    "tail",
    "next_allowed_ms",
    "last_duration_ms",
    "lease_kind",
    "lease_payload",
    "lease_started_ms",
    "wake_ms",
    "robots_fetched_ms",
    "failures",
)
_HOST_ROW_V1_LENGTH = 10


def host_row(state: HostState, wake_ms: int, robots_fetched_ms: int) -> tuple:
    """The host row (:data:`HOST_ROW_FIELDS`) that stores ``state``; its robots.txt record is
    stored apart and named here by its fetch time."""
    head, tail = state.queue.bounds
    return (
        HOST_ROW_VERSION,
        head,
        tail,
        state.next_allowed_ms,
        state.last_duration_ms,
        state.lease_kind,
        state.lease_payload,
        state.lease_started_ms,
        wake_ms,
        robots_fetched_ms,
        state.failures,
    )


def upgrade_host_row(fields: Sequence) -> tuple:
    """A host row of any known layout in the current one (a version 1 row: no failures)."""
    version = fields[0]
    if version == HOST_ROW_VERSION and len(fields) == len(HOST_ROW_FIELDS):
        return tuple(fields)
    if version == 1 and len(fields) == _HOST_ROW_V1_LENGTH:
        return (HOST_ROW_VERSION, *fields[1:], 0)
    raise ValueError(f"unknown host row layout: version {version!r}, {len(fields)} fields")


def host_state(fields: Sequence, entries: MapStore, robots: RobotsRecord | None) -> HostState:
    """The :class:`HostState` a current host row describes, over the host's queue entries."""
    (_, head, tail, next_allowed, last_duration, kind, payload, started, _, _, failures) = fields
    return HostState(
        HostQueue(entries, head, tail),
        robots,
        next_allowed,
        last_duration,
        kind,
        payload,
        started,
        failures,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class FetchOrder:
    """A request to start: the URL, the lease kind, and the crawl log's hop path and via."""

    url: str
    kind: str
    hops: str
    via: str
    #: A revisit's encoded recrawl state (:mod:`crawl.crawldb.recrawl`): its validators make the
    #: request conditional.
    recrawl: list | None = None


@dataclasses.dataclass(slots=True)
class Wake:
    """The outcome of a wake-up: results to emit, a fetch to start, when to wake up next.

    While a fetch is in flight (``start`` set, or the host's fetch not done) ``wake_at_ms`` is
    None: the caller polls the fetch (:meth:`HostScheduler.poll_at_ms`) and wakes the host
    again once it is done.
    """

    results: list[FetchResult] = dataclasses.field(default_factory=list)
    start: FetchOrder | None = None
    wake_at_ms: int | None = None
    budget_exhausted: bool = False
    #: Counter names of what happened to the host (:mod:`crawl.stages`: ``FETCH_BACKOFFS``,
    #: ``FETCH_SUSPENSIONS``, ``FETCH_RETRIES`` ...), for the stage's figures.
    events: list[str] = dataclasses.field(default_factory=list)


class HostScheduler:
    """The frontier's per-host decisions (one instance per fetch subtask)."""

    def __init__(
        self,
        politeness: PolitenessSection,
        robots: RobotsSection,
        user_agent: UserAgentSection,
        budget: PageBudget,
        policy_cache_bytes: int = 64 * 1024 * 1024,
        not_found_print: Callable[[FetchResult], str] | None = None,
    ) -> None:
        """``not_found_print``: with the not-found probe on, what a probe's answer tells of
        the host's not-found page (the encoded print, "" for none); None: no probe."""
        self._politeness = politeness
        self._not_found_print = not_found_print
        self._robots = robots
        self._token = user_agent.product
        self._budget = budget
        self._policies: OrderedDict[str, RobotsPolicy] = OrderedDict()
        self._policy_cache_bytes = policy_cache_bytes
        self._cached_bytes = 0

    def policy(self, host: str, record: RobotsRecord) -> RobotsPolicy:
        """The parsed robots policy of ``host``: parsed once per robots.txt fetch and kept in an
        LRU cache bounded by the size of the robots.txt texts it holds (a record found
        unparseable replaces its fetch's, with the same time and a reason)."""
        policy = self._policies.get(host)
        if (
            policy is not None
            and policy.record.fetched_ms == record.fetched_ms
            and policy.record.reason == record.reason
        ):
            self._policies.move_to_end(host)
            return policy
        if policy is not None:
            self._cached_bytes -= len(policy.record.body) + 256
        policy = RobotsPolicy(record, self._token, self._politeness.max_crawl_delay_seconds)
        self._policies[host] = policy
        self._policies.move_to_end(host)
        self._cached_bytes += len(record.body) + 256
        while self._cached_bytes > self._policy_cache_bytes and len(self._policies) > 1:
            _, evicted = self._policies.popitem(last=False)
            self._cached_bytes -= len(evicted.record.body) + 256
        return policy

    def cached_record(self, host: str, fetched_ms: int) -> RobotsRecord | None:
        """The robots record of ``host`` fetched at ``fetched_ms`` if the cache holds it."""
        policy = self._policies.get(host)
        if policy is not None and policy.record.fetched_ms == fetched_ms:
            return policy.record
        return None

    def wake(
        self,
        host: str,
        state: HostState,
        in_flight: concurrent.futures.Future[FetchResult] | None,
        now_ms: int,
        hold_until_ms: int = 0,
    ) -> Wake:
        """Decide what ``host`` does now; ``state`` is updated in place (caller saves it).

        ``hold_until_ms``: no request starts before then whatever the host's own clock says
        (its politeness group's clock, :class:`crawl.frontier.politeness.PolitenessGroups`)."""
        wake = Wake()
        if in_flight is not None:
            if not in_flight.done():
                return wake  # still in flight: the caller polls it (see poll_at_ms)
            self._collect(host, state, in_flight, now_ms, wake)
        elif state.lease_kind:
            # The fetch under this lease was lost with a failed process: fetch it again.
            if state.lease_kind == LEASE_PAGE:
                state.queue.push_front(state.lease_payload)
            self._release(state)
        if len(state.queue) and self._judge_robots_text(host, state, now_ms, wake):
            # A text kept from before that this parser cannot read (an upgrade): as a failed
            # fetch of robots.txt at this moment.
            verdict = back_off(0, "", None, None, state.failures, now_ms, self._politeness,
                               failed=True)
            self._apply_back_off(state, verdict, wake, robots=True)

        given_up = self._robots_given_up(state, now_ms)
        # Out of robots.txt attempts, the queue is recorded as denied at once: that needs no
        # request, so it need not wait for the host's back-off.
        not_before = max(state.next_allowed_ms, hold_until_ms)
        if now_ms < not_before and not given_up:
            if len(state.queue):
                wake.wake_at_ms = not_before
            return wake
        if not len(state.queue):
            return wake
        if (
            state.robots is None
            or state.robots.expired(now_ms)
            or self._robots_retry_due(state)
        ):
            url = robots_url(host)
            self._lease(state, LEASE_ROBOTS, url, now_ms)
            wake.start = FetchOrder(url, LEASE_ROBOTS, PREREQUISITE, "")
            return wake

        policy = self.policy(host, state.robots)
        if state.not_found is None:
            if self._not_found_print is None or self._budget.spent:
                state.not_found = ""
            else:
                url = self._probe_url(host, state)
                if url and policy.verdict(url)[0]:
                    self._lease(state, LEASE_PROBE, url, now_ms)
                    wake.start = FetchOrder(url, LEASE_PROBE, NOT_FOUND_PROBE, "")
                    return wake
                state.not_found = ""
        denials = 0
        while True:
            payload = state.queue.pop()
            if payload is None:
                return wake
            entry = QueueEntry.decode(payload)
            url, hops, via = entry.url, entry.hops, entry.via
            allowed, reason = policy.verdict(url)
            if not allowed:
                wake.results.append(
                    FetchResult(
                        url=url,
                        status=Status.ROBOTS_DENIED,
                        reason=reason,
                        hops=hops,
                        via=via,
                        started_ms=now_ms,
                        recrawl=entry.recrawl,
                    )
                )
                denials += 1
                if denials >= _MAX_DENIALS_PER_WAKE:
                    wake.wake_at_ms = now_ms
                    return wake
                continue
            if not self._budget.claim():
                state.queue.push_front(payload)
                wake.budget_exhausted = True
                wake.wake_at_ms = now_ms + BUDGET_RETRY_MS
                return wake
            self._lease(state, LEASE_PAGE, payload, now_ms)
            wake.start = FetchOrder(url, LEASE_PAGE, hops, via, entry.recrawl)
            return wake

    @staticmethod
    def _probe_url(host: str, state: HostState) -> str:
        """The probe URL of ``host`` in the scheme of the next URL queued ("" if none)."""
        payload = state.queue.peek()
        if payload is None:
            return ""
        scheme = QueueEntry.decode(payload).url.partition(":")[0]
        return probe_url(host, scheme)

    def first_wake_ms(self, state: HostState, now_ms: int) -> int:
        """When a host that just got URLs (and has no wake-up pending) should look at them:
        at its next allowed start, or at once when its robots.txt is given up (the URLs are
        denied without a request, so the host's back-off does not concern them)."""
        if self._robots_given_up(state, now_ms):
            return now_ms
        return max(now_ms, state.next_allowed_ms)

    def _robots_given_up(self, state: HostState, now_ms: int) -> bool:
        robots = state.robots
        return (
            robots is not None
            and not robots.available
            and not robots.expired(now_ms)
            and not self._robots_retry_due(state)
        )

    def _robots_retry_due(self, state: HostState) -> bool:
        """Whether robots.txt, unavailable after a failure that may pass (5xx, 429, no
        connection, a text that cannot be parsed), is to be asked again (once the back-off
        ends) while the queue waits: until ``robots.unavailable_attempts`` failures in a row.
        Our own refusals (the address guard) and malformed answers are not asked again."""
        robots = state.robots
        return (
            robots is not None
            and not robots.available
            and state.failures < self._robots.unavailable_attempts
            and (
                robots.reason == UNPARSEABLE
                or classify(robots.http_status, robots.reason) is Signal.FAILURE
            )
        )

    def _judge_robots_text(
        self, host: str, state: HostState, now_ms: int, wake: Wake
    ) -> bool:
        """Whether the host's robots.txt, trusted till now, holds a text that cannot be
        parsed; if so its record becomes an unavailable one (:func:`unparseable`). The caller
        counts it a failed fetch of the host."""
        robots = state.robots
        if robots is None or not robots.available or robots.expired(now_ms):
            return False
        if not self.policy(host, robots).unparseable:
            return False
        state.robots = unparseable(robots, now_ms, self._robots)
        wake.events.append(FETCH_ROBOTS_UNPARSEABLE.name)
        return True

    @staticmethod
    def poll_at_ms(state: HostState, now_ms: int) -> int:
        """When to look again at the host's fetch in flight (see :func:`poll_delay_ms`)."""
        elapsed = now_ms - state.lease_started_ms
        return now_ms + poll_delay_ms(elapsed, max(5, state.last_duration_ms))

    def _collect(
        self,
        host: str,
        state: HostState,
        future: concurrent.futures.Future[FetchResult],
        now_ms: int,
        wake: Wake,
    ) -> None:
        try:
            result = future.result()
        except Exception as error:  # noqa: BLE001 - the client should not raise; never fatal
            result = FetchResult(
                url=robots_url(host) if state.lease_kind == LEASE_ROBOTS else "",
                status=Status.FETCH_ERROR,
                reason=f"fetch:internal:{type(error).__name__}",
                started_ms=state.lease_started_ms,
                duration_ms=now_ms - state.lease_started_ms,
            )
            if state.lease_kind == LEASE_PAGE:
                leased = QueueEntry.decode(state.lease_payload)
                result.url, result.hops, result.via = leased.url, leased.hops, leased.via
        if state.lease_kind == LEASE_PAGE:
            leased = QueueEntry.decode(state.lease_payload)
            if result.recrawl is None:
                result.recrawl = leased.recrawl
            result.cash = leased.rank  # a released URL's rank is its cash
            if state.not_found == ASK_AFTER_PAGE:
                state.not_found = None  # asked at the next wake-up, if a URL is queued
            result.not_found = state.not_found or ""
        crawl_delay = 0.0
        unreadable = False
        if state.lease_kind == LEASE_ROBOTS:
            state.robots = record_from_fetch(
                result.http_status, result.body, result.reason, now_ms, self._robots,
                result.truncated,
            )
            state.not_found = ASK_AFTER_PAGE  # a new robots.txt: the host is asked again
            result.hops = PREREQUISITE
            unreadable = self._judge_robots_text(host, state, now_ms, wake)
            crawl_delay = self.policy(host, state.robots).crawl_delay_seconds
        elif state.robots is not None:
            crawl_delay = self.policy(host, state.robots).crawl_delay_seconds
        if state.lease_kind == LEASE_PROBE:
            result.url, result.hops = state.lease_payload, NOT_FOUND_PROBE
            state.not_found = result.not_found = self._judge_probe(result)
        started = result.started_ms or state.lease_started_ms
        state.last_duration_ms = max(0, result.duration_ms)
        finished = started + state.last_duration_ms
        state.next_allowed_ms = next_allowed_start_ms(
            finished, state.last_duration_ms, crawl_delay, self._politeness
        )
        asks_to_wait = result.http_status in (429, 503)
        verdict = back_off(
            result.http_status,
            result.reason,
            result.header("Retry-After") if asks_to_wait else None,
            result.header("Date") if asks_to_wait else None,
            state.failures,
            finished,
            self._politeness,
            failed=unreadable,
        )
        self._apply_back_off(state, verdict, wake, robots=state.lease_kind == LEASE_ROBOTS)
        if verdict.retryable and state.lease_kind == LEASE_PAGE:
            entry = QueueEntry.decode(state.lease_payload)
            attempts = entry.attempts + 1
            if may_retry(attempts, self._politeness):
                state.queue.push_front(entry._replace(attempts=attempts).encode())
                wake.events.append(FETCH_RETRIES.name)
                self._release(state)
                return
            if attempts > 1:
                wake.events.append(FETCH_RETRIES_EXHAUSTED.name)
        wake.results.append(result)
        self._release(state)

    def _judge_probe(self, result: FetchResult) -> str:
        """What a probe's answer tells of the host's not-found page ("" for none)."""
        if self._not_found_print is None or not 200 <= result.http_status < 300:
            return ""
        try:
            return self._not_found_print(result)
        except Exception:  # noqa: BLE001 - a page of the web must not stop the host
            return ""

    def _apply_back_off(
        self, state: HostState, verdict: BackOff, wake: Wake, *, robots: bool
    ) -> None:
        """Take ``verdict`` into the host's state; ``robots``: it judged a robots.txt fetch."""
        state.failures = verdict.failures
        if verdict.not_before_ms > state.next_allowed_ms:
            state.next_allowed_ms = verdict.not_before_ms
        if robots and self._robots_retry_due(state):
            wake.events.append(FETCH_ROBOTS_RETRIES.name)
        if verdict.suspended:
            wake.events.append(FETCH_SUSPENSIONS.name)
        elif verdict.not_before_ms:
            wake.events.append(FETCH_BACKOFFS.name)

    @staticmethod
    def _lease(state: HostState, kind: str, payload: str, now_ms: int) -> None:
        state.lease_kind = kind
        state.lease_payload = payload
        state.lease_started_ms = now_ms

    @staticmethod
    def _release(state: HostState) -> None:
        state.lease_kind = ""
        state.lease_payload = ""
        state.lease_started_ms = 0
