"""``python -m job.submit``: submit the crawl to a Flink cluster with ``flink run``.

Takes the options of ``python -m job crawl`` (``--config``, ``--out``, ``--seeds``, ``--set``
...) plus a few of its own, packs this checkout's crawler packages into a zip for the
TaskManagers (``-pyfs``), prints the ``flink run`` line and runs it. ``--dry-run`` only prints
it. The cluster is the one Flink's configuration (``FLINK_CONF_DIR``, or ``FLINK_HOME/conf``)
names, or ``--jobmanager HOST:PORT``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from job.cluster import flink_home, flink_run_command, pack_code
from job.preparation import PROJECT_ROOT, path_for_embedded_python

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m job.submit",
        description="Submit the crawl to a Flink cluster (every other option goes to the "
        "crawl: --config, --out, --seeds, --set ...; see python -m job crawl --help).",
    )
    parser.add_argument("--jobmanager", help="the cluster's REST address HOST:PORT")
    parser.add_argument(
        "--from-savepoint", help="continue the crawl from this savepoint (flink run -s)"
    )
    parser.add_argument(
        "--attached", action="store_true", help="wait for the job's end (default: detached)"
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter on every machine (default: this one)",
    )
    parser.add_argument(
        "--no-ship",
        action="store_true",
        help="do not send this checkout's code: the TaskManagers import the installed crawler",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the command only")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Build the ``flink run`` line, print it, run it; returns its exit status."""
    args, crawl_args = _parser().parse_known_args(argv)
    with tempfile.TemporaryDirectory(prefix="pyflink-crawler-submit-") as scratch:
        archive = None
        if not args.no_ship:
            archive = pack_code(PROJECT_ROOT, Path(scratch) / "pyflink-crawler-code.zip")
        command = flink_run_command(
            crawl_args,
            flink_home=flink_home(),
            python=args.python,
            code_archive=archive,
            jobmanager=args.jobmanager,
            savepoint=args.from_savepoint,
            detached=not args.attached,
        )
        print(shlex.join(command), flush=True)
        if args.dry_run:
            return 0
        env = {**os.environ, "PATH": path_for_embedded_python(os.environ.get("PATH", ""),
                                                              args.python)}
        # The zip is uploaded when the job is submitted; once flink run returns (detached: on
        # submission) it is no longer needed.
        return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
