"""OTLP/HTTP (``POST /v1/traces``, protobuf or JSON) and the read API over HTTP.

Threading: one thread per connection (``ThreadingHTTPServer``); every handler goes through
the :class:`Receiver`, which is thread-safe. A client that hangs up mid-request is logged at
debug level, never raised.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from google.protobuf.json_format import MessageToDict
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from .body import BodyError, read_body
from .receiver import JSON, PROTOBUF, Receiver

log = logging.getLogger(__name__)


def make_handler(rx: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "callctx-receiver"
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:
            log.debug("%s " + fmt, self.address_string(), *args)

        # -- helpers --
        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, obj: Any) -> None:
            self._send(status, json.dumps(obj, ensure_ascii=False).encode(), JSON)

        def _status(self, status: int, message: str, content_type: str) -> None:
            """An error as a google.rpc.Status, in the request's encoding (OTLP/HTTP)."""
            code = {400: 3, 401: 16, 411: 3, 413: 8, 415: 3}.get(status, 2)
            st = status_pb2.Status(code=code, message=message)
            if content_type.startswith(PROTOBUF):
                self._send(status, st.SerializeToString(), PROTOBUF)
            else:
                self._json(status, MessageToDict(st))

        def _authorized(self) -> bool:
            if rx.authorized(self.headers.get("Authorization")):
                return True
            self._json(401, {"error": "missing or wrong bearer token"})
            return False

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

        # -- read API --
        def do_GET(self) -> None:
            url = urlparse(self.path)
            parts = [p for p in url.path.split("/") if p]
            if parts == ["health"]:
                s = rx.stats
                self._json(
                    200,
                    {"status": "ok", "spans": s.spans, "rejected": s.rejected, "malformed": s.malformed,
                     "events": rx.projection.events, "traces": len(rx.projection.trees)},
                )  # fmt: skip
                return
            if not self._authorized():
                return
            try:
                self._api(parts, parse_qs(url.query))
            except KeyError as e:
                self._json(404, {"error": str(e).strip("'\"")})
            except ValueError as e:
                self._json(400, {"error": str(e)})

        def _api(self, parts: list[str], query: dict[str, list[str]]) -> None:
            rr = query.get("render_range", [None])[0]
            render_range = int(rr) if rr is not None else None
            p = rx.projection
            if parts == ["api", "traces"]:
                self._json(200, {"traces": rx.traces()})
            elif len(parts) == 4 and parts[:2] == ["api", "traces"] and parts[3] == "tree":
                self._send(200, p.session_tree(parts[2], render_range=render_range).encode(), "application/yaml")
            elif len(parts) == 4 and parts[:2] == ["api", "spans"] and parts[3] == "tree":
                self._send(200, p.tree(parts[2], render_range=render_range).encode(), "application/yaml")
            elif parts == ["api", "calls"]:
                calls, _ = rx.calls()
                rows = [{"index": c.index, "function": c.function, "call_path": c.call_path, "span_id": c.span_id,
                         "status": c.status, "usage": c.usage} for c in calls]  # fmt: skip
                self._json(200, {"calls": rows})
            elif len(parts) == 4 and parts[:2] == ["api", "calls"] and parts[3] == "context":
                self._json(200, rx.context(int(parts[2])))
            else:
                raise KeyError(f"no route /{'/'.join(parts)}")

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-request is not an error of ours; anything else is logged."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            log.debug("callctx: client %s went away: %s", client_address, exc)
        else:
            log.exception("callctx: request from %s failed", client_address)


def serve_http(rx: Receiver, host: str = "127.0.0.1", port: int = 4318) -> ThreadingHTTPServer:
    """Start the OTLP/HTTP server and read API in a background thread."""
    server = _Server((host, port), make_handler(rx))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="callctx-http", daemon=True).start()
    return server
