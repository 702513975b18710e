"""The Flink settings of a local run, and the checks made on them before a crawl starts."""

from __future__ import annotations

import dataclasses
import io
import shutil
from pathlib import Path

import pytest

from crawl.config import Config, CrawlDbSection
from crawl.crawldb.partition import minimum_file_grace_seconds, parse_flink_duration
from crawl.layout import OutputLayout, flink_uri
from crawl.loop.reader import read_migrated
from job.class_archive import ARCHIVE_VARIABLE
from job.local_settings import (
    JAVA_OPTIONS,
    bind_settings,
    local_run_environment,
    local_run_settings,
)
from job.operator_ids import operator_id
from job.preparation import (
    DEFAULT_FLINK_CONF,
    CrawlError,
    flink_configuration,
    migrate_earlier_version,
    path_for_embedded_python,
)

#: The environment of a run without the JVM's class archive.
NO_ARCHIVE = {ARCHIVE_VARIABLE: "off"}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1s", 1.0), ("10min", 600.0), ("500ms", 0.5), ("2 h", 7200.0), ("1d", 86400.0),
     ("1500", 1.5), ("3 minutes", 180.0), (" 30 S ", 30.0)],
)
def test_flink_durations(text: str, seconds: float) -> None:
    assert parse_flink_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "s", "5 parsecs", "-1s"])
def test_bad_flink_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a Flink duration"):
        parse_flink_duration(text)


def test_file_grace_covers_the_retained_checkpoints() -> None:
    settings = {
        "execution.checkpointing.interval": "2s",
        "execution.checkpointing.timeout": "1min",
        "execution.checkpointing.num-retained": "3",
    }
    assert minimum_file_grace_seconds(settings) == 4 * 2 + 60


def test_the_shipped_settings_pass_and_a_short_grace_is_refused(tmp_path: Path) -> None:
    layout = OutputLayout(tmp_path)
    settings = flink_configuration(Config(), layout, DEFAULT_FLINK_CONF)
    assert Config().crawldb.file_grace_seconds >= minimum_file_grace_seconds(settings)
    short = Config(crawldb=dataclasses.replace(CrawlDbSection(), file_grace_seconds=60.0))
    with pytest.raises(CrawlError, match=r"^crawldb\.file_grace_seconds: must be at least 124"):
        flink_configuration(short, layout, DEFAULT_FLINK_CONF)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/usr/bin:/bin", "/env/bin:/usr/bin:/bin"),
        ("/usr/bin:/env/bin:/bin", "/env/bin:/usr/bin:/bin"),
        ("/env/bin:/usr/bin", "/env/bin:/usr/bin"),
        ("", "/env/bin"),
    ],
)
def test_the_embedded_python_finds_the_running_interpreter_first(path: str, expected: str) -> None:
    assert path_for_embedded_python(path, "/env/bin/python") == expected


def test_a_local_run_starts_no_loopback_worker_pool(tmp_path: Path) -> None:
    # PyFlink's loopback worker pool is a gRPC server on every interface, unused in thread
    # mode, whose stop at exit starts a thread: on Python 3.12 each pool ended the run with a
    # "can't create new thread at interpreter shutdown" traceback. PyFlink starts it unless
    # told to have Flink start process-mode workers as on a cluster; a choice already in the
    # environment is kept.
    layout = OutputLayout(tmp_path / "out")
    environment = local_run_environment({}, layout, {"PATH": "/usr/bin"})
    assert environment["_python_worker_execution_mode"] == "process"
    assert environment["FLINK_CONF_DIR"] == str(layout.flink_conf)
    assert environment["FLINK_LOG_DIR"] == str(layout.flink_logs)
    assert "FLINK_LIB_DIR" not in environment  # no reporter: the package's own lib
    chosen = {"PATH": "/usr/bin", "_python_worker_execution_mode": "loopback"}
    assert "_python_worker_execution_mode" not in local_run_environment({}, layout, chosen)


def test_a_local_run_with_a_reporter_gets_the_reporters_jars_on_its_class_path(
    tmp_path,
) -> None:
    from job.local_settings import _lib_with_reporters

    lib = _lib_with_reporters(tmp_path / "lib")
    names = {path.name for path in lib.iterdir()}
    assert any(name.startswith("flink-dist") for name in names)
    assert any(name.startswith("flink-metrics-prometheus") for name in names)
    assert _lib_with_reporters(tmp_path / "lib") == lib  # again: the links are there


def test_a_savepoint_of_the_file_source_is_restored_with_its_read_files_taken_as_read(
    tmp_path: Path,
) -> None:
    layout = OutputLayout(tmp_path / "out")
    layout.make()
    savepoint = tmp_path / "out" / "savepoints" / "savepoint-c11081-6ad769380fd0"
    savepoint.mkdir(parents=True)
    shutil.copy(Path(__file__).parent / "data" / "file-source-savepoint-metadata",
                savepoint / "_metadata")
    out = io.StringIO()
    settings = migrate_earlier_version(layout, savepoint.as_uri(), out)
    assert settings == {"execution.state-recovery.ignore-unclaimed-state": "true"}
    assert "67 loop file(s) it had read are taken as read" in out.getvalue()
    assert len(read_migrated(layout.loop)) == 67
    # That version had the near-duplicate stage of one instance: its state is left behind.
    assert "its index is left behind" in out.getvalue()
    layout.clear()
    assert read_migrated(layout.loop) == frozenset()


