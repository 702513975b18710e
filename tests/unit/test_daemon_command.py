"""A local cluster's daemon started without the distribution's scripts: the command it gets is
the one the scripts would run (compared with what ``bin/taskmanager.sh`` and
``bin/jobmanager.sh`` execute, through a stand-in for ``java``), and the memory sizes come from
Flink once, then from the cache; each kind of daemon maps a class archive of its own, which
fits the cluster of every crawl."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from crawl.layout import OutputLayout
from job.class_archive import ARCHIVE_VARIABLE, SETTLE_SECONDS, daemon_class_archive
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


def _archive(options: list[str], option: str) -> str | None:
    """The file of the option ``-XX:<option>=`` among ``options``."""
    return next((o.split("=", 1)[1] for o in options if o.startswith(f"-XX:{option}=")), None)


def _run_with_archive(cluster: LocalCluster, options: list[str]) -> subprocess.CompletedProcess:
    """A JVM on the cluster's class path that loads Flink's classes (BashJavaUtils sizing a
    TaskManager), with the class archive ``options``; the archive required to be used
    (``-Xshare:on``: the JVM stops when it cannot map it) when it is one to map."""
    mapping = _archive(options, "SharedArchiveFile") is not None
    required = ["-Xshare:on" if option == "-Xshare:auto" and mapping else option
                for option in options]
    utils = pyflink_home() / "bin" / "bash-java-utils.jar"
    return subprocess.run(
        [JAVA, *required, "-classpath", f"{utils}:{class_path(cluster.directory / 'lib')}",
         "org.apache.flink.runtime.util.bash.BashJavaUtils", "GET_TM_RESOURCE_PARAMS",
         "--configDir", str(cluster.directory / "conf")],
        capture_output=True, text=True, timeout=120, check=False)


def test_each_kind_of_daemon_has_a_class_archive_shared_by_every_crawl_s_cluster(
    tmp_path: Path,
) -> None:
    environ = {"PATH": os.environ["PATH"], ARCHIVE_VARIABLE: str(tmp_path / "archives")}
    first, _ = _cluster(tmp_path / "first")
    second, _ = _cluster(tmp_path / "second")
    first_lib, second_lib = first.directory / "lib", second.directory / "lib"
    # The first crawl's TaskManagers have none yet: each writes one at its exit, in a file
    # of its own; its JobManager writes the JobManager's.
    writes = [daemon_class_archive(environ, JAVA, first_lib, "taskmanager", f"9-{n}")
              for n in (2, 3)]
    written = [str(_archive(options, "ArchiveClassesAtExit")) for options in writes]
    assert len(set(written)) == 2
    jobmanager = daemon_class_archive(environ, JAVA, first_lib, "jobmanager", "9-1")
    assert "-jobmanager." in str(_archive(jobmanager, "ArchiveClassesAtExit"))  # its own
    assert all("-taskmanager." in path for path in written)
    done = _run_with_archive(first, writes[0])
    assert done.returncode == 0, done.stderr[-2000:]
    assert Path(written[0]).stat().st_size > 1_000_000
    assert not Path(written[1]).exists()
    # (The other TaskManager was killed: it wrote none.)
    settled = time.time() - SETTLE_SECONDS - 1
    os.utime(written[0], (settled, settled))
    # Another crawl's cluster, its class path links of its own to the same jars: its
    # TaskManagers map the archive, and the JVM finds it fits.
    mapped = daemon_class_archive(environ, JAVA, second_lib, "taskmanager", "10-2")
    assert _archive(mapped, "SharedArchiveFile") is not None, mapped
    used = _run_with_archive(second, mapped)
    assert used.returncode == 0, used.stderr[-2000:]
    # Not so with other jars: a class path that is not the archive's is refused (the daemons
    # themselves have -Xshare:auto and then load their classes as usual).
    next(second_lib.glob("flink-cep-*.jar")).unlink()  # (a jar BashJavaUtils does not need)
    refused = _run_with_archive(second, mapped)
    assert refused.returncode != 0
    assert "shared archive" in (refused.stdout + refused.stderr).lower()
    # Without archives (turned off, or no Java), nothing.
    assert daemon_class_archive({**environ, ARCHIVE_VARIABLE: "off"}, JAVA, second_lib,
                                "taskmanager", "11-2") == []
    assert daemon_class_archive({"PATH": str(tmp_path)}, "java", second_lib, "taskmanager",
                                "11-2") == []


def test_the_class_archive_s_options_go_with_the_jvm_s_before_its_class_path(
    tmp_path: Path,
) -> None:
    cluster, environment = _cluster(tmp_path)
    options = ["-XX:SharedArchiveFile=/a.jsa", "-Xshare:auto"]
    command = daemon_command(
        "taskmanager", cluster.settings, java=JAVA, java_version=17,
        conf=cluster.directory / "conf", lib=cluster.directory / "lib",
        log_file=tmp_path / "tm.log", resources=(["-Xmx1g"], ["-D", "a=b"]),
        environ=environment, class_archive=options)
    at = command.index(options[0])
    assert command[at:at + 2] == options
    assert command.index("-Xmx1g") < at < command.index("-classpath")
