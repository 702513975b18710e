"""``python -m job status`` against a fake Flink REST API: a real HTTP server on loopback."""

from __future__ import annotations

import io
import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from crawl.progress import StageStatus
from crawl.stages import (
    CRAWLDB_PENDING,
    FETCH,
    FETCH_ERRORS,
    FETCH_QUEUED,
    PROCESS,
    PROCESS_FOUND_BY,
    PROCESS_PAGES,
)
from crawl.status import Status
from job.cli import main
from job.status import RestClient, StatusError, figures_from_metrics, find_job, run_status

JOB = "a" * 32
VERTEX = "b" * 32
PREFIX = "fetch___stream_key_by_map_operator.crawler."
METRICS = {
    f"{PREFIX}fetch.queued": [3.0, 4.0],
    f"{PREFIX}fetch.in_flight": [1.0, 0.0],
    f"{PREFIX}fetch.errors_timeout_read": [2.0, 0.0],
    f"{PREFIX}fetch.latency_ms_max": [300.0, 250.0],
    f"{PREFIX}fetch.latency_ms_median": [40.0, 55.0],
    f"{PREFIX}fetch.latency_ms_p95": [90.0, 120.0],
    "process.crawler.process.pages_FETCHED": [20.0, 22.0],
    "process.crawler.process.pages_HTTP_ERROR": [1.0, 2.0],
    "process.crawler.process.pages_ROBOTS_DENIED": [5.0, 0.0],
    "process.crawler.process.bytes": [2048.0, 2048.0],
    "process.crawler.process.found_by_link": [15.0, 20.0],
    "process.crawler.process.found_by_sitemap_entry": [0.0, 3.0],
    "crawl-db.crawler.crawldb.pending": [7.0, 0.0],
    "crawl-db.crawler.crawldb.below_cutoff": [4.0, 0.0],
    "numRecordsIn": [1.0, 1.0],
}


