"""A real web graph served as a web: every node a page whose links are exactly its arcs.

:class:`GraphWeb` serves a graph in LAW's published form (:mod:`synthweb.bvgraph`): node ``x``
is an HTML page linking each successor of ``x`` once, in successor order (self-loops
included), and to nothing else; every host's ``robots.txt`` allows everything. There are no
redirects, errors, traps or slow pages: a request for a node's URL gets its page, any other
path 404, and a host that is not in the graph the proxy's 502. Each page also has a title
and a few words of its own, so that no two pages look alike to a near-duplicate detector.
Pages are rendered when asked for from the CSR arrays, so a graph of millions of arcs is
served in tens of megabytes.

Hosts and URLs come from the graph's URL file when it has one (``hosts_from="urls"``): each
node is served at its own URL, under its own host name (the proxy answers any name; an
``https`` URL is served, and linked, as ``http``, which is all the proxy speaks). A request
finds its node by the URL's identity (:func:`url_key`: the spellings a crawler's normaliser
may produce of one URL are one identity), so the crawler need not write a URL back exactly as
the file does.

Without URLs (``hosts_from="blocks"``) the hosts are guessed from the node order, as a
heuristic, not a truth: LAW numbers the nodes of its web graphs in the lexicographic order of
their URLs, so a host's pages have consecutive ids, and most links stay in their host, over
short distances in id. :func:`locality_blocks` cuts the id line wherever no arc of span at most
``block_window`` ids (self-loops aside) crosses it, and merges each block of fewer than
``block_min_size`` nodes into the block before it. Block ``b`` is the host ``h{b}.test`` and
node ``x`` the page ``http://h{b}.test/n/{x}``. Each block is a registered domain of its own
(``.test`` is not in the public suffix list), as distinct sites are; a site larger than the
window's reach, or linked across it, comes out as several blocks, and neighbouring small sites
as one.

:class:`GraphWebServer` runs the server (:mod:`synthweb.server`) on such a web in a subprocess;
``python -m synthweb.graphweb --graph BASENAME`` serves one in the foreground.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import bisect
import dataclasses
import html
import json
import os
import random
import re
import sys
import urllib.parse
from collections.abc import Sequence
from typing import ClassVar

from synthweb.bvgraph import LawGraph
from synthweb.model import Response
from synthweb.server import SyntheticWebServer, SyntheticWebService, serve_until_stopped
from synthweb.urls import page_identity

__all__ = [
    "GraphWeb",
    "GraphWebConfig",
    "GraphWebServer",
    "block_host_name",
    "locality_blocks",
    "url_key",
]

HOSTS_FROM = ("auto", "urls", "blocks")

_BLOCK_HOST_RE = re.compile(r"h(0|[1-9][0-9]*)\.test")
_BLOCK_PATH_RE = re.compile(r"/n/(0|[1-9][0-9]*)")
_ROBOTS = b"User-agent: *\nDisallow:\n"
_TEXT = (("Content-Type", "text/plain; charset=utf-8"),)
_HTML = (("Content-Type", "text/html; charset=utf-8"),)
_NOT_FOUND = b"<html><body><h1>404 Not Found</h1></body></html>\n"
# Query and path parameters that name a session, which crawlers drop from URLs: a URL of the
# file that has one is found by the URL without it (the union of the lists crawlers use).
_SESSION_PARAMS = frozenset({
    "jsessionid", "phpsessid", "aspsessionid", "sid", "sessionid", "session_id", "sessid",
    "cfid", "cftoken", "oscsid", "zenid",
})  # fmt: skip
# Words of each page's text: every page gets its own few, so that no two pages look alike to
# a near-duplicate detector (pages of the graph are distinct documents).
_SYLLABLES = ("ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "ve", "zu", "ba", "de", "fi",
              "go", "hu", "ja")
_WORDS_PER_PAGE = 40


def block_host_name(block: int) -> str:
    """The host name of block ``block`` of a web without URLs: ``h{block}.test``."""
    return f"h{block}.test"


def url_key(url: str) -> str | None:
    """The identity of ``url`` among the pages of a web with URLs, or None if it is not an
    http(s) URL: :func:`synthweb.urls.page_identity` of its ``http`` form (backslashes before
    the query read as slashes, as browsers do), less the query and path parameters that name a
    session in any crawler's list."""
    if url[:8].lower() == "https://":
        url = "http://" + url[8:]
    if "\\" in url:
        cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
        url = url[:cut].replace("\\", "/") + url[cut:]
    key = page_identity(url)
    if key is None or (";" not in key and "?" not in key):
        return key
    head, question, query = key.partition("?")
    if ";" in head:
        segments = []
        for segment in head.split("/"):
            name, *params = segment.split(";")
            segments.append(";".join([name, *(p for p in params if not _is_session(p))]))
        head = "/".join(segments)
    if question:
        query = "&".join(p for p in query.split("&") if not _is_session(p))
    return f"{head}?{query}" if query else head


