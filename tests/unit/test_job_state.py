"""The launcher's view of its job's state (job.job_state.JobStateReader), asked of a REST API on
loopback that fails now and then: a failed request is asked again and reported, and never taken
for the end of the job."""

from __future__ import annotations

import io
import json
import os
import socket
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from crawl.layout import OutputLayout
from job.job_state import UNKNOWN_STATE, JobStateReader, rest_address
from job.status import RestClient

JOB = "a" * 32


class FlakyFlink(BaseHTTPRequestHandler):
    """``GET /jobs/<JOB>``: the server's script first (``500``, ``503``, ``reset``: the
    connection closed with a TCP reset, ``garbage``: not JSON), then the job, RUNNING."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        server = self.server
        server.asked.append(self.path)
        step = server.script.pop(0) if server.script else "ok"
        if step == "reset":
            # SO_LINGER with a zero timeout: close() sends a RST instead of a FIN.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if step in ("500", "503"):
            self.send_error(int(step))
            return
        data = b"<html>busy</html>" if step == "garbage" else json.dumps(
            {"jid": JOB, "name": "pyflink-crawler", "state": "RUNNING"}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def flink() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FlakyFlink)
    server.script = []
    server.asked = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def _reader(server: ThreadingHTTPServer | int, out: io.StringIO, ended: bool = False
            ) -> JobStateReader:
    port = server if isinstance(server, int) else server.server_address[1]
    return JobStateReader.over_rest(
        RestClient(f"http://127.0.0.1:{port}", timeout=5.0), JOB, lambda: ended, out,
        pause_seconds=0.05,
    )


def test_a_request_that_fails_is_asked_again(flink: ThreadingHTTPServer) -> None:
    flink.script = ["500", "reset"]
    out = io.StringIO()

    state = _reader(flink, out)()

    assert state == "RUNNING"
    assert flink.asked == [f"/jobs/{JOB}"] * 3
    failed, answered = out.getvalue().splitlines()
    assert failed == (
        f"asking the job's state failed (http://127.0.0.1:{flink.server_address[1]}/jobs/{JOB}: "
        "HTTP 500 Internal Server Error); asking again"
    )
    assert answered == "the job's state answered again after 2 failed requests: RUNNING"


def test_a_state_that_cannot_be_had_is_unknown_not_finished(
    flink: ThreadingHTTPServer,
) -> None:
    flink.script = ["reset", "503", "garbage", "500", "reset"]
    out = io.StringIO()
    reader = _reader(flink, out)

    assert reader() == UNKNOWN_STATE  # three attempts, all failed; the job has not ended
    assert reader() == "RUNNING"  # two more failures, then the answer, at the next poll
    assert len(flink.asked) == 6
    failed, unknown, answered = out.getvalue().splitlines()
    assert failed.startswith("asking the job's state failed (no Flink REST API answers at ")
    assert unknown.startswith("the job's state is unknown after 3 failed requests (")
    assert unknown.endswith("not a Flink REST API answer (Expecting value: line 1 column 1 "
                            "(char 0))); asking again at the next poll")
    assert answered == "the job's state answered again after 5 failed requests: RUNNING"


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens there once closed


def test_a_rest_api_gone_with_its_ended_job_is_finished(closed_port: int) -> None:
    out = io.StringIO()

    assert _reader(closed_port, out, ended=True)() == "FINISHED"
    assert _reader(closed_port, out, ended=False)() == UNKNOWN_STATE


def test_the_rest_address_is_the_newest_logs(tmp_path: Path) -> None:
    """The logs of an earlier run stay beside the running one's: a local cluster's
    JobManager's sorts before the MiniCluster's, and said another port."""
    layout = OutputLayout(tmp_path)
    layout.flink_logs.mkdir(parents=True)
    assert rest_address(layout) == ""
    earlier = layout.flink_logs / "flink--standalonesession-0-host.log"
    earlier.write_text("... Rest endpoint listening at 127.0.0.1:40001\n")
    os.utime(earlier, (1_000_000, 1_000_000))
    running = layout.flink_logs / "flink-user-python-host.log"
    running.write_text("Rest endpoint listening at 127.0.0.1:40002\n"
                       "... Rest endpoint listening at 127.0.0.1:40003\n")
    (layout.flink_logs / "flink-user-python-host.out").write_text(
        "Rest endpoint listening at 127.0.0.1:40004\n")
    assert rest_address(layout) == "http://127.0.0.1:40003"
