"""How fast a crawl starts: from the command to the job running, the first request, the first
page and the hundredth, and the pages fetched in the first seconds.

Each round starts a fresh synthetic web (``--hosts``, every host a seed, ``--delay`` politeness)
and runs ``python -m job crawl`` on it from a checkout, with a page budget of ``--budget``.
Times are measured from the moment the command is started: the job submitted (the launcher's
``crawling ... Flink job`` line, read as it is printed), and from the web's own request log the
first request (a robots.txt), the first page, the hundredth page, and how many pages were
fetched in the first ``--window`` seconds after the first request. With ``--baseline DIR`` a
second checkout is measured in the same rounds, alternated (A B B A ...), and the ratios of the
medians are printed.

At ``--parallelism`` N above 1 the crawl runs on the local cluster the command starts (a
JobManager and N TaskManagers), whose start is then part of every figure.

Usage: ``python bench/start_time.py --runs 5 [--parallelism 2] [--baseline /other/checkout]``.
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

from rounds import alternate  # noqa: E402

from synthweb import SyntheticWebServer, WebConfig  # noqa: E402

FIGURES = ("submitted_s", "first_request_s", "first_page_s", "page_100_s", "pages_in_window")


def one_crawl(args: argparse.Namespace, checkout: Path) -> dict[str, Any]:
    """One crawl of a fresh web from ``checkout``; its start figures."""
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        config = WebConfig(seed=3, hosts=args.hosts)
        with SyntheticWebServer(config, work / "requests.jsonl") as server:
            seeds = work / "seeds.txt"
            seeds.write_text("\n".join(server.web.seeds(args.hosts)) + "\n", encoding="utf-8")
            command = [
                sys.executable, "-m", "job", "crawl", "--seeds", str(seeds),
                "--out", str(work / "out"), "--proxy", server.proxy_url,
                "--delay", str(args.delay), "--idle-seconds", "6",
                "--max-pages", str(args.budget), "--parallelism", str(args.parallelism),
            ]
            env = {**os.environ, "PYTHONPATH": str(checkout)}
            started = time.time()
            process = subprocess.Popen(command, cwd=checkout, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
            submitted = None
            output = []
            assert process.stdout is not None
            for line in process.stdout:
                output.append(line)
                if submitted is None and line.startswith("crawling "):
                    submitted = time.time()
            if process.wait() != 0 or submitted is None:
                raise RuntimeError(f"crawl failed:\n{''.join(output)[-3000:]}")
            records = sorted(server.request_log(), key=lambda record: record.start)
    first = records[0].start
    pages = [record.start for record in records if record.path != "/robots.txt"]
    return {
        "submitted_s": submitted - started,
        "first_request_s": first - started,
        "first_page_s": pages[0] - started,
        "page_100_s": pages[99] - started if len(pages) >= 100 else float("nan"),
        "pages_in_window": sum(1 for start in pages if start - first <= args.window),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--window", type=float, default=5.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--parallelism", type=int, default=1,
                        help="the crawl's parallelism (above 1: on the local cluster)")
    parser.add_argument("--baseline", type=Path, help="another checkout, measured alongside")
    args = parser.parse_args()
    checkouts = {"ours": _REPOSITORY}
    if args.baseline:
        checkouts["baseline"] = args.baseline.resolve()
    results = alternate(list(checkouts), args.runs,
                        lambda name: one_crawl(args, checkouts[name]))
    print()
    print("| checkout | " + " | ".join(FIGURES) + " |")
    print("|---|" + "---:|" * len(FIGURES))
    medians = {name: {key: statistics.median(r[key] for r in runs) for key in FIGURES}
               for name, runs in results.items()}
    for name, values in medians.items():
        print(f"| {name} (median of {args.runs}) | "
              + " | ".join(f"{values[key]:.1f}" for key in FIGURES) + " |")
    if "baseline" in medians:
        print("\nours / baseline (medians): " + ", ".join(
            f"{key} {medians['ours'][key] / medians['baseline'][key]:.2f}" for key in FIGURES))


if __name__ == "__main__":
    main()
