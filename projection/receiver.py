"""The OTLP receiver behind ``callctx serve``: spans in over HTTP and gRPC, folded with the
same projection as in-process, appended to the receiver's own event log.

It is built to face the network: loopback by default, a body-size limit (413 past it, gzip
bombs included), an optional bearer token, a 400 with the reason for any malformed body
(while it keeps serving), and OTLP partial-success replies naming what was rejected. A
small read API serves what was folded: the traces, the call tree as any span sees it, the
recorded context of a model call, health.
"""

from __future__ import annotations

import gzip
import hmac
import json
import logging
import os
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from google.protobuf.json_format import MessageToDict
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from .calls import read_calls
from .events import encode
from .fold import Projection
from .log import EventLog
from .otlp import Decoded, decode_json, decode_protobuf, decode_request
from .spans import to_records

log = logging.getLogger("callctx.receiver")

DEFAULT_MAX_BODY = 16 << 20  # bytes, after decompression
PROTOBUF = "application/x-protobuf"
JSON = "application/json"

ContextView = Callable[[str, dict[str, str]], dict[str, Any]]
"""(manifest JSON, texts by hash) -> the context as JSON, supplied by whoever knows wire formats."""


class BodyError(ValueError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Stats:
    requests: int = 0
    spans: int = 0
    rejected: int = 0
    malformed: int = 0
    seconds_total: float = 0.0  # handling export requests, end to end
    seconds_decode: float = 0.0
    seconds_fold: float = 0.0  # applying events to the projection
    seconds_log: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class Receiver:
    """Folds OTLP trace requests; thread-safe; one log, one projection."""

    def __init__(
        self,
        log_path: str | os.PathLike[str] | None,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        token: str | None = None,
        context_view: ContextView | None = None,
        fsync: Any = "never",
    ) -> None:
        self.projection = Projection()
        self.log = EventLog(log_path, fsync=fsync) if log_path else None
        self.max_body = max_body
        self.token = token
        self.context_view = context_view
        self.stats = Stats()

    # ---- ingest ---------------------------------------------------------------------------
    def ingest(self, decoded: Decoded) -> Decoded:
        """Append and fold the spans of one request (in start order, so parents come first
        when the sender batched children ahead of them)."""
        t0 = time.perf_counter()
        fold = log_time = 0.0
        proj = self.projection
        spans = sorted(decoded.spans, key=lambda sp: (sp.start_ns, sp.span_id))
        with proj.lock:
            for sp in spans:
                for rec in to_records(sp):
                    if self.log is not None:
                        a = time.perf_counter()
                        self.log.write(encode(rec))
                        log_time += time.perf_counter() - a
                    a = time.perf_counter()
                    proj.apply_locked(rec)
                    fold += time.perf_counter() - a
        with self.stats.lock:
            self.stats.spans += len(spans)
            self.stats.rejected += decoded.rejected
            self.stats.seconds_fold += fold
            self.stats.seconds_log += log_time
            self.stats.seconds_total += time.perf_counter() - t0
        return decoded

    def decode_body(self, body: bytes, content_type: str) -> Decoded:
        t0 = time.perf_counter()
        kind = content_type.split(";")[0].strip().lower()
        if kind == PROTOBUF:
            decoded = decode_protobuf(body)
        elif kind == JSON:
            try:
                decoded = decode_json(body)
            except UnicodeDecodeError:
                raise ValueError("OTLP/JSON body is not valid UTF-8") from None
        else:
            raise BodyError(415, f"unsupported content type {content_type!r}; use {PROTOBUF} or {JSON}")
        with self.stats.lock:
            self.stats.seconds_decode += time.perf_counter() - t0
            self.stats.seconds_total += time.perf_counter() - t0
        return decoded

    def authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        expected = f"Bearer {self.token}"
        return header is not None and hmac.compare_digest(header.encode(), expected.encode())

    def close(self) -> None:
        if self.log is not None:
            with self.projection.lock:
                self.log.close()

    # ---- read API -------------------------------------------------------------------------
    def traces(self) -> list[dict[str, Any]]:
        p = self.projection
        out = []
        for key in p.sessions():
            tree = p.trees[key]
            out.append({"id": key, "top_calls": len(tree.tops), "functions": [n.function for n in tree.tops][:20]})
        return out

    def calls(self) -> tuple[list[Any], dict[str, str]]:
        if self.log is None:
            return [], {}
        return read_calls(self.log.path)


# ---- HTTP ---------------------------------------------------------------------------------------
def read_body(rfile: Any, headers: Any, limit: int) -> bytes:
    """The request body, decompressed, refusing anything over ``limit`` bytes."""
    length = headers.get("Content-Length")
    if headers.get("Transfer-Encoding", "").lower() == "chunked":
        raw = _read_chunked(rfile, limit)
    elif length is None:
        raise BodyError(411, "Content-Length is required")
    else:
        try:
            n = int(length)
        except ValueError:
            raise BodyError(400, "bad Content-Length") from None
        if n < 0:
            raise BodyError(400, "bad Content-Length")
        if n > limit:
            raise BodyError(413, f"body of {n} bytes exceeds the {limit}-byte limit")
        raw = rfile.read(n)
        if len(raw) < n:
            raise BodyError(400, "body shorter than its Content-Length")
    encoding = headers.get("Content-Encoding", "identity").lower().strip()
    if encoding in ("", "identity"):
        return raw
    if encoding in ("gzip", "deflate"):
        return _inflate(raw, limit, gzip_header=encoding == "gzip")
    raise BodyError(415, f"unsupported Content-Encoding {encoding!r}")


def _read_chunked(rfile: Any, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = rfile.readline(1024)
        try:
            size = int(line.split(b";")[0].strip() or b"0", 16)
        except ValueError:
            raise BodyError(400, "bad chunked encoding") from None
        if size == 0:
            rfile.readline(1024)
            return b"".join(parts)
        total += size
        if total > limit:
            raise BodyError(413, f"body exceeds the {limit}-byte limit")
        parts.append(rfile.read(size))
        rfile.readline(1024)


def _inflate(raw: bytes, limit: int, *, gzip_header: bool) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS if gzip_header else zlib.MAX_WBITS)
    try:
        out = d.decompress(raw, limit + 1)
    except zlib.error as e:
        raise BodyError(400, f"bad compressed body: {e}") from None
    if len(out) > limit or d.unconsumed_tail:
        raise BodyError(413, f"decompressed body exceeds the {limit}-byte limit")
    return out


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
                decoded = rx.decode_body(body, ctype)
            except BodyError as e:
                self.close_connection = True  # the rest of an oversized body is not read
                with rx.stats.lock:
                    rx.stats.malformed += 1
                self._status(e.status, str(e), ctype)
                return
            except (ValueError, RecursionError, MemoryError) as e:
                with rx.stats.lock:
                    rx.stats.malformed += 1
                self._status(400, str(e) or type(e).__name__, ctype)
                return
            try:
                rx.ingest(decoded)
            except OSError as e:
                self._status(503, f"cannot write the event log: {e}", ctype)
                return
            with rx.stats.lock:
                rx.stats.requests += 1
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
                calls, blobs = rx.calls()
                n = int(parts[2])
                if not 1 <= n <= len(calls):
                    raise KeyError(f"call {n} is out of range (1 to {len(calls)})")
                call = calls[n - 1]
                if call.manifest is None:
                    raise KeyError(f"call {n} has no recorded context")
                if rx.context_view is None:
                    self._json(200, {"manifest": json.loads(call.manifest)})
                    return
                try:
                    view = rx.context_view(call.manifest, blobs)
                except ValueError as e:  # texts that never arrived, or arrived altered
                    raise KeyError(f"cannot rebuild call {n}: {e}") from None
                self._json(200, view)
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


# ---- gRPC ---------------------------------------------------------------------------------------
def serve_grpc(rx: Receiver, host: str = "127.0.0.1", port: int = 4317, workers: int = 4) -> Any:
    """Start the OTLP/gRPC trace service. Returns the server (``stop(grace)`` to end it)."""
    from concurrent.futures import ThreadPoolExecutor

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
            meta = dict(context.invocation_metadata())
            if not rx.authorized(meta.get("authorization")):
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
            t0 = time.perf_counter()
            decoded = decode_request(request)
            with rx.stats.lock:
                rx.stats.seconds_decode += time.perf_counter() - t0
                rx.stats.seconds_total += time.perf_counter() - t0
                rx.stats.requests += 1
            rx.ingest(decoded)
            resp = ExportTraceServiceResponse()
            if decoded.rejected:
                resp.partial_success.CopyFrom(
                    ExportTracePartialSuccess(rejected_spans=decoded.rejected, error_message=decoded.message)
                )
            return resp

    server = grpc.server(
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="callctx-grpc"),
        options=[("grpc.max_receive_message_length", rx.max_body), ("grpc.max_send_message_length", 1 << 20)],
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceService(), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen for gRPC on {host}:{port}")
    server.bound_port = bound  # type: ignore[attr-defined]
    server.start()
    return server


def gzip_body(data: bytes) -> bytes:
    return gzip.compress(data)
