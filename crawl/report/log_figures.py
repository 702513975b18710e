"""The crawl log turned into the figures of the crawl report: rates over time, outcomes, hosts,
latencies, content, novelty and revisits.

:class:`CrawlLogColumns` streams crawl log lines (:mod:`crawl.archive.crawl_log`) into compact
typed columns, about 60 bytes a line and no Python object per line (a million lines take about
60 MB), and :func:`log_figures` reduces them with numpy to :class:`LogFigures`: per-bin series
(the bin width is chosen so that a crawl of any length has at most ``max_bins`` bins),
counters and histograms, small enough to embed in a page whatever the crawl's size.

What the log can show of the moments a host was held back: each line has the end of its
request and its duration, so for each host the gap between the end of one request and the start
of the next is known. A gap is put in one of three classes:

- ``after a failure``: the previous answer was a failure that makes the crawler wait (no
  response, 429, 5xx): retries and back-off;
- ``politeness``: the gap is within the spacing the crawler keeps (``max(delay, Crawl-delay,
  response_time_factor x last response time)``, with a margin for timer lateness);
- ``idle``: longer than that: the host had nothing due (an empty queue, URLs held back by the
  crawl DB's budgets or by priority, robots.txt unavailable, the crawl winding down).

Summed over hosts, per bin, these say how many hosts were fetching, waiting out politeness,
waiting after failures, or idle at each moment. A host whose politeness group is shared with
other hosts waits for them too: its waits count as idle here.
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from crawl.archive.crawl_log import COLUMNS, parse_line
from crawl.config import PolitenessSection
from crawl.hops import NOT_FOUND_PROBE, PREREQUISITE
from crawl.status import Status

__all__ = [
    "BIN_WIDTHS_SECONDS",
    "CrawlLogColumns",
    "LogFigures",
    "SpacingRules",
    "choose_bin_seconds",
    "log_figures",
    "read_crawl_logs",
]

_STATUSES: tuple[Status, ...] = tuple(Status)
_STATUS_INDEX = {status.value: index for index, status in enumerate(_STATUSES)}
_FETCHED = _STATUS_INDEX[Status.FETCHED.value]
_FETCH_ERROR = _STATUS_INDEX[Status.FETCH_ERROR.value]
_ROBOTS_DENIED = _STATUS_INDEX[Status.ROBOTS_DENIED.value]
#: Outcomes that made no request (nothing fetched).
_NO_REQUEST = (_ROBOTS_DENIED, _STATUS_INDEX[Status.REJECTED.value])
_NO_HOST = "(no host)"
_POLITENESS = PolitenessSection()

#: The bin widths a timeline may use; the narrowest giving at most ``max_bins`` bins is taken.
BIN_WIDTHS_SECONDS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600,
                      43200, 86400)

#: Latency histogram edges (ms): log-spaced, 1 ms to about 2 minutes.
_LATENCY_EDGES = np.unique(np.round(np.logspace(0, math.log10(120_000), 41))).astype(np.int64)
#: Body size histogram edges (bytes): powers of two from 64 B to 64 MiB.
_SIZE_EDGES = np.array([0] + [2 ** k for k in range(6, 27)], dtype=np.int64)


class CrawlLogColumns:
    """Crawl log lines as typed columns: one array per field, text fields interned to ids.

    :meth:`add_line` is the per-line work and costs about 2 µs; a line that does not parse
    (see :func:`crawl.archive.crawl_log.parse_line`) counts in :attr:`bad_lines`. URLs and
    payload digests are kept as 64-bit hashes (this process's ``hash``), enough to tell the
    fetches of one URL or one payload apart.
    """

    def __init__(self) -> None:
        self.end_ms = array("q")
        self.duration_ms = array("q")
        #: Body bytes, -1 without a response.
        self.size = array("q")
        self.code = array("i")
        self.host = array("i")
        self.status = array("b")
        self.reason = array("i")
        self.content_type = array("i")
        #: 1 for a robots.txt fetch (its hop path ends in ``P``).
        self.robots = array("b")
        #: 1 for a host's not-found probe (hop path ``N``): neither a page nor robots.txt.
        self.probe = array("b")
        self.url_hash = array("q")
        #: 0 without a digest.
        self.digest_hash = array("q")
        self.hosts: list[str] = []
        self.reasons: list[str] = [""]
        self.content_types: list[str] = [""]
        self.bad_lines = 0
        self.files: list[str] = []
        self._host_ids: dict[str, int] = {}
        self._reason_ids: dict[str, int] = {"": 0}
        self._type_ids: dict[str, int] = {"": 0}
        self._seconds: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.end_ms)

    def add_file(self, path: str | Path) -> None:
        """Add every line of one crawl log file (a line being written counts as bad)."""
        self.files.append(str(path))
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.strip():
                    self.add_line(line)

    def add_line(self, line: str) -> bool:
        """Add one line; False (and counted in :attr:`bad_lines`) if it does not parse."""
        columns = line.rstrip("\r\n").split(" ")
        if len(columns) != len(COLUMNS):
            self.bad_lines += 1
            return False
        stamp, code, size, url, hops, _via, ctype, duration, digest, status, reason = columns
        try:
            second = self._seconds.get(stamp[:19])
            if second is None or len(stamp) != 24 or stamp[23] != "Z" or stamp[19] != ".":
                second = self._second_of(stamp)
            end_ms = second * 1000 + int(stamp[20:23])
            code_value = int(code)
            size_value = -1 if size == "-" else int(size)
            duration_value = int(duration)
            status_id = _STATUS_INDEX[status]
        except (ValueError, KeyError):
            self.bad_lines += 1
            return False
        parts = url.split("/", 3)
        host = parts[2] if len(parts) > 2 and parts[1] == "" and parts[2] else _NO_HOST
        host_id = self._host_ids.get(host)
        if host_id is None:
            host_id = self._host_ids[host] = len(self.hosts)
            self.hosts.append(host)
        reason_id = self._reason_ids.get(reason)
        if reason_id is None:
            reason_id = self._reason_ids[reason] = len(self.reasons)
            self.reasons.append("" if reason == "-" else reason)
        type_id = self._type_ids.get(ctype)
        if type_id is None:
            type_id = self._type_ids[ctype] = len(self.content_types)
            self.content_types.append("" if ctype == "-" else ctype)
        self.end_ms.append(end_ms)
        self.duration_ms.append(duration_value)
        self.size.append(size_value)
        self.code.append(code_value)
        self.host.append(host_id)
        self.status.append(status_id)
        self.reason.append(reason_id)
        self.content_type.append(type_id)
        self.robots.append(hops.endswith(PREREQUISITE))
        self.probe.append(hops == NOT_FOUND_PROBE)
        self.url_hash.append(hash(url))
        self.digest_hash.append(0 if digest == "-" else hash(digest) or 1)
        return True

    def host_id(self, host: str) -> int | None:
        """The id of ``host`` in :attr:`host`, None if no line named it."""
        return self._host_ids.get(host)

    def _second_of(self, stamp: str) -> int:
        # The full parser checks the form; the second is then remembered for the lines after.
        milliseconds = parse_line(" ".join([stamp, "0", "-", "-", "-", "-", "-", "0", "-",
                                            Status.FETCHED.value, "-"]))["timestamp_ms"]
        second = milliseconds // 1000
        self._seconds[stamp[:19]] = second
        return second


@dataclasses.dataclass(frozen=True)
class SpacingRules:
    """The spacing the crawler keeps between two requests to a host (``politeness`` section),
    by which a gap between requests is judged politeness or idleness."""

    delay_seconds: float = _POLITENESS.delay_seconds
    response_time_factor: float = _POLITENESS.response_time_factor
    #: Crawl-delay by host, seconds (from the hosts' robots.txt, where known).
    crawl_delays: Mapping[str, float] = dataclasses.field(default_factory=dict)
    #: Slack for timer lateness and the loop's rounds.
    margin_seconds: float = 0.25


@dataclasses.dataclass
class LogFigures:
    """What the report draws from the crawl logs. Every field is JSON-serialisable."""

    lines: int = 0
    bad_lines: int = 0
    first_ms: int = 0
    last_ms: int = 0
    bin_seconds: int = 1
    #: Start of each bin (epoch ms).
    bin_starts_ms: list[int] = dataclasses.field(default_factory=list)
    #: Per-bin series by name (see :func:`log_figures` for the names).
    timeline: dict[str, list[float | None]] = dataclasses.field(default_factory=dict)
    #: Page outcomes (robots.txt fetches apart) by status, and by (status, reason).
    by_status: dict[str, int] = dataclasses.field(default_factory=dict)
    by_reason: list[tuple[str, str, int]] = dataclasses.field(default_factory=list)
    #: robots.txt fetches by outcome code (HTTP status or negative).
    robots_by_code: dict[str, int] = dataclasses.field(default_factory=dict)
    pages: int = 0
    bytes: int = 0
    robots_fetches: int = 0
    host_count: int = 0
    #: Rows of the hosts with the most requests and of those with the slowest answers.
    busiest_hosts: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    slowest_hosts: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: Every host (up to a limit, busiest first): requests and median latency, for a scatter.
    host_points: dict[str, list[Any]] = dataclasses.field(default_factory=dict)
    #: Gaps between a host's requests, total seconds by class.
    gap_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    latency_edges_ms: list[int] = dataclasses.field(default_factory=list)
    #: Request latency histogram counts by outcome (FETCHED, errors, robots.txt ...).
    latency_counts: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    latency_percentiles_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    #: Fetched pages by content type: count and bytes.
    content_types: list[tuple[str, int, int]] = dataclasses.field(default_factory=list)
    size_edges: list[int] = dataclasses.field(default_factory=list)
    size_counts: list[int] = dataclasses.field(default_factory=list)
    #: Responses by novelty: new payload, a payload seen before at another URL, a URL fetched
    #: before whose payload changed or not, 304 Not Modified.
    novelty: dict[str, int] = dataclasses.field(default_factory=dict)
    #: URLs fetched more than once, and the median time between two fetches of a URL.
    urls_refetched: int = 0
    median_refetch_interval_s: float = 0.0


def choose_bin_seconds(span_ms: int, max_bins: int) -> int:
    """The narrowest of :data:`BIN_WIDTHS_SECONDS` that covers ``span_ms`` in ``max_bins``."""
    for width in BIN_WIDTHS_SECONDS:
        if span_ms / (width * 1000) < max_bins:
            return width
    return BIN_WIDTHS_SECONDS[-1]


def log_figures(columns: CrawlLogColumns, spacing: SpacingRules | None = None, *,
                max_bins: int = 1500, top_hosts: int = 25,
                max_host_points: int = 5000) -> LogFigures:
    """Reduce ``columns`` to the report's figures. O(n log n) in the lines (a few sorts).

    Timeline series (per bin; rates per second, host counts as the mean over the bin):
    ``pages_per_s``, ``bytes_per_s``, ``robots_fetches``, ``robots_denials``, ``slow_down``
    (429 and 503 answers), ``failures`` (no response, 5xx: what makes a host back off),
    ``not_modified``, ``refetches``, ``refetches_changed``, ``new_payloads``,
    ``duplicate_payloads``, ``median_refetch_interval_s``, ``in_flight`` (requests under way),
    ``hosts_politeness``, ``hosts_after_failure``, ``hosts_idle`` (hosts in each class of gap,
    see the module's docstring) and ``hosts_active`` (hosts with a request ending in the bin).
    """
    spacing = spacing or SpacingRules()
    figures = LogFigures(lines=len(columns), bad_lines=columns.bad_lines,
                         latency_edges_ms=_LATENCY_EDGES.tolist(), size_edges=_SIZE_EDGES.tolist())
    if not len(columns):
        return figures
    end = np.frombuffer(columns.end_ms, dtype=np.int64)
    duration = np.maximum(np.frombuffer(columns.duration_ms, dtype=np.int64), 0)
    start = end - duration
    size = np.frombuffer(columns.size, dtype=np.int64)
    code = np.frombuffer(columns.code, dtype=np.int32)
    host = np.frombuffer(columns.host, dtype=np.int32)
    status = np.frombuffer(columns.status, dtype=np.int8)
    reason = np.frombuffer(columns.reason, dtype=np.int32)
    ctype = np.frombuffer(columns.content_type, dtype=np.int32)
    robots = np.frombuffer(columns.robots, dtype=np.int8).astype(bool)
    # A host's prerequisites: its robots.txt and its not-found probe, no pages.
    prerequisite = robots | np.frombuffer(columns.probe, dtype=np.int8).astype(bool)
    url_hash = np.frombuffer(columns.url_hash, dtype=np.int64)
    digest = np.frombuffer(columns.digest_hash, dtype=np.int64)

    requested = ~np.isin(status, _NO_REQUEST)
    page = ~prerequisite
    fetched_page = page & requested
    answered = code > 0
    failure = requested & ((status == _FETCH_ERROR) | (code == 429) | (code >= 500))

    figures.first_ms = int(start[requested].min()) if requested.any() else int(end.min())
    figures.last_ms = int(end.max())
    width = choose_bin_seconds(figures.last_ms - figures.first_ms, max_bins)
    figures.bin_seconds = width
    bin_ms = width * 1000
    origin = figures.first_ms - figures.first_ms % bin_ms
    n_bins = int((figures.last_ms - origin) // bin_ms) + 1
    figures.bin_starts_ms = (origin + bin_ms * np.arange(n_bins)).tolist()
    bins = ((end - origin) // bin_ms).clip(0, n_bins - 1)

    def per_bin(mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(bins[mask], weights=None if weights is None else weights[mask],
                           minlength=n_bins)

    timeline = figures.timeline
    timeline["pages_per_s"] = (per_bin(fetched_page) / width).tolist()
    timeline["bytes_per_s"] = (per_bin(requested & answered, size.astype(np.float64))
                               / width).tolist()
    timeline["robots_fetches"] = per_bin(robots & requested).tolist()
    timeline["robots_denials"] = per_bin(page & (status == _ROBOTS_DENIED)).tolist()
    timeline["slow_down"] = per_bin(requested & ((code == 429) | (code == 503))).tolist()
    timeline["failures"] = per_bin(failure).tolist()

    # Outcomes.
    page_status = status[page]
    figures.by_status = {_STATUSES[i].value: int(n) for i, n in
                         enumerate(np.bincount(page_status, minlength=len(_STATUSES))) if n}
    pairs, counts = np.unique(page_status.astype(np.int64) * (len(columns.reasons) + 1)
                              + reason[page], return_counts=True)
    figures.by_reason = sorted(
        ((_STATUSES[p // (len(columns.reasons) + 1)].value,
          columns.reasons[p % (len(columns.reasons) + 1)], int(n)) for p, n in zip(
            pairs.tolist(), counts.tolist(), strict=True)), key=lambda row: (-row[2], row[:2]))
    robots_codes, robots_counts = np.unique(code[robots], return_counts=True)
    figures.robots_by_code = {str(c): int(n) for c, n in zip(
        robots_codes.tolist(), robots_counts.tolist(), strict=True)}
    figures.pages = int(fetched_page.sum())
    figures.robots_fetches = int((robots & requested).sum())
    figures.bytes = int(size[requested & answered].sum())

    _latency(figures, duration, requested, robots, prerequisite, status, code)
    _content(figures, columns, ctype, size, status, fetched_page & answered & (code != 304))
    _novelty(figures, timeline, per_bin, end, code, url_hash, digest,
             fetched_page & answered, n_bins, bins)
    _hosts(figures, columns, spacing, host, start, end, duration, size, requested, failure,
           prerequisite, origin, bin_ms, n_bins, top_hosts, max_host_points)
    timeline["hosts_active"] = _distinct_per_bin(bins[requested], host[requested], n_bins)
    return figures


def _latency(figures: LogFigures, duration: np.ndarray, requested: np.ndarray,
             robots: np.ndarray, prerequisite: np.ndarray, status: np.ndarray,
             code: np.ndarray) -> None:
    page = requested & ~prerequisite
    groups = {
        "FETCHED": page & (status == _FETCHED) & (code < 300),
        "REDIRECT or 304": page & (status != _FETCH_ERROR) & (code >= 300) & (code < 400),
        "HTTP_ERROR": page & (code >= 400),
        "FETCH_ERROR": page & (status == _FETCH_ERROR),
        "robots.txt": requested & robots,
    }
    edges = np.append(_LATENCY_EDGES, np.iinfo(np.int64).max)
    for name, mask in groups.items():
        if mask.any():
            counts, _ = np.histogram(duration[mask], bins=np.append(0, edges))
            figures.latency_counts[name] = counts.tolist()
    pages = duration[page]
    if pages.size:
        for q in (50, 90, 99):
            figures.latency_percentiles_ms[f"p{q}"] = float(np.percentile(pages, q))
        figures.latency_percentiles_ms["max"] = float(pages.max())
        figures.latency_percentiles_ms["mean"] = float(pages.mean())


def _content(figures: LogFigures, columns: CrawlLogColumns, ctype: np.ndarray, size: np.ndarray,
             status: np.ndarray, responses: np.ndarray) -> None:
    # 304s carry no body: they count as revisits, not as content.
    with_body = responses & (size >= 0)
    counts = np.bincount(ctype[with_body], minlength=len(columns.content_types))
    sizes = np.bincount(ctype[with_body], weights=size[with_body].astype(np.float64),
                        minlength=len(columns.content_types))
    figures.content_types = sorted(
        ((columns.content_types[i] or "(none)", int(counts[i]), int(sizes[i]))
         for i in np.flatnonzero(counts)), key=lambda row: (-row[1], row[0]))
    ok = with_body & (status == _FETCHED)
    counts, _ = np.histogram(size[ok], bins=np.append(_SIZE_EDGES, np.iinfo(np.int64).max))
    figures.size_counts = counts.tolist()


def _novelty(figures: LogFigures, timeline: dict[str, list[float | None]],
             per_bin: Callable[[np.ndarray], np.ndarray],
             end: np.ndarray, code: np.ndarray, url_hash: np.ndarray, digest: np.ndarray,
             responses: np.ndarray, n_bins: int, bins: np.ndarray) -> None:
    rows = np.flatnonzero(responses)
    # By URL, then time: a row whose URL is the previous row's is a refetch.
    order = rows[np.lexsort((end[rows], url_hash[rows]))]
    same_url = np.zeros(order.size, dtype=bool)
    same_url[1:] = url_hash[order[1:]] == url_hash[order[:-1]]
    not_modified = code[order] == 304
    # The payload a refetch compares with: the URL's last one, a 304 carrying its previous one.
    content = np.where(not_modified, 0, digest[order])
    position = np.where((content != 0) | ~same_url, np.arange(order.size), 0)
    carried = content[np.maximum.accumulate(position)]
    previous = np.zeros(order.size, dtype=np.int64)
    previous[1:] = carried[:-1]
    changed = same_url & ~not_modified & (digest[order] != previous)
    unchanged = same_url & ~not_modified & ~changed
    # A first fetch whose payload came before at another URL (archived as a revisit record).
    by_time = rows[np.argsort(end[rows], kind="stable")]
    _, first_index = np.unique(digest[by_time], return_index=True)
    first_of_payload = np.zeros(end.size, dtype=bool)
    first_of_payload[by_time[first_index]] = True
    first_fetch = order[~same_url]
    duplicate = first_fetch[~first_of_payload[first_fetch] & (digest[first_fetch] != 0)]
    new = first_fetch[first_of_payload[first_fetch] | (digest[first_fetch] == 0)]

    def mark(indices: np.ndarray) -> np.ndarray:
        mask = np.zeros(end.size, dtype=bool)
        mask[indices] = True
        return mask

    figures.novelty = {
        "new payload": int(new.size),
        "payload seen at another URL": int(duplicate.size),
        "refetch, changed": int(changed.sum()),
        "refetch, unchanged": int(unchanged.sum()),
        "304 not modified": int(not_modified.sum()),
    }
    timeline["new_payloads"] = per_bin(mark(new)).tolist()
    timeline["duplicate_payloads"] = per_bin(mark(duplicate)).tolist()
    timeline["refetches"] = per_bin(mark(order[same_url])).tolist()
    timeline["refetches_changed"] = per_bin(mark(order[changed])).tolist()
    timeline["not_modified"] = per_bin(mark(order[not_modified])).tolist()
    intervals = np.zeros(order.size, dtype=np.int64)
    intervals[1:] = end[order[1:]] - end[order[:-1]]
    refetch_rows = order[same_url]
    refetch_intervals = intervals[same_url] / 1000.0
    figures.urls_refetched = int(np.unique(url_hash[refetch_rows]).size)
    if refetch_rows.size:
        figures.median_refetch_interval_s = float(np.median(refetch_intervals))
    median = _group_quantile(bins[refetch_rows], refetch_intervals, 0.5, n_bins)
    timeline["median_refetch_interval_s"] = [None if math.isnan(v) else round(v, 3)
                                             for v in median.tolist()]


def _hosts(figures: LogFigures, columns: CrawlLogColumns, spacing: SpacingRules,
           host: np.ndarray, start: np.ndarray, end: np.ndarray, duration: np.ndarray,
           size: np.ndarray, requested: np.ndarray, failure: np.ndarray,
           prerequisite: np.ndarray, origin: int, bin_ms: int, n_bins: int, top_hosts: int,
           max_points: int) -> None:
    rows = np.flatnonzero(requested)
    figures.host_count = int(np.unique(host[rows]).size) if rows.size else 0
    timeline = figures.timeline
    edges = origin + bin_ms * np.arange(n_bins + 1)
    timeline["in_flight"] = _mean_coverage(start[rows], end[rows], edges).tolist()
    # Each host's requests in order of their start; a gap runs from one's end to the next's start.
    order = rows[np.lexsort((start[rows], host[rows]))]
    same_host = host[order[1:]] == host[order[:-1]]
    gap_start = end[order[:-1]][same_host]
    gap_end = np.maximum(start[order[1:]][same_host], gap_start)
    gap_host = host[order[1:]][same_host]
    after_failure = failure[order[:-1]][same_host]
    crawl_delay = np.zeros(len(columns.hosts))
    for name, seconds in spacing.crawl_delays.items():
        index = columns.host_id(name)
        if index is not None:
            crawl_delay[index] = seconds
    expected_ms = np.maximum(
        np.maximum(spacing.delay_seconds, crawl_delay[gap_host]) * 1000.0,
        spacing.response_time_factor * duration[order[:-1]][same_host])
    gap = gap_end - gap_start
    polite = ~after_failure & (gap <= expected_ms + spacing.margin_seconds * 1000.0)
    idle = ~after_failure & ~polite
    for name, mask in (("hosts_politeness", polite), ("hosts_after_failure", after_failure),
                       ("hosts_idle", idle)):
        timeline[name] = _mean_coverage(gap_start[mask], gap_end[mask], edges).tolist()
        figures.gap_seconds[name.removeprefix("hosts_")] = float(gap[mask].sum() / 1000.0)

    n_hosts = len(columns.hosts)
    requests = np.bincount(host[rows], minlength=n_hosts)
    page_rows = rows[~prerequisite[rows]]
    pages = np.bincount(host[page_rows], minlength=n_hosts)
    failures = np.bincount(host[rows], weights=failure[rows], minlength=n_hosts)
    byte_rows = rows[size[rows] > 0]
    host_bytes = np.bincount(host[byte_rows], weights=size[byte_rows].astype(np.float64),
                             minlength=n_hosts)
    median_latency = _group_quantile(host[rows], duration[rows], 0.5, n_hosts, 0.0)
    p95_latency = _group_quantile(host[rows], duration[rows], 0.95, n_hosts, 0.0)
    median_gap = _group_quantile(gap_host, gap, 0.5, n_hosts)
    polite_gap = _group_quantile(gap_host[polite], gap[polite], 0.5, n_hosts)
    first = np.full(n_hosts, np.iinfo(np.int64).max)
    last = np.zeros(n_hosts, dtype=np.int64)
    np.minimum.at(first, host[rows], start[rows])
    np.maximum.at(last, host[rows], end[rows])

    def row(index: int) -> dict[str, Any]:
        span = max(int(last[index] - first[index]), 1) / 1000.0
        return {
            "host": columns.hosts[index],
            "requests": int(requests[index]),
            "pages": int(pages[index]),
            "bytes": int(host_bytes[index]),
            "failures": int(failures[index]),
            "median_latency_ms": float(median_latency[index]),
            "p95_latency_ms": float(p95_latency[index]),
            "median_gap_s": _seconds(median_gap[index]),
            "median_polite_gap_s": _seconds(polite_gap[index]),
            "requests_per_minute": round(60.0 * float(requests[index]) / span, 2),
            "crawl_delay_s": spacing.crawl_delays.get(columns.hosts[index]),
        }

    seen = np.flatnonzero(requests)
    busiest = seen[np.lexsort((seen, -requests[seen]))]
    slowest = seen[np.lexsort((seen, -p95_latency[seen], -median_latency[seen]))]
    figures.busiest_hosts = [row(int(i)) for i in busiest[:top_hosts]]
    figures.slowest_hosts = [row(int(i)) for i in slowest[:top_hosts]]
    shown = busiest[:max_points]
    figures.host_points = {
        "host": [columns.hosts[i] for i in shown.tolist()],
        "requests": requests[shown].tolist(),
        "median_latency_ms": median_latency[shown].tolist(),
        "failures": failures[shown].astype(np.int64).tolist(),
    }


def _group_quantile(groups: np.ndarray, values: np.ndarray, q: float, n_groups: int,
                    empty: float = math.nan) -> np.ndarray:
    """The ``q`` quantile of ``values`` in each group ``0 .. n_groups - 1`` (linear
    interpolation, as numpy's default), ``empty`` for a group without values. One sort:
    O(n log n), whatever the number of groups."""
    result = np.full(n_groups, empty, dtype=np.float64)
    if not values.size:
        return result
    order = np.lexsort((values, groups))
    ordered = values[order].astype(np.float64)
    counts = np.bincount(groups, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    has = counts > 0
    position = starts[has] + q * (counts[has] - 1)
    low = np.floor(position).astype(np.int64)
    high = np.ceil(position).astype(np.int64)
    result[has] = ordered[low] + (ordered[high] - ordered[low]) * (position - low)
    return result


def _seconds(value: float) -> float | None:
    return None if math.isnan(value) else round(float(value) / 1000.0, 3)


def _mean_coverage(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The mean number of the intervals [start, end) covering each bin between ``edges``.

    The time covered up to t is sum(clip(t - start, 0, end - start)); with sorted starts and
    ends and their prefix sums it is read at every edge by binary search: O((n + bins) log n).
    """
    if not starts.size:
        return np.zeros(edges.size - 1)

    def covered_until(points: np.ndarray) -> np.ndarray:
        total = np.zeros(edges.size)
        for values, sign in ((np.sort(starts), 1), (np.sort(ends), -1)):
            prefix = np.concatenate(([0.0], np.cumsum(values, dtype=np.float64)))
            count = np.searchsorted(values, points, side="right")
            total += sign * (count * points.astype(np.float64) - prefix[count])
        return total

    covered = covered_until(edges)
    return np.round(np.diff(covered) / np.diff(edges).astype(np.float64), 4)


def _distinct_per_bin(bins: np.ndarray, hosts: np.ndarray, n_bins: int) -> list[int]:
    if not bins.size:
        return [0] * n_bins
    pairs = np.unique(bins.astype(np.int64) * (int(hosts.max()) + 1) + hosts)
    return np.bincount(pairs // (int(hosts.max()) + 1), minlength=n_bins).tolist()


def read_crawl_logs(paths: Iterable[str | Path]) -> CrawlLogColumns:
    """Every line of the given crawl log files, as columns."""
    columns = CrawlLogColumns()
    for path in sorted(str(p) for p in paths):
        columns.add_file(path)
    return columns
