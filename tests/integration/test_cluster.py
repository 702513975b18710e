"""The crawl submitted with ``flink run`` to a standalone Flink cluster, as README describes.

The cluster (``cluster_fixture``) is started from the installed pyflink package with a
configuration directory of the tests' own, and stopped whatever happens; the cluster tests share
it (``conftest.cluster``), this one runs on it first. The first run is
stopped by ``python -m job stop --when-idle``, the watcher of a crawl on a cluster.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawl.savepoint_files import kept_files
from job.preparation import PROJECT_ROOT
from synthweb import SyntheticWebServer, audit_log
from tests.integration.cluster_fixture import (
    Cluster,
    stop_with_savepoint,
    submit,
    submit_with_output,
    wait_for_state,
)
from tests.integration.crawl_runner import SHORT_BACKOFF

pytestmark = pytest.mark.integration

DELAY = 0.3
TOKEN = "pyflink-crawler"


#: How much earlier than a savepoint's request a fetch may have ended and still not be in it.
SLACK = 1.0


def _stop_when_idle(cluster: Cluster, job_id: str, out: Path) -> str:
    """``python -m job stop --when-idle`` (keeping the crawl's files with the savepoint);
    returns the savepoint's location. Idle for 6 s, as the local crawls of the tests: the
    cluster's REST API serves metrics at most 1 s old (``SHARED_CLUSTER_SETTINGS``)."""
    watcher = subprocess.Popen(
        [sys.executable, "-m", "job", "stop", "--rest", f"http://{cluster.rest}", "--job",
         job_id, "--when-idle", "--idle-seconds", "6", "--savepoint-dir",
         (out / "savepoints").as_uri(), "--out", str(out)],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        output, _ = watcher.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        watcher.kill()
        output, _ = watcher.communicate()
        raise AssertionError(f"not stopped in 180 s:\n{output[-3000:]}") from None
    assert watcher.returncode == 0, output
    assert "idle for" in output, output
    savepoint = re.search(r"^savepoint +(\S+)$", output, re.MULTILINE).group(1)
    assert kept_files(savepoint) is not None
    return savepoint


def test_flink_run_on_a_standalone_cluster_crawls_everything_and_stops_with_a_savepoint(
    tmp_path: Path, cluster: Cluster, web_server: SyntheticWebServer
) -> None:
    seeds = web_server.web.seeds()
    seeds_file = tmp_path / "seeds.txt"
    seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    crawl = ["--config", str(PROJECT_ROOT / "conf" / "crawler.yaml"), "--out", str(out),
             "--proxy", web_server.proxy_url, "--delay", str(DELAY),
             "--set", "crawl.parallelism=2", *SHORT_BACKOFF]
    job_id = submit(cluster, *crawl, "--seeds", str(seeds_file))
    wait_for_state(cluster, job_id, "RUNNING")

    # The Flink settings the crawl needs are those of the job on the cluster.
    checkpoints = cluster.get(f"/jobs/{job_id}/checkpoints/config")
    assert checkpoints["interval"] == 1000
    assert checkpoints["state_backend"] == "EmbeddedRocksDBStateBackend"
    assert checkpoints["externalization"]["delete_on_cancellation"] is False
    vertices = cluster.get(f"/jobs/{job_id}")["vertices"]
    assert {v["maxParallelism"] for v in vertices} == {256}  # crawl.vnodes
    assert max(v["parallelism"] for v in vertices) == 2

    # Checkpoints go where the job said, under the output directory (while it runs: a
    # finished job's are removed).
    deadline = time.monotonic() + 30
    while not list((out / "checkpoints" / job_id).glob("chk-*")):
        assert time.monotonic() < deadline, "no checkpoint under the output directory"
        time.sleep(0.5)

    # A savepoint of the running crawl, which goes on: its crawl DB and loop files kept with it.
    deadline = time.monotonic() + 60
    while len([r for r in web_server.request_log() if r.path != "/robots.txt"]) < 20:
        assert time.monotonic() < deadline, "the crawl made no progress"
        time.sleep(0.2)
    asked_at = time.time()
    taken = subprocess.run(
        [sys.executable, "-m", "job", "savepoint", "--rest", f"http://{cluster.rest}", "--job",
         job_id, "--out", str(out), "--savepoint-dir", (out / "savepoints").as_uri()],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert taken.returncode == 0, taken.stdout + taken.stderr
    mid_savepoint = re.search(r"^savepoint +(\S+)$", taken.stdout, re.MULTILINE).group(1)
    assert cluster.job_state(job_id) == "RUNNING"
    assert kept_files(mid_savepoint).crawldb

    # The crawl's watcher on a cluster: stopped with a savepoint once idle, which it is only
    # when every page has been fetched.
    savepoint = _stop_when_idle(cluster, job_id, out)
    assert cluster.job_state(job_id) == "FINISHED"
    expected = web_server.web.expected_crawl(seeds, TOKEN)
    assert audit_log(
        web_server.request_log(), expected, min_delay=DELAY, response_time_factor=2.0
    ) == []
    assert Path(savepoint.removeprefix("file:")).parent == out / "savepoints"
    # The drain closed every operator: WARC files finalised, each with its index.
    warc_files = list((out / "warc").glob("*.warc.gz"))
    assert warc_files
    assert not list((out / "warc").glob("*.open"))

    # Resumed from the savepoint with the same configuration, the crawl knows every page:
    # no page is fetched again (a host whose robots.txt answered 5xx may be asked again).
    requests_before = len(web_server.request_log())
    resumed = submit(cluster, "--from-savepoint", savepoint, *crawl)
    wait_for_state(cluster, resumed, "RUNNING")
    time.sleep(5)
    stop_with_savepoint(cluster, resumed, out / "savepoints")
    again = web_server.request_log()[requests_before:]
    assert [r for r in again if r.path != "/robots.txt"] == []
    assert audit_log(
        web_server.request_log(), expected, min_delay=DELAY, response_time_factor=2.0
    ) == []

    # Back to the savepoint taken mid-crawl (the crawl has gone on since): its crawl goes on
    # from there. What it had fetched is not fetched again; what it had not, is.
    first_run = web_server.request_log()[:requests_before]
    back, output = submit_with_output(cluster, "--from-savepoint", mid_savepoint, *crawl)
    assert "put back from the savepoint" in output, output
    wait_for_state(cluster, back, "RUNNING")
    _stop_when_idle(cluster, back, out)
    records = web_server.request_log()
    again = [r for r in records[requests_before:] if r.path != "/robots.txt"]
    fetched_at_savepoint = {r.url for r in first_run if r.end < asked_at - SLACK}
    assert again
    assert fetched_at_savepoint.isdisjoint(r.url for r in again)
    after_savepoint = {r.url for r in first_run if r.end >= asked_at - SLACK}
    problems = audit_log(records, expected, min_delay=DELAY, response_time_factor=2.0)
    assert [p for p in problems
            if not (p.split(": requested ", 1)[0] in after_savepoint and " times" in p)] == []
