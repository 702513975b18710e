"""What releases of URLs cost a crawl DB partition in a continuous crawl, with and without the
due window (``priority.release_window``, drum/due_window.py).

A partition of N URLs, all fetched once, their next fetch times spread evenly over the next
N / ``--due-rate`` seconds (so ``--due-rate`` URLs come due each second, as in a steady
continuous crawl), then ``--seconds`` simulated seconds, each: the outcomes of the URLs the
previous release handed out (fetched, due again N / due-rate seconds later), ``--links``
links found (nine in ten of known URLs, one in ten new), and a merge with a release, as the
crawl DB's flush timer makes it (``crawl/crawldb/partition.py``: ``release_batch`` 1000,
``host_window`` 16). Two DRUMs get the same operations side by side, one releasing from its due
window (``--window`` records), one passing over its runs at every release, and every release of the
two is checked to select the same URLs.

Usage: ``python bench/release_cost.py [--sizes 100000 1000000] [--seconds 120]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drum import (  # noqa: E402
    ArchivePolicy,
    Drum,
    DrumConfig,
    DrumStatus,
    DuePolicy,
    discoveries,
    outcomes,
)

T0 = 1_700_000_000_000


def config(window: int) -> DrumConfig:
    return DrumConfig(
        buffer_ops=1 << 20, block_records=4096, fsync=False,
        due=DuePolicy(max_urls=1000, per_host=16, lease_ms=0, mark_queued=True, depth_weight=0.1,
                      refresh_share=0.8, window_urls=window),
        archive=ArchivePolicy(archive_done=True), write_manifest_files=False,
    )


def fill(drums: list[Drum], keys: np.ndarray, hosts: np.ndarray, period_ms: int,
         rng: np.random.Generator) -> None:
    """Every URL discovered and fetched, due again within ``period_ms``."""
    chunk = 200_000
    for start in range(0, len(keys), chunk):
        part, part_hosts = keys[start:start + chunk], hosts[start:start + chunk]
        n = len(part)
        found = discoveries(n, now_ms=T0, score=rng.random(n, dtype=np.float32) * 5,
                            depth=rng.integers(0, 10, n), host=part_hosts)
        fetched = outcomes(n, status=DrumStatus.FETCHED, at_ms=T0 + 1, host=part_hosts,
                           next_fetch_ms=T0 + 1000 + rng.integers(0, period_ms, n))
        fetched["recrawl_s"] = T0 // 1000
        fetched["interval_s"] = period_ms // 1000
        payloads = [b"http://h%d/%d" % (h, start + i) for i, h in enumerate(part_hosts.tolist())]
        for drum in drums:
            drum.check_update(part, found.copy(), payloads, now_ms=T0)
            drum.update(part, fetched.copy(), None, now_ms=T0 + 1)
            drum.merge(now_ms=T0 + 2)
    for drum in drums:
        drum.merge(now_ms=T0 + 3, major=True)


def run(size: int, args: argparse.Namespace) -> dict[str, list[float]]:
    rng = np.random.default_rng(size)
    keys = rng.integers(1, 2**63, size, dtype=np.uint64)
    hosts = rng.integers(1, args.hosts + 1, size).astype(np.uint32)
    period_ms = int(size / args.due_rate * 1000)
    times: dict[str, list[float]] = {"window": [], "pass": []}
    with tempfile.TemporaryDirectory() as folder:
        windowed = Drum.create(f"{folder}/window", config(args.window))
        passing = Drum.create(f"{folder}/pass", config(0))
        drums = {"window": windowed, "pass": passing}
        fill(list(drums.values()), keys, hosts, period_ms, rng)
        for drum in drums.values():
            drum.timings.clear()
        released = np.empty(0, dtype=np.uint64)
        released_hosts = np.empty(0, dtype=np.uint32)
        passes = 0
        for second in range(args.seconds):
            now = T0 + 5_000 + 1000 * second
            n = len(released)
            done = outcomes(n, status=DrumStatus.FETCHED, at_ms=now - 1, host=released_hosts,
                            next_fetch_ms=now + period_ms + rng.integers(-500, 500, n))
            done["recrawl_s"] = (now - 1) // 1000
            done["interval_s"] = period_ms // 1000
            known = rng.integers(0, size, args.links - args.links // 10)
            new = rng.integers(1, 2**63, args.links // 10, dtype=np.uint64)
            link_keys = np.concatenate((keys[known], new))
            link_hosts = np.concatenate((hosts[known], rng.integers(
                1, args.hosts + 1, len(new)).astype(np.uint32)))
            found = discoveries(len(link_keys), now_ms=now, host=link_hosts, score=0.1)
            payloads = [b"http://n/%d" % i for i in range(len(link_keys))]
            selections = {}
            for name, drum in drums.items():
                drum.update(released, done.copy(), None, now_ms=now)
                drum.check_update(link_keys, found.copy(), payloads, now_ms=now)
                began = time.perf_counter()
                result = drum.merge(now_ms=now, select=True)
                times[name].append(time.perf_counter() - began)
                selections[name] = result.due
            a, b = selections["window"], selections["pass"]
            assert a.keys.tolist() == b.keys.tolist(), "the two selections differ"
            passes += not a.from_window
            released, released_hosts = a.keys, a.values["host"]
        stats = windowed.window_stats
        if args.timings:
            for name, drum in drums.items():
                phases = sorted(drum.timings.items(), key=lambda kv: -kv[1])[:8]
                print(f"  {name}: " + ", ".join(f"{k} {v / args.seconds * 1000:.1f} ms"
                                             for k, v in phases), file=sys.stderr)
        print(f"  {size:,} URLs: {passes} of {args.seconds} releases passed over the runs "
              f"(window: {stats}), {len(released)} released by the last", file=sys.stderr)
        windowed.close()
        passing.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=120)
    parser.add_argument("--due-rate", type=float, default=200.0)
    parser.add_argument("--links", type=int, default=1000)
    parser.add_argument("--window", type=int, default=20_000)
    parser.add_argument("--timings", action="store_true",
                        help="print the merge phases' time per simulated second")
    args = parser.parse_args()
    print("| URLs in the partition | merge with release: window, median | pass, median "
          "| ratio | window, mean | pass, mean |", flush=True)
    print("|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        times = run(size, args)
        window, passing = times["window"], times["pass"]
        w_med, p_med = statistics.median(window), statistics.median(passing)
        print(f"| {size:,} | {w_med * 1000:.1f} ms | {p_med * 1000:.1f} ms | "
              f"{p_med / w_med:.1f}x | {statistics.mean(window) * 1000:.1f} ms | "
              f"{statistics.mean(passing) * 1000:.1f} ms |", flush=True)


if __name__ == "__main__":
    main()