def _is_session(param: str) -> bool:
    return urllib.parse.unquote(param.partition("=")[0]).lower() in _SESSION_PARAMS


def locality_blocks(
    indptr: Sequence[int], indices: Sequence[int], window: int = 1000, min_size: int = 10
) -> array.array[int]:
    """The block of each node: the id line cut wherever no arc of span at most ``window``
    (self-loops aside) crosses, blocks of fewer than ``min_size`` nodes merged into the block
    before them (a first block stays). Successor lists must be increasing (as decoded)."""
    nodes = len(indptr) - 1
    # reach[i]: the furthest node a short arc starting at i reaches. For a node's backward
    # arcs only the one from its smallest predecessor in the window matters, and for its
    # forward arcs only the one to its largest successor in the window: the others span less.
    reach = list(range(nodes))
    for x in range(nodes):
        start, end = indptr[x], indptr[x + 1]
        if start == end:
            continue
        last = bisect.bisect_right(indices, x + window, start, end)
        if last > start and indices[last - 1] > x:
            reach[x] = max(reach[x], indices[last - 1])
        first = bisect.bisect_left(indices, x - window, start, end)
        if first < end and indices[first] < x:
            lowest = indices[first]
            reach[lowest] = max(reach[lowest], x)
    starts = [0]
    furthest = -1
    for i in range(1, nodes):
        furthest = max(furthest, reach[i - 1])
        if furthest < i:
            starts.append(i)
    kept: list[int] = []
    for a, b in zip(starts, [*starts[1:], nodes], strict=True):
        if kept and b - a < min_size:
            continue
        kept.append(a)
    blocks = array.array("i", bytes(4 * nodes))
    for number, (a, b) in enumerate(zip(kept, [*kept[1:], nodes], strict=True)):
        blocks[a:b] = array.array("i", [number]) * (b - a)
    return blocks


