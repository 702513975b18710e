"""An HTTP/1.1 server for the synthetic web, acting as the proxy that reaches every synthetic host.

The crawler is configured with this server as its HTTP proxy, so requests arrive in absolute form
(``GET http://h3.synth.test/p/3 HTTP/1.1``); origin-form requests with a ``Host:`` header work as
well. A host that is not part of the web gets ``502 Bad Gateway``, as from a proxy whose DNS
lookup failed; with the URL-policy profile on (:mod:`synthweb.policy`) the trap host and the farm
hosts are part of the web, and every spelling of a URL gets its page. Requests whose host is the
server's own address (an IP literal or ``localhost``) reach its control pages instead (with the
hostile profile, only with an explicit port: port 80 of a private address gets 421, see
:mod:`synthweb.hostile`): ``/`` (an
info page listing the seeds), ``/__synthweb/health`` and ``/__synthweb/flush`` (writes the
request log out before answering).

With the hostile profile the server also keeps state (the URLs it has answered 429/503 with
``Retry-After``, so the next request of each gets 200) and streams some answers by hand
(trickle, reset, short body, bad chunking, a robots.txt that never answers) without blocking
other connections.

Standard library only: an ``asyncio.Protocol`` with a minimal parser, keep-alive and pipelining
(responses in request order, a slow page holding back the ones behind it), ``Content-Length`` on
every response, gzip for pages that offer it when the client accepts it. Every request to a
synthetic host is written to the request log (:mod:`synthweb.requestlog`).

:class:`SyntheticWebServer` runs the server in a subprocess for tests, benchmarks and the demo.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import email.utils
import html
import http
import http.client
import ipaddress
import math
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from synthweb import hostile
from synthweb.config import WebConfig
from synthweb.graph import SyntheticWeb
from synthweb.model import Response
from synthweb.requestlog import RequestLogWriter, RequestRecord, read_request_log

__all__ = ["SyntheticWebServer", "SyntheticWebService", "run"]

_MAX_HEAD = 64 * 1024
# A client pipelining more than this many requests is paused until the queue drains.
_MAX_QUEUED = 64
_SERVER_HEADER = b"Server: synthweb\r\n"
_STATUS_LINES = {s.value: f"HTTP/1.1 {s.value} {s.phrase}\r\n".encode() for s in http.HTTPStatus}
_CONTROL_PREFIX = "/__synthweb/"


@dataclasses.dataclass(slots=True)
class _Request:
    """A parsed request head; ``start`` is when it was fully received (epoch seconds)."""

    start: float
    method: str
    #: Lower-case, without a default port.
    host: str
    #: Path and query as requested.
    path: str
    ua: str
    keep_alive: bool
    http10: bool
    accept_gzip: bool
    #: Addressed to the server itself (control pages), not to a synthetic host.
    control: bool
    #: The conditional request headers (lower-case names), if any.
    conditional: dict[str, str] = dataclasses.field(default_factory=dict)


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class SyntheticWebService:
    """The server inside the current event loop: ``await start()``, then ``await close()``.

    ``log`` receives the request log (None: no log); ``flush_interval`` is how often (seconds)
    buffered log lines are written out.
    """

    def __init__(
        self,
        web: SyntheticWeb,
        log: RequestLogWriter | None = None,
        *,
        flush_interval: float = 0.5,
    ) -> None:
        self.web = web
        self.log = log
        self.flush_interval = flush_interval
        self.requests_served = 0
        self._server: asyncio.Server | None = None
        self._connections: set[_HttpProtocol] = set()
        self._flush_handle: asyncio.TimerHandle | None = None
        self._date = b""
        self._date_second = -1
        self.address = ""
        #: Hostile profile: (host, path) answered 429/503 with Retry-After once already.
        self.refused: set[tuple[str, str]] = set()

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (0 picks a free port); return ``http://host:port``."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _HttpProtocol(self), host, port, backlog=1024, reuse_address=True
        )
        bound = self._server.sockets[0].getsockname()
        self.address = f"http://{bound[0]}:{bound[1]}"
        if self.log is not None:
            self._flush_handle = loop.call_later(self.flush_interval, self._flush_tick)
        return self.address

    async def close(self) -> None:
        """Stop listening, drop open connections and flush the request log."""
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            connection.abort()
        if self._server is not None:
            await self._server.wait_closed()
        if self._flush_handle is not None:
            self._flush_handle.cancel()
        if self.log is not None:
            self.log.flush()

    def _flush_tick(self) -> None:
        assert self.log is not None
        self.log.flush()
        loop = asyncio.get_running_loop()
        self._flush_handle = loop.call_later(self.flush_interval, self._flush_tick)

    def date_header(self) -> bytes:
        now = int(time.time())
        if now != self._date_second:
            self._date_second = now
            self._date = f"Date: {email.utils.formatdate(now, usegmt=True)}\r\n".encode()
        return self._date

    def answer(self, request: _Request) -> Response | hostile.Special:
        if request.control:
            return self._control(request)
        if request.method not in ("GET", "HEAD"):
            return Response(
                405,
                (("Allow", "GET, HEAD"), ("Content-Type", "text/plain")),
                b"405 Method Not Allowed\n",
            )
        if self.web.config.hostile:
            answer = self._hostile(request)
            if answer is not None:
                return answer
        answer = self.web.respond(request.host, request.path, accept_gzip=request.accept_gzip)
        changing = self.web.changing
        if changing is not None:
            answer = changing.respond(
                answer, f"http://{request.host}{request.path}", request.start,
                request.conditional, request.accept_gzip,
            )
        return answer

    def _hostile(self, request: _Request) -> Response | hostile.Special | None:
        """The answers of the hostile profile that need state or streaming; None: the model's."""
        config = self.web.config
        host, path = request.host, request.path
        if hostile.is_private_host(host):
            body = f"421 Misdirected Request: {host} is a private address\n".encode()
            headers = (("Content-Type", "text/plain; charset=utf-8"),)
            return Response(hostile.PRIVATE_STATUS, headers, body, fault="private-address")
        if host == hostile.ROBOTS_STALL_HOST and path == "/robots.txt":
            return hostile.Special.stall(config.hostile_robots_stall_seconds)
        if host == hostile.RETRY_HOST and path in hostile.RETRY_PATHS:
            if (host, path) in self.refused:
                return None
            self.refused.add((host, path))
            status, form = hostile.RETRY_PATHS[path]
            value, at = hostile.retry_after(form, config.hostile_retry_after, time.time())
            headers = (("Content-Type", "text/plain; charset=utf-8"), ("Retry-After", value))
            body = f"{status}: come back after {value}\n".encode()
            return Response(status, headers, body, retry_at=at, fault=f"retry-{status}")
        if hostile.is_hostile_host(host):
            return hostile.special(host, path, trickle_seconds=config.hostile_trickle_seconds)
        return None

    def _control(self, request: _Request) -> Response:
        text = ("Content-Type", "text/plain; charset=utf-8")
        if request.path == _CONTROL_PREFIX + "health":
            return Response(200, (text,), b"ok\n")
        if request.path == _CONTROL_PREFIX + "flush":
            if self.log is not None:
                self.log.flush()
            return Response(200, (text,), b"flushed\n")
        if request.path == "/":
            return Response(200, (("Content-Type", "text/html; charset=utf-8"),), self._info_page())
        return Response(404, (text,), b"404 Not Found\n")

    def _info_page(self) -> bytes:
        config = self.web.config
        seeds = "\n".join(f"<li>{html.escape(s)}</li>" for s in self.web.seeds(10))
        return (
            "<!DOCTYPE html><html><head><title>synthweb</title></head><body>"
            f"<h1>Synthetic web: seed {config.seed}, {config.hosts} hosts</h1>"
            f"<p>Use {html.escape(self.address)} as the HTTP proxy to reach the hosts.</p>"
            f"<p>Some seeds:</p><ul>{seeds}</ul></body></html>\n"
        ).encode()


