"""The end-of-crawl summary, computed from the crawl logs (the record of what happened).

Pages are counted by status (robots.txt fetches apart) and by the way they were found (the
last hop: a seed, a link, an embed, a redirect, a sitemap or a sitemap's entry, a directory
inferred), with bytes, distinct hosts, robots denials and the fetch rate over the crawl's
fetching window (first to last fetch). Links the
crawl turned away (bad URLs, the URL policy) are counted by reason from the stages' figures.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from crawl.archive.crawl_log import parse_line
from crawl.hops import is_not_found_probe, is_prerequisite, way_found
from crawl.status import SOFT_404_REASON
from crawl.urls.normalize import host_of

__all__ = ["CrawlSummary", "summarise_crawl_logs"]

_NOT_FETCHED = frozenset({"ROBOTS_DENIED", "REJECTED"})


@dataclasses.dataclass
class CrawlSummary:
    """What a crawl did."""

    pages_by_status: Counter[str] = dataclasses.field(default_factory=Counter)
    #: Page fetches by the way their URL was found (:func:`way_found`).
    pages_by_way: Counter[str] = dataclasses.field(default_factory=Counter)
    reasons: Counter[str] = dataclasses.field(default_factory=Counter)
    robots_fetches: int = 0
    #: Hosts asked for a path they cannot have (crawl/content/soft404.py).
    not_found_probes: int = 0
    bytes: int = 0
    hosts: int = 0
    first_fetch_ms: int = 0
    last_fetch_ms: int = 0
    #: Pages fetched by this run (a resumed crawl's logs hold earlier runs too).
    run_pages: int = 0
    bad_log_lines: int = 0
    urls_known: int = 0
    #: Discovered links turned away, by reason (from the process stage's figures).
    links_rejected: Counter[str] = dataclasses.field(default_factory=Counter)
    #: URLs the crawl DB's budgets held back when the crawl stopped, by reason (they go when
    #: their budget grows: a resumed crawl may fetch them).
    urls_deferred: Counter[str] = dataclasses.field(default_factory=Counter)
    #: URLs the crawl DB still held back when the crawl stopped (priority).
    urls_waiting: int = 0
    #: Responses written as revisit records (payload archived before).
    revisits: int = 0
    #: Pages found to be near-duplicates of earlier ones.
    near_duplicates: int = 0
    #: Fetches of URLs fetched before (a continuous crawl's refresh), and of those the ones
    #: answered 304 Not Modified.
    refetches: int = 0
    not_modified: int = 0
    #: Releases of URLs by the crawl DB (priority), and of those the ones made from a due
    #: window without reading the DRUM.
    releases: int = 0
    releases_from_window: int = 0
    elapsed_seconds: float = 0.0
    stop_reason: str = ""
    savepoint: str = ""
    warc_files: list[str] = dataclasses.field(default_factory=list)
    #: The CDXJ index of the WARC files and its line count (captures).
    cdxj_index: str = ""
    cdxj_lines: int = 0
    crawl_logs: list[str] = dataclasses.field(default_factory=list)

    @property
    def pages(self) -> int:
        """Page fetches (every status but robots denials and rejections, which fetch nothing)."""
        return sum(n for status, n in self.pages_by_status.items() if status not in _NOT_FETCHED)

    @property
    def robots_denials(self) -> int:
        return self.pages_by_status.get("ROBOTS_DENIED", 0)

    @property
    def pages_per_second(self) -> float:
        """This run's pages over its fetching window (its first to its last fetch)."""
        window = (self.last_fetch_ms - self.first_fetch_ms) / 1000.0
        return self.run_pages / window if window > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        data["pages_by_status"] = dict(self.pages_by_status)
        data["pages_by_way"] = dict(self.pages_by_way)
        data["reasons"] = dict(self.reasons)
        data["links_rejected"] = dict(self.links_rejected)
        data["urls_deferred"] = dict(self.urls_deferred)
        data["pages"] = self.pages
        data["robots_denials"] = self.robots_denials
        data["pages_per_second"] = round(self.pages_per_second, 2)
        return data

    def render(self) -> str:
        """The summary as printed at the end of a crawl."""
        lines = [
            "",
            f"crawl finished ({self.stop_reason or 'stopped'}) after {self.elapsed_seconds:.1f} s",
            f"  pages fetched   {self.pages}  ({self.pages_per_second:.1f} pages/s "
            "over the fetching window"
            + (f"; {self.run_pages} in this run)" if self.run_pages != self.pages else ")"),
        ]
        for status, count in sorted(self.pages_by_status.items()):
            lines.append(f"    {status:<15} {count}")
        if self.pages_by_way:
            lines.append("  pages found by")
            for way, count in sorted(self.pages_by_way.items(), key=lambda kv: (-kv[1], kv[0])):
                lines.append(f"    {way:<15} {count}")
        lines += [
            f"  robots denials  {self.robots_denials}",
            f"  robots.txt      {self.robots_fetches} fetches",
            f"  soft 404s       {self.reasons.get(SOFT_404_REASON, 0)} pages "
            f"({self.not_found_probes} hosts asked for a path they cannot have)",
            f"  bytes           {self.bytes}",
            f"  hosts           {self.hosts}",
            f"  URLs known      {self.urls_known}",
            f"  links rejected  {sum(self.links_rejected.values())}",
        ]
        for reason, count in sorted(self.links_rejected.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"    {reason:<30} {count}")
        lines.append(f"  URLs deferred   {sum(self.urls_deferred.values())}")
        for reason, count in sorted(self.urls_deferred.items(), key=lambda kv: (-kv[1], kv[0])):
            if count:
                lines.append(f"    {reason:<30} {count}")
        lines += [
            f"  URLs waiting    {self.urls_waiting}",
            f"  revisits        {self.revisits}",
            f"  near-duplicates {self.near_duplicates}",
        ]
        if self.refetches:
            lines.append(f"  refetches       {self.refetches} ({self.not_modified} not modified)")
        if self.releases:
            lines.append(f"  releases        {self.releases} ({self.releases_from_window} from "
                         "the due window)")
        lines += [
            f"  WARC files      {len(self.warc_files)} in "
            f"{Path(self.warc_files[0]).parent if self.warc_files else '-'}",
            f"  CDXJ index      {self.cdxj_lines} captures in {self.cdxj_index or '-'}",
            f"  crawl log       {', '.join(self.crawl_logs) or '-'}",
        ]
        if self.savepoint:
            lines.append(f"  savepoint       {self.savepoint}")
        return "\n".join(lines)


