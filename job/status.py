"""``python -m job status``: a crawl's job and figures, from Flink's REST API and its files.

This module is the command. A URL's outcome status is :mod:`crawl.status`'s; the stages'
status files the command reads are written by :class:`crawl.progress.StageStatus`.

Two ways to point at a crawl:

- ``--out DIR``, a crawl run by the launcher: ``DIR/job.json`` names the job and its REST
  address, and the crawl's figures come from the status files the stages write
  (``DIR/status/``), exact names included (``errors.timeout:read``).
- ``--rest URL`` (optionally ``--job ID``), any Flink cluster: the job (by default the running
  job called ``pyflink-crawler``) and its figures from the REST API, as the stages report
  them as Flink metrics (:mod:`operators.metrics`: names with ``_`` for ``.`` and ``:``).

Both give the job's state, uptime and last completed checkpoint. Nothing here imports
pyflink: the command answers in a fraction of a second.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from crawl.layout import OutputLayout
from crawl.progress import CrawlFigures, read_statuses
from crawl.stages import (
    CRAWLDB_ARCHIVED,
    CRAWLDB_BELOW_CUTOFF,
    CRAWLDB_BUFFERED,
    CRAWLDB_DEFERRED,
    CRAWLDB_KNOWN,
    CRAWLDB_MERGES,
    CRAWLDB_PENDING,
    CRAWLDB_RELEASES,
    CRAWLDB_RELEASES_FROM_WINDOW,
    FETCH_ERRORS,
    FETCH_HOSTS_ACTIVE,
    FETCH_HOSTS_FAILING,
    FETCH_IN_FLIGHT,
    FETCH_LATENCY_MS,
    FETCH_QUEUED,
    PROCESS_BYTES,
    PROCESS_FOUND_BY,
    PROCESS_LINKS_REJECTED,
    PROCESS_PAGES,
    Figure,
)
from crawl.status import Status

__all__ = [
    "ENDED_STATES",
    "JOB_FILE",
    "JOB_NAME",
    "CrawlView",
    "JobStatus",
    "RestClient",
    "StatusError",
    "figures_from_files",
    "figures_from_metrics",
    "find_job",
    "metric_key",
    "run_status",
]

#: The name of the crawl's Flink job.
JOB_NAME = "pyflink-crawler"
#: A local run's record of its job in the output directory (its id, REST address, end).
JOB_FILE = "job.json"
#: The states of a Flink job that has ended.
ENDED_STATES = ("FAILED", "CANCELED", "FINISHED")
#: The metric group of the crawler's figures (operators.metrics.GROUP).
METRIC_GROUP = "crawler"
_IDS_PER_REQUEST = 40


def metric_key(key: str) -> str:
    """A figure's key (``stage.name``) as the REST API's metrics spell it: ``_`` for ``.`` in
    the name (:mod:`operators.metrics`)."""
    stage, _, name = key.partition(".")
    return f"{stage}.{name.replace('.', '_')}"


class StatusError(RuntimeError):
    """Nothing to report: no REST API answers, no such job, no crawl in the directory."""


class RestClient:
    """Requests to a Flink REST API, JSON answers."""

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        if "://" not in url:
            url = "http://" + url
        self.url = url.rstrip("/")
        self._timeout = timeout

    def get(self, path: str) -> Any:
        return self._call(urllib.request.Request(self.url + path))

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` as JSON (such as a stop with a savepoint); the JSON answer."""
        return self._call(urllib.request.Request(
            self.url + path, data=json.dumps(body).encode("utf-8"), method="POST",
            headers={"Content-Type": "application/json"},
        ))

    def _call(self, request: urllib.request.Request) -> Any:
        url = request.full_url
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:  # noqa: S310
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            raise StatusError(f"{url}: HTTP {error.code} {error.reason}") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise StatusError(f"no Flink REST API answers at {self.url} ({reason})") from None
        except ValueError as error:
            raise StatusError(f"{url}: not a Flink REST API answer ({error})") from None


@dataclasses.dataclass
class JobStatus:
    """What the REST API says of a job and its checkpoints."""

    job_id: str
    name: str
    state: str
    uptime_seconds: float
    vertices: list[dict[str, Any]]
    checkpoints_completed: int = 0
    checkpoints_failed: int = 0
    #: The last completed checkpoint: id, size (bytes), duration (ms), when (epoch seconds).
    last_checkpoint: dict[str, Any] | None = None


