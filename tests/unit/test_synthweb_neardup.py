"""The near-duplicate profile of the synthetic web (synthweb/neardup.py): its ground truth, its
pages as served (the same article in each copy of a group, with its own advertisement, counters,
tracking parameters and markup; a few words changed in edited groups), reachability from the
showcase, and the web left as it was with it off."""

from __future__ import annotations

import dataclasses
import difflib
import re

import bs4
import lxml.html
import pytest

from crawl.content.text import advert, main_text, visible_text_of
from synthweb import SyntheticWeb, WebConfig
from synthweb.urls import canonical_url, host_index, split_url
from tests.fakes.synthweb import SMALL, SMALL_DIGEST, web_digest

CONFIG = WebConfig(seed=7, hosts=30).with_near_duplicate_profile()
WORD = re.compile(r"\w+")
MONTHS = {
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
}  # fmt: skip


@pytest.fixture(scope="module")
def web() -> SyntheticWeb:
    return SyntheticWeb(CONFIG)


def test_off_by_default_and_the_web_unchanged() -> None:
    assert WebConfig().near_duplicate_groups == WebConfig().near_duplicate_edited_groups == 0
    plain = SyntheticWeb(SMALL)
    assert plain.near_duplicate_groups() == []
    assert plain.near_duplicate_edited_groups() == []
    assert plain.near_duplicate_decoys() == []
    assert web_digest(plain) == SMALL_DIGEST
    # Sizes alone do not turn it on.
    sized = dataclasses.replace(
        SMALL, near_duplicate_group_size=6, near_duplicate_decoys_per_group=5
    )
    assert web_digest(SyntheticWeb(sized)) == SMALL_DIGEST


def test_ground_truth_shape(web: SyntheticWeb) -> None:
    groups = web.near_duplicate_groups() + web.near_duplicate_edited_groups()
    decoys = web.near_duplicate_decoys()
    assert len(web.near_duplicate_groups()) == len(web.near_duplicate_edited_groups()) == 12
    assert all(len(group) == 4 for group in groups)
    assert all(len({split_url(url)[0] for url in group}) == 4 for group in groups)
    assert len(decoys) == 48
    urls = [url for group in groups for url in group] + decoys
    assert len(set(urls)) == len(urls)
    assert all(split_url(url)[1].startswith("/news/") for url in urls)


def test_edited_groups_alone() -> None:
    web = SyntheticWeb(dataclasses.replace(CONFIG, near_duplicate_groups=0))
    assert web.near_duplicate_groups() == []
    assert len(web.near_duplicate_edited_groups()) == 12
    assert len(web.near_duplicate_decoys()) == 24


def test_everything_is_reached_from_the_showcase(web: SyntheticWeb) -> None:
    expected = web.expected_crawl(["http://h0.synth.test/"])
    groups = web.near_duplicate_groups() + web.near_duplicate_edited_groups()
    urls = [url for group in groups for url in group]
    urls += web.near_duplicate_decoys()
    assert all(expected.fetch.get(url) == 200 for url in urls)


def test_served_html_holds_exactly_the_model_links(web: SyntheticWeb) -> None:
    urls = web.near_duplicate_decoys() + list(web.near_duplicate_groups()[0])
    for url in urls + list(web.near_duplicate_edited_groups()[0]):
        page = web.page(url)
        assert page is not None
        soup = bs4.BeautifulSoup(web.body(url), "lxml")
        assert [a["href"] for a in soup.find_all("a", href=True)] == [
            link.href for link in page.links
        ]
        for link in page.links:
            assert canonical_url(link.href, url) == link.url
            assert web.status(link.url) != 404, link.url
        # Tracking parameters on the links to advertisers and sharing, off the web (502).
        tracked = [link.url for link in page.links if "utm_source=" in link.url]
        assert len(tracked) == 4
        assert all(host_index(split_url(target)[0]) is None for target in tracked)


def test_other_pages_are_as_without_the_profile(web: SyntheticWeb) -> None:
    off = dataclasses.replace(CONFIG, near_duplicate_groups=0, near_duplicate_edited_groups=0)
    plain = SyntheticWeb(off)
    for host in plain.host_names():
        for page in plain.pages(host)[1:]:
            assert web.page(page.url) == page
            assert web.body(page.url) == plain.body(page.url)


