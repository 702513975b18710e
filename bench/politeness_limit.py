"""How close a crawl comes to the politeness limit: time to a share of the reachable pages,
ours against Scrapy, on the same synthetic web, in the same run.

A polite crawler cannot fetch faster than its hosts allow. The **politeness limit** is what a
crawler that knew every host and every page from the start would do: each host's robots.txt at
time 0, then its reachable pages one per allowed interval (the politeness delay, or the host's
Crawl-delay when it asks for more), every host at once. Read from the web's ground truth
(:meth:`synthweb.SyntheticWeb.expected_crawl`), it gives the earliest time at which a crawl can
have fetched 25, 50, 75 and 90 % of the reachable pages (responses taken as instant). A second
reference takes discovery into account: a URL is known only once a page linking to it was
fetched, with no time lost in between (:func:`discovery_times`); where it equals the first, the
web's link structure costs nothing and what separates a crawler from the limit is its own.

Each round starts the synthetic web afresh (same seed) and crawls it with our crawler
(``python -m job crawl``, the whole pipeline on the local MiniCluster, **its default
configuration**: the response-time factor of the politeness rules included) and with Scrapy
(``bench/scrapy_baseline.py``: one request per host at a time, the same delay, robots.txt
obeyed; Scrapy ignores Crawl-delay), in alternating order. From the server's request log, for
each crawl, with time counted from its first request (robots.txt included), the start-up of
either crawler left out:

- the time until 25/50/75/90 % of the reachable pages had been requested (a page counts at the
  start of its first request);
- pages/s in consecutive windows (``--window`` seconds; every page request, repeats included);
- CPU per page: user and system time of every process of the crawler (our JVM and its embedded
  Python; Scrapy's child process) over the whole run, start-up and the idle wait at the end
  included, divided by its page requests.

It prints a table of the times beside the limit's, the ratios the targets are stated in (ours
over the limit at 50 and 75 %, ours over Scrapy at 50 % and in CPU per page; medians over
rounds), and draws pages/s over time (``--plot-window`` seconds a point) of each crawler's
first round and of the limit (``--svg``).

With ``--baseline CHECKOUT`` another checkout of our crawler crawls the same web in the same
rounds (the crawlers alternated), and the ratios of ours to it are printed too.

Usage: ``python bench/politeness_limit.py --hosts 200 --runs 2 --svg pages_per_s.svg``.
"""

from __future__ import annotations

import argparse
import collections
import heapq
import math
import statistics
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

_REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_REPOSITORY))
sys.path.insert(0, str(_REPOSITORY / "bench"))

from charts import Curve, line_chart  # noqa: E402
from e2e_throughput import run_ours  # noqa: E402
from rounds import alternate, check_scrapy, write_json  # noqa: E402

from synthweb import RequestRecord, SyntheticWebServer, WebConfig  # noqa: E402
from synthweb.audit import is_page_path  # noqa: E402

TOKEN = "pyflink-crawler"
SHARES = (0.25, 0.50, 0.75, 0.90)
_COLOURS = {"limit": "#999999", "ours": "#1f77b4", "scrapy": "#d62728"}


# -- the measures ------------------------------------------------------------------------------


def limit_times(
    pages: Iterable[str], delay: float, crawl_delays: Mapping[str, float]
) -> list[float]:
    """When each of ``pages`` (URLs) is fetched at the politeness limit, sorted: a host's
    robots.txt at 0, then its pages at one per ``max(delay, its Crawl-delay)`` seconds."""
    per_host = collections.Counter(url.split("/", 3)[2] for url in pages)
    times = []
    for host, count in per_host.items():
        interval = max(delay, crawl_delays.get(host, 0.0))
        times += [interval * i for i in range(1, count + 1)]
    return sorted(times)


