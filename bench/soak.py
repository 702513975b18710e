"""Soak: a continuous crawl of a changing synthetic web for half an hour, watched as it runs.

Serves a synthetic web with the changing-web profile (:mod:`synthweb.changing`: by default 500
hosts of 200 pages, 40 % never changing, 30 % changing every hour, 30 % every 10 minutes, most
hosts honouring conditional GETs) and crawls it with ``python -m job crawl`` with recrawl on,
stopped by ``--max-seconds``. Every ``--sample-seconds`` it records:

- the resident memory of every process of the crawl (the launcher, the JVM of the MiniCluster,
  its Python workers), by process;
- the checkpoints completed since the last sample (duration, incremental size, full state
  size), from Flink's REST API (the address the launcher writes to ``out/job.json``);
- the disk use of each directory of the output (``crawldb`` holds the DRUM files, ``loop`` the
  loop files, ``warc`` the archive, ``checkpoints`` Flink's).

After the crawl, from the synthetic web's request log (the truth, not the crawler's figures):
pages/s per window, the share of refetches and 304s, and **freshness**: at each sample time,
the share of the web's changing-profile pages whose last successful fetch (200 or 304) got the
version the server serves at that time (a page never fetched counts as stale), and the same
among the pages fetched so far.

With ``--jvm-memory``, the JVM's own committed memory (Native Memory Tracking) is sampled
too; with ``--memory-split SECONDS``, the crawl's processes also write a memory trace
(:mod:`crawl.memory`: the C allocator's bytes in use and held free, the interpreter's blocks
and objects, the types that grew) and Flink reports RocksDB's memory, for a table that splits
the JVM's resident memory.

Usage: ``python bench/soak.py [--minutes 30] [--hosts 500] [--pages-per-host 200]
[--json soak.json] [--memory-split 60]``; prints a Markdown table per window.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crawl.stages import FETCH_HOSTS_ACTIVE, NEARDUP_PAGES  # noqa: E402
from synthweb import SyntheticWebServer, WebConfig  # noqa: E402
from synthweb.proctree import descendants  # noqa: E402

TOKEN = "pyflink-crawler"
_PAGE_BYTES = 4096


def _process_kind(pid: int) -> str:
    """A short name of a crawl process: launcher, jvm, python-worker, or its command."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    words = [part.decode(errors="replace") for part in command if part]
    if not words:
        return "?"
    joined = " ".join(words)
    if "java" in Path(words[0]).name:
        return "jvm"
    if "-m job crawl" in joined or "job crawl" in joined:
        return "launcher"
    if "pyflink" in joined or "fn_execution" in joined or "beam" in joined:
        return "python-worker"
    return Path(words[0]).name