class _HttpProtocol(asyncio.Protocol):
    """One client connection: parse request heads, answer them in order, log each one."""

    def __init__(self, service: SyntheticWebService) -> None:
        self._service = service
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._queue: collections.deque[_Request] = collections.deque()
        self._discard = 0
        self._busy = False
        self._closing = False
        self._paused = False
        # A request asking to close the connection was read: ignore what follows it.
        self._last_request_read = False
        # Hostile profile: the answer being streamed by hand, its bytes sent and its timer.
        self._special: tuple[_Request, hostile.Special] | None = None
        self._special_sent = 0
        self._special_timer: asyncio.TimerHandle | None = None

    # -- asyncio callbacks ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._service._connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._service._connections.discard(self)
        if self._special is not None:
            self._end_special(aborted=True)

    def data_received(self, data: bytes) -> None:
        if self._closing or self._last_request_read:
            return
        buffer = self._buffer
        buffer += data
        while True:
            if self._discard:
                dropped = min(self._discard, len(buffer))
                del buffer[:dropped]
                self._discard -= dropped
                if self._discard:
                    break
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > _MAX_HEAD:
                    self._reject(431, "request head too large")
                break
            head = bytes(buffer[:end])
            del buffer[: end + 4]
            try:
                request = self._parse(head)
            except _BadRequest as error:
                self._reject(error.status, str(error))
                break
            self._queue.append(request)
            if not request.keep_alive:
                self._last_request_read = True
                break
        self._process()
        if len(self._queue) > _MAX_QUEUED and not self._paused and self._transport:
            self._paused = True
            self._transport.pause_reading()

    def abort(self) -> None:
        self._closing = True
        if self._transport is not None:
            self._transport.abort()

    # -- parsing ----------------------------------------------------------------------------

    def _parse(self, head: bytes) -> _Request:
        start = time.time()
        lines = head.decode("latin-1").split("\r\n")
        while lines and not lines[0]:
            lines.pop(0)  # stray CRLF between pipelined requests (RFC 9112, section 2.2)
        parts = lines[0].split(" ") if lines else []
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _BadRequest(400, "malformed request line")
        method, target, version = parts
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                raise _BadRequest(400, "malformed header line")
            headers[name.strip().lower()] = value.strip()
        if "transfer-encoding" in headers:
            raise _BadRequest(501, "request bodies with Transfer-Encoding are not supported")
        length = headers.get("content-length", "0")
        if not length.isdigit():
            raise _BadRequest(400, "bad Content-Length")
        self._discard = int(length)

        if target[:7].lower() == "http://":
            rest = target[7:]
            cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
            authority, path = rest[:cut], rest[cut:] or "/"
            if path.startswith("?"):
                path = "/" + path
        elif target.startswith("/"):
            authority, path = headers.get("host", ""), target
            if not authority:
                raise _BadRequest(400, "missing Host header")
        else:
            raise _BadRequest(400, "unsupported request target")
        host = authority.rpartition("@")[2].lower()
        if host.endswith(":80"):
            host = host[:-3]

        http10 = version == "HTTP/1.0"
        connection = headers.get("connection", "").lower()
        keep_alive = "keep-alive" in connection if http10 else "close" not in connection
        control = _is_own_address(host)
        if control and self._service.web.config.hostile and hostile.is_private_host(host):
            control = False  # port 80 of a private address: the proxy refuses it, and logs it
        return _Request(
            start=start,
            method=method,
            host=host,
            path=path,
            ua=headers.get("user-agent", ""),
            keep_alive=keep_alive,
            http10=http10,
            accept_gzip="gzip" in headers.get("accept-encoding", "").lower(),
            control=control,
            conditional={
                name: headers[name] for name in ("if-none-match", "if-modified-since")
                if name in headers
            },
        )

    # -- answering --------------------------------------------------------------------------

    def _process(self) -> None:
        service = self._service
        while self._queue and not self._busy and not self._closing:
            request = self._queue.popleft()
            try:
                response = service.answer(request)
            except Exception:  # a bug in the model must not take the connection down with it
                traceback.print_exc()
                response = Response(500, (("Content-Type", "text/plain"),), b"synthweb error\n")
            if isinstance(response, hostile.Special):
                self._busy = True
                self._start_special(request, response)
                return
            if response.delay > 0:
                self._busy = True
                loop = asyncio.get_running_loop()
                loop.call_later(response.delay, self._send_delayed, request, response)
                return
            self._send(request, response)
        if self._paused and not self._queue and not self._closing and self._transport:
            self._paused = False
            self._transport.resume_reading()

    # -- hostile answers streamed by hand --------------------------------------------------

    def _start_special(self, request: _Request, special: hostile.Special) -> None:
        transport = self._transport
        self._special = (request, special)
        self._special_sent = 0
        if transport is None or self._closing:
            self._end_special(aborted=True)
            return
        loop = asyncio.get_running_loop()
        if special.fault == "stall":
            self._special_timer = loop.call_later(special.seconds, self._end_special)
            return
        transport.write(special.head)
        if special.fault == "trickle":
            self._trickle()
            return
        transport.write(special.body)
        self._special_sent = len(special.body)
        if special.fault == "reset":
            # Let the bytes leave before the reset, so the client sees a body cut short.
            self._special_timer = loop.call_later(0.2, self._end_special)
        else:
            self._end_special()

    def _trickle(self) -> None:
        assert self._special is not None
        assert self._transport is not None
        special = self._special[1]
        steps = max(1, math.ceil(special.seconds / hostile.TRICKLE_INTERVAL))
        size = max(1, math.ceil(len(special.body) / steps))
        chunk = special.body[self._special_sent : self._special_sent + size]
        self._transport.write(chunk)
        self._special_sent += len(chunk)
        if self._special_sent >= len(special.body):
            self._special_timer = None
            self._end_special()
        else:
            loop = asyncio.get_running_loop()
            self._special_timer = loop.call_later(hostile.TRICKLE_INTERVAL, self._trickle)

    def _end_special(self, *, aborted: bool = False) -> None:
        """Log the special answer; close or reset the connection, or go on with the next."""
        assert self._special is not None
        request, special = self._special
        self._special = None
        if self._special_timer is not None:
            self._special_timer.cancel()
            self._special_timer = None
        self._log(request, special.status, self._special_sent, aborted, fault=special.fault)
        transport = self._transport
        if aborted or transport is None:
            return
        if special.fault == "reset":
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self._closing = True
            transport.abort()
        elif special.fault == "trickle" and request.keep_alive:
            self._busy = False
            self._process()
        else:
            self._closing = True
            transport.close()

    def _send_delayed(self, request: _Request, response: Response) -> None:
        self._busy = False
        self._send(request, response)
        self._process()

    def _send(self, request: _Request, response: Response) -> None:
        service = self._service
        body = response.body
        sent = 0
        transport = self._transport
        written = not self._closing and transport is not None
        if written:
            assert transport is not None
            parts = [_STATUS_LINES.get(response.status) or _status_line(response.status)]
            parts += [f"{name}: {value}\r\n".encode("latin-1") for name, value in response.headers]
            parts.append(b"Content-Length: %d\r\n" % len(body))
            parts.append(service.date_header())
            parts.append(_SERVER_HEADER)
            if not request.keep_alive:
                parts.append(b"Connection: close\r\n")
            elif request.http10:
                parts.append(b"Connection: keep-alive\r\n")
            parts.append(b"\r\n")
            if request.method != "HEAD":
                parts.append(body)
                sent = len(body)
            transport.write(b"".join(parts))
            if not request.keep_alive:
                self._closing = True
                transport.close()
        if not request.control:
            self._log(request, response.status, sent, not written, response.retry_at,
                      response.fault)

    def _log(
        self,
        request: _Request,
        status: int,
        body_bytes: int,
        aborted: bool,
        retry_at: float | None = None,
        fault: str = "",
    ) -> None:
        """Count a request served and write its line to the request log."""
        service = self._service
        service.requests_served += 1
        if service.log is not None:
            service.log.write(
                start=request.start,
                end=time.time(),
                host=request.host,
                path=request.path,
                method=request.method,
                status=status,
                body_bytes=body_bytes,
                ua=request.ua,
                aborted=aborted,
                retry_at=retry_at,
                fault=fault,
                if_none_match=request.conditional.get("if-none-match"),
                if_modified_since=request.conditional.get("if-modified-since"),
            )

    def _reject(self, status: int, message: str) -> None:
        """Answer a request that cannot be parsed, then close the connection (not logged)."""
        self._queue.clear()
        self._closing = True
        if self._transport is not None:
            body = f"{status} {message}\n".encode()
            head = _STATUS_LINES.get(status) or _status_line(status)
            self._transport.write(
                head + b"Content-Type: text/plain\r\nContent-Length: %d\r\n"
                b"Connection: close\r\n\r\n" % len(body) + body
            )
            self._transport.close()


