"""Google's robots.txt test cases, run through our robots.txt policy (crawl/frontier/robots.py).

The cases come from ``robots_test.cc`` in github.com/google/robotstxt (Apache-2.0), the
reference tests of RFC 9309's authors. Every check there that says whether one product token
may fetch one URL is a row of :data:`CASES`: (test name, robots.txt, token, URL, allowed),
``allowed`` being the verdict *we* give. Where it is not Google's, the row says why in
``differs`` (Google's verdict is then the opposite): a Google extension to the RFC, or a point
the RFC leaves open, on which we keep our behaviour.

Adapted rather than copied:

- Our crawler obeys one product token (``user_agent.product``), never a whole User-Agent
  string, and the configuration refuses a token that is not one: the token-validity checks
  (``ID_VerifyValidUserAgentsToObey``, the ``"Foo Bar"`` query of
  ``GoogleOnly_AcceptUserAgentUpToFirstSpace``) are held against the configuration in
  :func:`test_product_token_validity` instead.
- ``ID_UTF8ByteOrderMarkIsSkipped`` and ``ID_NonStandardLineExample_Sitemap`` count parsed
  lines; here the line after the BOM or the sitemap is a ``Disallow``, so that whether it
  was read shows in the verdict.
- ``TestGetPathParamsQuery`` and ``TestMaybeEscapePattern`` test helpers; the checks of theirs
  that change a verdict for an absolute URL (fragment, parameters, a missing path, the case of
  percent-escapes) are rows.

Left out: ``ID_LinesNumbersAreCountedCorrectly``, which counts lines inside the parser.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from crawl.config import ConfigError, RobotsSection, load_config
from crawl.frontier.robots import RobotsPolicy, record_from_fetch

NOW = 1_700_000_000_000
_B = "http://foo.bar"


class Case(NamedTuple):
    name: str
    robots_txt: str | bytes
    token: str
    url: str
    allowed: bool
    differs: str = ""


# -- robots.txt bodies shared by several checks -------------------------------------------------

_GROUPS = (
    "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\n"
    "disallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\n"
    "allow: /z/\ndisallow: /\n"
)
_OTHER_RULES_1 = (
    "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n"
)
_OTHER_RULES_2 = "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n"
_UPPER = "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n"
_LOWER = "user-agent: FooBot\nallow: /x/\ndisallow: /\n"
_CAMEL = "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n"
_GLOBAL = "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n"
_SPECIFIC = (
    "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\n"
    "user-agent: BazBot\ndisallow: /\n"
)
_PAGE_OR_DIR = "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n"
_X_OR_DIR = "user-agent: FooBot\ndisallow: /x\nallow: /x/\n"
_PAGE_HTML = "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n"
_PAGE_DOT = "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n"
_STAR_AND_OURS = "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n"
_KATAKANA = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n"
_KATAKANA_ESCAPED = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n"
_BAZ_ESCAPED = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n"
_STAR_MIDDLE = "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n"
_DOLLAR = "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n"
_HASH = "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n"
_INDEX_HTML = "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n"
_FISH = "user-agent: FooBot\ndisallow: /\nallow: /fish\n"
_FISH_STAR = "user-agent: FooBot\ndisallow: /\nallow: /fish*\n"
_FISH_DIR = "user-agent: FooBot\ndisallow: /\nallow: /fish/\n"
_PHP = "user-agent: FooBot\ndisallow: /\nallow: /*.php\n"
_PHP_END = "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n"
_FISH_PHP = "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n"
_ROOT_ONLY = "user-agent: FooBot\nallow: /$\ndisallow: /\n"
_FOOBOT_ALL = "user-agent: FooBot\ndisallow: /\n"
_BOM_BODY = b"User-Agent: foo\nDisallow: /AnyValue\n"

# GoogleOnly_LineTooLong: Google reads at most 2083 * 8 bytes of a line; a path is made to
# fill a line to that length with "field: " before it and the newline after it, as there.
_MAX_LINE = 2083 * 8


def _long_path(field: str, fill: str) -> str:
    return "/x/" + fill * (_MAX_LINE - len(field) + 1 - 2 * len("/x/"))


_LONG_A = _long_path("allow: ", "a")
_LONG_B = _long_path("allow: ", "b")
_LONG_D = _long_path("disallow: ", "a")
_LONG_DISALLOW = f"user-agent: FooBot\ndisallow: {_LONG_D}/qux\n"
_LONG_ALLOWS = f"user-agent: FooBot\ndisallow: /\nallow: {_LONG_A}/qux\nallow: {_LONG_B}/qux\n"

# -- why we part from Google, where we do ---------------------------------------------------------

_NO_COLON = (
    "Google-only: a missing colon is assumed; RFC 9309 2.2's grammar needs it, we drop the line"
)
_ENCODED_FIRST = (
    "RFC 9309 2.2.2: non-ASCII octets are percent-encoded before comparison; Google leaves "
    "encoding the URL to its caller"
)
_UNRESERVED = (
    "RFC 3986 6.2.2.2: %62%61%7A and baz are the same URI; Google compares bytes and calls "
    "relying on either reading unsafe"
)
_PARTIAL_BOM = (
    "Google-only: a partial BOM is skipped; RFC 9309 2.3 asks for UTF-8, which a cut BOM is "
    "not, so the line is garbage"
)
_LONG_LINE = "Google-only: lines cut at 2083 * 8 bytes; RFC 9309 sets no line length"

CASES: list[Case] = [
    # The system test's empty URL is read as "/", as Google reads it. The configuration never
    # gives an empty token (see test_product_token_validity); no group applies to it.
    Case("GoogleOnly_SystemTest", "", "FooBot", "", True),
    Case("GoogleOnly_SystemTest", _FOOBOT_ALL, "", "", True),
    Case("GoogleOnly_SystemTest", _FOOBOT_ALL, "FooBot", "", False),
    Case("GoogleOnly_SystemTest", "", "", "", True),
    Case("ID_LineSyntax_Line", _FOOBOT_ALL, "FooBot", f"{_B}/x/y", False),
    Case("ID_LineSyntax_Line", "foo: FooBot\nbar: /\n", "FooBot", f"{_B}/x/y", True),
    Case("ID_LineSyntax_Line", "user-agent FooBot\ndisallow /\n", "FooBot", f"{_B}/x/y", True,
         _NO_COLON),
    Case("ID_LineSyntax_Groups", _GROUPS, "FooBot", f"{_B}/x/b", True),
    Case("ID_LineSyntax_Groups", _GROUPS, "FooBot", f"{_B}/z/d", True),
    Case("ID_LineSyntax_Groups", _GROUPS, "FooBot", f"{_B}/y/c", False),
    Case("ID_LineSyntax_Groups", _GROUPS, "BarBot", f"{_B}/y/c", True),
    Case("ID_LineSyntax_Groups", _GROUPS, "BarBot", f"{_B}/w/a", True),
    Case("ID_LineSyntax_Groups", _GROUPS, "BarBot", f"{_B}/z/d", False),
    Case("ID_LineSyntax_Groups", _GROUPS, "BazBot", f"{_B}/z/d", True),
    Case("ID_LineSyntax_Groups", _GROUPS, "FooBot", f"{_B}/foo/bar/", False),
    Case("ID_LineSyntax_Groups", _GROUPS, "BarBot", f"{_B}/foo/bar/", False),
    Case("ID_LineSyntax_Groups", _GROUPS, "BazBot", f"{_B}/foo/bar/", False),
    Case("ID_LineSyntax_Groups_OtherRules", _OTHER_RULES_1, "FooBot", f"{_B}/", False),
    Case("ID_LineSyntax_Groups_OtherRules", _OTHER_RULES_1, "BarBot", f"{_B}/", False),
    Case("ID_LineSyntax_Groups_OtherRules", _OTHER_RULES_2, "FooBot", f"{_B}/", False),
    Case("ID_LineSyntax_Groups_OtherRules", _OTHER_RULES_2, "BarBot", f"{_B}/", False),
    *[Case("ID_REPLineNamesCaseInsensitive", text, "FooBot", url, allowed)
      for text in (_UPPER, _LOWER, _CAMEL)
      for url, allowed in ((f"{_B}/x/y", True), (f"{_B}/a/b", False))],
    *[Case("ID_UserAgentValueCaseInsensitive", f"User-Agent: {name}\nAllow: /x/\nDisallow: /\n",
           token, url, allowed)
      for name in ("FOO BAR", "foo bar", "FoO bAr")
      for token in ("Foo", "foo")
      for url, allowed in ((f"{_B}/x/y", True), (f"{_B}/a/b", False))],
    # We read "User-Agent: Foo Bar" as Foo too (crawl.frontier.robots.rfc_lines); the query with the
    # token "Foo Bar" is one the configuration refuses (test_product_token_validity).
    Case("GoogleOnly_AcceptUserAgentUpToFirstSpace",
         "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
         "Foo", f"{_B}/x/y", True),
    Case("ID_GlobalGroups_Secondary", "", "FooBot", f"{_B}/x/y", True),
    Case("ID_GlobalGroups_Secondary", _GLOBAL, "FooBot", f"{_B}/x/y", False),
    Case("ID_GlobalGroups_Secondary", _GLOBAL, "BarBot", f"{_B}/x/y", True),
    Case("ID_GlobalGroups_Secondary", _SPECIFIC, "QuxBot", f"{_B}/x/y", True),
    Case("ID_AllowDisallow_Value_CaseSensitive", "user-agent: FooBot\ndisallow: /x/\n",
         "FooBot", f"{_B}/x/y", False),
    Case("ID_AllowDisallow_Value_CaseSensitive", "user-agent: FooBot\ndisallow: /X/\n",
         "FooBot", f"{_B}/x/y", True),
    Case("ID_LongestMatch", "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n",
         "FooBot", f"{_B}/x/page.html", False),
    Case("ID_LongestMatch", _PAGE_OR_DIR, "FooBot", f"{_B}/x/page.html", True),
    Case("ID_LongestMatch", _PAGE_OR_DIR, "FooBot", f"{_B}/x/", False),
    Case("ID_LongestMatch", "user-agent: FooBot\ndisallow: \nallow: \n", "FooBot",
         f"{_B}/x/page.html", True),
    Case("ID_LongestMatch", "user-agent: FooBot\ndisallow: /\nallow: /\n", "FooBot",
         f"{_B}/x/page.html", True),
    Case("ID_LongestMatch", _X_OR_DIR, "FooBot", f"{_B}/x", False),
    Case("ID_LongestMatch", _X_OR_DIR, "FooBot", f"{_B}/x/", True),
    Case("ID_LongestMatch", "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n",
         "FooBot", f"{_B}/x/page.html", True),
    Case("ID_LongestMatch", _PAGE_HTML, "FooBot", f"{_B}/page.html", False),
    Case("ID_LongestMatch", _PAGE_HTML, "FooBot", f"{_B}/page", True),
    Case("ID_LongestMatch", _PAGE_DOT, "FooBot", f"{_B}/x/page.html", True),
    Case("ID_LongestMatch", _PAGE_DOT, "FooBot", f"{_B}/x/y.html", False),
    Case("ID_LongestMatch", _STAR_AND_OURS, "FooBot", f"{_B}/x/page", True),
    Case("ID_LongestMatch", _STAR_AND_OURS, "FooBot", f"{_B}/y/page", False),
    Case("ID_Encoding",
         "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
         "FooBot", f"{_B}/foo/bar?qux=taz&baz=http://foo.bar?tar&par", True),
    Case("ID_Encoding", _KATAKANA, "FooBot", f"{_B}/foo/bar/%E3%83%84", True),
    Case("ID_Encoding", _KATAKANA, "FooBot", f"{_B}/foo/bar/ツ", True, _ENCODED_FIRST),
    Case("ID_Encoding", _KATAKANA_ESCAPED, "FooBot", f"{_B}/foo/bar/%E3%83%84", True),
    Case("ID_Encoding", _KATAKANA_ESCAPED, "FooBot", f"{_B}/foo/bar/ツ", True, _ENCODED_FIRST),
    Case("ID_Encoding", _BAZ_ESCAPED, "FooBot", f"{_B}/foo/bar/baz", True, _UNRESERVED),
    Case("ID_Encoding", _BAZ_ESCAPED, "FooBot", f"{_B}/foo/bar/%62%61%7A", True),
    Case("ID_SpecialCharacters", _STAR_MIDDLE, "FooBot", f"{_B}/foo/bar/quz", False),
    *[Case("ID_SpecialCharacters", _STAR_MIDDLE, "FooBot", f"{_B}{path}", True)
      for path in ("/foo/quz", "/foo//quz", "/foo/bax/quz")],
    Case("ID_SpecialCharacters", _DOLLAR, "FooBot", f"{_B}/foo/bar", False),
    *[Case("ID_SpecialCharacters", _DOLLAR, "FooBot", f"{_B}{path}", True)
      for path in ("/foo/bar/qux", "/foo/bar/", "/foo/bar/baz")],
    Case("ID_SpecialCharacters", _HASH, "FooBot", f"{_B}/foo/bar", True),
    Case("ID_SpecialCharacters", _HASH, "FooBot", f"{_B}/foo/quz", False),
    # Protego makes this Google extension its own, and it only ever allows more of a site
    # that allows its index.html.
    Case("GoogleOnly_IndexHTMLisDirectory", _INDEX_HTML, "foobot",
         "http://foo.com/allowed-slash/", True),
    Case("GoogleOnly_IndexHTMLisDirectory", _INDEX_HTML, "foobot",
         "http://foo.com/allowed-slash/index.htm", False),
    Case("GoogleOnly_IndexHTMLisDirectory", _INDEX_HTML, "foobot",
         "http://foo.com/allowed-slash/index.html", True),
    Case("GoogleOnly_IndexHTMLisDirectory", _INDEX_HTML, "foobot",
         "http://foo.com/anyother-url", False),
    Case("GoogleOnly_LineTooLong", _LONG_DISALLOW, "FooBot", f"{_B}/fux", True),
    Case("GoogleOnly_LineTooLong", _LONG_DISALLOW, "FooBot", f"{_B}{_LONG_D}/fux", True,
         _LONG_LINE),
    Case("GoogleOnly_LineTooLong", _LONG_ALLOWS, "FooBot", f"{_B}/", False),
    Case("GoogleOnly_LineTooLong", _LONG_ALLOWS, "FooBot", f"{_B}{_LONG_A}/qux", True),
    Case("GoogleOnly_LineTooLong", _LONG_ALLOWS, "FooBot", f"{_B}{_LONG_B}/fux", False,
         _LONG_LINE),
    *[Case("GoogleOnly_DocumentationChecks", text, "FooBot", f"{_B}{path}", allowed)
      for text, path, allowed in [
          (_FISH, "/bar", False), (_FISH, "/fish", True), (_FISH, "/fish.html", True),
          (_FISH, "/fish/salmon.html", True), (_FISH, "/fishheads", True),
          (_FISH, "/fishheads/yummy.html", True), (_FISH, "/fish.html?id=anything", True),
          (_FISH, "/Fish.asp", False), (_FISH, "/catfish", False), (_FISH, "/?id=fish", False),
          (_FISH_STAR, "/bar", False), (_FISH_STAR, "/fish", True),
          (_FISH_STAR, "/fish.html", True), (_FISH_STAR, "/fish/salmon.html", True),
          (_FISH_STAR, "/fishheads", True), (_FISH_STAR, "/fishheads/yummy.html", True),
          (_FISH_STAR, "/fish.html?id=anything", True), (_FISH_STAR, "/Fish.bar", False),
          (_FISH_STAR, "/catfish", False), (_FISH_STAR, "/?id=fish", False),
          (_FISH_DIR, "/bar", False), (_FISH_DIR, "/fish/", True),
          (_FISH_DIR, "/fish/salmon", True), (_FISH_DIR, "/fish/?salmon", True),
          (_FISH_DIR, "/fish/salmon.html", True), (_FISH_DIR, "/fish/?id=anything", True),
          (_FISH_DIR, "/fish", False), (_FISH_DIR, "/fish.html", False),
          (_FISH_DIR, "/Fish/Salmon.html", False),
          (_PHP, "/bar", False), (_PHP, "/filename.php", True),
          (_PHP, "/folder/filename.php", True), (_PHP, "/folder/filename.php?parameters", True),
          (_PHP, "//folder/any.php.file.html", True), (_PHP, "/filename.php/", True),
          (_PHP, "/index?f=filename.php/", True), (_PHP, "/php/", False),
          (_PHP, "/index?php", False), (_PHP, "/windows.PHP", False),
          (_PHP_END, "/bar", False), (_PHP_END, "/filename.php", True),
          (_PHP_END, "/folder/filename.php", True),
          (_PHP_END, "/filename.php?parameters", False), (_PHP_END, "/filename.php/", False),
          (_PHP_END, "/filename.php5", False), (_PHP_END, "/php/", False),
          (_PHP_END, "/filename?php", False), (_PHP_END, "/aaaphpaaa", False),
          (_PHP_END, "//windows.PHP", False),
          (_FISH_PHP, "/bar", False), (_FISH_PHP, "/fish.php", True),
          (_FISH_PHP, "/fishheads/catfish.php?parameters", True),
          (_FISH_PHP, "/Fish.PHP", False),
      ]],
    *[Case("GoogleOnly_DocumentationChecks", text, "FooBot", f"http://example.com{path}", allowed)
      for text, path, allowed in [
          ("user-agent: FooBot\nallow: /p\ndisallow: /\n", "/page", True),
          ("user-agent: FooBot\nallow: /folder\ndisallow: /folder\n", "/folder/page", True),
          ("user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n", "/page.htm", False),
          (_ROOT_ONLY, "/", True),
          (_ROOT_ONLY, "/page.html", False),
      ]],
    # Google skips a BOM, or the start of one, before the first line; anywhere else it spoils
    # its line. Here the rule after it is a Disallow, so that reading it shows.
    Case("ID_UTF8ByteOrderMarkIsSkipped", b"\xef\xbb\xbf" + _BOM_BODY, "foo",
         f"{_B}/AnyValue", False),
    Case("ID_UTF8ByteOrderMarkIsSkipped", b"\xef\xbb" + _BOM_BODY, "foo", f"{_B}/AnyValue",
         True, _PARTIAL_BOM),
    Case("ID_UTF8ByteOrderMarkIsSkipped", b"\xef" + _BOM_BODY, "foo", f"{_B}/AnyValue", True,
         _PARTIAL_BOM),
    Case("ID_UTF8ByteOrderMarkIsSkipped", b"\xef\x11\xbf" + _BOM_BODY, "foo", f"{_B}/AnyValue",
         True),
    Case("ID_UTF8ByteOrderMarkIsSkipped", b"User-Agent: foo\n\xef\xbb\xbfDisallow: /AnyValue\n",
         "foo", f"{_B}/AnyValue", True),
    # A Sitemap line anywhere, even inside a group, leaves the group open.
    Case("ID_NonStandardLineExample_Sitemap",
         "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nSitemap: http://foo.bar/s.xml\n"
         "Disallow: /\n", "bar", f"{_B}/x", False),
    Case("ID_NonStandardLineExample_Sitemap",
         "Sitemap: http://foo.bar/s.xml\nUser-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n"
         "\n\nDisallow: /\n", "bar", f"{_B}/x", False),
    # What rules match: the path, parameters and query, never the fragment; "/" when the URL
    # has no path.
    *[Case("TestGetPathParamsQuery", f"user-agent: FooBot\ndisallow: {rule}\n", "FooBot", url,
           False)
      for rule, url in [
          ("/$", "http://www.example.com"),
          ("/a/b?c=http://d.e/$", "http://www.example.com/a/b?c=http://d.e/"),
          ("/a/b?c=d&e=f$", "http://www.example.com/a/b?c=d&e=f#fragment"),
          ("/?a$", "http://example.com?a"),
          ("/a;b$", "http://example.com/a;b#c"),
      ]],
    # A rule is percent-encoded as a URL is, and escapes compare whatever their case.
    *[Case("TestMaybeEscapePattern", f"user-agent: FooBot\ndisallow: {rule}\n", "FooBot", url,
           False)
      for rule, url in [
          ("/á", "http://example.com/%C3%A1"),
          ("/%aa", "http://example.com/%AA"),
          ("/%AA", "http://example.com/%aa"),
      ]],
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.name}-{n}" for n, c in enumerate(CASES)])
def test_googles_case(case: Case) -> None:
    body = case.robots_txt if isinstance(case.robots_txt, bytes) else case.robots_txt.encode()
    record = record_from_fetch(200, body, "", NOW, RobotsSection())

    allowed, _ = RobotsPolicy(record, case.token, 30.0).verdict(case.url)

    assert allowed is case.allowed, case.differs or "Google's verdict"


# ID_VerifyValidUserAgentsToObey (and the "Foo Bar" query of
# GoogleOnly_AcceptUserAgentUpToFirstSpace): the token we obey is the configured product token,
# so what Google refuses to obey is what the configuration must refuse.
TOKENS = [
    ("Foobot", True, ""),
    ("Foobot-Bar", True, ""),
    ("Foo_Bar", True, ""),
    ("", False, ""),
    ("ツ", False, ""),
    ("Foobot2", False, ""),  # RFC 9309 2.2.1: letters, "_" and "-" only
    ("Foobot*", False, ""),
    (" Foobot ", False, ""),
    ("Foobot/2.1", False, ""),
    ("Foobot Bar", False, ""),
    ("Foo Bar", False, ""),
]


@pytest.mark.parametrize(("token", "valid", "differs"), TOKENS)
def test_product_token_validity(token: str, valid: bool, differs: str) -> None:
    overrides = {"user_agent.product": token}

    if valid:
        assert load_config(overrides=overrides).user_agent.product == token, differs
    else:
        with pytest.raises(ConfigError, match=r"^user_agent\.product: "):
            load_config(overrides=overrides)
