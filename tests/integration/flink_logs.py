"""What a crawl's Flink logs and processes tell about where its tasks ran."""

from __future__ import annotations

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
