"""End to end: an output directory that cannot be written, and a disk that fills mid-crawl.

The output lives on a small tmpfs of its own (mounting one needs root, as in CI's container;
elsewhere the test is skipped, saying so). First the file system is read-only: the crawl
refuses to start, naming the directory and the cause. Then a crawl of the synthetic web runs
on it and, once it has fetched a few dozen pages, a file fills the disk: the launcher tells
each task failure with its cause, and when Flink's restarts run out (two here, from a
``flink-conf.yaml`` that allows no more) the crawl stops with an error that names the full
disk and says to resume. The disk is freed and ``--resume`` finishes the crawl from the last
checkpoint: every reachable page fetched, every WARC file readable, no file left open, every
HTML page archived, and the pages fetched twice no more than those in flight since that
checkpoint.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from synthweb import SyntheticWebServer, WebConfig, audit_log
from tests.integration.ahead import CrawlsAhead, crawl_ahead
from tests.integration.crawl_runner import (
    PROJECT_ROOT,
    SHORT_BACKOFF,
    crawl_environment,
    run_crawl,
)

pytestmark = pytest.mark.integration

DELAY = 0.2
TOKEN = "pyflink-crawler"
WEB = WebConfig(seed=7, hosts=12)


@contextlib.contextmanager
def _small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs mounted for the test."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount_point)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _remount(mount_point: Path, option: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{option}", str(mount_point)], check=True)


def _fill(directory: Path) -> Path:
    """Write a file until the disk is full; returns it."""
    filler = directory / "filler"
    chunk = b"\0" * (1 << 16)
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        while True:
            try:
                os.write(descriptor, chunk)
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
                return filler
    finally:
        os.close(descriptor)


def _flink_conf_with_few_restarts(tmp_path: Path) -> Path:
    text = (PROJECT_ROOT / "flink-conf.yaml").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("restart-strategy")]
    lines += ["restart-strategy.type: fixed-delay",
              "restart-strategy.fixed-delay.attempts: 2",
              "restart-strategy.fixed-delay.delay: 1s"]
    path = tmp_path / "flink-conf-few-restarts.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _warc_captures(out: Path) -> list[str]:
    """Target URIs of the response and revisit records, every file read with digests checked."""
    captures = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                record.content_stream().read()
                if record.rec_type in ("response", "revisit"):
                    captures.append(record.rec_headers.get_header("WARC-Target-URI"))
    return captures


@pytest.mark.crawl_ahead("full disk")
def test_a_full_disk_stops_the_crawl_with_a_clear_error_and_resume_finishes_it(
    crawls_ahead: CrawlsAhead,
) -> None:
    """The whole scenario runs ahead, its assertions with it (each step judges the one
    before, on a disk mounted for it alone): its outcome is raised here."""
    crawls_ahead.result("full disk")


@crawl_ahead("full disk")
def _full_disk_scenario(tmp_path: Path) -> None:
    with _small_disk(tmp_path) as small_disk:
        _fill_the_disk_mid_crawl_then_resume(tmp_path, small_disk)


def _fill_the_disk_mid_crawl_then_resume(tmp_path: Path, small_disk: Path) -> None:
    out_parent = small_disk / "crawls"
    with SyntheticWebServer(WEB, tmp_path / "requests.jsonl") as server:
        seeds = server.web.seeds()
        seeds_file = tmp_path / "seeds.txt"
        seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
        command = [sys.executable, "-m", "job", "crawl", "--seeds", str(seeds_file),
                   "--proxy", server.proxy_url, "--delay", str(DELAY), "--idle-seconds", "6",
                   *SHORT_BACKOFF]

        # A read-only file system: refused before anything starts.
        _remount(small_disk, "ro")
        refused = subprocess.run([*command, "--out", str(out_parent / "out")], cwd=PROJECT_ROOT,
                                 capture_output=True, text=True, timeout=120, check=False,
                                 env=crawl_environment())
        _remount(small_disk, "rw")
        assert refused.returncode == 1, refused.stderr[-2000:]
        assert "cannot write the output directory" in refused.stderr
        assert "Read-only file system" in refused.stderr
        assert "Traceback" not in refused.stderr

        # The disk fills mid-crawl: task failures told, then a clear error once restarts run out.
        out = out_parent / "out"
        crawl = subprocess.Popen(
            [*command, "--out", str(out), "--flink-conf", str(_flink_conf_with_few_restarts(
                tmp_path))],
            cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=crawl_environment(),
        )
        try:
            deadline = time.monotonic() + 120
            while len(server.request_log()) < 40:
                assert crawl.poll() is None, crawl.communicate()
                assert time.monotonic() < deadline, "the crawl fetched too little"
                time.sleep(0.2)
            filler = _fill(small_disk)
            full_at = time.time()
            stdout, stderr = crawl.communicate(timeout=240)
        finally:
            if crawl.poll() is None:
                crawl.kill()
        assert crawl.returncode == 1, (stdout[-2000:], stderr[-3000:])
        # Each task failure is told as the launcher sees it (it asks Flink every 2 s: restarts
        # as quick as these may come and go between two asks), then the end, always.
        # (Whichever write failed first: a WARC or loop file, a crawl DB file.)
        for line in stdout.splitlines():
            if line.startswith("task failure"):
                assert "disk holding it is full" in line, line
        assert "crawl failed: the Flink job failed:" in stderr
        assert "--resume" in stderr
        assert "disk holding it is full" in stderr

        # Room again: --resume finishes the crawl from the last checkpoint.
        filler.unlink()
        resumed, summary = run_crawl(
            tmp_path, [], server.proxy_url, "--resume", "--delay", str(DELAY),
            "--idle-seconds", "6", *SHORT_BACKOFF, timeout=300, out=out,
        )
        records = sorted(server.request_log(), key=lambda r: r.start)
        expected = server.web.expected_crawl(seeds, TOKEN)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert summary["stop_reason"] == "idle"

    # Every reachable page, politely; repeats only of pages in flight since the checkpoint.
    problems = audit_log(records, expected, min_delay=DELAY)
    assert [p for p in problems if not ("requested" in p and "times" in p)] == []
    requested = collections.Counter(r.url for r in records if r.path != "/robots.txt")
    assert set(expected.fetch) <= set(requested)
    repeated = {url: n for url, n in requested.items() if n > 1}
    # Fetched again: only pages fetched since the last checkpoint completed before the disk
    # filled (checkpoints run every second; none completes while it is full), once by each
    # attempt (the first, two restarts, the resumed run).
    first_request = {}
    for record in records:
        first_request.setdefault(record.url, record.start)
    assert all(n <= 4 for n in repeated.values()), repeated
    early = [url for url in repeated if first_request[url] < full_at - 5]
    assert early == []

    assert not list((out / "warc").glob("*.open")), "a WARC file was left open"
    captures = set(_warc_captures(out))
    html = [url for url, status in expected.fetch.items()
            if status == 200 and server.web.page(url).content_type.startswith("text/html")]
    missing = [url for url in html if url not in captures]
    assert missing == []
    assert os.listdir(small_disk) == ["crawls"]
