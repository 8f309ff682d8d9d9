"""The span processor that feeds the projection, synchronously, on the thread that made the span.

It must be synchronous: a call's context is assembled from the tree while the call runs, so
the tree must already hold the call when its first line of user code executes. Being on the
user's hot path, it does as little as possible: build the event, append it to the log, apply
it to the fold, all under the projection's lock so the log's order is the fold's order. A
buffered log is flushed when a model call starts (before its request is sent) and when it
ends. Any failure is logged and swallowed; it never reaches the user's function.

Spans callctx itself starts (:meth:`ProjectionProcessor.start_span`) hand their attributes,
valid by construction, straight to ``on_start`` rather than through the SDK's per-value
checks, when nothing can tell the difference: the sampler ignores attributes (the SDK's
default parent-based always-on, or always-on), this processor is the provider's first (no
processor sees the span before its attributes are in), and no attribute limit applies. Every
processor's ``on_end``, and every exporter, sees the same attributes either way.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, sampling
from opentelemetry.trace import SpanKind as ApiSpanKind
from opentelemetry.trace import StatusCode
from opentelemetry.trace.span import DEFAULT_TRACE_STATE

from callctx.projection import Projection
from callctx.projection import events as ev
from callctx.projection.events import (
    Dropped,
    Origin,
    SpanEnded,
    SpanEvent,
    SpanKind,
    SpanLink,
    SpanStarted,
    error_text,
)
from callctx.projection.log import EventLog
from callctx.projection.schema import BLOB_EVENT, OP_CHAT, OPERATION

log = logging.getLogger(__name__)

_MISSING = object()
_INTERNAL = ApiSpanKind.INTERNAL
_NO_STATE = DEFAULT_TRACE_STATE  # the trace state of every span that was given none
_SDK_SPAN: type = getattr(sdk_trace, "_Span", Span)  # the class of the spans the SDK's tracers start
_KINDS: dict[ApiSpanKind, SpanKind] = {
    ApiSpanKind.INTERNAL: ev.KIND_INTERNAL, ApiSpanKind.SERVER: ev.KIND_SERVER, ApiSpanKind.CLIENT: ev.KIND_CLIENT,
    ApiSpanKind.PRODUCER: ev.KIND_PRODUCER, ApiSpanKind.CONSUMER: ev.KIND_CONSUMER,
}  # fmt: skip


def span_attributes(span: ReadableSpan) -> dict[str, Any]:
    """A plain-dict copy of a span's attributes (skipping the mapping proxy when we can)."""
    raw = getattr(span, "_attributes", None)
    inner = getattr(raw, "_dict", None)
    if type(inner) is dict:
        return inner.copy()
    return dict(span.attributes or {})


_NONE: dict[str, Any] = {}
_DELEGATES = ("_root", "_remote_parent_sampled", "_remote_parent_not_sampled", "_local_parent_sampled",
              "_local_parent_not_sampled")  # fmt: skip


def blind(sampler: object) -> bool:
    """Does this sampler decide without reading the span's attributes? The SDK's always-on,
    always-off and trace-id-ratio samplers do, and so does a parent-based one built of them
    (the SDK's default); any other sampler, a subclass included, is assumed to read them."""
    if type(sampler) in (sampling.StaticSampler, sampling.TraceIdRatioBased):
        return True
    if type(sampler) in (sampling.ParentBased, sampling.ParentBasedTraceIdRatio):
        return all(type(getattr(sampler, d, None)) in (sampling.StaticSampler, sampling.TraceIdRatioBased)
                   for d in _DELEGATES)  # fmt: skip
    return False


def put_attributes(span: Any, attrs: dict[str, Any]) -> bool:
    """Set attributes callctx built (strings and numbers: valid by construction, so checked
    once, where they are made) on a running span, straight into its attribute map when the
    SDK's limits cannot apply to them (``True``), else the usual way (validated, and cut to
    ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``; ``False``). Every processor's ``on_end`` sees them."""
    bounded = getattr(span, "_attributes", None)
    inner = getattr(bounded, "_dict", None)
    if (
        type(inner) is dict
        and getattr(bounded, "max_value_len", 0) is None
        and not getattr(bounded, "_immutable", True)
        and (bounded.maxlen is None or len(inner) + len(attrs) <= bounded.maxlen)  # type: ignore[union-attr]
    ):
        inner.update(attrs)
        return True
    span.set_attributes(attrs)
    return False


def _resource(span: ReadableSpan) -> dict[str, Any]:
    resource = span.resource
    return dict(resource.attributes) if resource is not None and resource.attributes else _NONE


