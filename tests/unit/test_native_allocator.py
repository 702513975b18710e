"""Choosing the MiniCluster JVM's C allocator (job/native_allocator.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crawl.config import ConfigError, load_config
from job.native_allocator import AllocatorError, find_jemalloc, preload_allocator


def _library(directory: Path, name: str = "libjemalloc.so.2") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    library = directory / name
    library.write_bytes(b"\x7fELF")
    return library


def test_the_first_directory_holding_jemalloc_wins(tmp_path: Path) -> None:
    first = _library(tmp_path / "a", "libjemalloc.so")
    _library(tmp_path / "b")
    assert find_jemalloc([tmp_path / "none", tmp_path / "a", tmp_path / "b"]) == first
    assert find_jemalloc([tmp_path / "none"]) is None


def test_auto_preloads_jemalloc_before_the_preloads_already_set(tmp_path: Path) -> None:
    library = _library(tmp_path / "lib")
    environment = {"LD_PRELOAD": "/opt/other.so"}
    assert preload_allocator("auto", environment, [tmp_path / "lib"]) == str(library)
    assert environment["LD_PRELOAD"] == f"{library} /opt/other.so"


def test_auto_without_jemalloc_keeps_malloc_and_the_environment(tmp_path: Path) -> None:
    environment = {"PATH": "/bin"}
    assert preload_allocator("auto", environment, [tmp_path]) == "malloc"
    assert environment == {"PATH": "/bin"}


def test_jemalloc_asked_for_and_missing_is_an_error_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(AllocatorError, match="crawl.native_allocator.*libjemalloc2"):
        preload_allocator("jemalloc", {}, [tmp_path])


def test_malloc_preloads_nothing_even_where_jemalloc_is(tmp_path: Path) -> None:
    _library(tmp_path)
    environment: dict[str, str] = {}
    assert preload_allocator("malloc", environment, [tmp_path]) == "malloc"
    assert environment == {}


def test_a_jemalloc_the_user_preloaded_is_kept_as_it_is(tmp_path: Path) -> None:
    _library(tmp_path)
    environment = {"LD_PRELOAD": "/opt/jemalloc/lib/libjemalloc.so.2:/opt/x.so"}
    for setting in ("auto", "jemalloc", "malloc"):
        assert preload_allocator(setting, environment, [tmp_path]) == \
            "/opt/jemalloc/lib/libjemalloc.so.2"
    assert environment["LD_PRELOAD"] == "/opt/jemalloc/lib/libjemalloc.so.2:/opt/x.so"


def test_an_unknown_allocator_is_refused_by_the_configuration(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="crawl.native_allocator: must be auto, jemalloc or "
                                          "malloc, got 'tcmalloc'"):
        load_config(None, overrides={"crawl.native_allocator": "tcmalloc"})
    with pytest.raises(AllocatorError, match="expected one of auto, jemalloc, malloc"):
        preload_allocator("tcmalloc", {}, [tmp_path])


def test_a_child_started_with_the_chosen_environment_allocates_as_announced() -> None:
    """The machine's real state either way: where it has jemalloc, a child started with the
    environment ``auto`` makes answers jemalloc's ``mallctl`` (crawl.memory.jemalloc_info) and
    a child without it does not; where it has none, ``auto`` announces malloc, leaves the
    environment as it was, and the child runs with glibc's malloc."""
    environment = dict(os.environ)
    environment.pop("LD_PRELOAD", None)
    probe = [sys.executable, "-c", "from crawl.memory import jemalloc_info; "
             "print(jemalloc_info() is not None)"]
    root = Path(__file__).resolve().parents[2]

    def child_has_jemalloc() -> bool:
        answer = subprocess.run(probe, env=environment, cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip()
        return answer == "True"

    assert not child_has_jemalloc()
    library = find_jemalloc()
    before = dict(environment)
    announced = preload_allocator("auto", environment)
    if library is None:
        assert announced == "malloc"
        assert environment == before
        assert not child_has_jemalloc()
    else:
        assert announced == str(library)
        assert child_has_jemalloc()
