"""Where a crawl process's memory goes, written down now and then when asked.

A TaskManager (or the local MiniCluster) runs the crawler's Python code in an interpreter
embedded in the JVM, next to Flink's RocksDB. What the JVM's Native Memory Tracking does not
account for is shared by the interpreter's objects, RocksDB and the C library's allocator, and
only the process itself can tell them apart. With the environment variable
``PYFLINK_CRAWLER_MEMORY_TRACE`` set to a number of seconds, the first crawler operator that
opens in a process starts a thread that appends, at that interval, one JSON line to
``status/memory-<pid>.jsonl`` of the crawl's output:

- ``rss``: the process's resident bytes, and ``rss_by_kind``: anonymous memory, mapped files,
  shared memory;
- ``malloc`` (glibc's ``mallinfo2``): ``in_use`` bytes handed out by ``malloc`` (the
  interpreter's large objects, RocksDB, the JVM's own native allocations), ``free`` bytes the
  allocator holds without using them (fragmentation), ``mmapped`` bytes of its large blocks;
- ``jemalloc``, when the process runs with jemalloc in place of glibc's ``malloc``
  (``crawl.native_allocator``): its ``allocated`` bytes (handed out), ``active`` (in pages
  holding them), ``resident``, ``metadata``, ``mapped`` and ``retained`` (virtual memory kept
  for reuse, not resident);
- ``python``: the interpreter's allocated blocks (objects and buffers of up to 512 bytes, which
  its own allocator keeps in 1 MiB arenas outside ``malloc``), its tracked objects per
  generation;
- ``containers``: the largest containers (dicts, lists, sets, deques) of at least 5,000 items
  with what holds them, as [owner, type, length]: caches and indexes filling up, which the
  type counts miss (a dict of strings is one object, untracked);
- ``types``: the container types (those the garbage collector tracks: dicts, lists, tuples,
  class instances) whose number of objects grew most since the first line, with their counts.
  Counting them walks every tracked object (about 0.3 s per million, holding the interpreter
  lock), so keep the interval at a minute or more.

It is a diagnostic: a crawl runs without it, and writing it never fails the crawl.
:mod:`tracemalloc` would tell source lines instead of types, but it deadlocked the
interpreter PyFlink embeds in the JVM (thread mode: tasks stayed INITIALIZING for good), so
do not start a crawl with ``PYTHONTRACEMALLOC`` set.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import json
import logging
import os
import sys
import threading
import time
import types
from collections import Counter
from pathlib import Path
from typing import Any

__all__ = [
    "ENVIRONMENT_VARIABLE", "MemoryTrace", "jemalloc_info", "large_containers", "malloc_info",
    "memory_line", "rss_bytes", "rss_kinds", "type_counts",
]

log = logging.getLogger(__name__)

ENVIRONMENT_VARIABLE = "PYFLINK_CRAWLER_MEMORY_TRACE"
_TOP_TYPES = 20
#: Fewest items of a container :func:`large_containers` names.
_LARGE = 5_000


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _mallinfo2() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        function = libc.mallinfo2  # glibc 2.33 and later
    except (OSError, AttributeError):
        return None
    function.restype = _MallInfo2
    function.argtypes = []
    return function


_MALLINFO2 = _mallinfo2()


def malloc_info() -> dict[str, int] | None:
    """The C library allocator's figures (bytes), or None where it is not glibc 2.33+."""
    if _MALLINFO2 is None:
        return None
    info = _MALLINFO2()
    return {
        "in_use": int(info.uordblks) + int(info.hblkhd),
        "free": int(info.fordblks),
        "mmapped": int(info.hblkhd),
        "heap": int(info.arena),
    }


_JEMALLOC_STATS = ("allocated", "active", "resident", "metadata", "mapped", "retained")


def _mallctl() -> Any:
    try:
        function = ctypes.CDLL(None).mallctl  # present when jemalloc replaced malloc
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                         ctypes.c_void_p, ctypes.c_size_t]
    return function


_MALLCTL = _mallctl()


def jemalloc_info() -> dict[str, int] | None:
    """jemalloc's figures (bytes) when this process allocates with it, else None."""
    if _MALLCTL is None:
        return None
    # Statistics are a snapshot taken when the epoch is advanced.
    epoch = ctypes.c_uint64(1)
    size = ctypes.c_size_t(ctypes.sizeof(epoch))
    if _MALLCTL(b"epoch", ctypes.byref(epoch), ctypes.byref(size), ctypes.byref(epoch),
                size) != 0:
        return None
    figures = {}
    for name in _JEMALLOC_STATS:
        value = ctypes.c_size_t(0)
        size = ctypes.c_size_t(ctypes.sizeof(value))
        if _MALLCTL(f"stats.{name}".encode(), ctypes.byref(value), ctypes.byref(size),
                    None, 0) == 0:
            figures[name] = int(value.value)
    return figures or None


