"""Politeness: when the next request to a host may start (invariant 3, ARCHITECTURE.md).

A host has at most one request in flight (the fetch stage keeps one lease per host), and the
next request starts ``max(configured delay, robots Crawl-delay, K x last response time)`` after
the previous response *ended*, as Heritrix and Nutch count it. Counting from the end rather
than from the start of the previous request keeps the server's own view right too: the server
received the previous request before we had its whole response, so the starts it sees are at
least that far apart whatever delays its clock readings suffer.

On top of that spacing, a host that is in trouble is backed off (:func:`back_off`):

- a **failure** is a 429 or 5xx response, or no usable connection (``timeout:*``,
  ``connect:*``, ``dns:*``); any other response is a **success** and resets the count; our own
  refusals and malformed responses (``http_status`` 0, other reasons) say nothing either way;
- after the n-th consecutive failure, from the ``backoff_after_failures``-th on (a 429 or 503:
  from the first, the server says it is overloaded; a single broken page is not a host in
  trouble), the host waits ``backoff_base_seconds x 2^(n - backoff_after_failures)``, at most
  ``backoff_max_seconds``;
- a 429 or 503 with a valid ``Retry-After`` (delta-seconds or an HTTP-date, RFC 9110 10.2.3;
  :func:`retry_after_ms`) makes the host wait at least that long, at most
  ``retry_after_max_seconds``;
- from the ``suspend_after_failures``-th consecutive failure on, the host is suspended: it waits
  ``suspend_seconds``, then one request probes it (a success resets the count, a failure
  suspends it again). Its queue is kept meanwhile;
- the URL of a failure that may pass (429, 503 with Retry-After, no connection) is retryable:
  it is fetched again, up to ``max_fetch_attempts`` attempts in all (:func:`may_retry`).

Every back-off counts from the end of the response, like the spacing, and only ever delays the
next request: it never shortens the politeness spacing. Times are milliseconds, passed in: no
clock is read here.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import re

from crawl.config import PolitenessSection
from crawl.http.dates import parse_http_date

__all__ = [
    "BackOff",
    "DomainQuota",
    "PolitenessGroups",
    "Signal",
    "back_off",
    "backoff_delay_ms",
    "classify",
    "may_retry",
    "next_allowed_start_ms",
    "poll_delay_ms",
    "retry_after_ms",
]

#: Reason prefixes of fetches that got no usable connection (crawl/http/client.py's vocabulary).
CONNECTION_FAILURES = ("timeout:", "connect:", "dns:")
#: The consecutive-failure count saturates here (it is kept in a 32-bit state field).
MAX_FAILURES = 1_000_000
#: delta-seconds beyond this are this (RFC 9111 1.2.2's overflow rule); capped later anyway.
_MAX_DELTA_SECONDS = 2**31


def _ceil_ms(value: float) -> int:
    # Round up: a wait must never come out a millisecond short.
    return int(-(-value // 1))


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
    return finished_ms + _ceil_ms(spacing)


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


# -- Retry-After ------------------------------------------------------------------------------

_DELTA_SECONDS = re.compile(r"[0-9]+")


def retry_after_ms(value: str | None, received_ms: int, date: str | None = None) -> int | None:
    """How long a ``Retry-After`` header asks to wait, in ms, or None if it is absent or bad.

    ``value`` is delta-seconds (ASCII digits only: no sign, no fraction) or an HTTP-date, read
    strictly (:func:`crawl.http.dates.parse_http_date`): the wait hangs on it. A date is
    counted from the response's own ``Date`` header when that is a valid HTTP-date (so a
    server whose clock is off still gets the wait it meant), else from ``received_ms``; a date
    in the past means no wait (0). Not capped here: see :func:`back_off`.
    """
    if value is None:
        return None
    text = value.strip()
    if _DELTA_SECONDS.fullmatch(text):
        digits = text.lstrip("0") or "0"
        if len(digits) > 10:
            return _MAX_DELTA_SECONDS * 1000
        return min(int(digits), _MAX_DELTA_SECONDS) * 1000
    moment = parse_http_date(text, received_ms)
    if moment is None:
        return None
    reference = received_ms
    if date is not None:
        server_now = parse_http_date(date, received_ms)
        if server_now is not None:
            reference = server_now
    return max(0, moment - reference)


# -- host back-off ----------------------------------------------------------------------------


class Signal(enum.Enum):
    """What one fetch outcome says about its host's health."""

    #: The host answered (any status but 429 and 5xx): the failure count is reset.
    SUCCESS = "success"
    #: 429, 5xx, or no usable connection: the host is backed off.
    FAILURE = "failure"
    #: Nothing about the host (our own refusal or error, a malformed response).
    NEUTRAL = "neutral"


