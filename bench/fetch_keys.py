"""The cost of the fetch stage's keys (crawl/urls/routing.py): microseconds per host.

For ``--hosts`` distinct host names (of as many registered domains, the worst case: no two share
a salt search) and each max parallelism (``crawl.vnodes``), the median over ``--runs`` runs of:

- ``new``: the key of a host seen for the first time (the salt search: about max-parallelism
  candidate hashes, vectorised), with fresh routers so that nothing is cached;
- ``cached``: the key of a host seen before (the crawl DB asks once per host and merge);
- ``host``: the key under ``group_by: host`` (the default: the host itself), for comparison.

Usage: ``python bench/fetch_keys.py [--hosts 3000] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from crawl.urls.routing import FetchRouter, _salt_hash_table


def _per_host_us(router: FetchRouter, hosts: list[str]) -> float:
    began = time.perf_counter()
    router.keys(hosts)
    return (time.perf_counter() - began) / len(hosts) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    hosts = [f"www{n}.site{n}.example.com" for n in range(args.hosts)]
    _salt_hash_table()  # built once per process (about 0.1 s), not part of a host's cost
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"{args.hosts} hosts, median of {args.runs} runs")
    print("| max parallelism | new host (us) | cached (us) | group_by host (us) |")
    print("|---:|---:|---:|---:|")
    for max_parallelism in (128, 256, 4096, 32768):
        new, cached, plain = [], [], []
        for _ in range(args.runs):
            router = FetchRouter("domain", max_parallelism)
            new.append(_per_host_us(router, hosts))
            cached.append(_per_host_us(router, hosts))
            plain.append(_per_host_us(FetchRouter("host", max_parallelism), hosts))
        print(f"| {max_parallelism} | {statistics.median(new):.1f} | "
              f"{statistics.median(cached):.2f} | {statistics.median(plain):.2f} |")


if __name__ == "__main__":
    main()
