"""Near-duplicate detection on the synthetic web: precision, recall and the cost a page.

    python bench/neardup_quality.py --seeds 5
    python bench/neardup_quality.py --seeds 20 --k 3 4 5 --json out.jsonl

For each web seed 1..N, a web of ``--hosts`` hosts with the near-duplicate profile
(:meth:`synthweb.WebConfig.with_near_duplicate_profile`: ``--groups`` groups, ``--edited``
edited groups of ``--size`` pages, ``--decoys`` decoys a group) has every page of the profile
fed in URL order to one :class:`crawl.content.neardup.NearDuplicateDetector`, fingerprinted from its
served body. A detection is a page called a near-duplicate of an earlier page; true if that
page is of the same group. Precision: true / all detections of the kind's pages (for the
groups, a decoy's detection counts against it too); recall: true / pages of a group after
the first of their group. Two kinds of groups: "groups" (the same article, each page with
its own advertisement, counters, dates, tracking parameters and markup) and "edited" (as
well, one to four words of the article changed on every copy after the first).

Then the cost a page, in microseconds (median of ``--runs`` passes over the pages): parsing
the body (``lxml.html.document_fromstring``), :func:`crawl.content.text.visible_text`,
:func:`crawl.content.text.main_text`, :func:`crawl.content.neardup.fingerprint` (main text, features
and simhash), and :func:`crawl.content.neardup.fingerprint_text` alone, on the profile's pages and
on the web's ordinary HTML pages (of seed 1).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import lxml.html

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crawl.content.neardup import NearDuplicateDetector, fingerprint, fingerprint_text  # noqa: E402
from crawl.content.text import main_text, visible_text  # noqa: E402
from synthweb import PageKind, SyntheticWeb, WebConfig  # noqa: E402

KINDS = ("groups", "edited", "decoys")


def make_web(seed: int, args: argparse.Namespace) -> SyntheticWeb:
    config = WebConfig(seed=seed, hosts=args.hosts).with_near_duplicate_profile(
        near_duplicate_groups=args.groups,
        near_duplicate_edited_groups=args.edited,
        near_duplicate_group_size=args.size,
        near_duplicate_decoys_per_group=args.decoys,
    )
    return SyntheticWeb(config)


def measure(web: SyntheticWeb, k: int) -> dict[str, list[int]]:
    """kind -> [true detections, false detections, wanted] on one web."""
    kinds = {"groups": web.near_duplicate_groups(), "edited": web.near_duplicate_edited_groups()}
    group_of = {
        url: (kind, number)
        for kind, groups in kinds.items()
        for number, urls in enumerate(groups)
        for url in urls
    }
    urls = sorted(group_of.keys() | set(web.near_duplicate_decoys()))
    detector = NearDuplicateDetector(k=k, blocks=max(4, k + 1))
    counts = {kind: [0, 0, 0] for kind in KINDS}
    for kind, groups in kinds.items():
        counts[kind][2] = sum(len(urls) - 1 for urls in groups)
    for capture, url in enumerate(urls):
        document = lxml.html.document_fromstring(web.body(url))
        verdict = detector.check(url, capture, fingerprint(document))
        if verdict.near_duplicate:
            group = group_of.get(url)
            true = group is not None and group_of.get(urls[verdict.duplicate_of]) == group
            counts[group[0] if group else "decoys"][0 if true else 1] += 1
    return counts


def figures(counts: dict[str, list[int]]) -> dict[str, dict[str, float]]:
    out = {}
    for kind in ("groups", "edited"):
        true, false, wanted = counts[kind]
        if kind == "groups":
            false += counts["decoys"][1]
        out[kind] = {
            "precision": true / max(1, true + false),
            "recall": true / max(1, wanted),
            "true": true,
            "false": false,
            "wanted": wanted,
        }
    return out


def per_page_us(bodies: list[bytes], runs: int) -> dict[str, float]:
    documents = [lxml.html.document_fromstring(body) for body in bodies]
    texts = [main_text(document) for document in documents]
    steps: dict[str, Callable[[], object]] = {
        "parse": lambda: [lxml.html.document_fromstring(body) for body in bodies],
        "visible_text": lambda: [visible_text(document) for document in documents],
        "main_text": lambda: [main_text(document) for document in documents],
        "fingerprint": lambda: [fingerprint(document) for document in documents],
        "fingerprint_text": lambda: [fingerprint_text(text) for text in texts],
    }
    out = {}
    for name, step in steps.items():
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            step()
            times.append(time.perf_counter() - began)
        out[name] = statistics.median(times) / len(bodies) * 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 2)[2],
    )  # fmt: skip
    parser.add_argument("--seeds", type=int, default=5, help="webs, seeds 1..N (default 5)")
    parser.add_argument("--hosts", type=int, default=30, help="hosts of each web (default 30)")
    parser.add_argument("--groups", type=int, default=12, help="groups a web (default 12)")
    parser.add_argument("--edited", type=int, default=12, help="edited groups a web (default 12)")
    parser.add_argument("--size", type=int, default=4, help="pages a group (default 4)")
    parser.add_argument("--decoys", type=int, default=2, help="decoys a group (default 2)")
    parser.add_argument(
        "--k", type=int, nargs="+", default=[3],
        help="Hamming distances (default 3; the index has max(4, k + 1) blocks)",
    )  # fmt: skip
    parser.add_argument("--runs", type=int, default=5, help="timing passes (default 5)")
    parser.add_argument("--no-cost", action="store_true", help="skip the cost a page")
    parser.add_argument("--json", default=None, help="append the results to this file")
    args = parser.parse_args()

    results: dict[str, object] = {"args": vars(args)}
    webs = [make_web(seed, args) for seed in range(1, args.seeds + 1)]
    for k in args.k:
        total = {kind: [0, 0, 0] for kind in KINDS}
        per_seed = []
        for web in webs:
            counts = measure(web, k)
            per_seed.append(figures(counts))
            for kind in KINDS:
                total[kind] = [a + b for a, b in zip(total[kind], counts[kind], strict=True)]
        overall = figures(total)
        results[f"k={k}"] = {"total": overall, "per_seed": per_seed}
        print(f"k = {k}, {args.seeds} webs of {args.hosts} hosts:")
        for kind in ("groups", "edited"):
            f = overall[kind]
            recalls = [s[kind]["recall"] for s in per_seed]
            print(
                f"  {kind:7s} precision {f['precision']:.3f}  recall {f['recall']:.3f} "
                f"({f['true']}/{f['wanted']}, {f['false']} false; recall a web "
                f"{min(recalls):.2f} to {max(recalls):.2f})"
            )
    if not args.no_cost:
        web = webs[0]
        profile = web.near_duplicate_decoys() + [
            url
            for groups in (web.near_duplicate_groups(), web.near_duplicate_edited_groups())
            for group in groups
            for url in group
        ]
        on_profile = set(profile)
        ordinary = [
            page.url
            for host in web.host_names()
            for page in web.pages(host)
            if page.kind is PageKind.HTML and page.status == 200 and page.url not in on_profile
        ]
        costs = {}
        for name, urls in (("profile", profile), ("ordinary", ordinary)):
            bodies = [web.body(url) for url in urls]
            size = sum(map(len, bodies)) / len(bodies) / 1024
            costs[name] = {"pages": len(bodies), "kb": size, **per_page_us(bodies, args.runs)}
            c = costs[name]
            print(
                f"cost a page, {name} pages ({c['pages']}, {size:.1f} KB): parse "
                f"{c['parse']:.0f} us, visible_text {c['visible_text']:.0f} us, main_text "
                f"{c['main_text']:.0f} us, fingerprint {c['fingerprint']:.0f} us "
                f"(of it features and simhash {c['fingerprint_text']:.0f} us)"
            )
        results["cost_us"] = costs
    if args.json:
        with open(args.json, "a") as out:
            out.write(json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
