"""The crawl submitted to a cluster: its settings, its output directory and its flink run line."""

from __future__ import annotations

import dataclasses
import io
import zipfile
from pathlib import Path

import pytest

from crawl.config import Config, load_config
from crawl.layout import OutputLayout
from job.cluster import (
    JOB_PACKAGES,
    RESTORE_KEY,
    flink_run_command,
    job_settings,
    pack_code,
    prepare_job,
)
from job.preparation import DEFAULT_FLINK_CONF, PROJECT_ROOT, CrawlError, fixed_settings

SEEDS = ["http://example.com/", "http://example.org/a"]


def _config(out: Path, **crawl: object) -> Config:
    config = load_config(None, {"crawl.output_dir": str(out)})
    return dataclasses.replace(config, crawl=dataclasses.replace(config.crawl, **crawl))


def test_the_job_sets_what_flink_reads_per_job_and_leaves_processes_to_the_cluster() -> None:
    local = {
        "execution.checkpointing.interval": "1s",
        "state.backend.type": "rocksdb",
        "restart-strategy.type": "exponential-delay",
        "python.execution-mode": "thread",
        "python.executable": "/venv/bin/python",
        "pipeline.max-parallelism": "256",
        "parallelism.default": "2",
        "table.exec.uid.generation": "ALWAYS",
        "env.java.opts.all": "--add-opens=...",
        "rest.port": "0",
    }
    own, cluster = job_settings(local, {})
    assert cluster == ["env.java.opts.all", "rest.port"]
    assert own == {key: value for key, value in local.items() if key not in cluster}


def test_the_interpreter_flink_run_names_wins_over_the_clients() -> None:
    local = {"python.executable": "/client/bin/python", "python.client.executable": "/c/py"}
    own, _ = job_settings(local, {"python.executable": "/opt/venv/bin/python"})
    assert "python.executable" not in own
    assert own == {"python.client.executable": "/c/py"}


def test_a_new_crawl_gets_its_seeds_its_fixed_settings_and_its_own_checkpoint_directory(
    tmp_path: Path,
) -> None:
    # A space and a comma in the path: Flink takes the directory as it is, not escaped (an
    # escaped one, a%20b, would be another directory, where a resume finds no checkpoint).
    out = tmp_path / "my crawls, 2026" / "out"
    config = _config(out)
    job = prepare_job(config, SEEDS, {}, out=io.StringIO())
    layout = OutputLayout(out)
    assert job.seeds_accepted == 2
    assert job.restore_from is None
    assert [p for p in layout.loop.iterdir() if not p.name.startswith(".")]
    assert layout.fixed_settings.exists()
    assert job.settings["execution.checkpointing.dir"] == f"file://{layout.checkpoints}"
    assert job.settings["pipeline.max-parallelism"] == str(config.crawl.vnodes)
    assert job.settings["python.execution-mode"] == "thread"
    assert "rest.port" not in job.settings


def test_a_directory_that_holds_a_crawl_is_not_reused_by_accident(tmp_path: Path) -> None:
    config = _config(tmp_path / "out")
    prepare_job(config, SEEDS, {}, out=io.StringIO())
    with pytest.raises(CrawlError, match="already holds a crawl.*flink run -s"):
        prepare_job(config, SEEDS, {}, out=io.StringIO())
    job = prepare_job(config, SEEDS, {}, overwrite=True, out=io.StringIO())
    assert job.seeds_accepted == 2


def test_a_new_crawl_needs_a_valid_seed(tmp_path: Path) -> None:
    with pytest.raises(CrawlError, match="no valid seed"):
        prepare_job(_config(tmp_path / "out"), ["ftp://x/"], {}, out=io.StringIO())


def test_a_restored_job_continues_the_crawl_without_seeds_and_with_its_fixed_settings(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path / "out")
    prepare_job(config, SEEDS, {}, out=io.StringIO())
    restore = {RESTORE_KEY: "file:///shared/out/savepoints/savepoint-1"}
    job = prepare_job(config, [], restore, out=io.StringIO())
    assert job.restore_from == restore[RESTORE_KEY]
    assert job.seeds_accepted == 0

    other = _config(tmp_path / "out", vnodes=128)
    assert fixed_settings(other) != fixed_settings(config)
    with pytest.raises(CrawlError, match="crawl.vnodes: this crawl was started with 256"):
        prepare_job(other, [], restore, out=io.StringIO())


def test_the_flink_run_line(tmp_path: Path) -> None:
    archive = tmp_path / "code.zip"
    command = flink_run_command(
        ["--out", "/shared/out"],
        flink_home=Path("/flink"),
        python="/venv/bin/python",
        code_archive=archive,
        jobmanager="jm:8081",
        savepoint="file:///shared/out/savepoints/savepoint-1",
    )
    assert command == [
        "/flink/bin/flink", "run", "--detached", "--jobmanager", "jm:8081",
        "--fromSavepoint", "file:///shared/out/savepoints/savepoint-1",
        "-pyclientexec", "/venv/bin/python", "-pyexec", "/venv/bin/python",
        "-pyfs", str(archive),
        "-py", str(PROJECT_ROOT / "job" / "flink_job.py"), "--out", "/shared/out",
    ]
    plain = flink_run_command([], flink_home=Path("/flink"), python="py", detached=False)
    assert plain == ["/flink/bin/flink", "run", "-pyclientexec", "py", "-pyexec", "py",
                     "-py", str(PROJECT_ROOT / "job" / "flink_job.py")]


def test_the_shipped_code_holds_the_packages_and_the_default_flink_settings(
    tmp_path: Path,
) -> None:
    archive = pack_code(PROJECT_ROOT, tmp_path / "code.zip")
    names = set(zipfile.ZipFile(archive).namelist())
    assert {f"{package}/__init__.py" for package in JOB_PACKAGES} <= names
    assert {"job/flink_job.py", "job/topology.py", DEFAULT_FLINK_CONF.name} <= names
    assert not [name for name in names if "__pycache__" in name or name.startswith("tests/")]
