"""The frontier's per-host decisions (crawl.frontier.scheduler), with futures completed by hand and
a clock the tests move: politeness, robots.txt, leases, and the host back-off (Retry-After,
failures in a row, suspension, retries of a URL)."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import random
from pathlib import Path

import pytest

from crawl.config import PolitenessSection, RobotsSection, UserAgentSection
from crawl.fetch_requests import QueueEntry
from crawl.frontier.budget import PageBudget
from crawl.frontier.host_queue import DictStore, HostQueue
from crawl.frontier.robots import RobotsRecord
from crawl.frontier.scheduler import (
    ASK_AFTER_PAGE,
    BUDGET_RETRY_MS,
    HOST_ROW_FIELDS,
    HOST_ROW_VERSION,
    LEASE_PAGE,
    LEASE_PROBE,
    LEASE_ROBOTS,
    HostScheduler,
    HostState,
    Wake,
    host_row,
    host_state,
    probe_url,
    upgrade_host_row,
)
from crawl.hops import NOT_FOUND_PROBE
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

HOST = "example.test"
# Back-off from the first failure, so that every failure shows in the scenarios.
POLITENESS = PolitenessSection(delay_seconds=1.0, max_crawl_delay_seconds=30.0,
                               response_time_factor=2.0, backoff_after_failures=1)


def _scheduler(
    tmp_path: Path, max_pages: int = 0, politeness: PolitenessSection = POLITENESS
) -> HostScheduler:
    return HostScheduler(politeness, RobotsSection(), UserAgentSection(),
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
    state.failures = RobotsSection().unavailable_attempts  # no retry left
    wake = _scheduler(tmp_path).wake(HOST, state, None, now_ms=1000)
    assert wake.start is None
    assert [r.status for r in wake.results] == [Status.ROBOTS_DENIED] * 2
    assert all(r.reason.startswith("robots:unavailable") for r in wake.results)


@pytest.mark.parametrize(("status", "reason"), [(503, "http:503"), (429, "http:429"),
                                                (0, "timeout:total")])
def test_unavailable_robots_is_asked_again_while_the_queue_waits(
    tmp_path: Path, status: int, reason: str
) -> None:
    scheduler = _scheduler(tmp_path)  # back-off from the first failure: 5 s, then 10 s
    state = _state("/a", "/b")
    now = 1000
    for attempt in range(1, RobotsSection().unavailable_attempts + 1):
        wake = scheduler.wake(HOST, state, None, now_ms=now)
        assert wake.start is not None, attempt
        assert wake.start.kind == LEASE_ROBOTS, attempt
        failed = FetchResult(url=wake.start.url, status=Status.FETCH_ERROR if not status
                             else Status.HTTP_ERROR, reason=reason, http_status=status,
                             started_ms=now, duration_ms=100)
        wake = scheduler.wake(HOST, state, _done(failed), now_ms=now + 100)
        assert wake.results[0] is failed
        assert state.failures == attempt
        if attempt < RobotsSection().unavailable_attempts:
            assert wake.results == [failed]
            # The queue waits, and robots.txt is asked again when the back-off ends.
            assert len(state.queue) == 2
            assert FETCH_ROBOTS_RETRIES.name in wake.events
            assert state.next_allowed_ms > now + 100 + 4000
            assert wake.wake_at_ms == state.next_allowed_ms
            assert scheduler.wake(HOST, state, None, now_ms=state.next_allowed_ms - 1).start is None
            now = state.next_allowed_ms
    # Out of attempts: the URLs are recorded, not fetched, and robots.txt is trusted as
    # unavailable for unavailable_retry_seconds.
    assert FETCH_ROBOTS_RETRIES.name not in wake.events
    assert state.robots is not None
    assert state.robots.expires_ms == now + 100 + 600_000
    # Recording the denials needs no request: they come with the last failure, without
    # waiting for the back-off.
    assert state.next_allowed_ms > now + 100
    assert wake.start is None
    assert [r.reason for r in wake.results[1:]] == [f"robots:unavailable:{reason}"] * 2
    assert len(state.queue) == 0
    # URLs found for the host later are looked at (and denied) at once too, not when the
    # back-off ends: the crawl's tail used to wait for it.
    later = now + 2000
    assert state.next_allowed_ms > later
    assert scheduler.first_wake_ms(state, later) == later
    state.queue.push(QueueEntry("http://example.test/c", "L", "", 0).encode())
    wake = scheduler.wake(HOST, state, None, now_ms=later)
    assert [r.reason for r in wake.results] == [f"robots:unavailable:{reason}"]


def test_a_host_with_new_urls_wakes_at_its_next_allowed_start(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path)
    state = _state("/a")
    state.next_allowed_ms = 9000
    assert scheduler.first_wake_ms(state, 1000) == 9000
    assert scheduler.first_wake_ms(state, 10_000) == 10_000


def test_robots_refused_by_the_address_guard_is_not_asked_again(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path)
    state = _state("/a")
    wake = scheduler.wake(HOST, state, None, now_ms=1000)
    refused = FetchResult(url=wake.start.url, status=Status.FETCH_ERROR,
                          reason="ssrf:loopback-address", started_ms=1000, duration_ms=1)
    wake = scheduler.wake(HOST, state, _done(refused), now_ms=1001)
    assert FETCH_ROBOTS_RETRIES.name not in wake.events
    assert wake.start is None
    assert [r.reason for r in wake.results] == [
        "ssrf:loopback-address", "robots:unavailable:ssrf:loopback-address"
    ]


#: A robots.txt text Protego cannot parse (it raises on the lone surrogate), as a record kept
#: in state can hold it.
UNPARSEABLE = "User-agent: *\nDisallow: /private/\ud800\n"


def test_robots_txt_that_cannot_be_parsed_is_asked_again_while_the_queue_waits(
    tmp_path: Path,
) -> None:
    scheduler = _scheduler(tmp_path)
    state = _state("/a", "/b", robots=_robots(UNPARSEABLE))

    wake = scheduler.wake(HOST, state, None, now_ms=1000)

    # Nothing of the host is fetched: the text counts as a robots.txt that could not be had.
    assert wake.start is None
    assert wake.results == []
    assert wake.events == [
        FETCH_ROBOTS_UNPARSEABLE.name, FETCH_ROBOTS_RETRIES.name, FETCH_BACKOFFS.name
    ]
    assert state.robots == RobotsRecord(200, "", 1000, 1000 + 600_000, "unparseable")
    assert state.failures == 1
    assert len(state.queue) == 2
    assert wake.wake_at_ms == state.next_allowed_ms > 1000
    wake = scheduler.wake(HOST, state, None, now_ms=state.next_allowed_ms)
    assert wake.start is not None
    assert wake.start.kind == LEASE_ROBOTS
    now = state.next_allowed_ms
    answered = FetchResult(url=wake.start.url, status=Status.FETCHED, reason="",
                           http_status=200, body=b"User-agent: *\nDisallow: /a\n",
                           started_ms=now, duration_ms=100)
    scheduler.wake(HOST, state, _done(answered), now_ms=now + 100)
    assert state.failures == 0
    wake = scheduler.wake(HOST, state, None, now_ms=state.next_allowed_ms)
    assert [(r.url, r.reason) for r in wake.results] == [
        (f"http://{HOST}/a", "robots:disallow")
    ]
    assert wake.start is not None
    assert wake.start.url == f"http://{HOST}/b"


def test_robots_txt_that_cannot_be_parsed_denies_the_queue_once_out_of_attempts(
    tmp_path: Path,
) -> None:
    scheduler = _scheduler(tmp_path)
    state = _state("/a", "/b", robots=_robots(UNPARSEABLE))
    state.failures = RobotsSection().unavailable_attempts - 1

    wake = scheduler.wake(HOST, state, None, now_ms=1000)

    assert wake.start is None
    assert FETCH_ROBOTS_RETRIES.name not in wake.events
    assert [(r.status, r.reason) for r in wake.results] == [
        (Status.ROBOTS_DENIED, "robots:unavailable:unparseable")
    ] * 2
    assert state.robots is not None
    assert state.robots.expires_ms == 1000 + 600_000


def test_robots_that_answers_on_a_retry_lets_the_queue_through(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path)
    state = _state("/a")
    wake = scheduler.wake(HOST, state, None, now_ms=1000)
    failed = FetchResult(url=wake.start.url, status=Status.HTTP_ERROR, reason="http:503",
                         http_status=503, started_ms=1000, duration_ms=100)
    scheduler.wake(HOST, state, _done(failed), now_ms=1100)
    now = state.next_allowed_ms
    wake = scheduler.wake(HOST, state, None, now_ms=now)
    assert wake.start is not None
    assert wake.start.kind == LEASE_ROBOTS
    answered = FetchResult(url=wake.start.url, status=Status.FETCHED, reason="",
                           http_status=200, body=b"User-agent: *\nDisallow:\n",
                           started_ms=now, duration_ms=100)
    scheduler.wake(HOST, state, _done(answered), now_ms=now + 100)
    assert state.failures == 0
    wake = scheduler.wake(HOST, state, None, now_ms=state.next_allowed_ms)
    assert wake.start is not None
    assert wake.start.url == f"http://{HOST}/a"


def test_a_robots_txt_cut_at_max_bytes_does_not_deny_with_its_cut_line(tmp_path: Path) -> None:
    limit = RobotsSection().max_bytes
    lines = [f"Disallow: /archive/1993/zz-{n:06d}/\n" for n in range(limit // 30)]
    comment = "#" * ((limit - len("User-agent: *\n#\nDisallow: /")) % len(lines[0]))
    body = (f"User-agent: *\n#{comment}\n" + "".join(lines)).encode()
    cut = body[:limit]
    assert cut.endswith(b"\nDisallow: /")  # a whole host denied, if read as a rule
    scheduler = _scheduler(tmp_path)
    state = _state("/p/1")
    wake = scheduler.wake(HOST, state, None, now_ms=1000)
    fetched = FetchResult(url=wake.start.url, status=Status.FETCHED, reason="", http_status=200,
                          body=cut, truncated="length", started_ms=1000, duration_ms=100)
    scheduler.wake(HOST, state, _done(fetched), now_ms=1100)

    wake = scheduler.wake(HOST, state, None, now_ms=state.next_allowed_ms)

    assert wake.results == []
    assert wake.start is not None
    assert wake.start.url == f"http://{HOST}/p/1"


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
    assert second.wake_at_ms == 5000 + BUDGET_RETRY_MS <= 5000 + 2000


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


# -- host back-off and retries ----------------------------------------------------------------

BACKOFF = dataclasses.replace(
    POLITENESS,
    retry_after_max_seconds=3600.0,
    backoff_base_seconds=5.0,
    backoff_max_seconds=40.0,
    suspend_after_failures=4,
    suspend_seconds=1800.0,
    max_fetch_attempts=3,
)


def _answer(
    url: str, http_status: int, reason: str = "", *, started: int, duration: int = 100,
    retry_after: str | None = None,
) -> FetchResult:
    """A page fetch outcome as the fetcher reports it."""
    if http_status == 0:
        status = Status.FETCH_ERROR
    elif 200 <= http_status < 300:
        status = Status.FETCHED
    else:
        status = Status.HTTP_ERROR
    headers = [("Retry-After", retry_after)] if retry_after is not None else []
    return FetchResult(url=url, status=status, reason=reason, http_status=http_status,
                       response_headers=headers, started_ms=started, duration_ms=duration)


def _start(scheduler: HostScheduler, state: HostState, now: int) -> str:
    """Wake the idle host at ``now``; it must start a page fetch: its URL."""
    wake = scheduler.wake(HOST, state, None, now)
    assert wake.start is not None, f"nothing started at {now} (next {state.next_allowed_ms})"
    assert wake.start.kind == LEASE_PAGE
    assert state.lease_kind == LEASE_PAGE
    return wake.start.url


def test_429_with_retry_after_puts_the_url_back_first_and_holds_the_host(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path, politeness=BACKOFF)
    state = _state("/a", "/b", robots=_robots())
    url = _start(scheduler, state, 1000)
    assert url.endswith("/a")

    wake = scheduler.wake(HOST, state, _done(_answer(url, 429, "http:429", started=1000,
                                                      retry_after="120")), 1200)

    assert wake.results == []  # nothing reaches the crawl log or the crawl DB yet
    assert wake.events == [FETCH_BACKOFFS.name, FETCH_RETRIES.name]
    assert state.lease_kind == ""
    assert state.failures == 1
    assert state.next_allowed_ms == 1100 + 120_000  # from the end of the response
    assert wake.wake_at_ms == state.next_allowed_ms
    assert len(state.queue) == 2
    front = QueueEntry.decode(state.queue.pop())
    assert front == QueueEntry(f"http://{HOST}/a", "L", f"http://{HOST}/", 1)
    state.queue.push_front(front.encode())

    early = scheduler.wake(HOST, state, None, 121_099)
    assert early.start is None
    assert early.wake_at_ms == 121_100

    again = _start(scheduler, state, 121_100)
    assert again == url
    done = scheduler.wake(HOST, state, _done(_answer(url, 200, started=121_100)), 121_300)
    assert [r.status for r in done.results] == [Status.FETCHED]
    assert done.results[0].hops == ""  # the result is the fetcher's, as for any fetch
    assert done.events == []
    assert state.failures == 0
    assert state.next_allowed_ms == 121_200 + 1000  # politeness only, once it succeeds
    assert _start(scheduler, state, 122_200).endswith("/b")


def test_retries_stop_after_max_attempts_and_the_last_outcome_is_recorded(
    tmp_path: Path,
) -> None:
    scheduler = _scheduler(tmp_path, politeness=BACKOFF)
    state = _state("/a", "/b", robots=_robots())
    now, ends, events = 1000, [], []
    for attempt in range(1, 4):
        if ends:
            now = state.next_allowed_ms
        url = _start(scheduler, state, now)
        assert url.endswith("/a")
        answer = _answer(url, 0, "timeout:read", started=now, duration=2000)
        wake = scheduler.wake(HOST, state, _done(answer), now + 2010)
        ends.append(now + 2000)
        events.append(wake.events)
        if attempt < 3:
            assert wake.results == []
            assert QueueEntry.decode(state.queue.pop()).attempts == attempt
            state.queue.push_front(QueueEntry(url, "L", f"http://{HOST}/", attempt).encode())

    assert events == [[FETCH_BACKOFFS.name, FETCH_RETRIES.name],
                      [FETCH_BACKOFFS.name, FETCH_RETRIES.name],
                      [FETCH_BACKOFFS.name, FETCH_RETRIES_EXHAUSTED.name]]
    assert [(r.url, r.status, r.reason) for r in wake.results] == [
        (f"http://{HOST}/a", Status.FETCH_ERROR, "timeout:read")
    ]
    assert state.failures == 3
    assert state.next_allowed_ms == ends[2] + 20_000
    assert len(state.queue) == 1
    assert _start(scheduler, state, state.next_allowed_ms).endswith("/b")


def test_one_attempt_in_all_means_no_retry(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path, politeness=dataclasses.replace(BACKOFF, max_fetch_attempts=1))
    state = _state("/a", robots=_robots())
    url = _start(scheduler, state, 1000)

    wake = scheduler.wake(HOST, state, _done(_answer(url, 0, "connect:refused", started=1000)),
                          1200)

    assert [r.reason for r in wake.results] == ["connect:refused"]
    assert wake.events == [FETCH_BACKOFFS.name]
    assert len(state.queue) == 0
    assert state.next_allowed_ms == 1100 + 5000


def test_503_without_retry_after_is_recorded_at_once_and_backs_the_host_off(
    tmp_path: Path,
) -> None:
    scheduler = _scheduler(tmp_path, politeness=BACKOFF)
    state = _state("/a", "/b", robots=_robots())
    url = _start(scheduler, state, 1000)

    wake = scheduler.wake(HOST, state, _done(_answer(url, 503, "http:503", started=1000)), 1200)

    assert [(r.status, r.reason) for r in wake.results] == [(Status.HTTP_ERROR, "http:503")]
    assert wake.events == [FETCH_BACKOFFS.name]
    assert state.failures == 1
    assert state.next_allowed_ms == 1100 + 5000
    assert wake.wake_at_ms == 6100
    assert _start(scheduler, state, 6100).endswith("/b")


def test_5xx_in_a_row_back_off_exponentially_up_to_the_cap_and_a_success_resets(
    tmp_path: Path,
) -> None:
    config = dataclasses.replace(BACKOFF, suspend_after_failures=0)
    scheduler = _scheduler(tmp_path, politeness=config)
    state = _state(*[f"/p/{n}" for n in range(8)], robots=_robots())
    now, waits = 1000, []
    for n in range(7):
        url = _start(scheduler, state, now)
        status = 200 if n == 5 else 500
        wake = scheduler.wake(HOST, state, _done(_answer(url, status, f"http:{status}",
                                                         started=now, duration=50)), now + 60)
        assert len(wake.results) == 1  # a 500 is not retried
        waits.append(state.next_allowed_ms - (now + 50))
        now = state.next_allowed_ms

    # 5 s x 2^(n-1), capped at 40 s; the success waits only the politeness delay, and the
    # next failure starts over from the base
    assert waits == [5000, 10_000, 20_000, 40_000, 40_000, 1000, 5000]


def test_politeness_spacing_wins_over_a_shorter_back_off(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path, politeness=BACKOFF)
    state = _state("/a", "/b", robots=_robots())
    url = _start(scheduler, state, 1000)

    # 2 x a 4 s response beats the 5 s back-off
    scheduler.wake(HOST, state, _done(_answer(url, 500, "http:500", started=1000,
                                              duration=4000)), 5100)

    assert state.next_allowed_ms == 5000 + 8000


def test_a_failing_host_is_suspended_with_its_queue_kept_and_resumes(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path, politeness=BACKOFF)
    state = _state("/1", "/2", "/3", "/4", robots=_robots())
    now, log = 1000, []
    # /1 fails 3 times (recorded), then /2 fails: the 4th failure in a row suspends the host
    for _ in range(4):
        url = _start(scheduler, state, now)
        wake = scheduler.wake(HOST, state, _done(_answer(url, 0, "connect:refused",
                                                         started=now)), now + 100)
        log.append((url.rsplit("/", 1)[1], [r.reason for r in wake.results], wake.events))
        now = state.next_allowed_ms

    assert log == [
        ("1", [], [FETCH_BACKOFFS.name, FETCH_RETRIES.name]),
        ("1", [], [FETCH_BACKOFFS.name, FETCH_RETRIES.name]),
        ("1", ["connect:refused"], [FETCH_BACKOFFS.name, FETCH_RETRIES_EXHAUSTED.name]),
        ("2", [], [FETCH_SUSPENSIONS.name, FETCH_RETRIES.name]),
    ]
    suspended_at = now - 1_800_000
    assert state.failures == 4
    assert wake.wake_at_ms == now  # the host sleeps until the suspension ends
    assert len(state.queue) == 3  # /2 (to retry), /3 and /4 wait: nothing is dropped
    for moment in (suspended_at + 1, suspended_at + 900_000, now - 1):
        idle = scheduler.wake(HOST, state, None, moment)
        assert idle.start is None
        assert idle.results == []
        assert idle.wake_at_ms == now

    # the suspension ends: one request probes the host; it fails: suspended again
    url = _start(scheduler, state, now)
    assert url.endswith("/2")
    wake = scheduler.wake(HOST, state, _done(_answer(url, 0, "timeout:connect", started=now)),
                          now + 100)
    assert wake.events == [FETCH_SUSPENSIONS.name, FETCH_RETRIES.name]
    assert state.next_allowed_ms == now + 100 + 1_800_000
    # the next probe succeeds: the count is reset and the host goes at its normal pace
    now = state.next_allowed_ms
    url = _start(scheduler, state, now)
    assert url.endswith("/2")
    wake = scheduler.wake(HOST, state, _done(_answer(url, 200, started=now)), now + 100)
    assert [r.status for r in wake.results] == [Status.FETCHED]
    assert state.failures == 0
    assert state.next_allowed_ms == now + 100 + 1000
    assert _start(scheduler, state, now + 1100).endswith("/3")


def test_retry_after_on_robots_txt_holds_the_host(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path, politeness=BACKOFF)
    state = _state("/a")
    first = scheduler.wake(HOST, state, None, 1000)
    assert first.start is not None
    assert first.start.kind == LEASE_ROBOTS
    answer = _answer(first.start.url, 429, "http:429", started=1000, retry_after="60")

    wake = scheduler.wake(HOST, state, _done(answer), 1200)

    assert [r.hops for r in wake.results] == ["P"]  # robots.txt is never retried as a page
    assert state.failures == 1
    assert state.next_allowed_ms == 1100 + 60_000
    assert scheduler.wake(HOST, state, None, 61_099).start is None
    # 429 leaves robots.txt unavailable: it is asked again once the Retry-After has passed.
    again = scheduler.wake(HOST, state, None, 61_100).start
    assert again is not None
    assert again.kind == LEASE_ROBOTS
    assert len(state.queue) == 1


def test_a_lost_lease_of_a_retry_keeps_its_attempts(tmp_path: Path) -> None:
    """After a restore the retry under a lease is fetched again with its count: a lost fetch
    is not an attempt."""
    scheduler = _scheduler(tmp_path, politeness=BACKOFF)
    state = _state("/b", robots=_robots())
    state.lease_kind = LEASE_PAGE
    state.lease_payload = QueueEntry(f"http://{HOST}/a", "L", "", 2).encode()
    state.failures = 2

    url = _start(scheduler, state, 1000)
    assert url.endswith("/a")
    wake = scheduler.wake(HOST, state, _done(_answer(url, 429, "http:429", started=1000)), 1200)

    assert [r.reason for r in wake.results] == ["http:429"]  # the third attempt: recorded
    assert wake.events == [FETCH_BACKOFFS.name, FETCH_RETRIES_EXHAUSTED.name]
    assert state.failures == 3


def test_a_retry_is_a_fetch_for_the_page_budget(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path, max_pages=2, politeness=BACKOFF)
    state = _state("/a", "/b", robots=_robots())
    url = _start(scheduler, state, 1000)
    scheduler.wake(HOST, state, _done(_answer(url, 429, "http:429", started=1000)), 1200)
    assert _start(scheduler, state, state.next_allowed_ms) == url
    scheduler.wake(HOST, state, _done(_answer(url, 200, started=state.lease_started_ms)),
                   state.lease_started_ms + 200)

    wake = scheduler.wake(HOST, state, None, state.next_allowed_ms)

    assert wake.start is None
    assert wake.budget_exhausted
    assert len(state.queue) == 1


# -- the host row -----------------------------------------------------------------------------


def test_host_row_round_trip() -> None:
    store = DictStore()
    state = HostState(HostQueue(store, 3, 9), _robots(), 12_345, 678, LEASE_PAGE,
                      QueueEntry("http://a.test/", "", "", 1).encode(), 12_000, 4)
    row = host_row(state, 13_000, 5)

    assert len(row) == len(HOST_ROW_FIELDS)
    assert dict(zip(HOST_ROW_FIELDS, row, strict=True)) == {
        "version": HOST_ROW_VERSION, "head": 3, "tail": 9, "next_allowed_ms": 12_345,
        "last_duration_ms": 678, "lease_kind": LEASE_PAGE,
        "lease_payload": '["http://a.test/","","",1]', "lease_started_ms": 12_000,
        "wake_ms": 13_000, "robots_fetched_ms": 5, "failures": 4,
    }
    assert upgrade_host_row(row) == row
    restored = host_state(row, store, state.robots)
    assert dataclasses.astuple(restored)[1:] == dataclasses.astuple(state)[1:]
    assert restored.queue.bounds == (3, 9)


def test_a_version_1_host_row_is_upgraded_without_failures() -> None:
    v1 = (1, 0, 2, 5000, 120, "", "", 0, 5000, 77)

    upgraded = upgrade_host_row(v1)

    assert upgraded == (2, 0, 2, 5000, 120, "", "", 0, 5000, 77, 0)
    state = host_state(upgraded, DictStore(), None)
    assert (state.next_allowed_ms, state.last_duration_ms, state.failures) == (5000, 120, 0)
    # every field keeps its position: the operator reads the wake-up and robots.txt time so
    for name in ("lease_kind", "wake_ms", "robots_fetched_ms"):
        assert upgraded[HOST_ROW_FIELDS.index(name)] == v1[HOST_ROW_FIELDS.index(name)]


@pytest.mark.parametrize(
    "row",
    [(3, 0, 0, 0, 0, "", "", 0, 0, 0, 0), (1, 0, 0, 0, 0, "", "", 0, 0, 0, 0),
     (2, 0, 0, 0, 0, "", "", 0, 0, 0)],
)
def test_an_unknown_host_row_layout_is_refused(row: tuple) -> None:
    with pytest.raises(ValueError, match="unknown host row layout"):
        upgrade_host_row(row)


# -- a host with random troubles, checkpointed at every step ----------------------------------

#: (HTTP status, reason, Retry-After) of an attempt, drawn at random.
TROUBLES = [
    (200, "", None),
    (200, "", None),
    (404, "http:404", None),
    (500, "http:500", None),
    (503, "http:503", None),
    (503, "http:503", "7"),
    (429, "http:429", "3"),
    (429, "http:429", "junk"),
    (429, "http:429", "Sun, 06 Nov 1994 08:49:37 GMT"),
    (0, "timeout:read", None),
    (0, "connect:refused", None),
    (0, "bad-response:payload", None),
]


def _model_wait_ms(trouble: tuple[int, str, str | None], failures: int) -> tuple[int, int, bool]:
    """The rules, written out again for the check: (failures after, back-off ms, retryable)."""
    status, reason, retry_after = trouble
    if status == 429 or status >= 500 or reason.startswith(("timeout:", "connect:")):
        failures += 1
        wait = 1_800_000 if failures >= 4 else min(40_000, 5000 * 2 ** (failures - 1))
        asked = None
        if status in (429, 503) and retry_after is not None and retry_after.isdigit():
            asked = int(retry_after) * 1000
        elif status in (429, 503) and retry_after is not None and "GMT" in retry_after:
            asked = 0
        retryable = status == 429 or (status == 503 and asked is not None) or status == 0
        return failures, max(wait, asked or 0), retryable
    return (0 if status else failures), 0, False


@pytest.mark.parametrize("seed", range(12))
def test_random_troubles_keep_one_fetch_in_flight_the_spacing_and_one_outcome_per_url(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    scheduler = _scheduler(tmp_path, politeness=BACKOFF)
    store = DictStore()
    queue = HostQueue(store)
    urls = [f"http://{HOST}/p/{n}" for n in range(30)]
    for url in urls:
        queue.push(json.dumps([url, "L", f"http://{HOST}/"]))
    now, failures, earliest = 1_795_000_000_000, 0, 0  # November 2026
    state = HostState(queue, robots=_robots(now=now))
    attempts: dict[str, list[tuple[int, str, str | None]]] = {url: [] for url in urls}
    outcomes: dict[str, FetchResult] = {}
    pending: concurrent.futures.Future[FetchResult] | None = None
    events: list[str] = []
    for _ in range(10_000):
        wake: Wake = scheduler.wake(HOST, state, pending, now)
        pending = None
        events.extend(wake.events)
        for result in wake.results:
            if result.hops == "P":
                continue  # robots.txt, fetched again when it expires (suspensions are long)
            assert result.url not in outcomes, f"{result.url} recorded twice"
            outcomes[result.url] = result
        # a checkpoint and a restore at every step: the row is all the host keeps
        state = host_state(host_row(state, wake.wake_at_ms or 0, 0), store, state.robots)
        if wake.start is not None:
            assert now >= earliest, "started before the spacing or the back-off allowed"
            url = wake.start.url
            if wake.start.kind == LEASE_ROBOTS:
                trouble = (200, "", None)
            else:
                trouble = rng.choice(TROUBLES)
                attempts[url].append(trouble)
            duration = rng.randrange(0, 3000)
            # looked at while in flight: nothing else starts
            busy = scheduler.wake(HOST, state, concurrent.futures.Future(), now + duration // 2)
            assert busy.start is None
            assert busy.results == []
            status, reason, retry_after = trouble
            pending = _done(_answer(url, status, reason, started=now, duration=duration,
                                    retry_after=retry_after))
            end = now + duration
            failures, wait, _ = _model_wait_ms(trouble, failures)
            earliest = end + max(1000, 2 * duration, wait)
            now = end + rng.randrange(0, 30)
            continue
        if wake.wake_at_ms is None:
            break
        assert wake.wake_at_ms == max(earliest, now) or wake.budget_exhausted
        now = wake.wake_at_ms + rng.randrange(0, 30)  # timers fire a little late

    assert not len(state.queue)
    assert state.lease_kind == ""
    assert set(outcomes) == set(urls), "every URL gets exactly one outcome"
    for url, tried in attempts.items():
        retryable = [_model_wait_ms(trouble, 0)[2] for trouble in tried]
        # tried until an attempt that may not be retried, or three times
        assert 1 <= len(tried) <= 3
        assert all(retryable[:-1])
        assert len(tried) == 3 or not retryable[-1]
        status, reason, _ = tried[-1]
        assert (outcomes[url].http_status, outcomes[url].reason) == (status, reason)
    # the troubles were troubling: URLs were retried, some to the end, and the host suspended
    assert {FETCH_BACKOFFS.name, FETCH_RETRIES.name, FETCH_RETRIES_EXHAUSTED.name,
            FETCH_SUSPENSIONS.name} <= set(events)


def test_a_group_hold_delays_the_start_and_the_wake_up(tmp_path: Path) -> None:
    scheduler = _scheduler(tmp_path)
    state = _state("/a", robots=_robots())
    wake = scheduler.wake(HOST, state, None, now_ms=1000, hold_until_ms=4000)
    assert wake.start is None
    assert wake.wake_at_ms == 4000
    assert len(state.queue) == 1
    wake = scheduler.wake(HOST, state, None, now_ms=4000, hold_until_ms=0)
    assert wake.start is not None
    assert wake.start.url == f"http://{HOST}/a"


# -- the not-found probe --------------------------------------------------------------------


def _probing(tmp_path: Path, max_pages: int = 0) -> HostScheduler:
    """A scheduler with the probe on, whose reader of a probe's answer gives its body."""
    return HostScheduler(POLITENESS, RobotsSection(), UserAgentSection(),
                         PageBudget(tmp_path / "budget", max_pages),
                         not_found_print=lambda result: result.body.decode())


