"""The crawl submitted with ``flink run`` to a standalone Flink cluster, as README describes.

The cluster is started from the installed pyflink package (its ``bin/start-cluster.sh``) with a
configuration directory of the test's own (``FLINK_CONF_DIR``: free ports, pid and log files
under the test's directory), so nothing changes in the installed package and other clusters
on the machine are left alone; it is stopped whatever happens.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from job.cluster import flink_home
from job.launcher import PROJECT_ROOT
from synthweb import SyntheticWebServer, audit_log

pytestmark = pytest.mark.integration

DELAY = 0.3
TOKEN = "pyflink-crawler"
FLINK_HOME = flink_home()


@dataclass(frozen=True)
class Cluster:
    """A running standalone cluster: its REST address and the environment its tools need."""

    rest: str
    env: dict[str, str]

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(f"http://{self.rest}{path}", timeout=10) as reply:
            return json.loads(reply.read())

    def flink(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(FLINK_HOME / "bin" / "flink"), *args], env=self.env, cwd=PROJECT_ROOT,
            capture_output=True, text=True, timeout=timeout, check=False,
        )

    def job_state(self, job_id: str) -> str:
        return str(self.get(f"/jobs/{job_id}")["state"])


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("localhost", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _write_conf_dir(conf: Path, base: Path, rpc_port: int, rest_port: int) -> None:
    """A configuration directory: the package's JVM options and logging, our ports and files."""
    for directory in (conf, base / "log", base / "pids", base / "lib"):
        directory.mkdir(parents=True, exist_ok=True)
    # The cluster's classpath: the package's lib/ and flink-python from its opt/ (README).
    jars = [*(FLINK_HOME / "lib").glob("*.jar"), *(FLINK_HOME / "opt").glob("flink-python-*.jar")]
    for jar in jars:
        (base / "lib" / jar.name).symlink_to(jar)
    for name in ("log4j.properties", "log4j-console.properties", "log4j-cli.properties"):
        shutil.copy(FLINK_HOME / "conf" / name, conf / name)
    packaged = yaml.safe_load((FLINK_HOME / "conf" / "config.yaml").read_text())
    settings = {
        "env.java.opts.all": packaged["env"]["java"]["opts"]["all"],
        "env.pid.dir": str(base / "pids"),
        "env.log.dir": str(base / "log"),
        "jobmanager.rpc.address": "localhost",
        "jobmanager.bind-host": "localhost",
        "jobmanager.rpc.port": rpc_port,
        "jobmanager.memory.process.size": "1024m",
        "taskmanager.host": "localhost",
        "taskmanager.bind-host": "localhost",
        "taskmanager.numberOfTaskSlots": 2,
        "taskmanager.memory.process.size": "1728m",
        "rest.address": "localhost",
        "rest.bind-address": "localhost",
        "rest.port": rest_port,
    }
    (conf / "config.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    (conf / "masters").write_text(f"localhost:{rest_port}\n", encoding="utf-8")
    (conf / "workers").write_text("localhost\n", encoding="utf-8")


def _stop_leftovers(pid_dir: Path) -> None:
    """Kill the cluster's daemons stop-cluster.sh missed (only the pids it recorded)."""
    for pid_file in pid_dir.glob("*.pid"):
        for line in pid_file.read_text().split():
            try:
                os.kill(int(line), signal.SIGKILL)
            except (ValueError, ProcessLookupError):
                pass


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    base = tmp_path / "flink"
    rpc_port, rest_port = _free_ports(2)
    _write_conf_dir(base / "conf", base, rpc_port, rest_port)
    interpreter_dir = os.path.dirname(sys.executable)
    env = {
        **os.environ,
        "FLINK_CONF_DIR": str(base / "conf"),
        "FLINK_LOG_DIR": str(base / "log"),
        "FLINK_LIB_DIR": str(base / "lib"),
        # The daemons' embedded Python finds its environment through PATH (thread mode).
        "PATH": os.pathsep.join([interpreter_dir, os.environ.get("PATH", "")]),
    }
    env.pop("FLINK_HOME", None)
    started = subprocess.run(
        [str(FLINK_HOME / "bin" / "start-cluster.sh")], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=60, check=False,
    )
    running = Cluster(f"localhost:{rest_port}", env)
    try:
        assert started.returncode == 0, started.stderr
        deadline = time.monotonic() + 60
        while True:
            try:
                if running.get("/overview")["slots-total"] >= 2:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the cluster did not come up: see " + str(
                base / "log"
            )
            time.sleep(0.5)
        yield running
    finally:
        subprocess.run(
            [str(FLINK_HOME / "bin" / "stop-cluster.sh")], env=env, cwd=tmp_path,
            capture_output=True, timeout=60, check=False,
        )
        time.sleep(1)
        _stop_leftovers(base / "pids")


