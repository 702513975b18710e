"""The robots.txt of each synthetic host: what is served, and what it means under RFC 9309.

A :class:`RobotsFile` holds both the bytes a host serves at ``/robots.txt`` and the groups a
conforming parser extracts from them. For the well-formed kinds the text is rendered from the
groups; for the odd ones (:attr:`RobotsKind.GARBAGE`) the meaning is written down by hand next to
the text, and the unit tests check both against Protego, the parser the crawler uses.

The meaning follows RFC 9309: a 4xx status allows everything, a 5xx status disallows everything;
the crawler obeys the group naming its product token (case-insensitive, merged if repeated), or
else the ``*`` group; the longest matching pattern wins and an Allow wins a tie with a Disallow;
``*`` matches any run of characters and a trailing ``$`` anchors the end; ``/robots.txt`` itself
is always allowed.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable

from synthweb.compat import StrEnum

__all__ = ["RobotsFile", "RobotsGroup", "RobotsKind", "Rule", "build_robots", "with_sitemaps"]


class RobotsKind(StrEnum):
    """How a host answers ``/robots.txt``."""

    #: 200 with a ``*`` group of Disallow/Allow rules (longest match, wildcards, ties).
    NORMAL = "normal"
    #: 200 with a group naming the crawler's product token whose rules differ from ``*``.
    AGENT_GROUP = "agent-group"
    #: 200 with rules and a decimal ``Crawl-delay`` in the ``*`` group; the host is small.
    CRAWL_DELAY = "crawl-delay"
    #: 4xx (404, 410 or 403): everything is allowed.
    MISSING = "missing"
    #: 5xx: nothing else on the host may be fetched.
    UNAVAILABLE = "unavailable"
    #: 200 with garbage or odd content that a conforming parser reads as allow-all or partial.
    GARBAGE = "garbage"


@dataclasses.dataclass(frozen=True, slots=True)
class Rule:
    """One Allow or Disallow line: ``pattern`` as written (ASCII, may hold ``*`` and ``$``)."""

    allow: bool
    pattern: str

    def matches(self, path: str) -> bool:
        """Whether the pattern matches ``path`` (RFC 9309, section 2.2.3)."""
        return _pattern_regex(self.pattern).match(path) is not None


@dataclasses.dataclass(frozen=True, slots=True)
class RobotsGroup:
    """A group: the product tokens it names (lower-case, or ``*``) and its rules."""

    agents: tuple[str, ...]
    rules: tuple[Rule, ...]
    crawl_delay: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class RobotsFile:
    """What one host serves at ``/robots.txt`` and what that means for a given product token."""

    host: str
    kind: RobotsKind
    #: A short name of the variant within the kind (``"bom-partial"``, ``"html"`` ...).
    variant: str
    status: int
    content_type: str
    body: bytes
    #: The groups a conforming parser extracts from ``body`` (empty unless status is 200).
    groups: tuple[RobotsGroup, ...]

    @property
    def disallows_all(self) -> bool:
        """True when the status forbids fetching anything else from the host (5xx)."""
        return self.status >= 500

    def group_for(self, agent_token: str) -> RobotsGroup | None:
        """The rules that apply to ``agent_token``: its own groups merged, else ``*``, else None."""
        token = agent_token.lower()
        for wanted in (token, "*"):
            chosen = [group for group in self.groups if wanted in group.agents]
            if chosen:
                delays = [g.crawl_delay for g in chosen if g.crawl_delay is not None]
                return RobotsGroup(
                    agents=(wanted,),
                    rules=tuple(rule for group in chosen for rule in group.rules),
                    crawl_delay=delays[-1] if delays else None,
                )
        return None

    def allowed(self, path: str, agent_token: str) -> bool:
        """Whether a crawler identifying as ``agent_token`` may fetch ``path`` on this host."""
        if self.disallows_all:
            return False
        if path == "/robots.txt" or self.status >= 400:
            return True
        group = self.group_for(agent_token)
        if group is None:
            return True
        best: Rule | None = None
        for rule in group.rules:
            if not rule.matches(path):
                continue
            if (
                best is None
                or len(rule.pattern) > len(best.pattern)
                or (len(rule.pattern) == len(best.pattern) and rule.allow)
            ):
                best = rule
        return best is None or best.allow

    def crawl_delay(self, agent_token: str) -> float | None:
        """The Crawl-delay in seconds that applies to ``agent_token``, if any."""
        if self.status != 200:
            return None
        group = self.group_for(agent_token)
        return group.crawl_delay if group else None


_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    regex = _REGEX_CACHE.get(pattern)
    if regex is None:
        anchored = pattern.endswith("$")
        body = pattern[:-1] if anchored else pattern
        source = ".*".join(re.escape(part) for part in body.split("*"))
        regex = re.compile(source + (r"\Z" if anchored else ""))
        _REGEX_CACHE[pattern] = regex
    return regex


# The garbage variants, cycled over the hosts of that kind so that a small web has each of them.
GARBAGE_VARIANTS = ("bom-partial", "no-group", "html", "junk-bytes")


def build_robots(
    host: str,
    kind: RobotsKind,
    rng: random.Random,
    *,
    named_agents: tuple[str, ...],
    crawl_delays: tuple[float, ...],
    variant_index: int = 0,
    showcase: bool = False,
) -> RobotsFile:
    """Build the robots.txt of ``host`` of the given kind, drawing its details from ``rng``.

    ``named_agents`` are the product tokens an :attr:`RobotsKind.AGENT_GROUP` file names;
    ``variant_index`` picks the garbage variant; ``showcase`` gives the fixed, plain rules of the
    host that demonstrates every feature (``h0``).
    """
    header = f"# robots.txt for {host}\n"
    if kind is RobotsKind.MISSING:
        status = rng.choice((404, 404, 410, 403))
        return _plain(host, kind, f"status-{status}", status, b"Not found\n", ())
    if kind is RobotsKind.UNAVAILABLE:
        status = rng.choice((500, 503))
        body = b"Service temporarily unavailable\n"
        return _plain(host, kind, f"status-{status}", status, body, ())
    if kind is RobotsKind.GARBAGE:
        return _garbage(host, GARBAGE_VARIANTS[variant_index % len(GARBAGE_VARIANTS)], rng)

    private = (Rule(False, "/private/"), Rule(True, "/private/public/"))
    if kind is RobotsKind.NORMAL:
        rules = list(private)
        variant = "private"
        if not showcase and rng.random() < 0.5:
            rules.append(Rule(False, "/*.txt$"))
            variant += "+txt-wildcard"
        if not showcase and rng.random() < 0.4:
            # Equal length: the Allow wins the tie, so /p/1, /p/10 ... stay allowed.
            rules += [Rule(False, "/p/1"), Rule(True, "/*/1")]
            variant += "+tie"
        groups = (RobotsGroup(("*",), tuple(rules)),)
        return _plain(host, kind, variant, 200, (header + _render(groups)).encode(), groups)
    if kind is RobotsKind.CRAWL_DELAY:
        delay = rng.choice(crawl_delays)
        groups = (RobotsGroup(("*",), private, crawl_delay=delay),)
        text = header + _render(groups)
        return _plain(host, kind, f"delay-{delay:g}", 200, text.encode(), groups)
    if kind is RobotsKind.AGENT_GROUP:
        return _agent_group(host, rng, named_agents, header)
    raise ValueError(f"unknown robots kind {kind!r}")


def with_sitemaps(robots: RobotsFile, urls: tuple[str, ...]) -> RobotsFile:
    """``robots`` with a ``Sitemap:`` line for each of ``urls`` after a blank line at its end.

    The lines belong to no group (RFC 9309, section 2.2.4: other records), so the groups, and
    what the file means for any product token, stay as they were.
    """
    lines = "".join(f"Sitemap: {url}\n" for url in urls)
    return dataclasses.replace(robots, body=robots.body + b"\n" + lines.encode())


def _agent_group(
    host: str, rng: random.Random, named_agents: tuple[str, ...], header: str
) -> RobotsFile:
    # Our token may fetch /private/ and /for-bots/ but not /no-bots/; "*" is the other way
    # round, so a crawler that obeys the wrong group gets every one of these wrong.
    star = RobotsGroup(("*",), (Rule(False, "/private/"), Rule(False, "/for-bots/")))
    decoy = RobotsGroup(("otherbot",), (Rule(False, "/"),))
    shared = rng.random() < 0.5
    ours_agents = tuple(a.lower() for a in named_agents) + (("someothercrawler",) if shared else ())
    ours = RobotsGroup(ours_agents, (Rule(False, "/no-bots/"),))
    groups = (star, decoy, ours)
    # Never the token's own spelling: the group must be matched case-insensitively.
    spelling = rng.choice((str.upper, str.title))
    names = {"otherbot": "OtherBot", "someothercrawler": "SomeOtherCrawler"}
    text = header + _render(groups, lambda a: names.get(a) or spelling(a))
    variant = "shared-group" if shared else "own-group"
    return _plain(host, RobotsKind.AGENT_GROUP, variant, 200, text.encode(), groups)


def _garbage(host: str, variant: str, rng: random.Random) -> RobotsFile:
    kind = RobotsKind.GARBAGE
    if variant == "bom-partial":
        # A UTF-8 BOM, odd spacing and case, unknown directives, a malformed Crawl-delay, an
        # empty Disallow and CRLF line ends: a conforming parser keeps the two Disallow lines.
        lines = [
            "\ufeffuser-AGENT:   *   ",
            "# members only below",
            "Disallow:/private/",
            "Noindex: /p/",
            "this line means nothing",
            "Disallow: /p/2   # and everything under it",
            "Allow:",
            "Crawl-delay: soon",
            "<meta name=robots>",
        ]
        groups = (RobotsGroup(("*",), (Rule(False, "/private/"), Rule(False, "/p/2"))),)
        body = "\r\n".join(lines).encode("utf-8") + b"\r\n"
        return _plain(host, kind, variant, 200, body, groups)
    if variant == "no-group":
        # Rules outside any group apply to nobody: a parser that reads them blocks the site.
        text = "# nothing here is for robots\nDisallow: /\nCrawl-delay: 5\n"
        return _plain(host, kind, variant, 200, text.encode(), ())
    if variant == "html":
        # A soft 404: the site answers every path with its home page.
        text = (
            "<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n"
            "<body><h1>Welcome to our site</h1><p>Nothing to see here</p></body></html>\n"
        )
        return RobotsFile(host, kind, variant, 200, "text/html; charset=utf-8", text.encode(), ())
    if variant == "junk-bytes":
        junk = bytes(b for b in rng.randbytes(600) if b not in b":#")
        return RobotsFile(host, kind, variant, 200, "text/plain", junk, ())
    raise ValueError(f"unknown garbage variant {variant!r}")


def _plain(
    host: str,
    kind: RobotsKind,
    variant: str,
    status: int,
    body: bytes,
    groups: tuple[RobotsGroup, ...],
) -> RobotsFile:
    return RobotsFile(host, kind, variant, status, "text/plain; charset=utf-8", body, groups)


def _render(groups: tuple[RobotsGroup, ...], spell: Callable[[str], str] | None = None) -> str:
    blocks = []
    for group in groups:
        lines = [f"User-agent: {spell(a) if spell else a}" for a in group.agents]
        lines += [f"{'Allow' if r.allow else 'Disallow'}: {r.pattern}" for r in group.rules]
        if group.crawl_delay is not None:
            lines.append(f"Crawl-delay: {group.crawl_delay:g}")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)