def classify(http_status: int, reason: str) -> Signal:
    """The :class:`Signal` of a fetch that ended with ``http_status`` (0: no response) and
    ``reason`` (the fetcher's machine-readable reason)."""
    if http_status == 429 or http_status >= 500:
        return Signal.FAILURE
    if reason.startswith(CONNECTION_FAILURES):
        return Signal.FAILURE
    if http_status > 0:
        return Signal.SUCCESS
    return Signal.NEUTRAL


def backoff_delay_ms(failures: int, config: PolitenessSection, *, overloaded: bool = False) -> int:
    """The exponential back-off after ``failures`` consecutive failures: base x 2^(n-g), g
    being ``backoff_after_failures`` (1 when ``overloaded``: a 429 or 503), at most
    ``backoff_max_seconds``; 0 below g."""
    grace = 1 if overloaded else config.backoff_after_failures
    if failures < grace or failures <= 0 or config.backoff_base_seconds <= 0:
        return 0
    seconds = config.backoff_base_seconds * 2.0 ** min(failures - grace, 64)
    return _ceil_ms(min(seconds, config.backoff_max_seconds) * 1000.0)


@dataclasses.dataclass(frozen=True, slots=True)
class BackOff:
    """What a fetch outcome does to its host: the new failure count, the earliest start of
    its next request, and whether the fetched URL may be tried again."""

    #: Consecutive failures of the host, this outcome included (0 after a success).
    failures: int
    #: The host's next request starts no earlier than this (0: no back-off).
    not_before_ms: int = 0
    #: The outcome is one that may pass: 429, 503 with Retry-After, no connection.
    retryable: bool = False
    #: The host is suspended (``failures`` reached ``suspend_after_failures``).
    suspended: bool = False
    #: The valid Retry-After of a 429 or 503, capped (None: none).
    retry_after_ms: int | None = None


def back_off(
    http_status: int,
    reason: str,
    retry_after: str | None,
    date: str | None,
    failures: int,
    received_ms: int,
    config: PolitenessSection,
    *,
    failed: bool = False,
) -> BackOff:
    """The back-off after a fetch of a host with ``failures`` consecutive failures so far.

    ``retry_after`` and ``date`` are the response's ``Retry-After`` and ``Date`` headers
    (None when absent); ``received_ms`` is when the response ended. ``failed`` counts the
    outcome a failure whatever its status (a robots.txt that answered but cannot be parsed).
    See the module docstring for the rules.
    """
    signal = Signal.FAILURE if failed else classify(http_status, reason)
    if signal is Signal.SUCCESS:
        return BackOff(0)
    if signal is Signal.NEUTRAL:
        return BackOff(failures)
    failures = min(failures + 1, MAX_FAILURES)
    waited: int | None = None
    if http_status in (429, 503):
        waited = retry_after_ms(retry_after, received_ms, date)
        if waited is not None:
            waited = min(waited, _ceil_ms(config.retry_after_max_seconds * 1000.0))
    suspended = 0 < config.suspend_after_failures <= failures
    if suspended:
        delay = _ceil_ms(config.suspend_seconds * 1000.0)
    else:
        delay = backoff_delay_ms(failures, config, overloaded=http_status in (429, 503))
    if waited is not None:
        delay = max(delay, waited)
    retryable = (
        http_status == 429
        or (http_status == 503 and waited is not None)
        or reason.startswith(CONNECTION_FAILURES)
    )
    return BackOff(failures, received_ms + delay, retryable, suspended, waited)


def may_retry(attempts: int, config: PolitenessSection) -> bool:
    """Whether a URL whose fetch failed ``attempts`` times (the last one retryable) is fetched
    again: ``max_fetch_attempts`` counts attempts in all, the first one included."""
    return attempts < config.max_fetch_attempts


#: While another host of its group has a request in flight, a host looks again this soon at
#: the earliest.
GROUP_BUSY_RETRY_MS = 100


@dataclasses.dataclass(slots=True)
class _Group:
    next_allowed_ms: int
    in_flight: str = ""


