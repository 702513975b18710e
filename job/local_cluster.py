"""A standalone Flink cluster on this machine, for a local crawl at a parallelism above 1.

The MiniCluster runs the whole job in the launcher's one JVM, and so in one embedded Python
interpreter: at parallelism 2 both subtasks of every stage take turns in it (slower than one,
``BENCHMARKS.md``, "pages/s at parallelism 1 and 2 on a standalone cluster"). For a local crawl
at parallelism N > 1 (``crawl.local_runtime: auto``) the launcher starts instead a JobManager
and N TaskManagers of one slot each, every one a JVM of its own with its own interpreter, from
the Flink distribution inside the installed ``pyflink`` package, and submits the job to it.

The daemons run in the foreground as children of the launcher (the JVMs the distribution's
``bin/jobmanager.sh`` and ``bin/taskmanager.sh start-foreground`` would run, started directly:
:mod:`job.daemon_command`), and ask the kernel to kill them
when the launcher dies, so that none is left behind by a crash or a SIGKILL; the launcher stops
them when the crawl ends. Each kind of daemon maps a class archive of its own between crawls
(:mod:`job.class_archive`). Their configuration directory is the crawl's ``flink-conf/cluster``
(the crawl's Flink settings, the endpoints bound as a local run binds them, free ports, one slot
a TaskManager), their logs go to ``logs/flink`` with the client's.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from crawl.layout import OutputLayout
from job.class_archive import daemon_class_archive
from job.daemon_command import (
    DaemonError,
    daemon_command,
    java_command,
    java_feature_version,
    log_file_name,
    resource_parameters,
    sizing_cache,
)
from job.preparation import CrawlError, path_for_embedded_python, pyflink_home

__all__ = [
    "CLUSTER_DEFAULTS", "DEFAULT_MEMORY", "LocalCluster", "client_settings", "cluster_settings",
    "ephemeral_port_range", "free_ports", "startup_failure", "uses_local_cluster",
]

#: Process sizes of the daemons unless the Flink settings size them (Flink's own defaults for
#: a TaskManager; a JobManager that schedules one job needs less than Flink's 1,600 MB).
DEFAULT_MEMORY = {
    "jobmanager.memory.process.size": "1024m",
    "taskmanager.memory.process.size": "1728m",
}
#: The keys (each set of them together) with which Flink's settings size a daemon's memory
#: themselves.
_SIZED_BY = {
    "jobmanager": ({"process.size"}, {"flink.size"}, {"heap.size"}),
    "taskmanager": ({"process.size"}, {"flink.size"}, {"task.heap.size", "managed.size"}),
}
#: A TaskManager that exits this soon after its start, this many times in a row, is not
#: started again: something in its settings or on the machine keeps it from running.
QUICK_EXIT_SECONDS, QUICK_EXITS = 60.0, 3
#: JVM options of a process with little to do: the JIT's first tier, the serial collector.
_LIGHT_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: Settings of the daemons unless the Flink settings name them. The TaskManagers start beside
#: the JobManager and may ask for its ResourceManager before it listens: they ask again after
#: half a second, not Flink's 10 s. The JobManager schedules one job and coordinates its
#: checkpoints: the light JVM serves it, with half the CPU of Flink's C2 and G1.
CLUSTER_DEFAULTS = {
    "cluster.registration.error-delay": "500 ms",
    "env.java.opts.jobmanager": _LIGHT_JVM,
}
#: How long the daemons may take to register every TaskManager's slot.
START_TIMEOUT_SECONDS = 120.0
#: How long a daemon may take to shut down on SIGTERM before it is killed.
STOP_TIMEOUT_SECONDS = 15.0
_JAVA_OPTIONS = "env.java.opts.all"
_WILDCARD = "0.0.0.0"
_LOOPBACK = "127.0.0.1"
_PR_SET_PDEATHSIG = 1
#: The daemons' ports are drawn from here up to the kernel's ephemeral range, when it leaves at
#: least _MIN_PORT_ROOM of them (:func:`free_ports`).
_PORTS_FROM, _MIN_PORT_ROOM, _PORT_TRIES = 10_000, 2_000, 64
#: A daemon's failure to start, as its log gives it, is quoted up to this long.
_CAUSE_CHARS = 300
#: The first line of an entry of a daemon's log (log4j's pattern: the date first).
_LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def uses_local_cluster(runtime: str, parallelism: int) -> bool:
    """Whether a local crawl runs on a standalone cluster of this machine rather than the
    MiniCluster (``crawl.local_runtime``)."""
    if runtime == "taskmanagers":
        return True
    if runtime == "minicluster":
        return False
    return parallelism > 1


def free_ports(
    count: int, address: str = _LOOPBACK, *, rng: random.Random | None = None,
    ephemeral: tuple[int, int] | None = None,
) -> list[int]:
    """``count`` distinct ports free on ``address`` now, for daemons that bind them a second or
    two later. They are taken below the kernel's ephemeral range (``ephemeral``, read from
    the kernel by default), where no outgoing connection is given a port: one taken from that
    range could go to any connection made meanwhile (the crawl's fetches, the REST API's
    polls, another crawl's), and its daemon fail to start. Where the range leaves too little
    room below it, the kernel chooses; a daemon that finds its port taken since fails to
    start, and its log says so."""
    low, _ = ephemeral_port_range() if ephemeral is None else ephemeral
    rng = rng or random.Random()
    held: list[socket.socket] = []
    try:
        if low - _PORTS_FROM >= _MIN_PORT_ROOM:
            for _ in range(_PORT_TRIES):
                if len(held) == count:
                    break
                sock = socket.socket()
                try:
                    sock.bind((address, rng.randrange(_PORTS_FROM, low)))
                except OSError:
                    sock.close()
                    continue
                held.append(sock)
        while len(held) < count:
            sock = socket.socket()
            held.append(sock)
            sock.bind((address, 0))
        return [sock.getsockname()[1] for sock in held]
    finally:
        for sock in held:
            sock.close()


def startup_failure(log_file: Path | None) -> str:
    """What a daemon's log says kept it from starting: the deepest cause of the error it
    gave up with (its ERROR line "Could not start ...", then ``Caused by: ...`` lines of the
    stack trace under it, as ``java.net.BindException: ...`` for a port taken), else the
    first ERROR line's message; "" when the log says neither (or there is none)."""
    try:
        lines = log_file.read_text(errors="replace").splitlines() if log_file else []
    except OSError:
        return ""
    errors = [index for index, line in enumerate(lines) if " ERROR " in line]
    if not errors:
        return ""
    fatal = next((index for index in errors if "Could not start" in lines[index]), errors[0])
    said = lines[fatal].split(" - ", 1)[-1].strip()
    for line in lines[fatal + 1:]:
        if _LOG_LINE.match(line):
            break  # the next entry of the log: the stack trace is over
        if line.startswith("Caused by:"):
            said = line.removeprefix("Caused by:").strip()
    return said[:_CAUSE_CHARS]


def ephemeral_port_range() -> tuple[int, int]:
    """The ports the kernel gives outgoing connections and binds to port 0 (Linux's default
    where it cannot be read)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _connect_address(settings: Mapping[str, str], key: str) -> str:
    """The address a client connects to for an endpoint bound by the settings: the one
    ``key`` names, else this machine (an endpoint bound to every interface)."""
    address = settings.get(key, "")
    return address if address and address != _WILDCARD else _LOOPBACK


def cluster_settings(
    settings: Mapping[str, str], layout: OutputLayout, rpc_port: int, rest_port: int,
    taskmanagers: int = 1,
) -> dict[str, str]:
    """The ``config.yaml`` of the local cluster: the crawl's Flink ``settings`` (without the
    savepoint a run restores from: that is the job's), one slot a TaskManager, the daemons'
    memory unless the settings size it, the JobManager's RPC port and the REST API's port
    (``rest_port`` when the settings leave it to Flink, 0), logs under the crawl, and
    :data:`CLUSTER_DEFAULTS` where the settings say nothing. A metric reporter's one port
    becomes a range of one a daemon (the JobManager and ``taskmanagers``): every daemon runs
    the reporter, and all but the first to bind one port would serve nothing."""
    cluster = {key: value for key, value in settings.items()
               if key != "execution.state-recovery.path"}
    for key, value in settings.items():
        if key.startswith("metrics.reporter.") and key.endswith(".port") and value.isdigit():
            cluster[key] = f"{value}-{int(value) + taskmanagers}"
    for key, value in CLUSTER_DEFAULTS.items():
        cluster.setdefault(key, value)
    for key, value in DEFAULT_MEMORY.items():
        daemon = key.split(".", 1)[0]
        named = {name.removeprefix(f"{daemon}.memory.") for name in settings}
        if not any(keys <= named for keys in _SIZED_BY[daemon]):
            cluster[key] = value
    if settings.get("rest.port", "0") in ("0", ""):
        cluster["rest.port"] = str(rest_port)
    cluster.update({
        "taskmanager.numberOfTaskSlots": "1",
        "jobmanager.rpc.address": _connect_address(settings, "jobmanager.rpc.address"),
        "jobmanager.rpc.port": str(rpc_port),
        "rest.address": _connect_address(settings, "rest.address"),
        "env.log.dir": str(layout.flink_logs),
    })
    return cluster


def client_settings(settings: Mapping[str, str], cluster: Mapping[str, str]) -> dict[str, str]:
    """The launcher's own settings for a job it submits to the local cluster (``cluster``, its
    :func:`cluster_settings`): the job's, sent to the cluster's REST API."""
    client = dict(settings)
    # The launcher's JVM only builds the job and submits it: the JIT's first tier is enough.
    client[_JAVA_OPTIONS] = f"{settings.get(_JAVA_OPTIONS, '')} {_LIGHT_JVM}".strip()
    return {
        **client,
        "execution.target": "remote",
        "rest.address": cluster["rest.address"],
        "rest.port": cluster["rest.port"],
    }


def _die_with_parent() -> None:
    """In the child before it executes the daemon: SIGKILL when the launcher's thread that
    started it ends (Linux; elsewhere the launcher's own stop is all there is)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class LocalCluster:
    """A JobManager and ``taskmanagers`` TaskManagers of one slot each on this machine, run by
    the launcher for one crawl; :meth:`start` returns once every slot is registered and
    :meth:`stop` ends them all (also on leaving a ``with`` block)."""

    def __init__(
        self, settings: Mapping[str, str], layout: OutputLayout, taskmanagers: int,
        environ: Mapping[str, str],
    ) -> None:
        if taskmanagers < 1:
            raise ValueError(f"a cluster needs at least one TaskManager, got {taskmanagers}")
        self.taskmanagers = taskmanagers
        self.layout = layout
        self.directory = layout.flink_conf / "cluster"
        bind = settings.get("jobmanager.bind-host", _LOOPBACK)
        rpc_port, rest_port = free_ports(2, _LOOPBACK if bind == _WILDCARD else bind)
        self.settings = cluster_settings(settings, layout, rpc_port, rest_port, taskmanagers)
        self._environ = dict(environ)
        self._environment: dict[str, str] = {}
        self._jobmanager: subprocess.Popen[bytes] | None = None
        self._taskmanagers: list[subprocess.Popen[bytes]] = []
        #: When each TaskManager was started, and how many of its slot's quick exits in a row.
        self._started_at: list[float] = []
        self._quick_exits: list[int] = []
        self._started = 0
        self._stopping = False
        self._java: str | None = None
        self._java_version = 0
        self._resources: dict[str, tuple[list[str], list[str]]] = {}
        #: Each daemon's log file, by its process id.
        self._logs: dict[int, Path] = {}

    @property
    def rest(self) -> str:
        """The REST API's address, ``http://host:port``."""
        return f"http://{self.settings['rest.address']}:{self.settings['rest.port']}"

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def write_configuration(self) -> dict[str, str]:
        """The cluster's configuration directory and class path; returns the daemons'
        environment."""
        conf = self.directory / "conf"
        lib = self.directory / "lib"
        if self.directory.exists():
            shutil.rmtree(self.directory)
        for directory in (conf, lib, self.layout.flink_logs):
            directory.mkdir(parents=True, exist_ok=True)
        home = pyflink_home()
        # A daemon in the foreground logs with log4j-console.properties, to its log file and
        # to the console as well; the file's settings alone keep one copy (its console, the
        # .out file, still has what is said before logging starts).
        shutil.copy(home / "conf" / "log4j.properties", conf / "log4j-console.properties")
        (conf / "config.yaml").write_text(
            yaml.safe_dump(self.settings, default_flow_style=False, sort_keys=True),
            encoding="utf-8",
        )
        # The daemons' class path: the package's lib/ and its Python runtime (in opt/, which
        # PyFlink adds to the class path of the JVMs it starts itself).
        for jar in [*(home / "lib").glob("*.jar"), *(home / "opt").glob("flink-python-*.jar")]:
            (lib / jar.name).symlink_to(jar)
        # What the scripts export to the daemons.
        environment = {
            **self._environ,
            "FLINK_CONF_DIR": str(conf),
            "FLINK_BIN_DIR": str(home / "bin"),
            "FLINK_LOG_DIR": str(self.layout.flink_logs),
            "FLINK_LIB_DIR": str(lib),
            "FLINK_OPT_DIR": str(home / "opt"),
            "FLINK_PLUGINS_DIR": str(home / "plugins"),
            # The embedded Python finds the crawl's environment through PATH (thread mode).
            "PATH": path_for_embedded_python(self._environ.get("PATH", "")),
        }
        for key, variable in (("env.log.max", "MAX_LOG_FILE_NUMBER"),
                              ("env.log.level", "ROOT_LOG_LEVEL")):
            if key in self.settings:
                environment.setdefault(variable, str(self.settings[key]))
        environment.pop("FLINK_HOME", None)
        return environment

    def start(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        """:meth:`launch` the daemons and :meth:`wait_until_ready`."""
        self.launch()
        self.wait_until_ready(timeout)

    def launch(self) -> None:
        """Start the JobManager and the TaskManagers; returns at once (they take seconds to
        come up, which the launcher spends starting its own JVM and building the job)."""
        self._environment = self.write_configuration()
        self._stopping = False
        self._jobmanager = self._start_daemon("jobmanager")
        self._taskmanagers = [self._start_daemon("taskmanager") for _ in range(self.taskmanagers)]
        self._started_at = [time.monotonic()] * self.taskmanagers
        self._quick_exits = [0] * self.taskmanagers

    def _command(self, role: str) -> list[str]:
        """The command line of a daemon (``role``: jobmanager or taskmanager): its JVM's, as
        the distribution's scripts make it (:mod:`job.daemon_command`)."""
        if self._java is None:
            self._java = java_command(self.settings, self._environ)
            self._java_version = java_feature_version(self._java, self._environ)
            home = pyflink_home()
            try:
                self._resources = resource_parameters(
                    self.settings, self.directory / "conf", home / "bin", self.directory / "lib",
                    self._java, sizing_cache(self._environ), self._environment)
            except (DaemonError, OSError) as error:
                raise CrawlError(f"cannot start the local Flink cluster: {error}") from None
        lib = self.directory / "lib"
        return daemon_command(
            role, self.settings, java=self._java,
            java_version=self._java_version,
            conf=self.directory / "conf", lib=lib,
            log_file=self._log_file(role, self._started),
            resources=self._resources[role], environ=self._environment,
            class_archive=daemon_class_archive(self._environ, self._java, lib, role,
                                               f"{os.getpid()}-{self._started}"))

    def _log_file(self, role: str, number: int) -> Path:
        return self.layout.flink_logs / log_file_name(role, number, self._environ)

    def _start_daemon(self, role: str) -> subprocess.Popen[bytes]:
        self._started += 1
        console = self.layout.flink_logs / f"{role}-{self._started}.out"
        with console.open("ab") as output:
            process = subprocess.Popen(
                self._command(role), env=self._environment, cwd=self.directory,
                stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
                # Not in the terminal's process group: Ctrl-C stops the crawl with a
                # savepoint, which needs the daemons.
                start_new_session=True,
            )
        self._logs[process.pid] = self._log_file(role, self._started)
        return process

    @property
    def _processes(self) -> list[subprocess.Popen[bytes]]:
        jobmanager = [self._jobmanager] if self._jobmanager is not None else []
        return jobmanager + self._taskmanagers

    def wait_until_ready(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        """Wait until every TaskManager's slot is registered; raises CrawlError (naming the
        logs), with the daemons stopped, when one exits or the slots do not come in time."""
        deadline = time.monotonic() + timeout
        while True:
            for process in self._processes:
                if process.poll() is not None:
                    self.stop()
                    cause = startup_failure(self._logs.get(process.pid))
                    raise CrawlError(
                        f"a daemon of the local Flink cluster exited with status "
                        f"{process.returncode} while starting"
                        f"{f' ({cause})' if cause else ''}; its log is in "
                        f"{self.layout.flink_logs}")
            if self.slots() >= self.taskmanagers:
                return
            if time.monotonic() > deadline:
                self.stop()
                raise CrawlError(
                    f"the local Flink cluster did not register {self.taskmanagers} "
                    f"TaskManager(s) within {timeout:g} s (logs in {self.layout.flink_logs})")
            time.sleep(0.25)

    def supervise(self) -> list[str]:
        """Start a TaskManager in place of each that exited (killed, out of memory): the job
        restarts from its last checkpoint once the JobManager has noticed the loss and the new
        one's slot is registered. Returns what happened, a line each. A JobManager that
        exited takes the job with it: CrawlError, saying how to go on."""
        if self._stopping or self._jobmanager is None:
            return []
        if self._jobmanager.poll() is not None:
            raise CrawlError(
                f"the local Flink cluster's JobManager exited with status "
                f"{self._jobmanager.returncode}, and the job with it (its log is in "
                f"{self.layout.flink_logs}). The crawl's last checkpoint is kept: run the same "
                "command with --resume to go on from it")
        said = []
        for index, process in enumerate(self._taskmanagers):
            if process.poll() is None:
                continue
            now = time.monotonic()
            quick = now - self._started_at[index] < QUICK_EXIT_SECONDS
            self._quick_exits[index] = self._quick_exits[index] + 1 if quick else 0
            if self._quick_exits[index] >= QUICK_EXITS:
                raise CrawlError(
                    f"a TaskManager of the local Flink cluster exited {QUICK_EXITS} times in a "
                    f"row within {QUICK_EXIT_SECONDS:g} s of its start, the last with status "
                    f"{process.returncode} (its log is in {self.layout.flink_logs}). The "
                    "crawl's last checkpoint is kept: once the cause is dealt with, run the "
                    "same command with --resume to go on from it")
            self._taskmanagers[index] = self._start_daemon("taskmanager")
            self._started_at[index] = now
            said.append(
                f"a TaskManager of the local Flink cluster exited with status "
                f"{process.returncode}; started another (the job restarts from its last "
                "checkpoint)")
        return said

    def slots(self) -> int:
        """The task slots registered with the JobManager (0 while its REST API is not up)."""
        try:
            with urllib.request.urlopen(f"{self.rest}/overview", timeout=5) as reply:
                overview: Any = json.loads(reply.read())
        except (OSError, ValueError):
            return 0
        return int(overview.get("slots-total", 0)) if isinstance(overview, dict) else 0

    def pids(self) -> list[int]:
        """The daemons' process ids (each the JVM, once its script has executed it)."""
        return [process.pid for process in self._processes]

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """End every daemon: SIGTERM (Flink shuts down in order), SIGKILL after ``timeout``."""
        self._stopping = True
        running = [process for process in self._processes if process.poll() is None]
        for process in running:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in running:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._jobmanager, self._taskmanagers = None, []
