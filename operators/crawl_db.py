"""The crawl DB stage: the URL-seen test and the status of every URL, per vnode.

Keyed by vnode. Input: ``(vnode, loop payload JSON)`` (see :mod:`crawl.loop`). Output:
``(host, JSON list of [url, hops, via])``, the URLs seen here for the first time, batched per
host, for the fetch stage. Fetch outcomes ("done") update the URL's record
(:func:`crawl.crawldb.merge_done`); URLs already known are dropped, so nothing is fetched twice.

State, keyed by vnode:

1. ``urls``: MapState url -> record row (status, HTTP status, reason, depth, discovered,
   fetched, fetch count, failure count, layout version); RocksDB spills it to disk.
2. ``known``: ValueState, the number of URLs in ``urls`` (MapState has no cheap size).
"""

from __future__ import annotations

import json
import time

from pyflink.common import Row, Types
from pyflink.datastream import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

from crawl.crawldb import UrlRecord, merge_done, new_record
from crawl.layout import OutputLayout
from crawl.loop import LoopRecordError, parse_payload
from crawl.progress import StageStatus
from crawl.urls import host_of
from operators.context import Lifecycle, subtask_of

__all__ = ["URL_RECORD_ROW", "CrawlDbFunction"]

URL_RECORD_ROW = Types.ROW_NAMED(
    list(UrlRecord._fields),
    [
        Types.STRING(),
        Types.INT(),
        Types.STRING(),
        Types.INT(),
        Types.LONG(),
        Types.LONG(),
        Types.INT(),
        Types.INT(),
        Types.INT(),
    ],
)


class CrawlDbFunction(KeyedProcessFunction):
    """URL-seen test and crawl DB keyed by vnode (see the module docstring)."""

    def __init__(self, output_dir: str) -> None:
        self._output_dir = output_dir

    def open(self, runtime_context: RuntimeContext) -> None:
        subtask = subtask_of(runtime_context)
        self._urls = runtime_context.get_map_state(
            MapStateDescriptor("urls", Types.STRING(), URL_RECORD_ROW)
        )
        self._known = runtime_context.get_state(ValueStateDescriptor("known", Types.LONG()))
        self._status = StageStatus(
            OutputLayout(self._output_dir).status,
            "crawldb",
            subtask.index,
            subtask.attempt,
        )
        # URLs known per vnode of this subtask, for the figures only.
        self._known_by_vnode: dict[int, int] = {}
        self._status.gauge_functions["known"] = lambda: sum(self._known_by_vnode.values())
        self._subtask = subtask.index
        Lifecycle.opened("crawldb", subtask.index, self._status.close)

    def close(self) -> None:
        Lifecycle.closed("crawldb", self._subtask, self._status.close)
        self._status.close()

    def process_element(self, value: tuple[int, str], ctx: KeyedProcessFunction.Context):
        began = time.thread_time()
        vnode, payload = value
        status = self._status
        try:
            found, done = parse_payload(payload)
        except LoopRecordError:
            status.count("lines.bad")
            return
        now = ctx.timer_service().current_processing_time()
        known = self._known.value() or 0
        for url, status_name, http_status, reason, at_ms in done:
            row = self._urls.get(url)
            record = UrlRecord(*row) if row is not None else None
            if record is None:
                known += 1
            merged = merge_done(record, status_name, http_status, reason, at_ms)
            self._urls.put(url, Row(*merged))
            status.count(f"done.{status_name}")
        batches: dict[str, list[list[str]]] = {}
        for url, hops, via in found:
            if self._urls.contains(url):
                status.count("urls.duplicate")
                continue
            self._urls.put(url, Row(*new_record(hops, now)))
            known += 1
            batches.setdefault(host_of(url), []).append([url, hops, via])
            status.count("urls.new")
        self._known.update(known)
        self._known_by_vnode[vnode] = known
        out = [(host, json.dumps(items, separators=(",", ":"))) for host, items in batches.items()]
        status.busy_seconds += time.thread_time() - began
        yield from out
