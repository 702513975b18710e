"""The event loop the fetches run on (crawl.http.io_loop)."""

from __future__ import annotations

import threading
from pathlib import Path

from crawl.http.io_loop import IoLoop


def test_io_loop_closes(tmp_path: Path) -> None:
    loop = IoLoop("closing")

    async def answer() -> int:
        return 42

    assert loop.run(answer()) == 42
    loop.close()
    assert loop.loop.is_closed()


def test_fetches_are_submitted_from_other_threads_and_run_on_the_loops_thread() -> None:
    loop = IoLoop("threads")
    try:
        async def thread_name() -> str:
            return threading.current_thread().name

        futures = [loop.submit(thread_name()) for _ in range(3)]
        assert [future.result(30) for future in futures] == ["threads"] * 3
    finally:
        loop.close()
    loop.close()  # closing again does nothing
    assert loop.loop.is_closed()
