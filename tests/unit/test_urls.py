"""URL normalisation (RFC 3986 section 6), link resolution, and partitioning by host."""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawl.urls.normalize import (
    DEFAULT_SESSION_PARAMS,
    MAX_URL_LENGTH,
    NORMALIZATION_VERSION,
    UrlError,
    UrlNormalizer,
    host_of,
    normalize,
    parent_directories,
    resolve,
    vnode_of,
)
from synthweb import SyntheticWeb, WebConfig, canonical_url
from synthweb.urls import page_identity

# (input, canonical form)
NORMALIZE = [
    # scheme and host case
    ("HTTP://Example.COM/", "http://example.com/"),
    ("hTtPs://WWW.Example.Org/Path", "https://www.example.org/Path"),
    ("http://EXAMPLE.com/A/B?Q=X", "http://example.com/A/B?Q=X"),
    # default port
    ("http://example.com:80/a", "http://example.com/a"),
    ("https://example.com:443/", "https://example.com/"),
    ("https://example.com:80/", "https://example.com:80/"),
    ("http://example.com:443/", "http://example.com:443/"),
    ("http://example.com:8080/", "http://example.com:8080/"),
    ("http://example.com:/", "http://example.com/"),
    # empty path, empty query
    ("http://example.com", "http://example.com/"),
    ("http://example.com?q=1", "http://example.com/?q=1"),
    ("http://example.com/a?", "http://example.com/a"),
    # dot segments (RFC 3986 section 5.2.4)
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com/a/b/..", "http://example.com/a/"),
    ("http://example.com/a/.", "http://example.com/a/"),
    ("http://example.com/../a", "http://example.com/a"),
    ("http://example.com/a/../../../b", "http://example.com/b"),
    ("http://example.com/./a/./", "http://example.com/a/"),
    ("http://example.com/a/%2E%2E/b", "http://example.com/b"),
    ("http://example.com/a.b/..c/d..", "http://example.com/a.b/..c/d.."),
    ("http://example.com/a//b", "http://example.com/a//b"),
    # percent-encoding: upper-case escapes, unreserved decoded, reserved kept
    ("http://example.com/%7euser", "http://example.com/~user"),
    ("http://example.com/%41%62%2d%5F%2e", "http://example.com/Ab-_."),
    ("http://example.com/a%2fb%3a", "http://example.com/a%2Fb%3A"),
    ("http://example.com/?q=%e2%82%ac", "http://example.com/?q=%E2%82%AC"),
    ("http://example.com/%", "http://example.com/%25"),
    ("http://example.com/%zz", "http://example.com/%25zz"),
    ("http://example.com/100%", "http://example.com/100%25"),
    # spaces, non-ASCII and unsafe characters encoded
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("http://example.com/?q=a b", "http://example.com/?q=a%20b"),
    ("http://example.com/caf\u00e9", "http://example.com/caf%C3%A9"),
    ("http://example.com/\u00fc?\u00fc=\u00fc", "http://example.com/%C3%BC?%C3%BC=%C3%BC"),
    ('http://example.com/a"b<c>', "http://example.com/a%22b%3Cc%3E"),
    ("http://example.com/a{b}|c^", "http://example.com/a%7Bb%7D%7Cc%5E"),
    ("http://example.com/;p=1?x=!$'()*+,;", "http://example.com/;p=1?x=!$'()*+,;"),
    # fragment dropped
    ("http://example.com/#frag", "http://example.com/"),
    ("http://example.com/a?b=1#c", "http://example.com/a?b=1"),
    ("http://example.com/a#b#c", "http://example.com/a"),
    # IDN hosts to punycode, trailing dot
    ("http://b\u00fccher.de/", "http://xn--bcher-kva.de/"),
    ("http://B\u00dcCHER.de/", "http://xn--bcher-kva.de/"),
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
    ("http://\u6771\u4eac.jp/", "http://xn--1lqs71d.jp/"),
    ("http://example.com./", "http://example.com/"),
    ("http://under_score.example/", "http://under_score.example/"),
    # IP literals
    ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/"),
    ("http://10.0.0.1:80/", "http://10.0.0.1/"),
    ("http://[::1]/", "http://[::1]/"),
    ("http://[2001:DB8::0:1]:8080/x", "http://[2001:db8::1]:8080/x"),
    ("http://[2001:db8:0:0:0:0:0:1]:80/", "http://[2001:db8::1]/"),
    # userinfo kept
    ("http://user:pw@Example.com/", "http://user:pw@example.com/"),
    ("http://us%65r@example.com:8080/", "http://user@example.com:8080/"),
    # query order and content kept
    ("http://example.com/?b=2&a=1&b=1", "http://example.com/?b=2&a=1&b=1"),
    ("http://example.com/?a=&=b&&", "http://example.com/?a=&=b&&"),
    # whitespace around and control characters inside
    ("  http://example.com/a \n", "http://example.com/a"),
    ("http://exa\tmple.com/a\nb\r", "http://example.com/ab"),
    # backslashes in the path
    ("http://example.com/a\\b\\c", "http://example.com/a/b/c"),
]

