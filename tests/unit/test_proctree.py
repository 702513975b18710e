"""The process-tree monitor of the benchmarks and end-to-end tests, on real processes."""

from __future__ import annotations

import subprocess
import sys
import time

from synthweb.proctree import ProcessTreeMonitor

_BUSY_CHILD = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', "
    "'import time\\nend = time.process_time() + 0.4\\n"
    "while time.process_time() < end: pass\\ntime.sleep(0.6)', 'busy-grandchild'])\n"
    "child.wait()\n"
)


def test_cpu_of_each_process_and_the_timeline() -> None:
    parent = subprocess.Popen([sys.executable, "-c", _BUSY_CHILD])
    monitor = ProcessTreeMonitor(parent.pid, interval=0.05)
    parent.wait()
    time.sleep(0.1)
    usage = monitor.stop()
    busy = [cpu for _, command, cpu in usage.cpu_by_process if command.endswith(" busy-grandchild")]
    assert busy
    assert busy[0] >= 0.3
    assert usage.cpu_seconds >= busy[0]
    times = [at for at, _ in usage.timeline]
    cpus = [cpu for _, cpu in usage.timeline]
    assert len(times) == usage.samples >= 2
    assert times == sorted(times)
    assert cpus == sorted(cpus)
    assert usage.cpu_between(times[0], times[-1]) == cpus[-1] - cpus[0]
    assert usage.cpu_between(times[-1] + 1, times[-1] + 2) == 0.0
