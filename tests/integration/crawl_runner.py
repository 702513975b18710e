"""Runs a crawl as the user runs it: ``python -m job crawl ...`` in a child process."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from crawl.archive.warc import verify_warc_file
from synthweb.proctree import ProcessTreeMonitor, TreeUsage

PROJECT_ROOT = Path(__file__).resolve().parents[2]


#: Seconds between calls of a crawl's watcher.
WATCH_INTERVAL = 0.5

#: Short host back-offs (``politeness.backoff_base_seconds``), for crawls that do not test
#: them: the synthetic webs have hosts whose robots.txt answers 5xx (and hosts off the web
#: answer 502), asked again after 0.5 s and 1 s instead of 5 s and 10 s before their pages
#: are recorded as robots denials. In a crawl of a small web (or a fast one) those retries
#: are the last requests, and the crawl falls idle that much sooner.
SHORT_BACKOFF = ("--set", "politeness.backoff_base_seconds=0.5")

#: JVM options of the crawls' MiniCluster JVMs (PyFlink's gateway puts ``JVM_ARGS`` first on
#: its java command line): C1 only, which ``flink-conf.yaml`` names for short crawls. These
#: crawls are all short, and most of the JVM's start-up CPU went to C2 compiling Flink's
#: runtime: a crawl of the 12-host web took 15 CPU seconds instead of 24, and so leaves the
#: other tests' crawls more of the machine.
SHORT_CRAWL_JVM_ARGS = "-XX:TieredStopAtLevel=1"


def running_job(out: Path) -> dict | None:
    """The launcher's record of the crawl's Flink job in ``out`` (``out/job.json``: its pid,
    REST address and id) while it runs; None before it is written or once the crawl ended."""
    try:
        record = json.loads((out / "job.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return None if record.get("finished") else record


def crawl_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a test's crawl runs in: this one with ``extra`` and
    :data:`SHORT_CRAWL_JVM_ARGS` added, and without this interpreter's directory on ``PATH``
    (as a user who runs .venv/bin/python without activating the environment: the crawl must
    not depend on finding its interpreter on ``PATH``)."""
    interpreter_dir = os.path.dirname(sys.executable)
    path = os.pathsep.join(
        part for part in os.environ.get("PATH", "").split(os.pathsep) if part != interpreter_dir
    )
    jvm_args = " ".join(filter(None, [os.environ.get("JVM_ARGS", ""), SHORT_CRAWL_JVM_ARGS]))
    return {**os.environ, **(extra or {}), "PATH": path, "JVM_ARGS": jvm_args}


def _default_interrupt() -> None:
    """In a crawl's child process before it runs: SIGINT handled as a shell's foreground job
    has it, even when the tests run where it is ignored (a shell's background job: Python
    then leaves it ignored, and a Ctrl-C would never reach the crawl)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_crawl(
    tmp_path: Path, seeds: list[str], proxy: str | None, *options: str, timeout: float = 300,
    out: Path | None = None, watch: Callable[[], None] | None = None,
    env: Mapping[str, str] | None = None, own_session: bool = False,
) -> tuple[subprocess.CompletedProcess[str], dict]:
    """Run ``python -m job crawl`` and return the process and its summary.json."""
    process, summary, _ = run_crawl_measured(tmp_path, seeds, proxy, *options, timeout=timeout,
                                             out=out, watch=watch, env=env,
                                             own_session=own_session)
    return process, summary


def run_crawl_measured(
    tmp_path: Path, seeds: list[str], proxy: str | None, *options: str, timeout: float = 300,
    out: Path | None = None, watch: Callable[[], None] | None = None,
    env: Mapping[str, str] | None = None, own_session: bool = False,
) -> tuple[subprocess.CompletedProcess[str], dict, TreeUsage]:
    """:func:`run_crawl`, and what the crawl's processes used (CPU, peak resident memory).

    ``proxy`` None: no ``--proxy`` (the options then say how hosts are reached); ``out`` the
    output directory (``tmp_path / "out"`` by default); ``watch`` is called every
    :data:`WATCH_INTERVAL` seconds while the crawl runs (to look at it from outside); ``env``
    variables set for the crawl; ``own_session`` runs it in a session and process group of
    its own, as a shell runs a command in a terminal (whose Ctrl-C signals the group)."""
    out = out or tmp_path / "out"
    command = [sys.executable, "-m", "job", "crawl", "--out", str(out)]
    if proxy is not None:
        command += ["--proxy", proxy]
    if seeds:
        seeds_file = tmp_path / "seeds.txt"
        seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
        command += ["--seeds", str(seeds_file)]
    command += options
    child = subprocess.Popen(
        command, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=crawl_environment(env), start_new_session=own_session,
        preexec_fn=_default_interrupt if own_session else None,
    )
    monitor = ProcessTreeMonitor(child.pid)
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            try:
                # Output read before a timeout is kept for the next call (subprocess's promise).
                stdout, stderr = child.communicate(
                    timeout=max(0.0, min(left, WATCH_INTERVAL) if watch else left)
                )
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline or watch is None:
                    raise
                watch()
    except BaseException:
        child.kill()
        child.communicate()
        monitor.stop()
        raise
    usage = monitor.stop()
    process = subprocess.CompletedProcess(command, child.returncode, stdout, stderr)
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return process, summary, usage


def near_duplicate_notes(out: Path) -> list[tuple[str, str, int]]:
    """(page, the earlier page it is a near-duplicate of, distance), from the near-duplicate
    stage's WARC metadata records in the crawl's output ``out``."""
    notes = []
    paths = sorted((out / "warc").glob("*-neardup-*.warc.gz"))
    assert paths, "the near-duplicate stage wrote no WARC file"
    for path in paths:
        assert verify_warc_file(path)
        with gzip.open(path, "rb") as raw:
            for record in ArchiveIterator(raw):
                if record.rec_type != "metadata":
                    continue
                block = record.content_stream().read().decode()
                fields = dict(line.split(": ", 1) for line in block.strip().split("\r\n"))
                assert record.rec_headers.get_header("WARC-Refers-To")
                notes.append((record.rec_headers.get_header("WARC-Target-URI"),
                               fields["nearDuplicateOf"], int(fields["hammingDistance"])))
    return notes
