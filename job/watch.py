"""The local run's watch over its job: progress lines, the stop conditions, the stop with a
savepoint, and the job's end.

While the job runs, the launcher reads the figures the stages write (:mod:`crawl.progress`)
every half second: it prints progress every few seconds (and each task failure Flink reports,
with its cause) and stops the job with a savepoint when the page budget is used up (and the
crawl has been quiet a moment), when the time limit is reached, or when the crawl has been
idle long enough. Stopping with a savepoint closes every operator, so every WARC file is
finalised; the savepoint can continue the crawl later. A job that fails raises
:class:`~job.preparation.CrawlError` with its cause and how to go on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, TextIO

from crawl.config import Config
from crawl.frontier.budget import PageBudget
from crawl.layout import OutputLayout, flink_uri
from crawl.progress import (
    CounterCarry,
    CrawlFigures,
    QuietTracker,
    is_idle,
    read_statuses,
)
from crawl.stages import (
    CRAWLDB_KNOWN,
    FETCH_HOSTS_ACTIVE,
    FETCH_IN_FLIGHT,
    FETCH_QUEUED,
    PROCESS_FETCHES_REFRESH,
)
from job.failures import FailureWatch, describe_failure, first_line
from job.job_state import UNKNOWN_STATE
from job.preparation import CrawlError
from job.status import ENDED_STATES

__all__ = [
    "BUDGET_QUIET_SECONDS", "STOP_ATTEMPTS", "stop_with_savepoint", "wait_for_end", "watch_job",
]

#: After the budget is used up, stop once the crawl has been quiet this long (the last
#: outcomes have gone round the loop).
BUDGET_QUIET_SECONDS = 3.0
STOP_ATTEMPTS = 3
_POLL_SECONDS = 0.5
# How often the launcher asks Flink's REST API for task failures while the job runs.
_FAILURE_CHECK_SECONDS = 2.0


def _progress_line(elapsed: float, figures: CrawlFigures, rate: float) -> str:
    line = (
        f"[{elapsed:7.1f}s] pages {figures.pages:>7} ({rate:6.1f}/s)  "
        f"queued {int(figures.gauge(FETCH_QUEUED.key)):>7}  "
        f"in flight {int(figures.gauge(FETCH_IN_FLIGHT.key)):>4}  "
        f"hosts active {int(figures.gauge(FETCH_HOSTS_ACTIVE.key)):>5}  "
        f"known {int(figures.gauge(CRAWLDB_KNOWN.key)):>8}"
    )
    refetched = figures.counter(PROCESS_FETCHES_REFRESH.key)
    if refetched:
        line += f"  refetched {refetched:>7}"
    return line


@dataclasses.dataclass
class _Watch:
    """What the launcher tracks while the job runs."""

    started: float
    last_print: float = 0.0
    last_pages: int = 0
    last_pages_time: float = 0.0
    rate: float = 0.0


def _stop_reason(
    figures: CrawlFigures,
    budget: PageBudget,
    max_pages: int,
    quiet_seconds: float,
    idle_seconds: float,
    elapsed_seconds: float = 0.0,
    max_seconds: float = 0.0,
) -> str | None:
    """Why the crawl should stop now, or None. ``idle_seconds`` 0 never judges it idle (a
    continuous crawl: its URLs come due again)."""
    if budget.limited and quiet_seconds >= BUDGET_QUIET_SECONDS and budget.claimed() >= max_pages:
        return "page budget reached"
    if max_seconds and elapsed_seconds >= max_seconds:
        return "time limit reached"
    if is_idle(figures, quiet_seconds, idle_seconds):
        return "idle"
    return None


def stop_with_savepoint(
    client: Any, layout: OutputLayout, out: TextIO, job_state: Callable[[], str]
) -> str:
    """Stop the job with a savepoint (draining it, so every operator is closed).

    When Flink fails the stop (as it did when its continuous file source, which read the loop
    before, discovered a file while its readers finished: "An OperatorEvent ... was lost"), the
    job restarts from the savepoint it has just taken, and stopping again succeeds.
    """
    from pyflink.common.completable_future import CompletableFuture
    from pyflink.java_gateway import get_gateway

    format_type = get_gateway().jvm.org.apache.flink.core.execution.SavepointFormatType.CANONICAL
    for attempt in range(1, STOP_ATTEMPTS + 1):
        future = CompletableFuture(
            client._j_job_client.stopWithSavepoint(True, flink_uri(layout.savepoints), format_type),
            str,
        )
        try:
            return str(future.result())
        except Exception as error:  # noqa: BLE001 - retried, then reported
            if attempt == STOP_ATTEMPTS:
                raise CrawlError(f"could not stop the job with a savepoint: {error}") from error
            print(f"stopping failed ({first_line(error)}); retrying", file=out, flush=True)
            _wait_until_running(client, layout, job_state)
    raise AssertionError("unreachable")


def _wait_until_running(
    client: Any, layout: OutputLayout, job_state: Callable[[], str], timeout: float = 120.0
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = job_state()
        if state == "RUNNING":
            time.sleep(2.0)  # let the restarted tasks open before stopping them again
            return
        if state in ENDED_STATES:
            _raise_job_failure(client, state, layout)
            return
        time.sleep(_POLL_SECONDS)
    raise CrawlError("the job did not come back after a failed stop")


def watch_job(
    client: Any, config: Config, layout: OutputLayout, out: TextIO,
    job_state: Callable[[], str],
    failures: FailureWatch | None = None,
    carry: CounterCarry | None = None,
) -> tuple[str, str]:
    """Print progress (and each task failure, with its cause) until the job ends or a stop
    condition holds; returns (reason, savepoint)."""
    budget = PageBudget(layout.budget, config.crawl.max_pages)
    quiet = QuietTracker()
    watch = _Watch(started=time.monotonic())
    next_failure_check = 0.0
    while True:
        time.sleep(_POLL_SECONDS)
        state = job_state()
        now = time.monotonic()
        if failures is not None and (now >= next_failure_check or state != "RUNNING"):
            next_failure_check = now + _FAILURE_CHECK_SECONDS
            for number, cause in failures.new():
                print(f"task failure {number}: {cause.line()}; Flink restarts the job "
                      "from its last checkpoint", file=out, flush=True)
        if state in ENDED_STATES:
            _raise_job_failure(client, state, layout, failures)
            return f"job {state.lower()}", ""
        if state == UNKNOWN_STATE:
            continue  # not asked this time: judged at the next poll (the reader reported it)
        if state != "RUNNING":
            # Restarting after a failure: neither idle nor stoppable until it runs again.
            quiet.interrupt(now)
            continue
        statuses = read_statuses(layout.status)
        figures = CrawlFigures.from_statuses(carry.carry(statuses) if carry else statuses)
        _maybe_print_progress(figures, watch, now, config.crawl.progress_seconds, out)
        reason = _stop_reason(
            figures,
            budget,
            config.crawl.max_pages,
            quiet.quiet_for(figures, now),
            0.0 if config.recrawl.enabled else config.crawl.idle_seconds,
            now - watch.started,
            config.crawl.max_seconds,
        )
        if reason:
            print(f"stopping: {reason}", file=out, flush=True)
            return reason, stop_with_savepoint(client, layout, out, job_state)


def _raise_job_failure(
    client: Any, state: str, layout: OutputLayout, failures: FailureWatch | None = None
) -> None:
    if state != "FAILED":
        return
    wait_for_end(client, layout, failures)
    raise CrawlError(f"the Flink job failed (details in {layout.flink_logs})")


def wait_for_end(
    client: Any, layout: OutputLayout, failures: FailureWatch | None = None
) -> None:
    """Wait for the job's end; a failed job raises CrawlError with its cause (the last task
    failure Flink reported, else the first line of the error) and how to go on."""
    try:
        client.get_job_execution_result().result()
    except Exception as error:  # noqa: BLE001 - report the cause, whatever it is
        if failures is not None:
            failures.new()
        cause = failures.last if failures is not None and failures.last else None
        if cause is None:
            cause = describe_failure(str(error))
        described = cause.line() if cause.error != "unknown failure" else first_line(error)
        raise CrawlError(
            f"the Flink job failed: {described}. Its last checkpoint is kept: once the cause "
            f"is dealt with, run the same command with --resume to go on from it (details "
            f"in {layout.flink_logs})"
        ) from error


def _maybe_print_progress(
    figures: CrawlFigures, watch: _Watch, now: float, every: float, out: TextIO
) -> None:
    if now - watch.last_print < every:
        return
    pages = figures.pages
    if watch.last_pages_time:
        span = now - watch.last_pages_time
        watch.rate = (pages - watch.last_pages) / span if span > 0 else 0.0
    watch.last_pages, watch.last_pages_time = pages, now
    watch.last_print = now
    print(_progress_line(now - watch.started, figures, watch.rate), file=out, flush=True)
