"""Side-by-side measurement: the contenders of a benchmark run in rounds, alternating order.

The machines are noisy, so a comparison is only fair when its contenders take turns within one
run: round 1 runs them in order, round 2 in reverse, and so on, each round's figures printed as
they come (JSON) between the load averages before and after. Also what the benchmarks that
crawl the synthetic web this way share: their common options, the per-round ratios of one
contender's figure to another's, and the raw figures written as JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from synthweb import WebConfig

Figures = dict[str, Any]


def alternate(
    contenders: list[str], runs: int, measure: Callable[[str], Figures]
) -> dict[str, list[Figures]]:
    """``measure(contender)`` for every contender, ``runs`` rounds, alternating the order;
    contender -> its figures, round by round."""
    print(f"load before: {os.getloadavg()}", flush=True)
    rows: dict[str, list[Figures]] = {name: [] for name in contenders}
    width = max(len(name) for name in contenders)
    for round_number in range(1, runs + 1):
        order = contenders if round_number % 2 else contenders[::-1]
        for name in order:
            figures = measure(name)
            rows[name].append(figures)
            print(f"round {round_number} {name:{width}} {json.dumps(figures)}", flush=True)
    print(f"load after: {os.getloadavg()}")
    return rows


def add_web_options(parser: argparse.ArgumentParser, hosts: int) -> None:
    """The options of a side-by-side crawl of the synthetic web: its size (``--hosts``, by
    default ``hosts``) and seed, the rounds and the politeness delay."""
    parser.add_argument("--hosts", type=int, default=hosts)
    parser.add_argument("--web-seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument(
        "--articles", type=int, default=0,
        help="also serve this many articles as near-duplicate groups and as many edited ones "
             "(the near-duplicate profile: pages of 100-odd words, judged by distance)")


def check_scrapy(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Stop before the first crawl when Scrapy, the crawler compared against, is asked for and
    not installed (the ``bench`` extra)."""
    if not args.no_scrapy and importlib.util.find_spec("scrapy") is None:
        parser.error("Scrapy is not installed: pip install -e '.[bench]', or pass --no-scrapy")


def web_config(args: argparse.Namespace) -> WebConfig:
    """The synthetic web of :func:`add_web_options`' options."""
    config = WebConfig(seed=args.web_seed, hosts=args.hosts)
    if args.articles:
        config = config.with_near_duplicate_profile(near_duplicate_groups=args.articles,
                                                    near_duplicate_edited_groups=args.articles)
    return config


def print_ratios(
    rows: dict[str, list[Figures]],
    numerator: str,
    denominator: str,
    key: str = "pages_per_s",
    label: str = "pages/s",
) -> list[float]:
    """``numerator``'s figure ``key`` over ``denominator``'s, round by round, printed (as
    ``label``) with their median."""
    ratios = [
        top[key] / bottom[key]
        for top, bottom in zip(rows[numerator], rows[denominator], strict=True)
    ]
    print(f"\n{numerator} / {denominator} {label}, per round: "
          f"{[round(r, 2) for r in ratios]}; median {statistics.median(ratios):.2f}")
    return ratios


def write_json(path: Path | None, figures: dict[str, Any]) -> None:
    """The raw figures as JSON into ``path``, if one is given (``--json``)."""
    if path:
        path.write_text(json.dumps(figures, indent=2, default=str))
