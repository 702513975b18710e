"""robots.txt: what a fetch means for a host (record) and what the text allows (policy, RFC 9309).

The last tests hold the policy against the synthetic web's own reading of every robots.txt it
serves, for every page it has.
"""

from __future__ import annotations

import pytest
from protego import Protego

from crawl.config import PolitenessSection, RobotsSection
from crawl.frontier.robots import (
    RobotsPolicy,
    RobotsRecord,
    record_from_fetch,
    rfc_lines,
    robots_url,
    unparseable,
)
from synthweb import RobotsKind, SyntheticWeb, WebConfig
from synthweb.urls import split_url

TOKEN = "pyflink-crawler"
CONFIG = RobotsSection(ttl_seconds=3600.0, unavailable_retry_seconds=60.0, max_bytes=2048)
NOW = 1_700_000_000_000
TTL_MS = 3_600_000
RETRY_MS = 60_000


def _policy(text: str | bytes, status: int = 200, max_delay: float = 30.0) -> RobotsPolicy:
    body = text.encode("utf-8") if isinstance(text, str) else text
    return RobotsPolicy(record_from_fetch(status, body, "", NOW, CONFIG), TOKEN, max_delay)


# -- the record of a fetch --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "reason", "available", "expires", "kept_reason"),
    [
        (200, "", True, NOW + TTL_MS, ""),
        (204, "", True, NOW + TTL_MS, ""),
        (301, "", True, NOW + TTL_MS, ""),
        (404, "", True, NOW + TTL_MS, ""),
        (410, "", True, NOW + TTL_MS, ""),
        (403, "", True, NOW + TTL_MS, ""),
        (401, "", True, NOW + TTL_MS, ""),
        (500, "", False, NOW + RETRY_MS, "http:500"),
        (503, "", False, NOW + RETRY_MS, "http:503"),
        (599, "http:599", False, NOW + RETRY_MS, "http:599"),
        (0, "timeout:read", False, NOW + RETRY_MS, "timeout:read"),
        (0, "dns:unresolved", False, NOW + RETRY_MS, "dns:unresolved"),
        (0, "", False, NOW + RETRY_MS, "http:0"),
    ],
)
def test_record_from_fetch(
    status: int, reason: str, available: bool, expires: int, kept_reason: str
) -> None:
    record = record_from_fetch(status, b"User-agent: *\nDisallow: /\n", reason, NOW, CONFIG)

    assert record.http_status == status
    assert record.available is available
    assert record.fetched_ms == NOW
    assert record.expires_ms == expires
    assert record.reason == kept_reason
    assert record.body == ("User-agent: *\nDisallow: /\n" if 200 <= status < 300 else "")


@pytest.mark.parametrize(
    ("status", "now", "expired"),
    [
        (200, NOW, False),
        (200, NOW + TTL_MS - 1, False),
        (200, NOW + TTL_MS, True),
        (404, NOW + TTL_MS - 1, False),
        (404, NOW + TTL_MS, True),
        (503, NOW + RETRY_MS - 1, False),
        (503, NOW + RETRY_MS, True),
        (0, NOW + RETRY_MS, True),
    ],
)
def test_record_expires_after_ttl_or_retry(status: int, now: int, expired: bool) -> None:
    record = record_from_fetch(status, b"", "timeout:read" if not status else "", NOW, CONFIG)

    assert record.expired(now) is expired


def test_record_body_is_cut_at_max_bytes() -> None:
    body = b"User-agent: *\n" + b"#" * 3000 + b"\nDisallow: /\n"

    record = record_from_fetch(200, body, "", NOW, CONFIG)

    assert record.body == "User-agent: *\n"  # the comment cut at the limit is left out
    assert RobotsPolicy(record, TOKEN, 30.0).allows_path("/anything")


def test_record_body_cut_inside_a_character_drops_that_line() -> None:
    head = b"User-agent: *\nDisallow: /a\n#x"
    body = head + "\u00e9".encode() * 2000
    assert (CONFIG.max_bytes - len(head)) % 2 == 1  # the cut falls inside an "\u00e9"

    record = record_from_fetch(200, body, "", NOW, CONFIG, "length")

    assert record.body == "User-agent: *\nDisallow: /a\n"
    assert not RobotsPolicy(record, TOKEN, 30.0).allows_path("/a")


