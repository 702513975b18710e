"""One open() of a stage function (operators.context.OpenedStage): its resources released once,
by its close() or by the opening of a newer instance of the same subtask in the process."""

from __future__ import annotations

from operators.context import Lifecycle, OpenedStage
from tests.fakes import FakeRuntimeContext


class Releases:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def _context(index: int = 0, attempt: int = 0) -> FakeRuntimeContext:
    return FakeRuntimeContext(index=index, parallelism=2, attempt=attempt)


def test_the_subtask_is_known_and_released_once() -> None:
    released = Releases()
    stage = OpenedStage("test-once", _context(1, attempt=3), released)
    assert (stage.subtask.index, stage.subtask.parallelism, stage.subtask.attempt) == (1, 2, 3)
    stage.close()
    stage.close()
    stage.shutdown()
    assert released.count == 1
    assert stage.closed


def test_a_newer_instance_closes_its_forerunner_and_stays_registered() -> None:
    old, new, other = Releases(), Releases(), Releases()
    forerunner = OpenedStage("test-restart", _context(0), old)
    OpenedStage("test-restart", _context(1), other)  # another subtask: left alone
    newcomer = OpenedStage("test-restart", _context(0, attempt=1), new)
    assert (old.count, other.count, new.count) == (1, 0, 0)
    assert forerunner.closed
    forerunner.close()  # late: must not unregister the newcomer
    assert Lifecycle._live[("test-restart", 0)] == newcomer.shutdown
    newcomer.close()
    assert new.count == 1
    assert ("test-restart", 0) not in Lifecycle._live
