"""How long ``pyflink-crawler report`` takes on a big crawl: a crawl log of a million lines.

    python bench/report_speed.py --lines 1000000 --runs 3

Writes, with the crawl's own crawl-log writer, a realistic log into a scratch output
directory (``--dir``; a temporary one by default): ``--hosts`` hosts of Zipf-like sizes
(exponent 0.6: the largest has about 8,000 requests of a million), joining over the first
three hours, each with a robots.txt fetch first and its requests spaced politely (0.5-3 s
apart, now and then a longer wait), a mix of outcomes (200s of several content types and
log-normal sizes, 3xx, 404/410, 5xx and 429, timeouts, robots.txt denials, 304s of refetched
pages, a share of payloads repeated across URLs) and log-normal latencies, spread over four
crawl-log files as four process subtasks write them. Then times ``write_report`` (read,
reduce, render) and, on its own, the reading of the log into columns; reports the peak memory
of the process and the page's size. Figures: median of ``--runs`` rounds, seconds.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crawl.archive.crawl_log import CrawlLogWriter  # noqa: E402
from crawl.model import FetchResult  # noqa: E402
from crawl.report import ReportSettings, write_report  # noqa: E402
from crawl.report.log_figures import read_crawl_logs  # noqa: E402
from crawl.status import Status  # noqa: E402

START_MS = 1_795_000_000_000
TYPES = [("text/html; charset=utf-8", 0.80), ("application/pdf", 0.05), ("image/jpeg", 0.07),
         ("application/xml", 0.03), ("text/plain", 0.05)]


def _outcome(rng: random.Random, url: str, refetch: bool) -> dict[str, object]:
    roll = rng.random()
    if refetch and roll < 0.5:
        return {"status": Status.FETCHED, "reason": "http:not-modified", "http_status": 304}
    if roll < 0.78:
        content_type = rng.choices([t for t, _ in TYPES], [w for _, w in TYPES])[0]
        size = min(int(rng.lognormvariate(9.5, 1.2)), 5_000_000)
        # A tenth of the pages repeat a payload of a few shared ones (error pages, mirrors).
        body = (b"shared %d" % rng.randrange(50)) if rng.random() < 0.1 else (
            url.encode() + b"#" * size)
        return {"status": Status.FETCHED, "reason": "", "http_status": 200, "body": body,
                "response_headers": [("Content-Type", content_type)]}
    if roll < 0.84:
        code = rng.choice([301, 302, 307, 308])
        return {"status": Status.REDIRECT, "reason": f"http:{code}", "http_status": code}
    if roll < 0.91:
        code = rng.choice([404, 404, 404, 410, 403, 500, 502, 503, 429])
        return {"status": Status.HTTP_ERROR, "reason": f"http:{code}", "http_status": code,
                "body": b"error page %d" % code}
    if roll < 0.95:
        return {"status": Status.FETCH_ERROR,
                "reason": rng.choice(["timeout:read", "timeout:connect", "connect:refused",
                                      "dns:nxdomain"]), "http_status": 0}
    return {"status": Status.ROBOTS_DENIED,
            "reason": rng.choice(["robots:disallow", "robots:unavailable:http:503"]),
            "http_status": 0}


def write_crawl_log(out: Path, lines: int, hosts: int, seed: int = 1) -> int:
    """Write about ``lines`` crawl log lines into ``out/logs``; returns the number written."""
    rng = random.Random(seed)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    writers = [CrawlLogWriter(out / "logs" / f"crawl-{n:05d}.log", background_flush=False)
               for n in range(4)]
    weights = [1.0 / (rank + 1) ** 0.6 for rank in range(hosts)]
    total = sum(weights)
    written = 0
    try:
        for rank in range(hosts):
            host = f"h{rank}.example{rank % 97}.test"
            count = max(1, round(lines * weights[rank] / total))
            # Hosts join over the crawl's first three hours, as the crawl discovers them.
            clock = START_MS + rng.randrange(0, 3 * 3600 * 1000)
            latency_mu = rng.uniform(3.0, 6.5)
            seen: list[str] = []
            writer = writers[rank % 4]
            robots = FetchResult(url=f"http://{host}/robots.txt", status=Status.FETCHED,
                                 reason="", http_status=200, body=b"User-agent: *\n",
                                 started_ms=clock, duration_ms=rng.randrange(5, 200), hops="P")
            writer.log(robots)
            written += 1
            clock += robots.duration_ms
            for n in range(count - 1):
                clock += rng.choice([500, 1000, 1000, 1500, 3000]) + (
                    rng.randrange(5_000, 60_000) if rng.random() < 0.02 else 0)
                refetch = bool(seen) and rng.random() < 0.15
                url = rng.choice(seen) if refetch else f"http://{host}/p/{n}?q={rng.random():.6f}"
                if not refetch and len(seen) < 200:
                    seen.append(url)
                fields = _outcome(rng, url, refetch)
                duration = 0 if fields["status"] is Status.ROBOTS_DENIED else min(
                    int(rng.lognormvariate(latency_mu, 0.8)), 60_000)
                result = FetchResult(url=url, started_ms=clock, duration_ms=duration,
                                     hops="L" * rng.randrange(1, 4), via=f"http://{host}/",
                                     **fields)  # type: ignore[arg-type]
                # Each payload goes to the subtask its digest keys (spread as the job spreads it).
                writers[hash(result.body) % 4].log(result)
                written += 1
                clock += duration
    finally:
        for writer in writers:
            writer.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path,
                        help="where to write the log (kept; a log already there is reused)")
    args = parser.parse_args()
    scratch = args.dir or Path(tempfile.mkdtemp(prefix="report-speed-"))
    try:
        began = time.perf_counter()
        if args.dir is not None and list(scratch.glob("logs/crawl-*.log")):
            print(f"reading the crawl log already in {scratch}")
        else:
            written = write_crawl_log(scratch, args.lines, args.hosts)
            print(f"wrote {written:,} lines over {args.hosts:,} hosts in "
                  f"{time.perf_counter() - began:.1f} s into {scratch}")
        log_bytes = sum(p.stat().st_size for p in (scratch / "logs").glob("crawl-*.log"))
        print(f"crawl log: {log_bytes / 1e6:,.0f} MB")
        reads, reports = [], []
        for _ in range(args.runs):
            began = time.perf_counter()
            columns = read_crawl_logs((scratch / "logs").glob("crawl-*.log"))
            reads.append(time.perf_counter() - began)
            del columns
            began = time.perf_counter()
            path = write_report(scratch, ReportSettings())
            reports.append(time.perf_counter() - began)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"read the log into columns: median {statistics.median(reads):.2f} s "
              f"(runs: {', '.join(f'{t:.2f}' for t in reads)})")
        print(f"write_report (read, reduce, render): median {statistics.median(reports):.2f} s "
              f"(runs: {', '.join(f'{t:.2f}' for t in reports)})")
        print(f"report {path} {path.stat().st_size / 1e6:.1f} MB; peak memory of this "
              f"process {peak_mb:,.0f} MB")
    finally:
        if args.dir is None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
