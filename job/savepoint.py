"""``python -m job savepoint``: a savepoint of a running crawl that stays restorable while the
crawl goes on.

Flink's own ``flink savepoint`` saves the job's state, which names crawl DB and loop files the
running crawl deletes later (:mod:`crawl.savepoint_files`). This command pins the crawl's
deletions, triggers the savepoint through the REST API (the job keeps running), links the
files it names into it, and unpins: ``--resume-from`` (locally) or ``flink run -s`` (on a
cluster) restores exactly that crawl for as long as the savepoint directory is kept. For a
local crawl the REST address and job come from ``out/job.json``; for a cluster pass
``--rest`` (and ``--job``), with ``--out`` the crawl's output directory as this machine
mounts it. Nothing here imports pyflink.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from crawl.layout import OutputLayout
from crawl.savepoint_files import KeptFiles, KeptFilesError, keep_files, pin, unpin
from job.status import JOB_FILE, RestClient, StatusError, find_job
from job.stopper import StopError, await_savepoint

__all__ = ["SavepointError", "run_savepoint", "take_savepoint"]


class SavepointError(RuntimeError):
    """No savepoint could be taken, or its files could not be kept."""


def take_savepoint(
    rest: RestClient,
    job_id: str,
    layout: OutputLayout,
    savepoint_dir: str | None = None,
    timeout_seconds: float = 600.0,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[str, KeptFiles]:
    """Take a savepoint of the running job and keep the crawl's files with it; returns its
    location and what was kept. The job goes on running."""
    held = pin(layout, seconds=timeout_seconds + 300.0)
    try:
        body: dict[str, object] = {"cancel-job": False}
        if savepoint_dir:
            body["target-directory"] = savepoint_dir
        answer = rest.post(f"/jobs/{job_id}/savepoints", body)
        request_id = str(answer.get("request-id", ""))
        if not request_id:
            raise SavepointError(f"the REST API did not take the savepoint: {answer}")
        try:
            location, failure = await_savepoint(rest, job_id, request_id, timeout_seconds, 0.1,
                                                sleep)
        except StopError as error:
            raise SavepointError(str(error)) from None
        if not location:
            raise SavepointError(f"the savepoint failed: {failure[:2000]}")
        try:
            kept = keep_files(layout, location)
        except (KeptFilesError, OSError) as error:
            raise SavepointError(
                f"savepoint {location} taken, but the crawl's files could not be kept with "
                f"it ({error}): it restores only while the crawl has not deleted them"
            ) from None
        return str(location), kept
    finally:
        unpin(held)


def _local_job(layout: OutputLayout) -> tuple[str, str]:
    """The REST address and job id of the crawl running in ``layout`` (``out/job.json``)."""
    try:
        record = json.loads((layout.root / JOB_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise SavepointError(f"no crawl is running in {layout.root} (no {JOB_FILE}): for a "
                             "crawl on a cluster pass --rest") from None
    if record.get("finished") or not record.get("rest"):
        raise SavepointError(f"the crawl in {layout.root} is not running")
    return str(record["rest"]), str(record["job_id"])


def run_savepoint(out_dir: Path, rest_url: str | None, job_id: str | None,
                  savepoint_dir: str | None, out: TextIO | None = None) -> int:
    """The ``savepoint`` command; returns the exit status."""
    out = out or sys.stdout
    layout = OutputLayout(out_dir)
    try:
        if rest_url is None:
            rest_url, job_id = _local_job(layout)
        rest = RestClient(rest_url)
        job = find_job(rest, job_id)
        if job.state != "RUNNING":
            raise SavepointError(f"job {job.job_id} is {job.state}, not running")
        location, kept = take_savepoint(rest, job.job_id, layout, savepoint_dir)
    except (StatusError, SavepointError) as error:
        print(f"savepoint: {error}", file=sys.stderr)
        return 1
    print(f"kept with it: {len(kept.crawldb)} crawl DB file(s), "
          f"{len(kept.loop) + len(kept.loop_hidden)} loop file(s)", file=out)
    print(f"savepoint    {location}", file=out, flush=True)
    return 0