def _listed(span: ReadableSpan, private: str, public: str) -> Any:
    """A finished span's events or links, without the copy the SDK's property makes each time
    it is read (the span has ended: they no longer change)."""
    bounded = getattr(span, private, None)
    inner = getattr(bounded, "_dq", None)
    return inner if inner is not None else getattr(span, public) or ()


def _dropped(span: ReadableSpan) -> Dropped | None:
    """What the SDK dropped of the span's attributes, events and links (None: nothing)."""
    try:  # the SDK's bounded containers count what they dropped
        sdk: Any = span
        counts = (sdk._attributes.dropped, sdk._events.dropped, sdk._links.dropped)
    except AttributeError:
        counts = (
            getattr(span, "dropped_attributes", 0) or 0,
            getattr(span, "dropped_events", 0) or 0,
            getattr(span, "dropped_links", 0) or 0,
        )
    return Dropped(*counts) if counts[0] or counts[1] or counts[2] else None


def _events(events: Any) -> list[SpanEvent]:
    """The span's events, but the texts recorded for a model call (the log has them as blobs)."""
    return [SpanEvent(e.name, e.timestamp or 0, dict(e.attributes or {})) for e in events if e.name != BLOB_EVENT]


class ProjectionProcessor(SpanProcessor):
    """Turns span starts and ends into events, logs them, and folds them."""

    def __init__(self, projection: Projection, log: EventLog | None = None) -> None:
        self.projection = projection
        self.log = log
        # span id -> (hex id, start attributes) of running spans: the end records only what changed
        self._open: dict[int, tuple[str, dict[str, Any]]] = {}
        self._last_trace: tuple[int, str] = (0, "")  # one tuple, so threads never see half of it
        self._closed = False
        self._handed = threading.local()  # .attrs: the attributes of the span this thread is starting
        self._blind: tuple[object, bool] = (None, False)  # the last sampler asked about, and the answer
        self._plain_scope: object = None  # the last scope that carries no version, attributes or schema URL

    def start_span(self, tracer: Any, name: str, context: Context | None, attributes: dict[str, Any]) -> Any:
        """Start a span with attributes callctx built (a fresh dict, strings and numbers only),
        handing them to :meth:`on_start` directly when nothing can tell (see the module's
        docstring), else through the SDK as usual. Raises what ``tracer.start_span`` raises."""
        procs = getattr(getattr(tracer, "span_processor", None), "_span_processors", None)
        sampler = getattr(tracer, "sampler", None)
        known = self._blind
        if known[0] is not sampler:
            known = self._blind = (sampler, blind(sampler))
        if self._closed or not procs or procs[0] is not self or not known[1]:
            return tracer.start_span(name, context=context, attributes=attributes)
        handed = self._handed
        handed.attrs = attributes
        try:
            return tracer.start_span(name, context=context)
        finally:
            handed.attrs = None

    @property
    def running(self) -> int:
        """How many spans are open (started and not yet ended)."""
        return len(self._open)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self._closed:
            return
        try:
            ctx: Any
            if type(span) is _SDK_SPAN:  # the SDK's own span: its fields read without the properties
                ctx, parent, name, start = span._context, span._parent, span._name, span._start_time
                kind, scope = span._kind, span._instrumentation_scope
            else:
                ctx, parent, name, start = span.get_span_context(), span.parent, span.name, span.start_time
                kind, scope = span.kind, span.instrumentation_scope
            sid = ctx.span_id
            last = self._last_trace
            trace_hex = last[1] if last[0] == ctx.trace_id else self._trace_hex(ctx.trace_id)
            span_hex = format(sid, "016x")
            parent_hex = None
            known = None
            if parent is not None and parent.is_valid:
                known = self._open.get(parent.span_id)
                parent_hex = known[0] if known is not None else format(parent.span_id, "016x")
            handed = self._handed
            attrs = getattr(handed, "attrs", None)
            if attrs is not None:
                handed.attrs = None  # this span's alone: a span started inside on_start gets none
                if not put_attributes(span, attrs):
                    attrs = span_attributes(span)  # a limit applied: record what the span holds
            else:
                attrs = span_attributes(span)
            self._open[sid] = (span_hex, attrs)
            # The process's resource rides on the first span of each trace this process makes.
            resource = _resource(span) if known is None else _NONE
            state = ctx.trace_state
            if state is _NO_STATE:
                state = None
            event = SpanStarted(
                trace_hex,
                span_hex,
                parent_hex,
                name,
                start or 0,
                attrs,
                ev.KIND_INTERNAL if kind is _INTERNAL else _KINDS.get(kind, ev.DEFAULT_KIND),
                resource,
                scope.name if resource and scope else None,
                None
                if scope is self._plain_scope and not resource and not state
                else self._origin(state, scope, span.resource if resource else None),
            )
            self._emit(event)
            if self.log is not None and attrs.get(OPERATION) == OP_CHAT:
                self.log.flush()  # a model call's request goes out with its records in the file
        except Exception:
            log.exception("callctx: could not record the start of span %r", getattr(span, "name", "?"))

    def on_end(self, span: ReadableSpan) -> None:
        if self._closed:
            return
        try:
            if type(span) is ReadableSpan:  # what the SDK's span hands over as it ends
                ctx, status, end, raw = span._context, span._status, span._end_time, span._attributes
                events, links = _listed(span, "_events", "events"), _listed(span, "_links", "links")
            else:
                ctx, status, end, raw = span.get_span_context(), span.status, span.end_time, None
                events, links = span.events or (), span.links or ()
            if ctx is None:  # the SDK's spans always have one; another SDK's might not
                return
            opened = self._open.pop(ctx.span_id, None)
            model_call = False
            if opened is not None:
                span_hex, started = opened
                model_call = started.get(OPERATION) == OP_CHAT
                # The span has ended, its attributes are frozen; values are immutable and kept by
                # identity, so only those added or replaced since the start are recorded.
                raw = getattr(raw, "_dict", None)
                items = raw.items() if type(raw) is dict else (span.attributes or {}).items()
                get = started.get
                attrs = {k: v for k, v in items if get(k, _MISSING) is not v}
            else:
                span_hex = format(ctx.span_id, "016x")
                attrs = span_attributes(span)
            code = status.status_code
            failed = code is StatusCode.ERROR
            last = self._last_trace
            self._emit(
                SpanEnded(
                    last[1] if last[0] == ctx.trace_id else self._trace_hex(ctx.trace_id),
                    span_hex,
                    end or 0,
                    "error" if failed else ("ok" if code is StatusCode.OK else "unset"),
                    error_text(status.description, ((e.name, e.attributes) for e in events)) if failed else None,
                    attrs,
                    _events(events) if events else [],
                    [SpanLink(format(lk.context.trace_id, "032x"), format(lk.context.span_id, "016x"),
                              dict(lk.attributes or {}),
                              lk.context.trace_state.to_header() if lk.context.trace_state else "")
                     for lk in links] if links else [],
                    _dropped(span),
                )
            )  # fmt: skip
            if model_call and self.log is not None:
                self.log.flush()  # what the model answered is in the file once the call returns
        except Exception:
            log.exception("callctx: could not record the end of span %r", getattr(span, "name", "?"))

    def record(self, record: Any) -> None:
        """Append and fold a record that is not a span event (a collapse of the tree)."""
        if not self._closed:
            self._emit(record)

    def _origin(self, state: Any, scope: Any, resource: Any) -> Origin | None:
        """What the span carries beyond the fold's fields: its trace state, its scope's
        version, attributes and schema URL, its resource's schema URL (None: none of those).
        The caller skips it for the usual case: a span of a scope already seen to carry nothing
        more, with no resource and no trace state."""
        version = getattr(scope, "version", None) or ""
        scope_attrs = getattr(scope, "attributes", None)
        scope_schema = getattr(scope, "schema_url", None) or ""
        resource_schema = getattr(resource, "schema_url", None) or ""
        if not (state or version or scope_attrs or scope_schema or resource_schema):
            self._plain_scope = scope
            return None
        return Origin(
            trace_state=state.to_header() if state else "", scope_version=version,
            scope_attributes=dict(scope_attrs or {}), scope_schema_url=scope_schema,
            resource_schema_url=resource_schema,
        )  # fmt: skip

    def _trace_hex(self, trace_id: int) -> str:
        last = self._last_trace
        if last[0] == trace_id:
            return last[1]
        text = format(trace_id, "032x")
        self._last_trace = (trace_id, text)
        return text

    def _emit(self, event: SpanStarted | SpanEnded) -> None:
        """Append to the log and fold, under the projection's lock (the log's order is the
        fold's order). A record the disk refuses stays with the log, which retries it."""
        proj = self.projection
        with proj.lock:
            if self.log is not None:
                self.log.append(event)  # buffered: kept as a value, encoded with its batch
            proj.apply_locked(event)

    def shutdown(self) -> None:
        self._closed = True
        if self.log is not None:
            with self.projection.lock:
                self.log.close()  # retries what the disk refused, and says what was lost

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