def _submit(cluster: Cluster, *args: str) -> str:
    """``python -m job.submit ...``; returns the job id flink run printed."""
    process = subprocess.run(
        [sys.executable, "-m", "job.submit", "--jobmanager", cluster.rest, *args],
        env=cluster.env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
        check=False,
    )
    assert process.returncode == 0, process.stdout[-2000:] + process.stderr[-3000:]
    found = re.search(r"JobID ([0-9a-f]{32})", process.stdout)
    assert found, process.stdout
    return found.group(1)


def _wait_for_state(cluster: Cluster, job_id: str, state: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while (current := cluster.job_state(job_id)) != state:
        assert current not in ("FAILED", "CANCELED"), f"job {current}"
        assert time.monotonic() < deadline, f"job still {current}, expected {state}"
        time.sleep(0.5)


def _stop_with_savepoint(cluster: Cluster, job_id: str, savepoints: Path) -> str:
    """``flink stop --drain --savepointPath``, retried as README says; the savepoint path."""
    for _ in range(3):
        stopped = cluster.flink(
            "stop", "--drain", "--savepointPath", savepoints.as_uri(), job_id
        )
        found = re.search(r"Savepoint completed\. Path: (\S+)", stopped.stdout)
        if stopped.returncode == 0 and found:
            _wait_for_state(cluster, job_id, "FINISHED")
            return found.group(1)
        _wait_for_state(cluster, job_id, "RUNNING")
        time.sleep(2)
    raise AssertionError(f"could not stop the job: {stopped.stdout[-2000:]}{stopped.stderr}")


def test_flink_run_on_a_standalone_cluster_crawls_everything_and_stops_with_a_savepoint(
    tmp_path: Path, cluster: Cluster, web_server: SyntheticWebServer
) -> None:
    seeds = web_server.web.seeds()
    seeds_file = tmp_path / "seeds.txt"
    seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    crawl = ["--config", str(PROJECT_ROOT / "conf" / "crawler.yaml"), "--out", str(out),
             "--proxy", web_server.proxy_url, "--delay", str(DELAY),
             "--set", "crawl.parallelism=2"]
    job_id = _submit(cluster, *crawl, "--seeds", str(seeds_file))
    _wait_for_state(cluster, job_id, "RUNNING")

    # The Flink settings the crawl needs are those of the job on the cluster.
    checkpoints = cluster.get(f"/jobs/{job_id}/checkpoints/config")
    assert checkpoints["interval"] == 1000
    assert checkpoints["state_backend"] == "EmbeddedRocksDBStateBackend"
    assert checkpoints["externalization"]["delete_on_cancellation"] is False
    vertices = cluster.get(f"/jobs/{job_id}")["vertices"]
    assert {v["maxParallelism"] for v in vertices} == {256}  # crawl.vnodes
    assert max(v["parallelism"] for v in vertices) == 2

    expected = web_server.web.expected_crawl(seeds, TOKEN)
    deadline = time.monotonic() + 60
    while problems := audit_log(
        web_server.request_log(), expected, min_delay=DELAY, response_time_factor=2.0
    ):
        assert cluster.job_state(job_id) == "RUNNING"
        assert time.monotonic() < deadline, problems[:5]
        time.sleep(1)
    # Checkpoints go where the job said, under the output directory.
    assert list((out / "checkpoints" / job_id).glob("chk-*"))

    savepoint = _stop_with_savepoint(cluster, job_id, out / "savepoints")
    assert Path(savepoint.removeprefix("file:")).parent == out / "savepoints"
    # The drain closed every operator: WARC files finalised, each with its index.
    warc_files = list((out / "warc").glob("*.warc.gz"))
    assert warc_files
    assert not list((out / "warc").glob("*.open"))

    # Resumed from the savepoint with the same configuration, the crawl knows every page:
    # no page is fetched again (a host whose robots.txt answered 5xx may be asked again).
    requests_before = len(web_server.request_log())
    resumed = _submit(cluster, "--from-savepoint", savepoint, *crawl)
    _wait_for_state(cluster, resumed, "RUNNING")
    time.sleep(5)
    _stop_with_savepoint(cluster, resumed, out / "savepoints")
    again = web_server.request_log()[requests_before:]
    assert [r for r in again if r.path != "/robots.txt"] == []
    assert audit_log(
        web_server.request_log(), expected, min_delay=DELAY, response_time_factor=2.0
    ) == []
