"""Which C allocator the local MiniCluster's JVM runs with: jemalloc where the machine has it.

The MiniCluster's JVM holds Flink, RocksDB and, in PyFlink's thread mode, the crawler's Python
interpreter. With the C library's ``malloc`` (glibc) its resident memory keeps growing in a
continuous crawl although the bytes in use stay flat: the allocator holds freed memory in its
arenas without giving it back (BENCHMARKS.md, "Memory flat"). jemalloc gives it back; Flink's
own Docker images preload it for RocksDB's sake. The JVM is a child of the launcher, so the
launcher puts the library in the child's ``LD_PRELOAD``: its own process is left as it is.

``crawl.native_allocator``: ``auto`` (jemalloc when found, else ``malloc``), ``jemalloc`` (an
error when not found) or ``malloc`` (the C library's). On a cluster the TaskManagers are
already running when the job arrives: preload the library where they are started (README,
"Running on a Flink cluster").
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, MutableMapping
from pathlib import Path

__all__ = ["ALLOCATORS", "AllocatorError", "find_jemalloc", "preload_allocator"]

ALLOCATORS = ("auto", "jemalloc", "malloc")

#: Where Linux distributions install jemalloc's shared library (Debian and Ubuntu: package
#: libjemalloc2; Fedora, RHEL: jemalloc; Alpine: jemalloc), and a build from source.
_LIBRARY_DIRECTORIES = (
    f"/usr/lib/{platform.machine()}-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
)
_LIBRARY_NAMES = ("libjemalloc.so.2", "libjemalloc.so")
_VARIABLE = "LD_PRELOAD"


class AllocatorError(Exception):
    """``crawl.native_allocator`` asks for jemalloc and the machine does not have it."""


def find_jemalloc(directories: Iterable[str | Path] = _LIBRARY_DIRECTORIES) -> Path | None:
    """The path of jemalloc's shared library in the first of ``directories`` holding one."""
    for directory in directories:
        for name in _LIBRARY_NAMES:
            candidate = Path(directory) / name
            if candidate.is_file():
                return candidate
    return None


def preload_allocator(
    setting: str,
    environment: MutableMapping[str, str],
    directories: Iterable[str | Path] = _LIBRARY_DIRECTORIES,
) -> str:
    """Set ``environment`` (that of the processes the launcher starts) for ``setting``; return
    what the JVM will allocate with: the library's path, or ``"malloc"``.

    An ``LD_PRELOAD`` that already names a jemalloc is left as it is (whatever the setting:
    the user chose it); with ``malloc`` any other preloads stay.
    """
    directories = tuple(directories)
    if setting not in ALLOCATORS:
        raise AllocatorError(
            f"crawl.native_allocator: expected one of {', '.join(ALLOCATORS)}, got {setting!r}")
    preloads = environment.get(_VARIABLE, "").replace(":", " ").split()
    named = next((entry for entry in preloads if "jemalloc" in Path(entry).name), None)
    if named is not None:
        return named
    if setting == "malloc":
        return "malloc"
    library = find_jemalloc(directories)
    if library is None:
        if setting == "jemalloc":
            raise AllocatorError(
                "crawl.native_allocator: jemalloc was asked for, and no libjemalloc.so.2 is in "
                f"{', '.join(str(d) for d in directories)} (Debian, Ubuntu: apt install "
                "libjemalloc2; or set native_allocator: malloc)")
        return "malloc"
    environment[_VARIABLE] = " ".join([str(library), *preloads])
    return str(library)
