"""The Java command line of a Flink daemon of the local cluster, as the distribution's scripts
make it, without running them.

``bin/jobmanager.sh`` and ``bin/taskmanager.sh start-foreground`` run three short JVMs before
the daemon's own: one to flatten the configuration, one to read the Java version, one to size
the daemon's memory (``BashJavaUtils``): 1.7 s a daemon on an idle machine, and a local cluster
starts three daemons at once beside the command's own JVM (``BENCHMARKS.md``, "Parallelism 2
from the local command"). The local cluster writes its configuration flat itself, reads the
Java version from the JDK's ``release`` file, and sizes each kind of daemon once
(:func:`resource_parameters`: the JobManager's and the TaskManagers' at the same time), kept in
the user's cache (``$XDG_CACHE_HOME`` or ``~/.cache``, ``pyflink-crawler/daemon-memory``) by
what they depend on, so that a later start on this machine runs none of them.
:func:`daemon_command` then makes the command ``flink-console.sh`` would run: the same JVM
options in the same order, the same log settings, class path (without the empty entries the
scripts leave at its end), main class and arguments"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "MAIN_CLASS", "SERVICE", "DaemonError", "class_path", "daemon_command", "java_command",
    "java_feature_version", "log_file_name", "resource_parameters", "sizing_cache",
]

#: The JVM's main class of each daemon...
MAIN_CLASS = {
    "jobmanager": "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
    "taskmanager": "org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
}
#: ...and the service name its log is named after, as the scripts name it.
SERVICE = {"jobmanager": "standalonesession", "taskmanager": "taskexecutor"}
#: BashJavaUtils' command that sizes each daemon's memory.
_RESOURCE_COMMAND = {"jobmanager": "GET_JM_RESOURCE_PARAMS",
                     "taskmanager": "GET_TM_RESOURCE_PARAMS"}
_RESULT_PREFIX = "BASH_JAVA_UTILS_EXEC_RESULT:"
#: Settings a daemon's memory does not depend on, though their keys look as if it might: they
#: change from one start to the next.
_NOT_SIZING = frozenset({"jobmanager.rpc.port", "jobmanager.rpc.address"})
#: How long sizing a daemon may take.
_SIZING_TIMEOUT_SECONDS = 120


class DaemonError(RuntimeError):
    """A daemon's command could not be made (no Java, memory settings Flink refuses)."""


def java_command(settings: Mapping[str, str], environ: Mapping[str, str]) -> str:
    """The Java executable the scripts run: ``env.java.home``'s, else ``$JAVA_HOME``'s, else
    ``java`` on the path."""
    home = settings.get("env.java.home") or environ.get("JAVA_HOME")
    if home and Path(home).is_dir():
        return str(Path(home) / "bin" / "java")
    return "java"


def java_feature_version(java: str, environ: Mapping[str, str]) -> int:
    """The Java feature version (17 for 17.0.15) of ``java``, from its JDK's ``release`` file;
    0 when there is none to read."""
    found = java if os.sep in java else shutil.which(java, path=environ.get("PATH"))
    if not found:
        return 0
    try:
        release = (Path(found).resolve().parent.parent / "release").read_text(errors="replace")
    except OSError:
        return 0
    match = re.search(r'^JAVA_VERSION="(?:1\.)?(\d+)', release, re.MULTILINE)
    return int(match.group(1)) if match else 0


def class_path(lib: Path) -> str:
    """The daemons' class path: the jars of ``lib`` in name order, ``flink-dist`` last."""
    jars = sorted(str(path) for path in lib.glob("*.jar") if not path.is_dir())
    dist = [jar for jar in jars if re.search(r"/flink-dist[^/]*\.jar$", jar)]
    if len(dist) != 1:
        raise DaemonError(f"{len(dist)} flink-dist jars in {lib}: need exactly one")
    return ":".join([jar for jar in jars if jar not in dist] + dist)


