"""End-to-end pages/s: our crawler against Scrapy, on the same synthetic web, in the same run.

Each round starts a fresh synthetic web (same seed, so the same web), crawls it with our crawler
(``python -m job crawl``, the full pipeline on the local MiniCluster) and then with Scrapy
(``bench/scrapy_baseline.py``), at the same politeness (one request per host at a time, the same
delay between requests, no response-time factor since Scrapy has none) and the same page budget.
Both are measured the same way, from the synthetic web's own request log: page requests
(robots.txt and not-found probes excluded) divided by the time from the first to the last
request. The crawler's own figures (its summary) are reported beside, as is the CPU time of
each crawler's processes, and for ours its checkpoints from the Flink logs (the longest, those
over 10 s, those that expired): the loop's files are committed at checkpoints.

Usage: ``python bench/e2e_throughput.py --hosts 300 --runs 3 [--delay 0] [--budget 0]``.

``--baseline DIR`` adds a third crawler: our crawler from another checkout (for example
``git worktree add /tmp/before <commit>``), run the same way from that directory, to measure
what a change did side by side; ``--no-scrapy`` leaves Scrapy out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_REPOSITORY))
sys.path.insert(0, str(_REPOSITORY / "bench"))

from rounds import (  # noqa: E402
    add_web_options,
    alternate,
    check_scrapy,
    print_ratios,
    web_config,
    write_json,
)

from synthweb import RequestRecord, SyntheticWebServer, audit_log  # noqa: E402
from synthweb.audit import is_page_path  # noqa: E402
from synthweb.proctree import ProcessTreeMonitor  # noqa: E402

TOKEN = "pyflink-crawler"


def from_request_log(records: list[RequestRecord]) -> dict[str, Any]:
    """Pages, window and pages/s as the server saw them (robots.txt and the not-found probes
    excluded)."""
    pages = [r for r in records if is_page_path(r.path)]
    if not pages:
        return {"pages": 0, "window_s": 0.0, "pages_per_s": 0.0}
    window = max(r.end for r in pages) - min(r.start for r in pages)
    return {
        "pages": len(pages),
        "window_s": round(window, 2),
        "pages_per_s": round(len(pages) / window, 1) if window > 0 else 0.0,
    }


#: What the side-by-side runs change in our crawler's configuration: Scrapy has no
#: response-time factor.
SETTINGS = ("politeness.response_time_factor=0",)


#: Flink's log line of a completed checkpoint, and of one that timed out.
_COMPLETED = re.compile(r"Completed checkpoint \d+ .*checkpointDuration=(\d+) ms")
_EXPIRED = re.compile(r"Checkpoint \d+ of job \S+ expired before completing")


def checkpoint_figures(logs: Path) -> dict[str, Any]:
    """The checkpoints of a crawl, from the Flink logs in ``logs``: how many completed, the
    longest (seconds), how many took over 10 s, and how many expired. The loop's files are
    committed at checkpoints: while one takes long, no new URL reaches the crawl DB."""
    durations, expired = [], 0
    for path in sorted(logs.glob("*.log")):
        text = path.read_text(encoding="utf-8", errors="replace")
        durations += [int(ms) for ms in _COMPLETED.findall(text)]
        expired += len(_EXPIRED.findall(text))
    return {
        "checkpoints": len(durations),
        "checkpoint_max_s": round(max(durations, default=0) / 1000, 1),
        "checkpoints_over_10s": sum(ms > 10_000 for ms in durations),
        "checkpoints_expired": expired,
    }


def run_ours(
    proxy: str, seeds: list[str], args: argparse.Namespace, work: Path, checkout: Path,
    settings: tuple[str, ...] = SETTINGS,
) -> dict[str, Any]:
    """Crawl through ``proxy`` from ``seeds`` with our crawler of ``checkout`` (``args``: delay,
    budget, parallelism; ``settings``: ``section.key=value`` passed with ``--set``); its
    figures (wall and CPU time of every process, peak memory, its own summary's counts)."""
    seeds_file = work / "seeds.txt"
    seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
    out = work / "out"
    command = [
        sys.executable, "-m", "job", "crawl", "--seeds", str(seeds_file), "--out", str(out),
        "--proxy", proxy, "--delay", str(args.delay), "--idle-seconds", "6",
        "--max-pages", str(args.budget), "--parallelism", str(args.parallelism),
    ]
    for setting in settings:
        command += ["--set", setting]
    started = time.monotonic()
    # ``python -m job`` imports the packages of its working directory first; PYTHONPATH names
    # it too, so that the job's embedded Python imports that checkout's code whatever this
    # process's environment says.
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    process = subprocess.Popen(command, cwd=checkout, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    monitor = ProcessTreeMonitor(process.pid)
    output, _ = process.communicate(timeout=1800)
    usage = monitor.stop()
    if process.returncode != 0:
        raise RuntimeError(f"crawl failed ({process.returncode}):\n{output[-3000:]}")
    summary = json.loads((out / "summary.json").read_text())
    return {
        "wall_s": round(time.monotonic() - started, 1),
        "cpu_s": round(usage.cpu_seconds, 1),
        "peak_rss_mb": round(usage.peak_rss_bytes / 2**20),
        "own_pages_per_s": summary["pages_per_second"],
        "own_pages": summary["pages"],
        **checkpoint_figures(out / "logs" / "flink"),
    }


def one_round(args: argparse.Namespace, crawler: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"e2e-{crawler}-") as folder:
        work = Path(folder)
        config = web_config(args)
        with SyntheticWebServer(config, work / "requests.jsonl") as server:
            seeds = server.web.seeds()
            if crawler == "ours":
                figures = run_ours(server.proxy_url, seeds, args, work, _REPOSITORY)
            elif crawler == "baseline":
                figures = run_ours(server.proxy_url, seeds, args, work, args.baseline)
            else:
                from scrapy_baseline import run_scrapy  # Scrapy is needed only here

                result = run_scrapy(server.proxy_url, seeds, delay=args.delay,
                                    budget=args.budget)
                figures = {
                    "wall_s": round(result["wall_s"], 1),
                    "cpu_s": round(result["cpu_s"], 1),
                    "own_pages_per_s": round(result["pages_per_s"], 1),
                    "own_pages": result["pages"],
                }
            records = server.request_log()
            expected = server.web.expected_crawl(seeds, TOKEN)
        figures.update(from_request_log(records))
        figures["audit_problems"] = len(
            audit_log(records, expected, min_delay=args.delay, complete=False,
                      check_user_agent=crawler != "scrapy")
        )
        figures["cpu_ms_per_page"] = round(1000 * figures["cpu_s"] / max(1, figures["pages"]), 2)
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_web_options(parser, hosts=300)
    parser.add_argument("--budget", type=int, default=0, help="page budget (0: whole web)")
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--baseline", type=Path,
                        help="another checkout of the crawler, measured side by side")
    parser.add_argument("--no-scrapy", action="store_true", help="leave Scrapy out")
    args = parser.parse_args()
    check_scrapy(parser, args)

    crawlers = ["ours"] + (["baseline"] if args.baseline else [])
    crawlers += [] if args.no_scrapy else ["scrapy"]
    rows = alternate(crawlers, args.runs, lambda crawler: one_round(args, crawler))

    def median(crawler: str, key: str) -> float:
        return statistics.median(row[key] for row in rows[crawler])

    print()
    print("| crawler | pages | pages/s (server log) | own pages/s | CPU ms/page | wall s |"
          " audit problems |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for crawler in crawlers:
        print(f"| {crawler} | {median(crawler, 'pages'):.0f} | "
              f"{median(crawler, 'pages_per_s'):.1f} | {median(crawler, 'own_pages_per_s'):.1f} | "
              f"{median(crawler, 'cpu_ms_per_page'):.2f} | {median(crawler, 'wall_s'):.1f} | "
              f"{median(crawler, 'audit_problems'):.0f} |")
    ours_like = [crawler for crawler in crawlers if crawler != "scrapy"]
    print()
    print("| crawler | longest checkpoint s (median of runs) | checkpoints over 10 s |"
          " expired |")
    print("|---|---:|---:|---:|")
    for crawler in ours_like:
        runs = rows[crawler]
        print(f"| {crawler} | {median(crawler, 'checkpoint_max_s'):.1f} | "
              f"{' / '.join(str(row['checkpoints_over_10s']) for row in runs)} of "
              f"{' / '.join(str(row['checkpoints']) for row in runs)} | "
              f"{sum(row['checkpoints_expired'] for row in runs)} |")
    ratios = {other: print_ratios(rows, "ours", other) for other in crawlers[1:]}
    write_json(args.json, {"args": vars(args), "rows": rows, "ratios": ratios})


if __name__ == "__main__":
    main()