def _rss_by_process(root: int) -> dict[str, int]:
    """Resident bytes of each process under ``root``, keyed ``kind:pid``."""
    found = {}
    for pid in descendants(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[f"{_process_kind(pid)}:{pid}"] = int(fields[21]) * _PAGE_BYTES
    return found


def _disk(out: Path) -> dict[str, int]:
    """Bytes on disk of each top-level directory of the output."""
    sizes: dict[str, int] = {}
    if not out.is_dir():
        return sizes
    for child in out.iterdir():
        if child.is_dir():
            total = 0
            for path in child.rglob("*"):
                try:
                    if path.is_file():
                        total += path.stat().st_size
                except OSError:
                    continue  # removed while walking
            sizes[child.name] = total
    return sizes


def _native_memory(pid: int) -> dict[str, int]:
    """Bytes the JVM itself committed (Native Memory Tracking): in all, and its Java heap.
    What the process holds beyond them is native memory the JVM does not track: the embedded
    Python interpreter's heap, RocksDB, and the C library's arenas."""
    try:
        text = subprocess.run(["jcmd", str(pid), "VM.native_memory", "summary"],
                              capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found = {}
    for key, pattern in (("total", r"Total: reserved=\d+KB, committed=(\d+)KB"),
                         ("heap", r"Java Heap \(reserved=\d+KB, committed=(\d+)KB")):
        match = re.search(pattern, text)
        if match:
            found[key] = int(match.group(1)) * 1024
    return found


def _rest_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())


#: Flink's RocksDB memory metrics (state.backend.rocksdb.metrics.*), turned on by --memory-split.
ROCKSDB_METRICS = ("cur-size-all-mem-tables", "estimate-table-readers-mem",
                   "block-cache-usage", "block-cache-pinned-usage")
#: Shared by every column family of a slot (managed memory): reported once by each.
_SHARED_ROCKSDB_METRICS = {"block-cache-usage", "block-cache-pinned-usage"}


def _rocksdb_memory(rest: str, job_id: str) -> dict[str, int]:
    """Bytes RocksDB reports for its memtables, table readers and block cache, summed over
    the job's operators and column families (the shared block cache counted once)."""
    base = f"{rest.rstrip('/')}/jobs/{job_id}"
    totals: dict[str, int] = {}
    for vertex in _rest_json(base).get("vertices", []):
        url = f"{base}/vertices/{vertex['id']}/subtasks/metrics"
        ids = [item["id"] for item in _rest_json(url) if ".rocksdb_" in item["id"]]
        for start in range(0, len(ids), 40):
            chunk = ",".join(ids[start:start + 40])
            for item in _rest_json(f"{url}?get={urllib.parse.quote(chunk, safe=',')}"):
                name = item["id"].rsplit(".rocksdb_", 1)[-1]  # <operator>.<state>.rocksdb_<name>
                value = int(float(item.get("max" if name in _SHARED_ROCKSDB_METRICS else "sum")
                                  or 0))
                if name in _SHARED_ROCKSDB_METRICS:
                    totals[name] = max(totals.get(name, 0), value)
                else:
                    totals[name] = totals.get(name, 0) + value
    return totals


def _memory_trace(out: Path) -> dict[str, Any]:
    """The last line of the memory trace of the largest process (crawl/memory.py)."""
    lines = []
    for path in (out / "status").glob("memory-*.jsonl"):
        try:
            text = path.read_text(encoding="utf-8").splitlines()
            if text:
                lines.append(json.loads(text[-1]))
        except (OSError, ValueError):
            continue
    return max(lines, key=lambda line: line.get("rss", 0), default={})


def _stage_gauges(out: Path) -> dict[str, float]:
    """Every stage's gauges, summed over subtasks (``stage.gauge``)."""
    gauges: dict[str, float] = {}
    for path in (out / "status").glob("*.json"):
        try:
            status = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for name, value in status.get("gauges", {}).items():
            if isinstance(value, (int, float)):
                key = f"{status.get('stage')}.{name}"
                gauges[key] = gauges.get(key, 0) + value
    return gauges


class Watcher:
    """Samples a running crawl (memory, checkpoints, disk) in a thread."""

    def __init__(self, root_pid: int, out: Path, every: float, jvm_memory: bool = False,
                 memory_split: bool = False) -> None:
        self.root_pid = root_pid
        self.jvm_memory = jvm_memory
        self.memory_split = memory_split
        self.out = out
        self.every = every
        self.samples: list[dict[str, Any]] = []
        self.checkpoints: dict[int, dict[str, Any]] = {}
        self.peak_rss: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-watcher", daemon=True)
        self._thread.start()

    def _checkpoints(self) -> None:
        job_file = self.out / "job.json"
        if not job_file.exists():
            return
        try:
            job = json.loads(job_file.read_text())
            if not job.get("rest"):
                return
            answer = _rest_json(f"{job['rest'].rstrip('/')}/jobs/{job['job_id']}/checkpoints")
        except (OSError, ValueError, KeyError):
            return
        for item in answer.get("history", []):
            if item.get("status") == "COMPLETED":
                self.checkpoints[item["id"]] = {
                    "id": item["id"],
                    "at": item.get("latest_ack_timestamp", 0) / 1000,
                    "duration_ms": item.get("end_to_end_duration"),
                    "state_size": item.get("state_size"),
                    "checkpointed_size": item.get("checkpointed_size"),
                }

    def _sample(self) -> None:
        rss = _rss_by_process(self.root_pid)
        for name, value in rss.items():
            self.peak_rss[name] = max(self.peak_rss.get(name, 0), value)
        self._checkpoints()
        sample = {"at": time.time(), "rss": rss, "disk": _disk(self.out)}
        if self.jvm_memory:
            jvms = [name for name in rss if name.startswith("jvm:")]
            if jvms:  # the MiniCluster's: the largest
                jvm = max(jvms, key=rss.__getitem__)
                sample["nmt"] = {"rss": rss[jvm], **_native_memory(int(jvm.split(":")[1]))}
        if self.memory_split:
            sample["trace"] = _memory_trace(self.out)
            sample["gauges"] = _stage_gauges(self.out)
            try:
                job = json.loads((self.out / "job.json").read_text())
                sample["rocksdb"] = _rocksdb_memory(job["rest"], job["job_id"])
            except (OSError, ValueError, KeyError):
                pass
        self.samples.append(sample)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def freshness(records: list, web: Any, urls: list[str], times: list[float]) -> list[dict]:
    """At each of ``times``: the share of ``urls`` whose last successful fetch holds the
    version served then (all of them, and those fetched by then)."""
    changing = web.changing
    fetches: dict[str, list[float]] = collections.defaultdict(list)
    for record in records:
        if record.status in (200, 304):
            fetches[record.url].append(record.start)
    for starts in fetches.values():
        starts.sort()
    rows = []
    for t in times:
        fetched = fresh = 0
        for url in urls:
            starts = fetches.get(url)
            if not starts:
                continue
            at = bisect.bisect_right(starts, t)
            if at == 0:
                continue
            fetched += 1
            if changing.version_at(url, starts[at - 1]) == changing.version_at(url, t):
                fresh += 1
        rows.append({"at": t, "fetched": fetched, "fresh": fresh,
                     "freshness": fresh / len(urls) if urls else 0.0,
                     "freshness_of_fetched": fresh / fetched if fetched else 0.0})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--pages-per-host", type=int, default=200)
    parser.add_argument("--web-seed", type=int, default=1)
    parser.add_argument("--fast-period", type=float, default=600.0)
    parser.add_argument("--slow-period", type=float, default=3600.0)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--sample-seconds", type=float, default=15.0)
    parser.add_argument("--window-seconds", type=float, default=300.0,
                        help="the windows of the printed table")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="more crawler settings")
    parser.add_argument("--work", type=Path, help="keep the crawl's files here")
    parser.add_argument("--json", type=Path, help="write every sample here")
    parser.add_argument("--jvm-memory", action="store_true",
                        help="start the JVM with Native Memory Tracking and split its memory "
                             "into what the JVM committed and the rest")
    parser.add_argument("--memory-split", type=float, default=0.0, metavar="SECONDS",
                        help="split the rest further: the crawl processes write a memory trace "
                             "(crawl/memory.py) at this interval and Flink reports RocksDB's "
                             "memory; implies --jvm-memory")
    args = parser.parse_args()
    if args.memory_split:
        args.jvm_memory = True

    config = WebConfig(seed=args.web_seed, hosts=args.hosts, pages_per_host=args.pages_per_host,
                       showcase=False).with_changing_profile(
        change_fast_period=args.fast_period, change_slow_period=args.slow_period,
        gone_pages=50, gone_after=600.0,
    )
    recrawl = ["recrawl.enabled=true", "recrawl.initial_seconds=600", "recrawl.min_seconds=60",
               "recrawl.max_seconds=14400", "recrawl.retry_seconds=60",
               "recrawl.estimate_after=3", *args.set]
    work = args.work or Path(tempfile.mkdtemp(prefix="soak-"))
    work.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    with SyntheticWebServer(config, work / "requests.jsonl") as server:
        web = server.web
        seeds = web.seeds()
        (work / "seeds.txt").write_text("\n".join(seeds) + "\n", encoding="utf-8")
        command = [
            sys.executable, "-m", "job", "crawl", "--seeds", str(work / "seeds.txt"),
            "--out", str(out), "--overwrite", "--proxy", server.proxy_url,
            "--delay", str(args.delay), "--max-seconds", str(int(args.minutes * 60)),
        ]
        for setting in recrawl:
            command += ["--set", setting]
        started = time.time()
        env = dict(os.environ)
        if args.jvm_memory:
            env["JVM_ARGS"] = f"{env.get('JVM_ARGS', '')} -XX:NativeMemoryTracking=summary"
        if args.memory_split:
            env["PYFLINK_CRAWLER_MEMORY_TRACE"] = str(args.memory_split)
            flink_conf = work / "flink-conf.yaml"
            flink_conf.write_text((ROOT / "flink-conf.yaml").read_text(encoding="utf-8") + "".join(
                f"\nstate.backend.rocksdb.metrics.{name}: true" for name in ROCKSDB_METRICS) + "\n",
                encoding="utf-8")
            command += ["--flink-conf", str(flink_conf)]
        crawl = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, env=env)
        watcher = Watcher(crawl.pid, out, args.sample_seconds, args.jvm_memory,
                          bool(args.memory_split))
        output, _ = crawl.communicate(timeout=args.minutes * 60 + 1200)
        watcher.stop()
        ended = time.time()
        if crawl.returncode != 0:
            raise SystemExit(f"crawl failed ({crawl.returncode}):\n{output[-3000:]}")
        records = server.request_log()
        expected = web.expected_crawl(seeds, TOKEN)
        urls = sorted(url for url in expected.fetch if web.changing.plan(url) is not None)
        summary = json.loads((out / "summary.json").read_text())
        report(args, web, records, urls, watcher, summary, started, ended, output)
        if args.json:
            args.json.write_text(json.dumps({
                "args": vars(args), "summary": summary, "samples": watcher.samples,
                "checkpoints": sorted(watcher.checkpoints.values(), key=lambda c: c["id"]),
                "peak_rss": watcher.peak_rss,
            }, indent=1, default=str))


