"""A standalone Flink cluster of the installed pyflink package, for the cluster tests.

The cluster is started from the package's ``bin/start-cluster.sh`` with a configuration
directory of the test's own (``FLINK_CONF_DIR``: free ports, pid and log files under the test's
directory), so nothing changes in the installed package and other clusters on the machine are
left alone; it is stopped whatever happens, and only the daemons it started are killed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from job.cluster import flink_home
from job.local_cluster import free_ports
from job.preparation import PROJECT_ROOT
from tests.integration.crawl_runner import SHORT_CRAWL_JVM_ARGS

FLINK_HOME = flink_home()

#: The settings of the cluster the cluster tests share (``conftest.shared_cluster``). The
#: JobManager notices a dead TaskManager by its failed heartbeats: with the defaults (10 s
#: interval, 50 s timeout) a kill (test_recovery) would stall the crawl for up to a minute.
#: The REST API's metrics (numRestarts) at most 1 s old.
SHARED_CLUSTER_SETTINGS = {
    "heartbeat.interval": 1000,
    "heartbeat.timeout": 5000,
    "metrics.fetcher.update-interval": 1000,
}


@dataclass(frozen=True)
class Cluster:
    """A running standalone cluster: its REST address, the environment its tools need and
    its directory (configuration, pid files, logs)."""

    rest: str
    env: dict[str, str]
    base: Path

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://{self.rest}{path}", timeout=10) as reply:
            return json.loads(reply.read())

    def flink(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(FLINK_HOME / "bin" / "flink"), *args], env=self.env, cwd=PROJECT_ROOT,
            capture_output=True, text=True, timeout=timeout, check=False,
        )

    def job_state(self, job_id: str) -> str:
        return str(self.get(f"/jobs/{job_id}")["state"])

    @property
    def log_dir(self) -> Path:
        return self.base / "log"

    def taskmanager_pids(self) -> list[int]:
        """The TaskManagers of this cluster that are alive (from its pid file)."""
        return [pid for pid in _recorded_pids(self.base / "pids", "taskexecutor")
                if _is_our_daemon(pid, self.base)]

    def cancel_running_jobs(self, timeout: float = 60) -> None:
        """Cancel every job not yet ended and wait until all slots are free again (a test
        that failed half-way leaves the next one a cluster with nothing running)."""
        ended = {"FINISHED", "FAILED", "CANCELED", "SUSPENDED"}
        for job in self.get("/jobs")["jobs"]:
            if job["status"] not in ended:
                request = urllib.request.Request(
                    f"http://{self.rest}/jobs/{job['id']}?mode=cancel", method="PATCH"
                )
                with urllib.request.urlopen(request, timeout=10):
                    pass
        deadline = time.monotonic() + timeout
        while True:
            overview = self.get("/overview")
            if overview["slots-available"] == overview["slots-total"] > 0:
                return
            assert time.monotonic() < deadline, f"slots still taken: {overview}"
            time.sleep(0.5)

    def start_taskmanager(self) -> None:
        """``bin/taskmanager.sh start`` with the cluster's environment: one more TaskManager."""
        started = subprocess.run(
            [str(FLINK_HOME / "bin" / "taskmanager.sh"), "start"], env=self.env,
            cwd=self.base, capture_output=True, text=True, timeout=60, check=False,
        )
        assert started.returncode == 0, started.stdout + started.stderr


