"""Loop records: line format round trip, bad lines, grouping by vnode, and seed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crawl.loop.records import (
    DoneEvent,
    FoundUrl,
    LoopRecordError,
    decode_line,
    encode_line,
    group_by_vnode,
    parse_payload,
    url_vnode,
    write_seed_file,
)
from crawl.urls.normalize import vnode_of

FOUND: list[FoundUrl] = [
    ("http://a.example/x", "L", "http://a.example/"),
    ("http://b.example/caf%C3%A9?q=1", "LLR", "http://a.example/x"),
    ("http://a.example/", "", ""),
]
DONE: list[DoneEvent] = [
    ("http://a.example/x", "FETCHED", 200, "http:200", 1_700_000_000_123),
    ("http://a.example/y", "FETCH_ERROR", 0, "timeout:read", 0),
]


@pytest.mark.parametrize(
    ("vnode", "found", "done"),
    [
        (0, FOUND, DONE),
        (255, FOUND, []),
        (7, [], DONE),
        (32767, [], []),
        (3, [("http://\u00e9.example/\t\"q\"\\", "L", "")], []),
    ],
)
def test_encode_decode_parse_round_trip(
    vnode: int, found: list[FoundUrl], done: list[DoneEvent]
) -> None:
    line = encode_line(vnode, found, done)

    decoded_vnode, payload = decode_line(line)

    assert "\n" not in line
    assert decoded_vnode == vnode
    assert parse_payload(payload) == (found, done)


def test_encode_line_golden() -> None:
    line = encode_line(12, [("http://a.example/", "L", "")], [("http://a.example/", "FETCHED",
                                                               200, "http:200", 5)])

    assert line == (
        '12\t{"found":[["http://a.example/","L",""]],'
        '"done":[["http://a.example/","FETCHED",200,"http:200",5]]}'
    )


def test_empty_lists_are_left_out() -> None:
    assert encode_line(4) == "4\t{}"
    assert encode_line(4, found=iter(FOUND)) == "4\t" + json.dumps(
        {"found": [list(item) for item in FOUND]}, separators=(",", ":")
    )


@pytest.mark.parametrize(
    "line",
    [
        "",
        "12",
        "12 {}",
        '12{"found":[]}',
        "\t{}",
        "-1\t{}",
        "+1\t{}",
        "1.5\t{}",
        "x\t{}",
        " 1\t{}",
        "\u00b2\t{}",
        "\u0661\u0662\t{}",
        "12\t",
        "12\t[]",
        "12\tnull",
    ],
)
def test_decode_line_refuses(line: str) -> None:
    with pytest.raises(LoopRecordError, match="not a loop line"):
        decode_line(line)


@pytest.mark.parametrize(
    "payload",
    [
        "{",
        '{"found": [["u", "L", "v"]]',
        "{'found': []}",
        '{"found": 5}',
        '{"found": [["u", "L"]]}',
        '{"found": [["u", "L", "v", "extra"]]}',
        '{"done": [["u", "FETCHED", 200, "http:200"]]}',
        '{"done": [["u", "FETCHED", 200, "http:200", 5, 6]]}',
        '{"done": [["u", "FETCHED", "two hundred", "http:200", 5]]}',
        '{"done": [["u", "FETCHED", null, "http:200", 5]]}',
        '{"done": [["u", "FETCHED", 200, "http:200", "later"]]}',
        "[]",
        "null",
    ],
)
def test_parse_payload_refuses(payload: str) -> None:
    with pytest.raises(LoopRecordError, match="bad loop payload"):
        parse_payload(payload)


def test_parse_payload_of_empty_object() -> None:
    assert parse_payload("{}") == ([], [])


# -- grouping by vnode ------------------------------------------------------------------------


def test_group_by_vnode() -> None:
    urls: list[FoundUrl] = [
        (f"http://h{n % 3}.d{n % 7}.example/p/{n}", "L", "http://h0.synth.test/")
        for n in range(40)
    ]

    groups = group_by_vnode(urls, 16)

    assert sorted(item for group in groups.values() for item in group) == sorted(urls)
    for vnode, group in groups.items():
        assert 0 <= vnode < 16
        assert all(url_vnode(url, 16) == vnode for url, _, _ in group)
        # Order within a group is the order of discovery.
        assert group == [item for item in urls if item in group]


def test_group_by_vnode_ignores_the_port() -> None:
    urls: list[FoundUrl] = [("http://example.com/", "", ""), ("http://example.com:8080/", "", "")]

    groups = group_by_vnode(urls, 32768)

    assert groups == {vnode_of("example.com", 32768): urls}


def test_group_by_vnode_of_nothing() -> None:
    assert group_by_vnode([], 8) == {}


# -- seed files -------------------------------------------------------------------------------


def _read_loop_dir(directory: Path) -> list[tuple[int, list[FoundUrl]]]:
    lines = []
    for path in sorted(directory.iterdir()):
        for line in path.read_text(encoding="utf-8").splitlines():
            vnode, payload = decode_line(line)
            found, done = parse_payload(payload)
            assert done == []
            lines.append((vnode, found))
    return lines


def test_write_seed_file(tmp_path: Path) -> None:
    seeds = [
        "# a comment",
        "",
        "   ",
        "HTTP://H1.Synth.Test",
        "http://h1.synth.test:80/",
        "  http://h2.synth.test/a/../b#frag  \n",
        "http://h2.synth.test/b",
        "mailto:ops@example.org",
        "ftp://h3.synth.test/",
        "h4.synth.test",
        "http://[bad",
        "   # indented comment",
        "http://h5.synth.test/caf\u00e9",
    ]
    loop_dir = tmp_path / "loop"

    written, rejected = write_seed_file(loop_dir, seeds, 8)

    assert written == 3
    assert rejected == [
        ("mailto:ops@example.org", "url:scheme:mailto"),
        ("ftp://h3.synth.test/", "url:scheme:ftp"),
        ("h4.synth.test", "url:scheme:none"),
        ("http://[bad", "url:unparseable"),
    ]
    files = list(loop_dir.iterdir())
    assert len(files) == 1
    assert files[0].name.startswith("seeds-")
    lines = _read_loop_dir(loop_dir)
    assert [vnode for vnode, _ in lines] == sorted({vnode for vnode, _ in lines})
    urls = [url for _, found in lines for url, hops, via in found if (hops, via) == ("", "")]
    assert sorted(urls) == [
        "http://h1.synth.test/",
        "http://h2.synth.test/b",
        "http://h5.synth.test/caf%C3%A9",
    ]
    for vnode, found in lines:
        assert all(url_vnode(url, 8) == vnode for url, _, _ in found)


def test_write_seed_file_leaves_no_hidden_file(tmp_path: Path) -> None:
    for batch in range(3):
        write_seed_file(tmp_path, [f"http://h{batch}.synth.test/"], 4)

    names = [path.name for path in tmp_path.iterdir()]
    assert len(names) == 3
    assert not [name for name in names if name.startswith(".") or name.endswith(".tmp")]
    assert len(_read_loop_dir(tmp_path)) == 3


def test_write_seed_file_of_only_bad_seeds_writes_nothing(tmp_path: Path) -> None:
    loop_dir = tmp_path / "loop"

    written, rejected = write_seed_file(loop_dir, ["# none", "javascript:void(0)"], 4)

    assert (written, rejected) == (0, [("javascript:void(0)", "url:scheme:javascript")])
    assert not loop_dir.exists()


def test_write_seed_file_of_many_seeds_groups_them(tmp_path: Path) -> None:
    seeds = [f"http://h{n % 50}.synth.test/p/{n}" for n in range(500)]

    written, rejected = write_seed_file(tmp_path, seeds, 16)

    assert (written, rejected) == (500, [])
    lines = _read_loop_dir(tmp_path)
    assert len(lines) <= 16
    assert sorted(url for _, found in lines for url, _, _ in found) == sorted(seeds)


def test_every_host_of_a_registered_domain_shares_a_vnode() -> None:
    hosts = ["example.co.uk", "www.example.co.uk", "a.b.example.co.uk"]
    assert {url_vnode(f"http://{host}/x", 256) for host in hosts} == {
        vnode_of("example.co.uk", 256)
    }
    assert url_vnode("http://127.0.0.1:8080/", 256) == vnode_of("127.0.0.1", 256)
