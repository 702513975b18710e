"""The script `flink run` submits: the same crawl as ``python -m job crawl``, on a cluster.

::

    flink run --detached -pyclientexec $PY -pyexec $PY -py job/flink_job.py \\
        --config conf/crawler.yaml --out /shared/crawl --seeds seeds.txt [--set key=value ...]

``flink run -s SAVEPOINT ...`` with the same ``--out`` continues the crawl (seeds optional).
``python -m job.submit`` builds this line for you; README, "Running on a Flink cluster".
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    from job.cli import _add_crawl_options

    parser = argparse.ArgumentParser(
        prog="flink run -py job/flink_job.py",
        description="Submit the crawl to the Flink cluster flink run points at.",
    )
    parser.add_argument("--seeds", type=Path, help="file of seed URLs, one per line")
    parser.add_argument("--seed", action="append", default=[], help="a seed URL (repeatable)")
    _add_crawl_options(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse the crawl's options, prepare its output directory, build the job, submit it."""
    from job.preparation import exit_status

    args = _parser().parse_args(argv)
    return exit_status(functools.partial(_submit, args))


def _submit(args: argparse.Namespace) -> int:
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    from crawl.config import load_config
    from job.cli import _flink_conf, _overrides, _read_seeds
    from job.cluster import prepare_job
    from job.status import JOB_NAME
    from job.topology import build_topology

    config = load_config(args.config, _overrides(args, {}))
    env = StreamExecutionEnvironment.get_execution_environment()
    context = {
        str(key): str(value)
        for key, value in env._j_stream_execution_environment.getConfiguration()
        .toMap()
        .items()
    }
    restoring = bool(context.get("execution.state-recovery.path"))
    seeds = _read_seeds(args, config.crawl.seeds, required=not restoring)
    job = prepare_job(
        config, seeds, context, overwrite=args.overwrite, flink_conf=_flink_conf(args)
    )
    configuration = Configuration()
    for key, value in job.settings.items():
        configuration.set_string(key, value)
    env.configure(configuration)
    env.set_parallelism(job.config.crawl.parallelism)
    env.set_max_parallelism(job.config.crawl.vnodes)
    build_topology(env, job.config, job.layout)
    print(
        f"submitting the crawl of {job.seeds_accepted} new seed(s) into {job.layout.root}"
        + (f", restoring {job.restore_from}" if job.restore_from else ""),
        flush=True,
    )
    env.execute(JOB_NAME)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
