"""Fetch order on a real web graph: how linked-to are the pages the crawler fetches first?

The graph is one of the web graphs of the Laboratory for Web Algorithmics (LAW, Università
degli Studi di Milano), in their published form: ``BASENAME.graph`` and
``BASENAME.properties`` (BV-compressed WebGraph format), with ``BASENAME.urls`` or
``BASENAME.urls.gz`` when the dataset has URLs. Get them from https://law.di.unimi.it/datasets.php
(for example uk-2007-05@100000, a 100,000-page sample of the May 2007 .uk crawl, or cnr-2000).
Cite, as LAW asks: P. Boldi and S. Vigna, "The WebGraph Framework I: Compression Techniques",
WWW 2004; P. Boldi, M. Rosa, M. Santini and S. Vigna, "Layered Label Propagation: A
MultiResolution Coordinate-Free Ordering for Compressing Social Networks", WWW 2011.

The synthetic web's server serves the graph (:mod:`synthweb.graphweb`: each node a page linking
exactly its successors; hosts from the URLs, or without them from the node order, a heuristic
described there) as the crawl's HTTP proxy, and our crawler (``python -m job crawl``, the whole
pipeline on the local MiniCluster) crawls it from a few seeds with a budget of a tenth of the
pages. Its fetch order is read from the server's request log: page requests (robots.txt and
not-found probes aside) in the order they started, the first fetch of each page.

Seeds: one page from each of the ``--seeds`` hosts with the most pages: the host's root page
``http://HOST/`` when the graph has it, else the host's page with the most links within the
host (:meth:`synthweb.graphweb.GraphWeb.seed_nodes`). Every order starts from the same seeds.

Orders compared, all over the same budget B:

- ours: the crawler's, from the request log;
- BFS: breadth-first from the seeds, one FIFO queue (links in page order), as computed on the
  graph;
- polite BFS: what a polite breadth-first crawler does (Scrapy with ``DEPTH_PRIORITY``, say):
  one FIFO queue a host, served in turns of one page from every host that has something queued
  (hosts in the order they were found), links found in a turn waiting for the next: every host
  fetched at the same pace, one page per politeness delay;
- best: the B pages reachable from the seeds with the most in-links, most first (no crawler can
  do better, one that knew the whole graph before fetching anything included).

The measure of a page is its in-degree in the whole graph (every arc, self-loops included);
of an order, the mean over its first k pages, for every k up to B. The script prints it at a
few prefixes with the ratios ours/best and ours/BFS, says whether ours is at least each BFS's
at every prefix, and draws the running means (SVG, fetch rank against the mean in-degree so
far, on a log scale).

Usage: ``python bench/fetch_order.py --graph DATA/uk-2007-05@100000 --svg fetch_order.svg``
(about three minutes for 10,000 pages). ``--set SECTION.KEY=VALUE`` passes any crawler
setting, ``--delay`` and ``--max-seconds`` the politeness delay and a time limit; ``--json
FILE`` writes every figure and the orders themselves, which ``--from-json FILE`` reads back to
print and draw them again without crawling; ``--hosts-from blocks`` ignores a URL file.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

_REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_REPOSITORY))
sys.path.insert(0, str(_REPOSITORY / "bench"))

from charts import Curve, line_chart  # noqa: E402

from synthweb.audit import NOT_FOUND_PROBE, is_page_path  # noqa: E402
from synthweb.graphweb import GraphWeb, GraphWebConfig, GraphWebServer  # noqa: E402
from synthweb.requestlog import RequestRecord  # noqa: E402

PREFIXES = (100, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)


# -- the orders computed on the graph --------------------------------------------------------


class Graph:
    """The graph as NumPy arrays, for the orders and the measure."""

    def __init__(self, web: GraphWeb) -> None:
        self.indptr = np.frombuffer(web.graph.indptr, dtype=np.int64)
        self.indices = np.frombuffer(web.graph.indices, dtype=np.int32)
        self.host_of = np.frombuffer(web.host_of, dtype=np.int32)
        self.nodes = len(self.indptr) - 1
        self.in_degree = np.bincount(self.indices, minlength=self.nodes)

    def successors(self, node: int) -> np.ndarray:
        return self.indices[self.indptr[node] : self.indptr[node + 1]]


def fifo_bfs(graph: Graph, seeds: list[int], limit: int | None = None) -> np.ndarray:
    """Breadth-first order from ``seeds`` (one FIFO queue), its first ``limit`` pages."""
    seen = np.zeros(graph.nodes, dtype=bool)
    queue: collections.deque[int] = collections.deque()
    for seed in seeds:
        if not seen[seed]:
            seen[seed] = True
            queue.append(seed)
    order: list[int] = []
    while queue and (limit is None or len(order) < limit):
        node = queue.popleft()
        order.append(node)
        found = graph.successors(node)
        found = found[~seen[found]]
        seen[found] = True
        queue.extend(found.tolist())
    return np.array(order, dtype=np.int64)


def polite_bfs(graph: Graph, seeds: list[int], limit: int) -> np.ndarray:
    """Breadth-first order with a FIFO queue per host served in turns (see the docstring)."""
    seen = np.zeros(graph.nodes, dtype=bool)
    queues: dict[int, collections.deque[int]] = collections.defaultdict(collections.deque)
    woken: list[int] = []

    def enqueue(node: int) -> None:
        host = int(graph.host_of[node])
        if not queues[host]:
            woken.append(host)
        queues[host].append(node)

    for seed in seeds:
        if not seen[seed]:
            seen[seed] = True
            enqueue(seed)
    order: list[int] = []
    active: list[int] = []
    while len(order) < limit:
        # Hosts woken last turn join the end of the rotation; emptied ones leave it.
        active = [h for h in active if queues[h]] + [h for h in woken if h not in active]
        woken = []
        if not active:
            break
        for host in active:
            node = queues[host].popleft()
            order.append(node)
            if len(order) == limit:
                break
            found = graph.successors(node)
            found = found[~seen[found]]
            seen[found] = True
            for target in found.tolist():
                enqueue(target)
    return np.array(order, dtype=np.int64)


def best_order(graph: Graph, seeds: list[int], limit: int) -> tuple[np.ndarray, int]:
    """The ``limit`` pages reachable from the seeds with the most in-links (most first, then by
    id), and how many pages are reachable."""
    reachable = fifo_bfs(graph, seeds)
    ranked = reachable[np.lexsort((reachable, -graph.in_degree[reachable]))]
    return ranked[:limit], len(reachable)


# -- our crawl -----------------------------------------------------------------------------


def urls_lost_to_normalisation(web: GraphWeb) -> list[str]:
    """The URLs of the graph that the crawler, once it has normalised them, would ask for as
    another page or none (the server finds a page by an identity of its own; this checks the
    two agree on this graph)."""
    from crawl.urls.normalize import DEFAULT_NORMALIZER, UrlError

    lost = []
    for node in range(web.nodes):
        url = web.url(node)
        try:
            normalised = DEFAULT_NORMALIZER.normalize(url)
        except UrlError:
            continue
        if web.node_of(normalised) != web.node_of(url):
            lost.append(url)
    return lost



def fetch_order(web: GraphWeb, records: list[RequestRecord]) -> tuple[list[int], dict[str, int]]:
    """The nodes of the page requests in the order they started, each once, and counts of
    what else the log holds."""
    pages = sorted((r for r in records if is_page_path(r.path)), key=lambda r: r.start)
    order: list[int] = []
    seen: set[int] = set()
    probes = sum(1 for r in records if NOT_FOUND_PROBE.fullmatch(r.path))
    counts = collections.Counter(robots=len(records) - len(pages) - probes,
                                 not_found_probes=probes, page_requests=len(pages))
    for record in pages:
        node = web.node_of(record.url)
        if node is None:
            counts["not_a_page"] += 1
        elif node in seen:
            counts["fetched_again"] += 1
        else:
            seen.add(node)
            order.append(node)
        if record.status != 200:
            counts[f"status_{record.status}"] += 1
    return order, dict(counts)


def crawl(args: argparse.Namespace, web: GraphWeb, seeds: list[str], budget: int,
          work: Path) -> tuple[list[int], dict[str, Any]]:
    """Serve the graph, crawl it with our crawler, and return its fetch order and figures."""
    seeds_file = work / "seeds.txt"
    seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
    out = work / "out"
    output = work / "crawl-output.txt"
    with GraphWebServer(web.config, work / "requests.jsonl", web=web) as server:
        command = [
            sys.executable, "-m", "job", "crawl", "--seeds", str(seeds_file), "--out", str(out),
            "--proxy", server.proxy_url, "--max-pages", str(budget),
            "--delay", str(args.delay), "--idle-seconds", str(args.idle_seconds),
        ]
        if args.max_seconds:
            command += ["--max-seconds", str(args.max_seconds)]
        for setting in args.set:
            command += ["--set", setting]
        # The crawl runs this checkout's code, whatever the interpreter has installed.
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_REPOSITORY),
                                                          env.get("PYTHONPATH")]))
        print(f"crawling (its output in {output}) ...", flush=True)
        started = time.monotonic()
        with open(output, "w", encoding="utf-8") as stream:
            process = subprocess.run(command, cwd=_REPOSITORY, stdout=stream,
                                     stderr=subprocess.STDOUT, env=env, timeout=args.timeout,
                                     check=False)
        wall = time.monotonic() - started
        records = server.request_log()
    if process.returncode != 0:
        tail = output.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise RuntimeError(f"crawl failed ({process.returncode}):\n{tail}")
    order, counts = fetch_order(web, records)
    figures: dict[str, Any] = {"wall_s": round(wall, 1), **counts}
    summary = out / "summary.json"
    if summary.exists():
        figures["summary_pages"] = json.loads(summary.read_text()).get("pages")
    return order[:budget], figures


# -- the measure, the table and the chart --------------------------------------------------


def running_mean(values: np.ndarray) -> np.ndarray:
    return np.cumsum(values, dtype=np.float64) / np.arange(1, len(values) + 1)


def first_below(ours: np.ndarray, other: np.ndarray) -> int | None:
    """The first prefix length at which ours's running mean is below the other's, or None."""
    length = min(len(ours), len(other))
    below = np.flatnonzero(ours[:length] < other[:length])
    return int(below[0]) + 1 if len(below) else None


_COLOURS = {"best": "#7f7f7f", "ours": "#1f77b4", "BFS": "#ff7f0e", "polite BFS": "#2ca02c"}


def svg_chart(curves: dict[str, np.ndarray], budget: int, title: str) -> str:
    """A line chart of the running means: fetch rank against the mean in-degree so far, both
    on log scales (the first fetches are where orders differ most), about a hundred points a
    line, so that the file stays a few kilobytes."""
    values = np.concatenate([c[np.isfinite(c) & (c > 0)] for c in curves.values()])
    low = 10.0 ** math.floor(math.log10(values.min()))
    high = 10.0 ** math.ceil(math.log10(values.max()))
    last = 10.0 ** math.ceil(math.log10(max(budget, 10)))
    ranks = np.unique(np.geomspace(1, budget, 120).astype(int))
    lines = [
        Curve(name, [(int(r), max(float(curve[r - 1]), low)) for r in ranks[ranks <= len(curve)]],
              _COLOURS[name], dashed=name == "best")
        for name, curve in curves.items()
    ]
    return line_chart(
        title, lines,
        x_of=lambda rank: math.log10(rank) / math.log10(last),
        y_of=lambda value: ((math.log10(value) - math.log10(low))
                            / (math.log10(high) - math.log10(low))),
        x_ticks=_decades(1.0, last), y_ticks=_decades(low, high),
        x_label="fetch rank (log)",
        y_label="mean in-degree of the pages fetched so far (log)",
        marks=[(budget, f"budget {budget:,}")],
    )


def _decades(low: float, high: float) -> list[tuple[float, str]]:
    ticks = []
    decade = low
    while decade <= high:
        ticks.append((decade, f"{decade:,.0f}"))
        decade *= 10
    return ticks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True,
                        help="BASENAME of a LAW graph (.graph, .properties, .urls[.gz])")
    parser.add_argument("--hosts-from", choices=("auto", "urls", "blocks"), default="auto",
                        help="hosts from the URL file or the node order (auto: URLs if any)")
    parser.add_argument("--block-window", type=int, default=1000)
    parser.add_argument("--block-min-size", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=10, help="seed hosts (the largest)")
    parser.add_argument("--budget-share", type=float, default=0.1,
                        help="page budget as a share of the graph's nodes")
    parser.add_argument("--max-pages", type=int, default=0,
                        help="page budget (overrides --budget-share)")
    parser.add_argument("--delay", type=float, default=0.1,
                        help="seconds between requests to a host")
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--max-seconds", type=float, default=0.0)
    parser.add_argument("--timeout", type=float, default=4 * 3600.0,
                        help="seconds before the crawl is killed")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="a crawler setting (repeatable)")
    parser.add_argument("--svg", type=Path, help="write the chart here")
    parser.add_argument("--json", type=Path, help="write every figure and the orders here")
    parser.add_argument("--keep", type=Path,
                        help="keep the crawl's output and request log in this directory")
    parser.add_argument("--from-json", type=Path,
                        help="no crawl: take our order from this earlier --json output")
    args = parser.parse_args()

    config = GraphWebConfig(args.graph, args.hosts_from, args.block_window, args.block_min_size)
    web = GraphWeb(config)
    graph = Graph(web)
    budget = args.max_pages or max(1, round(args.budget_share * graph.nodes))
    seed_nodes = web.seed_nodes(args.seeds)
    seeds = [web.url(node) for node in seed_nodes]
    name = Path(args.graph).name
    print(f"{name}: {graph.nodes:,} pages, {len(graph.indices):,} links, "
          f"{len(web.host_names):,} hosts (from {web.hosts_from}); budget {budget:,}")
    if web.unreachable_urls:
        print(f"{web.unreachable_urls:,} URLs of the file are no http(s) URL or another page's")
    if web.hosts_from == "urls":
        lost = urls_lost_to_normalisation(web)
        print(f"URLs the crawler's normaliser makes another page's or none: {len(lost):,}"
              + (f", such as {', '.join(lost[:3])}" if lost else ""))
    print("seeds:", ", ".join(seeds))

    best, reachable = best_order(graph, seed_nodes, budget)
    orders = {
        "best": best,
        "BFS": fifo_bfs(graph, seed_nodes, budget),
        "polite BFS": polite_bfs(graph, seed_nodes, budget),
    }
    if args.from_json:
        earlier = json.loads(args.from_json.read_text(encoding="utf-8"))
        if earlier["seed_nodes"] != seed_nodes or earlier["budget"] != budget:
            raise SystemExit(f"{args.from_json} has other seeds or another budget")
        ours, figures = earlier["orders"]["ours"], earlier["crawl"]
    elif args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        ours, figures = crawl(args, web, seeds, budget, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="fetch-order-") as folder:
            ours, figures = crawl(args, web, seeds, budget, Path(folder))
    orders = {"ours": np.array(ours, dtype=np.int64), **orders}
    print(f"reachable from the seeds: {reachable:,} pages; crawl: {figures}")

    means = {key: running_mean(graph.in_degree[order]) for key, order in orders.items()}
    fetched = len(orders["ours"])
    if fetched < budget:
        print(f"our crawl fetched {fetched:,} pages of the budget of {budget:,}")
    rows = []
    print()
    print("| first pages | ours | BFS | polite BFS | best | ours / best | ours / BFS |"
          " ours / polite BFS |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in sorted({p for p in PREFIXES if p < budget} | {budget}):
        if k > fetched:
            continue
        row = {key: float(means[key][k - 1]) for key in means}
        rows.append({"pages": k, **row})
        print(f"| {k:,} | {row['ours']:.1f} | {row['BFS']:.1f} | {row['polite BFS']:.1f} | "
              f"{row['best']:.1f} | {row['ours'] / row['best']:.3f} | "
              f"{row['ours'] / row['BFS']:.2f} | {row['ours'] / row['polite BFS']:.2f} |")
    print()
    verdict: dict[str, Any] = {}
    if fetched:
        whole = means["ours"][fetched - 1] / means["best"][fetched - 1]
        verdict["ours_over_best"] = round(float(whole), 4)
        print(f"mean in-degree over the {fetched:,} pages: ours / best = {whole:.3f} "
              f"({'at least' if whole >= 0.8 else 'below'} 0.8)")
    for other in ("BFS", "polite BFS"):
        below = first_below(means["ours"], means[other])
        count = int(np.sum(means["ours"][:fetched] < means[other][:fetched]))
        verdict[f"first_prefix_below_{other.replace(' ', '_')}"] = below
        print(f"ours >= {other} at every prefix: {'yes' if below is None else 'no'}"
              + ("" if below is None else f" (below at {count:,} of {fetched:,} prefixes, "
                 f"first at {below:,})"))

    if args.svg:
        title = f"{name}: the first {budget:,} pages fetched, from {len(seeds)} seeds"
        args.svg.write_text(svg_chart(means, budget, title), encoding="utf-8")
        print(f"chart: {args.svg} ({args.svg.stat().st_size:,} bytes)")
    if args.json:
        args.json.write_text(json.dumps({
            "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "graph": {"name": name, "nodes": graph.nodes, "arcs": int(len(graph.indices)),
                      "hosts": len(web.host_names), "hosts_from": web.hosts_from,
                      "unreachable_urls": web.unreachable_urls},
            "seeds": seeds, "seed_nodes": seed_nodes, "budget": budget,
            "reachable": reachable, "crawl": figures, "prefixes": rows, "verdict": verdict,
            "orders": {key: order.tolist() for key, order in orders.items()},
        }, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
