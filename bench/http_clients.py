"""Which HTTP client should the fetch stage use? CPU per request, pages/s and memory, measured.

What it measures: for each client, the time, the CPU and the peak memory it takes to fetch one
and the same list of URLs from the synthetic web (``synthweb``), whose server is the HTTP proxy
of every request (absolute-form ``GET http://h3.synth.test/p/3 HTTP/1.1``):

- ``requests``: one shared ``requests.Session`` (its proxy pool sized to the thread count) used
  by the threads of a ``concurrent.futures.ThreadPoolExecutor``;
- ``aiohttp``: one ``ClientSession`` with ``TCPConnector(limit=...)``, proxy given per request,
  on one asyncio loop;
- ``aiohttp-fed``: the same, but the loop runs in a thread of its own, fed from the main thread
  with ``run_coroutine_threadsafe`` as the crawler's fetch operator does in PyFlink's thread
  mode (``crawl.http.io_loop.IoLoop``): the cost of that handoff included;
- ``httpx``: one ``httpx.AsyncClient`` with the proxy configured on the client, on one loop;
- ``raw``: not a candidate but the floor: HTTP/1.1 written by hand over asyncio streams (one
  keep-alive connection per lane, Content-Length bodies only), i.e. what asyncio and the kernel
  cost without any client library.

The URL list is what a polite crawl of the web requests: every host's robots.txt and every URL
of ``web.expected_crawl(web.seeds())``, each once (about 6,150 URLs on 279 hosts for
``--hosts 300``). Every client follows the same rule, enforced by one :class:`HostRotation`: at
most one request in flight per host, at most ``--hosts-in-flight`` hosts at once, hosts served
round-robin with robots.txt first. Concretely ``lanes = min(hosts in flight, threads)`` workers
(threads or coroutines) each loop "take a host, fetch its next URL, give the host back". Every
fetch streams the body in 64 KiB chunks, gives up past 10 MiB, decodes gzip, keeps status,
headers and body, and does not follow redirects (a 3xx is a fetch of its own).

How: every run is a fresh worker process (``--worker``), so its CPU and peak RSS belong to that
client alone. CPU is ``getrusage(RUSAGE_SELF)`` user + system time of the whole process (all its
threads) from the first request to the last answer, excluding imports and client setup; peak
RSS is the worker's ``VmHWM``, shown with its RSS before the first request. The parent checks
every answer against the model (status, and the decoded body's CRC-32) and audits the server's
request log with :func:`synthweb.audit_log` (no URL twice, no overlap on a host, robots.txt
first). Runs go round by round, each round in a rotated order, so that noise from other jobs on
the machine spreads over all clients; figures are medians over the rounds.
The server is warmed by one unmeasured run first, so that its answer cache is full.

The web has no Crawl-delay hosts (``crawl_delay_host_share=0``): honouring a delay is the
scheduler's business, not the client's. ``--no-slow`` adds the same measurement on a web without
slow pages (``slow_page_share=0``).

Usage: ``python bench/http_clients.py --hosts 300 --runs 5``; ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import importlib
import json
import os
import queue
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from synthweb import (  # noqa: E402 - the repository root is put on the path just above
    ExpectedCrawl,
    RequestRecord,
    SyntheticWebServer,
    WebConfig,
    audit_log,
)
from synthweb.urls import split_url  # noqa: E402

MAX_BODY = 10 * 1024 * 1024
CHUNK = 64 * 1024
TIMEOUT = 30.0
USER_AGENT = "pyflink-crawler/0.1 (http client benchmark)"
# Identical for all clients; the synthetic server only ever offers gzip.
HEADERS = {"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"}
CLIENTS = ("requests", "aiohttp", "aiohttp-fed", "httpx", "raw")


class BodyTooLarge(Exception):
    """The body passed MAX_BODY bytes (after decoding)."""


@dataclasses.dataclass(slots=True)
class Fetched:
    """One answer as the crawler keeps it, or the error that stood in its way."""

    url: str
    status: int = 0
    headers: Any = None
    body: bytes = b""
    error: str = ""


def join_chunks(chunks: Iterable[bytes]) -> bytes:
    """The chunks as one body; raises BodyTooLarge once they pass MAX_BODY."""
    parts = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_BODY:
            raise BodyTooLarge(f"body over {MAX_BODY} bytes")
        parts.append(chunk)
    return b"".join(parts)


class HostRotation:
    """Hands out URLs so that no host ever has two in flight; hosts take turns round-robin.

    ``take()`` gives the next (host, url) of the host at the head of the queue and holds that
    host back until ``give_back(host)``. It returns None when no host is ready: every host with
    URLs left is then in flight, and its lane will continue it, so a lane may stop there.
    Thread-safe; O(1) per call.
    """

    def __init__(self, urls: Iterable[str]) -> None:
        queues: dict[str, collections.deque[str]] = {}
        for url in urls:
            queues.setdefault(split_url(url)[0], collections.deque()).append(url)
        self._ready = collections.deque(queues.items())
        self._held: dict[str, collections.deque[str]] = {}
        self._lock = threading.Lock()

    def take(self) -> tuple[str, str] | None:
        with self._lock:
            if not self._ready:
                return None
            host, urls = self._ready.popleft()
            self._held[host] = urls
            return host, urls.popleft()

    def give_back(self, host: str) -> None:
        with self._lock:
            urls = self._held.pop(host)
            if urls:
                self._ready.append((host, urls))


# -- the clients ------------------------------------------------------------------------------
# Each has open(), fetch(url) -> Fetched (raising on failure) and close(): the shape of a
# PyFlink function, which opens its client in open() and closes it in close().


class RequestsClient:
    """requests: one Session shared by all threads, its pool to the proxy sized to the threads.

    Through an HTTP proxy, urllib3 keeps a single pool (to the proxy) for all http:// hosts, so
    its ``pool_maxsize`` must be the thread count: with the default of 10, every thread past the
    tenth opens a new connection per request and throws it away afterwards.
    """

    def __init__(self, proxy: str, threads: int) -> None:
        self.proxy = proxy
        self.threads = threads

    def open(self) -> None:
        import requests

        self.session = requests.Session()
        # Otherwise every request looks up *_proxy variables and reads ~/.netrc.
        self.session.trust_env = False
        self.session.proxies = {"http": self.proxy}
        self.session.headers.update(HEADERS)
        adapter = requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=self.threads)
        self.session.mount("http://", adapter)

    def fetch(self, url: str) -> Fetched:
        with self.session.get(url, stream=True, allow_redirects=False, timeout=TIMEOUT) as reply:
            body = join_chunks(reply.iter_content(CHUNK))  # iter_content decodes gzip
            return Fetched(url, reply.status_code, reply.headers, body)

    def close(self) -> None:
        self.session.close()


class AiohttpClient:
    """aiohttp: one ClientSession, TCPConnector(limit=lanes), the proxy given per request."""

    def __init__(self, proxy: str, lanes: int) -> None:
        self.proxy = proxy
        self.lanes = lanes

    async def open(self) -> None:
        import aiohttp

        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self.lanes),
            headers=HEADERS,
            timeout=aiohttp.ClientTimeout(total=TIMEOUT),
            trust_env=False,
        )

    async def fetch(self, url: str) -> Fetched:
        async with self.session.get(url, proxy=self.proxy, allow_redirects=False) as reply:
            # auto_decompress (the default) decodes gzip as the chunks arrive.
            chunks = [chunk async for chunk in reply.content.iter_chunked(CHUNK)]
            return Fetched(url, reply.status, reply.headers, join_chunks(chunks))

    async def close(self) -> None:
        await self.session.close()


class HttpxClient:
    """httpx: one AsyncClient with the proxy set on the client, ``max_connections`` = lanes.

    httpcore pools proxied http:// connections per target host and, on every request, scans its
    idle connections once per idle connection (O(n^2)); keeping hundreds alive costs far more
    CPU than reconnecting, so ``max_keepalive_connections`` stays at httpx's default of 20.
    """

    def __init__(self, proxy: str, lanes: int, keepalive: int = 20) -> None:
        self.proxy = proxy
        self.lanes = lanes
        self.keepalive = keepalive

    async def open(self) -> None:
        import httpx

        self.client = httpx.AsyncClient(
            proxy=self.proxy,
            headers=HEADERS,
            timeout=TIMEOUT,
            limits=httpx.Limits(
                max_connections=self.lanes, max_keepalive_connections=self.keepalive
            ),
            follow_redirects=False,
            trust_env=False,
        )

    async def fetch(self, url: str) -> Fetched:
        async with self.client.stream("GET", url) as reply:
            # aiter_bytes decodes gzip; aiter_raw would not.
            chunks = [chunk async for chunk in reply.aiter_bytes(CHUNK)]
            return Fetched(url, reply.status_code, reply.headers, join_chunks(chunks))

    async def close(self) -> None:
        await self.client.aclose()


class RawClient:
    """The floor: HTTP/1.1 by hand over asyncio streams, one keep-alive connection per lane.

    Knows just enough for this server (Content-Length bodies, gzip); not a candidate.
    """

    def __init__(self, proxy: str) -> None:
        host, _, port = proxy.removeprefix("http://").rpartition(":")
        self.address = (host, int(port))
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.head = "".join(f"{name}: {value}\r\n" for name, value in HEADERS.items())

    async def open(self) -> None:
        pass

    async def fetch(self, url: str) -> Fetched:
        if sys.version_info < (3, 11):  # no asyncio.timeout: wait_for, a task per request
            return await asyncio.wait_for(self._fetch(url), TIMEOUT)
        async with asyncio.timeout(TIMEOUT):
            return await self._fetch(url)

    async def _fetch(self, url: str) -> Fetched:
        reader, writer = self.idle.pop() if self.idle else await self._connect()
        host = split_url(url)[0]
        writer.write(f"GET {url} HTTP/1.1\r\nHost: {host}\r\n{self.head}\r\n".encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split(" ", 2)[1])
        headers = [tuple(line.split(": ", 1)) for line in head[1:-2]]
        fields = {name.lower(): value for name, value in headers}
        length = int(fields["content-length"])
        if length > MAX_BODY:
            raise BodyTooLarge(f"body over {MAX_BODY} bytes")
        gzipped = "gzip" in fields.get("content-encoding", "")
        gunzip = zlib.decompressobj(wbits=31) if gzipped else None
        chunks = []
        while length:
            chunk = await reader.read(min(length, CHUNK))
            if not chunk:
                raise ConnectionError("connection closed inside a body")
            length -= len(chunk)
            chunks.append(gunzip.decompress(chunk) if gunzip else chunk)
        if fields.get("connection") != "close":
            self.idle.append((reader, writer))
        return Fetched(url, status, headers, join_chunks(chunks))

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(*self.address)

    async def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


# -- the drivers ------------------------------------------------------------------------------


def cpu_seconds() -> float:
    """User + system CPU of this process, all threads included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def failed(url: str, error: BaseException) -> Fetched:
    return Fetched(url, error=f"{type(error).__name__}: {error}"[:200])