def _cut_at(tail: str, rest: str, limit: int = CONFIG.max_bytes) -> bytes:
    """A robots.txt whose first ``limit`` bytes end with ``tail``, ``rest`` after them: a
    group for every robot, comment lines up to the cut."""
    head = "User-agent: *\nDisallow: /archive/1993/zz-000001/\n"
    room = limit - len(head) - len(tail)
    filler = "".join(f"#{'.' * 78}\n" for _ in range(room // 80)) + "#" * (room % 80 - 1) + "\n"
    body = (head + filler + tail).encode()
    assert len(body) == limit
    return body + rest.encode()


ARCHIVED = "/archive/1993/zz-006033/"

# (the text up to the cut, the text after it, the last line's path is disallowed)
CUTS = [
    # cut in the middle of a line: "Disallow: /archive/1993/zz-006033/" would read "Disallow: /"
    ("Disallow: /", "archive/1993/zz-006033/\nDisallow: /more/\n", False),
    (f"Disallow: {ARCHIVED[:-1]}", "/\n", False),
    # cut right after a line end by chance: every line before it is whole
    (f"Disallow: {ARCHIVED}\n", "Disallow: /more/\n", True),
    # CRLF line ends: cut between CR and LF (the line is whole), and inside a line
    (f"Disallow: {ARCHIVED}\r", "\nDisallow: /more/\r\n", True),
    ("Disallow: /x\r\nDisallow: /", "archive/1993/zz-006033/\r\n", False),
    # CR alone ends a line too
    (f"Disallow: {ARCHIVED}\r", "Disallow: /more/\r", True),
    ("Disallow: /x\rDisallow: /", "archive/1993/zz-006033/\r", False),
]


@pytest.mark.parametrize(("tail", "rest", "whole"), CUTS)
def test_a_line_cut_at_max_bytes_is_left_out(tail: str, rest: str, whole: bool) -> None:
    body = _cut_at(tail, rest)
    # As the fetcher hands it over: the first max_bytes, marked cut (and longer, cut here).
    for fetched, truncated in ((body[: CONFIG.max_bytes], "length"), (body, "")):
        policy = RobotsPolicy(
            record_from_fetch(200, fetched, "", NOW, CONFIG, truncated), TOKEN, 30.0
        )

        assert policy.allows_path("/p/1")  # the site never disallowed it
        assert not policy.allows_path("/archive/1993/zz-000001/x")
        assert policy.allows_path(f"{ARCHIVED}x") is not whole
        assert policy.allows_path("/more/x")  # beyond the limit


def test_a_cut_body_without_a_line_end_keeps_nothing() -> None:
    body = b"User-agent: *" + b" " * CONFIG.max_bytes + b"\nDisallow: /\n"

    record = record_from_fetch(200, body[: CONFIG.max_bytes], "", NOW, CONFIG, "length")

    assert record.body == ""
    assert RobotsPolicy(record, TOKEN, 30.0).allows_path("/x")


@pytest.mark.parametrize("size", [100, CONFIG.max_bytes])
def test_the_last_line_of_a_whole_body_is_kept_without_a_line_end(size: int) -> None:
    body = b"User-agent: *\n" + b"#" * (size - 26) + b"\nDisallow: /"
    assert len(body) == size

    record = record_from_fetch(200, body, "", NOW, CONFIG)

    assert record.body.endswith("\nDisallow: /")
    assert not RobotsPolicy(record, TOKEN, 30.0).allows_path("/x")


def test_a_body_cut_by_a_timeout_loses_its_last_line_too() -> None:
    record = record_from_fetch(200, b"User-agent: *\nDisallow: /a/\nDisallow: /", "", NOW,
                               CONFIG, "time")

    assert record.body == "User-agent: *\nDisallow: /a/\n"


def test_record_body_strips_the_bom_and_survives_bad_utf8() -> None:
    body = b"\xef\xbb\xbfUser-agent: *\nDisallow: /\xff\n"

    record = record_from_fetch(200, body, "", NOW, CONFIG)

    assert record.body == "User-agent: *\nDisallow: /\ufffd\n"


@pytest.mark.parametrize(
    ("host", "scheme", "url"),
    [
        ("example.com", "http", "http://example.com/robots.txt"),
        ("example.com:8080", "http", "http://example.com:8080/robots.txt"),
        ("example.com", "https", "https://example.com/robots.txt"),
    ],
)
def test_robots_url(host: str, scheme: str, url: str) -> None:
    assert robots_url(host, scheme) == url


# -- the policy: RFC 9309 ---------------------------------------------------------------------

OURS_AND_STAR = (
    "User-agent: *\nDisallow: /\n\n"
    "User-agent: otherbot\nAllow: /\n\n"
    "User-agent: pyflink-crawler\nDisallow: /no-bots/\n"
)
SHOUTING = "User-agent: *\nDisallow: /for-bots/\n\nUser-agent: PYFLINK-CRAWLER\nDisallow: /no/\n"
LONGEST = "User-agent: *\nDisallow: /private/\nAllow: /private/public/\n"
LONGEST_REVERSED = "User-agent: *\nAllow: /private/public/\nDisallow: /private/\n"
TIE = "User-agent: *\nDisallow: /p/1\nAllow: /*/1\n"
SAME_RULE = "User-agent: *\nDisallow: /a\nAllow: /a\n"
WILDCARDS = "User-agent: *\nDisallow: /*.txt$\nDisallow: /exact$\nDisallow: /*/secret\n"
BOM_CRLF = "\ufeffuser-AGENT:   *   \r\n# comment\r\nDisallow:/x   # why\r\nNoindex: /p/\r\n"
HTML = (
    "<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n"
    "<body><h1>Welcome</h1><p>Disallow: this page</p></body></html>\n"
)

# (robots.txt text, path, allowed for "pyflink-crawler")
VERDICTS = [
    # our product token's group, not "*", and not another bot's
    (OURS_AND_STAR, "/", True),
    (OURS_AND_STAR, "/page", True),
    (OURS_AND_STAR, "/no-bots/x", False),
    ("User-agent: otherbot\nDisallow: /\n", "/page", True),
    ("User-agent: *\nDisallow: /\n\nUser-agent: otherbot\nAllow: /\n", "/page", False),
    ("User-agent: otherbot\nUser-agent: pyflink-crawler\nDisallow: /x\n", "/x", False),
    # groups naming our token are merged
    ("User-agent: pyflink-crawler\nDisallow: /a\n\nUser-agent: pyflink-crawler\nDisallow: /b\n",
     "/b", False),
    # the token matches case-insensitively
    (SHOUTING, "/for-bots/x", True),
    (SHOUTING, "/no/x", False),
    ("User-agent: PyFlink-Crawler\nDisallow: /\n", "/x", False),
    # the longest match wins, whatever the order
    (LONGEST, "/private/x", False),
    (LONGEST, "/private/public/x", True),
    (LONGEST, "/privatex", True),
    (LONGEST_REVERSED, "/private/x", False),
    (LONGEST_REVERSED, "/private/public/x", True),
    # Allow wins a tie with Disallow
    (TIE, "/p/1", True),
    (TIE, "/p/12", True),
    (TIE, "/p/2", True),
    (SAME_RULE, "/a", True),
    # "$" anchors the end, "*" matches any run of characters
    (WILDCARDS, "/a.txt", False),
    (WILDCARDS, "/dir/b.txt", False),
    (WILDCARDS, "/a.txt?x=1", True),
    (WILDCARDS, "/a.txt/more", True),
    (WILDCARDS, "/exact", False),
    (WILDCARDS, "/exactly", True),
    (WILDCARDS, "/a/secret", False),
    (WILDCARDS, "/a/b/secret/c", False),
    (WILDCARDS, "/secret", True),
    ("User-agent: *\nDisallow: /a*b\n", "/ab", False),
    ("User-agent: *\nDisallow: /a*b\n", "/a/x/b", False),
    ("User-agent: *\nDisallow: /a*b\n", "/a", True),
    # paths are case-sensitive; queries are part of the path
    ("User-agent: *\nDisallow: /A\n", "/a", True),
    ("User-agent: *\nDisallow: /search?q=\n", "/search?q=x", False),
    ("User-agent: *\nDisallow: /search?q=\n", "/search", True),
    # percent-encoded unreserved characters compare equal to the character
    ("User-agent: *\nDisallow: /%7Euser\n", "/~user", False),
    # an empty Disallow disallows nothing
    ("User-agent: *\nDisallow:\n", "/", True),
    ("User-agent: *\nDisallow:\n", "/anything", True),
    ("User-agent: *\nDisallow: /\n", "/anything", False),
    # BOM, odd case and spacing, CRLF, comments and unknown directives
    (BOM_CRLF, "/x", False),
    (BOM_CRLF, "/p/1", True),
    # rules outside any group apply to nobody
    ("# nothing for robots\nDisallow: /\nCrawl-delay: 5\n", "/x", True),
    # garbage and HTML allow everything
    ("this is not a robots.txt at all\n\x00\x01 {}[]\n", "/x", True),
    (HTML, "/", True),
    (HTML, "/page", True),
    ("", "/x", True),
    ("\n\n   \n", "/x", True),
]


@pytest.mark.parametrize(("text", "path", "allowed"), VERDICTS)
def test_verdict(text: str, path: str, allowed: bool) -> None:
    verdict = _policy(text).verdict(f"http://example.com{path}")

    assert verdict == ((True, "") if allowed else (False, "robots:disallow"))


def test_garbage_bytes_allow_everything() -> None:
    policy = _policy(bytes(range(256)) * 3)

    assert policy.verdict("http://example.com/x") == (True, "")
    assert policy.crawl_delay_seconds == 0.0


#: Text Protego cannot parse: it raises on a lone surrogate (a rule's pattern is quoted as
#: UTF-8), as a robots.txt held by an earlier version or read otherwise than from bytes could.
UNPARSEABLE_TEXT = "User-agent: *\nDisallow: /private/\ud800\nCrawl-delay: 5\n"


def test_robots_txt_protego_cannot_parse_denies_everything() -> None:
    with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
        Protego.parse(rfc_lines(UNPARSEABLE_TEXT))
    policy = RobotsPolicy(RobotsRecord(200, UNPARSEABLE_TEXT, NOW, NOW + TTL_MS), TOKEN, 30.0)

    assert policy.unparseable
    for path in ("/", "/page", "/private/x"):
        assert policy.verdict(f"http://example.com{path}") == (
            False, "robots:unavailable:unparseable"
        )
    assert policy.crawl_delay_seconds == 0.0


def test_an_unparseable_record_is_unavailable_until_the_retry() -> None:
    record = record_from_fetch(200, b"User-agent: *\nDisallow: /x\n", "", NOW, CONFIG)

    judged = unparseable(record, NOW + 5, CONFIG)

    assert judged == RobotsRecord(200, "", NOW + 5, NOW + 5 + RETRY_MS, "unparseable")
    assert not judged.available
    policy = RobotsPolicy(judged, TOKEN, 30.0)
    assert not policy.unparseable  # nothing left to parse: the record says why
    assert policy.verdict("http://example.com/") == (False, "robots:unavailable:unparseable")


def test_a_url_the_rules_cannot_be_matched_against_is_denied() -> None:
    policy = _policy("User-agent: *\nDisallow: /private/\n")

    assert policy.verdict("http://example.com/\ud800") == (
        False, "robots:internal:UnicodeEncodeError"
    )
    assert policy.verdict("http://example.com/page") == (True, "")


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 301])
def test_4xx_allows_everything(status: int) -> None:
    policy = _policy("User-agent: *\nDisallow: /\n", status)

    assert policy.verdict("http://example.com/private/") == (True, "")
    assert policy.crawl_delay_seconds == 0.0


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (500, "", "robots:unavailable:http:500"),
        (503, "", "robots:unavailable:http:503"),
        (429, "", "robots:unavailable:http:429"),  # "slow down" is no licence to crawl all
        (0, "timeout:read", "robots:unavailable:timeout:read"),
        (0, "connect:refused", "robots:unavailable:connect:refused"),
    ],
)
def test_unavailable_robots_denies_everything(status: int, reason: str, expected: str) -> None:
    record = record_from_fetch(status, b"User-agent: *\nAllow: /\n", reason, NOW, CONFIG)
    policy = RobotsPolicy(record, TOKEN, 30.0)

    for path in ("/", "/page", "/robots.txt"):
        allowed, why = policy.verdict(f"http://example.com{path}")
        assert not allowed
        assert why.startswith("robots:unavailable")
        assert why == expected


