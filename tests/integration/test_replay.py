"""End to end: a crawl begun by an earlier version, finished by this one, and its archive
replayed in pywb from the CDXJ index the crawl wrote.

pywb cannot share an environment with apache-flink (it pins redis below 3, Apache Beam needs 5),
so the test installs it into a virtual environment of its own, as the README tells a user to.
That environment is kept between runs in the user's cache directory, one per pywb version and
Python version (installing it takes 15-20 s even from pip's cache, minutes without).
The crawl's ``index.cdxj`` must be what webrecorder's cdxj-indexer makes of its WARC files, and
pywb, reading that index (not one of its own), must serve every archived page byte for byte as
the synthetic web served it, revisit records (payloads archived before) included, whichever
version wrote them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tarfile
import time
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from cdxj_indexer.main import write_cdx_index

from drum.record import LAYOUT_VERSION, READABLE_LAYOUTS
from synthweb import SyntheticWebServer
from synthweb.audit import audit_log
from synthweb.requestlog import read_request_log
from tests.integration.ahead import CrawlsAhead, crawl_ahead
from tests.integration.crawl_runner import run_crawl
from tests.integration.make_old_crawl import CRAWL_OPTIONS, OLD_PAGES, WEB
from tests.integration.make_old_crawl import FIXTURE as OLD_CRAWL

pytestmark = pytest.mark.integration

TOKEN = "pyflink-crawler"
#: The pywb the test replays with (a new version: a new environment in the cache).
PYWB = "pywb==2.10.0"


def _pywb_environment() -> Path:
    """Where the environment of :data:`PYWB` for this Python is kept between runs."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    python = f"py{sys.version_info.major}.{sys.version_info.minor}"
    return cache / "pyflink-crawler" / f"{PYWB.replace('==', '-')}-{python}"


def _usable(root: Path) -> bool:
    """Whether ``root`` holds a complete environment of :data:`PYWB` that still runs."""
    marker = root / "installed"
    if not marker.exists() or marker.read_text(encoding="utf-8") != PYWB:
        return False
    probe = subprocess.run([str(root / "bin" / "python"), "-c", "import pywb"],
                           capture_output=True, timeout=60, check=False)
    return probe.returncode == 0 and (root / "bin" / "wayback").exists()


