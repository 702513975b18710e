"""A model of the crawl's fetch order on a web graph, to compare ranks in seconds, not minutes.

``bench/fetch_order.py`` measures the crawler itself on a graph served as a web (about three
minutes for 10,000 pages). This script replays the same crawl as a model, on the same graph,
seeds and budget, so that a rank can be tried before it is built: what decides which pages a
budget buys is the rank that chooses among the URLs a crawl knows, and how the crawl shares
its pace among hosts. The model keeps the mechanics that shape the order:

- per-host politeness: a host is fetched at most once every ``--delay`` seconds;
- a throughput cap (``--pages-per-second``, what the crawler fetches a second when it is bound
  by its CPU, as it is on this graph: 100-110 pages/s measured at delay 0.1 s), shared among
  the hosts ready to be fetched, the one ready longest first (or, ``--serve best-rank``, the
  one whose best waiting URL ranks highest);
- the loop: a page's links reach the crawl DB ``--loop-seconds`` after its fetch, and the crawl
  DB releases every ``--release-seconds`` each host's best URLs to the frontier, up to
  ``--host-window`` waiting per host (``priority.host_window``); the frontier serves a host's
  URLs best first;
- optionally a global bar (``--bar F``, from the ``--bar-after``-th page on): a URL is released
  only if it ranks among the best F x (pages the budget has left) URLs known and not fetched.

Ranks (``--rank``): ``cash`` (OPIC as the crawler keeps it: seeds get 1, a fetched page passes
the cash it had on to its links, split evenly, and a fetch spends it), ``inlinks`` (fetched
pages known to link to the URL), ``shares`` (the same, each linking page counting one split
over its links: cash as if every fetched page had the same), ``depth`` (hops from a seed,
fewest first: breadth-first within each host), and ``true`` (the URL's in-degree in the whole
graph: a rank no crawler can have, the bound of what the mechanics allow). Ties go to the
older URL.

It prints the mean in-degree of the first k pages against the best possible (the pages
reachable from the seeds with the most in-links), as ``fetch_order.py`` does, and how many of
the best pages the crawl fetched, and knew of at its end.

Usage: ``python bench/fetch_order_model.py --graph DATA/uk-2007-05@100000 --rank cash --rank
inlinks --rank true`` (seconds a rank on a graph of 100,000 pages).
"""

from __future__ import annotations

import argparse
import heapq
import sys
from pathlib import Path

import numpy as np

_REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_REPOSITORY))

from synthweb.graphweb import GraphWeb, GraphWebConfig  # noqa: E402

RANKS = ("cash", "inlinks", "shares", "depth", "true")
PREFIXES = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000)
#: The model's clock tick (seconds).
TICK = 0.02


class ModelGraph:
    """The graph's arrays: successors (CSR, each page's distinct links to other pages), hosts,
    in-degrees (every arc, as ``fetch_order.py`` measures)."""

    def __init__(self, web: GraphWeb) -> None:
        self.indptr = np.frombuffer(web.graph.indptr, dtype=np.int64)
        self.indices = np.frombuffer(web.graph.indices, dtype=np.int32)
        self.host_of = np.frombuffer(web.host_of, dtype=np.int32)
        self.nodes = len(self.indptr) - 1
        self.hosts = int(self.host_of.max()) + 1
        self.in_degree = np.bincount(self.indices, minlength=self.nodes)

    def reachable(self, seeds: list[int]) -> np.ndarray:
        """The pages reachable from ``seeds``."""
        seen = np.zeros(self.nodes, dtype=bool)
        seen[seeds] = True
        frontier = np.array(seeds, dtype=np.int64)
        while len(frontier):
            starts, ends = self.indptr[frontier], self.indptr[frontier + 1]
            spans = [self.indices[a:b] for a, b in zip(starts.tolist(), ends.tolist(),
                                                       strict=True)]
            found = np.unique(np.concatenate(spans)) if spans else frontier[:0]
            frontier = found[~seen[found]].astype(np.int64)
            seen[frontier] = True
        return np.flatnonzero(seen)

    def links(self, node: int) -> np.ndarray:
        found = np.unique(self.indices[self.indptr[node] : self.indptr[node + 1]])
        return found[found != node]


