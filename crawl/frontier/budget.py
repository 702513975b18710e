"""A page budget shared by every fetch subtask, exact across processes and machines.

Each page fetch first claims one numbered token by creating the file ``tokens/<n>`` with
``O_CREAT | O_EXCL``, which the filesystem grants to exactly one claimant (also on shared
filesystems used by Flink clusters). Tokens run from 0 to ``max_pages - 1``, so no more than
``max_pages`` fetches ever start, whatever the parallelism. A fetch replayed after a restore
claims a new token: the budget counts fetch attempts and stays an upper bound.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PageBudget"]

_PER_DIRECTORY = 10_000


class PageBudget:
    """Claims page tokens in a ledger directory; ``max_pages == 0`` means no budget."""

    def __init__(self, directory: str | Path, max_pages: int) -> None:
        self._directory = Path(directory)
        self._max_pages = max_pages
        self._next_hint = 0
        self._exhausted = False

    @property
    def limited(self) -> bool:
        """Whether there is a budget at all."""
        return self._max_pages > 0

    @property
    def spent(self) -> bool:
        """Whether this claimant has found every token taken (it stays so)."""
        return self._exhausted

    def claim(self) -> bool:
        """Take one token; False once all ``max_pages`` tokens are taken. Amortised O(1)."""
        if not self.limited:
            return True
        if self._exhausted:
            return False
        while self._next_hint < self._max_pages:
            number = self._next_hint
            self._next_hint += 1
            folder = self._directory / str(number // _PER_DIRECTORY)
            try:
                fd = os.open(folder / str(number), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                continue
            except FileNotFoundError:
                folder.mkdir(parents=True, exist_ok=True)
                self._next_hint = number
                continue
            os.close(fd)
            return True
        self._exhausted = True
        return False

    def claimed(self) -> int:
        """How many tokens are taken, by anyone (reads the ledger: O(tokens / 10,000) dirs)."""
        if not self._directory.exists():
            return 0
        return sum(len(os.listdir(entry)) for entry in self._directory.iterdir() if entry.is_dir())
