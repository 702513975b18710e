"""Runs a crawl as the user runs it: ``python -m job crawl ...`` in a child process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def run_crawl(
    tmp_path: Path, seeds: list[str], proxy: str, *options: str, timeout: float = 300
) -> tuple[subprocess.CompletedProcess[str], dict]:
    """Run ``python -m job crawl`` and return the process and its summary.json."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "job", "crawl", "--out", str(out), "--proxy", proxy]
    if seeds:
        seeds_file = tmp_path / "seeds.txt"
        seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
        command += ["--seeds", str(seeds_file)]
    command += options
    process = subprocess.run(
        command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return process, summary