def discovery_times(
    web: Any, seeds: Iterable[str], pages: Iterable[str], delay: float,
    crawl_delays: Mapping[str, float],
) -> list[float]:
    """When each of ``pages`` is fetched, sorted, by a crawler that knows a URL only once a page
    linking to it (or redirecting to it) was fetched, and is otherwise at the politeness limit:
    no time lost between a fetch and what it finds, a host's robots.txt when its first URL is
    found, then a page of the host every allowed interval, in the order found."""
    wanted = set(pages)
    queues: dict[str, collections.deque[tuple[float, str]]] = collections.defaultdict(
        collections.deque)
    next_allowed: dict[str, float] = {}
    waking: list[tuple[float, str]] = []
    idle: set[str] = set()
    seen: set[str] = set()

    def found(url: str, at: float) -> None:
        if url not in wanted or url in seen:
            return
        seen.add(url)
        host = url.split("/", 3)[2]
        if host not in next_allowed:  # its robots.txt, now
            next_allowed[host] = at + max(delay, crawl_delays.get(host, 0.0))
            idle.add(host)
        queues[host].append((at, url))
        if host in idle:
            idle.discard(host)
            heapq.heappush(waking, (max(at, next_allowed[host]), host))

    for seed in seeds:
        found(seed, 0.0)
    times = []
    while waking:
        now, host = heapq.heappop(waking)
        _, url = queues[host].popleft()
        times.append(now)
        page = web.page(url)
        if page is not None:
            for link in page.links:
                found(link.url, now)
            if page.redirect_to:
                found(page.redirect_to, now)
        next_allowed[host] = now + max(delay, crawl_delays.get(host, 0.0))
        if queues[host]:
            heapq.heappush(waking, (max(next_allowed[host], queues[host][0][0]), host))
        else:
            idle.add(host)
    return sorted(times)


def crawl_times(records: Iterable[RequestRecord], reachable: Iterable[str]) -> list[float]:
    """When each reachable page was first requested, sorted, in seconds from the crawl's first
    request."""
    records = sorted(records, key=lambda record: record.start)
    if not records:
        return []
    origin = records[0].start
    wanted = set(reachable)
    first: dict[str, float] = {}
    for record in records:
        url = f"http://{record.host}{record.path}"
        if url in wanted and url not in first:
            first[url] = record.start - origin
    return sorted(first.values())


def time_to(times: list[float], total: int, share: float) -> float | None:
    """The time by which ``share`` of ``total`` pages were fetched (``times`` sorted), or None
    if the crawl never got there."""
    needed = max(1, math.ceil(share * total))
    return times[needed - 1] if len(times) >= needed else None