# (input, UrlError reason)
REJECT = [
    ("", "url:empty"),
    ("  \t\n", "url:empty"),
    ("mailto:webmaster@example.com", "url:scheme:mailto"),
    ("javascript:void(0)", "url:scheme:javascript"),
    ("tel:+1-555-0100", "url:scheme:tel"),
    ("data:text/plain,hello", "url:scheme:data"),
    ("ftp://example.com/pub/file.txt", "url:scheme:ftp"),
    ("example.com/a", "url:scheme:none"),
    ("//example.com/a", "url:scheme:none"),
    ("/relative/path", "url:scheme:none"),
    ("http://[bad", "url:unparseable"),
    ("http://[::1/", "url:unparseable"),
    ("http:", "url:no-host"),
    ("http://", "url:no-host"),
    ("http://user@/", "url:no-host"),
    ("http://example.com:0/", "url:bad-port"),
    ("http://example.com:99999/", "url:bad-port"),
    ("http://example.com:port/", "url:bad-port"),
    ("http://exa mple.com/", "url:bad-host"),
    ("http://exa$mple.com/", "url:bad-host"),
    ("http://-example.com/", "url:bad-host"),
    ("http://example-.com/", "url:bad-host"),
    ("http://a..b/", "url:bad-host"),
    ("http://" + "a" * 300 + ".com/", "url:bad-host"),
    ("http://999.1.1.1/", "url:bad-ipv4"),
    ("http://example.com/" + "x" * MAX_URL_LENGTH, "url:too-long"),
    ("http://example.com/?" + "\u00e9" * (MAX_URL_LENGTH // 4), "url:too-long"),
]


@pytest.mark.parametrize(("url", "expected"), NORMALIZE)
def test_normalize(url: str, expected: str) -> None:
    assert normalize(url) == expected


@pytest.mark.parametrize(("url", "expected"), NORMALIZE)
def test_normalize_is_idempotent(url: str, expected: str) -> None:
    assert normalize(normalize(url)) == normalize(url)


@pytest.mark.parametrize(("url", "reason"), REJECT, ids=[reason for _, reason in REJECT])
def test_normalize_rejects(url: str, reason: str) -> None:
    with pytest.raises(UrlError, match=f"^{reason}: ") as caught:
        normalize(url)

    assert caught.value.reason == reason
    assert caught.value.url == url


def test_url_error_message_is_bounded() -> None:
    url = "http://example.com/" + "x" * 5000

    with pytest.raises(UrlError) as caught:
        normalize(url)

    assert len(str(caught.value)) < 300


def test_longest_accepted_url() -> None:
    url = "http://example.com/" + "x" * (MAX_URL_LENGTH - len("http://example.com/"))

    assert normalize(url) == url


# -- resolve ----------------------------------------------------------------------------------

BASE = "http://Example.com/a/b/c?x=1#top"

# (href found on BASE, absolute canonical URL)
RESOLVE = [
    ("d", "http://example.com/a/b/d"),
    ("./d", "http://example.com/a/b/d"),
    ("../d", "http://example.com/a/d"),
    ("../../../../d", "http://example.com/d"),
    (".", "http://example.com/a/b/"),
    ("..", "http://example.com/a/"),
    ("/d", "http://example.com/d"),
    ("?y=2", "http://example.com/a/b/c?y=2"),
    ("g;x", "http://example.com/a/b/g;x"),
    ("//Other.ORG/p", "http://other.org/p"),
    ("//other.org", "http://other.org/"),
    ("//other.org:80/p#f", "http://other.org/p"),
    ("https://x.org", "https://x.org/"),
    ("HTTP://EXAMPLE.com:80/z", "http://example.com/z"),
    # backslashes, as browsers read them in http(s) URLs
    ("\\d\\e", "http://example.com/d/e"),
    ("\\\\other.org\\x", "http://other.org/x"),
    ("d\\..\\e", "http://example.com/a/b/e"),
    # surrounding whitespace stripped, tabs and line breaks inside removed
    (" d ", "http://example.com/a/b/d"),
    ("\t\n d \r\n", "http://example.com/a/b/d"),
    ("d\te", "http://example.com/a/b/de"),
    ("/p\r\n/q", "http://example.com/p/q"),
    ("\n//other.org/\tp", "http://other.org/p"),
    # spaces inside are encoded, not removed
    ("d e", "http://example.com/a/b/d%20e"),
    ("\u00e9", "http://example.com/a/b/%C3%A9"),
    # empty and fragment-only references: the base itself, without its fragment
    ("", "http://example.com/a/b/c?x=1"),
    ("   ", "http://example.com/a/b/c?x=1"),
    ("#frag", "http://example.com/a/b/c?x=1"),
    ("  #frag  ", "http://example.com/a/b/c?x=1"),
    ("d#frag", "http://example.com/a/b/d"),
]


@pytest.mark.parametrize(("href", "expected"), RESOLVE)
def test_resolve(href: str, expected: str) -> None:
    assert resolve(BASE, href) == expected


@pytest.mark.parametrize(
    ("href", "reason"),
    [
        ("mailto:webmaster@example.com", "url:scheme:mailto"),
        ("javascript:alert(1)", "url:scheme:javascript"),
        (" javascript:void(0) ", "url:scheme:javascript"),
        ("ftp://example.com/f", "url:scheme:ftp"),
        ("http://[bad", "url:unparseable"),
        ("//exa mple.com/", "url:bad-host"),
        ("//example.com:0/", "url:bad-port"),
    ],
)
def test_resolve_rejects(href: str, reason: str) -> None:
    with pytest.raises(UrlError, match=f"^{reason}: ") as caught:
        resolve(BASE, href)

    assert caught.value.reason == reason


# -- the synthetic web ------------------------------------------------------------------------


@functools.cache
def _synthetic_links() -> list[tuple[str, str, str | None]]:
    """(page URL, href as written, canonical target or None) for every link of the web."""
    web = SyntheticWeb(WebConfig(seed=1, hosts=30))
    return [
        (page.url, link.href, link.url)
        for host in web.host_names()
        for page in web.pages(host)
        for link in page.links
    ]


def test_synthetic_web_has_links_of_every_kind() -> None:
    links = _synthetic_links()

    assert len(links) > 1000
    assert any(target is None for _, _, target in links)
    assert any(href.startswith("//") for _, href, _ in links)
    assert any(href.startswith("../") for _, href, _ in links)


def test_resolve_agrees_with_the_synthetic_web() -> None:
    disagreements = []
    for page, href, target in _synthetic_links():
        try:
            resolved: str | None = resolve(page, href)
        except UrlError:
            resolved = None
        if not resolved == target == canonical_url(href, page):
            disagreements.append((page, href, target, resolved))

    assert disagreements == []


def test_normalize_is_idempotent_on_the_synthetic_web() -> None:
    targets = {target for _, _, target in _synthetic_links() if target is not None}
    pages = {page for page, _, _ in _synthetic_links()}

    for url in targets | pages:
        assert normalize(url) == url == canonical_url(url)
        assert normalize(normalize(url)) == normalize(url)


def test_resolve_agrees_with_the_page_identities_of_the_url_policy_web() -> None:
    """Spellings (case, ':80', escapes, dot segments) and session ids are one page to both."""
    web = SyntheticWeb(WebConfig(seed=1, hosts=20).with_url_policy_profile())
    disagreements = []
    spellings = 0
    for host in web.host_names():
        for page in web.pages(host):
            for link in page.links:
                try:
                    resolved: str | None = resolve(page.url, link.href)
                except UrlError:
                    resolved = None
                if resolved != page_identity(link.href, page.url):
                    disagreements.append((page.url, link.href, resolved))
                spellings += resolved is not None and resolved != canonical_url(link.href, page.url)

    assert disagreements == []
    assert spellings > 100


# -- host and vnode ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://example.com/", "example.com"),
        ("http://example.com", "example.com"),
        ("http://example.com:8080/a/b", "example.com:8080"),
        ("https://user:pw@example.com/a", "example.com"),
        ("http://u@example.com:81/", "example.com:81"),
        ("http://[2001:db8::1]:8080/x", "[2001:db8::1]:8080"),
        ("http://127.0.0.1/?next=http://other/", "127.0.0.1"),
    ],
)
def test_host_of(url: str, host: str) -> None:
    assert host_of(url) == host


