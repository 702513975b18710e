"""Tests of a graph served as a web (:mod:`synthweb.graphweb`): pages whose links are exactly
the arcs, hosts from URLs or from the node order, seeds, and the server in a subprocess."""

from __future__ import annotations

import array
import http.client
import random
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

import pytest

from synthweb.bvgraph import LawGraph
from synthweb.graphweb import (
    GraphWeb,
    GraphWebConfig,
    GraphWebServer,
    block_host_name,
    locality_blocks,
    url_key,
)
from tests.fakes.bvgraph import encode


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [value or "" for name, value in attrs if name == "href"]


def _hrefs(body: bytes) -> list[str]:
    parser = _Links()
    parser.feed(body.decode("utf-8"))
    return parser.hrefs


def _csr(lists: list[list[int]]) -> tuple[array.array[int], array.array[int]]:
    indptr, indices = array.array("q", [0]), array.array("i")
    for successors in lists:
        indices.extend(successors)
        indptr.append(len(indices))
    return indptr, indices


def _graph(lists: list[list[int]], urls: list[str] | None = None) -> LawGraph:
    return LawGraph(*_csr(lists), urls=urls)


# A small web with URLs: a self-loop, a session id, an https URL, a fragment, an escape, a
# port, a duplicate of another node's URL, and a line that is no URL.
URLS = [
    "http://a.example/",                       # 0
    "http://a.example/x?b=1&a=2",              # 1
    "https://b.example/y;jsessionid=42?q=1",   # 2
    "http://b.example/z#top",                  # 3
    "http://a.example/%7Euser/",               # 4
    "http://a.example:8080/p",                 # 5
    "http://A.example/x?b=1&a=2",              # 6: node 1's URL in another spelling
    "mailto:someone@a.example",                # 7
]
LISTS = [[0, 1, 2, 4], [0, 3], [0, 5], [2], [], [0, 6, 7], [1], [0]]


@pytest.fixture
def url_web() -> GraphWeb:
    return GraphWeb(GraphWebConfig("unused", "urls"), _graph(LISTS, URLS))


def test_each_page_links_exactly_its_successors_in_order(url_web: GraphWeb) -> None:
    for node, successors in enumerate(LISTS):
        host, path = _split(url_web.url(node))
        if node in (6, 7):
            continue  # no URL to ask them at: node 1 has 6's, and 7 has none
        answer = url_web.respond(host, path)
        assert answer.status == 200, node
        assert dict(answer.headers)["Content-Type"] == "text/html; charset=utf-8"
        hrefs = _hrefs(answer.body)
        assert hrefs == [url_web.url(s) for s in successors]


