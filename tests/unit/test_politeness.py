"""Politeness arithmetic: when the next request to a host may start, how often to poll, and
the host back-off (Retry-After, failures in a row, suspension, retries). Every clock is a
number passed in."""

from __future__ import annotations

import calendar
import dataclasses
import math
from fractions import Fraction

import pytest

from crawl.config import ConfigError, PolitenessSection, load_config
from crawl.frontier.politeness import (
    MAX_FAILURES,
    BackOff,
    DomainQuota,
    PolitenessGroups,
    Signal,
    back_off,
    backoff_delay_ms,
    classify,
    may_retry,
    next_allowed_start_ms,
    poll_delay_ms,
    retry_after_ms,
)

T0 = 1_700_000_000_000


def _config(delay: float = 1.0, factor: float = 2.0, **backoff: float) -> PolitenessSection:
    # Back-off from the first failure unless a test says otherwise.
    backoff.setdefault("backoff_after_failures", 1)
    return PolitenessSection(
        delay_seconds=delay, max_crawl_delay_seconds=30.0, response_time_factor=factor,
        **backoff,
    )


# (delay s, K, crawl-delay s, last duration ms, spacing ms)
SPACING = [
    # the configured delay when it is the largest
    (1.0, 2.0, 0.0, 0, 1000),
    (1.0, 2.0, 0.0, 100, 1000),
    (1.0, 2.0, 0.5, 499, 1000),
    # robots.txt Crawl-delay when it is the largest
    (1.0, 2.0, 5.0, 100, 5000),
    (0.0, 0.0, 0.25, 0, 250),
    (1.0, 2.0, 1.5, 700, 1500),
    # K x the last response time when it is the largest (Mercator's rule)
    (1.0, 2.0, 0.0, 501, 1002),
    (1.0, 2.0, 1.5, 800, 1600),
    (0.0, 10.0, 0.0, 7, 70),
    (0.5, 3.0, 0.0, 1000, 3000),
    # ties
    (1.0, 2.0, 1.0, 500, 1000),
    # all zero: the next request may start at once
    (0.0, 0.0, 0.0, 5000, 0),
    (0.0, 2.0, 0.0, 0, 0),
    # fractions of a millisecond are rounded up, never down
    (0.0, 1.5, 0.0, 333, 500),
    (0.0, 2.5, 0.0, 1, 3),
    (0.0004, 0.0, 0.0, 0, 1),
    (0.0, 0.0, 0.0001, 0, 1),
    (1.0005, 0.0, 0.0, 0, 1001),
    (0.0, 0.0, 0.5005, 0, 501),
    (0.0, 0.3, 0.0, 1, 1),
    # common decimal settings come out exact
    (0.1, 0.0, 0.0, 0, 100),
    (0.7, 0.0, 0.0, 0, 700),
    (1.1, 0.0, 0.0, 0, 1100),
    (0.0, 0.0, 2.2, 0, 2200),
    (0.0, 0.0, 0.57, 0, 570),
]


@pytest.mark.parametrize(("delay", "factor", "crawl_delay", "duration", "spacing"), SPACING)
def test_next_allowed_start(
    delay: float, factor: float, crawl_delay: float, duration: int, spacing: int
) -> None:
    result = next_allowed_start_ms(T0, duration, crawl_delay, _config(delay, factor))

    assert result == T0 + spacing
    assert isinstance(result, int)


@pytest.mark.parametrize("finished", [0, 1, T0, T0 + 999])
def test_next_allowed_start_counts_from_the_end_of_the_last_request(finished: int) -> None:
    assert next_allowed_start_ms(finished, 300, 0.0, _config()) == finished + 1000


def _exact_spacing_ms(delay: float, factor: float, crawl_delay: float, duration: int) -> Fraction:
    """The spacing in exact decimal arithmetic, as the settings are written."""
    return max(
        Fraction(str(delay)) * 1000,
        Fraction(str(crawl_delay)) * 1000,
        Fraction(str(factor)) * duration,
    )


