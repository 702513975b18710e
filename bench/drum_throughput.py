"""DRUM against rocksdict and a Python dict: check+update throughput, peak RSS, disk per key.

    python bench/drum_throughput.py --keys 1000000 10000000 --runs 3
    python bench/drum_throughput.py --keys 100000000 --runs 1 --stores drum rocksdict
    python bench/drum_throughput.py --keys 30000000 --stores drum --baseline ../other-checkout

Every measurement runs in its own process (peak RSS is the process's ``ru_maxrss``); the stores
alternate inside each round so that they share the machine's state, and the table gives medians
over rounds and the median of the per-round ratios.

Workload (the same keys, values and URLs for every store, from one seed):

* load: N distinct keys inserted with check_update (URL-seen test + crawl DB insert), in
  batches; keys are a bijective hash (splitmix64) of 0..N-1, so no key list is kept in memory;
  URLs are 43-byte ``https://hNNNNN.example.org/<16 hex>`` (10,000 hosts);
* ops: M check_update operations (a discovery record, score 1): 20 % new keys, 80 % known
  keys, chosen uniformly (``uniform``) or 90 % among the most recent 1 % of the keys and 10 %
  uniformly (``skewed``: links to recently discovered pages);
* each store applies the DRUM merge rule (score sum, earliest next fetch ...) to known keys.

Stores:

* ``drum``: this library, fsync on, the buffer given by ``--buffer``; merges (minor and major,
  with due selection of 10,000 URLs) happen inside the timed phases; garbage is collected
  after each merge;
* ``rocksdict``: RocksDB through rocksdict (raw bytes mode, bloom filters, 256 MB block cache,
  2 background threads), used as well as Python allows: a batch is folded with NumPy, looked
  up with one multi-get, written with one WriteBatch; the value is the 64-byte record followed
  by the URL;
* ``dict``: a Python dict key -> row of a NumPy record array (the URL in a list), same folding;
* ``drum-baseline`` (with ``--baseline``): the DRUM of another checkout, same workload, for
  a change measured side by side.

Besides the rates, a DRUM run reports the bytes its operations wrote and read (per operation,
the load left out) and the time of each merge phase in them (``ops_timings``).

Time spent generating the workload is measured and left out of the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from drum import (  # noqa: E402
    RECORD,
    Drum,
    DrumConfig,
    DuePolicy,
    combine,
    combine_groups,
    discoveries,
)
from drum.files import IO_BYTES  # noqa: E402
from drum.record import concat, put, select, take  # noqa: E402

HOSTS = 10_000
#: The store name of the DRUM of ``--baseline``'s checkout.
BASELINE = "drum-baseline"
_PREFIX = np.frombuffer(b"https://h00000.example.org/", dtype=np.uint8)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)


def splitmix64(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def urls_of(keys: np.ndarray) -> list[bytes]:
    """43-byte URL-like payloads, host from the key. Vectorised."""
    n = len(keys)
    out = np.empty((n, len(_PREFIX) + 16), dtype=np.uint8)
    out[:, : len(_PREFIX)] = _PREFIX
    host = keys % np.uint64(HOSTS)
    for digit in range(5):
        out[:, 13 - digit] = _DIGITS[(host // np.uint64(10**digit)) % np.uint64(10)]
    shifts = np.arange(60, -1, -4, dtype=np.uint64)
    out[:, len(_PREFIX) :] = _HEX[(keys[:, None] >> shifts) & np.uint64(15)]
    return out.view(f"V{out.shape[1]}").ravel().tolist()


def values_of(keys: np.ndarray, now_ms: int) -> np.ndarray:
    return discoveries(len(keys), now_ms=now_ms, score=1.0,
                       host=(keys % np.uint64(HOSTS)).astype(np.uint32) + 1)


class Workload:
    def __init__(self, n: int, dist: str, seed: int) -> None:
        self.n = n
        self.count = 0  # keys known so far (indices 0..count-1)
        self.dist = dist
        self.rng = np.random.default_rng(seed)
        self.salt = np.uint64(seed * 0x1000003)

    def key(self, index: np.ndarray) -> np.ndarray:
        return splitmix64(index.astype(np.uint64) ^ self.salt)

    def load_batch(self, size: int) -> np.ndarray:
        index = np.arange(self.count, self.count + size)
        self.count += size
        return self.key(index)

    def op_batch(self, size: int) -> np.ndarray:
        rng = self.rng
        new = rng.random(size) < 0.2
        known = ~new
        index = np.empty(size, dtype=np.int64)
        fresh = int(np.count_nonzero(new))
        index[new] = np.arange(self.count, self.count + fresh)
        k = int(np.count_nonzero(known))
        if self.dist == "uniform":
            index[known] = rng.integers(0, self.count, k)
        else:
            recent = max(self.count // 100, 1)
            hot = rng.random(k) < 0.9
            chosen = rng.integers(0, self.count, k)
            chosen[hot] = self.count - 1 - rng.integers(0, recent, int(np.count_nonzero(hot)))
            index[known] = chosen
        self.count += fresh
        return self.key(index)


def _fold(keys: np.ndarray, values: np.ndarray):
    """Unique keys of a batch with their values folded by the merge rule (first index kept)."""
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    head = np.empty(len(sk), dtype=bool)
    head[0] = True
    np.not_equal(sk[1:], sk[:-1], out=head[1:])
    starts = np.flatnonzero(head)
    return sk[starts], combine_groups(take(values, order), starts), order[starts]


def drum_settings(items: list[str]) -> dict[str, int | float]:
    """``FIELD=VALUE`` items as DrumConfig fields (numbers)."""
    settings: dict[str, int | float] = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in DrumConfig.__dataclass_fields__:
            raise SystemExit(f"--drum-set: DrumConfig has no field {name!r}")
        settings[name] = float(value) if "." in value else int(value)
    return settings


class DrumStore:
    def __init__(self, directory: str, buffer: int, settings: dict | None = None) -> None:
        config = DrumConfig(buffer_ops=buffer, due=DuePolicy(max_urls=10_000, per_host=10),
                            **(settings or {}))
        self.db = Drum.create(directory, config)
        self.majors = 0
        self.merges = 0

    def check_update(self, keys, values, urls, now_ms) -> None:
        for result in self.db.check_update(keys, values, urls, now_ms=now_ms):
            self._done(result)

    def _done(self, result) -> None:
        self.merges += 1
        self.majors += int(result.major)
        self.db.collect_garbage()

    def flush(self, now_ms: int) -> None:
        self._done(self.db.merge(now_ms=now_ms))

    def keys(self) -> int:
        return len(self.db)


class RocksStore:
    def __init__(self, directory: str) -> None:
        from rocksdict import BlockBasedOptions, Cache, Options, Rdict, WriteBatch

        self.write_batch = WriteBatch
        options = Options(raw_mode=True)
        # Tuned for point lookups as the RocksDB wiki suggests: bloom filters (10 bits per
        # key), a 256 MB block cache, both cores for flushes and compactions.
        table = BlockBasedOptions()
        table.set_bloom_filter(10, False)
        table.set_block_cache(Cache(256 << 20))
        table.set_cache_index_and_filter_blocks(True)
        table.set_pin_l0_filter_and_index_blocks_in_cache(True)
        options.set_block_based_table_factory(table)
        options.increase_parallelism(2)
        self.db = Rdict(directory, options)
        self.known = 0

    def check_update(self, keys, values, urls, now_ms) -> None:
        ukeys, folded, first = _fold(keys, values)
        raw_keys = ukeys.astype(">u8").view("V8").tolist()
        found = self.db.get(raw_keys)
        batch = self.write_batch(raw_mode=True)
        rec = RECORD.itemsize
        old_at = [i for i, v in enumerate(found) if v is not None]
        merged = folded
        if old_at:
            at = np.array(old_at)
            old = np.frombuffer(b"".join(found[i][:rec] for i in old_at), dtype=RECORD)
            merged = concat([folded])
            put(merged, at, combine(old, take(folded, at)))
        blob = merged.tobytes()
        for i, key in enumerate(raw_keys):
            value = blob[i * rec : (i + 1) * rec]
            if found[i] is None:
                batch.put(key, value + urls[first[i]])
            else:
                batch.put(key, value + found[i][rec:])
        self.known += len(raw_keys) - len(old_at)
        self.db.write(batch)

    def put_new(self, keys, values, urls) -> None:
        """Insert keys known to be new (bulk load): puts only."""
        batch = self.write_batch(raw_mode=True)
        raw_keys = keys.astype(">u8").view("V8").tolist()
        blob = values.tobytes()
        rec = RECORD.itemsize
        for i, key in enumerate(raw_keys):
            batch.put(key, blob[i * rec : (i + 1) * rec] + urls[i])
        self.known += len(raw_keys)
        self.db.write(batch)

    def flush(self, now_ms: int) -> None:
        self.db.flush()

    def keys(self) -> int:
        return self.known

    def close(self) -> None:
        self.db.close()


class DictStore:
    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.records = np.empty(1 << 16, dtype=RECORD)
        self.urls: list[bytes] = []

    def check_update(self, keys, values, urls, now_ms) -> None:
        ukeys, folded, first = _fold(keys, values)
        index = self.index
        rows = [index.get(k, -1) for k in ukeys.tolist()]
        rows = np.array(rows, dtype=np.int64)
        old = rows >= 0
        if old.any():
            at = rows[old]
            put(self.records, at, combine(take(self.records, at), select(folded, old)))
        new = np.flatnonzero(~old)
        if len(new):
            start = len(self.urls)
            end = start + len(new)
            if end > len(self.records):
                self.records = np.resize(self.records, max(end, 2 * len(self.records)))
            self.records[start:end] = take(folded, new)
            index.update(zip(ukeys[new].tolist(), range(start, end), strict=True))
            self.urls.extend(urls[i] for i in first[new].tolist())

    def flush(self, now_ms: int) -> None:
        pass

    def keys(self) -> int:
        return len(self.index)


def dir_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def worker(args: argparse.Namespace) -> dict:
    directory = tempfile.mkdtemp(prefix=f"bench-{args.worker}-", dir=args.dir)
    try:
        if args.worker == "drum":
            store = DrumStore(directory, args.buffer, drum_settings(args.drum_set))
        elif args.worker == "rocksdict":
            store = RocksStore(directory)
        else:
            store = DictStore()
        work = Workload(args.n, args.dist, args.seed)
        now = 1_700_000_000_000
        gen = 0.0
        began = time.perf_counter()
        done = 0
        while done < args.n:
            size = min(args.batch, args.n - done)
            t = time.perf_counter()
            keys = work.load_batch(size)
            values, urls = values_of(keys, now), urls_of(keys)
            gen += time.perf_counter() - t
            if args.blind_load and args.worker == "rocksdict":
                store.put_new(keys, values, urls)
            else:
                store.check_update(keys, values, urls, now)
            done += size
        store.flush(now)
        load_s = time.perf_counter() - began - gen
        majors_before = getattr(store, "majors", 0)
        io_before = dict(IO_BYTES)
        timings_before = dict(store.db.timings) if args.worker == "drum" else {}
        gen = 0.0
        began = time.perf_counter()
        done = 0
        while done < args.ops:
            size = min(args.batch, args.ops - done)
            now += 1
            t = time.perf_counter()
            keys = work.op_batch(size)
            values, urls = values_of(keys, now), urls_of(keys)
            gen += time.perf_counter() - t
            store.check_update(keys, values, urls, now)
            done += size
        store.flush(now)
        ops_s = time.perf_counter() - began - gen
        result = {
            "store": args.worker,
            "n": args.n,
            "dist": args.dist,
            "ops": args.ops,
            "batch": args.batch,
            "load_per_s": args.n / load_s,
            "ops_per_s": args.ops / ops_s,
            "keys": store.keys(),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
        if args.worker == "drum":
            result["major_merges_in_ops"] = store.majors - majors_before
            # What the operations moved, and where their time went (the load left out).
            for what in ("read", "write"):
                result[f"{what}_bytes_per_op"] = (IO_BYTES[what] - io_before[what]) / args.ops
            result["ops_timings"] = {
                name: round(seconds - timings_before.get(name, 0.0), 2)
                for name, seconds in sorted(store.db.timings.items())
                if seconds - timings_before.get(name, 0.0) >= 0.005
            }
            result["merges"] = store.merges
            # One more major merge, timed alone: in steady state one happens every
            # major_ratio x K delta records (one per updated key and minor merge), so its
            # cost per operation is about major_s / (major_ratio x K).
            t = time.perf_counter()
            store.db.merge(now_ms=now + 1, major=True)
            result["major_s"] = time.perf_counter() - t
            ratio = store.db.config.major_ratio
            per_op = (ops_s / args.ops if not result["major_merges_in_ops"] else 0.0)
            if per_op:
                result["amortised_ops_per_s"] = 1 / (
                    per_op + result["major_s"] / (ratio * store.keys())
                )
            result["timings"] = {k: round(v, 2) for k, v in sorted(store.db.timings.items())}
            store.db.collect_garbage()
        if args.worker == "rocksdict":
            store.close()
        result["disk_bytes_per_key"] = dir_bytes(directory) / max(result["keys"], 1)
        return result
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--dists", nargs="+", default=["uniform", "skewed"])
    parser.add_argument("--stores", nargs="+", default=["drum", "rocksdict", "dict"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ops", type=int, default=0,
                        help="operations after the load (default: max(N, 2M), at most 20M)")
    parser.add_argument("--ops-rocksdict", type=int, default=2_000_000,
                        help="at most this many operations for rocksdict (it is slow)")
    parser.add_argument("--blind-load", action="store_true",
                        help="load rocksdict with puts only (no lookups): faster at 100M keys")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--buffer", type=int, default=1 << 20)
    parser.add_argument("--dict-max", type=int, default=20_000_000,
                        help="largest N for the dict store (memory)")
    parser.add_argument("--dir", default=None, help="where the stores write")
    parser.add_argument("--baseline", default=None,
                        help="a checkout whose DRUM runs beside this one (store drum-baseline)")
    parser.add_argument("--drum-set", action="append", default=[], metavar="FIELD=VALUE",
                        help="a DrumConfig field for this checkout's DRUM (e.g. delta_fanout=8)")
    parser.add_argument("--worker", choices=["drum", "rocksdict", "dict"])
    parser.add_argument("--n", type=int)
    parser.add_argument("--dist")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default=None, help="append every result to this file")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    results = []
    for n in args.keys:
        ops = args.ops or min(max(n, 2_000_000), 20_000_000)
        for dist in args.dists:
            stores = [s for s in args.stores if s != "dict" or n <= args.dict_max]
            if args.baseline:
                stores.append(BASELINE)
            for run in range(args.runs):
                order = stores[run % len(stores):] + stores[: run % len(stores)]
                for store in order:
                    store_ops = min(ops, args.ops_rocksdict) if store == "rocksdict" else ops
                    script, worker_store = __file__, store
                    if store == BASELINE:
                        script = os.path.join(args.baseline, "bench", "drum_throughput.py")
                        worker_store = "drum"
                    cmd = [sys.executable, script, "--worker", worker_store, "--n", str(n),
                           "--ops", str(store_ops), "--dist", dist, "--seed", str(run + 1),
                           "--batch", str(args.batch), "--buffer", str(args.buffer)]
                    if store == "drum":
                        cmd += [f"--drum-set={item}" for item in args.drum_set]
                    if args.dir:
                        cmd += ["--dir", args.dir]
                    if args.blind_load:
                        cmd += ["--blind-load"]
                    began = time.perf_counter()
                    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
                    if out.returncode:
                        print(out.stderr, file=sys.stderr)
                        raise SystemExit(f"{store} failed")
                    result = json.loads(out.stdout.strip().splitlines()[-1])
                    result["store"] = store
                    result["run"] = run
                    result["load1"] = os.getloadavg()[0]
                    result["wall_s"] = time.perf_counter() - began
                    results.append(result)
                    print(json.dumps(result), flush=True)
                    if args.json:
                        with open(args.json, "a") as handle:
                            handle.write(json.dumps(result) + "\n")
    print_table(results)


def print_table(results: list[dict]) -> None:
    print()
    print("| keys | workload | store | ops | ops/s (median) | load keys/s | peak RSS MB | "
          "disk B/key | written B/op | DRUM / this (ops/s, per-round median) |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault((r["n"], r["dist"], r["store"]), []).append(r)
    for (n, dist, store), rs in groups.items():
        med = statistics.median
        ratio = ""
        drum_runs = {r["run"]: r for r in groups.get((n, dist, "drum"), [])}
        if store != "drum" and drum_runs:
            ratios = [drum_runs[r["run"]]["ops_per_s"] / r["ops_per_s"] for r in rs
                      if r["run"] in drum_runs]
            ratio = f"{med(ratios):.1f}x"
        written = (f"{med(r['write_bytes_per_op'] for r in rs):,.0f}"
                   if "write_bytes_per_op" in rs[0] else "")
        print(f"| {n:,} | {dist} | {store} | {rs[0]['ops']:,} | "
              f"{med(r['ops_per_s'] for r in rs):,.0f} | "
              f"{med(r['load_per_s'] for r in rs):,.0f} | "
              f"{med(r['peak_rss_mb'] for r in rs):,.0f} | "
              f"{med(r['disk_bytes_per_key'] for r in rs):,.0f} | {written} | {ratio} |")


if __name__ == "__main__":
    main()