def rss_bytes() -> int:
    """This process's resident memory in bytes (0 where /proc cannot tell)."""
    try:
        fields = Path("/proc/self/statm").read_text().split()
        return int(fields[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def rss_kinds() -> dict[str, int]:
    """This process's resident bytes by kind (Linux): ``anon`` (heaps, arenas, stacks),
    ``file`` (mapped files: libraries, jars) and ``shmem``; empty where /proc cannot tell."""
    kinds = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("RssAnon", "RssFile", "RssShmem"):
                kinds[name[3:].lower()] = int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return {}
    return kinds


def type_counts() -> Counter[str]:
    """How many objects of each type the garbage collector tracks. O(objects)."""
    return Counter(type(item).__qualname__ for item in gc.get_objects())


_CONTAINERS = (dict, list, set, frozenset, collections.deque, bytearray)


#: Before Python 3.11 an object's attributes are a dict of its own, which the garbage collector
#: gives as the object's referent (3.11 keeps them in the object, and gives their values).
_ATTRIBUTES_IN_A_DICT = sys.version_info < (3, 11)
#: Py_TPFLAGS_HEAPTYPE, the flag of classes defined in Python: their instances are those objects.
_HEAP_TYPE = 1 << 9


def _referents(owner: object) -> list[Any]:
    """What ``owner`` refers to: for a module what its namespace holds, for an object its
    attributes too, not only the dict holding them (Python 3.10).

    The garbage collector is not asked for a module's referents: for an extension module they
    are its C state, and for ``_asyncio`` on Python 3.12 before 3.12.6 the walk hands out the
    free list of future iterators, which dropping the answer frees a second time, leaving a
    cycle that the next walk follows until memory runs out."""
    if isinstance(owner, types.ModuleType):
        return list(vars(owner).values())
    referents = gc.get_referents(owner)
    if _ATTRIBUTES_IN_A_DICT and type(owner).__flags__ & _HEAP_TYPE and not isinstance(owner, type):
        attributes = _attribute_dict(owner, referents)
        if attributes is not None:
            referents.extend(list(attributes.values()))
    return referents


def _attribute_dict(owner: object, referents: list[Any]) -> dict[str, Any] | None:
    """The dict of ``owner``'s attributes when it is among ``referents`` (so asking for it
    creates none)."""
    if not any(type(item) is dict for item in referents):
        return None
    try:
        attributes = object.__getattribute__(owner, "__dict__")
    except Exception:  # noqa: BLE001 - an object that has none, or will not tell
        return None
    return attributes if any(item is attributes for item in referents) else None


def _owner_name(owner: object) -> str:
    name = getattr(owner, "__qualname__", None)
    if isinstance(name, str) and type(owner).__name__ == "_lru_cache_wrapper":
        return f"lru_cache {name}"
    return type(owner).__qualname__


def large_containers(minimum: int = _LARGE, top: int = _TOP_TYPES) -> list[list[Any]]:
    """The ``top`` largest containers of at least ``minimum`` items, each as [owner, type,
    length]: caches and indexes that fill up. A dict of strings and numbers only is not
    tracked by the garbage collector, so containers are found as what tracked objects refer to;
    the owner is the referring object's type (a ``functools.lru_cache`` by its function's
    name), any other before a plain dict (which may be the dict of an object's attributes on
    Python 3.10, or a module's namespace). O(tracked objects and their references)."""
    found: dict[int, list[Any]] = {}
    for owner in gc.get_objects():
        if isinstance(owner, _CONTAINERS) and len(owner) >= minimum and id(owner) not in found:
            found[id(owner)] = ["", type(owner).__qualname__, len(owner)]
        for item in _referents(owner):
            if isinstance(item, _CONTAINERS) and len(item) >= minimum:
                entry = found.setdefault(id(item), ["", type(item).__qualname__, len(item)])
                if not entry[0] or entry[0] == "dict" and type(owner) is not dict:
                    entry[0] = _owner_name(owner)
    return sorted(found.values(), key=lambda entry: -entry[2])[:top]


def memory_line(first: Counter[str] | None = None) -> tuple[dict[str, Any], Counter[str]]:
    """One sample as a dict, and the type counts taken for it; ``first``, the counts of an
    earlier sample, gives the types that grew most since then."""
    line: dict[str, Any] = {
        "time": round(time.time(), 3),
        "pid": os.getpid(),
        "rss": rss_bytes(),
        "rss_by_kind": rss_kinds(),
        "malloc": malloc_info(),
        "jemalloc": jemalloc_info(),
        "python": {"allocated_blocks": sys.getallocatedblocks(),
                   "gc_objects_by_generation": list(gc.get_count())},
    }
    counts = type_counts()
    line["python"]["tracked_objects"] = sum(counts.values())
    line["containers"] = large_containers()
    if first is not None:
        growth = counts.copy()
        growth.subtract(first)
        line["types"] = [[name, grown, counts[name]]
                         for name, grown in growth.most_common(_TOP_TYPES) if grown > 0]
    return line, counts


class MemoryTrace:
    """The one memory trace of this process (see the module docstring)."""

    _started: MemoryTrace | None = None
    _lock = threading.Lock()

    def __init__(self, path: Path, interval: float) -> None:
        self.path = path
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-trace", daemon=True)
        self._thread.start()

    @classmethod
    def start_if_asked(cls, status_directory: str | Path) -> MemoryTrace | None:
        """Start this process's trace into ``status_directory`` if the environment asks for
        one and none runs yet; return the running trace, if any."""
        setting = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
        if not setting:
            return None
        with cls._lock:
            if cls._started is None:
                try:
                    interval = float(setting)
                    if not interval > 0:
                        raise ValueError
                except ValueError:
                    log.warning("%s=%r: expected a number of seconds > 0; no memory trace",
                                ENVIRONMENT_VARIABLE, setting)
                    return None
                path = Path(status_directory) / f"memory-{os.getpid()}.jsonl"
                cls._started = MemoryTrace(path, interval)
            return cls._started

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        first = None
        while True:
            try:
                line, counts = memory_line(first)
                if first is None:
                    first = counts
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as file:
                    file.write(json.dumps(line) + "\n")
            except Exception:  # noqa: BLE001 - a diagnostic never takes the crawl down
                log.exception("memory trace: sample failed")
            if self._stop.wait(self.interval):
                return