def _write_conf_dir(
    conf: Path, base: Path, rpc_port: int, rest_port: int, extra: Mapping[str, Any]
) -> None:
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
        # C1 only, as the tests' local crawls (crawl_runner.SHORT_CRAWL_JVM_ARGS).
        "env.java.opts.all": f"{SHORT_CRAWL_JVM_ARGS} {packaged['env']['java']['opts']['all']}",
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
        **extra,
    }
    (conf / "config.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    (conf / "masters").write_text(f"localhost:{rest_port}\n", encoding="utf-8")
    (conf / "workers").write_text("localhost\n", encoding="utf-8")


def _recorded_pids(pid_dir: Path, daemon: str = "") -> list[int]:
    pids = []
    for pid_file in pid_dir.glob(f"*{daemon}.pid" if daemon else "*.pid"):
        pids += [int(word) for word in pid_file.read_text().split() if word.isdigit()]
    return pids


def _is_our_daemon(pid: int, base: Path) -> bool:
    """Whether ``pid`` is a live JVM started with this cluster's configuration directory (a
    pid file keeps the pids of daemons that died, and a pid may since belong to another
    process)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return str(base / "conf").encode() in command


def _stop_leftovers(base: Path) -> None:
    """Kill the cluster's daemons (only the pids they recorded)."""
    for pid in _recorded_pids(base / "pids"):
        if _is_our_daemon(pid, base):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@contextmanager
def standalone_cluster(
    tmp_path: Path, settings: Mapping[str, Any] | None = None, min_slots: int = 2
) -> Iterator[Cluster]:
    """A JobManager and a TaskManager with 2 slots, on free ports, with ``settings`` added to
    the cluster's ``config.yaml``; returns once ``min_slots`` slots are registered; stopped
    (its daemons killed) on exit."""
    base = tmp_path / "flink"
    rpc_port, rest_port = free_ports(2)
    _write_conf_dir(base / "conf", base, rpc_port, rest_port, settings or {})
    interpreter_dir = os.path.dirname(sys.executable)
    env = {
        **os.environ,
        "FLINK_CONF_DIR": str(base / "conf"),
        "FLINK_LOG_DIR": str(base / "log"),
        "FLINK_LIB_DIR": str(base / "lib"),
        # The daemons' embedded Python finds its environment through PATH (thread mode).
        "PATH": os.pathsep.join([interpreter_dir, os.environ.get("PATH", "")]),
        # bin/flink's client JVM (flink run, the job's submission).
        "JVM_ARGS": " ".join(filter(None, [os.environ.get("JVM_ARGS", ""), SHORT_CRAWL_JVM_ARGS])),
    }
    env.pop("FLINK_HOME", None)
    running = Cluster(f"localhost:{rest_port}", env, base)
    try:
        started = subprocess.run(
            [str(FLINK_HOME / "bin" / "start-cluster.sh")], env=env, cwd=tmp_path,
            capture_output=True, text=True, timeout=60, check=False,
        )
        assert started.returncode == 0, started.stderr
        deadline = time.monotonic() + 60
        while True:
            try:
                if running.get("/overview")["slots-total"] >= min_slots:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the cluster did not come up: see " + str(
                base / "log"
            )
            time.sleep(0.5)
        yield running
    finally:
        # Killed, not stopped: the test is over, and stop-cluster.sh waits about 12 s for a
        # graceful shutdown of each daemon.
        _stop_leftovers(base)


def submit(cluster: Cluster, *args: str) -> str:
    """``python -m job.submit ...``; returns the job id flink run printed."""
    return submit_with_output(cluster, *args)[0]


def submit_with_output(cluster: Cluster, *args: str) -> tuple[str, str]:
    """``python -m job.submit ...``; returns the job id flink run printed, and its output."""
    process = subprocess.run(
        [sys.executable, "-m", "job.submit", "--jobmanager", cluster.rest, *args],
        env=cluster.env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
        check=False,
    )
    assert process.returncode == 0, process.stdout[-2000:] + process.stderr[-3000:]
    found = re.search(r"JobID ([0-9a-f]{32})", process.stdout)
    assert found, process.stdout
    return found.group(1), process.stdout


def wait_for_state(cluster: Cluster, job_id: str, state: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while (current := cluster.job_state(job_id)) != state:
        assert current not in ("FAILED", "CANCELED"), f"job {current}"
        assert time.monotonic() < deadline, f"job still {current}, expected {state}"
        time.sleep(0.5)


def stop_with_savepoint(cluster: Cluster, job_id: str, savepoints: Path) -> str:
    """``flink stop --drain --savepointPath``, retried as README says; the savepoint path."""
    for _ in range(3):
        stopped = cluster.flink(
            "stop", "--drain", "--savepointPath", savepoints.as_uri(), job_id
        )
        found = re.search(r"Savepoint completed\. Path: (\S+)", stopped.stdout)
        if stopped.returncode == 0 and found:
            wait_for_state(cluster, job_id, "FINISHED")
            return found.group(1)
        wait_for_state(cluster, job_id, "RUNNING")
        time.sleep(2)
    raise AssertionError(f"could not stop the job: {stopped.stdout[-2000:]}{stopped.stderr}")
