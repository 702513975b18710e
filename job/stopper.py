"""``python -m job stop``: stop a crawl running on a Flink cluster with a savepoint, at once or
when it falls idle.

The local launcher watches its own crawl and stops it when it is idle (``crawl.idle_seconds``)
or at its limits. A crawl submitted with ``flink run`` has no launcher; this command is its
watcher. With ``--when-idle`` it reads the crawl's figures from the job's metrics every few
seconds (as ``status --rest`` does) and judges them by the launcher's rule
(:func:`crawl.progress.is_idle`): nothing queued in the fetch stage, in a crawl DB buffer or
waiting in the crawl DB, nothing in flight, and none of the figures of progress moving for
``--idle-seconds``. Then, or at once without ``--when-idle``, it stops the job through the
REST API as ``flink stop --drain`` does: a savepoint, every operator drained and closed (WARC
files finalised), retried when Flink fails the stop (the job then restarts from the savepoint
it took; README "Failures").
It prints the savepoint's path, from which ``flink run --fromSavepoint`` resumes the crawl;
with ``--out`` (the crawl's output directory) it keeps the crawl's files with it, so that it
stays restorable after a crawl resumed from it has gone on (:mod:`crawl.savepoint_files`).
Nothing here imports pyflink.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from crawl.layout import OutputLayout
from crawl.progress import CrawlFigures, QuietTracker, is_idle
from crawl.savepoint_files import KeptFilesError, keep_files
from crawl.stages import (
    CRAWLDB_BUFFERED,
    CRAWLDB_MERGES,
    CRAWLDB_PENDING,
    CRAWLDB_RELEASES,
    CRAWLDB_URLS,
    DECODE_LINES,
    FETCH_IN_FLIGHT,
    FETCH_QUEUED,
    FETCH_RESULTS,
    NEARDUP_INDEX_PROBES,
    NEARDUP_PAGES_IN,
    PROCESS_PAGES,
)
from job.status import (
    ENDED_STATES,
    CrawlView,
    RestClient,
    StatusError,
    figures_from_metrics,
    find_job,
    metric_key,
)

__all__ = ["StopError", "await_savepoint", "figures_of_view", "stop_job", "wait_until_idle"]

#: The figures whose movement is progress (as metric names: stage.figure). A crawl whose
#: figures of these kinds stand still, with nothing queued or in flight, is idle.
_PROGRESS_PREFIXES = (
    *(metric_key(family.key) + "_" for family in (FETCH_RESULTS, PROCESS_PAGES, CRAWLDB_URLS)),
    *(metric_key(figure.key) for figure in (CRAWLDB_MERGES, CRAWLDB_RELEASES, DECODE_LINES,
                                            NEARDUP_INDEX_PROBES, NEARDUP_PAGES_IN)),
)
#: Gauges the idle rule reads (metric names), and their keys among the crawl's figures.
_IDLE_GAUGES = {metric_key(figure.key): figure.key
                for figure in (FETCH_IN_FLIGHT, FETCH_QUEUED, CRAWLDB_BUFFERED, CRAWLDB_PENDING)}
#: What the metrics of pages by outcome start with.
_PAGES = metric_key(PROCESS_PAGES.key) + "_"


class StopError(RuntimeError):
    """The job could not be stopped with a savepoint."""


def figures_of_view(view: CrawlView) -> CrawlFigures:
    """The figures of the idle rule from a job's metrics: its progress counters (as
    :class:`~crawl.progress.CrawlFigures` counters) and the gauges it reads."""
    counters = {name: int(value) for name, value in view.values.items()
                if name.startswith(_PROGRESS_PREFIXES)}
    gauges = {status_name: view.values.get(metric, 0.0)
              for metric, status_name in _IDLE_GAUGES.items()}
    return CrawlFigures(counters=counters, gauges=gauges)


def wait_until_idle(
    rest: RestClient,
    job_id: str,
    idle_seconds: float,
    out: TextIO,
    poll_seconds: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Return once the job's crawl has been idle for ``idle_seconds``; raise
    :class:`StopError` if the job stops running first."""
    quiet = QuietTracker()
    reported = ""
    while True:
        job = find_job(rest, job_id)
        if job.state != "RUNNING":
            raise StopError(f"job {job_id} is {job.state}, not running")
        figures = figures_of_view(figures_from_metrics(rest, job))
        now = clock()
        quiet_for = quiet.quiet_for(figures, now)
        if is_idle(figures, quiet_for, idle_seconds):
            print(f"idle for {quiet_for:.0f} s: nothing queued, in flight or moving",
                  file=out, flush=True)
            return
        pages = sum(v for k, v in figures.counters.items() if k.startswith(_PAGES))
        busy = ", ".join(f"{name} {figures.gauge(name):.0f}" for name in _IDLE_GAUGES.values()
                         if figures.gauge(name)) or ("quiet" if quiet_for else "moving")
        line = f"crawling: {pages} pages; {busy}"
        if line != reported:  # what keeps it from being idle, when that changes
            reported = line
            print(line, file=out, flush=True)
        sleep(poll_seconds)