def report(args: argparse.Namespace, web: Any, records: list, urls: list[str], watcher: Watcher,
           summary: dict, started: float, ended: float, output: str) -> None:
    pages = sorted((r for r in records if r.path != "/robots.txt"), key=lambda r: r.start)
    first_fetch = pages[0].start if pages else started
    window = args.window_seconds
    edges = []
    t = first_fetch
    while t < ended:
        edges.append(t)
        t += window
    edges.append(ended)
    times = [min(edge + window, ended) for edge in edges[:-1]]
    fresh_rows = freshness(pages, web, urls, times)
    seen: set[str] = set()
    print(f"\nweb: {args.hosts} hosts x {args.pages_per_host} pages, {len(urls)} changing-"
          f"profile pages reachable; crawl {args.minutes:.0f} min; wall "
          f"{ended - started:.0f} s\n")
    print("| window (min) | pages/s | new | refetches | 304 | RSS total MiB | JVM MiB |"
          " Python MiB | checkpoints | median ckpt ms | max ckpt ms | median ckpt MiB |"
          " state MiB |"
          " crawldb MiB | loop MiB | warc MiB | checkpoints dir MiB | freshness | of fetched |")
    print("|---|" + "---:|" * 19)
    for (lo, hi), fresh in zip(zip(edges, edges[1:], strict=False), fresh_rows, strict=True):
        inside = [r for r in pages if lo <= r.start < hi]
        new = 0
        for record in inside:
            if record.url not in seen:
                seen.add(record.url)
                new += 1
        refetch = len(inside) - new
        not_modified = sum(r.status == 304 for r in inside)
        samples = [s for s in watcher.samples if lo <= s["at"] < hi] or watcher.samples[-1:]
        last = samples[-1] if samples else {"rss": {}, "disk": {}}

        def rss(kind: str, sample: dict = last) -> float:
            return sum(v for k, v in sample["rss"].items() if k.startswith(kind)) / 2**20

        peak_total = max((sum(s["rss"].values()) for s in samples), default=0) / 2**20
        checkpoints = [c for c in watcher.checkpoints.values() if lo <= c["at"] < hi]
        durations = [c["duration_ms"] for c in checkpoints if c["duration_ms"] is not None]
        sizes = [c["checkpointed_size"] or c["state_size"] or 0 for c in checkpoints]
        state = max((c["state_size"] or 0 for c in checkpoints), default=0)
        disk = last["disk"]
        print(
            f"| {(lo - first_fetch) / 60:.1f}-{(hi - first_fetch) / 60:.1f} | "
            f"{len(inside) / max(hi - lo, 1e-9):.1f} | {new} | {refetch} | {not_modified} | "
            f"{peak_total:.0f} | {rss('jvm'):.0f} | {rss('python-worker') + rss('launcher'):.0f} |"
            f" {len(checkpoints)} | {statistics.median(durations) if durations else 0:.0f} | "
            f"{max(durations, default=0)} | "
            f"{(statistics.median(sizes) if sizes else 0) / 2**20:.1f} | {state / 2**20:.1f} | "
            f"{disk.get('crawldb', 0) / 2**20:.1f} | {disk.get('loop', 0) / 2**20:.1f} | "
            f"{disk.get('warc', 0) / 2**20:.1f} | {disk.get('checkpoints', 0) / 2**20:.1f} | "
            f"{fresh['freshness']:.3f} | {fresh['freshness_of_fetched']:.3f} |"
        )
    if args.jvm_memory:
        print("\n| window (min) | JVM RSS MiB | JVM-committed MiB | Java heap MiB |"
              " RSS beyond the JVM's own MiB |")
        print("|---|---:|---:|---:|---:|")
        for lo, hi in zip(edges, edges[1:], strict=False):
            inside = [s for s in watcher.samples if lo <= s["at"] < hi and s.get("nmt")]
            if not inside:
                continue
            last = inside[-1]
            jvm_rss = last["nmt"]["rss"] / 2**20
            total = last["nmt"].get("total", 0) / 2**20
            print(f"| {(lo - first_fetch) / 60:.1f}-{(hi - first_fetch) / 60:.1f} | "
                  f"{jvm_rss:.0f} | {total:.0f} | {last['nmt'].get('heap', 0) / 2**20:.0f} | "
                  f"{jvm_rss - total:.0f} |")
    if args.memory_split:
        memory_split_table(watcher, edges, first_fetch)
    print("\npeak RSS by process (MiB):",
          {name: round(value / 2**20) for name, value in sorted(watcher.peak_rss.items())})
    print("crawler summary:", {key: summary.get(key) for key in (
        "pages", "pages_per_second", "refetches", "not_modified", "urls_known", "stop_reason")})
    print("last lines of the crawl:\n" + "\n".join(output.splitlines()[-6:]))


