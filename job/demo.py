"""The demo: crawl the built-in synthetic web on the local MiniCluster, then check the crawl.

The synthetic web (:mod:`synthweb`) runs in a child process and is the crawl's HTTP proxy for
every host, so no network is needed. After the crawl the demo checks the result the way the
integration tests do: the web's own request log against its ground truth (politeness, robots,
completeness) and every WARC file read back with its digests.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TextIO

from crawl.archive.warc import WarcFileError, verify_warc_file
from crawl.config import Config, ScopeSection
from job.launcher import run_local_crawl
from synthweb import SyntheticWebServer, WebConfig, audit_log

__all__ = ["run_demo"]


def run_demo(
    config: Config,
    *,
    hosts: int,
    web_seed: int,
    overwrite: bool,
    flink_conf: Path,
    out: TextIO = sys.stdout,
) -> int:
    """Run the demo crawl; returns the process exit status (0: all checks passed)."""
    output = config.crawl.output_dir
    web_config = WebConfig(seed=web_seed, hosts=hosts)
    request_log = Path(f"{output}-requests.jsonl")
    request_log.parent.mkdir(parents=True, exist_ok=True)
    with open(request_log, "w"):
        pass  # a fresh log for this run
    with SyntheticWebServer(web_config, request_log) as server:
        config = dataclasses.replace(
            config,
            fetch=dataclasses.replace(config.fetch, proxy=server.proxy_url),
        )
        seeds = server.web.seeds()
        print(
            f"synthetic web: {hosts} hosts, seed {web_seed}, served at {server.proxy_url} "
            f"(request log {request_log})",
            file=out,
        )
        summary = run_local_crawl(
            config, seeds, overwrite=overwrite, out=out, flink_conf=flink_conf
        )
        records = server.request_log()
    expected = server.web.expected_crawl(seeds, config.user_agent.product)
    # The ground truth follows every link: with a narrower URL policy the crawl is not
    # expected to be complete, only polite.
    narrowed = config.scope != ScopeSection()
    complete = summary.stop_reason == "idle" and not narrowed
    problems = audit_log(
        records,
        expected,
        min_delay=config.politeness.delay_seconds,
        complete=complete,
    )
    print(f"\nchecks against the synthetic web's own request log ({len(records)} requests):",
          file=out)
    if problems:
        for problem in problems[:20]:
            print(f"  PROBLEM {problem}", file=out)
        print(f"  {len(problems)} problem(s)", file=out)
    else:
        print(
            "  robots.txt first on every host, nothing disallowed requested, no overlapping "
            "requests, delays respected" + (", every reachable page fetched once" if complete
                                            else ""),
            file=out,
        )
    if narrowed:
        print("  (completeness not checked: the scope settings differ from the defaults the "
              "ground truth assumes)", file=out)
    records_read = 0
    bad_files = 0
    for path in summary.warc_files:
        try:
            records_read += len(verify_warc_file(path))
        except WarcFileError as error:
            bad_files += 1
            print(f"  PROBLEM unreadable WARC file: {error}", file=out)
    print(f"  WARC: {len(summary.warc_files)} file(s), {records_read} records read back with "
          "valid digests" if not bad_files else f"  WARC: {bad_files} unreadable file(s)",
          file=out)
    print(f"\nWARC files: {config.crawl.output_dir}/warc/   crawl log: "
          f"{config.crawl.output_dir}/logs/crawl-*.log", file=out)
    return 1 if problems or bad_files else 0
