"""The hostile web against the plain one: pages/s and peak memory, side by side in one run.

Each round crawls the same synthetic web twice with our crawler (``python -m job crawl``, the
full pipeline on the local MiniCluster), once plain and once with the hostile profile on
(Retry-After answers, trickling and broken bodies, a 1 GiB gzip bomb, a 20 MiB page, huge
headers, redirect loops, private addresses, robots.txt that stalls or redirects), the order
alternating between rounds. Both reach the web directly (``fetch.connect_to``, no proxy, the
private-address guard on), at the same politeness.

Figures, from the synthetic web's request log: page requests to the normal hosts per second
(first to last such request: does the hostile part slow the rest of the crawl down?), all page
requests per second over the whole crawl, and the wall time to idle (the hostile hosts' timeouts
and back-offs make the tail). From ``/proc``: the peak resident memory of the crawl's whole
process tree (client, JVM, embedded Python) and its CPU time. Every crawl is audited against
the ground truth (politeness, robots.txt, Retry-After, private addresses).

Usage: ``python bench/hostile_web.py --hosts 100 --runs 3``.
"""

from __future__ import annotations

import argparse
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

from rounds import add_web_options, alternate, print_ratios, web_config, write_json  # noqa: E402

from synthweb import (  # noqa: E402
    RequestRecord,
    SyntheticWebServer,
    audit_hostile,
    audit_log,
)
from synthweb.hostile import is_hostile_host, is_private_host  # noqa: E402
from synthweb.proctree import ProcessTreeMonitor  # noqa: E402

TOKEN = "pyflink-crawler"


def _rate(records: list[RequestRecord]) -> tuple[int, float]:
    if not records:
        return 0, 0.0
    window = max(r.end for r in records) - min(r.start for r in records)
    return len(records), round(len(records) / window, 1) if window > 0 else 0.0


def one_round(args: argparse.Namespace, hostile: bool) -> dict[str, Any]:
    config = web_config(args)
    if hostile:
        config = config.with_hostile_profile(
            hostile_trickle_seconds=args.trickle_seconds,
            hostile_robots_stall_seconds=args.stall_seconds,
        )
    with tempfile.TemporaryDirectory(prefix="hostile-bench-") as folder:
        work = Path(folder)
        with SyntheticWebServer(config, work / "requests.jsonl") as server:
            seeds = server.web.seeds()
            expected = server.web.expected_crawl(seeds, TOKEN)
            names = set(expected.robots) | set(expected.hostile.robots if hostile else ())
            port = server.proxy_url.rsplit(":", 1)[1]
            (work / "seeds.txt").write_text("\n".join(seeds) + "\n", encoding="utf-8")
            command = [
                sys.executable, "-m", "job", "crawl", "--seeds", str(work / "seeds.txt"),
                "--out", str(work / "out"), "--delay", str(args.delay), "--idle-seconds", "6",
                "--set", "fetch.connect_to=" + ",".join(
                    f"{name}:80:127.0.0.1:{port}" for name in sorted(names)
                ),
                "--set", f"fetch.total_timeout_seconds={args.total_timeout}",
            ]
            started = time.monotonic()
            process = subprocess.Popen(command, cwd=_REPOSITORY, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
            monitor = ProcessTreeMonitor(process.pid, interval=0.2)
            output, _ = process.communicate(timeout=3600)
            usage = monitor.stop()
            if process.returncode != 0:
                raise RuntimeError(f"crawl failed ({process.returncode}):\n{output[-3000:]}")
            wall = time.monotonic() - started
            records = server.request_log()
    pages = [r for r in records if r.path != "/robots.txt"]
    normal = [r for r in pages if not is_hostile_host(r.host) and not is_private_host(r.host)]
    problems = audit_log(records, expected, min_delay=args.delay, response_time_factor=2.0)
    if hostile:
        problems += audit_hostile(records, expected)
    all_pages, all_rate = _rate(pages)
    normal_pages, normal_rate = _rate(normal)
    return {
        "pages": all_pages,
        "pages_per_s": all_rate,
        "normal_pages": normal_pages,
        "normal_pages_per_s": normal_rate,
        "wall_s": round(wall, 1),
        "cpu_s": usage.cpu_seconds,
        "peak_rss_mb": round(usage.peak_rss_bytes / 2**20),
        "audit_problems": len(problems),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_web_options(parser, hosts=100)
    parser.add_argument("--total-timeout", type=float, default=10.0)
    parser.add_argument("--trickle-seconds", type=float, default=30.0)
    parser.add_argument("--stall-seconds", type=float, default=60.0)
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()

    rows = alternate(["plain", "hostile"], args.runs,
                     lambda kind: one_round(args, kind == "hostile"))

    def median(kind: str, key: str) -> float:
        return statistics.median(row[key] for row in rows[kind])

    print()
    print("| web | pages | normal-host pages/s | all pages/s | wall s | CPU s | peak RSS MiB |"
          " audit problems |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind in rows:
        print(f"| {kind} | {median(kind, 'pages'):.0f} | {median(kind, 'normal_pages_per_s'):.1f}"
              f" | {median(kind, 'pages_per_s'):.1f} | {median(kind, 'wall_s'):.1f} | "
              f"{median(kind, 'cpu_s'):.1f} | {median(kind, 'peak_rss_mb'):.0f} | "
              f"{median(kind, 'audit_problems'):.0f} |")
    for key in ("normal_pages_per_s", "peak_rss_mb"):
        print_ratios(rows, "hostile", "plain", key, label=key)
    write_json(args.json, {"args": vars(args), "rows": rows})


if __name__ == "__main__":
    main()
