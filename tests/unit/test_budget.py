"""The shared page budget: exactly ``max_pages`` claims succeed, whoever claims them."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest

from crawl.frontier.budget import PageBudget


@pytest.mark.parametrize("max_pages", [1, 2, 17])
def test_exactly_max_pages_claims_succeed(tmp_path: Path, max_pages: int) -> None:
    budget = PageBudget(tmp_path / "budget", max_pages)

    results = [budget.claim() for _ in range(max_pages + 5)]

    assert results == [True] * max_pages + [False] * 5
    assert budget.claimed() == max_pages
    assert budget.limited


def test_unlimited_budget_always_grants(tmp_path: Path) -> None:
    budget = PageBudget(tmp_path / "budget", 0)

    assert not budget.limited
    assert all(budget.claim() for _ in range(1000))
    assert budget.claimed() == 0
    assert not (tmp_path / "budget").exists()


def test_claimed_is_zero_before_any_claim(tmp_path: Path) -> None:
    assert PageBudget(tmp_path / "nothing-yet", 10).claimed() == 0


@pytest.mark.parametrize("subtasks", [2, 3, 8])
def test_subtasks_share_one_budget(tmp_path: Path, subtasks: int) -> None:
    budgets = [PageBudget(tmp_path / "budget", 50) for _ in range(subtasks)]
    rng = random.Random(subtasks)
    granted = [0] * subtasks

    # Subtasks claim in a random interleaving until every one of them is refused.
    active = set(range(subtasks))
    while active:
        index = rng.choice(sorted(active))
        if budgets[index].claim():
            granted[index] += 1
        else:
            active.discard(index)

    assert sum(granted) == 50
    assert all(budget.claimed() == 50 for budget in budgets)
    assert not any(budget.claim() for budget in budgets)


def test_a_subtask_started_late_finds_the_budget_spent(tmp_path: Path) -> None:
    first = PageBudget(tmp_path / "budget", 5)
    while first.claim():
        pass

    late = PageBudget(tmp_path / "budget", 5)

    assert not late.claim()
    assert late.claimed() == 5


def test_a_restarted_subtask_does_not_reuse_tokens(tmp_path: Path) -> None:
    before = PageBudget(tmp_path / "budget", 6)
    assert [before.claim() for _ in range(4)] == [True] * 4

    after = PageBudget(tmp_path / "budget", 6)

    assert [after.claim() for _ in range(3)] == [True, True, False]


@pytest.mark.parametrize("per_folder", [10_000, 7])
@pytest.mark.parametrize("share_instance", [False, True], ids=["per-thread", "shared"])
def test_threads_claiming_concurrently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share_instance: bool, per_folder: int
) -> None:
    # With 7 tokens per folder, threads also race to create the folders.
    monkeypatch.setattr("crawl.frontier.budget._PER_DIRECTORY", per_folder)
    threads_count, max_pages = 8, 200
    shared = PageBudget(tmp_path / "budget", max_pages)
    granted = [0] * threads_count
    start = threading.Barrier(threads_count)

    def claim_all(index: int) -> None:
        budget = shared if share_instance else PageBudget(tmp_path / "budget", max_pages)
        start.wait()
        while budget.claim():
            granted[index] += 1

    threads = [threading.Thread(target=claim_all, args=(i,)) for i in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sum(granted) == max_pages
    assert shared.claimed() == max_pages


def test_tokens_cross_the_ten_thousand_per_folder_boundary(tmp_path: Path) -> None:
    budget = PageBudget(tmp_path / "budget", 10_050)
    # Start just below the boundary instead of creating ten thousand files first.
    budget._next_hint = 9_990

    granted = sum(budget.claim() for _ in range(70))

    assert granted == 60
    assert budget.claimed() == 60
    assert sorted(os.listdir(tmp_path / "budget")) == ["0", "1"]
    assert sorted(os.listdir(tmp_path / "budget" / "0"), key=int) == [
        str(n) for n in range(9_990, 10_000)
    ]
    assert sorted(os.listdir(tmp_path / "budget" / "1"), key=int) == [
        str(n) for n in range(10_000, 10_050)
    ]


@pytest.mark.parametrize("subtasks", [1, 4])
def test_many_folders_with_small_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, subtasks: int
) -> None:
    # Ten tokens per folder: every claim path (new folder, existing folder, raced folder) runs.
    monkeypatch.setattr("crawl.frontier.budget._PER_DIRECTORY", 10)
    budgets = [PageBudget(tmp_path / "budget", 95) for _ in range(subtasks)]

    granted = 0
    for _ in range(30):
        granted += sum(budget.claim() for budget in budgets for _ in range(5))

    assert granted == 95
    assert budgets[0].claimed() == 95
    folders = sorted(os.listdir(tmp_path / "budget"), key=int)
    assert folders == [str(n) for n in range(10)]
    assert [len(os.listdir(tmp_path / "budget" / name)) for name in folders] == [10] * 9 + [5]
