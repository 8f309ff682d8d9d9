"""OpenTelemetry wiring: the OTLP exporter from the standard variables, a bounded flush at
exit, and the hook that gives programs run under ``opentelemetry-instrument`` the call tree
with no code change."""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from typing import TYPE_CHECKING

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

if TYPE_CHECKING:
    from .runtime import Runtime

log = logging.getLogger("callctx.otel")


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def exporter_from_env(endpoint: str | None = None) -> SpanExporter | None:
    """An OTLP span exporter when an endpoint is configured (argument or ``OTEL_*``), else None.

    Protocol from ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL``
    (``http/protobuf`` by default, or ``grpc``); headers, timeout, compression and
    certificates are read by the official exporter itself from the same variables.
    """
    traces_endpoint = _env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    base = endpoint or _env("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not (base or traces_endpoint):
        return None
    protocol = _env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        target = endpoint or traces_endpoint or base
        return GrpcExporter(endpoint=target)
    if protocol not in ("http/protobuf", "http"):
        log.warning("callctx: OTLP protocol %r is not supported; using http/protobuf", protocol)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    if endpoint:
        url = endpoint if endpoint.rstrip("/").endswith("/v1/traces") else endpoint.rstrip("/") + "/v1/traces"
        return HttpExporter(endpoint=url)
    return HttpExporter()  # reads the endpoint (and appends /v1/traces) from the environment


def add_batch_exporter(provider: TracerProvider, exporter: SpanExporter) -> BatchSpanProcessor:
    """Export in the background: the caller's thread only enqueues (a full queue drops)."""
    processor = BatchSpanProcessor(exporter)
    provider.add_span_processor(processor)
    return processor


def shutdown_within(provider: TracerProvider, timeout: float) -> bool:
    """Shut the provider down, giving up after ``timeout`` seconds (an unreachable collector
    must not hold the program). Returns whether it finished."""
    done = threading.Event()

    def run() -> None:
        try:
            provider.shutdown()
        except Exception:
            log.exception("callctx: shutting the tracer provider down failed")
        finally:
            done.set()

    threading.Thread(target=run, name="callctx-shutdown", daemon=True).start()
    finished = done.wait(timeout)
    if not finished:
        log.warning("callctx: spans not exported within %.1fs at exit were dropped (the local log has them)", timeout)
    return finished


_at_exit: weakref.WeakSet[Runtime] = weakref.WeakSet()
_registered = False


def close_at_exit(rt: Runtime) -> None:
    global _registered
    _at_exit.add(rt)
    if not _registered:
        atexit.register(_close_all)
        _registered = True


def _close_all() -> None:
    for rt in list(_at_exit):
        rt.close()


def instrument() -> None:
    """``opentelemetry_post_instrument`` hook: runs after ``opentelemetry-instrument`` set up
    the SDK, and adds the projection processor to the provider it configured (log from
    ``$CALLCTX_LOG``)."""
    from .runtime import setup

    try:
        setup()
    except Exception:
        log.exception("callctx: could not attach the call tree to the instrumented program")
