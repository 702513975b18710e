"""Fault injection for recovery tests: make a stage fail once, on purpose.

Set ``PYFLINK_CRAWLER_FAIL_ONCE=<stage>:<n>`` (several, comma-separated) in the environment of
a local crawl and the first subtask of ``<stage>`` that handles its ``n``-th record raises
:class:`InjectedFault`, once per output directory (a marker file under ``faults/`` remembers
that it fired, across the restart that follows). Several stages fail one after another, in
the order listed: a stage counts its records only from the first start of its subtask after
every stage listed before it fired, so that each failure gets a restart of its own (two
failures in one failover would test one recovery). Without the variable nothing happens; the
check costs one comparison a record.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENVIRONMENT_VARIABLE", "FaultInjector", "InjectedFault"]

ENVIRONMENT_VARIABLE = "PYFLINK_CRAWLER_FAIL_ONCE"


class InjectedFault(RuntimeError):
    """The failure a recovery test asked for."""


class FaultInjector:
    """Counts a stage's records and fails once at the configured one."""

    def __init__(self, stage: str, output_dir: str | Path) -> None:
        self._remaining = 0
        faults = Path(output_dir) / "faults"
        self._marker = faults / f"fired-{stage}"
        for wanted in os.environ.get(ENVIRONMENT_VARIABLE, "").split(","):
            name, _, count = wanted.strip().partition(":")
            if not name:
                continue
            if name != stage:
                if not (faults / f"fired-{name}").exists():
                    return  # an earlier stage has yet to fail
                continue
            if count.isdigit() and not self._marker.exists():
                self._remaining = int(count)
            return

    def tick(self) -> None:
        """Count one record; raise :class:`InjectedFault` at the configured one."""
        if not self._remaining:
            return
        self._remaining -= 1
        if self._remaining:
            return
        self._marker.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self._marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return  # another subtask fired it already
        os.close(fd)
        raise InjectedFault(f"failure injected by {ENVIRONMENT_VARIABLE} ({self._marker.name})")
