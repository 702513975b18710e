"""A fetch subtask's memory across hosts (crawl.frontier.in_flight): which timer is a poll,
which wakes a host, and how politeness groups and domain quotas hold hosts back."""

from __future__ import annotations

import concurrent.futures

from crawl.config import PolitenessSection
from crawl.frontier.in_flight import FetchesInFlight, Hold, TimerKind
from crawl.frontier.politeness import GROUP_BUSY_RETRY_MS, DomainQuota, PolitenessGroups
from crawl.frontier.scheduler import LEASE_PAGE, LEASE_ROBOTS, FetchOrder, Wake
from crawl.model import FetchResult
from crawl.status import Status

GROUPED = PolitenessSection(delay_seconds=1.0, group_by="domain")


def _future() -> concurrent.futures.Future[FetchResult]:
    return concurrent.futures.Future()


def _finish(future: concurrent.futures.Future[FetchResult]) -> None:
    future.set_result(FetchResult(url="http://a.test/", status=Status.FETCHED, reason=""))


def test_groups_and_quota_exist_only_when_configured() -> None:
    plain = FetchesInFlight.from_section(PolitenessSection())
    assert (plain.groups, plain.quota) == (None, None)
    assert plain.hold("a.test", "a.test", 1000) == Hold(0, 0)
    both = FetchesInFlight.from_section(
        PolitenessSection(group_by="ip", domain_quota_pages=2, domain_quota_seconds=10))
    assert isinstance(both.groups, PolitenessGroups)
    assert isinstance(both.quota, DomainQuota)


def test_a_poll_of_a_running_fetch_is_answered_from_memory_until_it_ends() -> None:
    flights = FetchesInFlight()
    future = _future()
    flights.started("a.test", "a.test", LEASE_PAGE, future, now_ms=1000, lease_started_ms=1000)
    poll = flights.next_poll_ms("a.test", 1000, 1000, expected_ms=40)
    assert poll == 1040  # when the host's last response time says it should be done
    assert flights.timer_kind("a.test", poll) is TimerKind.POLL_RUNNING
    later = flights.next_poll_ms("a.test", 1040)  # the lease's start, as started() was told
    assert later == 1040 + 10  # a quarter of the 40 ms spent so far
    _finish(future)
    assert flights.timer_kind("a.test", later) is TimerKind.POLL_DONE
    # The poll is forgotten: the same time again is no poll any more.
    assert flights.timer_kind("a.test", later) is TimerKind.OTHER


def test_a_timer_of_another_time_or_host_is_no_poll() -> None:
    flights = FetchesInFlight()
    flights.started("a.test", "a.test", LEASE_PAGE, _future(), 0, 0)
    poll = flights.next_poll_ms("a.test", 0)
    assert flights.timer_kind("a.test", poll + 1) is TimerKind.OTHER
    assert flights.timer_kind("b.test", poll) is TimerKind.OTHER


def test_polls_grow_rarer_as_a_fetch_takes_long() -> None:
    flights = FetchesInFlight()
    flights.started("a.test", "a.test", LEASE_PAGE, _future(), 0, 0)
    waits = []
    now = 0
    for _ in range(30):
        at = flights.next_poll_ms("a.test", now)
        waits.append(at - now)
        now = at
    assert waits == sorted(waits)
    assert waits[0] == 5
    assert waits[-1] == 100


def test_a_non_poll_timer_wakes_the_host_when_it_is_its_wake_up_or_a_lease_was_lost() -> None:
    flights = FetchesInFlight()
    assert flights.wakes_host("a.test", 500, wake_ms=500, lease_kind="")
    assert not flights.wakes_host("a.test", 400, wake_ms=500, lease_kind="")  # superseded
    # A lease in state without a fetch in memory: a fetch lost with the previous attempt.
    assert flights.wakes_host("a.test", 400, wake_ms=0, lease_kind=LEASE_PAGE)
    flights.started("a.test", "a.test", LEASE_PAGE, _future(), 0, 0)
    assert not flights.wakes_host("a.test", 400, wake_ms=0, lease_kind=LEASE_PAGE)


def test_collect_forgets_only_an_ended_fetch() -> None:
    flights = FetchesInFlight()
    future = _future()
    assert not flights.collect("a.test", "a.test", 0)
    flights.started("a.test", "a.test", LEASE_PAGE, future, 0, 0)
    assert not flights.collect("a.test", "a.test", 0)
    assert flights.hosts() == {"a.test"}
    assert len(flights) == 1
    _finish(future)
    assert flights.collect("a.test", "a.test", 0)
    assert flights.get("a.test") is None
    assert len(flights) == 0


def test_a_group_holds_its_hosts_while_one_of_them_fetches_and_a_delay_after() -> None:
    flights = FetchesInFlight.from_section(GROUPED)
    # A group first seen waits one delay: a request from before a restore may be under way.
    assert flights.hold("a.test", "www.a.test", 0) == Hold(1000, 0)
    future = _future()
    flights.started("a.test", "www.a.test", LEASE_PAGE, future, 1000, 1000)
    busy = flights.hold("a.test", "img.a.test", 1200)
    assert busy.until_ms == 1200 + max(1000, GROUP_BUSY_RETRY_MS)
    assert flights.hold("b.test", "www.b.test", 1200).until_ms == 2200  # another group
    _finish(future)
    flights.collect("a.test", "www.a.test", next_allowed_ms=2500)
    assert flights.hold("a.test", "img.a.test", 1300).until_ms == 2500
    assert flights.hold("a.test", "img.a.test", 2500).until_ms == 0


def test_a_domain_quota_counts_pages_not_robots_txt() -> None:
    flights = FetchesInFlight(quota=DomainQuota(pages=2, seconds=10))
    flights.started("a.test", "a.test", LEASE_ROBOTS, _future(), 0, 0)
    flights.started("a.test", "www.a.test", LEASE_PAGE, _future(), 100, 100)
    assert flights.hold("a.test", "a.test", 200) == Hold(0, 0)
    flights.started("a.test", "img.a.test", LEASE_PAGE, _future(), 200, 200)
    assert flights.hold("a.test", "a.test", 300) == Hold(10_100, 10_100)
    assert flights.hold("a.test", "a.test", 10_099) == Hold(10_100, 10_100)
    assert flights.hold("a.test", "a.test", 10_100) == Hold(0, 0)  # the first start left


def test_a_wake_is_held_by_the_quota_only_when_the_quota_sets_its_time() -> None:
    hold = Hold(until_ms=5000, quota_until_ms=5000)
    assert hold.by_quota(Wake(wake_at_ms=5000), now_ms=1000)
    assert not hold.by_quota(Wake(wake_at_ms=6000), now_ms=1000)  # the host's own clock
    assert not hold.by_quota(Wake(wake_at_ms=5000), now_ms=5000)  # over by now
    started = Wake(start=FetchOrder("http://a.test/", LEASE_PAGE, "", ""), wake_at_ms=5000)
    assert not hold.by_quota(started, now_ms=1000)
    assert not Hold(5000, 0).by_quota(Wake(wake_at_ms=5000), now_ms=1000)
