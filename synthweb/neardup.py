"""The near-duplicate profile of the synthetic web: one article on several sites, and decoys.

Off unless ``WebConfig.near_duplicate_groups`` or ``near_duplicate_edited_groups`` is above 0
(:meth:`~synthweb.config.WebConfig.with_near_duplicate_profile`); off, nothing here is served
and the web is byte for byte what it was. On, normal hosts whose robots.txt lets every crawler
fetch ``/news/`` (not the showcase) serve pages ``/news/{n}``, linked from their home pages,
which ``h0``'s home page links:

- **groups**: an article served on ``near_duplicate_group_size`` hosts, each copy in its host's
  boilerplate and one of :data:`LAYOUTS`, with its own date and counter lines, advertisement
  (marked up as in :data:`AD_MARKUP`), tracking parameters and markup: near-duplicates as
  Manku, Jain and Das Sarma define them (WWW 2007);
- **edited groups**: the same, with one to four words of the article changed on every copy
  after the first;
- **decoys**: ``near_duplicate_decoys_per_group`` pages a group, with the copies' boilerplate and
  an article of their own (half of them short): near-duplicates of nothing.

Articles are sentences of synthetic words (a Zipf-like draw from a few thousand, mixed with
English function words), so articles share common word runs but no passage. The ground truth
is :meth:`~synthweb.graph.SyntheticWeb.near_duplicate_groups`, ``near_duplicate_edited_groups``
and ``near_duplicate_decoys``. This module holds what needs no model: the placement of pages,
articles, edits and rendering.
"""

from __future__ import annotations

import bisect
import dataclasses
import html
import itertools
import random
import re
import urllib.parse
from collections.abc import Callable

from synthweb.urls import nohost_name

__all__ = ["AD_MARKUP", "ArticlePage", "Placement", "article_page", "headline", "place"]

# -- words ---------------------------------------------------------------------------------

_ONSETS = (
    "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
    "br", "ch", "cl", "dr", "fl", "gr", "pl", "pr", "sh", "st", "th", "tr",
)  # fmt: skip
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou")
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "nd", "st")
_FUNCTION_WORDS = (
    "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "was", "with", "on",
    "by", "at", "from", "this", "be", "or", "are", "an", "which", "but", "not", "have", "had",
    "their", "its", "were", "they", "after", "more", "who", "will", "than", "into", "over",
)  # fmt: skip
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
_SECTIONS = (
    "Home", "World", "Business", "Technology", "Science", "Health", "Sport", "Culture",
    "Travel", "Opinion", "Weather", "Local", "Video", "Podcasts", "Newsletters", "Markets",
    "Politics", "Education", "Food", "Books", "Music", "Obituaries", "Property", "Jobs",
)  # fmt: skip
LAYOUTS = ("sections", "divs", "table")


def _vocabulary() -> tuple[str, ...]:
    rng = random.Random("synthweb:neardup:vocabulary")
    words: dict[str, None] = {}
    while len(words) < 4000:
        syllables = rng.choice((1, 2, 2, 3, 3))
        word = "".join(rng.choice(_ONSETS) + rng.choice(_NUCLEI) for _ in range(syllables))
        words.setdefault(word + rng.choice(_CODAS), None)
    return tuple(words)


_WORDS = _vocabulary()
# Zipf-like: the r-th word drawn with weight 1 / (r + 8).
_WORD_WEIGHTS = tuple(itertools.accumulate(1.0 / (r + 8) for r in range(len(_WORDS))))
_FUNCTION_WEIGHTS = tuple(itertools.accumulate(1.0 / (r + 2) for r in range(len(_FUNCTION_WORDS))))
_FUNCTION_SHARE = 0.4


def _word(rng: random.Random) -> str:
    if rng.random() < _FUNCTION_SHARE:
        weights, words = _FUNCTION_WEIGHTS, _FUNCTION_WORDS
    else:
        weights, words = _WORD_WEIGHTS, _WORDS
    return words[bisect.bisect(weights, rng.random() * weights[-1])]


def _content_word(rng: random.Random) -> str:
    return _WORDS[bisect.bisect(_WORD_WEIGHTS, rng.random() * _WORD_WEIGHTS[-1])]


def _sentence(rng: random.Random, low: int = 8, high: int = 22) -> list[str]:
    words = [_word(rng) for _ in range(rng.randint(low, high))]
    words[0] = words[0].capitalize()
    return words


