"""What a due selection costs a pass over the DRUM, with the crawl DB's budgets as its limits.

A pass offers the DRUM's records to :class:`drum.selection.DueSelector` a chunk at a time (4,096
records, as :func:`drum.fold.merged_chunks` yields them); the selector keeps the best
``max_urls`` within ``per_host`` and the release limits, asking the limits once per host, group
and (host, shape) pair. Here: N new (UNFETCHED) records on ``--hosts`` hosts with
``--shapes`` shapes each, random scores; limits answered at once (a group of hosts per 6 hosts,
limits that hold some URLs back), so what is measured is the selector's own CPU time.

``--baseline DIR`` measures another checkout the same way, alternating with this one (the
figures of each round and the ratio of their medians).
Usage: ``python bench/due_selection.py [--records 50000 1000000] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

_CHUNK = 4096


def measure(records: int, hosts: int, shapes: int, max_urls: int) -> dict[str, float]:
    """CPU seconds of one selection over ``records`` records, in this process."""
    from drum import DrumStatus, DuePolicy, neutral
    from drum.selection import DueSelector

    class Limits:
        min_rank = float("-inf")
        rank_edges = None

        def groups(self, host_hashes: np.ndarray) -> np.ndarray:
            return host_hashes.astype(np.int64) // 6

        def group_limits(self, groups: np.ndarray) -> np.ndarray:
            return np.full(len(groups), 60, dtype=np.int64)

        def shape_limits(self, host_hashes: np.ndarray, shape_hashes: np.ndarray) -> np.ndarray:
            return (shape_hashes.astype(np.int64) % 5) * 4

    rng = np.random.default_rng(1)
    values = neutral(records)
    values["status"] = DrumStatus.UNFETCHED
    values["host"] = rng.integers(0, hosts, records).astype(np.uint32)
    values["shape"] = rng.integers(0, shapes, records).astype(np.uint32)
    values["score"] = rng.random(records).astype(values["score"].dtype)
    values["next_fetch_ms"] = 0
    keys = np.cumsum(rng.integers(1, 2**20, records)).astype(np.uint64)
    policy = DuePolicy(max_urls=max_urls, per_host=16, lease_ms=0, mark_queued=True)
    selector = DueSelector(policy, Limits())
    began = time.thread_time()
    for start in range(0, records, _CHUNK):
        selector.offer_due(keys[start:start + _CHUNK], values[start:start + _CHUNK], 1)
    selected, _ = selector.result()
    spent = time.thread_time() - began
    return {"cpu_s": spent, "selected": len(selected),
            "held": list(selector.limits.held()) if selector.limits is not None else []}


def _run(checkout: Path, args: argparse.Namespace, records: int) -> dict[str, float]:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--records",
               str(records), "--hosts", str(args.hosts), "--shapes", str(args.shapes),
               "--max-urls", str(args.max_urls)]
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    output = subprocess.run(command, env=env, cwd=checkout, check=True, capture_output=True,
                            text=True).stdout
    return json.loads(output.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[50_000, 1_000_000])
    parser.add_argument("--hosts", type=int, default=3000)
    parser.add_argument("--shapes", type=int, default=20)
    parser.add_argument("--max-urls", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another checkout, measured alike")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.records[0], args.hosts, args.shapes, args.max_urls)))
        return
    here = Path(__file__).resolve().parents[1]
    checkouts = {"this": here, **({"baseline": args.baseline} if args.baseline else {})}
    print("| records | checkout | CPU ms per round | median | selected | held (group, shape) |")
    print("|---:|---|---|---:|---:|---|")
    for records in args.records:
        rounds: dict[str, list[dict]] = {name: [] for name in checkouts}
        for _ in range(args.rounds):
            for name, checkout in checkouts.items():
                rounds[name].append(_run(checkout, args, records))
        medians = {}
        for name, results in rounds.items():
            cpu = [1000 * r["cpu_s"] for r in results]
            medians[name] = statistics.median(cpu)
            print(f"| {records:,} | {name} | {', '.join(f'{c:.0f}' for c in cpu)} | "
                  f"{medians[name]:.0f} | {results[0]['selected']:,} | {results[0]['held']} |")
        if "baseline" in medians:
            ratio = medians["this"] / medians["baseline"]
            print(f"| {records:,} | this / baseline | | {ratio:.2f} | | |")


if __name__ == "__main__":
    main()
