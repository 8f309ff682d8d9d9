"""The HTTP servers' plumbing, shared by ``callctx serve`` (:mod:`callctx.serve.handler`) and
``callctx ui`` (:mod:`callctx.ui.server`): a bounded pool of worker threads, per-request time
limits, and the access rules every answer passes through.

Access: every request's ``Host`` must name this machine (a loopback name, ``*.localhost``, an
IP address, or a name given with ``--allow-host``), or it is answered 403: a page on another
site whose name was rebound to 127.0.0.1 (DNS rebinding) reaches nothing, ingest included.
With a token, the API needs ``Authorization: Bearer TOKEN`` (compared in constant time) and
the page a cookie set by opening ``/ui?token=TOKEN`` once. Every answer, errors and redirects
included, carries the security headers (:data:`SECURITY_HEADERS`).

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
import hmac
import io
import ipaddress
import json
import logging
import queue
import selectors
import socket
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlencode

log = logging.getLogger(__name__)

JSON = "application/json"
# Every answer: nothing but this origin's own files, never framed, sniffed, cached or referred.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})


@dataclass(frozen=True)
class Access:
    """Who may reach a server: the ``Host`` names it answers for, and the bearer token (None:
    anyone who reaches the port). Immutable; any thread."""

    token: str | None = None
    hosts: frozenset[str] = field(default_factory=frozenset)  # names allowed besides this machine's

    @classmethod
    def of(cls, token: str | None, allow_hosts: Iterable[str] = (), served: str | None = None) -> Access:
        """The policy of a server bound to ``served`` (its own name passes too)."""
        names = {h.strip().lower().rstrip(".") for h in allow_hosts if h.strip()}
        if served and served not in ("0.0.0.0", "::", ""):
            names.add(served.strip("[]").lower())
        return cls(token or None, frozenset(names))

    def serving(self, host: str) -> Access:
        """This policy for a server bound to ``host`` (its own name passes too)."""
        return Access.of(self.token, self.hosts, served=host)

    def host_allowed(self, header: str | None) -> bool:
        """Does a ``Host`` header name this machine or an allowed name? A request without one
        (HTTP/1.0) passes: browsers always send it."""
        if header is None:
            return True
        name = host_name(header)
        if not name:
            return False
        if name in LOOPBACK_NAMES or name.endswith(".localhost") or name in self.hosts:
            return True
        try:
            ipaddress.ip_address(name)  # an address: the origin is the address itself, not a name rebound to it
        except ValueError:
            return False
        return True

    def authorized(self, header: str | None) -> bool:
        """Does an ``Authorization`` header carry the token (always, when none is set)?"""
        if self.token is None:
            return True
        if header is None:
            return False
        return hmac.compare_digest(header.encode(), f"Bearer {self.token}".encode())

    def holds(self, token: str | None) -> bool:
        """Is ``token`` (from a cookie or a query) this server's token? Never without one."""
        if self.token is None:
            return True
        return token is not None and hmac.compare_digest(token.encode(), self.token.encode())


def host_name(header: str) -> str:
    """The name (or address) of a ``Host`` header, without its port, lower case."""
    h = header.strip().lower()
    if h.startswith("["):
        end = h.find("]")
        return h[1:end] if end > 0 else ""
    if h.count(":") == 1:
        h = h.split(":", 1)[0]
    return h.rstrip(".")


def path_parts(path: str) -> list[str]:
    """A URL path's segments, each percent-decoded (``/ui/traces/user%2042`` -> ``["ui",
    "traces", "user 42"]``)."""
    return [unquote(p) for p in path.split("/") if p]


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


class Handler(BaseHTTPRequestHandler):
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

    access: Access = Access()

    def handle_one_request(self) -> None:
        self.deadline = time.monotonic() + self.read_timeout  # waiting for a request counts too
        super().handle_one_request()

    def parse_request(self) -> bool:
        """Parse the request line and headers; then refuse a ``Host`` this server does not
        answer for (before any route runs, ingest included)."""
        if not super().parse_request():
            return False
        host = self.headers.get("Host")
        if not self.access.host_allowed(host):
            self.close_connection = True
            name = host_name(host or "")[:80]
            self._json(403, {"error": f"Host {name!r} is not served here; to serve it, start with --allow-host {name}"})
            return False
        return True

    def end_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

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
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        """What a GET would answer, without the body (its length is still given)."""
        get = getattr(self, "do_GET", None)
        if get is None:
            self.send_error(405)
            return
        get()

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode(), JSON)

    def _page_allowed(self, path: str, query: dict[str, str]) -> bool:
        """May this request see the page? With a token: a browser opens ``/ui?token=T`` once
        and keeps the token in an HttpOnly cookie scoped to ``/ui`` (redirected to the URL
        without it); later requests carry the cookie, or the bearer header. Answers the
        redirect or the 401 itself, and says False, when the request goes no further."""
        access = self.access
        token = query.pop("token", None)
        if token is not None and access.token is not None and access.holds(token):
            rest = urlencode(query)
            cookie = f"{_COOKIE}={token}; Path=/ui; HttpOnly; SameSite=Strict"
            self._redirect(path + (f"?{rest}" if rest else ""), cookie)
            return False
        jar: SimpleCookie = SimpleCookie()
        with contextlib.suppress(CookieError):
            jar.load(self.headers.get("Cookie", ""))
        held = jar[_COOKIE].value if _COOKIE in jar else None
        if not (access.authorized(self.headers.get("Authorization")) or (held is not None and access.holds(held))):
            self._json(401, {"error": "missing or wrong token: open /ui?token=<token> once"})
            return False
        return True

    def _redirect(self, location: str, cookie: str | None = None) -> None:
        self.send_response(303)
        self.send_header("Location", location)
        if cookie is not None:
            self.send_header("Set-Cookie", cookie)
        self.send_header("Content-Length", "0")
        self.end_headers()


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


def start(
    handler: type[BaseHTTPRequestHandler], host: str, port: int, read_timeout: float, max_connections: int, name: str
) -> ThreadingHTTPServer:
    if read_timeout <= 0:
        raise ValueError(f"read_timeout must be positive, not {read_timeout}")
    server = _Server((host, port), handler, max_connections=max_connections)
    threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
    return server
