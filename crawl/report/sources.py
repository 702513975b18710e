"""What the crawl report reads besides the crawl logs: the summary, the stages' figures, the
job record and the hosts' robots.txt (for their Crawl-delay), all from the output directory.

Each reader takes what is there: a crawl still running has no summary yet and its figures are
those of the last second; a file being rewritten or cut short is left out, never an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from crawl.frontier.robots import RobotsPolicy, RobotsRecord
from crawl.layout import OutputLayout
from crawl.progress import CrawlFigures, read_statuses

__all__ = ["crawl_delays", "read_figures", "read_json"]


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``, empty if the file is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_figures(layout: OutputLayout) -> CrawlFigures:
    """The stages' figures as their status files last had them (summed over subtasks)."""
    return CrawlFigures.from_statuses(read_statuses(layout.status))


def _robots_captures(index: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(host, timestamp, fields) of each robots.txt capture with status 200 in a CDXJ index."""
    try:
        handle = open(index, encoding="utf-8", errors="replace")
    except OSError:
        return
    with handle:
        for line in handle:
            key, _, rest = line.partition(" ")
            if not key.endswith(")/robots.txt"):
                continue
            timestamp, _, text = rest.partition(" ")
            try:
                fields = json.loads(text)
            except ValueError:
                continue
            url = str(fields.get("url", ""))
            parts = url.split("/", 3)
            if len(parts) == 4 and parts[3] == "robots.txt" and fields.get("status") == "200":
                yield parts[2], timestamp, fields


def crawl_delays(layout: OutputLayout, token: str, max_crawl_delay_seconds: float,
                 max_hosts: int = 20_000) -> dict[str, float]:
    """Crawl-delay (seconds, capped as the crawler caps it) for our ``token`` of each host whose
    robots.txt the archive holds with one (the newest capture counts; a revisit record is read
    from the capture of its payload). At most ``max_hosts`` hosts: each costs a WARC read."""
    newest: dict[str, tuple[str, str]] = {}
    body_at: dict[str, tuple[str, int]] = {}
    for host, timestamp, fields in _robots_captures(layout.index):
        digest = str(fields.get("digest", ""))
        offset = str(fields.get("offset", ""))
        if fields.get("mime") != "warc/revisit" and offset.isdigit():
            body_at.setdefault(digest, (str(fields.get("filename", "")), int(offset)))
        if host in newest or len(newest) < max_hosts:
            if host not in newest or newest[host][0] <= timestamp:
                newest[host] = (timestamp, digest)
    delays_by_digest: dict[str, float] = {}
    for digest in {digest for _, digest in newest.values()}:
        place = body_at.get(digest)
        body = _read_body(layout.warc / place[0], place[1]) if place else None
        if body is None:
            continue
        record = RobotsRecord(200, body.decode("utf-8-sig", errors="replace"), 0, 0)
        delays_by_digest[digest] = RobotsPolicy(record, token,
                                                max_crawl_delay_seconds).crawl_delay_seconds
    return {host: delays_by_digest[digest] for host, (_, digest) in newest.items()
            if delays_by_digest.get(digest)}


def _read_body(path: Path, offset: int) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            for record in ArchiveIterator(handle):
                return record.content_stream().read()
    except Exception:  # noqa: BLE001 - a damaged or vanished file: that host's delay is unknown
        return None
    return None
