"""The standalone cluster a local crawl at parallelism N runs on: its settings, its files, and
daemons that end with the launcher."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from crawl.layout import OutputLayout
from job.class_archive import ARCHIVE_VARIABLE
from job.local_cluster import (
    CLUSTER_DEFAULTS,
    DEFAULT_MEMORY,
    QUICK_EXITS,
    LocalCluster,
    client_settings,
    cluster_settings,
    ephemeral_port_range,
    free_ports,
    startup_failure,
    uses_local_cluster,
)
from job.local_settings import bind_settings
from job.preparation import CrawlError


@pytest.mark.parametrize(
    ("runtime", "parallelism", "expected"),
    [("auto", 1, False), ("auto", 2, True), ("auto", 16, True), ("minicluster", 4, False),
     ("taskmanagers", 1, True), ("taskmanagers", 3, True)],
)
def test_which_runtime_a_local_crawl_gets(runtime: str, parallelism: int, expected: bool) -> None:
    assert uses_local_cluster(runtime, parallelism) is expected


def _settings(**extra: str) -> dict[str, str]:
    return {"state.backend.type": "rocksdb", "rest.port": "0", **bind_settings("127.0.0.1"),
            **extra}


def test_the_cluster_has_the_crawls_settings_one_slot_a_taskmanager_and_ports_of_its_own(
    tmp_path: Path,
) -> None:
    layout = OutputLayout(tmp_path)
    settings = _settings(**{"execution.state-recovery.path": "file:///savepoint"})
    cluster = cluster_settings(settings, layout, rpc_port=6200, rest_port=8200)
    assert cluster["state.backend.type"] == "rocksdb"
    assert cluster["taskmanager.numberOfTaskSlots"] == "1"
    assert cluster["jobmanager.rpc.port"] == "6200"
    assert cluster["rest.port"] == "8200"  # "0" would give the client no port to find
    assert cluster["jobmanager.rpc.address"] == cluster["rest.address"] == "127.0.0.1"
    # The savepoint a run restores from is the job's: a cluster setting would restore every
    # job submitted to it.
    assert "execution.state-recovery.path" not in cluster
    for key, value in {**DEFAULT_MEMORY, **CLUSTER_DEFAULTS}.items():
        assert cluster[key] == value
    assert cluster["env.log.dir"] == str(layout.flink_logs)


def test_settings_of_flink_conf_are_kept(tmp_path: Path) -> None:
    settings = _settings(**{"rest.port": "9081", "taskmanager.memory.flink.size": "3g",
                            "jobmanager.memory.heap.size": "600m",
                            "cluster.registration.error-delay": "2 s"})
    cluster = cluster_settings(settings, OutputLayout(tmp_path), rpc_port=1, rest_port=2)
    assert cluster["rest.port"] == "9081"
    assert cluster["taskmanager.memory.flink.size"] == "3g"
    assert "taskmanager.memory.process.size" not in cluster
    assert "jobmanager.memory.process.size" not in cluster
    assert cluster["cluster.registration.error-delay"] == "2 s"


@pytest.mark.parametrize(
    ("keys", "sized"),
    [({"taskmanager.memory.managed.fraction": "0.2"}, set()),
     ({"taskmanager.memory.task.heap.size": "512m"}, set()),
     ({"taskmanager.memory.task.heap.size": "512m", "taskmanager.memory.managed.size": "256m"},
      {"taskmanager"}),
     ({"taskmanager.memory.process.size": "4g", "jobmanager.memory.flink.size": "900m"},
      {"taskmanager", "jobmanager"}),
     ({"jobmanager.memory.heap.size": "700m"}, {"jobmanager"})],
)
def test_memory_is_sized_by_default_unless_the_settings_size_it_whole(
    tmp_path: Path, keys: dict[str, str], sized: set[str]
) -> None:
    """A key that sizes only a part (a fraction, the task heap alone) leaves Flink no total:
    the default process size stays beside it."""
    cluster = cluster_settings(_settings(**keys), OutputLayout(tmp_path), rpc_port=1, rest_port=2)
    for daemon in ("jobmanager", "taskmanager"):
        default = f"{daemon}.memory.process.size"
        if daemon in sized:
            assert cluster.get(default) == keys.get(default)
        else:
            assert cluster[default] == DEFAULT_MEMORY[default]


def test_a_reporters_one_port_becomes_a_port_a_daemon(tmp_path: Path) -> None:
    settings = _settings(**{
        "metrics.reporter.prom.factory.class": "PrometheusReporterFactory",
        "metrics.reporter.prom.port": "9249",
        "metrics.reporter.jmx.port": "9300-9310"})
    cluster = cluster_settings(settings, OutputLayout(tmp_path), rpc_port=1, rest_port=2,
                               taskmanagers=3)
    assert cluster["metrics.reporter.prom.port"] == "9249-9252"  # the JobManager and three
    assert cluster["metrics.reporter.jmx.port"] == "9300-9310"  # a range already
    assert cluster["metrics.reporter.prom.factory.class"] == "PrometheusReporterFactory"


def test_endpoints_bound_to_every_interface_are_reached_on_this_machine(tmp_path: Path) -> None:
    cluster = cluster_settings({**bind_settings("0.0.0.0"), "rest.port": "0"},
                               OutputLayout(tmp_path), rpc_port=1, rest_port=2)
    assert cluster["rest.bind-address"] == "0.0.0.0"
    assert cluster["jobmanager.rpc.address"] == cluster["rest.address"] == "127.0.0.1"
    other = cluster_settings({**bind_settings("10.1.2.3"), "rest.port": "0"},
                             OutputLayout(tmp_path), rpc_port=1, rest_port=2)
    assert other["jobmanager.rpc.address"] == other["rest.address"] == "10.1.2.3"


def test_the_client_submits_the_job_to_the_clusters_rest_api(tmp_path: Path) -> None:
    settings = _settings(**{"execution.state-recovery.path": "file:///savepoint"})
    cluster = cluster_settings(settings, OutputLayout(tmp_path), rpc_port=6200, rest_port=8200)
    client = client_settings(settings, cluster)
    assert client["execution.target"] == "remote"
    assert (client["rest.address"], client["rest.port"]) == ("127.0.0.1", "8200")
    assert client["execution.state-recovery.path"] == "file:///savepoint"


def test_free_ports_are_distinct_bindable_and_no_outgoing_connection_gets_them() -> None:
    low, _ = ephemeral_port_range()
    ports = free_ports(3)
    assert len(set(ports)) == 3
    assert all(10_000 <= port < low for port in ports)
    held = [socket.create_server(("127.0.0.1", port)) for port in ports]
    for sock in held:
        sock.close()


def test_a_port_taken_is_passed_over() -> None:
    low, _ = ephemeral_port_range()
    first = random.Random(7).randrange(10_000, low)
    with socket.create_server(("127.0.0.1", first)):
        ports = free_ports(2, rng=random.Random(7))
    assert first not in ports
    assert len(set(ports)) == 2


def test_without_room_below_theephemeral_port_range_the_kernel_chooses() -> None:
    low, high = ephemeral_port_range()
    ports = free_ports(2, ephemeral=(5_000, high))
    assert all(low <= port <= high for port in ports)
    assert len(set(ports)) == 2


def test_a_daemon_that_cannot_start_is_named_with_what_its_log_says(tmp_path: Path) -> None:
    """A real JobManager whose RPC port another process took exits at once; the error quotes
    the cause from its log: the entrypoint's BindException, or (when a thread's fatal error
    ends the JVM first, status 239) the transport's "failed to bind" with the port."""
    layout = OutputLayout(tmp_path / "out")
    layout.make()
    cluster = LocalCluster(_settings(), layout, 1,
                           {**os.environ, ARCHIVE_VARIABLE: "off"})
    with socket.create_server(("127.0.0.1", int(cluster.settings["jobmanager.rpc.port"]))):
        with pytest.raises(CrawlError, match=r"exited with status \d+ while starting \("
                                             r"(java\.net\.BindException: |failed to bind)"
                                             r".*\); its log is in"):
            cluster.start()
    assert cluster.pids() == []


