"""The frontier's per-host decisions (crawl.scheduler), with futures completed by hand."""

from __future__ import annotations

import concurrent.futures
import json
from pathlib import Path

import pytest

from crawl.budget import PageBudget
from crawl.config import PolitenessSection, RobotsSection, UserAgentSection
from crawl.frontier import DictStore, HostQueue
from crawl.model import FetchResult
from crawl.robots import RobotsRecord
from crawl.scheduler import LEASE_PAGE, LEASE_ROBOTS, HostScheduler, HostState
from crawl.status import Status

HOST = "example.test"
POLITENESS = PolitenessSection(delay_seconds=1.0, max_crawl_delay_seconds=30.0,
                               response_time_factor=2.0)


def _scheduler(tmp_path: Path, max_pages: int = 0) -> HostScheduler:
    return HostScheduler(POLITENESS, RobotsSection(), UserAgentSection(),
                         PageBudget(tmp_path / "budget", max_pages))


def _state(*paths: str, robots: RobotsRecord | None = None) -> HostState:
    queue = HostQueue(DictStore())
    for path in paths:
        queue.push(json.dumps([f"http://{HOST}{path}", "L", f"http://{HOST}/"]))
    return HostState(queue, robots=robots)


def _robots(body: str = "", status: int = 200, now: int = 0) -> RobotsRecord:
    return RobotsRecord(status, body, now, now + 86_400_000)


def _done(result: FetchResult) -> concurrent.futures.Future[FetchResult]:
    future: concurrent.futures.Future[FetchResult] = concurrent.futures.Future()
    future.set_result(result)
    return future


def test_robots_txt_is_fetched_before_anything_else(tmp_path: Path) -> None:
    state = _state("/a")
    wake = _scheduler(tmp_path).wake(HOST, state, None, now_ms=1000)
    assert wake.start is not None
    assert wake.start.url == f"http://{HOST}/robots.txt"
    assert wake.start.kind == LEASE_ROBOTS
    assert state.lease_kind == LEASE_ROBOTS
    assert len(state.queue) == 1


def test_no_robots_fetch_for_a_host_with_nothing_queued(tmp_path: Path) -> None:
    wake = _scheduler(tmp_path).wake(HOST, _state(), None, now_ms=1000)
    assert wake.start is None
    assert wake.wake_at_ms is None


def test_collected_robots_sets_spacing_from_the_end_of_the_response(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path)
    state = _state("/a")
    scheduler.wake(HOST, state, None, now_ms=1000)
    robots = FetchResult(url=f"http://{HOST}/robots.txt", status=Status.FETCHED, reason="",
                         http_status=200, body=b"User-agent: *\nCrawl-delay: 3\n",
                         started_ms=1000, duration_ms=400)
    wake = scheduler.wake(HOST, state, _done(robots), now_ms=1500)
    assert wake.results == [robots]
    assert robots.hops == "P"
    assert state.robots is not None
    assert state.robots.http_status == 200
    assert state.lease_kind == ""
    # Crawl-delay 3 s beats the 1 s delay and 2 x 400 ms; counted from the end (1400 ms).
    assert state.next_allowed_ms == 1400 + 3000
    assert wake.start is None
    assert wake.wake_at_ms == 4400


def test_fetch_in_flight_blocks_the_host_and_polls(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path)
    state = _state("/a", "/b", robots=_robots())
    first = scheduler.wake(HOST, state, None, now_ms=1000)
    assert first.start is not None
    assert first.start.url.endswith("/a")
    pending: concurrent.futures.Future[FetchResult] = concurrent.futures.Future()
    again = scheduler.wake(HOST, state, pending, now_ms=5000)
    assert again.start is None, "a second request while one is in flight"
    assert again.wake_at_ms is None  # the caller polls the fetch
    assert len(state.queue) == 1
    assert 5000 < HostScheduler.poll_at_ms(state, 5000) <= 5100


