"""Tests of the synthetic web's hostile profile: the model, its ground truth, its audit, and a
few answers through the real server (Retry-After, trickle, reset, bomb, private addresses)."""

from __future__ import annotations

import dataclasses
import email.utils
import gzip
import http.client
import socket
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from synthweb import (
    RequestRecord,
    SyntheticWeb,
    SyntheticWebServer,
    WebConfig,
    audit_hostile,
    audit_log,
    hostile,
)
from synthweb.hostile import (
    BROKEN_HOST,
    PRIVATE_URLS,
    RETRY_HOST,
    ROBOTS_BIG_HOST,
    ROBOTS_CHAIN_HOST,
    ROBOTS_MOVED_HOST,
    ROBOTS_STALL_HOST,
    TRICKLE_HOST,
)
from synthweb.truth import ExpectedCrawl
from synthweb.urls import split_url

TOKEN = "pyflink-crawler"
SMALL = WebConfig(
    seed=7, hosts=12, pages_per_host=8, slow_delay_range=(0.3, 0.4), crawl_delays=(0.1,)
)
HOSTILE = SMALL.with_hostile_profile(
    hostile_trickle_seconds=20.0,
    hostile_robots_stall_seconds=3.0,
    hostile_big_page_bytes=2 * 1024 * 1024,
)


@pytest.fixture(scope="module")
def web() -> SyntheticWeb:
    return SyntheticWeb(HOSTILE)


@pytest.fixture(scope="module")
def truth(web: SyntheticWeb) -> ExpectedCrawl:
    return web.expected_crawl(web.seeds(), TOKEN)


# -- the model and its ground truth ---------------------------------------------------------