def crawl_with_threads(
    client: RequestsClient, rotation: HostRotation, lanes: int, threads: int
) -> tuple[list[Fetched], float, float]:
    """Fetch everything with ``lanes`` pool threads; return answers, wall and CPU seconds."""
    answers: list[Fetched] = []

    def lane() -> None:
        while (item := rotation.take()) is not None:
            host, url = item
            try:
                answers.append(client.fetch(url))
            except Exception as error:  # noqa: BLE001 - every failure is counted, none stops a run
                answers.append(failed(url, error))
            rotation.give_back(host)

    client.open()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        wall, cpu = time.perf_counter(), cpu_seconds()
        for future in [pool.submit(lane) for _ in range(lanes)]:
            future.result()
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    client.close()
    return answers, wall, cpu


async def crawl_with_loop(
    client: AiohttpClient | HttpxClient | RawClient, rotation: HostRotation, lanes: int
) -> tuple[list[Fetched], float, float]:
    """Fetch everything with ``lanes`` coroutines; return answers, wall and CPU seconds."""
    answers: list[Fetched] = []

    async def lane() -> None:
        while (item := rotation.take()) is not None:
            host, url = item
            try:
                answers.append(await client.fetch(url))
            except Exception as error:  # noqa: BLE001 - every failure is counted, none stops a run
                answers.append(failed(url, error))
            rotation.give_back(host)

    await client.open()
    wall, cpu = time.perf_counter(), cpu_seconds()
    await asyncio.gather(*(lane() for _ in range(lanes)))
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    await client.close()
    return answers, wall, cpu


