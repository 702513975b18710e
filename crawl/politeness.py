"""Politeness: when the next request to a host may start (invariant 3 of the design).

A host has at most one request in flight (the fetch stage keeps one lease per host), and the
next request starts ``max(configured delay, robots Crawl-delay, K x last response time)`` after
the previous response *ended*, as Heritrix and Nutch count it. Counting from the end rather
than from the start of the previous request keeps the server's own view right too: the server
received the previous request before we had its whole response, so the starts it sees are at
least that far apart whatever delays its clock readings suffer. Times are milliseconds, passed
in: no clock is read here.
"""

from __future__ import annotations

from crawl.config import PolitenessSection

__all__ = ["next_allowed_start_ms", "poll_delay_ms"]


def next_allowed_start_ms(
    finished_ms: int,
    duration_ms: int,
    crawl_delay_seconds: float,
    config: PolitenessSection,
) -> int:
    """Earliest start of the next request to a host whose last request ended at
    ``finished_ms`` after ``duration_ms`` (Mercator's rule with a floor)."""
    spacing = max(
        config.delay_seconds * 1000.0,
        crawl_delay_seconds * 1000.0,
        config.response_time_factor * duration_ms,
    )
    # Round up: spacing must never come out a millisecond short.
    return finished_ms + int(-(-spacing // 1))


def poll_delay_ms(elapsed_ms: int, expected_ms: int) -> int:
    """How long to wait before looking again at a fetch still in flight.

    The first look is when the fetch is expected to be done (the host's last response time);
    after that the wait grows with the time already spent (a quarter of it) but never beyond
    100 ms, so a finished fetch is noticed within about a quarter of its duration (at most
    100 ms later) and a slow host costs a few wake-ups per second.
    """
    if elapsed_ms < expected_ms:
        return max(5, expected_ms - elapsed_ms)
    return min(100, max(5, elapsed_ms // 4))
