"""The output directory of a crawl: what --overwrite removes and what --resume restores."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from crawl.layout import FixedSettingsError, OutputLayout


def _point(folder: Path, mtime: float) -> Path:
    folder.mkdir(parents=True)
    metadata = folder / "_metadata"
    metadata.write_bytes(b"x")
    os.utime(metadata, (mtime, mtime))
    return folder


def test_the_newest_savepoint_wins_over_the_checkpoints_of_the_job_that_took_it(
    tmp_path: Path,
) -> None:
    layout = OutputLayout(tmp_path)
    assert layout.latest_restore_point() is None
    _point(layout.checkpoints / "aaaaaa11" / "chk-7", 300)
    assert layout.latest_restore_point() == layout.checkpoints / "aaaaaa11" / "chk-7"
    _point(layout.savepoints / "savepoint-aaaaaa-1", 100)
    newest = _point(layout.savepoints / "savepoint-aaaaaa-2", 200)
    (layout.savepoints / "savepoint-bbbbbb-3").mkdir()  # incomplete: no metadata
    # chk-7 is newer, but of the job that took the savepoint: taken while it drained.
    assert layout.latest_restore_point() == newest


def test_a_run_resumed_from_a_savepoint_that_failed_goes_on_from_its_own_checkpoint(
    tmp_path: Path,
) -> None:
    layout = OutputLayout(tmp_path)
    savepoint = _point(layout.savepoints / "savepoint-aaaaaa-1", 200)
    _point(layout.checkpoints / "bbbbbb22" / "chk-1", 150)  # older than the savepoint
    assert layout.latest_restore_point() == savepoint
    _point(layout.checkpoints / "bbbbbb22" / "chk-3", 250)
    newest = _point(layout.checkpoints / "bbbbbb22" / "chk-4", 260)
    (layout.checkpoints / "bbbbbb22" / "chk-5").mkdir()  # in progress when it failed
    assert layout.latest_restore_point() == newest


def test_an_output_directory_that_cannot_be_written_is_told_before_the_crawl(
    tmp_path: Path,
) -> None:
    OutputLayout(tmp_path / "new" / "out").check_writable()
    assert os.listdir(tmp_path / "new" / "out") == []
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError, match="Not a directory|File exists"):
        OutputLayout(blocker / "out").check_writable()


def test_clear_removes_only_what_a_crawl_writes(tmp_path: Path) -> None:
    layout = OutputLayout(tmp_path)
    layout.make()
    layout.record_fixed_settings({"crawl.vnodes": 8})
    layout.summary.write_text("{}")
    (layout.warc / "x.warc.gz").write_bytes(b"x")
    mine = tmp_path / "notes.txt"
    mine.write_text("keep me")
    assert layout.holds_crawl()
    layout.clear()
    assert not layout.holds_crawl()
    assert not layout.summary.exists()
    assert not layout.fixed_settings.exists()
    assert os.listdir(tmp_path) == ["notes.txt"]
    assert mine.read_text() == "keep me"


def test_settings_fixed_for_the_crawls_life_are_checked(tmp_path: Path) -> None:
    layout = OutputLayout(tmp_path)
    layout.check_fixed_settings({"crawl.vnodes": 256})  # nothing recorded yet
    layout.record_fixed_settings({"crawl.vnodes": 256, "crawldb.partitions": 16})
    layout.check_fixed_settings({"crawl.vnodes": 256, "crawldb.partitions": 16})
    with pytest.raises(FixedSettingsError, match=r"^crawldb\.partitions: .*started with 16.*got 8"):
        layout.check_fixed_settings({"crawl.vnodes": 256, "crawldb.partitions": 8})
    # A setting recorded only by later versions: a crawl that predates it had the implied value.
    implied = {"fetch routing": "host"}
    layout.check_fixed_settings({"fetch routing": "host"}, implied=implied)
    with pytest.raises(FixedSettingsError, match=r"^fetch routing: .*started with host"):
        layout.check_fixed_settings({"fetch routing": "ip"}, implied=implied)
    # Crawls begun before priority existed ran without it: resuming one says how to go on.
    from job.preparation import FIXED_BEFORE_RECORDED

    layout.check_fixed_settings({"priority.enabled": False}, implied=FIXED_BEFORE_RECORDED)
    with pytest.raises(FixedSettingsError, match=r"^priority\.enabled: .*False.*got True: set"):
        layout.check_fixed_settings({"priority.enabled": True}, implied=FIXED_BEFORE_RECORDED)
    layout.fixed_settings.write_text("{oops", encoding="utf-8")
    with pytest.raises(FixedSettingsError, match="unreadable"):
        layout.check_fixed_settings({"crawl.vnodes": 256})
