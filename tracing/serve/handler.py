"""``callctx serve``'s HTTP port: OTLP in (``POST /v1/traces``, protobuf or JSON), the read
API (``/api/...``, :mod:`callctx.serve.read_api`), the debugger page (``/ui...``) and
``/health``, on the bounded server of :mod:`callctx.serve.http_server` under its access rules.

Errors: a malformed body is a 400 with the reason (OTLP's ``google.rpc.Status``, in the
request's encoding); a body over the limit 413; a log the disk refuses 503; the transports
keep serving.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

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
from .http_server import DEFAULT_MAX_CONNECTIONS, DEFAULT_READ_TIMEOUT, JSON, Handler, path_parts, start
from .ingest import PROTOBUF, Receiving, collector_paused


def make_handler(
    rx: Receiving, read_timeout: float = DEFAULT_READ_TIMEOUT, host: str = "127.0.0.1"
) -> type[BaseHTTPRequestHandler]:
    """The handler of ``callctx serve``'s HTTP port: OTLP in (``POST /v1/traces``), the read API
    (``/api/...``), the debugger page (``/ui...``) and ``/health``."""
    page_lock = threading.Lock()
    page: list[Views] = []  # the page's views over the receiver's store, made on first visit

    def views() -> Views:
        with page_lock:
            if not page:
                page.append(Views(rx.store, wait_for_cache=rx.follows))
            return page[0]

    wait = read_timeout

    class ServeHandler(Handler):
        timeout = read_timeout = wait

        access = rx.access.serving(host)

        def _authorized(self) -> bool:
            if rx.access.authorized(self.headers.get("Authorization")):
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
            with rx.traffic.request(), collector_paused():  # resumed once the request's records are let go
                self._ingest(ctype)

        def _ingest(self, ctype: str) -> None:
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
                self._status(503, f"cannot keep the spans: {e}", ctype)
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
            parts = path_parts(url.path)
            if parts == ["health"]:
                # liveness for anyone; the counters only for who may read the API
                detail = rx.access.authorized(self.headers.get("Authorization"))
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
            raw = q.get("raw") in ("1", "true") and rx.access.token is not None
            resp = read_api.answer(rx.store, parts, q, None if raw else rx.shaper.redact)
            self._send(resp.status, resp.body, resp.content_type)

        def _ui(self, path: str, parts: list[str], query: dict[str, list[str]]) -> None:
            """The debugger page, behind the token when one is set."""
            q = {k: v[-1] for k, v in query.items()}
            if self._page_allowed(path, q):
                resp = ui_routes.respond(views(), parts, q, rx.shaper.redact)
                self._send(resp.status, resp.body, resp.content_type)

    return ServeHandler


def serve_http(
    rx: Receiving,
    host: str = "127.0.0.1",
    port: int = 4318,
    *,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> ThreadingHTTPServer:
    """Start the OTLP/HTTP server and read API in a background thread."""
    handler = make_handler(rx, read_timeout, host)
    return start(handler, host, port, read_timeout, max_connections, "callctx-http-accept")
