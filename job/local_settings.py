"""The Flink settings and environment of a local run on the MiniCluster.

On top of the settings every run of the crawl has (:func:`job.preparation.flink_configuration`),
a local run binds every Flink endpoint to one address (``crawl.flink_bind_address``), names the
savepoint it resumes from, writes the lot as the ``config.yaml`` of a Flink configuration
directory of its own, and sets the environment the MiniCluster's JVM inherits (that directory,
the embedded Python's ``PATH``, the metric reporters' jars). A crawl submitted with ``flink
run`` uses none of this: the cluster's own configuration has it.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import yaml

from crawl.config import Config
from crawl.layout import OutputLayout, flink_uri
from job.class_archive import (
    archive_directory,
    archive_key,
    class_archive_options,
    java_executable,
)
from job.preparation import flink_configuration, path_for_embedded_python, pyflink_home

__all__ = [
    "JAVA_OPTIONS", "PYTHON_WORKER_MODE", "bind_settings", "class_archive",
    "local_run_environment", "local_run_settings", "write_flink_conf_dir",
]

#: Every interface: the endpoints listen on it, and name no address to reach them by.
_WILDCARD = "0.0.0.0"
#: The JVM options of every process of Flink's (the local run's one JVM here).
JAVA_OPTIONS = "env.java.opts.all"
#: PyFlink's switch for how a local run gets its Python workers for process-mode operators.
PYTHON_WORKER_MODE = "_python_worker_execution_mode"


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


def local_run_settings(
    config: Config, layout: OutputLayout, flink_conf: Path, restore_from: Path | None,
    restore_settings: Mapping[str, str], environ: Mapping[str, str],
) -> dict[str, str]:
    """The Flink settings of a local run: the crawl's, its endpoints bound where a key of
    ``flink_conf`` does not say otherwise, the restore point with the settings it needs
    (:func:`job.preparation.migrate_earlier_version`) when it resumes, and the JVM's class
    archive (:mod:`job.class_archive`; ``environ`` may turn it off)."""
    settings = flink_configuration(config, layout, flink_conf)
    for key, value in bind_settings(config.crawl.flink_bind_address).items():
        settings.setdefault(key, value)  # a key of flink-conf.yaml is a choice made already
    if restore_from is not None:
        settings["execution.state-recovery.path"] = flink_uri(restore_from)
        settings.update(restore_settings)
    if not _has_reporters(settings):  # (with reporters the class path is the run's own)
        options = class_archive(environ)
        if options:
            java_options = settings.get(JAVA_OPTIONS, "")
            settings[JAVA_OPTIONS] = " ".join([java_options, *options]).strip()
    return settings


def class_archive(environ: Mapping[str, str]) -> list[str]:
    """The JVM options of the class archive for the class path PyFlink gives its JVM (the jars
    of ``$FLINK_LIB_DIR``, else of ``$FLINK_HOME/lib``, else of its own lib/) and the Java it
    starts, or [] without one."""
    directory = archive_directory(environ)
    java = java_executable(environ)
    if directory is None or java is None:
        return []
    if environ.get("FLINK_LIB_DIR"):
        lib = Path(environ["FLINK_LIB_DIR"])
    elif environ.get("FLINK_HOME"):
        lib = Path(environ["FLINK_HOME"]) / "lib"
    else:
        lib = pyflink_home() / "lib"
    try:
        key = archive_key(java, lib.glob("*.jar"))
    except OSError:
        return []
    return class_archive_options(directory, key)


def _has_reporters(settings: Mapping[str, str]) -> bool:
    return any(key.startswith("metrics.reporter.") for key in settings)


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


def write_flink_conf_dir(settings: dict[str, str], layout: OutputLayout) -> None:
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
    if _has_reporters(settings):
        # Reporters are plugins (the apache-flink package ships them in pyflink/plugins), but
        # the MiniCluster loads none: it finds reporter factories on its class path only. So
        # the JVM gets a lib directory of the package's jars plus the reporters'.
        # (PyFlink replaces FLINK_LIB_DIR with its own unless FLINK_HOME is set.)
        if "FLINK_HOME" not in environ:
            environment["FLINK_HOME"] = str(pyflink_home())
        environment["FLINK_LIB_DIR"] = str(_lib_with_reporters(layout.flink_conf / "lib"))
    return environment
