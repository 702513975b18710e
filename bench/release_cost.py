"""What one release of URLs costs a crawl DB partition as it grows (priority's due selection).

A release is a major merge of the partition's DRUM with due selection (``crawl/crawldb.py``):
one pass over every record, the best-ranked UNFETCHED URLs selected (at most
``priority.release_batch``, at most ``host_window`` a host) and marked QUEUED. This fills a
DRUM with N URLs on ``--hosts`` hosts (a tenth of them already fetched), then times releases
that each follow a small batch of new URLs and outcomes, as in a crawl.
Usage: ``python bench/release_cost.py [--sizes 100000 1000000] [--releases 5]``.
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


def fill(drum: Drum, size: int, hosts: int, rng: np.random.Generator) -> None:
    chunk = 200_000
    for start in range(0, size, chunk):
        n = min(chunk, size - start)
        keys = rng.integers(1, 2**63, n, dtype=np.uint64)
        values = discoveries(n, now_ms=T0, score=rng.random(n, dtype=np.float32) * 5,
                             depth=rng.integers(0, 10, n), host=rng.integers(1, hosts + 1, n))
        drum.check_update(keys, values, [b"http://h/%d" % i for i in range(n)], now_ms=T0)
        done = keys[: n // 10]
        drum.update(done, outcomes(len(done), status=DrumStatus.FETCHED, at_ms=T0 + 1,
                                   host=values["host"][: n // 10]), None, now_ms=T0 + 1)
        drum.merge(now_ms=T0 + 2)
    drum.merge(now_ms=T0 + 3, major=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--releases", type=int, default=5)
    args = parser.parse_args()
    print("| URLs in the partition | release (median) | per million URLs |")
    print("|---:|---:|---:|")
    for size in args.sizes:
        rng = np.random.default_rng(size)
        with tempfile.TemporaryDirectory() as folder:
            config = DrumConfig(
                buffer_ops=1 << 20, block_records=4096, fsync=False,
                due=DuePolicy(max_urls=1000, per_host=16, lease_ms=0, mark_queued=True,
                              depth_weight=0.1),
                archive=ArchivePolicy(archive_done=True), write_manifest_files=False,
            )
            drum = Drum.create(folder, config)
            fill(drum, size, args.hosts, rng)
            times = []
            for release in range(args.releases):
                now = T0 + 10_000 * (release + 1)
                keys = rng.integers(1, 2**63, 500, dtype=np.uint64)
                drum.check_update(keys, discoveries(500, now_ms=now, host=rng.integers(
                    1, args.hosts + 1, 500)), [b"http://n/%d" % i for i in range(500)],
                    now_ms=now)
                began = time.perf_counter()
                result = drum.merge(now_ms=now, major=True)
                times.append(time.perf_counter() - began)
                assert result.due is not None
            drum.close()
        median = statistics.median(times)
        print(f"| {size:,} | {median * 1000:.0f} ms | {median * 1e6 / size * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