def _status_line(status: int) -> bytes:
    return f"HTTP/1.1 {status} Status {status}\r\n".encode()


def _is_own_address(host: str) -> bool:
    if host.startswith("["):
        name = host[1 : host.find("]")]
    else:
        name = host.rpartition(":")[0] if host.count(":") == 1 else host
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def run(
    config: WebConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    log_path: str | os.PathLike[str] | None = None,
    flush_interval: float = 0.5,
) -> None:
    """Serve in the foreground until SIGTERM or SIGINT, then flush the log and return.

    Prints ``listening on http://HOST:PORT`` once the socket is bound.
    """
    asyncio.run(_run(config, host, port, log_path, flush_interval))


async def _run(
    config: WebConfig,
    host: str,
    port: int,
    log_path: str | os.PathLike[str] | None,
    flush_interval: float,
) -> None:
    await serve_until_stopped(
        lambda log: SyntheticWebService(SyntheticWeb(config), log, flush_interval=flush_interval),
        host, port, log_path)


async def serve_until_stopped(
    make_service: Callable[[RequestLogWriter | None], SyntheticWebService],
    host: str,
    port: int,
    log_path: str | os.PathLike[str] | None,
) -> None:
    """Start the service ``make_service`` builds (with the request log at ``log_path``, if
    any) and serve until SIGTERM or SIGINT; prints ``listening on http://HOST:PORT``."""
    log = RequestLogWriter(open(log_path, "a", encoding="utf-8")) if log_path else None
    service = make_service(log)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        address = await service.start(host, port)
        print(f"listening on {address}", flush=True)
        await stop.wait()
    finally:
        await service.close()
        if log is not None:
            log.close()


