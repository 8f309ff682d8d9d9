"""OTLP/gRPC: the trace service, on a bounded pool of worker threads.

Bounds: at most ``max_concurrent_rpcs`` calls in the server at once (past that a call is
refused with ``RESOURCE_EXHAUSTED``, which OTLP exporters retry), at most
``max_concurrent_streams`` streams per connection (HTTP/2 flow control holds the rest back),
and no message over the receiver's ``max_body`` (refused before it is decoded). gRPC's own
I/O threads read the messages: a slow or idle client holds no worker. A request, parsed by
gRPC, is read straight into the records the receiver ingests (``otlp.decode_request``).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from callctx.projection.otlp import decode_request

from .ingest import Receiving, collector_paused


@dataclass(frozen=True)
class GrpcServer:
    """A running OTLP/gRPC server and the port it listens on."""

    server: grpc.Server
    port: int

    def stop(self, grace: float | None = None) -> None:
        self.server.stop(grace).wait()


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, rx: Receiving) -> None:
        self.rx = rx

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        rx = self.rx
        meta = dict(context.invocation_metadata())
        if not rx.authorized(meta.get("authorization")):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        with rx.traffic.request(), collector_paused():  # resumed once the request's records are let go
            return self._export(request, context)

    def _export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        rx = self.rx
        t0 = time.perf_counter()
        decoded = decode_request(request)
        spent = time.perf_counter() - t0
        rx.stats.add(seconds_decode=spent, seconds_total=spent)
        try:
            rx.ingest(decoded)
        except OSError as e:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"cannot keep the spans: {e}")
        resp = ExportTraceServiceResponse()
        if decoded.rejected:
            resp.partial_success.CopyFrom(
                ExportTracePartialSuccess(rejected_spans=decoded.rejected, error_message=decoded.message)
            )
        return resp


DEFAULT_MAX_CONCURRENT_RPCS = 256
DEFAULT_MAX_CONCURRENT_STREAMS = 16  # per connection


def serve_grpc(
    rx: Receiving,
    host: str = "127.0.0.1",
    port: int = 4317,
    workers: int = 4,
    *,
    max_concurrent_rpcs: int = DEFAULT_MAX_CONCURRENT_RPCS,
    max_concurrent_streams: int = DEFAULT_MAX_CONCURRENT_STREAMS,
) -> GrpcServer:
    """Start the OTLP/gRPC trace service (``port=0``: any free port)."""
    if max_concurrent_rpcs < 1 or max_concurrent_streams < 1:
        raise ValueError("max_concurrent_rpcs and max_concurrent_streams must be at least 1")
    server = grpc.server(
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="callctx-grpc"),
        options=[
            ("grpc.max_receive_message_length", rx.max_body),
            ("grpc.max_send_message_length", 1 << 20),
            ("grpc.max_concurrent_streams", max_concurrent_streams),
        ],
        maximum_concurrent_rpcs=max_concurrent_rpcs,
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(rx), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen for gRPC on {host}:{port}")
    server.start()
    return GrpcServer(server, bound)
