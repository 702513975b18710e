"""The stateless URL policy: scope, filters and path traps, as spec tables."""

from __future__ import annotations

import pickle
import re

import pytest

from crawl.config import ConfigError, ScopeSection, load_config
from crawl.urls.scope import UrlPolicy, registered_domain

PAGE = "http://www.example.com/a/page"


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("www.example.com", "example.com"),
        ("example.com", "example.com"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("h3.synth.test", "synth.test"),
        ("s1.farm-spam.test", "farm-spam.test"),
        ("user.github.io", "user.github.io"),  # a private suffix: each user is a domain
        ("xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]", "::1"),
        ("[::1]:8080", "::1"),
        ("127.0.0.1:8080", "127.0.0.1"),
        ("www.example.com:8443", "example.com"),
        ("localhost", "localhost"),
        ("co.uk", "co.uk"),
    ],
)
def test_registered_domain(host: str, domain: str) -> None:
    assert registered_domain(host) == domain


# (policy settings, url, hops, via, expected reason or None)
CASES = [
    # defaults: everything http(s) within the length limit
    ({}, "http://x.example.org/", "", "", None),
    ({}, "https://x.example.org/a?b=c", "LLL", PAGE, None),
    ({"schemes": ("https",)}, "http://x.example.org/", "", "", "scope:scheme"),
    ({"schemes": ("https",)}, "https://x.example.org/", "", "", None),
    ({"max_url_length": 30}, "http://x.example.org/" + "a" * 9, "", "", None),
    ({"max_url_length": 30}, "http://x.example.org/" + "a" * 10, "", "", "scope:too-long"),
    # depth: hops from a seed
    ({"max_depth": 2}, "http://x.example.org/", "LR", PAGE, None),
    ({"max_depth": 2}, "http://x.example.org/", "LRL", PAGE, "scope:too-deep"),
    ({"max_depth": 0}, "http://x.example.org/", "L" * 50, PAGE, None),
    # follow: relative to the linking page; seeds always pass
    ({"follow": "host"}, "http://www.example.com/b", "L", PAGE, None),
    ({"follow": "host"}, "http://img.example.com/b", "L", PAGE, "scope:external-host"),
    ({"follow": "host"}, "http://other.org/", "", "", None),
    ({"follow": "host"}, "http://www.example.com/", "R", "http://example.com/", None),
    ({"follow": "host"}, "http://example.org/", "LR", PAGE, "scope:external-domain"),
    ({"follow": "domain"}, "http://img.example.com/b", "L", PAGE, None),
    ({"follow": "domain"}, "https://example.com/", "L", PAGE, None),
    ({"follow": "domain"}, "http://example.org/", "L", PAGE, "scope:external-domain"),
    ({"follow": "domain"}, "http://a.example.co.uk/", "L", "http://b.example.co.uk/", None),
    ({"follow": "domain"}, "http://other.co.uk/", "L", "http://b.example.co.uk/",
     "scope:external-domain"),
    ({"follow": "domain"}, "http://bob.github.io/", "L", "http://alice.github.io/",
     "scope:external-domain"),
    ({"follow": "listed", "domains": ("example.com",)}, "http://deep.www.example.com/", "L",
     "http://elsewhere.net/", None),
    ({"follow": "listed", "domains": ("example.com",)}, "http://example.com/", "", "", None),
    ({"follow": "listed", "domains": ("example.com",)}, "http://badexample.com/", "L", PAGE,
     "scope:unlisted-domain"),
    ({"follow": "listed", "domains": (".example.com.", "b.org")}, "http://x.b.org/", "", "",
     None),
    ({"follow": "listed", "domains": ("example.com",)}, "http://other.org/", "", "",
     "scope:unlisted-domain"),
    # extensions of the last path segment, case-insensitive
    ({"skip_extensions": ("jpg", ".PNG")}, "http://x.org/a/photo.JPG", "L", PAGE,
     "scope:extension"),
    ({"skip_extensions": ("jpg", ".PNG")}, "http://x.org/a/icon.png", "L", PAGE,
     "scope:extension"),
    ({"skip_extensions": ("jpg",)}, "http://x.org/a.jpg/page", "L", PAGE, None),
    ({"skip_extensions": ("jpg",)}, "http://x.org/page?file=a.jpg", "L", PAGE, None),
    ({"skip_extensions": ("jpg",)}, "http://x.org/jpg", "L", PAGE, None),
    # patterns, searched in the URL
    ({"exclude": (r"/cgi-bin/", r"[?&]print=1")}, "http://x.org/cgi-bin/x", "L", PAGE,
     "scope:excluded"),
    ({"exclude": (r"/cgi-bin/", r"[?&]print=1")}, "http://x.org/p?a=2&print=1", "L", PAGE,
     "scope:excluded"),
    ({"exclude": (r"/cgi-bin/",)}, "http://x.org/bin/x", "L", PAGE, None),
    ({"include": (r"^https?://[^/]*\.edu/",)}, "http://cs.mit.edu/a", "L", PAGE, None),
    ({"include": (r"^https?://[^/]*\.edu/",)}, "http://mit.com/a", "L", PAGE,
     "scope:not-included"),
    ({"include": ("/news/",), "exclude": ("/news/old/",)}, "http://x.org/news/old/1", "L", PAGE,
     "scope:excluded"),
    # path traps
    ({"max_path_segments": 4}, "http://x.org/a/b/c/d", "L", PAGE, None),
    ({"max_path_segments": 4}, "http://x.org/a/b/c/d/e", "L", PAGE, "trap:too-many-segments"),
    ({"max_segment_repeats": 2}, "http://x.org/loop/sub/sub/", "L", PAGE, None),
    ({"max_segment_repeats": 2}, "http://x.org/loop/sub/sub/sub/", "L", PAGE,
     "trap:repeated-segment"),
    ({"max_segment_repeats": 2}, "http://x.org/a/b/a/b/a/b", "L", PAGE, "trap:repeated-segment"),
    # a run of segments back to back (one segment twice is no run: dates, /news/news/)
    ({}, "http://x.org/support/faq/support/faq/q-1.html", "L", PAGE, "trap:repeated-run"),
    ({}, "http://x.org/x/a/b/c/a/b/c", "L", PAGE, "trap:repeated-run"),
    ({}, "http://x.org/2015/01/01/news/news/", "L", PAGE, None),
    ({}, "http://x.org/a/b/x/a/b/", "L", PAGE, None),
    ({"max_run_repeats": 2}, "http://x.org/support/faq/support/faq/q-1.html", "L", PAGE, None),
    ({"max_run_repeats": 2}, "http://x.org/s/f/s/f/s/f/q.html", "L", PAGE, "trap:repeated-run"),
    ({"max_run_repeats": 0}, "http://x.org/s/f/s/f/s/f/q.html", "L", PAGE, None),
    ({"max_query_params": 3}, "http://x.org/s?a=1&b=2&c=3", "L", PAGE, None),
    ({"max_query_params": 3}, "http://x.org/s?a=1&b=2&c=3&d=4", "L", PAGE,
     "trap:too-many-params"),
    ({"max_query_params": 0}, "http://x.org/s?" + "&".join(f"p{i}=1" for i in range(99)), "L",
     PAGE, None),
    # the cheapest check decides first
    ({"schemes": ("https",), "max_depth": 1}, "http://x.org/", "LL", PAGE, "scope:scheme"),
]