def test_disallowed_urls_are_denied_without_a_request(tmp_path: Path) -> None:
    state = _state("/private/1", "/private/2", "/open",
                   robots=_robots("User-agent: *\nDisallow: /private/\n"))
    wake = _scheduler(tmp_path).wake(HOST, state, None, now_ms=1000)
    assert [r.status for r in wake.results] == [Status.ROBOTS_DENIED] * 2
    assert all(r.reason == "robots:disallow" for r in wake.results)
    assert wake.results[0].hops == "L"
    assert wake.start is not None
    assert wake.start.url.endswith("/open")


@pytest.mark.parametrize("status", [500, 503, 0])
def test_unavailable_robots_denies_everything(tmp_path: Path, status: int) -> None:
    record = RobotsRecord(status, "", 0, 600_000, "http:503" if status else "timeout:read")
    state = _state("/a", "/b", robots=record)
    wake = _scheduler(tmp_path).wake(HOST, state, None, now_ms=1000)
    assert wake.start is None
    assert [r.status for r in wake.results] == [Status.ROBOTS_DENIED] * 2
    assert all(r.reason.startswith("robots:unavailable") for r in wake.results)


def test_expired_robots_is_fetched_again(tmp_path: Path) -> None:
    state = _state("/a", robots=RobotsRecord(200, "", 0, 5000))
    wake = _scheduler(tmp_path).wake(HOST, state, None, now_ms=6000)
    assert wake.start is not None
    assert wake.start.kind == LEASE_ROBOTS


def test_a_lease_without_a_fetch_is_requeued_first(tmp_path: Path) -> None:
    """After a restore the fetch under a lease is gone: its URL is fetched again, first."""
    state = _state("/b", robots=_robots())
    state.lease_kind = LEASE_PAGE
    state.lease_payload = json.dumps([f"http://{HOST}/a", "L", ""])
    state.lease_started_ms = 500
    wake = _scheduler(tmp_path).wake(HOST, state, None, now_ms=1000)
    assert wake.start is not None
    assert wake.start.url.endswith("/a")
    assert len(state.queue) == 1


def test_budget_exhausted_keeps_the_url_queued(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path, max_pages=1)
    state = _state("/a", "/b", robots=_robots())
    first = scheduler.wake(HOST, state, None, now_ms=1000)
    assert first.start is not None
    result = FetchResult(url=first.start.url, status=Status.FETCHED, reason="",
                         http_status=200, started_ms=1000, duration_ms=10)
    second = scheduler.wake(HOST, state, _done(result), now_ms=5000)
    assert second.start is None
    assert second.budget_exhausted
    assert len(state.queue) == 1


def test_waits_until_the_next_allowed_start(tmp_path: Path) -> None:
    state = _state("/a", robots=_robots())
    state.next_allowed_ms = 9000
    wake = _scheduler(tmp_path).wake(HOST, state, None, now_ms=1000)
    assert wake.start is None
    assert wake.wake_at_ms == 9000


def test_a_failing_future_becomes_a_fetch_error(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path)
    state = _state("/a", robots=_robots())
    scheduler.wake(HOST, state, None, now_ms=1000)
    broken: concurrent.futures.Future[FetchResult] = concurrent.futures.Future()
    broken.set_exception(RuntimeError("boom"))
    wake = scheduler.wake(HOST, state, broken, now_ms=1200)
    assert len(wake.results) == 1
    result = wake.results[0]
    assert result.status is Status.FETCH_ERROR
    assert result.reason == "fetch:internal:RuntimeError"
    assert result.url == f"http://{HOST}/a"
    assert state.lease_kind == ""


def test_policy_cache_is_bounded_by_robots_text_size(tmp_path: Path) -> None:
    scheduler = HostScheduler(POLITENESS, RobotsSection(), UserAgentSection(),
                              PageBudget(tmp_path / "budget", 0), policy_cache_bytes=10_000)
    body = "User-agent: *\nDisallow: /x\n" + "#" * 3000
    for number in range(5):
        scheduler.policy(f"h{number}.test", RobotsRecord(200, body, number + 1, 10**9))
    assert scheduler.cached_record("h4.test", 5) is not None
    assert scheduler.cached_record("h0.test", 1) is None  # evicted, least recently used
    assert scheduler.cached_record("h4.test", 6) is None  # another fetch of robots.txt