def test_unavailable_record_built_by_hand_names_its_status() -> None:
    policy = RobotsPolicy(RobotsRecord(502, "", NOW, NOW + 1), TOKEN, 30.0)

    assert policy.verdict("http://example.com/") == (False, "robots:unavailable:502")


def test_policy_exposes_its_record() -> None:
    record = record_from_fetch(404, b"", "", NOW, CONFIG)

    assert RobotsPolicy(record, TOKEN, 30.0).record is record


def test_token_is_matched_whatever_its_case() -> None:
    record = record_from_fetch(200, b"User-agent: pyflink-crawler\nDisallow: /\n", "", NOW, CONFIG)

    assert not RobotsPolicy(record, "PyFlink-Crawler", 30.0).allows_path("/x")


# -- Crawl-delay ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "max_delay", "expected"),
    [
        ("User-agent: *\nCrawl-delay: 5\n", 30.0, 5.0),
        ("User-agent: *\nCrawl-delay: 0.5\n", 30.0, 0.5),
        ("User-agent: *\nCrawl-delay: 100\n", 30.0, 30.0),
        ("User-agent: *\nCrawl-delay: 100\n", 2.5, 2.5),
        ("User-agent: *\nCrawl-delay: 5\n", 0.0, 0.0),
        ("User-agent: *\nCrawl-delay: 0\n", 30.0, 0.0),
        ("User-agent: *\nCrawl-delay: -3\n", 30.0, 0.0),
        ("User-agent: *\nCrawl-delay: soon\n", 30.0, 0.0),
        ("User-agent: *\nCrawl-delay: inf\n", 30.0, 0.0),
        ("User-agent: *\nDisallow: /x\n", 30.0, 0.0),
        # our group applies, with its own delay or none
        ("User-agent: *\nCrawl-delay: 3\n\nUser-agent: pyflink-crawler\nCrawl-delay: 1\n",
         30.0, 1.0),
        ("User-agent: *\nCrawl-delay: 3\n\nUser-agent: pyflink-crawler\nDisallow: /x\n",
         30.0, 0.0),
        ("User-agent: otherbot\nCrawl-delay: 9\n", 30.0, 0.0),
        ("# outside any group\nCrawl-delay: 5\n", 30.0, 0.0),
    ],
)
def test_crawl_delay(text: str, max_delay: float, expected: float) -> None:
    assert _policy(text, max_delay=max_delay).crawl_delay_seconds == expected