@pytest.mark.parametrize("url", [url for url, _ in NORMALIZE])
def test_host_of_a_normalized_url_is_its_host_and_port(url: str) -> None:
    canonical = normalize(url)

    assert canonical.startswith(("http://", "https://"))
    assert host_of(canonical) in canonical
    assert "/" not in host_of(canonical)


# A change here silently repartitions every crawl: the crawl DB and frontier state of a crawl
# is keyed by vnode, so a restored crawl would route URLs to the wrong keys.
@pytest.mark.parametrize(
    ("host", "vnodes", "expected"),
    [
        ("example.com", 256, 185),
        ("h0.synth.test", 256, 130),
        ("h1.synth.test", 256, 237),
        ("localhost:8080", 256, 50),
        ("xn--bcher-kva.de", 256, 227),
        ("example.com", 32768, 20153),
        ("h0.synth.test", 32768, 28034),
        ("example.com", 1, 0),
    ],
)
def test_vnode_of_is_stable(host: str, vnodes: int, expected: int) -> None:
    assert vnode_of(host, vnodes) == expected


@pytest.mark.parametrize("vnodes", [1, 2, 7, 256, 32768])
def test_vnode_of_is_in_range_and_spreads(vnodes: int) -> None:
    hosts = [f"h{i}.synth.test" for i in range(2000)]

    nodes = [vnode_of(host, vnodes) for host in hosts]

    assert all(0 <= node < vnodes for node in nodes)
    assert len(set(nodes)) >= min(vnodes, 2000) // 2