class SyntheticWebServer:
    """Runs ``python -m synthweb`` in a subprocess for the life of a ``with`` block.

    ``proxy_url`` (``http://127.0.0.1:PORT``) is where the crawler sends all its requests. On
    exit the server gets SIGTERM, flushes its request log and stops. The request log is appended
    to, so give each run its own ``log_path``.
    """

    def __init__(
        self,
        config: WebConfig | None = None,
        log_path: str | os.PathLike[str] | None = None,
        *,
        port: int = 0,
        flush_interval: float = 0.5,
        startup_timeout: float = 15.0,
    ) -> None:
        self.config = config or WebConfig()
        self.log_path = Path(log_path) if log_path is not None else None
        self.port = port
        self.flush_interval = flush_interval
        self.startup_timeout = startup_timeout
        self.proxy_url = ""
        self._process: subprocess.Popen[str] | None = None
        self._web: SyntheticWeb | None = None

    @property
    def web(self) -> SyntheticWeb:
        """The model the server serves, for ground truth in the calling process."""
        if self._web is None:
            self._web = SyntheticWeb(self.config)
        return self._web

    @property
    def pid(self) -> int:
        """The server process id."""
        assert self._process is not None, "server not started"
        return self._process.pid

    def _command(self) -> list[str]:
        """The command line of the server process."""
        command = [
            sys.executable,
            "-m",
            "synthweb",
            "--port",
            str(self.port),
            "--config-json",
            self.config.to_json(),
            "--flush-interval",
            str(self.flush_interval),
        ]
        if self.log_path is not None:
            command += ["--log", str(self.log_path)]
        return command

    def start(self) -> str:
        """Start the server and wait until it listens; return ``proxy_url``."""
        command = self._command()
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self._process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env
        )
        assert self._process.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        line = ""
        while time.monotonic() < deadline and self._process.poll() is None:
            ready, _, _ = select.select([self._process.stdout], [], [], 0.1)
            if ready:
                line = self._process.stdout.readline()
                break
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"synthweb server did not start (said {line!r})")
        self.proxy_url = line.split()[-1]
        return self.proxy_url

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM the server, wait for it to flush and exit; return its exit code."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()
        return process.returncode

    def flush_log(self) -> None:
        """Have the server write out its buffered request log now."""
        # http.client rather than urllib: urllib would honour an http_proxy in the environment.
        host, _, port = self.proxy_url.removeprefix("http://").rpartition(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            connection.request("GET", _CONTROL_PREFIX + "flush")
            reply = connection.getresponse()
            reply.read()
            if reply.status != 200:
                raise RuntimeError(f"flush answered {reply.status}")
        finally:
            connection.close()

    def request_log(self) -> list[RequestRecord]:
        """The request log so far (flushed first if the server is running)."""
        if self.log_path is None:
            raise RuntimeError("server started without a log_path")
        if self._process is not None and self._process.poll() is None:
            self.flush_log()
        if not self.log_path.exists():
            return []
        return read_request_log(self.log_path)

    def __enter__(self) -> SyntheticWebServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
