"""The local command at parallelism 1 and N: pages/s, CPU a page, and the cores each used.

``pyflink-crawler crawl --parallelism N`` runs on the MiniCluster at 1 (one JVM, one embedded
Python interpreter) and on a standalone cluster of this machine above it (a JobManager and N
TaskManagers, each with its own interpreter: ``job/local_cluster.py``). Each round starts a
fresh synthetic web (same seed, so the same web) and crawls it whole with ``python -m job
crawl`` at each parallelism, alternated round by round, no delay and no response-time factor
(as ``bench/e2e_throughput.py``).

For each run: pages/s from the synthetic web's own request log (page requests over the time from
the first to the last); the start (from the command to the first request); the CPU seconds of
every process of the run (the launcher, its JVM, the JobManager, each TaskManager; sampled from
``/proc``) and per page; the cores the run kept busy while it fetched (the tree's CPU seconds
between the first and the last page request over that span) and each TaskManager's share of
them.

Usage: ``python bench/local_parallelism.py --hosts 300 --runs 3 [--parallelisms 1 2]``.
"""

from __future__ import annotations

import argparse
import os
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

from e2e_throughput import from_request_log  # noqa: E402
from rounds import add_web_options, alternate, print_ratios, web_config, write_json  # noqa: E402

from synthweb import SyntheticWebServer, audit_log  # noqa: E402
from synthweb.audit import is_page_path  # noqa: E402
from synthweb.proctree import ProcessTreeMonitor, TreeUsage  # noqa: E402

TOKEN = "pyflink-crawler"
#: Command-line marks of the processes of a run (the rest: the launcher's Python, scripts).
_ROLES = (
    ("taskmanager", "TaskManagerRunner"),
    ("jobmanager", "StandaloneSessionClusterEntrypoint"),
    ("launcher JVM", "org.apache.flink"),
)


def _role(command: str) -> str:
    for role, mark in _ROLES:
        if mark in command:
            return role
    return "launcher Python" if " -m job " in f"{command} " else "other"


def cpu_by_role(usage: TreeUsage) -> dict[str, Any]:
    """CPU seconds of the run's processes by role; the TaskManagers one by one."""
    roles: dict[str, Any] = {"taskmanagers": []}
    for _, command, cpu in usage.cpu_by_process:
        role = _role(command)
        if role == "taskmanager":
            roles["taskmanagers"].append(round(cpu, 1))
        else:
            roles[role] = round(roles.get(role, 0.0) + cpu, 1)
    roles["taskmanagers"].sort(reverse=True)
    return roles


def one_round(args: argparse.Namespace, parallelism: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"local-p{parallelism}-") as folder:
        work = Path(folder)
        config = web_config(args)
        with SyntheticWebServer(config, work / "requests.jsonl") as server:
            seeds = server.web.seeds()
            seeds_file = work / "seeds.txt"
            seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
            command = [
                sys.executable, "-m", "job", "crawl", "--seeds", str(seeds_file),
                "--out", str(work / "out"), "--proxy", server.proxy_url,
                "--delay", str(args.delay), "--idle-seconds", "6",
                "--max-pages", str(args.budget), "--parallelism", str(parallelism),
                "--set", "politeness.response_time_factor=0",
            ]
            started = time.time()
            process = subprocess.Popen(command, cwd=_REPOSITORY, env=dict(os.environ),
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True)
            monitor = ProcessTreeMonitor(process.pid, interval=0.5)
            output, _ = process.communicate(timeout=1800)
            usage = monitor.stop()
            if process.returncode != 0:
                raise RuntimeError(f"crawl failed ({process.returncode}):\n{output[-3000:]}")
            records = server.request_log()
            expected = server.web.expected_crawl(seeds, TOKEN)
    figures: dict[str, Any] = from_request_log(records)
    pages = [r for r in records if is_page_path(r.path)]
    first = min(r.start for r in records)
    window_start, window_end = min(r.start for r in pages), max(r.end for r in pages)
    busy = usage.cpu_between(window_start, window_end)
    roles = cpu_by_role(usage)
    figures.update({
        "start_s": round(first - started, 1),
        "wall_s": round(time.time() - started, 1),
        "cpu_s": round(usage.cpu_seconds, 1),
        "cpu_ms_per_page": round(1000 * usage.cpu_seconds / max(1, len(pages)), 2),
        "cores_busy_fetching": round(busy / max(1e-9, window_end - window_start), 2),
        "cpu_by_role": roles,
        "peak_rss_mb": round(usage.peak_rss_bytes / 2**20),
        "audit_problems": len(audit_log(records, expected, min_delay=args.delay,
                                        complete=False)),
    })
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_web_options(parser, hosts=300)
    parser.add_argument("--budget", type=int, default=0, help="page budget (0: whole web)")
    parser.add_argument("--parallelisms", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()

    names = [f"p{parallelism}" for parallelism in args.parallelisms]
    rows = alternate(names, args.runs, lambda name: one_round(args, int(name[1:])))

    def median(name: str, key: str) -> float:
        return statistics.median(row[key] for row in rows[name])

    print()
    print("| parallelism | pages | pages/s (server log) | start s | CPU ms/page | cores busy "
          "fetching | CPU s by TaskManager (median run) | wall s | audit problems |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for name in names:
        middle = sorted(rows[name], key=lambda row: row["pages_per_s"])[len(rows[name]) // 2]
        split = middle["cpu_by_role"]["taskmanagers"] or [middle["cpu_by_role"].get(
            "launcher JVM", 0.0)]
        print(f"| {name[1:]} | {median(name, 'pages'):.0f} | {median(name, 'pages_per_s'):.1f} "
              f"| {median(name, 'start_s'):.1f} | {median(name, 'cpu_ms_per_page'):.2f} | "
              f"{median(name, 'cores_busy_fetching'):.2f} | "
              f"{', '.join(f'{cpu:.1f}' for cpu in split)} | {median(name, 'wall_s'):.1f} | "
              f"{median(name, 'audit_problems'):.0f} |")
    ratios = {}
    for name in names[1:]:
        ratios[name] = {
            "pages_per_s": print_ratios(rows, name, names[0]),
            "cpu_ms_per_page": print_ratios(rows, name, names[0], "cpu_ms_per_page",
                                            "CPU a page"),
        }
    write_json(args.json, {"args": vars(args), "rows": rows, "ratios": ratios,
                           "machine": {"cpus": os.cpu_count()}})


if __name__ == "__main__":
    main()