# -- the rules of normalisation version 2, one table ---------------------------------------------

PAGE = "http://example.com/a/b/c?x=1"

# (rule, page URL to resolve against or None for normalize(), input, canonical form or reason)
TABLE = [
    # scheme and host case
    ("case", None, "HTTPS://WWW.Example.COM/Path/To", "https://www.example.com/Path/To"),
    ("case", None, "Http://EXAMPLE.com:8080/A?B=C", "http://example.com:8080/A?B=C"),
    ("case", PAGE, "HTTP://Other.EXAMPLE/", "http://other.example/"),
    # percent-encoding
    ("percent", None, "http://example.com/%7e%41%2d%5f%2e%30", "http://example.com/~A-_.0"),
    ("percent", None, "http://example.com/a%2fb?c=%3d%26", "http://example.com/a%2Fb?c=%3D%26"),
    ("percent", None, "http://example.com/%e2%82%ac%zz%", "http://example.com/%E2%82%AC%25zz%25"),
    ("percent", None, "http://example.com/\u20ac?q=\u00e9 x", "http://example.com/%E2%82%AC?q=%C3%A9%20x"),
    ("percent", None, "http://example.com/a|b^c`d", "http://example.com/a%7Cb%5Ec%60d"),
    ("percent", None, "http://example.com/%A%41?%a%62", "http://example.com/%25AA?%25ab"),
    ("percent", None, "http://example.com/?q=a\\b", "http://example.com/?q=a%5Cb"),
    ("percent", PAGE, "d%20e", "http://example.com/a/b/d%20e"),
    # dot segments, also percent-encoded
    ("dot-segments", None, "http://example.com/a/./b/../../c/", "http://example.com/c/"),
    ("dot-segments", None, "http://example.com/../../a", "http://example.com/a"),
    ("dot-segments", None, "http://example.com/a/%2e%2E/b/%2e", "http://example.com/b/"),
    ("dot-segments", None, "http://example.com/a/.hidden/..x", "http://example.com/a/.hidden/..x"),
    ("dot-segments", PAGE, "../../../../e", "http://example.com/e"),
    ("dot-segments", PAGE, "./", "http://example.com/a/b/"),
    # default port
    ("default-port", None, "http://example.com:80/", "http://example.com/"),
    ("default-port", None, "https://example.com:443/a", "https://example.com/a"),
    ("default-port", None, "http://example.com:0080/", "http://example.com/"),
    ("default-port", None, "https://example.com:8443/", "https://example.com:8443/"),
    ("default-port", None, "http://example.com:0/", "url:bad-port"),
    ("default-port", None, "http://example.com:65536/", "url:bad-port"),
    ("default-port", None, "http://example.com:8o/", "url:bad-port"),
    ("default-port", None, "http://a:b:c/", "url:bad-port"),
    # empty path, empty query
    ("empty-path", None, "http://example.com", "http://example.com/"),
    ("empty-path", None, "http://example.com?a=1", "http://example.com/?a=1"),
    ("empty-path", None, "http://example.com/?", "http://example.com/"),
    # fragment dropped
    ("fragment", None, "http://example.com/a?b#c?d", "http://example.com/a?b"),
    ("fragment", PAGE, "#top", "http://example.com/a/b/c?x=1"),
    ("fragment", PAGE, "d#e/f", "http://example.com/a/b/d"),
    # IDN hosts: UTS 46 non-transitional, as browsers
    ("idn", None, "http://B\u00fccher.example/", "http://xn--bcher-kva.example/"),
    ("idn", None, "http://fa\u00df.de/", "http://xn--fa-hia.de/"),
    ("idn", None, "http://\u2603.net/", "http://xn--n3h.net/"),
    ("idn", None, "http://\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com/", "http://example.com/"),
    ("idn", None, "http://example\u3002com/", "http://example.com/"),
    ("idn", None, "http://\u00fc..de/", "url:bad-idn-host"),
    # hosts: LDH labels (and '_'), one trailing dot dropped
    ("host", None, "http://example.com./", "http://example.com/"),
    ("host", None, "http://exa$mple.com/", "url:bad-host"),
    ("host", None, "http://a..b/", "url:bad-host"),
    ("host", None, "http://./", "url:bad-host"),
    # percent-escapes in the host are decoded first
    ("host-percent", None, "http://%65xample.%63om/", "http://example.com/"),
    ("host-percent", None, "http://b%C3%BCcher.de/", "http://xn--bcher-kva.de/"),
    ("host-percent", None, "http://ex%2Fample.com/", "url:bad-host"),
    ("host-percent", None, "http://%FF.com/", "url:bad-host"),
    ("host-percent", None, "http://%31%32%37.0.0.1/", "http://127.0.0.1/"),
    # IPv4, the WHATWG way
    ("ipv4", None, "http://0x7f.1/", "http://127.0.0.1/"),
    ("ipv4", None, "http://2130706433/", "http://127.0.0.1/"),
    ("ipv4", None, "http://017700000001/", "http://127.0.0.1/"),
    ("ipv4", None, "http://0300.0250.0.1/", "http://192.168.0.1/"),
    ("ipv4", None, "http://0X7F.0.0.1:8080/", "http://127.0.0.1:8080/"),
    ("ipv4", None, "http://1.2.3/", "http://1.2.0.3/"),
    ("ipv4", None, "http://1.2.65535/", "http://1.2.255.255/"),
    ("ipv4", None, "http://127.0.0.1./", "http://127.0.0.1/"),
    ("ipv4", None, "http://\uff11\uff12\uff17.0.0.1/", "http://127.0.0.1/"),
    ("ipv4", None, "http://0xg.com/", "http://0xg.com/"),
    ("ipv4", None, "http://1.2.3.4.5/", "url:bad-ipv4"),
    ("ipv4", None, "http://4294967296/", "url:bad-ipv4"),
    ("ipv4", None, "http://1.256.1.1/", "url:bad-ipv4"),
    ("ipv4", None, "http://08/", "url:bad-ipv4"),
    ("ipv4", None, "http://foo.1/", "url:bad-ipv4"),
    ("ipv4", None, "http://1..2/", "url:bad-ipv4"),
    # IPv6: compressed, lower case (RFC 5952)
    ("ipv6", None, "http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"),
    ("ipv6", None, "http://[2001:DB8:0:0:1:0:0:1]:443/", "http://[2001:db8::1:0:0:1]:443/"),
    ("ipv6", None, "https://[1:0:0:2:0:0:0:3]:443/", "https://[1:0:0:2::3]/"),
    ("ipv6", None, "http://[::FFFF:127.0.0.1]/", "http://[::ffff:7f00:1]/"),
    ("ipv6", None, "http://[1:2:3:4:5:6:7:8]/", "http://[1:2:3:4:5:6:7:8]/"),
    ("ipv6", None, "http://[::1%25eth0]/", "url:bad-ipv6"),
    ("ipv6", None, "http://[1::2::3]/", "url:bad-ipv6"),
    ("ipv6", None, "http://[::1]x/", "url:unparseable"),
    ("ipv6", None, "http://[::1/", "url:unparseable"),
    # user info kept, empty parts dropped
    ("userinfo", None, "http://User:P%77@Example.com/", "http://User:Pw@example.com/"),
    ("userinfo", None, "http://@example.com/", "http://example.com/"),
    ("userinfo", None, "http://user:@example.com/", "http://user@example.com/"),
    ("userinfo", None, "http://user@:80/", "url:no-host"),
    # query: order kept by default
    ("query-order", None, "http://example.com/?b=2&a=1&b=1", "http://example.com/?b=2&a=1&b=1"),
    ("query-order", None, "http://example.com/?a=&&=b", "http://example.com/?a=&&=b"),
    # session ids: query parameters and path parameters of the last segment
    ("session-id", None, "http://example.com/?sid=1&a=2", "http://example.com/?a=2"),
    ("session-id", None, "http://example.com/?a=2&PHPSESSID=f00&b", "http://example.com/?a=2&b"),
    ("session-id", None, "http://example.com/?JSessionId=x", "http://example.com/"),
    ("session-id", None, "http://example.com/?%73id=1&b", "http://example.com/?b"),
    ("session-id", None, "http://example.com/?sidebar=1&side=2", "http://example.com/?sidebar=1&side=2"),
    ("session-id", None, "http://example.com/x;jsessionid=AB12?y=1", "http://example.com/x?y=1"),
    ("session-id", None, "http://example.com/x;JSESSIONID=A;v=2", "http://example.com/x;v=2"),
    ("session-id", None, "http://example.com/app/;jsessionid=A", "http://example.com/app/"),
    ("session-id", None, "http://example.com/x;phpsessid", "http://example.com/x"),
    ("session-id", None, "http://example.com/a;jsessionid=A/b", "http://example.com/a;jsessionid=A/b"),
    ("session-id", None, "http://example.com/a/..;jsessionid=A", "http://example.com/"),
    ("session-id", PAGE, "e;jsessionid=A?sid=B&c=1", "http://example.com/a/b/e?c=1"),
    # backslashes read as slashes before the query
    ("backslash", None, "http:\\\\example.com\\a\\b", "http://example.com/a/b"),
    ("backslash", None, "http://example.com\\a?b\\c", "http://example.com/a?b%5Cc"),
    ("backslash", PAGE, "\\d", "http://example.com/d"),
    ("backslash", PAGE, "\\\\other.example\\d", "http://other.example/d"),
    ("backslash", PAGE, "/\\other.example/d", "http://other.example/d"),
    ("backslash", PAGE, "e\\..\\f?g\\h", "http://example.com/a/b/f?g%5Ch"),
    # whitespace: C0 controls and spaces stripped around, tabs and line breaks removed inside
    ("whitespace", None, "\x00\x1f http://example.com/ \x0c", "http://example.com/"),
    ("whitespace", None, "http://example.com/ \x0c\x7f", "http://example.com/%20%0C%7F"),
    ("whitespace", None, "ht\ttp://exa\nmple.com/a\r\nb", "http://example.com/ab"),
    ("whitespace", PAGE, " \t\n", "http://example.com/a/b/c?x=1"),
    ("whitespace", PAGE, "\n d e \r", "http://example.com/a/b/d%20e"),
    # slashes after the scheme: any number, either kind (WHATWG)
    ("slashes", None, "http:example.com/a", "http://example.com/a"),
    ("slashes", None, "http:/example.com", "http://example.com/"),
    ("slashes", None, "http:///example.com/a", "http://example.com/a"),
    ("slashes", None, "https:/\\/example.com", "https://example.com/"),
    ("slashes", PAGE, "http:d", "http://example.com/a/b/d"),
    ("slashes", PAGE, "http:/d", "http://example.com/d"),
    ("slashes", PAGE, "http:?y", "http://example.com/a/b/c?y"),
    ("slashes", PAGE, "https:d", "https://d/"),
    # scheme-relative links take the page's scheme
    ("scheme-relative", PAGE, "//Other.Example", "http://other.example/"),
    ("scheme-relative", "https://example.com/", "//other.example/p", "https://other.example/p"),
    ("scheme-relative", PAGE, "///other.example/p", "http://other.example/p"),
    ("scheme-relative", PAGE, "//", "url:no-host"),
    # relative resolution against the page (or its <base href>)
    ("relative", PAGE, "d", "http://example.com/a/b/d"),
    ("relative", PAGE, "?y=2", "http://example.com/a/b/c?y=2"),
    ("relative", PAGE, "/d?e", "http://example.com/d?e"),
    ("relative", PAGE, "", "http://example.com/a/b/c?x=1"),
    ("relative", PAGE, "1a:b", "http://example.com/a/b/1a:b"),
    ("relative", "http://cdn.example/static/", "img/a.png", "http://cdn.example/static/img/a.png"),
    ("relative", "http://Example.com/a/b?q#f/g", "../c", "http://example.com/c"),
    ("relative", "mailto:someone@example.com", "d", "url:bad-base"),
    # other schemes, and what is not a URL
    ("scheme", None, "mailto:webmaster@example.com", "url:scheme:mailto"),
    ("scheme", PAGE, "JavaScript:void(0)", "url:scheme:javascript"),
    ("scheme", PAGE, "data:text/html,<p>", "url:scheme:data"),
    ("scheme", PAGE, "ftp://example.com/f", "url:scheme:ftp"),
    ("scheme", PAGE, "localhost:8080/", "url:scheme:localhost"),
    ("scheme", None, "example.com/a", "url:scheme:none"),
    ("scheme", None, "//example.com/a", "url:scheme:none"),
    ("not-a-url", None, " \x00 ", "url:empty"),
    ("not-a-url", None, "http:", "url:no-host"),
    ("not-a-url", None, "http://?a", "url:no-host"),
    ("not-a-url", PAGE, "http://exa mple.com/", "url:bad-host"),
    # length
    ("too-long", None, "http://example.com/" + "a" * 2029, "http://example.com/" + "a" * 2029),
    ("too-long", None, "http://example.com/" + "a" * 2030, "url:too-long"),
    ("too-long", None, "http://example.com/" + "./" * 3000, "http://example.com/"),
    ("too-long", PAGE, "d" * (4 * MAX_URL_LENGTH + 1), "url:too-long"),
]