@pytest.mark.parametrize("factor", [0.0, 1.5, 2.0, 3.3, 7.77])
def test_next_allowed_start_is_never_short(factor: float) -> None:
    cases = [
        (step / 1000, crawl_delay, duration)
        for step in range(0, 3001, 31)
        for crawl_delay in (0.0, 0.0015, 2.007)
        for duration in (0, 1, 333, 1001, 2500)
    ]
    for delay, crawl_delay, duration in cases:
        exact = _exact_spacing_ms(delay, factor, crawl_delay, duration)

        result = next_allowed_start_ms(T0, duration, crawl_delay, _config(delay, factor))

        # Never short; at most the ceiling plus one millisecond of float rounding.
        assert math.ceil(exact) <= result - T0 <= math.ceil(exact) + 1, (
            delay, factor, crawl_delay, duration)


# -- polling ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("elapsed", "expected", "delay"),
    [
        # before the expected end: wake up when the fetch should be done
        (0, 200, 200),
        (150, 200, 50),
        (198, 200, 5),
        (199, 200, 5),
        (0, 3, 5),
        # past the expected end: a quarter of the time spent, from 5 ms up to 100 ms
        (200, 200, 50),
        (0, 0, 5),
        (3, 0, 5),
        (10, 5, 5),
        (40, 5, 10),
        (400, 200, 100),
        (999, 200, 100),
        (5000, 200, 100),
        (3_600_000, 10, 100),
    ],
)
def test_poll_delay(elapsed: int, expected: int, delay: int) -> None:
    assert poll_delay_ms(elapsed, expected) == delay


def test_poll_delay_bounds() -> None:
    for expected in (0, 1, 5, 50, 250, 999, 1000, 4000):
        for elapsed in range(0, 10_000, 7):
            delay = poll_delay_ms(elapsed, expected)

            assert delay >= 5
            if elapsed < expected:
                # never sleeps past the expected end, unless by the 5 ms floor
                assert delay == max(5, expected - elapsed)
            else:
                # a finished fetch is noticed within a quarter of its time, 100 ms at most
                assert delay <= max(5, elapsed // 4)
                assert delay <= 100


def test_poll_delay_costs_a_slow_fetch_few_wakeups() -> None:
    elapsed, wakeups = 0, 0
    while elapsed < 10_000:
        elapsed += poll_delay_ms(elapsed, 100)
        wakeups += 1

    assert wakeups <= 110  # about ten a second once past the first few hundred ms


# -- Retry-After ------------------------------------------------------------------------------


def _at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) * 1000


#: "Now" for the Retry-After tables: 2026-11-22 04:53:05 UTC.
NOW = _at(2026, 11, 22, 4, 53, 5)

RETRY_AFTER = [
    # delta-seconds
    ("0", None, 0),
    ("1", None, 1000),
    ("120", None, 120_000),
    (" 120 ", None, 120_000),
    ("0000120", None, 120_000),
    ("86400", None, 86_400_000),
    # beyond 2^31 seconds it is 2^31 seconds (RFC 9111 1.2.2), however many digits
    ("2147483648", None, 2**31 * 1000),
    ("99999999999", None, 2**31 * 1000),
    ("9" * 5000, None, 2**31 * 1000),
    ("0" * 5000 + "7", None, 7000),
    # an HTTP-date, counted from when the response was received
    ("Sun, 22 Nov 2026 04:55:05 GMT", None, 120_000),
    ("Sunday, 22-Nov-26 04:55:05 GMT", None, 120_000),
    ("Sun Nov 22 04:55:05 2026", None, 120_000),
    ("Sun, 22 Nov 2026 04:53:05 GMT", None, 0),
    # ... a date in the past asks for no wait
    ("Sun, 06 Nov 1994 08:49:37 GMT", None, 0),
    # ... or from the response's own Date when that is valid (the server's clock is 10 min slow)
    ("Sun, 22 Nov 2026 04:45:05 GMT", "Sun, 22 Nov 2026 04:43:05 GMT", 120_000),
    ("Sun, 22 Nov 2026 04:45:05 GMT", "Sun Nov 22 04:43:05 2026", 120_000),
    ("Sun, 22 Nov 2026 04:55:05 GMT", "Sun, 22 Nov 2026 04:56:05 GMT", 0),
    # ... and a bad Date is ignored
    ("Sun, 22 Nov 2026 04:55:05 GMT", "yesterday", 120_000),
    ("Sun, 22 Nov 2026 04:55:05 GMT", "", 120_000),
]


