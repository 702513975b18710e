"""Fixtures of the end-to-end tests: the synthetic web on loopback, and the standalone cluster
the cluster tests share.

Crawls run as the user runs them (``crawl_runner.run_crawl``: ``python -m job crawl ...`` in a
child process with its own JVM and MiniCluster), with the synthetic web as their HTTP proxy.
Assertions use the web's ground truth, its own request log and the files the crawl wrote,
never the crawler's figures.

The tests whose crawls run ahead of them (``crawls_ahead``, :mod:`tests.integration.ahead`)
run last, two crawls at a time; the tests that submit to a standalone cluster (``cluster``)
run before them, each taking the place of one of those crawls, while the first of them run.
The cluster tests share one cluster, started once (about 10 s and two JVMs saved a test). The
other tests run first, alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from synthweb import SyntheticWebServer, WebConfig
from tests.integration.ahead import CrawlsAhead, directory_name
from tests.integration.cluster_fixture import (
    SHARED_CLUSTER_SETTINGS,
    Cluster,
    standalone_cluster,
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests alone first, then those on the shared standalone cluster, then those whose
    crawls run ahead (each group's order kept)."""

    def group(item: pytest.Item) -> int:
        if item.get_closest_marker("crawl_ahead") is not None:
            return 2
        return int("cluster" in getattr(item, "fixturenames", ()))

    items.sort(key=group)


@pytest.fixture(scope="session")
def crawls_ahead(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CrawlsAhead]:
    """The crawls of the selected tests marked ``crawl_ahead``, started in their order."""
    names: list[str] = []
    for item in request.session.items:
        for marker in item.iter_markers("crawl_ahead"):
            names += [name for name in marker.args if name not in names]
    crawls = CrawlsAhead(names, lambda name: tmp_path_factory.mktemp(directory_name(name)))
    try:
        yield crawls
    finally:
        crawls.close()


@pytest.fixture(scope="session")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with standalone_cluster(tmp_path_factory.mktemp("cluster"), SHARED_CLUSTER_SETTINGS) as up:
        yield up


@pytest.fixture
def cluster(request: pytest.FixtureRequest, crawls_ahead: CrawlsAhead) -> Iterator[Cluster]:
    """The shared standalone cluster (a JobManager, a TaskManager with 2 slots), started on
    first use; no job of the test is left running after it. The test (and the cluster's start)
    takes a place among the crawls that run ahead, which start beside it."""
    with crawls_ahead.place():
        shared_cluster: Cluster = request.getfixturevalue("shared_cluster")
        yield shared_cluster
        shared_cluster.cancel_running_jobs()


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[SyntheticWebServer]:
    """A 12-host synthetic web (seed 7) serving as the crawl's proxy."""
    with SyntheticWebServer(WebConfig(seed=7, hosts=12), tmp_path / "requests.jsonl") as server:
        yield server
