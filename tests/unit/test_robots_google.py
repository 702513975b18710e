"""Google's robots.txt test cases, run through our robots.txt policy (crawl/robots.py).

The cases are those of ``robots_test.cc`` in github.com/google/robotstxt (Apache-2.0), the
reference tests of RFC 9309's authors, that say whether one product token may fetch one URL.
Each row is (test name, robots.txt, token, URL, allowed). Our crawler obeys one product token
(``user_agent.product``), so the cases that pass a whole User-Agent string or an invalid token
(``Foo Bar``) are left out. The ``GoogleOnly_`` cases test Google's extensions to the RFC;
kept from them: the rows RFC 9309 decides the same way, and the reading of ``User-agent: Foo
Bar`` as ``Foo``, which we adopt (the polite reading, see :func:`crawl.robots.rfc_lines`). Left
out: a missing colon taken as one, ``index.html`` standing for its directory, the line-length
cut-off, and the URL-less cases of the system test.
"""

from __future__ import annotations

import pytest

from crawl.config import RobotsSection
from crawl.robots import RobotsPolicy, record_from_fetch

NOW = 1_700_000_000_000

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
_FISH = "user-agent: FooBot\ndisallow: /\nallow: /fish\n"
_FISH_STAR = "user-agent: FooBot\ndisallow: /\nallow: /fish*\n"
_FISH_DIR = "user-agent: FooBot\ndisallow: /\nallow: /fish/\n"
_PHP = "user-agent: FooBot\ndisallow: /\nallow: /*.php\n"
_PHP_END = "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n"
_FISH_PHP = "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n"
_B = "http://foo.bar"