@pytest.mark.parametrize(("value", "date", "expected"), RETRY_AFTER)
def test_retry_after(value: str, date: str | None, expected: int) -> None:
    assert retry_after_ms(value, NOW, date) == expected


BAD_RETRY_AFTER = [
    None,
    "",
    " ",
    "-1",
    "+120",
    "1.5",
    "1e3",
    "0x10",
    "1 20",
    "120s",
    "120, 60",
    "١٢٠",  # Arabic-Indic digits: str.isdigit() would accept them
    "²",
    "soon",
    "Sun, 06 Nov 1994 08:49:37 UTC",
    "Fri, 30 Feb 2024 00:00:00 GMT",
    "Sun, 06 Nov 1994 08:49:37 GMT; 120",
]


@pytest.mark.parametrize("value", BAD_RETRY_AFTER)
def test_retry_after_ignores_bad_values(value: str | None) -> None:
    assert retry_after_ms(value, NOW) is None
    assert retry_after_ms(value, NOW, "Sun, 22 Nov 2026 04:53:05 GMT") is None


# -- classification ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("http_status", "reason", "signal"),
    [
        (200, "", Signal.SUCCESS),
        (204, "", Signal.SUCCESS),
        (301, "http:301", Signal.SUCCESS),
        (304, "http:304", Signal.SUCCESS),
        (404, "http:404", Signal.SUCCESS),
        (403, "http:403", Signal.SUCCESS),
        (200, "content-type:filtered", Signal.SUCCESS),
        (429, "http:429", Signal.FAILURE),
        (500, "http:500", Signal.FAILURE),
        (502, "http:502", Signal.FAILURE),
        (503, "http:503", Signal.FAILURE),
        (504, "http:504", Signal.FAILURE),
        (599, "http:599", Signal.FAILURE),
        (0, "timeout:connect", Signal.FAILURE),
        (0, "timeout:read", Signal.FAILURE),
        (0, "timeout:total", Signal.FAILURE),
        (0, "connect:refused", Signal.FAILURE),
        (0, "connect:reset", Signal.FAILURE),
        (0, "connect:disconnected", Signal.FAILURE),
        (0, "connect:proxy-unreachable", Signal.FAILURE),
        (0, "dns:unresolved", Signal.FAILURE),
        (200, "timeout:read", Signal.FAILURE),  # the body never came
        # our own refusals and errors, malformed responses: nothing about the host's health
        (0, "bad-response:payload", Signal.NEUTRAL),
        (0, "bad-response:header-too-large", Signal.NEUTRAL),
        (0, "ssrf:private-address", Signal.NEUTRAL),
        (0, "url:invalid", Signal.NEUTRAL),
        (0, "fetch:internal:RuntimeError", Signal.NEUTRAL),
        (0, "", Signal.NEUTRAL),
    ],
)
def test_classify(http_status: int, reason: str, signal: Signal) -> None:
    assert classify(http_status, reason) is signal


# -- exponential back-off ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "cap", "failures", "delay"),
    [
        (5.0, 600.0, 0, 0),
        (5.0, 600.0, -1, 0),
        (5.0, 600.0, 1, 5_000),
        (5.0, 600.0, 2, 10_000),
        (5.0, 600.0, 3, 20_000),
        (5.0, 600.0, 4, 40_000),
        (5.0, 600.0, 7, 320_000),
        (5.0, 600.0, 8, 600_000),  # 640 s, capped
        (5.0, 600.0, 9, 600_000),
        (5.0, 600.0, 1000, 600_000),
        (5.0, 600.0, MAX_FAILURES, 600_000),
        (0.25, 1.0, 1, 250),
        (0.25, 1.0, 3, 1000),
        (0.25, 1.0, 4, 1000),
        (0.0015, 10.0, 1, 2),  # rounded up, never short
        (0.0, 600.0, 5, 0),  # no exponential back-off
        (7.0, 7.0, 3, 7_000),
    ],
)
def test_backoff_delay(base: float, cap: float, failures: int, delay: int) -> None:
    config = _config(backoff_base_seconds=base, backoff_max_seconds=cap)

    assert backoff_delay_ms(failures, config) == delay