def crawl_from_another_thread(
    client: AiohttpClient, rotation: HostRotation, lanes: int
) -> tuple[list[Fetched], float, float]:
    """As ``crawl_with_loop``, but the loop runs in its own thread and this thread feeds it.

    The shape of the crawler's fetch operator in PyFlink's thread mode
    (``crawl.http.io_loop.IoLoop``): the operator's thread submits each fetch with
    ``run_coroutine_threadsafe`` and collects the finished ones from a queue, so the figure includes
    the handoff between the two threads.
    """
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    finished: queue.SimpleQueue[tuple[str, Fetched]] = queue.SimpleQueue()

    async def fetch(host: str, url: str) -> None:
        try:
            answer = await client.fetch(url)
        except Exception as error:  # noqa: BLE001 - every failure is counted, none stops a run
            answer = failed(url, error)
        finished.put((host, answer))

    def submit_ready() -> int:
        submitted = 0
        while in_flight + submitted < lanes and (item := rotation.take()) is not None:
            asyncio.run_coroutine_threadsafe(fetch(*item), loop)
            submitted += 1
        return submitted

    asyncio.run_coroutine_threadsafe(client.open(), loop).result()
    answers: list[Fetched] = []
    wall, cpu = time.perf_counter(), cpu_seconds()
    in_flight = 0
    in_flight += submit_ready()
    while in_flight:
        host, answer = finished.get()
        in_flight -= 1
        answers.append(answer)
        rotation.give_back(host)
        in_flight += submit_ready()
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    asyncio.run_coroutine_threadsafe(client.close(), loop).result()
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()
    return answers, wall, cpu


