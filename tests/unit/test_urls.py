"""URL normalisation (RFC 3986 section 6), link resolution, and partitioning by host."""

from __future__ import annotations

import functools

import pytest

from crawl.urls import MAX_URL_LENGTH, UrlError, host_of, normalize, resolve, vnode_of
from synthweb import SyntheticWeb, WebConfig, canonical_url

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
    ("http:///path", "url:no-host"),
    ("http:", "url:no-host"),
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