def test_backoff_delay_doubles_until_the_cap() -> None:
    config = _config(backoff_base_seconds=1.5, backoff_max_seconds=3600.0)
    delays = [backoff_delay_ms(n, config) for n in range(1, 40)]

    assert all(later >= earlier for earlier, later in zip(delays, delays[1:], strict=False))
    for earlier, later in zip(delays, delays[1:], strict=False):
        assert later == min(2 * earlier, 3_600_000)
    assert delays[-1] == 3_600_000


BACKOFF = _config(
    backoff_base_seconds=5.0,
    backoff_max_seconds=600.0,
    retry_after_max_seconds=3600.0,
    suspend_after_failures=4,
    suspend_seconds=1800.0,
    max_fetch_attempts=3,
)
DATE_NOW = "Sun, 22 Nov 2026 04:53:05 GMT"


# (status, reason, Retry-After, failures before) -> (failures, wait ms or None, retryable,
#  suspended, Retry-After kept)
BACK_OFF = [
    # a success resets the count and holds nothing back
    (200, "", None, 0, 0, None, False, False, None),
    (200, "", None, 3, 0, None, False, False, None),
    (404, "http:404", None, 9, 0, None, False, False, None),
    (200, "", "120", 2, 0, None, False, False, None),  # Retry-After on a 200 means nothing
    # neutral outcomes keep the count and hold nothing back
    (0, "bad-response:payload", None, 2, 2, None, False, False, None),
    (0, "fetch:internal:KeyError", None, 0, 0, None, False, False, None),
    # 5xx: exponential back-off, not retryable
    (500, "http:500", None, 0, 1, 5_000, False, False, None),
    (500, "http:500", None, 1, 2, 10_000, False, False, None),
    (502, "http:502", None, 2, 3, 20_000, False, False, None),
    (500, "http:500", "120", 0, 1, 5_000, False, False, None),  # Retry-After only on 429/503
    # 503 without (or with a bad) Retry-After: backed off, but the URL is not retried
    (503, "http:503", None, 0, 1, 5_000, False, False, None),
    (503, "http:503", "soon", 0, 1, 5_000, False, False, None),
    # 503 with Retry-After: at least that long, retryable
    (503, "http:503", "120", 0, 1, 120_000, True, False, 120_000),
    (503, "http:503", "2", 0, 1, 5_000, True, False, 2_000),  # the back-off is longer
    (503, "http:503", "0", 2, 3, 20_000, True, False, 0),
    (503, "http:503", "Sun, 22 Nov 2026 05:03:05 GMT", 0, 1, 600_000, True, False, 600_000),
    (503, "http:503", "Sun, 06 Nov 1994 08:49:37 GMT", 0, 1, 5_000, True, False, 0),
    # ... capped at retry_after_max_seconds
    (503, "http:503", "86400", 0, 1, 3_600_000, True, False, 3_600_000),
    (429, "http:429", "99999999999", 0, 1, 3_600_000, True, False, 3_600_000),
    # 429: retryable with or without Retry-After
    (429, "http:429", None, 0, 1, 5_000, True, False, None),
    (429, "http:429", "junk", 1, 2, 10_000, True, False, None),
    (429, "http:429", "30", 0, 1, 30_000, True, False, 30_000),
    # no connection: exponential back-off, retryable
    (0, "timeout:read", None, 0, 1, 5_000, True, False, None),
    (0, "connect:refused", None, 2, 3, 20_000, True, False, None),
    (0, "dns:unresolved", None, 0, 1, 5_000, True, False, None),
    # the 4th failure in a row suspends; every later failure too (a failed probe)
    (500, "http:500", None, 3, 4, 1_800_000, False, True, None),
    (0, "timeout:connect", None, 3, 4, 1_800_000, True, True, None),
    (0, "timeout:connect", None, 4, 5, 1_800_000, True, True, None),
    (0, "timeout:connect", None, 40, 41, 1_800_000, True, True, None),
    # ... unless the server asked for longer
    (429, "http:429", "3000", 3, 4, 3_000_000, True, True, 3_000_000),
    (429, "http:429", "60", 3, 4, 1_800_000, True, True, 60_000),
    # the count saturates
    (500, "http:500", None, MAX_FAILURES, MAX_FAILURES, 1_800_000, False, True, None),
]


