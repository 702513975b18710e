"""Crawls run ahead of the tests that judge them, two at a time.

Most of an end-to-end test's time is its crawl, and most of a crawl is waiting: for its
MiniCluster to start, for the politeness delays, for the crawl to fall idle; a crawl of these
tests takes about half a core on average. So the crawls of the tests that only judge what a
crawl left behind are run side by side, ahead of the tests: such a test's module registers the
crawl with :func:`crawl_ahead` (a function of a fresh directory that returns what the test
judges, or raises), and the test is marked ``@pytest.mark.crawl_ahead("name")`` and asks
``crawls_ahead.result("name")``. The first time a test asks for ``crawls_ahead``
(``conftest``), the crawls of every selected test so marked start, the long ones first (so
that the short ones fill in beside them), then in the tests' order, :data:`WORKERS` at a
time; each test waits for its own, and judges it while the next ones run. A crawl's failure
is its test's: ``result`` raises what the crawl raised (``pytest.skip`` included).

Each crawl keeps to itself (its own synthetic web on its own port, its own output directory,
its own MiniCluster on free ports), so side by side they judge nothing of each other; what
they do share is the machine, which the tests must stand anyway (they hold on a loaded one).
"""

from __future__ import annotations

import concurrent.futures
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

#: Crawls run at once (the machine has two cores, and a crawl of these tests takes half of one).
WORKERS = 2

#: Name -> the crawl: a function of the directory it may fill.
_CRAWLS: dict[str, Callable[[Path], Any]] = {}
#: The names of the long crawls (about a minute or more), started first.
_LONG: set[str] = set()


def crawl_ahead(
    name: str, long: bool = False
) -> Callable[[Callable[[Path], Any]], Callable[[Path], Any]]:
    """Register the decorated function as the crawl ``name`` (a module's import does it);
    ``long`` for a crawl of about a minute or more (on a loaded machine)."""

    def register(crawl: Callable[[Path], Any]) -> Callable[[Path], Any]:
        if name in _CRAWLS and _CRAWLS[name] is not crawl:
            raise ValueError(f"two crawls named {name}")
        _CRAWLS[name] = crawl
        if long:
            _LONG.add(name)
        return crawl

    return register


def started_first(names: Iterable[str]) -> list[str]:
    """``names`` in the order their crawls start: the long ones first."""
    return sorted(names, key=lambda name: name not in _LONG)


def directory_name(name: str) -> str:
    """A directory name for the crawl ``name``: letters, digits, ``-`` and ``_`` only. (A
    crawl whose output directory's path has a space or a comma gets its checkpoints and
    savepoints under the percent-escaped path, ``a%20b``, where ``--resume`` finds none:
    seen here, and not what these tests are about.)"""
    return re.sub(r"[^A-Za-z0-9_]+", "-", name).strip("-")


class CrawlsAhead:
    """The registered crawls ``names``, the long ones first, then in the order given, run on
    :data:`WORKERS` threads, each in the directory ``directory_for(name)`` gives."""

    def __init__(self, names: Iterable[str], directory_for: Callable[[str], Path]) -> None:
        names = list(names)
        for name in names:
            if name not in _CRAWLS:
                raise KeyError(f"no crawl registered as {name}")
        self._pool = concurrent.futures.ThreadPoolExecutor(WORKERS, "crawl-ahead")
        self._futures: dict[str, concurrent.futures.Future[Any]] = {}
        for name in started_first(names):
            self._futures[name] = self._pool.submit(_CRAWLS[name], directory_for(name))

    def result(self, name: str) -> Any:
        """What the crawl ``name`` returned, once it is done (what it raised, raised)."""
        if name not in self._futures:
            raise KeyError(f"the crawl {name} was not started: is its test marked "
                           f"crawl_ahead({name!r})?")
        return self._futures[name].result()

    def close(self) -> None:
        """Drop the crawls not yet started, wait for those running."""
        self._pool.shutdown(wait=True, cancel_futures=True)