class FakeFlink(BaseHTTPRequestHandler):
    """The few REST resources the status command reads, as Flink 2.3 answers them."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        path = url.path
        if path == "/jobs/overview":
            body = {"jobs": [
                {"jid": "c" * 32, "name": "other", "state": "RUNNING", "start-time": 5},
                {"jid": JOB, "name": "pyflink-crawler", "state": "RUNNING", "start-time": 1},
                {"jid": "d" * 32, "name": "pyflink-crawler", "state": "FINISHED"},
            ]}
        elif path == f"/jobs/{JOB}":
            body = {"jid": JOB, "name": "pyflink-crawler", "state": "RUNNING", "duration": 20000,
                    "vertices": [{"id": VERTEX, "name": "fetch", "parallelism": 2}]}
        elif path == f"/jobs/{JOB}/checkpoints":
            body = {"counts": {"completed": 9, "failed": 1},
                    "latest": {"completed": {
                        "id": 9, "is_savepoint": False, "checkpointed_size": 4096,
                        "state_size": 8192, "end_to_end_duration": 35,
                        "latest_ack_timestamp": 1_700_000_000_000}}}
        elif path == f"/jobs/{JOB}/vertices/{VERTEX}/subtasks/metrics" and "get" not in query:
            body = [{"id": name} for name in METRICS]
        elif path == f"/jobs/{JOB}/vertices/{VERTEX}/subtasks/metrics":
            assert query["agg"] == ["sum,max"]
            body = [{"id": name, "sum": sum(METRICS[name]), "max": max(METRICS[name])}
                    for name in query["get"][0].split(",")]
        else:
            self.send_error(404, "Not Found")
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def flink() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeFlink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens there once closed


def test_the_running_crawler_job_is_found_with_its_last_checkpoint(flink: str) -> None:
    job = find_job(RestClient(flink))
    assert (job.job_id, job.state, job.uptime_seconds) == (JOB, "RUNNING", 20.0)
    assert (job.checkpoints_completed, job.checkpoints_failed) == (9, 1)
    assert job.last_checkpoint == {"id": 9, "size": 4096, "state_size": 8192,
                                   "duration_ms": 35, "time": 1_700_000_000.0,
                                   "savepoint": False}


def test_metrics_are_summed_over_subtasks(flink: str) -> None:
    rest = RestClient(flink)
    view = figures_from_metrics(rest, find_job(rest))
    assert "numRecordsIn" not in view.values
    assert view.get(FETCH_QUEUED.key) == 7
    assert view.get(CRAWLDB_PENDING.key) == 7
    assert view.pages == 45  # robots denials fetch nothing
    assert view.family(FETCH_ERRORS) == {"timeout_read": 2.0}
    assert view.maxima["fetch.latency_ms_p95"] == 120


def test_status_from_rest_only(flink: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--rest", flink.removeprefix("http://")]) == 0
    text = capsys.readouterr().out
    assert f"job          {JOB}  pyflink-crawler  RUNNING  up 20 s" in text
    assert "checkpoints  9 completed, 1 failed; last checkpoint #9" in text
    assert "4.0 KiB (8.0 KiB of state), 35 ms" in text
    assert "pages        45 (2.2/s since the job started), 4.0 KiB" in text
    assert "7 in the fetch queues, 7 waiting in the crawl DB (4 below the budget cutoff)" in text
    assert "found by     link 35, sitemap_entry 3" in text
    assert "errors       timeout_read 2" in text
    assert "median 55 ms, p95 120 ms" in text
    assert f"(figures from Flink metrics at {flink})" in text


def test_status_of_a_local_run_reads_its_files(flink: str, tmp_path: Path) -> None:
    (tmp_path / "job.json").write_text(json.dumps({"job_id": JOB, "rest": flink}))
    status = StageStatus(tmp_path / "status", PROCESS.figures, 0)
    status.count(PROCESS_PAGES.member(Status.FETCHED.value), 3)
    status.count(PROCESS_FOUND_BY.member("sitemap entry"), 3)
    status.close()
    fetch = StageStatus(tmp_path / "status", FETCH.figures, 0)
    fetch.count(FETCH_ERRORS.member("timeout:read"))
    fetch.close()
    out = io.StringIO()
    assert run_status(tmp_path, None, None, out) == 0
    text = out.getvalue()
    assert f"job          {JOB}  pyflink-crawler  RUNNING" in text
    assert "pages        3 (0.1/s since the job started)" in text
    assert "errors       timeout:read 1" in text  # exact names from the files
    assert "found by     sitemap entry 3" in text
    assert f"(figures from status files in {tmp_path / 'status'})" in text


def test_a_finished_local_run_is_not_asked_for(tmp_path: Path, closed_port: int) -> None:
    (tmp_path / "job.json").write_text(json.dumps({
        "job_id": JOB, "rest": f"http://127.0.0.1:{closed_port}", "started": 100.0,
        "finished": 110.0, "stop_reason": "idle"}))
    status = StageStatus(tmp_path / "status", PROCESS.figures, 0)
    status.count(PROCESS_PAGES.member(Status.FETCHED.value), 5)
    status.close()
    out = io.StringIO()
    assert run_status(tmp_path, None, None, out) == 0
    assert f"job          {JOB}  ended " in out.getvalue()
    assert "(idle)" in out.getvalue()
    assert "pages        5 (0.5/s since the job started)" in out.getvalue()


def test_nothing_answering_is_a_clear_error(
    closed_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    with pytest.raises(StatusError, match=f"no Flink REST API answers at {url}"):
        find_job(RestClient(url))
    assert main(["status", "--rest", url]) == 1
    assert f"status: no Flink REST API answers at {url}" in capsys.readouterr().err
    # A local run whose job is gone: the files' figures, and exit status 1.
    (tmp_path / "job.json").write_text(json.dumps({"job_id": JOB, "rest": url}))
    StageStatus(tmp_path / "status", FETCH.figures, 0).close()
    out = io.StringIO()
    assert run_status(tmp_path, None, None, out) == 1
    assert f"job          not reachable: no Flink REST API answers at {url}" in out.getvalue()


def test_no_crawl_and_no_job(tmp_path: Path, flink: str, capsys: pytest.CaptureFixture[str]
                             ) -> None:
    assert main(["status", "--out", str(tmp_path)]) == 1
    assert f"status: no crawl in {tmp_path}" in capsys.readouterr().err
    with pytest.raises(StatusError, match="HTTP 404"):
        find_job(RestClient(flink), "e" * 32)
    with pytest.raises(SystemExit):
        main(["status"])