def pages_per_second(records: Iterable[RequestRecord], window: float) -> list[float]:
    """Page requests (robots.txt and not-found probes aside) a second in consecutive windows
    of ``window`` seconds from the first request."""
    records = list(records)
    if not records:
        return []
    origin = min(record.start for record in records)
    counts: collections.Counter[int] = collections.Counter(
        int((record.start - origin) // window) for record in records
        if is_page_path(record.path)
    )
    if not counts:
        return []
    return [counts[i] / window for i in range(max(counts) + 1)]


def limit_pages_per_second(times: list[float], window: float) -> list[float]:
    counts = collections.Counter(int(t // window) for t in times)
    return [counts[i] / window for i in range(max(counts) + 1)] if counts else []


# -- one round ---------------------------------------------------------------------------------


def one_round(args: argparse.Namespace, crawler: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"limit-{crawler}-") as folder:
        work = Path(folder)
        config = WebConfig(seed=args.web_seed, hosts=args.hosts)
        with SyntheticWebServer(config, work / "requests.jsonl") as server:
            seeds = server.web.seeds()
            if crawler in ("ours", "baseline"):
                checkout = _REPOSITORY if crawler == "ours" else args.baseline
                figures = run_ours(server.proxy_url, seeds, args, work, checkout,
                                   tuple(args.set))
            else:
                from scrapy_baseline import run_scrapy  # Scrapy is needed only here

                result = run_scrapy(server.proxy_url, seeds, delay=args.delay,
                                    budget=args.budget)
                figures = {"wall_s": round(result["wall_s"], 1),
                           "cpu_s": round(result["cpu_s"], 1)}
            records = server.request_log()
            expected = server.web.expected_crawl(seeds, TOKEN)
    reachable = list(expected.fetch)
    times = crawl_times(records, reachable)
    pages = sum(1 for record in records if is_page_path(record.path))
    figures.update({
        "reachable": len(reachable),
        "reachable_fetched": len(times),
        "pages": pages,
        "cpu_ms_per_page": round(1000 * figures["cpu_s"] / max(1, pages), 2),
        "time_to": {f"{share:.0%}": _round(time_to(times, len(reachable), share))
                    for share in SHARES},
        "pages_per_s": [round(rate, 1) for rate in pages_per_second(records, args.window)],
        "pages_per_s_plotted": [round(rate, 1) for rate in
                                pages_per_second(records, args.plot_window)],
    })
    return figures


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


# -- the chart ---------------------------------------------------------------------------------


def svg_chart(curves: dict[str, list[float]], window: float, title: str) -> str:
    """Pages/s over time, one line a curve (window by window), linear scales."""
    span = window * max(len(curve) for curve in curves.values())
    peak = max(max(curve, default=0.0) for curve in curves.values()) or 1.0
    step = _grid_step(peak)
    top = step * math.ceil(peak / step)
    x_step = _grid_step(span)
    lines = [
        Curve(name, [(window * (k + 0.5), rate) for k, rate in enumerate(curve)],
              _COLOURS.get(name, "#2ca02c"), dashed=name == "limit")
        for name, curve in curves.items()
    ]
    return line_chart(
        title, lines,
        x_of=lambda seconds: seconds / span, y_of=lambda rate: rate / top,
        x_ticks=[(x_step * i, f"{x_step * i:,.0f}") for i in range(int(span // x_step) + 1)],
        y_ticks=[(step * i, f"{step * i:,.0f}") for i in range(int(round(top / step)) + 1)],
        x_label="seconds from the first request", y_label=f"pages/s ({window:g} s windows)",
    )


def _grid_step(span: float) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving 4 to 10 grid lines over ``span``."""
    step = 10.0 ** math.floor(math.log10(max(span, 1e-9)))
    for factor in (0.5, 0.2, 0.1):
        if span / step >= 4:
            break
        step = 10.0 ** math.floor(math.log10(max(span, 1e-9))) * factor
    return step


# -- the report --------------------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return None if top is None or bottom is None or bottom <= 0 else top / bottom


def _median(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if len(known) == len(values) and known else None


def report(rows: dict[str, list[dict[str, Any]]], limit: dict[str, float | None],
           discovery: dict[str, float | None]) -> dict:
    labels = [f"{share:.0%}" for share in SHARES]
    print("\n| | " + " | ".join(labels)
          + " | pages/s: first window | best window | pages | CPU ms/page |")
    print("|---|" + "---:|" * (len(labels) + 4))
    print("| politeness limit | " + " | ".join(_seconds(limit[k]) for k in labels)
          + " | | | | |")
    print("| the limit, URLs known only once found | "
          + " | ".join(_seconds(discovery[k]) for k in labels) + " | | | | |")
    for crawler, figures in rows.items():
        for number, row in enumerate(figures, 1):
            rates = row["pages_per_s"] or [0.0]
            print(f"| {crawler} (round {number}) | "
                  + " | ".join(_seconds(row["time_to"][k]) for k in labels)
                  + f" | {rates[0]:.0f} | {max(rates):.0f} | {row['pages']} |"
                  f" {row['cpu_ms_per_page']:.2f} |")
    ratios: dict[str, Any] = {}
    ours = rows.get("ours", [])
    for share in ("50%", "75%"):
        ratios[f"ours/limit at {share}"] = _median(
            [_ratio(row["time_to"][share], limit[share]) for row in ours])
    if "baseline" in rows:
        pairs = list(zip(ours, rows["baseline"], strict=True))
        for share in ("25%", "50%", "75%"):
            ratios[f"ours/baseline time to {share}"] = _median(
                [_ratio(a["time_to"][share], b["time_to"][share]) for a, b in pairs])
        ratios["ours/baseline first window pages/s"] = _median(
            [_ratio((a["pages_per_s"] or [0.0])[0], (b["pages_per_s"] or [0.0])[0])
             for a, b in pairs])
        ratios["ours/baseline CPU per page"] = _median(
            [_ratio(a["cpu_ms_per_page"], b["cpu_ms_per_page"]) for a, b in pairs])
    if "scrapy" in rows:
        pairs = list(zip(ours, rows["scrapy"], strict=True))
        ratios["ours/scrapy time to 50%"] = _median(
            [_ratio(a["time_to"]["50%"], b["time_to"]["50%"]) for a, b in pairs])
        ratios["ours/scrapy CPU per page"] = _median(
            [_ratio(a["cpu_ms_per_page"], b["cpu_ms_per_page"]) for a, b in pairs])
    print()
    for name, value in ratios.items():
        print(f"{name}: {'n/a' if value is None else f'{value:.2f}'} (median over rounds)")
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--web-seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--budget", type=int, default=0, help="page budget (0: whole web)")
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="a setting of our crawler (repeatable)")
    parser.add_argument("--window", type=float, default=5.0, help="seconds a pages/s window")
    parser.add_argument("--plot-window", type=float, default=1.0,
                        help="seconds a pages/s window in the chart")
    parser.add_argument("--no-scrapy", action="store_true", help="leave Scrapy out")
    parser.add_argument("--baseline", type=Path,
                        help="another checkout of our crawler, crawled in the same rounds")
    parser.add_argument("--svg", type=Path, help="draw pages/s over time here")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()
    check_scrapy(parser, args)

    web = WebConfig(seed=args.web_seed, hosts=args.hosts)
    with tempfile.TemporaryDirectory(prefix="limit-web-") as folder:
        with SyntheticWebServer(web, Path(folder) / "requests.jsonl") as server:
            expected = server.web.expected_crawl(server.web.seeds(), TOKEN)
            seeds = server.web.seeds()
            reachable = list(expected.fetch)
            found_limit = discovery_times(server.web, seeds, reachable, args.delay,
                                          expected.crawl_delays)
    at_limit = limit_times(reachable, args.delay, expected.crawl_delays)
    limit = {f"{share:.0%}": time_to(at_limit, len(reachable), share) for share in SHARES}
    discovery = {f"{share:.0%}": time_to(found_limit, len(reachable), share) for share in SHARES}
    print(f"web: {args.hosts} hosts, {len(reachable)} reachable pages, "
          f"{len(expected.crawl_delays)} hosts with a Crawl-delay, delay {args.delay} s; "
          f"politeness limit {limit}; with discovery {discovery}", flush=True)

    if args.baseline:
        args.baseline = args.baseline.resolve()
    crawlers = (["ours"] + (["baseline"] if args.baseline else [])
                + ([] if args.no_scrapy else ["scrapy"]))
    rows = alternate(crawlers, args.runs, lambda crawler: one_round(args, crawler))
    ratios = report(rows, limit, discovery)
    if args.svg:
        curves = {"limit": limit_pages_per_second(at_limit, args.plot_window)}
        curves.update({crawler: rows[crawler][0]["pages_per_s_plotted"] for crawler in crawlers})
        args.svg.write_text(svg_chart(
            curves, args.plot_window,
            f"pages/s, {args.hosts} hosts, {len(reachable)} pages, delay {args.delay} s"))
    write_json(args.json, {"args": vars(args), "limit": limit, "discovery_limit": discovery,
                           "rows": rows, "ratios": ratios})


if __name__ == "__main__":
    main()