def memory_kib(field: str) -> int:
    """A memory figure of this process from /proc/self/status (VmRSS: now, VmHWM: peak), KiB.

    Not ``ru_maxrss``: Linux carries it over from the parent across fork and exec, so a small
    worker would report its parent's peak.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def run_worker(
    client_name: str, proxy: str, urls_path: str, lanes: int, threads: int, keepalive: int
) -> dict:
    """One measured run in this process; the figures and a digest of every answer."""
    if client_name != "raw":  # the library counts in the RSS at start, as in the crawler
        importlib.import_module(client_name.removesuffix("-fed"))
    rotation = HostRotation(json.loads(Path(urls_path).read_text()))
    rss_before = memory_kib("VmRSS")
    if client_name == "requests":
        client = RequestsClient(proxy, threads)
        answers, wall, cpu = crawl_with_threads(client, rotation, lanes, threads)
    elif client_name == "aiohttp-fed":
        fed = AiohttpClient(proxy, lanes)
        answers, wall, cpu = crawl_from_another_thread(fed, rotation, lanes)
    else:
        loop_client = {
            "aiohttp": lambda: AiohttpClient(proxy, lanes),
            "httpx": lambda: HttpxClient(proxy, lanes, keepalive),
            "raw": lambda: RawClient(proxy),
        }[client_name]()
        answers, wall, cpu = asyncio.run(crawl_with_loop(loop_client, rotation, lanes))
    return {
        "wall": wall,
        "cpu": cpu,
        "rss_before_kib": rss_before,
        "peak_rss_kib": memory_kib("VmHWM"),
        # url -> [status, CRC-32 of the decoded body, header count], or the error.
        "answers": {
            a.url: a.error or [a.status, zlib.crc32(a.body), len(a.headers)] for a in answers
        },
    }


# -- the parent: plan, run, check, report ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Spec:
    """One client setting: the client, hosts in flight, and threads (requests only)."""

    client: str
    hosts_in_flight: int
    threads: int = 0

    @property
    def lanes(self) -> int:
        return min(self.hosts_in_flight, self.threads) if self.threads else self.hosts_in_flight

    @property
    def label(self) -> str:
        if self.threads:
            return f"requests, {self.threads} threads"
        return {"aiohttp-fed": "aiohttp, fed by a thread"}.get(self.client, self.client)


def plan(clients: list[str], hosts_in_flight: list[int], threads: list[int]) -> list[Spec]:
    """Every setting to measure; thread counts above the hosts in flight add nothing (capped)."""
    specs: list[Spec] = []
    for flight in hosts_in_flight:
        for client in clients:
            if client == "requests":
                for count in sorted({min(n, flight) for n in threads}):
                    specs.append(Spec(client, flight, count))
            else:
                specs.append(Spec(client, flight))
    return specs


def crawl_urls(expected: ExpectedCrawl) -> list[str]:
    """Every robots.txt, then every URL a polite crawl fetches: each URL once."""
    return [expected.robots_url(host) for host in expected.robots] + list(expected.fetch)


def spawn_worker(spec: Spec, proxy: str, urls_path: Path, httpx_keepalive: int) -> dict:
    """Run ``spec`` once in a fresh process; its figures and answers."""
    command = [sys.executable, __file__, "--worker", spec.client, "--proxy", proxy]
    command += ["--urls", str(urls_path), "--lanes", str(spec.lanes)]
    command += ["--threads", str(spec.threads), "--httpx-keepalive", str(httpx_keepalive)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{spec.label} worker failed:\n{done.stderr}")
    if done.stderr.strip():  # warnings, such as urllib3's "connection pool is full"
        print(f"  {spec.label} said: {done.stderr.strip()[:300]}", file=sys.stderr)
    return json.loads(done.stdout)


class LogTail:
    """The request log records written since the last call (the server flushes first)."""

    def __init__(self, server: SyntheticWebServer) -> None:
        self.server = server
        self.offset = 0

    def new_records(self) -> list[RequestRecord]:
        self.server.flush_log()
        assert self.server.log_path is not None
        with open(self.server.log_path, encoding="utf-8") as stream:
            stream.seek(self.offset)
            text = stream.read()
        self.offset += len(text.encode())
        return [RequestRecord(**json.loads(line)) for line in text.splitlines()]


def wrong_answers(answers: dict, truth: dict[str, list[int]]) -> tuple[int, int, list[str]]:
    """(errors, wrong answers, a few examples) of one run against the model's answers."""
    errors = wrong = 0
    examples = []
    for url, expected in truth.items():
        got = answers.get(url, "never fetched")
        if isinstance(got, str):
            errors += 1
            examples.append(f"{url}: {got}")
        elif got[:2] != expected:
            wrong += 1
            examples.append(f"{url}: got status/crc {got[:2]}, want {expected}")
    return errors, wrong, examples[:3]


