"""OpenTelemetry wiring: the OTLP exporter from the settings, a bounded flush at exit, and
which tracer providers callctx created itself.

Threading: :func:`shutdown_within` runs the provider's shutdown on a helper thread and
returns after at most ``timeout`` seconds, whatever the exporter does.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Protocol

from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from callctx.environ import Settings

log = logging.getLogger(__name__)

_owned: weakref.WeakSet[TracerProvider] = weakref.WeakSet()


def new_provider(service_name: str | None = None) -> TracerProvider:
    """A provider of our own (remembered, so a later ``setup()`` does not join it).
    ``service_name`` names the service when the environment does not (``OTEL_SERVICE_NAME``,
    or ``service.name`` in ``OTEL_RESOURCE_ATTRIBUTES``, win)."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    resource = Resource.create()
    if service_name and str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service_name}))
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    _owned.add(provider)
    return provider


def owned(provider: object) -> bool:
    """Did callctx create this provider?"""
    return isinstance(provider, TracerProvider) and provider in _owned


def exporter_from_settings(settings: Settings, endpoint: str | None = None) -> SpanExporter | None:
    """An OTLP span exporter when an endpoint is configured (argument or settings), else None.

    Protocol ``http/protobuf`` (default) or ``grpc``; headers, timeout, compression and
    certificates are read by the official exporter itself from the standard variables.
    """
    if not (endpoint or settings.exporting):
        return None
    protocol = settings.otlp_protocol
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=endpoint or settings.otlp_traces_endpoint or settings.otlp_endpoint)
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


class Closeable(Protocol):
    def close(self) -> None: ...


_at_exit: weakref.WeakSet[Closeable] = weakref.WeakSet()
_registered = False


def close_at_exit(thing: Closeable) -> None:
    """Close ``thing`` when the interpreter exits (if it is still alive then)."""
    global _registered
    _at_exit.add(thing)
    if not _registered:
        atexit.register(_close_all)
        _registered = True


def _close_all() -> None:
    for thing in list(_at_exit):
        thing.close()


def wrap_processors(provider: TracerProvider, wrap: Callable[[SpanProcessor], SpanProcessor | None]) -> int:
    """Replace each span processor already on ``provider`` by ``wrap(processor)`` (None keeps
    it as it is); returns how many were wrapped. Processors added to the provider later are
    not wrapped. Raises ``TypeError`` for a provider whose processors cannot be reached."""
    multi = getattr(provider, "_active_span_processor", None)
    procs = getattr(multi, "_span_processors", None)
    lock = getattr(multi, "_lock", None)
    if not isinstance(procs, tuple) or lock is None:
        raise TypeError(f"cannot reach the span processors of {type(provider).__name__}")
    with lock:
        wrapped = [wrap(p) for p in multi._span_processors]  # type: ignore[union-attr]
        multi._span_processors = tuple(w or p for w, p in zip(wrapped, multi._span_processors, strict=True))  # type: ignore[union-attr]
    return sum(w is not None for w in wrapped)