RULES = {
    "case", "percent", "dot-segments", "default-port", "empty-path", "fragment", "idn", "host",
    "host-percent", "ipv4", "ipv6", "userinfo", "query-order", "session-id", "backslash",
    "whitespace", "slashes", "scheme-relative", "relative", "scheme", "not-a-url", "too-long",
}


def _outcome(base: str | None, text: str, normalizer: UrlNormalizer | None = None) -> str:
    """The canonical form, or the reason of the error (whose url must be the input)."""
    normalizer = normalizer or UrlNormalizer()
    try:
        return normalizer.normalize(text) if base is None else normalizer.resolve(base, text)
    except UrlError as error:
        failed = error
    assert failed.url == text
    return failed.reason


def test_the_table_covers_every_rule() -> None:
    assert len(TABLE) >= 60
    assert {rule for rule, _, _, _ in TABLE} == RULES
    assert NORMALIZATION_VERSION == 2


@pytest.mark.parametrize(
    ("base", "text", "expected"),
    [case[1:] for case in TABLE],
    ids=[f"{rule}-{i}" for i, (rule, *_) in enumerate(TABLE)],
)
def test_table(base: str | None, text: str, expected: str) -> None:
    assert _outcome(base, text) == expected
    # The same without the cache, and with the module functions.
    assert _outcome(base, text, UrlNormalizer(cache_size=0)) == expected
    function_outcome = _outcome(base, text, None)
    assert function_outcome == expected
    if not expected.startswith("url:"):
        assert normalize(expected) == expected
        assert (normalize(text) if base is None else resolve(base, text)) == expected


