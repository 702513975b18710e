"""What one fetch subtask keeps in memory across its hosts, and the decisions made from it.

The fetch stage's per-host decisions are :class:`crawl.frontier.scheduler.HostScheduler`'s, from
the host's state. Around them a subtask keeps, in memory only, what no checkpoint needs:

- the fetches in flight, one per host at most (a future per host, with the time its lease
  began), and the polls that watch them: timers the stage registers at times it keeps here,
  so that a poll of a fetch still running is answered without touching state;
- the politeness groups (``politeness.group_by``: one clock for the hosts of a domain or an
  address, :class:`~crawl.frontier.politeness.PolitenessGroups`) and the per-domain quota
  (:class:`~crawl.frontier.politeness.DomainQuota`), which hold hosts back on top of their own
  clocks.

:class:`FetchesInFlight` decides which kind of wake-up a timer is
(:meth:`~FetchesInFlight.timer_kind`, :meth:`~FetchesInFlight.wakes_host`), how long the host is
held (:meth:`~FetchesInFlight.hold`), and keeps the books when a fetch starts, ends or is
polled. After a restore nothing of it survives: a lease in a host's state without a fetch here
is a fetch lost, which the host's next timer recovers, and a timer fired for a poll of the
previous attempt is not a poll here.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import enum

from crawl.config import PolitenessSection
from crawl.frontier.politeness import DomainQuota, PolitenessGroups, poll_delay_ms
from crawl.frontier.scheduler import LEASE_ROBOTS, Wake
from crawl.model import FetchResult

__all__ = ["FetchesInFlight", "Hold", "TimerKind"]

#: The first look at a fetch of a host whose response time is not known yet, in ms.
_DEFAULT_EXPECTED_MS = 5


class TimerKind(enum.Enum):
    """What a timer of a host is, as far as the subtask's memory tells."""

    #: A poll of a fetch still running: poll again later, no state touched.
    POLL_RUNNING = "poll-running"
    #: A poll of a fetch that has ended (or is gone): the host wakes.
    POLL_DONE = "poll-done"
    #: Not a poll: the host's state says whether it wakes (:meth:`FetchesInFlight.wakes_host`).
    OTHER = "other"


@dataclasses.dataclass(frozen=True, slots=True)
class Hold:
    """Until when a host may not start a request beyond its own clock (0: not held), and the
    part of it due to its domain's quota."""

    until_ms: int = 0
    quota_until_ms: int = 0

    def by_quota(self, wake: Wake, now_ms: int) -> bool:
        """Whether the domain's quota, not the host's clock or its group's, kept ``wake`` from
        starting a request."""
        return (
            self.quota_until_ms > now_ms
            and wake.start is None
            and wake.wake_at_ms == self.quota_until_ms
        )


class FetchesInFlight:
    """A fetch subtask's fetches in flight and polls, with its politeness groups and domain
    quota (see the module docstring). Hosts are named by host name; groups by the group of the
    host's fetch key (:func:`crawl.urls.routing.group_of_key`: the registered domain when a
    quota is set)."""

    def __init__(
        self, groups: PolitenessGroups | None = None, quota: DomainQuota | None = None
    ) -> None:
        self.groups = groups
        self.quota = quota
        self._futures: dict[str, concurrent.futures.Future[FetchResult]] = {}
        self._polls: dict[str, int] = {}
        self._lease_started: dict[str, int] = {}
        self._expected: dict[str, int] = {}

    @classmethod
    def from_section(cls, politeness: PolitenessSection) -> FetchesInFlight:
        """Groups only under ``group_by: domain`` or ``ip``; a quota only when one is set."""
        groups = PolitenessGroups(politeness) if politeness.group_by != "host" else None
        quota = (
            DomainQuota(politeness.domain_quota_pages, politeness.domain_quota_seconds)
            if politeness.domain_quota_pages else None
        )
        return cls(groups, quota)

    def __len__(self) -> int:
        return len(self._futures)

    def hosts(self) -> set[str]:
        """The hosts with a fetch in flight (or ended and not collected yet)."""
        return set(self._futures)

    def get(self, host: str) -> concurrent.futures.Future[FetchResult] | None:
        """The fetch of ``host`` in flight, if any."""
        return self._futures.get(host)

    def timer_kind(self, host: str, timestamp: int) -> TimerKind:
        """Which kind of timer of ``host`` fires at ``timestamp``; a poll whose fetch ended is
        forgotten (the host wakes now)."""
        if self._polls.get(host) != timestamp:
            return TimerKind.OTHER
        future = self._futures.get(host)
        if future is not None and not future.done():
            return TimerKind.POLL_RUNNING
        del self._polls[host]
        return TimerKind.POLL_DONE

    def wakes_host(self, host: str, timestamp: int, wake_ms: int, lease_kind: str) -> bool:
        """Whether a timer that is no poll wakes ``host``: it is the wake-up its state
        registered last (``wake_ms``), or the state holds a lease without a fetch here (a
        restored one, to recover). Any other timer was superseded by a later one."""
        return wake_ms == timestamp or (bool(lease_kind) and host not in self._futures)

    def hold(self, group: str, host: str, now_ms: int) -> Hold:
        """How long ``host``, of ``group``, is held back by its group's clock and its
        domain's quota."""
        until = self.groups.hold_until_ms(group, host, now_ms) if self.groups is not None else 0
        quota_until = 0
        if self.quota is not None:
            quota_until = self.quota.hold_until_ms(group, now_ms)
            until = max(until, quota_until)
        return Hold(until, quota_until)

    def collect(self, group: str, host: str, next_allowed_ms: int) -> bool:
        """Forget ``host``'s fetch if it has ended (its result was taken), freeing its group
        until ``next_allowed_ms``; whether there was one."""
        future = self._futures.get(host)
        if future is None or not future.done():
            return False
        del self._futures[host]
        self._lease_started.pop(host, None)
        self._expected.pop(host, None)
        if self.groups is not None:
            self.groups.finished(group, host, next_allowed_ms)
        return True

    def started(
        self,
        group: str,
        host: str,
        kind: str,
        future: concurrent.futures.Future[FetchResult],
        now_ms: int,
        lease_started_ms: int,
    ) -> None:
        """``host`` started a fetch of ``kind`` (a lease kind): its group is busy, and a page
        counts against its domain's quota (robots.txt does not)."""
        if self.groups is not None:
            self.groups.started(group, host)
        if self.quota is not None and kind != LEASE_ROBOTS:
            self.quota.started(group, now_ms)
        self._futures[host] = future
        self._lease_started[host] = lease_started_ms

    def next_poll_ms(
        self,
        host: str,
        now_ms: int,
        started_ms: int | None = None,
        expected_ms: int | None = None,
    ) -> int:
        """When to look again at ``host``'s fetch (a poll, remembered for
        :meth:`timer_kind`): when it is expected to end, ``expected_ms`` after it started (the
        host's last response time; the last one given, else 5 ms), then more and more rarely
        (:func:`crawl.frontier.politeness.poll_delay_ms`). ``started_ms``: the start of its
        lease (by default the one :meth:`started` was given, else now)."""
        if expected_ms is not None:
            self._expected[host] = expected_ms
        if started_ms is None:
            started_ms = self._lease_started.get(host, now_ms)
        expected = max(_DEFAULT_EXPECTED_MS, self._expected.get(host, _DEFAULT_EXPECTED_MS))
        at = now_ms + poll_delay_ms(now_ms - started_ms, expected)
        self._polls[host] = at
        return at
