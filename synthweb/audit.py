"""Checks a server request log against the ground truth: what the integration tests assert.

:func:`audit_log` judges a crawl only by what the server saw, never by the crawler's account of
itself. It returns one readable line per violation, so a test can ``assert audit_log(...) == []``
and see every problem at once.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from synthweb.requestlog import RequestRecord
from synthweb.truth import ExpectedCrawl

__all__ = ["audit_log"]


def audit_log(
    records: Iterable[RequestRecord],
    expected: ExpectedCrawl,
    *,
    min_delay: float = 0.0,
    response_time_factor: float = 0.0,
    tolerance: float = 0.02,
    complete: bool = True,
    check_user_agent: bool = True,
) -> list[str]:
    """Every way the logged requests differ from a correct, polite crawl; empty if none.

    Checked per host: robots.txt is the first request; requests never overlap; consecutive
    request starts are at least max(``min_delay``, the host's Crawl-delay for the token,
    ``response_time_factor`` x the previous response's duration) apart, less ``tolerance``
    seconds. Checked per URL: nothing in ``expected.never`` and nothing outside the ground truth
    is requested; nothing is requested twice; each answer has the expected status. With
    ``complete``, every expected URL and robots.txt must have been requested. With
    ``check_user_agent``, every User-Agent must contain the expected product token.
    """
    problems: list[str] = []
    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    counts: Counter[str] = Counter()
    token = expected.agent_token.lower()
    for record in records:
        by_host[record.host].append(record)
        url = record.url
        counts[url] += 1
        if check_user_agent and token not in record.ua.lower():
            problems.append(f"{url}: User-Agent {record.ua!r} lacks the token {token!r}")
        if record.path == "/robots.txt":
            if record.host not in expected.robots:
                problems.append(f"{url}: robots.txt of a host the crawl never needed")
            continue
        if url in expected.never:
            problems.append(f"{url}: requested but disallowed (robots.txt or 5xx robots.txt)")
        elif url not in expected.fetch:
            problems.append(f"{url}: requested but not reachable in the ground truth")
        elif record.status != expected.fetch[url]:
            problems.append(
                f"{url}: answered {record.status}, ground truth says {expected.fetch[url]}"
            )

    for url, count in sorted(counts.items()):
        if count > 1 and not url.endswith("/robots.txt"):
            problems.append(f"{url}: requested {count} times")
    if complete:
        problems += [f"{url}: never requested" for url in sorted(expected.fetch) if not counts[url]]
        problems += [
            f"{expected.robots_url(host)}: robots.txt never requested"
            for host in sorted(expected.robots)
            if not counts[expected.robots_url(host)]
        ]

    for host, host_records in sorted(by_host.items()):
        problems += _audit_host(
            host,
            sorted(host_records, key=lambda r: r.start),
            max(min_delay, expected.crawl_delays.get(host, 0.0)),
            response_time_factor,
            tolerance,
        )
    return problems


def _audit_host(
    host: str,
    records: list[RequestRecord],
    delay: float,
    response_time_factor: float,
    tolerance: float,
) -> list[str]:
    problems = []
    if records and records[0].path != "/robots.txt":
        problems.append(f"{records[0].url}: requested before http://{host}/robots.txt")
    for previous, current in zip(records, records[1:], strict=False):
        if current.start < previous.end - tolerance:
            problems.append(
                f"{current.url}: started {previous.end - current.start:.3f}s before "
                f"{previous.url} finished (overlap on {host})"
            )
            continue
        wanted = max(delay, response_time_factor * previous.duration)
        gap = current.start - previous.start
        if gap < wanted - tolerance:
            problems.append(
                f"{current.url}: started {gap:.3f}s after {previous.url}, "
                f"less than the {wanted:.3f}s delay of {host}"
            )
    return problems
