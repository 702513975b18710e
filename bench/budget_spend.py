"""Where a crawl's page budget goes on a web with junk: real pages, or traps, farms and soft 404s.

The web is the synthetic web's multi-domain profile (:mod:`synthweb.domains`): ``--hosts``
hosts of real sites on their own registered domains (a few with several hosts), of very
different sizes, with a calendar, a session-id space, a repeating path and filter combinations
on real sites, soft-404 hosts, and link-farm hosts on domains of their own, each linked once
from a real site. Its ground truth names every URL's kind and the real pages reachable from the
seeds through real pages, with each one's true in-degree.

Our crawler (``python -m job crawl``, the full pipeline on the local MiniCluster, the web's
server as its HTTP proxy) crawls it from the web's seeds twice: with a page budget equal to the
number of reachable real pages (``--budget`` to change it), then with half of it. From the
server's request log and the ground truth, for each crawl: the reachable real pages fetched
(count and share of them), the page fetches that went into junk (count and share of all page
fetches, robots.txt and the hosts' not-found probes not counted: no page of the budget, they
are counted apart), by kind, how the crawl ended (``stop_reason`` of its
``summary.json``) and its wall time; and (telling most with half the budget) the mean true
in-degree of the real pages fetched, against the best possible for that many pages, the mean
over all reachable pages (what an ordering blind to links gets), and the first and last
quarter of them in the order fetched; in-degree counted in linking pages (a site's navigation
makes its home and section pages the best linked) and in linking registered domains.

The target the crawler is held to, with its default configuration and the full budget: at least
90 % of the reachable real pages fetched and at most 5 % of the page fetches in traps and link
farms.

Usage: ``python bench/budget_spend.py --hosts 80 --json before.json``, then the same with
``--set section.key=value`` (passed to the crawl) and ``--json after.json`` to compare.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_REPOSITORY))

from synthweb import (  # noqa: E402
    DomainTruth,
    RequestRecord,
    SyntheticWeb,
    SyntheticWebServer,
    UrlKind,
    WebConfig,
    audit_log,
)
from synthweb.audit import NOT_FOUND_PROBE, is_page_path  # noqa: E402
from synthweb.domains import TRAP_KINDS  # noqa: E402

TOKEN = "pyflink-crawler"
#: The target, with the full budget: share of reachable real pages fetched, at least; share of
#: page fetches in traps and link farms, at most.
TARGET_REACHED = 0.90
TARGET_TRAPPED = 0.05
_TRAPS_AND_FARMS = TRAP_KINDS | {UrlKind.FARM}


def run_crawl(args: argparse.Namespace, config: WebConfig, seeds: list[str], budget: int,
              work: Path) -> tuple[list[RequestRecord], dict[str, Any], float, str]:
    """One crawl of the web within ``budget`` pages: (request log, summary, wall s, output)."""
    (work / "seeds.txt").write_text("\n".join(seeds) + "\n", encoding="utf-8")
    with SyntheticWebServer(config, work / "requests.jsonl") as server:
        command = [
            sys.executable, "-m", "job", "crawl", "--seeds", str(work / "seeds.txt"),
            "--out", str(work / "out"), "--proxy", server.proxy_url,
            "--max-pages", str(budget), "--delay", str(args.delay),
            "--idle-seconds", str(args.idle_seconds), "--max-seconds", str(args.max_seconds),
        ]
        for setting in args.set:
            command += ["--set", setting]
        # The crawl imports this checkout's code, wherever the interpreter comes from.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(_REPOSITORY), os.environ.get("PYTHONPATH")]))}
        started = time.monotonic()
        process = subprocess.run(command, cwd=_REPOSITORY, env=env, capture_output=True,
                                 text=True, timeout=args.max_seconds + 600, check=False)
        wall = time.monotonic() - started
        records = server.request_log()
    output = process.stdout + process.stderr
    if process.returncode != 0:
        raise RuntimeError(f"crawl failed ({process.returncode}):\n{output[-3000:]}")
    summary_path = work / "out" / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return records, summary, wall, output


def figures(web: SyntheticWeb, truth: DomainTruth, records: list[RequestRecord],
            budget: int) -> dict[str, Any]:
    """What the crawl spent its page fetches on (see the module docstring)."""
    probes = [r for r in records if NOT_FOUND_PROBE.fullmatch(r.path)]
    pages = [r for r in records if is_page_path(r.path)]
    kinds = collections.Counter(web.url_kind(r.url) for r in pages)
    fetched = list(dict.fromkeys(
        r.url for r in sorted(pages, key=lambda r: r.start)
        if r.status == 200 and r.url in truth.reachable
    ))
    total = max(1, len(pages))
    trapped = sum(kinds[k] for k in _TRAPS_AND_FARMS)
    junk = sum(count for kind, count in kinds.items() if kind.is_junk)
    return {
        "budget": budget,
        "page_fetches": len(pages),
        "robots_fetches": len(records) - len(pages) - len(probes),
        "not_found_probes": len(probes),
        "reachable": len(truth.reachable),
        "reachable_fetched": len(fetched),
        "reachable_fetched_share": round(len(fetched) / max(1, len(truth.reachable)), 4),
        "junk_fetches": junk,
        "junk_share": round(junk / total, 4),
        "traps_and_farms_fetches": trapped,
        "traps_and_farms_share": round(trapped / total, 4),
        "fetches_by_kind": {kind.value: count for kind, count in kinds.most_common()},
        **_in_degrees(truth, fetched, "in_degree", domains=False),
        **_in_degrees(truth, fetched, "in_domains", domains=True),
    }


def _in_degrees(truth: DomainTruth, fetched: list[str], name: str, *,
                domains: bool) -> dict[str, float]:
    """Mean true in-degree (in pages, or in linking domains) of the pages fetched, of the best
    as many, of all reachable pages, of the first and the last quarter fetched."""
    quarter = max(1, len(fetched) // 4)
    means = {
        "": truth.mean_in_degree(fetched, domains=domains),
        "_best": truth.best_mean_in_degree(len(fetched), domains=domains),
        "_all_reachable": truth.mean_in_degree(truth.reachable, domains=domains),
        "_first_quarter": truth.mean_in_degree(fetched[:quarter], domains=domains),
        "_last_quarter": truth.mean_in_degree(fetched[-quarter:], domains=domains),
    }
    return {f"mean_{name}{suffix}": round(value, 2) for suffix, value in means.items()}


def one_run(args: argparse.Namespace, label: str, budget: int) -> dict[str, Any]:
    """Crawl the web within ``budget`` pages and measure it."""
    config = WebConfig(seed=args.seed, hosts=args.hosts).with_multi_domain_profile()
    web = SyntheticWeb(config)
    seeds = web.seeds()
    expected = web.expected_crawl(seeds, TOKEN)
    assert expected.domains is not None
    if args.keep is not None:
        work = args.keep / label
        work.mkdir(parents=True, exist_ok=False)
        records, summary, wall, _ = run_crawl(args, config, seeds, budget, work)
    else:
        with tempfile.TemporaryDirectory(prefix="budget-spend-") as folder:
            records, summary, wall, _ = run_crawl(args, config, seeds, budget, Path(folder))
    row = figures(web, expected.domains, records, budget)
    problems = audit_log(records, expected, min_delay=args.delay, complete=False)
    row.update({
        "run": label,
        "stop_reason": summary.get("stop_reason", "?"),
        "wall_s": round(wall, 1),
        "audit_problems": len(problems),
        "audit_examples": problems[:5],
    })
    print(json.dumps(row), flush=True)
    return row


def report(rows: list[dict[str, Any]], web_line: str) -> None:
    """The figures as a Markdown table, then the in-degree comparison and the target."""
    print(f"\n{web_line}\n")
    print("| budget | page fetches | reachable real pages fetched | junk fetches | traps and "
          "farms | by kind of junk | stop reason | wall s |")
    print("|---|---:|---:|---:|---:|---|---|---:|")
    for row in rows:
        by_kind = ", ".join(f"{kind} {count}" for kind, count in row["fetches_by_kind"].items()
                            if UrlKind(kind).is_junk) or "none"
        print(f"| {row['run']} ({row['budget']}) | {row['page_fetches']} | "
              f"{row['reachable_fetched']} ({row['reachable_fetched_share']:.1%}) | "
              f"{row['junk_fetches']} ({row['junk_share']:.1%}) | "
              f"{row['traps_and_farms_fetches']} ({row['traps_and_farms_share']:.1%}) | "
              f"{by_kind} | {row['stop_reason']} | {row['wall_s']} |")
    for row in rows:
        for name, unit in (("in_degree", "linking pages"), ("in_domains", "linking domains")):
            print(f"\n{row['run']} budget, mean true in-degree ({unit}) of the "
                  f"{row['reachable_fetched']} real pages fetched: {row[f'mean_{name}']} "
                  f"(best possible {row[f'mean_{name}_best']}, all reachable pages "
                  f"{row[f'mean_{name}_all_reachable']}; first quarter fetched "
                  f"{row[f'mean_{name}_first_quarter']}, last quarter "
                  f"{row[f'mean_{name}_last_quarter']})")
        if row["run"] == "full":
            met = (row["reachable_fetched_share"] >= TARGET_REACHED
                   and row["traps_and_farms_share"] <= TARGET_TRAPPED)
            print(f"\nTarget (full budget: >= {TARGET_REACHED:.0%} of reachable real pages, "
                  f"<= {TARGET_TRAPPED:.0%} of fetches in traps and farms): "
                  f"{'met' if met else 'not met'}")
        if row["audit_problems"]:
            print(f"\n{row['run']}: {row['audit_problems']} audit problems, e.g. "
                  f"{row['audit_examples'][:3]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=80, help="hosts of real sites")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic web")
    parser.add_argument("--delay", type=float, default=0.2, help="politeness delay, seconds")
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="time limit of each crawl (crawl.max_seconds)")
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--budget", type=int, default=0,
                        help="full page budget (default: the reachable real pages)")
    parser.add_argument("--runs", default="full,half", help="which crawls: full, half or both")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a crawl setting (python -m job crawl --set), repeatable")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep each crawl's output and request log in DIR/<run>")
    args = parser.parse_args()

    config = WebConfig(seed=args.seed, hosts=args.hosts).with_multi_domain_profile()
    web = SyntheticWeb(config)
    truth = web.expected_crawl(web.seeds(), TOKEN).domains
    assert truth is not None
    budget = args.budget or len(truth.reachable)
    domains = {".".join(host.split(".")[-2:]) for host in web.host_names()}
    web_line = (f"Web: seed {args.seed}, {args.hosts} real hosts on {len(domains)} "
                f"registered domains, {len(web.domains.farm_host_names())} farm hosts, "
                f"{len(truth.reachable)} reachable real pages from {len(web.seeds())} seeds; "
                f"delay {args.delay} s; settings {args.set or 'default'}")
    print(web_line, flush=True)
    budgets = {"full": budget, "half": budget // 2}
    rows = [one_run(args, run, budgets[run]) for run in args.runs.split(",")]
    report(rows, web_line)
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args), "web": web_line, "rows": rows},
                                        indent=2, default=str))


if __name__ == "__main__":
    main()
