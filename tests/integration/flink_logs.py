"""What a crawl's Flink logs and processes tell about where its tasks ran."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

#: The JobManager's line for each task it deploys, e.g. "Deploying process -> Map,
#: _stream_key_by_map_operator (1/2) (attempt #0) with attempt id ... to 127.0.0.1:45747-cb908e
#: @ localhost (dataPort=42901) ...".
_DEPLOYING = re.compile(
    r"Deploying (?P<task>[^,(]+?)(?: ->[^(]*)?(?:, [^(]*)? \((?P<subtask>\d+)/\d+\) "
    r"\(attempt #\d+\) with attempt id \S+ and vertex id \S+ to (?P<taskmanager>\S+) @"
)


def deployments(log_dir: Path) -> dict[tuple[str, int], str]:
    """(task, subtask number from 1) -> the TaskManager it was last deployed to, from the
    JobManager logs in ``log_dir`` (a local cluster's; the MiniCluster deploys alike)."""
    placed: dict[tuple[str, int], str] = {}
    for path in sorted(log_dir.glob("*.log*"), key=lambda p: p.stat().st_mtime):
        for found in _DEPLOYING.finditer(path.read_text(encoding="utf-8", errors="replace")):
            placed[found["task"].strip(), int(found["subtask"])] = found["taskmanager"]
    return placed


#: The JobManager's lines when a job fails over and when it runs again, e.g. "2026-11-27
#: 12:52:57,013 INFO ... Job pyflink-crawler (2e5d...) switched from state RUNNING to
#: RESTARTING." and, once every task of the failed attempt is cancelled, "... switched from
#: state RESTARTING to RUNNING."
_JOB_STATE = re.compile(
    r"^(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .* switched from state "
    r"(?P<before>RUNNING|RESTARTING) to (?P<after>RESTARTING|RUNNING)", re.MULTILINE)


def restarts(log_dir: Path) -> list[tuple[float, float]]:
    """When the jobs of the logs in ``log_dir`` failed over and when each ran again (epoch
    seconds, infinity if it never did; the logs' times are this machine's local time), in
    order. Tasks of the failed attempt may go on working until they are cancelled, after the
    failover began: what they did is the restarted attempt's to do again only if it came before
    the job ran again."""
    found = []
    for path in log_dir.glob("*.log*"):
        began = None
        for match in _JOB_STATE.finditer(path.read_text(encoding="utf-8", errors="replace")):
            at = datetime.datetime.strptime(match["at"], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if match["after"] == "RESTARTING":
                began = at
            elif match["before"] == "RESTARTING" and began is not None:
                found.append((began, at))
                began = None
        if began is not None:
            found.append((began, float("inf")))
    return sorted(found)


def local_cluster_daemons(out: Path) -> list[int]:
    """The processes alive that run with the configuration of the crawl's local cluster (its
    JobManager and TaskManagers, under ``out/flink-conf/cluster``)."""
    marker = str(out / "flink-conf" / "cluster").encode()
    alive = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            command = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in command and state != "Z":
            alive.append(int(proc.name))
    return alive