# parse.py resolves <base href> against the page, then every link against the result.
@pytest.mark.parametrize(
    ("base_href", "href", "expected"),
    [
        ("http://cdn.example/static/", "img/a.png", "http://cdn.example/static/img/a.png"),
        ("/root/", "x", "http://example.com/root/x"),
        ("//mirror.example/m/index.html", "../y", "http://mirror.example/y"),
        ("sub/", "/abs", "http://example.com/abs"),
        (" HTTPS://Secure.Example:443/dir/page ", "?q=1", "https://secure.example/dir/page?q=1"),
        ("https://secure.example/", "//other.example/", "https://other.example/"),
    ],
)
def test_base_href(base_href: str, href: str, expected: str) -> None:
    assert resolve(resolve(PAGE, base_href), href) == expected


# -- the configurable normaliser -------------------------------------------------------------


def test_sorted_query_is_a_stable_sort_by_name() -> None:
    sorting = UrlNormalizer(sort_query=True)

    assert sorting.normalize("http://e.com/?b=2&a=1&b=1&c") == "http://e.com/?a=1&b=2&b=1&c"
    assert sorting.normalize("http://e.com/?b=2&sid=9&a") == "http://e.com/?a&b=2"
    assert sorting.resolve(PAGE, "?z&y") == "http://example.com/a/b/c?y&z"
    assert normalize("http://e.com/?b=2&a=1") == "http://e.com/?b=2&a=1"