@dataclasses.dataclass(frozen=True)
class GraphWebConfig:
    """Which graph to serve (``basename``: its ``.graph`` and ``.properties``, and ``.urls`` or
    ``.urls.gz`` when there is one) and where its hosts come from: ``urls``, ``blocks`` (the
    locality heuristic: see the module docstring) or ``auto`` (URLs when there are some)."""

    basename: str
    hosts_from: str = "auto"
    #: The locality heuristic's parameters (blocks only).
    block_window: int = 1000
    block_min_size: int = 10

    #: The server's hostile-profile switch, always off for a graph.
    hostile: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.hosts_from not in HOSTS_FROM:
            raise ValueError(f"hosts_from must be one of {', '.join(HOSTS_FROM)}")
        if self.block_window < 1 or self.block_min_size < 1:
            raise ValueError("block_window and block_min_size must be at least 1")

    def to_json(self) -> str:
        """This configuration as a JSON object."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> GraphWebConfig:
        """The configuration a JSON object (:meth:`to_json`) describes."""
        return cls(**json.loads(text))


class GraphWeb:
    """The pages, hosts and answers of a graph served as a web (see the module docstring).

    ``graph`` is the graph already loaded (without it, ``config.basename`` is read).
    """

    #: The server asks every web for its changing-web model: a graph has none.
    changing = None

    def __init__(self, config: GraphWebConfig, graph: LawGraph | None = None) -> None:
        self.config = config
        if graph is None:
            graph = LawGraph.load(config.basename, urls=config.hosts_from != "blocks")
        hosts_from = config.hosts_from
        if hosts_from == "auto":
            hosts_from = "urls" if graph.urls is not None else "blocks"
        if hosts_from == "urls" and graph.urls is None:
            raise ValueError(f"{config.basename} has no .urls or .urls.gz file")
        #: ``urls`` or ``blocks``: where the hosts came from.
        self.hosts_from = hosts_from
        #: The URLs of the file that are another node's URL (by :func:`url_key`) or no http(s)
        #: URL: their nodes are served, but a request of their URL finds the other node.
        self.unreachable_urls = 0
        self._host_ids: dict[str, int] = {}
        if hosts_from == "urls":
            assert graph.urls is not None
            self._index_urls(graph.urls)
            graph = dataclasses.replace(graph, urls=None)  # packed into the index
        else:
            self.host_of = locality_blocks(
                graph.indptr, graph.indices, config.block_window, config.block_min_size
            )
            count = self.host_of[-1] + 1 if len(self.host_of) else 0
            #: The host names, by host number.
            self.host_names = [block_host_name(b) for b in range(count)]
            self._host_ids = {name: b for b, name in enumerate(self.host_names)}
        self.graph = graph

    def _index_urls(self, urls: list[str]) -> None:
        hrefs = bytearray()
        offsets = array.array("q", [0])
        host_of = array.array("i")
        keys: list[str | None] = []
        host_names: list[str] = []
        for url in urls:
            key = url_key(url)
            keys.append(key)
            href = "http://" + url[8:] if url[:8].lower() == "https://" else url
            host = urllib.parse.urlsplit(key).netloc if key is not None else ""
            host_id = self._host_ids.get(host)
            if host_id is None:
                host_id = self._host_ids[host] = len(host_names)
                host_names.append(host)
            host_of.append(host_id)
            hrefs += href.encode("utf-8")
            offsets.append(len(hrefs))
        hashed = sorted((hash(key), node) for node, key in enumerate(keys) if key is not None)
        self.unreachable_urls = len(urls) - len(hashed)
        # Equal keys are next to each other (equal hashes, by node): the first node keeps it.
        first_of_hash = 0
        for at in range(1, len(hashed)):
            if hashed[at][0] != hashed[at - 1][0]:
                first_of_hash = at
                continue
            node = hashed[at][1]
            if any(keys[hashed[i][1]] == keys[node] for i in range(first_of_hash, at)):
                self.unreachable_urls += 1
        self._hrefs = bytes(hrefs)
        self._offsets = offsets
        self._hashes = array.array("q", (h for h, _ in hashed))
        self._order = array.array("i", (node for _, node in hashed))
        self.host_of = host_of
        self.host_names = host_names
        self._host_ids.pop("", None)

    # -- nodes and URLs ---------------------------------------------------------------------

    @property
    def nodes(self) -> int:
        return self.graph.nodes

    def url(self, node: int) -> str:
        """The URL node ``node`` is served at (and linked as)."""
        if self.hosts_from == "blocks":
            return f"http://{self.host_names[self.host_of[node]]}/n/{node}"
        return self._hrefs[self._offsets[node] : self._offsets[node + 1]].decode("utf-8")

    def node_of(self, url: str) -> int | None:
        """The node served at ``url`` (in any spelling of it), or None."""
        if self.hosts_from == "blocks":
            parts = urllib.parse.urlsplit(url)
            return self._block_node((parts.hostname or "").lower(), parts.path)
        key = url_key(url)
        if key is None:
            return None
        wanted = hash(key)
        at = bisect.bisect_left(self._hashes, wanted)
        while at < len(self._hashes) and self._hashes[at] == wanted:
            node = self._order[at]
            if url_key(self.url(node)) == key:
                return node
            at += 1
        return None

    def _block_node(self, host: str, path: str) -> int | None:
        host_match = _BLOCK_HOST_RE.fullmatch(host)
        path_match = _BLOCK_PATH_RE.fullmatch(path)
        if host_match is None or path_match is None:
            return None
        node = int(path_match.group(1))
        if node >= self.nodes or self.host_of[node] != int(host_match.group(1)):
            return None
        return node

    def is_host(self, host: str) -> bool:
        """Whether ``host`` (lower-case, with a port only when not 80) has pages here."""
        return host in self._host_ids

    # -- seeds ------------------------------------------------------------------------------

    def seed_nodes(self, count: int) -> list[int]:
        """One node from each of the ``count`` largest hosts (most nodes first, ties by host
        number): the host's root page ``http://HOST/`` when it is a node, else the host's node
        with the most links to its own host (the lowest such id): its home page, or the
        nearest thing to one, as a person choosing seeds would pick."""
        sizes = [0] * len(self.host_names)
        for host in self.host_of:
            sizes[host] += 1
        hosts = [h for h, name in enumerate(self.host_names) if name in self._host_ids]
        largest = sorted(hosts, key=lambda h: (-sizes[h], h))[:count]
        wanted = set(largest)
        members: dict[int, list[int]] = {h: [] for h in largest}
        for node, host in enumerate(self.host_of):
            if host in wanted:
                members[host].append(node)
        seeds = []
        for host in largest:
            root = None
            if self.hosts_from == "urls":
                root = self.node_of(f"http://{self.host_names[host]}/")
            if root is None or self.host_of[root] != host:
                root = max(members[host], key=lambda x: (self._links_within(x), -x))
            seeds.append(root)
        return seeds

    def _links_within(self, node: int) -> int:
        host = self.host_of[node]
        host_of = self.host_of
        return sum(1 for s in self.graph.successors(node) if host_of[s] == host)

    def seeds(self, count: int = 10) -> list[str]:
        """The URLs of :meth:`seed_nodes`."""
        return [self.url(node) for node in self.seed_nodes(count)]

    # -- answers ----------------------------------------------------------------------------

    def respond(self, host: str, path: str, *, accept_gzip: bool = False) -> Response:
        """What the server answers to a GET of ``path`` on ``host`` (lower-case, no port 80)."""
        if not self.is_host(host):
            body = f"502 Bad Gateway: cannot resolve {host}\n".encode()
            return Response(502, _TEXT, body)
        if path == "/robots.txt":
            return Response(200, _TEXT, _ROBOTS)
        if self.hosts_from == "blocks":
            node = self._block_node(host, path)
        else:
            node = self.node_of(f"http://{host}{path}")
        if node is None:
            return Response(404, _HTML, _NOT_FOUND)
        return Response(200, _HTML, self.page(node))

    def page(self, node: int) -> bytes:
        """The HTML page of ``node``: a title, a few words of its own, then one link to each
        successor, in order."""
        rng = random.Random(node)
        words = " ".join(
            _SYLLABLES[rng.randrange(16)] + _SYLLABLES[rng.randrange(16)]
            + _SYLLABLES[rng.randrange(16)]
            for _ in range(_WORDS_PER_PAGE)
        )
        items = "\n".join(
            f'<li><a href="{html.escape(self.url(s))}">page {s}</a></li>'
            for s in self.graph.successors(node)
        )
        return (
            f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Page {node}</title>'
            f"</head>\n<body><h1>Page {node}</h1>\n<p>{words}</p>\n<ul>\n{items}\n</ul>\n"
            "</body></html>\n"
        ).encode()


class GraphWebService(SyntheticWebService):
    """The synthetic web's server answering for a :class:`GraphWeb`."""

    def _info_page(self) -> bytes:
        web = self.web
        assert isinstance(web, GraphWeb)
        seeds = "\n".join(f"<li>{html.escape(s)}</li>" for s in web.seeds(10))
        name = html.escape(os.path.basename(web.config.basename))
        return (
            "<!DOCTYPE html><html><head><title>synthweb</title></head><body>"
            f"<h1>Graph {name}: {web.nodes} pages, {len(web.host_names)} hosts"
            f" (from {web.hosts_from})</h1>"
            f"<p>Use {html.escape(self.address)} as the HTTP proxy to reach the hosts.</p>"
            f"<p>Some seeds:</p><ul>{seeds}</ul></body></html>\n"
        ).encode()