@pytest.mark.parametrize(
    ("status", "reason", "retry_after", "before", "failures", "wait", "retryable", "suspended",
     "kept"),
    BACK_OFF,
)
def test_back_off(
    status: int, reason: str, retry_after: str | None, before: int, failures: int,
    wait: int | None, retryable: bool, suspended: bool, kept: int | None,
) -> None:
    received = NOW + 250

    result = back_off(status, reason, retry_after, DATE_NOW, before, received, BACKOFF)

    assert result == BackOff(
        failures,
        0 if wait is None else received + wait,
        retryable,
        suspended,
        kept,
    )


@pytest.mark.parametrize(("before", "failures", "wait"), [(0, 1, 5_000), (1, 2, 10_000)])
def test_an_answer_the_caller_judges_failed_is_backed_off_as_a_failure(
    before: int, failures: int, wait: int
) -> None:
    # a robots.txt that answered 200 but cannot be parsed
    received = NOW + 250

    result = back_off(200, "", None, DATE_NOW, before, received, BACKOFF, failed=True)

    assert result == BackOff(failures, received + wait, False, False, None)


def test_back_off_without_date_counts_a_retry_after_date_from_the_response_end() -> None:
    result = back_off(
        429, "http:429", "Sun, 22 Nov 2026 04:55:05 GMT", None, 0, NOW + 1000, BACKOFF
    )

    assert result.not_before_ms == NOW + 120_000
    assert result.retry_after_ms == 119_000


def test_suspension_off_never_suspends() -> None:
    config = dataclasses.replace(BACKOFF, suspend_after_failures=0)
    failures = 0
    for _ in range(100):
        result = back_off(0, "connect:refused", None, None, failures, NOW, config)
        failures = result.failures

        assert not result.suspended
        assert result.not_before_ms <= NOW + 600_000
    assert failures == 100


def test_a_host_failing_for_ever_goes_through_back_off_then_suspension_then_probes() -> None:
    """The clock moves to each allowed start; the waits grow, cap, then stay at suspension."""
    now, failures, waits = NOW, 0, []
    for _ in range(8):
        result = back_off(0, "timeout:connect", None, None, failures, now, BACKOFF)
        waits.append((result.not_before_ms - now, result.suspended))
        now, failures = result.not_before_ms, result.failures

    assert waits == [
        (5_000, False), (10_000, False), (20_000, False),
        (1_800_000, True), (1_800_000, True), (1_800_000, True), (1_800_000, True),
        (1_800_000, True),
    ]
    recovered = back_off(200, "", None, None, failures, now, BACKOFF)
    assert recovered == BackOff(0)
    again = back_off(500, "http:500", None, None, recovered.failures, now, BACKOFF)
    assert again.not_before_ms - now == 5_000  # starts over from the base


@pytest.mark.parametrize(
    ("max_attempts", "attempts", "retry"),
    [
        (3, 1, True),
        (3, 2, True),
        (3, 3, False),
        (3, 4, False),
        (1, 1, False),
        (2, 1, True),
        (2, 2, False),
    ],
)
def test_may_retry(max_attempts: int, attempts: int, retry: bool) -> None:
    assert may_retry(attempts, _config(max_fetch_attempts=max_attempts)) is retry


# -- configuration ----------------------------------------------------------------------------