def summarise_crawl_logs(paths: Iterable[str | Path], since_ms: int = 0) -> CrawlSummary:
    """Read crawl logs and count what they record; the rate counts fetches from ``since_ms``
    on (the start of this run, when the logs continue a resumed crawl)."""
    summary = CrawlSummary()
    hosts: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    entry = parse_line(line)
                except ValueError:
                    summary.bad_log_lines += 1
                    continue
                status = entry["status"].value
                size = entry.get("size") or 0
                hops = entry.get("hops", "")
                if is_prerequisite(hops):
                    summary.robots_fetches += 1
                    summary.bytes += size
                    continue
                if is_not_found_probe(hops):
                    summary.not_found_probes += 1
                    summary.bytes += size
                    continue
                summary.pages_by_status[status] += 1
                if entry.get("reason"):
                    summary.reasons[entry["reason"]] += 1
                if status in _NOT_FETCHED:
                    continue
                summary.pages_by_way[way_found(entry.get("hops", ""))] += 1
                summary.bytes += size
                timestamp = entry["timestamp_ms"]
                if timestamp >= since_ms:
                    summary.run_pages += 1
                    if not summary.first_fetch_ms or timestamp < summary.first_fetch_ms:
                        summary.first_fetch_ms = timestamp
                    summary.last_fetch_ms = max(summary.last_fetch_ms, timestamp)
                try:
                    hosts.add(host_of(entry["url"]))
                except ValueError:
                    pass
    summary.hosts = len(hosts)
    return summary
