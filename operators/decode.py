"""The decode stage: loop lines (and seed files) to ``(vnode, payload)`` records.

Not keyed; chained to the loop source. The vnode is read from the line's prefix, so the JSON
payload is parsed only once, by the crawl DB. A line that is not a loop line is counted
(``decode.lines.bad``) and skipped: a stray file in the loop directory cannot stop the crawl.
"""

from __future__ import annotations

from pyflink.datastream import FlatMapFunction, RuntimeContext

from crawl.layout import OutputLayout
from crawl.loop import LoopRecordError, decode_line
from crawl.progress import StageStatus
from operators.context import Lifecycle, subtask_of

__all__ = ["DecodeFunction"]


class DecodeFunction(FlatMapFunction):
    """Splits loop lines into (vnode, payload); bad lines are counted and dropped."""

    def __init__(self, output_dir: str, vnodes: int) -> None:
        self._output_dir = output_dir
        self._vnodes = vnodes

    def open(self, runtime_context: RuntimeContext) -> None:
        subtask = subtask_of(runtime_context)
        self._status = StageStatus(
            OutputLayout(self._output_dir).status,
            "decode",
            subtask.index,
            subtask.attempt,
        )
        self._subtask = subtask.index
        Lifecycle.opened("decode", subtask.index, self._status.close)

    def close(self) -> None:
        Lifecycle.closed("decode", self._subtask, self._status.close)
        self._status.close()

    def flat_map(self, value: str):
        try:
            vnode, payload = decode_line(value)
        except LoopRecordError:
            self._status.count("lines.bad")
            return
        if vnode >= self._vnodes:
            self._status.count("lines.bad")
            return
        self._status.count("lines.in")
        yield vnode, payload