def measure_web(
    name: str, config: WebConfig, specs: list[Spec], runs: int, httpx_keepalive: int
) -> list[dict]:
    """All runs of all specs on one web; one result dict per run."""
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        with SyntheticWebServer(config, Path(scratch) / "requests.jsonl") as server:
            web = server.web
            expected = web.expected_crawl(web.seeds(), "pyflink-crawler")
            urls = crawl_urls(expected)
            truth = {}
            for url in urls:
                answer = web.respond(*split_url(url))
                truth[url] = [answer.status, zlib.crc32(answer.body)]
            urls_path = Path(scratch) / "urls.json"
            urls_path.write_text(json.dumps(urls))
            hosts = len({split_url(url)[0] for url in urls})
            print(f"{name} web: {len(urls)} URLs on {hosts} hosts, {len(expected.slow)} slow")
            log = LogTail(server)
            warm_up = Spec("raw", max(spec.hosts_in_flight for spec in specs))
            spawn_worker(warm_up, server.proxy_url, urls_path, httpx_keepalive)
            log.new_records()
            for round_number in range(runs):
                shift = round_number % len(specs)
                for spec in specs[shift:] + specs[:shift]:
                    run = spawn_worker(spec, server.proxy_url, urls_path, httpx_keepalive)
                    errors, wrong, examples = wrong_answers(run.pop("answers"), truth)
                    problems = audit_log(log.new_records(), expected)
                    run.update(web=name, spec=spec, pages=len(urls), errors=errors, wrong=wrong)
                    run.update(problems=len(problems), examples=examples + problems[:3])
                    results.append(run)
                    print(
                        f"  round {round_number + 1} {spec.label:<22} in flight {spec.lanes:>3}:"
                        f" {len(urls) / run['wall']:5.0f} pages/s,"
                        f" {run['cpu'] / len(urls) * 1e6:6.0f} us CPU/request,"
                        f" errors {errors}, wrong {wrong}, audit problems {len(problems)}",
                        flush=True,
                    )
                    for example in run["examples"]:
                        print(f"    {example}")
    return results


def summarise(results: list[dict]) -> list[dict]:
    """One row per (web, spec): medians over the runs, totals of errors."""
    groups: dict[tuple[str, Spec], list[dict]] = collections.defaultdict(list)
    for run in results:
        groups[(run["web"], run["spec"])].append(run)
    rows = []
    for (web, spec), runs in groups.items():
        pages = runs[0]["pages"]
        per_request = [r["cpu"] / pages * 1e6 for r in runs]
        rows.append(
            {
                "web": web,
                "spec": spec,
                "runs": len(runs),
                "pages_per_s": statistics.median(pages / r["wall"] for r in runs),
                "cpu_per_1000": statistics.median(r["cpu"] / pages * 1000 for r in runs),
                "us_per_request": statistics.median(per_request),
                "us_min": min(per_request),
                "us_max": max(per_request),
                "peak_rss_mib": statistics.median(r["peak_rss_kib"] / 1024 for r in runs),
                "rss_before_mib": statistics.median(r["rss_before_kib"] / 1024 for r in runs),
                "errors": sum(r["errors"] + r["wrong"] for r in runs),
                "problems": sum(r["problems"] for r in runs),
            }
        )
    return rows