def _title(rng: random.Random, low: int, high: int) -> str:
    return " ".join(_content_word(rng).capitalize() for _ in range(rng.randint(low, high)))


# -- placement -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Placement:
    """One page of the profile: a copy of group ``group``'s article (``decoy`` -1), or decoy
    number ``decoy`` of that group (the copies' hosts in turn). ``edited``: the group is one of
    the edited groups (its copies after the first have words of the article changed), numbered
    apart from the others."""

    group: int
    copy: int
    decoy: int = -1
    edited: bool = False

    @property
    def article_key(self) -> str:
        """What names the page's article: the group's, or the decoy's own."""
        group = f"edited:{self.group}" if self.edited else f"group:{self.group}"
        if self.decoy < 0:
            return group
        return f"decoy:{group}:{self.decoy}"


def place(
    seed: int, hosts: list[int], groups: int, size: int, decoys: int, edited: int = 0
) -> dict[int, tuple[Placement, ...]]:
    """host index -> its pages of the profile, in path order: each group's copies on ``size``
    different hosts drawn from ``hosts`` (repeating hosts only when there are fewer), its
    decoys on the hosts of its copies; the ``groups`` groups first, then the ``edited`` ones."""
    if not hosts or not (groups or edited):
        return {}
    rng = random.Random(f"synthweb:{seed}:neardup:place")
    placed: dict[int, list[Placement]] = {}
    kinds = [(group, False) for group in range(groups)] + [(g, True) for g in range(edited)]
    for group, is_edited in kinds:
        order = list(hosts)
        rng.shuffle(order)
        chosen = [order[i % len(order)] for i in range(size)]
        for copy, host in enumerate(chosen):
            placed.setdefault(host, []).append(Placement(group, copy, edited=is_edited))
        for decoy in range(decoys):
            placed.setdefault(chosen[decoy % size], []).append(
                Placement(group, -1, decoy, is_edited)
            )
    return {host: tuple(pages) for host, pages in sorted(placed.items())}


# -- articles ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Article:
    headline: str
    paragraphs: tuple[tuple[str, ...], ...]  # words, a sentence ending in a word with "."


def headline(seed: int, key: str) -> str:
    """The headline of the article ``key`` (:attr:`Placement.article_key`)."""
    return _title(random.Random(f"synthweb:{seed}:neardup:headline:{key}"), 4, 9)


def _article(seed: int, key: str) -> _Article:
    rng = random.Random(f"synthweb:{seed}:neardup:article:{key}")
    brief = key.startswith("decoy:") and rng.random() < 0.5
    count = rng.randint(1, 2) if brief else rng.randint(3, 7)
    paragraphs = []
    for _ in range(count):
        words: list[str] = []
        for _ in range(rng.randint(2, 3) if brief else rng.randint(2, 5)):
            sentence = _sentence(rng)
            sentence[-1] += "."
            words += sentence
        paragraphs.append(tuple(words))
    return _Article(headline(seed, key), tuple(paragraphs))


def _edited(article: _Article, rng: random.Random) -> _Article:
    """The article with one to four words replaced by other words of the vocabulary."""
    paragraphs = [list(words) for words in article.paragraphs]
    spots = [(p, w) for p, words in enumerate(paragraphs) for w in range(len(words))]
    for p, w in rng.sample(spots, min(len(spots), rng.randint(1, 4))):
        old = paragraphs[p][w]
        new = _content_word(rng)
        if old[:1].isupper():
            new = new.capitalize()
        paragraphs[p][w] = new + ("." if old.endswith(".") else "")
    return _Article(article.headline, tuple(tuple(words) for words in paragraphs))


# -- sites ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Site:
    name: str
    tagline: str
    layout: str
    sections: tuple[str, ...]
    cookie_notice: str
    disclaimer: str
    footer_links: tuple[str, ...]
    #: (headline, nothing more): the related links' texts, matched to targets in order
    related_titles: tuple[str, ...]
    #: How the site marks up its advertisements: (tag, attributes), see :data:`AD_MARKUP`.
    ad_markup: tuple[str, str]
    #: Whether its advertisements sit within the article (between paragraphs) or after it.
    ad_within: bool


