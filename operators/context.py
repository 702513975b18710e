"""Subtask identity and lifecycle helpers for PyFlink functions, in both execution modes.

Two gaps of PyFlink 2.3's thread mode are bridged here:

- ``RuntimeContext.get_index_of_this_subtask()`` and its siblings call Java methods that Flink
  2.0 moved to ``RuntimeContext.getTaskInfo()``, so they raise ``AttributeError``;
  :func:`subtask_of` asks the task info directly when that happens.
- A function's ``close()`` is called only when its input ends (a finished or drained job), not
  when a task fails or is cancelled, and the interpreter outlives the task. A restarted task
  would then run beside the threads and connections of the attempt it replaces.
  :class:`Lifecycle` closes the previous instance of the same stage and subtask when a new one
  opens in the same process.

:class:`OpenedStage` is what every stage function does with both in ``open()`` and ``close()``.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable

from pyflink.datastream import RuntimeContext

__all__ = ["Lifecycle", "OpenedStage", "Subtask", "job_id_of", "subtask_of"]

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Subtask:
    """Which parallel instance of an operator this is, and which attempt."""

    index: int
    parallelism: int
    attempt: int


def subtask_of(runtime_context: RuntimeContext) -> Subtask:
    """The subtask index, parallelism and attempt number of ``runtime_context``."""
    try:
        return Subtask(
            runtime_context.get_index_of_this_subtask(),
            runtime_context.get_number_of_parallel_subtasks(),
            runtime_context.get_attempt_number(),
        )
    except AttributeError:
        java_context = runtime_context._runtime_context  # the embedded (thread mode) context
        info = java_context.getTaskInfo()
        return Subtask(
            int(info.getIndexOfThisSubtask()),
            int(info.getNumberOfParallelSubtasks()),
            int(info.getAttemptNumber()),
        )


def job_id_of(runtime_context: RuntimeContext) -> str | None:
    """The job's id (hex), where the runtime context can tell it (thread mode), else None."""
    java_context = getattr(runtime_context, "_runtime_context", None)
    if java_context is None:
        return None
    try:
        return str(java_context.getJobInfo().getJobId().toString())
    except Exception:  # noqa: BLE001 - any failure here only disables an optimisation
        return None


class Lifecycle:
    """One live instance per (stage, subtask) in this process; a newcomer closes its forerunner.

    Call :meth:`opened` at the end of ``open()`` with the function's own close callable and
    :meth:`closed` from ``close()``. Close callables must be idempotent.
    """

    _live: dict[tuple[str, int], Callable[[], None]] = {}
    _lock = threading.Lock()

    @classmethod
    def opened(cls, stage: str, subtask: int, close: Callable[[], None]) -> None:
        with cls._lock:
            previous = cls._live.get((stage, subtask))
            cls._live[(stage, subtask)] = close
        if previous is not None and previous != close:
            try:
                previous()
            except Exception:  # noqa: BLE001 - the old attempt must not stop the new one
                log.exception("closing the previous %s subtask %d failed", stage, subtask)

    @classmethod
    def closed(cls, stage: str, subtask: int, close: Callable[[], None]) -> None:
        with cls._lock:
            if cls._live.get((stage, subtask)) == close:
                del cls._live[(stage, subtask)]


class OpenedStage:
    """One ``open()`` of a stage function's subtask: which subtask it is, registered with
    :class:`Lifecycle` (so that the previous instance of the subtask in this process is closed
    now), and its resources released once, by ``release``, whichever comes first: the
    function's ``close()`` (:meth:`close`) or the opening of a newer instance
    (:meth:`shutdown`).

    Create it at the start of ``open()``: the forerunner is closed before the newcomer takes
    the same files (a WARC file left open, say).
    """

    def __init__(self, stage: str, runtime_context: RuntimeContext,
                 release: Callable[[], None]) -> None:
        self.stage = stage
        self.subtask = subtask_of(runtime_context)
        #: Whether the resources were released (the function must not use them any more).
        self.closed = False
        self._release = release
        Lifecycle.opened(stage, self.subtask.index, self.shutdown)

    def shutdown(self) -> None:
        """Release the resources, once."""
        if self.closed:
            return
        self.closed = True
        self._release()

    def close(self) -> None:
        """The function's ``close()``: no longer the live instance, and released."""
        Lifecycle.closed(self.stage, self.subtask.index, self.shutdown)
        self.shutdown()