def test_probe_url_is_a_path_of_the_host_that_stays_the_same() -> None:
    url = probe_url(HOST)
    assert url.startswith(f"http://{HOST}/")
    assert url.endswith(".html")
    assert url == probe_url(HOST) != probe_url("other.test")
    assert probe_url(HOST, "https") == "https" + url[4:]


def test_the_probe_comes_after_the_first_page_and_its_answer_goes_with_each_later_page(
    tmp_path: Path,
) -> None:
    scheduler = _probing(tmp_path)
    state = _state("/a", "/b", "/c")
    wake = scheduler.wake(HOST, state, None, now_ms=1000)
    assert wake.start is not None
    assert wake.start.kind == LEASE_ROBOTS
    robots = _answer(f"http://{HOST}/robots.txt", 404, started=1000)
    scheduler.wake(HOST, state, _done(robots), now_ms=1100)
    assert state.not_found == ASK_AFTER_PAGE
    url = _start(scheduler, state, state.next_allowed_ms)  # the first page goes first
    first = _answer(url, 200, started=state.lease_started_ms)
    scheduler.wake(HOST, state, _done(first), now_ms=state.lease_started_ms + 100)
    assert (first.url, first.not_found, state.not_found) == (f"http://{HOST}/a", "", None)
    wake = scheduler.wake(HOST, state, None, now_ms=state.next_allowed_ms)
    assert wake.start is not None
    assert (wake.start.url, wake.start.kind, wake.start.hops) == (
        probe_url(HOST), LEASE_PROBE, NOT_FOUND_PROBE)
    assert len(state.queue) == 2  # no URL taken, no page token claimed
    answer = _answer(probe_url(HOST), 200, started=state.lease_started_ms)
    answer.body = b"the print"
    wake = scheduler.wake(HOST, state, _done(answer), now_ms=state.lease_started_ms + 100)
    assert wake.results == [answer]
    assert (answer.hops, answer.not_found, state.not_found) == ("N", "the print", "the print")
    assert wake.start is None  # spaced like any request
    urls = []
    for _ in range(2):
        url = _start(scheduler, state, state.next_allowed_ms)
        page = _answer(url, 200, started=state.lease_started_ms)
        wake = scheduler.wake(HOST, state, _done(page), now_ms=state.lease_started_ms + 100)
        assert wake.results == [page]
        urls.append((page.url, page.not_found))
    assert urls == [(f"http://{HOST}/b", "the print"), (f"http://{HOST}/c", "the print")]