def memory_split_table(watcher: Watcher, edges: list[float], first_fetch: float) -> None:
    """The JVM's memory at the end of each window, split as finely as the process can tell."""
    print("\n| window (min) | JVM RSS MiB | anonymous MiB | mapped files MiB |"
          " JVM-committed MiB | malloc in use MiB |"
          " malloc free MiB | Python blocks (M) | Python objects (M) | RocksDB memtables MiB |"
          " RocksDB readers MiB | RocksDB cache MiB | near-dup pages | hosts active |")
    print("|---|" + "---:|" * 13)
    mib = 2**20
    for lo, hi in zip(edges, edges[1:], strict=False):
        inside = [s for s in watcher.samples if lo <= s["at"] < hi and s.get("trace")]
        if not inside:
            continue
        last = inside[-1]
        trace, rocks, gauges = last["trace"], last.get("rocksdb", {}), last.get("gauges", {})
        malloc = trace.get("malloc") or {}
        python = trace.get("python", {})
        print(f"| {(lo - first_fetch) / 60:.1f}-{(hi - first_fetch) / 60:.1f} | "
              f"{last['nmt']['rss'] / mib:.0f} | "
              f"{trace.get('rss_by_kind', {}).get('anon', 0) / mib:.0f} | "
              f"{trace.get('rss_by_kind', {}).get('file', 0) / mib:.0f} | "
              f"{last['nmt'].get('total', 0) / mib:.0f} | "
              f"{malloc.get('in_use', 0) / mib:.0f} | {malloc.get('free', 0) / mib:.0f} | "
              f"{python.get('allocated_blocks', 0) / 1e6:.2f} | "
              f"{python.get('tracked_objects', 0) / 1e6:.2f} | "
              f"{rocks.get('cur-size-all-mem-tables', 0) / mib:.1f} | "
              f"{rocks.get('estimate-table-readers-mem', 0) / mib:.1f} | "
              f"{rocks.get('block-cache-usage', 0) / mib:.1f} | "
              f"{gauges.get(NEARDUP_PAGES.key, 0):.0f} | "
              f"{gauges.get(FETCH_HOSTS_ACTIVE.key, 0):.0f} |")
    traced = [s["trace"] for s in watcher.samples if s.get("trace", {}).get("types")]
    if traced:
        print("\nPython types whose objects grew most (the trace's first line to its last):")
        for name, grown, count in traced[-1]["types"][:15]:
            print(f"  {grown:+9d} to {count:9d}  {name}")


if __name__ == "__main__":
    main()
