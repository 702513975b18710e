"""Fixtures of the end-to-end tests: the synthetic web on loopback, and the standalone cluster
the cluster tests share.

Crawls run as the user runs them (``crawl_runner.run_crawl``: ``python -m job crawl ...`` in a
child process with its own JVM and MiniCluster), with the synthetic web as their HTTP proxy.
Assertions use the web's ground truth, its own request log and the files the crawl wrote,
never the crawler's figures.

The tests that submit to a standalone cluster (``cluster``) share one, started once (about 10 s
and two JVMs saved a test); they run last, so that the cluster is stopped as soon as they are
done and does not sit beside the other tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from synthweb import SyntheticWebServer, WebConfig
from tests.integration.cluster_fixture import (
    SHARED_CLUSTER_SETTINGS,
    Cluster,
    standalone_cluster,
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests on the shared standalone cluster last (their order kept)."""
    items.sort(key=lambda item: "cluster" in getattr(item, "fixturenames", ()))


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