def test_backoff_defaults() -> None:
    config = PolitenessSection()

    assert config.retry_after_max_seconds == 3600.0
    assert config.backoff_base_seconds == 5.0
    assert config.backoff_max_seconds == 600.0
    assert config.suspend_after_failures == 10
    assert config.suspend_seconds == 1800.0
    assert config.max_fetch_attempts == 3


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"politeness.retry_after_max_seconds": "-1"}, r"^politeness\.retry_after_max_seconds"),
        ({"politeness.backoff_base_seconds": "nan"}, r"^politeness\.backoff_base_seconds"),
        ({"politeness.backoff_max_seconds": "1", "politeness.backoff_base_seconds": "2"},
         r"^politeness\.backoff_max_seconds: must be a number >= backoff_base_seconds"),
        ({"politeness.suspend_after_failures": "-1"}, r"^politeness\.suspend_after_failures"),
        ({"politeness.suspend_seconds": "inf"}, r"^politeness\.suspend_seconds"),
        ({"politeness.max_fetch_attempts": "0"}, r"^politeness\.max_fetch_attempts"),
        ({"politeness.max_fetch_attempts": "101"}, r"^politeness\.max_fetch_attempts"),
        ({"politeness.group_by": "subnet"}, r"^politeness\.group_by: must be host, domain or ip"),
        ({"politeness.domain_quota_pages": "-1"}, r"^politeness\.domain_quota_pages"),
        ({"politeness.domain_quota_seconds": "0"}, r"^politeness\.domain_quota_seconds"),
        ({"politeness.domain_quota_pages": "5", "politeness.group_by": "ip"},
         r"^politeness\.domain_quota_pages: needs group_by host or domain"),
    ],
)
def test_backoff_settings_are_validated(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)


def test_backoff_settings_override() -> None:
    config = load_config(None, {
        "politeness.backoff_base_seconds": "0", "politeness.suspend_after_failures": "0",
        "politeness.max_fetch_attempts": "1",
    }).politeness

    assert (config.backoff_base_seconds, config.suspend_after_failures,
            config.max_fetch_attempts) == (0.0, 0, 1)


@pytest.mark.parametrize(
    ("overrides", "routing"),
    [
        ({}, "host"),
        ({"politeness.group_by": "domain"}, "domain"),
        ({"politeness.group_by": "ip"}, "ip"),
        ({"politeness.domain_quota_pages": "100"}, "domain"),  # the quota needs the domain
        ({"politeness.domain_quota_pages": "100", "politeness.group_by": "domain"}, "domain"),
    ],
)
def test_the_fetch_routing_keeps_together_what_must_be(
    overrides: dict[str, str], routing: str
) -> None:
    assert load_config(None, overrides).politeness.fetch_routing == routing


@pytest.mark.parametrize(
    ("http_status", "reason", "failures_before", "waits_ms"),
    [
        (500, "http:500", 0, 0),  # one broken page: no back-off (by default)
        (500, "http:500", 1, 5000),  # the second in a row: the base
        (502, "http:502", 2, 10000),
        (0, "timeout:read", 0, 0),
        (0, "connect:refused", 1, 5000),
        (429, "http:429", 0, 5000),  # an overloaded server: at once
        (503, "http:503", 0, 5000),
        (503, "http:503", 1, 10000),
    ],
)
def test_by_default_back_off_starts_at_the_second_failure_but_at_once_for_429_and_503(
    http_status: int, reason: str, failures_before: int, waits_ms: int
) -> None:
    config = PolitenessSection()
    assert config.backoff_after_failures == 2
    result = back_off(http_status, reason, None, None, failures_before, T0, config)
    assert result.failures == failures_before + 1
    assert result.not_before_ms == T0 + waits_ms


# -- politeness groups -----------------------------------------------------------------------