#: Advertisement blocks as sites mark them up: (tag, attributes; ``{n}`` a number of the page).
AD_MARKUP = (
    ("aside", 'class="ad"'),
    ("div", 'class="advert"'),
    ("div", 'id="sponsored"'),
    ("div", 'class="ad-slot ad-300x250"'),
    ("section", 'class="promo"'),
    ("div", 'id="div-gpt-ad-{n}-0"'),
    ("div", 'class="banner-ad"'),
    ("div", 'class="adContainer" data-slot="{n}"'),
)
_AD_LABELS = ("Advertisement", "Sponsored", "Advertisement", "Promoted", "Partner content")


def _site(seed: int, host: str) -> _Site:
    rng = random.Random(f"synthweb:{seed}:neardup:site:{host}")
    name = f"The {_title(rng, 1, 2)} {rng.choice(('Herald', 'Gazette', 'Post', 'Courier'))}"
    tagline = " ".join(_sentence(rng, 6, 12)) + "."
    sections = tuple(rng.sample(_SECTIONS[1:], rng.randint(5, 11)))
    cookie = (
        f"{name} uses cookies to give you the best experience. "
        + " ".join(_sentence(rng, 8, 16))
        + ". Accept all cookies or manage your preferences."
    )
    disclaimer = " ".join(
        " ".join(_sentence(rng, 10, 18)) + "." for _ in range(rng.randint(2, 3))
    )
    footer = tuple(
        rng.sample(
            ("About us", "Contact", "Privacy policy", "Terms of use", "Advertise", "Careers",
             "Accessibility", "Corrections", "Subscribe", "Help"),
            rng.randint(4, 7),
        )
    )  # fmt: skip
    related = tuple(_title(rng, 3, 7) for _ in range(8))
    layout = rng.choice(LAYOUTS)
    ad_markup = rng.choice(AD_MARKUP)
    return _Site(
        name, tagline, layout, sections, cookie, disclaimer, footer, related, ad_markup,
        rng.random() < 0.5,
    )  # fmt: skip


# -- pages ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class ArticlePage:
    """What the server answers for a page of the profile: its ``<a href>`` links in document
    order (href as written, canonical URL) and its body."""

    links: tuple[tuple[str, str], ...]
    body: bytes