def _words(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower()) if not any(c.isdigit() for c in w)]


def _article_words(text: str) -> list[str]:
    """The words of a main text but for dates and counters."""
    return [w for w in _words(text) if w not in MONTHS]


def test_copies_carry_the_same_article(web: SyntheticWeb) -> None:
    for group in web.near_duplicate_groups():
        texts = [_article_words(main_text_of(web, url)) for url in group]
        assert all(text == texts[0] for text in texts[1:])
        visible = [visible_text_of(web.body(url)) for url in group]
        assert len(set(visible)) == len(group)


def test_copies_of_edited_groups_differ_by_a_few_words(web: SyntheticWeb) -> None:
    for group in web.near_duplicate_edited_groups():
        texts = [_article_words(main_text_of(web, url)) for url in group]
        for other in texts[1:]:
            matcher = difflib.SequenceMatcher(a=texts[0], b=other, autojunk=False)
            changed = sum(
                max(i2 - i1, j2 - j1)
                for op, i1, i2, j1, j2 in matcher.get_opcodes()
                if op != "equal"
            )
            assert 1 <= changed <= 8  # two copies' edits, one to four words each


def test_copies_differ_in_advertisements_and_markup(web: SyntheticWeb) -> None:
    """Each page has an advertisement of its own, marked up as its host marks them, and its
    own paragraphs (split or joined elsewhere) and emphasis; the words stay."""
    split_or_joined = emphasised = 0
    for group in web.near_duplicate_groups():
        ads, paragraphs = [], []
        for url in group:
            document = lxml.html.document_fromstring(web.body(url))
            found = [e for e in document.iter() if isinstance(e.tag, str) and advert(e)]
            assert len(found) == 1, url
            ads.append(" ".join(found[0].text_content().split()))
            paragraphs.append(len(document.findall(".//p")))
            emphasised += bool(document.xpath("//p/b | //p/i | //p/em | //p/strong"))
        assert len(set(ads)) == len(group)
        split_or_joined += len(set(paragraphs)) > 1
    assert split_or_joined >= len(web.near_duplicate_groups()) // 2
    assert emphasised >= len(web.near_duplicate_groups()) * 2


def main_text_of(web: SyntheticWeb, url: str) -> str:
    return main_text(lxml.html.document_fromstring(web.body(url)))


def test_decoys_share_boilerplate_not_content(web: SyntheticWeb) -> None:
    groups = web.near_duplicate_groups() + web.near_duplicate_edited_groups()
    copies = {split_url(url)[0]: url for group in groups for url in group}
    for decoy in web.near_duplicate_decoys():
        copy = copies[split_url(decoy)[0]]
        decoy_text, copy_text = visible_text_of(web.body(decoy)), visible_text_of(web.body(copy))
        shared = set(_shingles(decoy_text)) & set(_shingles(copy_text))
        assert len(shared) > 40  # the host's navigation, notices and footer
        article = set(_shingles(main_text_of(web, decoy)))
        assert len(article & set(_shingles(main_text_of(web, copy)))) < 0.2 * len(article)


def _shingles(text: str) -> list[str]:
    words = _words(text)
    return [" ".join(words[i : i + 3]) for i in range(len(words) - 2)]


def test_profile_is_a_function_of_the_config() -> None:
    one, two = SyntheticWeb(CONFIG), SyntheticWeb(CONFIG)
    assert one.near_duplicate_groups() == two.near_duplicate_groups()
    url = one.near_duplicate_decoys()[0]
    assert one.body(url) == two.body(url)
    other = SyntheticWeb(dataclasses.replace(CONFIG, seed=8))
    assert other.near_duplicate_groups() != one.near_duplicate_groups()


def test_invalid_sizes_name_the_key() -> None:
    with pytest.raises(ValueError, match="near_duplicate_group_size"):
        dataclasses.replace(CONFIG, near_duplicate_group_size=1)
    with pytest.raises(ValueError, match="near_duplicate_groups"):
        dataclasses.replace(CONFIG, near_duplicate_groups=-1)
    with pytest.raises(ValueError, match="near_duplicate_edited_groups"):
        dataclasses.replace(CONFIG, near_duplicate_edited_groups=-1)
