"""OTLP/HTTP (``POST /v1/traces``, protobuf or JSON) and the read API over HTTP.

Threading: connections are served by a bounded pool of worker threads (at most
``max_connections``; a worker idle for a while exits). A connection over the cap is answered
``503`` with ``Retry-After`` straight from the accepting thread and closed (a single helper
thread drains what the client still sends, so the close does not reset the answer away); no
thread is started for it. Every handler goes through the :class:`Receiver`, which is
thread-safe. A client that hangs up mid-request is logged at debug level, never raised.

Time limits: each request (its request line, headers and body) must arrive within
``read_timeout`` seconds of when the server starts waiting for it, a keep-alive connection
that stays idle that long included; each recv is given only the time left, so a client that
trickles bytes is closed too. Each response write gets ``read_timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import queue
import selectors
import socket
import sys
import threading
import time
from collections.abc import Mapping
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

from google.protobuf.json_format import MessageToDict
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from callctx.ui import routes as ui_routes
from callctx.ui.views import Views

from . import read_api
from .body import BodyError, read_body
from .ingest import JSON, PROTOBUF, Receiver

log = logging.getLogger(__name__)

DEFAULT_READ_TIMEOUT = 10.0  # seconds for a whole request to arrive (and for each response write)
DEFAULT_MAX_CONNECTIONS = 256
_COOKIE = "callctx_token"  # the page's token, once a browser opened /ui?token=...
RETRY_AFTER = 1  # seconds, in the 503 answered over the connection cap
IDLE_WORKER = 30.0  # seconds a worker thread waits for a connection before it exits


class _DeadlineReader(io.RawIOBase):
    """The socket's input, each recv given only the time left until the handler's deadline."""

    def __init__(self, sock: socket.socket, handler: Any) -> None:
        self._sock = sock
        self._handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        deadline = self._handler.deadline
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive in time")
            self._sock.settimeout(left)
        return self._sock.recv_into(buffer)


class _Handler(BaseHTTPRequestHandler):
    """The connection plumbing every handler here shares: the request deadline, the response
    write limit, debug-level access logging, and the answer helpers."""

    server_version = "callctx-receiver"
    protocol_version = "HTTP/1.1"
    read_timeout = DEFAULT_READ_TIMEOUT
    timeout = DEFAULT_READ_TIMEOUT  # set on the socket by StreamRequestHandler.setup
    disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK stall between them
    deadline: float | None = None  # monotonic time by which the request must have arrived

    def setup(self) -> None:
        super().setup()
        plain, self.rfile = self.rfile, io.BufferedReader(_DeadlineReader(self.connection, self))
        plain.close()

    def handle_one_request(self) -> None:
        self.deadline = time.monotonic() + self.read_timeout  # waiting for a request counts too
        super().handle_one_request()

    def send_response(self, code: int, message: str | None = None) -> None:
        self.deadline = None  # the request is in: the response's writes get their own limit
        self.connection.settimeout(self.read_timeout)
        super().send_response(code, message)

    def log_message(self, fmt: str, *args: Any) -> None:
        log.debug("%s " + fmt, self.address_string(), *args)

    def _send(self, status: int, body: bytes, content_type: str, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode(), JSON)

    def _page(self, views: Views, parts: list[str], query: dict[str, str], shape: Any) -> None:
        """Answer a GET of the debugger page (``/ui...``)."""
        resp = ui_routes.respond(views, parts, query, shape)
        self._send(resp.status, resp.body, resp.content_type, ui_routes.HEADERS)

    def _redirect(self, location: str, cookie: str | None = None) -> None:
        self.send_response(303)
        self.send_header("Location", location)
        if cookie is not None:
            self.send_header("Set-Cookie", cookie)
        self.send_header("Content-Length", "0")
        self.end_headers()


def make_handler(rx: Receiver, read_timeout: float = DEFAULT_READ_TIMEOUT) -> type[BaseHTTPRequestHandler]:
    """The handler of ``callctx serve``'s HTTP port: OTLP in (``POST /v1/traces``), the read API
    (``/api/...``), the debugger page (``/ui...``) and ``/health``."""
    page_lock = threading.Lock()
    page: list[Views] = []  # the page's views over the receiver's store, made on first visit

    def views() -> Views:
        with page_lock:
            if not page:
                page.append(Views(rx.store))
            return page[0]

    wait = read_timeout

    class Handler(_Handler):
        timeout = read_timeout = wait

        def _authorized(self) -> bool:
            if rx.authorized(self.headers.get("Authorization")):
                return True
            self._json(401, {"error": "missing or wrong bearer token"})
            return False

        def _status(self, status: int, message: str, content_type: str) -> None:
            """An error as a google.rpc.Status, in the request's encoding (OTLP/HTTP)."""
            code = {400: 3, 401: 16, 411: 3, 413: 8, 415: 3, 503: 14}.get(status, 2)
            st = status_pb2.Status(code=code, message=message)
            if content_type.startswith(PROTOBUF):
                self._send(status, st.SerializeToString(), PROTOBUF)
            else:
                self._json(status, MessageToDict(st))

        # -- OTLP --
        def do_POST(self) -> None:
            path = urlparse(self.path).path
            ctype = self.headers.get("Content-Type", "")
            if path != "/v1/traces":
                self.close_connection = True
                self._json(404, {"error": f"no route {path}; spans go to /v1/traces"})
                return
            if not self._authorized():
                self.close_connection = True
                return
            try:
                body = read_body(self.rfile, self.headers, rx.max_body)
                decoded = rx.decode(body, ctype)
            except BodyError as e:
                self.close_connection = True  # the rest of an oversized body is not read
                rx.stats.add(malformed=1)
                self._status(e.status, str(e), ctype)
                return
            except (ValueError, RecursionError, MemoryError) as e:
                rx.stats.add(malformed=1)
                self._status(400, str(e) or type(e).__name__, ctype)
                return
            try:
                rx.ingest(decoded)
            except OSError as e:
                self._status(503, f"cannot write the event log: {e}", ctype)
                return
            resp = ExportTraceServiceResponse()
            if decoded.rejected:
                resp.partial_success.CopyFrom(
                    ExportTracePartialSuccess(rejected_spans=decoded.rejected, error_message=decoded.message)
                )
            if ctype.startswith(JSON):
                self._json(200, MessageToDict(resp))
            else:
                self._send(200, resp.SerializeToString(), PROTOBUF)

        # -- reading --
        def do_GET(self) -> None:
            url = urlparse(self.path)
            parts = [p for p in url.path.split("/") if p]
            if parts == ["health"]:
                # liveness for anyone; the counters only for who may read the API
                detail = rx.authorized(self.headers.get("Authorization"))
                health = rx.health(detail=detail)
                if detail:
                    health["open_connections"] = getattr(self.server, "open_connections", None)
                self._json(200, health)
                return
            if parts[:1] == ["ui"]:
                self._ui(url.path, parts, parse_qs(url.query))
                return
            if not self._authorized():
                return
            if parts[:1] != ["api"]:
                self._json(404, {"error": f"no route {url.path}"})
                return
            q = {k: v[-1] for k, v in parse_qs(url.query).items()}
            raw = q.get("raw") in ("1", "true") and rx.token is not None
            resp = read_api.answer(rx.store, parts, q, None if raw else rx.shaper.redact)
            self._send(resp.status, resp.body, resp.content_type)

        def _ui(self, path: str, parts: list[str], query: dict[str, list[str]]) -> None:
            """The debugger page, behind the token when one is set: a browser opens
            ``/ui?token=T`` once and keeps the token in a cookie scoped to ``/ui``."""
            q = {k: v[-1] for k, v in query.items()}
            token = q.pop("token", None)
            if token is not None and rx.token is not None and rx.authorized(f"Bearer {token}"):
                rest = urlencode(q)
                cookie = f"{_COOKIE}={token}; Path=/ui; HttpOnly; SameSite=Strict"
                self._redirect(path + (f"?{rest}" if rest else ""), cookie)
                return
            jar = SimpleCookie()
            with contextlib.suppress(CookieError):
                jar.load(self.headers.get("Cookie", ""))
            held = jar[_COOKIE].value if _COOKIE in jar else None
            if not (rx.authorized(self.headers.get("Authorization")) or rx.authorized(f"Bearer {held}")):
                self._json(401, {"error": "missing or wrong token: open /ui?token=<token> once"})
                return
            self._page(views(), parts, q, rx.shaper.redact)

    return Handler


