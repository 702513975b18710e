"""Measure the server's throughput: ``python -m synthweb.loadtest --seconds 5``.

Starts the server in a subprocess (request log on, as in tests), opens ``--connections``
keep-alive connections that each send ``--pipeline`` proxy-form GETs at a time for the small
non-slow pages of the web, and reports requests per second seen by the client and requests per
CPU-second of the server process (read from ``/proc``), the figure that says what one core buys.

By default the same pages are asked for again and again (warm caches). With ``--once`` every
non-slow URL of the whole web is asked for exactly once, as in a crawl, so each answer is built
on the spot.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from synthweb.config import WebConfig
from synthweb.graph import SyntheticWeb
from synthweb.server import SyntheticWebServer

__all__ = ["measure"]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _fast_urls(web: SyntheticWeb, hosts: int) -> list[str]:
    urls = []
    for host in web.host_names()[:hosts]:
        urls.append(f"http://{host}/robots.txt")
        urls += [page.url for page in web.pages(host) if not page.delay]
        urls.append(f"http://{host}/missing/0")
    return urls


async def _client(
    address: tuple[str, int], urls: Iterator[str], pipeline: int, until: float
) -> int:
    """Send batches of ``pipeline`` requests taken from the shared ``urls`` until either ends."""
    reader, writer = await asyncio.open_connection(*address)
    done = 0
    while time.monotonic() < until:
        batch = list(itertools.islice(urls, pipeline))
        if not batch:
            break
        writer.write(
            "".join(
                f"GET {url} HTTP/1.1\r\nHost: x\r\nUser-Agent: loadtest\r\n\r\n" for url in batch
            ).encode()
        )
        for _ in batch:
            head = await reader.readuntil(b"\r\n\r\n")
            start = head.index(b"Content-Length: ") + 16
            length = int(head[start : head.index(b"\r\n", start)])
            await reader.readexactly(length)
        done += len(batch)
    writer.close()
    return done


async def _load(
    address: tuple[str, int], urls: Iterator[str], connections: int, pipeline: int, seconds: float
) -> int:
    until = time.monotonic() + seconds
    counts = await asyncio.gather(
        *(_client(address, urls, pipeline, until) for _ in range(connections))
    )
    return sum(counts)


def measure(
    config: WebConfig,
    *,
    seconds: float = 5.0,
    connections: int = 8,
    pipeline: int = 1,
    once: bool = False,
) -> dict[str, float]:
    """Load a fresh server; return requests, client req/s and server requests per CPU-second.

    Runs for ``seconds`` over a warm set of pages, or with ``once`` until every non-slow URL of
    the web has been asked for once.
    """
    with tempfile.TemporaryDirectory() as scratch:
        server = SyntheticWebServer(config, Path(scratch) / "requests.jsonl")
        with server:
            host, port = server.proxy_url.removeprefix("http://").rsplit(":", 1)
            address = (host, int(port))
            if once:
                urls: Iterator[str] = iter(_fast_urls(server.web, config.hosts))
                seconds = float("inf")
            else:
                urls = itertools.cycle(_fast_urls(server.web, min(config.hosts, 20)))
                asyncio.run(_load(address, urls, 2, 4, 0.5))  # warm the caches
            cpu_before = _cpu_seconds(server.pid)
            started = time.monotonic()
            requests = asyncio.run(_load(address, urls, connections, pipeline, seconds))
            elapsed = time.monotonic() - started
            cpu = _cpu_seconds(server.pid) - cpu_before
    return {
        "requests": requests,
        "seconds": elapsed,
        "client_requests_per_second": requests / elapsed,
        "server_cpu_seconds": cpu,
        "server_requests_per_cpu_second": requests / cpu if cpu else float("inf"),
    }


def main() -> None:
    """Parse arguments, run one measurement, print the figures."""
    parser = argparse.ArgumentParser(prog="python -m synthweb.loadtest", description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--pipeline", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=30)
    parser.add_argument("--once", action="store_true", help="each URL of the web once, cold")
    args = parser.parse_args()
    result = measure(
        WebConfig(hosts=args.hosts),
        seconds=args.seconds,
        connections=args.connections,
        pipeline=args.pipeline,
        once=args.once,
    )
    for name, value in result.items():
        print(f"{name}: {value:.1f}")


if __name__ == "__main__":
    main()
