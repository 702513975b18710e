"""The memory trace: what a line holds, and when a process writes one."""

from __future__ import annotations

import functools
import gc
import json
import platform
import time
import types

import pytest

from crawl import memory
from crawl.memory import (
    ENVIRONMENT_VARIABLE,
    MemoryTrace,
    jemalloc_info,
    large_containers,
    malloc_info,
    memory_line,
)


@pytest.fixture
def no_trace_yet(monkeypatch):
    monkeypatch.setattr(MemoryTrace, "_started", None)
    yield
    running = MemoryTrace._started
    if running is not None:
        running.stop()


def test_malloc_figures_follow_an_allocation_of_the_c_library():
    before = malloc_info()
    libc, version = platform.libc_ver()
    if libc != "glibc" or tuple(map(int, version.split(".")[:2])) < (2, 33):
        assert before is None  # no mallinfo2 there: the trace leaves the figures out
        return
    assert before is not None
    block = bytearray(64 * 2**20)  # a large block: malloc maps it
    after = malloc_info()
    assert after["mmapped"] - before["mmapped"] >= 64 * 2**20
    assert after["in_use"] - before["in_use"] >= 64 * 2**20
    del block


class _Held:
    pass


def test_a_line_names_the_types_that_grew_since_the_first():
    line, first = memory_line()
    assert "types" not in line
    assert line["rss"] > 0
    assert line["python"]["allocated_blocks"] > 0
    held = [_Held() for _ in range(20_000)]  # the growing type
    line, _ = memory_line(first)
    name, grown, count = line["types"][0]
    assert name == "_Held"
    assert grown >= 20_000
    assert count >= grown
    assert line["python"]["tracked_objects"] >= 20_000
    del held


class _UrlCache:
    def __init__(self, size: int) -> None:
        self.urls = {f"http://h{i}.test/": f"h{i}.test" for i in range(size)}


def test_large_containers_name_untracked_caches_by_their_owner():
    cache = _UrlCache(12_000)  # strings only: the dict itself is not tracked
    assert not gc.is_tracked(cache.urls)

    @functools.lru_cache(maxsize=8192)
    def host_of(url: str) -> str:
        return url

    for i in range(6_000):
        host_of(str(i))
    found = large_containers(minimum=5_000)
    assert ["_UrlCache", "dict", 12_000] in found
    assert ["lru_cache test_large_containers_name_untracked_caches_by_their_owner.<locals>."
            "host_of", "dict", 6_000] in found
    assert all(length >= 5_000 for _, _, length in found)
    lengths = [length for _, _, length in found]
    assert lengths == sorted(lengths, reverse=True)
    assert "containers" in memory_line()[0]


def test_large_containers_read_a_module_through_its_namespace(monkeypatch):
    # The garbage collector's referents of an extension module are its C state; for _asyncio
    # on Python 3.12 before 3.12.6 asking for them corrupts its free list of future iterators
    # (memory runs out at the next walk). So no module is asked about, and what a module holds
    # is still found.
    module = types.ModuleType("module_with_a_cache")
    module.hosts = {f"h{i}.test": f"http://h{i}.test/" for i in range(7_000)}
    asked_about = []
    walk = gc.get_referents

    def get_referents(*objects):
        asked_about.extend(type(item) for item in objects)
        return walk(*objects)

    monkeypatch.setattr(gc, "get_referents", get_referents)
    found = large_containers(minimum=5_000)
    assert types.ModuleType not in asked_about
    assert asked_about  # everything else is still walked
    assert any(owner in ("module", "dict") and length == 7_000 for owner, _, length in found)


def test_jemalloc_figures_only_where_the_process_allocates_with_it():
    # The test process runs with glibc's malloc (jemalloc's figures are checked in a child
    # started with it preloaded: test_native_allocator.py).
    assert jemalloc_info() is None


def test_the_first_operator_of_a_process_starts_its_only_trace(tmp_path, monkeypatch,
                                                               no_trace_yet):
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "0.05")
    trace = MemoryTrace.start_if_asked(tmp_path)
    assert trace is not None
    assert MemoryTrace.start_if_asked(tmp_path / "other") is trace
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = trace.path.read_text().splitlines() if trace.path.exists() else []
        if len(lines) >= 3:
            break
        time.sleep(0.05)
    trace.stop()
    samples = [json.loads(line) for line in lines]
    assert len(samples) >= 3
    assert trace.path.parent == tmp_path
    assert all(sample["rss"] > 0 and "malloc" in sample for sample in samples)
    assert samples[0]["time"] < samples[-1]["time"]


@pytest.mark.parametrize("setting", ["", "soon", "0", "-5"])
def test_no_trace_unless_a_positive_interval_is_asked(tmp_path, monkeypatch, no_trace_yet,
                                                      setting):
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, setting)
    assert MemoryTrace.start_if_asked(tmp_path) is None
    assert memory.MemoryTrace._started is None
    assert list(tmp_path.iterdir()) == []
