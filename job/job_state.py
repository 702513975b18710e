"""How a local run knows its Flink job: where its REST API listens, the record of it that the
other commands read (``out/job.json``), and its state, asked again when asking fails.

The state is asked of Flink's REST API; a request that fails is asked again and reported
(:class:`JobStateReader`), never taken for the job's end, which would skip the stop.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from typing import Any, TextIO

from crawl.layout import OutputLayout
from job.failures import first_line
from job.status import JOB_FILE, RestClient, StatusError

__all__ = [
    "UNKNOWN_STATE", "JobStateReader", "job_state_reader", "rest_address", "write_job_file",
]

#: The state of a job that could not be asked (neither running nor ended, as far as known).
UNKNOWN_STATE = "UNKNOWN"


class JobStateReader:
    """The state of the launcher's job, asked again when asking fails, and never an end that
    was not one.

    ``ask`` returns the state (``RUNNING``, ``RESTARTING``, ``FINISHED``, ...) or raises. A
    failed request (no answer, a reset, an HTTP error, an answer that is not the job's) is
    asked again up to ``attempts`` times, ``pause_seconds`` apart. When they all fail, the job
    is ``FINISHED`` only if ``ended()`` says so (its result is in: the local MiniCluster takes
    its REST API down with the job), and :data:`UNKNOWN_STATE` otherwise: the caller asks
    again at its next poll, and judges neither idleness nor the budget meanwhile. A streak of
    failures is reported on ``out`` when it starts, when it gives up and when it ends.
    """

    def __init__(
        self,
        ask: Callable[[], str],
        ended: Callable[[], bool],
        out: TextIO,
        attempts: int = 3,
        pause_seconds: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._ask = ask
        self._ended = ended
        self._out = out
        self._attempts = attempts
        self._pause = pause_seconds
        self._sleep = sleep
        self._failed = 0  # failed requests in a row, across calls

    @classmethod
    def over_rest(
        cls, rest: RestClient, job_id: str, ended: Callable[[], bool], out: TextIO,
        **options: Any,
    ) -> JobStateReader:
        """A reader that asks Flink's REST API (``/jobs/<id>``)."""

        def ask() -> str:
            answer = rest.get(f"/jobs/{job_id}")
            if not isinstance(answer, dict) or not isinstance(answer.get("state"), str):
                raise StatusError(f"no state in the REST API's answer for job {job_id}")
            return answer["state"]

        return cls(ask, ended, out, **options)

    def __call__(self) -> str:
        for attempt in range(1, self._attempts + 1):
            try:
                state = self._ask()
            except Exception as error:  # noqa: BLE001 - asked again, reported, never an end
                self._failed += 1
                if self._failed == 1:
                    self._say(f"asking the job's state failed ({first_line(error)}); "
                              "asking again")
                if attempt < self._attempts:
                    self._sleep(self._pause)
                    continue
                if self._ended():
                    return "FINISHED"
                self._say(f"the job's state is unknown after {self._failed} failed requests "
                          f"({first_line(error)}); asking again at the next poll")
                return UNKNOWN_STATE
            if self._failed:
                self._say(f"the job's state answered again after {self._failed} failed "
                          f"requests: {state}")
                self._failed = 0
            return state
        raise AssertionError("unreachable")

    def _say(self, line: str) -> None:
        print(line, file=self._out, flush=True)


def _client_state(client: Any) -> str:
    """The job's state from the JobClient (the MiniCluster's own RPC)."""
    return str(client.get_job_status().result()).rsplit(".", 1)[-1]


def job_state_reader(client: Any, rest: str, out: TextIO) -> JobStateReader:
    """How the launcher asks the state of its job (PyFlink's JobClient ``client``): the REST
    API when its address ``rest`` is known (the JobClient's RPC otherwise); the job has ended
    once its result is in."""

    def ended() -> bool:
        try:
            return bool(client.get_job_execution_result().done())
        except Exception:  # noqa: BLE001 - the JobClient itself is gone: so is the job
            return True

    if rest:
        return JobStateReader.over_rest(RestClient(rest), str(client.get_job_id()), ended, out)
    return JobStateReader(lambda: _client_state(client), ended, out)


def rest_address(layout: OutputLayout) -> str:
    """The address of the local job's REST API, as the MiniCluster's log says it listens
    (the shipped ``rest.port: 0`` has it pick a free port); "" when no log says it. The
    newest log that says it is the running one's: the logs of earlier runs stay beside it
    (a local cluster's JobManager's among them)."""
    logs = []
    for log_file in layout.flink_logs.glob("*.log"):
        try:
            logs.append((log_file.stat().st_mtime, log_file))
        except OSError:
            continue
    for _, log_file in sorted(logs, reverse=True):
        try:
            text = log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        matches = re.findall(r"Rest endpoint listening at (\S+)", text)
        if matches:
            return "http://" + matches[-1]
    return ""


def write_job_file(layout: OutputLayout, job: dict[str, Any]) -> None:
    """The running job's id and REST address (read by ``python -m job status`` and
    ``savepoint``), then how the run ended."""
    path = layout.root / JOB_FILE
    temporary = path.with_name(f".{JOB_FILE}.tmp")
    temporary.write_text(json.dumps(job, indent=2), encoding="utf-8")
    os.replace(temporary, path)