def test_hosts_of_a_group_take_turns() -> None:
    groups = PolitenessGroups(PolitenessSection(delay_seconds=1.0))
    # A group first seen waits one delay (a request from before a restore may be under way).
    assert groups.hold_until_ms("example.org", "www.example.org", 10_000) == 11_000
    assert groups.hold_until_ms("example.org", "shop.example.org", 11_000) == 0
    groups.started("example.org", "shop.example.org")
    # Its sibling waits while it is in flight; it itself is not held by its own request.
    assert groups.hold_until_ms("example.org", "www.example.org", 11_100) == 12_100
    assert groups.hold_until_ms("example.org", "shop.example.org", 11_100) == 0
    groups.finished("example.org", "shop.example.org", next_allowed_ms=13_500)
    assert groups.hold_until_ms("example.org", "www.example.org", 12_000) == 13_500
    assert groups.hold_until_ms("example.org", "www.example.org", 13_500) == 0
    # Another group has its own clock.
    assert groups.hold_until_ms("192.0.2.7", "example.com", 12_000) == 13_000
    groups.started("192.0.2.7", "example.com")
    assert groups.hold_until_ms("192.0.2.8", "example.net", 12_000) == 13_000  # not busy
    assert groups.hold_until_ms("192.0.2.7", "example.net", 12_500) == 13_500  # busy
    assert len(groups) == 3


def test_a_later_clock_is_never_moved_back() -> None:
    groups = PolitenessGroups(PolitenessSection(delay_seconds=0.0))
    groups.finished("example.org", "a.example.org", next_allowed_ms=5_000)
    groups.finished("example.org", "b.example.org", next_allowed_ms=3_000)
    assert groups.hold_until_ms("example.org", "c.example.org", 4_000) == 5_000


def test_a_finish_clears_only_its_own_host_in_flight() -> None:
    groups = PolitenessGroups(PolitenessSection(delay_seconds=0.5))
    groups.started("example.org", "a.example.org")
    groups.finished("example.org", "b.example.org", next_allowed_ms=1_000)
    assert groups.hold_until_ms("example.org", "c.example.org", 2_000) == 2_500


def test_run_out_groups_are_forgotten_past_the_limit() -> None:
    groups = PolitenessGroups(PolitenessSection(delay_seconds=0.0), max_groups=3)
    for n in range(3):
        groups.finished(f"h{n}.test", f"h{n}.test", next_allowed_ms=1_000)
    groups.started("h0.test", "h0.test")
    groups.hold_until_ms("new.test", "new.test", 2_000)
    assert len(groups) == 2  # h0 (in flight) and the new one


# -- domain quota ---------------------------------------------------------------------------


def test_a_domain_quota_holds_over_every_window() -> None:
    quota = DomainQuota(pages=3, seconds=10.0)
    assert quota.hold_until_ms("example.org", 0) == 0
    for at in (0, 1_000, 2_000):
        assert quota.hold_until_ms("example.org", at) == 0
        quota.started("example.org", at)
    # The fourth waits until the first leaves the window, the fifth until the second does.
    assert quota.hold_until_ms("example.org", 2_500) == 10_000
    assert quota.hold_until_ms("example.com", 2_500) == 0  # another domain
    assert quota.hold_until_ms("example.org", 10_000) == 0
    quota.started("example.org", 10_000)
    assert quota.hold_until_ms("example.org", 10_500) == 11_000


def test_the_quota_holds_for_any_start_pattern() -> None:
    import random

    rng = random.Random(5)
    quota = DomainQuota(pages=5, seconds=2.0)
    now, starts = 0, []
    while len(starts) < 200:
        now += rng.choice((1, 10, 100, 700))
        hold = quota.hold_until_ms("d.test", now)
        if hold:
            assert hold > now
            now = hold if rng.random() < 0.5 else now
            continue
        quota.started("d.test", now)
        starts.append(now)
    for first, sixth in zip(starts, starts[5:], strict=False):
        assert sixth - first >= 2_000  # never six starts within two seconds


def test_domains_out_of_their_window_are_forgotten() -> None:
    quota = DomainQuota(pages=2, seconds=1.0)
    for n in range(3000):
        quota.started(f"d{n}.test", n)
    assert len(quota) < 2100  # swept as new domains came
    assert quota.hold_until_ms("d2999.test", 5_000) == 0
