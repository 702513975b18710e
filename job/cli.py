"""The command line: ``crawl`` your seeds, run the ``demo`` on the built-in synthetic web, see a
crawl's ``status``, rebuild its CDXJ ``index``, write its ``report``.

Options map onto keys of the configuration file (``conf/crawler.yaml``); ``--set
section.key=value`` reaches any key. Configuration errors name their key and exit with status 2;
a failed crawl exits with status 1.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any

from crawl.config import ConfigError, load_config, parse_override

__all__ = ["main"]

# Command-line option -> configuration key.
_OPTION_KEYS = {
    "out": "crawl.output_dir",
    "max_pages": "crawl.max_pages",
    "idle_seconds": "crawl.idle_seconds",
    "max_seconds": "crawl.max_seconds",
    "parallelism": "crawl.parallelism",
    "delay": "politeness.delay_seconds",
    "proxy": "fetch.proxy",
    "timeout": "fetch.total_timeout_seconds",
    "max_page_bytes": "fetch.max_content_bytes",
    "contact_url": "user_agent.contact_url",
}


def _add_crawl_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="configuration file (conf/crawler.yaml)")
    parser.add_argument("--out", help="output directory (crawl.output_dir)")
    parser.add_argument("--max-pages", type=int, help="page budget (crawl.max_pages; 0: none)")
    parser.add_argument(
        "--idle-seconds", type=float, help="stop after this long idle (crawl.idle_seconds)"
    )
    parser.add_argument(
        "--max-seconds", type=float, help="stop after this long (crawl.max_seconds; 0: never)"
    )
    parser.add_argument(
        "--parallelism", type=int,
        help="Flink parallelism (crawl.parallelism); a local crawl above 1 runs on as many "
        "TaskManagers of this machine, a Python interpreter each",
    )
    parser.add_argument(
        "--delay", type=float, help="seconds between requests to a host (politeness.delay_seconds)"
    )
    parser.add_argument("--proxy", help="HTTP proxy URL for every request (fetch.proxy)")
    parser.add_argument(
        "--timeout", type=float, help="whole-request timeout (fetch.total_timeout_seconds)"
    )
    parser.add_argument(
        "--max-page-bytes", type=int, help="truncate bodies here (fetch.max_content_bytes)"
    )
    parser.add_argument("--contact-url", help="contact URL in User-Agent (user_agent.contact_url)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="set any configuration key (repeatable)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace a crawl already in the output directory"
    )
    parser.add_argument(
        "--flink-conf", type=Path, help="Flink settings (default: the project's flink-conf.yaml)"
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyflink-crawler",
        description="A polite web crawler running as an Apache Flink job, writing WARC files.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    crawl = commands.add_parser("crawl", help="crawl from your seed URLs on the local MiniCluster")
    crawl.add_argument("--seeds", type=Path, help="file of seed URLs, one per line")
    crawl.add_argument("--seed", action="append", default=[], help="a seed URL (repeatable)")
    crawl.add_argument(
        "--resume",
        action="store_true",
        help="continue the crawl in --out from its newest savepoint (seeds optional)",
    )
    crawl.add_argument(
        "--resume-from", type=Path, metavar="SAVEPOINT",
        help="continue the crawl in --out from this savepoint (or checkpoint) directory",
    )
    _add_crawl_options(crawl)

    demo = commands.add_parser("demo", help="crawl the built-in synthetic web (no network needed)")
    demo.add_argument("--hosts", type=int, default=30, help="hosts in the synthetic web")
    demo.add_argument("--web-seed", type=int, default=1, help="random seed of the synthetic web")
    _add_crawl_options(demo)
    index = commands.add_parser(
        "index", help="(re)write the CDXJ index of a crawl's WARC files (out/index.cdxj)"
    )
    index.add_argument("--out", type=Path, required=True, help="the crawl's output directory")
    report = commands.add_parser(
        "report",
        help="write a crawl's report, one self-contained HTML page of charts (out/report.html)",
    )
    report.add_argument("--out", type=Path, required=True, help="the crawl's output directory")
    report.add_argument(
        "--config", type=Path,
        help="the crawl's configuration file: the report judges politeness by its delays",
    )
    report.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="a configuration key as the crawl had it (repeatable)")
    status = commands.add_parser(
        "status",
        help="a crawl's Flink job (state, uptime, checkpoints) and figures (pages, queues ...)",
    )
    status.add_argument(
        "--out", type=Path, help="the output directory of a crawl run by this command"
    )
    status.add_argument(
        "--rest", help="a Flink REST API (e.g. http://jobmanager:8081) running the crawl"
    )
    status.add_argument("--job", help="the job id (default: the running pyflink-crawler job)")
    stop = commands.add_parser(
        "stop",
        help="stop a crawl on a Flink cluster with a savepoint, now or once it is idle",
    )
    stop.add_argument("--rest", required=True,
                      help="the Flink REST API running the crawl (e.g. http://jobmanager:8081)")
    stop.add_argument("--job", help="the job id (default: the running pyflink-crawler job)")
    stop.add_argument("--savepoint-dir",
                      help="where the savepoint goes (default: the cluster's savepoint-dir)")
    stop.add_argument("--out", type=Path,
                      help="the crawl's output directory as mounted here: the crawl DB and "
                           "loop files the savepoint names are kept with it")
    stop.add_argument("--when-idle", action="store_true",
                      help="wait until nothing is queued, in flight or moving, then stop")
    stop.add_argument("--idle-seconds", type=float, default=30.0,
                      help="how long the crawl must be idle (default: 30, as crawl.idle_seconds)")
    savepoint = commands.add_parser(
        "savepoint",
        help="take a savepoint of a running crawl (it goes on) that stays restorable",
    )
    savepoint.add_argument("--out", type=Path, required=True,
                           help="the crawl's output directory (as mounted here)")
    savepoint.add_argument("--rest", help="the Flink REST API running the crawl (default: the "
                           "local crawl's, from --out)")
    savepoint.add_argument("--job", help="the job id (default: the running pyflink-crawler job)")
    savepoint.add_argument("--savepoint-dir",
                           help="where the savepoint goes (default: the cluster's savepoint-dir)")
    return parser


def _status(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from job.status import StatusError, run_status

    if args.out is None and args.rest is None:
        parser.error("status: give --out DIR (a local crawl) or --rest URL (any Flink cluster)")
    try:
        return run_status(args.out, args.rest, args.job)
    except StatusError as error:
        print(f"status: {error}", file=sys.stderr)
        return 1


def _index(out: Path) -> int:
    from crawl.archive.cdxj import build_index
    from crawl.layout import OutputLayout

    layout = OutputLayout(out)
    if not layout.warc.is_dir():
        print(f"no WARC files in {layout.warc}", file=sys.stderr)
        return 1
    lines = build_index(layout.warc, layout.index)
    print(f"{lines} captures in {layout.index}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from crawl.report import ReportSettings, write_report

    config = load_config(args.config, dict(parse_override(item) for item in args.set))
    origin = "the configuration given" if args.config or args.set else (
        "the default configuration")
    try:
        path = write_report(args.out, ReportSettings.from_config(config, origin))
    except OSError as error:  # no crawl logs there, or the page cannot be written
        print(f"report: {error}", file=sys.stderr)
        return 1
    print(path)
    return 0


def _crawl(args: argparse.Namespace) -> int:
    config = load_config(args.config, _overrides(args, {}))
    resuming = args.resume or args.resume_from is not None
    seeds = _read_seeds(args, config.crawl.seeds, required=not resuming)
    from job.launcher import run_local_crawl

    run_local_crawl(
        config,
        seeds,
        overwrite=args.overwrite,
        resume=args.resume,
        resume_from=args.resume_from,
        flink_conf=_flink_conf(args),
    )
    return 0


def _demo(args: argparse.Namespace) -> int:
    from job.demo import run_demo

    demo_defaults = {
        "crawl.output_dir": "crawl-demo",
        "crawl.idle_seconds": 10,
        "politeness.delay_seconds": 0.2,
    }
    # The demo's own defaults apply unless a configuration file says otherwise.
    config = load_config(
        args.config, _overrides(args, demo_defaults if args.config is None else {})
    )
    return run_demo(
        config,
        hosts=args.hosts,
        web_seed=args.web_seed,
        overwrite=True,
        flink_conf=_flink_conf(args),
    )


def _overrides(args: argparse.Namespace, defaults: dict[str, Any]) -> dict[str, Any]:
    overrides = dict(defaults)
    for option, key in _OPTION_KEYS.items():
        value = getattr(args, option, None)
        if value is not None:
            overrides[key] = value
    for item in args.set:
        key, value = parse_override(item)
        overrides[key] = value
    return overrides


def _read_seeds(args: argparse.Namespace, seeds_key: str, required: bool = True) -> list[str]:
    seeds = list(args.seed)
    path = args.seeds or (Path(seeds_key) if seeds_key else None)
    if path is not None:
        try:
            seeds += path.read_text(encoding="utf-8").splitlines()
        except OSError as error:
            raise ConfigError(f"cannot read seeds file {path}: {error}") from None
    if not seeds and required:
        raise ConfigError("no seeds: give --seeds FILE, --seed URL or crawl.seeds")
    return seeds


def _flink_conf(args: argparse.Namespace) -> Path:
    from job.preparation import DEFAULT_FLINK_CONF

    path = args.flink_conf or DEFAULT_FLINK_CONF
    if not path.is_file():
        raise ConfigError(
            f"Flink settings not found at {path}: pass --flink-conf (the project's "
            "flink-conf.yaml is found automatically in a source checkout installed with -e)"
        )
    return path


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``pyflink-crawler`` and ``python -m job``."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command == "status":
        return _status(args, parser)
    if args.command == "stop":
        from job.preparation import MIN_IDLE_SECONDS
        from job.stopper import run_stop

        if args.idle_seconds < MIN_IDLE_SECONDS:
            parser.error(f"stop: --idle-seconds must be at least {MIN_IDLE_SECONDS:g} (the "
                         "loop needs a few checkpoints to go round)")
        return run_stop(args.rest, args.job, args.savepoint_dir, args.when_idle,
                        args.idle_seconds, keep_for=args.out)
    if args.command == "savepoint":
        from job.savepoint import run_savepoint

        return run_savepoint(args.out, args.rest, args.job, args.savepoint_dir)
    from job.preparation import exit_status

    if args.command == "index":
        return _index(args.out)
    run = {"report": _report, "crawl": _crawl, "demo": _demo}[args.command]
    return exit_status(functools.partial(run, args))
