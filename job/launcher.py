"""Runs a crawl on this machine: set up, submit, watch, stop, summarise.

The launcher prepares the output directory and the Flink configuration as every run of the
crawl does (:mod:`job.preparation`, which drops the seeds into the loop directory), adds what
a local run needs (:mod:`job.local_settings`: every Flink endpoint bound to one address, the
environment of the MiniCluster's JVM), submits the job to the MiniCluster or, at a
parallelism above 1, to a cluster of this machine it starts (:mod:`job.local_cluster`, a
TaskManager a subtask, looked after while the crawl runs), records it for the other commands
(:mod:`job.job_state`) and then watches it (:mod:`job.watch`) until the budget, the time
limit or idleness stops it with a savepoint; Ctrl-C stops the same way. Then it keeps the
crawl's files with the savepoint, finalises any WARC file left open, writes the summary, the
CDXJ index and, if asked, the report.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from crawl.archive.cdxj import build_index
from crawl.archive.summary import CrawlSummary, summarise_crawl_logs
from crawl.archive.warc import recover_open_files
from crawl.config import Config
from crawl.layout import OutputLayout
from crawl.progress import CounterCarry, CrawlFigures, read_statuses
from crawl.savepoint_files import KeptFilesError, keep_files
from crawl.stages import (
    CRAWLDB_DEFERRED,
    CRAWLDB_KNOWN,
    CRAWLDB_PENDING,
    CRAWLDB_RELEASES,
    CRAWLDB_RELEASES_FROM_WINDOW,
    NEARDUP_PAGES_NEAR_DUPLICATE,
    PROCESS_FETCHES_REFRESH,
    PROCESS_LINKS_REJECTED,
    PROCESS_WARC_NOT_MODIFIED,
    PROCESS_WARC_REVISITS,
)
from job.class_archive import ARCHIVE_VARIABLE
from job.failures import FailureWatch
from job.job_state import job_state_reader, rest_address, write_job_file
from job.local_cluster import LocalCluster, client_settings, uses_local_cluster
from job.local_settings import local_run_environment, local_run_settings, write_flink_conf_dir
from job.native_allocator import AllocatorError, preload_allocator
from job.preparation import (
    DEFAULT_FLINK_CONF,
    MIN_IDLE_SECONDS,
    CrawlError,
    migrate_earlier_version,
    prepare_output,
)
from job.status import JOB_NAME, RestClient
from job.watch import stop_with_savepoint, wait_for_end, watch_job

__all__ = ["keep_savepoint_files", "run_local_crawl"]


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
    """Crawl from ``seeds`` on this machine until the budget or idleness stops it.

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
        restore_settings = migrate_earlier_version(layout, restore_from, out)

    print(_allocator_line(allocator, config.crawl.native_allocator), file=out)
    with ExitStack() as daemons:
        cluster = None
        if uses_local_cluster(config.crawl.local_runtime, config.crawl.parallelism):
            cluster = _start_local_cluster(config, layout, flink_conf, daemons, out)
        client = _submit(config, layout, flink_conf, restore_from, restore_settings, cluster,
                         out)
        started = time.time()
        rest = cluster.rest if cluster is not None else rest_address(layout)
        job = {"job_id": str(client.get_job_id()), "rest": rest, "pid": os.getpid(),
               "started": started}
        write_job_file(layout, job)
        print(
            f"crawling {accepted} new seed(s) into {layout.root}; Flink job {client.get_job_id()}"
            + (f", REST API at {rest}" if rest else ""),
            file=out,
            flush=True,
        )
        failures = FailureWatch(RestClient(rest).get, str(client.get_job_id())) if rest else None
        carry = CounterCarry()
        job_state = job_state_reader(client, rest, out)
        if cluster is not None:
            job_state = _supervised(job_state, cluster, out)
        try:
            reason, savepoint = watch_job(client, config, layout, out, job_state, failures, carry)
        except KeyboardInterrupt:
            reason = "interrupted"
            print("\ninterrupted: stopping with a savepoint ...", file=out, flush=True)
            savepoint = stop_with_savepoint(client, layout, out, job_state)
        wait_for_end(client, layout, failures)
    if savepoint:
        keep_savepoint_files(layout, savepoint, out)
    finished = time.time()
    write_job_file(layout, {**job, "finished": finished, "stop_reason": reason})
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


def _start_local_cluster(
    config: Config, layout: OutputLayout, flink_conf: Path, daemons: ExitStack, out: TextIO
) -> LocalCluster:
    """Start the standalone cluster of this machine a crawl at parallelism N runs on (a
    TaskManager a subtask: :mod:`job.local_cluster`), stopped when ``daemons`` closes."""
    # The daemons' JVMs get no class archive: it is the launcher JVM's, of another class path.
    settings = local_run_settings(config, layout, flink_conf, None, {},
                                  {**os.environ, ARCHIVE_VARIABLE: "off"})
    cluster = LocalCluster(settings, layout, config.crawl.parallelism, os.environ)
    print(f"starting a local Flink cluster: a JobManager and {config.crawl.parallelism} "
          f"TaskManagers of one slot each, REST API at {cluster.rest}", file=out, flush=True)
    for key, value in settings.items():
        if cluster.settings.get(key, value) != value and key.startswith("metrics.reporter."):
            print(f"{key}: {value} is one port for several daemons; they take "
                  f"{cluster.settings[key]}, one each", file=out, flush=True)
    daemons.callback(cluster.stop)
    cluster.launch()
    return cluster


def _supervised(
    job_state: Callable[[], str], cluster: LocalCluster, out: TextIO
) -> Callable[[], str]:
    """``job_state``, asked after the local cluster's daemons are looked after (a TaskManager
    that exited started again, said on ``out``; a JobManager that exited raises CrawlError)."""

    def ask() -> str:
        for line in cluster.supervise():
            print(line, file=out, flush=True)
        return job_state()

    return ask


def _submit(
    config: Config, layout: OutputLayout, flink_conf: Path, restore_from: Path | None,
    restore_settings: dict[str, str], cluster: LocalCluster | None, out: TextIO,
) -> Any:
    """Point Flink at this crawl's configuration, build the job and start it: on the
    MiniCluster, or on ``cluster``."""
    settings = local_run_settings(config, layout, flink_conf, restore_from, restore_settings,
                                  os.environ)
    if cluster is not None:
        settings = client_settings(settings, cluster.settings)
    write_flink_conf_dir(settings, layout)
    os.environ.update(local_run_environment(settings, layout, os.environ))

    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    from job.topology import build_topology

    configuration = Configuration()
    for key, value in settings.items():
        configuration.set_string(key, value)
    if cluster is None:
        env = StreamExecutionEnvironment.get_execution_environment(configuration)
    else:
        # getExecutionEnvironment outside `flink run` is always a local one; an environment
        # built on the configuration submits to its execution.target (the cluster's REST API).
        from pyflink.java_gateway import get_gateway

        env = StreamExecutionEnvironment(
            get_gateway().jvm.org.apache.flink.streaming.api.environment
            .StreamExecutionEnvironment(configuration._j_configuration))
    env.set_parallelism(config.crawl.parallelism)
    env.set_max_parallelism(config.crawl.vnodes)
    build_topology(env, config, layout)
    if cluster is not None:
        began = time.monotonic()
        cluster.wait_until_ready()
        print(f"the local Flink cluster is ready (waited {time.monotonic() - began:.1f} s "
              "for it)", file=out, flush=True)
    return env.execute_async(JOB_NAME)
