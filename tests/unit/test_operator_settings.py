"""Each stateful operator is built from settings of its own, not from the whole configuration:
what each ``from_config`` takes from the configuration, and that a function, shipped as
PyFlink ships it (cloudpickle), carries its settings and no :class:`~crawl.config.Config`."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import cloudpickle
import pytest

from crawl.config import Config, ConnectTo, load_config
from crawl.processing import ProcessSettings
from operators.crawl_db import CrawlDbFunction, CrawlDbSettings
from operators.fetch import FetchFunction, FetchSettings
from operators.neardup import NearDuplicateSettings, NearVerdictFunction
from operators.neardup_index import NearIndexFunction
from operators.process import ProcessFunction

OUT = "/crawl-out"


def _crawl_db(config: Config) -> tuple[Any, Any]:
    settings = CrawlDbSettings.from_config(config)
    return CrawlDbFunction(settings, OUT), settings


def _fetch(config: Config) -> tuple[Any, Any]:
    settings = FetchSettings.from_config(config)
    return FetchFunction(settings, OUT), settings


def _process(config: Config) -> tuple[Any, Any]:
    settings = ProcessSettings.from_config(config)
    return ProcessFunction(settings, OUT), settings


def _neardup_index(config: Config) -> tuple[Any, Any]:
    settings = NearDuplicateSettings.from_config(config)
    return NearIndexFunction(settings, OUT), settings


def _neardup_verdicts(config: Config) -> tuple[Any, Any]:
    settings = NearDuplicateSettings.from_config(config)
    return NearVerdictFunction(settings, OUT), settings


@pytest.mark.parametrize("build", [_crawl_db, _fetch, _process, _neardup_index,
                                   _neardup_verdicts])
def test_a_shipped_function_carries_its_settings_and_no_config(
    build: Callable[[Config], tuple[Any, Any]],
) -> None:
    function, settings = build(load_config(None, {"crawl.vnodes": 64}))
    shipped = pickle.loads(cloudpickle.dumps(function))
    assert settings in vars(shipped).values()
    assert not [name for name, value in vars(shipped).items() if isinstance(value, Config)]


def test_the_crawl_db_routes_as_the_politeness_and_fetch_sections_say() -> None:
    config = load_config(None, {"politeness.group_by": "ip",
                                "fetch.connect_to": "a.test:80:127.0.0.1:8080",
                                "fetch.connect_timeout_seconds": 3,
                                "crawl.vnodes": 64, "crawl.max_pages": 500})
    settings = CrawlDbSettings.from_config(config)
    assert settings.fetch_routing == "ip"
    assert settings.connect_to == (ConnectTo("a.test", 80, "127.0.0.1", 8080),)
    assert settings.dns_timeout_seconds == 3
    assert (settings.vnodes, settings.max_pages) == (64, 500)
    assert (settings.crawldb, settings.admission, settings.priority, settings.recrawl) == (
        config.crawldb, config.admission, config.priority, config.recrawl)
    # A domain quota keeps a domain's hosts in one fetch subtask.
    quota = load_config(None, {"politeness.domain_quota_pages": 10})
    assert CrawlDbSettings.from_config(quota).fetch_routing == "domain"


def test_the_fetch_stage_takes_the_budget_and_the_sitemaps_size_limit() -> None:
    config = load_config(None, {"crawl.max_pages": 700, "sitemaps.max_bytes": 12345})
    settings = FetchSettings.from_config(config)
    assert (settings.max_pages, settings.sitemap_max_bytes) == (700, 12345)
    assert (settings.politeness, settings.robots, settings.user_agent, settings.fetch) == (
        config.politeness, config.robots, config.user_agent, config.fetch)


@pytest.mark.parametrize(("change_distance", "features"), [(0, 0), (3, 40)])
def test_the_process_stage_judges_change_by_simhash_only_with_a_change_distance(
    change_distance: int, features: int
) -> None:
    config = load_config(None, {"recrawl.enabled": True,
                                "recrawl.change_distance": change_distance,
                                "neardup.min_features": 40, "neardup.enabled": False,
                                "crawl.recent_urls": 99})
    settings = ProcessSettings.from_config(config)
    assert settings.change_features == features
    assert (settings.recrawl, settings.near_duplicates) == (True, False)
    assert (settings.vnodes, settings.recent_urls) == (config.crawl.vnodes, 99)


def test_the_near_duplicate_stage_takes_its_section_and_the_warc_section() -> None:
    config = load_config(None, {"neardup.max_distance": 5, "warc.prefix": "site"})
    settings = NearDuplicateSettings.from_config(config)
    assert (settings.neardup, settings.warc, settings.vnodes) == (
        config.neardup, config.warc, config.crawl.vnodes)