class PolitenessGroups:
    """One politeness clock for all the hosts of a group (``politeness.group_by: domain`` or
    ``ip``), kept by the fetch subtask that fetches the group (the fetch stage's keys put every
    host of a group in one subtask: :mod:`crawl.urls.routing`).

    The hosts keep their own clocks too; on top of them a host may start a request only when
    no other host of its group has one in flight and the group's spacing since the last
    response of any of them has passed (:meth:`hold_until_ms`). The clocks live in memory: a
    group first seen (after a restore, too) waits one ``delay_seconds`` before its first
    request, since a request from before the restore may have been under way. Groups whose
    clock has run out are forgotten once more than ``max_groups`` are held.
    """

    def __init__(self, config: PolitenessSection, max_groups: int = 100_000) -> None:
        self._delay_ms = _ceil_ms(config.delay_seconds * 1000.0)
        self._groups: dict[str, _Group] = {}
        self._max_groups = max_groups

    def hold_until_ms(self, group_name: str, host: str, now_ms: int) -> int:
        """The earliest time ``host`` may start a request as far as its group is concerned
        (0: now)."""
        group = self._groups.get(group_name)
        if group is None:
            self._forget_old(now_ms)
            group = self._groups[group_name] = _Group(now_ms + self._delay_ms)
        if group.in_flight and group.in_flight != host:
            # Its end will set the group's clock at least one delay later: no use looking
            # sooner.
            return max(group.next_allowed_ms, now_ms + max(self._delay_ms, GROUP_BUSY_RETRY_MS))
        return group.next_allowed_ms if group.next_allowed_ms > now_ms else 0

    def started(self, group_name: str, host: str) -> None:
        """``host`` started a request."""
        group = self._groups.setdefault(group_name, _Group(0))
        group.in_flight = host

    def finished(self, group_name: str, host: str, next_allowed_ms: int) -> None:
        """``host``'s request ended; its group waits until ``next_allowed_ms`` (the host's own
        next start, computed from this response)."""
        group = self._groups.setdefault(group_name, _Group(0))
        if group.in_flight == host:
            group.in_flight = ""
        group.next_allowed_ms = max(group.next_allowed_ms, next_allowed_ms)

    def __len__(self) -> int:
        return len(self._groups)

    def _forget_old(self, now_ms: int) -> None:
        if len(self._groups) < self._max_groups:
            return
        for name in [n for n, g in self._groups.items()
                     if not g.in_flight and g.next_allowed_ms <= now_ms]:
            del self._groups[name]


class DomainQuota:
    """At most ``pages`` page requests start per registered domain in any ``seconds``
    (``politeness.domain_quota_pages`` and ``domain_quota_seconds``): a sliding window, so
    that the quota holds over every interval of that length, as a server's log would show it.

    Kept by the fetch subtask that fetches the domain (the fetch keys keep a domain's hosts in
    one subtask: :mod:`crawl.urls.routing`), in memory: the start times within the window, at most
    ``pages`` per domain, forgotten as they leave it; after a restore a domain's count starts
    again from zero. robots.txt requests are not counted (they are not pages), but a domain
    whose quota is used up makes all its hosts wait.
    """

    def __init__(self, pages: int, seconds: float) -> None:
        self._pages = pages
        self._window_ms = _ceil_ms(seconds * 1000.0)
        self._starts: dict[str, collections.deque[int]] = {}
        self._sweep_at = 1024

    def hold_until_ms(self, domain: str, now_ms: int) -> int:
        """The earliest time a page of ``domain`` may start (0: now)."""
        starts = self._starts.get(domain)
        if starts is None:
            return 0
        self._expire(starts, now_ms)
        if len(starts) < self._pages:
            if not starts:
                del self._starts[domain]
            return 0
        return starts[0] + self._window_ms

    def started(self, domain: str, now_ms: int) -> None:
        """A page request of ``domain`` started at ``now_ms``."""
        starts = self._starts.get(domain)
        if starts is None:
            if len(self._starts) >= self._sweep_at:
                self._sweep(now_ms)
            starts = self._starts[domain] = collections.deque(maxlen=self._pages)
        starts.append(now_ms)

    def __len__(self) -> int:
        return len(self._starts)

    def _expire(self, starts: collections.deque[int], now_ms: int) -> None:
        while starts and starts[0] + self._window_ms <= now_ms:
            starts.popleft()

    def _sweep(self, now_ms: int) -> None:
        for domain in list(self._starts):
            starts = self._starts[domain]
            self._expire(starts, now_ms)
            if not starts:
                del self._starts[domain]
        self._sweep_at = max(1024, 2 * len(self._starts))