def test_a_host_with_one_url_is_not_asked(tmp_path: Path) -> None:
    scheduler = _probing(tmp_path)
    state = _state("/a", robots=_robots())
    state.not_found = ASK_AFTER_PAGE
    url = _start(scheduler, state, 1000)
    scheduler.wake(HOST, state, _done(_answer(url, 200, started=1000)), now_ms=1100)
    wake = scheduler.wake(HOST, state, None, now_ms=state.next_allowed_ms)
    assert wake.start is None
    assert state.not_found is None  # asked when a URL comes


@pytest.mark.parametrize("http_status", [404, 301, 500, 0])
def test_a_probe_that_gets_no_page_tells_nothing(tmp_path: Path, http_status: int) -> None:
    scheduler = _probing(tmp_path)
    state = _state("/a", robots=_robots())
    scheduler.wake(HOST, state, None, now_ms=1000)
    answer = _answer(probe_url(HOST), http_status, "" if http_status else "connect:refused",
                     started=1000)
    answer.body = b"not a print"
    wake = scheduler.wake(HOST, state, _done(answer), now_ms=1200)
    assert wake.results == [answer]
    assert state.not_found == answer.not_found == ""
    assert _start(scheduler, state, state.next_allowed_ms + 60_000) == f"http://{HOST}/a"