def find_job(rest: RestClient, job_id: str | None = None) -> JobStatus:
    """The job ``job_id``, else the running job named ``pyflink-crawler``, else the running
    job if there is just one."""
    if job_id is None:
        jobs = rest.get("/jobs/overview").get("jobs", [])
        running = [job for job in jobs if job.get("state") == "RUNNING"]
        named = [job for job in running if job.get("name") == JOB_NAME]
        chosen = named or (running if len(running) == 1 else [])
        if not chosen:
            listed = ", ".join(f"{j.get('jid')} {j.get('name')} {j.get('state')}" for j in jobs)
            raise StatusError(
                f"no running {JOB_NAME} job at {rest.url}; pass --job ID"
                + (f" (jobs: {listed})" if listed else " (no jobs)")
            )
        job_id = str(max(chosen, key=lambda job: job.get("start-time", 0))["jid"])
    detail = rest.get(f"/jobs/{job_id}")
    job = JobStatus(
        job_id=job_id,
        name=str(detail.get("name", "")),
        state=str(detail.get("state", "?")),
        uptime_seconds=max(0, int(detail.get("duration", 0))) / 1000.0,
        vertices=list(detail.get("vertices", [])),
    )
    try:
        checkpoints = rest.get(f"/jobs/{job_id}/checkpoints")
    except StatusError:
        return job  # checkpointing off, or the job already archived
    counts = checkpoints.get("counts", {})
    job.checkpoints_completed = int(counts.get("completed", 0))
    job.checkpoints_failed = int(counts.get("failed", 0))
    completed = (checkpoints.get("latest") or {}).get("completed")
    if completed:
        job.last_checkpoint = {
            "id": completed.get("id"),
            "size": int(completed.get("checkpointed_size", completed.get("state_size", 0))),
            "state_size": int(completed.get("state_size", 0)),
            "duration_ms": int(completed.get("end_to_end_duration", 0)),
            "time": int(completed.get("latest_ack_timestamp", 0)) / 1000.0,
            "savepoint": bool(completed.get("is_savepoint", False)),
        }
    return job


@dataclasses.dataclass
class CrawlView:
    """A crawl's figures keyed ``stage.name``: exact names (status files, ``sep`` ".") or
    metric names (REST, ``sep`` "_"); ``maxima`` holds the largest subtask's value."""

    values: dict[str, float]
    sep: str
    source: str
    maxima: dict[str, float] = dataclasses.field(default_factory=dict)

    def get(self, key: str) -> float:
        """The figure of key ``key`` (a :attr:`crawl.stages.Figure.key`: ``stage.name``)."""
        return self.values.get(self._spelt(key), 0.0)

    def family(self, figure: Figure) -> dict[str, float]:
        """The members of the family ``figure`` (``stage.<name><sep><member>``), by member."""
        start = self._spelt(figure.key) + self.sep
        return {k[len(start):]: v for k, v in self.values.items() if k.startswith(start)}

    def _spelt(self, key: str) -> str:
        return key if self.sep == "." else metric_key(key)

    @property
    def pages(self) -> int:
        """Pages fetched (what the crawl's summary counts: robots denials and rejections
        fetch nothing)."""
        fetched = (Status.FETCHED, Status.REDIRECT, Status.HTTP_ERROR, Status.FETCH_ERROR)
        return int(sum(self.get(PROCESS_PAGES.member_key(status.value)) for status in fetched))


def figures_from_files(layout: OutputLayout) -> CrawlView | None:
    """The figures of the status files (None when there are none)."""
    statuses = read_statuses(layout.status)
    if not statuses:
        return None
    figures = CrawlFigures.from_statuses(statuses)
    values: dict[str, float] = {k: float(v) for k, v in figures.counters.items()}
    values.update(figures.gauges)
    return CrawlView(values, ".", f"status files in {layout.status}")


