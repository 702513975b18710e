"""The event loop every fetch runs on: an asyncio loop in a daemon thread.

The fetch operator hands fetches to it with :meth:`IoLoop.submit` and collects the finished ones
later, so no Flink call ever waits for the network (a checkpoint never waits for a slow server
either).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any

__all__ = ["DNS_THREADS", "IoLoop"]

#: Threads for blocking ``getaddrinfo`` calls, per event loop (asyncio's default is 6 on two
#: cores: a few slow name servers would hold up every new host).
DNS_THREADS = 16


class IoLoop:
    """An asyncio event loop in a daemon thread, fed from other threads.

    Its default executor (where :class:`aiohttp.ThreadedResolver` runs ``getaddrinfo``) has
    :data:`DNS_THREADS` threads.
    """

    def __init__(self, name: str = "crawler-io") -> None:
        self.loop = asyncio.new_event_loop()
        self._executor = concurrent.futures.ThreadPoolExecutor(
            DNS_THREADS, thread_name_prefix=f"{name}-dns"
        )
        self.loop.set_default_executor(self._executor)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        """Schedule ``coroutine`` on the loop; the returned future completes with its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        """Run ``coroutine`` on the loop and wait for its result (setup and teardown only)."""
        return self.submit(coroutine).result(timeout)

    def close(self) -> None:
        """Stop the loop and its thread; pending fetches are abandoned."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()
        # Lookups still blocked in getaddrinfo finish on their own; nobody waits for them.
        self._executor.shutdown(wait=False, cancel_futures=True)
