"""End to end: a crawl's archive replayed in pywb from the CDXJ index the crawl wrote.

pywb cannot share an environment with apache-flink (it pins redis below 3, Apache Beam needs 5),
so the test installs it into a virtual environment of its own, as the README tells a user to.
The crawl's ``index.cdxj`` must be what webrecorder's cdxj-indexer makes of its WARC files, and
pywb, reading that index (not one of its own), must serve every archived page byte for byte as
the synthetic web served it, revisit records (payloads archived before) included.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from cdxj_indexer.main import write_cdx_index

from synthweb import SyntheticWebServer, WebConfig
from tests.integration.crawl_runner import run_crawl

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def wayback(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pywb's ``wayback`` command, installed into an environment of its own."""
    root = tmp_path_factory.mktemp("pywb-env")
    venv.create(root, with_pip=True)
    python = root / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "pywb>=2.8"],
        capture_output=True, text=True, timeout=600,
    )
    if install.returncode != 0:
        pytest.fail(f"could not install pywb: {install.stderr[-2000:]}")
    return root / "bin" / "wayback"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def replay_server(tmp_path: Path, wayback: Path) -> Iterator[tuple[str, Path]]:
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


def test_the_crawl_replays_in_pywb_from_its_own_index(
    tmp_path: Path, replay_server: tuple[str, Path]
) -> None:
    base, out = replay_server
    config = WebConfig(seed=5, hosts=4, pages_per_host=5)
    with SyntheticWebServer(config, tmp_path / "requests.jsonl") as web:
        seeds = web.web.seeds()
        process, summary = run_crawl(
            tmp_path, seeds, web.proxy_url, "--delay", "0.05", "--idle-seconds", "6",
            "--set", "politeness.backoff_base_seconds=0.5",
        )
        assert process.returncode == 0, process.stderr[-3000:]

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