def article_page(
    seed: int,
    host: str,
    path: str,
    placement: Placement,
    nav_paths: tuple[str, ...],
    related: tuple[tuple[str, str], ...],
) -> ArticlePage:
    """The page at ``path`` on ``host`` showing ``placement``'s article in the host's layout.

    ``nav_paths``: paths of the host that its navigation links (the first is the home page);
    ``related``: (path, headline or "") of the host's pages the related list links, in any
    order (the page shuffles them; an empty headline takes one of the site's own titles).

    What differs between two copies of one article (besides the host's boilerplate and
    layout): the date and counter line, the "comments / last updated" line, the order of the
    related links, an advertisement of its own (a few sentences, marked up as the site marks
    its advertisements, within the article or after it), tracking parameters in the links of
    the advertisement and of the share line, and the markup of the article: paragraphs split
    or joined elsewhere, some words in ``<b>``/``<i>``/``<em>``/``<strong>``, line breaks and
    indentation. The article's words are the same, unless the placement is a copy of an
    edited group (one to four words changed).
    """
    site = _site(seed, host)
    rng = random.Random(f"synthweb:{seed}:neardup:page:{host}:{path}")
    article = _article(seed, placement.article_key)
    if placement.edited and placement.decoy < 0 and placement.copy > 0:
        article = _edited(article, rng)

    def anchor(href: str, text: str) -> str:
        return f'<a href="{html.escape(href, quote=True)}">{html.escape(text)}</a>'

    nav_texts = ("Home", *site.sections)
    nav = [anchor(p, nav_texts[i % len(nav_texts)]) for i, p in enumerate(nav_paths)]
    extra_titles = iter(site.related_titles)
    items = [(p, title or next(extra_titles, "More news")) for p, title in related]
    rng.shuffle(items)
    day = rng.randint(1, 28)
    date_line = (
        f"Published {day} {rng.choice(_MONTHS)} 2026, updated {rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d} \u00b7 {rng.randint(100, 99_999):,} views \u00b7 "
        f"{rng.randint(0, 400)} comments"
    )
    updated_line = (
        f"Comments: {rng.randint(0, 900)} \u00b7 Last updated {rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d}, {rng.randint(1, 28)} {rng.choice(_MONTHS)} 2026"
    )
    blocks = [_render_paragraph(words, rng) for words in _regrouped(article.paragraphs, rng)]
    ad = _advertisement(rng, site, host, anchor)
    if site.ad_within and len(blocks) > 1:
        blocks.insert(rng.randint(1, len(blocks) - 1), ad)
        ad = ""
    paragraphs = "\n".join(blocks)
    share = _share_line(rng, host, path, anchor)
    title = html.escape(article.headline)
    tracker = (
        f"<script>window.dataLayer = window.dataLayer || []; dataLayer.push({{'section': "
        f"'news', 'page': '{html.escape(path)}', 'words': {sum(map(len, article.paragraphs))}"
        f"}});</script>"
    )
    style = "<style>body { font-family: Georgia, serif } .menu a { margin: 0 4px }</style>"
    noscript = "<noscript>Please enable JavaScript to read and post comments.</noscript>"
    if site.layout == "sections":
        related_html = "\n".join(f"<li>{anchor(p, t)}</li>" for p, t in items)
        nav_html = "".join(f"<li>{a}</li>" for a in nav)
        header = (
            f"<header><div class=\"brand\">{html.escape(site.name)}</div>"
            f"<p class=\"tagline\">{html.escape(site.tagline)}</p>"
            f"<nav><ul>{nav_html}</ul></nav></header>\n"
            f"<div class=\"cookies\">{html.escape(site.cookie_notice)}</div>\n"
        )
        main = (
            f"<main><article><h1>{title}</h1>\n<p class=\"meta\">{date_line}</p>\n{paragraphs}\n"
            f"<p class=\"updated\">{updated_line}</p>\n{share}</article>\n{ad}"
            f"<aside><h2>Related</h2><ul>\n{related_html}\n</ul></aside></main>\n"
        )
        footer_links = " ".join(anchor(nav_paths[0], t) for t in site.footer_links)
        footer = (
            f"<footer><p>{footer_links}</p><p>\u00a9 2026 {html.escape(site.name)}. "
            f"{html.escape(site.disclaimer)}</p></footer>\n"
        )
        body = header + main + noscript + footer
    elif site.layout == "divs":
        nav_html = " | ".join(nav)
        header = (
            f"<div id=\"top\"><div class=\"logo\">{html.escape(site.name)}</div>"
            f"<div class=\"menu\">{nav_html}</div>"
            f"<div class=\"slogan\">{html.escape(site.tagline)}</div></div>\n"
        )
        content = (
            f"<div id=\"content\"><div class=\"story\"><h2>{title}</h2>\n"
            f"<div class=\"byline\">{date_line}</div>\n{paragraphs}\n"
            f"<div class=\"stamp\">{updated_line}</div>{share}</div>{ad}</div>\n"
        )
        related_html = "<br>\n".join(anchor(p, t) for p, t in items)
        side = f"<div class=\"sidebar\"><h3>More from us</h3>\n{related_html}\n</div>\n"
        footer_links = " | ".join(anchor(nav_paths[0], t) for t in site.footer_links)
        footer = (
            f"<div id=\"footer\">{footer_links}<br>{html.escape(site.disclaimer)}<br>"
            f"Copyright 2026 {html.escape(site.name)}</div>\n"
            f"<div class=\"cookie-bar\">{html.escape(site.cookie_notice)}</div>\n"
        )
        body = header + content + side + noscript + footer
    else:
        nav_html = "<br>".join(nav)
        related_html = "".join(f"<tr><td>{anchor(p, t)}</td></tr>" for p, t in items)
        body = (
            f"<table width=\"100%\"><tr><td colspan=\"2\"><font size=\"5\">"
            f"{html.escape(site.name)}</font><br><i>{html.escape(site.tagline)}</i></td></tr>\n"
            f"<tr><td valign=\"top\" width=\"150\">{nav_html}</td>\n<td valign=\"top\">"
            f"<b>{title}</b><br><small>{date_line}</small>\n{paragraphs}\n"
            f"<small>{updated_line}</small>{share}{ad}"
            f"<table><tr><th>Read next</th></tr>{related_html}</table></td></tr>\n"
            f"<tr><td colspan=\"2\">{html.escape(site.cookie_notice)} {noscript} "
            f"{' - '.join(anchor(nav_paths[0], t) for t in site.footer_links)}<br>"
            f"{html.escape(site.disclaimer)}</td></tr></table>\n"
        )
    document = (
        f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{title} | {html.escape(site.name)}</title>{style}{tracker}</head>\n"
        f"<body>\n{body}{tracker}\n</body></html>\n"
    )
    # hrefs are paths of the host, or absolute URLs already in canonical form
    hrefs = [html.unescape(href) for href in _HREF.findall(document)]
    links = tuple((h, h if h.startswith("http://") else f"http://{host}{h}") for h in hrefs)
    return ArticlePage(links, document.encode())