def print_table(rows: list[dict], reference: str) -> None:
    """A Markdown table; ratios are against ``reference`` at the same web and hosts in flight."""
    print(
        f"| web | client | in flight | pages/s | CPU s / 1000 pages | CPU µs / request (min–max)"
        f" | × CPU vs {reference} | × pages/s vs {reference} | peak RSS MiB (at start)"
        f" | errors | audit problems |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = {(r["web"], r["spec"].hosts_in_flight): r for r in rows if r["spec"].client == reference}
    for r in rows:
        ref = base.get((r["web"], r["spec"].hosts_in_flight))
        cpu_ratio = f"{r['us_per_request'] / ref['us_per_request']:.2f}" if ref else "-"
        rate_ratio = f"{r['pages_per_s'] / ref['pages_per_s']:.2f}" if ref else "-"
        print(
            f"| {r['web']} | {r['spec'].label} | {r['spec'].lanes} | {r['pages_per_s']:.0f}"
            f" | {r['cpu_per_1000']:.2f} | {r['us_per_request']:.0f}"
            f" ({r['us_min']:.0f}–{r['us_max']:.0f}) | {cpu_ratio} | {rate_ratio}"
            f" | {r['peak_rss_mib']:.0f} ({r['rss_before_mib']:.0f}) | {r['errors']}"
            f" | {r['problems']} |"
        )


def describe_machine() -> str:
    """CPU, Python and library versions, and the load average: the context of the figures."""
    from importlib import metadata

    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown",
    )
    versions = []
    for name in ("requests", "urllib3", "aiohttp", "httpx", "httpcore", "anyio", "sniffio"):
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} absent")
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return (
        f"{os.cpu_count()} CPUs ({model}); Python {sys.version.split()[0]}; "
        f"{'; '.join(versions)}; load average {load}"
    )


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="The module docstring describes the method.",
    )
    parser.add_argument("--hosts", type=int, default=300, help="hosts of the synthetic web")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic web")
    parser.add_argument("--runs", type=int, default=3, help="measured runs of each setting")
    parser.add_argument(
        "--hosts-in-flight",
        type=int,
        nargs="+",
        default=[100, 300],
        help="hosts with a request in flight at once, one setting each (default: 100 300)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[32, 128, 256],
        help="thread pool sizes for requests, capped at the hosts in flight (default: 32 128 256)",
    )
    parser.add_argument(
        "--clients",
        nargs="+",
        choices=CLIENTS,
        default=list(CLIENTS),
        help="clients to measure (default: all; raw is the no-library floor)",
    )
    parser.add_argument(
        "--httpx-keepalive",
        type=int,
        default=20,
        help="httpx max_keepalive_connections (default 20, httpx's own; more costs more CPU)",
    )
    parser.add_argument(
        "--no-slow", action="store_true", help="also measure on a web without slow pages"
    )
    parser.add_argument("--json", type=Path, help="also write every run's figures to this file")
    # Internal: one measured run in this process, printed as JSON.
    parser.add_argument("--worker", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--proxy", help=argparse.SUPPRESS)
    parser.add_argument("--urls", help=argparse.SUPPRESS)
    parser.add_argument("--lanes", type=int, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Measure every setting on the default web (and one without slow pages), print a table."""
    args = parse_arguments(argv)
    if args.worker:
        figures = run_worker(
            args.worker, args.proxy, args.urls, args.lanes, args.threads[0], args.httpx_keepalive
        )
        print(json.dumps(figures))
        return
    print(describe_machine())
    specs = plan(args.clients, args.hosts_in_flight, args.threads)
    config = WebConfig(seed=args.seed, hosts=args.hosts, crawl_delay_host_share=0.0)
    webs = [("default", config)]
    if args.no_slow:
        webs.append(("no slow pages", dataclasses.replace(config, slow_page_share=0.0)))
    results = []
    for name, web_config in webs:
        results += measure_web(name, web_config, specs, args.runs, args.httpx_keepalive)
    if args.json:
        args.json.write_text(
            json.dumps([{**r, "spec": dataclasses.asdict(r["spec"])} for r in results], indent=1)
        )
    print(f"\nafter the runs: {describe_machine().rpartition('; ')[2]}\n")
    print_table(summarise(results), "aiohttp" if "aiohttp" in args.clients else args.clients[0])


if __name__ == "__main__":
    main()
