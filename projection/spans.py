"""Complete spans, format-neutral: what OTLP, Jaeger and the event log have in common.

Every file and wire format converts to and from :class:`SpanData`; a complete span becomes
a start and an end event for the fold. Texts a model call was sent travel with the chat span
as ``callctx.blob`` events (hash and text), so a receiver far from the agent can rebuild the
call's context too.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import msgspec

from . import schema as s
from .errors import BadInput
from .events import Blob, Record, SpanEnded, SpanEvent, SpanLink, SpanStarted
from .log_reader import read_log
from .manifest import ManifestError
from .manifest import decode as decode_manifest

BLOB_EVENT = "callctx.blob"
INTERRUPTED = "callctx.interrupted"


class SpanData(msgspec.Struct):
    trace_id: str  # 32 hex
    span_id: str  # 16 hex
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = msgspec.field(default_factory=dict)
    status: str = "unset"  # unset | ok | error
    error: str | None = None
    kind: int = 1  # OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer
    events: list[SpanEvent] = msgspec.field(default_factory=list)
    resource: dict[str, Any] = msgspec.field(default_factory=dict)  # service.name, service.instance.id, ...
    scope: str | None = None
    links: list[SpanLink] = msgspec.field(default_factory=list)

    @property
    def service(self) -> str | None:
        name = self.resource.get("service.name")
        return name if isinstance(name, str) else None

    def resource_or(self, service: str) -> dict[str, Any]:
        """The span's resource, named ``service`` when it names none (or only the SDK's
        ``unknown_service`` placeholder)."""
        name = self.service
        if name and not name.startswith("unknown_service"):
            return self.resource
        return {**self.resource, "service.name": service}


class InvalidSpan(BadInput):
    """A span that cannot be folded (bad ids, missing name...): rejected, the rest kept."""


def _hex_id(value: str, size: int, what: str) -> str:
    if not isinstance(value, str) or len(value) != size * 2:
        raise InvalidSpan(f"{what} must be {size * 2} hex characters")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise InvalidSpan(f"{what} is not hex") from None
    if raw == bytes(size):
        raise InvalidSpan(f"{what} is all zeros")
    return value.lower()


def checked(span: SpanData) -> SpanData:
    """Validate ids and times; raises :class:`InvalidSpan`."""
    span.trace_id = _hex_id(span.trace_id, 16, "trace id")
    span.span_id = _hex_id(span.span_id, 8, "span id")
    if span.parent_id:
        try:
            span.parent_id = _hex_id(span.parent_id, 8, "parent span id")
        except InvalidSpan:
            span.parent_id = None  # a broken parent link: keep the span as a root
    else:
        span.parent_id = None
    if not isinstance(span.start_ns, int) or not isinstance(span.end_ns, int) or span.start_ns < 0:
        raise InvalidSpan("start and end times must be non-negative integers")
    if span.end_ns < span.start_ns:
        span.end_ns = span.start_ns
    return span


def error_text(description: str | None, events: Iterable[tuple[str, Mapping[str, Any] | None]]) -> str | None:
    """The one-line reason of a failed span: its status description, else the last recorded
    exception (``type: message``). ``events`` are (name, attributes) pairs."""
    if description:
        return description
    for name, attributes in reversed(list(events)):
        if name == "exception":
            a = attributes or {}
            kind = a.get("exception.type", "")
            msg = a.get("exception.message", "")
            return f"{kind}: {msg}" if kind and msg else str(kind or msg or "exception")
    return None


def to_records(span: SpanData) -> list[Record]:
    """The fold's view of a complete span: its texts, then a start and an end."""
    out: list[Record] = []
    for ev in span.events:
        if ev.name == BLOB_EVENT:
            h, text = ev.attributes.get("hash"), ev.attributes.get("text")
            if isinstance(h, str) and isinstance(text, str) and hashlib.sha256(text.encode()).hexdigest() == h:
                out.append(Blob(h, text))  # a text altered on the way (redacted, cut) is not trusted
    out.append(
        SpanStarted(
            span.trace_id, span.span_id, span.parent_id, span.name, span.start_ns, span.attributes,
            span.kind, span.resource, span.scope,
        )
    )  # fmt: skip
    if span.attributes.get(INTERRUPTED) is True:
        return out  # it never ended where it was recorded: keep it open, so replay reads it as interrupted
    status = span.status if span.status in ("ok", "error") else "unset"
    error = error_text(span.error, ((e.name, e.attributes) for e in span.events)) if status == "error" else None
    events = [e for e in span.events if e.name != BLOB_EVENT]
    out.append(SpanEnded(span.trace_id, span.span_id, span.end_ns, status, error, {}, events, span.links))  # type: ignore[arg-type]
    return out


def from_log(path: str | os.PathLike[str]) -> Iterator[SpanData]:
    """The spans of an event log, complete (a span never ended ends where it started and is
    marked ``callctx.interrupted``); each text rides on the first chat span that uses it."""
    starts: dict[str, SpanStarted] = {}
    ends: dict[str, SpanEnded] = {}
    blobs: dict[str, str] = {}
    order: list[str] = []
    for rec in read_log(path):
        t = type(rec)
        if t is SpanStarted:
            if rec.span_id not in starts:
                starts[rec.span_id] = rec
                order.append(rec.span_id)
        elif t is SpanEnded:
            ends.setdefault(rec.span_id, rec)
        elif t is Blob:
            blobs[rec.hash] = rec.text
    sent: set[str] = set()
    resources: dict[str, dict[str, Any]] = {}  # span id -> the resource it (or its nearest ancestor) names
    for span_id in order:
        st = starts[span_id]
        end = ends.get(span_id)
        attrs = dict(st.attributes)
        if end is not None:
            attrs.update(end.attributes)
        else:
            attrs[INTERRUPTED] = True
        resource = st.resource or (resources.get(st.parent_id, {}) if st.parent_id else {})
        resources[span_id] = resource
        events = [
            SpanEvent(BLOB_EVENT, st.start_ns, {"hash": h, "text": blobs[h]})
            for h in _blob_refs(attrs)
            if h in blobs and not (h in sent or sent.add(h))  # type: ignore[func-returns-value]
        ]
        if end is not None:
            events.extend(end.events)
        yield SpanData(
            trace_id=st.trace_id,
            span_id=st.span_id,
            parent_id=st.parent_id,
            name=st.name,
            start_ns=st.start_ns,
            end_ns=end.end_ns if end is not None else st.start_ns,
            attributes=attrs,
            status=end.status if end is not None else "unset",
            error=end.error if end is not None else None,
            kind=st.kind or 1,
            events=events,
            resource=resource,
            scope=st.scope,
            links=list(end.links) if end is not None else [],
        )


def _blob_refs(attrs: dict[str, Any]) -> list[str]:
    """The text hashes a chat span's manifest refers to."""
    text = attrs.get(s.CONTEXT)
    if not isinstance(text, str):
        return []
    try:
        return decode_manifest(text).text_hashes()
    except ManifestError:
        return []


def records(spans: Iterable[SpanData]) -> Iterator[Record]:
    for span in spans:
        yield from to_records(span)
