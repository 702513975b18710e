"""Scrapy on the synthetic web: the baseline our crawler's pages/s is compared with.

``python bench/scrapy_baseline.py --hosts 300 --delay 0.0 --budget 3000 --runs 3`` starts the
synthetic web, crawls it with Scrapy from every host's home page through the web's proxy, prints
the figures as JSON and audits the server's request log (problems are reported, not fatal).

:func:`run_scrapy` is the entry point for a benchmark: each call runs one crawl in a child
process, because Scrapy's Twisted reactor cannot be started twice in one process.

Scrapy is set up as a polite crawler comparable to ours (:func:`scrapy_settings`): robots.txt
obeyed with Protego for our product token, one request at a time per host, a fixed delay between
the starts of two downloads of a host, no retries, no cookies, redirects followed by Scrapy's
``RedirectMiddleware``. Four departures from stock Scrapy 2.19, each explained where it is made,
keep it polite or spare it avoidable work: the epoll reactor (:data:`REACTORS`),
``CONCURRENT_ITEMS`` 1 (:class:`ScrapyOptions`), :class:`SlotPerHostMiddleware` and links in
canonical form (:class:`BaselineSpider`). What stays Scrapy's own: a robots.txt answering 5xx is
parsed like any other (allow all), Crawl-delay is ignored, and the delay is kept where the
downloader hands a request on, not on the wire; when Scrapy is CPU-bound a request reaches the
server 0.6 s later than that (median, 300 hosts, delay 0.5 s), so the server sees some gaps
shorter than the delay.

Where Scrapy and our crawler count differently, the figures follow ours:

- ``pages`` is every download that is not a robots.txt, each 3xx included (our crawler records a
  3xx as a fetch and re-enters its target as a new URL; Scrapy follows it within one request).
- ``CLOSESPIDER_PAGECOUNT`` counts Scrapy's ``response_received``: robots.txt answers count, 3xx
  do not, and every request already in the downloader still finishes after it fires (10 to 15%
  more with 300 hosts), so ``pages`` differs from the budget.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler, CrawlerProcess
from scrapy.http import HtmlResponse, Request, Response

# The synthetic web lives in the repository, next to this folder.
_REPOSITORY = Path(__file__).resolve().parent.parent
if str(_REPOSITORY) not in sys.path:
    sys.path.insert(0, str(_REPOSITORY))

from synthweb import (  # noqa: E402
    ExpectedCrawl,
    RequestRecord,
    SyntheticWebServer,
    WebConfig,
    audit_log,
)

__all__ = [
    "DEFAULT_USER_AGENT",
    "REACTORS",
    "BaselineSpider",
    "ProxyMiddleware",
    "ResponseTally",
    "ScrapyOptions",
    "SlotPerHostMiddleware",
    "crawl_here",
    "run_scrapy",
    "scrapy_settings",
    "start_gaps",
    "summarise_audit",
]

DEFAULT_USER_AGENT = "pyflink-crawler/0.1 (+https://github.com/pyflink-crawler/pyflink-crawler)"

#: Twisted reactors to run Scrapy on. Scrapy's default, asyncio, breaks the per-host limit with
#: DOWNLOAD_DELAY 0 (Scrapy 2.14 to 2.19): Downloader._process_queue starts each download as an
#: asyncio task, which marks itself as transferring only when it first runs, so one pass of the
#: loop hands every queued request of the host to the network at once. With epoll the coroutine
#: runs at once, up to its first real wait, and the limit holds.
REACTORS = {
    "epoll": "twisted.internet.epollreactor.EPollReactor",
    "asyncio": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
}

# Scrapy stats copied into the result: enough to see why requests were dropped or failed.
_STAT_PREFIXES = (
    "downloader/exception",
    "downloader/request_count",
    "downloader/response_count",
    "dupefilter/",
    "finish_reason",
    "response_received_count",
    "retry/",
    "robotstxt/",
    "scheduler/enqueued",
    "log_count/ERROR",
    "log_count/WARNING",
)


@dataclasses.dataclass(frozen=True)
class ScrapyOptions:
    """How Scrapy crawls; the defaults are those of the benchmark."""

    #: Seconds between the starts of two downloads of one host (DOWNLOAD_DELAY).
    delay: float = 0.0
    #: CLOSESPIDER_PAGECOUNT; 0: no budget (see the module docstring for what Scrapy counts).
    budget: int = 0
    user_agent: str = DEFAULT_USER_AGENT
    #: The robots.txt group Protego looks for; None: the first word of ``user_agent``.
    robots_token: str | None = None
    #: DOWNLOAD_TIMEOUT in seconds, connection and whole response.
    timeout: float = 20.0
    #: CONCURRENT_REQUESTS: enough for every host of the web to have a request in flight.
    concurrency: int = 500
    #: CONCURRENT_ITEMS. Scrapy's default, 100, makes it start 100 cooperative tasks (asyncio
    #: tasks on that reactor) for the output of every response, however little it yields: about
    #: half of Scrapy's CPU time on this web. This spider yields requests only, which the
    #: engine takes synchronously, so 1 changes nothing but the cost.
    concurrent_items: int = 1
    #: A key of REACTORS.
    reactor: str = "epoll"
    #: Write links in canonical form before Scrapy sees them (see BaselineSpider).
    normalize_urls: bool = True

    def __post_init__(self) -> None:
        if self.reactor not in REACTORS:
            raise ValueError(f"reactor must be one of {sorted(REACTORS)}, got {self.reactor!r}")
        for name in ("delay", "budget"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("timeout", "concurrency", "concurrent_items"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")

    @property
    def token(self) -> str:
        """The product token robots.txt groups are matched against."""
        return self.robots_token or self.user_agent.split("/", 1)[0].strip()


def scrapy_settings(proxy_url: str, options: ScrapyOptions) -> dict[str, Any]:
    """The Scrapy settings of a polite crawl through the HTTP proxy ``proxy_url``, like ours."""
    return {
        "BOT_NAME": "scrapy-baseline",
        "USER_AGENT": options.user_agent,
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_PARSER": "scrapy.robotstxt.ProtegoRobotParser",
        "ROBOTSTXT_USER_AGENT": options.token,
        "CONCURRENT_REQUESTS": options.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": options.delay,
        # Scrapy 2.19 replaces RANDOMIZE_DOWNLOAD_DELAY=False (deprecated, warns) with this.
        "DOWNLOAD_DELAY_JITTER": 0.0,
        "AUTOTHROTTLE_ENABLED": False,
        "CLOSESPIDER_PAGECOUNT": options.budget,
        "DOWNLOAD_TIMEOUT": options.timeout,
        "CONCURRENT_ITEMS": options.concurrent_items,
        # Our crawler does not retry within a crawl pass either: one request, one outcome.
        "RETRY_ENABLED": False,
        "REDIRECT_ENABLED": True,
        # The synthetic web sets no cookies; the middleware would only cost time.
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "TWISTED_REACTOR": REACTORS[options.reactor],
        # Scrapy's default since 2.13, named because a broad crawl depends on it: it hands the
        # downloader requests of idle hosts first instead of piling up one host's links.
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        # Before HttpProxyMiddleware (750), which then uses meta["proxy"] as it is.
        "DOWNLOADER_MIDDLEWARES": {ProxyMiddleware: 740, SlotPerHostMiddleware: 1000},
        "BASELINE_PROXY": proxy_url,
    }


class ProxyMiddleware:
    """Sends every request, robots.txt included, through the proxy in ``BASELINE_PROXY``.

    Setting ``meta["proxy"]`` in the spider would miss the robots.txt requests, which
    RobotsTxtMiddleware makes itself. The ``http_proxy`` environment variable reaches them too,
    but then HttpProxyMiddleware calls ``urllib.request.proxy_bypass`` on every request, which
    scans the whole environment each time (0.4 ms a request here).
    """

    def __init__(self, proxy_url: str) -> None:
        self.proxy_url = proxy_url

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProxyMiddleware:
        return cls(crawler.settings["BASELINE_PROXY"])

    def process_request(self, request: Request) -> None:
        request.meta.setdefault("proxy", self.proxy_url)


class SlotPerHostMiddleware:
    """Puts every request in the download slot of its own host, redirects included.

    RedirectMiddleware copies the whole ``meta`` of a request into its redirect, including the
    ``download_slot`` the downloader wrote there, so the target of a cross-host redirect would be
    fetched in the slot of the host that redirected, beside whatever its own host is fetching.
    Nothing in this crawl sets a slot on purpose, so the stale one is simply dropped.
    """

    def process_request(self, request: Request) -> None:
        request.meta.pop("download_slot", None)


class ResponseTally:
    """Counts downloads by status and body bytes, robots.txt apart from pages."""

    def __init__(self) -> None:
        self.pages = 0
        self.page_bytes = 0
        self.by_status: collections.Counter[int] = collections.Counter()
        self.robots = 0
        self.robots_by_status: collections.Counter[int] = collections.Counter()

    def add(self, status: int, body_bytes: int, *, robots: bool) -> None:
        """Count one download; ``body_bytes`` as received (before gzip decoding)."""
        if robots:
            self.robots += 1
            self.robots_by_status[status] += 1
        else:
            self.pages += 1
            self.page_bytes += body_bytes
            self.by_status[status] += 1


class BaselineSpider(scrapy.Spider):
    """Crawls from ``seeds``, following every ``<a href>`` of 200 HTML pages; stores nothing.

    With ``normalize_urls`` each link is written in the synthetic web's canonical form (no
    fragment, no default port, ``/`` for an empty path) before Scrapy sees it: Scrapy's
    duplicate filter keeps ``http://h:80/p`` and ``http://h/p`` apart, and its robots.txt cache is
    keyed by ``host:port``, so without it some pages and robots.txt files are fetched twice.
    """

    name = "baseline"

    def __init__(self, seeds: Sequence[str] = (), normalize_urls: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.seeds = list(seeds)
        self.normalize_urls = normalize_urls
        self.tally = ResponseTally()
        self.opened_at = 0.0
        self.closed_at = 0.0
        self.cpu_opened = 0.0
        self.cpu_closed = 0.0
        self.close_reason = ""

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> BaselineSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(spider._opened, signal=signals.spider_opened)
        crawler.signals.connect(spider._closed, signal=signals.spider_closed)
        return spider

    async def start(self) -> AsyncIterator[Request]:
        for url in self.seeds:
            yield Request(url, callback=self.parse)

    def parse(self, response: Response) -> Iterator[Request]:
        # Scrapy hands only 2xx to callbacks (HttpErrorMiddleware); the ground truth follows
        # links of 200 text/html pages only.
        if response.status != 200 or not isinstance(response, HtmlResponse):
            return
        for href in response.css("a::attr(href)").getall():
            url = self.link_url(response, href)
            if url is not None:
                yield Request(url, callback=self.parse)

    def link_url(self, response: Response, href: str) -> str | None:
        """The URL ``href`` points to, or None if it is not an http(s) URL."""
        try:
            url = response.urljoin(href.strip())
            parts = urlsplit(url)
            port = parts.port
        except ValueError:  # http://[bad and other unparsable references
            return None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        if not self.normalize_urls:
            return url
        default = 80 if parts.scheme == "http" else 443
        netloc = parts.hostname if port in (None, default) else f"{parts.hostname}:{port}"
        return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))

    def _downloaded(self, response: Response, request: Request, spider: scrapy.Spider) -> None:
        robots = bool(request.meta.get("dont_obey_robotstxt")) and (
            urlsplit(request.url).path == "/robots.txt"
        )
        self.tally.add(response.status, len(response.body), robots=robots)

    def _opened(self, spider: scrapy.Spider) -> None:
        self.opened_at = time.monotonic()
        self.cpu_opened = time.process_time()

    def _closed(self, spider: scrapy.Spider, reason: str) -> None:
        self.closed_at = time.monotonic()
        self.cpu_closed = time.process_time()
        self.close_reason = reason


def crawl_here(proxy_url: str, seeds: Sequence[str], options: ScrapyOptions) -> dict[str, Any]:
    """Run one crawl in this process and return its figures (see :func:`run_scrapy`).

    Starts Twisted's reactor, which cannot be started again: call it once per process.
    """
    process = CrawlerProcess(scrapy_settings(proxy_url, options))
    crawler = process.create_crawler(BaselineSpider)
    process.crawl(crawler, seeds=seeds, normalize_urls=options.normalize_urls)
    process.start()
    spider = crawler.spider
    assert isinstance(spider, BaselineSpider)
    tally = spider.tally
    elapsed = spider.closed_at - spider.opened_at
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    return {
        "pages": tally.pages,
        "elapsed_s": round(elapsed, 3),
        "pages_per_s": round(tally.pages / elapsed, 1) if elapsed > 0 else 0.0,
        "by_status": {str(k): v for k, v in sorted(tally.by_status.items())},
        "page_bytes": tally.page_bytes,
        "robots": tally.robots,
        "robots_by_status": {str(k): v for k, v in sorted(tally.robots_by_status.items())},
        "cpu_s": round(time.process_time(), 2),
        "crawl_cpu_s": round(spider.cpu_closed - spider.cpu_opened, 2),
        "cpu_ms_per_page": (
            round(1000 * (spider.cpu_closed - spider.cpu_opened) / tally.pages, 2)
            if tally.pages
            else 0.0
        ),
        "close_reason": spider.close_reason,
        "scrapy_stats": {
            key: value
            for key, value in sorted(stats.items())
            if key.startswith(_STAT_PREFIXES) and isinstance(value, int | float | str)
        },
    }


def run_scrapy(
    proxy_url: str,
    seeds: Iterable[str],
    options: ScrapyOptions | None = None,
    **changes: Any,
) -> dict[str, Any]:
    """Crawl from ``seeds`` through the HTTP proxy ``proxy_url`` with Scrapy in a child process.

    ``changes`` override fields of ``options`` (default :class:`ScrapyOptions`), e.g.
    ``run_scrapy(url, seeds, delay=0.5, budget=3000)``. Returns a dict: ``pages`` (downloads
    other than robots.txt, 3xx included), ``elapsed_s`` (spider opened to closed),
    ``pages_per_s``, ``by_status``, ``page_bytes`` (bodies as received), ``robots``,
    ``robots_by_status``, ``cpu_s`` (user + system CPU of the whole child, Python and Scrapy
    start-up included), ``crawl_cpu_s`` (spider opened to closed), ``wall_s`` (the child from
    start to exit), ``close_reason`` and a few of Scrapy's own stats. Raises RuntimeError if the
    child fails.
    """
    options = dataclasses.replace(options or ScrapyOptions(), **changes)
    job = {"proxy_url": proxy_url, "seeds": list(seeds), "options": dataclasses.asdict(options)}
    with tempfile.TemporaryDirectory(prefix="scrapy-baseline-") as tmp:
        job_path = Path(tmp) / "job.json"
        result_path = Path(tmp) / "result.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child-job",
            str(job_path),
            "--child-result",
            str(result_path),
        ]
        started = time.monotonic()
        completed = subprocess.run(command, stdin=subprocess.DEVNULL, check=False)
        wall = time.monotonic() - started
        if completed.returncode != 0 or not result_path.exists():
            raise RuntimeError(f"Scrapy child exited with {completed.returncode}")
        result = json.loads(result_path.read_text(encoding="utf-8"))
    result["wall_s"] = round(wall, 3)
    return result


def _child(job_path: str, result_path: str) -> None:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    result = crawl_here(job["proxy_url"], job["seeds"], ScrapyOptions(**job["options"]))
    Path(result_path).write_text(json.dumps(result), encoding="utf-8")


# -- audit of the server's request log -----------------------------------------------------

# Audit line patterns (synthweb.audit) -> short category names.
_AUDIT_CATEGORIES = (
    ("overlap on", "overlap"),
    ("delay of", "delay"),
    ("requested but disallowed", "disallowed_fetched"),
    ("requested but not reachable", "not_in_ground_truth"),
    ("ground truth says", "wrong_status"),
    (" times", "duplicate"),
    ("robots.txt never requested", "robots_never_requested"),
    ("never requested", "never_requested"),
    ("requested before", "before_robots"),
    ("lacks the token", "user_agent"),
    ("robots.txt of a host", "robots_not_needed"),
)


def summarise_audit(
    problems: Sequence[str], expected: ExpectedCrawl, *, examples: int = 3
) -> dict[str, Any]:
    """Count audit problems by kind, with a few examples of each.

    Delay violations on hosts whose robots.txt sets a Crawl-delay are counted apart
    (``crawl_delay``): Scrapy does not read Crawl-delay at all.
    """
    counts: collections.Counter[str] = collections.Counter()
    samples: dict[str, list[str]] = collections.defaultdict(list)
    for line in problems:
        category = next((name for text, name in _AUDIT_CATEGORIES if text in line), "other")
        if category == "delay" and line.rsplit(" ", 1)[-1] in expected.crawl_delays:
            category = "crawl_delay"
        counts[category] += 1
        if len(samples[category]) < examples:
            samples[category].append(line)
    return {"total": len(problems), "by_kind": dict(counts.most_common()), "examples": samples}


def start_gaps(records: Iterable[RequestRecord]) -> dict[str, float]:
    """Minimum and median gap between consecutive request starts of one host, over all hosts."""
    starts: dict[str, list[float]] = collections.defaultdict(list)
    for record in records:
        starts[record.host].append(record.start)
    gaps = [
        b - a
        for host_starts in starts.values()
        for a, b in zip(sorted(host_starts), sorted(host_starts)[1:], strict=False)
    ]
    if not gaps:
        return {}
    return {"min_s": round(min(gaps), 3), "median_s": round(statistics.median(gaps), 3)}


def _machine_busy_seconds() -> float:
    """CPU seconds all processes of the machine have used since boot (``/proc/stat``)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    idle = int(fields[3]) + int(fields[4])  # idle and iowait
    return (sum(int(f) for f in fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _wait_until_idle(limit: float, *, window: float = 2.0, busy_share: float = 0.15) -> float:
    """Wait, at most ``limit`` seconds, until the machine used less than ``busy_share`` of one
    core over ``window`` seconds; return the seconds waited. For shared benchmark machines."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        busy = _machine_busy_seconds()
        time.sleep(window)
        if _machine_busy_seconds() - busy < busy_share * window:
            break
    return round(time.monotonic() - started, 1)


def _server_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _one_run(
    config: WebConfig, options: ScrapyOptions, log_path: Path, *, examples: int, settle: float
) -> dict[str, Any]:
    """Crawl a fresh server once, then audit its request log."""
    waited = _wait_until_idle(settle) if settle > 0 else 0.0
    load = os.getloadavg()[0]
    with SyntheticWebServer(config, log_path) as server:
        seeds = server.web.seeds()
        server_cpu = _server_cpu_seconds(server.pid)
        machine_busy = _machine_busy_seconds()
        result = run_scrapy(server.proxy_url, seeds, options)
        machine_busy = _machine_busy_seconds() - machine_busy
        result["server_cpu_s"] = round(_server_cpu_seconds(server.pid) - server_cpu, 2)
        records = server.request_log()
        expected = server.web.expected_crawl(seeds, options.token)
    # What other processes took from the machine meanwhile: a run with much of it is suspect.
    result["others_cpu_s"] = round(machine_busy - result["cpu_s"] - result["server_cpu_s"], 2)
    result["waited_for_idle_s"] = waited
    result["load_before"] = round(load, 2)
    result["server_requests"] = len(records)
    result["server_pages"] = sum(1 for r in records if r.path != "/robots.txt")
    result["start_gaps"] = start_gaps(records)
    problems = audit_log(records, expected, min_delay=options.delay, complete=options.budget == 0)
    result["audit"] = summarise_audit(problems, expected, examples=examples)
    return result


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=300, help="hosts of the synthetic web")
    parser.add_argument("--pages-per-host", type=int, default=20, help="mean pages per host")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic web")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between requests")
    parser.add_argument("--budget", type=int, default=0, help="CLOSESPIDER_PAGECOUNT; 0: none")
    parser.add_argument("--runs", type=int, default=1, help="crawls, each on a fresh server")
    parser.add_argument("--timeout", type=float, default=20.0, help="DOWNLOAD_TIMEOUT")
    parser.add_argument("--concurrency", type=int, default=500, help="CONCURRENT_REQUESTS")
    parser.add_argument(
        "--concurrent-items", type=int, default=1, help="CONCURRENT_ITEMS (Scrapy's: 100)"
    )
    parser.add_argument("--user-agent", default=DEFAULT_USER_AGENT)
    parser.add_argument(
        "--reactor", choices=sorted(REACTORS), default="epoll", help="see REACTORS in the source"
    )
    parser.add_argument(
        "--no-normalize", action="store_true", help="give Scrapy the links as resolved, unchanged"
    )
    parser.add_argument("--log-dir", help="keep the request logs here (default: a temp dir)")
    parser.add_argument("--examples", type=int, default=3, help="audit examples per kind")
    parser.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="before each run, wait up to this many seconds for the machine to be idle",
    )
    # How run_scrapy starts its child: one crawl per process.
    parser.add_argument("--child-job", help=argparse.SUPPRESS)
    parser.add_argument("--child-result", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Crawl the synthetic web ``--runs`` times with Scrapy; print the figures as JSON."""
    args = _parse_args(argv)
    if args.child_job:
        _child(args.child_job, args.child_result)
        return
    config = WebConfig(seed=args.seed, hosts=args.hosts, pages_per_host=args.pages_per_host)
    try:
        options = ScrapyOptions(
            delay=args.delay,
            budget=args.budget,
            user_agent=args.user_agent,
            timeout=args.timeout,
            concurrency=args.concurrency,
            concurrent_items=args.concurrent_items,
            reactor=args.reactor,
            normalize_urls=not args.no_normalize,
        )
    except ValueError as error:
        raise SystemExit(f"error: {error}") from error
    with tempfile.TemporaryDirectory(prefix="scrapy-baseline-logs-") as tmp:
        log_dir = Path(args.log_dir or tmp)
        log_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        runs = []
        for run in range(args.runs):
            log_path = log_dir / f"scrapy-{stamp}-d{args.delay:g}-run{run}.jsonl"
            runs.append(
                _one_run(config, options, log_path, examples=args.examples, settle=args.settle)
            )
            print(json.dumps({"run": run, **runs[-1]}), file=sys.stderr, flush=True)
    figures = (
        "pages_per_s",
        "pages",
        "elapsed_s",
        "cpu_s",
        "crawl_cpu_s",
        "cpu_ms_per_page",
        "server_cpu_s",
        "others_cpu_s",
    )
    report = {
        "web": {"seed": args.seed, "hosts": args.hosts, "pages_per_host": args.pages_per_host},
        "options": dataclasses.asdict(options),
        "median": {key: statistics.median(run[key] for run in runs) for key in figures},
        "audit_problems": [run["audit"]["by_kind"] for run in runs],
        "runs": runs,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
