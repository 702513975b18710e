"""The process stage's pages/s on one core: parsing, near-duplicate fingerprint, WARC and log.

Feeds :class:`crawl.processing.PageProcessor` (what the process stage runs for each fetch
outcome, without Flink) the HTML pages of a synthetic web, as fetch results, in one thread,
and reports pages per CPU second in several configurations measured side by side in rounds:

- ``full``: what the job does by default (links, metadata records with the simhash, the
  near-duplicate query, revisit bookkeeping in a dict, CDXJ index lines, crawl log);
- ``no-neardup``: the same without the fingerprint and the query;
- ``no-metadata``: without metadata records (and without near-duplicates).

Pages: every 200 HTML page of the default synthetic web (small, about 1 KB) and the pages of
the near-duplicate profile (articles of 1-4 KB in site boilerplate).
Usage: ``python bench/process_stage.py [--hosts 60] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawl.archive.crawl_log import CrawlLogWriter  # noqa: E402
from crawl.archive.warc import WarcFileWriter  # noqa: E402
from crawl.model import FetchResult  # noqa: E402
from crawl.processing import PageProcessor  # noqa: E402
from crawl.progress import StageStatus  # noqa: E402
from crawl.stages import PROCESS  # noqa: E402
from crawl.status import Status  # noqa: E402
from synthweb import SyntheticWeb, WebConfig  # noqa: E402

CONFIGURATIONS = {
    "full": {"near_duplicates": True, "metadata_records": True},
    "no-neardup": {"near_duplicates": False, "metadata_records": True},
    "no-metadata": {"near_duplicates": False, "metadata_records": False},
}


def pages(hosts: int) -> list[FetchResult]:
    web = SyntheticWeb(WebConfig(seed=1, hosts=hosts).with_near_duplicate_profile())
    results = []
    for host in web.host_names():
        for page in web.pages(host):
            if page.status != 200 or not page.content_type.startswith("text/html"):
                continue
            url = page.url
            response = web.respond(host, url.split(host, 1)[1] or "/")
            results.append(FetchResult(
                url=url, status=Status.FETCHED, reason="http:200", http_status=200,
                response_headers=list(response.headers), body=response.body,
                started_ms=1_700_000_000_000, hops="L", via=f"http://{host}/",
            ))
    return results


def run(results: list[FetchResult], options: dict, folder: Path) -> float:
    """Pages per CPU second of one pass over ``results``."""
    warc = WarcFileWriter(folder / "warc", "bench", 0)
    log = CrawlLogWriter(folder / "crawl.log", background_flush=False)
    status = StageStatus(folder / "status", PROCESS.figures, 0, interval=3600)
    processor = PageProcessor(warc, log, 256, status, producer_id="0.bench",
                              recent_urls=100_000, captures=_Captures(), **options)
    began = time.thread_time()
    for result in results:
        processor.process(result)
        processor.near_probes.clear()
    spent = time.thread_time() - began
    warc.close()
    log.close()
    status.close()
    return len(results) / spent


class _Captures(dict):
    def put(self, digest, capture):
        self[digest] = capture


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = pages(args.hosts)
    size = statistics.mean(len(r.body) for r in results)
    print(f"{len(results)} HTML pages, {size:.0f} bytes on average")
    figures: dict[str, list[float]] = {name: [] for name in CONFIGURATIONS}
    for round_number in range(args.rounds):
        for name, options in CONFIGURATIONS.items():
            with tempfile.TemporaryDirectory() as folder:
                figures[name].append(run(results, options, Path(folder)))
        print(f"round {round_number + 1}: " + ", ".join(
            f"{name} {values[-1]:.0f}" for name, values in figures.items()))
    full = figures["full"]
    print("\n| configuration | pages/s on one core (median) | ms/page | full / this (median) |")
    print("|---|---:|---:|---:|")
    for name, values in figures.items():
        ratios = [a / b for a, b in zip(full, values, strict=True)]
        median = statistics.median(values)
        print(f"| {name} | {median:.0f} | {1000 / median:.2f} | {statistics.median(ratios):.2f} |")


if __name__ == "__main__":
    main()