def stop_job(
    rest: RestClient,
    job_id: str,
    savepoint_dir: str | None,
    out: TextIO,
    attempts: int = 3,
    timeout_seconds: float = 300.0,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Stop the job with a draining savepoint (into ``savepoint_dir``, else the cluster's
    ``execution.checkpointing.savepoint-dir``); return the savepoint's path."""
    body: dict[str, object] = {"drain": True}
    if savepoint_dir:
        body["targetDirectory"] = savepoint_dir
    failure = ""
    for attempt in range(1, attempts + 1):
        answer = rest.post(f"/jobs/{job_id}/stop", body)
        request_id = str(answer.get("request-id", ""))
        if not request_id:
            raise StopError(f"the REST API did not take the stop: {answer}")
        location, failure = await_savepoint(rest, job_id, request_id, timeout_seconds, 0.5,
                                            sleep)
        if location:
            _wait_for_end(rest, job_id, sleep)
            return location
        print(f"stopping failed (attempt {attempt}: {failure.splitlines()[0][:200]}); "
              "retrying once the job runs again", file=out, flush=True)
        _wait_for_running(rest, job_id, sleep)
    raise StopError(f"could not stop job {job_id} with a savepoint: {failure[:2000]}")


def await_savepoint(
    rest: RestClient,
    job_id: str,
    request_id: str,
    timeout_seconds: float,
    poll_seconds: float,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[str, str]:
    """Wait for the savepoint the REST API took as ``request_id`` (a savepoint, or a stop with
    one): (its location, "") once taken, ("", why) if it failed; :class:`StopError` when it is
    not done after ``timeout_seconds``."""
    started = time.monotonic()
    while True:
        status = rest.get(f"/jobs/{job_id}/savepoints/{request_id}")
        if status.get("status", {}).get("id") == "COMPLETED":
            break
        if time.monotonic() - started > timeout_seconds:
            raise StopError(f"no savepoint after {timeout_seconds:.0f} s")
        sleep(poll_seconds)
    operation = status.get("operation") or {}
    location = operation.get("location")
    if location:
        return str(location), ""
    cause = operation.get("failure-cause") or {}
    return "", str(cause.get("stack-trace") or cause.get("class") or operation)


def _wait_for_end(rest: RestClient, job_id: str, sleep: Callable[[float], None]) -> None:
    _wait_for(rest, job_id, ENDED_STATES, sleep)


def _wait_for_running(rest: RestClient, job_id: str, sleep: Callable[[float], None]) -> None:
    state = _wait_for(rest, job_id, ("RUNNING", *ENDED_STATES), sleep)
    if state in ENDED_STATES:
        raise StopError(f"job {job_id} ended ({state}) while stopping")


def _wait_for(rest: RestClient, job_id: str, states: tuple[str, ...],
              sleep: Callable[[float], None]) -> str:
    """The job's state once it is one of ``states`` (or after two minutes)."""
    for _ in range(240):
        state = find_job(rest, job_id).state
        if state in states:
            return state
        sleep(0.5)
    return state


def run_stop(
    rest_url: str,
    job_id: str | None,
    savepoint_dir: str | None,
    when_idle: bool,
    idle_seconds: float,
    out: TextIO | None = None,
    keep_for: Path | None = None,
) -> int:
    """The ``stop`` command; returns the exit status. With ``keep_for`` (the crawl's output
    directory), the crawl's files are kept with the savepoint once the job has stopped
    (:mod:`crawl.savepoint_files`)."""
    out = out or sys.stdout
    rest = RestClient(rest_url)
    try:
        job = find_job(rest, job_id)
        if job.state != "RUNNING":
            raise StopError(f"job {job.job_id} is {job.state}, not running")
        print(f"job {job.job_id} ({job.name}) at {rest.url}", file=out, flush=True)
        if when_idle:
            wait_until_idle(rest, job.job_id, idle_seconds, out)
        savepoint = stop_job(rest, job.job_id, savepoint_dir, out)
    except (StatusError, StopError) as error:
        print(f"stop: {error}", file=sys.stderr)
        return 1
    if keep_for is not None:
        try:
            keep_files(OutputLayout(keep_for), savepoint)
        except (KeptFilesError, OSError) as error:
            print(f"stop: the job stopped with the savepoint {savepoint}, but the crawl's "
                  f"files could not be kept with it ({error})", file=sys.stderr)
            return 1
    print(f"savepoint    {savepoint}", file=out, flush=True)
    return 0
