"""Checks a server request log against the ground truth: what the integration tests assert.

:func:`audit_log` judges a crawl only by what the server saw, never by the crawler's account of
itself. It returns one readable line per violation, so a test can ``assert audit_log(...) == []``
and see every problem at once.

With the URL-policy profile (``expected.policy`` set) :func:`audit_log` judges each request by
the page identity of its URL (:func:`synthweb.urls.page_identity`), so requests for one page in
two spellings count as one page requested twice; trap and farm URLs are neither required nor
refused (nor status-checked), and robots.txt of the trap and farm hosts may be asked.
:func:`audit_policy` makes the policy's own checks: spellings per page, trap and farm requests.

Each host may be asked once for a path nobody links to, ``/<20 hex digits>.html`` (the
crawler's not-found probe, which tells a host's soft 404s), like any request after its
robots.txt and spaced as politeness asks, but not on a host robots.txt closes to the crawler
(every URL of the host it found disallowed).

With the multi-domain profile (``expected.domains`` set) :func:`audit_log` neither requires
nor refuses a URL outside ``expected.fetch`` and ``expected.never`` (junk, and what only junk
leads to), and accepts the robots.txt of every host of the web.

With the hostile profile (``expected.hostile`` set) :func:`audit_log` also accepts what a
correct hardened crawler does there: each Retry-After URL requested twice (first answer 429/503,
then 200), each failing URL once whatever it answered, the robots.txt of every hostile host and
the targets of robots.txt redirects (any number of times); it reports a private-address request
as such. :func:`audit_hostile` makes the profile's own checks: no request to a host before the
Retry-After it was told, none to a private address, none but robots.txt to a host whose
robots.txt never answered.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from synthweb import policy as url_policy
from synthweb.requestlog import RequestRecord
from synthweb.truth import ExpectedCrawl
from synthweb.urls import page_identity, split_url

__all__ = [
    "NOT_FOUND_PROBE",
    "PolicyAudit",
    "audit_hostile",
    "audit_log",
    "audit_policy",
    "is_page_path",
]

#: The path of a crawler's not-found probe.
NOT_FOUND_PROBE = re.compile(r"/[0-9a-f]{20}\.html")


def is_page_path(path: str) -> bool:
    """Whether a request for ``path`` asks for a page: neither robots.txt nor a not-found
    probe, which a crawler asks of each host for its own sake."""
    return path != "/robots.txt" and not NOT_FOUND_PROBE.fullmatch(path)


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

    With the profile (``expected.policy``), URLs are page identities, and trap and farm URLs are
    only checked for repeats (see the module docstring).
    """
    problems: list[str] = []
    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    counts: Counter[str] = Counter()
    spellings: dict[str, dict[str, None]] = defaultdict(dict)
    truth = expected.policy
    rough = expected.hostile
    domains = expected.domains
    retried: dict[str, list[RequestRecord]] = defaultdict(list)
    token = expected.agent_token.lower()
    open_hosts = {split_url(url)[0] for url in expected.fetch}
    closed_hosts = {split_url(url)[0] for url in expected.never} - open_hosts
    for record in records:
        by_host[record.host].append(record)
        url = record.url
        if truth is not None:
            url = truth.identity(url)
            spellings[url][record.url] = None
        counts[url] += 1
        if check_user_agent and token not in record.ua.lower():
            problems.append(f"{url}: User-Agent {record.ua!r} lacks the token {token!r}")
        if rough is not None:
            if record.host in rough.private_hosts:
                problems.append(f"{url}: requested a private address")
                continue
            if url in rough.robots_extra:
                continue
            if url in rough.retry:
                retried[url].append(record)
                continue
            if url in rough.once:
                continue
        if NOT_FOUND_PROBE.fullmatch(record.path):
            if record.host in closed_hosts:
                problems.append(f"{url}: not-found probe of a host robots.txt closes")
            continue
        if record.path == "/robots.txt":
            if (
                record.host not in expected.robots
                and (truth is None or record.host not in truth.robots)
                and (rough is None or record.host not in rough.robots)
                and (domains is None or record.host not in domains.hosts)
            ):
                problems.append(f"{url}: robots.txt of a host the crawl never needed")
            continue
        if domains is not None and url not in expected.fetch and url not in expected.never:
            continue
        if truth is not None and truth.bounded(url):
            if not (truth.trap_entries if truth.is_trap(url) else truth.farm_entries):
                problems.append(f"{url}: requested but not reachable in the ground truth")
            continue
        if url in expected.never:
            problems.append(f"{url}: requested but disallowed (robots.txt or 5xx robots.txt)")
        elif url not in expected.fetch:
            problems.append(f"{url}: requested but not reachable in the ground truth")
        elif record.status != expected.fetch[url]:
            problems.append(
                f"{url}: answered {record.status}, ground truth says {expected.fetch[url]}"
            )

    if rough is not None:
        problems += _audit_retried(retried, rough.retry, complete)
    for url, count in sorted(counts.items()):
        if rough is not None and (url in rough.retry or url in rough.robots_extra):
            continue
        if rough is not None and split_url(url)[0] in rough.private_hosts:
            continue
        if count > 1 and not url.endswith("/robots.txt"):
            spelled = list(spellings.get(url, ()))
            as_written = f" (as {', '.join(spelled)})" if len(spelled) > 1 else ""
            problems.append(f"{url}: requested {count} times{as_written}")
    if complete:
        problems += [f"{url}: never requested" for url in sorted(expected.fetch) if not counts[url]]
        problems += [
            f"{expected.robots_url(host)}: robots.txt never requested"
            for host in sorted(expected.robots)
            if not counts[expected.robots_url(host)]
        ]
        if rough is not None:
            problems += [f"{url}: never requested" for url in sorted(rough.once) if not counts[url]]
            problems += [
                f"{expected.robots_url(host)}: robots.txt never requested"
                for host in sorted(rough.robots)
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


def _audit_retried(
    retried: Mapping[str, list[RequestRecord]],
    wanted: Mapping[str, tuple[int, int]],
    complete: bool,
) -> list[str]:
    problems = []
    for url, (first, then) in sorted(wanted.items()):
        records = sorted(retried.get(url, ()), key=lambda r: r.start)
        if len(records) > 2:
            problems.append(f"{url}: requested {len(records)} times (Retry-After URL: twice)")
        if complete and len(records) < 2:
            problems.append(
                f"{url}: requested {len(records)} times, not retried after its Retry-After"
            )
        for record, status in zip(records, (first, then), strict=False):
            if record.status != status:
                problems.append(f"{url}: answered {record.status}, ground truth says {status}")
    return problems


def audit_hostile(
    records: Iterable[RequestRecord], expected: ExpectedCrawl, *, tolerance: float = 0.02
) -> list[str]:
    """The hostile profile's own checks of a request log; one line per problem, empty if none.

    Early retries: a request to a host that starts before the ``retry_at`` (less
    ``tolerance``) of an earlier answer on that host carrying Retry-After. Private addresses:
    any request to one. Failed robots.txt: any request other than robots.txt to a host whose
    robots.txt never answered. ``expected`` must have been computed with the profile on.
    """
    rough = expected.hostile
    if rough is None:
        raise ValueError("the ground truth has no hostile part (WebConfig.hostile is off)")
    problems = []
    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    for record in records:
        by_host[record.host].append(record)
        if record.host in rough.private_hosts:
            problems.append(f"{record.url}: requested a private address")
        elif record.host in rough.robots_failed and record.path != "/robots.txt":
            problems.append(f"{record.url}: requested, but the host's robots.txt never answered")
    for host, host_records in sorted(by_host.items()):
        host_records.sort(key=lambda r: r.start)
        for i, told in enumerate(host_records):
            if told.retry_at is None:
                continue
            for later in host_records[i + 1 :]:
                if later.start < told.retry_at - tolerance:
                    problems.append(
                        f"{later.url}: requested {told.retry_at - later.start:.3f}s before the "
                        f"Retry-After that {told.url} told (early retry on {host})"
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


@dataclasses.dataclass(frozen=True)
class PolicyAudit:
    """What a request log says about a crawler's URL policy (see :func:`audit_policy`).

    Requests for robots.txt are left out of everything here. The server logs the host in lower
    case without ``:80``, so spellings that differ only there show as repeats, not as spellings.
    """

    #: page identity -> the distinct URLs requested for it, in the order first requested.
    spellings: Mapping[str, tuple[str, ...]]
    #: page identity -> how many requests it got (in any spelling).
    requests: Mapping[str, int]
    #: trap area (``calendar``, ``search``, ``loop``, ``other``) -> requests in it.
    trap_requests: Mapping[str, int]
    #: farm host -> requests to it.
    farm_requests: Mapping[str, int]
    #: All requests but robots.txt.
    page_requests: int

    @property
    def trap_total(self) -> int:
        """Requests to trap URLs."""
        return sum(self.trap_requests.values())

    @property
    def farm_total(self) -> int:
        """Requests to farm URLs."""
        return sum(self.farm_requests.values())

    def respelled(self) -> dict[str, tuple[str, ...]]:
        """Pages requested in more than one spelling: identity -> the spellings."""
        return {url: spelled for url, spelled in self.spellings.items() if len(spelled) > 1}

    def repeated(self) -> dict[str, int]:
        """Pages requested more than once (in one spelling or several): identity -> count."""
        return {url: count for url, count in self.requests.items() if count > 1}

    def noncanonical(self) -> list[str]:
        """URLs requested as written rather than in the form of their identity, in order."""
        return [
            spelled
            for url, spelled_all in self.spellings.items()
            for spelled in spelled_all
            if spelled != url
        ]

    def problems(
        self,
        *,
        max_trap_requests: int | None = None,
        max_farm_requests: int | None = None,
        allow_noncanonical: bool = False,
    ) -> list[str]:
        """One line per breach of the policy: a page requested in several spellings, a URL not
        requested in its canonical form (unless ``allow_noncanonical``), more trap or farm
        requests than the given bounds. Empty if none."""
        problems = [
            f"{url}: requested in {len(spelled)} spellings: {', '.join(spelled)}"
            for url, spelled in sorted(self.respelled().items())
        ]
        if not allow_noncanonical:
            problems += [
                f"{url}: requested in a non-canonical spelling" for url in self.noncanonical()
            ]
        if max_trap_requests is not None and self.trap_total > max_trap_requests:
            problems.append(
                f"{self.trap_total} trap requests, more than {max_trap_requests} "
                f"({dict(sorted(self.trap_requests.items()))})"
            )
        if max_farm_requests is not None and self.farm_total > max_farm_requests:
            problems.append(
                f"{self.farm_total} farm requests of {self.page_requests}, more than "
                f"{max_farm_requests}"
            )
        return problems


def audit_policy(records: Iterable[RequestRecord]) -> PolicyAudit:
    """Sort the logged requests (robots.txt apart) by page identity, trap area and farm host.

    Needs no ground truth: spellings, traps and the farm are told from the URL alone.
    """
    spellings: dict[str, dict[str, None]] = defaultdict(dict)
    requests: Counter[str] = Counter()
    traps: Counter[str] = Counter()
    farm: Counter[str] = Counter()
    total = 0
    for record in records:
        if record.path == "/robots.txt":
            continue
        total += 1
        identity = page_identity(record.url) or record.url
        spellings[identity][record.url] = None
        requests[identity] += 1
        area = url_policy.trap_area(identity)
        if area is not None:
            traps[area] += 1
        elif url_policy.is_farm(identity):
            farm[split_url(identity)[0]] += 1
    return PolicyAudit(
        spellings={url: tuple(spelled) for url, spelled in spellings.items()},
        requests=dict(requests),
        trap_requests=dict(traps),
        farm_requests=dict(farm),
        page_requests=total,
    )
