"""Politeness arithmetic: when the next request to a host may start, and how often to poll."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from crawl.config import PolitenessSection
from crawl.politeness import next_allowed_start_ms, poll_delay_ms

T0 = 1_700_000_000_000


def _config(delay: float = 1.0, factor: float = 2.0) -> PolitenessSection:
    return PolitenessSection(
        delay_seconds=delay, max_crawl_delay_seconds=30.0, response_time_factor=factor
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