def test_strip_params_is_configurable() -> None:
    keep_all = UrlNormalizer(strip_params=frozenset())
    custom = UrlNormalizer(strip_params=frozenset({"UTM_Source", "ref"}))

    assert keep_all.normalize("http://e.com/x;jsessionid=1?sid=2") == (
        "http://e.com/x;jsessionid=1?sid=2"
    )
    assert custom.normalize("http://e.com/x;REF=1?sid=2&utm_source=a&b") == (
        "http://e.com/x?sid=2&b"
    )
    assert custom.strip_params == frozenset({"utm_source", "ref"})
    assert {"jsessionid", "phpsessid", "sid", "aspsessionid"} <= DEFAULT_SESSION_PARAMS
    with pytest.raises(TypeError):
        UrlNormalizer(strip_params="sid")  # type: ignore[arg-type]


def test_normalizer_is_a_value() -> None:
    normalizer = UrlNormalizer(sort_query=True, strip_params=frozenset({"a"}))

    assert normalizer == UrlNormalizer(sort_query=True, strip_params=frozenset({"A"}))
    assert hash(normalizer) == hash(UrlNormalizer(sort_query=True, strip_params=frozenset({"a"})))
    assert normalizer != UrlNormalizer()
    copy = pickle.loads(pickle.dumps(normalizer))
    assert copy == normalizer
    assert copy.normalize("http://e.com/?b&a=1&c") == "http://e.com/?b&c"


