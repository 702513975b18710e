"""Near-duplicate lookups: the permuted-table simhash index against a vectorised linear scan.

    python bench/simhash_index.py --sizes 1000000 10000000 --queries 2000

For each size N: N random 64-bit fingerprints (a tenth of them near-duplicates of others, 1-3
bits flipped) are added one at a time (amortised add cost), then queries (half near a stored
fingerprint, half random) are answered by the index and, on a sample, by a NumPy scan of all
N fingerprints (the same answers, checked). Also the cost of fingerprinting a page of text.
Figures: medians of ``--runs`` rounds, microseconds.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crawl.content.simhash import SimhashIndex, _popcount64, simhash, text_features  # noqa: E402


def _fingerprints(n: int, rng: np.random.Generator) -> np.ndarray:
    values = rng.integers(0, 2**63, size=n, dtype=np.int64).astype(np.uint64) << np.uint64(1)
    values |= rng.integers(0, 2, size=n, dtype=np.int64).astype(np.uint64)
    near = rng.choice(n, size=n // 10, replace=False)
    source = rng.choice(n, size=n // 10)
    flips = np.zeros(n // 10, dtype=np.uint64)
    for _ in range(3):
        bits = rng.integers(0, 64, size=n // 10).astype(np.uint64)
        flips ^= np.uint64(1) << bits
    values[near] = values[source] ^ flips
    return values


def one_round(n: int, queries: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    stored = _fingerprints(n, rng)
    index = SimhashIndex(k=3, blocks=4)
    began = time.perf_counter()
    add = index.add
    for item, fp in enumerate(stored.tolist()):
        add(fp, item)
    add_us = (time.perf_counter() - began) / n * 1e6
    picks = rng.choice(n, size=queries)
    flips = [random.Random(int(i)).sample(range(64), 2) for i in picks]
    qs = [
        int(stored[i]) ^ (1 << a) ^ (1 << b) if j % 2 == 0 else int(rng.integers(0, 2**63))
        for j, (i, (a, b)) in enumerate(zip(picks, flips, strict=True))
    ]
    began = time.perf_counter()
    answers = [index.near(q) for q in qs]
    query_us = (time.perf_counter() - began) / queries * 1e6
    sample = qs[:20]
    began = time.perf_counter()
    for q, answer in zip(sample, answers, strict=False):
        distances = _popcount64(stored ^ np.uint64(q))
        hits = np.flatnonzero(distances <= 3)
        assert sorted(hits.tolist()) == sorted(item for item, _ in answer)
    scan_us = (time.perf_counter() - began) / len(sample) * 1e6
    return {"add_us": add_us, "query_us": query_us, "scan_us": scan_us,
            "found_per_query": sum(map(len, answers)) / queries,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def fingerprint_cost(runs: int) -> float:
    words = [f"w{i % 5000}" for i in range(1000)]
    rng = random.Random(1)
    text = " ".join(rng.choice(words) for _ in range(800))  # about a 5 KB article
    began = time.perf_counter()
    for _ in range(runs):
        simhash(text_features(text))
    return (time.perf_counter() - began) / runs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"simhash of an 800-word page: {fingerprint_cost(200):.0f} us", flush=True)
    print("| fingerprints | add us (amortised) | query us (index) | query us (NumPy scan) | "
          "scan / index | found per query | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        rounds = [one_round(n, args.queries, seed) for seed in range(args.runs)]

        def med(key: str, rounds: list = rounds) -> float:
            return statistics.median(r[key] for r in rounds)

        print(f"| {n:,} | {med('add_us'):.2f} | {med('query_us'):.1f} | {med('scan_us'):.0f} | "
              f"{med('scan_us') / med('query_us'):.0f}x | {med('found_per_query'):.2f} | "
              f"{med('peak_rss_mb'):.0f} |", flush=True)


if __name__ == "__main__":
    main()