def figures_from_metrics(rest: RestClient, job: JobStatus) -> CrawlView:
    """The crawler's metrics of every vertex of ``job``, summed over subtasks."""
    values: dict[str, float] = {}
    maxima: dict[str, float] = {}
    marker = f"{METRIC_GROUP}."
    for vertex in job.vertices:
        base = f"/jobs/{job.job_id}/vertices/{vertex['id']}/subtasks/metrics"
        ids = [item["id"] for item in rest.get(base) if f".{marker}" in f".{item['id']}"]
        for start in range(0, len(ids), _IDS_PER_REQUEST):
            chunk = ids[start : start + _IDS_PER_REQUEST]
            query = urllib.parse.urlencode({"get": ",".join(chunk), "agg": "sum,max"})
            for item in rest.get(f"{base}?{query}"):
                metric = str(item["id"])
                name = metric[metric.index(marker) + len(marker):] if marker in metric else metric
                values[name] = values.get(name, 0.0) + float(item.get("sum", 0.0))
                maxima[name] = max(maxima.get(name, 0.0), float(item.get("max", 0.0)))
    return CrawlView(values, "_", f"Flink metrics at {rest.url}", maxima)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _top(counts: Mapping[str, float], limit: int = 8) -> str:
    items = sorted(((k, int(v)) for k, v in counts.items() if v), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{k} {v}" for k, v in items[:limit])
    return shown + (f", ... ({len(items) - limit} more)" if len(items) > limit else "") or "none"


def render_job(job: JobStatus, rest_url: str) -> list[str]:
    lines = [
        f"job          {job.job_id}  {job.name}  {job.state}  up {job.uptime_seconds:.0f} s  "
        f"(REST API {rest_url})"
    ]
    last = job.last_checkpoint
    checkpoints = (
        f"checkpoints  {job.checkpoints_completed} completed, {job.checkpoints_failed} failed"
    )
    if last:
        when = time.strftime("%H:%M:%S", time.localtime(last["time"])) if last["time"] else "?"
        checkpoints += (
            f"; last {'savepoint' if last['savepoint'] else 'checkpoint'} #{last['id']} at "
            f"{when}: {_size(last['size'])} ({_size(last['state_size'])} of state), "
            f"{last['duration_ms']} ms"
        )
    lines.append(checkpoints)
    return lines


def render_figures(view: CrawlView, uptime_seconds: float | None) -> list[str]:
    pages = view.pages
    rate = f" ({pages / uptime_seconds:.1f}/s since the job started)" if uptime_seconds else ""
    lines = [
        f"pages        {pages}{rate}, {_size(view.get(PROCESS_BYTES.key))}",
        f"queued URLs  {int(view.get(FETCH_QUEUED.key))} in the fetch queues, "
        f"{int(view.get(CRAWLDB_PENDING.key))} waiting in the crawl DB "
        f"({int(view.get(CRAWLDB_BELOW_CUTOFF.key))} below the budget cutoff), "
        f"{int(view.get(CRAWLDB_BUFFERED.key))} in its buffers; "
        f"{int(view.get(FETCH_IN_FLIGHT.key))} fetches in flight",
        f"hosts        {int(view.get(FETCH_HOSTS_ACTIVE.key))} active, "
        f"{int(view.get(FETCH_HOSTS_FAILING.key))} failing",
        f"URLs known   {int(view.get(CRAWLDB_KNOWN.key))} "
        f"({int(view.get(CRAWLDB_ARCHIVED.key))} archived), "
        f"{int(view.get(CRAWLDB_MERGES.key))} crawl DB merges, "
        f"{int(view.get(CRAWLDB_RELEASES.key))} releases "
        f"({int(view.get(CRAWLDB_RELEASES_FROM_WINDOW.key))} from the due window)",
        f"outcomes     {_top(view.family(PROCESS_PAGES))}",
        f"found by     {_top(view.family(PROCESS_FOUND_BY))}",
        f"errors       {_top(view.family(FETCH_ERRORS))} (fetch attempts, robots.txt too)",
        f"rejected     links: {_top(view.family(PROCESS_LINKS_REJECTED), 5)}"
        f"; deferred URLs: {_top(view.family(CRAWLDB_DEFERRED), 5)}",
    ]
    # The latency histogram is a Flink metric only: its statistics are in the REST view.
    latency = FETCH_LATENCY_MS.key
    if view.maxima.get(f"{latency}_max"):
        lines.append(
            f"fetch time   median {view.maxima.get(f'{latency}_median', 0):.0f} ms, "
            f"p95 {view.maxima.get(f'{latency}_p95', 0):.0f} ms "
            "(the slowest subtask's, over its last fetches)"
        )
    lines.append(f"(figures from {view.source})")
    return lines


def run_status(
    out_dir: Path | None, rest_url: str | None, job_id: str | None, out: TextIO | None = None
) -> int:
    """Print the crawl's status; returns the exit status (1: the job could not be asked)."""
    out = out or sys.stdout
    job_record: dict[str, Any] = {}
    view = None
    if out_dir is not None:
        layout = OutputLayout(out_dir)
        try:
            job_record = json.loads((layout.root / JOB_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            job_record = {}
        view = figures_from_files(layout)
        if not job_record and view is None:
            raise StatusError(f"no crawl in {out_dir} (no {JOB_FILE}, no status files)")
    lines: list[str] = []
    status = 0
    uptime = None
    if out_dir is not None and job_record.get("finished") and rest_url is None:
        ended = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job_record["finished"]))
        lines.append(
            f"job          {job_record.get('job_id', '?')}  ended {ended} "
            f"({job_record.get('stop_reason', '?')}); its summary: {out_dir}/summary.json"
        )
        uptime = job_record["finished"] - job_record.get("started", job_record["finished"])
    else:
        url = rest_url or job_record.get("rest")
        if not url:
            raise StatusError(f"no REST address known for the crawl in {out_dir}: pass --rest")
        rest = RestClient(url)
        try:
            job = find_job(rest, job_id or job_record.get("job_id"))
        except StatusError as error:
            if view is None:
                raise
            lines.append(f"job          not reachable: {error}")
            status = 1
        else:
            lines += render_job(job, rest.url)
            uptime = job.uptime_seconds
            if view is None:
                view = figures_from_metrics(rest, job)
    if view is not None:
        lines += render_figures(view, uptime)
    print("\n".join(lines), file=out, flush=True)
    return status