def test_the_cause_quoted_is_the_last_of_the_error_the_daemon_gave_up_with(
    tmp_path: Path,
) -> None:
    log = tmp_path / "daemon.log"
    log.write_text(textwrap.dedent("""\
        2026-11-27 18:28:29,363 INFO  a.B [] - Starting
        2026-11-27 18:28:29,467 ERROR o.a.f.u.FatalExitExceptionHandler [] - FATAL: Thread 'x'
        java.lang.NoClassDefFoundError: Some$Class
        Caused by: java.lang.ClassNotFoundException: Some$Class
        2026-11-27 18:28:29,503 ERROR o.a.f.r.e.ClusterEntrypoint [] - Could not start cluster.
        o.a.f.r.e.ClusterEntrypointException: Failed to initialize the cluster entrypoint.
        \tat o.a.f.r.e.ClusterEntrypoint.startCluster(ClusterEntrypoint.java:259)
        Caused by: java.lang.RuntimeException: wrapped
        Caused by: java.net.BindException: Could not start actor system on port 55485
        \t... 10 more
        2026-11-27 18:28:29,506 ERROR o.a.f.u.FatalExitExceptionHandler [] - Thread dump:
        Caused by: java.lang.ClassNotFoundException: Other
        """))
    assert startup_failure(log) == (
        "java.net.BindException: Could not start actor system on port 55485")
    log.write_text("2026-11-27 18:28:29,467 ERROR a.B [] - Out of memory\n")
    assert startup_failure(log) == "Out of memory"
    log.write_text("2026-11-27 18:28:29,467 INFO a.B [] - fine\n")
    assert startup_failure(log) == ""
    assert startup_failure(tmp_path / "absent.log") == startup_failure(None) == ""


