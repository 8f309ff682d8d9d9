"""OTLP trace requests straight to the fold's records, in one pass.

:func:`decode_request` reads an ``ExportTraceServiceRequest`` (protobuf) into, per span, the
records the event log and the fold take (the texts it carried as :class:`Blob`, a
:class:`SpanStarted`, a :class:`SpanEnded`) and the few facts the receiver's index lists besides,
without building a :class:`SpanData` first. What it gives equals, record for record, what
``to_records`` makes of the spans :func:`callctx.projection.otlp.decode_request` decodes: the
same spans kept, the same rejected (OTLP partial success) with the same reasons, the rest of
the request kept. :func:`from_spans` puts spans decoded any other way (OTLP/JSON) in the same
form.

Pure functions of their input, no shared state: any thread may call them. Errors: a body that
is not a trace request at all raises ``ValueError``; a span that cannot be folded (bad ids,
attribute values nested too deeply) is rejected and counted, never raised.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import msgspec
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .events import Blob, SpanEnded, SpanEvent, SpanLink, SpanStarted
from .otlp import _any, parse_request, rejection_message
from .spans import BLOB_EVENT, INTERRUPTED, InvalidSpan, SpanData, error_text, to_records

_STATUS = {0: "unset", 1: "ok", 2: "error"}
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


class Received(msgspec.Struct, gc=False):
    """One span as received: its records for the log and the fold, and what the index lists."""

    start_ns: int
    span_id: str
    trace_id: str
    blobs: list[Blob]  # the texts it carried, verified (written before its start)
    started: SpanStarted
    ended: SpanEnded | None  # None: it never ended where it was recorded (kept open)
    end_ns: int
    status: str  # as sent: unset | ok | error
    error: str | None  # the status message as sent


class Batch(msgspec.Struct):
    """The spans of one request, and those rejected (OTLP partial success)."""

    spans: list[Received]
    rejected: int = 0
    errors: list[str] = msgspec.field(default_factory=list)

    @property
    def message(self) -> str:
        return rejection_message(self.rejected, self.errors)


def _attrs(kvs: Any) -> dict[str, Any]:
    """``{key: value}`` of OTLP ``KeyValue``s (empty keys skipped, the last of a key wins)."""
    out: dict[str, Any] = {}
    for kv in kvs:
        key = kv.key
        if key:
            v = kv.value
            text = v.string_value
            out[key] = text if text else _any(v)  # a non-empty string is the oneof's value
    return out


def _id(raw: bytes, zero: bytes, what: str) -> str:
    """A trace or span id as hex; :class:`InvalidSpan` when it is the wrong size or all zeros."""
    if len(raw) != len(zero):
        raise InvalidSpan(f"{what} id must be {2 * len(zero)} hex characters")
    if raw == zero:
        raise InvalidSpan(f"{what} id is all zeros")
    return raw.hex()


def decode_protobuf(body: bytes) -> Batch:
    """Raises ``ValueError`` when the body is not an OTLP trace request at all."""
    return decode_request(parse_request(body))


def decode_request(req: ExportTraceServiceRequest) -> Batch:
    """The spans of a parsed request, as :class:`Received` records."""
    out: list[Received] = []
    rejected = 0
    errors: list[str] = []
    append = out.append
    for rs in req.resource_spans:
        try:
            resource = _attrs(rs.resource.attributes)
        except InvalidSpan:
            resource = {}
        for ss in rs.scope_spans:
            scope = ss.scope.name or None
            for sp in ss.spans:
                try:
                    # the same checks, in the same order, as SpanData(...) then checked(...)
                    kvs = sp.attributes
                    attributes = _attrs(kvs) if kvs else {}
                    evs = sp.events
                    events = [SpanEvent(e.name, e.time_unix_nano, _attrs(e.attributes)) for e in evs] if evs else []
                    lks = sp.links
                    links = (
                        [
                            SpanLink(lk.trace_id.hex(), lk.span_id.hex(), _attrs(lk.attributes))
                            for lk in lks
                            if len(lk.trace_id) == 16 and len(lk.span_id) == 8
                        ]
                        if lks
                        else []
                    )
                    trace_id = _id(sp.trace_id, _ZERO_TRACE, "trace")
                    span_id = _id(sp.span_id, _ZERO_SPAN, "span")
                    raw = sp.parent_span_id
                    parent_id = raw.hex() if len(raw) == 8 and raw != _ZERO_SPAN else None  # broken: a root
                    start_ns = sp.start_time_unix_nano
                    end_ns = sp.end_time_unix_nano
                    if end_ns < start_ns:
                        end_ns = start_ns
                    st = sp.status
                    status = _STATUS.get(st.code, "unset")
                    error = st.message or None
                except (InvalidSpan, RecursionError) as e:
                    rejected += 1
                    errors.append(f"span {sp.span_id.hex() or '?'}: {e}")
                    continue
                blobs: list[Blob] = []
                if events:
                    kept = []
                    for ev in events:
                        if ev.name == BLOB_EVENT:
                            _blob(ev, blobs)
                        else:
                            kept.append(ev)
                else:
                    kept = events
                started = SpanStarted(
                    trace_id, span_id, parent_id, sp.name, start_ns, attributes, sp.kind or 1, resource, scope
                )
                if attributes and attributes.get(INTERRUPTED) is True:
                    ended = None  # it never ended where it was recorded: replay reads it as interrupted
                else:
                    why = error_text(error, ((e.name, e.attributes) for e in events)) if status == "error" else None
                    ended = SpanEnded(trace_id, span_id, end_ns, status, why, {}, kept, links)  # type: ignore[arg-type]
                append(Received(start_ns, span_id, trace_id, blobs, started, ended, end_ns, status, error))
    return Batch(out, rejected, errors)


def _blob(ev: SpanEvent, blobs: list[Blob]) -> None:
    """A text the span carried, kept when it still matches its hash (one altered on the way,
    redacted or cut, is not trusted)."""
    h, text = ev.attributes.get("hash"), ev.attributes.get("text")
    if isinstance(h, str) and isinstance(text, str) and hashlib.sha256(text.encode()).hexdigest() == h:
        blobs.append(Blob(h, text))


def received(span: SpanData) -> Received:
    """A decoded span's records (:func:`~callctx.projection.spans.to_records`), as received."""
    blobs: list[Blob] = []
    started: Any = None
    ended: Any = None
    for rec in to_records(span):
        t = type(rec)
        if t is Blob:
            blobs.append(rec)  # type: ignore[arg-type]
        elif t is SpanStarted:
            started = rec
        else:
            ended = rec
    return Received(span.start_ns, span.span_id, span.trace_id, blobs, started, ended, span.end_ns, span.status,
                    span.error)  # fmt: skip


def from_spans(spans: Iterable[SpanData], rejected: int = 0, errors: list[str] | None = None) -> Batch:
    """Spans decoded any other way (OTLP/JSON, Jaeger), in the form :func:`decode_request` gives."""
    return Batch([received(sp) for sp in spans], rejected, list(errors or ()))


def records(batch: Batch) -> list[Any]:
    """Every record of a batch, in its order (each span's texts, start, then end)."""
    out: list[Any] = []
    for r in batch.spans:
        out.extend(r.blobs)
        out.append(r.started)
        if r.ended is not None:
            out.append(r.ended)
    return out


__all__ = ["Batch", "Received", "decode_protobuf", "decode_request", "from_spans", "received", "records"]