@pytest.mark.parametrize("status", [404, 503, 0])
def test_crawl_delay_is_zero_without_robots(status: int) -> None:
    assert _policy("User-agent: *\nCrawl-delay: 5\n", status).crawl_delay_seconds == 0.0


# -- the synthetic web ------------------------------------------------------------------------

WEB = SyntheticWeb(WebConfig(seed=1, hosts=30))


def test_synthetic_web_has_every_kind_of_robots() -> None:
    kinds = {WEB.robots_rules(host).kind for host in WEB.host_names()}

    assert kinds == set(RobotsKind)


@pytest.mark.parametrize("host", WEB.host_names())
def test_policy_agrees_with_the_synthetic_web(host: str) -> None:
    robots = WEB.robots_rules(host)
    record = record_from_fetch(robots.status, robots.body, "", NOW, RobotsSection())
    policy = RobotsPolicy(record, TOKEN, PolitenessSection().max_crawl_delay_seconds)

    verdicts = {split_url(page.url)[1]: policy.verdict(page.url)[0] for page in WEB.pages(host)}

    expected = {path: robots.allowed(path, TOKEN) for path in verdicts}
    assert verdicts == expected, f"{robots.kind}/{robots.variant}"
    assert policy.crawl_delay_seconds == (robots.crawl_delay(TOKEN) or 0.0)


@pytest.mark.parametrize(
    ("value", "token"),
    [("FooBot/1.0", "FooBot"), ("Foo Bar", "Foo"), ("*", "*"), ("* # all", "*"),
     ("pyflink-crawler", "pyflink-crawler"), ("Foo_Bot2", "Foo_Bot")],
)
def test_a_user_agent_value_names_the_token_it_starts_with(value: str, token: str) -> None:
    assert rfc_lines(f"User-agent: {value}\nDisallow: /x\n").splitlines()[0] == (
        f"User-agent: {token}"
    )
    policy = _policy(f"User-agent: {value}\nDisallow: /x\n")  # we are pyflink-crawler
    assert policy.verdict("http://example.com/x")[0] is (token not in ("*", "pyflink-crawler"))
