"""Fixtures of the end-to-end tests: the synthetic web on loopback, and the standalone cluster
the cluster tests share.

Crawls run as the user runs them (``crawl_runner.run_crawl``: ``python -m job crawl ...`` in a
child process with its own JVM and MiniCluster), with the synthetic web as their HTTP proxy.
Assertions use the web's ground truth, its own request log and the files the crawl wrote,
never the crawler's figures.

The tests without a crawl (the JVM's key groups) run first. Then the crawls of the tests
that judge a crawl run ahead of them (``crawls_ahead``, :mod:`tests.integration.ahead`)
start, two at a time, the long ones first; the test of the first (the continuous crawl,
whose revisit timings are the most sensitive to the load) is judged first, with just one
other crawl beside its own. The tests that submit to a standalone cluster (``cluster``) come
next, beside the next two crawls ahead, then the other tests of crawls ahead. The cluster
tests share one cluster, started once (about 10 s and two JVMs saved a test).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from synthweb import SyntheticWebServer, WebConfig
from tests.integration.ahead import CrawlsAhead, directory_name, started_first
from tests.integration.cluster_fixture import (
    SHARED_CLUSTER_SETTINGS,
    Cluster,
    standalone_cluster,
)


def _crawl_ahead(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("crawl_ahead")
    return marker.args[0] if marker is not None else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests alone first; then the test of the crawl ahead that starts first (the first
    of the long ones), the tests on the shared standalone cluster, and the other tests whose
    crawls run ahead (each group's order kept)."""
    ahead = [name for item in items if (name := _crawl_ahead(item)) is not None]
    first = started_first(ahead)[0] if ahead else None

    def group(item: pytest.Item) -> int:
        name = _crawl_ahead(item)
        if name is not None:
            return 1 if name == first else 3
        return 2 if "cluster" in getattr(item, "fixturenames", ()) else 0

    items.sort(key=group)


@pytest.fixture(scope="session")
def crawls_ahead(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CrawlsAhead]:
    """The crawls of the selected tests marked ``crawl_ahead``, started the long ones first,
    then in the tests' order."""
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
def cluster(shared_cluster: Cluster) -> Iterator[Cluster]:
    """The shared standalone cluster (a JobManager, a TaskManager with 2 slots); no job of the
    test is left running after it."""
    yield shared_cluster
    shared_cluster.cancel_running_jobs()


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[SyntheticWebServer]:
    """A 12-host synthetic web (seed 7) serving as the crawl's proxy."""
    with SyntheticWebServer(WebConfig(seed=7, hosts=12), tmp_path / "requests.jsonl") as server:
        yield server