def test_a_reader_that_fails_on_the_answer_tells_nothing(tmp_path: Path) -> None:
    def broken(result: FetchResult) -> str:
        raise ValueError("unreadable")

    scheduler = HostScheduler(POLITENESS, RobotsSection(), UserAgentSection(),
                              PageBudget(tmp_path / "budget", 0), not_found_print=broken)
    state = _state("/a", robots=_robots())
    scheduler.wake(HOST, state, None, now_ms=1000)
    scheduler.wake(HOST, state, _done(_answer(probe_url(HOST), 200, started=1000)), 1200)
    assert state.not_found == ""


def test_no_probe_where_robots_txt_disallows_it_or_the_budget_is_spent(
    tmp_path: Path,
) -> None:
    state = _state("/a", robots=_robots("User-agent: *\nDisallow: /\nAllow: /a\n"))
    assert _start(_probing(tmp_path), state, 1000) == f"http://{HOST}/a"
    assert state.not_found == ""
    scheduler = _probing(tmp_path / "spent", max_pages=1)
    state = _state("/a", "/b", robots=_robots())
    state.not_found = ""
    url = _start(scheduler, state, 1000)
    scheduler.wake(HOST, state, _done(_answer(url, 200, started=1000)), now_ms=1100)
    assert scheduler.wake(HOST, state, None, now_ms=9000).budget_exhausted
    other = _state("/c", robots=_robots())  # a host first woken once the budget is spent
    wake = scheduler.wake("other.test", other, None, now_ms=9000)
    assert wake.start is None
    assert wake.budget_exhausted
    assert other.not_found == ""


