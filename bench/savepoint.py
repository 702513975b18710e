"""Savepoints of a crawl that knows N URLs: the time to take one, its size, the time to resume.

Seeds a crawl with N URLs on the ``--hosts`` hosts of a synthetic web (paths it answers with
404) and a page budget of one page, so that the crawl DB records every URL and the crawl stops
at its budget with a savepoint, as a user's crawl does; then
resumes it (the budget still used up, so it stops again at once). From the crawler's own
output, timed line by line:

- **take**: from "stopping" to "crawl finished" (the stop with a savepoint, draining every
  operator, and the summary);
- **size**: the savepoint directory on disk; the crawl DB's files (``out/crawldb``) are
  referenced from it, not copied, and are listed apart;
- **resume**: from the start of ``--resume`` to its first progress line (JVM, job graph,
  state restored, tasks running), against the same for a crawl of 1,000 URLs.

Usage: ``python bench/savepoint.py [--sizes 1000000 10000000] [--hosts 10000]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synthweb import SyntheticWebServer, WebConfig  # noqa: E402


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _run(arguments: list[str]) -> dict[str, float]:
    """Run the crawler; seconds from its start to the lines that matter."""
    began = time.monotonic()
    marks: dict[str, float] = {}
    process = subprocess.Popen(
        [sys.executable, "-m", "job", "crawl", *arguments], cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    assert process.stdout is not None
    tail = []
    for line in process.stdout:
        now = time.monotonic() - began
        tail = (tail + [line])[-40:]
        if line.startswith("[") and "first progress" not in marks:
            marks["first progress"] = now
        elif line.startswith("stopping"):
            marks["stopping"] = now
        elif line.startswith("crawl finished"):
            marks["finished"] = now
        elif line.strip().startswith("URLs known"):
            marks["known"] = float(line.split()[-1])
    if process.wait() != 0:
        raise RuntimeError("crawl failed:\n" + "".join(tail))
    marks["exit"] = time.monotonic() - began
    return marks


def measure(size: int, hosts: int, folder: Path, proxy: str) -> dict[str, float]:
    seeds = folder / "seeds.txt"
    with seeds.open("w") as out:
        for i in range(size):
            out.write(f"http://h{i % hosts}.synth.test/bench/{i // hosts}\n")
    crawl = ["--out", str(folder / "out"), "--proxy", proxy, "--max-pages", "1",
             "--idle-seconds", "0"]
    first = _run([*crawl, "--seeds", str(seeds)])
    savepoints = sorted((folder / "out" / "savepoints").iterdir())
    result = {
        "known": first.get("known", 0.0),
        "ingest_s": first["stopping"],
        "take_s": first["finished"] - first["stopping"],
        "savepoint_bytes": _size(savepoints[-1]),
        "crawldb_bytes": _size(folder / "out" / "crawldb"),
    }
    resumed = _run([*crawl, "--resume"])
    result["resume_s"] = resumed["first progress"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--hosts", type=int, default=10_000)
    args = parser.parse_args()
    print("| URLs | known | ingest s | take s | savepoint | crawl DB files | resume s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    web = WebConfig(seed=1, hosts=args.hosts, pages_per_host=2, showcase=False)
    with SyntheticWebServer(web) as server:
        for size in [1000, *args.sizes]:
            folder = Path(tempfile.mkdtemp(prefix="bench-savepoint-"))
            try:
                r = measure(size, min(args.hosts, size), folder, server.proxy_url)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            savepoint_mib, crawldb_mib = r["savepoint_bytes"] / 2**20, r["crawldb_bytes"] / 2**20
            print(f"| {size:,} | {int(r['known']):,} | {r['ingest_s']:.1f} | {r['take_s']:.1f} | "
                  f"{savepoint_mib:.1f} MiB | {crawldb_mib:.0f} MiB | {r['resume_s']:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