def _wayback() -> Path:
    """pywb's ``wayback`` command, installed into an environment of its own (made once, kept in
    the cache; test runs side by side wait for the one that makes it)."""
    root = _pywb_environment()
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _usable(root):
            shutil.rmtree(root, ignore_errors=True)
            venv.create(root, with_pip=True)
            install = subprocess.run(
                [str(root / "bin" / "python"), "-m", "pip", "install", "--quiet", PYWB],
                capture_output=True, text=True, timeout=600,
            )
            if install.returncode != 0:
                pytest.fail(f"could not install pywb: {install.stderr[-2000:]}")
            (root / "installed").write_text(PYWB, encoding="utf-8")
    return root / "bin" / "wayback"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def _replay_server(tmp_path: Path, wayback: Path) -> Iterator[tuple[str, Path]]:
    """pywb serving ``tmp_path/out`` (filled by the test before the first request)."""
    out = tmp_path / "out"
    site = tmp_path / "pywb"
    site.mkdir()
    (site / "config.yaml").write_text(
        "collections:\n"
        "  crawl:\n"
        f"    index_paths: {out / 'index.cdxj'}\n"
        f"    archive_paths: {out / 'warc'}/\n"
        "framed_replay: false\n",
        encoding="utf-8",
    )
    port = _free_port()
    server = subprocess.Popen(
        [str(wayback), "--port", str(port), "--bind", "127.0.0.1"],
        cwd=site, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        yield f"http://127.0.0.1:{port}", out
    finally:
        server.terminate()
        server.wait(timeout=30)


def _wait_until_up(base: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            requests.get(base + "/", timeout=2)
            return
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def _record_layout(run_file: Path) -> int:
    """The record layout a DRUM run file's header names (drum/files.py)."""
    with run_file.open("rb") as file:
        magic, _, layout = struct.unpack("<8sHH", file.read(12))
    assert magic == b"DRUMRUN1", run_file
    return layout


@pytest.mark.crawl_ahead("replay")
def test_a_crawl_begun_by_an_earlier_version_is_finished_by_this_one_and_replays_in_pywb(
    crawls_ahead: CrawlsAhead,
) -> None:
    """An upgrade: the fixture is a crawl begun by an earlier version at parallelism 2 (its
    loop read by Flink's file source, its crawl DB files of record layout 3, no ``loop-lister``
    or ``loop-reader`` operator) and stopped by a page budget with a savepoint
    (``make_old_crawl.py``). This version resumes it at parallelism 1 and finishes it: across
    both versions every reachable page is fetched once and politely, and the whole archive
    replays in pywb from this version's index."""
    crawls_ahead.result("replay")


@crawl_ahead("replay")
def _replay_scenario(tmp_path: Path) -> None:
    """The whole scenario runs ahead, its assertions with it: its outcome is raised by the
    test."""
    with _replay_server(tmp_path, _wayback()) as replay_server:
        _finish_the_old_crawl_and_replay_it(tmp_path, replay_server)


def _finish_the_old_crawl_and_replay_it(
    tmp_path: Path, replay_server: tuple[str, Path]
) -> None:
    base, out = replay_server
    with tarfile.open(OLD_CRAWL) as archive:
        archive.extractall(tmp_path, filter="data")
    old_requests = read_request_log(tmp_path / "requests.jsonl")
    assert len([r for r in old_requests if r.path != "/robots.txt"]) == OLD_PAGES
    old_warcs = sorted(path.name for path in (out / "warc").glob("*.warc.gz"))
    assert old_warcs
    runs = list((out / "crawldb").rglob("run-*.drum"))
    assert {_record_layout(path) for path in runs} == {3}
    assert LAYOUT_VERSION > 3
    assert 3 in READABLE_LAYOUTS
    with SyntheticWebServer(WEB, tmp_path / "requests-resumed.jsonl") as web:
        seeds = web.web.seeds()
        process, summary = run_crawl(tmp_path, [], web.proxy_url, "--resume", *CRAWL_OPTIONS)
        assert process.returncode == 0, process.stderr[-3000:]
        assert "was taken by a job reading the loop with Flink's file source" in process.stdout
        # Its near-duplicate stage of one instance is no more: its index is left behind.
        assert "was taken by a job with the near-duplicate stage of one instance" in (
            process.stdout)
        assert summary["stop_reason"] == "idle"
        requests_made = old_requests + web.request_log()
        assert audit_log(requests_made, web.web.expected_crawl(seeds, TOKEN),
                         min_delay=0.05) == []
        assert not list((out / "warc").glob("*.open"))
        warcs = sorted(path.name for path in (out / "warc").glob("*.warc.gz"))
        assert set(old_warcs) < set(warcs)

        index = out / "index.cdxj"
        lines = index.read_text(encoding="utf-8").splitlines()
        assert summary["cdxj_index"] == str(index)
        assert summary["cdxj_lines"] == len(lines) > 0
        warcs = sorted(str(path) for path in (out / "warc").glob("*.warc.gz"))
        reference = tmp_path / "reference.cdxj"
        write_cdx_index(str(reference), warcs, {"sort": True})
        assert lines == reference.read_text(encoding="utf-8").splitlines()

        _wait_until_up(base)
        pages = [json.loads(line.split(" ", 2)[2]) | {"ts": line.split(" ")[1]} for line in lines]
        html = [p for p in pages if p["status"] == "200" and p.get("mime") == "text/html"]
        assert len(html) >= 8
        # Pages of both versions' WARC files are among those replayed.
        assert {page["filename"] for page in html} & set(old_warcs)
        assert {page["filename"] for page in html} - set(old_warcs)
        for page in html:
            replayed = requests.get(f"{base}/crawl/{page['ts']}id_/{page['url']}", timeout=30)
            assert replayed.status_code == 200, page["url"]
            live = requests.get(page["url"], proxies={"http": web.proxy_url}, timeout=30)
            assert replayed.content == live.content, page["url"]
        # Payloads archived before (the web's identical 404 pages) are revisit records, which
        # pywb resolves to their first capture.
        revisits = [p for p in pages if p.get("mime") == "warc/revisit"]
        assert revisits
        for page in revisits:
            replayed = requests.get(f"{base}/crawl/{page['ts']}id_/{page['url']}", timeout=30,
                                    allow_redirects=False)
            live = requests.get(page["url"], proxies={"http": web.proxy_url}, timeout=30,
                                allow_redirects=False)
            assert replayed.status_code == live.status_code, page["url"]
            if live.is_redirect:  # pywb leaves a redirect's body out: it replays the Location
                assert replayed.headers["Location"] == live.headers["Location"], page["url"]
            else:
                assert replayed.content == live.content, page["url"]
        # pywb's own index API lists the captures of a host from our index.
        listing = requests.get(f"{base}/crawl/cdx", params={"url": "h0.synth.test/*",
                                                          "output": "json"}, timeout=30)
        assert listing.status_code == 200
        assert len(listing.text.splitlines()) == sum(
            1 for line in lines if line.startswith("test,synth,h0)")
        )

