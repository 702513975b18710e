"""Fixtures of the end-to-end tests: the synthetic web on loopback.

Crawls run as the user runs them (``crawl_runner.run_crawl``: ``python -m job crawl ...`` in a
child process with its own JVM and MiniCluster), with the synthetic web as their HTTP proxy.
Assertions use the web's ground truth, its own request log and the files the crawl wrote,
never the crawler's figures.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from synthweb import SyntheticWebServer, WebConfig


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[SyntheticWebServer]:
    """A 12-host synthetic web (seed 7) serving as the crawl's proxy."""
    with SyntheticWebServer(WebConfig(seed=7, hosts=12), tmp_path / "requests.jsonl") as server:
        yield server