def _split(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.netloc.lower(), (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def test_urls_are_found_in_every_spelling_a_crawler_may_write(url_web: GraphWeb) -> None:
    assert url_web.url(2) == "http://b.example/y;jsessionid=42?q=1"  # https served as http
    assert url_web.url(3) == "http://b.example/z#top"  # linked as given
    spellings = {
        "http://A.EXAMPLE:80/": 0,
        "http://a.example/x?b=1&a=2": 1,
        "http://b.example/y?q=1": 2,
        "http://b.example/y;jsessionid=42?q=1&sessionid=7": 2,
        "https://b.example/y?q=1": 2,
        "http://b.example/z": 3,
        "http://a.example/~user/": 4,
        "http://a.example/%7euser/": 4,
        "http://a.example:8080/p": 5,
    }
    for url, node in spellings.items():
        assert url_web.node_of(url) == node, url
    assert url_web.node_of("http://a.example/x?a=2&b=1") is None  # the order of a query counts
    assert url_web.node_of("http://a.example:80/p") is None
    assert url_web.node_of("ftp://a.example/") is None


def test_hosts_and_what_answers_besides_pages(url_web: GraphWeb) -> None:
    assert url_web.host_names == ["a.example", "b.example", "a.example:8080", ""]
    assert list(url_web.host_of) == [0, 0, 1, 1, 0, 2, 0, 3]
    assert url_web.unreachable_urls == 2  # node 6 (node 1's URL) and node 7 (no URL)
    robots = url_web.respond("a.example:8080", "/robots.txt")
    assert (robots.status, robots.body) == (200, b"User-agent: *\nDisallow:\n")
    assert url_web.respond("a.example", "/nothing").status == 404
    assert url_web.respond("c.example", "/").status == 502
    assert url_web.respond("", "/").status == 502
    assert url_key("http://a.example/a;sid=1;v=2?x=1&PHPSESSID=9") == "http://a.example/a;v=2?x=1"
    assert url_key("http://a.example/a\\b?c\\d") == "http://a.example/a/b?c%5Cd"


def test_seeds_are_the_home_pages_of_the_largest_hosts(url_web: GraphWeb) -> None:
    # a.example has 4 pages (its root among them), b.example 2 (no root: the page with the
    # most links within the host, node 3 linking to node 2), a.example:8080 one.
    assert url_web.seed_nodes(3) == [0, 3, 5]
    assert url_web.seeds(1) == ["http://a.example/"]


def _reference_blocks(lists: list[list[int]], window: int, min_size: int) -> list[int]:
    """The locality heuristic the slow way: arc by arc, boundary by boundary."""
    nodes = len(lists)
    crossed = [False] * (nodes + 1)
    for x, successors in enumerate(lists):
        for y in successors:
            if y != x and abs(y - x) <= window:
                for boundary in range(min(x, y) + 1, max(x, y) + 1):
                    crossed[boundary] = True
    starts = [0] + [i for i in range(1, nodes) if not crossed[i]]
    ends = starts[1:] + [nodes]
    kept = [a for i, (a, b) in enumerate(zip(starts, ends, strict=True))
            if i == 0 or b - a >= min_size]
    return [sum(1 for a in kept if a <= x) - 1 for x in range(nodes)]


def test_blocks_cut_where_no_short_arc_crosses() -> None:
    # 0-3 linked together, 4-5 linked, 6 alone (merged into the block before), 7-9 linked,
    # and a long arc 0 -> 9 that is longer than the window.
    lists = [[1, 9], [2], [0, 3], [], [5], [4], [], [8], [9], [7]]
    assert list(locality_blocks(*_csr(lists), window=5, min_size=1)) == [
        0, 0, 0, 0, 1, 1, 2, 3, 3, 3]
    assert list(locality_blocks(*_csr(lists), window=5, min_size=2)) == [
        0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert list(locality_blocks(*_csr(lists), window=9, min_size=1)) == [0] * 10
    assert list(locality_blocks(*_csr([[0], [1]]), window=5, min_size=3)) == [0, 0]
    assert list(locality_blocks(*_csr([]))) == []


def test_blocks_agree_with_the_slow_reference_on_random_graphs() -> None:
    rng = random.Random(3)
    for _ in range(30):
        nodes = rng.randint(1, 60)
        lists = [sorted({rng.randrange(nodes) for _ in range(rng.randint(0, 3))})
                 for _ in range(nodes)]
        window, min_size = rng.randint(1, 10), rng.randint(1, 5)
        assert list(locality_blocks(*_csr(lists), window, min_size)) == _reference_blocks(
            lists, window, min_size)


def test_a_web_without_urls_has_a_host_per_block() -> None:
    lists = [[1, 9], [2], [0, 3], [1], [5], [4], [], [8], [9], [0, 7]]
    web = GraphWeb(GraphWebConfig("unused", block_window=5, block_min_size=2), _graph(lists))
    assert web.hosts_from == "blocks"
    assert web.host_names == [block_host_name(b) for b in range(3)] == [
        "h0.test", "h1.test", "h2.test"]
    assert web.url(9) == "http://h2.test/n/9"
    assert web.node_of("http://H2.test/n/9") == 9
    assert web.node_of("http://h1.test/n/9") is None  # another host's page
    assert web.node_of("http://h2.test/n/09") is None
    assert web.respond("h2.test", "/n/9").status == 200
    assert _hrefs(web.respond("h2.test", "/n/9").body) == [
        "http://h0.test/n/0", "http://h2.test/n/7"]
    assert web.respond("h1.test", "/n/9").status == 404
    assert web.respond("h3.test", "/n/9").status == 502
    # Blocks of 4, 3 and 3 pages (node 6 merged into h1): h0, then h1 before h2 on the tie.
    # In h0 node 2 links to two pages of h0, the others to one; in h1 nodes 4 and 5 to one.
    assert web.seed_nodes(2) == [2, 4]


def test_pages_have_words_of_their_own() -> None:
    web = GraphWeb(GraphWebConfig("unused", "blocks"), _graph([[1], [0]]))
    def words(node: int) -> list[bytes]:
        page = web.page(node)
        return page[page.index(b"<p>") + 3 : page.index(b"</p>")].split()

    assert words(0) == words(0)
    assert len(words(0)) == len(words(1)) == 40
    assert len(set(words(0)) & set(words(1))) < 5


def test_hosts_from_urls_needs_urls() -> None:
    with pytest.raises(ValueError, match="no .urls"):
        GraphWeb(GraphWebConfig("nowhere", "urls"), _graph([[0]]))
    with pytest.raises(ValueError, match="hosts_from"):
        GraphWebConfig("nowhere", "names")


def test_the_server_serves_a_graph_from_its_files(tmp_path: Path) -> None:
    base = tmp_path / "web"
    data, properties = encode(LISTS)
    Path(f"{base}.graph").write_bytes(data)
    Path(f"{base}.properties").write_text(
        "".join(f"{k}={v}\n" for k, v in properties.items()), encoding="latin-1")
    Path(f"{base}.urls").write_text("\n".join(URLS) + "\n", encoding="utf-8")
    config = GraphWebConfig(str(base))
    assert GraphWebConfig.from_json(config.to_json()) == config
    with GraphWebServer(config, tmp_path / "requests.jsonl") as server:
        assert server.web.hosts_from == "urls"
        host, _, port = server.proxy_url.removeprefix("http://").rpartition(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        answers = []
        for target in ("http://a.example/", "http://a.example/robots.txt",
                       "http://b.example/y?q=1", "http://a.example/nothing", "/"):
            connection.request("GET", target)
            reply = connection.getresponse()
            answers.append((reply.status, reply.read()))
        connection.close()
        records = server.request_log()
    assert [status for status, _ in answers] == [200, 200, 200, 404, 200]
    assert _hrefs(answers[0][1]) == [URLS[0], URLS[1], "http://b.example/y;jsessionid=42?q=1",
                                     URLS[4]]
    assert b"web: 8 pages, 4 hosts (from urls)" in answers[4][1]
    assert [(r.host, r.path, r.status) for r in records] == [
        ("a.example", "/", 200), ("a.example", "/robots.txt", 200),
        ("b.example", "/y?q=1", 200), ("a.example", "/nothing", 404)]
