"""Savepoints that stay restorable: the crawl DB and loop files a savepoint names, kept with it,
put back when it is restored, and the pins that pause deletions meanwhile."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from crawl.crawldb.partition import CrawlDbPartition, partition_directory
from crawl.layout import OutputLayout
from crawl.savepoint_files import (
    PIN_SECONDS,
    KeptFilesError,
    deletions_paused,
    keep_files,
    kept_files,
    pin,
    put_back,
    savepoint_path,
    unpin,
)
from drum import DrumMissingFileError
from tests.fakes.crawldb import SECTION, T0, KeyedState, found


@pytest.fixture
def layout(tmp_path: Path) -> OutputLayout:
    layout = OutputLayout(tmp_path / "out")
    layout.make()
    return layout


def _savepoint(layout: OutputLayout, name: str = "savepoint-abc123-0123456789ab") -> Path:
    path = layout.savepoints / name
    path.mkdir(parents=True)
    (path / "_metadata").write_bytes(b"flink's part")
    return path


def _crawl(layout: OutputLayout, state: KeyedState, db: CrawlDbPartition, steps: range) -> None:
    for step in steps:
        now = T0 + 1000 * step  # the grace window is 10 s
        state.apply(db, found(*(f"http://a.example/{step}/{i}" for i in range(6))), [], now)
        state.flush(db, now + 1)


def test_a_savepoint_restores_after_the_crawl_deleted_its_files(layout: OutputLayout) -> None:
    directory = partition_directory(str(layout.crawldb), 3)
    state = KeyedState()
    db = CrawlDbPartition(directory, replace(SECTION, max_deltas=2))
    _crawl(layout, state, db, range(6))
    saved = state.snapshot()  # what the savepoint holds of this partition
    savepoint = _savepoint(layout)
    kept = keep_files(layout, savepoint)
    assert kept.crawldb
    assert all(name.startswith("partition-00003/") for name in kept.crawldb)
    # The crawl goes on through many merges, far past the grace time: the savepoint's files go.
    _crawl(layout, state, db, range(6, 60))
    db.close()
    assert set(kept.crawldb) - {f"partition-00003/{n}" for n in os.listdir(directory)}
    with pytest.raises(DrumMissingFileError):
        saved.open(directory)

    report = put_back(layout, savepoint)
    assert report is not None
    assert report.crawldb_restored > 0
    restored = saved.open(directory)
    assert restored.known == 36
    restored.drum._check()
    # The kept files are links: the savepoint still has them after the restored crawl moves on.
    _crawl(layout, saved, restored, range(100, 130))
    restored.close()
    assert put_back(layout, savepoint).crawldb_restored > 0
    assert saved.snapshot().open(directory).known == 36 + 30 * 6


def test_the_loop_is_put_back_as_the_savepoint_left_it(layout: OutputLayout) -> None:
    loop = layout.loop
    (loop / "loop-a-0").write_text("read\n")
    (loop / "loop-a-1").write_text("half read\n")
    (loop / ".loop-a-2.inprogress.x").write_text("being written")
    savepoint = _savepoint(layout)
    kept = keep_files(layout, savepoint)
    assert kept.loop == ("loop-a-0", "loop-a-1")
    assert kept.loop_hidden == (".loop-a-2.inprogress.x",)
    # The crawl goes on: files consumed and deleted, the open one grows and is committed, a
    # later one is committed.
    (loop / "loop-a-0").unlink()
    (loop / "loop-a-1").unlink()
    with open(loop / ".loop-a-2.inprogress.x", "a") as file:
        file.write(" and more")
    os.replace(loop / ".loop-a-2.inprogress.x", loop / "loop-a-2")
    (loop / "loop-b-0").write_text("after the savepoint\n")

    report = put_back(layout, savepoint)
    assert sorted(os.listdir(loop)) == [".loop-a-2.inprogress.x", "loop-a-0", "loop-a-1"]
    assert (loop / "loop-a-1").read_text() == "half read\n"
    assert (loop / ".loop-a-2.inprogress.x").read_text() == "being written"
    assert (report.loop_restored, report.loop_removed) == (3, 2)
    # What the restored sink appends goes to the live file, never to the savepoint's copy.
    with open(loop / ".loop-a-2.inprogress.x", "a") as file:
        file.write(" again")
    assert put_back(layout, savepoint) is not None
    assert (loop / ".loop-a-2.inprogress.x").read_text() == "being written"


def test_keeping_is_idempotent_and_its_list_comes_last(layout: OutputLayout) -> None:
    (layout.loop / "loop-a-0").write_text("x\n")
    savepoint = _savepoint(layout)
    assert kept_files(savepoint) is None  # a savepoint taken without the crawler
    assert put_back(layout, savepoint) is None
    first = keep_files(layout, savepoint)
    assert keep_files(layout, savepoint) == first == kept_files(savepoint)
    assert kept_files(savepoint.as_uri()) == first
    assert os.stat(layout.loop / "loop-a-0").st_nlink == 2


def test_a_damaged_list_is_a_clear_error(layout: OutputLayout) -> None:
    savepoint = _savepoint(layout)
    keep_files(layout, savepoint)
    listing = savepoint / "crawl-files" / "kept.json"
    listing.write_text(json.dumps({"version": 1, "crawldb": []}))
    with pytest.raises(KeptFilesError, match="not a list of kept files"):
        kept_files(savepoint)
    listing.write_text(json.dumps({"version": 1, "crawldb": ["partition-00001/run-x"],
                                   "loop": [], "loop_hidden": []}))
    with pytest.raises(KeptFilesError, match="run-x.*missing"):
        put_back(layout, savepoint)


def test_savepoint_locations() -> None:
    assert savepoint_path("file:/tmp/sp/savepoint-1") == Path("/tmp/sp/savepoint-1")
    assert savepoint_path("file:///tmp/a%20b") == Path("/tmp/a b")
    assert savepoint_path("/tmp/sp") == Path("/tmp/sp")
    with pytest.raises(KeptFilesError, match="mounted filesystem"):
        savepoint_path("s3://bucket/savepoint-1")
    assert kept_files("s3://bucket/savepoint-1") is None


def test_pins_pause_deletions_until_removed_or_expired(layout: OutputLayout) -> None:
    assert not deletions_paused(layout.pins)
    held = pin(layout, seconds=60, clock=lambda: 1000.0)
    assert deletions_paused(layout.pins, clock=lambda: 1059.0)
    assert not deletions_paused(layout.pins, clock=lambda: 1061.0)  # its command died
    unpin(held)
    assert not deletions_paused(layout.pins, clock=lambda: 1001.0)
    damaged = layout.pins / "damaged.json"
    damaged.write_text("{")
    assert deletions_paused(layout.pins)
    mtime = damaged.stat().st_mtime
    assert not deletions_paused(layout.pins, clock=lambda: mtime + PIN_SECONDS + 1)


def test_a_paused_partition_deletes_nothing_until_the_pin_goes(layout: OutputLayout) -> None:
    directory = partition_directory(str(layout.crawldb), 0)
    paused = [True]
    state = KeyedState()
    db = CrawlDbPartition(directory, replace(SECTION, max_deltas=2),
                          deletions_paused=lambda: paused[0])
    _crawl(layout, state, db, range(40))
    written = set(os.listdir(directory))
    live = db.drum.manifest.files()
    assert len(written - live) > 20, "every replaced file is still there"
    paused[0] = False
    _crawl(layout, state, db, range(40, 41))
    assert len(set(os.listdir(directory)) - db.drum.manifest.files()) < len(written - live)
