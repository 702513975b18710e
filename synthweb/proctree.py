"""What a process and all its descendants use, sampled from ``/proc`` while they run (Linux).

A crawl is several processes (the ``python -m job`` client, the JVM of the MiniCluster with
its embedded Python, helpers), so its cost is that of the whole tree. :class:`ProcessTreeMonitor`
samples the tree in a thread: CPU seconds (each process's last reading, so a process that ended
between two samples loses at most one interval) and the peak of the tree's summed resident set.
Benchmarks and the end-to-end tests use it; it needs no third-party package.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path

__all__ = ["ProcessTreeMonitor", "TreeUsage", "descendants"]

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass(frozen=True, slots=True)
class TreeUsage:
    """What a process tree used while it was watched."""

    cpu_seconds: float
    #: The largest sum of the resident sets of the tree's processes seen at one sample.
    peak_rss_bytes: int
    samples: int
    #: Each process's CPU seconds, with its command line (arguments joined by spaces).
    cpu_by_process: tuple[tuple[int, str, float], ...] = ()
    #: (wall-clock time, the tree's CPU seconds so far) at each sample.
    timeline: tuple[tuple[float, float], ...] = ()

    def cpu_between(self, start: float, end: float) -> float:
        """The tree's CPU seconds from wall-clock ``start`` to ``end`` (from the samples
        nearest inside the span; 0 without two of them)."""
        inside = [(at, cpu) for at, cpu in self.timeline if start <= at <= end]
        if len(inside) < 2:
            return 0.0
        return inside[-1][1] - inside[0][1]


def descendants(root: int) -> list[int]:
    """``root`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


class ProcessTreeMonitor:
    """Samples the CPU time and resident memory of ``root`` and its descendants every
    ``interval`` seconds until :meth:`stop`."""

    def __init__(self, root: int, interval: float = 0.5) -> None:
        self._root = root
        self._interval = interval
        self._cpu: dict[int, float] = {}
        self._commands: dict[int, str] = {}
        self._timeline: list[tuple[float, float]] = []
        self._peak_rss = 0
        self._samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-monitor", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        rss = 0
        for pid in descendants(self._root):
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # Fields after the command: state is [0], utime [11], stime [12], rss pages [21].
            cpu = (int(fields[11]) + int(fields[12])) / _TICKS
            self._cpu[pid] = max(self._cpu.get(pid, 0.0), cpu)
            rss += int(fields[21]) * _PAGE_BYTES
            # Read at every sample: a script that executes a JVM changes its command line.
            self._commands[pid] = _command_line(pid) or self._commands.get(pid, "")
        self._peak_rss = max(self._peak_rss, rss)
        self._timeline.append((time.time(), sum(self._cpu.values())))
        self._samples += 1

    def _run(self) -> None:
        self._sample()
        while not self._stop.wait(self._interval):
            self._sample()

    def stop(self) -> TreeUsage:
        """Stop sampling; what the tree used."""
        self._stop.set()
        self._thread.join()
        return TreeUsage(
            round(sum(self._cpu.values()), 2), self._peak_rss, self._samples,
            tuple((pid, self._commands.get(pid, ""), cpu) for pid, cpu in self._cpu.items()),
            tuple(self._timeline),
        )


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace").strip()
    except OSError:
        return ""