def test_a_savepoint_with_the_near_duplicate_stage_of_one_instance_leaves_its_index_behind(
    tmp_path: Path,
) -> None:
    layout = OutputLayout(tmp_path / "out")
    layout.make()
    checkpoint = tmp_path / "chk-7"
    checkpoint.mkdir()
    (checkpoint / "_metadata").write_bytes(
        b"keyed state of " + operator_id("crawl-db") + operator_id("near-duplicates"))
    out = io.StringIO()
    assert migrate_earlier_version(layout, checkpoint, out) == {
        "execution.state-recovery.ignore-unclaimed-state": "true"}
    assert "chk-7 was taken by a job with the near-duplicate stage of one instance" in (
        out.getvalue())
    assert read_migrated(layout.loop) == frozenset()


def test_a_savepoint_of_the_loop_reader_needs_no_migration(tmp_path: Path) -> None:
    layout = OutputLayout(tmp_path / "out")
    layout.make()
    checkpoint = tmp_path / "chk-3"
    checkpoint.mkdir()
    (checkpoint / "_metadata").write_bytes(b"keyed state, no file source")
    out = io.StringIO()
    assert migrate_earlier_version(layout, checkpoint, out) == {}
    assert out.getvalue() == ""
    assert read_migrated(layout.loop) == frozenset()


def test_a_local_run_binds_every_flink_endpoint_to_this_machine_by_default() -> None:
    assert Config().crawl.flink_bind_address == "127.0.0.1"
    assert bind_settings("127.0.0.1") == {
        "rest.bind-address": "127.0.0.1", "rest.address": "127.0.0.1",
        "jobmanager.bind-host": "127.0.0.1", "jobmanager.rpc.address": "127.0.0.1",
        "taskmanager.bind-host": "127.0.0.1", "taskmanager.host": "127.0.0.1",
    }


def test_every_interface_is_bound_but_never_given_as_an_address() -> None:
    assert bind_settings("0.0.0.0") == {
        "rest.bind-address": "0.0.0.0", "jobmanager.bind-host": "0.0.0.0",
        "taskmanager.bind-host": "0.0.0.0",
    }
    assert bind_settings("192.0.2.7")["rest.address"] == "192.0.2.7"


def test_a_key_of_flink_conf_wins_over_the_bind_address_and_a_resume_names_its_savepoint(
    tmp_path: Path,
) -> None:
    flink_conf = tmp_path / "flink-conf.yaml"
    flink_conf.write_text(DEFAULT_FLINK_CONF.read_text(encoding="utf-8")
                          + "\nrest.bind-address: 0.0.0.0\n", encoding="utf-8")
    layout = OutputLayout(tmp_path / "out")
    fresh = local_run_settings(Config(), layout, flink_conf, None, {"ignored": "true"}, NO_ARCHIVE)
    assert fresh["rest.bind-address"] == "0.0.0.0"
    assert fresh["taskmanager.bind-host"] == "127.0.0.1"
    assert "execution.state-recovery.path" not in fresh
    assert "ignored" not in fresh
    savepoint = tmp_path / "savepoint-1"
    resumed = local_run_settings(Config(), layout, flink_conf, savepoint,
                                 {"execution.state-recovery.ignore-unclaimed-state": "true"},
                                 NO_ARCHIVE)
    assert resumed["execution.state-recovery.path"] == flink_uri(savepoint)
    assert resumed["execution.state-recovery.ignore-unclaimed-state"] == "true"


def test_a_local_run_gets_the_class_archive_unless_turned_off_or_its_class_path_is_its_own(
    tmp_path: Path,
) -> None:
    layout = OutputLayout(tmp_path / "out")
    java_home = tmp_path / "jdk"  # the settings only need a Java to key the archive by
    (java_home / "bin").mkdir(parents=True)
    (java_home / "bin" / "java").write_bytes(b"")
    environ = {ARCHIVE_VARIABLE: str(tmp_path / "archives"), "JAVA_HOME": str(java_home)}
    first = local_run_settings(Config(), layout, DEFAULT_FLINK_CONF, None, {}, environ)
    flink_defaults = local_run_settings(Config(), layout, DEFAULT_FLINK_CONF, None, {},
                                        NO_ARCHIVE)
    # The project's JVM options stay, the archive's come after them.
    assert first[JAVA_OPTIONS].startswith(flink_defaults[JAVA_OPTIONS])
    assert f"-XX:ArchiveClassesAtExit={tmp_path / 'archives'}" in first[JAVA_OPTIONS]
    assert "Archive" not in flink_defaults[JAVA_OPTIONS]
    reporting = tmp_path / "flink-conf.yaml"
    reporting.write_text(DEFAULT_FLINK_CONF.read_text(encoding="utf-8")
                         + "\nmetrics.reporter.prom.factory.class: x\n", encoding="utf-8")
    with_reporters = local_run_settings(Config(), layout, reporting, None, {}, environ)
    assert "Archive" not in with_reporters[JAVA_OPTIONS]