def test_the_probe_asks_in_the_scheme_of_the_next_url(tmp_path: Path) -> None:
    queue = HostQueue(DictStore())
    queue.push(json.dumps([f"https://{HOST}/a", "L", ""]))
    state = HostState(queue, robots=_robots())
    wake = _probing(tmp_path).wake(HOST, state, None, now_ms=1000)
    assert wake.start is not None
    assert wake.start.url == probe_url(HOST, "https")


def test_a_lost_probe_is_asked_again_and_a_new_robots_txt_asks_again(tmp_path: Path) -> None:
    scheduler = _probing(tmp_path)
    state = _state("/a", robots=RobotsRecord(200, "", 0, 5000))
    state.lease_kind, state.lease_payload, state.lease_started_ms = (
        LEASE_PROBE, probe_url(HOST), 500)  # in flight when the process failed
    wake = scheduler.wake(HOST, state, None, now_ms=1000)
    assert wake.start is not None
    assert wake.start.kind == LEASE_PROBE
    assert len(state.queue) == 1
    answer = _answer(probe_url(HOST), 200, started=1000)
    answer.body = b"first"
    scheduler.wake(HOST, state, _done(answer), now_ms=1100)
    assert state.not_found == "first"
    wake = scheduler.wake(HOST, state, None, now_ms=6000)  # robots.txt expired
    assert wake.start is not None
    assert wake.start.kind == LEASE_ROBOTS
    robots = _answer(f"http://{HOST}/robots.txt", 404, started=6000)
    scheduler.wake(HOST, state, _done(robots), now_ms=6100)
    assert state.not_found == ASK_AFTER_PAGE
    state.queue.push(json.dumps([f"http://{HOST}/b", "L", ""]))
    url = _start(scheduler, state, state.next_allowed_ms)
    scheduler.wake(HOST, state, _done(_answer(url, 200, started=state.lease_started_ms)),
                   now_ms=state.lease_started_ms + 100)
    wake = scheduler.wake(HOST, state, None, now_ms=state.next_allowed_ms)
    assert wake.start is not None
    assert wake.start.kind == LEASE_PROBE