class CrawlModel:
    """One modelled crawl of ``budget`` pages from ``seeds`` (see the module docstring)."""

    def __init__(self, graph: ModelGraph, seeds: list[int], budget: int,
                 args: argparse.Namespace, rank: str) -> None:
        self.graph, self.budget, self.args, self.rank = graph, budget, args, rank
        n = graph.nodes
        self.known = np.zeros(n, dtype=bool)
        self.fetched = np.zeros(n, dtype=bool)
        self.waiting = np.zeros(n, dtype=bool)  # released, in a host's queue
        self.cash = np.zeros(n)
        self.inlinks = np.zeros(n)
        self.shares = np.zeros(n)
        self.depth = np.full(n, np.iinfo(np.int32).max, dtype=np.int64)
        self.found_at = np.full(n, np.inf)
        for seed in seeds:
            self.known[seed], self.cash[seed], self.depth[seed], self.found_at[seed] = (
                True, 1.0, 0, 0.0)
        self.queues: list[list[tuple[float, float, int]]] = [[] for _ in range(graph.hosts)]
        self.ready_at = np.zeros(graph.hosts)
        self.order: list[int] = []

    def ranks(self, nodes: np.ndarray) -> np.ndarray:
        if self.rank == "cash":
            return self.cash[nodes]
        if self.rank == "inlinks":
            return self.inlinks[nodes]
        if self.rank == "shares":
            return self.shares[nodes]
        if self.rank == "depth":
            return -self.depth[nodes].astype(float)
        return self.graph.in_degree[nodes].astype(float)

    def learn(self, node: int, cash: float, now: float) -> None:
        """The links of a fetched page reach the crawl DB."""
        links = self.graph.links(node)
        if not len(links):
            return
        self.found_at[links] = np.minimum(self.found_at[links], now)
        self.known[links] = True
        self.inlinks[links] += 1
        self.shares[links] += 1.0 / len(links)
        self.depth[links] = np.minimum(self.depth[links], self.depth[node] + 1)
        self.cash[links] += cash / len(links)

    def release(self) -> None:
        """Each host's best known URLs to its queue, up to the host window."""
        candidates = np.flatnonzero(self.known & ~self.fetched & ~self.waiting)
        if not len(candidates):
            return
        rank = self.ranks(candidates)
        if self.args.bar and len(self.order) >= self.args.bar_after:
            left = self.budget - len(self.order) - int(self.waiting.sum())
            place = int(self.args.bar * max(left, 1))
            if place < len(rank):
                keep = rank >= np.sort(rank)[::-1][place]
                candidates, rank = candidates[keep], rank[keep]
        hosts = self.graph.host_of[candidates]
        order = np.lexsort((self.found_at[candidates], -rank, hosts))
        candidates, rank, hosts = candidates[order], rank[order], hosts[order]
        starts = np.flatnonzero(np.r_[True, hosts[1:] != hosts[:-1]])
        ends = np.r_[starts[1:], len(candidates)]
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            queue = self.queues[int(hosts[start])]
            room = self.args.host_window - len(queue)
            for i in range(start, min(end, start + max(room, 0))):
                node = int(candidates[i])
                heapq.heappush(queue, (-float(rank[i]), float(self.found_at[node]), node))
                self.waiting[node] = True

    def run(self, time_limit: float = 7_200.0) -> np.ndarray:
        args = self.args
        arriving: list[tuple[float, int, float]] = []  # (when, page, its cash), by time
        now, next_release, credit = 0.0, 0.0, 0.0
        while len(self.order) < self.budget and now < time_limit:
            while arriving and arriving[0][0] <= now:
                _, node, cash = heapq.heappop(arriving)
                self.learn(node, cash, now)
            if now >= next_release:
                next_release += args.release_seconds
                self.release()
            credit = min(credit + args.pages_per_second * TICK,
                         2 * args.pages_per_second * TICK)
            ready = [host for host, queue in enumerate(self.queues)
                     if queue and self.ready_at[host] <= now]
            if args.serve == "best-rank":
                ready.sort(key=lambda host: self.queues[host][0])
            else:
                ready.sort(key=lambda host: self.ready_at[host])
            for host in ready:
                if credit < 1 or len(self.order) >= self.budget:
                    break
                _, _, node = heapq.heappop(self.queues[host])
                self.waiting[node], self.fetched[node] = False, True
                self.order.append(node)
                credit -= 1
                self.ready_at[host] = now + args.delay
                cash, self.cash[node] = self.cash[node], 0.0
                heapq.heappush(arriving, (now + args.loop_seconds, node, cash))
            if not ready and not arriving and not self.waiting.any() and now >= next_release:
                break  # nothing known is left
            now += TICK
        self.seconds = now
        return np.array(self.order, dtype=np.int64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True, help="BASENAME of a LAW graph")
    parser.add_argument("--hosts-from", choices=("auto", "urls", "blocks"), default="auto")
    parser.add_argument("--block-window", type=int, default=1000)
    parser.add_argument("--block-min-size", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=10, help="seed hosts (the largest)")
    parser.add_argument("--budget-share", type=float, default=0.1)
    parser.add_argument("--rank", action="append", choices=RANKS,
                        help="a rank to model (repeatable; default: all)")
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--pages-per-second", type=float, default=110.0)
    parser.add_argument("--loop-seconds", type=float, default=2.0)
    parser.add_argument("--release-seconds", type=float, default=1.0)
    parser.add_argument("--host-window", type=int, default=16)
    parser.add_argument("--serve", choices=("longest-ready", "best-rank"),
                        default="longest-ready",
                        help="which ready host the cap serves first")
    parser.add_argument("--hosts-report", type=int, default=0,
                        help="also show the N hosts that hold most of the best pages")
    parser.add_argument("--bar", type=float, default=0.0)
    parser.add_argument("--bar-after", type=int, default=0)
    args = parser.parse_args()

    web = GraphWeb(GraphWebConfig(args.graph, args.hosts_from, args.block_window,
                                  args.block_min_size))
    graph = ModelGraph(web)
    seeds = web.seed_nodes(args.seeds)
    budget = max(1, round(args.budget_share * graph.nodes))
    reachable = graph.reachable(seeds)
    best = reachable[np.lexsort((reachable, -graph.in_degree[reachable]))][:budget]
    by_degree = graph.in_degree[best]
    best_pages = set(best.tolist())
    prefixes = sorted({p for p in PREFIXES if p < budget} | {budget})
    print(f"{Path(args.graph).name}: {graph.nodes:,} pages, {graph.hosts} hosts, budget "
          f"{budget:,}; delay {args.delay} s, {args.pages_per_second:g} pages/s, loop "
          f"{args.loop_seconds} s, releases every {args.release_seconds} s, host window "
          f"{args.host_window}" + (f", bar {args.bar:g} from page {args.bar_after}"
                                   if args.bar else ""))
    print()
    print("| rank | " + " | ".join(f"ours / best at {k:,}" for k in prefixes)
          + " | best pages fetched | known | modelled s |")
    print("|---|" + "---:|" * (len(prefixes) + 3))
    for rank in args.rank or RANKS:
        model = CrawlModel(graph, seeds, budget, args, rank)
        order = model.run()
        degrees = graph.in_degree[order]
        ratios = [f"{degrees[:k].mean() / by_degree[:k].mean():.3f}" if k <= len(order)
                  else "-" for k in prefixes]
        fetched_best = len(best_pages.intersection(order.tolist()))
        known_best = int(model.known[list(best_pages)].sum())
        print(f"| {rank} | " + " | ".join(ratios)
              + f" | {fetched_best:,} | {known_best:,} | {model.seconds:.0f} |")
        if args.hosts_report:
            hosts_report(graph, model, best, args.hosts_report)


def hosts_report(graph: ModelGraph, model: CrawlModel, best: np.ndarray, count: int) -> None:
    """The ``count`` hosts that hold most of the ``best`` pages: how many, what share of their
    in-links comes from the host itself, and how many the crawl knew and fetched."""
    src = np.repeat(np.arange(graph.nodes), np.diff(graph.indptr))
    held = np.bincount(graph.host_of[best], minlength=graph.hosts)
    order = model.order
    for host in np.argsort(-held, kind="stable")[:count].tolist():
        pages = best[graph.host_of[best] == host]
        into = np.isin(graph.indices, pages)
        inside = float(np.mean(graph.host_of[src[into]] == host)) if into.any() else 0.0
        fetched = sum(1 for node in order if graph.host_of[node] == host)
        print(f"    host {host}: {len(pages):,} of the best pages ({inside:.0%} of their "
              f"in-links from the host), {int(model.known[pages].sum()):,} known, "
              f"{int(model.fetched[pages].sum()):,} fetched, of {fetched:,} pages fetched "
              f"there")


if __name__ == "__main__":
    main()
