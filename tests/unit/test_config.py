"""Configuration: the documented defaults file equals the code, overrides coerce, bad values name
their key."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml

from crawl.config import (
    Config,
    ConfigError,
    ConnectTo,
    CrawlSection,
    FetchSection,
    UserAgentSection,
    load_config,
    parse_override,
)
from crawl.content.links import LinkExtractor
from crawl.urls.normalize import UrlNormalizer, normalization_settings

DEFAULTS_FILE = Path(__file__).resolve().parents[2] / "conf" / "crawler.yaml"
SECTIONS = typing.get_type_hints(Config)


def _documented() -> dict[str, dict[str, Any]]:
    loaded = yaml.safe_load(DEFAULTS_FILE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


# -- defaults ---------------------------------------------------------------------------------


def test_defaults_load_without_a_file() -> None:
    config = load_config()

    assert config == Config()
    assert config.crawl.max_pages == 0
    assert config.user_agent.product == "pyflink-crawler"


def test_defaults_file_loads_to_the_defaults() -> None:
    assert load_config(DEFAULTS_FILE) == Config()


def test_defaults_file_has_exactly_the_sections_of_config() -> None:
    assert set(_documented()) == {field.name for field in dataclasses.fields(Config)}


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_defaults_file_has_exactly_the_fields_of_each_section(section: str) -> None:
    documented = _documented()[section]
    fields = {field.name: field for field in dataclasses.fields(SECTIONS[section])}

    assert set(documented) == set(fields), "conf/crawler.yaml and crawl/config.py have drifted"
    defaults = SECTIONS[section]()
    types = typing.get_type_hints(SECTIONS[section])
    for key, value in documented.items():
        expected = getattr(defaults, key)
        if isinstance(value, list):  # a YAML list is a tuple in the code
            value = tuple(value)
        assert value == expected, f"{section}.{key}: file says {value!r}, code says {expected!r}"
        # A float default written as an int (or a quoted number) would still pass ==.
        wanted = typing.get_origin(types[key]) or types[key]
        assert type(value) is wanted, f"{section}.{key}: {value!r} is not {types[key]}"


def test_to_dict_mirrors_the_sections() -> None:
    data = Config().to_dict()

    assert data["crawl"]["vnodes"] == 256
    assert set(data) == set(SECTIONS)


def test_sections_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().crawl.max_pages = 3  # type: ignore[misc]


# -- overrides --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "text", "section", "field", "expected"),
    [
        ("crawl.max_pages", "10", "crawl", "max_pages", 10),
        ("crawl.max_pages", "1_000", "crawl", "max_pages", 1000),
        ("crawl.max_pages", 7.0, "crawl", "max_pages", 7),
        ("crawl.idle_seconds", "0.5", "crawl", "idle_seconds", 0.5),
        ("crawl.idle_seconds", 3, "crawl", "idle_seconds", 3.0),
        ("politeness.delay_seconds", "0", "politeness", "delay_seconds", 0.0),
        ("fetch.proxy", "http://127.0.0.1:3128", "fetch", "proxy", "http://127.0.0.1:3128"),
        ("fetch.proxy", None, "fetch", "proxy", ""),
        ("user_agent.version", 2, "user_agent", "version", "2"),
        ("warc.operator", "Jane Doe", "warc", "operator", "Jane Doe"),
        ("crawl.parallelism", "16", "crawl", "parallelism", 16),
        ("crawl.flink_bind_address", "0.0.0.0", "crawl", "flink_bind_address", "0.0.0.0"),
        ("crawl.local_runtime", "minicluster", "crawl", "local_runtime", "minicluster"),
        ("crawldb.fsync", "false", "crawldb", "fsync", False),
        ("crawldb.flush_seconds", "2", "crawldb", "flush_seconds", 2.0),
        ("scope.skip_extensions", "jpg, png", "scope", "skip_extensions", ("jpg", "png")),
        ("scope.exclude", ["/cgi-bin/"], "scope", "exclude", ("/cgi-bin/",)),
        ("scope.include", None, "scope", "include", ()),
        ("parse.follow", "a, area,refresh", "parse", "follow", ("a", "area", "refresh")),
        ("parse.follow", [], "parse", "follow", ()),
        ("parse.max_outlinks", "0", "parse", "max_outlinks", 0),
        ("parse.obey_nofollow", "false", "parse", "obey_nofollow", False),
        ("priority.flow", "shares", "priority", "flow", "shares"),
    ],
)
def test_override_coerces_to_the_field_type(
    key: str, text: Any, section: str, field: str, expected: Any
) -> None:
    value = getattr(getattr(load_config(overrides={key: text}), section), field)

    assert value == expected
    assert type(value) is type(expected)


def test_overrides_win_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "crawler.yaml"
    path.write_text("crawl:\n  max_pages: 5\n  vnodes: 64\n", encoding="utf-8")

    config = load_config(path, {"crawl.max_pages": "9"})

    assert (config.crawl.max_pages, config.crawl.vnodes) == (9, 64)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("crawl.max_pages=10", ("crawl.max_pages", "10")),
        (" crawl.seeds = a=b ", ("crawl.seeds", "a=b")),
        ("warc.operator=", ("warc.operator", "")),
    ],
)
def test_parse_override(text: str, expected: tuple[str, str]) -> None:
    assert parse_override(text) == expected


def test_parse_override_without_equals_sign() -> None:
    with pytest.raises(ConfigError, match="crawl.max_pages.*section.key=value"):
        parse_override("crawl.max_pages")


# -- invalid values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"politeness.delay_seconds": "-1"}, r"^politeness\.delay_seconds: "),
        ({"priority.flow": "pagerank"}, r"^priority\.flow: .*cash or shares"),
        ({"politeness.delay_seconds": "nan"}, r"^politeness\.delay_seconds: "),
        ({"politeness.max_crawl_delay_seconds": "inf"}, r"^politeness\.max_crawl_delay_seconds: "),
        ({"politeness.response_time_factor": -0.5}, r"^politeness\.response_time_factor: "),
        ({"fetch.connect_timeout_seconds": "0"}, r"^fetch\.connect_timeout_seconds: .*> 0"),
        ({"fetch.read_timeout_seconds": "-3"}, r"^fetch\.read_timeout_seconds: "),
        ({"fetch.total_timeout_seconds": 0}, r"^fetch\.total_timeout_seconds: "),
        ({"fetch.max_content_bytes": "100"}, r"^fetch\.max_content_bytes: "),
        ({"fetch.max_connections": "0"}, r"^fetch\.max_connections: "),
        ({"fetch.proxy": "socks5://127.0.0.1:1080"}, r"^fetch\.proxy: "),
        ({"fetch.proxy": "127.0.0.1:3128"}, r"^fetch\.proxy: "),
        ({"fetch.proxy": "http://"}, r"^fetch\.proxy: "),
        ({"fetch.proxy": "http://proxy:99999"}, r"^fetch\.proxy: "),
        ({"fetch.proxy": "http://proxy:port"}, r"^fetch\.proxy: "),
        ({"robots.ttl_seconds": "0"}, r"^robots\.ttl_seconds: "),
        ({"robots.unavailable_retry_seconds": "-1"}, r"^robots\.unavailable_retry_seconds: "),
        ({"robots.max_bytes": "10"}, r"^robots\.max_bytes: "),
        ({"user_agent.product": "pyflink crawler"}, r"^user_agent\.product: .*RFC 9309"),
        ({"user_agent.product": "pyflink-crawler/1.0"}, r"^user_agent\.product: "),
        ({"user_agent.product": ""}, r"^user_agent\.product: "),
        ({"user_agent.version": "1 beta"}, r"^user_agent\.version: "),
        ({"user_agent.version": ""}, r"^user_agent\.version: "),
        ({"user_agent.contact_url": "example.com"}, r"^user_agent\.contact_url: "),
        ({"user_agent.contact_url": "ftp://example.com/"}, r"^user_agent\.contact_url: "),
        ({"warc.prefix": ""}, r"^warc\.prefix: "),
        ({"warc.prefix": "a/b"}, r"^warc\.prefix: "),
        ({"warc.max_file_bytes": "1000"}, r"^warc\.max_file_bytes: "),
        ({"crawl.max_pages": "-1"}, r"^crawl\.max_pages: "),
        ({"crawl.idle_seconds": "-1"}, r"^crawl\.idle_seconds: "),
        ({"crawl.parallelism": "0"}, r"^crawl\.parallelism: "),
        ({"crawl.vnodes": "40000"}, r"^crawl\.vnodes: "),
        ({"crawl.progress_seconds": "0"}, r"^crawl\.progress_seconds: "),
        ({"crawl.parallelism": "300"}, r"^crawl\.parallelism: 300 exceeds crawl\.vnodes \(256\)"),
        ({"crawl.vnodes": "8", "crawl.parallelism": "9"}, r"^crawl\.parallelism: .*vnodes"),
        ({"crawl.output_dir": ""}, r"^crawl\.output_dir: "),
        ({"crawl.flink_bind_address": "localhost"},
         r"^crawl\.flink_bind_address: must be an IPv4 address \(127\.0\.0\.1: this machine"),
        ({"crawl.flink_bind_address": "::1"}, r"^crawl\.flink_bind_address: "),
        ({"crawl.flink_bind_address": "127.0.0.256"}, r"^crawl\.flink_bind_address: "),
        ({"crawl.flink_bind_address": ""}, r"^crawl\.flink_bind_address: "),
        ({"crawl.local_runtime": "yarn"},
         r"^crawl\.local_runtime: must be auto, minicluster or taskmanagers"),
        ({"crawl.parallelism": "17"}, r"^crawl\.parallelism: 17 exceeds crawldb\.partitions"),
        ({"crawldb.partitions": "300"}, r"^crawldb\.partitions: 300 exceeds crawl\.vnodes"),
        ({"crawldb.buffer_ops": "0"}, r"^crawldb\.buffer_ops: "),
        ({"crawldb.buffer_payload_bytes": "100"}, r"^crawldb\.buffer_payload_bytes: "),
        ({"crawldb.flush_seconds": "0"}, r"^crawldb\.flush_seconds: "),
        ({"crawldb.file_grace_seconds": "-1"}, r"^crawldb\.file_grace_seconds: "),
        ({"crawldb.fsync": "maybe"}, r"^crawldb\.fsync: "),
        ({"scope.follow": "everywhere"}, r"^scope\.follow: must be one of any, host"),
        ({"scope.follow": "listed"}, r"^scope\.domains: must list at least one domain"),
        ({"scope.exclude": ["a(b"]}, r"^scope\.exclude: 'a\(b' is not a regular expression"),
        ({"scope.schemes": "ftp"}, r"^scope\.schemes: "),
        ({"scope.schemes": [1]}, r"^scope\.schemes: must be a list of strings"),
        ({"scope.max_url_length": "5000"}, r"^scope\.max_url_length: "),
        ({"scope.max_depth": "-1"}, r"^scope\.max_depth: "),
        ({"crawl.max_pages": "ten"}, r"^crawl\.max_pages: must be an integer"),
        ({"crawl.max_pages": "1.5"}, r"^crawl\.max_pages: must be an integer"),
        ({"crawl.max_pages": 1.5}, r"^crawl\.max_pages: must be an integer"),
        ({"crawl.max_pages": True}, r"^crawl\.max_pages: must be an integer, got True"),
        ({"crawl.max_pages": None}, r"^crawl\.max_pages: must be an integer"),
        ({"crawl.idle_seconds": False}, r"^crawl\.idle_seconds: must be a number, got False"),
        ({"crawl.idle_seconds": "soon"}, r"^crawl\.idle_seconds: must be a number"),
        ({"crawl.idle_seconds": [1]}, r"^crawl\.idle_seconds: must be a number"),
        ({"warc.prefix": ["a"]}, r"^warc\.prefix: must be a string"),
        ({"warc.operator": True}, r"^warc\.operator: must be a string"),
        ({"parse.follow": "a, images"}, r"^parse\.follow: 'images' is not a link kind \(known"),
        ({"parse.follow": [1]}, r"^parse\.follow: must be a list of strings"),
        ({"parse.max_outlinks": "-1"}, r"^parse\.max_outlinks: must be an integer from 0 "),
        ({"parse.max_outlinks": "2000000"}, r"^parse\.max_outlinks: "),
        ({"parse.obey_nofollow": "sometimes"}, r"^parse\.obey_nofollow: must be true or false"),
        ({"crawl.max_page": "1"}, r"^crawl\.max_page: unknown key"),
        ({"crawler.max_pages": "1"}, r"^crawler\.max_pages: unknown section"),
        ({"max_pages": "1"}, r"^max_pages: expected section\.key"),
        ({"crawl.fetch.proxy": "x"}, r"^crawl\.fetch\.proxy: expected section\.key"),
    ],
)
def test_invalid_override_names_the_key(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(overrides=overrides)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("crawl: [\n", "not valid YAML"),
        ("crawl:\n  max_pages: 1\n max_pages: 2\n", "not valid YAML"),
        ("- crawl\n- fetch\n", "top level must be a mapping"),
        ("just a string\n", "top level must be a mapping"),
        ("crawl: 5\n", r"^crawl: must be a mapping of keys"),
        ("crawl:\n  - max_pages\n", r"^crawl: must be a mapping of keys"),
        ("crawling:\n  max_pages: 1\n", r"^crawling: unknown section"),
        ("crawl:\n  max_page: 1\n", r"^crawl\.max_page: unknown key"),
        ("crawl:\n  max_pages: yes\n", r"^crawl\.max_pages: must be an integer, got True"),
        ("crawl:\n  max_pages: -5\n", r"^crawl\.max_pages: "),
        ("politeness:\n  delay_seconds: -1\n", r"^politeness\.delay_seconds: "),
        ("fetch:\n  proxy: {host: x}\n", r"^fetch\.proxy: must be a string"),
    ],
)
def test_invalid_file_is_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "crawler.yaml"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(ConfigError, match=message):
        load_config(path)


@pytest.mark.parametrize("text", ["", "# only comments\n", "crawl:\n", "crawl: {}\n"])
def test_empty_file_or_section_gives_the_defaults(tmp_path: Path, text: str) -> None:
    path = tmp_path / "crawler.yaml"
    path.write_text(text, encoding="utf-8")

    assert load_config(path) == Config()


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read configuration file .*nowhere.yaml"):
        load_config(tmp_path / "nowhere.yaml")


def test_validate_checks_a_config_built_in_code() -> None:
    config = Config(crawl=CrawlSection(parallelism=4, vnodes=2))

    with pytest.raises(ConfigError, match=r"^crawl\.parallelism: "):
        config.validate()


# -- user agent -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "header"),
    [
        (UserAgentSection(), "pyflink-crawler/0.1 (+https://github.com/pyflink-crawler/pyflink-crawler)"),
        (
            UserAgentSection("my_bot", "2.0-rc1", "mailto:ops@example.org"),
            "my_bot/2.0-rc1 (+mailto:ops@example.org)",
        ),
    ],
)
def test_user_agent_header(section: UserAgentSection, header: str) -> None:
    assert section.header == header


def test_classes_built_from_a_section_default_to_the_sections_defaults() -> None:
    from crawl.archive.warc import DEFAULT_MAX_FILE_BYTES
    from crawl.content.neardup import NearDuplicateDetector
    from crawl.report.build import ReportSettings
    from crawl.report.log_figures import SpacingRules

    config = Config()
    detector = NearDuplicateDetector()
    assert (detector.k, detector.capacity, detector.min_features,
            detector.min_exact_features) == (
        config.neardup.max_distance, config.neardup.capacity, config.neardup.min_features,
        config.neardup.min_exact_features)
    plain = LinkExtractor()
    built = LinkExtractor.from_section(config.parse, config.user_agent.product)
    assert (plain._follow, plain._max, plain._obey_nofollow, plain._token) == (
        built._follow, built._max, built._obey_nofollow, built._token)
    assert ReportSettings() == ReportSettings.from_config(config, ReportSettings().origin)
    assert SpacingRules() == SpacingRules(
        delay_seconds=config.politeness.delay_seconds,
        response_time_factor=config.politeness.response_time_factor)
    assert DEFAULT_MAX_FILE_BYTES == config.warc.max_file_bytes


def test_user_agent_header_starts_with_the_product_token() -> None:
    config = load_config(overrides={"user_agent.product": "Example-Bot"})

    assert config.user_agent.header.split("/", 1)[0] == "Example-Bot"


def test_url_settings_build_the_normaliser_and_are_fixed_for_the_crawl() -> None:
    from crawl.urls.normalize import DEFAULT_NORMALIZER, NORMALIZATION_VERSION

    assert UrlNormalizer.from_section(Config().urls) == DEFAULT_NORMALIZER
    config = load_config(overrides={"urls.sort_query": "true", "urls.strip_params": "sid"})
    normalizer = UrlNormalizer.from_section(config.urls)
    assert normalizer.normalize("http://a.org/p?z=1&sid=9&a=2") == "http://a.org/p?a=2&z=1"
    assert normalizer.normalize("http://a.org/p?jsessionid=1") == "http://a.org/p?jsessionid=1"
    assert normalization_settings(config.urls) == {
        "urls.normalization_version": NORMALIZATION_VERSION,
        "urls.sort_query": True,
        "urls.strip_params": ["sid"],
    }
    with pytest.raises(ConfigError, match=r"^urls\.strip_params: 'a=b'"):
        load_config(overrides={"urls.strip_params": ["a=b"]})


@pytest.mark.parametrize(
    ("entry", "rule"),
    [
        ("www.example.org:80:10.1.2.3:8080", ConnectTo("www.example.org", 80, "10.1.2.3", 8080)),
        ("WWW.Example.org.:80:10.1.2.3:", ConnectTo("www.example.org", 80, "10.1.2.3", None)),
        ("::[::1]:8080", ConnectTo("", None, "::1", 8080)),
        ("a.test::192.0.2.1:", ConnectTo("a.test", None, "192.0.2.1", None)),
    ],
)
def test_connect_to_rules_are_parsed_like_curls(entry: str, rule: ConnectTo) -> None:
    config = load_config(None, {"fetch.connect_to": entry})
    assert config.fetch.connect_to_rules == (rule,)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("a.test:80:b.test:81", "'b.test' is not an IP address"),
        ("a.test:80:10.0.0.1", "is not HOST:PORT:ADDRESS:PORT"),
        ("a.test:http:10.0.0.1:80", "is not HOST:PORT:ADDRESS:PORT"),
        ("a.test:80:10.0.0.1:70000", "port 70000 is out of range"),
        ("a.test:80:::1:80", "is not HOST:PORT:ADDRESS:PORT"),
    ],
)
def test_bad_connect_to_rules_are_refused_at_start(entry: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"fetch.connect_to: .*{re.escape(message)}"):
        load_config(None, {"fetch.connect_to": entry})


def test_a_connect_to_rule_matches_its_host_and_port() -> None:
    rule = ConnectTo("a.test", 80, "10.0.0.1", None)
    assert rule.matches("a.test", 80)
    assert rule.matches("A.TEST", 80)
    assert not rule.matches("a.test", 8080)
    assert not rule.matches("b.test", 80)
    assert ConnectTo("", None, "10.0.0.1", None).matches("anything.test", 1234)


def test_parse_settings_build_the_link_extractor_for_our_token() -> None:
    from crawl.model import FetchResult
    from crawl.status import Status

    config = load_config(overrides={"user_agent.product": "mybot", "parse.follow": "a",
                                    "parse.max_outlinks": "1"})
    extractor = LinkExtractor.from_section(
        config.parse, config.user_agent.product, UrlNormalizer.from_section(config.urls))
    body = (b"<meta name=mybot content=noindex><img src=/i><a href='/a;jsessionid=1'>a</a>"
            b"<a href=/b>b</a>")
    page = FetchResult(url="http://a.test/", status=Status.FETCHED, reason="", http_status=200,
                       response_headers=[("Content-Type", "text/html")], body=body)
    parsed = extractor.extract(page)
    assert parsed.noindex
    assert parsed.links == [("http://a.test/a", "L")]
    assert parsed.rejected["parse:over-limit"] == 1


# -- the fetch section ------------------------------------------------------------------------


def test_fetch_defaults() -> None:
    fetch = FetchSection()
    assert fetch.allow_private_addresses is False
    assert (fetch.dns_cache_seconds, fetch.dns_negative_cache_seconds) == (300.0, 60.0)
    assert fetch.max_decompression_ratio == 100.0
    assert (fetch.max_header_bytes, fetch.max_headers) == (16384, 256)
    assert fetch.accept_content_types == ()


def test_fetch_overrides_are_coerced() -> None:
    config = load_config(overrides={
        "fetch.allow_private_addresses": "true",
        "fetch.accept_content_types": "text/html, text/*",
        "fetch.max_decompression_ratio": "0",
        "fetch.dns_negative_cache_seconds": "0",
    })
    assert config.fetch.allow_private_addresses is True
    assert config.fetch.accept_content_types == ("text/html", "text/*")
    assert config.fetch.max_decompression_ratio == 0.0


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("dns_cache_seconds", "-1"),
        ("dns_negative_cache_seconds", "-0.5"),
        ("max_decompression_ratio", "0.5"),
        ("max_decompression_ratio", "-3"),
        ("max_header_bytes", "100"),
        ("max_header_bytes", "99999999"),
        ("max_headers", "0"),
        ("accept_content_types", "html"),
        ("accept_content_types", "text/html;charset=utf-8"),
        ("accept_content_types", "*/html"),
        ("allow_private_addresses", "maybe"),
    ],
)
def test_bad_fetch_values_name_their_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=rf"^fetch\.{key}: "):
        load_config(overrides={f"fetch.{key}": value})
