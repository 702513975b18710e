"""A local cluster's daemon started without the distribution's scripts: the command it gets is
the one the scripts would run (compared with what ``bin/taskmanager.sh`` and
``bin/jobmanager.sh`` execute, through a stand-in for ``java``), and the memory sizes come from
Flink once, then from the cache."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from crawl.layout import OutputLayout
from job.daemon_command import (
    MAIN_CLASS,
    DaemonError,
    class_path,
    daemon_command,
    java_feature_version,
    resource_parameters,
)
from job.local_cluster import LocalCluster
from job.local_settings import bind_settings
from job.preparation import pyflink_home

#: The JDK apache-flink runs on (the suite needs one throughout).
JAVA = shutil.which("java") or "java"


def _cluster(tmp_path: Path, **settings: str) -> tuple[LocalCluster, dict[str, str]]:
    layout = OutputLayout(tmp_path / "out")
    layout.make()
    cluster = LocalCluster({"rest.port": "0", **bind_settings("127.0.0.1"), **settings}, layout,
                           1, {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
                               "USER": "crawler"})
    return cluster, cluster.write_configuration()


def _fake_jdk(tmp_path: Path, record: Path) -> Path:
    """A JDK whose ``java`` runs the real one for the scripts' helpers and records the
    daemon's command line instead of running it."""
    real_home = Path(JAVA).resolve().parent.parent
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    shutil.copy(real_home / "release", home / "release")
    java = home / "bin" / "java"
    java.write_text(
        "#!/bin/bash\n"
        'case "$*" in\n'
        f'  *BashJavaUtils*|*-XshowSettings*) exec {Path(JAVA).resolve()} "$@" ;;\n'
        "esac\n"
        f'printf "%s\\n" "$0" "$@" > {record}\n')
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return home


@pytest.mark.parametrize(("role", "opts"), [
    # The JobManager with the local cluster's own options for it (the light JVM)...
    ("jobmanager", {}),
    # ...and a TaskManager with options of every kind, a variable in one.
    ("taskmanager", {"env.java.opts.all": "-Dall=1 -Dgc=${FLINK_LOG_PREFIX}.gc",
                     "env.java.opts.taskmanager": "-Dtm=1",
                     "env.java.default-opts.taskmanager": "-Dtm=0"}),
])
def test_the_command_is_the_one_the_scripts_run(tmp_path: Path, role: str,
                                                opts: dict[str, str]) -> None:
    cluster, environment = _cluster(tmp_path, **opts)
    record = tmp_path / "command"
    jdk = _fake_jdk(tmp_path, record)
    environment = {**environment, "JAVA_HOME": str(jdk)}
    subprocess.run(["bash", str(pyflink_home() / "bin" / f"{role}.sh"), "start-foreground"],
                   env=environment, cwd=tmp_path, check=True, timeout=120,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scripts = record.read_text().splitlines()
    conf = cluster.directory / "conf"
    log_file = Path(next(arg for arg in scripts if arg.startswith("-Dlog.file="))
                    .removeprefix("-Dlog.file="))
    ours = daemon_command(
        role, cluster.settings, java=str(jdk / "bin" / "java"),
        java_version=java_feature_version(str(jdk / "bin" / "java"), environment),
        conf=conf, lib=cluster.directory / "lib", log_file=log_file,
        resources=resource_parameters(cluster.settings, conf, pyflink_home() / "bin",
                                      cluster.directory / "lib", str(jdk / "bin" / "java"),
                                      None, environment)[role],
        environ=environment)
    # The scripts end the class path with the SQL gateway's and Hadoop's, empty here: empty
    # entries (the working directory, to Java) that the daemons do without.
    at = scripts.index("-classpath") + 1
    scripts[at] = ":".join(entry for entry in scripts[at].split(":") if entry)
    assert ours == scripts
    assert MAIN_CLASS[role] in ours


def test_memory_sizes_are_asked_of_flink_once_then_taken_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster, environment = _cluster(tmp_path)
    conf, lib, bin_dir = cluster.directory / "conf", cluster.directory / "lib", (
        pyflink_home() / "bin")
    cache = tmp_path / "cache"
    sized = resource_parameters(cluster.settings, conf, bin_dir, lib, JAVA, cache, environment)
    memory, dynamic = sized["taskmanager"]
    assert any(option.startswith("-Xmx") for option in memory)
    assert "taskmanager.memory.process.size=1728m" not in dynamic  # sized into its parts
    assert any(item.startswith("taskmanager.memory.network.max=") for item in dynamic)
    assert any(option.startswith("-Xmx") for option in sized["jobmanager"][0])
    assert len(list(cache.glob("*.json"))) == 1
    # Kept: no JVM runs the next time with the same sizes...
    with monkeypatch.context() as patch:
        patch.setattr(subprocess, "Popen", None)
        assert resource_parameters(cluster.settings, conf, bin_dir, lib, JAVA, cache,
                                   environment) == sized
    # ...but other sizes are asked of Flink again, and settings it refuses say why.
    settings = {**cluster.settings, "taskmanager.memory.process.size": "1m"}
    (conf / "config.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    with pytest.raises(DaemonError, match="could not size the taskmanager's memory"):
        resource_parameters(settings, conf, bin_dir, lib, JAVA, cache, environment)


def test_the_class_path_ends_with_the_distribution(tmp_path: Path) -> None:
    for name in ("flink-dist-2.3.jar", "a.jar", "z.jar"):
        (tmp_path / name).write_bytes(b"")
    assert class_path(tmp_path) == ":".join(
        str(tmp_path / name) for name in ("a.jar", "z.jar", "flink-dist-2.3.jar"))
    (tmp_path / "flink-dist-2.3.jar").unlink()
    with pytest.raises(DaemonError, match="0 flink-dist jars"):
        class_path(tmp_path)
