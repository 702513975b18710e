"""pages/s at parallelism 1 and 2 on a standalone Flink cluster, on the same synthetic web.

Each round starts a fresh standalone cluster of the installed package (the one the cluster
tests use: ``tests/integration/cluster_fixture.py``) and a fresh synthetic web (same seed, so
the same web), submits the crawl with ``python -m job.submit`` (``flink run``) and lets it
crawl the whole web; the job is cancelled once the web's request log has not grown for
``--quiet`` seconds. Three layouts, alternated round by round:

* ``1 TM, p1``: one TaskManager with one slot, parallelism 1;
* ``1 TM, p2``: one TaskManager with two slots, parallelism 2 (both subtasks of a stage share
  the TaskManager's one embedded Python interpreter, as on the MiniCluster);
* ``2 TMs, p2``: two TaskManagers with one slot each, parallelism 2 (a Python interpreter per
  TaskManager).

pages/s comes from the synthetic web's own request log, as in ``bench/e2e_throughput.py``:
page requests (robots.txt excluded) over the time from the first to the last. Same politeness
for all: one request per host at a time, ``--delay`` between them, no response-time factor.

Usage: ``python bench/cluster_scaling.py --hosts 300 --runs 3``.
"""

from __future__ import annotations

import argparse
import statistics
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
from synthweb.proctree import ProcessTreeMonitor  # noqa: E402
from tests.integration.cluster_fixture import (  # noqa: E402
    standalone_cluster,
    submit,
    wait_for_state,
)

TOKEN = "pyflink-crawler"
#: layout -> (TaskManagers, slots per TaskManager, parallelism)
LAYOUTS = {
    "1 TM, p1": (1, 1, 1),
    "1 TM, p2": (1, 2, 2),
    "2 TMs, p2": (2, 1, 2),
}


def one_round(args: argparse.Namespace, layout: str) -> dict[str, Any]:
    taskmanagers, slots, parallelism = LAYOUTS[layout]
    with tempfile.TemporaryDirectory(prefix="cluster-scaling-") as folder:
        work = Path(folder)
        settings = {"taskmanager.numberOfTaskSlots": slots}
        with standalone_cluster(work, settings, min_slots=slots) as cluster:
            for _ in range(taskmanagers - 1):
                cluster.start_taskmanager()
            deadline = time.monotonic() + 60
            while cluster.get("/overview")["slots-total"] < taskmanagers * slots:
                if time.monotonic() > deadline:
                    raise RuntimeError("the second TaskManager did not register")
                time.sleep(0.5)
            config = web_config(args)
            with SyntheticWebServer(config, work / "requests.jsonl") as server:
                seeds = server.web.seeds()
                seeds_file = work / "seeds.txt"
                seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
                job_id = submit(
                    cluster, "--config", str(_REPOSITORY / "conf" / "crawler.yaml"),
                    "--out", str(work / "out"), "--proxy", server.proxy_url,
                    "--delay", str(args.delay), "--set", f"crawl.parallelism={parallelism}",
                    "--set", "politeness.response_time_factor=0", "--seeds", str(seeds_file),
                )
                wait_for_state(cluster, job_id, "RUNNING")
                monitors = [ProcessTreeMonitor(pid) for pid in cluster.taskmanager_pids()]
                _wait_until_quiet(server, args.quiet, args.timeout)
                cpu_s = sum(monitor.stop().cpu_seconds for monitor in monitors)
                cancelled = cluster.flink("cancel", job_id)
                if cancelled.returncode != 0:
                    raise RuntimeError(f"flink cancel failed: {cancelled.stderr[-2000:]}")
                records = server.request_log()
                expected = server.web.expected_crawl(seeds, TOKEN)
    figures = from_request_log(records)
    figures["taskmanager_cpu_s"] = round(cpu_s, 1)
    figures["audit_problems"] = len(audit_log(records, expected, min_delay=args.delay))
    print(f"{layout}: {figures}", flush=True)
    return figures


def _wait_until_quiet(server: SyntheticWebServer, quiet: float, timeout: float) -> None:
    """Until the web's request log has not grown for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = len(server.request_log())
        if count != seen:
            seen, since = count, time.monotonic()
        elif seen > 0 and time.monotonic() - since >= quiet:
            return
        time.sleep(1.0)
    raise RuntimeError(f"the crawl did not end in {timeout} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_web_options(parser, hosts=300)
    parser.add_argument("--quiet", type=float, default=10.0,
                        help="seconds without a request that end a round")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=list(LAYOUTS))
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()

    rows = alternate(args.layouts, args.runs, lambda layout: one_round(args, layout))

    def median(layout: str, key: str) -> float:
        return statistics.median(row[key] for row in rows[layout])

    print()
    print("| layout | pages | pages/s (server log), median (runs) | TaskManager CPU s |"
          " audit problems |")
    print("|---|---:|---:|---:|---:|")
    for layout in args.layouts:
        runs = ", ".join(f"{row['pages_per_s']:.1f}" for row in rows[layout])
        print(f"| {layout} | {median(layout, 'pages'):.0f} | "
              f"{median(layout, 'pages_per_s'):.1f} ({runs}) | "
              f"{median(layout, 'taskmanager_cpu_s'):.1f} | "
              f"{median(layout, 'audit_problems'):.0f} |")
    base = args.layouts[0]
    ratios = {layout: print_ratios(rows, layout, base) for layout in args.layouts[1:]}
    write_json(args.json, {"args": vars(args), "rows": rows, "ratios": ratios})


if __name__ == "__main__":
    main()