def test_profile_is_off_by_default() -> None:
    assert not WebConfig().hostile
    web = SyntheticWeb(SMALL)
    assert web.hostile_host_names() == []
    assert not web.is_host(RETRY_HOST)
    assert web.respond(RETRY_HOST, "/robots.txt").status == 502
    assert web.expected_crawl(web.seeds()).hostile is None
    home = web.page("http://h0.synth.test/")
    assert home is not None
    assert not any(link.url and "x-" in link.url for link in home.links)
    # Turning the profile on changes nothing of the normal web but h0's home page links.
    on = SyntheticWeb(HOSTILE)
    for host in web.host_names():
        for page in web.pages(host):
            other = on.page(page.url)
            assert other is not None
            if page.url == "http://h0.synth.test/":
                assert other.links[: len(page.links)] == page.links
            else:
                assert other == page


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hostile_retry_after": 0}, "hostile_retry_after"),
        ({"hostile_trickle_seconds": 0.0}, "hostile_trickle_seconds"),
        ({"hostile_bomb_bytes": 0}, "hostile_bomb_bytes"),
        ({"hostile_big_page_bytes": 10}, "hostile_big_page_bytes"),
    ],
)
def test_invalid_hostile_config_names_the_key(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(HOSTILE, **changes)


def test_config_round_trips_through_json() -> None:
    assert WebConfig.from_json(HOSTILE.to_json()) == HOSTILE


def test_h0_links_every_hostile_host_and_private_address(web: SyntheticWeb) -> None:
    home = web.page("http://h0.synth.test/")
    assert home is not None
    targets = {link.url for link in home.links}
    assert {f"http://{host}/" for host in hostile.HOSTILE_HOSTS} <= targets
    assert set(PRIVATE_URLS) <= targets
    assert set(web.hostile_host_names()) == set(hostile.HOSTILE_HOSTS)


def test_ground_truth_of_the_hostile_hosts(web: SyntheticWeb, truth: ExpectedCrawl) -> None:
    rough = truth.hostile
    assert rough is not None
    assert rough.retry == {
        f"http://{RETRY_HOST}{path}": (status, 200)
        for path, (status, _) in hostile.RETRY_PATHS.items()
    }
    assert rough.once == {
        **{f"http://{BROKEN_HOST}{path}": fault for path, fault in hostile.BROKEN_PATHS.items()},
        f"http://{TRICKLE_HOST}/trickle": "trickle",
    }
    assert rough.private == frozenset(PRIVATE_URLS)
    assert rough.private <= truth.never
    assert rough.robots_failed == {ROBOTS_STALL_HOST}
    assert rough.robots[ROBOTS_STALL_HOST] == 0
    assert rough.robots[ROBOTS_MOVED_HOST] == 301
    assert rough.robots[ROBOTS_CHAIN_HOST] == 302
    assert set(rough.robots) == set(hostile.HOSTILE_HOSTS)
    # Nothing hostile in the normal maps but the URLs that answer normally.
    for url in (*rough.retry, *rough.once):
        assert url not in truth.fetch
        assert url not in truth.never
    assert not set(rough.robots) & set(truth.robots)
    # robots.txt: unreachable = disallow; redirected once = the target's rules; more than 5
    # redirects = unavailable (allow all); only the first 500 KiB count.
    assert f"http://{ROBOTS_STALL_HOST}/" in truth.never
    assert not any(ROBOTS_STALL_HOST in url for url in truth.fetch)  # its home is not fetched
    assert truth.fetch[f"http://{ROBOTS_MOVED_HOST}/p/1"] == 200
    assert f"http://{ROBOTS_MOVED_HOST}/secret/1" in truth.never
    assert truth.fetch[f"http://{ROBOTS_CHAIN_HOST}/p/1"] == 200
    assert truth.fetch[f"http://{ROBOTS_BIG_HOST}/late/1"] == 200
    assert f"http://{ROBOTS_BIG_HOST}/private/1" in truth.never
    # The redirect loop: each fetched once, the loop not followed again.
    assert truth.fetch[f"http://{BROKEN_HOST}/loop/a"] == 302
    assert truth.fetch[f"http://{BROKEN_HOST}/loop/b"] == 302
    assert truth.redirects[f"http://{BROKEN_HOST}/loop/b"] == f"http://{BROKEN_HOST}/loop/a"
    assert f"http://{ROBOTS_MOVED_HOST}/robots-moved.txt" in rough.robots_extra
    assert len([u for u in rough.robots_extra if ROBOTS_CHAIN_HOST in u]) == 6
    # The normal web's ground truth is as without the profile.
    plain = SyntheticWeb(SMALL).expected_crawl(web.seeds(), TOKEN)
    assert {u: s for u, s in truth.fetch.items() if "h" == split_url(u)[0][0]} == dict(plain.fetch)


def test_big_robots_hides_its_last_rule_past_500_kib() -> None:
    body = hostile.big_robots()
    assert len(body) > hostile.ROBOTS_LIMIT
    assert b"Disallow: /late/" not in body[: hostile.ROBOTS_LIMIT]
    assert body.rstrip().endswith(b"Disallow: /late/")
    assert body.startswith(b"User-agent: *\nDisallow: /private/\n")
    # Read up to 512 KiB, its last line is "Disallow: /" (the start of an archive's line).
    assert body[: hostile.ROBOTS_CUT].endswith(b"\nDisallow: /")
    assert body[hostile.ROBOTS_CUT:].startswith(b"archive/1993/zz-")


def test_gzip_bomb_is_valid_and_small() -> None:
    size = 5 * (1 << 20) + 17
    bomb = hostile.gzip_bomb(size)
    assert len(bomb) < size // 500
    assert gzip.decompress(bomb) == bytes(size)


def test_model_answers(web: SyntheticWeb) -> None:
    assert web.respond(ROBOTS_MOVED_HOST, "/robots.txt").status == 301
    assert web.respond(ROBOTS_MOVED_HOST, "/robots-moved.txt").body.endswith(b"/secret/\n")
    chain = web.respond(ROBOTS_CHAIN_HOST, "/robots-chain/5")
    assert dict(chain.headers)["Location"].endswith("/robots-chain/6")
    assert web.respond(ROBOTS_CHAIN_HOST, "/robots-chain/6").status == 200
    assert web.respond(BROKEN_HOST, "/bad-gzip").fault == "bad-gzip"
    assert len(web.respond(BROKEN_HOST, "/big").body) == HOSTILE.hostile_big_page_bytes
    huge = web.respond(BROKEN_HOST, "/huge-header")
    assert max(len(value) for _, value in huge.headers) == 64 * 1024
    assert len(web.respond(BROKEN_HOST, "/many-headers").headers) > 1000
    assert web.respond(BROKEN_HOST, "/nothing").status == 404


# -- the audit ------------------------------------------------------------------------------


def _correct_log(truth: ExpectedCrawl) -> list[RequestRecord]:
    """What a correct hardened crawler's requests look like in the log, one host after the
    other, one second apart (Retry-After is 2 s: retries come 3 s later)."""
    rough = truth.hostile
    assert rough is not None
    clock = [1000.0]
    records: list[RequestRecord] = []

    def request(url: str, status: int, **extra: object) -> None:
        host, path = split_url(url)
        start = clock[0]
        records.append(
            RequestRecord(start, start + 0.1, host, path, "GET", status, 10, TOKEN, **extra)  # type: ignore[arg-type]
        )
        clock[0] += 1.0

    hosts = sorted({split_url(u)[0] for u in (*truth.fetch, *rough.retry, *rough.once)})
    for host in sorted(set(truth.robots) | set(rough.robots) | set(hosts)):
        status = truth.robots.get(host, rough.robots.get(host, 0))
        request(f"http://{host}/robots.txt", status)
        for url in sorted(rough.robots_extra):
            if split_url(url)[0] == host:
                request(url, 200)
        for url, status in sorted(truth.fetch.items()):
            if split_url(url)[0] == host:
                request(url, status)
        for url, fault in sorted(rough.once.items()):
            if split_url(url)[0] == host:
                request(url, 200, fault=fault)
        for url, (first, then) in sorted(rough.retry.items()):
            if split_url(url)[0] == host:
                request(url, first, retry_at=clock[0] + 0.1 + rough.retry_after)
                clock[0] += rough.retry_after + 1
                request(url, then)
    return records


def test_audit_accepts_a_correct_hardened_crawler(truth: ExpectedCrawl) -> None:
    records = _correct_log(truth)
    assert audit_log(records, truth) == []
    assert audit_hostile(records, truth) == []


def test_audit_catches_a_crawler_that_is_not_hardened(truth: ExpectedCrawl) -> None:
    records = _correct_log(truth)
    retry_url = f"http://{RETRY_HOST}/retry/429/a"
    told = next(r for r in records if r.url == retry_url)
    assert told.retry_at is not None
    early = RequestRecord(
        told.end + 0.5, told.end + 0.6, RETRY_HOST, "/retry/429/a", "GET", 200, 5, TOKEN
    )
    private = RequestRecord(
        5000, 5000.1, "10.0.0.1", "/", "GET", 421, 10, TOKEN, fault="private-address"
    )
    stalled = RequestRecord(5001, 5001.1, ROBOTS_STALL_HOST, "/p/1", "GET", 200, 10, TOKEN)
    once = next(r for r in records if r.fault == "reset")
    bad = [*records, early, private, stalled, once]
    problems = audit_hostile(bad, truth)
    assert any("early retry" in p and retry_url in p for p in problems)
    assert any(p.startswith("http://10.0.0.1/: requested a private address") for p in problems)
    assert any(ROBOTS_STALL_HOST in p and "never answered" in p for p in problems)
    assert len(problems) == 3
    general = audit_log(bad, truth)
    assert any(retry_url in p and "3 times" in p for p in general)
    assert any("10.0.0.1" in p and "private address" in p for p in general)
    assert any(p == f"{once.url}: requested 2 times" for p in general)
    # A crawler that never retries is told so.
    missing = [r for r in records if not (r.url == retry_url and r.status == 200)]
    assert any(retry_url in p and "not retried" in p for p in audit_log(missing, truth))


# -- through the real server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyntheticWebServer]:
    log_path = tmp_path_factory.mktemp("hostile") / "requests.jsonl"
    with SyntheticWebServer(HOSTILE, log_path, flush_interval=0.1) as running:
        yield running


def _connect(server: SyntheticWebServer, timeout: float = 10) -> http.client.HTTPConnection:
    host, _, port = server.proxy_url.removeprefix("http://").rpartition(":")
    return http.client.HTTPConnection(host, int(port), timeout=timeout)


def _get(server: SyntheticWebServer, url: str) -> tuple[int, dict[str, str], bytes]:
    connection = _connect(server)
    try:
        connection.request("GET", url, headers={"User-Agent": TOKEN})
        reply = connection.getresponse()
        return reply.status, dict(reply.getheaders()), reply.read()
    finally:
        connection.close()


def _raw_get(server: SyntheticWebServer, url: str) -> bytes:
    raw = socket.create_connection(("127.0.0.1", int(server.proxy_url.rpartition(":")[2])))
    raw.sendall(f"GET {url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = bytearray()
    while chunk := raw.recv(65536):
        data.extend(chunk)
    raw.close()
    return bytes(data)


def _log(server: SyntheticWebServer, url: str) -> list[RequestRecord]:
    return [r for r in server.request_log() if r.url == url]


def test_retry_after_first_then_200(server: SyntheticWebServer) -> None:
    url = f"http://{RETRY_HOST}/retry/429/a"
    status, headers, _ = _get(server, url)
    assert (status, headers["Retry-After"]) == (429, str(HOSTILE.hostile_retry_after))
    status, headers, body = _get(server, url)
    assert status == 200
    assert "Retry-After" not in headers
    assert b"<html" in body
    first, second = _log(server, url)
    assert first.status == 429
    assert first.retry_at == pytest.approx(first.end + HOSTILE.hostile_retry_after, abs=0.1)
    assert (second.status, second.retry_at) == (200, None)


def test_retry_after_as_an_http_date(server: SyntheticWebServer) -> None:
    url = f"http://{RETRY_HOST}/retry/429-date/a"
    before = time.time()
    status, headers, _ = _get(server, url)
    assert status == 429
    when = email.utils.parsedate_to_datetime(headers["Retry-After"]).timestamp()
    assert before + HOSTILE.hostile_retry_after <= when <= before + HOSTILE.hostile_retry_after + 2
    assert _log(server, url)[0].retry_at == when
    assert _get(server, url)[0] == 200


def test_trickle_is_slow_and_blocks_nothing(server: SyntheticWebServer) -> None:
    trickle = _connect(server)
    trickle.request("GET", f"http://{TRICKLE_HOST}/trickle", headers={"User-Agent": TOKEN})
    reply = trickle.getresponse()
    assert reply.status == 200
    length = int(reply.headers["Content-Length"])
    assert length >= HOSTILE.hostile_trickle_seconds * hostile.TRICKLE_BYTES_PER_SECOND
    started = time.monotonic()
    assert _get(server, f"http://{TRICKLE_HOST}/fast")[0] == 200  # meanwhile
    assert _get(server, "http://h0.synth.test/")[0] == 200
    got = b""
    while time.monotonic() - started < 1.5:
        got += reply.read1(64)
    # Had the trickle held the other requests back, it would have been sent whole by now.
    assert 0 < len(got) < length / 4
    trickle.close()
    time.sleep(0.3)
    (record,) = _log(server, f"http://{TRICKLE_HOST}/trickle")
    assert record.aborted
    assert record.fault == "trickle"


def test_reset_really_resets(server: SyntheticWebServer) -> None:
    connection = _connect(server)
    connection.request("GET", f"http://{BROKEN_HOST}/reset", headers={"User-Agent": TOKEN})
    reply = connection.getresponse()
    assert reply.status == 200
    with pytest.raises((ConnectionResetError, http.client.IncompleteRead)):
        reply.read()
    connection.close()
    raw = socket.create_connection(("127.0.0.1", int(server.proxy_url.rpartition(":")[2])))
    raw.sendall(f"GET http://{BROKEN_HOST}/reset HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    data = bytearray()

    def read_all() -> None:
        while chunk := raw.recv(65536):
            data.extend(chunk)

    with pytest.raises(ConnectionResetError):
        read_all()
    raw.close()
    assert data.startswith(b"HTTP/1.1 200")


def test_broken_bodies(server: SyntheticWebServer) -> None:
    connection = _connect(server)
    connection.request("GET", f"http://{BROKEN_HOST}/short-body")
    with pytest.raises(http.client.IncompleteRead):
        connection.getresponse().read()
    connection.close()
    connection = _connect(server)
    connection.request("GET", f"http://{BROKEN_HOST}/bad-chunked")
    reply = connection.getresponse()
    assert reply.headers["Transfer-Encoding"] == "chunked"
    with pytest.raises(http.client.IncompleteRead):
        reply.read()
    connection.close()
    status, headers, body = _get(server, f"http://{BROKEN_HOST}/bad-gzip")
    assert (status, headers["Content-Encoding"]) == (200, "gzip")
    with pytest.raises(gzip.BadGzipFile):
        gzip.decompress(body)


def test_bomb_first_bytes_decompress_to_zeros(server: SyntheticWebServer) -> None:
    connection = _connect(server, timeout=30)
    connection.request("GET", f"http://{BROKEN_HOST}/bomb")
    reply = connection.getresponse()
    assert reply.headers["Content-Encoding"] == "gzip"
    length = int(reply.headers["Content-Length"])
    assert length < 2 * 1024 * 1024
    head = reply.read(16384)
    connection.close()
    inflated = zlib.decompressobj(31).decompress(head, 1 << 24)
    assert len(inflated) >= 1 << 20
    assert inflated == bytes(len(inflated))


def test_huge_headers_and_big_page(server: SyntheticWebServer) -> None:
    with pytest.raises(http.client.HTTPException, match="more than 100 headers"):
        _get(server, f"http://{BROKEN_HOST}/many-headers")  # as http.client refuses it
    head = _raw_get(server, f"http://{BROKEN_HOST}/many-headers").partition(b"\r\n\r\n")[0]
    assert head.count(b"\r\nX-Many-") == 1000
    huge = _raw_get(server, f"http://{BROKEN_HOST}/huge-header")
    assert b"\r\nX-Huge: " + b"h" * 65536 + b"\r\n" in huge
    status, _, body = _get(server, f"http://{BROKEN_HOST}/big")
    assert (status, len(body)) == (200, HOSTILE.hostile_big_page_bytes)


def test_private_addresses_get_421_and_are_logged(server: SyntheticWebServer) -> None:
    for url in PRIVATE_URLS:
        status, _, _ = _get(server, url)
        assert status == hostile.PRIVATE_STATUS, url
    hosts = {r.host for r in server.request_log() if r.fault == "private-address"}
    assert hosts == hostile.PRIVATE_HOSTS
    server.flush_log()  # the control pages still answer on the server's own port


def test_robots_stall_never_answers(server: SyntheticWebServer) -> None:
    connection = _connect(server, timeout=1.0)
    connection.request("GET", f"http://{ROBOTS_STALL_HOST}/robots.txt")
    with pytest.raises(TimeoutError):
        connection.getresponse()
    connection.close()
    connection = _connect(server, timeout=10)
    connection.request("GET", f"http://{ROBOTS_STALL_HOST}/robots.txt")
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        connection.getresponse()  # closed unanswered after hostile_robots_stall_seconds
    connection.close()
    records = _log(server, f"http://{ROBOTS_STALL_HOST}/robots.txt")
    assert [(r.status, r.fault) for r in records] == [(0, "stall")] * 2
    assert records[0].aborted
    assert not records[1].aborted
    assert records[1].duration >= HOSTILE.hostile_robots_stall_seconds - 0.1


def test_robots_redirects_through_the_server(server: SyntheticWebServer, tmp_path: Path) -> None:
    status, headers, _ = _get(server, f"http://{ROBOTS_MOVED_HOST}/robots.txt")
    assert status == 301
    assert _get(server, headers["Location"])[2] == b"User-agent: *\nDisallow: /secret/\n"
    url, hops = f"http://{ROBOTS_CHAIN_HOST}/robots.txt", 0
    while True:
        status, headers, body = _get(server, url)
        if status != 302:
            break
        url, hops = headers["Location"], hops + 1
    assert (hops, status, body) == (hostile.ROBOTS_CHAIN_LENGTH, 200, hostile.ALLOW_ALL)
    status, _, body = _get(server, f"http://{ROBOTS_BIG_HOST}/robots.txt")
    assert (status, body) == (200, hostile.big_robots())
