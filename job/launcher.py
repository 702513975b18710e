"""Runs a crawl on the local MiniCluster: set up, submit, watch, stop, summarise.

The launcher prepares the output directory and the Flink configuration as every run of the
crawl does (:mod:`job.preparation`, which drops the seeds into the loop directory), adds what
a local run needs (every Flink endpoint bound to one address, the environment of the
MiniCluster's JVM), submits the job and then watches the figures the stages write
(:mod:`crawl.progress`): it prints progress every few seconds and stops the job with a
savepoint when the page budget is used up (and nothing is in flight) or when the crawl has
been idle long enough. Stopping with a savepoint closes every operator, so every WARC file is
finalised; the savepoint can continue the crawl later. Ctrl-C stops the same way. The job's
state is asked of Flink's REST API; a request that fails is asked again and reported
(:class:`JobStateReader`), never taken for the job's end, which would skip the stop.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO

import yaml

from crawl.archive.cdxj import build_index
from crawl.archive.summary import CrawlSummary, summarise_crawl_logs
from crawl.archive.warc import recover_open_files
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
from crawl.savepoint_files import KeptFilesError, keep_files
from crawl.stages import (
    CRAWLDB_DEFERRED,
    CRAWLDB_KNOWN,
    CRAWLDB_PENDING,
    CRAWLDB_RELEASES,
    CRAWLDB_RELEASES_FROM_WINDOW,
    FETCH_HOSTS_ACTIVE,
    FETCH_IN_FLIGHT,
    FETCH_QUEUED,
    NEARDUP_PAGES_NEAR_DUPLICATE,
    PROCESS_FETCHES_REFRESH,
    PROCESS_LINKS_REJECTED,
    PROCESS_WARC_NOT_MODIFIED,
    PROCESS_WARC_REVISITS,
)
from job.failures import FailureWatch, describe_failure, first_line
from job.native_allocator import AllocatorError, preload_allocator
from job.preparation import (
    DEFAULT_FLINK_CONF,
    MIN_IDLE_SECONDS,
    CrawlError,
    flink_configuration,
    migrate_loop_source,
    path_for_embedded_python,
    prepare_output,
    pyflink_home,
)
from job.status import ENDED_STATES, JOB_FILE, JOB_NAME, RestClient, StatusError

__all__ = [
    "UNKNOWN_STATE", "JobStateReader", "bind_settings", "keep_savepoint_files",
    "local_run_environment", "run_local_crawl",
]

#: After the budget is used up, stop once the crawl has been quiet this long (the last
#: outcomes have gone round the loop).
BUDGET_QUIET_SECONDS = 3.0
STOP_ATTEMPTS = 3
_POLL_SECONDS = 0.5
# How often the launcher asks Flink's REST API for task failures while the job runs.
_FAILURE_CHECK_SECONDS = 2.0


#: The state of a job that could not be asked (neither running nor ended, as far as known).
UNKNOWN_STATE = "UNKNOWN"


class JobStateReader:
    """The state of the launcher's job, asked again when asking fails, and never an end that
    was not one.

    ``ask`` returns the state (``RUNNING``, ``RESTARTING``, ``FINISHED``, ...) or raises. A
    failed request (no answer, a reset, an HTTP error, an answer that is not the job's) is
    asked again up to ``attempts`` times, ``pause_seconds`` apart. When they all fail, the job
    is ``FINISHED`` only if ``ended()`` says so (its result is in: the local MiniCluster takes
    its REST API down with the job), and :data:`UNKNOWN_STATE` otherwise: the caller asks
    again at its next poll, and judges neither idleness nor the budget meanwhile. A streak of
    failures is reported on ``out`` when it starts, when it gives up and when it ends.
    """

    def __init__(
        self,
        ask: Callable[[], str],
        ended: Callable[[], bool],
        out: TextIO,
        attempts: int = 3,
        pause_seconds: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._ask = ask
        self._ended = ended
        self._out = out
        self._attempts = attempts
        self._pause = pause_seconds
        self._sleep = sleep
        self._failed = 0  # failed requests in a row, across calls

    @classmethod
    def over_rest(
        cls, rest: RestClient, job_id: str, ended: Callable[[], bool], out: TextIO,
        **options: Any,
    ) -> JobStateReader:
        """A reader that asks Flink's REST API (``/jobs/<id>``)."""

        def ask() -> str:
            answer = rest.get(f"/jobs/{job_id}")
            if not isinstance(answer, dict) or not isinstance(answer.get("state"), str):
                raise StatusError(f"no state in the REST API's answer for job {job_id}")
            return answer["state"]

        return cls(ask, ended, out, **options)

    def __call__(self) -> str:
        for attempt in range(1, self._attempts + 1):
            try:
                state = self._ask()
            except Exception as error:  # noqa: BLE001 - asked again, reported, never an end
                self._failed += 1
                if self._failed == 1:
                    self._say(f"asking the job's state failed ({first_line(error)}); "
                              "asking again")
                if attempt < self._attempts:
                    self._sleep(self._pause)
                    continue
                if self._ended():
                    return "FINISHED"
                self._say(f"the job's state is unknown after {self._failed} failed requests "
                          f"({first_line(error)}); asking again at the next poll")
                return UNKNOWN_STATE
            if self._failed:
                self._say(f"the job's state answered again after {self._failed} failed "
                          f"requests: {state}")
                self._failed = 0
            return state
        raise AssertionError("unreachable")

    def _say(self, line: str) -> None:
        print(line, file=self._out, flush=True)


def _client_state(client: Any) -> str:
    """The job's state from the JobClient (the MiniCluster's own RPC)."""
    return str(client.get_job_status().result()).rsplit(".", 1)[-1]


def _state_reader(client: Any, rest: str, out: TextIO) -> JobStateReader:
    """How the launcher asks its job's state: the REST API when its address is known (the
    JobClient's RPC otherwise); the job has ended once its result is in."""

    def ended() -> bool:
        try:
            return bool(client.get_job_execution_result().done())
        except Exception:  # noqa: BLE001 - the JobClient itself is gone: so is the job
            return True

    if rest:
        return JobStateReader.over_rest(RestClient(rest), str(client.get_job_id()), ended, out)
    return JobStateReader(lambda: _client_state(client), ended, out)


#: Every interface: the endpoints listen on it, and name no address to reach them by.
_WILDCARD = "0.0.0.0"


def bind_settings(address: str) -> dict[str, str]:
    """The Flink settings that bind every endpoint of a local run to ``address``
    (``crawl.flink_bind_address``; Flink binds them to every interface by default).

    - ``rest.bind-address``: the REST API and web UI, which take job submissions, that is
      code to run, without authentication;
    - ``jobmanager.bind-host``: the blob server (job jars and artefacts), and the JobManager's
      RPC when it has a port of its own (the MiniCluster's RPC is in-process);
    - ``taskmanager.bind-host``: the TaskManager's RPC and data port, likewise (one local
      TaskManager exchanges data in memory);
    - ``rest.address``, ``jobmanager.rpc.address``, ``taskmanager.host``: the addresses
      clients are given, the same address unless it is every interface.
    """
    settings = {
        "rest.bind-address": address,
        "jobmanager.bind-host": address,
        "taskmanager.bind-host": address,
    }
    if address != _WILDCARD:
        settings.update({"rest.address": address, "jobmanager.rpc.address": address,
                         "taskmanager.host": address})
    return settings


def _lib_with_reporters(directory: Path) -> Path:
    """A directory of links to the jars of the package's lib/ and of its metric reporter
    plugins (pyflink/plugins/metrics-*), for the local JVM's class path."""
    home = pyflink_home()
    directory.mkdir(parents=True, exist_ok=True)
    jars = [*(home / "lib").glob("*.jar"), *(home / "plugins").glob("metrics-*/*.jar")]
    for jar in jars:
        link = directory / jar.name
        if not link.exists():
            link.symlink_to(jar)
    return directory


def _write_flink_conf_dir(settings: dict[str, str], layout: OutputLayout) -> None:
    """A Flink configuration directory for the local JVM (config.yaml and log4j files)."""
    pyflink_conf = pyflink_home() / "conf"
    layout.flink_conf.mkdir(parents=True, exist_ok=True)
    for name in ("log4j.properties", "log4j-console.properties", "log4j-cli.properties"):
        source = pyflink_conf / name
        if source.exists():
            shutil.copy(source, layout.flink_conf / name)
    (layout.flink_conf / "config.yaml").write_text(
        yaml.safe_dump(settings, default_flow_style=False, sort_keys=True), encoding="utf-8"
    )


def _write_job_file(layout: OutputLayout, job: dict[str, Any]) -> None:
    """The running job's id and REST address (read by ``python -m job status``), then how the
    run ended."""
    path = layout.root / JOB_FILE
    temporary = path.with_name(f".{JOB_FILE}.tmp")
    temporary.write_text(json.dumps(job, indent=2), encoding="utf-8")
    os.replace(temporary, path)


def _rest_address(layout: OutputLayout) -> str:
    for log_file in sorted(layout.flink_logs.glob("*.log")):
        try:
            text = log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        matches = re.findall(r"Rest endpoint listening at (\S+)", text)
        if matches:
            return "http://" + matches[-1]
    return ""


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


def _stop_with_savepoint(
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


def keep_savepoint_files(layout: OutputLayout, savepoint: str, out: TextIO) -> None:
    """Keep the crawl's files with a savepoint the job stopped with (so that it stays
    restorable once a crawl resumed from it has gone on); a failure is reported, not raised:
    the savepoint restores as long as the crawl's files are there."""
    try:
        keep_files(layout, savepoint)
    except (KeptFilesError, OSError) as error:
        print(f"could not keep the crawl's files with the savepoint {savepoint} ({error}): it "
              "restores only until a crawl resumed from it deletes them", file=out, flush=True)


def run_local_crawl(
    config: Config,
    seeds: Iterable[str],
    *,
    overwrite: bool = False,
    resume: bool = False,
    resume_from: Path | None = None,
    out: TextIO = sys.stdout,
    flink_conf: Path = DEFAULT_FLINK_CONF,
) -> CrawlSummary:
    """Crawl from ``seeds`` on the local MiniCluster until the budget or idleness stops it.

    With ``resume``, continue the crawl already in the output directory from its newest
    savepoint (or checkpoint), or from the savepoint ``resume_from``: its crawl DB, queues and
    loop position are restored, ``seeds`` (may be empty) are added to it, and the page budget
    counts the pages of every run.
    """
    layout = OutputLayout(Path(config.crawl.output_dir))
    config = dataclasses.replace(
        config, crawl=dataclasses.replace(config.crawl, output_dir=str(layout.root))
    )
    if 0 < config.crawl.idle_seconds < MIN_IDLE_SECONDS:
        raise CrawlError(
            f"crawl.idle_seconds: must be 0 or at least {MIN_IDLE_SECONDS} "
            f"(the loop needs a few checkpoints to go round), got {config.crawl.idle_seconds}"
        )
    try:
        # Into the environment of the MiniCluster's JVM, which the launcher starts later.
        allocator = preload_allocator(config.crawl.native_allocator, os.environ)
    except AllocatorError as error:
        raise CrawlError(str(error)) from None
    restore_from = None
    if resume_from is not None:
        restore_from = resume_from.absolute()
        if not (restore_from / "_metadata").is_file():
            raise CrawlError(f"{resume_from} is not a savepoint or checkpoint (no _metadata)")
        resume = True
    elif resume:
        restore_from = layout.latest_restore_point()
        if restore_from is None:
            raise CrawlError(f"{layout.root} holds no savepoint or checkpoint to resume from")
    accepted = prepare_output(
        layout, config, seeds, resuming=resume, overwrite=overwrite, out=out,
        restore_from=restore_from,
        how_to_resume="pass --resume to continue it",
    )
    restore_settings: dict[str, str] = {}
    if restore_from is not None:
        print(f"resuming from {restore_from}", file=out)
        restore_settings = migrate_loop_source(layout, restore_from, out)

    print(_allocator_line(allocator, config.crawl.native_allocator), file=out)
    client = _submit(config, layout, flink_conf, restore_from, restore_settings)
    started = time.time()
    rest = _rest_address(layout)
    job = {"job_id": str(client.get_job_id()), "rest": rest, "pid": os.getpid(),
           "started": started}
    _write_job_file(layout, job)
    print(
        f"crawling {accepted} new seed(s) into {layout.root}; Flink job {client.get_job_id()}"
        + (f", REST API at {rest}" if rest else ""),
        file=out,
        flush=True,
    )
    failures = FailureWatch(RestClient(rest).get, str(client.get_job_id())) if rest else None
    carry = CounterCarry()
    job_state = _state_reader(client, rest, out)
    try:
        reason, savepoint = _watch(client, config, layout, out, job_state, failures, carry)
    except KeyboardInterrupt:
        reason = "interrupted"
        print("\ninterrupted: stopping with a savepoint ...", file=out, flush=True)
        savepoint = _stop_with_savepoint(client, layout, out, job_state)
    _wait_for_end(client, layout, failures)
    if savepoint:
        keep_savepoint_files(layout, savepoint, out)
    finished = time.time()
    _write_job_file(layout, {**job, "finished": finished, "stop_reason": reason})
    for recovered in recover_open_files(layout.warc, config.warc.prefix):
        print(f"finalised a WARC file left open: {recovered.final_path}", file=out)

    figures = CrawlFigures.from_statuses(carry.carry(read_statuses(layout.status)))
    summary = summarise_crawl_logs(layout.logs.glob("crawl-*.log"), int(started * 1000))
    summary.stop_reason = reason
    summary.savepoint = savepoint
    summary.elapsed_seconds = finished - started
    summary.urls_known = int(figures.gauge(CRAWLDB_KNOWN.key))
    summary.links_rejected.update(figures.with_prefix(PROCESS_LINKS_REJECTED.member_prefix))
    summary.urls_deferred.update({
        key.removeprefix(CRAWLDB_DEFERRED.member_prefix): int(value)
        for key, value in figures.gauges.items() if key.startswith(CRAWLDB_DEFERRED.member_prefix)})
    summary.urls_waiting = int(figures.gauge(CRAWLDB_PENDING.key))
    summary.revisits = figures.counter(PROCESS_WARC_REVISITS.key)
    summary.refetches = figures.counter(PROCESS_FETCHES_REFRESH.key)
    summary.not_modified = figures.counter(PROCESS_WARC_NOT_MODIFIED.key)
    summary.near_duplicates = figures.counter(NEARDUP_PAGES_NEAR_DUPLICATE.key)
    summary.releases = figures.counter(CRAWLDB_RELEASES.key)
    summary.releases_from_window = figures.counter(CRAWLDB_RELEASES_FROM_WINDOW.key)
    summary.warc_files = sorted(str(p) for p in layout.warc.glob("*.warc.gz"))
    try:
        summary.cdxj_lines = build_index(layout.warc, layout.index)
        summary.cdxj_index = str(layout.index)
    except Exception as error:  # noqa: BLE001 - the crawl is done; the index can be rebuilt
        print(f"could not write the CDXJ index: {error} (run: python -m job index "
              f"--out {layout.root})", file=out)
    summary.crawl_logs = sorted(str(p) for p in layout.logs.glob("crawl-*.log"))
    layout.summary.write_text(json.dumps(summary.to_dict(), indent=2), encoding="utf-8")
    print(summary.render(), file=out, flush=True)
    if config.crawl.report:
        _write_report(layout, config, out)
    return summary


def _write_report(layout: OutputLayout, config: Config, out: TextIO) -> None:
    """Write the crawl report; a failure is told, never fails the crawl (it is written again
    with ``pyflink-crawler report``)."""
    from crawl.report import ReportSettings, write_report

    try:
        path = write_report(layout.root, ReportSettings.from_config(
            config, "the configuration of the crawl"))
    except Exception as error:  # noqa: BLE001 - the crawl is done; the report can be rewritten
        print(f"could not write the crawl report: {type(error).__name__}: {error} (run: "
              f"python -m job report --out {layout.root})", file=out, flush=True)
        return
    print(f"  report          {path}", file=out, flush=True)


def _allocator_line(allocator: str, setting: str) -> str:
    if allocator != "malloc":
        return f"native memory: jemalloc ({allocator})"
    if setting == "malloc":
        return "native memory: the C library's malloc (crawl.native_allocator: malloc)"
    return ("native memory: the C library's malloc, no jemalloc found (a long crawl's memory "
            "grows with it: README, \"The C allocator\")")


#: PyFlink's switch for how a local run gets its Python workers for process-mode operators.
PYTHON_WORKER_MODE = "_python_worker_execution_mode"


def local_run_environment(
    settings: dict[str, str], layout: OutputLayout, environ: Mapping[str, str]
) -> dict[str, str]:
    """The environment variables a local run sets in its own process (``environ``) before
    PyFlink starts the MiniCluster's JVM, which inherits them."""
    environment = {
        # Read by the JVM (JVM options, logging).
        "FLINK_CONF_DIR": str(layout.flink_conf),
        "FLINK_LOG_DIR": str(layout.flink_logs),
        "PATH": path_for_embedded_python(environ.get("PATH", "")),
    }
    if PYTHON_WORKER_MODE not in environ:
        # For a local run PyFlink otherwise starts its "loopback" worker pool in this process:
        # a gRPC server on every interface ([::]) that starts Python workers on request, for
        # operators in process mode. Thread mode does not use it; a process-mode operator gets
        # a worker process started by Flink instead, as on a cluster (PyFlink's own tests do
        # this). The pool's stop, which PyFlink leaves to atexit, starts a thread: Python 3.12
        # refuses that at shutdown, and every run ended with a traceback per pool.
        environment[PYTHON_WORKER_MODE] = "process"
    if any(key.startswith("metrics.reporter.") for key in settings):
        # Reporters are plugins (the apache-flink package ships them in pyflink/plugins), but
        # the MiniCluster loads none: it finds reporter factories on its class path only. So
        # the JVM gets a lib directory of the package's jars plus the reporters'.
        # (PyFlink replaces FLINK_LIB_DIR with its own unless FLINK_HOME is set.)
        if "FLINK_HOME" not in environ:
            environment["FLINK_HOME"] = str(pyflink_home())
        environment["FLINK_LIB_DIR"] = str(_lib_with_reporters(layout.flink_conf / "lib"))
    return environment


def _submit(
    config: Config, layout: OutputLayout, flink_conf: Path, restore_from: Path | None,
    restore_settings: dict[str, str],
) -> Any:
    """Point Flink at this crawl's configuration, build the job and start it."""
    settings = flink_configuration(config, layout, flink_conf)
    for key, value in bind_settings(config.crawl.flink_bind_address).items():
        settings.setdefault(key, value)  # a key of flink-conf.yaml is a choice made already
    if restore_from is not None:
        settings["execution.state-recovery.path"] = flink_uri(restore_from)
        settings.update(restore_settings)
    _write_flink_conf_dir(settings, layout)
    os.environ.update(local_run_environment(settings, layout, os.environ))

    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    from job.topology import build_topology

    configuration = Configuration()
    for key, value in settings.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(config.crawl.parallelism)
    env.set_max_parallelism(config.crawl.vnodes)
    build_topology(env, config, layout)
    return env.execute_async(JOB_NAME)


def _watch(
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
            return reason, _stop_with_savepoint(client, layout, out, job_state)


def _raise_job_failure(
    client: Any, state: str, layout: OutputLayout, failures: FailureWatch | None = None
) -> None:
    if state != "FAILED":
        return
    _wait_for_end(client, layout, failures)
    raise CrawlError(f"the Flink job failed (details in {layout.flink_logs})")


def _wait_for_end(
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