def test_the_configuration_directory_and_the_daemons_environment(tmp_path: Path) -> None:
    layout = OutputLayout(tmp_path / "out")
    layout.make()
    cluster = LocalCluster(_settings(), layout, 2,
                           {"PATH": "/usr/bin", "FLINK_HOME": "/elsewhere", "KEEP": "1"})
    environment = cluster.write_configuration()
    conf = Path(environment["FLINK_CONF_DIR"])
    assert yaml.safe_load((conf / "config.yaml").read_text()) == cluster.settings
    # A daemon in the foreground logs through log4j-console.properties: to its file only.
    assert "appender.console" not in (conf / "log4j-console.properties").read_text()
    jars = [path.name for path in Path(environment["FLINK_LIB_DIR"]).iterdir()]
    assert any(name.startswith("flink-python-") for name in jars)
    assert any(name.startswith("flink-dist-") for name in jars)
    assert environment["FLINK_LOG_DIR"] == str(layout.flink_logs)
    assert environment["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)
    assert "FLINK_HOME" not in environment
    assert environment["KEEP"] == "1"
    assert cluster.rest == f"http://127.0.0.1:{cluster.settings['rest.port']}"


def test_no_taskmanager_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one TaskManager"):
        LocalCluster(_settings(), OutputLayout(tmp_path), 0, {})


def test_a_daemon_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    """The launcher killed (SIGKILL: no chance to stop anything) takes its daemons along."""
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, time
        from job.local_cluster import _die_with_parent
        child = subprocess.Popen(["sleep", "600"], preexec_fn=_die_with_parent,
                                 start_new_session=True)
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(600)
    """)], cwd=Path(__file__).resolve().parents[2])
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert parent.poll() is None, "the parent exited"
            assert time.monotonic() < deadline, "the child was not started"
            time.sleep(0.05)
        child = int(pid_file.read_text())
        assert _alive(child)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 60
    while _alive(child):
        assert time.monotonic() < deadline, "the child outlived its parent"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by init, does not)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def test_the_launchers_jvm_only_submits_and_gets_the_light_options(tmp_path: Path) -> None:
    settings = _settings(**{"env.java.opts.all": "--add-opens=java.base/java.util=ALL-UNNAMED"})
    cluster = cluster_settings(settings, OutputLayout(tmp_path), rpc_port=1, rest_port=2)
    client = client_settings(settings, cluster)
    assert client["env.java.opts.all"].startswith("--add-opens=java.base/java.util=ALL-UNNAMED ")
    assert "-XX:TieredStopAtLevel=1" in client["env.java.opts.all"]
    # The TaskManagers keep the JIT's second tier (a long crawl pays for it once).
    assert cluster["env.java.opts.all"] == settings["env.java.opts.all"]
    assert "-XX:TieredStopAtLevel=1" in cluster["env.java.opts.jobmanager"]


class _SleepingCluster(LocalCluster):
    """The cluster's process handling with ``sleep`` in place of each daemon's JVM."""

    def _command(self, role: str) -> list[str]:
        return ["sleep", "600"]


def test_a_taskmanager_that_exits_is_started_again_and_a_lost_jobmanager_ends_the_crawl(
    tmp_path: Path,
) -> None:
    layout = OutputLayout(tmp_path / "out")
    layout.make()
    cluster = _SleepingCluster(_settings(), layout, 2, dict(os.environ))
    cluster.launch()
    try:
        jobmanager, first, second = cluster.pids()
        assert cluster.supervise() == []
        _kill(second)
        said = cluster.supervise()
        assert len(said) == 1
        assert "exited with status -9; started another" in said[0]
        pids = cluster.pids()
        assert pids[:2] == [jobmanager, first]
        assert pids[2] not in (jobmanager, first, second)
        assert _alive(pids[2])
        assert sorted(path.name for path in layout.flink_logs.glob("*.out")) == [
            "jobmanager-1.out", "taskmanager-2.out", "taskmanager-3.out", "taskmanager-4.out"]

        _kill(jobmanager)
        with pytest.raises(CrawlError, match=r"JobManager exited with status -9.*--resume"):
            cluster.supervise()
    finally:
        cluster.stop()
    assert not any(_alive(pid) for pid in pids)
    assert cluster.supervise() == []  # stopped: nothing to look after


def test_a_taskmanager_that_keeps_exiting_at_once_ends_the_crawl(tmp_path: Path) -> None:
    layout = OutputLayout(tmp_path / "out")
    layout.make()
    cluster = _SleepingCluster(_settings(), layout, 1, dict(os.environ))
    cluster.launch()
    try:
        for _ in range(QUICK_EXITS - 1):
            _kill(cluster.pids()[1])
            assert len(cluster.supervise()) == 1
        _kill(cluster.pids()[1])
        with pytest.raises(CrawlError, match=rf"exited {QUICK_EXITS} times in a row"):
            cluster.supervise()
    finally:
        cluster.stop()


def _kill(pid: int) -> None:
    """SIGKILL ``pid`` and wait until it has exited."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while _alive(pid):
        assert time.monotonic() < deadline, f"{pid} still runs"
        time.sleep(0.02)