_HREF = re.compile(r'<a href="([^"]*)">')


def _sentences(words: tuple[str, ...]) -> list[list[str]]:
    sentences: list[list[str]] = [[]]
    for word in words:
        sentences[-1].append(word)
        if word.endswith("."):
            sentences.append([])
    return [sentence for sentence in sentences if sentence]


def _regrouped(
    paragraphs: tuple[tuple[str, ...], ...], rng: random.Random
) -> list[list[list[str]]]:
    """The article's paragraphs (as sentences) as this page groups them: some joined to the
    one before, some split in two at a sentence."""
    grouped: list[list[list[str]]] = []
    for words in paragraphs:
        sentences = _sentences(words)
        roll = rng.random()
        if roll < 0.2 and grouped:
            grouped[-1] += sentences
        elif roll < 0.4 and len(sentences) > 1:
            cut = rng.randint(1, len(sentences) - 1)
            grouped += [sentences[:cut], sentences[cut:]]
        else:
            grouped.append(sentences)
    return grouped


_Anchor = Callable[[str, str], str]
_EMPHASIS = ("b", "i", "em", "strong")
_GAPS = (" ", " ", " ", "\n", "  ", "\n    ", "<br>\n")


def _render_paragraph(sentences: list[list[str]], rng: random.Random) -> str:
    """A ``<p>`` of the sentences, with a few words emphasised and spacing of its own."""
    rendered = []
    for sentence in sentences:
        words = [html.escape(word) for word in sentence]
        if rng.random() < 0.3:
            at = rng.randrange(len(words))
            tag = rng.choice(_EMPHASIS)
            words[at] = f"<{tag}>{words[at]}</{tag}>"
        rendered.append(" ".join(words))
    text = rendered[0]
    for sentence in rendered[1:]:
        text += rng.choice(_GAPS) + sentence
    return f"<p>{text}</p>" if rng.random() < 0.7 else f"<p>\n  {text}\n</p>"


def _tracking(rng: random.Random, host: str, medium: str) -> str:
    source = host.split(".")[0]
    campaign = _content_word(rng)
    return f"utm_source={source}&utm_medium={medium}&utm_campaign={campaign}-{rng.randrange(100)}"


def _advertisement(rng: random.Random, site: _Site, host: str, anchor: _Anchor) -> str:
    """An advertisement in the site's markup: a label, one to three sentences of words of its
    own, a link to the advertiser (off the web) with tracking parameters."""
    tag, attributes = site.ad_markup
    attributes = attributes.replace("{n}", str(rng.randrange(10_000)))
    text = " ".join(" ".join(_sentence(rng, 5, 14)) + "." for _ in range(rng.randint(1, 3)))
    click = (
        f"http://{nohost_name(rng.randrange(3))}/click?ad={rng.randrange(10**6)}&"
        + _tracking(rng, host, "display")
    )
    return (
        f"<{tag} {attributes}><span class=\"label\">{rng.choice(_AD_LABELS)}</span>"
        f"<p>{html.escape(text)}</p>{anchor(click, _title(rng, 2, 3))}</{tag}>"
    )


def _share_line(rng: random.Random, host: str, path: str, anchor: _Anchor) -> str:
    """Links to share the page (off the web), with tracking parameters."""
    target = urllib.parse.quote(f"http://{host}{path}", safe="")
    shares = [
        anchor(
            f"http://{nohost_name(n)}/share?u={target}&" + _tracking(rng, host, "social"), name
        )
        for n, name in enumerate(("Mail", "Post", "Send"))
    ]
    return f"<div class=\"share\">Share: {' '.join(shares)}</div>"