@pytest.mark.parametrize(("settings", "url", "hops", "via", "reason"), CASES)
def test_policy_table(settings: dict, url: str, hops: str, via: str, reason: str | None) -> None:
    assert UrlPolicy(ScopeSection(**settings)).check(url, hops, via) == reason


def test_table_covers_every_reason() -> None:
    source = open(UrlPolicy.check.__code__.co_filename, encoding="utf-8").read()
    reasons = set(re.findall(r'"((?:scope|trap):[a-z-]+)"', source))
    assert reasons == {case[-1] for case in CASES if case[-1]}


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="follow must be one of"):
        UrlPolicy(ScopeSection(follow="nowhere"))
    with pytest.raises(re.error):
        UrlPolicy(ScopeSection(exclude=("a(b",)))


def test_the_policy_survives_pickling_for_the_job() -> None:
    policy = UrlPolicy(ScopeSection(follow="domain", exclude=("/x/",), skip_extensions=("jpg",)))
    copy = pickle.loads(pickle.dumps(policy))
    assert copy.section == policy.section
    assert copy.check("http://a.org/x/1", "L", "http://a.org/") == "scope:excluded"


def test_configuration_builds_the_policy() -> None:
    config = load_config(overrides={"scope.follow": "listed", "scope.domains": "a.org, b.org",
                                    "scope.skip_extensions": "zip"})
    policy = UrlPolicy(config.scope)
    assert policy.section.domains == ("a.org", "b.org")
    assert policy.check("http://www.b.org/f.zip", "L", "http://a.org/") == "scope:extension"
    assert policy.check("http://c.org/", "L", "http://a.org/") == "scope:unlisted-domain"
    with pytest.raises(ConfigError, match=r"^scope\.follow"):
        load_config(overrides={"scope.follow": "?"})
