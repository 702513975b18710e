"""The fault injector fails once, at the configured record, only when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawl.stages import CRAWL_DB, PROCESS
from operators.faults import ENVIRONMENT_VARIABLE, FaultInjector, InjectedFault


def test_fails_once_at_the_configured_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "process:3")
    injector = FaultInjector(PROCESS.uid, tmp_path)
    injector.tick()
    injector.tick()
    with pytest.raises(InjectedFault, match="fired-process"):
        injector.tick()
    injector.tick()
    after_restart = FaultInjector(PROCESS.uid, tmp_path)
    for _ in range(10):
        after_restart.tick()


@pytest.mark.parametrize("setting", ["", ",", "fetch:3", "process:x", "process"])
def test_inert_unless_asked_for_this_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, setting)
    injector = FaultInjector(PROCESS.uid, tmp_path)
    for _ in range(10):
        injector.tick()
    assert not (tmp_path / "faults").exists()


def test_empty_entries_are_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, ", process:2,")
    injector = FaultInjector("process", tmp_path)
    injector.tick()
    with pytest.raises(InjectedFault):
        injector.tick()


def test_several_stages_fail_one_after_another_in_the_order_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "crawl-db:2, process:3")
    crawl_db = FaultInjector(CRAWL_DB.uid, tmp_path)
    process = FaultInjector(PROCESS.uid, tmp_path)
    crawl_db.tick()
    with pytest.raises(InjectedFault, match="fired-crawl-db"):
        crawl_db.tick()
    for _ in range(10):  # started before the crawl DB failed: waits for the restart
        process.tick()
    process = FaultInjector(PROCESS.uid, tmp_path)
    process.tick()
    process.tick()
    with pytest.raises(InjectedFault, match="fired-process"):
        process.tick()
    assert sorted(p.name for p in (tmp_path / "faults").iterdir()) == [
        "fired-crawl-db", "fired-process"
    ]