_BUSY_BODY = b'{"error": "too many connections; retry later"}'
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nServer: callctx-receiver\r\nContent-Type: application/json\r\n"
    + f"Retry-After: {RETRY_AFTER}\r\nConnection: close\r\nContent-Length: {len(_BUSY_BODY)}\r\n\r\n".encode()
    + _BUSY_BODY
)


class _Rejecter:
    """Closes connections turned away over the cap without resetting them: the 503 is sent
    and the write side shut by the accepting thread; one thread (started on first use) then
    reads and discards what the client still sends, and closes the socket when the client has
    closed its side or after ``linger`` seconds. At most ``pending`` wait at once; past that a
    turned-away connection is closed at once."""

    def __init__(self, linger: float = 2.0, pending: int = 1024) -> None:
        self._linger = linger
        self._max = pending
        self._queue: queue.SimpleQueue[socket.socket | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._wake_w: socket.socket | None = None
        self._waiting = 0

    def reject(self, sock: socket.socket) -> None:
        try:
            sock.setblocking(False)
            sock.send(_BUSY)  # a few hundred bytes into an empty send buffer: never blocks
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        with self._lock:
            if self._waiting >= self._max:
                sock.close()
                return
            self._waiting += 1
            if self._thread is None:
                wake_r, self._wake_w = socket.socketpair()
                for end in (wake_r, self._wake_w):
                    end.setblocking(False)
                self._thread = threading.Thread(
                    target=self._run, args=(wake_r, self._wake_w), name="callctx-http-reject", daemon=True
                )
                self._thread.start()
            self._queue.put(sock)
            self._wake()

    def close(self) -> None:
        with self._lock:
            if self._thread is not None:
                self._queue.put(None)
                self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full: the thread is being woken anyway
            self._wake_w.send(b"\0")  # type: ignore[union-attr]

    def _run(self, wake_r: socket.socket, wake_w: socket.socket) -> None:
        sel = selectors.DefaultSelector()
        sel.register(wake_r, selectors.EVENT_READ)
        deadlines: dict[socket.socket, float] = {}
        running = True
        while running or deadlines:
            timeout = max(0.0, min(deadlines.values()) - time.monotonic()) if deadlines else None
            for key, _ in sel.select(timeout):
                sock: Any = key.fileobj
                if sock is wake_r:
                    with contextlib.suppress(OSError):
                        while wake_r.recv(4096):
                            pass
                    continue
                try:
                    more = sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    more = b""
                if not more:  # the client closed its side: nothing can reset our answer now
                    self._drop(sel, deadlines, sock)
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    running = False
                else:
                    deadlines[item] = time.monotonic() + self._linger
                    sel.register(item, selectors.EVENT_READ)
            now = time.monotonic()
            for sock in [s for s, d in deadlines.items() if d <= now or not running]:
                self._drop(sel, deadlines, sock)
        with self._lock:
            self._thread = self._wake_w = None
        sel.close()
        wake_r.close()
        wake_w.close()

    def _drop(self, sel: selectors.BaseSelector, deadlines: dict[socket.socket, float], sock: socket.socket) -> None:
        sel.unregister(sock)
        del deadlines[sock]
        sock.close()
        with self._lock:
            self._waiting -= 1


class _Server(ThreadingHTTPServer):
    """A threading HTTP server whose connections run on a bounded pool of workers.

    Invariant (under ``_lock``): ``workers >= busy``, where ``busy`` counts the connections
    accepted and not yet closed (queued or being served) and ``workers`` the worker threads
    alive; so every queued connection has a worker free to take it, and never more than
    ``max_connections`` workers exist.
    """

    daemon_threads = True
    request_queue_size = 128  # the listen backlog: connections the kernel holds before accept

    def __init__(self, address: Any, handler: Any, *, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self.max_connections = max_connections
        self._lock = threading.Lock()
        self._busy = 0
        self._workers = 0
        self._queue: queue.SimpleQueue[tuple[Any, Any] | None] = queue.SimpleQueue()
        self._rejecter = _Rejecter()
        self._serving: set[socket.socket] = set()  # connections a worker is serving
        super().__init__(address, handler)

    @property
    def open_connections(self) -> int:
        return self._busy

    @property
    def worker_threads(self) -> int:
        return self._workers

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            full = self._busy >= self.max_connections
            if not full:
                self._busy += 1
                spawn = self._workers < self._busy
                if spawn:
                    self._workers += 1
        if full:
            log.debug("callctx: %s turned away: %d connections open", client_address, self.max_connections)
            self._rejecter.reject(request)
            return
        if spawn:
            try:
                threading.Thread(target=self._work, name="callctx-http", daemon=True).start()
            except BaseException:  # no thread: give both slots back; the caller closes the socket
                with self._lock:
                    self._workers -= 1
                    self._busy -= 1
                raise
        self._queue.put((request, client_address))

    def _work(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=IDLE_WORKER)
            except queue.Empty:
                with self._lock:
                    if self._workers > self._busy:  # enough others for what is queued: leave
                        self._workers -= 1
                        return
                continue
            if item is None:
                with self._lock:
                    self._workers -= 1
                return
            with self._lock:
                self._serving.add(item[0])
            try:
                self.process_request_thread(*item)  # handles, reports errors, closes the socket
            finally:
                with self._lock:
                    self._serving.discard(item[0])
                    self._busy -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-request is not an error of ours; anything else is logged."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            log.debug("callctx: client %s went away: %s", client_address, exc)
        else:
            log.exception("callctx: request from %s failed", client_address)

    def shutdown(self) -> None:
        """Stop accepting, close the listening socket, end the connections being served (a
        browser's idle keep-alive connection would otherwise hold its worker until the read
        timeout), and let idle workers go."""
        super().shutdown()
        self.server_close()
        with self._lock:
            workers = self._workers
            for sock in self._serving:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        for _ in range(workers):
            self._queue.put(None)
        self._rejecter.close()


def serve_http(
    rx: Receiver,
    host: str = "127.0.0.1",
    port: int = 4318,
    *,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> ThreadingHTTPServer:
    """Start the OTLP/HTTP server and read API in a background thread."""
    return _start(make_handler(rx, read_timeout), host, port, read_timeout, max_connections, "callctx-http-accept")


def _start(
    handler: type[BaseHTTPRequestHandler], host: str, port: int, read_timeout: float, max_connections: int, name: str
) -> ThreadingHTTPServer:
    if read_timeout <= 0:
        raise ValueError(f"read_timeout must be positive, not {read_timeout}")
    server = _Server((host, port), handler, max_connections=max_connections)
    threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
    return server


def make_page_handler(
    views: Views, shape: Any, read_timeout: float = DEFAULT_READ_TIMEOUT
) -> type[BaseHTTPRequestHandler]:
    """A handler that serves only the debugger page (``callctx ui LOG``)."""

    wait = read_timeout

    class PageHandler(_Handler):
        timeout = read_timeout = wait

        def do_GET(self) -> None:
            url = urlparse(self.path)
            parts = [p for p in url.path.split("/") if p]
            if not parts:
                self._redirect("/ui/")
                return
            if parts[0] != "ui":
                self._json(404, {"error": f"no route {url.path}; the page is at /ui/"})
                return
            self._page(views, parts, {k: v[-1] for k, v in parse_qs(url.query).items()}, shape)

    return PageHandler


def serve_page(
    views: Views,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    shape: Any = None,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> ThreadingHTTPServer:
    """Serve the debugger page over ``views`` in a background thread; ``shape`` redacts what
    the page's API answers (None: sent as the log holds it)."""
    handler = make_page_handler(views, shape, read_timeout)
    return _start(handler, host, port, read_timeout, max_connections, "callctx-ui-accept")