async def _serve(
    config: GraphWebConfig, host: str, port: int, log_path: str | None, flush_interval: float
) -> None:
    web = GraphWeb(config)
    await serve_until_stopped(
        lambda log: GraphWebService(web, log, flush_interval=flush_interval),  # type: ignore[arg-type]
        host, port, log_path)


class GraphWebServer(SyntheticWebServer):
    """:class:`~synthweb.server.SyntheticWebServer` serving a graph: ``python -m
    synthweb.graphweb`` in a subprocess, with the same ``proxy_url``, request log and stop.

    Loading a graph takes about a second per two million arcs, hence the longer start-up
    timeout.
    """

    def __init__(
        self,
        config: GraphWebConfig,
        log_path: str | os.PathLike[str] | None = None,
        *,
        port: int = 0,
        flush_interval: float = 0.5,
        startup_timeout: float = 300.0,
        web: GraphWeb | None = None,
    ) -> None:
        super().__init__(None, log_path, port=port, flush_interval=flush_interval,
                         startup_timeout=startup_timeout)
        self.config = config  # type: ignore[assignment]
        self._graph_web = web

    @property
    def web(self) -> GraphWeb:  # type: ignore[override]
        """The web the server serves, loaded in this process too (for ground truth)."""
        if self._graph_web is None:
            self._graph_web = GraphWeb(self.config)  # type: ignore[arg-type]
        return self._graph_web

    def _command(self) -> list[str]:
        command = [
            sys.executable, "-m", "synthweb.graphweb", "--config-json", self.config.to_json(),
            "--port", str(self.port), "--flush-interval", str(self.flush_interval),
        ]
        if self.log_path is not None:
            command += ["--log", str(self.log_path)]
        return command


def main(argv: list[str] | None = None) -> None:
    """Serve a graph in the foreground until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(
        prog="python -m synthweb.graphweb", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--graph", help="BASENAME of the graph (.graph, .properties, .urls)")
    parser.add_argument("--hosts-from", choices=HOSTS_FROM, default="auto")
    parser.add_argument("--block-window", type=int, default=1000)
    parser.add_argument("--block-min-size", type=int, default=10)
    parser.add_argument("--config-json", help="a GraphWebConfig as a JSON object")
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free)")
    parser.add_argument("--log", help="append the request log (JSON lines) to this file")
    parser.add_argument(
        "--flush-interval", type=float, default=0.5, help="seconds between request log flushes"
    )
    args = parser.parse_args(argv)
    try:
        if args.config_json:
            config = GraphWebConfig.from_json(args.config_json)
        elif args.graph:
            config = GraphWebConfig(args.graph, args.hosts_from, args.block_window,
                                    args.block_min_size)
        else:
            parser.error("give --graph or --config-json")
    except (TypeError, ValueError) as error:
        parser.error(str(error))
    asyncio.run(_serve(config, args.bind, args.port, args.log, args.flush_interval))


if __name__ == "__main__":
    main()