def _sizing_key(settings: Mapping[str, str], java: str, dist: Path) -> str:
    sizing = {key: value for key, value in settings.items()
              if key.startswith(("jobmanager.", "taskmanager.", "external-resource"))
              and key not in _NOT_SIZING}
    stat = dist.stat()
    text = json.dumps([sizing, java, str(dist), stat.st_size, stat.st_mtime_ns],
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def sizing_cache(environ: Mapping[str, str]) -> Path:
    """Where the daemons' sizes are kept between starts."""
    cache = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "pyflink-crawler" / "daemon-memory"


def resource_parameters(
    settings: Mapping[str, str], conf: Path, bin_dir: Path, lib: Path, java: str,
    cache: Path | None, environ: Mapping[str, str],
) -> dict[str, tuple[list[str], list[str]]]:
    """Each daemon's JVM memory options and the dynamic settings it is started with (``-D
    key=value``), as Flink sizes them from ``settings`` (written in ``conf``): from ``cache``
    when it holds them, else from BashJavaUtils, both daemons at once, and kept there."""
    dist = Path(class_path(lib).rsplit(":", 1)[-1])
    key = _sizing_key(settings, java, dist)
    cached = cache / f"{key}.json" if cache is not None else None
    if cached is not None:
        try:
            found = json.loads(cached.read_text(encoding="utf-8"))
            return {role: (list(jvm), list(dynamic)) for role, (jvm, dynamic) in found.items()}
        except (OSError, ValueError, TypeError):
            pass
    utils_path = f"{bin_dir / 'bash-java-utils.jar'}:{dist}"
    running = {
        role: subprocess.Popen(
            [java, "-classpath", utils_path, "org.apache.flink.runtime.util.bash.BashJavaUtils",
             command, "--configDir", str(conf)],
            env=dict(environ), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        for role, command in _RESOURCE_COMMAND.items()}
    sized = {}
    for role, process in running.items():
        try:
            output, _ = process.communicate(timeout=_SIZING_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        results = [line[len(_RESULT_PREFIX):] for line in output.splitlines()
                   if line.startswith(_RESULT_PREFIX)]
        if process.returncode != 0 or len(results) != 2:
            raise DaemonError(f"Flink could not size the {role}'s memory from the settings: "
                              f"{output.strip()[-2000:]}")
        sized[role] = (results[0].split(), results[1].split())
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            temporary = cached.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(sized), encoding="utf-8")
            os.replace(temporary, cached)
        except OSError:
            pass  # a cache that cannot be written: sized again next time
    return sized


def _options(text: str) -> list[str]:
    """Options the scripts take from a setting (one pair of surrounding quotes dropped)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    return shlex.split(text)


def daemon_command(
    role: str, settings: Mapping[str, str], *, java: str, java_version: int, conf: Path,
    lib: Path, log_file: Path, resources: tuple[list[str], list[str]],
    environ: Mapping[str, str], class_archive: Sequence[str] = (),
) -> list[str]:
    """The command ``bin/<role>.sh start-foreground`` runs for ``role`` (jobmanager or
    taskmanager) with the configuration directory ``conf`` and the class path of ``lib``:
    ``java``, the JVM's options (``resources``' memory options; ``env.java.default-opts.*``
    and ``env.java.opts.*``, or the
    ``FLINK_ENV_JAVA_OPTS`` variables as the scripts take them), the log settings (the log to
    ``log_file``), the main class and its arguments (``resources``' dynamic settings). The
    options of a ``class_archive`` (:func:`job.class_archive.daemon_class_archive`), which the
    scripts do not have, go after the JVM's other options."""
    # (taskmanager.sh would add G1 when no options are set, but config.sh has always set some
    # by then: the JVM's own default collector it is.)
    jvm_args = shlex.split(environ.get("JVM_ARGS", ""))
    all_opts = environ.get("FLINK_ENV_JAVA_OPTS")
    suffix = "JM" if role == "jobmanager" else "TM"
    role_opts = environ.get(f"FLINK_ENV_JAVA_OPTS_{suffix}")
    memory, dynamic = resources
    jvm_args += memory
    if not all_opts:
        chosen = settings.get("env.java.opts.all") or settings.get("env.java.opts", "")
        options = ["-XX:+IgnoreUnrecognizedVMOptions",
                   *_options(f"{settings.get('env.java.default-opts.all', '')} {chosen}")]
        if java_version > 17:
            options.append("-Djava.security.manager=allow")
    else:
        options = shlex.split(all_opts)
    if not role_opts:
        role_opts = (f"{settings.get(f'env.java.default-opts.{role}', '')} "
                     f"{settings.get(f'env.java.opts.{role}', '')}")
        options += _options(role_opts)
    else:
        options += shlex.split(role_opts)
    # The scripts expand variables in the options (FLINK_LOG_PREFIX, say, for a GC log).
    expand = {**environ, "FLINK_LOG_PREFIX": str(log_file.with_suffix(""))}
    options = [_expand(option, expand) for option in options]
    console_log = [
        f"-Dlog.file={log_file}",
        f"-Dlog4j.configuration=file:{conf / 'log4j-console.properties'}",
        f"-Dlog4j.configurationFile=file:{conf / 'log4j-console.properties'}",
        f"-Dlogback.configurationFile=file:{conf / 'logback-console.xml'}",
    ]
    # (The scripts put a JobManager's dynamic settings first, a TaskManager's last.)
    arguments = (["--configDir", str(conf), *dynamic] if role == "taskmanager"
                 else [*dynamic, "--configDir", str(conf)])
    return [java, *jvm_args, *options, *class_archive, *console_log,
            "-classpath", class_path(lib),
            MAIN_CLASS[role], *arguments]


def _expand(text: str, environ: Mapping[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)",
                  lambda match: environ.get(match.group(1) or match.group(2), ""), text)


def log_file_name(role: str, number: int, environ: Mapping[str, str]) -> str:
    """The name of the log of a daemon (the ``number``-th the cluster started), as the scripts
    name it."""
    user = environ.get("FLINK_IDENT_STRING") or environ.get("USER", "")
    return f"flink-{user}-{SERVICE[role]}-{number}-{socket.gethostname()}.log"