CASES = [
    ("ID_LineSyntax_Line", "user-agent: FooBot\ndisallow: /\n", "FooBot", f"{_B}/x/y", False),
    ("ID_LineSyntax_Line", "foo: FooBot\nbar: /\n", "FooBot", f"{_B}/x/y", True),
    ("ID_LineSyntax_Groups", _GROUPS, "FooBot", f"{_B}/x/b", True),
    ("ID_LineSyntax_Groups", _GROUPS, "FooBot", f"{_B}/z/d", True),
    ("ID_LineSyntax_Groups", _GROUPS, "FooBot", f"{_B}/y/c", False),
    ("ID_LineSyntax_Groups", _GROUPS, "BarBot", f"{_B}/y/c", True),
    ("ID_LineSyntax_Groups", _GROUPS, "BarBot", f"{_B}/w/a", True),
    ("ID_LineSyntax_Groups", _GROUPS, "BarBot", f"{_B}/z/d", False),
    ("ID_LineSyntax_Groups", _GROUPS, "BazBot", f"{_B}/z/d", True),
    ("ID_LineSyntax_Groups", _GROUPS, "FooBot", f"{_B}/foo/bar/", False),
    ("ID_LineSyntax_Groups", _GROUPS, "BarBot", f"{_B}/foo/bar/", False),
    ("ID_LineSyntax_Groups", _GROUPS, "BazBot", f"{_B}/foo/bar/", False),
    ("ID_LineSyntax_Groups_OtherRules", _OTHER_RULES_1, "FooBot", f"{_B}/", False),
    ("ID_LineSyntax_Groups_OtherRules", _OTHER_RULES_1, "BarBot", f"{_B}/", False),
    ("ID_LineSyntax_Groups_OtherRules", _OTHER_RULES_2, "FooBot", f"{_B}/", False),
    ("ID_LineSyntax_Groups_OtherRules", _OTHER_RULES_2, "BarBot", f"{_B}/", False),
    *[("ID_REPLineNamesCaseInsensitive", text, "FooBot", f"{_B}/x/y", True)
      for text in (_UPPER, _LOWER, _CAMEL)],
    *[("ID_REPLineNamesCaseInsensitive", text, "FooBot", f"{_B}/a/b", False)
      for text in (_UPPER, _LOWER, _CAMEL)],
    *[("ID_UserAgentValueCaseInsensitive", f"User-Agent: {name}\nAllow: /x/\nDisallow: /\n",
       token, url, allowed)
      for name in ("FOO BAR", "foo bar", "FoO bAr")
      for token in ("Foo", "foo")
      for url, allowed in ((f"{_B}/x/y", True), (f"{_B}/a/b", False))],
    ("GoogleOnly_AcceptUserAgentUpToFirstSpace",
     "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
     "Foo", f"{_B}/x/y", True),
    ("ID_GlobalGroups_Secondary", "", "FooBot", f"{_B}/x/y", True),
    ("ID_GlobalGroups_Secondary", _GLOBAL, "FooBot", f"{_B}/x/y", False),
    ("ID_GlobalGroups_Secondary", _GLOBAL, "BarBot", f"{_B}/x/y", True),
    ("ID_GlobalGroups_Secondary", _SPECIFIC, "QuxBot", f"{_B}/x/y", True),
    ("ID_AllowDisallow_Value_CaseSensitive", "user-agent: FooBot\ndisallow: /x/\n", "FooBot",
     f"{_B}/x/y", False),
    ("ID_AllowDisallow_Value_CaseSensitive", "user-agent: FooBot\ndisallow: /X/\n", "FooBot",
     f"{_B}/x/y", True),
    ("ID_LongestMatch", "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n", "FooBot",
     f"{_B}/x/page.html", False),
    ("ID_LongestMatch", "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n", "FooBot",
     f"{_B}/x/page.html", True),
    ("ID_LongestMatch", "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n", "FooBot",
     f"{_B}/x/", False),
    ("ID_LongestMatch", "user-agent: FooBot\ndisallow: \nallow: \n", "FooBot",
     f"{_B}/x/page.html", True),
    ("ID_LongestMatch", "user-agent: FooBot\ndisallow: /\nallow: /\n", "FooBot",
     f"{_B}/x/page.html", True),
    ("ID_LongestMatch", "user-agent: FooBot\ndisallow: /x\nallow: /x/\n", "FooBot",
     f"{_B}/x", False),
    ("ID_LongestMatch", "user-agent: FooBot\ndisallow: /x\nallow: /x/\n", "FooBot",
     f"{_B}/x/", True),
    ("ID_LongestMatch", "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n",
     "FooBot", f"{_B}/x/page.html", True),
    ("ID_LongestMatch", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "FooBot",
     f"{_B}/page.html", False),
    ("ID_LongestMatch", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "FooBot",
     f"{_B}/page", True),
    ("ID_LongestMatch", "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n", "FooBot",
     f"{_B}/x/page.html", True),
    ("ID_LongestMatch", "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n", "FooBot",
     f"{_B}/x/y.html", False),
    ("ID_LongestMatch", "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
     "FooBot", f"{_B}/x/page", True),
    ("ID_LongestMatch", "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
     "FooBot", f"{_B}/y/page", False),
    ("ID_Encoding",
     "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
     "FooBot", f"{_B}/foo/bar?qux=taz&baz=http://foo.bar?tar&par", True),
    ("ID_Encoding", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n", "FooBot",
     f"{_B}/foo/bar/%E3%83%84", True),
    ("ID_Encoding", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n", "FooBot",
     f"{_B}/foo/bar/%E3%83%84", True),
    ("ID_SpecialCharacters", "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
     "FooBot", f"{_B}/foo/bar/quz", False),
    *[("ID_SpecialCharacters",
       "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n", "FooBot", url, True)
      for url in (f"{_B}/foo/quz", f"{_B}/foo//quz", f"{_B}/foo/bax/quz")],
    ("ID_SpecialCharacters", "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
     "FooBot", f"{_B}/foo/bar", False),
    *[("ID_SpecialCharacters",
       "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n", "FooBot", url, True)
      for url in (f"{_B}/foo/bar/qux", f"{_B}/foo/bar/", f"{_B}/foo/bar/baz")],
    ("ID_SpecialCharacters",
     "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n", "FooBot",
     f"{_B}/foo/bar", True),
    ("ID_SpecialCharacters",
     "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n", "FooBot",
     f"{_B}/foo/quz", False),
    ("GoogleOnly_IndexHTMLisDirectory",
     "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", "foobot",
     "http://foo.com/allowed-slash/index.html", True),
    ("GoogleOnly_IndexHTMLisDirectory",
     "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", "foobot",
     "http://foo.com/allowed-slash/index.htm", False),
    ("GoogleOnly_IndexHTMLisDirectory",
     "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", "foobot",
     "http://foo.com/anyother-url", False),
    *[("GoogleOnly_DocumentationChecks", text, "FooBot", f"{_B}{path}", allowed)
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
          ("user-agent: FooBot\nallow: /p\ndisallow: /\n", "/page", True),
          ("user-agent: FooBot\nallow: /folder\ndisallow: /folder\n", "/folder/page", True),
          ("user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n", "/page.htm", False),
          ("user-agent: FooBot\nallow: /$\ndisallow: /\n", "/", True),
          ("user-agent: FooBot\nallow: /$\ndisallow: /\n", "/page.html", False),
      ]],
    ("ID_UTF8ByteOrderMarkIsSkipped", "\ufeffUser-Agent: foo\nAllow: /AnyValue\n", "foo",
     f"{_B}/AnyValue", True),
    ("ID_NonStandardLineExample_Sitemap",
     "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nSitemap: http://foo.bar/s.xml\n"
     "Disallow: /\n", "bar", f"{_B}/x", False),
]


@pytest.mark.parametrize(("case", "robots_txt", "token", "url", "allowed"), CASES,
                         ids=[f"{c[0]}-{n}" for n, c in enumerate(CASES)])
def test_googles_case(case: str, robots_txt: str, token: str, url: str, allowed: bool) -> None:
    record = record_from_fetch(200, robots_txt.encode(), "", NOW, RobotsSection())
    verdict, _ = RobotsPolicy(record, token, 30.0).verdict(url)
    assert verdict is allowed, case