# -- fuzzing: nothing but UrlError, idempotent, resolve() gives fixed points ------------------

_FUZZ_SETTINGS = settings(
    max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
_UNCACHED = UrlNormalizer(cache_size=0)
_SORTING = UrlNormalizer(sort_query=True, cache_size=0)

_PIECES = st.sampled_from(
    [
        "http:", "HTTPS:", "https:", "ftp:", "mailto:", "javascript:", "//", "/", "\\", ".",
        "..", "./", "../", "%", "%2e", "%2E%2e", "%41", "%zz", "%C3%BC", "%FF", "%25", "?", "#",
        "&", "=", ";", ":", "@", "[", "]", "::1", "0x7f", "0X", "1", "255", "256", "08",
        "4294967295",
        "a", "Ab", "xn--", "-", "_", "\u00fc", "\u00df", "\u2603", "\u3002", "\uff11", "\ufffd",
        "\u200d", "\ud800", " ", "\t", "\n", "\x00", "\x7f", "sid", "JSESSIONID", "phpsessid",
        "example.com", "www", ":80", ":443", ":0", ":65536", "[::1]", "[2001:DB8::1]", "127.0.0.1",
    ]
)
_URL_LIKE = st.lists(_PIECES, max_size=16).map("".join)
_ANY_TEXT = st.one_of(st.text(max_size=60), _URL_LIKE, st.builds("http://{}".format, _URL_LIKE))
_PAGES = st.sampled_from(
    [
        PAGE,
        "https://example.com/",
        "http://127.0.0.1:8080/d/?q",
        "http://[::1]/a/b",
        "http://u:p@xn--bcher-kva.de/x/y;z",
        "http://h0.synth.test/p/3",
    ]
)


def _result(function: Callable[..., str], *args: str) -> str | None:
    """The result, or None for a UrlError (anything else fails the test)."""
    try:
        return function(*args)
    except UrlError as error:
        failed = error
    assert failed.reason.startswith("url:")
    assert len(failed.reason) <= 40
    assert failed.url == args[-1]
    return None


@_FUZZ_SETTINGS
@given(_ANY_TEXT)
def test_fuzz_normalize_raises_only_url_error_and_is_idempotent(text: str) -> None:
    for normalizer in (_UNCACHED, _SORTING):
        canonical = _result(normalizer.normalize, text)
        if canonical is not None:
            assert normalizer.normalize(canonical) == canonical
            assert canonical.startswith(("http://", "https://"))
            assert len(canonical) <= MAX_URL_LENGTH
            assert canonical.isascii()
            assert host_of(canonical)
    assert _result(normalize, text) == _result(_UNCACHED.normalize, text)


@_FUZZ_SETTINGS
@given(st.one_of(_PAGES, _ANY_TEXT), _ANY_TEXT)
def test_fuzz_resolve_gives_fixed_points_of_normalize(base: str, href: str) -> None:
    for normalizer in (_UNCACHED, _SORTING):
        resolved = _result(normalizer.resolve, base, href)
        if resolved is not None:
            assert normalizer.normalize(resolved) == resolved
    resolved = _result(resolve, base, href)
    assert resolved == _result(_UNCACHED.resolve, base, href)
    if resolved is not None:
        assert normalize(resolved) == resolved
        # Path-ascending discovery makes canonical URLs of the same origin from it.
        for parent in parent_directories(resolved):
            assert normalize(parent) == parent
            assert host_of(parent) == host_of(resolved)


PARENT_DIRECTORIES = [
    ("http://h.test/a/b/c?x=1", ["http://h.test/a/b/", "http://h.test/a/", "http://h.test/"]),
    ("http://h.test/a/b/", ["http://h.test/a/", "http://h.test/"]),
    ("http://h.test/a", ["http://h.test/"]),
    ("http://h.test/", []),
    ("http://h.test/?q=/a/b", []),
    ("https://h.test:8443/a//b", ["https://h.test:8443/a//", "https://h.test:8443/a/",
                                  "https://h.test:8443/"]),
]


@pytest.mark.parametrize(("url", "expected"), PARENT_DIRECTORIES)
def test_parent_directories(url: str, expected: list[str]) -> None:
    assert parent_directories(url) == expected
